"""The fusion passes of the default pipeline: structure (maps, transients) and
results against the interpreter, each pass also run alone."""

from __future__ import annotations

import random

import dace
import pytest

import tensorir_dace as tir
from conftest import assert_address, assert_same_results
from tensorir_dace.lowering import lower
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms.fuse_horizontal import fuse_maps_horizontally
from tensorir_dace.transforms.fuse_scans import fuse_column_scans
from tensorir_dace.transforms.interleave_columns import interleave_columns
from tensorir_dace.transforms.streaming_stores import streaming_stores

COL = "tensor<float, I[0:N], J[0:M]>"
F3 = "tensor<float, I[0:N], J[0:M], K[0:L]>"

TRIDIAGONAL = f"""
solve(a: {F3}, b: {F3}, c: {F3}, d: {F3}, x: {F3}) {{
  x ← scan(λ(x_kp1: {COL}, cpdp: tensor<(float, float), I[0:N], J[0:M]>)
             → cpdp[1] - cpdp[0] × x_kp1, False, 0.0)(
        scan(λ(state: tensor<(float, float), I[0:N], J[0:M]>, a: {COL}, b: {COL}, c: {COL},
               d: {COL})
             → make_tuple(c / (b - a × state[0]), (d - a × state[1]) / (b - a × state[0])),
             True, make_tuple(0.0, 0.0))(a, b, c, d))
}}
"""


def counts(sdfg: dace.SDFG) -> tuple[int, int]:
    """(maps, transient arrays) over the whole SDFG."""
    maps = sum(isinstance(n, dace.nodes.MapEntry) for n, _ in sdfg.all_nodes_recursive())
    transients = sum(d.transient for sd in sdfg.all_sdfgs_recursive()
                     for d in sd.arrays.values())
    return maps, transients


def matches_interpreter(prog, fn, sizes, seed=0):
    args = random_arguments(prog, sizes=sizes, seed=seed)
    for k in ("b",):
        if k in args and getattr(args[k], "ndim", 0) == 3:
            args[k] += 4.0
    ref, out = clone(args), clone(args)
    tir.interpret(prog, **ref)
    fn(**out)
    assert_same_results(out, ref, 1e-10)


def test_tridiagonal_scans_run_in_one_column_map_without_scratch():
    prog = tir.parse(TRIDIAGONAL)
    assert counts(tir.to_sdfg(prog, optimize="none")) == (2, 2)
    sdfg = tir.to_sdfg(prog, optimize="default")
    assert counts(sdfg) == (1, 0)
    (entry,) = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
    assert entry.map.range.ranges[-1][2] == 4          # four columns per iteration
    fn = tir.compile(prog)
    matches_interpreter(prog, fn, {"N": 5, "M": 3, "L": 7})
    matches_interpreter(prog, fn, {"N": 2, "M": 9, "L": 4})
    matches_interpreter(prog, fn, {"N": 2, "M": 2, "L": 2100})   # a column on the heap


def test_tridiagonal_lanes_are_vectorised_in_lane_major_buffers():
    """The four columns of a map iteration run as one vector: their inputs,
    column buffers and output are lane-major, the lane loop has a constant
    trip count, and no per-lane pointer is left."""
    sdfg = tir.to_sdfg(tir.parse(TRIDIAGONAL), optimize="default")
    (scan,) = [n for n, _ in sdfg.all_nodes_recursive() if hasattr(n, "forward")]
    code = scan.code
    assert code.count("#pragma omp simd\nfor (int _c = 0; _c < 4; ++_c) {") == 2
    assert code.count("_tin") and "_tout__out0" in code and "_lane_" not in code
    assert "_colbuf0_stack[(1024) * 4]" in code


