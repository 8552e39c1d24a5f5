"""A tenth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

The fused velocity advection stencils: the normal and tangential winds at
edge half levels with the kinetic energy (``where`` over an ``int32`` level
index field with chained comparisons such as ``1 <= k < nlev`` choosing
between tuples, a ``bool`` scalar in a conditional expression, the index
broadcast to ``(Edge, K)`` and combined with an edge index field), the
advection of ``w`` at cells (``istep`` choosing the predictor or the
corrector, cell index ranges, the restricted operator returning one element
of a called operator's tuple, flattened ``C2CE`` coefficients) and its
tendency with the extra diffusion near the CFL limit (``maximum`` of an int
literal and an ``int32`` scalar inside a chained comparison), and the normal
wind tendency with the vorticity through ``V2E``.
Each group is one program, interpreted and compiled, compared with NumPy
written from the formulas.
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
    maximum,
    minimum,
    neighbor_sum,
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
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
CEDim = Dimension("CE")
ECDim = Dimension("EC")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.E2VDim, dims.V2CDim = E2CDim, C2EDim, E2VDim, V2CDim
dims.V2EDim, dims.E2C2EDim, dims.E2C2EODim, dims.C2E2CODim = V2EDim, E2C2EDim, E2C2EODim, C2E2CODim
dims.CEDim, dims.ECDim = CEDim, ECDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
E2C2EO = FieldOffset("E2C2EO", source=EdgeDim, target=(EdgeDim, E2C2EODim))
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
fa.VertexKField = Field[Dims[VertexDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 9, 6, 12
NH = NLEV + 1
RNG = np.random.default_rng(10001)
_TABLE_RNG = np.random.default_rng(10002)
TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "E2V": _TABLE_RNG.integers(0, NV, (NE, 2)),
          "V2C": _TABLE_RNG.integers(0, NC, (NV, 6)),
          "V2E": _TABLE_RNG.integers(0, NE, (NV, 6)),
          "E2C2E": _TABLE_RNG.integers(0, NE, (NE, 4)),
          "E2C2EO": np.concatenate([np.arange(NE)[:, None],
                                    _TABLE_RNG.integers(0, NE, (NE, 4))], axis=1),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None],
                                    _TABLE_RNG.integers(0, NC, (NC, 3))], axis=1),
          "C2CE": None, "E2EC": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(10003).bit_generator.state


def check(got, expected, rtol, atol=0.0):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


def inside(value, base, hs, he, vs, ve):
    """``base`` with ``value`` written on rows ``hs:he`` and levels ``vs:ve``."""
    out = np.array(base)
    out[hs:he, vs:ve] = np.asarray(value)[hs:he, vs:ve]
    return out


def f32(*shape):
    return RNG.random(shape).astype(np.float32)


def f64(*shape):
    return RNG.random(shape)


def below(x, n=1):
    """``x(Koff[-n])`` on levels ``n:``: level k takes level k - n; NaN above."""
    out = np.full(x.shape, np.nan)
    out[:, n:] = x[:, :-n]
    return out


# ================================================================== velocity advection, edges
#
# icon4py's fused velocity advection stencils 1 to 7: the winds at edge half
# levels and the horizontal advection of w.


@gtx.field_operator
def _interpolate_vn_to_ie_and_compute_ekin_on_edges(
    wgtfac_e: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[vpfloat],
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    wgtfac_e_wp, vt_wp = astype((wgtfac_e, vt), wpfloat)
    vn_ie_wp = wgtfac_e_wp * vn + (1.0 - wgtfac_e_wp) * vn(Koff[-1])
    z_kin_hor_e_wp = 0.5 * (vn * vn + vt_wp * vt_wp)
    return astype((vn_ie_wp, z_kin_hor_e_wp), vpfloat)


@gtx.field_operator
def _interpolate_vt_to_interface_edges(
    wgtfac_e: fa.EdgeKField[vpfloat], vt: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    return wgtfac_e * vt + (vpfloat("1.0") - wgtfac_e) * vt(Koff[-1])


@gtx.field_operator
def _compute_horizontal_kinetic_energy(
    vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[vpfloat],
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    vt_wp = astype(vt, wpfloat)
    return astype(vn, vpfloat), vt, astype(0.5 * (vn * vn + vt_wp * vt_wp), vpfloat)


@gtx.field_operator
def _extrapolate_at_top(
    wgtfacq_e: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[vpfloat]:
    w1, w2, w3 = astype((wgtfacq_e(Koff[-1]), wgtfacq_e(Koff[-2]), wgtfacq_e(Koff[-3])),
                        wpfloat)
    return astype(w1 * vn(Koff[-1]) + w2 * vn(Koff[-2]) + w3 * vn(Koff[-3]), vpfloat)


@gtx.field_operator
def _compute_tangential_wind(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> fa.EdgeKField[vpfloat]:
    return astype(neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim), vpfloat)


@gtx.field_operator
def _compute_contravariant_correction(
    vn: fa.EdgeKField[wpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], vt: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    ddxn_wp, ddxt_wp, vt_wp = astype((ddxn_z_full, ddxt_z_full, vt), wpfloat)
    return astype(vn * ddxn_wp + vt_wp * ddxt_wp, vpfloat)


@gtx.field_operator
def _compute_interface_vt_vn_and_kinetic_energy(
    vn: fa.EdgeKField[wpfloat], wgtfac_e: fa.EdgeKField[vpfloat],
    wgtfacq_e: fa.EdgeKField[vpfloat], z_vt_ie: fa.EdgeKField[vpfloat],
    vt: fa.EdgeKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], k: fa.KField[gtx.int32], nlev: gtx.int32,
    lvn_only: bool,
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    vn_ie, z_kin_hor_e = where(
        1 <= k < nlev,
        _interpolate_vn_to_ie_and_compute_ekin_on_edges(wgtfac_e, vn, vt),
        (vn_ie, z_kin_hor_e),
    )
    z_vt_ie = (
        where(1 <= k < nlev, _interpolate_vt_to_interface_edges(wgtfac_e, vt), z_vt_ie)
        if not lvn_only
        else z_vt_ie
    )
    (vn_ie, z_vt_ie, z_kin_hor_e) = where(
        k == 0, _compute_horizontal_kinetic_energy(vn, vt), (vn_ie, z_vt_ie, z_kin_hor_e))
    vn_ie = where(k == nlev, _extrapolate_at_top(wgtfacq_e, vn), vn_ie)
    return vn_ie, z_vt_ie, z_kin_hor_e


@gtx.field_operator
def _fused_velocity_advection_stencil_1_to_6(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    wgtfac_e: fa.EdgeKField[vpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfacq_e: fa.EdgeKField[vpfloat], nflatlev: gtx.int32, z_vt_ie: fa.EdgeKField[vpfloat],
    vt: fa.EdgeKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], k: fa.KField[gtx.int32], nlev: gtx.int32,
    lvn_only: bool,
) -> tuple[
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
]:
    vt = where(k < nlev, _compute_tangential_wind(vn, rbf_vec_coeff_e), vt)
    (vn_ie, z_vt_ie, z_kin_hor_e) = _compute_interface_vt_vn_and_kinetic_energy(
        vn, wgtfac_e, wgtfacq_e, z_vt_ie, vt, vn_ie, z_kin_hor_e, k, nlev, lvn_only)
    z_w_concorr_me = where(
        nflatlev <= k < nlev,
        _compute_contravariant_correction(vn, ddxn_z_full, ddxt_z_full, vt),
        z_w_concorr_me,
    )
    return vt, vn_ie, z_vt_ie, z_kin_hor_e, z_w_concorr_me


@gtx.field_operator
def _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(
    p_cell_in: fa.CellKField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
) -> fa.VertexKField[vpfloat]:
    return astype(neighbor_sum(c_intp * p_cell_in(V2C), axis=V2CDim), vpfloat)


@gtx.field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
    vn_ie: fa.EdgeKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    w: fa.CellKField[wpfloat], z_vt_ie: fa.EdgeKField[vpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    z_w_v: fa.VertexKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    vn_ie_wp, z_vt_ie_wp = astype((vn_ie, z_vt_ie), wpfloat)
    z_v_grad_w_wp = vn_ie_wp * inv_dual_edge_length * (
        w(E2C[0]) - w(E2C[1])
    ) + z_vt_ie_wp * inv_primal_edge_length * tangent_orientation * astype(
        z_w_v(E2V[0]) - z_w_v(E2V[1]), wpfloat)
    return astype(z_v_grad_w_wp, vpfloat)


@gtx.field_operator
def _fused_velocity_advection_stencil_1_to_7_predictor(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    wgtfac_e: fa.EdgeKField[vpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfacq_e: fa.EdgeKField[vpfloat], nflatlev: gtx.int32,
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    w: fa.CellKField[wpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    z_vt_ie: fa.EdgeKField[vpfloat], vt: fa.EdgeKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], z_v_grad_w: fa.EdgeKField[vpfloat],
    k: fa.KField[gtx.int32], nlev: gtx.int32, lvn_only: bool, edge: fa.EdgeField[gtx.int32],
    lateral_boundary_7: gtx.int32, halo_1: gtx.int32,
) -> tuple[
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
]:
    vt, vn_ie, z_vt_ie, z_kin_hor_e, z_w_concorr_me = _fused_velocity_advection_stencil_1_to_6(
        vn, rbf_vec_coeff_e, wgtfac_e, ddxn_z_full, ddxt_z_full, z_w_concorr_me, wgtfacq_e,
        nflatlev, z_vt_ie, vt, vn_ie, z_kin_hor_e, k, nlev, lvn_only)
    k = broadcast(k, (dims.EdgeDim, dims.KDim))
    z_w_v = _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(w, c_intp)
    z_v_grad_w = (
        where(
            (lateral_boundary_7 <= edge) & (edge < halo_1) & (k < nlev),
            _compute_horizontal_advection_term_for_vertical_velocity(
                vn_ie, inv_dual_edge_length, w, z_vt_ie, inv_primal_edge_length,
                tangent_orientation, z_w_v),
            z_v_grad_w,
        )
        if not lvn_only
        else z_v_grad_w
    )
    return vt, vn_ie, z_kin_hor_e, z_w_concorr_me, z_v_grad_w


@gtx.field_operator
def _fused_velocity_advection_stencil_1_to_7_corrector(
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    w: fa.CellKField[wpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    z_vt_ie: fa.EdgeKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    z_v_grad_w: fa.EdgeKField[vpfloat], edge: fa.EdgeField[gtx.int32],
    vertex: fa.VertexField[gtx.int32], start_edge_lateral_boundary_level_7: gtx.int32,
    end_edge_halo: gtx.int32, start_vertex_lateral_boundary_level_2: gtx.int32,
    end_vertex_halo: gtx.int32,
) -> fa.EdgeKField[vpfloat]:
    z_w_v = where(
        (start_vertex_lateral_boundary_level_2 <= vertex < end_vertex_halo),
        _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(w, c_intp),
        0.0,
    )
    return where(
        (start_edge_lateral_boundary_level_7 <= edge < end_edge_halo),
        _compute_horizontal_advection_term_for_vertical_velocity(
            vn_ie, inv_dual_edge_length, w, z_vt_ie, inv_primal_edge_length,
            tangent_orientation, z_w_v),
        z_v_grad_w,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def velocity_advection_on_edges(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    wgtfac_e: fa.EdgeKField[vpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfacq_e: fa.EdgeKField[vpfloat], nflatlev: gtx.int32,
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    w: fa.CellKField[wpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    z_vt_ie: fa.EdgeKField[vpfloat], vt: fa.EdgeKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], z_v_grad_w: fa.EdgeKField[vpfloat],
    z_v_grad_w_corr: fa.EdgeKField[vpfloat],
    k: fa.KField[gtx.int32], nlev: gtx.int32, lvn_only: bool, edge: fa.EdgeField[gtx.int32],
    vertex: fa.VertexField[gtx.int32],
    lateral_boundary_7: gtx.int32, halo_1: gtx.int32,
    start_vertex_lateral_boundary_level_2: gtx.int32, end_vertex_halo: gtx.int32,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _fused_velocity_advection_stencil_1_to_7_predictor(
        vn, rbf_vec_coeff_e, wgtfac_e, ddxn_z_full, ddxt_z_full, z_w_concorr_me, wgtfacq_e,
        nflatlev, c_intp, w, inv_dual_edge_length, inv_primal_edge_length,
        tangent_orientation, z_vt_ie, vt, vn_ie, z_kin_hor_e, z_v_grad_w, k, nlev, lvn_only,
        edge, lateral_boundary_7, halo_1,
        out=(vt, vn_ie, z_kin_hor_e, z_w_concorr_me, z_v_grad_w),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _extrapolate_at_top(
        wgtfacq_e, vn, out=vn_ie,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_end - 1, vertical_end)})
    _fused_velocity_advection_stencil_1_to_7_corrector(
        c_intp, w, inv_dual_edge_length, inv_primal_edge_length, tangent_orientation,
        z_vt_ie, vn_ie, z_v_grad_w_corr, edge, vertex, lateral_boundary_7, halo_1,
        start_vertex_lateral_boundary_level_2, end_vertex_halo,
        out=z_v_grad_w_corr,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})


@pytest.mark.parametrize("lvn_only", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_velocity_advection_on_edges(backend, lvn_only):
    # ``where`` evaluates both branches, and the extrapolation reads three levels up:
    # the levels start at 3 (icon4py starts at 0, where its backends read outside).
    hs, he, lb7, h1, vlb2, veh, nflatlev, vs = 1, NE - 1, 2, NE - 2, 1, NV - 1, 5, 3
    e2c, e2v, v2c, e2c2e = TABLES["E2C"], TABLES["E2V"], TABLES["V2C"], TABLES["E2C2E"]
    a = dict(vn=RNG.standard_normal((NE, NLEV)), rbf_vec_coeff_e=RNG.standard_normal((NE, 4)),
             wgtfac_e=f32(NE, NH), ddxn_z_full=f32(NE, NLEV), ddxt_z_full=f32(NE, NLEV),
             wgtfacq_e=f32(NE, NLEV), c_intp=f64(NV, 6), w=RNG.standard_normal((NC, NH)),
             inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
             inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
             z_vt_ie=f32(NE, NH), k=np.arange(NH, dtype=np.int32),
             edge=np.arange(NE, dtype=np.int32), vertex=np.arange(NV, dtype=np.int32))
    base = dict(z_w_concorr_me=f32(NE, NLEV), vt=f32(NE, NLEV), vn_ie=f32(NE, NH),
                z_kin_hor_e=f32(NE, NLEV), z_v_grad_w=f32(NE, NLEV),
                z_v_grad_w_corr=f32(NE, NLEV))
    got = {name: v.copy() for name, v in base.items()}
    velocity_advection_on_edges(
        **a, **got, nflatlev=nflatlev, nlev=NLEV, lvn_only=lvn_only, lateral_boundary_7=lb7,
        halo_1=h1, start_vertex_lateral_boundary_level_2=vlb2, end_vertex_halo=veh,
        horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=NH,
        offset_provider=TABLES, backend=backend)

    vn, w = a["vn"], a["w"]
    vt = np.einsum("en,enk->ek", a["rbf_vec_coeff_e"], vn[e2c2e]).astype(np.float32)
    vt64 = vt.astype(np.float64)
    wgt = a["wgtfac_e"].astype(np.float64)[:, :NLEV]
    vn_ie = np.array(base["vn_ie"])
    vn_ie[:, 1:NLEV] = (wgt * vn + (1.0 - wgt) * below(vn))[:, 1:]
    vn_ie[:, 0] = vn[:, 0]
    wq = a["wgtfacq_e"].astype(np.float64)
    vn_ie[:, NLEV] = (wq[:, -1] * vn[:, -1] + wq[:, -2] * vn[:, -2] + wq[:, -3] * vn[:, -3])
    ekin = 0.5 * (vn * vn + vt64 * vt64)
    wgt32 = a["wgtfac_e"][:, :NLEV]
    vt_ie = np.array(a["z_vt_ie"])
    if not lvn_only:
        vt_ie[:, 1:NLEV] = (wgt32 * vt + (np.float32(1.0) - wgt32) * below(vt))[:, 1:]
    vt_ie[:, 0] = vt[:, 0]
    concorr = np.array(base["z_w_concorr_me"])
    concorr[:, nflatlev:] = (vn * a["ddxn_z_full"] + vt64 * a["ddxt_z_full"])[:, nflatlev:]
    z_w_v = np.einsum("vn,vnk->vk", a["c_intp"], w[v2c])[:, :NLEV].astype(np.float32)

    def grad_w(vn_ie, vt_ie, z_w_v):
        return (vn_ie[:, :NLEV].astype(np.float32).astype(np.float64)
                * a["inv_dual_edge_length"][:, None] * (w[e2c[:, 0], :NLEV] - w[e2c[:, 1], :NLEV])
                + vt_ie[:, :NLEV].astype(np.float64) * (a["inv_primal_edge_length"]
                                                        * a["tangent_orientation"])[:, None]
                * (z_w_v[e2v[:, 0]] - z_w_v[e2v[:, 1]]).astype(np.float64))

    grad = np.array(base["z_v_grad_w"])
    if not lvn_only:
        grad[lb7:h1] = grad_w(vn_ie, vt_ie, z_w_v)[lb7:h1]
    # the corrector reads vn_ie as the two statements before it left it
    vn_ie_out = inside(vn_ie, base["vn_ie"], hs, he, vs, NH)
    z_w_v_corr = np.zeros_like(z_w_v)
    z_w_v_corr[vlb2:veh] = z_w_v[vlb2:veh]
    grad_corr = np.array(base["z_v_grad_w_corr"])
    grad_corr[lb7:h1] = grad_w(vn_ie_out, a["z_vt_ie"], z_w_v_corr)[lb7:h1]
    check(got, dict(
        vt=inside(vt, base["vt"], hs, he, vs, NLEV),
        vn_ie=vn_ie_out,
        z_kin_hor_e=inside(ekin, base["z_kin_hor_e"], hs, he, vs, NLEV),
        z_w_concorr_me=inside(concorr, base["z_w_concorr_me"], hs, he, vs, NLEV),
        z_v_grad_w=inside(grad, base["z_v_grad_w"], hs, he, vs, NLEV),
        z_v_grad_w_corr=inside(grad_corr, base["z_v_grad_w_corr"], hs, he, vs, NLEV)),
        rtol=2e-5, atol=2e-5)
