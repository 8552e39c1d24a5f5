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
