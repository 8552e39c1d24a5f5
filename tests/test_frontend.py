"""The Python front end: decorated functions → the same ir.Program as the parser.

Every program here is run with the NumPy interpreter and compared with a
hand-written NumPy reference; the design document's programs (Laplacian,
tridiagonal solver, FVM nabla) are also compared with their .tir versions,
and a few programs are compiled (one compile each, shared through the
decorated objects' caches).
"""

from __future__ import annotations

import copy
import inspect
import pathlib

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace import ir
from tensorir_dace.errors import ArgumentError, FrontendError, TensorIRError, TypeCheckError
from tensorir_dace.frontend import (  # math builtins
    Field,
    FieldOffset,
    SparseTensor,
    Tensor,
    can_deref,
    cast,
    concat_where,
    dims,
    exp,
    field_operator,
    float32,
    function,
    index,
    int32,
    max_over,
    maximum,
    min_over,
    neighbor_dim,
    neighbor_sum,
    program,
    reduce,
    scan_operator,
    sin,
    sizes,
    sqrt,
    where,
    with_interval,
)

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "sdfg_examples"
HERE = str(pathlib.Path(__file__).resolve())

I, J, K = dims("I J K")
IDim, JDim, KDim = dims("IDim JDim KDim")
Vertex, Edge = dims("Vertex Edge")
E2VDim = neighbor_dim(Vertex, 2)
V2EDim = neighbor_dim(Edge, 7)

RNG = np.random.default_rng(1234)


def example(name: str) -> ir.Program:
    return tir.parse((EXAMPLES / f"{name}.tir").read_text())


def line_of(obj, marker: str) -> int:
    """The absolute line number of the line of ``obj``'s source containing ``marker``."""
    fn = getattr(obj, "fn", obj)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def assert_error(exc_info, obj, marker: str, *fragments: str) -> None:
    err = exc_info.value
    assert isinstance(err, TensorIRError)
    assert err.loc is not None, str(err)
    assert err.loc.filename == HERE, str(err)
    assert err.loc.line == line_of(obj, marker), str(err)
    text = str(err)
    assert f"{HERE}:{err.loc.line}:" in text
    for f in fragments:
        assert f in text, text


def run(prog, backend, **kwargs):
    """Run a program on copies of the arguments; return the copies."""
    args = copy.deepcopy(kwargs)
    prog(**args, backend=backend)
    return args


# =========================================================================== Laplacian


@function
def lap(x):
    return -4.0 * x + x(IDim + 1) + x(IDim - 1) + x(JDim + 1) + x(JDim - 1)


@program
def laplacian(out: Tensor[float, IDim, JDim, KDim],
              inp: Tensor[float, IDim.halo(1), JDim.halo(1), KDim]):
    out = lap(inp)


@program
def laplacian_interior(inp: Tensor[float, IDim, JDim, KDim],
                       out: Tensor[float, IDim, JDim, KDim]):
    out[1:-1, 1:-1, :] = lap(inp)


@program
def laplacian_plain(out: Tensor[float, IDim, JDim, KDim], inp: Tensor[float, IDim, JDim, KDim]):
    out[...] = lap(inp)


def lap_numpy(x):
    return (-4.0 * x[1:-1, 1:-1] + x[2:, 1:-1] + x[:-2, 1:-1] + x[1:-1, 2:] + x[1:-1, :-2])


