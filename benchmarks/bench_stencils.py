"""Compiled Tensor IR against hand-written NumPy and the NumPy interpreter.

    python benchmarks/bench_stencils.py [--repeat 20]

Everything is measured side by side in one run (median of ``--repeat``
calls after warm-up); the figures that matter are the ratios.  A NumPy
copy of the Laplacian's input gives the memory bandwidth of this run for
reference.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import tensorir_dace as tir
from tensorir_dace.testing import clone, random_arguments

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


def median(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def case(name, src, sizes, numpy_fn, repeat, interp_repeat, mesh=False):
    prog = tir.parse(src)
    args = random_arguments(prog, sizes=sizes, seed=0, absent_fraction=0.0 if not mesh else 0.02)
    if name.startswith("tridiagonal"):
        args["b"] += 4.0          # diagonally dominant, so the system is well conditioned
    if mesh:                      # no absent edge ends (the NumPy version gathers them)
        args["E2V"] = np.abs(args["E2V"])
    compiled = tir.compile(prog)
    ref = clone(args)
    compiled(**args)
    numpy_fn(**ref)
    outs = [k for k in ("out", "x") if k in args]
    err = max(float(np.max(np.abs(np.asarray(args[k]) - np.asarray(ref[k])))) for k in outs)
    t_c = median(lambda: compiled(**args), repeat)
    t_n = median(lambda: numpy_fn(**ref), repeat)
    t_i = median(lambda: tir.interpret(prog, **ref), interp_repeat)
    return name, t_c, t_n, t_i, err


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--interp-repeat", type=int, default=3)
    opts = ap.parse_args()
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    rows = [
        case("laplacian 256x256x80", LAPLACIAN, {"N": 256, "M": 256, "L": 80},
             numpy_laplacian, opts.repeat, opts.interp_repeat),
        case("tridiagonal 128x128x80", TRIDIAGONAL, {"N": 128, "M": 128, "L": 80},
             numpy_tridiagonal, opts.repeat, opts.interp_repeat),
        case("nabla V=200k E=600k", NABLA, {"V": 200_000, "E": 600_000},
             numpy_nabla, opts.repeat, opts.interp_repeat, mesh=True),
    ]
    src = np.random.rand(258, 258, 80)
    dst = np.empty_like(src)
    t_copy = median(lambda: np.copyto(dst, src), opts.repeat)
    print(f"threads: {threads}; NumPy copy of 42 MB: {2 * src.nbytes / t_copy / 1e9:.1f} GB/s")
    print(f"{'case':26s} {'compiled':>10s} {'numpy':>10s} {'interp.':>10s} "
          f"{'numpy/comp':>11s} {'interp/comp':>12s} {'max err':>9s}")
    for name, t_c, t_n, t_i, err in rows:
        print(f"{name:26s} {t_c * 1e3:8.2f}ms {t_n * 1e3:8.2f}ms {t_i * 1e3:8.2f}ms "
              f"{t_n / t_c:10.1f}x {t_i / t_c:11.1f}x {err:9.1e}")
    lap_bytes = (258 * 258 * 80 + 256 * 256 * 80) * 8
    print(f"laplacian compiled: {lap_bytes / rows[0][1] / 1e9:.1f} GB/s effective")


if __name__ == "__main__":
    main()
