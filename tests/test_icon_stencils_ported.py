"""ICON's dycore, diffusion and advection stencils (icon4py's field operators),
ported to the Python front end in GT4Py's spelling.

They add to ``test_icon_stencils*.py``: a forward tridiagonal sweep whose scan
carries a ``(vpfloat, wpfloat, bool)`` state and takes keyword arguments, and
the whole implicit solve for w (forward then backward scan); field operators
calling field operators; ``concat_where`` on tuples, on broadcast literals and
on horizontal and vertical conditions with run-time bounds (``interior_idx <=
Cell``, ``nflat_gradp + 1 <= K``, ``K < nrdmax``); an ``if``-expression on a
scalar choosing between tuples; ``as_offset(Koff, …)`` through ``E2C`` with an
``int32`` sparse field; ``E2C2V`` with the strided ``E2ECV`` and ``int32``
fields through the strided ``E2EC``; ``int32`` level-index fields and ``bool``
masks; ``exp``/``log``/``sqrt``/``abs``/``floor``; ``astype`` of tuples with a
scalar in them; a microphysics-like sedimentation scan calling a helper field
operator on scalars and reading constants from a class; in-place tuple
outputs; half-level (``nlev + 1``) fields read and written; GT4Py's generic
field aliases (``CellKField[vpfloat]``).  Each group is one program,
interpreted and compiled once, compared with hand-written NumPy.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import pytest

from tensorir_dace import FrontendError
from tensorir_dace.frontend import (
    Dims,
    Field,
    FieldOffset,
    abs,
    as_offset,
    astype,
    broadcast,
    concat_where,
    dims,
    exp,
    field_operator,
    float32,
    float64,
    floor,
    int32,
    log,
    maximum,
    minimum,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
    sqrt,
    where,
)
from tensorir_dace.frontend import (
    bool_ as bool_type,
)

Cell, Edge, Vertex, K, ECV = dims("Cell Edge Vertex K ECV")
C2EDim, E2CDim = neighbor_dim(Edge, 3), neighbor_dim(Cell, 2)
C2E2CODim, E2VDim, E2C2VDim = neighbor_dim(Cell, 4), neighbor_dim(Vertex, 2), \
    neighbor_dim(Vertex, 4)
C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=Cell, target=(Cell, C2E2CODim))
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))
E2V = FieldOffset("E2V", source=Vertex, target=(Edge, E2VDim))
E2C2V = FieldOffset("E2C2V", source=Vertex, target=(Edge, E2C2VDim))
E2ECV = FieldOffset("E2ECV", source=ECV, target=(Edge, E2C2VDim))    # strided: e * 4 + k
Koff = FieldOffset("Koff", source=K, target=(K,))
wpfloat, vpfloat = float64, float32
BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 9, 13, 7, 6
RNG = np.random.default_rng(2028)


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


TABLES = {"C2E": table(NC, 3, NE), "C2E2CO": table(NC, 4, NC, absent=0.15),
          "E2C": table(NE, 2, NC), "E2V": table(NE, 2, NV), "E2C2V": table(NE, 4, NV)}


def wp(*shape):
    return RNG.random(shape)


def vp(*shape):
    return RNG.random(shape).astype(np.float32)


def nbsum(weights, field, tab):
    """sum over j of weights[:, j] * field[tab[:, j]], absent (-1) neighbours skipped."""
    g = field[np.where(tab >= 0, tab, 0)]
    w = weights.reshape(weights.shape + (1,) * (g.ndim - weights.ndim))
    return np.where((tab >= 0).reshape(tab.shape + (1,) * (g.ndim - 2)), w * g, 0.0).sum(1)


def inside(new, old, hs, he, vs, ve):
    """``new`` on rows ``hs:he`` and levels ``vs:ve``, ``old`` elsewhere."""
    out = old.copy()
    out[hs:he, vs:ve] = new[hs:he, vs:ve]
    return out


def check(got, expected, rtol=3e-6):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=1e-6, err_msg=name)


# ---------------------------------------------------------------- columns: scans and levels


@scan_operator(axis=K, forward=True, init=(vpfloat("0.0"), wpfloat("0.0"), True))
def _w(state: tuple[vpfloat, wpfloat, bool], w_prev: wpfloat, z_q_prev: vpfloat, z_a: vpfloat,
       z_b: vpfloat, z_c: vpfloat, w_prep: wpfloat):
    first = state[2]
    z_q_m1 = z_q_prev if first else state[0]      # the old values at the domain's top
    w_m1 = w_prev if first else state[1]
    z_g = vpfloat("1.0") / (z_b + z_a * z_q_m1)
    z_q_new = (vpfloat("0.0") - z_c) * z_g
    w_new = (w_prep - astype(z_a, wpfloat) * w_m1) * astype(z_g, wpfloat)
    return z_q_new, w_new, False


@field_operator
def _solve_tridiagonal_matrix_for_w_forward_sweep(
        vwind_impl_wgt: Field[[Cell], wpfloat], theta_v_ic: Field[[Cell, K], wpfloat],
        ddqz_z_half: Field[[Cell, K], vpfloat], z_alpha: Field[[Cell, K], vpfloat],
        z_beta: Field[[Cell, K], vpfloat], z_w_expl: Field[[Cell, K], wpfloat],
        z_exner_expl: Field[[Cell, K], wpfloat], z_q: Field[[Cell, K], vpfloat],
        w: Field[[Cell, K], wpfloat], dtime: wpfloat, cpd: wpfloat
) -> tuple[Field[[Cell, K], vpfloat], Field[[Cell, K], wpfloat]]:
    ddqz_z_half_wp = astype(ddqz_z_half, wpfloat)
    z_gamma_vp = astype(dtime * cpd * vwind_impl_wgt * theta_v_ic / ddqz_z_half_wp, vpfloat)
    z_a = (vpfloat("0.0") - z_gamma_vp) * z_beta(Koff[-1]) * z_alpha(Koff[-1])
    z_c = (vpfloat("0.0") - z_gamma_vp) * z_beta * z_alpha(Koff[1])
    z_b = vpfloat("1.0") + z_gamma_vp * z_alpha * (z_beta(Koff[-1]) + z_beta)
    z_gamma_wp = astype(z_gamma_vp, wpfloat)
    w_prep = z_w_expl - z_gamma_wp * (z_exner_expl(Koff[-1]) - z_exner_expl)
    z_q_res, w_res, _ = _w(w_prev=w(Koff[-1]), z_q_prev=z_q(Koff[-1]), z_a=z_a, z_b=z_b,
                           z_c=z_c, w_prep=w_prep)
    return z_q_res, w_res


@field_operator
def _compute_approx_of_2nd_vertical_derivative_of_exner(
        z_theta_v_pr_ic: Field[[Cell, K], vpfloat], d2dexdz2_fac1_mc: Field[[Cell, K], vpfloat],
        d2dexdz2_fac2_mc: Field[[Cell, K], vpfloat], z_rth_pr_2: Field[[Cell, K], vpfloat]
) -> Field[[Cell, K], vpfloat]:
    return -vpfloat("0.5") * ((z_theta_v_pr_ic - z_theta_v_pr_ic(Koff[1])) * d2dexdz2_fac1_mc
                              + z_rth_pr_2 * d2dexdz2_fac2_mc)


@field_operator
def _apply_rayleigh_damping_mechanism(z_raylfac: Field[[K], wpfloat],
                                      w: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    z_raylfac = broadcast(z_raylfac, (Cell, K))
    return z_raylfac * w


@field_operator
def _compute_theta_and_exner(mask_prog_halo_c: Field[[Cell], bool], rho: Field[[Cell, K], wpfloat],
                             theta_v: Field[[Cell, K], wpfloat], exner: Field[[Cell, K], wpfloat],
                             rd_o_cvd: wpfloat, rd_o_p0ref: wpfloat):
    theta_v_wp = where(~mask_prog_halo_c, exner, theta_v)
    exner_wp = where(~mask_prog_halo_c, exp(rd_o_cvd * log(rd_o_p0ref * rho * exner)), exner)
    return theta_v_wp, exner_wp


@field_operator
def _interpolate_to_surface(wgtfacq_c: Field[[Cell, K], vpfloat],
                            interpolant: Field[[Cell, K], vpfloat]) -> Field[[Cell, K], vpfloat]:
    return (wgtfacq_c(Koff[-1]) * interpolant(Koff[-1])
            + wgtfacq_c(Koff[-2]) * interpolant(Koff[-2])
            + wgtfacq_c(Koff[-3]) * interpolant(Koff[-3]))


@program
def column_stencils(
        vwind_impl_wgt: Field[[Cell], wpfloat], theta_v_ic: Field[[Cell, K], wpfloat],
        ddqz_z_half: Field[[Cell, K], vpfloat], z_alpha: Field[[Cell, K], vpfloat],
        z_beta: Field[[Cell, K], vpfloat], z_w_expl: Field[[Cell, K], wpfloat],
        z_exner_expl: Field[[Cell, K], wpfloat], z_q: Field[[Cell, K], vpfloat],
        w: Field[[Cell, K], wpfloat], z_theta_v_pr_ic: Field[[Cell, K], vpfloat],
        d2dexdz2_fac1_mc: Field[[Cell, K], vpfloat], d2dexdz2_fac2_mc: Field[[Cell, K], vpfloat],
        z_rth_pr_2: Field[[Cell, K], vpfloat], z_dexner_dz_c_2: Field[[Cell, K], vpfloat],
        z_raylfac: Field[[K], wpfloat], w_damped: Field[[Cell, K], wpfloat],
        mask_prog_halo_c: Field[[Cell], bool], rho: Field[[Cell, K], wpfloat],
        theta_v: Field[[Cell, K], wpfloat], exner: Field[[Cell, K], wpfloat],
        wgtfacq_c: Field[[Cell, K], vpfloat], interpolant: Field[[Cell, K], vpfloat],
        surface: Field[[Cell, K], vpfloat], dtime: wpfloat, cpd: wpfloat, rd_o_cvd: wpfloat,
        rd_o_p0ref: wpfloat, nrdmax: int32, nlev: int32, horizontal_start: int32,
        horizontal_end: int32, vertical_start: int32, vertical_end: int32):
    _solve_tridiagonal_matrix_for_w_forward_sweep(
        vwind_impl_wgt, theta_v_ic, ddqz_z_half, z_alpha, z_beta, z_w_expl, z_exner_expl, z_q,
        w, dtime, cpd, out=(z_q, w),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start + 1, vertical_end)})
    _compute_approx_of_2nd_vertical_derivative_of_exner(
        z_theta_v_pr_ic, d2dexdz2_fac1_mc, d2dexdz2_fac2_mc, z_rth_pr_2, out=z_dexner_dz_c_2,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _apply_rayleigh_damping_mechanism(
        z_raylfac=z_raylfac, w=w_damped, out=w_damped,
        domain={Cell: (horizontal_start, horizontal_end), K: (1, nrdmax + 1)})
    _compute_theta_and_exner(
        mask_prog_halo_c, rho, theta_v, exner, rd_o_cvd, rd_o_p0ref, out=(theta_v, exner),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _interpolate_to_surface(wgtfacq_c, interpolant, out=surface,
                            domain={Cell: (horizontal_start, horizontal_end), K: (nlev, nlev + 1)})


def forward_sweep_numpy(a, vs, ve):
    """The tridiagonal forward sweep of _solve_tridiagonal_matrix_for_w_forward_sweep on
    levels vs:ve (all cells), in the same precisions."""
    f32 = np.float32
    z_gamma = (a["dtime"] * a["cpd"] * a["vwind_impl_wgt"][:, None] * a["theta_v_ic"]
               / a["ddqz_z_half"].astype(np.float64)).astype(f32)
    alpha, beta = a["z_alpha"], a["z_beta"]
    z_q, w = a["z_q"].copy(), a["w"].copy()
    for k in range(vs, ve):
        g = z_gamma[:, k]
        z_a = (f32(0) - g) * beta[:, k - 1] * alpha[:, k - 1]
        z_c = (f32(0) - g) * beta[:, k] * alpha[:, k + 1]
        z_b = f32(1) + g * alpha[:, k] * (beta[:, k - 1] + beta[:, k])
        w_prep = a["z_w_expl"][:, k] - g.astype(np.float64) * (
            a["z_exner_expl"][:, k - 1] - a["z_exner_expl"][:, k])
        z_g = f32(1) / (z_b + z_a * z_q[:, k - 1])
        z_q[:, k] = (f32(0) - z_c) * z_g
        w[:, k] = (w_prep - z_a.astype(np.float64) * w[:, k - 1]) * z_g.astype(np.float64)
    return z_q, w


def column_inputs(nlev):
    half = nlev + 1
    return dict(
        vwind_impl_wgt=wp(NC) + 0.5, theta_v_ic=wp(NC, half) + 1.0,
        ddqz_z_half=vp(NC, half) + 1.0, z_alpha=vp(NC, half), z_beta=vp(NC, nlev),
        z_w_expl=wp(NC, half), z_exner_expl=wp(NC, nlev), z_q=vp(NC, half), w=wp(NC, half),
        z_theta_v_pr_ic=vp(NC, half), d2dexdz2_fac1_mc=vp(NC, nlev),
        d2dexdz2_fac2_mc=vp(NC, nlev), z_rth_pr_2=vp(NC, nlev),
        z_dexner_dz_c_2=np.full((NC, nlev), 3.0, np.float32), z_raylfac=wp(half),
        w_damped=wp(NC, half), mask_prog_halo_c=RNG.random(NC) < 0.5, rho=wp(NC, nlev) + 0.5,
        theta_v=wp(NC, nlev), exner=wp(NC, nlev) + 0.5, wgtfacq_c=vp(NC, nlev),
        interpolant=vp(NC, nlev), surface=np.full((NC, half), 4.0, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV), (2, 7, 1, 5), (4, 4, 0, NLEV)])
def test_column_stencils(backend, bounds):
    hs, he, vs, ve = bounds
    a = column_inputs(NLEV)
    old = {name: np.copy(x) for name, x in a.items()}
    dtime, cpd, rd_o_cvd, rd_o_p0ref, nrdmax = 0.3, 1.5, 0.28, 0.9, 3
    column_stencils(*a.values(), dtime, cpd, rd_o_cvd, rd_o_p0ref, nrdmax, NLEV, hs, he, vs, ve,
                    offset_provider={"Koff": K}, backend=backend)

    o = old
    z_q, w = forward_sweep_numpy(dict(o, dtime=dtime, cpd=cpd), vs + 1, ve)
    dexner = (-np.float32(0.5) * ((o["z_theta_v_pr_ic"][:, :-1] - o["z_theta_v_pr_ic"][:, 1:])
                                  * o["d2dexdz2_fac1_mc"]
                                  + o["z_rth_pr_2"] * o["d2dexdz2_fac2_mc"]))
    damped = o["z_raylfac"][None, :] * o["w_damped"]
    halo = ~o["mask_prog_halo_c"][:, None]
    theta_v = np.where(halo, o["exner"], o["theta_v"])
    exner = np.where(halo, np.exp(rd_o_cvd * np.log(rd_o_p0ref * o["rho"] * o["exner"])),
                     o["exner"])
    wq, it = o["wgtfacq_c"], o["interpolant"]
    surface = o["surface"].copy()
    surface[:, NLEV] = sum(wq[:, NLEV - j] * it[:, NLEV - j] for j in (1, 2, 3))
    check(a, dict(
        z_q=inside(z_q, o["z_q"], hs, he, vs + 1, ve), w=inside(w, o["w"], hs, he, vs + 1, ve),
        z_dexner_dz_c_2=inside(dexner, o["z_dexner_dz_c_2"], hs, he, vs, ve),
        w_damped=inside(damped, o["w_damped"], hs, he, 1, nrdmax + 1),
        theta_v=inside(theta_v, o["theta_v"], hs, he, vs, ve),
        exner=inside(exner, o["exner"], hs, he, vs, ve),
        surface=inside(surface, o["surface"], hs, he, NLEV, NLEV + 1)))
    for name in ("vwind_impl_wgt", "z_alpha", "rho", "interpolant"):
        assert np.array_equal(a[name], o[name]), f"input {name} was changed"


# ---------------------------------------------------------------- cells: diffusion of w


@field_operator
def _calculate_horizontal_gradients_for_turbulence(
        w: Field[[Cell, K], wpfloat], geofac_grg_x: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_y: Field[[Cell, C2E2CODim], wpfloat]):
    dwdx = neighbor_sum(geofac_grg_x * w(C2E2CO), axis=C2E2CODim)
    dwdy = neighbor_sum(geofac_grg_y * w(C2E2CO), axis=C2E2CODim)
    return astype(dwdx, vpfloat), astype(dwdy, vpfloat)


@field_operator
def _calculate_nabla2_for_w(w: Field[[Cell, K], wpfloat],
                            geofac_n2s: Field[[Cell, C2E2CODim], wpfloat]):
    return astype(neighbor_sum(w(C2E2CO) * geofac_n2s, axis=C2E2CODim), vpfloat)


@field_operator
def _apply_nabla2_to_w(area: Field[[Cell], wpfloat], z_nabla2_c: Field[[Cell, K], vpfloat],
                       geofac_n2s: Field[[Cell, C2E2CODim], wpfloat],
                       w: Field[[Cell, K], wpfloat], diff_multfac_w: wpfloat):
    z_nabla2_c_wp = astype(z_nabla2_c, wpfloat)
    return w - diff_multfac_w * area * area * neighbor_sum(
        z_nabla2_c_wp(C2E2CO) * geofac_n2s, axis=C2E2CODim)


@field_operator
def _apply_nabla2_to_w_in_upper_damping_layer(
        w: Field[[Cell, K], wpfloat], diff_multfac_n2w: Field[[K], wpfloat],
        cell_area: Field[[Cell], wpfloat], z_nabla2_c: Field[[Cell, K], vpfloat]):
    cell_area_tmp = broadcast(cell_area, (Cell, K))
    return w + diff_multfac_n2w * cell_area_tmp * astype(z_nabla2_c, wpfloat)


@field_operator
def _apply_diffusion_to_w_and_compute_horizontal_gradients_for_turbulence(
        area: Field[[Cell], wpfloat], geofac_n2s: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_x: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_y: Field[[Cell, C2E2CODim], wpfloat], w_old: Field[[Cell, K], wpfloat],
        type_shear: int32, dwdx: Field[[Cell, K], vpfloat], dwdy: Field[[Cell, K], vpfloat],
        diff_multfac_w: wpfloat, diff_multfac_n2w: Field[[K], wpfloat], nrdmax: int32,
        interior_idx: int32, halo_idx: int32):
    dwdx, dwdy = (
        concat_where(K > 0, _calculate_horizontal_gradients_for_turbulence(
            w_old, geofac_grg_x, geofac_grg_y), (dwdx, dwdy))
        if type_shear == 2 else (dwdx, dwdy))
    z_nabla2_c = _calculate_nabla2_for_w(w_old, geofac_n2s)
    w = concat_where((interior_idx <= Cell) & (Cell < halo_idx),
                     _apply_nabla2_to_w(area, z_nabla2_c, geofac_n2s, w_old, diff_multfac_w),
                     w_old)
    w = concat_where((K > 0) & (K < nrdmax) & (interior_idx <= Cell) & (Cell < halo_idx),
                     _apply_nabla2_to_w_in_upper_damping_layer(w, diff_multfac_n2w, area,
                                                               z_nabla2_c), w)
    return w, dwdx, dwdy


@field_operator
def _add_extra_diffusion_for_w_con_approaching_cfl(
        cfl_clipping: Field[[Cell, K], bool], owner_mask: Field[[Cell], bool],
        z_w_con_c: Field[[Cell, K], vpfloat], ddqz_z_half: Field[[Cell, K], vpfloat],
        area: Field[[Cell], wpfloat], geofac_n2s: Field[[Cell, C2E2CODim], wpfloat],
        w: Field[[Cell, K], wpfloat], ddt_w_adv: Field[[Cell, K], vpfloat],
        scalfac_exdiff: wpfloat, cfl_w_limit: vpfloat, dtime: wpfloat):
    z_w_con_c_wp, ddqz_z_half_wp, ddt_w_adv_wp, cfl_w_limit_wp = astype(
        (z_w_con_c, ddqz_z_half, ddt_w_adv, cfl_w_limit), wpfloat)
    difcoef = where(cfl_clipping & owner_mask,
                    scalfac_exdiff * minimum(
                        wpfloat("0.85") - cfl_w_limit_wp * dtime,
                        abs(z_w_con_c_wp) * dtime / ddqz_z_half_wp - cfl_w_limit_wp * dtime),
                    wpfloat("0.0"))
    ddt_w_adv_wp = where(cfl_clipping & owner_mask,
                         ddt_w_adv_wp + difcoef * area * neighbor_sum(
                             w(C2E2CO) * geofac_n2s, axis=C2E2CODim),
                         ddt_w_adv_wp)
    return astype(ddt_w_adv_wp, vpfloat)


@field_operator
def _compute_contravariant_correction_of_w(
        e_bln_c_s: Field[Dims[Cell, C2EDim], wpfloat], z_w_concorr_me: Field[[Edge, K], vpfloat],
        wgtfac_c: Field[[Cell, K], vpfloat]) -> Field[[Cell, K], vpfloat]:
    z_w_concorr_me_offset_1 = z_w_concorr_me(Koff[-1])
    z_w_concorr_me_wp, z_w_concorr_me_offset_1_wp = astype(
        (z_w_concorr_me, z_w_concorr_me_offset_1), wpfloat)
    m1_wp = neighbor_sum(e_bln_c_s * z_w_concorr_me_offset_1_wp(C2E), axis=C2EDim)
    m0_wp = neighbor_sum(e_bln_c_s * z_w_concorr_me_wp(C2E), axis=C2EDim)
    m1_vp, m0_vp = astype((m1_wp, m0_wp), vpfloat)
    return wgtfac_c * m0_vp + (vpfloat("1.0") - wgtfac_c) * m1_vp


@field_operator
def _add_interpolated_horizontal_advection_of_w(
        e_bln_c_s: Field[Dims[Cell, C2EDim], wpfloat], z_v_grad_w: Field[[Edge, K], vpfloat],
        ddt_w_adv: Field[[Cell, K], vpfloat], k: Field[[K], int32], nlev: int32):
    # as in the fused velocity-advection stencils: a level-index field picks the levels
    z_v_grad_w_wp = astype(z_v_grad_w, wpfloat)
    added = astype(astype(ddt_w_adv, wpfloat)
                   + neighbor_sum(e_bln_c_s * z_v_grad_w_wp(C2E), axis=C2EDim), vpfloat)
    return where((k >= 1) & (k < nlev), added, ddt_w_adv)


@program
def cell_stencils(
        area: Field[[Cell], wpfloat], geofac_n2s: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_x: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_y: Field[[Cell, C2E2CODim], wpfloat], w_old: Field[[Cell, K], wpfloat],
        w: Field[[Cell, K], wpfloat], type_shear: int32, dwdx: Field[[Cell, K], vpfloat],
        dwdy: Field[[Cell, K], vpfloat], diff_multfac_w: wpfloat,
        diff_multfac_n2w: Field[[K], wpfloat], nrdmax: int32, interior_idx: int32,
        halo_idx: int32, cfl_clipping: Field[[Cell, K], bool], owner_mask: Field[[Cell], bool],
        z_w_con_c: Field[[Cell, K], vpfloat], ddqz_z_half: Field[[Cell, K], vpfloat],
        ddt_w_adv: Field[[Cell, K], vpfloat], scalfac_exdiff: wpfloat, cfl_w_limit: vpfloat,
        dtime: wpfloat, e_bln_c_s: Field[Dims[Cell, C2EDim], wpfloat],
        z_w_concorr_me: Field[[Edge, K], vpfloat], wgtfac_c: Field[[Cell, K], vpfloat],
        w_concorr_c: Field[[Cell, K], vpfloat], ddt_w_adv_2: Field[[Cell, K], vpfloat],
        k: Field[[K], int32], nlev: int32, horizontal_start: int32, horizontal_end: int32,
        vertical_start: int32, vertical_end: int32):
    _apply_diffusion_to_w_and_compute_horizontal_gradients_for_turbulence(
        area, geofac_n2s, geofac_grg_x, geofac_grg_y, w_old, type_shear, dwdx, dwdy,
        diff_multfac_w, diff_multfac_n2w, nrdmax, interior_idx, halo_idx, out=(w, dwdx, dwdy),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _add_extra_diffusion_for_w_con_approaching_cfl(
        cfl_clipping, owner_mask, z_w_con_c, ddqz_z_half, area, geofac_n2s, w_old, ddt_w_adv,
        scalfac_exdiff, cfl_w_limit, dtime, out=ddt_w_adv,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _compute_contravariant_correction_of_w(
        e_bln_c_s, z_w_concorr_me, wgtfac_c, out=w_concorr_c,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start + 1, vertical_end)})
    _add_interpolated_horizontal_advection_of_w(
        e_bln_c_s, z_v_grad_w=z_w_concorr_me, ddt_w_adv=ddt_w_adv_2, k=k, nlev=nlev,
        out=ddt_w_adv_2,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})


def cell_inputs():
    return dict(
        area=wp(NC) + 0.5, geofac_n2s=wp(NC, 4), geofac_grg_x=wp(NC, 4), geofac_grg_y=wp(NC, 4),
        w_old=wp(NC, NLEV), w=np.full((NC, NLEV), 8.0), dwdx=vp(NC, NLEV), dwdy=vp(NC, NLEV),
        diff_multfac_n2w=wp(NLEV), cfl_clipping=RNG.random((NC, NLEV)) < 0.6,
        owner_mask=RNG.random(NC) < 0.7, z_w_con_c=vp(NC, NLEV) - 0.5,
        ddqz_z_half=vp(NC, NLEV) + 0.5, ddt_w_adv=vp(NC, NLEV), e_bln_c_s=wp(NC, 3),
        z_w_concorr_me=vp(NE, NLEV), wgtfac_c=vp(NC, NLEV),
        w_concorr_c=np.full((NC, NLEV), 6.0, np.float32), ddt_w_adv_2=vp(NC, NLEV),
        k=np.arange(NLEV, dtype=np.int32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds, type_shear", [((0, NC, 0, NLEV), 2), ((2, 7, 1, 5), 2),
                                                ((1, 8, 0, 4), 1), ((5, 5, 0, NLEV), 2)])
def test_cell_stencils(backend, bounds, type_shear):
    hs, he, vs, ve = bounds
    a = cell_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    s = dict(diff_multfac_w=0.3, nrdmax=3, interior_idx=2, halo_idx=6, scalfac_exdiff=0.4,
             cfl_w_limit=np.float32(0.6), dtime=0.9, nlev=NLEV - 1)
    args = [a[n] for n in ("area", "geofac_n2s", "geofac_grg_x", "geofac_grg_y", "w_old", "w")]
    args += [type_shear, a["dwdx"], a["dwdy"], s["diff_multfac_w"], a["diff_multfac_n2w"],
             s["nrdmax"], s["interior_idx"], s["halo_idx"]]
    args += [a[n] for n in ("cfl_clipping", "owner_mask", "z_w_con_c", "ddqz_z_half",
                            "ddt_w_adv")]
    args += [s["scalfac_exdiff"], s["cfl_w_limit"], s["dtime"]]
    args += [a[n] for n in ("e_bln_c_s", "z_w_concorr_me", "wgtfac_c", "w_concorr_c",
                            "ddt_w_adv_2", "k")]
    cell_stencils(*args, s["nlev"], hs, he, vs, ve, offset_provider=TABLES, backend=backend)

    t, f64, f32 = TABLES, np.float64, np.float32
    c, lev = np.arange(NC)[:, None], np.arange(NLEV)[None, :]
    grads = [nbsum(g, o["w_old"], t["C2E2CO"]).astype(f32) for g in (o["geofac_grg_x"],
                                                                      o["geofac_grg_y"])]
    dwdx, dwdy = ([np.where(lev > 0, g, old) for g, old in zip(grads, (o["dwdx"], o["dwdy"]))]
                  if type_shear == 2 else (o["dwdx"], o["dwdy"]))
    nabla2 = nbsum(o["geofac_n2s"], o["w_old"], t["C2E2CO"]).astype(f32)
    area = o["area"][:, None]
    inner = (s["interior_idx"] <= c) & (c < s["halo_idx"])
    w = np.where(inner, o["w_old"] - s["diff_multfac_w"] * area * area
                 * nbsum(o["geofac_n2s"], nabla2.astype(f64), t["C2E2CO"]), o["w_old"])
    w = np.where(inner & (lev > 0) & (lev < s["nrdmax"]),
                 w + o["diff_multfac_n2w"][None, :] * area * nabla2, w)

    on = o["cfl_clipping"] & o["owner_mask"][:, None]
    lim = f64(s["cfl_w_limit"]) * s["dtime"]
    difcoef = np.where(on, s["scalfac_exdiff"] * np.minimum(
        0.85 - lim, np.abs(o["z_w_con_c"].astype(f64)) * s["dtime"] / o["ddqz_z_half"] - lim),
        0.0)
    ddt = np.where(on, o["ddt_w_adv"] + difcoef * area
                   * nbsum(o["geofac_n2s"], o["w_old"], t["C2E2CO"]), o["ddt_w_adv"]).astype(f32)

    me = o["z_w_concorr_me"].astype(f64)
    m0 = nbsum(o["e_bln_c_s"], me, t["C2E"]).astype(f32)
    above = np.concatenate([np.full((NE, 1), np.nan), me[:, :-1]], axis=1)
    m1 = nbsum(o["e_bln_c_s"], above, t["C2E"]).astype(f32)
    concorr = o["wgtfac_c"] * m0 + (f32(1) - o["wgtfac_c"]) * m1

    added = (o["ddt_w_adv_2"].astype(f64) + nbsum(o["e_bln_c_s"], me, t["C2E"])).astype(f32)
    ddt2 = np.where((lev >= 1) & (lev < s["nlev"]), added, o["ddt_w_adv_2"])
    check(a, dict(
        w=inside(w, o["w"], hs, he, vs, ve), dwdx=inside(dwdx, o["dwdx"], hs, he, vs, ve),
        dwdy=inside(dwdy, o["dwdy"], hs, he, vs, ve),
        ddt_w_adv=inside(ddt, o["ddt_w_adv"], hs, he, vs, ve),
        w_concorr_c=inside(concorr, o["w_concorr_c"], hs, he, vs + 1, ve),
        ddt_w_adv_2=inside(ddt2, o["ddt_w_adv_2"], hs, he, vs, ve)))


# ---------------------------------------------------------------- edges


@field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
        inv_dual_edge_length: Field[[Edge], wpfloat], z_exner_ex_pr: Field[[Cell, K], vpfloat],
        zdiff_gradp: Field[Dims[Edge, E2CDim, K], vpfloat],
        ikoffset: Field[Dims[Edge, E2CDim, K], int32], z_dexner_dz_c_1: Field[[Cell, K], vpfloat],
        z_dexner_dz_c_2: Field[[Cell, K], vpfloat]) -> Field[[Edge, K], vpfloat]:
    ex_0 = z_exner_ex_pr(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)]))
    ex_1 = z_exner_ex_pr(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)]))
    c1_0 = z_dexner_dz_c_1(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)]))
    c1_1 = z_dexner_dz_c_1(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)]))
    c2_0 = z_dexner_dz_c_2(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)]))
    c2_1 = z_dexner_dz_c_2(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)]))
    z_gradh_exner_wp = inv_dual_edge_length * astype(
        (ex_1 + zdiff_gradp[E2CDim(1)] * (c1_1 + zdiff_gradp[E2CDim(1)] * c2_1))
        - (ex_0 + zdiff_gradp[E2CDim(0)] * (c1_0 + zdiff_gradp[E2CDim(0)] * c2_0)), wpfloat)
    return astype(z_gradh_exner_wp, vpfloat)


@field_operator
def _calculate_nabla2_and_smag_coefficients_for_vn(
        diff_multfac_smag: Field[[K], vpfloat], tangent_orientation: Field[[Edge], wpfloat],
        inv_primal_edge_length: Field[[Edge], wpfloat],
        inv_vert_vert_length: Field[[Edge], wpfloat],
        u_vert: Field[[Vertex, K], vpfloat], v_vert: Field[[Vertex, K], vpfloat],
        primal_normal_vert_x: Field[[ECV], wpfloat], primal_normal_vert_y: Field[[ECV], wpfloat],
        dual_normal_vert_x: Field[[ECV], wpfloat], dual_normal_vert_y: Field[[ECV], wpfloat],
        vn: Field[[Edge, K], wpfloat], smag_limit: Field[[K], vpfloat], smag_offset: vpfloat):
    diff_multfac_smag_wp, u_vert_wp, v_vert_wp, smag_offset_wp = astype(
        (diff_multfac_smag, u_vert, v_vert, smag_offset), wpfloat)

    def dual(j):
        return (u_vert_wp(E2C2V[j]) * dual_normal_vert_x(E2ECV[j])
                + v_vert_wp(E2C2V[j]) * dual_normal_vert_y(E2ECV[j]))

    def primal(j):
        return (u_vert_wp(E2C2V[j]) * primal_normal_vert_x(E2ECV[j])
                + v_vert_wp(E2C2V[j]) * primal_normal_vert_y(E2ECV[j]))

    dvt_tang_wp = -dual(0) + dual(1)
    dvt_norm_vp = astype(-dual(2) + dual(3), vpfloat)
    kh_smag_1_vp = -astype(primal(0), vpfloat) + astype(primal(1), vpfloat)
    dvt_tang_vp = astype(dvt_tang_wp * tangent_orientation, vpfloat)
    kh_smag_1_wp, dvt_norm_wp = astype((kh_smag_1_vp, dvt_norm_vp), wpfloat)
    kh_smag_1_wp = (kh_smag_1_wp * tangent_orientation * inv_primal_edge_length
                    + dvt_norm_wp * inv_vert_vert_length)
    kh_smag_1_wp = kh_smag_1_wp * kh_smag_1_wp
    kh_smag_2_wp = astype(-astype(primal(2), vpfloat) + astype(primal(3), vpfloat), wpfloat)
    kh_smag_2_wp = (kh_smag_2_wp * inv_vert_vert_length
                    - astype(dvt_tang_vp, wpfloat) * inv_primal_edge_length)
    kh_smag_2_wp = kh_smag_2_wp * kh_smag_2_wp
    kh_smag_e_wp = diff_multfac_smag_wp * sqrt(kh_smag_2_wp + kh_smag_1_wp)
    z_nabla2_e_wp = (astype(astype(primal(0), vpfloat) + astype(primal(1), vpfloat), wpfloat)
                     - wpfloat("2.0") * vn) * (inv_primal_edge_length * inv_primal_edge_length)
    z_nabla2_e_wp = z_nabla2_e_wp + (
        astype(astype(primal(2), vpfloat) + astype(primal(3), vpfloat), wpfloat)
        - wpfloat("2.0") * vn) * (inv_vert_vert_length * inv_vert_vert_length)
    z_nabla2_e_wp = wpfloat("4.0") * z_nabla2_e_wp
    kh_smag_e_vp = maximum(vpfloat("0.0"), astype(kh_smag_e_wp - smag_offset_wp, vpfloat))
    kh_smag_e_vp = minimum(kh_smag_e_vp, smag_limit)
    return kh_smag_e_vp, astype(kh_smag_e_wp, vpfloat), z_nabla2_e_wp


@field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
        vn_ie: Field[[Edge, K], vpfloat], inv_dual_edge_length: Field[[Edge], wpfloat],
        w: Field[[Cell, K], wpfloat], z_vt_ie: Field[[Edge, K], vpfloat],
        inv_primal_edge_length: Field[[Edge], wpfloat],
        tangent_orientation: Field[[Edge], wpfloat], z_w_v: Field[[Vertex, K], vpfloat]
) -> Field[[Edge, K], vpfloat]:
    vn_ie_wp, z_vt_ie_wp, z_w_v_wp = astype((vn_ie, z_vt_ie, z_w_v), wpfloat)
    z_v_grad_w_wp = (vn_ie_wp * inv_dual_edge_length * (w(E2C[0]) - w(E2C[1]))
                     + z_vt_ie_wp * inv_primal_edge_length * tangent_orientation
                     * (z_w_v_wp(E2V[0]) - z_w_v_wp(E2V[1])))
    return astype(z_v_grad_w_wp, vpfloat)


@program
def edge_stencils(
        inv_dual_edge_length: Field[[Edge], wpfloat], z_exner_ex_pr: Field[[Cell, K], vpfloat],
        zdiff_gradp: Field[Dims[Edge, E2CDim, K], vpfloat],
        ikoffset: Field[Dims[Edge, E2CDim, K], int32], z_dexner_dz_c_1: Field[[Cell, K], vpfloat],
        z_dexner_dz_c_2: Field[[Cell, K], vpfloat], z_gradh_exner: Field[[Edge, K], vpfloat],
        diff_multfac_smag: Field[[K], vpfloat], tangent_orientation: Field[[Edge], wpfloat],
        inv_primal_edge_length: Field[[Edge], wpfloat],
        inv_vert_vert_length: Field[[Edge], wpfloat],
        u_vert: Field[[Vertex, K], vpfloat], v_vert: Field[[Vertex, K], vpfloat],
        primal_normal_vert_x: Field[[ECV], wpfloat], primal_normal_vert_y: Field[[ECV], wpfloat],
        dual_normal_vert_x: Field[[ECV], wpfloat], dual_normal_vert_y: Field[[ECV], wpfloat],
        vn: Field[[Edge, K], wpfloat], smag_limit: Field[[K], vpfloat],
        kh_smag_e: Field[[Edge, K], vpfloat], kh_smag_ec: Field[[Edge, K], vpfloat],
        z_nabla2_e: Field[[Edge, K], wpfloat], vn_ie: Field[[Edge, K], vpfloat],
        w: Field[[Cell, K], wpfloat], z_vt_ie: Field[[Edge, K], vpfloat],
        z_v_grad_w: Field[[Edge, K], vpfloat], smag_offset: vpfloat, horizontal_start: int32,
        horizontal_end: int32, vertical_start: int32, vertical_end: int32):
    domain = {Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)}
    _compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
        inv_dual_edge_length, z_exner_ex_pr, zdiff_gradp, ikoffset, z_dexner_dz_c_1,
        z_dexner_dz_c_2, out=z_gradh_exner, domain=domain)
    _calculate_nabla2_and_smag_coefficients_for_vn(
        diff_multfac_smag, tangent_orientation, inv_primal_edge_length, inv_vert_vert_length,
        u_vert, v_vert, primal_normal_vert_x, primal_normal_vert_y, dual_normal_vert_x,
        dual_normal_vert_y, vn, smag_limit, smag_offset, out=(kh_smag_e, kh_smag_ec, z_nabla2_e),
        domain=domain)
    _compute_horizontal_advection_term_for_vertical_velocity(
        vn_ie, inv_dual_edge_length, w, z_vt_ie, inv_primal_edge_length, tangent_orientation,
        u_vert, out=z_v_grad_w, domain=domain)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NE, 0, NLEV), (3, 11, 1, 4), (6, 6, 0, NLEV)])
def test_edge_stencils(backend, bounds):
    hs, he, vs, ve = bounds
    t, f32, f64 = TABLES, np.float32, np.float64
    lev = np.arange(NLEV)
    # ikoffset keeps every level inside the column, as ICON's does
    ikoffset = np.minimum(RNG.integers(0, 3, (NE, 2, NLEV)), NLEV - 1 - lev).astype(np.int32)
    a = dict(inv_dual_edge_length=wp(NE) + 0.5, z_exner_ex_pr=vp(NC, NLEV),
             zdiff_gradp=vp(NE, 2, NLEV), ikoffset=ikoffset, z_dexner_dz_c_1=vp(NC, NLEV),
             z_dexner_dz_c_2=vp(NC, NLEV), z_gradh_exner=np.full((NE, NLEV), 2.0, f32),
             diff_multfac_smag=vp(NLEV), tangent_orientation=np.where(wp(NE) < 0.5, -1.0, 1.0),
             inv_primal_edge_length=wp(NE) + 0.5, inv_vert_vert_length=wp(NE) + 0.5,
             u_vert=vp(NV, NLEV), v_vert=vp(NV, NLEV), primal_normal_vert_x=wp(4 * NE),
             primal_normal_vert_y=wp(4 * NE), dual_normal_vert_x=wp(4 * NE),
             dual_normal_vert_y=wp(4 * NE), vn=wp(NE, NLEV), smag_limit=vp(NLEV) + 0.2,
             kh_smag_e=np.full((NE, NLEV), 3.0, f32), kh_smag_ec=np.full((NE, NLEV), 3.0, f32),
             z_nabla2_e=np.full((NE, NLEV), 3.0), vn_ie=vp(NE, NLEV), w=wp(NC, NLEV),
             z_vt_ie=vp(NE, NLEV), z_v_grad_w=np.full((NE, NLEV), 5.0, f32))
    o = {name: np.copy(x) for name, x in a.items()}
    smag_offset = f32(0.05)
    edge_stencils(*a.values(), smag_offset, hs, he, vs, ve, offset_provider=TABLES,
                  backend=backend)

    def at(field, j):       # field at cell E2C[:, j] and level k + ikoffset[:, j, k]
        return field[t["E2C"][:, j, None], lev[None, :] + ikoffset[:, j, :]]

    zd = o["zdiff_gradp"]
    side = [at(o["z_exner_ex_pr"], j) + zd[:, j] * (at(o["z_dexner_dz_c_1"], j) + zd[:, j]
                                                     * at(o["z_dexner_dz_c_2"], j))
            for j in (0, 1)]
    grad = (o["inv_dual_edge_length"][:, None] * (side[1] - side[0]).astype(f64)).astype(f32)

    u, v = o["u_vert"].astype(f64), o["v_vert"].astype(f64)
    e2c2v = t["E2C2V"]

    def dot(nx, ny, j):
        return u[e2c2v[:, j]] * nx.reshape(NE, 4)[:, j, None] \
            + v[e2c2v[:, j]] * ny.reshape(NE, 4)[:, j, None]

    dual = [dot(o["dual_normal_vert_x"], o["dual_normal_vert_y"], j) for j in range(4)]
    primal = [dot(o["primal_normal_vert_x"], o["primal_normal_vert_y"], j) for j in range(4)]
    to, ipl, ivv = (o[n][:, None] for n in ("tangent_orientation", "inv_primal_edge_length",
                                            "inv_vert_vert_length"))
    pv = [p.astype(f32) for p in primal]
    dvt_tang_vp = ((-dual[0] + dual[1]) * to).astype(f32)
    kh1 = ((-pv[0] + pv[1]).astype(f64) * to * ipl
           + (-dual[2] + dual[3]).astype(f32).astype(f64) * ivv) ** 2
    kh2 = ((-pv[2] + pv[3]).astype(f64) * ivv - dvt_tang_vp.astype(f64) * ipl) ** 2
    kh_e = o["diff_multfac_smag"].astype(f64)[None, :] * np.sqrt(kh2 + kh1)
    nabla2 = 4.0 * (((pv[0] + pv[1]).astype(f64) - 2.0 * o["vn"]) * ipl * ipl
                    + ((pv[2] + pv[3]).astype(f64) - 2.0 * o["vn"]) * ivv * ivv)
    smag = np.minimum(np.maximum(f32(0), (kh_e - f64(smag_offset)).astype(f32)),
                      o["smag_limit"][None, :])

    e2c, e2v = t["E2C"], t["E2V"]
    z_w_v = o["u_vert"].astype(f64)
    adv = (o["vn_ie"].astype(f64) * o["inv_dual_edge_length"][:, None]
           * (o["w"][e2c[:, 0]] - o["w"][e2c[:, 1]])
           + o["z_vt_ie"].astype(f64) * ipl * to * (z_w_v[e2v[:, 0]] - z_w_v[e2v[:, 1]]))
    check(a, dict(
        z_gradh_exner=inside(grad, o["z_gradh_exner"], hs, he, vs, ve),
        kh_smag_e=inside(smag, o["kh_smag_e"], hs, he, vs, ve),
        kh_smag_ec=inside(kh_e.astype(f32), o["kh_smag_ec"], hs, he, vs, ve),
        z_nabla2_e=inside(nabla2, o["z_nabla2_e"], hs, he, vs, ve),
        z_v_grad_w=inside(adv.astype(f32), o["z_v_grad_w"], hs, he, vs, ve)), rtol=2e-5)


# ---------------------------------------------------------------- GT4Py spellings these needed

T = TypeVar("T")
CellKField = Field[Dims[Cell, K], T]        # icon4py's field_type_aliases
CellField = Field[Dims[Cell], T]


@field_operator
def _update_with_generic_aliases(a: CellKField[vpfloat], area: CellField[wpfloat]
                                 ) -> CellKField[wpfloat]:
    return astype(a, wpfloat) * area


def test_generic_field_aliases_take_an_element_type():
    a, area, out = vp(NC, NLEV), wp(NC), np.zeros((NC, NLEV))
    _update_with_generic_aliases(a, area, out=out, backend="interpreter")
    np.testing.assert_allclose(out, a.astype(np.float64) * area[:, None], rtol=1e-15)


def test_typed_literals_outside_translated_code():
    """``vpfloat("0.0")`` in a scan's ``init=`` (and anywhere in Python) is a NumPy
    scalar of that type; inside translated code it stays a typed literal."""
    assert type(vpfloat("0.5")) is np.float32 and vpfloat("0.5") == np.float32(0.5)
    assert type(wpfloat(2)) is np.float64 and type(int32("3")) is np.int32
    assert bool_type("False") is np.False_ and bool_type(True) is np.True_
    with pytest.raises(ValueError, match="give 'True' or 'False'"):
        bool_type("no")


@scan_operator(axis=K, forward=True, init=(0.0, 0.0, True))
def _three(state, a):
    return state[0] + a, state[1] + 2.0 * a, False


@field_operator
def _first_two_of_three(a: Field[[Cell, K], wpfloat]):
    s, t, _ = _three(a)
    return s, t          # (e[0], e[1]) of a three-element e: not e itself


def test_returning_part_of_a_tuple_value():
    a = wp(3, 4)
    s, t = np.zeros((3, 4)), np.zeros((3, 4))
    _first_two_of_three(a, out=(s, t), backend="interpreter")
    np.testing.assert_allclose(s, np.cumsum(a, axis=1), rtol=1e-14)
    np.testing.assert_allclose(t, 2.0 * np.cumsum(a, axis=1), rtol=1e-14)


def test_tuple_temporary_beside_a_temporary_named_like_its_element():
    """A tuple temporary ``t`` is stored as one array per element; a temporary
    ``t_1`` of the program keeps its own array."""
    import tensorir_dace as tir

    prog = tir.parse("""
    p(x: tensor<float, I[0:5]>, y: tensor<float, I[0:5]>, z: tensor<float, I[0:5]>) {
      t: tensor<(float, float), I[0:5]>;
      t_1: tensor<float, I[0:5]>;
      t_1 ← 3.0 × x;
      t ← make_tuple(x + 1.0, x + 2.0);
      y ← t[1] + t_1;
      z ← t[0];
    }""")
    x = np.arange(5.0)
    outs = [dict(y=np.zeros(5), z=np.zeros(5)) for _ in range(2)]
    tir.interpret(prog, x=x, **outs[0])
    tir.compile(prog)(x=x, **outs[1])
    for out in outs:
        np.testing.assert_allclose(out["y"], 4.0 * x + 2.0)
        np.testing.assert_allclose(out["z"], x + 1.0)


# ---------------------------------------------------------------- tracers and microphysics

EC = dims("EC")
E2EC = FieldOffset("E2EC", source=EC, target=(Edge, E2CDim))      # strided: e * 2 + k


class MicrophysicsConstants:
    """Constants read as attributes while translating (icon4py's FrozenNamespace)."""
    vz0 = 12.24
    alpha = 0.2
    qmin = 1.0e-12


@field_operator
def _compute_barycentric_backtrajectory(
        p_vn: Field[[Edge, K], wpfloat], p_vt: Field[[Edge, K], wpfloat],
        cell_idx: Field[Dims[EC], int32], pos_on_tplane_e_1: Field[Dims[EC], wpfloat],
        pos_on_tplane_e_2: Field[Dims[EC], wpfloat], primal_normal_cell_1: Field[Dims[EC], wpfloat],
        dual_normal_cell_1: Field[Dims[EC], wpfloat], p_dthalf: wpfloat):
    lvn_pos = p_vn >= 0.0
    p_cell_idx = where(lvn_pos, cell_idx(E2EC[0]), cell_idx(E2EC[1]))
    p_cell_rel_idx_dsl = where(lvn_pos, 0, 1)
    z_ntdistv_bary_1 = -(p_vn * p_dthalf + where(lvn_pos, pos_on_tplane_e_1(E2EC[0]),
                                                 pos_on_tplane_e_1(E2EC[1])))
    z_ntdistv_bary_2 = -(p_vt * p_dthalf + where(lvn_pos, pos_on_tplane_e_2(E2EC[0]),
                                                 pos_on_tplane_e_2(E2EC[1])))
    p_distv_bary_1 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_1(E2EC[0])
        + z_ntdistv_bary_2 * dual_normal_cell_1(E2EC[0]),
        z_ntdistv_bary_1 * primal_normal_cell_1(E2EC[1])
        + z_ntdistv_bary_2 * dual_normal_cell_1(E2EC[1]))
    return p_cell_idx, p_cell_rel_idx_dsl, astype(p_distv_bary_1, vpfloat)


