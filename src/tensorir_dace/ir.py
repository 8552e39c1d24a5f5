"""Tensor IR nodes: immutable, hashable values with no behaviour beyond structure.

Types (:class:`ScalarType`, :class:`TupleType`, :class:`Dim`, :class:`TensorType`,
:class:`FunctionType`), expressions (:class:`Sym`, :class:`Literal`,
:class:`Lambda`, :class:`Call`, :class:`DimInterval`) and program-level nodes
(:class:`Param`, :class:`Assign`, :class:`IfStmt`, :class:`ForStmt`,
:class:`Program`).

Builtins are ordinary calls whose head is a :class:`Sym` naming the builtin;
curried builtins (``cartesian_shift(I, 1)(x)``, ``reduce(f, init)(x)``) are a
call of a call.  Source locations (``loc``) and inferred types (``type``) are
kept on nodes but excluded from equality and hashing, so a parsed program,
its printed and re-parsed form and its type-checked form compare equal
whenever they mean the same program.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .errors import SourceLoc
from .lazy import lazy_module

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

# --------------------------------------------------------------------------- types

SCALAR_NAMES = ("float64", "float32", "int64", "int32", "bool")
SCALAR_ALIASES = {"float": "float64", "int": "int64", "double": "float64"}


@dataclass(frozen=True)
class ScalarType:
    """A scalar element type; ``name`` is canonical (``float`` is ``float64``)."""

    name: str

    def __post_init__(self) -> None:
        canonical = SCALAR_ALIASES.get(self.name, self.name)
        if canonical not in SCALAR_NAMES:
            raise ValueError(f"unknown scalar type {self.name!r}")
        object.__setattr__(self, "name", canonical)

    @property
    def is_float(self) -> bool:
        return self.name.startswith("float")

    @property
    def is_int(self) -> bool:
        return self.name.startswith("int")

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    def __str__(self) -> str:
        return self.name

    def __call__(self, value: object = 0) -> object:
        """A NumPy scalar of this type: GT4Py's ``float32("0.5")`` outside translated
        code, e.g. in a scan operator's ``init=`` or a module constant (inside
        translated code the front end makes it a typed literal)."""
        import numpy as np
        if self.is_bool and isinstance(value, str):
            if value not in ("True", "False"):
                raise ValueError(f"bool({value!r}): give 'True' or 'False'")
            value = value == "True"
        return np.dtype(self.name).type(value)


@dataclass(frozen=True)
class TupleType:
    """A (possibly nested) tuple element type."""

    elements: tuple[ElementType, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


ElementType = ScalarType | TupleType

FLOAT64 = ScalarType("float64")
FLOAT32 = ScalarType("float32")
INT64 = ScalarType("int64")
INT32 = ScalarType("int32")
BOOL = ScalarType("bool")


def size_symbol(name: str) -> sympy.Symbol:
    """The SymPy symbol of a size parameter: a non-negative integer."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def runtime_symbol(name: str) -> sympy.Symbol:
    """The SymPy symbol of a runtime bound (a scalar integer parameter or a loop
    variable): any integer, so no comparison with it is decided statically."""
    return sympy.Symbol(name, integer=True)


def is_runtime_symbol(s: sympy.Basic) -> bool:
    """A symbol made by :func:`runtime_symbol` (size symbols are non-negative)."""
    return isinstance(s, sympy.Symbol) and s.is_nonnegative is not True


def has_runtime(expr: sympy.Expr) -> bool:
    """Whether a bound depends on a runtime value."""
    return any(is_runtime_symbol(s) for s in expr.free_symbols)


@functools.lru_cache(maxsize=4096)
def text_bound(expr: sympy.Expr) -> sympy.Expr:
    """A bound as the text syntax reads it back: names are size symbols, except
    inside ``Max``/``Min`` (clamped runtime ranges), where no size assumption may
    simplify them.  The type checker tells runtime values apart by name.
    Remembered: rebuilding a ``Max``/``Min`` simplifies it again, about 3 ms
    each, and programs with runtime domains ask for the same bounds often."""
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return expr.func(*[a.xreplace({s: runtime_symbol(s.name) for s in a.free_symbols})
                           for a in expr.args])
    if isinstance(expr, sympy.Symbol):
        return size_symbol(expr.name)
    if expr.args:
        return expr.func(*[text_bound(a) for a in expr.args])
    return expr


