"""A fourth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling (``dims.CellDim``, ``fa.CellKField[vpfloat]``, ``ta.wpfloat``,
``gtx.int32``), beside ``test_icon_stencils_ported*.py``.

They add: the vertically implicit solver for w at the predictor and the
corrector step (a program of three field operators with different vertical
domains, writing half-level fields at the surface first and reading them one
level down after; a forward tridiagonal sweep and a backward substitution,
both ``scan_operator``s, called inside ``concat_where(dims.KDim > 0, …)`` so
they start at level 1; ``concat_where`` on ``(dims.KDim >= 1) & (dims.KDim <
n_lev)`` with ``n_lev`` computed by the caller, on ``dims.KDim == n_lev - 1``
and on tuples of ``broadcast(…, (dims.CellDim,))``; GT4Py ``if`` statements on
``bool`` scalars and on an ``int32`` scalar compared with a constant read from
an object, nested ``if``s reassigning a tuple; ``if``-expressions choosing a
``concat_where``), fluxes and tendencies on edges (``E2C2EO``, ``E2C2E``
without ``domain=``, outputs written in place), half levels behind a
``concat_where`` on a runtime cell range, Laplacians over ``C2E2CO`` on a
``CellField`` under a Cell-only domain, icon4py's common-math Thomas solver
and level means, and advection fluxes (``E2C`` slots chosen by ``where``, the
PPM fractional flux with keyword-only parameters).  Each group is one program,
interpreted and compiled once, compared with hand-written NumPy.
"""

from __future__ import annotations

import types
from typing import Final, TypeVar

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
    float32,
    float64,
    floor,
    neighbor_sum,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.C2EDim, dims.C2E2CDim, dims.E2CDim, dims.E2VDim = C2EDim, C2E2CDim, E2CDim, E2VDim
dims.E2C2VDim, dims.E2C2EDim, dims.V2EDim = E2C2VDim, E2C2EDim, V2EDim
dims.E2C2EODim, dims.C2E2CODim = E2C2EODim, C2E2CODim
dims.E2C2EO = FieldOffset("E2C2EO", source=EdgeDim, target=(EdgeDim, E2C2EODim))
dims.C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
dims.C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
dims.C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
dims.E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
dims.E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
dims.E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
dims.E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
dims.V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
dims.Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
Koff = dims.Koff

fa = types.ModuleType("icon_field_aliases")
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KField = Field[Dims[KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 13, 7, 6
RNG = np.random.default_rng(2501)
f64, f32 = np.float64, np.float32


class PhysicsConstants:
    rd = 287.04
    cpd = 1004.64
    cvd = cpd - rd
    cvd_o_rd = cvd / rd


class RayleighType:
    CLASSIC = 1
    KLEMP = 2


dycore_consts: Final = PhysicsConstants()
rayleigh_damping_options: Final = RayleighType()


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


TABLES = {"C2E": table(NC, 3, NE), "C2E2C": table(NC, 3, NC, absent=0.2),
          "E2C": table(NE, 2, NC), "E2V": table(NE, 2, NV), "E2C2V": table(NE, 4, NV),
          "E2C2E": table(NE, 4, NE, absent=0.2), "V2E": table(NV, 6, NE, absent=0.2),
          "E2C2EO": table(NE, 5, NE, absent=0.15), "C2E2CO": table(NC, 4, NC, absent=0.2),
          "Koff": KDim}
TABLES["C2E2CO"][0, :] = -1         # a cell without any neighbour, itself included


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2502).bit_generator.state


def wp(*shape):
    return RNG.random(shape)


def vp(*shape):
    return RNG.random(shape).astype(f32)


def nbsum(weights, field, tab):
    """sum over j of weights[:, j] * field[tab[:, j]], absent (-1) neighbours skipped."""
    g = field[np.where(tab >= 0, tab, 0)].astype(f64)
    w = weights.reshape(weights.shape + (1,) * (g.ndim - weights.ndim))
    return np.where((tab >= 0).reshape(tab.shape + (1,) * (g.ndim - 2)), w * g, 0.0).sum(1)


def inside(new, old, hs, he, vs, ve):
    """``new`` on rows ``hs:he`` and levels ``vs:ve``, ``old`` elsewhere."""
    out = old.copy()
    out[hs:he, vs:ve] = new[hs:he, vs:ve]
    return out


def check(got, expected, rtol):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=rtol, err_msg=name)


# ------------------------------------------------------ the vertically implicit solver for w
#
# Half-level fields have nlev + 1 levels, full-level fields nlev.  The program
# first sets the surface level (nlev) of three half-level fields, then solves
# levels [0, nlev) and reads the surface values one level down.


@gtx.field_operator
def _compute_divergence_of_fluxes_of_rho_and_theta(
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    mass_fl_e: fa.EdgeKField[ta.wpfloat],
    z_theta_v_fl_e: fa.EdgeKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat]]:
    z_flxdiv_mass_wp = neighbor_sum(geofac_div * mass_fl_e(dims.C2E), axis=dims.C2EDim)
    z_flxdiv_theta_wp = neighbor_sum(geofac_div * z_theta_v_fl_e(dims.C2E), axis=dims.C2EDim)
    return astype((z_flxdiv_mass_wp, z_flxdiv_theta_wp), vpfloat)


@gtx.field_operator
def _set_surface_boundary_condition_for_computation_of_w(
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    alpha = broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))
    mass_flux = broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim))
    return alpha, astype(contravariant_correction_at_cells_on_half_levels, wpfloat), mass_flux


