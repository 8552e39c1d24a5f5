"""Temporaries sized by program-level loop variables.

A temporary such as ``pre: tensor<float, Cell[0:N], K[0:t+1]>`` exists anew in
every iteration of the loop over ``t``, on that iteration's interval.  The
interpreter allocates it per iteration; compiled code sizes its storage
before the loop, to the hull of the intervals over the loop's range, so one
binary serves every loop range.  Interpreter, compiled code and hand-written
NumPy agree; the call-time checks cover every iteration.
"""

from __future__ import annotations

import dace
import numpy as np
import pytest
import sympy

import tensorir_dace as tir
from conftest import compiled, parsed
from tensorir_dace.frontend import Tensor, dims, program
from tensorir_dace.runtime.cache import compile_count

SRC = """
loop_temporaries(x: tensor<float, Cell[0:N], K[0:L]>, out: tensor<float, Cell[0:N], K[0:L]>,
                 acc: tensor<float, Cell[0:N], K[0:L]>, n: tensor<int>, m: tensor<int>) {
  w: tensor<float, Cell[0:N], K[t:t+2]>;
  for (t in 0:n) {
    pre: tensor<float, Cell[0:N], K[0:t+1]>;
    pre ← scan(λ(c: tensor<float, Cell[0:N]>, a: tensor<float, Cell[0:N]>) → c + a, True, 0.0)(
        subset(x, K[0:t+1]));
    w ← subset(x, K[t:t+2]) − 1.0;
    if (t % 2 == 0) { subset(acc, K[t:t+1]) ← subset(pre, K[t:t+1]) }
    else { subset(acc, K[t:t+1]) ← −subset(pre, K[t:t+1]) }
    for (s in 0:t) {
      part: tensor<float, Cell[0:N], K[s:t+1]>;
      part ← subset(pre, K[s:t+1]) × 0.5;
      subset(acc, K[s:s+1]) ← subset(acc, K[s:s+1]) + subset(part, K[s:s+1])
    }
    subset(out, K[t:t+1]) ← subset(pre, K[t:t+1])
                            + subset(w, K[t:t+1]) × subset(⟪K, 1⟫(w), K[t:t+1])
  }
  for (t in m:L−1) {
    w ← subset(x, K[t:t+2]) × 2.0;
    subset(out, K[t:t+1]) ← subset(out, K[t:t+1]) + subset(⟪K, 1⟫(w), K[t:t+1])
  }
}
"""
N, L = 5, 7
RNG = np.random.default_rng(11)
X = RNG.random((N, L))


def numpy_ref(x, out, acc, n, m):
    """The program by hand: a prefix sum per step, a two-level window, nested steps."""
    for t in range(n):
        pre = np.cumsum(x[:, :t + 1], axis=1)
        w = x[:, t:t + 2] - 1.0
        acc[:, t] = pre[:, t] if t % 2 == 0 else -pre[:, t]
        for s in range(t):
            acc[:, s] += 0.5 * pre[:, s]
        out[:, t] = pre[:, t] + w[:, 0] * w[:, 1]
    for t in range(m, L - 1):
        out[:, t] += 2.0 * x[:, t + 1]


def run_all(fn, n, m):
    """(interpreter, compiled, NumPy) results for one loop range."""
    results = []
    for run in (lambda **kw: tir.interpret(parsed(SRC), **kw), fn, None):
        out, acc = np.ones((N, L)), np.ones((N, L))
        if run is None:
            numpy_ref(X, out, acc, n, m)
        else:
            run(x=X, out=out, acc=acc, n=n, m=m)
        results.append((out, acc))
    return results


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_loop_sized_temporaries_match_numpy_one_binary(optimize):
    fn = compiled(SRC, optimize)
    fn(x=X, out=np.ones((N, L)), acc=np.ones((N, L)), n=1, m=5)
    before = compile_count()
    # (0, L - 1) and (0, 9): both loops run no iteration
    for n, m in [(3, 2), (L - 1, 0), (0, L - 1), (0, 9), (4, 1)]:
        interp, comp, ref = run_all(fn, n, m)
        for got in (interp, comp):
            np.testing.assert_allclose(got[0], ref[0], rtol=1e-13, err_msg=f"{n} {m}")
            np.testing.assert_allclose(got[1], ref[1], rtol=1e-13, err_msg=f"{n} {m}")
    assert compile_count() == before