def test_float32_scans_solve_eight_columns_per_vector():
    """Eight float32 lanes fill the 32 bytes four float64 lanes do; partial
    groups of lanes (M of 3, 9 and 13) and one column still agree."""
    prog = tir.parse(TRIDIAGONAL.replace("float", "float32").replace(
        "0.0", "cast(0.0, float32)"))
    fn = tir.compile(prog)
    (entry,) = [n for n, _ in fn.sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
    assert entry.map.range.ranges[-1][2] == 8
    (scan,) = [n for n, _ in fn.sdfg.all_nodes_recursive() if hasattr(n, "forward")]
    assert scan.code.count("#pragma omp simd\nfor (int _c = 0; _c < 8; ++_c) {") == 2
    for sizes in ({"N": 2, "M": 3, "L": 6}, {"N": 3, "M": 9, "L": 5}, {"N": 1, "M": 13, "L": 40},
                  {"N": 2, "M": 1, "L": 3}):
        matches_interpreter(prog, fn, sizes)
    f32 = F3.replace("float", "float32")
    mixed = tir.parse(f"""
cumulative(a: {f32}, x: {F3}) {{
  x ← scan(λ(s: {COL}, v: {COL.replace("float", "float32")}) → s + cast(v, float64), True,
           0.0)(a)
}}""")
    sdfg = tir.to_sdfg(mixed, optimize="default")
    steps = [n.map.range.ranges[-1][2] for n, _ in sdfg.all_nodes_recursive()
             if isinstance(n, dace.nodes.MapEntry)]
    assert steps == [4]                     # a float64 value in the scan: four lanes


LANE_CODE = """double _s = 0.0;
for (long long _k1 = 0; _k1 < (L); ++_k1) {
    double _v = BODY;
    _s = _v;
    _out0[(_k1 - 0)] = _s;
}"""


@pytest.mark.parametrize(("body", "rewritten"), [
    ("_p_a[(_i_J) * (L) + (_k1 - 0)] + _s", True),
    ("_p_a[(_i_J + 1) * (L) + (_k1 - 0)] + _s", True),       # the next column: staged too
    ("_p_w[(_k1 - 0)] + _s", True),                           # the same for all lanes
    ("_s > 0.0 ? _p_a[(_i_J) * (L) + (_k1 - 0)] : _s", False),   # read under a condition
    # a maximum: read in the condition, so at every level
    ("(_s != _s || _s > _p_a[(_i_J) * (L) + (_k1 - 0)]) ? _s : _p_a[(_i_J) * (L) + (_k1 - 0)]",
     True),
    # a bound's choice inside the index chooses no read
    ("_p_a[(_i_J) * (L) + (_k1 - ((0) > (n) ? (0) : (n)))] + _s", True),
])
def test_lane_major_rewrite_reads_only_what_the_level_loop_reads(body, rewritten):
    from tensorir_dace.transforms import lane_major
    code = lane_major.rewrite(LANE_CODE.replace("BODY", body), "_i_J", 4,
                              {"_p_a": "double", "_p_w": "double"},
                              {"_out0": lane_major.Output("double", "L", "L")})
    assert (code is not None) == rewritten
    if code is not None:
        # every level is written: the output's columns are not read first
        assert "_tout__out0[_e * 4 + _c] = _out0" not in code
        assert ("_tin0" in code) == ("_p_a" in body)


READ = "_p_a[(_i_J) * (L) + (_k1 - 0)]"
BRANCHES = {
    "both": f"if (_k1 < n) {{\n_v = {READ};\n}}\nelse {{\n_v = 2.0 * {READ};\n}}",
    "both, one line": f"if (_k1 < n) {{\n_v = {READ};\n}} else {{\n_v = 2.0 * {READ};\n}}",
    "one": f"if (_k1 < n) {{\n_v = {READ};\n}}\nelse {{\n_v = 2.0;\n}}",
    "no else": f"if (_k1 < n) {{\n_v = {READ};\n}}",
    "else if": f"if (_k1 < n) {{\n_v = {READ};\n}}\nelse if (_k1 < m) {{\n_v = {READ};\n}}",
}


@pytest.mark.parametrize(("shape", "rewritten"), [
    ("both", True), ("both, one line", True), ("one", False), ("no else", False),
    ("else if", False)])
def test_lane_major_reads_in_if_branches_only_where_every_branch_reads(shape, rewritten):
    """A read in each branch of an if-else chain is a read at every level: it
    is staged; one that some path skips is not (the scan keeps its columns)."""
    from tensorir_dace.transforms import lane_major
    code = ("double _s = 0.0;\nfor (long long _k1 = 0; _k1 < (L); ++_k1) {\ndouble _v = 0.0;\n"
            + BRANCHES[shape] + "\n_s = _s + _v;\n_out0[(_k1 - 0)] = _s;\n}")
    got = lane_major.rewrite(code, "_i_J", 4, {"_p_a": "double"},
                             {"_out0": lane_major.Output("double", "L", "L")})
    assert (got is not None) == rewritten


def test_lane_major_output_written_on_part_of_its_column_is_read_first():
    from tensorir_dace.transforms import lane_major
    code = lane_major.rewrite(LANE_CODE.replace("BODY", "_s + 1.0").replace(
        "_k1 = 0;", "_k1 = 2;"), "_i_J", 4, {}, {"_out0": lane_major.Output("double", "L", "L")})
    assert "_tout__out0[_e * 4 + _c] = _out0[_c * (L) + _e];" in code


def test_fuse_column_scans_runs_alone():
    prog = tir.parse(TRIDIAGONAL)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    before = counts(sdfg)
    fuse_column_scans(sdfg)
    sdfg.validate()
    assert before == (2, 2) and counts(sdfg) == (1, 0)
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), {"N": 4, "M": 2, "L": 5})