@field_operator
def _compute_antidiffusive_cell_fluxes_and_min_max(
        geofac_div: Field[Dims[Cell, C2EDim], wpfloat], p_rhodz_now: Field[[Cell, K], wpfloat],
        p_rhodz_new: Field[[Cell, K], wpfloat], z_mflx_low: Field[[Edge, K], wpfloat],
        z_anti: Field[[Edge, K], wpfloat], p_cc: Field[[Cell, K], wpfloat], p_dtime: wpfloat):
    anti_1 = astype(p_dtime * geofac_div[C2EDim(0)] / p_rhodz_new * z_anti(C2E[0]), vpfloat)
    anti_2 = astype(p_dtime * geofac_div[C2EDim(1)] / p_rhodz_new * z_anti(C2E[1]), vpfloat)
    anti_3 = astype(p_dtime * geofac_div[C2EDim(2)] / p_rhodz_new * z_anti(C2E[2]), vpfloat)
    z_mflx_anti_in = -1.0 * (minimum(0.0, anti_1) + minimum(0.0, anti_2) + minimum(0.0, anti_3))
    z_mflx_anti_out = maximum(0.0, anti_1) + maximum(0.0, anti_2) + maximum(0.0, anti_3)
    z_fluxdiv_c = neighbor_sum(z_mflx_low(C2E) * geofac_div, axis=C2EDim)
    z_tracer_new_low = (p_cc * p_rhodz_now - p_dtime * z_fluxdiv_c) / p_rhodz_new
    z_tracer_max = astype(maximum(p_cc, z_tracer_new_low), vpfloat)
    z_tracer_min = astype(minimum(p_cc, z_tracer_new_low), vpfloat)
    return z_mflx_anti_in, z_mflx_anti_out, z_tracer_new_low, z_tracer_max, z_tracer_min


