"""The ``interchange_neighbor_loops`` pass: neighbour reductions over a mesh
with levels take the contiguous level loop inside the neighbour loop.
Structure (maps, loops, what stays outside the level loop) and results
against the interpreter, the pass run alone and in the default pipeline,
with absent neighbours, level counts beyond one tile, level ranges not
starting at zero, tuple accumulators, merged reductions and level-dependent
presence."""

from __future__ import annotations

import dace
import pytest

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace.library import NeighborReduce
from tensorir_dace.lowering import lower
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms.interchange_neighbor_loops import (
    TILE,
    _row_code,
    interchange_neighbor_loops,
)
from tensorir_dace.transforms.sdfg_passes import fuse_maps_vertically, simplify

VK = "tensor<float, Vertex[0:V], K[0:L]>"
EK = "tensor<float, Edge[0:E], K[0:L]>"
TABLES = ("E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, "
          "V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>")

DIVERGENCE = f"""
div(out: {VK}, pp: {VK}, S: tensor<float, Edge[0:E]>,
    sign: tensor<float, Vertex[0:V], _NB_0[0:3]>, {TABLES}) {{
  out ← reduce(λ(acc: {VK}, a: {VK}, s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
    ⟪V2E⟫(S × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign)
}}
"""

SIZES = {"V": 9, "E": 14, "L": 5}


def lowered(prog) -> dace.SDFG:
    sdfg = lower(tir.check(prog), fused=True).sdfg
    simplify(sdfg)
    fuse_maps_vertically(sdfg)
    return sdfg


def loop_nodes(sdfg: dace.SDFG) -> list:
    return [(n, s) for n, s in sdfg.all_nodes_recursive()
            if isinstance(n, (NeighborReduce, dace.nodes.Tasklet)) and "_nb" in _code(n)]


def _code(node) -> str:
    return node.code if isinstance(node, NeighborReduce) else node.code.as_string


def matches_interpreter(prog, fn, sizes=SIZES, seeds=(0, 1), absent=0.25):
    for seed in seeds:
        args = random_arguments(prog, sizes=sizes, seed=seed, absent_fraction=absent)
        ref, out = clone(args), clone(args)
        tir.interpret(prog, **ref)
        fn(**out)
        assert_same_results(out, ref, 1e-10)


def interchanged(prog) -> tuple[dace.SDFG, list[str]]:
    """The lowered program after the pass alone, and the codes of its neighbour loops."""
    sdfg = lowered(prog)
    interchange_neighbor_loops(sdfg)
    sdfg.validate()
    return sdfg, [_code(n) for n, _ in loop_nodes(sdfg)]


def test_the_level_loop_runs_inside_the_neighbour_loop():
    prog = tir.parse(DIVERGENCE)
    sdfg, (code,) = interchanged(prog)
    (node, state), = loop_nodes(sdfg)
    entry = state.entry_node(node)
    assert entry.map.params == ["_i_Vertex"]         # the level left the map
    assert "_row0" in code and f"_acc1[{TILE}]" in code
    # Per neighbour: the table entry is loaded and presence tested once, outside
    # the level loop; the update runs per level, reading the accumulator row.
    neighbours = code[code.index("for (long long _nb"):]
    outside = neighbours.split("for (long long _rowk")[0]
    assert "_p_V2E[" in outside and "_i_K" not in outside
    assert "_acc1[_rowk] + " in neighbours
    (out_edge,) = state.out_edges(node)
    assert str(out_edge.data.subset).endswith("0:L")   # one row per vertex
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg))


@pytest.fixture(scope="module")
def divergence():
    return tir.parse(DIVERGENCE)


@pytest.fixture(scope="module")
def divergence_compiled(divergence):
    return tir.compile(divergence)


def test_default_pipeline_interchanges_and_matches_the_interpreter(divergence,
                                                                   divergence_compiled):
    (code,) = [_code(n) for n, _ in loop_nodes(divergence_compiled.sdfg)]
    assert "_row0" in code and "auto _fly__t" in code
    matches_interpreter(divergence, divergence_compiled, seeds=(0, 1, 2))
    matches_interpreter(divergence, divergence_compiled, seeds=(3,), absent=0.0)


@pytest.mark.parametrize("levels", [1, TILE - 1, TILE, TILE + 3, 2 * TILE + 1])
def test_level_counts_around_the_tile_size(divergence, divergence_compiled, levels):
    matches_interpreter(divergence, divergence_compiled, sizes={**SIZES, "L": levels},
                        seeds=(levels,))


