"""Acceptance audit of the text syntax: every builtin, tuples, scans, reductions
and shifts, each checked interpreter-vs-NumPy and compiled-vs-interpreter.

Each program puts many statements into one compile (module-scoped fixtures);
element types are float32/int32 wherever the construct allows, intervals do not
start at 0 and dimension orders differ between parameters.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import assert_same_results, compiled, parsed


def _run_both(src: str, args: dict, outs) -> tuple[dict, dict]:
    """(interpreted, compiled) outputs of ``src`` on ``args`` and fresh ``outs()``."""
    ref = outs()
    tir.interpret(parsed(src), **args, **ref)
    got = outs()
    compiled(src)(**args, **got)
    assert_same_results(got, ref, rtol=1e-6)
    return ref, got


# ----------------------------------------------------------------- builtins

BUILTINS = """
builtins(x: tensor<float32, I[0:N]>, y: tensor<float32, I[0:N]>,
         a: tensor<int32, I[0:N]>, b: tensor<int32, I[0:N]>,
         c: tensor<int, I[0:N]>, d: tensor<int, I[0:N]>, p: tensor<bool, I[0:N]>,
         of: tensor<float32, I[0:N], S[0:19]>, oi: tensor<int32, I[0:N], S[0:8]>,
         ol: tensor<int, I[0:N], S[0:6]>, ob: tensor<bool, I[0:N], S[0:11]>,
         od: tensor<float, I[0:N], S[0:3]>) {
  subset(of, S[0:1]) <- sqrt(x); subset(of, S[1:2]) <- exp(x); subset(of, S[2:3]) <- log(x);
  subset(of, S[3:4]) <- sin(x) + cos(y) + tan(x); subset(of, S[4:5]) <- arctan2(x, y);
  subset(of, S[5:6]) <- power(x, y); subset(of, S[6:7]) <- minimum(x, y) - maximum(x, y);
  subset(of, S[7:8]) <- abs(x - y);
  subset(of, S[8:9]) <- floor(x * 3.0) + ceil(y * 3.0) + trunc(-x * 3.0);
  subset(of, S[9:10]) <- x / y % 0.3; subset(of, S[10:11]) <- if(p, x, y);
  subset(of, S[11:12]) <- cast(a, float32) + cast(c, float32); subset(of, S[12:13]) <- -x;
  subset(of, S[13:14]) <- log10(x) + log2(y) + sinh(x) + cosh(y) + tanh(x);
  subset(of, S[14:15]) <- arcsin(x - 1.0) + arccos(y - 1.0) + arctan(x) + arcsinh(x)
                          + arccosh(y + 1.0) + arctanh(x - 1.0);
  subset(of, S[15:16]) <- power(x, 2.0);
  subset(of, S[16:17]) <- cast(p, float32);
  subset(of, S[17:18]) <- 1.5 - x * 2;
  subset(of, S[18:19]) <- cast(cast(x, float), float32);
  subset(oi, S[0:1]) <- a / b; subset(oi, S[1:2]) <- a % b; subset(oi, S[2:3]) <- minimum(a, b);
  subset(oi, S[3:4]) <- abs(a) + -a; subset(oi, S[4:5]) <- cast(x * 10.0, int32);
  subset(oi, S[5:6]) <- power(a, 2); subset(oi, S[6:7]) <- cast(c, int32) * 3 - 7;
  subset(oi, S[7:8]) <- if(a > b, a, b);
  subset(ol, S[0:1]) <- c / d; subset(ol, S[1:2]) <- c % d; subset(ol, S[2:3]) <- maximum(c, d);
  subset(ol, S[3:4]) <- cast(a, int) * 1000000000000; subset(ol, S[4:5]) <- cast(-x * 3.0, int);
  subset(ol, S[5:6]) <- cast(p, int);
  subset(ob, S[0:1]) <- x < y; subset(ob, S[1:2]) <- x <= y; subset(ob, S[2:3]) <- a == b;
  subset(ob, S[3:4]) <- a != b; subset(ob, S[4:5]) <- x > y && p;
  subset(ob, S[5:6]) <- !p || x >= y; subset(ob, S[6:7]) <- isnan((x - x) / (y - y));
  subset(ob, S[7:8]) <- isinf(x / (y - y)); subset(ob, S[8:9]) <- isfinite(x);
  subset(ob, S[9:10]) <- cast(a, bool); subset(ob, S[10:11]) <- p != (a < 0);
  subset(od, S[0:1]) <- cast(x, float) * 1.0e300; subset(od, S[1:2]) <- cast(c, float) / 3.0;
  subset(od, S[2:3]) <- cast(1.0, float64) + 2.0;
}
"""

N = 13


@pytest.fixture(scope="module")
def builtins_run():
    rng = np.random.default_rng(1)
    f32 = np.float32
    args = dict(x=(rng.random(N) + 0.5).astype(f32), y=(rng.random(N) + 0.5).astype(f32),
                a=rng.integers(-9, 10, N).astype(np.int32),
                b=(rng.integers(1, 5, N) * rng.choice([-1, 1], N)).astype(np.int32),
                c=rng.integers(-20, 20, N), d=rng.integers(1, 6, N) * rng.choice([-1, 1], N),
                p=rng.random(N) < 0.5)

    def outs():
        return dict(of=np.zeros((N, 19), f32), oi=np.zeros((N, 8), np.int32),
                    ol=np.zeros((N, 6), np.int64), ob=np.zeros((N, 11), bool),
                    od=np.zeros((N, 3)))
    ref, _ = _run_both(BUILTINS, args, outs)
    return args, ref


def _c_div(u, v):
    """C's integer division: truncates toward zero."""
    return (np.abs(u) // np.abs(v)) * np.sign(u) * np.sign(v)


def test_builtins_float32_against_numpy(builtins_run):
    g, ref = builtins_run
    x, y, a, c, p = g["x"], g["y"], g["a"], g["c"], g["p"]
    f32 = np.float32
    expected = [np.sqrt(x), np.exp(x), np.log(x), np.sin(x) + np.cos(y) + np.tan(x),
                np.arctan2(x, y), x ** y, np.minimum(x, y) - np.maximum(x, y), np.abs(x - y),
                np.floor(x * 3) + np.ceil(y * 3) + np.trunc(-x * 3), np.fmod(x / y, f32(0.3)),
                np.where(p, x, y), a.astype(f32) + c.astype(f32), -x,
                np.log10(x) + np.log2(y) + np.sinh(x) + np.cosh(y) + np.tanh(x),
                np.arcsin(x - 1) + np.arccos(y - 1) + np.arctan(x) + np.arcsinh(x)
                + np.arccosh(y + 1) + np.arctanh(x - 1),
                x * x, p.astype(f32), 1.5 - x * 2, x]
    for j, e in enumerate(expected):
        np.testing.assert_allclose(ref["of"][:, j], e, rtol=2e-6, err_msg=f"column {j}")


def test_builtins_integers_truncate_like_c(builtins_run):
    g, ref = builtins_run
    x, a, b, c, d, p = g["x"], g["a"], g["b"], g["c"], g["d"], g["p"]
    i32 = [_c_div(a, b), np.fmod(a, b), np.minimum(a, b), np.abs(a) - a,
           (x * np.float32(10)).astype(np.int32), a ** 2, c.astype(np.int32) * 3 - 7,
           np.where(a > b, a, b)]
    for j, e in enumerate(i32):
        np.testing.assert_array_equal(ref["oi"][:, j], e, err_msg=f"int32 column {j}")
    i64 = [_c_div(c, d), np.fmod(c, d), np.maximum(c, d), a.astype(np.int64) * 10 ** 12,
           (-x * np.float32(3)).astype(np.int64), p.astype(np.int64)]
    for j, e in enumerate(i64):
        np.testing.assert_array_equal(ref["ol"][:, j], e, err_msg=f"int64 column {j}")


def test_builtins_bool_and_float64(builtins_run):
    g, ref = builtins_run
    x, y, a, b, c, p = g["x"], g["y"], g["a"], g["b"], g["c"], g["p"]
    true = np.ones(N, bool)
    expected = [x < y, x <= y, a == b, a != b, (x > y) & p, ~p | (x >= y), true, true, true,
                a != 0, p != (a < 0)]
    for j, e in enumerate(expected):
        np.testing.assert_array_equal(ref["ob"][:, j], e, err_msg=f"bool column {j}")
    np.testing.assert_allclose(ref["od"][:, 0], x.astype(float) * 1e300)
    np.testing.assert_allclose(ref["od"][:, 1], c / 3.0)
    np.testing.assert_allclose(ref["od"][:, 2], 3.0)


# ------------------------------------------------------ tuples and scans

TUPLES = """
tuples(a: tensor<float, K[2:7], C[-1:N]>, b: tensor<float32, K[2:7], C[-1:N]>,
       i: tensor<int32, C[-1:N], K[2:7]>, tt: tensor<(float, (int32, float32)), C[-1:N], K[2:7]>,
       o1: tensor<(float, (int32, float32)), K[2:7], C[-1:N]>,
       o2: tensor<(float, float32), C[-1:N], K[2:7]>, o3: tensor<float, K[2:7], C[-1:N]>,
       o4: tensor<(float, int32), K[2:7], C[-1:N]>, o5: tensor<float32, C[-1:N], K[2:7]>,
       o6: tensor<int32, K[2:7], C[-1:N]>, o7: tensor<float, C[-1:N], K[2:7]>) {
  tmp: tensor<((float, float32), int32), C[-1:N], K[2:7]>;
  o1 <- make_tuple(a + tt[0], make_tuple(i + tt[1][0], b * tt[1][1]));
  tmp <- make_tuple(make_tuple(a, b), i);
  o2 <- tmp[0];
  o3 <- scan(lambda(s: tensor<float, C[-1:N]>, x: tensor<float, C[-1:N]>,
                    y: tensor<float32, C[-1:N]>) -> s * 0.5 + x * cast(y, float), True, 1.0)(a, b);
  o4 <- scan(lambda(s: tensor<(float, int32), C[-1:N]>, x: tensor<float, C[-1:N]>,
                    j: tensor<int32, C[-1:N]>)
                 -> make_tuple(s[0] + x * cast(s[1], float), s[1] + j),
             False, make_tuple(0.0, 1))(a, i);
  o5 <- scan(lambda(s: tensor<float32, K[2:7]>, y: tensor<float32, K[2:7]>) -> s + y,
             True, 0.0, C)(b);
  o6 <- scan(lambda(s: tensor<(int32, int32), C[-1:N]>, j: tensor<int32, C[-1:N]>)
                 -> make_tuple(s[1], s[0] + j), False, make_tuple(0, 0), K)(i)[1];
  o7 <- scan(lambda(s: tensor<((float, float), float), C[-1:N]>, x: tensor<float, C[-1:N]>)
                 -> make_tuple(make_tuple(s[0][1], s[1]), s[0][0] + x),
             True, make_tuple(make_tuple(1.0, 2.0), 3.0))(a)[0][1];
}
"""

NC, NK = 6, 5


@pytest.fixture(scope="module")
def tuples_run():
    rng = np.random.default_rng(2)
    i32, f32 = np.int32, np.float32
    args = dict(a=rng.random((NK, NC)), b=rng.random((NK, NC)).astype(f32),
                i=rng.integers(-5, 5, (NC, NK)).astype(i32),
                tt=(rng.random((NC, NK)), (rng.integers(-5, 5, (NC, NK)).astype(i32),
                                           rng.random((NC, NK)).astype(f32))))

    def outs():
        return dict(o1=(np.zeros((NK, NC)), (np.zeros((NK, NC), i32), np.zeros((NK, NC), f32))),
                    o2=(np.zeros((NC, NK)), np.zeros((NC, NK), f32)), o3=np.zeros((NK, NC)),
                    o4=(np.zeros((NK, NC)), np.zeros((NK, NC), i32)),
                    o5=np.zeros((NC, NK), f32), o6=np.zeros((NK, NC), i32),
                    o7=np.zeros((NC, NK)))
    ref, _ = _run_both(TUPLES, args, outs)
    return args, ref


def test_nested_tuples_against_numpy(tuples_run):
    g, ref = tuples_run
    a, b, tt = g["a"], g["b"], g["tt"]
    iT = g["i"].T
    np.testing.assert_allclose(ref["o1"][0], a + tt[0].T)
    np.testing.assert_array_equal(ref["o1"][1][0], iT + tt[1][0].T)
    np.testing.assert_allclose(ref["o1"][1][1], b * tt[1][1].T, rtol=1e-6)
    np.testing.assert_allclose(ref["o2"][0], a.T)
    np.testing.assert_array_equal(ref["o2"][1], b.T)


def test_scans_with_tuple_states_and_named_dimension(tuples_run):
    g, ref = tuples_run
    a, b, iT = g["a"], g["b"], g["i"].T
    s, r3 = np.ones(NC), []
    for k in range(NK):
        s = s * 0.5 + a[k] * b[k].astype(float)
        r3.append(s)
    np.testing.assert_allclose(ref["o3"], np.array(r3))
    s0, s1 = np.zeros(NC), np.ones(NC, np.int32)
    r4a, r4b = [None] * NK, [None] * NK
    for k in reversed(range(NK)):
        s0, s1 = s0 + a[k] * s1, s1 + iT[k]
        r4a[k], r4b[k] = s0, s1
    np.testing.assert_allclose(ref["o4"][0], np.array(r4a))
    np.testing.assert_array_equal(ref["o4"][1], np.array(r4b))
    np.testing.assert_allclose(ref["o5"], np.cumsum(b, axis=1).T, rtol=1e-5)
    p, q, r6 = np.zeros(NC, np.int32), np.zeros(NC, np.int32), [None] * NK
    for k in reversed(range(NK)):
        p, q = q, p + iT[k]
        r6[k] = q
    np.testing.assert_array_equal(ref["o6"], np.array(r6))
    st, r7 = ((np.ones(NC), 2 * np.ones(NC)), 3 * np.ones(NC)), []
    for k in range(NK):
        st = ((st[0][1], st[1]), st[0][0] + a[k])
        r7.append(st[0][1])
    np.testing.assert_allclose(ref["o7"], np.array(r7).T)


# ------------------------------------------- unstructured shifts and presence

MESH = """
mesh(v: tensor<float, Vertex[0:NV], K[0:NK]>, e: tensor<float32, Edge[0:NE]>,
     ei: tensor<int32, K[0:NK], Edge[0:NE]>,
     E2V: tensor<int, Edge[0:NE], _NB_Vertex[0:2]>, V2E: tensor<int32, Vertex[0:NV], _NB_Edge[0:3]>,
     w: tensor<float, Vertex[0:NV], _NB_0[0:3]>,
     o1: tensor<float, K[0:NK], Vertex[0:NV]>, o2: tensor<float32, Vertex[0:NV]>,
     o3: tensor<bool, Vertex[0:NV], K[0:NK], _NB_0[0:3]>, o4: tensor<float, Vertex[0:NV], K[0:NK]>,
     o5: tensor<(float, int32), Vertex[0:NV], K[0:NK]>, o6: tensor<float, Vertex[0:NV], K[0:NK]>,
     o7: tensor<bool, Edge[0:NE], K[0:NK]>, o8: tensor<float32, Vertex[0:NV]>,
     o9: tensor<float, Vertex[0:NV], _NB_0[0:3], K[0:NK]>,
     o10: tensor<float, Vertex[0:NV], K[0:NK]>,
     o11: tensor<float, Vertex[0:NV], K[0:NK]>) {
  o1 <- reduce(lambda(acc: tensor<float, Vertex[0:NV], K[0:NK]>,
                      x: tensor<float, Vertex[0:NV], K[0:NK]>,
                      ww: tensor<float, Vertex[0:NV]>) -> acc + x * ww, 0.0)
             (<<V2E>>(<<E2V, 0>>(v) - <<E2V, 1>>(v)), w);
  o2 <- shift_apply(2)(shift_init(V2E)(e)) + unstructured_shift(V2E, 0)(e);
  o3 <- can_deref(<<V2E>>(<<E2V, 1>>(v)));
  o4 <- reduce(lambda(acc: tensor<float, Vertex[0:NV], K[0:NK]>,
                      x: tensor<float, Vertex[0:NV], K[0:NK]>)
               -> maximum(acc, x), -1000.0)(shift_apply(1)(<<V2E>>(<<E2V>>(v))));
  o5 <- reduce(lambda(acc: tensor<(float, int32), Vertex[0:NV], K[0:NK]>,
                      x: tensor<float, Vertex[0:NV], K[0:NK]>)
               -> make_tuple(acc[0] + x, acc[1] + 1),
               make_tuple(0.0, 0))(<<V2E>>(<<E2V, 0>>(v)));
  o6 <- shift_apply(0)(reduce(lambda(acc: tensor<float, Vertex[0:NV], K[0:NK], _NB_1[0:3]>,
                                     x: tensor<float, Vertex[0:NV], K[0:NK], _NB_1[0:3]>)
                              -> acc + x,
                              0.0, _NB_0)(<<V2E>>(<<E2V>>(v))));
  o7 <- can_deref(<<K, ei>>(cast(e, float) + <<E2V, 0>>(v)));
  o8 <- reduce(lambda(acc: tensor<float32, Vertex[0:NV]>, x: tensor<float32, Vertex[0:NV]>)
               -> acc + x,
               0.0)(<<V2E>>(e));
  o9 <- if(can_deref(<<V2E>>(<<E2V, 1>>(v))), <<V2E>>(<<E2V, 1>>(v)), -1.0);
  o10 <- reduce(lambda(acc: tensor<float, Vertex[0:NV], K[0:NK]>,
                       x: tensor<float, Vertex[0:NV], K[0:NK]>)
                -> acc + x, 0.0)(<<V2E>>(<<K, ei>>(cast(e, float) + 0.0 * <<E2V, 0>>(v))));
  o11 <- reduce(lambda(acc: tensor<float, Vertex[0:NV], K[0:NK]>,
                       x: tensor<float, Vertex[0:NV], K[0:NK]>)
                -> acc + x, 0.0)(<<V2E>>(if(can_deref(<<E2V, 1>>(v)), <<E2V, 1>>(v), 0.0)));
}
"""

NV, NE, NKM = 6, 9, 4


@pytest.fixture(scope="module")
def mesh_run():
    rng = np.random.default_rng(3)
    E2V = rng.integers(0, NV, (NE, 2))
    E2V[2, 1] = E2V[5, 0] = -1
    V2E = rng.integers(0, NE, (NV, 3)).astype(np.int32)
    V2E[1, 2] = V2E[4, 0] = -1
    args = dict(v=rng.random((NV, NKM)), e=rng.random(NE).astype(np.float32),
                ei=rng.integers(-2, 3, (NKM, NE)).astype(np.int32), E2V=E2V, V2E=V2E,
                w=rng.random((NV, 3)))

    def outs():
        return dict(o1=np.zeros((NKM, NV)), o2=np.zeros(NV, np.float32),
                    o3=np.zeros((NV, NKM, 3), bool), o4=np.zeros((NV, NKM)),
                    o5=(np.zeros((NV, NKM)), np.zeros((NV, NKM), np.int32)),
                    o6=np.zeros((NV, NKM)), o7=np.zeros((NE, NKM), bool),
                    o8=np.zeros(NV, np.float32), o9=np.zeros((NV, 3, NKM)),
                    o10=np.zeros((NV, NKM)), o11=np.zeros((NV, NKM)))
    ref, _ = _run_both(MESH, args, outs)
    return args, ref


def _end(g, ed, j):
    """v at end j of edge ed, or None where either table entry is absent."""
    if ed < 0 or g["E2V"][ed, j] < 0:
        return None
    return g["v"][g["E2V"][ed, j]]


def test_reduce_over_nested_and_sparse_operands(mesh_run):
    g, ref = mesh_run
    V2E, w = g["V2E"], g["w"]
    r1, r5a, r5b, r11 = (np.zeros((NV, NKM)) for _ in range(4))
    for vi in range(NV):
        for n, ed in enumerate(V2E[vi]):
            a0, a1 = _end(g, ed, 0), _end(g, ed, 1)
            if a0 is not None and a1 is not None:
                r1[vi] += (a0 - a1) * w[vi, n]
            if a0 is not None:
                r5a[vi] += a0
                r5b[vi] += 1
            if a1 is not None:
                r11[vi] += a1
    np.testing.assert_allclose(ref["o1"], r1.T)
    np.testing.assert_allclose(ref["o5"][0], r5a)
    np.testing.assert_array_equal(ref["o5"][1], r5b)
    np.testing.assert_allclose(ref["o11"], r11)
    e = g["e"]
    r8 = np.array([sum(e[x] for x in V2E[vi] if x >= 0) for vi in range(NV)], np.float32)
    np.testing.assert_allclose(ref["o8"], r8, rtol=1e-6)


def test_shift_apply_of_a_nested_partial_shift_keeps_the_inner_mask(mesh_run):
    """shift_apply on the outer neighbour dimension selects the inner mask too."""
    g, ref = mesh_run
    r4, r6 = np.full((NV, NKM), -1000.0), np.zeros((NV, NKM))
    for vi in range(NV):
        ed = g["V2E"][vi, 1]
        if ed < 0:
            r4[vi] = np.nan
        for j in range(2):
            if (x := _end(g, ed, j)) is not None:
                r4[vi] = np.maximum(r4[vi], x)
            if (y := _end(g, g["V2E"][vi, 0], j)) is not None:
                r6[vi] += y
    np.testing.assert_allclose(ref["o4"], r4, equal_nan=True)
    np.testing.assert_allclose(ref["o6"], r6)


def test_presence_of_nested_and_offset_shifts(mesh_run):
    g, ref = mesh_run
    V2E, E2V, ei, e = g["V2E"], g["E2V"], g["ei"], g["e"]
    r3 = np.array([[V2E[vi, n] >= 0 and E2V[V2E[vi, n], 1] >= 0 for n in range(3)]
                   for vi in range(NV)])
    np.testing.assert_array_equal(ref["o3"], np.repeat(r3[:, None, :], NKM, 1))
    r9 = np.where(r3[:, :, None], ref["o9"], -1.0)
    np.testing.assert_array_equal(ref["o9"], r9)
    r7 = np.array([[0 <= k + ei[k, ed] < NKM and E2V[ed, 0] >= 0 for k in range(NKM)]
                   for ed in range(NE)])
    np.testing.assert_array_equal(ref["o7"], r7)
    r10 = np.zeros((NV, NKM))
    for vi in range(NV):
        for ed in V2E[vi]:
            for k in range(NKM):
                if ed >= 0 and 0 <= k + ei[k, ed] < NKM and E2V[ed, 0] >= 0:
                    r10[vi, k] += e[ed]
    np.testing.assert_allclose(ref["o10"], r10, rtol=1e-6)
    r2 = np.array([(e[V2E[vi, 2]] if V2E[vi, 2] >= 0 else np.nan)
                   + (e[V2E[vi, 0]] if V2E[vi, 0] >= 0 else np.nan) for vi in range(NV)],
                  np.float32)
    np.testing.assert_allclose(ref["o2"], r2, equal_nan=True)


# ------------------------------------ scans over operand domains and sparse states

SCANS = """
scans(x: tensor<float, K[0:L], C[0:N]>, y: tensor<float, C[0:N], K[1:L]>,
      w: tensor<float, C[0:N], K[0:L], _NB_0[0:3]>, C2E: tensor<int, C[0:N], _NB_E[0:3]>,
      e: tensor<float, E[0:M], K[0:L]>,
      o1: tensor<float, C[0:N], K[1:L]>, o2: tensor<float, C[0:N], K[2:L]>,
      o3: tensor<float, C[0:N], K[0:L]>, o4: tensor<float, C[0:N], K[0:L-1]>,
      o5: tensor<float, C[0:N], K[0:L]>) {
  o1 <- scan(lambda(s: tensor<float, C[0:N]>, a: tensor<float, C[0:N]>, b: tensor<float, C[0:N]>)
             -> s + a * b, True, 0.0)(x, y);
  o2 <- scan(lambda(s: tensor<float, C[0:N]>, a: tensor<float, C[0:N]>, b: tensor<float, C[0:N]>)
             -> s * 0.5 + a - b, False, 1.0)(x, y);
  o3 <- scan(lambda(s: tensor<float, C[0:N]>, ww: tensor<float, C[0:N], _NB_0[0:3]>) ->
             s + reduce(lambda(acc: tensor<float, C[0:N]>, v: tensor<float, C[0:N]>) -> acc + v,
                        0.0)(ww), True, 0.0)(w);
  o4 <- scan(lambda(s: tensor<float, C[0:N]>, a: tensor<float, C[0:N]>) -> s + a,
             True, 0.0)(<<K, 1>>(x));
  o5 <- scan(lambda(s: tensor<float, C[0:N]>, ee: tensor<float, C[0:N], _NB_0[0:3]>) ->
             maximum(s, reduce(lambda(acc: tensor<float, C[0:N]>, v: tensor<float, C[0:N]>)
                               -> acc + v, 0.0)(ee)), True, -1.0)(<<C2E>>(e));
}
"""

SN, SL, SM = 4, 6, 7


@pytest.fixture(scope="module")
def scans_run():
    rng = np.random.default_rng(1)
    c2e = rng.integers(0, SM, (SN, 3))
    c2e[1, 2] = -1
    args = dict(x=rng.random((SL, SN)), y=rng.random((SN, SL - 1)), w=rng.random((SN, SL, 3)),
                C2E=c2e, e=rng.random((SM, SL)))

    def outs():
        return dict(o1=np.zeros((SN, SL - 1)), o2=np.zeros((SN, SL - 2)),
                    o3=np.zeros((SN, SL)), o4=np.zeros((SN, SL - 1)), o5=np.zeros((SN, SL)))
    ref, _ = _run_both(SCANS, args, outs)
    return args, ref


def test_scans_run_over_their_operands_domain(scans_run):
    """The scan starts at its operands' first level (last, backward), even where
    they are wider than the target, which takes its part."""
    g, ref = scans_run
    xT, y = g["x"].T, g["y"]
    s, r1 = np.zeros(SN), []
    for k in range(1, SL):
        s = s + xT[:, k] * y[:, k - 1]
        r1.append(s)
    np.testing.assert_allclose(ref["o1"], np.array(r1).T)
    s, r2 = np.ones(SN), {}
    for k in reversed(range(1, SL)):
        s = s * 0.5 + xT[:, k] - y[:, k - 1]
        r2[k] = s
    np.testing.assert_allclose(ref["o2"], np.array([r2[k] for k in range(2, SL)]).T)
    np.testing.assert_allclose(ref["o4"], np.cumsum(xT, axis=1)[:, 1:])


def test_scans_with_a_reduction_in_the_step(scans_run):
    g, ref = scans_run
    np.testing.assert_allclose(ref["o3"], np.cumsum(g["w"].sum(2), axis=1))
    s, r5 = -np.ones(SN), []
    for k in range(SL):
        red = np.array([sum(g["e"][j, k] for j in g["C2E"][c] if j >= 0) for c in range(SN)])
        s = np.maximum(s, red)
        r5.append(s)
    np.testing.assert_allclose(ref["o5"], np.array(r5).T)


# ------------------------------- integer division the CPU would trap on

TRAPS = """
traps(a: tensor<int32, I[0:N]>, b: tensor<int32, I[0:N]>, c: tensor<int, I[0:N]>,
      d: tensor<int, I[0:N]>, n: tensor<int>, m: tensor<int>,
      q32: tensor<int32, I[0:N]>, r32: tensor<int32, I[0:N]>, q64: tensor<int, I[0:N]>,
      r64: tensor<int, I[0:N]>, o: tensor<int, I[0:N]>) {
  q32 <- a / b; r32 <- a % b; q64 <- c / d; r64 <- c % d;
  if (n / m > 1 || n % m == 1) { o <- c } else { o <- d }
  for (t in 0:n / m) { o <- o + 1 }
}
"""


@pytest.mark.parametrize("n, m", [(7, 0), (7, 2), (-7, 2), (7, -1), (-9, -1),
                                  (-9223372036854775808, -1)])
def test_integer_division_by_zero_and_minus_one_never_traps(n, m):
    """Division by 0 is 0 and MIN / -1 wraps to MIN, in tasklets and in program-level
    conditions and loop bounds alike (the CPU would raise SIGFPE on both)."""
    i32, i64 = np.iinfo(np.int32).min, np.iinfo(np.int64).min
    args = dict(a=np.array([7, i32, -7, 5], np.int32), b=np.array([0, -1, 2, -1], np.int32),
                c=np.array([7, i64, -7, 5]), d=np.array([0, -1, 2, -1]), n=n, m=m)

    def outs():
        return dict(q32=np.zeros(4, np.int32), r32=np.zeros(4, np.int32),
                    q64=np.zeros(4, np.int64), r64=np.zeros(4, np.int64),
                    o=np.zeros(4, np.int64))
    ref, _ = _run_both(TRAPS, args, outs)
    np.testing.assert_array_equal(ref["q32"], [0, i32, -3, -5])
    np.testing.assert_array_equal(ref["r32"], [0, 0, -1, 0])
    np.testing.assert_array_equal(ref["q64"], [0, i64, -3, -5])
    np.testing.assert_array_equal(ref["r64"], [0, 0, -1, 0])
    q = 0 if m == 0 else (-n if m == -1 and n != i64 else n if m == -1 else int(n / m))
    r = 0 if m in (0, -1) else int(np.fmod(n, m))
    o = (args["c"] if q > 1 or r == 1 else args["d"]) + max(q, 0)
    np.testing.assert_array_equal(ref["o"], o)


CONTROL = """
control(o: tensor<int, I[0:3]>, n: tensor<int32>, a: tensor<float>) {
  for (t in 0:minimum(n, 3)) { o <- o + 1 }
  for (t in 0:maximum(n - 5, 0)) { o <- o + 10 }
  if (if(n > 2, a, 0.0) > 1.5) { o <- o + 100 } else { o <- o + 1000 }
  for (t in 0:abs(n) - cast(a * 2.5, int32)) { o <- o + 10000 }
  if (cast(a * 10000000000.0, int) > 20000000000 && cast(n, bool)) { o <- o + 100000 }
}
"""


@pytest.mark.parametrize("n, a", [(1, 2.0), (7, 2.0), (7, 1.0), (-3, 9.0), (0, 3.0)])
def test_select_minimum_maximum_abs_and_cast_in_program_level_control_flow(n, a):
    """What the checker accepts in conditions and loop bounds, compiled code runs."""
    ref, _ = _run_both(CONTROL, dict(n=n, a=a), lambda: dict(o=np.zeros(3, np.int64)))
    expected = max(min(n, 3), 0) + 10 * max(n - 5, 0) + (100 if (a if n > 2 else 0.0) > 1.5
                                                          else 1000)
    expected += 10000 * max(abs(n) - int(a * 2.5), 0)
    expected += 100000 * (int(a * 1e10) > 20000000000 and n != 0)
    np.testing.assert_array_equal(ref["o"], expected)
