"""Real ICON stencils (icon4py's field operators) in the Python front end.

Each stencil is written in this front end's spelling as close to the GT4Py
original as the API allows, with ``domain=`` bounds passed as ``int32`` program
arguments, float32 (``vpfloat``) and float64 (``wpfloat``) mixes, neighbour
tables with -1 entries, half-level fields (``K.halo(0, 1)``) and GT4Py's
``FieldOffset`` declarations (``Koff[-1]``).  Both backends
are compared with hand-written NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace.frontend import (
    FieldOffset,
    Tensor,
    astype,
    broadcast,
    connectivity,
    dims,
    float32,
    float64,
    function,
    int32,
    max_over,
    maximum,
    neighbor_dim,
    neighbor_sum,
    program,
    where,
)

Cell, Edge, Vertex, K = dims("Cell Edge Vertex K")
E2CDim, C2EDim, E2C2VDim = neighbor_dim(Cell, 2), neighbor_dim(Edge, 3), neighbor_dim(Vertex, 4)
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))   # GT4Py's spelling
Koff = FieldOffset("Koff", source=K, target=(K,))
C2E = connectivity("C2E", Cell, C2EDim)
E2C2V = connectivity("E2C2V", Edge, E2C2VDim)
wpfloat, vpfloat = float64, float32
BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NK = 9, 14, 8, 6
RNG = np.random.default_rng(2026)


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


TABLES = {"E2C": table(NE, 2, NC), "C2E": table(NC, 3, NE, absent=0.2),
          "E2C2V": table(NE, 4, NV)}
DOMAINS = [(0, 99, 0, 99), (2, 7, 1, 5), (5, 5, 0, 99), (1, 4, 3, 3)]


def vp(*shape):
    return RNG.random(shape).astype(np.float32)


def wp(*shape):
    return RNG.random(shape)


# ---------------------------------------------------------------- stencils


@function
def calculate_nabla4(u_vert: Tensor[vpfloat, Vertex, K], v_vert: Tensor[vpfloat, Vertex, K],
                     primal_normal_vert_v1: Tensor[wpfloat, Edge, E2C2VDim],
                     primal_normal_vert_v2: Tensor[wpfloat, Edge, E2C2VDim],
                     z_nabla2_e: Tensor[wpfloat, Edge, K],
                     inv_vert_vert_length: Tensor[wpfloat, Edge],
                     inv_primal_edge_length: Tensor[wpfloat, Edge]):
    u_vert_wp, v_vert_wp = astype((u_vert, v_vert), wpfloat)
    nabv_tang_vp = astype(
        u_vert_wp(E2C2V[0]) * primal_normal_vert_v1[E2C2VDim(0)]
        + v_vert_wp(E2C2V[0]) * primal_normal_vert_v2[E2C2VDim(0)]
        + u_vert_wp(E2C2V[1]) * primal_normal_vert_v1[E2C2VDim(1)]
        + v_vert_wp(E2C2V[1]) * primal_normal_vert_v2[E2C2VDim(1)], vpfloat)
    nabv_norm_vp = astype(
        u_vert_wp(E2C2V[2]) * primal_normal_vert_v1[E2C2VDim(2)]
        + v_vert_wp(E2C2V[2]) * primal_normal_vert_v2[E2C2VDim(2)]
        + u_vert_wp(E2C2V[3]) * primal_normal_vert_v1[E2C2VDim(3)]
        + v_vert_wp(E2C2V[3]) * primal_normal_vert_v2[E2C2VDim(3)], vpfloat)
    nabv_tang_wp, nabv_norm_wp = astype((nabv_tang_vp, nabv_norm_vp), wpfloat)
    z_nabla4_e2_wp = wpfloat("4.0") * (
        (nabv_norm_wp - wpfloat("2.0") * z_nabla2_e) * (inv_vert_vert_length * inv_vert_vert_length)
        + (nabv_tang_wp - wpfloat("2.0") * z_nabla2_e)
        * (inv_primal_edge_length * inv_primal_edge_length))
    return astype(z_nabla4_e2_wp, vpfloat)


@function
def enhance_diffusion_coefficient_for_grid_point_cold_pools(
        kh_smag_e: Tensor[vpfloat, Edge, K], enh_diffu_3d: Tensor[vpfloat, Cell, K]):
    return maximum(kh_smag_e, max_over(enh_diffu_3d(E2C), axis=E2CDim))


@function
def temporary_fields_for_turbulence_diagnostics(
        kh_smag_ec: Tensor[vpfloat, Edge, K], vn: Tensor[wpfloat, Edge, K],
        e_bln_c_s: Tensor[wpfloat, Cell, C2EDim], geofac_div: Tensor[wpfloat, Cell, C2EDim],
        diff_multfac_smag: Tensor[vpfloat, K]):
    kh_smag_ec_wp, diff_multfac_smag_wp = astype((kh_smag_ec, diff_multfac_smag), wpfloat)
    kh_c_wp = neighbor_sum(kh_smag_ec_wp(C2E) * e_bln_c_s, axis=C2EDim) / diff_multfac_smag_wp
    div_wp = neighbor_sum(vn(C2E) * geofac_div, axis=C2EDim)
    return astype((kh_c_wp, div_wp), vpfloat)


@function
def compute_advective_vertical_wind_tendency(
        z_w_con_c: Tensor[vpfloat, Cell, K], w: Tensor[wpfloat, Cell, K.halo(0, 1)],
        coeff1_dwdz: Tensor[vpfloat, Cell, K], coeff2_dwdz: Tensor[vpfloat, Cell, K]):
    z_w_con_c_wp = astype(z_w_con_c, wpfloat)
    coeff1_dwdz_wp, coeff2_dwdz_wp = astype((coeff1_dwdz, coeff2_dwdz), wpfloat)
    ddt_w_adv_wp = -z_w_con_c_wp * (
        w(Koff[-1]) * coeff1_dwdz_wp - w(Koff[1]) * coeff2_dwdz_wp
        + w * astype(coeff2_dwdz - coeff1_dwdz, wpfloat))
    return astype(ddt_w_adv_wp, vpfloat)


@function
def compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
        ddqz_z_half: Tensor[vpfloat, Cell, K], z_w_con_c: Tensor[vpfloat, Cell, K],
        cfl_w_limit: vpfloat, dtime: wpfloat):
    z_w_con_c_wp, ddqz_z_half_wp = astype((z_w_con_c, ddqz_z_half), wpfloat)
    cfl_clipping = where(abs(z_w_con_c) > cfl_w_limit * ddqz_z_half,
                         broadcast(True, (Cell, K)), False)
    vcfl = where(cfl_clipping, z_w_con_c_wp * dtime / ddqz_z_half_wp, wpfloat("0.0"))
    vcfl_vp = astype(vcfl, vpfloat)
    z_w_con_c_wp = where(cfl_clipping & (vcfl_vp < -vpfloat("0.85")),
                         astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime, z_w_con_c_wp)
    z_w_con_c_wp = where(cfl_clipping & (vcfl_vp > vpfloat("0.85")),
                         astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime, z_w_con_c_wp)
    return cfl_clipping, vcfl_vp, astype(z_w_con_c_wp, vpfloat)


@program
def edge_stencils(u_vert: Tensor[vpfloat, Vertex, K], v_vert: Tensor[vpfloat, Vertex, K],
                  pn1: Tensor[wpfloat, Edge, E2C2VDim], pn2: Tensor[wpfloat, Edge, E2C2VDim],
                  z_nabla2_e: Tensor[wpfloat, Edge, K], ivvl: Tensor[wpfloat, Edge],
                  ipel: Tensor[wpfloat, Edge], z_nabla4_e2: Tensor[vpfloat, Edge, K],
                  kh_smag_e: Tensor[vpfloat, Edge, K], enh_diffu_3d: Tensor[vpfloat, Cell, K],
                  horizontal_start: int32, horizontal_end: int32,
                  vertical_start: int32, vertical_end: int32):
    calculate_nabla4(u_vert, v_vert, pn1, pn2, z_nabla2_e, ivvl, ipel, out=z_nabla4_e2,
                     domain={Edge: (horizontal_start, horizontal_end),
                             K: (vertical_start, vertical_end)})
    enhance_diffusion_coefficient_for_grid_point_cold_pools(
        kh_smag_e, enh_diffu_3d, out=kh_smag_e,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})


@program
def cell_stencils(kh_smag_ec: Tensor[vpfloat, Edge, K], vn: Tensor[wpfloat, Edge, K],
                  e_bln_c_s: Tensor[wpfloat, Cell, C2EDim],
                  geofac_div: Tensor[wpfloat, Cell, C2EDim],
                  diff_multfac_smag: Tensor[vpfloat, K], kh_c: Tensor[vpfloat, Cell, K],
                  div: Tensor[vpfloat, Cell, K], z_w_con_c: Tensor[vpfloat, Cell, K],
                  w: Tensor[wpfloat, Cell, K.halo(0, 1)], coeff1_dwdz: Tensor[vpfloat, Cell, K],
                  coeff2_dwdz: Tensor[vpfloat, Cell, K], ddt_w_adv: Tensor[vpfloat, Cell, K],
                  ddqz_z_half: Tensor[vpfloat, Cell, K], cfl_clipping: Tensor[bool, Cell, K],
                  vcfl: Tensor[vpfloat, Cell, K], z_w_con_c_clip: Tensor[vpfloat, Cell, K],
                  cfl_w_limit: vpfloat, dtime: wpfloat,
                  horizontal_start: int32, horizontal_end: int32,
                  vertical_start: int32, vertical_end: int32):
    temporary_fields_for_turbulence_diagnostics(kh_smag_ec, vn, e_bln_c_s, geofac_div,
                                                diff_multfac_smag, out=(kh_c, div),
                                                domain={Cell: (horizontal_start, horizontal_end),
                                                        K: (vertical_start, vertical_end)})
    compute_advective_vertical_wind_tendency(
        z_w_con_c, w, coeff1_dwdz, coeff2_dwdz, out=ddt_w_adv,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
        ddqz_z_half, z_w_con_c, cfl_w_limit, dtime, out=(cfl_clipping, vcfl, z_w_con_c_clip),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})


# ---------------------------------------------------------------- references


def clip(bounds, n_h):
    hs, he, vs, ve = bounds
    return min(hs, n_h), min(he, n_h), min(vs, NK), min(ve, NK)


def gather(field, tab):
    """field[tab] with absent (-1) entries as NaN, neighbours last."""
    g = field[np.where(tab >= 0, tab, 0)]                    # (rows, nb, K...)
    mask = (tab < 0).reshape(tab.shape + (1,) * (field.ndim - 1))
    return np.moveaxis(np.where(mask, np.nan, g), 1, -1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_edge_stencils(backend):
    e2c2v, e2c = TABLES["E2C2V"], TABLES["E2C"]
    u, v = vp(NV, NK), vp(NV, NK)
    pn1, pn2, z2 = wp(NE, 4), wp(NE, 4), wp(NE, NK)
    ivvl, ipel = wp(NE), wp(NE)
    kh0, enh = vp(NE, NK), vp(NC, NK)
    uw, vw = u.astype(np.float64), v.astype(np.float64)

    def pair(i, j):
        return sum(uw[e2c2v[:, s]] * pn1[:, s, None] + vw[e2c2v[:, s]] * pn2[:, s, None]
                   for s in (i, j)).astype(np.float32).astype(np.float64)

    nabla4 = (4.0 * ((pair(2, 3) - 2.0 * z2) * (ivvl * ivvl)[:, None]
                     + (pair(0, 1) - 2.0 * z2) * (ipel * ipel)[:, None])).astype(np.float32)
    cold = np.maximum(kh0, enh[e2c].max(axis=1))
    for bounds in DOMAINS:
        hs, he, vs, ve = clip(bounds, NE)
        z4, kh = np.full((NE, NK), -1.0, np.float32), kh0.copy()
        edge_stencils(u, v, pn1, pn2, z2, ivvl, ipel, z4, kh, enh, hs, he, vs, ve,
                      offset_provider=TABLES, backend=backend)
        e4, ekh = np.full((NE, NK), -1.0, np.float32), kh0.copy()
        e4[hs:he, vs:ve] = nabla4[hs:he, vs:ve]
        ekh[hs:he, vs:ve] = cold[hs:he, vs:ve]
        np.testing.assert_allclose(z4, e4, rtol=2e-6)
        np.testing.assert_array_equal(kh, ekh)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cell_stencils(backend):
    c2e = TABLES["C2E"]
    kh_smag_ec, vn = vp(NE, NK), wp(NE, NK)
    e_bln, geofac = wp(NC, 3), wp(NC, 3)
    dmf = vp(NK) + np.float32(0.5)
    z_w_con_c, w = vp(NC, NK) - np.float32(0.5), wp(NC, NK + 1)
    c1, c2 = vp(NC, NK), vp(NC, NK)
    ddqz = vp(NC, NK) + np.float32(0.1)
    cfl_w_limit, dtime = np.float32(0.6), 2.0

    present = (c2e >= 0)[:, :, None]
    nb = np.where(c2e >= 0, c2e, 0)
    kh_c = (np.where(present, kh_smag_ec[nb].astype(np.float64) * e_bln[:, :, None], 0.0)
            .sum(axis=1) / dmf.astype(np.float64)).astype(np.float32)
    div = np.where(present, vn[nb] * geofac[:, :, None], 0.0).sum(axis=1).astype(np.float32)
    ww = w[:, :NK]
    wm1 = np.concatenate([np.full((NC, 1), np.nan), w[:, :NK - 1]], axis=1)
    adv = (-z_w_con_c.astype(np.float64) * (
        wm1 * c1.astype(np.float64) - w[:, 1:] * c2.astype(np.float64)
        + ww * (c2 - c1).astype(np.float64))).astype(np.float32)
    clipping = np.abs(z_w_con_c) > cfl_w_limit * ddqz
    zw = z_w_con_c.astype(np.float64)
    vc = np.where(clipping, zw * dtime / ddqz.astype(np.float64), 0.0).astype(np.float32)
    lim = np.float32(0.85)
    zw = np.where(clipping & (vc < -lim), (-lim * ddqz).astype(np.float64) / dtime, zw)
    zw = np.where(clipping & (vc > lim), (lim * ddqz).astype(np.float64) / dtime, zw)
    zw = zw.astype(np.float32)
    for bounds in DOMAINS:
        hs, he, vs, ve = clip(bounds, NC)
        vs = max(vs, 1)                                  # w(K - 1) needs level vs - 1
        outs = [np.full((NC, NK), 3.0, np.float32) for _ in range(3)] + \
            [np.zeros((NC, NK), bool)] + [np.full((NC, NK), 3.0, np.float32) for _ in range(2)]
        cell_stencils(kh_smag_ec, vn, e_bln, geofac, dmf, outs[0], outs[1], z_w_con_c, w, c1,
                      c2, outs[2], ddqz, outs[3], outs[4], outs[5], cfl_w_limit, dtime,
                      hs, he, vs, ve, offset_provider=TABLES, backend=backend)
        for got, full in zip(outs, (kh_c, div, adv, clipping, vc, zw)):
            exp = np.zeros((NC, NK), bool) if full.dtype == bool \
                else np.full((NC, NK), 3.0, np.float32)
            exp[hs:he, vs:ve] = full[hs:he, vs:ve]
            np.testing.assert_allclose(got, exp, rtol=2e-6)


ADVECTIVE_TIR = """
compute_advective_vertical_wind_tendency(
    z_w_con_c: tensor<float32, Cell[0:N], K[0:L]>, w: tensor<float, Cell[0:N], K[0:L+1]>,
    coeff1_dwdz: tensor<float32, Cell[0:N], K[0:L]>,
    coeff2_dwdz: tensor<float32, Cell[0:N], K[0:L]>,
    ddt_w_adv: tensor<float32, Cell[0:N], K[0:L]>,
    hs: tensor<int32>, he: tensor<int32>, vs: tensor<int32>, ve: tensor<int32>) {
  subset(ddt_w_adv, Cell[hs:he], K[vs:ve]) ← cast(-cast(z_w_con_c, float) × (
      ⟪K, -1⟫(w) × cast(coeff1_dwdz, float) - ⟪K, 1⟫(w) × cast(coeff2_dwdz, float)
      + w × cast(coeff2_dwdz - coeff1_dwdz, float)), float32)
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_advective_vertical_wind_tendency_in_text_form(backend):
    import tensorir_dace as tir

    prog = tir.parse(ADVECTIVE_TIR)
    z, w, c1, c2 = vp(NC, NK) - np.float32(0.5), wp(NC, NK + 1), vp(NC, NK), vp(NC, NK)
    full = (-z.astype(np.float64) * (
        np.concatenate([np.zeros((NC, 1)), w[:, :NK - 1]], axis=1) * c1.astype(np.float64)
        - w[:, 1:] * c2.astype(np.float64) + w[:, :NK] * (c2 - c1).astype(np.float64))
    ).astype(np.float32)
    run = tir.compile(prog) if backend == "compiled" else \
        (lambda **kw: tir.interpret(prog, **kw))
    for hs, he, vs, ve in [(0, NC, 1, NK), (2, 7, 3, 5), (4, 4, 1, NK)]:
        out = np.full((NC, NK), 3.0, np.float32)
        run(z_w_con_c=z, w=w, coeff1_dwdz=c1, coeff2_dwdz=c2, ddt_w_adv=out,
            hs=np.int32(hs), he=np.int32(he), vs=np.int32(vs), ve=np.int32(ve))
        exp = np.full((NC, NK), 3.0, np.float32)
        exp[hs:he, vs:ve] = full[hs:he, vs:ve]
        np.testing.assert_allclose(out, exp, rtol=2e-6)


def test_field_offset_refuses_a_mismatched_declaration():
    from tensorir_dace import FrontendError

    with pytest.raises(FrontendError, match="the source must be a Dimension"):
        FieldOffset("E2C", source=E2CDim, target=(Edge, E2CDim))
    # another source is GT4Py's strided offset into a flattened field over it
    assert "source=Vertex" in repr(FieldOffset("E2C", source=Vertex, target=(Edge, E2CDim)))
    with pytest.raises(FrontendError, match="target must be"):
        FieldOffset("Koff", source=K, target=(Cell,))
    with pytest.raises(FrontendError, match="integer offset"):
        Koff[0.5]


@function
def apply_nabla2_to_vn_in_lateral_boundary(z_nabla2_e: Tensor[wpfloat, Edge, K],
                                           area_edge: Tensor[wpfloat, Edge],
                                           vn: Tensor[wpfloat, Edge, K], fac_bdydiff_v: wpfloat):
    return vn + (z_nabla2_e * area_edge) * fac_bdydiff_v


@function
def compute_horizontal_kinetic_energy(vn: Tensor[wpfloat, Edge, K],
                                      vt: Tensor[vpfloat, Edge, K]):
    vn_ie = vn
    z_vt_ie = vt
    z_kin_hor_e = wpfloat("0.5") * (vn * vn + astype(vt * vt, wpfloat))
    return vn_ie, z_vt_ie, astype(z_kin_hor_e, vpfloat)


@function
def update_theta_and_exner(z_temp: Tensor[vpfloat, Cell, K], area: Tensor[wpfloat, Cell],
                           theta_v: Tensor[wpfloat, Cell, K], exner: Tensor[wpfloat, Cell, K],
                           rd_o_cvd: vpfloat):
    z_theta = theta_v
    theta_v_new = theta_v + area * astype(z_temp, wpfloat)
    exner_new = exner * (wpfloat("1.0") + astype(rd_o_cvd, wpfloat)
                         * (theta_v_new / z_theta - wpfloat("1.0")))
    return theta_v_new, exner_new


@program
def more_stencils(z_nabla2_e: Tensor[wpfloat, Edge, K], area_edge: Tensor[wpfloat, Edge],
                  vn: Tensor[wpfloat, Edge, K], vt: Tensor[vpfloat, Edge, K],
                  vn_ie: Tensor[wpfloat, Edge, K], z_vt_ie: Tensor[vpfloat, Edge, K],
                  z_kin_hor_e: Tensor[vpfloat, Edge, K], z_temp: Tensor[vpfloat, Cell, K],
                  area: Tensor[wpfloat, Cell], theta_v: Tensor[wpfloat, Cell, K],
                  exner: Tensor[wpfloat, Cell, K], fac_bdydiff_v: wpfloat, rd_o_cvd: vpfloat,
                  edge_start: int32, edge_end: int32, cell_start: int32, cell_end: int32,
                  vertical_start: int32, vertical_end: int32):
    compute_horizontal_kinetic_energy(vn, vt, out=(vn_ie, z_vt_ie, z_kin_hor_e),
                                      domain={Edge: (edge_start, edge_end),
                                              K: (vertical_start, vertical_end)})
    apply_nabla2_to_vn_in_lateral_boundary(z_nabla2_e, area_edge, vn, fac_bdydiff_v, out=vn,
                                           domain={Edge: (edge_start, edge_end),
                                                   K: (vertical_start, vertical_end)})
    update_theta_and_exner(z_temp, area, theta_v, exner, rd_o_cvd, out=(theta_v, exner),
                           domain={Cell: (cell_start, cell_end),
                                   K: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_updates_and_tuple_outputs(backend):
    z2, area_e, vn0, vt = wp(NE, NK), wp(NE), wp(NE, NK), vp(NE, NK)
    z_temp, area, th0, ex0 = vp(NC, NK), wp(NC), wp(NC, NK) + 1.0, wp(NC, NK)
    fac, rd = 0.3, np.float32(0.4)
    kin = (0.5 * (vn0 * vn0 + (vt * vt).astype(np.float64))).astype(np.float32)
    th_new = th0 + area[:, None] * z_temp.astype(np.float64)
    ex_new = ex0 * (1.0 + np.float64(rd) * (th_new / th0 - 1.0))
    for hs, he, vs, ve in DOMAINS:
        ehs, ehe, vs, ve = clip((hs, he, vs, ve), NE)
        chs, che = min(hs, NC), min(he, NC)
        vn, th, ex = vn0.copy(), th0.copy(), ex0.copy()
        vn_ie, z_vt_ie, z_kin = np.zeros((NE, NK)), np.zeros((NE, NK), np.float32), \
            np.zeros((NE, NK), np.float32)
        more_stencils(z2, area_e, vn, vt, vn_ie, z_vt_ie, z_kin, z_temp, area, th, ex, fac, rd,
                      ehs, ehe, chs, che, vs, ve, backend=backend)
        e = (slice(ehs, ehe), slice(vs, ve))
        c = (slice(chs, che), slice(vs, ve))
        exp = [np.zeros((NE, NK)), np.zeros((NE, NK), np.float32),
               np.zeros((NE, NK), np.float32), vn0.copy(), th0.copy(), ex0.copy()]
        exp[0][e], exp[1][e], exp[2][e] = vn0[e], vt[e], kin[e]
        exp[3][e] = (vn0 + z2 * area_e[:, None] * fac)[e]
        exp[4][c], exp[5][c] = th_new[c], ex_new[c]
        for got, want in zip((vn_ie, z_vt_ie, z_kin, vn, th, ex), exp):
            np.testing.assert_allclose(got, want, rtol=2e-6)
