"""Random programs compiled against the interpreter: small seeded generators for
single features (element-wise stencils in both lowering modes, meshes, runtime
bounds), and the package generator ``tensorir_dace.fuzz`` (a fixed set
of 300 programs over every construct family, and mutated texts for the parser)."""

from __future__ import annotations

import random

import pytest
from dace.sdfg import nodes

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace import fuzz
from tensorir_dace.testing import clone, random_arguments

HALO = "I[-3:N+3], J[-3:M+3]"


def expression(depth: int, r: random.Random) -> str:
    if depth == 0 or r.random() < 0.2:
        c = r.random()
        if c < 0.5:
            return r.choice(["a", "b", "c"])
        if c < 0.7:
            return r.choice(["1.5", "2.0", "0.25", "3"])
        dim, offsets = r.choice([("I", [-1, 1, 2]), ("J", [-1, 1])])
        return f"⟪{dim}, {r.choice(offsets)}⟫({r.choice(['a', 'b', 'c'])})"
    x, y, z = (expression(depth - 1, r) for _ in range(3))
    return r.choice([
        f"({x} + {y})", f"({x} - {y})", f"({x} × {y})", f"({x} / {y})",
        f"if({x} < {y}, {x}, {z})", f"minimum({x}, {y})", f"maximum({x}, {y})",
        f"sin({x})", f"sqrt(abs({x}))", f"⟪I, {r.choice([-1, 1])}⟫({x})",
        f"if({x} ≥ {y} ∨ {x} == 0.0, {y}, {x})",
        f"(λ(p: tensor<float, {HALO}>, q: tensor<float, {HALO}>) → p × 2.0 - ⟪I, 1⟫(q))(a, b)",
    ])


def int_expression(depth: int, r: random.Random, dtype: str) -> str:
    if depth == 0 or r.random() < 0.2:
        c = r.random()
        if c < 0.5:
            return r.choice(["a", "b"])
        if c < 0.7:
            return r.choice(["1", "2", "-3", "0"])
        return f"⟪I, {r.choice([-1, 1])}⟫({r.choice(['a', 'b'])})"
    x, y, z = (int_expression(depth - 1, r, dtype) for _ in range(3))
    return r.choice([
        f"({x} + {y})", f"({x} - {y})", f"({x} × {y})", f"({x} / {y})", f"({x} % {y})",
        f"minimum({x}, {y})", f"maximum({x}, {y})", f"abs({x})", f"-{x}", f"power({x}, 2)",
        f"if({x} < {y} ∧ ¬({y} == {z}), {x}, {z})", f"cast(cast({x}, float) × 0.5, {dtype})",
    ])


def random_program(seed: int, statements: int = 12, dtype: str = "float") -> str:
    r = random.Random(seed)
    outs = [f"o{k}: tensor<{dtype}, I[0:N], J[0:M]>" for k in range(statements)]
    if dtype.startswith("int"):
        body = [f"  o{k} ← {int_expression(4, r, dtype)};" for k in range(statements)]
    else:
        body = [f"  o{k} ← {expression(4, r)};" for k in range(statements)]
    src = (f"fuzz(a: tensor<float, {HALO}>, b: tensor<float, {HALO}>, "
           f"c: tensor<float, J[-3:M+3], I[-3:N+3]>, " + ", ".join(outs) + ") {\n"
           + "\n".join(body) + "\n}")
    return src.replace("tensor<float,", f"tensor<{dtype},")


def both_modes_match_interpreter(prog, args) -> None:
    ref = clone(args)
    tir.interpret(prog, **ref)
    for optimize in ("none", "default"):
        out = clone(args)
        tir.compile(prog, optimize=optimize)(**out)
        assert_same_results(out, ref, 1e-11)


@pytest.mark.parametrize("seed,dtype", [(3, "float"), (11, "float"), (27, "float"),
                                        (7, "float32"), (2, "int"), (6, "int32")])
def test_random_program_compiled_matches_interpreter(seed, dtype):
    prog = tir.parse(random_program(seed, dtype=dtype))
    args = random_arguments(prog, sizes={"N": 5, "M": 4}, seed=seed)
    both_modes_match_interpreter(prog, args)


