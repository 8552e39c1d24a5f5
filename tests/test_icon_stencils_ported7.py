"""A seventh round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``: the stencils that move
between full and half levels with GT4Py's staggered offsets.

``dims.KHalfDim`` is the staggered counterpart of ``dims.KDim`` (a vertical
dimension named ``KHalf``): a half-level field has ``nlev + 1`` levels,
``x(dims.KHalfDim + 0.5)`` reads full level ``h`` and ``x(dims.KHalfDim - 0.5)``
full level ``h - 1``; a half-level ``y(dims.KDim + 0.5)`` reads half level
``k + 1`` and ``y(dims.KDim - 0.5)`` half level ``k``.

First the interpolations to half levels: the velocity advection's mixed
precision ``_interpolate_to_half_levels`` (``concat_where(KHalfDim > 0)``) and
``_extrapolate_at_top`` (``KHalfDim - 2.5``), the edge interpolation with
quadratically extrapolated top and surface assembled on ``nlev``, the PPM
face values, the turbulence diagnostics (``astype`` of tuples, written into
sliced outputs), the Brunt-Vaisala frequency and the nonhydro solver's
extrapolation to the surface.  Then the vertical advection of w (the
contravariant correction, the CFL clipping with a ``concat_where`` choosing a
tuple on a region bounded by ``maximum(2, end_index_of_damping_layer - 2)``,
``w(KHalfDim - 1)`` beside ``coeff1_dwdz(KHalfDim + 0.5)``, the horizontal
advection of w at half-level edges through vertices (``V2C``, ``E2V``) summed
back over ``C2E``, the extra diffusion over ``C2E2CO``, and the half-level w
averaged to full levels with ``KDim ± 0.5``, three outputs on two domains).
Then the turbulence's w diffusion: the horizontal stress at half-level edges
(``u(E2C[1])(dims.KHalfDim - 0.5)``, vertices through ``E2C2V``, the
tangential wind through ``E2C2E``), the vertical diffusion matrices on half and
full levels (``KHalfDim > minlvl`` on ``int32`` scalars, tuples of three), the
tridiagonal scans over ``KHalfDim`` and ``KDim`` and the boundary rows zeroed
by ``broadcast``.  Then the surface pressure from the lowest full levels, the
hydrostatic pressure's backward scan over ``KDim`` reading the half-level
surface row with ``KDim + 0.5``, and its copy back to half levels; the
nonhydro solver's forward sweep for w (``z_beta(KHalfDim - 0.5)`` beside
``z_alpha(KHalfDim - 1)``, a mixed-precision scan over ``KHalfDim``); and
direct calls writing ``nlev + 1`` half levels from full levels on their
``domain=``.  Then the metrics' interpolation weight on half levels and the
quadratic extrapolation weights on full levels read from the interface
heights at ``KDim ± 0.5`` to ``± 2.5`` (nested ``concat_where``).  Last, the
normal wind's diagnostics (five outputs on full and half levels, one of them
kept or recomputed by a ``bool``) and its advective tendency reading vn on
half levels at full levels.  Each group is one program, interpreted and
compiled, compared with NumPy written from the formulas.
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
    log,
    maximum,
    minimum,
    neighbor_sum,
    sqrt,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.E2CDim, dims.C2EDim, dims.C2E2CODim = E2CDim, C2EDim, C2E2CODim
dims.E2C2VDim, dims.E2C2EDim, dims.E2VDim = E2C2VDim, E2C2EDim, E2VDim
dims.V2CDim = V2CDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
dims.E2C, dims.C2E, dims.C2E2CO, dims.E2C2V, dims.E2C2E = E2C, C2E, C2E2CO, E2C2V, E2C2E
dims.E2V, dims.V2C = E2V, V2C

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.EdgeKHalfField = Field[Dims[EdgeDim, KHalfDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.VertexKHalfField = Field[Dims[VertexDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 9, 6, 8
RNG = np.random.default_rng(7001)
_TABLE_RNG = np.random.default_rng(7002)
TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None],
                                    _TABLE_RNG.integers(0, NC, (NC, 3))], axis=1),
          "E2C2V": _TABLE_RNG.integers(0, NV, (NE, 4)),
          "E2C2E": _TABLE_RNG.integers(0, NE, (NE, 4)),
          "E2V": _TABLE_RNG.integers(0, NV, (NE, 2)),
          "V2C": _TABLE_RNG.integers(0, NC, (NV, 6))}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(7003).bit_generator.state


def check(got, expected, rtol, atol=0.0):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


def inside(value, base, hs, he, vs, ve):
    """``base`` with ``value`` written on rows ``hs:he`` and levels ``vs:ve``."""
    out = np.array(base)
    out[hs:he, vs:ve] = value[hs:he, vs:ve]
    return out


def below(x):
    """A full-level field at half levels 1..nlev - 1 read as ``x(KHalfDim + 0.5)``;
    the rows 0 and nlev are NaN (this reads full level h)."""
    out = np.full((x.shape[0], x.shape[1] + 1), np.nan, dtype=np.float64)
    out[:, :-1] = x
    return out


def above(x):
    """``x(KHalfDim - 0.5)``: full level h - 1 at half level h (NaN at h = 0)."""
    out = np.full((x.shape[0], x.shape[1] + 1), np.nan, dtype=np.float64)
    out[:, 1:] = x
    return out


# ================================================================== interpolation to half levels
#
# icon4py's interpolations from full to half levels, with the extrapolated top
# and surface levels.


@gtx.field_operator
def _interpolate_to_half_levels(
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    x: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKHalfField[ta.vpfloat]:
    wgtfac_e_wp = astype(wgtfac_e, wpfloat)
    x_ie_wp = wgtfac_e_wp * x(dims.KHalfDim + 0.5) + (wpfloat("1.0") - wgtfac_e_wp) * x(
        dims.KHalfDim - 0.5
    )
    return concat_where(
        dims.KHalfDim > 0, astype(x_ie_wp, vpfloat), astype(x(dims.KHalfDim + 0.5), vpfloat)
    )


@gtx.field_operator
def _extrapolate_at_top(
    wgtfacq_e: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKHalfField[vpfloat]:
    wgtfacq_e_wp = astype(wgtfacq_e, wpfloat)
    vn_ie_wp = (
        wgtfacq_e_wp(dims.KHalfDim - 0.5) * vn(dims.KHalfDim - 0.5)
        + wgtfacq_e_wp(dims.KHalfDim - 1.5) * vn(dims.KHalfDim - 1.5)
        + wgtfacq_e_wp(dims.KHalfDim - 2.5) * vn(dims.KHalfDim - 2.5)
    )
    return astype(vn_ie_wp, vpfloat)


@gtx.field_operator
def extrapolate_quadratically_to_top_on_edges(
    interpolant: fa.EdgeKField[wpfloat],
    weights: fa.EdgeKField[wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    """The top half level from full levels 0..2, ``weights`` on those rows."""
    return (
        weights(dims.KHalfDim + 0.5) * interpolant(dims.KHalfDim + 0.5)
        + weights(dims.KHalfDim + 1.5) * interpolant(dims.KHalfDim + 1.5)
        + weights(dims.KHalfDim + 2.5) * interpolant(dims.KHalfDim + 2.5)
    )


@gtx.field_operator
def extrapolate_quadratically_to_surface_on_edges(
    interpolant: fa.EdgeKField[wpfloat],
    weights: fa.EdgeKField[wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    """The surface half level from full levels nlev - 3..nlev - 1."""
    return (
        weights(dims.KHalfDim - 0.5) * interpolant(dims.KHalfDim - 0.5)
        + weights(dims.KHalfDim - 1.5) * interpolant(dims.KHalfDim - 1.5)
        + weights(dims.KHalfDim - 2.5) * interpolant(dims.KHalfDim - 2.5)
    )


@gtx.field_operator
def with_boundaries_on_half_levels_on_edges(
    top: fa.EdgeKHalfField[wpfloat],
    interior: fa.EdgeKHalfField[wpfloat],
    bottom: fa.EdgeKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.EdgeKHalfField[wpfloat]:
    result = concat_where((dims.KHalfDim > 0) & (dims.KHalfDim < nlev), interior, 0.0)
    result = concat_where(dims.KHalfDim == 0, top, result)
    return concat_where(dims.KHalfDim == nlev, bottom, result)


@gtx.field_operator
def _interpolate_edge_field_to_half_levels(
    wgtfac_e: fa.EdgeKHalfField[wpfloat],
    interpolant: fa.EdgeKField[wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    return wgtfac_e * interpolant(dims.KHalfDim + 0.5) + (wpfloat("1.0") - wgtfac_e) * interpolant(
        dims.KHalfDim - 0.5
    )


@gtx.field_operator
def _interpolate_edge_field_to_half_levels_with_boundaries(
    interpolant: fa.EdgeKField[wpfloat],
    wgtfac_e: fa.EdgeKHalfField[wpfloat],
    wgtfacq1_e: fa.EdgeKField[wpfloat],
    wgtfacq_e: fa.EdgeKField[wpfloat],
    nlev: gtx.int32,
) -> fa.EdgeKHalfField[wpfloat]:
    return with_boundaries_on_half_levels_on_edges(
        top=extrapolate_quadratically_to_top_on_edges(interpolant=interpolant, weights=wgtfacq1_e),
        interior=_interpolate_edge_field_to_half_levels(wgtfac_e=wgtfac_e, interpolant=interpolant),
        bottom=extrapolate_quadratically_to_surface_on_edges(
            interpolant=interpolant, weights=wgtfacq_e
        ),
        nlev=nlev,
    )


@gtx.field_operator
def _compute_ppm_quadratic_face_values(
    p_cc: fa.CellKField[ta.wpfloat],
    p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
) -> fa.CellKHalfField[ta.wpfloat]:
    hgt = p_cellhgt_mc_now(dims.KHalfDim + 0.5)
    hgt_m1 = p_cellhgt_mc_now(dims.KHalfDim - 0.5)
    cc = p_cc(dims.KHalfDim + 0.5)
    cc_m1 = p_cc(dims.KHalfDim - 0.5)
    return cc * (1.0 - (hgt / hgt_m1)) + (hgt / (hgt_m1 + hgt)) * ((hgt / hgt_m1) * cc + cc_m1)


@gtx.field_operator
def _calculate_diagnostics_for_turbulence(
    div: fa.CellKField[vpfloat],
    kh_c: fa.CellKField[vpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    div_wp, kh_c_wp = astype((div, kh_c), wpfloat)
    div_ic_wp = astype(wgtfac_c * div(dims.KHalfDim + 0.5), wpfloat) + (
        wpfloat("1.0") - wgtfac_c_wp
    ) * div_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = astype(wgtfac_c * kh_c(dims.KHalfDim + 0.5), wpfloat) + (
        wpfloat("1.0") - wgtfac_c_wp
    ) * kh_c_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = hdef_ic_wp * hdef_ic_wp
    return astype((div_ic_wp, hdef_ic_wp), vpfloat)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_wp(
    wgtfac_c: fa.CellKHalfField[wpfloat],
    interpolant: fa.CellKField[wpfloat],
) -> fa.CellKHalfField[wpfloat]:
    return wgtfac_c * interpolant(dims.KHalfDim + 0.5) + (
        wpfloat("1.0") - wgtfac_c
    ) * interpolant(dims.KHalfDim - 0.5)


@gtx.field_operator
def _compute_brunt_vaisala_frequency(
    theta_v: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    grav: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    theta_v_ic = _interpolate_cell_field_to_half_levels_wp(wgtfac_c=wgtfac_c, interpolant=theta_v)
    return (
        grav
        * (theta_v(dims.KHalfDim - 0.5) - theta_v(dims.KHalfDim + 0.5))
        * inv_ddqz_z_half
        / theta_v_ic
    )


@gtx.field_operator
def _extrapolate_quadratically_to_surface(
    wgtfacq_c: fa.CellKField[vpfloat],
    interpolant: fa.CellKField[vpfloat],
) -> fa.CellKHalfField[vpfloat]:
    return (
        wgtfacq_c(dims.KHalfDim - 0.5) * interpolant(dims.KHalfDim - 0.5)
        + wgtfacq_c(dims.KHalfDim - 1.5) * interpolant(dims.KHalfDim - 1.5)
        + wgtfacq_c(dims.KHalfDim - 2.5) * interpolant(dims.KHalfDim - 2.5)
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def interpolate_to_half_levels(
    wgtfac_e_vp: fa.EdgeKHalfField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    wgtfacq_e_vp: fa.EdgeKField[vpfloat],
    vn_ie: fa.EdgeKHalfField[vpfloat],
    interpolant: fa.EdgeKField[wpfloat],
    wgtfac_e: fa.EdgeKHalfField[wpfloat],
    wgtfacq1_e: fa.EdgeKField[wpfloat],
    wgtfacq_e: fa.EdgeKField[wpfloat],
    interpolant_ie: fa.EdgeKHalfField[wpfloat],
    p_cc: fa.CellKField[wpfloat],
    p_cellhgt_mc_now: fa.CellKField[wpfloat],
    p_face: fa.CellKHalfField[wpfloat],
    div: fa.CellKField[vpfloat],
    kh_c: fa.CellKField[vpfloat],
    wgtfac_c_vp: fa.CellKHalfField[vpfloat],
    div_ic: fa.CellKHalfField[vpfloat],
    hdef_ic: fa.CellKHalfField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    bruvais: fa.CellKHalfField[wpfloat],
    wgtfacq_c: fa.CellKField[vpfloat],
    exner_pr: fa.CellKField[vpfloat],
    exner_ic: fa.CellKHalfField[vpfloat],
    grav: wpfloat,
    nlev: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _interpolate_to_half_levels(
        wgtfac_e_vp,
        vn,
        out=vn_ie,
        domain={dims.EdgeDim: (edge_start, edge_end), dims.KHalfDim: (0, nlev)},
    )
    _extrapolate_at_top(
        wgtfacq_e_vp,
        vn,
        out=vn_ie,
        domain={dims.EdgeDim: (edge_start, edge_end), dims.KHalfDim: (nlev, nlev + 1)},
    )
    _interpolate_edge_field_to_half_levels_with_boundaries(
        interpolant=interpolant,
        wgtfac_e=wgtfac_e,
        wgtfacq1_e=wgtfacq1_e,
        wgtfacq_e=wgtfacq_e,
        nlev=nlev,
        out=interpolant_ie,
        domain={dims.EdgeDim: (edge_start, edge_end), dims.KHalfDim: (0, nlev + 1)},
    )
    _compute_ppm_quadratic_face_values(
        p_cc,
        p_cellhgt_mc_now,
        out=p_face,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _calculate_diagnostics_for_turbulence(
        div, kh_c, wgtfac_c_vp, out=(div_ic[:, 1:-1], hdef_ic[:, 1:-1])
    )
    _compute_brunt_vaisala_frequency(
        theta_v=theta_v,
        wgtfac_c=wgtfac_c,
        inv_ddqz_z_half=inv_ddqz_z_half,
        grav=grav,
        out=bruvais,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _extrapolate_quadratically_to_surface(
        wgtfacq_c,
        exner_pr,
        out=exner_ic,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (nlev, nlev + 1),
        },
    )


def f32(*shape):
    return RNG.uniform(0.2, 0.8, shape).astype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(1, NLEV), (2, NLEV - 1)])
def test_interpolation_to_half_levels(backend, levels):
    vs, ve = levels
    hs, he, es, ee = 1, NC - 1, 0, NE - 1
    nh = NLEV + 1
    a = dict(
        wgtfac_e_vp=f32(NE, nh), vn=RNG.standard_normal((NE, NLEV)), wgtfacq_e_vp=f32(NE, NLEV),
        interpolant=RNG.standard_normal((NE, NLEV)), wgtfac_e=RNG.uniform(0.2, 0.8, (NE, nh)),
        wgtfacq1_e=RNG.standard_normal((NE, NLEV)), wgtfacq_e=RNG.standard_normal((NE, NLEV)),
        p_cc=RNG.standard_normal((NC, NLEV)), p_cellhgt_mc_now=RNG.uniform(50.0, 500.0, (NC, NLEV)),
        div=f32(NC, NLEV) - np.float32(0.5), kh_c=f32(NC, NLEV), wgtfac_c_vp=f32(NC, nh),
        theta_v=RNG.uniform(280.0, 320.0, (NC, NLEV)), wgtfac_c=RNG.uniform(0.2, 0.8, (NC, nh)),
        inv_ddqz_z_half=RNG.uniform(1e-3, 1e-2, (NC, nh)), wgtfacq_c=f32(NC, NLEV),
        exner_pr=f32(NC, NLEV))
    base = dict(vn_ie=f32(NE, nh), interpolant_ie=RNG.random((NE, nh)), p_face=RNG.random((NC, nh)),
                div_ic=f32(NC, nh), hdef_ic=f32(NC, nh), bruvais=RNG.random((NC, nh)),
                exner_ic=f32(NC, nh))
    got = {k: v.copy() for k, v in base.items()}
    interpolate_to_half_levels(**a, **got, grav=9.80665, nlev=NLEV, edge_start=es, edge_end=ee,
                               horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                               vertical_end=ve, offset_provider={}, backend=backend)

    w64 = {k: np.asarray(v, dtype=np.float64) for k, v in a.items()}
    with np.errstate(invalid="ignore"):
        x_ie = w64["wgtfac_e_vp"] * below(a["vn"]) + (1 - w64["wgtfac_e_vp"]) * above(a["vn"])
        x_ie[:, 0] = a["vn"][:, 0]
        q = w64["wgtfacq_e_vp"] * a["vn"]
        x_ie[:, NLEV] = q[:, -1] + q[:, -2] + q[:, -3]
        qi1, qi = a["wgtfacq1_e"] * a["interpolant"], a["wgtfacq_e"] * a["interpolant"]
        ie = a["wgtfac_e"] * below(a["interpolant"]) + (1 - a["wgtfac_e"]) * above(a["interpolant"])
        ie[:, 0] = qi1[:, 0] + qi1[:, 1] + qi1[:, 2]
        ie[:, NLEV] = qi[:, -1] + qi[:, -2] + qi[:, -3]
        hgt, hgt_m1 = below(a["p_cellhgt_mc_now"]), above(a["p_cellhgt_mc_now"])
        cc, cc_m1 = below(a["p_cc"]), above(a["p_cc"])
        face = cc * (1 - hgt / hgt_m1) + hgt / (hgt_m1 + hgt) * (hgt / hgt_m1 * cc + cc_m1)
        wc = w64["wgtfac_c_vp"]
        div_ic = wc * below(w64["div"]) + (1 - wc) * above(w64["div"])
        hdef_ic = (wc * below(w64["kh_c"]) + (1 - wc) * above(w64["kh_c"])) ** 2
        th_ic = a["wgtfac_c"] * below(a["theta_v"]) + (1 - a["wgtfac_c"]) * above(a["theta_v"])
        bv = 9.80665 * (above(a["theta_v"]) - below(a["theta_v"])) * a["inv_ddqz_z_half"] / th_ic
        ex = w64["wgtfacq_c"] * w64["exner_pr"]
        exner_sfc = np.full((NC, nh), np.nan)
        exner_sfc[:, NLEV] = ex[:, -1] + ex[:, -2] + ex[:, -3]
    check(got, dict(
        p_face=inside(face, base["p_face"], hs, he, vs, ve),
        interpolant_ie=inside(ie, base["interpolant_ie"], es, ee, 0, nh),
        bruvais=inside(bv, base["bruvais"], hs, he, vs, ve)), rtol=1e-12)
    check(got, dict(
        vn_ie=inside(x_ie, base["vn_ie"], es, ee, 0, nh),
        div_ic=inside(div_ic, base["div_ic"], 0, NC, 1, NLEV),
        hdef_ic=inside(hdef_ic, base["hdef_ic"], 0, NC, 1, NLEV),
        exner_ic=inside(exner_sfc, base["exner_ic"], hs, he, NLEV, nh)), rtol=2e-6, atol=1e-6)
    assert got["vn_ie"].dtype == np.float32 and got["div_ic"].dtype == np.float32


# ================================================================== vertical advection of w
#
# icon4py's velocity advection in the vertical momentum equation: the
# contravariant corrected w on half levels with its CFL clipping, the vertical
# and horizontal advection of w, the extra diffusion near the CFL limit, and
# the corrected w averaged to full levels.


@gtx.field_operator
def _compute_contravariant_corrected_w(
    w: fa.CellKHalfField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
) -> fa.CellKHalfField[ta.vpfloat]:
    contravariant_corrected_w_at_cells_on_half_levels = (
        astype(w, vpfloat) - contravariant_correction_at_cells_on_half_levels
    )
    return contravariant_corrected_w_at_cells_on_half_levels


@gtx.field_operator
def _compute_cfl(
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> tuple[fa.CellKHalfField[bool], fa.CellKHalfField[ta.vpfloat]]:
    contravariant_corrected_w_at_cells_on_half_levels_wp, ddqz_z_half_wp = astype(
        (contravariant_corrected_w_at_cells_on_half_levels, ddqz_z_half), wpfloat
    )
    cfl_clipping = where(
        abs(contravariant_corrected_w_at_cells_on_half_levels) > cfl_w_limit * ddqz_z_half,
        broadcast(True, (dims.CellDim, dims.KHalfDim)),
        False,
    )
    vertical_cfl = where(
        cfl_clipping,
        contravariant_corrected_w_at_cells_on_half_levels_wp * dtime / ddqz_z_half_wp,
        broadcast(wpfloat("0.0"), (dims.CellDim, dims.KHalfDim)),
    )
    return cfl_clipping, astype(vertical_cfl, vpfloat)


@gtx.field_operator
def _clip_contravariant_corrected_w(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    cfl_clipping: fa.CellKHalfField[bool],
    vertical_cfl: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    dtime: ta.wpfloat,
) -> fa.CellKHalfField[ta.vpfloat]:
    w_wp = astype(contravariant_corrected_w_at_cells_on_half_levels, wpfloat)
    w_wp = where(
        (cfl_clipping) & (vertical_cfl < -vpfloat("0.85")),
        astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        w_wp,
    )
    w_wp = where(
        (cfl_clipping) & (vertical_cfl > vpfloat("0.85")),
        astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        w_wp,
    )
    return astype(w_wp, vpfloat)


@gtx.field_operator
def _compute_contravariant_corrected_w_and_cfl(
    w: fa.CellKHalfField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[fa.CellKHalfField[ta.vpfloat], fa.CellKHalfField[bool], fa.CellKHalfField[ta.vpfloat]]:
    contravariant_corrected_w_at_cells_on_half_levels = _compute_contravariant_corrected_w(
        w, contravariant_correction_at_cells_on_half_levels
    )
    cfl_clipping, vertical_cfl = concat_where(
        (dims.KHalfDim >= maximum(2, end_index_of_damping_layer - 2)) & (dims.KHalfDim < nlev - 3),
        _compute_cfl(
            ddqz_z_half=ddqz_z_half,
            contravariant_corrected_w_at_cells_on_half_levels=contravariant_corrected_w_at_cells_on_half_levels,
            cfl_w_limit=cfl_w_limit,
            dtime=dtime,
        ),
        (
            broadcast(False, (dims.CellDim, dims.KHalfDim)),
            broadcast(vpfloat("0.0"), (dims.CellDim, dims.KHalfDim)),
        ),
    )
    contravariant_corrected_w_at_cells_on_half_levels = _clip_contravariant_corrected_w(
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
        vertical_cfl,
        ddqz_z_half,
        dtime,
    )
    return contravariant_corrected_w_at_cells_on_half_levels, cfl_clipping, vertical_cfl


@gtx.field_operator
def _compute_vertical_advection_of_w(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[vpfloat],
    w: fa.CellKHalfField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat],
    coeff2_dwdz: fa.CellKField[vpfloat],
) -> fa.CellKHalfField[vpfloat]:
    contravariant_corrected_w_wp = astype(
        contravariant_corrected_w_at_cells_on_half_levels, wpfloat
    )
    coeff1_dwdz_at_half_levels = coeff1_dwdz(dims.KHalfDim + 0.5)
    coeff2_dwdz_at_half_levels = coeff2_dwdz(dims.KHalfDim + 0.5)
    coeff1_dwdz_wp, coeff2_dwdz_wp = astype(
        (coeff1_dwdz_at_half_levels, coeff2_dwdz_at_half_levels), wpfloat
    )
    vertical_wind_advective_tendency_wp = -contravariant_corrected_w_wp * (
        w(dims.KHalfDim - 1) * coeff1_dwdz_wp
        - w(dims.KHalfDim + 1) * coeff2_dwdz_wp
        + w * astype(coeff2_dwdz_at_half_levels - coeff1_dwdz_at_half_levels, wpfloat)
    )
    return astype(vertical_wind_advective_tendency_wp, vpfloat)


@gtx.field_operator
def _compute_interpolated_horizontal_advection_of_w(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    horizontal_advection_of_w_at_edges_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
) -> fa.CellKHalfField[ta.wpfloat]:
    horizontal_advection_wp = astype(horizontal_advection_of_w_at_edges_on_half_levels, wpfloat)
    return neighbor_sum(horizontal_advection_wp(C2E) * e_bln_c_s, axis=dims.C2EDim)


@gtx.field_operator
def _compute_extra_diffusion_for_w(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> fa.CellKHalfField[ta.wpfloat]:
    contravariant_corrected_w_wp, ddqz_z_half_wp, cfl_w_limit_wp = astype(
        (contravariant_corrected_w_at_cells_on_half_levels, ddqz_z_half, cfl_w_limit), wpfloat
    )
    difcoef = scalfac_exdiff * minimum(
        wpfloat("0.85") - cfl_w_limit_wp * dtime,
        abs(contravariant_corrected_w_wp) * dtime / ddqz_z_half_wp - cfl_w_limit_wp * dtime,
    )
    return difcoef * area * neighbor_sum(w(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim)


@gtx.field_operator
def _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(
    p_cell_in: fa.CellKHalfField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
) -> fa.VertexKHalfField[wpfloat]:
    return neighbor_sum(c_intp * p_cell_in(V2C), axis=dims.V2CDim)


@gtx.field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
    vn_ie: fa.EdgeKHalfField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    z_vt_ie: fa.EdgeKHalfField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    z_w_v: fa.VertexKHalfField[wpfloat],
) -> fa.EdgeKHalfField[vpfloat]:
    z_vt_ie_wp, vn_ie_wp = astype((z_vt_ie, vn_ie), wpfloat)
    z_v_grad_w_wp = vn_ie_wp * inv_dual_edge_length * (
        w(E2C[0]) - w(E2C[1])
    ) + z_vt_ie_wp * inv_primal_edge_length * tangent_orientation * astype(
        z_w_v(E2V[0]) - z_w_v(E2V[1]), wpfloat
    )
    return astype(z_v_grad_w_wp, vpfloat)


@gtx.field_operator
def _compute_horizontal_advection_of_w(
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
) -> fa.EdgeKHalfField[ta.vpfloat]:
    w_at_vertices = _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(w, c_intp)
    horizontal_advection_of_w_at_edges_on_half_levels = (
        _compute_horizontal_advection_term_for_vertical_velocity(
            vn_on_half_levels,
            inv_dual_edge_length,
            w,
            tangential_wind_on_half_levels,
            inv_primal_edge_length,
            tangent_orientation,
            w_at_vertices,
        )
    )
    return astype(horizontal_advection_of_w_at_edges_on_half_levels, vpfloat)


@gtx.field_operator
def _compute_advective_vertical_wind_tendency(
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    cfl_clipping: fa.CellKHalfField[bool],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> fa.CellKHalfField[ta.vpfloat]:
    vertical_advection_of_w = _compute_vertical_advection_of_w(
        contravariant_corrected_w_at_cells_on_half_levels, w, coeff1_dwdz, coeff2_dwdz
    )
    horizontal_advection_of_w_at_edges_on_half_levels = _compute_horizontal_advection_of_w(
        w=w,
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vn_on_half_levels=vn_on_half_levels,
        c_intp=c_intp,
        inv_dual_edge_length=inv_dual_edge_length,
        inv_primal_edge_length=inv_primal_edge_length,
        tangent_orientation=tangent_orientation,
    )
    interpolated_horizontal_advection_of_w = _compute_interpolated_horizontal_advection_of_w(
        e_bln_c_s, horizontal_advection_of_w_at_edges_on_half_levels
    )
    extra_diffusion_for_w = _compute_extra_diffusion_for_w(
        contravariant_corrected_w_at_cells_on_half_levels,
        ddqz_z_half,
        area,
        geofac_n2s,
        w,
        scalfac_exdiff,
        cfl_w_limit,
        dtime,
    )
    vertical_wind_advective_tendency = astype(
        astype(vertical_advection_of_w, wpfloat) + interpolated_horizontal_advection_of_w,
        vpfloat,
    )
    vertical_wind_advective_tendency_wp = astype(vertical_wind_advective_tendency, wpfloat)
    return astype(
        where(
            cfl_clipping & owner_mask,
            vertical_wind_advective_tendency_wp + extra_diffusion_for_w,
            vertical_wind_advective_tendency_wp,
        ),
        vpfloat,
    )


@gtx.field_operator
def _interpolate_contravariant_vertical_velocity_to_full_levels(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[vpfloat],
    nlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    return concat_where(
        dims.KDim < nlev - 1,
        vpfloat("0.5")
        * (
            contravariant_corrected_w_at_cells_on_half_levels(dims.KDim - 0.5)
            + contravariant_corrected_w_at_cells_on_half_levels(dims.KDim + 0.5)
        ),
        vpfloat("0.5") * contravariant_corrected_w_at_cells_on_half_levels(dims.KDim - 0.5),
    )


@gtx.field_operator
def _compute_advection_in_vertical_momentum(
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_vertical_wind_advective_tendency: bool,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[fa.CellKHalfField[ta.vpfloat], fa.CellKField[ta.vpfloat], fa.CellKHalfField[ta.vpfloat]]:
    (
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
        vertical_cfl,
    ) = _compute_contravariant_corrected_w_and_cfl(
        w=w,
        contravariant_correction_at_cells_on_half_levels=contravariant_correction_at_cells_on_half_levels,
        ddqz_z_half=ddqz_z_half,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )
    vertical_wind_advective_tendency = (
        _compute_advective_vertical_wind_tendency(
            w=w,
            tangential_wind_on_half_levels=tangential_wind_on_half_levels,
            vn_on_half_levels=vn_on_half_levels,
            c_intp=c_intp,
            inv_dual_edge_length=inv_dual_edge_length,
            inv_primal_edge_length=inv_primal_edge_length,
            tangent_orientation=tangent_orientation,
            contravariant_corrected_w_at_cells_on_half_levels=contravariant_corrected_w_at_cells_on_half_levels,
            cfl_clipping=cfl_clipping,
            coeff1_dwdz=coeff1_dwdz,
            coeff2_dwdz=coeff2_dwdz,
            e_bln_c_s=e_bln_c_s,
            ddqz_z_half=ddqz_z_half,
            area=area,
            geofac_n2s=geofac_n2s,
            owner_mask=owner_mask,
            scalfac_exdiff=scalfac_exdiff,
            cfl_w_limit=cfl_w_limit,
            dtime=dtime,
        )
        if not skip_vertical_wind_advective_tendency
        else broadcast(vpfloat("0.0"), (dims.CellDim, dims.KHalfDim))
    )
    contravariant_corrected_w_at_cells_on_model_levels = (
        _interpolate_contravariant_vertical_velocity_to_full_levels(
            contravariant_corrected_w_at_cells_on_half_levels, nlev
        )
    )
    return (
        vertical_wind_advective_tendency,
        contravariant_corrected_w_at_cells_on_model_levels,
        vertical_cfl,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_advection_in_vertical_momentum(
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    vertical_wind_advective_tendency: fa.CellKHalfField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    vertical_cfl: fa.CellKHalfField[ta.vpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_vertical_wind_advective_tendency: bool,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_advection_in_vertical_momentum(
        w,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        c_intp,
        inv_dual_edge_length,
        inv_primal_edge_length,
        tangent_orientation,
        contravariant_correction_at_cells_on_half_levels,
        coeff1_dwdz,
        coeff2_dwdz,
        e_bln_c_s,
        ddqz_z_half,
        area,
        geofac_n2s,
        owner_mask,
        scalfac_exdiff,
        cfl_w_limit,
        dtime,
        skip_vertical_wind_advective_tendency,
        nlev,
        end_index_of_damping_layer,
        out=(
            vertical_wind_advective_tendency,
            contravariant_corrected_w_at_cells_on_model_levels,
            vertical_cfl,
        ),
        domain=(
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KHalfDim: (vertical_start, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end), dims.KDim: (0, nlev)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KHalfDim: (vertical_start, vertical_end)},
        ),
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", [(False, 5), (True, 3)])
def test_advection_in_vertical_momentum(backend, case):
    skip, edl = case
    nh = NLEV + 1
    hs, he, vs, ve = 1, NC - 1, 1, NLEV
    dtime, scalfac, cfl_lim = 10.0, 0.15, np.float32(0.065)
    a = dict(
        w=RNG.normal(0.0, 3.0, (NC, nh)),
        tangential_wind_on_half_levels=RNG.standard_normal((NE, nh)),
        vn_on_half_levels=RNG.standard_normal((NE, nh)).astype(np.float32),
        c_intp=RNG.uniform(0.1, 0.3, (NV, 6)), inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        contravariant_correction_at_cells_on_half_levels=RNG.normal(0, 0.3, (NC, nh)).astype(
            np.float32),
        coeff1_dwdz=RNG.uniform(1e-3, 1e-2, (NC, NLEV)).astype(np.float32),
        coeff2_dwdz=RNG.uniform(1e-3, 1e-2, (NC, NLEV)).astype(np.float32),
        e_bln_c_s=RNG.uniform(0.2, 0.5, (NC, 3)),
        ddqz_z_half=RNG.uniform(10.0, 50.0, (NC, nh)).astype(np.float32),
        area=RNG.uniform(0.5, 2.0, NC), geofac_n2s=RNG.standard_normal((NC, 4)),
        owner_mask=RNG.random(NC) < 0.7)
    base = dict(vertical_wind_advective_tendency=RNG.random((NC, nh)).astype(np.float32),
                contravariant_corrected_w_at_cells_on_model_levels=RNG.random(
                    (NC, NLEV)).astype(np.float32),
                vertical_cfl=RNG.random((NC, nh)).astype(np.float32))
    got = {k: v.copy() for k, v in base.items()}
    compute_advection_in_vertical_momentum(
        **a, **got, scalfac_exdiff=scalfac, cfl_w_limit=cfl_lim, dtime=dtime,
        skip_vertical_wind_advective_tendency=skip, nlev=NLEV, end_index_of_damping_layer=edl,
        horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
        offset_provider=TABLES, backend=backend)

    w, ddqz = a["w"], a["ddqz_z_half"]
    wc = a["w"].astype(np.float32) - a["contravariant_correction_at_cells_on_half_levels"]
    h = np.arange(nh)[None, :]
    region = (h >= max(2, edl - 2)) & (h < NLEV - 3)
    clip = region & (np.abs(wc) > cfl_lim * ddqz)
    vcfl = np.where(clip, wc.astype(np.float64) * dtime / ddqz, 0.0).astype(np.float32)
    wc_wp = wc.astype(np.float64)
    wc_wp = np.where(clip & (vcfl < -0.85), (np.float32(-0.85) * ddqz).astype(np.float64) / dtime,
                     wc_wp)
    wc_wp = np.where(clip & (vcfl > 0.85), (np.float32(0.85) * ddqz).astype(np.float64) / dtime,
                     wc_wp)
    wc = wc_wp.astype(np.float32).astype(np.float64)
    c1, c2 = below(a["coeff1_dwdz"]), below(a["coeff2_dwdz"])
    w_up, w_dn = np.full_like(w, np.nan), np.full_like(w, np.nan)
    w_up[:, 1:], w_dn[:, :-1] = w[:, :-1], w[:, 1:]
    with np.errstate(invalid="ignore"):
        vadv = -wc * (w_up * c1 - w_dn * c2 + w * (c2 - c1))
    e2c, e2v = TABLES["E2C"], TABLES["E2V"]
    w_v = (a["c_intp"][:, :, None] * w[TABLES["V2C"]]).sum(1)
    hadv = (a["vn_on_half_levels"] * a["inv_dual_edge_length"][:, None]
            * (w[e2c[:, 0]] - w[e2c[:, 1]])
            + a["tangential_wind_on_half_levels"] * (a["inv_primal_edge_length"]
                                                     * a["tangent_orientation"])[:, None]
            * (w_v[e2v[:, 0]] - w_v[e2v[:, 1]])).astype(np.float32).astype(np.float64)
    c2e = TABLES["C2E"]
    interp = (hadv[c2e] * a["e_bln_c_s"][:, :, None]).sum(1)
    difcoef = scalfac * np.minimum(0.85 - float(cfl_lim) * dtime,
                                   np.abs(wc) * dtime / ddqz - float(cfl_lim) * dtime)
    extra = difcoef * a["area"][:, None] * (w[TABLES["C2E2CO"]]
                                            * a["geofac_n2s"][:, :, None]).sum(1)
    tend = vadv + interp
    tend = np.where(clip & a["owner_mask"][:, None], tend + extra, tend)
    if skip:
        tend = np.zeros((NC, nh))
    full = 0.5 * (wc[:, :-1] + wc[:, 1:])
    full[:, NLEV - 1] = 0.5 * wc[:, NLEV - 1]
    check(got, dict(
        vertical_wind_advective_tendency=inside(
            tend, base["vertical_wind_advective_tendency"], hs, he, vs, ve),
        contravariant_corrected_w_at_cells_on_model_levels=inside(
            full, base["contravariant_corrected_w_at_cells_on_model_levels"], hs, he, 0, NLEV),
        vertical_cfl=inside(vcfl, base["vertical_cfl"], hs, he, vs, ve)), rtol=1e-5, atol=1e-5)
    assert clip[hs:he].any() and (np.abs(vcfl) > 0.85).any()


# ================================================================== vertical diffusion of w
#
# icon4py's turbulence: the horizontal stress divergence for w at half-level
# edges, then the implicit vertical diffusion of w on cell half levels over the
# call's vertical domain (the matrix on half levels from full-level
# diffusivities, solved by scans over KHalfDim), the boundary rows zeroed; and
# the same for a full-level scalar with half-level diffusivities.


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(wpfloat("0.0"), wpfloat("0.0")))
def _solve_tridiagonal_matrix_forward_sweep(
    state_kminus1: tuple[wpfloat, wpfloat],
    a: wpfloat,
    b: wpfloat,
    c: wpfloat,
    d: wpfloat,
) -> tuple[wpfloat, wpfloat]:
    q_kminus1, d_prime_kminus1 = state_kminus1
    normalization = wpfloat("1.0") / (b + a * q_kminus1)
    return (wpfloat("0.0") - c) * normalization, (d - a * d_prime_kminus1) * normalization


@gtx.scan_operator(axis=dims.KDim, forward=False, init=wpfloat("0.0"))
def _solve_tridiagonal_matrix_back_substitution(
    x_kplus1: wpfloat, q: wpfloat, d_prime: wpfloat
) -> wpfloat:
    return d_prime + x_kplus1 * q


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
    x_kplus1: wpfloat, q: wpfloat, d_prime: wpfloat
) -> wpfloat:
    return d_prime + x_kplus1 * q


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _assemble_vertical_diffusion_matrix_on_cells(
    diffusivity: fa.CellKHalfField[wpfloat],
    inv_dz: fa.CellKHalfField[wpfloat],
    inv_air_mass: fa.CellKField[wpfloat],
    prefactor: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    zero = wpfloat("0.0") * inv_air_mass
    a = concat_where(
        dims.KDim > minlvl,
        wpfloat("0.0")
        - prefactor * diffusivity(dims.KDim - 0.5) * inv_dz(dims.KDim - 0.5) * inv_air_mass,
        zero,
    )
    c = concat_where(
        dims.KDim < maxlvl,
        wpfloat("0.0")
        - prefactor * diffusivity(dims.KDim + 0.5) * inv_dz(dims.KDim + 0.5) * inv_air_mass,
        zero,
    )
    return a, wpfloat("0.0") - a - c, c


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _assemble_vertical_diffusion_matrix_on_cell_half_levels(
    diffusivity: fa.CellKField[wpfloat],
    inv_dz: fa.CellKField[wpfloat],
    inv_air_mass: fa.CellKHalfField[wpfloat],
    prefactor: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> tuple[fa.CellKHalfField[wpfloat], fa.CellKHalfField[wpfloat], fa.CellKHalfField[wpfloat]]:
    zero = wpfloat("0.0") * inv_air_mass
    a = concat_where(
        dims.KHalfDim > minlvl,
        wpfloat("0.0")
        - prefactor * diffusivity(dims.KHalfDim - 0.5) * inv_dz(dims.KHalfDim - 0.5) * inv_air_mass,
        zero,
    )
    c = concat_where(
        dims.KHalfDim < maxlvl,
        wpfloat("0.0")
        - prefactor * diffusivity(dims.KHalfDim + 0.5) * inv_dz(dims.KHalfDim + 0.5) * inv_air_mass,
        zero,
    )
    return a, wpfloat("0.0") - a - c, c


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _solve_implicit_vertical_diffusion_on_cells(
    var: fa.CellKField[wpfloat],
    a: fa.CellKField[wpfloat],
    b: fa.CellKField[wpfloat],
    c: fa.CellKField[wpfloat],
    rhs: fa.CellKField[wpfloat],
    tend: fa.CellKField[wpfloat],
    dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    inv_dtime = wpfloat("1.0") / dtime
    q, d_prime = _solve_tridiagonal_matrix_forward_sweep(a, inv_dtime + b, c, var * inv_dtime + rhs)
    return tend + (_solve_tridiagonal_matrix_back_substitution(q, d_prime) - var) * inv_dtime


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


@gtx.field_operator
def _compute_tangential_wind(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=dims.E2C2EDim)


@gtx.field_operator
def _compute_w_horizontal_stress_tendency(
    u: fa.CellKField[wpfloat],
    v: fa.CellKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    w_ie: fa.EdgeKHalfField[wpfloat],
    km_ic: fa.CellKHalfField[wpfloat],
    km_iv: fa.VertexKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half_v: fa.VertexKHalfField[wpfloat],
    rbf_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    edge_cell_length: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    vt_e = _compute_tangential_wind(vn, rbf_coeff_e)

    # the normal wind's vertical shear at the two cell centres (E2C)
    dvn_up = (
        u(E2C[1])(dims.KHalfDim - 0.5) - u(E2C[1])(dims.KHalfDim + 0.5)
    ) * primal_normal_cell_x[E2CDim(1)] + (
        v(E2C[1])(dims.KHalfDim - 0.5) - v(E2C[1])(dims.KHalfDim + 0.5)
    ) * primal_normal_cell_y[E2CDim(1)]
    flux_up_c = km_ic(E2C[1]) * (
        dvn_up * inv_ddqz_z_half(E2C[1])
        + (w_vert(E2C2V[3]) - w_ie) * wpfloat("2.0") * inv_vert_vert_length
    )
    dvn_dn = (
        u(E2C[0])(dims.KHalfDim - 0.5) - u(E2C[0])(dims.KHalfDim + 0.5)
    ) * primal_normal_cell_x[E2CDim(0)] + (
        v(E2C[0])(dims.KHalfDim - 0.5) - v(E2C[0])(dims.KHalfDim + 0.5)
    ) * primal_normal_cell_y[E2CDim(0)]
    flux_dn_c = km_ic(E2C[0]) * (
        dvn_dn * inv_ddqz_z_half(E2C[0])
        + (w_ie - w_vert(E2C2V[2])) * wpfloat("2.0") * inv_vert_vert_length
    )

    # the tangential wind's vertical shear at the edge's two vertices (E2C2V 0 and 1)
    vt_up_above = (
        u_vert(E2C2V[1])(dims.KHalfDim - 0.5) * dual_normal_vert_x[E2C2VDim(1)]
        + v_vert(E2C2V[1])(dims.KHalfDim - 0.5) * dual_normal_vert_y[E2C2VDim(1)]
        + vt_e(dims.KHalfDim - 0.5)
    )
    vt_up_below = (
        u_vert(E2C2V[1])(dims.KHalfDim + 0.5) * dual_normal_vert_x[E2C2VDim(1)]
        + v_vert(E2C2V[1])(dims.KHalfDim + 0.5) * dual_normal_vert_y[E2C2VDim(1)]
        + vt_e(dims.KHalfDim + 0.5)
    )
    dvt_up = wpfloat("0.5") * vt_up_above - wpfloat("0.5") * vt_up_below
    flux_up_v = km_iv(E2C2V[1]) * (
        dvt_up * inv_ddqz_z_half_v(E2C2V[1])
        + tangent_orientation * (w_vert(E2C2V[1]) - w_ie) / edge_cell_length[E2CDim(1)]
    )
    vt_dn_above = (
        u_vert(E2C2V[0])(dims.KHalfDim - 0.5) * dual_normal_vert_x[E2C2VDim(0)]
        + v_vert(E2C2V[0])(dims.KHalfDim - 0.5) * dual_normal_vert_y[E2C2VDim(0)]
        + vt_e(dims.KHalfDim - 0.5)
    )
    vt_dn_below = (
        u_vert(E2C2V[0])(dims.KHalfDim + 0.5) * dual_normal_vert_x[E2C2VDim(0)]
        + v_vert(E2C2V[0])(dims.KHalfDim + 0.5) * dual_normal_vert_y[E2C2VDim(0)]
        + vt_e(dims.KHalfDim + 0.5)
    )
    dvt_dn = wpfloat("0.5") * vt_dn_above - wpfloat("0.5") * vt_dn_below
    flux_dn_v = km_iv(E2C2V[0]) * (
        dvt_dn * inv_ddqz_z_half_v(E2C2V[0])
        + tangent_orientation * (w_ie - w_vert(E2C2V[0])) / edge_cell_length[E2CDim(0)]
    )

    return (flux_up_c - flux_dn_c) * inv_dual_edge_length + (
        flux_up_v - flux_dn_v
    ) * tangent_orientation * wpfloat("2.0") * inv_primal_edge_length


@gtx.field_operator
def _solve_w_vertical_diffusion(
    w: fa.CellKHalfField[wpfloat],
    inv_rho_ic: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    tend: fa.CellKHalfField[wpfloat],
    dtime: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    z_1by3 = wpfloat("1.0") / wpfloat("3.0")
    inv_air_mass = inv_rho_ic * inv_ddqz_z_half
    rhs = (
        wpfloat("2.0")
        * inv_air_mass
        * (
            km_c(dims.KHalfDim + 0.5) * z_1by3 * div_c(dims.KHalfDim + 0.5)
            - km_c(dims.KHalfDim - 0.5) * z_1by3 * div_c(dims.KHalfDim - 0.5)
        )
    )
    a, b, c = _assemble_vertical_diffusion_matrix_on_cell_half_levels(
        km_c, inv_ddqz_z_full, inv_air_mass, wpfloat("2.0"), minlvl, maxlvl
    )
    b = concat_where(
        dims.KHalfDim > minlvl,
        b,
        b
        + wpfloat("2.0")
        * km_c(dims.KHalfDim - 0.5)
        * inv_ddqz_z_full(dims.KHalfDim - 0.5)
        * inv_air_mass,
    )
    b = concat_where(
        dims.KHalfDim < maxlvl,
        b,
        b
        + wpfloat("2.0")
        * km_c(dims.KHalfDim + 0.5)
        * inv_ddqz_z_full(dims.KHalfDim + 0.5)
        * inv_air_mass,
    )
    return _solve_implicit_vertical_diffusion_on_cell_half_levels(w, a, b, c, rhs, tend, dtime)


@gtx.field_operator
def _compute_w_diffusion_tendency_and_update(
    w: fa.CellKHalfField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    horizontal_stress_tendency: fa.EdgeKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    dtime: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> tuple[fa.CellKHalfField[wpfloat], fa.CellKHalfField[wpfloat]]:
    inv_rho_ic = wpfloat("1.0") / rho_ic
    horizontal_tendency = inv_rho_ic * neighbor_sum(
        horizontal_stress_tendency(C2E) * e_bln_c_s, axis=C2EDim
    )
    tend_w = _solve_w_vertical_diffusion(
        w=w,
        inv_rho_ic=inv_rho_ic,
        inv_ddqz_z_half=inv_ddqz_z_half,
        inv_ddqz_z_full=inv_ddqz_z_full,
        km_c=km_c,
        div_c=div_c,
        tend=horizontal_tendency,
        dtime=dtime,
        minlvl=minlvl,
        maxlvl=maxlvl,
    )
    return tend_w, w + tend_w * dtime


@gtx.field_operator
def _zero_on_cell_half_levels() -> fa.CellKHalfField[wpfloat]:
    return broadcast(wpfloat("0.0"), (dims.CellDim, dims.KHalfDim))


@gtx.field_operator
def _diffuse_scalar_vertically(
    var: fa.CellKField[wpfloat],
    km_ic: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    inv_rho: fa.CellKField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[wpfloat],
    rturb_prandtl: wpfloat,
    dtime: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    """One implicit step of a full-level scalar's vertical diffusion, the
    diffusivity on half levels (a, b, c from the matrix on cells)."""
    zero = wpfloat("0.0") * var
    a, b, c = _assemble_vertical_diffusion_matrix_on_cells(
        km_ic, inv_ddqz_z_half, inv_rho * inv_ddqz_z_full, rturb_prandtl, minlvl, maxlvl
    )
    tend = _solve_implicit_vertical_diffusion_on_cells(var, a, b, c, zero, zero, dtime)
    return var + tend * dtime, tend


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_w_diffusion_tendency_and_update(
    w: fa.CellKHalfField[wpfloat],
    u: fa.CellKField[wpfloat],
    v: fa.CellKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    w_ie: fa.EdgeKHalfField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    km_ic: fa.CellKHalfField[wpfloat],
    km_iv: fa.VertexKHalfField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half_v: fa.VertexKHalfField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    rbf_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    edge_cell_length: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    horizontal_stress_tendency: fa.EdgeKHalfField[wpfloat],
    tend_w: fa.CellKHalfField[wpfloat],
    new_w: fa.CellKHalfField[wpfloat],
    theta: fa.CellKField[wpfloat],
    inv_rho: fa.CellKField[wpfloat],
    new_theta: fa.CellKField[wpfloat],
    tend_theta: fa.CellKField[wpfloat],
    rturb_prandtl: wpfloat,
    dtime: wpfloat,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_w_horizontal_stress_tendency(
        u=u,
        v=v,
        vn=vn,
        u_vert=u_vert,
        v_vert=v_vert,
        w_vert=w_vert,
        w_ie=w_ie,
        km_ic=km_ic,
        km_iv=km_iv,
        inv_ddqz_z_half=inv_ddqz_z_half,
        inv_ddqz_z_half_v=inv_ddqz_z_half_v,
        rbf_coeff_e=rbf_coeff_e,
        primal_normal_cell_x=primal_normal_cell_x,
        primal_normal_cell_y=primal_normal_cell_y,
        dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y,
        edge_cell_length=edge_cell_length,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length,
        inv_dual_edge_length=inv_dual_edge_length,
        out=horizontal_stress_tendency,
        domain={
            dims.EdgeDim: (edge_start, edge_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _compute_w_diffusion_tendency_and_update(
        w=w,
        rho_ic=rho_ic,
        km_c=km_c,
        div_c=div_c,
        horizontal_stress_tendency=horizontal_stress_tendency,
        inv_ddqz_z_half=inv_ddqz_z_half,
        inv_ddqz_z_full=inv_ddqz_z_full,
        e_bln_c_s=e_bln_c_s,
        dtime=dtime,
        minlvl=vertical_start,
        maxlvl=vertical_end - 1,
        out=(tend_w, new_w),
        domain={
            dims.CellDim: (cell_start, cell_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _zero_on_cell_half_levels(
        out=new_w,
        domain={
            dims.CellDim: (cell_start, cell_end),
            dims.KHalfDim: (vertical_start - 1, vertical_start),
        },
    )
    _zero_on_cell_half_levels(
        out=new_w,
        domain={
            dims.CellDim: (cell_start, cell_end),
            dims.KHalfDim: (vertical_end, vertical_end + 1),
        },
    )
    _diffuse_scalar_vertically(
        theta,
        km_ic,
        inv_ddqz_z_half,
        inv_rho,
        inv_ddqz_z_full,
        rturb_prandtl,
        dtime,
        vertical_start - 1,
        vertical_end - 1,
        out=(new_theta, tend_theta),
        domain={
            dims.CellDim: (cell_start, cell_end),
            dims.KDim: (vertical_start - 1, vertical_end),
        },
    )


def solve_tridiagonal(a, b, c, d):
    """x of ``a x[k-1] + b x[k] + c x[k+1] = d`` per row (a[:, 0], c[:, -1] unused)."""
    n = b.shape[1]
    x = np.empty_like(d)
    for i in range(b.shape[0]):
        m = np.diag(b[i]) + np.diag(a[i, 1:], -1) + np.diag(c[i, :-1], 1)
        x[i] = np.linalg.solve(m, d[i])
    assert x.shape[1] == n
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(1, NLEV), (2, NLEV - 2)])
def test_w_diffusion(backend, levels):
    vs, ve = levels
    cs, ce = 1, NC - 1
    nh, dtime, prandtl = NLEV + 1, 30.0, 0.33
    e2c, c2e, e2c2v, e2c2e = (TABLES[k] for k in ("E2C", "C2E", "E2C2V", "E2C2E"))

    def pos(*shape):
        return RNG.uniform(0.5, 1.5, shape)

    a = dict(
        w=RNG.standard_normal((NC, nh)), u=RNG.standard_normal((NC, NLEV)),
        v=RNG.standard_normal((NC, NLEV)), vn=RNG.standard_normal((NE, NLEV)),
        rho_ic=pos(NC, nh), u_vert=RNG.standard_normal((NV, NLEV)),
        v_vert=RNG.standard_normal((NV, NLEV)), w_vert=RNG.standard_normal((NV, nh)),
        w_ie=RNG.standard_normal((NE, nh)), km_c=pos(NC, NLEV), km_ic=pos(NC, nh),
        km_iv=pos(NV, nh), div_c=RNG.standard_normal((NC, NLEV)),
        inv_ddqz_z_full=pos(NC, NLEV) * 0.1, inv_ddqz_z_half=pos(NC, nh) * 0.1,
        inv_ddqz_z_half_v=pos(NV, nh) * 0.1, e_bln_c_s=pos(NC, 3) / 3,
        rbf_coeff_e=RNG.standard_normal((NE, 4)),
        primal_normal_cell_x=RNG.standard_normal((NE, 2)),
        primal_normal_cell_y=RNG.standard_normal((NE, 2)),
        dual_normal_vert_x=RNG.standard_normal((NE, 4)),
        dual_normal_vert_y=RNG.standard_normal((NE, 4)),
        edge_cell_length=pos(NE, 2), tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        inv_primal_edge_length=pos(NE), inv_vert_vert_length=pos(NE),
        inv_dual_edge_length=pos(NE), theta=RNG.uniform(280.0, 320.0, (NC, NLEV)),
        inv_rho=pos(NC, NLEV))
    base = dict(horizontal_stress_tendency=RNG.random((NE, nh)), tend_w=RNG.random((NC, nh)),
                new_w=RNG.random((NC, nh)), new_theta=RNG.random((NC, NLEV)),
                tend_theta=RNG.random((NC, NLEV)))
    got = {k: x.copy() for k, x in base.items()}
    compute_w_diffusion_tendency_and_update(
        **a, **got, rturb_prandtl=prandtl, dtime=dtime, edge_start=0, edge_end=NE,
        cell_start=cs, cell_end=ce, vertical_start=vs, vertical_end=ve,
        offset_provider=TABLES, backend=backend)

    g = types.SimpleNamespace(**a)
    h = np.arange(vs, ve)              # the half levels of the system
    # the horizontal stress at edges, on half levels vs..ve-1 (full levels h-1 and h)
    vt_e = (g.rbf_coeff_e[:, :, None] * g.vn[e2c2e]).sum(1)
    c0, c1 = e2c[:, 0], e2c[:, 1]
    v0, v1, v2, v3 = (e2c2v[:, j] for j in range(4))
    pnx, pny, dnx, dny = (g.primal_normal_cell_x, g.primal_normal_cell_y,
                          g.dual_normal_vert_x, g.dual_normal_vert_y)

    def col(x):
        return x[:, None]

    def dvn(c, j):
        return ((g.u[c][:, h - 1] - g.u[c][:, h]) * col(pnx[:, j])
                + (g.v[c][:, h - 1] - g.v[c][:, h]) * col(pny[:, j]))

    def vt(vx, j, lev):
        return (g.u_vert[vx][:, lev] * col(dnx[:, j]) + g.v_vert[vx][:, lev] * col(dny[:, j])
                + vt_e[:, lev])

    w_ie, ivvl = g.w_ie[:, h], col(g.inv_vert_vert_length)
    flux_up_c = g.km_ic[c1][:, h] * (dvn(c1, 1) * g.inv_ddqz_z_half[c1][:, h]
                                     + (g.w_vert[v3][:, h] - w_ie) * 2 * ivvl)
    flux_dn_c = g.km_ic[c0][:, h] * (dvn(c0, 0) * g.inv_ddqz_z_half[c0][:, h]
                                     + (w_ie - g.w_vert[v2][:, h]) * 2 * ivvl)
    to = col(g.tangent_orientation)
    flux_up_v = g.km_iv[v1][:, h] * (
        (0.5 * vt(v1, 1, h - 1) - 0.5 * vt(v1, 1, h)) * g.inv_ddqz_z_half_v[v1][:, h]
        + to * (g.w_vert[v1][:, h] - w_ie) / col(g.edge_cell_length[:, 1]))
    flux_dn_v = g.km_iv[v0][:, h] * (
        (0.5 * vt(v0, 0, h - 1) - 0.5 * vt(v0, 0, h)) * g.inv_ddqz_z_half_v[v0][:, h]
        + to * (w_ie - g.w_vert[v0][:, h]) / col(g.edge_cell_length[:, 0]))
    stress = base["horizontal_stress_tendency"].copy()
    stress[:, vs:ve] = ((flux_up_c - flux_dn_c) * col(g.inv_dual_edge_length)
                        + (flux_up_v - flux_dn_v) * to * 2 * col(g.inv_primal_edge_length))

    # the implicit vertical diffusion of w on half levels vs..ve-1
    inv_rho_ic = 1.0 / g.rho_ic[:, h]
    hor = inv_rho_ic * (stress[c2e][:, :, vs:ve] * g.e_bln_c_s[:, :, None]).sum(1)
    iam = inv_rho_ic * g.inv_ddqz_z_half[:, h]
    km, dz = g.km_c, g.inv_ddqz_z_full
    rhs = 2 * iam * (km[:, h] / 3 * g.div_c[:, h] - km[:, h - 1] / 3 * g.div_c[:, h - 1])
    lower = -2 * km[:, h - 1] * dz[:, h - 1] * iam
    upper = -2 * km[:, h] * dz[:, h] * iam
    aa = np.where(h > vs, lower, 0.0)
    cc = np.where(h < ve - 1, upper, 0.0)
    bb = -aa - cc - np.where(h > vs, 0.0, lower) - np.where(h < ve - 1, 0.0, upper)
    x = solve_tridiagonal(aa, 1 / dtime + bb, cc, g.w[:, h] / dtime + rhs)
    tend = hor + (x - g.w[:, h]) / dtime
    want_tend, want_w = base["tend_w"].copy(), base["new_w"].copy()
    want_tend[cs:ce, vs:ve] = tend[cs:ce]
    want_w[cs:ce, vs:ve] = (g.w[:, h] + tend * dtime)[cs:ce]
    want_w[cs:ce, vs - 1] = want_w[cs:ce, ve] = 0.0

    # a full-level scalar on levels vs-1..ve-1, diffusivities on the half levels between
    k = np.arange(vs - 1, ve)
    iam = g.inv_rho[:, k] * g.inv_ddqz_z_full[:, k]
    aa = np.where(k > vs - 1, -prandtl * g.km_ic[:, k] * g.inv_ddqz_z_half[:, k] * iam, 0.0)
    cc = np.where(k < ve - 1, -prandtl * g.km_ic[:, k + 1] * g.inv_ddqz_z_half[:, k + 1] * iam,
                  0.0)
    th = g.theta[:, k]
    x = solve_tridiagonal(aa, 1 / dtime - aa - cc, cc, th / dtime)
    want_theta, want_ttheta = base["new_theta"].copy(), base["tend_theta"].copy()
    want_ttheta[cs:ce, vs - 1:ve] = ((x - th) / dtime)[cs:ce]
    want_theta[cs:ce, vs - 1:ve] = x[cs:ce]
    check(got, dict(horizontal_stress_tendency=stress, tend_w=want_tend, new_w=want_w,
                    tend_theta=want_ttheta), rtol=1e-9, atol=1e-12)
    check(got, dict(new_theta=want_theta), rtol=1e-12)


# ================================================================== pressure, and w's forward sweep
#
# icon4py's diagnostics: the surface pressure extrapolated from the lowest full
# levels into the surface row of the half-level pressure, the hydrostatic
# pressure's backward scan over KDim reading that row with ``KDim + 0.5`` (a
# ``bool`` first-level flag in its state), and the interfaces copied back to
# half levels.  Then the nonhydro solver's forward sweep for w, a mixed
# precision scan over KHalfDim on half-level coefficients built from
# full-level ``z_beta(KHalfDim ∓ 0.5)`` and half-level ``z_alpha(KHalfDim ∓ 1)``.


class PhysicsConstants:
    rd = 287.04
    cpd = 1004.64
    grav = 9.80665
    p0ref = 100000.0
    cpd_o_rd = cpd / rd
    grav_o_rd = grav / rd


@gtx.field_operator
def _compute_surface_pressure(
    exner: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
    ddqz_z_full: fa.CellKField[ta.wpfloat],
) -> fa.CellKHalfField[ta.wpfloat]:
    surface_pressure = PhysicsConstants.p0ref * exp(
        PhysicsConstants.cpd_o_rd * log(exner(dims.KHalfDim - 2.5))
        + PhysicsConstants.grav_o_rd
        * (
            ddqz_z_full(dims.KHalfDim - 0.5) / virtual_temperature(dims.KHalfDim - 0.5)
            + ddqz_z_full(dims.KHalfDim - 1.5) / virtual_temperature(dims.KHalfDim - 1.5)
            + 0.5 * ddqz_z_full(dims.KHalfDim - 2.5) / virtual_temperature(dims.KHalfDim - 2.5)
        )
    )
    return surface_pressure


@gtx.scan_operator(axis=dims.KDim, forward=False, init=(0.0, 0.0, True))
def _scan_pressure(
    state: tuple[ta.wpfloat, ta.wpfloat, bool],
    ddqz_z_full: ta.wpfloat,
    virtual_temperature: ta.wpfloat,
    surface_pressure: ta.wpfloat,
):
    pressure_interface = (
        surface_pressure * exp(-PhysicsConstants.grav_o_rd * ddqz_z_full / virtual_temperature)
        if state[2]
        else state[1] * exp(-PhysicsConstants.grav_o_rd * ddqz_z_full / virtual_temperature)
    )
    pressure = (
        sqrt(surface_pressure * pressure_interface)
        if state[2]
        else sqrt(state[1] * pressure_interface)
    )
    return pressure, pressure_interface, False


@gtx.field_operator
def _compute_hydrostatic_pressure_on_model_levels(
    ddqz_z_full: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
    pressure_ifc: fa.CellKHalfField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    pressure, pressure_ifc_on_model_levels, _ = _scan_pressure(
        ddqz_z_full, virtual_temperature, pressure_ifc(dims.KDim + 0.5)
    )
    return pressure, pressure_ifc_on_model_levels


@gtx.field_operator
def _copy_model_level_below_to_half_levels_on_cells(
    field: fa.CellKField[ta.wpfloat],
) -> fa.CellKHalfField[ta.wpfloat]:
    """Half level h takes full level h, the level below it."""
    return field(dims.KHalfDim + 0.5)


@gtx.scan_operator(
    axis=dims.KHalfDim, forward=True, init=(vpfloat("0.0"), wpfloat("0.0"))
)
def _solve_tridiagonal_matrix_forward_sweep_on_half_levels_mixed_precision(
    state_kminus1: tuple[vpfloat, wpfloat],
    a: vpfloat,
    b: vpfloat,
    c: vpfloat,
    d: wpfloat,
) -> tuple[vpfloat, wpfloat]:
    q_kminus1, d_prime_kminus1 = state_kminus1
    normalization = vpfloat("1.0") / (b + a * q_kminus1)
    q = (vpfloat("0.0") - c) * normalization
    d_prime = (d - astype(a, wpfloat) * d_prime_kminus1) * astype(normalization, wpfloat)
    return q, d_prime


@gtx.field_operator
def _solve_tridiagonal_matrix_for_w_forward_sweep(
    vwind_impl_wgt: fa.CellField[wpfloat],
    theta_v_ic: fa.CellKHalfField[wpfloat],
    ddqz_z_half: fa.CellKHalfField[vpfloat],
    z_alpha: fa.CellKHalfField[vpfloat],
    z_beta: fa.CellKField[vpfloat],
    z_w_expl: fa.CellKHalfField[wpfloat],
    z_exner_expl: fa.CellKField[wpfloat],
    dtime: wpfloat,
    cpd: wpfloat,
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[wpfloat]]:
    ddqz_z_half_wp = astype(ddqz_z_half, wpfloat)
    z_gamma_vp = astype(dtime * cpd * vwind_impl_wgt * theta_v_ic / ddqz_z_half_wp, vpfloat)
    z_a = (vpfloat("0.0") - z_gamma_vp) * z_beta(dims.KHalfDim - 0.5) * z_alpha(dims.KHalfDim - 1)
    z_c = (vpfloat("0.0") - z_gamma_vp) * z_beta(dims.KHalfDim + 0.5) * z_alpha(dims.KHalfDim + 1)
    z_b = vpfloat("1.0") + z_gamma_vp * z_alpha * (
        z_beta(dims.KHalfDim - 0.5) + z_beta(dims.KHalfDim + 0.5)
    )
    z_gamma_wp = astype(z_gamma_vp, wpfloat)
    w_prep = z_w_expl - z_gamma_wp * (
        z_exner_expl(dims.KHalfDim - 0.5) - z_exner_expl(dims.KHalfDim + 0.5)
    )
    z_q_res, w_res = _solve_tridiagonal_matrix_forward_sweep_on_half_levels_mixed_precision(
        a=z_a, b=z_b, c=z_c, d=w_prep
    )
    return z_q_res, w_res


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def pressure_and_w_forward_sweep(
    exner: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
    ddqz_z_full: fa.CellKField[ta.wpfloat],
    pressure: fa.CellKField[ta.wpfloat],
    pressure_ifc_on_model_levels: fa.CellKField[ta.wpfloat],
    pressure_ifc: fa.CellKHalfField[ta.wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat],
    theta_v_ic: fa.CellKHalfField[wpfloat],
    ddqz_z_half: fa.CellKHalfField[vpfloat],
    z_alpha: fa.CellKHalfField[vpfloat],
    z_beta: fa.CellKField[vpfloat],
    z_w_expl: fa.CellKHalfField[wpfloat],
    z_exner_expl: fa.CellKField[wpfloat],
    z_q: fa.CellKHalfField[vpfloat],
    w: fa.CellKHalfField[wpfloat],
    dtime: wpfloat,
    cpd: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_surface_pressure(
        exner=exner,
        virtual_temperature=virtual_temperature,
        ddqz_z_full=ddqz_z_full,
        out=pressure_ifc,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_end, vertical_end + 1),
        },
    )
    _compute_hydrostatic_pressure_on_model_levels(
        ddqz_z_full,
        virtual_temperature,
        pressure_ifc,
        out=(pressure, pressure_ifc_on_model_levels),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _copy_model_level_below_to_half_levels_on_cells(
        pressure_ifc_on_model_levels,
        out=pressure_ifc,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _solve_tridiagonal_matrix_for_w_forward_sweep(
        vwind_impl_wgt=vwind_impl_wgt,
        theta_v_ic=theta_v_ic,
        ddqz_z_half=ddqz_z_half,
        z_alpha=z_alpha,
        z_beta=z_beta,
        z_w_expl=z_w_expl,
        z_exner_expl=z_exner_expl,
        dtime=dtime,
        cpd=cpd,
        out=(z_q, w),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (1, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("vertical_start", [0, 2])
def test_pressure_and_w_forward_sweep(backend, vertical_start):
    vs, ve, hs, he = vertical_start, NLEV, 1, NC - 1
    nh, dtime, cpd = NLEV + 1, 10.0, 1004.64
    a = dict(
        exner=RNG.uniform(0.7, 1.0, (NC, NLEV)),
        virtual_temperature=RNG.uniform(220.0, 300.0, (NC, NLEV)),
        ddqz_z_full=RNG.uniform(50.0, 800.0, (NC, NLEV)),
        vwind_impl_wgt=RNG.uniform(0.5, 0.7, NC), theta_v_ic=RNG.uniform(280.0, 320.0, (NC, nh)),
        ddqz_z_half=RNG.uniform(5e5, 1e6, (NC, nh)).astype(np.float32),
        z_alpha=RNG.uniform(0.5, 1.0, (NC, nh)).astype(np.float32),
        z_beta=RNG.uniform(0.5, 1.0, (NC, NLEV)).astype(np.float32),
        z_w_expl=RNG.standard_normal((NC, nh)), z_exner_expl=RNG.standard_normal((NC, NLEV)))
    base = dict(pressure=RNG.random((NC, NLEV)),
                pressure_ifc_on_model_levels=RNG.random((NC, NLEV)),
                pressure_ifc=RNG.random((NC, nh)), z_q=RNG.random((NC, nh)).astype(np.float32),
                w=RNG.random((NC, nh)))
    got = {k: x.copy() for k, x in base.items()}
    pressure_and_w_forward_sweep(**a, **got, dtime=dtime, cpd=cpd, horizontal_start=hs,
                                 horizontal_end=he, vertical_start=vs, vertical_end=ve,
                                 offset_provider={}, backend=backend)

    g = types.SimpleNamespace(**a)
    pc = PhysicsConstants
    dz_tv = g.ddqz_z_full / g.virtual_temperature
    ps = pc.p0ref * np.exp(pc.cpd_o_rd * np.log(g.exner[:, -3])
                           + pc.grav_o_rd * (dz_tv[:, -1] + dz_tv[:, -2] + 0.5 * dz_tv[:, -3]))
    p, pint = base["pressure"].copy(), base["pressure_ifc_on_model_levels"].copy()
    below_ = ps
    for k in range(ve - 1, vs - 1, -1):
        pint[:, k] = below_ * np.exp(-pc.grav_o_rd * dz_tv[:, k])
        p[:, k] = np.sqrt(below_ * pint[:, k])
        below_ = pint[:, k]
    p_ifc = base["pressure_ifc"].copy()
    p_ifc[:, ve] = ps
    p_ifc[:, vs:ve] = pint[:, vs:ve]

    # the forward sweep on half levels 1..nlev-1, in vpfloat where the stencil is
    h = np.arange(1, ve)
    f32 = np.float32
    gamma = (dtime * cpd * g.vwind_impl_wgt[:, None] * g.theta_v_ic[:, h]
             / g.ddqz_z_half[:, h].astype(np.float64)).astype(f32)
    beta_up, beta_dn = g.z_beta[:, h - 1], g.z_beta[:, h]
    za = (f32(0) - gamma) * beta_up * g.z_alpha[:, h - 1]
    zc = (f32(0) - gamma) * beta_dn * g.z_alpha[:, h + 1]
    zb = f32(1) + gamma * g.z_alpha[:, h] * (beta_up + beta_dn)
    w_prep = g.z_w_expl[:, h] - gamma.astype(np.float64) * (g.z_exner_expl[:, h - 1]
                                                             - g.z_exner_expl[:, h])
    q_prev, d_prev = np.zeros(NC, f32), np.zeros(NC)
    zq, wres = base["z_q"].copy(), base["w"].copy()
    for j, lev in enumerate(h):
        norm = f32(1) / (zb[:, j] + za[:, j] * q_prev)
        q_prev = (f32(0) - zc[:, j]) * norm
        d_prev = (w_prep[:, j] - za[:, j].astype(np.float64) * d_prev) * norm.astype(np.float64)
        zq[:, lev], wres[:, lev] = q_prev, d_prev
    rows = slice(hs, he)
    check(got, dict(pressure=inside(p, base["pressure"], hs, he, 0, NLEV),
                    pressure_ifc_on_model_levels=inside(pint, base["pressure_ifc_on_model_levels"],
                                                        hs, he, 0, NLEV),
                    pressure_ifc=inside(p_ifc, base["pressure_ifc"], hs, he, 0, nh)), rtol=1e-12)
    check(got, dict(z_q=inside(zq, base["z_q"], hs, he, 0, nh),
                    w=inside(wres, base["w"], hs, he, 0, nh)), rtol=1e-4, atol=1e-6)
    assert (got["z_q"][rows, 1:NLEV] != base["z_q"][rows, 1:NLEV]).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_write_half_levels_from_full_levels(backend):
    """Field operators called directly: ``nlev + 1`` half levels written from
    ``nlev`` full levels on the call's ``domain=``, each row range its own call."""
    nh = NLEV + 1
    wgtfac_e = RNG.uniform(0.2, 0.8, (NE, nh)).astype(np.float32)
    vn = RNG.standard_normal((NE, NLEV))
    wgtfacq_e = RNG.uniform(0.2, 0.8, (NE, NLEV)).astype(np.float32)
    vn_ie = np.full((NE, nh), -1.0, dtype=np.float32)
    _interpolate_to_half_levels(wgtfac_e, vn, out=vn_ie,
                                domain={dims.EdgeDim: (0, NE), dims.KHalfDim: (0, NLEV)},
                                backend=backend)
    _extrapolate_at_top(wgtfacq_e, vn, out=vn_ie,
                        domain={dims.EdgeDim: (0, NE), dims.KHalfDim: (NLEV, nh)},
                        backend=backend)
    want = np.empty((NE, nh))
    w = wgtfac_e[:, 1:NLEV].astype(np.float64)
    want[:, 0] = vn[:, 0]
    want[:, 1:NLEV] = w * vn[:, 1:] + (1 - w) * vn[:, :-1]
    q = wgtfacq_e.astype(np.float64) * vn
    want[:, NLEV] = q[:, -1] + q[:, -2] + q[:, -3]
    np.testing.assert_allclose(vn_ie, want, rtol=2e-6, atol=1e-6)

    p_cc = RNG.standard_normal((NC, NLEV))
    hgt = RNG.uniform(50.0, 500.0, (NC, NLEV))
    p_face = np.zeros((NC, nh))
    _compute_ppm_quadratic_face_values(p_cc, hgt, out=p_face,
                                       domain={dims.CellDim: (2, NC),
                                               dims.KHalfDim: (1, NLEV)},
                                       backend=backend)
    want = np.zeros((NC, nh))
    hh, hm, cc, cm = hgt[:, 1:], hgt[:, :-1], p_cc[:, 1:], p_cc[:, :-1]
    want[2:, 1:NLEV] = (cc * (1 - hh / hm) + hh / (hm + hh) * (hh / hm * cc + cm))[2:]
    np.testing.assert_allclose(p_face, want, rtol=1e-12)


