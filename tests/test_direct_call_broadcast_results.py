"""A field operator whose value lacks dimensions of its declared result, called
directly with ``out=`` (icon4py's ``_set_zero_c_k(out=f, domain=…)`` and its
tuple-valued relatives): ``broadcast(0.0, (Cell, K))`` has no argument to size
it, ``broadcast(a, (Cell, K))`` of ``a`` over ``K`` none for ``Cell``; the
value is constant along those dimensions and ``out=`` gives their extent, as a
program's ``out=`` target does.  A ``concat_where`` along such a dimension
(``concat_where(K < nflat, 0.0, broadcast(a, (Cell, K)))``) is defined over
the whole of ``out=``'s extent too.  Interpreter and compiled code are compared
with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ArgumentError, TensorIRError
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    broadcast,
    concat_where,
    field_operator,
    int32,
    program,
)

BACKENDS = ["interpreter", "compiled"]
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)


@field_operator
def _set_zero_c_k() -> Field[Dims[CellDim, KDim], float]:
    return broadcast(0.0, (CellDim, KDim))


@field_operator
def _init_two_e_k() -> tuple[Field[Dims[EdgeDim, KDim], float],
                             Field[Dims[EdgeDim, KDim], float]]:
    return broadcast(0.0, (EdgeDim, KDim)), broadcast(1.5, (EdgeDim, KDim))


@field_operator
def _profile_to_cells(p: Field[Dims[KDim], float]) -> Field[Dims[CellDim, KDim], float]:
    return broadcast(p, (CellDim, KDim))


@field_operator
def _zero_int() -> Field[Dims[CellDim, KDim], int32]:
    return broadcast(0, (CellDim, KDim))


@program
def set_zero_c_k(f: Field[Dims[CellDim, KDim], float]):
    _set_zero_c_k(out=f)


@pytest.mark.parametrize("backend", BACKENDS)
def test_number_broadcast_fills_out(backend):
    f = np.full((5, 4), 7.0)
    _set_zero_c_k(out=f, offset_provider={}, backend=backend)
    assert not f.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_number_broadcast_fills_the_domain_only(backend):
    f = np.full((5, 4), 7.0)
    _set_zero_c_k(out=f, domain={CellDim: (1, 3), KDim: (1, 4)}, offset_provider={},
                  backend=backend)
    want = np.full((5, 4), 7.0)
    want[1:3, 1:4] = 0.0
    np.testing.assert_array_equal(f, want)
    # the bounds are arguments of one program: other bounds reuse it
    _set_zero_c_k(out=f, domain={CellDim: (0, 5), KDim: (0, 1)}, offset_provider={},
                  backend=backend)
    want[:, 0] = 0.0
    np.testing.assert_array_equal(f, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_operator_from_a_program(backend):
    f = np.full((3, 6), 7.0)
    set_zero_c_k(f, backend=backend)
    assert not f.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_of_broadcasts(backend):
    a, b = np.full((6, 3), 7.0), np.full((6, 3), 7.0)
    _init_two_e_k(out=(a, b), offset_provider={}, backend=backend)
    np.testing.assert_array_equal(a, np.zeros((6, 3)))
    np.testing.assert_array_equal(b, np.full((6, 3), 1.5))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_of_broadcasts_on_one_domain_and_on_a_tuple_of_domains(backend):
    a, b = np.full((6, 3), 7.0), np.full((6, 3), 7.0)
    _init_two_e_k(out=(a, b), domain={EdgeDim: (2, 5), KDim: (0, 2)}, offset_provider={},
                  backend=backend)
    want_a, want_b = np.full((6, 3), 7.0), np.full((6, 3), 7.0)
    want_a[2:5, 0:2], want_b[2:5, 0:2] = 0.0, 1.5
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
    _init_two_e_k(out=(a, b), domain=({EdgeDim: (0, 1), KDim: (0, 3)},
                                      {EdgeDim: (5, 6), KDim: (2, 3)}),
                  offset_provider={}, backend=backend)
    want_a[0, :], want_b[5, 2] = 0.0, 1.5
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_broadcast_along_a_dimension_it_lacks(backend):
    p = np.arange(4.0)
    f = np.full((3, 4), 7.0)
    _profile_to_cells(p, out=f, backend=backend)
    np.testing.assert_array_equal(f, np.broadcast_to(p, (3, 4)))
    g = np.full((3, 4), 7.0)
    _profile_to_cells(p, out=g, domain={CellDim: (1, 2), KDim: (1, 3)}, backend=backend)
    want = np.full((3, 4), 7.0)
    want[1, 1:3] = p[1:3]
    np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_broadcast(backend):
    f = np.full((2, 3), 5, dtype=np.int32)
    _zero_int(out=f, domain={KDim: (1, 2)}, backend=backend)
    np.testing.assert_array_equal(f, [[5, 0, 5], [5, 0, 5]])


def test_without_out_the_size_is_asked_for():
    with pytest.raises(ArgumentError, match="pass out="):
        _set_zero_c_k()


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_longer_than_the_argument_is_refused(backend):
    with pytest.raises(TensorIRError, match="K"):
        _profile_to_cells(np.arange(3.0), out=np.zeros((2, 4)), backend=backend)


def test_wrong_out_dtype_is_refused():
    with pytest.raises(ArgumentError, match="dtype|int32|float"):
        _zero_int(out=np.zeros((2, 3)))


# A concat_where along a dimension that only the declared result has (no
# argument has K): the value is defined over the whole of out='s K, which the
# condition cuts, whether it is a literal or runtime bound.


@field_operator
def _top_levels_zero(a: Field[Dims[CellDim], float], nflat: int32,
                     nlev: int32) -> tuple[Field[Dims[CellDim, KDim], float],
                                           Field[Dims[CellDim, KDim], float]]:
    x = concat_where(KDim < nflat, 0.0, broadcast(a, (CellDim, KDim)))
    y = concat_where((KDim >= nflat) & (KDim < nlev - 1), broadcast(a, (CellDim, KDim)) * 2.0,
                     -1.0)
    return x, y


@field_operator
def _surface_marked(nlev: int32) -> Field[Dims[CellDim, KDim], float]:
    return concat_where(KDim == nlev, 2.0, broadcast(1.0, (CellDim, KDim)))


@field_operator
def _below_two() -> Field[Dims[CellDim, KDim], float]:
    return concat_where(KDim < 2, broadcast(0.0, (CellDim, KDim)), broadcast(1.0, (CellDim, KDim)))


def _top_levels_zero_numpy(a, nflat, nlev, levels):
    k = np.arange(levels)
    return (np.where(k < nflat, 0.0, a[:, None]),
            np.where((k >= nflat) & (k < nlev - 1), 2.0 * a[:, None], -1.0))


@pytest.mark.parametrize("nlev", [6, 8])
@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_where_along_a_dimension_only_the_result_has(backend, nlev):
    a = np.arange(1.0, 6.0)
    x, y = np.full((5, nlev), 7.0), np.full((5, nlev), 7.0)
    _top_levels_zero(a, 2, nlev, out=(x, y), offset_provider={}, backend=backend)
    wx, wy = _top_levels_zero_numpy(a, 2, nlev, nlev)
    np.testing.assert_array_equal(x, wx)
    np.testing.assert_array_equal(y, wy)
    # on a domain of NumPy integers, and on a tuple of domains into outputs of
    # different lengths
    x, y = np.full((5, nlev), 7.0), np.full((5, nlev), 7.0)
    _top_levels_zero(a, np.int32(2), np.int32(nlev), out=(x, y),
                     domain={CellDim: (np.int32(1), np.int32(4)),
                             KDim: (np.int32(1), np.int32(nlev))},
                     offset_provider={}, backend=backend)
    want_x, want_y = np.full((5, nlev), 7.0), np.full((5, nlev), 7.0)
    want_x[1:4, 1:], want_y[1:4, 1:] = wx[1:4, 1:], wy[1:4, 1:]
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(y, want_y)
    x, y = np.full((5, nlev), 7.0), np.full((5, nlev + 1), 7.0)
    _top_levels_zero(a, 2, nlev, out=(x, y),
                     domain=({CellDim: (0, 5), KDim: (0, nlev)},
                             {CellDim: (1, 5), KDim: (np.int32(2), np.int32(nlev + 1))}),
                     offset_provider={}, backend=backend)
    wy = _top_levels_zero_numpy(a, 2, nlev, nlev + 1)[1]
    want_y = np.full((5, nlev + 1), 7.0)
    want_y[1:, 2:] = wy[1:, 2:]
    np.testing.assert_array_equal(x, wx)
    np.testing.assert_array_equal(y, want_y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_where_of_numbers_only(backend):
    f = np.full((3, 7), 9.0)
    _surface_marked(6, out=f, offset_provider={}, backend=backend)
    want = np.ones((3, 7))
    want[:, 6] = 2.0
    np.testing.assert_array_equal(f, want)
    g = np.full((3, 5), 9.0)
    _below_two(out=g, domain={CellDim: (1, 3), KDim: (np.int32(1), np.int32(5))},
               offset_provider={}, backend=backend)
    want = np.full((3, 5), 9.0)
    want[1:, 1], want[1:, 2:] = 0.0, 1.0
    np.testing.assert_array_equal(g, want)


def test_concat_where_without_out_asks_for_it():
    with pytest.raises(ArgumentError, match="pass out="):
        _surface_marked(6)



@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broadcast_read_through_a_table_without_the_tables_source(backend):
    """Nothing gives ``Edge``'s extent (no parameter is over it): the value is
    constant along ``Edge``, so every neighbour reads it, and ``-1`` entries
    are skipped by the sum (more in test_broadcast_through_tables)."""
    from tensorir_dace.frontend import FieldOffset, neighbor_sum
    c2e_dim = Dimension("C2E", DimensionKind.LOCAL)
    c2e = FieldOffset("C2E", source=EdgeDim, target=(CellDim, c2e_dim))

    @field_operator
    def _edge_profile_at_cells(p: Field[Dims[KDim], float]) -> Field[Dims[CellDim, KDim], float]:
        t = broadcast(p, (EdgeDim, KDim))
        return neighbor_sum(t(c2e), axis=c2e_dim)

    table = np.array([[0, 1, 2], [3, -1, 4], [-1, -1, -1], [5, 0, 1]], np.int32)
    out = np.zeros((4, 3))
    p = np.array([1.0, 2.0, 3.0])
    _edge_profile_at_cells(p, out=out, offset_provider={"C2E": table}, backend=backend)
    np.testing.assert_allclose(out, (table >= 0).sum(1)[:, None] * p[None, :])
