"""The NumPy interpreter against hand-written NumPy.

Every builtin, shift, reduce, scan and statement form is run through
``tensorir_dace.interpret`` on a small ``.tir`` program and compared with a
NumPy expression written out by hand.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace import ArgumentError, ir
from tensorir_dace import builders as b
from tensorir_dace.interpreter import typed_program
from tensorir_dace.interpreter.evaluate import Evaluator
from tensorir_dace.interpreter.values import Value

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "sdfg_examples"

FLOATS = ["float64", "float32"]
INTS = ["int64", "int32"]


def run(src: str, **args):
    tir.interpret(tir.parse(src), **args)


def rng(seed=0):
    return np.random.default_rng(seed)


def same(actual, expected):
    """Exact equality, same dtype, NaN == NaN."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, expected)


# --------------------------------------------------------------------------- element-wise

BINARY_FLOAT = {
    "plus": lambda a, c: a + c,
    "minus": lambda a, c: a - c,
    "multiplies": lambda a, c: a * c,
    "divides": lambda a, c: a / c,
    "mod": np.fmod,
    "power": np.power,
    "minimum": np.minimum,
    "maximum": np.maximum,
    "arctan2": np.arctan2,
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(BINARY_FLOAT))
def test_binary_float(op, dtype):
    src = f"""p(out: tensor<{dtype}, I[0:N]>, a: tensor<{dtype}, I[0:N]>,
                 c: tensor<{dtype}, I[0:N]>) {{ out <- {op}(a, c) }}"""
    r = rng()
    a = (r.random(11) * 4 - 2).astype(dtype)
    c = (r.random(11) * 3 + 0.5).astype(dtype)
    out = np.zeros(11, dtype)
    run(src, out=out, a=np.abs(a) if op == "power" else a, c=c)
    same(out, BINARY_FLOAT[op](np.abs(a) if op == "power" else a, c))


@pytest.mark.parametrize("dtype", FLOATS)
def test_float32_stays_float32_with_literals(dtype):
    # Intermediate results keep the element type: no silent float64 rounding.
    src = f"""p(out: tensor<{dtype}, I[0:7]>, a: tensor<{dtype}, I[0:7]>) {{
                out <- (a * 0.1 + 1.0 / 3.0) / a - sqrt(a) * 1.1 }}"""
    a = (rng().random(7) + 0.5).astype(dtype)
    out = np.zeros(7, dtype)
    run(src, out=out, a=a)
    t = np.dtype(dtype).type
    same(out, (a * t(0.1) + t(1.0) / t(3.0)) / a - np.sqrt(a) * t(1.1))


@pytest.mark.parametrize("dtype", INTS)
def test_int_arithmetic(dtype):
    src = f"""p(o1: tensor<{dtype}, I[0:N]>, o2: tensor<{dtype}, I[0:N]>,
                 o3: tensor<{dtype}, I[0:N]>, a: tensor<{dtype}, I[0:N]>,
                 c: tensor<{dtype}, I[0:N]>) {{
                o1 <- a + c * 3 - 1; o2 <- minimum(a, c); o3 <- maximum(a, c) }}"""
    r = rng()
    a = r.integers(-50, 50, 13).astype(dtype)
    c = r.integers(-50, 50, 13).astype(dtype)
    o1, o2, o3 = (np.zeros(13, dtype) for _ in range(3))
    run(src, o1=o1, o2=o2, o3=o3, a=a, c=c)
    same(o1, a + c * 3 - 1)
    same(o2, np.minimum(a, c))
    same(o3, np.maximum(a, c))


@pytest.mark.parametrize("dtype", INTS)
def test_int_division_truncates_and_mod_has_sign_of_dividend(dtype):
    src = f"""p(q: tensor<{dtype}, I[0:N]>, m: tensor<{dtype}, I[0:N]>,
                 a: tensor<{dtype}, I[0:N]>, c: tensor<{dtype}, I[0:N]>) {{
                q <- a / c; m <- a % c }}"""
    a = np.array([7, -7, 7, -7, 0, 6, -6, 5, -5, 1], dtype)
    c = np.array([2, 2, -2, -2, 3, 3, 3, 0, 0, 7], dtype)
    q, m = np.zeros(10, dtype), np.zeros(10, dtype)
    run(src, q=q, m=m, a=a, c=c)
    # C semantics; division and modulo by zero are defined as 0 here.
    same(q, np.array([3, -3, -3, 3, 0, 2, -2, 0, 0, 0], dtype))
    same(m, np.array([1, -1, 1, -1, 0, 0, 0, 0, 0, 1], dtype))


@pytest.mark.parametrize("dtype", INTS)
def test_int_power(dtype):
    src = f"""p(out: tensor<{dtype}, I[0:N]>, a: tensor<{dtype}, I[0:N]>,
                 c: tensor<{dtype}, I[0:N]>) {{ out <- power(a, c) }}"""
    a = np.array([2, -3, 5, 0, 1, -1, -1, 2, 0], dtype)
    c = np.array([10, 3, 0, 4, -3, -3, -2, -1, 0], dtype)
    out = np.zeros(9, dtype)
    run(src, out=out, a=a, c=c)
    same(out, np.array([1024, -27, 1, 0, 1, -1, 1, 0, 1], dtype))


