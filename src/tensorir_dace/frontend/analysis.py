"""Describing the arguments of one call of a rank-generic program or function.

:class:`Specializer` turns the argument values into an :class:`Analysis`:
each tensor's dimensions, intervals (relative to the size symbols ``N_<D>``)
and element type, each scalar's type and each static value.  From it come the
specialisation key (:meth:`Specializer.key`), the parameter types and the
neighbour tables' dimensions.  The rules are those of :mod:`.specialize`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..errors import ArgumentError, FrontendError
from ..lazy import lazy_module
from .annotations import GenericSpec, TensorArg, TensorSpec, element_type
from .dims import Dimension, DimSpec, NeighborDimension
from .specialize import NO_DEFAULT, ParamInfo, ParamSig, Specialization, positional_dims

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


#: ``out=`` of a direct call: its dimensions' names and its shape (or None).
Extra = tuple[tuple[str, ...], tuple[int, ...]] | None


@dataclass
class _Tensor:
    """A rank-generic tensor argument, described."""

    param: ParamInfo
    dtype: ir.ElementType
    dims: tuple[Dimension | NeighborDimension, ...]
    starts: list[int]
    stops: list[int]
    explicit: list[bool]
    auto: bool
    offsets: list[tuple[int, int]] = field(default_factory=list)   # (start, stop - N)


@dataclass
class Analysis:
    """One call's arguments, described: enough to find (or build) its specialisation."""

    raw: tuple
    plain: dict[str, Any]                 # name -> value to pass (tensors and scalars)
    statics: dict[str, Any]
    auto: list[str]                       # parameters with positional dims D0, D1, …
    descs: dict[str, Any]                 # name -> description (for the key)
    overrides: dict[str, dict[str, tuple[int, int]]]
    sizes: dict[str, int] = field(default_factory=dict)   # size symbol name -> value
    longer: dict[str, dict[str, int]] = field(default_factory=dict)   # length_offsets

    def lengths_note(self) -> str:
        """Says which arrays run over longer intervals than the annotation
        (:meth:`Specializer.length_offsets`), for an error of such a call."""
        if not self.longer:
            return ""
        parts = [f"'{n}' has {c} more element{'s' if c != 1 else ''} along {dn}"
                 for n, by_dim in sorted(self.longer.items()) for dn, c in sorted(by_dim.items())]
        return ("; in this call " + ", ".join(parts) + " than the shortest array over that "
                "dimension (element 0 is coordinate 0, so its interval ends that much later)")


def _is_array(v: Any) -> bool:
    if isinstance(v, (np.generic, bool, int, float, complex)):
        return False
    return isinstance(v, np.ndarray) or hasattr(v, "__array__") or \
        hasattr(v, "__cuda_array_interface__") or hasattr(v, "__array_interface__")


def _is_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating))


def _contains_array(v: Any) -> bool:
    if isinstance(v, tuple):
        return any(_contains_array(x) for x in v)
    return _is_array(v)


def _static_token(v: Any) -> Any:
    """A hashable token that tells static values apart by type too (1 vs 1.0)."""
    if isinstance(v, tuple):
        return ("tuple",) + tuple(_static_token(x) for x in v)
    return (type(v).__module__, type(v).__qualname__, v)


def _shape(v: Any) -> tuple[int, ...] | None:
    while isinstance(v, tuple) and v:
        v = v[0]
    s = getattr(v, "shape", None)
    if s is None:
        try:
            s = np.shape(v)
        except Exception:  # noqa: BLE001 - not array-like: no shape
            return None
    return tuple(int(x) for x in s)


_LINEAR: dict[sympy.Expr, tuple[sympy.Symbol, int, int] | None] = {}