@pytest.mark.parametrize("n, m, bad", [(L, 3, "t \\+ 2 = 8"),   # w of the last step: K[6:8]
                                       (2, -1, "t = -1")])      # the second loop from -1
def test_every_iteration_is_checked_before_anything_runs(n, m, bad):
    for run in (lambda **kw: tir.interpret(parsed(SRC), **kw), compiled(SRC)):
        out, acc = np.zeros((N, L)), np.zeros((N, L))
        with pytest.raises(tir.ArgumentError, match=bad):
            run(x=X, out=out, acc=acc, n=n, m=m)
        assert not out.any() and not acc.any()


def test_storage_is_sized_before_the_loop_by_the_hull():
    sdfg = tir.to_sdfg(parsed(SRC))
    shapes = {name: desc.shape for name, desc in sdfg.arrays.items()
              if name in ("w", "pre", "part", "_w")}   # w has arrays of its own in each loop
    assert len(shapes) == 4
    for name, shape in shapes.items():
        free = {str(s) for d in shape for s in sympy.sympify(d).free_symbols}
        assert free <= {"N", "L", "n", "m"}, (name, shape)
    assert str(shapes["pre"][1]) == "Max(0, n)"        # K[0:t+1] for t < n


def test_round_trip_through_the_text_syntax():
    p = parsed(SRC)
    assert tir.parse(tir.format(p)) == p


@pytest.mark.parametrize("src, message", [
    ("p(x: tensor<float, K[0:M]>, n: tensor<int>) { tmp: tensor<float, K[0:t+1]>; "
     "for (t in 0:n) { tmp ← subset(x, K[0:t+1]) }; x ← x + subset(tmp, K[0:1]) }",
     "exists only inside a loop over 't'"),
    ("p(x: tensor<float, K[0:M]>, n: tensor<int>) { for (t in 0:n) { "
     "tmp: tensor<float, K[0:t×t]>; tmp ← subset(x, K[0:t×t]) } }",
     "grow or shrink steadily with the loop variable 't'"),
])
def test_misplaced_or_unsizable_loop_temporaries_are_type_errors(src, message):
    with pytest.raises(tir.TypeCheckError, match=message):
        tir.check(tir.parse(src))


# =========================================================================== Python front end

Cell, KD = dims("Cell K")


@program
def band(x: Tensor[float, Cell, KD], out: Tensor[float, Cell, KD], k0: int, k1: int):
    tmp: Tensor[float, Cell, KD[k0:k1]] = 2.0 * x
    tmp = tmp + x(KD - 1)                 # the same temporary: it keeps its interval
    out[:, k0:k1] = tmp + 1.0


@program
def window(x: Tensor[float, Cell, KD], out: Tensor[float, Cell, KD], n: int):
    for t in range(n):
        w: Tensor[float, Cell, KD[t:t + 2]] = x - 1.0
        out[:, t:t + 1] = w * w(KD + 1)


def test_frontend_temporary_on_a_runtime_interval_one_binary():
    assert [str(t.type.dims[1]) for t in band.ir.temporaries] == ["K[k0:k1]"]   # one temporary
    band(X, np.zeros((N, L)), k0=1, k1=2)
    before = compile_count()
    for k0, k1 in [(1, L), (3, 5), (4, 4), (6, 2)]:
        ref = np.zeros((N, L))
        if k0 < k1:
            ref[:, k0:k1] = 2.0 * X[:, k0:k1] + X[:, k0 - 1:k1 - 1] + 1.0
        for backend in ("interpreter", "compiled"):
            out = np.zeros((N, L))
            band(X, out, k0=k0, k1=k1, backend=backend)
            np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{backend} {k0} {k1}")
    assert compile_count() == before
    for backend in ("interpreter", "compiled"):    # K - 1 at level 0 is not defined
        out = np.zeros((N, L))
        with pytest.raises(tir.ArgumentError, match="k0 = 0"):
            band(X, out, k0=0, k1=3, backend=backend)
        assert not out.any()


