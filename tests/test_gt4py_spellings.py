"""GT4Py's spellings in the Python front end, with GT4Py's meaning (ICON's stencils).

A scan called under ``domain={K: (vs, ve)}`` runs over the domain's levels only:
its ``init`` comes before level ``vs``, not before level 0 (ICON's vertical
solvers start at level 1).  ``out=(a, b)`` with ``domain=`` writes each part of
a tuple value into the same sub-domain.  ``broadcast(x, (Cell, K))`` is ``x``
over those dimensions.  Interpreter and compiled code are compared with
hand-written NumPy, in a program body and in a direct call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from tensorir_dace import ArgumentError, FrontendError
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Field,
    FieldOffset,
    GridType,
    Tensor,
    astype,
    broadcast,
    concat_where,
    connectivity,
    dims,
    field_operator,
    function,
    int32,
    maximum,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
    where,
    with_dims,
)

Cell, Edge, K = dims("Cell Edge K")
E2CDim = neighbor_dim(Cell, 2)
E2C = connectivity("E2C", Edge, E2CDim)
C2CDim = neighbor_dim(Cell, 3)
C2C = connectivity("C2C", Cell, C2CDim)
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


@function
def zero():
    return broadcast(0.0, (Cell, K))


@program
def init_zero(z: Tensor[float, Cell, K], horizontal_start: int32, horizontal_end: int32):
    zero(out=z, domain={Cell: (horizontal_start, horizontal_end)})


@function
def masked_sum(x: Tensor[float, Cell], y: Tensor[float, Cell, K], m: Tensor[bool, Cell, K]):
    return where(m, broadcast(x, (Cell, K)), broadcast(0.0, (Cell, K))) + y


@pytest.mark.parametrize("backend", BACKENDS)
def test_broadcast(backend):
    z = np.ones((6, 4))
    init_zero(z, 1, 5, backend=backend)
    expected = np.ones((6, 4))
    expected[1:5] = 0.0
    np.testing.assert_array_equal(z, expected)
    x, y = RNG.random(6), RNG.random((6, 4))
    m = RNG.random((6, 4)) > 0.5
    out = masked_sum(x, y, m, backend=backend)
    np.testing.assert_allclose(out, np.where(m, x[:, None], 0.0) + y, rtol=1e-15)


@function
def counted_neighbours(a: Tensor[float, Edge, K]):
    one = broadcast(1.0, (Cell, K))
    two = broadcast(2.0, (K,))
    return a + neighbor_sum(one(E2C), axis=E2CDim) + concat_where(K > 0, two, 3.0 * two)


@program
def count_neighbours(a: Tensor[float, Edge, K], c: Tensor[float, Cell, K],
                     out: Tensor[float, Edge, K]):
    counted_neighbours(a, out=out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broadcast_scalar_shifted_and_chosen_by_level(backend):
    """A scalar broadcast to (Cell, K) has Cell: read through a table it is the
    same at every present neighbour (and absent ones are skipped); a scalar
    broadcast to (K,) has K where concat_where on K chooses between two.  The
    intervals of Cell and K are the program parameters'."""
    table = np.array([[0, 1], [2, -1], [-1, -1], [1, 1]])
    a, out = RNG.random((4, 3)), np.zeros((4, 3))
    count_neighbours(a, np.zeros((3, 3)), out, offset_provider={"E2C": table}, backend=backend)
    levels = np.where(np.arange(3) > 0, 2.0, 6.0)
    np.testing.assert_allclose(out, a + (table >= 0).sum(1)[:, None] + levels, rtol=1e-15)


def test_broadcast_cannot_drop_a_dimension():
    @function
    def drop(y: Tensor[float, Cell, K]):
        return broadcast(y, (Cell,))

    with pytest.raises(FrontendError, match="cannot drop dimensions.*K"):
        drop(np.zeros((3, 2)), backend="interpreter")