@field_operator
def _compute_ppm4gpu_integer_flux(p_cc: Field[[Cell, K], wpfloat],
                                  p_cellmass_now: Field[[Cell, K], wpfloat],
                                  z_cfl: Field[[Cell, K], wpfloat],
                                  p_upflux: Field[[Cell, K], wpfloat], k: Field[[K], int32],
                                  slev: int32, p_dtime: wpfloat):
    # two levels of each side of icon4py's five: the domain keeps K-2 and K+2 inside
    js = floor(abs(z_cfl)) - wpfloat(1.0)
    z_cfl_pos = z_cfl > wpfloat(0.0)
    z_cfl_neg = z_cfl < wpfloat(0.0)
    wsign = where(z_cfl_pos, wpfloat(1.0), wpfloat(-1.0))
    in_slev_bounds = astype(k, wpfloat) - js >= astype(slev, wpfloat)
    mass = p_cc * p_cellmass_now
    prod = (where(z_cfl_pos & (js >= wpfloat(0.0)), mass, wpfloat(0.0))
            + where(z_cfl_pos & (js >= wpfloat(1.0)), mass(K + 1), wpfloat(0.0))
            + where(z_cfl_pos & (js >= wpfloat(2.0)), mass(K + 2), wpfloat(0.0))
            + where(z_cfl_neg & (js >= wpfloat(0.0)), mass(K - 1), wpfloat(0.0))
            + where(z_cfl_neg & (js >= wpfloat(1.0)), mass(K - 2), wpfloat(0.0)))
    return p_upflux + where(in_slev_bounds, wsign * prod / p_dtime, wpfloat(0.0))


