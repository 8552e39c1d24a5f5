"""``concat_where`` with a piece constant along the condition's dimension (a
``broadcast`` of a field without it, a literal, a ``where`` of such values):
as in GT4Py, where such a value has an unbounded domain along the dimension,
the piece at an open end of the condition has no end there, so a shift of the
result never draws its end inside a target.  ``concat_where(K < 1, x,
broadcast(s, (Cell, K)))(Koff[1])`` is defined on every level of ``out``: ``s``
at all of them but the ones ``x``'s level 0 gives.  Values whose domains are
intersected (``x + broadcast(…)``, ``where(m, x, broadcast(…))``) keep ``x``'s
end and stay refused when shifted past it, as does a bounded piece read
beyond its branch."""

from __future__ import annotations

from collections.abc import Callable

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
    where,
)

Cell = Dimension("Cell")
K = Dimension("K", kind=DimensionKind.VERTICAL)
Koff = FieldOffset("Koff", source=K, target=(K,))
BACKENDS = ["interpreter", "compiled"]
NC, NK = 4, 6
OFFSETS = {"Koff": K}


@field_operator
def above(s: Field[[Cell], float], x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    t = concat_where(K < 1, x, broadcast(s, (Cell, K)))
    return t(Koff[1])


@field_operator
def below(s: Field[[Cell], float], x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    t = concat_where(K < 2, broadcast(s, (Cell, K)), x)
    return t(Koff[-1])


@field_operator
def literal_twice(x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    t = concat_where(K >= 2, 7.0, x)
    return t(Koff[1]) + t(Koff[2]) - t     # (a let read three times)


@field_operator
def nested(s: Field[[Cell], float], x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    t = concat_where(K < 1, x, concat_where(K < 3, broadcast(s, (Cell, K)), 2.0))
    return t(Koff[1])(Koff[1])


@field_operator
def without_k(s: Field[[Cell], float], m: Field[[Cell], bool], x: Field[[Cell, K], float]
              ) -> Field[[Cell, K], float]:
    t = concat_where(K < 1, x, where(m, broadcast(s, (Cell,)), broadcast(3.0, (Cell,))))
    return t(Koff[1])


@field_operator
def runtime_bound(s: Field[[Cell], float], x: Field[[Cell, K], float], n: int32
                  ) -> Field[[Cell, K], float]:
    t = concat_where(K >= n, broadcast(s, (Cell, K)), x)
    return t(Koff[1])


@field_operator
def runtime_below(s: Field[[Cell], float], x: Field[[Cell, K], float], n: int32
                  ) -> Field[[Cell, K], float]:
    return concat_where(K < n, broadcast(s, (Cell, K)), x)(Koff[-1])


@program
def shifted(s: Field[[Cell], float], m: Field[[Cell], bool], x: Field[[Cell, K], float],
            n: int32, o1: Field[[Cell, K], float], o2: Field[[Cell, K], float],
            o3: Field[[Cell, K], float], o4: Field[[Cell, K], float],
            o5: Field[[Cell, K], float], o6: Field[[Cell, K], float],
            o7: Field[[Cell, K], float]):
    above(s, x, out=o1)
    below(s, x, out=o2)
    literal_twice(x, out=o3)
    nested(s, x, out=o4)
    without_k(s, m, x, out=o5)
    runtime_bound(s, x, n, out=o6)
    runtime_below(s, x, n, out=o7)


Level = Callable[[int], np.ndarray]


def levels(value: Level, shift: int = 0) -> np.ndarray:
    """The levels ``0 … NK - 1`` of ``value(k + shift)`` as a ``(Cell, K)`` array."""
    return np.stack([value(k + shift) for k in range(NK)], axis=1)


def expected(s, m, x, n) -> list[np.ndarray]:
    def cw(cond: Callable[[int], bool], a: Level, b: Level) -> Level:
        return lambda k: a(k) if cond(k) else b(k)

    def xs(k: int) -> np.ndarray:
        assert 0 <= k < NK, k        # x is read on its levels only
        return x[:, k]

    def const(v) -> Level:
        return lambda k: np.broadcast_to(v, (NC,)).astype(float)

    t3 = cw(lambda k: k >= 2, const(7.0), xs)
    t4 = cw(lambda k: k < 1, xs, cw(lambda k: k < 3, const(s), const(2.0)))
    return [
        levels(cw(lambda k: k < 1, xs, const(s)), 1),
        levels(cw(lambda k: k < 2, const(s), xs), -1),
        levels(t3, 1) + levels(t3, 2) - levels(t3),
        levels(t4, 2),
        levels(cw(lambda k: k < 1, xs, const(np.where(m, s, 3.0))), 1),
        levels(cw(lambda k: k >= n, const(s), xs), 1),
        levels(cw(lambda k: k < n, const(s), xs), -1),
    ]


def arguments(seed: int):
    rng = np.random.default_rng(seed)
    return rng.random(NC), rng.random(NC) > 0.5, rng.random((NC, NK))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 3, NK])
def test_shifted_pieces_in_a_program(backend, n):
    s, m, x = arguments(n)
    outs = [np.full((NC, NK), -9.0) for _ in range(7)]
    shifted(s, m, x, np.int32(n), *outs, backend=backend, offset_provider=OFFSETS)
    for k, (got, want) in enumerate(zip(outs, expected(s, m, x, n))):
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"o{k + 1}")


DIRECT = [(above, "sx"), (below, "sx"), (literal_twice, "x"), (nested, "sx"),
          (without_k, "smx"), (runtime_bound, "sxn"), (runtime_below, "sxn")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(DIRECT)))
