"""A scan under ``domain=`` whose result is read shifted along the scanned axis
runs over the levels its readers need (GT4Py's domain inference: the union of
the readers' domains, clipped to the operands' interval), in a program body and
in a direct call, compiled and interpreted; references are plain NumPy."""

import numpy as np
import pytest

from tensorir_dace import ArgumentError, TensorIRError
from tensorir_dace.frontend import (
    Field,
    FieldOffset,
    concat_where,
    dims,
    field_operator,
    program,
    scan_operator,
)

Cell, K = dims("Cell K")
Koff = FieldOffset("Koff", source=K, target=(K,))
N, L = 3, 7
A = np.random.default_rng(7).random((N, L))
BACKENDS = ["compiled", "interpreter"]


def scan_ref(a: np.ndarray, lo: int, hi: int, forward: bool) -> np.ndarray:
    """``state = 0.5 * state + a`` over levels [lo, hi), zero elsewhere."""
    out = np.zeros_like(a)
    s = np.zeros(a.shape[0])
    levels = range(lo, hi) if forward else range(hi - 1, lo - 1, -1)
    for k in levels:
        s = 0.5 * s + a[:, k]
        out[:, k] = s
    return out


@scan_operator(axis=K, forward=True, init=0.0)
def fwd(state: float, a: float) -> float:
    return 0.5 * state + a


@scan_operator(axis=K, forward=False, init=0.0)
def bwd(state: float, a: float) -> float:
    return 0.5 * state + a


