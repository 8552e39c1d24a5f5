"""A field operator called directly with ``out=`` whose arguments lack a
dimension of its declared result (only ``out=`` has ``K``) and whose value
shifts, along ``K``, a ``concat_where`` of broadcasts: as in GT4Py, a broadcast
has no end along ``K``, so the shifted value is defined on the whole of
``out=``'s levels (and of ``domain=``'s, literal or runtime), whose extent
``out=`` gives.  Interpreter and compiled code are compared with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    broadcast,
    concat_where,
    field_operator,
    int32,
    program,
)

BACKENDS = ["interpreter", "compiled"]
CellDim = Dimension("Cell")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
OFFSETS = {"Koff": KDim}


@field_operator
def _next_level(x: Field[Dims[CellDim], float]) -> Field[Dims[CellDim, KDim], float]:
    t = concat_where(KDim < 1, broadcast(x, (CellDim, KDim)), broadcast(2.0, (CellDim, KDim)))
    return t(Koff[1])


@field_operator
def _both_ways(x: Field[Dims[CellDim], float]) -> Field[Dims[CellDim, KDim], float]:
    t = concat_where(KDim < 1, broadcast(x, (CellDim, KDim)), broadcast(2.0, (CellDim, KDim)))
    return t(Koff[-1]) + t(Koff[2])


@field_operator
def _below_runtime(x: Field[Dims[CellDim], float], n: int32
                   ) -> Field[Dims[CellDim, KDim], float]:
    t = concat_where(KDim < n, broadcast(x, (CellDim, KDim)), broadcast(2.0, (CellDim, KDim)))
    return t(Koff[-1])


@program
def both_ways(x: Field[Dims[CellDim], float], out: Field[Dims[CellDim, KDim], float]):
    _both_ways(x, out=out)


def _t(x, k, n=1):
    return np.where(k < n, x, 2.0)


def _both_ways_numpy(x, levels):
    return np.stack([_t(x, k - 1) + _t(x, k + 2) for k in range(levels)], axis=1)


X = np.arange(1.0, 5.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shift_up_of_broadcast_pieces(backend):
    out = np.full((4, 5), 7.0)
    _next_level(X, out=out, offset_provider=OFFSETS, backend=backend)
    np.testing.assert_array_equal(out, np.full((4, 5), 2.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_shifts_both_ways_on_the_whole_of_out(backend):
    out = np.full((4, 5), 7.0)
    _both_ways(X, out=out, offset_provider=OFFSETS, backend=backend)
    np.testing.assert_array_equal(out, _both_ways_numpy(X, 5))
    # an out= of other levels: the same program
    out = np.full((4, 7), 7.0)
    _both_ways(X, out=out, offset_provider=OFFSETS, backend=backend)
    np.testing.assert_array_equal(out, _both_ways_numpy(X, 7))


@pytest.mark.parametrize("backend", BACKENDS)
def test_shifts_both_ways_on_a_domain(backend):
    want = _both_ways_numpy(X, 5)
    out = np.full((4, 5), 7.0)
    _both_ways(X, out=out, domain={CellDim: (1, 3), KDim: (0, 3)}, offset_provider=OFFSETS,
               backend=backend)
    w = np.full((4, 5), 7.0)
    w[1:3, 0:3] = want[1:3, 0:3]
    np.testing.assert_array_equal(out, w)
    out = np.full((4, 5), 7.0)
    _both_ways(X, out=out, domain={CellDim: (np.int32(1), np.int32(3)),
                                   KDim: (np.int32(2), np.int32(5))},
               offset_provider=OFFSETS, backend=backend)
    w = np.full((4, 5), 7.0)
    w[1:3, 2:5] = want[1:3, 2:5]
    np.testing.assert_array_equal(out, w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_from_a_program(backend):
    out = np.full((4, 6), 7.0)
    both_ways(X, out, offset_provider=OFFSETS, backend=backend)
    np.testing.assert_array_equal(out, _both_ways_numpy(X, 6))


@pytest.mark.parametrize("n", [0, 3])
@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_condition(backend, n):
    out = np.full((4, 6), 7.0)
    _below_runtime(X, n, out=out, offset_provider=OFFSETS, backend=backend)
    want = np.stack([_t(X, k - 1, n) for k in range(6)], axis=1)
    np.testing.assert_array_equal(out, want)


@field_operator
def _down_and_up(x: Field[Dims[CellDim], float]
                 ) -> tuple[Field[Dims[CellDim, KDim], float], Field[Dims[CellDim, KDim], float]]:
    t = concat_where(KDim < 1, broadcast(x, (CellDim, KDim)), broadcast(2.0, (CellDim, KDim)))
    return t(Koff[-1]), t(Koff[1]) * 3.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tuple_on_the_whole_of_out_and_on_a_tuple_of_domains(backend):
    down = np.stack([_t(X, k - 1) for k in range(5)], axis=1)
    up = np.stack([3.0 * _t(X, k + 1) for k in range(5)], axis=1)
    a, b = np.full((4, 5), 7.0), np.full((4, 5), 7.0)
    _down_and_up(X, out=(a, b), offset_provider=OFFSETS, backend=backend)
    np.testing.assert_array_equal(a, down)
    np.testing.assert_array_equal(b, up)
    a, b = np.full((4, 5), 7.0), np.full((4, 5), 7.0)
    _down_and_up(X, out=(a, b), domain=({CellDim: (0, 4), KDim: (0, 2)},
                                        {CellDim: (1, 4), KDim: (np.int32(2), np.int32(5))}),
                 offset_provider=OFFSETS, backend=backend)
    want_a, want_b = np.full((4, 5), 7.0), np.full((4, 5), 7.0)
    want_a[:, :2], want_b[1:, 2:] = down[:, :2], up[1:, 2:]
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
