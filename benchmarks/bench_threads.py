"""Where two OpenMP threads start to pay: the small-map threshold.

    python benchmarks/bench_threads.py [--repeat 50]

Times a 3-point stencil over N points with one and with two threads (the
one-thread rule of the runtime switched off), on the machine as it is and
with two CPU-bound processes alongside.  ``SEQUENTIAL_BELOW`` in
``tensorir_dace/openmp.py`` is set from the idle break-even.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import background_load, timed

import tensorir_dace as tir
from tensorir_dace import openmp

STENCIL = """
smooth(out: tensor<float, I[0:N]>, inp: tensor<float, I[-1:N+1]>) {
  out ← 0.25 × ⟪I, -1⟫(inp) + 0.5 × inp + 0.25 × ⟪I, 1⟫(inp)
}
"""
SIZES = [1024, 4096, 16384, 32768, 65536, 262144, 1048576]


def measure(repeat: int) -> list[tuple[int, float, float]]:
    prog = tir.compile(STENCIL)
    rows = []
    for n in SIZES:
        inp, out = np.random.rand(n + 2), np.zeros(n)
        times = []
        for threads in (1, 2):
            tir.set_num_threads(threads)
            times.append(timed(lambda out=out, inp=inp: prog(out=out, inp=inp), repeat)[1])
        rows.append((n, times[0], times[1]))
    tir.set_num_threads(2)
    return rows


def report(title: str, rows: list[tuple[int, float, float]]) -> None:
    print(title)
    print(f"{'points':>9} {'1 thread µs':>12} {'2 threads µs':>13} {'2 vs 1':>7}")
    for n, t1, t2 in rows:
        print(f"{n:>9} {t1 * 1e6:12.1f} {t2 * 1e6:13.1f} {t1 / t2:6.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    saved, openmp.SEQUENTIAL_BELOW = openmp.SEQUENTIAL_BELOW, 0
    try:
        report("as the machine is:", measure(args.repeat))
        with background_load(2):
            report("with two CPU-bound processes alongside:", measure(args.repeat))
    finally:
        openmp.SEQUENTIAL_BELOW = saved
    print(f"SEQUENTIAL_BELOW = {saved} (wait policy {openmp.wait_policy()})")


if __name__ == "__main__":
    main()
