"""A twentieth round of ICON stencils (icon4py's field operators) in icon4py's
own spelling, beside ``test_icon_stencils_ported*.py``.

First the whole velocity advection of the corrector step on staggered
vertical dimensions (``dims.KHalfDim`` beside ``dims.KDim``): the
contravariant corrected w with its CFL clipping chosen as a tuple of three by
``concat_where`` over a ``KHalfDim`` range bounded by
``maximum(2, end_index_of_damping_layer - 2)``, the vertical advection of w
reading ``coeff1_dwdz(dims.KHalfDim + 0.5)`` beside ``w(dims.KHalfDim - 1)``,
the horizontal advection of w at half-level edges through vertices (``V2C``,
``E2V``) summed back to cells (``C2E``), the extra diffusion of w over
``C2E2CO`` where clipped and owned, the corrected w averaged to full levels
(``KDim ± 0.5``), then the advection of the normal wind: the vorticity at
vertices (``V2E``), the kinetic energy gradient read through
``coeff_gradekin[dims.E2CDim(0)]``, vn on half levels read at full levels and
the extra diffusion near the CFL limit (``E2C2EO`` and ``E2V``) chosen by
``concat_where`` on a ``KDim`` range under a ``bool`` argument; one field
operator of three outputs on three domains (two ``KHalfDim`` domains of cells
and one ``KDim`` domain of edges) with ``nlev=vertical_end``.
Then the predictor step of the same advection: the diagnostics of the normal
wind (the tangential wind over ``E2C2E``, vn on half levels extrapolated at
the surface, the contravariant correction) feeding the vertical momentum,
where an ``if not skip_compute_predictor_vertical_advection:`` binds a
temporary of its own and reassigns an argument; nine outputs on nine domains.
Then the solver's interpolation of rho and theta_v to half levels and the
pressure buoyancy acceleration (``astype`` of a tuple of four, ``Koff[-1]``,
four outputs), and the Laplacian of a cell field without levels over
``C2E2CO`` (two programs, keyword and positional calls).
Then the full three-dimensional divergence damping in the older spelling of
icon4py's stencils (``Field[[CellDim, KDim], vpfloat]``, ``backend=backend``),
eleven programs run one after the other; the extra diffusion of vn under a
level mask, the damping scaled by the squared edge area, the divergence at
vertices over ``V2C2E``, and a program writing a cell field on an ``EdgeDim``
domain, refused as GT4Py refuses it; the divergence of the flux with dw/dz
and its gradient on edges and levels (one program, two horizontal
dimensions).  Last the end of the solver's step
(mass flux, theta_v with a constant of a ``Final`` instance, theta_v' at the
surface), the interpolation to half levels with a caller's surface value
(``concat_where(dims.KHalfDim < surface_level - 1, …)``) and the older
cells-to-vertices interpolation.
Each group is one program (or a chain of them), interpreted and compiled,
compared with NumPy written from the formulas."""

from __future__ import annotations

import types
from typing import Final, TypeVar

import numpy as np
import pytest