def test_laplacian_types_match_the_tir_example():
    ref = example("laplacian")
    mine = laplacian.ir
    assert [p.name for p in mine.params] == [p.name for p in ref.params]
    for a, b in zip(mine.params, ref.params):
        sizes_ = {"N_IDim": 5, "N_JDim": 7, "N_KDim": 9}
        for da, db in zip(a.type.dims, b.type.dims):
            assert da.name == db.name
            assert int(da.start.subs(sizes_)) == int(db.start)
            assert int(da.stop.subs({ir.size_symbol(k): v for k, v in sizes_.items()})) == \
                int(db.stop)
    assert str(mine.params[1].type) == \
        "tensor<float64, IDim[-1:N_IDim+1], JDim[-1:N_JDim+1], KDim[0:N_KDim]>"


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_laplacian_same_as_tir_and_numpy(backend):
    inp = RNG.random((7, 9, 9))
    mine = run(laplacian, backend, out=np.zeros((5, 7, 9)), inp=inp)["out"]
    ref = {"out": np.zeros((5, 7, 9)), "inp": inp}
    tir.interpret(example("laplacian"), **ref)
    np.testing.assert_allclose(mine, ref["out"], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(mine, lap_numpy(inp), rtol=1e-13, atol=1e-13)


def test_laplacian_with_intervals_at_call_time():
    inp = RNG.random((7, 9, 9))
    out = np.zeros((5, 7, 9))
    # inp's element 0 is coordinate -1 along IDim and JDim: a halo of 1
    laplacian_plain(out, with_interval(inp, IDim=(-1, 6), JDim=(-1, 8)),
                    backend="interpreter")
    np.testing.assert_allclose(out, lap_numpy(inp), rtol=1e-13)
    # a different size with the same halo pattern reuses the specialisation
    inp2 = RNG.random((12, 6, 3))
    out2 = np.zeros((10, 4, 3))
    laplacian_plain(out=out2, inp=with_interval(inp2, IDim=-1, JDim=-1), backend="interpreter")
    np.testing.assert_allclose(out2, lap_numpy(inp2), rtol=1e-13)
    assert len(laplacian_plain._ir) == 1
    out3 = np.zeros((10, 4, 3))
    laplacian_plain(out3, with_interval(inp2, IDim=-1, JDim=-1))      # compiled
    np.testing.assert_allclose(out3, out2, rtol=1e-13)
    # without intervals the program has no halo: the type checker says why
    with pytest.raises(TypeCheckError) as e:
        laplacian_plain(out, inp[1:-1, 1:-1].copy(), backend="interpreter")
    assert_error(e, laplacian_plain, "out[...] = lap(inp)",
                 "IDim[1:N_IDim - 1]", "needs IDim[0:N_IDim]")


def test_laplacian_interior_restricted_output():
    inp = RNG.random((6, 8, 3))
    out = np.full((6, 8, 3), -7.0)
    laplacian_interior(inp, out, backend="interpreter")
    np.testing.assert_allclose(out[1:-1, 1:-1], lap_numpy(inp), rtol=1e-13)
    assert (out[0] == -7.0).all() and (out[:, -1] == -7.0).all()
    target = laplacian_interior.ir.body[0].target
    assert tir.format(target) == "subset(out, IDim[1:N_IDim-1], JDim[1:N_JDim-1])"


# =========================================================================== smooth (the brief)


@function
def lap2(x: Tensor[float, I, J]):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


@program
def smooth(inp: Tensor[float, I, J], out: Tensor[float, I, J], alpha: float):
    out[2:-2, 2:-2] = inp - alpha * lap2(lap2(inp))   # only the interior is defined


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_smooth(backend):
    inp = RNG.random((10, 13))
    out = run(smooth, backend, inp=inp, out=np.zeros((10, 13)), alpha=0.1)["out"]
    ref = inp[2:-2, 2:-2] - 0.1 * lap_numpy(lap_numpy(inp))
    np.testing.assert_allclose(out[2:-2, 2:-2], ref, rtol=1e-12)
    assert (out[:2] == 0).all()


def test_functions_are_inlined_as_lambdas():
    body = smooth.ir.body[0].value
    lambdas = [n for n in ir.walk(body) if isinstance(n, ir.Lambda)]
    assert len(lambdas) == 1       # the outer lap2: its argument is used five times
    (p,) = lambdas[0].params
    assert str(p.type) == "tensor<float64, I[1:N_I-1], J[1:N_J-1]>"
    text = tir.format(smooth.ir)
    assert "⟪I, 1⟫(inp)" in text and "alpha ×" in text


def test_program_ir_round_trips_through_the_text_syntax():
    for prog in (smooth, laplacian, laplacian_interior, tridiag, nabla, features, control):
        p = prog.ir
        assert tir.parse(tir.format(p)) == p
        assert tir.parse(tir.format(p, ascii=True)) == p
        tir.check(p)


def test_program_objects_cache_ir_sdfg_and_compiled():
    import dace
    assert smooth.ir is smooth.ir
    sdfg = smooth.to_sdfg()
    assert isinstance(sdfg, dace.SDFG)
    assert smooth.compile() is smooth.compile()


# =========================================================================== tridiagonal


@scan_operator(axis=KDim, forward=True, init=(0.0, 0.0))
def tridiag_forward(state, a, b, c, d):
    cp, dp = state
    denom = b - a * cp
    return c / denom, (d - a * dp) / denom


@scan_operator(axis=KDim, forward=False, init=0.0)
def tridiag_backward(x_kp1, cpdp):
    cp, dp = cpdp
    return dp - cp * x_kp1


@function
def solve(a, b, c, d):
    return tridiag_backward(tridiag_forward(a, b, c, d))


F3 = Tensor[float, IDim, JDim, KDim]


@program
def tridiag(a: F3, b: F3, c: F3, d: F3, x: F3):
    x[...] = solve(a, b, c, d)


def thomas(a, b, c, d):
    n = a.shape[-1]
    cp = np.zeros_like(a)
    dp = np.zeros_like(a)
    x = np.zeros_like(a)
    for k in range(n):
        prev_c = cp[..., k - 1] if k else 0.0
        prev_d = dp[..., k - 1] if k else 0.0
        den = b[..., k] - a[..., k] * prev_c
        cp[..., k] = c[..., k] / den
        dp[..., k] = (d[..., k] - a[..., k] * prev_d) / den
    for k in reversed(range(n)):
        nxt = x[..., k + 1] if k + 1 < n else 0.0
        x[..., k] = dp[..., k] - cp[..., k] * nxt
    return x


def tridiag_args(shape):
    a, b, c, d = (RNG.random(shape) for _ in range(4))
    return dict(a=a, b=b + 4.0, c=c, d=d, x=np.zeros(shape))


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_tridiagonal_same_as_tir_and_thomas(backend):
    args = tridiag_args((3, 7, 5))
    mine = run(tridiag, backend, **args)["x"]
    ref = copy.deepcopy(args)
    tir.interpret(example("tridiagonal"), **ref)
    np.testing.assert_allclose(mine, ref["x"], rtol=1e-12)
    np.testing.assert_allclose(mine, thomas(args["a"], args["b"], args["c"], args["d"]),
                               rtol=1e-12)
    # the tridiagonal matrix times x gives d
    a, b, c, d = (args[k] for k in "abcd")
    r = b * mine
    r[..., 1:] += a[..., 1:] * mine[..., :-1]
    r[..., :-1] += c[..., :-1] * mine[..., 1:]
    np.testing.assert_allclose(r, d, rtol=1e-10)


def test_tridiagonal_ir_has_two_scans_with_tuple_state():
    text = tir.format(tridiag.ir)
    scans = [n for n in ir.walk(tridiag.ir) if isinstance(n, ir.Call)
             and isinstance(n.func, ir.Sym) and n.func.name == "scan"]
    assert len(scans) == 2
    fwd = next(s for s in scans if s.args[1].value is True)
    assert str(fwd.args[0].params[0].type) == \
        "tensor<(float64, float64), IDim[0:N_IDim], JDim[0:N_JDim]>"
    assert "make_tuple(0.0, 0.0)" in text


@scan_operator(axis=K, forward=True, init=0.0)
def cumsum(acc, x):
    return acc + x


@scan_operator(axis=K, forward=False, init=0)
def rev_count(acc, x):
    return acc + x


@program
def scans(x: Tensor[float, I, K], n: Tensor[int, I, K], fwd: Tensor[float, I, K],
          bwd: Tensor[int, I, K]):
    fwd = cumsum(x)
    bwd = rev_count(n)


def test_forward_and_backward_scans():
    x = RNG.random((3, 6))
    n = RNG.integers(0, 5, (3, 6))
    res = run(scans, "interpreter", x=x, n=n, fwd=np.zeros((3, 6)),
              bwd=np.zeros((3, 6), dtype=np.int64))
    np.testing.assert_allclose(res["fwd"], np.cumsum(x, axis=1), rtol=1e-13)
    np.testing.assert_array_equal(res["bwd"], np.cumsum(n[:, ::-1], axis=1)[:, ::-1])


# =========================================================================== nabla


@function
def edge_flux(pp, S_M, E2V):
    return S_M * (0.5 * (pp(E2V[0]) + pp(E2V[1])))


@function
def nabla_component(pp, S_M, sign, vol, E2V, V2E):
    return neighbor_sum(edge_flux(pp, S_M, E2V)(V2E) * sign, axis=V2EDim) / vol


@program
def nabla(n_nodes: int, out: Tensor[(float, float), Vertex], pp: Tensor[float, Vertex],
          S_MXX: Tensor[float, Edge], S_MYY: Tensor[float, Edge],
          sign: Tensor[float, Vertex, V2EDim], vol: Tensor[float, Vertex],
          E2V: Tensor[int, Edge, E2VDim], V2E: Tensor[int, Vertex, V2EDim]):
    out = (nabla_component(pp, S_MXX, sign, vol, E2V, V2E),
           nabla_component(pp, S_MYY, sign, vol, E2V, V2E))


def nabla_numpy(pp, S_MXX, S_MYY, sign, vol, E2V, V2E, skip_absent=True, **_):
    """With ``skip_absent``, an edge with an absent end is skipped by the sum;
    without it, its NaN enters the sum."""
    def at(k):
        return np.where(E2V[:, k] >= 0, pp[np.maximum(E2V[:, k], 0)], np.nan)
    zavg = 0.5 * (at(0) + at(1))
    present = V2E >= 0
    if skip_absent:
        present &= (E2V >= 0).all(axis=1)[np.maximum(V2E, 0)]

    def comp(s):
        vals = (s * zavg)[np.maximum(V2E, 0)] * sign
        return np.where(present, vals, 0.0).sum(axis=1) / vol
    return comp(S_MXX), comp(S_MYY)


def nabla_args(nv, ne, absent_e2v=0.0, absent_v2e=0.2):
    E2V = RNG.integers(0, nv, (ne, 2))
    E2V[RNG.random((ne, 2)) < absent_e2v] = -1
    V2E = RNG.integers(0, ne, (nv, 7))
    V2E[RNG.random((nv, 7)) < absent_v2e] = -1
    return dict(n_nodes=3, out=(np.zeros(nv), np.zeros(nv)), pp=RNG.random(nv),
                S_MXX=RNG.random(ne), S_MYY=RNG.random(ne), sign=RNG.random((nv, 7)),
                vol=RNG.random(nv) + 1.0, E2V=E2V, V2E=V2E)


def test_nabla_types():
    types = {p.name: str(p.type) for p in nabla.ir.params}
    assert types["sign"] == "tensor<float64, Vertex[0:N_Vertex], _NB_0[0:7]>"
    assert types["E2V"] == "tensor<int64, Edge[0:N_Edge], _NB_Vertex[0:2]>"
    assert types["V2E"] == "tensor<int64, Vertex[0:N_Vertex], _NB_Edge[0:7]>"
    assert types["out"] == "tensor<(float64, float64), Vertex[0:N_Vertex]>"
    assert types["n_nodes"] == "tensor<int64>"


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_nabla_same_as_tir_and_numpy(backend):
    args = nabla_args(5440, 16167)
    mine = run(nabla, backend, **args)["out"]
    ref = copy.deepcopy(args)
    tir.interpret(example("nabla"), **ref)
    expected = nabla_numpy(**args)
    assert (args["V2E"] == -1).any()
    for k in range(2):
        np.testing.assert_allclose(mine[k], ref["out"][k], rtol=1e-12)
        np.testing.assert_allclose(mine[k], expected[k], rtol=1e-12)


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_nabla_absent_vertices_of_edges(backend):
    """-1 entries in E2V make an edge absent: the reduction skips it, both where
    the shifts are written out (the inlined Python function) and where the text
    example computes the edge value in an applied lambda."""
    args = nabla_args(5440, 16167, absent_e2v=0.01)
    mine = run(nabla, backend, **args)["out"]
    ref = copy.deepcopy(args)
    tir.interpret(example("nabla"), **ref)
    expected, with_nan = nabla_numpy(**args), nabla_numpy(**args, skip_absent=False)
    for k in range(2):
        assert np.isnan(with_nan[k]).any() and not np.isnan(expected[k]).any()
        np.testing.assert_allclose(mine[k], expected[k], rtol=1e-12)
        np.testing.assert_allclose(ref["out"][k], expected[k], rtol=1e-12)


# =========================================================================== unstructured


@program
def unstructured(x: Tensor[float, Vertex], w: Tensor[float, Vertex, V2EDim],
                 ev: Tensor[float, Edge], E2V: Tensor[int, Edge, E2VDim],
                 V2E: Tensor[int, Vertex, V2EDim], first: Tensor[float, Edge],
                 total: Tensor[float, Vertex], largest: Tensor[float, Vertex],
                 smallest: Tensor[float, Vertex], sumsq: Tensor[float, Vertex],
                 dot: Tensor[float, Vertex], count: Tensor[int, Vertex],
                 total2: Tensor[float, Vertex]):
    first = x(E2V[0]) - x(E2V[1])
    total = neighbor_sum(ev(V2E))                      # no axis: the last neighbour dim
    largest = max_over(ev(V2E), axis=V2EDim)
    smallest = min_over(ev(V2E), axis=V2EDim)
    sumsq = reduce(lambda acc, a: acc + a * a, init=0.0)(ev(V2E))
    dot = reduce(weighted, 0.0)(ev(V2E), w)
    count = neighbor_sum(where(can_deref(ev(V2E)), 1, 0))
    shifted = ev(V2E)                                  # a temporary keeps the skip mask
    total2 = neighbor_sum(shifted)


def weighted(acc, a, b):
    return acc + a * b


def test_unstructured_shifts_and_reductions():
    nv, ne = 40, 90
    E2V = RNG.integers(0, nv, (ne, 2))
    V2E = RNG.integers(0, ne, (nv, 7))
    V2E[RNG.random((nv, 7)) < 0.3] = -1
    V2E[0] = -1                                        # a vertex without edges
    x, ev, w = RNG.random(nv), RNG.random(ne), RNG.random((nv, 7))
    z = lambda dt=float: np.zeros(nv, dtype=dt)        # noqa: E731
    res = run(unstructured, "interpreter", x=x, w=w, ev=ev, E2V=E2V, V2E=V2E,
              first=np.zeros(ne), total=z(), largest=z(), smallest=z(), sumsq=z(), dot=z(),
              count=z(np.int64), total2=z())
    present = V2E >= 0
    vals = np.where(present, ev[np.maximum(V2E, 0)], np.nan)
    np.testing.assert_allclose(res["first"], x[E2V[:, 0]] - x[E2V[:, 1]])
    np.testing.assert_allclose(res["total"], np.nansum(vals, axis=1))
    np.testing.assert_allclose(res["total2"], np.nansum(vals, axis=1))
    np.testing.assert_allclose(res["largest"][1:], np.nanmax(vals[1:], axis=1))
    assert res["largest"][0] == -np.inf and res["smallest"][0] == np.inf
    np.testing.assert_allclose(res["smallest"][1:], np.nanmin(vals[1:], axis=1))
    np.testing.assert_allclose(res["sumsq"], np.nansum(vals * vals, axis=1))
    np.testing.assert_allclose(res["dot"], np.nansum(vals * w, axis=1))
    np.testing.assert_array_equal(res["count"], present.sum(axis=1))
    text = tir.format(unstructured.ir)
    assert "⟪E2V, 0⟫(x)" in text and "⟪V2E⟫(ev)" in text and "reduce(" in text


# =========================================================================== element-wise


@function
def arith(a, b, m, n, alpha, k):
    return (a + b, a - b, a * b, a / b, a % b, a ** 2, -a, m / n, m % n, alpha * a + float(k))


@function
def logic(a, b, p, q):
    return (a < b) & p | ~q, (a >= b) and not p or q, a == b, a != b, a <= 0.5, 0.5 > b


@function
def math_fns(a):
    return sqrt(a) + exp(-a) + sin(a) + np.cos(a) + abs(-a) + maximum(a, 0.5) \
        + min(a, 0.25) + tir.frontend.log(a) + tir.frontend.arctan2(a, 2.0)


@program
def features(a: Tensor[float, I, J], b: Tensor[float, I, J], m: Tensor[int, I, J],
             n: Tensor[int, I, J], p: Tensor[bool, I, J], q: Tensor[bool, I, J],
             alpha: float, k: int, r: Tensor[float, I], s: Tensor[float, J],
             arith_out: Tensor[(float, float, float, float, float, float, float, int, int,
                                float), I, J],
             logic_out: Tensor[(bool, bool, bool, bool, bool, bool), I, J],
             math_out: Tensor[float, I, J], outer: Tensor[float, I, J],
             casts: Tensor[(float32, int32, float), I, J], const: Tensor[float, I, J]):
    arith_out = arith(a, b, m, n, alpha, k)
    logic_out = logic(a, b, p, q)
    math_out = math_fns(a)
    outer = r * s                                       # broadcasting by dimension name
    casts = (cast(a, float32), m.astype(int32), cast(m, float) + float(n))
    const = 2.5                                         # a literal broadcast to the target


def features_args(shape=(5, 6)):
    return dict(a=RNG.random(shape) + 0.1, b=RNG.random(shape) + 0.1,
                m=RNG.integers(-20, 20, shape), n=RNG.choice([-3, -2, 2, 3, 5], shape),
                p=RNG.random(shape) < 0.5, q=RNG.random(shape) < 0.5, alpha=0.5, k=3,
                r=RNG.random(shape[0]), s=RNG.random(shape[1]),
                arith_out=tuple(np.zeros(shape, dtype=np.int64 if i in (7, 8) else float)
                                for i in range(10)),
                logic_out=tuple(np.zeros(shape, dtype=bool) for _ in range(6)),
                math_out=np.zeros(shape), outer=np.zeros(shape),
                casts=(np.zeros(shape, np.float32), np.zeros(shape, np.int32),
                       np.zeros(shape)),
                const=np.zeros(shape))


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_elementwise_features(backend):
    args = features_args()
    res = run(features, backend, **args)
    a, b, m, n, p, q = (args[x] for x in "abmnpq")
    trunc_div = np.trunc(m / n).astype(np.int64)
    expected = (a + b, a - b, a * b, a / b, np.fmod(a, b), a ** 2, -a, trunc_div,
                np.fmod(m, n), 0.5 * a + 3)
    for got, want in zip(res["arith_out"], expected):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    expected = ((a < b) & p | ~q, ((a >= b) & ~p) | q, a == b, a != b, a <= 0.5, 0.5 > b)
    for got, want in zip(res["logic_out"], expected):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(res["math_out"], np.sqrt(a) + np.exp(-a) + np.sin(a) + np.cos(a)
                               + a + np.maximum(a, 0.5) + np.minimum(a, 0.25) + np.log(a)
                               + np.arctan2(a, 2.0), rtol=1e-13)
    np.testing.assert_allclose(res["outer"], np.outer(args["r"], args["s"]), rtol=1e-14)
    np.testing.assert_allclose(res["casts"][0], a.astype(np.float32))
    np.testing.assert_array_equal(res["casts"][1], m.astype(np.int32))
    np.testing.assert_allclose(res["casts"][2], m + n)
    assert (res["const"] == 2.5).all()


# =========================================================================== conditionals


@program
def boundaries(a: Tensor[float, I, K], b: Tensor[float, I, K], c1: Tensor[float, I, K],
               c2: Tensor[float, I, K], c3: Tensor[float, I, K], c4: Tensor[float, I, K],
               c5: Tensor[float, I, K], c6: Tensor[float, I, K]):
    c1 = concat_where(K < 1, 0.0, a(K - 1))           # lazy: a(K - 1) is undefined at K = 0
    c2 = concat_where((K == 0) | (K == K.size - 1), a, a(K - 1) + a(K + 1))
    c3 = concat_where(I.interval(0, 2), b, a)
    c4 = concat_where(~(K >= 2), a, b)
    c5 = concat_where((I < 1) | (K > 3), -1.0, where(a > b, a, b))
    c6 = a if False else b


def test_concat_where_boundaries():
    shape = (5, 7)
    a, b = RNG.random(shape), RNG.random(shape)
    outs = {f"c{i}": np.zeros(shape) for i in range(1, 7)}
    res = run(boundaries, "interpreter", a=a, b=b, **outs)
    e1 = np.zeros(shape)
    e1[:, 1:] = a[:, :-1]
    np.testing.assert_allclose(res["c1"], e1)
    e2 = a.copy()
    e2[:, 1:-1] = a[:, :-2] + a[:, 2:]
    np.testing.assert_allclose(res["c2"], e2)
    e3 = a.copy()
    e3[:2] = b[:2]
    np.testing.assert_allclose(res["c3"], e3)
    e4 = b.copy()
    e4[:, :2] = a[:, :2]
    np.testing.assert_allclose(res["c4"], e4)
    e5 = np.maximum(a, b)
    e5[:1, :] = -1.0
    e5[:, 4:] = -1.0
    np.testing.assert_allclose(res["c5"], e5)
    np.testing.assert_allclose(res["c6"], b)
    text = tir.format(boundaries.ir)
    assert "concat(K, add_dim(K, 0, 1, 0.0), ⟪K, -1⟫(a))" in text
    assert "subset(a, K[N_K-1:N_K])" in text
    assert "if(a > b, a, b)" in text       # where is the eager select


# =========================================================================== tuples


@function
def two(x):
    return x + 1.0, x * 2.0


@function
def swap(t):
    first, second = t
    return second, first


@function
def pick(t: Tensor[(float, float), I]):
    return t[0] - t[1]


@program
def tuples(x: Tensor[float, I], t: Tensor[(float, float), I], o1: Tensor[float, I],
           o2: Tensor[float, I], ot: Tensor[(float, float), I], d: Tensor[float, I]):
    o1, o2 = two(x)
    ot = swap(t)
    d = pick(t) + two(x)[1]
    o1, o2 = o2, o1                                     # simultaneous: via temporaries


def test_tuples():
    x = RNG.random(6)
    t = (RNG.random(6), RNG.random(6))
    res = run(tuples, "interpreter", x=x, t=t, o1=np.zeros(6), o2=np.zeros(6),
              ot=(np.zeros(6), np.zeros(6)), d=np.zeros(6))
    np.testing.assert_allclose(res["o1"], x * 2.0)
    np.testing.assert_allclose(res["o2"], x + 1.0)
    np.testing.assert_allclose(res["ot"][0], t[1])
    np.testing.assert_allclose(res["ot"][1], t[0])
    np.testing.assert_allclose(res["d"], t[0] - t[1] + 2 * x)
    body = tuples.ir.body
    # o1, o2 = two(x): the tuple elements are selected inside the function, no tuple_get
    assert tir.format(body[0]) == "o1 ← x + 1.0;"
    assert tir.format(body[1]) == "o2 ← x × 2.0;"


# =========================================================================== programs


@function
def relax(u, alpha):
    return u + alpha * (u(I + 1) + u(I - 1) - 2.0 * u)


@program
def control(u: Tensor[float, I], v: Tensor[float, I], out: Tensor[float, I],
            n: int, alpha: float, flip: bool):
    beta = 2.0 * alpha                                  # a scalar: an alias, no temporary
    tmp = u * beta                                      # a temporary
    acc: Tensor[float, I] = 0.0 * u                     # an explicit temporary
    for t in range(n):
        tmp[1:-1] = relax(tmp, alpha)
        acc += tmp
    if flip:
        out = -acc
    elif n > 2:
        out = acc + v
    else:
        out = acc
    out[1:] = out + v(I - 1)


def control_numpy(u, v, n, alpha, flip, **_):
    tmp = u * 2.0 * alpha
    acc = np.zeros_like(u)
    for _ in range(n):
        new = tmp.copy()
        new[1:-1] = tmp[1:-1] + alpha * (tmp[2:] + tmp[:-2] - 2.0 * tmp[1:-1])
        tmp = new
        acc += tmp
    out = -acc if flip else (acc + v if n > 2 else acc)
    out[1:] = out[1:] + v[:-1]
    return out


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
@pytest.mark.parametrize("n,flip", [(0, False), (2, False), (4, False), (3, True)])
def test_control_flow_and_temporaries(backend, n, flip):
    u, v = RNG.random(9), RNG.random(9)
    res = run(control, backend, u=u, v=v, out=np.zeros(9), n=n, alpha=0.1, flip=flip)
    np.testing.assert_allclose(res["out"], control_numpy(u, v, n, 0.1, flip), rtol=1e-13)


def test_control_flow_becomes_ir_statements():
    p = control.ir
    assert [t.name for t in p.temporaries] == ["tmp", "acc"]
    assert all(str(t.type) == "tensor<float64, I[0:N_I]>" for t in p.temporaries)
    kinds = [type(s).__name__ for s in p.body]
    assert kinds == ["Assign", "Assign", "ForStmt", "IfStmt", "Assign"]
    loop = p.body[2]
    assert tir.format(loop.stop) == "n" and len(loop.body) == 2
    cond = p.body[3]
    assert tir.format(cond.cond) == "flip"
    assert isinstance(cond.else_body[0], ir.IfStmt)    # elif
    assert "alpha" in tir.format(p.body[0]) and "2.0 × alpha" in tir.format(p.body[0])
    # not a select, not an unrolled loop
    assert not any(isinstance(nd, ir.Call) and isinstance(nd.func, ir.Sym)
                   and nd.func.name == "if" for nd in ir.walk(p))


N, M = sizes("N M")


@program
def explicit_sizes(inp: Tensor[float, I[-2:N + 2]], out: Tensor[float, I[0:N]],
                   fixed: Tensor[float, J[0:4]], fixed_out: Tensor[float, J[0:4]]):
    out = inp(I - 2) + inp(I + 2)
    fixed_out = fixed * 2.0


def test_explicit_intervals_and_size_symbols():
    p = explicit_sizes.ir
    assert str(p.params[0].type) == "tensor<float64, I[-2:N+2]>"
    assert str(p.params[2].type) == "tensor<float64, J[0:4]>"
    inp = RNG.random(10)
    res = run(explicit_sizes, "interpreter", inp=inp, out=np.zeros(6), fixed=np.ones(4),
              fixed_out=np.zeros(4))
    np.testing.assert_allclose(res["out"], inp[:-4] + inp[4:])
    np.testing.assert_allclose(res["fixed_out"], 2.0)


@function
def local_reuse(x):
    y = x(I + 1) + x(I - 1)          # used twice: bound once by a lambda
    z = y * 2.0                      # used once: substituted
    return z + y(I + 1)


@function
def static_loop(x):
    acc = 0.0 * x
    for o in (-1, 0, 1):             # a static loop is unrolled
        acc = acc + x(I + o)
    if False:
        return x
    return acc


@program
def locals_prog(x: Tensor[float, I], y: Tensor[float, I], z: Tensor[float, I]):
    y[2:-2] = local_reuse(x)
    z[1:-1] = static_loop(x)


def test_locals_and_static_python():
    x = RNG.random(10)
    res = run(locals_prog, "interpreter", x=x, y=np.zeros(10), z=np.zeros(10))
    s = x[2:] + x[:-2]                      # y on 1..8
    np.testing.assert_allclose(res["y"][2:-2], 2 * s[1:-1] + s[2:])
    np.testing.assert_allclose(res["z"][1:-1], x[:-2] + x[1:-1] + x[2:])
    value = locals_prog.ir.body[0].value
    assert isinstance(value.func, ir.Lambda) and value.func.params[0].name == "y_1"


def test_sparse_int_field_and_int_table():
    @program
    def sparse(cnt: SparseTensor[int, Vertex, V2EDim], out: Tensor[int, Vertex]):
        out = neighbor_sum(cnt, axis=V2EDim)
    assert str(sparse.ir.params[0].type) == "tensor<int64, Vertex[0:N_Vertex], _NB_0[0:7]>"
    cnt = RNG.integers(0, 9, (4, 7))
    res = run(sparse, "interpreter", cnt=cnt, out=np.zeros(4, dtype=np.int64))
    np.testing.assert_array_equal(res["out"], cnt.sum(axis=1))


def test_index_and_size_values():
    @program
    def coords(x: Tensor[float, I], out: Tensor[int, I], last: Tensor[bool, I]):
        out = index(I, x) * 2
        last = index(I, x) == I.size - 1
    res = run(coords, "interpreter", x=np.zeros(5), out=np.zeros(5, dtype=np.int64),
              last=np.zeros(5, dtype=bool))
    np.testing.assert_array_equal(res["out"], 2 * np.arange(5))
    np.testing.assert_array_equal(res["last"], np.arange(5) == 4)


# =========================================================================== errors


def test_error_unknown_name():
    @function
    def f(x):
        return x + lapp(x)                      # <- unknown  # noqa: F821

    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = f(x)
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, f, "<- unknown", "unknown name 'lapp'", "did you mean 'lap'")