# ================================================================== vertical interpolation weights
#
# icon4py's metrics: the interpolation weight to half levels (``KHalfDim ± 1``,
# ``± 2`` on the interface heights, assembled on ``nlev``) and the quadratic
# extrapolation weights to the top and the surface: full-level fields read
# from the half-level interface heights at ``KDim ± 0.5`` to ``± 2.5``, each
# level's shift chosen by nested ``concat_where`` on ``KDim == 0``, ``== 1``
# (``== nlev - 1``, ``== nlev - 2``), a tuple of three weights in between.


@gtx.field_operator
def with_boundaries_on_half_levels_on_cells(
    top: fa.CellKHalfField[wpfloat],
    interior: fa.CellKHalfField[wpfloat],
    bottom: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    result = concat_where((dims.KHalfDim > 0) & (dims.KHalfDim < nlev), interior, 0.0)
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
def _compute_quadratic_extrapolation_weights(
    za: fa.CellKField[wpfloat],
    zb: fa.CellKField[wpfloat],
    zc: fa.CellKField[wpfloat],
    zd: fa.CellKField[wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z1 = wpfloat("0.5") * (zb - za)
    z2 = wpfloat("0.5") * (zb + zc) - za
    z3 = wpfloat("0.5") * (zc + zd) - za
    w3 = z1 * z2 / (z2 - z3) / (z1 - z3)
    w2 = (z1 - w3 * (z1 - z3)) / (z1 - z2)
    return wpfloat("1.0") - (w2 + w3), w2, w3


@gtx.field_operator
def _compute_wgtfacq1_c(z_ifc: fa.CellKHalfField[wpfloat]) -> fa.CellKField[wpfloat]:
    """Full levels 0..2 carry the top weights of interfaces 0..3 (from full
    level k, interface j is ``KDim + (j - k) - 0.5``)."""
    za = concat_where(
        dims.KDim == 0,
        z_ifc(dims.KDim - 0.5),
        concat_where(dims.KDim == 1, z_ifc(dims.KDim - 1.5), z_ifc(dims.KDim - 2.5)),
    )
    zb = concat_where(
        dims.KDim == 0,
        z_ifc(dims.KDim + 0.5),
        concat_where(dims.KDim == 1, z_ifc(dims.KDim - 0.5), z_ifc(dims.KDim - 1.5)),
    )
    zc = concat_where(
        dims.KDim == 0,
        z_ifc(dims.KDim + 1.5),
        concat_where(dims.KDim == 1, z_ifc(dims.KDim + 0.5), z_ifc(dims.KDim - 0.5)),
    )
    zd = concat_where(
        dims.KDim == 0,
        z_ifc(dims.KDim + 2.5),
        concat_where(dims.KDim == 1, z_ifc(dims.KDim + 1.5), z_ifc(dims.KDim + 0.5)),
    )
    w1, w2, w3 = _compute_quadratic_extrapolation_weights(za, zb, zc, zd)
    return concat_where(dims.KDim == 0, w1, concat_where(dims.KDim == 1, w2, w3))


@gtx.field_operator
def _compute_wgtfacq_c(
    z_ifc: fa.CellKHalfField[wpfloat], nlev: gtx.int32
) -> fa.CellKField[wpfloat]:
    """Full levels nlev-3..nlev-1 carry the surface weights of interfaces
    nlev..nlev-3, the level nearest the surface the first."""
    za = concat_where(
        dims.KDim == nlev - 1,
        z_ifc(dims.KDim + 0.5),
        concat_where(dims.KDim == nlev - 2, z_ifc(dims.KDim + 1.5), z_ifc(dims.KDim + 2.5)),
    )
    zb = concat_where(
        dims.KDim == nlev - 1,
        z_ifc(dims.KDim - 0.5),
        concat_where(dims.KDim == nlev - 2, z_ifc(dims.KDim + 0.5), z_ifc(dims.KDim + 1.5)),
    )
    zc = concat_where(
        dims.KDim == nlev - 1,
        z_ifc(dims.KDim - 1.5),
        concat_where(dims.KDim == nlev - 2, z_ifc(dims.KDim - 0.5), z_ifc(dims.KDim + 0.5)),
    )
    zd = concat_where(
        dims.KDim == nlev - 1,
        z_ifc(dims.KDim - 2.5),
        concat_where(dims.KDim == nlev - 2, z_ifc(dims.KDim - 1.5), z_ifc(dims.KDim - 0.5)),
    )
    w1, w2, w3 = _compute_quadratic_extrapolation_weights(za, zb, zc, zd)
    return concat_where(dims.KDim == nlev - 1, w1, concat_where(dims.KDim == nlev - 2, w2, w3))


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_vertical_interpolation_weights(
    z_ifc: fa.CellKHalfField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    wgtfacq1_c: fa.CellKField[wpfloat],
    wgtfacq_c: fa.CellKField[wpfloat],
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
) -> None:
    _compute_wgtfac_c(
        z_ifc=z_ifc,
        nlev=nlev,
        out=wgtfac_c,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (0, nlev + 1),
        },
    )
    _compute_wgtfacq1_c(
        z_ifc,
        out=wgtfacq1_c,
        domain={dims.CellDim: (horizontal_start, horizontal_end), dims.KDim: (0, 3)},
    )
    _compute_wgtfacq_c(
        z_ifc,
        nlev,
        out=wgtfacq_c,
        domain={dims.CellDim: (horizontal_start, horizontal_end), dims.KDim: (nlev - 3, nlev)},
    )


def quadratic_weights(za, zb, zc, zd):
    z1, z2, z3 = 0.5 * (zb - za), 0.5 * (zb + zc) - za, 0.5 * (zc + zd) - za
    w3 = z1 * z2 / (z2 - z3) / (z1 - z3)
    w2 = (z1 - w3 * (z1 - z3)) / (z1 - z2)
    return 1.0 - (w2 + w3), w2, w3


@pytest.mark.parametrize("backend", BACKENDS)
def test_vertical_interpolation_weights(backend):
    hs, he, nh = 1, NC - 1, NLEV + 1
    # interface heights falling from the model top to the surface
    z = np.cumsum(RNG.uniform(100.0, 500.0, (NC, nh))[:, ::-1], axis=1)[:, ::-1].copy()
    base = dict(wgtfac_c=RNG.random((NC, nh)), wgtfacq1_c=RNG.random((NC, NLEV)),
                wgtfacq_c=RNG.random((NC, NLEV)))
    got = {k: x.copy() for k, x in base.items()}
    compute_vertical_interpolation_weights(z, **got, nlev=NLEV, horizontal_start=hs,
                                           horizontal_end=he, offset_provider={},
                                           backend=backend)
    wgtfac = np.empty((NC, nh))
    wgtfac[:, 0] = (z[:, 1] - z[:, 0]) / (z[:, 2] - z[:, 0])
    wgtfac[:, 1:NLEV] = (z[:, :NLEV - 1] - z[:, 1:NLEV]) / (z[:, :NLEV - 1] - z[:, 2:])
    wgtfac[:, NLEV] = (z[:, NLEV - 1] - z[:, NLEV]) / (z[:, NLEV - 2] - z[:, NLEV])
    top = base["wgtfacq1_c"].copy()
    top[:, :3] = np.stack(quadratic_weights(z[:, 0], z[:, 1], z[:, 2], z[:, 3]), axis=1)
    sfc = base["wgtfacq_c"].copy()
    w1, w2, w3 = quadratic_weights(z[:, NLEV], z[:, NLEV - 1], z[:, NLEV - 2], z[:, NLEV - 3])
    sfc[:, NLEV - 3:] = np.stack((w3, w2, w1), axis=1)
    check(got, dict(wgtfac_c=inside(wgtfac, base["wgtfac_c"], hs, he, 0, nh),
                    wgtfacq1_c=inside(top, base["wgtfacq1_c"], hs, he, 0, 3),
                    wgtfacq_c=inside(sfc, base["wgtfacq_c"], hs, he, NLEV - 3, NLEV)), rtol=1e-11)


# ================================================================== normal wind advection
#
# icon4py's velocity advection for vn: the diagnostics from the normal wind (a
# tuple of five outputs on full and half levels: vn on half levels assembled
# by ``concat_where(KHalfDim < nlev)`` from the interpolation and the surface
# extrapolation, the tangential wind on half levels unless a ``bool`` says to
# keep it, the contravariant correction below ``nflatlev``), then the advective
# tendency of vn reading vn on half levels at full levels
# (``vn_on_half_levels(KDim - 0.5) - vn_on_half_levels(KDim + 0.5)``) beside
# neighbour sums over ``E2C``, ``C2E`` and ``E2V``.


@gtx.field_operator
def _compute_tangential_wind_vp(
    vn: fa.EdgeKField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    return astype(neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=dims.E2C2EDim), vpfloat)


@gtx.field_operator
def _compute_horizontal_kinetic_energy(
    vn: fa.EdgeKField[ta.wpfloat],
    vt: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    z_kin_hor_e_wp = wpfloat("0.5") * (vn * vn + astype(vt * vt, wpfloat))
    return astype(z_kin_hor_e_wp, vpfloat)


@gtx.field_operator
def _compute_contravariant_correction(
    vn: fa.EdgeKField[ta.wpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    vt: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    ddxn_z_full_wp = astype(ddxn_z_full, wpfloat)
    z_w_concorr_me_wp = vn * ddxn_z_full_wp + astype(vt * ddxt_z_full, wpfloat)
    return astype(z_w_concorr_me_wp, vpfloat)


@gtx.field_operator
def _compute_diagnostics_from_normal_wind(
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    wgtfacq_e: fa.EdgeKField[ta.vpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32,
    nlev: gtx.int32,
) -> tuple[
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKHalfField[ta.vpfloat],
    fa.EdgeKHalfField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    tangential_wind = _compute_tangential_wind_vp(vn, rbf_vec_coeff_e)
    horizontal_kinetic_energy_at_edges_on_model_levels = _compute_horizontal_kinetic_energy(
        vn, tangential_wind
    )
    vn_on_half_levels = concat_where(
        dims.KHalfDim < nlev,
        _interpolate_to_half_levels(wgtfac_e, vn),
        _extrapolate_at_top(wgtfacq_e, vn),
    )
    tangential_wind_on_half_levels = (
        _interpolate_to_half_levels(wgtfac_e, astype(tangential_wind, wpfloat))
        if not skip_compute_predictor_vertical_advection
        else tangential_wind_on_half_levels
    )
    contravariant_correction_at_edges_on_model_levels = concat_where(
        nflatlev <= dims.KDim,
        _compute_contravariant_correction(vn, ddxn_z_full, ddxt_z_full, tangential_wind),
        contravariant_correction_at_edges_on_model_levels,
    )
    return (
        tangential_wind,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        horizontal_kinetic_energy_at_edges_on_model_levels,
        contravariant_correction_at_edges_on_model_levels,
    )


@gtx.field_operator
def _interpolate_to_cell_center_vp(
    interpolant: fa.EdgeKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
) -> fa.CellKField[ta.vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    return astype(neighbor_sum(interpolant_wp(C2E) * e_bln_c_s, axis=dims.C2EDim), vpfloat)


@gtx.field_operator
def _compute_advective_normal_wind_tendency(
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    upward_vorticity_at_vertices_on_model_levels: fa.VertexKField[ta.vpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    horizontal_kinetic_energy_at_cells_on_model_levels = _interpolate_to_cell_center_vp(
        horizontal_kinetic_energy_at_edges_on_model_levels, e_bln_c_s
    )
    (
        contravariant_corrected_w_at_cells_on_model_levels_wp,
        ddqz_z_full_e_wp,
        tangential_wind_wp,
    ) = astype(
        (contravariant_corrected_w_at_cells_on_model_levels, ddqz_z_full_e, tangential_wind),
        wpfloat,
    )
    horizontal_advection = (
        horizontal_kinetic_energy_at_edges_on_model_levels
        * (coeff_gradekin[dims.E2CDim(0)] - coeff_gradekin[dims.E2CDim(1)])
        + coeff_gradekin[dims.E2CDim(1)]
        * horizontal_kinetic_energy_at_cells_on_model_levels(E2C[1])
        - coeff_gradekin[dims.E2CDim(0)]
        * horizontal_kinetic_energy_at_cells_on_model_levels(E2C[0])
    )
    vertical_advection = (
        neighbor_sum(
            c_lin_e * contravariant_corrected_w_at_cells_on_model_levels_wp(E2C), axis=dims.E2CDim
        )
        * astype((vn_on_half_levels(dims.KDim - 0.5) - vn_on_half_levels(dims.KDim + 0.5)), wpfloat)
        / ddqz_z_full_e_wp
    )
    coriolis_term = tangential_wind_wp * (
        coriolis_frequency
        + astype(
            vpfloat("0.5")
            * neighbor_sum(upward_vorticity_at_vertices_on_model_levels(E2V), axis=dims.E2VDim),
            wpfloat,
        )
    )
    normal_wind_advective_tendency_wp = -(
        astype(horizontal_advection, wpfloat) + vertical_advection + coriolis_term
    )
    return astype(normal_wind_advective_tendency_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_normal_wind_advection(
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    wgtfacq_e: fa.EdgeKField[ta.vpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    upward_vorticity_at_vertices_on_model_levels: fa.VertexKField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    normal_wind_advective_tendency: fa.EdgeKField[ta.vpfloat],
    skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
) -> None:
    full = {dims.EdgeDim: (edge_start, edge_end), dims.KDim: (0, nlev)}
    half = {dims.EdgeDim: (edge_start, edge_end), dims.KHalfDim: (0, nlev + 1)}
    interpolated = {dims.EdgeDim: (edge_start, edge_end), dims.KHalfDim: (0, nlev)}
    _compute_diagnostics_from_normal_wind(
        tangential_wind_on_half_levels,
        contravariant_correction_at_edges_on_model_levels,
        vn,
        rbf_vec_coeff_e,
        wgtfac_e,
        wgtfacq_e,
        ddxn_z_full,
        ddxt_z_full,
        skip_compute_predictor_vertical_advection,
        nflatlev,
        nlev,
        out=(
            tangential_wind,
            tangential_wind_on_half_levels,
            vn_on_half_levels,
            horizontal_kinetic_energy_at_edges_on_model_levels,
            contravariant_correction_at_edges_on_model_levels,
        ),
        domain=(full, interpolated, half, full, full),
    )
    _compute_advective_normal_wind_tendency(
        horizontal_kinetic_energy_at_edges_on_model_levels,
        upward_vorticity_at_vertices_on_model_levels,
        tangential_wind,
        vn_on_half_levels,
        contravariant_corrected_w_at_cells_on_model_levels,
        coriolis_frequency,
        e_bln_c_s,
        c_lin_e,
        coeff_gradekin,
        ddqz_z_full_e,
        out=normal_wind_advective_tendency,
        domain={dims.EdgeDim: (edge_start, edge_end), dims.KDim: (0, nlev)},
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("skip", [False, True])
def test_normal_wind_advection(backend, skip):
    nh, nflatlev, es, ee = NLEV + 1, 3, 0, NE
    f4 = np.float32
    a = dict(
        vn=RNG.standard_normal((NE, NLEV)), rbf_vec_coeff_e=RNG.standard_normal((NE, 4)) / 4,
        wgtfac_e=RNG.uniform(0.2, 0.8, (NE, nh)).astype(f4),
        wgtfacq_e=RNG.uniform(0.2, 0.8, (NE, NLEV)).astype(f4),
        ddxn_z_full=RNG.standard_normal((NE, NLEV)).astype(f4),
        ddxt_z_full=RNG.standard_normal((NE, NLEV)).astype(f4),
        upward_vorticity_at_vertices_on_model_levels=RNG.standard_normal((NV, NLEV)).astype(f4),
        contravariant_corrected_w_at_cells_on_model_levels=RNG.standard_normal(
            (NC, NLEV)).astype(f4),
        coriolis_frequency=RNG.uniform(-1e-4, 1e-4, NE), e_bln_c_s=RNG.uniform(0.2, 0.5, (NC, 3)),
        c_lin_e=RNG.uniform(0.3, 0.7, (NE, 2)),
        coeff_gradekin=RNG.standard_normal((NE, 2)).astype(f4),
        ddqz_z_full_e=RNG.uniform(50.0, 500.0, (NE, NLEV)).astype(f4))
    base = dict(
        tangential_wind_on_half_levels=RNG.standard_normal((NE, nh)).astype(f4),
        contravariant_correction_at_edges_on_model_levels=RNG.standard_normal(
            (NE, NLEV)).astype(f4),
        tangential_wind=RNG.random((NE, NLEV)).astype(f4),
        vn_on_half_levels=RNG.random((NE, nh)).astype(f4),
        horizontal_kinetic_energy_at_edges_on_model_levels=RNG.random((NE, NLEV)).astype(f4),
        normal_wind_advective_tendency=RNG.random((NE, NLEV)).astype(f4))
    got = {k: x.copy() for k, x in base.items()}
    compute_normal_wind_advection(**a, **got, skip_compute_predictor_vertical_advection=skip,
                                  nflatlev=nflatlev, nlev=NLEV, edge_start=es, edge_end=ee,
                                  offset_provider=TABLES, backend=backend)

    g = types.SimpleNamespace(**{k: np.asarray(x, dtype=np.float64) for k, x in a.items()})
    e2c, c2e, e2c2e, e2v = (TABLES[k] for k in ("E2C", "C2E", "E2C2E", "E2V"))
    vn = g.vn
    vt = (g.rbf_vec_coeff_e[:, :, None] * vn[e2c2e]).sum(1)
    hke = 0.5 * (vn * vn + vt * vt)

    def to_half(x):
        out = np.empty((NE, nh))
        out[:, 0] = x[:, 0]
        out[:, 1:NLEV] = g.wgtfac_e[:, 1:NLEV] * x[:, 1:] + (1 - g.wgtfac_e[:, 1:NLEV]) * x[:, :-1]
        q = g.wgtfacq_e * x
        out[:, NLEV] = q[:, -1] + q[:, -2] + q[:, -3]
        return out

    vn_ie = to_half(vn)
    vt_ie = np.array(base["tangential_wind_on_half_levels"], np.float64)
    if not skip:
        vt_ie[:, :NLEV] = to_half(vt)[:, :NLEV]     # the surface row is left as it was
    concorr = np.array(base["contravariant_correction_at_edges_on_model_levels"], np.float64)
    concorr[:, nflatlev:] = (vn * g.ddxn_z_full + vt * g.ddxt_z_full)[:, nflatlev:]
    ekinh = (hke[c2e] * g.e_bln_c_s[:, :, None]).sum(1)
    cg = g.coeff_gradekin
    hadv = (hke * (cg[:, :1] - cg[:, 1:]) + cg[:, 1:] * ekinh[e2c[:, 1]]
            - cg[:, :1] * ekinh[e2c[:, 0]])
    w_e = (g.c_lin_e[:, :, None] * g.contravariant_corrected_w_at_cells_on_model_levels[e2c]).sum(1)
    vadv = w_e * (vn_ie[:, :-1] - vn_ie[:, 1:]) / g.ddqz_z_full_e
    zeta = g.upward_vorticity_at_vertices_on_model_levels[e2v].sum(1)
    cor = vt * (g.coriolis_frequency[:, None] + 0.5 * zeta)
    tend = -(hadv + vadv + cor)
    want = dict(tangential_wind=vt, vn_on_half_levels=vn_ie,
                horizontal_kinetic_energy_at_edges_on_model_levels=hke,
                contravariant_correction_at_edges_on_model_levels=concorr,
                normal_wind_advective_tendency=tend)
    want["tangential_wind_on_half_levels"] = vt_ie
    check(got, want, rtol=2e-5, atol=2e-5)
