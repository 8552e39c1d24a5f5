"""``concat_where`` whose pieces leave a gap outside a runtime ``domain=`` bound:
the pieces beyond the gap are kept and the call checks the bound lies beyond it."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import TensorIRError
from tensorir_dace.frontend import Field, concat_where, dims, field_operator, int32, program

Cell, K = dims("Cell K")
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(5)


@field_operator
def gap_below(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
              ) -> Field[[Cell, K], float]:
    return concat_where(K > 0, a(K - 2), b)     # level 1 is in neither piece


@field_operator
def gap_above(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
              ) -> Field[[Cell, K], float]:
    return concat_where(K < 3, a(K + 1), b(K - 4))     # level 3 is in neither piece


@program
def below(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
          o: Field[[Cell, K], float], kstart: int32, nlev: int32):
    gap_below(a, b, out=o, domain={Cell: (0, 4), K: (kstart, nlev)})


@program
def above(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
          o: Field[[Cell, K], float], kstop: int32):
    gap_above(a, b, out=o, domain={Cell: (0, 4), K: (0, kstop)})


@pytest.fixture(scope="module")
def fields():
    return RNG.random((4, 6)), RNG.random((4, 6))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart", [2, 3])
def test_a_runtime_start_beyond_the_gap(backend, kstart, fields):
    a, b = fields
    o = np.zeros((4, 6))
    below(a, b, o, kstart, 6, backend=backend)
    want = np.zeros((4, 6))
    want[:, kstart:] = a[:, kstart - 2:4]
    np.testing.assert_allclose(o, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart", [0, 1])
def test_a_runtime_start_inside_the_gap_is_refused_at_the_call(backend, kstart, fields):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=r"(?s)kstart.*gap K\[1:2\]"):
        below(a, b, o, kstart, 6, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_domain_needs_no_check(backend, fields):
    a, b = fields
    o = np.zeros((4, 6))
    below(a, b, o, 1, 1, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstop", [2, 3])
def test_a_runtime_stop_below_the_gap(backend, kstop, fields):
    a, b = fields
    o = np.zeros((4, 6))
    above(a, b, o, kstop, backend=backend)
    want = np.zeros((4, 6))
    want[:, :kstop] = a[:, 1:kstop + 1]
    np.testing.assert_allclose(o, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstop", [4, 6])
def test_a_runtime_stop_inside_the_gap_is_refused_at_the_call(backend, kstop, fields):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=r"(?s)kstop.*gap K\[3:4\]"):
        above(a, b, o, kstop, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


# --------------------------------------------------------------------------- direct calls
# The field operator called directly with out=/domain=: the domain's bounds are
# parameters of the program run (one program whatever their values), so a
# literal bound is checked at the call as a runtime one is.


def gap_below_formula(a, b, start, stop):
    """concat_where(K > 0, a(K - 2), b) on levels [start, stop), from the formula."""
    want = np.zeros(a.shape)
    for k in range(start, stop):
        want[:, k] = a[:, k - 2] if k > 0 else b[:, k]
    return want


def gap_above_formula(a, b, start, stop):
    """concat_where(K < 3, a(K + 1), b(K - 4)) on levels [start, stop)."""
    want = np.zeros(a.shape)
    for k in range(start, stop):
        want[:, k] = a[:, k + 1] if k < 3 else b[:, k - 4]
    return want


@pytest.fixture(scope="module")
def direct():
    """The operators as called directly, made once for the module: each backend
    translates (and compiles) its program once, whatever the bounds."""
    return {"below": field_operator(gap_below.fn), "above": field_operator(gap_above.fn)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_on_a_literal_domain_beyond_the_gap(backend, fields, direct):
    a, b = fields
    o = np.zeros((4, 6))
    direct["below"](a, b, out=o, domain={Cell: (0, 4), K: (2, 6)}, backend=backend)
    np.testing.assert_allclose(o, gap_below_formula(a, b, 2, 6))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart", [2, 3])
def test_a_direct_call_with_a_runtime_start_beyond_the_gap(backend, kstart, fields, direct):
    a, b = fields
    o = np.zeros((4, 6))
    direct["below"](a, b, out=o, domain={Cell: (0, 4), K: (np.int32(kstart), 6)},
                    backend=backend)
    np.testing.assert_allclose(o, gap_below_formula(a, b, kstart, 6))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart", [0, 1])
def test_a_direct_call_with_a_start_inside_the_gap_is_refused(backend, kstart, fields, direct):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=rf"(?s)K_start = {kstart}.*gap K\[1:2\]"):
        direct["below"](a, b, out=o, domain={Cell: (0, 4), K: (kstart, 6)}, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstop", [2, 3])
def test_a_direct_call_with_a_stop_below_the_gap(backend, kstop, fields, direct):
    a, b = fields
    o = np.zeros((4, 6))
    direct["above"](a, b, out=o, domain={Cell: (0, 4), K: (0, kstop)}, backend=backend)
    np.testing.assert_allclose(o, gap_above_formula(a, b, 0, kstop))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstop", [4, 6])
def test_a_direct_call_with_a_stop_inside_the_gap_is_refused(backend, kstop, fields, direct):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=r"(?s)K_stop.*gap K\[3:4\]"):
        direct["above"](a, b, out=o, domain={Cell: (0, 4), K: (0, kstop)}, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


def test_a_direct_call_whose_domain_does_not_restrict_the_gap_is_refused(fields, direct):
    """The domain leaves the levels whole: the gap is in the value written."""
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match="gap"):
        direct["below"](a, b, out=o, domain={Cell: (0, 4)}, backend="interpreter")
    with pytest.raises(TensorIRError, match="gap"):
        direct["below"](a, b, out=o, backend="interpreter")
    np.testing.assert_array_equal(o, 0.0)


@program(backend="interpreter")
def below_from_level_1(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                       o: Field[[Cell, K], float]):
    gap_below(a, b, out=o, domain={Cell: (0, 4), K: (1, 6)})


def test_a_literal_start_inside_the_gap_is_a_translation_error(fields):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=r"gap between K\[0:1\]"):
        below_from_level_1(a, b, o)
    np.testing.assert_array_equal(o, 0.0)


@field_operator
def gap_and_double(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                   ) -> tuple[Field[[Cell, K], float], Field[[Cell, K], float]]:
    return concat_where(K > 0, a(K - 2), b), 2.0 * a


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_with_a_tuple_of_domains_beyond_the_gap(backend, fields):
    a, b = fields
    o1, o2 = np.zeros((4, 6)), np.zeros((4, 6))
    gap_and_double(a, b, out=(o1, o2),
                   domain=({Cell: (0, 4), K: (2, 6)}, {Cell: (1, 4), K: (3, 6)}), backend=backend)
    np.testing.assert_allclose(o1, gap_below_formula(a, b, 2, 6))
    want = np.zeros((4, 6))
    want[1:, 3:] = 2.0 * a[1:, 3:]
    np.testing.assert_allclose(o2, want)


# --------------------------------------------------------------------------- either side
# Both bounds runtime in a program: the domain may lie above the gap or below it;
# the call checks that it lies on one side.


@program
def either_side(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                o: Field[[Cell, K], float], kstart: int32, kend: int32):
    gap_above(a, b, out=o, domain={Cell: (0, 4), K: (kstart, kend)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart, kend", [(0, 2), (0, 3), (1, 3), (4, 6), (5, 6), (3, 3)])
def test_runtime_bounds_on_either_side_of_the_gap(backend, kstart, kend, fields):
    a, b = fields
    o = np.zeros((4, 6))
    either_side(a, b, o, kstart, kend, backend=backend)
    np.testing.assert_allclose(o, gap_above_formula(a, b, kstart, kend))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart, kend", [(2, 4), (3, 4), (0, 6)])
def test_runtime_bounds_across_the_gap_are_refused(backend, kstart, kend, fields):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=rf"(?s)kstart = {kstart}.*allowed range "
                                            rf"\[4, {kend}\].*gap K\[3:4\].*"
                                            r"below the gap: its stop at 3 or below"):
        either_side(a, b, o, kstart, kend, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


@program
def either_side_of_a_gap_below(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                               o: Field[[Cell, K], float], kstart: int32, kend: int32):
    gap_below(a, b, out=o, domain={Cell: (0, 4), K: (kstart, kend)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart, kend", [(0, 1), (2, 6), (3, 5)])
def test_runtime_bounds_on_either_side_of_a_gap_at_level_1(backend, kstart, kend, fields):
    a, b = fields
    o = np.zeros((4, 6))
    either_side_of_a_gap_below(a, b, o, kstart, kend, backend=backend)
    np.testing.assert_allclose(o, gap_below_formula(a, b, kstart, kend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_bounds_across_a_gap_at_level_1_are_refused(backend, fields):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=r"(?s)gap K\[1:2\]"):
        either_side_of_a_gap_below(a, b, o, 0, 3, backend=backend)
    np.testing.assert_array_equal(o, 0.0)


# --------------------------------------------------------------------------- tuples of domains
# One output's domain leaves the gap out, another's covers it: each output's
# pieces need only its own domain.


@field_operator
def gap_and_inc(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                ) -> tuple[Field[[Cell, K], float], Field[[Cell, K], float]]:
    return concat_where(K > 0, a(K - 2), b), a + 1.0


@program
def gap_and_inc_on_two_domains(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                               o1: Field[[Cell, K], float], o2: Field[[Cell, K], float]):
    gap_and_inc(a, b, out=(o1, o2), domain=({Cell: (0, 4), K: (2, 6)}, {Cell: (0, 4), K: (0, 6)}))


def _inc_formula(a, start, stop):
    want = np.zeros(a.shape)
    want[:, start:stop] = a[:, start:stop] + 1.0
    return want


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tuple_of_domains_one_covering_the_other_outputs_gap(backend, fields):
    a, b = fields
    o1, o2 = np.zeros((4, 6)), np.zeros((4, 6))
    gap_and_inc_on_two_domains(a, b, o1, o2, backend=backend)
    np.testing.assert_allclose(o1, gap_below_formula(a, b, 2, 6))
    np.testing.assert_allclose(o2, _inc_formula(a, 0, 6))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_with_a_tuple_of_domains_one_covering_the_gap(backend, fields):
    a, b = fields
    op = field_operator(gap_and_inc.fn)
    o1, o2 = np.zeros((4, 6)), np.zeros((4, 6))
    op(a, b, out=(o1, o2), domain=({Cell: (0, 4), K: (2, 6)}, {Cell: (0, 4), K: (0, 6)}),
       backend=backend)
    np.testing.assert_allclose(o1, gap_below_formula(a, b, 2, 6))
    np.testing.assert_allclose(o2, _inc_formula(a, 0, 6))
    # the output with the gap in its own domain is refused, nothing written
    o1, o2 = np.zeros((4, 6)), np.zeros((4, 6))
    with pytest.raises(TensorIRError, match="gap"):
        op(a, b, out=(o1, o2), domain=({Cell: (0, 4), K: (1, 6)}, {Cell: (0, 4), K: (0, 6)}),
           backend=backend)
    np.testing.assert_array_equal(o1, 0.0)
    np.testing.assert_array_equal(o2, 0.0)


@program(backend="interpreter")
def gap_in_the_first_outputs_domain(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                                    o1: Field[[Cell, K], float], o2: Field[[Cell, K], float]):
    gap_and_inc(a, b, out=(o1, o2), domain=({Cell: (0, 4), K: (0, 6)}, {Cell: (0, 4), K: (2, 6)}))


def test_a_tuple_of_domains_whose_gapped_output_covers_the_gap_is_refused(fields):
    a, b = fields
    o1, o2 = np.zeros((4, 6)), np.zeros((4, 6))
    with pytest.raises(TensorIRError, match="gap"):
        gap_in_the_first_outputs_domain(a, b, o1, o2)
    np.testing.assert_array_equal(o1, 0.0)


# A runtime condition that picks a branch at the last level of out= in a
# direct call without domain= (ICON's one-sided slope at ``K == nlev - 1``):
# the other branch stops a level short, and the call writes out='s whole
# interval as a program body's out= target, checking nlev there.


@field_operator
def _forward_difference_one_sided_at_the_bottom(a: Field[[Cell, K], float], nlev: int32
                                                ) -> Field[[Cell, K], float]:
    return concat_where(K == nlev - 1, a - a(K - 1), a(K + 1) - a)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_runtime_branch_at_the_end_of_out_without_domain(backend, fields):
    a, _ = fields
    o = np.zeros((4, 6))
    _forward_difference_one_sided_at_the_bottom(a, 6, out=o, backend=backend)
    want = np.empty((4, 6))
    want[:, :-1] = a[:, 1:] - a[:, :-1]
    want[:, -1] = a[:, -1] - a[:, -2]
    np.testing.assert_allclose(o, want)
    with pytest.raises(TensorIRError, match="nlev"):    # level 5 is then in neither piece
        _forward_difference_one_sided_at_the_bottom(a, 5, out=np.zeros((4, 6)),
                                                    backend=backend)


# A gap in a tuple element that the caller drops: GT4Py never computes that
# element, so the domain's start needs no check; the element a caller uses
# keeps its check.
@field_operator
def doubled_and_gapped(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                       ) -> tuple[Field[[Cell, K], float], Field[[Cell, K], float]]:
    return 2.0 * a, concat_where(K > 0, b(K - 2), b)


@field_operator
def first_of_pair(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                  ) -> Field[[Cell, K], float]:
    return doubled_and_gapped(a, b)[0]


@field_operator
def second_of_pair(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                   ) -> Field[[Cell, K], float]:
    return doubled_and_gapped(a, b)[1]


@program
def first_from(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
               o: Field[[Cell, K], float], kstart: int32, nlev: int32):
    first_of_pair(a, b, out=o, domain={Cell: (0, 4), K: (kstart, nlev)})


@program
def second_from(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                o: Field[[Cell, K], float], kstart: int32, nlev: int32):
    second_of_pair(a, b, out=o, domain={Cell: (0, 4), K: (kstart, nlev)})


@pytest.fixture(scope="module")
def direct_pairs():
    return {"first": field_operator(first_of_pair.fn), "second": field_operator(second_of_pair.fn)}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart", [0, 1, 2])
def test_a_gap_in_a_dropped_tuple_element_needs_no_check(backend, kstart, fields, direct_pairs):
    a, b = fields
    want = np.zeros((4, 6))
    want[:, kstart:] = 2.0 * a[:, kstart:]
    o = np.zeros((4, 6))
    first_from(a, b, o, kstart, 6, backend=backend)
    np.testing.assert_allclose(o, want)
    o = np.zeros((4, 6))
    direct_pairs["first"](a, b, out=o, domain={Cell: (0, 4), K: (np.int32(kstart), 6)},
                          backend=backend)
    np.testing.assert_allclose(o, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kstart", [0, 1, 2])
def test_a_gap_in_the_tuple_element_used_keeps_its_check(backend, kstart, fields, direct_pairs):
    a, b = fields
    o = np.zeros((4, 6))
    if kstart < 2:
        with pytest.raises(TensorIRError, match=rf"(?s)kstart = {kstart}.*gap K\[1:2\]"):
            second_from(a, b, o, kstart, 6, backend=backend)
        with pytest.raises(TensorIRError, match=rf"(?s)K_start = {kstart}.*gap K\[1:2\]"):
            direct_pairs["second"](a, b, out=o, domain={Cell: (0, 4), K: (kstart, 6)},
                                   backend=backend)
        np.testing.assert_array_equal(o, 0.0)
        return
    second_from(a, b, o, kstart, 6, backend=backend)
    np.testing.assert_allclose(o, gap_below_formula(b, b, kstart, 6))
    o = np.zeros((4, 6))
    direct_pairs["second"](a, b, out=o, domain={Cell: (0, 4), K: (kstart, 6)}, backend=backend)
    np.testing.assert_allclose(o, gap_below_formula(b, b, kstart, 6))


# The same with a literal domain (or none): the dropped element's gap is not
# an error, as GT4Py never computes that element; the element used keeps the
# error of its gap.
@program
def first_on_literal_levels(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                            o: Field[[Cell, K], float]):
    first_of_pair(a, b, out=o, domain={Cell: (1, 4), K: (0, 6)})


@program
def first_everywhere(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                     o: Field[[Cell, K], float]):
    first_of_pair(a, b, out=o)


@program
def second_on_literal_levels(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                             o: Field[[Cell, K], float]):
    second_of_pair(a, b, out=o, domain={Cell: (0, 4), K: (0, 6)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gap_in_a_dropped_tuple_element_on_a_literal_domain(backend, fields, direct_pairs):
    a, b = fields
    o = np.zeros((4, 6))
    first_on_literal_levels(a, b, o, backend=backend)
    want = np.zeros((4, 6))
    want[1:] = 2.0 * a[1:]
    np.testing.assert_allclose(o, want)
    o = np.zeros((4, 6))
    first_everywhere(a, b, o, backend=backend)
    np.testing.assert_allclose(o, 2.0 * a)
    for domain in [{Cell: (0, 4), K: (0, 6)}, None]:
        o = np.zeros((4, 6))
        direct_pairs["first"](a, b, out=o, backend=backend,
                              **({"domain": domain} if domain else {}))
        np.testing.assert_allclose(o, 2.0 * a)


def test_a_gap_in_the_tuple_element_used_on_a_literal_domain_is_an_error(fields, direct_pairs):
    a, b = fields
    o = np.zeros((4, 6))
    with pytest.raises(TensorIRError, match=r"gap between K\[0:1\]"):
        second_on_literal_levels(a, b, o, backend="interpreter")
    with pytest.raises(TensorIRError, match=r"gap between K\[0:1\]"):
        direct_pairs["second"](a, b, out=o, backend="interpreter")
    np.testing.assert_array_equal(o, 0.0)
