"""Start-up, per-call cost, speed under load and build throughput, from one run.

    python benchmarks/bench_performance.py [--quick]

Every figure of the README's performance section:

1. **Start-up** of a new process, for the Laplacian 256×256×80 (``.tir``
   text), after ``import numpy``: cold (empty compile cache: parse, lower,
   C++ build, first result) and warm (binary cached: first result), and
   ``import tensorir_dace`` alone; the same for the Laplacian written as a
   decorated Python program (import of its module and first call), and for
   an edge stencil called as weather models call theirs (a ``@function``
   with ``out=``, ``domain=`` and ``offset_provider=``).  Each in a fresh
   Python process.
2. **Per call**, for a program with six array parameters on 16 points (the
   kernel costs nothing): the same array objects every call, and new array
   objects (fresh views of the same buffers) every call, which runs every
   argument, overlap and shape check again.  Minimum and median of many calls.
3. **Under load**: the Laplacian and the nabla operator (V=200k, E=600k)
   compiled against hand-written NumPy, with the default thread settings,
   alone and with two CPU-bound processes running alongside.
4. **Build throughput**: ``tensorir_dace.build`` of every ``sdfg_examples``
   program into an empty cache, and the cold compile of the Laplacian alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable

import numpy as np
from _common import EXAMPLES, ROOT, background_load, example, timed, torus_mesh_tables
from bench_stencils import LAPLACIAN, NABLA, numpy_laplacian, numpy_nabla

import tensorir_dace as tir
from tensorir_dace.testing import clone, random_arguments

SRC = os.path.join(ROOT, "src")

FIRST_RESULT = """
import json, sys, time
import numpy as np
if {preimport}:                             # time the compile alone
    import dace, sympy, tensorir_dace.lowering
inp = np.random.rand(258, 258, 80)          # inputs made before the clock starts
out = np.empty((256, 256, 80))
t1 = time.perf_counter()
import tensorir_dace as tir
t2 = time.perf_counter()
prog = tir.compile({src!r})
t3 = time.perf_counter()
prog(out=out, inp=inp)
t4 = time.perf_counter()
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
print(json.dumps({{"import": t2 - t1, "compile": t3 - t2, "call": t4 - t3, "total": t4 - t1,
                  "heavy": heavy}}))
"""

SIX = """
six(o1: tensor<float, I[0:N]>, o2: tensor<float, I[0:N]>, a: tensor<float, I[-1:N+1]>,
    b: tensor<float, I[0:N]>, c: tensor<float, I[0:N]>, d: tensor<float, I[0:N]>) {
  o1 ← ⟪I, -1⟫(a) + b × c
  o2 ← ⟪I, 1⟫(a) - d
}
"""


# The Laplacian as a decorated Python program, in a module of its own.
DECORATED = """
from tensorir_dace import Tensor, dims, function, program

I, J, K = dims("I J K")


@function
def lap(x):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


@program
def laplacian(inp: Tensor[float, I, J, K], out: Tensor[float, I, J, K]):
    out[1:-1, 1:-1] = lap(inp)
"""

FIRST_DECORATED = """
import json, sys, time
sys.path.insert(0, {path!r})
import numpy as np
inp = np.random.rand(258, 258, 80)          # inputs made before the clock starts
out = np.empty((258, 258, 80))
t1 = time.perf_counter()
import stencil_module
t2 = time.perf_counter()
stencil_module.laplacian(inp, out)
t3 = time.perf_counter()
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
print(json.dumps({{"import": t2 - t1, "call": t3 - t2, "total": t3 - t1, "heavy": heavy}}))
"""

# A mesh stencil called as weather models call theirs: a @function with
# out=, domain= and offset_provider=.
DIRECT = """
from tensorir_dace import Tensor, connectivity, dims, function, neighbor_dim

Vertex, Edge, K = dims("Vertex Edge K")
E2VDim = neighbor_dim(Vertex, 2)
E2V = connectivity("E2V", Edge, E2VDim)