VT = "tensor<float, Vertex[0:V]>"
ET = "tensor<float, Edge[0:E]>"


def vertex_expression(depth: int, r: random.Random) -> str:
    if depth == 0 or r.random() < 0.2:
        return r.choice(["v", "w", "(v × 1.5)"])
    e = lambda: edge_expression(depth - 1, r)      # noqa: E731
    v = lambda: vertex_expression(depth - 1, r)    # noqa: E731
    return r.choice([
        lambda: f"⟪V2E, {r.randrange(3)}⟫({e()})",
        lambda: f"reduce(λ(acc: {VT}, x: {VT}) → acc + x × 0.5, 0.0)(⟪V2E⟫({e()}))",
        lambda: f"if(can_deref(⟪V2E, {r.randrange(3)}⟫(e)), {v()}, 0.0)",
        lambda: (f"reduce(λ(acc: {VT}, x: {VT}, s: {VT}) → maximum(acc, x × s), -100.0)"
                 f"(⟪V2E⟫({e()}), sg)"),
        lambda: f"shift_apply({r.randrange(3)})(⟪V2E⟫({e()}))",
        lambda: f"({v()} {r.choice(['+', '-', '×'])} {v()})",
        lambda: (f"(λ(y: {ET}, z: {VT}) → reduce(λ(acc: {VT}, x: {VT}) → acc + x, 0.0)"
                 f"(⟪V2E⟫(y)) + z)({e()}, {v()})"),
    ])()


def edge_expression(depth: int, r: random.Random) -> str:
    if depth == 0 or r.random() < 0.2:
        return r.choice(["e", "(e + 2.0)"])
    v = lambda: vertex_expression(depth - 1, r)    # noqa: E731
    e = lambda: edge_expression(depth - 1, r)      # noqa: E731
    return r.choice([
        lambda: f"⟪E2V, {r.randrange(2)}⟫({v()})",
        lambda: f"reduce(λ(acc: {ET}, x: {ET}) → acc + x, 0.0)(⟪E2V⟫({v()}))",
        lambda: f"({e()} {r.choice(['+', '-', '×'])} {e()})",
        lambda: (f"(λ(y: {VT}, z: {ET}) → if(can_deref(z), z, ⟪E2V, {r.randrange(2)}⟫(y)))"
                 f"({v()}, {e()})"),
    ])()


def mesh_program(seed: int, statements: int = 8) -> str:
    """A random program on a mesh with tables E2V and V2E of sizes V and E."""
    r = random.Random(seed)
    outs = [f"o{k}: {VT}" for k in range(statements)]
    body = [f"  o{k} ← {vertex_expression(4, r)};" for k in range(statements)]
    return (f"mesh(v: {VT}, w: {VT}, e: {ET}, sg: tensor<float, Vertex[0:V], _NB_0[0:3]>, "
            "E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, "
            "V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>, " + ", ".join(outs) + ") {\n"
            + "\n".join(body) + "\n}")


@pytest.mark.parametrize("seed", [5])
def test_random_mesh_program_with_absent_neighbours(seed):
    prog = tir.parse(mesh_program(seed))
    args = random_arguments(prog, sizes={"V": 9, "E": 14}, seed=seed, absent_fraction=0.25)
    both_modes_match_interpreter(prog, args)


# Runtime bounds: subset targets and concat pieces whose intervals use the scalar
# int parameters h0, h1, with expressions and intervals from the package generator,
# against the same expressions computed on the whole outputs.
BOUND_VALUES = [(1, 3), (3, 1), (0, 5), (2, 2)]    # in range, inverted, whole, empty
SMALL = fuzz.SIZES[0]
ENV = {"Max": max, "Min": min} | SMALL


def runtime_bound_program(seed: int, statements: int = 8) -> tuple[str, str, list]:
    """The same random statements twice: on runtime sub-ranges of the outputs, and
    on the whole outputs (the reference for the points inside the ranges)."""
    r = random.Random(seed)
    outs = [f"o{k}: tensor<float, I[0:N], J[0:M]>" for k in range(statements)]
    head = "rt(" + ", ".join(list(fuzz.INPUTS) + outs) + ") {\n"
    exprs = [fuzz.float_expression(r, 3) for _ in range(statements)]
    ranges = [(r.choice(fuzz.I_RANGES), r.choice(fuzz.J_RANGES)) for _ in range(statements)]
    sub = [f"  subset(o{k}, I[{i0}:{i1}], J[{j0}:{j1}]) ← {x};"
           for k, (x, ((i0, i1), (j0, j1))) in enumerate(zip(exprs, ranges))]
    full = [f"  o{k} ← {x};" for k, x in enumerate(exprs)]
    return head + "\n".join(sub) + "\n}", head + "\n".join(full) + "\n}", ranges


