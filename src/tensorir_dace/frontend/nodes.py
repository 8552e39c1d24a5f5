"""Which Python syntax the front end translates, and where: the dispatch tables.

Every translator dispatches on the AST node type through one of the tables
below, so this module lists all the Python syntax Tensor IR code may use:

* ``EXPRESSIONS``: expressions, handled by ``e_<Node>`` methods
  (:mod:`.expressions`, calls in :mod:`.functions`);
* ``FUNCTION_STATEMENTS``: statements of ``@function`` bodies, which are
  inlined, handled by ``f_<Node>`` methods (:mod:`.bodies`);
* ``PROGRAM_STATEMENTS``: statements of ``@program`` bodies, which become IR
  statements, handled by ``p_<Node>`` methods (:mod:`.programs`).

A node type missing from a table is refused with the wording of
``UNSUPPORTED_EXPRESSIONS`` / ``UNSUPPORTED_STATEMENTS``.  The operator tables
map Python operators to their static (translation-time) function and their IR
builtin.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from .values import Bind

EXPRESSIONS: dict[type, str] = {
    ast.Constant: "e_Constant",
    ast.Name: "e_Name",
    ast.Tuple: "e_Tuple",
    ast.List: "e_List",
    ast.Dict: "e_Dict",
    ast.Attribute: "e_Attribute",
    ast.Lambda: "e_Lambda",
    ast.BinOp: "e_BinOp",
    ast.UnaryOp: "e_UnaryOp",
    ast.BoolOp: "e_BoolOp",
    ast.Compare: "e_Compare",
    ast.IfExp: "e_IfExp",
    ast.Subscript: "e_Subscript",
    ast.Call: "e_Call",
}

FUNCTION_STATEMENTS: dict[type, str] = {
    Bind: "f_Bind",              # inserted by loop unrolling and tuple unpacking
    ast.Return: "f_Return",
    ast.Assign: "f_Assign",
    ast.AnnAssign: "f_Assign",
    ast.AugAssign: "f_Assign",
    ast.Expr: "f_Expr",
    ast.Pass: "f_Pass",
    ast.If: "f_If",
    ast.For: "f_For",
    ast.FunctionDef: "f_FunctionDef",
}

PROGRAM_STATEMENTS: dict[type, str] = {
    ast.Assign: "p_Assign",
    ast.AugAssign: "p_AugAssign",
    ast.AnnAssign: "p_AnnAssign",
    ast.Expr: "p_Expr",
    ast.Pass: "p_Pass",
    ast.If: "p_If",
    ast.For: "p_For",
    ast.Return: "p_Return",
    ast.FunctionDef: "p_FunctionDef",
}

STATIC_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul}
IR_BINOPS: dict[type, str] = {
    ast.Add: "plus", ast.Sub: "minus", ast.Mult: "multiplies", ast.Div: "divides",
    ast.Mod: "mod", ast.Pow: "power", ast.BitAnd: "and", ast.BitOr: "or"}
STATIC_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
    ast.Invert: operator.invert}
CMP_STATIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne}
CMP_IR: dict[type, str] = {
    ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal",
    ast.Eq: "eq", ast.NotEq: "neq"}
OP_TEXT: dict[type, str] = {
    ast.FloorDiv: "//", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@"}

UNSUPPORTED_STATEMENTS: dict[type, str] = {
    ast.While: "while loops", ast.Try: "try statements", ast.With: "with statements",
    ast.AsyncWith: "async with", ast.AsyncFor: "async for", ast.Raise: "raise",
    ast.Delete: "del", ast.Global: "global declarations",
    ast.Nonlocal: "nonlocal declarations", ast.Import: "imports", ast.ImportFrom: "imports",
    ast.ClassDef: "class definitions", ast.Assert: "assert statements", ast.Break: "break",
    ast.Continue: "continue", ast.AsyncFunctionDef: "async functions"}
if hasattr(ast, "TryStar"):
    UNSUPPORTED_STATEMENTS[ast.TryStar] = "try statements"
if hasattr(ast, "Match"):
    UNSUPPORTED_STATEMENTS[ast.Match] = "match statements"

UNSUPPORTED_EXPRESSIONS: dict[type, str] = {
    ast.Set: "set literals", ast.ListComp: "list comprehensions",
    ast.SetComp: "set comprehensions", ast.DictComp: "dict comprehensions",
    ast.GeneratorExp: "generator expressions", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.NamedExpr: "':='", ast.JoinedStr: "f-strings",
    ast.Starred: "'*' unpacking", ast.Slice: "slices"}


def handler(table: dict[type, str], owner: Any, node: Any) -> Callable[..., Any] | None:
    """The method of ``owner`` that ``table`` names for ``node``'s type, if any."""
    name = table.get(type(node))
    return getattr(owner, name) if name is not None else None
