"""A value constant along a neighbour table's source dimension, read through the
table: GT4Py's ``broadcast(p, (Edge, K))(C2E)`` with ``p`` over ``K`` (or a
number) and no parameter over ``Edge``.  Every present neighbour reads the
value; ``-1`` entries are absent as for any read through the table (reductions
skip them, a full shift gives NaN there).  In the Tensor IR this is a shift
of an operand without the source dimension: ``⟪C2E⟫(q)`` over ``(Cell,
_NB_0, K)``.

Interpreter and compiled code (programs at both optimisation levels, direct
calls of field operators) are compared with hand-written NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import compiled, parsed
from tensorir_dace import TensorIRError
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    broadcast,
    concat_where,
    field_operator,
    int32,
    max_over,
    min_over,
    neighbor_sum,
    program,
    where,
)

BACKENDS = ["interpreter", "compiled"]

Cell, Edge, Vertex = Dimension("Cell"), Dimension("Edge"), Dimension("Vertex")
K = Dimension("K", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))
E2V = FieldOffset("E2V", source=Vertex, target=(Edge, E2VDim))

NC, NE, NV, NK = 5, 8, 6, 4


def mesh(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c2e = rng.integers(0, NE, (NC, 3)).astype(np.int32)
    c2e[1, 1] = -1
    c2e[3] = -1                         # a cell without neighbours
    e2c = rng.integers(0, NC, (NE, 2)).astype(np.int32)
    e2c[2, 0] = e2c[5, 1] = -1
    e2v = rng.integers(0, NV, (NE, 2)).astype(np.int32)
    e2v[c2e[0, 0], 1] = e2v[c2e[2, 2], 1] = -1
    return {"C2E": c2e, "E2C": e2c, "E2V": e2v}


MESH = mesh()
RNG = np.random.default_rng(7)
P = RNG.random(NK)
A = RNG.random((NC, NK))
E = RNG.random((NE, NK))
MASK = np.array([True, False, True, True, False])


def present(table: np.ndarray) -> np.ndarray:
    return table >= 0


def count(table: np.ndarray) -> np.ndarray:
    """Present neighbours per row, as a column."""
    return present(table).sum(1)[:, None]


# --------------------------------------------------------------------------- field operators


@field_operator
def _profile_sum(p: Field[Dims[K], float]) -> Field[Dims[Cell, K], float]:
    t = broadcast(p, (Edge, K))
    return neighbor_sum(t(C2E), axis=C2EDim)


@field_operator
def _number_sum() -> Field[Dims[Cell, K], float]:
    return neighbor_sum(broadcast(1.5, (Edge, K))(C2E), axis=C2EDim)


@field_operator
def _neighbour_count() -> Field[Dims[Cell, K], int32]:
    return neighbor_sum(broadcast(int32(1), (Edge, K))(C2E), axis=C2EDim)


@field_operator
def _number_at_first_cell() -> Field[Dims[Edge, K], float]:
    return broadcast(1.5, (Cell, K))(E2C[0])


@field_operator
def _scalar_expression_sum(s: float) -> Field[Dims[Cell, K], float]:
    return neighbor_sum(broadcast(s * 2.0 + 1.0, (Edge, K))(C2E), axis=C2EDim)


@field_operator
def _selected(m: Field[Dims[Cell], bool], p: Field[Dims[K], float]
              ) -> Field[Dims[Cell, K], float]:
    return neighbor_sum(where(m, broadcast(p, (Edge, K))(C2E), 0.0), axis=C2EDim)


@field_operator
def _extremes(p: Field[Dims[K], float], a: Field[Dims[Cell, K], float]
              ) -> tuple[Field[Dims[Cell, K], float], Field[Dims[Cell, K], float]]:
    t = broadcast(p, (Edge, K))(C2E)
    return max_over(t, axis=C2EDim) + a, min_over(t, axis=C2EDim) - a


@field_operator
def _levels_chosen(p: Field[Dims[K], float]) -> Field[Dims[Cell, K], float]:
    b = concat_where(K < 1, broadcast(0.5, (Edge, K)), broadcast(p, (Edge, K)))
    return neighbor_sum(b(C2E), axis=C2EDim)


@field_operator
def _through_two_tables(p: Field[Dims[K], float]) -> Field[Dims[Cell, K], float]:
    at_edges = broadcast(p, (Vertex, K))(E2V[1])   # absent where E2V[:, 1] < 0
    return neighbor_sum(at_edges(C2E), axis=C2EDim)


@field_operator
def _sparse_through_two_tables(p: Field[Dims[K], float]) -> Field[Dims[Cell, K], float]:
    at_edges = broadcast(p, (Vertex, K))(E2V)       # over (Edge, E2V, K)
    return neighbor_sum(neighbor_sum(at_edges(C2E), axis=E2VDim), axis=C2EDim)


@field_operator
def _summed_then_gathered(p: Field[Dims[K], float]) -> Field[Dims[Cell, K], float]:
    at_edges = neighbor_sum(broadcast(p, (Vertex, K))(E2V), axis=E2VDim)
    return neighbor_sum(at_edges(C2E), axis=C2EDim)


@field_operator
def _beside_an_edge_field(p: Field[Dims[K], float], e: Field[Dims[Edge, K], float]
                          ) -> Field[Dims[Cell, K], float]:
    return neighbor_sum(broadcast(p, (Edge, K))(C2E) * e(C2E), axis=C2EDim) \
        + neighbor_sum(broadcast(p, (Edge, K))(C2E), axis=C2EDim)


@field_operator
def _to_edges(p: Field[Dims[K], float], a: Field[Dims[Cell, K], float]
              ) -> Field[Dims[Edge, K], float]:
    return neighbor_sum(broadcast(p, (Cell, K))(E2C) + a(E2C), axis=E2CDim)


@program
def profile_sum(p: Field[Dims[K], float], out: Field[Dims[Cell, K], float]):
    _profile_sum(p, out=out)


@program(optimize="none")
def profile_sum_unoptimized(p: Field[Dims[K], float], out: Field[Dims[Cell, K], float]):
    _profile_sum(p, out=out)


@program
def levels_chosen_on_a_domain(p: Field[Dims[K], float], out: Field[Dims[Cell, K], float],
                              cs: int, ce: int):
    _levels_chosen(p, out=out, domain={Cell: (cs, ce), K: (0, NK)})


@program
def beside_an_edge_field(p: Field[Dims[K], float], e: Field[Dims[Edge, K], float],
                         out: Field[Dims[Cell, K], float]):
    _beside_an_edge_field(p, e, out=out)


@program
def two_tables(p: Field[Dims[K], float], out: Field[Dims[Cell, K], float]):
    _through_two_tables(p, out=out)


# --------------------------------------------------------------------------- references


def profile_sum_ref(p: np.ndarray) -> np.ndarray:
    return count(MESH["C2E"]) * p[None, :]


def edge_gather(e: np.ndarray) -> np.ndarray:
    c2e = MESH["C2E"]
    return np.where(present(c2e)[:, :, None], e[np.maximum(c2e, 0)], 0.0)


def two_tables_ref(p: np.ndarray) -> np.ndarray:
    c2e, e2v = MESH["C2E"], MESH["E2V"]
    both = present(c2e) & present(e2v[np.maximum(c2e, 0), 1])
    return both.sum(1)[:, None] * p[None, :]


# --------------------------------------------------------------------------- direct calls


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_profile_read_at_every_neighbour(backend):
    out = np.full((NC, NK), 9.0)
    _profile_sum(P, out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, profile_sum_ref(P), rtol=1e-14)
    assert not out[3].any()             # no neighbour: the sum's initial value


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_number_read_at_every_neighbour(backend):
    out = np.zeros((NC, NK))
    _number_sum(out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, 1.5 * count(MESH["C2E"]) * np.ones((1, NK)), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_int_counts_the_neighbours(backend):
    out = np.full((NC, NK), 9, np.int32)
    _neighbour_count(out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_array_equal(out, count(MESH["C2E"]) * np.ones((1, NK), np.int32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_number_at_one_neighbour_is_absent_where_the_entry_is(backend):
    out = np.zeros((NE, NK))
    _number_at_first_cell(out=out, offset_provider=MESH, backend=backend)
    expected = np.where(present(MESH["E2C"][:, :1]), 1.5, np.nan) * np.ones((1, NK))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scalar_expression_read_at_every_neighbour(backend):
    out = np.zeros((NC, NK))
    _scalar_expression_sum(0.75, out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, 2.5 * count(MESH["C2E"]) * np.ones((1, NK)), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inside_where(backend):
    out = np.zeros((NC, NK))
    _selected(MASK, P, out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, np.where(MASK[:, None], profile_sum_ref(P), 0.0),
                               rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_and_min_over_neighbours(backend):
    hi, lo = np.zeros((NC, NK)), np.zeros((NC, NK))
    _extremes(P, A, out=(hi, lo), offset_provider=MESH, backend=backend)
    some = count(MESH["C2E"]) > 0
    np.testing.assert_allclose(hi, np.where(some, P[None, :], -np.inf) + A, rtol=1e-14)
    np.testing.assert_allclose(lo, np.where(some, P[None, :], np.inf) - A, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_where_of_broadcasts_read_through_a_table(backend):
    out = np.zeros((NC, NK))
    _levels_chosen(P, out=out, offset_provider=MESH, backend=backend)
    levels = np.concatenate([[0.5], P[1:]])
    np.testing.assert_allclose(out, count(MESH["C2E"]) * levels[None, :], rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_through_two_tables_skips_absent_entries_of_both(backend):
    out = np.zeros((NC, NK))
    _through_two_tables(P, out=out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, two_tables_ref(P), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fop", [_sparse_through_two_tables, _summed_then_gathered],
                         ids=["nested partial shifts", "summed, then gathered"])
def test_every_neighbour_of_every_neighbour(fop, backend):
    out = np.zeros((NC, NK))
    fop(P, out=out, offset_provider=MESH, backend=backend)
    c2e, e2v = MESH["C2E"], MESH["E2V"]
    both = present(c2e)[:, :, None] & present(e2v[np.maximum(c2e, 0)])
    np.testing.assert_allclose(out, both.sum((1, 2))[:, None] * P[None, :], rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_beside_a_field_over_the_source(backend):
    out = np.zeros((NC, NK))
    _beside_an_edge_field(P, E, out=out, offset_provider=MESH, backend=backend)
    expected = (edge_gather(E) * P[None, None, :]).sum(1) + profile_sum_ref(P)
    np.testing.assert_allclose(out, expected, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_to_edges_beside_a_cell_field(backend):
    out = np.zeros((NE, NK))
    _to_edges(P, A, out=out, offset_provider=MESH, backend=backend)
    e2c = MESH["E2C"]
    gathered = np.where(present(e2c)[:, :, None], P[None, None, :] + A[np.maximum(e2c, 0)], 0.0)
    np.testing.assert_allclose(out, gathered.sum(1), rtol=1e-14)


# --------------------------------------------------------------------------- programs


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("prog", [profile_sum, profile_sum_unoptimized],
                         ids=["default", "unoptimized"])
def test_in_a_program(prog, backend):
    out = np.zeros((NC, NK))
    prog(P, out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, profile_sum_ref(P), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_a_program_on_a_domain(backend):
    out = np.full((NC, NK), 9.0)
    levels_chosen_on_a_domain(P, out, 1, 4, offset_provider=MESH, backend=backend)
    levels = np.concatenate([[0.5], P[1:]])
    expected = np.full((NC, NK), 9.0)
    expected[1:4] = (count(MESH["C2E"]) * levels[None, :])[1:4]
    np.testing.assert_allclose(out, expected, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_a_program_with_a_parameter_over_the_source(backend):
    out = np.zeros((NC, NK))
    beside_an_edge_field(P, E, out, offset_provider=MESH, backend=backend)
    expected = (edge_gather(E) * P[None, None, :]).sum(1) + profile_sum_ref(P)
    np.testing.assert_allclose(out, expected, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_a_program_through_two_tables(backend):
    out = np.zeros((NC, NK))
    two_tables(P, out, offset_provider=MESH, backend=backend)
    np.testing.assert_allclose(out, two_tables_ref(P), rtol=1e-14)


def test_a_value_over_the_destination_without_the_source_is_refused_clearly():
    """``broadcast(a, (Edge, Cell, K))`` of ``a`` over ``(Cell, K)`` read through
    ``C2E`` needs ``Edge``'s extent from a parameter (a value over the table's
    destination but not its source is more likely a slip)."""
    @field_operator
    def _cells_along_edges(a: Field[Dims[Cell, K], float]) -> Field[Dims[Cell, K], float]:
        return neighbor_sum(broadcast(a, (Edge, Cell, K))(C2E), axis=C2EDim)

    with pytest.raises(TensorIRError, match="has dimension Cell but not Edge.*pass a field "
                                            "over Edge"):
        _cells_along_edges(A, out=np.zeros((NC, NK)), offset_provider=MESH)


# --------------------------------------------------------------------------- Tensor IR

TEXT = """
at_neighbours(q: tensor<float, K[0:NK]>, s: tensor<float>,
              C2E: tensor<int, Cell[0:NC], _NB_Edge[0:3]>,
              E2C: tensor<int, Edge[0:NE], _NB_Cell[0:2]>,
              sums: tensor<float, Cell[0:NC], K[0:NK]>, first: tensor<float, Edge[0:NE], K[0:NK]>,
              ok: tensor<bool, Edge[0:NE]>) {
  sums ← reduce(λ(acc: tensor<float, Cell[0:NC], K[0:NK]>, x: tensor<float, Cell[0:NC], K[0:NK]>)
                → acc + x, 0.0)(⟪C2E⟫(q) + ⟪C2E⟫(s × 2.0));
  first ← ⟪E2C, 1⟫(q) + ⟪E2C, 0⟫(1.0);
  ok ← can_deref(⟪E2C, 1⟫(2.0));
}
"""


def test_the_shift_rule_types():
    typed = tir.check(parsed(TEXT))
    sums = typed.body[0].value
    shifted = sums.args[0].args[0]       # ⟪C2E⟫(q)
    assert [d.name for d in shifted.type.dims] == ["Cell", "_NB_0", "K"]
    assert shifted.type.dims[1].mask is not None     # skips C2E's -1 entries
    full = typed.body[1].value.args[1]   # ⟪E2C, 0⟫(1.0)
    assert [d.name for d in full.type.dims] == ["Edge"]


@pytest.mark.parametrize("run", ["interpreter", "none", "default"])
def test_the_shift_rule_in_the_text_syntax(run):
    e2c = MESH["E2C"].astype(np.int64)
    a = {"q": P, "s": 0.25, "C2E": MESH["C2E"].astype(np.int64), "E2C": e2c,
         "sums": np.zeros((NC, NK)), "first": np.zeros((NE, NK)), "ok": np.zeros(NE, bool)}
    if run == "interpreter":
        tir.interpret(parsed(TEXT), **a)
    else:
        compiled(TEXT, run)(**a)
    np.testing.assert_allclose(a["sums"], count(MESH["C2E"]) * (P[None, :] + 0.5), rtol=1e-14)
    both = present(e2c[:, 1]) & present(e2c[:, 0])
    np.testing.assert_array_equal(a["first"], np.where(both[:, None], P[None, :] + 1.0, np.nan))
    np.testing.assert_array_equal(a["ok"], present(e2c[:, 1]))


def test_random_arguments_need_no_parameter_over_the_source():
    args = tir.testing.random_arguments(parsed(TEXT), sizes={"NC": 4, "NE": 6, "NK": 3})
    assert args["C2E"].max() >= 0 and args["E2C"].shape == (6, 2)


# A concat_where along the table's source dimension between values without it:
# GT4Py's broadcasts have no end there; a value here is computed over a known
# extent, which a field over the source dimension gives (read or not), or else
# the tables that index it (their largest entry plus one).


@field_operator
def _first_edges_halved(a: Field[Dims[Cell, K], float]) -> Field[Dims[Cell, K], float]:
    b = concat_where(Edge < 3, broadcast(0.5, (Edge, K)), broadcast(2.0, (Edge, K)))
    return neighbor_sum(b(C2E), axis=C2EDim) + a


@field_operator
def _first_edges_halved_sized(a: Field[Dims[Cell, K], float], e: Field[Dims[Edge], float]
                              ) -> Field[Dims[Cell, K], float]:
    b = concat_where(Edge < 3, broadcast(0.5, (Edge, K)), broadcast(2.0, (Edge, K)))
    return neighbor_sum(b(C2E), axis=C2EDim) + a


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_where_along_the_source_sized_by_the_table(backend):
    out = np.zeros((NC, NK))
    _first_edges_halved(A, out=out, offset_provider=MESH, backend=backend)
    c2e = MESH["C2E"]
    at_edges = np.where(np.arange(NE) < 3, 0.5, 2.0)
    want = np.where(present(c2e), at_edges[c2e], 0.0).sum(1)[:, None] + A
    np.testing.assert_allclose(out, want, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_where_along_the_source_sized_by_a_field_over_it(backend):
    out = np.zeros((NC, NK))
    _first_edges_halved_sized(A, np.zeros(NE), out=out, offset_provider=MESH, backend=backend)
    c2e = MESH["C2E"]
    at_edges = np.where(np.arange(NE) < 3, 0.5, 2.0)
    want = np.where(present(c2e), at_edges[c2e], 0.0).sum(1)[:, None] + A
    np.testing.assert_allclose(out, want, rtol=1e-14)