@pytest.mark.parametrize("seed", [4])
def test_random_runtime_bounds_one_binary(seed):
    from tensorir_dace.runtime.cache import compile_count
    src, full_src, ranges = runtime_bound_program(seed)
    assert any("Max(" in i0 + i1 for (i0, i1), _ in ranges)
    prog, full = tir.parse(src), tir.parse(full_src)
    base = random_arguments(prog, sizes=SMALL, seed=seed)
    fns = [tir.compile(prog, optimize=o) for o in ("none", "default")]
    before = compile_count()
    for h0, h1 in BOUND_VALUES:
        bounds = {"h0": h0, "h1": h1}
        args = clone(base) | bounds
        ref = clone(args)
        tir.interpret(prog, **ref)
        whole = clone(args)
        tir.interpret(full, **whole)
        for k, ((i0, i1), (j0, j1)) in enumerate(ranges):
            i0, i1, j0, j1 = (eval(x, {}, ENV | bounds) for x in (i0, i1, j0, j1))
            expected = base[f"o{k}"].copy()
            if i0 < i1 and j0 < j1:
                expected[i0:i1, j0:j1] = whole[f"o{k}"][i0:i1, j0:j1]
            assert_same_results({"o": ref[f"o{k}"]}, {"o": expected}, 1e-12)
        for fn in fns:
            out = clone(args)
            fn(**out)
            assert_same_results(out, ref, 1e-11)
    assert compile_count() == before


def test_random_lazy_concat_with_runtime_boundaries():
    """Random expressions as concat pieces split at the generator's clamped runtime
    boundaries, against the same expressions computed whole (interpreter and compiled)."""
    from tensorir_dace.runtime.cache import compile_count
    r = random.Random(8)
    pairs = [(fuzz.float_expression(r, 3), fuzz.float_expression(r, 3)) for _ in range(4)]
    cuts = [fuzz.CUTS[k % len(fuzz.CUTS)] for k in range(len(pairs))]
    head = "rc(" + ", ".join(list(fuzz.INPUTS) + [
        f"o{k}: tensor<float, I[0:N], J[0:M]>" for k in range(8)]) + ") {\n"
    split = [f"  o{k} ← concat(I, subset({x} + a, I[0:{cut}]), subset({y} + a, I[{cut}:N]));"
             for k, ((x, y), cut) in enumerate(zip(pairs, cuts))]
    whole = [f"  o{2 * k} ← {x} + a;\n  o{2 * k + 1} ← {y} + a;" for k, (x, y) in enumerate(pairs)]
    prog = tir.parse(head + "\n".join(split) + "\n}")
    full = tir.parse(head + "\n".join(whole) + "\n}")
    base = random_arguments(prog, sizes=SMALL, seed=8)
    fn = tir.compile(prog, optimize="none")
    before = compile_count()
    for h0, h1 in [(-2, 0), (0, 3), (3, 1), (5, 0), (9, 2)]:
        bounds = {"h0": h0, "h1": h1}
        args = clone(base) | bounds
        ref, parts, out = clone(args), clone(args), clone(args)
        tir.interpret(prog, **ref)
        tir.interpret(full, **parts)
        fn(**out)
        for k, cut in enumerate(cuts):
            c = eval(cut, {}, ENV | bounds)
            expected = parts[f"o{2 * k + 1}"].copy()
            expected[:c] = parts[f"o{2 * k}"][:c]
            assert_same_results({"o": ref[f"o{k}"]}, {"o": expected}, 1e-12)
        assert_same_results(out, ref, 1e-11)
    assert compile_count() == before


