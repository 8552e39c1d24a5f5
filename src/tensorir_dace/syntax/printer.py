"""The printer of the Tensor IR text syntax: ``parse(format(p)) == p``.

Operator builtins print infix with the fewest parentheses their precedence
allows; ``shift`` curried calls print as ``⟪…⟫(x)``; ``tuple_get`` with an
integer literal prints as ``x[i]``.  ``ascii=True`` gives the pure-ASCII
spelling (``<-``, ``->``, ``lambda``, ``*``, ``<< >>``, ``&& || !``,
``<= >= !=``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sympy.printing.str import StrPrinter

from .. import ir
from ..lazy import lazy_module

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

INDENT = "    "
WIDTH = 100  # lines longer than this are broken where the syntax allows

# precedence levels, loosest to tightest
LAMBDA, OR, AND, CMP, ADD, MUL, PREFIX, POSTFIX = range(8)

# builtin name -> (level, unicode spelling, ascii spelling)
BINARY_OPS = {
    "or": (OR, "∨", "||"),
    "and": (AND, "∧", "&&"),
    "eq": (CMP, "==", "=="),
    "neq": (CMP, "≠", "!="),
    "less": (CMP, "<", "<"),
    "less_equal": (CMP, "≤", "<="),
    "greater": (CMP, ">", ">"),
    "greater_equal": (CMP, "≥", ">="),
    "plus": (ADD, "+", "+"),
    "minus": (ADD, "-", "-"),
    "multiplies": (MUL, "×", "*"),
    "divides": (MUL, "/", "/"),
    "mod": (MUL, "%", "%"),
}

_RESERVED = {"lambda", "True", "False"}


def _is_name(name: str) -> bool:
    return (name.isidentifier() and name not in _RESERVED and "λ" not in name
            and "\u2092" not in name)


class _BoundPrinter(StrPrinter):
    """SymPy's str, with integer powers written as products (``N*N``)."""

    def _print_Pow(self, expr, rational=False):
        exp = expr.exp
        if exp.is_Integer and int(exp) > 0:
            base = self.parenthesize(expr.base, sympy.printing.precedence.PRECEDENCE["Mul"],
                                     strict=False)
            return "*".join([base] * int(exp))
        return super()._print_Pow(expr, rational=rational)


_BOUND_PRINTER = _BoundPrinter()


def format_bound(bound: sympy.Expr) -> str:
    """An interval bound, e.g. ``-1``, ``N``, ``M+1``, ``2*N-3``."""
    return _BOUND_PRINTER.doprint(sympy.sympify(bound)).replace(" ", "")


class _TooLong(Exception):
    """A one-line form being built is longer than WIDTH (see :meth:`Printer.short`)."""


def _is_let(e: ir.Expr) -> bool:
    """``e`` binds names: ``(λ(x) → body)(value)``."""
    return isinstance(e, ir.Call) and isinstance(e.func, ir.Lambda)


