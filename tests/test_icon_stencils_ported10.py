"""A tenth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

First the fused velocity advection stencils: the normal and tangential winds
at edge half levels with the kinetic energy (``where`` over an ``int32`` level
index field with chained comparisons such as ``1 <= k < nlev`` choosing
between tuples, a ``bool`` scalar in a conditional expression, the index
broadcast to ``(Edge, K)`` and combined with an edge index field), the
advection of ``w`` at cells (``istep`` choosing the predictor or the
corrector, cell index ranges, the restricted operator returning one element
of a called operator's tuple, flattened ``C2CE`` coefficients), the tendency
of ``w`` with the extra diffusion near the CFL limit (``maximum`` of an int
literal and an ``int32`` scalar inside a chained comparison) and the
tendency of ``vn`` with the vorticity through ``V2E``.  Then the nonhydro
solver: the combined stencils 30 to 38 (``concat_where`` choosing tuples at
level 0 and from a runtime ``nflatlev``, nine outputs, an operator without
arguments chosen by a ``bool``), the fused stencils 15 to 28 (the pressure
gradient through ``as_offset`` of a strided ``[EC, K]`` offset field, a
backward scan called inside an operator under a runtime domain, divergence
damping chosen by ``int32``, ``float`` and ``bool`` scalars, the predictor or
corrector chosen by ``istep`` in a program call without ``domain=``).  Last
the FFSL advection's flux area list (twenty outputs written in place) and
the first cases of its flux area patches (``int32`` and ``bool`` operators,
patches as tuples chosen by ``where``, 24 outputs).
Each group is one program, interpreted and compiled, compared with NumPy
written from the formulas."""

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


# ================================================================== velocity advection, cells
#
# icon4py's fused velocity advection stencils 8 to 13: the kinetic energy and
# the contravariant correction at cells, istep choosing predictor or corrector.


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    return astype(neighbor_sum(e_bln_c_s(C2CE) * interpolant_wp(C2E), axis=C2EDim), vpfloat)


@gtx.field_operator
def _interpolate_to_half_levels_vp(
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    return wgtfac_c * interpolant + (vpfloat("1.0") - wgtfac_c) * interpolant(Koff[-1])


@gtx.field_operator
def _correct_contravariant_vertical_velocity(
    z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    return z_w_con_c - w_concorr_c


@gtx.field_operator
def _fused_velocity_advection_stencil_8_to_13_predictor(
    z_kin_hor_e: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat], wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat], z_w_concorr_mc: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat],
    z_ekinh: fa.CellKField[vpfloat], k: fa.KField[gtx.int32], nlev: gtx.int32,
    nflatlev: gtx.int32,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    z_ekinh = where(k < nlev, _interpolate_to_cell_center(z_kin_hor_e, e_bln_c_s), z_ekinh)
    z_w_concorr_mc = where(
        (k >= nflatlev) & (k < nlev),
        _interpolate_to_cell_center(z_w_concorr_me, e_bln_c_s),
        z_w_concorr_mc,
    )
    w_concorr_c = where(
        nflatlev + 1 <= k < nlev,
        _interpolate_to_half_levels_vp(wgtfac_c=wgtfac_c, interpolant=z_w_concorr_mc),
        w_concorr_c,
    )
    z_w_con_c = where(
        k < nlev, astype(w, vpfloat), broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)))
    z_w_con_c = where(
        nflatlev + 1 <= k < nlev,
        _correct_contravariant_vertical_velocity(z_w_con_c, w_concorr_c),
        z_w_con_c,
    )
    return z_ekinh, w_concorr_c, z_w_con_c


@gtx.field_operator
def _fused_velocity_advection_stencil_8_to_13_corrector(
    z_kin_hor_e: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat], wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat], z_w_con_c: fa.CellKField[vpfloat],
    w_concorr_c: fa.CellKField[vpfloat], z_ekinh: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32], nlev: gtx.int32, nflatlev: gtx.int32,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    z_ekinh = where(k < nlev, _interpolate_to_cell_center(z_kin_hor_e, e_bln_c_s), z_ekinh)
    z_w_con_c = where(k < nlev, astype(w, vpfloat), z_w_con_c)
    z_w_con_c = where(k == nlev, 0.0, z_w_con_c)
    z_w_con_c = where(
        nflatlev + 1 <= k < nlev,
        _correct_contravariant_vertical_velocity(z_w_con_c, w_concorr_c),
        z_w_con_c,
    )
    return z_ekinh, w_concorr_c, z_w_con_c


@gtx.field_operator
def _fused_velocity_advection_stencil_8_to_13(
    z_kin_hor_e: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat], wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat], z_w_concorr_mc: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat],
    z_ekinh: fa.CellKField[vpfloat], k: fa.KField[gtx.int32], cell: fa.CellField[gtx.int32],
    istep: gtx.int32, nlev: gtx.int32, nflatlev: gtx.int32, lateral_boundary_3: gtx.int32,
    lateral_boundary_4: gtx.int32, end_halo: gtx.int32,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    z_ekinh, w_concorr_c, z_w_con_c = (
        where(
            lateral_boundary_4 <= cell < end_halo,
            _fused_velocity_advection_stencil_8_to_13_predictor(
                z_kin_hor_e, e_bln_c_s, z_w_concorr_me, wgtfac_c, w, z_w_concorr_mc,
                z_w_con_c, w_concorr_c, z_ekinh, k, nlev, nflatlev),
            (z_ekinh, w_concorr_c, z_w_con_c),
        )
        if istep == 1
        else where(
            lateral_boundary_3 <= cell < end_halo,
            _fused_velocity_advection_stencil_8_to_13_corrector(
                z_kin_hor_e, e_bln_c_s, z_w_concorr_me, wgtfac_c, w, z_w_con_c,
                w_concorr_c, z_ekinh, k, nlev, nflatlev),
            (z_ekinh, w_concorr_c, z_w_con_c),
        )
    )
    return z_ekinh, w_concorr_c, z_w_con_c


@gtx.field_operator
def _fused_velocity_advection_stencil_8_to_13_restricted(
    z_kin_hor_e: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat], wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat], z_w_concorr_mc: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat],
    z_ekinh: fa.CellKField[vpfloat], k: fa.KField[gtx.int32], cell: fa.CellField[gtx.int32],
    istep: gtx.int32, nlev: gtx.int32, nflatlev: gtx.int32, lateral_boundary_3: gtx.int32,
    lateral_boundary_4: gtx.int32, end_halo: gtx.int32,
) -> fa.CellKField[vpfloat]:
    return _fused_velocity_advection_stencil_8_to_13(
        z_kin_hor_e, e_bln_c_s, z_w_concorr_me, wgtfac_c, w, z_w_concorr_mc, z_w_con_c,
        w_concorr_c, z_ekinh, k, cell, istep, nlev, nflatlev, lateral_boundary_3,
        lateral_boundary_4, end_halo,
    )[2]


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def fused_velocity_advection_stencil_8_to_13(
    z_kin_hor_e: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat], wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat], z_w_concorr_mc: fa.CellKField[vpfloat],
    w_concorr_c: fa.CellKField[vpfloat], z_ekinh: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat], k: fa.KField[gtx.int32],
    cell: fa.CellField[gtx.int32], istep: gtx.int32, nlev: gtx.int32, nflatlev: gtx.int32,
    lateral_boundary_3: gtx.int32, lateral_boundary_4: gtx.int32, end_halo: gtx.int32,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _fused_velocity_advection_stencil_8_to_13(
        z_kin_hor_e, e_bln_c_s, z_w_concorr_me, wgtfac_c, w, z_w_concorr_mc, z_w_con_c,
        w_concorr_c, z_ekinh, k, cell, istep, nlev, nflatlev, lateral_boundary_3,
        lateral_boundary_4, end_halo,
        out=(z_ekinh, w_concorr_c, z_w_con_c),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _fused_velocity_advection_stencil_8_to_13_restricted(
        z_kin_hor_e, e_bln_c_s, z_w_concorr_me, wgtfac_c, w, z_w_concorr_mc, z_w_con_c,
        w_concorr_c, z_ekinh, k, cell, istep, nlev, nflatlev, lateral_boundary_3,
        lateral_boundary_4, end_halo,
        out=z_w_con_c,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_end - 1, vertical_end)})


@pytest.mark.parametrize("istep", [1, 2])
@pytest.mark.parametrize("backend", BACKENDS)
def test_velocity_advection_on_cells(backend, istep):
    hs, he, lb3, lb4, eh, nflatlev, vs = 0, NC, 1, 2, NC - 1, 4, 1
    c2e = TABLES["C2E"]
    # z_w_concorr_m* on nlev + 1 levels (icon4py's have nlev): ``where`` evaluates
    # the interpolation to half levels on level nlev too, where z_w_con_c reads it.
    a = dict(z_kin_hor_e=f32(NE, NLEV), e_bln_c_s=f64(NC * 3), z_w_concorr_me=f32(NE, NH),
             wgtfac_c=f32(NC, NH), w=RNG.standard_normal((NC, NH)),
             z_w_concorr_mc=f32(NC, NH), k=np.arange(NH, dtype=np.int32),
             cell=np.arange(NC, dtype=np.int32))
    base = dict(w_concorr_c=f32(NC, NH), z_ekinh=f32(NC, NLEV), z_w_con_c=f32(NC, NH))
    got = {name: v.copy() for name, v in base.items()}
    fused_velocity_advection_stencil_8_to_13(
        **a, **got, istep=istep, nlev=NLEV, nflatlev=nflatlev, lateral_boundary_3=lb3,
        lateral_boundary_4=lb4, end_halo=eh, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=NH, offset_provider=TABLES, backend=backend)

    bln = a["e_bln_c_s"].reshape(NC, 3)

    def to_cells(x):
        return np.einsum("cn,cnk->ck", bln, x.astype(np.float64)[c2e]).astype(np.float32)

    ekinh = to_cells(a["z_kin_hor_e"])
    lo = lb4 if istep == 1 else lb3
    w_con = np.array(base["z_w_con_c"])
    w_con[:, :NLEV] = a["w"][:, :NLEV].astype(np.float32)
    w_concorr = np.array(base["w_concorr_c"])
    if istep == 1:
        w_con[:, NLEV] = 0.0
        concorr_mc = np.array(a["z_w_concorr_mc"])
        concorr_mc[:, nflatlev:NLEV] = to_cells(a["z_w_concorr_me"])[:, nflatlev:NLEV]
        wgt = a["wgtfac_c"]
        w_concorr[:, nflatlev + 1:NLEV] = (wgt * concorr_mc + (np.float32(1.0) - wgt)
                                           * below(concorr_mc))[:, nflatlev + 1:NLEV]
    else:
        # the corrector keeps what z_w_con_c held at nlev, then writes 0 there
        w_con[:, NLEV] = 0.0
    w_con[:, nflatlev + 1:NLEV] -= w_concorr[:, nflatlev + 1:NLEV]
    check(got, dict(
        z_ekinh=inside(ekinh, base["z_ekinh"], lo, eh, vs, NLEV),
        w_concorr_c=inside(w_concorr, base["w_concorr_c"], lo, eh, vs, NLEV),
        z_w_con_c=inside(w_con, base["z_w_con_c"], lo, eh, vs, NH)), rtol=2e-6, atol=2e-6)


# ================================================================== velocity advection tendencies
#
# icon4py's fused velocity advection stencils 15 to 18 (the tendency of w with
# the extra diffusion near the CFL limit) and 19 to 20 (the tendency of vn).


@gtx.field_operator
def _interpolate_contravariant_vertical_velocity_to_full_levels(
    z_w_con_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    return vpfloat("0.5") * (z_w_con_c + z_w_con_c(Koff[1]))


@gtx.field_operator
def _compute_advective_vertical_wind_tendency(
    z_w_con_c: fa.CellKField[vpfloat], w: fa.CellKField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat], coeff2_dwdz: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_w_con_c_wp, coeff1_wp, coeff2_wp = astype((z_w_con_c, coeff1_dwdz, coeff2_dwdz), wpfloat)
    ddt_w_adv_wp = -z_w_con_c_wp * (
        w(Koff[-1]) * coeff1_wp - w(Koff[1]) * coeff2_wp + w * (coeff2_wp - coeff1_wp))
    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _add_interpolated_horizontal_advection_of_w(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat], z_v_grad_w: fa.EdgeKField[vpfloat],
    ddt_w_adv: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_v_grad_w_wp, ddt_w_adv_wp = astype((z_v_grad_w, ddt_w_adv), wpfloat)
    ddt_w_adv_wp = ddt_w_adv_wp + neighbor_sum(
        e_bln_c_s(C2CE) * z_v_grad_w_wp(C2E), axis=C2EDim)
    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _add_extra_diffusion_for_w_con_approaching_cfl(
    levelmask: fa.KField[bool], cfl_clipping: fa.CellKField[bool],
    owner_mask: fa.CellField[bool], z_w_con_c: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat], area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w: fa.CellKField[wpfloat], ddt_w_adv: fa.CellKField[vpfloat], scalfac_exdiff: wpfloat,
    cfl_w_limit: vpfloat, dtime: wpfloat,
) -> fa.CellKField[vpfloat]:
    z_w_con_c_wp, ddqz_z_half_wp, ddt_w_adv_wp, cfl_w_limit_wp = astype(
        (z_w_con_c, ddqz_z_half, ddt_w_adv, cfl_w_limit), wpfloat)
    difcoef = where(
        levelmask & cfl_clipping & owner_mask,
        scalfac_exdiff * minimum(
            0.85 - cfl_w_limit_wp * dtime,
            abs(z_w_con_c_wp) * dtime / ddqz_z_half_wp - cfl_w_limit_wp * dtime),
        0.0,
    )
    ddt_w_adv_wp = where(
        levelmask & cfl_clipping & owner_mask,
        ddt_w_adv_wp + difcoef * area * neighbor_sum(w(C2E2CO) * geofac_n2s, axis=C2E2CODim),
        ddt_w_adv_wp,
    )
    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _fused_velocity_advection_stencil_16_to_18(
    z_w_con_c: fa.CellKField[vpfloat], w: fa.CellKField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat], coeff2_dwdz: fa.CellKField[vpfloat],
    ddt_w_adv: fa.CellKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_v_grad_w: fa.EdgeKField[vpfloat], levelmask: fa.KField[bool],
    cfl_clipping: fa.CellKField[bool], owner_mask: fa.CellField[bool],
    ddqz_z_half: fa.CellKField[vpfloat], area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    cell: fa.CellField[gtx.int32], k: fa.KField[gtx.int32], scalfac_exdiff: wpfloat,
    cfl_w_limit: vpfloat, dtime: wpfloat, cell_lower_bound: gtx.int32,
    cell_upper_bound: gtx.int32, nlev: gtx.int32, nrdmax: gtx.int32, extra_diffu: bool,
) -> fa.CellKField[vpfloat]:
    k = broadcast(k, (dims.CellDim, dims.KDim))
    ddt_w_adv = where(
        (cell_lower_bound <= cell < cell_upper_bound) & (1 <= k),
        _compute_advective_vertical_wind_tendency(z_w_con_c, w, coeff1_dwdz, coeff2_dwdz),
        ddt_w_adv,
    )
    ddt_w_adv = where(
        (cell_lower_bound <= cell < cell_upper_bound) & (1 <= k),
        _add_interpolated_horizontal_advection_of_w(e_bln_c_s, z_v_grad_w, ddt_w_adv),
        ddt_w_adv,
    )
    ddt_w_adv = (
        where(
            (cell_lower_bound <= cell < cell_upper_bound)
            & ((maximum(3, nrdmax - 2) - 1) <= k < nlev - 3),
            _add_extra_diffusion_for_w_con_approaching_cfl(
                levelmask, cfl_clipping, owner_mask, z_w_con_c, ddqz_z_half, area,
                geofac_n2s, w, ddt_w_adv, scalfac_exdiff, cfl_w_limit, dtime),
            ddt_w_adv,
        )
        if extra_diffu
        else ddt_w_adv
    )
    return ddt_w_adv