def test_error_while_loop():
    @function
    def f(x):
        while True:                             # <- while
            x = x + 1.0
        return x

    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = f(x)
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, f, "<- while", "while loops are not supported")


def test_error_try_in_program():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        try:                                    # <- try
            y = x
        except Exception:  # noqa: BLE001
            pass
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- try", "try statements are not supported")


def test_error_lambda_with_defaults():
    @program
    def p(x: Tensor[float, Edge], V2E: Tensor[int, Vertex, V2EDim], y: Tensor[float, Vertex]):
        y = reduce(lambda acc, a=1.0: acc + a, 0.0)(x(V2E))   # <- defaults
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- defaults", "lambdas with default arguments are not supported")


def test_error_type_mismatch_from_the_checker():
    @function
    def f(x, n):
        return x + n                            # <- types

    @program
    def p(x: Tensor[float, I], n: Tensor[int, I], y: Tensor[float, I]):
        y = f(x, n)
    with pytest.raises(TypeCheckError) as e:
        p.ir
    assert_error(e, f, "<- types", "plus needs operands of one element type",
                 "float64 and int64", "cast")


def test_error_domain_does_not_cover_the_output():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = x(I + 1)                            # <- domain
    with pytest.raises(TypeCheckError) as e:
        p.ir
    assert_error(e, p, "<- domain", "I[-1:N_I - 1]", "'y' needs I[0:N_I]")