@scan_operator(axis=K, forward=True, init=0.0)
def running_sum(total, x, dz):
    return total + x * dz


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_operator_called_directly(backend):
    x, dz = RNG.random((4, 7)), RNG.random((4, 7))
    got = running_sum(with_dims(x, Cell, K), with_dims(dz, Cell, K), backend=backend)
    np.testing.assert_allclose(got, np.cumsum(x * dz, axis=1), rtol=1e-13)
    out = np.zeros((4, 7))
    running_sum(with_dims(x, Cell, K), with_dims(dz, Cell, K), out=out,
                domain={K: (2, 6)}, backend=backend)
    expected = np.zeros((4, 7))
    expected[:, 2:6] = np.cumsum(x[:, 2:6] * dz[:, 2:6], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@function
def sums_of_broadcasts(w: Tensor[float, K]):
    ones = running_sum(broadcast(1.0, (K,)), broadcast(0.5, (Cell, K)))
    return ones + running_sum(w, broadcast(2.0, (K,)))


@program
def column_sums(w: Tensor[float, K], c: Tensor[float, Cell, K], out: Tensor[float, K],
                k0: int32):
    sums_of_broadcasts(w, out=out, domain={K: (k0, 5)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_scans_of_a_level_field_and_of_broadcast_scalars(backend):
    """A scan whose operands are broadcast scalars scans the program's levels; a
    scan of a K field has one column (compiled: a map over nothing)."""
    w, out = RNG.random(6), np.zeros(6)
    column_sums(w, np.zeros((3, 6)), out, 1, backend=backend)
    expected = np.zeros(6)
    expected[1:5] = np.cumsum(np.full(4, 0.5)) + np.cumsum(2.0 * w[1:5])
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@function
def shifted_choice(a: Tensor[float, Cell, K], n: int32):
    t = concat_where(K == n - 1, broadcast(1.0, (Cell, K)), broadcast(2.0, (Cell, K)))
    return a + t(K - 1)


@program
def shifted_choices(a: Tensor[float, Cell, K], out: Tensor[float, Cell, K], n: int32):
    shifted_choice(a, n, out=out, domain={K: (1, n + 1)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_runtime_choice_of_broadcasts_read_one_level_down(backend):
    """A runtime concat_where of two broadcast values is defined on the program's
    levels, not only on the statement's: it is read one level below them."""
    a, out = RNG.random((3, 6)), np.zeros((3, 6))
    shifted_choices(a, out, 3, backend=backend)
    expected = np.zeros((3, 6))
    expected[:, 1:4] = a[:, 1:4] + np.where(np.arange(0, 3) == 2, 1.0, 2.0)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@function
def first_columns_or_two(a: Tensor[float, Cell, K], n: int32):
    return concat_where(Cell < n, a, broadcast(2.0, (Cell,))) * a


@program
def literal_domain(a: Tensor[float, Cell, K], out: Tensor[float, Cell, K], n: int32):
    first_columns_or_two(a, n, out=out, domain={Cell: (1, 4), K: (0, 3)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_runtime_choice_with_a_broadcast_under_a_literal_domain(backend):
    """Under a domain of literal bounds, a runtime concat_where with a broadcast
    branch is defined on the parameters' cells (not on the domain's, whose
    order with the sizes is not known), so it meets a field of those cells."""
    a, out = RNG.random((6, 5)), np.zeros((6, 5))
    literal_domain(a, out, 3, backend=backend)
    expected = np.zeros((6, 5))
    expected[1:4, :3] = (np.where(np.arange(6)[:, None] < 3, a, 2.0) * a)[1:4, :3]
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@function
def doubled(x: Tensor[float, Cell, K]):
    return x + x


@function
def doubled_cells(c: Tensor[float, Cell], y: Tensor[float, Cell, K]):
    return doubled(broadcast(c, (Cell, K))) + y


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broadcast_field_is_taken_by_a_parameter_of_its_dimensions(backend):
    c, y = RNG.random(4), RNG.random((4, 3))
    out = doubled_cells(c, y, backend=backend)
    np.testing.assert_allclose(out, 2.0 * c[:, None] + y, rtol=1e-15)


@function
def neighbours_of_a_choice(c: Tensor[float, Cell, K], n: int32):
    t = concat_where(Cell >= n, broadcast(1.0, (Cell, K)), 2.0 * c)
    return neighbor_sum(t(C2C), axis=C2CDim)


@program
def sum_of_choices(c: Tensor[float, Cell, K], out: Tensor[float, Cell, K], n: int32,
                   hs: int32, he: int32):
    neighbours_of_a_choice(c, n, out=out, domain={Cell: (hs, he)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_runtime_choice_with_a_broadcast_read_at_neighbours_outside_the_domain(backend):
    """A runtime concat_where along Cell with a broadcast branch is defined on
    every cell, not only on the runtime domain's: its neighbours are read."""
    table = np.array([[5, 1, -1], [0, 2, 4], [3, 3, 3], [1, -1, 5], [0, 0, 2], [4, 1, 0]])
    c, out = RNG.random((6, 2)), np.zeros((6, 2))
    sum_of_choices(c, out, 3, 2, 4, offset_provider={"C2C": table}, backend=backend)
    t = np.where(np.arange(6)[:, None] >= 3, 1.0, 2.0 * c)
    expected = np.zeros((6, 2))
    expected[2:4] = np.where((table >= 0)[:, :, None], t[table], 0.0).sum(1)[2:4]
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@function
def sum_from_level_one(a: Tensor[float, Cell, K]):
    return concat_where(K > 0, running_sum(a, a), a)


@program
def sums_without_domain(a: Tensor[float, Cell, K], out: Tensor[float, Cell, K]):
    sum_from_level_one(a, out=out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_in_a_branch_starts_at_its_first_level_without_domain(backend):
    """Without domain= the domain is the output's field: a scan in the K > 0
    branch of a concat_where starts at level 1 with its init, as under an
    explicit domain."""
    a, out = RNG.random((3, 5)), np.zeros((3, 5))
    sums_without_domain(a, out, backend=backend)
    expected = a.copy()
    expected[:, 1:] = np.cumsum(a[:, 1:] ** 2, axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@scan_operator(axis=K, forward=False, init=0.0)
def sum_from_below(total, x):
    return 0.5 * total + x


@function
def sums_from_below_and_copy(a: Tensor[float, Cell, K]):
    return sum_from_below(broadcast(1.0, (Cell, K))), a


@program
def tuple_without_domain(a: Tensor[float, Cell, K], half: Tensor[float, Cell, K],
                         out: Tensor[float, Cell, K], copy: Tensor[float, Cell, K]):
    sums_from_below_and_copy(a, out=(out, copy))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backward_scan_into_a_tuple_without_domain_starts_at_the_last_level(backend):
    """out=(a, b) without domain=: the scan runs over the outputs' levels, not over
    the half levels of another parameter its broadcast operand takes."""
    a, out, copy = RNG.random((3, 4)), np.zeros((3, 4)), np.zeros((3, 4))
    tuple_without_domain(a, np.zeros((3, 5)), out, copy, backend=backend)
    expected = np.zeros(4)
    for k in range(3, -1, -1):
        expected[k] = 0.5 * (expected[k + 1] if k < 3 else 0.0) + 1.0
    np.testing.assert_allclose(out, np.broadcast_to(expected, (3, 4)), rtol=1e-13)
    np.testing.assert_allclose(copy, a, rtol=1e-15)


def test_with_backend_and_with_grid_type():
    """GT4Py's ``prog.with_backend(backend)(...)``: ``None`` (embedded
    execution) interprets, a backend name or object compiles; the copies
    share one specialisation cache; ``with_grid_type`` changes nothing."""
    @field_operator
    def doubled(w: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
        return 2.0 * w

    @program
    def apply(w: Field[[Cell, K], float], o: Field[[Cell, K], float]):
        doubled(w, out=o)

    w, o = RNG.random((3, 4)), np.zeros((3, 4))
    apply.with_backend(None).with_grid_type("unstructured")(w, o, offset_provider={})
    np.testing.assert_array_equal(o, 2.0 * w)
    info = apply.cache_info()
    assert info.compiles + info.loads == 0           # interpreted
    o[:] = 0.0
    apply.with_backend(object())(w, o)
    np.testing.assert_array_equal(o, 2.0 * w)
    info = apply.cache_info()
    assert info.compiles + info.loads == 1           # compiled, in the shared cache
    o2 = np.zeros((3, 4))
    doubled.with_backend("interpreter")(w, out=o2)
    np.testing.assert_array_equal(o2, o)
    assert apply.backend == "compiled"
    with pytest.raises(FrontendError, match="backend must be one of"):
        apply.with_backend("gtfn")

CellDim = Dimension("Cell")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))


@field_operator(grid_type=GridType.UNSTRUCTURED)
def _diff(w: Field[[CellDim, KDim], float]) -> Field[[CellDim, KDim], float]:
    return w - w(Koff[1])


@program(grid_type=GridType.UNSTRUCTURED)
def diff(w: Field[[CellDim, KDim], float], out: Field[[CellDim, KDim], float]):
    _diff(w, out=out)


def test_dimension_kinds_and_grid_types_as_gt4py_writes_them():
    w, out = RNG.random((3, 5)), np.zeros((3, 4))
    diff(w, out, offset_provider={"Koff": KDim}, backend="interpreter")
    np.testing.assert_allclose(out, w[:, :-1] - w[:, 1:], rtol=1e-15)
    # a local dimension takes its source and count from the offsets into it
    assert repr(Dimension("C2E", DimensionKind.LOCAL)) == "Dimension('C2E', kind=LOCAL)"
    with pytest.raises(FrontendError, match="kind must be a DimensionKind"):
        Dimension("K", kind="sideways")


@field_operator
def _scaled_by_level(x: Field[[Cell], float], k: Field[[K], int32]
                     ) -> tuple[Field[[Cell, K], float], Field[[Cell, K], float]]:
    scaled = where(k > 0, x * astype(k, float), 2.0)   # the condition's K comes first
    return scaled, scaled + x


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_result_has_the_declared_dimension_order(backend):
    """A field operator called directly returns arrays over its return
    annotation's dimensions in that order, whichever order its value has."""
    x, k = RNG.random(5), np.arange(3, dtype=np.int32)
    fn = _scaled_by_level.with_backend(None if backend == "interpreter" else "compiled")
    scaled, plus = fn(x, k)
    expected = np.where(k[None, :] > 0, x[:, None] * k[None, :], 2.0)
    assert scaled.shape == plus.shape == (5, 3)
    np.testing.assert_allclose(scaled, expected, rtol=1e-15)
    np.testing.assert_allclose(plus, expected + x[:, None], rtol=1e-15)


def test_decorator_backend_as_gt4py_passes_it():
    """icon4py's ``@program(grid_type=..., backend=backend)``: ``None`` (GT4Py's
    embedded execution) interprets, a backend object compiles, as ``with_backend``."""
    @field_operator(backend=None)
    def _tripled(w: Field[[CellDim, KDim], float]) -> Field[[CellDim, KDim], float]:
        return 3.0 * w

    @program(grid_type=GridType.UNSTRUCTURED, backend=None)
    def embedded(w: Field[[CellDim, KDim], float], o: Field[[CellDim, KDim], float]):
        _tripled(w, out=o)

    @program(grid_type=GridType.UNSTRUCTURED, backend=object())
    def gtfn_like(w: Field[[CellDim, KDim], float], o: Field[[CellDim, KDim], float]):
        _tripled(w, out=o)

    assert (_tripled.backend, embedded.backend, gtfn_like.backend) == \
        ("interpreter", "interpreter", "compiled")
    w = RNG.random((3, 4))
    for prog in (embedded, gtfn_like):
        o = np.zeros((3, 4))
        prog(w, o, offset_provider={})
        np.testing.assert_allclose(o, 3.0 * w, rtol=1e-15)
    assert embedded.cache_info().compiles + embedded.cache_info().loads == 0
    with pytest.raises(FrontendError, match="backend must be one of"):
        program(backend="gtfn")(lambda: None)


# ------------------------------------------------------------------ tuples of fields (muphys' Q)


class QPair(NamedTuple):
    v: Field[[Cell, K], float]
    c: Field[[Cell, K], float]


@field_operator
def _split(x: Field[[Cell, K], float]) -> tuple[Field[[Cell, K], float], Field[[Cell, K], float]]:
    return x + 1.0, x * 2.0


@field_operator
def _updated(t: Field[[Cell, K], float], q: QPair, on: bool
             ) -> tuple[QPair, Field[[Cell, K], float]]:
    a, b = _split(q.v)          # the hidden value of the unpacking is no name 't'
    if on:                      # an if that only assigns: the rest is not copied
        s = a + b
    else:
        s = a - b
    return QPair(v=s + t, c=q.c * t), t + 1.0


@field_operator
def _masked(te: Field[[Cell, K], float], q: QPair, on: bool
            ) -> tuple[QPair, Field[[Cell, K], float]]:
    q, t = where(q.c > 0.5, _updated(te, q, on), (q, te))   # the NamedTuple stays one
    return QPair(v=q.v + t, c=q.c), t


@program
def pair_run(te: Field[[Cell, K], float], q_in: QPair, q_out: QPair,
             t_out: Field[[Cell, K], float], hs: int32, he: int32, on: bool):
    _masked(te, q_in, on, out=(q_out, t_out),
            domain=(({Cell: (hs, he)}, {Cell: (hs, he)}), {Cell: (hs, he)}))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("on", [True, False])
def test_a_namedtuple_of_fields_as_parameter_output_and_where_branch(backend, on):
    n, nk = 6, 4
    te, v, c = (RNG.random((n, nk)) for _ in range(3))
    q_out = QPair(np.zeros((n, nk)), np.zeros((n, nk)))
    t_out = np.zeros((n, nk))
    pair_run(te, QPair(v, c), q_out, t_out, 1, n - 1, on, backend=backend)
    a, b = v + 1.0, v * 2.0
    s = a + b if on else a - b
    m = c > 0.5
    qv, qc, t = np.where(m, s + te, v), np.where(m, c * te, c), np.where(m, te + 1.0, te)
    want = (qv + t, qc, t)
    for got, w in zip((q_out.v, q_out.c, t_out), want):
        np.testing.assert_allclose(got[1:n - 1], w[1:n - 1], rtol=1e-12)
        assert not got[0].any() and not got[n - 1].any()


def test_a_tuple_of_domains_for_one_tuple_valued_output_must_agree():
    @program
    def disagreeing(te: Field[[Cell, K], float], q_in: QPair, q_out: QPair,
                    t_out: Field[[Cell, K], float]):
        _masked(te, q_in, True, out=(q_out, t_out),
                domain=(({Cell: (0, 1)}, {Cell: (0, 2)}), {Cell: (0, 1)}))

    with pytest.raises(FrontendError, match="give them the same domain"):
        disagreeing.ir


@field_operator
def _chosen_then_used(a: Field[[Cell, K], float], on: bool) -> Field[[Cell, K], float]:
    if on:
        s = a + 1.0
    else:
        s = a * 2.0
    return s * 12345.0 + s


@program
def chosen_then_used(a: Field[[Cell, K], float], out: Field[[Cell, K], float], on: bool):
    _chosen_then_used(a, on, out=out)


@pytest.mark.parametrize("on", [True, False])
def test_an_if_statement_that_only_assigns_translates_the_rest_once(on):
    from tensorir_dace import ir
    marks = [n for n in ir.walk(chosen_then_used.ir)
             if isinstance(n, ir.Literal) and n.value == 12345.0]
    assert len(marks) == 1              # not once per branch
    a = RNG.random((4, 3))
    out = np.zeros((4, 3))
    chosen_then_used(a, out, on, backend="interpreter")
    s = a + 1.0 if on else a * 2.0
    np.testing.assert_allclose(out, s * 12345.0 + s, rtol=1e-12)


@scan_operator(axis=K, forward=True, init=0.0)
def _running_sum(state: float, x: float) -> float:
    return state + x


@field_operator
def _sum_inside_cells(a: Field[[Cell, K], float], hs: int32, he: int32
                      ) -> Field[[Cell, K], float]:
    return _running_sum(concat_where((hs <= Cell) & (Cell < he), a, 2.0 * a))


@program
def sum_inside_cells(a: Field[[Cell, K], float], out: Field[[Cell, K], float], hs: int32,
                     he: int32):
    _sum_inside_cells(a, hs, he, out=out)


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_runtime_bounds_read_only_by_a_scans_operand(backend):
    """The bounds reach the scan's code: DaCe does not look into a library
    node's code, so the node declares them (before, the generated function did
    not take them and the C++ compile failed)."""
    a = RNG.random((6, 5))
    for hs, he in [(1, 4), (0, 6), (5, 2)]:
        out = np.zeros((6, 5))
        sum_inside_cells(a, out, hs, he, backend=backend)
        cells = np.arange(6)[:, None]
        want = np.cumsum(np.where((hs <= cells) & (cells < he), a, 2.0 * a), axis=1)
        np.testing.assert_allclose(out, want, rtol=1e-12)


def test_a_library_nodes_symbols_survive_simplify():
    """Handed to a DaCe workflow that simplifies again, the SDFG keeps them."""
    import tensorir_dace as tir
    from tensorir_dace.runtime.program import CompiledProgram
    prog = sum_inside_cells.ir
    sdfg = tir.to_sdfg(prog)
    sdfg.simplify()
    assert {"hs", "he"} <= set(sdfg.symbols)
    a, out = RNG.random((6, 5)), np.zeros((6, 5))
    CompiledProgram.from_sdfg(prog, sdfg)(a=a, out=out, hs=2, he=5)
    cells = np.arange(6)[:, None]
    np.testing.assert_allclose(out, np.cumsum(np.where((2 <= cells) & (cells < 5), a, 2 * a),
                                              axis=1), rtol=1e-12)


@field_operator
def _tuple_where_with_numbers(mask: Field[[Cell, K], bool], i: Field[[Cell, K], int32],
                              j: Field[[Cell, K], int32], x: Field[[Cell, K], float]):
    a, b = where(mask, (i, j), (0, 0))
    c, (d, e) = where(mask, (-1, (x, 2)), (i, (1.5, j)))
    return a, b, c, d, e


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_numbers_in_a_tuple_branch_of_where_take_the_other_branchs_types(backend):
    # GT4Py's metrics: ``where(flat, (e_lev, k_lev), (0, 0))`` over int32 index fields
    rng = np.random.default_rng(5)
    mask = rng.random((4, 3)) < 0.5
    i, j = (rng.integers(-9, 9, (4, 3)).astype(np.int32) for _ in range(2))
    x = rng.random((4, 3))
    a, b, c, d, e = _tuple_where_with_numbers(mask, i, j, x, backend=backend)
    for got, want in [(a, np.where(mask, i, 0)), (b, np.where(mask, j, 0)),
                      (c, np.where(mask, -1, i)), (d, np.where(mask, x, 1.5)),
                      (e, np.where(mask, 2, j))]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@scan_operator(axis=K, forward=True, init=0.0)
def damped_sum(state: float, x: float) -> float:
    return 0.5 * state + x


@field_operator
def as_float(a: Field[[Cell, K], int32]) -> Field[[Cell, K], float]:
    return astype(a, float)


@field_operator
def field_and_scan(c: Field[[Cell, K], float], big: bool = False
                   ) -> tuple[Field[[Cell, K], float], Field[[Cell, K], float]]:
    t = broadcast(int32(2), (Cell, K))
    if big:     # a let too large to copy into each element
        t = t + astype(c * c + c * c * c + c * c * c * c + c * c * c * c * c
                       + c * c * c * c * c * c + c * c * c * c * c * c * c, int32)
    return c + as_float(t), damped_sum(astype(t, float))


@program
def field_and_scan_to_level_3(c: Field[[Cell, K], float], o1: Field[[Cell, K], float],
                              o2: Field[[Cell, K], float]):
    field_and_scan(c, out=(o1, o2), domain={Cell: (0, 3), K: (0, 3)})


@program
def big_field_and_scan_to_level_3(c: Field[[Cell, K], float], o1: Field[[Cell, K], float],
                                  o2: Field[[Cell, K], float]):
    field_and_scan(c, True, out=(o1, o2), domain={Cell: (0, 3), K: (0, 3)})


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tuple_of_a_field_and_a_scan_under_a_literal_level_stop(backend, big):
    """The scan runs over the literal levels [0, Min(3, N_K)), clipped to its
    operand, so a tuple of it and a field over [0, N_K) has a known interval
    (with a let small enough to copy into each element, and one bound once)."""
    c = RNG.random((4, 5)) * 1.5
    o1, o2 = np.zeros((4, 5)), np.zeros((4, 5))
    prog = big_field_and_scan_to_level_3 if big else field_and_scan_to_level_3
    prog(c, o1, o2, backend=backend)
    t = np.full((4, 5), 2, np.int32)
    if big:
        t = t + sum(c ** p for p in range(2, 8)).astype(np.int32)
    s = np.zeros((4, 5))
    for k in range(3):
        s[:, k] = (0.5 * s[:, k - 1] if k else 0.0) + t[:, k]
    np.testing.assert_allclose(o1[:3, :3], (c + t)[:3, :3])
    np.testing.assert_allclose(o2[:3, :3], s[:3, :3])
    assert not o1[3:].any() and not o1[:, 3:].any() and not o2[:, 3:].any()


@field_operator
def doubled_edges(a: Field[[Edge, K], float]) -> Field[[Edge, K], float]:
    return 2.0 * a


@field_operator
def broadcast_read_through_a_table(c0: Field[[Cell], float], e1: Field[[Edge, K], float]
                                   ) -> Field[[Edge, K], float]:
    t = broadcast(c0, (Cell, K))
    return e1 + doubled_edges(t(E2C[1])) + doubled_edges(neighbor_sum(t(E2C), axis=E2CDim) * 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broadcast_along_k_read_through_a_table_keeps_k(backend):
    """In GT4Py ``broadcast(c0, (Cell, K))(E2C[1])`` is over ``(Edge, K)``: a
    parameter annotated so takes it (here it broadcasts along K by name)."""
    c0, e1 = RNG.random(4), RNG.random((6, 3))
    tab = RNG.integers(0, 4, (6, 2)).astype(np.int32)
    o = np.zeros((6, 3))

    @program
    def p(c0: Field[[Cell], float], e1: Field[[Edge, K], float], o: Field[[Edge, K], float]):
        broadcast_read_through_a_table(c0, e1, out=o)

    p(c0, e1, o, E2C=tab, backend=backend)
    want = e1 + 2 * c0[tab[:, 1]][:, None] + c0[tab].sum(1)[:, None]
    np.testing.assert_allclose(o, want)


E2CLocal = Dimension("E2Cb", DimensionKind.LOCAL)
E2COff = FieldOffset("E2Cb", source=Cell, target=(Edge, E2CLocal))


@field_operator
def literal_read_through_a_table(e1: Field[[Edge, K], float]) -> Field[[Edge, K], float]:
    t = broadcast(2.0, (Cell, K))
    return e1 + doubled_edges(t(E2COff[0])) + doubled_edges(
        neighbor_sum(t(E2COff), axis=E2CLocal))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broadcast_literal_read_through_a_table_keeps_k(backend):
    e1 = RNG.random((6, 3))
    tab = RNG.integers(0, 4, (6, 2)).astype(np.int32)
    o = np.zeros((6, 3))

    @program
    def p(c: Field[[Cell], float], e1: Field[[Edge, K], float], o: Field[[Edge, K], float]):
        literal_read_through_a_table(e1, out=o)     # (c: the number of cells)

    p(np.zeros(4), e1, o, offset_provider={"E2Cb": tab}, backend=backend)
    np.testing.assert_allclose(o, e1 + 4.0 + 8.0)


@field_operator
def cast_literal_read_through_a_table(e1: Field[[Edge, K], float]) -> Field[[Edge, K], float]:
    t = astype(broadcast(int32(2), (Cell, K)), float)
    near = t(E2COff[1])            # a name used twice: bound once, still over (Edge, K)
    return e1 + doubled_edges(near) + near(K - 1) + doubled_edges(
        neighbor_sum(t(E2COff), axis=E2CLocal))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cast_broadcast_literal_read_through_a_table_keeps_k(backend):
    e1 = RNG.random((6, 3))
    tab = RNG.integers(0, 4, (6, 2)).astype(np.int32)
    o = np.zeros((6, 3))

    @program
    def p(c: Field[[Cell], float], e1: Field[[Edge, K], float], o: Field[[Edge, K], float]):
        cast_literal_read_through_a_table(e1, out=o)

    p(np.zeros(4), e1, o, offset_provider={"E2Cb": tab}, backend=backend)
    np.testing.assert_allclose(o, e1 + 4.0 + 2.0 + 8.0)


@field_operator
def scan_in_an_empty_nested_piece(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
                                  n: int32) -> Field[[Cell, K], float]:
    inner = concat_where(K > 1, damped_sum(a), b)      # read on level 0 only: empty
    upper = concat_where(K < n - 1, b, damped_sum(a))  # read from level n - 1 on only
    return concat_where(0 < K, concat_where(K < n - 2, a, upper), inner)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("domain", [False, True])
def test_a_scan_in_an_empty_nested_concat_where_piece(backend, domain):
    """A scan whose piece lies outside the enclosing piece is asked for no
    levels: it runs over an empty range."""
    a, b = RNG.random((3, 6)), RNG.random((3, 6))
    o = np.zeros((3, 6))

    @program
    def whole(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
              o: Field[[Cell, K], float], n: int32):
        scan_in_an_empty_nested_piece(a, b, n, out=o)

    @program
    def part(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
             o: Field[[Cell, K], float], n: int32):
        scan_in_an_empty_nested_piece(a, b, n, out=o, domain={Cell: (0, 3), K: (0, n - 1)})

    (part if domain else whole)(a, b, o, 6, backend=backend)
    want = a.copy()
    want[:, 0] = b[:, 0]
    want[:, 4] = b[:, 4]
    want[:, 5] = 0.0 if domain else a[:, 5]     # the upper scan starts at level 5
    np.testing.assert_allclose(o, want)


@scan_operator(axis=K, forward=True, init=0.0)
def damped_difference(state: float, x: float, y: float) -> float:
    return 0.5 * state + x - y


@field_operator
def scan_beside_a_cell_range(a: Field[[Cell, K], float], n0: int32, k0: int32
                             ) -> Field[[Cell, K], float]:
    picked = concat_where(Cell >= n0, a, damped_sum(a))     # a scan in a Cell piece
    upper = concat_where(K >= k0, a, damped_difference(a, 2.0 * a))   # asked for no level
    return where(a > 0.5, picked, 2.0 * a) + where(a < 0.25, upper, a)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scans_in_pieces_a_domain_cuts_or_empties(backend):
    """Under ``domain={Cell: (0, 3), K: (k0, nlev)}`` the scan of the ``Cell``
    piece runs on cells [0, min(3, N_Cell)), whose order with ``N_Cell`` is
    known one way only, and the scan below ``k0`` runs on no level: an empty
    operand meets the others' levels."""
    a = RNG.random((5, 6))
    o = np.zeros((5, 6))

    @program
    def p(a: Field[[Cell, K], float], o: Field[[Cell, K], float], n0: int32, k0: int32,
          nlev: int32):
        scan_beside_a_cell_range(a, n0, k0, out=o, domain={Cell: (0, 3), K: (k0, nlev)})

    p(a, o, 1, 2, 6, backend=backend)
    s = np.zeros((5, 6))
    for k in range(2, 6):
        s[:, k] = (0.5 * s[:, k - 1] if k > 2 else 0.0) + a[:, k]
    picked = np.where(np.arange(5)[:, None] >= 1, a, s)
    want = np.zeros((5, 6))
    want[:3, 2:] = (np.where(a > 0.5, picked, 2 * a) + a)[:3, 2:]
    np.testing.assert_allclose(o, want)


@field_operator
def gap_below_the_domain(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                         ) -> Field[[Cell, K], float]:
    return concat_where(K > 0, a(K - 2), b)     # level 1 is in neither piece


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gap_between_concat_where_pieces_outside_the_domain(backend):
    """GT4Py computes the value on the domain only: a gap below it is no error;
    one inside it still is."""
    a, b = RNG.random((4, 5)), RNG.random((4, 5))
    o = np.zeros((4, 5))

    @program
    def p(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
          o: Field[[Cell, K], float], nlev: int32):
        gap_below_the_domain(a, b, out=o, domain={Cell: (0, 4), K: (2, nlev)})

    p(a, b, o, 5, backend=backend)
    want = np.zeros((4, 5))
    want[:, 2:] = a[:, :3]
    np.testing.assert_allclose(o, want)

    @program
    def inside(a: Field[[Cell, K], float], b: Field[[Cell, K], float],
               o: Field[[Cell, K], float], nlev: int32):
        gap_below_the_domain(a, b, out=o, domain={Cell: (0, 4), K: (1, nlev)})

    with pytest.raises(FrontendError, match="gap between K"):
        inside(a, b, o, 5, backend=backend)


@field_operator
def field_minus_scan(a: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return a - damped_sum(a) + a(K - 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_beside_a_field_under_a_literal_level_stop(backend):
    """The scan runs over [2, Min(3, N_K)): its order with the field's N_K is
    then known."""
    a = RNG.random((4, 5))
    o = np.zeros((4, 5))

    @program
    def p(a: Field[[Cell, K], float], o: Field[[Cell, K], float]):
        field_minus_scan(a, out=o, domain={Cell: (0, 4), K: (2, 3)})

    p(a, o, backend=backend)
    want = np.zeros((4, 5))
    want[:, 2] = a[:, 1]         # the scan starts at level 2: a - a
    np.testing.assert_allclose(o, want)


@field_operator
def shifted_field_and_scans(a: Field[[Cell, K], float], b: Field[[Cell, K], float]
                            ) -> Field[[Cell, K], float]:
    # the scan of the inner piece is asked for no level under K: (1, 3)
    unused = concat_where(K > 2, concat_where(1 < K, b, damped_sum(a)), 2.0 * b)
    return a(K + 1) + damped_sum(a) + unused


@pytest.mark.parametrize("backend", BACKENDS)
def test_scans_under_a_literal_stop_meet_shifted_fields_and_empty_pieces(backend):
    """[0, N_K - 1) of ``a(K + 1)`` meets the scan's [1, Min(3, N_K)) at a
    symbolic Min; an empty piece lies where it is cut, wherever its scan ran."""
    a, b = RNG.random((4, 6)), RNG.random((4, 6))
    o = np.zeros((4, 6))

    @program
    def p(a: Field[[Cell, K], float], b: Field[[Cell, K], float], o: Field[[Cell, K], float]):
        shifted_field_and_scans(a, b, out=o, domain={Cell: (0, 4), K: (1, 3)})

    p(a, b, o, backend=backend)
    s = np.zeros((4, 6))
    for k in range(1, 3):
        s[:, k] = (0.5 * s[:, k - 1] if k > 1 else 0.0) + a[:, k]
    want = np.zeros((4, 6))
    want[:, 1:3] = a[:, 2:4] + s[:, 1:3] + 2.0 * b[:, 1:3]
    np.testing.assert_allclose(o, want)


@field_operator
def times(c: Field[[Edge, K], int32], n: int32) -> Field[[Edge, K], int32]:
    return c * n


@field_operator
def neighbours_above(x: Field[[Cell, K], float], n: int32
                     ) -> tuple[Field[[Edge, K], int32], Field[[Edge, K], int32]]:
    # GT4Py types the Python ints 1 and 0 int32: so is the count, which meets
    # ``n``, an int32 parameter and an int32 return annotation
    counted = neighbor_sum(where(x(E2C) > 0.5, 1, 0), axis=E2CDim)
    return counted, times(counted, n) + counted * n + broadcast(n, (Edge, K))


@field_operator
def above(x: Field[[Edge, K], float]) -> Field[[Edge, K], int32]:
    return where(x > 0.5, 1, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_count_of_python_ints_meets_int32_and_takes_the_declared_type(backend):
    """A value of Python ints alone (``where(m, 1, 0)``, its neighbour sum)
    adapts to an ``int32`` partner, also where a local holding it is used
    twice, and takes the element type of an annotated parameter and of the
    return annotation (a direct call returns that type)."""
    table = np.array([[0, 1], [2, 2], [1, -1], [3, 0]])
    x = RNG.random((4, 5))
    c = RNG.random((4, 3))
    counted, scaled = np.zeros((4, 3), np.int32), np.zeros((4, 3), np.int32)
    neighbours_above(c, 3, out=(counted, scaled), E2C=table, backend=backend)   # 4 edges
    want = np.where(table[:, :, None] >= 0, c[table] > 0.5, False).sum(axis=1)
    np.testing.assert_array_equal(counted, want)
    np.testing.assert_array_equal(scaled, want * 6 + 3)
    got = above(with_dims(x, Edge, K), backend=backend)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (x > 0.5).astype(np.int32))


@field_operator
def zero_on_top(k: Field[[K], int32], n: int32, x: Field[[Cell, K], np.float32]
                ) -> Field[[Cell, K], np.float32]:
    # the Python numbers of concat_where's pieces take their partner's type
    doubled = concat_where(K == 0, 0, k) * n
    return concat_where(K >= 3, 0.5, x) * astype(doubled, np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_numbers_in_concat_where_pieces_adapt_to_the_other_piece(backend):
    k = np.arange(6, dtype=np.int32)
    x = RNG.random((3, 6)).astype(np.float32)
    got = zero_on_top(k, 2, with_dims(x, Cell, K), backend=backend)
    assert got.dtype == np.float32
    want = np.where(k >= 3, np.float32(0.5), x) * np.where(k == 0, 0, 2 * k).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@field_operator
def even_levels_and_twice(k: Field[[K], int32], x: Field[[Cell, K], float]
                          ) -> tuple[Field[[Cell, K], float], Field[[K], int32]]:
    return where(k % 2 == 0, x, 0.0), k * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_writes_a_tuple_of_parts_over_other_dimensions(backend):
    """``out=(cell_k, k_only)`` of a value whose parts have different
    dimensions: each array takes its part (the first part's dimensions in its
    annotation's order), with and without a tuple of domains."""
    k = np.arange(6, dtype=np.int32)
    x = RNG.random((3, 6))
    for domain in (None, ({Cell: (1, 3), K: (0, 6)}, {K: (2, 5)})):
        a, b = np.zeros((3, 6)), np.full(6, -1, np.int32)
        if domain is None:
            even_levels_and_twice(k, x, out=(a, b), backend=backend)
            cells, levels = slice(0, 3), slice(0, 6)
        else:
            even_levels_and_twice(k, x, out=(a, b), domain=domain, backend=backend)
            cells, levels = slice(1, 3), slice(2, 5)
        want_a = np.zeros((3, 6))
        want_a[cells] = np.where(k % 2 == 0, x, 0.0)[cells]
        want_b = np.full(6, -1, np.int32)
        want_b[levels] = 2 * k[levels]
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(b, want_b)


def test_with_compilation_options_as_icon4py_sets_programs_up():
    """icon4py's set-up of a program: ``with_backend(...)``, then
    ``with_compilation_options(enable_jit=False)``, ``compile(name=[values],
    offset_provider=...)``, and calls of the program through a
    ``functools.partial`` binding the constant arguments.  The options are
    accepted without effect; a name that is no GT4Py option is refused."""
    import functools

    @field_operator
    def shifted(w: Field[[CellDim, KDim], float]) -> Field[[CellDim, KDim], float]:
        return w(Koff[1]) - w

    @program
    def differences(w: Field[[CellDim, KDim], float], o: Field[[CellDim, KDim], float],
                    vertical_start: int32, vertical_end: int32):
        shifted(w, out=o, domain={CellDim: (0, 3), KDim: (vertical_start, vertical_end)})

    prog = differences.with_backend("compiled").with_compilation_options(enable_jit=False)
    prog.compile(vertical_start=[0], vertical_end=[4], offset_provider={"Koff": KDim})
    run = functools.partial(prog, vertical_start=0, vertical_end=4,
                            offset_provider={"Koff": KDim})
    w, o = RNG.random((3, 5)), np.zeros((3, 4))            # w on half levels
    run(w=w, o=o)
    np.testing.assert_allclose(o, w[:, 1:] - w[:, :-1], rtol=1e-15)
    with pytest.raises(FrontendError, match="enable_jti"):
        differences.with_compilation_options(enable_jti=False)


# ------------------------------------------------------------------ numbers given to scans
#
# icon4py passes numbers to scan operators whose operands are annotated with
# scalar types (``nlev: gtx.int32``): in GT4Py the number takes that type, so
# ``nlev - 1 - count`` with an ``int32`` carry is ``int32`` arithmetic.


@scan_operator(axis=K, forward=False, init=(0.0, int32(0)))
def damp_below(state: tuple[float, int32], w: float, nlev: int32, top: int32,
               factor: float) -> tuple[float, int32]:
    _, count = state
    k_index = nlev - 1 - count
    return (factor * w if k_index < top else w), count + 1


@field_operator
def damped_with_literals(w: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return damp_below(w, 6, 2, 0.5)[0]


def _damped(w, top, factor):
    out = np.array(w)
    out[:, :top] *= factor
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_operands_given_as_numbers_take_their_annotated_types(backend):
    w = RNG.random((3, 6))
    out = np.zeros((3, 6))
    damped_with_literals(w, out=out, backend=backend)
    np.testing.assert_allclose(out, _damped(w, 2, 0.5))


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_called_directly_with_numbers_for_annotated_operands(backend):
    w = RNG.random((3, 6))
    out = (np.zeros((3, 6)), np.zeros((3, 6), np.int32))
    damp_below(with_dims(w, Cell, K), 6, 3, 0.25, out=out, backend=backend)
    np.testing.assert_allclose(out[0], _damped(w, 3, 0.25))
    np.testing.assert_array_equal(out[1], np.tile(np.arange(6, 0, -1, dtype=np.int32), (3, 1)))


# ------------------------------------------------------------------ out= with its dimensions
#
# GT4Py's out= is a field with its dimensions; with_dims(o, Cell, K) is that
# here, beside with_dims on the inputs of a scan called directly.


@field_operator
def twice_over(x: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return 2.0 * x


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_given_with_its_dimensions(backend):
    w = RNG.random((3, 6))
    out = np.zeros((3, 6))
    twice_over(w, out=with_dims(out, Cell, K), domain={K: (1, 6)}, backend=backend)
    np.testing.assert_allclose(out[:, 1:], 2.0 * w[:, 1:])
    assert (out[:, 0] == 0).all()
    out = (np.zeros((3, 6)), np.zeros((3, 6), np.int32))
    damp_below(with_dims(w, Cell, K), 6, 3, 0.25,
               out=(with_dims(out[0], Cell, K), with_dims(out[1], Cell, K)), backend=backend)
    np.testing.assert_allclose(out[0], _damped(w, 3, 0.25))


def test_out_with_other_dimensions_is_refused():
    w, out = RNG.random((3, 6)), np.zeros((3, 6))
    with pytest.raises(ArgumentError, match=r"out= is with_dims over \(K, Cell\) but the value "
                                            r"written there is over \(Cell, K\)"):
        twice_over(w, out=with_dims(out, K, Cell), backend="interpreter")
    with pytest.raises(ArgumentError, match=r"out=\[1\] is with_dims over \(K, Cell\)"):
        damp_below(with_dims(w, Cell, K), 6, 3, 0.25,
                   out=(out, with_dims(np.zeros((3, 6), np.int32), K, Cell)),
                   backend="interpreter")
    assert (out == 0).all()


@field_operator
def _chosen_with_a_temporary(a: Field[[Cell, K], float], on: bool) -> Field[[Cell, K], float]:
    s = a
    if not on:
        t = a + 1.0            # a name of this branch only, not read afterwards
        s = t * t
    return s * 12345.0 + s


@program
def chosen_with_a_temporary(a: Field[[Cell, K], float], out: Field[[Cell, K], float], on: bool):
    _chosen_with_a_temporary(a, on, out=out)


@pytest.mark.parametrize("on", [True, False])
def test_an_if_statement_with_a_temporary_of_its_own_translates_the_rest_once(on):
    from tensorir_dace import ir
    marks = [n for n in ir.walk(chosen_with_a_temporary.ir)
             if isinstance(n, ir.Literal) and n.value == 12345.0]
    assert len(marks) == 1              # not once per branch
    a = RNG.random((4, 3))
    s = a if on else (a + 1.0) ** 2
    for backend in ("interpreter", "compiled"):
        out = np.zeros((4, 3))
        chosen_with_a_temporary(a, out, on, backend=backend)
        np.testing.assert_allclose(out, s * 12345.0 + s, rtol=1e-13)


@scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def _clipped_sums(state: tuple[float, float], x: float, lo: float):
    total, clipped = state
    if x < lo:
        clipped = clipped + 1.0
        y = lo
    else:
        y = x
    if total > 2.0:
        total = 0.0
    return total * 12345.0 + y, clipped


@field_operator
def _clipped(x: Field[[Cell, K], float], lo: float) -> Field[[Cell, K], float]:
    total, clipped = _clipped_sums(x, lo)
    return total + clipped


@program
def clipped(x: Field[[Cell, K], float], lo: float, out: Field[[Cell, K], float]):
    _clipped(x, lo, out=out)


def test_if_statements_in_a_scan_body_translate_the_rest_once():
    """In a scan (or reduce) body too, an if statement that only assigns chooses its
    values once instead of translating the rest of the body on each side: two
    in a row gave four copies of the rest (ICON's graupel scan has dozens)."""
    from tensorir_dace import ir
    marks = [n for n in ir.walk(clipped.ir) if isinstance(n, ir.Literal) and n.value == 12345.0]
    assert len(marks) == 1              # not once per path through the ifs
    x = RNG.uniform(-1.0, 2.0, (3, 5))
    want = np.zeros((3, 5))
    for c in range(3):
        total = clipped_n = 0.0
        for k in range(5):
            y = 0.25 if x[c, k] < 0.25 else x[c, k]
            clipped_n += x[c, k] < 0.25
            total = 0.0 if total > 2.0 else total
            total = total * 12345.0 + y
            want[c, k] = total + clipped_n
    for backend in BACKENDS:
        out = np.zeros((3, 5))
        clipped(x, 0.25, out, backend=backend)
        np.testing.assert_allclose(out, want, rtol=1e-13)


@field_operator
def _inner_choice(a: Field[[Cell, K], float], on: bool, opt: int32) -> Field[[Cell, K], float]:
    if on:
        if opt == 1:
            t = a * 2.0        # bound on this side of the inner if only
            c = t + 1.0
        else:
            c = a
    else:
        t = a + 3.0
        c = t * t
    return c


def test_a_name_an_inner_if_binds_on_one_side_only_is_not_read_after_the_outer_if():
    """GT4Py takes ``t`` as a temporary of the branches (it is not read after
    the outer if): the outer if binds ``c`` alone."""
    a = RNG.random((4, 3))
    for on, opt, want in ((True, 1, 2.0 * a + 1.0), (True, 0, a), (False, 1, (a + 3.0) ** 2)):
        for backend in BACKENDS:
            out = np.zeros((4, 3))
            _inner_choice(a, on, opt, out=out, backend=backend)
            np.testing.assert_allclose(out, want, rtol=1e-13)


class LevelCount(NamedTuple):
    count: int32
    total: float


@scan_operator(axis=K, forward=True, init=LevelCount(count=0, total=0.0))
def _count_levels(state: LevelCount, x: float) -> LevelCount:
    on_even = state.count % 2 == 0
    return LevelCount(count=state.count + 1, total=state.total + (x if on_even else 0.0))


@field_operator
def _count_and_sum(x: Field[[Cell, K], float]) -> tuple[Field[[Cell, K], int32],
                                                        Field[[Cell, K], float]]:
    s = _count_levels(x)
    return s.count, s.total


def test_a_namedtuple_scan_state_keeps_the_types_its_class_declares():
    """As in GT4Py, the carry's class gives its types: ``count: int32`` stays an
    ``int32`` beside float operands (its init ``0`` adapts to it), so the counter
    is written into an ``int32`` array."""
    x = RNG.random((3, 5))
    want_total = np.cumsum(np.where(np.arange(5) % 2 == 0, x, 0.0), axis=1)
    for backend in BACKENDS:
        count, total = np.zeros((3, 5), np.int32), np.zeros((3, 5))
        _count_and_sum(x, out=(count, total), backend=backend)
        np.testing.assert_array_equal(count, np.broadcast_to(np.arange(1, 6), (3, 5)))
        np.testing.assert_allclose(total, want_total, rtol=1e-13)


# This module has ``from __future__ import annotations``: the annotations below
# are strings, which the scan's state still takes its type (and class) from.
@scan_operator(axis=K, forward=True, init=0)
def _count_above(state: int32, x: float) -> int32:
    return state + 1 if x > 0.5 else state


@scan_operator(axis=K, forward=True, init=(0, 0.0))
def _count_levels_by_annotation(state: LevelCount, x: float) -> LevelCount:
    return LevelCount(count=state.count + 1, total=state.total + x)


@field_operator
def _counts(x: Field[[Cell, K], float]) -> tuple[Field[[Cell, K], int32],
                                                 Field[[Cell, K], int32],
                                                 Field[[Cell, K], float]]:
    s = _count_levels_by_annotation(x)
    return _count_above(x), s.count, s.total


def test_a_scan_state_annotated_by_a_string_keeps_its_type_and_class():
    """``state: int32`` with ``init=0`` beside float operands is an ``int32``
    counter, and ``state: LevelCount`` with a plain tuple init is seen as the
    NamedTuple (``state.count``), with string annotations as with evaluated ones."""
    x = RNG.random((3, 5))
    for backend in BACKENDS:
        above, count, total = np.zeros((3, 5), np.int32), np.zeros((3, 5), np.int32), \
            np.zeros((3, 5))
        _counts(x, out=(above, count, total), backend=backend)
        np.testing.assert_array_equal(above, np.cumsum(x > 0.5, axis=1))
        np.testing.assert_array_equal(count, np.broadcast_to(np.arange(1, 6), (3, 5)))
        np.testing.assert_allclose(total, np.cumsum(x, axis=1), rtol=1e-13)


# ------------------------------------------------------------------ tuples of several dimensions


class Weights(NamedTuple):
    """A cell field beside one over ``[Cell, C2C]`` and a scalar, as icon4py's
    ``CellNeighbourWeights`` (its coefficient tuples mix dimensions and scalars)."""
    center: Field[[Cell], float]
    neighbours: Field[[Cell, C2CDim], float]
    scale: float


@field_operator
def _weighted(psi: Field[[Cell, K], float], w: Weights) -> Field[[Cell, K], float]:
    # w is read three times: it is not made one tuple value of one shape
    return w.scale * (w.center * psi + neighbor_sum(w.neighbours * psi(C2C), axis=C2CDim))


@field_operator
def _weighted_of_parts(psi: Field[[Cell, K], float], center: Field[[Cell], float],
                       neighbours: Field[[Cell, C2CDim], float]) -> Field[[Cell, K], float]:
    return _weighted(psi, Weights(center, neighbours, 2.0))


def _weighted_numpy(psi, center, neighbours, c2c, scale):
    return scale * (center[:, None] * psi + np.einsum("cn,cnk->ck", neighbours, psi[c2c]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namedtuple_over_different_dimensions_as_direct_call_argument(backend):
    """A direct call takes a NamedTuple of a cell field, a ``[Cell, C2C]`` field
    and a scalar (a tuple tensor holds elements of one shape: such an argument
    is passed element by element)."""
    n, nk = 5, 4
    c2c = np.array([RNG.choice([x for x in range(n) if x != c], 3, replace=False)
                    for c in range(n)])
    psi, center, neighbours = RNG.random((n, nk)), RNG.random(n), RNG.random((n, 3))
    out = np.full((n, nk), np.nan)
    _weighted(psi, Weights(center, neighbours, 0.5), out=out, offset_provider={"C2C": c2c},
              backend=backend)
    np.testing.assert_allclose(out, _weighted_numpy(psi, center, neighbours, c2c, 0.5),
                               rtol=1e-14)
    with pytest.raises(ArgumentError, match="'w' takes a tuple of 3"):
        _weighted(psi, (center, neighbours), out=out, offset_provider={"C2C": c2c},
                  backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namedtuple_over_different_dimensions_built_for_a_call(backend):
    """A NamedTuple built of fields over different dimensions and passed to an
    operator that reads it more than once stays a tuple of its elements."""
    n, nk = 5, 4
    c2c = np.array([RNG.choice([x for x in range(n) if x != c], 3, replace=False)
                    for c in range(n)])
    psi, center, neighbours = RNG.random((n, nk)), RNG.random(n), RNG.random((n, 3))
    out = np.full((n, nk), np.nan)
    _weighted_of_parts(psi, center, neighbours, out=out, offset_provider={"C2C": c2c},
                       backend=backend)
    np.testing.assert_allclose(out, _weighted_numpy(psi, center, neighbours, c2c, 2.0),
                               rtol=1e-14)


@field_operator
def _edge_and_half_level_parts(vn: Field[[Edge, K], float], w: Field[[Cell, K], float],
                               scale: float) -> tuple[Field[[Edge, K], float],
                                                      Field[[Cell, K], float]]:
    return scale * vn, w + 1.0


class EdgeAndCell(NamedTuple):
    e: Field[[Edge, K], float]
    c: Field[[Cell], float]


@field_operator
def _named_parts(vn: Field[[Edge, K], float], area: Field[[Cell], float]) -> EdgeAndCell:
    return EdgeAndCell(e=vn * 2.0, c=area * 3.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_returns_each_part_of_a_tuple_over_its_own_domain(backend):
    """Without ``out=``, a tuple of an edge field and a cell field on one more
    level (half levels) comes back as GT4Py gives it: each part over its own
    dimensions and levels, not both over the union of their dimensions."""
    vn, w = RNG.random((6, 4)), RNG.random((5, 5))
    a, b = _edge_and_half_level_parts(vn, w, 0.5, backend=backend)
    assert a.shape == (6, 4) and b.shape == (5, 5)
    np.testing.assert_allclose(a, 0.5 * vn, rtol=1e-15)
    np.testing.assert_allclose(b, w + 1.0, rtol=1e-15)
    area = RNG.random(5)
    named = _named_parts(vn, area, backend=backend)
    assert isinstance(named, EdgeAndCell) and named.c.shape == (5,)
    np.testing.assert_allclose(named.e, vn * 2.0, rtol=1e-15)
    np.testing.assert_allclose(named.c, area * 3.0, rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_direct_call_returns_the_namedtuple_its_annotation_names(backend):
    """Without ``out=``, a result annotated with a NamedTuple class comes back
    as one (``m.a`` of ``m = op(…)``, as GT4Py returns it), nested in a tuple too."""
    te, v, c = (RNG.random((4, 3)) for _ in range(3))
    q, t = _updated(te, QPair(v, c), True, backend=backend)
    assert isinstance(q, QPair)
    np.testing.assert_allclose(q.v, (v + 1.0) + (v * 2.0) + te, rtol=1e-15)
    np.testing.assert_allclose(q.c, c * te, rtol=1e-15)
    np.testing.assert_allclose(t, te + 1.0, rtol=1e-15)


class EdgeAndCellParts(NamedTuple):
    e: Field[[Edge, K], float]
    c: Field[[Cell], float]


@field_operator
def _parts_from(vn: Field[[Edge, K], float], w: Weights) -> EdgeAndCellParts:
    return EdgeAndCellParts(e=w.scale * vn, c=w.center + neighbor_sum(w.neighbours, axis=C2CDim))


@program
def parts_whole(vn: Field[[Edge, K], float], w: Weights, out: EdgeAndCellParts):
    _parts_from(vn, w, out=out)


@program
def parts_run(vn: Field[[Edge, K], float], w: Weights, out: EdgeAndCellParts, hs: int32):
    _parts_from(vn, w, out=out, domain=({Edge: (hs, 6), K: (0, 4)}, {Cell: (hs, 5)}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_takes_and_writes_namedtuples_over_different_dimensions(backend):
    """A program parameter annotated with a NamedTuple of fields over different
    dimensions (and a scalar) is read by attribute and written by ``out=``,
    on the whole fields and on a tuple of domains."""
    vn, center, neighbours = RNG.random((6, 4)), RNG.random(5), RNG.random((5, 3))
    want_e, want_c = 0.5 * vn, center + neighbours.sum(axis=1)
    out = EdgeAndCellParts(np.zeros((6, 4)), np.zeros(5))
    parts_whole(vn, Weights(center, neighbours, 0.5), out, backend=backend)
    np.testing.assert_allclose(out.e, want_e, rtol=1e-15)
    np.testing.assert_allclose(out.c, want_c, rtol=1e-15)
    out = EdgeAndCellParts(np.zeros((6, 4)), np.zeros(5))
    parts_run(vn, Weights(center, neighbours, 0.5), out, 2, backend=backend)
    np.testing.assert_allclose(out.e, np.where(np.arange(6)[:, None] >= 2, want_e, 0.0),
                               rtol=1e-15)
    np.testing.assert_allclose(out.c, np.where(np.arange(5) >= 2, want_c, 0.0), rtol=1e-15)
    with pytest.raises(ArgumentError, match="'out' takes a tuple of 2"):
        parts_run(vn, Weights(center, neighbours, 0.5), out.e, 2, backend=backend)


@field_operator
def _reads_a_namedtuple_unpacked_from_a_call(te: Field[[Cell, K], float], q: QPair
                                             ) -> Field[[Cell, K], float]:
    q2, t2 = _updated(te * 2.0, QPair(v=q.v + 1.0, c=q.c), True)
    return q2.v + q2.c * t2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namedtuple_unpacked_from_a_call_with_compound_arguments(backend):
    """A call whose arguments are computed (and used more than once in the
    callee) still returns the NamedTuple its annotation ``tuple[QPair, Field]``
    names inside the tuple: ``q2.v`` of ``q2, t2 = _updated(te * 2.0, …)``, as
    muphys reads the species its graupel scheme returns."""
    te, v, c = (RNG.random((5, 3)) for _ in range(3))
    out = np.zeros((5, 3))
    _reads_a_namedtuple_unpacked_from_a_call(te, QPair(v, c), out=out, backend=backend)
    t, w = 2.0 * te, v + 1.0
    np.testing.assert_allclose(out, (w + 1.0) + (w * 2.0) + t + (c * t) * (t + 1.0),
                               rtol=1e-14)


@field_operator
def _reads_a_namedtuple_in_a_tuple_named_once_used_twice(te: Field[[Cell, K], float],
                                                         q: QPair) -> Field[[Cell, K], float]:
    r = _updated(te, q, True)
    return r[0].v * r[1] + r[0].c


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namedtuple_inside_a_tuple_bound_to_a_name_used_twice(backend):
    """A tuple holding a NamedTuple, bound to a name read more than once (a let
    in the Tensor IR), is still read by attribute: ``r[0].v`` of ``r = f(…)``."""
    te, v, c = (RNG.random((5, 3)) for _ in range(3))
    out = np.zeros((5, 3))
    _reads_a_namedtuple_in_a_tuple_named_once_used_twice(te, QPair(v, c), out=out,
                                                         backend=backend)
    np.testing.assert_allclose(out, ((v + 1.0) + (v * 2.0) + te) * (te + 1.0) + c * te,
                               rtol=1e-14)
