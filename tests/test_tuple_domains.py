"""GT4Py's domain per output: ``out=(a, b), domain=({…}, {…})`` and nested
``out=((a, b), c)`` with a nested tuple of domains (a dict for a nested
output covers its leaves), in a ``@program`` body and in direct calls of a
``@field_operator`` and a scan operator.  Each output is written on its own
domain only.  In a program body and in a direct call alike, a scan runs over
the union of the domains of the outputs reading it (GT4Py's domain
inference): one scan whose state feeds two outputs starts at the earlier
first level, two scans each at their own output's.  A domain that one
output's value cannot fill is refused before any output is written.
Interpreter and compiled code are compared with hand-written NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ArgumentError, FrontendError
from tensorir_dace.errors import CoverageError
from tensorir_dace.frontend import (
    Field,
    dims,
    field_operator,
    float64,
    int32,
    program,
    scan_operator,
    where,
    with_dims,
)

Cell, K = dims("Cell K")
F = Field[[Cell, K], float64]
NC, NK = 6, 5
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(17)


@field_operator
def nested(a: F):
    return (2.0 * a, a + 1.0), a * a


@scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def sums(state: tuple[float, float], x: float) -> tuple[float, float]:
    return state[0] + x, state[1] + 2.0 * x


@field_operator
def summed(a: F):
    return sums(a)


@program
def per_output(a: F, o1: F, o2: F, o3: F, p1: F, p2: F, p3: F, s1: F, s2: F,
               hs: int, he: int, vs: int, ve: int):
    nested(a, out=((o1, o2), o3),
           domain=(({Cell: (hs, he)}, {K: (vs, ve)}), {Cell: (0, 2), K: [vs, ve]}))
    doms = ({Cell: (hs, he), K: (vs, ve)}, {K: (1, ve)})      # the pair's leaves share one
    nested(a, out=((p1, p2), p3), domain=doms)
    summed(a, out=(s1, s2), domain=({K: (vs, ve)}, {Cell: (hs, he), K: (1, ve)}))


def inside(full, cells, levels):
    out = np.zeros(full.shape)
    out[cells[0]:cells[1], levels[0]:levels[1]] = full[cells[0]:cells[1], levels[0]:levels[1]]
    return out


def running(a, cells, levels, factor=1.0, start=None):
    """The column sums of ``a`` from level ``start`` (``levels[0]`` unless given) on
    ``levels`` (zero elsewhere)."""
    out = np.zeros(a.shape)
    lo, hi = levels
    start = lo if start is None else start
    sums = factor * np.cumsum(a[cells[0]:cells[1], start:hi], axis=1)
    out[cells[0]:cells[1], lo:hi] = sums[:, lo - start:]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_domain_per_output_in_a_program(backend):
    a = RNG.random((NC, NK))
    for hs, he, vs, ve in [(1, 5, 1, 4), (0, NC, 0, NK), (2, 2, 3, 5)]:
        outs = [np.zeros((NC, NK)) for _ in range(8)]
        per_output(a, *outs, hs, he, vs, ve, backend=backend)
        want = [inside(2 * a, (hs, he), (0, NK)), inside(a + 1, (0, NC), (vs, ve)),
                inside(a * a, (0, 2), (vs, ve)),
                inside(2 * a, (hs, he), (vs, ve)), inside(a + 1, (hs, he), (vs, ve)),
                inside(a * a, (0, NC), (1, ve)),
                # one scan feeds both: GT4Py runs it over the union of their domains
                running(a, (0, NC), (vs, ve), start=min(vs, 1)),
                running(a, (hs, he), (1, ve), 2.0, start=min(vs, 1))]
        for k, (got, w) in enumerate(zip(outs, want)):
            np.testing.assert_allclose(got, w, rtol=1e-12, err_msg=f"output {k}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_domain_per_output_in_direct_calls(backend):
    a = RNG.random((NC, NK))
    o = ((np.zeros((NC, NK)), np.zeros((NC, NK))), np.zeros((NC, NK)))
    got = nested(a, out=o, domain=(({Cell: (1, 4)}, {K: [2, 4]}), {Cell: (0, 3), K: (1, 2)}),
                 backend=backend)
    assert got is o
    np.testing.assert_allclose(o[0][0], inside(2 * a, (1, 4), (0, NK)), rtol=1e-12)
    np.testing.assert_allclose(o[0][1], inside(a + 1, (0, NC), (2, 4)), rtol=1e-12)
    np.testing.assert_allclose(o[1], inside(a * a, (0, 3), (1, 2)), rtol=1e-12)
    s = (np.zeros((NC, NK)), np.zeros((NC, NK)))
    summed(a, out=s, domain=({K: (1, 4)}, {Cell: (2, 5), K: (2, NK)}), backend=backend)
    # one scan feeds both: it runs over the union of their domains (from level 1)
    np.testing.assert_allclose(s[0], running(a, (0, NC), (1, 4)), rtol=1e-12)
    np.testing.assert_allclose(s[1], running(a, (2, 5), (2, NK), 2.0, start=1), rtol=1e-12)
    t = (np.zeros((NC, NK)), np.zeros((NC, NK)))
    sums(with_dims(a, Cell, K), out=t, domain=({K: (1, 4)}, {Cell: (2, 5), K: (2, NK)}),
         backend=backend)
    np.testing.assert_allclose(t[0], s[0], rtol=1e-12)
    np.testing.assert_allclose(t[1], s[1], rtol=1e-12)


def test_mismatched_domains_are_refused():
    a = RNG.random((NC, NK))
    o = ((np.zeros((NC, NK)), np.zeros((NC, NK))), np.zeros((NC, NK)))
    cases = [(({Cell: (0, 1)},), r"domain= is a tuple of 1 domains but out= is a tuple of 2"),
             (({Cell: (0, 1)}, ({K: (0, 1)}, {K: (0, 1)})),
              r"domain= is a tuple of 2 domains but out= is one output"),
             (({Cell: (0, 1)}, (0, 1)), r"domain= is a tuple of 2 domains but out= is one"),
             ((({Cell: (0, 1)}, {K: (0, 1)}, {K: (0, 1)}), {K: (0, 1)}),
              r"tuple of 3 domains but out= is a tuple of 2")]
    for domain, message in cases:
        with pytest.raises(ArgumentError, match=message):
            nested(a, out=o, domain=domain, backend="interpreter")
    assert not any(x.any() for x in (o[0][0], o[0][1], o[1]))

    @program
    def too_deep(a: F, o1: F, o2: F, o3: F):
        nested(a, out=((o1, o2), o3), domain=({Cell: (0, 1)}, ({K: (0, 1)}, {K: (0, 1)})))

    with pytest.raises(FrontendError, match=r"a tuple of domains holds dicts .*got tuple"):
        too_deep(a, *[np.zeros((NC, NK))] * 3, backend="interpreter")


@scan_operator(axis=K, forward=True, init=0.0)
def running_sum(state: float, x: float) -> float:
    return state + x


@field_operator
def two_sums(a: F):
    return running_sum(a), running_sum(2.0 * a)


@program
def separate_scans(a: F, s1: F, s2: F, vs: int, ve: int):
    two_sums(a, out=(s1, s2), domain=({K: (vs, ve)}, {K: (1, ve)}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_scans_start_at_their_own_outputs_domains(backend):
    a = RNG.random((NC, NK))
    for vs, ve in [(0, NK), (2, NK), (3, 4)]:
        s1, s2 = np.zeros((NC, NK)), np.zeros((NC, NK))
        separate_scans(a, s1, s2, vs, ve, backend=backend)
        np.testing.assert_allclose(s1, running(a, (0, NC), (vs, ve)), rtol=1e-12)
        np.testing.assert_allclose(s2, running(a, (0, NC), (1, ve), 2.0), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_run_scans_over_the_union_of_their_readers_domains(backend):
    a = RNG.random((NC, NK))
    for first, second in [((3, NK), (1, 4)), ((0, 2), (2, NK)), ((2, 3), (2, 3))]:
        s = (np.zeros((NC, NK)), np.zeros((NC, NK)))
        summed(a, out=s, domain=({K: first}, {Cell: (1, 4), K: second}), backend=backend)
        start = min(first[0], second[0])      # one scan, both outputs read it
        np.testing.assert_allclose(s[0], running(a, (0, NC), first, start=start), rtol=1e-12)
        np.testing.assert_allclose(s[1], running(a, (1, 4), second, 2.0, start=start),
                                   rtol=1e-12)
        t = (np.zeros((NC, NK)), np.zeros((NC, NK)))
        two_sums(a, out=t, domain=({K: first}, {K: second}), backend=backend)
        # two scans: each starts at its own output's domain
        np.testing.assert_allclose(t[0], running(a, (0, NC), first), rtol=1e-12)
        np.testing.assert_allclose(t[1], running(a, (0, NC), second, 2.0), rtol=1e-12)
        u = (np.zeros((NC, NK)), np.zeros((NC, NK)))
        sums(with_dims(a, Cell, K), out=u, domain=({K: first}, {K: second}), backend=backend)
        np.testing.assert_allclose(u[0], running(a, (0, NC), first, start=start), rtol=1e-12)
        np.testing.assert_allclose(u[1], running(a, (0, NC), second, 2.0, start=start),
                                   rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_with_an_output_over_its_whole_levels(backend):
    # an output without K in its dict asks the scan for every level: it starts at 0
    a = RNG.random((NC, NK))
    s = (np.zeros((NC, NK)), np.zeros((NC, NK)))
    summed(a, out=s, domain=({Cell: (1, 3)}, {K: (2, NK)}), backend=backend)
    np.testing.assert_allclose(s[0], running(a, (1, 3), (0, NK)), rtol=1e-12)
    np.testing.assert_allclose(s[1], running(a, (0, NC), (2, NK), 2.0, start=0), rtol=1e-12)
    s = (np.zeros((NC, NK)), np.zeros((NC, NK)))
    summed(a, out=s, domain=({}, {K: (2, NK)}), backend=backend)
    np.testing.assert_allclose(s[0], running(a, (0, NC), (0, NK)), rtol=1e-12)
    np.testing.assert_allclose(s[1], running(a, (0, NC), (2, NK), 2.0, start=0), rtol=1e-12)


@field_operator
def with_lower_level(a: F):
    return a + 1.0, a(K - 1) * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_output_leaves_every_output_unwritten(backend):
    a = RNG.random((NC, NK))
    whole = {Cell: (0, NC), K: (0, NK)}
    for second in ({Cell: (0, NC), K: (0, NK)},          # reads level -1
                   {Cell: (0, NC), K: (1, NK + 3)}):     # beyond the arrays
        x, y = np.zeros((NC, NK)), np.zeros((NC, NK))
        with pytest.raises(ArgumentError, match="bound"):
            with_lower_level(a, out=(x, y), domain=(whole, second), backend=backend)
        assert not x.any() and not y.any()
    x, y = np.zeros((NC, NK)), np.zeros((NC, NK))
    with_lower_level(a, out=(x, y), domain=(whole, {K: (1, NK)}), backend=backend)
    np.testing.assert_array_equal(x, a + 1.0)
    np.testing.assert_array_equal(y[:, 1:], a[:, :-1] * 2.0)
    assert not y[:, 0].any()


Edge = dims("Edge")
FE = Field[[Edge, K], float64]


@field_operator
def _moments(a: F) -> tuple[F, F]:
    """A tuple returned by a call whose body is large enough to be bound once."""
    s = a * a + 2.0 * a - 1.0
    t = s * s - a / (1.0 + s * s)
    u = t * s + a * t - s * a + t / (2.0 + s * s)
    return s + t + u, s - t - u


@field_operator
def _edges_and_cells(e: FE, c: F, flag: bool) -> tuple[FE, F]:
    """Parts over other dimensions made from tuples the body binds: a call's
    and a conditional expression's."""
    p, q = _moments(c)
    r, s = (p, q) if flag else (q, p)
    return e * 2.0, r - s


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_domain_per_output_of_parts_over_other_dimensions(backend, flag):
    e, c = RNG.random((4, NK)), RNG.random((NC, NK))
    x, y = np.zeros((4, NK)), np.zeros((NC, NK))
    _edges_and_cells(e, c, flag, out=(x, y),
                     domain=({Edge: (1, 4), K: (0, NK)}, {Cell: (2, NC), K: (np.int32(1), NK)}),
                     backend=backend)
    s = c * c + 2.0 * c - 1.0
    t = s * s - c / (1.0 + s * s)
    u = t * s + c * t - s * c + t / (2.0 + s * s)
    diff = (2.0 if flag else -2.0) * (t + u)
    want_x, want_y = np.zeros((4, NK)), np.zeros((NC, NK))
    want_x[1:], want_y[2:, 1:] = 2.0 * e[1:], diff[2:, 1:]
    np.testing.assert_allclose(x, want_x, rtol=1e-12)
    np.testing.assert_allclose(y, want_y, rtol=1e-12)