MATH = {
    "neg": (np.negative, (-3, 3)), "abs": (np.abs, (-3, 3)), "sqrt": (np.sqrt, (0, 4)),
    "exp": (np.exp, (-3, 3)), "log": (np.log, (0.1, 4)), "log10": (np.log10, (0.1, 4)),
    "log2": (np.log2, (0.1, 4)), "sin": (np.sin, (-3, 3)), "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1, 1)), "arcsin": (np.arcsin, (-1, 1)),
    "arccos": (np.arccos, (-1, 1)), "arctan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-3, 3)), "cosh": (np.cosh, (-3, 3)), "tanh": (np.tanh, (-3, 3)),
    "arcsinh": (np.arcsinh, (-3, 3)), "arccosh": (np.arccosh, (1, 4)),
    "arctanh": (np.arctanh, (-0.9, 0.9)), "floor": (np.floor, (-3, 3)),
    "ceil": (np.ceil, (-3, 3)), "trunc": (np.trunc, (-3, 3)),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", list(MATH))
def test_math_functions(fn, dtype):
    ref, (lo, hi) = MATH[fn]
    src = f"""p(out: tensor<{dtype}, I[0:N], J[0:M]>, a: tensor<{dtype}, I[0:N], J[0:M]>) {{
                out <- {fn}(a) }}"""
    a = (rng().random((5, 3)) * (hi - lo) + lo).astype(dtype)
    out = np.zeros((5, 3), dtype)
    run(src, out=out, a=a)
    same(out, ref(a))


@pytest.mark.parametrize("dtype", INTS)
def test_int_neg_abs(dtype):
    src = f"""p(o1: tensor<{dtype}, I[0:5]>, o2: tensor<{dtype}, I[0:5]>,
                 a: tensor<{dtype}, I[0:5]>) {{ o1 <- neg(a); o2 <- abs(a) - a }}"""
    a = np.array([-3, 0, 4, -1, 2], dtype)
    o1, o2 = np.zeros(5, dtype), np.zeros(5, dtype)
    run(src, o1=o1, o2=o2, a=a)
    same(o1, -a)
    same(o2, np.abs(a) - a)


@pytest.mark.parametrize("dtype", FLOATS)
def test_predicates(dtype):
    src = f"""p(f: tensor<bool, I[0:6]>, n: tensor<bool, I[0:6]>, i: tensor<bool, I[0:6]>,
                 a: tensor<{dtype}, I[0:6]>) {{ f <- isfinite(a); n <- isnan(a); i <- isinf(a) }}"""
    a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.5], dtype)
    f, n, i = (np.zeros(6, bool) for _ in range(3))
    run(src, f=f, n=n, i=i, a=a)
    same(f, np.isfinite(a))
    same(n, np.isnan(a))
    same(i, np.isinf(a))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_comparisons(dtype):
    names = ["eq", "neq", "less", "less_equal", "greater", "greater_equal"]
    refs = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]
    outs = ", ".join(f"o_{n}: tensor<bool, I[0:8]>" for n in names)
    body = "; ".join(f"o_{n} <- {n}(a, c)" for n in names)
    src = f"""p({outs}, a: tensor<{dtype}, I[0:8]>, c: tensor<{dtype}, I[0:8]>) {{ {body} }}"""
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype)
    c = np.array([8, 2, 1, 4, 9, 6, 0, 8], dtype)
    arrays = {f"o_{n}": np.zeros(8, bool) for n in names}
    run(src, **arrays, a=a, c=c)
    for n, ref in zip(names, refs):
        same(arrays[f"o_{n}"], ref(a, c))


def test_comparison_operators_and_logic():
    src = """p(o1: tensor<bool, I[0:8]>, o2: tensor<bool, I[0:8]>, o3: tensor<bool, I[0:8]>,
                a: tensor<float, I[0:8]>, c: tensor<float, I[0:8]>, m: tensor<bool, I[0:8]>) {
               o1 <- a < c && !m || a == c;
               o2 <- and(or(a >= c, m), not(a != c));
               o3 <- m == (a <= c) }"""
    r = rng()
    a = r.integers(0, 3, 8).astype(float)
    c = r.integers(0, 3, 8).astype(float)
    m = r.random(8) < 0.5
    o1, o2, o3 = (np.zeros(8, bool) for _ in range(3))
    run(src, o1=o1, o2=o2, o3=o3, a=a, c=c, m=m)
    same(o1, (a < c) & ~m | (a == c))
    same(o2, ((a >= c) | m) & ~(a != c))
    same(o3, m == (a <= c))


def test_broadcasting_intervals_orders_negative_starts():
    # Union of dimensions, intersection of intervals, any order.
    src = """p(out: tensor<float, J[0:4], I[-2:3]>, a: tensor<float, I[-3:5]>,
                c: tensor<float, J[-1:6], I[-2:4]>, s: tensor<float>) {
               out <- a * c + s }"""
    r = rng()
    a, c = r.random(8), r.random((7, 6))
    out = np.zeros((4, 5))
    run(src, out=out, a=a, c=c, s=2.5)
    # out[j, i] for j in 0:4, i in -2:3; a index i+3, c index (j+1, i+2)
    ref = a[1:6][None, :] * c[1:5, 0:5] + 2.5
    np.testing.assert_allclose(out, ref, rtol=0, atol=0)


def test_broadcast_target_dimension_the_value_lacks():
    src = """p(out: tensor<float, I[0:3], K[0:4]>, a: tensor<float, K[-1:5]>) {
               out <- a * 2.0 }"""
    a = rng().random(6)
    out = np.zeros((3, 4))
    run(src, out=out, a=a)
    same(out, np.broadcast_to(a[1:5] * 2.0, (3, 4)))


@pytest.mark.parametrize("n, m", [(5, 3), (8, 2)])
def test_symbolic_sizes(n, m):
    src = """p(out: tensor<float, I[0:N], J[0:M]>, inp: tensor<float, I[-1:N+1], J[0:M]>,
                w: tensor<float, J[0:M]>) {
               out <- (<<I, 1>>(inp) - <<I, -1>>(inp)) * w }"""
    inp, w = rng().random((n + 2, m)), rng(1).random(m)
    out = np.zeros((n, m))
    run(src, out=out, inp=inp, w=w)
    same(out, (inp[2:] - inp[:-2]) * w)


def test_scalar_params_and_size_symbols_in_expressions():
    src = """p(out: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>, s: tensor<float32>,
                k: tensor<int>) {
               out <- a * cast(s, float) + cast(k + N, float) }"""
    a = rng().random(6)
    out = np.zeros(6)
    run(src, out=out, a=a, s=np.float32(1.5), k=3)
    same(out, a * 1.5 + 9.0)


def test_cast():
    src = """p(o1: tensor<int32, I[0:6]>, o2: tensor<float32, I[0:6]>, o3: tensor<int, I[0:6]>,
                o4: tensor<bool, I[0:6]>, a: tensor<float, I[0:6]>, m: tensor<bool, I[0:6]>,
                k: tensor<int, I[0:6]>) {
               o1 <- cast(a, int32); o2 <- cast(k, float32); o3 <- cast(m, int);
               o4 <- cast(k, bool) }"""
    a = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.9])
    m = np.array([True, False, True, True, False, False])
    k = np.array([-3, 0, 1, 2, 0, 5])
    o1, o2, o3, o4 = (np.zeros(6, d) for d in ("int32", "float32", "int64", "bool"))
    run(src, o1=o1, o2=o2, o3=o3, o4=o4, a=a, m=m, k=k)
    same(o1, a.astype(np.int32))
    same(o2, k.astype(np.float32))
    same(o3, m.astype(np.int64))
    same(o4, k.astype(bool))


