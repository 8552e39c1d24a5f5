"""Acceptance audit of the Python front end in GT4Py spelling: operators and
math builtins on float32/int32 fields, tuple outputs, neighbour reductions,
``as_offset``, nested runtime ``concat_where`` and scans with tuple states.

Each program is compiled once (module-scoped fixture), run by both backends,
and the interpreter's results are compared with hand-written NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace.frontend import (
    Field,
    FieldOffset,
    Tensor,
    as_offset,
    astype,
    broadcast,
    concat_where,
    cos,
    dims,
    exp,
    field_operator,
    float32,
    index,
    int32,
    log,
    max_over,
    maximum,
    min_over,
    minimum,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
    sin,
    sqrt,
    where,
)
from tensorir_dace.frontend import (
    abs as abs_,
)

Cell, Edge, K = dims("Cell Edge K")
C2EDim, E2CDim = neighbor_dim(Edge, 3), neighbor_dim(Cell, 2)
C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))
Koff = FieldOffset("Koff", source=K, target=(K,))
CK = Field[[Cell, K], float32]
IK = Field[[Cell, K], int32]


def _both(prog, args: dict, outs) -> dict:
    """Interpreted results (checked equal to the compiled ones)."""
    results = {}
    for backend in ("interpreter", "compiled"):
        o = outs()
        prog(**args, **o, backend=backend)
        results[backend] = o
    assert_same_results(results["compiled"], results["interpreter"], rtol=1e-6)
    return results["interpreter"]


# ------------------------------------------------------------ operators


@field_operator
def operators(x: CK, y: CK, a: IK, b: IK, p: Field[[Cell, K], bool]):
    r1 = x ** 2 + abs_(x - y) + minimum(x, y) * maximum(x, y)
    r2 = where(p, x, y) + (x if True else y)
    r3 = a / b
    r4 = a % b
    r5 = -a + abs_(a) + a ** 2
    r6 = (x < y) & ~p | (a == b)
    r7 = sqrt(x) + exp(y) + log(x) + sin(x) * cos(y) + float32(2.0) * x
    r8 = astype(a, float32) / 2.0 + 3
    r9 = where(x > 0.8, 1.0, -1.0)
    r10 = astype(x, int32) + astype(p, int32)
    r11 = a // b + (a + 1) // (b * 1) + -7 // b
    r12 = x // (y - 0.5) + x // 0.3
    r13 = p ^ (x < y) ^ True
    return r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13


@program
def run_operators(x: CK, y: CK, a: IK, b: IK, p: Field[[Cell, K], bool], r1: CK, r2: CK,
                  r3: IK, r4: IK, r5: IK, r6: Field[[Cell, K], bool], r7: CK, r8: CK, r9: CK,
                  r10: IK, r11: IK, r12: CK, r13: Field[[Cell, K], bool]):
    operators(x, y, a, b, p, out=(r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13))


SH = (5, 4)


@pytest.fixture(scope="module")
def operators_run():
    rng = np.random.default_rng(0)
    args = dict(x=rng.random(SH).astype(np.float32), y=rng.random(SH).astype(np.float32),
                a=rng.integers(-9, 9, SH).astype(np.int32),
                b=(rng.integers(1, 4, SH) * rng.choice([-1, 1], SH)).astype(np.int32),
                p=rng.random(SH) < 0.5)
    kinds = dict(r1=np.float32, r2=np.float32, r3=np.int32, r4=np.int32, r5=np.int32,
                 r6=bool, r7=np.float32, r8=np.float32, r9=np.float32, r10=np.int32,
                 r11=np.int32, r12=np.float32, r13=bool)
    return args, _both(run_operators, args,
                       lambda: {k: np.zeros(SH, t) for k, t in kinds.items()})


def test_operators_against_numpy(operators_run):
    g, o = operators_run
    x, y, a, b, p = g["x"], g["y"], g["a"], g["b"], g["p"]
    c_div = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
    expected = dict(
        r1=x ** 2 + np.abs(x - y) + np.minimum(x, y) * np.maximum(x, y),
        r2=np.where(p, x, y) + x, r3=c_div, r4=np.fmod(a, b), r5=-a + np.abs(a) + a ** 2,
        r6=((x < y) & ~p) | (a == b),
        r7=np.sqrt(x) + np.exp(y) + np.log(x) + np.sin(x) * np.cos(y) + 2 * x,
        r8=a.astype(np.float32) / 2 + 3, r9=np.where(x > 0.8, 1.0, -1.0),
        r10=x.astype(np.int32) + p,
        r11=a // b + (a + 1) // b + -7 // b,           # // floors, as in Python
        r12=np.floor(x / (y - np.float32(0.5))) + np.floor(x / np.float32(0.3)),
        r13=p ^ (x < y) ^ True)
    for k, e in expected.items():
        np.testing.assert_allclose(o[k], e, rtol=2e-6, err_msg=k)
        assert o[k].dtype == e.dtype or k == "r9", k


# ------------------------------------------------ meshes, offsets, scans


@scan_operator(axis=K, forward=False, init=(0.0, 0))
def decaying_sum(state: tuple[float32, int32], w: float32, m: int32) -> tuple[float32, int32]:
    s, n = state
    return s * 0.5 + w, n + m


@scan_operator(axis=K, forward=True, init=0.0)
def branchy_sum(acc: float, x: float, y: float) -> float:
    return acc + x * y if x > 0.5 else acc - y


@field_operator
def mesh_ops(ce: Field[[Edge, K], float32], cc: CK, ki: IK, geo: Field[[Cell, C2EDim], float32]):
    s = neighbor_sum(ce(C2E) * geo, axis=C2EDim)
    mx = max_over(ce(C2E), axis=C2EDim)
    mn = min_over(astype(ce, float)(C2E), axis=C2EDim)
    up = cc(Koff[1])
    dd = cc(as_offset(Koff, ki))
    diff = cc(E2C[1]) - cc(E2C[0])
    back = neighbor_sum(diff(C2E), axis=C2EDim)
    return s, mx, mn, up, dd, back


@field_operator
def nested_lazy(cc: CK, nlev: int32):
    return concat_where(K == 0, cc, concat_where(K >= nlev - 1, 2.0 * cc,
                                                 cc(Koff[-1]) + cc(Koff[1])))


@field_operator
def or_lazy(cc: CK, nlev: int32):
    return concat_where((K == 0) | (K >= nlev - 1), cc, cc(Koff[-1]) + cc(Koff[1]))


@program
def run_mesh(ce: Field[[Edge, K], float32], cc: CK, ki: IK, geo: Field[[Cell, C2EDim], float32],
             s: CK, mx: CK, mn: Field[[Cell, K], float], up: CK, dd: CK, back: CK, z: CK, z2: CK,
             sc: CK, sn: IK, f: Field[[Cell, K], float], m: IK, nlev: int32):
    mesh_ops(ce, cc, ki, geo, out=(s, mx, mn, up, dd, back), domain={K: (0, nlev - 1)})
    nested_lazy(cc, nlev, out=z)
    or_lazy(cc, nlev, out=z2)
    decaying_sum(cc, m, out=(sc, sn))
    f = branchy_sum(astype(cc, float), astype(s, float))


NC, NE, NK = 6, 9, 5


@pytest.fixture(scope="module")
def mesh_run():
    rng = np.random.default_rng(1)
    c2e = rng.integers(0, NE, (NC, 3))
    c2e[2, 1] = -1
    ki = rng.integers(-1, 2, (NC, NK)).astype(np.int32)
    ki[:, 0] = np.maximum(ki[:, 0], 0)
    ki[:, NK - 2] = np.minimum(ki[:, NK - 2], 0)
    args = dict(ce=rng.random((NE, NK)).astype(np.float32),
                cc=rng.random((NC, NK)).astype(np.float32), ki=ki,
                geo=rng.random((NC, 3)).astype(np.float32),
                m=rng.integers(0, 3, (NC, NK)).astype(np.int32), nlev=NK - 1,
                C2E=c2e, E2C=rng.integers(0, NC, (NE, 2)))

    def outs():
        o = {k: np.zeros((NC, NK), np.float32)
             for k in ("s", "mx", "up", "dd", "back", "z", "z2", "sc")}
        return o | dict(mn=np.zeros((NC, NK)), sn=np.zeros((NC, NK), np.int32),
                        f=np.zeros((NC, NK)))
    return args, _both(run_mesh, args, outs)


def test_neighbour_reductions_and_offsets_against_numpy(mesh_run):
    g, o = mesh_run
    ce, cc, c2e, e2c, ki, geo = g["ce"], g["cc"], g["C2E"], g["E2C"], g["ki"], g["geo"]
    L = g["nlev"] - 1
    valid = (c2e >= 0)[:, :, None]
    gathered = ce[np.where(c2e >= 0, c2e, 0)]
    np.testing.assert_allclose(o["s"][:, :L], np.where(valid, gathered * geo[:, :, None], 0)
                               .sum(1)[:, :L], rtol=1e-5)
    np.testing.assert_allclose(o["mx"][:, :L], np.where(valid, gathered, -np.inf).max(1)[:, :L])
    np.testing.assert_allclose(o["mn"][:, :L], np.where(valid, gathered, np.inf).min(1)[:, :L])
    np.testing.assert_allclose(o["up"][:, :L], cc[:, 1:L + 1])
    dd = np.array([[cc[c, k + ki[c, k]] for k in range(L)] for c in range(NC)])
    np.testing.assert_allclose(o["dd"][:, :L], dd)
    diff = cc[e2c[:, 1]] - cc[e2c[:, 0]]
    np.testing.assert_allclose(o["back"][:, :L], np.where(
        valid, diff[np.where(c2e >= 0, c2e, 0)], 0).sum(1)[:, :L], rtol=1e-5, atol=1e-6)
    for k in ("s", "mx", "up", "dd", "back"):
        assert not o[k][:, L:].any(), f"{k} written outside its domain"


def test_nested_runtime_concat_where_is_lazy_and_accepted(mesh_run):
    """An inner runtime concat_where clamps its last piece to the outer target:
    the piece after a condition open to +inf is empty and left out."""
    g, o = mesh_run
    cc, nlev = g["cc"], g["nlev"]
    z = cc.copy()
    z[:, nlev - 1:] = 2 * cc[:, nlev - 1:]
    z[:, 1:nlev - 1] = cc[:, :nlev - 2] + cc[:, 2:nlev]
    np.testing.assert_allclose(o["z"], z)
    z2 = cc.copy()
    z2[:, 1:nlev - 1] = cc[:, :nlev - 2] + cc[:, 2:nlev]
    np.testing.assert_allclose(o["z2"], z2)


def test_scans_with_tuple_state_and_conditional_body(mesh_run):
    g, o = mesh_run
    cc, m = g["cc"], g["m"]
    s, n = np.zeros(NC, np.float32), np.zeros(NC, np.int32)
    sc, sn = np.zeros((NC, NK), np.float32), np.zeros((NC, NK), np.int32)
    for k in reversed(range(NK)):
        s, n = s * np.float32(0.5) + cc[:, k], n + m[:, k]
        sc[:, k], sn[:, k] = s, n
    np.testing.assert_allclose(o["sc"], sc, rtol=1e-6)
    np.testing.assert_array_equal(o["sn"], sn)
    acc, f = np.zeros(NC), np.zeros((NC, NK))
    for k in range(NK):
        x, y = cc[:, k].astype(float), o["s"][:, k].astype(float)
        acc = np.where(x > 0.5, acc + x * y, acc - y)
        f[:, k] = acc
    np.testing.assert_allclose(o["f"], f)


def test_lazy_condition_that_reads_below_the_array_is_a_located_error():
    @field_operator
    def reads_below(cc: CK, nlev: int32):
        return concat_where(K >= nlev - 1, 2.0 * cc, cc(Koff[-1]) + cc(Koff[1]))

    @program
    def whole(cc: CK, z: CK, nlev: int32):
        reads_below(cc, nlev, out=z)

    # level 0 reads level -1 unless nlev - 1 <= 0 picks the other branch there:
    # which one is known at the call, which refuses nlev = 2 before anything runs
    where = r"test_conformance_python.py:\d+:\d+: .*K\[0:N_K\]"
    z = np.full((2, 3), 7.0, np.float32)
    with pytest.raises(tir.ArgumentError, match=where) as e:
        whole(np.zeros((2, 3), np.float32), z, 2, backend="interpreter")
    assert "the bound 0 is outside its allowed range [1, 3]" in str(e.value)   # named once
    assert (z == 7.0).all()
    cc = np.arange(6, dtype=np.float32).reshape(2, 3)
    whole(cc, z, 1, backend="interpreter")        # every level from the first branch
    np.testing.assert_array_equal(z, 2.0 * cc)


# ------------------------------------ program bodies: loops, ifs, nested tuples


@field_operator
def scaled_pair(a: Field[[Cell, K], float], s: float):
    return a * s, (a + s, astype(a, int32))


@field_operator
def levels(a: Field[[Cell, K], float], z: Field[[K], float], s: float, lev: int32):
    p, (q, r) = scaled_pair(a, s)            # nested unpacking
    kk = index(K, a)
    top = where(kk == astype(lev, int), 1.0, 0.0)
    return p + broadcast(z, (Cell, K)) * top, q - z(Koff[0]), r + astype(kk, int32)


@program
def time_loop(a: Field[[Cell, K], float], z: Field[[K], float], o1: Field[[Cell, K], float],
              o2: Field[[Cell, K], float], o3: IK, n: int32, s: float, lev: int32, use: bool):
    t1 = a * 1.0
    for _ in range(n):
        levels(t1, z, s, lev, out=(o1, o2, o3))
        if use:
            t1 = o1 + o2
        else:
            t1 = o1 - o2
    o1 = t1


def _time_loop_numpy(a, z, n, s, lev, use):
    t1, o2, o3 = a.copy(), np.zeros_like(a), np.zeros(a.shape, np.int32)
    kk = np.arange(a.shape[1])[None, :]
    for _ in range(n):
        o1 = t1 * s + z[None, :] * (kk == lev)
        o2 = t1 + s - z[None, :]
        o3 = (t1.astype(np.int32) + kk).astype(np.int32)
        t1 = o1 + o2 if use else o1 - o2
    return t1, o2, o3


@pytest.mark.parametrize("n, s, lev, use", [(3, 0.5, 2, True), (2, 1.5, 0, False),
                                            (0, 1.0, 1, True)])
def test_loops_ifs_and_nested_unpacking(n, s, lev, use):
    rng = np.random.default_rng(3)
    a, z = rng.random((4, 5)) * 3, rng.random(5)
    expected = _time_loop_numpy(a, z, n, s, lev, use)
    for backend in ("interpreter", "compiled"):
        o1, o2, o3 = np.zeros((4, 5)), np.zeros((4, 5)), np.zeros((4, 5), np.int32)
        time_loop(a, z, o1, o2, o3, n, s, lev, use, backend=backend)
        np.testing.assert_allclose(o1, expected[0], err_msg=backend)
        if n:
            np.testing.assert_allclose(o2, expected[1], err_msg=backend)
            np.testing.assert_array_equal(o3, expected[2], err_msg=backend)


def test_the_scalar_annotation_hint_names_only_a_matching_annotation():
    @field_operator
    def mixed(a: Field[[Cell, K], float], s: float, lev: int32):
        return where(index(K, a) == lev, a * s, a)

    with pytest.raises(tir.TypeCheckError) as info:
        mixed(np.zeros((2, 3)), 1.0, 1, backend="interpreter")
    message = str(info.value)
    assert "int64 and int32" in message and "'s: float'" not in message, message


# ------------------------------------ memory orders, halos and tuple scans


@scan_operator(axis=K, forward=True, init=(0.0, 1.0))
def carried(s: tuple[float, float], a: float, b: float) -> tuple[float, float]:
    return s[0] + a * s[1], b


@field_operator
def mixed_orders(a: Field[[K, Cell], float], b: Field[[Cell, K], float]):
    x, y = carried(a, b)
    return x + y(Koff[0]), a(Koff[1]) + b


@program
def run_mixed_orders(a: Field[[K, Cell], float], b: Field[[Cell, K], float],
                     h: Tensor[float, Cell.halo(1), K], nlev: int,
                     o1: Field[[K, Cell], float], o2: Field[[Cell, K], float]):
    mixed_orders(a, b, out=(o1, o2), domain={K: (0, nlev - 1)})
    o2[1:, :] = h(Cell - 1)


def test_memory_orders_halos_and_a_tuple_scan_under_a_domain():
    rng = np.random.default_rng(0)
    nc, nk = 4, 5
    a, b, h = rng.random((nk, nc)), rng.random((nc, nk)), rng.random((nc + 2, nk))
    s0, s1, x, y = np.zeros(nc), np.ones(nc), np.zeros((nk, nc)), np.zeros((nk, nc))
    for k in range(nk - 1):
        s0, s1 = s0 + a[k] * s1, b[:, k]
        x[k], y[k] = s0, s1
    e1 = np.zeros((nk, nc))
    e1[:nk - 1] = (x + y)[:nk - 1]
    e2 = np.zeros((nc, nk))
    e2[:, :nk - 1] = a[1:].T + b[:, :nk - 1]
    e2[1:, :] = h[1:nc, :]           # h(Cell - 1) at cell c is h's element c
    for backend in ("interpreter", "compiled"):
        o1, o2 = np.zeros((nk, nc)), np.zeros((nc, nk))
        run_mixed_orders(a, b, h, nk, o1, o2, backend=backend)
        np.testing.assert_allclose(o1, e1, err_msg=backend)
        np.testing.assert_allclose(o2, e2, err_msg=backend)


@program
def scalar_bounds(x: Field[[Cell], float], o: Field[[Cell], float], n: int):
    for _ in range((n + 1) // 2):
        o[...] = o + x
    if n // 3 > 1:
        o[...] = o * 2.0
    for _ in range(min(n, 2)):
        o[...] = o + 100.0
    for _ in range(max(n, 2) - 2):
        o[...] = o + 1000.0


@pytest.mark.parametrize("n", [5, -5, 7, 0])
def test_floor_division_min_and_max_in_loop_bounds_and_conditions(n):
    """What the checker accepts in program-level control flow, compiled code runs."""
    v = max((n + 1) // 2, 0) * (2 if n // 3 > 1 else 1)
    expected = v + 100 * max(min(n, 2), 0) + 1000 * max(max(n, 2) - 2, 0)
    for backend in ("interpreter", "compiled"):
        o = np.zeros(3)
        scalar_bounds(np.ones(3), o, n, backend=backend)
        np.testing.assert_array_equal(o, expected, err_msg=backend)
