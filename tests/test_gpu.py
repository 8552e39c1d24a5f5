"""CUDA builds: generated and compiled here (nvcc), run only where a GPU exists.

Without a GPU the builds are compiled for ``sm_80`` and calling them must
raise ``GPUUnavailableError``; the argument plumbing up to the call into the
compiled library is checked with stand-in device arrays.  With a GPU every
example and a sample of random programs run with NumPy arrays (the host
build) and, where CuPy is installed, with CuPy arrays (the device-resident
build), compared with the interpreter.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import shutil

import dace
import numpy as np
import pytest

import tensorir_dace as tir
from conftest import (
    EXAMPLES,
    ROOT,
    FakeDeviceArray,
    assert_same_results,
    example,
    fake_device_like,
    parsed,
)
from tensorir_dace.lowering import lower_program
from tensorir_dace.runtime import GPUError, GPUUnavailableError, compile_sdfg, gpu_available
from tensorir_dace.runtime import compiled as compiled_module
from tensorir_dace.testing import clone, random_arguments
from test_examples import RUNTIME_BOUNDS
from test_random_programs import random_program

HAVE_GPU = gpu_available()
NO_GPU = ("no usable CUDA GPU on this machine: GPU builds are generated and compiled "
          "here, but not run or compared with the interpreter")
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")]

EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.tir"))
SIZES = {"N": 6, "M": 5, "K": 3, "L": 7, "C": 6, "V": 40, "E": 90}


def _bench_sources() -> dict[str, str]:
    """The benchmark's size-generic programs (compiled here as the benchmark builds them)."""
    ns: dict = {}
    text = (ROOT / "benchmarks" / "bench_stencils.py").read_text()
    exec(compile(text.split("def numpy_laplacian")[0], "bench_stencils.py", "exec"), ns)
    return {"laplacian": ns["LAPLACIAN"], "tridiagonal": ns["TRIDIAGONAL"], "nabla": ns["NABLA"]}


BENCH = _bench_sources()


def arch():
    """Without a GPU nvcc cannot detect one: build for sm_80; else for the GPU present."""
    if HAVE_GPU:
        return contextlib.nullcontext()
    return dace.config.set_temporary("compiler", "cuda", "cuda_arch", value="80")


@functools.cache
def gpu_build(src: str):
    with arch():
        return tir.compile(parsed(src), device="gpu")


@functools.cache
def resident_compiled(src: str):
    """Only the device-resident build's library (what a first call with GPU arrays makes)."""
    with arch():
        sdfg = lower_program(parsed(src), optimize="default", device="gpu", resident=True).sdfg
        return compile_sdfg(sdfg)


@functools.cache
def resident_build(src: str):
    prog = gpu_build(src)
    with arch():
        prog.device_resident()
    return prog


def cupy_or_skip():
    return pytest.importorskip("cupy", reason="the device-resident runs need CuPy")


def arguments_for(name: str) -> dict:
    src = example(name)
    args = random_arguments(parsed(src), sizes=SIZES, seed=0)
    return args | RUNTIME_BOUNDS.get(name, {})


def run_on_gpu_and_compare(src: str, args: dict, rtol: float = 1e-10) -> None:
    """Host build with NumPy arrays; where CuPy exists, the resident build with CuPy arrays."""
    ref, out = clone(args), clone(args)
    tir.interpret(parsed(src), **ref)
    gpu_build(src)(**out)
    assert_same_results(out, ref, rtol)
    try:
        import cupy
    except ImportError:
        return
    to_dev = lambda v: tuple(map(to_dev, v)) if isinstance(v, tuple) else (  # noqa: E731
        cupy.asarray(v) if isinstance(v, np.ndarray) and v.ndim else v)
    dev = {k: to_dev(v) for k, v in args.items()}
    resident_build(src)(**dev)
    to_host = lambda v: tuple(map(to_host, v)) if isinstance(v, tuple) else (  # noqa: E731
        cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else v)
    assert_same_results({k: to_host(v) for k, v in dev.items()}, ref, rtol)


# --------------------------------------------------------------------------- code generation


def test_gpu_sdfg_has_kernels():
    sdfg = tir.to_sdfg(parsed(example("laplacian")), optimize="default", device="gpu")
    top_level = [n for s in sdfg.states() for n, scope in s.scope_dict().items()
                 if isinstance(n, dace.nodes.MapEntry) and scope is None]
    assert top_level and all(m.map.schedule == dace.ScheduleType.GPU_Device for m in top_level)
    with pytest.raises(tir.TensorIRError, match="device must be one of"):
        tir.to_sdfg(parsed(example("laplacian")), device="tpu")