class Printer:
    def __init__(self, ascii: bool = False):
        self.ascii = ascii
        self.assign = "<-" if ascii else "←"
        self.arrow = "->" if ascii else "→"
        self.lam = "lambda" if ascii else "λ"
        self.shift_open, self.shift_close = ("<<", ">>") if ascii else ("⟪", "⟫")
        self.neg = "-"
        self.not_ = "!" if ascii else "¬"
        self._flat: dict[int, tuple[ir.Expr, tuple[str, int]]] = {}
        # One-line forms no longer than WIDTH (None: longer), and whether one
        # is being built: line breaking only asks whether a subexpression
        # fits on a line, and building the one-line text of every large
        # subexpression took time quadratic in the nesting depth.
        self._short: dict[int, tuple[ir.Expr, tuple[str, int] | None]] = {}
        self._capped = False
        # The width the line breaking aims at: below WIDTH while a statement is
        # re-laid out because text around a broken expression overflowed.
        self.width = WIDTH
        # Builtins printed in the ⟪…⟫ notation (see format_checked).
        self.shift_names = frozenset(("shift",))

    # ----------------------------------------------------------------- types

    def element_type(self, t: ir.ElementType) -> str:
        if isinstance(t, ir.TupleType):
            return "(" + ", ".join(self.element_type(e) for e in t.elements) + ")"
        return t.name

    def dim(self, d: ir.Dim) -> str:
        return f"{d.name}[{format_bound(d.start)}:{format_bound(d.stop)}]"

    def tensor_type(self, t: ir.TensorType) -> str:
        return "tensor<" + ", ".join([self.element_type(t.dtype)]
                                     + [self.dim(d) for d in t.dims]) + ">"

    def type_(self, t) -> str:
        if isinstance(t, ir.FunctionType):
            return ("(" + ", ".join(self.type_(p) for p in t.params) + f") {self.arrow} "
                    + self.type_(t.result))
        return self.tensor_type(t)

    def param(self, p: ir.Param) -> str:
        return f"{p.name}: {self.type_(p.type)}"

    # ----------------------------------------------------------------- expressions

    def expr(self, e: ir.Expr, level: int = LAMBDA, indent: str | None = None) -> str:
        """``e`` printed to stand where an expression of ``level`` is expected.

        With ``indent`` (the indentation of the line it starts on), an
        expression too long for one line is broken over several lines.
        """
        text, own = self.expr_level(e, indent)
        return f"({text})" if own < level else text

    def expr_level(self, e: ir.Expr, indent: str | None = None) -> tuple[str, int]:
        if indent is not None:
            short = self.short(e)
            if short is not None and len(indent) + len(short[0]) <= self.width:
                return short
            return self.layout(e, indent)
        if self._capped:
            short = self.short(e)
            if short is None:
                raise _TooLong
            return short
        hit = self._flat.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        flat = self.layout(e, None)   # remembered: chains ask for operands' forms again
        self._flat[id(e)] = (e, flat)
        return flat

    def short(self, e: ir.Expr) -> tuple[str, int] | None:
        """``e`` on one line if that is at most WIDTH long, else None (remembered)."""
        hit = self._short.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        saved, self._capped = self._capped, True
        flat: tuple[str, int] | None
        try:
            flat = self.layout(e, None)
        except _TooLong:
            flat = None
        finally:
            self._capped = saved
        if flat is not None and len(flat[0]) > WIDTH:
            flat = None
        self._short[id(e)] = (e, flat)
        return flat

    def short_text(self, e: ir.Expr, level: int = LAMBDA) -> str | None:
        """:meth:`expr`'s one-line text of ``e`` if it is at most WIDTH long, else None."""
        short = self.short(e)
        if short is None:
            return None
        return f"({short[0]})" if short[1] < level else short[0]

    def literal(self, e: ir.Literal) -> tuple[str, int]:
        if e.kind == "bool":
            return ("True" if e.value else "False"), POSTFIX
        if e.kind == "int":
            text = _int_text(int(e.value))
        else:
            value = float(e.value)
            if math.isinf(value):
                text = "1e999" if value > 0 else "-1e999"
            else:
                text = repr(value)
        return text, (PREFIX if text.startswith("-") else POSTFIX)

    def layout(self, e: ir.Expr, indent: str | None) -> tuple[str, int]:
        """``e`` on one line (``indent`` None) or broken over lines."""
        match e:
            case ir.Sym(name=name):
                return name, POSTFIX
            case ir.Literal():
                return self.literal(e)
            case ir.DimInterval(name=name, start=start, stop=stop):
                return f"{name}[{format_bound(start)}:{format_bound(stop)}]", POSTFIX
            case ir.Lambda(params=params, body=body):
                ps = ", ".join(self.param(p) for p in params)
                if indent is None:
                    return f"{self.lam}({ps}) {self.arrow} {self.expr(body)}", LAMBDA
                inner = indent + INDENT
                if len(indent) + len(ps) + 10 > self.width:
                    ps = "".join(f"\n{inner}{self.param(p)}," for p in params)
                    ps = ps[:-1] + "\n" + indent
                head = f"{self.lam}({ps}) {self.arrow}"
                flat_body = self.short_text(body)
                last_line = head.rsplit("\n", 1)[-1]
                if "\n" in head and flat_body is not None and \
                        len(last_line) + len(flat_body) + 1 <= self.width:
                    return f"{head} {flat_body}", LAMBDA
                if _is_let(body):   # a chain of bindings stays at one depth
                    inner = indent
                return f"{head}\n{inner}{self.expr(body, LAMBDA, inner)}", LAMBDA
            case ir.Call():
                return self.call(e, indent)
        raise TypeError(f"cannot format {type(e).__name__} as an expression")

    def call(self, e: ir.Call, indent: str | None) -> tuple[str, int]:
        func, args = e.func, e.args
        if isinstance(func, ir.Sym):
            name = func.name
            if name in BINARY_OPS and len(args) == 2:
                level, uni, asc = BINARY_OPS[name]
                op = asc if self.ascii else uni
                right_level = level + 1
                left_level = level + 1 if level == CMP else level
                left = self.expr(args[0], left_level, indent)
                right = self.expr(args[1], right_level, indent)
                sep = " "
                if indent is not None:
                    line = left.rsplit("\n", 1)[-1]
                    if "\n" not in left:
                        line = indent + line
                    if len(line) + len(op) + 2 + len(right.split("\n", 1)[0]) > self.width:
                        sep = "\n" + indent
                return f"{left}{sep}{op} {right}", level
            if name == "neg" and len(args) == 1:
                (x,) = args
                if isinstance(x, ir.Literal) and x.kind in ("int", "float"):
                    return f"-({self.literal(x)[0]})", PREFIX
                text = self.expr(x, PREFIX, indent)
                if text.startswith("-"):
                    text = f"({text})"
                return f"-{text}", PREFIX
            if name == "not" and len(args) == 1:
                return self.not_ + self.expr(args[0], PREFIX, indent), PREFIX
            if (name == "tuple_get" and len(args) == 2 and isinstance(args[1], ir.Literal)
                    and args[1].kind == "int"):
                return (f"{self.expr(args[0], POSTFIX, indent)}[{int(args[1].value)}]",
                        POSTFIX)
        if (isinstance(func, ir.Call) and isinstance(func.func, ir.Sym)
                and func.func.name in self.shift_names and func.args
                and isinstance(func.args[0], ir.Sym)
                and all(self.is_offset(a) or (i > 0 and func.func.name == "shift")
                        for i, a in enumerate(func.args))):
            offsets = ", ".join(self.expr(a) for a in func.args)
            return (f"{self.shift_open}{offsets}{self.shift_close}"
                    f"({self.args(args, indent)})"), POSTFIX
        return f"{self.expr(func, POSTFIX, indent)}({self.args(args, indent)})", POSTFIX

    def args(self, args: tuple[ir.Expr, ...], indent: str | None = None) -> str:
        if indent is None:
            return ", ".join(self.expr(a) for a in args)
        texts = [self.short_text(a) for a in args]
        if all(t is not None for t in texts):
            flat = ", ".join(t for t in texts if t is not None)
            if len(indent) + len(flat) <= self.width:
                return flat
        inner = indent + INDENT
        return ("".join(f"\n{inner}{self.expr(a, LAMBDA, inner)}," for a in args)[:-1]
                + "\n" + indent)

    @staticmethod
    def is_offset(e: ir.Expr) -> bool:
        if isinstance(e, ir.Sym):
            return _is_name(e.name)
        return isinstance(e, ir.Literal) and e.kind == "int"

    # ----------------------------------------------------------------- statements

    def stmt(self, s: ir.Stmt, indent: str = "") -> list[str]:
        """The lines of ``s``, none longer than WIDTH where the syntax allows.

        Breaking decisions look at one expression at a time, so text around it
        (the target, a closing ``)(args);``) can overflow; the statement is then
        laid out again aiming at a narrower width."""
        saved = self.width
        try:
            for width in range(saved, 39, -6):
                self.width = width
                lines = self.stmt_lines(s, indent)
                if all(len(line) <= WIDTH for line in "\n".join(lines).split("\n")):
                    break
            return lines
        finally:
            self.width = saved

    def stmt_lines(self, s: ir.Stmt, indent: str) -> list[str]:
        match s:
            case ir.Assign(target=target, value=value):
                return [f"{indent}{self.expr(target)} {self.assign} "
                        f"{self.expr(value, LAMBDA, indent)};"]
            case ir.IfStmt():
                return self.if_stmt(s, indent)
            case ir.ForStmt(var=var, start=start, stop=stop, body=body):
                lines = [f"{indent}for ({var} in {self.expr(start, LAMBDA, indent)}:"
                         f"{self.expr(stop, LAMBDA, indent)}) {{"]
                lines += self.body(body, indent + INDENT)
                lines.append(f"{indent}}}")
                return lines
        raise TypeError(f"cannot format {type(s).__name__} as a statement")

    def if_stmt(self, s: ir.IfStmt, indent: str, prefix: str = "") -> list[str]:
        lines = [f"{indent}{prefix}if ({self.expr(s.cond, LAMBDA, indent)}) {{"]
        lines += self.body(s.then_body, indent + INDENT)
        if len(s.else_body) == 1 and isinstance(s.else_body[0], ir.IfStmt):
            nested = self.if_stmt(s.else_body[0], indent, prefix="} else ")
            return lines + nested
        if s.else_body:
            lines.append(f"{indent}}} else {{")
            lines += self.body(s.else_body, indent + INDENT)
        lines.append(f"{indent}}}")
        return lines

    def body(self, stmts: tuple[ir.Stmt, ...], indent: str) -> list[str]:
        lines: list[str] = []
        for s in stmts:
            lines += self.stmt(s, indent)
        return lines

    def program(self, p: ir.Program) -> str:
        if p.params:
            lines = [f"{p.name}("]
            lines += [f"{INDENT}{self.param(q)}," for q in p.params[:-1]]
            lines.append(f"{INDENT}{self.param(p.params[-1])}")
            lines.append(") {")
        else:
            lines = [f"{p.name}() {{"]
        lines += [f"{INDENT}{self.param(t)};" for t in p.temporaries]
        lines += self.body(p.body, INDENT)
        lines.append("}")
        return "\n".join(lines) + "\n"

    # ----------------------------------------------------------------- dispatch

    def format(self, node) -> str:
        match node:
            case ir.Program():
                return self.program(node)
            case ir.Stmt():
                return "\n".join(self.stmt(node))
            case ir.Expr():
                return self.expr(node)
            case ir.Param():
                return self.param(node)
            case ir.TensorType() | ir.FunctionType():
                return self.type_(node)
            case ir.Dim():
                return self.dim(node)
            case ir.ScalarType() | ir.TupleType():
                return self.element_type(node)
            case sympy.Basic():
                return format_bound(node)
        raise TypeError(f"cannot format a {type(node).__name__}")


@ir.with_recursion_room
def format(node, *, ascii: bool = False) -> str:
    """The text form of a program, statement, expression, parameter or type.

    Unicode by default; ``ascii=True`` spells every token in ASCII.
    """
    return Printer(ascii).format(node)


def _int_text(value: int) -> str:
    """Decimal digits of any integer (Python's ``str`` refuses more than about 4,300)."""
    if abs(value).bit_length() < 13000:
        return str(value)
    sign, value, parts = "-" if value < 0 else "", abs(value), []
    while value:
        value, chunk = divmod(value, 10 ** 4000)
        parts.append(chunk)
    return sign + str(parts[-1]) + "".join(f"{p:04000d}" for p in reversed(parts[:-1]))
def format_checked(node, *, ascii: bool = False) -> str:
    """Like :func:`format`, for the checker's output: its ``cartesian_shift(D, o)(x)``
    (the checked form of ``⟪D, o⟫(x)``) is printed in the ``⟪D, o⟫`` notation
    again, so the text reads as written and checks to the same program."""
    printer = Printer(ascii)
    printer.shift_names = frozenset(("shift", "cartesian_shift"))
    return printer.format(node)
