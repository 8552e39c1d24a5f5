"""The Python spellings of data-dependent offsets, declared connectivities, nested
shifts, sparse-slot selection, typed literals, NamedTuple scan states and
astype on tuples.

Every program runs compiled and interpreted and is compared with hand-written
NumPy, on meshes whose neighbour tables contain -1.  The compiled programs are
module-scoped fixtures (one compile each).
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace.errors import FrontendError, TensorIRError, TypeCheckError
from tensorir_dace.frontend import (
    SparseTensor,
    Tensor,
    as_offset,
    astype,
    can_deref,
    connectivity,
    dims,
    float32,
    float64,
    function,
    int32,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
    where,
)

Cell, K, Vertex, Edge = dims("Cell K Vertex Edge")
C2E2CDim = neighbor_dim(Cell, 3)
E2VDim = neighbor_dim(Vertex, 2)
V2EDim = neighbor_dim(Edge, 3)
C2E2C = connectivity("C2E2C", Cell, C2E2CDim)
E2V = connectivity("E2V", Edge, E2VDim)
V2E = connectivity("V2E", Vertex, V2EDim)
wpfloat = float64          # ICON's working-precision alias
vpfloat = float32

NC, NK, NV, NE = 7, 6, 5, 8
RNG = np.random.default_rng(11)


def table(rows: int, cols: int, targets: int, absent: float = 0.25) -> np.ndarray:
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    t[0, 0] = -1
    return t


TABLES = {"C2E2C": table(NC, 3, NC), "E2V": table(NE, 2, NV), "V2E": table(NV, 3, NE)}


def shifted_at(field: np.ndarray, rows: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """field[rows, levels] where both are in range, else NaN."""
    ok = (rows >= 0) & (levels >= 0) & (levels < field.shape[1])
    return np.where(ok, field[np.where(rows >= 0, rows, 0),
                              np.clip(levels, 0, field.shape[1] - 1)], np.nan)


# =========================================================================== offsets


@function
def steep_points(theta_v, zd_vertoffset):
    """icon4py's truly_horizontal_diffusion_nabla_of_theta_over_steep_points reads
    theta_v this way (here only the first neighbour)."""
    return theta_v(C2E2C[0])(as_offset(K, zd_vertoffset[C2E2CDim(0)]))


@program
def offsets(theta_v: Tensor[float, Cell, K], zd_vertoffset: SparseTensor[int32, Cell, C2E2CDim, K],
            off: Tensor[int32, Cell, K], g: Tensor[float, Cell, C2E2CDim, K],
            icon: Tensor[float, Cell, K], shifted: Tensor[float, Cell, K],
            present: Tensor[bool, Cell, K], slot: Tensor[float, Cell, K]):
    icon[...] = steep_points(theta_v, zd_vertoffset)
    shifted[...] = theta_v(K + off) + theta_v(as_offset(K, off + 1)) * 0.5
    present[...] = can_deref(theta_v(K + off))
    slot[...] = g[C2E2CDim(2)] + g[C2E2CDim(0)]


def offsets_args() -> dict:
    return {"theta_v": RNG.random((NC, NK)) + 0.5,
                "zd_vertoffset": RNG.integers(-3, 4, (NC, 3, NK)).astype(np.int32),
                "off": RNG.integers(-3, 4, (NC, NK)).astype(np.int32),
                "g": RNG.random((NC, 3, NK)),
                "icon": np.zeros((NC, NK)), "shifted": np.zeros((NC, NK)),
                "present": np.zeros((NC, NK), dtype=bool), "slot": np.zeros((NC, NK))}


def offsets_numpy(a: dict) -> dict:
    theta, zd, off, c2e2c = a["theta_v"], a["zd_vertoffset"], a["off"], TABLES["C2E2C"]
    cells, levels = np.arange(NC)[:, None], np.arange(NK)[None, :]
    rows = np.broadcast_to(c2e2c[:, :1], (NC, NK))
    same = np.broadcast_to(cells, (NC, NK))
    return {"icon": shifted_at(theta, rows, levels + zd[:, 0, :]),
                "shifted": shifted_at(theta, same, levels + off)
                + shifted_at(theta, same, levels + off + 1) * 0.5,
                "present": (levels + off >= 0) & (levels + off < NK),
                "slot": a["g"][:, 2, :] + a["g"][:, 0, :]}


@pytest.fixture(scope="module")
def offsets_compiled():
    return offsets.compile()


def test_data_dependent_offsets_match_numpy(offsets_compiled):
    args = offsets_args()
    expected = offsets_numpy(args)
    ref = copy.deepcopy(args)
    offsets(**ref, C2E2C=TABLES["C2E2C"], backend="interpreter")
    assert_same_results(ref, expected)
    assert np.isnan(expected["icon"]).any() and not expected["present"].all()
    out = copy.deepcopy(args)
    offsets(**out, offset_provider={"C2E2C": TABLES["C2E2C"]})     # GT4Py's spelling
    assert_same_results(out, ref)
    again = copy.deepcopy(args)
    offsets_compiled(**again, C2E2C=TABLES["C2E2C"].astype(np.int32))   # any int width
    assert_same_results(again, ref)


def test_ir_of_the_icon_composition():
    text = tir.format(offsets.ir)
    assert "⟪K, shift_apply(0)(zd_vertoffset)⟫(⟪C2E2C, 0⟫(theta_v))" in text
    assert offsets.ir.params[-1].name == "C2E2C"     # keyword-only, after the declared ones


# =========================================================================== connectivities


@function
def edge_mean(x):
    return 0.5 * (x(E2V[0]) + x(E2V[1]))


@program
def mesh(x: Tensor[float, Vertex], e: Tensor[float, Edge], vsum: Tensor[float, Vertex],
         per_vertex: Tensor[float, Vertex], per_edge: Tensor[float, Vertex],
         edges: Tensor[int, Vertex], lit: Tensor[float, Vertex]):
    vsum[...] = neighbor_sum(edge_mean(x)(V2E), axis=V2EDim) + neighbor_sum(e(V2E), axis=V2EDim)
    # nested partial shifts: reduce the outer (V2E) or the inner (E2V) neighbours first
    per_vertex[...] = neighbor_sum(neighbor_sum(x(E2V)(V2E), axis=V2EDim), axis=E2VDim)
    per_edge[...] = neighbor_sum(neighbor_sum(x(E2V)(V2E) * x(E2V)(V2E), axis=E2VDim),
                                 axis=V2EDim)
    edges[...] = neighbor_sum(neighbor_sum(where(can_deref(x(E2V)(V2E)), 1, 0), axis=E2VDim),
                              axis=V2EDim)
    lit[...] = wpfloat("0.5") * x + float64(2) - x * wpfloat(1)


def mesh_numpy(x: np.ndarray, e: np.ndarray) -> dict:
    e2v, v2e = TABLES["E2V"], TABLES["V2E"]
    out = {n: np.zeros(NV) for n in ("vsum", "per_vertex", "per_edge")}
    out["edges"] = np.zeros(NV, dtype=np.int64)
    for v in range(NV):
        for j in range(3):
            ed = v2e[v, j]
            if ed < 0:
                continue
            ends = [x[e2v[ed, i]] if e2v[ed, i] >= 0 else np.nan for i in range(2)]
            if not np.isnan(ends).any():      # an edge with an absent end is skipped
                out["vsum"][v] += 0.5 * (ends[0] + ends[1])
            out["vsum"][v] += e[ed]
            for i in range(2):
                if e2v[ed, i] >= 0:           # absent elements are skipped one by one
                    out["per_vertex"][v] += ends[i]
                    out["per_edge"][v] += ends[i] ** 2
                    out["edges"][v] += 1
    out["lit"] = 0.5 * x + 2.0 - x
    return out


@pytest.fixture(scope="module")
def mesh_compiled():
    return mesh.compile()


def test_declared_connectivities_and_nested_shifts(mesh_compiled):
    x, e = RNG.random(NV) + 0.5, RNG.random(NE)
    args = {"x": x, "e": e, "vsum": np.zeros(NV), "per_vertex": np.zeros(NV),
            "per_edge": np.zeros(NV), "edges": np.zeros(NV, dtype=np.int64), "lit": np.zeros(NV)}
    tables = {"E2V": TABLES["E2V"], "V2E": TABLES["V2E"]}
    ref = copy.deepcopy(args)
    mesh(**ref, **tables, backend="interpreter")
    assert_same_results(ref, mesh_numpy(x, e))
    out = copy.deepcopy(args)
    mesh_compiled(**out, **tables)
    assert_same_results(out, ref)
    positional = copy.deepcopy(args)
    mesh(*positional.values(), offset_provider=tables)
    assert_same_results(positional, ref)


def test_tables_as_parameters_keep_working():
    @program
    def first(x: Tensor[float, Vertex], E2V: Tensor[int, Edge, E2VDim],
              out: Tensor[float, Edge]):
        out[...] = x(E2V[0])

    x = RNG.random(NV)
    out = np.zeros(NE)
    first(x, TABLES["E2V"], out, backend="interpreter")
    e2v = TABLES["E2V"][:, 0]
    np.testing.assert_array_equal(out, np.where(e2v >= 0, x[np.maximum(e2v, 0)], np.nan))


def test_missing_and_unknown_tables_are_argument_errors():
    x = np.zeros(NV)
    with pytest.raises(tir.ArgumentError, match="E2V"):
        mesh(x, np.zeros(NE), *(np.zeros(NV) for _ in range(3)), np.zeros(NV, np.int64),
             np.zeros(NV), V2E=TABLES["V2E"], backend="interpreter")
    with pytest.raises(tir.ArgumentError, match="'V2E' is given both as an argument and in "
                                                "offset_provider"):
        mesh(x, np.zeros(NE), *(np.zeros(NV) for _ in range(3)), np.zeros(NV, np.int64),
             np.zeros(NV), V2E=TABLES["V2E"], offset_provider=TABLES, backend="interpreter")
    # one provider for many programs: tables a program does not use are ignored
    mesh(x, np.zeros(NE), *(np.zeros(NV) for _ in range(3)), np.zeros(NV, np.int64),
         np.zeros(NV), offset_provider={**TABLES, "Koff": K}, backend="interpreter")


# =========================================================================== scans, tuples


class State(NamedTuple):
    z_q: float
    w: float


@scan_operator(axis=K, forward=True, init=State(0.0, 1.0))
def tendency(state: State, a, b):
    return State(state.z_q * 0.5 + a, state.w + b * state.z_q)


@program
def columns(a: Tensor[float, Cell, K], b: Tensor[float, Cell, K],
            z_q: Tensor[float, Cell, K], w32: Tensor[float32, Cell, K],
            pair: Tensor[(float32, float32), Cell, K]):
    result = tendency(a, b)
    z_q[...] = result.z_q
    w32[...] = astype(result, float32)[1]
    pair[...] = (a, b * 2.0).astype(float32)


def test_namedtuple_scan_state_and_astype_on_tuples():
    a, b = RNG.random((NC, NK)), RNG.random((NC, NK))
    z, w = np.zeros(NC), np.ones(NC)
    zs, ws = np.zeros((NC, NK)), np.zeros((NC, NK))
    for k in range(NK):
        z, w = z * 0.5 + a[:, k], w + b[:, k] * z
        zs[:, k], ws[:, k] = z, w
    args = {"a": a, "b": b, "z_q": np.zeros((NC, NK)), "w32": np.zeros((NC, NK), np.float32),
                "pair": (np.zeros((NC, NK), np.float32), np.zeros((NC, NK), np.float32))}
    expected = {"z_q": zs, "w32": ws.astype(np.float32),
                    "pair": (a.astype(np.float32), (b * 2.0).astype(np.float32))}
    for backend in ("interpreter", "compiled"):
        out = copy.deepcopy(args)
        columns(**out, backend=backend)
        assert_same_results(out, expected, rtol=1e-6)


class Pair(NamedTuple):
    lo: float
    hi: float


class Nested(NamedTuple):
    inner: Pair
    on: bool


@scan_operator(axis=K, forward=True, init=Nested(Pair(0.0, 0.0), False))
def switched_sums(state: Nested, ab: Pair, flag: bool) -> Nested:
    on = state.on | flag            # per column: the if below differs between cells
    if on:
        inner = Pair(state.inner.lo + ab.lo, state.inner.hi + ab.hi)
    else:
        inner = Pair(ab.lo, state.inner.hi if state.on else ab.hi)
    return Nested(inner, on)


@program
def nested_state_columns(a: Tensor[float, Cell, K], b: Tensor[float, Cell, K],
                         f: Tensor[bool, Cell, K], lo: Tensor[float, Cell, K],
                         hi: Tensor[float, Cell, K]):
    result = switched_sums(Pair(a, b), f)
    lo[...] = result.inner.lo
    hi[...] = result.inner.hi


def test_nested_namedtuple_state_and_per_column_if_in_a_scan():
    """GT4Py scan bodies are per-column scalars: ``state.inner.lo`` reads a nested
    NamedTuple state, ``ab.lo`` a NamedTuple operand, and ``if on:`` chooses per cell."""
    a, b = RNG.random((NC, NK)), RNG.random((NC, NK))
    f = RNG.random((NC, NK)) < 0.3
    lo, hi = np.zeros((NC, NK)), np.zeros((NC, NK))
    for c in range(NC):
        slo = shi = 0.0
        son = False
        for k in range(NK):
            on = son or f[c, k]
            if on:
                slo, shi = slo + a[c, k], shi + b[c, k]
            else:
                slo, shi = a[c, k], (shi if son else b[c, k])
            son = on
            lo[c, k], hi[c, k] = slo, shi
    out = {"a": a, "b": b, "f": f, "lo": np.zeros((NC, NK)), "hi": np.zeros((NC, NK))}
    nested_state_columns(**out, backend="interpreter")
    np.testing.assert_allclose(out["lo"], lo, rtol=1e-12)
    np.testing.assert_allclose(out["hi"], hi, rtol=1e-12)


# =========================================================================== errors


def _translate(fn):
    return program(fn).ir


def test_non_integer_offset_names_the_tensor_the_dimension_and_the_type():
    def bad(x: Tensor[float, Cell, K], f: Tensor[float, Cell, K], out: Tensor[float, Cell, K]):
        out[...] = x(K + f)
    with pytest.raises(TensorIRError, match=r"test_frontend_meshes.py:\d+:\d+: .*'f'.*K.*"
                                            r"int32 or int64"):
        _translate(bad)


def test_non_integer_value_in_a_dimension_condition():
    from tensorir_dace.frontend import concat_where

    def bad(x: Tensor[float, Cell, K], h: float, out: Tensor[float, Cell, K]):
        out[...] = concat_where(K == h, x, 0.0)
    with pytest.raises(TensorIRError, match=r"test_frontend_meshes.py:\d+:\d+: .*K.*'h'.*"
                                            r"tensor<float64>.*scalar integer"):
        _translate(bad)


def test_slot_outside_the_neighbour_dimension():
    def bad(g: Tensor[float, Cell, C2E2CDim, K], out: Tensor[float, Cell, K]):
        out[...] = g[C2E2CDim(7)]
    with pytest.raises(TensorIRError, match=r"test_frontend_meshes.py:\d+:\d+: .*slot 7.*"
                                            r"0 to 2"):
        _translate(bad)


def test_typed_literal_that_is_not_a_number():
    def bad(x: Tensor[float, Cell, K], out: Tensor[float, Cell, K]):
        out[...] = x * float64("abc")
    with pytest.raises(FrontendError, match=r"test_frontend_meshes.py:\d+:\d+: .*'abc'.*"
                                            r"float64"):
        _translate(bad)


def test_typed_literals_do_not_adapt():
    def bad(x32: Tensor[float32, Cell, K], out: Tensor[float32, Cell, K]):
        out[...] = wpfloat("1") * x32
    with pytest.raises(TypeCheckError, match=r"float64 and float32"):
        _translate(bad)

    def good(x32: Tensor[float32, Cell, K], out: Tensor[float32, Cell, K]):
        out[...] = vpfloat("0.5") * x32 + 1
    assert "cast(0.5, float32)" in tir.format(_translate(good))


@function
def edge_difference(x: Tensor[float, Vertex]):
    return x(E2V[1]) - x(E2V[0])


def test_function_called_directly_takes_its_connectivities():
    x = RNG.random(NV)
    e2v = TABLES["E2V"]
    expected = np.where((e2v[:, 0] >= 0) & (e2v[:, 1] >= 0),
                        x[np.maximum(e2v[:, 1], 0)] - x[np.maximum(e2v[:, 0], 0)], np.nan)
    np.testing.assert_array_equal(edge_difference(x, E2V=e2v, backend="interpreter"), expected)
    np.testing.assert_array_equal(edge_difference(x, offset_provider={"E2V": e2v}), expected)