def test_if_select_over_intersection():
    src = """p(out: tensor<float, I[0:5], J[0:2]>, a: tensor<float, I[-1:6]>,
                c: tensor<float, J[0:2], I[0:5]>) {
               out <- if(a > 0.5, a, c * 2.0) }"""
    a, c = rng().random(7), rng(1).random((2, 5))
    out = np.zeros((5, 2))
    run(src, out=out, a=a, c=c)
    same(out, np.where(a[1:6, None] > 0.5, a[1:6, None], c.T * 2.0))


def test_if_on_int32_with_literal():
    src = """p(out: tensor<int32, I[0:5]>, a: tensor<int32, I[0:5]>) {
               out <- if(a > 2, a, 7) * 2 }"""
    a = np.arange(5, dtype=np.int32)
    out = np.zeros(5, np.int32)
    run(src, out=out, a=a)
    same(out, np.where(a > 2, a, 7).astype(np.int32) * 2)


# --------------------------------------------------------------------------- tuples


def test_tuples_make_get_and_tuple_parameters():
    src = """p(out: tensor<(float, int32), I[0:4]>, o2: tensor<float, I[0:4]>,
                inp: tensor<(float, (float, bool)), I[0:4]>) {
               out <- make_tuple(inp[0] * 2.0, cast(inp[1][0], int32));
               o2 <- if(inp[1][1], inp[1][0], tuple_get(inp, 0)) }"""
    r = rng()
    x, y, m = r.random(4) * 10, r.random(4) * 10, r.random(4) < 0.5
    out = (np.zeros(4), np.zeros(4, np.int32))
    o2 = np.zeros(4)
    run(src, out=out, o2=o2, inp=(x, (y, m)))
    same(out[0], x * 2.0)
    same(out[1], y.astype(np.int32))
    same(o2, np.where(m, y, x))


def test_tuple_if_and_broadcast_make_tuple():
    src = """p(out: tensor<(float, float), I[0:3], J[0:2]>, a: tensor<float, I[0:3]>,
                c: tensor<float, J[0:2]>, m: tensor<bool, J[0:2]>) {
               out <- if(m, make_tuple(a, c), make_tuple(c, a)) }"""
    a, c, m = np.arange(3.0), np.arange(2.0) + 10, np.array([True, False])
    out = (np.zeros((3, 2)), np.zeros((3, 2)))
    run(src, out=out, a=a, c=c, m=m)
    A, C = np.broadcast_arrays(a[:, None], c[None, :])
    same(out[0], np.where(m, A, C))
    same(out[1], np.where(m, C, A))


def test_tuple_swap_reads_own_target():
    src = """p(t: tensor<(float, float), I[0:5]>) { t <- make_tuple(t[1], t[0]) }"""
    x, y = np.arange(5.0), np.arange(5.0) + 100
    t = (x.copy(), y.copy())
    run(src, t=t)
    same(t[0], y)
    same(t[1], x)


# --------------------------------------------------------------------------- shifts


def test_cartesian_shift_sign_convention():
    src = """p(o1: tensor<float, I[0:4]>, o2: tensor<float, I[0:4]>, o3: tensor<float, I[0:4]>,
                x: tensor<float, I[-1:5]>, unused: tensor<float, J[0:1]>) {
               o1 <- <<I, 1>>(x); o2 <- <<I, -1>>(x); o3 <- <<I, 1, I, -1, J, 3>>(x) }"""
    x = np.arange(6.0) * 10  # coordinates -1..4
    o1, o2, o3 = np.zeros(4), np.zeros(4), np.zeros(4)
    run(src, o1=o1, o2=o2, o3=o3, x=x, unused=np.zeros(1))
    same(o1, x[2:6])  # x[i + 1]
    same(o2, x[0:4])  # x[i - 1]
    same(o3, x[1:5])  # offsets compose; J is absent: no-op


def test_cartesian_shift_two_dims_with_tags():
    src = """p(out: tensor<float, IDim[0:3], JDim[0:4]>, x: tensor<float, JDim[-2:6], IDim[0:5]>) {
               out <- ⟪iₒ, 2ₒ, jₒ, -2ₒ⟫(x) }"""
    x = rng().random((8, 5))
    out = np.zeros((3, 4))
    run(src, out=out, x=x)
    # out[i, j] = x[j - 2, i + 2]; x index (j - 2 + 2, i + 2)
    same(out, x[0:4, 2:5].T)


def _tables(r, nv, ne, nb_v2e, missing=0.25):
    e2v = r.integers(0, nv, (ne, 2))
    e2v[r.random((ne, 2)) < missing] = -1
    v2e = r.integers(0, ne, (nv, nb_v2e))
    v2e[r.random((nv, nb_v2e)) < missing] = -1
    return e2v, v2e


def _take(x, idx, fill):
    """x[idx] along axis 0 with `fill` where idx < 0."""
    g = x[np.maximum(idx, 0)]
    mask = (idx >= 0).reshape(idx.shape + (1,) * (x.ndim - 1))
    return np.where(mask, g, fill)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "bool"])
def test_unstructured_shift_full_with_absent_neighbours(dtype):
    src = f"""p(o0: tensor<{dtype}, Edge[0:E]>, o1: tensor<{dtype}, Edge[0:E]>,
                 x: tensor<{dtype}, Vertex[0:V]>, E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>) {{
                o0 <- <<E2V, 0>>(x); o1 <- ⟪E2V, 1ₒ⟫(x) }}"""
    r = rng()
    e2v, _ = _tables(r, 6, 15, 3)
    x = (r.random(6) * 100).astype(dtype)
    o0, o1 = np.zeros(15, dtype), np.zeros(15, dtype)
    run(src, o0=o0, o1=o1, x=x, E2V=e2v)
    dt = np.dtype(dtype)
    fill = np.nan if dt.kind == "f" else False if dt.kind == "b" else np.iinfo(dt).min
    same(o0, _take(x, e2v[:, 0], fill).astype(dtype))
    same(o1, _take(x, e2v[:, 1], fill).astype(dtype))


