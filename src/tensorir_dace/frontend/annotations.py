"""Type annotations: ``Tensor[float, I, J]``, element types, intervals at call time.

* ``Tensor[T, D1, D2, …]``: ``T`` is ``float`` (float64), ``int`` (int64),
  ``bool``, ``float32``/``float64``/``int32``/``int64`` (from this package or
  NumPy), or a (nested) tuple of them; ``Di`` is a :class:`Dimension`
  (interval ``[0:N_Di]``), a dimension with an interval (``I[-1:N+1]``,
  ``I.halo(1)``) or a :class:`NeighborDimension`.
* ``Tensor[T]``, or just ``T`` (``alpha: float``), is a scalar.
* An ``int`` tensor over one dimension and one neighbour dimension is a
  neighbour table (``E2V: Tensor[int, Edge, E2VDim]`` →
  ``tensor<int64, Edge[0:N_Edge], _NB_Vertex[0:2]>``); other tensors over a
  neighbour dimension are sparse fields (``_NB_0``, ``_NB_1``, … in order).
  ``SparseTensor[int, Vertex, V2EDim]`` forces an int sparse field.
* ``with_interval(array, I=(-1, 11))`` passes an array whose element 0 is
  coordinate ``-1`` along ``I`` (a halo) at call time.
* A parameter without annotation, annotated with a bare ``Tensor`` or with
  ``Tensor[float, ...]`` (element type fixed, dimensions open) is *rank-generic*:
  it is specialised from the arguments at call time (see
  :mod:`tensorir_dace.frontend.specialize`); ``with_dims(array, I, J)`` names
  the axes of an array argument.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .. import ir
from ..lazy import lazy_module
from .dims import DefinitionError, Dimension, DimSpec, LocalDimension, NeighborDimension

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

float32 = ir.FLOAT32
float64 = ir.FLOAT64
int32 = ir.INT32
int64 = ir.INT64
bool_ = ir.BOOL

_PY_TYPES = {float: ir.FLOAT64, int: ir.INT64, bool: ir.BOOL}


def element_type(spec: Any) -> ir.ElementType:
    """An element type from ``float``, ``"float32"``, ``np.float32``, ``float32``,
    ``np.dtype``, a ScalarType or a (nested) tuple of these."""
    if isinstance(spec, (ir.ScalarType, ir.TupleType)):
        return spec
    if isinstance(spec, tuple):
        if not spec:
            raise DefinitionError("a tuple element type needs at least one element")
        return ir.TupleType(tuple(element_type(s) for s in spec))
    if spec in _PY_TYPES:
        return _PY_TYPES[spec]
    if isinstance(spec, str):
        try:
            return ir.ScalarType(spec)
        except ValueError:
            pass
    else:
        try:
            dt = np.dtype(spec)
        except TypeError:
            dt = None
        if dt is not None:
            name = {"float64": "float64", "float32": "float32", "int64": "int64",
                    "int32": "int32", "bool": "bool"}.get(dt.name)
            if name is not None:
                return ir.ScalarType(name)
    raise DefinitionError(f"{spec!r} is not an element type; use float, int, bool, float32, "
                    "float64, int32, int64 or a tuple of them")


def is_element_type(spec: Any) -> bool:
    try:
        element_type(spec)
        return True
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class TensorSpec:
    """An annotation: element type and dimensions (intervals possibly implicit)."""

    dtype: Any
    dims: tuple[Any, ...] = ()
    sparse: bool = False

    def element(self) -> ir.ElementType:
        return element_type(self.dtype)

    def is_table(self) -> bool:
        et = self.element()
        return (not self.sparse and isinstance(et, ir.ScalarType) and et.is_int
                and len(self.dims) == 2 and isinstance(self.dims[1], NeighborDimension)
                and not isinstance(self.dims[1], LocalDimension)
                and not isinstance(self.dims[0], NeighborDimension))

    def neighbor_dims(self) -> list[NeighborDimension]:
        return [d for d in self.dims if isinstance(d, NeighborDimension)]

    def to_type(self, size_of: Callable[[Dimension], sympy.Expr] | None = None) -> ir.TensorType:
        """The IR type; ``size_of(D)`` is the size symbol of a bare dimension."""
        size_of = size_of or (lambda d: d.size_symbol)
        et = self.element()
        out: list[ir.Dim] = []
        table = self.is_table()
        counter = 0
        for d in self.dims:
            if isinstance(d, NeighborDimension):
                if table:
                    out.append(ir.Dim(d.table_dim_name, 0, d.size))
                else:
                    out.append(ir.Dim(f"{ir.NB_PREFIX}{counter}", 0, d.size))
                    counter += 1
            elif isinstance(d, DimSpec):
                out.append(ir.Dim(d.dim.name, _resize(d.start, d.dim, size_of),
                                  _resize(d.stop, d.dim, size_of)))
            elif isinstance(d, Dimension):
                out.append(ir.Dim(d.name, 0, size_of(d)))
            else:
                raise DefinitionError(f"{d!r} is not a dimension")
        return ir.TensorType(et, tuple(out))

    def __repr__(self) -> str:
        parts = [_type_name(self.dtype)] + [_dim_name(d) for d in self.dims]
        return ("SparseTensor" if self.sparse else "Tensor") + "[" + ", ".join(parts) + "]"


def _resize(bound: sympy.Expr, dim: Dimension, size_of) -> sympy.Expr:
    """Replace the default size symbol of ``dim`` by the program's symbol for it."""
    if dim.size_symbol in bound.free_symbols:
        return bound.subs(dim.size_symbol, size_of(dim))
    return bound


