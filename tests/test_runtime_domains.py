"""Runtime domains: interval bounds given by scalar int parameters and loop variables.

Interpreter, compiled code and hand-written NumPy agree on an unstructured
mesh whose neighbour table holds -1; several bound values run through one
binary; empty and inverted ranges write nothing; out-of-range bounds and
uncovered reads are an ArgumentError before anything is written.
"""

from __future__ import annotations

import pathlib
import re
import runpy

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import compiled, example, parsed
from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (
    Tensor,
    concat_where,
    dims,
    function,
    maximum,
    minimum,
    neighbor_dim,
    neighbor_sum,
    program,
)
from tensorir_dace.runtime.cache import compile_count

N, L = 9, 6
RNG = np.random.default_rng(7)
THETA = RNG.random((N, L)) + 0.5
C2E2C = RNG.integers(0, N, (N, 3))
C2E2C[RNG.random((N, 3)) < 0.25] = -1
assert (C2E2C == -1).any()


def lateral_numpy(out, hs, he, vs, ve):
    """The lateral-boundary example, by hand."""
    nb = np.where(C2E2C[:, :, None] >= 0, THETA[np.maximum(C2E2C, 0)], 0.0).sum(axis=1)
    full = np.full((N, L), np.nan)
    full[:, 1:] = nb[:, 1:] - 3.0 * THETA[:, 1:] + 0.5 * THETA[:, :-1]
    if hs < he and vs < ve:
        out[hs:he, vs:ve] = full[hs:he, vs:ve]


def vertical_numpy(w, nlev):
    out = np.empty_like(w)
    out[:, 0] = 0.0
    out[:, 1:nlev] = 0.5 * (w[:, 0:nlev - 1] + w[:, 2:nlev + 1])
    out[:, nlev:] = w[:, nlev:] - w[:, nlev - 1:-1]
    return out


LATERAL_BOUNDS = [(2, 7, 1, 6), (0, 9, 3, 4), (5, 6, 1, 2)]
EMPTY_BOUNDS = [(4, 4, 1, 6), (7, 2, 1, 6), (0, 9, 5, 1), (20, 3, 1, 6)]


@pytest.fixture(scope="module")
def lateral():
    return parsed(example("lateral_boundary")), compiled(example("lateral_boundary"))


def run_both(prog, fn, base, **kw):
    a, b = base.copy(), base.copy()
    tir.interpret(prog, theta=THETA, C2E2C=C2E2C, out=a, **kw)
    fn(theta=THETA, C2E2C=C2E2C, out=b, **kw)
    return a, b


def bounds(hs, he, vs, ve):
    return {"horizontal_start": hs, "horizontal_end": he, "vertical_start": vs,
            "vertical_end": ve}


def test_lateral_boundary_matches_numpy_for_several_bounds_one_binary(lateral):
    prog, fn = lateral
    base = RNG.random((N, L))
    fn(theta=THETA, C2E2C=C2E2C, out=base.copy(), **bounds(*LATERAL_BOUNDS[0]))
    before = compile_count()
    for hs, he, vs, ve in LATERAL_BOUNDS:
        a, b = run_both(prog, fn, base, **bounds(hs, he, vs, ve))
        ref = base.copy()
        lateral_numpy(ref, hs, he, vs, ve)
        np.testing.assert_allclose(a, ref, rtol=1e-13)
        np.testing.assert_allclose(b, ref, rtol=1e-13)
        outside = np.ones((N, L), bool)
        outside[hs:he, vs:ve] = False
        assert np.array_equal(b[outside], base[outside])     # untouched bits
    assert compile_count() == before


@pytest.mark.parametrize("hs, he, vs, ve", EMPTY_BOUNDS)
def test_empty_and_inverted_ranges_write_nothing(lateral, hs, he, vs, ve):
    prog, fn = lateral
    base = RNG.random((N, L))
    a, b = run_both(prog, fn, base, **bounds(hs, he, vs, ve))
    assert np.array_equal(a, base) and np.array_equal(b, base)


