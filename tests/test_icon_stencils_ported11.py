"""An eleventh round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

First the horizontal tracer flux limiters and the Miura upwind fluxes: the
monotone limiter's final flux (``where`` on the sign of the antidiffusive
flux, and its ``signum`` spelling), the positive-definite limiter's
reduction factor (``maximum`` of a broadcast zero against each of three
``C2E`` neighbours weighted through flattened ``C2CE`` coefficients) and its
application written in place, the horizontal advection step with a
``KField`` metric factor, the Miura flux choosing the upwind cell by an
``int32`` index field and the subcycled Miura divergence choosing its mass
flux divergence by an ``int32`` scalar in a conditional expression.  Then
the vertical tracer steps on full and half levels (the density predictors,
the clipped tracer update, the flux-form vertical update, the
semi-monotone parabola limiter with nested ``where`` on tuples, face values
copied or taken from the level above, a direct call of a field operator
with ``out=``/``domain=`` on the bottom half level).  Then muphys'
thermodynamics (temperature from internal energy and back, saturation
pressure over ice, the derivative of the saturation specific humidity, six
chained Newton-Raphson iterations inside the saturation adjustment, the
scalar temperature operator called from a scan).  Last diffusion and metric
pieces (the fourth-order diffusion of ``vn`` called with keyword arguments,
the copy to ``vpfloat``, the explicit weight on a cell field, the weighted
``C2E2CO`` average called twice).
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
    astype,
    broadcast,
    concat_where,
    exp,
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
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)
E2C2EODim = Dimension("E2C2EO", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.KDim = CellDim, EdgeDim, KDim
dims.E2CDim, dims.C2EDim, dims.C2E2CODim, dims.CEDim = E2CDim, C2EDim, C2E2CODim, CEDim
dims.E2C2EDim, dims.E2C2EODim = E2C2EDim, E2C2EODim
dims.VertexDim, dims.KHalfDim, dims.V2EDim = VertexDim, KHalfDim, V2EDim
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
E2C2EO = FieldOffset("E2C2EO", source=EdgeDim, target=(EdgeDim, E2C2EODim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeKHalfField = Field[Dims[EdgeDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 9, 6, 10
NH = NLEV + 1
RNG = np.random.default_rng(11001)
_TABLE_RNG = np.random.default_rng(11002)
TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None],
                                    _TABLE_RNG.integers(0, NC, (NC, 3))], axis=1),
          "V2E": _TABLE_RNG.integers(0, NE, (NV, 6)),
          "E2C2E": _TABLE_RNG.integers(0, NE, (NE, 4)),
          "E2C2EO": np.concatenate([np.arange(NE)[:, None],
                                    _TABLE_RNG.integers(0, NE, (NE, 4))], axis=1),
          "C2CE": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(11003).bit_generator.state






def f64(*shape):
    return RNG.random(shape)


# ================================================================== horizontal limiters
#
# icon4py's flux limiters for the horizontal tracer transport and the Miura
# upwind fluxes (advection stencils).


@gtx.field_operator
def _hflx_limiter_mo_stencil_04(
    z_anti: fa.EdgeKField[float], r_m: fa.CellKField[float], r_p: fa.CellKField[float],
    z_mflx_low: fa.EdgeKField[float],
) -> fa.EdgeKField[float]:
    r_frac = where(z_anti >= 0.0, minimum(r_m(E2C[0]), r_p(E2C[1])),
                   minimum(r_m(E2C[1]), r_p(E2C[0])))
    return z_mflx_low + minimum(1.0, r_frac) * z_anti


@gtx.field_operator
def _hflx_limiter_mo_stencil_05(
    z_anti: fa.EdgeKField[wpfloat], z_mflx_low: fa.EdgeKField[wpfloat],
    r_m: fa.CellKField[wpfloat], r_p: fa.CellKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    z_signum = where(z_anti > wpfloat(0.0), wpfloat(1.0), -wpfloat(1.0))
    r_frac = wpfloat(0.5) * ((wpfloat(1.0) + z_signum) * minimum(r_m(E2C[0]), r_p(E2C[1]))
                             + (wpfloat(1.0) - z_signum) * minimum(r_m(E2C[1]), r_p(E2C[0])))
    return z_mflx_low + minimum(wpfloat(1.0), r_frac) * z_anti


@gtx.field_operator
def _hflx_limiter_pd_stencil_01(
    geofac_div: Field[[CEDim], float], p_cc: fa.CellKField[float],
    p_rhodz_now: fa.CellKField[float], p_mflx_tracer_h: fa.EdgeKField[float],
    p_dtime: float, dbl_eps: float,
) -> fa.CellKField[float]:
    zero = broadcast(0.0, (CellDim, KDim))
    pm_0 = maximum(zero, p_mflx_tracer_h(C2E[0]) * geofac_div(C2CE[0]) * p_dtime)
    pm_1 = maximum(zero, p_mflx_tracer_h(C2E[1]) * geofac_div(C2CE[1]) * p_dtime)
    pm_2 = maximum(zero, p_mflx_tracer_h(C2E[2]) * geofac_div(C2CE[2]) * p_dtime)
    p_m = pm_0 + pm_1 + pm_2
    return minimum(broadcast(1.0, (CellDim, KDim)), (p_cc * p_rhodz_now) / (p_m + dbl_eps))


@gtx.field_operator
def _hflx_limiter_pd_stencil_02(
    r_m: fa.CellKField[float], p_mflx_tracer_h: fa.EdgeKField[float],
) -> fa.EdgeKField[float]:
    return where(p_mflx_tracer_h >= 0.0, p_mflx_tracer_h * r_m(E2C[0]),
                 p_mflx_tracer_h * r_m(E2C[1]))


@gtx.field_operator
def _hor_adv_stencil_01(
    p_mflx_tracer_h: fa.EdgeKField[float], deepatmo_divh: fa.KField[float],
    tracer_now: fa.CellKField[float], rhodz_now: fa.CellKField[float],
    rhodz_new: fa.CellKField[float], geofac_div: Field[[CEDim], float], p_dtime: float,
) -> fa.CellKField[float]:
    return (tracer_now * rhodz_now - p_dtime * deepatmo_divh
            * neighbor_sum(p_mflx_tracer_h(C2E) * geofac_div(C2CE), axis=C2EDim)) / rhodz_new


@gtx.field_operator
def _upwind_hflux_miura_stencil_01(
    z_lsq_coeff_1: fa.CellKField[float], z_lsq_coeff_2: fa.CellKField[float],
    z_lsq_coeff_3: fa.CellKField[float], distv_bary_1: fa.EdgeKField[float],
    distv_bary_2: fa.EdgeKField[float], p_mass_flx_e: fa.EdgeKField[float],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
) -> fa.EdgeKField[float]:
    upwind = cell_rel_idx_dsl == 1
    return (where(upwind, z_lsq_coeff_1(E2C[1]), z_lsq_coeff_1(E2C[0]))
            + distv_bary_1 * where(upwind, z_lsq_coeff_2(E2C[1]), z_lsq_coeff_2(E2C[0]))
            + distv_bary_2 * where(upwind, z_lsq_coeff_3(E2C[1]), z_lsq_coeff_3(E2C[0]))
            ) * p_mass_flx_e


@gtx.field_operator
def _upwind_hflux_miura_cycl_stencil_02(
    nsub: gtx.int32, p_mass_flx_e: fa.EdgeKField[float],
    geofac_div: Field[[CellDim, C2EDim], float], z_rhofluxdiv_c: fa.CellKField[float],
    z_tracer_mflx: fa.EdgeKField[float], z_rho_now: fa.CellKField[float],
    z_tracer_now: fa.CellKField[float], z_dtsub: float,
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float],
           fa.CellKField[float]]:
    z_rhofluxdiv_c_out = (neighbor_sum(p_mass_flx_e(C2E) * geofac_div, axis=C2EDim)
                          if nsub == 1 else z_rhofluxdiv_c)
    z_fluxdiv_c_dsl = neighbor_sum(z_tracer_mflx(C2E) * geofac_div, axis=C2EDim)
    z_rho_new_dsl = z_rho_now - z_dtsub * z_rhofluxdiv_c_out
    z_tracer_new_dsl = (z_tracer_now * z_rho_now - z_dtsub * z_fluxdiv_c_dsl) / z_rho_new_dsl
    return z_rhofluxdiv_c_out, z_fluxdiv_c_dsl, z_rho_new_dsl, z_tracer_new_dsl


@gtx.field_operator
def _upwind_hflux_miura_cycl_stencil_03b(
    z_tracer_mflx_1_dsl: fa.EdgeKField[float], z_tracer_mflx_2_dsl: fa.EdgeKField[float],
    z_tracer_mflx_3_dsl: fa.EdgeKField[float],
) -> fa.EdgeKField[float]:
    return (z_tracer_mflx_1_dsl + z_tracer_mflx_2_dsl + z_tracer_mflx_3_dsl) / float(3)


@gtx.program
def tracer_horizontal_limiters(
    z_anti: fa.EdgeKField[float], z_mflx_low: fa.EdgeKField[float],
    r_m: fa.CellKField[float], r_p: fa.CellKField[float],
    geofac_div_ce: Field[[CEDim], float], p_cc: fa.CellKField[float],
    p_rhodz_now: fa.CellKField[float], p_mflx_tracer_h: fa.EdgeKField[float],
    p_dtime: float, dbl_eps: float, deepatmo_divh: fa.KField[float],
    rhodz_new: fa.CellKField[float],
    z_lsq_coeff_1: fa.CellKField[float], z_lsq_coeff_2: fa.CellKField[float],
    z_lsq_coeff_3: fa.CellKField[float], distv_bary_1: fa.EdgeKField[float],
    distv_bary_2: fa.EdgeKField[float], p_mass_flx_e: fa.EdgeKField[float],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32], nsub: gtx.int32,
    geofac_div: Field[[CellDim, C2EDim], float], z_rhofluxdiv_c: fa.CellKField[float],
    z_tracer_mflx_2_dsl: fa.EdgeKField[float], z_tracer_mflx_3_dsl: fa.EdgeKField[float],
    z_dtsub: float,
    flux_mo_04: fa.EdgeKField[float], flux_mo_05: fa.EdgeKField[float],
    r_m_pd: fa.CellKField[float], tracer_new_hor: fa.CellKField[float],
    p_out_e: fa.EdgeKField[float], z_rhofluxdiv_c_out: fa.CellKField[float],
    z_fluxdiv_c_dsl: fa.CellKField[float], z_rho_new_dsl: fa.CellKField[float],
    z_tracer_new_dsl: fa.CellKField[float], p_out_avg: fa.EdgeKField[float],
    cell_start: gtx.int32, cell_end: gtx.int32, edge_start: gtx.int32,
    edge_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    edges = {dims.EdgeDim: (edge_start, edge_end), dims.KDim: (vertical_start, vertical_end)}
    cells = {dims.CellDim: (cell_start, cell_end), dims.KDim: (vertical_start, vertical_end)}
    _hflx_limiter_mo_stencil_04(z_anti, r_m, r_p, z_mflx_low, out=flux_mo_04, domain=edges)
    _hflx_limiter_mo_stencil_05(z_anti, z_mflx_low, r_m, r_p, out=flux_mo_05, domain=edges)
    _hflx_limiter_pd_stencil_01(geofac_div_ce, p_cc, p_rhodz_now, p_mflx_tracer_h, p_dtime,
                                dbl_eps, out=r_m_pd, domain=cells)
    _hflx_limiter_pd_stencil_02(r_m_pd, p_mflx_tracer_h, out=p_mflx_tracer_h, domain=edges)
    _hor_adv_stencil_01(p_mflx_tracer_h, deepatmo_divh, p_cc, p_rhodz_now, rhodz_new,
                        geofac_div_ce, p_dtime, out=tracer_new_hor, domain=cells)
    _upwind_hflux_miura_stencil_01(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, distv_bary_1, distv_bary_2,
        p_mass_flx_e, cell_rel_idx_dsl, out=(p_out_e), domain=edges)
    _upwind_hflux_miura_cycl_stencil_02(
        nsub, p_mass_flx_e, geofac_div, z_rhofluxdiv_c, p_out_e, p_rhodz_now, p_cc, z_dtsub,
        out=(z_rhofluxdiv_c_out, z_fluxdiv_c_dsl, z_rho_new_dsl, z_tracer_new_dsl),
        domain=cells)
    _upwind_hflux_miura_cycl_stencil_03b(p_out_e, z_tracer_mflx_2_dsl, z_tracer_mflx_3_dsl,
                                         out=p_out_avg, domain=edges)


@pytest.mark.parametrize("nsub", [1, 2])
@pytest.mark.parametrize("backend", BACKENDS)
def test_tracer_horizontal_limiters(backend, nsub):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 2, NE - 1, 1, NLEV - 1
    e2c, c2e = TABLES["E2C"], TABLES["C2E"]
    a = dict(z_anti=RNG.standard_normal((NE, NLEV)), z_mflx_low=RNG.standard_normal((NE, NLEV)),
             r_m=RNG.uniform(0.0, 2.0, (NC, NLEV)), r_p=RNG.uniform(0.0, 2.0, (NC, NLEV)),
             geofac_div_ce=RNG.standard_normal(NC * 3), p_cc=f64(NC, NLEV),
             p_rhodz_now=RNG.uniform(1.0, 2.0, (NC, NLEV)), deepatmo_divh=f64(NLEV),
             rhodz_new=RNG.uniform(1.0, 2.0, (NC, NLEV)),
             z_lsq_coeff_1=f64(NC, NLEV), z_lsq_coeff_2=f64(NC, NLEV),
             z_lsq_coeff_3=f64(NC, NLEV), distv_bary_1=RNG.standard_normal((NE, NLEV)),
             distv_bary_2=RNG.standard_normal((NE, NLEV)),
             p_mass_flx_e=RNG.standard_normal((NE, NLEV)),
             cell_rel_idx_dsl=RNG.integers(0, 2, (NE, NLEV)).astype(np.int32),
             geofac_div=RNG.standard_normal((NC, 3)), z_rhofluxdiv_c=f64(NC, NLEV),
             z_tracer_mflx_2_dsl=f64(NE, NLEV), z_tracer_mflx_3_dsl=f64(NE, NLEV))
    p_dtime, dbl_eps, z_dtsub = 0.3, 1e-12, 0.05
    base = dict(p_mflx_tracer_h=RNG.standard_normal((NE, NLEV)))
    base |= {n: f64(NE, NLEV) for n in ("flux_mo_04", "flux_mo_05", "p_out_e", "p_out_avg")}
    base |= {n: f64(NC, NLEV) for n in ("r_m_pd", "tracer_new_hor", "z_rhofluxdiv_c_out",
                                        "z_fluxdiv_c_dsl", "z_rho_new_dsl",
                                        "z_tracer_new_dsl")}
    got = {n: v.copy() for n, v in base.items()}
    tracer_horizontal_limiters(
        **a, **got, p_dtime=p_dtime, dbl_eps=dbl_eps, nsub=nsub, z_dtsub=z_dtsub,
        cell_start=cs, cell_end=ce, edge_start=es, edge_end=ee, vertical_start=vs,
        vertical_end=ve, offset_provider=TABLES, backend=backend)

    anti, low, r_m, r_p = a["z_anti"], a["z_mflx_low"], a["r_m"], a["r_p"]
    frac = np.where(anti >= 0.0, np.minimum(r_m[e2c[:, 0]], r_p[e2c[:, 1]]),
                    np.minimum(r_m[e2c[:, 1]], r_p[e2c[:, 0]]))
    flux04 = low + np.minimum(1.0, frac) * anti
    frac5 = np.where(anti > 0.0, np.minimum(r_m[e2c[:, 0]], r_p[e2c[:, 1]]),
                     np.minimum(r_m[e2c[:, 1]], r_p[e2c[:, 0]]))
    flux05 = low + np.minimum(1.0, frac5) * anti
    gce = a["geofac_div_ce"].reshape(NC, 3)
    mflx = base["p_mflx_tracer_h"]
    p_m = np.maximum(0.0, mflx[c2e] * gce[:, :, None] * p_dtime).sum(axis=1)
    r_m_pd = inside(np.minimum(1.0, a["p_cc"] * a["p_rhodz_now"] / (p_m + dbl_eps)),
                    base["r_m_pd"], cs, ce, vs, ve)
    mflx_new = inside(np.where(mflx >= 0.0, mflx * r_m_pd[e2c[:, 0]], mflx * r_m_pd[e2c[:, 1]]),
                      mflx, es, ee, vs, ve)
    div = (mflx_new[c2e] * gce[:, :, None]).sum(axis=1)
    tracer = (a["p_cc"] * a["p_rhodz_now"] - p_dtime * a["deepatmo_divh"] * div) / a["rhodz_new"]
    up = a["cell_rel_idx_dsl"] == 1

    def pick(c):
        return np.where(up, c[e2c[:, 1]], c[e2c[:, 0]])

    p_out_e = inside((pick(a["z_lsq_coeff_1"]) + a["distv_bary_1"] * pick(a["z_lsq_coeff_2"])
                      + a["distv_bary_2"] * pick(a["z_lsq_coeff_3"])) * a["p_mass_flx_e"],
                     base["p_out_e"], es, ee, vs, ve)
    g = a["geofac_div"][:, :, None]
    rhodiv = ((a["p_mass_flx_e"][c2e] * g).sum(axis=1) if nsub == 1 else a["z_rhofluxdiv_c"])
    fluxdiv = (p_out_e[c2e] * g).sum(axis=1)
    rho_new = a["p_rhodz_now"] - z_dtsub * rhodiv
    tracer_new = (a["p_cc"] * a["p_rhodz_now"] - z_dtsub * fluxdiv) / rho_new
    avg = (p_out_e + a["z_tracer_mflx_2_dsl"] + a["z_tracer_mflx_3_dsl"]) / 3.0
    want = dict(flux_mo_04=inside(flux04, base["flux_mo_04"], es, ee, vs, ve),
                flux_mo_05=inside(flux05, base["flux_mo_05"], es, ee, vs, ve),
                r_m_pd=r_m_pd, p_mflx_tracer_h=mflx_new,
                tracer_new_hor=inside(tracer, base["tracer_new_hor"], cs, ce, vs, ve),
                p_out_e=p_out_e,
                z_rhofluxdiv_c_out=inside(rhodiv, base["z_rhofluxdiv_c_out"], cs, ce, vs, ve),
                z_fluxdiv_c_dsl=inside(fluxdiv, base["z_fluxdiv_c_dsl"], cs, ce, vs, ve),
                z_rho_new_dsl=inside(rho_new, base["z_rho_new_dsl"], cs, ce, vs, ve),
                z_tracer_new_dsl=inside(tracer_new, base["z_tracer_new_dsl"], cs, ce, vs, ve),
                p_out_avg=inside(avg, base["p_out_avg"], es, ee, vs, ve))
    check(got, want, rtol=1e-12, atol=1e-12)


# ================================================================== vertical tracer steps
#
# icon4py's advection steps along the vertical: the density predictors, the
# clipped update, the flux-form vertical update and the PPM face values and
# limiter.  ``p_mflx_contra_v``, ``p_mflx_tracer_v`` and ``p_face`` live on
# half levels (NLEV + 1 of them).


@gtx.field_operator
def _step_advection_stencil_01(
    rhodz_ast: fa.CellKField[float], p_mflx_contra_v: fa.CellKField[float],
    deepatmo_divzl: fa.KField[float], deepatmo_divzu: fa.KField[float], pd_time: float,
) -> fa.CellKField[float]:
    return rhodz_ast + pd_time * (p_mflx_contra_v(Koff[1]) * deepatmo_divzl
                                  - p_mflx_contra_v * deepatmo_divzu)


@gtx.field_operator
def _step_advection_stencil_02(
    p_rhodz_new: fa.CellKField[float], p_mflx_contra_v: fa.CellKField[float],
    deepatmo_divzl: fa.KField[float], deepatmo_divzu: fa.KField[float], p_dtime: float,
) -> fa.CellKField[float]:
    return maximum(0.1 * p_rhodz_new, p_rhodz_new) - p_dtime * (
        p_mflx_contra_v(Koff[1]) * deepatmo_divzl - p_mflx_contra_v * deepatmo_divzu)


@gtx.field_operator
def _step_advection_stencil_03(
    p_tracer_now: fa.CellKField[float], p_grf_tend_tracer: fa.CellKField[float], p_dtime: float,
) -> fa.CellKField[float]:
    return maximum(0.0, p_tracer_now + p_dtime * p_grf_tend_tracer)


@gtx.field_operator
def _vert_adv_stencil_01(
    tracer_now: fa.CellKField[float], rhodz_now: fa.CellKField[float],
    p_mflx_tracer_v: fa.CellKField[float], deepatmo_divzl: fa.KField[float],
    deepatmo_divzu: fa.KField[float], rhodz_new: fa.CellKField[float], p_dtime: float,
) -> fa.CellKField[float]:
    return (tracer_now * rhodz_now + p_dtime * (p_mflx_tracer_v(Koff[1]) * deepatmo_divzl
                                                - p_mflx_tracer_v * deepatmo_divzu)) / rhodz_new


@gtx.field_operator
def _v_limit_prbl_sm_stencil_02(
    l_limit: fa.CellKField[gtx.int32], p_face: fa.CellKField[float], p_cc: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float]]:
    q_face_up, q_face_low = where(
        l_limit != 0,
        where(p_cc < minimum(p_face, p_face(Koff[1])), (p_cc, p_cc),
              where(p_face > p_face(Koff[1]),
                    (3.0 * p_cc - 2.0 * p_face(Koff[1]), p_face(Koff[1])),
                    (p_face, 3.0 * p_cc - 2.0 * p_face))),
        (p_face, p_face(Koff[1])))
    return q_face_up, q_face_low


@gtx.field_operator
def _face_val_ppm_stencil_02b(p_cc: fa.CellKField[float]) -> fa.CellKField[float]:
    p_face = p_cc
    return p_face


@gtx.field_operator
def _face_val_ppm_stencil_02c(p_cc: fa.CellKField[float]) -> fa.CellKField[float]:
    return p_cc(Koff[-1])


@gtx.field_operator
def _copy_cell_kdim_field(field_in: fa.CellKField[float]) -> fa.CellKField[float]:
    return field_in


@gtx.program
def vertical_tracer_steps(
    rhodz_ast: fa.CellKField[float], p_mflx_contra_v: fa.CellKField[float],
    deepatmo_divzl: fa.KField[float], deepatmo_divzu: fa.KField[float], p_dtime: float,
    p_rhodz_new: fa.CellKField[float], p_tracer_now: fa.CellKField[float],
    p_grf_tend_tracer: fa.CellKField[float], rhodz_now: fa.CellKField[float],
    p_mflx_tracer_v: fa.CellKField[float], l_limit: fa.CellKField[gtx.int32],
    p_face: fa.CellKField[float],
    rhodz_ast2: fa.CellKField[float], rhodz_ast3: fa.CellKField[float],
    p_tracer_new: fa.CellKField[float], tracer_new_vert: fa.CellKField[float],
    p_face_up: fa.CellKField[float], p_face_low: fa.CellKField[float],
    p_face_copy: fa.CellKField[float], p_cc_copy: fa.CellKField[float],
    cell_start: gtx.int32, cell_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    full = {dims.CellDim: (cell_start, cell_end), dims.KDim: (vertical_start, vertical_end)}
    _step_advection_stencil_01(rhodz_ast, p_mflx_contra_v, deepatmo_divzl, deepatmo_divzu,
                               p_dtime, out=rhodz_ast2, domain=full)
    _step_advection_stencil_02(p_rhodz_new, p_mflx_contra_v, deepatmo_divzl, deepatmo_divzu,
                               p_dtime, out=rhodz_ast3, domain=full)
    _step_advection_stencil_03(p_tracer_now, p_grf_tend_tracer, p_dtime, out=p_tracer_new,
                               domain=full)
    _vert_adv_stencil_01(p_tracer_new, rhodz_now, p_mflx_tracer_v, deepatmo_divzl,
                         deepatmo_divzu, rhodz_ast2, p_dtime, out=tracer_new_vert, domain=full)
    _v_limit_prbl_sm_stencil_02(l_limit, p_face, tracer_new_vert, out=(p_face_up, p_face_low),
                                domain=full)
    _face_val_ppm_stencil_02b(p_tracer_now, out=p_face_copy,
                              domain={dims.CellDim: (cell_start, cell_end),
                                      dims.KDim: (vertical_start, vertical_start + 1)})
    _face_val_ppm_stencil_02c(p_tracer_now, out=p_face_copy,
                              domain={dims.CellDim: (cell_start, cell_end),
                                      dims.KDim: (vertical_end, vertical_end + 1)})
    _copy_cell_kdim_field(tracer_new_vert, out=p_cc_copy)


@pytest.mark.parametrize("bounds", [(0, NLEV), (2, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_vertical_tracer_steps(backend, bounds):
    cs, ce = 1, NC - 1
    vs, ve = bounds
    a = dict(rhodz_ast=RNG.uniform(1.0, 2.0, (NC, NLEV)),
             p_mflx_contra_v=RNG.standard_normal((NC, NH)), deepatmo_divzl=f64(NLEV),
             deepatmo_divzu=f64(NLEV), p_rhodz_new=RNG.standard_normal((NC, NLEV)),
             p_tracer_now=RNG.standard_normal((NC, NLEV)),
             p_grf_tend_tracer=RNG.standard_normal((NC, NLEV)),
             rhodz_now=RNG.uniform(1.0, 2.0, (NC, NLEV)),
             p_mflx_tracer_v=0.1 * RNG.standard_normal((NC, NH)),
             l_limit=RNG.integers(0, 2, (NC, NLEV)).astype(np.int32),
             p_face=RNG.standard_normal((NC, NH)))
    p_dtime = 0.4
    base = {n: f64(NC, NLEV) + 1.0 for n in ("rhodz_ast2", "rhodz_ast3", "p_tracer_new",
                                             "tracer_new_vert", "p_face_up", "p_face_low",
                                             "p_cc_copy")}
    base["p_face_copy"] = f64(NC, NH)
    got = {n: v.copy() for n, v in base.items()}
    vertical_tracer_steps(**a, **got, p_dtime=p_dtime, cell_start=cs, cell_end=ce,
                          vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                          backend=backend)

    m = a["p_mflx_contra_v"]
    vflux = m[:, 1:] * a["deepatmo_divzl"] - m[:, :-1] * a["deepatmo_divzu"]
    ast2 = inside(a["rhodz_ast"] + p_dtime * vflux, base["rhodz_ast2"], cs, ce, vs, ve)
    rn = a["p_rhodz_new"]
    ast3 = np.maximum(0.1 * rn, rn) - p_dtime * vflux
    tnew = inside(np.maximum(0.0, a["p_tracer_now"] + p_dtime * a["p_grf_tend_tracer"]),
                  base["p_tracer_new"], cs, ce, vs, ve)
    t = a["p_mflx_tracer_v"]
    tv = (tnew * a["rhodz_now"] + p_dtime * (t[:, 1:] * a["deepatmo_divzl"]
                                             - t[:, :-1] * a["deepatmo_divzu"])) / ast2
    tv = inside(tv, base["tracer_new_vert"], cs, ce, vs, ve)
    up_f, low_f = a["p_face"][:, :-1], a["p_face"][:, 1:]
    lim = a["l_limit"] != 0
    q_up = np.where(lim, np.where(tv < np.minimum(up_f, low_f), tv,
                                  np.where(up_f > low_f, 3.0 * tv - 2.0 * low_f, up_f)), up_f)
    q_low = np.where(lim, np.where(tv < np.minimum(up_f, low_f), tv,
                                   np.where(up_f > low_f, low_f, 3.0 * tv - 2.0 * up_f)), low_f)
    face = np.array(base["p_face_copy"])
    face[cs:ce, vs] = a["p_tracer_now"][cs:ce, vs]
    face[cs:ce, ve] = a["p_tracer_now"][cs:ce, ve - 1]
    want = dict(rhodz_ast2=ast2, rhodz_ast3=inside(ast3, base["rhodz_ast3"], cs, ce, vs, ve),
                p_tracer_new=tnew, tracer_new_vert=tv,
                p_face_up=inside(q_up, base["p_face_up"], cs, ce, vs, ve),
                p_face_low=inside(q_low, base["p_face_low"], cs, ce, vs, ve),
                p_face_copy=face, p_cc_copy=tv)
    check(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_on_the_bottom_half_level(backend):
    # icon4py fills the lowest face of the PPM reconstruction from the cell above it.
    p_cc = RNG.standard_normal((NC, NLEV))
    p_face = f64(NC, NH)
    got = p_face.copy()
    _face_val_ppm_stencil_02c(p_cc, out=got, domain={CellDim: (1, NC - 2), KDim: (NLEV, NH)},
                              offset_provider=TABLES, backend=backend)
    want = p_face.copy()
    want[1:NC - 2, NLEV] = p_cc[1:NC - 2, NLEV - 1]
    np.testing.assert_array_equal(got, want)


# ================================================================== muphys thermodynamics
#
# icon4py's muphys thermodynamic helpers and the saturation adjustment.  icon4py
# passes the six water species as one dataclass ``Q``; here they are six fields.


class _ThermodynamicConsts:
    cvd = 717.60
    cvv = 1407.95
    clw = 4192.6641119999995
    rv = 461.51
    tmelt = 273.15


class _GraupelConsts:
    ci = 2108.0
    lvc = 3135383.2031928
    lsc = 2899657.201


t_d, g_ct = _ThermodynamicConsts, _GraupelConsts


@gtx.field_operator
def _T_from_internal_energy(
    u: fa.CellKField[ta.wpfloat], qv: fa.CellKField[ta.wpfloat],
    qliq: fa.CellKField[ta.wpfloat], qice: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat], dz: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    qtot = qliq + qice + qv
    cv = (t_d.cvd * (1.0 - qtot) + t_d.cvv * qv + t_d.clw * qliq + g_ct.ci * qice) * rho * dz
    return (u + rho * dz * (qliq * g_ct.lvc + qice * g_ct.lsc)) / cv


@gtx.field_operator
def _T_from_internal_energy_scalar(
    u: ta.wpfloat, qv: ta.wpfloat, qliq: ta.wpfloat, qice: ta.wpfloat, rho: ta.wpfloat,
    dz: ta.wpfloat,
) -> ta.wpfloat:
    qtot = qliq + qice + qv
    cv = (t_d.cvd * (1.0 - qtot) + t_d.cvv * qv + t_d.clw * qliq + g_ct.ci * qice) * rho * dz
    return (u + rho * dz * (qliq * g_ct.lvc + qice * g_ct.lsc)) / cv


@gtx.field_operator
def _internal_energy(
    t: fa.CellKField[ta.wpfloat], qv: fa.CellKField[ta.wpfloat],
    qliq: fa.CellKField[ta.wpfloat], qice: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat], dz: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    qtot = qliq + qice + qv
    cv = t_d.cvd * (1.0 - qtot) + t_d.cvv * qv + t_d.clw * qliq + g_ct.ci * qice
    return rho * dz * (cv * t - qliq * g_ct.lvc - qice * g_ct.lsc)


@gtx.field_operator
def _qsat_rho(t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
              ) -> fa.CellKField[ta.wpfloat]:
    C1ES = 610.78
    C3LES = 17.269
    C4LES = 35.86
    return (C1ES * exp(C3LES * (t - t_d.tmelt) / (t - C4LES))) / (rho * t_d.rv * t)


@gtx.field_operator
def _dqsatdT_rho(qs: fa.CellKField[ta.wpfloat], t: fa.CellKField[ta.wpfloat],
                 ) -> fa.CellKField[ta.wpfloat]:
    C3LES = 17.269
    C4LES = 35.86
    C5LES = C3LES * (t_d.tmelt - C4LES)
    return qs * (C5LES / ((t - C4LES) * (t - C4LES)) - 1.0 / t)


@gtx.field_operator
def _sat_pres_ice(t: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    C1ES = 610.78
    C3IES = 21.875
    C4IES = 7.66
    return C1ES * exp(C3IES * (t - t_d.tmelt) / (t - C4IES))


@gtx.field_operator
def _newton_raphson(
    Tx: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    qve: fa.CellKField[ta.wpfloat], qce: fa.CellKField[ta.wpfloat],
    cvc: fa.CellKField[ta.wpfloat], ue: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    qx = _qsat_rho(Tx, rho)
    dqx = _dqsatdT_rho(qx, Tx)
    qcx = qve + qce - qx
    cv = cvc + t_d.cvv * qx + t_d.clw * qcx
    ux = cv * Tx - qcx * g_ct.lvc
    dux = cv + dqx * (g_ct.lvc + (t_d.cvv - t_d.clw) * Tx)
    Tx = Tx - (ux - ue) / dux
    return Tx


@gtx.field_operator
def _saturation_adjustment(
    te: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    q_v: fa.CellKField[ta.wpfloat], q_c: fa.CellKField[ta.wpfloat],
    q_r: fa.CellKField[ta.wpfloat], q_s: fa.CellKField[ta.wpfloat],
    q_i: fa.CellKField[ta.wpfloat], q_g: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    qti = q_s + q_i + q_g
    qt = q_v + q_c + q_r + qti
    cvc = t_d.cvd * (1.0 - qt) + t_d.clw * q_r + g_ct.ci * qti
    cv = cvc + t_d.cvv * q_v + t_d.clw * q_c
    ue = cv * te - q_c * g_ct.lvc
    Tx_hold = ue / (cv + q_c * (t_d.cvv - t_d.clw))
    qx_hold = _qsat_rho(Tx_hold, rho)
    Tx = te
    Tx = _newton_raphson(Tx, rho, q_v, q_c, cvc, ue)
    Tx = _newton_raphson(Tx, rho, q_v, q_c, cvc, ue)
    Tx = _newton_raphson(Tx, rho, q_v, q_c, cvc, ue)
    Tx = _newton_raphson(Tx, rho, q_v, q_c, cvc, ue)
    Tx = _newton_raphson(Tx, rho, q_v, q_c, cvc, ue)
    Tx = _newton_raphson(Tx, rho, q_v, q_c, cvc, ue)
    qx = _qsat_rho(Tx, rho)
    mask = q_v + q_c <= qx_hold
    te = where(mask, Tx_hold, Tx)
    qce = where(mask, 0.0, maximum(q_v + q_c - qx, 0.0))
    qve = where(mask, q_v + q_c, qx)
    return te, qve, qce


@gtx.scan_operator(axis=KDim, forward=True, init=(0.0, 0.0))
def _accumulated_energy_temperature(
    state: tuple[float, float], u: float, qv: float, qliq: float, qice: float, rho: float,
    dz: float,
) -> tuple[float, float]:
    # A column harness for the scalar operator: the energy accumulated from the top.
    energy, _ = state
    energy = energy + u
    return energy, _T_from_internal_energy_scalar(energy, qv, qliq, qice, rho, dz)


@gtx.program
def muphys_thermodynamics(
    t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    dz: fa.CellKField[ta.wpfloat], q_v: fa.CellKField[ta.wpfloat],
    q_c: fa.CellKField[ta.wpfloat], q_r: fa.CellKField[ta.wpfloat],
    q_s: fa.CellKField[ta.wpfloat], q_i: fa.CellKField[ta.wpfloat],
    q_g: fa.CellKField[ta.wpfloat],
    energy: fa.CellKField[ta.wpfloat], t_back: fa.CellKField[ta.wpfloat],
    p_ice: fa.CellKField[ta.wpfloat], dqsat: fa.CellKField[ta.wpfloat],
    t_newton: fa.CellKField[ta.wpfloat], te_out: fa.CellKField[ta.wpfloat],
    qve_out: fa.CellKField[ta.wpfloat], qce_out: fa.CellKField[ta.wpfloat],
    energy_sum: fa.CellKField[ta.wpfloat], t_sum: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    d = {dims.CellDim: (horizontal_start, horizontal_end),
         dims.KDim: (vertical_start, vertical_end)}
    _internal_energy(t, q_v, q_c + q_r, q_s + q_i + q_g, rho, dz, out=energy, domain=d)
    _T_from_internal_energy(energy, q_v, q_c + q_r, q_s + q_i + q_g, rho, dz, out=t_back,
                            domain=d)
    _sat_pres_ice(t, out=p_ice, domain=d)
    _dqsatdT_rho(_qsat_rho(t, rho), t, out=dqsat, domain=d)
    _newton_raphson(t, rho, q_v, q_c, 0.9 * t_d.cvd + 0.0 * t, energy / (rho * dz),
                    out=t_newton, domain=d)
    _saturation_adjustment(t, rho, q_v, q_c, q_r, q_s, q_i, q_g,
                           out=(te_out, qve_out, qce_out), domain=d)
    _accumulated_energy_temperature(energy, q_v, q_c, q_i, rho, dz,
                                    out=(energy_sum, t_sum), domain=d)


def _np_qsat_rho(t, rho):
    return 610.78 * np.exp(17.269 * (t - 273.15) / (t - 35.86)) / (rho * 461.51 * t)


def _np_dqsatdT_rho(qs, t):
    return qs * (17.269 * (273.15 - 35.86) / ((t - 35.86) * (t - 35.86)) - 1.0 / t)


def _np_newton(tx, rho, qve, qce, cvc, ue):
    c = _ThermodynamicConsts
    qx = _np_qsat_rho(tx, rho)
    dqx = _np_dqsatdT_rho(qx, tx)
    qcx = qve + qce - qx
    cv = cvc + c.cvv * qx + c.clw * qcx
    ux = cv * tx - qcx * _GraupelConsts.lvc
    dux = cv + dqx * (_GraupelConsts.lvc + (c.cvv - c.clw) * tx)
    return tx - (ux - ue) / dux


@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV), (1, NC - 2, 3, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_muphys_thermodynamics(backend, bounds):
    hs, he, vs, ve = bounds
    shape = (NC, NLEV)
    a = dict(t=RNG.uniform(250.0, 300.0, shape), rho=RNG.uniform(0.5, 1.2, shape),
             dz=RNG.uniform(50.0, 200.0, shape), q_v=RNG.uniform(1e-3, 2e-2, shape),
             q_c=RNG.uniform(0.0, 2e-3, shape), q_r=RNG.uniform(0.0, 1e-3, shape),
             q_s=RNG.uniform(0.0, 1e-3, shape), q_i=RNG.uniform(0.0, 1e-3, shape),
             q_g=RNG.uniform(0.0, 1e-3, shape))
    outs = ("energy", "t_back", "p_ice", "dqsat", "t_newton", "te_out", "qve_out", "qce_out",
            "energy_sum", "t_sum")
    base = {n: f64(*shape) for n in outs}
    got = {n: v.copy() for n, v in base.items()}
    muphys_thermodynamics(**a, **got, horizontal_start=hs, horizontal_end=he,
                          vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                          backend=backend)

    c, g = _ThermodynamicConsts, _GraupelConsts
    t, rho, dz, qv, qc = a["t"], a["rho"], a["dz"], a["q_v"], a["q_c"]
    qliq, qice = qc + a["q_r"], a["q_s"] + a["q_i"] + a["q_g"]

    def cv_of(qv, qliq, qice):
        return c.cvd * (1.0 - (qliq + qice + qv)) + c.cvv * qv + c.clw * qliq + g.ci * qice

    energy = rho * dz * (cv_of(qv, qliq, qice) * t - qliq * g.lvc - qice * g.lsc)
    energy = inside(energy, base["energy"], hs, he, vs, ve)

    def t_of(u, qv, qliq, qice):
        return (u + rho * dz * (qliq * g.lvc + qice * g.lsc)) / (cv_of(qv, qliq, qice) * rho * dz)

    t_back = t_of(energy, qv, qliq, qice)
    p_ice = 610.78 * np.exp(21.875 * (t - 273.15) / (t - 7.66))
    dqsat = _np_dqsatdT_rho(_np_qsat_rho(t, rho), t)
    t_newton = _np_newton(t, rho, qv, qc, 0.9 * c.cvd, energy / (rho * dz))
    qti = a["q_s"] + a["q_i"] + a["q_g"]
    cvc = c.cvd * (1.0 - (qv + qc + a["q_r"] + qti)) + c.clw * a["q_r"] + g.ci * qti
    cv = cvc + c.cvv * qv + c.clw * qc
    ue = cv * t - qc * g.lvc
    tx_hold = ue / (cv + qc * (c.cvv - c.clw))
    tx = t
    for _ in range(6):
        tx = _np_newton(tx, rho, qv, qc, cvc, ue)
    qx = _np_qsat_rho(tx, rho)
    mask = qv + qc <= _np_qsat_rho(tx_hold, rho)
    esum = np.full(shape, np.nan)
    tsum = np.full(shape, np.nan)
    acc = np.zeros(NC)
    for k in range(vs, ve):
        acc = acc + energy[:, k]
        esum[:, k] = acc
    tsum[:, vs:ve] = t_of(esum, qv, qc, a["q_i"])[:, vs:ve]
    want = dict(energy=energy, t_back=t_back, p_ice=p_ice, dqsat=dqsat, t_newton=t_newton,
                te_out=np.where(mask, tx_hold, tx),
                qve_out=np.where(mask, qv + qc, qx),
                qce_out=np.where(mask, 0.0, np.maximum(qv + qc - qx, 0.0)),
                energy_sum=esum, t_sum=tsum)
    want = {n: inside(w, base[n], hs, he, vs, ve) for n, w in want.items()}
    check(got, want, rtol=1e-10, atol=1e-14)


# ================================================================== diffusion and metrics
#
# icon4py's fourth-order diffusion of vn, the copy to vpfloat, two metric
# fields, the CFL clipping of the contravariant vertical velocity and the
# zeroing of one level in two fields.


@gtx.field_operator
def _apply_nabla4_to_vn(
    area_edge: fa.EdgeField[wpfloat], z_nabla4_e2: fa.EdgeKField[vpfloat],
    diff_multfac_vn: fa.KField[wpfloat], vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    z_nabla4_e2_wp = astype(z_nabla4_e2, wpfloat)
    nabla4_term = diff_multfac_vn * z_nabla4_e2_wp * area_edge
    return vn - area_edge * nabla4_term


@gtx.field_operator
def _copy_edge_kdim_field_to_vp(field: fa.EdgeKField[wpfloat]) -> fa.EdgeKField[vpfloat]:
    return astype(field, vpfloat)


@gtx.field_operator
def _compute_exner_w_explicit_weight_parameter(
    exner_w_implicit_weight_parameter: fa.CellField[wpfloat],
) -> fa.CellField[wpfloat]:
    return 1.0 - exner_w_implicit_weight_parameter


@gtx.field_operator
def _compute_weighted_cell_neighbor_sum(
    field: fa.CellKField[wpfloat],
    c_bln_avg: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], wpfloat],
) -> fa.CellKField[wpfloat]:
    return neighbor_sum(field(C2E2CO) * c_bln_avg, axis=C2E2CODim)


@gtx.field_operator
def _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
    ddqz_z_half: fa.CellKField[ta.vpfloat], z_w_con_c: fa.CellKField[ta.vpfloat],
    cfl_w_limit: ta.vpfloat, dtime: ta.wpfloat,
) -> tuple[fa.CellKField[bool], fa.CellKField[ta.vpfloat], fa.CellKField[ta.vpfloat]]:
    z_w_con_c_wp, ddqz_z_half_wp = astype((z_w_con_c, ddqz_z_half), wpfloat)
    cfl_clipping = where(abs(z_w_con_c) > cfl_w_limit * ddqz_z_half,
                         broadcast(True, (dims.CellDim, dims.KDim)), False)
    vcfl = where(cfl_clipping, z_w_con_c_wp * dtime / ddqz_z_half_wp, wpfloat("0.0"))
    vcfl_vp = astype(vcfl, vpfloat)
    z_w_con_c_wp = where(cfl_clipping & (vcfl_vp < -vpfloat("0.85")),
                         astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime, z_w_con_c_wp)
    z_w_con_c_wp = where(cfl_clipping & (vcfl_vp > vpfloat("0.85")),
                         astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime, z_w_con_c_wp)
    return cfl_clipping, vcfl_vp, astype(z_w_con_c_wp, vpfloat)


@gtx.field_operator
def _init_two_cell_kdim_fields_index_with_zero_vp(
    field_index_with_zero_1: fa.CellKField[vpfloat],
    field_index_with_zero_2: fa.CellKField[vpfloat], k1: gtx.int32, k2: gtx.int32,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    field_index_with_zero_1 = concat_where(dims.KDim == k1, vpfloat("0.0"),
                                           field_index_with_zero_1)
    field_index_with_zero_2 = concat_where(dims.KDim == k2, vpfloat("0.0"),
                                           field_index_with_zero_2)
    return field_index_with_zero_1, field_index_with_zero_2


@gtx.program
def diffusion_and_metrics(
    area_edge: fa.EdgeField[wpfloat], z_nabla4_e2: fa.EdgeKField[vpfloat],
    diff_multfac_vn: fa.KField[wpfloat], vn: fa.EdgeKField[wpfloat],
    vn_vp: fa.EdgeKField[vpfloat], exner_w_implicit_weight_parameter: fa.CellField[wpfloat],
    exner_w_explicit_weight_parameter: fa.CellField[wpfloat],
    maxslp: fa.CellKField[wpfloat], maxhgtd: fa.CellKField[wpfloat],
    c_bln_avg: gtx.Field[gtx.Dims[dims.CellDim, C2E2CODim], wpfloat],
    maxslp_avg: fa.CellKField[wpfloat], maxhgtd_avg: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[vpfloat], z_w_con_c: fa.CellKField[vpfloat],
    cfl_clipping: fa.CellKField[bool], vcfl: fa.CellKField[vpfloat],
    cfl_w_limit: vpfloat, dtime: wpfloat,
    field_1: fa.CellKField[vpfloat], field_2: fa.CellKField[vpfloat],
    k1: gtx.int32, k2: gtx.int32,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    edges = {dims.EdgeDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_start, vertical_end)}
    cells = {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_start, vertical_end)}
    _apply_nabla4_to_vn(area_edge=area_edge, z_nabla4_e2=z_nabla4_e2,
                        diff_multfac_vn=diff_multfac_vn, vn=vn, out=vn, domain=edges)
    _copy_edge_kdim_field_to_vp(vn, out=vn_vp, domain=edges)
    _compute_exner_w_explicit_weight_parameter(
        exner_w_implicit_weight_parameter=exner_w_implicit_weight_parameter,
        out=exner_w_explicit_weight_parameter,
        domain={dims.CellDim: (horizontal_start, horizontal_end)})
    _compute_weighted_cell_neighbor_sum(field=maxslp, c_bln_avg=c_bln_avg, out=maxslp_avg,
                                        domain=cells)
    _compute_weighted_cell_neighbor_sum(field=maxhgtd, c_bln_avg=c_bln_avg, out=maxhgtd_avg,
                                        domain=cells)
    _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
        ddqz_z_half, z_w_con_c, cfl_w_limit, dtime, out=(cfl_clipping, vcfl, z_w_con_c),
        domain=cells)
    _init_two_cell_kdim_fields_index_with_zero_vp(field_1, field_2, k1, k2,
                                                  out=(field_1, field_2), domain=cells)


@pytest.mark.parametrize("levels", [(0, NLEV, 0, NLEV - 1), (2, NLEV - 2, 1, 4)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_and_metrics(backend, levels):
    hs, he = 1, NC - 1
    vs, ve, k1, k2 = levels
    c2e2co = TABLES["C2E2CO"]
    a = dict(area_edge=RNG.uniform(0.5, 2.0, NE), z_nabla4_e2=RNG.random((NE, NLEV), np.float32),
             diff_multfac_vn=f64(NLEV), exner_w_implicit_weight_parameter=f64(NC),
             maxslp=f64(NC, NLEV), maxhgtd=f64(NC, NLEV), c_bln_avg=f64(NC, 4),
             ddqz_z_half=RNG.uniform(0.5, 1.5, (NC, NLEV)).astype(np.float32))
    cfl_w_limit, dtime = np.float32(0.6), 2.0
    base = dict(vn=RNG.standard_normal((NE, NLEV)), vn_vp=RNG.random((NE, NLEV), np.float32),
                exner_w_explicit_weight_parameter=f64(NC), maxslp_avg=f64(NC, NLEV),
                maxhgtd_avg=f64(NC, NLEV),
                z_w_con_c=RNG.standard_normal((NC, NLEV)).astype(np.float32),
                cfl_clipping=RNG.random((NC, NLEV)) < 0.5,
                vcfl=RNG.random((NC, NLEV), np.float32),
                field_1=RNG.random((NC, NLEV), np.float32) + 1,
                field_2=RNG.random((NC, NLEV), np.float32) + 1)
    got = {n: v.copy() for n, v in base.items()}
    diffusion_and_metrics(**a, **got, cfl_w_limit=cfl_w_limit, dtime=dtime, k1=k1, k2=k2,
                          horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                          vertical_end=ve, offset_provider=TABLES, backend=backend)

    area = a["area_edge"][:, None]
    vn = base["vn"] - area * (a["diff_multfac_vn"] * a["z_nabla4_e2"].astype(np.float64) * area)
    vn = inside(vn, base["vn"], hs, he, vs, ve)
    w = a["c_bln_avg"][:, :, None]
    zc, dz = base["z_w_con_c"], a["ddqz_z_half"]
    clip = np.abs(zc) > cfl_w_limit * dz
    vcfl = np.where(clip, zc.astype(np.float64) * dtime / dz.astype(np.float64),
                    0.0).astype(np.float32)
    zw = zc.astype(np.float64)
    zw = np.where(clip & (vcfl < np.float32(-0.85)),
                  (np.float32(-0.85) * dz).astype(np.float64) / dtime, zw)
    zw = np.where(clip & (vcfl > np.float32(0.85)),
                  (np.float32(0.85) * dz).astype(np.float64) / dtime, zw)
    f1, f2 = base["field_1"].copy(), base["field_2"].copy()
    f1[:, k1] = 0.0
    f2[:, k2] = 0.0
    want = dict(vn=vn, vn_vp=inside(vn.astype(np.float32), base["vn_vp"], hs, he, vs, ve),
                exner_w_explicit_weight_parameter=inside(
                    1.0 - a["exner_w_implicit_weight_parameter"],
                    base["exner_w_explicit_weight_parameter"], hs, he),
                maxslp_avg=inside((a["maxslp"][c2e2co] * w).sum(axis=1), base["maxslp_avg"],
                                  hs, he, vs, ve),
                maxhgtd_avg=inside((a["maxhgtd"][c2e2co] * w).sum(axis=1), base["maxhgtd_avg"],
                                   hs, he, vs, ve),
                cfl_clipping=inside(clip, base["cfl_clipping"], hs, he, vs, ve),
                vcfl=inside(vcfl, base["vcfl"], hs, he, vs, ve),
                z_w_con_c=inside(zw.astype(np.float32), zc, hs, he, vs, ve),
                field_1=inside(f1, base["field_1"], hs, he, vs, ve),
                field_2=inside(f2, base["field_2"], hs, he, vs, ve))
    check(got, want, rtol=1e-6, atol=1e-7)


# ================================================================== horizontal velocity quantities
#
# icon4py's newer fused edge stencils of the nonhydro solver: the velocity
# quantities and fluxes (nine outputs, four of them through helper operators,
# the contravariant correction from a runtime ``nflatlev`` by ``concat_where``)
# and the averaged fluxes prepared for the tracer advection (two ``bool``
# scalars choosing tuples in nested conditional expressions).  The helpers
# are written here; icon4py's interpolation to half levels takes either
# precision, here a ``wpfloat`` interpolant.


@gtx.field_operator
def _spatially_average_flux_or_velocity_here(
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    return neighbor_sum(e_flx_avg * vn(E2C2EO), axis=E2C2EODim)


@gtx.field_operator
def _tangential_wind_here(
    vn: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> fa.EdgeKField[vpfloat]:
    return astype(neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim), vpfloat)


@gtx.field_operator
def _mass_and_temperature_flux_here(
    rho: fa.EdgeKField[wpfloat], vn_avg: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat], theta_v: fa.EdgeKField[wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    mass_fl_e = rho * vn_avg * astype(ddqz_z_full_e, wpfloat)
    return mass_fl_e, mass_fl_e * theta_v


@gtx.field_operator
def _kinetic_energy_here(vn: fa.EdgeKField[wpfloat], vt: fa.EdgeKField[vpfloat],
                         ) -> fa.EdgeKField[vpfloat]:
    vt_wp = astype(vt, wpfloat)
    return astype(0.5 * (vn * vn + vt_wp * vt_wp), vpfloat)


@gtx.field_operator
def _half_levels_here(wgtfac_e: fa.EdgeKField[vpfloat], interpolant: fa.EdgeKField[wpfloat],
                      ) -> fa.EdgeKField[vpfloat]:
    w = astype(wgtfac_e, wpfloat)
    return astype(w * interpolant + (1.0 - w) * interpolant(Koff[-1]), vpfloat)


@gtx.field_operator
def _contravariant_correction_here(
    vn: fa.EdgeKField[wpfloat], ddxn_z_full: fa.EdgeKField[vpfloat],
    ddxt_z_full: fa.EdgeKField[vpfloat], vt: fa.EdgeKField[vpfloat],
) -> fa.EdgeKField[vpfloat]:
    ddxn, ddxt, vt_wp = astype((ddxn_z_full, ddxt_z_full, vt), wpfloat)
    return astype(vn * ddxn + vt_wp * ddxt, vpfloat)


@gtx.field_operator
def _extrapolate_at_top_here(wgtfacq_e: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
                             ) -> fa.EdgeKField[vpfloat]:
    w1, w2, w3 = astype((wgtfacq_e(Koff[-1]), wgtfacq_e(Koff[-2]), wgtfacq_e(Koff[-3])),
                        wpfloat)
    return astype(w1 * vn(Koff[-1]) + w2 * vn(Koff[-2]) + w3 * vn(Koff[-3]), vpfloat)


@gtx.field_operator
def _accumulate_here(
    z_vn_avg: fa.EdgeKField[wpfloat], mass_fl_e: fa.EdgeKField[wpfloat],
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat], r_nsubsteps: wpfloat,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    return vn_traj + r_nsubsteps * z_vn_avg, mass_flx_me + r_nsubsteps * mass_fl_e


@gtx.field_operator
def _compute_horizontal_velocity_quantities_and_fluxes(
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    rho_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat], ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat], wgtfac_e: fa.EdgeKField[ta.vpfloat],
    nflatlev: gtx.int32,
) -> tuple[fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat],
           fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.vpfloat],
           fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat]]:
    spatially_averaged_vn = _spatially_average_flux_or_velocity_here(e_flx_avg=e_flx_avg, vn=vn)
    horizontal_gradient_of_normal_wind_divergence = astype(
        neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim), vpfloat)
    tangential_wind = _tangential_wind_here(vn=vn, rbf_vec_coeff_e=rbf_vec_coeff_e)
    mass_flux, theta_v_flux = _mass_and_temperature_flux_here(
        rho_at_edges_on_model_levels, spatially_averaged_vn, ddqz_z_full_e,
        theta_v_at_edges_on_model_levels)
    kinetic_energy = _kinetic_energy_here(vn, tangential_wind)
    vn_on_half_levels = _half_levels_here(wgtfac_e, vn)
    tangential_wind_on_half_levels = _half_levels_here(wgtfac_e, astype(tangential_wind,
                                                                        wpfloat))
    contravariant_correction_at_edges_on_model_levels = concat_where(
        nflatlev <= dims.KDim,
        _contravariant_correction_here(vn, ddxn_z_full, ddxt_z_full, tangential_wind),
        contravariant_correction_at_edges_on_model_levels)
    return (spatially_averaged_vn, horizontal_gradient_of_normal_wind_divergence,
            tangential_wind, mass_flux, theta_v_flux, vn_on_half_levels,
            tangential_wind_on_half_levels, kinetic_energy,
            contravariant_correction_at_edges_on_model_levels)


@gtx.field_operator
def _compute_averaged_vn_and_fluxes_and_prepare_tracer_advection(
    substep_and_spatially_averaged_vn: fa.EdgeKField[ta.wpfloat],
    substep_averaged_mass_flux: fa.EdgeKField[ta.wpfloat],
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    vn: fa.EdgeKField[ta.wpfloat], rho_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat],
    theta_v_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    prepare_advection: bool, at_first_substep: bool, r_nsubsteps: ta.wpfloat,
) -> tuple[fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.wpfloat],
           fa.EdgeKField[ta.wpfloat], fa.EdgeKField[ta.wpfloat]]:
    spatially_averaged_vn = _spatially_average_flux_or_velocity_here(e_flx_avg, vn)
    mass_flux, theta_v_flux = _mass_and_temperature_flux_here(
        rho_at_edges_on_model_levels, spatially_averaged_vn, ddqz_z_full_e,
        theta_v_at_edges_on_model_levels)
    substep_and_spatially_averaged_vn, substep_averaged_mass_flux = (
        ((r_nsubsteps * spatially_averaged_vn, r_nsubsteps * mass_flux)
         if at_first_substep
         else _accumulate_here(spatially_averaged_vn, mass_flux,
                               substep_and_spatially_averaged_vn, substep_averaged_mass_flux,
                               r_nsubsteps))
        if prepare_advection
        else (substep_and_spatially_averaged_vn, substep_averaged_mass_flux))
    return (spatially_averaged_vn, mass_flux, theta_v_flux, substep_and_spatially_averaged_vn,
            substep_averaged_mass_flux)


@gtx.program
def horizontal_velocity_quantities(
    spatially_averaged_vn: fa.EdgeKField[ta.wpfloat],
    horizontal_gradient_of_normal_wind_divergence: fa.EdgeKField[ta.vpfloat],
    tangential_wind: fa.EdgeKField[ta.vpfloat],
    mass_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_flux_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    tangential_wind_on_half_levels: fa.EdgeKField[ta.vpfloat],
    vn_on_half_levels: fa.EdgeKField[ta.vpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    vn: fa.EdgeKField[ta.wpfloat],
    e_flx_avg: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    geofac_grdiv: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EODim], ta.wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], ta.wpfloat],
    rho_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    theta_v_at_edges_on_model_levels: fa.EdgeKField[ta.wpfloat],
    ddqz_z_full_e: fa.EdgeKField[ta.vpfloat], ddxn_z_full: fa.EdgeKField[ta.vpfloat],
    ddxt_z_full: fa.EdgeKField[ta.vpfloat], wgtfac_e: fa.EdgeKField[ta.vpfloat],
    wgtfacq_e: fa.EdgeKField[ta.vpfloat], nflatlev: gtx.int32,
    avg_vn_2: fa.EdgeKField[ta.wpfloat], mass_flux_2: fa.EdgeKField[ta.wpfloat],
    theta_v_flux_2: fa.EdgeKField[ta.wpfloat],
    substep_and_spatially_averaged_vn: fa.EdgeKField[ta.wpfloat],
    substep_averaged_mass_flux: fa.EdgeKField[ta.wpfloat],
    prepare_advection: bool, at_first_substep: bool, r_nsubsteps: ta.wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_horizontal_velocity_quantities_and_fluxes(
        contravariant_correction_at_edges_on_model_levels, vn, e_flx_avg, geofac_grdiv,
        rbf_vec_coeff_e, rho_at_edges_on_model_levels, theta_v_at_edges_on_model_levels,
        ddqz_z_full_e, ddxn_z_full, ddxt_z_full, wgtfac_e, nflatlev,
        out=(spatially_averaged_vn, horizontal_gradient_of_normal_wind_divergence,
             tangential_wind, mass_flux_at_edges_on_model_levels,
             theta_v_flux_at_edges_on_model_levels, vn_on_half_levels,
             tangential_wind_on_half_levels, horizontal_kinetic_energy_at_edges_on_model_levels,
             contravariant_correction_at_edges_on_model_levels),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _extrapolate_at_top_here(wgtfacq_e, vn, out=vn_on_half_levels,
                             domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                                     dims.KDim: (vertical_end - 1, vertical_end)})
    _compute_averaged_vn_and_fluxes_and_prepare_tracer_advection(
        substep_and_spatially_averaged_vn, substep_averaged_mass_flux, e_flx_avg, vn,
        rho_at_edges_on_model_levels, ddqz_z_full_e, theta_v_at_edges_on_model_levels,
        prepare_advection, at_first_substep, r_nsubsteps,
        out=(avg_vn_2, mass_flux_2, theta_v_flux_2, substep_and_spatially_averaged_vn,
             substep_averaged_mass_flux),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})


@pytest.mark.parametrize(("prepare", "first"), [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_horizontal_velocity_quantities(backend, prepare, first):
    # The half-level interpolation reads one level up: the levels start at 1.
    hs, he, vs, ve, nflatlev, r_n = 1, NE - 2, 1, NH, 4, 0.25
    e2c2e, e2c2eo = TABLES["E2C2E"], TABLES["E2C2EO"]
    s = (NE, NLEV)
    a = dict(vn=RNG.standard_normal(s), e_flx_avg=f64(NE, 5), geofac_grdiv=f64(NE, 5),
             rbf_vec_coeff_e=f64(NE, 4), rho_at_edges_on_model_levels=f64(*s) + 0.5,
             theta_v_at_edges_on_model_levels=f64(*s) + 1.0,
             ddqz_z_full_e=RNG.random(s, np.float32) + 0.5,
             ddxn_z_full=RNG.random(s, np.float32), ddxt_z_full=RNG.random(s, np.float32),
             wgtfac_e=RNG.random((NE, NH), np.float32),
             wgtfacq_e=RNG.random((NE, NLEV), np.float32))
    wp_out = ("spatially_averaged_vn", "mass_flux_at_edges_on_model_levels",
              "theta_v_flux_at_edges_on_model_levels", "avg_vn_2", "mass_flux_2",
              "theta_v_flux_2", "substep_and_spatially_averaged_vn",
              "substep_averaged_mass_flux")
    vp_out = ("horizontal_gradient_of_normal_wind_divergence", "tangential_wind",
              "horizontal_kinetic_energy_at_edges_on_model_levels",
              "contravariant_correction_at_edges_on_model_levels")
    base = {n: f64(*s) for n in wp_out}
    base |= {n: RNG.random(s, np.float32) for n in vp_out}
    base |= {n: RNG.random((NE, NH), np.float32)
             for n in ("tangential_wind_on_half_levels", "vn_on_half_levels")}
    got = {n: v.copy() for n, v in base.items()}
    horizontal_velocity_quantities(
        **a, **got, nflatlev=nflatlev, prepare_advection=prepare, at_first_substep=first,
        r_nsubsteps=r_n, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, offset_provider=TABLES, backend=backend)

    vn = a["vn"]
    avg = (a["e_flx_avg"][:, :, None] * vn[e2c2eo]).sum(axis=1)
    grdiv = (a["geofac_grdiv"][:, :, None] * vn[e2c2eo]).sum(axis=1).astype(np.float32)
    vt = (a["rbf_vec_coeff_e"][:, :, None] * vn[e2c2e]).sum(axis=1).astype(np.float32)
    mass = a["rho_at_edges_on_model_levels"] * avg * a["ddqz_z_full_e"].astype(np.float64)
    theta = mass * a["theta_v_at_edges_on_model_levels"]
    vt64 = vt.astype(np.float64)
    ekin = (0.5 * (vn * vn + vt64 * vt64)).astype(np.float32)
    w = a["wgtfac_e"].astype(np.float64)[:, :NLEV]

    def half(x):
        out = np.full((NE, NH), np.nan)
        out[:, 1:NLEV] = (w * x)[:, 1:] + ((1.0 - w)[:, 1:] * x[:, :-1])
        return out.astype(np.float32)

    vn_half, vt_half = half(vn), half(vt64)
    wq = a["wgtfacq_e"].astype(np.float64)
    vn_half[:, NLEV] = (wq[:, -1] * vn[:, -1] + wq[:, -2] * vn[:, -2]
                        + wq[:, -3] * vn[:, -3]).astype(np.float32)
    corr = np.array(base["contravariant_correction_at_edges_on_model_levels"])
    corr[:, nflatlev:] = (vn * a["ddxn_z_full"].astype(np.float64)
                          + vt64 * a["ddxt_z_full"].astype(np.float64)
                          ).astype(np.float32)[:, nflatlev:]
    traj, mflx = base["substep_and_spatially_averaged_vn"], base["substep_averaged_mass_flux"]
    if prepare:
        traj, mflx = ((r_n * avg, r_n * mass) if first
                      else (traj + r_n * avg, mflx + r_n * mass))
    full = dict(spatially_averaged_vn=avg, horizontal_gradient_of_normal_wind_divergence=grdiv,
                tangential_wind=vt, mass_flux_at_edges_on_model_levels=mass,
                theta_v_flux_at_edges_on_model_levels=theta,
                horizontal_kinetic_energy_at_edges_on_model_levels=ekin,
                contravariant_correction_at_edges_on_model_levels=corr, avg_vn_2=avg,
                mass_flux_2=mass, theta_v_flux_2=theta,
                substep_and_spatially_averaged_vn=traj, substep_averaged_mass_flux=mflx)
    want = {n: inside(v, base[n], hs, he, vs, NLEV) for n, v in full.items()}
    want["vn_on_half_levels"] = inside(vn_half, base["vn_on_half_levels"], hs, he, vs, NH)
    want["tangential_wind_on_half_levels"] = inside(
        vt_half, base["tangential_wind_on_half_levels"], hs, he, vs, NLEV)
    check(got, want, rtol=2e-6, atol=1e-6)


# ================================================================== perturbed quantities at cells
#
# icon4py's newer fused cell stencils of the nonhydro predictor: the temporal
# extrapolation of the Exner pressure, the surface level (an operator without
# arguments chosen by ``concat_where`` over a cell range, the surface
# interpolation reading the chosen field three levels up) and the perturbed
# quantities (``concat_where`` over cell ranges choosing tuples, one condition
# combining a cell range with ``maximum(1, nflatlev) <= KDim``, a ``bool`` and
# an ``int32`` scalar choosing in conditional expressions, a helper of six
# outputs built from ``concat_where`` on ``KDim == 0`` and ``KDim >= 1``).
# All fields here are ``float`` with NLEV + 1 levels, as icon4py allocates them.


class _HorizontalPressureDiscretizationType:
    TAYLOR_HYDRO = 3


horzpres_discr_type = _HorizontalPressureDiscretizationType()


@gtx.field_operator
def _extrapolate_temporally_exner_pressure(
    exner_exfac: fa.CellKField[float], exner: fa.CellKField[float],
    exner_ref_mc: fa.CellKField[float], exner_pr: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float]]:
    z_exner_ex_pr = (1.0 + exner_exfac) * (exner - exner_ref_mc) - exner_exfac * exner_pr
    return z_exner_ex_pr, exner - exner_ref_mc


@gtx.field_operator
def _init_cell_kdim_field_with_zero_wp() -> fa.CellKField[float]:
    return broadcast(0.0, (dims.CellDim, dims.KDim))


@gtx.field_operator
def _init_two_cell_kdim_fields_with_zero_vp() -> tuple[fa.CellKField[float],
                                                       fa.CellKField[float]]:
    return broadcast(0.0, (dims.CellDim, dims.KDim)), broadcast(0.0, (dims.CellDim, dims.KDim))


@gtx.field_operator
def _interpolate_to_surface(wgtfacq_c: fa.CellKField[float], interpolant: fa.CellKField[float],
                            ) -> fa.CellKField[float]:
    return (wgtfacq_c(Koff[-1]) * interpolant(Koff[-1])
            + wgtfacq_c(Koff[-2]) * interpolant(Koff[-2])
            + wgtfacq_c(Koff[-3]) * interpolant(Koff[-3]))


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_vp(
    wgtfac_c: fa.CellKField[float], interpolant: fa.CellKField[float],
) -> fa.CellKField[float]:
    return wgtfac_c * interpolant + (1.0 - wgtfac_c) * interpolant(Koff[-1])


@gtx.field_operator
def _compute_perturbation_of_rho_and_theta(
    rho: fa.CellKField[float], rho_ref_mc: fa.CellKField[float],
    theta_v: fa.CellKField[float], theta_ref_mc: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float]]:
    return rho - rho_ref_mc, theta_v - theta_ref_mc


@gtx.field_operator
def _compute_perturbation_of_rho_and_theta_and_rho_interface_cell_centers(
    wgtfac_c: fa.CellKField[float], rho: fa.CellKField[float],
    rho_ref_mc: fa.CellKField[float], theta_v: fa.CellKField[float],
    theta_ref_mc: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float]]:
    rho_ic = wgtfac_c * rho + (1.0 - wgtfac_c) * rho(Koff[-1])
    z_rth_pr_1, z_rth_pr_2 = _compute_perturbation_of_rho_and_theta(rho, rho_ref_mc, theta_v,
                                                                    theta_ref_mc)
    return rho_ic, z_rth_pr_1, z_rth_pr_2


@gtx.field_operator
def _compute_virtual_potential_temperatures_and_pressure_gradient(
    wgtfac_c: fa.CellKField[float], z_rth_pr_2: fa.CellKField[float],
    theta_v: fa.CellKField[float], vwind_expl_wgt: fa.CellField[float],
    exner_pr: fa.CellKField[float], d_exner_dz_ref_ic: fa.CellKField[float],
    ddqz_z_half: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float]]:
    z_theta_v_pr_ic = wgtfac_c * z_rth_pr_2 + (1.0 - wgtfac_c) * z_rth_pr_2(Koff[-1])
    theta_v_ic = wgtfac_c * theta_v + (1.0 - wgtfac_c) * theta_v(Koff[-1])
    z_th_ddz_exner_c = (vwind_expl_wgt * theta_v_ic * (exner_pr(Koff[-1]) - exner_pr)
                        / ddqz_z_half + z_theta_v_pr_ic * d_exner_dz_ref_ic)
    return z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c


@gtx.field_operator
def _compute_pressure_gradient_and_perturbed_rho_and_potential_temperatures(
    rho: fa.CellKField[float], z_rth_pr_1: fa.CellKField[float],
    z_rth_pr_2: fa.CellKField[float], rho_ref_mc: fa.CellKField[float],
    theta_v: fa.CellKField[float], theta_ref_mc: fa.CellKField[float],
    rho_ic: fa.CellKField[float], wgtfac_c: fa.CellKField[float],
    vwind_expl_wgt: fa.CellField[float], exner_pr: fa.CellKField[float],
    d_exner_dz_ref_ic: fa.CellKField[float], ddqz_z_half: fa.CellKField[float],
    z_theta_v_pr_ic: fa.CellKField[float], theta_v_ic: fa.CellKField[float],
    z_th_ddz_exner_c: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float],
           fa.CellKField[float], fa.CellKField[float], fa.CellKField[float]]:
    (z_rth_pr_1, z_rth_pr_2) = concat_where(
        dims.KDim == 0,
        _compute_perturbation_of_rho_and_theta(rho, rho_ref_mc, theta_v, theta_ref_mc),
        (z_rth_pr_1, z_rth_pr_2))
    (rho_ic, z_rth_pr_1, z_rth_pr_2) = concat_where(
        dims.KDim >= 1,
        _compute_perturbation_of_rho_and_theta_and_rho_interface_cell_centers(
            wgtfac_c, rho, rho_ref_mc, theta_v, theta_ref_mc),
        (rho_ic, z_rth_pr_1, z_rth_pr_2))
    (z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c) = concat_where(
        dims.KDim >= 1,
        _compute_virtual_potential_temperatures_and_pressure_gradient(
            wgtfac_c, z_rth_pr_2, theta_v, vwind_expl_wgt, exner_pr, d_exner_dz_ref_ic,
            ddqz_z_half),
        (z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c))
    return z_rth_pr_1, z_rth_pr_2, rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c


@gtx.field_operator
def _compute_perturbed_quantities_and_interpolation(
    current_rho: fa.CellKField[float], reference_rho_at_cells_on_model_levels: fa.CellKField[float],
    current_theta_v: fa.CellKField[float],
    reference_theta_at_cells_on_model_levels: fa.CellKField[float],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[float],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[float],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[float],
    wgtfac_c: fa.CellKField[float], exner_w_explicit_weight_parameter: fa.CellField[float],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[float],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[float],
    ddqz_z_half: fa.CellKField[float],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[float],
    rho_at_cells_on_half_levels: fa.CellKField[float],
    exner_at_cells_on_half_levels: fa.CellKField[float],
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[float],
    theta_v_at_cells_on_half_levels: fa.CellKField[float],
    limited_area: bool, igradp_method: gtx.int32, nflatlev: gtx.int32,
    start_cell_lateral_boundary: gtx.int32, start_cell_lateral_boundary_level_3: gtx.int32,
    start_cell_halo_level_2: gtx.int32, end_cell_end: gtx.int32, end_cell_halo: gtx.int32,
    end_cell_halo_level_2: gtx.int32,
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float],
           fa.CellKField[float], fa.CellKField[float], fa.CellKField[float],
           fa.CellKField[float], fa.CellKField[float], fa.CellKField[float]]:
    (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels) = (
        concat_where(
            (start_cell_lateral_boundary <= dims.CellDim) & (dims.CellDim < end_cell_end),
            _init_two_cell_kdim_fields_with_zero_vp(),
            (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels))
        if limited_area
        else (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels))
    exner_at_cells_on_half_levels = (
        concat_where(
            (start_cell_lateral_boundary_level_3 <= dims.CellDim) & (dims.CellDim < end_cell_halo)
            & (maximum(1, nflatlev) <= dims.KDim),
            _interpolate_cell_field_to_half_levels_vp(
                wgtfac_c=wgtfac_c, interpolant=temporal_extrapolation_of_perturbed_exner),
            exner_at_cells_on_half_levels)
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else exner_at_cells_on_half_levels)
    (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels,
     rho_at_cells_on_half_levels, perturbed_theta_v_at_cells_on_half_levels,
     theta_v_at_cells_on_half_levels,
     pressure_buoyancy_acceleration_at_cells_on_half_levels) = concat_where(
        (start_cell_lateral_boundary_level_3 <= dims.CellDim) & (dims.CellDim < end_cell_halo),
        _compute_pressure_gradient_and_perturbed_rho_and_potential_temperatures(
            rho=current_rho, z_rth_pr_1=perturbed_rho_at_cells_on_model_levels,
            z_rth_pr_2=perturbed_theta_v_at_cells_on_model_levels,
            rho_ref_mc=reference_rho_at_cells_on_model_levels, theta_v=current_theta_v,
            theta_ref_mc=reference_theta_at_cells_on_model_levels,
            rho_ic=rho_at_cells_on_half_levels, wgtfac_c=wgtfac_c,
            vwind_expl_wgt=exner_w_explicit_weight_parameter,
            exner_pr=perturbed_exner_at_cells_on_model_levels,
            d_exner_dz_ref_ic=ddz_of_reference_exner_at_cells_on_half_levels,
            ddqz_z_half=ddqz_z_half, z_theta_v_pr_ic=perturbed_theta_v_at_cells_on_half_levels,
            theta_v_ic=theta_v_at_cells_on_half_levels,
            z_th_ddz_exner_c=pressure_buoyancy_acceleration_at_cells_on_half_levels),
        (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels,
         rho_at_cells_on_half_levels, perturbed_theta_v_at_cells_on_half_levels,
         theta_v_at_cells_on_half_levels,
         pressure_buoyancy_acceleration_at_cells_on_half_levels))
    perturbed_theta_v_at_cells_on_half_levels = concat_where(
        dims.KDim == 0, broadcast(0.0, (dims.CellDim, dims.KDim)),
        perturbed_theta_v_at_cells_on_half_levels)
    (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels) = (
        concat_where(
            (start_cell_halo_level_2 <= dims.CellDim) & (dims.CellDim < end_cell_halo_level_2),
            _compute_perturbation_of_rho_and_theta(
                rho=current_rho, rho_ref_mc=reference_rho_at_cells_on_model_levels,
                theta_v=current_theta_v, theta_ref_mc=reference_theta_at_cells_on_model_levels),
            (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels)))
    return (perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels,
            temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels,
            rho_at_cells_on_half_levels, exner_at_cells_on_half_levels,
            perturbed_theta_v_at_cells_on_half_levels, theta_v_at_cells_on_half_levels,
            pressure_buoyancy_acceleration_at_cells_on_half_levels)


@gtx.field_operator
def _surface_computations(
    wgtfacq_c: fa.CellKField[float], exner_at_cells_on_half_levels: fa.CellKField[float],
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[float],
    igradp_method: gtx.int32, start_cell_lateral_boundary_level_3: gtx.int32,
    end_cell_halo: gtx.int32,
) -> tuple[fa.CellKField[float], fa.CellKField[float]]:
    temporal_extrapolation_of_perturbed_exner = concat_where(
        (start_cell_lateral_boundary_level_3 <= dims.CellDim) & (dims.CellDim < end_cell_halo),
        _init_cell_kdim_field_with_zero_wp(), temporal_extrapolation_of_perturbed_exner)
    exner_at_cells_on_half_levels = (
        concat_where(
            (start_cell_lateral_boundary_level_3 <= dims.CellDim) & (dims.CellDim < end_cell_halo),
            _interpolate_to_surface(wgtfacq_c=wgtfacq_c,
                                    interpolant=temporal_extrapolation_of_perturbed_exner),
            exner_at_cells_on_half_levels)
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else exner_at_cells_on_half_levels)
    return temporal_extrapolation_of_perturbed_exner, exner_at_cells_on_half_levels


@gtx.program
def perturbed_quantities_at_cells(
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[float],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[float],
    exner_at_cells_on_half_levels: fa.CellKField[float],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[float],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[float],
    rho_at_cells_on_half_levels: fa.CellKField[float],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[float],
    theta_v_at_cells_on_half_levels: fa.CellKField[float],
    current_rho: fa.CellKField[float], reference_rho_at_cells_on_model_levels: fa.CellKField[float],
    current_theta_v: fa.CellKField[float],
    reference_theta_at_cells_on_model_levels: fa.CellKField[float],
    wgtfacq_c: fa.CellKField[float], wgtfac_c: fa.CellKField[float],
    exner_w_explicit_weight_parameter: fa.CellField[float],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[float],
    ddqz_z_half: fa.CellKField[float],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[float],
    time_extrapolation_parameter_for_exner: fa.CellKField[float],
    current_exner: fa.CellKField[float],
    reference_exner_at_cells_on_model_levels: fa.CellKField[float],
    limited_area: bool, igradp_method: gtx.int32, nflatlev: gtx.int32,
    start_cell_lateral_boundary: gtx.int32, start_cell_lateral_boundary_level_3: gtx.int32,
    start_cell_halo_level_2: gtx.int32, end_cell_end: gtx.int32, end_cell_halo: gtx.int32,
    end_cell_halo_level_2: gtx.int32, horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _extrapolate_temporally_exner_pressure(
        exner_exfac=time_extrapolation_parameter_for_exner, exner=current_exner,
        exner_ref_mc=reference_exner_at_cells_on_model_levels,
        exner_pr=perturbed_exner_at_cells_on_model_levels,
        out=(temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels),
        domain={dims.CellDim: (start_cell_lateral_boundary_level_3, end_cell_halo),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _surface_computations(
        wgtfacq_c=wgtfacq_c, exner_at_cells_on_half_levels=exner_at_cells_on_half_levels,
        temporal_extrapolation_of_perturbed_exner=temporal_extrapolation_of_perturbed_exner,
        igradp_method=igradp_method,
        start_cell_lateral_boundary_level_3=start_cell_lateral_boundary_level_3,
        end_cell_halo=end_cell_halo,
        out=(temporal_extrapolation_of_perturbed_exner, exner_at_cells_on_half_levels),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_end - 1, vertical_end)})
    _compute_perturbed_quantities_and_interpolation(
        current_rho=current_rho,
        reference_rho_at_cells_on_model_levels=reference_rho_at_cells_on_model_levels,
        current_theta_v=current_theta_v,
        reference_theta_at_cells_on_model_levels=reference_theta_at_cells_on_model_levels,
        perturbed_rho_at_cells_on_model_levels=perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels=perturbed_theta_v_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_half_levels=perturbed_theta_v_at_cells_on_half_levels,
        wgtfac_c=wgtfac_c, exner_w_explicit_weight_parameter=exner_w_explicit_weight_parameter,
        perturbed_exner_at_cells_on_model_levels=perturbed_exner_at_cells_on_model_levels,
        ddz_of_reference_exner_at_cells_on_half_levels=(
            ddz_of_reference_exner_at_cells_on_half_levels),
        ddqz_z_half=ddqz_z_half,
        pressure_buoyancy_acceleration_at_cells_on_half_levels=(
            pressure_buoyancy_acceleration_at_cells_on_half_levels),
        rho_at_cells_on_half_levels=rho_at_cells_on_half_levels,
        exner_at_cells_on_half_levels=exner_at_cells_on_half_levels,
        temporal_extrapolation_of_perturbed_exner=temporal_extrapolation_of_perturbed_exner,
        theta_v_at_cells_on_half_levels=theta_v_at_cells_on_half_levels,
        limited_area=limited_area, igradp_method=igradp_method, nflatlev=nflatlev,
        start_cell_lateral_boundary=start_cell_lateral_boundary,
        start_cell_lateral_boundary_level_3=start_cell_lateral_boundary_level_3,
        start_cell_halo_level_2=start_cell_halo_level_2, end_cell_end=end_cell_end,
        end_cell_halo=end_cell_halo, end_cell_halo_level_2=end_cell_halo_level_2,
        out=(perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels,
             temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels,
             rho_at_cells_on_half_levels, exner_at_cells_on_half_levels,
             perturbed_theta_v_at_cells_on_half_levels, theta_v_at_cells_on_half_levels,
             pressure_buoyancy_acceleration_at_cells_on_half_levels),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})


@pytest.mark.parametrize(("limited_area", "igradp_method", "vs"),
                         [(True, 3, 0), (False, 3, 1), (True, 2, 0)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_perturbed_quantities_at_cells(backend, limited_area, igradp_method, vs):
    hs, he, ve, nflatlev = 0, NC, NH, 3
    lb, lb3, h2, e_end, e_halo, e_h2 = 1, 2, 4, 6, 5, 7
    s = (NC, NH)
    ins = dict(current_rho=f64(*s) + 1.0, reference_rho_at_cells_on_model_levels=f64(*s),
               current_theta_v=f64(*s) + 2.0, reference_theta_at_cells_on_model_levels=f64(*s),
               wgtfacq_c=f64(*s), wgtfac_c=f64(*s), exner_w_explicit_weight_parameter=f64(NC),
               ddz_of_reference_exner_at_cells_on_half_levels=f64(*s),
               ddqz_z_half=f64(*s) + 0.5, time_extrapolation_parameter_for_exner=f64(*s),
               current_exner=f64(*s), reference_exner_at_cells_on_model_levels=f64(*s))
    names = ("temporal_extrapolation_of_perturbed_exner",
             "perturbed_exner_at_cells_on_model_levels", "exner_at_cells_on_half_levels",
             "perturbed_rho_at_cells_on_model_levels",
             "perturbed_theta_v_at_cells_on_model_levels", "rho_at_cells_on_half_levels",
             "perturbed_theta_v_at_cells_on_half_levels", "theta_v_at_cells_on_half_levels",
             "pressure_buoyancy_acceleration_at_cells_on_half_levels")
    base = {n: f64(*s) for n in names}
    got = {n: v.copy() for n, v in base.items()}
    perturbed_quantities_at_cells(
        **ins, **got, limited_area=limited_area, igradp_method=igradp_method, nflatlev=nflatlev,
        start_cell_lateral_boundary=lb, start_cell_lateral_boundary_level_3=lb3,
        start_cell_halo_level_2=h2, end_cell_end=e_end, end_cell_halo=e_halo,
        end_cell_halo_level_2=e_h2, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, offset_provider=TABLES, backend=backend)

    g = types.SimpleNamespace(**ins)
    o = types.SimpleNamespace(**{n: v.copy() for n, v in base.items()})
    taylor = igradp_method == 3
    # the temporal extrapolation on cells lb3:e_halo, levels vs:NLEV
    exfac, pr_now = g.time_extrapolation_parameter_for_exner, g.current_exner - \
        g.reference_exner_at_cells_on_model_levels
    tex = (1.0 + exfac) * pr_now - exfac * o.perturbed_exner_at_cells_on_model_levels
    for name, v in (("temporal_extrapolation_of_perturbed_exner", tex),
                    ("perturbed_exner_at_cells_on_model_levels", pr_now)):
        setattr(o, name, inside(v, getattr(o, name), lb3, e_halo, vs, NLEV))
    # the surface level NLEV on all cells
    tex_in = o.temporal_extrapolation_of_perturbed_exner
    tex_chosen = tex_in.copy()
    tex_chosen[lb3:e_halo] = 0.0
    wq = g.wgtfacq_c
    surf = sum(wq[:, NLEV - j] * tex_chosen[:, NLEV - j] for j in (1, 2, 3))
    o.temporal_extrapolation_of_perturbed_exner = tex_chosen.copy()
    o.temporal_extrapolation_of_perturbed_exner[:, :NLEV] = tex_in[:, :NLEV]
    if taylor:   # the chosen extrapolation is zero on those cells, at every level
        o.exner_at_cells_on_half_levels[lb3:e_halo, NLEV] = surf[lb3:e_halo]
    # the perturbed quantities on levels vs:NLEV, every cell
    pr, pth = o.perturbed_rho_at_cells_on_model_levels.copy(), \
        o.perturbed_theta_v_at_cells_on_model_levels.copy()
    if limited_area:
        pr[lb:e_end], pth[lb:e_end] = 0.0, 0.0
    exner_ic = o.exner_at_cells_on_half_levels.copy()
    w = g.wgtfac_c
    tex2 = o.temporal_extrapolation_of_perturbed_exner
    if taylor:
        k0 = max(1, nflatlev)
        exner_ic[lb3:e_halo, k0:] = (w * tex2 + (1.0 - w) * np.roll(tex2, 1, axis=1))[
            lb3:e_halo, k0:]
    rho, theta = g.current_rho, g.current_theta_v
    p_rho = rho - g.reference_rho_at_cells_on_model_levels
    p_th = theta - g.reference_theta_at_cells_on_model_levels

    def up(x):
        return np.roll(x, 1, axis=1)

    rho_ic = o.rho_at_cells_on_half_levels.copy()
    th_pr_ic = o.perturbed_theta_v_at_cells_on_half_levels.copy()
    th_ic = o.theta_v_at_cells_on_half_levels.copy()
    ddz = o.pressure_buoyancy_acceleration_at_cells_on_half_levels.copy()
    c = slice(lb3, e_halo)
    pr[c], pth[c] = p_rho[c], p_th[c]
    new_rho_ic = w * rho + (1.0 - w) * up(rho)
    new_th_pr_ic = w * p_th + (1.0 - w) * up(p_th)
    new_th_ic = w * theta + (1.0 - w) * up(theta)
    exner_pr = o.perturbed_exner_at_cells_on_model_levels
    new_ddz = (g.exner_w_explicit_weight_parameter[:, None] * new_th_ic
               * (up(exner_pr) - exner_pr) / g.ddqz_z_half
               + new_th_pr_ic * g.ddz_of_reference_exner_at_cells_on_half_levels)
    for arr, new in ((rho_ic, new_rho_ic), (th_pr_ic, new_th_pr_ic), (th_ic, new_th_ic),
                     (ddz, new_ddz)):
        arr[c, 1:] = new[c, 1:]
    th_pr_ic[:, 0] = 0.0
    c2 = slice(h2, e_h2)
    pr[c2], pth[c2] = p_rho[c2], p_th[c2]
    result = dict(perturbed_rho_at_cells_on_model_levels=pr,
                  perturbed_theta_v_at_cells_on_model_levels=pth,
                  exner_at_cells_on_half_levels=exner_ic, rho_at_cells_on_half_levels=rho_ic,
                  perturbed_theta_v_at_cells_on_half_levels=th_pr_ic,
                  theta_v_at_cells_on_half_levels=th_ic,
                  pressure_buoyancy_acceleration_at_cells_on_half_levels=ddz)
    want = {n: getattr(o, n) for n in names}
    want |= {n: inside(v, getattr(o, n), hs, he, vs, NLEV) for n, v in result.items()}
    check(got, want, rtol=1e-12, atol=1e-12)


# ================================================================== solve_nonhydro_stencils
#
# icon4py's grouped stencils of the nonhydro solver in ``float``: stencils 35
# and 36 (the contravariant correction from a runtime level, the winds at
# half levels from level 1 by ``concat_where`` on tuples; ``k_field`` is
# passed and unused, as in icon4py), stencils 39 and 40 (nested
# ``concat_where``: the lower boundary at ``KDim == nlev`` replaces the level
# where the inner choice would read beyond the edge field) and stencils 61
# and 62 (the updates from the boundary tendencies, the last level written
# by its own call).


@gtx.field_operator
def _compute_contravariant_correction(
    vn: fa.EdgeKField[float], ddxn_z_full: fa.EdgeKField[float],
    ddxt_z_full: fa.EdgeKField[float], vt: fa.EdgeKField[float],
) -> fa.EdgeKField[float]:
    return vn * ddxn_z_full + vt * ddxt_z_full


@gtx.field_operator
def _interpolate_vn_and_vt_to_ie_and_compute_ekin_on_edges(
    wgtfac_e: fa.EdgeKField[float], vn: fa.EdgeKField[float], vt: fa.EdgeKField[float],
) -> tuple[fa.EdgeKField[float], fa.EdgeKField[float], fa.EdgeKField[float]]:
    vn_ie = wgtfac_e * vn + (1.0 - wgtfac_e) * vn(Koff[-1])
    z_vt_ie = wgtfac_e * vt + (1.0 - wgtfac_e) * vt(Koff[-1])
    return vn_ie, z_vt_ie, 0.5 * (vn * vn + vt * vt)


@gtx.field_operator
def _predictor_stencils_35_36(
    vn: fa.EdgeKField[float], ddxn_z_full: fa.EdgeKField[float],
    ddxt_z_full: fa.EdgeKField[float], vt: fa.EdgeKField[float],
    z_w_concorr_me: fa.EdgeKField[float], wgtfac_e: fa.EdgeKField[float],
    vn_ie: fa.EdgeKField[float], z_vt_ie: fa.EdgeKField[float],
    z_kin_hor_e: fa.EdgeKField[float], k_field: fa.KField[gtx.int32],
    nflatlev_startindex: gtx.int32,
) -> tuple[fa.EdgeKField[float], fa.EdgeKField[float], fa.EdgeKField[float],
           fa.EdgeKField[float]]:
    z_w_concorr_me = concat_where(
        dims.KDim >= nflatlev_startindex,
        _compute_contravariant_correction(vn, ddxn_z_full, ddxt_z_full, vt), z_w_concorr_me)
    (vn_ie, z_vt_ie, z_kin_hor_e) = concat_where(
        dims.KDim >= 1, _interpolate_vn_and_vt_to_ie_and_compute_ekin_on_edges(wgtfac_e, vn, vt),
        (vn_ie, z_vt_ie, z_kin_hor_e))
    return z_w_concorr_me, vn_ie, z_vt_ie, z_kin_hor_e


@gtx.field_operator
def _compute_contravariant_correction_of_w(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], float], z_w_concorr_me: fa.EdgeKField[float],
    wgtfac_c: fa.CellKField[float],
) -> fa.CellKField[float]:
    z_w_concorr_mc = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(C2E), axis=C2EDim)
    return wgtfac_c * z_w_concorr_mc + (1.0 - wgtfac_c) * z_w_concorr_mc(Koff[-1])


@gtx.field_operator
def _compute_contravariant_correction_of_w_for_lower_boundary(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], float], z_w_concorr_me: fa.EdgeKField[float],
    wgtfacq_c: fa.CellKField[float],
) -> fa.CellKField[float]:
    m1 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(Koff[-1])(C2E), axis=C2EDim)
    m2 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(Koff[-2])(C2E), axis=C2EDim)
    m3 = neighbor_sum(e_bln_c_s(C2CE) * z_w_concorr_me(Koff[-3])(C2E), axis=C2EDim)
    return wgtfacq_c(Koff[-1]) * m1 + wgtfacq_c(Koff[-2]) * m2 + wgtfacq_c(Koff[-3]) * m3


@gtx.field_operator
def _stencils_39_40(
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], float], z_w_concorr_me: fa.EdgeKField[float],
    wgtfac_c: fa.CellKField[float], wgtfacq_c_dsl: fa.CellKField[float],
    w_concorr_c: fa.CellKField[float], k_field: fa.KField[gtx.int32],
    nflatlev_startindex_plus1: gtx.int32, nlev: gtx.int32,
) -> fa.CellKField[float]:
    w_concorr_c = concat_where(
        dims.KDim >= nflatlev_startindex_plus1,
        _compute_contravariant_correction_of_w(e_bln_c_s, z_w_concorr_me, wgtfac_c), w_concorr_c)
    w_concorr_c = concat_where(
        dims.KDim == nlev,
        _compute_contravariant_correction_of_w_for_lower_boundary(e_bln_c_s, z_w_concorr_me,
                                                                  wgtfacq_c_dsl),
        w_concorr_c)
    return w_concorr_c


@gtx.field_operator
def _update_density_exner_wind(
    rho_now: fa.CellKField[float], grf_tend_rho: fa.CellKField[float],
    theta_v_now: fa.CellKField[float], grf_tend_thv: fa.CellKField[float],
    w_now: fa.CellKField[float], grf_tend_w: fa.CellKField[float], dtime: float,
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float]]:
    return (rho_now + dtime * grf_tend_rho, theta_v_now + dtime * grf_tend_thv,
            w_now + dtime * grf_tend_w)


@gtx.field_operator
def _update_wind(w_now: fa.CellKField[float], grf_tend_w: fa.CellKField[float], dtime: float,
                 ) -> fa.CellKField[float]:
    return w_now + dtime * grf_tend_w


@gtx.program
def solve_nonhydro_groups(
    vn: fa.EdgeKField[float], ddxn_z_full: fa.EdgeKField[float],
    ddxt_z_full: fa.EdgeKField[float], vt: fa.EdgeKField[float],
    z_w_concorr_me: fa.EdgeKField[float], wgtfac_e: fa.EdgeKField[float],
    vn_ie: fa.EdgeKField[float], z_vt_ie: fa.EdgeKField[float],
    z_kin_hor_e: fa.EdgeKField[float], k_field: fa.KField[gtx.int32],
    nflatlev_startindex: gtx.int32,
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], float], wgtfac_c: fa.CellKField[float],
    wgtfacq_c_dsl: fa.CellKField[float], w_concorr_c: fa.CellKField[float], nlev: gtx.int32,
    rho_now: fa.CellKField[float], grf_tend_rho: fa.CellKField[float],
    theta_v_now: fa.CellKField[float], grf_tend_thv: fa.CellKField[float],
    w_now: fa.CellKField[float], grf_tend_w: fa.CellKField[float],
    rho_new: fa.CellKField[float], exner_new: fa.CellKField[float], w_new: fa.CellKField[float],
    dtime: float, edge_start: gtx.int32, edge_end: gtx.int32, cell_start: gtx.int32,
    cell_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _predictor_stencils_35_36(
        vn, ddxn_z_full, ddxt_z_full, vt, z_w_concorr_me, wgtfac_e, vn_ie, z_vt_ie, z_kin_hor_e,
        k_field, nflatlev_startindex, out=(z_w_concorr_me, vn_ie, z_vt_ie, z_kin_hor_e),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _stencils_39_40(e_bln_c_s, z_w_concorr_me, wgtfac_c, wgtfacq_c_dsl, w_concorr_c, k_field,
                    nflatlev_startindex + 1, nlev, out=w_concorr_c,
                    domain={dims.CellDim: (cell_start, cell_end),
                            dims.KDim: (vertical_start, vertical_end)})
    _update_density_exner_wind(
        rho_now, grf_tend_rho, theta_v_now, grf_tend_thv, w_now, grf_tend_w, dtime,
        out=(rho_new, exner_new, w_new),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _update_wind(w_now, grf_tend_w, dtime, out=w_new,
                 domain={dims.CellDim: (cell_start, cell_end),
                         dims.KDim: (vertical_end - 1, vertical_end)})


@pytest.mark.parametrize(("vs", "nflatlev"), [(0, 3), (2, 1), (1, 0)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_solve_nonhydro_groups(backend, vs, nflatlev):
    es, ee, cs, ce, ve = 1, NE - 1, 1, NC - 2, NH
    c2e = TABLES["C2E"]
    se, sc, hc = (NE, NLEV), (NC, NLEV), (NC, NH)
    a = dict(vn=RNG.standard_normal(se), ddxn_z_full=f64(*se), ddxt_z_full=f64(*se),
             vt=RNG.standard_normal(se), wgtfac_e=f64(*se),
             k_field=np.arange(NH, dtype=np.int32), e_bln_c_s=f64(NC * 3), wgtfac_c=f64(*hc),
             wgtfacq_c_dsl=f64(*hc), rho_now=f64(*hc), grf_tend_rho=f64(*hc),
             theta_v_now=f64(*hc), grf_tend_thv=f64(*hc), w_now=f64(*hc), grf_tend_w=f64(*hc))
    dtime = 0.7
    base = dict(z_w_concorr_me=f64(*se), vn_ie=f64(*se), z_vt_ie=f64(*se),
                z_kin_hor_e=f64(*se), w_concorr_c=f64(*hc), rho_new=f64(*hc),
                exner_new=f64(*hc), w_new=f64(*hc))
    got = {n: v.copy() for n, v in base.items()}
    solve_nonhydro_groups(**a, **got, nflatlev_startindex=nflatlev, nlev=NLEV, dtime=dtime,
                          edge_start=es, edge_end=ee, cell_start=cs, cell_end=ce,
                          vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                          backend=backend)

    g = types.SimpleNamespace(**a)
    corr = np.array(base["z_w_concorr_me"])
    lo = max(vs, nflatlev)
    corr[es:ee, lo:NLEV] = (g.vn * g.ddxn_z_full + g.vt * g.ddxt_z_full)[es:ee, lo:NLEV]
    w = g.wgtfac_e
    half = {}
    for name, new in (("vn_ie", w[:, 1:] * g.vn[:, 1:] + (1.0 - w[:, 1:]) * g.vn[:, :-1]),
                      ("z_vt_ie", w[:, 1:] * g.vt[:, 1:] + (1.0 - w[:, 1:]) * g.vt[:, :-1]),
                      ("z_kin_hor_e", (0.5 * (g.vn * g.vn + g.vt * g.vt))[:, 1:])):
        out = np.array(base[name])
        k0 = max(vs, 1)
        out[es:ee, k0:NLEV] = new[es:ee, k0 - 1:NLEV - 1]
        half[name] = out
    bln = g.e_bln_c_s.reshape(NC, 3)
    mc = (bln[:, :, None] * corr[c2e]).sum(axis=1)
    wc = g.wgtfac_c
    wcc = np.array(base["w_concorr_c"])
    k0 = max(vs, nflatlev + 1)
    wcc[cs:ce, k0:NLEV] = (wc[:, 1:NLEV] * mc[:, 1:] + (1.0 - wc[:, 1:NLEV]) * mc[:, :-1])[
        cs:ce, k0 - 1:NLEV - 1]
    wq = g.wgtfacq_c_dsl
    wcc[cs:ce, NLEV] = sum(wq[:, NLEV - j] * mc[:, NLEV - j] for j in (1, 2, 3))[cs:ce]
    want = dict(z_w_concorr_me=corr, **half, w_concorr_c=wcc,
                rho_new=inside(g.rho_now + dtime * g.grf_tend_rho, base["rho_new"], cs, ce, vs,
                               NLEV),
                exner_new=inside(g.theta_v_now + dtime * g.grf_tend_thv, base["exner_new"], cs,
                                 ce, vs, NLEV),
                w_new=inside(g.w_now + dtime * g.grf_tend_w, base["w_new"], cs, ce, vs, NH))
    check(got, want, rtol=1e-12, atol=1e-12)


# ================================================================== interpolation
#
# icon4py's interpolation of a cell field to edges on full and on half levels
# (``KHalfDim``), with the lateral boundary edges' missing neighbour given as
# ``-1`` in ``E2C`` (``neighbor_sum`` skips it; icon4py sets that edge's other
# coefficient to 1), the RBF reconstruction at vertices through ``V2E`` and
# the nudging coefficients at edges (icon4py's version writes ``EXP`` and
# divides an ``int32`` field by a float; here ``exp`` of the difference
# converted by ``astype``).


@gtx.field_operator
def _interpolate_cell_field_to_edge(
    in_field: fa.CellKField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=dims.E2CDim)


@gtx.field_operator
def _interpolate_cell_field_to_edge_on_half_levels(
    in_field: fa.CellKHalfField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=dims.E2CDim)


@gtx.field_operator
def _rbf_vec_interpol_edge2vertex(
    p_e_in: Field[[EdgeDim, KDim], wpfloat], ptr_coeff_1: Field[[VertexDim, V2EDim], wpfloat],
    ptr_coeff_2: Field[[VertexDim, V2EDim], wpfloat],
) -> tuple[Field[[VertexDim, KDim], wpfloat], Field[[VertexDim, KDim], wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(V2E), axis=V2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(V2E), axis=V2EDim)
    return p_u_out, p_v_out


@gtx.field_operator
def _mo_intp_coeffs_nudgecoeff_e(
    refin_ctrl: Field[[EdgeDim], gtx.int32], grf_nudge_start_e: gtx.int32,
    nudge_max_coeffs: wpfloat,
) -> Field[[EdgeDim], wpfloat]:
    return nudge_max_coeffs * exp(-astype(refin_ctrl - grf_nudge_start_e, wpfloat) / 4.0)


@gtx.program
def interpolation(
    in_field: fa.CellKField[wpfloat], in_half: fa.CellKHalfField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    out_field: fa.EdgeKField[wpfloat], out_half: fa.EdgeKHalfField[wpfloat],
    p_e_in: Field[[EdgeDim, KDim], wpfloat], ptr_coeff_1: Field[[VertexDim, V2EDim], wpfloat],
    ptr_coeff_2: Field[[VertexDim, V2EDim], wpfloat], p_u_out: Field[[VertexDim, KDim], wpfloat],
    p_v_out: Field[[VertexDim, KDim], wpfloat], refin_ctrl: Field[[EdgeDim], gtx.int32],
    grf_nudge_start_e: gtx.int32, nudge_max_coeffs: wpfloat,
    nudgecoeffs_e: Field[[EdgeDim], wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _interpolate_cell_field_to_edge(
        in_field=in_field, coeff=coeff, out=out_field,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _interpolate_cell_field_to_edge_on_half_levels(
        in_field=in_half, coeff=coeff, out=out_half,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KHalfDim: (vertical_start, vertical_end + 1)})
    _rbf_vec_interpol_edge2vertex(
        p_e_in, ptr_coeff_1, ptr_coeff_2, out=(p_u_out, p_v_out),
        domain={VertexDim: (1, horizontal_end - 3), KDim: (vertical_start, vertical_end)})
    _mo_intp_coeffs_nudgecoeff_e(refin_ctrl, grf_nudge_start_e, nudge_max_coeffs,
                                 out=nudgecoeffs_e,
                                 domain={EdgeDim: (horizontal_start, horizontal_end)})


@pytest.mark.parametrize("vs", [0, 2])
@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolation(backend, vs):
    hs, he, ve = 1, NE, NLEV - 1
    e2c = TABLES["E2C"].copy()
    boundary = np.array([0, 3, NE - 1])
    e2c[boundary, 1] = -1
    provider = TABLES | {"E2C": e2c}
    coeff = f64(NE, 2)
    coeff[boundary, 0] = 1.0
    a = dict(in_field=f64(NC, NLEV), in_half=f64(NC, NH), coeff=coeff, p_e_in=f64(NE, NLEV),
             ptr_coeff_1=f64(NV, 6), ptr_coeff_2=f64(NV, 6),
             refin_ctrl=RNG.integers(0, 12, NE).astype(np.int32))
    base = dict(out_field=f64(NE, NLEV), out_half=f64(NE, NH), p_u_out=f64(NV, NLEV),
                p_v_out=f64(NV, NLEV), nudgecoeffs_e=f64(NE))
    got = {n: v.copy() for n, v in base.items()}
    interpolation(**a, **got, grf_nudge_start_e=3, nudge_max_coeffs=0.375,
                  horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
                  offset_provider=provider, backend=backend)

    valid = (e2c >= 0)[:, :, None]

    def to_edges(x):
        return np.where(valid, x[e2c] * coeff[:, :, None], 0.0).sum(axis=1)

    v2e = TABLES["V2E"]
    u = (a["ptr_coeff_1"][:, :, None] * a["p_e_in"][v2e]).sum(axis=1)
    v = (a["ptr_coeff_2"][:, :, None] * a["p_e_in"][v2e]).sum(axis=1)
    nudge = 0.375 * np.exp(-(a["refin_ctrl"] - 3).astype(np.float64) / 4.0)
    want = dict(out_field=inside(to_edges(a["in_field"]), base["out_field"], hs, he, vs, ve),
                out_half=inside(to_edges(a["in_half"]), base["out_half"], hs, he, vs, ve + 1),
                p_u_out=inside(u, base["p_u_out"], 1, he - 3, vs, ve),
                p_v_out=inside(v, base["p_v_out"], 1, he - 3, vs, ve),
                nudgecoeffs_e=inside(nudge, base["nudgecoeffs_e"], hs, he))
    check(got, want, rtol=1e-12, atol=1e-12)


# ================================================================== vertical diffusion in place
#
# icon4py's programs for the vertical diffusion of vn and w write their input
# in place (``out=vn``) while reading it one level up and down: the values
# read are those before the call, as in GT4Py.


@gtx.field_operator
def _apply_vertical_diffusion_to_vn(
    vn: fa.EdgeKField[wpfloat], ddqz_z_half_e: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[wpfloat], coeff: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    d2vndz2 = ((vn(Koff[-1]) - vn) / ddqz_z_half_e
               - (vn - vn(Koff[1])) / ddqz_z_half_e(Koff[1])) / ddqz_z_full_e
    vn = vn + coeff * d2vndz2
    return vn


@gtx.field_operator
def _apply_vertical_diffusion_to_w(
    w: fa.CellKField[wpfloat], ddqz_z_half: fa.CellKField[wpfloat],
    ddqz_z_full: fa.CellKField[wpfloat], coeff: wpfloat,
) -> fa.CellKField[wpfloat]:
    d2wdz2 = ((w(Koff[-1]) - w) / ddqz_z_full(Koff[-1])
              - (w - w(Koff[1])) / ddqz_z_full) / ddqz_z_half
    w = w + coeff * d2wdz2
    return w


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def apply_vertical_diffusion_in_place(
    vn: fa.EdgeKField[wpfloat], ddqz_z_half_e: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[wpfloat], w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[wpfloat], ddqz_z_full: fa.CellKField[wpfloat], coeff: wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _apply_vertical_diffusion_to_vn(
        vn, ddqz_z_half_e, ddqz_z_full_e, coeff, out=vn,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_vertical_diffusion_to_w(
        w, ddqz_z_half, ddqz_z_full, coeff, out=w,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_apply_vertical_diffusion_in_place(backend):
    hs, he, vs, ve, coeff = 1, NC - 1, 1, NLEV - 1, 0.3
    vn, w = RNG.standard_normal((NE, NLEV)), RNG.standard_normal((NC, NLEV))
    a = dict(ddqz_z_half_e=f64(NE, NLEV) + 0.5, ddqz_z_full_e=f64(NE, NLEV) + 0.5,
             ddqz_z_half=f64(NC, NLEV) + 0.5, ddqz_z_full=f64(NC, NLEV) + 0.5)
    got_vn, got_w = vn.copy(), w.copy()
    apply_vertical_diffusion_in_place(got_vn, w=got_w, **a, coeff=coeff, horizontal_start=hs,
                                      horizontal_end=he, vertical_start=vs, vertical_end=ve,
                                      offset_provider=TABLES, backend=backend)
    h, f = a["ddqz_z_half_e"], a["ddqz_z_full_e"]
    d2vn = np.zeros_like(vn)
    d2vn[:, 1:-1] = ((vn[:, :-2] - vn[:, 1:-1]) / h[:, 1:-1]
                     - (vn[:, 1:-1] - vn[:, 2:]) / h[:, 2:]) / f[:, 1:-1]
    hw, fw = a["ddqz_z_half"], a["ddqz_z_full"]
    d2w = np.zeros_like(w)
    d2w[:, 1:-1] = ((w[:, :-2] - w[:, 1:-1]) / fw[:, :-2]
                    - (w[:, 1:-1] - w[:, 2:]) / fw[:, 1:-1]) / hw[:, 1:-1]
    check(dict(vn=got_vn, w=got_w),
          dict(vn=inside(vn + coeff * d2vn, vn, hs, he, vs, ve),
               w=inside(w + coeff * d2w, w, hs, he, vs, ve)), rtol=1e-12, atol=1e-12)