@pytest.mark.parametrize("seed", [13, 21])
def test_random_program_streamed_rows_match_interpreter(seed, monkeypatch):
    """The streaming-store pass with its size threshold at zero, so that the
    streamed blocks, not only the peeled ends, run on these small sizes."""
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    prog = tir.parse(random_program(seed))
    fn = tir.compile(prog)
    assert any("_tir_sfence" in n.code.as_string for n, _ in fn.sdfg.all_nodes_recursive()
               if hasattr(n, "code") and hasattr(n.code, "as_string"))
    args = random_arguments(prog, sizes={"N": 5, "M": 29}, seed=seed)
    ref, out = clone(args), clone(args)
    tir.interpret(prog, **ref)
    fn(**out)
    assert_same_results(out, ref, 1e-11)


def random_program_with_levels(seed: int) -> str:
    """``random_program`` with a level dimension ``K`` innermost in every
    array: ``a`` and the outputs over ``K[0:L]`` (rows of levels end to end),
    ``b`` with a level of halo on each side (rows not end to end), ``c`` with
    ``J`` before ``I``."""
    src = random_program(seed)
    src = src.replace(f"tensor<float, {HALO}>", f"tensor<float, {HALO}, K[0:L]>", 1)
    src = src.replace(f"b: tensor<float, {HALO}>", f"b: tensor<float, {HALO}, K[-1:L+1]>")
    src = src.replace("J[-3:M+3], I[-3:N+3]>", "J[-3:M+3], I[-3:N+3], K[0:L]>")
    src = src.replace("I[0:N], J[0:M]>", "I[0:N], J[0:M], K[0:L]>")
    return src.replace(f"q: tensor<float, {HALO}>", f"q: tensor<float, {HALO}, K[0:L]>") \
        .replace(f"p: tensor<float, {HALO}>", f"p: tensor<float, {HALO}, K[0:L]>")


@pytest.mark.parametrize("seed", [5, 17])
def test_random_program_flattened_streamed_runs_match_interpreter(seed, monkeypatch):
    """Three-dimensional random programs, streamed with the size threshold at
    zero: maps reading only ``a`` stream one run over J and K (flattened),
    maps reading ``b`` or ``c`` stream per row; on sizes whose rows are not
    whole cache lines, so runs cross rows mid-line."""
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "0")
    prog = tir.parse(random_program_with_levels(seed))
    fn = tir.compile(prog)
    params = [len(n.map.params) for n, _ in fn.sdfg.all_nodes_recursive()
              if isinstance(n, nodes.MapEntry)]
    assert 1 in params                              # some map flattened to I alone
    for sizes in ({"N": 4, "M": 7, "L": 13}, {"N": 3, "M": 5, "L": 1}):
        args = random_arguments(prog, sizes=sizes, seed=seed)
        ref, out = clone(args), clone(args)
        tir.interpret(prog, **ref)
        fn(**out)
        assert_same_results(out, ref, 1e-11)


# --------------------------------------------------------------------------- tensorir_dace.fuzz
# A fixed set of generated programs (every construct family, runtime bounds run
# with several values through each binary), 20 to a compile;
# the on-demand command python -m tensorir_dace.fuzz runs any number.

PROGRAMS, PER_COMPILE = 300, 20


def test_the_generator_covers_every_kind_of_program():
    kinds = {fuzz.generate_case(s).kind for s in range(PROGRAMS)}
    assert kinds == set(fuzz.KINDS)
    text = fuzz.program_text(fuzz.batch(0, PROGRAMS))
    for construct in ("scan(", "reduce(", "shift_apply(", "can_deref(", "concat(",
                      "subset(", "make_tuple(", "cast(", "if (", "for (", " % ", "float32",
                      "int32", "bool", "⟪I, -2⟫", ", False, ", "cbrt(", "gamma(", "fmod(",
                      # runtime domains
                      "subset(o_", "I[h0", "Max(0, h0", "Min(N, Max(0, h0))", "concat(I, ",
                      # data-dependent offsets, int32 and int64, guarded and not
                      "⟪K, ko⟫(", "⟪K, kl⟫(", "can_deref(⟪K, ", "⟪K, shift_apply(",
                      "⟪K, ⟪I2I, ",
                      # nested partial shifts, reduced over either axis
                      "⟪V2E⟫(⟪E2V⟫(", "⟪I2I⟫(⟪I2I⟫(", ", _NB_0)(", "_NB_0[0:2]>) →",
                      # applied lambdas carrying their arguments' presence
                      "⟪V2E⟫((λ(y0: ", "can_deref((λ(y0: ", "if(can_deref(y",
                      # two tables masking one neighbour dimension, stored and reduced
                      "⟪V2F⟫(", "_NB_0[0:3]>;",
                      # levels innermost (streamed, fused in rows, flat rows)
                      "tensor<float, I[0:N], J[0:M], K[0:LK]>",
                      "tensor<float32, I[0:N], J[0:M], K[0:LK]>",
                      "tensor<float, I[-1:N+1], J[-1:M+1], K[0:LK]>;", "⟪K, 1⟫(y3)",
                      "⟪K, -1⟫(y3)", " × y3;"):
        assert construct in text, construct
    assert any(len(b) >= 2 for b in fuzz.BOUNDS)
    assert any(h["h0"] > h["h1"] for b in fuzz.BOUNDS for h in b)     # inverted
    assert any(h["h0"] == h["h1"] for b in fuzz.BOUNDS for h in b)    # empty


