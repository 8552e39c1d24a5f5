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
compared with runtime scalars, shifts up to ``Koff[-5]``).  Each group is one
program, interpreted and compiled, compared with NumPy written from the
formulas.
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
    as_offset,
    astype,
    broadcast,
    float32,
    float64,
    max_over,
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
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.C2E2CDim, dims.E2C2EDim = E2CDim, C2EDim, C2E2CDim, E2C2EDim
dims.CEDim = CEDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
dims.E2C, dims.C2E, dims.C2E2C, dims.E2C2E, dims.Koff = E2C, C2E, C2E2C, E2C2E, Koff

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
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
          "Koff": KDim, "C2CE": None}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(8003).bit_generator.state


def check(got, expected, rtol, atol=0.0):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


def inside(value, base, hs, he, vs, ve):
    """``base`` with ``value`` written on rows ``hs:he`` and levels ``vs:ve``."""
    out = np.array(base)
    out[hs:he, vs:ve] = np.asarray(value)[hs:he, vs:ve]
    return out


def shifted(x, n):
    """``x(Koff[n])``: level k takes level k + n (NaN outside the column)."""
    out = np.full(x.shape, np.nan)
    lo, hi = max(0, -n), min(x.shape[1], x.shape[1] - n)
    out[:, lo:hi] = x[:, lo + n:hi + n]
    return out


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