def test_unstructured_shift_multidim_and_offset_source_interval():
    # Table entries are coordinates: with Vertex[2:V+2], entry v reads index v - 2.
    src = """p(out: tensor<float, K[0:3], Edge[0:E]>, x: tensor<float, K[0:3], Vertex[2:V+2]>,
                E2V: tensor<int32, Edge[0:E], _NB_Vertex[0:2]>) {
               out <- <<E2V, 1>>(x) * 2.0 }"""
    r = rng()
    e2v = r.integers(2, 8, (11, 2)).astype(np.int32)
    e2v[3, 1] = -1
    x = r.random((3, 6))
    out = np.zeros((3, 11))
    run(src, out=out, x=x, E2V=e2v)
    ref = _take(x.T, e2v[:, 1] - 2 + (e2v[:, 1] < 0) * 2, np.nan).T * 2.0
    same(out, ref)
    assert np.isnan(out[:, 3]).all()


def test_partial_shift_shift_apply_and_target_with_neighbour_dim():
    src = """p(o_all: tensor<float, Vertex[0:V], _NB_0[0:4], K[0:2]>,
                o_1: tensor<float, K[0:2], Vertex[0:V]>,
                x: tensor<float, Edge[0:E], K[0:2]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:4]>) {
               o_all <- <<V2E>>(x); o_1 <- shift_apply(1)(<<V2E>>(x)) }"""
    r = rng()
    _, v2e = _tables(r, 7, 12, 4)
    x = r.random((12, 2))
    o_all, o_1 = np.zeros((7, 4, 2)), np.zeros((2, 7))
    run(src, o_all=o_all, o_1=o_1, x=x, V2E=v2e)
    ref = np.where((v2e >= 0)[:, :, None], x[np.maximum(v2e, 0)], np.nan)
    same(o_all, ref)
    same(o_1, ref[:, 1, :].T)


def test_unstructured_shift_operand_with_destination_dim_takes_diagonal():
    src = """p(out: tensor<float, Edge[0:9]>, o2: tensor<float, Vertex[1:5], _NB_0[0:3]>,
                x: tensor<float, Vertex[0:6], Edge[0:9]>, y: tensor<float, Edge[0:9], Vertex[1:5]>,
                E2V: tensor<int, Edge[0:9], _NB_Vertex[0:2]>,
                V2E: tensor<int, Vertex[0:6], _NB_Edge[0:3]>) {
               out <- <<E2V, 0>>(x); o2 <- <<V2E>>(y) }"""
    r = rng()
    e2v, v2e = r.integers(0, 6, (9, 2)), r.integers(0, 9, (6, 3))
    x, y = r.random((6, 9)), r.random((9, 4))
    out, o2 = np.zeros(9), np.zeros((4, 3))
    run(src, out=out, o2=o2, x=x, y=y, E2V=e2v, V2E=v2e)
    same(out, x[e2v[:, 0], np.arange(9)])
    same(o2, y[v2e[1:5], np.arange(4)[:, None]])


def test_can_deref():
    src = """p(c0: tensor<bool, Edge[0:E]>, c1: tensor<bool, Vertex[0:V], _NB_0[0:3]>,
                c2: tensor<bool, Vertex[0:V]>, c3: tensor<bool, Vertex[0:V]>,
                c4: tensor<bool, Edge[0:E]>, s: tensor<float, Edge[0:E]>,
                x: tensor<float, Vertex[0:V]>, y: tensor<float, Edge[0:E]>,
                E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>,
                V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>) {
               c0 <- can_deref(<<E2V, 0>>(x));
               c1 <- can_deref(<<V2E>>(y));
               c2 <- can_deref(shift_apply(1)(<<V2E>>(y)));
               c3 <- can_deref(x);
               c4 <- can_deref(<<E2V, 0>>(x) + <<E2V, 1>>(x));
               s <- if(can_deref(<<E2V, 1>>(x)), <<E2V, 1>>(x), 0.0) }"""
    r = rng(3)
    e2v, v2e = _tables(r, 8, 14, 3)
    x, y = r.random(8), r.random(14)
    c0, c4, s = np.zeros(14, bool), np.zeros(14, bool), np.zeros(14)
    c1, c2, c3 = np.zeros((8, 3), bool), np.zeros(8, bool), np.zeros(8, bool)
    run(src, c0=c0, c1=c1, c2=c2, c3=c3, c4=c4, s=s, x=x, y=y, E2V=e2v, V2E=v2e)
    same(c0, e2v[:, 0] >= 0)
    same(c1, v2e >= 0)
    same(c2, v2e[:, 1] >= 0)
    same(c3, np.ones(8, bool))
    same(c4, (e2v >= 0).all(axis=1))
    same(s, np.where(e2v[:, 1] >= 0, x[np.maximum(e2v[:, 1], 0)], 0.0))


# --------------------------------------------------------------------------- reduce


def test_reduce_skips_absent_neighbours():
    src = """p(out: tensor<float, Vertex[0:V]>, mx: tensor<int32, Vertex[0:V]>,
                cnt: tensor<int, Vertex[0:V]>,
                x: tensor<float, Edge[0:E]>, k: tensor<int32, Edge[0:E]>,
                w: tensor<float, Vertex[0:V], _NB_0[0:5]>,
                V2E: tensor<int, Vertex[0:V], _NB_Edge[0:5]>) {
               out <- reduce(lambda(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
                                    c: tensor<float, Vertex[0:V]>) -> acc + a * c,
                             0.0)(<<V2E>>(x), w);
               mx <- reduce(lambda(acc: tensor<int32, Vertex[0:V]>, a: tensor<int32, Vertex[0:V]>)
                            -> maximum(acc, a), -1000)(<<V2E>>(k));
               cnt <- reduce(lambda(acc: tensor<int, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>)
                             -> acc + 1, 0)(<<V2E>>(x)) }"""
    r = rng(5)
    _, v2e = _tables(r, 9, 20, 5, missing=0.3)
    v2e[0] = -1  # a vertex without any neighbour
    x, w = r.random(20), r.random((9, 5))
    k = r.integers(-50, 50, 20).astype(np.int32)
    out, mx, cnt = np.zeros(9), np.zeros(9, np.int32), np.zeros(9, np.int64)
    run(src, out=out, mx=mx, cnt=cnt, x=x, k=k, w=w, V2E=v2e)
    present = v2e >= 0
    np.testing.assert_allclose(out, np.where(present, x[np.maximum(v2e, 0)] * w, 0).sum(1),
                               rtol=1e-14)
    same(mx, np.where(present, k[np.maximum(v2e, 0)], -1000).max(1).astype(np.int32))
    same(cnt, present.sum(1).astype(np.int64))
    assert out[0] == 0 and mx[0] == -1000