def test_interleave_columns_runs_alone():
    prog = tir.parse(TRIDIAGONAL)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    interleave_columns(sdfg)                 # both scans, unfused
    sdfg.validate()
    steps = [n.map.range.ranges[-1][2] for n, _ in sdfg.all_nodes_recursive()
             if isinstance(n, dace.nodes.MapEntry)]
    assert steps == [4, 4] and counts(sdfg) == (2, 2)
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), {"N": 3, "M": 7, "L": 5})


# Random chains of three scans: the second reads the first's result at its own
# level, one level up or down (fusable), or in the neighbouring column (not);
# the third reads the second's at its own level.
K_HALO = "tensor<float, I[0:N], J[0:M], K[-1:L+1]>"
CHAIN_READS = {"own": ("{t}", F3), "up": ("⟪K, 1⟫({t})", K_HALO),
               "down": ("⟪K, -1⟫({t})", K_HALO),
               "column": ("⟪I, 1⟫({t})", "tensor<float, I[-1:N+1], J[0:M], K[0:L]>")}
OPS = ["st × 0.5 + x", "x - st × 0.25", "maximum(st, x) × 0.75 + w", "(x + w) / (2.0 + st × st)"]


def scan_chain(seed: int) -> tuple[str, int]:
    """A random chain and the number of column maps it needs after fusion."""
    r = random.Random(seed)
    kind = r.choice(sorted(CHAIN_READS))
    read, first = CHAIN_READS[kind]
    col0 = "tensor<float, I[-1:N+1], J[0:M]>" if kind == "column" else COL

    def scan(target, col, args, x="x"):
        params = ", ".join(f"{p}: {col}" for p in ("st", "x", "w")[:len(args) + 1])
        op = r.choice(OPS if len(args) > 1 else OPS[:2])
        return (f"  {target} ← scan(λ({params}) → {op}, {r.choice(['True', 'False'])}, "
                f"0.5)({', '.join(args)});")
    body = [scan("t0", col0, ["a"]), scan("t1", COL, [read.format(t="t0"), "b"]),
            scan("out", COL, ["t1", "b"])]
    src = (f"chain(a: {first}, b: {F3}, out: {F3}) {{\n  t0: {first};\n  t1: {F3};\n"
           + "\n".join(body) + "\n}")
    return src, 2 if kind == "column" else 1


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_random_scan_chains_match_interpreter(seed):
    src, maps = scan_chain(seed)
    prog = tir.parse(src)
    fn = tir.compile(prog)
    assert counts(fn.sdfg)[0] == maps
    matches_interpreter(prog, fn, {"N": 4, "M": 3, "L": 6}, seed)
    matches_interpreter(prog, fn, {"N": 2, "M": 6, "L": 5}, seed)


