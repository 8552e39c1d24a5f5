"""GPU bandwidth: compiled programs on device-resident CuPy arrays against a
device-to-device copy of the same size, measured in the same run.

    pip install -e . cupy-cuda12x        # or cupy-cuda13x, matching the CUDA driver
    python benchmarks/bench_gpu.py [--repeat 50] [--scale 1.0]

Each program runs on CuPy arrays (the device-resident build: no host
transfers in the timed region) and is checked once against the NumPy
interpreter on a small size.  Its effective bandwidth counts each argument
array once (the bytes it must move at least: inputs read, outputs written).
The reference is ``cupy`` copying an array of the same byte count
(``dst[...] = src``: read + write).  Both are timed the same way: the median
over ``--repeat`` calls of the wall time of one call followed by a device
synchronisation (the compiled call synchronises by itself; the copy is
synchronised explicitly).  The printed figure is the program's bandwidth
as a fraction of the copy's.

Without a GPU (or without CuPy) the script exits with status 2 and says why.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import torus_mesh_tables
from bench_stencils import LAPLACIAN, NABLA, TRIDIAGONAL

import tensorir_dace as tir
from tensorir_dace.runtime import gpu_available
from tensorir_dace.testing import clone, leaves, random_arguments

# A (Cell, K) stencil as in ICON, over more cells than CUDA's grid allows
# along y in blocks of 8 (65535 x 8): the kernel walks two cells per thread.
CELLS_LEVELS = """
cells_levels(out: tensor<float, C[0:N], K[0:L]>, inp: tensor<float, C[-1:N+1], K[0:L]>) {
  out ← -2.0 × inp + ⟪C, -1⟫(inp) + ⟪C, 1⟫(inp)
}
"""

CASES = [  # name, source, sizes at --scale 1, small sizes for the correctness check
    ("laplacian", LAPLACIAN, {"N": 1024, "M": 1024, "L": 128}, {"N": 9, "M": 7, "L": 5}),
    ("tridiagonal", TRIDIAGONAL, {"N": 512, "M": 512, "L": 80}, {"N": 9, "M": 7, "L": 5}),
    ("nabla", NABLA, {"V": 4_000_000, "E": 12_000_000}, {"V": 60, "E": 180}),
    ("nabla-random", NABLA, {"V": 4_000_000, "E": 12_000_000}, {"V": 60, "E": 180}),
    ("cells-levels", CELLS_LEVELS, {"N": 1_000_000, "L": 80}, {"N": 9, "L": 5}),
]
SCALED = ("N", "V")      # E follows V: E = 3 V


def fail(message: str):
    print(f"bench_gpu: {message}", file=sys.stderr)
    sys.exit(2)


def need_gpu():
    """CuPy, or exit with a clear message."""
    if not gpu_available():
        fail("no usable CUDA GPU on this machine (the CUDA driver reports none); "
             "run it on a machine with an NVIDIA GPU")
    try:
        import cupy
    except ImportError:
        fail("needs CuPy for device-resident arrays: "
             "pip install cupy-cuda12x (or cupy-cuda13x, matching the CUDA driver)")
    return cupy


def arguments(prog, name: str, sizes: dict, seed: int) -> dict:
    args = random_arguments(prog, sizes=sizes, seed=seed, absent_fraction=0.02)
    if name == "tridiagonal":
        args["b"] += 4.0          # diagonally dominant: a well-conditioned system
    if name == "nabla":           # "nabla-random" keeps the random tables
        args["E2V"], args["V2E"] = torus_mesh_tables(sizes["V"])
    return args


def to_device(cupy, args: dict) -> dict:
    def move(v):
        if isinstance(v, tuple):
            return tuple(move(x) for x in v)
        return cupy.asarray(v) if isinstance(v, np.ndarray) and v.ndim else v
    return {k: move(v) for k, v in args.items()}


def to_host(cupy, args: dict) -> dict:
    def move(v):
        if isinstance(v, tuple):
            return tuple(move(x) for x in v)
        return cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else v
    return {k: move(v) for k, v in args.items()}


def median_time(fn, sync, repeat: int) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def check_small(cupy, compiled, prog, name: str, sizes: dict) -> float:
    """Max |device-resident result - interpreter| on a small size (NaN == NaN)."""
    args = arguments(prog, name, sizes, seed=1)
    ref = clone(args)
    tir.interpret(prog, **ref)
    dev = to_device(cupy, args)
    compiled(**dev)
    got = to_host(cupy, dev)
    err = 0.0
    for k in ref:
        for a, b in zip(leaves(got[k]), leaves(ref[k])):
            if isinstance(b, np.ndarray) and b.size:
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
                err = max(err, float(np.max(np.where(np.isnan(a) & np.isnan(b), 0.0, diff))))
    return err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply the sizes N, V and E (memory use grows with them)")
    opts = ap.parse_args()
    cupy = need_gpu()
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    print(f"device: {props['name'].decode()}, CuPy {cupy.__version__}, "
          f"median of {opts.repeat} calls, each followed by a device synchronisation")
    print(f"{'case':12s} {'sizes':34s} {'MB moved':>9s} {'time':>9s} {'GB/s':>7s} "
          f"{'copy GB/s':>9s} {'of copy':>8s} {'max err':>8s}")
    for name, src, sizes, small in CASES:
        sizes = {k: max(1, int(v * opts.scale)) if k in SCALED else v for k, v in sizes.items()}
        if "E" in sizes:
            sizes["E"] = 3 * sizes["V"]
        print(measure(cupy, name, src, sizes, small, opts.repeat), flush=True)
        cupy.get_default_memory_pool().free_all_blocks()


def measure(cupy, name: str, src: str, sizes: dict, small: dict, repeat: int) -> str:
    """One case: the program and a copy of the same byte count, as a table row."""
    sync = cupy.cuda.Device().synchronize
    prog = tir.parse(src)
    compiled = tir.compile(prog, device="gpu")
    compiled.device_resident()
    err = check_small(cupy, compiled, prog, name, small)
    dev = to_device(cupy, arguments(prog, name, sizes, seed=0))
    nbytes = sum(x.nbytes for v in dev.values() for x in leaves(v)
                 if isinstance(x, cupy.ndarray))
    t_prog = median_time(lambda: compiled(**dev), sync, repeat)
    src_buf = cupy.ones(nbytes // 16, dtype=np.float64)   # read + write = nbytes in all
    dst_buf = cupy.empty_like(src_buf)
    t_copy = median_time(lambda: dst_buf.__setitem__(Ellipsis, src_buf), sync, repeat)
    bw, bw_copy = nbytes / t_prog / 1e9, 2 * src_buf.nbytes / t_copy / 1e9
    size_str = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return (f"{name:12s} {size_str:34s} {nbytes / 1e6:9.1f} {t_prog * 1e3:7.3f}ms "
            f"{bw:7.1f} {bw_copy:9.1f} {bw / bw_copy:7.0%} {err:8.1e}")


if __name__ == "__main__":
    main()
