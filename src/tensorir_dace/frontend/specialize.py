"""Rank-generic programs and functions: specialisation at call time.

A parameter of a ``@program`` or ``@function`` without an annotation, with a
bare ``Tensor`` annotation or with ``Tensor[T, ...]`` is *rank-generic*.  At
call time it takes, from its argument,

* the dimensions: from :func:`~tensorir_dace.frontend.with_dims`, from the
  keywords of :func:`~tensorir_dace.frontend.with_interval` (in axis order), or
  positionally — ``D0, D1, …`` for a plain array, or the names set with
  :class:`default_dims`;
* the intervals (halos): element 0 is coordinate 0 unless ``with_interval`` /
  ``with_dims(a, I[-1:])`` says otherwise; the stop is expressed relative to
  the size symbol ``N_<D>`` of the dimension, so that ``I[-1:N_I+1]`` and
  ``I[0:N_I]`` are different specialisations but ``N_I`` itself is not part of
  the key: one compiled binary serves every size;
* the element type: the array's dtype, or for a scalar the Python/NumPy type
  (``float`` → float64, ``int`` → int64, ``bool`` → bool, ``np.float32(…)`` →
  float32);
* other hashable Python values (dimensions, functions, strings, tuples of
  numbers) are *static*: they are part of the key, like JAX's static arguments.

``N_<D>`` is the size of the first plain (no explicit interval) array over
``D``, in parameter order; every other plain array over ``D`` must have that
size; an array with an explicit interval may differ by its halo.  A dimension
that annotated parameters also use takes ``N_<D>`` from them.

Each specialisation is translated, type-checked and compiled once, cached on
the decorated object (``prog.specializations()``, ``prog.cache_info()``) and,
through the content-addressed compile cache, on disk.  A new specialisation is
logged at INFO level on the logger ``tensorir_dace.specialization`` with the
reason: what differs from the closest cached specialisation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import sympy

from .. import ir
from ..errors import ArgumentError, FrontendError, SourceLoc
from .annotations import GenericSpec, TensorArg, TensorSpec, element_type
from .dims import DefinitionError, Dimension, NeighborDimension

logger = logging.getLogger("tensorir_dace.specialization")

__all__ = [
    "CacheInfo",
    "ParamSig",
    "Specialization",
    "default_dims",
    "get_default_dims",
    "logger",
]

# --------------------------------------------------------------------------- default dims

_DEFAULT_DIMS: tuple[Dimension, ...] | None = None
_POSITIONAL: dict[int, Dimension] = {}


class default_dims:
    """The dimensions of plain (unnamed) array arguments, by axis.

    ``tir.default_dims(I, J, K)`` makes axis 0 of every plain array argument
    ``I``, axis 1 ``J`` and axis 2 ``K`` (for this process); used in a
    ``with`` statement, the previous setting comes back at the end of the
    block.  ``default_dims()`` goes back to the positional names ``D0, D1, …``.
    Arrays passed with :func:`with_dims` / :func:`with_interval` are not
    affected.
    """

    def __init__(self, *dims: Dimension | str):
        global _DEFAULT_DIMS
        norm: list[Dimension] = []
        for d in dims:
            if isinstance(d, str):
                d = Dimension(d)
            if not isinstance(d, Dimension):
                raise DefinitionError(f"default_dims(I, J, …): {d!r} is not a dimension "
                                      "(neighbour dimensions must be named with with_dims)")
            if any(e.name == d.name for e in norm):
                raise DefinitionError(f"default_dims: dimension {d.name} appears twice")
            norm.append(d)
        self.dims: tuple[Dimension, ...] | None = tuple(norm) or None
        self._previous = _DEFAULT_DIMS
        _DEFAULT_DIMS = self.dims

    def __enter__(self) -> default_dims:  # noqa: PYI034 - not subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        global _DEFAULT_DIMS
        _DEFAULT_DIMS = self._previous

    def __repr__(self) -> str:
        names = ", ".join(d.name for d in self.dims) if self.dims else ""
        return f"default_dims({names})"


def get_default_dims() -> tuple[Dimension, ...] | None:
    """The dimensions set with :class:`default_dims` (None: positional ``D0, D1, …``)."""
    return _DEFAULT_DIMS


def _positional(ndim: int) -> tuple[tuple[Dimension, ...], bool]:
    """The dimensions of a plain ``ndim``-D array and whether they are the automatic
    positional names ``D0, D1, …``."""
    dd = _DEFAULT_DIMS
    if dd is not None:
        if ndim > len(dd):
            raise ValueError(f"default_dims({', '.join(d.name for d in dd)}) names "
                             f"{len(dd)} axes")
        return dd[:ndim], False
    out = []
    for k in range(ndim):
        d = _POSITIONAL.get(k)
        if d is None:
            d = _POSITIONAL.setdefault(k, Dimension(f"D{k}"))
        out.append(d)
    return tuple(out), True


# --------------------------------------------------------------------------- keys


NO_DEFAULT = object()


@dataclass(frozen=True)
class ParamInfo:
    """A parameter of a decorated function, as declared."""

    name: str
    spec: TensorSpec | GenericSpec
    loc: SourceLoc
    default: Any = NO_DEFAULT

    @property
    def generic(self) -> bool:
        return isinstance(self.spec, GenericSpec)


def _static_text(v: Any) -> str:
    if isinstance(v, (Dimension, NeighborDimension)):
        return v.name if isinstance(v, Dimension) else repr(v)
    name = getattr(v, "__qualname__", None) or getattr(getattr(v, "fn", None),
                                                        "__qualname__", None)
    if name is not None and callable(v):
        return name
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class ParamSig:
    """One parameter in the key of a specialisation.

    ``kind`` is ``"tensor"`` (``type`` holds its type, sizes symbolic),
    ``"scalar"`` (``type`` is ``tensor<T>``), ``"static"`` (``static`` holds the
    Python value) or ``"default"`` (not passed; the function's default is used).
    """

    name: str
    kind: str
    type: ir.TensorType | None = None
    static: Any = None

    def __str__(self) -> str:
        if self.kind == "tensor":
            return f"{self.name}: {self.type}"
        if self.kind == "scalar":
            assert self.type is not None
            return f"{self.name}: {self.type.dtype}"
        if self.kind == "static":
            return f"{self.name}={_static_text(self.static)}"
        return f"{self.name}=<default>"

    def what(self) -> str:
        if self.kind == "tensor":
            return f"a tensor {self.type}"
        if self.kind == "scalar":
            assert self.type is not None
            return f"a {self.type.dtype} scalar"
        if self.kind == "static":
            return f"the static value {_static_text(self.static)}"
        return "not given (its default)"


def key_text(key: Sequence[ParamSig]) -> str:
    return ", ".join(str(s) for s in key)


def _names(t: ir.TensorType) -> str:
    return "(" + ", ".join(t.dim_names) + ")"


def _difference(new: ParamSig, old: ParamSig) -> list[str]:
    """What differs between two keys of one parameter: one phrase per aspect."""
    if new.kind != old.kind:
        return [f"is {new.what()} (cached: {old.what()})"]
    if new.kind == "static":
        return [f"is {_static_text(new.static)} (cached: {_static_text(old.static)})"]
    a, b = new.type, old.type
    assert a is not None and b is not None
    parts = []
    if a.dtype != b.dtype:
        parts.append(f"has dtype {a.dtype} (cached: {b.dtype})")
    if a.dim_names != b.dim_names:
        if len(a.dims) != len(b.dims):
            parts.append(f"has {len(a.dims)} dimensions {_names(a)} (cached: {len(b.dims)} "
                         f"{_names(b)})")
        else:
            parts.append(f"has dimensions {_names(a)} (cached: {_names(b)})")
    elif a.dims != b.dims:
        changed = [(da, db) for da, db in zip(a.dims, b.dims) if da != db]
        parts.append("has a different halo: " + ", ".join(str(da) for da, _ in changed)
                     + " (cached: " + ", ".join(str(db) for _, db in changed) + ")")
    return parts or ["differs"]


def describe_difference(new: ParamSig, old: ParamSig) -> str:
    """Why ``new`` is not ``old``, for the log: one phrase."""
    parts = _difference(new, old)
    what = "static argument" if new.kind == old.kind == "static" else "argument"
    return f"{what} '{new.name}' " + " and ".join(parts)


def differences(new: Sequence[ParamSig], old: Sequence[ParamSig]) -> list[str]:
    return [describe_difference(a, b) for a, b in zip(new, old) if a != b]


def distance(new: Sequence[ParamSig], old: Sequence[ParamSig]) -> int:
    """How many aspects (kind, dtype, dimensions, halo, static value) differ."""
    return sum(len(_difference(a, b)) for a, b in zip(new, old) if a != b)


# --------------------------------------------------------------------------- entries


class CacheInfo(NamedTuple):
    """Counters of one decorated object's specialisation cache.

    ``hits``/``misses``: calls (and ``.ir``/``specialize`` look-ups) that found /
    did not find their specialisation; ``specializations``: how many exist;
    ``compiles``: how many of them ran the C++ compiler; ``loads``: how many
    were loaded from the on-disk compile cache instead.
    """

    hits: int
    misses: int
    specializations: int
    compiles: int
    loads: int


@dataclass(eq=False)
class Specialization:
    """One specialisation: its key, its (checked) Tensor IR program and, once
    compiled, the compiled program.  For a ``@function`` called directly,
    ``result`` is the parameter that receives the value."""

    owner: str
    key: tuple[ParamSig, ...]
    program: ir.Program
    result: ir.Param | None = None
    dropped: dict[str, SourceLoc] = field(default_factory=dict)
    compiled: Any = None
    calls: int = 0
    _extent_fns: Any = None
    _result_syms: set[str] | None = None

    @property
    def ir(self) -> ir.Program:
        return self.program

    @property
    def input_params(self) -> tuple[ir.Param, ...]:
        if self.result is None:
            return self.program.params
        return tuple(p for p in self.program.params if p.name != self.result.name)

    def signature(self) -> str:
        text = key_text(self.key)
        if self.result is not None:
            text += f" -> {self.result.type}"
        return text

    def __str__(self) -> str:
        return self.signature()

    def __repr__(self) -> str:
        return f"<specialisation of {self.owner}: {self.signature()}>"

    def format(self, ascii: bool = False) -> str:
        from ..syntax import format as fmt
        return fmt(self.program, ascii=ascii)

    def to_sdfg(self, optimize: str = "none"):
        """The DaCe SDFG of this specialisation."""
        from ..lowering import to_sdfg
        return to_sdfg(self.program, optimize=optimize)

    def result_symbols(self) -> set[str]:
        """The names of the size symbols in the result's type."""
        if self._result_syms is None:
            assert self.result is not None
            self._result_syms = {s.name for d in self.result.type.dims
                                 for s in (d.start - d.stop).free_symbols}
        return self._result_syms

    def result_shape(self, symbols: dict[str, int]) -> tuple[int, ...]:
        """The shape of the result array, from the size symbols' values."""
        assert self.result is not None
        if self._extent_fns is None:
            fns = []
            for d in self.result.type.dims:
                ext = sympy.expand(d.stop - d.start)
                names = sorted(s.name for s in ext.free_symbols)
                plain = ext.xreplace({s: sympy.Symbol(s.name) for s in ext.free_symbols})
                fn = sympy.lambdify([sympy.Symbol(n) for n in names], plain, modules=["math"])
                fns.append((names, fn))
            self._extent_fns = fns
        shape = []
        for names, fn in self._extent_fns:
            try:
                value = fn(*(symbols[n] for n in names))
            except KeyError as e:  # pragma: no cover - every size comes from an argument
                raise ArgumentError(f"{self.owner}(): the size {e} of the result is not "
                                    "determined by the arguments") from None
            shape.append(max(int(value), 0))
        return tuple(shape)


class SpecializationCache:
    """The specialisations of one decorated object, by key."""

    def __init__(self, owner: str):
        self.owner = owner
        self._by_key: dict[tuple[ParamSig, ...], Specialization] = {}
        self._by_raw: dict[Any, Specialization] = {}
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0
        self.compiles = 0
        self.loads = 0

    def __len__(self) -> int:
        return len(self._by_key)

    def entries(self) -> list[Specialization]:
        return list(self._by_key.values())

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_raw.clear()
            self.hits = self.misses = self.compiles = self.loads = 0

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, len(self._by_key), self.compiles, self.loads)

    def lookup(self, raw: Any, make_key: Callable[[], tuple[ParamSig, ...]],
               make: Callable[[tuple[ParamSig, ...]], Specialization], verb: str,
               validate: Callable[[Specialization], None] | None = None) -> Specialization:
        """The specialisation for a call; ``raw`` is a cheap key of the call's
        argument description (``make_key`` builds the real key from it)."""
        hit = self._by_raw.get(raw)
        if hit is not None:
            if validate is not None:
                validate(hit)
            self.hits += 1
            return hit
        with self._lock:
            key = make_key()
            spec = self._by_key.get(key)
            if spec is not None:
                if validate is not None:
                    validate(spec)
                self.hits += 1
            else:
                reason, closest = self._explain(key)
                spec = make(key)
                if validate is not None:
                    validate(spec)
                self.misses += 1
                self._by_key[key] = spec
                self._log_new(verb, spec, reason, closest)
            self._by_raw[raw] = spec
            return spec

    def explain(self, key: tuple[ParamSig, ...]) -> str:
        """Why ``key`` needs a new specialisation (see :meth:`_explain`)."""
        return self._explain(key)[0]

    def _explain(self, key: tuple[ParamSig, ...]) -> tuple[str, Specialization | None]:
        """Why ``key`` needs a new specialisation: the differences from the closest
        cached one (fewest differing aspects; the most recent among equals)."""
        best: tuple[int, tuple[ParamSig, ...]] | None = None
        for other in reversed(list(self._by_key)):
            if [s.name for s in other] != [s.name for s in key]:
                continue
            d = distance(key, other)
            if best is None or d < best[0]:
                best = (d, other)
        if best is None:
            return f"nothing cached yet ({key_text(key) or 'no parameters'})", None
        return "; ".join(differences(key, best[1])), self._by_key[best[1]]

    def _log_new(self, verb: str, spec: Specialization, reason: str,
                 closest: Specialization | None) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        msg = f"{verb} {self.owner} for a new specialisation: {reason}"
        # shifts that became no-ops: said once, and again when that changes
        if spec.dropped and (closest is None or set(closest.dropped) != set(spec.dropped)):
            names = sorted(spec.dropped)
            msg += (f"; shifts along {', '.join(names)} are no-ops (no argument has "
                    f"{'this dimension' if len(names) == 1 else 'these dimensions'})")
        logger.info(msg)
        logger.debug("specialisation %d of %s: %s", len(self._by_key), self.owner,
                     spec.signature())

    def compiled(self, spec: Specialization, compile_fn: Callable[[ir.Program], Any],
                 translated_before: bool = False) -> Any:
        """The compiled program of ``spec`` (compiled, or loaded from the on-disk
        cache, the first time)."""
        hit = spec.compiled
        if hit is not None:
            return hit
        with self._lock:
            if spec.compiled is not None:
                return spec.compiled
            from ..runtime.cache import cache_stats
            if translated_before:
                logger.info("compiling %s for a specialisation used before with the "
                            "interpreter: %s", self.owner, spec.signature())
            before = cache_stats()
            compiled = compile_fn(spec.program)
            after = cache_stats()
            built = int(after["compiled"] - before["compiled"])
            loaded = int(after["loaded"] - before["loaded"])
            self.compiles += built
            self.loads += loaded
            if built:
                logger.debug("%s: compiled (%.2f s)", self.owner,
                             after["compile_seconds"] - before["compile_seconds"])
            elif loaded:
                logger.debug("%s: loaded the compiled binary from the compile cache",
                             self.owner)
            spec.compiled = compiled
            return compiled


