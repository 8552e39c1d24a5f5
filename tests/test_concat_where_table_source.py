"""``concat_where`` along a neighbour table's source dimension (``Cell`` for
``E2C: Edge -> Cell``) between broadcasts or scalars, where no parameter has
that dimension: GT4Py defines such a value everywhere along ``Cell``; read
through the tables, it is computed over ``Cell[0:N]`` with ``N`` one more than
the tables' largest entry, which the call binds (a parameter added to the
program).  Compiled code, the interpreter and NumPy agree, in direct calls and
in programs, with ``out=`` and ``domain=``, static and runtime conditions."""

import numpy as np
import pytest

from tensorir_dace.errors import TensorIRError
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Field,
    FieldOffset,
    broadcast,
    concat_where,
    field_operator,
    float64,
    int32,
    neighbor_sum,
    program,
)

Cell, Edge, Vertex, K = Dimension("Cell"), Dimension("Edge"), Dimension("Vertex"), \
    Dimension("K", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))
V2C = FieldOffset("V2C", source=Cell, target=(Vertex, V2CDim))

BACKENDS = ["interpreter", "compiled"]
NE, NV, NK = 9, 5, 3
RNG = np.random.default_rng(11)
# edges index cells 0..3 (entry 0 always present), vertices cells 0..6: the
# cells' extent is 7 where both tables are given, 4 where E2C alone is
E2C_TABLE = np.stack([RNG.integers(0, 4, NE), RNG.integers(-1, 4, NE)], axis=1)
E2C_TABLE[2, 1] = -1
V2C_TABLE = RNG.integers(-1, 7, (NV, 3))
V2C_TABLE[0] = [6, -1, 0]
MESH = {"E2C": E2C_TABLE, "V2C": V2C_TABLE}
X = RNG.random(NE)
XK = RNG.random((NE, NK))
V = RNG.random(NV)


def gathered(values_at_cells, table):
    """The sum over present neighbours of the values at the cells a table names."""
    return np.where(table >= 0, values_at_cells[np.maximum(table, 0)], 0.0).sum(1)


def cells(n, pick):
    """``pick(c)`` at cells ``0..n-1``."""
    return pick(np.arange(n))


# --------------------------------------------------------------------------- operators

@field_operator
def below_n(x: Field[[Edge], float64], n: int32) -> Field[[Edge], float64]:
    t = concat_where(Cell < n, broadcast(1.5, (Cell,)), 2.0)
    return neighbor_sum(t(E2C), axis=E2CDim) - x


def below_n_ref(x, n, table=E2C_TABLE):
    return gathered(cells(16, lambda c: np.where(c < n, 1.5, 2.0)), table) - x


@field_operator
def band_first(x: Field[[Edge, K], float64]) -> Field[[Edge, K], float64]:
    t = concat_where((Cell >= 1) & (Cell < 3), broadcast(0.5, (Cell, K)),
                     broadcast(4.0, (Cell, K)))
    return t(E2C[0]) * x


def band_first_ref(x):
    at = cells(16, lambda c: np.where((c >= 1) & (c < 3), 0.5, 4.0))
    return at[E2C_TABLE[:, 0]][:, None] * x


@field_operator
def at_vertices(v: Field[[Vertex], float64], k0: int32, k1: int32) -> Field[[Vertex], float64]:
    t = concat_where((Cell >= k0) & (Cell < k1), 10.0, broadcast(1.0, (Cell,)))
    return neighbor_sum(t(V2C), axis=V2CDim) + v


def at_vertices_ref(v, k0, k1):
    return gathered(cells(16, lambda c: np.where((c >= k0) & (c < k1), 10.0, 1.0)),
                    V2C_TABLE) + v


@program
def both(x: Field[[Edge], float64], v: Field[[Vertex], float64], oe: Field[[Edge], float64],
         ov: Field[[Vertex], float64], n: int32, k0: int32, k1: int32, hs: int32, he: int32):
    below_n(x, n, out=oe, domain={Edge: (hs, he)})
    at_vertices(v, k0, k1, out=ov)