def _linear(expr: sympy.Expr) -> tuple[sympy.Symbol, int, int] | None:
    """``expr`` as ``a*s + b`` with integers ``a != 0``, ``b`` (cached), or None."""
    try:
        return _LINEAR[expr]
    except KeyError:
        pass
    out = None
    free = list(expr.free_symbols)
    if len(free) == 1:
        s = free[0]
        e = sympy.expand(expr)
        a, b = e.coeff(s), e.subs(s, 0)
        if a.is_Integer and b.is_Integer and a != 0 and sympy.expand(e - a * s - b) == 0:
            out = (s, int(a), int(b))
    _LINEAR[expr] = out
    return out


def solve_size(expr: sympy.Expr, value: int, known: dict[sympy.Symbol, int]) -> None:
    """Add to ``known`` the symbol that ``expr == value`` determines, if exactly one."""
    lin = _linear(expr)
    if lin is not None:
        s, a, b = lin
        if s not in known:
            q, r = divmod(value - b, a)
            if r == 0:
                known[s] = q
        return
    if not expr.free_symbols & set(known) and len(expr.free_symbols) != 1:
        return
    e = sympy.expand(expr.subs(known))
    free = list(e.free_symbols)
    if len(free) != 1:
        return
    sol = sympy.solve(sympy.Eq(e, value), free[0])
    if len(sol) == 1 and sol[0].is_Integer:
        known[free[0]] = int(sol[0])


