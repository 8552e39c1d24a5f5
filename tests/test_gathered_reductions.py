"""The passes for gathered temporaries and neighbour reductions
(``compute_gathered_on_the_fly``, ``fuse_neighbor_reductions``): structure
(maps, transients, loops) and results against the interpreter, each pass run
alone and in the default pipeline, also on random mesh programs."""

from __future__ import annotations

import re

import dace
import pytest

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace.library import NeighborReduce
from tensorir_dace.lowering import lower
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms import gathers_on_the_fly
from tensorir_dace.transforms.cpp_text import split_loop, statements
from tensorir_dace.transforms.fuse_reductions import (
    fuse_neighbor_reductions,
    share_statements,
)
from tensorir_dace.transforms.gathers_on_the_fly import compute_gathered_on_the_fly, ops
from tensorir_dace.transforms.sdfg_passes import fuse_maps_vertically, simplify
from test_fusion_passes import NABLA, counts, edge_maps
from test_random_programs import ET, VT, mesh_program

SIZES = {"V": 9, "E": 14}


def lowered(prog) -> dace.SDFG:
    sdfg = lower(tir.check(prog), fused=True).sdfg
    simplify(sdfg)
    fuse_maps_vertically(sdfg)
    return sdfg


def edge_transients(sdfg: dace.SDFG) -> list[str]:
    return [k for k, d in sdfg.arrays.items() if d.transient and str(d.shape) == "(E,)"]


def matches_interpreter(prog, fn, seeds=(0, 1), absent=0.25, sizes=None):
    for seed in seeds:
        args = random_arguments(prog, sizes=sizes or SIZES, seed=seed, absent_fraction=absent)
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


def test_each_table_entry_is_loaded_and_tested_once_per_neighbour(nabla):
    sdfg = lowered(nabla)
    reductions = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, NeighborReduce)]
    assert len(reductions) == 2
    for r in reductions:
        _, _, body, _ = split_loop(r.code)
        # The V2E entry is loaded into one local that the mask test, the
        # presence test and the gather all use; each E2V entry once.
        (entry,) = re.findall(r"long long (_n\d+) = _p_V2E\[", body)
        assert body.count("_p_V2E[") == 1 and body.count("_p_E2V[") == 2
        # Its range is tested once: the guard of the update implies it, so the
        # gather inside is not guarded again.
        assert body.count(f"{entry} < ") == 1 and body.count(f"if ({entry} >= 0 && ") == 2


def test_shared_statements_of_fused_bodies_are_never_assigned_apart():
    first = statements("long long _n = _p_T[0];\nbool _ok = false;\n"
                       "if (_n >= 0) {\n_ok = _n < 5;\n}\nif (_ok) {\n_a = _a + 1;\n}")
    later = statements("long long _n = _p_T[0];\nbool _ok = false;\n"
                       "if (_n >= 0) {\n_ok = _n < 7;\n}\nif (_ok) {\n_b = _b + 1;\n}")
    common: set[str] = set()
    merged, rest = share_statements(first, later, {"_a", "_b"}, common)
    # ``_ok`` is set differently: only the load is kept once.
    assert merged == first and rest == later[1:] and common == {"_n", "_p_T"}
    same = statements("long long _n = _p_T[0];\nbool _ok = false;\n"
                      "if (_n >= 0) {\n_ok = _n < 5;\n}\nif (_ok) {\n_b = _b + 1;\n}")
    merged, rest = share_statements(first, same, {"_a", "_b"}, set())
    assert rest == [] and merged[:3] == first[:3] and merged[3].startswith("if (_ok) {")
    assert "_a = _a + 1;" in merged[3] and "_b = _b + 1;" in merged[3]


def test_the_reductions_of_both_components_share_one_loop(nabla):
    sdfg = lowered(nabla)
    fuse_neighbor_reductions(sdfg)        # alone: the loops gather the edge temporaries
    sdfg.validate()
    assert not any(isinstance(n, NeighborReduce) for n, _ in sdfg.all_nodes_recursive())
    (code,) = [c for c in codes(sdfg) if "_nb" in c]
    assert code.count("for (long long") == 1
    before, _, body, after = split_loop(code)
    assert "_acc1 =" in body and "_acc1_r1 =" in body and "_out0_r1 = _acc1_r1;" in after
    # Per neighbour, for both reductions together: the V2E entry and the two E2V
    # entries are loaded once each, presence is tested once, and one guard
    # encloses both updates.
    assert body.count("_p_V2E[") == 1 and body.count("_p_E2V[") == 2
    assert body.count(">= 0") == 4          # the V2E entry twice (range, mask), E2V twice
    assert body.count("if (") == 2 and body.index("_acc1 =") < body.index("_acc1_r1 =")
    matches_interpreter(nabla, CompiledProgram.from_sdfg(nabla, sdfg))


