"""Dimensions, neighbour dimensions, size symbols and index conditions.

    I, J, K = dims("I J K")
    Vertex, Edge = dims("Vertex Edge")
    E2VDim = neighbor_dim(Vertex, 2)       # the neighbour dimension of an E2V table

* ``I + 1`` / ``I - 1`` are Cartesian offsets (``x(I + 1)`` reads ``x[i + 1]``).
* ``I[-1:N + 1]`` gives a dimension an explicit interval in an annotation;
  ``I.halo(1)`` is ``I[-1:I.size + 1]`` and ``I.halo(1, 2)`` is
  ``I[-1:I.size + 2]``; a bare ``I`` is ``I[0:I.size]``.
* ``I.size`` is the size symbol shared by every tensor over ``I``
  (``N_I``); ``sizes("N M")`` makes free size symbols.
* ``K < 1``, ``I == 0``, ``I.interval(0, 1)``, combined with ``&``, ``|`` and
  ``~``, are index conditions for :func:`~tensorir_dace.frontend.concat_where`.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from .. import intervals as iv
from .. import ir
from ..errors import ArgumentError, FrontendError, SourceLoc
from ..lazy import lazy_module
from .size_exprs import SizeExpr, as_sympy, bound_text, is_sympy
from .source import user_frame

#: A size symbol, perhaps plus or minus an integer (as ``I.halo(1)`` writes it).
_SYMBOL_PLUS_INT = re.compile(r"[A-Za-z_]\w*( [+-] (\d+|\(-\d+\)))?")

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

Bound: TypeAlias = "sympy.Expr"


def _user_loc() -> SourceLoc | None:
    """Where the user wrote the definition being made."""
    frame = user_frame()
    return SourceLoc(frame[1], 1, frame[0]) if frame is not None else None


class DefinitionError(FrontendError, TypeError):
    """A mistake in a dimension, an annotation or a decorator's arguments, reported at
    the line that wrote it (also a TypeError, as Python reports bad arguments)."""

    at_node = False   # located at the translated expression that misused a value

    def __init__(self, message: str, loc: SourceLoc | None = None):
        super().__init__(message, loc if loc is not None else _user_loc())


def size(name: str) -> Any:
    """A size symbol (``N = size("N")``): the non-negative integer SymPy symbol
    ``N``, held as a :class:`~.size_exprs.SizeExpr` until SymPy is needed."""
    if isinstance(name, str) and name.isidentifier():
        return SizeExpr(name)
    return ir.size_symbol(name)


def sizes(names: str) -> tuple[Any, ...]:
    """Several size symbols: ``N, M = sizes("N M")``."""
    return tuple(size(n) for n in names.replace(",", " ").split())


def _bound(value: Any, what: str = "an interval bound") -> Any:
    """An interval bound as written (an int, a size expression or SymPy), checked
    without making it SymPy (:func:`as_bound` does)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, SizeExpr) or is_sympy(value):
        return value
    raise DefinitionError(f"{what} must be an integer or a size expression, got {value!r}")


def as_bound(value: Any, what: str = "an interval bound") -> sympy.Expr:
    value = as_sympy(value)
    if isinstance(value, bool):
        raise DefinitionError(f"{what} must be an integer or a size expression, got {value!r}")
    if isinstance(value, sympy.Expr):
        if not all(s.is_integer for s in value.free_symbols):
            value = value.subs({s: ir.size_symbol(s.name) for s in value.free_symbols})
        return value
    if isinstance(value, np.integer):
        return sympy.Integer(int(value))
    if isinstance(value, int):
        return sympy.Integer(value)
    raise DefinitionError(f"{what} must be an integer or a size expression, got {value!r}")


STAGGERED_PREFIX = "_Staggered"
HALF_SUFFIX = "Half"


def staggered_base_name(name: str) -> str | None:
    """The base of a staggered dimension's name (``KHalf`` and GT4Py's
    ``_StaggeredK`` are ``K``'s half levels), or ``None`` for other names."""
    if name.startswith(STAGGERED_PREFIX) and name[len(STAGGERED_PREFIX):].isidentifier():
        return name[len(STAGGERED_PREFIX):]
    if name.endswith(HALF_SUFFIX) and len(name) > len(HALF_SUFFIX):
        return name[:-len(HALF_SUFFIX)]
    return None