@function
def edge_gradient(x: Tensor[float, Vertex, K], inv_length: Tensor[float, Edge]):
    return inv_length * (x(E2V[1]) - x(E2V[0]))
"""

FIRST_DIRECT = """
import json, sys, time
sys.path.insert(0, {path!r})
import numpy as np
nv, ne, nk = 20_000, 60_000, 80             # inputs made before the clock starts
x, inv_length = np.random.rand(nv, nk), np.random.rand(ne)
e2v = np.random.randint(0, nv, (ne, 2)).astype(np.int32)
out = np.zeros((ne, nk))
t1 = time.perf_counter()
import stencil_module
from stencil_module import Edge, K
t2 = time.perf_counter()
stencil_module.edge_gradient(x, inv_length, out=out, domain={{Edge: (100, ne - 100), K: (0, nk)}},
                             offset_provider={{"E2V": e2v}})
t3 = time.perf_counter()
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
print(json.dumps({{"import": t2 - t1, "call": t3 - t2, "total": t3 - t1, "heavy": heavy}}))
"""


def _fresh_env(cache: str) -> dict[str, str]:
    """The environment of a new process timed from start: the user's defaults
    (no wait policy) and bytecode kept, as an installed package has it (the
    cold run writes it, so warm runs do not time compiling Python source)."""
    env = {**os.environ, "PYTHONPATH": SRC, "TENSORIR_DACE_CACHE": cache}
    for name in ("OMP_WAIT_POLICY", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def fresh_decorated(cache: str, path: str, script: str = FIRST_DECORATED) -> dict:
    """First result of ``script`` (using ``path/stencil_module.py``) in a new
    process using ``cache``."""
    env = _fresh_env(cache)
    out = subprocess.run([sys.executable, "-c", script.format(path=path)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup_decorated(repeat: int) -> None:
    for title, module, script in [
            ("the same as a decorated program (@program calling a @function)", DECORATED,
             FIRST_DECORATED),
            ("an edge stencil (V=20k, E=60k, K=80) called as a @function with out=, "
             "domain= and offset_provider=", DIRECT, FIRST_DIRECT)]:
        print(f"\n   {title}, seconds after import numpy")
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as path:
            with open(os.path.join(path, "stencil_module.py"), "w") as f:
                f.write(module)
            cold = fresh_decorated(cache, path, script)
            warm = sorted((fresh_decorated(cache, path, script) for _ in range(repeat)),
                          key=lambda r: r["total"])
        mid = warm[len(warm) // 2]
        print(f"   cold (empty cache: translate, lower, build, first result) "
              f"{cold['total']:7.3f} s")
        print(f"   warm (binary cached: first result, median of {repeat})  {mid['total']:7.3f} s"
              f"   [import of the module {mid['import']:.3f} s; first call {mid['call']:.3f} s; "
              f"SymPy/DaCe imported: {', '.join(mid['heavy']) or 'neither'}]")


def fresh_process(cache: str, preimport: bool = False) -> dict:
    """First result of the Laplacian in a new process using ``cache``."""
    env = _fresh_env(cache)
    code = FIRST_RESULT.format(src=LAPLACIAN, preimport=preimport)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup(repeat: int) -> None:
    print("\n1. Start-up of a new process (Laplacian 256x256x80, seconds after import numpy)")
    with tempfile.TemporaryDirectory() as cache:
        cold = fresh_process(cache)
        warm = sorted((fresh_process(cache) for _ in range(repeat)), key=lambda r: r["total"])
    mid = warm[len(warm) // 2]
    print(f"   cold (empty cache: parse, lower, build, first result) {cold['total']:7.3f} s")
    print(f"   warm (binary cached: first result, median of {repeat})  {mid['total']:7.3f} s"
          f"   [import tensorir_dace {mid['import']:.3f} s; first call {mid['call']:.3f} s; "
          f"SymPy/DaCe imported: {', '.join(mid['heavy']) or 'neither'}]")


def per_call(repeat: int) -> None:
    print("\n2. Per call, six array parameters, 16 points (microseconds)")
    prog = tir.compile(SIX)
    n = 16
    sizes = {k: n + (2 if k == "a" else 0) for k in ("o1", "o2", "a", "b", "c", "d")}
    bufs = {k: np.random.rand(s + 4) for k, s in sizes.items()}
    same = {k: bufs[k][:s] for k, s in sizes.items()}
    lo, med = timed(lambda: prog(**same), repeat, warmup=100)
    print(f"   same array objects       min {lo * 1e6:6.2f}   median {med * 1e6:6.2f}")
    lo_v, med_v = timed(lambda: {k: bufs[k][:s] for k, s in sizes.items()}, repeat, 100)
    lo, med = timed(lambda: prog(**{k: bufs[k][:s] for k, s in sizes.items()}), repeat, 100)
    print(f"   new array objects        min {lo * 1e6:6.2f}   median {med * 1e6:6.2f}"
          f"   (making the six views: {lo_v * 1e6:.2f})")
    native = prog._callable
    full = native._make_fallback()          # DaCe-loaded path, same checks, for reference
    lo_f, med_f = timed(lambda: full(**same), repeat, 100)
    lo_g, med_g = timed(lambda: full(**{k: bufs[k][:s] for k, s in sizes.items()}), repeat, 100)
    print(f"   for reference, the DaCe-loaded call path: same {lo_f * 1e6:.2f}, new objects "
          f"{lo_g * 1e6:.2f} (min)")
    small_example(repeat)


def small_example(repeat: int) -> None:
    """The whole call of the laplacian.tir example (5x7x9, 315 points), whose
    time is nearly all per-call cost, against NumPy's whole computation."""
    print("\n   laplacian.tir example (5x7x9 = 315 points, two arrays), microseconds")
    prog = tir.parse(example("laplacian"))
    args = random_arguments(prog, seed=0, absent_fraction=0.0)
    compiled = tir.compile(prog)
    out, inp = args["out"], args["inp"]
    rows = [("compiled, same array objects", lambda: compiled(out=out, inp=inp)),
            ("compiled, new views every call", lambda: compiled(out=out[:], inp=inp[:])),
            ("NumPy (the same stencil)", lambda: numpy_laplacian(out=out, inp=inp))]
    times = {name: timed(fn, repeat, warmup=100) for name, fn in rows}
    for name, (lo, med) in times.items():
        print(f"   {name:32s} min {lo * 1e6:6.2f}   median {med * 1e6:6.2f}")
    numpy_med = times[rows[2][0]][1]
    print(f"   NumPy / compiled (medians): same objects {numpy_med / times[rows[0][0]][1]:.1f}x, "
          f"new views {numpy_med / times[rows[1][0]][1]:.1f}x")


