"""A field operator whose value lacks dimensions of its declared result, called
directly with ``out=`` (icon4py's ``_set_zero_c_k(out=f, domain=…)`` and its
tuple-valued relatives): ``broadcast(0.0, (Cell, K))`` has no argument to size
it, ``broadcast(a, (Cell, K))`` of ``a`` over ``K`` none for ``Cell``; the
value is constant along those dimensions and ``out=`` gives their extent, as a
program's ``out=`` target does.  Interpreter and compiled code are compared
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
