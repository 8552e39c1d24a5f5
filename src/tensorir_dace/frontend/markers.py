"""Values the translator passes around besides IR expressions, and small helpers on them."""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..errors import (
    SourceLoc,
)

if TYPE_CHECKING:
    from .translate import FunctionTranslator



# --------------------------------------------------------------------------- markers


@dataclass(frozen=True, eq=False)
class TableIndex:
    """``E2V[0]``: the k-th neighbour of a table, an argument of a shift."""

    table: ir.Expr
    index: int


@dataclass(eq=False)
class LocalCallable:
    """A lambda or nested ``def`` written inside a translated body."""

    node: ast.AST          # ast.Lambda or ast.FunctionDef
    owner: FunctionTranslator

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")


@dataclass(eq=False)
class BoundMethod:
    value: ir.Expr
    name: str


_STATIC_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                  ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow,
                  ast.FloorDiv: operator.floordiv, ast.BitAnd: operator.and_,
                  ast.BitOr: operator.or_, ast.BitXor: operator.xor,
                  ast.LShift: operator.lshift, ast.RShift: operator.rshift,
                  ast.MatMult: operator.matmul}
_IR_BINOPS = {ast.Add: "plus", ast.Sub: "minus", ast.Mult: "multiplies", ast.Div: "divides",
              ast.Mod: "mod", ast.Pow: "power", ast.BitAnd: "and", ast.BitOr: "or"}
_CMP_STATIC = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
               ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CMP_IR = {ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal",
           ast.Eq: "eq", ast.NotEq: "neq"}
_OP_TEXT = {ast.FloorDiv: "//", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
            ast.MatMult: "@"}

_UNSUPPORTED_STMTS = {ast.While: "while loops", ast.Try: "try statements",
                      ast.With: "with statements", ast.AsyncWith: "async with",
                      ast.AsyncFor: "async for", ast.Raise: "raise", ast.Delete: "del",
                      ast.Global: "global declarations", ast.Nonlocal: "nonlocal declarations",
                      ast.Import: "imports", ast.ImportFrom: "imports",
                      ast.ClassDef: "class definitions", ast.Assert: "assert statements",
                      ast.Break: "break", ast.Continue: "continue",
                      ast.AsyncFunctionDef: "async functions"}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED_STMTS[ast.TryStar] = "try statements"  # type: ignore[attr-defined]
if hasattr(ast, "Match"):
    _UNSUPPORTED_STMTS[ast.Match] = "match statements"

_UNSUPPORTED_EXPRS = {ast.Dict: "dict literals", ast.Set: "set literals",
                      ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
                      ast.DictComp: "dict comprehensions",
                      ast.GeneratorExp: "generator expressions", ast.Await: "await",
                      ast.Yield: "yield", ast.YieldFrom: "yield", ast.NamedExpr: "':='",
                      ast.JoinedStr: "f-strings", ast.Starred: "'*' unpacking",
                      ast.Slice: "slices"}


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
    """``e[i]`` with the selection pushed into make_tuple / lambda bodies."""
    match e:
        case ir.Call(func=ir.Sym(name="make_tuple"), args=args) if 0 <= i < len(args):
            return args[i]
        case ir.Call(func=ir.Lambda() as lam, args=args):
            return replace(e, func=replace(lam, body=project(lam.body, i, loc)), args=args)
    return ir.Call(ir.Sym("tuple_get", loc=loc), (e, ir.Literal(i, loc=loc)), loc=loc)