@field_operator
def _fall_speed(rhoq: wpfloat) -> wpfloat:
    c = MicrophysicsConstants
    return c.vz0 * exp(c.alpha * log(maximum(rhoq, c.qmin)))


@scan_operator(axis=K, forward=True, init=(wpfloat("0.0"), int32(0)))
def _sedimentation(state: tuple[wpfloat, int32], q: wpfloat, rho: wpfloat, dz: wpfloat,
                   k_lev: int32, kstart_moist: int32, dt: wpfloat):
    flux_above, n_active = state
    active = k_lev >= kstart_moist
    v = _fall_speed(rho * q)          # a field operator on scalars, called in a scan
    q_new = where(active, (q + dt * flux_above / (rho * dz)) / (1.0 + dt * v / dz), q)
    return where(active, rho * q_new * v, 0.0), n_active + where(active, int32(1), int32(0))


@field_operator
def _precipitation_flux(q: Field[[Cell, K], wpfloat], rho: Field[[Cell, K], wpfloat],
                        dz: Field[[Cell, K], wpfloat], k: Field[[K], int32], kstart_moist: int32,
                        dt: wpfloat):
    return _sedimentation(q, rho, dz, broadcast(k, (Cell, K)), kstart_moist, dt)


@program
def tracer_stencils(
        p_vn: Field[[Edge, K], wpfloat], p_vt: Field[[Edge, K], wpfloat],
        cell_idx: Field[Dims[EC], int32], pos_on_tplane_e_1: Field[Dims[EC], wpfloat],
        pos_on_tplane_e_2: Field[Dims[EC], wpfloat], primal_normal_cell_1: Field[Dims[EC], wpfloat],
        dual_normal_cell_1: Field[Dims[EC], wpfloat], p_cell_idx: Field[[Edge, K], int32],
        p_cell_rel_idx_dsl: Field[[Edge, K], int32], p_distv_bary_1: Field[[Edge, K], vpfloat],
        geofac_div: Field[Dims[Cell, C2EDim], wpfloat], p_rhodz_now: Field[[Cell, K], wpfloat],
        p_rhodz_new: Field[[Cell, K], wpfloat], z_mflx_low: Field[[Edge, K], wpfloat],
        z_anti: Field[[Edge, K], wpfloat], p_cc: Field[[Cell, K], wpfloat],
        z_mflx_anti_in: Field[[Cell, K], vpfloat], z_mflx_anti_out: Field[[Cell, K], vpfloat],
        z_tracer_new_low: Field[[Cell, K], wpfloat], z_tracer_max: Field[[Cell, K], vpfloat],
        z_tracer_min: Field[[Cell, K], vpfloat], z_cfl: Field[[Cell, K], wpfloat],
        p_upflux: Field[[Cell, K], wpfloat], k: Field[[K], int32], q: Field[[Cell, K], wpfloat],
        dz: Field[[Cell, K], wpfloat], flux: Field[[Cell, K], wpfloat],
        n_active: Field[[Cell, K], int32], p_dthalf: wpfloat, p_dtime: wpfloat, slev: int32,
        kstart_moist: int32, edge_start: int32, edge_end: int32, horizontal_start: int32,
        horizontal_end: int32, vertical_start: int32, vertical_end: int32):
    _compute_barycentric_backtrajectory(
        p_vn, p_vt, cell_idx, pos_on_tplane_e_1, pos_on_tplane_e_2, primal_normal_cell_1,
        dual_normal_cell_1, p_dthalf, out=(p_cell_idx, p_cell_rel_idx_dsl, p_distv_bary_1),
        domain={Edge: (edge_start, edge_end), K: (vertical_start, vertical_end)})
    cells = {Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)}
    _compute_antidiffusive_cell_fluxes_and_min_max(
        geofac_div, p_rhodz_now, p_rhodz_new, z_mflx_low, z_anti, p_cc, p_dtime,
        out=(z_mflx_anti_in, z_mflx_anti_out, z_tracer_new_low, z_tracer_max, z_tracer_min),
        domain=cells)
    _compute_ppm4gpu_integer_flux(
        p_cc=p_cc, p_cellmass_now=p_rhodz_now, z_cfl=z_cfl, p_upflux=p_upflux, k=k, slev=slev,
        p_dtime=p_dtime, out=p_upflux,
        domain={Cell: (horizontal_start, horizontal_end), K: (2, vertical_end - 2)})
    _precipitation_flux(q, p_rhodz_now, dz, k, kstart_moist, p_dthalf, out=(flux, n_active),
                        domain=cells)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV), (2, 7, 1, 5), (3, 3, 0, NLEV)])