class DimensionKind(enum.Enum):
    """GT4Py's kinds of dimensions.  Horizontal and vertical dimensions are
    the same thing here (``Dimension("K", kind=DimensionKind.VERTICAL)`` is
    ``K``); a local (neighbour) dimension is a :class:`LocalDimension`, whose
    offsets and count come from the offset provider (:func:`neighbor_dim`
    declares one up front)."""

    HORIZONTAL = "horizontal"
    VERTICAL = "vertical"
    LOCAL = "local"


def _kind_name(kind: Any) -> str:
    return str(getattr(kind, "value", kind)).lower()


def _is_offset_number(x: Any) -> bool:
    """Whether ``x`` can shift a dimension: a whole number or a half (not a bool)."""
    return not isinstance(x, bool) and isinstance(x, (int, np.integer, float, np.floating))


class Dimension:
    """A named dimension of tensors (``I``, ``Vertex``); GT4Py's ``kind=``
    (:class:`DimensionKind`) is accepted, and ``kind=DimensionKind.LOCAL``
    makes a :class:`LocalDimension`."""

    def __new__(cls, name: str, kind: DimensionKind = DimensionKind.HORIZONTAL) -> Any:
        if cls is Dimension and _kind_name(kind) == "local":
            return LocalDimension(name)
        return super().__new__(cls)

    def __init__(self, name: str, kind: DimensionKind = DimensionKind.HORIZONTAL):
        if not isinstance(name, str) or not name.isidentifier():
            raise DefinitionError(f"a dimension name must be an identifier, got {name!r}")
        kind_name = _kind_name(kind)
        if kind_name not in ("horizontal", "vertical"):
            raise DefinitionError(f"Dimension({name!r}, kind=...): the kind must be a "
                                  f"DimensionKind, got {kind!r}")
        if name.startswith(ir.NB_PREFIX):
            raise DefinitionError(f"'{name}': names starting with {ir.NB_PREFIX} are reserved for "
                             "neighbour dimensions; use neighbor_dim()")
        base = staggered_base_name(name)
        #: The name the Tensor IR uses: a staggered dimension's is its base's.
        self.name = name if base is None else base
        self._label = name
        self.staggered = base is not None

    #: Whether this is the staggered counterpart of :attr:`name` (half levels);
    #: subclasses (local and neighbour dimensions) never are.
    staggered = False
    _label: str | None = None

    @property
    def label(self) -> str:
        """The name as declared (``KHalf`` for the staggered ``K``)."""
        return self._label or self.name

    # -- identity: two Dimension objects with one name are the same dimension
    def __hash__(self) -> int:
        return hash(("Dimension", self.name))

    def same(self, other: Any) -> bool:
        return isinstance(other, Dimension) and other.name == self.name

    def __repr__(self) -> str:
        return f"Dimension({self.label!r})"

    def __str__(self) -> str:
        return self.name

    def __iter__(self) -> Any:
        raise DefinitionError(f"dimension {self.name} is not a sequence: dims(\"{self.name}\") "
                              f"with one name is the dimension itself ({self.name} = "
                              f"dims(\"{self.name}\"))")

    # -- sizes and intervals
    @property
    def size(self) -> SizeExpr:
        """The size symbol of this dimension: tensors over it run over ``[0:size]``
        (held as text, see :mod:`.size_exprs`: no SymPy where annotations use it)."""
        return self.size_expr()

    @property
    def size_symbol(self) -> sympy.Symbol:
        """:attr:`size` as the SymPy symbol ``N_<name>``."""
        return ir.size_symbol(f"N_{self.name}")

    def __getitem__(self, item: Any) -> DimSpec:
        if isinstance(item, int) and not isinstance(item, bool):
            raise DefinitionError(f"{self.name}[{item}]: dims(\"{self.name}\") with one name "
                                  f"is the dimension itself; drop the [{item}]")
        if not isinstance(item, slice) or item.step is not None:
            raise DefinitionError(f"write an interval as {self.name}[start:stop]")
        start = 0 if item.start is None else item.start
        stop = self.size_expr() if item.stop is None else item.stop
        return DimSpec(self, _bound(start), _bound(stop))

    def halo(self, lower: int, upper: int | None = None) -> DimSpec:
        """``[−lower : size + upper)``: the dimension extended by a halo."""
        upper = lower if upper is None else upper
        return DimSpec(self, -_bound(lower), self.size_expr() + _bound(upper))

    def size_expr(self) -> SizeExpr:
        """The size symbol held as text (see :mod:`.size_exprs`)."""
        return SizeExpr(f"N_{self.name}")

    def spec(self) -> DimSpec:
        return DimSpec(self, 0, self.size_expr())

    # -- offsets: I + 1, I - 1, and half offsets between staggered dimensions
    def __add__(self, other: Any) -> Offset:
        if not _is_offset_number(other):
            return NotImplemented
        if isinstance(other, (int, np.integer)):
            return Offset(self, int(other))
        return Offset(self, self.half_offset(float(other)))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Offset:
        return self.__add__(-other) if _is_offset_number(other) else NotImplemented

    def half_offset(self, offset: float) -> int:
        """The whole-level shift that ``x(self + offset)`` reads at.

        A staggered dimension shares its base's axis: half level ``h`` sits at
        ``h - 1/2`` (half level 0 is the top face of full level 0, as in GT4Py).
        So ``x(KHalf + 0.5)`` reads full level ``h`` and ``x(KHalf - 0.5)`` level
        ``h - 1``; ``y(K + 0.5)`` reads half level ``k + 1`` and ``y(K - 0.5)``
        half level ``k``.  Whole offsets shift as integers do."""
        whole, fraction = divmod(offset, 1.0)
        if fraction == 0.0:
            return int(whole)
        if fraction == 0.5:
            return int(whole) + (0 if self.staggered else 1)
        raise DefinitionError(
            f"{self.label} + {offset}: an offset along a dimension is "
            "a whole number, or a half (± 0.5, ± 1.5, …) between a dimension and its "
            "staggered counterpart (K and KHalf = flip_staggered(K))")

    # -- index conditions: K < 1, I == 0, ...
    def _cond(self, op: str, other: Any) -> DimMask:
        try:
            c = as_bound(other, "an index bound")
        except TypeError:
            return NotImplemented
        oo = sympy.oo
        segs = {"lt": [(-oo, c)], "le": [(-oo, c + 1)], "gt": [(c + 1, oo)],
                "ge": [(c, oo)], "eq": [(c, c + 1)], "ne": [(-oo, c), (c + 1, oo)]}[op]
        return DimMask(self, tuple(segs))

    def __lt__(self, other):
        return self._cond("lt", other)

    def __le__(self, other):
        return self._cond("le", other)

    def __gt__(self, other):
        return self._cond("gt", other)

    def __ge__(self, other):
        return self._cond("ge", other)

    def __eq__(self, other):
        if isinstance(other, Dimension):
            return self.same(other)
        if isinstance(other, (int, sympy.Expr)) and not isinstance(other, bool):
            return self._cond("eq", other)
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Dimension):
            return not self.same(other)
        if isinstance(other, (int, sympy.Expr)) and not isinstance(other, bool):
            return self._cond("ne", other)
        return NotImplemented

    def interval(self, start: Any, stop: Any) -> DimMask:
        """The index condition ``start <= D < stop``."""
        return DimMask(self, ((as_bound(start), as_bound(stop)),))