NABLA = """
nabla(out: tensor<(float, float), Vertex[0:V]>, pp: tensor<float, Vertex[0:V]>,
      S_MXX: tensor<float, Edge[0:E]>, S_MYY: tensor<float, Edge[0:E]>,
      sign: tensor<float, Vertex[0:V], _NB_0[0:6]>, vol: tensor<float, Vertex[0:V]>,
      E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:6]>) {
  out ← make_tuple(
    reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
             s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(S_MXX × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign) / vol,
    reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
             s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(S_MYY × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign) / vol)
}
"""


def edge_maps(sdfg: dace.SDFG) -> int:
    return sum(isinstance(n, dace.nodes.MapEntry) and "_i_Edge" in n.map.params
               for n, _ in sdfg.all_nodes_recursive())


def test_nabla_edge_maps_are_fused_horizontally():
    prog = tir.parse(NABLA)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    sdfg.simplify()
    assert edge_maps(sdfg) == 2
    fuse_maps_horizontally(sdfg)
    sdfg.validate()
    assert edge_maps(sdfg) == 1
    # One body: each E2V entry and pp read once for both components.
    (state,) = [s for s in sdfg.states() if any(
        isinstance(n, dace.nodes.MapEntry) and "_i_Edge" in n.map.params for n in s.nodes())]
    (body,) = [n for n in state.nodes() if isinstance(n, dace.nodes.Tasklet)
               and isinstance(state.entry_node(n), dace.nodes.MapEntry)
               and "_i_Edge" in state.entry_node(n).map.params]
    assert sorted(e.data.data for e in state.in_edges(body)) == \
        ["E2V", "E2V", "S_MXX", "S_MYY", "pp"]
    assert body.code.as_string.count("_p_pp[") == 4 and len(body.out_connectors) == 2
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), {"V": 9, "E": 14})


def test_the_fusion_passes_print_nothing(capsys, monkeypatch):
    """DaCe reports the transformations a repeated pass applied on standard
    output once the pass has run five seconds (a large program on a busy
    machine); the pipeline's passes never print into a user's output."""
    import itertools
    import types

    from dace.transformation.passes import pattern_matching
    clock = itertools.count(0.0, 10.0)           # every reading ten seconds later
    monkeypatch.setattr(pattern_matching, "time", types.SimpleNamespace(
        time=lambda: next(clock)))
    sdfg = lower(tir.check(tir.parse(NABLA)), fused=True).sdfg
    sdfg.simplify()
    with dace.config.set_temporary("progress", value=True):
        fuse_maps_horizontally(sdfg)
    assert edge_maps(sdfg) == 1
    assert "Applied" not in capsys.readouterr().out


LAPLACIAN = """
laplacian(out: tensor<float, I[0:N], J[0:M], K[0:L]>,
          inp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>) {
  out ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp)
}
"""


def tasklets(sdfg: dace.SDFG) -> list[str]:
    return [n.code.as_string for n, _ in sdfg.all_nodes_recursive()
            if isinstance(n, dace.nodes.Tasklet)]


@pytest.mark.parametrize("sizes", [{"N": 3, "M": 2, "L": 37},       # regular stores only
                                   {"N": 40, "M": 64, "L": 411}])    # 8.4 MB: streamed
