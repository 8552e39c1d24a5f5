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
    names = [p.name for p in both.compile(offset_provider=MESH).program.params]
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


# --------------------------------------------------------------------------- the printed program

@pytest.fixture(scope="module")
def reparsed():
    """``both`` printed and read back: the text shows ``_extent_Cell``, and a
    call of the program read back binds it from the tables, as one of ``both``."""
    import tensorir_dace as tir
    text = tir.format(both.compile(offset_provider=MESH).program)
    assert "_extent_Cell: tensor<bool, Cell[0:N_Cell]>" in text
    prog = tir.parse(text)
    return prog, tir.compile(prog)


def call_reparsed(reparsed, backend, e2c=E2C_TABLE, **more):
    import tensorir_dace as tir
    prog, compiled = reparsed
    args = dict(x=X, v=V, oe=np.zeros(NE), ov=np.zeros(NV), n=2, k0=5, k1=7, hs=0, he=NE,
                E2C=e2c, V2C=V2C_TABLE, **more)
    if backend == "interpreter":
        tir.interpret(prog, **args)
    else:
        compiled(**args)
    return args["oe"], args["ov"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_printed_program_binds_the_extent_from_each_calls_tables(reparsed, backend):
    wide = E2C_TABLE.copy()
    wide[4, 0], wide[7, 1] = 11, 9
    for table in (E2C_TABLE, wide, np.asfortranarray(wide), wide[:, ::-1],
                  np.repeat(wide, 2, axis=0)[::2]):
        oe, ov = call_reparsed(reparsed, backend, table)
        np.testing.assert_allclose(oe, below_n_ref(X, 2, table), rtol=1e-14)
        np.testing.assert_allclose(ov, at_vertices_ref(V, 5, 7), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_printed_program_takes_an_extent_given_and_checks_it(reparsed, backend):
    """An extent passed is used as any argument: long enough, it computes as
    usual; shorter than the tables need, the entries past it are refused."""
    from tensorir_dace.errors import ArgumentError
    oe, _ = call_reparsed(reparsed, backend, _extent_Cell=np.zeros(12, bool))
    np.testing.assert_allclose(oe, below_n_ref(X, 2), rtol=1e-14)
    with pytest.raises(ArgumentError, match="E2C"):
        call_reparsed(reparsed, backend, _extent_Cell=np.zeros(3, bool))


def test_a_user_transformed_sdfg_binds_the_extent_too(reparsed):
    """``to_sdfg`` keeps the parameter (its container takes a bool array as
    long as the tables need); behind ``CompiledProgram.from_sdfg`` the call
    binds it as any compiled program's does."""
    import tensorir_dace as tir
    prog, _ = reparsed
    sdfg = tir.to_sdfg(prog)
    assert "u_extent_Cell" in sdfg.arg_names
    sdfg.simplify()
    sdfg.name = "both_user_transformed"
    fn = tir.CompiledProgram.from_sdfg(prog, sdfg)
    oe, ov = call_reparsed((prog, fn), "compiled")
    np.testing.assert_allclose(oe, below_n_ref(X, 2), rtol=1e-14)
    np.testing.assert_allclose(ov, at_vertices_ref(V, 5, 7), rtol=1e-14)


def test_the_command_line_runs_the_printed_program(reparsed, tmp_path, capsys):
    """``tensorir-dace run`` makes random arguments, the extent among them."""
    import tensorir_dace as tir
    from tensorir_dace import cli
    path = tmp_path / "both.tir"
    path.write_text(tir.format(reparsed[0]))
    assert cli.main(["run", "-q", str(path), "--repeat", "1"]) == 0
    assert "max |compiled - interpreted| = 0" in capsys.readouterr().out
    assert cli.main(["lower", "-q", str(path)]) == 0
    assert (tmp_path / "both.sdfg").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_missing_table_is_named_and_the_extent_is_not(reparsed, backend):
    from tensorir_dace.errors import ArgumentError
    with pytest.raises(ArgumentError, match=r"missing argument for parameter 'V2C' \(") as e:
        _call_without(reparsed, backend)
    assert "_extent_Cell" not in str(e.value)


def _call_without(reparsed, backend):
    import tensorir_dace as tir
    prog, compiled = reparsed
    args = dict(x=X, v=V, oe=np.zeros(NE), ov=np.zeros(NV), n=2, k0=5, k1=7, hs=0, he=NE,
                E2C=E2C_TABLE)
    return tir.interpret(prog, **args) if backend == "interpreter" else compiled(**args)


BAD_TABLES = {
    "float64": (E2C_TABLE.astype(float), "expects int64 elements, got float64"),
    "text": (E2C_TABLE.astype(str), "expects int64 elements, got <U"),
    "objects": (E2C_TABLE.astype(object), "expects int64 elements, got object"),
    "bool": (E2C_TABLE > 0, "expects int64 elements, got bool"),
    "3-D": (E2C_TABLE[:, :, None], "expects a 2-D array"),
    "list": (E2C_TABLE.tolist(), "expects a 2-D array of int64"),
    "huge entry": (np.where(E2C_TABLE == 3, 10 ** 12, E2C_TABLE), "holds the entry 1000000000000"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", sorted(BAD_TABLES))
def test_a_bad_table_is_an_argument_error_on_every_path(reparsed, backend, bad):
    """The extent comes from the tables, so their checks come first: a table
    that is not an array of integers of the right rank, or names a point far
    past the arguments, is refused with the binder's message, by the program
    read back and by a direct call; nothing is written."""
    from tensorir_dace.errors import ArgumentError
    table, message = BAD_TABLES[bad]
    with pytest.raises(ArgumentError, match=message):
        call_reparsed(reparsed, backend, table)
    out = np.zeros(NE)
    with pytest.raises(ArgumentError, match=message):
        below_n(X, 2, out=out, offset_provider={"E2C": table}, backend=backend)
    assert not out.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_entries_are_absent_neighbours_on_every_path(reparsed, backend):
    table = E2C_TABLE.copy()
    table[3, 0], table[5, 1] = -5, np.iinfo(np.int64).min
    oe, _ = call_reparsed(reparsed, backend, table)
    np.testing.assert_allclose(oe, below_n_ref(X, 2, table), rtol=1e-14)
    out = np.zeros(NE)
    below_n(X, 2, out=out, offset_provider={"E2C": table}, backend=backend)
    np.testing.assert_allclose(out, below_n_ref(X, 2, table), rtol=1e-14)


# argv: the printed program's file, the largest entry of the table
CALL_PRINTED = '''
    import json, sys
    import numpy as np
    import tensorir_dace as tir
    from tensorir_dace.runtime.cachedir import compile_count
    prog = tir.compile(open(sys.argv[1]).read())
    top = int(sys.argv[2])
    e2c = np.array([[0, -1], [top, 1], [2, 3], [-1, -1], [top - 1, 0]])
    v2c = np.array([[0, 1, -1], [2, -1, 3]])
    oe, ov = np.zeros(5), np.zeros(2)
    prog(x=np.arange(5.0), v=np.ones(2), oe=oe, ov=ov, n=3, k0=1, k1=2, hs=0, he=5,
         E2C=e2c, V2C=v2c)
    print(json.dumps({"oe": oe.tolist(), "compiled": compile_count()}))
'''


def test_a_new_process_binds_the_extent_of_the_cached_printed_program(reparsed, tmp_path):
    """The printed program compiled by one process and found in the cache by
    the next takes its extent from the tables of each call there too."""
    import tensorir_dace as tir
    from test_startup import run_fresh
    path = tmp_path / "both.tir"
    path.write_text(tir.format(reparsed[0]))
    for top, fresh in [(4, True), (9, False)]:
        got = run_fresh(CALL_PRINTED, tmp_path / "cache", path, str(top))
        e2c = np.array([[0, -1], [top, 1], [2, 3], [-1, -1], [top - 1, 0]])
        want = gathered(cells(16, lambda c: np.where(c < 3, 1.5, 2.0)), e2c) - np.arange(5.0)
        np.testing.assert_allclose(got["oe"], want, rtol=1e-14)
        assert got["compiled"] == (1 if fresh else 0)
