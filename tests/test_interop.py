"""DaCe interoperability: our programs inside @dace.program, and user-transformed SDFGs
behind our argument checks."""

from __future__ import annotations

import dace
import numpy as np
import pytest
from dace.transformation.auto.auto_optimize import auto_optimize

import tensorir_dace as tir
from conftest import compiled, example, parsed
from tensorir_dace.testing import clone, random_arguments

SMOOTH = """
smooth(out: tensor<float, I[0:N]>, inp: tensor<float, I[-1:N+1]>, alpha: tensor<float>) {
  out ← alpha × (⟪I, 1⟫(inp) + ⟪I, -1⟫(inp))
}
"""

N = dace.symbol("N")


def test_program_called_inside_dace_program():
    smooth = compiled(SMOOTH)

    @dace.program
    def outer(a: dace.float64[N + 2], b: dace.float64[N]):
        smooth(out=b, inp=a, alpha=2.0)
        b[:] = b + 1.0

    a = np.random.default_rng(0).random(12)
    b = np.zeros(10)
    outer(a, b)
    np.testing.assert_allclose(b, 2.0 * (a[2:] + a[:-2]) + 1.0)
    sdfg = outer.to_sdfg(a, b)
    assert len(list(sdfg.all_sdfgs_recursive())) >= 1    # one SDFG holds both parts


@pytest.mark.parametrize("name", ["symbolic_sizes", "tridiagonal_symbolic"])
def test_user_transformed_sdfg_runs_behind_our_checks_at_two_sizes(name):
    if name == "tridiagonal_symbolic":
        import sys
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent / "benchmarks"))
        from bench_stencils import TRIDIAGONAL as src
    else:
        src = example(name)
    prog = parsed(src)
    sdfg = tir.to_sdfg(prog)
    sdfg.simplify()
    auto_optimize(sdfg, dace.DeviceType.CPU)
    program = tir.CompiledProgram.from_sdfg(prog, sdfg)
    for sizes in ({"N": 4, "M": 3, "K": 2, "L": 5}, {"N": 9, "M": 11, "K": 6, "L": 13}):
        args = random_arguments(prog, sizes=sizes, seed=sizes["N"])
        if "steps" in args:
            args["steps"] = 2
        if "b" in args:
            args["b"] = args["b"] + 4.0
        ref, out = clone(args), clone(args)
        tir.interpret(prog, **ref)
        program(**out)
        for k in ("out", "x"):
            if k in ref:
                np.testing.assert_allclose(out[k], ref[k], rtol=1e-12)
    with pytest.raises(tir.ArgumentError):
        program(**{**args, next(iter(args)): np.zeros(3, np.float32)})


def test_from_sdfg_rejects_an_unrelated_sdfg():
    other = tir.to_sdfg(parsed(SMOOTH))
    with pytest.raises(tir.TensorIRError, match="does not fit program .laplacian."):
        tir.CompiledProgram.from_sdfg(parsed(example("laplacian")), other)


from tensorir_dace import Tensor, dims, program  # noqa: E402

I = dims("I")


@program
def twice(x: Tensor[float, I], y: Tensor[float, I]):
    y[...] = 2.0 * x


def test_decorated_program_called_inside_dace_program():
    @dace.program
    def outer(a: dace.float64[N], b: dace.float64[N]):
        twice(x=a, y=b)

    a = np.arange(5.0)
    b = np.zeros(5)
    outer(a, b)
    np.testing.assert_allclose(b, 2.0 * a)


# --------------------------------------------------------------------------- neighbour tables

from tensorir_dace.frontend import (  # noqa: E402
    Dimension,
    DimensionKind,
    Field,
    FieldOffset,
    broadcast,
    concat_where,
    connectivity,
    float64,
    int32,
    neighbor_dim,
    neighbor_sum,
)
from tensorir_dace.frontend import field_operator as gt_field_operator  # noqa: E402
from tensorir_dace.frontend import program as gt_program  # noqa: E402
from test_concat_where_table_source import (  # noqa: E402
    E2C_TABLE,
    MESH,
    NE,
    NV,
    V2C_TABLE,
    V,
    X,
    at_vertices_ref,
    below_n_ref,
    both,
    gathered,
)

Ed, Vd, Cd = dace.symbol("Ed"), dace.symbol("Vd"), dace.symbol("Cd")


@pytest.fixture(scope="module")
def both_compiled():
    """A program whose cells' extent only the tables give (``_extent_Cell``)."""
    return both.compile(offset_provider=MESH)