def _copies(sdfg: dace.SDFG) -> int:
    """Host <-> device copies: edges between a host and a GPU container."""
    n = 0
    for state in sdfg.states():
        for e in state.edges():
            ends = [x for x in (e.src, e.dst) if isinstance(x, dace.nodes.AccessNode)]
            if len(ends) == 2 and len({sdfg.arrays[x.data].storage for x in ends}) == 2:
                n += 1
    return n


@pytest.mark.parametrize("name", sorted(BENCH))
def test_benchmark_programs_compile_device_resident(name):
    """The benchmark's programs: nvcc compiles the device-resident build; its
    arguments live in GPU memory, nothing is copied, and each call synchronises."""
    sdfg = resident_compiled(BENCH[name]).sdfg
    host = tir.to_sdfg(parsed(BENCH[name]), optimize="default", device="gpu")
    args = [d for d in sdfg.arrays.values() if not d.transient and isinstance(d, dace.data.Array)]
    assert args and all(d.storage == dace.StorageType.GPU_Global for d in args)
    assert _copies(sdfg) == 0 and _copies(host) > 0     # the host-array build copies
    assert all(d.storage != dace.StorageType.GPU_Global for d in host.arrays.values()
               if not d.transient and isinstance(d, dace.data.Array))
    code = sdfg.generate_code()[0].clean_code
    assert code.count("cudaDeviceSynchronize()") == 2 and "cudaMemcpy" not in code


def _host_reads_of_device_data(sdfg: dace.SDFG) -> set[str]:
    """GPU containers that host control flow (edges, conditions, loop tests) reads."""
    gpu = {n for sd in sdfg.all_sdfgs_recursive() for n, d in sd.arrays.items()
           if d.storage == dace.StorageType.GPU_Global}
    names: set[str] = set()
    for sd in sdfg.all_sdfgs_recursive():
        for e in sd.all_interstate_edges():
            names |= set(e.data.read_symbols())
        for region in sd.all_control_flow_regions():
            codes = [c for c, _ in getattr(region, "branches", []) if c is not None]
            codes += [c for c in [getattr(region, "loop_condition", None)] if c is not None]
            for c in codes:
                names |= {str(x) for x in c.get_free_symbols()}
    return names & gpu


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_device_resident_build_generates(name):
    """Every example: the device-resident SDFG validates and generates CUDA with
    no host copies and no host control flow reading device data (nvcc runs on
    the benchmark's programs above; every example runs where a GPU exists)."""
    sdfg = lower_program(parsed(example(name)), optimize="default", device="gpu",
                         resident=True).sdfg
    sdfg.validate()
    assert _copies(sdfg) == 0 and not _host_reads_of_device_data(sdfg)
    code = sdfg.generate_code()
    assert any(c.language == "cu" and "__global__" in c.clean_code for c in code)
    assert "cudaMemcpy" not in code[0].clean_code


# --------------------------------------------------------------------------- without a GPU


@pytest.mark.skipif(HAVE_GPU, reason="checks the behaviour without a GPU")
def test_calls_without_a_gpu_check_arguments_then_raise():
    src = BENCH["laplacian"]
    prog = resident_build(src)
    host = random_arguments(parsed(src), sizes={"N": 8, "M": 6, "L": 4}, seed=0)
    fakes = fake_device_like(host)
    with pytest.raises(tir.ArgumentError, match="expects float64 elements, got float32"):
        prog(**(fakes | {"out": FakeDeviceArray((8, 6, 4), np.float32)}))
    with pytest.raises(tir.ArgumentError, match="all be GPU arrays or all NumPy arrays"):
        prog(**(fakes | {"out": host["out"]}))
    with pytest.raises(GPUUnavailableError, match="no usable GPU"):
        prog(**fakes)                                   # the device-resident build
    with pytest.raises(GPUUnavailableError, match="no usable GPU"):
        prog(**host)                                    # the host build