def test_levels_not_starting_at_zero_and_a_level_shift():
    prog = tir.parse(f"""
shifted(out: tensor<float, Vertex[0:V], K[2:L]>, e: tensor<float, Edge[0:E], K[0:L]>,
        {TABLES}) {{
  out ← reduce(λ(acc: tensor<float, Vertex[0:V], K[2:L]>,
                 a: tensor<float, Vertex[0:V], K[2:L]>) → acc + a, 0.0)(
    ⟪V2E⟫(⟪K, -1⟫(e) × ⟪K, -2⟫(e)))
}}
""")
    sdfg, (code,) = interchanged(prog)
    assert "_row0 = 2" in code
    fn = CompiledProgram.from_sdfg(prog, sdfg)
    for levels in (3, 7, TILE + 5):
        matches_interpreter(prog, fn, sizes={**SIZES, "L": levels}, seeds=(levels,))


def test_tuple_accumulators_become_one_row_each():
    prog = tir.parse(f"""
minmax(out: tensor<(float, float), Vertex[0:V], K[0:L]>, e: {EK}, {TABLES}) {{
  out ← reduce(λ(acc: tensor<(float, float), Vertex[0:V], K[0:L]>, a: {VK}) →
                 make_tuple(minimum(acc[0], a), maximum(acc[1], a)),
               make_tuple(1.0e300, -1.0e300))(⟪V2E⟫(e))
}}
""")
    sdfg, (code,) = interchanged(prog)
    assert code.count(f"[{TILE}];") == 2
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg))


def test_merged_reductions_are_interchanged_together():
    prog = tir.parse(f"""
grad(out: tensor<(float, float), Vertex[0:V], K[0:L]>, e: {EK}, f: {EK},
     sign: tensor<float, Vertex[0:V], _NB_0[0:3]>, {TABLES}) {{
  out ← make_tuple(
    reduce(λ(acc: {VK}, a: {VK}, s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(e), sign),
    reduce(λ(acc: {VK}, a: {VK}, s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(f), sign))
}}
""")
    fn = tir.compile(prog)
    codes = [_code(n) for n, _ in loop_nodes(fn.sdfg)]
    assert len(codes) == 1 and codes[0].count("for (long long _nb") == 1
    assert "_row0" in codes[0] and "_acc1_r1[_rowk]" in codes[0]
    matches_interpreter(prog, fn)


def test_level_dependent_presence_stays_inside_the_level_loop():
    # Which neighbours are present depends on the level: the offset field ko
    # moves some reads beyond the edges' levels.
    prog = tir.parse(f"""
offsets(out: {VK}, e: {EK}, ko: tensor<int, Edge[0:E], K[0:L]>, {TABLES}) {{
  out ← reduce(λ(acc: {VK}, a: {VK}) → acc + a, 0.0)(⟪V2E⟫(⟪K, ko⟫(e)))
}}
""")
    sdfg = lowered(prog)
    interchange_neighbor_loops(sdfg)
    sdfg.validate()
    fn = CompiledProgram.from_sdfg(prog, sdfg)
    for seed in (0, 1, 2):
        args = random_arguments(prog, sizes=SIZES, seed=seed, absent_fraction=0.25)
        args["ko"][...] = args["ko"] % 5 - 2        # in and out of the level range
        ref, out = clone(args), clone(args)
        tir.interpret(prog, **ref)
        fn(**out)
        assert_same_results(out, ref, 1e-10)


def test_a_level_dependent_local_needed_beyond_its_level_loop_leaves_the_code_alone():
    # _n4 is assigned after _v3 read it: the assignment cannot move before
    # the level loop computing _v3, and the guard after it needs _v3.
    code = ("double _acc1 = 0.0;\n"
            "for (long long _nb2 = 0; _nb2 < 3; ++_nb2) {\n"
            "long long _n4 = 0;\n"
            "double _v3 = _p_x[_i_K] + _n4;\n"
            "_n4 = _p_T[_nb2];\n"
            "if (_n4 >= 0) {\n_acc1 = _acc1 + _v3;\n}\n"
            "}\n_out0 = _acc1;")
    assert _row_code(code, "_i_K", {"_out0"}, 0, "L") is None
    # A fresh local instead: it moves before the level loop, which holds the rest.
    ok = code.replace("_n4 = _p_T[_nb2];\n", "long long _n5 = _p_T[_nb2];\n") \
        .replace("if (_n4 >= 0)", "if (_n5 >= 0)")
    rows = _row_code(ok, "_i_K", {"_out0"}, 0, "L")
    assert rows is not None and rows.count("for (long long _rowk") == 3
    body = rows[rows.index("for (long long _nb2"):]
    assert body.index("_p_T[_nb2]") < body.index("for (long long _rowk")
    # Nothing done once per neighbour: no gain, left alone.
    alone = ("double _acc1 = 0.0;\nfor (long long _nb2 = 0; _nb2 < 3; ++_nb2) {\n"
             "double _v3 = _p_x[_i_K];\nif (_v3 >= 0) {\n_acc1 = _acc1 + _v3;\n}\n"
             "}\n_out0 = _acc1;")
    assert _row_code(alone, "_i_K", {"_out0"}, 0, "L") is None


