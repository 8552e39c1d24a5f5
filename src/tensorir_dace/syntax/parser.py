"""A recursive-descent parser of the Tensor IR text syntax.

Grammar (whitespace and ``#`` comments are insignificant; ASCII spellings in
the lexer module)::

    program  := IDENT '(' [param (',' param)* [',']] ')' '{' stmt* '}'
    param    := IDENT ':' type
    type     := 'tensor' '<' elemtype (',' dim)* '>'
    elemtype := float | float32 | float64 | int | int32 | int64 | bool
              | '(' elemtype (',' elemtype)* ')'
    dim      := IDENT '[' bound ':' bound ']'
    bound    := integer expression of size symbols with + - * ( ) and unary -
    stmt     := (IDENT ':' type | target '←' expr | if | for) [';']
    target   := IDENT | 'subset' '(' IDENT (',' IDENT '[' bound ':' bound ']')* ')'
    if       := 'if' '(' expr ')' '{' stmt* '}' ['else' ('{' stmt* '}' | if)]
    for      := 'for' '(' IDENT 'in' expr ':' expr ')' '{' stmt* '}'

    expr     := 'λ' '(' params ')' '→' expr  |  or
    or       := and ('∨' and)*
    and      := cmp ('∧' cmp)*
    cmp      := add [('==' | '≠' | '<' | '≤' | '>' | '≥') add]
    add      := mul (('+' | '-') mul)*
    mul      := unary (('×' | '/' | '%') unary)*
    unary    := ('¬' | '-') unary | postfix
    postfix  := primary ('(' args ')' | '[' INT ']' | '[' bound ':' bound ']')*
    primary  := IDENT | INT | FLOAT | True | False | '(' expr ')' | lambda
              | '⟪' offset (',' offset)* '⟫' '(' args ')'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..errors import ParseError, did_you_mean
from ..lazy import lazy_module
from .lexer import Token
from .reader import TokenReader

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

ELEMENT_TYPE_NAMES = ("float", "float32", "float64", "int", "int32", "int64", "bool")
_KNOWN_TYPE_NAMES = ELEMENT_TYPE_NAMES + tuple(ir.SCALAR_ALIASES)

BINARY = {
    "∨": "or",
    "∧": "and",
    "==": "eq", "≠": "neq", "<": "less", "≤": "less_equal",
    ">": "greater", "≥": "greater_equal",
    "+": "plus", "-": "minus",
    "×": "multiplies", "/": "divides", "%": "mod",
}
COMPARISON_KINDS = ("==", "≠", "<", "≤", ">", "≥")

class Parser(TokenReader):
    """The grammar's rules, one method each (the token helpers in :mod:`.reader`)."""

    def __init__(self, text: str, filename: str | None = None):
        super().__init__(text, filename)
        self.temporaries: list[ir.Param] = []
        self.nesting = 0        # depth of nested prefix operators, parentheses and calls

    # ----------------------------------------------------------------- program

    def program(self) -> ir.Program:
        name = self.expect_ident("the program name (as in 'name(params) { … }')")
        open_ = self.expect("(", f"after the program name '{name.text}'")
        params = self.param_list(open_, "parameter list")
        brace = self.expect("{", "to open the program body")
        body = self.block(brace, "program body")
        self.expect_end("the program's closing '}'")
        return ir.Program(name.text, params, tuple(self.temporaries), body, loc=self.loc(name))

    def param_list(self, open_: Token, what: str) -> tuple[ir.Param, ...]:
        params: list[ir.Param] = []
        while not self.at(")"):
            params.append(self.param())
            if not self.accept(","):
                if not self.at(")"):
                    raise self.error(f"expected ',' or ')' to close the {what} opened at "
                                     f"{self.where(open_)}, {self.found()}")
        self.advance()
        return tuple(params)

    def param(self) -> ir.Param:
        name = self.expect_ident("a parameter name")
        self.expect(":", f"after the parameter name '{name.text}' (as in "
                         f"'{name.text}: tensor<float, I[0:N]>')")
        return ir.Param(name.text, self.type_(), loc=self.loc(name))

    # ----------------------------------------------------------------- types

    def type_(self) -> ir.TensorType:
        tok = self.peek()
        if not self.at_word("tensor"):
            hint = ""
            if tok.kind == "ident" and tok.text in _KNOWN_TYPE_NAMES:
                hint = f" (a scalar is written 'tensor<{tok.text}>')"
            raise self.error(f"expected a type 'tensor<…>', {self.found()}{hint}")
        self.advance()
        open_ = self.expect("<", "after 'tensor'")
        dtype = self.element_type()
        dims: list[ir.Dim] = []
        while self.accept(","):
            dims.append(self.dim())
        if not self.at(">"):
            raise self.error(f"expected ',' or '>' to close the 'tensor<' opened at "
                             f"{self.where(open_)}, {self.found()}")
        self.advance()
        return ir.TensorType(dtype, tuple(dims))

    def element_type(self) -> ir.ElementType:
        tok = self.peek()
        if tok.kind == "(":
            open_ = self.advance()
            elements = [self.element_type()]
            while self.accept(","):
                elements.append(self.element_type())
            self.expect_closing(")", "tuple type", open_)
            return ir.TupleType(tuple(elements))
        if tok.kind == "ident":
            if tok.text in _KNOWN_TYPE_NAMES:
                self.advance()
                return ir.ScalarType(tok.text)
            raise self.error(f"unknown element type '{tok.text}'"
                             + (did_you_mean(tok.text, ELEMENT_TYPE_NAMES)
                                or " (known: " + ", ".join(ELEMENT_TYPE_NAMES)
                                + " or a tuple '(T1, T2, …)')"), tok)
        raise self.error("expected an element type (" + ", ".join(ELEMENT_TYPE_NAMES)
                         + f" or a tuple '(T1, T2, …)'), {self.found()}")

    def dim(self) -> ir.Dim:
        name = self.expect_ident("a dimension 'Name[start:stop]'")
        start, stop = self.interval(name)
        return ir.Dim(name.text, start, stop)

    def interval(self, name: Token) -> tuple[sympy.Expr, sympy.Expr]:
        open_ = self.expect("[", f"after the dimension name '{name.text}' (as in "
                                 f"'{name.text}[0:N]')")
        start = self.bound()
        self.expect(":", f"between the start and stop of the interval of '{name.text}'")
        stop = self.bound()
        self.expect_closing("]", "interval", open_)
        return start, stop

    # interval bounds: integer expressions of size symbols, built as SymPy

    def bound(self) -> sympy.Expr:
        value = self.bound_term()
        while self.at("+") or self.at("-"):
            op = self.advance()
            rhs = self.bound_term()
            value = value + rhs if op.kind == "+" else value - rhs
        return value

    def bound_term(self) -> sympy.Expr:
        value = self.bound_factor()
        while self.at("×"):
            self.advance()
            value = value * self.bound_factor()
        return value

    def bound_factor(self) -> sympy.Expr:
        tok = self.peek()
        if tok.kind == "-":
            self.advance()
            return -self.bound_factor()
        if tok.kind == "int":
            self.advance()
            return sympy.Integer(tok.value)
        if tok.kind == "ident" and tok.text in ("Max", "Min") and self.at("(", 1):
            # a runtime range clamped to an interval: Min(Max(nlev, 0), N)
            self.advance()
            opener = self.advance()
            args = [self.bound()]
            while self.accept(","):
                args.append(self.bound())
            self.expect_closing(")", "'('", opener)
            # Runtime values may be negative: no size assumption may simplify these.
            plain = {x: ir.runtime_symbol(x.name) for a in args for x in a.free_symbols}
            return (sympy.Max if tok.text == "Max" else sympy.Min)(
                *[a.xreplace(plain) for a in args])
        if tok.kind == "ident":
            self.advance()
            return ir.size_symbol(tok.text)
        if tok.kind == "(":
            self.advance()
            value = self.bound()
            self.expect_closing(")", "'('", tok)
            return value
        raise self.error("expected an interval bound (an integer, a size symbol or an "
                         f"expression of them with + - *), {self.found()}")

    # ----------------------------------------------------------------- statements

    def block(self, brace: Token, what: str) -> tuple[ir.Stmt, ...]:
        stmts: list[ir.Stmt] = []
        while True:
            if self.accept(";"):
                continue
            if self.accept("}"):
                return tuple(stmts)
            if self.at("eof"):
                raise self.error(f"expected '}}' to close the {what} opened at "
                                 f"{self.where(brace)}, {self.found()}")
            stmt = self.statement()
            if stmt is not None:
                stmts.append(stmt)

    def statement(self) -> ir.Stmt | None:
        tok = self.peek()
        if tok.kind != "ident":
            raise self.error("expected a statement (an assignment 'name ← expr', a "
                             "declaration 'name: tensor<…>', 'if (…) {…}' or "
                             f"'for (…) {{…}}') or '}}', {self.found()}")
        if tok.text == "if" and self.at("(", 1):
            return self.if_statement()
        if tok.text == "for" and self.at("(", 1):
            return self.for_statement()
        if self.at(":", 1):
            param = self.param()
            self.temporaries.append(param)
            return None
        if self.at("←", 1):
            self.advance()
            self.advance()
            target: ir.Expr = ir.Sym(tok.text, loc=self.loc(tok))
        elif self.at("(", 1) and ir.canonical_builtin(tok.text) == "subset":
            target = self.postfix()
            self.check_subset_target(target, tok)
            self.expect("←", "after the target of the assignment")
        elif self.at("(", 1):
            raise self.error(f"the target of an assignment must be a name or "
                             f"'subset(name, D[a:b], …)', found a call of '{tok.text}'", tok)
        else:
            self.advance()
            raise self.error(f"expected '←' (or '<-') to assign to '{tok.text}' or ':' to "
                             f"declare it, {self.found()}")
        value = self.expr()
        return ir.Assign(target, value, loc=self.loc(tok))

    def check_subset_target(self, target: ir.Expr, tok: Token) -> None:
        ok = (isinstance(target, ir.Call) and target.func == ir.Sym("subset")
              and len(target.args) >= 1 and isinstance(target.args[0], ir.Sym)
              and all(isinstance(a, ir.DimInterval) for a in target.args[1:]))
        if not ok:
            raise self.error("the target of an assignment must be a name or "
                             "'subset(name, D[a:b], …)' with a name and dimension "
                             "intervals", tok)

    def if_statement(self) -> ir.IfStmt:
        kw = self.advance()
        open_ = self.advance()
        cond = self.expr()
        self.expect_closing(")", "condition", open_)
        brace = self.expect("{", "to open the body of 'if'")
        then_body = self.block(brace, "'if' body")
        else_body: tuple[ir.Stmt, ...] = ()
        if self.at_word("else"):
            self.advance()
            if self.at_word("if") and self.at("(", 1):
                else_body = (self.if_statement(),)
            else:
                brace = self.expect("{", "after 'else'")
                else_body = self.block(brace, "'else' body")
        return ir.IfStmt(cond, then_body, else_body, loc=self.loc(kw))

    def for_statement(self) -> ir.ForStmt:
        kw = self.advance()
        open_ = self.advance()
        var = self.expect_ident("the loop variable (as in 'for (t in 0:n)')")
        if not self.at_word("in"):
            raise self.error(f"expected 'in' after the loop variable '{var.text}', "
                             f"{self.found()}")
        self.advance()
        start = self.expr()
        self.expect(":", "between the start and stop of the loop range")
        stop = self.expr()
        self.expect_closing(")", "loop header", open_)
        brace = self.expect("{", "to open the body of 'for'")
        body = self.block(brace, "'for' body")
        return ir.ForStmt(var.text, start, stop, body, loc=self.loc(kw))

    # ----------------------------------------------------------------- expressions

    def expr(self) -> ir.Expr:
        return self.binary(0)

    _LEVELS: tuple[tuple[str, ...], ...] = (("∨",), ("∧",), COMPARISON_KINDS,
                                            ("+", "-"), ("×", "/", "%"))

    def binary(self, level: int) -> ir.Expr:
        if level == len(self._LEVELS):
            return self.unary()
        kinds = self._LEVELS[level]
        first = self.peek()
        left = self.binary(level + 1)
        while self.peek().kind in kinds:
            op = self.advance()
            right = self.binary(level + 1)
            left = ir.Call(ir.Sym(BINARY[op.kind], loc=self.loc(op)), (left, right),
                           loc=self.loc(first))
            if kinds is COMPARISON_KINDS and self.peek().kind in kinds:
                raise self.error(f"comparisons do not chain: put parentheses around "
                                 f"'… {op.text} …' or combine with '∧'", self.peek())
        return left

    def unary(self) -> ir.Expr:
        tok = self.peek()
        self.nesting += 1
        try:
            if self.nesting > ir.MAX_DEPTH:
                raise self.error(f"the expression nests more than {ir.MAX_DEPTH} levels deep "
                                 "(parentheses, prefix operators, calls); split it with "
                                 "temporaries", tok)
            return self._unary(tok)
        finally:
            self.nesting -= 1

    def _unary(self, tok: Token) -> ir.Expr:
        if tok.kind == "¬":
            self.advance()
            operand = self.unary()
            return ir.Call(ir.Sym("not", loc=self.loc(tok)), (operand,), loc=self.loc(tok))
        if tok.kind == "-":
            self.advance()
            nxt = self.peek()
            if nxt.kind in ("int", "float") and self.peek(1).kind not in ("(", "["):
                self.advance()
                return ir.Literal(-nxt.number, loc=self.loc(tok))
            operand = self.unary()
            return ir.Call(ir.Sym("neg", loc=self.loc(tok)), (operand,), loc=self.loc(tok))
        return self.postfix()

    def postfix(self) -> ir.Expr:
        first = self.peek()
        expr = self.primary()
        bare_name = first.kind == "ident"
        while True:
            tok = self.peek()
            if tok.kind == "(":
                args = self.call_args()
                expr = ir.Call(expr, args, loc=self.loc(first))
            elif tok.kind == "[":
                if bare_name and self.bracket_has_colon():
                    start, stop = self.interval(first)
                    expr = ir.DimInterval(first.text, start, stop, loc=self.loc(first))
                else:
                    expr = self.tuple_get(expr, first)
            else:
                return expr
            bare_name = False

    def bracket_has_colon(self) -> bool:
        """Whether the '[' at the current token holds a ':' at its own depth."""
        depth = 0
        k = 0
        while True:
            kind = self.peek(k).kind
            if kind in ("(", "[", "{", "⟪"):
                depth += 1
            elif kind in (")", "]", "}", "⟫"):
                depth -= 1
                if depth == 0:
                    return False
            elif kind == ":" and depth == 1:
                return True
            elif kind == "eof":
                return False
            k += 1

    def tuple_get(self, expr: ir.Expr, first: Token) -> ir.Expr:
        open_ = self.advance()
        sign = self.accept("-")
        tok = self.peek()
        if tok.kind != "int":
            raise self.error("expected an integer literal as the tuple index in "
                             f"'x[i]', {self.found()}")
        self.advance()
        value = -tok.number if sign else tok.number
        self.expect_closing("]", "'['", open_)
        index = ir.Literal(value, loc=self.loc(sign or tok))
        return ir.Call(ir.Sym("tuple_get", loc=self.loc(open_)), (expr, index),
                       loc=self.loc(first))

    def call_args(self) -> tuple[ir.Expr, ...]:
        open_ = self.advance()
        args: list[ir.Expr] = []
        while not self.at(")"):
            args.append(self.expr())
            if not self.accept(","):
                if not self.at(")"):
                    raise self.error("expected ',' or ')' to close the call opened at "
                                     f"{self.where(open_)}, {self.found()}")
        self.advance()
        return tuple(args)

    def primary(self) -> ir.Expr:
        tok = self.peek()
        kind = tok.kind
        if kind == "ident":
            self.advance()
            name = ir.canonical_builtin(tok.text) or tok.text
            return ir.Sym(name, loc=self.loc(tok))
        if kind in ("int", "float", "bool"):
            self.advance()
            return ir.Literal(tok.number, loc=self.loc(tok))
        if kind == "(":
            self.advance()
            inner = self.expr()
            if self.at(","):
                raise self.error("expected ')' to close the '(' opened at "
                                 f"{self.where(tok)}, {self.found()} (there are no tuple "
                                 "expressions: write make_tuple(a, b))")
            self.expect_closing(")", "'('", tok)
            return inner
        if kind == "λ":
            return self.lambda_()
        if kind == "⟪":
            return self.shift()
        raise self.error(f"expected an expression, {self.found()}")

    def lambda_(self) -> ir.Lambda:
        kw = self.advance()
        open_ = self.expect("(", f"after '{kw.text}' (as in 'λ(x: tensor<float>) → x')")
        params = self.param_list(open_, "parameter list")
        self.expect("→", "after the lambda's parameters")
        body = self.expr()
        return ir.Lambda(params, body, loc=self.loc(kw))

    def shift(self) -> ir.Expr:
        open_ = self.advance()
        loc = self.loc(open_)
        offsets: list[ir.Expr] = []
        while True:
            tok = self.peek()
            simple = (self.at(",", 1) or self.at("⟫", 1)) if tok.kind != "-" else \
                (self.at("int", 1) and (self.at(",", 2) or self.at("⟫", 2)))
            if tok.kind == "ident" and simple:
                self.advance()
                offsets.append(ir.Sym(tok.text, loc=self.loc(tok)))
            elif tok.kind == "int" and simple:
                self.advance()
                offsets.append(ir.Literal(tok.number, loc=self.loc(tok)))
            elif tok.kind == "-" and simple:
                self.advance()
                offsets.append(ir.Literal(-self.advance().number, loc=self.loc(tok)))
            elif offsets and tok.kind not in (",", "⟫", "eof") and not (
                    tok.kind == "float" and simple):
                offsets.append(self.expr())     # a data-dependent offset: ⟪K, off + 1⟫
            else:
                raise self.error("expected a dimension, a neighbour table or an integer "
                                 f"offset in the shift opened at {self.where(open_)}, "
                                 f"{self.found()}")
            if self.accept(","):
                continue
            if self.at("⟫"):
                break
            raise self.error(f"expected ',' or '⟫' (or '>>') to close the shift opened at "
                             f"{self.where(open_)}, {self.found()}")
        self.advance()
        if not self.at("("):
            raise self.error(f"expected '(' after the shift opened at {self.where(open_)} "
                             f"(a shift is applied as '⟪…⟫(x)'), {self.found()}")
        args = self.call_args()
        return ir.Call(ir.Call(ir.Sym("shift", loc=loc), tuple(offsets), loc=loc), args,
                       loc=loc)