def test_laplacian_rows_are_streamed(sizes, monkeypatch):
    prog = tir.parse(LAPLACIAN)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    assert counts(sdfg) == (1, 0)
    streaming_stores(sdfg)
    sdfg.validate()
    maps = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
    assert [m.map.params for m in maps] == [["_i_I"]]     # J and K rows end to end: one run
    code = "\n".join(tasklets(sdfg))
    assert code.count("__builtin_prefetch(") == 1 and "_pf_at" in code   # along the run
    assert "_tir_stream256_pd" in code and "_tir_sfence();" in code
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), sizes)
    fn = tir.compile(prog)
    assert "_tir_sfence();" in "\n".join(tasklets(fn.sdfg))
    matches_interpreter(prog, fn, sizes)
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_STORES", "0")
    off = tir.to_sdfg(prog, optimize="default")
    assert "_tir_sfence();" not in "\n".join(tasklets(off)) and counts(off) == (1, 0)


#: The Laplacian plus a read one level up: ``inp``'s rows of levels are one
#: longer than ``out``'s, so they do not lie end to end in both.
LAPLACIAN_UP = """
laplacian_up(out: tensor<float, I[0:N], J[0:M], K[0:L]>,
             inp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L+1]>) {
  out ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp) + ⟪K, 1⟫(inp)
}
"""


def test_rows_that_are_not_end_to_end_stay_rows():
    """Rows of levels are flattened with the rows of J only where they lie
    end to end in every array: with ``inp`` one level longer, the map keeps
    J and each row streams its own levels."""
    prog = tir.parse(LAPLACIAN_UP)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    streaming_stores(sdfg)
    sdfg.validate()
    maps = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
    assert [m.map.params for m in maps] == [["_i_I", "_i_J"]]
    fn = CompiledProgram.from_sdfg(prog, sdfg)
    for seed, sizes in enumerate([{"N": 3, "M": 2, "L": 37}, {"N": 40, "M": 64, "L": 411}]):
        matches_interpreter(prog, fn, sizes, seed)


def test_flattened_rows_cover_a_part_of_j_and_a_level_range():
    """A map over part of J and a range of levels that is all of every
    array's levels is flattened; results hold streamed and not."""
    src = """
part(out: tensor<float, I[0:N], J[0:M], K[0:L]>, inp: tensor<float, I[0:N], J[0:M], K[0:L]>) {
  subset(out, J[1:M - 1]) ← 2.0 × inp + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp)
}
"""
    prog = tir.parse(src)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    streaming_stores(sdfg)
    sdfg.validate()
    maps = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
    assert [m.map.params for m in maps] == [["_i_I"]]
    fn = CompiledProgram.from_sdfg(prog, sdfg)
    for seed, sizes in enumerate([{"N": 3, "M": 4, "L": 5}, {"N": 30, "M": 90, "L": 411}]):
        matches_interpreter(prog, fn, sizes, seed)


def test_laplacian_rows_prefetch_the_leading_input_row():
    """One prefetch block per row (rows not end to end), for the read furthest
    ahead in memory (I + 1), clamped to the map's last J; results hold with
    one J (the clamp at once), one level, and rows shorter than a cache line."""
    prog = tir.parse(LAPLACIAN_UP)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    streaming_stores(sdfg)
    sdfg.validate()
    (code,) = [c for c in tasklets(sdfg) if "_point" in c]
    assert code.count("__builtin_prefetch(") == 1
    assert_address(code, "_sp_inp", "(L + 1)*(M + 2)*(_i_I + 2) + (L + 1)*(_pf_row + 1) + _pf_lo")
    assert "std::min<long long>(_i_J + _pf_ahead, (M) - 1)" in code
    assert code.index("__builtin_prefetch(") < code.index("auto _point")
    fn = CompiledProgram.from_sdfg(prog, sdfg)
    for seed, sizes in enumerate([{"N": 4, "M": 1, "L": 9}, {"N": 3, "M": 7, "L": 1},
                                  {"N": 2, "M": 300, "L": 3}]):
        matches_interpreter(prog, fn, sizes, seed)


