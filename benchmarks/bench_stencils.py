"""Compiled Tensor IR against NumPy, the copy probes, the interpreter and the
previous pipeline, every figure a ratio taken in one run.

    python benchmarks/bench_stencils.py [--repeat 15] [--interp-repeat 2] [--clock cpu]

The machine is shared and noisy, so the variants of a case are called in
interleaved rounds (compiled, previous pipeline, NumPy, both copy probes),
and each ratio is reported as the median over rounds with its range.  The
"others" column is the share of all CPUs that other processes used during a
case's rounds (from ``/proc/stat``, Linux only): figures taken while it is
high compare time slices more than memory bandwidth.  The "whole" columns
take only the calls no thread of which was descheduled (process CPU time at
least 85% of threads × wall time: every OpenMP thread ran, or spun, all
along) and compare the medians of those calls, with their counts; on a
loaded machine they come closest to the figures of a quiet one.

"previous" is the default pipeline without the passes named in ``NEW`` (the
pipeline before them).  Effective bandwidth counts each array argument
read or written once; as a fraction of a copy probe it is
``(bytes / t) / (probe bytes / t_probe)``.

``--clock cpu`` times each call by its process CPU time instead, divided by
the number of threads for the OpenMP variants (compiled, previous, probes),
with ``OMP_WAIT_POLICY=passive`` so that waiting threads use none: the work
and memory stalls per thread, steady on a loaded machine, but not the
bandwidth two threads reach when they run at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import tensorir_dace as tir
from tensorir_dace.lowering import lower
from tensorir_dace.runtime.program import CompiledProgram
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms.sdfg_passes import PIPELINES

#: The passes the "previous" pipeline leaves out.
NEW = ("fuse_column_scans", "interleave_columns", "fuse_maps_horizontally", "streaming_stores",
       "fuse_across_statements", "compute_gathered_on_the_fly", "fuse_neighbor_reductions",
       "interchange_neighbor_loops")

LAPLACIAN = """
laplacian(out: tensor<float, I[0:N], J[0:M], K[0:L]>,
          inp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>) {
  out ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp)
}
"""

TRIDIAGONAL = """
solve_tridiag(a: tensor<float, I[0:N], J[0:M], K[0:L]>, b: tensor<float, I[0:N], J[0:M], K[0:L]>,
              c: tensor<float, I[0:N], J[0:M], K[0:L]>, d: tensor<float, I[0:N], J[0:M], K[0:L]>,
              x: tensor<float, I[0:N], J[0:M], K[0:L]>) {
  x ← scan(λ(x_kp1: tensor<float, I[0:N], J[0:M]>, cpdp: tensor<(float, float), I[0:N], J[0:M]>)
             → cpdp[1] - cpdp[0] × x_kp1, False, 0.0)(
        scan(λ(state: tensor<(float, float), I[0:N], J[0:M]>, a: tensor<float, I[0:N], J[0:M]>,
               b: tensor<float, I[0:N], J[0:M]>, c: tensor<float, I[0:N], J[0:M]>,
               d: tensor<float, I[0:N], J[0:M]>)
             → make_tuple(c / (b - a × state[0]), (d - a × state[1]) / (b - a × state[0])),
             True, make_tuple(0.0, 0.0))(a, b, c, d))
}
"""

NABLA = """
nabla(out: tensor<(float, float), Vertex[0:V]>, pp: tensor<float, Vertex[0:V]>,
      S_MXX: tensor<float, Edge[0:E]>, S_MYY: tensor<float, Edge[0:E]>,
      sign: tensor<float, Vertex[0:V], _NB_0[0:6]>, vol: tensor<float, Vertex[0:V]>,
      E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:6]>) {
  out ← make_tuple(
    reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
             s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(S_MXX × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign) / vol,
    reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
             s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
      ⟪V2E⟫(S_MYY × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign) / vol)
}
"""

# The divergence of an edge flux at every level (ICON's K-contiguous layout):
# the edge value at each level is averaged from its two end vertices.
VK = "tensor<float, Vertex[0:V], K[0:L]>"
DIV_LEVELS = f"""
div_levels(out: {VK}, pp: {VK}, S_M: tensor<float, Edge[0:E]>,
           sign: tensor<float, Vertex[0:V], _NB_0[0:6]>,
           E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>,
           V2E: tensor<int, Vertex[0:V], _NB_Edge[0:6]>) {{
  out ← reduce(λ(acc: {VK}, a: {VK}, s: tensor<float, Vertex[0:V]>) → acc + a × s, 0.0)(
    ⟪V2E⟫(S_M × (0.5 × (⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))), sign)
}}
"""


# The edge gradient of ICON's levels: each edge's two vertex rows.
GRAD_LEVELS = f"""
grad_levels(out: tensor<float, Edge[0:E], K[0:L]>, pp: {VK},
            inv_len: tensor<float, Edge[0:E]>, E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>) {{
  out ← (⟪E2V, 1⟫(pp) - ⟪E2V, 0⟫(pp)) × inv_len
}}
"""


LAP_OF_LAP = """
lap_of_lap(out: tensor<float, I[0:N], J[0:M], K[0:L]>,
           inp: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>) {
  tmp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>;
  tmp ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp);
  out ← -4.0 × tmp + ⟪I, -1⟫(tmp) + ⟪I, 1⟫(tmp) + ⟪J, -1⟫(tmp) + ⟪J, 1⟫(tmp)
}
"""

# Smagorinsky-like horizontal diffusion in four statements: a coefficient from
# the local gradient, the Laplacian, the flux, and the update.
DIFFUSION = """
diffusion(out: tensor<float, I[0:N], J[0:M], K[0:L]>,
          u: tensor<float, I[-3:N+3], J[-3:M+3], K[0:L]>) {
  kh: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>;
  lap: tensor<float, I[-2:N+2], J[-2:M+2], K[0:L]>;
  flux: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>;
  kh ← 0.05 + 0.1 × sqrt((⟪I, 1⟫(u) - ⟪I, -1⟫(u)) × (⟪I, 1⟫(u) - ⟪I, -1⟫(u))
                        + (⟪J, 1⟫(u) - ⟪J, -1⟫(u)) × (⟪J, 1⟫(u) - ⟪J, -1⟫(u)));
  lap ← -4.0 × u + ⟪I, -1⟫(u) + ⟪I, 1⟫(u) + ⟪J, -1⟫(u) + ⟪J, 1⟫(u);
  flux ← kh × lap;
  out ← u - 0.1 × (-4.0 × flux + ⟪I, -1⟫(flux) + ⟪I, 1⟫(flux) + ⟪J, -1⟫(flux)
                   + ⟪J, 1⟫(flux))
}
"""


def _lap(x):
    return -4.0 * x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]


def numpy_lap_of_lap(out, inp):
    out[...] = _lap(_lap(inp))


def numpy_diffusion(out, u):
    di = u[2:, 1:-1] - u[:-2, 1:-1]
    dj = u[1:-1, 2:] - u[1:-1, :-2]
    kh = 0.05 + 0.1 * np.sqrt(di * di + dj * dj)           # halo 2
    lap = _lap(u)                                          # halo 2
    flux = (kh * lap)[1:-1, 1:-1]                          # halo 1
    out[...] = u[3:-3, 3:-3] - 0.1 * _lap(flux)


def numpy_laplacian(out, inp):
    out[...] = (-4.0 * inp[1:-1, 1:-1] + inp[:-2, 1:-1] + inp[2:, 1:-1]
                + inp[1:-1, :-2] + inp[1:-1, 2:])


def numpy_tridiagonal(a, b, c, d, x):
    n = a.shape[2]
    cp, dp = np.empty_like(a), np.empty_like(a)
    cp[:, :, 0] = c[:, :, 0] / b[:, :, 0]
    dp[:, :, 0] = d[:, :, 0] / b[:, :, 0]
    for k in range(1, n):
        den = b[:, :, k] - a[:, :, k] * cp[:, :, k - 1]
        cp[:, :, k] = c[:, :, k] / den
        dp[:, :, k] = (d[:, :, k] - a[:, :, k] * dp[:, :, k - 1]) / den
    x[:, :, n - 1] = dp[:, :, n - 1]
    for k in range(n - 2, -1, -1):
        x[:, :, k] = dp[:, :, k] - cp[:, :, k] * x[:, :, k + 1]


def numpy_nabla(out, pp, S_MXX, S_MYY, sign, vol, E2V, V2E):
    present = V2E >= 0
    idx = np.where(present, V2E, 0)
    pe = 0.5 * (pp[np.where(E2V[:, 0] >= 0, E2V[:, 0], 0)]
                + pp[np.where(E2V[:, 1] >= 0, E2V[:, 1], 0)])
    for comp, s_m in zip(out, (S_MXX, S_MYY)):
        flux = (s_m * pe)[idx]
        comp[...] = np.where(present, flux * sign, 0.0).sum(axis=1) / vol


def numpy_grad_levels(out, pp, inv_len, E2V):
    out[...] = (pp[E2V[:, 1]] - pp[E2V[:, 0]]) * inv_len[:, None]


def numpy_div_levels(out, pp, S_M, sign, E2V, V2E):
    pe = S_M[:, None] * (0.5 * (pp[E2V[:, 0]] + pp[E2V[:, 1]]))       # (E, L)
    out[...] = np.einsum("vnk,vn->vk", pe[V2E], sign)


def previous_pipeline(prog) -> CompiledProgram:
    """The program compiled with the default pipeline minus the passes in ``NEW``."""
    sdfg = lower(tir.check(prog), fused=True).sdfg
    for p in PIPELINES["default"]:
        if p.__name__ not in NEW:
            p(sdfg)
    return CompiledProgram.from_sdfg(prog, sdfg)


class OtherLoad:
    """The share of all CPUs that processes other than this one use between
    :meth:`start` and :meth:`share` (NaN where ``/proc/stat`` is missing)."""

    def start(self) -> None:
        self.t0 = (self._busy(), self._own(), time.perf_counter())

    def share(self) -> float:
        busy0, own0, wall0 = self.t0
        wall = (time.perf_counter() - wall0) * (os.cpu_count() or 1)
        return ((self._busy() - busy0) - (self._own() - own0)) / wall

    @staticmethod
    def _busy() -> float:
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:9]]
        except OSError:
            return float("nan")
        idle = v[3] + v[4]                         # idle, iowait
        return (sum(v) - idle) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system


def timed(fn) -> tuple[float, float]:
    """(wall, process CPU) seconds of one call."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def whole_median(samples, threads: int) -> tuple[float, int]:
    """Median wall time of the calls during which all ``threads`` ran, and their count."""
    walls = [w for w, c in samples if c >= 0.85 * threads * w]
    return (float(np.median(walls)) if walls else float("nan")), len(walls)