@field_operator
def fwd_up(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = fwd(a)
    return w(Koff[1]) - w


@field_operator
def fwd_down(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = fwd(a)
    return w(Koff[-1]) - w


@field_operator
def bwd_up(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = bwd(a)
    return w(Koff[1]) - w


@field_operator
def bwd_down(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = bwd(a)
    return w(Koff[-1]) - w


@field_operator
def fwd_guarded(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = fwd(a)
    return concat_where(K > 0, w(Koff[-1]), 0.0)


@field_operator
def fwd_only_shifted(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return fwd(a)(Koff[1])


@field_operator
def plain_up(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    t = 2.0 * a + 1.0
    return t(Koff[1]) - t


def expected(kind: str, vs: int, ve: int) -> np.ndarray:
    """NumPy's value of each operator on [vs, ve) of a zero output."""
    out = np.zeros((N, L))
    if ve <= vs:
        return out
    if kind == "fwd_up":        # the scan runs on [vs, ve + 1) from vs
        w = scan_ref(A, vs, min(ve + 1, L), True)
        out[:, vs:ve] = w[:, vs + 1:ve + 1] - w[:, vs:ve]
    elif kind == "fwd_down":    # the scan runs on [vs - 1, ve) from vs - 1
        w = scan_ref(A, vs - 1, ve, True)
        out[:, vs:ve] = w[:, vs - 1:ve - 1] - w[:, vs:ve]
    elif kind == "bwd_up":      # the scan runs on [vs, ve + 1) from ve down
        w = scan_ref(A, vs, ve + 1, False)
        out[:, vs:ve] = w[:, vs + 1:ve + 1] - w[:, vs:ve]
    elif kind == "bwd_down":    # the scan runs on [vs - 1, ve) from ve - 1 down
        w = scan_ref(A, vs - 1, ve, False)
        out[:, vs:ve] = w[:, vs - 1:ve - 1] - w[:, vs:ve]
    elif kind == "fwd_guarded":  # level 0 is 0.0; above, w from max(vs - 1, 0)
        lo = max(vs - 1, 0)
        w = scan_ref(A, lo, ve, True)
        for k in range(vs, ve):
            out[:, k] = w[:, k - 1] if k > 0 else 0.0
    elif kind == "fwd_only_shifted":   # only levels vs + 1 … ve are read: start at vs + 1
        w = scan_ref(A, vs + 1, ve + 1, True)
        out[:, vs:ve] = w[:, vs + 1:ve + 1]
    elif kind == "plain_up":
        t = 2.0 * A + 1.0
        out[:, vs:ve] = t[:, vs + 1:ve + 1] - t[:, vs:ve]
    return out


OPS = {"fwd_up": fwd_up, "fwd_down": fwd_down, "bwd_up": bwd_up, "bwd_down": bwd_down,
       "fwd_guarded": fwd_guarded, "fwd_only_shifted": fwd_only_shifted,
       "plain_up": plain_up}


@program
def run_fwd_up(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int, ve: int):
    fwd_up(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_fwd_down(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int, ve: int):
    fwd_down(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_bwd_up(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int, ve: int):
    bwd_up(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_bwd_down(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int, ve: int):
    bwd_down(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_fwd_guarded(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int,
                    ve: int):
    fwd_guarded(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_fwd_only_shifted(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int,
                         ve: int):
    fwd_only_shifted(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_plain_up(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int, ve: int):
    plain_up(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_static(a: Field[[Cell, K], float], o1: Field[[Cell, K], float],
               o2: Field[[Cell, K], float], o3: Field[[Cell, K], float],
               o4: Field[[Cell, K], float]):
    fwd_up(a, out=o1, domain={Cell: (0, N), K: (2, 5)})
    bwd_down(a, out=o2, domain={Cell: (0, N), K: (2, 5)})
    fwd_guarded(a, out=o3, domain={Cell: (0, N), K: (0, 4)})
    bwd_up(a, out=o4, domain={Cell: (0, N), K: (1, L - 1)})


RUNTIME = {"fwd_up": run_fwd_up, "fwd_down": run_fwd_down, "bwd_up": run_bwd_up,
           "bwd_down": run_bwd_down, "fwd_guarded": run_fwd_guarded,
           "fwd_only_shifted": run_fwd_only_shifted, "plain_up": run_plain_up}
# domains each operator can read within K[0:L]: a +1 shift stops one level early
RANGES = {"up": [(0, L - 1), (2, 5), (3, 3)], "down": [(1, L), (3, 6), (4, 4)],
          "guarded": [(0, L), (2, 6), (1, 1)]}


def ranges_of(kind: str):
    key = "up" if kind.endswith("up") or kind == "fwd_only_shifted" else \
        "guarded" if kind == "fwd_guarded" else "down"
    return RANGES[key]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", list(RUNTIME))
def test_program_with_runtime_domain(kind, backend):
    prog = RUNTIME[kind]
    for vs, ve in ranges_of(kind):      # one binary for every range
        o = np.zeros((N, L))
        prog(A, o, vs=vs, ve=ve, backend=backend)
        np.testing.assert_allclose(o, expected(kind, vs, ve), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_program_with_static_domains(backend):
    outs = [np.zeros((N, L)) for _ in range(4)]
    run_static(A, *outs, backend=backend)
    np.testing.assert_allclose(outs[0], expected("fwd_up", 2, 5), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(outs[1], expected("bwd_down", 2, 5), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(outs[2], expected("fwd_guarded", 0, 4), rtol=1e-13,
                               atol=1e-13)
    np.testing.assert_allclose(outs[3], expected("bwd_up", 1, L - 1), rtol=1e-13,
                               atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["fwd_up", "bwd_down", "fwd_guarded", "plain_up"])
def test_direct_call(kind, backend):
    for vs, ve in ranges_of(kind)[:2]:
        o = np.zeros((N, L))
        OPS[kind](A, out=o, domain={Cell: (0, N), K: (vs, ve)}, backend=backend)
        np.testing.assert_allclose(o, expected(kind, vs, ve), rtol=1e-13, atol=1e-13)


@field_operator
def fwd_plain(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return fwd(a)


def test_a_scan_read_unshifted_still_starts_at_the_domain():
    o = np.zeros((N, L))
    fwd_plain(A, out=o, domain={Cell: (0, N), K: (2, 6)}, backend="interpreter")
    np.testing.assert_allclose(o, scan_ref(A, 2, 6, True), rtol=1e-13, atol=1e-13)


def test_reading_beyond_the_operands_runtime():
    with pytest.raises(ArgumentError, match="ve = 7 is outside its allowed range") as e:
        run_fwd_up(A, np.zeros((N, L)), vs=0, ve=L, backend="interpreter")
    assert isinstance(e.value, TensorIRError)
    with pytest.raises(ArgumentError, match="vs = 0 is outside its allowed range"):
        run_bwd_down(A, np.zeros((N, L)), vs=0, ve=3, backend="interpreter")


@program
def beyond(a: Field[[Cell, K], float], o: Field[[Cell, K], float]):
    fwd_up(a, out=o, domain={Cell: (0, N), K: (0, L)})


def test_reading_beyond_the_operands_static():
    """The scan stops at the operands' last level, so the shifted read on the
    domain's last level is refused before anything runs (sizes are known at the
    call)."""
    o = np.zeros((N, L))
    with pytest.raises(ArgumentError, match=r"target range K\[0:7\] of 'o'.*concat_where"):
        beyond(A, o, backend="interpreter")
    assert not o.any()


@field_operator
def both(a: Field[[Cell, K], float]):
    w = fwd(a)
    return w, w(Koff[1])


@program
def run_both(a: Field[[Cell, K], float], o1: Field[[Cell, K], float],
             o2: Field[[Cell, K], float], vs: int, ve: int):
    both(a, out=(o1, o2), domain={Cell: (0, N), K: (vs, ve)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_parts_share_the_scan(backend):
    """The parts of a tuple value read one scan: it runs over the union of what
    they need (from vs, for the unshifted part)."""
    vs, ve = 2, 5
    o1, o2 = np.zeros((N, L)), np.zeros((N, L))
    run_both(A, o1, o2, vs=vs, ve=ve, backend=backend)
    w = scan_ref(A, vs, ve + 1, True)
    e1, e2 = np.zeros((N, L)), np.zeros((N, L))
    e1[:, vs:ve], e2[:, vs:ve] = w[:, vs:ve], w[:, vs + 1:ve + 1]
    np.testing.assert_allclose(o1, e1, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(o2, e2, rtol=1e-13, atol=1e-13)


@field_operator
def fwd_down_plus_a(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return fwd(a)(Koff[-1]) + a


@program
def run_static_beside_the_column(a: Field[[Cell, K], float], o: Field[[Cell, K], float]):
    fwd_down_plus_a(a, out=o, domain={Cell: (0, N), K: (2, 5)})


@program
def run_static_past_the_column(a: Field[[Cell, K], float], o: Field[[Cell, K], float]):
    fwd_down_plus_a(a, out=o, domain={Cell: (0, N), K: (2, L + 1)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_static_domain_shifted_scan_beside_a_whole_column(backend):
    """The shifted scan is defined on the literal levels K[2:5]; the operand
    ``a`` on the whole column K[0:N_K]: their intersection keeps
    ``Min(5, N_K)`` (checked against the sizes at the call) instead of asking
    for an order of 5 and N_K that holds for every size."""
    o = np.zeros((N, L))
    run_static_beside_the_column(A, o, backend=backend)
    w = scan_ref(A, 1, 4, True)
    want = np.zeros((N, L))
    want[:, 2:5] = w[:, 1:4] + A[:, 2:5]
    np.testing.assert_allclose(o, want, rtol=1e-13, atol=1e-13)


def test_a_static_domain_past_the_column_is_refused_at_the_call():
    o = np.zeros((N, L))
    with pytest.raises(ArgumentError, match=r"K\[2:8\]"):
        run_static_past_the_column(A, o, backend="interpreter")
    assert not o.any()


@field_operator
def fwd_both_ways(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = fwd(a)
    return concat_where(K > 2, w(Koff[-1]) + a, a - w(Koff[1]))


@program
def run_both_ways(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int, ve: int):
    fwd_both_ways(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@program
def run_both_ways_static(a: Field[[Cell, K], float], o: Field[[Cell, K], float]):
    fwd_both_ways(a, out=o, domain={Cell: (0, N), K: (1, 5)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_where_pieces_read_the_scan_both_ways(backend):
    """Levels 1 and 2 read ``w`` one level up, levels 3 and 4 one level down:
    all read levels 2 and 3, so the scan starts at 2, and each ``concat_where``
    piece is cut to the levels of the domain (the piece below 3 would otherwise
    ask for ``w`` from level 1)."""
    w = scan_ref(A, 2, 4, True)
    want = np.zeros((N, L))
    for k in range(1, 5):
        want[:, k] = w[:, k - 1] + A[:, k] if k > 2 else A[:, k] - w[:, k + 1]
    for run, kwargs in ((run_both_ways, dict(vs=1, ve=5)), (run_both_ways_static, {})):
        o = np.zeros((N, L))
        run(A, o, **kwargs, backend=backend)
        np.testing.assert_allclose(o, want, rtol=1e-13, atol=1e-13)


@field_operator
def bwd_through_two_lets(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    w = bwd(a)
    t = 2.0 * w + w         # a let whose value reads the scan's let, unchanged itself
    return t * t - t


@program
def run_bwd_through_two_lets(a: Field[[Cell, K], float], o: Field[[Cell, K], float], vs: int,
                             ve: int):
    bwd_through_two_lets(a, out=o, domain={Cell: (0, N), K: (vs, ve)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_let_reading_a_let_of_the_scan_takes_the_scans_levels(backend):
    """The scan runs over ``[vs, ve)`` only; a let bound to a value reading it
    (itself not rewritten) takes its narrower levels too."""
    o = np.zeros((N, L))
    run_bwd_through_two_lets(A, o, 2, 6, backend=backend)
    t = 3.0 * scan_ref(A, 2, 6, False)
    want = np.zeros((N, L))
    want[:, 2:6] = (t * t - t)[:, 2:6]
    np.testing.assert_allclose(o, want, rtol=1e-13, atol=1e-13)