class NeighborDimension:
    """The neighbour dimension of a table whose entries index ``source``.

    ``E2VDim = neighbor_dim(Vertex, 2)``: ``E2V: Tensor[int, Edge, E2VDim]`` is
    the table ``tensor<int, Edge[0:N_Edge], _NB_Vertex[0:2]>``; a tensor of
    another element type over ``E2VDim`` (``Tensor[float, Vertex, V2EDim]``) is
    a sparse field with a ``_NB_<n>`` dimension.
    """

    #: The local dimension this one is a table's view of (see :class:`LocalDimension`).
    local: LocalDimension | None = None

    def __init__(self, source: Dimension, size: int, name: str | None = None):
        if not isinstance(source, Dimension):
            raise DefinitionError("neighbor_dim(source, size): source must be a Dimension")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DefinitionError("neighbor_dim(source, size): size must be a positive integer "
                            "(the maximum number of neighbours)")
        self.source = source
        self.size = size
        self.name = name or f"{ir.NB_PREFIX}{source.name}"

    @property
    def table_dim_name(self) -> str:
        return f"{ir.NB_PREFIX}{self.source.name}"

    def __repr__(self) -> str:
        return f"neighbor_dim({self.source.name}, {self.size})"

    def matches(self, other: Any) -> bool:
        if isinstance(other, LocalDimension):
            return other.matches(self)
        return isinstance(other, NeighborDimension) and other.source.same(self.source) and \
            other.size == self.size

    def token(self) -> tuple:
        """The dimension as keys see it."""
        return ("nbdim", self.source.name, self.size, self.name)


    def __call__(self, index: int) -> NeighborSlot:
        """``C2E2CDim(0)``: a neighbour slot, selecting ``g[C2E2CDim(0)]``."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise DefinitionError(f"{self!r}(k): the slot must be an integer constant, got "
                                  f"{index!r}")
        return NeighborSlot(self, index)


@dataclass(frozen=True)
class NeighborSlot:
    """``C2E2CDim(k)``: slot ``k`` of a neighbour dimension (checked where used)."""

    dim: NeighborDimension
    index: int

    def __repr__(self) -> str:
        return f"{self.dim!r}({self.index})"


class LocalDimension(NeighborDimension):
    """GT4Py's ``Dimension("C2E", kind=DimensionKind.LOCAL)``: a neighbour
    dimension declared without its source or count.

    The offsets into it (``FieldOffset("C2E", source=Edge, target=(Cell,
    C2EDim))``) say where each table points; the count is the number of
    columns of the first table given for such an offset (``offset_provider=``
    or the table argument), a strided offset provider's ``max_neighbors``, or
    the length of an argument annotated with the dimension, and stays that for
    the process (one mesh, as in a model run).  Until then, what needs the
    count (translating a program that uses the dimension without a table)
    reports how to give it.
    """

    #: How many were made: calls look for them only when some exist.
    made = 0

    def __init__(self, name: str):
        if not isinstance(name, str) or not name.isidentifier():
            raise DefinitionError(f"a dimension name must be an identifier, got {name!r}")
        self.name = name
        self._size: int | None = None
        LocalDimension.made += 1

    @property
    def source(self) -> Any:    # type: ignore[override]  # each table says where it points
        return None

    @property
    def size(self) -> int:      # type: ignore[override]
        if self._size is None:
            raise DefinitionError(
                f"the neighbour count of the local dimension {self.name} is not known yet: "
                f"it is the number of columns of a table for an offset into it, given with "
                f"offset_provider={{...}} (or as the table argument) when the program is "
                f"called or compiled, or the length of an argument over {self.name}; "
                f"neighbor_dim(source, count) declares it up front")
        return self._size

    @property
    def bound(self) -> bool:
        return self._size is not None

    def bind(self, count: int, what: str) -> None:
        """Fix the neighbour count (``what``: where it was read, for the message
        when a later table disagrees)."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ArgumentError(f"{what} gives the local dimension {self.name} "
                                f"{count!r} neighbours; it needs a positive count")
        if self._size is None:
            self._size = int(count)
            self._bound_by = what
        elif self._size != count:
            raise ArgumentError(f"{what} gives the local dimension {self.name} {count} "
                                f"neighbours, but {self._bound_by} gave it {self._size}; "
                                "one local dimension has one neighbour count")

    @property
    def table_dim_name(self) -> str:
        raise DefinitionError(f"the local dimension {self.name} is the neighbour dimension "
                              "of a table only through a FieldOffset into it")

    def __repr__(self) -> str:
        return f"Dimension({self.name!r}, kind=LOCAL)"

    def token(self) -> tuple:
        """The dimension as keys see it: its name and, once known, its count."""
        return ("local", self.name, self._size)

    def matches(self, other: Any) -> bool:
        return other is self or getattr(other, "local", None) is self


