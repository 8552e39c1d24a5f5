"""An eighth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

First the horizontal tracer advection's flux limiters: the upwind flux
choosing a cell through ``E2C`` by the sign of the normal wind, the positive
definite flux factor from a local coefficient field read as
``geofac_div[C2EDim(i)]``, the monotone flux factors applied with ``minimum``
of neighbour cells, the postprocessing of the antidiffusive fluxes on cells
whose ``int32`` refinement control equals either of two ``int32`` scalars (a
tuple of three, two of them in vpfloat), a ``bool`` edge field from
``where(..., lcounterclock, False)`` with a ``bool`` scalar, the flux averaged
over three substeps, the tangential wind over ``E2C2E`` and the tracer's
tendencies.  Then the vertical tracer advection: the density increments with a
``bool`` scalar broadcast over ``CellDim, KDim`` and ``KField`` metrics, the
semi-monotone parabola limiter (nested ``where`` choosing tuples on an
``int32`` field), the PPM parabola coefficients and the PPM Courant number
(chains of ``bool`` fields from an ``int32`` ``KField`` of level indices
compared with runtime scalars, shifts up to ``Koff[-5]``).  Then the
diffusion of theta and exner: the cold pools' enhanced coefficient
(``max_over`` through ``E2C`` of a cell field built from ``C2E2C`` sums),
the truly horizontal diffusion over steep points in the spelling with sparse
fields on ``CellDim, C2E2CDim, KDim`` (``as_offset`` of one selected by
``[C2E2CDim(i)]``) chosen by a ``bool`` scalar in a conditional expression,
and the turbulence diagnostics over the flattened ``CEDim``.  Then the
interpolation stencils and math operators (RBF reconstructions over ``C2E``
and the nested ``C2E2C2E``, Green-Gauss gradients over ``C2E2CO``, a
Laplacian on a horizontal field alone, finite differences through ``E2C``
and ``E2V``, the Smagorinsky enhancement factor on ``KDim`` alone called
without ``domain=``); the geometry on the sphere (tuples of three on
horizontal fields, ``arccos``, an operator without a return annotation); and
more of the nonhydro solver (``E2C2EO`` and ``E2C2E`` in one tuple, a
program-level ``if`` on a ``bool`` choosing between two stencils, a region
written as the chained comparison ``nflatlev + 1 <= dims.KDim < nlev``);
last, the flux-form semi-Lagrangian backtrajectory (``int32`` sparse fields
selected by ``[E2CDim(i)]``, ``where`` of two integer literals into an
``int32`` output, eleven outputs of three element types).  Each group is
one program, interpreted and compiled, compared with NumPy written from the
formulas.
"""

from __future__ import annotations

import types
from typing import TypeVar

import numpy as np
import pytest

from icon_numpy import check, inside, shifted
from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    abs,
    arccos,
    as_offset,
    astype,
    broadcast,
    concat_where,
    cos,
    float32,
    float64,
    max_over,
    maximum,
    minimum,
    neighbor_sum,
    sin,
    sqrt,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