def test_frontend_temporary_sized_by_a_loop_variable_one_binary():
    window(X, np.zeros((N, L)), n=1)
    before = compile_count()
    for n in (3, 0, L - 1):
        ref = np.zeros((N, L))
        ref[:, :n] = (X[:, :n] - 1.0) * (X[:, 1:n + 1] - 1.0)
        for backend in ("interpreter", "compiled"):
            out = np.zeros((N, L))
            window(X, out, n=n, backend=backend)
            np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{backend} {n}")
    assert compile_count() == before
    for backend in ("interpreter", "compiled"):    # the last step's window K[6:8]
        out = np.zeros((N, L))
        with pytest.raises(tir.ArgumentError, match="t \\+ 2 = 8"):
            window(X, out, n=L, backend=backend)
        assert not out.any()


def test_frontend_programs_round_trip_through_the_text_syntax():
    for prog in (band, window):
        assert tir.parse(tir.format(prog.ir)) == prog.ir


def test_frontend_interval_bound_must_be_an_integer():
    @program
    def bad(x: Tensor[float, Cell, KD], out: Tensor[float, Cell, KD], f: float):
        tmp: Tensor[float, Cell, KD[0:f]] = x
        out[...] = tmp

    with pytest.raises(tir.TensorIRError, match="an interval bound must be an integer"):
        bad(X, np.zeros((N, L)), f=1.0, backend="interpreter")


# =========================================================================== random programs

def random_loop_program(seed: int) -> tuple[str, list]:
    """A loop whose temporaries use bounds ``u×t + a`` (u in 1, -1, 2): each
    writes a window of its interval into ``out``.  Returns the text and, per
    temporary, (u, a, b, p, q, scale) for the NumPy reference."""
    rng = np.random.default_rng(seed)
    parts, decls, temps = [], [], []
    for i in range(int(rng.integers(1, 4))):
        u = int(rng.choice([1, -1, 2]))
        a = int(rng.integers(-2, 3))
        b = a + int(rng.integers(1, 4))
        p = int(rng.integers(a, b))
        q = int(rng.integers(p + 1, b + 1))
        scale = float(rng.integers(1, 5))
        ut = {1: "t", -1: "−t", 2: "2×t"}[u]

        def rng_(lo, hi, ut=ut):
            return f"K[{ut} + {lo}:{ut} + {hi}]".replace("+ -", "− ")
        decls.append(f"tmp{i}: tensor<float, {rng_(a, b)}>;")
        parts.append(f"tmp{i} ← subset(x, {rng_(a, b)}) × {scale};\n"
                     f"    subset(out, {rng_(p, q)}) ← subset(out, {rng_(p, q)}) + "
                     f"subset(tmp{i}, {rng_(p, q)})")
        temps.append((u, a, b, p, q, scale))
    body = ";\n    ".join(parts)
    src = (f"rand{seed}(x: tensor<float, K[0:M]>, out: tensor<float, K[0:M]>, "
           f"n0: tensor<int>, n1: tensor<int>) {{\n  for (t in n0:n1) {{\n    "
           + "\n    ".join(decls) + "\n    " + body + "\n  }\n}\n")
    return src, temps


