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
field, a tuple of four outputs on one domain), also compiled up front and
then called with half-level fields beside full-level ones; and the FFSL flux
area split into two patches (twenty outputs written in place without
``domain=``, ``Field[[ECDim], float]`` read through the strided ``E2EC``
given by GT4Py's strided provider or icon4py's layout table, ``int32`` edge
fields broadcast to ``(EdgeDim, KDim)``).  The fused edge diagnostics are
also set up as icon4py sets its programs up (``with_backend``,
``with_compilation_options(enable_jit=False)``, ``compile`` with the sizes
and flag variants, calls through ``functools.partial``).  Last the
solver's divergence damping profiles from scalars (an ``if``-expression on
an ``int32`` order, a scalar squared, a tuple of ``KField``s, an operator
without arguments zeroing three fields) called directly as icon4py calls
them.
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
    StridedNeighborOffsetProvider,
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
ECDim = Dimension("EC")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.E2VDim, dims.V2CDim = E2CDim, C2EDim, E2VDim, V2CDim
dims.C2E2CODim, dims.CEDim, dims.ECDim = C2E2CODim, CEDim, ECDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
E2EC = FieldOffset("E2EC", source=ECDim, target=(EdgeDim, E2CDim))
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
          "V2C": _distinct(NV, NC, 6), "C2E2CO": _c2e2co(), "C2CE": None,
          "E2EC": np.arange(2 * NE).reshape(NE, 2), "Koff": KDim}   # icon4py's E2EC layout


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(16003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


def sym(*shape):
    return RNG.random(shape) - 0.5


# ================================================================== rho, theta, gradient, vn
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


# ================================================================== cartesian vectors, cubic flux
#
# The geometry's cartesian vector of zonal and meridional components at a
# point (normalized by its norm), on edges and on cells; the Miura cubic
# intermediate flux reading the ten least squares coefficients of the upwind
# cell; the hydrostatic correction written over the pressure gradient.


@gtx.field_operator
def norm2_on_edges(
    x: fa.EdgeField[gtx.float64], y: fa.EdgeField[gtx.float64], z: fa.EdgeField[gtx.float64]
) -> fa.EdgeField[gtx.float64]:
    return sqrt(x * x + y * y + z * z)


@gtx.field_operator
def norm2_on_cells(
    x: fa.CellField[gtx.float64], y: fa.CellField[gtx.float64], z: fa.CellField[gtx.float64]
) -> fa.CellField[gtx.float64]:
    return sqrt(x * x + y * y + z * z)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def cartesian_coordinates_from_zonal_and_meridional_components_on_edges(
    lat: fa.EdgeField[gtx.float64],
    lon: fa.EdgeField[gtx.float64],
    u: fa.EdgeField[gtx.float64],
    v: fa.EdgeField[gtx.float64],
) -> tuple[fa.EdgeField[gtx.float64], fa.EdgeField[gtx.float64], fa.EdgeField[gtx.float64]]:
    cos_lat = cos(lat)
    sin_lat = sin(lat)
    cos_lon = cos(lon)
    sin_lon = sin(lon)

    x = -u * sin_lon - v * sin_lat * cos_lon
    y = u * cos_lon - v * sin_lat * sin_lon
    z = cos_lat * v

    norm = norm2_on_edges(x, y, z)
    return x / norm, y / norm, z / norm


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_cartesian_coordinates_from_zonal_and_meridional_components_on_edges(
    edge_lat: fa.EdgeField[gtx.float64],
    edge_lon: fa.EdgeField[gtx.float64],
    u: fa.EdgeField[gtx.float64],
    v: fa.EdgeField[gtx.float64],
    x: fa.EdgeField[gtx.float64],
    y: fa.EdgeField[gtx.float64],
    z: fa.EdgeField[gtx.float64],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
):
    cartesian_coordinates_from_zonal_and_meridional_components_on_edges(
        lat=edge_lat,
        lon=edge_lon,
        u=u,
        v=v,
        out=(x, y, z),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end)},
    )


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def cartesian_coordinates_from_zonal_and_meridional_components_on_cells(
    lat: fa.CellField[gtx.float64],
    lon: fa.CellField[gtx.float64],
    u: fa.CellField[gtx.float64],
    v: fa.CellField[gtx.float64],
) -> tuple[fa.CellField[gtx.float64], fa.CellField[gtx.float64], fa.CellField[gtx.float64]]:
    cos_lat = cos(lat)
    sin_lat = sin(lat)
    cos_lon = cos(lon)
    sin_lon = sin(lon)

    x = -u * sin_lon - v * sin_lat * cos_lon
    y = u * cos_lon - v * sin_lat * sin_lon
    z = cos_lat * v

    norm = norm2_on_cells(x, y, z)
    return x / norm, y / norm, z / norm


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_cartesian_coordinates_from_zonal_and_meridional_components_on_cells(
    cell_lat: fa.CellField[gtx.float64],
    cell_lon: fa.CellField[gtx.float64],
    u: fa.CellField[gtx.float64],
    v: fa.CellField[gtx.float64],
    x: fa.CellField[gtx.float64],
    y: fa.CellField[gtx.float64],
    z: fa.CellField[gtx.float64],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
):
    cartesian_coordinates_from_zonal_and_meridional_components_on_cells(
        lat=cell_lat,
        lon=cell_lon,
        u=u,
        v=v,
        out=(x, y, z),
        domain={dims.CellDim: (horizontal_start, horizontal_end)},
    )


def _cartesian_numpy(lat, lon, u, v):
    x = -u * np.sin(lon) - v * np.sin(lat) * np.cos(lon)
    y = u * np.cos(lon) - v * np.sin(lat) * np.sin(lon)
    z = np.cos(lat) * v
    n = np.sqrt(x * x + y * y + z * z)
    return x / n, y / n, z / n


@pytest.mark.parametrize("backend", BACKENDS)
def test_cartesian_coordinates_from_zonal_and_meridional_components(backend):
    for n, program, names, (hs, he) in (
        (NE, compute_cartesian_coordinates_from_zonal_and_meridional_components_on_edges,
         ("edge_lat", "edge_lon"), (1, NE - 2)),
        (NC, compute_cartesian_coordinates_from_zonal_and_meridional_components_on_cells,
         ("cell_lat", "cell_lon"), (0, NC - 1)),
    ):
        lat, lon = RNG.uniform(-1.5, 1.5, n), RNG.uniform(-3.1, 3.1, n)
        u, v = sym(n), sym(n)
        base = {c: f64(n) for c in "xyz"}
        got = {c: b.copy() for c, b in base.items()}
        program(**{names[0]: lat, names[1]: lon}, u=u, v=v, **got, horizontal_start=hs,
                horizontal_end=he, offset_provider={}, backend=backend)
        want = dict(zip("xyz", _cartesian_numpy(lat, lon, u, v)))
        check(got, {c: inside(w, base[c], hs, he) for c, w in want.items()}, rtol=1e-12)
        norm = np.sqrt(sum(got[c][hs:he] ** 2 for c in "xyz"))
        np.testing.assert_allclose(norm, 1.0, rtol=1e-12)

    # called directly on NumPy int32 bounds, the components as keywords
    lat, lon, u, v = RNG.uniform(-1.5, 1.5, NC), RNG.uniform(-3.1, 3.1, NC), sym(NC), sym(NC)
    outs = (np.zeros(NC), np.zeros(NC), np.zeros(NC))
    cartesian_coordinates_from_zonal_and_meridional_components_on_cells(
        lat=lat, lon=lon, u=u, v=v, out=outs,
        domain={dims.CellDim: (np.int32(2), np.int32(NC))}, offset_provider={}, backend=backend)
    for got, want in zip(outs, _cartesian_numpy(lat, lon, u, v)):
        np.testing.assert_allclose(got, inside(want, np.zeros(NC), 2, NC), rtol=1e-12)