@pytest.mark.parametrize("hs, he, vs, ve, bad", [
    (-1, 4, 1, 6, "horizontal_start = -1"),      # outside Cell[0:N]
    (2, 10, 1, 6, "horizontal_end = 10"),
    (2, 4, 1, 7, "vertical_end = 7"),
    (2, 4, 0, 6, "vertical_start = 0"),           # reads K-1 at level -1: uncovered
])
def test_out_of_range_and_uncovered_bounds_are_argument_errors(lateral, hs, he, vs, ve, bad):
    prog, fn = lateral
    base = RNG.random((N, L))
    for run in (lambda o: tir.interpret(prog, theta=THETA, C2E2C=C2E2C, out=o,
                                        **bounds(hs, he, vs, ve)),
                lambda o: fn(theta=THETA, C2E2C=C2E2C, out=o, **bounds(hs, he, vs, ve))):
        out = base.copy()
        with pytest.raises(tir.ArgumentError, match=bad) as info:
            run(out)
        assert "allowed range" in str(info.value)
        assert np.array_equal(out, base)


def test_vertical_nlev_is_lazy_and_matches_numpy():
    prog, fn = parsed(example("vertical_nlev")), compiled(example("vertical_nlev"))
    w = RNG.random((N, L))
    fn(w=w, out=np.zeros((N, L)), nlev=2)
    before = compile_count()
    for nlev in (1, 3, L - 1):
        a, b = np.zeros((N, L)), np.zeros((N, L))
        tir.interpret(prog, w=w, out=a, nlev=nlev)
        fn(w=w, out=b, nlev=nlev)
        ref = vertical_numpy(w, nlev)
        np.testing.assert_allclose(a, ref, rtol=1e-13)
        np.testing.assert_allclose(b, ref, rtol=1e-13)
    assert compile_count() == before
    for nlev in (0, L):     # the centred piece would read K+1 below the last level
        out = np.zeros((N, L))
        with pytest.raises(tir.ArgumentError, match=f"nlev = {nlev}"):
            fn(w=w, out=out, nlev=nlev)
        with pytest.raises(tir.ArgumentError, match=f"nlev = {nlev}"):
            tir.interpret(prog, w=w, out=out, nlev=nlev)
        assert not out.any()


LOOPS = """
loops(x: tensor<float, K[0:M]>, out: tensor<float, K[0:M]>, k0: tensor<int>,
      k1: tensor<int>, n: tensor<int>) {
  tmp: tensor<float, K[k0:k1]>;
  subset(tmp, K[k0:k1]) <- x + 1.0;
  subset(out, K[k0:k1]) <- tmp * 3.0;
  for (t in 0:n) { subset(out, K[t:t+1]) <- <<K, 1>>(subset(out, K[t+1:t+2])) + 100.0 }
}
"""


def loops_numpy(x, out, k0, k1, n):
    if k0 < k1:
        out[k0:k1] = (x[k0:k1] + 1.0) * 3.0
    for t in range(n):
        out[t] = out[t + 1] + 100.0


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_loop_variables_and_runtime_temporaries(optimize):
    prog, fn = parsed(LOOPS), compiled(LOOPS, optimize)
    x = RNG.random(8)
    fn(x=x, out=np.zeros(8), k0=1, k1=3, n=1)
    before = compile_count()
    for k0, k1, n in [(2, 6, 3), (5, 2, 7), (0, 8, 0)]:
        a, b, ref = np.zeros(8), np.zeros(8), np.zeros(8)
        tir.interpret(prog, x=x, out=a, k0=k0, k1=k1, n=n)
        fn(x=x, out=b, k0=k0, k1=k1, n=n)
        loops_numpy(x, ref, k0, k1, n)
        np.testing.assert_allclose(a, ref, rtol=1e-13)
        np.testing.assert_allclose(b, ref, rtol=1e-13)
    assert compile_count() == before
    out = np.zeros(8)
    with pytest.raises(tir.ArgumentError, match="t \\+ 2 = 9"):   # the last step reads K[8]
        fn(x=x, out=out, k0=0, k1=0, n=8)
    assert not out.any()