def test_tracer_stencils(backend, bounds):
    hs, he, vs, ve = bounds
    es, ee = 1, NE - 2
    f32, f64, t = np.float32, np.float64, TABLES
    a = dict(p_vn=wp(NE, NLEV) - 0.5, p_vt=wp(NE, NLEV), cell_idx=RNG.integers(
                 0, NC, 2 * NE).astype(np.int32), pos_on_tplane_e_1=wp(2 * NE),
             pos_on_tplane_e_2=wp(2 * NE), primal_normal_cell_1=wp(2 * NE),
             dual_normal_cell_1=wp(2 * NE), p_cell_idx=np.full((NE, NLEV), -7, np.int32),
             p_cell_rel_idx_dsl=np.full((NE, NLEV), -7, np.int32),
             p_distv_bary_1=np.zeros((NE, NLEV), f32), geofac_div=wp(NC, 3) - 0.5,
             p_rhodz_now=wp(NC, NLEV) + 0.5, p_rhodz_new=wp(NC, NLEV) + 0.5,
             z_mflx_low=wp(NE, NLEV), z_anti=wp(NE, NLEV) - 0.5, p_cc=wp(NC, NLEV),
             z_mflx_anti_in=np.zeros((NC, NLEV), f32), z_mflx_anti_out=np.zeros((NC, NLEV), f32),
             z_tracer_new_low=np.zeros((NC, NLEV)), z_tracer_max=np.zeros((NC, NLEV), f32),
             z_tracer_min=np.zeros((NC, NLEV), f32), z_cfl=(wp(NC, NLEV) - 0.5) * 8.0,
             p_upflux=wp(NC, NLEV), k=np.arange(NLEV, dtype=np.int32),
             q=wp(NC, NLEV) * 1e-3, dz=wp(NC, NLEV) * 100.0 + 50.0,
             flux=np.zeros((NC, NLEV)), n_active=np.full((NC, NLEV), -1, np.int32))
    o = {name: np.copy(x) for name, x in a.items()}
    p_dthalf, p_dtime, slev, kstart_moist = 10.0, 0.7, 1, 2
    tracer_stencils(*a.values(), p_dthalf, p_dtime, slev, kstart_moist, es, ee, hs, he, vs, ve,
                    offset_provider=TABLES, backend=backend)

    pos = o["p_vn"] >= 0.0
    ec = lambda f, j: f.reshape(NE, 2)[:, j, None]              # noqa: E731
    side = lambda f: np.where(pos, ec(f, 0), ec(f, 1))          # noqa: E731
    d1 = -(o["p_vn"] * p_dthalf + side(o["pos_on_tplane_e_1"]))
    d2 = -(o["p_vt"] * p_dthalf + side(o["pos_on_tplane_e_2"]))
    bary = d1 * side(o["primal_normal_cell_1"]) + d2 * side(o["dual_normal_cell_1"])

    c2e, g = t["C2E"], o["geofac_div"]
    anti = [(p_dtime * g[:, j, None] / o["p_rhodz_new"] * o["z_anti"][c2e[:, j]]).astype(f32)
            for j in range(3)]
    low = (o["p_cc"] * o["p_rhodz_now"] - p_dtime * nbsum(g, o["z_mflx_low"], c2e)) \
        / o["p_rhodz_new"]

    js = np.floor(np.abs(o["z_cfl"])) - 1.0
    mass = o["p_cc"] * o["p_rhodz_now"]

    def lev(d):             # mass at level k + d, zero outside the column
        out = np.zeros_like(mass)
        lo, hi = max(0, -d), min(NLEV, NLEV - d)
        out[:, lo:hi] = mass[:, lo + d:hi + d]
        return out

    up, down = o["z_cfl"] > 0, o["z_cfl"] < 0
    prod = sum(np.where(up & (js >= j), lev(j), 0.0) for j in (0, 1, 2)) \
        + sum(np.where(down & (js >= j), lev(-1 - j), 0.0) for j in (0, 1))
    upflux = o["p_upflux"] + np.where(np.arange(NLEV) - js >= slev,
                                      np.where(up, 1.0, -1.0) * prod / p_dtime, 0.0)

    flux, count = np.zeros((NC, NLEV)), np.full((NC, NLEV), -1, np.int32)
    above, n = np.zeros(NC), np.zeros(NC, np.int32)
    rho, q, dz = o["p_rhodz_now"], o["q"], o["dz"]
    for kk in range(vs, ve):         # the scan starts at the domain's first level
        on = kk >= kstart_moist
        v = 12.24 * np.exp(0.2 * np.log(np.maximum(rho[:, kk] * q[:, kk], 1e-12)))
        q_new = (q[:, kk] + p_dthalf * above / (rho[:, kk] * dz[:, kk])) \
            / (1.0 + p_dthalf * v / dz[:, kk]) if on else q[:, kk]
        above = rho[:, kk] * q_new * v if on else np.zeros(NC)
        n = n + int(on)
        flux[:, kk], count[:, kk] = above, n
    check(a, dict(
        p_cell_idx=inside(side(o["cell_idx"]), o["p_cell_idx"], es, ee, vs, ve),
        p_cell_rel_idx_dsl=inside(np.where(pos, 0, 1), o["p_cell_rel_idx_dsl"], es, ee, vs, ve),
        p_distv_bary_1=inside(bary.astype(f32), o["p_distv_bary_1"], es, ee, vs, ve),
        z_mflx_anti_in=inside(-1.0 * sum(np.minimum(f32(0), x) for x in anti),
                              o["z_mflx_anti_in"], hs, he, vs, ve),
        z_mflx_anti_out=inside(sum(np.maximum(f32(0), x) for x in anti),
                               o["z_mflx_anti_out"], hs, he, vs, ve),
        z_tracer_new_low=inside(low, o["z_tracer_new_low"], hs, he, vs, ve),
        z_tracer_max=inside(np.maximum(o["p_cc"], low).astype(f32), o["z_tracer_max"],
                            hs, he, vs, ve),
        z_tracer_min=inside(np.minimum(o["p_cc"], low).astype(f32), o["z_tracer_min"],
                            hs, he, vs, ve),
        p_upflux=inside(upflux, o["p_upflux"], hs, he, 2, ve - 2),
        flux=inside(flux, o["flux"], hs, he, vs, ve),
        n_active=inside(count, o["n_active"], hs, he, vs, ve)), rtol=1e-5)