def _cases() -> list[tuple[str, str, dict, object, str | None]]:
    """(name, source, sizes, NumPy version, neighbour tables: None, "mesh" or "random")."""
    def nabla_example(n_nodes, **kw):
        numpy_nabla(**kw)
    big = {"V": 200_000, "E": 600_000}
    return [
        ("laplacian.tir 5x7x9", example("laplacian"), {}, numpy_laplacian, None),
        ("nabla.tir V=5440", example("nabla"), {}, nabla_example, "random"),
        ("laplacian 256x256x80", LAPLACIAN, {"N": 256, "M": 256, "L": 80},
         numpy_laplacian, None),
        ("nabla 200k/600k mesh", NABLA, big, numpy_nabla, "mesh"),
        ("nabla 200k/600k random", NABLA, big, numpy_nabla, "random"),
    ]


def prepared() -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """(name, compiled call, NumPy call) per case, results checked against NumPy."""
    out = []
    for name, src, sizes, fn, tables in _cases():
        prog = tir.parse(src)
        args = random_arguments(prog, sizes=sizes, seed=0,
                                absent_fraction=0.02 if tables else 0.0)
        if tables == "mesh":      # numbered like a real mesh: neighbours are near
            args["E2V"], args["V2E"] = torus_mesh_tables(sizes["V"])
        elif tables:              # the NumPy version gathers every edge end
            args["E2V"] = np.abs(args["E2V"])
        compiled = tir.compile(prog)
        ref = clone(args)
        compiled(**args)
        fn(**ref)
        outs = [np.asarray(x) for x in (args["out"] if tables else (args["out"],))]
        refs = [np.asarray(x) for x in (ref["out"] if tables else (ref["out"],))]
        assert all(np.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(outs, refs)), name
        out.append((name, lambda c=compiled, a=args: c(**a), lambda f=fn, r=ref: f(**r)))
    return out