def _type_name(t: Any) -> str:
    try:
        return str(element_type(t))
    except (TypeError, ValueError):
        return repr(t)


def _dim_name(d: Any) -> str:
    if isinstance(d, Dimension):
        return d.name
    return repr(d)


class Tensor:
    """``Tensor[T, D1, D2, …]``: the annotation of a tensor parameter."""

    _sparse = False

    def __init__(self, *a, **k):
        raise DefinitionError("Tensor is an annotation: write Tensor[float, I, J]")

    def __class_getitem__(cls, item: Any) -> TensorSpec | GenericSpec:
        items = item if isinstance(item, tuple) else (item,)
        # Tensor[(float, float), I]: the first item may itself be a tuple type
        dtype, *ds = items
        try:
            element_type(dtype)
        except (TypeError, ValueError) as e:
            raise DefinitionError(f"{cls.__name__}[T, D…]: {getattr(e, 'message', e)}") from None
        if any(d is Ellipsis for d in ds):
            if ds != [Ellipsis] or cls._sparse:
                raise DefinitionError(f"{cls.__name__}[T, ...]: '...' (any dimensions) "
                                      "stands alone after the element type")
            return GenericSpec(dtype, tensor_only=True)
        for d in ds:
            if not isinstance(d, (Dimension, DimSpec, NeighborDimension)):
                raise DefinitionError(f"{cls.__name__}[T, D…]: {d!r} is not a dimension "
                                "(make dimensions with dims('I J K'))")
        names = [(_dim_name(d.dim) if isinstance(d, DimSpec) else
                  d.name if isinstance(d, Dimension) else repr(d)) for d in ds]
        for n in names:
            if names.count(n) > 1:
                raise DefinitionError(f"{cls.__name__}[…]: dimension {n} appears twice")
        return TensorSpec(dtype, tuple(ds), cls._sparse)


class SparseTensor(Tensor):
    """Like :class:`Tensor`, but a tensor over a neighbour dimension is always a
    sparse field, never a neighbour table (only matters for ``int`` tensors)."""

    _sparse = True


class Dims:
    """GT4Py's ``Dims[Cell, K]``: the dimensions of a :class:`Field` annotation."""

    def __init__(self, *a, **k):
        raise DefinitionError("Dims is an annotation: write Field[Dims[Cell, K], float]")

    def __class_getitem__(cls, item: Any) -> tuple:
        return item if isinstance(item, tuple) else (item,)


class Field:
    """GT4Py's annotations ``Field[[Cell, K], float]`` and ``Field[Dims[Cell, K],
    float]``: ``SparseTensor[float, Cell, K]`` (a field over a neighbour
    dimension is a sparse field, never a neighbour table, as in GT4Py)."""

    def __init__(self, *a, **k):
        raise DefinitionError("Field is an annotation: write Field[[Cell, K], float]")

    def __class_getitem__(cls, item: Any) -> TensorSpec | GenericSpec | FieldAlias:
        if not isinstance(item, tuple) or len(item) != 2 or \
                not isinstance(item[0], (list, tuple)):
            raise DefinitionError(f"Field[[D1, D2, …], T] takes a list of dimensions and an "
                                  f"element type, got Field[{item!r}]")
        dims, dtype = item
        if isinstance(dtype, TypeVar):
            return FieldAlias(tuple(dims))
        return SparseTensor.__class_getitem__((dtype,) + tuple(dims))