def test_reduce_with_tuple_accumulator_and_extra_dims():
    src = """p(out: tensor<(float, float), K[0:2], Vertex[0:V]>,
                x: tensor<float, Edge[0:E], K[0:2]>,
                V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>) {
               out <- reduce(lambda(acc: tensor<(float, float), Vertex[0:V], K[0:2]>,
                                    a: tensor<float, K[0:2], Vertex[0:V]>)
                             -> make_tuple(acc[0] + a, maximum(acc[1], a)), make_tuple(0.0, -1.0))(
                        <<V2E>>(x)) }"""
    r = rng(6)
    _, v2e = _tables(r, 5, 7, 3)
    x = r.random((7, 2))
    out = (np.zeros((2, 5)), np.zeros((2, 5)))
    run(src, out=out, x=x, V2E=v2e)
    g = x[np.maximum(v2e, 0)]  # (V, 3, K)
    p = (v2e >= 0)[:, :, None]
    np.testing.assert_allclose(out[0], np.where(p, g, 0).sum(1).T, rtol=1e-14)
    same(out[1], np.where(p, g, -1.0).max(1).T)


def test_nested_reduce_inside_lambda_then_partial_shift_and_reduce():
    src = """p(out: tensor<float, Vertex[0:V]>, x: tensor<float, Vertex[0:V]>,
                E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>,
                V2E: tensor<int, Vertex[0:V], _NB_Edge[0:4]>) {
               out <- reduce(lambda(acc: tensor<float, Vertex[0:V]>, e: tensor<float, Vertex[0:V]>)
                             -> acc + e, 0.0)(
                 <<V2E>>((lambda(y: tensor<float, Vertex[0:V]>) ->
                    reduce(lambda(acc: tensor<float, Edge[0:E]>, v: tensor<float, Edge[0:E]>)
                           -> acc + v * v, 0.0)(<<E2V>>(y)))(x))) }"""
    r = rng(7)
    e2v, v2e = _tables(r, 10, 16, 4)
    x = r.random(10)
    out = np.zeros(10)
    run(src, out=out, x=x, E2V=e2v, V2E=v2e)
    edge = np.where(e2v >= 0, x[np.maximum(e2v, 0)] ** 2, 0).sum(1)
    ref = np.where(v2e >= 0, edge[np.maximum(v2e, 0)], 0).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-14)


def test_reduce_mask_survives_lambda_parameter():
    # The mask of _NB_0 travels with the lambda parameter's type.
    src = """p(out: tensor<float, Vertex[0:V]>, x: tensor<float, Edge[0:E]>,
                V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>) {
               out <- (lambda(s: tensor<float, Vertex[0:V], _NB_0[0:3]>) ->
                         reduce(lambda(acc: tensor<float, Vertex[0:V]>,
                                       a: tensor<float, Vertex[0:V]>)
                                -> acc + a, 0.0)(s) * 2.0)(<<V2E>>(x)) }"""
    r = rng(8)
    _, v2e = _tables(r, 6, 9, 3)
    x = r.random(9)
    out = np.zeros(6)
    run(src, out=out, x=x, V2E=v2e)
    np.testing.assert_allclose(out, 2 * np.where(v2e >= 0, x[np.maximum(v2e, 0)], 0).sum(1),
                               rtol=1e-14)


def test_temporary_keeps_neighbour_mask():
    src = """p(out: tensor<float, Vertex[0:V]>, ok: tensor<bool, Vertex[0:V], _NB_0[0:4]>,
                x: tensor<float, Edge[0:E]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:4]>) {
               tmp: tensor<float, Vertex[0:V], _NB_0[0:4]>;
               tmp <- <<V2E>>(x);
               ok <- can_deref(tmp);
               out <- reduce(lambda(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>)
                             -> acc + a, 0.0)(tmp) }"""
    r = rng(9)
    _, v2e = _tables(r, 8, 13, 4)
    x = r.random(13)
    out, ok = np.zeros(8), np.zeros((8, 4), bool)
    run(src, out=out, ok=ok, x=x, V2E=v2e)
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, np.where(v2e >= 0, x[np.maximum(v2e, 0)], 0).sum(1),
                               rtol=1e-14)
    same(ok, v2e >= 0)


def test_reduce_of_parameter_without_mask_uses_all_neighbours():
    src = """p(out: tensor<float, Vertex[0:4]>, s: tensor<float, Vertex[0:4], _NB_0[0:3]>) {
               out <- reduce(lambda(acc: tensor<float, Vertex[0:4]>, a: tensor<float, Vertex[0:4]>)
                             -> acc * a, 1.0)(s) }"""
    s = rng().random((4, 3))
    out = np.zeros(4)
    run(src, out=out, s=s)
    np.testing.assert_allclose(out, s.prod(1), rtol=1e-14)


def test_reduce_mask_follows_cartesian_shift():
    # Shifting a partially shifted tensor along the table's destination dimension
    # shifts its mask with it (the mask becomes ⟪Vertex, 1⟫(V2E)).
    src = """p(out: tensor<float, Vertex[0:V-1]>, ok: tensor<bool, Vertex[0:V-1], _NB_0[0:3]>,
                x: tensor<float, Edge[0:E]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>) {
               out <- reduce(lambda(acc: tensor<float, Vertex[0:V-1]>,
                                    a: tensor<float, Vertex[0:V-1]>)
                             -> acc + a, 0.0)(<<Vertex, 1>>(<<V2E>>(x)));
               ok <- can_deref(<<Vertex, 1>>(<<V2E>>(x))) }"""
    r = rng(13)
    _, v2e = _tables(r, 7, 10, 3)
    x = r.random(10)
    out, ok = np.zeros(6), np.zeros((6, 3), bool)
    run(src, out=out, ok=ok, x=x, V2E=v2e)
    np.testing.assert_allclose(out, np.where(v2e >= 0, x[np.maximum(v2e, 0)], 0).sum(1)[1:],
                               rtol=1e-14)
    same(ok, v2e[1:] >= 0)