@pytest.mark.parametrize("first", range(0, PROGRAMS, PER_COMPILE))
def test_generated_programs_compile_and_match_the_interpreter(first):
    """Every third compile without optimisation (the lowering the passes start
    from), and every other optimised one with the streaming threshold at 0, as
    the command compiles them."""
    from tensorir_dace.fuzz import runner
    outcome = fuzz.run_text(fuzz.program_text(fuzz.batch(first, PER_COMPILE)), seed=first,
                            compile_kw=runner.batch_options(first, PER_COMPILE),
                            stream=runner.stream_threshold(first, PER_COMPILE))
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed


def test_every_other_optimised_batch_streams_from_zero_bytes():
    from tensorir_dace.fuzz import runner
    streamed = [f for f in range(0, 1200, PER_COMPILE)
                if runner.stream_threshold(f, PER_COMPILE) == 0]
    optimised = [f for f in range(0, 1200, PER_COMPILE)
                 if runner.batch_options(f, PER_COMPILE) == {}]
    assert set(streamed) <= set(optimised) and len(streamed) * 2 == len(optimised)
    assert runner.stream_threshold(0, PER_COMPILE, "default") is None
    assert runner.stream_threshold(0, PER_COMPILE, "4096") == 4096


def test_generated_streamed_programs_run_the_branches_for_large_outputs():
    """The generated programs with levels innermost, compiled with the
    streaming threshold at 0: streamed maps (one run over J and K where the
    rows lie end to end), statements fused in rows with a streamed output,
    and flat rows run on the small arrays, at 16 levels (whole cache lines of
    float64 and float32: flat rows) and 12 (neither: rows through the
    staging buffer), and at 48 levels and 70 rows of I (three chunks of rows,
    split into runs over the threads)."""
    from tensorir_dace.fuzz.compare import same_values
    from tensorir_dace.testing import streaming_threshold
    cases = [c for c in fuzz.batch(0, 120) if c.kind == "stream"][:10]
    assert {"float", "float32"} <= {"float32" if "float32" in c.outputs[0] else "float"
                                    for c in cases}
    text = fuzz.program_text(cases)
    outcome = fuzz.run_text(text, seed=1, stream=0)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    maps, rows, flat = outcome.streamed
    assert maps >= 2 and rows >= 3 and 1 <= flat < rows, outcome.streamed
    assert {s["LK"] for s in fuzz.SIZES} == {16, 12}
    prog = tir.parse(text)
    with streaming_threshold(0):
        fn = tir.compile(prog)                  # compiled above: found by its source
    args = random_arguments(prog, sizes=fuzz.SIZES[0] | {"N": 70, "M": 9, "LK": 48}, seed=3)
    ref, out = clone(args), clone(args)
    tir.interpret(prog, **ref)
    fn(**out)
    for name in (n for n in ref if n.startswith("o_")):
        assert same_values(out[name], ref[name]), name


