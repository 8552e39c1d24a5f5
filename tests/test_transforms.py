"""IR and SDFG passes: Tensor IR in, Tensor IR out (side by side), and results unchanged."""

from __future__ import annotations

import textwrap

import tensorir_dace as tir
from conftest import assert_same_results, example
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms.extract_temporaries import extract_temporaries


def same_results(before: tir.ir.Program, after: tir.ir.Program, **sizes) -> None:
    args = random_arguments(before, sizes=sizes)
    ref, out, comp = clone(args), clone(args), clone(args)
    tir.interpret(before, **ref)
    tir.interpret(after, **out)
    tir.compile(after)(**comp)
    assert_same_results(out, ref)
    assert_same_results(comp, ref)


def test_repeated_cos_goes_to_a_temporary_as_in_the_design_document():
    before = tir.parse(example("fencil_cos"))
    after = extract_temporaries(before)
    expected = tir.parse(textwrap.dedent("""
        fencil(out: tensor<float, I[1:99]>, inp: tensor<float, I[0:100]>) {
          t_cos: tensor<float, I[0:100]>;
          t_cos ← cos(inp);
          out ← ⟪I, 1⟫(t_cos) + ⟪I, -1⟫(t_cos);
        }"""))
    assert tir.format(after) == tir.format(tir.check(expected))
    same_results(before, after)


def test_cheap_or_single_expressions_stay():
    src = """
    p(out: tensor<float, I[0:N]>, x: tensor<float, I[-1:N+1]>) {
      out ← ⟪I, 1⟫(x + 1.0) + ⟪I, -1⟫(x + 1.0) + sqrt(x);
    }"""
    before = tir.parse(src)
    after = extract_temporaries(before)
    assert after.temporaries == () and after.body == tir.check(before).body


def test_nested_repeats_and_lambda_parameters():
    src = """
    p(out: tensor<float, I[0:N]>, x: tensor<float, I[-2:N+2]>, y: tensor<float, I[-2:N+2]>) {
      out ← (λ(a: tensor<float, I[-2:N+2]>, b: tensor<float, I[-2:N+2]>) →
               ⟪I, 1⟫(exp(a) × sin(b)) - ⟪I, -1⟫(exp(a) × sin(b)) + exp(a))(x, y);
    }"""
    before = tir.parse(src)
    after = extract_temporaries(before)
    names = [t.name for t in after.temporaries]
    assert names[0] == "t_multiplies" and len(after.body) >= 2
    same_results(before, after, N=9)
