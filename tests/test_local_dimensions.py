"""GT4Py's local dimensions: ``Dimension("C2E", kind=DimensionKind.LOCAL)``.

icon4py declares its neighbour dimensions without a source or count and the
offsets into them with ``FieldOffset``; the offset provider then says, per
offset, whether it is a table (and its width, the neighbour count) or a
strided offset into a flattened sparse field.  Each stencil here is written
that way, run by the interpreter and compiled, and compared with hand-written
NumPy.  Every test declares its own local dimensions: a local dimension keeps
the count it is first given for the process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from tensorir_dace import ArgumentError, FrontendError
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Field,
    FieldOffset,
    LocalDimension,
    NeighborTableOffsetProvider,
    StridedNeighborOffsetProvider,
    as_connectivity,
    field_operator,
    max_over,
    neighbor_sum,
    program,
    where,
)

CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
CEDim = Dimension("CE")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(41)
NC, NE, NV, NK = 7, 11, 5, 4

# icon4py's declarations: local dimensions, then the offsets into them (the
# strided C2CE before the table C2E, as icon4py orders them)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


C2E_T = table(NC, 3, NE)
C2E2C_T = table(NC, 3, NC, absent=0.2)
V2E_T = table(NV, 6, NE, absent=0.3)
V2E_T[0] = -1                       # a vertex with no edge at all
PROVIDER = {"C2E": C2E_T, "C2E2C": C2E2C_T, "V2E": V2E_T, "C2CE": None}


def gathered(field, tab):
    """``field(tab)`` with absent neighbours as NaN (rows, neighbours, K)."""
    g = field[np.where(tab >= 0, tab, 0)]
    return np.where((tab >= 0)[:, :, None], g, np.nan)


# ---------------------------------------------------------------- stencils


@field_operator
def _divergence(vn: Field[[EdgeDim, KDim], float],
                geofac_div: Field[[CellDim, C2EDim], float]) -> Field[[CellDim, KDim], float]:
    return neighbor_sum(geofac_div * vn(C2E), axis=C2EDim)


@program
def divergence(vn: Field[[EdgeDim, KDim], float], geofac_div: Field[[CellDim, C2EDim], float],
               out: Field[[CellDim, KDim], float]):
    _divergence(vn, geofac_div, out=out)


@field_operator
def _divergence_strided(vn: Field[[EdgeDim, KDim], float],
                        geofac_div: Field[[CEDim], float]) -> Field[[CellDim, KDim], float]:
    """icon4py's flattened coefficients: C2CE is strided (c * 3 + k)."""
    return neighbor_sum(geofac_div(C2CE) * vn(C2E), axis=C2EDim)


@field_operator
def _neighbour_max(x: Field[[CellDim, KDim], float]) -> Field[[CellDim, KDim], float]:
    """The largest neighbour (absent ones skipped) plus the first neighbour slot."""
    first = x(C2E2C[0])
    return max_over(x(C2E2C), axis=C2E2CDim) + where(C2E2C_present(x), first, 0.0)


@field_operator
def C2E2C_present(x: Field[[CellDim, KDim], float]) -> Field[[CellDim, KDim], bool]:
    return x(C2E2C[0]) == x(C2E2C[0])