@pytest.mark.parametrize("first", [0, 100, 200])
def test_mutated_calls_raise_tensorir_errors_or_agree(first):
    """Wrong dtypes, extents, ranks, layouts, scalars, tables and aliases: the
    compiled program and the interpreter both refuse a call with a
    TensorIRError, or both run it to the same result."""
    from tensorir_dace.fuzz import runner
    from tensorir_dace.fuzz.calls import call_contract
    prog = tir.parse(fuzz.program_text(fuzz.batch(first, PER_COMPILE)))
    binary = tir.compile(prog, **runner.batch_options(first, PER_COMPILE))
    args = random_arguments(prog, sizes=fuzz.SIZES[0], seed=first, absent_fraction=0.25)
    assert call_contract(prog, binary, args, random.Random(first), 15) == []


def test_the_call_contract_catches_crashes_refusals_and_wrong_results():
    import numpy as np

    from tensorir_dace.fuzz.calls import MUTATIONS, call_contract, mutate_call
    prog = tir.parse("""
    scale(out: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>, w: tensor<float>) {
      out ← a × w
    }""")
    args = {"out": np.zeros(5), "a": np.arange(5.0), "w": 2.0}
    r = random.Random(0)
    seen = set()
    for _ in range(200):
        _, what = mutate_call(prog, args, r)
        seen.update(w.split(" ")[-1] if "=" not in w else "=" for w in what)
    assert {"read-only", "fortran", "reversed", "strided", "missing", "keyword", "="} <= seen
    assert set(MUTATIONS) >= {"dtype", "extent", "rank", "layout", "alias", "table_entry"}

    compiled = tir.compile(prog)

    def crashing(**kw):
        raise ValueError("boom")

    def lenient(**kw):          # runs whatever it gets
        kw["out"][...] = 0.0 if isinstance(kw.get("out"), np.ndarray) else None

    def off_by_one(**kw):
        compiled(**kw)
        kw["out"][...] += 1.0
    assert call_contract(prog, compiled, args, random.Random(1), 30) == []
    assert any("ValueError: boom" in m for m in call_contract(prog, crashing, args,
                                                             random.Random(1), 5))
    assert any("the compiled program ran" in m for m in call_contract(
        prog, lenient, args, random.Random(1), 30))
    assert any("'out' differs" in m for m in call_contract(
        prog, lambda **kw: off_by_one(**kw) if kw.keys() == args.keys() else compiled(**kw),
        args, random.Random(1), 60))


def test_mutated_texts_only_raise_tensorir_errors():
    assert fuzz.fuzz_parser(600, seed=3) == []


def test_a_failing_case_shrinks_to_a_smaller_failing_case(monkeypatch):
    """Delta debugging keeps what the failure needs: here, a division."""
    from tensorir_dace.fuzz import runner

    def fails(case, seed=0, stream=None):
        return "has a division" if any("/" in s for s in case.statements) else None
    monkeypatch.setattr(runner, "case_fails", fails)
    case = next(c for c in (fuzz.generate_case(s) for s in range(1000))
                if c.kind == "temporary" and "/" in c.statements[1]
                and "/" not in c.statements[0] + c.statements[2])
    small, reason = runner.shrink(case)
    assert reason == "has a division"
    assert len(small.statements) == 1 and "/" in small.statements[0]


@pytest.mark.slow
def test_generated_programs_generate_and_compile_cuda():
    """CUDA code is generated and built by nvcc for a sample of generated programs;
    where a GPU exists it also runs and matches the interpreter."""
    import shutil

    import dace

    from tensorir_dace.runtime import gpu_available
    from tensorir_dace.testing import random_arguments
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    cases = [c for c in fuzz.batch(0, 80) if c.kind in ("float", "mesh", "scan", "int32")]
    prog = tir.parse(fuzz.program_text(cases[:8]))
    with dace.config.set_temporary("compiler", "cuda", "cuda_arch", value="80"):
        compiled = tir.compile(prog, device="gpu")
    assert any(n.map.schedule == dace.ScheduleType.GPU_Device
               for n, _ in compiled.sdfg.all_nodes_recursive()
               if isinstance(n, dace.nodes.MapEntry))
    if gpu_available():
        args = random_arguments(prog, sizes=fuzz.SIZES[0], absent_fraction=0.25)
        out, ref = clone(args), clone(args)
        compiled(**out)
        tir.interpret(prog, **ref)
        assert_same_results(out, ref, 1e-9)