class Specializer:
    """Describes the arguments of calls of one decorated function and builds the
    keys and parameter types of their specialisations."""

    def __init__(self, owner: str, params: Sequence[ParamInfo],
                 size_of: Callable[[Dimension], sympy.Symbol],
                 annotated_type: Callable[[ParamInfo], ir.TensorType],
                 caller: Callable[[], str | None]):
        self.owner = owner
        self.params = list(params)
        self.size_of = size_of
        self._annotated_type = annotated_type
        self._types: dict[str, ir.TensorType] = {}
        self.caller = caller
        self.generic = any(p.generic for p in self.params)
        self._size_syms: dict[str, sympy.Symbol] = {}
        self._plain: list[tuple[str, int, str]] | None = None
        self.default_raw = tuple(("A", ()) for _ in self.params)

    # ------------------------------------------------------------------ helpers

    def annotated_type(self, p: ParamInfo) -> ir.TensorType:
        t = self._types.get(p.name)
        if t is None:
            t = self._types[p.name] = self._annotated_type(p)
        return t

    def error(self, p: ParamInfo | None, message: str) -> ArgumentError:
        caller = self.caller()
        where = f" (called at {caller})" if caller else ""
        return ArgumentError(f"{self.owner}(): {message}{where}", p.loc if p else None)

    def default_key(self) -> tuple[ParamSig, ...]:
        """The key of a fully annotated parameter list (no call-time intervals)."""
        return self.key(Analysis(self.default_raw, {}, {}, [],
                                 {p.name: ("A",) for p in self.params}, {}))

    # ------------------------------------------------------------------ analysis

    def plain_axes(self) -> list[tuple[str, int, str]]:
        """``(parameter, axis, dimension)`` for each axis annotated with a bare
        dimension ``D`` (the interval ``D[0:N_D]``): the axes whose lengths
        may differ by constants (:meth:`length_offsets`)."""
        if self._plain is None:      # from the annotations only: no SymPy (calls by the source)
            self._plain = [(p.name, k, d.name) for p in self.params
                           if isinstance(p.spec, TensorSpec)
                           for k, d in enumerate(p.spec.dims) if bare_dimension(d)]
        return self._plain

    def length_offsets(self, values: dict[str, Any], extra: Extra = None
                       ) -> dict[str, dict[str, int]]:
        """How much longer than the shortest one each plain annotated array
        (:meth:`plain_axes`; not wrapped by ``with_interval``) is along each
        dimension, where arrays over one dimension differ in length: parameter
        -> {dimension: extra length}.  Such an array gets the interval
        ``D[0:N_D + c]``, as ``D.halo(0, c)`` would give (GT4Py's half levels:
        every field's domain starts at 0); ``N_D`` is the shortest length.
        ``extra``: the dimensions and shape of ``out=`` of a direct call, which
        takes part in the shortest length.  Empty where the lengths agree."""
        out: dict[str, dict[str, int]] = {}
        for who, dname, more in self._excess(values, extra):
            if who is not None:
                out.setdefault(who, {})[dname] = more
        return out

    def out_length_offsets(self, values: dict[str, Any], extra: Extra) -> dict[str, int]:
        """How much longer than the shortest array over each dimension ``out=`` of
        a direct call is (``extra``): {dimension: extra length}, where it is
        longer (a half-level output of full-level inputs)."""
        return {dname: more for who, dname, more in self._excess(values, extra, wrapped=True)
                if who is None}

    def _excess(self, values: dict[str, Any], extra: Extra, wrapped: bool = False
                ) -> list[tuple[str | None, str, int]]:
        """``(array, dimension, extra length)`` for each array longer than the
        shortest one over a dimension (``out=`` named None); ``wrapped``: arrays
        given by ``with_dims`` count too."""
        found = []
        for dname, uses in self._lengths(values, extra, wrapped).items():
            low = min(n for _, n in uses)
            found += [(who, dname, n - low) for who, n in uses if n != low]
        return found

    def _lengths(self, values: dict[str, Any], extra: Extra, wrapped: bool = False
                 ) -> dict[str, list[tuple[str | None, int]]]:
        """Per dimension, the lengths of the plain annotated arrays over it (and
        of ``out=``, named None); ``wrapped``: also those of arrays given by
        ``with_dims`` over a dimension without an explicit interval."""
        plain = self.plain_axes()
        lengths: dict[str, list[tuple[str | None, int]]] = {}
        if wrapped:
            for name, v in values.items():
                if not isinstance(v, TensorArg) or v.dims is None:
                    continue
                shape = getattr(v.value, "shape", None)
                if shape is None or len(shape) != len(v.dims):
                    continue
                for d, n in zip(v.dims, shape):
                    if isinstance(d, Dimension) and d.name not in v.intervals:
                        lengths.setdefault(d.name, []).append((name, int(n)))
        if not plain and not lengths:
            return {}
        for name, k, dname in plain:
            v = values.get(name)
            if v is None or isinstance(v, TensorArg):
                continue
            shape = getattr(v, "shape", None)
            if shape is None or k >= len(shape):
                continue
            lengths.setdefault(dname, []).append((name, int(shape[k])))
        if extra is not None:
            for dname, n in zip(*extra):
                if dname in lengths:
                    lengths[dname].append((None, int(n)))
        return lengths

    def analyse(self, values: dict[str, Any], extra: Extra = None) -> Analysis:
        """Describe the arguments ``values`` (name -> value, as passed);
        ``extra``: ``out=`` of a direct call (see :meth:`length_offsets`)."""
        values = self._unwrapped(values)
        plain: dict[str, Any] = {}
        statics: dict[str, Any] = {}
        auto: list[str] = []
        descs: dict[str, Any] = {}
        raw: list[Any] = []
        tensors: list[_Tensor] = []
        wrapped: list[tuple[ParamInfo, TensorArg]] = []
        weak: list[str] = []                  # Python floats: they follow the arrays
        for p in self.params:
            if p.name not in values:
                if p.default is not NO_DEFAULT:
                    descs[p.name] = ("D",)
                    continue
                if not p.generic:
                    descs[p.name] = ("A",)   # the argument check names what is missing
                    continue
                raise self.error(p, f"missing argument '{p.name}'")
            v = values[p.name]
            if not p.generic:
                descs[p.name] = ("A",)
                if isinstance(v, TensorArg):
                    wrapped.append((p, v))
                    plain[p.name] = v.value
                else:
                    plain[p.name] = v
                continue
            assert isinstance(p.spec, GenericSpec)
            d = self._describe_generic(p, p.spec, v)
            if isinstance(d, _Tensor):
                tensors.append(d)
                plain[p.name] = v.value if isinstance(v, TensorArg) else v
                if d.auto:
                    auto.append(p.name)
            elif d[0] == "S":
                plain[p.name] = v
                descs[p.name] = d
                if type(v) is float and p.spec.number_element() is None:
                    weak.append(p.name)
            else:
                statics[p.name] = v
                descs[p.name] = d
        if weak:
            floats = self._float_types(tensors, values)
            if len(floats) == 1:
                (ft,) = floats
                for n in weak:
                    descs[n] = ("S", ft)
        longer = self.length_offsets(values, extra)
        known, known_from = self._annotated_sizes(values, wrapped, longer)
        overrides = self._overrides(wrapped, known)
        for name, by_dim in longer.items():
            for dname, c in by_dim.items():
                overrides.setdefault(name, {})[dname] = (0, c)
        sizes = self._relate(tensors, known, known_from)
        for t in tensors:
            descs[t.param.name] = ("T", t.dtype, t.dims, tuple(t.offsets))
        for p in self.params:
            d = descs[p.name]
            if d[0] == "A":
                raw.append(("A", tuple(sorted((dn, a, b) for dn, (a, b)
                                              in overrides.get(p.name, {}).items()))))
            elif d[0] == "T":
                raw.append(("T", d[1], tuple(_dim_token(x) for x in d[2]), d[3]))
            elif d[0] == "C":
                raw.append(("C", _static_token(d[1])))
            else:
                raw.append(d)
        return Analysis(tuple(raw), plain, statics, auto, descs, overrides, sizes, longer)

    def _describe_generic(self, p: ParamInfo, spec: GenericSpec, v: Any):
        ta = v if isinstance(v, TensorArg) else None
        value = ta.value if ta is not None else v
        if not _contains_array(value):
            if ta is not None:
                raise self.error(p, f"'{p.name}' got with_dims/with_interval of "
                                    f"{_kind(value)}; they name the axes of an array")
            if _is_number(value):
                if spec.tensor_only:
                    raise self.error(p, f"'{p.name}' ({spec!r}) expects an array, got "
                                        f"{_kind(value)} {value!r}")
                return ("S", self._number_type(p, spec, value))
            if isinstance(value, list):
                raise self.error(p, f"'{p.name}' got a list; pass a NumPy array "
                                    "(np.asarray(…)) or a tuple of arrays")
            try:
                hash(value)
            except TypeError:
                raise self.error(p, f"'{p.name}' got {_kind(value)}, which is neither an "
                                    "array, a number nor a hashable static value") from None
            if spec.tensor_only:
                raise self.error(p, f"'{p.name}' ({spec!r}) expects an array, got "
                                    f"{_kind(value)}")
            return ("C", value)
        leaves = _leaves(value)
        if leaves is None:
            raise self.error(p, f"'{p.name}' mixes arrays and other values; a tuple "
                                "argument holds arrays of one shape")
        shapes = {_shape(x) for x in leaves}
        if len(shapes) != 1:
            shown = sorted(shapes, key=lambda s: s or ())
            raise self.error(p, f"the arrays of the tuple '{p.name}' have different shapes "
                                f"{shown}; the elements of a tuple tensor have one shape")
        shape = shapes.pop()
        if shape is None:
            raise self.error(p, f"'{p.name}' got {_kind(value)} without a shape")
        dtype = _element_type_of(value, self, p)
        if not shape and not isinstance(value, tuple):
            if ta is not None:
                raise self.error(p, f"'{p.name}' is a 0-d array; with_dims/with_interval "
                                    "name the axes of an array")
            if spec.tensor_only:
                raise self.error(p, f"'{p.name}' ({spec!r}) expects an array with "
                                    "dimensions, got a 0-d array")
            return ("S", dtype)
        want = spec.element()
        if want is not None and dtype != want:
            raise self.error(p, f"'{p.name}' ({spec!r}) expects {want} elements, got {dtype}")
        ndim = len(shape)
        auto = False
        intervals = ta.intervals if ta is not None else {}
        if ta is not None and ta.dims is not None:
            dims = ta.dims
            if len(dims) != ndim:
                raise self.error(p, f"with_dims names {len(dims)} dimension"
                                    f"{'s' if len(dims) != 1 else ''} "
                                    f"({', '.join(_dname(d) for d in dims)}) but '{p.name}' "
                                    f"is a {ndim}-D array of shape {shape}")
        elif intervals:
            if len(intervals) != ndim:
                raise self.error(p, f"'{p.name}' is not annotated, so with_interval names "
                                    f"its axes in order, but it names {len(intervals)} "
                                    f"({', '.join(intervals)}) of the {ndim} axes of shape "
                                    f"{shape}; name every axis, or use with_dims("
                                    f"{p.name}, …) with with_interval")
            dims = tuple(Dimension(n) for n in intervals)
        else:
            try:
                dims, auto = positional_dims(ndim)
            except ValueError as e:
                raise self.error(p, f"'{p.name}' is a {ndim}-D array but {e}; name its "
                                    "axes with with_dims") from None
        names = [_dname(d) for d in dims]
        for dn in intervals:
            if dn not in names:
                raise self.error(p, f"with_interval: '{p.name}' has no dimension {dn} "
                                    f"(its dimensions are {', '.join(names)})")
        starts: list[int] = []
        stops: list[int] = []
        explicit: list[bool] = []
        for k, (d, n) in enumerate(zip(dims, shape)):
            if isinstance(d, NeighborDimension):
                if d.name in intervals or n != d.size:
                    raise self.error(p, f"'{p.name}' has {n} elements along axis {k}, the "
                                        f"neighbour dimension {d!r} has {d.size}")
                starts.append(0)
                stops.append(n)
                explicit.append(False)
                continue
            if d.name in intervals:
                a, b = intervals[d.name]
                if b is None:
                    b = a + n
                if b - a != n:
                    raise self.error(p, f"with_interval: '{p.name}' has {n} elements along "
                                        f"{d.name} but the interval [{a}:{b}] has {b - a}")
                starts.append(a)
                stops.append(b)
                explicit.append(True)
            else:
                starts.append(0)
                stops.append(n)
                explicit.append(False)
        return _Tensor(p, dtype, tuple(dims), starts, stops, explicit, auto)

    def _float_types(self, tensors: list[_Tensor], values: dict[str, Any]) -> set[ir.ScalarType]:
        """The float element types of the tensor arguments (their leaves)."""
        out: set[ir.ScalarType] = set()

        def add(t: ir.ElementType) -> None:
            if isinstance(t, ir.TupleType):
                for e in t.elements:
                    add(e)
            elif t.is_float:
                out.add(t)
        for t in tensors:
            add(t.dtype)
        for p in self.params:
            if not p.generic and p.name in values and isinstance(p.spec, TensorSpec) \
                    and p.spec.dims:
                add(p.spec.element())
        return out

    def _number_type(self, p: ParamInfo, spec: GenericSpec, v: Any) -> ir.ElementType:
        """The type of the number ``v``: a Python number takes the element type the
        parameter gives numbers (``Tensor[int32, ...]``, a scan operator's ``nlev:
        int32``) where it is of its kind (an ``int`` for an integer or float type,
        a ``float`` for a float type, a ``bool`` for ``bool``)."""
        want = spec.number_element()
        if isinstance(want, ir.ScalarType) and type(v) in (bool, int, float):
            if want.is_bool if type(v) is bool else \
                    (want.is_int or want.is_float) if type(v) is int else want.is_float:
                return want
        return self._scalar_type(p, v)

    def _scalar_type(self, p: ParamInfo, v: Any) -> ir.ElementType:
        if isinstance(v, (bool, np.bool_)):
            return ir.BOOL
        if isinstance(v, int):
            return ir.INT64
        if isinstance(v, float):
            return ir.FLOAT64
        try:
            return element_type(np.asarray(v).dtype)
        except (TypeError, ValueError):
            raise self.error(p, f"'{p.name}' is a {np.asarray(v).dtype} scalar, which Tensor "
                                "IR does not support; use float64, float32, int64, int32 "
                                "or bool") from None

    def _annotated_sizes(self, values: dict[str, Any],
                         wrapped: list[tuple[ParamInfo, TensorArg]],
                         longer: dict[str, dict[str, int]]):
        """Size symbols determined by the annotated (not wrapped) tensor arguments
        (``longer``: the extra lengths of :meth:`length_offsets`)."""
        known: dict[sympy.Symbol, int] = {}
        known_from: dict[sympy.Symbol, str] = {}
        wrapped_names = {p.name for p, _ in wrapped}
        for p in self.params:
            if p.generic or p.name in wrapped_names or p.name not in values:
                continue
            t = self.annotated_type(p)
            if not t.dims:
                continue
            shape = _shape(values[p.name])
            if shape is None or len(shape) != len(t.dims):
                continue     # the argument check reports it
            extra = longer.get(p.name, {})
            for d, n in zip(t.dims, shape):
                n -= extra.get(d.name, 0)
                before = set(known)
                solve_size(d.stop - d.start, n, known)
                for s in set(known) - before:
                    known_from[s] = p.name
        return known, known_from

    def _check_named_axes(self, p: ParamInfo, ta: TensorArg) -> None:
        """The dimensions ``with_dims`` (or ``as_field``) gives an annotated
        parameter's argument are the annotation's, in order."""
        if ta.dims is None:
            return
        t = self.annotated_type(p)
        got = tuple(_dname(d) for d in ta.dims)
        if got != t.dim_names and got != _declared_names(p.spec):
            raise self.error(p, f"'{p.name}' is annotated {p.spec!r} ({t}) but "
                                f"with_dims names its axes ({', '.join(got)})")

    def _unwrapped(self, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` with the array itself for each annotated parameter given
        ``with_dims(a, …)`` (a GT4Py field) without intervals: the annotation
        says all ``with_dims`` does, so it is taken as the plain array is (a
        half-level field one level longer included)."""
        out = values
        for p in self.params:
            v = values.get(p.name)
            if p.generic or type(v) is not TensorArg or v.intervals or type(v.value) is tuple:
                continue
            t = self.annotated_type(p)
            shape = _shape(v.value)
            if shape is None or len(shape) != len(t.dims):
                continue                    # reported with the other wrapped arguments
            self._check_named_axes(p, v)
            if out is values:
                out = dict(values)
            out[p.name] = v.value
        return out

    def _overrides(self, wrapped: list[tuple[ParamInfo, TensorArg]],
                   known: dict[sympy.Symbol, int]) -> dict[str, dict[str, tuple[int, int]]]:
        """Interval changes of annotated parameters passed with with_interval/with_dims."""
        overrides: dict[str, dict[str, tuple[int, int]]] = {}
        for p, ta in wrapped:
            t = self.annotated_type(p)
            shape = _shape(ta.value)
            if shape is None or len(shape) != len(t.dims):
                raise self.error(p, f"'{p.name}' expects {len(t.dims)} dimensions ({t}), got "
                                    f"shape {shape}")
            self._check_named_axes(p, ta)
            dims_by_name = {d.name: (i, d) for i, d in enumerate(t.dims)}
            for dname, (a, b) in ta.intervals.items():
                if dname not in dims_by_name:
                    raise self.error(p, f"with_interval: '{p.name}' has no dimension {dname} "
                                        f"({t})")
                i, d = dims_by_name[dname]
                if b is None:
                    b = a + shape[i]
                if b - a != shape[i]:
                    raise self.error(p, f"with_interval: '{p.name}' has {shape[i]} elements "
                                        f"along {dname} but the interval [{a}:{b}] has "
                                        f"{b - a}")
                if d.stop.free_symbols - set(known):
                    solve_size(d.stop, b, known)
                s0 = d.start.subs(known)
                e0 = d.stop.subs(known)
                if not (s0.is_Integer and e0.is_Integer):
                    raise self.error(p, f"with_interval: cannot relate the interval of "
                                        f"'{p.name}' along {dname} ({d}) to the other "
                                        "arguments")
                overrides.setdefault(p.name, {})[dname] = (a - int(s0), b - int(e0))
        return overrides

    def size_symbol(self, name: str) -> sympy.Symbol:
        s = self._size_syms.get(name)
        if s is None:
            s = self._size_syms[name] = self.size_of(Dimension(name))
        return s

    def _relate(self, tensors: list[_Tensor], known: dict[sympy.Symbol, int],
                known_from: dict[sympy.Symbol, str]) -> dict[str, int]:
        """Give each rank-generic tensor's intervals relative to its dimensions' sizes;
        the values of the size symbols."""
        by_dim: dict[str, list[tuple[_Tensor, int]]] = {}
        for t in tensors:
            for k, d in enumerate(t.dims):
                if isinstance(d, Dimension):
                    by_dim.setdefault(d.name, []).append((t, k))
        sizes: dict[str, tuple[int, str, bool]] = {}   # dim -> (N, reference, annotated)
        for name, uses in by_dim.items():
            sym = self.size_symbol(name)
            if sym in known:
                sizes[name] = (known[sym], known_from.get(sym, "?"), True)
                continue
            first, axis = next(((t, k) for t, k in uses if not t.explicit[k]), uses[0])
            sizes[name] = (first.stops[axis], first.param.name, False)
        for t in tensors:
            offs = []
            for k, d in enumerate(t.dims):
                if not isinstance(d, Dimension):
                    offs.append((0, 0))
                    continue
                n, ref, annotated = sizes[d.name]
                if not t.explicit[k] and t.stops[k] != n:
                    length = t.stops[k] - t.starts[k]
                    if annotated:
                        other = (f"the annotation of '{ref}' makes "
                                 f"{self.size_symbol(d.name)} = {n}")
                    else:
                        other = f"'{ref}' has {n}"
                    raise self.error(t.param, f"inconsistent sizes along {d.name}: "
                                              f"'{t.param.name}' has {length} elements but "
                                              f"{other}; arrays over one dimension have one "
                                              "size (give halos with with_interval("
                                              f"{t.param.name}, {d.name}=(start, stop)))")
                offs.append((t.starts[k], t.stops[k] - n))
            t.offsets = offs
        out = {s.name: v for s, v in known.items()}
        for name, (n, _, _) in sizes.items():
            out[self.size_symbol(name).name] = n
        return out

    # ------------------------------------------------------------------ keys

    def key(self, a: Analysis) -> tuple[ParamSig, ...]:
        out = []
        for p in self.params:
            d = a.descs[p.name]
            kind = d[0]
            if kind == "A":
                t = self.annotated_type(p)
                ov = a.overrides.get(p.name)
                if ov:
                    t = ir.TensorType(t.dtype, tuple(
                        ir.Dim(x.name, x.start + ov[x.name][0], x.stop + ov[x.name][1])
                        if x.name in ov else x for x in t.dims))
                out.append(ParamSig(p.name, "scalar" if t.is_scalar else "tensor", t))
            elif kind == "T":
                out.append(ParamSig(p.name, "tensor", self.tensor_type(d[1], d[2], d[3])))
            elif kind == "S":
                out.append(ParamSig(p.name, "scalar", ir.TensorType(d[1])))
            elif kind == "C":
                out.append(ParamSig(p.name, "static", static=d[1]))
            else:
                out.append(ParamSig(p.name, "default"))
        return tuple(out)

    def tensor_type(self, dtype: ir.ElementType, dims: tuple, offsets: tuple) -> ir.TensorType:
        t = TensorSpec(dtype, tuple(dims)).to_type(self.size_of)
        out = []
        for d, obj, (start, stop_off) in zip(t.dims, dims, offsets):
            if isinstance(obj, Dimension):
                d = ir.Dim(d.name, start, self.size_of(obj) + stop_off)
            out.append(d)
        return ir.TensorType(t.dtype, tuple(out))

    def table_dims(self, a: Analysis) -> dict[str, NeighborDimension]:
        """Neighbour tables among the parameters: name -> their neighbour dimension."""
        out: dict[str, NeighborDimension] = {}
        for p in self.params:
            d = a.descs.get(p.name)
            if d is None:
                continue
            if d[0] == "A" and isinstance(p.spec, TensorSpec) and p.spec.is_table():
                out[p.name] = p.spec.dims[1]
            elif d[0] == "T":
                spec = TensorSpec(d[1], tuple(d[2]))
                if spec.is_table():
                    out[p.name] = spec.dims[1]
        return out


def bare_dimension(d: Any) -> bool:
    """Whether an annotation's dimension is a bare ``D`` (the interval ``D[0:N_D]``)."""
    return isinstance(d, Dimension) and not isinstance(d, (DimSpec, NeighborDimension))


def _dname(d: Any) -> str:
    return d.name if isinstance(d, (Dimension, NeighborDimension)) else str(d)


def _declared_names(spec: Any) -> tuple[str, ...] | None:
    """The names of the dimensions an annotation declares, as written (a
    local dimension ``C2EDim`` by its name, where the IR has ``_NB_0``)."""
    if not isinstance(spec, TensorSpec):
        return None
    return tuple(_dname(d.dim if isinstance(d, DimSpec) else d) for d in spec.dims)


def _dim_token(d: Any) -> Any:
    if isinstance(d, NeighborDimension):
        return d.token()
    return d.name


def _kind(v: Any) -> str:
    t = type(v)
    name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    return f"a {name}"


def _leaves(v: Any) -> list[Any] | None:
    if isinstance(v, tuple):
        out: list[Any] = []
        for x in v:
            sub = _leaves(x)
            if sub is None:
                return None
            out += sub
        return out if out else None
    return [v] if _is_array(v) else None


_DTYPES: dict[Any, ir.ElementType] = {}


def _element_type_of(v: Any, sp: Specializer, p: ParamInfo) -> ir.ElementType:
    if isinstance(v, tuple):
        return ir.TupleType(tuple(_element_type_of(x, sp, p) for x in v))
    dt = getattr(v, "dtype", None)
    if dt is None:
        dt = np.asarray(v).dtype
    try:
        return _DTYPES[dt]
    except (KeyError, TypeError):
        pass
    try:
        et = element_type(np.dtype(dt))
        _DTYPES[dt] = et
        return et
    except (TypeError, ValueError):
        raise sp.error(p, f"'{p.name}' has dtype {dt}, which Tensor IR does not support; "
                          "use float64, float32, int64, int32 or bool (x.astype(…))") from None


def check_named(owner: str, spec: Specialization, a: Analysis) -> None:
    """A function that shifts along dimensions no argument has, called with arrays
    that only have the automatic positional names: almost surely a mistake."""
    if not spec.dropped or not a.auto:
        return
    names = sorted(spec.dropped)
    loc = spec.dropped[names[0]]
    first = a.auto[0]
    sig = next((s for s in spec.key if s.name == first), None)
    dims = ", ".join(sig.type.dim_names) if sig is not None and sig.type is not None else ""
    raise FrontendError(
        f"{owner}() shifts along {', '.join(names)}, but no argument has "
        f"{'this dimension' if len(names) == 1 else 'these dimensions'}: plain arrays get "
        f"the positional dimension names D0, D1, … ('{first}' has ({dims})); name the axes "
        f"with with_dims({first}, {', '.join(names)}) or tensorir_dace.default_dims("
        f"{', '.join(names)}), or call it from a @tensorir_dace.program with annotated "
        "parameters", loc)
