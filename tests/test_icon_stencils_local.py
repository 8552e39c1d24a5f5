"""ICON stencils (icon4py's field operators) written with GT4Py's local
dimensions: ``Dimension("E2C", DimensionKind.LOCAL)`` and ``FieldOffset``s
whose tables (or strides) come from ``offset_provider=`` at the first call.

They add, beside ``test_icon_stencils_ported*.py``: the advective tendency of
the normal wind (the strided ``E2EC`` beside the table ``E2C`` of the same
local dimension, ``E2V`` sums in single precision, a half-level field read one
level down), the hydrostatic correction term (``as_offset`` of a sparse
``int32`` field's neighbour slot ``ikoffset[E2CDim(0)]`` after an ``E2C``
shift), sparse coefficient fields over local dimensions, ``max_over`` of a
product of a shifted edge field and a shifted ``(Edge, K)`` field, a Laplacian
over ``C2E2CO`` with absent neighbours, ``concat_where`` joining two
interpolations to half levels, tuple outputs with one half-level and two
full-level fields under one runtime ``domain=``, and a backward
``scan_operator`` carrying a tuple state.  Each group is one program,
interpreted and compiled once, compared with hand-written NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    abs,
    as_offset,
    astype,
    concat_where,
    exp,
    field_operator,
    float32,
    float64,
    int32,
    max_over,
    maximum,
    neighbor_sum,
    program,
    scan_operator,
    sqrt,
)

CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
CEDim = Dimension("CE")
ECDim = Dimension("EC")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2EC = FieldOffset("E2EC", source=ECDim, target=(EdgeDim, E2CDim))
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
wpfloat, vpfloat = float64, float32
BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 9, 14, 7, 6
RNG = np.random.default_rng(2411)
f64, f32 = np.float64, np.float32


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


TABLES = {"C2E": table(NC, 3, NE), "C2E2CO": table(NC, 4, NC, absent=0.25),
          "E2C": table(NE, 2, NC), "E2V": table(NE, 2, NV), "C2CE": None, "E2EC": None,
          "Koff": KDim}
TABLES["C2E2CO"][0, :] = -1         # a cell without any neighbour, itself included
TABLES["C2E2CO"][1, 0] = 1          # and one whose first neighbour is itself


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2412).bit_generator.state


def wp(*shape):
    return RNG.random(shape)


def vp(*shape):
    return RNG.random(shape).astype(f32)


def inside(new, old, hs, he, vs, ve):
    """``new`` on rows ``hs:he`` and levels ``vs:ve``, ``old`` elsewhere."""
    out = old.copy()
    out[hs:he, vs:ve] = new[hs:he, vs:ve]
    return out


def check(got, expected, rtol):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=rtol, err_msg=name)


# ---------------------------------------------------------------- edges


@field_operator
def _compute_advective_normal_wind_tendency(
        z_kin_hor_e: Field[Dims[EdgeDim, KDim], vpfloat],
        coeff_gradekin: Field[Dims[ECDim], vpfloat],
        z_ekinh: Field[Dims[CellDim, KDim], vpfloat],
        zeta: Field[Dims[VertexDim, KDim], vpfloat],
        vt: Field[Dims[EdgeDim, KDim], vpfloat],
        f_e: Field[Dims[EdgeDim], wpfloat],
        c_lin_e: Field[Dims[EdgeDim, E2CDim], wpfloat],
        z_w_con_c_full: Field[Dims[CellDim, KDim], vpfloat],
        vn_ie: Field[Dims[EdgeDim, KDim], vpfloat],
        ddqz_z_full_e: Field[Dims[EdgeDim, KDim], vpfloat]) -> Field[Dims[EdgeDim, KDim], vpfloat]:
    vt_wp, z_w_con_c_full_wp, ddqz_z_full_e_wp = astype((vt, z_w_con_c_full, ddqz_z_full_e),
                                                        wpfloat)
    gradient = (z_kin_hor_e * (coeff_gradekin(E2EC[0]) - coeff_gradekin(E2EC[1]))
                + coeff_gradekin(E2EC[1]) * z_ekinh(E2C[1])
                - coeff_gradekin(E2EC[0]) * z_ekinh(E2C[0]))
    vorticity = f_e + astype(vpfloat("0.5") * neighbor_sum(zeta(E2V), axis=E2VDim), wpfloat)
    vertical = (neighbor_sum(c_lin_e * z_w_con_c_full_wp(E2C), axis=E2CDim)
                * astype(vn_ie - vn_ie(Koff[1]), wpfloat) / ddqz_z_full_e_wp)
    return astype(-(astype(gradient, wpfloat) + vt_wp * vorticity + vertical), vpfloat)


@field_operator
def _compute_hydrostatic_correction_term(
        theta_v: Field[Dims[CellDim, KDim], wpfloat],
        ikoffset: Field[Dims[EdgeDim, E2CDim, KDim], int32],
        zdiff_gradp: Field[Dims[EdgeDim, E2CDim, KDim], vpfloat],
        theta_v_ic: Field[Dims[CellDim, KDim], wpfloat],
        inv_ddqz_z_full: Field[Dims[CellDim, KDim], vpfloat],
        inv_dual_edge_length: Field[Dims[EdgeDim], wpfloat],
        grav_o_cpd: wpfloat) -> Field[Dims[EdgeDim, KDim], vpfloat]:
    zdiff_gradp_wp = astype(zdiff_gradp, wpfloat)
    theta_v_0 = theta_v(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)]))
    theta_v_1 = theta_v(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)]))
    theta_v_ic_0 = theta_v_ic(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)]))
    theta_v_ic_1 = theta_v_ic(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)]))
    theta_v_ic_p1_0 = theta_v_ic(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)] + 1))
    theta_v_ic_p1_1 = theta_v_ic(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)] + 1))
    inv_0 = astype(inv_ddqz_z_full(E2C[0])(as_offset(Koff, ikoffset[E2CDim(0)])), wpfloat)
    inv_1 = astype(inv_ddqz_z_full(E2C[1])(as_offset(Koff, ikoffset[E2CDim(1)])), wpfloat)
    z_theta_0 = theta_v_0 + zdiff_gradp_wp[E2CDim(0)] * (theta_v_ic_0 - theta_v_ic_p1_0) * inv_0
    z_theta_1 = theta_v_1 + zdiff_gradp_wp[E2CDim(1)] * (theta_v_ic_1 - theta_v_ic_p1_1) * inv_1
    z_hydro_corr = (grav_o_cpd * inv_dual_edge_length * (z_theta_1 - z_theta_0) * wpfloat("4.0")
                    / ((z_theta_0 + z_theta_1) * (z_theta_0 + z_theta_1)))
    return astype(z_hydro_corr, vpfloat)


@field_operator
def _cell_2_edge_interpolation(
        in_field: Field[Dims[CellDim, KDim], wpfloat],
        coeff: Field[Dims[EdgeDim, E2CDim], wpfloat]) -> Field[Dims[EdgeDim, KDim], wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=E2CDim)


@field_operator
def _apply_4th_order_divergence_damping(
        scal_divdamp: Field[Dims[KDim], wpfloat],
        z_graddiv2_vn: Field[Dims[EdgeDim, KDim], vpfloat],
        vn: Field[Dims[EdgeDim, KDim], wpfloat]) -> Field[Dims[EdgeDim, KDim], wpfloat]:
    return vn + scal_divdamp * astype(z_graddiv2_vn, wpfloat)


@field_operator
def _add_temporal_tendencies_to_vn_by_interpolating_between_time_levels(
        vn_nnow: Field[Dims[EdgeDim, KDim], wpfloat],
        ddt_vn_apc_ntl1: Field[Dims[EdgeDim, KDim], vpfloat],
        ddt_vn_apc_ntl2: Field[Dims[EdgeDim, KDim], vpfloat],
        ddt_vn_phy: Field[Dims[EdgeDim, KDim], vpfloat],
        z_theta_v_e: Field[Dims[EdgeDim, KDim], wpfloat],
        z_gradh_exner: Field[Dims[EdgeDim, KDim], vpfloat],
        dtime: wpfloat, wgt_nnow_vel: wpfloat, wgt_nnew_vel: wpfloat,
        cpd: wpfloat) -> Field[Dims[EdgeDim, KDim], wpfloat]:
    ntl1, ntl2, phy, gradh = astype((ddt_vn_apc_ntl1, ddt_vn_apc_ntl2, ddt_vn_phy,
                                     z_gradh_exner), wpfloat)
    return vn_nnow + dtime * (wgt_nnow_vel * ntl1 + wgt_nnew_vel * ntl2 + phy
                              - cpd * z_theta_v_e * gradh)


@program
def edge_stencils(
        z_kin_hor_e: Field[Dims[EdgeDim, KDim], vpfloat], coeff_gradekin: Field[Dims[ECDim], vpfloat],
        z_ekinh: Field[Dims[CellDim, KDim], vpfloat], zeta: Field[Dims[VertexDim, KDim], vpfloat],
        vt: Field[Dims[EdgeDim, KDim], vpfloat], f_e: Field[Dims[EdgeDim], wpfloat],
        c_lin_e: Field[Dims[EdgeDim, E2CDim], wpfloat],
        z_w_con_c_full: Field[Dims[CellDim, KDim], vpfloat],
        vn_ie: Field[Dims[EdgeDim, KDim], vpfloat], ddqz_z_full_e: Field[Dims[EdgeDim, KDim], vpfloat],
        ddt_vn_apc: Field[Dims[EdgeDim, KDim], vpfloat],
        theta_v: Field[Dims[CellDim, KDim], wpfloat],
        ikoffset: Field[Dims[EdgeDim, E2CDim, KDim], int32],
        zdiff_gradp: Field[Dims[EdgeDim, E2CDim, KDim], vpfloat],
        theta_v_ic: Field[Dims[CellDim, KDim], wpfloat],
        inv_ddqz_z_full: Field[Dims[CellDim, KDim], vpfloat],
        inv_dual_edge_length: Field[Dims[EdgeDim], wpfloat], grav_o_cpd: wpfloat,
        z_hydro_corr: Field[Dims[EdgeDim, KDim], vpfloat],
        cell_field: Field[Dims[CellDim, KDim], wpfloat],
        c_lin_e_2: Field[Dims[EdgeDim, E2CDim], wpfloat],
        edge_field: Field[Dims[EdgeDim, KDim], wpfloat],
        scal_divdamp: Field[Dims[KDim], wpfloat], z_graddiv2_vn: Field[Dims[EdgeDim, KDim], vpfloat],
        vn: Field[Dims[EdgeDim, KDim], wpfloat],
        ddt_vn_apc_ntl1: Field[Dims[EdgeDim, KDim], vpfloat],
        ddt_vn_apc_ntl2: Field[Dims[EdgeDim, KDim], vpfloat],
        ddt_vn_phy: Field[Dims[EdgeDim, KDim], vpfloat],
        z_theta_v_e: Field[Dims[EdgeDim, KDim], wpfloat],
        z_gradh_exner: Field[Dims[EdgeDim, KDim], vpfloat],
        vn_nnew: Field[Dims[EdgeDim, KDim], wpfloat],
        dtime: wpfloat, wgt_nnow_vel: wpfloat, wgt_nnew_vel: wpfloat, cpd: wpfloat,
        horizontal_start: int32, horizontal_end: int32, vertical_start: int32,
        vertical_end: int32):
    _compute_advective_normal_wind_tendency(
        z_kin_hor_e, coeff_gradekin, z_ekinh, zeta, vt, f_e, c_lin_e, z_w_con_c_full, vn_ie,
        ddqz_z_full_e, out=ddt_vn_apc,
        domain={EdgeDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})
    _compute_hydrostatic_correction_term(
        theta_v, ikoffset, zdiff_gradp, theta_v_ic, inv_ddqz_z_full, inv_dual_edge_length,
        grav_o_cpd, out=z_hydro_corr,
        domain={EdgeDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})
    _cell_2_edge_interpolation(
        cell_field, c_lin_e_2, out=edge_field,
        domain={EdgeDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})
    _apply_4th_order_divergence_damping(
        scal_divdamp, z_graddiv2_vn, vn, out=vn,
        domain={EdgeDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})
    _add_temporal_tendencies_to_vn_by_interpolating_between_time_levels(
        vn, ddt_vn_apc_ntl1, ddt_vn_apc_ntl2, ddt_vn_phy, z_theta_v_e, z_gradh_exner, dtime,
        wgt_nnow_vel, wgt_nnew_vel, cpd, out=vn_nnew,
        domain={EdgeDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})


def edge_inputs():
    ikoffset = RNG.integers(-1, 2, (NE, 2, NLEV)).astype(np.int32)
    ikoffset[:, :, 0] = np.maximum(ikoffset[:, :, 0], 0)
    ikoffset[:, :, NLEV - 1] = np.minimum(ikoffset[:, :, NLEV - 1], 0)
    return dict(
        z_kin_hor_e=vp(NE, NLEV), coeff_gradekin=vp(NE * 2), z_ekinh=vp(NC, NLEV),
        zeta=vp(NV, NLEV), vt=vp(NE, NLEV), f_e=wp(NE), c_lin_e=wp(NE, 2),
        z_w_con_c_full=vp(NC, NLEV), vn_ie=vp(NE, NLEV + 1), ddqz_z_full_e=vp(NE, NLEV) + 0.5,
        ddt_vn_apc=np.full((NE, NLEV), 7.0, f32),
        theta_v=wp(NC, NLEV) + 1.0, ikoffset=ikoffset, zdiff_gradp=vp(NE, 2, NLEV),
        theta_v_ic=wp(NC, NLEV + 1) + 1.0, inv_ddqz_z_full=vp(NC, NLEV),
        inv_dual_edge_length=wp(NE), z_hydro_corr=np.full((NE, NLEV), 5.0, f32),
        cell_field=wp(NC, NLEV), c_lin_e_2=wp(NE, 2), edge_field=np.full((NE, NLEV), 3.0),
        scal_divdamp=wp(NLEV), z_graddiv2_vn=vp(NE, NLEV), vn=wp(NE, NLEV),
        ddt_vn_apc_ntl1=vp(NE, NLEV), ddt_vn_apc_ntl2=vp(NE, NLEV), ddt_vn_phy=vp(NE, NLEV),
        z_theta_v_e=wp(NE, NLEV), z_gradh_exner=vp(NE, NLEV),
        vn_nnew=np.full((NE, NLEV), 9.0))


def edge_numpy(a, s, bounds):
    e2c, e2v = TABLES["E2C"], TABLES["E2V"]
    nlev = NLEV
    cg = a["coeff_gradekin"].reshape(NE, 2)
    d = lambda x: x.astype(f64)  # noqa: E731
    gradient = (d(a["z_kin_hor_e"]) * d(cg[:, 0:1] - cg[:, 1:2])
                + d(cg[:, 1:2]) * d(a["z_ekinh"][e2c[:, 1]])
                - d(cg[:, 0:1]) * d(a["z_ekinh"][e2c[:, 0]]))
    vorticity = a["f_e"][:, None] + 0.5 * d(a["zeta"][e2v].sum(1))
    vertical = ((a["c_lin_e"][:, :, None] * d(a["z_w_con_c_full"][e2c])).sum(1)
                * d(a["vn_ie"][:, :nlev] - a["vn_ie"][:, 1:]) / d(a["ddqz_z_full_e"]))
    tendency = -(gradient + d(a["vt"]) * vorticity + vertical)

    rows = np.arange(NE)[:, None]
    levels = np.arange(nlev)[None, :]
    z_theta = []
    for j in range(2):
        c = e2c[:, j][:, None]
        k = levels + a["ikoffset"][:, j, :]
        z_theta.append(a["theta_v"][c, k] + d(a["zdiff_gradp"][:, j, :])
                       * (a["theta_v_ic"][c, k] - a["theta_v_ic"][c, k + 1])
                       * d(a["inv_ddqz_z_full"][c, k]))
    del rows
    z0, z1 = z_theta
    hydro = s["grav_o_cpd"] * a["inv_dual_edge_length"][:, None] * (z1 - z0) * 4.0 / (z0 + z1) ** 2
    interpolated = (a["cell_field"][e2c] * a["c_lin_e_2"][:, :, None]).sum(1)
    damped = a["vn"] + a["scal_divdamp"][None, :] * d(a["z_graddiv2_vn"])
    vn = inside(damped, a["vn"], *bounds)
    vn_nnew = vn + s["dtime"] * (s["wgt_nnow_vel"] * d(a["ddt_vn_apc_ntl1"])
                                 + s["wgt_nnew_vel"] * d(a["ddt_vn_apc_ntl2"])
                                 + d(a["ddt_vn_phy"])
                                 - s["cpd"] * a["z_theta_v_e"] * d(a["z_gradh_exner"]))
    return dict(
        ddt_vn_apc=inside(tendency, a["ddt_vn_apc"], *bounds),
        z_hydro_corr=inside(hydro, a["z_hydro_corr"], *bounds),
        edge_field=inside(interpolated, a["edge_field"], *bounds),
        vn=vn, vn_nnew=inside(vn_nnew, a["vn_nnew"], *bounds))


@pytest.mark.parametrize("backend", BACKENDS)
def test_edge_stencils(backend):
    a = edge_inputs()
    s = dict(grav_o_cpd=9.80665 / 1004.64, dtime=10.0, wgt_nnow_vel=0.25, wgt_nnew_vel=0.75,
             cpd=1004.64)
    bounds = (2, NE - 3, 0, NLEV)
    expected = edge_numpy({k: v.copy() for k, v in a.items()}, s, bounds)
    hs, he, vs, ve = bounds
    edge_stencils(**a, **s, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                  vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, {k: v for k, v in expected.items() if a[k].dtype == f64}, rtol=1e-12)
    check(a, {k: v for k, v in expected.items() if a[k].dtype == f32}, rtol=2e-5)