@pytest.mark.parametrize("src, message", [
    ("p(x: tensor<float, I[0:n]>, n: tensor<int>) { x <- x }",
     "cannot be used in a parameter type"),
    ("p(x: tensor<float, I[0:N]>, a: tensor<int>) { subset(x, I[a:N+1]) <- 1.0 }",
     "not within I\\[0:N\\] for any value"),
    ("p(x: tensor<float, I[0:N]>, a: tensor<int>) { subset(x, I[a:N+1]) <- 1.0 }",
     "subset I\\[a:N \\+ 1\\] at 1:57 is not within I\\[0:N\\] for any value"),
    ("p(x: tensor<float, I[0:N]>, f: tensor<float>) { subset(x, I[f:N]) <- 1.0 }",
     "cannot be used in a bound"),
    ("p(x: tensor<float, I[0:N]>, a: tensor<int>) { subset(x, I[a:a+1]) <- "
     + "subset(x, I[a+1:a+2]) }", "for every value"),
])
def test_type_errors(src, message):
    with pytest.raises(tir.TypeCheckError, match=message):
        tir.check(tir.parse(src))


CLAMPED = """
clamped(x: tensor<float, Cell[0:N], K[0:L]>, out: tensor<float, Cell[0:N], K[0:L]>,
        nlev: tensor<int>) {
  out ← concat(K, subset(⟪K, 2⟫(x) − x, K[0:Min(L, Max(0, nlev − 2))]),
                  subset(x × 3.0, K[Min(L, Max(0, nlev − 2)):Min(L, Max(0, nlev))]),
                  subset(x − 1.0, K[Min(L, Max(0, nlev)):L]))
}
"""


def test_clamped_lazy_concat_pieces_reading_two_levels_ahead():
    """Pieces clamped to the interval (Max/Min bounds): nlev outside [0, L] gives
    empty pieces; the K+2 piece is only evaluated where it can read."""
    prog, fn = parsed(CLAMPED), compiled(CLAMPED)
    x = RNG.random((N, L))
    fn(x=x, out=np.zeros((N, L)), nlev=3)
    before = compile_count()
    for nlev in (-1, 0, 1, 3, L):
        c, d = np.clip(nlev - 2, 0, L), np.clip(nlev, 0, L)
        ref = np.empty((N, L))
        ref[:, :c] = x[:, 2:c + 2] - x[:, :c]
        ref[:, c:d] = 3.0 * x[:, c:d]
        ref[:, d:] = x[:, d:] - 1.0
        a, b = np.zeros((N, L)), np.zeros((N, L))
        tir.interpret(prog, x=x, out=a, nlev=nlev)
        fn(x=x, out=b, nlev=nlev)
        np.testing.assert_allclose(a, ref, rtol=1e-13)
        np.testing.assert_allclose(b, ref, rtol=1e-13)
    assert compile_count() == before
    out = np.zeros((N, L))
    with pytest.raises(tir.ArgumentError, match="nlev=8"):   # K+2 beyond the last level
        fn(x=x, out=out, nlev=L + 2)
    assert not out.any()


# =========================================================================== Python front end

Cell, KL = dims("Cell K")
C2E2CDim = neighbor_dim(Cell, 3)


@function
def lateral_value(theta: Tensor[float, Cell, KL], c2e2c: Tensor[int, Cell, C2E2CDim]):
    return neighbor_sum(theta(c2e2c), axis=C2E2CDim) - 3.0 * theta + 0.5 * theta(KL - 1)


@program
def lateral_slices(theta: Tensor[float, Cell, KL], c2e2c: Tensor[int, Cell, C2E2CDim],
                   out: Tensor[float, Cell, KL], hs: int, he: int, vs: int, ve: int):
    out[hs:he, vs:ve] = lateral_value(theta, c2e2c)