@pytest.fixture(scope="module")
def nesting_both(both_compiled):
    """``both`` inside a @dace.program that passes the tables and not the
    extent: runtime bounds as arguments of the outer program and as numbers."""
    @dace.program
    def nest_both(x: dace.float64[Ed], v: dace.float64[Vd], oe: dace.float64[Ed],
                  ov: dace.float64[Vd], e2c: dace.int64[Ed, 2], v2c: dace.int64[Vd, 3],
                  n: dace.int32):
        both_compiled(x=x, v=v, oe=oe, ov=ov, n=n, k0=5, k1=7, hs=1, he=8, E2C=e2c, V2C=v2c)
        ov[:] = ov + 1.0

    return nest_both


def test_source_extent_is_not_an_argument_of_the_nested_sdfg(both_compiled):
    names, _ = both_compiled.__sdfg_signature__()
    assert "E2C" in names and not [n for n in names if "extent" in n]
    assert "N_Cell" not in both_compiled.__sdfg__().free_symbols


@pytest.mark.parametrize("n", [2, 0])
def test_program_with_a_source_extent_inside_a_dace_program(nesting_both, n):
    """The nested SDFG takes the cells' extent from the tables it is given
    (largest entry + 1; entries -1 are absent; none but -1: no cells), as a
    direct call does; the outer program compiles once and follows the tables
    of each call."""
    wide_e2c, wide_v2c = E2C_TABLE.copy(), V2C_TABLE.copy()
    wide_e2c[4, 0], wide_v2c[1, 2] = 11, 9
    cells = np.arange(12)
    absent_e2c, absent_v2c = np.full_like(E2C_TABLE, -1), np.full_like(V2C_TABLE, -1)
    for e2c, v2c in [(E2C_TABLE, V2C_TABLE), (wide_e2c, wide_v2c), (absent_e2c, absent_v2c)]:
        oe, ov = np.full(NE, -1.0), np.full(NV, -1.0)
        nesting_both(X, V, oe, ov, e2c, v2c, n)
        ref_e, ref_v = np.full(NE, -1.0), np.full(NV, -1.0)
        both(X, V, ref_e, ref_v, n, 5, 7, 1, 8, offset_provider={"E2C": e2c, "V2C": v2c},
             backend="interpreter")
        np.testing.assert_allclose(oe, ref_e, rtol=1e-14)
        np.testing.assert_allclose(ov, ref_v + 1.0, rtol=1e-14)
        want_e = np.full(NE, -1.0)
        want_e[1:8] = below_n_ref(X, n, e2c)[1:8]
        np.testing.assert_allclose(oe, want_e, rtol=1e-14)
        at_cells = np.where((cells >= 5) & (cells < 7), 10.0, 1.0)
        np.testing.assert_allclose(ov, gathered(at_cells, v2c) + V + 1.0, rtol=1e-14)


def test_runtime_bounds_given_as_numbers_inside_a_dace_program(both_compiled):
    """Symbols the nested code reads (``n``, ``k0``, ``k1``) given as numbers."""
    @dace.program
    def nest_numbers(x: dace.float64[Ed], v: dace.float64[Vd], oe: dace.float64[Ed],
                     ov: dace.float64[Vd], e2c: dace.int64[Ed, 2], v2c: dace.int64[Vd, 3]):
        both_compiled(x=x, v=v, oe=oe, ov=ov, n=3, k0=1, k1=4, hs=0, he=9, E2C=e2c, V2C=v2c)

    oe, ov = np.zeros(NE), np.zeros(NV)
    nest_numbers(X, V, oe, ov, E2C_TABLE, V2C_TABLE)
    np.testing.assert_allclose(oe, below_n_ref(X, 3), rtol=1e-14)
    np.testing.assert_allclose(ov, at_vertices_ref(V, 1, 4), rtol=1e-14)


Cell, Edge = Dimension("Cell"), Dimension("Edge")
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))


@gt_field_operator
def gather(c: Field[[Cell], float64], x: Field[[Edge], float64]) -> Field[[Edge], float64]:
    return neighbor_sum(c(E2C), axis=E2CDim) - x


@gt_program
def gathers(c: Field[[Cell], float64], x: Field[[Edge], float64], o: Field[[Edge], float64]):
    gather(c, x, out=o)