@pytest.mark.skipif(HAVE_GPU, reason="fakes a GPU")
def test_device_pointers_and_sizes_reach_the_compiled_call(monkeypatch):
    """Up to the call into the library: the stand-ins' pointers and the inferred
    sizes in the C signature's order (the call itself is intercepted)."""
    src = BENCH["laplacian"]
    callable_ = resident_build(src).device_resident()
    calls = []
    monkeypatch.setattr(compiled_module, "gpu_available", lambda: True)
    monkeypatch.setattr(callable_, "_fast_call", lambda c, i, gpu: calls.append((c, gpu)))
    fakes = fake_device_like(random_arguments(parsed(src), sizes={"N": 8, "M": 6, "L": 4}))
    resident_build(src)(**fakes)
    (cargs, gpu), = calls
    sig = callable_.compiled.sdfg.signature_arglist(with_types=False)
    values = dict(zip(sig, cargs))
    assert gpu is True and all(isinstance(values[a], ctypes.c_void_p) for a in ("out", "inp"))
    assert values["out"].value == fakes["out"].ptr and values["inp"].value == fakes["inp"].ptr
    given = {"N": 8, "M": 6, "L": 4}
    passed = {n: values[s].value for n, s in callable_.signature.symbols.items() if s in values}
    assert passed and all(given[n] == v for n, v in passed.items())
    # The prepared call is reused while pointers and layouts stay; a change is checked again.
    callable_.clear_cache()
    before = callable_.cache_info()
    resident_build(src)(**fakes)
    resident_build(src)(**dict(fakes))
    assert callable_.cache_info()["hits"] == before["hits"] + 1
    out = fakes["out"].__cuda_array_interface__
    out["data"] = (out["data"][0] + 0x100000, False)      # far from 'inp'
    resident_build(src)(**fakes)
    assert dict(zip(sig, calls[-1][0]))["out"].value == out["data"][0]
    out["data"] = (out["data"][0], True)
    with pytest.raises(tir.ArgumentError, match="'out' is written.*read-only"):
        resident_build(src)(**fakes)
    assert len(calls) == 4


# --------------------------------------------------------------------------- on a GPU


@needs_gpu
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_runs_on_the_gpu(name):
    run_on_gpu_and_compare(example(name), arguments_for(name))


@needs_gpu
@pytest.mark.parametrize("seed,dtype", [(3, "float"), (7, "float32"), (2, "int")])
def test_random_program_runs_on_the_gpu(seed, dtype):
    src = random_program(seed, dtype=dtype)
    run_on_gpu_and_compare(src, random_arguments(parsed(src), sizes={"N": 7, "M": 6}, seed=seed))


@needs_gpu
@pytest.mark.parametrize("name", sorted(BENCH))
def test_benchmark_programs_run_on_device_arrays(name):
    cupy_or_skip()
    src = BENCH[name]
    sizes = {"N": 9, "M": 7, "L": 5, "V": 50, "E": 120}
    args = random_arguments(parsed(src), sizes=sizes, seed=1)
    if name == "tridiagonal":
        args["b"] += 4.0
    run_on_gpu_and_compare(src, args)


@needs_gpu
def test_device_arrays_are_used_in_place():
    cupy = cupy_or_skip()
    src = BENCH["laplacian"]
    prog = resident_build(src)
    buf = cupy.random.rand(240 + 144)
    inp, out = buf[:240].reshape(10, 8, 3), buf[240:].reshape(8, 6, 3)   # views of one buffer
    prog(out=out, inp=inp)
    expected = np.empty((8, 6, 3))
    tir.interpret(parsed(src), out=expected, inp=cupy.asnumpy(inp))
    np.testing.assert_allclose(cupy.asnumpy(buf[240:]).reshape(8, 6, 3), expected, rtol=1e-12)
    with pytest.raises(tir.ArgumentError, match="shares GPU memory"):
        prog(out=buf[100:244].reshape(8, 6, 3), inp=inp)



# --------------------------------------------------------------------------- launch limits

WIDE = """
wide(out: tensor<float, C[0:N], K[0:L]>, inp: tensor<float, C[-1:N+1], K[0:L]>) {
  out ← -2.0 × inp + ⟪C, -1⟫(inp) + ⟪C, 1⟫(inp)
}
"""


def test_grid_dimensions_are_capped_for_any_size():
    """CUDA allows 65535 blocks along y and z: a (Cell, K) map over more
    cells than that walks several cells per thread instead of failing to launch."""
    sdfg = lower_program(parsed(WIDE), optimize="default", device="gpu", resident=True).sdfg
    state = next(s for s in sdfg.states()
                 if any(isinstance(n, dace.nodes.MapEntry) for n in s.nodes()))
    entries = [n for n in state.nodes() if isinstance(n, dace.nodes.MapEntry)]
    kernels = [e for e in entries if e.map.schedule == dace.ScheduleType.GPU_Device]
    loops = [e for e in entries if e.map.schedule == dace.ScheduleType.Sequential]
    assert len(kernels) == 1 and len(loops) == 1 and state.entry_node(loops[0]) is kernels[0]
    grid_y = kernels[0].map.range.size()[0] / kernels[0].map.gpu_block_size[1]
    for n in (10, 65535 * 8, 65535 * 8 + 1, 20_000_000):
        assert dace.symbolic.evaluate(dace.symbolic.int_ceil(grid_y, 1), {"N": n}) <= 65535