@gtx.field_operator
def _fused_velocity_advection_stencil_15_to_18(
    z_w_con_c: fa.CellKField[vpfloat], w: fa.CellKField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat], coeff2_dwdz: fa.CellKField[vpfloat],
    ddt_w_adv: fa.CellKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_v_grad_w: fa.EdgeKField[vpfloat], levelmask: fa.KField[bool],
    cfl_clipping: fa.CellKField[bool], owner_mask: fa.CellField[bool],
    ddqz_z_half: fa.CellKField[vpfloat], area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    cell: fa.CellField[gtx.int32], k: fa.KField[gtx.int32],
    z_w_con_c_full: fa.CellKField[vpfloat], scalfac_exdiff: wpfloat, cfl_w_limit: vpfloat,
    dtime: wpfloat, cell_lower_bound: gtx.int32, cell_upper_bound: gtx.int32,
    nlev: gtx.int32, nrdmax: gtx.int32, lvn_only: bool, extra_diffu: bool,
    start_cell_lateral_boundary: gtx.int32, end_cell_halo: gtx.int32,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    z_w_con_c_full = where(
        start_cell_lateral_boundary <= cell < end_cell_halo,
        _interpolate_contravariant_vertical_velocity_to_full_levels(z_w_con_c),
        z_w_con_c_full,
    )
    ddt_w_adv = _fused_velocity_advection_stencil_16_to_18(
        z_w_con_c, w, coeff1_dwdz, coeff2_dwdz, ddt_w_adv, e_bln_c_s, z_v_grad_w, levelmask,
        cfl_clipping, owner_mask, ddqz_z_half, area, geofac_n2s, cell, k, scalfac_exdiff,
        cfl_w_limit, dtime, cell_lower_bound, cell_upper_bound, nlev, nrdmax, extra_diffu)
    return (z_w_con_c_full, ddt_w_adv)


@gtx.field_operator
def _mo_math_divrot_rot_vertex_ri_dsl(
    vec_e: fa.EdgeKField[wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
) -> fa.VertexKField[vpfloat]:
    return astype(neighbor_sum(vec_e(V2E) * geofac_rot, axis=V2EDim), vpfloat)


@gtx.field_operator
def _compute_advective_normal_wind_tendency(
    z_kin_hor_e: fa.EdgeKField[vpfloat], coeff_gradekin: gtx.Field[gtx.Dims[dims.ECDim], vpfloat],
    z_ekinh: fa.CellKField[vpfloat], zeta: fa.VertexKField[vpfloat], vt: fa.EdgeKField[vpfloat],
    f_e: fa.EdgeField[wpfloat], c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_w_con_c_full: fa.CellKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    f_e_vp = astype(f_e, vpfloat)
    c_lin_e_vp = astype(c_lin_e, vpfloat)
    return -(
        z_kin_hor_e * (coeff_gradekin(E2EC[0]) - coeff_gradekin(E2EC[1]))
        + coeff_gradekin(E2EC[1]) * z_ekinh(E2C[1])
        - coeff_gradekin(E2EC[0]) * z_ekinh(E2C[0])
        + vt * (f_e_vp + vpfloat("0.5") * neighbor_sum(zeta(E2V), axis=E2VDim))
        + neighbor_sum(z_w_con_c_full(E2C) * c_lin_e_vp, axis=E2CDim)
        * (vn_ie - vn_ie(Koff[1])) / ddqz_z_full_e
    )


@gtx.field_operator
def _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl(
    levelmask: fa.KField[bool], c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_w_con_c_full: fa.CellKField[vpfloat], ddqz_z_full_e: fa.EdgeKField[vpfloat],
    area_edge: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat], zeta: fa.VertexKField[vpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat], ddt_vn_apc: fa.EdgeKField[vpfloat], cfl_w_limit: vpfloat,
    scalfac_exdiff: wpfloat, dtime: wpfloat,
) -> fa.EdgeKField[vpfloat]:
    w_con_e = neighbor_sum(c_lin_e * astype(z_w_con_c_full(E2C), wpfloat), axis=E2CDim)
    ddqz_wp, cfl_wp = astype((ddqz_z_full_e, cfl_w_limit), wpfloat)
    near_cfl = (levelmask | levelmask(Koff[1])) & (abs(w_con_e) > cfl_wp * ddqz_wp)
    difcoef = scalfac_exdiff * minimum(
        0.85 - cfl_wp * dtime, abs(w_con_e) * dtime / ddqz_wp - cfl_wp * dtime)
    ddt_vn_apc_wp = where(
        near_cfl,
        astype(ddt_vn_apc, wpfloat) + difcoef * area_edge * (
            neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim)
            + tangent_orientation * inv_primal_edge_length
            * astype(zeta(E2V[1]) - zeta(E2V[0]), wpfloat)),
        astype(ddt_vn_apc, wpfloat),
    )
    return astype(ddt_vn_apc_wp, vpfloat)


