"""A sixteenth round of ICON stencils (icon4py's field operators) in icon4py's
own spelling, beside ``test_icon_stencils_ported*.py``.

First the nonhydro solver's edge diagnostics of the predictor step as one
fused field operator: rho and theta_v upwinded to the edges (Green-Gauss
gradients over ``C2E2CO``, the backward trajectory from the edge centre)
inside a ``concat_where`` on a runtime edge range whose other branch is a
tuple of ``broadcast`` zeros; the horizontal pressure gradient chosen per
level by nested ``concat_where``s (flat, terrain-following, and over
multiple levels through ``as_offset(Koff, ikoffset[E2CDim(j)])`` of an
``(Edge, E2C, K)`` ``int32`` field) with the hydrostatic correction of an
``EdgeField``; the new normal wind from its tendencies (a constant read from
an object), then GT4Py ``if`` statements on ``bool`` parameters reassigning
it through ``concat_where``s on one-sided and two-sided edge ranges; called
from a program on runtime bounds, and directly with ``out=`` a tuple of four.
Then the geometry's cartesian vectors from zonal and meridional components on
edges and on cells (a helper returning the norm, programs passing renamed
keyword arguments, a direct call on NumPy ``int32`` bounds), the cubic
intermediate tracer flux choosing each of ten coefficients through ``E2C`` by
an ``int32`` edge field (``astype`` of ``vpfloat`` sums), and the in-place
hydrostatic correction of the pressure gradient.
Last the contravariant correction brought to cell half levels with the
vertical advection of ``w`` in one field operator (``concat_where`` against
``broadcast(vpfloat("0.0"), ...)``, ``astype``, a ``KDim`` CFL region bounded
by ``maximum``, a GT4Py ``if not`` statement on a ``bool`` reassigning a
field, a tuple of four outputs on one domain).
Each group is one program (or a few direct calls), interpreted and compiled,
compared with NumPy written from the formulas."""

from __future__ import annotations

import types
from typing import TypeVar

import numpy as np
import pytest

from icon_numpy import check, inside
from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    abs,
    as_offset,
    astype,
    broadcast,
    concat_where,
    cos,
    maximum,
    minimum,
    neighbor_sum,
    sin,
    sqrt,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.E2VDim, dims.V2CDim = E2CDim, C2EDim, E2VDim, V2CDim