@program
def first_of_edges(x: Field[[Edge, K], float64], o: Field[[Edge, K], float64]):
    band_first(x, out=o, domain={Edge: (1, NE - 1), K: (0, NK)})


# --------------------------------------------------------------------------- direct calls

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 2, 3, 100])
def test_direct_call_with_out_and_a_runtime_condition(backend, n):
    out = np.zeros(NE)
    below_n(X, n, out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, below_n_ref(X, n), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_with_domain(backend):
    out = np.full(NE, 7.0)
    below_n(X, 2, out=out, domain={Edge: (2, 6)}, offset_provider=MESH, backend=backend)
    want = np.full(NE, 7.0)
    want[2:6] = below_n_ref(X, 2)[2:6]
    np.testing.assert_allclose(out, want, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_returning_a_new_array(backend):
    got = below_n(X, 3, offset_provider={"E2C": E2C_TABLE}, backend=backend)
    np.testing.assert_allclose(got, below_n_ref(X, 3), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_static_condition_through_one_neighbour(backend):
    out = np.zeros((NE, NK))
    band_first(XK, out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, band_first_ref(XK), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_larger_table_widens_the_extent_at_the_call(backend):
    """The extent follows the table of each call: entries up to 11 read the
    value at cells the first table did not name (one binary for both)."""
    wide = E2C_TABLE.copy()
    wide[4, 0], wide[7, 1] = 11, 9
    for table in (E2C_TABLE, wide):
        out = np.zeros(NE)
        below_n(X, 10, out=out, offset_provider={"E2C": table}, backend=backend)
        np.testing.assert_allclose(out, below_n_ref(X, 10, table), rtol=1e-14)


# --------------------------------------------------------------------------- programs

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n, k0, k1, hs, he", [(2, 5, 7, 0, NE), (0, 0, 100, 3, 7),
                                               (3, 6, 2, 1, 1)])
def test_program_with_two_tables_into_the_cells(backend, n, k0, k1, hs, he):
    """``E2C`` names cells up to 3, ``V2C`` up to 6: the cells' extent covers both."""
    oe, ov = np.full(NE, -1.0), np.full(NV, -1.0)
    both(X, V, oe, ov, n, k0, k1, hs, he, offset_provider=MESH, backend=backend)
    want_e = np.full(NE, -1.0)
    want_e[hs:he] = below_n_ref(X, n)[hs:he]
    np.testing.assert_allclose(oe, want_e, rtol=1e-14)
    np.testing.assert_allclose(ov, at_vertices_ref(V, k0, k1), rtol=1e-14)


def test_program_has_one_extent_parameter_for_both_tables():
    names = [p.name for p in both.ir.params]
    assert [n for n in names if n.startswith("_extent_")] == ["_extent_Cell"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_program_with_a_static_domain(backend):
    o = np.zeros((NE, NK))
    first_of_edges(XK, o, offset_provider=MESH, backend=backend)
    want = np.zeros((NE, NK))
    want[1:NE - 1] = band_first_ref(XK)[1:NE - 1]
    np.testing.assert_allclose(o, want, rtol=1e-14)


def test_compiled_program_binds_the_extent_at_each_call():
    fn = both.compile(offset_provider=MESH)
    oe, ov = np.zeros(NE), np.zeros(NV)
    fn(X, V, oe, ov, 2, 5, 7, 0, NE)
    np.testing.assert_allclose(oe, below_n_ref(X, 2), rtol=1e-14)
    np.testing.assert_allclose(ov, at_vertices_ref(V, 5, 7), rtol=1e-14)


# --------------------------------------------------------------------------- errors

def test_a_dimension_no_table_indexes_is_still_refused_clearly():
    @field_operator
    def along_vertices(x: Field[[Edge], float64]) -> Field[[Edge], float64]:
        t = concat_where(Vertex < 2, broadcast(1.0, (Vertex,)), 2.0)
        return neighbor_sum(t(E2C), axis=E2CDim) + x

    with pytest.raises(TensorIRError, match="concat_where on Vertex: neither branch has "
                                            "dimension Vertex.*nor does a neighbour table "
                                            "index it.*pass a field over Vertex"):
        along_vertices(X, out=np.zeros(NE), offset_provider=MESH, backend="interpreter")


def test_an_entry_past_the_tables_is_not_possible_but_a_negative_one_is_absent():
    """Entries are never past the extent (it is the largest plus one); a table
    with no neighbour at all gives an empty extent and the sum's init."""
    none = np.full((NE, 2), -1)
    out = np.ones(NE)
    below_n(X, 1, out=out, offset_provider={"E2C": none}, backend="compiled")
    np.testing.assert_allclose(out, -X, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_entry_that_makes_the_extent_absurd_is_an_argument_error(backend):
    """A corrupt table (an entry far past any mesh the call's arrays describe)
    would make the dimension as long as the entry: refused before anything is
    allocated or written; an entry within the limit computes as usual."""
    from tensorir_dace.errors import ArgumentError
    from tensorir_dace.source_extents import EXTENT_FLOOR
    for bad in (EXTENT_FLOOR, 10 ** 12, 2 ** 62):
        table = E2C_TABLE.copy()
        table[0, 0] = bad
        out = np.zeros(NE)
        with pytest.raises(ArgumentError, match=f"'E2C' holds the entry {bad}.*check the table"):
            below_n(X, 2, out=out, offset_provider={"E2C": table}, backend=backend)
        assert not out.any()
    table = E2C_TABLE.copy()
    table[0, 0] = EXTENT_FLOOR - 1
    out = np.zeros(NE)
    below_n(X, 2, out=out, offset_provider={"E2C": table}, backend=backend)
    want = gathered(np.where(np.arange(EXTENT_FLOOR) < 2, 1.5, 2.0), table) - X
    np.testing.assert_allclose(out, want, rtol=1e-14)


# --------------------------------------------------------------------------- a new process

MODULE = '''
from tensorir_dace.frontend import (Dimension, DimensionKind, Field, FieldOffset, broadcast,
                                    concat_where, field_operator, neighbor_sum, program)

Cell, Edge = Dimension("Cell"), Dimension("Edge")
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))


@field_operator
def below_n(x: Field[[Edge], float], n: int) -> Field[[Edge], float]:
    t = concat_where(Cell < n, broadcast(1.5, (Cell,)), 2.0)
    return neighbor_sum(t(E2C), axis=E2CDim) - x


@program
def run(x: Field[[Edge], float], o: Field[[Edge], float], n: int):
    below_n(x, n, out=o)
'''

# argv: the module's folder, the largest entry of the table
CALLS = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import source_extent_calls as m
    from tensorir_dace.runtime.cachedir import compile_count
    top = int(sys.argv[2])
    e2c = np.array([[0, -1], [top, 1], [2, 3], [-1, -1], [top - 1, 0]])
    x = np.arange(5.0)
    o, d = np.zeros(5), np.zeros(5)
    m.run(x, o, 3, offset_provider={"E2C": e2c})
    m.below_n(x, 3, out=d, offset_provider={"E2C": e2c})
    heavy = sorted({k.split(".")[0] for k in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"o": o.tolist(), "d": d.tolist(), "heavy": heavy,
                      "compiled": compile_count()}))
'''


def test_a_new_process_binds_the_extent_without_translating(tmp_path):
    """The program found by the Python source takes its extent from the tables
    of each call too: another table, nothing translated or compiled."""
    from test_startup import run_fresh

    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    (src / "source_extent_calls.py").write_text(MODULE)
    for top, fresh in [(4, True), (9, False)]:
        got = run_fresh(CALLS, cache, src, str(top))
        e2c = np.array([[0, -1], [top, 1], [2, 3], [-1, -1], [top - 1, 0]])
        want = gathered(cells(16, lambda c: np.where(c < 3, 1.5, 2.0)), e2c) - np.arange(5.0)
        np.testing.assert_allclose(got["o"], want, rtol=1e-14)
        np.testing.assert_allclose(got["d"], want, rtol=1e-14)
        if not fresh:
            assert got["heavy"] == [] and got["compiled"] == 0