@gtx.field_operator
def _fused_velocity_advection_stencil_19_to_20(
    vn: fa.EdgeKField[wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], coeff_gradekin: gtx.Field[gtx.Dims[dims.ECDim], vpfloat],
    z_ekinh: fa.CellKField[vpfloat], vt: fa.EdgeKField[vpfloat], f_e: fa.EdgeField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_w_con_c_full: fa.CellKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat], levelmask: gtx.Field[gtx.Dims[dims.KDim], bool],
    area_edge: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    k: fa.KField[gtx.int32], cfl_w_limit: vpfloat, scalfac_exdiff: wpfloat, d_time: wpfloat,
    extra_diffu: bool, nlev: gtx.int32, nrdmax: gtx.int32,
) -> fa.EdgeKField[vpfloat]:
    zeta = _mo_math_divrot_rot_vertex_ri_dsl(vn, geofac_rot)
    ddt_vn_apc = _compute_advective_normal_wind_tendency(
        z_kin_hor_e, coeff_gradekin, z_ekinh, zeta, vt, f_e, c_lin_e, z_w_con_c_full, vn_ie,
        ddqz_z_full_e)
    ddt_vn_apc = (
        where(
            maximum(2, nrdmax - 2) <= k < nlev - 3,
            _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl(
                levelmask, c_lin_e, z_w_con_c_full, ddqz_z_full_e, area_edge,
                tangent_orientation, inv_primal_edge_length, zeta, geofac_grdiv, vn,
                ddt_vn_apc, cfl_w_limit, scalfac_exdiff, d_time),
            ddt_vn_apc,
        )
        if extra_diffu
        else ddt_vn_apc
    )
    return ddt_vn_apc


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def velocity_advection_tendencies(
    z_w_con_c: fa.CellKField[vpfloat], w: fa.CellKField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat], coeff2_dwdz: fa.CellKField[vpfloat],
    ddt_w_adv: fa.CellKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_v_grad_w: fa.EdgeKField[vpfloat], levelmask: fa.KField[bool],
    cfl_clipping: fa.CellKField[bool], owner_mask: fa.CellField[bool],
    ddqz_z_half: fa.CellKField[vpfloat], area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    z_w_con_c_full: fa.CellKField[vpfloat], cell: fa.CellField[gtx.int32],
    k: fa.KField[gtx.int32], vn: fa.EdgeKField[wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], coeff_gradekin: gtx.Field[gtx.Dims[dims.ECDim], vpfloat],
    z_ekinh: fa.CellKField[vpfloat], vt: fa.EdgeKField[vpfloat], f_e: fa.EdgeField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    vn_ie: fa.EdgeKField[vpfloat], ddqz_z_full_e: fa.EdgeKField[vpfloat],
    area_edge: fa.EdgeField[wpfloat], tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    ddt_vn_apc: fa.EdgeKField[vpfloat],
    scalfac_exdiff: wpfloat, cfl_w_limit: vpfloat, dtime: wpfloat,
    cell_lower_bound: gtx.int32, cell_upper_bound: gtx.int32, nlev: gtx.int32,
    nrdmax: gtx.int32, lvn_only: bool, extra_diffu: bool,
    start_cell_lateral_boundary: gtx.int32, end_cell_halo: gtx.int32,
    cell_start: gtx.int32, cell_end: gtx.int32, edge_start: gtx.int32, edge_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _fused_velocity_advection_stencil_15_to_18(
        z_w_con_c, w, coeff1_dwdz, coeff2_dwdz, ddt_w_adv, e_bln_c_s, z_v_grad_w, levelmask,
        cfl_clipping, owner_mask, ddqz_z_half, area, geofac_n2s, cell, k, z_w_con_c_full,
        scalfac_exdiff, cfl_w_limit, dtime, cell_lower_bound, cell_upper_bound, nlev, nrdmax,
        lvn_only, extra_diffu, start_cell_lateral_boundary, end_cell_halo,
        out=(z_w_con_c_full, ddt_w_adv),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    # reads z_w_con_c_full as the statement before left it
    _fused_velocity_advection_stencil_19_to_20(
        vn, geofac_rot, z_kin_hor_e, coeff_gradekin, z_ekinh, vt, f_e, c_lin_e,
        z_w_con_c_full, vn_ie, ddqz_z_full_e, levelmask, area_edge, tangent_orientation,
        inv_primal_edge_length, geofac_grdiv, k, cfl_w_limit, scalfac_exdiff, dtime,
        extra_diffu, nlev, nrdmax,
        out=ddt_vn_apc,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("extra_diffu", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_velocity_advection_tendencies(backend, extra_diffu):
    cs, ce, clb, cub, slb, ech, es, ee, vs, ve, nrdmax = 0, NC, 1, NC - 1, 2, NC - 2, 1, NE, \
        1, NLEV, 6
    e2c, c2e, e2v, v2e = TABLES["E2C"], TABLES["C2E"], TABLES["E2V"], TABLES["V2E"]
    c2e2co, e2c2eo = TABLES["C2E2CO"], TABLES["E2C2EO"]
    a = dict(z_w_con_c=(f32(NC, NH) - 0.5) * 4.0, w=RNG.standard_normal((NC, NH)),
             coeff1_dwdz=f32(NC, NH), coeff2_dwdz=f32(NC, NH), e_bln_c_s=f64(NC * 3),
             z_v_grad_w=f32(NE, NLEV), levelmask=RNG.random(NH) < 0.6,
             cfl_clipping=RNG.random((NC, NH)) < 0.7, owner_mask=RNG.random(NC) < 0.8,
             ddqz_z_half=f32(NC, NH) + 0.5, area=f64(NC) + 0.5, geofac_n2s=f64(NC, 4),
             cell=np.arange(NC, dtype=np.int32), k=np.arange(NH, dtype=np.int32),
             vn=RNG.standard_normal((NE, NLEV)), geofac_rot=f64(NV, 6),
             z_kin_hor_e=f32(NE, NLEV), coeff_gradekin=f32(NE * 2), z_ekinh=f32(NC, NLEV),
             vt=f32(NE, NLEV), f_e=f64(NE), c_lin_e=f64(NE, 2), vn_ie=f32(NE, NH),
             ddqz_z_full_e=f32(NE, NLEV) + 0.2, area_edge=f64(NE) + 0.5,
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
             inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE), geofac_grdiv=f64(NE, 5))
    base = dict(ddt_w_adv=f32(NC, NH), z_w_con_c_full=f32(NC, NLEV),
                ddt_vn_apc=f32(NE, NLEV))
    got = {name: v.copy() for name, v in base.items()}
    s = dict(scalfac_exdiff=0.7, cfl_w_limit=0.3, dtime=2.0)
    velocity_advection_tendencies(
        **a, **got, **s, cell_lower_bound=clb, cell_upper_bound=cub, nlev=NLEV,
        nrdmax=nrdmax, lvn_only=False, extra_diffu=extra_diffu,
        start_cell_lateral_boundary=slb, end_cell_halo=ech, cell_start=cs, cell_end=ce,
        edge_start=es, edge_end=ee, vertical_start=vs, vertical_end=ve,
        offset_provider=TABLES, backend=backend)

    kk = np.arange(NH)
    zwc = a["z_w_con_c"]
    full = np.array(base["z_w_con_c_full"])
    full[slb:ech] = (np.float32(0.5) * (zwc[:, :-1] + zwc[:, 1:]))[slb:ech]
    full_out = inside(full, base["z_w_con_c_full"], cs, ce, vs, ve)
    w = a["w"]
    c1, c2, zwc64 = (a[n].astype(np.float64) for n in ("coeff1_dwdz", "coeff2_dwdz",
                                                         "z_w_con_c"))
    adv = np.array(base["ddt_w_adv"])
    adv[:, 1:NLEV] = (-zwc64[:, 1:NLEV] * (
        w[:, :NLEV - 1] * c1[:, 1:NLEV] - w[:, 2:] * c2[:, 1:NLEV]
        + w[:, 1:NLEV] * (c2[:, 1:NLEV] - c1[:, 1:NLEV]))).astype(np.float32)
    bln = a["e_bln_c_s"].reshape(NC, 3)
    adv[:, 1:NLEV] = (adv[:, 1:NLEV].astype(np.float64) + np.einsum(
        "cn,cnk->ck", bln, a["z_v_grad_w"].astype(np.float64)[c2e])[:, 1:]).astype(np.float32)
    if extra_diffu:
        lo = max(3, nrdmax - 2) - 1
        mask = (a["levelmask"][None, :] & a["cfl_clipping"] & a["owner_mask"][:, None])
        dt, lim = s["dtime"], np.float64(np.float32(s["cfl_w_limit"]))
        dif = np.where(mask, s["scalfac_exdiff"] * np.minimum(
            0.85 - lim * dt, np.abs(zwc64) * dt / a["ddqz_z_half"].astype(np.float64)
            - lim * dt), 0.0)
        lap = np.einsum("cn,cnk->ck", a["geofac_n2s"], w[c2e2co])
        extra = np.where(mask, adv.astype(np.float64) + dif * a["area"][:, None] * lap,
                         adv.astype(np.float64)).astype(np.float32)
        levels = (kk >= lo) & (kk < NLEV - 3)
        adv[:, levels] = extra[:, levels]
    want_adv = np.array(base["ddt_w_adv"])
    want_adv[clb:cub, vs:ve] = adv[clb:cub, vs:ve]

    # the tendency of vn reads z_w_con_c_full as the first statement left it
    zeta = np.einsum("ven,vn->ve", a["vn"][v2e].transpose(0, 2, 1), a["geofac_rot"]
                     ).astype(np.float32)
    gk = a["coeff_gradekin"].reshape(NE, 2)
    zf = full_out
    ekinh = a["z_ekinh"]
    c_lin = a["c_lin_e"].astype(np.float32)
    vn_ie = a["vn_ie"]
    tend = -(a["z_kin_hor_e"] * (gk[:, :1] - gk[:, 1:])
             + gk[:, 1:] * ekinh[e2c[:, 1]] - gk[:, :1] * ekinh[e2c[:, 0]]
             + a["vt"] * (a["f_e"].astype(np.float32)[:, None]
                          + np.float32(0.5) * zeta[e2v].sum(axis=1))
             + (zf[e2c] * c_lin[:, :, None]).sum(axis=1)
             * (vn_ie[:, :NLEV] - vn_ie[:, 1:]) / a["ddqz_z_full_e"])
    if extra_diffu:
        lm = a["levelmask"]
        w_con_e = np.einsum("en,enk->ek", a["c_lin_e"], zf.astype(np.float64)[e2c])
        ddqz = a["ddqz_z_full_e"].astype(np.float64)
        lim = np.float64(np.float32(s["cfl_w_limit"]))
        near = (lm[:NLEV] | lm[1:])[None, :] & (np.abs(w_con_e) > lim * ddqz)
        dif = s["scalfac_exdiff"] * np.minimum(0.85 - lim * s["dtime"], np.abs(w_con_e)
                                               * s["dtime"] / ddqz - lim * s["dtime"])
        grdiv = np.einsum("en,enk->ek", a["geofac_grdiv"], a["vn"][e2c2eo])
        rot = (a["tangent_orientation"] * a["inv_primal_edge_length"])[:, None] * (
            zeta[e2v[:, 1]] - zeta[e2v[:, 0]]).astype(np.float64)
        extra = np.where(near, tend.astype(np.float64) + dif * a["area_edge"][:, None]
                         * (grdiv + rot), tend.astype(np.float64)).astype(np.float32)
        levels = (kk[:NLEV] >= max(2, nrdmax - 2)) & (kk[:NLEV] < NLEV - 3)
        tend[:, levels] = extra[:, levels]
    check(got, dict(z_w_con_c_full=full_out, ddt_w_adv=want_adv,
                    ddt_vn_apc=inside(tend, base["ddt_vn_apc"], es, ee, vs, ve)),
          rtol=2e-5, atol=2e-5)


# ================================================================== nonhydro solver 30 to 38
#
# icon4py's combined nonhydro stencils 30 to 38: the averaged normal wind, the
# mass fluxes and the winds at edge half levels (``concat_where`` choosing
# tuples at level 0 and from level 1, from a runtime ``nflatlev``), nine
# outputs; the corrector accumulating the fluxes for tracer advection after
# an operator without arguments chosen by a ``bool`` scalar.


@gtx.field_operator
def _compute_avg_vn_and_graddiv_vn_and_vt(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    z_vn_avg = neighbor_sum(e_flx_avg * vn(E2C2EO), axis=E2C2EODim)
    z_graddiv_vn = neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim)
    vt = neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim)
    return z_vn_avg, astype(z_graddiv_vn, vpfloat), astype(vt, vpfloat)


@gtx.field_operator
def _compute_avg_vn(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(e_flx_avg * vn(E2C2EO), axis=E2C2EODim)


@gtx.field_operator
def _compute_mass_flux(
    z_rho_e: fa.EdgeKField[wpfloat], z_vn_avg: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    mass_fl_e = z_rho_e * z_vn_avg * astype(ddqz_z_full_e, wpfloat)
    return mass_fl_e, mass_fl_e * z_theta_v_e


@gtx.field_operator
def _interpolate_vn_to_half_levels_and_compute_kinetic_energy_on_edges(
    wgtfac_e: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[vpfloat],
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    vn_ie = wgtfac_e * astype(vn, vpfloat) + (vpfloat("1.0") - wgtfac_e) * astype(
        vn(Koff[-1]), vpfloat)
    z_kin_hor_e = vpfloat("0.5") * (astype(vn * vn, vpfloat) + vt * vt)
    return vn_ie, z_kin_hor_e


@gtx.field_operator
def _interpolate_edge_field_to_half_levels_vp(
    wgtfac_e: fa.EdgeKField[vpfloat], interpolant: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    return wgtfac_e * interpolant + (vpfloat("1.0") - wgtfac_e) * interpolant(Koff[-1])


@gtx.field_operator
def _compute_vt_vn_on_half_levels_and_kinetic_energy(
    vn_on_half_levels: fa.EdgeKField[vpfloat],
    tangential_wind_on_half_levels: fa.EdgeKField[vpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat], tangential_wind: fa.EdgeKField[vpfloat],
    wgtfac_e: fa.EdgeKField[vpfloat], skip_compute_predictor_vertical_advection: bool,
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    vn_on_half_levels, horizontal_kinetic_energy_at_edges_on_model_levels = concat_where(
        dims.KDim >= 1,
        _interpolate_vn_to_half_levels_and_compute_kinetic_energy_on_edges(
            wgtfac_e, vn, tangential_wind),
        (vn_on_half_levels, horizontal_kinetic_energy_at_edges_on_model_levels),
    )
    tangential_wind_on_half_levels = (
        concat_where(
            dims.KDim >= 1,
            _interpolate_edge_field_to_half_levels_vp(wgtfac_e, tangential_wind),
            tangential_wind_on_half_levels,
        )
        if not skip_compute_predictor_vertical_advection
        else tangential_wind_on_half_levels
    )
    (
        vn_on_half_levels,
        tangential_wind_on_half_levels,
        horizontal_kinetic_energy_at_edges_on_model_levels,
    ) = concat_where(
        dims.KDim == 0,
        _compute_horizontal_kinetic_energy(vn, tangential_wind),
        (vn_on_half_levels, tangential_wind_on_half_levels,
         horizontal_kinetic_energy_at_edges_on_model_levels),
    )
    return (vn_on_half_levels, tangential_wind_on_half_levels,
            horizontal_kinetic_energy_at_edges_on_model_levels)


@gtx.field_operator
def _combined_solve_nh_30_to_38_predictor(
    vt_ie: fa.EdgeKField[vpfloat], vn_ie: fa.EdgeKField[vpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat], z_w_concorr_me: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    z_rho_e: fa.EdgeKField[wpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    ddzq_z_full_e: fa.EdgeKField[vpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], wgtfac_e: fa.EdgeKField[vpfloat], nflatlev: gtx.int32,
    skip_compute_predictor_vertical_advection: bool,
) -> tuple[
    fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
]:
    z_vn_avg, z_graddiv_vn, vt = _compute_avg_vn_and_graddiv_vn_and_vt(
        e_flx_avg, vn, geofac_grdiv, rbf_vec_coeff_e)
    mass_fl_e, z_theta_v_fl_e = _compute_mass_flux(z_rho_e, z_vn_avg, ddzq_z_full_e, z_theta_v_e)
    z_w_concorr_me = concat_where(
        nflatlev <= dims.KDim,
        _compute_contravariant_correction(vn, ddxn_z_full, ddxt_z_full, vt),
        z_w_concorr_me,
    )
    (vn_ie, vt_ie, z_kin_hor_e) = _compute_vt_vn_on_half_levels_and_kinetic_energy(
        vn_ie, vt_ie, z_kin_hor_e, vn, vt, wgtfac_e, skip_compute_predictor_vertical_advection)
    return (z_vn_avg, z_graddiv_vn, vt, mass_fl_e, z_theta_v_fl_e, vn_ie, vt_ie, z_kin_hor_e,
            z_w_concorr_me)


@gtx.field_operator
def _init_two_edge_kdim_fields_with_zero_wp() -> tuple[
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]
]:
    return (broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
            broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)))


@gtx.field_operator
def _accumulate_prep_adv_fields(
    z_vn_avg: fa.EdgeKField[wpfloat], mass_fl_e: fa.EdgeKField[wpfloat],
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat],
    r_nsubsteps: wpfloat,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    return vn_traj + r_nsubsteps * z_vn_avg, mass_flx_me + r_nsubsteps * mass_fl_e


@gtx.field_operator
def _combined_solve_nh_30_to_38_corrector(
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat],
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat], z_rho_e: fa.EdgeKField[wpfloat],
    ddzq_z_full_e: fa.EdgeKField[vpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    at_initial_timestep: bool, r_nsubsteps: wpfloat,
) -> tuple[
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat],
]:
    z_vn_avg = _compute_avg_vn(e_flx_avg, vn)
    mass_fl_e, z_theta_v_fl_e = _compute_mass_flux(z_rho_e, z_vn_avg, ddzq_z_full_e, z_theta_v_e)
    vn_traj, mass_flx_me = (
        _init_two_edge_kdim_fields_with_zero_wp()
        if at_initial_timestep
        else (vn_traj, mass_flx_me)
    )
    vn_traj, mass_flx_me = _accumulate_prep_adv_fields(
        z_vn_avg, mass_fl_e, vn_traj, mass_flx_me, r_nsubsteps)
    return z_vn_avg, mass_fl_e, z_theta_v_fl_e, vn_traj, mass_flx_me


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def combined_solve_nh_30_to_38(
    z_vn_avg: fa.EdgeKField[wpfloat], z_graddiv_vn: fa.EdgeKField[vpfloat],
    vt: fa.EdgeKField[vpfloat], mass_fl_e: fa.EdgeKField[wpfloat],
    z_theta_v_fl_e: fa.EdgeKField[wpfloat], vt_ie: fa.EdgeKField[vpfloat],
    vn_ie: fa.EdgeKField[vpfloat], z_kin_hor_e: fa.EdgeKField[vpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    z_rho_e: fa.EdgeKField[wpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    ddzq_z_full_e: fa.EdgeKField[vpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], wgtfac_e: fa.EdgeKField[vpfloat],
    wgtfacq_e: fa.EdgeKField[vpfloat], nflatlev: gtx.int32,
    skip_compute_predictor_vertical_advection: bool,
    z_vn_avg_corr: fa.EdgeKField[wpfloat], mass_fl_e_corr: fa.EdgeKField[wpfloat],
    z_theta_v_fl_e_corr: fa.EdgeKField[wpfloat], vn_traj: fa.EdgeKField[wpfloat],
    mass_flx_me: fa.EdgeKField[wpfloat], at_initial_timestep: bool, r_nsubsteps: wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _combined_solve_nh_30_to_38_predictor(
        vt_ie, vn_ie, z_kin_hor_e, z_w_concorr_me, vn, e_flx_avg, geofac_grdiv,
        rbf_vec_coeff_e, z_rho_e, z_theta_v_e, ddzq_z_full_e, ddxn_z_full, ddxt_z_full,
        wgtfac_e, nflatlev, skip_compute_predictor_vertical_advection,
        out=(z_vn_avg, z_graddiv_vn, vt, mass_fl_e, z_theta_v_fl_e, vn_ie, vt_ie, z_kin_hor_e,
             z_w_concorr_me),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _extrapolate_at_top(
        wgtfacq_e, vn, out=vn_ie,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_end - 1, vertical_end)})
    _combined_solve_nh_30_to_38_corrector(
        vn_traj, mass_flx_me, e_flx_avg, vn, z_rho_e, ddzq_z_full_e, z_theta_v_e,
        at_initial_timestep, r_nsubsteps,
        out=(z_vn_avg_corr, mass_fl_e_corr, z_theta_v_fl_e_corr, vn_traj, mass_flx_me),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})


@pytest.mark.parametrize(("skip", "initial"), [(False, True), (True, False)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_combined_solve_nh_30_to_38(backend, skip, initial):
    hs, he, nflatlev = 1, NE - 1, 5
    e2c2e, e2c2eo = TABLES["E2C2E"], TABLES["E2C2EO"]
    a = dict(vn=RNG.standard_normal((NE, NLEV)), e_flx_avg=f64(NE, 5), geofac_grdiv=f64(NE, 5),
             rbf_vec_coeff_e=f64(NE, 4), z_rho_e=f64(NE, NLEV), z_theta_v_e=f64(NE, NLEV),
             ddzq_z_full_e=f32(NE, NLEV), ddxn_z_full=f32(NE, NLEV),
             ddxt_z_full=f32(NE, NLEV), wgtfac_e=f32(NE, NH), wgtfacq_e=f32(NE, NLEV))
    base = dict(z_vn_avg=f64(NE, NLEV), z_graddiv_vn=f32(NE, NLEV), vt=f32(NE, NLEV),
                mass_fl_e=f64(NE, NLEV), z_theta_v_fl_e=f64(NE, NLEV), vt_ie=f32(NE, NH),
                vn_ie=f32(NE, NH), z_kin_hor_e=f32(NE, NLEV), z_w_concorr_me=f32(NE, NLEV),
                z_vn_avg_corr=f64(NE, NLEV), mass_fl_e_corr=f64(NE, NLEV),
                z_theta_v_fl_e_corr=f64(NE, NLEV), vn_traj=f64(NE, NLEV),
                mass_flx_me=f64(NE, NLEV))
    got = {name: v.copy() for name, v in base.items()}
    combined_solve_nh_30_to_38(
        **a, **got, nflatlev=nflatlev, skip_compute_predictor_vertical_advection=skip,
        at_initial_timestep=initial, r_nsubsteps=0.25, horizontal_start=hs, horizontal_end=he,
        vertical_start=0, vertical_end=NH, offset_provider=TABLES, backend=backend)

    vn = a["vn"]
    avg = np.einsum("en,enk->ek", a["e_flx_avg"], vn[e2c2eo])
    graddiv = np.einsum("en,enk->ek", a["geofac_grdiv"], vn[e2c2eo]).astype(np.float32)
    vt = np.einsum("en,enk->ek", a["rbf_vec_coeff_e"], vn[e2c2e]).astype(np.float32)
    mass = a["z_rho_e"] * avg * a["ddzq_z_full_e"].astype(np.float64)
    theta_fl = mass * a["z_theta_v_e"]
    concorr = np.array(base["z_w_concorr_me"])
    concorr[:, nflatlev:] = (vn * a["ddxn_z_full"] + vt.astype(np.float64)
                             * a["ddxt_z_full"])[:, nflatlev:]
    wgt = a["wgtfac_e"][:, :NLEV]
    vn32 = vn.astype(np.float32)
    vn_ie = np.array(base["vn_ie"])
    vn_ie[:, 1:NLEV] = (wgt * vn32 + (np.float32(1.0) - wgt) * below(vn).astype(np.float32)
                        )[:, 1:]
    vn_ie[:, 0] = vn32[:, 0]
    wq = a["wgtfacq_e"].astype(np.float64)
    vn_ie[:, NLEV] = wq[:, -1] * vn[:, -1] + wq[:, -2] * vn[:, -2] + wq[:, -3] * vn[:, -3]
    ekin = np.float32(0.5) * ((vn * vn).astype(np.float32) + vt * vt)
    ekin[:, 0] = (0.5 * (vn * vn + vt.astype(np.float64) ** 2))[:, 0]
    vt_ie = np.array(base["vt_ie"])
    if not skip:
        vt_ie[:, 1:NLEV] = (wgt * vt + (np.float32(1.0) - wgt) * below(vt))[:, 1:]
    vt_ie[:, 0] = vt[:, 0]
    start = (np.zeros((NE, NLEV)), np.zeros((NE, NLEV))) if initial else \
        (base["vn_traj"], base["mass_flx_me"])
    ve = NLEV
    check(got, dict(
        z_vn_avg=inside(avg, base["z_vn_avg"], hs, he, 0, ve),
        z_graddiv_vn=inside(graddiv, base["z_graddiv_vn"], hs, he, 0, ve),
        vt=inside(vt, base["vt"], hs, he, 0, ve),
        mass_fl_e=inside(mass, base["mass_fl_e"], hs, he, 0, ve),
        z_theta_v_fl_e=inside(theta_fl, base["z_theta_v_fl_e"], hs, he, 0, ve),
        vn_ie=inside(vn_ie, base["vn_ie"], hs, he, 0, NH),
        vt_ie=inside(vt_ie, base["vt_ie"], hs, he, 0, ve),
        z_kin_hor_e=inside(ekin, base["z_kin_hor_e"], hs, he, 0, ve),
        z_w_concorr_me=inside(concorr, base["z_w_concorr_me"], hs, he, 0, ve),
        z_vn_avg_corr=inside(avg, base["z_vn_avg_corr"], hs, he, 0, ve),
        mass_fl_e_corr=inside(mass, base["mass_fl_e_corr"], hs, he, 0, ve),
        z_theta_v_fl_e_corr=inside(theta_fl, base["z_theta_v_fl_e_corr"], hs, he, 0, ve),
        vn_traj=inside(start[0] + 0.25 * avg, base["vn_traj"], hs, he, 0, ve),
        mass_flx_me=inside(start[1] + 0.25 * mass, base["mass_flx_me"], hs, he, 0, ve)),
        rtol=2e-5, atol=2e-5)


# ================================================================== nonhydro solver 15 to 28
#
# The predictor of icon4py's fused nonhydro stencils 15 to 28 without the
# horizontal advection of rho and theta: zeros chosen on edge index ranges by
# ``int32`` and ``bool`` scalars (``limited_area & (iadv_rhotheta <= 2)``), the
# horizontal pressure gradient on flat, terrain-following and steep levels
# (``as_offset`` of a strided ``[EC, K]`` offset field), the hydrostatic
# correction of the bottom level carried to every level by a backward scan
# called inside the operator, and the update of vn; beside it the Green-Gauss
# gradients of two cell fields over ``C2E2CO``.


@gtx.scan_operator(axis=KDim, forward=False, init=0.0)
def hydro_corr_last_lev(state: float, z_hydro_corr: float) -> float:
    return state + z_hydro_corr


@gtx.field_operator
def _mo_math_gradients_grad_green_gauss_cell_dsl(
    p_ccpr1: fa.CellKField[vpfloat], p_ccpr2: fa.CellKField[vpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> tuple[
    fa.CellKField[vpfloat], fa.CellKField[vpfloat], fa.CellKField[vpfloat],
    fa.CellKField[vpfloat],
]:
    p_ccpr1_wp, p_ccpr2_wp = astype((p_ccpr1, p_ccpr2), wpfloat)
    return astype(
        (neighbor_sum(geofac_grg_x * p_ccpr1_wp(C2E2CO), axis=C2E2CODim),
         neighbor_sum(geofac_grg_y * p_ccpr1_wp(C2E2CO), axis=C2E2CODim),
         neighbor_sum(geofac_grg_x * p_ccpr2_wp(C2E2CO), axis=C2E2CODim),
         neighbor_sum(geofac_grg_y * p_ccpr2_wp(C2E2CO), axis=C2E2CODim)),
        vpfloat,
    )


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
    inv_dual_edge_length: fa.EdgeField[wpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_exner_ex_pr_wp = astype(z_exner_ex_pr, wpfloat)
    return astype(
        inv_dual_edge_length * (z_exner_ex_pr_wp(E2C[1]) - z_exner_ex_pr_wp(E2C[0])), vpfloat)


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_nonflat_coordinates(
    inv_dual_edge_length: fa.EdgeField[wpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
    ddxn_z_full: fa.EdgeKField[vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_dexner_dz_c_1: fa.CellKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_exner_ex_pr_wp, ddxn_z_full_wp, z_dexner_dz_c_1_wp = astype(
        (z_exner_ex_pr, ddxn_z_full, z_dexner_dz_c_1), wpfloat)
    return astype(
        inv_dual_edge_length * (z_exner_ex_pr_wp(E2C[1]) - z_exner_ex_pr_wp(E2C[0]))
        - ddxn_z_full_wp * neighbor_sum(c_lin_e * z_dexner_dz_c_1_wp(E2C), axis=E2CDim),
        vpfloat,
    )


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
    inv_dual_edge_length: fa.EdgeField[wpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], vpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], gtx.int32],
    z_dexner_dz_c_1: fa.CellKField[vpfloat], z_dexner_dz_c_2: fa.CellKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_exner_ex_pr_wp, zdiff_gradp_wp = astype((z_exner_ex_pr, zdiff_gradp), wpfloat)
    ex_0 = z_exner_ex_pr_wp(E2C[0])(as_offset(Koff, ikoffset(E2EC[0])))
    ex_1 = z_exner_ex_pr_wp(E2C[1])(as_offset(Koff, ikoffset(E2EC[1])))
    d1_0 = astype(z_dexner_dz_c_1(E2C[0])(as_offset(Koff, ikoffset(E2EC[0]))), wpfloat)
    d1_1 = astype(z_dexner_dz_c_1(E2C[1])(as_offset(Koff, ikoffset(E2EC[1]))), wpfloat)
    d2_0 = astype(z_dexner_dz_c_2(E2C[0])(as_offset(Koff, ikoffset(E2EC[0]))), wpfloat)
    d2_1 = astype(z_dexner_dz_c_2(E2C[1])(as_offset(Koff, ikoffset(E2EC[1]))), wpfloat)
    dz_0, dz_1 = zdiff_gradp_wp(E2EC[0]), zdiff_gradp_wp(E2EC[1])
    return astype(
        inv_dual_edge_length * (
            (ex_1 + dz_1 * (d1_1 + dz_1 * d2_1)) - (ex_0 + dz_0 * (d1_0 + dz_0 * d2_0))),
        vpfloat,
    )


@gtx.field_operator
def _compute_hydrostatic_correction_term(
    theta_v: fa.CellKField[wpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], vpfloat],
    theta_v_ic: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat], grav_o_cpd: wpfloat,
) -> fa.EdgeKField[vpfloat]:
    zdiff_gradp_wp = astype(zdiff_gradp, wpfloat)
    th_0 = theta_v(E2C[0])(as_offset(Koff, ikoffset(E2EC[0])))
    th_1 = theta_v(E2C[1])(as_offset(Koff, ikoffset(E2EC[1])))
    ic_0 = theta_v_ic(E2C[0])(as_offset(Koff, ikoffset(E2EC[0])))
    ic_1 = theta_v_ic(E2C[1])(as_offset(Koff, ikoffset(E2EC[1])))
    ic_p1_0 = theta_v_ic(E2C[0])(as_offset(Koff, ikoffset(E2EC[0]) + 1))
    ic_p1_1 = theta_v_ic(E2C[1])(as_offset(Koff, ikoffset(E2EC[1]) + 1))
    inv_0 = astype(inv_ddqz_z_full(E2C[0])(as_offset(Koff, ikoffset(E2EC[0]))), wpfloat)
    inv_1 = astype(inv_ddqz_z_full(E2C[1])(as_offset(Koff, ikoffset(E2EC[1]))), wpfloat)
    z_theta_0 = th_0 + zdiff_gradp_wp(E2EC[0]) * (ic_0 - ic_p1_0) * inv_0
    z_theta_1 = th_1 + zdiff_gradp_wp(E2EC[1]) * (ic_1 - ic_p1_1) * inv_1
    return astype(
        grav_o_cpd * inv_dual_edge_length * (z_theta_1 - z_theta_0) * wpfloat("4.0")
        / ((z_theta_0 + z_theta_1) * (z_theta_0 + z_theta_1)),
        vpfloat,
    )


@gtx.field_operator
def _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure(
    ipeidx_dsl: fa.EdgeKField[bool], pg_exdist: fa.EdgeKField[vpfloat],
    z_hydro_corr: fa.EdgeKField[wpfloat], z_gradh_exner: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_gradh_exner_wp = astype(z_gradh_exner, wpfloat)
    return astype(
        where(ipeidx_dsl, z_gradh_exner_wp + z_hydro_corr * astype(pg_exdist, wpfloat),
              z_gradh_exner_wp),
        vpfloat,
    )


@gtx.field_operator
def _add_temporal_tendencies_to_vn(
    vn_nnow: fa.EdgeKField[wpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat], dtime: wpfloat, cpd: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    ddt_vn_apc_ntl1_wp, ddt_vn_phy_wp, z_gradh_exner_wp = astype(
        (ddt_vn_apc_ntl1, ddt_vn_phy, z_gradh_exner), wpfloat)
    return vn_nnow + dtime * (
        ddt_vn_apc_ntl1_wp + ddt_vn_phy_wp - cpd * z_theta_v_e * z_gradh_exner_wp)


@gtx.field_operator
def _add_analysis_increments_to_vn(
    vn_incr: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat], iau_wgt_dyn: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    return vn + iau_wgt_dyn * astype(vn_incr, wpfloat)


@gtx.field_operator
def _fused_solve_nonhydro_stencil_15_to_28_predictor(
    rho_ref_me: fa.EdgeKField[vpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
    ddxn_z_full: fa.EdgeKField[vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_dexner_dz_c_1: fa.CellKField[vpfloat], z_dexner_dz_c_2: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], vpfloat],
    theta_v_ic: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool], pg_exdist: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], vn_incr: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    z_hydro_corr: fa.EdgeKField[wpfloat], z_gradh_exner: fa.EdgeKField[vpfloat],
    z_rho_e: fa.EdgeKField[wpfloat], horz_idx: fa.EdgeField[gtx.int32],
    vert_idx: fa.KField[gtx.int32], grav_o_cpd: wpfloat, dtime: wpfloat, cpd: wpfloat,
    iau_wgt_dyn: wpfloat, is_iau_active: bool, limited_area: bool,
    start_edge_halo_level_2: gtx.int32, end_edge_halo_level_2: gtx.int32,
    start_edge_lateral_boundary: gtx.int32, end_edge_halo: gtx.int32,
    start_edge_nudging_level_2: gtx.int32, end_edge_local: gtx.int32,
    end_edge_end: gtx.int32, iadv_rhotheta: gtx.int32, igradp_method: gtx.int32,
    TAYLOR_HYDRO: gtx.int32, nlev: gtx.int32, nflatlev: gtx.int32, nflat_gradp: gtx.int32,
) -> tuple[
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[wpfloat],
]:
    vert_idx = broadcast(vert_idx, (EdgeDim, KDim))
    (z_rho_e, z_theta_v_e) = (
        where(
            (start_edge_halo_level_2 <= horz_idx < end_edge_halo_level_2),
            (broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
             broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim))),
            (z_rho_e, z_theta_v_e),
        )
        if iadv_rhotheta <= 2
        else (z_rho_e, z_theta_v_e)
    )
    (z_rho_e, z_theta_v_e) = (
        where(
            (start_edge_lateral_boundary <= horz_idx < end_edge_halo),
            (broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
             broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim))),
            (z_rho_e, z_theta_v_e),
        )
        if limited_area & (iadv_rhotheta <= 2)
        else (z_rho_e, z_theta_v_e)
    )
    z_gradh_exner = where(
        (start_edge_nudging_level_2 <= horz_idx < end_edge_local) & (vert_idx < nflatlev),
        _compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
            inv_dual_edge_length=inv_dual_edge_length, z_exner_ex_pr=z_exner_ex_pr),
        z_gradh_exner,
    )
    z_gradh_exner = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local)
            & (nflatlev <= vert_idx < (nflat_gradp + gtx.int32(1))),
            _compute_horizontal_gradient_of_exner_pressure_for_nonflat_coordinates(
                inv_dual_edge_length=inv_dual_edge_length, z_exner_ex_pr=z_exner_ex_pr,
                ddxn_z_full=ddxn_z_full, c_lin_e=c_lin_e, z_dexner_dz_c_1=z_dexner_dz_c_1),
            z_gradh_exner,
        )
        if igradp_method == TAYLOR_HYDRO
        else z_gradh_exner
    )
    z_gradh_exner = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local)
            & ((nflat_gradp + gtx.int32(1)) <= vert_idx),
            _compute_horizontal_gradient_of_exner_pressure_for_multiple_levels(
                inv_dual_edge_length=inv_dual_edge_length, z_exner_ex_pr=z_exner_ex_pr,
                zdiff_gradp=zdiff_gradp, ikoffset=ikoffset, z_dexner_dz_c_1=z_dexner_dz_c_1,
                z_dexner_dz_c_2=z_dexner_dz_c_2),
            z_gradh_exner,
        )
        if igradp_method == TAYLOR_HYDRO
        else z_gradh_exner
    )
    z_hydro_corr = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local) & ((nlev - 1) <= vert_idx),
            astype(_compute_hydrostatic_correction_term(
                theta_v=theta_v, ikoffset=ikoffset, zdiff_gradp=zdiff_gradp,
                theta_v_ic=theta_v_ic, inv_ddqz_z_full=inv_ddqz_z_full,
                inv_dual_edge_length=inv_dual_edge_length, grav_o_cpd=grav_o_cpd), wpfloat),
            z_hydro_corr,
        )
        if igradp_method == TAYLOR_HYDRO
        else z_hydro_corr
    )
    hydro_corr_horizontal = where((vert_idx == (nlev - 1)), z_hydro_corr, 0.0)
    hydro_corr_horizontal_nlev = hydro_corr_last_lev(hydro_corr_horizontal)
    z_gradh_exner = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_end),
            _apply_hydrostatic_correction_to_horizontal_gradient_of_exner_pressure(
                ipeidx_dsl=ipeidx_dsl, pg_exdist=pg_exdist,
                z_hydro_corr=hydro_corr_horizontal_nlev, z_gradh_exner=z_gradh_exner),
            z_gradh_exner,
        )
        if igradp_method == TAYLOR_HYDRO
        else z_gradh_exner
    )
    vn = where(
        (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
        _add_temporal_tendencies_to_vn(
            vn_nnow=vn, ddt_vn_apc_ntl1=ddt_vn_apc_ntl1, ddt_vn_phy=ddt_vn_phy,
            z_theta_v_e=z_theta_v_e, z_gradh_exner=z_gradh_exner, dtime=dtime, cpd=cpd),
        vn,
    )
    vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _add_analysis_increments_to_vn(vn_incr=vn_incr, vn=vn, iau_wgt_dyn=iau_wgt_dyn),
            vn,
        )
        if is_iau_active
        else vn
    )
    return z_rho_e, z_theta_v_e, z_gradh_exner, vn


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def fused_solve_nonhydro_stencil_15_to_28_predictor(
    z_rth_pr_1: fa.CellKField[vpfloat], z_rth_pr_2: fa.CellKField[vpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    z_grad_rth_1: fa.CellKField[vpfloat], z_grad_rth_2: fa.CellKField[vpfloat],
    z_grad_rth_3: fa.CellKField[vpfloat], z_grad_rth_4: fa.CellKField[vpfloat],
    rho_ref_me: fa.EdgeKField[vpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
    ddxn_z_full: fa.EdgeKField[vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_dexner_dz_c_1: fa.CellKField[vpfloat], z_dexner_dz_c_2: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], vpfloat],
    theta_v_ic: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool], pg_exdist: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], vn_incr: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    z_hydro_corr: fa.EdgeKField[wpfloat], z_gradh_exner: fa.EdgeKField[vpfloat],
    z_rho_e: fa.EdgeKField[wpfloat], horz_idx: fa.EdgeField[gtx.int32],
    vert_idx: fa.KField[gtx.int32], grav_o_cpd: wpfloat, dtime: wpfloat, cpd: wpfloat,
    iau_wgt_dyn: wpfloat, is_iau_active: bool, limited_area: bool,
    start_edge_halo_level_2: gtx.int32, end_edge_halo_level_2: gtx.int32,
    start_edge_lateral_boundary: gtx.int32, end_edge_halo: gtx.int32,
    start_edge_nudging_level_2: gtx.int32, end_edge_local: gtx.int32,
    end_edge_end: gtx.int32, iadv_rhotheta: gtx.int32, igradp_method: gtx.int32,
    TAYLOR_HYDRO: gtx.int32, nlev: gtx.int32, nflatlev: gtx.int32, nflat_gradp: gtx.int32,
    cell_start: gtx.int32, cell_end: gtx.int32,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _mo_math_gradients_grad_green_gauss_cell_dsl(
        z_rth_pr_1, z_rth_pr_2, geofac_grg_x, geofac_grg_y,
        out=(z_grad_rth_1, z_grad_rth_2, z_grad_rth_3, z_grad_rth_4),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _fused_solve_nonhydro_stencil_15_to_28_predictor(
        rho_ref_me, z_exner_ex_pr, ddxn_z_full, c_lin_e, z_dexner_dz_c_1, z_dexner_dz_c_2,
        theta_v, ikoffset, zdiff_gradp, theta_v_ic, inv_ddqz_z_full, ipeidx_dsl, pg_exdist,
        inv_dual_edge_length, ddt_vn_apc_ntl1, ddt_vn_phy, vn_incr, vn, z_theta_v_e,
        z_hydro_corr, z_gradh_exner, z_rho_e, horz_idx, vert_idx, grav_o_cpd, dtime, cpd,
        iau_wgt_dyn, is_iau_active, limited_area, start_edge_halo_level_2,
        end_edge_halo_level_2, start_edge_lateral_boundary, end_edge_halo,
        start_edge_nudging_level_2, end_edge_local, end_edge_end, iadv_rhotheta,
        igradp_method, TAYLOR_HYDRO, nlev, nflatlev, nflat_gradp,
        out=(z_rho_e, z_theta_v_e, z_gradh_exner, vn),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


NONHYDRO_BOUNDS = dict(start_edge_halo_level_2=5, end_edge_halo_level_2=7,
                       start_edge_lateral_boundary=0, end_edge_halo=3,
                       start_edge_nudging_level_2=1, end_edge_local=NE - 1, end_edge_end=NE,
                       nflatlev=3, nflat_gradp=6)


def nonhydro_inputs():
    kk = np.arange(NLEV)
    # the levels the steep-slope offsets reach stay in the column (one more for theta_v_ic)
    ikoffset = np.minimum(RNG.integers(0, 3, (NE * 2, NLEV)), NLEV - 1 - kk).astype(np.int32)
    return dict(
        rho_ref_me=f32(NE, NLEV), z_exner_ex_pr=f32(NC, NLEV), ddxn_z_full=f32(NE, NLEV),
        c_lin_e=f64(NE, 2), z_dexner_dz_c_1=f32(NC, NLEV), z_dexner_dz_c_2=f32(NC, NLEV),
        theta_v=RNG.uniform(250.0, 300.0, (NC, NLEV)), ikoffset=ikoffset,
        zdiff_gradp=f32(NE * 2, NLEV), theta_v_ic=RNG.uniform(250.0, 300.0, (NC, NH)),
        inv_ddqz_z_full=f32(NC, NLEV) + 0.5, ipeidx_dsl=RNG.random((NE, NLEV)) < 0.5,
        pg_exdist=f32(NE, NLEV), inv_dual_edge_length=f64(NE) + 0.5,
        ddt_vn_apc_ntl1=f32(NE, NLEV), ddt_vn_phy=f32(NE, NLEV), vn_incr=f32(NE, NLEV),
        z_hydro_corr=f64(NE, NLEV), horz_idx=np.arange(NE, dtype=np.int32),
        vert_idx=kk.astype(np.int32))


def nonhydro_predictor_numpy(a, s, z_rho_e, z_theta_v_e, z_gradh_exner, vn, iadv_rhotheta,
                             igradp_method, limited_area, is_iau_active):
    """z_rho_e, z_theta_v_e, z_gradh_exner and vn after the predictor."""
    b = NONHYDRO_BOUNDS
    e2c, kk = TABLES["E2C"], np.arange(NLEV)
    sh2, eh2 = b["start_edge_halo_level_2"], b["end_edge_halo_level_2"]
    slb, ehalo = b["start_edge_lateral_boundary"], b["end_edge_halo"]
    nflatlev, nflat_gradp = b["nflatlev"], b["nflat_gradp"]
    rows = slice(b["start_edge_nudging_level_2"], b["end_edge_local"])
    rho_e, theta_e = np.array(z_rho_e), np.array(z_theta_v_e)
    if iadv_rhotheta <= 2:
        rho_e[sh2:eh2] = theta_e[sh2:eh2] = 0.0
        if limited_area:
            rho_e[slb:ehalo] = theta_e[slb:ehalo] = 0.0
    ex = a["z_exner_ex_pr"].astype(np.float64)
    idl = a["inv_dual_edge_length"][:, None]
    grad = np.array(z_gradh_exner)
    flat = (idl * (ex[e2c[:, 1]] - ex[e2c[:, 0]])).astype(np.float32)
    grad[rows, :nflatlev] = flat[rows, :nflatlev]
    if igradp_method == 3:
        d1 = a["z_dexner_dz_c_1"].astype(np.float64)
        nonflat = (idl * (ex[e2c[:, 1]] - ex[e2c[:, 0]]) - a["ddxn_z_full"].astype(np.float64)
                   * np.einsum("en,enk->ek", a["c_lin_e"], d1[e2c])).astype(np.float32)
        grad[rows, nflatlev:nflat_gradp + 1] = nonflat[rows, nflatlev:nflat_gradp + 1]
        ik = a["ikoffset"].reshape(NE, 2, NLEV)
        dz = a["zdiff_gradp"].reshape(NE, 2, NLEV).astype(np.float64)
        d2 = a["z_dexner_dz_c_2"].astype(np.float64)

        def at(x, j, extra=0):
            return x[e2c[:, j][:, None], kk[None, :] + ik[:, j] + extra]

        side = [at(ex, j) + dz[:, j] * (at(d1, j) + dz[:, j] * at(d2, j)) for j in (0, 1)]
        steep = (idl * (side[1] - side[0])).astype(np.float32)
        grad[rows, nflat_gradp + 1:] = steep[rows, nflat_gradp + 1:]
        inv = a["inv_ddqz_z_full"].astype(np.float64)
        th = [at(a["theta_v"], j) + dz[:, j] * (at(a["theta_v_ic"], j)
                                                 - at(a["theta_v_ic"], j, 1)) * at(inv, j)
              for j in (0, 1)]
        corr = (s["grav_o_cpd"] * idl * (th[1] - th[0]) * 4.0 / (th[0] + th[1]) ** 2
                ).astype(np.float32).astype(np.float64)
        hydro = np.array(a["z_hydro_corr"])
        hydro[rows, NLEV - 1] = corr[rows, NLEV - 1]
        bottom = np.repeat(hydro[:, NLEV - 1:], NLEV, axis=1)
        g64 = grad.astype(np.float64)
        applied = np.where(a["ipeidx_dsl"], g64 + bottom * a["pg_exdist"].astype(np.float64),
                           g64).astype(np.float32)
        lo = b["start_edge_nudging_level_2"]
        grad[lo:b["end_edge_end"]] = applied[lo:b["end_edge_end"]]
    vn = np.array(vn)
    vn[rows] = (vn + s["dtime"] * (a["ddt_vn_apc_ntl1"].astype(np.float64)
                                   + a["ddt_vn_phy"] - s["cpd"] * theta_e
                                   * grad.astype(np.float64)))[rows]
    if is_iau_active:
        vn[rows] += s["iau_wgt_dyn"] * a["vn_incr"][rows].astype(np.float64)
    return rho_e, theta_e, grad, vn


@pytest.mark.parametrize(("iadv_rhotheta", "igradp_method", "limited_area", "is_iau_active"),
                         [(2, 3, True, True), (3, 1, False, False)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_solve_nonhydro_stencil_15_to_28_predictor(
        backend, iadv_rhotheta, igradp_method, limited_area, is_iau_active):
    cs, ce = 1, NC
    c2e2co = TABLES["C2E2CO"]
    a = nonhydro_inputs()
    cells = dict(z_rth_pr_1=f32(NC, NLEV), z_rth_pr_2=f32(NC, NLEV), geofac_grg_x=f64(NC, 4),
                 geofac_grg_y=f64(NC, 4))
    base = dict(z_grad_rth_1=f32(NC, NLEV), z_grad_rth_2=f32(NC, NLEV),
                z_grad_rth_3=f32(NC, NLEV), z_grad_rth_4=f32(NC, NLEV),
                vn=RNG.standard_normal((NE, NLEV)), z_gradh_exner=f32(NE, NLEV),
                z_rho_e=f64(NE, NLEV), z_theta_v_e=f64(NE, NLEV))
    got = {name: v.copy() for name, v in base.items()}
    s = dict(grav_o_cpd=9.80665 / 1004.64, dtime=3.0, cpd=1004.64, iau_wgt_dyn=0.4)
    fused_solve_nonhydro_stencil_15_to_28_predictor(
        **a, **cells, **got, **s, **NONHYDRO_BOUNDS, is_iau_active=is_iau_active,
        limited_area=limited_area, iadv_rhotheta=iadv_rhotheta, igradp_method=igradp_method,
        TAYLOR_HYDRO=3, nlev=NLEV, cell_start=cs, cell_end=ce, horizontal_start=0,
        horizontal_end=NE, vertical_start=0, vertical_end=NLEV, offset_provider=TABLES,
        backend=backend)

    grads = [np.einsum("cn,cnk->ck", g, x.astype(np.float64)[c2e2co]).astype(np.float32)
             for x in (cells["z_rth_pr_1"], cells["z_rth_pr_2"])
             for g in (cells["geofac_grg_x"], cells["geofac_grg_y"])]
    rho_e, theta_e, grad, vn = nonhydro_predictor_numpy(
        a, s, base["z_rho_e"], base["z_theta_v_e"], base["z_gradh_exner"], base["vn"],
        iadv_rhotheta, igradp_method, limited_area, is_iau_active)
    check(got, dict(
        z_grad_rth_1=inside(grads[0], base["z_grad_rth_1"], cs, ce, 0, NLEV),
        z_grad_rth_2=inside(grads[1], base["z_grad_rth_2"], cs, ce, 0, NLEV),
        z_grad_rth_3=inside(grads[2], base["z_grad_rth_3"], cs, ce, 0, NLEV),
        z_grad_rth_4=inside(grads[3], base["z_grad_rth_4"], cs, ce, 0, NLEV),
        z_rho_e=rho_e, z_theta_v_e=theta_e, z_gradh_exner=grad, vn=vn),
        rtol=2e-5, atol=2e-5)


# The corrector (divergence damping chosen by int32, float and bool scalars) and
# the operator choosing predictor or corrector by istep, called without domain=.


@gtx.field_operator
def _add_vertical_wind_derivative_to_divergence_damping(
    hmask_dd3d: fa.EdgeField[wpfloat], scalfac_dd3d: fa.KField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat], z_dwdz_dd: fa.CellKField[vpfloat],
    z_graddiv_vn: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_dwdz_dd_wp = astype(z_dwdz_dd, wpfloat)
    return astype(
        astype(z_graddiv_vn, wpfloat) + hmask_dd3d * scalfac_dd3d * inv_dual_edge_length
        * (z_dwdz_dd_wp(E2C[1]) - z_dwdz_dd_wp(E2C[0])),
        vpfloat,
    )


@gtx.field_operator
def _add_temporal_tendencies_to_vn_by_interpolating_between_time_levels(
    vn_nnow: fa.EdgeKField[wpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_apc_ntl2: fa.EdgeKField[vpfloat], ddt_vn_phy: fa.EdgeKField[vpfloat],
    z_theta_v_e: fa.EdgeKField[wpfloat], z_gradh_exner: fa.EdgeKField[vpfloat],
    dtime: wpfloat, wgt_nnow_vel: wpfloat, wgt_nnew_vel: wpfloat, cpd: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    apc1, apc2, phy, gradh = astype(
        (ddt_vn_apc_ntl1, ddt_vn_apc_ntl2, ddt_vn_phy, z_gradh_exner), wpfloat)
    return vn_nnow + dtime * (
        wgt_nnow_vel * apc1 + wgt_nnew_vel * apc2 + phy - cpd * z_theta_v_e * gradh)


@gtx.field_operator
def _compute_graddiv2_of_vn(
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    z_graddiv_vn: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    z_graddiv_vn_wp = astype(z_graddiv_vn, wpfloat)
    return astype(neighbor_sum(z_graddiv_vn_wp(E2C2EO) * geofac_grdiv, axis=E2C2EODim),
                  vpfloat)


@gtx.field_operator
def _apply_2nd_order_divergence_damping(
    z_graddiv_vn: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat], scal_divdamp_o2: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    return vn + scal_divdamp_o2 * astype(z_graddiv_vn, wpfloat)


@gtx.field_operator
def _apply_weighted_2nd_and_4th_order_divergence_damping(
    scal_divdamp: fa.KField[wpfloat], bdy_divdamp: fa.KField[wpfloat],
    nudgecoeff_e: fa.EdgeField[wpfloat], z_graddiv2_vn: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return vn + (scal_divdamp + bdy_divdamp * nudgecoeff_e) * astype(z_graddiv2_vn, wpfloat)


@gtx.field_operator
def _apply_4th_order_divergence_damping(
    scal_divdamp: fa.KField[wpfloat], z_graddiv2_vn: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return vn + scal_divdamp * astype(z_graddiv2_vn, wpfloat)


@gtx.field_operator
def _fused_solve_nonhydro_stencil_15_to_28_corrector(
    hmask_dd3d: fa.EdgeField[wpfloat], scalfac_dd3d: fa.KField[wpfloat],
    z_dwdz_dd: fa.CellKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    ddt_vn_apc_ntl2: fa.EdgeKField[vpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], z_graddiv_vn: fa.EdgeKField[vpfloat],
    vn_incr: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
    z_theta_v_e: fa.EdgeKField[wpfloat], z_gradh_exner: fa.EdgeKField[vpfloat],
    z_graddiv2_vn: fa.EdgeKField[vpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    scal_divdamp: fa.KField[wpfloat], bdy_divdamp: fa.KField[wpfloat],
    nudgecoeff_e: fa.EdgeField[wpfloat], horz_idx: fa.EdgeField[gtx.int32],
    vert_idx: fa.KField[gtx.int32], wgt_nnow_vel: wpfloat, wgt_nnew_vel: wpfloat,
    dtime: wpfloat, cpd: wpfloat, iau_wgt_dyn: wpfloat, is_iau_active: bool,
    divdamp_fac: wpfloat, divdamp_fac_o2: wpfloat, divdamp_order: gtx.int32,
    scal_divdamp_o2: wpfloat, limited_area: bool, itime_scheme: gtx.int32,
    COMBINED: gtx.int32, FOURTH_ORDER: gtx.int32,
    start_edge_lateral_boundary_level_7: gtx.int32, end_edge_halo_level_2: gtx.int32,
    start_edge_nudging_level_2: gtx.int32, end_edge_local: gtx.int32,
    kstart_dd3d: gtx.int32,
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[wpfloat]]:
    vert_idx = broadcast(vert_idx, (EdgeDim, KDim))
    z_graddiv_vn = where(
        (start_edge_lateral_boundary_level_7 <= horz_idx < end_edge_halo_level_2)
        & (kstart_dd3d <= vert_idx),
        _add_vertical_wind_derivative_to_divergence_damping(
            hmask_dd3d=hmask_dd3d, scalfac_dd3d=scalfac_dd3d,
            inv_dual_edge_length=inv_dual_edge_length, z_dwdz_dd=z_dwdz_dd,
            z_graddiv_vn=z_graddiv_vn),
        z_graddiv_vn,
    )
    vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _add_temporal_tendencies_to_vn_by_interpolating_between_time_levels(
                vn_nnow=vn, ddt_vn_apc_ntl1=ddt_vn_apc_ntl1, ddt_vn_apc_ntl2=ddt_vn_apc_ntl2,
                ddt_vn_phy=ddt_vn_phy, z_theta_v_e=z_theta_v_e, z_gradh_exner=z_gradh_exner,
                dtime=dtime, wgt_nnow_vel=wgt_nnow_vel, wgt_nnew_vel=wgt_nnew_vel, cpd=cpd),
            vn,
        )
        if itime_scheme == 4
        else vn
    )
    z_graddiv2_vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _compute_graddiv2_of_vn(geofac_grdiv=geofac_grdiv, z_graddiv_vn=z_graddiv_vn),
            z_graddiv2_vn,
        )
        if (divdamp_order == COMBINED) | (divdamp_order == FOURTH_ORDER)
        else z_graddiv2_vn
    )
    vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _apply_2nd_order_divergence_damping(
                z_graddiv_vn=z_graddiv_vn, vn=vn, scal_divdamp_o2=scal_divdamp_o2),
            vn,
        )
        if ((divdamp_order == COMBINED) & (scal_divdamp_o2 > 1.0e-6))
        else vn
    )
    vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _apply_weighted_2nd_and_4th_order_divergence_damping(
                scal_divdamp=scal_divdamp, bdy_divdamp=bdy_divdamp, nudgecoeff_e=nudgecoeff_e,
                z_graddiv2_vn=z_graddiv2_vn, vn=vn),
            vn,
        )
        if ((divdamp_order == COMBINED) & (divdamp_fac_o2 <= (4.0 * divdamp_fac))
            & limited_area)
        else vn
    )
    vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _apply_4th_order_divergence_damping(
                scal_divdamp=scal_divdamp, z_graddiv2_vn=z_graddiv2_vn, vn=vn),
            vn,
        )
        if ((divdamp_order == COMBINED) & (divdamp_fac_o2 <= (4.0 * divdamp_fac))
            & (not limited_area))
        else vn
    )
    vn = (
        where(
            (start_edge_nudging_level_2 <= horz_idx < end_edge_local),
            _add_analysis_increments_to_vn(vn_incr=vn_incr, vn=vn, iau_wgt_dyn=iau_wgt_dyn),
            vn,
        )
        if is_iau_active
        else vn
    )
    return z_graddiv_vn, vn


