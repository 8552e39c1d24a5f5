"""GT4Py's field constructors (``as_field``, ``zeros``, ``ones``, ``full``,
``empty``, ``domain``) and the field interface of their results
(``asnumpy()``, ``ndarray``, ``domain``, ``np.asarray``), as code written for
GT4Py builds the arguments of its programs, checked against NumPy through
the interpreter and the compiled code."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import FrontendError
from tensorir_dace import frontend as gtx

RNG = np.random.default_rng(36)
CellDim = gtx.Dimension("Cell")
KDim = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)
Koff = gtx.FieldOffset("Koff", source=KDim, target=(KDim,))
BACKENDS = ["interpreter", "compiled"]
CK = gtx.Field[gtx.Dims[CellDim, KDim], gtx.float64]


@gtx.field_operator
def _axpy(a: CK, x: CK, y: CK) -> tuple[CK, CK]:
    return a * x + y, a - y


@gtx.program
def axpy(a: CK, x: CK, y: CK, r: CK, d: CK,
         horizontal_start: gtx.int32, horizontal_end: gtx.int32,
         vertical_start: gtx.int32, vertical_end: gtx.int32):
    _axpy(a, x, y, out=(r, d), domain={CellDim: (horizontal_start, horizontal_end),
                                       KDim: (vertical_start, vertical_end)})


@gtx.field_operator
def _down_difference(w: gtx.Field[[CellDim, KDim], float]) -> gtx.Field[[CellDim, KDim], float]:
    return w - w(Koff[-1])


@gtx.field_operator
def _count_up(n: gtx.Field[[CellDim, KDim], gtx.int32]) -> gtx.Field[[CellDim, KDim], gtx.int32]:
    return n + n(Koff[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_writes_fields_made_by_the_constructors_in_place(backend):
    n, nk = 9, 6
    a, x, y = (gtx.as_field((CellDim, KDim), RNG.random((n, nk))) for _ in range(3))
    r = gtx.zeros({CellDim: n, KDim: nk})
    d = gtx.full({CellDim: range(n), KDim: (0, nk)}, -1.0)
    buffer = r.asnumpy()
    axpy.with_backend(None if backend == "interpreter" else "compiled")(
        a, x, y, r, d, 2, 7, 1, nk, offset_provider={})
    an, xn, yn = a.asnumpy(), x.asnumpy(), y.asnumpy()
    want_r, want_d = np.zeros((n, nk)), np.full((n, nk), -1.0)
    want_r[2:7, 1:] = an[2:7, 1:] * xn[2:7, 1:] + yn[2:7, 1:]
    want_d[2:7, 1:] = an[2:7, 1:] - yn[2:7, 1:]
    np.testing.assert_allclose(r.asnumpy(), want_r, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(d), want_d, rtol=1e-15)
    assert r.asnumpy() is buffer and r.ndarray is buffer      # written in place, not copied
    copied = np.array(r)                                      # np.array copies, as for arrays
    copied[0, 0] = 123.0
    assert r.asnumpy()[0, 0] == want_r[0, 0] and np.asarray(r) is buffer


@gtx.program
def count_up(n: gtx.Field[[CellDim, KDim], gtx.int32], out: gtx.Field[[CellDim, KDim], gtx.int32]):
    _count_up(n, out=out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_origin_gives_the_halo_a_shift_reads(backend):
    """``origin={KDim: 1}``: element 1 is level 0, so level -1 is there for
    ``w(Koff[-1])`` at level 0."""
    n, nk = 5, 7
    data = RNG.random((n, nk + 1))
    w = gtx.as_field([CellDim, KDim], data, origin={KDim: 1})
    assert w.domain.ranges == ((0, n), (-1, nk))
    out = gtx.empty({CellDim: n, KDim: nk})
    fn = _down_difference.with_backend(None if backend == "interpreter" else "compiled")
    fn(w, out=out, offset_provider={"Koff": KDim})
    np.testing.assert_allclose(out.asnumpy(), data[:, 1:] - data[:, :-1], rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_domain_that_does_not_start_at_zero_places_the_array(backend):
    """A field over ``K[2:8)`` holds level 2 in element 0; the result over
    ``K[2:7)`` is written into a field over those levels."""
    n = 4
    data = RNG.integers(-50, 50, (n, 6)).astype(np.int32)
    counts = gtx.as_field(gtx.domain([(CellDim, range(n)), (KDim, range(2, 8))]), data)
    assert counts.dtype == np.int32 and counts.domain.shape == (n, 6)
    out = gtx.zeros({CellDim: n, KDim: (2, 7)}, dtype=gtx.int32)
    fn = count_up.with_backend(None if backend == "interpreter" else "compiled")
    fn(counts, out, offset_provider={"Koff": KDim})
    np.testing.assert_array_equal(out.asnumpy(), data[:, :-1] + data[:, 1:])


def test_constructors_take_gt4py_dtypes_and_domains():
    dom = gtx.domain({CellDim: 3, KDim: (1, 5)})
    assert dom.shape == (3, 4) and dom.ranges == ((0, 3), (1, 5))
    assert gtx.domain(dom) is dom
    assert gtx.ones(dom, gtx.float32).dtype == np.float32
    assert np.all(gtx.ones(dom, dtype=np.float32).asnumpy() == 1)
    assert gtx.zeros(dom, "int64").dtype == np.int64
    assert gtx.empty(dom, dtype=bool).dtype == np.bool_
    assert gtx.full(dom, 3).dtype == np.int64
    assert gtx.full(dom, 2.5, dtype=gtx.float32).asnumpy()[2, 3] == np.float32(2.5)
    assert gtx.full(dom, np.int32(4)).dtype == np.int32
    f = gtx.zeros(dom)
    assert f.shape == (3, 4) and f.ndim == 2 and f.dims == (CellDim, KDim)
    assert f.intervals == {"K": (1, 5)}
    # as_field copies, as GT4Py's does, and converts to the dtype asked for
    src = np.arange(12.0).reshape(3, 4)
    g = gtx.as_field((CellDim, KDim), src, dtype=gtx.float32)
    src[0, 0] = 99.0
    assert g.dtype == np.float32 and g.asnumpy()[0, 0] == 0.0


@pytest.mark.parametrize("call, message", [
    (lambda: gtx.as_field((CellDim,), np.zeros((2, 3))), "1 dimensions for an array of shape"),
    (lambda: gtx.as_field({CellDim: 2, KDim: 4}, np.zeros((2, 3))), "does not fit"),
    (lambda: gtx.as_field((CellDim, KDim), np.zeros((2, 3)), origin={Koff: 1}),
     "origin names"),
    (lambda: gtx.as_field({CellDim: 2}, np.zeros(2), origin={CellDim: 1}), "origin= goes with"),
    (lambda: gtx.zeros({CellDim: 2.5}), "is not a size"),
    (lambda: gtx.zeros({CellDim: (4, 2)}), "ends"),
    (lambda: gtx.zeros({CellDim: range(0, 8, 2)}), "step 1"),
    (lambda: gtx.zeros([(CellDim, 2), (CellDim, 3)]), "appears twice"),
    (lambda: gtx.zeros({"Cell": 2}), "is not a dimension"),
    (lambda: gtx.zeros(5), "is not a domain"),
    (lambda: gtx.zeros({CellDim: 2}, dtype=complex), "is not an element type"),
])
def test_bad_constructor_arguments_say_what_to_give(call, message):
    with pytest.raises(FrontendError, match=message):
        call()


EdgeDim = gtx.Dimension("Edge")
C2EDim = gtx.Dimension("C2E", gtx.DimensionKind.LOCAL)
C2E = gtx.FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))


@gtx.field_operator
def _weighted_edges(e: gtx.Field[[EdgeDim, KDim], float], w: gtx.Field[[CellDim, C2EDim], float]
                    ) -> gtx.Field[[CellDim, KDim], float]:
    return gtx.neighbor_sum(e(C2E) * w, axis=C2EDim)


@gtx.program
def weighted_edges(e: gtx.Field[[EdgeDim, KDim], float], w: gtx.Field[[CellDim, C2EDim], float],
                   out: gtx.Field[[CellDim, KDim], float]):
    _weighted_edges(e, w, out=out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sparse_field_over_a_local_dimension_is_taken_by_its_dimensions(backend):
    """``as_field((CellDim, C2EDim), w)`` names the local dimension the
    annotation declares (which the IR calls ``_NB_0``)."""
    nc, ne, nk = 6, 9, 4
    table = RNG.integers(0, ne, (nc, 3)).astype(np.int32)
    e = gtx.as_field([EdgeDim, KDim], RNG.random((ne, nk)))
    w = gtx.as_field([CellDim, C2EDim], RNG.random((nc, 3)))
    out = gtx.zeros({CellDim: nc, KDim: nk})
    weighted_edges.with_backend(None if backend == "interpreter" else "compiled")(
        e, w, out, offset_provider={"C2E": gtx.NeighborTableOffsetProvider(
            table, CellDim, EdgeDim, 3)})
    want = (e.asnumpy()[table] * w.asnumpy()[:, :, None]).sum(axis=1)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-14)


@gtx.field_operator
def _interpolate(w: gtx.Field[[CellDim, KDim], float]) -> gtx.Field[[CellDim, KDim], float]:
    return 0.5 * (w + w(Koff[1]))


@gtx.program
def full_levels(w: gtx.Field[[CellDim, KDim], float], o: gtx.Field[[CellDim, KDim], float]):
    _interpolate(w, out=o)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_half_level_field_is_one_level_longer_as_its_array_is(backend):
    """The lengths rule holds for fields as for arrays: ``w`` over ``nlev + 1``
    half levels beside ``o`` over ``nlev`` full levels, both annotated ``KDim``."""
    nlev = 6
    data = RNG.random((4, nlev + 1))
    w = gtx.as_field((CellDim, KDim), data)
    o = gtx.zeros({CellDim: 4, KDim: nlev})
    full_levels.with_backend(None if backend == "interpreter" else "compiled")(
        w, o, offset_provider={"Koff": KDim})
    np.testing.assert_allclose(o.asnumpy(), 0.5 * (data[:, :-1] + data[:, 1:]), rtol=1e-15)
    o2 = gtx.zeros({CellDim: 4, KDim: nlev})
    full_levels.with_backend(None if backend == "interpreter" else "compiled")(
        gtx.with_dims(data, CellDim, KDim), o2, offset_provider={"Koff": KDim})
    np.testing.assert_array_equal(o2.asnumpy(), o.asnumpy())


def test_the_ir_of_a_program_only_half_levels_satisfy_points_to_its_specialisations():
    from tensorir_dace import format
    from tensorir_dace.errors import CoverageError
    prog = gtx.program(full_levels.fn)           # a fresh program object
    w, o = RNG.random((3, 5)), np.zeros((3, 4))
    with pytest.raises(CoverageError, match="needs K") as before:
        prog.ir                                   # equal lengths: no program
    assert "specialize" not in str(before.value)
    prog(w, o, offset_provider={"Koff": KDim}, backend="interpreter")
    with pytest.raises(CoverageError, match=r"prog\.specialize\(<arguments>\)\.program \(1 so"):
        prog.format()
    text = format(prog.specialize(w, o, offset_provider={"Koff": KDim}).program)
    assert "K[0:N_K+1]" in text