@dataclass(frozen=True)
class FieldAlias:
    """``Field[Dims[Cell, K], T]`` with a ``TypeVar`` ``T``: GT4Py's generic type
    alias (icon4py's ``CellKField = Field[Dims[CellDim, KDim], T]``), made an
    annotation by giving the element type: ``CellKField[float32]``."""

    dims: tuple

    def __getitem__(self, dtype: Any) -> TensorSpec | GenericSpec | FieldAlias:
        return Field.__class_getitem__((self.dims, dtype))


@dataclass(frozen=True)
class GenericSpec:
    """A rank-generic parameter: no annotation (``dtype`` None, tensors or scalars),
    a bare ``Tensor`` (any tensor) or ``Tensor[T, ...]`` (a tensor of element
    type ``T`` over any dimensions).  Specialised from the arguments at call time.
    ``numbers``: the element type a Python number given to it takes (the scalar
    annotation of a scan operator's operand, for the scan's direct call)."""

    dtype: Any = None
    tensor_only: bool = False
    numbers: Any = None

    def element(self) -> ir.ElementType | None:
        return None if self.dtype is None else element_type(self.dtype)

    def number_element(self) -> ir.ElementType | None:
        """The element type a Python number given to this parameter takes, if any."""
        t = self.numbers if self.numbers is not None else self.dtype
        return None if t is None else element_type(t)

    def __repr__(self) -> str:
        if self.dtype is not None:
            return f"Tensor[{_type_name(self.dtype)}, ...]"
        return "Tensor" if self.tensor_only else "no annotation"


def generic_spec(ann: Any, annotated: bool = True) -> GenericSpec | None:
    """The GenericSpec of a rank-generic annotation (``Tensor``, ``Tensor[T, ...]``),
    of a missing one (``annotated=False``), or None."""
    if not annotated:
        return GenericSpec()
    if isinstance(ann, GenericSpec):
        return ann
    if ann is Tensor:
        return GenericSpec(None, tensor_only=True)
    return None


def annotation_spec(ann: Any) -> TensorSpec | None:
    """The TensorSpec of an annotation (``Tensor[…]`` or a scalar type), or None."""
    if isinstance(ann, TensorSpec):
        return ann
    if ann is Tensor:
        return None
    if is_element_type(ann):
        return TensorSpec(ann, ())
    parts = tuple_parts(ann)
    if parts is None:
        return None
    # GT4Py's tuple of fields (a NamedTuple of fields such as muphys' ``Q``, or
    # ``tuple[Field[…], Field[…]]``): one tensor of tuples over their dimensions
    specs = [annotation_spec(p) for p in parts]
    if not specs or any(s is None for s in specs):
        return None
    dims = {tuple(_dim_key(d) for d in s.dims) for s in specs if s is not None}
    if len(dims) != 1:
        return None
    first = specs[0]
    assert first is not None
    return TensorSpec(tuple(s.dtype for s in specs if s is not None), first.dims)


def tuple_parts(ann: Any) -> tuple | None:
    """The element annotations of ``tuple[A, B, …]`` or of a NamedTuple class
    (its fields' annotations, strings evaluated in its module), or None."""
    import sys
    import typing
    if typing.get_origin(ann) is tuple:
        args = typing.get_args(ann)
        return None if Ellipsis in args else args
    if not (isinstance(ann, type) and issubclass(ann, tuple) and hasattr(ann, "_fields")):
        return None
    anns = getattr(ann, "__annotations__", {}) or {}
    scope = dict(getattr(sys.modules.get(ann.__module__), "__dict__", {}))
    out = []
    for f in ann._fields:
        a = anns.get(f)
        if isinstance(a, typing.ForwardRef):       # NamedTuple keeps string ones as these
            a = a.__forward_arg__
        try:
            out.append(eval(a, scope) if isinstance(a, str) else a)
        except Exception:  # noqa: BLE001 - an annotation naming something unknown
            return None
    return tuple(out)


def spreadable(ann: Any) -> bool:
    """``ann`` is a tuple annotation that is no tuple tensor (its elements differ
    in dimensions, or fields sit beside scalars) whose elements are fields,
    scalars or such tuples in turn: its elements are passed one by one."""
    parts = tuple_parts(ann)
    return bool(parts) and annotation_spec(ann) is None and all(
        annotation_spec(p) is not None or spreadable(p) for p in parts or ())