def test_error_shape_mismatch_at_call_time():
    # a longer 'out' runs over J[0:N_J+1] (as in GT4Py): its interior is not covered
    with pytest.raises(ArgumentError) as e:     # the caller's shapes, at the statement
        smooth(np.zeros((4, 5)), np.zeros((4, 6)), 0.5, backend="interpreter")
    err = e.value
    assert isinstance(err, TypeCheckError)
    assert err.loc.filename == HERE
    assert err.loc.line == line_of(smooth, "out[2:-2, 2:-2] =")
    assert "N_J" in str(err) and "'out' has 1 more element along J" in str(err)
    with pytest.raises(ArgumentError) as e2:          # not a constant difference: a rank
        smooth(np.zeros((4, 5)), np.zeros((4, 5, 1)), 0.5, backend="interpreter")
    assert e2.value.loc.filename == HERE


def test_error_missing_annotation():
    @program
    def p(x: Tensor[float, I], y):              # <- annotation
        y = x
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- annotation", "'y' needs a type annotation")


def test_error_if_on_tensor_in_function():
    @function
    def f(x):
        if x > 0.0:                             # <- if
            return x
        return -x

    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = f(x)
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, f, "<- if", "use where(c, a, b)")


def test_error_return_in_program():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        return x                                # <- return
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- return", "a program does not return values")