def random_loop_numpy(x, out, n0, n1, temps):
    for t in range(n0, n1):
        for u, a, b, p, q, scale in temps:
            lo, hi = u * t + p, u * t + q
            out[lo:hi] += x[lo:hi] * scale


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_loop_temporaries_one_binary(seed):
    src, temps = random_loop_program(seed)
    prog, fn = parsed(src), compiled(src)
    M = 24
    x = np.random.default_rng(seed).random(M)

    def fits(n0, n1):
        return all(0 <= u * t + a and u * t + b <= M for t in range(n0, n1)
                   for u, a, b, *_ in temps)
    ranges = [(n0, n1) for n0 in range(-3, 12) for n1 in range(n0 - 1, n0 + 6)
              if fits(n0, n1)]
    chosen = [ranges[i] for i in np.random.default_rng(seed).choice(len(ranges), 4)]
    chosen.append((5, 5))                                        # no iteration
    fn(x=x, out=np.zeros(M), n0=5, n1=5)
    before = compile_count()
    for n0, n1 in chosen:
        ref, a, b = np.zeros(M), np.zeros(M), np.zeros(M)
        random_loop_numpy(x, ref, n0, n1, temps)
        tir.interpret(prog, x=x, out=a, n0=n0, n1=n1)
        fn(x=x, out=b, n0=n0, n1=n1)
        np.testing.assert_allclose(a, ref, rtol=1e-13, err_msg=f"{src} {n0} {n1}")
        np.testing.assert_allclose(b, ref, rtol=1e-13, err_msg=f"{src} {n0} {n1}")
    assert compile_count() == before
    bad = next(r for r in [(0, 30), (-20, 1), (10, 40)] if not fits(*r))
    for run in (lambda **kw: tir.interpret(prog, **kw), fn):
        out = np.zeros(M)
        with pytest.raises(tir.ArgumentError, match="allowed range"):
            run(x=x, out=out, n0=bad[0], n1=bad[1])
        assert not out.any()


# =========================================================================== fresh every iteration

# Each loop temporary starts every iteration at zero, as the interpreter allocates
# it anew: ``h`` is read before it is written, ``g`` is written on part of its
# interval only, ``e`` only on even steps; ``w`` is written first and needs no
# zeros.  The intervals shrink, so the previous step wrote the level read.
FRESH = """
fresh(x: tensor<float, K[0:L]>, o: tensor<float, K[0:L]>, q: tensor<float, K[0:L]>,
      r: tensor<float, K[0:L]>, y: tensor<float, K[0:L]>, n: tensor<int>) {
  for (t in 0:n) {
    h: tensor<float, K[t:L]>;
    g: tensor<float, K[t:L]>;
    e: tensor<float, K[t:L]>;
    w: tensor<float, K[t:L]>;
    subset(o, K[t:t+1]) ← subset(h, K[t:t+1]) + subset(x, K[t:t+1]);
    h ← subset(x, K[t:L]) × 2.0;
    subset(g, K[t+1:L]) ← subset(x, K[t+1:L]);
    subset(q, K[t:t+1]) ← subset(g, K[t:t+1]);
    if (t % 2 == 0) { e ← subset(x, K[t:L]) };
    subset(r, K[t:t+1]) ← subset(e, K[t:t+1]) + 1.0;
    w ← subset(x, K[t:L]) × 3.0;
    subset(y, K[t:t+1]) ← subset(w, K[t:t+1]) + subset(h, K[t:t+1])
  }
}
"""


def fresh_numpy(x, o, q, r, y, n):
    """The program by hand: every temporary is new (zeros) in each step."""
    for t in range(n):
        o[t] = x[t]
        q[t] = 0.0
        r[t] = (x[t] if t % 2 == 0 else 0.0) + 1.0
        y[t] = 5.0 * x[t]


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_loop_temporaries_read_before_written_hold_zeros_every_iteration(optimize):
    fn = compiled(FRESH, optimize)
    for n in (0, 1, 4, L):
        results = []
        for run in (lambda **kw: tir.interpret(parsed(FRESH), **kw), fn, None):
            outs = {k: np.full(L, 7.0) for k in "oqry"}
            if run is None:
                fresh_numpy(X[0], n=n, **outs)
            else:
                run(x=X[0], n=n, **outs)
            results.append(outs)
        for backend, got in zip(("interpreter", "compiled"), results):
            for k in "oqry":
                np.testing.assert_allclose(got[k], results[2][k], rtol=1e-13,
                                           err_msg=f"{backend} {k} n={n}")


def test_only_temporaries_read_before_written_are_zero_filled():
    """Zeros cost a pass over the temporary: ``w``, written first, gets none."""
    sdfg = tir.to_sdfg(parsed(FRESH))
    filled = sorted(node.label for node, _ in sdfg.all_nodes_recursive()
                    if isinstance(node, dace.nodes.Tasklet) and node.label.startswith("zero_"))
    assert len(filled) == 3, filled