def test_streamed_inputs_are_wired_without_propagating_their_memlets(monkeypatch):
    """A streamed map reads each input through a whole-array pointer: the memlet
    outside the map is the same whole array, so wiring it propagates nothing
    (propagating took about 10 ms a path: seconds for a program of many
    outputs); only the written rows are propagated out of the map."""
    prog = tir.parse(LAPLACIAN)
    sdfg = lower(tir.check(prog), fused=True).sdfg
    calls = []
    real = dace.sdfg.propagation.propagate_memlet

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(dace.sdfg.propagation, "propagate_memlet", counted)
    streaming_stores(sdfg)
    sdfg.validate()
    assert len(calls) == 1
    (entry, state), = [(n, s) for n, s in sdfg.all_nodes_recursive()
                       if isinstance(n, dace.nodes.MapEntry)]
    (edge,) = [e for e in state.in_edges(entry) if not e.data.is_empty()]
    assert edge.data.subset == dace.subsets.Range.from_array(sdfg.arrays[edge.data.data])
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), {"N": 3, "M": 4, "L": 5})


def test_maps_gathering_through_tables_keep_regular_stores():
    """Streamed rows made ICON's edge gradient over levels twice as slow (the
    streamed lines compete with the gathers): such maps are left alone."""
    prog = tir.parse("""
grad(out: tensor<float, Edge[0:E], K[0:L]>, pp: tensor<float, Vertex[0:V], K[0:L]>,
     E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>) {
  out ← ⟪E2V, 1⟫(pp) - ⟪E2V, 0⟫(pp)
}
""")
    sdfg = lower(tir.check(prog), fused=True).sdfg
    streaming_stores(sdfg)
    assert "_tir_stream" not in "\n".join(tasklets(sdfg))
    assert [m.map.params for m, _ in sdfg.all_nodes_recursive()
            if isinstance(m, dace.nodes.MapEntry)] == [["_i_Edge", "_i_K"]]


def _typed_scans() -> str:
    def t(dtype: str) -> tuple[str, str]:
        return (f"tensor<{dtype}, I[0:N], J[0:M], K[0:L]>", f"tensor<{dtype}, I[0:N], J[0:M]>")
    (f3, fc), (s3, sc), (i3, ic), (b3, bc) = t("float"), t("float32"), t("int"), t("bool")
    tc = "tensor<(float, bool), I[0:N], J[0:M]>"
    return f"""
typed(a: {f3}, s: {s3}, n: {i3}, f: {f3}, os: {s3}, on: {i3}, ob: {b3}) {{
  os ← scan(λ(st: {sc}, x: {sc}) → st × 0.5 + x, False, 1.0)(s);
  on ← scan(λ(st: {ic}, x: {ic}) → st + x × 2, True, 0)(n);
  ob ← scan(λ(st: {bc}, x: {fc}) → st ∧ (x > 0.0), True, True)(a);
  f ← scan(λ(st: {fc}, p: {tc}) → p[0] + if(p[1], st, 0.0), False, 0.0)(
        scan(λ(st: {tc}, x: {fc}) → make_tuple(st[0] + x, x > 0.0), True,
             make_tuple(0.0, False))(a))
}}"""


def test_lane_major_scans_of_every_element_type_match_the_interpreter():
    """float32, int and bool columns, a tuple state with a bool, a backward
    scan over a forward one (its bool column buffer once failed to compile:
    std::vector<bool> has no data()); partial lane groups and one column."""
    prog = tir.parse(_typed_scans())
    fn = tir.compile(prog)
    code = "\n".join(n.code for n, _ in fn.sdfg.all_nodes_recursive() if hasattr(n, "forward"))
    assert code.count("#pragma omp simd") >= 4
    # levels on the stack; past the lane-major buffers' stack; past the column buffers'
    for sizes in ({"N": 3, "M": 6, "L": 5}, {"N": 2, "M": 1, "L": 300},
                  {"N": 1, "M": 2, "L": 1100}):
        matches_interpreter(prog, fn, sizes)
