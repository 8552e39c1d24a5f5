"""``concat_where`` on a runtime condition with one branch defined everywhere
along the dimension (a literal, a ``broadcast``) and the other shifted past
the parameters' levels (``x(Koff[-1])`` reaches level ``N_K``): the
everywhere branch covers every level its piece may take, so a valid program
is accepted and computes what NumPy computes."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Field,
    FieldOffset,
    broadcast,
    concat_where,
    field_operator,
    int32,
    program,
    scan_operator,
)

V = Dimension("Vertex")
K = Dimension("K", kind=DimensionKind.VERTICAL)
Koff = FieldOffset("Koff", source=K, target=(K,))
BACKENDS = ["interpreter", "compiled"]
NV, NLEV = 5, 7


@field_operator
def above_literal(x: Field[[V, K], float], n: int32) -> Field[[V, K], float]:
    return concat_where(n - 1 <= K, 2.0, x(Koff[-1]))


@field_operator
def above_broadcast(x: Field[[V, K], float], n: int32) -> Field[[V, K], float]:
    return concat_where(n - 1 <= K, broadcast(3.0, (V, K)), x(Koff[-1]))


@field_operator
def above_static(x: Field[[V, K], float]) -> Field[[V, K], float]:
    return concat_where(K >= NLEV - 1, broadcast(2.0, (V, K)), x(Koff[-1]))


@scan_operator(axis=K, forward=False, init=-0.5)
def damp(state: float, y: float) -> float:
    return 0.5 * state + y * y


@field_operator
def scanned(x: Field[[V, K], float], n: int32) -> Field[[V, K], float]:
    t = -0.75 / (abs(x) + 0.25)
    return damp(concat_where(n - 1 <= K, broadcast(2.0, (V, K)), t(Koff[-1])))


@program
def levels(x: Field[[V, K], float], o1: Field[[V, K], float], o2: Field[[V, K], float],
           o3: Field[[V, K], float], o4: Field[[V, K], float], k0: int32, nlev: int32):
    above_literal(x, nlev, out=o1, domain={V: (0, NV), K: (k0, nlev - 2)})
    above_broadcast(x, nlev, out=o2, domain={V: (0, NV), K: (k0, nlev - 2)})
    above_static(x, out=o3, domain={V: (0, NV), K: (1, 5)})
    scanned(x, nlev, out=o4, domain={V: (0, NV), K: (k0, nlev - 2)})


def expected(x: np.ndarray, k0: int, nlev: int, outs: list[np.ndarray]) -> list[np.ndarray]:
    o1, o2, o3, o4 = (o.copy() for o in outs)
    for o in (o1, o2):
        o[:, k0:nlev - 2] = x[:, k0 - 1:nlev - 3]      # below nlev - 1: x one level down
    o3[:, 1:5] = x[:, 0:4]
    t = -0.75 / (np.abs(x) + 0.25)
    state = np.full(NV, -0.5)
    for k in range(nlev - 3, k0 - 1, -1):               # backward over the domain
        state = 0.5 * state + t[:, k - 1] ** 2
        o4[:, k] = state
    return [o1, o2, o3, o4]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k0", [1, 2])
def test_everywhere_branch_beside_a_shifted_one(backend, k0):
    rng = np.random.default_rng(k0)
    x = rng.random((NV, NLEV))
    outs = [rng.random((NV, NLEV)) for _ in range(4)]
    want = expected(x, k0, NLEV, outs)
    levels(x, *outs, k0, NLEV, backend=backend)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got, ref, rtol=1e-12)
