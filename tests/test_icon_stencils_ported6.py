"""A sixth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

Fields on half levels (``KHalfDim``, a vertical dimension of ``nlev + 1``
levels, with ``KHalfOff`` and ``dims.KHalfDim ± n`` shifts): the metrics'
``_compute_wgtfac_c`` assembled by ``with_boundaries_on_half_levels_on_cells``
(``concat_where`` on ``KHalfDim == 0``, ``== nlev`` and the interior, each
branch shifted by up to two levels), the Smagorinsky viscosity's ``km_ic`` and
``kh_ic`` at half levels (a tuple of two outputs with a tuple of domains), and
``_init_constant_cell_khalf_field`` (``broadcast`` over ``CellDim, KHalfDim``),
all in one program of several field operators over a domain on ``KHalfDim``.
Then the tridiagonal solvers on half levels (scan operators along
``KHalfDim``, forward with a tuple state and backward; the mixed-precision
pair carrying ``q`` in vpfloat and ``d'`` in wpfloat against a return
annotation of two wpfloats) behind the implicit vertical diffusion on cell half
levels, the system spanning the call's vertical domain; and the forward sweep
called directly with a tuple of domains (its scan over the union of both).
Then the vertical metrics on ``KField``s: the 3D divergence damping's scaling
factor and the Rayleigh damping of w (GT4Py ``if``/``elif`` on an ``int32``
parameter compared with class constants, ``sin``/``tanh``, ``** 2``,
``maximum`` of a literal and a field, ``broadcast`` over ``KDim`` alone),
and ``_compute_ddqz_z_half``'s three ``concat_where`` regions on ``nlev``.
Then the horizontal metrics: masks and nudging coefficients from ``int32``
refinement-control fields (one written in place from itself, ``astype`` of
``int32`` fields and scalars), the pressure gradient's downward extrapolation mask and distance
(``int32`` index fields broadcast to ``EdgeDim, KDim``, ``where`` choosing a
tuple of index fields or ``(0, 0)``, a ``bool`` output, ``concat_where`` on a
runtime ``EdgeDim`` range written yoda-style), the Exner extrapolation factor
(``concat_where(CellDim >= level)`` and ``maximum``/``minimum``/``abs`` over
``C2E``) and the neighbours' maximum height over ``C2E2C``.  Last, the scan
marking the flat levels (an ``int32`` counter and a ``bool`` flag as state
from ``init=(0, False)``, nested ``if`` statements on runtime scalars) after
a field operator filling its shifted input in the same program; and an edge
field interpolated to half levels with quadratically extrapolated top and
surface levels (nested ``concat_where`` on ``KDim == 0`` and ``== nlev``, the
interpolant on ``nlev`` levels, the result on ``nlev + 1``).
Each group is one program, interpreted and compiled once, compared with
hand-written NumPy.
"""

from __future__ import annotations

import types
from typing import TypeVar

import numpy as np
import pytest

from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    abs,
    astype,
    broadcast,
    concat_where,
    exp,
    float32,
    float64,
    int32,
    maximum,
    minimum,
    neighbor_sum,
    sin,
    tanh,
    where,
    with_dims,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.KDim, dims.KHalfDim = CellDim, KDim, KHalfDim
dims.EdgeDim, dims.E2CDim, dims.C2EDim, dims.C2E2CDim = EdgeDim, E2CDim, C2EDim, C2E2CDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
dims.Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
dims.KHalfOff = FieldOffset("KHalfOff", source=KHalfDim, target=(KHalfDim,))
KHalfOff = dims.KHalfOff