from icon_numpy import check, inside
from tensorir_dace import frontend as gtx
from tensorir_dace.errors import TensorIRError
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
    int32,
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
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.E2CDim, dims.C2EDim, dims.C2E2CODim, dims.E2VDim = E2CDim, C2EDim, C2E2CODim, E2VDim
dims.V2CDim, dims.V2EDim, dims.E2C2EODim, dims.E2C2EDim = V2CDim, V2EDim, E2C2EODim, E2C2EDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
E2C2EO = FieldOffset("E2C2EO", source=EdgeDim, target=(EdgeDim, E2C2EODim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
CEDim = Dimension("CE")
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
dims.Koff = Koff

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.EdgeKHalfField = Field[Dims[EdgeDim, KHalfDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.VertexKHalfField = Field[Dims[VertexDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float64       # icon4py's double precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 12, 6, 10
NH = NLEV + 1
RNG = np.random.default_rng(20001)
_TABLE_RNG = np.random.default_rng(20002)


def _distinct(rows, n, k):
    return np.array([_TABLE_RNG.choice(n, k, replace=False) for _ in range(rows)])


def _with_self(rows, k):
    return np.array([np.concatenate([[r], _TABLE_RNG.choice(np.delete(np.arange(rows), r), k,
                                                             replace=False)])
                     for r in range(rows)])


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3),
          "C2E2CO": _with_self(NC, 3), "E2V": _distinct(NE, NV, 2),
          "V2C": _distinct(NV, NC, 6), "V2E": _distinct(NV, NE, 6),
          "E2C2EO": _with_self(NE, 4), "E2C2E": _distinct(NE, NE, 4), "C2CE": None,
          "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(20003).bit_generator.state


def nb(x, table):
    """``x(OFFSET)``: the neighbours' rows, a local axis second."""
    return np.asarray(x)[TABLES[table]]


def nbsum(weights, x, table):
    """``neighbor_sum(weights * x(OFFSET))`` for a field with levels."""
    return np.einsum("rn,rnk->rk", weights, nb(x, table))


# ================================================================== velocity advection, corrector
#
# icon4py's compute_velocity_advection_in_corrector_step (velocity_tendencies
# of ICON for istep == 2) on KHalfDim, with the field operators it is built of.


@gtx.field_operator
def _compute_contravariant_corrected_w(
    w: fa.CellKHalfField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
) -> fa.CellKHalfField[ta.vpfloat]:
    contravariant_corrected_w_at_cells_on_half_levels = (
        astype(w, vpfloat) - contravariant_correction_at_cells_on_half_levels
    )

    return contravariant_corrected_w_at_cells_on_half_levels


@gtx.field_operator
def _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> tuple[
    fa.CellKHalfField[ta.vpfloat],
    fa.CellKHalfField[bool],
    fa.CellKHalfField[ta.vpfloat],
]:
    contravariant_corrected_w_at_cells_on_half_levels_wp, ddqz_z_half_wp = astype(
        (contravariant_corrected_w_at_cells_on_half_levels, ddqz_z_half), wpfloat
    )

    cfl_clipping = where(
        abs(contravariant_corrected_w_at_cells_on_half_levels) > cfl_w_limit * ddqz_z_half,
        broadcast(True, (dims.CellDim, dims.KHalfDim)),
        False,
    )

    vertical_cfl = where(
        cfl_clipping,
        contravariant_corrected_w_at_cells_on_half_levels_wp * dtime / ddqz_z_half_wp,
        broadcast(wpfloat("0.0"), (dims.CellDim, dims.KHalfDim)),
    )
    vertical_cfl_vp = astype(vertical_cfl, vpfloat)

    contravariant_corrected_w_at_cells_on_half_levels_wp = where(
        (cfl_clipping) & (vertical_cfl_vp < -vpfloat("0.85")),
        astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        contravariant_corrected_w_at_cells_on_half_levels_wp,
    )

    contravariant_corrected_w_at_cells_on_half_levels_wp = where(
        (cfl_clipping) & (vertical_cfl_vp > vpfloat("0.85")),
        astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        contravariant_corrected_w_at_cells_on_half_levels_wp,
    )

    return (
        astype(contravariant_corrected_w_at_cells_on_half_levels_wp, vpfloat),
        cfl_clipping,
        vertical_cfl_vp,
    )


@gtx.field_operator
def _compute_contravariant_corrected_w_and_cfl(
    w: fa.CellKHalfField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[fa.CellKHalfField[ta.vpfloat], fa.CellKHalfField[bool], fa.CellKHalfField[ta.vpfloat]]:
    contravariant_corrected_w_at_cells_on_half_levels = _compute_contravariant_corrected_w(
        w, contravariant_correction_at_cells_on_half_levels
    )

    (contravariant_corrected_w_at_cells_on_half_levels, cfl_clipping, vertical_cfl) = concat_where(
        (dims.KHalfDim >= maximum(2, end_index_of_damping_layer - 2)) & (dims.KHalfDim < nlev - 3),
        _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
            ddqz_z_half=ddqz_z_half,
            contravariant_corrected_w_at_cells_on_half_levels=contravariant_corrected_w_at_cells_on_half_levels,
            cfl_w_limit=cfl_w_limit,
            dtime=dtime,
        ),
        (
            contravariant_corrected_w_at_cells_on_half_levels,
            broadcast(False, (dims.CellDim, dims.KHalfDim)),
            broadcast(vpfloat("0.0"), (dims.CellDim, dims.KHalfDim)),
        ),
    )

    return contravariant_corrected_w_at_cells_on_half_levels, cfl_clipping, vertical_cfl


@gtx.field_operator
def _add_vertical_advection_of_w_to_advective_vertical_wind_tendency(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[vpfloat],
    w: fa.CellKHalfField[wpfloat],
    coeff1_dwdz: fa.CellKField[vpfloat],
    coeff2_dwdz: fa.CellKField[vpfloat],
) -> fa.CellKHalfField[vpfloat]:
    contravariant_corrected_w_at_cells_on_half_levels_wp = astype(
        contravariant_corrected_w_at_cells_on_half_levels, wpfloat
    )
    coeff1_dwdz_at_half_levels = coeff1_dwdz(dims.KHalfDim + 0.5)
    coeff2_dwdz_at_half_levels = coeff2_dwdz(dims.KHalfDim + 0.5)
    coeff1_dwdz_wp, coeff2_dwdz_wp = astype(
        (coeff1_dwdz_at_half_levels, coeff2_dwdz_at_half_levels), wpfloat
    )

    vertical_wind_advective_tendency_wp = -contravariant_corrected_w_at_cells_on_half_levels_wp * (
        w(dims.KHalfDim - 1) * coeff1_dwdz_wp
        - w(dims.KHalfDim + 1) * coeff2_dwdz_wp
        + w * astype(coeff2_dwdz_at_half_levels - coeff1_dwdz_at_half_levels, wpfloat)
    )
    return astype(vertical_wind_advective_tendency_wp, vpfloat)


@gtx.field_operator
def _add_interpolated_horizontal_advection_of_w(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    z_v_grad_w: fa.EdgeKHalfField[vpfloat],
    ddt_w_adv: fa.CellKHalfField[vpfloat],
) -> fa.CellKHalfField[vpfloat]:
    """Formerly known as _mo_velocity_advection_stencil_17."""
    z_v_grad_w_wp, ddt_w_adv_wp = astype((z_v_grad_w, ddt_w_adv), wpfloat)
    ddt_w_adv_wp = ddt_w_adv_wp + neighbor_sum(z_v_grad_w_wp(C2E) * e_bln_c_s, axis=C2EDim)
    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _add_extra_diffusion_for_w_con_approaching_cfl(
    cfl_clipping: fa.CellKHalfField[bool],
    owner_mask: fa.CellField[bool],
    z_w_con_c: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], ta.wpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    ddt_w_adv: fa.CellKHalfField[ta.vpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> fa.CellKHalfField[ta.vpfloat]:
    """Formerly known as _mo_velocity_advection_stencil_18."""
    z_w_con_c_wp, ddqz_z_half_wp, ddt_w_adv_wp, cfl_w_limit_wp = astype(
        (z_w_con_c, ddqz_z_half, ddt_w_adv, cfl_w_limit), wpfloat
    )

    difcoef = where(
        cfl_clipping & owner_mask,
        scalfac_exdiff
        * minimum(
            wpfloat("0.85") - cfl_w_limit_wp * dtime,
            abs(z_w_con_c_wp) * dtime / ddqz_z_half_wp - cfl_w_limit_wp * dtime,
        ),
        wpfloat("0.0"),
    )

    ddt_w_adv_wp = where(
        cfl_clipping & owner_mask,
        ddt_w_adv_wp + difcoef * area * neighbor_sum(w(C2E2CO) * geofac_n2s, axis=C2E2CODim),
        ddt_w_adv_wp,
    )

    return astype(ddt_w_adv_wp, vpfloat)


@gtx.field_operator
def _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(
    p_cell_in: fa.CellKHalfField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
) -> fa.VertexKHalfField[vpfloat]:
    p_vert_out = neighbor_sum(c_intp * p_cell_in(V2C), axis=dims.V2CDim)
    return astype(p_vert_out, vpfloat)


@gtx.field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
    vn_ie: fa.EdgeKHalfField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    z_vt_ie: fa.EdgeKHalfField[vpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    z_w_v: fa.VertexKHalfField[vpfloat],
) -> fa.EdgeKHalfField[vpfloat]:
    """Formerly known as _mo_velocity_advection_stencil_07."""
    vn_ie_wp, z_vt_ie_wp = astype((vn_ie, z_vt_ie), wpfloat)

    red_hadv_vp = (
        vn_ie_wp * inv_dual_edge_length * (w(E2C[0]) - w(E2C[1]))
        + z_vt_ie_wp
        * inv_primal_edge_length
        * tangent_orientation
        * astype(z_w_v(E2V[0]) - z_w_v(E2V[1]), wpfloat)
    )
    return astype(red_hadv_vp, vpfloat)


@gtx.field_operator
def _compute_horizontal_advection_of_w(
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
) -> fa.EdgeKHalfField[ta.vpfloat]:
    w_at_vertices = _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(w, c_intp)

    horizontal_advection_of_w_at_edges_on_half_levels = (
        _compute_horizontal_advection_term_for_vertical_velocity(
            vn_on_half_levels,
            inv_dual_edge_length,
            w,
            tangential_wind_on_half_levels,
            inv_primal_edge_length,
            tangent_orientation,
            w_at_vertices,
        )
    )

    return astype(horizontal_advection_of_w_at_edges_on_half_levels, vpfloat)


@gtx.field_operator
def _compute_advective_vertical_wind_tendency(
    w: fa.CellKHalfField[ta.wpfloat],
    horizontal_advection_of_w_at_edges_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[ta.wpfloat],
    cfl_clipping: fa.CellKHalfField[bool],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
) -> fa.CellKHalfField[ta.vpfloat]:
    vertical_wind_advective_tendency = (
        _add_vertical_advection_of_w_to_advective_vertical_wind_tendency(
            contravariant_corrected_w_at_cells_on_half_levels, w, coeff1_dwdz, coeff2_dwdz
        )
    )

    vertical_wind_advective_tendency = _add_interpolated_horizontal_advection_of_w(
        e_bln_c_s,
        horizontal_advection_of_w_at_edges_on_half_levels,
        vertical_wind_advective_tendency,
    )

    vertical_wind_advective_tendency = _add_extra_diffusion_for_w_con_approaching_cfl(
        cfl_clipping,
        owner_mask,
        contravariant_corrected_w_at_cells_on_half_levels,
        ddqz_z_half,
        area,
        geofac_n2s,
        w,
        vertical_wind_advective_tendency,
        scalfac_exdiff,
        cfl_w_limit,
        dtime,
    )

    return vertical_wind_advective_tendency


@gtx.field_operator
def _interpolate_contravariant_vertical_velocity_to_full_levels(
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKHalfField[vpfloat],
    nlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    return concat_where(
        dims.KDim < nlev - 1,
        vpfloat("0.5")
        * (
            contravariant_corrected_w_at_cells_on_half_levels(dims.KDim - 0.5)
            + contravariant_corrected_w_at_cells_on_half_levels(dims.KDim + 0.5)
        ),
        vpfloat("0.5") * contravariant_corrected_w_at_cells_on_half_levels(dims.KDim - 0.5),
    )


@gtx.field_operator
def _compute_advection_in_corrector_vertical_momentum(
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[fa.CellKHalfField[ta.vpfloat], fa.CellKField[ta.vpfloat], fa.CellKHalfField[ta.vpfloat]]:
    #: intermediate variable horizontal_advection_of_w_at_edges_on_half_levels
    #: is originally declared as z_v_grad_w in ICON
    horizontal_advection_of_w_at_edges_on_half_levels = _compute_horizontal_advection_of_w(
        w=w,
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vn_on_half_levels=vn_on_half_levels,
        c_intp=c_intp,
        inv_dual_edge_length=inv_dual_edge_length,
        inv_primal_edge_length=inv_primal_edge_length,
        tangent_orientation=tangent_orientation,
    )

    (
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
        vertical_cfl,
    ) = _compute_contravariant_corrected_w_and_cfl(
        w=w,
        contravariant_correction_at_cells_on_half_levels=contravariant_correction_at_cells_on_half_levels,
        ddqz_z_half=ddqz_z_half,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )

    vertical_wind_advective_tendency = _compute_advective_vertical_wind_tendency(
        w=w,
        horizontal_advection_of_w_at_edges_on_half_levels=horizontal_advection_of_w_at_edges_on_half_levels,
        contravariant_corrected_w_at_cells_on_half_levels=contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping=cfl_clipping,
        coeff1_dwdz=coeff1_dwdz,
        coeff2_dwdz=coeff2_dwdz,
        e_bln_c_s=e_bln_c_s,
        ddqz_z_half=ddqz_z_half,
        area=area,
        geofac_n2s=geofac_n2s,
        owner_mask=owner_mask,
        scalfac_exdiff=scalfac_exdiff,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
    )

    contravariant_corrected_w_at_cells_on_model_levels = (
        _interpolate_contravariant_vertical_velocity_to_full_levels(
            contravariant_corrected_w_at_cells_on_half_levels, nlev
        )
    )

    return (
        vertical_wind_advective_tendency,
        contravariant_corrected_w_at_cells_on_model_levels,
        vertical_cfl,
    )


@gtx.field_operator
def _mo_math_divrot_rot_vertex_ri_dsl(
    vec_e: fa.EdgeKField[wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, V2EDim], wpfloat],
) -> fa.VertexKField[vpfloat]:
    rot_vec_wp = neighbor_sum(vec_e(V2E) * geofac_rot, axis=V2EDim)
    return astype(rot_vec_wp, vpfloat)


@gtx.field_operator
def _interpolate_to_cell_center_vp(
    interpolant: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    """Interpolate an edge field to the cell centers with the bilinear C2E weights.

    Formerly known as mo_velocity_advection_stencil_08 or
    mo_velocity_advection_stencil_09.
    """
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s * interpolant_wp(C2E), axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _compute_advective_normal_wind_tendency(
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    upward_vorticity_at_vertices_on_model_levels: fa.VertexKField[ta.vpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    #: intermediate variable horizontal_kinetic_energy_at_cells_on_model_levels
    #: is originally declared as z_ekinh in ICON
    horizontal_kinetic_energy_at_cells_on_model_levels = _interpolate_to_cell_center_vp(
        horizontal_kinetic_energy_at_edges_on_model_levels, e_bln_c_s
    )
    horizontal_kinetic_energy_at_cells_on_model_levels = astype(
        horizontal_kinetic_energy_at_cells_on_model_levels, vpfloat
    )

    (
        contravariant_corrected_w_at_cells_on_model_levels_wp,
        ddqz_z_full_e_wp,
        tangential_wind_wp,
    ) = astype(
        (contravariant_corrected_w_at_cells_on_model_levels, ddqz_z_full_e, tangential_wind),
        wpfloat,
    )

    horizontal_advection = (
        horizontal_kinetic_energy_at_edges_on_model_levels
        * (coeff_gradekin[dims.E2CDim(0)] - coeff_gradekin[dims.E2CDim(1)])
        + coeff_gradekin[dims.E2CDim(1)]
        * horizontal_kinetic_energy_at_cells_on_model_levels(E2C[1])
        - coeff_gradekin[dims.E2CDim(0)]
        * horizontal_kinetic_energy_at_cells_on_model_levels(E2C[0])
    )

    vertical_advection = (
        neighbor_sum(
            c_lin_e * contravariant_corrected_w_at_cells_on_model_levels_wp(E2C), axis=dims.E2CDim
        )
        * astype((vn_on_half_levels(dims.KDim - 0.5) - vn_on_half_levels(dims.KDim + 0.5)), wpfloat)
        / ddqz_z_full_e_wp
    )

    coriolis_term = tangential_wind_wp * (
        coriolis_frequency
        + astype(
            vpfloat("0.5")
            * neighbor_sum(upward_vorticity_at_vertices_on_model_levels(E2V), axis=dims.E2VDim),
            wpfloat,
        )
    )
    normal_wind_advective_tendency_wp = -(horizontal_advection + vertical_advection + coriolis_term)

    return astype(normal_wind_advective_tendency_wp, vpfloat)


@gtx.field_operator
def _compute_extra_diffusion(
    vn: fa.EdgeKField[ta.wpfloat],
    upward_vorticity_at_vertices_on_model_levels: fa.VertexKField[ta.vpfloat],
    difcoef: fa.EdgeKField[ta.wpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    gradient_of_divergence_of_vn = neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=dims.E2C2EODim)

    gradient_of_vorticity = (
        tangent_orientation
        * inv_primal_edge_length
        * astype(
            upward_vorticity_at_vertices_on_model_levels(E2V[1])
            - upward_vorticity_at_vertices_on_model_levels(E2V[0]),
            wpfloat,
        )
    )

    extra_diffusion_on_vn = (
        difcoef * area_edge * (gradient_of_divergence_of_vn + gradient_of_vorticity)
    )

    return extra_diffusion_on_vn


@gtx.field_operator
def _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl_without_levelmask(
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    upward_vorticity_at_vertices_on_model_levels: fa.VertexKField[ta.vpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    normal_wind_advective_tendency: fa.EdgeKField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat,
    scalfac_exdiff: ta.wpfloat,
    dtime: ta.wpfloat,
) -> fa.EdgeKField[ta.vpfloat]:
    (
        contravariant_corrected_w_at_cells_on_model_levels_wp,
        ddqz_z_full_e_wp,
        normal_wind_advective_tendency_wp,
        cfl_w_limit_wp,
    ) = astype(
        (
            contravariant_corrected_w_at_cells_on_model_levels,
            ddqz_z_full_e,
            normal_wind_advective_tendency,
            cfl_w_limit,
        ),
        wpfloat,
    )

    #: intermediate variable contravariant_corrected_w_at_edges_on_model_levels
    #: is originally declared as w_con_e in ICON
    contravariant_corrected_w_at_edges_on_model_levels = neighbor_sum(
        c_lin_e * contravariant_corrected_w_at_cells_on_model_levels_wp(E2C), axis=dims.E2CDim
    )
    difcoef = scalfac_exdiff * minimum(
        wpfloat("0.85") - cfl_w_limit_wp * dtime,
        abs(contravariant_corrected_w_at_edges_on_model_levels) * dtime / ddqz_z_full_e_wp
        - cfl_w_limit_wp * dtime,
    )
    normal_wind_advective_tendency_wp = where(
        abs(contravariant_corrected_w_at_edges_on_model_levels)
        > astype(cfl_w_limit * ddqz_z_full_e, wpfloat),
        normal_wind_advective_tendency_wp
        + _compute_extra_diffusion(
            vn=vn,
            upward_vorticity_at_vertices_on_model_levels=upward_vorticity_at_vertices_on_model_levels,
            difcoef=difcoef,
            area_edge=area_edge,
            geofac_grdiv=geofac_grdiv,
            tangent_orientation=tangent_orientation,
            inv_primal_edge_length=inv_primal_edge_length,
        ),
        normal_wind_advective_tendency_wp,
    )
    return astype(normal_wind_advective_tendency_wp, vpfloat)


@gtx.field_operator
def _compute_advection_in_horizontal_momentum(
    vn: fa.EdgeKField[ta.wpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    contravariant_corrected_w_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    cfl_w_limit: ta.vpfloat,
    scalfac_exdiff: ta.wpfloat,
    dtime: ta.wpfloat,
    apply_extra_diffusion_on_vn: bool,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> fa.EdgeKField[ta.vpfloat]:
    upward_vorticity_at_vertices_on_model_levels = _mo_math_divrot_rot_vertex_ri_dsl(vn, geofac_rot)
    upward_vorticity_at_vertices_on_model_levels = astype(
        upward_vorticity_at_vertices_on_model_levels, vpfloat
    )

    normal_wind_advective_tendency = _compute_advective_normal_wind_tendency(
        horizontal_kinetic_energy_at_edges_on_model_levels=horizontal_kinetic_energy_at_edges_on_model_levels,
        upward_vorticity_at_vertices_on_model_levels=upward_vorticity_at_vertices_on_model_levels,
        tangential_wind=tangential_wind,
        vn_on_half_levels=vn_on_half_levels,
        contravariant_corrected_w_at_cells_on_model_levels=contravariant_corrected_w_at_cells_on_model_levels,
        coriolis_frequency=coriolis_frequency,
        e_bln_c_s=e_bln_c_s,
        c_lin_e=c_lin_e,
        coeff_gradekin=coeff_gradekin,
        ddqz_z_full_e=ddqz_z_full_e,
    )

    if apply_extra_diffusion_on_vn:
        normal_wind_advective_tendency = concat_where(
            ((maximum(2, end_index_of_damping_layer - 2)) <= dims.KDim) & (dims.KDim < (nlev - 4)),
            _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl_without_levelmask(
                c_lin_e=c_lin_e,
                contravariant_corrected_w_at_cells_on_model_levels=contravariant_corrected_w_at_cells_on_model_levels,
                ddqz_z_full_e=ddqz_z_full_e,
                area_edge=area_edge,
                tangent_orientation=tangent_orientation,
                inv_primal_edge_length=inv_primal_edge_length,
                upward_vorticity_at_vertices_on_model_levels=upward_vorticity_at_vertices_on_model_levels,
                geofac_grdiv=geofac_grdiv,
                vn=vn,
                normal_wind_advective_tendency=normal_wind_advective_tendency,
                cfl_w_limit=cfl_w_limit,
                scalfac_exdiff=scalfac_exdiff,
                dtime=dtime,
            ),
            normal_wind_advective_tendency,
        )

    return normal_wind_advective_tendency


@gtx.field_operator
def _compute_velocity_advection_in_corrector_step(
    vn: fa.EdgeKField[ta.wpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    apply_extra_diffusion_on_vn: bool,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[
    fa.CellKHalfField[ta.vpfloat],
    fa.CellKHalfField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    (
        vertical_wind_advective_tendency,
        contravariant_corrected_w_at_cells_on_model_levels,
        vertical_cfl,
    ) = _compute_advection_in_corrector_vertical_momentum(
        w=w,
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vn_on_half_levels=vn_on_half_levels,
        contravariant_correction_at_cells_on_half_levels=contravariant_correction_at_cells_on_half_levels,
        coeff1_dwdz=coeff1_dwdz,
        coeff2_dwdz=coeff2_dwdz,
        c_intp=c_intp,
        inv_dual_edge_length=inv_dual_edge_length,
        inv_primal_edge_length=inv_primal_edge_length,
        tangent_orientation=tangent_orientation,
        e_bln_c_s=e_bln_c_s,
        ddqz_z_half=ddqz_z_half,
        area=area,
        geofac_n2s=geofac_n2s,
        owner_mask=owner_mask,
        scalfac_exdiff=scalfac_exdiff,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )

    normal_wind_advective_tendency = _compute_advection_in_horizontal_momentum(
        vn=vn,
        horizontal_kinetic_energy_at_edges_on_model_levels=horizontal_kinetic_energy_at_edges_on_model_levels,
        tangential_wind=tangential_wind,
        coriolis_frequency=coriolis_frequency,
        contravariant_corrected_w_at_cells_on_model_levels=contravariant_corrected_w_at_cells_on_model_levels,
        vn_on_half_levels=vn_on_half_levels,
        e_bln_c_s=e_bln_c_s,
        geofac_rot=geofac_rot,
        coeff_gradekin=coeff_gradekin,
        c_lin_e=c_lin_e,
        ddqz_z_full_e=ddqz_z_full_e,
        area_edge=area_edge,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        geofac_grdiv=geofac_grdiv,
        cfl_w_limit=cfl_w_limit,
        scalfac_exdiff=scalfac_exdiff,
        dtime=dtime,
        apply_extra_diffusion_on_vn=apply_extra_diffusion_on_vn,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )

    return (
        vertical_wind_advective_tendency,
        vertical_cfl,
        normal_wind_advective_tendency,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_velocity_advection_in_corrector_step(
    vertical_wind_advective_tendency: fa.CellKHalfField[ta.vpfloat],
    vertical_cfl: fa.CellKHalfField[ta.vpfloat],
    normal_wind_advective_tendency: fa.EdgeKField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    apply_extra_diffusion_on_vn: bool,
    end_index_of_damping_layer: gtx.int32,
    start_cell_lateral_boundary_level_4: gtx.int32,
    end_cell_halo: gtx.int32,
    start_edge_nudging_level_2: gtx.int32,
    end_edge_local: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    """Compute the velocity advection tendencies of the corrector step."""

    _compute_velocity_advection_in_corrector_step(
        vn=vn,
        w=w,
        tangential_wind=tangential_wind,
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vn_on_half_levels=vn_on_half_levels,
        horizontal_kinetic_energy_at_edges_on_model_levels=horizontal_kinetic_energy_at_edges_on_model_levels,
        contravariant_correction_at_cells_on_half_levels=contravariant_correction_at_cells_on_half_levels,
        coeff1_dwdz=coeff1_dwdz,
        coeff2_dwdz=coeff2_dwdz,
        c_intp=c_intp,
        inv_dual_edge_length=inv_dual_edge_length,
        inv_primal_edge_length=inv_primal_edge_length,
        tangent_orientation=tangent_orientation,
        e_bln_c_s=e_bln_c_s,
        ddqz_z_half=ddqz_z_half,
        area=area,
        geofac_n2s=geofac_n2s,
        owner_mask=owner_mask,
        coriolis_frequency=coriolis_frequency,
        geofac_rot=geofac_rot,
        coeff_gradekin=coeff_gradekin,
        c_lin_e=c_lin_e,
        ddqz_z_full_e=ddqz_z_full_e,
        area_edge=area_edge,
        geofac_grdiv=geofac_grdiv,
        scalfac_exdiff=scalfac_exdiff,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        apply_extra_diffusion_on_vn=apply_extra_diffusion_on_vn,
        nlev=vertical_end,
        end_index_of_damping_layer=end_index_of_damping_layer,
        out=(
            vertical_wind_advective_tendency,
            vertical_cfl,
            normal_wind_advective_tendency,
        ),
        domain=(
            {
                dims.CellDim: (start_cell_lateral_boundary_level_4, end_cell_halo),
                dims.KHalfDim: (vertical_start + 1, vertical_end),
            },
            {
                dims.CellDim: (start_cell_lateral_boundary_level_4, end_cell_halo),
                dims.KHalfDim: (vertical_start, vertical_end),
            },
            {
                dims.EdgeDim: (start_edge_nudging_level_2, end_edge_local),
                dims.KDim: (vertical_start, vertical_end),
            },
        ),
    )


def _corrector_inputs():
    return dict(
        vn=RNG.standard_normal((NE, NLEV)), w=RNG.normal(0.0, 3.0, (NC, NH)),
        tangential_wind=RNG.standard_normal((NE, NLEV)),
        tangential_wind_on_half_levels=RNG.standard_normal((NE, NH)),
        vn_on_half_levels=RNG.standard_normal((NE, NH)),
        horizontal_kinetic_energy_at_edges_on_model_levels=RNG.random((NE, NLEV)),
        contravariant_correction_at_cells_on_half_levels=RNG.normal(0.0, 0.3, (NC, NH)),
        coeff1_dwdz=RNG.uniform(1e-3, 1e-2, (NC, NLEV)),
        coeff2_dwdz=RNG.uniform(1e-3, 1e-2, (NC, NLEV)),
        c_intp=RNG.uniform(0.1, 0.3, (NV, 6)), inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        e_bln_c_s=RNG.uniform(0.2, 0.5, (NC, 3)), ddqz_z_half=RNG.uniform(10.0, 50.0, (NC, NH)),
        area=RNG.uniform(0.5, 2.0, NC), geofac_n2s=RNG.standard_normal((NC, 4)),
        owner_mask=RNG.random(NC) < 0.7, coriolis_frequency=RNG.uniform(-1e-4, 1e-4, NE),
        geofac_rot=RNG.standard_normal((NV, 6)), coeff_gradekin=RNG.standard_normal((NE, 2)),
        c_lin_e=RNG.uniform(0.3, 0.7, (NE, 2)), ddqz_z_full_e=RNG.uniform(2.0, 20.0, (NE, NLEV)),
        area_edge=RNG.uniform(0.5, 2.0, NE), geofac_grdiv=RNG.standard_normal((NE, 5)))


def _corrector_numpy(a, scalfac, cfl, dtime, extra, edl, nlev):
    """ICON's velocity_tendencies for istep == 2, on nlev full levels."""
    g = types.SimpleNamespace(**a)
    w, ddqz = g.w, g.ddqz_z_half
    h = np.arange(nlev + 1)[None, :]
    wc = w - g.contravariant_correction_at_cells_on_half_levels
    region = (h >= max(2, edl - 2)) & (h < nlev - 3)
    clip = region & (np.abs(wc) > cfl * ddqz)
    vcfl = np.where(clip, wc * dtime / ddqz, 0.0)
    wc = np.where(clip & (vcfl < -0.85), -0.85 * ddqz / dtime, wc)
    wc = np.where(clip & (vcfl > 0.85), 0.85 * ddqz / dtime, wc)
    c1 = np.full((NC, nlev + 1), np.nan)
    c2 = np.full((NC, nlev + 1), np.nan)
    c1[:, :nlev], c2[:, :nlev] = g.coeff1_dwdz, g.coeff2_dwdz
    w_up, w_dn = np.full_like(w, np.nan), np.full_like(w, np.nan)
    w_up[:, 1:], w_dn[:, :-1] = w[:, :-1], w[:, 1:]
    with np.errstate(invalid="ignore"):
        tend = -wc * (w_up * c1 - w_dn * c2 + w * (c2 - c1))
    e2c, e2v = TABLES["E2C"], TABLES["E2V"]
    w_v = nbsum(g.c_intp, w, "V2C")
    hadv_w = (g.vn_on_half_levels * g.inv_dual_edge_length[:, None]
              * (w[e2c[:, 0]] - w[e2c[:, 1]])
              + g.tangential_wind_on_half_levels
              * (g.inv_primal_edge_length * g.tangent_orientation)[:, None]
              * (w_v[e2v[:, 0]] - w_v[e2v[:, 1]]))
    tend = tend + nbsum(g.e_bln_c_s, hadv_w, "C2E")
    mask = clip & g.owner_mask[:, None]
    difcoef = scalfac * np.minimum(0.85 - cfl * dtime, np.abs(wc) * dtime / ddqz - cfl * dtime)
    tend = np.where(mask, tend + difcoef * g.area[:, None] * nbsum(g.geofac_n2s, w, "C2E2CO"),
                    tend)
    wc_full = 0.5 * (wc[:, :-1] + wc[:, 1:])
    wc_full[:, nlev - 1] = 0.5 * wc[:, nlev - 1]

    zeta = nbsum(g.geofac_rot, g.vn, "V2E")
    ekinh = nbsum(g.e_bln_c_s, g.horizontal_kinetic_energy_at_edges_on_model_levels, "C2E")
    cg0, cg1 = g.coeff_gradekin[:, :1], g.coeff_gradekin[:, 1:]
    hke = g.horizontal_kinetic_energy_at_edges_on_model_levels
    hadv = hke * (cg0 - cg1) + cg1 * ekinh[e2c[:, 1]] - cg0 * ekinh[e2c[:, 0]]
    w_con_e = nbsum(g.c_lin_e, wc_full, "E2C")
    vn_ie = g.vn_on_half_levels
    vadv = w_con_e * (vn_ie[:, :-1] - vn_ie[:, 1:]) / g.ddqz_z_full_e
    cor = g.tangential_wind * (g.coriolis_frequency[:, None] + 0.5 * nb(zeta, "E2V").sum(1))
    ntend = -(hadv + vadv + cor)
    if extra:
        k = np.arange(nlev)[None, :]
        kregion = (k >= max(2, edl - 2)) & (k < nlev - 4)
        dif = scalfac * np.minimum(0.85 - cfl * dtime,
                                   np.abs(w_con_e) * dtime / g.ddqz_z_full_e - cfl * dtime)
        grad_div = nbsum(g.geofac_grdiv, g.vn, "E2C2EO")
        grad_rot = ((g.tangent_orientation * g.inv_primal_edge_length)[:, None]
                    * (zeta[e2v[:, 1]] - zeta[e2v[:, 0]]))
        near_cfl = kregion & (np.abs(w_con_e) > cfl * g.ddqz_z_full_e)
        ntend = np.where(near_cfl,
                         ntend + dif * g.area_edge[:, None] * (grad_div + grad_rot), ntend)
        assert near_cfl.any() and not near_cfl.all()
    assert mask.any() and (np.abs(vcfl) > 0.85).any()
    return tend, vcfl, ntend


@pytest.mark.parametrize(("extra", "bounds"), [(True, (1, NC - 1, 2, NE - 1)),
                                                (False, (0, NC, 0, NE))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_velocity_advection_in_corrector_step(backend, extra, bounds):
    cs, ce, es, ee = bounds
    edl, scalfac, cfl, dtime = 5, 0.15, 0.065, 10.0
    a = _corrector_inputs()
    base = dict(vertical_wind_advective_tendency=RNG.random((NC, NH)),
                vertical_cfl=RNG.random((NC, NH)),
                normal_wind_advective_tendency=RNG.random((NE, NLEV)))
    got = {n: v.copy() for n, v in base.items()}
    compute_velocity_advection_in_corrector_step(
        **got, **a, scalfac_exdiff=scalfac, cfl_w_limit=cfl, dtime=dtime,
        apply_extra_diffusion_on_vn=extra, end_index_of_damping_layer=edl,
        start_cell_lateral_boundary_level_4=cs, end_cell_halo=ce,
        start_edge_nudging_level_2=es, end_edge_local=ee, vertical_start=0,
        vertical_end=NLEV, offset_provider=TABLES, backend=backend)

    tend, vcfl, ntend = _corrector_numpy(a, scalfac, cfl, dtime, extra, edl, NLEV)
    check(got, dict(
        vertical_wind_advective_tendency=inside(
            tend, base["vertical_wind_advective_tendency"], cs, ce, 1, NLEV),
        vertical_cfl=inside(vcfl, base["vertical_cfl"], cs, ce, 0, NLEV),
        normal_wind_advective_tendency=inside(
            ntend, base["normal_wind_advective_tendency"], es, ee, 0, NLEV)),
        rtol=1e-10, atol=1e-12)


# ================================================================== velocity advection, predictor
#
# icon4py's compute_velocity_advection_in_predictor_step (istep == 1): the
# diagnostics of the normal wind first, nine outputs on nine domains.


@gtx.field_operator
def _compute_tangential_wind_vp(
    vn: fa.EdgeKField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    vt_wp = neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=dims.E2C2EDim)
    return astype(vt_wp, vpfloat)


@gtx.field_operator
def _compute_horizontal_kinetic_energy(
    vn: fa.EdgeKField[ta.wpfloat],
    vt: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    z_kin_hor_e_wp = wpfloat("0.5") * (vn * vn + astype(vt * vt, wpfloat))
    return astype(z_kin_hor_e_wp, vpfloat)


@gtx.field_operator
def _interpolate_to_half_levels(
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    x: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKHalfField[ta.vpfloat]:
    wgtfac_e_wp = astype(wgtfac_e, wpfloat)
    x_ie_wp = wgtfac_e_wp * x(dims.KHalfDim + 0.5) + (wpfloat("1.0") - wgtfac_e_wp) * x(
        dims.KHalfDim - 0.5
    )
    return concat_where(
        dims.KHalfDim > 0, astype(x_ie_wp, vpfloat), astype(x(dims.KHalfDim + 0.5), vpfloat)
    )


@gtx.field_operator
def _extrapolate_at_top(
    wgtfacq_e: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKHalfField[vpfloat]:
    wgtfacq_e_wp = astype(wgtfacq_e, wpfloat)
    vn_ie_wp = (
        wgtfacq_e_wp(dims.KHalfDim - 0.5) * vn(dims.KHalfDim - 0.5)
        + wgtfacq_e_wp(dims.KHalfDim - 1.5) * vn(dims.KHalfDim - 1.5)
        + wgtfacq_e_wp(dims.KHalfDim - 2.5) * vn(dims.KHalfDim - 2.5)
    )
    return astype(vn_ie_wp, vpfloat)


@gtx.field_operator
def _compute_contravariant_correction(
    vn: fa.EdgeKField[ta.wpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    vt: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.vpfloat]:
    ddxn_z_full_wp = astype(ddxn_z_full, wpfloat)
    z_w_concorr_me_wp = vn * ddxn_z_full_wp + astype(vt * ddxt_z_full, wpfloat)
    return astype(z_w_concorr_me_wp, vpfloat)


@gtx.field_operator
def _compute_diagnostics_from_normal_wind(
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    wgtfacq_e: fa.EdgeKField[ta.vpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    skip_compute_predictor_vertical_advection: bool,
    nlev: gtx.int32,
) -> tuple[
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKHalfField[ta.vpfloat],
    fa.EdgeKHalfField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    tangential_wind = _compute_tangential_wind_vp(vn, rbf_vec_coeff_e)
    horizontal_kinetic_energy_at_edges_on_model_levels = _compute_horizontal_kinetic_energy(
        vn, tangential_wind
    )
    vn_on_half_levels = concat_where(
        dims.KHalfDim < nlev,
        _interpolate_to_half_levels(wgtfac_e, vn),
        _extrapolate_at_top(wgtfacq_e, vn),
    )

    tangential_wind_on_half_levels = (
        _interpolate_to_half_levels(wgtfac_e, tangential_wind)
        if not skip_compute_predictor_vertical_advection
        else tangential_wind_on_half_levels
    )

    contravariant_correction_at_edges_on_model_levels = _compute_contravariant_correction(
        vn, ddxn_z_full, ddxt_z_full, tangential_wind
    )

    return (
        tangential_wind,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        horizontal_kinetic_energy_at_edges_on_model_levels,
        contravariant_correction_at_edges_on_model_levels,
    )


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _interpolate_cell_field_to_half_levels_vp(
    wgtfac_c: fa.CellKHalfField[ta.vpfloat],
    interpolant: fa.CellKField[ta.vpfloat],
) -> fa.CellKHalfField[ta.vpfloat]:
    interpolation_to_half_levels_vp = wgtfac_c * interpolant(dims.KHalfDim + 0.5) + (
        vpfloat("1.0") - wgtfac_c
    ) * interpolant(dims.KHalfDim - 0.5)
    return interpolation_to_half_levels_vp


@gtx.field_operator
def _interpolate_contravariant_correction_to_cells_on_half_levels(
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKHalfField[ta.vpfloat],
    nflatlev: gtx.int32,
) -> fa.CellKHalfField[ta.vpfloat]:
    contravariant_correction_at_cells_model_levels = _interpolate_to_cell_center_vp(
        contravariant_correction_at_edges_on_model_levels, e_bln_c_s
    )
    contravariant_correction_at_cells_model_levels = astype(
        contravariant_correction_at_cells_model_levels, vpfloat
    )

    contravariant_correction_at_cells_on_half_levels = concat_where(
        dims.KHalfDim >= nflatlev + 1,
        _interpolate_cell_field_to_half_levels_vp(
            wgtfac_c=wgtfac_c, interpolant=contravariant_correction_at_cells_model_levels
        ),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KHalfDim)),
    )

    return contravariant_correction_at_cells_on_half_levels


@gtx.field_operator
def _compute_advection_in_predictor_vertical_momentum(
    vertical_wind_advective_tendency: fa.CellKHalfField[ta.vpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_compute_predictor_vertical_advection: bool,
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[
    fa.CellKHalfField[ta.vpfloat],
    fa.CellKHalfField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKHalfField[ta.vpfloat],
]:
    contravariant_correction_at_cells_on_half_levels = (
        _interpolate_contravariant_correction_to_cells_on_half_levels(
            contravariant_correction_at_edges_on_model_levels=contravariant_correction_at_edges_on_model_levels,
            e_bln_c_s=e_bln_c_s,
            wgtfac_c=wgtfac_c,
            nflatlev=nflatlev,
        )
    )

    (
        contravariant_corrected_w_at_cells_on_half_levels,
        cfl_clipping,
        vertical_cfl,
    ) = _compute_contravariant_corrected_w_and_cfl(
        w=w,
        contravariant_correction_at_cells_on_half_levels=contravariant_correction_at_cells_on_half_levels,
        ddqz_z_half=ddqz_z_half,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )

    if not skip_compute_predictor_vertical_advection:
        #: intermediate variable horizontal_advection_of_w_at_edges_on_half_levels
        #: is originally declared as z_v_grad_w in ICON
        horizontal_advection_of_w_at_edges_on_half_levels = _compute_horizontal_advection_of_w(
            w=w,
            tangential_wind_on_half_levels=tangential_wind_on_half_levels,
            vn_on_half_levels=vn_on_half_levels,
            c_intp=c_intp,
            inv_dual_edge_length=inv_dual_edge_length,
            inv_primal_edge_length=inv_primal_edge_length,
            tangent_orientation=tangent_orientation,
        )
        vertical_wind_advective_tendency = _compute_advective_vertical_wind_tendency(
            w=w,
            horizontal_advection_of_w_at_edges_on_half_levels=horizontal_advection_of_w_at_edges_on_half_levels,
            contravariant_corrected_w_at_cells_on_half_levels=contravariant_corrected_w_at_cells_on_half_levels,
            cfl_clipping=cfl_clipping,
            coeff1_dwdz=coeff1_dwdz,
            coeff2_dwdz=coeff2_dwdz,
            e_bln_c_s=e_bln_c_s,
            ddqz_z_half=ddqz_z_half,
            area=area,
            geofac_n2s=geofac_n2s,
            owner_mask=owner_mask,
            scalfac_exdiff=scalfac_exdiff,
            cfl_w_limit=cfl_w_limit,
            dtime=dtime,
        )

    contravariant_corrected_w_at_cells_on_model_levels = (
        _interpolate_contravariant_vertical_velocity_to_full_levels(
            contravariant_corrected_w_at_cells_on_half_levels, nlev
        )
    )

    return (
        contravariant_correction_at_cells_on_half_levels,
        vertical_wind_advective_tendency,
        contravariant_corrected_w_at_cells_on_model_levels,
        vertical_cfl,
    )


@gtx.field_operator
def _compute_velocity_advection_in_predictor_step(
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    vertical_wind_advective_tendency: fa.CellKHalfField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    wgtfacq_e: fa.EdgeKField[ta.vpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_compute_predictor_vertical_advection: bool,
    apply_extra_diffusion_on_vn: bool,
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
) -> tuple[
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKHalfField[ta.vpfloat],
    fa.EdgeKHalfField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.CellKHalfField[ta.vpfloat],
    fa.CellKHalfField[ta.vpfloat],
    fa.CellKHalfField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    (
        tangential_wind,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        horizontal_kinetic_energy_at_edges_on_model_levels,
        contravariant_correction_at_edges_on_model_levels,
    ) = _compute_diagnostics_from_normal_wind(
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vn=vn,
        rbf_vec_coeff_e=rbf_vec_coeff_e,
        wgtfac_e=wgtfac_e,
        wgtfacq_e=wgtfacq_e,
        ddxn_z_full=ddxn_z_full,
        ddxt_z_full=ddxt_z_full,
        skip_compute_predictor_vertical_advection=skip_compute_predictor_vertical_advection,
        nlev=nlev,
    )

    (
        contravariant_correction_at_cells_on_half_levels,
        vertical_wind_advective_tendency,
        contravariant_corrected_w_at_cells_on_model_levels,
        vertical_cfl,
    ) = _compute_advection_in_predictor_vertical_momentum(
        vertical_wind_advective_tendency=vertical_wind_advective_tendency,
        w=w,
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vn_on_half_levels=vn_on_half_levels,
        contravariant_correction_at_edges_on_model_levels=contravariant_correction_at_edges_on_model_levels,
        coeff1_dwdz=coeff1_dwdz,
        coeff2_dwdz=coeff2_dwdz,
        c_intp=c_intp,
        inv_dual_edge_length=inv_dual_edge_length,
        inv_primal_edge_length=inv_primal_edge_length,
        tangent_orientation=tangent_orientation,
        e_bln_c_s=e_bln_c_s,
        wgtfac_c=wgtfac_c,
        ddqz_z_half=ddqz_z_half,
        area=area,
        geofac_n2s=geofac_n2s,
        owner_mask=owner_mask,
        scalfac_exdiff=scalfac_exdiff,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        skip_compute_predictor_vertical_advection=skip_compute_predictor_vertical_advection,
        nflatlev=nflatlev,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )

    normal_wind_advective_tendency = _compute_advection_in_horizontal_momentum(
        vn=vn,
        horizontal_kinetic_energy_at_edges_on_model_levels=horizontal_kinetic_energy_at_edges_on_model_levels,
        tangential_wind=tangential_wind,
        coriolis_frequency=coriolis_frequency,
        contravariant_corrected_w_at_cells_on_model_levels=contravariant_corrected_w_at_cells_on_model_levels,
        vn_on_half_levels=vn_on_half_levels,
        e_bln_c_s=e_bln_c_s,
        geofac_rot=geofac_rot,
        coeff_gradekin=coeff_gradekin,
        c_lin_e=c_lin_e,
        ddqz_z_full_e=ddqz_z_full_e,
        area_edge=area_edge,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        geofac_grdiv=geofac_grdiv,
        cfl_w_limit=cfl_w_limit,
        scalfac_exdiff=scalfac_exdiff,
        dtime=dtime,
        apply_extra_diffusion_on_vn=apply_extra_diffusion_on_vn,
        nlev=nlev,
        end_index_of_damping_layer=end_index_of_damping_layer,
    )

    return (
        tangential_wind,
        tangential_wind_on_half_levels,
        vn_on_half_levels,
        horizontal_kinetic_energy_at_edges_on_model_levels,
        contravariant_correction_at_edges_on_model_levels,
        contravariant_correction_at_cells_on_half_levels,
        vertical_wind_advective_tendency,
        vertical_cfl,
        normal_wind_advective_tendency,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_velocity_advection_in_predictor_step(
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    tangential_wind_on_half_levels: fa.EdgeKHalfField[ta.wpfloat],
    vn_on_half_levels: fa.EdgeKHalfField[ta.vpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[ta.vpfloat],
    vertical_wind_advective_tendency: fa.CellKHalfField[ta.vpfloat],
    vertical_cfl: fa.CellKHalfField[ta.vpfloat],
    normal_wind_advective_tendency: fa.EdgeKField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    w: fa.CellKHalfField[ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    wgtfac_e: fa.EdgeKHalfField[ta.vpfloat],
    wgtfacq_e: fa.EdgeKField[ta.vpfloat],
    ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat],
    coeff1_dwdz: fa.CellKField[ta.vpfloat],
    coeff2_dwdz: fa.CellKField[ta.vpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], ta.wpfloat],
    inv_dual_edge_length: fa.EdgeField[ta.wpfloat],
    inv_primal_edge_length: fa.EdgeField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    wgtfac_c: fa.CellKHalfField[ta.vpfloat],
    ddqz_z_half: fa.CellKHalfField[ta.vpfloat],
    area: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    owner_mask: fa.CellField[bool],
    coriolis_frequency: fa.EdgeField[ta.wpfloat],
    geofac_rot: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], ta.wpfloat],
    coeff_gradekin: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.vpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    area_edge: fa.EdgeField[ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    scalfac_exdiff: ta.wpfloat,
    cfl_w_limit: ta.vpfloat,
    dtime: ta.wpfloat,
    skip_compute_predictor_vertical_advection: bool,
    apply_extra_diffusion_on_vn: bool,
    nflatlev: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
    start_edge_lateral_boundary_level_5: gtx.int32,
    end_edge_halo_level_2: gtx.int32,
    start_cell_lateral_boundary_level_4: gtx.int32,
    end_cell_halo: gtx.int32,
    start_edge_nudging_level_2: gtx.int32,
    end_edge_local: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    """Compute the velocity advection tendencies of the predictor step."""

    _compute_velocity_advection_in_predictor_step(
        tangential_wind_on_half_levels=tangential_wind_on_half_levels,
        vertical_wind_advective_tendency=vertical_wind_advective_tendency,
        vn=vn,
        w=w,
        rbf_vec_coeff_e=rbf_vec_coeff_e,
        wgtfac_e=wgtfac_e,
        wgtfacq_e=wgtfacq_e,
        ddxn_z_full=ddxn_z_full,
        ddxt_z_full=ddxt_z_full,
        coeff1_dwdz=coeff1_dwdz,
        coeff2_dwdz=coeff2_dwdz,
        c_intp=c_intp,
        inv_dual_edge_length=inv_dual_edge_length,
        inv_primal_edge_length=inv_primal_edge_length,
        tangent_orientation=tangent_orientation,
        e_bln_c_s=e_bln_c_s,
        wgtfac_c=wgtfac_c,
        ddqz_z_half=ddqz_z_half,
        area=area,
        geofac_n2s=geofac_n2s,
        owner_mask=owner_mask,
        coriolis_frequency=coriolis_frequency,
        geofac_rot=geofac_rot,
        coeff_gradekin=coeff_gradekin,
        c_lin_e=c_lin_e,
        ddqz_z_full_e=ddqz_z_full_e,
        area_edge=area_edge,
        geofac_grdiv=geofac_grdiv,
        scalfac_exdiff=scalfac_exdiff,
        cfl_w_limit=cfl_w_limit,
        dtime=dtime,
        skip_compute_predictor_vertical_advection=skip_compute_predictor_vertical_advection,
        apply_extra_diffusion_on_vn=apply_extra_diffusion_on_vn,
        nflatlev=nflatlev,
        nlev=vertical_end,
        end_index_of_damping_layer=end_index_of_damping_layer,
        out=(
            tangential_wind,
            tangential_wind_on_half_levels,
            vn_on_half_levels,
            horizontal_kinetic_energy_at_edges_on_model_levels,
            contravariant_correction_at_edges_on_model_levels,
            contravariant_correction_at_cells_on_half_levels,
            vertical_wind_advective_tendency,
            vertical_cfl,
            normal_wind_advective_tendency,
        ),
        domain=(
            {
                dims.EdgeDim: (start_edge_lateral_boundary_level_5, end_edge_halo_level_2),
                dims.KDim: (vertical_start, vertical_end),
            },
            {
                dims.EdgeDim: (start_edge_lateral_boundary_level_5, end_edge_halo_level_2),
                dims.KHalfDim: (vertical_start, vertical_end),
            },
            {
                dims.EdgeDim: (start_edge_lateral_boundary_level_5, end_edge_halo_level_2),
                dims.KHalfDim: (vertical_start, vertical_end + 1),
            },
            {
                dims.EdgeDim: (start_edge_lateral_boundary_level_5, end_edge_halo_level_2),
                dims.KDim: (vertical_start, vertical_end),
            },
            {
                dims.EdgeDim: (start_edge_lateral_boundary_level_5, end_edge_halo_level_2),
                dims.KDim: (nflatlev, vertical_end),
            },
            {
                dims.CellDim: (start_cell_lateral_boundary_level_4, end_cell_halo),
                dims.KHalfDim: (vertical_start, vertical_end),
            },
            {
                dims.CellDim: (start_cell_lateral_boundary_level_4, end_cell_halo),
                dims.KHalfDim: (vertical_start + 1, vertical_end),
            },
            {
                dims.CellDim: (start_cell_lateral_boundary_level_4, end_cell_halo),
                dims.KHalfDim: (vertical_start, vertical_end),
            },
            {
                dims.EdgeDim: (start_edge_nudging_level_2, end_edge_local),
                dims.KDim: (vertical_start, vertical_end),
            },
        ),
    )


def _to_half_levels(wgt, x, nlev):
    """``_interpolate_to_half_levels`` on half levels 0..nlev - 1."""
    out = np.empty((x.shape[0], nlev))
    out[:, 0] = x[:, 0]
    out[:, 1:] = wgt[:, 1:nlev] * x[:, 1:] + (1.0 - wgt[:, 1:nlev]) * x[:, :-1]
    return out


@pytest.mark.parametrize(("skip", "extra", "bounds"), [
    (False, True, (1, NE - 1, 0, NC - 1, 2, NE)),
    (True, False, (0, NE, 1, NC, 0, NE - 2))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_velocity_advection_in_predictor_step(backend, skip, extra, bounds):
    es5, eh2, cs, ce, es, ee = bounds
    edl, scalfac, cfl, dtime, nflatlev = 5, 0.15, 0.065, 10.0, 3
    a = _corrector_inputs()
    for name in ("tangential_wind", "tangential_wind_on_half_levels", "vn_on_half_levels",
                 "horizontal_kinetic_energy_at_edges_on_model_levels",
                 "contravariant_correction_at_cells_on_half_levels"):
        del a[name]
    a.update(rbf_vec_coeff_e=RNG.standard_normal((NE, 4)) / 4,
             wgtfac_e=RNG.uniform(0.2, 0.8, (NE, NH)), wgtfacq_e=RNG.uniform(0.2, 0.8, (NE, NLEV)),
             ddxn_z_full=RNG.standard_normal((NE, NLEV)),
             ddxt_z_full=RNG.standard_normal((NE, NLEV)),
             wgtfac_c=RNG.uniform(0.2, 0.8, (NC, NH)))
    base = dict(tangential_wind=RNG.random((NE, NLEV)),
                tangential_wind_on_half_levels=RNG.random((NE, NH)),
                vn_on_half_levels=RNG.random((NE, NH)),
                horizontal_kinetic_energy_at_edges_on_model_levels=RNG.random((NE, NLEV)),
                contravariant_correction_at_edges_on_model_levels=RNG.random((NE, NLEV)),
                contravariant_correction_at_cells_on_half_levels=RNG.random((NC, NH)),
                vertical_wind_advective_tendency=RNG.random((NC, NH)),
                vertical_cfl=RNG.random((NC, NH)),
                normal_wind_advective_tendency=RNG.random((NE, NLEV)))
    got = {n: v.copy() for n, v in base.items()}
    compute_velocity_advection_in_predictor_step(
        **got, **a, scalfac_exdiff=scalfac, cfl_w_limit=cfl, dtime=dtime,
        skip_compute_predictor_vertical_advection=skip, apply_extra_diffusion_on_vn=extra,
        nflatlev=nflatlev, end_index_of_damping_layer=edl,
        start_edge_lateral_boundary_level_5=es5, end_edge_halo_level_2=eh2,
        start_cell_lateral_boundary_level_4=cs, end_cell_halo=ce,
        start_edge_nudging_level_2=es, end_edge_local=ee, vertical_start=0,
        vertical_end=NLEV, offset_provider=TABLES, backend=backend)

    vn = a["vn"]
    vt = nbsum(a["rbf_vec_coeff_e"], vn, "E2C2E")
    hke = 0.5 * (vn * vn + vt * vt)
    vn_ie = np.empty((NE, NH))
    vn_ie[:, :NLEV] = _to_half_levels(a["wgtfac_e"], vn, NLEV)
    q = a["wgtfacq_e"] * vn
    vn_ie[:, NLEV] = q[:, -1] + q[:, -2] + q[:, -3]
    vt_ie = np.array(base["tangential_wind_on_half_levels"])
    if not skip:
        vt_ie[:, :NLEV] = _to_half_levels(a["wgtfac_e"], vt, NLEV)
    concorr_e = vn * a["ddxn_z_full"] + vt * a["ddxt_z_full"]
    corr_mc = nbsum(a["e_bln_c_s"], concorr_e, "C2E")
    corr_half = np.zeros((NC, NH))
    wgt = a["wgtfac_c"]
    corr_half[:, nflatlev + 1:NLEV] = (wgt[:, nflatlev + 1:NLEV] * corr_mc[:, nflatlev + 1:]
                                       + (1.0 - wgt[:, nflatlev + 1:NLEV])
                                       * corr_mc[:, nflatlev:-1])
    inputs = dict(a, tangential_wind=vt, tangential_wind_on_half_levels=vt_ie,
                  vn_on_half_levels=vn_ie, horizontal_kinetic_energy_at_edges_on_model_levels=hke,
                  contravariant_correction_at_cells_on_half_levels=corr_half)
    tend, vcfl, ntend = _corrector_numpy(inputs, scalfac, cfl, dtime, extra, edl, NLEV)
    if skip:
        tend = base["vertical_wind_advective_tendency"]
    want = dict(
        tangential_wind=inside(vt, base["tangential_wind"], es5, eh2, 0, NLEV),
        tangential_wind_on_half_levels=inside(
            vt_ie, base["tangential_wind_on_half_levels"], es5, eh2, 0, NLEV),
        vn_on_half_levels=inside(vn_ie, base["vn_on_half_levels"], es5, eh2, 0, NH),
        horizontal_kinetic_energy_at_edges_on_model_levels=inside(
            hke, base["horizontal_kinetic_energy_at_edges_on_model_levels"], es5, eh2, 0, NLEV),
        contravariant_correction_at_edges_on_model_levels=inside(
            concorr_e, base["contravariant_correction_at_edges_on_model_levels"], es5, eh2,
            nflatlev, NLEV),
        contravariant_correction_at_cells_on_half_levels=inside(
            corr_half, base["contravariant_correction_at_cells_on_half_levels"], cs, ce, 0, NLEV),
        vertical_wind_advective_tendency=inside(
            tend, base["vertical_wind_advective_tendency"], cs, ce, 1, NLEV),
        vertical_cfl=inside(vcfl, base["vertical_cfl"], cs, ce, 0, NLEV),
        normal_wind_advective_tendency=inside(
            ntend, base["normal_wind_advective_tendency"], es, ee, 0, NLEV))
    check(got, want, rtol=1e-10, atol=1e-12)


# ================================================================== rho and theta_v on half levels
#
# icon4py's interpolate_rho_theta_v_to_half_levels_and_compute_pressure_buoyancy_acceleration
# (formerly fused_solve_nonhydro_stencil_1_to_13_corrector).


@gtx.field_operator
def _interpolate_rho_theta_v_to_half_levels_and_compute_pressure_buoyancy_acceleration(
    w: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    next_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    next_theta_v: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    reference_theta_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[ta.wpfloat],
    dtime: ta.wpfloat,
    rhotheta_explicit_weight_parameter: ta.wpfloat,
    rhotheta_implicit_weight_parameter: ta.wpfloat,
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.vpfloat],
]:
    (
        contravariant_correction_at_cells_on_half_levels_wp,
        wgtfac_c_wp,
        reference_theta_at_cells_on_model_levels_wp,
        ddqz_z_half_wp,
    ) = astype(
        (
            contravariant_correction_at_cells_on_half_levels,
            wgtfac_c,
            reference_theta_at_cells_on_model_levels,
            ddqz_z_half,
        ),
        wpfloat,
    )

    back_trajectory_w_at_cells_on_half_levels = (
        -(w - contravariant_correction_at_cells_on_half_levels_wp)
        * dtime
        * wpfloat("0.5")
        / ddqz_z_half_wp
    )

    time_averaged_rho = (
        rhotheta_explicit_weight_parameter * current_rho
        + rhotheta_implicit_weight_parameter * next_rho
    )
    time_averaged_rho_kup = rhotheta_explicit_weight_parameter * current_rho(
        Koff[-1]
    ) + rhotheta_implicit_weight_parameter * next_rho(Koff[-1])

    time_averaged_theta_v = (
        rhotheta_explicit_weight_parameter * current_theta_v
        + rhotheta_implicit_weight_parameter * next_theta_v
    )
    time_averaged_theta_v_kup = rhotheta_explicit_weight_parameter * current_theta_v(
        Koff[-1]
    ) + rhotheta_implicit_weight_parameter * next_theta_v(Koff[-1])

    rho_at_cells_on_half_levels = (
        wgtfac_c_wp * time_averaged_rho
        + (wpfloat("1.0") - wgtfac_c_wp) * time_averaged_rho_kup
        + back_trajectory_w_at_cells_on_half_levels * (time_averaged_rho_kup - time_averaged_rho)
    )

    time_averaged_perturbed_theta_v_kup = (
        time_averaged_theta_v_kup - reference_theta_at_cells_on_model_levels_wp(Koff[-1])
    )
    time_averaged_perturbed_theta_v = (
        time_averaged_theta_v - reference_theta_at_cells_on_model_levels_wp
    )

    time_averaged_perturbed_theta_v_vp, time_averaged_perturbed_theta_v_kup_vp = astype(
        (time_averaged_perturbed_theta_v, time_averaged_perturbed_theta_v_kup), vpfloat
    )
    perturbed_theta_v_at_cells_on_half_levels = (
        wgtfac_c * time_averaged_perturbed_theta_v_vp
        + (vpfloat("1.0") - wgtfac_c) * time_averaged_perturbed_theta_v_kup_vp
    )

    theta_v_at_cells_on_half_levels = (
        wgtfac_c_wp * time_averaged_theta_v
        + (wpfloat("1.0") - wgtfac_c_wp) * time_averaged_theta_v_kup
        + back_trajectory_w_at_cells_on_half_levels
        * (time_averaged_theta_v_kup - time_averaged_theta_v)
    )
    pressure_buoyancy_acceleration_at_cells_on_half_levels = (
        exner_w_explicit_weight_parameter
        * theta_v_at_cells_on_half_levels
        * (
            perturbed_exner_at_cells_on_model_levels(Koff[-1])
            - perturbed_exner_at_cells_on_model_levels
        )
        / astype(ddqz_z_half, wpfloat)
        + astype(
            perturbed_theta_v_at_cells_on_half_levels
            * ddz_of_reference_exner_at_cells_on_half_levels,
            wpfloat,
        )
    )
    return (
        rho_at_cells_on_half_levels,
        perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels,
        astype(pressure_buoyancy_acceleration_at_cells_on_half_levels, vpfloat),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def interpolate_rho_theta_v_to_half_levels_and_compute_pressure_buoyancy_acceleration(
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    w: fa.CellKField[ta.wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    next_rho: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    next_theta_v: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    reference_theta_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[ta.wpfloat],
    dtime: ta.wpfloat,
    rhotheta_explicit_weight_parameter: ta.wpfloat,
    rhotheta_implicit_weight_parameter: ta.wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    """Formerly known as fused_solve_nonhydro_stencil_1_to_13_corrector."""
    _interpolate_rho_theta_v_to_half_levels_and_compute_pressure_buoyancy_acceleration(
        w,
        contravariant_correction_at_cells_on_half_levels,
        current_rho,
        next_rho,
        current_theta_v,
        next_theta_v,
        perturbed_exner_at_cells_on_model_levels,
        reference_theta_at_cells_on_model_levels,
        ddz_of_reference_exner_at_cells_on_half_levels,
        ddqz_z_half,
        wgtfac_c,
        exner_w_explicit_weight_parameter,
        dtime,
        rhotheta_explicit_weight_parameter,
        rhotheta_implicit_weight_parameter,
        out=(
            rho_at_cells_on_half_levels,
            perturbed_theta_v_at_cells_on_half_levels,
            theta_v_at_cells_on_half_levels,
            pressure_buoyancy_acceleration_at_cells_on_half_levels,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _level_above(x):
    """``x(Koff[-1])``: level k takes level k - 1 (NaN on the first)."""
    out = np.full(x.shape, np.nan)
    out[:, 1:] = x[:, :-1]
    return out


@pytest.mark.parametrize("bounds", [(0, NC, 1, NLEV), (2, NC - 1, 3, NLEV - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_rho_theta_v_on_half_levels_and_pressure_buoyancy(backend, bounds):
    hs, he, vs, ve = bounds
    dtime, wexp, wimp = 12.0, 0.4, 0.6
    a = dict(w=RNG.standard_normal((NC, NLEV)),
             contravariant_correction_at_cells_on_half_levels=RNG.normal(0.0, 0.2, (NC, NLEV)),
             current_rho=RNG.uniform(0.5, 1.2, (NC, NLEV)),
             next_rho=RNG.uniform(0.5, 1.2, (NC, NLEV)),
             current_theta_v=RNG.uniform(280.0, 320.0, (NC, NLEV)),
             next_theta_v=RNG.uniform(280.0, 320.0, (NC, NLEV)),
             perturbed_exner_at_cells_on_model_levels=RNG.normal(0.0, 1e-3, (NC, NLEV)),
             reference_theta_at_cells_on_model_levels=RNG.uniform(280.0, 320.0, (NC, NLEV)),
             ddz_of_reference_exner_at_cells_on_half_levels=RNG.normal(0.0, 1e-4, (NC, NLEV)),
             ddqz_z_half=RNG.uniform(20.0, 200.0, (NC, NLEV)),
             wgtfac_c=RNG.uniform(0.3, 0.7, (NC, NLEV)),
             exner_w_explicit_weight_parameter=RNG.uniform(0.2, 0.5, NC))
    base = dict(rho_at_cells_on_half_levels=RNG.random((NC, NLEV)),
                perturbed_theta_v_at_cells_on_half_levels=RNG.random((NC, NLEV)),
                theta_v_at_cells_on_half_levels=RNG.random((NC, NLEV)),
                pressure_buoyancy_acceleration_at_cells_on_half_levels=RNG.random((NC, NLEV)))
    got = {n: v.copy() for n, v in base.items()}
    interpolate_rho_theta_v_to_half_levels_and_compute_pressure_buoyancy_acceleration(
        **got, **a, dtime=dtime, rhotheta_explicit_weight_parameter=wexp,
        rhotheta_implicit_weight_parameter=wimp, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    g = types.SimpleNamespace(**a)
    bt = -(g.w - g.contravariant_correction_at_cells_on_half_levels) * dtime * 0.5 / g.ddqz_z_half
    rho = wexp * g.current_rho + wimp * g.next_rho
    rho_up = _level_above(rho)
    th = wexp * g.current_theta_v + wimp * g.next_theta_v
    th_up = _level_above(th)
    wgt = g.wgtfac_c
    ref = g.reference_theta_at_cells_on_model_levels
    rho_ic = wgt * rho + (1.0 - wgt) * rho_up + bt * (rho_up - rho)
    pth_ic = wgt * (th - ref) + (1.0 - wgt) * (th_up - _level_above(ref))
    th_ic = wgt * th + (1.0 - wgt) * th_up + bt * (th_up - th)
    ex = g.perturbed_exner_at_cells_on_model_levels
    pba = (g.exner_w_explicit_weight_parameter[:, None] * th_ic * (_level_above(ex) - ex)
           / g.ddqz_z_half + pth_ic * g.ddz_of_reference_exner_at_cells_on_half_levels)
    check(got, {
        name: inside(value, base[name], hs, he, vs, ve)
        for name, value in (("rho_at_cells_on_half_levels", rho_ic),
                            ("perturbed_theta_v_at_cells_on_half_levels", pth_ic),
                            ("theta_v_at_cells_on_half_levels", th_ic),
                            ("pressure_buoyancy_acceleration_at_cells_on_half_levels", pba))},
        rtol=1e-11, atol=1e-14)


# ================================================================== Laplacian of a cell field
#
# icon4py's common math: compute_nabla2_on_cell (calling the operator by keyword)
# and nabla2_scalar_2D (positionally), on cells without levels.


@gtx.field_operator
def _compute_nabla2_on_cell(
    psi_c: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
) -> fa.CellField[ta.wpfloat]:
    nabla2_psi_c = neighbor_sum(psi_c(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim)
    return nabla2_psi_c


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_nabla2_on_cell(
    psi_c: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    nabla2_psi_c: fa.CellField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
) -> None:
    _compute_nabla2_on_cell(
        psi_c=psi_c,
        geofac_n2s=geofac_n2s,
        out=nabla2_psi_c,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
        },
    )


@gtx.field_operator
def _nabla2_scalar_2D(
    psi_c: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
) -> fa.CellField[ta.wpfloat]:
    """
    Computes the Laplacian (nabla squared) of a scalar field defined on cell
    centres.
    """
    nabla2_psi_c = neighbor_sum(psi_c(C2E2CO) * geofac_n2s, axis=C2E2CODim)

    return nabla2_psi_c


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def nabla2_scalar_2D(
    psi_c: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
    nabla2_psi_c: fa.CellField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
):
    _nabla2_scalar_2D(
        psi_c,
        geofac_n2s,
        out=nabla2_psi_c,
        domain={
            CellDim: (horizontal_start, horizontal_end),
        },
    )


@pytest.mark.parametrize("bounds", [(0, NC), (1, NC - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla2_of_a_cell_field(backend, bounds):
    hs, he = bounds
    psi_c, geofac_n2s = RNG.standard_normal(NC), RNG.standard_normal((NC, 4))
    base = RNG.random(NC)
    want = inside((geofac_n2s * psi_c[TABLES["C2E2CO"]]).sum(1), base, hs, he)
    for prog in (compute_nabla2_on_cell, nabla2_scalar_2D):
        got = base.copy()
        prog(psi_c, geofac_n2s, got, hs, he, offset_provider=TABLES, backend=backend)
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=prog.__name__)


# ================================================================== full 3D divergence damping
#
# icon4py's full three-dimensional divergence damping of the nonhydrostatic
# solver, in the older spelling of its stencils (``Field[[CellDim, KDim], …]``,
# ``backend=backend`` on the program decorator, ``C2CE`` strided weights), run
# one after the other as the solver calls them.

backend = None          # icon4py.model.common.settings.backend: GT4Py's embedded execution


@gtx.field_operator
def _compute_divergence_of_flux_of_normal_wind(
    geofac_div: Field[[CEDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    z_flxdiv_vn_wp = neighbor_sum(geofac_div(C2CE) * vn(C2E), axis=C2EDim)
    return astype(z_flxdiv_vn_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_divergence_of_flux_of_normal_wind(
    geofac_div: Field[[CEDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    z_flxdiv_vn: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_divergence_of_flux_of_normal_wind(
        geofac_div,
        vn,
        out=z_flxdiv_vn,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _add_dwdz_to_divergence_of_flux_of_normal_wind(
    z_dwdz_dd: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_vn: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    return z_dwdz_dd + z_flxdiv_vn


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def add_dwdz_to_divergence_of_flux_of_normal_wind(
    z_dwdz_dd: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_vn: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _add_dwdz_to_divergence_of_flux_of_normal_wind(
        z_dwdz_dd,
        z_flxdiv_vn,
        out=z_flxdiv_vn_and_w,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_full3d_graddiv_normal(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    z_flxdiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
) -> Field[[EdgeDim, KDim], vpfloat]:
    z_graddiv_normal_wp = inv_dual_edge_length * astype(
        z_flxdiv_vn_and_w(E2C[1]) - z_flxdiv_vn_and_w(E2C[0]), wpfloat
    )

    return astype(z_graddiv_normal_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_full3d_graddiv_normal(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    z_flxdiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
    z_graddiv_normal: Field[[EdgeDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_full3d_graddiv_normal(
        inv_dual_edge_length,
        z_flxdiv_vn_and_w,
        out=z_graddiv_normal,
        domain={
            EdgeDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_full3d_graddiv_vertical(
    ddqz_z_half: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    z_graddiv_vertical = (z_flxdiv_vn_and_w(Koff[-1]) - z_flxdiv_vn_and_w) / ddqz_z_half
    return z_graddiv_vertical


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_full3d_graddiv_vertical(
    ddqz_z_half: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
    z_graddiv_vertical: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_full3d_graddiv_vertical(
        ddqz_z_half,
        z_flxdiv_vn_and_w,
        out=z_graddiv_vertical,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_divergence_of_flux_of_full3d_graddiv(
    geofac_div: Field[[CEDim], wpfloat],
    z_graddiv_normal: Field[[EdgeDim, KDim], wpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    z_flxdiv_graddiv_vn_wp = neighbor_sum(geofac_div(C2CE) * z_graddiv_normal(C2E), axis=C2EDim)
    return astype(z_flxdiv_graddiv_vn_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_divergence_of_flux_of_full3d_graddiv(
    geofac_div: Field[[CEDim], wpfloat],
    z_graddiv_normal: Field[[EdgeDim, KDim], vpfloat],
    z_flxdiv_graddiv_vn: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_divergence_of_flux_of_full3d_graddiv(
        geofac_div,
        z_graddiv_normal,
        out=z_flxdiv_graddiv_vn,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_dgraddiv_dz_for_full3d_divergence_damping(
    inv_ddqz_z_full: Field[[CellDim, KDim], vpfloat],
    z_dgraddiv_vertical: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    z_dgraddiv_dz = inv_ddqz_z_full * (z_dgraddiv_vertical - z_dgraddiv_vertical(Koff[1]))
    return z_dgraddiv_dz


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_dgraddiv_dz_for_full3d_divergence_damping(
    inv_ddqz_z_full: Field[[CellDim, KDim], vpfloat],
    z_dgraddiv_vertical: Field[[CellDim, KDim], vpfloat],
    z_dgraddiv_dz: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_dgraddiv_dz_for_full3d_divergence_damping(
        inv_ddqz_z_full,
        z_dgraddiv_vertical,
        out=z_dgraddiv_dz,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _add_dgraddiv_dz_to_full3d_divergence_flux_of_graddiv(
    z_dgraddiv_dz: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_graddiv_vn: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    return z_dgraddiv_dz + z_flxdiv_graddiv_vn


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def add_dgraddiv_dz_to_full3d_divergence_flux_of_graddiv(
    z_dgraddiv_dz: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_graddiv_vn: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_graddiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _add_dgraddiv_dz_to_full3d_divergence_flux_of_graddiv(
        z_dgraddiv_dz,
        z_flxdiv_graddiv_vn,
        out=z_flxdiv_graddiv_vn_and_w,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_full3d_graddiv2_normal(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    z_flxdiv_graddiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
) -> Field[[EdgeDim, KDim], vpfloat]:
    z_graddiv2_normal_wp = inv_dual_edge_length * astype(
        z_flxdiv_graddiv_vn_and_w(E2C[1]) - z_flxdiv_graddiv_vn_and_w(E2C[0]), wpfloat
    )

    return astype(z_graddiv2_normal_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_full3d_graddiv2_normal(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    z_flxdiv_graddiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
    z_graddiv2_normal: Field[[EdgeDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_full3d_graddiv2_normal(
        inv_dual_edge_length,
        z_flxdiv_graddiv_vn_and_w,
        out=z_graddiv2_normal,
        domain={
            EdgeDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_full3d_graddiv2_vertical(
    ddqz_z_half: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_graddiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    z_graddiv2_vertical = (
        z_flxdiv_graddiv_vn_and_w(Koff[-1]) - z_flxdiv_graddiv_vn_and_w
    ) / ddqz_z_half
    return z_graddiv2_vertical


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_full3d_graddiv2_vertical(
    ddqz_z_half: Field[[CellDim, KDim], vpfloat],
    z_flxdiv_graddiv_vn_and_w: Field[[CellDim, KDim], vpfloat],
    z_graddiv2_vertical: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_full3d_graddiv2_vertical(
        ddqz_z_half,
        z_flxdiv_graddiv_vn_and_w,
        out=z_graddiv2_vertical,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _apply_4th_order_3d_divergence_damping_to_vn(
    scal_divdamp: Field[[KDim], wpfloat],
    z_graddiv2_normal: Field[[EdgeDim, KDim], vpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
) -> Field[[EdgeDim, KDim], wpfloat]:
    """Formelry known as _mo_solve_nonhydro_4th_order_divdamp."""
    z_graddiv2_normal_wp = astype(z_graddiv2_normal, wpfloat)
    scal_divdamp = broadcast(scal_divdamp, (EdgeDim, KDim))
    vn_wp = vn + (scal_divdamp * z_graddiv2_normal_wp)
    return vn_wp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def apply_4th_order_3d_divergence_damping_to_vn(
    scal_divdamp: Field[[KDim], wpfloat],
    z_graddiv2_normal: Field[[EdgeDim, KDim], vpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _apply_4th_order_3d_divergence_damping_to_vn(
        scal_divdamp,
        z_graddiv2_normal,
        vn,
        out=vn,
        domain={
            EdgeDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _apply_4th_order_3d_divergence_damping_to_w(
    scal_divdamp_half: Field[[KDim], wpfloat],
    z_graddiv2_vertical: Field[[CellDim, KDim], vpfloat],
    w: Field[[CellDim, KDim], wpfloat],
) -> Field[[CellDim, KDim], wpfloat]:
    """Formelry known as _mo_solve_nonhydro_4th_order_divdamp."""
    z_graddiv2_vertical_wp = astype(z_graddiv2_vertical, wpfloat)
    scal_divdamp_half = broadcast(scal_divdamp_half, (CellDim, KDim))
    w_wp = w + (scal_divdamp_half * z_graddiv2_vertical_wp)
    return w_wp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def apply_4th_order_3d_divergence_damping_to_w(
    scal_divdamp_half: Field[[KDim], wpfloat],
    z_graddiv2_vertical: Field[[CellDim, KDim], vpfloat],
    w: Field[[CellDim, KDim], wpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _apply_4th_order_3d_divergence_damping_to_w(
        scal_divdamp_half,
        z_graddiv2_vertical,
        w,
        out=w,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


def _cells_from_edges(geofac_div, x):
    return np.einsum("cn,cnk->ck", geofac_div.reshape(NC, 3), x[TABLES["C2E"]])


def _edge_gradient(inv_dual_edge_length, x):
    e2c = TABLES["E2C"]
    return inv_dual_edge_length[:, None] * (x[e2c[:, 1]] - x[e2c[:, 0]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_full3d_divergence_damping(backend):
    n = NLEV
    geofac_div, inv_dual = RNG.standard_normal(NC * 3), RNG.uniform(0.5, 2.0, NE)
    vn, w = RNG.standard_normal((NE, n)), RNG.standard_normal((NC, n))
    z_dwdz_dd, ddqz_z_half = RNG.standard_normal((NC, n)), RNG.uniform(20.0, 200.0, (NC, n))
    inv_ddqz_z_full = RNG.uniform(0.005, 0.05, (NC, n))
    scal_divdamp, scal_divdamp_half = RNG.uniform(0.0, 1.0, n), RNG.uniform(0.0, 1.0, n)
    z = {name: RNG.random(shape) for name, shape in (
        ("z_flxdiv_vn", (NC, n)), ("z_flxdiv_vn_and_w", (NC, n)), ("z_graddiv_normal", (NE, n)),
        ("z_graddiv_vertical", (NC, n)), ("z_flxdiv_graddiv_vn", (NC, n)),
        ("z_dgraddiv_dz", (NC, n)), ("z_flxdiv_graddiv_vn_and_w", (NC, n)),
        ("z_graddiv2_normal", (NE, n)), ("z_graddiv2_vertical", (NC, n)))}
    want = {name: v.copy() for name, v in z.items()}
    want.update(vn=vn.copy(), w=w.copy())
    got = {name: v.copy() for name, v in want.items()}
    run = dict(offset_provider=TABLES, backend=backend)

    compute_divergence_of_flux_of_normal_wind(geofac_div, got["vn"], got["z_flxdiv_vn"],
                                              0, NC, 0, n, **run)
    add_dwdz_to_divergence_of_flux_of_normal_wind(z_dwdz_dd, got["z_flxdiv_vn"],
                                                  got["z_flxdiv_vn_and_w"], 0, NC, 0, n, **run)
    compute_full3d_graddiv_normal(inv_dual, got["z_flxdiv_vn_and_w"], got["z_graddiv_normal"],
                                  1, NE, 0, n, **run)
    compute_full3d_graddiv_vertical(ddqz_z_half, got["z_flxdiv_vn_and_w"],
                                    got["z_graddiv_vertical"], 0, NC, 1, n, **run)
    compute_divergence_of_flux_of_full3d_graddiv(geofac_div, got["z_graddiv_normal"],
                                                 got["z_flxdiv_graddiv_vn"], 0, NC, 0, n, **run)
    compute_dgraddiv_dz_for_full3d_divergence_damping(
        inv_ddqz_z_full, got["z_graddiv_vertical"], got["z_dgraddiv_dz"], 0, NC, 1, n - 1, **run)
    add_dgraddiv_dz_to_full3d_divergence_flux_of_graddiv(
        got["z_dgraddiv_dz"], got["z_flxdiv_graddiv_vn"], got["z_flxdiv_graddiv_vn_and_w"],
        0, NC, 1, n - 1, **run)
    compute_full3d_graddiv2_normal(inv_dual, got["z_flxdiv_graddiv_vn_and_w"],
                                   got["z_graddiv2_normal"], 2, NE - 1, 1, n - 1, **run)
    compute_full3d_graddiv2_vertical(ddqz_z_half, got["z_flxdiv_graddiv_vn_and_w"],
                                     got["z_graddiv2_vertical"], 1, NC, 2, n - 1, **run)
    apply_4th_order_3d_divergence_damping_to_vn(scal_divdamp, got["z_graddiv2_normal"],
                                                got["vn"], 2, NE - 1, 1, n - 1, **run)
    apply_4th_order_3d_divergence_damping_to_w(scal_divdamp_half, got["z_graddiv2_vertical"],
                                               got["w"], 1, NC, 2, n - 1, **run)

    def vertical_difference(x, step):     # (x(Koff[-1]) - x) or (x - x(Koff[1])), NaN outside
        out = np.full(x.shape, np.nan)
        if step < 0:
            out[:, 1:] = x[:, :-1] - x[:, 1:]
        else:
            out[:, :-1] = x[:, :-1] - x[:, 1:]
        return out

    k = want
    k["z_flxdiv_vn"] = _cells_from_edges(geofac_div, vn)
    k["z_flxdiv_vn_and_w"] = z_dwdz_dd + k["z_flxdiv_vn"]
    k["z_graddiv_normal"] = inside(_edge_gradient(inv_dual, k["z_flxdiv_vn_and_w"]),
                                   k["z_graddiv_normal"], 1, NE)
    k["z_graddiv_vertical"] = inside(
        vertical_difference(k["z_flxdiv_vn_and_w"], -1) / ddqz_z_half,
        k["z_graddiv_vertical"], 0, NC, 1, n)
    k["z_flxdiv_graddiv_vn"] = _cells_from_edges(geofac_div, k["z_graddiv_normal"])
    k["z_dgraddiv_dz"] = inside(inv_ddqz_z_full * vertical_difference(k["z_graddiv_vertical"], 1),
                                k["z_dgraddiv_dz"], 0, NC, 1, n - 1)
    k["z_flxdiv_graddiv_vn_and_w"] = inside(k["z_dgraddiv_dz"] + k["z_flxdiv_graddiv_vn"],
                                            k["z_flxdiv_graddiv_vn_and_w"], 0, NC, 1, n - 1)
    k["z_graddiv2_normal"] = inside(_edge_gradient(inv_dual, k["z_flxdiv_graddiv_vn_and_w"]),
                                    k["z_graddiv2_normal"], 2, NE - 1, 1, n - 1)
    k["z_graddiv2_vertical"] = inside(
        vertical_difference(k["z_flxdiv_graddiv_vn_and_w"], -1) / ddqz_z_half,
        k["z_graddiv2_vertical"], 1, NC, 2, n - 1)
    k["vn"] = inside(vn + scal_divdamp * k["z_graddiv2_normal"], vn, 2, NE - 1, 1, n - 1)
    k["w"] = inside(w + scal_divdamp_half * k["z_graddiv2_vertical"], w, 1, NC, 2, n - 1)
    check(got, k, rtol=1e-11, atol=1e-13)


# ================================================================== divergence damping, more
#
# More of the older stencils of the solver and the velocity advection: the
# extra diffusion of vn near the CFL limit under a level mask
# (``levelmask | levelmask(Koff[1])``, two fields zeroed by a called operator),
# the fourth-order damping scaled by the squared edge area (``**2``), the
# second-order divergence at vertices over ``V2C2E`` (twelve edges) and both 3D
# damping updates in one program.

V2C2EDim = Dimension("V2C2E", DimensionKind.LOCAL)
V2C2E = FieldOffset("V2C2E", source=EdgeDim, target=(VertexDim, V2C2EDim))
TABLES["V2C2E"] = _distinct(NV, NE, 12)


@gtx.field_operator
def _set_two_edge_kdim_fields_to_zero_wp() -> tuple[
    Field[[EdgeDim, KDim], wpfloat], Field[[EdgeDim, KDim], wpfloat]
]:
    return broadcast(wpfloat("0.0"), (EdgeDim, KDim)), broadcast(wpfloat("0.0"), (EdgeDim, KDim))


@gtx.field_operator
def _add_extra_diffusion_for_wn_approaching_cfl(
    levelmask: Field[[KDim], bool],
    c_lin_e: Field[[EdgeDim, E2CDim], wpfloat],
    z_w_con_c_full: Field[[CellDim, KDim], vpfloat],
    ddqz_z_full_e: Field[[EdgeDim, KDim], vpfloat],
    area_edge: Field[[EdgeDim], wpfloat],
    tangent_orientation: Field[[EdgeDim], wpfloat],
    inv_primal_edge_length: Field[[EdgeDim], wpfloat],
    zeta: Field[[VertexDim, KDim], vpfloat],
    geofac_grdiv: Field[[EdgeDim, E2C2EODim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    ddt_vn_apc: Field[[EdgeDim, KDim], vpfloat],
    cfl_w_limit: vpfloat,
    scalfac_exdiff: wpfloat,
    dtime: wpfloat,
) -> Field[[EdgeDim, KDim], vpfloat]:
    """Formerly known as _mo_velocity_advection_stencil_20."""
    z_w_con_c_full_wp, ddqz_z_full_e_wp, ddt_vn_apc_wp, cfl_w_limit_wp = astype(
        (z_w_con_c_full, ddqz_z_full_e, ddt_vn_apc, cfl_w_limit), wpfloat
    )

    w_con_e, difcoef = _set_two_edge_kdim_fields_to_zero_wp()

    w_con_e = where(
        levelmask | levelmask(Koff[1]),
        neighbor_sum(c_lin_e * z_w_con_c_full_wp(E2C), axis=E2CDim),
        w_con_e,
    )
    difcoef = where(
        (levelmask | levelmask(Koff[1]))
        & (abs(w_con_e) > astype(cfl_w_limit * ddqz_z_full_e, wpfloat)),
        scalfac_exdiff
        * minimum(
            wpfloat("0.85") - cfl_w_limit_wp * dtime,
            abs(w_con_e) * dtime / ddqz_z_full_e_wp - cfl_w_limit_wp * dtime,
        ),
        difcoef,
    )
    ddt_vn_apc_wp = where(
        (levelmask | levelmask(Koff[1]))
        & (abs(w_con_e) > astype(cfl_w_limit * ddqz_z_full_e, wpfloat)),
        ddt_vn_apc_wp
        + difcoef
        * area_edge
        * (
            neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim)
            + tangent_orientation
            * inv_primal_edge_length
            * astype(zeta(E2V[1]) - zeta(E2V[0]), wpfloat)
        ),
        ddt_vn_apc_wp,
    )
    return astype(ddt_vn_apc_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def add_extra_diffusion_for_wn_approaching_cfl(
    levelmask: Field[[KDim], bool],
    c_lin_e: Field[[EdgeDim, E2CDim], wpfloat],
    z_w_con_c_full: Field[[CellDim, KDim], vpfloat],
    ddqz_z_full_e: Field[[EdgeDim, KDim], vpfloat],
    area_edge: Field[[EdgeDim], wpfloat],
    tangent_orientation: Field[[EdgeDim], wpfloat],
    inv_primal_edge_length: Field[[EdgeDim], wpfloat],
    zeta: Field[[VertexDim, KDim], vpfloat],
    geofac_grdiv: Field[[EdgeDim, E2C2EODim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    ddt_vn_apc: Field[[EdgeDim, KDim], vpfloat],
    cfl_w_limit: vpfloat,
    scalfac_exdiff: wpfloat,
    dtime: wpfloat,
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _add_extra_diffusion_for_wn_approaching_cfl(
        levelmask,
        c_lin_e,
        z_w_con_c_full,
        ddqz_z_full_e,
        area_edge,
        tangent_orientation,
        inv_primal_edge_length,
        zeta,
        geofac_grdiv,
        vn,
        ddt_vn_apc,
        cfl_w_limit,
        scalfac_exdiff,
        dtime,
        out=ddt_vn_apc,
        domain={
            EdgeDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _apply_4th_order_divergence_damping_nonmeancell(
    scal_divdamp: Field[[KDim], wpfloat],
    z_graddiv2_vn: Field[[EdgeDim, KDim], vpfloat],
    edge_areas: Field[[EdgeDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
) -> Field[[EdgeDim, KDim], wpfloat]:
    """Formelry known as _mo_solve_nonhydro_4th_order_divdamp."""
    z_graddiv2_vn_wp = astype(z_graddiv2_vn, wpfloat)
    scal_divdamp = broadcast(scal_divdamp, (EdgeDim, KDim))
    edge_areas = broadcast(edge_areas, (EdgeDim, KDim))
    vn_wp = vn + (scal_divdamp * z_graddiv2_vn_wp * edge_areas**2)
    return vn_wp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def apply_4th_order_divergence_damping_nonmeancell(
    scal_divdamp: Field[[KDim], wpfloat],
    z_graddiv2_vn: Field[[EdgeDim, KDim], vpfloat],
    edge_areas: Field[[EdgeDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _apply_4th_order_divergence_damping_nonmeancell(
        scal_divdamp,
        z_graddiv2_vn,
        edge_areas,
        vn,
        out=vn,
        domain={
            EdgeDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_2nd_order_divergence_of_flux_of_normal_wind(
    geofac_2order_div: Field[[VertexDim, V2C2EDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
) -> Field[[VertexDim, KDim], vpfloat]:
    z_flxdiv2order_vn_vertex_wp = neighbor_sum(geofac_2order_div * vn(V2C2E), axis=V2C2EDim)
    return astype(z_flxdiv2order_vn_vertex_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_2nd_order_divergence_of_flux_of_normal_wind(
    geofac_2order_div: Field[[VertexDim, V2C2EDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    z_flxdiv2order_vn_vertex: Field[[VertexDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_2nd_order_divergence_of_flux_of_normal_wind(
        geofac_2order_div,
        vn,
        out=z_flxdiv2order_vn_vertex,
        domain={
            VertexDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_extra_diffusion_of_vn_and_damping_variants(backend):
    n, es, ee, vs, ve = NLEV, 1, NE - 1, 0, NLEV - 1
    scalfac, cfl, dtime = 0.15, 0.065, 10.0
    levelmask = np.zeros(n, dtype=bool)
    levelmask[[3, 4, 7]] = True
    a = dict(levelmask=levelmask, c_lin_e=RNG.uniform(0.3, 0.7, (NE, 2)),
             z_w_con_c_full=RNG.normal(0.0, 3.0, (NC, n)),
             ddqz_z_full_e=RNG.uniform(2.0, 20.0, (NE, n)), area_edge=RNG.uniform(0.5, 2.0, NE),
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
             inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE), zeta=RNG.standard_normal((NV, n)),
             geofac_grdiv=RNG.standard_normal((NE, 5)), vn=RNG.standard_normal((NE, n)))
    ddt_vn_apc = RNG.standard_normal((NE, n))
    got = ddt_vn_apc.copy()
    add_extra_diffusion_for_wn_approaching_cfl(
        **a, ddt_vn_apc=got, cfl_w_limit=cfl, scalfac_exdiff=scalfac, dtime=dtime,
        horizontal_start=es, horizontal_end=ee, vertical_start=vs, vertical_end=ve,
        offset_provider=TABLES, backend=backend)
    g = types.SimpleNamespace(**a)
    mask = levelmask.copy()
    mask[:-1] |= levelmask[1:]
    w_con_e = nbsum(g.c_lin_e, g.z_w_con_c_full, "E2C")
    near = mask[None, :] & (np.abs(w_con_e) > cfl * g.ddqz_z_full_e)
    dif = scalfac * np.minimum(0.85 - cfl * dtime,
                               np.abs(w_con_e) * dtime / g.ddqz_z_full_e - cfl * dtime)
    e2v = TABLES["E2V"]
    extra = dif * g.area_edge[:, None] * (
        nbsum(g.geofac_grdiv, g.vn, "E2C2EO")
        + (g.tangent_orientation * g.inv_primal_edge_length)[:, None]
        * (g.zeta[e2v[:, 1]] - g.zeta[e2v[:, 0]]))
    assert near[es:ee, vs:ve].any() and not near[es:ee, vs:ve].all()
    np.testing.assert_allclose(
        got, inside(np.where(near, ddt_vn_apc + extra, ddt_vn_apc), ddt_vn_apc, es, ee, vs, ve),
        rtol=1e-11, atol=1e-13)

    scal_divdamp, edge_areas = RNG.uniform(0.0, 1.0, n), RNG.uniform(0.5, 2.0, NE)
    z_graddiv2_vn, vn = RNG.standard_normal((NE, n)), RNG.standard_normal((NE, n))
    got = vn.copy()
    apply_4th_order_divergence_damping_nonmeancell(scal_divdamp, z_graddiv2_vn, edge_areas, got,
                                                   es, ee, 1, n, offset_provider=TABLES,
                                                   backend=backend)
    np.testing.assert_allclose(
        got, inside(vn + scal_divdamp * z_graddiv2_vn * edge_areas[:, None] ** 2, vn, es, ee, 1, n),
        rtol=1e-13)

    geofac_2order_div = RNG.standard_normal((NV, 12))
    base = RNG.random((NV, n))
    got = base.copy()
    compute_2nd_order_divergence_of_flux_of_normal_wind(geofac_2order_div, vn, got, 1, NV, 0, n,
                                                        offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(got, inside(nbsum(geofac_2order_div, vn, "V2C2E"), base, 1, NV),
                               rtol=1e-12)


@gtx.field_operator
def _apply_3d_divergence_damping_to_w(
    scal_divdamp_half: Field[[KDim], wpfloat],
    graddiv_vertical: Field[[CellDim, KDim], vpfloat],
    w: Field[[CellDim, KDim], wpfloat],
) -> Field[[CellDim, KDim], wpfloat]:
    graddiv_vertical_wp = astype(graddiv_vertical, wpfloat)
    scal_divdamp_half = broadcast(scal_divdamp_half, (CellDim, KDim))
    w_wp = w + (scal_divdamp_half * graddiv_vertical_wp)
    return w_wp


@gtx.field_operator
def _apply_3d_divergence_damping_to_vn(
    scal_divdamp: Field[[KDim], wpfloat],
    graddiv_normal: Field[[EdgeDim, KDim], vpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
) -> Field[[EdgeDim, KDim], wpfloat]:
    graddiv_normal_wp = astype(graddiv_normal, wpfloat)
    scal_divdamp = broadcast(scal_divdamp, (EdgeDim, KDim))
    vn_wp = vn + (scal_divdamp * graddiv_normal_wp)
    return vn_wp


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cell_field_written_on_an_edge_domain_is_refused(backend):
    """icon4py's apply_3d_divergence_damping writes ``w`` (cells) on a domain
    keyed by ``EdgeDim``; GT4Py refuses that program, and so does this one, naming
    the field and the dimension."""

    @gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=None)
    def apply_3d_divergence_damping(
        scal_divdamp: Field[[KDim], wpfloat],
        scal_divdamp_half: Field[[KDim], wpfloat],
        graddiv_normal: Field[[EdgeDim, KDim], vpfloat],
        graddiv_vertical: Field[[CellDim, KDim], vpfloat],
        vn: Field[[EdgeDim, KDim], wpfloat],
        w: Field[[CellDim, KDim], wpfloat],
        edge_horizontal_start: int32,
        edge_horizontal_end: int32,
        cell_horizontal_start: int32,
        cell_horizontal_end: int32,
        vertical_start: int32,
        vertical_end: int32,
    ):
        _apply_3d_divergence_damping_to_vn(
            scal_divdamp,
            graddiv_normal,
            vn,
            out=vn,
            domain={
                EdgeDim: (edge_horizontal_start, edge_horizontal_end),
                KDim: (vertical_start, vertical_end),
            },
        )
        _apply_3d_divergence_damping_to_w(
            scal_divdamp_half,
            graddiv_vertical,
            w,
            out=w,
            domain={
                EdgeDim: (cell_horizontal_start, cell_horizontal_end),
                KDim: (vertical_start + 1, vertical_end),
            },
        )

    vn, w = RNG.random((NE, NLEV)), RNG.random((NC, NLEV))
    with pytest.raises(TensorIRError, match=r"domain= keys are dimensions of 'w' .*got the "
                                            r"dimension Edge"):
        apply_3d_divergence_damping(RNG.random(NLEV), RNG.random(NLEV), RNG.random((NE, NLEV)),
                                    RNG.random((NC, NLEV)), vn, w, 0, NE, 0, NC, 0, NLEV,
                                    offset_provider=TABLES, backend=backend)


# ================================================================== end of the solver's step
#
# icon4py's update_mass_flux_weighted (stencil 65), update_theta_v (stencil 68,
# a constant read from a ``Final`` instance of a constants class) and
# set_theta_v_prime_ic_at_lower_boundary (stencil 11 upper, a tuple of a
# ``vpfloat`` and a ``wpfloat`` output at the surface level).


class PhysicsConstants:
    """The constants icon4py's dycore reads (icon4py.model.common.constants)."""

    rd: Final[wpfloat] = 287.04
    cvd: Final[wpfloat] = 1004.64 - 287.04
    cvd_o_rd: Final[wpfloat] = cvd / rd


dycore_consts: Final = PhysicsConstants()


@gtx.field_operator
def _update_mass_flux_weighted(
    rho_ic: fa.CellKField[wpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat],
    w_now: fa.CellKField[wpfloat],
    w_new: fa.CellKField[wpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    mass_flx_ic: fa.CellKField[wpfloat],
    r_nsubsteps: wpfloat,
) -> fa.CellKField[wpfloat]:
    """Formerly known as _mo_solve_nonhydro_stencil_65."""
    w_concorr_c_wp = astype(w_concorr_c, wpfloat)

    mass_flx_ic_wp = mass_flx_ic + (
        r_nsubsteps * rho_ic * (vwind_expl_wgt * w_now + vwind_impl_wgt * w_new - w_concorr_c_wp)
    )
    return mass_flx_ic_wp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def update_mass_flux_weighted(
    rho_ic: fa.CellKField[wpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat],
    w_now: fa.CellKField[wpfloat],
    w_new: fa.CellKField[wpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    mass_flx_ic: fa.CellKField[wpfloat],
    r_nsubsteps: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _update_mass_flux_weighted(
        rho_ic,
        vwind_expl_wgt,
        vwind_impl_wgt,
        w_now,
        w_new,
        w_concorr_c,
        mass_flx_ic,
        r_nsubsteps,
        out=mass_flx_ic,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _update_theta_v(
    mask_prog_halo_c: fa.CellField[bool],
    rho_now: fa.CellKField[wpfloat],
    theta_v_now: fa.CellKField[wpfloat],
    exner_new: fa.CellKField[wpfloat],
    exner_now: fa.CellKField[wpfloat],
    rho_new: fa.CellKField[wpfloat],
    theta_v_new: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    """Formerly known as _mo_solve_nonhydro_stencil_68."""
    theta_v_new_wp = where(
        mask_prog_halo_c,
        rho_now
        * theta_v_now
        * ((exner_new / exner_now - wpfloat("1.0")) * dycore_consts.cvd_o_rd + wpfloat("1.0"))
        / rho_new,
        theta_v_new,
    )
    return theta_v_new_wp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def update_theta_v(
    mask_prog_halo_c: fa.CellField[bool],
    rho_now: fa.CellKField[wpfloat],
    theta_v_now: fa.CellKField[wpfloat],
    exner_new: fa.CellKField[wpfloat],
    exner_now: fa.CellKField[wpfloat],
    rho_new: fa.CellKField[wpfloat],
    theta_v_new: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _update_theta_v(
        mask_prog_halo_c,
        rho_now,
        theta_v_now,
        exner_new,
        exner_now,
        rho_new,
        theta_v_new,
        out=theta_v_new,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _interpolate_to_surface(
    wgtfacq_c: fa.CellKField[vpfloat],
    interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    """Formerly known as _mo_solve_nonhydro_stencil_11_upper's interpolation."""
    interpolation_to_surface = (
        wgtfacq_c(Koff[-1]) * interpolant(Koff[-1])
        + wgtfacq_c(Koff[-2]) * interpolant(Koff[-2])
        + wgtfacq_c(Koff[-3]) * interpolant(Koff[-3])
    )
    return interpolation_to_surface


@gtx.field_operator
def _set_theta_v_prime_ic_at_lower_boundary(
    wgtfacq_c: fa.CellKField[vpfloat],
    z_rth_pr: fa.CellKField[vpfloat],
    theta_ref_ic: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[wpfloat]]:
    """Formerly known as _mo_solve_nonhydro_stencil_11_upper."""
    z_theta_v_pr_ic_vp = _interpolate_to_surface(wgtfacq_c=wgtfacq_c, interpolant=z_rth_pr)
    theta_v_ic_vp = theta_ref_ic + z_theta_v_pr_ic_vp
    return z_theta_v_pr_ic_vp, astype(theta_v_ic_vp, wpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def set_theta_v_prime_ic_at_lower_boundary(
    wgtfacq_c: fa.CellKField[vpfloat],
    z_rth_pr: fa.CellKField[vpfloat],
    theta_ref_ic: fa.CellKField[vpfloat],
    z_theta_v_pr_ic: fa.CellKField[vpfloat],
    theta_v_ic: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _set_theta_v_prime_ic_at_lower_boundary(
        wgtfacq_c,
        z_rth_pr,
        theta_ref_ic,
        out=(z_theta_v_pr_ic, theta_v_ic),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_end_of_the_solver_step(backend):
    n, hs, he = NLEV, 1, NC - 1
    rho_ic, w_now, w_new = RNG.random((NC, n)), RNG.standard_normal((NC, n)), RNG.random((NC, n))
    w_concorr_c, expl, impl = RNG.random((NC, n)), RNG.random(NC), RNG.random(NC)
    mass_flx_ic = RNG.random((NC, n))
    got = mass_flx_ic.copy()
    update_mass_flux_weighted(rho_ic, expl, impl, w_now, w_new, w_concorr_c, got, 0.2, hs, he,
                              1, n, offset_provider=TABLES, backend=backend)
    want = mass_flx_ic + 0.2 * rho_ic * (expl[:, None] * w_now + impl[:, None] * w_new
                                         - w_concorr_c)
    np.testing.assert_allclose(got, inside(want, mass_flx_ic, hs, he, 1, n), rtol=1e-13)

    mask = RNG.random(NC) < 0.6
    rho_now, rho_new = RNG.uniform(0.5, 1.2, (NC, n)), RNG.uniform(0.5, 1.2, (NC, n))
    theta_v_now, theta_v_new = RNG.uniform(280, 320, (NC, n)), RNG.uniform(280, 320, (NC, n))
    exner_now, exner_new = RNG.uniform(0.8, 1.0, (NC, n)), RNG.uniform(0.8, 1.0, (NC, n))
    got = theta_v_new.copy()
    update_theta_v(mask, rho_now, theta_v_now, exner_new, exner_now, rho_new, got, hs, he, 0, n,
                   offset_provider=TABLES, backend=backend)
    cvd_o_rd = (1004.64 - 287.04) / 287.04
    want = np.where(mask[:, None], rho_now * theta_v_now
                    * ((exner_new / exner_now - 1.0) * cvd_o_rd + 1.0) / rho_new, theta_v_new)
    np.testing.assert_allclose(got, inside(want, theta_v_new, hs, he, 0, n), rtol=1e-13)

    nh = n + 1
    wgtfacq_c, z_rth_pr = RNG.random((NC, nh)), RNG.random((NC, nh))
    theta_ref_ic = RNG.uniform(280, 320, (NC, nh))
    base = dict(z_theta_v_pr_ic=RNG.random((NC, nh)), theta_v_ic=RNG.random((NC, nh)))
    got = {k: v.copy() for k, v in base.items()}
    set_theta_v_prime_ic_at_lower_boundary(wgtfacq_c, z_rth_pr, theta_ref_ic,
                                           got["z_theta_v_pr_ic"], got["theta_v_ic"], hs, he,
                                           n, n + 1, offset_provider=TABLES, backend=backend)
    q = wgtfacq_c * z_rth_pr
    surface = np.full((NC, nh), np.nan)
    surface[:, n] = q[:, n - 1] + q[:, n - 2] + q[:, n - 3]
    check(got, dict(z_theta_v_pr_ic=inside(surface, base["z_theta_v_pr_ic"], hs, he, n, nh),
                    theta_v_ic=inside(theta_ref_ic + surface, base["theta_v_ic"], hs, he, n, nh)),
          rtol=1e-13)


# ================================================================== interpolation helpers
#
# icon4py's interpolation to half levels with a caller-supplied surface value
# (``concat_where(dims.KHalfDim < surface_level - 1, …)`` around the staggered
# interpolation, the wp and vp twins), called by a program as its callers do,
# and the older cells-to-vertices interpolation (``import gt4py.next as gt``,
# ``gt.Field[[VertexDim, V2CDim], wpfloat]``).


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def _interpolate_cell_field_to_half_levels_wp(
    wgtfac_c: fa.CellKHalfField[ta.wpfloat],
    interpolant: fa.CellKField[ta.wpfloat],
) -> fa.CellKHalfField[ta.wpfloat]:
    interpolation_to_half_levels_wp = wgtfac_c * interpolant(dims.KHalfDim + 0.5) + (
        wpfloat("1.0") - wgtfac_c
    ) * interpolant(dims.KHalfDim - 0.5)
    return interpolation_to_half_levels_wp


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_with_surface_value_vp(
    wgtfac_c: fa.CellKHalfField[ta.vpfloat],
    interpolant: fa.CellKField[ta.vpfloat],
    surface_value: fa.CellKHalfField[ta.vpfloat],
    surface_level: gtx.int32,
) -> fa.CellKHalfField[ta.vpfloat]:
    """Interior linear interpolation to half levels for ``KDim < surface_level - 1``,
    caller-supplied ``surface_value`` at the surface."""
    return concat_where(
        dims.KHalfDim < surface_level - 1,
        _interpolate_cell_field_to_half_levels_vp(wgtfac_c=wgtfac_c, interpolant=interpolant),
        surface_value,
    )


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_with_surface_value_wp(
    wgtfac_c: fa.CellKHalfField[ta.wpfloat],
    interpolant: fa.CellKField[ta.wpfloat],
    surface_value: fa.CellKHalfField[ta.wpfloat],
    surface_level: gtx.int32,
) -> fa.CellKHalfField[ta.wpfloat]:
    """Interior linear interpolation to half levels for ``KDim < surface_level - 1``,
    caller-supplied ``surface_value`` at the surface."""
    return concat_where(
        dims.KHalfDim < surface_level - 1,
        _interpolate_cell_field_to_half_levels_wp(wgtfac_c=wgtfac_c, interpolant=interpolant),
        surface_value,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def interpolate_two_cell_fields_to_half_levels_with_surface_values(
    wgtfac_c: fa.CellKHalfField[ta.wpfloat],
    theta_v: fa.CellKField[ta.wpfloat],
    exner: fa.CellKField[ta.vpfloat],
    theta_v_at_surface: fa.CellKHalfField[ta.wpfloat],
    exner_at_surface: fa.CellKHalfField[ta.vpfloat],
    theta_v_ic: fa.CellKHalfField[ta.wpfloat],
    exner_ic: fa.CellKHalfField[ta.vpfloat],
    surface_level: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _interpolate_cell_field_to_half_levels_with_surface_value_wp(
        wgtfac_c,
        theta_v,
        theta_v_at_surface,
        surface_level,
        out=theta_v_ic,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _interpolate_cell_field_to_half_levels_with_surface_value_vp(
        wgtfac_c=wgtfac_c,
        interpolant=exner,
        surface_value=exner_at_surface,
        surface_level=surface_level,
        out=exner_ic,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_cells2verts(
    cell_in: gtx.Field[[CellDim, KDim], wpfloat],
    c_int: gtx.Field[[VertexDim, V2CDim], wpfloat],
) -> gtx.Field[[VertexDim, KDim], wpfloat]:
    vert_out = neighbor_sum(c_int * cell_in(V2C), axis=V2CDim)
    return vert_out


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_cells2verts_interpolation(
    cell_in: gtx.Field[[CellDim, KDim], wpfloat],
    c_int: gtx.Field[[VertexDim, V2CDim], wpfloat],
    vert_out: gtx.Field[[VertexDim, KDim], wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_cells2verts(
        cell_in,
        c_int,
        out=vert_out,
        domain={
            VertexDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize(("surface_level", "bounds"), [(NH, (0, NC, 1, NH)),
                                                       (NH - 2, (2, NC, 3, NH - 1))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolation_helpers(backend, surface_level, bounds):
    hs, he, vs, ve = bounds
    wgtfac_c = RNG.uniform(0.2, 0.8, (NC, NH))
    theta_v, exner = RNG.uniform(280, 320, (NC, NLEV)), RNG.uniform(0.8, 1.0, (NC, NLEV))
    surf = dict(theta_v=RNG.random((NC, NH)), exner=RNG.random((NC, NH)))
    base = dict(theta_v_ic=RNG.random((NC, NH)), exner_ic=RNG.random((NC, NH)))
    got = {k: v.copy() for k, v in base.items()}
    interpolate_two_cell_fields_to_half_levels_with_surface_values(
        wgtfac_c, theta_v, exner, surf["theta_v"], surf["exner"], got["theta_v_ic"],
        got["exner_ic"], surface_level, hs, he, vs, ve, offset_provider=TABLES, backend=backend)
    h = np.arange(NH)[None, :]
    want = {}
    for name, x in (("theta_v", theta_v), ("exner", exner)):
        half = np.full((NC, NH), np.nan)
        half[:, 1:NLEV] = wgtfac_c[:, 1:NLEV] * x[:, 1:] + (1.0 - wgtfac_c[:, 1:NLEV]) * x[:, :-1]
        want[f"{name}_ic"] = inside(np.where(h < surface_level - 1, half, surf[name]),
                                    base[f"{name}_ic"], hs, he, vs, ve)
    check(got, want, rtol=1e-13)

    cell_in, c_int = RNG.standard_normal((NC, NLEV)), RNG.random((NV, 6))
    vert = RNG.random((NV, NLEV))
    got_v = vert.copy()
    compute_cells2verts_interpolation(cell_in, c_int, got_v, 1, NV, 0, NLEV,
                                      offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(got_v, inside(nbsum(c_int, cell_in, "V2C"), vert, 1, NV),
                               rtol=1e-13)


# ================================================================== 3D divergence and its gradient
#
# The other spelling of the 3D divergence damping in icon4py's older stencils:
# the divergence of the flux with dw/dz added, then its gradient on edges and
# on levels in one program writing an edge field and a cell field.


@gtx.field_operator
def _compute_divergence_of_flux(
    geofac_div: Field[[CEDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    dwdz: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    divergence_wp = neighbor_sum(geofac_div(C2CE) * vn(C2E), axis=C2EDim)
    divergence_wp = divergence_wp + astype(dwdz, wpfloat)
    return astype(divergence_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_divergence_of_flux(
    geofac_div: Field[[CEDim], wpfloat],
    vn: Field[[EdgeDim, KDim], wpfloat],
    dwdz: Field[[CellDim, KDim], vpfloat],
    divergence: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_divergence_of_flux(
        geofac_div,
        vn,
        dwdz,
        out=divergence,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_graddiv_vertical(
    ddqz_z_half: Field[[CellDim, KDim], vpfloat],
    divergence: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], wpfloat]:
    graddiv_vertical_wp = (divergence(Koff[-1]) - divergence) / astype(ddqz_z_half, wpfloat)
    return astype(graddiv_vertical_wp, vpfloat)


@gtx.field_operator
def _compute_graddiv_normal(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    divergence: Field[[CellDim, KDim], vpfloat],
) -> Field[[EdgeDim, KDim], vpfloat]:
    graddiv_normal_wp = inv_dual_edge_length * astype(
        divergence(E2C[1]) - divergence(E2C[0]), wpfloat
    )
    return astype(graddiv_normal_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED, backend=backend)
def compute_graddiv(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    ddqz_z_half: Field[[CellDim, KDim], vpfloat],
    divergence: Field[[CellDim, KDim], vpfloat],
    graddiv_normal: Field[[EdgeDim, KDim], vpfloat],
    graddiv_vertical: Field[[CellDim, KDim], vpfloat],
    edge_horizontal_start: int32,
    edge_horizontal_end: int32,
    cell_horizontal_start: int32,
    cell_horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_graddiv_normal(
        inv_dual_edge_length,
        divergence,
        out=graddiv_normal,
        domain={
            EdgeDim: (edge_horizontal_start, edge_horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )
    _compute_graddiv_vertical(
        ddqz_z_half,
        divergence,
        out=graddiv_vertical,
        domain={
            CellDim: (cell_horizontal_start, cell_horizontal_end),
            KDim: (vertical_start + 1, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_divergence_of_flux_and_its_gradient(backend):
    n = NLEV
    geofac_div, vn = RNG.standard_normal(NC * 3), RNG.standard_normal((NE, n))
    dwdz = RNG.random((NC, n))
    inv_dual, ddqz_z_half = RNG.uniform(0.5, 2.0, NE), RNG.uniform(20.0, 200.0, (NC, n))
    div0, gn0, gv0 = RNG.random((NC, n)), RNG.random((NE, n)), RNG.random((NC, n))
    div, gn, gv = div0.copy(), gn0.copy(), gv0.copy()
    compute_divergence_of_flux(geofac_div, vn, dwdz, div, 1, NC, 0, n, offset_provider=TABLES,
                               backend=backend)
    compute_graddiv(inv_dual, ddqz_z_half, div, gn, gv, 0, NE - 1, 1, NC - 1, 0, n,
                    offset_provider=TABLES, backend=backend)
    want_div = inside(_cells_from_edges(geofac_div, vn) + dwdz, div0, 1, NC)
    vertical = np.full((NC, n), np.nan)
    vertical[:, 1:] = (want_div[:, :-1] - want_div[:, 1:]) / ddqz_z_half[:, 1:]
    check(dict(divergence=div, graddiv_normal=gn, graddiv_vertical=gv), dict(
        divergence=want_div,
        graddiv_normal=inside(_edge_gradient(inv_dual, want_div), gn0, 0, NE - 1),
        graddiv_vertical=inside(vertical, gv0, 1, NC - 1, 1, n)), rtol=1e-12)
