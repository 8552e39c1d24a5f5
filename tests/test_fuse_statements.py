"""Fusion across statements: temporaries read with shifts are computed in
tiles (or on the fly) inside one map, per the cost rule; structure and
results against the interpreter, including programs the pass must leave alone."""

from __future__ import annotations

import random

import dace
import pytest

import tensorir_dace as tir
from conftest import assert_address, assert_same_results
from tensorir_dace.lowering import lower
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms import fuse_statements as fs
from tensorir_dace.transforms.fuse_statements import fuse_across_statements
from tensorir_dace.transforms.sdfg_passes import simplify

F3 = "tensor<float, I[0:N], J[0:M], K[0:L]>"
# Sizes that leave partial tiles in both tiled dimensions.
SIZES = {"N": 37, "M": 70, "L": 5}


def lap(x: str) -> str:
    return f"(-4.0 × {x} + ⟪I, -1⟫({x}) + ⟪I, 1⟫({x}) + ⟪J, -1⟫({x}) + ⟪J, 1⟫({x}))"


LAP_OF_LAP = f"""
lap_of_lap(out: {F3}, inp: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>) {{
  tmp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>;
  tmp ← {lap('inp')};
  out ← {lap('tmp')}
}}
"""

DIFFUSION = f"""
diffusion(out: {F3}, u: tensor<float, I[-3:N+3], J[-3:M+3], K[0:L]>) {{
  kh: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>;
  lap: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>;
  flux: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>;
  kh ← 0.05 + 0.1 × sqrt((⟪I, 1⟫(u) - ⟪I, -1⟫(u)) × (⟪I, 1⟫(u) - ⟪I, -1⟫(u))
                        + (⟪J, 1⟫(u) - ⟪J, -1⟫(u)) × (⟪J, 1⟫(u) - ⟪J, -1⟫(u)));
  lap ← {lap('u')};
  flux ← kh × lap;
  out ← u - 0.1 × {lap('flux')}
}}
"""

H1 = "I[-1:N+1], J[-1:M+1], K[0:L]"
COSTLY = "sin(cos(" * 10 + "a" + "))" * 10
# One program, four groups: t1 is read by two statements (not fused), t2 is
# a program argument (not fused), t3 is too costly to recompute in halos
# (not fused), t4 is cheap and read at two shifts (recomputed on the fly).
MIXED = f"""
mixed(o1: {F3}, o2: {F3}, o3: {F3}, o4: {F3}, t2: tensor<float, {H1}>,
      a: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>) {{
  t1: tensor<float, {H1}>;
  t3: tensor<float, {H1}>;
  t4: tensor<float, {H1}>;
  t1 ← {lap('a')};
  o1 ← ⟪I, 1⟫(t1) - ⟪J, -1⟫(t1);
  o2 ← ⟪I, -1⟫(t1) × 2.0;
  t2 ← {lap('a')};
  o3 ← ⟪I, 1⟫(t2) + ⟪I, -1⟫(t2);
  t3 ← {COSTLY};
  t4 ← 2.0 × a;
  o4 ← {lap('t3')} + ⟪I, 1⟫(t4) + ⟪I, -1⟫(t4)
}}
"""


def transients(sdfg: dace.SDFG) -> set[str]:
    return {k for sd in sdfg.all_sdfgs_recursive() for k, d in sd.arrays.items() if d.transient}


def tiled_code(sdfg: dace.SDFG) -> list[str]:
    return [n.code.as_string for n, _ in sdfg.all_nodes_recursive()
            if isinstance(n, dace.nodes.Tasklet) and n.label.endswith("_tiled")]


def matches_interpreter(prog, fn, sizes=SIZES, seed=0):
    args = random_arguments(prog, sizes=sizes, seed=seed)
    ref, out = clone(args), clone(args)
    tir.interpret(prog, **ref)
    fn(**out)
    assert_same_results(out, ref, 1e-10)


@pytest.mark.parametrize("src,buffers", [(LAP_OF_LAP, ["tmp"]), (DIFFUSION, ["flux"])])
def test_temporaries_are_computed_in_tiles(src, buffers):
    prog = tir.parse(src)
    assert transients(tir.to_sdfg(prog, optimize="none"))
    sdfg = tir.to_sdfg(prog, optimize="default")
    assert transients(sdfg) == set()               # no full-size temporary left
    (code,) = tiled_code(sdfg)
    assert [b for b in buffers if f"_fb_{b}[" in code] == buffers      # tile buffers
    maps = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
    assert len(maps) == 1 and maps[0].map.params == ["_tile0"]        # chunks of rows
    matches_interpreter(prog, tir.compile(prog))
    matches_interpreter(prog, tir.compile(prog), sizes={"N": 1, "M": 33, "L": 2}, seed=1)