@field_operator
def _vertex_sum(x: Field[[EdgeDim, KDim], float]) -> Field[[VertexDim, KDim], float]:
    return neighbor_sum(x(V2E), axis=V2EDim)


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_table_offset_and_a_sparse_field_over_a_local_dimension(backend):
    vn, geofac = RNG.random((NE, NK)), RNG.random((NC, 3))
    out = np.zeros((NC, NK))
    divergence(vn, geofac, out, offset_provider=PROVIDER, backend=backend)
    np.testing.assert_allclose(out, (geofac[:, :, None] * vn[C2E_T]).sum(1), rtol=1e-14)
    assert isinstance(C2EDim, LocalDimension) and C2EDim.size == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_offset_into_a_local_dimension(backend):
    vn, geofac = RNG.random((NE, NK)), RNG.random((NC, 3))
    got = _divergence_strided.with_backend(None if backend == "interpreter" else "compiled")(
        vn, geofac.ravel(), offset_provider=PROVIDER)
    np.testing.assert_allclose(got, (geofac[:, :, None] * vn[C2E_T]).sum(1), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_absent_neighbours_slots_and_max_over_a_local_dimension(backend):
    x = RNG.random((NC, NK))
    fn = _neighbour_max if backend == "compiled" else _neighbour_max.with_backend(None)
    got = fn(x, offset_provider=PROVIDER)
    g = gathered(x, C2E2C_T)
    first = np.where((C2E2C_T[:, 0] >= 0)[:, None], g[:, 0], 0.0)
    np.testing.assert_allclose(got, np.nanmax(g, axis=1) + first, rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_row_without_neighbours_sums_to_zero(backend):
    x = RNG.random((NE, NK))
    fn = _vertex_sum if backend == "compiled" else _vertex_sum.with_backend(None)
    got = fn(x, offset_provider=PROVIDER)
    np.testing.assert_allclose(got, np.nansum(gathered(x, V2E_T), axis=1), rtol=1e-14)
    assert not got[0].any()


def test_compile_with_the_offset_provider_binds_the_local_dimensions():
    compiled = divergence.compile(offset_provider=PROVIDER)
    vn, geofac = RNG.random((NE, NK)), RNG.random((NC, 3))
    out = np.zeros((NC, NK))
    compiled(vn=vn, geofac_div=geofac, out=out)
    np.testing.assert_allclose(out, (geofac[:, :, None] * vn[C2E_T]).sum(1), rtol=1e-14)


V2CDim = Dimension("V2C", DimensionKind.LOCAL)


@field_operator
def _row_sum(w: Field[[VertexDim, V2CDim, KDim], float]) -> Field[[VertexDim, KDim], float]:
    return neighbor_sum(w, axis=V2CDim)


def test_the_count_from_an_argument_over_the_local_dimension():
    row_sum = _row_sum
    w = RNG.random((NV, 6, NK))
    np.testing.assert_allclose(row_sum(w), w.sum(1), rtol=1e-14)
    assert V2CDim.size == 6


def test_a_table_of_another_width_is_an_argument_error():
    E2CDim = Dimension("E2C", DimensionKind.LOCAL)
    E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))

    @field_operator
    def edge_mean(x: Field[[CellDim], float]) -> Field[[EdgeDim], float]:
        return 0.5 * neighbor_sum(x(E2C), axis=E2CDim)

    x = RNG.random(NC)
    e2c = RNG.integers(0, NC, (NE, 2))
    np.testing.assert_allclose(edge_mean(x, offset_provider={"E2C": e2c}), 0.5 * x[e2c].sum(1))
    with pytest.raises(ArgumentError, match=r"E2C.* 3 .*2"):
        edge_mean(x, offset_provider={"E2C": RNG.integers(0, NC, (NE, 3))})


def test_an_offset_without_its_table_says_how_to_give_it():
    E2VDim = Dimension("E2V", DimensionKind.LOCAL)
    E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))

    @field_operator
    def edge_diff(x: Field[[VertexDim], float]) -> Field[[EdgeDim], float]:
        return x(E2V[1]) - x(E2V[0])

    with pytest.raises(FrontendError, match=r"offset_provider=\{'E2V': table\}"):
        edge_diff(RNG.random(NV))
    with pytest.raises(ArgumentError, match="2-dimensional"):
        edge_diff(RNG.random(NV), offset_provider={"E2V": np.arange(NE)})
    e2v = RNG.integers(0, NV, (NE, 2))
    x = RNG.random(NV)
    np.testing.assert_allclose(edge_diff(x, offset_provider={"E2V": e2v}),
                               x[e2v[:, 1]] - x[e2v[:, 0]])