def test_table_entries_out_of_range_read_as_absent():
    # A computed table (here a temporary) may name elements outside the operand:
    # they are absent.  A parameter table may not (an ArgumentError, see
    # tests/test_reliability.py).
    src = """p(out: tensor<float, Edge[0:4]>, x: tensor<float, Vertex[0:3]>,
                E2V: tensor<int, Edge[0:4], _NB_Vertex[0:2]>) {
               t: tensor<int, Edge[0:4], _NB_Vertex[0:2]>;
               t <- E2V + 1; out <- <<t, 0>>(x) }"""
    e2v = np.array([[-1, 0], [1, 0], [2, 0], [-6, 0]])
    out = np.zeros(4)
    run(src, out=out, x=np.array([1.0, 2.0, 3.0]), E2V=e2v)
    same(out, np.array([1.0, 3.0, np.nan, np.nan]))


def test_zero_sizes():
    src = """p(out: tensor<float, I[0:N]>, s: tensor<float, Vertex[0:V]>,
                x: tensor<float, I[-1:N+1]>,
                y: tensor<float, Edge[0:E]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:2]>) {
               out <- <<I, 1>>(x) + <<I, -1>>(x);
               s <- reduce(lambda(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>)
                           -> acc + a, 0.0)(<<V2E>>(y)) }"""
    out, s = np.zeros(0), np.zeros(3)
    run(src, out=out, s=s, x=np.zeros(2), y=np.zeros(0), V2E=np.full((3, 2), -1))
    same(s, np.zeros(3))


# --------------------------------------------------------------------------- scan


def test_scan_forward_backward_tuple_state():
    src = """p(fw: tensor<(float, float), I[0:N], K[0:M]>, bw: tensor<float, K[0:M], I[0:N]>,
                x: tensor<float, K[0:M], I[0:N]>) {
               fw <- scan(lambda(st: tensor<(float, float), I[0:N]>, a: tensor<float, I[0:N]>)
                          -> make_tuple(st[0] + a, st[1] * a), True, make_tuple(0.0, 1.0))(x);
               bw <- scan(lambda(st: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>)
                          -> st * 0.5 + a, False, 1.0)(x) }"""
    r = rng(10)
    x = r.random((6, 3)) + 0.5
    fw = (np.zeros((3, 6)), np.zeros((3, 6)))
    bw = np.zeros((6, 3))
    run(src, fw=fw, bw=bw, x=x)
    np.testing.assert_allclose(fw[0], np.cumsum(x, axis=0).T, rtol=1e-14)
    np.testing.assert_allclose(fw[1], np.cumprod(x, axis=0).T, rtol=1e-14)
    ref = np.zeros((6, 3))
    st = np.ones(3)
    for k in range(5, -1, -1):
        st = st * 0.5 + x[k]
        ref[k] = st
    np.testing.assert_allclose(bw, ref, rtol=1e-14)


def test_scan_with_explicit_axis_broadcast_operand_and_int32():
    src = """p(out: tensor<int32, K[-2:3], I[0:3]>, x: tensor<int32, K[-2:3]>,
                y: tensor<int32, I[0:3]>) {
               out <- scan(lambda(st: tensor<int32, I[0:3]>, a: tensor<int32>,
                                  b: tensor<int32, I[0:3]>)
                           -> st * 2 + a - b, True, 1, K)(x, y) }"""
    x = np.arange(5, dtype=np.int32)
    y = np.array([1, 2, 3], np.int32)
    out = np.zeros((5, 3), np.int32)
    run(src, out=out, x=x, y=y)
    ref = np.zeros((5, 3), np.int32)
    st = np.ones(3, np.int32)
    for k in range(5):
        st = st * 2 + x[k] - y
        ref[k] = st
    same(out, ref)


# --------------------------------------------------------------------------- structure


def test_subset_target_and_subset_expression():
    src = """p(out: tensor<float, I[0:6], J[0:3]>, a: tensor<float, I[0:6], J[0:3]>) {
               subset(out, I[1:4]) <- subset(a, I[0:5]) * 2.0;
               subset(out, I[4:6], J[1:2]) <- -1.0 }"""
    a = rng().random((6, 3))
    out = np.full((6, 3), 7.0)
    run(src, out=out, a=a)
    ref = np.full((6, 3), 7.0)
    ref[1:4] = a[1:4] * 2.0
    ref[4:6, 1:2] = -1.0
    same(out, ref)


def test_concat_single_piece():
    src = """p(out: tensor<float, I[0:4]>, x: tensor<float, I[0:5]>) {
               out <- concat(<<I, 1>>(x) * 2.0) }"""
    x = np.arange(5.0)
    out = np.zeros(4)
    run(src, out=out, x=x)
    same(out, x[1:5] * 2.0)


CONCAT_SRC = """p(out: tensor<float, I[0:5]>, o2: tensor<float, J[0:2], I[0:5]>,
                  x: tensor<float, I[0:5]>, y: tensor<float, J[0:2]>) {
                 out <- concat(subset(x, I[0:1]) * 0.0, <<I, -1>>(x));
                 o2 <- concat(I, subset(x, I[0:2]) + y, subset(x, I[2:4]), subset(-x, I[4:5])) }"""


def _concat_reference(x, y):
    ref = np.empty((2, 5))
    ref[:, 0:2] = x[0:2] + y[:, None]
    ref[:, 2:4] = x[2:4]
    ref[:, 4:5] = -x[4:5]
    return np.array([0.0, 1, 2, 3, 4]), ref