@gtx.field_operator
def _fused_solve_nonhydro_stencil_15_to_28(
    rho_ref_me: fa.EdgeKField[vpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
    ddxn_z_full: fa.EdgeKField[vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_dexner_dz_c_1: fa.CellKField[vpfloat], z_dexner_dz_c_2: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], vpfloat],
    theta_v_ic: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool], pg_exdist: fa.EdgeKField[vpfloat],
    hmask_dd3d: fa.EdgeField[wpfloat], scalfac_dd3d: fa.KField[wpfloat],
    z_dwdz_dd: fa.CellKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    ddt_vn_apc_ntl2: fa.EdgeKField[vpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], vn_incr: fa.EdgeKField[vpfloat],
    horz_idx: fa.EdgeField[gtx.int32], vert_idx: fa.KField[gtx.int32],
    bdy_divdamp: fa.KField[wpfloat], nudgecoeff_e: fa.EdgeField[wpfloat],
    z_hydro_corr: fa.EdgeKField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    z_graddiv2_vn: fa.EdgeKField[vpfloat], scal_divdamp: fa.KField[wpfloat],
    z_rho_e: fa.EdgeKField[wpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
    z_graddiv_vn: fa.EdgeKField[vpfloat], divdamp_fac: wpfloat, divdamp_fac_o2: wpfloat,
    wgt_nnow_vel: wpfloat, wgt_nnew_vel: wpfloat, dtime: wpfloat, cpd: wpfloat,
    iau_wgt_dyn: wpfloat, is_iau_active: bool, itime_scheme: gtx.int32,
    grav_o_cpd: wpfloat, divdamp_order: gtx.int32, scal_divdamp_o2: wpfloat,
    istep: gtx.int32, limited_area: bool, start_edge_halo_level_2: gtx.int32,
    end_edge_halo_level_2: gtx.int32, start_edge_lateral_boundary: gtx.int32,
    end_edge_halo: gtx.int32, start_edge_lateral_boundary_level_7: gtx.int32,
    start_edge_nudging_level_2: gtx.int32, end_edge_local: gtx.int32,
    end_edge_end: gtx.int32, iadv_rhotheta: gtx.int32, igradp_method: gtx.int32,
    TAYLOR_HYDRO: gtx.int32, nlev: gtx.int32, kstart_dd3d: gtx.int32, COMBINED: gtx.int32,
    FOURTH_ORDER: gtx.int32, nflatlev: gtx.int32, nflat_gradp: gtx.int32,
) -> tuple[
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat],
]:
    (z_rho_e, z_theta_v_e, z_gradh_exner, vn) = (
        _fused_solve_nonhydro_stencil_15_to_28_predictor(
            rho_ref_me=rho_ref_me, z_exner_ex_pr=z_exner_ex_pr, ddxn_z_full=ddxn_z_full,
            c_lin_e=c_lin_e, z_dexner_dz_c_1=z_dexner_dz_c_1, z_dexner_dz_c_2=z_dexner_dz_c_2,
            theta_v=theta_v, ikoffset=ikoffset, zdiff_gradp=zdiff_gradp,
            theta_v_ic=theta_v_ic, inv_ddqz_z_full=inv_ddqz_z_full, ipeidx_dsl=ipeidx_dsl,
            pg_exdist=pg_exdist, inv_dual_edge_length=inv_dual_edge_length,
            ddt_vn_apc_ntl1=ddt_vn_apc_ntl1, ddt_vn_phy=ddt_vn_phy, vn_incr=vn_incr, vn=vn,
            z_theta_v_e=z_theta_v_e, z_hydro_corr=z_hydro_corr, z_gradh_exner=z_gradh_exner,
            z_rho_e=z_rho_e, horz_idx=horz_idx, vert_idx=vert_idx, grav_o_cpd=grav_o_cpd,
            dtime=dtime, cpd=cpd, iau_wgt_dyn=iau_wgt_dyn, is_iau_active=is_iau_active,
            limited_area=limited_area, start_edge_halo_level_2=start_edge_halo_level_2,
            end_edge_halo_level_2=end_edge_halo_level_2,
            start_edge_lateral_boundary=start_edge_lateral_boundary,
            end_edge_halo=end_edge_halo, start_edge_nudging_level_2=start_edge_nudging_level_2,
            end_edge_local=end_edge_local, end_edge_end=end_edge_end,
            iadv_rhotheta=iadv_rhotheta, igradp_method=igradp_method,
            TAYLOR_HYDRO=TAYLOR_HYDRO, nlev=nlev, nflatlev=nflatlev, nflat_gradp=nflat_gradp,
        )
        if istep == 1
        else (z_rho_e, z_theta_v_e, z_gradh_exner, vn)
    )
    (z_graddiv_vn, vn) = (
        _fused_solve_nonhydro_stencil_15_to_28_corrector(
            hmask_dd3d=hmask_dd3d, scalfac_dd3d=scalfac_dd3d, z_dwdz_dd=z_dwdz_dd,
            inv_dual_edge_length=inv_dual_edge_length, ddt_vn_apc_ntl2=ddt_vn_apc_ntl2,
            ddt_vn_apc_ntl1=ddt_vn_apc_ntl1, ddt_vn_phy=ddt_vn_phy, z_graddiv_vn=z_graddiv_vn,
            vn_incr=vn_incr, vn=vn, z_theta_v_e=z_theta_v_e, z_gradh_exner=z_gradh_exner,
            z_graddiv2_vn=z_graddiv2_vn, geofac_grdiv=geofac_grdiv,
            scal_divdamp=scal_divdamp, bdy_divdamp=bdy_divdamp, nudgecoeff_e=nudgecoeff_e,
            horz_idx=horz_idx, vert_idx=vert_idx, wgt_nnow_vel=wgt_nnow_vel,
            wgt_nnew_vel=wgt_nnew_vel, dtime=dtime, cpd=cpd, iau_wgt_dyn=iau_wgt_dyn,
            is_iau_active=is_iau_active, divdamp_fac=divdamp_fac,
            divdamp_fac_o2=divdamp_fac_o2, divdamp_order=divdamp_order,
            scal_divdamp_o2=scal_divdamp_o2, limited_area=limited_area,
            itime_scheme=itime_scheme, COMBINED=COMBINED, FOURTH_ORDER=FOURTH_ORDER,
            start_edge_lateral_boundary_level_7=start_edge_lateral_boundary_level_7,
            end_edge_halo_level_2=end_edge_halo_level_2,
            start_edge_nudging_level_2=start_edge_nudging_level_2,
            end_edge_local=end_edge_local, kstart_dd3d=kstart_dd3d,
        )
        if istep > 1
        else (z_graddiv_vn, vn)
    )
    return z_rho_e, z_theta_v_e, z_gradh_exner, vn, z_graddiv_vn


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def fused_solve_nonhydro_stencil_15_to_28(
    rho_ref_me: fa.EdgeKField[vpfloat], z_exner_ex_pr: fa.CellKField[vpfloat],
    ddxn_z_full: fa.EdgeKField[vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_dexner_dz_c_1: fa.CellKField[vpfloat], z_dexner_dz_c_2: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    ikoffset: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], gtx.int32],
    zdiff_gradp: gtx.Field[gtx.Dims[dims.ECDim, dims.KDim], vpfloat],
    theta_v_ic: fa.CellKField[wpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat],
    ipeidx_dsl: fa.EdgeKField[bool], pg_exdist: fa.EdgeKField[vpfloat],
    hmask_dd3d: fa.EdgeField[wpfloat], scalfac_dd3d: fa.KField[wpfloat],
    z_dwdz_dd: fa.CellKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    ddt_vn_apc_ntl2: fa.EdgeKField[vpfloat], ddt_vn_apc_ntl1: fa.EdgeKField[vpfloat],
    ddt_vn_phy: fa.EdgeKField[vpfloat], vn_incr: fa.EdgeKField[vpfloat],
    horz_idx: fa.EdgeField[gtx.int32], vert_idx: fa.KField[gtx.int32],
    bdy_divdamp: fa.KField[wpfloat], nudgecoeff_e: fa.EdgeField[wpfloat],
    z_hydro_corr: fa.EdgeKField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    z_graddiv2_vn: fa.EdgeKField[vpfloat], scal_divdamp: fa.KField[wpfloat],
    z_rho_e: fa.EdgeKField[wpfloat], z_theta_v_e: fa.EdgeKField[wpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
    z_graddiv_vn: fa.EdgeKField[vpfloat], divdamp_fac: wpfloat, divdamp_fac_o2: wpfloat,
    wgt_nnow_vel: wpfloat, wgt_nnew_vel: wpfloat, dtime: wpfloat, cpd: wpfloat,
    iau_wgt_dyn: wpfloat, is_iau_active: bool, itime_scheme: gtx.int32,
    grav_o_cpd: wpfloat, divdamp_order: gtx.int32, scal_divdamp_o2: wpfloat,
    istep: gtx.int32, limited_area: bool, start_edge_halo_level_2: gtx.int32,
    end_edge_halo_level_2: gtx.int32, start_edge_lateral_boundary: gtx.int32,
    end_edge_halo: gtx.int32, start_edge_lateral_boundary_level_7: gtx.int32,
    start_edge_nudging_level_2: gtx.int32, end_edge_local: gtx.int32,
    end_edge_end: gtx.int32, iadv_rhotheta: gtx.int32, igradp_method: gtx.int32,
    TAYLOR_HYDRO: gtx.int32, nlev: gtx.int32, kstart_dd3d: gtx.int32, COMBINED: gtx.int32,
    FOURTH_ORDER: gtx.int32, nflatlev: gtx.int32, nflat_gradp: gtx.int32,
):
    _fused_solve_nonhydro_stencil_15_to_28(
        rho_ref_me, z_exner_ex_pr, ddxn_z_full, c_lin_e, z_dexner_dz_c_1, z_dexner_dz_c_2,
        theta_v, ikoffset, zdiff_gradp, theta_v_ic, inv_ddqz_z_full, ipeidx_dsl, pg_exdist,
        hmask_dd3d, scalfac_dd3d, z_dwdz_dd, inv_dual_edge_length, ddt_vn_apc_ntl2,
        ddt_vn_apc_ntl1, ddt_vn_phy, vn_incr, horz_idx, vert_idx, bdy_divdamp, nudgecoeff_e,
        z_hydro_corr, geofac_grdiv, z_graddiv2_vn, scal_divdamp, z_rho_e, z_theta_v_e,
        z_gradh_exner, vn, z_graddiv_vn, divdamp_fac, divdamp_fac_o2, wgt_nnow_vel,
        wgt_nnew_vel, dtime, cpd, iau_wgt_dyn, is_iau_active, itime_scheme, grav_o_cpd,
        divdamp_order, scal_divdamp_o2, istep, limited_area, start_edge_halo_level_2,
        end_edge_halo_level_2, start_edge_lateral_boundary, end_edge_halo,
        start_edge_lateral_boundary_level_7, start_edge_nudging_level_2, end_edge_local,
        end_edge_end, iadv_rhotheta, igradp_method, TAYLOR_HYDRO, nlev, kstart_dd3d,
        COMBINED, FOURTH_ORDER, nflatlev, nflat_gradp,
        out=(z_rho_e, z_theta_v_e, z_gradh_exner, vn, z_graddiv_vn),
    )