@needs_gpu
def test_more_cells_than_the_grid_limit_run_on_the_gpu():
    n = 65535 * 8 + 5                                    # > 65535 blocks of 8 cells
    args = random_arguments(parsed(WIDE), sizes={"N": n, "L": 2}, seed=4)
    run_on_gpu_and_compare(WIDE, args)


def test_cuda_errors_of_a_call_are_tensorir_errors():
    """DaCe reports a failed launch as a bare RuntimeError; the call raises GPUError."""
    def failing(*args):
        raise RuntimeError('An error was detected when calling "wide": invalid argument')
    call = compiled_module._reporting_gpu_errors(failing, "wide")
    with pytest.raises(GPUError, match="program 'wide' failed on the GPU.*65535") as info:
        call(1, 2)
    assert isinstance(info.value, tir.TensorIRError)


# --------------------------------------------------------------------------- found by the source

FRESH_GPU_CALL = """
    import json, sys
    import numpy as np
    import tensorir_dace as tir
    from tensorir_dace.runtime import GPUUnavailableError
    from tensorir_dace.runtime.cachedir import compile_count
    prog = tir.compile(sys.argv[1], device="gpu")
    inp = np.arange(8 * 7, dtype=float).reshape(8, 7) ** 2
    out = np.zeros((6, 5))
    outcomes = []
    for _ in range(2):
        try:
            prog(out=out, inp=inp, w=0.5)
            outcomes.append(out.tolist())
        except GPUUnavailableError as ex:
            outcomes.append(str(ex))
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"outcomes": outcomes, "heavy": heavy, "compiled": compile_count(),
                      "host": type(prog._callable.host).__name__}))
"""


def test_a_cached_gpu_program_is_called_without_dace(tmp_path):
    """A new process finds the GPU build by its source and calls it through
    ctypes: without a GPU it raises GPUUnavailableError (twice: the failed
    first call leaves nothing half-prepared), with one it computes, and
    neither imports DaCe or SymPy."""
    from test_startup import LAP, run_fresh
    env = {} if HAVE_GPU else {"DACE_compiler_cuda_cuda_arch": "80"}
    first = run_fresh(FRESH_GPU_CALL, tmp_path, LAP, **env)
    assert first["compiled"] > 0 and "dace" in first["heavy"]
    again = run_fresh(FRESH_GPU_CALL, tmp_path, LAP, **env)
    assert again["heavy"] == [] and again["compiled"] == 0
    assert again["host"] == first["host"] == "NativeCallable"
    inp = np.arange(8 * 7, dtype=float).reshape(8, 7) ** 2
    want = 0.5 * (-4.0 * inp[1:-1, 1:-1] + inp[:-2, 1:-1] + inp[2:, 1:-1]
                  + inp[1:-1, :-2] + inp[1:-1, 2:])
    for got in (first, again):
        for outcome in got["outcomes"]:
            if HAVE_GPU:
                np.testing.assert_allclose(outcome, want, rtol=1e-14)
            else:
                assert "program 'lap' was compiled for a GPU, but no usable GPU" in outcome


def test_kernel_errors_of_a_cached_gpu_program_are_gpu_errors():
    """The ctypes path reads the error the kernels recorded after each call."""
    from tensorir_dace.runtime.native import _reporting_gpu_errors

    class Recorded:
        def __init__(self, error):
            self.error, self.calls = error, []

        program = property(lambda self: lambda *args: self.calls.append(args))

        def gpu_error(self):
            return self.error

    fine = Recorded(None)
    _reporting_gpu_errors(fine, "wide")(1, 2)
    assert fine.calls == [(1, 2)]
    with pytest.raises(GPUError, match="program 'wide' failed on the GPU: invalid argument"
                       ".*65535") as info:
        _reporting_gpu_errors(Recorded("invalid argument (error 1)"), "wide")(1, 2)
    assert isinstance(info.value, tir.TensorIRError)