def spread_leaves(prefix: str, ann: Any, fresh: Callable[[str], str]
                  ) -> tuple[tuple, list[tuple[str, Any]]]:
    """The elements of a :func:`spreadable` annotation ``ann`` as parameters of
    their own: their names as nested as ``ann`` is (``prefix_field``, made
    unique by ``fresh``) and each name with its annotation."""
    parts = tuple_parts(ann) or ()
    fields = ann._fields if hasattr(ann, "_fields") else range(len(parts))
    tree: list[Any] = []
    leaves: list[tuple[str, Any]] = []
    for f, part in zip(fields, parts):
        if annotation_spec(part) is not None:
            name = fresh(f"{prefix}_{f}")
            tree.append(name)
            leaves.append((name, part))
        else:
            sub, more = spread_leaves(f"{prefix}_{f}", part, fresh)
            tree.append(sub)
            leaves += more
    return tuple(tree), leaves


def spread_values(tree: tuple, value: Any) -> dict[str, Any] | None:
    """The elements of the argument ``value`` by the names of ``tree`` (see
    :func:`spread_leaves`), or None when it is not a tuple nested as ``tree``."""
    if not isinstance(value, tuple) or len(value) != len(tree):
        return None
    out: dict[str, Any] = {}
    for t, v in zip(tree, value):
        if isinstance(t, tuple):
            sub = spread_values(t, v)
            if sub is None:
                return None
            out.update(sub)
        else:
            out[t] = v
    return out


def spread_rebuilt(ann: Any, tree: tuple, leaf: Callable[[str], Any]) -> Any:
    """The value of a :func:`spreadable` parameter from its elements' values
    (``leaf(name)``), of the annotation's NamedTuple classes."""
    parts = tuple_parts(ann) or ()
    items = [spread_rebuilt(p, t, leaf) if isinstance(t, tuple) else leaf(t)
             for p, t in zip(parts, tree)]
    return ann(*items) if hasattr(ann, "_fields") else tuple(items)


def _dim_key(d: Any) -> Any:
    return _dim_name(d.dim) if isinstance(d, DimSpec) else \
        d.name if isinstance(d, Dimension) else repr(d)


# --------------------------------------------------------------------------- call-time intervals


@dataclass(frozen=True)
class Domain:
    """Named dimensions, each with its coordinate range ``[start, stop)``."""

    dims: tuple[Dimension | NeighborDimension, ...]
    ranges: tuple[tuple[int, int], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(stop - start for start, stop in self.ranges)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def __repr__(self) -> str:
        parts = ", ".join(f"{_dim_name(d)}: [{a}:{b})" for d, (a, b) in zip(self.dims, self.ranges))
        return f"Domain({parts})"


@dataclass(frozen=True, eq=False)
class TensorArg:
    """An array (or tuple of arrays) with explicit intervals for some dimensions
    and, from :func:`with_dims`, the dimensions of its axes in order."""

    value: Any
    intervals: dict[str, tuple[int, int | None]]
    dims: tuple[Dimension | NeighborDimension, ...] | None = None

    def __repr__(self) -> str:
        parts = []
        if self.dims is not None:
            parts.append("dims=(" + ", ".join(_dim_name(d) for d in self.dims) + ")")
        if self.intervals:
            parts.append("intervals=" + ", ".join(
                f"{k}=({a}, {b})" for k, (a, b) in self.intervals.items()))
        shape = getattr(self.value, "shape", None)
        return f"TensorArg(shape={shape}, {', '.join(parts)})"

    # GT4Py's field interface, for code that builds its arguments with
    # ``as_field``/``zeros`` and reads results back (see :mod:`.fields`).

    def asnumpy(self) -> Any:
        """The array itself (not a copy): what a program wrote into it shows."""
        return self.value

    @property
    def ndarray(self) -> Any:
        return self.value

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.shape(self.value))

    @property
    def dtype(self) -> Any:
        return getattr(self.value, "dtype", None)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def domain(self) -> Any:
        """The dimensions with their coordinate ranges (needs :func:`with_dims`)."""
        if self.dims is None:
            raise DefinitionError("this argument has no domain: name its axes with with_dims")
        ranges = []
        for d, n in zip(self.dims, self.shape):
            start = self.intervals.get(_dim_name(d), (0, None))[0]
            ranges.append((start, start + n))
        return Domain(self.dims, tuple(ranges))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """NumPy's protocol: the array itself, or a copy where ``copy`` asks for
        one (``np.array(f)``) or ``dtype`` needs one."""
        if copy:
            return np.array(self.value, dtype=dtype, copy=True)
        if copy is False and dtype is not None and np.dtype(dtype) != self.value.dtype:
            raise ValueError("a field of another dtype cannot be had without a copy")
        return np.asarray(self.value, dtype=dtype)