def as_bound(value: int | str | sympy.Expr) -> sympy.Expr:
    """An interval bound as a SymPy integer expression over size symbols."""
    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, bool):
        raise TypeError("a bound must be an integer or a size expression")
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, str):
        names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", value))
        return sympy.sympify(value, locals={n: size_symbol(n) for n in names})
    raise TypeError(f"cannot use {value!r} as an interval bound")


NB_PREFIX = "_NB_"


@dataclass(frozen=True)
class Dim:
    """A named dimension with the half-open interval ``[start, stop)``.

    ``mask`` is only set on a neighbour dimension (``_NB_<n>``) made by a
    partial shift: it is the neighbour table, as an expression seen from
    this tensor's coordinates, whose negative entries mark absent neighbours.
    It is inferred, never written, and ignored by equality.  ``origin`` names
    the table that made the dimension where a value present at every element
    (``can_deref``'s) dropped the mask: front ends still tell neighbour
    dimensions apart by it.
    """

    name: str
    start: sympy.Expr
    stop: sympy.Expr
    mask: Expr | None = field(default=None, compare=False, repr=False)
    origin: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_bound(self.start))
        object.__setattr__(self, "stop", as_bound(self.stop))

    @property
    def is_neighbor(self) -> bool:
        """A dimension of the form ``_NB_<n>`` (a counter) or ``_NB_<Src>``."""
        return self.name.startswith(NB_PREFIX)

    @property
    def neighbor_counter(self) -> int | None:
        """``n`` for a ``_NB_<n>`` dimension, else None."""
        rest = self.name[len(NB_PREFIX):]
        return int(rest) if self.is_neighbor and rest.isdigit() else None

    @property
    def neighbor_source(self) -> str | None:
        """``Src`` for a neighbour-table dimension ``_NB_<Src>``, else None."""
        rest = self.name[len(NB_PREFIX):]
        return rest if self.is_neighbor and not rest.isdigit() else None

    @property
    def size(self) -> sympy.Expr:
        return sympy.simplify(self.stop - self.start)

    def with_interval(self, start, stop) -> Dim:
        return replace(self, start=as_bound(start), stop=as_bound(stop))

    def __str__(self) -> str:
        return f"{self.name}[{_bound_str(self.start)}:{_bound_str(self.stop)}]"


def _bound_str(b: sympy.Expr) -> str:
    return str(b).replace(" ", "")


@dataclass(frozen=True)
class TensorType:
    """``tensor<dtype, D1[a:b], …>``; no dimensions means a scalar.

    The order of ``dims`` is the memory order of an array holding the tensor.
    """

    dtype: ElementType
    dims: tuple[Dim, ...] = ()

    @property
    def is_scalar(self) -> bool:
        return not self.dims

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def dim(self, name: str) -> Dim | None:
        for d in self.dims:
            if d.name == name:
                return d
        return None

    @property
    def highest_neighbor(self) -> Dim | None:
        """The ``_NB_<n>`` dimension with the highest counter: the one that
        ``reduce`` and ``shift_apply`` act on."""
        counted = [d for d in self.dims if d.neighbor_counter is not None]
        return max(counted, key=lambda d: d.neighbor_counter or 0) if counted else None

    def __str__(self) -> str:
        parts = [str(self.dtype)] + [str(d) for d in self.dims]
        return "tensor<" + ", ".join(parts) + ">"


@dataclass(frozen=True)
class FunctionType:
    """``(A, …) → R``: the type of a lambda."""

    params: tuple[Type, ...]
    result: Type

    def __str__(self) -> str:
        return "(" + ", ".join(str(p) for p in self.params) + ") → " + str(self.result)


Type = TensorType | FunctionType

# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Node:
    loc: SourceLoc | None = field(default=None, compare=False, kw_only=True, repr=False)


@dataclass(frozen=True)
class Expr(Node):
    """An expression; ``type`` is filled in by the type checker.

    ``type`` is declared as the type of checked IR, which every stage after the
    checker reads; it is None only in IR that has not been checked yet (the
    parser's and the builders' output, the checker's input)."""

    type: TensorType = field(default=None, compare=False, kw_only=True,  # type: ignore[assignment]
                             repr=False)


@dataclass(frozen=True)
class Sym(Expr):
    """A reference to a parameter, temporary, lambda parameter, dimension,
    element type or builtin, resolved by the type checker."""

    name: str


@dataclass(frozen=True)
class Literal(Expr):
    """A literal. ``kind`` ('bool', 'int' or 'float') keeps ``True``, ``1``
    and ``1.0`` apart; its element type comes from the type checker."""

    value: bool | int | float
    kind: str = ""

    def __post_init__(self) -> None:
        if not self.kind:
            kind = ("bool" if isinstance(self.value, bool)
                    else "int" if isinstance(self.value, int) else "float")
            object.__setattr__(self, "kind", kind)


@dataclass(frozen=True)
class Param(Node):
    """A typed name: program parameter, temporary or lambda parameter."""

    name: str
    type: TensorType


@dataclass(frozen=True)
class Lambda(Expr):
    params: tuple[Param, ...]
    body: Expr
    type: FunctionType = field(default=None, compare=False, kw_only=True,  # type: ignore[assignment]
                               repr=False)


@dataclass(frozen=True)
class Call(Expr):
    """A call ``func(args…)``; ``func`` is a builtin :class:`Sym`, a lambda or
    (for curried builtins) another call."""

    func: Expr
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class DimInterval(Expr):
    """``Name[start:stop]`` as a static argument (of ``subset``)."""

    name: str
    start: sympy.Expr
    stop: sympy.Expr

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_bound(self.start))
        object.__setattr__(self, "stop", as_bound(self.stop))


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Stmt(Node):
    pass


@dataclass(frozen=True)
class Assign(Stmt):
    """``target ← value``; the target is a name or ``subset(name, …)``."""

    target: Expr
    value: Expr


@dataclass(frozen=True)
class IfStmt(Stmt):
    """Program-level ``if (cond) { … } else { … }`` on a scalar condition."""

    cond: Expr
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class ForStmt(Stmt):
    """Program-level ``for (var in start:stop) { … }`` over scalar integers."""

    var: str
    start: Expr
    stop: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class SizeConstraint:
    """``lower <= upper`` must hold for the sizes of a call: an order the type
    checker could not decide for all sizes but the program relies on (a
    ``subset`` such as ``I[1:N-1]`` of ``I[0:N]`` needs ``N >= 1``, and
    ``Cell[hs:he]`` with runtime ``hs``, ``he`` needs ``0 <= hs`` when non-empty)."""

    lower: sympy.Expr
    upper: sympy.Expr
    reason: str
    # Runtime bounds: the order is only needed where every ``lo < hi`` here holds
    # (an empty range reads and writes nothing) ...
    guard: tuple[tuple[sympy.Expr, sympy.Expr], ...] = ()
    # ... for every iteration of these enclosing loops (var, start, stop) ...
    loops: tuple[tuple[str, sympy.Expr, sympy.Expr], ...] = ()
    # ... and a failure names ``bound`` and its allowed range ``[allowed[0], allowed[1]]``.
    bound: sympy.Expr | None = None
    allowed: tuple[sympy.Expr, sympy.Expr] | None = None


@dataclass(frozen=True)
class Program(Node):
    name: str
    params: tuple[Param, ...]
    temporaries: tuple[Param, ...] = ()
    body: tuple[Stmt, ...] = ()
    constraints: tuple[SizeConstraint, ...] = field(default=(), compare=False, repr=False)

    def param(self, name: str) -> Param | None:
        for p in self.params + self.temporaries:
            if p.name == name:
                return p
        return None


