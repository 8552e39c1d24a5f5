"""Helpers shared by the benchmarks: timing, background load, example programs,
mesh-ordered neighbour tables."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterator

import numpy as np

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


def torus_mesh_tables(n_vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """E2V and V2E of a triangulated periodic grid, numbered row by row.

    Like a real mesh numbered along a space-filling curve, neighbours have
    nearby numbers, so gathers through the tables hit the same cache lines;
    random tables make every gather a separate memory
    transaction.  Vertex ``(i, j)`` owns the three edges to ``(i, j+1)``,
    ``(i+1, j)`` and ``(i+1, j+1)``: E = 3 V.  The last row is cut short
    when ``n_vertices`` is not a multiple of the row length."""
    cols = max(1, int(np.sqrt(n_vertices)))
    v = np.arange(n_vertices)
    i, j = v // cols, v % cols
    rows = -(-n_vertices // cols)

    def vertex(ii, jj):
        return np.minimum((ii % rows) * cols + jj % cols, n_vertices - 1)
    ends = [vertex(i, j + 1), vertex(i + 1, j), vertex(i + 1, j + 1)]
    e2v = np.empty((3 * n_vertices, 2), dtype=np.int64)
    e2v[:, 0] = np.repeat(v, 3)
    e2v[:, 1] = np.stack(ends, axis=1).reshape(-1)
    incoming = [3 * vertex(i, j - 1), 3 * vertex(i - 1, j) + 1, 3 * vertex(i - 1, j - 1) + 2]
    v2e = np.stack([3 * v, 3 * v + 1, 3 * v + 2, *incoming], axis=1).astype(np.int64)
    return e2v, v2e