@gtx.field_operator
def _compute_intermediate_horizontal_tracer_flux_from_cubic_coeffs_alt(
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_4: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_5: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_6: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_7: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_8: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_9: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_10: fa.CellKField[ta.wpfloat],
    z_quad_vector_sum_1: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_2: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_3: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_4: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_5: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_6: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_7: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_8: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_9: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_10: fa.EdgeKField[ta.vpfloat],
    z_dreg_area: fa.EdgeKField[ta.vpfloat],
    p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
) -> fa.EdgeKField[ta.wpfloat]:
    p_out_e_miura3 = (
        (
            where(cell_rel_idx_dsl == 1, z_lsq_coeff_1(E2C[1]), z_lsq_coeff_1(E2C[0]))
            * astype(z_quad_vector_sum_1, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_2(E2C[1]), z_lsq_coeff_2(E2C[0]))
            * astype(z_quad_vector_sum_2, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_3(E2C[1]), z_lsq_coeff_3(E2C[0]))
            * astype(z_quad_vector_sum_3, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_4(E2C[1]), z_lsq_coeff_4(E2C[0]))
            * astype(z_quad_vector_sum_4, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_5(E2C[1]), z_lsq_coeff_5(E2C[0]))
            * astype(z_quad_vector_sum_5, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_6(E2C[1]), z_lsq_coeff_6(E2C[0]))
            * astype(z_quad_vector_sum_6, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_7(E2C[1]), z_lsq_coeff_7(E2C[0]))
            * astype(z_quad_vector_sum_7, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_8(E2C[1]), z_lsq_coeff_8(E2C[0]))
            * astype(z_quad_vector_sum_8, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_9(E2C[1]), z_lsq_coeff_9(E2C[0]))
            * astype(z_quad_vector_sum_9, wpfloat)
            + where(cell_rel_idx_dsl == 1, z_lsq_coeff_10(E2C[1]), z_lsq_coeff_10(E2C[0]))
            * astype(z_quad_vector_sum_10, wpfloat)
        )
        / astype(z_dreg_area, wpfloat)
        * p_mass_flx_e
    )
    return p_out_e_miura3


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_intermediate_horizontal_tracer_flux_from_cubic_coeffs_alt(
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_4: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_5: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_6: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_7: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_8: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_9: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_10: fa.CellKField[ta.wpfloat],
    z_quad_vector_sum_1: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_2: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_3: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_4: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_5: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_6: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_7: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_8: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_9: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum_10: fa.EdgeKField[ta.vpfloat],
    z_dreg_area: fa.EdgeKField[ta.vpfloat],
    p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
    p_out_e_miura3: fa.EdgeKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_intermediate_horizontal_tracer_flux_from_cubic_coeffs_alt(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, z_lsq_coeff_4, z_lsq_coeff_5,
        z_lsq_coeff_6, z_lsq_coeff_7, z_lsq_coeff_8, z_lsq_coeff_9, z_lsq_coeff_10,
        z_quad_vector_sum_1, z_quad_vector_sum_2, z_quad_vector_sum_3, z_quad_vector_sum_4,
        z_quad_vector_sum_5, z_quad_vector_sum_6, z_quad_vector_sum_7, z_quad_vector_sum_8,
        z_quad_vector_sum_9, z_quad_vector_sum_10, z_dreg_area, p_mass_flx_e, cell_rel_idx_dsl,
        out=p_out_e_miura3,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_intermediate_horizontal_tracer_flux_from_cubic_coeffs(backend):
    coeffs = [sym(NC, NLEV) for _ in range(10)]
    sums = [sym(NE, NLEV) for _ in range(10)]
    area, flux = f64(NE, NLEV) + 0.5, sym(NE, NLEV)
    rel = RNG.integers(0, 2, (NE, NLEV)).astype(np.int32)
    base = f64(NE, NLEV)
    got = base.copy()
    hs, he, vs, ve = 1, NE - 1, 2, NLEV
    compute_intermediate_horizontal_tracer_flux_from_cubic_coeffs_alt(
        *coeffs, *sums, area, flux, rel, got, hs, he, vs, ve, offset_provider=TABLES,
        backend=backend)
    e2c = TABLES["E2C"]
    total = sum(np.where(rel == 1, c[e2c[:, 1]], c[e2c[:, 0]]) * s for c, s in zip(coeffs, sums))
    np.testing.assert_allclose(got, inside(total / area * flux, base, hs, he, vs, ve),
                               rtol=1e-12, atol=1e-14)


@gtx.field_operator
def _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure_original(
    ipeidx_dsl: fa.EdgeKField[bool],
    pg_exdist: fa.EdgeKField[vpfloat],
    z_hydro_corr: gtx.Field[gtx.Dims[dims.EdgeDim], vpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_gradh_exner_vp = where(ipeidx_dsl, z_gradh_exner + z_hydro_corr * pg_exdist, z_gradh_exner)
    return z_gradh_exner_vp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure_original(
    ipeidx_dsl: fa.EdgeKField[bool],
    pg_exdist: fa.EdgeKField[vpfloat],
    z_hydro_corr: gtx.Field[gtx.Dims[dims.EdgeDim], vpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure_original(
        ipeidx_dsl,
        pg_exdist,
        z_hydro_corr,
        z_gradh_exner,
        out=z_gradh_exner,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_hydrostatic_correction_in_place(backend):
    mask, dist, corr, grad = RNG.random((NE, NLEV)) < 0.5, sym(NE, NLEV), sym(NE), sym(NE, NLEV)
    got = grad.copy()
    hs, he, vs, ve = 2, NE, NLEV - 3, NLEV
    apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure_original(
        mask, dist, corr, got, hs, he, vs, ve, offset_provider={}, backend=backend)
    want = np.where(mask, grad + corr[:, None] * dist, grad)
    np.testing.assert_allclose(got, inside(want, grad, hs, he, vs, ve), rtol=1e-14)


# ================================================================== vertical advection of w
#
# The velocity advection in the vertical momentum equation on ``KDim`` fields
# of ``nlev + 1`` levels: the contravariant correction at cell half levels
# from the edges, the corrected w with its CFL clipping (a ``concat_where``
# choosing a tuple of a field, ``broadcast(False, ...)`` and a broadcast
# zero), the vertical and interpolated horizontal advection of w from level 1
# down, the extra diffusion near the CFL limit, and w averaged to full levels.


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s * interpolant_wp(C2E), axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_vp(
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    interpolation_to_half_levels_vp = wgtfac_c * interpolant + (
        vpfloat("1.0") - wgtfac_c
    ) * interpolant(Koff[-1])
    return interpolation_to_half_levels_vp


@gtx.field_operator
def _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(
    p_cell_in: fa.CellKField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
) -> gtx.Field[gtx.Dims[dims.VertexDim, dims.KDim], wpfloat]:
    p_vert_out = neighbor_sum(c_intp * p_cell_in(V2C), axis=dims.V2CDim)
    return p_vert_out


@gtx.field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
    vn_ie: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    w: fa.CellKField[wpfloat],
    z_vt_ie: fa.EdgeKField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    z_w_v: gtx.Field[gtx.Dims[dims.VertexDim, dims.KDim], wpfloat],
) -> fa.EdgeKField[vpfloat]:
    vn_ie_wp = astype(vn_ie, wpfloat)
    z_v_grad_w_wp = vn_ie_wp * inv_dual_edge_length * (
        w(E2C[0]) - w(E2C[1])
    ) + z_vt_ie * inv_primal_edge_length * tangent_orientation * (z_w_v(E2V[0]) - z_w_v(E2V[1]))
    return astype(z_v_grad_w_wp, vpfloat)


@gtx.field_operator
def _interpolate_contravariant_vertical_velocity_to_full_levels(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKField[vpfloat],
    nlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    return concat_where(
        dims.KDim < nlev - 1,
        vpfloat("0.5")
        * (
            contravariant_corrected_w_at_cells_on_half_levels
            + contravariant_corrected_w_at_cells_on_half_levels(Koff[1])
        ),
        vpfloat("0.5") * contravariant_corrected_w_at_cells_on_half_levels,
    )


@gtx.field_operator
def _compute_horizontal_advection_of_w(
    w: fa.CellKField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
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
def _add_vertical_advection_of_w_to_advective_vertical_wind_tendency(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat],
    coeff2_dwdz: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    w_con_wp = astype(contravariant_corrected_w_at_cells_on_half_levels, wpfloat)
    coeff1_dwdz_wp, coeff2_dwdz_wp = astype((coeff1_dwdz, coeff2_dwdz), wpfloat)
    vertical_wind_advective_tendency_wp = -w_con_wp * (
        w(Koff[-1]) * coeff1_dwdz_wp
        - w(Koff[1]) * coeff2_dwdz_wp
        + w * astype(coeff2_dwdz - coeff1_dwdz, wpfloat)
    )
    return astype(vertical_wind_advective_tendency_wp, vpfloat)


@gtx.field_operator
def _add_interpolated_horizontal_advection_of_w(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    z_v_grad_w: fa.EdgeKField[vpfloat],
    ddt_w_adv: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_v_grad_w_wp, ddt_w_adv_wp = astype((z_v_grad_w, ddt_w_adv), wpfloat)
    ddt_w_adv_wp = ddt_w_adv_wp + neighbor_sum(
        z_v_grad_w_wp(C2E) * e_bln_c_s, axis=dims.C2EDim)
    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _add_extra_diffusion_for_w_con_approaching_cfl(
    cfl_clipping: fa.CellKField[bool],
    owner_mask: fa.CellField[bool],
    z_w_con_c: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w: fa.CellKField[wpfloat],
    ddt_w_adv: fa.CellKField[vpfloat],
    scalfac_exdiff: wpfloat,
    cfl_w_limit: vpfloat,
    dtime: wpfloat,
) -> fa.CellKField[vpfloat]:
    z_w_con_c_wp, ddqz_z_half_wp, ddt_w_adv_wp, cfl_w_limit_wp = astype(
        (z_w_con_c, ddqz_z_half, ddt_w_adv, cfl_w_limit), wpfloat)
    difcoef = where(
        cfl_clipping & owner_mask,
        scalfac_exdiff * minimum(
            wpfloat("0.85") - cfl_w_limit_wp * dtime,
            abs(z_w_con_c_wp) * dtime / ddqz_z_half_wp - cfl_w_limit_wp * dtime,
        ),
        wpfloat("0.0"),
    )
    ddt_w_adv_wp = where(
        cfl_clipping & owner_mask,
        ddt_w_adv_wp + difcoef * area * neighbor_sum(w(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim),
        ddt_w_adv_wp,
    )
    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[bool], fa.CellKField[ta.vpfloat]]:
    w_con_wp, ddqz_z_half_wp = astype(
        (contravariant_corrected_w_at_cells_on_half_levels, ddqz_z_half), wpfloat)
    cfl_clipping = where(
        abs(contravariant_corrected_w_at_cells_on_half_levels) > cfl_w_limit * ddqz_z_half,
        broadcast(True, (dims.CellDim, dims.KDim)),
        False,
    )
    vertical_cfl = where(
        cfl_clipping,
        w_con_wp * dtime / ddqz_z_half_wp,
        broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)),
    )
    vertical_cfl_vp = astype(vertical_cfl, vpfloat)
    w_con_wp = where(
        (cfl_clipping) & (vertical_cfl_vp < -vpfloat("0.85")),
        astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        w_con_wp,
    )
    w_con_wp = where(
        (cfl_clipping) & (vertical_cfl_vp > vpfloat("0.85")),
        astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        w_con_wp,
    )
    return astype(w_con_wp, vpfloat), cfl_clipping, vertical_cfl_vp


@gtx.field_operator
def _compute_contravariant_corrected_w(
    w: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
) -> fa.CellKField[ta.vpfloat]:
    return astype(w, vpfloat) - contravariant_correction_at_cells_on_half_levels


@gtx.field_operator
def _compute_contravariant_corrected_w_and_cfl(
    w: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[bool], fa.CellKField[ta.vpfloat]]:
    contravariant_corrected_w_at_cells_on_half_levels = _compute_contravariant_corrected_w(
        w, contravariant_correction_at_cells_on_half_levels
    )
    (contravariant_corrected_w_at_cells_on_half_levels, cfl_clipping, vertical_cfl) = concat_where(
        (dims.KDim >= maximum(2, end_index_of_damping_layer - 2)) & (dims.KDim < nlev - 3),
        _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
            ddqz_z_half,
            contravariant_corrected_w_at_cells_on_half_levels,
            cfl_w_limit,
            dtime,
        ),
        (
            contravariant_corrected_w_at_cells_on_half_levels,
            broadcast(False, (dims.CellDim, dims.KDim)),
            broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
        ),
    )
    return contravariant_corrected_w_at_cells_on_half_levels, cfl_clipping, vertical_cfl


@gtx.field_operator
def _compute_advective_vertical_wind_tendency(
    vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    w: fa.CellKField[ta.wpfloat],
    horizontal_advection_of_w_at_edges_on_half_levels: fa.EdgeKField[ta.wpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    cfl_clipping: fa.CellKField[bool],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> fa.CellKField[ta.vpfloat]:
    vertical_wind_advective_tendency = concat_where(
        dims.KDim >= 1,
        _add_vertical_advection_of_w_to_advective_vertical_wind_tendency(
            contravariant_corrected_w_at_cells_on_half_levels, w, coeff1_dwdz, coeff2_dwdz
        ),
        vertical_wind_advective_tendency,
    )
    vertical_wind_advective_tendency = concat_where(
        dims.KDim >= 1,
        _add_interpolated_horizontal_advection_of_w(
            e_bln_c_s,
            horizontal_advection_of_w_at_edges_on_half_levels,
            vertical_wind_advective_tendency,
        ),
        vertical_wind_advective_tendency,
    )
    vertical_wind_advective_tendency = _add_extra_diffusion_for_w_con_approaching_cfl(
        cfl_clipping,
        owner_mask,
        contravariant_corrected_w_at_cells_on_half_levels,
        ddqz_z_half,
        area,
        geofac_n2s,
        w,
        vertical_wind_advective_tendency,
        scalfac_exdiff,
        cfl_w_limit,
        dtime,
    )
    return vertical_wind_advective_tendency


@gtx.field_operator
def _compute_advection_in_vertical_momentum_equation(
    vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    w: fa.CellKField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat]]:
    horizontal_advection_of_w_at_edges_on_half_levels = _compute_horizontal_advection_of_w(
        w,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        c_intp,
        inv_dual_edge_length,
        inv_primal_edge_length,
        tangent_orientation,
    )
    (
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
        vertical_cfl,
    ) = _compute_contravariant_corrected_w_and_cfl(
        w,
        contravariant_correction_at_cells_on_half_levels,
        ddqz_z_half,
        cfl_w_limit,
        dtime,
        nlev,
        end_index_of_damping_layer,
    )
    vertical_wind_advective_tendency = _compute_advective_vertical_wind_tendency(
        vertical_wind_advective_tendency,
        w,
        horizontal_advection_of_w_at_edges_on_half_levels,
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
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
def compute_advection_in_vertical_momentum_equation(
    vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    vertical_cfl: fa.CellKField[ta.vpfloat],
    w: fa.CellKField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    end_index_of_damping_layer: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_advection_in_vertical_momentum_equation(
        vertical_wind_advective_tendency,
        w,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        contravariant_correction_at_cells_on_half_levels,
        coeff1_dwdz,
        coeff2_dwdz,
        c_intp,
        inv_dual_edge_length,
        inv_primal_edge_length,
        tangent_orientation,
        e_bln_c_s,
        ddqz_z_half,
        area,
        geofac_n2s,
        owner_mask,
        scalfac_exdiff,
        cfl_w_limit,
        dtime,
        vertical_end,
        end_index_of_damping_layer,
        out=(
            vertical_wind_advective_tendency,
            contravariant_corrected_w_at_cells_on_model_levels,
            vertical_cfl,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _interpolate_contravariant_correction_to_cells_on_half_levels(
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    nflatlev: gtx.int32,
) -> fa.CellKField[ta.vpfloat]:
    contravariant_correction_at_cells_model_levels = _interpolate_to_cell_center(
        contravariant_correction_at_edges_on_model_levels, e_bln_c_s
    )
    contravariant_correction_at_cells_model_levels = astype(
        contravariant_correction_at_cells_model_levels, vpfloat
    )
    contravariant_correction_at_cells_on_half_levels = concat_where(
        dims.KDim >= nflatlev + 1,
        _interpolate_cell_field_to_half_levels_vp(
            wgtfac_c=wgtfac_c, interpolant=contravariant_correction_at_cells_model_levels
        ),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
    )
    return contravariant_correction_at_cells_on_half_levels


@gtx.field_operator
def _compute_contravariant_correction_and_advection_in_vertical_momentum_equation(
    vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    w: fa.CellKField[ta.wpfloat],
    horizontal_advection_of_w_at_edges_on_half_levels: fa.EdgeKField[ta.wpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
]:
    contravariant_correction_at_cells_on_half_levels = (
        _interpolate_contravariant_correction_to_cells_on_half_levels(
            contravariant_correction_at_edges_on_model_levels,
            e_bln_c_s,
            wgtfac_c,
            nflatlev,
        )
    )
    (
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
        vertical_cfl,
    ) = _compute_contravariant_corrected_w_and_cfl(
        w,
        contravariant_correction_at_cells_on_half_levels,
        ddqz_z_half,
        cfl_w_limit,
        dtime,
        nlev,
        end_index_of_damping_layer,
    )

    if not skip_compute_predictor_vertical_advection:
        vertical_wind_advective_tendency = _compute_advective_vertical_wind_tendency(
            vertical_wind_advective_tendency,
            w,
            horizontal_advection_of_w_at_edges_on_half_levels,
            contravariant_corrected_w_at_cells_on_half_levels,
            cfl_clipping,
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
        )

    contravariant_corrected_w_at_cells_on_model_levels = (
        _interpolate_contravariant_vertical_velocity_to_full_levels(
            contravariant_corrected_w_at_cells_on_half_levels, nlev
        )
    )
    return (
        contravariant_correction_at_cells_on_half_levels,
        vertical_wind_advective_tendency,
        contravariant_corrected_w_at_cells_on_model_levels,
        vertical_cfl,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_contravariant_correction_and_advection_in_vertical_momentum_equation(
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    vertical_cfl: fa.CellKField[ta.vpfloat],
    w: fa.CellKField[ta.wpfloat],
    horizontal_advection_of_w_at_edges_on_half_levels: fa.EdgeKField[ta.wpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_contravariant_correction_and_advection_in_vertical_momentum_equation(
        vertical_wind_advective_tendency,
        w,
        horizontal_advection_of_w_at_edges_on_half_levels,
        contravariant_correction_at_edges_on_model_levels,
        coeff1_dwdz,
        coeff2_dwdz,
        e_bln_c_s,
        wgtfac_c,
        ddqz_z_half,
        area,
        geofac_n2s,
        owner_mask,
        scalfac_exdiff,
        cfl_w_limit,
        dtime,
        skip_compute_predictor_vertical_advection,
        nflatlev,
        vertical_end,
        end_index_of_damping_layer,
        out=(
            contravariant_correction_at_cells_on_half_levels,
            vertical_wind_advective_tendency,
            contravariant_corrected_w_at_cells_on_model_levels,
            vertical_cfl,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


NH = NLEV + 1


def _vadv_inputs():
    return dict(
        w=RNG.normal(0.0, 3.0, (NC, NH)), coeff1_dwdz=RNG.uniform(1e-3, 1e-2, (NC, NLEV)),
        coeff2_dwdz=RNG.uniform(1e-3, 1e-2, (NC, NLEV)), e_bln_c_s=RNG.uniform(0.2, 0.5, (NC, 3)),
        ddqz_z_half=RNG.uniform(10.0, 50.0, (NC, NH)), area=RNG.uniform(0.5, 2.0, NC),
        geofac_n2s=RNG.standard_normal((NC, 4)), owner_mask=RNG.random(NC) < 0.7)


def _vadv_numpy(a, cc_half, hadv, tend_in, nlev, edl, dtime, scalfac, lim, skip):
    """(tendency, w averaged to full levels, vertical cfl) on levels 0 .. nlev - 1."""
    w, ddqz = a["w"], a["ddqz_z_half"]
    wc = w[:, :nlev] - cc_half[:, :nlev]
    k = np.arange(nlev)[None, :]
    region = (k >= max(2, edl - 2)) & (k < nlev - 3)
    dq = ddqz[:, :nlev]
    clip = region & (np.abs(wc) > lim * dq)
    vcfl = np.where(clip, wc * dtime / dq, 0.0)
    wc = np.where(clip & (vcfl < -0.85), -0.85 * dq / dtime, wc)
    wc = np.where(clip & (vcfl > 0.85), 0.85 * dq / dtime, wc)
    c1, c2 = a["coeff1_dwdz"][:, :nlev], a["coeff2_dwdz"][:, :nlev]
    tend = np.array(tend_in[:, :nlev])
    c2e = TABLES["C2E"]
    interp = (hadv[c2e][:, :, :nlev] * a["e_bln_c_s"][:, :, None]).sum(1)
    vadv = -wc[:, 1:] * (w[:, :nlev - 1] * c1[:, 1:] - w[:, 2:nlev + 1] * c2[:, 1:]
                         + w[:, 1:nlev] * (c2[:, 1:] - c1[:, 1:]))
    tend[:, 1:] = vadv + interp[:, 1:]
    difcoef = scalfac * np.minimum(0.85 - lim * dtime, np.abs(wc) * dtime / dq - lim * dtime)
    lap = (w[TABLES["C2E2CO"]][:, :, :nlev] * a["geofac_n2s"][:, :, None]).sum(1)
    extra = clip & a["owner_mask"][:, None]
    tend = np.where(extra, tend + difcoef * a["area"][:, None] * lap, tend)
    if skip:
        tend = np.array(tend_in[:, :nlev])
    full = np.empty((NC, nlev))
    full[:, :nlev - 1] = 0.5 * (wc[:, :nlev - 1] + wc[:, 1:nlev])
    full[:, nlev - 1] = 0.5 * wc[:, nlev - 1]
    return tend, full, vcfl, clip


def _pad(x, n):
    out = np.full((x.shape[0], n), np.nan)
    out[:, :x.shape[1]] = x
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(1, NC - 1, 1, 5), (0, NC, 0, 3)])
def test_advection_in_vertical_momentum_equation(backend, bounds):
    hs, he, vs, edl = bounds
    a = _vadv_inputs()
    a.update(tangential_wind_on_half_levels=RNG.standard_normal((NE, NH)),
             vn_on_half_levels=RNG.standard_normal((NE, NH)),
             contravariant_correction_at_cells_on_half_levels=RNG.normal(0, 0.3, (NC, NH)),
             c_intp=RNG.uniform(0.1, 0.3, (NV, 6)),
             inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
             inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0))
    base = dict(vertical_wind_advective_tendency=f64(NC, NH),
                contravariant_corrected_w_at_cells_on_model_levels=f64(NC, NLEV),
                vertical_cfl=f64(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    dtime, scalfac, lim = 10.0, 0.15, 0.065
    compute_advection_in_vertical_momentum_equation(
        **got, **a, scalfac_exdiff=scalfac, cfl_w_limit=lim, dtime=dtime,
        end_index_of_damping_layer=edl, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=NLEV, offset_provider=TABLES, backend=backend)
    w, e2c, e2v = a["w"], TABLES["E2C"], TABLES["E2V"]
    w_v = (a["c_intp"][:, :, None] * w[TABLES["V2C"]]).sum(1)
    hadv = (a["vn_on_half_levels"] * a["inv_dual_edge_length"][:, None]
            * (w[e2c[:, 0]] - w[e2c[:, 1]])
            + a["tangential_wind_on_half_levels"]
            * (a["inv_primal_edge_length"] * a["tangent_orientation"])[:, None]
            * (w_v[e2v[:, 0]] - w_v[e2v[:, 1]]))
    tend, full, vcfl, clip = _vadv_numpy(
        a, a["contravariant_correction_at_cells_on_half_levels"], hadv,
        base["vertical_wind_advective_tendency"], NLEV, edl, dtime, scalfac, lim, False)
    check(got, dict(
        vertical_wind_advective_tendency=inside(
            _pad(tend, NH), base["vertical_wind_advective_tendency"], hs, he, vs, NLEV),
        contravariant_corrected_w_at_cells_on_model_levels=inside(
            full, base["contravariant_corrected_w_at_cells_on_model_levels"], hs, he, vs, NLEV),
        vertical_cfl=inside(_pad(vcfl, NH), base["vertical_cfl"], hs, he, vs, NLEV)),
        rtol=1e-11, atol=1e-12)
    assert clip[hs:he].any() and (np.abs(vcfl) > 0.85).any()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", [(False, 2, 5, 1), (True, 0, 3, 0), (False, 4, 2, 0)])
def test_contravariant_correction_and_advection_in_vertical_momentum(backend, case):
    skip, nflatlev, edl, vs = case
    hs, he = 1, NC
    a = _vadv_inputs()
    a.update(horizontal_advection_of_w_at_edges_on_half_levels=RNG.standard_normal((NE, NH)),
             contravariant_correction_at_edges_on_model_levels=RNG.normal(0, 0.3, (NE, NLEV)),
             wgtfac_c=RNG.uniform(0.3, 0.7, (NC, NH)))
    base = dict(contravariant_correction_at_cells_on_half_levels=f64(NC, NH),
                vertical_wind_advective_tendency=f64(NC, NH),
                contravariant_corrected_w_at_cells_on_model_levels=f64(NC, NLEV),
                vertical_cfl=f64(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    dtime, scalfac, lim = 10.0, 0.15, 0.065
    compute_contravariant_correction_and_advection_in_vertical_momentum_equation(
        **got, **a, scalfac_exdiff=scalfac, cfl_w_limit=lim, dtime=dtime,
        skip_compute_predictor_vertical_advection=skip, nflatlev=nflatlev,
        end_index_of_damping_layer=edl, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=NLEV, offset_provider=TABLES, backend=backend)
    c2e = TABLES["C2E"]
    cc_cells = (a["e_bln_c_s"][:, :, None]
                * a["contravariant_correction_at_edges_on_model_levels"][c2e]).sum(1)
    wg = a["wgtfac_c"][:, :NLEV]
    cc_half = np.zeros((NC, NLEV))
    cc_half[:, 1:] = wg[:, 1:] * cc_cells[:, 1:] + (1.0 - wg[:, 1:]) * cc_cells[:, :-1]
    cc_half = np.where(np.arange(NLEV)[None, :] >= nflatlev + 1, cc_half, 0.0)
    tend, full, vcfl, clip = _vadv_numpy(
        a, cc_half, a["horizontal_advection_of_w_at_edges_on_half_levels"],
        base["vertical_wind_advective_tendency"], NLEV, edl, dtime, scalfac, lim, skip)
    check(got, dict(
        contravariant_correction_at_cells_on_half_levels=inside(
            _pad(cc_half, NH), base["contravariant_correction_at_cells_on_half_levels"],
            hs, he, vs, NLEV),
        vertical_wind_advective_tendency=inside(
            _pad(tend, NH), base["vertical_wind_advective_tendency"], hs, he, vs, NLEV),
        contravariant_corrected_w_at_cells_on_model_levels=inside(
            full, base["contravariant_corrected_w_at_cells_on_model_levels"], hs, he, vs, NLEV),
        vertical_cfl=inside(_pad(vcfl, NH), base["vertical_cfl"], hs, he, vs, NLEV)),
        rtol=1e-11, atol=1e-12)
    assert clip[hs:he].any()


# ================================================================== flux area patches
#
# The FFSL flux area split into two patches: the patch vertices moved into
# the system of the upwind cell's butterfly neighbour (read through the
# strided ``E2EC`` from ``Field[[ECDim], float]``), and the neighbour's index
# and block broadcast from ``int32`` edge fields to ``(EdgeDim, KDim)``;
# twenty outputs written in place without ``domain=``, sixteen of them also
# inputs.

int32 = gtx.int32


@gtx.field_operator
def _divide_flux_area_list_stencil_02(
    famask_int: fa.EdgeKField[int32],
    p_vn: fa.EdgeKField[float],
    bf_cc_patch1_lon: Field[[ECDim], float],
    bf_cc_patch1_lat: Field[[ECDim], float],
    bf_cc_patch2_lon: Field[[ECDim], float],
    bf_cc_patch2_lat: Field[[ECDim], float],
    butterfly_idx_patch1_vnpos: fa.EdgeField[int32],
    butterfly_idx_patch1_vnneg: fa.EdgeField[int32],
    butterfly_blk_patch1_vnpos: fa.EdgeField[int32],
    butterfly_blk_patch1_vnneg: fa.EdgeField[int32],
    butterfly_idx_patch2_vnpos: fa.EdgeField[int32],
    butterfly_idx_patch2_vnneg: fa.EdgeField[int32],
    butterfly_blk_patch2_vnpos: fa.EdgeField[int32],
    butterfly_blk_patch2_vnneg: fa.EdgeField[int32],
    dreg_patch1_1_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_1_lat_vmask: fa.EdgeKField[float],
    dreg_patch1_2_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_2_lat_vmask: fa.EdgeKField[float],
    dreg_patch1_3_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_3_lat_vmask: fa.EdgeKField[float],
    dreg_patch1_4_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_4_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_1_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_1_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_2_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_2_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_3_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_3_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_4_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_4_lat_vmask: fa.EdgeKField[float],
) -> tuple[
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[float],
    fa.EdgeKField[int32],
    fa.EdgeKField[int32],
    fa.EdgeKField[int32],
    fa.EdgeKField[int32],
]:
    famask_bool = where(famask_int == 1, True, False)
    lvn_pos = where(p_vn >= 0.0, True, False)
    bf_cc_patch1_lon = where(
        famask_bool,
        where(lvn_pos, bf_cc_patch1_lon(E2EC[0]), bf_cc_patch1_lon(E2EC[1])),
        0.0,
    )
    bf_cc_patch1_lat = where(
        famask_bool,
        where(lvn_pos, bf_cc_patch1_lat(E2EC[0]), bf_cc_patch1_lat(E2EC[1])),
        0.0,
    )
    bf_cc_patch2_lon = where(
        famask_bool,
        where(lvn_pos, bf_cc_patch2_lon(E2EC[0]), bf_cc_patch2_lon(E2EC[1])),
        0.0,
    )
    bf_cc_patch2_lat = where(
        famask_bool,
        where(lvn_pos, bf_cc_patch2_lat(E2EC[0]), bf_cc_patch2_lat(E2EC[1])),
        0.0,
    )
    dreg_patch1_1_lon_vmask = dreg_patch1_1_lon_vmask - bf_cc_patch1_lon
    dreg_patch1_1_lat_vmask = dreg_patch1_1_lat_vmask - bf_cc_patch1_lat
    dreg_patch1_2_lon_vmask = dreg_patch1_2_lon_vmask - bf_cc_patch1_lon
    dreg_patch1_2_lat_vmask = dreg_patch1_2_lat_vmask - bf_cc_patch1_lat
    dreg_patch1_3_lon_vmask = dreg_patch1_3_lon_vmask - bf_cc_patch1_lon
    dreg_patch1_3_lat_vmask = dreg_patch1_3_lat_vmask - bf_cc_patch1_lat
    dreg_patch1_4_lon_vmask = dreg_patch1_4_lon_vmask - bf_cc_patch1_lon
    dreg_patch1_4_lat_vmask = dreg_patch1_4_lat_vmask - bf_cc_patch1_lat
    dreg_patch2_1_lon_vmask = dreg_patch2_1_lon_vmask - bf_cc_patch2_lon
    dreg_patch2_1_lat_vmask = dreg_patch2_1_lat_vmask - bf_cc_patch2_lat
    dreg_patch2_2_lon_vmask = dreg_patch2_2_lon_vmask - bf_cc_patch2_lon
    dreg_patch2_2_lat_vmask = dreg_patch2_2_lat_vmask - bf_cc_patch2_lat
    dreg_patch2_3_lon_vmask = dreg_patch2_3_lon_vmask - bf_cc_patch2_lon
    dreg_patch2_3_lat_vmask = dreg_patch2_3_lat_vmask - bf_cc_patch2_lat
    dreg_patch2_4_lon_vmask = dreg_patch2_4_lon_vmask - bf_cc_patch2_lon
    dreg_patch2_4_lat_vmask = dreg_patch2_4_lat_vmask - bf_cc_patch2_lat
    butterfly_idx_patch1_vnpos_3d = broadcast(butterfly_idx_patch1_vnpos, (EdgeDim, KDim))
    butterfly_idx_patch1_vnneg_3d = broadcast(butterfly_idx_patch1_vnneg, (EdgeDim, KDim))
    butterfly_blk_patch1_vnpos_3d = broadcast(butterfly_blk_patch1_vnpos, (EdgeDim, KDim))
    butterfly_blk_patch1_vnneg_3d = broadcast(butterfly_blk_patch1_vnneg, (EdgeDim, KDim))
    butterfly_idx_patch2_vnpos_3d = broadcast(butterfly_idx_patch2_vnpos, (EdgeDim, KDim))
    butterfly_idx_patch2_vnneg_3d = broadcast(butterfly_idx_patch2_vnneg, (EdgeDim, KDim))
    butterfly_blk_patch2_vnpos_3d = broadcast(butterfly_blk_patch2_vnpos, (EdgeDim, KDim))
    butterfly_blk_patch2_vnneg_3d = broadcast(butterfly_blk_patch2_vnneg, (EdgeDim, KDim))
    patch1_cell_idx_vmask = where(
        famask_bool,
        where(lvn_pos, butterfly_idx_patch1_vnpos_3d, butterfly_idx_patch1_vnneg_3d),
        0,
    )
    patch2_cell_idx_vmask = where(
        famask_bool,
        where(lvn_pos, butterfly_idx_patch2_vnpos_3d, butterfly_idx_patch2_vnneg_3d),
        0,
    )
    patch1_cell_blk_vmask = where(
        famask_bool,
        where(lvn_pos, butterfly_blk_patch1_vnpos_3d, butterfly_blk_patch1_vnneg_3d),
        0,
    )
    patch2_cell_blk_vmask = where(
        famask_bool,
        where(lvn_pos, butterfly_blk_patch2_vnpos_3d, butterfly_blk_patch2_vnneg_3d),
        0,
    )
    return (
        dreg_patch1_1_lon_vmask,
        dreg_patch1_1_lat_vmask,
        dreg_patch1_2_lon_vmask,
        dreg_patch1_2_lat_vmask,
        dreg_patch1_3_lon_vmask,
        dreg_patch1_3_lat_vmask,
        dreg_patch1_4_lon_vmask,
        dreg_patch1_4_lat_vmask,
        dreg_patch2_1_lon_vmask,
        dreg_patch2_1_lat_vmask,
        dreg_patch2_2_lon_vmask,
        dreg_patch2_2_lat_vmask,
        dreg_patch2_3_lon_vmask,
        dreg_patch2_3_lat_vmask,
        dreg_patch2_4_lon_vmask,
        dreg_patch2_4_lat_vmask,
        patch1_cell_idx_vmask,
        patch1_cell_blk_vmask,
        patch2_cell_idx_vmask,
        patch2_cell_blk_vmask,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def divide_flux_area_list_stencil_02(
    famask_int: fa.EdgeKField[int32],
    p_vn: fa.EdgeKField[float],
    bf_cc_patch1_lon: Field[[ECDim], float],
    bf_cc_patch1_lat: Field[[ECDim], float],
    bf_cc_patch2_lon: Field[[ECDim], float],
    bf_cc_patch2_lat: Field[[ECDim], float],
    butterfly_idx_patch1_vnpos: fa.EdgeField[int32],
    butterfly_idx_patch1_vnneg: fa.EdgeField[int32],
    butterfly_blk_patch1_vnpos: fa.EdgeField[int32],
    butterfly_blk_patch1_vnneg: fa.EdgeField[int32],
    butterfly_idx_patch2_vnpos: fa.EdgeField[int32],
    butterfly_idx_patch2_vnneg: fa.EdgeField[int32],
    butterfly_blk_patch2_vnpos: fa.EdgeField[int32],
    butterfly_blk_patch2_vnneg: fa.EdgeField[int32],
    dreg_patch1_1_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_1_lat_vmask: fa.EdgeKField[float],
    dreg_patch1_2_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_2_lat_vmask: fa.EdgeKField[float],
    dreg_patch1_3_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_3_lat_vmask: fa.EdgeKField[float],
    dreg_patch1_4_lon_vmask: fa.EdgeKField[float],
    dreg_patch1_4_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_1_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_1_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_2_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_2_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_3_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_3_lat_vmask: fa.EdgeKField[float],
    dreg_patch2_4_lon_vmask: fa.EdgeKField[float],
    dreg_patch2_4_lat_vmask: fa.EdgeKField[float],
    patch1_cell_idx_vmask: fa.EdgeKField[int32],
    patch1_cell_blk_vmask: fa.EdgeKField[int32],
    patch2_cell_idx_vmask: fa.EdgeKField[int32],
    patch2_cell_blk_vmask: fa.EdgeKField[int32],
):
    _divide_flux_area_list_stencil_02(
        famask_int,
        p_vn,
        bf_cc_patch1_lon,
        bf_cc_patch1_lat,
        bf_cc_patch2_lon,
        bf_cc_patch2_lat,
        butterfly_idx_patch1_vnpos,
        butterfly_idx_patch1_vnneg,
        butterfly_blk_patch1_vnpos,
        butterfly_blk_patch1_vnneg,
        butterfly_idx_patch2_vnpos,
        butterfly_idx_patch2_vnneg,
        butterfly_blk_patch2_vnpos,
        butterfly_blk_patch2_vnneg,
        dreg_patch1_1_lon_vmask,
        dreg_patch1_1_lat_vmask,
        dreg_patch1_2_lon_vmask,
        dreg_patch1_2_lat_vmask,
        dreg_patch1_3_lon_vmask,
        dreg_patch1_3_lat_vmask,
        dreg_patch1_4_lon_vmask,
        dreg_patch1_4_lat_vmask,
        dreg_patch2_1_lon_vmask,
        dreg_patch2_1_lat_vmask,
        dreg_patch2_2_lon_vmask,
        dreg_patch2_2_lat_vmask,
        dreg_patch2_3_lon_vmask,
        dreg_patch2_3_lat_vmask,
        dreg_patch2_4_lon_vmask,
        dreg_patch2_4_lat_vmask,
        out=(
            dreg_patch1_1_lon_vmask,
            dreg_patch1_1_lat_vmask,
            dreg_patch1_2_lon_vmask,
            dreg_patch1_2_lat_vmask,
            dreg_patch1_3_lon_vmask,
            dreg_patch1_3_lat_vmask,
            dreg_patch1_4_lon_vmask,
            dreg_patch1_4_lat_vmask,
            dreg_patch2_1_lon_vmask,
            dreg_patch2_1_lat_vmask,
            dreg_patch2_2_lon_vmask,
            dreg_patch2_2_lat_vmask,
            dreg_patch2_3_lon_vmask,
            dreg_patch2_3_lat_vmask,
            dreg_patch2_4_lon_vmask,
            dreg_patch2_4_lat_vmask,
            patch1_cell_idx_vmask,
            patch1_cell_blk_vmask,
            patch2_cell_idx_vmask,
            patch2_cell_blk_vmask,
        ),
    )


_PATCH_NAMES = [f"dreg_patch{p}_{i}_{c}_vmask" for p in (1, 2) for i in range(1, 5)
                for c in ("lon", "lat")]
_BUTTERFLY_NAMES = [f"butterfly_{k}_patch{p}_{s}" for p in (1, 2) for k in ("idx", "blk")
                    for s in ("vnpos", "vnneg")]
_CELL_OUTPUTS = ["patch1_cell_idx_vmask", "patch1_cell_blk_vmask", "patch2_cell_idx_vmask",
                 "patch2_cell_blk_vmask"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_divide_flux_area_list(backend):
    famask = RNG.integers(0, 2, (NE, NLEV)).astype(np.int32)
    p_vn = sym(NE, NLEV)
    bf = {f"bf_cc_patch{p}_{c}": sym(NE * 2) for p in (1, 2) for c in ("lon", "lat")}
    butterfly = {n: RNG.integers(0, 50, NE).astype(np.int32) for n in _BUTTERFLY_NAMES}
    patches = {n: sym(NE, NLEV) for n in _PATCH_NAMES}
    cells = {n: np.full((NE, NLEV), -7, np.int32) for n in _CELL_OUTPUTS}
    got_patches = {n: v.copy() for n, v in patches.items()}
    # GT4Py's strided provider for E2EC: the neighbour count is its max_neighbors
    divide_flux_area_list_stencil_02(
        famask, p_vn, **bf, **butterfly, **got_patches, **cells,
        offset_provider={"E2EC": StridedNeighborOffsetProvider(EdgeDim, ECDim, 2)},
        backend=backend)
    mask, pos = famask == 1, p_vn >= 0.0

    def moved(name):
        flat = bf[name].reshape(NE, 2)
        return np.where(mask, np.where(pos, flat[:, :1], flat[:, 1:]), 0.0)

    want = {}
    for n in _PATCH_NAMES:
        p, c = n[len("dreg_patch")], "lon" if "_lon_" in n else "lat"
        want[n] = patches[n] - moved(f"bf_cc_patch{p}_{c}")
    for n in _CELL_OUTPUTS:
        p, k = n[len("patch")], n.split("_")[2]
        want[n] = np.where(mask, np.where(pos, butterfly[f"butterfly_{k}_patch{p}_vnpos"][:, None],
                                          butterfly[f"butterfly_{k}_patch{p}_vnneg"][:, None]), 0)
    check({**got_patches, **cells}, want, rtol=1e-14)
    assert all(cells[n].dtype == np.int32 for n in _CELL_OUTPUTS)

    # icon4py's grid offset providers: an explicit E2EC table of the strided layout
    again = {n: v.copy() for n, v in patches.items()}
    cells_again = {n: np.zeros((NE, NLEV), np.int32) for n in _CELL_OUTPUTS}
    divide_flux_area_list_stencil_02(famask, p_vn, **bf, **butterfly, **again, **cells_again,
                                     offset_provider=TABLES, backend=backend)
    check({**again, **cells_again}, want, rtol=1e-14)


def test_contravariant_correction_and_advection_compiled_up_front():
    """icon4py compiles its programs up front (``with_backend(...).compile(
    enable_jit=False, offset_provider=..., vertical_start=[...], ...)``) and
    then calls them with half-level fields beside full-level ones."""
    fast = compute_contravariant_correction_and_advection_in_vertical_momentum_equation \
        .with_backend("compiled").compile(
            enable_jit=False, offset_provider=TABLES, vertical_start=[1], vertical_end=[NLEV],
            skip_compute_predictor_vertical_advection=[False])
    a = _vadv_inputs()
    a.update(horizontal_advection_of_w_at_edges_on_half_levels=RNG.standard_normal((NE, NH)),
             contravariant_correction_at_edges_on_model_levels=RNG.normal(0, 0.3, (NE, NLEV)),
             wgtfac_c=RNG.uniform(0.3, 0.7, (NC, NH)))
    base = dict(contravariant_correction_at_cells_on_half_levels=f64(NC, NH),
                vertical_wind_advective_tendency=f64(NC, NH),
                contravariant_corrected_w_at_cells_on_model_levels=f64(NC, NLEV),
                vertical_cfl=f64(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    dtime, scalfac, lim, nflatlev, edl = 10.0, 0.15, 0.065, 2, 5
    fast(**got, **a, scalfac_exdiff=scalfac, cfl_w_limit=lim, dtime=dtime,
         skip_compute_predictor_vertical_advection=False, nflatlev=nflatlev,
         end_index_of_damping_layer=edl, horizontal_start=0, horizontal_end=NC,
         vertical_start=1, vertical_end=NLEV)
    c2e = TABLES["C2E"]
    cc_cells = (a["e_bln_c_s"][:, :, None]
                * a["contravariant_correction_at_edges_on_model_levels"][c2e]).sum(1)
    wg = a["wgtfac_c"][:, :NLEV]
    cc_half = np.zeros((NC, NLEV))
    cc_half[:, 1:] = wg[:, 1:] * cc_cells[:, 1:] + (1.0 - wg[:, 1:]) * cc_cells[:, :-1]
    cc_half = np.where(np.arange(NLEV)[None, :] >= nflatlev + 1, cc_half, 0.0)
    tend, full, vcfl, _ = _vadv_numpy(
        a, cc_half, a["horizontal_advection_of_w_at_edges_on_half_levels"],
        base["vertical_wind_advective_tendency"], NLEV, edl, dtime, scalfac, lim, False)
    check(got, dict(
        contravariant_correction_at_cells_on_half_levels=inside(
            _pad(cc_half, NH), base["contravariant_correction_at_cells_on_half_levels"],
            0, NC, 1, NLEV),
        vertical_wind_advective_tendency=inside(
            _pad(tend, NH), base["vertical_wind_advective_tendency"], 0, NC, 1, NLEV),
        contravariant_corrected_w_at_cells_on_model_levels=inside(
            full, base["contravariant_corrected_w_at_cells_on_model_levels"], 0, NC, 1, NLEV),
        vertical_cfl=inside(_pad(vcfl, NH), base["vertical_cfl"], 0, NC, 1, NLEV)),
        rtol=1e-11, atol=1e-12)


def test_rho_theta_pgrad_and_update_vn_set_up_as_icon4py_does():
    """icon4py's set-up of a program: the backend, ``enable_jit=False``,
    ``compile`` with the run's sizes and the variants of its flags, then calls
    through a ``functools.partial`` that binds the constant fields, the
    bounds and the offset provider."""
    import functools

    a = _pgrad_inputs()
    constants = {n: a.pop(n) for n in (
        "geofac_grg_x", "geofac_grg_y", "pos_on_tplane_e_x", "pos_on_tplane_e_y",
        "primal_normal_cell_x", "dual_normal_cell_x", "primal_normal_cell_y",
        "dual_normal_cell_y", "ddxn_z_full", "c_lin_e", "ikoffset", "zdiff_gradp",
        "ipeidx_dsl", "pg_exdist", "inv_dual_edge_length")}
    constants.update(nflatlev=2, nflat_gradp=4, start_edge_lateral_boundary=0,
                     start_edge_lateral_boundary_level_7=2, start_edge_nudging_level_2=3,
                     end_edge_nudging=5, end_edge_halo=NE - 1)
    sizes = dict(horizontal_start=1, horizontal_end=NE, vertical_start=0, vertical_end=NLEV)
    prog = compute_rho_theta_pgrad_and_update_vn.with_backend("compiled") \
        .with_compilation_options(enable_jit=False)
    prog.compile(**{k: [v] for k, v in sizes.items()}, is_iau_active=[False, True],
                 limited_area=[False, True], offset_provider=TABLES)
    run = functools.partial(prog, **constants, **sizes, offset_provider=TABLES)
    for iau, lam in ((False, True), (True, False)):
        base = {n: f64(NE, NLEV) for n in _PGRAD_OUTPUTS}
        got = {n: v.copy() for n, v in base.items()}
        run(**got, **a, dtime=10.0, iau_wgt_dyn=0.5, is_iau_active=iau, limited_area=lam)
        want = _pgrad_numpy({**a, **constants}, base["next_vn"], 10.0, 0.5, iau, lam, 2, 4,
                            0, 2, 3, 5, NE - 1)
        check(got, {n: inside(w, base[n], 1, NE, 0, NLEV) for n, w in zip(_PGRAD_OUTPUTS, want)},
              rtol=1e-11, atol=1e-12)


# ================================================================== divergence damping set-up
#
# The solver's per-step vertical profiles from scalars: the fourth order
# divergence damping coefficient (an ``if``-expression on an ``int32`` order
# choosing a ``maximum`` against a literal, a scalar squared), its reduced
# value at the nest boundary, both at once as a tuple of ``KField``s, the
# Rayleigh damping factor, a profile scaled by a factor, and three edge
# fields zeroed by an operator without arguments.  icon4py calls these field
# operators directly (``with_backend(...)(..., out=..., offset_provider={})``).


@gtx.field_operator
def _scale_k(field: fa.KField[float], factor: float) -> fa.KField[float]:
    return field * factor


@gtx.program
def scale_k(field: fa.KField[float], factor: float, scaled_field: fa.KField[float]):
    _scale_k(field, factor, out=scaled_field)


@gtx.field_operator
def _broadcast_zero_to_three_edge_kdim_fields_wp() -> tuple[
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
]:
    return (
        broadcast(wpfloat("0.0"), (EdgeDim, KDim)),
        broadcast(wpfloat("0.0"), (EdgeDim, KDim)),
        broadcast(wpfloat("0.0"), (EdgeDim, KDim)),
    )


@gtx.field_operator
def _calculate_reduced_fourth_order_divdamp_coeff_at_nest_boundary(
    fourth_order_divdamp_scaling_coeff: fa.KField[float],
    max_nudging_coefficient: float,
    dbl_eps: float,
) -> fa.KField[float]:
    return 0.75 / (max_nudging_coefficient + dbl_eps) * abs(fourth_order_divdamp_scaling_coeff)


@gtx.field_operator
def _calculate_fourth_order_divdamp_scaling_coeff(
    interpolated_fourth_order_divdamp_factor: fa.KField[float],
    divdamp_order: gtx.int32,
    mean_cell_area: float,
    second_order_divdamp_factor: float,
) -> fa.KField[float]:
    interpolated_fourth_order_divdamp_factor = (
        maximum(0.0, interpolated_fourth_order_divdamp_factor - 0.25 * second_order_divdamp_factor)
        if divdamp_order == 24
        else interpolated_fourth_order_divdamp_factor
    )
    return -interpolated_fourth_order_divdamp_factor * mean_cell_area**2


@gtx.field_operator
def _calculate_divdamp_fields(
    interpolated_fourth_order_divdamp_factor: fa.KField[float],
    divdamp_order: gtx.int32,
    mean_cell_area: float,
    second_order_divdamp_factor: float,
    max_nudging_coefficient: float,
    dbl_eps: float,
) -> tuple[fa.KField[float], fa.KField[float]]:
    fourth_order_divdamp_scaling_coeff = _calculate_fourth_order_divdamp_scaling_coeff(
        interpolated_fourth_order_divdamp_factor,
        divdamp_order,
        mean_cell_area,
        second_order_divdamp_factor,
    )
    reduced_fourth_order_divdamp_coeff_at_nest_boundary = (
        _calculate_reduced_fourth_order_divdamp_coeff_at_nest_boundary(
            fourth_order_divdamp_scaling_coeff, max_nudging_coefficient, dbl_eps
        )
    )
    return (fourth_order_divdamp_scaling_coeff, reduced_fourth_order_divdamp_coeff_at_nest_boundary)


@gtx.field_operator
def _compute_rayleigh_damping_factor(
    rayleigh_w: fa.KField[float], dtime: float
) -> fa.KField[float]:
    return 1.0 / (1.0 + dtime * rayleigh_w)


@gtx.program
def compute_rayleigh_damping_factor(
    rayleigh_w: fa.KField[float], dtime: float, rayleigh_damping_factor: fa.KField[float]
):
    _compute_rayleigh_damping_factor(rayleigh_w, dtime, out=rayleigh_damping_factor)


@pytest.mark.parametrize("backend", BACKENDS)
def test_divergence_damping_profiles_called_directly(backend):
    run = None if backend == "interpreter" else "compiled"
    factor = RNG.uniform(0.0, 0.01, NLEV)
    area, o2, nudge, eps = 2.5e3, 0.02, 0.375, 1e-12
    for order in (24, 4):
        fourth, reduced = np.zeros(NLEV), np.zeros(NLEV)
        _calculate_divdamp_fields.with_backend(run)(
            factor, np.int32(order), area, o2, nudge, eps, out=(fourth, reduced),
            offset_provider={})
        f = np.maximum(0.0, factor - 0.25 * o2) if order == 24 else factor
        want = -f * area**2
        np.testing.assert_allclose(fourth, want, rtol=1e-14)
        np.testing.assert_allclose(reduced, 0.75 / (nudge + eps) * np.abs(want), rtol=1e-14)
    assert (fourth != reduced).any()

    zeros = tuple(f64(NE, NLEV) for _ in range(3))
    _broadcast_zero_to_three_edge_kdim_fields_wp.with_backend(run)(
        out=zeros, offset_provider={})
    assert not any(z.any() for z in zeros)

    rayleigh_w, damping = f64(NLEV), np.zeros(NLEV)
    compute_rayleigh_damping_factor(rayleigh_w, 12.0, damping, offset_provider={},
                                    backend=backend)
    np.testing.assert_allclose(damping, 1.0 / (1.0 + 12.0 * rayleigh_w), rtol=1e-14)
    scaled = np.zeros(NLEV)
    scale_k(rayleigh_w, 3.0, scaled, offset_provider={}, backend=backend)
    np.testing.assert_allclose(scaled, 3.0 * rayleigh_w, rtol=1e-15)
