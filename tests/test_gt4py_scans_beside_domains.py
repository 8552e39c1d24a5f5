"""GT4Py constructs the random-program generator once had to leave out because
the front end refused them: a scan in a tuple result under a literal level
stop, a scan of a ``concat_where`` on a runtime bound, a broadcast along K
read through a table by a K-annotated field operator, and a scan in a nested
``concat_where`` branch that is empty; and a scan in a ``concat_where`` piece
called directly without ``domain=``, which it once ran from level 0.  Each is
computed by both backends and compared with NumPy."""

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
    float64,
    int32,
    neighbor_sum,
    program,
    scan_operator,
)

C, E = Dimension("Cell"), Dimension("Edge")
K = Dimension("K", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E = FieldOffset("C2E", source=E, target=(C, C2EDim))
BACKENDS = ["interpreter", "compiled"]
TABLE = np.array([[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0]], dtype=np.int32)


@scan_operator(axis=K, forward=True, init=0.0)
def running_sum(state: float, y: float) -> float:
    return state + y


@field_operator
def sum_of_switched(x: Field[[C, K], float], n: int32) -> Field[[C, K], float]:
    return running_sum(concat_where(K < n, x, 2.0 * x))


@field_operator
def scan_and_shift(x: Field[[C, K], float]) -> tuple[Field[[C, K], float], Field[[C, K], float]]:
    return running_sum(x), x + 1.0


@field_operator
def gathered(e: Field[[E, K], float]) -> Field[[C, K], float]:
    return neighbor_sum(e(C2E), axis=C2EDim)


@field_operator
def gathered_levels(e0: Field[[E], float]) -> Field[[C, K], float]:
    return gathered(broadcast(e0, (E, K)))


@field_operator
def nested_empty_scan(x: Field[[C, K], float], y: Field[[C, K], float]
                      ) -> Field[[C, K], float]:
    return concat_where(K >= 2, concat_where(K < 1, running_sum(x), x), y)


@program
def all_four(x: Field[[C, K], float], y: Field[[C, K], float], e0: Field[[E], float],
             o1: Field[[C, K], float], o2: Field[[C, K], float], o3: Field[[C, K], float],
             o4: Field[[C, K], float], o5: Field[[C, K], float], n: int32):
    sum_of_switched(x, n, out=o1)
    scan_and_shift(x, out=(o2, o3), domain={C: (0, 4), K: (0, 3)})
    gathered_levels(e0, out=o4)
    nested_empty_scan(x, y, out=o5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_constructs_the_generator_once_left_out(backend):
    rng = np.random.default_rng(11)
    x, y, e0 = rng.random((4, 6)), rng.random((4, 6)), rng.random(5)
    outs = [rng.random((4, 6)) for _ in range(5)]
    want = [o.copy() for o in outs]
    want[0][...] = np.cumsum(np.where(np.arange(6) < 3, x, 2.0 * x), axis=1)
    want[1][:, :3] = np.cumsum(x, axis=1)[:, :3]
    want[2][:, :3] = x[:, :3] + 1.0
    want[3][...] = e0[TABLE].sum(axis=1)[:, None]
    want[4][...] = np.where(np.arange(6) >= 2, x, y)
    all_four(x, y, e0, *outs, 3, offset_provider={"C2E": TABLE}, backend=backend)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got, ref, rtol=1e-12)


@field_operator
def doubled(x: Field[[C, K], float]) -> Field[[C, K], float]:
    return 2.0 * x


@field_operator
def number_broadcasts(n: int32) -> Field[[C, K], float]:
    # GT4Py's broadcast of a number has the dimensions it names: mixed with a
    # value over cells only, the result still fits a (Cell, K) parameter
    ones = broadcast(1.5, (C, K)) / 0.5
    typed = broadcast(float64("0.25"), (C, K)) + 0.25
    return doubled(concat_where(C < n, ones, broadcast(-0.75, (C,)))) + doubled(
        concat_where(C < n, typed, broadcast(1.0, (C,))))


@program
def from_number_broadcasts(o: Field[[C, K], float], n: int32):
    number_broadcasts(n, out=o)


@pytest.mark.parametrize("backend", BACKENDS)
def test_number_broadcasts_fit_parameters_annotated_with_their_dimensions(backend):
    o = np.zeros((4, 6))
    from_number_broadcasts(o, 2, backend=backend)
    want = np.where(np.arange(4)[:, None] < 2, 2.0 * 3.0 + 2.0 * 0.5, 2.0 * -0.75 + 2.0)
    np.testing.assert_allclose(o, np.broadcast_to(want, (4, 6)))


@scan_operator(axis=K, forward=True, init=1.0)
def decaying_sum(state: float, y: float) -> float:
    return 0.5 * state + y


@field_operator
def scan_from_level_one(x: Field[[C, K], float]) -> Field[[C, K], float]:
    return concat_where(K > 0, decaying_sum(x), x)


@program
def scan_from_level_one_program(x: Field[[C, K], float], out: Field[[C, K], float]):
    scan_from_level_one(x, out=out)


@pytest.mark.parametrize("backend", [*BACKENDS, None])
def test_a_direct_call_without_domain_starts_a_piece_scan_at_the_piece(backend):
    """``out=`` without ``domain=``: its whole interval is the target, as in a
    program body, so the scan of the piece from level 1 starts there with its
    ``init`` (no ``backend=``: found by the source on the second call)."""
    named = {} if backend is None else {"backend": backend}
    for _ in range(2):
        x = np.random.default_rng(3).random((4, 5))
        want = x.copy()
        state = 1.0
        for k in range(1, 5):
            state = 0.5 * state + x[:, k]
            want[:, k] = state
        out = np.zeros((4, 5))
        scan_from_level_one(x, out=out, **named)
        np.testing.assert_allclose(out, want, rtol=1e-14)
        in_program = np.zeros((4, 5))
        scan_from_level_one_program(x, in_program, **named)
        np.testing.assert_allclose(in_program, want, rtol=1e-14)