def test_default_pipeline_runs_the_nabla_in_one_map_and_one_loop(nabla):
    fn = tir.compile(nabla)
    assert edge_maps(fn.sdfg) == 0 and edge_transients(fn.sdfg) == []
    assert counts(fn.sdfg)[0] == 1
    (code,) = [c for c in codes(fn.sdfg) if "_nb" in c]
    assert code.count("for (long long") == 1 and code.count("auto _fly__t") == 2
    matches_interpreter(nabla, fn, seeds=(0, 1, 2))
    matches_interpreter(nabla, fn, seeds=(3,), absent=0.0)


def test_a_temporary_of_a_constant_size_that_fits_the_cache_stays_in_memory(nabla):
    """Nothing to save there: each edge value is computed once, not once per read."""
    def fixed(v: int, e: int):
        text = NABLA.replace("[0:V]", f"[0:{v}]").replace("[0:E]", f"[0:{e}]")
        assert text != NABLA
        return tir.parse(text)
    small = fixed(9, 14)
    sdfg = lowered(small)
    compute_gathered_on_the_fly(sdfg)
    assert edge_maps(sdfg) == 2 and not any("_fly_" in c for c in codes(sdfg))
    matches_interpreter(small, CompiledProgram.from_sdfg(small, sdfg), sizes={})
    edges = gathers_on_the_fly.CACHED_BYTES // 8 + 1          # one float64 beyond
    sdfg = lowered(fixed(edges // 3, edges))
    compute_gathered_on_the_fly(sdfg)
    assert edge_maps(sdfg) == 0 and sum(c.count("auto _fly__t") for c in codes(sdfg)) == 2


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


# Temporaries with a vertical dimension: an edge value at each level, gathered
# by the cells at the same level (or one level up).
CK = "tensor<float, Cell[0:C], K[0:L]>"
K_SIZES = {"C": 7, "E": 12, "V": 9, "L": 5}
TABLES = ("E2C: tensor<int, Edge[0:E], _NB_Cell[0:2]>, "
          "C2E: tensor<int, Cell[0:C], _NB_Edge[0:3]>")
DIV = f"""
div(out: {CK}, w: {CK}, geofac: tensor<float, Cell[0:C], _NB_0[0:3]>, {TABLES}) {{
  out ← reduce(λ(acc: {CK}, a: {CK}, g: tensor<float, Cell[0:C]>) → acc + a × g, 0.0)(
    ⟪C2E⟫(0.5 × (⟪E2C, 0⟫(w) + ⟪E2C, 1⟫(w))), geofac)
}}"""
K_PROGRAMS = {
    "levels outside": f"""
div(out: tensor<float, K[0:L], Cell[0:C]>, w: tensor<float, K[0:L], Cell[0:C]>,
    geofac: tensor<float, Cell[0:C], _NB_0[0:3]>, {TABLES}) {{
  out ← reduce(λ(acc: tensor<float, K[0:L], Cell[0:C]>, a: tensor<float, K[0:L], Cell[0:C]>,
                 g: tensor<float, Cell[0:C]>) → acc + a × g, 0.0)(
    ⟪C2E⟫(0.5 × (⟪E2C, 0⟫(w) + ⟪E2C, 1⟫(w))), geofac)
}}""",
    "producer reads a level up": f"""
dz(out: {CK}, w: tensor<float, Cell[0:C], K[0:L+1]>, s: tensor<float, Edge[0:E]>, {TABLES}) {{
  out ← ⟪C2E, 0⟫(s × (⟪K, 1⟫(⟪E2C, 0⟫(w)) - ⟪E2C, 1⟫(w)))
        + ⟪C2E, 2⟫(s × (⟪K, 1⟫(⟪E2C, 0⟫(w)) - ⟪E2C, 1⟫(w)));
}}""",
    "reader reads a level up": f"""
rs(out: {CK}, w: tensor<float, Cell[0:C], K[0:L+1]>, s: tensor<float, Edge[0:E]>, {TABLES}) {{
  out ← ⟪K, 1⟫(⟪C2E, 1⟫(s × ⟪E2C, 0⟫(w))) - ⟪C2E, 1⟫(s × ⟪E2C, 0⟫(w));
}}""",
    "declared temporary": f"""
dc(out: {CK}, w: {CK}, s: tensor<float, Edge[0:E]>, {TABLES}) {{
  tmp: tensor<float, Edge[0:E], K[0:L]>;
  tmp ← s × ⟪E2C, 1⟫(w);
  out ← ⟪C2E, 2⟫(tmp) + ⟪C2E, 0⟫(tmp);
}}""",
}


def edge_level_transients(sdfg: dace.SDFG) -> list[str]:
    return [k for k, d in sdfg.arrays.items() if d.transient and "E" in map(str, d.shape)]


def test_a_flat_index_splits_into_coordinates_only_in_the_lowering_form():
    desc = dace.data.Array(dace.float64, (dace.symbol("E"), dace.symbol("L")))
    split = gathers_on_the_fly._coordinates
    assert split("(_n14 - 0) * (L) + (_i_K)", desc) == ["(_n14 - 0)", "(_i_K)"]
    assert split("(_i_K + 1) + (_n - 0) * (L)", desc) == ["(_n - 0)", "(_i_K + 1)"]
    assert split("(_n - 0) * (L)", desc) == ["(_n - 0)", "0"]       # level 0 left out
    assert split("3", desc) == ["0", "3"]
    for index in ["(_n) * (L) + (_k) * (L)",     # one dimension twice
                  "_n * L + _k",                 # unparenthesised: C++ could regroup
                  "(_n) * (L) - (_k)", "(_n) * (E) + (_k)", "(_n) * (L) * 2 + (_k)",
                  "(_n)[0] * (L)", "(_n) + (_k)"]:
        assert split(index, desc) is None, index
    square = dace.data.Array(dace.float64, (1, 1))          # strides (1, 1): ambiguous
    assert split("(_n) + (_k)", square) is None


@pytest.fixture(scope="module")
def div():
    return tir.parse(DIV)


def test_edge_values_at_each_level_are_computed_where_the_cells_gather_them(div):
    sdfg = lowered(div)
    assert len(edge_level_transients(sdfg)) == 1
    maps, transients = counts(sdfg)
    compute_gathered_on_the_fly(sdfg)
    sdfg.validate()
    assert edge_level_transients(sdfg) == [] and counts(sdfg) == (maps - 1, transients - 1)
    (r,) = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, NeighborReduce)]
    assert "auto _fly__t = [&](long long _i_Edge, long long _i_K)" in r.code
    assert re.search(r"_fly__t\(\(_n\d+ - 0\), \(_i_K\)\)", r.code)
    assert "_fly_p_w" in r.in_connectors
    fn = CompiledProgram.from_sdfg(div, sdfg)
    matches_interpreter(div, fn, seeds=(0, 1), sizes=K_SIZES)
    matches_interpreter(div, fn, seeds=(2,), absent=0.0, sizes=K_SIZES)