dims.C2E2CODim, dims.CEDim = C2E2CODim, CEDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.VertexField = Field[Dims[VertexDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float64      # icon4py's double precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat


class _PhysicsConstants:
    cpd = 1004.64
    rd = 287.04


dycore_consts = _PhysicsConstants()

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 11, 8, 8
RNG = np.random.default_rng(16001)
_TABLE_RNG = np.random.default_rng(16002)


def _distinct(n_rows, n_from, k):
    return np.array([_TABLE_RNG.choice(n_from, k, replace=False) for _ in range(n_rows)])


def _c2e2co():
    rows = []
    for c in range(NC):
        others = _TABLE_RNG.choice([x for x in range(NC) if x != c], 3, replace=False)
        rows.append([c, *others])
    return np.array(rows)


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3), "E2V": _distinct(NE, NV, 2),
          "V2C": _distinct(NV, NC, 6), "C2E2CO": _c2e2co(), "C2CE": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(16003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


def sym(*shape):
    return RNG.random(shape) - 0.5


# ================================================================== rho, theta, pressure gradient, vn
#
# The predictor's edge diagnostics: rho and theta_v upwinded to edges, the
# horizontal pressure gradient by level ranges with the hydrostatic
# correction, and the normal wind advanced by its tendencies, with the
# analysis increment and the lateral boundary tendency switched by flags.


@gtx.field_operator
def cell_horizontal_gradients_by_green_gauss_method(
    scalar_field: fa.CellKField[vpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    scalar_field_wp = astype(scalar_field, wpfloat)
    grad_x = neighbor_sum(geofac_grg_x * scalar_field_wp(C2E2CO), axis=dims.C2E2CODim)
    grad_y = neighbor_sum(geofac_grg_y * scalar_field_wp(C2E2CO), axis=dims.C2E2CODim)
    return astype((grad_x, grad_y), vpfloat)


@gtx.field_operator
def _compute_backward_trajectory_from_edge_center(
    p_vn: fa.EdgeKField[wpfloat],
    p_vt: fa.EdgeKField[vpfloat],
    pos_on_tplane_e_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    pos_on_tplane_e_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    p_dthalf: wpfloat,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    lvn_pos = where(p_vn >= wpfloat("0.0"), True, False)
    z_ntdistv_bary_1 = -(
        p_vn * p_dthalf
        + where(lvn_pos, pos_on_tplane_e_1[dims.E2CDim(0)], pos_on_tplane_e_1[dims.E2CDim(1)])
    )
    z_ntdistv_bary_2 = -(
        astype(p_vt, wpfloat) * p_dthalf
        + where(lvn_pos, pos_on_tplane_e_2[dims.E2CDim(0)], pos_on_tplane_e_2[dims.E2CDim(1)])
    )
    p_distv_bary_1 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_1[dims.E2CDim(0)]
        + z_ntdistv_bary_2 * dual_normal_cell_1[dims.E2CDim(0)],
        z_ntdistv_bary_1 * primal_normal_cell_1[dims.E2CDim(1)]
        + z_ntdistv_bary_2 * dual_normal_cell_1[dims.E2CDim(1)],
    )
    p_distv_bary_2 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_2[dims.E2CDim(0)]
        + z_ntdistv_bary_2 * dual_normal_cell_2[dims.E2CDim(0)],
        z_ntdistv_bary_1 * primal_normal_cell_2[dims.E2CDim(1)]
        + z_ntdistv_bary_2 * dual_normal_cell_2[dims.E2CDim(1)],
    )
    return p_distv_bary_1, p_distv_bary_2


@gtx.field_operator
def _compute_upwind_values_of_rho_and_theta_v_at_edges(
    p_vn: fa.EdgeKField[wpfloat],
    rho_ref_me: fa.EdgeKField[vpfloat],
    theta_ref_me: fa.EdgeKField[vpfloat],
    p_distv_bary_1: fa.EdgeKField[wpfloat],
    p_distv_bary_2: fa.EdgeKField[wpfloat],
    z_grad_rth_1: fa.CellKField[vpfloat],
    z_grad_rth_2: fa.CellKField[vpfloat],
    z_grad_rth_3: fa.CellKField[vpfloat],
    z_grad_rth_4: fa.CellKField[vpfloat],
    z_rth_pr_1: fa.CellKField[vpfloat],
    z_rth_pr_2: fa.CellKField[vpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    (
        rho_ref_me_wp, theta_ref_me_wp, z_grad_rth_1_wp, z_grad_rth_2_wp, z_grad_rth_3_wp,
        z_grad_rth_4_wp, z_rth_pr_1_wp, z_rth_pr_2_wp,
    ) = astype(
        (rho_ref_me, theta_ref_me, z_grad_rth_1, z_grad_rth_2, z_grad_rth_3, z_grad_rth_4,
         z_rth_pr_1, z_rth_pr_2),
        wpfloat,
    )
    z_rho_e = where(
        p_vn >= wpfloat("0.0"),
        rho_ref_me_wp + z_rth_pr_1_wp(E2C[0]) + p_distv_bary_1 * z_grad_rth_1_wp(E2C[0])
        + p_distv_bary_2 * z_grad_rth_2_wp(E2C[0]),
        rho_ref_me_wp + z_rth_pr_1_wp(E2C[1]) + p_distv_bary_1 * z_grad_rth_1_wp(E2C[1])
        + p_distv_bary_2 * z_grad_rth_2_wp(E2C[1]),
    )
    z_theta_v_e = where(
        p_vn >= wpfloat("0.0"),
        theta_ref_me_wp + z_rth_pr_2_wp(E2C[0]) + p_distv_bary_1 * z_grad_rth_3_wp(E2C[0])
        + p_distv_bary_2 * z_grad_rth_4_wp(E2C[0]),
        theta_ref_me_wp + z_rth_pr_2_wp(E2C[1]) + p_distv_bary_1 * z_grad_rth_3_wp(E2C[1])
        + p_distv_bary_2 * z_grad_rth_4_wp(E2C[1]),
    )
    return z_rho_e, z_theta_v_e


@gtx.field_operator
def _compute_horizontal_advection_of_rho_and_theta(
    p_vn: fa.EdgeKField[wpfloat],
    p_vt: fa.EdgeKField[vpfloat],
    pos_on_tplane_e_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    pos_on_tplane_e_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    p_dthalf: wpfloat,
    rho_ref_me: fa.EdgeKField[vpfloat],
    theta_ref_me: fa.EdgeKField[vpfloat],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[vpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    ddx_theta, ddy_theta = cell_horizontal_gradients_by_green_gauss_method(
        scalar_field=perturbed_theta_v_at_cells_on_model_levels,
        geofac_grg_x=geofac_grg_x, geofac_grg_y=geofac_grg_y)
    ddx_rho, ddy_rho = cell_horizontal_gradients_by_green_gauss_method(
        scalar_field=perturbed_rho_at_cells_on_model_levels,
        geofac_grg_x=geofac_grg_x, geofac_grg_y=geofac_grg_y)
    p_distv_bary_1, p_distv_bary_2 = _compute_backward_trajectory_from_edge_center(
        p_vn, p_vt, pos_on_tplane_e_1, pos_on_tplane_e_2, primal_normal_cell_1,
        dual_normal_cell_1, primal_normal_cell_2, dual_normal_cell_2, p_dthalf)
    return _compute_upwind_values_of_rho_and_theta_v_at_edges(
        p_vn, rho_ref_me, theta_ref_me, p_distv_bary_1, p_distv_bary_2, ddx_rho, ddy_rho,
        ddx_theta, ddy_theta, perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels)


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    z_exner_ex_pr: fa.CellKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_gradh_exner_wp = inv_dual_edge_length * astype(
        z_exner_ex_pr(E2C[1]) - z_exner_ex_pr(E2C[0]), wpfloat)
    return astype(z_gradh_exner_wp, vpfloat)


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_nonflat_coordinates(
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    z_exner_ex_pr: fa.CellKField[vpfloat],
    ddxn_z_full: fa.EdgeKField[vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_dexner_dz_c_1: fa.CellKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    ddxn_z_full_wp = astype(ddxn_z_full, wpfloat)
    z_exner_ex_pr_wp, z_dexner_dz_c_1_wp = astype((z_exner_ex_pr, z_dexner_dz_c_1), wpfloat)
    z_gradh_exner_wp = inv_dual_edge_length * (
        z_exner_ex_pr_wp(E2C[1]) - z_exner_ex_pr_wp(E2C[0])
    ) - ddxn_z_full_wp * neighbor_sum(c_lin_e * z_dexner_dz_c_1_wp(E2C), axis=dims.E2CDim)
    return astype(z_gradh_exner_wp, vpfloat)


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    z_exner_ex_pr: fa.CellKField[vpfloat],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim, dims.KDim], vpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim, dims.KDim], gtx.int32],
    z_dexner_dz_c_1: fa.CellKField[vpfloat],
    z_dexner_dz_c_2: fa.CellKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_exner_ex_pr_0 = z_exner_ex_pr(E2C[0])(as_offset(Koff, ikoffset[dims.E2CDim(0)]))
    z_exner_ex_pr_1 = z_exner_ex_pr(E2C[1])(as_offset(Koff, ikoffset[dims.E2CDim(1)]))
    z_dexner_dz_c1_0 = z_dexner_dz_c_1(E2C[0])(as_offset(Koff, ikoffset[dims.E2CDim(0)]))
    z_dexner_dz_c1_1 = z_dexner_dz_c_1(E2C[1])(as_offset(Koff, ikoffset[dims.E2CDim(1)]))
    z_dexner_dz_c2_0 = z_dexner_dz_c_2(E2C[0])(as_offset(Koff, ikoffset[dims.E2CDim(0)]))
    z_dexner_dz_c2_1 = z_dexner_dz_c_2(E2C[1])(as_offset(Koff, ikoffset[dims.E2CDim(1)]))
    z_gradh_exner_wp = inv_dual_edge_length * astype(
        (
            z_exner_ex_pr_1
            + zdiff_gradp[dims.E2CDim(1)]
            * (z_dexner_dz_c1_1 + zdiff_gradp[dims.E2CDim(1)] * z_dexner_dz_c2_1)
        )
        - (
            z_exner_ex_pr_0
            + zdiff_gradp[dims.E2CDim(0)]
            * (z_dexner_dz_c1_0 + zdiff_gradp[dims.E2CDim(0)] * z_dexner_dz_c2_0)
        ),
        wpfloat,
    )
    return astype(z_gradh_exner_wp, vpfloat)


@gtx.field_operator
def _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure(
    ipeidx_dsl: fa.EdgeKField[bool],
    pg_exdist: fa.EdgeKField[vpfloat],
    z_hydro_corr: fa.EdgeField[wpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_gradh_exner_wp = astype(z_gradh_exner, wpfloat)
    z_gradh_exner_wp = where(
        ipeidx_dsl, z_gradh_exner_wp + z_hydro_corr * astype(pg_exdist, wpfloat),
        z_gradh_exner_wp)
    return astype(z_gradh_exner_wp, vpfloat)


@gtx.field_operator
def _add_temporal_tendencies_to_vn(
    vn_nnow: fa.EdgeKField[wpfloat],
    ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat],
    z_theta_v_e: fa.EdgeKField[wpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat],
    dtime: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    ddt_vn_apc_ntl1_wp, ddt_vn_phy_wp, z_gradh_exner_wp = astype(
        (ddt_vn_apc_ntl1, ddt_vn_phy, z_gradh_exner), wpfloat)
    return vn_nnow + dtime * (
        ddt_vn_apc_ntl1_wp + ddt_vn_phy_wp - dycore_consts.cpd * z_theta_v_e * z_gradh_exner_wp)


@gtx.field_operator
def _add_analysis_increments_to_vn(
    vn_incr: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    iau_wgt_dyn: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    return vn + (iau_wgt_dyn * astype(vn_incr, wpfloat))


@gtx.field_operator
def _compute_vn_on_lateral_boundary(
    grf_tend_vn: fa.EdgeKField[wpfloat],
    vn_now: fa.EdgeKField[wpfloat],
    dtime: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    return vn_now + dtime * grf_tend_vn


@gtx.field_operator
def apply_on_vertical_level(
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
    on_flatlevels: fa.EdgeKField[ta.wpfloat],
    between_flat_and_flatgradp: fa.EdgeKField[ta.wpfloat],
    below_flatgradp: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    return concat_where(
        dims.KDim < nflatlev,
        on_flatlevels,
        concat_where(nflat_gradp + 1 <= dims.KDim, below_flatgradp, between_flat_and_flatgradp),
    )


@gtx.field_operator
def _compute_horizontal_pressure_gradient(
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    hydrostatic_correction_on_lowest_level: fa.EdgeField[ta.wpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    c_lin_e: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ikoffset: gtx.Field[[dims.EdgeDim, dims.E2CDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[[dims.EdgeDim, dims.E2CDim, dims.KDim], ta.vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool],
    pg_exdist: fa.EdgeKField[ta.vpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
) -> fa.EdgeKField[ta.wpfloat]:
    horizontal_pressure_gradient = apply_on_vertical_level(
        nflatlev,
        nflat_gradp,
        on_flatlevels=_compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
            inv_dual_edge_length=inv_dual_edge_length,
            z_exner_ex_pr=temporal_extrapolation_of_perturbed_exner,
        ),
        between_flat_and_flatgradp=(
            _compute_horizontal_gradient_of_exner_pressure_for_nonflat_coordinates(
                inv_dual_edge_length=inv_dual_edge_length,
                z_exner_ex_pr=temporal_extrapolation_of_perturbed_exner,
                ddxn_z_full=ddxn_z_full,
                c_lin_e=c_lin_e,
                z_dexner_dz_c_1=ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            )
        ),
        below_flatgradp=_compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
            inv_dual_edge_length=inv_dual_edge_length,
            z_exner_ex_pr=temporal_extrapolation_of_perturbed_exner,
            zdiff_gradp=zdiff_gradp,
            ikoffset=ikoffset,
            z_dexner_dz_c_1=ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            z_dexner_dz_c_2=d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        ),
    )
    return _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure(
        ipeidx_dsl=ipeidx_dsl,
        pg_exdist=pg_exdist,
        z_hydro_corr=hydrostatic_correction_on_lowest_level,
        z_gradh_exner=horizontal_pressure_gradient,
    )


@gtx.field_operator
def _compute_rho_theta_pgrad_and_update_vn(
    next_vn: fa.EdgeKField[ta.wpfloat],
    current_vn: fa.EdgeKField[ta.wpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    reference_rho_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    reference_theta_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    hydrostatic_correction_on_lowest_level: fa.EdgeField[ta.wpfloat],
    predictor_normal_wind_advective_tendency: fa.EdgeKField[ta.vpfloat],
    normal_wind_tendency_due_to_slow_physics_process: fa.EdgeKField[ta.vpfloat],
    normal_wind_iau_increment: fa.EdgeKField[ta.vpfloat],
    grf_tend_vn: fa.EdgeKField[ta.wpfloat],
    geofac_grg_x: gtx.Field[[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    geofac_grg_y: gtx.Field[[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    pos_on_tplane_e_x: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    pos_on_tplane_e_y: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_x: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_x: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_y: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_y: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    c_lin_e: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ikoffset: gtx.Field[[dims.EdgeDim, dims.E2CDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[[dims.EdgeDim, dims.E2CDim, dims.KDim], ta.vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool],
    pg_exdist: fa.EdgeKField[ta.vpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    dtime: ta.wpfloat,
    iau_wgt_dyn: ta.wpfloat,
    is_iau_active: bool,
    limited_area: bool,
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
    start_edge_lateral_boundary: gtx.int32,
    start_edge_lateral_boundary_level_7: gtx.int32,
    start_edge_nudging_level_2: gtx.int32,
    end_edge_nudging: gtx.int32,
    end_edge_halo: gtx.int32,
) -> tuple[
    fa.EdgeKField[ta.wpfloat],
    fa.EdgeKField[ta.wpfloat],
    fa.EdgeKField[ta.wpfloat],
    fa.EdgeKField[ta.wpfloat],
]:
    (rho_at_edges_on_model_levels, theta_v_at_edges_on_model_levels) = concat_where(
        ((start_edge_lateral_boundary_level_7 <= dims.EdgeDim) & (dims.EdgeDim < end_edge_halo)),
        _compute_horizontal_advection_of_rho_and_theta(
            p_vn=current_vn,
            p_vt=tangential_wind,
            pos_on_tplane_e_1=pos_on_tplane_e_x,
            pos_on_tplane_e_2=pos_on_tplane_e_y,
            primal_normal_cell_1=primal_normal_cell_x,
            dual_normal_cell_1=dual_normal_cell_x,
            primal_normal_cell_2=primal_normal_cell_y,
            dual_normal_cell_2=dual_normal_cell_y,
            p_dthalf=wpfloat("0.5") * dtime,
            rho_ref_me=reference_rho_at_edges_on_model_levels,
            theta_ref_me=reference_theta_at_edges_on_model_levels,
            perturbed_rho_at_cells_on_model_levels=perturbed_rho_at_cells_on_model_levels,
            perturbed_theta_v_at_cells_on_model_levels=perturbed_theta_v_at_cells_on_model_levels,
            geofac_grg_x=geofac_grg_x,
            geofac_grg_y=geofac_grg_y,
        ),
        (
            broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
            broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
        ),
    )

    horizontal_pressure_gradient = _compute_horizontal_pressure_gradient(
        temporal_extrapolation_of_perturbed_exner=temporal_extrapolation_of_perturbed_exner,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=(
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels),
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=(
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels),
        hydrostatic_correction_on_lowest_level=hydrostatic_correction_on_lowest_level,
        ddxn_z_full=ddxn_z_full,
        c_lin_e=c_lin_e,
        ikoffset=ikoffset,
        zdiff_gradp=zdiff_gradp,
        ipeidx_dsl=ipeidx_dsl,
        pg_exdist=pg_exdist,
        inv_dual_edge_length=inv_dual_edge_length,
        nflatlev=nflatlev,
        nflat_gradp=nflat_gradp,
    )

    next_vn = concat_where(
        start_edge_nudging_level_2 <= dims.EdgeDim,
        _add_temporal_tendencies_to_vn(
            vn_nnow=current_vn,
            ddt_vn_apc_ntl1=predictor_normal_wind_advective_tendency,
            ddt_vn_phy=normal_wind_tendency_due_to_slow_physics_process,
            z_theta_v_e=theta_v_at_edges_on_model_levels,
            z_gradh_exner=horizontal_pressure_gradient,
            dtime=dtime,
        ),
        next_vn,
    )

    if is_iau_active:
        next_vn = concat_where(
            start_edge_nudging_level_2 <= dims.EdgeDim,
            _add_analysis_increments_to_vn(
                vn_incr=normal_wind_iau_increment, vn=next_vn, iau_wgt_dyn=iau_wgt_dyn
            ),
            next_vn,
        )

    if limited_area:
        next_vn = concat_where(
            (start_edge_lateral_boundary <= dims.EdgeDim) & (dims.EdgeDim < end_edge_nudging),
            _compute_vn_on_lateral_boundary(
                vn_now=current_vn,
                grf_tend_vn=grf_tend_vn,
                dtime=dtime,
            ),
            next_vn,
        )

    return (
        rho_at_edges_on_model_levels,
        theta_v_at_edges_on_model_levels,
        horizontal_pressure_gradient,
        next_vn,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_rho_theta_pgrad_and_update_vn(
    rho_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    horizontal_pressure_gradient: fa.EdgeKField[ta.vpfloat],
    next_vn: fa.EdgeKField[ta.wpfloat],
    current_vn: fa.EdgeKField[ta.wpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    reference_rho_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    reference_theta_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    hydrostatic_correction_on_lowest_level: fa.EdgeField[ta.wpfloat],
    predictor_normal_wind_advective_tendency: fa.EdgeKField[ta.vpfloat],
    normal_wind_tendency_due_to_slow_physics_process: fa.EdgeKField[ta.vpfloat],
    normal_wind_iau_increment: fa.EdgeKField[ta.vpfloat],
    grf_tend_vn: fa.EdgeKField[ta.wpfloat],
    geofac_grg_x: gtx.Field[[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    geofac_grg_y: gtx.Field[[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    pos_on_tplane_e_x: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    pos_on_tplane_e_y: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_x: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_x: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_y: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_y: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    c_lin_e: gtx.Field[[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ikoffset: gtx.Field[[dims.EdgeDim, dims.E2CDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[[dims.EdgeDim, dims.E2CDim, dims.KDim], ta.vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool],
    pg_exdist: fa.EdgeKField[ta.vpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    dtime: ta.wpfloat,
    iau_wgt_dyn: ta.wpfloat,
    is_iau_active: bool,
    limited_area: bool,
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
    start_edge_lateral_boundary: gtx.int32,
    start_edge_lateral_boundary_level_7: gtx.int32,
    start_edge_nudging_level_2: gtx.int32,
    end_edge_nudging: gtx.int32,
    end_edge_halo: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_rho_theta_pgrad_and_update_vn(
        next_vn=next_vn,
        current_vn=current_vn,
        tangential_wind=tangential_wind,
        reference_rho_at_edges_on_model_levels=reference_rho_at_edges_on_model_levels,
        reference_theta_at_edges_on_model_levels=reference_theta_at_edges_on_model_levels,
        perturbed_rho_at_cells_on_model_levels=perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels=perturbed_theta_v_at_cells_on_model_levels,
        temporal_extrapolation_of_perturbed_exner=temporal_extrapolation_of_perturbed_exner,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=(
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels),
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=(
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels),
        hydrostatic_correction_on_lowest_level=hydrostatic_correction_on_lowest_level,
        predictor_normal_wind_advective_tendency=predictor_normal_wind_advective_tendency,
        normal_wind_tendency_due_to_slow_physics_process=(
            normal_wind_tendency_due_to_slow_physics_process),
        normal_wind_iau_increment=normal_wind_iau_increment,
        grf_tend_vn=grf_tend_vn,
        geofac_grg_x=geofac_grg_x,
        geofac_grg_y=geofac_grg_y,
        pos_on_tplane_e_x=pos_on_tplane_e_x,
        pos_on_tplane_e_y=pos_on_tplane_e_y,
        primal_normal_cell_x=primal_normal_cell_x,
        dual_normal_cell_x=dual_normal_cell_x,
        primal_normal_cell_y=primal_normal_cell_y,
        dual_normal_cell_y=dual_normal_cell_y,
        ddxn_z_full=ddxn_z_full,
        c_lin_e=c_lin_e,
        ikoffset=ikoffset,
        zdiff_gradp=zdiff_gradp,
        ipeidx_dsl=ipeidx_dsl,
        pg_exdist=pg_exdist,
        inv_dual_edge_length=inv_dual_edge_length,
        dtime=dtime,
        iau_wgt_dyn=iau_wgt_dyn,
        is_iau_active=is_iau_active,
        limited_area=limited_area,
        nflatlev=nflatlev,
        nflat_gradp=nflat_gradp,
        start_edge_lateral_boundary=start_edge_lateral_boundary,
        start_edge_lateral_boundary_level_7=start_edge_lateral_boundary_level_7,
        start_edge_nudging_level_2=start_edge_nudging_level_2,
        end_edge_nudging=end_edge_nudging,
        end_edge_halo=end_edge_halo,
        out=(
            rho_at_edges_on_model_levels,
            theta_v_at_edges_on_model_levels,
            horizontal_pressure_gradient,
            next_vn,
        ),
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


_PGRAD_OUTPUTS = ("rho_at_edges_on_model_levels", "theta_v_at_edges_on_model_levels",
                  "horizontal_pressure_gradient", "next_vn")


def _pgrad_inputs():
    lev = np.arange(NLEV)
    ikoffset = np.minimum(RNG.integers(0, 3, (NE, 2, NLEV)), NLEV - 1 - lev).astype(np.int32)
    e2c_fields = {n: sym(NE, 2) for n in (
        "pos_on_tplane_e_x", "pos_on_tplane_e_y", "primal_normal_cell_x", "dual_normal_cell_x",
        "primal_normal_cell_y", "dual_normal_cell_y")}
    return dict(
        current_vn=sym(NE, NLEV) * 20.0, tangential_wind=sym(NE, NLEV) * 20.0,
        reference_rho_at_edges_on_model_levels=f64(NE, NLEV) + 0.5,
        reference_theta_at_edges_on_model_levels=f64(NE, NLEV) + 290.0,
        perturbed_rho_at_cells_on_model_levels=sym(NC, NLEV) * 0.1,
        perturbed_theta_v_at_cells_on_model_levels=sym(NC, NLEV),
        temporal_extrapolation_of_perturbed_exner=sym(NC, NLEV) * 1e-3,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=sym(NC, NLEV) * 1e-4,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=sym(NC, NLEV) * 1e-6,
        hydrostatic_correction_on_lowest_level=sym(NE) * 1e-5,
        predictor_normal_wind_advective_tendency=sym(NE, NLEV) * 1e-2,
        normal_wind_tendency_due_to_slow_physics_process=sym(NE, NLEV) * 1e-3,
        normal_wind_iau_increment=sym(NE, NLEV), grf_tend_vn=sym(NE, NLEV) * 1e-2,
        geofac_grg_x=sym(NC, 4), geofac_grg_y=sym(NC, 4), **e2c_fields,
        ddxn_z_full=sym(NE, NLEV) * 0.1, c_lin_e=f64(NE, 2), ikoffset=ikoffset,
        zdiff_gradp=sym(NE, 2, NLEV) * 50.0, ipeidx_dsl=RNG.random((NE, NLEV)) < 0.4,
        pg_exdist=sym(NE, NLEV) * 30.0, inv_dual_edge_length=f64(NE) * 1e-3 + 1e-4)


def _pgrad_numpy(a, next_vn, dtime, iau_wgt_dyn, is_iau_active, limited_area, nflatlev,
                 nflat_gradp, lb, lb7, nudging2, end_nudging, end_halo):
    e2c, c2e2co = TABLES["E2C"], TABLES["C2E2CO"]
    vn, vt = a["current_vn"], a["tangential_wind"]

    def grads(field):
        return [(g[:, :, None] * field[c2e2co]).sum(1)
                for g in (a["geofac_grg_x"], a["geofac_grg_y"])]

    ddx_th, ddy_th = grads(a["perturbed_theta_v_at_cells_on_model_levels"])
    ddx_rho, ddy_rho = grads(a["perturbed_rho_at_cells_on_model_levels"])
    pos = vn >= 0.0

    def side(name):
        s = a[name]
        return np.where(pos, s[:, :1], s[:, 1:])

    dthalf = 0.5 * dtime
    z1 = -(vn * dthalf + side("pos_on_tplane_e_x"))
    z2 = -(vt * dthalf + side("pos_on_tplane_e_y"))
    d1 = z1 * side("primal_normal_cell_x") + z2 * side("dual_normal_cell_x")
    d2 = z1 * side("primal_normal_cell_y") + z2 * side("dual_normal_cell_y")

    def up(field):
        return np.where(pos, field[e2c[:, 0]], field[e2c[:, 1]])

    rho_pr = a["perturbed_rho_at_cells_on_model_levels"]
    th_pr = a["perturbed_theta_v_at_cells_on_model_levels"]
    rho_e = (a["reference_rho_at_edges_on_model_levels"] + up(rho_pr) + d1 * up(ddx_rho)
             + d2 * up(ddy_rho))
    theta_e = (a["reference_theta_at_edges_on_model_levels"] + up(th_pr) + d1 * up(ddx_th)
               + d2 * up(ddy_th))
    edges = np.arange(NE)[:, None]
    advected = (lb7 <= edges) & (edges < end_halo)
    rho_e, theta_e = np.where(advected, rho_e, 0.0), np.where(advected, theta_e, 0.0)

    ex = a["temporal_extrapolation_of_perturbed_exner"]
    dz1 = a["ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels"]
    dz2 = a["d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels"]
    idel = a["inv_dual_edge_length"][:, None]
    flat = idel * (ex[e2c[:, 1]] - ex[e2c[:, 0]])
    nonflat = flat - a["ddxn_z_full"] * (a["c_lin_e"][:, :, None] * dz1[e2c]).sum(1)
    lev = np.arange(NLEV)

    def at(field, j):
        return field[e2c[:, j, None], lev[None, :] + a["ikoffset"][:, j, :]]

    zd = a["zdiff_gradp"]
    sides = [at(ex, j) + zd[:, j] * (at(dz1, j) + zd[:, j] * at(dz2, j)) for j in (0, 1)]
    multiple = idel * (sides[1] - sides[0])
    k = lev[None, :]
    grad = np.where(k < nflatlev, flat, np.where(nflat_gradp + 1 <= k, multiple, nonflat))
    grad = np.where(a["ipeidx_dsl"],
                    grad + a["hydrostatic_correction_on_lowest_level"][:, None] * a["pg_exdist"],
                    grad)

    new_vn = vn + dtime * (a["predictor_normal_wind_advective_tendency"]
                           + a["normal_wind_tendency_due_to_slow_physics_process"]
                           - dycore_consts.cpd * theta_e * grad)
    vn_out = np.where(nudging2 <= edges, new_vn, next_vn)
    if is_iau_active:
        vn_out = np.where(nudging2 <= edges,
                          vn_out + iau_wgt_dyn * a["normal_wind_iau_increment"], vn_out)
    if limited_area:
        vn_out = np.where((lb <= edges) & (edges < end_nudging),
                          vn + dtime * a["grf_tend_vn"], vn_out)
    return rho_e, theta_e, grad, vn_out


_PGRAD_CASES = [
    # is_iau_active, limited_area, nflatlev, nflat_gradp, lb, lb7, nudging2, end_nudging,
    # end_halo, hs, he, vs, ve
    (False, False, 2, 4, 0, 2, 3, 5, 9, 0, NE, 0, NLEV),
    (True, True, 1, 5, 1, 3, 4, 6, 10, 1, NE - 1, 1, NLEV - 1),
    (True, False, 0, 0, 0, 0, 0, 0, NE, 2, 9, 0, NLEV),
    (False, True, 3, 2, 2, 4, 6, 8, 7, 0, NE, 2, 7),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", _PGRAD_CASES)
def test_rho_theta_pgrad_and_update_vn(backend, case):
    (iau, lam, nflatlev, nflat_gradp, lb, lb7, nudging2, end_nudging, end_halo,
     hs, he, vs, ve) = case
    a = _pgrad_inputs()
    base = {n: f64(NE, NLEV) for n in _PGRAD_OUTPUTS}
    got = {n: v.copy() for n, v in base.items()}
    dtime, iau_wgt_dyn = 10.0, 0.6
    compute_rho_theta_pgrad_and_update_vn(
        **got, **a, dtime=dtime, iau_wgt_dyn=iau_wgt_dyn, is_iau_active=iau, limited_area=lam,
        nflatlev=nflatlev, nflat_gradp=nflat_gradp, start_edge_lateral_boundary=lb,
        start_edge_lateral_boundary_level_7=lb7, start_edge_nudging_level_2=nudging2,
        end_edge_nudging=end_nudging, end_edge_halo=end_halo, horizontal_start=hs,
        horizontal_end=he, vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
        backend=backend)
    want = _pgrad_numpy(a, base["next_vn"], dtime, iau_wgt_dyn, iau, lam, nflatlev,
                        nflat_gradp, lb, lb7, nudging2, end_nudging, end_halo)
    check(got, {n: inside(w, base[n], hs, he, vs, ve) for n, w in zip(_PGRAD_OUTPUTS, want)},
          rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rho_theta_pgrad_and_update_vn_called_directly(backend):
    a = _pgrad_inputs()
    base = {n: f64(NE, NLEV) for n in _PGRAD_OUTPUTS}
    outs = tuple(base[n].copy() for n in _PGRAD_OUTPUTS)
    dtime, iau_wgt_dyn = 12.0, 0.25
    scalars = dict(dtime=dtime, iau_wgt_dyn=iau_wgt_dyn, is_iau_active=True, limited_area=True,
                   nflatlev=np.int32(2), nflat_gradp=np.int32(3),
                   start_edge_lateral_boundary=np.int32(0),
                   start_edge_lateral_boundary_level_7=np.int32(2),
                   start_edge_nudging_level_2=np.int32(4), end_edge_nudging=np.int32(4),
                   end_edge_halo=np.int32(NE - 1))
    _compute_rho_theta_pgrad_and_update_vn(
        next_vn=outs[3], **a, **scalars, out=outs,
        domain={dims.EdgeDim: (np.int32(1), np.int32(NE)), dims.KDim: (1, NLEV)},
        offset_provider=TABLES, backend=backend)
    want = _pgrad_numpy(a, base["next_vn"], dtime, iau_wgt_dyn, True, True, 2, 3, 0, 2, 4, 4,
                        NE - 1)
    check(dict(zip(_PGRAD_OUTPUTS, outs)),
          {n: inside(w, base[n], 1, NE, 1, NLEV) for n, w in zip(_PGRAD_OUTPUTS, want)},
          rtol=1e-11, atol=1e-12)