def neighbor_dim(source: Dimension, size: int) -> NeighborDimension:
    """A neighbour dimension with ``size`` entries pointing into ``source``."""
    return NeighborDimension(source, size)


def flip_staggered(dim: Dimension) -> Dimension:
    """GT4Py's staggered counterpart: ``flip_staggered(K)`` is ``K``'s half
    levels (``KHalf``), ``flip_staggered(KHalf)`` is ``K``."""
    if not isinstance(dim, Dimension) or isinstance(dim, NeighborDimension):
        raise DefinitionError(f"flip_staggered takes a dimension such as K, got {dim!r}")
    return Dimension(dim.name) if dim.staggered else Dimension(dim.name + HALF_SUFFIX)


def is_staggered(dim: Dimension) -> bool:
    """Whether ``dim`` is a staggered dimension (``KHalf``, ``flip_staggered(K)``)."""
    return isinstance(dim, Dimension) and dim.staggered


def as_non_staggered(dim: Dimension) -> Dimension:
    """The base of a staggered dimension; any other dimension itself."""
    return flip_staggered(dim) if is_staggered(dim) else dim


def dims(names: str | Iterable[str]) -> Any:
    """``I, J, K = dims("I J K")`` (also ``dims(["I", "J"])`` or ``"I, J"``);
    with one name the dimension itself, as ``sympy.symbols`` does: ``K = dims("K")``."""
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    out = tuple(Dimension(n) for n in names)
    return out[0] if len(out) == 1 else out


