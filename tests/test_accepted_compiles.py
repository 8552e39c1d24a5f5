"""Regression tests: what the checker accepts compiles and agrees with the
interpreter; deep or out-of-range input gives a located TensorIRError."""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import check_against_interpreter
from tensorir_dace import ParseError, TypeCheckError, ir

F = "tensor<float, I[0:N]>"

# One compiled program for the statement-level defects: an unread temporary, a
# self-reading unread temporary, scans (both directions) over operands wider than
# the target along the scan axis, and a program-level condition with % and /.
MIXED = f"""
mixed(a: {F}, c: tensor<float, I[0:N], K[-1:L+1]>, s: tensor<int>,
      o: {F}, f: tensor<float, I[0:N], K[0:L]>, b: tensor<float, I[0:N], K[0:L]>,
      g: {F}) {{
    h: {F};
    u: {F};
    h ← a;
    u ← a;
    u ← u + ⟪I, 0⟫(u);
    o ← a × 2.0;
    f ← scan(λ(st: {F}, x: {F}) → 0.5 × st + x, True, 0.0)(c);
    b ← scan(λ(st: {F}, x: {F}) → 0.5 × st + x, False, 1.0)(c);
    if (s % 2 == -1 ∧ s / 2 == -1) {{ g ← a }} else {{ g ← a + 1.0 }}
}}
"""


def _scan(c, forward, init):
    out, state = np.empty_like(c), np.full(c.shape[0], init)
    levels = range(c.shape[1]) if forward else range(c.shape[1] - 1, -1, -1)
    for k in levels:
        state = 0.5 * state + c[:, k]
        out[:, k] = state
    return out


@pytest.mark.parametrize("s", [-3, 3])
def test_unread_temporaries_wide_scans_and_mod_conditions_compile(s):
    prog = tir.parse(MIXED)
    rng = np.random.default_rng(1)
    args = dict(a=rng.random(4), c=rng.random((4, 5)), s=s, o=np.zeros(4),
                f=np.zeros((4, 3)), b=np.zeros((4, 3)), g=np.zeros(4))
    out, ref = check_against_interpreter(MIXED, args=args)
    # the scans start at the operand's first (last) level k = -1 (k = L), not at 0
    np.testing.assert_allclose(ref["f"], _scan(args["c"], True, 0.0)[:, 1:4])
    np.testing.assert_allclose(ref["b"], _scan(args["c"], False, 1.0)[:, 1:4])
    # C semantics: -3 % 2 == -1 and -3 / 2 == -1
    np.testing.assert_allclose(ref["g"], args["a"] if s == -3 else args["a"] + 1.0)
    assert prog.name == "mixed"


# Temporaries read before a statement has written them, and writes nothing
# reads afterwards: a temporary holds zeros until written (the interpreter's
# rule), and a dead write after the last read is not lowered.
READ_BEFORE_WRITE = f"""
early(a: {F}, o: {F}, q: {F}, r: {F}, s: tensor<int>) {{
    h: {F};
    w: tensor<float, I[-1:N+1]>;
    z: {F};
    o ← h + a;
    h ← a × 2.0;
    subset(w, I[0:N]) ← a;
    q ← ⟪I, -1⟫(w) + ⟪I, 1⟫(w);
    if (s > 0) {{ z ← a }} else {{ r ← a }};
    r ← z + 1.0;
    z ← a × 3.0
}}
"""


@pytest.mark.parametrize("s", [0, 1])
def test_temporaries_read_before_they_are_written_hold_zeros(s):
    rng = np.random.default_rng(2)
    a = rng.random(5)
    args = dict(a=a, o=np.full(5, 9.0), q=np.full(5, 9.0), r=np.full(5, 9.0), s=s)
    out, ref = check_against_interpreter(READ_BEFORE_WRITE, args=args)
    np.testing.assert_array_equal(ref["o"], a)                       # h is zero when read
    halo = np.concatenate([[0.0], a, [0.0]])                         # w's halo stays zero
    np.testing.assert_array_equal(ref["q"], halo[:-2] + halo[2:])
    np.testing.assert_array_equal(ref["r"], (a if s > 0 else 0.0) + 1.0)