@gtx.field_operator
def _compute_w_explicit_term_with_predictor_advective_tendency(
    current_w: fa.CellKField[wpfloat],
    predictor_vertical_wind_advective_tendency: fa.CellKField[vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[vpfloat],
    dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    advection_wp, buoyancy_wp = astype(
        (predictor_vertical_wind_advective_tendency,
         pressure_buoyancy_acceleration_at_cells_on_half_levels), wpfloat)
    return current_w + dtime * (advection_wp - dycore_consts.cpd * buoyancy_wp)


@gtx.field_operator
def _compute_w_explicit_term_with_interpolated_predictor_corrector_advective_tendency(
    current_w: fa.CellKField[wpfloat],
    predictor_vertical_wind_advective_tendency: fa.CellKField[vpfloat],
    corrector_vertical_wind_advective_tendency: fa.CellKField[vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[vpfloat],
    dtime: wpfloat,
    advection_explicit_weight_parameter: wpfloat,
    advection_implicit_weight_parameter: wpfloat,
) -> fa.CellKField[wpfloat]:
    predictor_wp, corrector_wp, buoyancy_wp = astype(
        (predictor_vertical_wind_advective_tendency, corrector_vertical_wind_advective_tendency,
         pressure_buoyancy_acceleration_at_cells_on_half_levels), wpfloat)
    return current_w + dtime * (
        advection_explicit_weight_parameter * predictor_wp
        + advection_implicit_weight_parameter * corrector_wp
        - dycore_consts.cpd * buoyancy_wp)


@gtx.field_operator
def _compute_solver_coefficients_matrix(
    current_exner: fa.CellKField[wpfloat],
    current_rho: fa.CellKField[wpfloat],
    current_theta_v: fa.CellKField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[wpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[wpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[wpfloat],
    dtime: wpfloat,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    inv_ddqz_z_full_wp = astype(inv_ddqz_z_full, wpfloat)
    z_beta_wp = (dtime * dycore_consts.rd * current_exner
                 / (dycore_consts.cvd * current_rho * current_theta_v) * inv_ddqz_z_full_wp)
    z_alpha_wp = (exner_w_implicit_weight_parameter * theta_v_at_cells_on_half_levels
                  * rho_at_cells_on_half_levels)
    return astype((z_beta_wp, z_alpha_wp), vpfloat)


@gtx.field_operator
def _compute_explicit_part_for_rho_and_exner(
    rho_nnow: fa.CellKField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    z_flxdiv_mass: fa.CellKField[vpfloat],
    z_contr_w_fl_l: fa.CellKField[wpfloat],
    exner_pr: fa.CellKField[wpfloat],
    z_beta: fa.CellKField[vpfloat],
    z_flxdiv_theta: fa.CellKField[vpfloat],
    theta_v_ic: fa.CellKField[wpfloat],
    ddt_exner_phy: fa.CellKField[vpfloat],
    dtime: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    inv_ddqz_wp, flxdiv_mass_wp, beta_wp, flxdiv_theta_wp, ddt_exner_phy_wp = astype(
        (inv_ddqz_z_full, z_flxdiv_mass, z_beta, z_flxdiv_theta, ddt_exner_phy), wpfloat)
    z_rho_expl_wp = rho_nnow - dtime * inv_ddqz_wp * (
        flxdiv_mass_wp + z_contr_w_fl_l - z_contr_w_fl_l(Koff[1]))
    z_exner_expl_wp = (
        exner_pr
        - beta_wp * (flxdiv_theta_wp + theta_v_ic * z_contr_w_fl_l
                     - theta_v_ic(Koff[1]) * z_contr_w_fl_l(Koff[1]))
        + dtime * ddt_exner_phy_wp)
    return z_rho_expl_wp, z_exner_expl_wp


@gtx.field_operator
def _add_analysis_increments_from_data_assimilation(
    rho_explicit_term: fa.CellKField[wpfloat],
    exner_explicit_term: fa.CellKField[wpfloat],
    rho_iau_increment: fa.CellKField[vpfloat],
    exner_iau_increment: fa.CellKField[vpfloat],
    iau_wgt_dyn: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    rho_incr_wp, exner_incr_wp = astype((rho_iau_increment, exner_iau_increment), wpfloat)
    return (rho_explicit_term + iau_wgt_dyn * rho_incr_wp,
            exner_explicit_term + iau_wgt_dyn * exner_incr_wp)


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(vpfloat("0.0"), 0.0))
def _w(state: tuple[vpfloat, float], z_a: vpfloat, z_b: vpfloat, z_c: vpfloat, w_prep: wpfloat):
    z_q_m1 = astype(state[0], vpfloat)
    w_m1 = state[1]
    z_g = vpfloat("1.0") / (z_b + z_a * z_q_m1)
    z_q_new = (vpfloat("0.0") - z_c) * z_g
    w_new = (w_prep - astype(z_a, wpfloat) * w_m1) * astype(z_g, wpfloat)
    return z_q_new, w_new


@gtx.field_operator
def _solve_tridiagonal_matrix_for_w_forward_sweep(
    vwind_impl_wgt: fa.CellField[wpfloat],
    theta_v_ic: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    z_alpha: fa.CellKField[vpfloat],
    z_beta: fa.CellKField[vpfloat],
    z_w_expl: fa.CellKField[wpfloat],
    z_exner_expl: fa.CellKField[wpfloat],
    dtime: wpfloat,
    cpd: wpfloat,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[wpfloat]]:
    ddqz_z_half_wp = astype(ddqz_z_half, wpfloat)
    z_gamma_vp = astype(dtime * cpd * vwind_impl_wgt * theta_v_ic / ddqz_z_half_wp, vpfloat)
    z_a = (vpfloat("0.0") - z_gamma_vp) * z_beta(Koff[-1]) * z_alpha(Koff[-1])
    z_c = (vpfloat("0.0") - z_gamma_vp) * z_beta * z_alpha(Koff[1])
    z_b = vpfloat("1.0") + z_gamma_vp * z_alpha * (z_beta(Koff[-1]) + z_beta)
    w_prep = z_w_expl - astype(z_gamma_vp, wpfloat) * (z_exner_expl(Koff[-1]) - z_exner_expl)
    z_q_res, w_res = _w(z_a, z_b, z_c, w_prep)
    return z_q_res, w_res


@gtx.scan_operator(axis=dims.KDim, forward=False, init=wpfloat("1.0"))
def _solve_tridiagonal_matrix_for_w_back_substitution_scan(
        w_state: wpfloat, z_q: vpfloat, w: wpfloat) -> wpfloat:
    return w + w_state * astype(z_q, wpfloat)


@gtx.field_operator
def _apply_rayleigh_damping_mechanism(
    z_raylfac: fa.KField[wpfloat], w_1: fa.CellField[wpfloat], w: fa.CellKField[wpfloat]
) -> fa.CellKField[wpfloat]:
    z_raylfac = broadcast(z_raylfac, (dims.CellDim, dims.KDim))
    return z_raylfac * w + (wpfloat("1.0") - z_raylfac) * w_1


@gtx.field_operator
def _compute_results_for_thermodynamic_variables(
    z_rho_expl: fa.CellKField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    rho_ic: fa.CellKField[wpfloat],
    w: fa.CellKField[wpfloat],
    z_exner_expl: fa.CellKField[wpfloat],
    exner_ref_mc: fa.CellKField[vpfloat],
    z_alpha: fa.CellKField[vpfloat],
    z_beta: fa.CellKField[vpfloat],
    rho_now: fa.CellKField[wpfloat],
    theta_v_now: fa.CellKField[wpfloat],
    exner_now: fa.CellKField[wpfloat],
    dtime: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    inv_ddqz_z_full_wp, exner_ref_mc_wp, z_alpha_wp, z_beta_wp = astype(
        (inv_ddqz_z_full, exner_ref_mc, z_alpha, z_beta), wpfloat)
    rho_new_wp = z_rho_expl - vwind_impl_wgt * dtime * inv_ddqz_z_full_wp * (
        rho_ic * w - rho_ic(Koff[1]) * w(Koff[1]))
    exner_new_wp = (z_exner_expl + exner_ref_mc_wp
                    - z_beta_wp * (z_alpha_wp * w - z_alpha_wp(Koff[1]) * w(Koff[1])))
    theta_v_new_wp = (
        rho_now * theta_v_now
        * ((exner_new_wp / exner_now - wpfloat("1.0")) * dycore_consts.cvd_o_rd + wpfloat("1.0"))
        / rho_new_wp)
    return rho_new_wp, exner_new_wp, theta_v_new_wp


@gtx.field_operator
def _compute_dwdz_for_divergence_damping(
    inv_ddqz_z_full: fa.CellKField[vpfloat], w: fa.CellKField[wpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    inv_ddqz_z_full_wp = astype(inv_ddqz_z_full, wpfloat)
    z_dwdz_dd_wp = inv_ddqz_z_full_wp * (
        (w - w(Koff[1])) - astype(w_concorr_c - w_concorr_c(Koff[1]), wpfloat))
    return astype(z_dwdz_dd_wp, vpfloat)


@gtx.field_operator
def _update_mass_volume_flux(
    vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[wpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[wpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[wpfloat],
    w: fa.CellKField[wpfloat],
    dynamical_vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[wpfloat],
    dynamical_vertical_volumetric_flux_at_cells_on_half_levels: fa.CellKField[wpfloat],
    r_nsubsteps: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_a = r_nsubsteps * (vertical_mass_flux_at_cells_on_half_levels
                         + rho_at_cells_on_half_levels * exner_w_implicit_weight_parameter * w)
    return (dynamical_vertical_mass_flux_at_cells_on_half_levels + z_a,
            dynamical_vertical_volumetric_flux_at_cells_on_half_levels
            + z_a / rho_at_cells_on_half_levels)


@gtx.field_operator
def _update_dynamical_exner_time_increment(
    exner: fa.CellKField[wpfloat], ddt_exner_phy: fa.CellKField[vpfloat],
    exner_dyn_incr: fa.CellKField[vpfloat], ndyn_substeps_var: wpfloat, dtime: wpfloat,
) -> fa.CellKField[vpfloat]:
    exner_dyn_incr_wp, ddt_exner_phy_wp = astype((exner_dyn_incr, ddt_exner_phy), wpfloat)
    exner_dyn_incr_wp = exner - (exner_dyn_incr_wp + ndyn_substeps_var * dtime * ddt_exner_phy_wp)
    return astype(exner_dyn_incr_wp, vpfloat)


@gtx.field_operator
def _vertically_implicit_solver_at_predictor_step_before_solving_w(
    vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    next_w: fa.CellKField[ta.wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    mass_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    predictor_vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[ta.wpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    current_w: fa.CellKField[ta.wpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[ta.wpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    exner_tendency_due_to_slow_physics: fa.CellKField[ta.vpfloat],
    rho_iau_increment: fa.CellKField[ta.vpfloat],
    exner_iau_increment: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    iau_wgt_dyn: ta.wpfloat,
    dtime: ta.wpfloat,
    is_iau_active: bool,
    n_lev: gtx.int32,
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat],
           fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    divergence_of_mass, divergence_of_theta_v = _compute_divergence_of_fluxes_of_rho_and_theta(
        geofac_div=geofac_div, mass_fl_e=mass_flux_at_edges_on_model_levels,
        z_theta_v_fl_e=theta_v_flux_at_edges_on_model_levels)
    tridiagonal_intermediate_result = broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))
    w_explicit_term = concat_where(
        dims.KDim >= 1,
        _compute_w_explicit_term_with_predictor_advective_tendency(
            current_w=current_w,
            predictor_vertical_wind_advective_tendency=predictor_vertical_wind_advective_tendency,
            pressure_buoyancy_acceleration_at_cells_on_half_levels=(
                pressure_buoyancy_acceleration_at_cells_on_half_levels),
            dtime=dtime),
        broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)))
    (next_w, vertical_mass_flux_at_cells_on_half_levels) = concat_where(
        dims.KDim == 0,
        (broadcast(wpfloat("0.0"), (dims.CellDim,)), broadcast(wpfloat("0.0"), (dims.CellDim,))),
        (next_w, vertical_mass_flux_at_cells_on_half_levels))
    vertical_mass_flux_at_cells_on_half_levels = concat_where(
        (dims.KDim >= 1) & (dims.KDim < n_lev),
        rho_at_cells_on_half_levels * (
            -astype(contravariant_correction_at_cells_on_half_levels, wpfloat)
            + exner_w_explicit_weight_parameter * current_w),
        vertical_mass_flux_at_cells_on_half_levels)
    (tridiagonal_beta_coeff, tridiagonal_alpha_coeff) = _compute_solver_coefficients_matrix(
        current_exner=current_exner, current_rho=current_rho, current_theta_v=current_theta_v,
        inv_ddqz_z_full=inv_ddqz_z_full,
        exner_w_implicit_weight_parameter=exner_w_implicit_weight_parameter,
        theta_v_at_cells_on_half_levels=theta_v_at_cells_on_half_levels,
        rho_at_cells_on_half_levels=rho_at_cells_on_half_levels, dtime=dtime)
    (rho_explicit_term, exner_explicit_term) = _compute_explicit_part_for_rho_and_exner(
        rho_nnow=current_rho, inv_ddqz_z_full=inv_ddqz_z_full, z_flxdiv_mass=divergence_of_mass,
        z_contr_w_fl_l=vertical_mass_flux_at_cells_on_half_levels,
        exner_pr=perturbed_exner_at_cells_on_model_levels, z_beta=tridiagonal_beta_coeff,
        z_flxdiv_theta=divergence_of_theta_v, theta_v_ic=theta_v_at_cells_on_half_levels,
        ddt_exner_phy=exner_tendency_due_to_slow_physics, dtime=dtime)
    if is_iau_active:
        rho_explicit_term, exner_explicit_term = _add_analysis_increments_from_data_assimilation(
            rho_explicit_term=rho_explicit_term, exner_explicit_term=exner_explicit_term,
            rho_iau_increment=rho_iau_increment, exner_iau_increment=exner_iau_increment,
            iau_wgt_dyn=iau_wgt_dyn)
    tridiagonal_intermediate_result, next_w = concat_where(
        dims.KDim > 0,
        _solve_tridiagonal_matrix_for_w_forward_sweep(
            vwind_impl_wgt=exner_w_implicit_weight_parameter,
            theta_v_ic=theta_v_at_cells_on_half_levels, ddqz_z_half=ddqz_z_half,
            z_alpha=tridiagonal_alpha_coeff, z_beta=tridiagonal_beta_coeff,
            z_w_expl=w_explicit_term, z_exner_expl=exner_explicit_term, dtime=dtime,
            cpd=dycore_consts.cpd),
        (tridiagonal_intermediate_result, next_w))
    tridiagonal_intermediate_result = concat_where(
        dims.KDim == n_lev - 1,
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
        tridiagonal_intermediate_result)
    next_w = concat_where(
        dims.KDim > 0,
        _solve_tridiagonal_matrix_for_w_back_substitution_scan(
            z_q=tridiagonal_intermediate_result, w=next_w),
        next_w)
    return (vertical_mass_flux_at_cells_on_half_levels, tridiagonal_beta_coeff,
            tridiagonal_alpha_coeff, next_w, rho_explicit_term, exner_explicit_term)


@gtx.field_operator
def _vertically_implicit_solver_at_predictor_step_after_solving_w(
    tridiagonal_beta_coeff_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    tridiagonal_alpha_coeff_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    next_w: fa.CellKField[ta.wpfloat],
    dwdz_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    exner_dynamical_increment: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[ta.wpfloat],
    rayleigh_damping_factor: fa.KField[ta.wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    rho_explicit_term: fa.CellKField[ta.wpfloat],
    exner_explicit_term: fa.CellKField[ta.wpfloat],
    dtime: ta.wpfloat,
    rayleigh_type: gtx.int32,
    divdamp_type: gtx.int32,
    at_first_substep: bool,
    end_index_of_damping_layer: gtx.int32,
    kstart_moist: gtx.int32,
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
           fa.CellKField[ta.wpfloat], fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat]]:
    w_1 = broadcast(wpfloat("0.0"), (dims.CellDim,))
    if rayleigh_type == rayleigh_damping_options.KLEMP:
        next_w = concat_where(
            (dims.KDim > 0) & (dims.KDim < end_index_of_damping_layer + 1),
            _apply_rayleigh_damping_mechanism(z_raylfac=rayleigh_damping_factor, w_1=w_1,
                                              w=next_w),
            next_w)
    next_rho, next_exner, next_theta_v = _compute_results_for_thermodynamic_variables(
        z_rho_expl=rho_explicit_term, vwind_impl_wgt=exner_w_implicit_weight_parameter,
        inv_ddqz_z_full=inv_ddqz_z_full, rho_ic=rho_at_cells_on_half_levels, w=next_w,
        z_exner_expl=exner_explicit_term,
        exner_ref_mc=reference_exner_at_cells_on_model_levels,
        z_alpha=tridiagonal_alpha_coeff_at_cells_on_half_levels,
        z_beta=tridiagonal_beta_coeff_at_cells_on_model_levels, rho_now=current_rho,
        theta_v_now=current_theta_v, exner_now=current_exner, dtime=dtime)
    if divdamp_type >= 3:
        dwdz_at_cells_on_model_levels = _compute_dwdz_for_divergence_damping(
            inv_ddqz_z_full=inv_ddqz_z_full, w=next_w,
            w_concorr_c=contravariant_correction_at_cells_on_half_levels)
    exner_dynamical_increment = (
        concat_where(kstart_moist <= dims.KDim, astype(current_exner, vpfloat),
                     exner_dynamical_increment)
        if at_first_substep
        else exner_dynamical_increment)
    return (next_w, next_rho, next_exner, next_theta_v, dwdz_at_cells_on_model_levels,
            exner_dynamical_increment)


@gtx.program
def vertically_implicit_solver_at_predictor_step(
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    tridiagonal_beta_coeff_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    tridiagonal_alpha_coeff_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    next_w: fa.CellKField[ta.wpfloat],
    rho_explicit_term: fa.CellKField[ta.wpfloat],
    exner_explicit_term: fa.CellKField[ta.wpfloat],
    next_rho: fa.CellKField[ta.wpfloat],
    next_exner: fa.CellKField[ta.wpfloat],
    next_theta_v: fa.CellKField[ta.wpfloat],
    dwdz_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    exner_dynamical_increment: fa.CellKField[ta.vpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    mass_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    predictor_vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[ta.wpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    current_w: fa.CellKField[ta.wpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[ta.wpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    exner_tendency_due_to_slow_physics: fa.CellKField[ta.vpfloat],
    rho_iau_increment: fa.CellKField[ta.vpfloat],
    exner_iau_increment: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    rayleigh_damping_factor: fa.KField[ta.wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    iau_wgt_dyn: ta.wpfloat,
    dtime: ta.wpfloat,
    is_iau_active: bool,
    rayleigh_type: gtx.int32,
    divdamp_type: gtx.int32,
    at_first_substep: bool,
    end_index_of_damping_layer: gtx.int32,
    kstart_moist: gtx.int32,
    start_cell_index_nudging: gtx.int32,
    end_cell_index_local: gtx.int32,
    vertical_start_index_model_top: gtx.int32,
    vertical_end_index_model_surface: gtx.int32,
):
    _set_surface_boundary_condition_for_computation_of_w(
        contravariant_correction_at_cells_on_half_levels=(
            contravariant_correction_at_cells_on_half_levels),
        out=(tridiagonal_alpha_coeff_at_cells_on_half_levels, next_w,
             vertical_mass_flux_at_cells_on_half_levels),
        domain={
            dims.CellDim: (start_cell_index_nudging, end_cell_index_local),
            dims.KDim: (vertical_end_index_model_surface - 1, vertical_end_index_model_surface),
        },
    )
    _vertically_implicit_solver_at_predictor_step_before_solving_w(
        vertical_mass_flux_at_cells_on_half_levels=vertical_mass_flux_at_cells_on_half_levels,
        next_w=next_w,
        geofac_div=geofac_div,
        mass_flux_at_edges_on_model_levels=mass_flux_at_edges_on_model_levels,
        theta_v_flux_at_edges_on_model_levels=theta_v_flux_at_edges_on_model_levels,
        predictor_vertical_wind_advective_tendency=predictor_vertical_wind_advective_tendency,
        pressure_buoyancy_acceleration_at_cells_on_half_levels=(
            pressure_buoyancy_acceleration_at_cells_on_half_levels),
        rho_at_cells_on_half_levels=rho_at_cells_on_half_levels,
        contravariant_correction_at_cells_on_half_levels=(
            contravariant_correction_at_cells_on_half_levels),
        exner_w_explicit_weight_parameter=exner_w_explicit_weight_parameter,
        current_exner=current_exner,
        current_rho=current_rho,
        current_theta_v=current_theta_v,
        current_w=current_w,
        inv_ddqz_z_full=inv_ddqz_z_full,
        exner_w_implicit_weight_parameter=exner_w_implicit_weight_parameter,
        theta_v_at_cells_on_half_levels=theta_v_at_cells_on_half_levels,
        perturbed_exner_at_cells_on_model_levels=perturbed_exner_at_cells_on_model_levels,
        exner_tendency_due_to_slow_physics=exner_tendency_due_to_slow_physics,
        rho_iau_increment=rho_iau_increment,
        exner_iau_increment=exner_iau_increment,
        ddqz_z_half=ddqz_z_half,
        iau_wgt_dyn=iau_wgt_dyn,
        dtime=dtime,
        is_iau_active=is_iau_active,
        n_lev=vertical_end_index_model_surface - 1,
        out=(vertical_mass_flux_at_cells_on_half_levels,
             tridiagonal_beta_coeff_at_cells_on_model_levels,
             tridiagonal_alpha_coeff_at_cells_on_half_levels, next_w, rho_explicit_term,
             exner_explicit_term),
        domain={
            dims.CellDim: (start_cell_index_nudging, end_cell_index_local),
            dims.KDim: (vertical_start_index_model_top, vertical_end_index_model_surface - 1),
        },
    )
    _vertically_implicit_solver_at_predictor_step_after_solving_w(
        tridiagonal_beta_coeff_at_cells_on_model_levels=(
            tridiagonal_beta_coeff_at_cells_on_model_levels),
        tridiagonal_alpha_coeff_at_cells_on_half_levels=(
            tridiagonal_alpha_coeff_at_cells_on_half_levels),
        next_w=next_w,
        dwdz_at_cells_on_model_levels=dwdz_at_cells_on_model_levels,
        exner_dynamical_increment=exner_dynamical_increment,
        rho_at_cells_on_half_levels=rho_at_cells_on_half_levels,
        contravariant_correction_at_cells_on_half_levels=(
            contravariant_correction_at_cells_on_half_levels),
        current_exner=current_exner,
        current_rho=current_rho,
        current_theta_v=current_theta_v,
        inv_ddqz_z_full=inv_ddqz_z_full,
        exner_w_implicit_weight_parameter=exner_w_implicit_weight_parameter,
        rayleigh_damping_factor=rayleigh_damping_factor,
        reference_exner_at_cells_on_model_levels=reference_exner_at_cells_on_model_levels,
        rho_explicit_term=rho_explicit_term,
        exner_explicit_term=exner_explicit_term,
        dtime=dtime,
        rayleigh_type=rayleigh_type,
        divdamp_type=divdamp_type,
        at_first_substep=at_first_substep,
        end_index_of_damping_layer=end_index_of_damping_layer,
        kstart_moist=kstart_moist,
        out=(next_w, next_rho, next_exner, next_theta_v, dwdz_at_cells_on_model_levels,
             exner_dynamical_increment),
        domain={
            dims.CellDim: (start_cell_index_nudging, end_cell_index_local),
            dims.KDim: (vertical_start_index_model_top, vertical_end_index_model_surface - 1),
        },
    )


@gtx.field_operator
def _vertically_implicit_solver_at_corrector_step_before_solving_w(
    vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    next_w: fa.CellKField[ta.wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    mass_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    predictor_vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    corrector_vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[ta.wpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    current_w: fa.CellKField[ta.wpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[ta.wpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    exner_tendency_due_to_slow_physics: fa.CellKField[ta.vpfloat],
    rho_iau_increment: fa.CellKField[ta.vpfloat],
    exner_iau_increment: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    advection_explicit_weight_parameter: ta.wpfloat,
    advection_implicit_weight_parameter: ta.wpfloat,
    iau_wgt_dyn: ta.wpfloat,
    dtime: ta.wpfloat,
    is_iau_active: bool,
    n_lev: gtx.int32,
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat],
           fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    # the same steps as at the predictor step, with the interpolated advective tendency
    divergence_of_mass, divergence_of_theta_v = _compute_divergence_of_fluxes_of_rho_and_theta(
        geofac_div, mass_flux_at_edges_on_model_levels, theta_v_flux_at_edges_on_model_levels)
    w_explicit_term = concat_where(
        dims.KDim >= 1,
        _compute_w_explicit_term_with_interpolated_predictor_corrector_advective_tendency(
            current_w, predictor_vertical_wind_advective_tendency,
            corrector_vertical_wind_advective_tendency,
            pressure_buoyancy_acceleration_at_cells_on_half_levels, dtime,
            advection_explicit_weight_parameter, advection_implicit_weight_parameter),
        broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)))
    (next_w, vertical_mass_flux_at_cells_on_half_levels) = concat_where(
        dims.KDim == 0,
        (broadcast(wpfloat("0.0"), (dims.CellDim,)), broadcast(wpfloat("0.0"), (dims.CellDim,))),
        (next_w, vertical_mass_flux_at_cells_on_half_levels))
    vertical_mass_flux_at_cells_on_half_levels = concat_where(
        (dims.KDim >= 1) & (dims.KDim < n_lev),
        rho_at_cells_on_half_levels * (
            -astype(contravariant_correction_at_cells_on_half_levels, wpfloat)
            + exner_w_explicit_weight_parameter * current_w),
        vertical_mass_flux_at_cells_on_half_levels)
    beta, alpha = _compute_solver_coefficients_matrix(
        current_exner, current_rho, current_theta_v, inv_ddqz_z_full,
        exner_w_implicit_weight_parameter, theta_v_at_cells_on_half_levels,
        rho_at_cells_on_half_levels, dtime)
    rho_explicit_term, exner_explicit_term = _compute_explicit_part_for_rho_and_exner(
        current_rho, inv_ddqz_z_full, divergence_of_mass,
        vertical_mass_flux_at_cells_on_half_levels, perturbed_exner_at_cells_on_model_levels,
        beta, divergence_of_theta_v, theta_v_at_cells_on_half_levels,
        exner_tendency_due_to_slow_physics, dtime)
    if is_iau_active:
        rho_explicit_term, exner_explicit_term = _add_analysis_increments_from_data_assimilation(
            rho_explicit_term, exner_explicit_term, rho_iau_increment, exner_iau_increment,
            iau_wgt_dyn)
    z_q, next_w = concat_where(
        dims.KDim > 0,
        _solve_tridiagonal_matrix_for_w_forward_sweep(
            exner_w_implicit_weight_parameter, theta_v_at_cells_on_half_levels, ddqz_z_half,
            alpha, beta, w_explicit_term, exner_explicit_term, dtime, dycore_consts.cpd),
        (broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)), next_w))
    z_q = concat_where(dims.KDim == n_lev - 1,
                       broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)), z_q)
    next_w = concat_where(
        dims.KDim > 0, _solve_tridiagonal_matrix_for_w_back_substitution_scan(z_q, next_w),
        next_w)
    return (vertical_mass_flux_at_cells_on_half_levels, beta, alpha, next_w, rho_explicit_term,
            exner_explicit_term)


@gtx.field_operator
def _vertically_implicit_solver_at_corrector_step_after_solving_w(
    vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    tridiagonal_beta_coeff_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    tridiagonal_alpha_coeff_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    next_w: fa.CellKField[ta.wpfloat],
    dynamical_vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    dynamical_vertical_volumetric_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    exner_dynamical_increment: fa.CellKField[ta.wpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[ta.wpfloat],
    exner_tendency_due_to_slow_physics: fa.CellKField[ta.vpfloat],
    rayleigh_damping_factor: fa.KField[ta.wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    rho_explicit_term: fa.CellKField[ta.wpfloat],
    exner_explicit_term: fa.CellKField[ta.wpfloat],
    lprep_adv: bool,
    r_nsubsteps: ta.wpfloat,
    ndyn_substeps_var: ta.wpfloat,
    dtime: ta.wpfloat,
    rayleigh_type: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
    kstart_moist: gtx.int32,
    at_first_substep: bool,
    at_last_substep: bool,
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
           fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
           fa.CellKField[ta.wpfloat]]:
    w_1 = broadcast(wpfloat("0.0"), (dims.CellDim,))
    if rayleigh_type == rayleigh_damping_options.KLEMP:
        next_w = concat_where(
            (dims.KDim > 0) & (dims.KDim < end_index_of_damping_layer + 1),
            _apply_rayleigh_damping_mechanism(rayleigh_damping_factor, w_1, next_w),
            next_w)
    next_rho, next_exner, next_theta_v = _compute_results_for_thermodynamic_variables(
        rho_explicit_term, exner_w_implicit_weight_parameter, inv_ddqz_z_full,
        rho_at_cells_on_half_levels, next_w, exner_explicit_term,
        reference_exner_at_cells_on_model_levels,
        tridiagonal_alpha_coeff_at_cells_on_half_levels,
        tridiagonal_beta_coeff_at_cells_on_model_levels, current_rho, current_theta_v,
        current_exner, dtime)
    if lprep_adv:
        if at_first_substep:
            (dynamical_vertical_mass_flux_at_cells_on_half_levels,
             dynamical_vertical_volumetric_flux_at_cells_on_half_levels) = (
                broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)),
                broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)))
        (dynamical_vertical_mass_flux_at_cells_on_half_levels,
         dynamical_vertical_volumetric_flux_at_cells_on_half_levels) = concat_where(
            dims.KDim >= 1,
            _update_mass_volume_flux(
                vertical_mass_flux_at_cells_on_half_levels, rho_at_cells_on_half_levels,
                exner_w_implicit_weight_parameter, next_w,
                dynamical_vertical_mass_flux_at_cells_on_half_levels,
                dynamical_vertical_volumetric_flux_at_cells_on_half_levels, r_nsubsteps),
            (dynamical_vertical_mass_flux_at_cells_on_half_levels,
             dynamical_vertical_volumetric_flux_at_cells_on_half_levels))
    exner_dynamical_increment = (
        concat_where(
            dims.KDim >= kstart_moist,
            astype(_update_dynamical_exner_time_increment(
                next_exner, exner_tendency_due_to_slow_physics,
                astype(exner_dynamical_increment, vpfloat), ndyn_substeps_var, dtime), wpfloat),
            exner_dynamical_increment)
        if at_last_substep
        else exner_dynamical_increment)
    return (next_w, next_rho, next_exner, next_theta_v,
            dynamical_vertical_mass_flux_at_cells_on_half_levels,
            dynamical_vertical_volumetric_flux_at_cells_on_half_levels, exner_dynamical_increment)


@gtx.program
def vertically_implicit_solver_at_corrector_step(
    vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    tridiagonal_beta_coeff_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    tridiagonal_alpha_coeff_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    next_w: fa.CellKField[ta.wpfloat],
    rho_explicit_term: fa.CellKField[ta.wpfloat],
    exner_explicit_term: fa.CellKField[ta.wpfloat],
    next_rho: fa.CellKField[ta.wpfloat],
    next_exner: fa.CellKField[ta.wpfloat],
    next_theta_v: fa.CellKField[ta.wpfloat],
    dynamical_vertical_mass_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    dynamical_vertical_volumetric_flux_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    exner_dynamical_increment: fa.CellKField[ta.wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    mass_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    predictor_vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    corrector_vertical_wind_advective_tendency: fa.CellKField[ta.vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[ta.wpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    current_w: fa.CellKField[ta.wpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.vpfloat],
    exner_w_implicit_weight_parameter: fa.CellField[ta.wpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    exner_tendency_due_to_slow_physics: fa.CellKField[ta.vpfloat],
    rho_iau_increment: fa.CellKField[ta.vpfloat],
    exner_iau_increment: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    rayleigh_damping_factor: fa.KField[ta.wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    advection_explicit_weight_parameter: ta.wpfloat,
    advection_implicit_weight_parameter: ta.wpfloat,
    lprep_adv: bool,
    r_nsubsteps: ta.wpfloat,
    ndyn_substeps_var: ta.wpfloat,
    iau_wgt_dyn: ta.wpfloat,
    dtime: ta.wpfloat,
    is_iau_active: bool,
    rayleigh_type: gtx.int32,
    at_first_substep: bool,
    at_last_substep: bool,
    end_index_of_damping_layer: gtx.int32,
    kstart_moist: gtx.int32,
    start_cell_index_nudging: gtx.int32,
    end_cell_index_local: gtx.int32,
    vertical_start_index_model_top: gtx.int32,
    vertical_end_index_model_surface: gtx.int32,
):
    cells = (start_cell_index_nudging, end_cell_index_local)
    _set_surface_boundary_condition_for_computation_of_w(
        contravariant_correction_at_cells_on_half_levels,
        out=(tridiagonal_alpha_coeff_at_cells_on_half_levels, next_w,
             vertical_mass_flux_at_cells_on_half_levels),
        domain={dims.CellDim: cells,
                dims.KDim: (vertical_end_index_model_surface - 1,
                            vertical_end_index_model_surface)})
    _vertically_implicit_solver_at_corrector_step_before_solving_w(
        vertical_mass_flux_at_cells_on_half_levels, next_w, geofac_div,
        mass_flux_at_edges_on_model_levels, theta_v_flux_at_edges_on_model_levels,
        predictor_vertical_wind_advective_tendency, corrector_vertical_wind_advective_tendency,
        pressure_buoyancy_acceleration_at_cells_on_half_levels, rho_at_cells_on_half_levels,
        contravariant_correction_at_cells_on_half_levels, exner_w_explicit_weight_parameter,
        current_exner, current_rho, current_theta_v, current_w, inv_ddqz_z_full,
        exner_w_implicit_weight_parameter, theta_v_at_cells_on_half_levels,
        perturbed_exner_at_cells_on_model_levels, exner_tendency_due_to_slow_physics,
        rho_iau_increment, exner_iau_increment, ddqz_z_half,
        advection_explicit_weight_parameter, advection_implicit_weight_parameter, iau_wgt_dyn,
        dtime, is_iau_active, vertical_end_index_model_surface - 1,
        out=(vertical_mass_flux_at_cells_on_half_levels,
             tridiagonal_beta_coeff_at_cells_on_model_levels,
             tridiagonal_alpha_coeff_at_cells_on_half_levels, next_w, rho_explicit_term,
             exner_explicit_term),
        domain={dims.CellDim: cells,
                dims.KDim: (vertical_start_index_model_top,
                            vertical_end_index_model_surface - 1)})
    _vertically_implicit_solver_at_corrector_step_after_solving_w(
        vertical_mass_flux_at_cells_on_half_levels,
        tridiagonal_beta_coeff_at_cells_on_model_levels,
        tridiagonal_alpha_coeff_at_cells_on_half_levels, next_w,
        dynamical_vertical_mass_flux_at_cells_on_half_levels,
        dynamical_vertical_volumetric_flux_at_cells_on_half_levels, exner_dynamical_increment,
        rho_at_cells_on_half_levels, current_exner, current_rho, current_theta_v,
        inv_ddqz_z_full, exner_w_implicit_weight_parameter, exner_tendency_due_to_slow_physics,
        rayleigh_damping_factor, reference_exner_at_cells_on_model_levels, rho_explicit_term,
        exner_explicit_term, lprep_adv, r_nsubsteps, ndyn_substeps_var, dtime, rayleigh_type,
        end_index_of_damping_layer, kstart_moist, at_first_substep, at_last_substep,
        out=(next_w, next_rho, next_exner, next_theta_v,
             dynamical_vertical_mass_flux_at_cells_on_half_levels,
             dynamical_vertical_volumetric_flux_at_cells_on_half_levels,
             exner_dynamical_increment),
        domain={dims.CellDim: cells,
                dims.KDim: (vertical_start_index_model_top,
                            vertical_end_index_model_surface - 1)})


HALF = ("contravariant_correction_at_cells_on_half_levels",
        "vertical_mass_flux_at_cells_on_half_levels",
        "tridiagonal_alpha_coeff_at_cells_on_half_levels", "next_w",
        "rho_at_cells_on_half_levels", "current_w", "theta_v_at_cells_on_half_levels",
        "ddqz_z_half", "dynamical_vertical_mass_flux_at_cells_on_half_levels",
        "dynamical_vertical_volumetric_flux_at_cells_on_half_levels")


def solver_inputs(corrector=False):
    n, h = NLEV, NLEV + 1
    a = dict(
        contravariant_correction_at_cells_on_half_levels=(vp(NC, h) - 0.5) * 0.1,
        vertical_mass_flux_at_cells_on_half_levels=wp(NC, h) + 3.0,
        tridiagonal_beta_coeff_at_cells_on_model_levels=vp(NC, n) + 3.0,
        tridiagonal_alpha_coeff_at_cells_on_half_levels=vp(NC, h) + 3.0,
        next_w=wp(NC, h) + 5.0, rho_explicit_term=wp(NC, n) + 3.0,
        exner_explicit_term=wp(NC, n) + 3.0, next_rho=wp(NC, n) + 3.0,
        next_exner=wp(NC, n) + 3.0, next_theta_v=wp(NC, n) + 3.0,
        geofac_div=wp(NC, 3) - 0.5, mass_flux_at_edges_on_model_levels=wp(NE, n) - 0.5,
        theta_v_flux_at_edges_on_model_levels=(wp(NE, n) - 0.5) * 300.0,
        predictor_vertical_wind_advective_tendency=(vp(NC, n) - 0.5) * 0.01,
        pressure_buoyancy_acceleration_at_cells_on_half_levels=(vp(NC, n) - 0.5) * 1e-4,
        rho_at_cells_on_half_levels=wp(NC, h) * 0.3 + 0.8,
        exner_w_explicit_weight_parameter=wp(NC) * 0.2 + 0.3,
        current_exner=wp(NC, n) * 0.1 + 0.85, current_rho=wp(NC, n) * 0.3 + 0.8,
        current_theta_v=wp(NC, n) * 30.0 + 290.0, current_w=(wp(NC, h) - 0.5) * 0.2,
        inv_ddqz_z_full=(vp(NC, n) * 0.002 + 0.002).astype(f32),
        exner_w_implicit_weight_parameter=wp(NC) * 0.2 + 0.5,
        theta_v_at_cells_on_half_levels=wp(NC, h) * 30.0 + 290.0,
        perturbed_exner_at_cells_on_model_levels=(wp(NC, n) - 0.5) * 1e-3,
        exner_tendency_due_to_slow_physics=(vp(NC, n) - 0.5) * 1e-5,
        rho_iau_increment=(vp(NC, n) - 0.5) * 1e-3, exner_iau_increment=(vp(NC, n) - 0.5) * 1e-4,
        ddqz_z_half=vp(NC, h) * 200.0 + 200.0, rayleigh_damping_factor=wp(h) * 0.5 + 0.5,
        reference_exner_at_cells_on_model_levels=vp(NC, n) * 0.1 + 0.85)
    if corrector:
        a.update(
            corrector_vertical_wind_advective_tendency=(vp(NC, n) - 0.5) * 0.01,
            dynamical_vertical_mass_flux_at_cells_on_half_levels=wp(NC, h),
            dynamical_vertical_volumetric_flux_at_cells_on_half_levels=wp(NC, h),
            exner_dynamical_increment=wp(NC, n) * 1e-3)
    else:
        a.update(dwdz_at_cells_on_model_levels=vp(NC, n) + 3.0,
                 exner_dynamical_increment=vp(NC, n) + 3.0)
    return a


def solver_numpy(a, s, hs, he, corrector=False):
    """ICON's implicit solve for w, column by column, levels [0, nlev) and the surface."""
    c = dycore_consts
    n = NLEV
    out = {k: np.array(v, dtype=f64) for k, v in a.items()}
    w_concorr = a["contravariant_correction_at_cells_on_half_levels"].astype(f64)
    rho_ic, theta_v_ic = a["rho_at_cells_on_half_levels"], a["theta_v_at_cells_on_half_levels"]
    wexpl, wimpl = a["exner_w_explicit_weight_parameter"], a["exner_w_implicit_weight_parameter"]
    dt = s["dtime"]
    div_mass = nbsum(a["geofac_div"], a["mass_flux_at_edges_on_model_levels"], TABLES["C2E"])
    div_theta = nbsum(a["geofac_div"], a["theta_v_flux_at_edges_on_model_levels"], TABLES["C2E"])
    for i in range(hs, he):
        # the surface level of three half-level fields
        out["tridiagonal_alpha_coeff_at_cells_on_half_levels"][i, n] = 0.0
        out["next_w"][i, n] = w_concorr[i, n]
        out["vertical_mass_flux_at_cells_on_half_levels"][i, n] = 0.0
        # before solving
        ks = np.arange(n)
        tend = a["predictor_vertical_wind_advective_tendency"][i].astype(f64)
        if corrector:
            tend = (s["advection_explicit_weight_parameter"] * tend
                    + s["advection_implicit_weight_parameter"]
                    * a["corrector_vertical_wind_advective_tendency"][i].astype(f64))
        w_expl = np.where(ks >= 1, a["current_w"][i, :n] + dt * (
            tend - c.cpd * a["pressure_buoyancy_acceleration_at_cells_on_half_levels"][i]), 0.0)
        vmf = out["vertical_mass_flux_at_cells_on_half_levels"][i].copy()
        vmf[0] = 0.0
        vmf[1:n] = rho_ic[i, 1:n] * (-w_concorr[i, 1:n] + wexpl[i] * a["current_w"][i, 1:n])
        exner, rho, theta_v = a["current_exner"][i], a["current_rho"][i], a["current_theta_v"][i]
        inv_ddqz = a["inv_ddqz_z_full"][i].astype(f64)
        beta = dt * c.rd * exner / (c.cvd * rho * theta_v) * inv_ddqz
        alpha = wimpl[i] * theta_v_ic[i] * rho_ic[i]
        rho_expl = rho - dt * inv_ddqz * (div_mass[i] + vmf[:n] - vmf[1:])
        exner_expl = (a["perturbed_exner_at_cells_on_model_levels"][i]
                      - beta * (div_theta[i] + theta_v_ic[i, :n] * vmf[:n]
                                - theta_v_ic[i, 1:] * vmf[1:])
                      + dt * a["exner_tendency_due_to_slow_physics"][i])
        if s["is_iau_active"]:
            rho_expl = rho_expl + s["iau_wgt_dyn"] * a["rho_iau_increment"][i]
            exner_expl = exner_expl + s["iau_wgt_dyn"] * a["exner_iau_increment"][i]
        q, w = np.zeros(n), np.zeros(n)
        q_prev, w_prev = 0.0, 0.0
        for k in range(1, n):
            gamma = dt * c.cpd * wimpl[i] * theta_v_ic[i, k] / a["ddqz_z_half"][i, k]
            za = -gamma * beta[k - 1] * alpha[k - 1]
            zc = -gamma * beta[k] * alpha[k + 1]
            zb = 1.0 + gamma * alpha[k] * (beta[k - 1] + beta[k])
            w_prep = w_expl[k] - gamma * (exner_expl[k - 1] - exner_expl[k])
            g = 1.0 / (zb + za * q_prev)
            q_prev, w_prev = -zc * g, (w_prep - za * w_prev) * g
            q[k], w[k] = q_prev, w_prev
        q[n - 1] = 0.0
        state = 1.0
        for k in range(n - 1, 0, -1):
            w[k] = w[k] + state * q[k]
            state = w[k]
        w[0] = 0.0
        out["vertical_mass_flux_at_cells_on_half_levels"][i, :n] = vmf[:n]
        out["tridiagonal_beta_coeff_at_cells_on_model_levels"][i] = beta
        out["tridiagonal_alpha_coeff_at_cells_on_half_levels"][i, :n] = alpha[:n]
        out["next_w"][i, :n] = w
        out["rho_explicit_term"][i], out["exner_explicit_term"][i] = rho_expl, exner_expl
        # after solving
        w = out["next_w"][i].copy()
        if s["rayleigh_type"] == RayleighType.KLEMP:
            damp = slice(1, s["end_index_of_damping_layer"] + 1)
            w[damp] = a["rayleigh_damping_factor"][damp] * w[damp]
        alpha = out["tridiagonal_alpha_coeff_at_cells_on_half_levels"][i]
        rho_new = rho_expl - wimpl[i] * dt * inv_ddqz * (rho_ic[i, :n] * w[:n]
                                                         - rho_ic[i, 1:] * w[1:])
        exner_new = (exner_expl + a["reference_exner_at_cells_on_model_levels"][i]
                     - beta * (alpha[:n] * w[:n] - alpha[1:] * w[1:]))
        out["next_w"][i, :n] = w[:n]
        out["next_rho"][i] = rho_new
        out["next_exner"][i] = exner_new
        out["next_theta_v"][i] = rho * theta_v * ((exner_new / exner - 1.0) * c.cvd_o_rd + 1.0) \
            / rho_new
        if corrector:
            mass = out["dynamical_vertical_mass_flux_at_cells_on_half_levels"][i]
            vol = out["dynamical_vertical_volumetric_flux_at_cells_on_half_levels"][i]
            if s["lprep_adv"]:
                if s["at_first_substep"]:
                    mass[:n], vol[:n] = 0.0, 0.0
                za = s["r_nsubsteps"] * (vmf[1:n] + rho_ic[i, 1:n] * wimpl[i] * w[1:n])
                mass[1:n] += za
                vol[1:n] += za / rho_ic[i, 1:n]
            if s["at_last_substep"]:
                incr = out["exner_dynamical_increment"][i]
                km = slice(s["kstart_moist"], n)
                incr[km] = exner_new[km] - (
                    incr[km] + s["ndyn_substeps_var"] * dt
                    * a["exner_tendency_due_to_slow_physics"][i, km])
        else:
            if s["divdamp_type"] >= 3:
                out["dwdz_at_cells_on_model_levels"][i] = inv_ddqz * (
                    (w[:n] - w[1:]) - (w_concorr[i, :n] - w_concorr[i, 1:]))
            if s["at_first_substep"]:
                km = slice(s["kstart_moist"], n)
                out["exner_dynamical_increment"][i, km] = exner[km]
    return out


PREDICTOR_CASES = [
    dict(iau_wgt_dyn=0.5, dtime=2.0, is_iau_active=True, rayleigh_type=RayleighType.KLEMP,
         divdamp_type=3, at_first_substep=True, end_index_of_damping_layer=2, kstart_moist=3),
    dict(iau_wgt_dyn=0.5, dtime=2.0, is_iau_active=False, rayleigh_type=RayleighType.CLASSIC,
         divdamp_type=2, at_first_substep=False, end_index_of_damping_layer=2, kstart_moist=3),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(PREDICTOR_CASES)))
def test_vertically_implicit_solver_at_predictor_step(backend, case):
    a = solver_inputs()
    s = PREDICTOR_CASES[case]
    hs, he = 1, NC - 1
    expected = solver_numpy(a, s, hs, he)
    vertically_implicit_solver_at_predictor_step(
        **a, **s, start_cell_index_nudging=hs, end_cell_index_local=he,
        vertical_start_index_model_top=0, vertical_end_index_model_surface=NLEV + 1,
        offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=2e-4)


CORRECTOR_CASES = [
    dict(iau_wgt_dyn=0.5, dtime=2.0, is_iau_active=False, rayleigh_type=RayleighType.KLEMP,
         advection_explicit_weight_parameter=0.25, advection_implicit_weight_parameter=0.75,
         lprep_adv=True, r_nsubsteps=0.2, ndyn_substeps_var=5.0, at_first_substep=True,
         at_last_substep=True, end_index_of_damping_layer=3, kstart_moist=2),
    dict(iau_wgt_dyn=0.5, dtime=2.0, is_iau_active=True, rayleigh_type=RayleighType.CLASSIC,
         advection_explicit_weight_parameter=0.25, advection_implicit_weight_parameter=0.75,
         lprep_adv=True, r_nsubsteps=0.2, ndyn_substeps_var=5.0, at_first_substep=False,
         at_last_substep=False, end_index_of_damping_layer=3, kstart_moist=2),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(CORRECTOR_CASES)))
def test_vertically_implicit_solver_at_corrector_step(backend, case):
    a = solver_inputs(corrector=True)
    s = CORRECTOR_CASES[case]
    hs, he = 0, NC - 2
    expected = solver_numpy(a, s, hs, he, corrector=True)
    vertically_implicit_solver_at_corrector_step(
        **a, **s, start_cell_index_nudging=hs, end_cell_index_local=he,
        vertical_start_index_model_top=0, vertical_end_index_model_surface=NLEV + 1,
        offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=2e-4)


# ------------------------------------------------------------- edges: fluxes and tendencies
#
# Chained statements of one program: the flux average over E2C2EO (absent
# neighbours) feeds the mass flux, which feeds the accumulation written in place
# (out= two of its own inputs); an E2C2E interpolation written without domain=.


@gtx.field_operator
def _spatially_average_flux_or_velocity(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(e_flx_avg * vn(dims.E2C2EO), axis=dims.E2C2EODim)


@gtx.field_operator
def _compute_mass_and_temperature_flux(
    z_rho_e: fa.EdgeKField[wpfloat], z_vn_avg: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat], theta_v_at_edges_on_model_levels: fa.EdgeKField[wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    mass_fl_e_wp = z_rho_e * z_vn_avg * astype(ddqz_z_full_e, wpfloat)
    return mass_fl_e_wp, mass_fl_e_wp * theta_v_at_edges_on_model_levels


@gtx.field_operator
def _accumulate_prep_adv_fields(
    z_vn_avg: fa.EdgeKField[wpfloat], mass_fl_e: fa.EdgeKField[wpfloat],
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat], r_nsubsteps: wpfloat,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    return vn_traj + r_nsubsteps * z_vn_avg, mass_flx_me + r_nsubsteps * mass_fl_e


@gtx.field_operator
def _add_temporal_tendencies_to_vn(
    vn_nnow: fa.EdgeKField[wpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat], dtime: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    z_gradh_exner_wp = astype(z_gradh_exner, wpfloat)
    return vn_nnow + dtime * (astype(ddt_vn_apc_ntl1, wpfloat)
                              - dycore_consts.cpd * z_theta_v_e * z_gradh_exner_wp
                              + astype(ddt_vn_phy, wpfloat))


@gtx.field_operator
def _rbf_intp_edge_stencil_01(
    p_vn_in: fa.EdgeKField[float], ptr_coeff: Field[[dims.EdgeDim, dims.E2C2EDim], float],
) -> fa.EdgeKField[float]:
    return neighbor_sum(p_vn_in(dims.E2C2E) * ptr_coeff, axis=dims.E2C2EDim)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def edge_stencils(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat], z_vn_avg: fa.EdgeKField[wpfloat], z_rho_e: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat], theta_v_e: fa.EdgeKField[wpfloat],
    mass_fl_e: fa.EdgeKField[wpfloat], z_theta_v_fl_e: fa.EdgeKField[wpfloat],
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat],
    vn_nnow: fa.EdgeKField[wpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], z_gradh_exner: fa.EdgeKField[vpfloat],
    vn_nnew: fa.EdgeKField[wpfloat], ptr_coeff: Field[[dims.EdgeDim, dims.E2C2EDim], float],
    p_vt_out: fa.EdgeKField[float], r_nsubsteps: wpfloat, dtime: wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32, vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    domain = {dims.EdgeDim: (horizontal_start, horizontal_end),
              dims.KDim: (vertical_start, vertical_end)}
    _spatially_average_flux_or_velocity(e_flx_avg, vn, out=z_vn_avg, domain=domain)
    _compute_mass_and_temperature_flux(z_rho_e, z_vn_avg, ddqz_z_full_e, theta_v_e,
                                       out=(mass_fl_e, z_theta_v_fl_e), domain=domain)
    _accumulate_prep_adv_fields(z_vn_avg, mass_fl_e, vn_traj, mass_flx_me, r_nsubsteps,
                                out=(vn_traj, mass_flx_me), domain=domain)
    _add_temporal_tendencies_to_vn(vn_nnow, ddt_vn_apc_ntl1, ddt_vn_phy, theta_v_e,
                                   z_gradh_exner, dtime, out=vn_nnew, domain=domain)
    _rbf_intp_edge_stencil_01(vn, ptr_coeff, out=p_vt_out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_edge_stencils(backend):
    n = NLEV
    a = dict(e_flx_avg=wp(NE, 5), vn=wp(NE, n) - 0.5, z_vn_avg=wp(NE, n), z_rho_e=wp(NE, n) + 0.5,
             ddqz_z_full_e=vp(NE, n) * 100.0, theta_v_e=wp(NE, n) * 30 + 280,
             mass_fl_e=wp(NE, n), z_theta_v_fl_e=wp(NE, n), vn_traj=wp(NE, n),
             mass_flx_me=wp(NE, n), vn_nnow=wp(NE, n), ddt_vn_apc_ntl1=vp(NE, n) * 1e-3,
             ddt_vn_phy=vp(NE, n) * 1e-3, z_gradh_exner=(vp(NE, n) - 0.5) * 1e-5,
             vn_nnew=wp(NE, n), ptr_coeff=wp(NE, 4), p_vt_out=wp(NE, n))
    r_nsubsteps, dtime = 0.2, 2.0
    bounds = (2, NE - 3, 1, n - 1)
    e = {k: v.astype(f64) for k, v in a.items()}
    avg = inside(nbsum(e["e_flx_avg"], e["vn"], TABLES["E2C2EO"]), e["z_vn_avg"], *bounds)
    mass = inside(e["z_rho_e"] * avg * e["ddqz_z_full_e"], e["mass_fl_e"], *bounds)
    expected = dict(
        z_vn_avg=avg, mass_fl_e=mass,
        z_theta_v_fl_e=inside(mass * e["theta_v_e"], e["z_theta_v_fl_e"], *bounds),
        vn_traj=inside(e["vn_traj"] + r_nsubsteps * avg, e["vn_traj"], *bounds),
        mass_flx_me=inside(e["mass_flx_me"] + r_nsubsteps * mass, e["mass_flx_me"], *bounds),
        vn_nnew=inside(e["vn_nnow"] + dtime * (
            e["ddt_vn_apc_ntl1"] - dycore_consts.cpd * e["theta_v_e"] * e["z_gradh_exner"]
            + e["ddt_vn_phy"]), e["vn_nnew"], *bounds),
        p_vt_out=nbsum(e["ptr_coeff"], e["vn"], TABLES["E2C2E"]))
    hs, he, vs, ve = bounds
    edge_stencils(**a, r_nsubsteps=r_nsubsteps, dtime=dtime, horizontal_start=hs,
                  horizontal_end=he, vertical_start=vs, vertical_end=ve,
                  offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=1e-9)


# ----------------------------------------------------- cells: exner, half levels, Laplacians
#
# The temporal extrapolation of exner writes one of its inputs in place and the
# next statement reads it one level up; half levels come from a ``concat_where``
# on ``1 <= dims.KDim`` around a ``concat_where`` on a runtime cell range
# ``(start <= dims.CellDim) & (dims.CellDim < end)``, each keeping the outputs'
# own values (a tuple of the output fields) elsewhere; Laplacians over C2E2CO
# (a cell without any neighbour) on a CellField under a Cell-only domain and on
# a CellKField.


@gtx.field_operator
def _extrapolate_temporally_exner_pressure(
    time_extrapolation_parameter_for_exner: fa.CellKField[vpfloat],
    exner: fa.CellKField[wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[vpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[wpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[wpfloat]]:
    exfac_wp, exner_ref_wp = astype(
        (time_extrapolation_parameter_for_exner, reference_exner_at_cells_on_model_levels),
        wpfloat)
    z_exner_ex_pr_wp = ((wpfloat("1.0") + exfac_wp) * (exner - exner_ref_wp)
                        - exfac_wp * perturbed_exner_at_cells_on_model_levels)
    return astype(z_exner_ex_pr_wp, vpfloat), exner - exner_ref_wp


@gtx.field_operator
def _compute_rho_virtual_potential_temperatures_and_pressure_gradient(
    w: fa.CellKField[wpfloat], w_concorr_c: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat], rho_now: fa.CellKField[wpfloat],
    rho_var: fa.CellKField[wpfloat], theta_now: fa.CellKField[wpfloat],
    theta_var: fa.CellKField[wpfloat], wgtfac_c: fa.CellKField[vpfloat],
    theta_ref_mc: fa.CellKField[vpfloat], vwind_expl_wgt: fa.CellField[wpfloat],
    exner_pr: fa.CellKField[wpfloat], d_exner_dz_ref_ic: fa.CellKField[vpfloat],
    dtime: wpfloat, wgt_nnow_rth: wpfloat, wgt_nnew_rth: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[vpfloat], fa.CellKField[wpfloat],
           fa.CellKField[vpfloat]]:
    w_concorr_c_wp, wgtfac_c_wp, theta_ref_mc_wp, ddqz_z_half_wp = astype(
        (w_concorr_c, wgtfac_c, theta_ref_mc, ddqz_z_half), wpfloat)
    z_w_backtraj_wp = -(w - w_concorr_c_wp) * dtime * wpfloat("0.5") / ddqz_z_half_wp
    rho_tavg_m1 = wgt_nnow_rth * rho_now(Koff[-1]) + wgt_nnew_rth * rho_var(Koff[-1])
    theta_tavg_m1 = wgt_nnow_rth * theta_now(Koff[-1]) + wgt_nnew_rth * theta_var(Koff[-1])
    rho_tavg = wgt_nnow_rth * rho_now + wgt_nnew_rth * rho_var
    theta_tavg = wgt_nnow_rth * theta_now + wgt_nnew_rth * theta_var
    rho_ic_wp = (wgtfac_c_wp * rho_tavg + (wpfloat("1.0") - wgtfac_c_wp) * rho_tavg_m1
                 + z_w_backtraj_wp * (rho_tavg_m1 - rho_tavg))
    pr_mc_m1_wp = theta_tavg_m1 - theta_ref_mc_wp(Koff[-1])
    pr_mc_wp = theta_tavg - theta_ref_mc_wp
    pr_mc_vp, pr_mc_m1_vp = astype((pr_mc_wp, pr_mc_m1_wp), vpfloat)
    z_theta_v_pr_ic_vp = wgtfac_c * pr_mc_vp + (vpfloat("1.0") - wgtfac_c) * pr_mc_m1_vp
    theta_v_ic_wp = (wgtfac_c_wp * theta_tavg + (wpfloat("1.0") - wgtfac_c_wp) * theta_tavg_m1
                     + z_w_backtraj_wp * (theta_tavg_m1 - theta_tavg))
    z_th_ddz_exner_c_wp = (vwind_expl_wgt * theta_v_ic_wp * (exner_pr(Koff[-1]) - exner_pr)
                           / astype(ddqz_z_half, wpfloat)
                           + astype(z_theta_v_pr_ic_vp * d_exner_dz_ref_ic, wpfloat))
    return rho_ic_wp, z_theta_v_pr_ic_vp, theta_v_ic_wp, astype(z_th_ddz_exner_c_wp, vpfloat)


@gtx.field_operator
def _interpolate_rho_theta_v_to_half_levels_and_compute_temperature_vertical_gradient(
    w: fa.CellKField[wpfloat], w_concorr_c: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat], rho_nnow: fa.CellKField[wpfloat],
    rho_nvar: fa.CellKField[wpfloat], theta_v_nnow: fa.CellKField[wpfloat],
    theta_v_nvar: fa.CellKField[wpfloat], wgtfac_c: fa.CellKField[vpfloat],
    theta_ref_mc: fa.CellKField[vpfloat], vwind_expl_wgt: fa.CellField[wpfloat],
    exner_pr: fa.CellKField[wpfloat], d_exner_dz_ref_ic: fa.CellKField[vpfloat],
    rho_ic: fa.CellKField[wpfloat], z_theta_v_pr_ic: fa.CellKField[vpfloat],
    theta_v_ic: fa.CellKField[wpfloat], z_th_ddz_exner_c: fa.CellKField[vpfloat],
    dtime: wpfloat, wgt_nnow_rth: wpfloat, wgt_nnew_rth: wpfloat,
    start_cell_lateral_boundary_level_3: gtx.int32, end_cell_local: gtx.int32,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[vpfloat], fa.CellKField[wpfloat],
           fa.CellKField[vpfloat]]:
    (rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c) = concat_where(
        1 <= dims.KDim,
        concat_where(
            (start_cell_lateral_boundary_level_3 <= dims.CellDim)
            & (dims.CellDim < end_cell_local),
            _compute_rho_virtual_potential_temperatures_and_pressure_gradient(
                w=w, w_concorr_c=w_concorr_c, ddqz_z_half=ddqz_z_half, rho_now=rho_nnow,
                rho_var=rho_nvar, theta_now=theta_v_nnow, theta_var=theta_v_nvar,
                wgtfac_c=wgtfac_c, theta_ref_mc=theta_ref_mc, vwind_expl_wgt=vwind_expl_wgt,
                exner_pr=exner_pr, d_exner_dz_ref_ic=d_exner_dz_ref_ic, dtime=dtime,
                wgt_nnow_rth=wgt_nnow_rth, wgt_nnew_rth=wgt_nnew_rth),
            (rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c)),
        (rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c))
    return (rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c)


@gtx.field_operator
def _nabla2_scalar_2D(
    psi_c: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
) -> fa.CellField[ta.wpfloat]:
    return neighbor_sum(psi_c(dims.C2E2CO) * geofac_n2s, axis=dims.C2E2CODim)


@gtx.field_operator
def _nabla2_scalar(
    psi_c: fa.CellKField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    return neighbor_sum(psi_c(dims.C2E2CO) * geofac_n2s, axis=dims.C2E2CODim)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def cell_stencils(
    time_extrapolation_parameter_for_exner: fa.CellKField[vpfloat],
    exner: fa.CellKField[wpfloat], reference_exner_at_cells_on_model_levels: fa.CellKField[vpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[wpfloat],
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat], w_concorr_c: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat], rho_nnow: fa.CellKField[wpfloat],
    rho_nvar: fa.CellKField[wpfloat], theta_v_nnow: fa.CellKField[wpfloat],
    theta_v_nvar: fa.CellKField[wpfloat], wgtfac_c: fa.CellKField[vpfloat],
    theta_ref_mc: fa.CellKField[vpfloat], vwind_expl_wgt: fa.CellField[wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[vpfloat], rho_ic: fa.CellKField[wpfloat],
    z_theta_v_pr_ic: fa.CellKField[vpfloat], theta_v_ic: fa.CellKField[wpfloat],
    z_th_ddz_exner_c: fa.CellKField[vpfloat], psi_c_2d: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    nabla2_2d: fa.CellField[wpfloat], psi_c: fa.CellKField[wpfloat],
    nabla2_psi_c: fa.CellKField[wpfloat], dtime: wpfloat, wgt_nnow_rth: wpfloat,
    wgt_nnew_rth: wpfloat, start_cell_lateral_boundary_level_3: gtx.int32,
    end_cell_local: gtx.int32, horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _extrapolate_temporally_exner_pressure(
        time_extrapolation_parameter_for_exner, exner, reference_exner_at_cells_on_model_levels,
        perturbed_exner_at_cells_on_model_levels,
        out=(temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (0, vertical_end)})
    _interpolate_rho_theta_v_to_half_levels_and_compute_temperature_vertical_gradient(
        w, w_concorr_c, ddqz_z_half, rho_nnow, rho_nvar, theta_v_nnow, theta_v_nvar, wgtfac_c,
        theta_ref_mc, vwind_expl_wgt, perturbed_exner_at_cells_on_model_levels,
        d_exner_dz_ref_ic, rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c, dtime,
        wgt_nnow_rth, wgt_nnew_rth, start_cell_lateral_boundary_level_3, end_cell_local,
        out=(rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _nabla2_scalar_2D(psi_c_2d, geofac_n2s, out=nabla2_2d,
                      domain={dims.CellDim: (horizontal_start, horizontal_end)})
    _nabla2_scalar(psi_c, geofac_n2s, out=nabla2_psi_c,
                   domain={dims.CellDim: (horizontal_start, horizontal_end),
                           dims.KDim: (vertical_start, vertical_end)})


def cells_numpy(a, s, hs, he, vs, ve, lb3, end):
    e = {k: v.astype(f64) for k, v in a.items()}
    n = NLEV
    out = {k: v.copy() for k, v in e.items()}
    exfac = e["time_extrapolation_parameter_for_exner"]
    ref = e["reference_exner_at_cells_on_model_levels"]
    ex = (1.0 + exfac) * (e["exner"] - ref) - exfac * e["perturbed_exner_at_cells_on_model_levels"]
    out["temporal_extrapolation_of_perturbed_exner"] = inside(
        ex, e["temporal_extrapolation_of_perturbed_exner"], hs, he, 0, ve)
    exner_pr = out["perturbed_exner_at_cells_on_model_levels"] = inside(
        e["exner"] - ref, e["perturbed_exner_at_cells_on_model_levels"], hs, he, 0, ve)
    k = slice(1, n)
    km1 = slice(0, n - 1)
    nnow, nnew = s["wgt_nnow_rth"], s["wgt_nnew_rth"]
    wgt = e["wgtfac_c"][:, k]
    backtraj = -(e["w"][:, k] - e["w_concorr_c"][:, k]) * s["dtime"] * 0.5 / e["ddqz_z_half"][:, k]
    rho_m1 = nnow * e["rho_nnow"][:, km1] + nnew * e["rho_nvar"][:, km1]
    th_m1 = nnow * e["theta_v_nnow"][:, km1] + nnew * e["theta_v_nvar"][:, km1]
    rho_t = nnow * e["rho_nnow"][:, k] + nnew * e["rho_nvar"][:, k]
    th_t = nnow * e["theta_v_nnow"][:, k] + nnew * e["theta_v_nvar"][:, k]
    pr_ic = wgt * (th_t - e["theta_ref_mc"][:, k]) + (1 - wgt) * (th_m1 - e["theta_ref_mc"][:, km1])
    th_ic = wgt * th_t + (1 - wgt) * th_m1 + backtraj * (th_m1 - th_t)
    new = dict(
        rho_ic=wgt * rho_t + (1 - wgt) * rho_m1 + backtraj * (rho_m1 - rho_t),
        z_theta_v_pr_ic=pr_ic, theta_v_ic=th_ic,
        z_th_ddz_exner_c=e["vwind_expl_wgt"][:, None] * th_ic
        * (exner_pr[:, km1] - exner_pr[:, k]) / e["ddqz_z_half"][:, k]
        + pr_ic * e["d_exner_dz_ref_ic"][:, k])
    for name, value in new.items():
        full = out[name].copy()
        full[:, k] = value
        rows = np.zeros(NC, bool)
        rows[max(hs, lb3):min(he, end)] = True
        full[~rows] = out[name][~rows]
        out[name] = inside(full, out[name], hs, he, max(vs, 1), ve)
    out["nabla2_2d"] = e["nabla2_2d"].copy()
    out["nabla2_2d"][hs:he] = nbsum(e["geofac_n2s"], e["psi_c_2d"], TABLES["C2E2CO"])[hs:he]
    out["nabla2_psi_c"] = inside(nbsum(e["geofac_n2s"], e["psi_c"], TABLES["C2E2CO"]),
                                 e["nabla2_psi_c"], hs, he, vs, ve)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 1, NLEV, 2, NC - 1), (1, NC - 1, 0, NLEV - 1, 0, 5)])
def test_cell_stencils(backend, bounds):
    n, h = NLEV, NLEV + 1
    a = dict(
        time_extrapolation_parameter_for_exner=vp(NC, n), exner=wp(NC, n) + 0.5,
        reference_exner_at_cells_on_model_levels=vp(NC, n) + 0.5,
        perturbed_exner_at_cells_on_model_levels=wp(NC, n),
        temporal_extrapolation_of_perturbed_exner=vp(NC, n), w=wp(NC, h) - 0.5,
        w_concorr_c=vp(NC, h) - 0.5, ddqz_z_half=vp(NC, h) * 100 + 50, rho_nnow=wp(NC, n) + 0.5,
        rho_nvar=wp(NC, n) + 0.5, theta_v_nnow=wp(NC, n) * 30 + 280,
        theta_v_nvar=wp(NC, n) * 30 + 280, wgtfac_c=vp(NC, h), theta_ref_mc=vp(NC, n) * 30 + 280,
        vwind_expl_wgt=wp(NC), d_exner_dz_ref_ic=vp(NC, h) * 1e-3, rho_ic=wp(NC, h),
        z_theta_v_pr_ic=vp(NC, h), theta_v_ic=wp(NC, h), z_th_ddz_exner_c=vp(NC, h),
        psi_c_2d=wp(NC), geofac_n2s=wp(NC, 4), nabla2_2d=wp(NC), psi_c=wp(NC, n),
        nabla2_psi_c=wp(NC, n))
    s = dict(dtime=2.0, wgt_nnow_rth=0.25, wgt_nnew_rth=0.75)
    hs, he, vs, ve, lb3, end = bounds
    expected = cells_numpy(a, s, hs, he, vs, ve, lb3, end)
    cell_stencils(**a, **s, start_cell_lateral_boundary_level_3=lb3, end_cell_local=end,
                  horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
                  offset_provider=TABLES, backend=backend)
    check({k: v for k, v in a.items() if v.dtype == f64},
          {k: v for k, v in expected.items() if a[k].dtype == f64}, rtol=1e-9)
    check({k: v for k, v in a.items() if v.dtype == f32},
          {k: v for k, v in expected.items() if a[k].dtype == f32}, rtol=2e-4)


# ------------------------------------------------------------ common math: Thomas, level means
#
# The generic tridiagonal solver of icon4py's common math (a forward scan
# unpacking its tuple state, a backward scan) composed in one field operator
# under a domain starting below the top; the averages and differences of two
# adjacent half levels (``wpfloat(0.5)`` with a float literal) as programs.


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(wpfloat("0.0"), wpfloat("0.0")))
def _solve_tridiagonal_matrix_forward_sweep(
    state_kminus1: tuple[wpfloat, wpfloat], a: wpfloat, b: wpfloat, c: wpfloat, d: wpfloat,
) -> tuple[wpfloat, wpfloat]:
    q_kminus1, d_prime_kminus1 = state_kminus1
    normalization = wpfloat("1.0") / (b + a * q_kminus1)
    return (wpfloat("0.0") - c) * normalization, (d - a * d_prime_kminus1) * normalization


@gtx.scan_operator(axis=dims.KDim, forward=False, init=wpfloat("0.0"))
def _solve_tridiagonal_matrix_back_substitution(
        x_kplus1: wpfloat, q: wpfloat, d_prime: wpfloat) -> wpfloat:
    return d_prime + x_kplus1 * q


@gtx.field_operator
def _solve_tridiagonal_system(a: fa.CellKField[wpfloat], b: fa.CellKField[wpfloat],
                              c: fa.CellKField[wpfloat], d: fa.CellKField[wpfloat]
                              ) -> fa.CellKField[wpfloat]:
    q, d_prime = _solve_tridiagonal_matrix_forward_sweep(a, b, c, d)
    return _solve_tridiagonal_matrix_back_substitution(q, d_prime)


@gtx.field_operator
def average_level_plus1_on_cells(half_level_field: fa.CellKField[wpfloat]
                                 ) -> fa.CellKField[wpfloat]:
    return wpfloat(0.5) * (half_level_field + half_level_field(Koff[1]))


@gtx.field_operator
def average_level_plus1_on_edges(half_level_field: fa.EdgeKField[wpfloat]
                                 ) -> fa.EdgeKField[wpfloat]:
    return wpfloat(0.5) * (half_level_field + half_level_field(Koff[1]))


@gtx.field_operator
def difference_level_plus1_on_cells(half_level_field: fa.CellKField[wpfloat]
                                    ) -> fa.CellKField[wpfloat]:
    return half_level_field - half_level_field(Koff[1])


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def math_stencils(a: fa.CellKField[wpfloat], b: fa.CellKField[wpfloat],
                  c: fa.CellKField[wpfloat], d: fa.CellKField[wpfloat],
                  x: fa.CellKField[wpfloat], half_c: fa.CellKField[wpfloat],
                  avg_c: fa.CellKField[wpfloat], diff_c: fa.CellKField[wpfloat],
                  half_e: fa.EdgeKField[wpfloat], avg_e: fa.EdgeKField[wpfloat],
                  horizontal_start: gtx.int32, horizontal_end: gtx.int32,
                  vertical_start: gtx.int32, vertical_end: gtx.int32):
    cells = {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_start, vertical_end)}
    _solve_tridiagonal_system(a, b, c, d, out=x, domain=cells)
    average_level_plus1_on_cells(half_c, out=avg_c, domain=cells)
    difference_level_plus1_on_cells(half_c, out=diff_c, domain=cells)
    average_level_plus1_on_edges(half_e, out=avg_e,
                                 domain={dims.EdgeDim: (0, NE),
                                         dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_math_stencils(backend):
    n = NLEV
    a = dict(a=wp(NC, n) - 0.5, b=wp(NC, n) + 3.0, c=wp(NC, n) - 0.5, d=wp(NC, n), x=wp(NC, n),
             half_c=wp(NC, n + 1), avg_c=wp(NC, n), diff_c=wp(NC, n), half_e=wp(NE, n + 1),
             avg_e=wp(NE, n))
    hs, he, vs, ve = 1, NC - 2, 1, n - 1
    want = {k: v.copy() for k, v in a.items()}
    for i in range(hs, he):
        q, dp = np.zeros(n), np.zeros(n)
        q_prev = dp_prev = 0.0
        for k in range(vs, ve):         # the scans start at the domain's first level
            g = 1.0 / (a["b"][i, k] + a["a"][i, k] * q_prev)
            q_prev, dp_prev = -a["c"][i, k] * g, (a["d"][i, k] - a["a"][i, k] * dp_prev) * g
            q[k], dp[k] = q_prev, dp_prev
        x_next = 0.0
        for k in range(ve - 1, vs - 1, -1):
            x_next = want["x"][i, k] = dp[k] + x_next * q[k]
    h = a["half_c"]
    want["avg_c"] = inside(0.5 * (h[:, :n] + h[:, 1:]), a["avg_c"], hs, he, vs, ve)
    want["diff_c"] = inside(h[:, :n] - h[:, 1:], a["diff_c"], hs, he, vs, ve)
    he_ = a["half_e"]
    want["avg_e"] = inside(0.5 * (he_[:, :n] + he_[:, 1:]), a["avg_e"], 0, NE, vs, ve)
    math_stencils(**a, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                  vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, want, rtol=1e-10)


# ------------------------------------------------------------------- advection: fluxes, PPM
#
# Upwind choices through ``E2C[0]``/``E2C[1]`` under a ``where`` on a mask built
# from ``bool`` literals, ``out=(p_out_e)`` in parentheses, and the PPM
# fractional flux: keyword-only parameters (``*``) in the field operator and the
# program, ``floor(abs(…))``, an ``int32`` level field cast to ``wpfloat``,
# ``where`` on ``bool`` masks combined with ``&`` choosing reads up to five
# levels up and down.


@gtx.field_operator
def _compute_horizontal_tracer_flux_from_linear_coefficients_alt(
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat], z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat], distv_bary_1: fa.EdgeKField[ta.vpfloat],
    distv_bary_2: fa.EdgeKField[ta.vpfloat], p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    p_vn: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    lvn_pos_inv = where(p_vn > 0.0, False, True)
    upwind = (where(lvn_pos_inv, z_lsq_coeff_1(dims.E2C[1]), z_lsq_coeff_1(dims.E2C[0]))
              + astype(distv_bary_1, wpfloat)
              * where(lvn_pos_inv, z_lsq_coeff_2(dims.E2C[1]), z_lsq_coeff_2(dims.E2C[0]))
              + astype(distv_bary_2, wpfloat)
              * where(lvn_pos_inv, z_lsq_coeff_3(dims.E2C[1]), z_lsq_coeff_3(dims.E2C[0])))
    return upwind * p_mass_flx_e


@gtx.field_operator
def _compute_upwind_and_antidiffusive_flux(
    p_mflx_tracer_h: fa.EdgeKField[ta.wpfloat], p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    p_cc: fa.CellKField[ta.wpfloat],
) -> tuple[fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.wpfloat]]:
    z_mflx_low = 0.5 * (p_mass_flx_e * (p_cc(dims.E2C[0]) + p_cc(dims.E2C[1]))
                        - abs(p_mass_flx_e) * (p_cc(dims.E2C[1]) - p_cc(dims.E2C[0])))
    return z_mflx_low, p_mflx_tracer_h - z_mflx_low


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def advection_edge_stencils(
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat], z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat], distv_bary_1: fa.EdgeKField[ta.vpfloat],
    distv_bary_2: fa.EdgeKField[ta.vpfloat], p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    p_vn: fa.EdgeKField[ta.wpfloat], p_out_e: fa.EdgeKField[ta.wpfloat],
    p_cc: fa.CellKField[ta.wpfloat], z_mflx_low: fa.EdgeKField[ta.wpfloat],
    z_anti: fa.EdgeKField[ta.wpfloat], horizontal_start: gtx.int32,
    horizontal_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_horizontal_tracer_flux_from_linear_coefficients_alt(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, distv_bary_1, distv_bary_2, p_mass_flx_e,
        p_vn, out=(p_out_e),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_upwind_and_antidiffusive_flux(
        p_out_e, p_mass_flx_e, p_cc, out=(z_mflx_low, z_anti),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_advection_edge_stencils(backend):
    n = NLEV
    a = dict(z_lsq_coeff_1=wp(NC, n), z_lsq_coeff_2=wp(NC, n), z_lsq_coeff_3=wp(NC, n),
             distv_bary_1=vp(NE, n) - 0.5, distv_bary_2=vp(NE, n) - 0.5,
             p_mass_flx_e=wp(NE, n) - 0.5, p_vn=wp(NE, n) - 0.5, p_out_e=wp(NE, n),
             p_cc=wp(NC, n), z_mflx_low=wp(NE, n), z_anti=wp(NE, n))
    bounds = (1, NE - 2, 0, n - 1)
    e2c = TABLES["E2C"]
    e = {k: v.astype(f64) for k, v in a.items()}
    side = np.where(e["p_vn"] > 0.0, 0, 1)
    pick = {k: np.take_along_axis(e[k][e2c], side[:, None, :], 1)[:, 0]
            for k in ("z_lsq_coeff_1", "z_lsq_coeff_2", "z_lsq_coeff_3")}
    flux = inside((pick["z_lsq_coeff_1"] + e["distv_bary_1"] * pick["z_lsq_coeff_2"]
                   + e["distv_bary_2"] * pick["z_lsq_coeff_3"]) * e["p_mass_flx_e"],
                  e["p_out_e"], *bounds)
    c0, c1 = e["p_cc"][e2c[:, 0]], e["p_cc"][e2c[:, 1]]
    low = 0.5 * (e["p_mass_flx_e"] * (c0 + c1) - np.abs(e["p_mass_flx_e"]) * (c1 - c0))
    want = dict(p_out_e=flux, z_mflx_low=inside(low, e["z_mflx_low"], *bounds),
                z_anti=inside(flux - low, e["z_anti"], *bounds))
    hs, he, vs, ve = bounds
    advection_edge_stencils(**a, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                            vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, want, rtol=1e-10)


@gtx.field_operator
def _sum_neighbor_contributions(
    mask1: fa.CellKField[bool], mask2: fa.CellKField[bool], js: fa.CellKField[ta.wpfloat],
    p_cc: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    js_eq0, js_eq1, js_eq2 = js == 0.0, js == 1.0, js == 2.0
    js_eq3, js_eq4 = js == 3.0, js == 4.0
    up = (where(mask1 & js_eq0, p_cc, 0.0) + where(mask1 & js_eq1, p_cc(Koff[1]), 0.0)
          + where(mask1 & js_eq2, p_cc(Koff[2]), 0.0)
          + where(mask1 & js_eq3, p_cc(Koff[3]), 0.0)
          + where(mask1 & js_eq4, p_cc(Koff[4]), 0.0))
    down = (where(mask2 & js_eq0, p_cc(Koff[-1]), 0.0)
            + where(mask2 & js_eq1, p_cc(Koff[-2]), 0.0)
            + where(mask2 & js_eq2, p_cc(Koff[-3]), 0.0)
            + where(mask2 & js_eq3, p_cc(Koff[-4]), 0.0)
            + where(mask2 & js_eq4, p_cc(Koff[-5]), 0.0))
    return up + down


@gtx.field_operator
def _compute_ppm4gpu_fractional_flux(
    p_cc: fa.CellKField[ta.wpfloat], p_cellmass_now: fa.CellKField[ta.wpfloat],
    z_cfl: fa.CellKField[ta.wpfloat], z_delta_q: fa.CellKField[ta.wpfloat],
    z_a1: fa.CellKField[ta.wpfloat], *, k: fa.KField[gtx.int32], slev: gtx.int32,
    p_dtime: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    js = floor(abs(z_cfl))
    z_cflfrac = abs(z_cfl) - js
    z_cflfrac_nonzero = z_cflfrac != 0.0
    z_cfl_pos = z_cfl > 0.0
    z_cfl_neg = z_cfl < 0.0
    wsign = where(z_cfl_pos, 1.0, -1.0)
    mask1 = z_cfl_pos & z_cflfrac_nonzero
    mask2 = z_cfl_neg & z_cflfrac_nonzero
    in_slev_bounds = astype(k, wpfloat) - js >= astype(slev, wpfloat)
    p_cc_jks = _sum_neighbor_contributions(mask1, mask2, js, p_cc)
    p_cellmass_now_jks = _sum_neighbor_contributions(mask1, mask2, js, p_cellmass_now)
    z_delta_q_jks = _sum_neighbor_contributions(mask1, mask2, js, z_delta_q)
    z_a1_jks = _sum_neighbor_contributions(mask1, mask2, js, z_a1)
    z_q_int = (p_cc_jks + wsign * (z_delta_q_jks * (1.0 - z_cflfrac))
               - z_a1_jks * (1.0 - 3.0 * z_cflfrac + 2.0 * z_cflfrac * z_cflfrac))
    return where(in_slev_bounds, wsign * p_cellmass_now_jks * z_cflfrac * z_q_int / p_dtime,
                 0.0)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_ppm4gpu_fractional_flux(
    p_cc: fa.CellKField[ta.wpfloat], p_cellmass_now: fa.CellKField[ta.wpfloat],
    z_cfl: fa.CellKField[ta.wpfloat], z_delta_q: fa.CellKField[ta.wpfloat],
    z_a1: fa.CellKField[ta.wpfloat], *, p_upflux: fa.CellKField[ta.wpfloat],
    k: fa.KField[gtx.int32], slev: gtx.int32, p_dtime: ta.wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32, vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_ppm4gpu_fractional_flux(
        p_cc, p_cellmass_now, z_cfl, z_delta_q, z_a1, k, slev, p_dtime,   # as icon4py calls it
        out=p_upflux,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_ppm4gpu_fractional_flux(backend):
    nk = 14
    fields = {k: wp(NC, nk) for k in ("p_cc", "p_cellmass_now", "z_delta_q", "z_a1")}
    z_cfl = (wp(NC, nk) - 0.5) * 9.0           # |cfl| < 4.5: whole levels 0 to 4
    z_cfl[0, :3] = [2.0, -1.0, 0.0]           # whole numbers: no fractional flux
    p_upflux = wp(NC, nk)
    k = np.arange(nk, dtype=np.int32)
    slev, p_dtime, (hs, he, vs, ve) = 6, 2.0, (1, NC, 5, nk - 4)
    want = p_upflux.copy()
    for i in range(hs, he):
        for lev in range(vs, ve):
            c = z_cfl[i, lev]
            js = np.floor(np.abs(c))
            frac = np.abs(c) - js
            if frac == 0.0:
                got = {name: 0.0 for name in fields}
            else:
                src = lev + int(js) if c > 0 else lev - int(js) - 1
                got = {name: f[i, src] for name, f in fields.items()}
            wsign = 1.0 if c > 0 else -1.0
            q_int = (got["p_cc"] + wsign * got["z_delta_q"] * (1.0 - frac)
                     - got["z_a1"] * (1.0 - 3.0 * frac + 2.0 * frac * frac))
            want[i, lev] = (wsign * got["p_cellmass_now"] * frac * q_int / p_dtime
                            if k[lev] - js >= slev else 0.0)
    compute_ppm4gpu_fractional_flux(
        **fields, z_cfl=z_cfl, p_upflux=p_upflux, k=k, slev=slev, p_dtime=p_dtime,
        horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
        offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(p_upflux, want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------ focused regressions


@gtx.field_operator
def _twice_bounded(a: fa.CellKField[wpfloat], n_lev: gtx.int32) -> fa.CellKField[wpfloat]:
    # n_lev is used twice (as a bound and in ``n_lev - 1``); the value read one
    # level down past the call's last level is the runtime concat_where's
    b = concat_where(dims.KDim == n_lev - 1, a + 2.0, a)
    c = concat_where((dims.KDim >= 1) & (dims.KDim < n_lev), b + 1.0, b)
    return c - c(Koff[1])


@gtx.scan_operator(axis=dims.KDim, forward=True, init=0.0)
def _running_sum(state: float, x: float) -> float:
    return state + x


@gtx.field_operator
def _sum_below_the_top(a: fa.CellKField[wpfloat], w: fa.CellField[wpfloat]
                       ) -> fa.CellKField[wpfloat]:
    # the scan in the K > 0 branch starts at level 1 with its init, reading a(K - 1)
    zero = broadcast(wpfloat("0.0"), (dims.CellDim,))
    return concat_where(dims.KDim > 0, _running_sum(a(Koff[-1])), _scaled(zero, w))


@gtx.field_operator
def _scaled(x: fa.CellField[wpfloat], w: fa.CellField[wpfloat]) -> fa.CellField[wpfloat]:
    return x * w


@gtx.program
def column_regressions(a: fa.CellKField[wpfloat], w: fa.CellField[wpfloat],
                       b: fa.CellKField[wpfloat], c: fa.CellKField[wpfloat],
                       hs: gtx.int32, he: gtx.int32, ve: gtx.int32):
    cells = (hs, he)
    _twice_bounded(a, ve - 1, out=b, domain={dims.CellDim: cells, dims.KDim: (0, ve - 1)})
    _sum_below_the_top(a, w, out=c, domain={dims.CellDim: cells, dims.KDim: (0, ve - 1)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_bounds_scans_in_branches_and_broadcasts_to_a_cell_field(backend):
    n = NLEV
    a, w = wp(NC, n + 1), wp(NC)
    b, c = wp(NC, n), wp(NC, n)
    hs, he, ve = 1, NC - 1, n + 1
    bb = a.copy()
    bb[:, n - 1] += 2.0
    cc = bb.copy()
    cc[:, 1:n] += 1.0
    want_b, want_c = b.copy(), c.copy()
    want_b[hs:he] = (cc[:, :n] - cc[:, 1:])[hs:he]
    want_c[hs:he, 0] = 0.0
    want_c[hs:he, 1:] = np.cumsum(a[:, :n - 1], axis=1)[hs:he]
    column_regressions(a, w, b, c, hs, he, ve, offset_provider=TABLES, backend=backend)
    check(dict(b=b, c=c), dict(b=want_b, c=want_c), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_neighbour_sum_stored_and_read_by_the_next_statement(backend):
    # compiled, the next statement's map is fused into the sum's: the sum's value
    # is stored to its output and copied to a local the next statement reads
    # twice; the neighbour-loop interchange leaves such a map alone
    vn, avg_w, rho, dz, theta = wp(NE, NLEV), wp(NE, 5), wp(NE, NLEV), vp(NE, NLEV), wp(NE, NLEV)
    avg, mass, flux = wp(NE, NLEV), wp(NE, NLEV), wp(NE, NLEV)

    @gtx.program
    def p(vn: fa.EdgeKField[wpfloat],
          e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
          rho: fa.EdgeKField[wpfloat], dz: fa.EdgeKField[vpfloat], theta: fa.EdgeKField[wpfloat],
          avg: fa.EdgeKField[wpfloat], mass: fa.EdgeKField[wpfloat],
          flux: fa.EdgeKField[wpfloat], hs: gtx.int32, he: gtx.int32):
        domain = {dims.EdgeDim: (hs, he), dims.KDim: (0, NLEV)}
        _spatially_average_flux_or_velocity(e_flx_avg, vn, out=avg, domain=domain)
        _compute_mass_and_temperature_flux(rho, avg, dz, theta, out=(mass, flux),
                                           domain=domain)

    want_avg = nbsum(avg_w, vn, TABLES["E2C2EO"])
    want_mass = rho * want_avg * dz
    want = dict(avg=avg.copy(), mass=mass.copy(), flux=flux.copy())
    rows = slice(2, NE - 1)
    want["avg"][rows], want["mass"][rows] = want_avg[rows], want_mass[rows]
    want["flux"][rows] = (want_mass * theta)[rows]
    p(vn, avg_w, rho, dz, theta, avg, mass, flux, 2, NE - 1, offset_provider=TABLES,
      backend=backend)
    check(dict(avg=avg, mass=mass, flux=flux), want, rtol=1e-12)


@gtx.field_operator
def _sum_and_next_sum(x: fa.CellKField[wpfloat]) -> fa.CellKField[wpfloat]:
    s = _running_sum(x)
    return s + s(Koff[1])


@gtx.program
def sums_read_one_level_down(x: fa.CellKField[wpfloat], out: fa.CellKField[wpfloat],
                             nlev: gtx.int32):
    _sum_and_next_sum(x, out=out, domain={dims.CellDim: (0, NC), dims.KDim: (0, nlev - 1)})


@pytest.mark.parametrize("backend", ["interpreter", None])
def test_a_scan_result_read_one_level_past_the_domain(backend):
    # As GT4Py's domain inference: the scan runs one level past the domain,
    # since its result is read one level down at the domain's last level.
    x, out = wp(NC, NLEV), np.zeros((NC, NLEV - 1))
    sums_read_one_level_down(x, out, NLEV, backend=backend)
    s = np.cumsum(x, axis=1)
    np.testing.assert_allclose(out, s[:, :-1] + s[:, 1:], rtol=1e-12)