def _remember_hashes(*classes: type) -> None:
    """Make each class's field hash computed once per node.

    Stages key dictionaries by expressions (the lowering's common
    subexpressions, the interpreter's checked programs); a frozen dataclass
    hashes all its fields again on every lookup, so with deep expressions
    (a scan body of hundreds of bindings) each lookup walked the whole
    subtree.  The remembered hash is not pickled: string hashes differ
    between processes."""
    for cls in classes:
        fields_hash = cls.__hash__

        def __hash__(self, _fields_hash=fields_hash) -> int:
            h = self.__dict__.get("_hash")
            if h is None:
                h = _fields_hash(self)
                object.__setattr__(self, "_hash", h)
            return h

        def __getstate__(self) -> dict:
            return {k: v for k, v in self.__dict__.items() if k != "_hash"}

        cls.__hash__ = __hash__  # type: ignore[method-assign, assignment]
        cls.__getstate__ = __getstate__  # type: ignore[attr-defined]


_remember_hashes(Dim, TensorType, FunctionType, Sym, Literal, Param, Lambda, Call, DimInterval,
                 Assign, IfStmt, ForStmt, Program)


# --------------------------------------------------------------------------- builtins

ARITHMETIC = ("plus", "minus", "multiplies", "divides", "mod", "power", "minimum",
              "maximum", "arctan2", "fmod")
COMPARISONS = ("eq", "neq", "less", "less_equal", "greater", "greater_equal")
LOGICAL = ("and", "or", "not")
MATH_FUNCTIONS = ("neg", "abs", "sqrt", "exp", "log", "log10", "log2", "sin", "cos",
                  "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                  "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "cbrt",
                  "gamma")
PREDICATES = ("isfinite", "isnan", "isinf")
STRUCTURAL = ("cast", "if", "make_tuple", "tuple_get", "shift", "cartesian_shift",
              "shift_init", "shift_apply", "unstructured_shift", "offset_shift", "can_deref",
              "reduce", "scan", "subset", "concat", "pos", "add_dim", "lift", "deref")
BUILTINS = frozenset(ARITHMETIC + COMPARISONS + LOGICAL + MATH_FUNCTIONS + PREDICATES
                     + STRUCTURAL)
# Builtins whose names programs may still give a parameter or temporary (the
# name then means the tensor in that program, not the builtin): GT4Py's
# later additions, names a weather code may already use (a ``gamma``).
NAMEABLE_BUILTINS = frozenset(("cbrt", "gamma", "fmod"))
# Other spellings accepted for builtins; the parser maps them to the canonical name.
BUILTIN_ALIASES = {"index": "pos", "tuple": "make_tuple"}


def canonical_builtin(name: str) -> str | None:
    """The canonical builtin a name spells (``__scan`` → ``scan``), or None."""
    if name in BUILTINS:
        return name
    if name in BUILTIN_ALIASES:
        return BUILTIN_ALIASES[name]
    if name.startswith("__"):
        return canonical_builtin(name[2:])
    return None


def builtin_name(expr: Expr) -> str | None:
    """The builtin at the head of a (possibly curried) call, or None."""
    while isinstance(expr, Call):
        expr = expr.func
    if isinstance(expr, Sym) and expr.name in BUILTINS:
        return expr.name
    return None


def reduce_axis(e: Call) -> str:
    """The neighbour dimension a typed ``reduce(f, init[, axis])(x…)`` folds over:
    the named axis, else the highest ``_NB_<n>`` counter of its operands."""
    static = head_args(e)
    if len(static) == 3 and isinstance(static[2], Sym):
        return static[2].name
    counted = [d for a in e.args for d in a.type.dims if d.neighbor_counter is not None]
    return max(counted, key=lambda d: d.neighbor_counter or 0).name


# Builtins whose value is absent where one of their tensor operands is.
_PRESENCE_THROUGH = frozenset(ARITHMETIC + COMPARISONS + LOGICAL + MATH_FUNCTIONS + PREDICATES
                              + ("if", "cast", "make_tuple", "tuple_get", "subset"))