MESH = """
p(v2: tensor<float, V[0:3]>, E2V: tensor<int, E[0:3], _NB_V[0:2]>,
  V2E: tensor<int, V[0:3], _NB_E[0:2]>, o: tensor<float, V[0:3]>,
  d: tensor<bool, V[0:3]>, e: tensor<bool, V[0:3]>, q: tensor<bool, V[0:3]>) {
    o ← if(can_deref(⟪V2E, 1⟫(if(can_deref(⟪E2V, 1⟫(v2)), ⟪E2V, 1⟫(v2), 0.0))),
           shift_apply(1)(⟪V2E⟫(if(can_deref(⟪E2V, 1⟫(v2)), ⟪E2V, 1⟫(v2), 0.0))), -9.0);
    d ← can_deref(⟪V2E, 1⟫(⟪E2V, 1⟫(v2)));
    e ← can_deref(⟪V2E, 1⟫(if(can_deref(⟪E2V, 1⟫(v2)), ⟪E2V, 1⟫(v2), 0.0)));
    q ← can_deref(⟪V2E, 1⟫(⟪E2V, 0⟫(v2) + cast(⟪E2V, 1⟫(v2) > 0.0, float)))
}
"""


def test_presence_of_a_select_comes_from_the_chosen_branch():
    """``if(c, a, b)`` is present where ``c`` and the branch it selects are; the
    unguarded chain stays absent wherever one table entry is."""
    args = dict(v2=np.array([10.0, 20.0, 30.0]), E2V=np.array([[0, 1], [1, -1], [2, 0]]),
                V2E=np.array([[0, 1], [1, 2], [2, -1]]), o=np.zeros(3),
                d=np.zeros(3, bool), e=np.zeros(3, bool), q=np.zeros(3, bool))
    out, ref = check_against_interpreter(MESH, args=args)
    np.testing.assert_array_equal(ref["o"], [0.0, 10.0, -9.0])
    np.testing.assert_array_equal(ref["d"], [False, True, False])
    np.testing.assert_array_equal(ref["e"], [True, True, False])
    # element-wise operations propagate absence from any operand, in compiled code too
    np.testing.assert_array_equal(out["q"], [False, True, False])


def _sum_program(terms: int) -> str:
    return f"p(a: {F}, o: {F}) {{ o ← {' + '.join(['a'] * terms)} }}"


def test_a_sum_of_a_thousand_terms_goes_through_every_stage():
    src = _sum_program(1000)
    prog = tir.parse(src)
    typed = tir.check(prog)
    assert tir.parse(tir.format(typed)) == prog
    a = np.arange(5.0)
    out, ref = check_against_interpreter(src, args=dict(a=a, o=np.zeros(5)))
    np.testing.assert_allclose(ref["o"], 1000 * a)


@pytest.mark.parametrize("text", ["-" * 1500 + "a", "¬" * 1500 + "(a > 0.0)"],
                         ids=["neg", "not"])
def test_long_prefix_chains_check(text):
    typed = tir.check(tir.parse(f"p(a: {F}, o: tensor<bool, I[0:N]>, f: {F}) {{ f ← a; "
                                f"{'o' if '¬' in text else 'f'} ← {text} }}"))
    assert len(tir.format(typed)) > 1500


@pytest.mark.parametrize("text,where", [
    ("(" * 2500 + "a" + ")" * 2500, r"1:2061: the expression nests more than 2000"),
    ("-" * 2500 + "a", r"1:2061: the expression nests more than 2000"),
    (" + ".join(["a"] * 2100), r"1:\d+: expressions nest more than 2000"),
], ids=["parentheses", "prefix", "sum"])
def test_nesting_beyond_the_limit_is_a_located_parse_error(text, where):
    with pytest.raises(ParseError, match=where):
        tir.parse(f"p(a: {F}, o: {F}) {{ o ← {text} }}")


def test_programs_built_deeper_than_the_limit_are_refused_by_the_checker():
    e: ir.Expr = ir.Sym("a")
    for _ in range(ir.MAX_DEPTH + 1):
        e = ir.Call(ir.Sym("neg"), (e,))
    prog = tir.parse(f"p(a: {F}, o: {F}) {{ o ← a }}")
    deep = ir.Program(prog.name, prog.params, body=(ir.Assign(ir.Sym("o"), e),))
    with pytest.raises(TypeCheckError, match="nest more than 2000"):
        tir.check(deep)


@pytest.mark.parametrize("dtype,literal,loc", [
    ("int", "99999999999999999999", "1:33"),
    ("int", "-9223372036854775809", "1:33"),
    pytest.param("int", "9" * 5000, "1:33", id="5000-digits"),
    ("int32", "10000000000", "1:35"),
    ("int32", "2147483648", "1:35"),
])
def test_integer_literals_outside_their_type_are_located_type_errors(dtype, literal, loc):
    prog = tir.parse(f"p(o: tensor<{dtype}, I[0:N]>) {{ o ← {literal} }}")
    with pytest.raises(TypeCheckError, match=f"^{loc}: the integer literal .* does not fit "
                                             f"in {dtype if dtype != 'int' else 'int64'}"):
        tir.check(prog)
    assert tir.parse(tir.format(prog)) == prog