def test_a_guard_on_the_level_stays_inside_and_other_forms_are_left_alone():
    code = ("double _acc1 = 0.0;\n"
            "for (long long _nb2 = 0; _nb2 < 3; ++_nb2) {\n"
            "long long _n3 = _p_T[_nb2];\n"
            "if (_i_K > _n3) {\n_acc1 = _acc1 + 1.0;\n}\n"
            "}\n_out0 = _acc1;")
    rows = _row_code(code, "_i_K", {"_out0"}, 0, "L")
    assert rows is not None
    body = rows[rows.index("for (long long _nb2"):]
    assert body.index("_p_T[_nb2]") < body.index("for (long long _rowk") \
        < body.index("if (_i_K > _n3)")
    # An output not assigned from an accumulator, a store in the loop, a break:
    assert _row_code(code.replace("_out0 = _acc1;", "_out0 = _acc1 + 1.0;"),
                     "_i_K", {"_out0"}, 0, "L") is None
    assert _row_code(code.replace("_acc1 = _acc1 + 1.0;", "_p_y[0] = 1.0;"),
                     "_i_K", {"_out0"}, 0, "L") is None
    assert _row_code(code.replace("_acc1 = _acc1 + 1.0;", "break;"),
                     "_i_K", {"_out0"}, 0, "L") is None


NABLA_LEVELS = f"""
nabla(out: tensor<(float, float), Vertex[0:V], K[0:L]>, pp: {VK},
      S_MXX: tensor<float, Edge[0:E]>, S_MYY: tensor<float, Edge[0:E]>,
      sign: tensor<float, Vertex[0:V], _NB_0[0:3]>, vol: {VK}, {TABLES}) {{
  out ← make_tuple(
    reduce(λ(acc: {VK}, a: {VK}, s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(S_MXX × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign) / vol,
    reduce(λ(acc: {VK}, a: {VK}, s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(S_MYY × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign) / vol)
}}
"""


def test_point_wise_tasklets_after_the_reduction_run_per_level_in_the_epilogue():
    prog = tir.parse(NABLA_LEVELS)
    fn = tir.compile(prog)
    ((node, state),) = loop_nodes(fn.sdfg)
    entry = state.entry_node(node)
    assert entry.map.params == ["_i_Vertex"]
    # The divisions by the volume and the tuple's store are in the loop node
    # now: the map holds nothing else, and no one-element scratch is left.
    assert [n for n in state.scope_children()[entry] if n is not state.exit_node(entry)] \
        == [node]
    assert not any(d.transient and d.total_size == 1 for d in fn.sdfg.arrays.values())
    code = _code(node)
    assert code.count("for (long long _nb") == 1 and "_rowi0[" in code
    matches_interpreter(prog, fn, seeds=(0, 1, 2))
    matches_interpreter(prog, fn, sizes={**SIZES, "L": TILE + 2}, seeds=(3,), absent=0.0)


def test_epilogue_tasklets_gathering_through_tables_keep_their_array_pointers():
    # After the reduction, the point-wise rest gathers ⟪V2E, 0⟫(e): a whole-array
    # input (a pointer), beside the level-moving point input w.
    prog = tir.parse(f"""
gathers(out: {VK}, e: {EK}, w: {VK}, {TABLES}) {{
  out ← reduce(λ(acc: {VK}, a: {VK}) → acc + a, 0.0)(⟪V2E⟫(e)) × w + ⟪V2E, 0⟫(e)
}}
""")
    fn = tir.compile(prog)
    ((node, state),) = loop_nodes(fn.sdfg)
    assert state.entry_node(node).map.params == ["_i_Vertex"]
    pointers = [c for c, t in node.in_connectors.items() if c.startswith("_rowi")
                and isinstance(t, dace.dtypes.pointer)]
    assert len(pointers) == 2               # e's whole array, and w's rows
    matches_interpreter(prog, fn, seeds=(0, 1, 2))


