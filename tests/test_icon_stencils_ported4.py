"""A fourth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling (``dims.CellDim``, ``fa.CellKField[vpfloat]``, ``gtx.int32``), beside
``test_icon_stencils_ported*.py``.

They add: the vertically implicit solver for w at the predictor and the
corrector step (a program of three field operators with different vertical
domains, writing half-level fields at the surface first and reading them one
level down after; a forward tridiagonal sweep and a backward substitution,
both ``scan_operator``s, called inside ``concat_where(dims.KDim > 0, …)``;
``concat_where`` on ``(dims.KDim >= 1) & (dims.KDim < n_lev)``, on
``dims.KDim == n_lev - 1`` and on tuples of ``broadcast(…, (dims.CellDim,))``;
GT4Py ``if`` statements on ``bool`` scalars and on an ``int32`` scalar compared
with a constant read from an object, nested ``if``s reassigning a tuple;
``if``-expressions choosing a ``concat_where``), and further dycore,
advection and interpolation stencils on ``E2C2V``, ``E2C2E``, ``C2E2C``,
``V2E`` and ``C2E`` with absent neighbours.  Each group is one program,
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
    astype,
    broadcast,
    concat_where,
    float32,
    float64,
    neighbor_sum,
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
V2EDim = Dimension("V2E", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.C2EDim, dims.C2E2CDim, dims.E2CDim, dims.E2VDim = C2EDim, C2E2CDim, E2CDim, E2VDim
dims.E2C2VDim, dims.E2C2EDim, dims.V2EDim = E2C2VDim, E2C2EDim, V2EDim
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
          "Koff": KDim}


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
