"""Tests of the text syntax: parser, printer and their round trip."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorir_dace import ir
from tensorir_dace.errors import ParseError, SourceLoc
from tensorir_dace.syntax import format, parse, parse_expr, parse_type

EXAMPLES = Path(__file__).resolve().parent.parent / "sdfg_examples"
EXAMPLE_NAMES = ["laplacian", "tridiagonal", "nabla", "fencil_cos", "fencil_cos_tmp"]


def S(name):
    return ir.Sym(name)


def L(value):
    return ir.Literal(value)


def C(func, *args):
    return ir.Call(S(func) if isinstance(func, str) else func, tuple(args))


def example(name: str) -> ir.Program:
    path = EXAMPLES / f"{name}.tir"
    return parse(path.read_text(), str(path))


def roundtrip(node, parse_fn):
    for ascii_ in (False, True):
        text = format(node, ascii=ascii_)
        if ascii_:
            assert text.isascii(), text
        again = parse_fn(text)
        assert again == node, text


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_examples_parse_and_roundtrip(name):
    text = (EXAMPLES / f"{name}.tir").read_text()
    assert text.count("\n") == 1  # verbatim single line from the design document
    program = example(name)
    roundtrip(program, parse)


def test_laplacian_structure():
    p = example("laplacian")
    assert p.name == "laplacian"
    assert [q.name for q in p.params] == ["out", "inp"]
    assert p.params[1].type.dims[0] == ir.Dim("IDim", -1, 6)
    assert len(p.body) == 1
    stmt = p.body[0]
    assert stmt.target == S("out")
    assert isinstance(stmt.value, ir.Call) and isinstance(stmt.value.func, ir.Lambda)
    assert stmt.value.args == (S("inp"),)
    shifts = [n for n in ir.walk(p) if isinstance(n, ir.Call) and n.func == S("shift")]
    assert shifts[0].args == (S("i"), L(-1), S("i"), L(1), S("i"), L(-1))


def test_tridiagonal_structure():
    p = example("tridiagonal")
    nodes = list(ir.walk(p))
    assert sum(1 for n in nodes if n == S("scan")) == 2
    assert S("make_tuple") in nodes
    assert not any(isinstance(n, ir.Sym) and n.name.startswith("__") for n in nodes)
    cpdp = next(n for n in nodes if isinstance(n, ir.Param) and n.name == "cpdp")
    assert cpdp.type.dtype == ir.TupleType((ir.FLOAT64, ir.FLOAT64))
    assert C("tuple_get", S("cpdp"), L(1)) in nodes
    assert L(False) in nodes and L(True) in nodes


def test_nabla_structure():
    p = example("nabla")
    first = p.params[0]
    assert first.name == "n_nodes"
    assert first.type == ir.TensorType(ir.INT64) and first.type.dims == ()
    e2v = p.param("E2V")
    assert e2v.type.dims[1].name == "_NB_Vertex"
    nodes = list(ir.walk(p))
    assert sum(1 for n in nodes if n == S("reduce")) == 2
    assert C(C("shift", S("E2V"), L(0)), S("pp_")) in nodes
    assert C(C("shift", S("V2E")), C(ir.Lambda(
        (ir.Param("pp_", ir.TensorType(ir.FLOAT64, (ir.Dim("Vertex", 0, 5440),))),
         ir.Param("S_M", ir.TensorType(ir.FLOAT64, (ir.Dim("Edge", 0, 16167),)))),
        C("multiplies", S("S_M"), C("multiplies", L(0.5), C(
            "plus", C(C("shift", S("E2V"), L(0)), S("pp_")),
            C(C("shift", S("E2V"), L(1)), S("pp_")))))), S("pp"), S("S_MXX"))) in nodes


def test_fencil_examples():
    p = example("fencil_cos")
    assert p.params[0].type.dims == (ir.Dim("I", 1, 99),)
    assert len(p.body) == 1
    q = example("fencil_cos_tmp")
    assert [s.target for s in q.body] == [S("tmp"), S("out")]  # no semicolons needed
    assert C(C("shift", S("I"), L(-1)), S("y")) in list(ir.walk(q))


# --------------------------------------------------------------------------- every construct

EVERYTHING = """\
# a program using every construct of the syntax
everything(
    n: tensor<int>,           # scalar
    flag: tensor<bool>,
    a: tensor<float, IDim[0:N], JDim[-1:M+1]>,
    b: tensor<float32, IDim[0:2*N]>,
    t: tensor<((float, int32), bool), _NB_0[0:7], KDim[-N+5:N]>,
    E2V: tensor<int64, Edge[0:E], _NB_Vertex[0:2]>,
) {
    tmp: tensor<float, IDim[0:N], JDim[0:M]>;
    tmp ← a + a × a - a / a % a
    subset(b, IDim[1:N-1]) ← cast(-b, float32);
    tmp ← ⟪iₒ, -1ₒ, iₒ, 1ₒ⟫(a) - ⟪IDim, 1⟫(a) + -1 - -2.5 + 1e-3 × 2.5E+4 + 1.;;
    if (n > 0 ∧ ¬flag ∨ n ≤ 3) {
        tmp ← if(a ≥ 0.0, a, -a)
        lut: tensor<float, IDim[0:N]>
    } else if (n == 1 ∨ n ≠ 2) {
        tmp ← reduce(λ(acc: tensor<float>, x: tensor<float>) → acc + x, 0.0)(⟪E2V⟫(a));
    } else {
        for (k in 0:n - 1) {
            tmp ← (λ(x: tensor<float, IDim[0:N]>, y: tensor<float>) → x × y)(a, 2.0);
            b ← cartesian_shift(IDim, 1)(b)
        }
    }
    tmp ← make_tuple(t[0][1], t[1])[0] < 1 ∧ pos(IDim, a) > 2 ∧ index(JDim, a) != 0;
    tmp ← add_dim(KDim, 0, 5, a)
    tmp ← - -a + -(1) + -(-1) + f(a)(b)(1, 2)
}
"""

EVERYTHING_ASCII = """\
everything(
    n: tensor<int64>, flag: tensor<bool>,
    a: tensor<float64, IDim[0:N], JDim[-1:1+M]>,
    b: tensor<float32, IDim[0:N*2]>,
    t: tensor<((float64, int32), bool), _NB_0[0:7], KDim[5-N:N]>,
    E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>
) {
    tmp: tensor<float, IDim[0:N], JDim[0:M]>
    lut: tensor<float, IDim[0:N]>
    tmp <- a + a * a - a / a % a
    __subset(b, IDim[1:N-1]) <- __cast(-b, float32)
    tmp <- <<i, -1, i, 1>>(a) - <<IDim, 1>>(a) + -1 - -2.5 + 0.001 * 25000.0 + 1.0
    if (n > 0 && !flag || n <= 3) { tmp <- __if(a >= 0.0, a, -a) }
    else { if (n == 1 || n != 2) {
        tmp <- __reduce(lambda(acc: tensor<float>, x: tensor<float>) -> acc + x, 0.0)(<<E2V>>(a))
    } else {
        for (k in 0:n - 1) {
            tmp <- (lambda(x: tensor<float, IDim[0:N]>, y: tensor<float>) -> x * y)(a, 2.0)
            b <- __cartesian_shift(IDim, 1)(b)
        }
    } }
    tmp <- __make_tuple(t[0][1], t[1])[0] < 1 && __pos(IDim, a) > 2 && pos(JDim, a) != 0
    tmp <- __add_dim(KDim, 0, 5, a)
    tmp <- - -a + -(1) + -(-1) + f(a)(b)(1, 2)
}
"""


def test_every_construct_roundtrips():
    p = parse(EVERYTHING)
    roundtrip(p, parse)
    assert [t.name for t in p.temporaries] == ["tmp", "lut"]  # also from nested bodies
    assert len(p.params) == 6
    a = p.param("a").type
    assert a.dims[1] == ir.Dim("JDim", -1, ir.size_symbol("M") + 1)
    assert p.param("b").type.dims[0].stop == 2 * ir.size_symbol("N")
    t = p.param("t").type
    assert t.dtype == ir.TupleType((ir.TupleType((ir.FLOAT64, ir.INT32)), ir.BOOL))
    assert t.dims[1].start == 5 - ir.size_symbol("N")
    assert p.body[1].target == C("subset", S("b"), ir.DimInterval(
        "IDim", 1, ir.size_symbol("N") - 1))
    if_stmt = p.body[3]
    assert isinstance(if_stmt, ir.IfStmt)
    assert len(if_stmt.else_body) == 1 and isinstance(if_stmt.else_body[0], ir.IfStmt)
    loop = if_stmt.else_body[0].else_body[0]
    assert isinstance(loop, ir.ForStmt) and loop.var == "k"
    assert loop.start == L(0) and loop.stop == C("minus", S("n"), L(1))
    assert loop.body[1].value == C(C("cartesian_shift", S("IDim"), L(1)), S("b"))


def test_ascii_and_unicode_spellings_agree():
    assert parse(EVERYTHING_ASCII) == parse(EVERYTHING)


def test_printer_layout():
    p = parse(EVERYTHING)
    text = format(p)
    lines = text.splitlines()
    assert lines[0] == "everything("
    assert lines[1] == "    n: tensor<int64>,"
    assert lines[7] == ") {"
    assert lines[8] == "    tmp: tensor<float64, IDim[0:N], JDim[0:M]>;"
    assert lines[9] == "    lut: tensor<float64, IDim[0:N]>;"
    assert lines[10] == "    tmp ← a + a × a - a / a % a;"
    assert "    } else if (n == 1 ∨ n ≠ 2) {" in lines
    assert "        for (k in 0:n - 1) {" in lines
    assert lines[-1] == "}"
    assert "JDim[-1:M+1]" in text and "IDim[0:2*N]" in text and "KDim[5-N:N]" in text
    ascii_text = format(p, ascii=True)
    assert ascii_text.isascii()
    assert "tmp <- a + a * a - a / a % a;" in ascii_text
    assert "<<i, -1, i, 1>>(a)" in ascii_text
    assert "lambda(acc: tensor<float64>, x: tensor<float64>) -> acc + x" in ascii_text


# --------------------------------------------------------------------------- expressions


@pytest.mark.parametrize("text, expected", [
    ("a + b × c", C("plus", S("a"), C("multiplies", S("b"), S("c")))),
    ("a × b + c", C("plus", C("multiplies", S("a"), S("b")), S("c"))),
    ("a - b - c", C("minus", C("minus", S("a"), S("b")), S("c"))),
    ("a - (b - c)", C("minus", S("a"), C("minus", S("b"), S("c")))),
    ("a / b % c", C("mod", C("divides", S("a"), S("b")), S("c"))),
    ("¬a ∧ b", C("and", C("not", S("a")), S("b"))),
    ("!a && b", C("and", C("not", S("a")), S("b"))),
    ("a < b ∧ c > d", C("and", C("less", S("a"), S("b")), C("greater", S("c"), S("d")))),
    ("a ∨ b ∧ c", C("or", S("a"), C("and", S("b"), S("c")))),
    ("a == b + 1", C("eq", S("a"), C("plus", S("b"), L(1)))),
    ("-a × b", C("multiplies", C("neg", S("a")), S("b"))),
    ("-x[0]", C("neg", C("tuple_get", S("x"), L(0)))),
    ("-1", L(-1)),
    ("-2.5", L(-2.5)),
    ("-(1)", C("neg", L(1))),
    ("- -1", C("neg", L(-1))),
    ("-1[0]", C("neg", C("tuple_get", L(1), L(0)))),
    ("x < -1", C("less", S("x"), L(-1))),
    ("a - -1ₒ", C("minus", S("a"), L(-1))),
    ("1.", L(1.0)), ("1e-3", L(0.001)), ("2.5E+4", L(25000.0)), ("1.0e10", L(1e10)),
    ("0ₒ", L(0)), ("iₒ", S("i")), ("True", L(True)), ("False", L(False)),
    ("__scan", S("scan")), ("__make_tuple", S("make_tuple")), ("index", S("pos")),
    ("cast(x, float32)", C("cast", S("x"), S("float32"))),
    ("reduce(f, 0.0)(x, y)", C(C("reduce", S("f"), L(0.0)), S("x"), S("y"))),
    ("f(a)(b)", C(C("f", S("a")), S("b"))),
    ("f()", C("f")),
    ("x[1][0]", C("tuple_get", C("tuple_get", S("x"), L(1)), L(0))),
    ("f(x)[1]", C("tuple_get", C("f", S("x")), L(1))),
    ("subset(x, I[1:4], J[0:3])",
     C("subset", S("x"), ir.DimInterval("I", 1, 4), ir.DimInterval("J", 0, 3))),
    ("⟪I, 1⟫(x)", C(C("shift", S("I"), L(1)), S("x"))),
    ("<<E2V, 0>>(x)", C(C("shift", S("E2V"), L(0)), S("x"))),
    ("⟪V2E⟫(x)[0]", C("tuple_get", C(C("shift", S("V2E")), S("x")), L(0))),
    ("if(c, a, b)", C("if", S("c"), S("a"), S("b"))),
    ("λ(x: tensor<float>) → x + 1",
     ir.Lambda((ir.Param("x", ir.TensorType(ir.FLOAT64)),), C("plus", S("x"), L(1)))),
    ("(lambda(x: tensor<float>) -> x)(a, b)",
     C(ir.Lambda((ir.Param("x", ir.TensorType(ir.FLOAT64)),), S("x")), S("a"), S("b"))),
    ("f(λ() → a, b)", C("f", ir.Lambda((), S("a")), S("b"))),
    ("a ≤ b", C("less_equal", S("a"), S("b"))),
    ("a >= b", C("greater_equal", S("a"), S("b"))),
    ("a ≠ b", C("neq", S("a"), S("b"))),
    ("a − b", C("minus", S("a"), S("b"))),
])
def test_parse_expr(text, expected):
    assert parse_expr(text) == expected
    roundtrip(expected, parse_expr)


@pytest.mark.parametrize("expr, text, ascii_text", [
    (C("minus", S("a"), C("minus", S("b"), S("c"))), "a - (b - c)", None),
    (C("minus", C("minus", S("a"), S("b")), S("c")), "a - b - c", None),
    (C("multiplies", C("plus", S("a"), S("b")), S("c")), "(a + b) × c", "(a + b) * c"),
    (C("eq", C("less", S("a"), S("b")), S("c")), "(a < b) == c", None),
    (C("neg", L(-1)), "-(-1)", None),
    (C("neg", L(1)), "-(1)", None),
    (C("neg", C("neg", S("x"))), "-(-x)", None),
    (C("not", C("and", S("a"), S("b"))), "¬(a ∧ b)", "!(a && b)"),
    (C("tuple_get", L(-1), L(0)), "(-1)[0]", None),
    (C("tuple_get", C("plus", S("a"), S("b")), L(1)), "(a + b)[1]", None),
    (C(C("cartesian_shift", S("I"), L(1)), S("x")), "cartesian_shift(I, 1)(x)", None),
    (C(C("shift", S("I"), L(-1)), S("x")), "⟪I, -1⟫(x)", "<<I, -1>>(x)"),
    (C(C("shift", S("I"), S("n")), S("x")), "⟪I, n⟫(x)", "<<I, n>>(x)"),
    (C(C("shift", S("I"), C("plus", S("n"), L(1))), S("x")), "⟪I, n + 1⟫(x)", "<<I, n + 1>>(x)"),
    (C("plus", S("a"), ir.Lambda((), S("b"))), "a + (λ() → b)", "a + (lambda() -> b)"),
    (L(1e-10), "1e-10", None),
    (L(float("inf")), "1e999", None),
    (L(2.0), "2.0", None),
    (L(True), "True", None),
    (C("less", S("x"), L(-1)), "x < -1", None),
])
def test_format_expr(expr, text, ascii_text):
    assert format(expr) == text
    assert format(expr, ascii=True) == (ascii_text or text)
    roundtrip(expr, parse_expr)


def test_format_types_and_bounds():
    N, M = ir.size_symbol("N"), ir.size_symbol("M")
    t = ir.TensorType(ir.TupleType((ir.FLOAT32, ir.TupleType((ir.INT64, ir.BOOL)))),
                      (ir.Dim("I", -N + 5, 2 * N), ir.Dim("J", M + 1, N * M),
                       ir.Dim("K", -2 * N - 3, N * N), ir.Dim("_NB_0", 0, 7)))
    text = format(t)
    assert text == ("tensor<(float32, (int64, bool)), I[5-N:2*N], J[M+1:M*N], K[-2*N-3:N*N], "
                    "_NB_0[0:7]>")
    assert parse_type(text) == t
    assert format(t.dims[0]) == "I[5-N:2*N]"
    assert format(ir.FLOAT64) == "float64"
    assert format(ir.Param("x", t)) == "x: " + text
    assert parse_type("tensor<float, I[2*(N+1):-(M - 1)]>").dims[0] == ir.Dim(
        "I", 2 * N + 2, 1 - M)
    assert parse_type("tensor<int>") == ir.TensorType(ir.INT64)


def test_format_statements():
    s = ir.IfStmt(C("greater", S("n"), L(0)), (ir.Assign(S("x"), L(1.0)),),
                  (ir.Assign(S("x"), L(2.0)),))
    assert format(s) == "if (n > 0) {\n    x ← 1.0;\n} else {\n    x ← 2.0;\n}"
    f = ir.ForStmt("t", L(0), S("n"), (ir.Assign(S("u"), C(C("shift", S("I"), L(1)), S("u"))),))
    assert format(f, ascii=True) == "for (t in 0:n) {\n    u <- <<I, 1>>(u);\n}"
    p = ir.Program("empty", ())
    assert format(p) == "empty() {\n}\n"
    assert parse(format(p)) == p


# --------------------------------------------------------------------------- locations


def test_locations_point_at_first_token():
    text = "prog(\n  x: tensor<float>\n) {\n  x ← (a + b) × -c[0]\n}"
    p = parse(text, "f.tir")
    assert p.loc == SourceLoc(1, 1, "f.tir")
    assert p.params[0].loc == SourceLoc(2, 3, "f.tir")
    stmt = p.body[0]
    assert stmt.loc == SourceLoc(4, 3, "f.tir")
    assert stmt.target.loc == SourceLoc(4, 3, "f.tir")
    mul = stmt.value
    assert mul.func == S("multiplies")
    assert mul.loc == SourceLoc(4, 7, "f.tir")       # the '(' of '(a + b)'
    assert mul.func.loc == SourceLoc(4, 15, "f.tir")  # the '×'
    plus = mul.args[0]
    assert plus.loc == SourceLoc(4, 8, "f.tir")
    assert plus.args[1].loc == SourceLoc(4, 12, "f.tir")
    neg = mul.args[1]
    assert neg.func == S("neg") and neg.loc == SourceLoc(4, 17, "f.tir")
    assert neg.args[0].loc == SourceLoc(4, 18, "f.tir")  # tuple_get starts at 'c'


def test_locations_in_examples():
    p = example("laplacian")
    lam = p.body[0].value.func
    assert isinstance(lam, ir.Lambda)
    text = (EXAMPLES / "laplacian.tir").read_text()
    assert text[lam.loc.column - 1] == "λ"
    for node in ir.walk(p):
        assert node.loc is not None and node.loc.filename.endswith("laplacian.tir")
        assert node.loc.line == 1


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("text, message", [
    ("p(x: tensor<float>) {\n  x ← f(a, b {\n}",
     r"2:14: expected ',' or '\)' to close the call opened at 2:8, found '\{'"),
    ("p(x: tensor<flaot>) {}", r"1:13: unknown element type 'flaot' \(did you mean 'float'"),
    ("p(x: tensor<quux>) {}", r"1:13: unknown element type 'quux' \(known: float"),
    ("p(x: float) {}", r"1:6: expected a type 'tensor<…>', found 'float' \(a scalar is "
                       r"written 'tensor<float>'\)"),
    ("p(x: tensor<float, I[0:N]) {}",
     r"1:26: expected ',' or '>' to close the 'tensor<' opened at 1:12, found '\)'"),
    ("p(x: tensor<float, I[0:1.5]>) {}", r"1:24: expected an interval bound"),
    ("p(x: tensor<float, I[0 N]>) {}", r"1:24: expected ':' between the start and stop"),
    ("p(x: tensor<float>) {\n  x ← a $ b\n}", r"2:9: unexpected character '\$'"),
    ("p(x: tensor<float>) {\n  x = 1\n}", r"2:5: unexpected character '='; use '←'"),
    ("p(x: tensor<float>) {\n  x ← a +\n}", r"3:1: expected an expression, found '\}'"),
    ("p(x: tensor<float>) {\n  x ← 1\n", r"3:1: expected '\}' to close the program body "
                                        r"opened at 1:21, found end of input"),
    ("p(x: tensor<float>) {\n  x ← a < b < c\n}",
     r"2:13: comparisons do not chain: put parentheses"),
    ("p(x: tensor<float>) {\n  x ← (a, b)\n}",
     r"2:9: expected '\)' to close the '\(' opened at 2:7, found ',' \(there are no tuple"),
    ("p(x: tensor<float>) {\n  x ← if(x<-1, a, b)\n}",
     r"2:11: expected ',' or '\)' .*found '<-' \(write 'x < -1', with a space"),
    ("p(x: tensor<float>) {\n  x ← ⟪I, 1.5⟫(x)\n}",
     r"2:11: expected a dimension, a neighbour table or an integer offset in the shift "
     r"opened at 2:7, found '1.5'"),
    ("p(x: tensor<float>) {\n  x ← ⟪I, 1⟫\n}", r"3:1: expected '\(' after the shift"),
    ("p(x: tensor<float>) {\n  x ← x[i]\n}", r"2:9: expected an integer literal as the "
                                             r"tuple index"),
    ("p(x: tensor<float>) {\n  f(x) ← 1\n}", r"2:3: the target of an assignment must be"),
    ("p(x: tensor<float>) {\n  x 1\n}", r"2:5: expected '←' \(or '<-'\) to assign to 'x'"),
    ("p(x: tensor<float>) {\n  for (t 0:3) {}\n}", r"2:10: expected 'in' after the loop "
                                                   r"variable 't'"),
    ("p(x: tensor<float>) {\n  if (x) {} else x ← 1\n}",
     r"2:18: expected '\{' after 'else', found 'x'"),
    ("p(x: tensor<float>) {} extra", r"1:24: expected end of input after the program's"),
    ("p(x tensor<float>) {}", r"1:5: expected ':' after the parameter name 'x'"),
    ("p(x: tensor<float>) {\n  x ← λ(y) → y\n}", r"2:10: expected ':' after the "
                                                 r"parameter name 'y'"),
    ("p(x: tensor<float>) {\n  x ← 2N\n}", r"2:7: invalid number '2N'"),
    ("p(x: tensor<float>) {\n  x ← 1e+\n}", r"2:7: invalid number '1e\+': the exponent"),
    ("p(x: tensor<float>) {\n  x ← ₒ\n}", r"2:7: unexpected 'ₒ'"),
    ("", r"1:1: expected the program name"),
])
def test_errors(text, message):
    with pytest.raises(ParseError, match=message):
        parse(text)


def test_subset_target_must_be_subset_of_name():
    with pytest.raises(ParseError, match=r"2:3: the target of an assignment must be"):
        parse("p(x: tensor<float>) {\n  subset(y, 1) ← 1\n}")


def test_error_carries_location_and_filename():
    with pytest.raises(ParseError) as info:
        parse("p(x: tensor<float>) {\n  x ← @\n}", "prog.tir")
    assert info.value.loc == SourceLoc(2, 7, "prog.tir")
    assert str(info.value).startswith("prog.tir:2:7: unexpected character '@'")


def test_parse_expr_and_type_errors():
    with pytest.raises(ParseError, match=r"1:1: expected an expression, found end of input"):
        parse_expr("")
    with pytest.raises(ParseError, match=r"1:3: expected end of input after the expression"):
        parse_expr("a b")
    with pytest.raises(ParseError, match=r"1:14: expected end of input after the type"):
        parse_type("tensor<bool> x")
    with pytest.raises(ParseError, match=r"1:2001: the expression nests more than 2000 levels"):
        parse_expr("(" * 5000 + "a" + ")" * 5000)


# --------------------------------------------------------------------------- property test

_NAMES = st.sampled_from(["a", "b", "x_1", "IDim", "_NB_0", "cos", "if", "make_tuple",
                          "reduce", "scan", "shift", "plus", "neg", "not", "tuple_get",
                          "float32", "for", "in", "else", "tensor", "Ünïcödé"])
_INTS = st.integers(min_value=-10**6, max_value=10**20)
_FLOATS = st.floats(allow_nan=False)
_LEAVES = st.one_of(
    _NAMES.map(ir.Sym),
    _INTS.map(ir.Literal),
    _FLOATS.map(ir.Literal),
    st.booleans().map(ir.Literal),
    st.builds(lambda n, a, b: ir.DimInterval(n, a, b), st.sampled_from(["I", "_NB_1"]),
              st.integers(-3, 3), st.sampled_from([ir.size_symbol("N") + 1, sympy.Integer(4)])),
)
_OPS = ["plus", "minus", "multiplies", "divides", "mod", "eq", "neq", "less",
        "less_equal", "greater", "greater_equal", "and", "or"]
_TYPE = ir.TensorType(ir.FLOAT64, (ir.Dim("I", 0, ir.size_symbol("N")),))
_OFFSETS = st.lists(st.one_of(st.sampled_from(["I", "E2V", "i"]).map(ir.Sym),
                              st.integers(-3, 3).map(ir.Literal)), min_size=1, max_size=3)


def _extend(children):
    return st.one_of(
        st.builds(lambda op, a, b: C(op, a, b), st.sampled_from(_OPS), children, children),
        st.builds(lambda op, a: C(op, a), st.sampled_from(["neg", "not"]), children),
        st.builds(lambda a, i: C("tuple_get", a, ir.Literal(i)), children, st.integers(-2, 3)),
        st.builds(lambda f, args: ir.Call(f, tuple(args)), children,
                  st.lists(children, max_size=3)),
        st.builds(lambda offs, x: C(C("shift", *offs), x), _OFFSETS, children),
        st.builds(lambda names, body: ir.Lambda(
            tuple(ir.Param(n, _TYPE) for n in names), body),
            st.lists(st.sampled_from(["p", "q"]), max_size=2), children),
    )


_EXPRS = st.recursive(_LEAVES, _extend, max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(_EXPRS)
def test_expression_roundtrip_property(expr):
    for ascii_ in (False, True):
        text = format(expr, ascii=ascii_)
        assert parse_expr(text) == expr, text


@settings(max_examples=50, deadline=None)
@given(st.floats(allow_nan=False))
def test_float_literals_roundtrip_exactly(value):
    again = parse_expr(format(ir.Literal(value)))
    assert isinstance(again, ir.Literal) and again.kind == "float"
    assert again.value == value and math.copysign(1, again.value) == math.copysign(1, value)


_BIG_EXPRS = st.recursive(_LEAVES, _extend, max_leaves=60)


@settings(max_examples=60, deadline=None)
@given(_BIG_EXPRS, _BIG_EXPRS)
def test_program_roundtrip_property_with_line_breaking(value, cond):
    body = (ir.IfStmt(cond, (ir.Assign(S("x"), value),),
                      (ir.ForStmt("t", L(0), value, (ir.Assign(S("y"), value),)),)),)
    p = ir.Program("p", (ir.Param("x", _TYPE),), (ir.Param("y", _TYPE),), body)
    for ascii_ in (False, True):
        text = format(p, ascii=ascii_)
        assert parse(text) == p, text


def test_long_expressions_are_broken_over_lines():
    text = format(example("nabla"))
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "            ) / vol," in text.splitlines()


def test_docs_example_parses():
    import re
    docs = (EXAMPLES.parent / "docs" / "syntax.md").read_text()
    source = re.findall(r"```(?:text)?\n(.*?)```", docs, re.S)[0]
    p = parse(source)
    assert [t.name for t in p.temporaries] == ["tmp"]
    roundtrip(p, parse)


def test_printer_keeps_to_its_line_width():
    """No printed line is longer than WIDTH where the syntax allows a break:
    the examples and random programs (deep expressions), and the text
    round-trips."""
    from conftest import EXAMPLES
    from tensorir_dace.syntax.printer import WIDTH
    from test_random_programs import random_program
    sources = [p.read_text() for p in sorted(EXAMPLES.glob("*.tir"))]
    sources += [random_program(seed, statements=6) for seed in range(12)]
    for src in sources:
        program = parse(src)
        for ascii_ in (False, True):
            text = format(program, ascii=ascii_)
            assert max(len(line) for line in text.splitlines()) <= WIDTH, text
            assert parse(text) == program


def test_a_chain_of_bindings_stays_at_one_depth():
    """Scan bodies from the front ends bind one name per local assignment:
    ``(λ(a) → (λ(b) → …)(…))(…)``. Each binding's body stays at the depth of
    the binding, so a chain of hundreds keeps to the line width and the text
    grows with the program, not with the square of its depth."""
    from tensorir_dace.syntax.printer import WIDTH
    t = _TYPE
    names = [f"value_number_{i}" for i in range(300)]
    body: ir.Expr = S(names[-1])
    for i in reversed(range(1, len(names))):
        value = C("plus", C("multiplies", S(names[i - 1]), L(0.5)), C("sqrt", S(names[i - 1])))
        body = C(ir.Lambda((ir.Param(names[i], t),), body), value)
    p = ir.Program("p", (ir.Param("x", t), ir.Param("y", t)), (),
                   (ir.Assign(S("y"), C(ir.Lambda((ir.Param(names[0], t),), body), S("x"))),))
    text = format(p)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert max(len(line) - len(line.lstrip()) for line in lines) <= 16
    assert len(text) < 300 * 200
    assert parse(text) == p
