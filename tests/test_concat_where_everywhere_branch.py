"""``concat_where`` on a runtime condition with one branch defined everywhere
along the dimension (a literal, a ``broadcast``) and the other shifted past
the parameters' levels (``x(Koff[-1])`` reaches level ``N_K``): the
everywhere branch covers every level its piece may take, so a valid program
is accepted and computes what NumPy computes."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import TensorIRError
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


# Direct calls into an out= a level longer than the inputs (half levels
# written from full levels): the everywhere branch at a runtime last level
# (``K == nlev``, or past ``K < nlev``) covers the level the inputs lack, with
# domain= or without it, and a tuple of domains; a level that neither branch
# covers is refused at the call.


@field_operator
def surface_literal(x: Field[[V, K], float], nlev: int32) -> Field[[V, K], float]:
    return concat_where(K == nlev, 0.0, x)


@field_operator
def below_broadcast(x: Field[[V, K], float], nlev: int32
                    ) -> tuple[Field[[V, K], float], Field[[V, K], float]]:
    return concat_where(K < nlev, x, broadcast(1.0, (V, K))), concat_where(K == nlev, 2.0, -x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_everywhere_branch_at_the_last_level_of_a_longer_out(backend):
    x = np.random.default_rng(9).random((NV, NLEV))
    want = np.concatenate([x, np.zeros((NV, 1))], axis=1)
    o = np.full((NV, NLEV + 1), 7.0)
    surface_literal(x, NLEV, out=o, backend=backend)
    np.testing.assert_allclose(o, want)
    o = np.full((NV, NLEV + 1), 7.0)
    surface_literal(x, np.int32(NLEV), out=o, domain={V: (1, NV), K: (np.int32(2), NLEV + 1)},
                    backend=backend)
    np.testing.assert_allclose(o[1:, 2:], want[1:, 2:])
    assert (o[0] == 7.0).all() and (o[:, :2] == 7.0).all()
    o1, o2 = np.full((NV, NLEV + 1), 7.0), np.full((NV, NLEV + 1), 7.0)
    below_broadcast(x, NLEV, out=(o1, o2), backend=backend)
    np.testing.assert_allclose(o1, np.concatenate([x, np.ones((NV, 1))], axis=1))
    np.testing.assert_allclose(o2, np.concatenate([-x, np.full((NV, 1), 2.0)], axis=1))
    o1, o2 = np.full((NV, NLEV + 1), 7.0), np.full((NV, NLEV + 1), 7.0)
    below_broadcast(x, NLEV, out=(o1, o2),
                    domain=({V: (0, NV), K: (1, NLEV + 1)}, {V: (0, 2), K: (NLEV, NLEV + 1)}),
                    backend=backend)
    np.testing.assert_allclose(o1[:, 1:], np.concatenate([x, np.ones((NV, 1))], axis=1)[:, 1:])
    np.testing.assert_array_equal(o1[:, 0], 7.0)
    np.testing.assert_allclose(o2[:2, NLEV], 2.0)
    np.testing.assert_array_equal(o2[:, :NLEV], 7.0)
    np.testing.assert_array_equal(o2[2:], 7.0)
    with pytest.raises(TensorIRError):      # level NLEV in neither piece
        surface_literal(x, NLEV - 1, out=np.zeros((NV, NLEV + 1)), backend=backend)
    with pytest.raises(TensorIRError):
        surface_literal(x, NLEV - 1, out=np.zeros((NV, NLEV + 1)),
                        domain={V: (0, NV), K: (0, NLEV + 1)}, backend=backend)


@program
def both_below_broadcast(x: Field[[V, K], float], o1: Field[[V, K], float],
                         o2: Field[[V, K], float], nlev: int32):
    below_broadcast(x, nlev, out=(o1, o2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_everywhere_branch_at_the_last_level_of_longer_outputs_in_a_program(backend):
    # the same in a program body: out=(o1, o2) over the same levels is the
    # statement's target, as one output is
    x = np.random.default_rng(10).random((NV, NLEV))
    o1, o2 = np.full((NV, NLEV + 1), 7.0), np.full((NV, NLEV + 1), 7.0)
    both_below_broadcast(x, o1, o2, NLEV, backend=backend)
    np.testing.assert_allclose(o1, np.concatenate([x, np.ones((NV, 1))], axis=1))
    np.testing.assert_allclose(o2, np.concatenate([-x, np.full((NV, 1), 2.0)], axis=1))
    with pytest.raises(TensorIRError):      # level NLEV in neither piece of o2
        both_below_broadcast(x, o1, o2, NLEV - 1, backend=backend)