@pytest.mark.parametrize("src", [LAP_OF_LAP, DIFFUSION])
def test_output_rows_are_streamed(src, monkeypatch):
    """With the size threshold at zero the fused map streams its output rows;
    rows of 21 float64 values start at every alignment (prologue, streamed
    lines, remainder), and 300 levels make the tile width 32 < M (partial
    tiles of rows and columns)."""
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    prog = tir.parse(src)
    fn = tir.compile(prog)
    (code,) = tiled_code(fn.sdfg)
    assert "_tir_stage_end_double(" in code and "_tir_sfence();" in code
    # the staging row starts on a page, so its stores never straddle two pages
    assert f"(reinterpret_cast<uintptr_t>(_frow_v.get()) + {fs.ROW_ALIGN - 1})" in code
    assert f"{fs.BUFFER_BYTES}LL / (3 * (long long)sizeof(double) * (L))" in code
    for seed, sizes in enumerate([{"N": 37, "M": 70, "L": 21}, {"N": 5, "M": 70, "L": 300},
                                  {"N": 33, "M": 3, "L": 1}]):
        matches_interpreter(prog, fn, sizes=sizes, seed=seed)
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_STORES", "0")
    (off,) = tiled_code(tir.to_sdfg(prog, optimize="default"))
    assert "_tir_stage_" not in off and "_tir_sfence" not in off