fa = types.ModuleType("icon_field_aliases")
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.CellField = Field[Dims[CellDim], T]
fa.KField = Field[Dims[KDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NLEV = 7, 6
RNG = np.random.default_rng(2701)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2702).bit_generator.state


def check(got, expected, rtol, atol=0.0):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


# ================================================================== half levels
#
# The vertical operations on half levels (icon4py's math.vertical_operations),
# with KHalfDim in place of KDim.


@gtx.field_operator
def with_boundaries_on_half_levels_on_cells(
    top: fa.CellKHalfField[wpfloat],
    interior: fa.CellKHalfField[wpfloat],
    bottom: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    result = concat_where(
        (dims.KHalfDim > 0) & (dims.KHalfDim < nlev),
        interior,
        0.0,
    )
    result = concat_where(dims.KHalfDim == 0, top, result)
    return concat_where(dims.KHalfDim == nlev, bottom, result)


@gtx.field_operator
def _compute_wgtfac_c(
    z_ifc: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    return with_boundaries_on_half_levels_on_cells(
        top=(z_ifc(dims.KHalfDim + 1) - z_ifc) / (z_ifc(dims.KHalfDim + 2) - z_ifc),
        interior=(z_ifc(dims.KHalfDim - 1) - z_ifc)
        / (z_ifc(dims.KHalfDim - 1) - z_ifc(dims.KHalfDim + 1)),
        bottom=(z_ifc(dims.KHalfDim - 1) - z_ifc) / (z_ifc(dims.KHalfDim - 2) - z_ifc),
        nlev=nlev,
    )


@gtx.field_operator
def _smagorinsky_viscosity_at_half_levels(
    rho_ic: fa.CellKHalfField[wpfloat],
    mixing_length_sq: fa.CellKHalfField[wpfloat],
    stability_term: fa.CellKHalfField[wpfloat],
    rturb_prandtl: wpfloat,
    nlev: gtx.int32,
) -> tuple[fa.CellKHalfField[wpfloat], fa.CellKHalfField[wpfloat]]:
    km = rho_ic * mixing_length_sq * stability_term
    km_ic = with_boundaries_on_half_levels_on_cells(
        top=km(KHalfOff[1]), interior=km, bottom=km(KHalfOff[-1]), nlev=nlev
    )
    kh_ic = km_ic * rturb_prandtl
    return km_ic, kh_ic


@gtx.field_operator
def _init_constant_cell_khalf_field(value: ta.wpfloat) -> fa.CellKHalfField[ta.wpfloat]:
    return broadcast(value, (dims.CellDim, dims.KHalfDim))


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def half_level_metrics(
    z_ifc: fa.CellKHalfField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    mixing_length_sq: fa.CellKHalfField[wpfloat],
    stability_term: fa.CellKHalfField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    km_ic: fa.CellKHalfField[wpfloat],
    kh_ic: fa.CellKHalfField[wpfloat],
    tke: fa.CellKHalfField[wpfloat],
    rturb_prandtl: wpfloat,
    tke_min: wpfloat,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_wgtfac_c(
        z_ifc=z_ifc,
        nlev=nlev,
        out=wgtfac_c,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _smagorinsky_viscosity_at_half_levels(
        rho_ic, mixing_length_sq, stability_term, rturb_prandtl, nlev,
        out=(km_ic, kh_ic),
        domain=(
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KHalfDim: (vertical_start, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KHalfDim: (0, vertical_end)},
        ),
    )
    _init_constant_cell_khalf_field(
        value=tke_min,
        out=tke,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


def with_boundaries(top, interior, bottom, nlev):
    """``top`` on half level 0, ``bottom`` on ``nlev``, ``interior`` between (all
    given on every half level; NaN where a shift leaves the column)."""
    out = np.array(interior)
    out[:, 0] = top[:, 0]
    out[:, nlev] = bottom[:, nlev]
    return out


def shifted(x, n):
    """``x(KHalfOff[n])``: level k takes level k + n (NaN outside the column)."""
    out = np.full(x.shape, np.nan)
    lo, hi = max(0, -n), min(x.shape[1], x.shape[1] - n)
    out[:, lo:hi] = x[:, lo + n:hi + n]
    return out


def inside(value, base, hs, he, vs, ve):
    out = np.array(base)
    out[hs:he, vs:ve] = value[hs:he, vs:ve]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(0, NLEV + 1), (1, NLEV)])
def test_half_level_metrics(backend, levels):
    vs, ve = levels
    hs, he = 1, NC - 1
    nhalf = NLEV + 1
    # heights of the interfaces, falling from the top with random spacings
    z_ifc = np.cumsum(RNG.uniform(100.0, 500.0, (NC, nhalf))[:, ::-1], axis=1)[:, ::-1]
    rho_ic, mix, stab = (RNG.uniform(0.5, 1.5, (NC, nhalf)) for _ in range(3))
    base = {name: RNG.random((NC, nhalf)) for name in ("wgtfac_c", "km_ic", "kh_ic", "tke")}
    got = {name: v.copy() for name, v in base.items()}
    half_level_metrics(z_ifc, rho_ic, mix, stab, got["wgtfac_c"], got["km_ic"], got["kh_ic"],
                       got["tke"], 0.33, 1.0e-4, NLEV, hs, he, vs, ve,
                       offset_provider={"KHalfOff": KHalfDim}, backend=backend)

    def z(n):
        return shifted(z_ifc, n)
    with np.errstate(invalid="ignore"):
        wgtfac = with_boundaries(top=(z(1) - z_ifc) / (z(2) - z_ifc),
                                 interior=(z(-1) - z_ifc) / (z(-1) - z(1)),
                                 bottom=(z(-1) - z_ifc) / (z(-2) - z_ifc), nlev=NLEV)
    km = rho_ic * mix * stab
    km_ic = with_boundaries(shifted(km, 1), km, shifted(km, -1), NLEV)
    check(got, dict(
        wgtfac_c=inside(wgtfac, base["wgtfac_c"], hs, he, vs, ve),
        km_ic=inside(km_ic, base["km_ic"], hs, he, vs, ve),
        kh_ic=inside(0.33 * km_ic, base["kh_ic"], hs, he, 0, ve),
        tke=inside(np.full((NC, nhalf), 1.0e-4), base["tke"], hs, he, vs, ve)), rtol=1e-12)


# ================================================================== tridiagonal solvers
#
# icon4py's math.tridiagonal solvers on half levels and the implicit vertical
# diffusion built on them.


@gtx.scan_operator(axis=dims.KHalfDim, forward=True, init=(wpfloat("0.0"), wpfloat("0.0")))
def _solve_tridiagonal_matrix_forward_sweep_on_half_levels_wp(
    state_kminus1: tuple[wpfloat, wpfloat],
    a: wpfloat,
    b: wpfloat,
    c: wpfloat,
    d: wpfloat,
) -> tuple[wpfloat, wpfloat]:
    q_kminus1, d_prime_kminus1 = state_kminus1
    normalization = wpfloat("1.0") / (b + a * q_kminus1)
    return (wpfloat("0.0") - c) * normalization, (d - a * d_prime_kminus1) * normalization


@gtx.scan_operator(axis=dims.KHalfDim, forward=False, init=wpfloat("0.0"))
def _solve_tridiagonal_matrix_back_substitution_on_half_levels_wp(
    x_kplus1: wpfloat,
    q: wpfloat,
    d_prime: wpfloat,
) -> wpfloat:
    return d_prime + x_kplus1 * q


@gtx.scan_operator(
    axis=dims.KHalfDim,
    forward=True,
    init=(
        vpfloat("0.0"),
        0.0,
    ),
)
def _solve_tridiagonal_matrix_forward_sweep_on_half_levels_mixed_precision(
    state_kminus1: tuple[vpfloat, float],
    a: vpfloat,
    b: vpfloat,
    c: vpfloat,
    d: wpfloat,
) -> tuple[wpfloat, wpfloat]:
    q_kminus1 = astype(state_kminus1[0], vpfloat)
    d_prime_kminus1 = state_kminus1[1]
    normalization = vpfloat("1.0") / (b + a * q_kminus1)
    q = (vpfloat("0.0") - c) * normalization
    d_prime = (d - astype(a, wpfloat) * d_prime_kminus1) * astype(normalization, wpfloat)
    return q, d_prime


@gtx.scan_operator(axis=dims.KHalfDim, forward=False, init=wpfloat("0.0"))
def _solve_tridiagonal_matrix_back_substitution_on_half_levels_mixed_precision(
    x_kplus1: wpfloat,
    q: vpfloat,
    d_prime: wpfloat,
) -> wpfloat:
    return d_prime + x_kplus1 * astype(q, wpfloat)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _solve_implicit_vertical_diffusion_on_cell_half_levels(
    var: fa.CellKHalfField[wpfloat],
    a: fa.CellKHalfField[wpfloat],
    b: fa.CellKHalfField[wpfloat],
    c: fa.CellKHalfField[wpfloat],
    rhs: fa.CellKHalfField[wpfloat],
    tend: fa.CellKHalfField[wpfloat],
    dtime: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    inv_dtime = wpfloat("1.0") / dtime
    q, d_prime = _solve_tridiagonal_matrix_forward_sweep_on_half_levels_wp(
        a, inv_dtime + b, c, var * inv_dtime + rhs
    )
    return (
        tend
        + (_solve_tridiagonal_matrix_back_substitution_on_half_levels_wp(q, d_prime) - var)
        * inv_dtime
    )


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _solve_on_half_levels_mixed_precision(
    a: fa.CellKHalfField[vpfloat],
    b: fa.CellKHalfField[vpfloat],
    c: fa.CellKHalfField[vpfloat],
    d: fa.CellKHalfField[wpfloat],
) -> fa.CellKHalfField[wpfloat]:
    q, d_prime = _solve_tridiagonal_matrix_forward_sweep_on_half_levels_mixed_precision(a, b, c, d)
    return _solve_tridiagonal_matrix_back_substitution_on_half_levels_mixed_precision(q, d_prime)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def half_level_solvers(
    var: fa.CellKHalfField[wpfloat],
    a: fa.CellKHalfField[wpfloat],
    b: fa.CellKHalfField[wpfloat],
    c: fa.CellKHalfField[wpfloat],
    rhs: fa.CellKHalfField[wpfloat],
    tend: fa.CellKHalfField[wpfloat],
    a_vp: fa.CellKHalfField[vpfloat],
    b_vp: fa.CellKHalfField[vpfloat],
    c_vp: fa.CellKHalfField[vpfloat],
    x_mixed: fa.CellKHalfField[wpfloat],
    dtime: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _solve_implicit_vertical_diffusion_on_cell_half_levels(
        var, a, b, c, rhs, tend, dtime,
        out=tend,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _solve_on_half_levels_mixed_precision(
        a_vp, b_vp, c_vp, rhs,
        out=x_mixed,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


def solve_columns(a, b, c, d, vs, ve):
    """Each column's system on levels ``[vs, ve)`` (a on its first row and c on
    its last row take no part); zero elsewhere."""
    x = np.zeros(d.shape)
    n = ve - vs
    for cell in range(d.shape[0]):
        m = np.diag(b[cell, vs:ve]) + np.diag(a[cell, vs + 1:ve], -1) + \
            np.diag(c[cell, vs:ve - 1], 1)
        x[cell, vs:ve] = np.linalg.solve(m, d[cell, vs:ve]) if n else []
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(0, NLEV + 1), (2, NLEV)])
def test_half_level_solvers(backend, levels):
    vs, ve = levels
    hs, he = 1, NC
    shape = (NC, NLEV + 1)
    var, rhs = RNG.random(shape), RNG.random(shape)
    a, c = RNG.uniform(-0.5, 0.5, shape), RNG.uniform(-0.5, 0.5, shape)
    b = RNG.uniform(2.0, 3.0, shape)
    tend0, x0 = RNG.random(shape), RNG.random(shape)
    a_vp, b_vp, c_vp = (x.astype(np.float32) for x in (a, b, c))
    dtime = 0.7
    tend, x_mixed = tend0.copy(), x0.copy()
    half_level_solvers(var, a, b, c, rhs, tend, a_vp, b_vp, c_vp, x_mixed, dtime,
                       hs, he, vs, ve, offset_provider={}, backend=backend)
    x = solve_columns(a, 1 / dtime + b, c, var / dtime + rhs, vs, ve)
    want_tend = inside(tend0 + (x - var) / dtime, tend0, hs, he, vs, ve)
    want_x = inside(solve_columns(a_vp.astype(np.float64), b_vp.astype(np.float64),
                                  c_vp.astype(np.float64), rhs, vs, ve), x0, hs, he, vs, ve)
    check(dict(tend=tend), dict(tend=want_tend), rtol=1e-10)
    check(dict(x_mixed=x_mixed), dict(x_mixed=want_x), rtol=1e-5, atol=1e-6)


def forward_sweep(a, b, c, d, start, stop):
    """The forward sweep's ``q`` and ``d'`` from level ``start`` on (zero before)."""
    q, dp = np.zeros(d.shape), np.zeros(d.shape)
    qk, dk = np.zeros(d.shape[0]), np.zeros(d.shape[0])
    for k in range(start, stop):
        norm = 1.0 / (b[:, k] + a[:, k] * qk)
        qk, dk = -c[:, k] * norm, (d[:, k] - a[:, k] * dk) * norm
        q[:, k], dp[:, k] = qk, dk
    return q, dp


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_sweep_called_with_a_domain_per_output(backend):
    shape = (NC, NLEV + 1)
    a, c, d = RNG.uniform(-0.5, 0.5, shape), RNG.uniform(-0.5, 0.5, shape), RNG.random(shape)
    b = RNG.uniform(2.0, 3.0, shape)
    q, dp = np.zeros(shape), np.zeros(shape)
    fields = (with_dims(x, CellDim, KHalfDim) for x in (a, b, c, d))
    _solve_tridiagonal_matrix_forward_sweep_on_half_levels_wp(
        *fields, out=(q, dp),
        domain=({dims.CellDim: (0, NC), dims.KHalfDim: (3, NLEV)},
                {dims.CellDim: (1, NC), dims.KHalfDim: (1, NLEV + 1)}),
        backend=backend)
    # one scan feeds both outputs: it starts at the union's first level, 1
    wq, wdp = forward_sweep(a, b, c, d, 1, NLEV + 1)
    np.testing.assert_allclose(q, inside(wq, np.zeros(shape), 0, NC, 3, NLEV), rtol=1e-12)
    np.testing.assert_allclose(dp, inside(wdp, np.zeros(shape), 1, NC, 1, NLEV + 1),
                               rtol=1e-12)


# ================================================================== vertical metrics
#
# icon4py's metrics.metric_fields on KDim.


class RayleighType:
    CLASSIC = 1
    KLEMP = 2


rayleigh_damping_options = RayleighType()


@gtx.field_operator
def _compute_scaling_factor_for_3d_divdamp(
    vct_a: fa.KField[wpfloat],
    divdamp_trans_start: wpfloat,
    divdamp_trans_end: wpfloat,
    divdamp_type: gtx.int32,
) -> fa.KField[wpfloat]:
    scaling_factor_for_3d_divdamp = broadcast(1.0, (dims.KDim,))
    if divdamp_type == 32:
        zf = 0.5 * (vct_a + vct_a(dims.Koff[1]))
        scaling_factor_for_3d_divdamp = where(
            zf >= divdamp_trans_end, 0.0, scaling_factor_for_3d_divdamp
        )
        scaling_factor_for_3d_divdamp = where(
            zf >= divdamp_trans_start,
            (divdamp_trans_end - zf) / (divdamp_trans_end - divdamp_trans_start),
            scaling_factor_for_3d_divdamp,
        )
    return scaling_factor_for_3d_divdamp


@gtx.field_operator
def _compute_rayleigh_w(
    vct_a: fa.KField[wpfloat],
    damping_height: wpfloat,
    rayleigh_type: gtx.int32,
    rayleigh_coeff: wpfloat,
    vct_a_1: wpfloat,
    pi_const: wpfloat,
) -> fa.KField[wpfloat]:
    rayleigh_w = broadcast(0.0, (dims.KDim,))
    z_sin_diff = maximum(0.0, vct_a - damping_height)
    z_tanh_diff = vct_a_1 - vct_a
    if rayleigh_type == rayleigh_damping_options.CLASSIC:
        rayleigh_w = (
            rayleigh_coeff
            * (sin(pi_const / 2.0 * z_sin_diff / maximum(0.001, vct_a_1 - damping_height))) ** 2
        )

    elif rayleigh_type == rayleigh_damping_options.KLEMP:
        rayleigh_w = rayleigh_coeff * (
            1.0 - tanh(3.8 * z_tanh_diff / maximum(0.000001, vct_a_1 - damping_height))
        )
    return rayleigh_w


@gtx.field_operator
def _compute_ddqz_z_half(
    z_ifc: fa.CellKField[wpfloat],
    z_mc: fa.CellKField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKField[wpfloat]:
    ddqz_z_half = concat_where((dims.KDim > 0) & (dims.KDim < nlev), 0.0, 2.0 * (z_ifc - z_mc))
    ddqz_z_half = concat_where(
        (0 < dims.KDim) & (dims.KDim < nlev),
        z_mc(dims.Koff[-1]) - z_mc,
        ddqz_z_half,
    )
    ddqz_z_half = concat_where(dims.KDim == nlev, 2.0 * (z_mc(dims.Koff[-1]) - z_ifc),
                               ddqz_z_half)
    return ddqz_z_half


@gtx.program
def vertical_metrics(
    vct_a: fa.KField[wpfloat],
    z_ifc: fa.CellKField[wpfloat],
    z_mc: fa.CellKField[wpfloat],
    scaling_factor_for_3d_divdamp: fa.KField[wpfloat],
    rayleigh_w: fa.KField[wpfloat],
    ddqz_z_half: fa.CellKField[wpfloat],
    divdamp_trans_start: wpfloat,
    divdamp_trans_end: wpfloat,
    divdamp_type: gtx.int32,
    damping_height: wpfloat,
    rayleigh_type: gtx.int32,
    rayleigh_coeff: wpfloat,
    vct_a_1: wpfloat,
    pi_const: wpfloat,
    nlev: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_scaling_factor_for_3d_divdamp(
        vct_a,
        divdamp_trans_start,
        divdamp_trans_end,
        divdamp_type,
        out=scaling_factor_for_3d_divdamp,
        domain={dims.KDim: (vertical_start, vertical_end)},
    )
    _compute_rayleigh_w(
        vct_a,
        damping_height,
        rayleigh_type,
        rayleigh_coeff,
        vct_a_1,
        pi_const,
        out=rayleigh_w,
        domain={dims.KDim: (vertical_start, vertical_end + 1)},
    )
    _compute_ddqz_z_half(
        z_ifc,
        z_mc,
        nlev,
        out=ddqz_z_half,
        domain={dims.CellDim: (0, 5), dims.KDim: (vertical_start, vertical_end + 1)},
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("types_", [(32, 1), (2, 2), (32, 0)])
def test_vertical_metrics(backend, types_):
    divdamp_type, rayleigh_type = types_
    nhalf = NLEV + 1
    # vct_a: heights of the half levels, falling from the model top
    vct_a = np.cumsum(RNG.uniform(500.0, 2000.0, nhalf)[::-1])[::-1].copy()
    z_ifc = np.cumsum(RNG.uniform(100.0, 500.0, (NC, nhalf))[:, ::-1], axis=1)[:, ::-1].copy()
    z_mc = z_ifc - RNG.uniform(10.0, 50.0, (NC, nhalf))
    base_s, base_r, base_d = RNG.random(nhalf), RNG.random(nhalf), RNG.random((NC, nhalf))
    s, r, d = base_s.copy(), base_r.copy(), base_d.copy()
    start, end = float(vct_a[3]), float(vct_a[1])
    damping_height = float(vct_a[3])
    vs, ve = 0, NLEV
    vertical_metrics(vct_a, z_ifc, z_mc, s, r, d, start, end, divdamp_type, damping_height,
                     rayleigh_type, 0.05, float(vct_a[1]), np.pi, NLEV, vs, ve,
                     offset_provider={"Koff": KDim}, backend=backend)
    want_s = np.ones(nhalf)
    if divdamp_type == 32:
        zf = 0.5 * (vct_a[:-1] + vct_a[1:])
        f = np.where(zf >= end, 0.0, 1.0)
        f = np.where(zf >= start, (end - zf) / (end - start), f)
        want_s[:-1] = f
    z_sin = np.maximum(0.0, vct_a - damping_height)
    if rayleigh_type == 1:
        want_r = 0.05 * np.sin(np.pi / 2 * z_sin / max(0.001, vct_a[1] - damping_height)) ** 2
    elif rayleigh_type == 2:
        want_r = 0.05 * (1 - np.tanh(3.8 * (vct_a[1] - vct_a)
                                     / max(1e-6, vct_a[1] - damping_height)))
    else:
        want_r = np.zeros(nhalf)
    want_d = 2.0 * (z_ifc - z_mc)
    want_d[:, 1:NLEV] = z_mc[:, :NLEV - 1] - z_mc[:, 1:NLEV]
    want_d[:, NLEV] = 2.0 * (z_mc[:, NLEV - 1] - z_ifc[:, NLEV])
    ws, wr, wd = base_s.copy(), base_r.copy(), base_d.copy()
    ws[vs:ve] = want_s[vs:ve]
    wr[vs:ve + 1] = want_r[vs:ve + 1]
    wd[0:5, vs:ve + 1] = want_d[0:5, vs:ve + 1]
    check(dict(s=s, r=r, d=d), dict(s=ws, r=wr, d=wd), rtol=1e-12, atol=1e-15)


# ================================================================== horizontal metrics
#
# icon4py's metrics.metric_fields on cells and edges.


@gtx.field_operator
def _compute_mask_prog_halo_c(
    c_refin_ctrl: fa.CellField[gtx.int32], mask_prog_halo_c: fa.CellField[bool]
) -> fa.CellField[bool]:
    mask_prog_halo_c = where((c_refin_ctrl >= 1) & (c_refin_ctrl <= 4), mask_prog_halo_c, True)
    return mask_prog_halo_c


@gtx.field_operator
def _compute_bdy_halo_c(
    c_refin_ctrl: fa.CellField[int32],
) -> fa.CellField[bool]:
    bdy_halo_c = where((c_refin_ctrl >= 1) & (c_refin_ctrl <= 4), True, False)
    return bdy_halo_c


@gtx.field_operator
def _compute_horizontal_mask_for_3d_divdamp(
    e_refin_ctrl: fa.EdgeField[gtx.int32],
    grf_nudge_start_e: gtx.int32,
    grf_nudgezone_width: gtx.int32,
) -> fa.EdgeField[wpfloat]:
    e_refin_ctrl_wp = astype(e_refin_ctrl, wpfloat)
    grf_nudge_start_e_wp = astype(grf_nudge_start_e, wpfloat)
    grf_nudgezone_width_wp = astype(grf_nudgezone_width, wpfloat)
    horizontal_mask_for_3d_divdamp = where(
        (e_refin_ctrl > (grf_nudge_start_e + grf_nudgezone_width - 1)),
        1.0
        / (grf_nudgezone_width_wp - 1.0)
        * (e_refin_ctrl_wp - (grf_nudge_start_e_wp + grf_nudgezone_width_wp - 1.0)),
        0.0,
    )
    horizontal_mask_for_3d_divdamp = where(
        (e_refin_ctrl <= 0)
        | (e_refin_ctrl_wp >= (grf_nudge_start_e_wp + 2.0 * (grf_nudgezone_width_wp - 1.0))),
        1.0,
        horizontal_mask_for_3d_divdamp,
    )
    return horizontal_mask_for_3d_divdamp


@gtx.field_operator
def _compute_nudgecoeffs(
    refin_ctrl: fa.EdgeField[gtx.int32],
    grf_nudge_start_e: gtx.int32,
    nudge_max_coeffs: wpfloat,
    nudge_efold_width: wpfloat,
    nudge_zone_width: gtx.int32,
) -> fa.EdgeField[wpfloat]:
    return where(
        ((refin_ctrl > 0) & (refin_ctrl <= (2 * nudge_zone_width + (grf_nudge_start_e - 3)))),
        nudge_max_coeffs
        * exp((-(astype(refin_ctrl - grf_nudge_start_e, wpfloat))) / (2.0 * nudge_efold_width)),
        0.0,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_mask_bdy_halo_c_and_hmask_dd3d(
    c_refin_ctrl: fa.CellField[int32],
    e_refin_ctrl: fa.EdgeField[gtx.int32],
    mask_prog_halo_c: fa.CellField[bool],
    bdy_halo_c: fa.CellField[bool],
    horizontal_mask_for_3d_divdamp: fa.EdgeField[wpfloat],
    nudging_coefficients_for_edges: fa.EdgeField[wpfloat],
    grf_nudge_start_e: gtx.int32,
    grf_nudgezone_width: gtx.int32,
    nudge_max_coeffs: wpfloat,
    nudge_efold_width: wpfloat,
    horizontal_start: int32,
    horizontal_end: int32,
):
    _compute_mask_prog_halo_c(
        c_refin_ctrl,
        mask_prog_halo_c,
        out=mask_prog_halo_c,
        domain={dims.CellDim: (horizontal_start, horizontal_end)},
    )

    _compute_bdy_halo_c(
        c_refin_ctrl,
        out=bdy_halo_c,
        domain={dims.CellDim: (horizontal_start, horizontal_end)},
    )
    _compute_horizontal_mask_for_3d_divdamp(
        e_refin_ctrl=e_refin_ctrl,
        grf_nudge_start_e=grf_nudge_start_e,
        grf_nudgezone_width=grf_nudgezone_width,
        out=horizontal_mask_for_3d_divdamp,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end + 2)},
    )
    _compute_nudgecoeffs(
        e_refin_ctrl,
        grf_nudge_start_e,
        nudge_max_coeffs,
        nudge_efold_width,
        grf_nudgezone_width,
        out=nudging_coefficients_for_edges,
        domain={dims.EdgeDim: (0, horizontal_end)},
    )


NE = 11


@pytest.mark.parametrize("backend", BACKENDS)
def test_refinement_masks(backend):
    c_refin = RNG.integers(-2, 8, NC).astype(np.int32)
    e_refin = RNG.integers(-3, 16, NE).astype(np.int32)
    mask0, bdy0, h0 = RNG.random(NC) < 0.5, RNG.random(NC) < 0.5, RNG.random(NE)
    n0 = RNG.random(NE)
    mask, bdy, h, nudge = mask0.copy(), bdy0.copy(), h0.copy(), n0.copy()
    hs, he = 1, NC - 1
    compute_mask_bdy_halo_c_and_hmask_dd3d(c_refin, e_refin, mask, bdy, h, nudge, 5, 4, 0.375,
                                           2.0, hs, he, offset_provider={}, backend=backend)
    inner = (c_refin >= 1) & (c_refin <= 4)
    want_mask, want_bdy, want_h = mask0.copy(), bdy0.copy(), h0.copy()
    want_mask[hs:he] = np.where(inner, mask0, True)[hs:he]
    want_bdy[hs:he] = inner[hs:he]
    e = e_refin.astype(np.float64)
    hm = np.where(e_refin > 5 + 4 - 1, 1.0 / 3.0 * (e - 8.0), 0.0)
    hm = np.where((e_refin <= 0) | (e >= 5 + 2.0 * 3.0), 1.0, hm)
    want_h[hs:he + 2] = hm[hs:he + 2]
    nudging = (e_refin > 0) & (e_refin <= 2 * 4 + (5 - 3))
    want_n = n0.copy()
    want_n[:he] = np.where(nudging, 0.375 * np.exp(-(e - 5.0) / (2.0 * 2.0)), 0.0)[:he]
    np.testing.assert_allclose(nudge, want_n, rtol=1e-12)
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(bdy, want_bdy)
    np.testing.assert_allclose(h, want_h, rtol=1e-12)


@gtx.field_operator
def _cell_2_edge_interpolation(
    in_field: fa.CellKField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=dims.E2CDim)


@gtx.field_operator
def _compute_downward_extrapolation_distance(
    z_ifc: fa.CellField[wpfloat],
) -> fa.EdgeField[wpfloat]:
    extrapol_dist = 5.0
    x = maximum(z_ifc(E2C[0]), z_ifc(E2C[1]))
    return x - extrapol_dist


@gtx.field_operator
def _compute_pressure_gradient_downward_extrapolation_mask_distance(
    z_mc: fa.CellKField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    topography: fa.CellField[wpfloat],
    e_owner_mask: fa.EdgeField[bool],
    flat_idx_max: fa.EdgeField[gtx.int32],
    e_lev: fa.EdgeField[gtx.int32],
    k_lev: fa.KField[gtx.int32],
    horizontal_start_distance: int32,
    horizontal_end_distance: int32,
) -> tuple[fa.EdgeKField[bool], fa.EdgeKField[wpfloat]]:
    e_lev = broadcast(e_lev, (dims.EdgeDim, dims.KDim))
    k_lev = broadcast(k_lev, (dims.EdgeDim, dims.KDim))
    z_me = _cell_2_edge_interpolation(in_field=z_mc, coeff=c_lin_e)
    downward_distance = _compute_downward_extrapolation_distance(topography)
    extrapolation_distance = concat_where(
        (horizontal_start_distance <= dims.EdgeDim) & (dims.EdgeDim < horizontal_end_distance),
        downward_distance,
        0.0,
    )
    flatness_condition = (k_lev >= (flat_idx_max + 1)) & (z_me < downward_distance) & e_owner_mask
    pg_edgeidx, pg_vertidx = where(flatness_condition, (e_lev, k_lev), (0, 0))
    pg_edge_mask = (pg_edgeidx > 0) & (pg_vertidx > 0)

    pg_exdist_dsl = where(
        (k_lev >= (flat_idx_max + 1)) & (z_me < extrapolation_distance) & e_owner_mask,
        z_me - extrapolation_distance,
        0.0,
    )

    return pg_edge_mask, pg_exdist_dsl


@gtx.field_operator
def _compute_maxslp_maxhgtd(
    ddxn_z_full: fa.EdgeKField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_maxslp_0_1 = maximum(abs(ddxn_z_full(C2E[0])), abs(ddxn_z_full(C2E[1])))
    maxslp = maximum(z_maxslp_0_1, abs(ddxn_z_full(C2E[2])))

    z_maxhgtd_0_1 = maximum(
        abs(ddxn_z_full(C2E[0]) * dual_edge_length(C2E[0])),
        abs(ddxn_z_full(C2E[1]) * dual_edge_length(C2E[1])),
    )

    maxhgtd = maximum(z_maxhgtd_0_1, abs(ddxn_z_full(C2E[2]) * dual_edge_length(C2E[2])))
    return maxslp, maxhgtd


@gtx.field_operator
def _compute_exner_exfac(
    ddxn_z_full: fa.EdgeKField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    exner_expol: wpfloat,
    lateral_boundary_level_2: gtx.int32,
) -> fa.CellKField[wpfloat]:
    z_maxslp, z_maxhgtd = _compute_maxslp_maxhgtd(ddxn_z_full, dual_edge_length)

    exner_exfac = concat_where(
        dims.CellDim >= lateral_boundary_level_2,
        exner_expol * minimum(1.0 - (4.0 * z_maxslp) ** 2, 1.0 - (0.002 * z_maxhgtd) ** 2),
        exner_expol,
    )
    exner_exfac = maximum(0.0, exner_exfac)
    exner_exfac = where(
        z_maxslp > 1.5, maximum(-1.0 / 6.0, 1.0 / 9.0 * (1.5 - z_maxslp)), exner_exfac
    )

    return exner_exfac


@gtx.field_operator
def _compute_max_nbhgt(
    z_mc_nlev: fa.CellField[wpfloat],
) -> fa.CellField[wpfloat]:
    max_nbhgt_0_1 = maximum(z_mc_nlev(C2E2C[0]), z_mc_nlev(C2E2C[1]))
    max_nbhgt = maximum(max_nbhgt_0_1, z_mc_nlev(C2E2C[2]))
    return max_nbhgt


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def horizontal_metrics(
    z_mc: fa.CellKField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], float],
    topography: fa.CellField[wpfloat],
    e_owner_mask: fa.EdgeField[bool],
    flat_idx_max: fa.EdgeField[gtx.int32],
    e_lev: fa.EdgeField[gtx.int32],
    k_lev: fa.KField[gtx.int32],
    ddxn_z_full: fa.EdgeKField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    z_mc_nlev: fa.CellField[wpfloat],
    pg_edgeidx_dsl: fa.EdgeKField[bool],
    pg_exdist_dsl: fa.EdgeKField[wpfloat],
    exner_exfac: fa.CellKField[wpfloat],
    max_nbhgt: fa.CellField[wpfloat],
    exner_expol: wpfloat,
    lateral_boundary_level_2: gtx.int32,
    horizontal_start_distance: int32,
    horizontal_end_distance: int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_pressure_gradient_downward_extrapolation_mask_distance(
        z_mc=z_mc,
        c_lin_e=c_lin_e,
        topography=topography,
        flat_idx_max=flat_idx_max,
        e_owner_mask=e_owner_mask,
        e_lev=e_lev,
        k_lev=k_lev,
        horizontal_start_distance=horizontal_start_distance,
        horizontal_end_distance=horizontal_end_distance,
        out=(pg_edgeidx_dsl, pg_exdist_dsl),
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_exner_exfac(
        ddxn_z_full=ddxn_z_full,
        dual_edge_length=dual_edge_length,
        exner_expol=exner_expol,
        lateral_boundary_level_2=lateral_boundary_level_2,
        out=exner_exfac,
        domain={
            dims.CellDim: (0, 5),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_max_nbhgt(
        z_mc_nlev=z_mc_nlev,
        out=max_nbhgt,
        domain={dims.CellDim: (1, 6)},
    )


_TABLE_RNG = np.random.default_rng(2703)
METRIC_TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
                 "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
                 "C2E2C": _TABLE_RNG.integers(0, NC, (NC, 3))}


@pytest.mark.parametrize("backend", BACKENDS)
def test_horizontal_metrics(backend):
    e2c, c2e, c2e2c = (METRIC_TABLES[k] for k in ("E2C", "C2E", "C2E2C"))
    z_mc = np.cumsum(RNG.uniform(100.0, 500.0, (NC, NLEV))[:, ::-1], axis=1)[:, ::-1].copy()
    c_lin_e = RNG.uniform(0.3, 0.7, (NE, 2))
    topography = z_mc[:, NLEV - 3] + RNG.uniform(-200.0, 200.0, NC)
    owner = RNG.random(NE) < 0.8
    flat_idx_max = RNG.integers(0, NLEV, NE).astype(np.int32)
    e_lev = np.arange(NE, dtype=np.int32)
    k_lev = np.arange(NLEV, dtype=np.int32)
    ddxn = RNG.uniform(-0.5, 0.5, (NE, NLEV)) * np.where(RNG.random((NE, NLEV)) < 0.2, 8.0, 1.0)
    dual = RNG.uniform(100.0, 1000.0, NE)
    z_nlev = RNG.random(NC)
    mask0, exdist0 = RNG.random((NE, NLEV)) < 0.5, RNG.random((NE, NLEV))
    exfac0, nbh0 = RNG.random((NC, NLEV)), RNG.random(NC)
    mask, exdist, exfac, nbh = mask0.copy(), exdist0.copy(), exfac0.copy(), nbh0.copy()
    hs, he, vs, ve = 1, NE - 1, 1, NLEV
    horizontal_metrics(z_mc, c_lin_e, topography, owner, flat_idx_max, e_lev, k_lev, ddxn, dual,
                       z_nlev, mask, exdist, exfac, nbh, 0.333, 2, 3, 8, hs, he, vs, ve,
                       offset_provider=METRIC_TABLES, backend=backend)
    z_me = (z_mc[e2c] * c_lin_e[:, :, None]).sum(1)
    down = np.maximum(topography[e2c[:, 0]], topography[e2c[:, 1]])[:, None] - 5.0
    in_range = ((3 <= np.arange(NE)) & (np.arange(NE) < 8))[:, None]
    extrap = np.where(in_range, down, 0.0)
    deep = (k_lev[None, :] >= flat_idx_max[:, None] + 1)
    flat = deep & (z_me < down) & owner[:, None]
    want_mask = flat & (e_lev[:, None] > 0) & (k_lev[None, :] > 0)
    want_exdist = np.where(deep & (z_me < extrap) & owner[:, None], z_me - extrap, 0.0)
    a = np.abs(ddxn[c2e])
    slp = a.max(1)
    hgt = np.abs(ddxn[c2e] * dual[c2e][:, :, None]).max(1)
    ex = np.where((np.arange(NC) >= 2)[:, None],
                  0.333 * np.minimum(1 - (4 * slp) ** 2, 1 - (0.002 * hgt) ** 2), 0.333)
    ex = np.maximum(0.0, ex)
    ex = np.where(slp > 1.5, np.maximum(-1 / 6, 1 / 9 * (1.5 - slp)), ex)
    nb = z_nlev[c2e2c].max(1)
    wm, wd, wx, wn = mask0.copy(), exdist0.copy(), exfac0.copy(), nbh0.copy()
    wm[hs:he, vs:ve], wd[hs:he, vs:ve] = want_mask[hs:he, vs:ve], want_exdist[hs:he, vs:ve]
    wx[0:5, vs:ve], wn[1:6] = ex[0:5, vs:ve], nb[1:6]
    np.testing.assert_array_equal(mask, wm)
    check(dict(exdist=exdist, exfac=exfac, nbh=nbh),
          dict(exdist=wd, exfac=wx, nbh=wn), rtol=1e-12, atol=1e-12)


# ================================================================== the flat levels' scan
#
# icon4py's metrics: the scan that marks, per edge, from which level on the edge
# height lies between the interface heights (``_compute_param``: an ``int32``
# counter and a ``bool`` flag as state, a nested ``if`` on runtime scalars).


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(0, False))
def _compute_param(
    param: tuple[gtx.int32, bool],
    z_me_jk: float,
    z_ifc_off: float,
    z_ifc_off_koff: float,
    lower: gtx.int32,
    nlev: gtx.int32,
) -> tuple[gtx.int32, bool]:
    param_0, param_1 = param
    if param_0 >= lower:
        if (param_0 == nlev) | (z_me_jk <= z_ifc_off) & (z_me_jk >= z_ifc_off_koff):
            param_1 = True
    return param_0 + 1, param_1


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _compute_z_ifc_off_koff(
    z_ifc_off: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    n = z_ifc_off(dims.Koff[1])
    return n


@gtx.field_operator
def _compute_param_fields(
    z_me: fa.EdgeKField[wpfloat],
    z_ifc_off: fa.EdgeKField[wpfloat],
    z_ifc_off_koff: fa.EdgeKField[wpfloat],
    lower: gtx.int32,
    nlev: gtx.int32,
) -> tuple[fa.EdgeKField[gtx.int32], fa.EdgeKField[bool]]:
    return _compute_param(z_me, z_ifc_off, z_ifc_off_koff, lower, nlev)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_flat_levels(
    z_me: fa.EdgeKField[wpfloat],
    z_ifc_off: fa.EdgeKField[wpfloat],
    z_ifc_off_koff: fa.EdgeKField[wpfloat],
    counter: fa.EdgeKField[gtx.int32],
    flag: fa.EdgeKField[bool],
    lower: gtx.int32,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_z_ifc_off_koff(
        z_ifc_off,
        out=z_ifc_off_koff,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (0, vertical_end - 1)},
    )
    _compute_param_fields(
        z_me, z_ifc_off, z_ifc_off_koff, lower, nlev,
        out=(counter, flag),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)},
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", [(0, NLEV, 1, 3), (1, NLEV, 0, 2)])
def test_flat_levels(backend, case):
    vs, ve, lower, nlev = case
    hs, he = 1, NE
    z_ifc_off = np.cumsum(RNG.uniform(100.0, 300.0, (NE, NLEV))[:, ::-1], axis=1)[:, ::-1].copy()
    z_me = z_ifc_off - RNG.uniform(-100.0, 400.0, (NE, NLEV))
    koff0 = RNG.random((NE, NLEV))
    counter0 = RNG.integers(-5, 5, (NE, NLEV)).astype(np.int32)
    flag0 = RNG.random((NE, NLEV)) < 0.5
    koff, counter, flag = koff0.copy(), counter0.copy(), flag0.copy()
    compute_flat_levels(z_me, z_ifc_off, koff, counter, flag, lower, nlev, hs, he, vs, ve,
                        offset_provider={"Koff": KDim}, backend=backend)
    want_koff = koff0.copy()
    want_koff[hs:he, :ve - 1] = z_ifc_off[hs:he, 1:ve]
    want_counter, want_flag = counter0.copy(), flag0.copy()
    for e in range(hs, he):
        on = False
        for k in range(vs, ve):
            p0 = k - vs
            if p0 >= lower and ((p0 == nlev) or (z_me[e, k] <= z_ifc_off[e, k]
                                                 and z_me[e, k] >= want_koff[e, k])):
                on = True
            want_counter[e, k], want_flag[e, k] = p0 + 1, on
    np.testing.assert_array_equal(koff, want_koff)
    np.testing.assert_array_equal(counter, want_counter)
    np.testing.assert_array_equal(flag, want_flag)


# ================================================================== edge fields to half levels
#
# icon4py's interpolation to half levels with the quadratically extrapolated
# top and surface levels (math.vertical_operations' weight_k helpers): the
# interpolant on nlev full levels, the result on nlev + 1 levels of KDim.


@gtx.field_operator
def extrapolate_quadratically_to_top_on_edges(
    interpolant: fa.EdgeKField[wpfloat],
    weight_0: fa.EdgeField[wpfloat],
    weight_1: fa.EdgeField[wpfloat],
    weight_2: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return (
        weight_0 * interpolant
        + weight_1 * interpolant(dims.KDim + 1)
        + weight_2 * interpolant(dims.KDim + 2)
    )


@gtx.field_operator
def extrapolate_quadratically_to_surface_on_edges(
    interpolant: fa.EdgeKField[wpfloat],
    weight_0: fa.EdgeField[wpfloat],
    weight_1: fa.EdgeField[wpfloat],
    weight_2: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return (
        weight_0 * interpolant(dims.KDim - 1)
        + weight_1 * interpolant(dims.KDim - 2)
        + weight_2 * interpolant(dims.KDim - 3)
    )


@gtx.field_operator
def _interpolate_edge_field_to_half_levels_wp(
    wgtfac_e: fa.EdgeKField[wpfloat],
    interpolant: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return wgtfac_e * interpolant + (wpfloat("1.0") - wgtfac_e) * interpolant(dims.Koff[-1])


@gtx.field_operator
def _interpolate_edge_field_to_half_levels_with_boundaries_wp(
    interpolant: fa.EdgeKField[wpfloat],
    wgtfac_e: fa.EdgeKField[wpfloat],
    wgtfacq1_e_0: fa.EdgeField[wpfloat],
    wgtfacq1_e_1: fa.EdgeField[wpfloat],
    wgtfacq1_e_2: fa.EdgeField[wpfloat],
    wgtfacq_e_0: fa.EdgeField[wpfloat],
    wgtfacq_e_1: fa.EdgeField[wpfloat],
    wgtfacq_e_2: fa.EdgeField[wpfloat],
    nlev: gtx.int32,
) -> fa.EdgeKField[wpfloat]:
    return concat_where(
        dims.KDim == 0,
        extrapolate_quadratically_to_top_on_edges(
            interpolant=interpolant,
            weight_0=wgtfacq1_e_0, weight_1=wgtfacq1_e_1, weight_2=wgtfacq1_e_2,
        ),
        concat_where(
            dims.KDim == nlev,
            extrapolate_quadratically_to_surface_on_edges(
                interpolant=interpolant,
                weight_0=wgtfacq_e_0, weight_1=wgtfacq_e_1, weight_2=wgtfacq_e_2,
            ),
            _interpolate_edge_field_to_half_levels_wp(wgtfac_e=wgtfac_e, interpolant=interpolant),
        ),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def interpolate_edge_field_to_half_levels_with_boundaries_wp(
    interpolant: fa.EdgeKField[wpfloat],
    wgtfac_e: fa.EdgeKField[wpfloat],
    wgtfacq1_e_0: fa.EdgeField[wpfloat],
    wgtfacq1_e_1: fa.EdgeField[wpfloat],
    wgtfacq1_e_2: fa.EdgeField[wpfloat],
    wgtfacq_e_0: fa.EdgeField[wpfloat],
    wgtfacq_e_1: fa.EdgeField[wpfloat],
    wgtfacq_e_2: fa.EdgeField[wpfloat],
    interpolation: fa.EdgeKField[wpfloat],
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _interpolate_edge_field_to_half_levels_with_boundaries_wp(
        interpolant=interpolant,
        wgtfac_e=wgtfac_e,
        wgtfacq1_e_0=wgtfacq1_e_0, wgtfacq1_e_1=wgtfacq1_e_1, wgtfacq1_e_2=wgtfacq1_e_2,
        wgtfacq_e_0=wgtfacq_e_0, wgtfacq_e_1=wgtfacq_e_1, wgtfacq_e_2=wgtfacq_e_2,
        nlev=nlev,
        out=interpolation,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(0, NLEV + 1), (1, NLEV)])
def test_edge_field_to_half_levels_with_boundaries(backend, levels):
    vs, ve = levels
    hs, he = 2, NE
    interpolant = RNG.random((NE, NLEV))
    wgtfac_e = RNG.random((NE, NLEV + 1))
    w1, w = RNG.random((3, NE)), RNG.random((3, NE))
    base = RNG.random((NE, NLEV + 1))
    got = base.copy()
    interpolate_edge_field_to_half_levels_with_boundaries_wp(
        interpolant, wgtfac_e, *w1, *w, got, NLEV, hs, he, vs, ve,
        offset_provider={"Koff": KDim}, backend=backend)
    want = np.empty((NE, NLEV + 1))
    want[:, 1:NLEV] = (wgtfac_e[:, 1:NLEV] * interpolant[:, 1:NLEV]
                       + (1.0 - wgtfac_e[:, 1:NLEV]) * interpolant[:, :NLEV - 1])
    want[:, 0] = w1[0] * interpolant[:, 0] + w1[1] * interpolant[:, 1] + w1[2] * interpolant[:, 2]
    want[:, NLEV] = (w[0] * interpolant[:, NLEV - 1] + w[1] * interpolant[:, NLEV - 2]
                     + w[2] * interpolant[:, NLEV - 3])
    check(dict(got=got), dict(got=inside(want, base, hs, he, vs, ve)), rtol=1e-12)