def test_integer_literals_at_the_edge_of_their_type_are_accepted():
    tir.check(tir.parse("p(o: tensor<int32, I[0:N]>, q: tensor<int, I[0:N]>) { "
                        "o ← -2147483648 + 2147483647; q ← 9223372036854775807 }"))


SIGNED_ZEROS = f"""
zeros(a: {F}, b: {F}, o: {F}, q: {F}, z: {F}) {{
    o ← -(a / (b - b));
    q ← a / -(b - b);
    z ← -(b - b)
}}
"""


def test_division_by_zero_keeps_ieee_signs():
    """Compiled code keeps signed zeros (DaCe's default -fno-signed-zeros is
    dropped): -(x / +0) is -inf for x > 0, as in the interpreter and NumPy."""
    a, b = np.array([1.0, -2.0, 0.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0])
    args = dict(a=a, b=b, o=np.zeros(4), q=np.zeros(4), z=np.ones(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        out, ref = check_against_interpreter(SIGNED_ZEROS, args=args)
        np.testing.assert_array_equal(ref["o"], -(a / (b - b)))
        np.testing.assert_array_equal(ref["q"], a / -(b - b))
    for name in ("o", "q", "z"):        # the sign of a NaN means nothing
        numbers = ~np.isnan(ref[name])
        np.testing.assert_array_equal(np.signbit(out[name])[numbers],
                                      np.signbit(ref[name])[numbers])


# A parameter named ``t`` beside the transient ``_t`` that holds ``a × b`` for
# the gather (without optimisation): both were read through one connector name.
NAMED_LIKE_A_TRANSIENT = """
named(a: tensor<float, Edge[0:NE]>, b: tensor<float, Edge[0:NE]>,
      t: tensor<float, Vertex[0:NV], _NB_0[0:3]>,
      V2E: tensor<int, Vertex[0:NV], _NB_Edge[0:3]>, out: tensor<float, Vertex[0:NV]>) {
  out ← reduce(λ(acc: tensor<float, Vertex[0:NV]>, p: tensor<float, Vertex[0:NV]>,
                 q: tensor<float, Vertex[0:NV]>) → acc + p × q, 0.0)(⟪V2E⟫(a × b), t)
}
"""


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_a_parameter_named_like_a_transient_compiles(optimize):
    rng = np.random.default_rng(5)
    v2e = rng.integers(-1, 6, (4, 3))
    args = {"a": rng.random(6), "b": rng.random(6), "t": rng.random((4, 3)), "V2E": v2e,
            "out": np.zeros(4)}
    out, _ = check_against_interpreter(NAMED_LIKE_A_TRANSIENT, optimize, args=args)
    expected = np.where(v2e >= 0, (args["a"] * args["b"])[v2e] * args["t"], 0.0).sum(1)
    np.testing.assert_allclose(out["out"], expected, rtol=1e-14)


# Two materialised temporaries: the lowering's second transient must not be
# named like the tasklet locals (``_t1``) of the code that writes it.
SECOND_TRANSIENT = """
second(col: tensor<float, I[0:N], K[-1:L+1]>, ko: tensor<int32, I[0:N], K[0:L]>,
       out: tensor<float, I[0:N], K[0:L]>) {
  out ← offset_shift(K, ko)(
    if(can_deref(offset_shift(K, ko)(col)), offset_shift(K, ko)(col), 0.5))
}
"""


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_a_second_transient_is_not_named_like_a_tasklet_local(optimize):
    rng = np.random.default_rng(7)
    n, levels = 3, 6
    args = {"col": rng.random((n, levels + 2)),
            "ko": rng.integers(-3, 4, (n, levels)).astype(np.int32),
            "out": np.zeros((n, levels))}
    out, _ = check_against_interpreter(SECOND_TRANSIENT, optimize, args=args)
    k = np.arange(levels)
    inner = np.full((n, levels), np.nan)          # the temporary: col at k + ko, or 0.5
    for i in range(n):
        t = k + args["ko"][i]
        inner[i] = np.where((t >= -1) & (t < levels + 1),
                            args["col"][i, np.clip(t + 1, 0, levels + 1)], 0.5)
    expected = np.full((n, levels), np.nan)
    for i in range(n):
        t = k + args["ko"][i]
        ok = (t >= 0) & (t < levels)
        expected[i, ok] = inner[i, t[ok]]
    np.testing.assert_array_equal(np.isnan(out["out"]), np.isnan(expected))
    np.testing.assert_allclose(np.nan_to_num(out["out"]), np.nan_to_num(expected), rtol=1e-15)