def test_a_new_process_with_the_binary_cached(tmp_path):
    """The call in a new process binds the local dimensions again (and finds the
    binary compiled by the first process)."""
    module = tmp_path / "local_stencil.py"
    module.write_text(textwrap.dedent('''
        import numpy as np
        from tensorir_dace.frontend import (Dimension, DimensionKind, Field, FieldOffset,
                                            field_operator, neighbor_sum, program)
        Cell, Edge = Dimension("Cell"), Dimension("Edge")
        C2EDim = Dimension("C2E", DimensionKind.LOCAL)
        C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))

        @field_operator
        def _cell_sum(x: Field[[Edge], float]) -> Field[[Cell], float]:
            return neighbor_sum(x(C2E), axis=C2EDim)

        @program
        def cell_sum(x: Field[[Edge], float], out: Field[[Cell], float]):
            _cell_sum(x, out=out)

        c2e = np.array([[0, 1, 2], [2, 3, -1]])
        x, out = np.arange(4.0), np.zeros(2)
        cell_sum(x, out, offset_provider={"C2E": c2e})
        print(out.tolist())
    '''))
    env_cache = str(tmp_path / "cache")
    import os
    env = {**os.environ, "TENSORIR_DACE_CACHE": env_cache, "PYTHONPATH": str(tmp_path) + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    for _ in range(2):
        run = subprocess.run([sys.executable, str(module)], capture_output=True, text=True,
                             env=env, timeout=300)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "[3.0, 5.0]"


@pytest.mark.parametrize("backend", BACKENDS)
def test_gt4py_offset_provider_objects(backend):
    """GT4Py's provider objects in place of the arrays and ``None``."""
    vn, geofac = RNG.random((NE, NK)), RNG.random((NC, 3))
    provider = {"C2E": NeighborTableOffsetProvider(C2E_T, CellDim, EdgeDim, 3),
                "C2CE": StridedNeighborOffsetProvider(CellDim, CEDim, 3)}
    fn = _divergence_strided if backend == "compiled" else _divergence_strided.with_backend(None)
    expected = (geofac[:, :, None] * vn[C2E_T]).sum(1)
    np.testing.assert_allclose(fn(vn, geofac.ravel(), offset_provider=provider), expected,
                               rtol=1e-14)
    provider["C2E"] = as_connectivity([CellDim, C2EDim], EdgeDim, C2E_T, skip_value=-1)
    np.testing.assert_allclose(fn(vn, geofac.ravel(), offset_provider=provider), expected,
                               rtol=1e-14)
    with pytest.raises(FrontendError, match="shape"):
        NeighborTableOffsetProvider(C2E_T, CellDim, EdgeDim, 4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_offsets_and_dimensions_reached_through_a_module(backend):
    """icon4py names its offsets and dimensions through a module (``dims.E2C``,
    ``dims.E2CDim``), none of them a global of the stencil's module."""
    dims = types.ModuleType("mesh_dims")
    dims.E2CDim = Dimension("E2C", DimensionKind.LOCAL)
    dims.E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, dims.E2CDim))
    dims.EdgeDim, dims.KDim = EdgeDim, KDim

    @field_operator
    def _edge_max(x: Field[[CellDim, KDim], float], w: Field[[dims.EdgeDim, dims.E2CDim], float]
                  ) -> Field[[EdgeDim, KDim], float]:
        return max_over(x(dims.E2C) * w, axis=dims.E2CDim) + x(dims.E2C[1])

    @program
    def edge_max(x: Field[[CellDim, KDim], float], w: Field[[EdgeDim, dims.E2CDim], float],
                 out: Field[[EdgeDim, KDim], float], start: int):
        _edge_max(x, w, out=out, domain={dims.EdgeDim: (start, NE), dims.KDim: (0, NK)})

    e2c = RNG.integers(0, NC, (NE, 2))
    x, w = RNG.random((NC, NK)), RNG.random((NE, 2))
    out = np.zeros((NE, NK))
    edge_max(x, w, out, 2, offset_provider={"E2C": e2c}, backend=backend)
    expected = (x[e2c] * w[:, :, None]).max(1) + x[e2c[:, 1]]
    np.testing.assert_allclose(out[2:], expected[2:], rtol=1e-15)
    assert not out[:2].any()


@pytest.mark.parametrize("value", ["C2E", 3.5, object(), np.zeros((NE, 2, 2), dtype=int),
                                   np.zeros((NE, 0), dtype=int)],
                         ids=["str", "float", "object", "3-d", "no columns"])
