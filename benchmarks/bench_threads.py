"""Where two OpenMP threads start to pay, and which loop schedule they want.

    python benchmarks/bench_threads.py [--repeat 50]
    python benchmarks/bench_threads.py --schedules [--rounds 11]

The first times a 3-point stencil over N points with one and with two
threads (the one-thread rule of the runtime switched off), on the machine
as it is and with two CPU-bound processes alongside.  ``SEQUENTIAL_BELOW``
in ``tensorir_dace/openmp.py`` is set from the idle break-even.

``--schedules`` compiles the Laplacian 256x256x80 and the nabla operator
(V=200k, E=600k, mesh-ordered tables) with each OpenMP loop schedule on
their parallel maps -- static (the default: no clause), dynamic, guided --
and times them in interleaved rounds, alone and with two CPU-bound
processes alongside, with the default thread count: whether handing out
iterations at run time helps when the cores are shared.
"""

from __future__ import annotations

import argparse
import contextlib

import dace
import numpy as np
from _common import background_load, timed, torus_mesh_tables
from bench_stencils import LAPLACIAN, NABLA

import tensorir_dace as tir
from tensorir_dace import openmp
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import random_arguments
from tensorir_dace.transforms.openmp_maps import parallel_maps

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


OMP = dace.dtypes.OMPScheduleType
# name, source, sizes, dynamic chunk (in iterations of the outermost loop)
SCHEDULE_CASES = [("laplacian 256x256x80", LAPLACIAN, {"N": 256, "M": 256, "L": 80}, 1),
                  ("nabla 200k/600k mesh", NABLA, {"V": 200_000, "E": 600_000}, 16384)]


def with_schedule(prog, kind: OMP, chunk: int) -> CompiledProgram:
    """``prog`` compiled with the default pipeline and ``schedule(kind, chunk)``
    on every parallel map."""
    sdfg = tir.to_sdfg(prog, optimize="default")
    for m in parallel_maps(sdfg):
        m.map.schedule = dace.ScheduleType.CPU_Multicore
        m.map.omp_schedule, m.map.omp_chunk_size = kind, chunk
    return CompiledProgram.from_sdfg(prog, sdfg)


def schedules(rounds: int) -> None:
    print(f"OpenMP loop schedules, {tir.get_num_threads()} threads: median ms of {rounds} "
          "interleaved rounds (each the median of 7 calls) and speed against static")
    for name, src, sizes, chunk in SCHEDULE_CASES:
        prog = tir.check(tir.parse(src))
        variants = {"static": with_schedule(prog, OMP.Default, 0),
                    f"dynamic,{chunk}": with_schedule(prog, OMP.Dynamic, chunk),
                    "guided": with_schedule(prog, OMP.Guided, 0)}
        args = random_arguments(prog, sizes=sizes, seed=0, absent_fraction=0.0)
        if "V" in sizes:
            args["E2V"], args["V2E"] = torus_mesh_tables(sizes["V"])
        for label in ("alone", "loaded"):
            with background_load(2) if label == "loaded" else contextlib.nullcontext():
                times: dict[str, list[float]] = {v: [] for v in variants}
                for _ in range(rounds):
                    for v, compiled in variants.items():
                        times[v].append(timed(lambda c=compiled, a=args: c(**a), 7, 1)[1])
            static = float(np.median(times["static"]))
            print(f"  {name:22s} {label:6s} " + "   ".join(
                f"{v} {np.median(t) * 1e3:6.2f} ({static / np.median(t):.2f}x)"
                for v, t in times.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--schedules", action="store_true", help="compare OpenMP loop schedules")
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    if args.schedules:
        schedules(args.rounds)
        return
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
