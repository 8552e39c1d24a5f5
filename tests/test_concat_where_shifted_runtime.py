"""A ``concat_where`` on a runtime condition whose pieces are cut to the
statement's runtime target, then read shifted (``t(Koff[1])`` at the target's
last level reads one level above it): the pieces reach past the target by the
shifts that follow.  Interpreter and compiled code are compared with NumPy."""

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
Cell = Dimension("Cell")
K = Dimension("K", kind=DimensionKind.VERTICAL)
KHalf = Dimension("KHalf", kind=DimensionKind.VERTICAL)
Koff = FieldOffset("Koff", source=K, target=(K,))
RNG = np.random.default_rng(3)


@field_operator
def _next_level(x: Field[Dims[Cell, K], int32], n: int32) -> Field[Dims[Cell, K], int32]:
    t = concat_where(K < 1, x + x, concat_where(K < n - 1, broadcast(int32(2), (Cell, K)), x))
    return t(Koff[1])


@program
def next_level(x: Field[Dims[Cell, K], int32], o: Field[Dims[Cell, K], int32], k0: int32,
               k1: int32, n: int32):
    _next_level(x, n, out=o, domain={Cell: (1, 4), K: (k0, k1)})


@field_operator
def _next_level_beside_half_levels(x: Field[Dims[Cell, K], int32],
                                   h: Field[Dims[Cell, KHalf], float], n: int32
                                   ) -> Field[Dims[Cell, K], int32]:
    t = concat_where(K < 1, x + x, concat_where(K < n - 1, broadcast(int32(2), (Cell, K)), x))
    return t(Koff[1])


@program
def next_level_below_3(x: Field[Dims[Cell, K], int32], h: Field[Dims[Cell, KHalf], float],
                       o: Field[Dims[Cell, K], int32], k0: int32, n: int32):
    _next_level_beside_half_levels(x, h, n, out=o, domain={Cell: (1, 4), K: (k0, 3)})


def _numpy(x, n, k0, k1):
    def t(k):
        return 2 * x[:, k] if k < 1 else (np.full(x.shape[0], 2) if k < n - 1 else x[:, k])
    want = np.zeros_like(x)
    for k in range(k0, k1):
        want[1:4, k] = t(k + 1)[1:4]
    return want


@pytest.mark.parametrize("bounds", [(1, 3), (0, 4), (2, 5)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_runtime_concat_where_read_one_level_up(backend, bounds):
    x = RNG.integers(-9, 9, (5, 6)).astype(np.int32)
    k0, k1 = bounds
    o = np.zeros((5, 6), dtype=np.int32)
    next_level(x, o, k0, k1, 5, backend=backend)
    np.testing.assert_array_equal(o, _numpy(x, 5, k0, k1))


@pytest.mark.parametrize("k0", [0, 1, 2])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_literal_stop_of_the_domain(backend, k0):
    x = RNG.integers(-9, 9, (5, 6)).astype(np.int32)
    o = np.zeros((5, 6), dtype=np.int32)
    next_level_below_3(x, np.zeros((5, 7)), o, k0, 5, backend=backend)
    np.testing.assert_array_equal(o, _numpy(x, 5, k0, 3))