def test_error_reduce_without_neighbours():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = neighbor_sum(x)                     # <- reduce
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- reduce", "needs an operand with a neighbour dimension")


def test_error_wrong_reduction_axis():
    C = dims("Cell")
    V2C = neighbor_dim(C, 6)

    @program
    def p(x: Tensor[float, Edge], V2E: Tensor[int, Vertex, V2EDim], y: Tensor[float, Vertex]):
        y = neighbor_sum(x(V2E), axis=V2C)      # <- axis
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- axis", "from the table V2E", "only the most recently added")


def test_error_concat_where_needs_index_condition():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = concat_where(x > 0.5, x, 0.0)       # <- cond
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- cond", "needs an index condition", "use where()")


def test_error_shift_without_offset():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y[1:] = x(I)                            # <- offset
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- offset", "x(I) needs an offset", "x(I + 1)")


def test_error_bit_shift():
    @program
    def p(x: Tensor[int, I], y: Tensor[int, I]):
        y = x << 2                              # <- shift
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- shift", "'<<' is not supported on tensors")


def test_error_wrong_number_of_arguments():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = relax(x)                            # <- args
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- args", "relax() missing required argument 'alpha'")


def test_error_recursion():
    @function
    def f(x):
        return f(x(I + 1))                      # <- recursion

    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = f(x)
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, f, "<- recursion", "recursive call of 'f'")


