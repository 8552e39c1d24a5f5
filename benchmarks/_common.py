"""Helpers shared by the benchmarks: timing, background load, example programs."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "sdfg_examples")


def timed(fn: Callable[[], object], repeat: int, warmup: int = 2) -> tuple[float, float]:
    """(minimum, median) seconds of ``repeat`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10000):
            x += 1


@contextlib.contextmanager
def background_load(processes: int = 2) -> Iterator[None]:
    """``processes`` CPU-bound processes running alongside the block."""
    ctx = mp.get_context("fork")
    stop = ctx.Event()
    workers = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(processes)]
    for w in workers:
        w.start()
    time.sleep(0.2)
    try:
        yield
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=5)


def example(name: str) -> str:
    with open(os.path.join(EXAMPLES, f"{name}.tir")) as fp:
        return fp.read()