def test_table_program_inside_a_dace_program_with_other_size_names():
    """The nested code reads the cells' size (a table entry's bound) under its
    own name, ``N_Cell``; the outer program calls it ``Cd``."""
    fn = gathers.compile(offset_provider={"E2C": E2C_TABLE})

    @dace.program
    def nest_gathers(c: dace.float64[Cd], x: dace.float64[Ed], o: dace.float64[Ed],
                     e2c: dace.int64[Ed, 2]):
        fn(c=c, x=x, o=o, E2C=e2c)

    c, o = np.arange(4.0) + 0.5, np.zeros(NE)
    nest_gathers(c, X, o, E2C_TABLE)
    np.testing.assert_allclose(o, gathered(c, E2C_TABLE) - X, rtol=1e-14)


def test_source_extent_derived_where_the_value_is_an_array(both_compiled):
    """Unoptimised, the value along the cells is a transient over
    ``Cell[0:N_Cell]``: allocated once the tables have given ``N_Cell``."""
    from tensorir_dace.interop import derive_source_extents
    from tensorir_dace.lowering import lower_program
    from tensorir_dace.transforms.sdfg_passes import zero_offsets
    lowered = lower_program(both_compiled.program, optimize="none")
    zero_offsets(lowered.sdfg)
    derive_source_extents(both_compiled.program, lowered)
    sdfg = lowered.sdfg
    assert any(d.transient and "N_Cell" in map(str, d.free_symbols)
               for d in sdfg.arrays.values())
    sdfg.name = "both_unoptimized_extent"
    oe, ov = np.zeros(NE), np.zeros(NV)
    sdfg(x=X, v=V, oe=oe, ov=ov, n=np.int32(2), k0=np.int32(5), k1=np.int32(7),
         hs=np.int32(0), he=np.int32(NE), E2C=E2C_TABLE, V2C=V2C_TABLE, N_Edge=NE, N_Vertex=NV)
    np.testing.assert_allclose(oe, below_n_ref(X, 2), rtol=1e-14)
    np.testing.assert_allclose(ov, at_vertices_ref(V, 5, 7), rtol=1e-14)


Cells, Edges = dims("Cells Edges")
E2CellsDim = neighbor_dim(Cells, 2)
E2Cells = connectivity("E2Cells", Edges, E2CellsDim)


@gt_field_operator
def below_declared(x: Field[[Edges], float64], n: int32) -> Field[[Edges], float64]:
    t = concat_where(Cells < n, broadcast(1.5, (Cells,)), 2.0)
    return neighbor_sum(t(E2Cells), axis=E2CellsDim) - x


@gt_program
def run_below_declared(x: Field[[Edges], float64], o: Field[[Edges], float64], n: int32):
    below_declared(x, n, out=o)


def test_decorated_program_with_a_source_extent_inside_a_dace_program():
    """The decorated program itself (declared connectivities: no offset
    provider needed) nests; its parameters ``o`` and ``n`` share no name with
    the states that compute the extent."""
    @dace.program
    def nest_declared(x: dace.float64[Ed], o: dace.float64[Ed], t: dace.int64[Ed, 2]):
        run_below_declared(x=x, o=o, n=2, E2Cells=t)

    table = np.array([[0, 5], [-1, 2], [3, -1], [-1, -1]])
    x, o = np.arange(4.0), np.zeros(4)
    nest_declared(x, o, table)
    np.testing.assert_allclose(o, gathered(np.where(np.arange(6) < 2, 1.5, 2.0), table) - x,
                               rtol=1e-14)
    ref = np.zeros(4)
    run_below_declared(x, ref, 2, E2Cells=table, backend="interpreter")
    np.testing.assert_allclose(o, ref, rtol=1e-14)


READS_EXTENT = """
reads(out: tensor<bool, Edge[0:N]>, E2C: tensor<int64, Edge[0:N], _NB_Cell[0:2]>,
      _extent_Cell: tensor<bool, Cell[0:M]>) {
  out ← ⟪E2C, 0⟫(_extent_Cell)
}
"""


def test_a_source_extent_the_program_reads_is_refused_clearly_when_nested():
    """A program (written in IR) that reads the elements of its extent
    parameter cannot have it computed inside DaCe: nesting it is a
    TensorIRError that says what to do; a call binds it as usual."""
    fn = compiled(READS_EXTENT)
    out = np.ones(3, bool)
    fn(out=out, E2C=np.array([[0, 1], [2, 0], [1, 1]]))
    assert not out.any()

    @dace.program
    def nest_reads(o: dace.bool[N], t: dace.int64[N, 2]):
        fn(out=o, E2C=t)

    with pytest.raises(tir.TensorIRError, match="'_extent_Cell' stands for the extent of Cell "
                                                ".*the program reads its elements.*give the "
                                                "program a parameter over Cell"):
        nest_reads(out, np.zeros((3, 2), np.int64))
