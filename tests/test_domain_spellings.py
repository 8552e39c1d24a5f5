"""GT4Py's spellings of ``domain=`` and ``offset_provider`` around strided offsets.

Bounds written as lists (``{Cell: [hs, he]}``), tuples, and both mixed; domains
built with ``dict(…)``; in a ``@program`` body and in direct calls of a
``@function`` with ``out=``.  A sliced ``out=`` with ``domain=`` is refused (as
GT4Py refuses it), and an explicit table for a strided offset is checked
against the stride's layout instead of being ignored.  One program and one
direct-call program are compiled; both backends are compared with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ArgumentError, FrontendError
from tensorir_dace.frontend import (
    Field,
    FieldOffset,
    Tensor,
    dims,
    float64,
    function,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
)

Cell, Edge, K, CE = dims("Cell Edge K CE")
C2EDim = neighbor_dim(Edge, 3)
C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))
C2CE = FieldOffset("C2CE", source=CE, target=(Cell, C2EDim))      # strided: c * 3 + k
NC, NE, NK = 7, 9, 5
RNG = np.random.default_rng(31)
C2E_TABLE = RNG.integers(0, NE, (NC, 3))
C2CE_TABLE = np.arange(NC * 3).reshape(NC, 3)     # icon4py's table for C2CE: the layout
BACKENDS = ["interpreter", "compiled"]


@function
def smooth(a: Tensor[float64, Cell, K]):
    return 2.0 * a + 1.0


@scan_operator(axis=K, forward=True, init=0.0)
def column_sum(total: float, x: float) -> float:
    return total + x


@function
def pair(a: Tensor[float64, Cell, K]):
    return 2.0 * a + 1.0, a * a


@function
def sums(a: Tensor[float64, Cell, K]):
    return column_sum(a), column_sum(a)


@function
def flux_div(vn: Field[[Edge, K], float64], geofac: Field[[CE], float64]):
    return neighbor_sum(vn(C2E) * geofac(C2CE), axis=C2EDim)


@program
def domains(a: Field[[Cell, K], float64], vn: Field[[Edge, K], float64],
            geofac: Field[[CE], float64], o1: Field[[Cell, K], float64],
            o2: Field[[Cell, K], float64], o3: Field[[Cell, K], float64],
            o4: Field[[Cell, K], float64], o5: Field[[Cell, K], float64],
            o6: Field[[Cell, K], float64], s1: Field[[Cell, K], float64],
            s2: Field[[Cell, K], float64], hs: int, he: int, vs: int, ve: int):
    smooth(a, out=o1, domain={Cell: [hs, he], K: (vs, ve)})      # a list and a tuple
    dom = {Cell: [hs + 1, he], K: [0, 2]}                          # lists in a variable
    smooth(a, out=o2, domain=dom)
    smooth(a, out=o3, domain=dict([(Cell, (hs, he)), (K, [vs, ve - 1])]))
    flux_div(vn, geofac, out=o4, domain=dict({Cell: [hs, he]}))
    pair(a, out=(o5, o6), domain=({Cell: [hs, he]}, {Cell: (0, 2), K: [vs, ve]}))  # per output
    sums(a, out=(s1, s2), domain=({K: (vs, ve)}, {K: [vs + 1, ve]}))   # each scan its own


def inside(full, cells, levels, fill=0.0):
    out = np.full(full.shape, fill)
    out[cells[0]:cells[1], levels[0]:levels[1]] = full[cells[0]:cells[1], levels[0]:levels[1]]
    return out


def column_from(a, vs, ve):
    """The running sum over levels [vs, ve), starting at level vs (zero elsewhere)."""
    out = np.zeros(a.shape)
    out[:, vs:ve] = np.cumsum(a[:, vs:ve], axis=1)
    return out


def run_domains(backend, hs, he, vs, ve, provider):
    a, vn, geofac = RNG.random((NC, NK)), RNG.random((NE, NK)), RNG.random(NC * 3 + 2)
    outs = [np.zeros((NC, NK)) for _ in range(8)]
    domains(a, vn, geofac, *outs, hs, he, vs, ve, offset_provider=provider, backend=backend)
    div = (vn[C2E_TABLE] * geofac[:NC * 3].reshape(NC, 3)[:, :, None]).sum(1)
    expected = [inside(2 * a + 1, (hs, he), (vs, ve)), inside(2 * a + 1, (hs + 1, he), (0, 2)),
                inside(2 * a + 1, (hs, he), (vs, ve - 1)), inside(div, (hs, he), (0, NK)),
                inside(2 * a + 1, (hs, he), (0, NK)), inside(a * a, (0, 2), (vs, ve)),
                column_from(a, vs, ve), column_from(a, vs + 1, ve)]
    return outs, expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_domain_bounds_as_lists_tuples_and_dict_calls(backend):
    for bounds in [(1, 6, 1, 4), (0, NC, 0, NK), (2, 3, 2, 3), (0, 4, 3, 3)]:
        for provider in ({"C2E": C2E_TABLE, "C2CE": C2CE_TABLE},
                         {"C2E": C2E_TABLE, "C2CE": None}):
            outs, expected = run_domains(backend, *bounds, provider)
            for got, want in zip(outs, expected):
                np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_take_list_and_dict_domains(backend):
    a = RNG.random((NC, NK))
    for domain, cells, levels in [({Cell: [1, 3], K: (0, 2)}, (1, 3), (0, 2)),
                                  (dict([(Cell, (0, 2)), (K, [1, 4])]), (0, 2), (1, 4)),
                                  ({K: [2, NK], Cell: [4, NC]}, (4, NC), (2, NK))]:
        out = np.full((NC, NK), -1.0)
        assert smooth(a, out=out, domain=domain, backend=backend) is out
        np.testing.assert_allclose(out, inside(2 * a + 1, cells, levels, -1.0), rtol=1e-12)


def test_a_sliced_out_with_domain_is_refused():
    @program
    def sliced(a: Field[[Cell, K], float64], o: Field[[Cell, K], float64], vs: int):
        smooth(a, out=o[:, 1:], domain={K: (vs, 3)})

    x = np.zeros((3, 4))
    with pytest.raises(FrontendError, match=r"out=o\[:, 1:\] with domain=: either a domain "
                                            r"or a slice.*write out=o with domain=") as info:
        sliced(x, x.copy(), 1, backend="interpreter")
    assert ":" in str(info.value.loc)

    @program
    def sliced_only(a: Field[[Cell, K], float64], o: Field[[Cell, K], float64]):
        smooth(a, out=o[:, 1:])

    o = np.zeros((3, 4))
    a = RNG.random((3, 4))
    sliced_only(a, o, backend="interpreter")
    np.testing.assert_allclose(o[:, 1:], 2 * a[:, 1:] + 1)
    assert not o[:, 0].any()


def test_an_explicit_table_for_a_strided_offset_is_checked():
    vn, geofac = RNG.random((NE, NK)), RNG.random(NC * 3)
    other = C2CE_TABLE[::-1].copy()
    cases = [(other, r"offset_provider\['C2CE'\] is a table that is not the strided layout "
                     r"C2CE\[Cell c, k\] = c \* 3 \+ k \(entry \[0, 0\] is 18, not 0\).*"
                     r"FieldOffset\('C2CE', source=CE, target=\(Cell, neighbor_dim\(CE, 3\)\)\)"),
             (C2CE_TABLE[:, :2], r"must be None or a table of integers of shape "
                                 r"\(N_Cell, 3\).*got \(7, 2\)"),
             ("C2CE", r"must be None or a table of integers")]
    for table, message in cases:
        with pytest.raises(ArgumentError, match=message) as info:
            flux_div(vn, geofac, offset_provider={"C2E": C2E_TABLE, "C2CE": table},
                     backend="interpreter")
        assert "test_domain_spellings.py:" in str(info.value.loc)
        with pytest.raises(ArgumentError, match=message):
            domains(np.zeros((NC, NK)), vn, geofac, *[np.zeros((NC, NK))] * 8,
                    0, NC, 0, NK, offset_provider={"C2E": C2E_TABLE, "C2CE": table},
                    backend="interpreter")
    got = flux_div(vn, geofac, offset_provider={"C2E": C2E_TABLE, "C2CE": C2CE_TABLE},
                   backend="interpreter")
    expected = (vn[C2E_TABLE] * geofac.reshape(NC, 3)[:, :, None]).sum(1)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_tuple_of_domains_needs_one_dict_per_output():
    @program
    def too_few(a: Field[[Cell, K], float64], o: Field[[Cell, K], float64],
                p: Field[[Cell, K], float64]):
        pair(a, out=(o, p), domain=({Cell: (0, 1)},))

    @program
    def not_dicts(a: Field[[Cell, K], float64], o: Field[[Cell, K], float64],
                  p: Field[[Cell, K], float64]):
        doms = ({Cell: (0, 1)}, (0, 1))
        pair(a, out=(o, p), domain=doms)

    x = np.zeros((3, 2))
    for prog, message in [(too_few, r"domain= has 1 domains for 2 outputs"),
                          (not_dicts, r"a tuple of domains holds dicts .*got tuple")]:
        with pytest.raises(FrontendError, match=message) as info:
            prog(x, x.copy(), x.copy(), backend="interpreter")
        assert ":" in str(info.value.loc)
