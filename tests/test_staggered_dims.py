"""Staggered dimensions: GT4Py's half levels and their ±0.5 offsets.

Half level ``h`` sits half a level above full level ``h`` (GT4Py's convention):
``x(KHalf + 0.5)`` is full level ``h``, ``x(KHalf - 0.5)`` full level ``h - 1``;
a half-level ``y(K + 0.5)`` is half level ``k + 1``, ``y(K - 0.5)`` half level
``k``.  The expected values are written with NumPy slices from that rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ArgumentError, FrontendError, ShapeMismatchError
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Field,
    FieldOffset,
    as_non_staggered,
    concat_where,
    dims,
    field_operator,
    flip_staggered,
    is_staggered,
    program,
    scan_operator,
)

Cell = Dimension("Cell")
K = Dimension("K", kind=DimensionKind.VERTICAL)
KHalf = flip_staggered(K)
KHalfOff = FieldOffset("KHalfOff", source=KHalf, target=(KHalf,))
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(5)
NC, NLEV = 6, 7


def test_spellings_of_the_staggered_dimension():
    assert is_staggered(KHalf) and not is_staggered(K)
    assert as_non_staggered(KHalf).same(K) and as_non_staggered(K).same(K)
    assert flip_staggered(KHalf).same(K)
    for spelling in (Dimension("KHalf", kind=DimensionKind.VERTICAL),
                     Dimension("_StaggeredK"), dims("KHalf")):
        assert is_staggered(spelling) and spelling.same(KHalf)
    assert repr(Dimension("KHalf")) == "Dimension('KHalf')"


@field_operator
def to_half_levels(w: Field[[Cell, KHalf], float], x: Field[[Cell, K], float]
                   ) -> Field[[Cell, KHalf], float]:
    """icon4py's interpolation to half levels, the top copied from level 0."""
    inner = w * x(KHalf + 0.5) + (1.0 - w) * x(KHalf - 0.5)
    return concat_where(KHalf > 0, inner, x(KHalf + 0.5))


@field_operator
def to_full_levels(y: Field[[Cell, KHalf], float]) -> Field[[Cell, K], float]:
    """The difference across each full level, and a shift there and back."""
    return y(K + 0.5) - y(K - 0.5) + y(K + 0.5)(KHalf - 0.5)(K - 0.5)


@field_operator
def half_shifts(y: Field[[Cell, KHalf], float], x: Field[[Cell, K], float]
                ) -> Field[[Cell, KHalf], float]:
    """Whole and one-and-a-half offsets next to each other."""
    return y(KHalfOff[1]) + y(KHalf - 1) + x(KHalf + 1.5) + x(KHalf - 1.5)


@program
def staggered(w: Field[[Cell, KHalf], float], x: Field[[Cell, K], float],
              y: Field[[Cell, KHalf], float], half: Field[[Cell, KHalf], float],
              full: Field[[Cell, K], float], shifted: Field[[Cell, KHalf], float],
              nlev: int):
    to_half_levels(w, x, out=half, domain={Cell: (0, NC), KHalf: (0, nlev)})
    to_full_levels(y, out=full)
    half_shifts(y, x, out=shifted, domain={Cell: (1, NC), KHalf: (2, nlev - 1)})


def arrays():
    return dict(w=RNG.random((NC, NLEV + 1)), x=RNG.random((NC, NLEV)),
                y=RNG.random((NC, NLEV + 1)), half=np.zeros((NC, NLEV + 1)),
                full=np.zeros((NC, NLEV)), shifted=np.zeros((NC, NLEV + 1)))


