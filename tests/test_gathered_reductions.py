"""The passes for gathered temporaries and neighbour reductions
(``compute_gathered_on_the_fly``, ``fuse_neighbor_reductions``): structure
(maps, transients, loops) and results against the interpreter, each pass run
alone and in the default pipeline, also on random mesh programs."""

from __future__ import annotations

import dace
import pytest

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace.library import NeighborReduce
from tensorir_dace.lowering import lower
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms import gathers_on_the_fly
from tensorir_dace.transforms.fuse_reductions import fuse_neighbor_reductions, split_loop
from tensorir_dace.transforms.gathers_on_the_fly import compute_gathered_on_the_fly, ops
from tensorir_dace.transforms.sdfg_passes import fuse_maps_vertically, simplify
from test_fusion_passes import NABLA, counts, edge_maps
from test_random_programs import mesh_program

SIZES = {"V": 9, "E": 14}


def lowered(prog) -> dace.SDFG:
    sdfg = lower(tir.check(prog), fused=True).sdfg
    simplify(sdfg)
    fuse_maps_vertically(sdfg)
    return sdfg


def edge_transients(sdfg: dace.SDFG) -> list[str]:
    return [k for k, d in sdfg.arrays.items() if d.transient and str(d.shape) == "(E,)"]


def matches_interpreter(prog, fn, seeds=(0, 1), absent=0.25):
    for seed in seeds:
        args = random_arguments(prog, sizes=SIZES, seed=seed, absent_fraction=absent)
        ref, out = clone(args), clone(args)
        tir.interpret(prog, **ref)
        fn(**out)
        assert_same_results(out, ref, 1e-10)


def codes(sdfg: dace.SDFG) -> list[str]:
    return [n.code if isinstance(n, NeighborReduce) else n.code.as_string
            for n, _ in sdfg.all_nodes_recursive()
            if isinstance(n, (dace.nodes.Tasklet, NeighborReduce))]


@pytest.fixture(scope="module")
def nabla():
    return tir.parse(NABLA)


def test_edge_values_are_computed_where_the_vertices_gather_them(nabla):
    sdfg = lowered(nabla)
    assert edge_maps(sdfg) == 2 and len(edge_transients(sdfg)) == 2
    maps, transients = counts(sdfg)
    compute_gathered_on_the_fly(sdfg)
    sdfg.validate()
    # No edge map and no edge-sized temporary left: one vertex map.
    assert edge_maps(sdfg) == 0 and edge_transients(sdfg) == []
    assert counts(sdfg) == (maps - 2, transients - 2)
    reductions = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, NeighborReduce)]
    assert len(reductions) == 2
    for r in reductions:
        assert r.code.count("auto _fly__t") == 1 and "_fly_p_pp" in r.in_connectors
        assert not any(c.startswith("_p_t") for c in r.in_connectors)
    matches_interpreter(nabla, CompiledProgram.from_sdfg(nabla, sdfg))


def test_the_reductions_of_both_components_share_one_loop(nabla):
    sdfg = lowered(nabla)
    fuse_neighbor_reductions(sdfg)        # alone: the loops gather the edge temporaries
    sdfg.validate()
    assert not any(isinstance(n, NeighborReduce) for n, _ in sdfg.all_nodes_recursive())
    (code,) = [c for c in codes(sdfg) if "_nb" in c]
    assert code.count("for (long long") == 1 and code.count("_p_V2E") >= 2
    before, _, body, after = split_loop(code)
    assert "_acc1 =" in body and "_acc1_r1 =" in body and "_out0_r1 = _acc1_r1;" in after
    matches_interpreter(nabla, CompiledProgram.from_sdfg(nabla, sdfg))


def test_default_pipeline_runs_the_nabla_in_one_map_and_one_loop(nabla):
    fn = tir.compile(nabla)
    assert edge_maps(fn.sdfg) == 0 and edge_transients(fn.sdfg) == []
    assert counts(fn.sdfg)[0] == 1
    (code,) = [c for c in codes(fn.sdfg) if "_nb" in c]
    assert code.count("for (long long") == 1 and code.count("auto _fly__t") == 2
    matches_interpreter(nabla, fn, seeds=(0, 1, 2))
    matches_interpreter(nabla, fn, seeds=(3,), absent=0.0)


EXPENSIVE = """
grad(out: tensor<float, Vertex[0:V]>, pp: tensor<float, Vertex[0:V]>,
     E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:6]>) {
  out ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>) → acc + a, 0.0)(
    ⟪V2E⟫(sqrt(abs(⟪E2V, 0⟫(pp) - ⟪E2V, 1⟫(pp))) × exp(⟪E2V, 1⟫(pp))))
}
"""


def test_the_cost_rule_keeps_expensive_edge_values_in_memory():
    assert ops("double _v5 = (_v2 + _v4);\n_v6 = 0.5 * _v5;\n_v7 = a[(_n - 0) * 2];") == 2
    assert ops("_v = sqrt(_a) + 1.0e-5;") == 1 + gathers_on_the_fly.MATH_OPS
    prog = tir.parse(EXPENSIVE)
    sdfg = lowered(prog)
    compute_gathered_on_the_fly(sdfg)
    assert edge_maps(sdfg) == 1 and len(edge_transients(sdfg)) == 1
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg))


TWO_IN_ONE = """
two(out: tensor<float, Vertex[0:V]>, pp: tensor<float, Vertex[0:V]>, s: tensor<float, Edge[0:E]>,
    E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:6]>) {
  out ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
                 b: tensor<float, Vertex[0:V]>) → acc + a × b, 0.0)(
    ⟪V2E⟫(s × ⟪E2V, 0⟫(pp)), ⟪V2E⟫(s + ⟪E2V, 1⟫(pp)))
}
"""


def test_two_temporaries_gathered_by_one_reduction_are_both_inlined():
    prog = tir.parse(TWO_IN_ONE)
    sdfg = lowered(prog)
    assert len(edge_transients(sdfg)) == 2
    compute_gathered_on_the_fly(sdfg)
    sdfg.validate()
    assert edge_maps(sdfg) == 0 and edge_transients(sdfg) == []
    (r,) = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, NeighborReduce)]
    assert r.code.count("auto _fly__t") == 2
    assert sorted(c for c in r.in_connectors if c.startswith("_fly_p_")) == \
        ["_fly_p_E2V", "_fly_p_pp", "_fly_p_s"]
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg))


@pytest.mark.parametrize("seed", [0, 3])
def test_random_mesh_programs_with_both_passes_match_the_interpreter(seed):
    prog = tir.parse(mesh_program(seed))
    sdfg = lowered(prog)
    arrays = len(sdfg.arrays)
    compute_gathered_on_the_fly(sdfg)
    assert len(sdfg.arrays) < arrays          # some gathered temporary was inlined
    reductions = sum(isinstance(n, NeighborReduce) for n, _ in sdfg.all_nodes_recursive())
    fuse_neighbor_reductions(sdfg)
    sdfg.validate()
    assert sum(isinstance(n, NeighborReduce) for n, _ in sdfg.all_nodes_recursive()) \
        < reductions
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), seeds=(seed,))