@field_operator
def now_and_two_below(a: F) -> tuple[F, F]:
    return 2.0 * a, a(K - 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_later_output_refusing_its_domain_leaves_the_earlier_unwritten(backend):
    """The second output reads two levels below: its domain from level
    ``k0 = 1`` is refused, and the first output, whose domain is fine, is
    not written either; from ``k0 = 2`` both are."""
    a = RNG.random((NC, NK))
    o1, o2 = np.zeros((NC, NK)), np.zeros((NC, NK))
    with pytest.raises(ArgumentError, match="outside its allowed range"):
        now_and_two_below(a, out=(o1, o2), domain=({K: (0, NK)}, {K: (1, NK)}),
                          backend=backend)
    assert not o1.any() and not o2.any()
    now_and_two_below(a, out=(o1, o2), domain=({K: (0, NK)}, {K: (2, NK)}), backend=backend)
    np.testing.assert_allclose(o1, 2.0 * a, rtol=1e-14)
    want = np.zeros((NC, NK))
    want[:, 2:] = a[:, :-2]
    np.testing.assert_allclose(o2, want, rtol=1e-14)


@field_operator
def scan_beside_a_local(a: F) -> tuple[F, F]:
    t = 2.0 * a            # read twice: a let around the tuple value
    return running_sum(a), t + t(K - 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_fits_a_scan_beside_a_local_to_its_reader(backend):
    """The scan is read by the first output only: it starts at that output's
    first level, though the second's domain starts lower."""
    a = RNG.random((NC, NK))
    o1, o2 = np.zeros((NC, NK)), np.zeros((NC, NK))
    scan_beside_a_local(a, out=(o1, o2), domain=({K: (3, NK)}, {K: (1, NK)}),
                        backend=backend)
    want1, want2 = np.zeros((NC, NK)), np.zeros((NC, NK))
    want1[:, 3:] = np.cumsum(a[:, 3:], axis=1)
    want2[:, 1:] = 2.0 * a[:, 1:] + 2.0 * a[:, :-1]
    np.testing.assert_allclose(o1, want1, rtol=1e-14)
    np.testing.assert_allclose(o2, want2, rtol=1e-14)


@program
def scan_beside_a_local_in_a_program(a: F, o1: F, o2: F):
    scan_beside_a_local(a, out=(o1, o2), domain=({K: (3, NK)}, {K: (1, NK)}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_fits_a_scan_beside_a_local_to_its_reader(backend):
    """As in the direct call: the scan read by the first output only starts at
    that output's first level."""
    a = RNG.random((NC, NK))
    o1, o2 = np.zeros((NC, NK)), np.zeros((NC, NK))
    scan_beside_a_local_in_a_program(a, o1, o2, backend=backend)
    want1, want2 = np.zeros((NC, NK)), np.zeros((NC, NK))
    want1[:, 3:] = np.cumsum(a[:, 3:], axis=1)
    want2[:, 1:] = 2.0 * a[:, 1:] + 2.0 * a[:, :-1]
    np.testing.assert_allclose(o1, want1, rtol=1e-14)
    np.testing.assert_allclose(o2, want2, rtol=1e-14)


Fi = Field[[Cell, K], int32]


@field_operator
def flagged(a: F, t: float64) -> tuple[F, tuple[Fi, F]]:
    return a - t, (where(a > t, 1, 0), 2.0 * a)


@field_operator
def summed_annotated(a: F) -> tuple[F, F]:
    return sums(a)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_domain_for_outputs_of_different_lengths(backend):
    # GT4Py's one dict for all of out=: each output written on it, whatever its
    # length (a half-level output beside full-level ones), nested or not, with
    # outputs of other element types; without a dict, on the levels all have
    a = RNG.random((NC, NK))
    for hs, he, vs, ve in [(1, 5, 1, NK), (0, NC, 0, NK)]:
        o = (np.full((NC, NK + 1), 7.0), (np.full((NC, NK), 7, np.int32),
                                          np.full((NC, NK + 1), 7.0)))
        flagged(a, 0.5, out=o, domain={Cell: (np.int32(hs), he), K: (vs, np.int32(ve))},
                backend=backend)
        seven = np.full((NC, NK + 1), 7.0)
        want = [part(np.pad(a - 0.5, ((0, 0), (0, 1))), seven, (hs, he), (vs, ve)),
                part(np.where(a > 0.5, 1, 0), seven[:, :NK], (hs, he), (vs, ve)),
                part(np.pad(2.0 * a, ((0, 0), (0, 1))), seven, (hs, he), (vs, ve))]
        for k, (got, w) in enumerate(zip((o[0], o[1][0], o[1][1]), want)):
            np.testing.assert_allclose(got, w, rtol=1e-12, err_msg=f"output {k}")
        assert o[1][0].dtype == np.int32
        s = (np.zeros((NC, NK + 1)), np.zeros((NC, NK)))
        summed_annotated(a, out=s, domain={Cell: (hs, he), K: (vs, ve)}, backend=backend)
        np.testing.assert_allclose(s[0][:, :NK], running(a, (hs, he), (vs, ve)), rtol=1e-12)
        np.testing.assert_array_equal(s[0][:, NK], 0.0)
        np.testing.assert_allclose(s[1], running(a, (hs, he), (vs, ve), 2.0), rtol=1e-12)

    # without domain=, GT4Py's intersection of the outputs' domains: the
    # levels they all have, the half level beyond them left as it was
    o = (np.full((NC, NK + 1), 7.0), (np.full((NC, NK), 7, np.int32),
                                      np.full((NC, NK + 1), 7.0)))
    flagged(a, 0.25, out=o, backend=backend)
    np.testing.assert_allclose(o[0][:, :NK], a - 0.25, rtol=1e-12)
    np.testing.assert_array_equal(o[1][0], np.where(a > 0.25, 1, 0))
    np.testing.assert_allclose(o[1][1][:, :NK], 2.0 * a, rtol=1e-12)
    np.testing.assert_array_equal(o[0][:, NK], 7.0)
    np.testing.assert_array_equal(o[1][1][:, NK], 7.0)



@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_of_with_dims_arrays_into_outputs_of_different_lengths(backend):
    # the scan operator itself called with with_dims arrays (no annotation
    # names the outputs' dimensions): a full-level and a half-level output, on
    # one domain and without domain= (the levels both have)
    a = RNG.random((NC, NK))
    s = (np.full((NC, NK), 7.0), np.full((NC, NK + 1), 7.0))
    sums(with_dims(a, Cell, K), out=s, domain={Cell: (1, 5), K: (np.int32(1), NK)},
         offset_provider={}, backend=backend)
    seven = np.full((NC, NK + 1), 7.0)
    np.testing.assert_allclose(s[0], part(running(a, (1, 5), (1, NK)), seven[:, :NK],
                                          (1, 5), (1, NK)), rtol=1e-12)
    np.testing.assert_allclose(s[1][:, :NK], part(running(a, (1, 5), (1, NK), 2.0),
                                                  seven[:, :NK], (1, 5), (1, NK)), rtol=1e-12)
    np.testing.assert_array_equal(s[1][:, NK], 7.0)
    s = (np.full((NC, NK), 7.0), np.full((NC, NK + 1), 7.0))
    sums(with_dims(a, Cell, K), out=s, offset_provider={}, backend=backend)
    np.testing.assert_allclose(s[0], running(a, (0, NC), (0, NK)), rtol=1e-12)
    np.testing.assert_allclose(s[1][:, :NK], running(a, (0, NC), (0, NK), 2.0), rtol=1e-12)
    np.testing.assert_array_equal(s[1][:, NK], 7.0)
    # and a field operator of with_dims arrays
    o = (np.full((NC, NK + 1), 7.0), np.full((NC, NK), 7.0))
    nested_pair(with_dims(a, Cell, K), out=o, backend=backend)
    np.testing.assert_allclose(o[0][:, :NK], 2.0 * a, rtol=1e-12)
    np.testing.assert_array_equal(o[0][:, NK], 7.0)
    np.testing.assert_allclose(o[1], a + 1.0, rtol=1e-12)



@program
def on_first_output(a: F, o1: F, o2: F, o3: F, s1: F, s2: F):
    flagged_pair(a, out=(o1, (o2, o3)))
    summed(a, out=(s1, s2))


@field_operator
def flagged_pair(a: F) -> tuple[F, tuple[F, F]]:
    return a + 1.0, (2.0 * a, a - 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_program_tuple_out_of_different_lengths_without_domain(backend):
    # in a program body without domain=, as GT4Py: the first output's domain
    # for each output (a half-level output after a full-level one keeps its
    # last level); a first output longer than another is refused
    a = RNG.random((NC, NK))
    o = (np.full((NC, NK), 7.0), np.full((NC, NK + 1), 7.0), np.full((NC, NK), 7.0))
    s = (np.full((NC, NK), 7.0), np.full((NC, NK + 1), 7.0))
    on_first_output(a, *o, *s, backend=backend)
    np.testing.assert_allclose(o[0], a + 1.0, rtol=1e-12)
    np.testing.assert_allclose(o[1][:, :NK], 2.0 * a, rtol=1e-12)
    np.testing.assert_array_equal(o[1][:, NK], 7.0)
    np.testing.assert_allclose(o[2], a - 1.0, rtol=1e-12)
    np.testing.assert_allclose(s[0], running(a, (0, NC), (0, NK)), rtol=1e-12)
    np.testing.assert_allclose(s[1][:, :NK], running(a, (0, NC), (0, NK), 2.0), rtol=1e-12)
    np.testing.assert_array_equal(s[1][:, NK], 7.0)
    o = (np.full((NC, NK + 1), 7.0), np.full((NC, NK), 7.0), np.full((NC, NK), 7.0))
    with pytest.raises((ArgumentError, FrontendError)):
        on_first_output(a, *o, *s, backend=backend)



@scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def sum_and_decay(state: tuple[float, float], b: float) -> tuple[float, float]:
    return state[0] + b, 0.5 * state[1] + b


@field_operator
def plain_and_scanned(a: F, b: F) -> tuple[F, F]:
    x, y = sum_and_decay(b)
    return a + 1.0, x + y


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_tuple_of_domains_one_output_without_the_scan(backend):
    # the first output's program reads none of the second domain's level
    # bounds (the scan only the second output reads is left out of it): the
    # compiled program runs without them as the interpreter does
    a, b = RNG.random((NC, NK)), RNG.random((NC, NK))
    o = (np.zeros((NC, NK)), np.zeros((NC, NK)))
    plain_and_scanned(a, b, out=o,
                      domain=({Cell: (0, NC), K: (0, NK)}, {Cell: (1, NC), K: (2, NK)}),
                      backend=backend)
    x, y, want = np.zeros(NC), np.zeros(NC), np.zeros((NC, NK))
    for k in range(2, NK):
        x, y = x + b[:, k], 0.5 * y + b[:, k]
        want[1:, k] = (x + y)[1:]
    np.testing.assert_allclose(o[0], a + 1.0, rtol=1e-12)
    np.testing.assert_allclose(o[1], want, rtol=1e-12)


@field_operator
def nested_pair(a: F) -> tuple[F, F]:
    return 2.0 * a, a + 1.0


def part(value, base, cells, levels):
    out = np.array(base)
    out[cells[0]:cells[1], levels[0]:levels[1]] = value[cells[0]:cells[1], levels[0]:levels[1]]
    return out


# A tuple value written without domain= to outputs of one extent: the output
# a part cannot fill is the one named (the tuple held as one value is defined
# where all its parts are, which the first output does not need).


@field_operator
def _clipped(a: F, b: F) -> tuple[Field[[Cell, K], bool], F]:
    c = a > b
    return c, where(c, b, a)


@field_operator
def doubled_and_clipped(a: F, m: Field[[Cell, K], bool], v: F, o: F
                        ) -> tuple[F, Field[[Cell, K], bool], F]:
    m, v = where(a > 0.5, _clipped(0.5 * (a + a(K - 1)), a), (m, v))
    return where(a > 0.2, 2.0 * a, o), m, v


@program
def doubled_and_clipped_everywhere(a: F, m: Field[[Cell, K], bool], v: F, o: F):
    doubled_and_clipped(2.0 * a, m, v, o, out=(o, m, v))


def test_the_output_a_part_cannot_fill_is_named():
    with pytest.raises(CoverageError, match=r"part 1 of the value is defined on K\[1:N_K\] but "
                                            r"its output 'm' needs K\[0:N_K\]"):
        doubled_and_clipped_everywhere(RNG.random((NC, NK)), np.zeros((NC, NK), bool),
                                       np.zeros((NC, NK)), np.zeros((NC, NK)),
                                       backend="interpreter")