def expected(a):
    w, x, y = a["w"], a["x"], a["y"]
    half = np.zeros((NC, NLEV + 1))
    half[:, 0] = x[:, 0]
    half[:, 1:NLEV] = w[:, 1:NLEV] * x[:, 1:] + (1 - w[:, 1:NLEV]) * x[:, :-1]
    full = y[:, 1:] - y[:, :-1] + y[:, :-1]     # there and back: half level k
    shifted = np.zeros((NC, NLEV + 1))
    h = np.arange(2, NLEV - 1)
    shifted[1:, h] = y[1:, h + 1] + y[1:, h - 1] + x[1:, h + 1] + x[1:, h - 2]
    return dict(half=half, full=full, shifted=shifted)


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_offsets_in_a_program(backend):
    a = arrays()
    staggered(**a, nlev=NLEV, offset_provider={"KHalfOff": KHalf}, backend=backend)
    for name, want in expected(a).items():
        np.testing.assert_allclose(a[name], want, rtol=1e-14, err_msg=name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_writes_half_levels_from_full_levels(backend):
    a = arrays()
    out = np.zeros((NC, NLEV + 1))
    to_half_levels(a["w"], a["x"], out=out, domain={Cell: (0, NC), KHalf: (0, NLEV)},
                   backend=backend)
    np.testing.assert_allclose(out, expected(a)["half"], rtol=1e-14)
    full = to_full_levels(a["y"], backend=backend)
    np.testing.assert_allclose(full, expected(a)["full"], rtol=1e-14)


def test_reading_beyond_the_full_levels_is_a_shape_error():
    a = arrays()
    out = np.zeros((NC, NLEV + 1))     # half level NLEV needs full level NLEV
    with pytest.raises(ShapeMismatchError, match="K"):
        to_half_levels(a["w"], a["x"], out=out, backend="interpreter")


def test_other_fractions_are_refused():
    @field_operator
    def quarter(x: Field[[Cell, K], float]) -> Field[[Cell, KHalf], float]:
        return x(KHalf + 0.25)

    with pytest.raises(FrontendError, match="a whole number, or a half"):
        quarter(np.zeros((2, 3)), backend="interpreter")


def test_the_source_key_tells_a_staggered_dimension_from_its_base():
    """Found by the source, a program must not be served for the same text
    whose dimension is no longer staggered: its half offsets differ."""
    import types

    from tensorir_dace.frontend.by_source import function_fingerprint

    def read(x):
        return x(levels.KHalf + 0.5)

    levels = types.ModuleType("levels")
    levels.KHalf = KHalf
    read.__globals__["levels"] = levels
    try:
        staggered_print = function_fingerprint(read)
        levels.KHalf = Dimension("K")
        assert None is not function_fingerprint(read) != staggered_print
    finally:
        del read.__globals__["levels"]


@field_operator
def advect_and_average(w: Field[[Cell, KHalf], float]
                       ) -> tuple[Field[[Cell, KHalf], float], Field[[Cell, K], float]]:
    """Two parts defined on different intervals: the half-level difference
    on half levels 1..nlev - 1, the full-level mean on every full level."""
    a = 2.0 * w
    return a(KHalf - 1) - a(KHalf + 1), 0.5 * (a(K - 0.5) + a(K + 0.5))


@program
def advect_in_place(w: Field[[Cell, KHalf], float], full: Field[[Cell, K], float], nlev: int):
    advect_and_average(w, out=(w, full), domain=({Cell: (0, NC), KHalf: (1, nlev)},
                                                 {Cell: (0, NC), K: (0, nlev)}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_parts_on_half_and_full_levels(backend):
    """A tuple value staged before its outputs are written (it reads one of
    them) keeps each part on its own interval, not on their intersection."""
    w = RNG.random((NC, NLEV + 1))
    full = np.zeros((NC, NLEV))
    want_w, want_full = w.copy(), w[:, :-1] + w[:, 1:]
    want_w[:, 1:NLEV] = 2.0 * (w[:, :NLEV - 1] - w[:, 2:])
    advect_in_place(w, full, NLEV, backend=backend)
    np.testing.assert_allclose(w, want_w, rtol=1e-14)
    np.testing.assert_allclose(full, want_full, rtol=1e-14)


@field_operator
def levels_and_interfaces(x: Field[[Cell, K], float], nlev: int
                          ) -> tuple[Field[[Cell, K], float], Field[[Cell, KHalf], float]]:
    """A full-level part beside a half-level one whose last level depends on
    the runtime ``nlev``."""
    y = 2.0 * x
    return y, concat_where(KHalf < nlev, y(KHalf + 0.5), y(KHalf - 0.5))


@program
def double_in_place(x: Field[[Cell, K], float], ifc: Field[[Cell, KHalf], float], nlev: int):
    levels_and_interfaces(x, nlev, out=(x, ifc), domain=({Cell: (0, NC), K: (0, nlev)},
                                                         {Cell: (0, NC), KHalf: (0, nlev + 1)}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_parts_on_runtime_half_levels(backend):
    x = RNG.random((NC, NLEV))
    ifc = np.zeros((NC, NLEV + 1))
    want_ifc = 2.0 * np.concatenate([x, x[:, -1:]], axis=1)
    want_x = 2.0 * x
    double_in_place(x, ifc, NLEV, backend=backend)
    np.testing.assert_allclose(x, want_x, rtol=1e-14)
    np.testing.assert_allclose(ifc, want_ifc, rtol=1e-14)


@scan_operator(axis=KHalf, forward=False, init=0.0)
def _damped_sum_upwards(state: float, x: float) -> float:
    return 0.5 * state + x


@field_operator
def _layer_difference_of_a_half_level_scan(h: Field[[Cell, KHalf], float],
                                           x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = _damped_sum_upwards(h)
    return w(K + 0.5) - w(K - 0.5) + x


@program
def layer_difference_on_literal_levels(h: Field[[Cell, KHalf], float], x: Field[[Cell, K], float],
                                       out: Field[[Cell, K], float]):
    _layer_difference_of_a_half_level_scan(h, x, out=out, domain={Cell: (0, NC), K: (1, 4)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_half_level_scan_on_literal_levels_beside_full_levels(backend):
    """The scan runs on half levels 1..4 (what levels 1..3 read at ``K ± 0.5``):
    ``Min(5, N_K + 1) - 1`` beside the full levels' ``N_K`` is decided through
    the ``Min``, the offset moved to the other side."""
    h, x = RNG.random((NC, NLEV + 1)), RNG.random((NC, NLEV))
    out = np.zeros((NC, NLEV))
    layer_difference_on_literal_levels(h, x, out, backend=backend)
    w, state = np.zeros((NC, NLEV + 1)), np.zeros(NC)
    for k in range(4, 0, -1):
        state = 0.5 * state + h[:, k]
        w[:, k] = state
    want = np.zeros((NC, NLEV))
    want[:, 1:4] = w[:, 2:5] - w[:, 1:4] + x[:, 1:4]
    np.testing.assert_allclose(out, want, rtol=1e-14)


@field_operator
def _with_extrapolated_boundaries(x: Field[[Cell, K], float], nlev: int
                                  ) -> tuple[Field[[Cell, KHalf], float],
                                             Field[[Cell, KHalf], float]]:
    """Interior half levels beside boundary rows, and a part read only inside."""
    interior = x(KHalf + 0.5) + x(KHalf - 0.5)
    bounded = concat_where(KHalf == 0, x(KHalf + 0.5),
                           concat_where(KHalf == nlev, x(KHalf - 0.5), interior))
    return bounded, 3.0 * x(KHalf - 0.5)


@program
def boundaries_on_runtime_domains(x: Field[[Cell, K], float], ifc: Field[[Cell, KHalf], float],
                                  inner: Field[[Cell, KHalf], float], nlev: int,
                                  vertical_start: int, vertical_end: int,
                                  vertical_end_half: int):
    _with_extrapolated_boundaries(
        x, nlev, out=(ifc, inner),
        domain=({Cell: (0, NC), KHalf: (vertical_start, vertical_end_half)},
                {Cell: (0, NC), KHalf: (1, vertical_end)}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_pieces_bounded_by_unrelated_runtime_domains(backend):
    """The bounds of the pieces nest ``Min``/``Max`` of several runtime bounds;
    they are evaluated with all the values at once (substituted one after
    another, SymPy folds the partly numeric ``Max(0, Min(1, …))`` to 0 here)."""
    x = RNG.random((NC, NLEV))
    ifc, inner = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
    boundaries_on_runtime_domains(x, ifc, inner, NLEV, 0, NLEV, NLEV + 1, backend=backend)
    want = np.concatenate([x[:, :1], x[:, 1:] + x[:, :-1], x[:, -1:]], axis=1)
    want_inner = np.zeros((NC, NLEV + 1))
    want_inner[:, 1:NLEV] = 3.0 * x[:, :-1]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)
    np.testing.assert_allclose(inner, want_inner, rtol=1e-14)


def test_bounds_evaluated_with_all_their_values_at_once():
    import sympy

    from tensorir_dace import intervals

    n, a, b, c = sympy.symbols("n a b c", integer=True)
    bound = sympy.Max(0, sympy.Min(1, sympy.Max(a, sympy.Min(
        sympy.Max(sympy.Symbol("N_K", integer=True), sympy.Min(7, n + 1)), sympy.Max(b, c)))))
    assert intervals.evaluate(bound, {"N_K": 6, "n": 6, "a": 0, "b": 6, "c": 7}) == 1


@program
def boundaries_from_a_literal_stop(x: Field[[Cell, K], float], ifc: Field[[Cell, KHalf], float],
                                   inner: Field[[Cell, KHalf], float], nlev: int,
                                   vertical_start: int, vertical_end: int):
    _with_extrapolated_boundaries(
        x, nlev, out=(ifc, inner),
        domain=({Cell: (0, NC), KHalf: (vertical_start, NLEV + 1)},
                {Cell: (0, NC), KHalf: (1, vertical_end)}))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("vertical_start", [0, 2])
def test_concat_pieces_under_a_literal_and_a_runtime_bound(backend, vertical_start):
    """The top level's piece is kept: where SymPy cannot order two piece
    boundaries their ``Max`` is built, where it can the larger one is taken
    (SymPy's own ``Max`` of these nested ``Min``/``Max`` dropped the piece)."""
    x = RNG.random((NC, NLEV))
    ifc, inner = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
    boundaries_from_a_literal_stop(x, ifc, inner, NLEV, vertical_start, NLEV, backend=backend)
    want = np.zeros((NC, NLEV + 1))
    want[:, vertical_start:] = np.concatenate(
        [x[:, :1], x[:, 1:] + x[:, :-1], x[:, -1:]], axis=1)[:, vertical_start:]
    want_inner = np.zeros((NC, NLEV + 1))
    want_inner[:, 1:NLEV] = 3.0 * x[:, :-1]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)
    np.testing.assert_allclose(inner, want_inner, rtol=1e-14)


@field_operator
def _boundaries_at_a_literal_level(x: Field[[Cell, K], float]) -> Field[[Cell, KHalf], float]:
    """The last half level chosen by a literal: the interior piece above it,
    ``KHalf[NLEV + 1:N_K]``, is empty for NLEV full levels."""
    interior = x(KHalf + 0.5) + x(KHalf - 0.5)
    return concat_where(KHalf == 0, x(KHalf + 0.5),
                        concat_where(KHalf == NLEV, x(KHalf - 0.5), interior))


@program
def boundaries_on_literal_levels(x: Field[[Cell, K], float], ifc: Field[[Cell, KHalf], float]):
    _boundaries_at_a_literal_level(x, out=ifc, domain={Cell: (0, NC), KHalf: (0, NLEV + 1)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_piece_outside_a_literal_domain_needs_no_level(backend):
    """GT4Py computes the value on the domain only: the piece above it is left
    out, and needs no more full levels than there are."""
    x = RNG.random((NC, NLEV))
    ifc = np.zeros((NC, NLEV + 1))
    boundaries_on_literal_levels(x, ifc, backend=backend)
    want = np.zeros((NC, NLEV + 1))
    for h in range(NLEV + 1):      # the formula, level by level
        want[:, h] = x[:, h] if h == 0 else x[:, h - 1] if h == NLEV else x[:, h] + x[:, h - 1]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)


@field_operator
def _boundary_read_one_above(x: Field[[Cell, K], float]) -> Field[[Cell, KHalf], float]:
    """A piece outside the domain (half level NLEV) read through a shift."""
    interior = x(KHalf + 0.5) + x(KHalf - 0.5)
    t = concat_where(KHalf == NLEV, x(KHalf - 0.5), interior)
    return t(KHalf + 1)


@program
def boundary_read_one_above(x: Field[[Cell, K], float], ifc: Field[[Cell, KHalf], float]):
    _boundary_read_one_above(x, out=ifc, domain={Cell: (0, NC), KHalf: (0, NLEV)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_piece_outside_the_domain_read_through_a_shift_is_kept(backend):
    """Half level NLEV lies outside the domain, and level NLEV - 1 reads it
    through the shift: its piece stays; the one above it, read by nothing,
    is left out."""
    x = RNG.random((NC, NLEV))
    ifc = np.zeros((NC, NLEV + 1))
    boundary_read_one_above(x, ifc, backend=backend)
    t = np.zeros((NC, NLEV + 1))
    for h in range(1, NLEV + 1):
        t[:, h] = x[:, h - 1] if h == NLEV else x[:, h] + x[:, h - 1]
    want = np.zeros((NC, NLEV + 1))
    want[:, :NLEV] = t[:, 1:]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)
    text = boundary_read_one_above.format()
    assert f"K[{NLEV}:{NLEV + 1}]" in text and f"K[{NLEV + 1}:N_K]" not in text


@field_operator
def _boundary_used_twice(x: Field[[Cell, K], float]) -> Field[[Cell, KHalf], float]:
    """The concat_where bound to a name read twice (a let): its pieces stay whole."""
    interior = x(KHalf + 0.5) + x(KHalf - 0.5)
    t = concat_where(KHalf == NLEV, x(KHalf - 0.5), interior)
    return t(KHalf + 1) + 0.0 * t


@program
def boundary_used_twice(x: Field[[Cell, K], float], ifc: Field[[Cell, KHalf], float]):
    _boundary_used_twice(x, out=ifc, domain={Cell: (0, NC), KHalf: (1, NLEV)})


def test_a_concat_where_read_through_a_let_keeps_its_pieces():
    """What a let's body asks of its argument is not followed: the piece above
    the literal level stays, and needs one more full level."""
    x = RNG.random((NC, NLEV + 2))
    ifc = np.zeros((NC, NLEV + 3))
    boundary_used_twice(x, ifc, backend="interpreter")
    want = np.zeros((NC, NLEV + 3))
    want[:, 1:NLEV - 1] = x[:, 2:NLEV] + x[:, 1:NLEV - 1]
    want[:, NLEV - 1] = x[:, NLEV - 1]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)
    assert f"K[{NLEV + 1}:N_K]" in boundary_used_twice.format()


@field_operator
def _extrapolated_to_half_levels(x: Field[[Cell, K], float], nlev: int
                                 ) -> Field[[Cell, KHalf], float]:
    """icon4py's interpolation to half levels, the surface chosen by ``nlev``."""
    interior = x(KHalf + 0.5) + x(KHalf - 0.5)
    return concat_where(KHalf == 0, x(KHalf + 0.5),
                        concat_where(KHalf == nlev, x(KHalf - 0.5), interior))


@program
def extrapolated_on_the_whole_output(x: Field[[Cell, K], float],
                                     ifc: Field[[Cell, KHalf], float], nlev: int):
    _extrapolated_to_half_levels(x, nlev, out=ifc)


def _extrapolated(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x[:, :1], x[:, 1:] + x[:, :-1], x[:, -1:]], axis=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_surface_level_on_an_output_without_domain(backend):
    """No ``domain=``: the half-level output's whole interval is the target;
    whether ``KHalf == nlev`` picks its last level is checked at call time."""
    x = RNG.random((NC, NLEV))
    ifc = np.zeros((NC, NLEV + 1))
    extrapolated_on_the_whole_output(x, ifc, NLEV, backend=backend)
    np.testing.assert_allclose(ifc, _extrapolated(x), rtol=1e-14)
    before = RNG.random((NC, NLEV + 1))
    ifc = before.copy()
    with pytest.raises(ArgumentError, match="outside its allowed range"):
        extrapolated_on_the_whole_output(x, ifc, NLEV - 1, backend=backend)
    np.testing.assert_array_equal(ifc, before)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(0, NLEV + 1), (1, NLEV), (2, NLEV + 1)])
def test_direct_call_with_a_runtime_surface_level(backend, levels):
    """A direct call's ``domain=`` is its target, as ``out=``'s range is in a
    program: the runtime ``KHalf == nlev`` piece is kept and checked at call time."""
    x = RNG.random((NC, NLEV))
    start, stop = levels
    before = RNG.random((NC, NLEV + 1))
    ifc = before.copy()
    _extrapolated_to_half_levels(x, NLEV, out=ifc, domain={Cell: (0, NC), KHalf: levels},
                                 backend=backend)
    want = before.copy()
    want[:, start:stop] = _extrapolated(x)[:, start:stop]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_without_domain_into_half_levels(backend):
    """No ``domain=``: the whole of ``out=``, one level longer than ``x``, is the
    target, as in a program; ``KHalf == nlev`` picks its last level, checked at
    call time, and a wrong ``nlev`` is refused before anything is written."""
    x = RNG.random((NC, NLEV))
    ifc = np.zeros((NC, NLEV + 1))
    _extrapolated_to_half_levels(x, NLEV, out=ifc, backend=backend)
    np.testing.assert_allclose(ifc, _extrapolated(x), rtol=1e-14)
    x = RNG.random((NC, NLEV))       # the same program again, new values
    _extrapolated_to_half_levels(x, NLEV, out=ifc, backend=backend)
    np.testing.assert_allclose(ifc, _extrapolated(x), rtol=1e-14)
    before = RNG.random((NC, NLEV + 1))
    ifc = before.copy()
    with pytest.raises(ArgumentError, match="outside its allowed range"):
        _extrapolated_to_half_levels(x, NLEV - 1, out=ifc, backend=backend)
    np.testing.assert_array_equal(ifc, before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_without_domain_into_half_levels_of_other_sizes(backend):
    """The program takes the sizes at call time: fewer levels, the same program."""
    for nlev in (3, NLEV + 2):
        x = RNG.random((NC + 1, nlev))
        ifc = np.zeros((NC + 1, nlev + 1))
        _extrapolated_to_half_levels(x, nlev, out=ifc, backend=backend)
        np.testing.assert_allclose(ifc, _extrapolated(x), rtol=1e-14)


@scan_operator(axis=K, forward=True, init=0.0)
def _depth_downwards(state: float, dz: float) -> float:
    return state + dz


@field_operator
def _depth_on_half_levels(dz: Field[[Cell, K], float], nlev: int
                          ) -> Field[[Cell, KHalf], float]:
    """A scan's value on full levels, extrapolated to half levels."""
    z = _depth_downwards(dz)
    interior = 0.5 * (z(KHalf + 0.5) + z(KHalf - 0.5))
    return concat_where(KHalf == 0, z(KHalf + 0.5),
                        concat_where(KHalf == nlev, z(KHalf - 0.5), interior))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_extrapolated_to_half_levels_without_domain(backend):
    dz = RNG.random((NC, NLEV))
    zh = np.zeros((NC, NLEV + 1))
    _depth_on_half_levels(dz, NLEV, out=zh, backend=backend)
    z = np.cumsum(dz, axis=1)
    want = np.concatenate([z[:, :1], 0.5 * (z[:, 1:] + z[:, :-1]), z[:, -1:]], axis=1)
    np.testing.assert_allclose(zh, want, rtol=1e-14)
    before = RNG.random((NC, NLEV + 1))
    zh = before.copy()
    with pytest.raises(ArgumentError, match="outside its allowed range"):
        _depth_on_half_levels(dz, NLEV - 1, out=zh, backend=backend)
    np.testing.assert_array_equal(zh, before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_piece_outside_a_literal_domain_of_a_direct_call_needs_no_level(backend):
    """Called directly on literal bounds, the value is translated for them: the
    piece above the domain is left out, as in a program."""
    op = field_operator(_boundaries_at_a_literal_level.fn)
    x = RNG.random((NC, NLEV))
    ifc = np.zeros((NC, NLEV + 1))
    op(x, out=ifc, domain={Cell: (0, NC), KHalf: (0, NLEV + 1)}, backend=backend)
    want = np.zeros((NC, NLEV + 1))
    for h in range(NLEV + 1):      # the formula, level by level
        want[:, h] = x[:, h] if h == 0 else x[:, h - 1] if h == NLEV else x[:, h] + x[:, h - 1]
    np.testing.assert_allclose(ifc, want, rtol=1e-14)
    # a call on other bounds: its own program (the interior from half level 2)
    ifc2 = np.zeros((NC, NLEV + 1))
    op(x, out=ifc2, domain={Cell: (1, NC), KHalf: (2, NLEV + 1)}, backend=backend)
    want2 = np.zeros((NC, NLEV + 1))
    want2[1:, 2:] = want[1:, 2:]
    np.testing.assert_allclose(ifc2, want2, rtol=1e-14)
    # ... and bounds beyond the levels are refused with out= untouched
    ifc3 = np.zeros((NC, NLEV + 1))
    with pytest.raises(ArgumentError):
        op(x, out=ifc3, domain={Cell: (0, NC), KHalf: (0, NLEV + 2)}, backend=backend)
    np.testing.assert_array_equal(ifc3, 0.0)


Edge = Dimension("Edge")


@field_operator
def _edges_and_half_levels(e: Field[[Edge, K], float], c: Field[[Cell, KHalf], float],
                           flag: bool) -> tuple[Field[[Edge, K], float],
                                                Field[[Cell, KHalf], float]]:
    """Parts over other dimensions, the half-level one chosen by a condition (a
    tuple made in the IR, both parts in one value)."""
    low, high = (c + 1.0, c - 1.0) if flag else (c, c)
    return e * 2.0, low + high


@field_operator
def _two_half_level_parts(x: Field[[Cell, K], float], w: Field[[Cell, KHalf], float]
                          ) -> tuple[Field[[Cell, KHalf], float], Field[[Cell, KHalf], float]]:
    return w * x(KHalf - 0.5), w + x(KHalf + 0.5)


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_into_full_and_half_level_outputs_of_full_and_half_level_inputs(
        backend, flag):
    """A direct call whose outputs are on full levels over edges and on half
    levels over cells, from inputs of both lengths: each output is as long as
    its own part, on a tuple of domains (NumPy integer bounds) or without."""
    ne = 4
    e, c = RNG.random((ne, NLEV)), RNG.random((NC, NLEV + 1))
    x, y = np.zeros((ne, NLEV)), np.zeros((NC, NLEV + 1))
    _edges_and_half_levels(e, c, flag, out=(x, y), backend=backend)
    np.testing.assert_allclose(x, 2.0 * e, rtol=1e-14)
    np.testing.assert_allclose(y, 2.0 * c, rtol=1e-14, atol=1e-14)
    x, y = np.zeros((ne, NLEV)), np.zeros((NC, NLEV + 1))
    i32 = np.int32
    _edges_and_half_levels(e, c, flag, out=(x, y),
                           domain=({Edge: (i32(1), i32(ne)), K: (i32(0), i32(NLEV))},
                                   {Cell: (i32(0), i32(NC)), KHalf: (i32(2), i32(NLEV + 1))}),
                           backend=backend)
    want_x, want_y = np.zeros((ne, NLEV)), np.zeros((NC, NLEV + 1))
    want_x[1:], want_y[:, 2:] = 2.0 * e[1:], 2.0 * c[:, 2:]
    np.testing.assert_allclose(x, want_x, rtol=1e-14)
    np.testing.assert_allclose(y, want_y, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_of_a_half_level_tuple_on_one_domain(backend):
    """Two half-level outputs on one domain, longer than the full-level input."""
    x, w = RNG.random((NC, NLEV)), RNG.random((NC, NLEV + 1))
    a, b = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
    _two_half_level_parts(x, w, out=(a, b), domain={Cell: (1, NC), KHalf: (1, NLEV)},
                          backend=backend)
    want_a, want_b = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
    want_a[1:, 1:NLEV] = w[1:, 1:NLEV] * x[1:, :NLEV - 1]
    want_b[1:, 1:NLEV] = w[1:, 1:NLEV] + x[1:, 1:NLEV]
    np.testing.assert_allclose(a, want_a, rtol=1e-14)
    np.testing.assert_allclose(b, want_b, rtol=1e-14)


@field_operator
def _half_level_pair(x: Field[[Cell, K], float], h: Field[[Cell, KHalf], float]
                     ) -> tuple[Field[[Cell, KHalf], float], Field[[Cell, KHalf], float]]:
    """Two half-level results of a full-level and a half-level argument."""
    return x(KHalf - 0.5) + h, h * 2.0


@pytest.mark.parametrize("backend", [*BACKENDS, None])
@pytest.mark.parametrize("tuple_of_domains", [False, True])
def test_direct_call_writes_a_tuple_of_half_level_results(backend, tuple_of_domains):
    """``out=(a, b)`` one level longer than ``x``, with one domain or a tuple of
    domains (no ``backend=``: found by the source on later calls)."""
    named = {} if backend is None else {"backend": backend}
    for _ in range(2):
        x, h = RNG.random((NC, NLEV)), RNG.random((NC, NLEV + 1))
        a, b = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
        dom = {Cell: (1, NC), KHalf: (1, NLEV)}
        _half_level_pair(x, h, out=(a, b), domain=(dom, dom) if tuple_of_domains else dom,
                         **named)
        want_a, want_b = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
        want_a[1:, 1:NLEV] = x[1:, :NLEV - 1] + h[1:, 1:NLEV]
        want_b[1:, 1:NLEV] = 2.0 * h[1:, 1:NLEV]
        np.testing.assert_allclose(a, want_a, rtol=1e-14)
        np.testing.assert_allclose(b, want_b, rtol=1e-14)
    # the whole of out= needs full level -1: refused, nothing written
    a, b = np.zeros((NC, NLEV + 1)), np.zeros((NC, NLEV + 1))
    with pytest.raises(ShapeMismatchError, match="K"):
        _half_level_pair(x, h, out=(a, b), **named)
    assert not a.any() and not b.any()
