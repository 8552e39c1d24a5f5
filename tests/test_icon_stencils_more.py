"""More of ICON's stencils (icon4py's field operators) in the Python front end.

Each stencil keeps GT4Py's spelling: ``FieldOffset`` declarations for every
ICON connectivity (``V2E``, ``V2C``, ``E2C``, ``E2C2E``, ``E2C2EO``,
``C2E2C``, ``C2E2CO``, ``C2E``, ``Koff``), the strided ``C2CE`` into a
flattened sparse field over ``CE``, ``where``, ``concat_where``,
``broadcast``, ``minimum``/``maximum``, ``astype`` and ``domain=`` dicts held
in a variable, with bounds computed from the program's arguments or literal
bounds, GT4Py's ``Field[[Cell, K], T]`` annotations, ``as_offset(Koff, …)``,
``if`` statements on scalars and a backward ``scan_operator``.  The stencils
are compiled together in three programs, run by both backends and compared
with hand-written NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ArgumentError, FrontendError, TensorIRError
from tensorir_dace.frontend import (
    Dims,
    Field,
    FieldOffset,
    Tensor,
    as_offset,
    astype,
    broadcast,
    concat_where,
    dims,
    float32,
    float64,
    function,
    int32,
    maximum,
    minimum,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
    where,
)

Cell, Edge, Vertex, K, CE = dims("Cell Edge Vertex K CE")
V2EDim, V2CDim = neighbor_dim(Edge, 6), neighbor_dim(Cell, 6)
E2CDim, E2C2EDim, E2C2EODim = neighbor_dim(Cell, 2), neighbor_dim(Edge, 4), neighbor_dim(Edge, 5)
C2EDim, C2E2CDim, C2E2CODim = neighbor_dim(Edge, 3), neighbor_dim(Cell, 3), neighbor_dim(Cell, 4)
V2E = FieldOffset("V2E", source=Edge, target=(Vertex, V2EDim))
V2C = FieldOffset("V2C", source=Cell, target=(Vertex, V2CDim))
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))
E2C2E = FieldOffset("E2C2E", source=Edge, target=(Edge, E2C2EDim))
E2C2EO = FieldOffset("E2C2EO", source=Edge, target=(Edge, E2C2EODim))
C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))
C2E2C = FieldOffset("C2E2C", source=Cell, target=(Cell, C2E2CDim))
C2E2CO = FieldOffset("C2E2CO", source=Cell, target=(Cell, C2E2CODim))
C2CE = FieldOffset("C2CE", source=CE, target=(Cell, C2EDim))     # strided: c * 3 + k
Koff = FieldOffset("Koff", source=K, target=(K,))
wpfloat, vpfloat = float64, float32
BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NK = 10, 15, 7, 5
RNG = np.random.default_rng(2027)


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


TABLES = {"V2E": table(NV, 6, NE, absent=0.15), "V2C": table(NV, 6, NC, absent=0.15),
          "E2C": table(NE, 2, NC), "E2C2E": table(NE, 4, NE, absent=0.2),
          "E2C2EO": table(NE, 5, NE, absent=0.1), "C2E": table(NC, 3, NE),
          "C2E2C": table(NC, 3, NC), "C2E2CO": table(NC, 4, NC, absent=0.1),
          "C2CE": None}     # GT4Py's StridedNeighborOffsetProvider: nothing to pass
BOUNDS = [(0, 99, 0, 99), (2, 6, 1, 4), (3, 3, 0, 99), (1, 5, 2, 2)]


def wp(*shape):
    return RNG.random(shape)


def vp(*shape):
    return RNG.random(shape).astype(np.float32)


def nbsum(weights, field, tab):
    """neighbor_sum(weights * field(tab)): absent (-1) neighbours skipped."""
    g = field[np.where(tab >= 0, tab, 0)]                        # (rows, nb, K...)
    w = weights.reshape(weights.shape + (1,) * (g.ndim - weights.ndim))
    return np.where((tab >= 0).reshape(tab.shape + (1,) * (g.ndim - 2)), w * g, 0.0).sum(1)


def written(full, bounds, fill):
    """``full`` inside ``bounds`` (horizontal, vertical), ``fill`` elsewhere."""
    hs, he, vs, ve = bounds
    out = np.full(full.shape, fill, full.dtype)
    out[hs:he, vs:ve] = full[hs:he, vs:ve]
    return out


def clip(bounds, n_h):
    hs, he, vs, ve = bounds
    return min(hs, n_h), min(he, n_h), min(vs, NK), min(ve, NK)


# ---------------------------------------------------------------- vertex and edge stencils


@function
def mo_math_divrot_rot_vertex_ri_dsl(vec_e: Tensor[wpfloat, Edge, K],
                                     geofac_rot: Tensor[wpfloat, Vertex, V2EDim]):
    return neighbor_sum(vec_e(V2E) * geofac_rot, axis=V2EDim)


@function
def mo_intp_rbf_rbf_vec_interpol_vertex(p_e_in: Tensor[wpfloat, Edge, K],
                                        ptr_coeff_1: Tensor[wpfloat, Vertex, V2EDim],
                                        ptr_coeff_2: Tensor[wpfloat, Vertex, V2EDim]):
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(V2E), axis=V2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(V2E), axis=V2EDim)
    return p_u_out, p_v_out


@function
def mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(
        p_cell_in: Tensor[vpfloat, Cell, K], c_intp: Tensor[wpfloat, Vertex, V2CDim]):
    return astype(neighbor_sum(c_intp * astype(p_cell_in(V2C), wpfloat), axis=V2CDim),
                  vpfloat)


@function
def compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
        inv_dual_edge_length: Tensor[wpfloat, Edge], z_exner_ex_pr: Tensor[vpfloat, Cell, K]):
    z_exner_wp = astype(z_exner_ex_pr, wpfloat)
    return astype(inv_dual_edge_length * (z_exner_wp(E2C[1]) - z_exner_wp(E2C[0])), vpfloat)


@function
def compute_avg_vn_and_graddiv_vn_and_vt(
        e_flx_avg: Tensor[wpfloat, Edge, E2C2EODim], vn: Tensor[wpfloat, Edge, K],
        geofac_grdiv: Tensor[wpfloat, Edge, E2C2EODim],
        rbf_vec_coeff_e: Tensor[wpfloat, Edge, E2C2EDim]):
    z_vn_avg = neighbor_sum(e_flx_avg * vn(E2C2EO), axis=E2C2EODim)
    z_graddiv_vn = neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim)
    vt = neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim)
    return z_vn_avg, astype(z_graddiv_vn, vpfloat), astype(vt, vpfloat)


@function
def interpolate_vn_to_ie_and_compute_ekin_on_edges(
        wgtfac_e: Tensor[vpfloat, Edge, K], vn: Tensor[wpfloat, Edge, K],
        vt: Tensor[vpfloat, Edge, K]):
    wgtfac_e_wp = astype(wgtfac_e, wpfloat)
    vn_ie = wgtfac_e_wp * vn + (wpfloat("1.0") - wgtfac_e_wp) * vn(Koff[-1])
    z_kin_hor_e = wpfloat("0.5") * (vn * vn + astype(vt * vt, wpfloat))
    return vn_ie, astype(z_kin_hor_e, vpfloat)


@program
def vertex_and_edge_stencils(
        vec_e: Tensor[wpfloat, Edge, K], geofac_rot: Tensor[wpfloat, Vertex, V2EDim],
        rot_vec: Tensor[wpfloat, Vertex, K], c1: Tensor[wpfloat, Vertex, V2EDim],
        c2: Tensor[wpfloat, Vertex, V2EDim], p_u_out: Tensor[wpfloat, Vertex, K],
        p_v_out: Tensor[wpfloat, Vertex, K], p_cell_in: Tensor[vpfloat, Cell, K],
        c_intp: Tensor[wpfloat, Vertex, V2CDim], p_vert_out: Tensor[vpfloat, Vertex, K],
        inv_dual_edge_length: Tensor[wpfloat, Edge], z_gradh_exner: Tensor[vpfloat, Edge, K],
        e_flx_avg: Tensor[wpfloat, Edge, E2C2EODim],
        geofac_grdiv: Tensor[wpfloat, Edge, E2C2EODim],
        rbf_vec_coeff_e: Tensor[wpfloat, Edge, E2C2EDim], z_vn_avg: Tensor[wpfloat, Edge, K],
        z_graddiv_vn: Tensor[vpfloat, Edge, K], vt: Tensor[vpfloat, Edge, K],
        wgtfac_e: Tensor[vpfloat, Edge, K], vn_ie: Tensor[wpfloat, Edge, K],
        z_kin_hor_e: Tensor[vpfloat, Edge, K], vertex_start: int32, vertex_end: int32,
        horizontal_start: int32, horizontal_end: int32,
        vertical_start: int32, vertical_end: int32):
    on_vertices = {Vertex: (vertex_start, vertex_end), K: (vertical_start, vertical_end)}
    on_edges = {Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)}
    mo_math_divrot_rot_vertex_ri_dsl(vec_e, geofac_rot, out=rot_vec, domain=on_vertices)
    mo_intp_rbf_rbf_vec_interpol_vertex(vec_e, c1, c2, out=(p_u_out, p_v_out),
                                        domain=on_vertices)
    mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(p_cell_in, c_intp, out=p_vert_out,
                                                           domain=on_vertices)
    compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
        inv_dual_edge_length, p_cell_in, out=z_gradh_exner, domain=on_edges)
    compute_avg_vn_and_graddiv_vn_and_vt(e_flx_avg, vec_e, geofac_grdiv, rbf_vec_coeff_e,
                                         out=(z_vn_avg, z_graddiv_vn, vt), domain=on_edges)
    # vn(Koff[-1]) needs the level above: the domain starts one level lower
    interpolate_vn_to_ie_and_compute_ekin_on_edges(
        wgtfac_e, vec_e, vt, out=(vn_ie, z_kin_hor_e),
        domain={Edge: (horizontal_start, horizontal_end),
                K: (vertical_start + 1, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_vertex_and_edge_stencils(backend):
    t = TABLES
    vec_e, geofac_rot, c1, c2 = wp(NE, NK), wp(NV, 6), wp(NV, 6), wp(NV, 6)
    p_cell_in, c_intp, idel = vp(NC, NK), wp(NV, 6), wp(NE)
    e_flx_avg, geofac_grdiv, rbf = wp(NE, 5), wp(NE, 5), wp(NE, 4)
    wgtfac_e = vp(NE, NK)

    rot = nbsum(geofac_rot, vec_e, t["V2E"])
    pu, pv = nbsum(c1, vec_e, t["V2E"]), nbsum(c2, vec_e, t["V2E"])
    pvert = nbsum(c_intp, p_cell_in.astype(np.float64), t["V2C"]).astype(np.float32)
    pc = p_cell_in.astype(np.float64)
    grad = (idel[:, None] * (pc[t["E2C"][:, 1]] - pc[t["E2C"][:, 0]])).astype(np.float32)
    avg = nbsum(e_flx_avg, vec_e, t["E2C2EO"])
    graddiv = nbsum(geofac_grdiv, vec_e, t["E2C2EO"]).astype(np.float32)
    vt_full = nbsum(rbf, vec_e, t["E2C2E"]).astype(np.float32)
    above = np.concatenate([np.full((NE, 1), np.nan), vec_e[:, :-1]], axis=1)
    w64 = wgtfac_e.astype(np.float64)
    ie = w64 * vec_e + (1.0 - w64) * above
    for bounds in BOUNDS:
        vb, eb = clip(bounds, NV), clip(bounds, NE)
        hs, he, vs, ve = eb
        lower = (hs, he, min(vs + 1, NK), max(ve, min(vs + 1, NK)))
        outs = dict(rot_vec=np.full((NV, NK), 7.0), p_u_out=np.full((NV, NK), 7.0),
                    p_v_out=np.full((NV, NK), 7.0),
                    p_vert_out=np.full((NV, NK), 7.0, np.float32),
                    z_gradh_exner=np.full((NE, NK), 7.0, np.float32),
                    z_vn_avg=np.full((NE, NK), 7.0),
                    z_graddiv_vn=np.full((NE, NK), 7.0, np.float32),
                    vt=np.full((NE, NK), 7.0, np.float32), vn_ie=np.full((NE, NK), 7.0),
                    z_kin_hor_e=np.full((NE, NK), 7.0, np.float32))
        vertex_and_edge_stencils(
            vec_e, geofac_rot, outs["rot_vec"], c1, c2, outs["p_u_out"], outs["p_v_out"],
            p_cell_in, c_intp, outs["p_vert_out"], idel, outs["z_gradh_exner"], e_flx_avg,
            geofac_grdiv, rbf, outs["z_vn_avg"], outs["z_graddiv_vn"], outs["vt"], wgtfac_e,
            outs["vn_ie"], outs["z_kin_hor_e"], vb[0], vb[1], hs, he, vs, ve,
            offset_provider=TABLES, backend=backend)
        vt_now = written(vt_full, eb, np.float32(7.0)).astype(np.float64)
        kin = (0.5 * (vec_e * vec_e + (vt_now * vt_now).astype(np.float32)
                      .astype(np.float64))).astype(np.float32)
        expected = dict(rot_vec=written(rot, vb, 7.0), p_u_out=written(pu, vb, 7.0),
                        p_v_out=written(pv, vb, 7.0),
                        p_vert_out=written(pvert, vb, np.float32(7.0)),
                        z_gradh_exner=written(grad, eb, np.float32(7.0)),
                        z_vn_avg=written(avg, eb, 7.0),
                        z_graddiv_vn=written(graddiv, eb, np.float32(7.0)),
                        vt=written(vt_full, eb, np.float32(7.0)),
                        vn_ie=written(ie, lower, 7.0),
                        z_kin_hor_e=written(kin, lower, np.float32(7.0)))
        for name, want in expected.items():
            np.testing.assert_allclose(outs[name], want, rtol=3e-6, err_msg=name)


# ---------------------------------------------------------------- cell stencils


@function
def compute_airmass(rho_in: Tensor[wpfloat, Cell, K], ddqz_z_full_in: Tensor[wpfloat, Cell, K],
                    deepatmo_t1mc_in: Tensor[wpfloat, K]):
    return rho_in * ddqz_z_full_in * deepatmo_t1mc_in


@function
def calculate_nabla2_for_w(w: Tensor[wpfloat, Cell, K],
                           geofac_n2s: Tensor[wpfloat, Cell, C2E2CODim]):
    return astype(neighbor_sum(w(C2E2CO) * geofac_n2s, axis=C2E2CODim), vpfloat)


@function
def temporary_field_for_grid_point_cold_pools_enhancement(
        theta_v: Tensor[wpfloat, Cell, K], theta_ref_mc: Tensor[vpfloat, Cell, K],
        thresh_tdiff: wpfloat, smallest_vpfloat: vpfloat):
    theta_ref_wp = astype(theta_ref_mc, wpfloat)
    tdiff = theta_v - (theta_v(C2E2C[0]) + theta_v(C2E2C[1]) + theta_v(C2E2C[2])) / \
        wpfloat("3.0")
    trefdiff = theta_ref_wp - (theta_ref_wp(C2E2C[0]) + theta_ref_wp(C2E2C[1])
                               + theta_ref_wp(C2E2C[2])) / wpfloat("3.0")
    enh_diffu_3d = where(
        ((tdiff - trefdiff) < thresh_tdiff) & (trefdiff < wpfloat("0.0"))
        | ((tdiff - trefdiff) < wpfloat("1.5") * thresh_tdiff),
        astype((thresh_tdiff - tdiff + trefdiff) * wpfloat("5e-4"), vpfloat),
        smallest_vpfloat)
    return enh_diffu_3d


@function
def compute_positive_definite_horizontal_multiplicative_flux_factor(
        geofac_div: Field[[CE], wpfloat], p_cc: Tensor[wpfloat, Cell, K],
        p_rhodz_now: Tensor[wpfloat, Cell, K], p_mflx_tracer_h: Tensor[wpfloat, Edge, K],
        p_dtime: wpfloat, dbl_eps: wpfloat):
    zero = broadcast(wpfloat("0.0"), (Cell, K))
    pm_0 = maximum(zero, p_mflx_tracer_h(C2E[0]) * geofac_div(C2CE[0]) * p_dtime)
    pm_1 = maximum(zero, p_mflx_tracer_h(C2E[1]) * geofac_div(C2CE[1]) * p_dtime)
    pm_2 = maximum(zero, p_mflx_tracer_h(C2E[2]) * geofac_div(C2CE[2]) * p_dtime)
    p_m = pm_0 + pm_1 + pm_2
    r_m = minimum(broadcast(wpfloat("1.0"), (Cell, K)), (p_cc * p_rhodz_now) / (p_m + dbl_eps))
    fluxdiv = neighbor_sum(p_mflx_tracer_h(C2E) * geofac_div(C2CE), axis=C2EDim)
    return r_m, fluxdiv


@function
def mo_math_gradients_grad_green_gauss_cell_dsl(
        p_ccpr1: Tensor[wpfloat, Cell, K], p_ccpr2: Tensor[wpfloat, Cell, K],
        geofac_grg_x: Tensor[wpfloat, Cell, C2E2CODim],
        geofac_grg_y: Tensor[wpfloat, Cell, C2E2CODim]):
    p_grad_1_u = neighbor_sum(geofac_grg_x * p_ccpr1(C2E2CO), axis=C2E2CODim)
    p_grad_1_v = neighbor_sum(geofac_grg_y * p_ccpr1(C2E2CO), axis=C2E2CODim)
    p_grad_2_u = neighbor_sum(geofac_grg_x * p_ccpr2(C2E2CO), axis=C2E2CODim)
    p_grad_2_v = neighbor_sum(geofac_grg_y * p_ccpr2(C2E2CO), axis=C2E2CODim)
    return p_grad_1_u, p_grad_1_v, p_grad_2_u, p_grad_2_v


@function
def interpolate_to_half_levels(wgtfac_c: Tensor[vpfloat, Cell, K],
                               interpolant: Tensor[vpfloat, Cell, K]):
    # the newer icon4py form: the top level keeps the value, the others interpolate
    return concat_where(K > 0, wgtfac_c * interpolant
                        + (vpfloat("1.0") - wgtfac_c) * interpolant(Koff[-1]), interpolant)


@program
def cell_stencils(rho_in: Tensor[wpfloat, Cell, K], ddqz_z_full_in: Tensor[wpfloat, Cell, K],
                  deepatmo_t1mc_in: Tensor[wpfloat, K], airmass_out: Tensor[wpfloat, Cell, K],
                  geofac_n2s: Tensor[wpfloat, Cell, C2E2CODim],
                  z_nabla2_c: Tensor[vpfloat, Cell, K], theta_ref_mc: Tensor[vpfloat, Cell, K],
                  enh_diffu_3d: Tensor[vpfloat, Cell, K], geofac_div: Field[[CE], wpfloat],
                  p_mflx_tracer_h: Tensor[wpfloat, Edge, K], r_m: Tensor[wpfloat, Cell, K],
                  fluxdiv: Tensor[wpfloat, Cell, K],
                  geofac_grg_x: Tensor[wpfloat, Cell, C2E2CODim],
                  geofac_grg_y: Tensor[wpfloat, Cell, C2E2CODim],
                  g1u: Tensor[wpfloat, Cell, K], g1v: Tensor[wpfloat, Cell, K],
                  g2u: Tensor[wpfloat, Cell, K], g2v: Tensor[wpfloat, Cell, K],
                  wgtfac_c: Tensor[vpfloat, Cell, K], interpolant: Tensor[vpfloat, Cell, K],
                  half: Tensor[vpfloat, Cell, K], thresh_tdiff: wpfloat,
                  smallest_vpfloat: vpfloat, p_dtime: wpfloat, dbl_eps: wpfloat,
                  horizontal_start: int32, horizontal_end: int32,
                  vertical_start: int32, vertical_end: int32):
    dom = {Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)}
    compute_airmass(rho_in, ddqz_z_full_in, deepatmo_t1mc_in, out=airmass_out, domain=dom)
    calculate_nabla2_for_w(rho_in, geofac_n2s, out=z_nabla2_c, domain=dom)
    temporary_field_for_grid_point_cold_pools_enhancement(
        ddqz_z_full_in, theta_ref_mc, thresh_tdiff, smallest_vpfloat, out=enh_diffu_3d,
        domain=dom)
    compute_positive_definite_horizontal_multiplicative_flux_factor(
        geofac_div, rho_in, ddqz_z_full_in, p_mflx_tracer_h, p_dtime, dbl_eps,
        out=(r_m, fluxdiv), domain=dom)
    mo_math_gradients_grad_green_gauss_cell_dsl(rho_in, ddqz_z_full_in, geofac_grg_x,
                                                geofac_grg_y, out=(g1u, g1v, g2u, g2v),
                                                domain=dom)
    interpolate_to_half_levels(wgtfac_c, interpolant, out=half, domain=dom)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cell_stencils(backend):
    t = TABLES
    rho, ddqz, deep = wp(NC, NK), wp(NC, NK) + 0.5, wp(NK)
    n2s, theta_ref = wp(NC, 4), vp(NC, NK)
    geofac_div, mflx = wp(NC * 3) - 0.4, wp(NE, NK) - 0.3
    grg_x, grg_y = wp(NC, 4), wp(NC, 4)
    wgtfac_c, interp = vp(NC, NK), vp(NC, NK)
    thresh, smallest, dtime, eps = -0.05, np.float32(1e-6), 0.7, 1e-12

    airmass = rho * ddqz * deep
    nabla2 = nbsum(n2s, rho, t["C2E2CO"]).astype(np.float32)
    c2e2c, tr = t["C2E2C"], theta_ref.astype(np.float64)
    tdiff = ddqz - ddqz[c2e2c].sum(1) / 3.0
    trefdiff = tr - tr[c2e2c].sum(1) / 3.0
    d = tdiff - trefdiff
    enh = np.where(((d < thresh) & (trefdiff < 0)) | (d < 1.5 * thresh),
                   ((thresh - tdiff + trefdiff) * 5e-4).astype(np.float32), smallest)
    g = geofac_div.reshape(NC, 3)
    pm = sum(np.maximum(0.0, mflx[t["C2E"][:, k]] * g[:, k, None] * dtime) for k in range(3))
    rm = np.minimum(1.0, rho * ddqz / (pm + eps))
    fdiv = nbsum(g, mflx, t["C2E"])
    grads = [nbsum(w, f, t["C2E2CO"]) for f in (rho, ddqz) for w in (grg_x, grg_y)]
    half = np.concatenate([interp[:, :1], wgtfac_c[:, 1:] * interp[:, 1:]
                           + (np.float32(1.0) - wgtfac_c[:, 1:]) * interp[:, :-1]], axis=1)
    fulls = [airmass, nabla2, enh, rm, fdiv] + grads + [half]
    for bounds in BOUNDS:
        b = clip(bounds, NC)
        outs = [np.full((NC, NK), 5.0, f.dtype) for f in fulls]
        cell_stencils(rho, ddqz, deep, outs[0], n2s, outs[1], theta_ref, outs[2], geofac_div,
                      mflx, outs[3], outs[4], grg_x, grg_y, *outs[5:9], wgtfac_c, interp,
                      outs[9], thresh, smallest, dtime, eps, *b,
                      offset_provider=TABLES, backend=backend)
        for k, (got, full) in enumerate(zip(outs, fulls)):
            np.testing.assert_allclose(got, written(full, b, full.dtype.type(5.0)),
                                       rtol=3e-6, err_msg=f"output {k}")


# ---------------------------------------------------------------- GT4Py's annotations


@function
def theta_at_neighbour_levels(theta_v: Field[[Cell, K], wpfloat],
                              zd_vertoffset: Field[[Cell, C2E2CDim, K], int32],
                              zd_intcoef: Field[Dims[Cell, C2E2CDim, K], wpfloat]):
    # the vertical interpolation of truly_horizontal_diffusion_nabla_of_theta_over_steep_points
    total = wpfloat("0.0")
    for k in (0, 1, 2):
        level = as_offset(Koff, zd_vertoffset[C2E2CDim(k)])
        total = total + zd_intcoef[C2E2CDim(k)] * theta_v(C2E2C[k])(level)
    return total


@scan_operator(axis=K, forward=False, init=0.0)
def _w_back_substitution(w_state: wpfloat, z_q: wpfloat, w: wpfloat) -> wpfloat:
    return w + w_state * z_q


@function
def solve_tridiagonal_matrix_for_w_back_substitution(z_q: Field[[Cell, K], vpfloat],
                                                      w: Field[[Cell, K], wpfloat]):
    return _w_back_substitution(astype(z_q, wpfloat), w)


@function
def vn_predictor_or_corrector(vn: Field[[Cell, K], wpfloat], wgt: wpfloat, istep: int32,
                              lclip: bool):
    # GT4Py's if statement on scalars; one branch returns early
    if istep == 1:
        result = wgt * vn
    else:
        return vn
    if lclip:
        result = minimum(result, wpfloat("0.5"))
    return result + wpfloat("1.0")


@program
def with_literal_domain(theta_v: Field[[Cell, K], wpfloat],
                        zd_vertoffset: Field[[Cell, C2E2CDim, K], int32],
                        zd_intcoef: Field[Dims[Cell, C2E2CDim, K], wpfloat],
                        out: Field[[Cell, K], wpfloat], z_q: Field[[Cell, K], vpfloat],
                        w: Field[[Cell, K], wpfloat], vn: Field[[Cell, K], wpfloat],
                        vn_new: Field[[Cell, K], wpfloat], istep: int32, lclip: bool):
    theta_at_neighbour_levels(theta_v, zd_vertoffset, zd_intcoef, out=out,
                              domain={Cell: (1, 4), K: (0, 3)})
    # the sweep starts at level 2, the domain's last, with w_state = 0
    solve_tridiagonal_matrix_for_w_back_substitution(z_q, w, out=w,
                                                     domain={Cell: (1, 4), K: (0, 3)})
    vn_predictor_or_corrector(vn, 0.75, istep, lclip, out=vn_new)


@pytest.mark.parametrize("backend", BACKENDS)
def test_field_annotations_as_offset_and_literal_domain(backend):
    theta, coef = wp(NC, NK), wp(NC, 3, NK)
    off = RNG.integers(0, 2, (NC, 3, NK)).astype(np.int32)    # this level or the next
    c2e2c = TABLES["C2E2C"]
    levels = np.arange(NK)[None, None, :] + off
    full = (coef * theta[c2e2c[:, :, None], np.minimum(levels, NK - 1)]).sum(1)
    z_q, w0 = vp(NC, NK), wp(NC, NK)
    swept = w0.copy()
    for k in (1, 0):
        swept[:, k] += swept[:, k + 1] * z_q[:, k].astype(np.float64)
    vn = wp(NC, NK)
    for istep, lclip in [(1, False), (1, True), (2, True)]:
        out, w, vn_new = np.full((NC, NK), 9.0), w0.copy(), np.zeros((NC, NK))
        with_literal_domain(theta, off, coef, out, z_q, w, vn, vn_new, istep, lclip,
                            offset_provider=TABLES, backend=backend)
        np.testing.assert_allclose(out, written(full, (1, 4, 0, 3), 9.0), rtol=1e-12)
        expected_w = w0.copy()
        expected_w[1:4, :3] = swept[1:4, :3]
        np.testing.assert_allclose(w, expected_w, rtol=1e-12)
        corrected = np.minimum(0.75 * vn, 0.5) if lclip else 0.75 * vn
        np.testing.assert_allclose(vn_new, corrected + 1.0 if istep == 1 else vn, rtol=1e-12)
    with pytest.raises(ArgumentError, match=r"it needs 4 <= N_Cell"):
        with_literal_domain(theta[:3], off[:3], coef[:3], out[:3], z_q[:3], w[:3], vn[:3],
                            vn_new[:3], 1, False, offset_provider={"C2E2C": c2e2c[:3] % 3},
                            backend=backend)


# ---------------------------------------------------------------- strided offsets, randomised

ECV = dims("ECV")
E2C2VDim = neighbor_dim(Vertex, 4)
E2C2V = FieldOffset("E2C2V", source=Vertex, target=(Edge, E2C2VDim))
E2ECV = FieldOffset("E2ECV", source=ECV, target=(Edge, E2C2VDim))    # strided: e * 4 + k


@program
def strided_mix(u: Field[[Vertex, K], wpfloat], coeff: Field[[ECV, K], wpfloat],
                geo: Field[[ECV], wpfloat], out: Field[[Edge, K], wpfloat]):
    out[...] = neighbor_sum(u(E2C2V) * coeff(E2ECV), axis=E2C2VDim) \
        + geo(E2ECV[3]) * u(E2C2V[0]) - geo(E2ECV[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_offsets_on_random_meshes(backend):
    """Random sizes (a flattened field may be longer than 4 per edge), random
    tables with absent neighbours, one compiled program."""
    rng = np.random.default_rng(7)
    for _ in range(6):
        ne, nv, nk, extra = (int(rng.integers(1, 13)), int(rng.integers(1, 7)),
                             int(rng.integers(1, 5)), int(rng.integers(0, 4)))
        e2c2v = rng.integers(0, nv, (ne, 4))
        e2c2v[1:, 1:][rng.random((ne - 1, 3)) < 0.3] = -1     # slot 0 always present
        u, coeff, geo = rng.random((nv, nk)), rng.random((4 * ne + extra, nk)), \
            rng.random(4 * ne + extra)
        c, g = coeff[:4 * ne].reshape(ne, 4, nk), geo[:4 * ne].reshape(ne, 4)
        gathered = u[np.where(e2c2v >= 0, e2c2v, 0)]                  # (ne, 4, nk)
        expected = np.where((e2c2v >= 0)[:, :, None], gathered * c, 0.0).sum(1) \
            + g[:, 3:] * u[e2c2v[:, 0]] - g[:, 1:2]
        out = np.zeros((ne, nk))
        strided_mix(u, coeff, geo, out, offset_provider={"E2C2V": e2c2v}, backend=backend)
        np.testing.assert_allclose(out, expected, rtol=1e-12)


# ---------------------------------------------------------------- mistakes


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_flattened_field_too_short_is_refused(backend):
    args = [wp(NC, NK)] * 2 + [wp(NK), np.zeros((NC, NK)), wp(NC, 4),
                               np.zeros((NC, NK), np.float32), vp(NC, NK),
                               np.zeros((NC, NK), np.float32), wp(NC * 3 - 1), wp(NE, NK),
                               np.zeros((NC, NK)), np.zeros((NC, NK)), wp(NC, 4), wp(NC, 4)] + \
        [np.zeros((NC, NK)) for _ in range(4)] + [vp(NC, NK), vp(NC, NK),
                                                   np.zeros((NC, NK), np.float32)]
    with pytest.raises(ArgumentError, match=r"C2CE.*3\*N_Cell <= N_CE"):
        cell_stencils(*args, -0.05, np.float32(1e-6), 0.7, 1e-12, 0, NC, 0, NK,
                      offset_provider=TABLES, backend=backend)


def test_domain_dict_mistakes_name_the_problem():
    @program
    def not_a_dict(a: Tensor[wpfloat, Cell, K], out: Tensor[wpfloat, Cell, K]):
        dom = (0, 2)
        compute_airmass(a, a, a, out=out, domain=dom)

    @program
    def not_a_pair(a: Tensor[wpfloat, Cell, K], out: Tensor[wpfloat, Cell, K]):
        dom = {Cell: 3}
        calculate_nabla2_for_w(a, a, out=out, domain=dom)

    @program
    def dict_as_value(a: Tensor[wpfloat, Cell, K], out: Tensor[wpfloat, Cell, K]):
        out[...] = a + {K: 1}

    @program
    def tensor_key(a: Tensor[wpfloat, Cell, K], out: Tensor[wpfloat, Cell, K]):
        dom = {a: (0, 1)}
        compute_airmass(a, a, a, out=out, domain=dom)

    x = np.zeros((3, 2))
    cases = [(not_a_dict, r"domain= takes a dict .*got tuple"),
             (not_a_pair, r"takes a pair of coordinates, got int 3"),
             (dict_as_value, r"is not a tensor value; a dict is only used as the domain="),
             (tensor_key, r"a dict key must be known while translating")]
    for prog, message in cases:
        with pytest.raises(FrontendError, match=message) as info:
            prog(x, x.copy(), backend="interpreter")
        assert ":" in str(info.value.loc)


def test_a_subset_target_asserts_the_value_covers_it():
    """Writing I[0:3] from a value over I[0:M] needs 3 <= M: a call-time check
    for a subset target (the user chose the bounds), a type error for a whole
    target, whose order N <= M nothing asserts."""
    import tensorir_dace as tir

    whole = tir.parse("p(out: tensor<float, I[0:N]>, b: tensor<float, I[0:M]>) { out ← b; }")
    with pytest.raises(tir.TypeCheckError, match="cannot decide whether N <= M"):
        tir.check(whole)
    part = tir.parse("p(out: tensor<float, I[0:N]>, b: tensor<float, I[0:M]>) "
                     "{ subset(out, I[0:3]) ← b; }")
    run = tir.compile(part)
    out = np.zeros(5)
    run(out=out, b=np.arange(4.0))
    assert out.tolist() == [0.0, 1.0, 2.0, 0.0, 0.0]
    with pytest.raises(ArgumentError, match="it needs 3 <= M"):
        run(out=out, b=np.arange(2.0))


def test_an_if_statement_on_a_tensor_is_refused():
    @function
    def branchy(a: Tensor[wpfloat, Cell, K]):
        if a > 0.5:
            return a
        return -a

    with pytest.raises(FrontendError, match="needs a scalar bool condition.*use where"):
        branchy(np.zeros((3, 2)), backend="interpreter")


def test_a_strided_offset_needs_its_rows_dimension():
    @function
    def only_flat(g: Tensor[wpfloat, CE]):
        return g(C2CE[0])

    with pytest.raises(TensorIRError, match="no parameter of .* has dimension Cell"):
        only_flat(np.zeros(6), backend="interpreter")