def test_concat_is_lazy_boundary_condition():
    # ⟪I, -1⟫(x) is only defined on I[1:6]; the first piece fills I[0:1].
    x, y = np.arange(5.0) + 1, np.array([10.0, 20.0])
    out, o2 = np.zeros(5), np.zeros((2, 5))
    run(CONCAT_SRC, out=out, o2=o2, x=x, y=y)
    ref1, ref2 = _concat_reference(x, y)
    same(out, ref1)
    same(o2, ref2)


def test_concat_evaluation_on_hand_typed_nodes():
    # The same concats as above, built from pieces typed one by one and evaluated
    # directly by the Evaluator (also: the axis found from the pieces' types).
    src = """p(o1: tensor<float, I[0:1]>, o2: tensor<float, I[1:6]>,
                o3: tensor<float, J[0:2], I[0:2]>,
                o4: tensor<float, I[2:4]>, o5: tensor<float, I[4:5]>,
                x: tensor<float, I[0:5]>, y: tensor<float, J[0:2]>) {
               o1 <- subset(x, I[0:1]) * 0.0; o2 <- <<I, -1>>(x);
               o3 <- subset(x, I[0:2]) + y; o4 <- subset(x, I[2:4]); o5 <- subset(-x, I[4:5]) }"""
    typed = tir.check(tir.parse(src))
    p = [s.value for s in typed.body]
    f = ir.TensorType(ir.FLOAT64, (ir.Dim("I", 0, 6),))
    c1 = ir.Call(ir.Sym("concat"), (p[0], p[1]), type=f)
    f2 = ir.TensorType(ir.FLOAT64, (ir.Dim("J", 0, 2), ir.Dim("I", 0, 5)))
    c2 = ir.Call(ir.Sym("concat"), (ir.Sym("I"), p[2], p[3], p[4]), type=f2)
    c3 = ir.Call(ir.Sym("concat"), (p[2], p[3], p[4]), type=f2)  # axis found from the pieces
    x, y = np.arange(5.0) + 1, np.array([10.0, 20.0])
    env = {"x": Value((("I", 0, 5),), x), "y": Value((("J", 0, 2),), y)}
    ev = Evaluator({})
    r1, r2, r3 = (ev.eval(c, env) for c in (c1, c2, c3))
    ref1, ref2 = _concat_reference(x, y)
    assert r1.dims == (("I", 0, 6),) and r2.dims == r3.dims == (("J", 0, 2), ("I", 0, 5))
    same(r1.data, np.r_[ref1, x[4]])
    same(r2.data, ref2)
    same(r3.data, ref2)


def test_pos_and_index():
    src = """p(o1: tensor<int, I[-2:3]>, o2: tensor<float, J[0:2], I[-2:3]>,
                x: tensor<float, I[-2:3], J[0:2]>) {
               o1 <- pos(I, x); o2 <- cast(index(J, x) * 10 + pos(I, x), float) + x }"""
    x = rng().random((5, 2))
    o1, o2 = np.zeros(5, np.int64), np.zeros((2, 5))
    run(src, o1=o1, o2=o2, x=x)
    same(o1, np.arange(-2, 3))
    same(o2, (np.arange(2)[:, None] * 10 + np.arange(-2, 3)[None, :]).astype(float) + x.T)


def test_add_dim():
    src = """p(o1: tensor<float, K[0:3], I[0:4]>, o2: tensor<float, I[0:4], K[1:3]>,
                x: tensor<float, I[0:4]>) {
               o1 <- add_dim(K, 0, 3, x); o2 <- add_dim(K, 0, N, x) * 2.0 }"""
    x = rng().random(4)
    o1, o2 = np.zeros((3, 4)), np.zeros((4, 2))
    # N is not determined by any shape here: the program uses the literal range.
    src = src.replace("N", "3")
    run(src, o1=o1, o2=o2, x=x)
    same(o1, np.broadcast_to(x, (3, 4)))
    same(o2, np.broadcast_to(x[:, None] * 2.0, (4, 2)))


def test_lambda_application_slices_to_parameter_domain():
    src = """p(out: tensor<float, I[0:3]>, x: tensor<float, I[-2:6]>) {
               out <- (lambda(a: tensor<float, I[-1:4]>, b: tensor<float, I[0:3]>)
                       -> <<I, -1>>(a) + b)(x, x * 10.0) }"""
    x = np.arange(8.0)
    out = np.zeros(3)
    run(src, out=out, x=x)
    same(out, x[1:4] + x[2:5] * 10.0)


# --------------------------------------------------------------------------- statements