def test_error_assign_to_scalar_parameter():
    @program
    def p(x: Tensor[float, I], alpha: float):
        alpha = x                               # <- scalar
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- scalar", "cannot assign to the scalar parameter 'alpha'")


def test_error_annotation_mismatch():
    @program
    def p(x: Tensor[float, J], y: Tensor[float, J]):
        y = lap2(x)                             # <- annotated
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- annotated", "argument 'x' of lap2() is annotated")


def test_error_scan_axis_missing():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        y = cumsum(x)                           # <- scan
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- scan", "scans along K", "no dimension K")


def test_error_scalar_updated_in_loop():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I], n: int):
        s = 1.0
        for t in range(n):
            s = s * 2.0                         # <- alias
        y = x * s
    with pytest.raises(FrontendError) as e:
        p.ir
    assert_error(e, p, "<- alias", "cannot be updated inside an if or for")


def test_error_program_if_on_tensor():
    @program
    def p(x: Tensor[float, I], y: Tensor[float, I]):
        if x > 0.0:                             # <- progif
            y = x
    with pytest.raises(TypeCheckError) as e:
        p.ir
    assert_error(e, p, "<- progif", "must be a scalar bool")


def test_direct_call_without_dimension_names_and_builtins_outside_programs():
    with pytest.raises(FrontendError, match="call it from a @tensorir_dace.program"):
        lap(np.zeros(3))
    with pytest.raises(FrontendError, match="only be used inside"):
        sqrt(2.0)