def ratio_text(xs) -> str:
    xs = np.asarray(xs)
    return f"{np.median(xs):5.2f} ({xs.min():.2f}–{xs.max():.2f})"


def case(name, src, sizes, numpy_fn, opts, probe, mesh=False):
    prog = tir.parse(src)
    args = random_arguments(prog, sizes=sizes, seed=0, absent_fraction=0.0 if not mesh else 0.02)
    if name.startswith("tridiagonal"):
        args["b"] += 4.0          # diagonally dominant, so the system is well conditioned
    if mesh:                      # no absent edge ends (the NumPy version gathers them)
        args["E2V"] = np.abs(args["E2V"])
    if mesh == "torus":           # numbered like a real mesh: neighbours have nearby numbers
        from _common import torus_mesh_tables
        tables = dict(zip(("E2V", "V2E"), torus_mesh_tables(sizes["V"])))
        args.update({k: v for k, v in tables.items() if k in args})
    variants = {"compiled": tir.compile(prog), "previous": previous_pipeline(prog)}
    arg_sets = {k: clone(args) for k in variants}
    ref = clone(args)
    numpy_fn(**ref)
    outs = [k for k in ("out", "x") if k in args]
    err = 0.0
    for k, fn in variants.items():
        fn(**arg_sets[k])
        err = max([err] + [float(np.nanmax(np.abs(np.asarray(arg_sets[k][o])
                                                   - np.asarray(ref[o])))) for o in outs])
    calls = {"compiled": lambda: variants["compiled"](**arg_sets["compiled"]),
             "previous": lambda: variants["previous"](**arg_sets["previous"]),
             "numpy": lambda: numpy_fn(**ref),
             "regular": probe.regular, "streaming": probe.streaming}
    for fn in calls.values():
        fn()
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in calls}
    load = OtherLoad()
    load.start()
    for _ in range(opts.repeat):               # interleaved rounds
        for k, fn in calls.items():
            samples[k].append(timed(fn))
    others = load.share()
    if opts.clock == "cpu":
        t = {k: [c / (1 if k == "numpy" else opts.threads) for _, c in v]
             for k, v in samples.items()}
    else:
        t = {k: [w for w, _ in v] for k, v in samples.items()}
    whole = {k: whole_median(samples[k], opts.threads)
             for k in ("compiled", "regular", "streaming")}
    t_i = min(timed(lambda: tir.interpret(prog, **clone(args)))[opts.clock == "cpu"]
              for _ in range(opts.interp_repeat))
    nbytes = sum(np.asarray(a).nbytes for k, a in args.items()
                 if isinstance(a, np.ndarray) or isinstance(a, tuple))
    c, prev = np.array(t["compiled"]), np.array(t["previous"])
    bw = nbytes / c
    return {
        "case": name, "ms": np.median(c) * 1e3, "err": err,
        "previous/compiled": prev / c,
        "numpy/compiled": np.array(t["numpy"]) / c,
        "interp/compiled": np.array([t_i / np.median(c)]),
        "of regular probe": bw / (probe.bytes / np.array(t["regular"])),
        "of streaming probe": bw / (probe.bytes / np.array(t["streaming"])),
        "GB/s": bw / 1e9, "others": others,
        "whole": [nbytes / whole["compiled"][0] / (probe.bytes / whole[p][0])
                  for p in ("regular", "streaming")],
        "whole n": min(n for _, n in whole.values()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--interp-repeat", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated case name prefixes")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time calls by wall-clock or by CPU time per thread")
    opts = ap.parse_args()
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    opts.threads = int(threads)
    if opts.clock == "cpu":              # read when the OpenMP runtime loads (below)
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from copy_probe import CopyProbe
    probe = CopyProbe(258 * 258 * 80)
    weather = {"N": 256, "M": 256, "L": 80}
    cases = [
        ("laplacian 256x256x80", LAPLACIAN, weather, numpy_laplacian, False),
        ("tridiagonal 128x128x80", TRIDIAGONAL, {"N": 128, "M": 128, "L": 80},
         numpy_tridiagonal, False),
        ("nabla V=200k E=600k mesh-ordered", NABLA, {"V": 200_000, "E": 600_000}, numpy_nabla,
         "torus"),
        ("nabla V=200k E=600k random", NABLA, {"V": 200_000, "E": 600_000}, numpy_nabla, True),
        ("div levels V=20k E=60k L=80 mesh-ordered", DIV_LEVELS,
         {"V": 20_000, "E": 60_000, "L": 80}, numpy_div_levels, "torus"),
        ("grad levels E=60k L=80 mesh-ordered", GRAD_LEVELS,
         {"V": 20_000, "E": 60_000, "L": 80}, numpy_grad_levels, "torus"),
        ("lap-of-lap 256x256x80", LAP_OF_LAP, weather, numpy_lap_of_lap, False),
        ("diffusion 256x256x80", DIFFUSION, weather, numpy_diffusion, False),
    ]
    only = [p for p in opts.only.split(",") if p]
    rows = [case(n, s, z, f, opts, probe, mesh=m) for n, s, z, f, m in cases
            if not only or any(n.startswith(p) for p in only)]
    print(f"threads: {threads}; rounds: {opts.repeat}; ratios: median (min–max over rounds); "
          f"clock: {opts.clock}; load average {os.getloadavg()[0]:.1f}")
    cols = ["previous/compiled", "numpy/compiled", "interp/compiled", "of regular probe",
            "of streaming probe", "GB/s"]
    print(f"{'case':24s} {'ms':>7s} " + " ".join(f"{c:>20s}" for c in cols)
          + "  max err  others  whole: of regular, of streaming (calls)")
    for r in rows:
        print(f"{r['case']:24s} {r['ms']:7.2f} "
              + " ".join(f"{ratio_text(r[c]):>20s}" for c in cols)
              + f"  {r['err']:.1e}  {r['others']:5.0%}"
              + "  {:.2f}, {:.2f} ({})".format(*r["whole"], r["whole n"]))


if __name__ == "__main__":
    main()
