"""An eighteenth round of ICON stencils (icon4py's field operators) in icon4py's
own spelling, beside ``test_icon_stencils_ported*.py``.

First the newer fused advection in the horizontal momentum equation: the
vorticity at vertices masked by ``start <= vertex < end`` of a
``VertexField[int32]`` against a literal ``0.0`` and read back through
``E2V``, the advective tendency chosen by ``start <= edge < end`` of an
``EdgeField[int32]``, then a ``KField[int32]`` reassigned by ``broadcast`` to
``(Edge, K)`` and combined by ``&`` with the edge range in the condition of
the extra diffusion near the CFL limit (``(maximum(3, nrdmax - 2) - 1) <= k <
nlev - 4``); a program on runtime bounds and a direct call.
Then the kinetic energy at cells and the contravariant corrected ``w`` on
half levels: two statements on vertical domains one level apart, ``where``
on ``k < nlev``, ``nflatlev + 1 <= k < nlev`` and ``k == nlev`` against
``broadcast(vpfloat("0.0"), ...)`` and a literal ``0.0``.
Then the diffusion of ``w`` with the horizontal gradients for turbulence on
a ``KHalf`` dimension of its own: an ``if`` expression on an ``int32``
``type_shear`` choosing a tuple, two hops of ``C2E2CO``, a ``concat_where``
on ``KHalfDim`` and ``CellDim`` bounds, a ``KHalfField`` weight and a
``CellField`` broadcast to ``(Cell, KHalf)``, written through a tuple of
three domains; the gradients and the Laplacian alone as programs on
``KHalfDim``; the fused operator also called directly with NumPy ``int32``
scalars, ``out=`` a tuple of three and ``domain=`` a tuple of three.
Then the common vertical averages of two levels on edges and on cells
(``wpfloat(0.5)`` of a Python float), and the edge weights ``wgtfac_e`` from
cells by the cell-to-edge interpolation called with keyword arguments.
Last the diagnostic quantities for turbulence on half levels: a half-level
``vpfloat`` weight times a full-level field read at ``KHalfDim + 0.5``, cast
by ``astype``, plus the rest of the weight times ``x(KHalfDim - 0.5)``,
called directly with ``out=`` a tuple of two on a ``KHalfDim`` domain.
Each group is one program (or a direct call), interpreted and compiled,
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
    abs,
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
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
CEDim = Dimension("CE")
ECDim = Dimension("EC")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.E2CDim, dims.C2EDim, dims.E2VDim, dims.V2EDim = E2CDim, C2EDim, E2VDim, V2EDim
dims.E2C2EODim, dims.C2E2CODim, dims.CEDim, dims.ECDim = E2C2EODim, C2E2CODim, CEDim, ECDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
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
fa.KHalfField = Field[Dims[KHalfDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float32       # icon4py's mixed precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 11, 7, 12
NH = NLEV + 1
RNG = np.random.default_rng(18001)
_TABLE_RNG = np.random.default_rng(18002)


def _distinct(rows, n, k):
    return np.array([_TABLE_RNG.choice(n, k, replace=False) for _ in range(rows)])


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3),
          "E2V": _distinct(NE, NV, 2), "V2E": _distinct(NV, NE, 6),
          "E2C2EO": np.concatenate([np.arange(NE)[:, None], _distinct(NE, NE, 4)], axis=1),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None], _distinct(NC, NC, 3)], axis=1),
          "C2CE": None, "E2EC": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(18003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


def f32(*shape):
    return RNG.random(shape).astype(np.float32)


# ================================================================== horizontal momentum advection
#
# icon4py's compute_advection_in_horizontal_momentum_equation: the vorticity at
# vertices (zero outside a vertex range), the advective tendency of vn on an
# edge range, and the extra diffusion near the CFL limit on an edge range and
# a level range together.


@gtx.field_operator
def _mo_math_divrot_rot_vertex_ri_dsl(
    vec_e: fa.EdgeKField[wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
) -> fa.VertexKField[vpfloat]:
    rot_vec = neighbor_sum(vec_e(V2E) * geofac_rot, axis=dims.V2EDim)
    return astype(rot_vec, vpfloat)


@gtx.field_operator
def _compute_advective_normal_wind_tendency(
    z_kin_hor_e: fa.EdgeKField[vpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.ECDim], vpfloat],
    z_ekinh: fa.CellKField[vpfloat],
    zeta: fa.VertexKField[vpfloat],
    vt: fa.EdgeKField[vpfloat],
    f_e: fa.EdgeField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_w_con_c_full: fa.CellKField[vpfloat],
    vn_ie: fa.EdgeKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    f_e_vp = astype(f_e, vpfloat)
    c_lin_e_vp = astype(c_lin_e, vpfloat)
    ddt_vn_apc_vp = -(
        z_kin_hor_e * (coeff_gradekin(E2EC[0]) - coeff_gradekin(E2EC[1]))
        + coeff_gradekin(E2EC[1]) * z_ekinh(E2C[1])
        - coeff_gradekin(E2EC[0]) * z_ekinh(E2C[0])
        + vt * (f_e_vp + vpfloat("0.5") * neighbor_sum(zeta(E2V), axis=dims.E2VDim))
        + neighbor_sum(z_w_con_c_full(E2C) * c_lin_e_vp, axis=dims.E2CDim)
        * (vn_ie - vn_ie(Koff[1]))
        / ddqz_z_full_e
    )
    return ddt_vn_apc_vp


@gtx.field_operator
def _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl(
    levelmask: fa.KField[bool],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    z_w_con_c_full: fa.CellKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    area_edge: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    zeta: fa.VertexKField[vpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    ddt_vn_apc: fa.EdgeKField[vpfloat],
    cfl_w_limit: vpfloat,
    scalfac_exdiff: wpfloat,
    dtime: wpfloat,
) -> fa.EdgeKField[vpfloat]:
    z_w_con_c_full_wp, ddqz_z_full_e_wp, ddt_vn_apc_wp, cfl_w_limit_wp = astype(
        (z_w_con_c_full, ddqz_z_full_e, ddt_vn_apc, cfl_w_limit), wpfloat
    )
    w_con_e = neighbor_sum(c_lin_e * z_w_con_c_full_wp(E2C), axis=dims.E2CDim)
    difcoef = scalfac_exdiff * minimum(
        wpfloat("0.85") - cfl_w_limit_wp * dtime,
        abs(w_con_e) * dtime / ddqz_z_full_e_wp - cfl_w_limit_wp * dtime,
    )
    ddt_vn_apc_wp = where(
        (levelmask | levelmask(Koff[1])) & (abs(w_con_e) > cfl_w_limit_wp * ddqz_z_full_e_wp),
        ddt_vn_apc_wp
        + difcoef
        * area_edge
        * (
            neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=dims.E2C2EODim)
            + tangent_orientation
            * inv_primal_edge_length
            * astype(zeta(E2V[1]) - zeta(E2V[0]), wpfloat)
        ),
        ddt_vn_apc_wp,
    )
    return astype(ddt_vn_apc_wp, vpfloat)


@gtx.field_operator
def _compute_advection_in_horizontal_momentum_equation(
    normal_wind_advective_tendency: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    horizontal_kinetic_energy_at_edge: fa.EdgeKField[vpfloat],
    horizontal_kinetic_energy_at_cell: fa.CellKField[vpfloat],
    tangential_wind: fa.EdgeKField[vpfloat],
    coriolis_frequency: fa.EdgeField[wpfloat],
    contravariant_corrected_w_at_cell: fa.CellKField[vpfloat],
    khalf_vn: fa.EdgeKField[vpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.ECDim], vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    area_edge: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    cfl_w_limit: vpfloat,
    scalfac_exdiff: wpfloat,
    d_time: wpfloat,
    levelmask: fa.KField[bool],
    k: fa.KField[gtx.int32],
    vertex: fa.VertexField[gtx.int32],
    edge: fa.EdgeField[gtx.int32],
    nlev: gtx.int32,
    nrdmax: gtx.int32,
    start_vertex_lateral_boundary_level_2: gtx.int32,
    end_vertex_halo: gtx.int32,
    start_edge_nudging_level_2: gtx.int32,
    end_edge_local: gtx.int32,
) -> fa.EdgeKField[vpfloat]:
    vorticity_at_vertex = where(
        start_vertex_lateral_boundary_level_2 <= vertex < end_vertex_halo,
        _mo_math_divrot_rot_vertex_ri_dsl(vn, geofac_rot),
        0.0,
    )

    normal_wind_advective_tendency = where(
        start_edge_nudging_level_2 <= edge < end_edge_local,
        _compute_advective_normal_wind_tendency(
            horizontal_kinetic_energy_at_edge,
            coeff_gradekin,
            horizontal_kinetic_energy_at_cell,
            vorticity_at_vertex,
            tangential_wind,
            coriolis_frequency,
            c_lin_e,
            contravariant_corrected_w_at_cell,
            khalf_vn,
            ddqz_z_full_e,
        ),
        normal_wind_advective_tendency,
    )

    k = broadcast(k, (dims.EdgeDim, dims.KDim))
    normal_wind_advective_tendency = where(
        (start_edge_nudging_level_2 <= edge < end_edge_local)
        & ((maximum(3, nrdmax - 2) - 1) <= k < nlev - 4),
        _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl(
            levelmask,
            c_lin_e,
            contravariant_corrected_w_at_cell,
            ddqz_z_full_e,
            area_edge,
            tangent_orientation,
            inv_primal_edge_length,
            vorticity_at_vertex,
            geofac_grdiv,
            vn,
            normal_wind_advective_tendency,
            cfl_w_limit,
            scalfac_exdiff,
            d_time,
        ),
        normal_wind_advective_tendency,
    )
    return normal_wind_advective_tendency


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_advection_in_horizontal_momentum_equation(
    normal_wind_advective_tendency: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    horizontal_kinetic_energy_at_edge: fa.EdgeKField[vpfloat],
    horizontal_kinetic_energy_at_cell: fa.CellKField[vpfloat],
    tangential_wind: fa.EdgeKField[vpfloat],
    coriolis_frequency: fa.EdgeField[wpfloat],
    contravariant_corrected_w_at_cell: fa.CellKField[vpfloat],
    khalf_vn: fa.EdgeKField[vpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.ECDim], vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    area_edge: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    cfl_w_limit: vpfloat,
    scalfac_exdiff: wpfloat,
    d_time: wpfloat,
    levelmask: fa.KField[bool],
    k: fa.KField[gtx.int32],
    vertex: fa.VertexField[gtx.int32],
    edge: fa.EdgeField[gtx.int32],
    nlev: gtx.int32,
    nrdmax: gtx.int32,
    start_vertex_lateral_boundary_level_2: gtx.int32,
    end_vertex_halo: gtx.int32,
    start_edge_nudging_level_2: gtx.int32,
    end_edge_local: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_advection_in_horizontal_momentum_equation(
        normal_wind_advective_tendency,
        vn,
        horizontal_kinetic_energy_at_edge,
        horizontal_kinetic_energy_at_cell,
        tangential_wind,
        coriolis_frequency,
        contravariant_corrected_w_at_cell,
        khalf_vn,
        geofac_rot,
        coeff_gradekin,
        c_lin_e,
        ddqz_z_full_e,
        area_edge,
        tangent_orientation,
        inv_primal_edge_length,
        geofac_grdiv,
        cfl_w_limit,
        scalfac_exdiff,
        d_time,
        levelmask,
        k,
        vertex,
        edge,
        nlev,
        nrdmax,
        start_vertex_lateral_boundary_level_2,
        end_vertex_halo,
        start_edge_nudging_level_2,
        end_edge_local,
        out=normal_wind_advective_tendency,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _momentum_inputs():
    return dict(
        vn=RNG.standard_normal((NE, NLEV)), horizontal_kinetic_energy_at_edge=f32(NE, NLEV),
        horizontal_kinetic_energy_at_cell=f32(NC, NLEV), tangential_wind=f32(NE, NLEV),
        coriolis_frequency=f64(NE),
        contravariant_corrected_w_at_cell=(f32(NC, NLEV) - 0.5) * 4.0,
        khalf_vn=f32(NE, NH), geofac_rot=f64(NV, 6), coeff_gradekin=f32(NE * 2),
        c_lin_e=f64(NE, 2), ddqz_z_full_e=f32(NE, NLEV) + 0.2, area_edge=f64(NE) + 0.5,
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE), geofac_grdiv=f64(NE, 5),
        levelmask=RNG.random(NH) < 0.6, k=np.arange(NLEV, dtype=np.int32),
        vertex=np.arange(NV, dtype=np.int32), edge=np.arange(NE, dtype=np.int32))


_MOMENTUM_SCALARS = dict(cfl_w_limit=0.3, scalfac_exdiff=0.7, d_time=2.0)


def _momentum_numpy(a, tendency, nrdmax, vlb, veh, enl, eel):
    e2c, e2v, v2e, e2c2eo = (TABLES[n] for n in ("E2C", "E2V", "V2E", "E2C2EO"))
    s = _MOMENTUM_SCALARS
    zeta = np.einsum("vnk,vn->vk", a["vn"][v2e], a["geofac_rot"]).astype(np.float32)
    vrange = np.arange(NV)
    zeta = np.where(((vlb <= vrange) & (vrange < veh))[:, None], zeta, np.float32(0.0))
    gk = a["coeff_gradekin"].reshape(NE, 2)
    ekinh, zwc = a["horizontal_kinetic_energy_at_cell"], a["contravariant_corrected_w_at_cell"]
    vn_ie = a["khalf_vn"]
    tend = -(a["horizontal_kinetic_energy_at_edge"] * (gk[:, :1] - gk[:, 1:])
             + gk[:, 1:] * ekinh[e2c[:, 1]] - gk[:, :1] * ekinh[e2c[:, 0]]
             + a["tangential_wind"] * (a["coriolis_frequency"].astype(np.float32)[:, None]
                                       + np.float32(0.5) * zeta[e2v].sum(axis=1))
             + (zwc[e2c] * a["c_lin_e"].astype(np.float32)[:, :, None]).sum(axis=1)
             * (vn_ie[:, :NLEV] - vn_ie[:, 1:]) / a["ddqz_z_full_e"])
    erange = np.arange(NE)
    on_edges = ((enl <= erange) & (erange < eel))[:, None]
    tend = np.where(on_edges, tend, tendency)
    lm = a["levelmask"]
    w_con_e = np.einsum("en,enk->ek", a["c_lin_e"], zwc.astype(np.float64)[e2c])
    ddqz = a["ddqz_z_full_e"].astype(np.float64)
    lim = np.float64(np.float32(s["cfl_w_limit"]))
    near = (lm[:NLEV] | lm[1:])[None, :] & (np.abs(w_con_e) > lim * ddqz)
    dif = s["scalfac_exdiff"] * np.minimum(0.85 - lim * s["d_time"],
                                           np.abs(w_con_e) * s["d_time"] / ddqz
                                           - lim * s["d_time"])
    grdiv = np.einsum("en,enk->ek", a["geofac_grdiv"], a["vn"][e2c2eo])
    rot = (a["tangent_orientation"] * a["inv_primal_edge_length"])[:, None] * (
        zeta[e2v[:, 1]] - zeta[e2v[:, 0]]).astype(np.float64)
    extra = np.where(near, tend.astype(np.float64) + dif * a["area_edge"][:, None]
                     * (grdiv + rot), tend.astype(np.float64)).astype(np.float32)
    kk = np.arange(NLEV)
    levels = ((kk >= max(3, nrdmax - 2) - 1) & (kk < NLEV - 4))[None, :]
    return np.where(on_edges & levels, extra, tend)


@pytest.mark.parametrize(("bounds", "nrdmax"),
                         [((0, NE, 0, NLEV), 3), ((2, NE - 1, 1, NLEV - 1), 8)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_advection_in_horizontal_momentum_equation(backend, bounds, nrdmax):
    hs, he, vs, ve = bounds
    vlb, veh, enl, eel = 1, NV - 1, 1, NE - 2
    a = _momentum_inputs()
    base = f32(NE, NLEV)
    got = base.copy()
    compute_advection_in_horizontal_momentum_equation(
        got, **a, **_MOMENTUM_SCALARS, nlev=NLEV, nrdmax=nrdmax,
        start_vertex_lateral_boundary_level_2=vlb, end_vertex_halo=veh,
        start_edge_nudging_level_2=enl, end_edge_local=eel, horizontal_start=hs,
        horizontal_end=he, vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
        backend=backend)
    want = _momentum_numpy(a, base, nrdmax, vlb, veh, enl, eel)
    np.testing.assert_allclose(got, inside(want, base, hs, he, vs, ve), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_advection_in_horizontal_momentum_equation_called_directly(backend):
    a = _momentum_inputs()
    tendency = f32(NE, NLEV)
    out = np.zeros((NE, NLEV), np.float32)
    _compute_advection_in_horizontal_momentum_equation(
        tendency, **a, **_MOMENTUM_SCALARS, nlev=NLEV, nrdmax=5,
        start_vertex_lateral_boundary_level_2=2, end_vertex_halo=NV,
        start_edge_nudging_level_2=0, end_edge_local=NE - 1, out=out,
        domain={EdgeDim: (0, NE), KDim: (0, NLEV)}, offset_provider=TABLES, backend=backend)
    want = _momentum_numpy(a, tendency, 5, 2, NV, 0, NE - 1)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


# ================================================================== kinetic energy, half-level w
#
# icon4py's compute_horizontal_kinetic_energy_and_khalf_contravariant_corrected_w:
# the kinetic energy at cells on the full levels, then w less the
# contravariant correction on the half levels below nflatlev, zero on the
# surface half level.


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s(C2CE) * interpolant_wp(C2E), axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _correct_contravariant_vertical_velocity(
    z_w_con_c: fa.CellKField[vpfloat],
    z_w_concorr_mc: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_w_con_c_vp = z_w_con_c - z_w_concorr_mc
    return z_w_con_c_vp


@gtx.field_operator
def _compute_khalf_contravariant_corrected_w(
    w: fa.CellKField[wpfloat],
    khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32],
    nflatlev: gtx.int32,
    nlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    khalf_contravariant_corrected_w_at_cell = where(
        k < nlev, astype(w, vpfloat), broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))
    )

    khalf_contravariant_corrected_w_at_cell = where(
        nflatlev + 1 <= k < nlev,
        _correct_contravariant_vertical_velocity(
            khalf_contravariant_corrected_w_at_cell, khalf_contravariant_correction_at_cell
        ),
        khalf_contravariant_corrected_w_at_cell,
    )

    khalf_contravariant_corrected_w_at_cell = where(
        k == nlev, 0.0, khalf_contravariant_corrected_w_at_cell
    )

    return khalf_contravariant_corrected_w_at_cell


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_horizontal_kinetic_energy_and_khalf_contravariant_corrected_w(
    horizontal_kinetic_energy_at_cell: fa.CellKField[vpfloat],
    khalf_contravariant_corrected_w_at_cell: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat],
    horizontal_kinetic_energy_at_edge: fa.EdgeKField[vpfloat],
    khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    k: fa.KField[gtx.int32],
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _interpolate_to_cell_center(
        horizontal_kinetic_energy_at_edge,
        e_bln_c_s,
        out=horizontal_kinetic_energy_at_cell,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end - 1),
        },
    )
    _compute_khalf_contravariant_corrected_w(
        w,
        khalf_contravariant_correction_at_cell,
        k,
        nflatlev,
        nlev,
        out=khalf_contravariant_corrected_w_at_cell,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize(("nflatlev", "bounds"), [(3, (0, NC, 0, NH)), (0, (1, NC - 1, 2, NH))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_kinetic_energy_and_khalf_contravariant_corrected_w(backend, nflatlev, bounds):
    hs, he, vs, ve = bounds
    a = dict(w=RNG.standard_normal((NC, NH)), horizontal_kinetic_energy_at_edge=f32(NE, NLEV),
             khalf_contravariant_correction_at_cell=f32(NC, NH), e_bln_c_s=f64(NC * 3),
             k=np.arange(NH, dtype=np.int32))
    base = dict(horizontal_kinetic_energy_at_cell=f32(NC, NLEV),
                khalf_contravariant_corrected_w_at_cell=f32(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    compute_horizontal_kinetic_energy_and_khalf_contravariant_corrected_w(
        **got, **a, nflatlev=nflatlev, nlev=NLEV, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    c2e = TABLES["C2E"]
    bln = a["e_bln_c_s"].reshape(NC, 3)
    ke = np.einsum("cn,cnk->ck", bln,
                   a["horizontal_kinetic_energy_at_edge"].astype(np.float64)[c2e])
    kk = np.arange(NH)
    wc = np.where(kk < NLEV, a["w"].astype(np.float32), np.float32(0.0))
    wc = np.where((nflatlev + 1 <= kk) & (kk < NLEV),
                  wc - a["khalf_contravariant_correction_at_cell"], wc)
    wc = np.where(kk == NLEV, np.float32(0.0), wc)
    check(got, dict(
        horizontal_kinetic_energy_at_cell=inside(
            ke.astype(np.float32), base["horizontal_kinetic_energy_at_cell"], hs, he, vs, ve - 1),
        khalf_contravariant_corrected_w_at_cell=inside(
            wc, base["khalf_contravariant_corrected_w_at_cell"], hs, he, vs, ve)),
        rtol=1e-6)


# ================================================================== diffusion of w on half levels
#
# icon4py's diffusion of w with the horizontal gradients for turbulence, on a
# half-level dimension of its own: the gradients (or the fields passed
# through), the Laplacian, its Laplacian applied to w, and the extra damping
# in the upper layers on the interior cells; three outputs on their domains.


@gtx.field_operator
def _horizontal_gradients_for_turbulence(
    w: fa.CellKHalfField[wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    dwdx_wp = neighbor_sum(geofac_grg_x * w(C2E2CO), axis=dims.C2E2CODim)
    dwdy_wp = neighbor_sum(geofac_grg_y * w(C2E2CO), axis=dims.C2E2CODim)
    return astype((dwdx_wp, dwdy_wp), vpfloat)


@gtx.field_operator
def _nabla2_for_w(
    w: fa.CellKHalfField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> fa.CellKHalfField[vpfloat]:
    z_nabla2_c_wp = neighbor_sum(w(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim)
    return astype(z_nabla2_c_wp, vpfloat)


@gtx.field_operator
def _apply_nabla2_to_w(
    area: fa.CellField[wpfloat],
    z_nabla2_c: fa.CellKHalfField[vpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w: fa.CellKHalfField[wpfloat],
    diff_multfac_w: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    z_nabla2_c_wp = astype(z_nabla2_c, wpfloat)
    w_wp = w - diff_multfac_w * (area * area) * neighbor_sum(
        z_nabla2_c_wp(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim
    )
    return w_wp


@gtx.field_operator
def _nabla2_for_w_in_upper_damping_layer(
    w: fa.CellKHalfField[wpfloat],
    diff_multfac_n2w: fa.KHalfField[wpfloat],
    cell_area: fa.CellField[wpfloat],
    z_nabla2_c: fa.CellKHalfField[vpfloat],
) -> fa.CellKHalfField[wpfloat]:
    z_nabla2_c_wp = astype(z_nabla2_c, wpfloat)
    cell_area_tmp = broadcast(cell_area, (dims.CellDim, dims.KHalfDim))

    w_wp = w + diff_multfac_n2w * cell_area_tmp * z_nabla2_c_wp
    return w_wp


@gtx.field_operator
def _diffusion_for_w_and_horizontal_gradients_for_turbulence(
    area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w_old: fa.CellKHalfField[wpfloat],
    type_shear: gtx.int32,
    dwdx: fa.CellKHalfField[vpfloat],
    dwdy: fa.CellKHalfField[vpfloat],
    diff_multfac_w: wpfloat,
    diff_multfac_n2w: fa.KHalfField[wpfloat],
    nrdmax: gtx.int32,
    interior_idx: gtx.int32,
    halo_idx: gtx.int32,
) -> tuple[
    fa.CellKHalfField[wpfloat],
    fa.CellKHalfField[vpfloat],
    fa.CellKHalfField[vpfloat],
]:
    dwdx, dwdy = (
        _horizontal_gradients_for_turbulence(w_old, geofac_grg_x, geofac_grg_y)
        if type_shear == 2
        else (dwdx, dwdy)
    )

    z_nabla2_c = _nabla2_for_w(w_old, geofac_n2s)

    w = _apply_nabla2_to_w(area, z_nabla2_c, geofac_n2s, w_old, diff_multfac_w)

    w = concat_where(
        (0 < dims.KHalfDim)
        & (dims.KHalfDim < nrdmax)
        & (interior_idx <= dims.CellDim)
        & (dims.CellDim < halo_idx),
        _nabla2_for_w_in_upper_damping_layer(w, diff_multfac_n2w, area, z_nabla2_c),
        w,
    )

    return w, dwdx, dwdy


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def diffusion_for_w_and_horizontal_gradients_for_turbulence(
    area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w_old: fa.CellKHalfField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    type_shear: gtx.int32,
    dwdx: fa.CellKHalfField[vpfloat],
    dwdy: fa.CellKHalfField[vpfloat],
    diff_multfac_w: wpfloat,
    diff_multfac_n2w: fa.KHalfField[wpfloat],
    nrdmax: gtx.int32,
    interior_idx: gtx.int32,
    halo_idx: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _diffusion_for_w_and_horizontal_gradients_for_turbulence(
        area=area,
        geofac_n2s=geofac_n2s,
        geofac_grg_x=geofac_grg_x,
        geofac_grg_y=geofac_grg_y,
        w_old=w_old,
        type_shear=type_shear,
        dwdx=dwdx,
        dwdy=dwdy,
        diff_multfac_w=diff_multfac_w,
        diff_multfac_n2w=diff_multfac_n2w,
        nrdmax=nrdmax,
        interior_idx=interior_idx,
        halo_idx=halo_idx,
        out=(w, dwdx, dwdy),
        domain=(
            {
                dims.CellDim: (interior_idx, halo_idx),
                dims.KHalfDim: (vertical_start, vertical_end),
            },
            {
                dims.CellDim: (horizontal_start, horizontal_end),
                dims.KHalfDim: (vertical_start + 1, vertical_end),
            },
            {
                dims.CellDim: (horizontal_start, horizontal_end),
                dims.KHalfDim: (vertical_start + 1, vertical_end),
            },
        ),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def horizontal_gradients_for_turbulence(
    w: fa.CellKHalfField[wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    dwdx: fa.CellKHalfField[vpfloat],
    dwdy: fa.CellKHalfField[vpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _horizontal_gradients_for_turbulence(
        w=w,
        geofac_grg_x=geofac_grg_x,
        geofac_grg_y=geofac_grg_y,
        out=(dwdx, dwdy),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def nabla2_for_w(
    w: fa.CellKHalfField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    z_nabla2_c: fa.CellKHalfField[vpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _nabla2_for_w(
        w=w,
        geofac_n2s=geofac_n2s,
        out=z_nabla2_c,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


def _w_diffusion_inputs():
    return dict(area=f64(NC) + 0.5, geofac_n2s=RNG.standard_normal((NC, 4)),
                geofac_grg_x=RNG.standard_normal((NC, 4)),
                geofac_grg_y=RNG.standard_normal((NC, 4)),
                w_old=RNG.standard_normal((NC, NH)), diff_multfac_n2w=f64(NH) * 0.1)


def _gradients_numpy(w, gx, gy):
    c2e2co = TABLES["C2E2CO"]
    return (np.einsum("cn,cnk->ck", gx, w[c2e2co]).astype(np.float32),
            np.einsum("cn,cnk->ck", gy, w[c2e2co]).astype(np.float32))


def _nabla2_numpy(w, n2s):
    return np.einsum("cn,cnk->ck", n2s, w[TABLES["C2E2CO"]]).astype(np.float32)


@pytest.mark.parametrize(("type_shear", "nrdmax"), [(2, 4), (1, 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_for_w_and_horizontal_gradients_on_half_levels(backend, type_shear, nrdmax):
    hs, he, ii, hi, vs, ve = 0, NC, 2, NC - 1, 0, NH
    a = _w_diffusion_inputs()
    base = dict(w=f64(NC, NH), dwdx=f32(NC, NH), dwdy=f32(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    diffusion_for_w_and_horizontal_gradients_for_turbulence(
        **a, **got, type_shear=type_shear, diff_multfac_w=0.3, nrdmax=nrdmax,
        interior_idx=ii, halo_idx=hi, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    w_old, n2s, area = a["w_old"], a["geofac_n2s"], a["area"]
    if type_shear == 2:
        dwdx, dwdy = _gradients_numpy(w_old, a["geofac_grg_x"], a["geofac_grg_y"])
    else:
        dwdx, dwdy = base["dwdx"], base["dwdy"]
    n2 = _nabla2_numpy(w_old, n2s)
    w = w_old - 0.3 * (area * area)[:, None] * np.einsum(
        "cn,cnk->ck", n2s, n2.astype(np.float64)[TABLES["C2E2CO"]])
    hh, cc = np.arange(NH)[None, :], np.arange(NC)[:, None]
    damp = (0 < hh) & (hh < nrdmax) & (ii <= cc) & (cc < hi)
    w = np.where(damp, w + a["diff_multfac_n2w"][None, :] * area[:, None] * n2, w)
    check(got, dict(w=inside(w, base["w"], ii, hi, vs, ve),
                    dwdx=inside(dwdx, base["dwdx"], hs, he, vs + 1, ve),
                    dwdy=inside(dwdy, base["dwdy"], hs, he, vs + 1, ve)), rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_horizontal_gradients_and_nabla2_for_w_on_half_levels(backend):
    hs, he, vs, ve = 1, NC - 1, 1, NH
    a = _w_diffusion_inputs()
    base = dict(dwdx=f32(NC, NH), dwdy=f32(NC, NH), z_nabla2_c=f32(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    horizontal_gradients_for_turbulence(
        a["w_old"], a["geofac_grg_x"], a["geofac_grg_y"], got["dwdx"], got["dwdy"],
        hs, he, vs, ve, offset_provider=TABLES, backend=backend)
    nabla2_for_w(a["w_old"], a["geofac_n2s"], got["z_nabla2_c"], hs, he, 0, NH - 2,
                 offset_provider=TABLES, backend=backend)
    dwdx, dwdy = _gradients_numpy(a["w_old"], a["geofac_grg_x"], a["geofac_grg_y"])
    n2 = _nabla2_numpy(a["w_old"], a["geofac_n2s"])
    check(got, dict(dwdx=inside(dwdx, base["dwdx"], hs, he, vs, ve),
                    dwdy=inside(dwdy, base["dwdy"], hs, he, vs, ve),
                    z_nabla2_c=inside(n2, base["z_nabla2_c"], hs, he, 0, NH - 2)),
          rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_for_w_called_directly_with_a_domain_per_output(backend):
    ii, hi = np.int32(1), np.int32(NC - 2)
    a = _w_diffusion_inputs()
    base = dict(w=f64(NC, NH), dwdx=f32(NC, NH), dwdy=f32(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    _diffusion_for_w_and_horizontal_gradients_for_turbulence(
        a["area"], a["geofac_n2s"], a["geofac_grg_x"], a["geofac_grg_y"], a["w_old"],
        np.int32(2), got["dwdx"], got["dwdy"], 0.25, a["diff_multfac_n2w"], np.int32(3), ii, hi,
        out=(got["w"], got["dwdx"], got["dwdy"]),
        domain=({CellDim: (ii, hi), KHalfDim: (0, NH)},
                {CellDim: (0, NC), KHalfDim: (1, NH)},
                {CellDim: (0, NC), KHalfDim: (1, NH)}),
        offset_provider=TABLES, backend=backend)
    w_old, n2s, area = a["w_old"], a["geofac_n2s"], a["area"]
    dwdx, dwdy = _gradients_numpy(w_old, a["geofac_grg_x"], a["geofac_grg_y"])
    n2 = _nabla2_numpy(w_old, n2s)
    w = w_old - 0.25 * (area * area)[:, None] * np.einsum(
        "cn,cnk->ck", n2s, n2.astype(np.float64)[TABLES["C2E2CO"]])
    hh, cc = np.arange(NH)[None, :], np.arange(NC)[:, None]
    damp = (0 < hh) & (hh < 3) & (ii <= cc) & (cc < hi)
    w = np.where(damp, w + a["diff_multfac_n2w"][None, :] * area[:, None] * n2, w)
    check(got, dict(w=inside(w, base["w"], ii, hi),
                    dwdx=inside(dwdx, base["dwdx"], 0, NC, 1, NH),
                    dwdy=inside(dwdy, base["dwdy"], 0, NC, 1, NH)), rtol=2e-6, atol=1e-5)


# ================================================================== vertical averages, wgtfac_e
#
# icon4py's common vertical operations (the mean of a level and the one
# below it on edges and on cells) and the metrics' wgtfac_e, the cell weights
# interpolated to the edges.


@gtx.field_operator
def average_level_plus1_on_cells(
    half_level_field: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return wpfloat(0.5) * (half_level_field + half_level_field(Koff[1]))


@gtx.field_operator
def average_level_plus1_on_edges(
    half_level_field: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return wpfloat(0.5) * (half_level_field + half_level_field(Koff[1]))


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def average_two_vertical_levels_downwards_on_edges(
    input_field: fa.EdgeKField[wpfloat],
    average: fa.EdgeKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    average_level_plus1_on_edges(
        input_field,
        out=average,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def average_two_vertical_levels_downwards_on_cells(
    input_field: fa.CellKField[wpfloat],
    average: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    average_level_plus1_on_cells(
        input_field,
        out=average,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _cell_2_edge_interpolation(
    in_field: fa.CellKField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=dims.E2CDim)


@gtx.program
def compute_wgtfac_e(
    wgtfac_c: fa.CellKField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], float],
    wgtfac_e: fa.EdgeKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _cell_2_edge_interpolation(
        in_field=wgtfac_c,
        coeff=c_lin_e,
        out=wgtfac_e,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_two_vertical_levels_downwards_on_edges(backend):
    x = RNG.standard_normal((NE, NH))
    base = f64(NE, NLEV)
    got = base.copy()
    average_two_vertical_levels_downwards_on_edges(x, got, 1, NE - 1, 0, NLEV,
                                                   offset_provider=TABLES, backend=backend)
    want = 0.5 * (x[:, :-1] + x[:, 1:])
    np.testing.assert_allclose(got, inside(want, base, 1, NE - 1), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_two_vertical_levels_downwards_on_cells(backend):
    x = RNG.standard_normal((NC, NH))
    base = f64(NC, NH)
    got = base.copy()
    average_two_vertical_levels_downwards_on_cells(
        input_field=x, average=got, horizontal_start=0, horizontal_end=NC, vertical_start=2,
        vertical_end=NLEV, offset_provider=TABLES, backend=backend)
    want = np.array(base)
    want[:, 2:NLEV] = 0.5 * (x[:, 2:NLEV] + x[:, 3:NH])
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compute_wgtfac_e(backend):
    wgtfac_c, c_lin_e = f64(NC, NH), f64(NE, 2)
    base = f64(NE, NH)
    got = base.copy()
    compute_wgtfac_e(wgtfac_c, c_lin_e, got, horizontal_start=2, horizontal_end=NE,
                     vertical_start=0, vertical_end=NH, offset_provider=TABLES, backend=backend)
    want = np.einsum("en,enk->ek", c_lin_e, wgtfac_c[TABLES["E2C"]])
    np.testing.assert_allclose(got, inside(want, base, 2, NE), rtol=1e-14)


# ================================================================== turbulence diagnostics
#
# icon4py's diagnostic quantities for turbulence with a half-level dimension:
# the divergence and the diffusion coefficient at cells on full levels, then
# brought to the half levels by a half-level weight times a full-level field
# read half a level below (in variable precision, then cast) plus the rest of
# the weight times the one half a level above; called directly as icon4py's
# tests call them.


@gtx.field_operator
def _temporary_fields_for_turbulence_diagnostics(
    kh_smag_ec: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    kh_smag_ec_wp, diff_multfac_smag_wp = astype((kh_smag_ec, diff_multfac_smag), wpfloat)

    kh_c_wp = neighbor_sum(kh_smag_ec_wp(C2E) * e_bln_c_s, axis=dims.C2EDim) / diff_multfac_smag_wp
    div_wp = neighbor_sum(vn(C2E) * geofac_div, axis=dims.C2EDim)
    return astype((kh_c_wp, div_wp), vpfloat)


@gtx.field_operator
def _diagnostics_for_turbulence(
    div: fa.CellKField[vpfloat],
    kh_c: fa.CellKField[vpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    div_wp, kh_c_wp = astype((div, kh_c), wpfloat)

    div_ic_wp = astype(wgtfac_c * div(dims.KHalfDim + 0.5), wpfloat) + (
        wpfloat("1.0") - wgtfac_c_wp
    ) * div_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = astype(wgtfac_c * kh_c(dims.KHalfDim + 0.5), wpfloat) + (
        wpfloat("1.0") - wgtfac_c_wp
    ) * kh_c_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = hdef_ic_wp * hdef_ic_wp

    return astype((div_ic_wp, hdef_ic_wp), vpfloat)


@gtx.field_operator
def _diagnostic_quantities_for_turbulence(
    kh_smag_ec: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    kh_c, div = _temporary_fields_for_turbulence_diagnostics(
        kh_smag_ec, vn, e_bln_c_s, geofac_div, diff_multfac_smag
    )
    div_ic_vp, hdef_ic_vp = _diagnostics_for_turbulence(div, kh_c, wgtfac_c)
    return div_ic_vp, hdef_ic_vp


def _turbulence_inputs():
    return dict(kh_smag_ec=f32(NE, NLEV), vn=RNG.standard_normal((NE, NLEV)),
                e_bln_c_s=f64(NC, 3), geofac_div=RNG.standard_normal((NC, 3)),
                diff_multfac_smag=f32(NLEV) + 0.5, wgtfac_c=f32(NC, NH))


def _to_half_levels(wgt, full, lo, hi):
    """``wgt * full(KHalf + 0.5) + (1 - wgt) * full(KHalf - 0.5)`` on half levels lo..hi."""
    out = np.full(wgt.shape, np.nan)
    w64 = wgt.astype(np.float64)
    above = (wgt[:, lo:hi] * full[:, lo:hi]).astype(np.float64)
    out[:, lo:hi] = above + (1.0 - w64[:, lo:hi]) * full[:, lo - 1:hi - 1].astype(np.float64)
    return out


def _turbulence_numpy(a, lo, hi):
    c2e = TABLES["C2E"]
    kh_c = (np.einsum("cn,cnk->ck", a["e_bln_c_s"], a["kh_smag_ec"].astype(np.float64)[c2e])
            / a["diff_multfac_smag"].astype(np.float64)).astype(np.float32)
    div = np.einsum("cn,cnk->ck", a["geofac_div"], a["vn"][c2e]).astype(np.float32)
    hdef = _to_half_levels(a["wgtfac_c"], kh_c, lo, hi)
    return (_to_half_levels(a["wgtfac_c"], div, lo, hi).astype(np.float32),
            (hdef * hdef).astype(np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_diagnostic_quantities_for_turbulence_called_directly(backend):
    a = _turbulence_inputs()
    base_div, base_hdef = f32(NC, NH), f32(NC, NH)
    div_ic, hdef_ic = base_div.copy(), base_hdef.copy()
    _diagnostic_quantities_for_turbulence(
        **a, out=(div_ic, hdef_ic), domain={CellDim: (1, NC), KHalfDim: (1, NLEV)},
        offset_provider=TABLES, backend=backend)
    want_div, want_hdef = _turbulence_numpy(a, 1, NLEV)
    check(dict(div_ic=div_ic, hdef_ic=hdef_ic),
          dict(div_ic=inside(want_div, base_div, 1, NC, 1, NLEV),
               hdef_ic=inside(want_hdef, base_hdef, 1, NC, 1, NLEV)), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diagnostics_for_turbulence_from_full_levels_called_directly(backend):
    div, kh_c, wgtfac_c = f32(NC, NLEV) - 0.5, f32(NC, NLEV), f32(NC, NH)
    div_ic, hdef_ic = np.zeros((NC, NH), np.float32), np.zeros((NC, NH), np.float32)
    _diagnostics_for_turbulence(div, kh_c, wgtfac_c, out=(div_ic, hdef_ic),
                                domain={CellDim: (0, NC), KHalfDim: (2, NLEV)},
                                offset_provider=TABLES, backend=backend)
    want_div = np.zeros((NC, NH), np.float32)
    want_hdef = np.zeros((NC, NH), np.float32)
    want_div[:, 2:NLEV] = _to_half_levels(wgtfac_c, div, 2, NLEV)[:, 2:NLEV]
    hdef = _to_half_levels(wgtfac_c, kh_c, 2, NLEV)
    want_hdef[:, 2:NLEV] = (hdef * hdef)[:, 2:NLEV]
    check(dict(div_ic=div_ic, hdef_ic=hdef_ic), dict(div_ic=want_div, hdef_ic=want_hdef),
          rtol=2e-5, atol=1e-6)