def with_interval(value: Any, **intervals: tuple[int, int]) -> TensorArg:
    """Pass ``value`` with explicit coordinate intervals: ``with_interval(a, I=(-1, 11))``
    means element 0 of ``a`` along ``I`` is coordinate ``-1`` and the last is 10.
    The stop may be omitted (``I=-1`` or ``I=(-1, None)``): it follows from the shape."""
    norm: dict[str, tuple[int, int | None]] = {}
    for name, iv in intervals.items():
        if isinstance(iv, Dimension):
            raise DefinitionError("with_interval(a, I=(start, stop)): give the interval as a tuple")
        if isinstance(iv, int):
            iv = (iv, None)
        if not (isinstance(iv, tuple) and len(iv) == 2 and isinstance(iv[0], int)
                and (iv[1] is None or isinstance(iv[1], int))):
            raise DefinitionError(f"with_interval: {name}={iv!r} must be (start, stop) integers")
        norm[name] = (iv[0], iv[1])
    if isinstance(value, TensorArg):
        merged = dict(value.intervals)
        merged.update(norm)
        return TensorArg(value.value, merged, value.dims)
    return TensorArg(value, norm)


def with_dims(value: Any, *dims: Any) -> TensorArg:
    """Name the axes of an array argument, in order: ``with_dims(a, I, J)``.

    Each item is a :class:`Dimension` (or its name as a string), a
    :class:`NeighborDimension` (for neighbour tables and sparse fields), or a
    dimension with an interval whose start is an integer (``I[-1:]``,
    ``I.halo(1)``: element 0 is coordinate ``-1``; the stop follows from the
    shape).  Rank-generic parameters take their dimensions from it; for an
    annotated parameter the names must be those of the annotation, in order.
    """
    out: list[Dimension | NeighborDimension] = []
    intervals: dict[str, tuple[int, int | None]] = {}
    for d in dims:
        if isinstance(d, str):
            d = Dimension(d)
        if isinstance(d, DimSpec):
            known = d.written_ints()        # I[-1:], I.halo(1): no SymPy needed
            if known is None:
                start, stop = d.start, d.stop
                if not isinstance(start, sympy.Integer):
                    raise DefinitionError(f"with_dims: the interval {d!r} needs an integer "
                                          "start (the coordinate of element 0)")
                known = (int(start), int(stop) if isinstance(stop, sympy.Integer) else None)
            intervals[d.dim.name] = known
            d = d.dim
        if not isinstance(d, (Dimension, NeighborDimension)):
            raise DefinitionError(f"with_dims(a, I, J, …): {d!r} is not a dimension "
                                  "(make dimensions with dims('I J K'))")
        if any(_dim_name(e) == _dim_name(d) for e in out):
            raise DefinitionError(f"with_dims: dimension {_dim_name(d)} appears twice")
        out.append(d)
    if isinstance(value, TensorArg):
        merged = dict(value.intervals)
        merged.update(intervals)
        return TensorArg(value.value, merged, tuple(out))
    return TensorArg(value, intervals, tuple(out))


def evaluated_annotation(fn: Any, ann: Any) -> Any:
    """``ann``, an annotation of ``fn``, as a value: a string (under ``from
    __future__ import annotations``) evaluated in :func:`annotation_scope`;
    raises what evaluating it raises."""
    return eval(ann, annotation_scope(fn)) if isinstance(ann, str) else ann


def annotation_scope(fn: Any) -> dict[str, Any]:
    """The names a string annotation of ``fn`` is evaluated with (under
    ``from __future__ import annotations``): its module's globals, and the
    enclosing function's variables its code uses (``dims`` of ``dims.EdgeDim``
    in a field operator defined inside a function)."""
    scope = dict(getattr(fn, "__globals__", {}) or {})
    code = getattr(fn, "__code__", None)
    for name, cell in zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None) or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:          # a variable not yet assigned
            pass
    return scope


def tuple_element(ann: Any, path: Sequence[int]) -> Any | None:
    """The element at ``path`` of a (nested) ``tuple[…]`` annotation; None where
    it has no such element."""
    for k in path:
        elements = typing.get_args(ann) if typing.get_origin(ann) is tuple else ()
        if k >= len(elements):
            return None
        ann = elements[k]
    return ann
