"""CUDA code generation: compiles here (nvcc); runs and is compared only where a GPU exists."""

from __future__ import annotations

import shutil

import dace
import pytest

import tensorir_dace as tir
from conftest import assert_same_results, example, parsed
from tensorir_dace.runtime import GPUUnavailableError, gpu_available
from tensorir_dace.testing import clone, random_arguments

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")]


def test_gpu_sdfg_has_kernels():
    sdfg = tir.to_sdfg(parsed(example("laplacian")), optimize="default", device="gpu")
    top_level = [n for s in sdfg.states() for n, scope in s.scope_dict().items()
                 if isinstance(n, dace.nodes.MapEntry) and scope is None]
    assert top_level and all(m.map.schedule == dace.ScheduleType.GPU_Device for m in top_level)
    with pytest.raises(tir.TensorIRError, match="device must be one of"):
        tir.to_sdfg(parsed(example("laplacian")), device="tpu")


def test_gpu_program_compiles_and_runs_only_on_a_gpu():
    src = example("nabla")
    with dace.config.set_temporary("compiler", "cuda", "cuda_arch", value="80"):
        prog = tir.compile(parsed(src), device="gpu")
    args = random_arguments(parsed(src))
    if gpu_available():
        out, ref = clone(args), clone(args)
        prog(**out)
        tir.interpret(parsed(src), **ref)
        assert_same_results(out, ref, 1e-10)
    else:
        with pytest.raises(GPUUnavailableError):
            prog(**args)