# --------------------------------------------------------------------------- API


@ir.with_recursion_room
def _run(text: str, filename: str | None, rule):
    parser = Parser(text, filename)
    try:
        result = rule(parser)
    except RecursionError:
        raise parser.error(f"the text is nested too deeply to parse (at most {ir.MAX_DEPTH} "
                           "levels)") from None
    deep = ir.too_deep(result)
    if deep is not None:
        raise ParseError(f"expressions nest more than {ir.MAX_DEPTH} levels deep; split the "
                         "expression with temporaries", deep.loc)
    return result


def _program(parser: Parser) -> ir.Program:
    return parser.program()


def _expression(parser: Parser) -> ir.Expr:
    if parser.at("eof"):
        raise parser.error("expected an expression, found end of input")
    expr = parser.expr()
    parser.expect_end("the expression")
    return expr


def _type(parser: Parser) -> ir.TensorType:
    typ = parser.type_()
    parser.expect_end("the type")
    return typ


def parse(text: str, filename: str | None = None) -> ir.Program:
    """The program in ``text`` (Unicode or ASCII spelling); raises ParseError."""
    return _run(text, filename, _program)


def parse_expr(text: str, filename: str | None = None) -> ir.Expr:
    """One expression, e.g. ``a + b × ⟪I, 1⟫(c)``; raises ParseError."""
    return _run(text, filename, _expression)


def parse_type(text: str, filename: str | None = None) -> ir.TensorType:
    """One type ``tensor<…>``; raises ParseError."""
    return _run(text, filename, _type)