def test_default_pipeline_keeps_no_edge_by_level_temporary(div):
    fn = tir.compile(div)
    assert edge_level_transients(fn.sdfg) == [] and counts(fn.sdfg)[0] == 1
    matches_interpreter(div, fn, seeds=(3, 4), sizes=K_SIZES)


@pytest.mark.parametrize("name", sorted(K_PROGRAMS))
def test_level_orders_and_level_shifts_match_the_interpreter(name):
    prog = tir.parse(K_PROGRAMS[name])
    sdfg = lowered(prog)
    assert edge_level_transients(sdfg)
    compute_gathered_on_the_fly(sdfg)
    sdfg.validate()
    assert edge_level_transients(sdfg) == [] and counts(sdfg)[0] == 1
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), sizes=K_SIZES)


def test_a_temporary_written_at_some_levels_only_stays_in_memory(div):
    sdfg = lowered(div)
    (producer,) = [n for n, _ in sdfg.all_nodes_recursive()
                   if isinstance(n, dace.nodes.MapEntry) and "_i_Edge" in n.map.params]
    producer.map.range = dace.subsets.Range([(0, dace.symbol("E") - 1, 1),
                                             (1, dace.symbol("L") - 1, 1)])
    compute_gathered_on_the_fly(sdfg)
    assert len(edge_level_transients(sdfg)) == 1


def k_mesh_program(seed: int) -> str:
    """A random mesh program of :func:`mesh_program` with a level dimension K
    on every field."""
    return (mesh_program(seed).replace(VT, "tensor<float, Vertex[0:V], K[0:L]>")
            .replace(ET, "tensor<float, Edge[0:E], K[0:L]>")
            .replace("_NB_0[0:3]", "K[0:L], _NB_0[0:3]"))


@pytest.mark.parametrize("seed", [2, 6])
def test_random_mesh_programs_with_levels_match_the_interpreter(seed):
    prog = tir.parse(k_mesh_program(seed))
    sdfg = lowered(prog)
    arrays = len(sdfg.arrays)
    compute_gathered_on_the_fly(sdfg)
    fuse_neighbor_reductions(sdfg)
    sdfg.validate()
    assert len(sdfg.arrays) < arrays
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), seeds=(seed, seed + 1),
                        sizes=K_SIZES)