def test_shifted_pieces_called_directly(backend, case):
    n = 2
    s, m, x = arguments(10 + case)
    fn, names = DIRECT[case]
    given = {"s": s, "m": m, "x": x, "n": np.int32(n)}
    out = np.full((NC, NK), -9.0)
    fn(*(given[c] for c in names), out=out, offset_provider=OFFSETS,
       **({"backend": backend} if backend == "compiled" else {}))
    np.testing.assert_allclose(out, expected(s, m, x, n)[case], rtol=1e-12)


# Refused: the domains of a sum or an element-wise choice are intersected, so
# the broadcast partner does not lift x's end; a bounded piece read beyond its
# branch has no value there.


@field_operator
def sum_shifted(s: Field[[Cell], float], x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return (x + broadcast(s, (Cell, K)))(Koff[1])


@field_operator
def where_shifted(s: Field[[Cell], float], m: Field[[Cell], bool], x: Field[[Cell, K], float]
                  ) -> Field[[Cell, K], float]:
    return where(m, x, broadcast(s, (Cell, K)))(Koff[1])


@field_operator
def bounded_piece_beyond(s: Field[[Cell], float], x: Field[[Cell, K], float]
                         ) -> Field[[Cell, K], float]:
    t = concat_where(K < 1, x, broadcast(s, (Cell, K)))
    return t(Koff[-1])


@program
def sum_program(s: Field[[Cell], float], x: Field[[Cell, K], float], o: Field[[Cell, K], float]):
    sum_shifted(s, x, out=o)


@program
def where_program(s: Field[[Cell], float], m: Field[[Cell], bool], x: Field[[Cell, K], float],
                  o: Field[[Cell, K], float]):
    where_shifted(s, m, x, out=o)


@program
def beyond_program(s: Field[[Cell], float], x: Field[[Cell, K], float],
                   o: Field[[Cell, K], float]):
    bounded_piece_beyond(s, x, out=o)


@pytest.mark.parametrize("backend", BACKENDS)
def test_intersected_domains_stay_refused(backend):
    s, m, x = arguments(0)
    o = np.zeros((NC, NK))
    kw = {"backend": backend} if backend == "compiled" else {}
    with pytest.raises(TensorIRError, match="defined on K"):
        sum_program(s, x, o, backend=backend, offset_provider=OFFSETS)
    with pytest.raises(TensorIRError, match="defined on K"):
        where_program(s, m, x, o, backend=backend, offset_provider=OFFSETS)
    with pytest.raises(TensorIRError, match="defined on K"):
        beyond_program(s, x, o, backend=backend, offset_provider=OFFSETS)
    with pytest.raises(TensorIRError, match="defined on K"):
        sum_shifted(s, x, out=o, offset_provider=OFFSETS, **kw)
    with pytest.raises(TensorIRError, match="defined on K"):
        where_shifted(s, m, x, out=o, offset_provider=OFFSETS, **kw)
    with pytest.raises(TensorIRError, match="defined on K"):
        bounded_piece_beyond(s, x, out=o, offset_provider=OFFSETS, **kw)
    assert (o == 0).all()


@pytest.mark.parametrize("case", [0, 2, 3])
def test_shifted_pieces_returned_over_the_inputs_levels(case):
    # called without out=: the value is returned over the inputs' levels (a
    # constant piece reaches beyond them, but nothing gives it an end there)
    s, m, x = arguments(20 + case)
    fn, names = DIRECT[case]
    given = {"s": s, "m": m, "x": x}
    got = fn(*(given[c] for c in names), offset_provider=OFFSETS)
    assert np.shape(got) == (NC, NK)
    np.testing.assert_allclose(got, expected(s, m, x, 2)[case], rtol=1e-12)