def test_a_provider_entry_that_is_no_table_is_an_argument_error(value):
    """Anything but a table, None or a strided provider, given for an offset into
    a local dimension, is reported as such (not taken for a strided offset)."""
    local = Dimension("E2X", DimensionKind.LOCAL)
    offset = FieldOffset("E2X", source=VertexDim, target=(EdgeDim, local))

    @field_operator
    def edge_sum(x: Field[[VertexDim], float]) -> Field[[EdgeDim], float]:
        return neighbor_sum(x(offset), axis=local)

    with pytest.raises(ArgumentError, match="E2X"):
        edge_sum.with_backend(None)(RNG.random(NV), offset_provider={"E2X": value})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_offset_given_none_takes_its_count_from_a_later_call(backend):
    """``None`` for a strided offset says how it reads but not how many
    neighbours it has: the call that has nothing else to size the local
    dimension says so, and a later call with icon4py's layout table (or GT4Py's
    strided provider) gives the count and runs."""
    E2YDim = Dimension("E2Y", DimensionKind.LOCAL)
    E2EX = FieldOffset("E2EX", source=CEDim, target=(EdgeDim, E2YDim))

    @field_operator
    def _upwind(f: Field[[CEDim], float], vn: Field[[EdgeDim, KDim], float]
                ) -> Field[[EdgeDim, KDim], float]:
        return where(vn >= 0.0, f(E2EX[0]), f(E2EX[1]))

    @program
    def upwind(f: Field[[CEDim], float], vn: Field[[EdgeDim, KDim], float],
               out: Field[[EdgeDim, KDim], float]):
        _upwind(f, vn, out=out)

    f, vn = RNG.random(2 * NE), RNG.random((NE, NK)) - 0.5
    out = np.zeros((NE, NK))
    with pytest.raises(FrontendError, match="neighbour count of the local dimension E2Y"):
        upwind(f, vn, out, offset_provider={"E2EX": None}, backend=backend)
    upwind(f, vn, out, offset_provider={"E2EX": np.arange(2 * NE).reshape(NE, 2)},
           backend=backend)
    pairs = f.reshape(NE, 2)
    expected = np.where(vn >= 0.0, pairs[:, :1], pairs[:, 1:])
    np.testing.assert_array_equal(out, expected)
    again = np.zeros((NE, NK))
    upwind(f, vn, again, offset_provider={"E2EX": StridedNeighborOffsetProvider(
        EdgeDim, CEDim, 2)}, backend=backend)
    np.testing.assert_array_equal(again, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_offset_given_a_table_first_takes_none_later(backend):
    """icon4py's ``E2EC`` given its layout table in the first call of the process
    and ``None`` or GT4Py's strided provider later (from the program, from the
    field operator called directly, and again from the program translated with
    the table): each call runs, and the table is still taken afterwards."""
    E2ZDim = Dimension("E2Z", DimensionKind.LOCAL)
    E2EZ = FieldOffset("E2EZ", source=CEDim, target=(EdgeDim, E2ZDim))

    @field_operator
    def _upwind(f: Field[[CEDim], float], vn: Field[[EdgeDim, KDim], float]
                ) -> Field[[EdgeDim, KDim], float]:
        return where(vn >= 0.0, f(E2EZ[0]), f(E2EZ[1]))

    @program
    def upwind(f: Field[[CEDim], float], vn: Field[[EdgeDim, KDim], float],
               out: Field[[EdgeDim, KDim], float]):
        _upwind(f, vn, out=out)

    f, vn = RNG.random(2 * NE), RNG.random((NE, NK)) - 0.5
    pairs = f.reshape(NE, 2)
    expected = np.where(vn >= 0.0, pairs[:, :1], pairs[:, 1:])
    layout = np.arange(2 * NE).reshape(NE, 2)
    strided = StridedNeighborOffsetProvider(EdgeDim, CEDim, 2)
    for call, value in [("program", layout), ("direct", None), ("program", None),
                        ("program", strided), ("direct", layout), ("program", layout),
                        ("direct", strided)]:
        out = np.zeros((NE, NK))
        if call == "program":
            upwind(f, vn, out, offset_provider={"E2EZ": value}, backend=backend)
        else:
            _upwind(f, vn, out=out, offset_provider={"E2EZ": value}, backend=backend)
        np.testing.assert_array_equal(out, expected)
