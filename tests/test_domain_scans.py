"""``domain=`` in the Python front end, as GT4Py defines it for ICON's stencils.

A scan called under ``domain={K: (vs, ve)}`` runs over the domain's levels only:
its ``init`` comes before level ``vs``, not before level 0 (ICON's vertical
solvers start at level 1).  ``out=(a, b)`` with ``domain=`` writes each part of
a tuple value into the same sub-domain.  Interpreter and compiled code are
compared with hand-written NumPy, in a program body and in a direct call.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ArgumentError
from tensorir_dace.frontend import (
    Tensor,
    connectivity,
    dims,
    function,
    int32,
    maximum,
    neighbor_dim,
    program,
    scan_operator,
    where,
)

Cell, Edge, K = dims("Cell Edge K")
E2CDim = neighbor_dim(Cell, 2)
E2C = connectivity("E2C", Edge, E2CDim)
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(11)


@scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def forward_sweep(state, a, b, c, d):
    """The forward sweep of a tridiagonal solver (Thomas algorithm)."""
    cp, dp = state
    denom = b - a * cp
    return c / denom, (d - a * dp) / denom


@scan_operator(axis=K, forward=False, init=0.0)
def back_substitution(x_above, cp, dp):
    return dp - cp * x_above


@function
def solve(a: Tensor[float, Cell, K], b: Tensor[float, Cell, K], c: Tensor[float, Cell, K],
          d: Tensor[float, Cell, K]):
    cp, dp = forward_sweep(a, b, c, d)
    return back_substitution(cp, dp)


@program
def solve_w(a: Tensor[float, Cell, K], b: Tensor[float, Cell, K], c: Tensor[float, Cell, K],
            d: Tensor[float, Cell, K], w: Tensor[float, Cell, K],
            horizontal_start: int32, horizontal_end: int32,
            vertical_start: int32, vertical_end: int32):
    solve(a, b, c, d, out=w, domain={Cell: (horizontal_start, horizontal_end),
                                     K: (vertical_start, vertical_end)})


def solve_numpy(a, b, c, d, w, hs, he, vs, ve):
    """The solver by hand, on levels vs..ve-1 of cells hs..he-1 only."""
    if hs >= he or vs >= ve:
        return
    cells = slice(hs, he)
    cp = np.zeros(he - hs)
    dp = np.zeros(he - hs)
    cps, dps = {}, {}
    for k in range(vs, ve):
        denom = b[cells, k] - a[cells, k] * cp
        cp, dp = c[cells, k] / denom, (d[cells, k] - a[cells, k] * dp) / denom
        cps[k], dps[k] = cp, dp
    x = np.zeros(he - hs)
    for k in range(ve - 1, vs - 1, -1):
        x = dps[k] - cps[k] * x
        w[cells, k] = x


def system(n_cells=7, n_levels=9):
    a, c, d = (RNG.random((n_cells, n_levels)) for _ in range(3))
    b = 3.0 + RNG.random((n_cells, n_levels))
    return a, b, c, d


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_under_domain_starts_at_the_domains_first_level(backend):
    a, b, c, d = system()
    for hs, he, vs, ve in [(0, 7, 0, 9), (1, 6, 1, 9), (2, 5, 3, 6), (0, 7, 4, 4)]:
        w = np.full(a.shape, -7.0)
        solve_w(a, b, c, d, w, hs, he, vs, ve, backend=backend)
        expected = np.full(a.shape, -7.0)
        solve_numpy(a, b, c, d, expected, hs, he, vs, ve)
        np.testing.assert_allclose(w, expected, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_with_domain_scans_the_domain_only(backend):
    a, b, c, d = system()
    w = np.zeros(a.shape)
    solve(a, b, c, d, out=w, domain={K: (1, 8)}, backend=backend)
    expected = np.zeros(a.shape)
    solve_numpy(a, b, c, d, expected, 0, 7, 1, 8)
    np.testing.assert_allclose(w, expected, rtol=1e-12)


def test_bounds_outside_the_output_are_argument_errors():
    a, b, c, d = system()
    w = np.zeros(a.shape)
    with pytest.raises(ArgumentError, match="vertical_start = -1"):
        solve_w(a, b, c, d, w, 0, 7, -1, 9)
    assert not w.any()


@function
def gradient_and_mean(theta: Tensor[float, Cell, K], inv_length: Tensor[float, Edge],
                      mask: Tensor[bool, Edge, K]):
    grad = (theta(E2C[1]) - theta(E2C[0])) * inv_length
    mean = 0.5 * (theta(E2C[0]) + theta(E2C[1]))
    return where(mask, grad, 0.0), maximum(mean, abs(grad))


@program
def two_outputs(theta: Tensor[float, Cell, K], inv_length: Tensor[float, Edge],
                mask: Tensor[bool, Edge, K], grad: Tensor[float, Edge, K],
                mean: Tensor[float, Edge, K], horizontal_start: int32, horizontal_end: int32):
    gradient_and_mean(theta, inv_length, mask, out=(grad, mean),
                      domain={Edge: (horizontal_start, horizontal_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_out_with_domain_writes_each_part_into_the_sub_domain(backend):
    n_cells, n_edges, n_levels = 10, 16, 5
    table = RNG.integers(0, n_cells, (n_edges, 2))
    theta = RNG.random((n_cells, n_levels))
    inv = RNG.random(n_edges)
    mask = RNG.random((n_edges, n_levels)) > 0.3
    g_full = (theta[table[:, 1]] - theta[table[:, 0]]) * inv[:, None]
    m_full = np.maximum(0.5 * (theta[table[:, 0]] + theta[table[:, 1]]), abs(g_full))
    for hs, he in [(0, 16), (3, 11), (9, 2)]:
        grad, mean = np.full((n_edges, n_levels), 5.0), np.full((n_edges, n_levels), 5.0)
        two_outputs(theta, inv, mask, grad, mean, hs, he, E2C=table, backend=backend)
        g_exp, m_exp = np.full_like(grad, 5.0), np.full_like(mean, 5.0)
        g_exp[hs:he] = np.where(mask, g_full, 0.0)[hs:he]
        m_exp[hs:he] = m_full[hs:he]
        np.testing.assert_allclose(grad, g_exp, rtol=1e-12)
        np.testing.assert_allclose(mean, m_exp, rtol=1e-12)