# =========================================================================== more forms


@program(backend="interpreter")
def call_forms(x: Tensor[float, I, K], y: Tensor[float, I, K], z: Tensor[float, I, K],
               w: Tensor[float, I, K], n: int):
    relax(x, 0.25, out=y[1:-1, :])                      # GT4Py style: out=
    def twice(v):                                       # a local function
        return v + v
    square = lambda v: v * v                            # noqa: E731  a local lambda
    z = twice(square(x))
    for t in range(1, n):
        w = x * cast(t, float) + max(x, 0.5)


def test_out_keyword_local_functions_and_loop_variable():
    x = RNG.random((6, 4))
    y, z, w = np.zeros((6, 4)), np.zeros((6, 4)), np.zeros((6, 4))
    call_forms(x, y, z, w, 4)                           # the decorator's backend
    np.testing.assert_allclose(y[1:-1], x[1:-1] + 0.25 * (x[2:] + x[:-2] - 2 * x[1:-1]))
    assert (y[0] == 0).all()
    np.testing.assert_allclose(z, 2 * x * x)
    np.testing.assert_allclose(w, 3 * x + np.maximum(x, 0.5))
    loop = call_forms.ir.body[-1]
    assert isinstance(loop, ir.ForStmt) and tir.format(loop.start) == "1"


