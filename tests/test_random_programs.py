"""Random well-typed programs (``tensorir_dace.fuzz``): compiled against the
interpreter, at two sizes through one binary; mutated texts through the parser.

A fixed set of 300 generated programs runs here, 20 to a compiled program; the
on-demand command (``python -m tensorir_dace.fuzz``) runs any number."""

from __future__ import annotations

import pytest

import tensorir_dace as tir
from tensorir_dace import fuzz
from tensorir_dace.testing import clone

from conftest import assert_same_results

PROGRAMS, PER_COMPILE = 300, 20


def both_modes_match_interpreter(prog, args) -> None:
    """Compiled as lowered and optimised, both equal to the interpreter."""
    ref = clone(args)
    tir.interpret(prog, **ref)
    for optimize in ("none", "default"):
        out = clone(args)
        tir.compile(prog, optimize=optimize)(**out)
        assert_same_results(out, ref, 1e-11)


# --------------------------------------------------------------------------- generated


def test_the_generator_covers_every_kind_of_program():
    kinds = {fuzz.generate_case(s).kind for s in range(PROGRAMS)}
    assert kinds == set(fuzz.KINDS)
    text = fuzz.program_text(fuzz.batch(0, PROGRAMS))
    for construct in ("scan(", "reduce(", "shift_apply(", "can_deref(", "concat(",
                      "subset(", "make_tuple(", "cast(", "if (", "for (", " % ", "float32",
                      "int32", "bool", "⟪I, -2⟫", "False)"):
        assert construct in text, construct


@pytest.mark.parametrize("first", range(0, PROGRAMS, PER_COMPILE))
def test_generated_programs_compile_and_match_the_interpreter(first):
    outcome = fuzz.run_text(fuzz.program_text(fuzz.batch(first, PER_COMPILE)), seed=first)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed


def test_mutated_texts_only_raise_tensorir_errors():
    assert fuzz.fuzz_parser(600, seed=3) == []


def test_a_failing_case_shrinks_to_a_smaller_failing_case(monkeypatch):
    """Delta debugging keeps what the failure needs: here, a division."""
    from tensorir_dace.fuzz import runner

    def fails(case, seed=0):
        return "has a division" if any("/" in s for s in case.statements) else None
    monkeypatch.setattr(runner, "case_fails", fails)
    case = next(c for c in (fuzz.generate_case(s) for s in range(200))
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