@program
def lateral_domain(theta: Tensor[float, Cell, KL], c2e2c: Tensor[int, Cell, C2E2CDim],
                   out: Tensor[float, Cell, KL], hs: int, he: int, vs: int, ve: int):
    lateral_value(theta, c2e2c, out=out, domain={Cell: (hs, he), KL: (vs, ve)})


def run_frontend(prog, backend, base, **kw):
    out = base.copy()
    prog(theta=THETA, c2e2c=C2E2C, out=out, backend=backend, **kw)
    return out


@pytest.mark.parametrize("prog", [lateral_slices, lateral_domain], ids=["slices", "domain"])
def test_frontend_runtime_bounds_match_numpy_one_binary(prog):
    base = RNG.random((N, L))
    run_frontend(prog, "compiled", base, hs=0, he=1, vs=1, ve=2)
    before = compile_count()
    for hs, he, vs, ve in LATERAL_BOUNDS + EMPTY_BOUNDS:
        ref = base.copy()
        lateral_numpy(ref, hs, he, vs, ve)
        for backend in ("interpreter", "compiled"):
            got = run_frontend(prog, backend, base, hs=hs, he=he, vs=vs, ve=ve)
            np.testing.assert_allclose(got, ref, rtol=1e-13, err_msg=backend)
    assert compile_count() == before
    for hs, he, vs, ve, bad in [(-1, 4, 1, 6, "hs"), (2, 4, 0, 6, "vs = 0"),
                                (2, 12, 1, 6, "he")]:
        for backend in ("interpreter", "compiled"):
            out = base.copy()
            with pytest.raises(tir.ArgumentError, match=bad):
                prog(theta=THETA, c2e2c=C2E2C, out=out, hs=hs, he=he, vs=vs, ve=ve,
                     backend=backend)
            assert np.array_equal(out, base)


def test_frontend_negative_runtime_slice_bound_is_an_error_even_when_empty():
    out = np.zeros((N, L))
    with pytest.raises(tir.ArgumentError, match="hs = -3"):
        lateral_slices(theta=THETA, c2e2c=C2E2C, out=out, hs=-3, he=-5, vs=1, ve=6,
                       backend="interpreter")


def test_frontend_function_called_with_out_and_domain():
    base = RNG.random((N, L))
    before = None
    for hs, he, vs, ve in LATERAL_BOUNDS + EMPTY_BOUNDS[:2]:
        ref = base.copy()
        lateral_numpy(ref, hs, he, vs, ve)
        out = base.copy()
        lateral_value(THETA, C2E2C, out=out, domain={Cell: (hs, he), KL: (vs, ve)})
        np.testing.assert_allclose(out, ref, rtol=1e-13)
        if before is None:
            before = compile_count()
    assert compile_count() == before
    out = base.copy()       # a dimension left out of domain= is its full interval
    lateral_value(THETA, C2E2C, out=out, domain={KL: (1, L)})
    ref = base.copy()
    lateral_numpy(ref, 0, N, 1, L)
    np.testing.assert_allclose(out, ref, rtol=1e-13)


@program
def vertical_py(w: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], nlev: int):
    out[...] = concat_where(KL == 0, 0.0 * w,
                            concat_where(KL < nlev, 0.5 * (w(KL - 1) + w(KL + 1)),
                                         w - w(KL - 1)))


@program
def window_py(w: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], k0: int, k1: int,
              nlev: int):
    out[...] = concat_where((KL >= k0) & (KL < k1), w * 2.0,
                            concat_where(KL == nlev, -w, w))