@pytest.mark.parametrize(("istep", "limited_area", "scal_divdamp_o2"),
                         [(1, True, 0.3), (2, True, 0.3), (2, False, 0.0)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_solve_nonhydro_stencil_15_to_28(backend, istep, limited_area, scal_divdamp_o2):
    e2c, e2c2eo = TABLES["E2C"], TABLES["E2C2EO"]
    slb7, kstart_dd3d, combined = 2, 4, 3
    a = nonhydro_inputs()
    a |= dict(hmask_dd3d=f64(NE), scalfac_dd3d=f64(NLEV), z_dwdz_dd=f32(NC, NLEV),
              ddt_vn_apc_ntl2=f32(NE, NLEV), bdy_divdamp=f64(NLEV), nudgecoeff_e=f64(NE),
              geofac_grdiv=f64(NE, 5), z_graddiv2_vn=f32(NE, NLEV), scal_divdamp=f64(NLEV))
    base = dict(z_rho_e=f64(NE, NLEV), z_theta_v_e=f64(NE, NLEV), z_gradh_exner=f32(NE, NLEV),
                vn=RNG.standard_normal((NE, NLEV)), z_graddiv_vn=f32(NE, NLEV))
    got = {name: v.copy() for name, v in base.items()}
    s = dict(grav_o_cpd=9.80665 / 1004.64, dtime=3.0, cpd=1004.64, iau_wgt_dyn=0.4)
    damp = dict(divdamp_fac=0.5, divdamp_fac_o2=1.0, wgt_nnow_vel=0.25, wgt_nnew_vel=0.75)
    fused_solve_nonhydro_stencil_15_to_28(
        **a, **got, **s, **damp, **NONHYDRO_BOUNDS, is_iau_active=True, itime_scheme=4,
        divdamp_order=combined, scal_divdamp_o2=scal_divdamp_o2, istep=istep,
        limited_area=limited_area, start_edge_lateral_boundary_level_7=slb7, iadv_rhotheta=2,
        igradp_method=3, TAYLOR_HYDRO=3, nlev=NLEV, kstart_dd3d=kstart_dd3d,
        COMBINED=combined, FOURTH_ORDER=4, offset_provider=TABLES, backend=backend)

    want = dict(base)
    if istep == 1:
        (want["z_rho_e"], want["z_theta_v_e"], want["z_gradh_exner"],
         want["vn"]) = nonhydro_predictor_numpy(
            a, s, base["z_rho_e"], base["z_theta_v_e"], base["z_gradh_exner"], base["vn"],
            2, 3, limited_area, True)
    else:
        b = NONHYDRO_BOUNDS
        rows = slice(b["start_edge_nudging_level_2"], b["end_edge_local"])
        dw = a["z_dwdz_dd"].astype(np.float64)
        graddiv = np.array(base["z_graddiv_vn"])
        added = (graddiv.astype(np.float64) + a["hmask_dd3d"][:, None] * a["scalfac_dd3d"]
                 * a["inv_dual_edge_length"][:, None] * (dw[e2c[:, 1]] - dw[e2c[:, 0]])
                 ).astype(np.float32)
        graddiv[slb7:b["end_edge_halo_level_2"], kstart_dd3d:] = \
            added[slb7:b["end_edge_halo_level_2"], kstart_dd3d:]
        vn = np.array(base["vn"])
        vn[rows] = (vn + s["dtime"] * (
            damp["wgt_nnow_vel"] * a["ddt_vn_apc_ntl1"].astype(np.float64)
            + damp["wgt_nnew_vel"] * a["ddt_vn_apc_ntl2"] + a["ddt_vn_phy"]
            - s["cpd"] * base["z_theta_v_e"] * base["z_gradh_exner"]))[rows]
        graddiv2 = np.array(a["z_graddiv2_vn"])
        graddiv2[rows] = np.einsum("en,enk->ek", a["geofac_grdiv"],
                                   graddiv.astype(np.float64)[e2c2eo]
                                   ).astype(np.float32)[rows]
        if scal_divdamp_o2 > 1e-6:
            vn[rows] += scal_divdamp_o2 * graddiv[rows].astype(np.float64)
        g2 = graddiv2[rows].astype(np.float64)
        if limited_area:
            vn[rows] += (a["scal_divdamp"] + a["bdy_divdamp"]
                         * a["nudgecoeff_e"][rows, None]) * g2
        else:
            vn[rows] += a["scal_divdamp"] * g2
        vn[rows] += s["iau_wgt_dyn"] * a["vn_incr"][rows].astype(np.float64)
        want["z_graddiv_vn"], want["vn"] = graddiv, vn
    check(got, want, rtol=2e-5, atol=2e-5)


# ================================================================== FFSL flux area list
#
# icon4py's list of flux areas of the flux-form semi-Lagrangian advection:
# twenty outputs written in place over sixteen of the inputs, the butterfly
# cells chosen by the sign of vn through sparse ``[Edge, E2C]`` fields read
# with ``E2CDim(0)``, ``int32`` edge fields broadcast to levels and chosen by
# nested ``where`` with an ``int`` literal.


@gtx.field_operator
def _compute_ffsl_flux_area_list(
    famask_int: fa.EdgeKField[gtx.int32], p_vn: fa.EdgeKField[wpfloat],
    bf_cc_patch1_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    bf_cc_patch1_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    bf_cc_patch2_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    bf_cc_patch2_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    butterfly_idx_patch1_vnpos: fa.EdgeField[gtx.int32],
    butterfly_idx_patch1_vnneg: fa.EdgeField[gtx.int32],
    butterfly_blk_patch1_vnpos: fa.EdgeField[gtx.int32],
    butterfly_blk_patch1_vnneg: fa.EdgeField[gtx.int32],
    butterfly_idx_patch2_vnpos: fa.EdgeField[gtx.int32],
    butterfly_idx_patch2_vnneg: fa.EdgeField[gtx.int32],
    butterfly_blk_patch2_vnpos: fa.EdgeField[gtx.int32],
    butterfly_blk_patch2_vnneg: fa.EdgeField[gtx.int32],
    dreg_patch1_1_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_1_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_2_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_2_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_3_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_3_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_4_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_4_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_1_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_1_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_2_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_2_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_3_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_3_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_4_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_4_lat_vmask: fa.EdgeKField[vpfloat],
) -> tuple[
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat], fa.EdgeKField[gtx.int32], fa.EdgeKField[gtx.int32],
    fa.EdgeKField[gtx.int32], fa.EdgeKField[gtx.int32],
]:
    famask_bool = famask_int == 1
    lvn_pos = p_vn >= 0.0
    # the butterfly cell centres of the upwind side (zero outside the flux area)
    p1_lon = where(famask_bool, where(lvn_pos, bf_cc_patch1_lon[E2CDim(0)],
                                      bf_cc_patch1_lon[E2CDim(1)]), 0.0)
    p1_lat = where(famask_bool, where(lvn_pos, bf_cc_patch1_lat[E2CDim(0)],
                                      bf_cc_patch1_lat[E2CDim(1)]), 0.0)
    p2_lon = where(famask_bool, where(lvn_pos, bf_cc_patch2_lon[E2CDim(0)],
                                      bf_cc_patch2_lon[E2CDim(1)]), 0.0)
    p2_lat = where(famask_bool, where(lvn_pos, bf_cc_patch2_lat[E2CDim(0)],
                                      bf_cc_patch2_lat[E2CDim(1)]), 0.0)
    p1_lon_vp, p1_lat_vp, p2_lon_vp, p2_lat_vp = astype((p1_lon, p1_lat, p2_lon, p2_lat),
                                                        vpfloat)
    idx1 = where(famask_bool,
                 where(lvn_pos, broadcast(butterfly_idx_patch1_vnpos, (dims.EdgeDim, dims.KDim)),
                       broadcast(butterfly_idx_patch1_vnneg, (dims.EdgeDim, dims.KDim))), 0)
    idx2 = where(famask_bool,
                 where(lvn_pos, broadcast(butterfly_idx_patch2_vnpos, (dims.EdgeDim, dims.KDim)),
                       broadcast(butterfly_idx_patch2_vnneg, (dims.EdgeDim, dims.KDim))), 0)
    blk1 = where(famask_bool,
                 where(lvn_pos, broadcast(butterfly_blk_patch1_vnpos, (dims.EdgeDim, dims.KDim)),
                       broadcast(butterfly_blk_patch1_vnneg, (dims.EdgeDim, dims.KDim))), 0)
    blk2 = where(famask_bool,
                 where(lvn_pos, broadcast(butterfly_blk_patch2_vnpos, (dims.EdgeDim, dims.KDim)),
                       broadcast(butterfly_blk_patch2_vnneg, (dims.EdgeDim, dims.KDim))), 0)
    return (
        dreg_patch1_1_lon_vmask - p1_lon_vp, dreg_patch1_1_lat_vmask - p1_lat_vp,
        dreg_patch1_2_lon_vmask - p1_lon_vp, dreg_patch1_2_lat_vmask - p1_lat_vp,
        dreg_patch1_3_lon_vmask - p1_lon_vp, dreg_patch1_3_lat_vmask - p1_lat_vp,
        dreg_patch1_4_lon_vmask - p1_lon_vp, dreg_patch1_4_lat_vmask - p1_lat_vp,
        dreg_patch2_1_lon_vmask - p2_lon_vp, dreg_patch2_1_lat_vmask - p2_lat_vp,
        dreg_patch2_2_lon_vmask - p2_lon_vp, dreg_patch2_2_lat_vmask - p2_lat_vp,
        dreg_patch2_3_lon_vmask - p2_lon_vp, dreg_patch2_3_lat_vmask - p2_lat_vp,
        dreg_patch2_4_lon_vmask - p2_lon_vp, dreg_patch2_4_lat_vmask - p2_lat_vp,
        idx1, blk1, idx2, blk2,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_ffsl_flux_area_list(
    famask_int: fa.EdgeKField[gtx.int32], p_vn: fa.EdgeKField[wpfloat],
    bf_cc_patch1_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    bf_cc_patch1_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    bf_cc_patch2_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    bf_cc_patch2_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    butterfly_idx_patch1_vnpos: fa.EdgeField[gtx.int32],
    butterfly_idx_patch1_vnneg: fa.EdgeField[gtx.int32],
    butterfly_blk_patch1_vnpos: fa.EdgeField[gtx.int32],
    butterfly_blk_patch1_vnneg: fa.EdgeField[gtx.int32],
    butterfly_idx_patch2_vnpos: fa.EdgeField[gtx.int32],
    butterfly_idx_patch2_vnneg: fa.EdgeField[gtx.int32],
    butterfly_blk_patch2_vnpos: fa.EdgeField[gtx.int32],
    butterfly_blk_patch2_vnneg: fa.EdgeField[gtx.int32],
    dreg_patch1_1_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_1_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_2_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_2_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_3_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_3_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_4_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch1_4_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_1_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_1_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_2_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_2_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_3_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_3_lat_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_4_lon_vmask: fa.EdgeKField[vpfloat],
    dreg_patch2_4_lat_vmask: fa.EdgeKField[vpfloat],
    patch1_cell_idx_vmask: fa.EdgeKField[gtx.int32],
    patch1_cell_blk_vmask: fa.EdgeKField[gtx.int32],
    patch2_cell_idx_vmask: fa.EdgeKField[gtx.int32],
    patch2_cell_blk_vmask: fa.EdgeKField[gtx.int32],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_ffsl_flux_area_list(
        famask_int, p_vn, bf_cc_patch1_lon, bf_cc_patch1_lat, bf_cc_patch2_lon,
        bf_cc_patch2_lat, butterfly_idx_patch1_vnpos, butterfly_idx_patch1_vnneg,
        butterfly_blk_patch1_vnpos, butterfly_blk_patch1_vnneg, butterfly_idx_patch2_vnpos,
        butterfly_idx_patch2_vnneg, butterfly_blk_patch2_vnpos, butterfly_blk_patch2_vnneg,
        dreg_patch1_1_lon_vmask, dreg_patch1_1_lat_vmask, dreg_patch1_2_lon_vmask,
        dreg_patch1_2_lat_vmask, dreg_patch1_3_lon_vmask, dreg_patch1_3_lat_vmask,
        dreg_patch1_4_lon_vmask, dreg_patch1_4_lat_vmask, dreg_patch2_1_lon_vmask,
        dreg_patch2_1_lat_vmask, dreg_patch2_2_lon_vmask, dreg_patch2_2_lat_vmask,
        dreg_patch2_3_lon_vmask, dreg_patch2_3_lat_vmask, dreg_patch2_4_lon_vmask,
        dreg_patch2_4_lat_vmask,
        out=(dreg_patch1_1_lon_vmask, dreg_patch1_1_lat_vmask, dreg_patch1_2_lon_vmask,
             dreg_patch1_2_lat_vmask, dreg_patch1_3_lon_vmask, dreg_patch1_3_lat_vmask,
             dreg_patch1_4_lon_vmask, dreg_patch1_4_lat_vmask, dreg_patch2_1_lon_vmask,
             dreg_patch2_1_lat_vmask, dreg_patch2_2_lon_vmask, dreg_patch2_2_lat_vmask,
             dreg_patch2_3_lon_vmask, dreg_patch2_3_lat_vmask, dreg_patch2_4_lon_vmask,
             dreg_patch2_4_lat_vmask, patch1_cell_idx_vmask, patch1_cell_blk_vmask,
             patch2_cell_idx_vmask, patch2_cell_blk_vmask),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_compute_ffsl_flux_area_list(backend):
    hs, he, vs, ve = 2, NE - 1, 1, NLEV - 2
    a = dict(famask_int=RNG.integers(0, 2, (NE, NLEV)).astype(np.int32),
             p_vn=RNG.standard_normal((NE, NLEV)))
    a |= {f"bf_cc_patch{p}_{c}": RNG.standard_normal((NE, 2)) for p in (1, 2)
          for c in ("lon", "lat")}
    a |= {f"butterfly_{w}_patch{p}_vn{s}": RNG.integers(0, 100, NE).astype(np.int32)
          for w in ("idx", "blk") for p in (1, 2) for s in ("pos", "neg")}
    dreg = [f"dreg_patch{p}_{i}_{c}_vmask" for p in (1, 2) for i in range(1, 5)
            for c in ("lon", "lat")]
    cells = [f"patch{p}_cell_{w}_vmask" for p in (1, 2) for w in ("idx", "blk")]
    base = {n: (RNG.standard_normal((NE, NLEV))).astype(np.float32) for n in dreg}
    base |= {n: RNG.integers(-5, 0, (NE, NLEV)).astype(np.int32) for n in cells}
    got = {n: v.copy() for n, v in base.items()}
    compute_ffsl_flux_area_list(**a, **got, horizontal_start=hs, horizontal_end=he,
                                vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                                backend=backend)

    mask, pos = a["famask_int"] == 1, a["p_vn"] >= 0.0

    def upwind(x):
        return np.where(mask, np.where(pos, x[:, :1], x[:, 1:]), 0.0).astype(np.float32)

    def chosen(p, w):
        return np.where(mask, np.where(pos, a[f"butterfly_{w}_patch{p}_vnpos"][:, None],
                                       a[f"butterfly_{w}_patch{p}_vnneg"][:, None]), 0)

    want = {}
    for n in dreg:
        p, c = n[len("dreg_patch")], n.split("_")[3]
        want[n] = inside(base[n] - upwind(a[f"bf_cc_patch{p}_{c}"]), base[n], hs, he, vs, ve)
    for n in cells:
        p, w = n[len("patch")], n.split("_")[2]
        want[n] = inside(chosen(p, w), base[n], hs, he, vs, ve)
    check(got, want, rtol=1e-6, atol=1e-6)
    assert all(got[n].dtype == np.int32 for n in cells)


# ================================================================== FFSL flux area patches
#
# The first cases of icon4py's flux area patches of the FFSL advection: the
# departure line crossing one or both edges of the upwind triangle, found by
# field operators returning ``int32`` (``where(…, 1, -1)``) and ``bool``
# fields (``(i1 + i2) == -2``, ``~``) and the crossing points by one
# returning a tuple; the patches as tuples chosen by ``where``, 24 outputs.

EKvp = fa.EdgeKField[vpfloat]
EKwp = fa.EdgeKField[wpfloat]


@gtx.field_operator
def ccw(p0_lon: EKwp, p0_lat: EKwp, p1_lon: EKwp, p1_lat: EKwp, p2_lon: EKwp, p2_lat: EKwp
        ) -> fa.EdgeKField[gtx.int32]:
    dx1dy2 = (p1_lon - p0_lon) * (p2_lat - p0_lat)
    dy1dx2 = (p1_lat - p0_lat) * (p2_lon - p0_lon)
    return where(dx1dy2 > dy1dx2, 1, -1)       # 1: counterclockwise turn


@gtx.field_operator
def lintersect(a_lon: EKwp, a_lat: EKwp, b_lon: EKwp, b_lat: EKwp, c_lon: EKwp, c_lat: EKwp,
               d_lon: EKwp, d_lat: EKwp) -> fa.EdgeKField[bool]:
    # segments AB and CD cross where C, D lie on either side of AB and A, B of CD
    i1 = ccw(a_lon, a_lat, b_lon, b_lat, c_lon, c_lat) * ccw(
        a_lon, a_lat, b_lon, b_lat, d_lon, d_lat)
    i2 = ccw(c_lon, c_lat, d_lon, d_lat, a_lon, a_lat) * ccw(
        c_lon, c_lat, d_lon, d_lat, b_lon, b_lat)
    return (i1 + i2) == -2


@gtx.field_operator
def line_intersect(a_lon: EKwp, a_lat: EKwp, b_lon: EKwp, b_lat: EKwp, c_lon: EKwp,
                   c_lat: EKwp, d_lon: EKwp, d_lat: EKwp) -> tuple[EKvp, EKvp]:
    d1 = b_lon - a_lon
    d1 = where(d1 != 0.0, d1, b_lon)
    d2 = d_lon - c_lon
    d2 = where(d2 != 0.0, d2, d_lon)
    m1 = (b_lat - a_lat) / d1
    m2 = (d_lat - c_lat) / d2
    x = (c_lat - a_lat + m1 * a_lon - m2 * c_lon) / (m1 - m2)
    y = a_lat + m1 * (x - a_lon)
    return astype(x, vpfloat), astype(y, vpfloat)


@gtx.field_operator
def _prepare_ffsl_flux_area_patches_list_cases_1_and_2(
    famask_int: fa.EdgeKField[gtx.int32], p_vn: EKwp,
    ptr_v3_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    ptr_v3_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    tangent_orientation_dsl: fa.EdgeField[wpfloat],
    dreg_patch0_1_lon_dsl: EKvp, dreg_patch0_1_lat_dsl: EKvp, dreg_patch0_2_lon_dsl: EKvp,
    dreg_patch0_2_lat_dsl: EKvp, dreg_patch0_3_lon_dsl: EKvp, dreg_patch0_3_lat_dsl: EKvp,
    dreg_patch0_4_lon_dsl: EKvp, dreg_patch0_4_lat_dsl: EKvp,
) -> tuple[
    EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp,
    EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp, EKvp,
]:
    a1_lon, a1_lat = dreg_patch0_1_lon_dsl, dreg_patch0_1_lat_dsl
    a2_lon, a2_lat = dreg_patch0_2_lon_dsl, dreg_patch0_2_lat_dsl
    # departure points: 4 belongs to arrival point 1, 3 to 2
    d1_lon, d1_lat = dreg_patch0_4_lon_dsl, dreg_patch0_4_lat_dsl
    d2_lon, d2_lat = dreg_patch0_3_lon_dsl, dreg_patch0_3_lat_dsl
    lvn_pos = p_vn >= 0.0
    fl1_lon, fl1_lat, fl2_lon, fl2_lat = astype((d1_lon, d1_lat, d2_lon, d2_lat), wpfloat)
    t1_lon, t1_lat, t2_lon, t2_lat = astype((a1_lon, a1_lat, a2_lon, a2_lat), wpfloat)
    v3_lon = where(lvn_pos, ptr_v3_lon[E2CDim(0)], ptr_v3_lon[E2CDim(1)])
    v3_lat = where(lvn_pos, ptr_v3_lat[E2CDim(0)], ptr_v3_lat[E2CDim(1)])
    cross1 = lintersect(fl1_lon, fl1_lat, fl2_lon, fl2_lat, t1_lon, t1_lat, v3_lon, v3_lat)
    cross2 = lintersect(fl1_lon, fl1_lat, fl2_lon, fl2_lat, t2_lon, t2_lat, v3_lon, v3_lat)
    sys_pos = (p_vn * broadcast(tangent_orientation_dsl, (dims.EdgeDim, dims.KDim))) >= 0.0
    famask_bool = famask_int == 1
    ps1_lon, ps1_lat = line_intersect(
        fl1_lon, fl1_lat, fl2_lon, fl2_lat, t1_lon, t1_lat, v3_lon, v3_lat)
    ps2_lon, ps2_lat = line_intersect(
        fl1_lon, fl1_lat, fl2_lon, fl2_lat, t2_lon, t2_lat, v3_lon, v3_lat)
    zero = vpfloat("0.0")
    # patch 1 (beside arrival point 1) and patch 2 (beside arrival point 2)
    patch1 = (a1_lon, a1_lat, where(sys_pos, ps1_lon, d1_lon), where(sys_pos, ps1_lat, d1_lat),
              where(sys_pos, d1_lon, ps1_lon), where(sys_pos, d1_lat, ps1_lat), a1_lon, a1_lat)
    patch2 = (a2_lon, a2_lat, where(sys_pos, d2_lon, ps2_lon), where(sys_pos, d2_lat, ps2_lat),
              where(sys_pos, ps2_lon, d2_lon), where(sys_pos, ps2_lat, d2_lat), a2_lon, a2_lat)
    none = (zero, zero, zero, zero, zero, zero, zero, zero)
    p0 = (dreg_patch0_1_lon_dsl, dreg_patch0_1_lat_dsl, dreg_patch0_2_lon_dsl,
          dreg_patch0_2_lat_dsl, dreg_patch0_3_lon_dsl, dreg_patch0_3_lat_dsl,
          dreg_patch0_4_lon_dsl, dreg_patch0_4_lat_dsl)
    # case 1: the departure line crosses both triangle edges
    case1 = cross1 & cross2 & famask_bool
    p0 = where(case1, (a1_lon, a1_lat, where(sys_pos, a2_lon, ps1_lon),
                       where(sys_pos, a2_lat, ps1_lat), ps2_lon, ps2_lat,
                       where(sys_pos, ps1_lon, a2_lon), where(sys_pos, ps1_lat, a2_lat)), p0)
    p1 = where(case1, patch1, none)
    p2 = where(case1, patch2, none)
    # case 2a: only the edge from arrival point 1
    case2a = cross1 & (~cross2) & famask_bool
    p0 = where(case2a, (a1_lon, a1_lat, where(sys_pos, a2_lon, ps1_lon),
                        where(sys_pos, a2_lat, ps1_lat), d2_lon, d2_lat,
                        where(sys_pos, ps1_lon, a2_lon), where(sys_pos, ps1_lat, a2_lat)), p0)
    p1 = where(case2a, patch1, p1)
    p2 = where(case2a, none, p2)
    # case 2b: only the edge from arrival point 2
    case2b = cross2 & (~cross1) & famask_bool
    p0 = where(case2b, (a1_lon, a1_lat, where(sys_pos, a2_lon, d1_lon),
                        where(sys_pos, a2_lat, d1_lat), ps2_lon, ps2_lat,
                        where(sys_pos, d1_lon, a2_lon), where(sys_pos, d1_lat, a2_lat)), p0)
    p1 = where(case2b, none, p1)
    p2 = where(case2b, patch2, p2)
    return (p0[0], p0[1], p0[2], p0[3], p0[4], p0[5], p0[6], p0[7],
            p1[0], p1[1], p1[2], p1[3], p1[4], p1[5], p1[6], p1[7],
            p2[0], p2[1], p2[2], p2[3], p2[4], p2[5], p2[6], p2[7])


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def prepare_ffsl_flux_area_patches_list_cases_1_and_2(
    famask_int: fa.EdgeKField[gtx.int32], p_vn: EKwp,
    ptr_v3_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    ptr_v3_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    tangent_orientation_dsl: fa.EdgeField[wpfloat],
    dreg_patch0_1_lon_dsl: EKvp, dreg_patch0_1_lat_dsl: EKvp, dreg_patch0_2_lon_dsl: EKvp,
    dreg_patch0_2_lat_dsl: EKvp, dreg_patch0_3_lon_dsl: EKvp, dreg_patch0_3_lat_dsl: EKvp,
    dreg_patch0_4_lon_dsl: EKvp, dreg_patch0_4_lat_dsl: EKvp,
    dreg_patch1_1_lon_vmask: EKvp, dreg_patch1_1_lat_vmask: EKvp,
    dreg_patch1_2_lon_vmask: EKvp, dreg_patch1_2_lat_vmask: EKvp,
    dreg_patch1_3_lon_vmask: EKvp, dreg_patch1_3_lat_vmask: EKvp,
    dreg_patch1_4_lon_vmask: EKvp, dreg_patch1_4_lat_vmask: EKvp,
    dreg_patch2_1_lon_vmask: EKvp, dreg_patch2_1_lat_vmask: EKvp,
    dreg_patch2_2_lon_vmask: EKvp, dreg_patch2_2_lat_vmask: EKvp,
    dreg_patch2_3_lon_vmask: EKvp, dreg_patch2_3_lat_vmask: EKvp,
    dreg_patch2_4_lon_vmask: EKvp, dreg_patch2_4_lat_vmask: EKvp,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _prepare_ffsl_flux_area_patches_list_cases_1_and_2(
        famask_int, p_vn, ptr_v3_lon, ptr_v3_lat, tangent_orientation_dsl,
        dreg_patch0_1_lon_dsl, dreg_patch0_1_lat_dsl, dreg_patch0_2_lon_dsl,
        dreg_patch0_2_lat_dsl, dreg_patch0_3_lon_dsl, dreg_patch0_3_lat_dsl,
        dreg_patch0_4_lon_dsl, dreg_patch0_4_lat_dsl,
        out=(dreg_patch0_1_lon_dsl, dreg_patch0_1_lat_dsl, dreg_patch0_2_lon_dsl,
             dreg_patch0_2_lat_dsl, dreg_patch0_3_lon_dsl, dreg_patch0_3_lat_dsl,
             dreg_patch0_4_lon_dsl, dreg_patch0_4_lat_dsl,
             dreg_patch1_1_lon_vmask, dreg_patch1_1_lat_vmask, dreg_patch1_2_lon_vmask,
             dreg_patch1_2_lat_vmask, dreg_patch1_3_lon_vmask, dreg_patch1_3_lat_vmask,
             dreg_patch1_4_lon_vmask, dreg_patch1_4_lat_vmask,
             dreg_patch2_1_lon_vmask, dreg_patch2_1_lat_vmask, dreg_patch2_2_lon_vmask,
             dreg_patch2_2_lat_vmask, dreg_patch2_3_lon_vmask, dreg_patch2_3_lat_vmask,
             dreg_patch2_4_lon_vmask, dreg_patch2_4_lat_vmask),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_prepare_ffsl_flux_area_patches_list_cases_1_and_2(backend):
    hs, he, vs, ve = 1, NE, 0, NLEV - 1
    a = dict(famask_int=(RNG.random((NE, NLEV)) < 0.8).astype(np.int32),
             p_vn=RNG.standard_normal((NE, NLEV)),
             ptr_v3_lon=RNG.uniform(-1.0, 1.0, (NE, 2)), ptr_v3_lat=RNG.uniform(-1.0, 1.0, (NE, 2)),
             tangent_orientation_dsl=np.where(RNG.random(NE) < 0.5, -1.0, 1.0))
    p0 = [f"dreg_patch0_{i}_{c}_dsl" for i in range(1, 5) for c in ("lon", "lat")]
    p12 = [f"dreg_patch{p}_{i}_{c}_vmask" for p in (1, 2) for i in range(1, 5)
           for c in ("lon", "lat")]
    base = {n: RNG.uniform(-1.0, 1.0, (NE, NLEV)).astype(np.float32) for n in p0 + p12}
    got = {n: v.copy() for n, v in base.items()}
    prepare_ffsl_flux_area_patches_list_cases_1_and_2(
        **a, **got, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, offset_provider=TABLES, backend=backend)

    b = {n: base[n].astype(np.float64) for n in p0}
    a1, a2 = (b["dreg_patch0_1_lon_dsl"], b["dreg_patch0_1_lat_dsl"]), \
        (b["dreg_patch0_2_lon_dsl"], b["dreg_patch0_2_lat_dsl"])
    d1, d2 = (b["dreg_patch0_4_lon_dsl"], b["dreg_patch0_4_lat_dsl"]), \
        (b["dreg_patch0_3_lon_dsl"], b["dreg_patch0_3_lat_dsl"])
    pos = a["p_vn"] >= 0.0
    v3 = tuple(np.where(pos, a[f"ptr_v3_{c}"][:, :1], a[f"ptr_v3_{c}"][:, 1:])
               for c in ("lon", "lat"))

    def turn(p, q, r):
        return np.where((q[0] - p[0]) * (r[1] - p[1]) > (q[1] - p[1]) * (r[0] - p[0]), 1, -1)

    def crosses(p, q, r, s):
        return turn(p, q, r) * turn(p, q, s) + turn(r, s, p) * turn(r, s, q) == -2

    def meet(p, q, r, s):
        e1 = np.where(q[0] - p[0] != 0.0, q[0] - p[0], q[0])
        e2 = np.where(s[0] - r[0] != 0.0, s[0] - r[0], s[0])
        m1, m2 = (q[1] - p[1]) / e1, (s[1] - r[1]) / e2
        x = (r[1] - p[1] + m1 * p[0] - m2 * r[0]) / (m1 - m2)
        return x.astype(np.float32), (p[1] + m1 * (x - p[0])).astype(np.float32)

    with np.errstate(all="ignore"):
        c1, c2 = crosses(d1, d2, a1, v3), crosses(d1, d2, a2, v3)
        ps1, ps2 = meet(d1, d2, a1, v3), meet(d1, d2, a2, v3)
    sp = a["p_vn"] * a["tangent_orientation_dsl"][:, None] >= 0.0
    fam = a["famask_int"] == 1
    f32a1, f32a2 = [tuple(x.astype(np.float32) for x in p) for p in (a1, a2)]
    f32d1, f32d2 = [tuple(x.astype(np.float32) for x in p) for p in (d1, d2)]

    def sel(c, x, y):
        return np.where(c, x, y)

    patch1 = [f32a1[0], f32a1[1], sel(sp, ps1[0], f32d1[0]), sel(sp, ps1[1], f32d1[1]),
              sel(sp, f32d1[0], ps1[0]), sel(sp, f32d1[1], ps1[1]), f32a1[0], f32a1[1]]
    patch2 = [f32a2[0], f32a2[1], sel(sp, f32d2[0], ps2[0]), sel(sp, f32d2[1], ps2[1]),
              sel(sp, ps2[0], f32d2[0]), sel(sp, ps2[1], f32d2[1]), f32a2[0], f32a2[1]]
    zeros = [np.zeros((NE, NLEV), np.float32)] * 8
    q0 = [base[n] for n in p0]
    case1, case2a, case2b = c1 & c2 & fam, c1 & ~c2 & fam, c2 & ~c1 & fam
    q0 = [sel(case1, v, w) for v, w in zip(
        [f32a1[0], f32a1[1], sel(sp, f32a2[0], ps1[0]), sel(sp, f32a2[1], ps1[1]), ps2[0],
         ps2[1], sel(sp, ps1[0], f32a2[0]), sel(sp, ps1[1], f32a2[1])], q0)]
    q1 = [sel(case1, v, w) for v, w in zip(patch1, zeros)]
    q2 = [sel(case1, v, w) for v, w in zip(patch2, zeros)]
    q0 = [sel(case2a, v, w) for v, w in zip(
        [f32a1[0], f32a1[1], sel(sp, f32a2[0], ps1[0]), sel(sp, f32a2[1], ps1[1]), f32d2[0],
         f32d2[1], sel(sp, ps1[0], f32a2[0]), sel(sp, ps1[1], f32a2[1])], q0)]
    q1 = [sel(case2a, v, w) for v, w in zip(patch1, q1)]
    q2 = [sel(case2a, v, w) for v, w in zip(zeros, q2)]
    q0 = [sel(case2b, v, w) for v, w in zip(
        [f32a1[0], f32a1[1], sel(sp, f32a2[0], f32d1[0]), sel(sp, f32a2[1], f32d1[1]), ps2[0],
         ps2[1], sel(sp, f32d1[0], f32a2[0]), sel(sp, f32d1[1], f32a2[1])], q0)]
    q1 = [sel(case2b, v, w) for v, w in zip(zeros, q1)]
    q2 = [sel(case2b, v, w) for v, w in zip(patch2, q2)]
    assert case1.any() and case2a.any() and case2b.any()
    want = {n: inside(v, base[n], hs, he, vs, ve) for n, v in zip(p0 + p12, q0 + q1 + q2)}
    check(got, want, rtol=1e-5, atol=1e-6)


# ================================================================== derived horizontal winds
#
# icon4py's successor of the fused stencils 1 to 7 in ``concat_where`` form:
# the level above read only from level 1 (``concat_where(KDim > 0, …)`` over a
# value reading ``x(Koff[-1])``), so the column starts at level 0.


@gtx.field_operator
def _interpolate_to_half_levels(
    wgtfac_e: fa.EdgeKField[vpfloat], x: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[vpfloat]:
    wgtfac_e_wp = astype(wgtfac_e, wpfloat)
    x_ie_wp = wgtfac_e_wp * x + (wpfloat("1.0") - wgtfac_e_wp) * x(Koff[-1])
    return concat_where(dims.KDim > 0, astype(x_ie_wp, vpfloat), astype(x, vpfloat))


@gtx.field_operator
def _compute_horizontal_kinetic_energy_on_model_levels(
    vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    return astype(wpfloat("0.5") * (vn * vn + astype(vt * vt, wpfloat)), vpfloat)


@gtx.field_operator
def _compute_derived_horizontal_winds_and_ke_and_contravariant_correction(
    tangential_wind_on_half_levels: fa.EdgeKField[vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    horizontal_advection_of_w_at_edges_on_half_levels: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat], w: fa.CellKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    wgtfac_e: fa.EdgeKField[vpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat], skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32,
) -> tuple[EKvp, EKvp, EKvp, EKvp, EKvp, EKvp]:
    tangential_wind = _compute_tangential_wind(vn, rbf_vec_coeff_e)
    kinetic_energy = _compute_horizontal_kinetic_energy_on_model_levels(vn, tangential_wind)
    vn_on_half_levels = _interpolate_to_half_levels(wgtfac_e, vn)
    tangential_wind_on_half_levels = (
        _interpolate_to_half_levels(wgtfac_e, astype(tangential_wind, wpfloat))
        if not skip_compute_predictor_vertical_advection
        else tangential_wind_on_half_levels
    )
    contravariant_correction_at_edges_on_model_levels = concat_where(
        nflatlev <= dims.KDim,
        _compute_contravariant_correction(vn, ddxn_z_full, ddxt_z_full, tangential_wind),
        contravariant_correction_at_edges_on_model_levels,
    )
    w_at_vertices = _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(w, c_intp)
    horizontal_advection_of_w_at_edges_on_half_levels = (
        _compute_horizontal_advection_term_for_vertical_velocity(
            vn_on_half_levels, inv_dual_edge_length, w, tangential_wind_on_half_levels,
            inv_primal_edge_length, tangent_orientation, w_at_vertices)
        if not skip_compute_predictor_vertical_advection
        else horizontal_advection_of_w_at_edges_on_half_levels
    )
    return (tangential_wind, tangential_wind_on_half_levels, vn_on_half_levels, kinetic_energy,
            contravariant_correction_at_edges_on_model_levels,
            horizontal_advection_of_w_at_edges_on_half_levels)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_derived_horizontal_winds_and_ke_and_contravariant_correction(
    tangential_wind: EKvp, tangential_wind_on_half_levels: EKvp, vn_on_half_levels: EKvp,
    horizontal_kinetic_energy_at_edges_on_model_levels: EKvp,
    contravariant_correction_at_edges_on_model_levels: EKvp,
    horizontal_advection_of_w_at_edges_on_half_levels: EKvp, vn: EKwp,
    w: fa.CellKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    wgtfac_e: EKvp, ddxn_z_full: EKvp, ddxt_z_full: EKvp, wgtfacq_e: EKvp,
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat], skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32, horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_derived_horizontal_winds_and_ke_and_contravariant_correction(
        tangential_wind_on_half_levels, contravariant_correction_at_edges_on_model_levels,
        horizontal_advection_of_w_at_edges_on_half_levels, vn, w, rbf_vec_coeff_e, wgtfac_e,
        ddxn_z_full, ddxt_z_full, c_intp, inv_dual_edge_length, inv_primal_edge_length,
        tangent_orientation, skip_compute_predictor_vertical_advection, nflatlev,
        out=(tangential_wind, tangential_wind_on_half_levels, vn_on_half_levels,
             horizontal_kinetic_energy_at_edges_on_model_levels,
             contravariant_correction_at_edges_on_model_levels,
             horizontal_advection_of_w_at_edges_on_half_levels),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _extrapolate_at_top(
        wgtfacq_e, vn, out=vn_on_half_levels,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_end - 1, vertical_end)})


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_derived_horizontal_winds_and_ke_and_contravariant_correction(backend, skip):
    hs, he, nflatlev = 1, NE - 1, 4
    e2c, e2v, v2c, e2c2e = TABLES["E2C"], TABLES["E2V"], TABLES["V2C"], TABLES["E2C2E"]
    a = dict(vn=RNG.standard_normal((NE, NLEV)), w=RNG.standard_normal((NC, NH)),
             rbf_vec_coeff_e=f64(NE, 4), wgtfac_e=f32(NE, NH), ddxn_z_full=f32(NE, NLEV),
             ddxt_z_full=f32(NE, NLEV), wgtfacq_e=f32(NE, NLEV), c_intp=f64(NV, 6),
             inv_dual_edge_length=f64(NE) + 0.5, inv_primal_edge_length=f64(NE) + 0.5,
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0))
    base = dict(tangential_wind=f32(NE, NLEV), tangential_wind_on_half_levels=f32(NE, NH),
                vn_on_half_levels=f32(NE, NH),
                horizontal_kinetic_energy_at_edges_on_model_levels=f32(NE, NLEV),
                contravariant_correction_at_edges_on_model_levels=f32(NE, NLEV),
                horizontal_advection_of_w_at_edges_on_half_levels=f32(NE, NH))
    got = {n: v.copy() for n, v in base.items()}
    compute_derived_horizontal_winds_and_ke_and_contravariant_correction(
        **a, **got, skip_compute_predictor_vertical_advection=skip, nflatlev=nflatlev,
        horizontal_start=hs, horizontal_end=he, vertical_start=0, vertical_end=NH,
        offset_provider=TABLES, backend=backend)

    vn, w = a["vn"], a["w"]
    wgt = a["wgtfac_e"][:, :NLEV].astype(np.float64)
    vt = np.einsum("en,enk->ek", a["rbf_vec_coeff_e"], vn[e2c2e]).astype(np.float32)
    vt64 = vt.astype(np.float64)

    def half(x):
        out = (wgt * x + (1.0 - wgt) * below(x)).astype(np.float32)
        out[:, 0] = x[:, 0]
        return out

    ekin = (0.5 * (vn * vn + (vt * vt).astype(np.float64))).astype(np.float32)
    vn_ie = half(vn)
    vt_ie = half(vt64) if not skip else base["tangential_wind_on_half_levels"][:, :NLEV]
    concorr = np.array(base["contravariant_correction_at_edges_on_model_levels"])
    concorr[:, nflatlev:] = (vn * a["ddxn_z_full"] + vt64 * a["ddxt_z_full"])[:, nflatlev:]
    z_w_v = np.einsum("vn,vnk->vk", a["c_intp"], w[v2c])[:, :NLEV].astype(np.float32)
    adv = (vn_ie.astype(np.float64) * a["inv_dual_edge_length"][:, None]
           * (w[e2c[:, 0], :NLEV] - w[e2c[:, 1], :NLEV])
           + vt_ie.astype(np.float64) * (a["inv_primal_edge_length"]
                                         * a["tangent_orientation"])[:, None]
           * (z_w_v[e2v[:, 0]] - z_w_v[e2v[:, 1]]).astype(np.float64)).astype(np.float32)
    if skip:
        adv = base["horizontal_advection_of_w_at_edges_on_half_levels"][:, :NLEV]
    wq = a["wgtfacq_e"].astype(np.float64)
    top = wq[:, -1] * vn[:, -1] + wq[:, -2] * vn[:, -2] + wq[:, -3] * vn[:, -3]
    vn_ie_all = np.concatenate([vn_ie, top[:, None].astype(np.float32)], axis=1)

    def pad(x):
        return np.concatenate([x, np.zeros((NE, 1), np.float32)], axis=1)

    check(got, dict(
        tangential_wind=inside(vt, base["tangential_wind"], hs, he, 0, NLEV),
        tangential_wind_on_half_levels=inside(pad(vt_ie), base["tangential_wind_on_half_levels"],
                                              hs, he, 0, NLEV),
        vn_on_half_levels=inside(vn_ie_all, base["vn_on_half_levels"], hs, he, 0, NH),
        horizontal_kinetic_energy_at_edges_on_model_levels=inside(
            ekin, base["horizontal_kinetic_energy_at_edges_on_model_levels"], hs, he, 0, NLEV),
        contravariant_correction_at_edges_on_model_levels=inside(
            concorr, base["contravariant_correction_at_edges_on_model_levels"], hs, he, 0, NLEV),
        horizontal_advection_of_w_at_edges_on_half_levels=inside(
            pad(adv), base["horizontal_advection_of_w_at_edges_on_half_levels"], hs, he, 0,
            NLEV)), rtol=2e-5, atol=2e-5)