def test_a_reduction_kept_for_a_later_gather_is_stored_from_the_epilogue_too():
    # t is read point-wise by o1 (fused into the reduction's map) and gathered by
    # o2 (so it stays an array): the epilogue stores it beside o1.
    prog = tir.parse(f"""
kept(o1: {VK}, o2: {EK}, e: {EK}, w: {VK}, {TABLES}) {{
  t: {VK};
  t ← reduce(λ(acc: {VK}, a: {VK}) → acc + a, 0.0)(⟪V2E⟫(e));
  o1 ← t × w;
  o2 ← ⟪E2V, 0⟫(t) - ⟪E2V, 1⟫(t)
}}
""")
    sdfg = lowered(prog)
    interchange_neighbor_loops(sdfg)
    sdfg.validate()
    ((node, state),) = loop_nodes(sdfg)
    exit_ = state.exit_node(state.entry_node(node))
    assert state.entry_node(node).map.params == ["_i_Vertex"]
    written = {state.memlet_path(e)[-1].dst.data for e in state.out_edges(node)}
    assert len(written) == 2 and "o1" in written
    assert all(e.src is node for e in state.in_edges(exit_))
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg))
    matches_interpreter(prog, tir.compile(prog))


def test_an_independent_statement_between_dependent_ones_runs_before_their_level_loop():
    # A level-dependent gather, then a level-independent one (an edge's length),
    # then their product: the length is read once per neighbour, before the
    # level loop, which holds the rest.
    prog = tir.parse(f"""
maxgrad(out: {VK}, ddx: {EK}, length: tensor<float, Edge[0:E]>, {TABLES}) {{
  out ← reduce(λ(acc: {VK}, a: {VK}, l: tensor<float, Vertex[0:V]>) → maximum(acc, abs(a × l)),
               -1.0e300)(⟪V2E⟫(ddx), ⟪V2E⟫(length))
}}
""")
    sdfg, (code,) = interchanged(prog)
    neighbours = code[code.index("for (long long _nb"):]
    outside = neighbours.split("for (long long _rowk")[0]
    assert "_p_length[" in outside and "_p_ddx[" not in outside
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg))


def test_a_reduction_read_by_two_statements_is_copied_per_level():
    # Map fusion gives each reader of t its own one-element copy of the
    # reduction's value: the epilogue copies it per level.
    prog = tir.parse(f"""
copies(o1: {VK}, o2: {VK}, e: {EK}, a: {VK}, b: {VK}, {TABLES}) {{
  t: {VK};
  t ← reduce(λ(acc: {VK}, x: {VK}) → acc + x, 0.0)(⟪V2E⟫(e));
  o1 ← t × a;
  o2 ← t × a × b
}}
""")
    fn = tir.compile(prog)
    ((node, state),) = loop_nodes(fn.sdfg)
    entry = state.entry_node(node)
    assert entry.map.params == ["_i_Vertex"]
    assert [n for n in state.scope_children()[entry] if n is not state.exit_node(entry)] \
        == [node]
    matches_interpreter(prog, fn, seeds=(0, 1, 2))


ONE_ARRAY_TWO_CONNECTORS = """
twice(
    col: tensor<float, I[0:N], K[-1:L+1]>,
    ko: tensor<int32, I[0:N], K[0:L]>,
    zd: tensor<int32, I[0:N], _NB_0[0:3], K[0:L]>,
    I2I: tensor<int, I[0:N], _NB_I[0:3]>,
    o: tensor<float, I[0:N], K[0:L]>
) {
    o ← if(
    can_deref(offset_shift(K, cast(ko, int))(col)),
    reduce(λ(acc: tensor<float64, I[0:N], K[0:L]>, y: tensor<float64, I[0:N], K[0:L]>) → acc, -5.0)(
        reduce(
            λ(
                acc: tensor<float64, I[0:N], K[0:L], _NB_1[0:3]>,
                y: tensor<float64, I[0:N], K[0:L], _NB_1[0:3]>
            ) → acc,
            9.0,
            _NB_0
        )(shift_init(I2I)(shift_init(I2I)(offset_shift(K, shift_apply(1)(zd))(col))))
    ),
    offset_shift(K, ko + 1)(col)
) - unstructured_shift(I2I, 0)(
    maximum(
        if(
            can_deref(offset_shift(K, minimum(ko, 1))(col)),
            offset_shift(K, minimum(ko, 1))(col),
            0.5
        ),
        cartesian_shift(K, -1)(col)
    )
);
}
"""


def test_an_array_read_through_two_connectors_of_the_map_is_passed_once():
    # The epilogue reads col as a pointer twice (a data-dependent offset and a
    # value computed on the fly): one connector feeds the loop node, the
    # other input of the map is removed with its edge.
    prog = tir.parse(ONE_ARRAY_TWO_CONNECTORS)
    sdfg, codes = interchanged(prog)
    assert codes
    for node, state in sdfg.all_nodes_recursive():
        if isinstance(node, dace.nodes.MapEntry):
            outs = {c for c in node.out_connectors if c.startswith("OUT_")}
            assert all(any(True for _ in state.out_edges_by_connector(node, c))
                       for c in outs)
    matches_interpreter(prog, tir.compile(prog), sizes={"N": 5, "L": 6})