def test_frontend_concat_where_with_runtime_conditions_is_lazy_and_clamped():
    w = RNG.random((N, L))
    vertical_py(w=w, out=np.zeros((N, L)), nlev=2)
    window_py(w=w, out=np.zeros((N, L)), k0=1, k1=2, nlev=3)
    before = compile_count()
    for nlev in (1, 3, L - 1):
        for backend in ("interpreter", "compiled"):
            out = np.zeros((N, L))
            vertical_py(w=w, out=out, nlev=nlev, backend=backend)
            np.testing.assert_allclose(out, vertical_numpy(w, nlev), rtol=1e-13)
    for k0, k1, nlev in [(1, 4, 5), (4, 1, L), (-3, 2, -1), (2, 9, 0), (0, L, 2)]:
        ref = w.copy()
        ref[:, max(k0, 0):max(min(k1, L), 0)] *= 2.0
        if 0 <= nlev < L and not k0 <= nlev < k1:
            ref[:, nlev] = -w[:, nlev]
        for backend in ("interpreter", "compiled"):
            out = np.zeros((N, L))
            window_py(w=w, out=out, k0=k0, k1=k1, nlev=nlev, backend=backend)
            np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{backend} {k0} {k1}")
    assert compile_count() == before
    out = np.zeros((N, L))
    with pytest.raises(tir.ArgumentError, match="nlev"):   # the centred piece reads K = L
        vertical_py(w=w, out=out, nlev=L)
    assert not out.any()


@program
def clamped_window_py(w: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], nflatlev: int,
                      nlev: int):
    # icon4py's ``maximum(1, nflatlev) <= dims.KDim``: a bound clamped by maximum/minimum
    out[...] = concat_where((maximum(1, nflatlev) <= KL) & (KL < minimum(nlev, L - 1)),
                            w - w(KL - 1), 3.0 * w)


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_frontend_concat_where_bounds_clamped_by_maximum_and_minimum(backend):
    w = RNG.random((N, L))
    for nflatlev, nlev in [(0, L), (3, L), (-2, 2), (4, 3), (L + 2, L)]:
        lo, hi = max(1, nflatlev), min(nlev, L - 1)
        ref = 3.0 * w
        if lo < hi:
            ref[:, lo:hi] = (w[:, 1:] - w[:, :-1])[:, lo - 1:hi - 1]
        out = np.zeros((N, L))
        clamped_window_py(w=w, out=out, nflatlev=nflatlev, nlev=nlev, backend=backend)
        np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{nflatlev} {nlev}")


@program
def loop_from_clamped_start(x: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], k0: int,
                            n: int):
    for t in range(max(1, k0), min(n, L)):
        out[:, t:t + 1] = out(KL - 1) + x


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_frontend_loop_bounds_clamped_by_max_and_min(backend):
    x = RNG.random((N, L))
    for k0, n in [(0, L), (3, L + 4), (-1, 2)]:
        ref = np.ones((N, L))
        for t in range(max(1, k0), min(n, L)):
            ref[:, t] = ref[:, t - 1] + x[:, t]
        out = np.ones((N, L))
        loop_from_clamped_start(x, out, k0, n, backend=backend)
        np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{k0} {n}")


@program
def loop_slices(x: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], n: int, k0: int,
                k1: int):
    for t in range(1, n):
        out[:, t:t + 1] = out(KL - 1) + concat_where(KL.interval(k0, k1), 2.0 * x, x)


def test_frontend_loop_variable_slices_and_runtime_interval_condition():
    x = RNG.random((N, L))
    for backend in ("interpreter", "compiled"):
        for n, k0, k1 in [(L, 2, 4), (3, 4, 1), (1, 0, L)]:
            out = np.zeros((N, L))
            out[:, 0] = 1.0
            ref = out.copy()
            y = x.copy()
            y[:, max(k0, 0):max(k1, 0)] *= 2.0
            for t in range(1, n):
                ref[:, t] = ref[:, t - 1] + y[:, t]
            loop_slices(x=x, out=out, n=n, k0=k0, k1=k1, backend=backend)
            np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=backend)
        out = np.zeros((N, L))
        with pytest.raises(tir.ArgumentError, match="t \\+ 1 = 7"):   # the last t writes K[6]
            loop_slices(x=x, out=out, n=L + 1, k0=0, k1=0, backend=backend)
        assert not out.any()


DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "runtime_domains.md"
DOC_BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