@pytest.mark.parametrize("ctype", ["float", "float32"])
def test_streamed_rows_share_their_partial_lines(ctype, monkeypatch):
    """Output rows start at every offset in a cache line (the output a view
    0–15 values past a line, rows of 5, 13 and 80 values): a row's first,
    partial line is streamed with the previous row's last values, and the
    values of the last row are written at the end."""
    import numpy as np

    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    prog = tir.parse(LAP_OF_LAP.replace("float", ctype))
    fn = tir.compile(prog)
    (code,) = tiled_code(fn.sdfg)
    assert "_tir_stage_begin_" in code and "_tir_flush_carry_" in code
    dtype = np.float64 if ctype == "float" else np.float32
    for seed, (sizes, shift) in enumerate([({"N": 37, "M": 70, "L": 5}, 3),
                                           ({"N": 40, "M": 9, "L": 13}, 7),
                                           ({"N": 9, "M": 20, "L": 80}, 2),
                                           ({"N": 9, "M": 20, "L": 80}, 15)]):
        args = random_arguments(prog, sizes=sizes, seed=seed)
        ref = clone(args)
        tir.interpret(prog, **ref)
        shape = args["out"].shape
        size = int(np.prod(shape))
        block = np.full(size + 64, 7.0, dtype=dtype)
        start = (-block.ctypes.data // block.itemsize) % (64 // block.itemsize) + shift
        args["out"] = block[start:start + size].reshape(shape)
        fn(**args)
        assert_same_results(args, ref, 1e-5 if ctype == "float32" else 1e-10)
        assert (block[:start] == 7.0).all() and (block[start + size:] == 7.0).all()


def test_the_tile_width_is_sized_from_the_levels():
    """Rings of 3 rows of (width + 2) × L float64 values fill BUFFER_BYTES:
    the width shrinks as L grows, down to MIN_WIDTH, and at most M."""
    def width(L, M=1000):
        column = 3 * 8 * L
        return max(fs.MIN_WIDTH, min(M, fs.BUFFER_BYTES // column // 8 * 8))
    assert width(80) == 136 and width(200) == 48 and width(10_000) == fs.MIN_WIDTH
    assert width(80, M=70) == 70
    prog = tir.parse(LAP_OF_LAP)
    (code,) = tiled_code(tir.to_sdfg(prog, optimize="default"))
    assert (f"std::max<long long>({fs.MIN_WIDTH}, std::min<long long>(M - (0), "
            f"({fs.BUFFER_BYTES}LL / (3 * (long long)sizeof(double) * (L))) / 8 * 8))") in code


LAP3 = f"""
lap3(out: {F3}, inp: tensor<float, I[-3:N+3], J[-3:M+3], K[0:L]>) {{
  t1: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>;
  t2: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>;
  t1 ← {lap('inp')};
  t2 ← {lap('t1')};
  out ← {lap('t2')}
}}
"""


@pytest.mark.parametrize("src,lags", [(DIFFUSION, [0, 1]), (LAP3, [0, 1, 2])])
def test_each_thread_rolls_its_run_of_chunks_in_one_loop_over_j(src, lags):
    """The statements of a row step share one loop over J, each a column
    behind the columns it reads further along J (its lag); each thread's
    consecutive chunks are one run, its halo rows computed once.  Results
    hold for every thread count and split of the chunks into runs (100
    rows: 4 chunks, runs of 4, 2 + 2, 2 + 1 + 1, 1 each)."""
    from tensorir_dace import openmp
    prog = tir.parse(src)
    fn = tir.compile(prog)
    (code,) = tiled_code(fn.sdfg)
    # one loop over J per row step: with flat rows (if the output streams) or not
    assert code.count("for (long long _j1 = ") == 2 and code.count("if (_fflat) {") == 1
    assert [f"const long long _i_J = _j1 - {lag};" in code for lag in lags] == [True] * len(lags)
    assert "const bool _run = _rb == _ci;" in code and "if (_run) {" in code
    threads = openmp.get_num_threads()
    try:
        for seed, n in enumerate([1, 2, 3, 5]):
            openmp.set_num_threads(n)
            matches_interpreter(prog, fn, sizes={"N": 100, "M": 37, "L": 80}, seed=seed)
    finally:
        openmp.set_num_threads(threads)


TWO_D = """
chain2(out: tensor<float, I[0:N], K[0:L]>, a: tensor<float, I[-2:N+2], K[0:L]>) {
  t: tensor<float, I[-1:N+1], K[0:L]>;
  t ← sqrt(abs(⟪I, -1⟫(a) - ⟪I, 1⟫(a))) + a;
  out ← ⟪I, -1⟫(t) + ⟪I, 1⟫(t) - 2.0 × t
}
"""

ONE_D = """
chain1(out: tensor<float, I[0:N]>, a: tensor<float, I[-2:N+2]>) {
  t: tensor<float, I[-1:N+1]>;
  t ← sqrt(abs(⟪I, -1⟫(a) - ⟪I, 1⟫(a))) + a;
  out ← ⟪I, -1⟫(t) + ⟪I, 1⟫(t) - 2.0 × t
}
"""


# A boolean temporary in the ring buffers (no std::vector<bool>).
BOOLEAN = """
chainb(out: tensor<float, I[0:N], K[0:L]>, a: tensor<float, I[-1:N+1], K[0:L]>) {
  t: tensor<bool, I[-1:N+1], K[0:L]>;
  t ← sqrt(abs(a)) > 0.5;
  out ← if(⟪I, 1⟫(t), 1.0, 0.0) + if(⟪I, -1⟫(t), 2.0, a)
}
"""


@pytest.mark.parametrize("src,rolled", [(TWO_D, True), (ONE_D, False), (BOOLEAN, True)])
def test_rows_roll_in_two_dimensions_and_tiles_in_one(src, rolled):
    prog = tir.parse(src)
    fn = tir.compile(prog)
    assert transients(fn.sdfg) == set()
    (code,) = tiled_code(fn.sdfg)
    assert ("_tir_ring(" in code) == rolled and "_fb_t[" in code
    for seed, n in enumerate([1, 31, 32, 33, 100]):
        matches_interpreter(prog, fn, sizes={"N": n, "L": 7}, seed=seed)


def test_the_cost_rule_and_the_conditions_decide():
    prog = tir.parse(MIXED)
    sdfg = tir.to_sdfg(prog, optimize="default")
    assert transients(sdfg) == {"t1", "t3"}
    (code,) = tiled_code(sdfg)                     # the t4 group, on the fly
    assert "_fx_t4(" in code and "_fb_" not in code
    matches_interpreter(prog, tir.compile(prog))


def test_the_pass_runs_alone():
    prog = tir.check(tir.parse(DIFFUSION))
    sdfg = lower(prog, fused=True).sdfg
    simplify(sdfg)
    fuse_across_statements(sdfg)
    assert transients(sdfg) == set()
    sdfg.validate()
    matches_interpreter(prog, CompiledProgram.from_sdfg(prog, sdfg), seed=2)


def random_chain(seed: int, temporaries: int = 4, levels: int = 2) -> str:
    """A chain of statements, each reading earlier temporaries and the input
    at shifts within their halos (I, J halos shrink along the chain; K halos
    of at most ``levels``)."""
    r = random.Random(seed)
    halo = {"a": (4, levels)}                       # (I/J halo, K halo)
    decls, body = [], []
    names = [f"t{k}" for k in range(temporaries)]
    for k, name in enumerate(names + ["out"]):
        h = (max(0, 3 - k) if name != "out" else 0,
             r.choice([0, min(1, levels)]) if name != "out" else 0)

        def read(k=k, h=h) -> str:
            src = r.choice(["a"] + [n for n in names[:k] if halo[n][1] >= h[1]])
            room = (halo[src][0] - h[0], halo[src][1] - h[1])
            term = src
            if room[0] > 0 and r.random() < 0.7:
                term = f"⟪{r.choice('IJ')}, {r.choice([-1, 1]) * r.randint(1, room[0])}⟫({term})"
            if room[1] > 0 and r.random() < 0.4:
                term = f"⟪K, {r.choice([-1, 1])}⟫({term})"
            return term

        terms = [read() for _ in range(r.randint(1, 4))]
        expr = terms[0]
        for t in terms[1:]:
            expr = r.choice([f"({expr} + {t})", f"({expr} × {t})", f"({expr} - 0.5 × {t})",
                             f"sqrt(abs({expr})) + {t}", f"maximum({expr}, {t})"])
        dom = f"I[-{h[0]}:N+{h[0]}], J[-{h[0]}:M+{h[0]}], K[-{h[1]}:L+{h[1]}]"
        if name != "out":
            decls.append(f"  {name}: tensor<float, {dom}>;")
            halo[name] = h
        body.append(f"  {name} ← {expr};")
    return (f"chain(out: {F3}, a: tensor<float, I[-4:N+4], J[-4:M+4], "
            f"K[-{levels}:L+{levels}]>) {{\n"
            + "\n".join(decls + body) + "\n}")


def test_random_chains_match_the_interpreter():
    fused = 0
    for seed in range(6):
        prog = tir.parse(random_chain(seed))
        sdfg = tir.to_sdfg(prog, optimize="default")
        fused += len(transients(sdfg)) < 4
        matches_interpreter(prog, tir.compile(prog), seed=seed)
    assert fused >= 3


def test_loops_over_j_prefetch_the_leading_input_row():
    """The flux row reads u through kh and lap, computed on the fly: its
    leading read is u at I + 1 (index I + 4 with u's halo of 3), prefetched in
    the loop over J, outside the vectorised loop over K.  The output's read
    of u, two rows behind, is not prefetched (the flux read that row two row
    steps earlier).  A two-dimensional chain has no loop over J and no
    prefetch."""
    prog = tir.parse(DIFFUSION)
    (code,) = tiled_code(tir.to_sdfg(prog, optimize="default"))
    assert_address(code, "_fp_u", "L*(M + 6)*(_i_I + 4) + L*(_pf_row + 3) + _pf_lo")
    # in the loop over J, and in both branches of a step with flat rows
    assert code.count("__builtin_prefetch") == 3
    assert "std::min<long long>(_i_J + _pf_ahead, (_hi1 + (1)) - 1)" in code
    for loop in code.split("#pragma omp simd")[1:]:
        assert "__builtin_prefetch" not in loop.split("}")[0]
    fn = tir.compile(prog)
    for seed, sizes in enumerate([{"N": 3, "M": 1, "L": 3}, {"N": 34, "M": 2, "L": 1}]):
        matches_interpreter(prog, fn, sizes=sizes, seed=seed)
    (flat,) = tiled_code(tir.to_sdfg(tir.parse(TWO_D), optimize="default"))
    assert "__builtin_prefetch" not in flat


def placed(args: dict, shifts: dict[str, int]) -> dict:
    """``args`` with each named array copied into a block, ``shifts[name]``
    values past a cache line, between guard values (7.0)."""
    import numpy as np
    out = dict(args)
    for name, shift in shifts.items():
        a = args[name]
        block = np.full(a.size + 128, 7.0, dtype=a.dtype)
        start = (-block.ctypes.data // a.itemsize) % (64 // a.itemsize) + shift
        view = block[start:start + a.size].reshape(a.shape)
        view[...] = a
        out[name] = view
        out[f"_block_{name}"] = (block, start, a.size)
    return out


# (sizes, shift of the input, shift of the output): levels a multiple of a line
# of float64 (8, 16, 80, 304: tiles of 32 columns) at several offsets (the
# output and input 16 bytes past a line, as NumPy places large arrays), one
# or two columns (a tile's first and last columns neighbours), several tiles;
# levels that are not (5: the other form), one level.
FLAT_SIZES = [({"N": 37, "M": 70, "L": 80}, 2, 2), ({"N": 9, "M": 20, "L": 8}, 0, 5),
              ({"N": 5, "M": 3, "L": 16}, 7, 1), ({"N": 33, "M": 1, "L": 8}, 3, 3),
              ({"N": 1, "M": 2, "L": 24}, 1, 6), ({"N": 3, "M": 150, "L": 80}, 2, 2),
              ({"N": 5, "M": 70, "L": 304}, 4, 0), ({"N": 6, "M": 40, "L": 5}, 2, 2),
              ({"N": 4, "M": 9, "L": 1}, 0, 3)]


@pytest.mark.parametrize("src,ctype", [(DIFFUSION, "float"), (LAP3, "float"),
                                       (LAP_OF_LAP, "float32")])
def test_flat_rows_stream_whole_lines(src, ctype, monkeypatch):
    """With rows of levels a multiple of a line, a step of the loop over J
    computes, per statement, the values from ``_fsh`` (the output's offset in
    a line) before its column to ``_fsh`` before the next: the vectors are
    whole lines of the output, streamed from a register, and of the rings,
    which start at the same offset in a line.  Results match the interpreter
    at every placement, in both forms (levels not a multiple of a line)."""
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    prog = tir.parse(src.replace("float", ctype))
    fn = tir.compile(prog)
    (code,) = tiled_code(fn.sdfg)
    line = "double" if ctype == "float" else "float"
    assert "if (_fflat) {" in code and f"_tir_stream_line_{line}(&_fo_out[" in code
    assert "#pragma omp simd\nfor (long long _fu = 0; " in code
    assert f"~(uintptr_t)63) + (_fsh * (long long)sizeof({line}) / " in code
    assert "_tir_stage_end_" in code                  # the other form
    sizes = FLAT_SIZES if ctype == "float" else \
        [({"N": 9, "M": 20, "L": 16}, 3, 9), ({"N": 4, "M": 3, "L": 80}, 15, 2),
         ({"N": 5, "M": 7, "L": 8}, 1, 1)]
    for seed, (size, ushift, oshift) in enumerate(sizes):
        args = random_arguments(prog, sizes=size, seed=seed)
        ref = clone(args)
        tir.interpret(prog, **ref)
        names = [n for n in args if n != "out" and hasattr(args[n], "shape")]
        run = placed(args, {"out": oshift, **{n: ushift for n in names}})
        blocks = {k: run.pop(k) for k in list(run) if k.startswith("_block_")}
        fn(**run)
        assert_same_results({"out": run["out"]}, {"out": ref["out"]},
                            1e-5 if ctype == "float32" else 1e-10)
        block, start, n = blocks["_block_out"]
        assert (block[:start] == 7.0).all() and (block[start + n:] == 7.0).all()


def test_random_flat_chains_match_the_interpreter(monkeypatch):
    """Chains without shifts along K, their output streamed: flat rows."""
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    flat = 0
    for seed in range(6):
        prog = tir.parse(random_chain(seed, levels=0))
        fn = tir.compile(prog)
        flat += any("if (_fflat) {" in c for c in tiled_code(fn.sdfg))
        for k, (size, ushift, oshift) in enumerate(FLAT_SIZES[:3]):
            args = random_arguments(prog, sizes=size, seed=seed + k)
            ref = clone(args)
            tir.interpret(prog, **ref)
            run = placed(args, {"out": oshift, "a": ushift})
            for key in [k for k in run if k.startswith("_block_")]:
                del run[key]
            fn(**run)
            assert_same_results({"out": run["out"]}, {"out": ref["out"]}, 1e-10)
    assert flat >= 3


def test_flat_rows_for_every_split_into_runs(monkeypatch):
    """Flat rows give the interpreter's results for every thread count (100
    rows: 4 chunks, runs of 4, 2 + 2, 2 + 1 + 1, 1 each), the arrays 16 bytes
    past a line as NumPy places large ones."""
    from tensorir_dace import openmp
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    prog = tir.parse(DIFFUSION)
    fn = tir.compile(prog)
    threads = openmp.get_num_threads()
    try:
        for seed, n in enumerate([1, 2, 3, 5]):
            openmp.set_num_threads(n)
            args = random_arguments(prog, sizes={"N": 100, "M": 37, "L": 16}, seed=seed)
            ref = clone(args)
            tir.interpret(prog, **ref)
            run = placed(args, {"out": 2, "u": 2})
            for key in [k for k in run if k.startswith("_block_")]:
                del run[key]
            fn(**run)
            assert_same_results({"out": run["out"]}, {"out": ref["out"]}, 1e-10)
    finally:
        openmp.set_num_threads(threads)