def test_a_scalar_annotation_outside_a_scan_still_needs_a_scalar():
    @field_operator
    def wrong(q: Field[[Cell, K], wpfloat]):
        return _fall_speed(q)

    with pytest.raises(FrontendError, match="argument 'rhoq' of _fall_speed.. is annotated"):
        wrong(wp(3, 2), out=np.zeros((3, 2)), backend="interpreter")


# ---------------------------------------------------------------- run-time conditions, randomised


@field_operator
def _runtime_conditions(a: Field[[Cell, K], wpfloat], b: Field[[Cell, K], wpfloat], lo: int32,
                        hi: int32, lo2: int32, hi2: int32, nr: int32):
    inner = concat_where((lo2 <= Cell) & (Cell < hi2), a, b)
    one = concat_where((lo <= Cell) & (Cell < hi), a, b)
    two = concat_where((K > 0) & (K < nr) & (lo <= Cell) & (Cell < hi), inner, b)
    three, four = concat_where((K < nr) | (hi <= Cell), (a, b), (b, 2.0 * a))
    five = concat_where(~((lo <= Cell) & (nr <= K)), one, -a)
    return one, two, three, four, five


@program
def runtime_conditions(a: Field[[Cell, K], wpfloat], b: Field[[Cell, K], wpfloat],
                       o1: Field[[Cell, K], wpfloat], o2: Field[[Cell, K], wpfloat],
                       o3: Field[[Cell, K], wpfloat], o4: Field[[Cell, K], wpfloat],
                       o5: Field[[Cell, K], wpfloat], lo: int32, hi: int32, lo2: int32,
                       hi2: int32, nr: int32, hs: int32, he: int32, vs: int32, ve: int32):
    _runtime_conditions(a, b, lo, hi, lo2, hi2, nr, out=(o1, o2, o3, o4, o5),
                        domain={Cell: (hs, he), K: (vs, ve)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_concat_where_conditions_on_random_bounds(backend):
    """Compound conditions with run-time bounds on both dimensions, a branch that
    is itself a run-time concat_where, tuple branches, negation: random bounds
    (inside, outside and inverted) against NumPy masks, one compiled program."""
    rng = np.random.default_rng(11)
    n, nk = 7, 5
    c, k = np.arange(n)[:, None], np.arange(nk)[None, :]
    for _ in range(8):
        lo, hi, lo2, hi2 = (int(x) for x in rng.integers(-2, n + 3, 4))
        nr = int(rng.integers(-1, nk + 2))
        hs, he = sorted(int(x) for x in rng.integers(0, n + 1, 2))
        vs, ve = sorted(int(x) for x in rng.integers(0, nk + 1, 2))
        a, b = rng.random((n, nk)), rng.random((n, nk))
        outs = [np.full((n, nk), 9.0) for _ in range(5)]
        runtime_conditions(a, b, *outs, lo, hi, lo2, hi2, nr, hs, he, vs, ve, backend=backend)
        cells = (lo <= c) & (c < hi)
        one = np.where(cells, a, b)
        inner = np.where((lo2 <= c) & (c < hi2), a, b)
        two = np.where((k > 0) & (k < nr) & cells, inner, b)
        either = (k < nr) | (hi <= c)
        five = np.where(~((lo <= c) & (nr <= k)), one, -a)
        for got, want in zip(outs, (one, two, np.where(either, a, b),
                                    np.where(either, b, 2.0 * a), five)):
            np.testing.assert_array_equal(got, inside(want, np.full((n, nk), 9.0),
                                                      hs, he, vs, ve))


# ---------------------------------------------------------------- fused: pressure gradient on edges


@field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_nonflat_coordinates(
        inv_dual_edge_length: Field[[Edge], wpfloat], z_exner_ex_pr: Field[[Cell, K], vpfloat],
        ddxn_z_full: Field[[Edge, K], vpfloat], c_lin_e: Field[[Edge, E2CDim], wpfloat],
        z_dexner_dz_c_1: Field[[Cell, K], vpfloat]) -> Field[[Edge, K], vpfloat]:
    ddxn_z_full_wp = astype(ddxn_z_full, wpfloat)
    z_exner_ex_pr_wp, z_dexner_dz_c_1_wp = astype((z_exner_ex_pr, z_dexner_dz_c_1), wpfloat)
    gradh = inv_dual_edge_length * (z_exner_ex_pr_wp(E2C[1]) - z_exner_ex_pr_wp(E2C[0])) \
        - ddxn_z_full_wp * neighbor_sum(c_lin_e * z_dexner_dz_c_1_wp(E2C), axis=E2CDim)
    return astype(gradh, vpfloat)


@field_operator
def _apply_on_vertical_level(nflatlev: int32, nflat_gradp: int32,
                             on_flatlevels: Field[[Edge, K], vpfloat],
                             between_flat_and_flatgradp: Field[[Edge, K], vpfloat],
                             below_flatgradp: Field[[Edge, K], vpfloat]):
    return concat_where(K < nflatlev, on_flatlevels,
                        concat_where(nflat_gradp + 1 <= K, below_flatgradp,
                                     between_flat_and_flatgradp))


@field_operator
def _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure(
        ipeidx_dsl: Field[[Edge, K], bool], pg_exdist: Field[[Edge, K], vpfloat],
        z_hydro_corr: Field[[Edge], wpfloat], z_gradh_exner: Field[[Edge, K], vpfloat]):
    corrected = astype(z_gradh_exner, wpfloat) + z_hydro_corr * astype(pg_exdist, wpfloat)
    return where(ipeidx_dsl, astype(corrected, vpfloat), z_gradh_exner)


@field_operator
def _compute_horizontal_pressure_gradient(
        z_exner_ex_pr: Field[[Cell, K], vpfloat], z_dexner_dz_c_1: Field[[Cell, K], vpfloat],
        z_dexner_dz_c_2: Field[[Cell, K], vpfloat], z_hydro_corr: Field[[Edge], wpfloat],
        ddxn_z_full: Field[[Edge, K], vpfloat], c_lin_e: Field[[Edge, E2CDim], wpfloat],
        ikoffset: Field[[Edge, E2CDim, K], int32], zdiff_gradp: Field[[Edge, E2CDim, K], vpfloat],
        ipeidx_dsl: Field[[Edge, K], bool], pg_exdist: Field[[Edge, K], vpfloat],
        inv_dual_edge_length: Field[[Edge], wpfloat], vt: Field[[Edge, K], vpfloat],
        nflatlev: int32, nflat_gradp: int32, start_edge: int32, end_edge_halo: int32):
    gradient = _apply_on_vertical_level(
        nflatlev, nflat_gradp,
        on_flatlevels=astype(inv_dual_edge_length * astype(
            z_exner_ex_pr(E2C[1]) - z_exner_ex_pr(E2C[0]), wpfloat), vpfloat),
        between_flat_and_flatgradp=(
            _compute_horizontal_gradient_of_exner_pressure_for_nonflat_coordinates(
                inv_dual_edge_length=inv_dual_edge_length, z_exner_ex_pr=z_exner_ex_pr,
                ddxn_z_full=ddxn_z_full, c_lin_e=c_lin_e, z_dexner_dz_c_1=z_dexner_dz_c_1)),
        below_flatgradp=_compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
            inv_dual_edge_length=inv_dual_edge_length, z_exner_ex_pr=z_exner_ex_pr,
            zdiff_gradp=zdiff_gradp, ikoffset=ikoffset, z_dexner_dz_c_1=z_dexner_dz_c_1,
            z_dexner_dz_c_2=z_dexner_dz_c_2))
    gradient = _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure(
        ipeidx_dsl=ipeidx_dsl, pg_exdist=pg_exdist, z_hydro_corr=z_hydro_corr,
        z_gradh_exner=gradient)
    # the halo edges get zeros, as broadcasts of a literal
    rho_e, theta_e = concat_where(
        (start_edge <= Edge) & (Edge < end_edge_halo),
        (astype(vt, wpfloat) * inv_dual_edge_length, astype(gradient * vt, wpfloat)),
        (broadcast(wpfloat("0.0"), (Edge, K)), broadcast(wpfloat("0.0"), (Edge, K))))
    return gradient, rho_e, theta_e


@program
def pressure_gradient(
        z_exner_ex_pr: Field[[Cell, K], vpfloat], z_dexner_dz_c_1: Field[[Cell, K], vpfloat],
        z_dexner_dz_c_2: Field[[Cell, K], vpfloat], z_hydro_corr: Field[[Edge], wpfloat],
        ddxn_z_full: Field[[Edge, K], vpfloat], c_lin_e: Field[[Edge, E2CDim], wpfloat],
        ikoffset: Field[[Edge, E2CDim, K], int32], zdiff_gradp: Field[[Edge, E2CDim, K], vpfloat],
        ipeidx_dsl: Field[[Edge, K], bool], pg_exdist: Field[[Edge, K], vpfloat],
        inv_dual_edge_length: Field[[Edge], wpfloat], vt: Field[[Edge, K], vpfloat],
        z_gradh_exner: Field[[Edge, K], vpfloat], rho_e: Field[[Edge, K], wpfloat],
        theta_e: Field[[Edge, K], wpfloat], nflatlev: int32, nflat_gradp: int32,
        start_edge: int32, end_edge_halo: int32, horizontal_start: int32, horizontal_end: int32):
    _compute_horizontal_pressure_gradient(
        z_exner_ex_pr, z_dexner_dz_c_1, z_dexner_dz_c_2, z_hydro_corr, ddxn_z_full, c_lin_e,
        ikoffset, zdiff_gradp, ipeidx_dsl, pg_exdist, inv_dual_edge_length, vt, nflatlev,
        nflat_gradp, start_edge, end_edge_halo, out=(z_gradh_exner, rho_e, theta_e),
        domain={Edge: (horizontal_start, horizontal_end), K: (0, 6)})     # literal levels


@pytest.mark.parametrize("backend", BACKENDS)
def test_pressure_gradient_with_level_ranges_and_halo_zeros(backend):
    assert NLEV == 6
    f32, f64, t = np.float32, np.float64, TABLES
    lev = np.arange(NLEV)
    ikoffset = np.minimum(RNG.integers(0, 3, (NE, 2, NLEV)), NLEV - 1 - lev).astype(np.int32)
    a = dict(z_exner_ex_pr=vp(NC, NLEV), z_dexner_dz_c_1=vp(NC, NLEV),
             z_dexner_dz_c_2=vp(NC, NLEV), z_hydro_corr=wp(NE), ddxn_z_full=vp(NE, NLEV),
             c_lin_e=wp(NE, 2), ikoffset=ikoffset, zdiff_gradp=vp(NE, 2, NLEV),
             ipeidx_dsl=RNG.random((NE, NLEV)) < 0.4, pg_exdist=vp(NE, NLEV),
             inv_dual_edge_length=wp(NE) + 0.5, vt=vp(NE, NLEV),
             z_gradh_exner=np.full((NE, NLEV), 4.0, f32), rho_e=np.full((NE, NLEV), 4.0),
             theta_e=np.full((NE, NLEV), 4.0))
    o = {name: np.copy(x) for name, x in a.items()}
    e2c, idel = t["E2C"], o["inv_dual_edge_length"][:, None]
    ex, d1, d2 = (o[n].astype(f64) for n in ("z_exner_ex_pr", "z_dexner_dz_c_1",
                                              "z_dexner_dz_c_2"))
    flat = (idel * (o["z_exner_ex_pr"][e2c[:, 1]] - o["z_exner_ex_pr"][e2c[:, 0]])
            .astype(f64)).astype(f32)
    nonflat = (idel * (ex[e2c[:, 1]] - ex[e2c[:, 0]]) - o["ddxn_z_full"].astype(f64)
               * nbsum(o["c_lin_e"], d1, e2c)).astype(f32)

    def at(field, j):
        return field[e2c[:, j, None], lev[None, :] + ikoffset[:, j, :]]

    zd = o["zdiff_gradp"]
    side = [at(o["z_exner_ex_pr"], j) + zd[:, j] * (at(o["z_dexner_dz_c_1"], j) + zd[:, j]
                                                     * at(o["z_dexner_dz_c_2"], j))
            for j in (0, 1)]
    multiple = (idel * (side[1] - side[0]).astype(f64)).astype(f32)
    for nflatlev, nflat_gradp, start, end, hs, he in [(2, 3, 2, 9, 0, NE), (0, 0, 0, NE, 1, 12),
                                                      (4, 1, 6, 3, 3, NE), (7, 9, -1, 99, 0, 5)]:
        for name in ("z_gradh_exner", "rho_e", "theta_e"):
            a[name][...] = o[name]
        pressure_gradient(*a.values(), nflatlev, nflat_gradp, start, end, hs, he,
                          offset_provider=TABLES, backend=backend)
        k = lev[None, :]
        grad = np.where(k < nflatlev, flat, np.where(nflat_gradp + 1 <= k, multiple, nonflat))
        grad = np.where(o["ipeidx_dsl"], (grad.astype(f64) + o["z_hydro_corr"][:, None]
                                          * o["pg_exdist"].astype(f64)).astype(f32), grad)
        edges = np.arange(NE)[:, None]
        halo = (start <= edges) & (edges < end)
        vt = o["vt"].astype(f64)
        check(a, dict(
            z_gradh_exner=inside(grad, o["z_gradh_exner"], hs, he, 0, NLEV),
            rho_e=inside(np.where(halo, vt * idel, 0.0), o["rho_e"], hs, he, 0, NLEV),
            theta_e=inside(np.where(halo, (grad * o["vt"]).astype(f64), 0.0), o["theta_e"],
                           hs, he, 0, NLEV)), rtol=2e-5)


def test_half_level_offsets_read_the_full_levels_around_each_interface():
    KHalf = dims("KHalf")

    @field_operator
    def at_interfaces(x: Field[[Cell, K], wpfloat]) -> Field[[Cell, KHalf], wpfloat]:
        return x(KHalf - 0.5) + x(KHalf + 0.5)

    x = wp(3, 4)
    out = np.zeros((3, 5))     # half levels: one more than the full levels
    at_interfaces(x, out=out, domain={Cell: (0, 3), KHalf: (1, 4)}, backend="interpreter")
    assert np.array_equal(out[:, 1:4], x[:, :-1] + x[:, 1:])
    assert not out[:, 0].any() and not out[:, 4].any()


def test_offsets_that_are_neither_whole_nor_half_are_refused():
    KHalf = dims("KHalf")

    @field_operator
    def quarter(x: Field[[Cell, K], wpfloat]):
        return x(KHalf - 0.25)

    with pytest.raises(FrontendError, match=r"KHalf \+ -0.25: an offset along a dimension is "
                                            r"a whole number, or a half") as info:
        quarter(wp(3, 4), out=np.zeros((3, 3)), backend="interpreter")
    assert info.value.loc is not None and info.value.loc.line > 0


# ---------------------------------------------------------------- the whole implicit solve for w


@scan_operator(axis=K, forward=False, init=wpfloat("0.0"))
def _w_back_substitution(w_below: wpfloat, z_q: vpfloat, w: wpfloat) -> wpfloat:
    return w + w_below * astype(z_q, wpfloat)


@field_operator
def _vertically_implicit_solve_for_w(
        vwind_impl_wgt: Field[[Cell], wpfloat], theta_v_ic: Field[[Cell, K], wpfloat],
        ddqz_z_half: Field[[Cell, K], vpfloat], z_alpha: Field[[Cell, K], vpfloat],
        z_beta: Field[[Cell, K], vpfloat], z_w_expl: Field[[Cell, K], wpfloat],
        z_exner_expl: Field[[Cell, K], wpfloat], z_q: Field[[Cell, K], vpfloat],
        w: Field[[Cell, K], wpfloat], dtime: wpfloat, cpd: wpfloat, nlev: int32):
    # a field operator calling one that runs a forward scan, then a backward scan
    # over its results; the surface level keeps w
    z_q_new, w_forward = _solve_tridiagonal_matrix_for_w_forward_sweep(
        vwind_impl_wgt, theta_v_ic, ddqz_z_half, z_alpha, z_beta, z_w_expl, z_exner_expl, z_q,
        w, dtime, cpd)
    return concat_where(K < nlev, _w_back_substitution(z_q_new, w_forward), w)


@program
def implicit_solve(
        vwind_impl_wgt: Field[[Cell], wpfloat], theta_v_ic: Field[[Cell, K], wpfloat],
        ddqz_z_half: Field[[Cell, K], vpfloat], z_alpha: Field[[Cell, K], vpfloat],
        z_beta: Field[[Cell, K], vpfloat], z_w_expl: Field[[Cell, K], wpfloat],
        z_exner_expl: Field[[Cell, K], wpfloat], z_q: Field[[Cell, K], vpfloat],
        w: Field[[Cell, K], wpfloat], w_new: Field[[Cell, K], wpfloat], dtime: wpfloat,
        cpd: wpfloat, nlev: int32, horizontal_start: int32, horizontal_end: int32):
    _vertically_implicit_solve_for_w(
        vwind_impl_wgt, theta_v_ic, ddqz_z_half, z_alpha, z_beta, z_w_expl, z_exner_expl, z_q,
        w, dtime, cpd, nlev, out=w_new,
        domain={Cell: (horizontal_start, horizontal_end), K: (1, nlev)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_implicit_solve_forward_then_backward(backend):
    a = column_inputs(NLEV)
    names = ("vwind_impl_wgt", "theta_v_ic", "ddqz_z_half", "z_alpha", "z_beta", "z_w_expl",
             "z_exner_expl", "z_q", "w")
    dtime, cpd, hs, he = 0.3, 1.5, 1, NC - 1
    w_new = np.full((NC, NLEV + 1), 5.0)
    implicit_solve(*(a[n] for n in names), w_new, dtime, cpd, NLEV, hs, he,
                   offset_provider={"Koff": K}, backend=backend)
    z_q, w = forward_sweep_numpy(dict(a, dtime=dtime, cpd=cpd), 1, NLEV)
    solved = np.full((NC, NLEV + 1), 5.0)
    below = np.zeros(NC)
    for k in range(NLEV - 1, 0, -1):      # the scan starts at the domain's last level
        below = w[:, k] + below * z_q[:, k].astype(np.float64)
        solved[:, k] = below
    np.testing.assert_allclose(w_new, inside(solved, np.full((NC, NLEV + 1), 5.0), hs, he, 1,
                                             NLEV), rtol=2e-5)


@field_operator
def _nested_result(vn: Field[[Edge, K], wpfloat], vt: Field[[Edge, K], vpfloat]):
    vt_wp = astype(vt, wpfloat)
    return (vn * vn + vt_wp * vt_wp, vn * vt_wp), astype(-vn, vpfloat)


@program
def nested_outputs(vn: Field[[Edge, K], wpfloat], vt: Field[[Edge, K], vpfloat],
                   kin: Field[[Edge, K], wpfloat], flux: Field[[Edge, K], wpfloat],
                   minus_vn: Field[[Edge, K], vpfloat], horizontal_start: int32,
                   horizontal_end: int32):
    _nested_result(vn, vt, out=((kin, flux), minus_vn),
                   domain={Edge: (horizontal_start, horizontal_end), K: (1, NLEV)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_tuple_outputs_under_a_domain(backend):
    vn, vt = wp(NE, NLEV), vp(NE, NLEV)
    outs = [np.full((NE, NLEV), 3.0), np.full((NE, NLEV), 3.0),
            np.full((NE, NLEV), 3.0, np.float32)]
    nested_outputs(vn, vt, *outs, 2, NE - 1, backend=backend)
    v = vt.astype(np.float64)
    for got, want in zip(outs, (vn * vn + v * v, vn * v, (-vn).astype(np.float32))):
        np.testing.assert_allclose(got, inside(want, np.full_like(got, 3.0), 2, NE - 1, 1, NLEV),
                                   rtol=1e-6)