# --------------------------------------------------------------------------- arguments


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

    def analyse(self, values: dict[str, Any]) -> Analysis:
        """Describe the arguments ``values`` (name -> value, as passed)."""
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
                if type(v) is float:
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
        known, known_from = self._annotated_sizes(values, wrapped)
        overrides = self._overrides(wrapped, known)
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
        return Analysis(tuple(raw), plain, statics, auto, descs, overrides, sizes)

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
                return ("S", self._scalar_type(p, value))
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
            raise self.error(p, f"the arrays of the tuple '{p.name}' have different shapes "
                                f"{sorted(shapes)}; the elements of a tuple tensor have one "
                                "shape")
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
                dims, auto = _positional(ndim)
            except ValueError as e:
                raise self.error(p, f"'{p.name}' is a {ndim}-D array but {e}; name its "
                                    "axes with with_dims") from None
        names = [_dname(d) for d in dims]
        for n in intervals:
            if n not in names:
                raise self.error(p, f"with_interval: '{p.name}' has no dimension {n} "
                                    f"(its dimensions are {', '.join(names)})")
        if p.name in names:
            raise self.error(p, f"parameter '{p.name}' has the name of a dimension of its "
                                "argument; rename the parameter or the dimension")
        starts, stops, explicit = [], [], []
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
                         wrapped: list[tuple[ParamInfo, TensorArg]]):
        """Size symbols determined by the annotated (not wrapped) tensor arguments."""
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
            for d, n in zip(t.dims, shape):
                before = set(known)
                solve_size(d.stop - d.start, n, known)
                for s in set(known) - before:
                    known_from[s] = p.name
        return known, known_from

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
            if ta.dims is not None:
                got = tuple(_dname(d) for d in ta.dims)
                if got != t.dim_names:
                    raise self.error(p, f"'{p.name}' is annotated {p.spec!r} ({t}) but "
                                        f"with_dims names its axes ({', '.join(got)})")
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
            ref = next(((t, k) for t, k in uses if not t.explicit[k]), uses[0])
            sizes[name] = (ref[0].stops[ref[1]], ref[0].param.name, False)
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


def _dname(d: Any) -> str:
    return d.name if isinstance(d, (Dimension, NeighborDimension)) else str(d)


def _dim_token(d: Any) -> Any:
    if isinstance(d, NeighborDimension):
        return ("NB", d.source.name, d.size)
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