@pytest.mark.parametrize("code", DOC_BLOCKS, ids=[f"block{i}" for i in range(len(DOC_BLOCKS))])
def test_documentation_examples_run(code, tmp_path):
    script = tmp_path / "runtime_domains_example.py"     # a real file: decorators read it
    script.write_text(code)
    runpy.run_path(str(script), run_name="runtime_domains_example")


def test_frontend_programs_round_trip_through_the_text_syntax():
    for prog in (lateral_slices, lateral_domain, vertical_py, window_py, loop_slices):
        p = prog.ir
        assert tir.parse(tir.format(p)) == p
        tir.check(p)
    text = tir.format(window_py.ir)
    assert "Max(" in text and "k0" in text


@program
def half_levels_py(w: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], nlev: int,
                   vs: int, ve: int):
    # GT4Py's assembly of a half-level field: a literal fills the target, then a top
    # branch defined only near the top and a bottom one only below the last level
    top = w + w(KL + 1) + w(KL + 2)
    bottom = w(KL - 1) + w(KL - 2) + w(KL - 3)
    result = concat_where((KL > 0) & (KL < nlev), w + w(KL - 1), 0.0)
    result = concat_where(KL == 0, top, result)
    out[:, vs:ve] = concat_where(KL == nlev, bottom, result)


def test_frontend_concat_where_branches_at_the_ends_and_a_literal_fill_the_target():
    w = RNG.random((N, L))
    want = np.empty((N, L + 1))
    want[:, 0] = w[:, 0] + w[:, 1] + w[:, 2]
    want[:, 1:L] = w[:, 1:] + w[:, :-1]
    want[:, L] = w[:, -1] + w[:, -2] + w[:, -3]
    for backend in ("interpreter", "compiled"):
        for vs, ve, nlev in [(0, L + 1, L), (1, 4, L), (0, 1, L), (L, L + 1, L), (3, 3, L),
                             (0, L, L - 2)]:
            out = np.full((N, L + 1), 9.0)
            half_levels_py(w=w, out=out, nlev=nlev, vs=vs, ve=ve, backend=backend)
            ref = np.full((N, L + 1), 9.0)
            full = want.copy()
            full[:, nlev] = w[:, nlev - 1] + w[:, nlev - 2] + w[:, nlev - 3]
            full[:, nlev + 1:] = 0.0
            ref[:, vs:ve] = full[:, vs:ve]
            np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{backend} {vs} {ve}")


@function
def one_sided_at_elev(p: Tensor[float, Cell, KL], elev: int):
    # ICON's PPM slope: centred differences, one-sided at level elev (the last one)
    return concat_where(KL == elev, p - p(KL - 1), p(KL + 1) - p(KL - 1))


@program
def slope_py(p: Tensor[float, Cell, KL], out: Tensor[float, Cell, KL], elev: int, vs: int,
             ve: int):
    one_sided_at_elev(p, elev, out=out, domain={KL: (vs, ve)})


def test_frontend_concat_where_branch_at_the_last_level_extends_the_other_branch():
    p = RNG.random((N, L))
    for backend in ("interpreter", "compiled"):
        for vs, ve in [(1, L), (2, L), (1, 3), (L - 1, L)]:
            out = np.full((N, L), 9.0)
            slope_py(p=p, out=out, elev=ve - 1, vs=vs, ve=ve, backend=backend)
            ref = np.full((N, L), 9.0)
            ref[:, vs:ve - 1] = p[:, vs + 1:ve] - p[:, vs - 1:ve - 2]
            ref[:, ve - 1] = p[:, ve - 1] - p[:, ve - 2]
            np.testing.assert_allclose(out, ref, rtol=1e-13, err_msg=f"{backend} {vs} {ve}")
        with pytest.raises(tir.ArgumentError, match="vs"):   # level 0 reads below the array
            slope_py(p=p, out=np.zeros((N, L)), elev=L - 1, vs=0, ve=L, backend=backend)