CEDim = Dimension("CE")
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
C2E2C2EDim = Dimension("C2E2C2E", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.C2E2CDim, dims.E2C2EDim = E2CDim, C2EDim, C2E2CDim, E2C2EDim
dims.CEDim, dims.C2E2CODim, dims.C2E2C2EDim, dims.E2VDim = CEDim, C2E2CODim, C2E2C2EDim, E2VDim
dims.E2C2EODim = E2C2EODim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
C2E2C2E = FieldOffset("C2E2C2E", source=EdgeDim, target=(CellDim, C2E2C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
E2C2EO = FieldOffset("E2C2EO", source=EdgeDim, target=(EdgeDim, E2C2EODim))
dims.C2E2CO, dims.C2E2C2E, dims.E2V, dims.E2C2EO = C2E2CO, C2E2C2E, E2V, E2C2EO
dims.E2C, dims.C2E, dims.C2E2C, dims.E2C2E, dims.Koff = E2C, C2E, C2E2C, E2C2E, Koff

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.VertexField = Field[Dims[VertexDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 9, 6, 12
RNG = np.random.default_rng(8001)
_TABLE_RNG = np.random.default_rng(8002)
TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "C2E2C": _TABLE_RNG.integers(0, NC, (NC, 3)),
          "E2C2E": _TABLE_RNG.integers(0, NE, (NE, 4)),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None],
                                    _TABLE_RNG.integers(0, NC, (NC, 3))], axis=1),
          "C2E2C2E": _TABLE_RNG.integers(0, NE, (NC, 9)),
          "E2V": _TABLE_RNG.integers(0, NV, (NE, 2)),
          "E2C2EO": np.concatenate([np.arange(NE)[:, None],
                                    _TABLE_RNG.integers(0, NE, (NE, 4))], axis=1),
          "Koff": KDim, "C2CE": None}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(8003).bit_generator.state








def f32(*shape):
    return RNG.random(shape).astype(np.float32)


# ================================================================== horizontal tracer advection
#
# icon4py's advection stencils on edges and cells: upwind fluxes, flux
# limiters and tendencies.


@gtx.field_operator
def _compute_horizontal_tracer_flux_upwind(
    p_cc: fa.CellKField[ta.wpfloat],
    p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    p_vn: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    return where(p_vn > 0.0, p_cc(E2C[0]), p_cc(E2C[1])) * p_mass_flx_e


@gtx.field_operator
def _compute_positive_definite_horizontal_multiplicative_flux_factor(
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    p_cc: fa.CellKField[ta.wpfloat],
    p_rhodz_now: fa.CellKField[ta.wpfloat],
    p_mflx_tracer_h: fa.EdgeKField[ta.wpfloat],
    p_dtime: ta.wpfloat,
    dbl_eps: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    outflow_0 = maximum(0.0, p_mflx_tracer_h(C2E[0]) * geofac_div[C2EDim(0)] * p_dtime)
    outflow_1 = maximum(0.0, p_mflx_tracer_h(C2E[1]) * geofac_div[C2EDim(1)] * p_dtime)
    outflow_2 = maximum(0.0, p_mflx_tracer_h(C2E[2]) * geofac_div[C2EDim(2)] * p_dtime)
    total = outflow_0 + outflow_1 + outflow_2
    return minimum(1.0, (p_cc * p_rhodz_now) / (total + dbl_eps))


@gtx.field_operator
def _apply_monotone_horizontal_multiplicative_flux_factors(
    z_anti: fa.EdgeKField[ta.wpfloat],
    r_m: fa.CellKField[ta.wpfloat],
    r_p: fa.CellKField[ta.wpfloat],
    z_mflx_low: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    r_frac = where(
        z_anti >= 0.0,
        minimum(r_m(E2C[0]), r_p(E2C[1])),
        minimum(r_m(E2C[1]), r_p(E2C[0])),
    )
    return z_mflx_low + minimum(1.0, r_frac) * z_anti


@gtx.field_operator
def _postprocess_antidiffusive_cell_fluxes_and_min_max(
    refin_ctrl: fa.CellField[gtx.int32],
    p_cc: fa.CellKField[ta.wpfloat],
    z_tracer_new_low: fa.CellKField[ta.wpfloat],
    z_tracer_max: fa.CellKField[ta.vpfloat],
    z_tracer_min: fa.CellKField[ta.vpfloat],
    lo_bound: gtx.int32,
    hi_bound: gtx.int32,
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat]]:
    on_boundary = (refin_ctrl == lo_bound) | (refin_ctrl == hi_bound)
    new = where(
        on_boundary, minimum(1.1 * p_cc, maximum(0.9 * p_cc, z_tracer_new_low)), z_tracer_new_low
    )
    new_max = where(on_boundary, astype(maximum(p_cc, new), vpfloat), z_tracer_max)
    new_min = where(on_boundary, astype(minimum(p_cc, new), vpfloat), z_tracer_min)
    return new, new_max, new_min


@gtx.field_operator
def _compute_ffsl_backtrajectory_counterclockwise_indicator(
    p_vn: fa.EdgeKField[ta.wpfloat],
    tangent_orientation: fa.EdgeField[ta.wpfloat],
    lcounterclock: bool,
) -> fa.EdgeKField[bool]:
    return where(p_vn * tangent_orientation >= 0.0, lcounterclock, False)


@gtx.field_operator
def _compute_horizontal_tracer_flux_from_cubic_coefficients(
    p_out_e_hybrid_2: fa.EdgeKField[ta.wpfloat],
    p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    z_dreg_area: fa.EdgeKField[ta.vpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    p_out_e_hybrid_2 = p_mass_flx_e * p_out_e_hybrid_2 / astype(z_dreg_area, wpfloat)
    return p_out_e_hybrid_2


@gtx.field_operator
def _average_horizontal_flux_subcycling_3(
    z_tracer_mflx_1_dsl: fa.EdgeKField[ta.wpfloat],
    z_tracer_mflx_2_dsl: fa.EdgeKField[ta.wpfloat],
    z_tracer_mflx_3_dsl: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    return (z_tracer_mflx_1_dsl + z_tracer_mflx_2_dsl + z_tracer_mflx_3_dsl) / 3.0


@gtx.field_operator
def _compute_edge_tangential(
    p_vn_in: fa.EdgeKField[wpfloat],
    ptr_coeff: Field[[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(p_vn_in(E2C2E) * ptr_coeff, axis=dims.E2C2EDim)


@gtx.field_operator
def _compute_tendency(
    p_tracer_now: fa.CellKField[ta.wpfloat],
    p_tracer_new: fa.CellKField[ta.wpfloat],
    p_dtime: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    return (p_tracer_new - p_tracer_now) / p_dtime


@gtx.field_operator
def _apply_interpolated_tracer_time_tendency(
    p_tracer_now: fa.CellKField[wpfloat],
    p_grf_tend_tracer: fa.CellKField[wpfloat],
    p_dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    return maximum(wpfloat(0.0), p_tracer_now + p_dtime * p_grf_tend_tracer)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def horizontal_tracer_advection(
    p_cc: fa.CellKField[wpfloat],
    p_mass_flx_e: fa.EdgeKField[wpfloat],
    p_vn: fa.EdgeKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    p_rhodz_now: fa.CellKField[wpfloat],
    z_anti: fa.EdgeKField[wpfloat],
    r_p: fa.CellKField[wpfloat],
    z_mflx_low: fa.EdgeKField[wpfloat],
    refin_ctrl: fa.CellField[gtx.int32],
    z_tracer_new_low: fa.CellKField[wpfloat],
    z_tracer_max: fa.CellKField[vpfloat],
    z_tracer_min: fa.CellKField[vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    z_dreg_area: fa.EdgeKField[vpfloat],
    z_tracer_mflx_1_dsl: fa.EdgeKField[wpfloat],
    z_tracer_mflx_2_dsl: fa.EdgeKField[wpfloat],
    z_tracer_mflx_3_dsl: fa.EdgeKField[wpfloat],
    ptr_coeff: Field[[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    p_tracer_new: fa.CellKField[wpfloat],
    p_grf_tend_tracer: fa.CellKField[wpfloat],
    p_out_e: fa.EdgeKField[wpfloat],
    r_m: fa.CellKField[wpfloat],
    p_mflx_tracer_h: fa.EdgeKField[wpfloat],
    z_tracer_new_out: fa.CellKField[wpfloat],
    z_tracer_max_out: fa.CellKField[vpfloat],
    z_tracer_min_out: fa.CellKField[vpfloat],
    lvn_sys_pos: fa.EdgeKField[bool],
    p_out_e_hybrid_2: fa.EdgeKField[wpfloat],
    p_out_e_avg: fa.EdgeKField[wpfloat],
    p_vt_out: fa.EdgeKField[wpfloat],
    opt_ddt_tracer_adv: fa.CellKField[wpfloat],
    p_tracer_grf: fa.CellKField[wpfloat],
    p_dtime: wpfloat,
    dbl_eps: wpfloat,
    lo_bound: gtx.int32,
    hi_bound: gtx.int32,
    lcounterclock: bool,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_horizontal_tracer_flux_upwind(
        p_cc, p_mass_flx_e, p_vn, out=(p_out_e),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_positive_definite_horizontal_multiplicative_flux_factor(
        geofac_div, p_cc, p_rhodz_now, p_out_e, p_dtime, dbl_eps, out=r_m,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_monotone_horizontal_multiplicative_flux_factors(
        z_anti, r_m, r_p, z_mflx_low, out=p_mflx_tracer_h,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _postprocess_antidiffusive_cell_fluxes_and_min_max(
        refin_ctrl, p_cc, z_tracer_new_low, z_tracer_max, z_tracer_min, lo_bound, hi_bound,
        out=(z_tracer_new_out, z_tracer_max_out, z_tracer_min_out),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_ffsl_backtrajectory_counterclockwise_indicator(
        p_vn, tangent_orientation, lcounterclock, out=lvn_sys_pos,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_horizontal_tracer_flux_from_cubic_coefficients(
        p_out_e_hybrid_2, p_mass_flx_e, z_dreg_area, out=p_out_e_hybrid_2,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _average_horizontal_flux_subcycling_3(
        z_tracer_mflx_1_dsl, z_tracer_mflx_2_dsl, z_tracer_mflx_3_dsl, out=p_out_e_avg,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_edge_tangential(
        p_vn, ptr_coeff, out=p_vt_out,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_tendency(
        p_cc, p_tracer_new, p_dtime, out=opt_ddt_tracer_adv,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_interpolated_tracer_time_tendency(
        p_tracer_now=p_cc, p_grf_tend_tracer=p_grf_tend_tracer, p_dtime=p_dtime,
        out=p_tracer_grf,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lcounterclock", [True, False])
def test_horizontal_tracer_advection(backend, lcounterclock):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 0, NE - 2, 2, NLEV - 1
    dtime, eps = 5.0, 1e-12
    e2c, c2e, e2c2e = TABLES["E2C"], TABLES["C2E"], TABLES["E2C2E"]
    a = dict(
        p_cc=RNG.uniform(0.5, 1.5, (NC, NLEV)), p_mass_flx_e=RNG.standard_normal((NE, NLEV)),
        p_vn=RNG.standard_normal((NE, NLEV)), geofac_div=RNG.standard_normal((NC, 3)),
        p_rhodz_now=RNG.uniform(1.0, 5.0, (NC, NLEV)), z_anti=RNG.standard_normal((NE, NLEV)),
        r_p=RNG.uniform(0.0, 1.5, (NC, NLEV)), z_mflx_low=RNG.standard_normal((NE, NLEV)),
        refin_ctrl=RNG.integers(-2, 5, NC).astype(np.int32),
        z_tracer_new_low=RNG.uniform(0.3, 1.8, (NC, NLEV)), z_tracer_max=f32(NC, NLEV),
        z_tracer_min=f32(NC, NLEV), tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        z_dreg_area=(f32(NE, NLEV) + np.float32(0.5)),
        z_tracer_mflx_1_dsl=RNG.standard_normal((NE, NLEV)),
        z_tracer_mflx_2_dsl=RNG.standard_normal((NE, NLEV)),
        z_tracer_mflx_3_dsl=RNG.standard_normal((NE, NLEV)),
        ptr_coeff=RNG.standard_normal((NE, 4)), p_tracer_new=RNG.random((NC, NLEV)),
        p_grf_tend_tracer=RNG.standard_normal((NC, NLEV)) * 0.3)
    base = dict(
        p_out_e=RNG.random((NE, NLEV)), r_m=RNG.random((NC, NLEV)),
        p_mflx_tracer_h=RNG.random((NE, NLEV)), z_tracer_new_out=RNG.random((NC, NLEV)),
        z_tracer_max_out=f32(NC, NLEV), z_tracer_min_out=f32(NC, NLEV),
        lvn_sys_pos=RNG.random((NE, NLEV)) < 0.5, p_out_e_hybrid_2=RNG.random((NE, NLEV)),
        p_out_e_avg=RNG.random((NE, NLEV)), p_vt_out=RNG.random((NE, NLEV)),
        opt_ddt_tracer_adv=RNG.random((NC, NLEV)), p_tracer_grf=RNG.random((NC, NLEV)))
    got = {k: v.copy() for k, v in base.items()}
    horizontal_tracer_advection(
        **a, **got, p_dtime=dtime, dbl_eps=eps, lo_bound=-1, hi_bound=3,
        lcounterclock=lcounterclock, cell_start=cs, cell_end=ce, edge_start=es, edge_end=ee,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    cc = a["p_cc"]
    upwind = np.where(a["p_vn"] > 0.0, cc[e2c[:, 0]], cc[e2c[:, 1]]) * a["p_mass_flx_e"]
    p_out_e = inside(upwind, base["p_out_e"], es, ee, vs, ve)
    outflow = sum(np.maximum(0.0, p_out_e[c2e[:, i]] * a["geofac_div"][:, i:i + 1] * dtime)
                  for i in range(3))
    r_m = inside(np.minimum(1.0, cc * a["p_rhodz_now"] / (outflow + eps)), base["r_m"],
                 cs, ce, vs, ve)
    r_frac = np.where(a["z_anti"] >= 0.0,
                      np.minimum(r_m[e2c[:, 0]], a["r_p"][e2c[:, 1]]),
                      np.minimum(r_m[e2c[:, 1]], a["r_p"][e2c[:, 0]]))
    flux = a["z_mflx_low"] + np.minimum(1.0, r_frac) * a["z_anti"]
    on_bnd = ((a["refin_ctrl"] == -1) | (a["refin_ctrl"] == 3))[:, None]
    low = a["z_tracer_new_low"]
    new = np.where(on_bnd, np.minimum(1.1 * cc, np.maximum(0.9 * cc, low)), low)
    new_max = np.where(on_bnd, np.maximum(cc, new).astype(np.float32), a["z_tracer_max"])
    new_min = np.where(on_bnd, np.minimum(cc, new).astype(np.float32), a["z_tracer_min"])
    indicator = np.where(a["p_vn"] * a["tangent_orientation"][:, None] >= 0.0,
                         lcounterclock, False)
    hybrid = a["p_mass_flx_e"] * base["p_out_e_hybrid_2"] / a["z_dreg_area"].astype(np.float64)
    avg = (a["z_tracer_mflx_1_dsl"] + a["z_tracer_mflx_2_dsl"] + a["z_tracer_mflx_3_dsl"]) / 3.0
    vt = np.einsum("enk,en->ek", a["p_vn"][e2c2e], a["ptr_coeff"])
    check(got, dict(
        p_out_e=p_out_e, r_m=r_m,
        p_mflx_tracer_h=inside(flux, base["p_mflx_tracer_h"], es, ee, vs, ve),
        z_tracer_new_out=inside(new, base["z_tracer_new_out"], cs, ce, vs, ve),
        z_tracer_max_out=inside(new_max, base["z_tracer_max_out"], cs, ce, vs, ve),
        z_tracer_min_out=inside(new_min, base["z_tracer_min_out"], cs, ce, vs, ve),
        p_out_e_hybrid_2=inside(hybrid, base["p_out_e_hybrid_2"], es, ee, vs, ve),
        p_out_e_avg=inside(avg, base["p_out_e_avg"], es, ee, vs, ve),
        p_vt_out=inside(vt, base["p_vt_out"], es, ee, vs, ve),
        opt_ddt_tracer_adv=inside((a["p_tracer_new"] - cc) / dtime, base["opt_ddt_tracer_adv"],
                                  cs, ce, vs, ve),
        p_tracer_grf=inside(np.maximum(0.0, cc + dtime * a["p_grf_tend_tracer"]),
                            base["p_tracer_grf"], cs, ce, vs, ve)), rtol=1e-6)
    np.testing.assert_array_equal(
        got["lvn_sys_pos"], inside(indicator, base["lvn_sys_pos"], es, ee, vs, ve))


# ================================================================== vertical tracer advection
#
# icon4py's vertical advection: density increments, the semi-monotone
# parabola limiter and the PPM Courant number over several levels.


@gtx.field_operator
def _apply_density_increment(
    rhodz_in: fa.CellKField[wpfloat],
    p_mflx_contra_v: fa.CellKField[wpfloat],
    deepatmo_divzl: fa.KField[wpfloat],
    deepatmo_divzu: fa.KField[wpfloat],
    p_dtime: wpfloat,
    even_timestep: bool,
) -> fa.CellKField[wpfloat]:
    even = broadcast(even_timestep, (dims.CellDim, dims.KDim))
    increment = p_dtime * (
        p_mflx_contra_v(Koff[1]) * deepatmo_divzl - p_mflx_contra_v * deepatmo_divzu
    )
    return where(
        even, rhodz_in + increment, maximum(wpfloat(0.1) * rhodz_in, rhodz_in) - increment
    )


@gtx.field_operator
def _apply_horizontal_density_increment(
    p_rhodz_new: fa.CellKField[wpfloat],
    p_mflx_contra_v: fa.CellKField[wpfloat],
    deepatmo_divzl: fa.KField[wpfloat],
    deepatmo_divzu: fa.KField[wpfloat],
    p_dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    return maximum(wpfloat(0.1) * p_rhodz_new, p_rhodz_new) - p_dtime * (
        p_mflx_contra_v(dims.KDim + 1) * deepatmo_divzl - p_mflx_contra_v * deepatmo_divzu
    )


@gtx.field_operator
def _limit_vertical_parabola_semi_monotonically(
    l_limit: fa.CellKField[gtx.int32],
    p_face: fa.CellKField[ta.wpfloat],
    p_cc: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    q_face_up, q_face_low = where(
        l_limit != 0,
        where(
            (p_cc < minimum(p_face, p_face(Koff[1]))),
            (p_cc, p_cc),
            where(
                p_face > p_face(Koff[1]),
                (3.0 * p_cc - 2.0 * p_face(Koff[1]), p_face(Koff[1])),
                (p_face, 3.0 * p_cc - 2.0 * p_face),
            ),
        ),
        (p_face, p_face(Koff[1])),
    )
    return q_face_up, q_face_low


@gtx.field_operator
def _compute_ppm4gpu_parabola_coefficients(
    z_face_up: fa.CellKField[ta.wpfloat],
    z_face_low: fa.CellKField[ta.wpfloat],
    p_cc: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    z_delta_q = 0.5 * (z_face_up - z_face_low)
    z_a1 = p_cc - 0.5 * (z_face_up + z_face_low)
    return z_delta_q, z_a1


@gtx.field_operator
def _compute_courant_number_below(
    p_cellmass_now: fa.CellKField[ta.wpfloat],
    z_mass: fa.CellKField[ta.wpfloat],
    z_cfl: fa.CellKField[ta.wpfloat],
    k: fa.KField[gtx.int32],
    nlev: gtx.int32,
    dbl_eps: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    z_mass_pos = z_mass > 0.0
    crossed_0 = where(z_mass_pos & (k <= nlev - 1), z_mass >= p_cellmass_now, False)
    z_mass = z_mass - where(crossed_0, p_cellmass_now, 0.0)
    crossed_1 = crossed_0 & where(
        z_mass_pos & (k <= nlev - 2), z_mass >= p_cellmass_now(Koff[1]), False
    )
    z_mass = z_mass - where(crossed_1, p_cellmass_now(Koff[1]), 0.0)
    crossed_2 = crossed_1 & where(
        z_mass_pos & (k <= nlev - 3), z_mass >= p_cellmass_now(Koff[2]), False
    )
    z_mass = z_mass - where(crossed_2, p_cellmass_now(Koff[2]), 0.0)
    crossed_3 = crossed_2 & where(
        z_mass_pos & (k <= nlev - 4), z_mass >= p_cellmass_now(Koff[3]), False
    )
    z_mass = z_mass - where(crossed_3, p_cellmass_now(Koff[3]), 0.0)

    z_cfl = z_cfl + where(crossed_0, 1.0, 0.0)
    z_cfl = z_cfl + where(crossed_1, 1.0, 0.0)
    z_cfl = z_cfl + where(crossed_2, 1.0, 0.0)
    z_cfl = z_cfl + where(crossed_3, 1.0, 0.0)

    mass_there = p_cellmass_now
    mass_there = where(crossed_0, p_cellmass_now(Koff[1]), mass_there)
    mass_there = where(crossed_1, p_cellmass_now(Koff[2]), mass_there)
    mass_there = where(crossed_2, p_cellmass_now(Koff[3]), mass_there)
    mass_there = where(crossed_3, p_cellmass_now(Koff[4]), mass_there)

    fraction = where(z_mass_pos, z_mass / mass_there, 0.0)
    return z_cfl + where(fraction < 1.0, fraction, 1.0 - dbl_eps)


@gtx.field_operator
def _compute_courant_number_above(
    p_cellmass_now: fa.CellKField[ta.wpfloat],
    z_mass: fa.CellKField[ta.wpfloat],
    z_cfl: fa.CellKField[ta.wpfloat],
    k: fa.KField[gtx.int32],
    slevp1_ti: gtx.int32,
    dbl_eps: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    z_mass_neg = z_mass <= 0.0
    crossed_0 = where(
        z_mass_neg & (k >= slevp1_ti + 1), abs(z_mass) >= p_cellmass_now(Koff[-1]), False
    )
    z_mass = z_mass + where(crossed_0, p_cellmass_now(Koff[-1]), 0.0)
    crossed_1 = crossed_0 & where(
        z_mass_neg & (k >= slevp1_ti + 2), abs(z_mass) >= p_cellmass_now(Koff[-2]), False
    )
    z_mass = z_mass + where(crossed_1, p_cellmass_now(Koff[-2]), 0.0)
    crossed_2 = crossed_1 & where(
        z_mass_neg & (k >= slevp1_ti + 3), abs(z_mass) >= p_cellmass_now(Koff[-3]), False
    )
    z_mass = z_mass + where(crossed_2, p_cellmass_now(Koff[-3]), 0.0)
    crossed_3 = crossed_2 & where(
        z_mass_neg & (k >= slevp1_ti + 4), abs(z_mass) >= p_cellmass_now(Koff[-4]), False
    )
    z_mass = z_mass + where(crossed_3, p_cellmass_now(Koff[-4]), 0.0)

    mass_there = p_cellmass_now(Koff[-1])
    mass_there = where(crossed_0, p_cellmass_now(Koff[-2]), mass_there)
    mass_there = where(crossed_1, p_cellmass_now(Koff[-3]), mass_there)
    mass_there = where(crossed_2, p_cellmass_now(Koff[-4]), mass_there)
    mass_there = where(crossed_3, p_cellmass_now(Koff[-5]), mass_there)

    z_cfl = z_cfl - where(crossed_0, 1.0, 0.0)
    z_cfl = z_cfl - where(crossed_1, 1.0, 0.0)
    z_cfl = z_cfl - where(crossed_2, 1.0, 0.0)
    z_cfl = z_cfl - where(crossed_3, 1.0, 0.0)

    fraction = where(z_mass_neg, z_mass / mass_there, 0.0)
    return z_cfl + where(abs(fraction) < 1.0, fraction, dbl_eps - 1.0)


@gtx.field_operator
def _compute_ppm4gpu_courant_number(
    p_mflx_contra_v: fa.CellKField[ta.wpfloat],
    p_cellmass_now: fa.CellKField[ta.wpfloat],
    z_cfl: fa.CellKField[ta.wpfloat],
    k: fa.KField[gtx.int32],
    slevp1_ti: gtx.int32,
    nlev: gtx.int32,
    dbl_eps: ta.wpfloat,
    p_dtime: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    z_mass = p_dtime * p_mflx_contra_v
    below = _compute_courant_number_below(
        p_cellmass_now=p_cellmass_now, z_mass=z_mass, z_cfl=z_cfl, k=k, nlev=nlev,
        dbl_eps=dbl_eps,
    )
    above = _compute_courant_number_above(
        p_cellmass_now=p_cellmass_now, z_mass=z_mass, z_cfl=z_cfl, k=k, slevp1_ti=slevp1_ti,
        dbl_eps=dbl_eps,
    )
    return below + above


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def vertical_tracer_advection(
    rhodz_in: fa.CellKField[wpfloat],
    p_mflx_contra_v: fa.CellKField[wpfloat],
    deepatmo_divzl: fa.KField[wpfloat],
    deepatmo_divzu: fa.KField[wpfloat],
    l_limit: fa.CellKField[gtx.int32],
    p_face: fa.CellKField[wpfloat],
    p_cc: fa.CellKField[wpfloat],
    p_cellmass_now: fa.CellKField[wpfloat],
    k: fa.KField[gtx.int32],
    rhodz_out: fa.CellKField[wpfloat],
    rhodz_ast2: fa.CellKField[wpfloat],
    p_face_up: fa.CellKField[wpfloat],
    p_face_low: fa.CellKField[wpfloat],
    z_delta_q: fa.CellKField[wpfloat],
    z_a1: fa.CellKField[wpfloat],
    z_cfl: fa.CellKField[wpfloat],
    p_dtime: wpfloat,
    even_timestep: bool,
    slevp1_ti: gtx.int32,
    nlev: gtx.int32,
    dbl_eps: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
    cfl_start: gtx.int32,
    cfl_end: gtx.int32,
) -> None:
    _apply_density_increment(
        rhodz_in=rhodz_in, p_mflx_contra_v=p_mflx_contra_v, deepatmo_divzl=deepatmo_divzl,
        deepatmo_divzu=deepatmo_divzu, p_dtime=p_dtime, even_timestep=even_timestep,
        out=rhodz_out,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_horizontal_density_increment(
        p_rhodz_new=rhodz_out, p_mflx_contra_v=p_mflx_contra_v, deepatmo_divzl=deepatmo_divzl,
        deepatmo_divzu=deepatmo_divzu, p_dtime=p_dtime, out=rhodz_ast2,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _limit_vertical_parabola_semi_monotonically(
        l_limit, p_face, p_cc, out=(p_face_up, p_face_low),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_ppm4gpu_parabola_coefficients(
        p_face_up, p_face_low, p_cc, out=(z_delta_q, z_a1),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_ppm4gpu_courant_number(
        p_mflx_contra_v=p_mflx_contra_v, p_cellmass_now=p_cellmass_now, z_cfl=z_cfl, k=k,
        slevp1_ti=slevp1_ti, nlev=nlev, dbl_eps=dbl_eps, p_dtime=p_dtime, out=z_cfl,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (cfl_start, cfl_end)})


def courant_number(mass, cellmass, cfl, nlev, slev, eps, ks):
    """The PPM Courant number on levels ``ks``, column by column and level by level."""
    out = np.array(cfl)
    for c in range(mass.shape[0]):
        for k in ks:
            m = mass[c, k]
            below = cfl[c, k]
            if m > 0.0:
                rest, j = m, 0
                while j < 4 and k <= nlev - 1 - j and rest >= cellmass[c, k + j]:
                    rest -= cellmass[c, k + j]
                    j += 1
                frac = rest / cellmass[c, k + j]
                below += j + (frac if frac < 1.0 else 1.0 - eps)
            above = cfl[c, k]
            if m <= 0.0:
                rest, j = m, 0
                while j < 4 and k >= slev + 1 + j and -rest >= cellmass[c, k - 1 - j]:
                    rest += cellmass[c, k - 1 - j]
                    j += 1
                frac = rest / cellmass[c, k - 1 - j]
                above += -j + (frac if -1.0 < frac < 1.0 else eps - 1.0)
            out[c, k] = below + above
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("even_timestep", [True, False])
def test_vertical_tracer_advection(backend, even_timestep):
    hs, he, vs, ve, fs, fe = 1, NC - 1, 1, NLEV - 1, 5, NLEV - 4
    dtime, eps, slev, nlev = 2.0, 1e-10, 2, NLEV - 2
    a = dict(
        rhodz_in=RNG.uniform(-1.0, 3.0, (NC, NLEV)), p_mflx_contra_v=RNG.uniform(-2, 2, (NC, NLEV)),
        deepatmo_divzl=RNG.uniform(0.9, 1.1, NLEV), deepatmo_divzu=RNG.uniform(0.9, 1.1, NLEV),
        l_limit=RNG.integers(0, 3, (NC, NLEV)).astype(np.int32),
        p_face=RNG.standard_normal((NC, NLEV)), p_cc=RNG.standard_normal((NC, NLEV)),
        p_cellmass_now=RNG.uniform(0.5, 1.5, (NC, NLEV)),
        k=np.arange(NLEV, dtype=np.int32))
    base = {n: RNG.random((NC, NLEV)) for n in (
        "rhodz_out", "rhodz_ast2", "p_face_up", "p_face_low", "z_delta_q", "z_a1", "z_cfl")}
    got = {n: v.copy() for n, v in base.items()}
    vertical_tracer_advection(
        **a, **got, p_dtime=dtime, even_timestep=even_timestep, slevp1_ti=slev, nlev=nlev,
        dbl_eps=eps, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, cfl_start=fs, cfl_end=fe, offset_provider=TABLES, backend=backend)

    mflx, rho = a["p_mflx_contra_v"], a["rhodz_in"]
    with np.errstate(invalid="ignore"):
        incr = dtime * (shifted(mflx, 1) * a["deepatmo_divzl"] - mflx * a["deepatmo_divzu"])
        rhodz_out = inside(rho + incr if even_timestep else np.maximum(0.1 * rho, rho) - incr,
                           base["rhodz_out"], hs, he, vs, ve)
        rhodz_ast2 = np.maximum(0.1 * rhodz_out, rhodz_out) - incr
        face, cc, face1 = a["p_face"], a["p_cc"], shifted(a["p_face"], 1)
        limit = a["l_limit"] != 0
        flat = cc < np.minimum(face, face1)
        steep = face > face1
        up = np.where(limit, np.where(flat, cc, np.where(steep, 3 * cc - 2 * face1, face)), face)
        low = np.where(limit, np.where(flat, cc, np.where(steep, face1, 3 * cc - 2 * face)),
                       face1)
    up = inside(up, base["p_face_up"], hs, he, vs, ve)
    low = inside(low, base["p_face_low"], hs, he, vs, ve)
    cfl = courant_number(dtime * mflx, a["p_cellmass_now"], base["z_cfl"], nlev, slev, eps,
                         range(fs, fe))
    cfl = inside(cfl, base["z_cfl"], hs, he, fs, fe)
    check(got, dict(
        rhodz_out=rhodz_out,
        rhodz_ast2=inside(rhodz_ast2, base["rhodz_ast2"], hs, he, vs, ve),
        p_face_up=up, p_face_low=low,
        z_delta_q=inside(0.5 * (up - low), base["z_delta_q"], hs, he, vs, ve),
        z_a1=inside(cc - 0.5 * (up + low), base["z_a1"], hs, he, vs, ve),
        z_cfl=cfl), rtol=1e-12)


# ================================================================== temperature diffusion
#
# icon4py's diffusion of theta and exner: the cold pools' enhanced
# coefficient (``max_over`` the neighbours through ``E2C`` of a cell field
# built from ``C2E2C`` sums), the nabla2 of theta with the truly horizontal
# diffusion over steep points (``as_offset`` of an ``int32`` field on
# ``CellDim, C2E2CDim, KDim``, chosen by a ``bool`` scalar in a conditional
# expression) and the turbulence diagnostics over the flattened ``CEDim``.


@gtx.field_operator
def _temporary_field_for_grid_point_cold_pools_enhancement(
    theta_v: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[vpfloat],
    thresh_tdiff: wpfloat,
    smallest_vpfloat: vpfloat,
) -> fa.CellKField[vpfloat]:
    theta_ref_mc_wp = astype(theta_ref_mc, wpfloat)
    tdiff = theta_v - neighbor_sum(theta_v(C2E2C), axis=C2E2CDim) / wpfloat("3.0")
    trefdiff = theta_ref_mc_wp - astype(
        neighbor_sum(theta_ref_mc(C2E2C), axis=C2E2CDim), wpfloat
    ) / wpfloat("3.0")
    return where(
        ((tdiff - trefdiff) < thresh_tdiff) & (trefdiff < wpfloat("0.0"))
        | (tdiff - trefdiff < wpfloat("1.5") * thresh_tdiff),
        astype((thresh_tdiff - tdiff + trefdiff) * wpfloat("5.0e-4"), vpfloat),
        smallest_vpfloat,
    )


@gtx.field_operator
def _enhance_diffusion_coefficient_for_grid_point_cold_pools(
    kh_smag_e: Field[[EdgeDim, KDim], vpfloat],
    enh_diffu_3d: fa.CellKField[vpfloat],
) -> Field[[EdgeDim, KDim], vpfloat]:
    return maximum(kh_smag_e, max_over(enh_diffu_3d(E2C), axis=E2CDim))


@gtx.field_operator
def _calculate_enhanced_diffusion_coefficients_for_grid_point_cold_pools(
    theta_v: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[vpfloat],
    thresh_tdiff: wpfloat,
    smallest_vpfloat: vpfloat,
    kh_smag_e: Field[[EdgeDim, KDim], vpfloat],
) -> Field[[EdgeDim, KDim], vpfloat]:
    enh_diffu_3d = _temporary_field_for_grid_point_cold_pools_enhancement(
        theta_v, theta_ref_mc, thresh_tdiff, smallest_vpfloat
    )
    return _enhance_diffusion_coefficient_for_grid_point_cold_pools(kh_smag_e, enh_diffu_3d)


@gtx.field_operator
def _calculate_nabla2_for_z(
    kh_smag_e: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    kh_smag_e_wp = astype(kh_smag_e, wpfloat)
    return kh_smag_e_wp * inv_dual_edge_length * (theta_v(E2C[1]) - theta_v(E2C[0]))


@gtx.field_operator
def _calculate_nabla2_of_theta(
    z_nabla2_e: fa.EdgeKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    return astype(neighbor_sum(z_nabla2_e(C2E) * geofac_div, axis=C2EDim), vpfloat)


@gtx.field_operator
def _truly_horizontal_diffusion_nabla_of_theta_over_steep_points(
    mask: fa.CellKField[bool],
    zd_vertoffset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32],
    zd_diffcoef: fa.CellKField[wpfloat],
    geofac_n2s_c: fa.CellField[wpfloat],
    geofac_n2s_nbh: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat],
    vcoef: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat],
    theta_v: fa.CellKField[wpfloat],
    z_temp: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_temp_wp = astype(z_temp, wpfloat)
    at_0 = theta_v(C2E2C[0])(as_offset(Koff, zd_vertoffset[C2E2CDim(0)]))
    at_1 = theta_v(C2E2C[1])(as_offset(Koff, zd_vertoffset[C2E2CDim(1)]))
    at_2 = theta_v(C2E2C[2])(as_offset(Koff, zd_vertoffset[C2E2CDim(2)]))
    below_0 = theta_v(C2E2C[0])(as_offset(Koff, zd_vertoffset[C2E2CDim(0)] + 1))
    below_1 = theta_v(C2E2C[1])(as_offset(Koff, zd_vertoffset[C2E2CDim(1)] + 1))
    below_2 = theta_v(C2E2C[2])(as_offset(Koff, zd_vertoffset[C2E2CDim(2)] + 1))
    total = (
        theta_v * geofac_n2s_c
        + geofac_n2s_nbh[C2E2CDim(0)]
        * (vcoef[C2E2CDim(0)] * at_0 + (wpfloat("1.0") - vcoef[C2E2CDim(0)]) * below_0)
        + geofac_n2s_nbh[C2E2CDim(1)]
        * (vcoef[C2E2CDim(1)] * at_1 + (wpfloat("1.0") - vcoef[C2E2CDim(1)]) * below_1)
        + geofac_n2s_nbh[C2E2CDim(2)]
        * (vcoef[C2E2CDim(2)] * at_2 + (wpfloat("1.0") - vcoef[C2E2CDim(2)]) * below_2)
    )
    z_temp_wp = where(mask, z_temp_wp + zd_diffcoef * total, z_temp_wp)
    return astype(z_temp_wp, vpfloat)


@gtx.field_operator
def _update_theta_and_exner(
    z_temp: fa.CellKField[vpfloat],
    area: fa.CellField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    exner: fa.CellKField[wpfloat],
    rd_o_cvd: vpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    rd_o_cvd_wp, z_temp_wp = astype((rd_o_cvd, z_temp), wpfloat)
    z_theta = theta_v
    theta_v = theta_v + (area * z_temp_wp)
    exner = exner * (wpfloat("1.0") + rd_o_cvd_wp * (theta_v / z_theta - wpfloat("1.0")))
    return theta_v, exner


@gtx.field_operator
def _apply_diffusion_to_theta_and_exner(
    kh_smag_e: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    mask: fa.CellKField[bool],
    zd_vertoffset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32],
    zd_diffcoef: fa.CellKField[wpfloat],
    geofac_n2s_c: fa.CellField[wpfloat],
    geofac_n2s_nbh: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat],
    vcoef: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat],
    area: fa.CellField[wpfloat],
    exner: fa.CellKField[wpfloat],
    rd_o_cvd: vpfloat,
    apply_zdiffusion_t: bool,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_nabla2_e = _calculate_nabla2_for_z(kh_smag_e, inv_dual_edge_length, theta_v)
    z_temp = _calculate_nabla2_of_theta(z_nabla2_e, geofac_div)
    z_temp = (
        _truly_horizontal_diffusion_nabla_of_theta_over_steep_points(
            mask, zd_vertoffset, zd_diffcoef, geofac_n2s_c, geofac_n2s_nbh, vcoef, theta_v,
            z_temp,
        )
        if apply_zdiffusion_t
        else z_temp
    )
    theta_v, exner = _update_theta_and_exner(z_temp, area, theta_v, exner, rd_o_cvd)
    return theta_v, exner


@gtx.field_operator
def _temporary_fields_for_turbulence_diagnostics(
    kh_smag_ec: Field[[EdgeDim, KDim], vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: Field[[CEDim], wpfloat],
    geofac_div: Field[[CEDim], wpfloat],
    diff_multfac_smag: Field[[KDim], vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    kh_smag_ec_wp, diff_multfac_smag_wp = astype((kh_smag_ec, diff_multfac_smag), wpfloat)
    kh_c_wp = (
        neighbor_sum(kh_smag_ec_wp(C2E) * e_bln_c_s(C2CE), axis=C2EDim) / diff_multfac_smag_wp
    )
    div_wp = neighbor_sum(vn(C2E) * geofac_div(C2CE), axis=C2EDim)
    return astype((kh_c_wp, div_wp), vpfloat)


@gtx.field_operator
def _calculate_diagnostics_for_turbulence_on_model_levels(
    div: fa.CellKField[vpfloat],
    kh_c: fa.CellKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    """The diagnostics at the interface above each level, in the older spelling
    that keeps half levels on ``KDim`` (``Koff[-1]`` is the level above)."""
    wgtfac_c_wp, div_wp, kh_c_wp = astype((wgtfac_c, div, kh_c), wpfloat)
    div_ic_wp = wgtfac_c_wp * div_wp + (wpfloat("1.0") - wgtfac_c_wp) * div_wp(Koff[-1])
    hdef_ic_wp = (wgtfac_c_wp * kh_c_wp + (wpfloat("1.0") - wgtfac_c_wp) * kh_c_wp(Koff[-1])) ** 2
    return astype((div_ic_wp, hdef_ic_wp), vpfloat)


@gtx.field_operator
def _calculate_diagnostic_quantities_for_turbulence(
    kh_smag_ec: Field[[EdgeDim, KDim], vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: Field[[CEDim], wpfloat],
    geofac_div: Field[[CEDim], wpfloat],
    diff_multfac_smag: Field[[KDim], vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    kh_c, div = _temporary_fields_for_turbulence_diagnostics(
        kh_smag_ec, vn, e_bln_c_s, geofac_div, diff_multfac_smag
    )
    div_ic_vp, hdef_ic_vp = _calculate_diagnostics_for_turbulence_on_model_levels(
        div, kh_c, wgtfac_c
    )
    return div_ic_vp, hdef_ic_vp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def temperature_diffusion(
    theta_v_in: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[vpfloat],
    kh_smag_e: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    mask: fa.CellKField[bool],
    zd_vertoffset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32],
    zd_diffcoef: fa.CellKField[wpfloat],
    geofac_n2s_c: fa.CellField[wpfloat],
    geofac_n2s_nbh: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat],
    vcoef: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat],
    area: fa.CellField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    exner: fa.CellKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: Field[[CEDim], wpfloat],
    geofac_div_flat: Field[[CEDim], wpfloat],
    diff_multfac_smag: Field[[KDim], vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    div_ic: fa.CellKField[vpfloat],
    hdef_ic: fa.CellKField[vpfloat],
    thresh_tdiff: wpfloat,
    smallest_vpfloat: vpfloat,
    rd_o_cvd: vpfloat,
    apply_zdiffusion_t: bool,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _calculate_enhanced_diffusion_coefficients_for_grid_point_cold_pools(
        theta_v_in, theta_ref_mc, thresh_tdiff, smallest_vpfloat, kh_smag_e, out=kh_smag_e,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_diffusion_to_theta_and_exner(
        kh_smag_e, inv_dual_edge_length, theta_v_in, geofac_div, mask, zd_vertoffset,
        zd_diffcoef, geofac_n2s_c, geofac_n2s_nbh, vcoef, area, exner, rd_o_cvd,
        apply_zdiffusion_t, out=(theta_v, exner),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _calculate_diagnostic_quantities_for_turbulence(
        kh_smag_e, vn, e_bln_c_s, geofac_div_flat, diff_multfac_smag, wgtfac_c,
        out=(div_ic, hdef_ic),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start + 1, vertical_end)})


def vertical_offsets():
    """Offsets keeping levels k + off and k + off + 1 inside the column."""
    off = RNG.integers(-2, 3, (NC, 3, NLEV))
    lev = np.arange(NLEV)[None, None, :]
    return np.clip(off, -lev, NLEV - 2 - lev).astype(np.int32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("apply_zdiffusion_t", [True, False])
def test_temperature_diffusion(backend, apply_zdiffusion_t):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 0, NE - 1, 1, NLEV - 1
    e2c, c2e, c2e2c = TABLES["E2C"], TABLES["C2E"], TABLES["C2E2C"]
    thresh, smallest, rd_o_cvd = -0.3, np.float32(1e-6), np.float32(0.286)
    a = dict(
        theta_v_in=RNG.uniform(280.0, 300.0, (NC, NLEV)),
        theta_ref_mc=RNG.uniform(280.0, 300.0, (NC, NLEV)).astype(np.float32),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE), geofac_div=RNG.standard_normal((NC, 3)),
        mask=RNG.random((NC, NLEV)) < 0.6, zd_vertoffset=vertical_offsets(),
        zd_diffcoef=RNG.random((NC, NLEV)) * 1e-3, geofac_n2s_c=RNG.standard_normal(NC),
        geofac_n2s_nbh=RNG.standard_normal((NC, 3)), vcoef=RNG.random((NC, 3, NLEV)),
        area=RNG.uniform(0.5, 2.0, NC) * 1e-3, vn=RNG.standard_normal((NE, NLEV)),
        e_bln_c_s=RNG.uniform(0.2, 0.5, NC * 3), geofac_div_flat=RNG.standard_normal(NC * 3),
        diff_multfac_smag=RNG.uniform(0.5, 1.5, NLEV).astype(np.float32),
        wgtfac_c=RNG.uniform(0.2, 0.8, (NC, NLEV)).astype(np.float32))
    base = dict(kh_smag_e=f32(NE, NLEV) * np.float32(0.01), theta_v=RNG.random((NC, NLEV)),
                exner=RNG.uniform(0.8, 1.0, (NC, NLEV)), div_ic=f32(NC, NLEV),
                hdef_ic=f32(NC, NLEV))
    got = {k: v.copy() for k, v in base.items()}
    temperature_diffusion(
        **a, **got, thresh_tdiff=thresh, smallest_vpfloat=smallest, rd_o_cvd=rd_o_cvd,
        apply_zdiffusion_t=apply_zdiffusion_t, cell_start=cs, cell_end=ce, edge_start=es,
        edge_end=ee, vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
        backend=backend)

    theta = a["theta_v_in"]
    ref = a["theta_ref_mc"]
    tdiff = theta - theta[c2e2c].sum(axis=1) / 3.0
    trefdiff = ref.astype(np.float64) - ref[c2e2c].sum(axis=1).astype(np.float64) / 3.0
    d = tdiff - trefdiff
    enh = np.where((d < thresh) & (trefdiff < 0.0) | (d < 1.5 * thresh),
                   ((thresh - tdiff + trefdiff) * 5e-4).astype(np.float32), smallest)
    kh = np.maximum(base["kh_smag_e"], enh[e2c].max(axis=1))
    kh = inside(kh, base["kh_smag_e"], es, ee, vs, ve)
    nabla2_e = kh.astype(np.float64) * a["inv_dual_edge_length"][:, None] * (
        theta[e2c[:, 1]] - theta[e2c[:, 0]])
    z_temp = np.einsum("cnk,cn->ck", nabla2_e[c2e], a["geofac_div"]).astype(np.float32)
    if apply_zdiffusion_t:
        cells = np.arange(NC)[:, None]
        lev = np.arange(NLEV)[None, :]
        total = theta * a["geofac_n2s_c"][:, None]
        for n in range(3):
            nb, off, w = c2e2c[:, n:n + 1], a["zd_vertoffset"][:, n], a["vcoef"][:, n]
            at = theta[nb, lev + off]
            below = theta[nb, np.minimum(lev + off + 1, NLEV - 1)]
            total = total + a["geofac_n2s_nbh"][:, n:n + 1] * (w * at + (1 - w) * below)
        del cells
        z = z_temp.astype(np.float64)
        z_temp = np.where(a["mask"], z + a["zd_diffcoef"] * total, z).astype(np.float32)
    new_theta = theta + a["area"][:, None] * z_temp.astype(np.float64)
    new_exner = base["exner"] * (1.0 + np.float64(rd_o_cvd) * (new_theta / theta - 1.0))
    e_bln, gdiv = a["e_bln_c_s"].reshape(NC, 3), a["geofac_div_flat"].reshape(NC, 3)
    kh_c = np.einsum("cnk,cn->ck", kh[c2e].astype(np.float64), e_bln) / a[
        "diff_multfac_smag"].astype(np.float64)
    div = np.einsum("cnk,cn->ck", a["vn"][c2e], gdiv)
    kh_c, div = kh_c.astype(np.float32).astype(np.float64), div.astype(np.float32).astype(
        np.float64)
    wgt = a["wgtfac_c"].astype(np.float64)
    div_ic = wgt * div + (1 - wgt) * shifted(div, -1)
    hdef_ic = (wgt * kh_c + (1 - wgt) * shifted(kh_c, -1)) ** 2
    check(got, dict(
        kh_smag_e=kh,
        theta_v=inside(new_theta, base["theta_v"], cs, ce, vs, ve),
        exner=inside(new_exner, base["exner"], cs, ce, vs, ve),
        div_ic=inside(div_ic, base["div_ic"], cs, ce, vs + 1, ve),
        hdef_ic=inside(hdef_ic, base["hdef_ic"], cs, ce, vs + 1, ve)), rtol=2e-5, atol=1e-6)
    # the increments themselves, small beside theta and exner
    region = (slice(cs, ce), slice(vs, ve))
    np.testing.assert_allclose((got["theta_v"] - theta)[region], (new_theta - theta)[region],
                               rtol=1e-5)
    np.testing.assert_allclose((got["exner"] - base["exner"])[region],
                               (new_exner - base["exner"])[region], rtol=1e-5, atol=1e-12)


# ================================================================== interpolation and operators
#
# icon4py's interpolation stencils and math operators: RBF reconstructions at
# cells over ``C2E`` and the nested ``C2E2C2E`` (nine edges per cell), cell
# vectors to edge normals over ``E2C`` with coefficients on ``EdgeDim,
# E2CDim``, Green-Gauss gradients over ``C2E2CO``, a Laplacian on a horizontal
# field alone, finite differences through ``E2C`` and ``E2V``, averages of
# adjacent levels, and the Smagorinsky enhancement factor on ``KDim`` alone
# (scalars broadcast over ``KDim``, the interfaces one level longer than the
# output, a call without ``domain=``).


@gtx.field_operator
def _mo_intp_rbf_rbf_vec_interpol_cell(
    p_vn_in: fa.EdgeKField[wpfloat],
    ptr_coeff_1: Field[[dims.CellDim, C2EDim], wpfloat],
    ptr_coeff_2: Field[[dims.CellDim, C2EDim], wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_vn_in(C2E), axis=C2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_vn_in(C2E), axis=C2EDim)
    return p_u_out, p_v_out


@gtx.field_operator
def _compute_edge_2_cell_vector_interpolation(
    p_e_in: fa.EdgeKField[ta.wpfloat],
    ptr_coeff_1: gtx.Field[gtx.Dims[dims.CellDim, C2E2C2EDim], ta.wpfloat],
    ptr_coeff_2: gtx.Field[gtx.Dims[dims.CellDim, C2E2C2EDim], ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(C2E2C2E), axis=C2E2C2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(C2E2C2E), axis=C2E2C2EDim)
    return p_u_out, p_v_out


@gtx.field_operator
def _interpolate_cell_vector_to_edge_normal(
    vector_x: fa.CellKField[wpfloat],
    vector_y: fa.CellKField[wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(
        c_lin_e * (vector_x(E2C) * primal_normal_cell_x + vector_y(E2C) * primal_normal_cell_y),
        axis=E2CDim,
    )


@gtx.field_operator
def _mo_cells2edges_scalar_interior(
    cells2edges_interpolation_coeff: Field[[EdgeDim, E2CDim], float],
    cell_scalar: Field[[CellDim, KDim], float],
) -> Field[[EdgeDim, KDim], float]:
    return neighbor_sum(cells2edges_interpolation_coeff * cell_scalar(E2C), axis=E2CDim)


@gtx.field_operator
def cell_horizontal_gradients_by_green_gauss_method(
    scalar_field: fa.CellKField[vpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], wpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    scalar_field_wp = astype((scalar_field), wpfloat)
    grad_u = neighbor_sum(geofac_grg_x * scalar_field_wp(C2E2CO), axis=C2E2CODim)
    grad_v = neighbor_sum(geofac_grg_y * scalar_field_wp(C2E2CO), axis=C2E2CODim)
    return astype((grad_u, grad_v), vpfloat)


@gtx.field_operator
def _nabla2_scalar_2D(
    psi_c: fa.CellField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
) -> fa.CellField[ta.wpfloat]:
    return neighbor_sum(psi_c(C2E2CO) * geofac_n2s, axis=C2E2CODim)


@gtx.field_operator
def grad_fd_norm(
    psi_c: fa.CellKField[float],
    inv_dual_edge_length: fa.EdgeField[float],
) -> fa.EdgeKField[float]:
    return (psi_c(E2C[1]) - psi_c(E2C[0])) * inv_dual_edge_length


@gtx.field_operator
def _grad_fd_tang(
    psi_v: gtx.Field[gtx.Dims[dims.VertexDim, dims.KDim], float],
    inv_primal_edge_length: fa.EdgeField[float],
    tangent_orientation: fa.EdgeField[float],
) -> fa.EdgeKField[float]:
    return tangent_orientation * (psi_v(E2V[1]) - psi_v(E2V[0])) * inv_primal_edge_length


@gtx.field_operator
def average_level_plus1_on_edges(
    half_level_field: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return wpfloat(0.5) * (half_level_field + half_level_field(Koff[1]))


@gtx.field_operator
def difference_level_plus1_on_cells(
    half_level_field: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return half_level_field - half_level_field(Koff[1])


@gtx.field_operator
def _en_smag_fac_for_zero_nshift(
    vect_a: fa.KField[float],
    hdiff_smag_fac: float,
    hdiff_smag_fac2: float,
    hdiff_smag_fac3: float,
    hdiff_smag_fac4: float,
    hdiff_smag_z: float,
    hdiff_smag_z2: float,
    hdiff_smag_z3: float,
    hdiff_smag_z4: float,
) -> fa.KField[float]:
    dz21 = hdiff_smag_z2 - hdiff_smag_z
    alin = (hdiff_smag_fac2 - hdiff_smag_fac) / dz21
    df32 = hdiff_smag_fac3 - hdiff_smag_fac2
    df42 = hdiff_smag_fac4 - hdiff_smag_fac2
    dz32 = hdiff_smag_z3 - hdiff_smag_z2
    dz42 = hdiff_smag_z4 - hdiff_smag_z2
    bqdr = (df42 * dz32 - df32 * dz42) / (dz32 * dz42 * (dz42 - dz32))
    aqdr = df32 / dz32 - bqdr * dz32
    zf = 0.5 * (vect_a + vect_a(Koff[1]))
    zero = broadcast(0.0, (KDim,))
    dzlin = minimum(broadcast(dz21, (KDim,)), maximum(zero, zf - hdiff_smag_z))
    dzqdr = minimum(broadcast(dz42, (KDim,)), maximum(zero, zf - hdiff_smag_z2))
    return hdiff_smag_fac + (dzlin * alin) + dzqdr * (aqdr + dzqdr * bqdr)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def interpolation_and_operators(
    p_vn_in: fa.EdgeKField[wpfloat],
    rbf_c2e_1: Field[[dims.CellDim, C2EDim], wpfloat],
    rbf_c2e_2: Field[[dims.CellDim, C2EDim], wpfloat],
    rbf_c2e2c2e_1: gtx.Field[gtx.Dims[dims.CellDim, C2E2C2EDim], wpfloat],
    rbf_c2e2c2e_2: gtx.Field[gtx.Dims[dims.CellDim, C2E2C2EDim], wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    cell_scalar: fa.CellKField[wpfloat],
    scalar_vp: fa.CellKField[vpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], wpfloat],
    psi_2d: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    psi_v: fa.VertexKField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    u_cell: fa.CellKField[wpfloat],
    v_cell: fa.CellKField[wpfloat],
    u_rbf: fa.CellKField[wpfloat],
    v_rbf: fa.CellKField[wpfloat],
    vn_normal: fa.EdgeKField[wpfloat],
    edge_scalar: fa.EdgeKField[wpfloat],
    grad_x: fa.CellKField[vpfloat],
    grad_y: fa.CellKField[vpfloat],
    nabla2_2d: fa.CellField[wpfloat],
    grad_norm: fa.EdgeKField[wpfloat],
    grad_tang: fa.EdgeKField[wpfloat],
    vn_average: fa.EdgeKField[wpfloat],
    scalar_difference: fa.CellKField[wpfloat],
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    cells = {dims.CellDim: (cell_start, cell_end), dims.KDim: (vertical_start, vertical_end)}
    _mo_intp_rbf_rbf_vec_interpol_cell(
        p_vn_in, rbf_c2e_1, rbf_c2e_2, out=(u_cell, v_cell),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_edge_2_cell_vector_interpolation(
        p_vn_in, rbf_c2e2c2e_1, rbf_c2e2c2e_2, out=(u_rbf, v_rbf),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _interpolate_cell_vector_to_edge_normal(
        vector_x=u_rbf, vector_y=v_rbf, primal_normal_cell_x=primal_normal_cell_x,
        primal_normal_cell_y=primal_normal_cell_y, c_lin_e=c_lin_e, out=vn_normal,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _mo_cells2edges_scalar_interior(
        c_lin_e, cell_scalar, out=edge_scalar,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    cell_horizontal_gradients_by_green_gauss_method(
        scalar_vp, geofac_grg_x, geofac_grg_y, out=(grad_x, grad_y), domain=cells)
    _nabla2_scalar_2D(psi_2d, geofac_n2s, out=nabla2_2d,
                      domain={dims.CellDim: (cell_start, cell_end)})
    grad_fd_norm(cell_scalar, inv_dual_edge_length, out=grad_norm,
                 domain={dims.EdgeDim: (edge_start, edge_end),
                         dims.KDim: (vertical_start, vertical_end)})
    _grad_fd_tang(psi_v, inv_primal_edge_length, tangent_orientation, out=grad_tang,
                  domain={dims.EdgeDim: (edge_start, edge_end),
                          dims.KDim: (vertical_start, vertical_end)})
    average_level_plus1_on_edges(
        p_vn_in, out=vn_average,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    difference_level_plus1_on_cells(
        cell_scalar, out=scalar_difference,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end - 1)})


@gtx.program
def en_smag_fac_for_zero_nshift(
    vect_a: fa.KField[float],
    hdiff_smag_fac: float,
    hdiff_smag_fac2: float,
    hdiff_smag_fac3: float,
    hdiff_smag_fac4: float,
    hdiff_smag_z: float,
    hdiff_smag_z2: float,
    hdiff_smag_z3: float,
    hdiff_smag_z4: float,
    enh_smag_fac: fa.KField[float],
):
    _en_smag_fac_for_zero_nshift(
        vect_a, hdiff_smag_fac, hdiff_smag_fac2, hdiff_smag_fac3, hdiff_smag_fac4,
        hdiff_smag_z, hdiff_smag_z2, hdiff_smag_z3, hdiff_smag_z4, out=enh_smag_fac,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolation_and_operators(backend):
    cs, ce, es, ee, vs, ve = 1, NC, 1, NE - 1, 0, NLEV - 2
    e2c, c2e, c2e2co, c2e2c2e, e2v = (TABLES[k] for k in ("E2C", "C2E", "C2E2CO", "C2E2C2E",
                                                          "E2V"))
    a = dict(
        p_vn_in=RNG.standard_normal((NE, NLEV)), rbf_c2e_1=RNG.standard_normal((NC, 3)),
        rbf_c2e_2=RNG.standard_normal((NC, 3)), rbf_c2e2c2e_1=RNG.standard_normal((NC, 9)),
        rbf_c2e2c2e_2=RNG.standard_normal((NC, 9)),
        primal_normal_cell_x=RNG.standard_normal((NE, 2)),
        primal_normal_cell_y=RNG.standard_normal((NE, 2)), c_lin_e=RNG.random((NE, 2)),
        cell_scalar=RNG.standard_normal((NC, NLEV)), scalar_vp=f32(NC, NLEV),
        geofac_grg_x=RNG.standard_normal((NC, 4)), geofac_grg_y=RNG.standard_normal((NC, 4)),
        psi_2d=RNG.standard_normal(NC), geofac_n2s=RNG.standard_normal((NC, 4)),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE), psi_v=RNG.standard_normal((NV, NLEV)),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0))
    base = dict(
        u_cell=RNG.random((NC, NLEV)), v_cell=RNG.random((NC, NLEV)),
        u_rbf=RNG.random((NC, NLEV)), v_rbf=RNG.random((NC, NLEV)),
        vn_normal=RNG.random((NE, NLEV)), edge_scalar=RNG.random((NE, NLEV)),
        grad_x=f32(NC, NLEV), grad_y=f32(NC, NLEV), nabla2_2d=RNG.random(NC),
        grad_norm=RNG.random((NE, NLEV)), grad_tang=RNG.random((NE, NLEV)),
        vn_average=RNG.random((NE, NLEV)), scalar_difference=RNG.random((NC, NLEV)))
    got = {k: v.copy() for k, v in base.items()}
    interpolation_and_operators(
        **a, **got, cell_start=cs, cell_end=ce, edge_start=es, edge_end=ee, vertical_start=vs,
        vertical_end=ve, offset_provider=TABLES, backend=backend)

    vn, sc = a["p_vn_in"], a["cell_scalar"]

    def cells(name, x):
        return inside(x, base[name], cs, ce, vs, ve)
    want = {}
    for name, x in (("u_cell", np.einsum("cnk,cn->ck", vn[c2e], a["rbf_c2e_1"])),
                    ("v_cell", np.einsum("cnk,cn->ck", vn[c2e], a["rbf_c2e_2"])),
                    ("u_rbf", np.einsum("cnk,cn->ck", vn[c2e2c2e], a["rbf_c2e2c2e_1"])),
                    ("v_rbf", np.einsum("cnk,cn->ck", vn[c2e2c2e], a["rbf_c2e2c2e_2"]))):
        want[name] = cells(name, x)
    u, v = want["u_rbf"], want["v_rbf"]
    normal = sum(a["c_lin_e"][:, n:n + 1] * (u[e2c[:, n]] * a["primal_normal_cell_x"][:, n:n + 1]
                                             + v[e2c[:, n]] * a["primal_normal_cell_y"][:, n:n + 1])
                 for n in range(2))
    want["vn_normal"] = inside(normal, base["vn_normal"], es, ee, vs, ve)
    want["edge_scalar"] = inside(np.einsum("enk,en->ek", sc[e2c], a["c_lin_e"]),
                                 base["edge_scalar"], es, ee, vs, ve)
    s64 = a["scalar_vp"].astype(np.float64)
    for name, g in (("grad_x", a["geofac_grg_x"]), ("grad_y", a["geofac_grg_y"])):
        want[name] = cells(name, np.einsum("cnk,cn->ck", s64[c2e2co], g).astype(np.float32))
    nabla2 = np.array(base["nabla2_2d"])
    nabla2[cs:ce] = (a["psi_2d"][c2e2co] * a["geofac_n2s"]).sum(axis=1)[cs:ce]
    want["nabla2_2d"] = nabla2
    want["grad_norm"] = inside((sc[e2c[:, 1]] - sc[e2c[:, 0]]) * a["inv_dual_edge_length"][:, None],
                               base["grad_norm"], es, ee, vs, ve)
    pv = a["psi_v"]
    want["grad_tang"] = inside(a["tangent_orientation"][:, None] * (pv[e2v[:, 1]] - pv[e2v[:, 0]])
                               * a["inv_primal_edge_length"][:, None], base["grad_tang"],
                               es, ee, vs, ve)
    with np.errstate(invalid="ignore"):
        want["vn_average"] = inside(0.5 * (vn + shifted(vn, 1)), base["vn_average"], es, ee, vs,
                                    ve - 1)
        want["scalar_difference"] = inside(sc - shifted(sc, 1), base["scalar_difference"],
                                           cs, ce, vs, ve - 1)
    check(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_smagorinsky_enhancement_factor(backend):
    vect_a = np.linspace(20000.0, 0.0, NLEV + 1)
    fac = (0.15, 0.2, 0.25, 0.3)
    z = (3000.0, 9000.0, 14000.0, 17000.0)
    enh = np.zeros(NLEV)
    en_smag_fac_for_zero_nshift(vect_a, *fac, *z, enh, offset_provider={"Koff": KDim},
                                backend=backend)
    dz21, dz32, dz42 = z[1] - z[0], z[2] - z[1], z[3] - z[1]
    alin = (fac[1] - fac[0]) / dz21
    df32, df42 = fac[2] - fac[1], fac[3] - fac[1]
    bqdr = (df42 * dz32 - df32 * dz42) / (dz32 * dz42 * (dz42 - dz32))
    aqdr = df32 / dz32 - bqdr * dz32
    zf = 0.5 * (vect_a[:-1] + vect_a[1:])
    dzlin = np.minimum(dz21, np.maximum(0.0, zf - z[0]))
    dzqdr = np.minimum(dz42, np.maximum(0.0, zf - z[1]))
    np.testing.assert_allclose(enh, fac[0] + dzlin * alin + dzqdr * (aqdr + dzqdr * bqdr),
                               rtol=1e-12)


# ================================================================== geometry on the sphere
#
# icon4py's math helpers on horizontal fields alone: geographical to
# cartesian coordinates (tuples of three), dot and cross products, norms,
# the inverse where nonzero, zonal and meridional components and back, and
# the arc length (``arccos``, no return annotation), called with domains on
# ``EdgeDim`` or ``CellDim`` only.


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def geographical_to_cartesian_on_cells(
    lat: fa.CellField[wpfloat], lon: fa.CellField[wpfloat]
) -> tuple[fa.CellField[wpfloat], fa.CellField[wpfloat], fa.CellField[wpfloat]]:
    return cos(lat) * cos(lon), cos(lat) * sin(lon), sin(lat)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def geographical_to_cartesian_on_edges(
    lat: fa.EdgeField[wpfloat], lon: fa.EdgeField[wpfloat]
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    x = cos(lat) * cos(lon)
    y = cos(lat) * sin(lon)
    z = sin(lat)
    return x, y, z


@gtx.field_operator
def dot_product_on_edges(
    x1: fa.EdgeField[wpfloat],
    x2: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat],
    y2: fa.EdgeField[wpfloat],
    z1: fa.EdgeField[wpfloat],
    z2: fa.EdgeField[wpfloat],
) -> fa.EdgeField[wpfloat]:
    return x1 * x2 + y1 * y2 + z1 * z2


@gtx.field_operator
def dot_product_on_cells(
    x1: fa.CellField[wpfloat],
    x2: fa.CellField[wpfloat],
    y1: fa.CellField[wpfloat],
    y2: fa.CellField[wpfloat],
    z1: fa.CellField[wpfloat],
    z2: fa.CellField[wpfloat],
) -> fa.CellField[wpfloat]:
    return x1 * x2 + y1 * y2 + z1 * z2


@gtx.field_operator
def cross_product_on_edges(
    x1: fa.EdgeField[wpfloat],
    x2: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat],
    y2: fa.EdgeField[wpfloat],
    z1: fa.EdgeField[wpfloat],
    z2: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    return y1 * z2 - z1 * y2, z1 * x2 - x1 * z2, x1 * y2 - y1 * x2


@gtx.field_operator
def norm2_on_edges(
    x: fa.EdgeField[wpfloat], y: fa.EdgeField[wpfloat], z: fa.EdgeField[wpfloat]
) -> fa.EdgeField[wpfloat]:
    return sqrt(dot_product_on_edges(x, x, y, y, z, z))


@gtx.field_operator
def norm2_on_cells(
    x: fa.CellField[wpfloat], y: fa.CellField[wpfloat], z: fa.CellField[wpfloat]
) -> fa.CellField[wpfloat]:
    return sqrt(dot_product_on_cells(x, x, y, y, z, z))


@gtx.field_operator
def normalize_cartesian_vector_on_edges(
    v_x: fa.EdgeField[wpfloat], v_y: fa.EdgeField[wpfloat], v_z: fa.EdgeField[wpfloat]
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    norm = norm2_on_edges(v_x, v_y, v_z)
    return v_x / norm, v_y / norm, v_z / norm


@gtx.field_operator
def invert_edge_field(f: fa.EdgeField[wpfloat]) -> fa.EdgeField[wpfloat]:
    return where(f != wpfloat(0.0), wpfloat(1.0) / f, f)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def zonal_and_meridional_components_on_cells(
    lat: fa.CellField[wpfloat],
    lon: fa.CellField[wpfloat],
    x: fa.CellField[wpfloat],
    y: fa.CellField[wpfloat],
    z: fa.CellField[wpfloat],
) -> tuple[fa.CellField[wpfloat], fa.CellField[wpfloat]]:
    cos_lat, sin_lat, cos_lon, sin_lon = cos(lat), sin(lat), cos(lon), sin(lon)
    u = cos_lon * y - sin_lon * x
    v = cos_lat * z - sin_lat * (cos_lon * x + sin_lon * y)
    norm = sqrt(u * u + v * v)
    return u / norm, v / norm


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def cartesian_coordinates_from_zonal_and_meridional_components_on_cells(
    lat: fa.CellField[wpfloat],
    lon: fa.CellField[wpfloat],
    u: fa.CellField[wpfloat],
    v: fa.CellField[wpfloat],
) -> tuple[fa.CellField[wpfloat], fa.CellField[wpfloat], fa.CellField[wpfloat]]:
    cos_lat, sin_lat, cos_lon, sin_lon = cos(lat), sin(lat), cos(lon), sin(lon)
    x = -u * sin_lon - v * sin_lat * cos_lon
    y = u * cos_lon - v * sin_lat * sin_lon
    z = cos_lat * v
    norm = norm2_on_cells(x, y, z)
    return x / norm, y / norm, z / norm


@gtx.field_operator
def arc_length_on_edges(
    x0: fa.EdgeField[wpfloat],
    x1: fa.EdgeField[wpfloat],
    y0: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat],
    z0: fa.EdgeField[wpfloat],
    z1: fa.EdgeField[wpfloat],
    radius: wpfloat,
):
    return radius * arccos(dot_product_on_edges(x0, x1, y0, y1, z0, z1))


@gtx.field_operator
def _edge_geometry(
    edge_lat: fa.EdgeField[wpfloat],
    edge_lon: fa.EdgeField[wpfloat],
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    radius: wpfloat,
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat],
           fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    """The normal of each edge's great circle (the cross product of its two
    vertices' positions, normalized), its length, its inverse and the normal's
    projection on the position of the edge's point."""
    lat_0, lon_0 = vertex_lat(E2V[0]), vertex_lon(E2V[0])
    lat_1, lon_1 = vertex_lat(E2V[1]), vertex_lon(E2V[1])
    x0, y0, z0 = cos(lat_0) * cos(lon_0), cos(lat_0) * sin(lon_0), sin(lat_0)
    x1, y1, z1 = cos(lat_1) * cos(lon_1), cos(lat_1) * sin(lon_1), sin(lat_1)
    nx, ny, nz = cross_product_on_edges(x0, x1, y0, y1, z0, z1)
    nx, ny, nz = normalize_cartesian_vector_on_edges(nx, ny, nz)
    length = arc_length_on_edges(x0, x1, y0, y1, z0, z1, radius)
    ex, ey, ez = geographical_to_cartesian_on_edges(edge_lat, edge_lon)
    projection = dot_product_on_edges(nx, ex, ny, ey, nz, ez)
    return nx, ny, nz, length, invert_edge_field(length), projection


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def sphere_geometry(
    cell_lat: fa.CellField[wpfloat],
    cell_lon: fa.CellField[wpfloat],
    edge_lat: fa.EdgeField[wpfloat],
    edge_lon: fa.EdgeField[wpfloat],
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    cell_u: fa.CellField[wpfloat],
    cell_v: fa.CellField[wpfloat],
    cell_x: fa.CellField[wpfloat],
    cell_y: fa.CellField[wpfloat],
    cell_z: fa.CellField[wpfloat],
    zonal: fa.CellField[wpfloat],
    meridional: fa.CellField[wpfloat],
    normal_x: fa.EdgeField[wpfloat],
    normal_y: fa.EdgeField[wpfloat],
    normal_z: fa.EdgeField[wpfloat],
    edge_length: fa.EdgeField[wpfloat],
    inv_edge_length: fa.EdgeField[wpfloat],
    projection: fa.EdgeField[wpfloat],
    radius: wpfloat,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
) -> None:
    cartesian_coordinates_from_zonal_and_meridional_components_on_cells(
        cell_lat, cell_lon, cell_u, cell_v, out=(cell_x, cell_y, cell_z),
        domain={dims.CellDim: (cell_start, cell_end)})
    zonal_and_meridional_components_on_cells(
        cell_lat, cell_lon, cell_x, cell_y, cell_z, out=(zonal, meridional),
        domain={dims.CellDim: (cell_start, cell_end)})
    _edge_geometry(
        edge_lat, edge_lon, vertex_lat, vertex_lon, radius,
        out=(normal_x, normal_y, normal_z, edge_length, inv_edge_length, projection),
        domain={dims.EdgeDim: (edge_start, edge_end)})


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def cartesian_positions(
    cell_lat: fa.CellField[wpfloat],
    cell_lon: fa.CellField[wpfloat],
    cell_x: fa.CellField[wpfloat],
    cell_y: fa.CellField[wpfloat],
    cell_z: fa.CellField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
) -> None:
    geographical_to_cartesian_on_cells(
        cell_lat, cell_lon, out=(cell_x, cell_y, cell_z),
        domain={dims.CellDim: (horizontal_start, horizontal_end)})


def unit(lat, lon):
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sphere_geometry(backend):
    cs, ce, es, ee = 1, NC - 1, 0, NE - 1
    e2v = TABLES["E2V"]
    radius = 6.371e6
    a = dict(cell_lat=RNG.uniform(-1.4, 1.4, NC), cell_lon=RNG.uniform(-3.0, 3.0, NC),
             edge_lat=RNG.uniform(-1.4, 1.4, NE), edge_lon=RNG.uniform(-3.0, 3.0, NE),
             vertex_lat=RNG.uniform(-1.4, 1.4, NV), vertex_lon=RNG.uniform(-3.0, 3.0, NV),
             cell_u=RNG.standard_normal(NC), cell_v=RNG.standard_normal(NC))
    # an edge whose vertices coincide has length zero: its inverse stays zero
    e2v_same = TABLES["E2V"][:, 0] == TABLES["E2V"][:, 1]
    names = ("cell_x", "cell_y", "cell_z", "zonal", "meridional", "normal_x", "normal_y",
             "normal_z", "edge_length", "inv_edge_length", "projection")
    base = {n: RNG.random(NC if n.startswith(("cell", "zonal", "meridional")) else NE)
            for n in names}
    got = {n: v.copy() for n, v in base.items()}
    sphere_geometry(**a, **got, radius=radius, cell_start=cs, cell_end=ce, edge_start=es,
                    edge_end=ee, offset_provider=TABLES, backend=backend)

    lat, lon, u, v = a["cell_lat"], a["cell_lon"], a["cell_u"], a["cell_v"]
    xyz = np.stack([-u * np.sin(lon) - v * np.sin(lat) * np.cos(lon),
                    u * np.cos(lon) - v * np.sin(lat) * np.sin(lon), np.cos(lat) * v])
    xyz = xyz / np.linalg.norm(xyz, axis=0)
    want = {}
    for i, n in enumerate(("cell_x", "cell_y", "cell_z")):
        want[n] = np.array(base[n])
        want[n][cs:ce] = xyz[i][cs:ce]
    x, y, z = (want[n] for n in ("cell_x", "cell_y", "cell_z"))
    zu = np.cos(lon) * y - np.sin(lon) * x
    zv = np.cos(lat) * z - np.sin(lat) * (np.cos(lon) * x + np.sin(lon) * y)
    norm = np.sqrt(zu * zu + zv * zv)
    for n, val in (("zonal", zu / norm), ("meridional", zv / norm)):
        want[n] = np.array(base[n])
        want[n][cs:ce] = val[cs:ce]
    p0 = unit(a["vertex_lat"][e2v[:, 0]], a["vertex_lon"][e2v[:, 0]])
    p1 = unit(a["vertex_lat"][e2v[:, 1]], a["vertex_lon"][e2v[:, 1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        normal = np.cross(p0.T, p1.T).T
        normal = normal / np.linalg.norm(normal, axis=0)
        length = radius * np.arccos(np.sum(p0 * p1, axis=0))
        inverse = np.where(length != 0.0, 1.0 / length, length)
    for i, n in enumerate(("normal_x", "normal_y", "normal_z")):
        want[n] = np.array(base[n])
        want[n][es:ee] = normal[i][es:ee]
    projection = np.sum(normal * unit(a["edge_lat"], a["edge_lon"]), axis=0)
    for n, val in (("edge_length", length), ("inv_edge_length", inverse),
                   ("projection", projection)):
        want[n] = np.array(base[n])
        want[n][es:ee] = val[es:ee]
    keep = np.ones(NE, bool)
    keep[es:ee] = ~e2v_same[es:ee]
    for n in names:
        w, g = want[n], got[n]
        if n.startswith("normal") or n == "projection":
            w, g = w[keep], g[keep]
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=n)

    positions = {n: RNG.random(NC) for n in ("cell_x", "cell_y", "cell_z")}
    cartesian_positions(lat, lon, positions["cell_x"], positions["cell_y"], positions["cell_z"],
                        0, NC, offset_provider={}, backend=backend)
    for i, n in enumerate(("cell_x", "cell_y", "cell_z")):
        np.testing.assert_allclose(positions[n], unit(lat, lon)[i], rtol=1e-12, atol=1e-15)


# ================================================================== nonhydro solver
#
# More of icon4py's solve_nonhydro stencils: the averaged normal wind, its
# divergence gradient over ``E2C2EO`` and the tangential wind over ``E2C2E``
# (a tuple of one wpfloat and two vpfloat fields), the explicit parts of the
# vertical wind (tuples of ``astype`` of four vpfloat fields), the air mass
# with a ``KField`` factor, the Exner gradient on flat levels, the lateral
# boundary's normal wind and the Exner perturbation; and the contravariant
# correction at cells on a region written as a chained comparison
# ``nflatlev + 1 <= dims.KDim < nlev``.


@gtx.field_operator
def _spatially_average_flux_or_velocity(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    flux_or_velocity: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(e_flx_avg * flux_or_velocity(E2C2EO), axis=E2C2EODim)


@gtx.field_operator
def _compute_tangential_wind(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> fa.EdgeKField[vpfloat]:
    return astype(neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim), vpfloat)


@gtx.field_operator
def _compute_avg_vn_and_graddiv_vn_and_vt(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat]]:
    z_vn_avg_wp = _spatially_average_flux_or_velocity(e_flx_avg=e_flx_avg, flux_or_velocity=vn)
    z_graddiv_vn_vp = astype(neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim), vpfloat)
    vt_vp = _compute_tangential_wind(vn=vn, rbf_vec_coeff_e=rbf_vec_coeff_e)
    return z_vn_avg_wp, z_graddiv_vn_vp, vt_vp


@gtx.field_operator
def _compute_explicit_vertical_wind_from_advection_and_vertical_wind_density(
    w_nnow: fa.CellKField[wpfloat],
    ddt_w_adv_ntl1: fa.CellKField[vpfloat],
    ddt_w_adv_ntl2: fa.CellKField[vpfloat],
    z_th_ddz_exner_c: fa.CellKField[vpfloat],
    rho_ic: fa.CellKField[wpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    dtime: wpfloat,
    wgt_nnow_vel: wpfloat,
    wgt_nnew_vel: wpfloat,
    cpd: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    adv_1, adv_2, th_ddz_exner, concorr = astype(
        (ddt_w_adv_ntl1, ddt_w_adv_ntl2, z_th_ddz_exner_c, w_concorr_c), wpfloat
    )
    z_w_expl_wp = w_nnow + dtime * (
        wgt_nnow_vel * adv_1 + wgt_nnew_vel * adv_2 - cpd * th_ddz_exner
    )
    z_contr_w_fl_l_wp = rho_ic * (-concorr + vwind_expl_wgt * w_nnow)
    return z_w_expl_wp, z_contr_w_fl_l_wp


@gtx.field_operator
def _compute_explicit_vertical_wind_speed_and_vertical_wind_times_density(
    w_nnow: fa.CellKField[wpfloat],
    ddt_w_adv_ntl1: fa.CellKField[vpfloat],
    z_th_ddz_exner_c: fa.CellKField[vpfloat],
    rho_ic: fa.CellKField[wpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    dtime: wpfloat,
    cpd: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    adv_1, th_ddz_exner, concorr = astype((ddt_w_adv_ntl1, z_th_ddz_exner_c, w_concorr_c), wpfloat)
    z_w_expl_wp = w_nnow + dtime * (adv_1 - cpd * th_ddz_exner)
    z_contr_w_fl_l_wp = rho_ic * (-concorr + vwind_expl_wgt * w_nnow)
    return z_w_expl_wp, z_contr_w_fl_l_wp


@gtx.field_operator
def _compute_airmass(
    rho_in: fa.CellKField[wpfloat],
    ddqz_z_full_in: fa.CellKField[wpfloat],
    deepatmo_t1mc_in: fa.KField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return rho_in * ddqz_z_full_in * deepatmo_t1mc_in


@gtx.field_operator
def _compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
    inv_dual_edge_length: Field[[EdgeDim], wpfloat],
    z_exner_ex_pr: Field[[CellDim, KDim], vpfloat],
) -> Field[[EdgeDim, KDim], vpfloat]:
    z_gradh_exner_wp = inv_dual_edge_length * astype(
        z_exner_ex_pr(E2C[1]) - z_exner_ex_pr(E2C[0]), wpfloat
    )
    return astype(z_gradh_exner_wp, vpfloat)


@gtx.field_operator
def _compute_vn_on_lateral_boundary(
    grf_tend_vn: fa.EdgeKField[wpfloat],
    vn_now: fa.EdgeKField[wpfloat],
    dtime: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    return vn_now + dtime * grf_tend_vn


@gtx.field_operator
def _init_exner_pr(
    exner: Field[[CellDim, KDim], vpfloat],
    exner_ref: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    exner_pr = exner - exner_ref
    return exner_pr


@gtx.field_operator
def _compute_contravariant_correction_of_w(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_w_concorr_me_wp = astype(z_w_concorr_me, wpfloat)
    here = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me_wp(C2E), axis=C2EDim)
    above = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me_wp(Koff[-1])(C2E), axis=C2EDim)
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    return astype(wgtfac_c_wp * here + (wpfloat("1.0") - wgtfac_c_wp) * above, vpfloat)


@gtx.field_operator
def _compute_contravariant_correction_of_w_for_lower_boundary(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfacq_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_w_concorr_me_wp = astype(z_w_concorr_me, wpfloat)
    m1 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me_wp(Koff[-1])(C2E), axis=C2EDim)
    m2 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me_wp(Koff[-2])(C2E), axis=C2EDim)
    m3 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me_wp(Koff[-3])(C2E), axis=C2EDim)
    wgtfacq_c_wp = astype(wgtfacq_c, wpfloat)
    return astype(
        wgtfacq_c_wp(Koff[-1]) * m1 + wgtfacq_c_wp(Koff[-2]) * m2 + wgtfacq_c_wp(Koff[-3]) * m3,
        vpfloat,
    )


@gtx.field_operator
def _fused_solve_nonhydro_stencil_39_40(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    wgtfacq_c: fa.CellKField[vpfloat],
    nlev: gtx.int32,
    nflatlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    return concat_where(
        nflatlev + 1 <= dims.KDim < nlev,
        _compute_contravariant_correction_of_w(e_bln_c_s, z_w_concorr_me, wgtfac_c),
        _compute_contravariant_correction_of_w_for_lower_boundary(
            e_bln_c_s, z_w_concorr_me, wgtfacq_c
        ),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def nonhydro_solver_parts(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    w_nnow: fa.CellKField[wpfloat],
    ddt_w_adv_ntl1: fa.CellKField[vpfloat],
    ddt_w_adv_ntl2: fa.CellKField[vpfloat],
    z_th_ddz_exner_c: fa.CellKField[vpfloat],
    rho_ic: fa.CellKField[wpfloat],
    w_concorr_c_in: fa.CellKField[vpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    rho: fa.CellKField[wpfloat],
    ddqz_z_full: fa.CellKField[wpfloat],
    deepatmo_t1mc: fa.KField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    exner: fa.CellKField[vpfloat],
    exner_ref: fa.CellKField[vpfloat],
    grf_tend_vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    wgtfacq_c: fa.CellKField[vpfloat],
    z_vn_avg: fa.EdgeKField[wpfloat],
    z_graddiv_vn: fa.EdgeKField[vpfloat],
    vt: fa.EdgeKField[vpfloat],
    z_w_expl: fa.CellKField[wpfloat],
    z_contr_w_fl_l: fa.CellKField[wpfloat],
    airmass: fa.CellKField[wpfloat],
    z_exner_ex_pr: fa.CellKField[vpfloat],
    z_gradh_exner: fa.EdgeKField[vpfloat],
    vn_new: fa.EdgeKField[wpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    dtime: wpfloat,
    wgt_nnow_vel: wpfloat,
    wgt_nnew_vel: wpfloat,
    cpd: wpfloat,
    predictor: bool,
    nlev: gtx.int32,
    nflatlev: gtx.int32,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_avg_vn_and_graddiv_vn_and_vt(
        e_flx_avg=e_flx_avg, vn=vn, geofac_grdiv=geofac_grdiv, rbf_vec_coeff_e=rbf_vec_coeff_e,
        out=(z_vn_avg, z_graddiv_vn, vt),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    if predictor:
        _compute_explicit_vertical_wind_speed_and_vertical_wind_times_density(
            w_nnow, ddt_w_adv_ntl1, z_th_ddz_exner_c, rho_ic, w_concorr_c_in, vwind_expl_wgt,
            dtime, cpd, out=(z_w_expl, z_contr_w_fl_l),
            domain={dims.CellDim: (cell_start, cell_end),
                    dims.KDim: (vertical_start, vertical_end)})
    else:
        _compute_explicit_vertical_wind_from_advection_and_vertical_wind_density(
            w_nnow, ddt_w_adv_ntl1, ddt_w_adv_ntl2, z_th_ddz_exner_c, rho_ic, w_concorr_c_in,
            vwind_expl_wgt, dtime, wgt_nnow_vel, wgt_nnew_vel, cpd,
            out=(z_w_expl, z_contr_w_fl_l),
            domain={dims.CellDim: (cell_start, cell_end),
                    dims.KDim: (vertical_start, vertical_end)})
    _compute_airmass(
        rho, ddqz_z_full, deepatmo_t1mc, out=airmass,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _init_exner_pr(
        exner, exner_ref, out=z_exner_ex_pr,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_horizontal_gradient_of_exner_pressure_for_flat_coordinates(
        inv_dual_edge_length, z_exner_ex_pr, out=z_gradh_exner,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_vn_on_lateral_boundary(
        grf_tend_vn, vn, dtime, out=vn_new,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _fused_solve_nonhydro_stencil_39_40(
        e_bln_c_s, z_w_concorr_me, wgtfac_c, wgtfacq_c, nlev, nflatlev, out=w_concorr_c,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (nflatlev + 1, nlev + 1)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("predictor", [True, False])
def test_nonhydro_solver_parts(backend, predictor):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 1, NE, 0, NLEV
    nlev, nflatlev = NLEV - 2, 3
    dtime, wnow, wnew, cpd = 4.0, 0.4, 0.6, 1004.64
    c2e, e2c, e2c2e, e2c2eo = (TABLES[k] for k in ("C2E", "E2C", "E2C2E", "E2C2EO"))
    a = dict(
        e_flx_avg=RNG.standard_normal((NE, 5)), vn=RNG.standard_normal((NE, NLEV)),
        geofac_grdiv=RNG.standard_normal((NE, 5)), rbf_vec_coeff_e=RNG.standard_normal((NE, 4)),
        w_nnow=RNG.standard_normal((NC, NLEV)), ddt_w_adv_ntl1=f32(NC, NLEV),
        ddt_w_adv_ntl2=f32(NC, NLEV), z_th_ddz_exner_c=f32(NC, NLEV) * np.float32(1e-3),
        rho_ic=RNG.uniform(0.5, 1.5, (NC, NLEV)), w_concorr_c_in=f32(NC, NLEV),
        vwind_expl_wgt=RNG.uniform(0.3, 0.5, NC), rho=RNG.uniform(0.5, 1.5, (NC, NLEV)),
        ddqz_z_full=RNG.uniform(10.0, 100.0, (NC, NLEV)), deepatmo_t1mc=RNG.uniform(0.9, 1.1, NLEV),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        exner=RNG.uniform(0.8, 1.0, (NC, NLEV)).astype(np.float32),
        exner_ref=RNG.uniform(0.8, 1.0, (NC, NLEV)).astype(np.float32),
        grf_tend_vn=RNG.standard_normal((NE, NLEV)), e_bln_c_s=RNG.uniform(0.2, 0.5, NC * 3),
        z_w_concorr_me=f32(NE, NLEV), wgtfac_c=f32(NC, NLEV), wgtfacq_c=f32(NC, NLEV))
    base = dict(
        z_vn_avg=RNG.random((NE, NLEV)), z_graddiv_vn=f32(NE, NLEV), vt=f32(NE, NLEV),
        z_w_expl=RNG.random((NC, NLEV)), z_contr_w_fl_l=RNG.random((NC, NLEV)),
        airmass=RNG.random((NC, NLEV)), z_exner_ex_pr=f32(NC, NLEV), z_gradh_exner=f32(NE, NLEV),
        vn_new=RNG.random((NE, NLEV)), w_concorr_c=f32(NC, NLEV))
    got = {k: v.copy() for k, v in base.items()}
    nonhydro_solver_parts(
        **a, **got, dtime=dtime, wgt_nnow_vel=wnow, wgt_nnew_vel=wnew, cpd=cpd,
        predictor=predictor, nlev=nlev, nflatlev=nflatlev, cell_start=cs, cell_end=ce,
        edge_start=es, edge_end=ee, vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
        backend=backend)

    def w64(name):
        return a[name].astype(np.float64)
    vn = a["vn"]
    want = {}

    def edges(name, x):
        want[name] = inside(x, base[name], es, ee, vs, ve)

    def cells(name, x):
        want[name] = inside(x, base[name], cs, ce, vs, ve)
    edges("z_vn_avg", np.einsum("enk,en->ek", vn[e2c2eo], a["e_flx_avg"]))
    edges("z_graddiv_vn", np.einsum("enk,en->ek", vn[e2c2eo], a["geofac_grdiv"]).astype(np.float32))
    edges("vt", np.einsum("enk,en->ek", vn[e2c2e], a["rbf_vec_coeff_e"]).astype(np.float32))
    tendency = w64("ddt_w_adv_ntl1") if predictor else (
        wnow * w64("ddt_w_adv_ntl1") + wnew * w64("ddt_w_adv_ntl2"))
    cells("z_w_expl", a["w_nnow"] + dtime * (tendency - cpd * w64("z_th_ddz_exner_c")))
    cells("z_contr_w_fl_l", a["rho_ic"] * (-w64("w_concorr_c_in")
                                           + a["vwind_expl_wgt"][:, None] * a["w_nnow"]))
    cells("airmass", a["rho"] * a["ddqz_z_full"] * a["deepatmo_t1mc"])
    cells("z_exner_ex_pr", a["exner"] - a["exner_ref"])
    ex = want["z_exner_ex_pr"]
    edges("z_gradh_exner", (a["inv_dual_edge_length"][:, None] * (
        ex[e2c[:, 1]] - ex[e2c[:, 0]]).astype(np.float64)).astype(np.float32))
    edges("vn_new", vn + dtime * a["grf_tend_vn"])
    e_bln = a["e_bln_c_s"].reshape(NC, 3)
    me = w64("z_w_concorr_me")
    with np.errstate(invalid="ignore"):
        def at_cells(shift):
            return np.einsum("cnk,cn->ck", shifted(me, shift)[c2e], e_bln)
        wgt, wq = w64("wgtfac_c"), w64("wgtfacq_c")
        interior = wgt * at_cells(0) + (1 - wgt) * at_cells(-1)
        bottom = sum(shifted(wq, -i) * at_cells(-i) for i in (1, 2, 3))
    k = np.arange(NLEV)[None, :]
    concorr = np.where((nflatlev + 1 <= k) & (k < nlev), interior, bottom).astype(np.float32)
    want["w_concorr_c"] = inside(concorr, base["w_concorr_c"], cs, ce, nflatlev + 1, nlev + 1)
    check(got, want, rtol=2e-6, atol=1e-6)


# ================================================================== backtrajectory
#
# The flux-form semi-Lagrangian backtrajectory: the upwind cell's indices
# chosen from ``int32`` fields on ``EdgeDim, E2CDim`` (``cell_idx[E2CDim(0)]``)
# and ``where(lvn_pos, 0, 1)`` of two literals into an ``int32`` output, the
# departure region's vertices in the upwind cell's frame, eleven outputs of
# three element types, after the counterclockwise indicator it reads.


@gtx.field_operator
def _compute_ffsl_backtrajectory(
    p_vn: fa.EdgeKField[ta.wpfloat],
    p_vt: fa.EdgeKField[ta.wpfloat],
    cell_idx: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], gtx.int32],
    cell_blk: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], gtx.int32],
    edge_verts_1_x: fa.EdgeField[ta.wpfloat],
    edge_verts_2_x: fa.EdgeField[ta.wpfloat],
    edge_verts_1_y: fa.EdgeField[ta.wpfloat],
    edge_verts_2_y: fa.EdgeField[ta.wpfloat],
    pos_on_tplane_e_1_x: fa.EdgeField[ta.wpfloat],
    pos_on_tplane_e_2_x: fa.EdgeField[ta.wpfloat],
    pos_on_tplane_e_1_y: fa.EdgeField[ta.wpfloat],
    pos_on_tplane_e_2_y: fa.EdgeField[ta.wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    lvn_sys_pos: fa.EdgeKField[bool],
    p_dt: ta.wpfloat,
) -> tuple[
    fa.EdgeKField[gtx.int32],
    fa.EdgeKField[gtx.int32],
    fa.EdgeKField[gtx.int32],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    lvn_pos = p_vn >= 0.0
    upwind_idx = where(lvn_pos, cell_idx[E2CDim(0)], cell_idx[E2CDim(1)])
    upwind_rel_idx = where(lvn_pos, 0, 1)
    upwind_blk = where(lvn_pos, cell_blk[E2CDim(0)], cell_blk[E2CDim(1)])

    depart_1_x = edge_verts_1_x - p_vn * p_dt
    depart_1_y = edge_verts_1_y - p_vt * p_dt
    depart_2_x = edge_verts_2_x - p_vn * p_dt
    depart_2_y = edge_verts_2_y - p_vt * p_dt

    origin_x = where(lvn_pos, pos_on_tplane_e_1_x, pos_on_tplane_e_2_x)
    origin_y = where(lvn_pos, pos_on_tplane_e_1_y, pos_on_tplane_e_2_y)

    v1_x = edge_verts_1_x - origin_x
    v1_y = edge_verts_1_y - origin_y
    v2_x = where(lvn_sys_pos, depart_1_x, edge_verts_2_x) - origin_x
    v2_y = where(lvn_sys_pos, depart_1_y, edge_verts_2_y) - origin_y
    v3_x = depart_2_x - origin_x
    v3_y = depart_2_y - origin_y
    v4_x = where(lvn_sys_pos, edge_verts_2_x, depart_1_x) - origin_x
    v4_y = where(lvn_sys_pos, edge_verts_2_y, depart_1_y) - origin_y

    pn_1 = where(lvn_pos, primal_normal_cell_x[E2CDim(0)], primal_normal_cell_x[E2CDim(1)])
    pn_2 = where(lvn_pos, primal_normal_cell_y[E2CDim(0)], primal_normal_cell_y[E2CDim(1)])
    dn_1 = where(lvn_pos, dual_normal_cell_x[E2CDim(0)], dual_normal_cell_x[E2CDim(1)])
    dn_2 = where(lvn_pos, dual_normal_cell_y[E2CDim(0)], dual_normal_cell_y[E2CDim(1)])

    return (
        upwind_idx,
        upwind_rel_idx,
        upwind_blk,
        astype(v1_x * pn_1 + v1_y * dn_1, vpfloat),
        astype(v2_x * pn_1 + v2_y * dn_1, vpfloat),
        astype(v3_x * pn_1 + v3_y * dn_1, vpfloat),
        astype(v4_x * pn_1 + v4_y * dn_1, vpfloat),
        astype(v1_x * pn_2 + v1_y * dn_2, vpfloat),
        astype(v2_x * pn_2 + v2_y * dn_2, vpfloat),
        astype(v3_x * pn_2 + v3_y * dn_2, vpfloat),
        astype(v4_x * pn_2 + v4_y * dn_2, vpfloat),
    )


EDGE_POINTS = ("edge_verts_1_x", "edge_verts_2_x", "edge_verts_1_y", "edge_verts_2_y",
               "pos_on_tplane_e_1_x", "pos_on_tplane_e_2_x", "pos_on_tplane_e_1_y",
               "pos_on_tplane_e_2_y")
NORMALS = ("primal_normal_cell_x", "primal_normal_cell_y", "dual_normal_cell_x",
           "dual_normal_cell_y")
COORDS = tuple(f"p_coords_dreg_v_{i}_{c}_dsl" for c in ("lon", "lat") for i in (1, 2, 3, 4))


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def ffsl_backtrajectory(
    p_vn: fa.EdgeKField[wpfloat],
    p_vt: fa.EdgeKField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    cell_idx: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], gtx.int32],
    cell_blk: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], gtx.int32],
    edge_verts_1_x: fa.EdgeField[wpfloat],
    edge_verts_2_x: fa.EdgeField[wpfloat],
    edge_verts_1_y: fa.EdgeField[wpfloat],
    edge_verts_2_y: fa.EdgeField[wpfloat],
    pos_on_tplane_e_1_x: fa.EdgeField[wpfloat],
    pos_on_tplane_e_2_x: fa.EdgeField[wpfloat],
    pos_on_tplane_e_1_y: fa.EdgeField[wpfloat],
    pos_on_tplane_e_2_y: fa.EdgeField[wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    dual_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    lvn_sys_pos: fa.EdgeKField[bool],
    p_cell_idx: fa.EdgeKField[gtx.int32],
    p_cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
    p_cell_blk: fa.EdgeKField[gtx.int32],
    p_coords_dreg_v_1_lon_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_2_lon_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_3_lon_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_4_lon_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_1_lat_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_2_lat_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_3_lat_dsl: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_4_lat_dsl: fa.EdgeKField[vpfloat],
    p_dt: wpfloat,
    lcounterclock: bool,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_ffsl_backtrajectory_counterclockwise_indicator(
        p_vn, tangent_orientation, lcounterclock, out=lvn_sys_pos,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_ffsl_backtrajectory(
        p_vn, p_vt, cell_idx, cell_blk, edge_verts_1_x, edge_verts_2_x, edge_verts_1_y,
        edge_verts_2_y, pos_on_tplane_e_1_x, pos_on_tplane_e_2_x, pos_on_tplane_e_1_y,
        pos_on_tplane_e_2_y, primal_normal_cell_x, primal_normal_cell_y, dual_normal_cell_x,
        dual_normal_cell_y, lvn_sys_pos, p_dt,
        out=(p_cell_idx, p_cell_rel_idx_dsl, p_cell_blk, p_coords_dreg_v_1_lon_dsl,
             p_coords_dreg_v_2_lon_dsl, p_coords_dreg_v_3_lon_dsl, p_coords_dreg_v_4_lon_dsl,
             p_coords_dreg_v_1_lat_dsl, p_coords_dreg_v_2_lat_dsl, p_coords_dreg_v_3_lat_dsl,
             p_coords_dreg_v_4_lat_dsl),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_ffsl_backtrajectory(backend):
    es, ee, vs, ve = 1, NE - 1, 1, NLEV
    dt = 3.0
    a = dict(p_vn=RNG.standard_normal((NE, NLEV)), p_vt=RNG.standard_normal((NE, NLEV)),
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
             cell_idx=RNG.integers(0, 1000, (NE, 2)).astype(np.int32),
             cell_blk=RNG.integers(0, 50, (NE, 2)).astype(np.int32))
    a.update({n: RNG.standard_normal(NE) for n in EDGE_POINTS})
    a.update({n: RNG.standard_normal((NE, 2)) for n in NORMALS})
    base = dict(lvn_sys_pos=RNG.random((NE, NLEV)) < 0.5,
                p_cell_idx=RNG.integers(-9, 0, (NE, NLEV)).astype(np.int32),
                p_cell_rel_idx_dsl=RNG.integers(-9, 0, (NE, NLEV)).astype(np.int32),
                p_cell_blk=RNG.integers(-9, 0, (NE, NLEV)).astype(np.int32))
    base.update({n: f32(NE, NLEV) for n in COORDS})
    got = {k: v.copy() for k, v in base.items()}
    ffsl_backtrajectory(**a, **got, p_dt=dt, lcounterclock=True, horizontal_start=es,
                        horizontal_end=ee, vertical_start=vs, vertical_end=ve,
                        offset_provider=TABLES, backend=backend)

    vn, vt = a["p_vn"], a["p_vt"]
    sys_pos = inside(vn * a["tangent_orientation"][:, None] >= 0.0, base["lvn_sys_pos"],
                     es, ee, vs, ve)
    pos = vn >= 0.0

    def pick(name):
        x = a[name]
        return np.where(pos, x[:, 0:1], x[:, 1:2])

    def col(name):
        return a[name][:, None]
    d1x, d1y = col("edge_verts_1_x") - vn * dt, col("edge_verts_1_y") - vt * dt
    d2x, d2y = col("edge_verts_2_x") - vn * dt, col("edge_verts_2_y") - vt * dt
    ox = np.where(pos, col("pos_on_tplane_e_1_x"), col("pos_on_tplane_e_2_x"))
    oy = np.where(pos, col("pos_on_tplane_e_1_y"), col("pos_on_tplane_e_2_y"))
    vx = [col("edge_verts_1_x") - ox, np.where(sys_pos, d1x, col("edge_verts_2_x")) - ox,
          d2x - ox, np.where(sys_pos, col("edge_verts_2_x"), d1x) - ox]
    vy = [col("edge_verts_1_y") - oy, np.where(sys_pos, d1y, col("edge_verts_2_y")) - oy,
          d2y - oy, np.where(sys_pos, col("edge_verts_2_y"), d1y) - oy]
    pn1, pn2 = pick("primal_normal_cell_x"), pick("primal_normal_cell_y")
    dn1, dn2 = pick("dual_normal_cell_x"), pick("dual_normal_cell_y")
    want = dict(lvn_sys_pos=sys_pos,
                p_cell_idx=inside(pick("cell_idx"), base["p_cell_idx"], es, ee, vs, ve),
                p_cell_rel_idx_dsl=inside(np.where(pos, 0, 1), base["p_cell_rel_idx_dsl"],
                                          es, ee, vs, ve),
                p_cell_blk=inside(pick("cell_blk"), base["p_cell_blk"], es, ee, vs, ve))
    for i in range(4):
        for c, (pn, dn) in (("lon", (pn1, dn1)), ("lat", (pn2, dn2))):
            name = f"p_coords_dreg_v_{i + 1}_{c}_dsl"
            want[name] = inside((vx[i] * pn + vy[i] * dn).astype(np.float32), base[name],
                                es, ee, vs, ve)
    for name, w in want.items():
        assert got[name].dtype == w.dtype or name.startswith("p_coords"), name
        if w.dtype.kind in "bi":
            np.testing.assert_array_equal(got[name], w, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6, err_msg=name)
