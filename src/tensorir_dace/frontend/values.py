"""Values the translators pass around besides IR expressions, and small helpers on them.

Values during translation are

* IR expressions (:class:`ir.Expr`): tensors and scalars of the program;
* Python tuples of values (``a, b``), turned into ``make_tuple`` when needed;
* static Python objects: numbers, dimensions, offsets (``I + 1``), index
  conditions (``K < 1``), functions, modules, and the markers below,
  evaluated at translation time, like JAX's static arguments.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import ir
from ..errors import SourceLoc
from .callables import InlinedFunction, ProgramDefinition, ScanOperator
from .dims import Dimension, Mask, NeighborDimension, Offset


@dataclass(frozen=True, eq=False)
class TableIndex:
    """``E2V[0]``: the k-th neighbour of a table, an argument of a shift."""

    table: ir.Expr
    index: int


@dataclass(eq=False)
class LocalCallable:
    """A lambda or nested ``def`` written inside a translated body."""

    node: ast.Lambda | ast.FunctionDef
    owner: Any             # the translator of the body that defines it

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")


@dataclass(eq=False)
class BoundMethod:
    """``x.astype``: a tensor method, applied when called."""

    value: Any      # a tensor, a tuple of them, or a number known while translating
    name: str


@dataclass(frozen=True)
class Bind:
    """A binding inserted into a function body by loop unrolling (static values)
    or tuple unpacking (``let``: bound like an assignment, ``force``: always bound
    by a lambda)."""

    name: str
    value: Any
    let: bool = False
    force: bool = False


def is_ir(v: Any) -> bool:
    return isinstance(v, ir.Expr)


def contains_ir(v: Any) -> bool:
    if isinstance(v, tuple):
        return any(contains_ir(x) for x in v)
    return is_ir(v)


def is_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating))


def strip_masks(t: ir.TensorType) -> ir.TensorType:
    return replace(t, dims=tuple(replace(d, mask=None) for d in t.dims))


def is_table_type(t: ir.TensorType) -> bool:
    return (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int and len(t.dims) == 2
            and sum(d.neighbor_source is not None for d in t.dims) == 1
            and sum(not d.is_neighbor for d in t.dims) == 1)


def free_syms(e: ir.Node) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Sym)}


def project(e: ir.Expr, i: int, loc: SourceLoc | None) -> ir.Expr:
    """``e[i]`` with the selection pushed into make_tuple / lambda bodies and
    into both branches of ``if`` (the element of a choice between tuples is the
    choice between their elements: defined wherever both elements are, not only
    where both whole tuples are)."""
    match e:
        case ir.Call(func=ir.Sym(name="make_tuple"), args=args) if 0 <= i < len(args):
            return args[i]
        case ir.Call(func=ir.Lambda() as lam, args=args):
            return replace(e, func=replace(lam, body=project(lam.body, i, loc)), args=args)
        case ir.Call(func=ir.Sym(name="if"), args=(c, a, b)):
            return ir.Call(e.func, (c, project(a, i, loc), project(b, i, loc)), loc=e.loc)
    return ir.Call(ir.Sym("tuple_get", loc=loc), (e, ir.Literal(i, loc=loc)), loc=loc)


def is_trivial(e: Any) -> bool:
    """Nothing worth binding: a name, a literal or a tuple element of one."""
    match e:
        case ir.Sym() | ir.Literal():
            return True
        case ir.Call(func=ir.Sym(name="tuple_get"), args=(x, ir.Literal())):
            return is_trivial(x)
    return not is_ir(e) and not isinstance(e, tuple)


def pushable(e: Any) -> bool:
    """Whether :func:`project` can select a tuple element without a tuple_get."""
    match e:
        case ir.Call(func=ir.Sym(name="make_tuple")):
            return True
        case ir.Call(func=ir.Lambda(body=body)):
            return pushable(body)
        case ir.Call(func=ir.Sym(name="if"), args=(_, a, b)):
            return pushable(a) and pushable(b)
    return False


def small_lets(e: ir.Expr, limit: int = 40) -> bool:
    """Whether the values a let chain ``(λ x. … make_tuple(…))(v)`` binds are small:
    selecting its elements one by one then copies the chain into each (no tuple
    to bind); a large chain (a function's body) is bound once instead, or each
    element would copy it."""
    size = 0
    while isinstance(e, ir.Call) and isinstance(e.func, ir.Lambda):
        size += sum(1 for a in e.args for _ in ir.walk(a))
        if size > limit:
            return False
        e = e.func.body
    return True


def describe(v: Any) -> str:
    """A value as error messages name it."""
    if isinstance(v, Dimension):
        return f"the dimension {v.name}"
    if isinstance(v, NeighborDimension):
        return f"the neighbour dimension {v!r}"
    if isinstance(v, Offset):
        return f"the offset {v!r}"
    if isinstance(v, Mask):
        return f"the index condition {v!r}"
    if isinstance(v, TableIndex):
        return "a neighbour table entry"
    if isinstance(v, (InlinedFunction, ScanOperator, ProgramDefinition)):
        return f"'{v.__name__}'"
    if isinstance(v, LocalCallable):
        return f"the local function '{v.name}'"
    if inspect.ismodule(v):
        return f"the module '{v.__name__}'"
    if callable(v) and hasattr(v, "__name__"):
        return f"'{v.__name__}'"
    if isinstance(v, str):
        return repr(v)
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{type(v).__name__} {r}"
