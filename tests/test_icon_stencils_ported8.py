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
    astype,
    broadcast,
    float32,
    float64,
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

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.C2E2CDim, dims.E2C2EDim = E2CDim, C2EDim, C2E2CDim, E2C2EDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
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
          "Koff": KDim}


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
