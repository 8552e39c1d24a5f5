"""Per-call cost of the call-time argument checks of a compiled program.

    python benchmarks/bench_call_overhead.py [--repeat 2000]

Uses the nabla operator (eight array parameters, one of them a tuple, two
neighbour tables) and reports the fastest of ``--repeat`` calls (the
minimum, not the median: it is stable on a shared machine):

* tiny mesh (V=10, E=30), so that the kernel costs nothing:
  - ``same arrays``: the same array objects every call (prepared argument
    vectors are reused; only identities, shapes and strides are compared);
  - ``new array objects``: fresh views of the same buffers every call (all
    arguments are checked again; the neighbour-table scan is cached per buffer);
  - ``new table buffers``: fresh copies of the two tables every call (the
    tables are scanned again);
* the 600k-edge mesh (V=200k, E=600k): the call with the same arrays and with
  new array objects, and what scanning both tables costs (done once per new
  table buffer), as a share of the call.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import timed
from bench_stencils import NABLA

import tensorir_dace as tir
from tensorir_dace.testing import random_arguments


def best(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls after a warm-up."""
    return timed(fn, repeat, warmup=min(repeat, 20))[0]


def views(args: dict) -> dict:
    """New array objects on the same buffers."""
    return {k: (tuple(x[...] for x in v) if isinstance(v, tuple) else v[...])
            for k, v in args.items()}


def mesh_args(prog, sizes):
    args = random_arguments(prog, sizes=sizes, seed=0, absent_fraction=0.02)
    args["E2V"] = np.abs(args["E2V"])
    return args


def measure(compiled, args, repeat, new_buffers=True):
    same = best(lambda: compiled(**args), repeat)
    new_objects = best(lambda: compiled(**views(args)), repeat)
    if not new_buffers:
        return same, new_objects, None

    def new_tables():
        kw = views(args)
        kw["E2V"] = args["E2V"].copy()
        kw["V2E"] = args["V2E"].copy()
        return kw

    # The copies are made outside the timed region.
    n = min(repeat, 200)
    it = iter([new_tables() for _ in range(min(n, 20) + n)])
    return same, new_objects, best(lambda: compiled(**next(it)), n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--big-repeat", type=int, default=20)
    opts = ap.parse_args()
    prog = tir.parse(NABLA)
    compiled = tir.compile(prog)
    tiny = mesh_args(prog, {"V": 10, "E": 30})
    s, o, b = measure(compiled, tiny, opts.repeat)
    full = compiled._callable._make_fallback()    # the DaCe-loaded path, same checks
    fs, fo, fb = measure(full, tiny, opts.repeat)
    print("nabla, 8 array parameters, tiny mesh (V=10, E=30): per call, "
          "call plan (ctypes) / DaCe-loaded path")
    print(f"  same arrays         {s * 1e6:8.1f} us  {fs * 1e6:8.1f} us")
    print(f"  new array objects   {o * 1e6:8.1f} us  {fo * 1e6:8.1f} us")
    print(f"  new table buffers   {b * 1e6:8.1f} us  {fb * 1e6:8.1f} us")
    big = mesh_args(prog, {"V": 200_000, "E": 600_000})
    s, o, _ = measure(compiled, big, opts.big_repeat, new_buffers=False)
    print("nabla V=200k E=600k: per call")
    print(f"  same arrays         {s * 1e3:8.3f} ms")
    print(f"  new array objects   {o * 1e3:8.3f} ms")
    scan = best(lambda: (big["E2V"].max(), big["V2E"].max()), opts.big_repeat)
    print(f"  scan of both tables {scan * 1e3:8.3f} ms  ({100 * scan / s:.1f}% of the call; "
          "only for a table buffer new to the process)")


if __name__ == "__main__":
    main()