def test_program_level_if_and_for():
    src = """p(n: tensor<int>, flag: tensor<bool>, u: tensor<float, I[0:N]>,
                acc: tensor<int, I[0:N]>) {
               for (t in 0:n) { u <- u + 1.0; acc <- acc + t }
               if (flag && n > 2) { u <- u * 2.0 } else { u <- -u }
             }"""
    for n, flag in [(3, True), (4, False), (1, True), (0, True)]:
        u0 = np.arange(5.0)
        u, acc = u0.copy(), np.zeros(5, np.int64)
        run(src, n=n, flag=flag, u=u, acc=acc)
        ref = (u0 + n) * 2.0 if (flag and n > 2) else -(u0 + n)
        same(u, ref)
        same(acc, np.full(5, n * (n - 1) // 2, np.int64))


def test_nested_for_time_stepping_with_shift():
    src = """p(steps: tensor<int>, u: tensor<float, I[0:N]>) {
               for (t in 0:steps) {
                 for (s in 1:3) {
                   subset(u, I[1:N-1]) <- u + 0.25 * (<<I, 1>>(u) - 2.0 * u + <<I, -1>>(u))
                 }
               }
             }"""
    u0 = rng().random(10)
    u = u0.copy()
    run(src, steps=3, u=u)
    ref = u0.copy()
    for _ in range(6):
        ref[1:-1] = ref[1:-1] + 0.25 * (ref[2:] - 2.0 * ref[1:-1] + ref[:-2])
    np.testing.assert_allclose(u, ref, rtol=1e-14)


def test_statement_reads_its_own_target():
    src = """p(u: tensor<float, I[0:N]>, v: tensor<float, I[0:N]>) {
               subset(u, I[0:N-1]) <- <<I, 1>>(u);
               subset(v, I[1:N]) <- <<I, -1>>(v) }"""
    u0, v0 = np.arange(6.0), np.arange(6.0) * 10
    u, v = u0.copy(), v0.copy()
    run(src, u=u, v=v)
    same(u, np.r_[u0[1:], u0[-1]])
    same(v, np.r_[v0[0], v0[:-1]])


# --------------------------------------------------------------------------- IR built by hand


def test_program_built_with_builders():
    # (ir.as_bound("N") would be SymPy's N function: pass the symbol itself.)
    t = b.tensor("float", I=(0, ir.size_symbol("N")))
    prog = b.program("axpy", [("out", t), ("x", t), ("y", t), ("a", b.tensor("float"))],
                     [b.assign("out", b.call("plus", b.call("multiplies", "a", "x"), "y"))])
    x, y = rng().random(7), rng(1).random(7)
    out = np.zeros(7)
    tir.interpret(prog, out=out, x=x, y=y, a=3.0)
    same(out, 3.0 * x + y)


# --------------------------------------------------------------------------- arguments


ERR_SRC = """p(out: tensor<float, I[0:N]>, x: tensor<float, I[-1:N+1]>) {
               out <- <<I, 1>>(x) }"""


@pytest.mark.parametrize("args", [
    {"x": np.zeros(7)},                                   # missing out
    {"out": None, "x": np.zeros(7), "y": np.zeros(7)},    # unknown argument
    {"out": None, "x": np.zeros(8)},                      # inconsistent N
    {"out": None, "x": np.zeros(7, np.float32)},          # wrong dtype
    {"out": None, "x": np.zeros((7, 1))},                 # wrong rank
])
def test_argument_errors_leave_outputs_untouched(args):
    out = np.full(5, 42.0)
    args = {k: (out if k == "out" else v) for k, v in args.items()}
    with pytest.raises(ArgumentError):
        run(ERR_SRC, **args)
    same(out, np.full(5, 42.0))


def test_argument_error_on_wrong_output_dtype():
    out = np.full(5, 3, np.int64)
    with pytest.raises(ArgumentError):
        run(ERR_SRC, out=out, x=np.zeros(7))
    same(out, np.full(5, 3, np.int64))


def test_typed_program_is_memoised():
    prog = tir.parse(ERR_SRC)
    assert typed_program(prog) is typed_program(prog)
    assert typed_program(tir.parse(ERR_SRC)) is typed_program(prog)  # equal programs


# --------------------------------------------------------------------------- design examples


def test_example_laplacian():
    prog = tir.parse((EXAMPLES / "laplacian.tir").read_text())
    inp = rng().random((7, 9, 9))
    out = np.zeros((5, 7, 9))
    tir.interpret(prog, out=out, inp=inp)
    c = inp[1:-1, 1:-1]
    ref = inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:] - 4 * c
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


def test_example_fencil_cos():
    x = rng().random(100)
    ref = np.cos(x[2:]) + np.cos(x[:-2])
    out = np.zeros(98)
    tir.interpret(tir.parse((EXAMPLES / "fencil_cos.tir").read_text()), out=out, inp=x)
    same(out, ref)
    out, tmp = np.zeros(98), np.zeros(100)
    tir.interpret(tir.parse((EXAMPLES / "fencil_cos_tmp.tir").read_text()), out=out, inp=x,
                  tmp=tmp)
    same(out, ref)
    same(tmp, np.cos(x))


def test_example_tridiagonal_solver():
    r = rng(11)
    a, c, d = (r.random((3, 7, 5)) for _ in range(3))
    bb = r.random((3, 7, 5)) + 3.0  # diagonally dominant
    x = np.zeros((3, 7, 5))
    tir.interpret(tir.parse((EXAMPLES / "tridiagonal.tir").read_text()), a=a, b=bb, c=c,
                  d=d, x=x)
    for i in range(3):
        for j in range(7):
            m = np.diag(bb[i, j]) + np.diag(a[i, j, 1:], -1) + np.diag(c[i, j, :-1], 1)
            np.testing.assert_allclose(x[i, j], np.linalg.solve(m, d[i, j]), rtol=1e-12)


def test_example_nabla_with_missing_neighbours():
    nv, ne = 5440, 16167
    r = rng(12)
    e2v = r.integers(0, nv, (ne, 2))
    v2e = r.integers(0, ne, (nv, 7))
    v2e[r.random((nv, 7)) < 0.15] = -1  # e.g. pentagon points: fewer than 7 edges
    pp, vol = r.random(nv), r.random(nv) + 1.0
    sx, sy = r.random(ne), r.random(ne)
    sign = r.choice([-1.0, 1.0], (nv, 7))
    out = (np.zeros(nv), np.zeros(nv))
    tir.interpret(tir.parse((EXAMPLES / "nabla.tir").read_text()), n_nodes=nv, out=out, pp=pp,
                  S_MXX=sx, S_MYY=sy, sign=sign, vol=vol, E2V=e2v, V2E=v2e)
    zavg = 0.5 * (pp[e2v[:, 0]] + pp[e2v[:, 1]])
    for o, s in zip(out, (sx, sy)):
        ref = np.zeros(nv)
        for n in range(7):
            e = v2e[:, n]
            ref += np.where(e >= 0, (s * zavg)[np.maximum(e, 0)] * sign[:, n], 0.0)
        np.testing.assert_allclose(o, ref / vol, rtol=1e-12, atol=1e-15)


def test_laplacian_is_fast():
    text = (EXAMPLES / "laplacian.tir").read_text()
    for old, new in [("IDim[0:5]", "IDim[0:256]"), ("JDim[0:7]", "JDim[0:256]"),
                     ("KDim[0:9]", "KDim[0:80]"), ("IDim[-1:6]", "IDim[-1:257]"),
                     ("JDim[-1:8]", "JDim[-1:257]")]:
        assert old in text
        text = text.replace(old, new)
    prog = tir.parse(text)
    inp = rng().random((258, 258, 80))
    out = np.zeros((256, 256, 80))
    tir.interpret(prog, out=out, inp=inp)  # type-check and warm up
    t0 = time.perf_counter()
    tir.interpret(prog, out=out, inp=inp)
    elapsed = time.perf_counter() - t0
    c = inp[1:-1, 1:-1]
    ref = inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:] - 4 * c
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    assert elapsed < 1.0, f"one interpreter call took {elapsed:.3f} s"