class DimSpec:
    """A dimension with an explicit interval, for annotations.  The bounds are
    kept as written (ints, size expressions) and made SymPy when translation
    first reads :attr:`start` or :attr:`stop`; :meth:`key` describes them
    without SymPy."""

    __slots__ = ("dim", "_bounds", "_sympy")

    def __init__(self, dim: Dimension, start: Any, stop: Any):
        self.dim = dim
        self._bounds = (start, stop)
        self._sympy: tuple[Bound, Bound] | None = None

    def _made(self) -> tuple[Bound, Bound]:
        if self._sympy is None:
            self._sympy = (as_bound(self._bounds[0]), as_bound(self._bounds[1]))
        return self._sympy

    @property
    def start(self) -> Bound:
        return self._made()[0]

    @property
    def stop(self) -> Bound:
        return self._made()[1]

    def written_ints(self) -> tuple[int, int | None] | None:
        """The start as an int and the stop as an int or ``None`` (symbolic),
        read from the bounds as written, without SymPy, where that decides
        them (``I[-1:]``, ``I[-1:5]``, ``I.halo(1)``: a size symbol plus an
        integer is never an integer); ``None`` where SymPy must."""
        start, stop = self._bounds
        if type(start) is not int:
            return None
        if type(stop) is int:
            return start, stop
        if isinstance(stop, SizeExpr) and _SYMBOL_PLUS_INT.fullmatch(stop.text):
            return start, None
        return None

    def key(self) -> str:
        """The interval as written, for cache keys."""
        return f"{self.dim.name}[{bound_text(self._bounds[0])}:{bound_text(self._bounds[1])}]"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DimSpec) and self.dim.same(other.dim) \
            and self._made() == other._made()

    def __hash__(self) -> int:
        return hash((self.dim.name, self._made()))

    def __repr__(self) -> str:
        return f"{self.dim.name}[{self.start}:{self.stop}]"


@dataclass(frozen=True)
class Offset:
    """A Cartesian offset ``I + k``."""

    dim: Dimension
    offset: int

    def __add__(self, other: Any) -> Offset:
        if isinstance(other, int) and not isinstance(other, bool):
            return Offset(self.dim, self.offset + other)
        return NotImplemented

    def __sub__(self, other: Any) -> Offset:
        if isinstance(other, int) and not isinstance(other, bool):
            return Offset(self.dim, self.offset - other)
        return NotImplemented

    def __repr__(self) -> str:
        sign = "+" if self.offset >= 0 else "-"
        return f"{self.dim.name} {sign} {abs(self.offset)}"


# --------------------------------------------------------------------------- index conditions

Segment: TypeAlias = "tuple[sympy.Expr, sympy.Expr]"  # half-open [lo, hi); lo may be -oo, hi oo


class Mask:
    """An index condition for ``concat_where``: a set of points of the index space."""

    def __and__(self, other: Any) -> Mask:
        if not isinstance(other, Mask):
            return NotImplemented
        return _combine("and", self, other)

    def __or__(self, other: Any) -> Mask:
        if not isinstance(other, Mask):
            return NotImplemented
        return _combine("or", self, other)

    def __invert__(self) -> Mask:
        raise NotImplementedError

    def __bool__(self) -> bool:
        raise DefinitionError("an index condition such as 'K < 1' has no truth value in Python; "
                        "use it in concat_where(condition, a, b)")