@scan_operator(axis=K, forward=True, init=0.0)
def running_max32(state: Tensor[float32, I], x):
    return maximum(state, x)


@program
def float32_scan(x: Tensor[float32, I, K], out: Tensor[float32, I, K]):
    out = running_max32(x)


def test_scan_state_type_from_annotation():
    x = RNG.random((3, 5)).astype(np.float32)
    res = run(float32_scan, "interpreter", x=x, out=np.zeros((3, 5), np.float32))
    np.testing.assert_array_equal(res["out"], np.maximum.accumulate(x, axis=1))
    assert "tensor<float32, I[0:N_I]>" in tir.format(float32_scan.ir)


def test_index_conditions_with_python_logic():
    @program
    def p(a: Tensor[float, I, K], b: Tensor[float, I, K], c: Tensor[float, I, K]):
        c = concat_where((1 <= K < 3) or not (I < 2), a, b)
    a, b = RNG.random((4, 6)), RNG.random((4, 6))
    res = run(p, "interpreter", a=a, b=b, c=np.zeros((4, 6)))
    m = np.zeros((4, 6), bool)
    m[:, 1:3] = True
    m[2:] = True
    np.testing.assert_allclose(res["c"], np.where(m, a, b))


def test_error_in_an_annotation_points_to_its_line():
    with pytest.raises(FrontendError) as e:
        Tensor[float, "I"]                              # <- ann
    assert_error(e, test_error_in_an_annotation_points_to_its_line, "# <" + "- ann",
                 "'I' is not a dimension")
    assert isinstance(e.value, TypeError)


def test_compiled_programs_take_offset_provider_for_cartesian_offsets():
    """GT4Py passes ``offset_provider=`` to compiled programs whatever their
    offsets; Cartesian entries name a dimension and carry no table."""
    koff = FieldOffset("Koff", source=K, target=(K,))

    @field_operator
    def upper(a: Field[[K], float]) -> Field[[K], float]:
        return a(koff[1]) - a

    @program
    def differences(a: Field[[K], float], o: Field[[K], float]):
        upper(a, out=o, domain={K: (0, 5)})

    a = np.random.default_rng(3).random(6)
    o = np.zeros(6)
    compiled = differences.compile()
    compiled(a, o, offset_provider={"Koff": K})
    np.testing.assert_allclose(o[:5], a[1:] - a[:5], rtol=0, atol=0)
    assert o[5] == 0.0
    with pytest.raises(ArgumentError, match="offset_provider must be a dict"):
        compiled(a, o, offset_provider=[K])
    # GT4Py's compile(offset_provider=..., static values): the same binary,
    # the provider used by calls without their own
    again = differences.compile(offset_provider={"Koff": K}, enable_jit=False)
    o2 = np.zeros(6)
    again(a, o2)
    np.testing.assert_array_equal(o2, o)
    assert again.sdfg is compiled.sdfg