def absent_beyond_masks(x: Expr, absent: frozenset[str] = frozenset()) -> bool:
    """Whether ``x`` can be absent where the neighbour masks of its type are not:
    it reads through a full unstructured or data-dependent shift, possibly
    under Cartesian or partial shifts, element-wise operations and applied
    lambdas, or it names a parameter in ``absent`` (an applied lambda's
    parameter whose argument can be absent so).  When false, the masks alone
    are ``x``'s presence, and a reduce needs no other test."""
    if isinstance(x, Sym):
        return x.name in absent
    if not isinstance(x, Call):
        return False
    f = x.func
    if isinstance(f, Lambda):
        return absent_beyond_masks(f.body, lambda_absent(f, x.args, absent))
    if isinstance(f, Call):
        name = builtin_name(f)
        name = canonical_builtin(name) if name else None
        if name in ("unstructured_shift", "offset_shift"):
            return True
        if name == "shift_apply" and x.args and isinstance(x.args[0].type, TensorType) and \
                (nb := x.args[0].type.highest_neighbor) is not None and nb.mask is not None:
            return True     # the slot is absent where its table entry is: the type drops it
        if name in ("cartesian_shift", "shift_init", "shift_apply"):
            return bool(x.args) and absent_beyond_masks(x.args[0], absent)
        return False
    if isinstance(f, Sym) and canonical_builtin(f.name) in _PRESENCE_THROUGH:
        tensors = [a for a in x.args if isinstance(a.type, TensorType)]
        if any(absent_beyond_masks(a, absent) for a in tensors) or _masks_differ(tensors):
            return True
        if canonical_builtin(f.name) == "if":
            types = [a.type for a in x.args]
            return any(not select_mask(types, d.name)[1]
                       for a in x.args for d in a.type.dims if d.mask is not None)
        return False
    return False


def table_of_mask(mask: Expr | None) -> str | None:
    """The name of the table a mask expression reads: its innermost operand
    (a Cartesian or nested shift wraps the table)."""
    e = mask
    while isinstance(e, Call) and e.args:
        e = e.args[0]
    return e.name if isinstance(e, Sym) else None


def unmasked(d: Dim) -> Dim:
    """``d`` present at every element, remembering the table that made it."""
    if d.mask is None:
        return d
    return replace(d, mask=None, origin=d.origin or table_of_mask(d.mask))


def select_mask(types: Sequence[TensorType], dim: str) -> tuple[Expr | None, bool]:
    """The mask of ``if(c, a, b)`` (operand types ``types``) along ``dim``, and
    whether it is exactly its presence.  The value is absent where ``c`` is or
    the selected branch is: so the condition's mask, which no branch masked by
    another table makes inexact; with an unmasked condition, a mask both
    branches share.  Otherwise none, and the presence is computed from the
    operands (:func:`absent_beyond_masks`)."""
    mc, ma, mb = (d.mask if (d := t.dim(dim)) is not None else None for t in types)
    if mc is not None:
        return mc, ma in (None, mc) and mb in (None, mc)
    if ma is not None and ma == mb:
        return ma, True
    return None, ma is None and mb is None


def _masks_differ(operands: Sequence[Expr]) -> bool:
    """Whether two operands mask one neighbour dimension by different tables
    (``⟪S⟫(g) × ⟪C2E⟫(x)``): the result's type keeps one mask, so the other
    operand's absent neighbours are absent beyond it."""
    seen: dict[str, Expr] = {}
    for a in operands:
        for d in a.type.dims:
            if d.mask is None:
                continue
            if seen.setdefault(d.name, d.mask) != d.mask:
                return True
    return False


def lambda_absent(lam: Lambda, args: Sequence[Expr], absent: frozenset[str] = frozenset()
                  ) -> frozenset[str]:
    """The names that can be absent beyond their masks inside the body of the
    applied lambda ``lam(args…)``: its parameters whose arguments can be (each
    parameter carries its argument's presence), and the outer ``absent`` names
    it does not shadow."""
    params = {p.name for p in lam.params}
    return frozenset(n for n in absent if n not in params) | frozenset(
        p.name for p, a in zip(lam.params, args) if absent_beyond_masks(a, absent))