GUARDED_BY_AN_ORDER = """
guarded(x: tensor<float, Cell[0:N], K[0:L]>, out: tensor<float, Cell[0:N], K[0:L]>,
        vs: tensor<int>, ve: tensor<int>) {
  if (vs >= 1) {
    subset(out, K[vs:ve]) ← ⟪K, -1⟫(x)
  } else {
    subset(out, K[vs:ve]) ← 2.0 × x
  }
}
"""


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_checks_of_a_branch_chosen_by_an_order_of_bounds_apply_where_it_runs(backend):
    """``if (vs >= 1)`` guards the read one level below ``vs``: the branch's
    check (``vs >= 1``) is made only where that branch runs, so ``vs = 0``
    takes the other branch instead of being refused; a bound outside the
    array is refused in either branch before anything is written."""
    prog = tir.parse(GUARDED_BY_AN_ORDER)
    run = tir.compile(prog) if backend == "compiled" else \
        (lambda **kw: tir.interpret(prog, **kw))
    x = RNG.random((N, L))
    for vs, ve in [(0, 4), (1, L), (2, 5)]:
        out = np.zeros((N, L))
        run(x=x, out=out, vs=vs, ve=ve)
        want = np.zeros((N, L))
        want[:, vs:ve] = x[:, vs - 1:ve - 1] if vs >= 1 else 2.0 * x[:, vs:ve]
        np.testing.assert_allclose(out, want)
    out = np.zeros((N, L))
    with pytest.raises(tir.ArgumentError, match="outside its allowed range"):
        run(x=x, out=out, vs=0, ve=L + 1)
    assert not out.any()


# A scan with a tuple state under a runtime level range: the printed program
# binds its result with a lambda whose parameter type has the clamped bounds
# ``K[Max(0,vs):Min(N_K,ve)]``, which must read back as the same runtime range.
GTX_K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)


@gtx.scan_operator(axis=GTX_K, forward=True, init=(0.0, 1.0))
def _running(state: tuple[float, float], a: float) -> tuple[float, float]:
    return state[0] + a, 0.5 * state[1] + a


@gtx.field_operator
def _both(a: gtx.Field[gtx.Dims[Cell, GTX_K], float]
          ) -> tuple[gtx.Field[gtx.Dims[Cell, GTX_K], float],
                     gtx.Field[gtx.Dims[Cell, GTX_K], float]]:
    r = _running(a)
    return r[0], r[1]


@gtx.program
def running_in_runtime_range(a: gtx.Field[gtx.Dims[Cell, GTX_K], float],
                             o1: gtx.Field[gtx.Dims[Cell, GTX_K], float],
                             o2: gtx.Field[gtx.Dims[Cell, GTX_K], float],
                             hs: gtx.int32, he: gtx.int32, vs: gtx.int32, ve: gtx.int32):
    _both(a, out=(o1, o2), domain={Cell: (hs, he), GTX_K: (vs, ve)})


def test_printed_scan_under_a_runtime_level_range_reads_back_and_agrees():
    text = tir.format(running_in_runtime_range.ir)
    assert re.search(r"λ\(\s*r: tensor<\(float64, float64\), Cell\[0:N_Cell\], "
                     r"K\[Max\(0,vs\):Min\(N_K,ve\)\]>", text)
    tir.check(tir.parse(text))
    a = RNG.random((6, 7))
    bounds = dict(hs=np.int32(1), he=np.int32(5), vs=np.int32(2), ve=np.int32(6))
    want = {k: np.zeros((6, 7)) for k in ("o1", "o2")}
    running_in_runtime_range(a, **want, **bounds, offset_provider={})
    s0, s1 = np.zeros(4), np.ones(4)
    for k in range(2, 6):
        s0, s1 = s0 + a[1:5, k], 0.5 * s1 + a[1:5, k]
        assert np.allclose(want["o1"][1:5, k], s0) and np.allclose(want["o2"][1:5, k], s1)
    got = {k: np.zeros((6, 7)) for k in ("o1", "o2")}
    tir.compile(text)(a=a, **got, **bounds)
    for k in got:
        np.testing.assert_array_equal(got[k], want[k])