@dataclass(frozen=True, eq=False)
class DimMask(Mask):
    """The points whose ``dim`` coordinate lies in a union of intervals."""

    dim: Dimension
    segments: tuple[Segment, ...]

    def __invert__(self) -> DimMask:
        return DimMask(self.dim, _complement(self.segments))

    def __repr__(self) -> str:
        parts = [f"{self.dim.name}[{lo}:{hi}]" for lo, hi in self.segments]
        return " | ".join(parts) or f"{self.dim.name}[]"


@dataclass(frozen=True, eq=False)
class CompoundMask(Mask):
    """``a & b`` / ``a | b`` of conditions on different dimensions."""

    op: str
    left: Mask
    right: Mask

    def __invert__(self) -> Mask:
        # De Morgan
        return CompoundMask("or" if self.op == "and" else "and", ~self.left, ~self.right)

    def __repr__(self) -> str:
        return f"({self.left!r} {'&' if self.op == 'and' else '|'} {self.right!r})"


def has_runtime_bounds(m: Mask) -> bool:
    """A condition on one dimension whose bounds use runtime values (int parameters)."""
    return isinstance(m, DimMask) and any(ir.has_runtime(b) for seg in m.segments for b in seg)


def _combine(op: str, a: Mask, b: Mask) -> Mask:
    # Runtime bounds cannot be ordered now: concat_where nests the two conditions.
    if isinstance(a, DimMask) and isinstance(b, DimMask) and a.dim.same(b.dim) and \
            not has_runtime_bounds(a) and not has_runtime_bounds(b):
        if op == "and":
            return DimMask(a.dim, _intersect(a.segments, b.segments))
        return DimMask(a.dim, _union(a.segments, b.segments))
    return CompoundMask(op, a, b)


LARGE = 2 ** 20


def _le(a: sympy.Expr, b: sympy.Expr) -> bool:
    """a <= b, for index conditions: where the order depends on the sizes, sizes are
    taken to be larger than any offset written next to them (``K == K.size - 1`` lies
    above ``K == 0``)."""
    if a == -sympy.oo or b == sympy.oo:
        return True
    if a == sympy.oo or b == -sympy.oo:
        return a == b
    try:
        return iv.le(a, b)
    except iv.Undecidable:
        if ir.has_runtime(a) or ir.has_runtime(b):
            raise
        diff = sympy.expand(b - a)
        value = diff.subs({s: LARGE for s in diff.free_symbols})
        if value.is_number:
            return bool(value >= 0)
        raise


def _is_empty(lo: sympy.Expr, hi: sympy.Expr) -> bool:
    """[lo, hi) is empty (undecidable counts as not empty)."""
    try:
        return _le(hi, lo)
    except iv.Undecidable:
        return False


def _max(a, b):
    return b if _le(a, b) else a


def _min(a, b):
    return a if _le(a, b) else b


def _compare_starts(x: Segment, y: Segment) -> int:
    return 0 if x[0] == y[0] else (-1 if _le(x[0], y[0]) else 1)


def _normalize(segs: Iterable[Segment]) -> tuple[Segment, ...]:
    """Sorted, non-empty, merged segments."""
    items = [(lo, hi) for lo, hi in segs if not _is_empty(lo, hi)]
    items.sort(key=functools.cmp_to_key(_compare_starts))
    out: list[Segment] = []
    for lo, hi in items:
        if out and _le(lo, out[-1][1]):
            out[-1] = (out[-1][0], _max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _intersect(a: tuple[Segment, ...], b: tuple[Segment, ...]) -> tuple[Segment, ...]:
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = _max(lo1, lo2), _min(hi1, hi2)
            if not _is_empty(lo, hi):
                out.append((lo, hi))
    return _normalize(out)


def _union(a, b):
    return _normalize(tuple(a) + tuple(b))


def _complement(segs: tuple[Segment, ...]) -> tuple[Segment, ...]:
    if any(ir.has_runtime(b) for seg in segs for b in seg):
        # ordered segments with runtime bounds (as a condition makes them): the gaps
        out, prev = [], -sympy.oo
        for lo, hi in segs:
            if lo != -sympy.oo:
                out.append((prev, lo))
            prev = hi
        if prev != sympy.oo:
            out.append((prev, sympy.oo))
        return tuple(out)
    segs = _normalize(segs)
    out = []
    prev = -sympy.oo
    for lo, hi in segs:
        if not _le(lo, prev):
            out.append((prev, lo))
        prev = hi
    if prev != sympy.oo:
        out.append((prev, sympy.oo))
    return tuple(out)