def children(node: Node) -> Iterator[Node]:
    """The direct sub-nodes of a node, in source order."""
    match node:
        case Lambda(params=params, body=body):
            yield from params
            yield body
        case Call(func=func, args=args):
            yield func
            yield from args
        case Assign(target=t, value=v):
            yield t
            yield v
        case IfStmt(cond=c, then_body=tb, else_body=eb):
            yield c
            yield from tb
            yield from eb
        case ForStmt(start=s, stop=e, body=b):
            yield s
            yield e
            yield from b
        case Program(params=p, temporaries=t, body=b):
            yield from p
            yield from t
            yield from b
        case _:
            return


def walk(node: Node) -> Iterator[Node]:
    """All nodes below and including ``node``, pre-order (no recursion, so any depth)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(tuple(children(n))))


# --------------------------------------------------------------------------- depth

MAX_DEPTH = 2000
"""The deepest nesting of expressions any stage accepts (a sum of ``n`` terms nests
``n - 1`` deep): the parser and the checker refuse deeper programs with a located
error instead of running out of stack."""

_RECURSION_ROOM = 40 * MAX_DEPTH

# Comparing and hashing nodes recurses (about four frames a level): give programs
# up to MAX_DEPTH room for ``==`` and ``hash`` outside the stages too.
if sys.getrecursionlimit() < 5 * MAX_DEPTH:
    sys.setrecursionlimit(5 * MAX_DEPTH)


def too_deep(node: Node, limit: int = MAX_DEPTH) -> Node | None:
    """The first call or lambda nested inside more than ``limit`` others, or None."""
    stack = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if isinstance(n, (Call, Lambda)):
            depth += 1
            if depth > limit:
                return n
        stack.extend((c, depth) for c in children(n))
    return None


@contextmanager
def recursion_room() -> Iterator[None]:
    """Python recursion room for programs up to :data:`MAX_DEPTH` deep: the stages
    recurse over expressions, several frames a level."""
    old = sys.getrecursionlimit()
    if old < _RECURSION_ROOM:
        sys.setrecursionlimit(_RECURSION_ROOM)
    try:
        yield
    finally:
        if old < _RECURSION_ROOM:
            sys.setrecursionlimit(old)


def with_recursion_room(fn):
    """``fn`` run inside :func:`recursion_room` (a decorator for the public stages)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with recursion_room():
            return fn(*args, **kwargs)
    return run


# --------------------------------------------------------------------------- checked IR
# Accessors for what the type checker guarantees of checked IR; the stages after
# it (interpreter, lowering) use them instead of re-checking.


def head_args(e: Call) -> tuple[Expr, ...]:
    """The arguments of a curried builtin's head: ``(T, k)`` of ``⟪T, k⟫(x)``."""
    assert isinstance(e.func, Call)
    return e.func.args


def scalar_dtype(t: TensorType) -> ScalarType:
    """The element type of a tensor that is not tuple-typed."""
    assert isinstance(t.dtype, ScalarType)
    return t.dtype


def required_dim(t: TensorType, name: str) -> Dim:
    """Dimension ``name`` of ``t``, which has it."""
    d = t.dim(name)
    assert d is not None
    return d


def neighbor_axis(t: TensorType) -> Dim:
    """The ``_NB_<n>`` dimension with the highest counter of ``t``, which has one."""
    d = t.highest_neighbor
    assert d is not None
    return d


def int_value(e: Expr) -> int:
    """The value of an integer literal."""
    assert isinstance(e, Literal)
    return int(e.value)


def sym_name(e: Expr) -> str:
    """The name of a symbol."""
    assert isinstance(e, Sym)
    return e.name


def neighbor_source_of(d: Dim) -> str:
    """The source dimension of a table's ``_NB_<Source>`` dimension."""
    assert d.neighbor_source is not None
    return d.neighbor_source