def speed(cases: list, rounds: int) -> list[tuple[str, float, float, list[float]]]:
    """Per case: median compiled and NumPy times over ``rounds`` interleaved
    rounds (each the median of several calls), and the sorted per-round ratios."""
    rows = []
    for name, compiled, numpy in cases:
        calls = 200 if "tir" in name else 5
        t_c: list[float] = []
        t_n: list[float] = []
        for _ in range(rounds):
            t_c.append(timed(compiled, calls, 1)[1])
            t_n.append(timed(numpy, calls, 1)[1])
        ratios = sorted(n / c for c, n in zip(t_c, t_n))
        rows.append((name, float(np.median(t_c)), float(np.median(t_n)), ratios))
    return rows


def under_load(rounds: int) -> None:
    print(f"\n3. Compiled against NumPy, default threads ({tir.get_num_threads()}), median ms "
          f"of {rounds} interleaved rounds; speed-up: median [range over rounds]")
    cases = prepared()
    load0 = os.getloadavg()[0]
    alone = speed(cases, rounds)
    with background_load(2):
        loaded = speed(cases, rounds)
        load1 = os.getloadavg()[0]
    print(f"   load average {load0:.1f} before the alone rounds, {load1:.1f} at the end of "
          "the loaded ones")
    print(f"   {'case':24s} {'alone':>34s} {'two busy processes alongside':>40s}")

    def cell(c: float, n: float, r: list[float]) -> str:
        return f"{c * 1e3:7.3f} vs {n * 1e3:7.3f} = {n / c:4.1f}x [{r[0]:.1f}-{r[-1]:.1f}]"
    for (name, c0, n0, r0), (_, c1, n1, r1) in zip(alone, loaded):
        print(f"   {name:24s} {cell(c0, n0, r0):>34s} {cell(c1, n1, r1):>40s}")


def build_throughput() -> None:
    print("\n4. Build")
    files = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".tir"))
    with tempfile.TemporaryDirectory() as cache:
        cold = fresh_process(cache, preimport=True)["compile"]
    with tempfile.TemporaryDirectory() as cache:
        report = tir.build(files, cache_dir=cache, progress=None)
    n = len(report.built)
    print(f"   cold compile of the Laplacian alone (new process, DaCe imported): {cold:.2f} s")
    print(f"   build of {n} example programs, {os.cpu_count()} processes: "
          f"{report.seconds:.1f} s = {n / report.seconds:.2f} programs/s"
          + (f" ({len(report.failed)} failed)" if report.failed else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--only", choices=["startup", "calls", "load", "build"], action="append",
                    help="run only these sections (repeatable; default: all)")
    opts = ap.parse_args()
    q = opts.quick
    only = set(opts.only or ["startup", "calls", "load", "build"])
    from tensorir_dace import openmp
    print(f"tensorir_dace {tir.__version__}; {os.cpu_count()} cores; wait policy "
          f"{openmp.wait_policy()}; load average {os.getloadavg()[0]:.1f}")
    if "startup" in only:
        startup(3 if q else 7)
        startup_decorated(3 if q else 7)
    if "calls" in only:
        per_call(2000 if q else 20000)
    if "load" in only:
        under_load(5 if q else 15)
    if "build" in only:
        build_throughput()


if __name__ == "__main__":
    main()
