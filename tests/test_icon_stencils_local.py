"""ICON stencils (icon4py's field operators) written with GT4Py's local
dimensions: ``Dimension("E2C", DimensionKind.LOCAL)`` and ``FieldOffset``s
whose tables (or strides) come from ``offset_provider=`` at the first call.

They add, beside ``test_icon_stencils_ported*.py``: the advective tendency of
the normal wind (the strided ``E2EC`` beside the table ``E2C`` of the same
local dimension, ``E2V`` sums in single precision, a half-level field read one
level down), the hydrostatic correction term (``as_offset`` of a sparse
``int32`` field's neighbour slot ``ikoffset[E2CDim(0)]`` after an ``E2C``
shift), sparse coefficient fields over local dimensions, ``max_over`` of a
product of a shifted edge field and a shifted ``(Edge, K)`` field, an average
over ``C2E2CO`` with absent neighbours, ``concat_where`` joining two
interpolations to half levels, tuple outputs with one half-level and two
full-level fields under one runtime ``domain=``, a backward ``scan_operator``
carrying a tuple state, icon4py's module spellings (``dims.C2E``,
``fa.CellKField[wpfloat]``, ``gtx.Field[gtx.Dims[...], ...]``), the combined
velocity-advection stencils on edges and cells (``E2C2E``, ``V2C`` and ``E2V``
with absent neighbours, ``where`` on ``int32`` level-index fields, tuple
selections), the diffusion of vn (``E2C2V`` slots, ``concat_where`` on the edge
dimension under a ``bool`` choice) and sparse results over ``C2E`` and ``V2E``.
Each group is one program, interpreted and compiled once, compared with
hand-written NumPy.

Not covered: icon4py's ``where(1 <= k < nlev, f(x(Koff[-1])), y)`` with ``k`` a
level-index *field* evaluated from level 0.  GT4Py's compiled backends evaluate
the branch ``where`` does not select lazily; here the value of a ``where`` is
defined where both branches are, so a range starting at level 0 is an
``ArgumentError`` (the branch reading ``Koff[-1]`` is defined from level 1).
``concat_where(1 <= dims.KDim < nlev, ...)`` (icon4py's newer spelling) is lazy
and is what the edge stencil below uses; the cell stencil starts at level 1.
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
    as_offset,
    astype,
    broadcast,
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
    sqrt,
    where,
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
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2EC = FieldOffset("E2EC", source=ECDim, target=(EdgeDim, E2CDim))
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
E2C2EO = FieldOffset("E2C2EO", source=EdgeDim, target=(EdgeDim, E2C2EODim))
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
          "E2C2E": table(NE, 4, NE, absent=0.2), "V2C": table(NV, 6, NC, absent=0.2),
          "E2C2V": table(NE, 4, NV), "V2E": table(NV, 6, NE, absent=0.25),
          "E2C2EO": table(NE, 5, NE, absent=0.2), "Koff": KDim}
TABLES["V2C"][0, :] = -1            # a vertex without any cell
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
        z_kin_hor_e: Field[Dims[EdgeDim, KDim], vpfloat],
        coeff_gradekin: Field[Dims[ECDim], vpfloat],
        z_ekinh: Field[Dims[CellDim, KDim], vpfloat], zeta: Field[Dims[VertexDim, KDim], vpfloat],
        vt: Field[Dims[EdgeDim, KDim], vpfloat], f_e: Field[Dims[EdgeDim], wpfloat],
        c_lin_e: Field[Dims[EdgeDim, E2CDim], wpfloat],
        z_w_con_c_full: Field[Dims[CellDim, KDim], vpfloat],
        vn_ie: Field[Dims[EdgeDim, KDim], vpfloat],
        ddqz_z_full_e: Field[Dims[EdgeDim, KDim], vpfloat],
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
        scal_divdamp: Field[Dims[KDim], wpfloat],
        z_graddiv2_vn: Field[Dims[EdgeDim, KDim], vpfloat],
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


# ---------------------------------------------------------------- cells


@field_operator
def _calculate_nabla2_of_theta(
        z_nabla2_e: Field[Dims[EdgeDim, KDim], wpfloat],
        geofac_div: Field[Dims[CEDim], wpfloat]) -> Field[Dims[CellDim, KDim], vpfloat]:
    z_temp = neighbor_sum(z_nabla2_e(C2E) * geofac_div(C2CE), axis=C2EDim)
    return astype(z_temp, vpfloat)


@field_operator
def _compute_contravariant_correction_of_w(
        e_bln_c_s: Field[Dims[CEDim], wpfloat],
        z_w_concorr_me: Field[Dims[EdgeDim, KDim], wpfloat],
        wgtfac_c: Field[Dims[CellDim, KDim], wpfloat]) -> Field[Dims[CellDim, KDim], wpfloat]:
    z_w_concorr_me_offset_1 = z_w_concorr_me(Koff[-1])
    z_w_concorr_mc_m1 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me_offset_1(C2E), axis=C2EDim)
    z_w_concorr_mc_m0 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(C2E), axis=C2EDim)
    return wgtfac_c * z_w_concorr_mc_m0 + (wpfloat("1.0") - wgtfac_c) * z_w_concorr_mc_m1


@field_operator
def _compute_contravariant_correction_of_w_for_lower_boundary(
        e_bln_c_s: Field[Dims[CEDim], wpfloat],
        z_w_concorr_me: Field[Dims[EdgeDim, KDim], wpfloat],
        wgtfacq_c: Field[Dims[CellDim, KDim], wpfloat]) -> Field[Dims[CellDim, KDim], wpfloat]:
    m1 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(Koff[-1])(C2E), axis=C2EDim)
    m2 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(Koff[-2])(C2E), axis=C2EDim)
    m3 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(Koff[-3])(C2E), axis=C2EDim)
    return wgtfacq_c(Koff[-1]) * m1 + wgtfacq_c(Koff[-2]) * m2 + wgtfacq_c(Koff[-3]) * m3


@field_operator
def _interpolate_contravariant_correction_from_edges_on_model_levels_to_cells_on_half_levels(
        e_bln_c_s: Field[Dims[CEDim], wpfloat],
        contravariant_correction_at_edges_on_model_levels: Field[Dims[EdgeDim, KDim], wpfloat],
        wgtfac_c: Field[Dims[CellDim, KDim], wpfloat],
        wgtfacq_c: Field[Dims[CellDim, KDim], wpfloat],
        nlev: int32, nflatlev: int32) -> Field[Dims[CellDim, KDim], wpfloat]:
    return concat_where(
        (nflatlev + 1 <= KDim) & (KDim < nlev),
        _compute_contravariant_correction_of_w(
            e_bln_c_s, contravariant_correction_at_edges_on_model_levels, wgtfac_c),
        _compute_contravariant_correction_of_w_for_lower_boundary(
            e_bln_c_s, contravariant_correction_at_edges_on_model_levels, wgtfacq_c))


@field_operator
def _calculate_diagnostics_for_turbulence(
        div: Field[Dims[CellDim, KDim], vpfloat], kh_c: Field[Dims[CellDim, KDim], vpfloat],
        wgtfac_c: Field[Dims[CellDim, KDim], vpfloat]
) -> tuple[Field[Dims[CellDim, KDim], vpfloat], Field[Dims[CellDim, KDim], vpfloat]]:
    div_ic = wgtfac_c * div + (vpfloat("1.0") - wgtfac_c) * div(Koff[-1])
    kh_ic = wgtfac_c * kh_c + (vpfloat("1.0") - wgtfac_c) * kh_c(Koff[-1])
    return div_ic, kh_ic * kh_ic


@field_operator
def _compute_perturbation_of_rho_and_theta_and_rho_interface_cell_centers(
        wgtfac_c: Field[Dims[CellDim, KDim], vpfloat], rho: Field[Dims[CellDim, KDim], wpfloat],
        rho_ref_mc: Field[Dims[CellDim, KDim], vpfloat],
        theta_v: Field[Dims[CellDim, KDim], wpfloat],
        theta_ref_mc: Field[Dims[CellDim, KDim], vpfloat]
) -> tuple[Field[Dims[CellDim, KDim], wpfloat], Field[Dims[CellDim, KDim], vpfloat],
           Field[Dims[CellDim, KDim], vpfloat]]:
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    rho_ic = wgtfac_c_wp * rho + (wpfloat("1.0") - wgtfac_c_wp) * rho(Koff[-1])
    z_rth_pr_1 = astype(rho - astype(rho_ref_mc, wpfloat), vpfloat)
    z_rth_pr_2 = astype(theta_v - astype(theta_ref_mc, wpfloat), vpfloat)
    return rho_ic, z_rth_pr_1, z_rth_pr_2


@field_operator
def _interpolate_contravariant_vertical_velocity_to_full_levels(
        z_w_con_c: Field[Dims[CellDim, KDim], vpfloat]) -> Field[Dims[CellDim, KDim], vpfloat]:
    return vpfloat("0.5") * (z_w_con_c + z_w_con_c(Koff[1]))


@program
def cell_stencils(
        z_nabla2_e: Field[Dims[EdgeDim, KDim], wpfloat], geofac_div: Field[Dims[CEDim], wpfloat],
        z_temp: Field[Dims[CellDim, KDim], vpfloat],
        e_bln_c_s: Field[Dims[CEDim], wpfloat],
        z_w_concorr_me: Field[Dims[EdgeDim, KDim], wpfloat],
        wgtfac_c: Field[Dims[CellDim, KDim], wpfloat],
        wgtfacq_c: Field[Dims[CellDim, KDim], wpfloat],
        w_concorr_c: Field[Dims[CellDim, KDim], wpfloat], nlev: int32, nflatlev: int32,
        div: Field[Dims[CellDim, KDim], vpfloat], kh_c: Field[Dims[CellDim, KDim], vpfloat],
        wgtfac_c_vp: Field[Dims[CellDim, KDim], vpfloat],
        div_ic: Field[Dims[CellDim, KDim], vpfloat], hdef_ic: Field[Dims[CellDim, KDim], vpfloat],
        rho: Field[Dims[CellDim, KDim], wpfloat], rho_ref_mc: Field[Dims[CellDim, KDim], vpfloat],
        theta_v: Field[Dims[CellDim, KDim], wpfloat],
        theta_ref_mc: Field[Dims[CellDim, KDim], vpfloat],
        rho_ic: Field[Dims[CellDim, KDim], wpfloat],
        z_rth_pr_1: Field[Dims[CellDim, KDim], vpfloat],
        z_rth_pr_2: Field[Dims[CellDim, KDim], vpfloat],
        z_w_con_c: Field[Dims[CellDim, KDim], vpfloat],
        z_w_con_c_full: Field[Dims[CellDim, KDim], vpfloat],
        horizontal_start: int32, horizontal_end: int32, vertical_start: int32,
        vertical_end: int32):
    _calculate_nabla2_of_theta(
        z_nabla2_e, geofac_div, out=z_temp,
        domain={CellDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})
    _interpolate_contravariant_correction_from_edges_on_model_levels_to_cells_on_half_levels(
        e_bln_c_s, z_w_concorr_me, wgtfac_c, wgtfacq_c, nlev, nflatlev, out=w_concorr_c,
        domain={CellDim: (horizontal_start, horizontal_end), KDim: (nflatlev + 1, nlev + 1)})
    _calculate_diagnostics_for_turbulence(
        div, kh_c, wgtfac_c_vp, out=(div_ic, hdef_ic),
        domain={CellDim: (horizontal_start, horizontal_end), KDim: (1, nlev)})
    _compute_perturbation_of_rho_and_theta_and_rho_interface_cell_centers(
        wgtfac_c_vp, rho, rho_ref_mc, theta_v, theta_ref_mc, out=(rho_ic, z_rth_pr_1, z_rth_pr_2),
        domain={CellDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)})
    _interpolate_contravariant_vertical_velocity_to_full_levels(
        z_w_con_c, out=z_w_con_c_full,
        domain={CellDim: (horizontal_start, horizontal_end), KDim: (0, nlev)})


def cell_inputs():
    return dict(
        z_nabla2_e=wp(NE, NLEV), geofac_div=wp(NC * 3) - 0.5, z_temp=np.full((NC, NLEV), 2.0, f32),
        e_bln_c_s=wp(NC * 3), z_w_concorr_me=wp(NE, NLEV), wgtfac_c=wp(NC, NLEV + 1),
        wgtfacq_c=wp(NC, NLEV + 1), w_concorr_c=np.full((NC, NLEV + 1), 4.0),
        div=vp(NC, NLEV), kh_c=vp(NC, NLEV), wgtfac_c_vp=vp(NC, NLEV + 1),
        div_ic=np.full((NC, NLEV + 1), 6.0, f32), hdef_ic=np.full((NC, NLEV + 1), 8.0, f32),
        rho=wp(NC, NLEV), rho_ref_mc=vp(NC, NLEV), theta_v=wp(NC, NLEV),
        theta_ref_mc=vp(NC, NLEV), rho_ic=np.full((NC, NLEV + 1), 1.5),
        z_rth_pr_1=np.full((NC, NLEV), 2.5, f32), z_rth_pr_2=np.full((NC, NLEV), 3.5, f32),
        z_w_con_c=vp(NC, NLEV + 1), z_w_con_c_full=np.full((NC, NLEV), 4.5, f32))


def cell_numpy(a, nflatlev, bounds):
    c2e = TABLES["C2E"]
    hs, he, vs, ve = bounds
    d = lambda x: x.astype(f64)  # noqa: E731
    geofac = a["geofac_div"].reshape(NC, 3)
    nabla2 = (a["z_nabla2_e"][c2e] * geofac[:, :, None]).sum(1)

    bln = a["e_bln_c_s"].reshape(NC, 3)
    me = (a["z_w_concorr_me"][c2e] * bln[:, :, None]).sum(1)          # (NC, NLEV) at full levels
    half = np.full((NC, NLEV + 1), np.nan)
    for k in range(nflatlev + 1, NLEV):
        half[:, k] = a["wgtfac_c"][:, k] * me[:, k] + (1.0 - a["wgtfac_c"][:, k]) * me[:, k - 1]
    q = a["wgtfacq_c"]
    half[:, NLEV] = (q[:, NLEV - 1] * me[:, NLEV - 1] + q[:, NLEV - 2] * me[:, NLEV - 2]
                     + q[:, NLEV - 3] * me[:, NLEV - 3])

    w = d(a["wgtfac_c_vp"])
    div_ic = np.full((NC, NLEV + 1), np.nan)
    kh_ic = np.full((NC, NLEV + 1), np.nan)
    div_ic[:, 1:NLEV] = w[:, 1:NLEV] * a["div"][:, 1:] + (1.0 - w[:, 1:NLEV]) * a["div"][:, :-1]
    kh_ic[:, 1:NLEV] = w[:, 1:NLEV] * a["kh_c"][:, 1:] + (1.0 - w[:, 1:NLEV]) * a["kh_c"][:, :-1]
    rho_ic = np.full((NC, NLEV + 1), np.nan)
    rho_ic[:, 1:NLEV] = w[:, 1:NLEV] * a["rho"][:, 1:] + (1.0 - w[:, 1:NLEV]) * a["rho"][:, :-1]
    full = 0.5 * (d(a["z_w_con_c"][:, :NLEV]) + a["z_w_con_c"][:, 1:])
    return dict(
        z_temp=inside(nabla2, a["z_temp"], *bounds),
        w_concorr_c=inside(half, a["w_concorr_c"], hs, he, nflatlev + 1, NLEV + 1),
        div_ic=inside(div_ic, a["div_ic"], hs, he, 1, NLEV),
        hdef_ic=inside(kh_ic ** 2, a["hdef_ic"], hs, he, 1, NLEV),
        rho_ic=inside(rho_ic, a["rho_ic"], *bounds),
        z_rth_pr_1=inside(a["rho"] - a["rho_ref_mc"], a["z_rth_pr_1"], *bounds),
        z_rth_pr_2=inside(a["theta_v"] - a["theta_ref_mc"], a["z_rth_pr_2"], *bounds),
        z_w_con_c_full=inside(full, a["z_w_con_c_full"], hs, he, 0, NLEV))


@pytest.mark.parametrize("backend", BACKENDS)
def test_cell_stencils(backend):
    a = cell_inputs()
    nflatlev = 2
    bounds = (1, NC - 2, 1, NLEV)
    expected = cell_numpy({k: v.copy() for k, v in a.items()}, nflatlev, bounds)
    hs, he, vs, ve = bounds
    cell_stencils(**a, nlev=NLEV, nflatlev=nflatlev, horizontal_start=hs, horizontal_end=he,
                  vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, {k: v for k, v in expected.items() if a[k].dtype == f64}, rtol=1e-12)
    check(a, {k: v for k, v in expected.items() if a[k].dtype == f32}, rtol=2e-5)


# ------------------------------------------------- metrics, in icon4py's module spelling
#
# icon4py reaches its dimensions, offsets and field aliases through modules
# (``dims.CellDim``, ``dims.C2E2CO``, ``fa.CellKField[wpfloat]``) and GT4Py through
# ``gtx`` (``gtx.Field``, ``gtx.Dims``, ``gtx.int32``, ``gtx.program(grid_type=...)``).

T = TypeVar("T")
dims = types.ModuleType("icon_local_dims")
dims.CellDim, dims.EdgeDim, dims.KDim = CellDim, EdgeDim, KDim
dims.C2EDim, dims.C2E2CODim, dims.C2E, dims.C2E2CO, dims.Koff = (C2EDim, C2E2CODim, C2E,
                                                                C2E2CO, Koff)
fa = types.ModuleType("icon_local_field_aliases")
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]


@gtx.field_operator
def _compute_z_mc(z_ifc: fa.CellKField[wpfloat]) -> fa.CellKField[wpfloat]:
    return wpfloat("0.5") * (z_ifc + z_ifc(dims.Koff[1]))


@gtx.field_operator
def _compute_ddqz_z_full_and_inverse(
        z_ifc: fa.CellKField[wpfloat]) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    ddqz_z_full = z_ifc - z_ifc(dims.Koff[1])
    return ddqz_z_full, wpfloat("1.0") / ddqz_z_full


@gtx.field_operator
def _compute_maxslp_maxhgtd(
        ddxn_z_full: fa.EdgeKField[wpfloat], dual_edge_length: fa.EdgeField[wpfloat]
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_maxslp = max_over(abs(ddxn_z_full(dims.C2E)), axis=dims.C2EDim)
    z_maxhgtd = max_over(abs(ddxn_z_full(dims.C2E) * dual_edge_length(dims.C2E)), axis=dims.C2EDim)
    return z_maxslp, z_maxhgtd


@gtx.field_operator
def _compute_z_maxslp_avg_z_maxhgtd_avg(
        maxslp: fa.CellKField[wpfloat], maxhgtd: fa.CellKField[wpfloat],
        c_bln_avg: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat]
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_maxslp_avg = neighbor_sum(maxslp(dims.C2E2CO) * c_bln_avg, axis=dims.C2E2CODim)
    z_maxhgtd_avg = neighbor_sum(maxhgtd(dims.C2E2CO) * c_bln_avg, axis=dims.C2E2CODim)
    return z_maxslp_avg, z_maxhgtd_avg


@gtx.scan_operator(axis=dims.KDim, forward=False, init=(0.0, 0.0, True))
def _scan_pressure(state: tuple[wpfloat, wpfloat, bool], ddqz_z_full: wpfloat,
                   virtual_temperature: wpfloat, surface_pressure: wpfloat,
                   grav_o_rd: wpfloat) -> tuple[wpfloat, wpfloat, bool]:
    below = surface_pressure if state[2] else state[1]
    pressure_interface = below * exp(-grav_o_rd * ddqz_z_full / virtual_temperature)
    return sqrt(below * pressure_interface), pressure_interface, False


@gtx.field_operator
def _diagnose_pressure(
        ddqz_z_full: fa.CellKField[wpfloat], virtual_temperature: fa.CellKField[wpfloat],
        surface_pressure: fa.CellField[wpfloat], grav_o_rd: wpfloat
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    pressure, pressure_ifc, _ = _scan_pressure(ddqz_z_full, virtual_temperature,
                                               surface_pressure, grav_o_rd)
    return pressure, pressure_ifc


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def metric_stencils(
        z_ifc: fa.CellKField[wpfloat], z_mc: fa.CellKField[wpfloat],
        ddqz_z_full: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[wpfloat],
        ddxn_z_full: fa.EdgeKField[wpfloat], dual_edge_length: fa.EdgeField[wpfloat],
        maxslp: fa.CellKField[wpfloat], maxhgtd: fa.CellKField[wpfloat],
        c_bln_avg: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
        maxslp_avg: fa.CellKField[wpfloat], maxhgtd_avg: fa.CellKField[wpfloat],
        virtual_temperature: fa.CellKField[wpfloat], surface_pressure: fa.CellField[wpfloat],
        pressure: fa.CellKField[wpfloat], pressure_ifc: fa.CellKField[wpfloat],
        grav_o_rd: wpfloat, horizontal_start: gtx.int32, horizontal_end: gtx.int32,
        vertical_start: gtx.int32, vertical_end: gtx.int32):
    _compute_z_mc(z_ifc, out=z_mc, domain={dims.CellDim: (horizontal_start, horizontal_end),
                                           dims.KDim: (vertical_start, vertical_end)})
    _compute_ddqz_z_full_and_inverse(
        z_ifc, out=(ddqz_z_full, inv_ddqz_z_full),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_maxslp_maxhgtd(
        ddxn_z_full, dual_edge_length, out=(maxslp, maxhgtd),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_z_maxslp_avg_z_maxhgtd_avg(
        maxslp, maxhgtd, c_bln_avg, out=(maxslp_avg, maxhgtd_avg),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _diagnose_pressure(
        ddqz_z_full, virtual_temperature, surface_pressure, grav_o_rd,
        out=(pressure, pressure_ifc),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


def metric_inputs():
    z_ifc = np.cumsum(wp(NC, NLEV + 1) + 0.5, axis=1)[:, ::-1].copy()
    return dict(
        z_ifc=z_ifc, z_mc=np.full((NC, NLEV), 1.0), ddqz_z_full=np.full((NC, NLEV), 2.0),
        inv_ddqz_z_full=np.full((NC, NLEV), 3.0), ddxn_z_full=wp(NE, NLEV) - 0.5,
        dual_edge_length=wp(NE) + 0.5, maxslp=np.full((NC, NLEV), 4.0),
        maxhgtd=np.full((NC, NLEV), 5.0), c_bln_avg=wp(NC, 4),
        maxslp_avg=np.full((NC, NLEV), 6.0), maxhgtd_avg=np.full((NC, NLEV), 7.0),
        virtual_temperature=wp(NC, NLEV) * 30 + 250, surface_pressure=wp(NC) * 1e3 + 1e5,
        pressure=np.full((NC, NLEV), 8.0), pressure_ifc=np.full((NC, NLEV), 9.0))


def metric_numpy(a, grav_o_rd, bounds):
    hs, he, vs, ve = bounds
    c2e, c2e2co = TABLES["C2E"], TABLES["C2E2CO"]
    z = a["z_ifc"]
    ddqz = z[:, :NLEV] - z[:, 1:]
    ddqz_out = inside(ddqz, a["ddqz_z_full"], *bounds)
    slope = np.abs(a["ddxn_z_full"][c2e])
    maxslp = inside(slope.max(1), a["maxslp"], *bounds)
    height = np.abs(a["ddxn_z_full"][c2e] * a["dual_edge_length"][c2e][:, :, None])
    maxhgtd = inside(height.max(1), a["maxhgtd"], *bounds)
    present = (c2e2co >= 0)[:, :, None]
    weights = a["c_bln_avg"][:, :, None]
    avg = {name: np.where(present, field[np.where(c2e2co >= 0, c2e2co, 0)] * weights, 0.0).sum(1)
           for name, field in (("maxslp", maxslp), ("maxhgtd", maxhgtd))}
    pressure = np.array(a["pressure"])
    pressure_ifc = np.array(a["pressure_ifc"])
    for c in range(hs, he):
        below = a["surface_pressure"][c]
        for k in range(NLEV - 1, -1, -1):
            pi = below * np.exp(-grav_o_rd * ddqz_out[c, k] / a["virtual_temperature"][c, k])
            if vs <= k < ve:
                pressure[c, k], pressure_ifc[c, k] = np.sqrt(below * pi), pi
            below = pi
    return dict(
        z_mc=inside(0.5 * (z[:, :NLEV] + z[:, 1:]), a["z_mc"], *bounds),
        ddqz_z_full=ddqz_out, inv_ddqz_z_full=inside(1.0 / ddqz, a["inv_ddqz_z_full"], *bounds),
        maxslp=maxslp, maxhgtd=maxhgtd,
        maxslp_avg=inside(avg["maxslp"], a["maxslp_avg"], *bounds),
        maxhgtd_avg=inside(avg["maxhgtd"], a["maxhgtd_avg"], *bounds),
        pressure=pressure, pressure_ifc=pressure_ifc)


@pytest.mark.parametrize("backend", BACKENDS)
def test_metric_stencils(backend):
    a = metric_inputs()
    grav_o_rd = 9.80665 / 287.04
    bounds = (0, NC, 0, NLEV)
    expected = metric_numpy({k: v.copy() for k, v in a.items()}, grav_o_rd, bounds)
    hs, he, vs, ve = bounds
    metric_stencils(**a, grav_o_rd=grav_o_rd, horizontal_start=hs, horizontal_end=he,
                    vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=1e-12)


# ------------------------------------------------- velocity advection on edges (combined stencil)
#
# icon4py's combined edge stencil: chained comparisons of ``int32`` index fields
# (``nflatlev <= k < nlev``) and of ``dims.KDim``, ``concat_where`` selecting between
# a tuple-valued field operator reading a level up and a tuple of fields, an
# ``if``-expression on a ``bool`` scalar choosing between fields, ``broadcast``
# of a ``KField``, ``V2C`` sums with absent cells feeding an ``E2V`` difference,
# ``E2C2E`` with absent edges, and a domain ending at ``vertical_end - 1``
# followed by a one-level extrapolation at ``vertical_end - 1``.

dims.EdgeDim, dims.VertexDim, dims.E2C2EDim, dims.V2CDim = EdgeDim, VertexDim, E2C2EDim, V2CDim
dims.E2C, dims.E2V, dims.E2C2E, dims.V2C = E2C, E2V, E2C2E, V2C
fa.KField = Field[Dims[KDim], T]
fa.VertexField = Field[Dims[VertexDim], T]


@gtx.field_operator
def _compute_tangential_wind(
        vn: fa.EdgeKField[wpfloat],
        rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat]
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(rbf_vec_coeff_e * vn(dims.E2C2E), axis=dims.E2C2EDim)


@gtx.field_operator
def _interpolate_vn_to_ie_and_compute_ekin_on_edges(
        wgtfac_e: fa.EdgeKField[wpfloat], vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[wpfloat]
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    vn_ie = wgtfac_e * vn + (wpfloat("1.0") - wgtfac_e) * vn(dims.Koff[-1])
    z_kin_hor_e = wpfloat("0.5") * (vn * vn + vt * vt)
    return vn_ie, z_kin_hor_e


@gtx.field_operator
def _interpolate_vt_to_interface_edges(
        wgtfac_e: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    return wgtfac_e * vt + (wpfloat("1.0") - wgtfac_e) * vt(dims.Koff[-1])


@gtx.field_operator
def _compute_horizontal_kinetic_energy(
        vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[wpfloat]
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    return vn, vt, wpfloat("0.5") * (vn * vn + vt * vt)


@gtx.field_operator
def _compute_contravariant_correction(
        vn: fa.EdgeKField[wpfloat], ddxn_z_full: fa.EdgeKField[wpfloat],
        ddxt_z_full: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    return vn * ddxn_z_full + vt * ddxt_z_full


@gtx.field_operator
def _cells2verts_scalar(
        p_cell_in: fa.CellKField[wpfloat],
        c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat]
) -> Field[Dims[VertexDim, KDim], wpfloat]:
    return neighbor_sum(c_intp * p_cell_in(dims.V2C), axis=dims.V2CDim)


@gtx.field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
        vn_ie: fa.EdgeKField[wpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
        w: fa.CellKField[wpfloat], z_vt_ie: fa.EdgeKField[wpfloat],
        inv_primal_edge_length: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
        z_w_v: Field[Dims[VertexDim, KDim], wpfloat]) -> fa.EdgeKField[wpfloat]:
    return (vn_ie * inv_dual_edge_length * (w(dims.E2C[0]) - w(dims.E2C[1]))
            + z_vt_ie * inv_primal_edge_length * tangent_orientation
            * (z_w_v(dims.E2V[0]) - z_w_v(dims.E2V[1])))


@gtx.field_operator
def _extrapolate_at_top(wgtfacq_e: fa.EdgeKField[wpfloat],
                        vn: fa.EdgeKField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    return (wgtfacq_e(dims.Koff[-1]) * vn(dims.Koff[-1])
            + wgtfacq_e(dims.Koff[-2]) * vn(dims.Koff[-2])
            + wgtfacq_e(dims.Koff[-3]) * vn(dims.Koff[-3]))


@gtx.field_operator
def _interface_winds_and_kinetic_energy(
        vn: fa.EdgeKField[wpfloat], wgtfac_e: fa.EdgeKField[wpfloat],
        khalf_tangential_wind: fa.EdgeKField[wpfloat], tangential_wind: fa.EdgeKField[wpfloat],
        khalf_vn: fa.EdgeKField[wpfloat], horizontal_kinetic_energy_at_edge: fa.EdgeKField[wpfloat],
        nlev: gtx.int32, skip_compute_predictor_vertical_advection: bool
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    khalf_vn, horizontal_kinetic_energy_at_edge = concat_where(
        1 <= dims.KDim < nlev,
        _interpolate_vn_to_ie_and_compute_ekin_on_edges(wgtfac_e, vn, tangential_wind),
        (khalf_vn, horizontal_kinetic_energy_at_edge))
    khalf_tangential_wind = (
        concat_where(1 <= dims.KDim < nlev,
                     _interpolate_vt_to_interface_edges(wgtfac_e, tangential_wind),
                     khalf_tangential_wind)
        if not skip_compute_predictor_vertical_advection
        else khalf_tangential_wind)
    (khalf_vn, khalf_tangential_wind, horizontal_kinetic_energy_at_edge) = concat_where(
        dims.KDim == 0, _compute_horizontal_kinetic_energy(vn, tangential_wind),
        (khalf_vn, khalf_tangential_wind, horizontal_kinetic_energy_at_edge))
    return khalf_vn, khalf_tangential_wind, horizontal_kinetic_energy_at_edge


@gtx.field_operator
def _compute_vt_and_khalf_winds_and_horizontal_advection_of_w_and_contravariant_correction(
        tangential_wind: fa.EdgeKField[wpfloat], khalf_tangential_wind: fa.EdgeKField[wpfloat],
        khalf_vn: fa.EdgeKField[wpfloat], horizontal_kinetic_energy_at_edge: fa.EdgeKField[wpfloat],
        contravariant_correction_at_edge: fa.EdgeKField[wpfloat],
        khalf_horizontal_advection_of_w_at_edge: fa.EdgeKField[wpfloat],
        vn: fa.EdgeKField[wpfloat], w: fa.CellKField[wpfloat],
        rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
        wgtfac_e: fa.EdgeKField[wpfloat], ddxn_z_full: fa.EdgeKField[wpfloat],
        ddxt_z_full: fa.EdgeKField[wpfloat],
        c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
        inv_dual_edge_length: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
        tangent_orientation: fa.EdgeField[wpfloat],
        skip_compute_predictor_vertical_advection: bool, k: fa.KField[gtx.int32],
        edge: fa.EdgeField[gtx.int32], nflatlev: gtx.int32, nlev: gtx.int32,
        lateral_boundary_7: gtx.int32, halo_1: gtx.int32
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat],
           fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    tangential_wind = where(k < nlev, _compute_tangential_wind(vn, rbf_vec_coeff_e),
                            tangential_wind)
    (khalf_vn, khalf_tangential_wind,
     horizontal_kinetic_energy_at_edge) = _interface_winds_and_kinetic_energy(
        vn, wgtfac_e, khalf_tangential_wind, tangential_wind, khalf_vn,
        horizontal_kinetic_energy_at_edge, nlev, skip_compute_predictor_vertical_advection)
    contravariant_correction_at_edge = where(
        nflatlev <= k < nlev,
        _compute_contravariant_correction(vn, ddxn_z_full, ddxt_z_full, tangential_wind),
        contravariant_correction_at_edge)
    k = broadcast(k, (dims.EdgeDim, dims.KDim))
    khalf_w_at_vertex = _cells2verts_scalar(w, c_intp)
    khalf_horizontal_advection_of_w_at_edge = (
        where((lateral_boundary_7 <= edge) & (edge < halo_1) & (k < nlev),
              _compute_horizontal_advection_term_for_vertical_velocity(
                  khalf_vn, inv_dual_edge_length, w, khalf_tangential_wind,
                  inv_primal_edge_length, tangent_orientation, khalf_w_at_vertex),
              khalf_horizontal_advection_of_w_at_edge)
        if not skip_compute_predictor_vertical_advection
        else khalf_horizontal_advection_of_w_at_edge)
    return (tangential_wind, khalf_tangential_wind, khalf_vn, horizontal_kinetic_energy_at_edge,
            contravariant_correction_at_edge, khalf_horizontal_advection_of_w_at_edge)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_vt_and_khalf_winds_and_horizontal_advection_of_w_and_contravariant_correction(
        tangential_wind: fa.EdgeKField[wpfloat], khalf_tangential_wind: fa.EdgeKField[wpfloat],
        khalf_vn: fa.EdgeKField[wpfloat], horizontal_kinetic_energy_at_edge: fa.EdgeKField[wpfloat],
        contravariant_correction_at_edge: fa.EdgeKField[wpfloat],
        khalf_horizontal_advection_of_w_at_edge: fa.EdgeKField[wpfloat],
        vn: fa.EdgeKField[wpfloat], w: fa.CellKField[wpfloat],
        rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
        wgtfac_e: fa.EdgeKField[wpfloat], ddxn_z_full: fa.EdgeKField[wpfloat],
        ddxt_z_full: fa.EdgeKField[wpfloat], wgtfacq_e: fa.EdgeKField[wpfloat],
        c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
        inv_dual_edge_length: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
        tangent_orientation: fa.EdgeField[wpfloat],
        skip_compute_predictor_vertical_advection: bool, k: fa.KField[gtx.int32],
        edge: fa.EdgeField[gtx.int32], nflatlev: gtx.int32, nlev: gtx.int32,
        lateral_boundary_7: gtx.int32, halo_1: gtx.int32, horizontal_start: gtx.int32,
        horizontal_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32):
    _compute_vt_and_khalf_winds_and_horizontal_advection_of_w_and_contravariant_correction(
        tangential_wind, khalf_tangential_wind, khalf_vn, horizontal_kinetic_energy_at_edge,
        contravariant_correction_at_edge, khalf_horizontal_advection_of_w_at_edge, vn, w,
        rbf_vec_coeff_e, wgtfac_e, ddxn_z_full, ddxt_z_full, c_intp, inv_dual_edge_length,
        inv_primal_edge_length, tangent_orientation, skip_compute_predictor_vertical_advection,
        k, edge, nflatlev, nlev, lateral_boundary_7, halo_1,
        out=(tangential_wind, khalf_tangential_wind, khalf_vn, horizontal_kinetic_energy_at_edge,
             contravariant_correction_at_edge, khalf_horizontal_advection_of_w_at_edge),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _extrapolate_at_top(wgtfacq_e, vn, out=khalf_vn,
                        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                                dims.KDim: (vertical_end - 1, vertical_end)})


def velocity_inputs():
    return dict(
        tangential_wind=np.full((NE, NLEV), 1.0),
        khalf_tangential_wind=np.full((NE, NLEV + 1), 2.0), khalf_vn=np.full((NE, NLEV + 1), 3.0),
        horizontal_kinetic_energy_at_edge=np.full((NE, NLEV), 4.0),
        contravariant_correction_at_edge=np.full((NE, NLEV), 5.0),
        khalf_horizontal_advection_of_w_at_edge=np.full((NE, NLEV), 6.0),
        vn=wp(NE, NLEV), w=wp(NC, NLEV + 1), rbf_vec_coeff_e=wp(NE, 4) - 0.5,
        wgtfac_e=wp(NE, NLEV + 1), ddxn_z_full=wp(NE, NLEV), ddxt_z_full=wp(NE, NLEV),
        wgtfacq_e=wp(NE, NLEV), c_intp=wp(NV, 6), inv_dual_edge_length=wp(NE),
        inv_primal_edge_length=wp(NE), tangent_orientation=np.where(wp(NE) < 0.5, -1.0, 1.0),
        k=np.arange(NLEV + 1, dtype=np.int32), edge=np.arange(NE, dtype=np.int32))


def nb_sum(weights, field, tab):
    """sum over j of weights[:, j] * field[tab[:, j]], absent (-1) neighbours skipped."""
    present = (tab >= 0)[:, :, None]
    return np.where(present, weights[:, :, None] * field[np.where(tab >= 0, tab, 0)], 0.0).sum(1)


def velocity_numpy(a, skip, nflatlev, lb7, halo_1, bounds):
    hs, he, vs, ve = bounds
    e2c, e2v = TABLES["E2C"], TABLES["E2V"]
    vn, wf = a["vn"], a["wgtfac_e"]
    vt = nb_sum(a["rbf_vec_coeff_e"], vn, TABLES["E2C2E"])
    ekin = 0.5 * (vn * vn + vt * vt)
    khalf_vn = a["khalf_vn"].copy()
    khalf_vt = a["khalf_tangential_wind"].copy()
    khalf_vn[:, 0], khalf_vt[:, 0] = vn[:, 0], vt[:, 0]
    khalf_vn[:, 1:NLEV] = wf[:, 1:NLEV] * vn[:, 1:] + (1.0 - wf[:, 1:NLEV]) * vn[:, :-1]
    if not skip:
        khalf_vt[:, 1:NLEV] = wf[:, 1:NLEV] * vt[:, 1:] + (1.0 - wf[:, 1:NLEV]) * vt[:, :-1]
    concorr = a["contravariant_correction_at_edge"].copy()
    concorr[:, nflatlev:] = (vn * a["ddxn_z_full"] + vt * a["ddxt_z_full"])[:, nflatlev:]
    w_at_vertex = nb_sum(a["c_intp"], a["w"], TABLES["V2C"])
    hadv = a["khalf_horizontal_advection_of_w_at_edge"].copy()
    if not skip:
        term = (khalf_vn[:, :NLEV] * a["inv_dual_edge_length"][:, None]
                * (a["w"][e2c[:, 0], :NLEV] - a["w"][e2c[:, 1], :NLEV])
                + khalf_vt[:, :NLEV]
                * (a["inv_primal_edge_length"] * a["tangent_orientation"])[:, None]
                * (w_at_vertex[e2v[:, 0], :NLEV] - w_at_vertex[e2v[:, 1], :NLEV]))
        hadv[lb7:halo_1] = term[lb7:halo_1]
    top = khalf_vn.copy()
    top[:, NLEV] = sum(a["wgtfacq_e"][:, NLEV - j] * vn[:, NLEV - j] for j in (1, 2, 3))
    rows = slice(hs, he)
    expected = {}
    for name, new in (("tangential_wind", vt), ("khalf_tangential_wind", khalf_vt),
                      ("khalf_vn", top), ("horizontal_kinetic_energy_at_edge", ekin),
                      ("contravariant_correction_at_edge", concorr),
                      ("khalf_horizontal_advection_of_w_at_edge", hadv)):
        out = a[name].copy()
        levels = slice(vs, ve if name == "khalf_vn" else ve - 1)
        out[rows, levels] = new[rows, levels]
        expected[name] = out
    return expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("skip", [False, True])
def test_velocity_advection_on_edges(backend, skip):
    a = velocity_inputs()
    nflatlev, lb7, halo_1 = 2, 3, NE - 2
    bounds = (1, NE - 1, 0, NLEV + 1)
    expected = velocity_numpy({k: v.copy() for k, v in a.items()}, skip, nflatlev, lb7, halo_1,
                              bounds)
    hs, he, vs, ve = bounds
    compute_vt_and_khalf_winds_and_horizontal_advection_of_w_and_contravariant_correction(
        **a, skip_compute_predictor_vertical_advection=skip, nflatlev=nflatlev, nlev=NLEV,
        lateral_boundary_7=lb7, halo_1=halo_1, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=1e-12)


# ------------------------------------------------- diffusion
#
# The diffusion of vn picks, by a ``bool`` scalar, between two ``concat_where``s
# on the edge dimension at a runtime nudging line; the fourth-order Laplacian
# reads vertex fields through ``E2C2V`` slots times a sparse field's slots
# ``primal_normal_vert_v1[E2C2VDim(0)]``; ``astype`` casts a scalar; the
# Laplacian of theta nests an ``E2C`` difference inside a ``C2E`` sum with
# strided ``C2CE`` coefficients.

dims.E2C2VDim, dims.E2C2V, dims.CEDim, dims.C2CE = E2C2VDim, E2C2V, CEDim, C2CE
fa.VertexKField = Field[Dims[VertexDim, KDim], T]


@gtx.field_operator
def _calculate_nabla4(
        u_vert: fa.VertexKField[vpfloat], v_vert: fa.VertexKField[vpfloat],
        primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], inv_vert_vert_length: fa.EdgeField[wpfloat],
        inv_primal_edge_length: fa.EdgeField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    u, v = astype((u_vert, v_vert), wpfloat)
    nabv_tang = (u(dims.E2C2V[0]) * primal_normal_vert_v1[dims.E2C2VDim(0)]
                 + v(dims.E2C2V[0]) * primal_normal_vert_v2[dims.E2C2VDim(0)]
                 + u(dims.E2C2V[1]) * primal_normal_vert_v1[dims.E2C2VDim(1)]
                 + v(dims.E2C2V[1]) * primal_normal_vert_v2[dims.E2C2VDim(1)])
    nabv_norm = (u(dims.E2C2V[2]) * primal_normal_vert_v1[dims.E2C2VDim(2)]
                 + v(dims.E2C2V[2]) * primal_normal_vert_v2[dims.E2C2VDim(2)]
                 + u(dims.E2C2V[3]) * primal_normal_vert_v1[dims.E2C2VDim(3)]
                 + v(dims.E2C2V[3]) * primal_normal_vert_v2[dims.E2C2VDim(3)])
    return wpfloat("4.0") * (
        (nabv_norm - wpfloat("2.0") * z_nabla2_e) * (inv_vert_vert_length * inv_vert_vert_length)
        + (nabv_tang - wpfloat("2.0") * z_nabla2_e)
        * (inv_primal_edge_length * inv_primal_edge_length))


@gtx.field_operator
def _apply_nabla2_and_nabla4_to_vn(
        area_edge: fa.EdgeField[wpfloat], kh_smag_e: fa.EdgeKField[vpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], z_nabla4_e2: fa.EdgeKField[wpfloat],
        diff_multfac_vn: fa.KField[wpfloat], nudgecoeff_e: fa.EdgeField[wpfloat],
        vn: fa.EdgeKField[wpfloat], nudgezone_diff: vpfloat) -> fa.EdgeKField[wpfloat]:
    kh = maximum(astype(nudgezone_diff, wpfloat) * nudgecoeff_e, astype(kh_smag_e, wpfloat))
    return vn + area_edge * (kh * z_nabla2_e - diff_multfac_vn * z_nabla4_e2 * area_edge)


@gtx.field_operator
def _apply_nabla2_to_vn_in_lateral_boundary(
        z_nabla2_e: fa.EdgeKField[wpfloat], area_edge: fa.EdgeField[wpfloat],
        vn: fa.EdgeKField[wpfloat], fac_bdydiff_v: wpfloat) -> fa.EdgeKField[wpfloat]:
    return vn + z_nabla2_e * area_edge * fac_bdydiff_v


@gtx.field_operator
def _apply_nabla2_and_nabla4_global_to_vn(
        area_edge: fa.EdgeField[wpfloat], kh_smag_e: fa.EdgeKField[vpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], z_nabla4_e2: fa.EdgeKField[wpfloat],
        diff_multfac_vn: fa.KField[wpfloat], vn: fa.EdgeKField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    return vn + area_edge * (astype(kh_smag_e, wpfloat) * z_nabla2_e
                             - diff_multfac_vn * z_nabla4_e2 * area_edge)


@gtx.field_operator
def _apply_diffusion_to_vn(
        u_vert: fa.VertexKField[vpfloat], v_vert: fa.VertexKField[vpfloat],
        primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], inv_vert_vert_length: fa.EdgeField[wpfloat],
        inv_primal_edge_length: fa.EdgeField[wpfloat], area_edge: fa.EdgeField[wpfloat],
        kh_smag_e: fa.EdgeKField[vpfloat], diff_multfac_vn: fa.KField[wpfloat],
        nudgecoeff_e: fa.EdgeField[wpfloat], vn: fa.EdgeKField[wpfloat], nudgezone_diff: vpfloat,
        fac_bdydiff_v: wpfloat, start_2nd_nudge_line_idx_e: gtx.int32,
        limited_area: bool) -> fa.EdgeKField[wpfloat]:
    z_nabla4_e2 = _calculate_nabla4(u_vert, v_vert, primal_normal_vert_v1, primal_normal_vert_v2,
                                    z_nabla2_e, inv_vert_vert_length, inv_primal_edge_length)
    return (
        concat_where(
            dims.EdgeDim >= start_2nd_nudge_line_idx_e,
            _apply_nabla2_and_nabla4_to_vn(area_edge, kh_smag_e, z_nabla2_e, z_nabla4_e2,
                                           diff_multfac_vn, nudgecoeff_e, vn, nudgezone_diff),
            _apply_nabla2_to_vn_in_lateral_boundary(z_nabla2_e, area_edge, vn, fac_bdydiff_v))
        if limited_area
        else concat_where(
            dims.EdgeDim >= start_2nd_nudge_line_idx_e,
            _apply_nabla2_and_nabla4_global_to_vn(area_edge, kh_smag_e, z_nabla2_e, z_nabla4_e2,
                                                  diff_multfac_vn, vn),
            vn))


@gtx.field_operator
def _calculate_nabla2_for_z(kh_smag_e: fa.EdgeKField[vpfloat],
                            inv_dual_edge_length: fa.EdgeField[wpfloat],
                            theta_v: fa.CellKField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    return (astype(kh_smag_e, wpfloat) * inv_dual_edge_length
            * (theta_v(dims.E2C[1]) - theta_v(dims.E2C[0])))


@gtx.field_operator
def _calculate_nabla2_for_theta(
        kh_smag_e: fa.EdgeKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
        theta_v: fa.CellKField[wpfloat],
        geofac_div: gtx.Field[gtx.Dims[dims.CEDim], wpfloat]) -> fa.CellKField[vpfloat]:
    z_nabla2_e = _calculate_nabla2_for_z(kh_smag_e, inv_dual_edge_length, theta_v)
    return _calculate_nabla2_of_theta(z_nabla2_e, geofac_div)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def diffusion_stencils(
        u_vert: fa.VertexKField[vpfloat], v_vert: fa.VertexKField[vpfloat],
        primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], inv_vert_vert_length: fa.EdgeField[wpfloat],
        inv_primal_edge_length: fa.EdgeField[wpfloat], area_edge: fa.EdgeField[wpfloat],
        kh_smag_e: fa.EdgeKField[vpfloat], diff_multfac_vn: fa.KField[wpfloat],
        nudgecoeff_e: fa.EdgeField[wpfloat], vn: fa.EdgeKField[wpfloat], nudgezone_diff: vpfloat,
        fac_bdydiff_v: wpfloat, start_2nd_nudge_line_idx_e: gtx.int32, limited_area: bool,
        inv_dual_edge_length: fa.EdgeField[wpfloat], theta_v: fa.CellKField[wpfloat],
        geofac_div: gtx.Field[gtx.Dims[dims.CEDim], wpfloat], z_temp: fa.CellKField[vpfloat],
        horizontal_start: gtx.int32, horizontal_end: gtx.int32, cell_start: gtx.int32,
        cell_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32):
    _apply_diffusion_to_vn(
        u_vert, v_vert, primal_normal_vert_v1, primal_normal_vert_v2, z_nabla2_e,
        inv_vert_vert_length, inv_primal_edge_length, area_edge, kh_smag_e, diff_multfac_vn,
        nudgecoeff_e, vn, nudgezone_diff, fac_bdydiff_v, start_2nd_nudge_line_idx_e, limited_area,
        out=vn, domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                        dims.KDim: (vertical_start, vertical_end)})
    _calculate_nabla2_for_theta(
        kh_smag_e, inv_dual_edge_length, theta_v, geofac_div, out=z_temp,
        domain={dims.CellDim: (cell_start, cell_end), dims.KDim: (vertical_start, vertical_end)})


def diffusion_inputs():
    return dict(
        u_vert=vp(NV, NLEV), v_vert=vp(NV, NLEV), primal_normal_vert_v1=wp(NE, 4) - 0.5,
        primal_normal_vert_v2=wp(NE, 4) - 0.5, z_nabla2_e=wp(NE, NLEV),
        inv_vert_vert_length=wp(NE), inv_primal_edge_length=wp(NE), area_edge=wp(NE),
        kh_smag_e=vp(NE, NLEV), diff_multfac_vn=wp(NLEV), nudgecoeff_e=wp(NE), vn=wp(NE, NLEV),
        inv_dual_edge_length=wp(NE), theta_v=wp(NC, NLEV), geofac_div=wp(NC * 3) - 0.5,
        z_temp=np.full((NC, NLEV), 3.0, f32))


def diffusion_numpy(a, s, bounds, cells):
    hs, he, vs, ve = bounds
    e2c2v, e2c, c2e = TABLES["E2C2V"], TABLES["E2C"], TABLES["C2E"]
    u, v = a["u_vert"].astype(f64), a["v_vert"].astype(f64)
    p1, p2 = a["primal_normal_vert_v1"], a["primal_normal_vert_v2"]

    def slot(j):
        return u[e2c2v[:, j]] * p1[:, j:j + 1] + v[e2c2v[:, j]] * p2[:, j:j + 1]

    nabla2 = a["z_nabla2_e"]
    nabla4 = 4.0 * ((slot(2) + slot(3) - 2.0 * nabla2) * (a["inv_vert_vert_length"] ** 2)[:, None]
                    + (slot(0) + slot(1) - 2.0 * nabla2)
                    * (a["inv_primal_edge_length"] ** 2)[:, None])
    area = a["area_edge"][:, None]
    kh = a["kh_smag_e"].astype(f64)
    vn = a["vn"]
    line = s["start_2nd_nudge_line_idx_e"]
    inner = np.arange(NE)[:, None] >= line
    if s["limited_area"]:
        nudge = f64(f32(s["nudgezone_diff"]))
        kh_nudge = np.maximum(nudge * a["nudgecoeff_e"][:, None], kh)
        inside_line = vn + area * (kh_nudge * nabla2 - a["diff_multfac_vn"] * nabla4 * area)
        new = np.where(inner, inside_line, vn + nabla2 * area * s["fac_bdydiff_v"])
    else:
        new = np.where(inner, vn + area * (kh * nabla2 - a["diff_multfac_vn"] * nabla4 * area), vn)
    nabla2_e = kh * a["inv_dual_edge_length"][:, None] * (a["theta_v"][e2c[:, 1]]
                                                         - a["theta_v"][e2c[:, 0]])
    theta = (nabla2_e[c2e] * a["geofac_div"].reshape(NC, 3)[:, :, None]).sum(1)
    return dict(vn=inside(new, vn, *bounds),
                z_temp=inside(theta, a["z_temp"], cells[0], cells[1], vs, ve))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("limited_area", [True, False])
def test_diffusion_stencils(backend, limited_area):
    a = diffusion_inputs()
    s = dict(nudgezone_diff=f32(0.04), fac_bdydiff_v=0.3, start_2nd_nudge_line_idx_e=5,
             limited_area=limited_area)
    bounds, cells = (2, NE - 1, 1, NLEV), (1, NC - 1)
    expected = diffusion_numpy({k: v.copy() for k, v in a.items()}, s, bounds, cells)
    hs, he, vs, ve = bounds
    diffusion_stencils(**a, **s, horizontal_start=hs, horizontal_end=he, cell_start=cells[0],
                       cell_end=cells[1], vertical_start=vs, vertical_end=ve,
                       offset_provider=TABLES, backend=backend)
    check(a, {"vn": expected["vn"]}, rtol=1e-12)
    check(a, {"z_temp": expected["z_temp"]}, rtol=2e-5)


# ------------------------------------------------- interpolation coefficients
#
# Sparse results: the divergence and rotation coefficients are fields over
# ``(Cell, C2EDim)`` and ``(Vertex, V2EDim)``, the latter a ``where`` on a
# vertex mask over a ``V2E`` shift with absent edges (an absent slot holds an
# undefined value), written under a runtime vertex range.


@gtx.field_operator
def _compute_geofac_div(
        primal_edge_length: fa.EdgeField[wpfloat],
        edge_orientation: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
        area: fa.CellField[wpfloat]) -> gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat]:
    return primal_edge_length(dims.C2E) * edge_orientation / area


@gtx.field_operator
def _compute_geofac_rot(
        dual_edge_length: fa.EdgeField[wpfloat],
        edge_orientation: gtx.Field[gtx.Dims[VertexDim, V2EDim], wpfloat],
        dual_area: fa.VertexField[wpfloat], owner_mask: fa.VertexField[bool]
) -> gtx.Field[gtx.Dims[VertexDim, V2EDim], wpfloat]:
    return where(owner_mask, dual_edge_length(V2E) * edge_orientation / dual_area, 0.0)


@gtx.program
def interpolation_coefficients(
        primal_edge_length: fa.EdgeField[wpfloat],
        cell_edge_orientation: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
        area: fa.CellField[wpfloat],
        geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
        dual_edge_length: fa.EdgeField[wpfloat],
        vertex_edge_orientation: gtx.Field[gtx.Dims[VertexDim, V2EDim], wpfloat],
        dual_area: fa.VertexField[wpfloat], owner_mask: fa.VertexField[bool],
        geofac_rot: gtx.Field[gtx.Dims[VertexDim, V2EDim], wpfloat],
        vertex_start: gtx.int32, vertex_end: gtx.int32):
    _compute_geofac_div(primal_edge_length, cell_edge_orientation, area, out=geofac_div)
    _compute_geofac_rot(dual_edge_length, vertex_edge_orientation, dual_area, owner_mask,
                        out=geofac_rot, domain={VertexDim: (vertex_start, vertex_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolation_coefficients(backend):
    c2e, v2e = TABLES["C2E"], TABLES["V2E"]
    a = dict(primal_edge_length=wp(NE), cell_edge_orientation=np.where(wp(NC, 3) < 0.5, -1.0, 1.0),
             area=wp(NC) + 0.5, geofac_div=np.full((NC, 3), 3.0), dual_edge_length=wp(NE),
             vertex_edge_orientation=np.where(wp(NV, 6) < 0.5, -1.0, 1.0),
             dual_area=wp(NV) + 0.5, owner_mask=wp(NV) < 0.7, geofac_rot=np.full((NV, 6), 4.0))
    vs, ve = 1, NV - 1
    interpolation_coefficients(**a, vertex_start=vs, vertex_end=ve, offset_provider=TABLES,
                               backend=backend)
    np.testing.assert_allclose(
        a["geofac_div"], a["primal_edge_length"][c2e] * a["cell_edge_orientation"]
        / a["area"][:, None], rtol=1e-14)
    rot = np.where(a["owner_mask"][:, None],
                   a["dual_edge_length"][v2e] * a["vertex_edge_orientation"]
                   / a["dual_area"][:, None], 0.0)
    present = v2e >= 0
    present[:vs] = present[ve:] = False
    np.testing.assert_allclose(a["geofac_rot"][present], rot[present], rtol=1e-14)
    untouched = np.ones((NV, 6), bool)
    untouched[vs:ve] = False
    assert (a["geofac_rot"][untouched] == 4.0).all()


# ------------------------------------------------- velocity advection on cells
#
# ``where`` on a ``KField[int32]`` of level indices (``k >= nflatlev``,
# ``nflatlev + 1 <= k < nlev``, ``k == nlev``) with ``broadcast(vpfloat("0.0"),
# (dims.CellDim, dims.KDim))`` and literal branches, single precision, the
# half-level result of the first call read by the second call of the program.
# The first call reads a level up in its ``where``'s first branch, so its range
# starts at level 1 here (see the module's docstring).


@gtx.field_operator
def _interpolate_to_cell_center(
        interpolant: fa.EdgeKField[vpfloat],
        e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat]) -> fa.CellKField[vpfloat]:
    interpolation_wp = neighbor_sum(e_bln_c_s(dims.C2CE) * astype(interpolant(dims.C2E), wpfloat),
                                    axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _interpolate_to_half_levels_vp(wgtfac_c: fa.CellKField[vpfloat],
                                   interpolant: fa.CellKField[vpfloat]) -> fa.CellKField[vpfloat]:
    return wgtfac_c * interpolant + (vpfloat("1.0") - wgtfac_c) * interpolant(dims.Koff[-1])


@gtx.field_operator
def _correct_contravariant_vertical_velocity(
        z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat]
) -> fa.CellKField[vpfloat]:
    return z_w_con_c - w_concorr_c


@gtx.field_operator
def _compute_horizontal_kinetic_energy_and_khalf_contravariant_correction(
        horizontal_kinetic_energy_at_edge: fa.EdgeKField[vpfloat],
        e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
        contravariant_correction_at_edge: fa.EdgeKField[vpfloat],
        wgtfac_c: fa.CellKField[vpfloat],
        khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
        horizontal_kinetic_energy_at_cell: fa.CellKField[vpfloat], k: fa.KField[gtx.int32],
        nflatlev: gtx.int32) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    horizontal_kinetic_energy_at_cell = _interpolate_to_cell_center(
        horizontal_kinetic_energy_at_edge, e_bln_c_s)
    contravariant_correction_at_cell = where(
        k >= nflatlev, _interpolate_to_cell_center(contravariant_correction_at_edge, e_bln_c_s),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)))
    khalf_contravariant_correction_at_cell = where(
        nflatlev + 1 <= k,
        _interpolate_to_half_levels_vp(wgtfac_c=wgtfac_c,
                                       interpolant=contravariant_correction_at_cell),
        khalf_contravariant_correction_at_cell)
    return horizontal_kinetic_energy_at_cell, khalf_contravariant_correction_at_cell


@gtx.field_operator
def _compute_khalf_contravariant_corrected_w(
        w: fa.CellKField[wpfloat], khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
        k: fa.KField[gtx.int32], nflatlev: gtx.int32, nlev: gtx.int32) -> fa.CellKField[vpfloat]:
    corrected = where(k < nlev, astype(w, vpfloat),
                      broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)))
    corrected = where(nflatlev + 1 <= k < nlev,
                      _correct_contravariant_vertical_velocity(
                          corrected, khalf_contravariant_correction_at_cell),
                      corrected)
    return where(k == nlev, 0.0, corrected)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_horizontal_kinetic_energy_and_khalf_contravariant_terms(
        horizontal_kinetic_energy_at_cell: fa.CellKField[vpfloat],
        khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
        khalf_contravariant_corrected_w_at_cell: fa.CellKField[vpfloat],
        w: fa.CellKField[wpfloat], horizontal_kinetic_energy_at_edge: fa.EdgeKField[vpfloat],
        contravariant_correction_at_edge: fa.EdgeKField[vpfloat],
        e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat], wgtfac_c: fa.CellKField[vpfloat],
        k: fa.KField[gtx.int32], nflatlev: gtx.int32, nlev: gtx.int32,
        horizontal_start: gtx.int32, horizontal_end: gtx.int32, vertical_start: gtx.int32,
        vertical_end: gtx.int32):
    _compute_horizontal_kinetic_energy_and_khalf_contravariant_correction(
        horizontal_kinetic_energy_at_edge, e_bln_c_s, contravariant_correction_at_edge, wgtfac_c,
        khalf_contravariant_correction_at_cell, horizontal_kinetic_energy_at_cell, k, nflatlev,
        out=(horizontal_kinetic_energy_at_cell, khalf_contravariant_correction_at_cell),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _compute_khalf_contravariant_corrected_w(
        w, khalf_contravariant_correction_at_cell, k, nflatlev, nlev,
        out=khalf_contravariant_corrected_w_at_cell,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_velocity_advection_on_cells(backend):
    a = dict(horizontal_kinetic_energy_at_cell=np.full((NC, NLEV), 1.0, f32),
             khalf_contravariant_correction_at_cell=np.full((NC, NLEV + 1), 2.0, f32),
             khalf_contravariant_corrected_w_at_cell=np.full((NC, NLEV + 1), 3.0, f32),
             w=wp(NC, NLEV + 1), horizontal_kinetic_energy_at_edge=vp(NE, NLEV),
             contravariant_correction_at_edge=vp(NE, NLEV), e_bln_c_s=wp(NC * 3),
             wgtfac_c=vp(NC, NLEV + 1), k=np.arange(NLEV + 1, dtype=np.int32))
    nflatlev = 2
    hs, he, vs, ve = 1, NC - 1, 1, NLEV + 1
    c2e, bln = TABLES["C2E"], a["e_bln_c_s"].reshape(NC, 3)[:, :, None]
    ekin = (bln * a["horizontal_kinetic_energy_at_edge"][c2e].astype(f64)).sum(1)
    cc = (bln * a["contravariant_correction_at_edge"][c2e].astype(f64)).sum(1).astype(f32)
    cc[:, :nflatlev] = 0.0
    wg = a["wgtfac_c"]
    khalf_cc = a["khalf_contravariant_correction_at_cell"].copy()
    khalf_cc[:, nflatlev + 1:NLEV] = (wg[:, nflatlev + 1:NLEV] * cc[:, nflatlev + 1:]
                                      + (1 - wg[:, nflatlev + 1:NLEV]) * cc[:, nflatlev:-1])
    corrected = a["w"].astype(f32)
    corrected[:, nflatlev + 1:NLEV] -= khalf_cc[:, nflatlev + 1:NLEV]
    corrected[:, NLEV] = 0.0
    expected = dict(
        horizontal_kinetic_energy_at_cell=inside(ekin, a["horizontal_kinetic_energy_at_cell"], hs,
                                                 he, vs, ve - 1),
        khalf_contravariant_correction_at_cell=inside(
            khalf_cc, a["khalf_contravariant_correction_at_cell"], hs, he, vs, ve - 1),
        khalf_contravariant_corrected_w_at_cell=inside(
            corrected, a["khalf_contravariant_corrected_w_at_cell"], hs, he, vs, ve))
    compute_horizontal_kinetic_energy_and_khalf_contravariant_terms(
        **a, nflatlev=nflatlev, nlev=NLEV, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=2e-5)


# ------------------------------------------------- dycore cell diagnostics
#
# From icon4py's cell diagnostics of the dynamical core: a field operator without
# arguments (two zero fields) as a ``concat_where`` branch, conditions combining
# cell ranges with a level bound ``maximum(1, nflatlev) <= dims.KDim``, choices
# on ``igradp_method == horzpres_discr_type.TAYLOR_HYDRO`` (an ``int32``
# parameter against a ``Final`` constant of a module-level object) and on a
# ``bool``, ``concat_where(dims.KDim == 0, broadcast(0.0, ...), ...)``, the surface
# level set from the three levels above it, and vertical derivatives of
# half-level fields from runtime levels on.  Double precision throughout
# (icon4py's default build).


class HorizontalPressureDiscretizationType:
    CONVENTIONAL: Final = 0
    TAYLOR: Final = 1
    TAYLOR_HYDRO: Final = 3


horzpres_discr_type: Final = HorizontalPressureDiscretizationType()


@gtx.field_operator
def _init_two_cell_kdim_fields_with_zero_wp() -> tuple[fa.CellKField[wpfloat],
                                                       fa.CellKField[wpfloat]]:
    return (broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)),
            broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim)))


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_wp(
        wgtfac_c: fa.CellKField[wpfloat], interpolant: fa.CellKField[wpfloat]
) -> fa.CellKField[wpfloat]:
    return wgtfac_c * interpolant + (wpfloat("1.0") - wgtfac_c) * interpolant(dims.Koff[-1])


@gtx.field_operator
def _interpolate_to_surface(wgtfacq_c: fa.CellKField[wpfloat],
                            interpolant: fa.CellKField[wpfloat]) -> fa.CellKField[wpfloat]:
    return (wgtfacq_c(dims.Koff[-1]) * interpolant(dims.Koff[-1])
            + wgtfacq_c(dims.Koff[-2]) * interpolant(dims.Koff[-2])
            + wgtfacq_c(dims.Koff[-3]) * interpolant(dims.Koff[-3]))


@gtx.field_operator
def _compute_perturbation_of_rho_and_theta(
        rho: fa.CellKField[wpfloat], rho_ref_mc: fa.CellKField[wpfloat],
        theta_v: fa.CellKField[wpfloat], theta_ref_mc: fa.CellKField[wpfloat]
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    return rho - rho_ref_mc, theta_v - theta_ref_mc


@gtx.field_operator
def _compute_first_vertical_derivative_at_cells(
        cell_kdim_field: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[wpfloat]
) -> fa.CellKField[wpfloat]:
    return (cell_kdim_field - cell_kdim_field(dims.Koff[1])) * inv_ddqz_z_full


@gtx.field_operator
def _perturbed_quantities_and_exner_interpolation(
        current_rho: fa.CellKField[wpfloat], reference_rho: fa.CellKField[wpfloat],
        current_theta_v: fa.CellKField[wpfloat], reference_theta: fa.CellKField[wpfloat],
        perturbed_rho: fa.CellKField[wpfloat], perturbed_theta_v: fa.CellKField[wpfloat],
        perturbed_theta_v_on_half_levels: fa.CellKField[wpfloat],
        wgtfac_c: fa.CellKField[wpfloat], exner_on_half_levels: fa.CellKField[wpfloat],
        temporal_extrapolation_of_perturbed_exner: fa.CellKField[wpfloat],
        limited_area: bool, igradp_method: gtx.int32, nflatlev: gtx.int32,
        start_cell_lateral_boundary: gtx.int32, start_cell_lateral_boundary_level_3: gtx.int32,
        start_cell_halo_level_2: gtx.int32, end_cell_end: gtx.int32, end_cell_halo: gtx.int32,
        end_cell_halo_level_2: gtx.int32
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat],
           fa.CellKField[wpfloat]]:
    (perturbed_rho, perturbed_theta_v) = (
        concat_where(
            (start_cell_lateral_boundary <= dims.CellDim) & (dims.CellDim < end_cell_end),
            _init_two_cell_kdim_fields_with_zero_wp(), (perturbed_rho, perturbed_theta_v))
        if limited_area
        else (perturbed_rho, perturbed_theta_v))
    exner_on_half_levels = (
        concat_where(
            (start_cell_lateral_boundary_level_3 <= dims.CellDim)
            & (dims.CellDim < end_cell_halo) & (maximum(1, nflatlev) <= dims.KDim),
            _interpolate_cell_field_to_half_levels_wp(
                wgtfac_c=wgtfac_c, interpolant=temporal_extrapolation_of_perturbed_exner),
            exner_on_half_levels)
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else exner_on_half_levels)
    perturbed_theta_v_on_half_levels = concat_where(
        dims.KDim == 0, broadcast(0.0, (dims.CellDim, dims.KDim)),
        perturbed_theta_v_on_half_levels)
    (perturbed_rho, perturbed_theta_v) = concat_where(
        (start_cell_halo_level_2 <= dims.CellDim) & (dims.CellDim < end_cell_halo_level_2),
        _compute_perturbation_of_rho_and_theta(rho=current_rho, rho_ref_mc=reference_rho,
                                               theta_v=current_theta_v,
                                               theta_ref_mc=reference_theta),
        (perturbed_rho, perturbed_theta_v))
    return perturbed_rho, perturbed_theta_v, exner_on_half_levels, perturbed_theta_v_on_half_levels


@gtx.field_operator
def _set_theta_v_and_exner_on_surface_level(
        temporal_extrapolation_of_perturbed_exner: fa.CellKField[wpfloat],
        wgtfacq_c: fa.CellKField[wpfloat], perturbed_theta_v: fa.CellKField[wpfloat],
        reference_theta_on_half_levels: fa.CellKField[wpfloat]
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    perturbed_theta_v_on_half_levels = _interpolate_to_surface(
        wgtfacq_c=wgtfacq_c, interpolant=perturbed_theta_v)
    theta_v_on_half_levels = reference_theta_on_half_levels + perturbed_theta_v_on_half_levels
    exner_on_half_levels = _interpolate_to_surface(
        wgtfacq_c=wgtfacq_c, interpolant=temporal_extrapolation_of_perturbed_exner)
    return (perturbed_theta_v_on_half_levels, astype(theta_v_on_half_levels, wpfloat),
            exner_on_half_levels)


@gtx.field_operator
def _compute_first_and_second_vertical_derivative_of_exner(
        exner_on_half_levels: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[wpfloat],
        ddz_of_exner: fa.CellKField[wpfloat], d2dz2_of_exner: fa.CellKField[wpfloat],
        perturbed_theta_v_on_half_levels: fa.CellKField[wpfloat],
        d2dexdz2_fac1_mc: fa.CellKField[wpfloat], d2dexdz2_fac2_mc: fa.CellKField[wpfloat],
        perturbed_theta_v: fa.CellKField[wpfloat], igradp_method: gtx.int32,
        nflatlev: gtx.int32, nflat_gradp: gtx.int32
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    ddz_of_exner = (
        concat_where(nflatlev <= dims.KDim,
                     _compute_first_vertical_derivative_at_cells(exner_on_half_levels,
                                                                 inv_ddqz_z_full),
                     ddz_of_exner)
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else ddz_of_exner)
    d2dz2_of_exner = (
        concat_where(
            nflat_gradp <= dims.KDim,
            -wpfloat("0.5") * ((perturbed_theta_v_on_half_levels
                                - perturbed_theta_v_on_half_levels(dims.Koff[1]))
                               * d2dexdz2_fac1_mc + perturbed_theta_v * d2dexdz2_fac2_mc),
            d2dz2_of_exner)
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else d2dz2_of_exner)
    return ddz_of_exner, d2dz2_of_exner


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def dycore_cell_diagnostics(
        current_rho: fa.CellKField[wpfloat], reference_rho: fa.CellKField[wpfloat],
        current_theta_v: fa.CellKField[wpfloat], reference_theta: fa.CellKField[wpfloat],
        perturbed_rho: fa.CellKField[wpfloat], perturbed_theta_v: fa.CellKField[wpfloat],
        perturbed_theta_v_on_half_levels: fa.CellKField[wpfloat],
        wgtfac_c: fa.CellKField[wpfloat], wgtfacq_c: fa.CellKField[wpfloat],
        exner_on_half_levels: fa.CellKField[wpfloat],
        temporal_extrapolation_of_perturbed_exner: fa.CellKField[wpfloat],
        reference_theta_on_half_levels: fa.CellKField[wpfloat],
        theta_v_on_half_levels: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[wpfloat],
        ddz_of_exner: fa.CellKField[wpfloat], d2dz2_of_exner: fa.CellKField[wpfloat],
        d2dexdz2_fac1_mc: fa.CellKField[wpfloat], d2dexdz2_fac2_mc: fa.CellKField[wpfloat],
        limited_area: bool, igradp_method: gtx.int32, nflatlev: gtx.int32,
        nflat_gradp: gtx.int32, start_cell_lateral_boundary: gtx.int32,
        start_cell_lateral_boundary_level_3: gtx.int32, start_cell_halo_level_2: gtx.int32,
        end_cell_end: gtx.int32, end_cell_halo: gtx.int32, end_cell_halo_level_2: gtx.int32,
        horizontal_start: gtx.int32, horizontal_end: gtx.int32, vertical_start: gtx.int32,
        vertical_end: gtx.int32):
    _perturbed_quantities_and_exner_interpolation(
        current_rho, reference_rho, current_theta_v, reference_theta, perturbed_rho,
        perturbed_theta_v, perturbed_theta_v_on_half_levels, wgtfac_c, exner_on_half_levels,
        temporal_extrapolation_of_perturbed_exner, limited_area, igradp_method, nflatlev,
        start_cell_lateral_boundary, start_cell_lateral_boundary_level_3,
        start_cell_halo_level_2, end_cell_end, end_cell_halo, end_cell_halo_level_2,
        out=(perturbed_rho, perturbed_theta_v, exner_on_half_levels,
             perturbed_theta_v_on_half_levels),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _set_theta_v_and_exner_on_surface_level(
        temporal_extrapolation_of_perturbed_exner, wgtfacq_c, perturbed_theta_v,
        reference_theta_on_half_levels,
        out=(perturbed_theta_v_on_half_levels, theta_v_on_half_levels, exner_on_half_levels),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_end - 1, vertical_end)})
    _compute_first_and_second_vertical_derivative_of_exner(
        exner_on_half_levels, inv_ddqz_z_full, ddz_of_exner, d2dz2_of_exner,
        perturbed_theta_v_on_half_levels, d2dexdz2_fac1_mc, d2dexdz2_fac2_mc, perturbed_theta_v,
        igradp_method, nflatlev, nflat_gradp, out=(ddz_of_exner, d2dz2_of_exner),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})


def dycore_cell_numpy(a, s, bounds):
    hs, he, vs, ve = bounds
    rows = slice(hs, he)
    L = NLEV
    rho_pr, th_pr = a["perturbed_rho"].copy(), a["perturbed_theta_v"].copy()
    exner_ic = a["exner_on_half_levels"].copy()
    th_pr_ic = a["perturbed_theta_v_on_half_levels"].copy()
    new_rho, new_th = rho_pr.copy(), th_pr.copy()
    if s["limited_area"]:
        new_rho[s["start_cell_lateral_boundary"]:s["end_cell_end"]] = 0.0
        new_th[s["start_cell_lateral_boundary"]:s["end_cell_end"]] = 0.0
    new_exner = exner_ic.copy()
    taylor = s["igradp_method"] == 3
    if taylor:
        lo = max(1, s["nflatlev"])
        cells = slice(s["start_cell_lateral_boundary_level_3"], s["end_cell_halo"])
        wg, ex = a["wgtfac_c"], a["temporal_extrapolation_of_perturbed_exner"]
        half = wg[:, 1:L] * ex[:, 1:] + (1.0 - wg[:, 1:L]) * ex[:, :-1]    # levels 1..L-1
        new_exner[cells, lo:L] = half[cells, lo - 1:]
    new_th_ic = th_pr_ic.copy()
    new_th_ic[:, 0] = 0.0
    halo = slice(s["start_cell_halo_level_2"], s["end_cell_halo_level_2"])
    new_rho[halo] = (a["current_rho"] - a["reference_rho"])[halo]
    new_th[halo] = (a["current_theta_v"] - a["reference_theta"])[halo]
    for arr, new in ((rho_pr, new_rho), (th_pr, new_th), (exner_ic, new_exner),
                     (th_pr_ic, new_th_ic)):
        arr[rows, vs:ve - 1] = new[rows, vs:ve - 1]
    wq = a["wgtfacq_c"]
    surface_th = sum(wq[:, L - j] * th_pr[:, L - j] for j in (1, 2, 3))
    surface_ex = sum(wq[:, L - j] * a["temporal_extrapolation_of_perturbed_exner"][:, L - j]
                     for j in (1, 2, 3))
    theta_v_ic = a["theta_v_on_half_levels"].copy()
    th_pr_ic[rows, L] = surface_th[rows]
    theta_v_ic[rows, L] = (a["reference_theta_on_half_levels"][:, L] + surface_th)[rows]
    exner_ic[rows, L] = surface_ex[rows]
    ddz, d2 = a["ddz_of_exner"].copy(), a["d2dz2_of_exner"].copy()
    if taylor:
        new_ddz = (exner_ic[:, :L] - exner_ic[:, 1:]) * a["inv_ddqz_z_full"]
        new_d2 = -0.5 * ((th_pr_ic[:, :L] - th_pr_ic[:, 1:]) * a["d2dexdz2_fac1_mc"]
                         + th_pr * a["d2dexdz2_fac2_mc"])
        lo1, lo2 = max(vs, s["nflatlev"]), max(vs, s["nflat_gradp"])
        ddz[rows, lo1:ve - 1] = new_ddz[rows, lo1:ve - 1]
        d2[rows, lo2:ve - 1] = new_d2[rows, lo2:ve - 1]
    return dict(perturbed_rho=rho_pr, perturbed_theta_v=th_pr, exner_on_half_levels=exner_ic,
                perturbed_theta_v_on_half_levels=th_pr_ic, theta_v_on_half_levels=theta_v_ic,
                ddz_of_exner=ddz, d2dz2_of_exner=d2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("limited_area,igradp_method,nflatlev",
                         [(True, 3, 0), (False, 3, 3), (True, 1, 2)])
def test_dycore_cell_diagnostics(backend, limited_area, igradp_method, nflatlev):
    half, full = (NC, NLEV + 1), (NC, NLEV)
    a = dict(current_rho=wp(*full), reference_rho=wp(*full), current_theta_v=wp(*full),
             reference_theta=wp(*full), perturbed_rho=wp(*full), perturbed_theta_v=wp(*full),
             perturbed_theta_v_on_half_levels=wp(*half), wgtfac_c=wp(*half), wgtfacq_c=wp(*full),
             exner_on_half_levels=wp(*half), temporal_extrapolation_of_perturbed_exner=wp(*full),
             reference_theta_on_half_levels=wp(*half), theta_v_on_half_levels=wp(*half),
             inv_ddqz_z_full=wp(*full), ddz_of_exner=wp(*full), d2dz2_of_exner=wp(*full),
             d2dexdz2_fac1_mc=wp(*full), d2dexdz2_fac2_mc=wp(*full))
    s = dict(limited_area=limited_area, igradp_method=igradp_method, nflatlev=nflatlev,
             nflat_gradp=nflatlev + 1, start_cell_lateral_boundary=0,
             start_cell_lateral_boundary_level_3=2, start_cell_halo_level_2=6, end_cell_end=4,
             end_cell_halo=NC - 1, end_cell_halo_level_2=NC)
    bounds = (1, NC, 0, NLEV + 1)
    expected = dycore_cell_numpy({k: v.copy() for k, v in a.items()}, s, bounds)
    hs, he, vs, ve = bounds
    dycore_cell_diagnostics(**a, **s, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                            vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, expected, rtol=1e-12)


# ------------------------------------------------- divergence damping and the update of vn
#
# icon4py's corrector update of vn: Python ``if`` statements (nested) on ``bool``
# parameters reassigning a field, a physical constant read from a module-level
# namespace object (``dycore_consts.cpd``), keyword arguments throughout, and
# the gradient of a computed edge field gathered over ``E2C2EO`` with absent
# edges.


class _PhysicsConstants:
    cpd: Final = 1004.64
    rd: Final = 287.04


dycore_consts = _PhysicsConstants()
dims.E2C2EODim, dims.E2C2EO = E2C2EODim, E2C2EO


@gtx.field_operator
def _add_vertical_wind_derivative_to_divergence_damping(
        hmask_dd3d: fa.EdgeField[wpfloat], scalfac_dd3d: fa.KField[wpfloat],
        inv_dual_edge_length: fa.EdgeField[wpfloat], z_dwdz_dd: fa.CellKField[vpfloat],
        z_graddiv_vn: fa.EdgeKField[vpfloat]) -> fa.EdgeKField[vpfloat]:
    dwdz = astype(z_dwdz_dd(dims.E2C[1]) - z_dwdz_dd(dims.E2C[0]), wpfloat)
    return astype(astype(z_graddiv_vn, wpfloat)
                  + hmask_dd3d * scalfac_dd3d * inv_dual_edge_length * dwdz, vpfloat)


@gtx.field_operator
def _apply_2nd_order_divergence_damping(z_graddiv_vn: fa.EdgeKField[vpfloat],
                                        vn: fa.EdgeKField[wpfloat],
                                        scal_divdamp_o2: wpfloat) -> fa.EdgeKField[wpfloat]:
    return vn + scal_divdamp_o2 * astype(z_graddiv_vn, wpfloat)


@gtx.field_operator
def _compute_graddiv2_of_vn(
        geofac_grdiv: gtx.Field[[dims.EdgeDim, dims.E2C2EODim], wpfloat],
        z_graddiv_vn: fa.EdgeKField[vpfloat]) -> fa.EdgeKField[vpfloat]:
    return astype(neighbor_sum(astype(z_graddiv_vn(dims.E2C2EO), wpfloat) * geofac_grdiv,
                               axis=dims.E2C2EODim), vpfloat)


@gtx.field_operator
def _apply_weighted_2nd_and_4th_order_divergence_damping(
        scal_divdamp: fa.KField[wpfloat], bdy_divdamp: fa.KField[wpfloat],
        nudgecoeff_e: fa.EdgeField[wpfloat], z_graddiv2_vn: fa.EdgeKField[vpfloat],
        vn: fa.EdgeKField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    return vn + (scal_divdamp + bdy_divdamp * nudgecoeff_e) * astype(z_graddiv2_vn, wpfloat)


@gtx.field_operator
def _add_analysis_increments_to_vn(vn_incr: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
                                   iau_wgt_dyn: wpfloat) -> fa.EdgeKField[wpfloat]:
    return vn + iau_wgt_dyn * astype(vn_incr, wpfloat)


@gtx.field_operator
def _apply_divergence_damping_and_update_vn(
        horizontal_gradient_of_normal_wind_divergence: fa.EdgeKField[vpfloat],
        next_vn: fa.EdgeKField[wpfloat], current_vn: fa.EdgeKField[wpfloat],
        dwdz_at_cells_on_model_levels: fa.CellKField[vpfloat],
        predictor_normal_wind_advective_tendency: fa.EdgeKField[vpfloat],
        corrector_normal_wind_advective_tendency: fa.EdgeKField[vpfloat],
        normal_wind_tendency_due_to_slow_physics_process: fa.EdgeKField[vpfloat],
        normal_wind_iau_increment: fa.EdgeKField[vpfloat],
        reduced_fourth_order_divdamp_coeff_at_nest_boundary: fa.KField[wpfloat],
        fourth_order_divdamp_scaling_coeff: fa.KField[wpfloat],
        second_order_divdamp_scaling_coeff: wpfloat,
        theta_v_at_edges_on_model_levels: fa.EdgeKField[wpfloat],
        horizontal_pressure_gradient: fa.EdgeKField[vpfloat],
        horizontal_mask_for_3d_divdamp: fa.EdgeField[wpfloat],
        scaling_factor_for_3d_divdamp: fa.KField[wpfloat],
        inv_dual_edge_length: fa.EdgeField[wpfloat], nudgecoeff_e: fa.EdgeField[wpfloat],
        geofac_grdiv: gtx.Field[[dims.EdgeDim, dims.E2C2EODim], wpfloat],
        advection_explicit_weight_parameter: wpfloat,
        advection_implicit_weight_parameter: wpfloat, dtime: wpfloat, iau_wgt_dyn: wpfloat,
        is_iau_active: bool, limited_area: bool, apply_2nd_order_divergence_damping: bool,
        apply_4th_order_divergence_damping: bool) -> fa.EdgeKField[wpfloat]:
    horizontal_gradient_of_total_divergence = _add_vertical_wind_derivative_to_divergence_damping(
        hmask_dd3d=horizontal_mask_for_3d_divdamp, scalfac_dd3d=scaling_factor_for_3d_divdamp,
        inv_dual_edge_length=inv_dual_edge_length, z_dwdz_dd=dwdz_at_cells_on_model_levels,
        z_graddiv_vn=horizontal_gradient_of_normal_wind_divergence)
    next_vn = _add_temporal_tendencies_to_vn_by_interpolating_between_time_levels(
        vn_nnow=current_vn, ddt_vn_apc_ntl1=predictor_normal_wind_advective_tendency,
        ddt_vn_apc_ntl2=corrector_normal_wind_advective_tendency,
        ddt_vn_phy=normal_wind_tendency_due_to_slow_physics_process,
        z_theta_v_e=theta_v_at_edges_on_model_levels, z_gradh_exner=horizontal_pressure_gradient,
        dtime=dtime, wgt_nnow_vel=advection_explicit_weight_parameter,
        wgt_nnew_vel=advection_implicit_weight_parameter, cpd=dycore_consts.cpd)
    if apply_2nd_order_divergence_damping:
        next_vn = _apply_2nd_order_divergence_damping(
            z_graddiv_vn=horizontal_gradient_of_total_divergence, vn=next_vn,
            scal_divdamp_o2=second_order_divdamp_scaling_coeff)
    if apply_4th_order_divergence_damping:
        squared_horizontal_gradient_of_total_divergence = _compute_graddiv2_of_vn(
            geofac_grdiv=geofac_grdiv, z_graddiv_vn=horizontal_gradient_of_total_divergence)
        if limited_area:
            next_vn = _apply_weighted_2nd_and_4th_order_divergence_damping(
                scal_divdamp=fourth_order_divdamp_scaling_coeff,
                bdy_divdamp=reduced_fourth_order_divdamp_coeff_at_nest_boundary,
                nudgecoeff_e=nudgecoeff_e,
                z_graddiv2_vn=squared_horizontal_gradient_of_total_divergence, vn=next_vn)
        else:
            next_vn = _apply_4th_order_divergence_damping(
                scal_divdamp=fourth_order_divdamp_scaling_coeff,
                z_graddiv2_vn=squared_horizontal_gradient_of_total_divergence, vn=next_vn)
    if is_iau_active:
        next_vn = _add_analysis_increments_to_vn(vn_incr=normal_wind_iau_increment, vn=next_vn,
                                                 iau_wgt_dyn=iau_wgt_dyn)
    return next_vn


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def apply_divergence_damping_and_update_vn(
        horizontal_gradient_of_normal_wind_divergence: fa.EdgeKField[vpfloat],
        next_vn: fa.EdgeKField[wpfloat], current_vn: fa.EdgeKField[wpfloat],
        dwdz_at_cells_on_model_levels: fa.CellKField[vpfloat],
        predictor_normal_wind_advective_tendency: fa.EdgeKField[vpfloat],
        corrector_normal_wind_advective_tendency: fa.EdgeKField[vpfloat],
        normal_wind_tendency_due_to_slow_physics_process: fa.EdgeKField[vpfloat],
        normal_wind_iau_increment: fa.EdgeKField[vpfloat],
        reduced_fourth_order_divdamp_coeff_at_nest_boundary: fa.KField[wpfloat],
        fourth_order_divdamp_scaling_coeff: fa.KField[wpfloat],
        second_order_divdamp_scaling_coeff: wpfloat,
        theta_v_at_edges_on_model_levels: fa.EdgeKField[wpfloat],
        horizontal_pressure_gradient: fa.EdgeKField[vpfloat],
        horizontal_mask_for_3d_divdamp: fa.EdgeField[wpfloat],
        scaling_factor_for_3d_divdamp: fa.KField[wpfloat],
        inv_dual_edge_length: fa.EdgeField[wpfloat], nudgecoeff_e: fa.EdgeField[wpfloat],
        geofac_grdiv: gtx.Field[[dims.EdgeDim, dims.E2C2EODim], wpfloat],
        advection_explicit_weight_parameter: wpfloat,
        advection_implicit_weight_parameter: wpfloat, dtime: wpfloat, iau_wgt_dyn: wpfloat,
        is_iau_active: bool, limited_area: bool, apply_2nd_order_divergence_damping: bool,
        apply_4th_order_divergence_damping: bool, horizontal_start: gtx.int32,
        horizontal_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32):
    _apply_divergence_damping_and_update_vn(
        horizontal_gradient_of_normal_wind_divergence=horizontal_gradient_of_normal_wind_divergence,
        next_vn=next_vn, current_vn=current_vn,
        dwdz_at_cells_on_model_levels=dwdz_at_cells_on_model_levels,
        predictor_normal_wind_advective_tendency=predictor_normal_wind_advective_tendency,
        corrector_normal_wind_advective_tendency=corrector_normal_wind_advective_tendency,
        normal_wind_tendency_due_to_slow_physics_process=(
            normal_wind_tendency_due_to_slow_physics_process),
        normal_wind_iau_increment=normal_wind_iau_increment,
        reduced_fourth_order_divdamp_coeff_at_nest_boundary=(
            reduced_fourth_order_divdamp_coeff_at_nest_boundary),
        fourth_order_divdamp_scaling_coeff=fourth_order_divdamp_scaling_coeff,
        second_order_divdamp_scaling_coeff=second_order_divdamp_scaling_coeff,
        theta_v_at_edges_on_model_levels=theta_v_at_edges_on_model_levels,
        horizontal_pressure_gradient=horizontal_pressure_gradient,
        horizontal_mask_for_3d_divdamp=horizontal_mask_for_3d_divdamp,
        scaling_factor_for_3d_divdamp=scaling_factor_for_3d_divdamp,
        inv_dual_edge_length=inv_dual_edge_length, nudgecoeff_e=nudgecoeff_e,
        geofac_grdiv=geofac_grdiv,
        advection_explicit_weight_parameter=advection_explicit_weight_parameter,
        advection_implicit_weight_parameter=advection_implicit_weight_parameter, dtime=dtime,
        iau_wgt_dyn=iau_wgt_dyn, is_iau_active=is_iau_active, limited_area=limited_area,
        apply_2nd_order_divergence_damping=apply_2nd_order_divergence_damping,
        apply_4th_order_divergence_damping=apply_4th_order_divergence_damping,
        out=next_vn,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("iau,limited_area,second,fourth",
                         [(True, True, True, True), (False, False, False, True),
                          (True, False, True, False)])
def test_divergence_damping_and_update_of_vn(backend, iau, limited_area, second, fourth):
    e, c = (NE, NLEV), (NC, NLEV)
    a = dict(horizontal_gradient_of_normal_wind_divergence=vp(*e), next_vn=np.full(e, 9.0),
             current_vn=wp(*e), dwdz_at_cells_on_model_levels=vp(*c),
             predictor_normal_wind_advective_tendency=vp(*e),
             corrector_normal_wind_advective_tendency=vp(*e),
             normal_wind_tendency_due_to_slow_physics_process=vp(*e),
             normal_wind_iau_increment=vp(*e),
             reduced_fourth_order_divdamp_coeff_at_nest_boundary=wp(NLEV),
             fourth_order_divdamp_scaling_coeff=wp(NLEV),
             theta_v_at_edges_on_model_levels=wp(*e), horizontal_pressure_gradient=vp(*e) * 1e-3,
             horizontal_mask_for_3d_divdamp=wp(NE), scaling_factor_for_3d_divdamp=wp(NLEV),
             inv_dual_edge_length=wp(NE), nudgecoeff_e=wp(NE), geofac_grdiv=wp(NE, 5) - 0.5)
    s = dict(second_order_divdamp_scaling_coeff=0.3, advection_explicit_weight_parameter=0.25,
             advection_implicit_weight_parameter=0.75, dtime=2.0, iau_wgt_dyn=0.5,
             is_iau_active=iau, limited_area=limited_area,
             apply_2nd_order_divergence_damping=second, apply_4th_order_divergence_damping=fourth)
    hs, he, vs, ve = 1, NE - 2, 0, NLEV
    e2c, d = TABLES["E2C"], (lambda x: x.astype(f64))
    dwdz = a["dwdz_at_cells_on_model_levels"]
    g = (d(a["horizontal_gradient_of_normal_wind_divergence"])
         + (a["horizontal_mask_for_3d_divdamp"] * a["inv_dual_edge_length"])[:, None]
         * a["scaling_factor_for_3d_divdamp"] * d(dwdz[e2c[:, 1]] - dwdz[e2c[:, 0]])).astype(f32)
    vn = a["current_vn"] + s["dtime"] * (
        0.25 * d(a["predictor_normal_wind_advective_tendency"])
        + 0.75 * d(a["corrector_normal_wind_advective_tendency"])
        + d(a["normal_wind_tendency_due_to_slow_physics_process"])
        - dycore_consts.cpd * a["theta_v_at_edges_on_model_levels"]
        * d(a["horizontal_pressure_gradient"]))
    if second:
        vn = vn + 0.3 * d(g)
    if fourth:
        g2 = nb_sum(a["geofac_grdiv"], d(g), TABLES["E2C2EO"]).astype(f32)
        scal = a["fourth_order_divdamp_scaling_coeff"][None, :]
        if limited_area:
            scal = scal + a["reduced_fourth_order_divdamp_coeff_at_nest_boundary"][None, :] \
                * a["nudgecoeff_e"][:, None]
        vn = vn + scal * d(g2)
    if iau:
        vn = vn + 0.5 * d(a["normal_wind_iau_increment"])
    expected = inside(vn, a["next_vn"], hs, he, vs, ve)
    apply_divergence_damping_and_update_vn(
        **a, **s, horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
        offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(a["next_vn"], expected, rtol=1e-6, atol=1e-6)


# ------------------------------------------------- nested reductions: vertex winds into nabla4
#
# The vertex wind components of the diffusion (a ``V2E`` sum with absent edges)
# computed in the same field operator that reads them through ``E2C2V`` slots:
# a reduction over one local dimension gathered over another.

dims.V2EDim, dims.V2E = V2EDim, V2E


@gtx.field_operator
def _mo_intp_rbf_rbf_vec_interpol_vertex(
        p_e_in: fa.EdgeKField[wpfloat],
        ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
        ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat]
) -> tuple[fa.VertexKField[wpfloat], fa.VertexKField[wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(dims.V2E), axis=dims.V2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(dims.V2E), axis=dims.V2EDim)
    return p_u_out, p_v_out


@gtx.field_operator
def _nabla4_from_vn(
        vn: fa.EdgeKField[wpfloat],
        ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
        ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
        primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], inv_vert_vert_length: fa.EdgeField[wpfloat],
        inv_primal_edge_length: fa.EdgeField[wpfloat]) -> fa.EdgeKField[wpfloat]:
    u_vert, v_vert = _mo_intp_rbf_rbf_vec_interpol_vertex(vn, ptr_coeff_1, ptr_coeff_2)
    return _calculate_nabla4(astype(u_vert, vpfloat), astype(v_vert, vpfloat),
                             primal_normal_vert_v1, primal_normal_vert_v2, z_nabla2_e,
                             inv_vert_vert_length, inv_primal_edge_length)


@gtx.program
def nabla4_from_vn(
        vn: fa.EdgeKField[wpfloat],
        ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
        ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
        primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
        z_nabla2_e: fa.EdgeKField[wpfloat], inv_vert_vert_length: fa.EdgeField[wpfloat],
        inv_primal_edge_length: fa.EdgeField[wpfloat], z_nabla4_e2: fa.EdgeKField[wpfloat],
        horizontal_start: gtx.int32, horizontal_end: gtx.int32):
    _nabla4_from_vn(vn, ptr_coeff_1, ptr_coeff_2, primal_normal_vert_v1, primal_normal_vert_v2,
                    z_nabla2_e, inv_vert_vert_length, inv_primal_edge_length, out=z_nabla4_e2,
                    domain={dims.EdgeDim: (horizontal_start, horizontal_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla4_from_vertex_winds(backend):
    a = dict(vn=wp(NE, NLEV), ptr_coeff_1=wp(NV, 6) - 0.5, ptr_coeff_2=wp(NV, 6) - 0.5,
             primal_normal_vert_v1=wp(NE, 4) - 0.5, primal_normal_vert_v2=wp(NE, 4) - 0.5,
             z_nabla2_e=wp(NE, NLEV), inv_vert_vert_length=wp(NE),
             inv_primal_edge_length=wp(NE), z_nabla4_e2=np.full((NE, NLEV), 5.0))
    hs, he = 2, NE
    v2e, e2c2v = TABLES["V2E"], TABLES["E2C2V"]
    u = nb_sum(a["ptr_coeff_1"], a["vn"], v2e).astype(f32).astype(f64)
    v = nb_sum(a["ptr_coeff_2"], a["vn"], v2e).astype(f32).astype(f64)
    p1, p2 = a["primal_normal_vert_v1"], a["primal_normal_vert_v2"]

    def slot(j):
        return u[e2c2v[:, j]] * p1[:, j:j + 1] + v[e2c2v[:, j]] * p2[:, j:j + 1]

    nabla2 = a["z_nabla2_e"]
    nabla4 = 4.0 * ((slot(2) + slot(3) - 2.0 * nabla2) * (a["inv_vert_vert_length"] ** 2)[:, None]
                    + (slot(0) + slot(1) - 2.0 * nabla2)
                    * (a["inv_primal_edge_length"] ** 2)[:, None])
    expected = inside(nabla4, a["z_nabla4_e2"], hs, he, 0, NLEV)
    nabla4_from_vn(**a, horizontal_start=hs, horizontal_end=he, offset_provider=TABLES,
                   backend=backend)
    np.testing.assert_allclose(a["z_nabla4_e2"], expected, rtol=1e-5, atol=1e-5)
