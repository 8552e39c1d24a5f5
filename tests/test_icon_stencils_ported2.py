"""More of ICON's dycore, diffusion, advection and interpolation stencils
(icon4py's field operators) ported to the Python front end in GT4Py's spelling,
beside ``test_icon_stencils_ported.py``.

They add: the edge-to-edge chains ``E2C2E`` and ``E2C2EO`` with absent
neighbours, ``E2V`` full shifts of vertex fields, a ``bool`` level mask read
one level down (``levelmask(Koff[1])`` over ``nlev + 1`` levels), chained
statements of one program reading what an earlier one wrote, ``max_over`` and
``min_over`` over ``C2E2C`` with absent neighbours, scalar casts spelled
``vpfloat(beta_fct)``, ``wpfloat(0.0)`` with a float literal, ``C2E2C2E``,
the strided ``C2CE``/``C2CEC`` offsets with ``as_offset`` of an ``int32``
field plus one, ``V2C`` and ``V2E`` sums, field operators composed of field
operators with different vertical extents, a running-sum ``scan_operator``,
``KDim + 1`` shifts written with the dimension, ``concat_where`` chains
assembling half-level fields, a one-sided ``concat_where(K == elev, …)`` at
the last level, tuple outputs with one domain per output, ``if``-expressions
on scalars, ``int32`` outputs from ``where(…, 1, 0)``, the saturation
adjustment (``where`` on tuples, ``True``/``False`` branches, constants read
from an object and a module) and the horizontal advection of rho and theta
(cell gradients over ``C2E2CO`` gathered through ``E2C``).  Each group is one
program, interpreted and compiled once, compared with hand-written NumPy.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from tensorir_dace.frontend import (
    Dims,
    Field,
    FieldOffset,
    abs,
    as_offset,
    astype,
    broadcast,
    concat_where,
    dims,
    exp,
    field_operator,
    float32,
    float64,
    int32,
    log,
    max_over,
    maximum,
    min_over,
    minimum,
    neighbor_dim,
    neighbor_sum,
    program,
    scan_operator,
    sqrt,
    where,
)

Cell, Edge, Vertex, K, CE, CEC = dims("Cell Edge Vertex K CE CEC")
C2EDim, C2E2CDim, C2E2C2EDim = (neighbor_dim(Edge, 3), neighbor_dim(Cell, 3),
                                neighbor_dim(Edge, 9))
C2E2CODim = neighbor_dim(Cell, 4)
E2CDim, E2VDim = neighbor_dim(Cell, 2), neighbor_dim(Vertex, 2)
E2C2EDim, E2C2EODim = neighbor_dim(Edge, 4), neighbor_dim(Edge, 5)
V2CDim, V2EDim = neighbor_dim(Cell, 6), neighbor_dim(Edge, 6)
C2E = FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))
C2E2C = FieldOffset("C2E2C", source=Cell, target=(Cell, C2E2CDim))
C2E2CO = FieldOffset("C2E2CO", source=Cell, target=(Cell, C2E2CODim))
C2E2C2E = FieldOffset("C2E2C2E", source=Edge, target=(Cell, C2E2C2EDim))
C2CE = FieldOffset("C2CE", source=CE, target=(Cell, C2EDim))          # strided: c * 3 + j
C2CEC = FieldOffset("C2CEC", source=CEC, target=(Cell, C2E2CDim))     # strided: c * 3 + j
E2C = FieldOffset("E2C", source=Cell, target=(Edge, E2CDim))
E2V = FieldOffset("E2V", source=Vertex, target=(Edge, E2VDim))
E2C2E = FieldOffset("E2C2E", source=Edge, target=(Edge, E2C2EDim))
E2C2EO = FieldOffset("E2C2EO", source=Edge, target=(Edge, E2C2EODim))
V2C = FieldOffset("V2C", source=Cell, target=(Vertex, V2CDim))
V2E = FieldOffset("V2E", source=Edge, target=(Vertex, V2EDim))
Koff = FieldOffset("Koff", source=K, target=(K,))
wpfloat, vpfloat = float64, float32
BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 9, 14, 7, 6
RNG = np.random.default_rng(2031)
f64, f32 = np.float64, np.float32


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


TABLES = {"C2E": table(NC, 3, NE), "C2E2C": table(NC, 3, NC, absent=0.2),
          "C2E2CO": table(NC, 4, NC, absent=0.2),
          "C2E2C2E": table(NC, 9, NE, absent=0.2), "E2C": table(NE, 2, NC),
          "E2V": table(NE, 2, NV), "E2C2E": table(NE, 4, NE, absent=0.2),
          "E2C2EO": table(NE, 5, NE, absent=0.15), "V2C": table(NV, 6, NC, absent=0.2),
          "V2E": table(NV, 6, NE, absent=0.2), "Koff": K, "C2CE": None, "C2CEC": None}
TABLES["C2E2C"][0, :] = -1          # a cell with no neighbour at all


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2032).bit_generator.state


def wp(*shape):
    return RNG.random(shape)


def vp(*shape):
    return RNG.random(shape).astype(np.float32)


def gather(field, tab):
    """field[tab] with absent (-1) neighbours as NaN: any use of one shows."""
    g = field[np.where(tab >= 0, tab, 0)].astype(f64)
    return np.where((tab >= 0).reshape(tab.shape + (1,) * (g.ndim - 2)), g, np.nan)


def nbsum(weights, field, tab):
    """sum over j of weights[:, j] * field[tab[:, j]], absent (-1) neighbours skipped."""
    g = gather(field, tab)
    w = weights.reshape(weights.shape + (1,) * (g.ndim - weights.ndim))
    return np.where(np.isnan(g), 0.0, w * np.nan_to_num(g)).sum(1)


def inside(new, old, hs, he, vs, ve):
    """``new`` on rows ``hs:he`` and levels ``vs:ve``, ``old`` elsewhere."""
    out = old.copy()
    out[hs:he, vs:ve] = new[hs:he, vs:ve]
    return out


def check(got, expected, rtol=3e-6):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=1e-6, err_msg=name)


def run(prog, a, scalars, bounds, backend):
    """Call ``prog`` with the arrays and scalars in its parameter order."""
    hs, he, vs, ve = bounds
    values = dict(a, **scalars, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                  vertical_end=ve)
    prog(**values, offset_provider=TABLES, backend=backend)


# ---------------------------------------------------------------- edges


@field_operator
def _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl(
        levelmask: Field[Dims[K], bool], c_lin_e: Field[Dims[Edge, E2CDim], wpfloat],
        z_w_con_c_full: Field[[Cell, K], vpfloat], ddqz_z_full_e: Field[[Edge, K], vpfloat],
        area_edge: Field[[Edge], wpfloat], tangent_orientation: Field[[Edge], wpfloat],
        inv_primal_edge_length: Field[[Edge], wpfloat], zeta: Field[[Vertex, K], vpfloat],
        geofac_grdiv: Field[Dims[Edge, E2C2EODim], wpfloat], vn: Field[[Edge, K], wpfloat],
        ddt_vn_apc: Field[[Edge, K], vpfloat], cfl_w_limit: vpfloat, scalfac_exdiff: wpfloat,
        dtime: wpfloat) -> Field[[Edge, K], vpfloat]:
    z_w_con_c_full_wp, ddqz_z_full_e_wp, ddt_vn_apc_wp, cfl_w_limit_wp = astype(
        (z_w_con_c_full, ddqz_z_full_e, ddt_vn_apc, cfl_w_limit), wpfloat)
    w_con_e = neighbor_sum(c_lin_e * z_w_con_c_full_wp(E2C), axis=E2CDim)
    difcoef = scalfac_exdiff * minimum(
        wpfloat("0.85") - cfl_w_limit_wp * dtime,
        abs(w_con_e) * dtime / ddqz_z_full_e_wp - cfl_w_limit_wp * dtime)
    ddt_vn_apc_wp = where(
        (levelmask | levelmask(Koff[1]))
        & (abs(w_con_e) > astype(cfl_w_limit * ddqz_z_full_e, wpfloat)),
        ddt_vn_apc_wp + difcoef * area_edge * (
            neighbor_sum(geofac_grdiv * vn(E2C2EO), axis=E2C2EODim)
            + tangent_orientation * inv_primal_edge_length
            * astype(zeta(E2V[1]) - zeta(E2V[0]), wpfloat)),
        ddt_vn_apc_wp)
    return astype(ddt_vn_apc_wp, vpfloat)


@field_operator
def _compute_tangential_wind(vn: Field[[Edge, K], wpfloat],
                             rbf_vec_coeff_e: Field[Dims[Edge, E2C2EDim], wpfloat]
                             ) -> Field[[Edge, K], vpfloat]:
    vt_wp = neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim)
    return astype(vt_wp, vpfloat)


@field_operator
def _compute_graddiv2_of_vn(geofac_grdiv: Field[Dims[Edge, E2C2EODim], wpfloat],
                            z_graddiv_vn: Field[[Edge, K], vpfloat]) -> Field[[Edge, K], vpfloat]:
    z_graddiv_vn_wp = astype(z_graddiv_vn, wpfloat)
    z_graddiv2_vn_wp = neighbor_sum(z_graddiv_vn_wp(E2C2EO) * geofac_grdiv, axis=E2C2EODim)
    return astype(z_graddiv2_vn_wp, vpfloat)


@field_operator
def _calculate_nabla2_for_z(kh_smag_e: Field[[Edge, K], vpfloat],
                            inv_dual_edge_length: Field[[Edge], wpfloat],
                            theta_v: Field[[Cell, K], wpfloat]) -> Field[[Edge, K], wpfloat]:
    kh_smag_e_wp = astype(kh_smag_e, wpfloat)
    z_nabla2_e_wp = kh_smag_e_wp * inv_dual_edge_length * (theta_v(E2C[1]) - theta_v(E2C[0]))
    return z_nabla2_e_wp


@field_operator
def _apply_nabla2_and_nabla4_to_vn(
        area_edge: Field[[Edge], wpfloat], kh_smag_e: Field[[Edge, K], vpfloat],
        z_nabla2_e: Field[[Edge, K], wpfloat], z_nabla4_e2: Field[[Edge, K], vpfloat],
        diff_multfac_vn: Field[[K], wpfloat], nudgecoeff_e: Field[[Edge], wpfloat],
        vn: Field[[Edge, K], wpfloat], nudgezone_diff: vpfloat) -> Field[[Edge, K], wpfloat]:
    kh_smag_e_wp, z_nabla4_e2_wp, nudgezone_diff_wp = astype(
        (kh_smag_e, z_nabla4_e2, nudgezone_diff), wpfloat)
    area_edge_broadcast = broadcast(area_edge, (Edge, K))
    vn_wp = vn + area_edge * (
        maximum(nudgezone_diff_wp * nudgecoeff_e, kh_smag_e_wp) * z_nabla2_e
        - area_edge_broadcast * diff_multfac_vn * z_nabla4_e2_wp)
    return vn_wp


@field_operator
def _compute_mass_and_temperature_flux(
        z_rho_e: Field[[Edge, K], wpfloat], z_vn_avg: Field[[Edge, K], wpfloat],
        ddqz_z_full_e: Field[[Edge, K], vpfloat],
        theta_v_at_edges_on_model_levels: Field[[Edge, K], wpfloat]
) -> tuple[Field[[Edge, K], wpfloat], Field[[Edge, K], wpfloat]]:
    mass_fl_e_wp = z_rho_e * z_vn_avg * astype(ddqz_z_full_e, wpfloat)
    z_theta_v_fl_e_wp = mass_fl_e_wp * theta_v_at_edges_on_model_levels
    return mass_fl_e_wp, z_theta_v_fl_e_wp


@field_operator
def _apply_positive_definite_horizontal_multiplicative_flux_factor(
        r_m: Field[[Cell, K], wpfloat], p_mflx_tracer_h: Field[[Edge, K], wpfloat]
) -> Field[[Edge, K], wpfloat]:
    p_mflx_tracer_h_out = where(p_mflx_tracer_h >= wpfloat(0.0),
                                p_mflx_tracer_h * r_m(E2C[0]),
                                p_mflx_tracer_h * r_m(E2C[1]))
    return p_mflx_tracer_h_out


@program
def edge_stencils(
        levelmask: Field[Dims[K], bool], c_lin_e: Field[Dims[Edge, E2CDim], wpfloat],
        z_w_con_c_full: Field[[Cell, K], vpfloat], ddqz_z_full_e: Field[[Edge, K], vpfloat],
        area_edge: Field[[Edge], wpfloat], tangent_orientation: Field[[Edge], wpfloat],
        inv_primal_edge_length: Field[[Edge], wpfloat], zeta: Field[[Vertex, K], vpfloat],
        geofac_grdiv: Field[Dims[Edge, E2C2EODim], wpfloat], vn: Field[[Edge, K], wpfloat],
        ddt_vn_apc: Field[[Edge, K], vpfloat], rbf_vec_coeff_e: Field[[Edge, E2C2EDim], wpfloat],
        vt: Field[[Edge, K], vpfloat], z_graddiv_vn: Field[[Edge, K], vpfloat],
        z_graddiv2_vn: Field[[Edge, K], vpfloat], kh_smag_e: Field[[Edge, K], vpfloat],
        inv_dual_edge_length: Field[[Edge], wpfloat], theta_v: Field[[Cell, K], wpfloat],
        z_nabla2_e: Field[[Edge, K], wpfloat], z_nabla4_e2: Field[[Edge, K], vpfloat],
        diff_multfac_vn: Field[[K], wpfloat], nudgecoeff_e: Field[[Edge], wpfloat],
        vn_diffused: Field[[Edge, K], wpfloat], z_rho_e: Field[[Edge, K], wpfloat],
        z_vn_avg: Field[[Edge, K], wpfloat], theta_v_e: Field[[Edge, K], wpfloat],
        mass_fl_e: Field[[Edge, K], wpfloat], theta_v_fl_e: Field[[Edge, K], wpfloat],
        r_m: Field[[Cell, K], wpfloat], p_mflx_tracer_h: Field[[Edge, K], wpfloat],
        cfl_w_limit: vpfloat, scalfac_exdiff: wpfloat, dtime: wpfloat, nudgezone_diff: vpfloat,
        horizontal_start: int32, horizontal_end: int32, vertical_start: int32,
        vertical_end: int32):
    _add_extra_diffusion_for_normal_wind_tendency_approaching_cfl(
        levelmask, c_lin_e, z_w_con_c_full, ddqz_z_full_e, area_edge, tangent_orientation,
        inv_primal_edge_length, zeta, geofac_grdiv, vn, ddt_vn_apc, cfl_w_limit,
        scalfac_exdiff, dtime, out=ddt_vn_apc,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _compute_tangential_wind(
        vn, rbf_vec_coeff_e, out=vt,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _compute_graddiv2_of_vn(
        geofac_grdiv=geofac_grdiv, z_graddiv_vn=z_graddiv_vn, out=z_graddiv2_vn,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    # the next statement reads what this one wrote
    _calculate_nabla2_for_z(
        kh_smag_e, inv_dual_edge_length, theta_v, out=z_nabla2_e,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _apply_nabla2_and_nabla4_to_vn(
        area_edge, kh_smag_e, z_nabla2_e, z_nabla4_e2, diff_multfac_vn, nudgecoeff_e,
        vn_diffused, nudgezone_diff, out=vn_diffused,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _compute_mass_and_temperature_flux(
        z_rho_e, z_vn_avg, ddqz_z_full_e, theta_v_e, out=(mass_fl_e, theta_v_fl_e),
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _apply_positive_definite_horizontal_multiplicative_flux_factor(
        r_m, p_mflx_tracer_h, out=p_mflx_tracer_h,
        domain={Edge: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})


def edge_inputs():
    return dict(
        levelmask=RNG.random(NLEV + 1) < 0.4, c_lin_e=wp(NE, 2),
        z_w_con_c_full=(vp(NC, NLEV) - 0.5) * 4, ddqz_z_full_e=vp(NE, NLEV) + 0.5,
        area_edge=wp(NE) + 0.5, tangent_orientation=np.sign(wp(NE) - 0.5),
        inv_primal_edge_length=wp(NE) + 1.0, zeta=vp(NV, NLEV), geofac_grdiv=wp(NE, 5),
        vn=wp(NE, NLEV), ddt_vn_apc=vp(NE, NLEV), rbf_vec_coeff_e=wp(NE, 4),
        vt=np.full((NE, NLEV), 5.0, f32), z_graddiv_vn=vp(NE, NLEV),
        z_graddiv2_vn=np.full((NE, NLEV), 6.0, f32), kh_smag_e=vp(NE, NLEV),
        inv_dual_edge_length=wp(NE) + 1.0, theta_v=wp(NC, NLEV),
        z_nabla2_e=np.full((NE, NLEV), 7.0), z_nabla4_e2=vp(NE, NLEV), diff_multfac_vn=wp(NLEV),
        nudgecoeff_e=wp(NE), vn_diffused=wp(NE, NLEV), z_rho_e=wp(NE, NLEV),
        z_vn_avg=wp(NE, NLEV) - 0.5, theta_v_e=wp(NE, NLEV), mass_fl_e=np.zeros((NE, NLEV)),
        theta_v_fl_e=np.zeros((NE, NLEV)), r_m=wp(NC, NLEV),
        p_mflx_tracer_h=wp(NE, NLEV) - 0.5)


EDGE_SCALARS = dict(cfl_w_limit=f32(0.3), scalfac_exdiff=0.4, dtime=0.9, nudgezone_diff=f32(0.6))


def edge_numpy(o, s):
    t = TABLES
    w_con_e = nbsum(o["c_lin_e"], o["z_w_con_c_full"].astype(f64), t["E2C"])
    lim = f64(s["cfl_w_limit"]) * s["dtime"]
    difcoef = s["scalfac_exdiff"] * np.minimum(
        0.85 - lim, np.abs(w_con_e) * s["dtime"] / o["ddqz_z_full_e"] - lim)
    lm = o["levelmask"]
    cond = ((lm[:-1] | lm[1:])[None, :]
            & (np.abs(w_con_e) > (s["cfl_w_limit"] * o["ddqz_z_full_e"]).astype(f64)))
    zeta = o["zeta"]
    dzeta = (zeta[t["E2V"][:, 1]] - zeta[t["E2V"][:, 0]]).astype(f64)
    grdiv_vn = nbsum(o["geofac_grdiv"], o["vn"], t["E2C2EO"])
    ddt = np.where(cond, o["ddt_vn_apc"] + difcoef * o["area_edge"][:, None] * (
        grdiv_vn + (o["tangent_orientation"] * o["inv_primal_edge_length"])[:, None] * dzeta),
        o["ddt_vn_apc"]).astype(f32)
    vt = nbsum(o["rbf_vec_coeff_e"], o["vn"], t["E2C2E"]).astype(f32)
    graddiv2 = nbsum(o["geofac_grdiv"], o["z_graddiv_vn"].astype(f64), t["E2C2EO"]).astype(f32)
    th = o["theta_v"]
    nabla2 = (o["kh_smag_e"].astype(f64) * o["inv_dual_edge_length"][:, None]
              * (th[t["E2C"][:, 1]] - th[t["E2C"][:, 0]]))
    area = o["area_edge"][:, None]
    mass = o["z_rho_e"] * o["z_vn_avg"] * o["ddqz_z_full_e"].astype(f64)
    p = o["p_mflx_tracer_h"]
    r_m = o["r_m"]
    pd = np.where(p >= 0, p * r_m[t["E2C"][:, 0]], p * r_m[t["E2C"][:, 1]])
    return dict(ddt_vn_apc=ddt, vt=vt, z_graddiv2_vn=graddiv2, z_nabla2_e=nabla2,
                mass_fl_e=mass, theta_v_fl_e=mass * o["theta_v_e"], p_mflx_tracer_h=pd)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NE, 0, NLEV), (3, 10, 1, 5), (6, 6, 0, NLEV)])
def test_edge_stencils(backend, bounds):
    a = edge_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    s = EDGE_SCALARS
    run(edge_stencils, a, s, bounds, backend)
    new = {name: inside(v, o[name], *bounds) for name, v in edge_numpy(o, s).items()}
    # vn_diffused uses z_nabla2_e as the statement before it left it
    area = o["area_edge"][:, None]
    diffused = o["vn_diffused"] + area * (
        np.maximum(f64(s["nudgezone_diff"]) * o["nudgecoeff_e"][:, None],
                   o["kh_smag_e"].astype(f64)) * new["z_nabla2_e"]
        - area * o["diff_multfac_vn"][None, :] * o["z_nabla4_e2"].astype(f64))
    new["vn_diffused"] = inside(diffused, o["vn_diffused"], *bounds)
    check(a, new)
    for name in ("vn", "zeta", "levelmask", "theta_v", "r_m"):
        assert np.array_equal(a[name], o[name]), f"input {name} was changed"


# ---------------------------------------------------------------- cells


@field_operator
def _compute_divergence_of_fluxes_of_rho_and_theta(
        geofac_div: Field[Dims[Cell, C2EDim], wpfloat], mass_fl_e: Field[[Edge, K], wpfloat],
        z_theta_v_fl_e: Field[[Edge, K], wpfloat]
) -> tuple[Field[[Cell, K], vpfloat], Field[[Cell, K], vpfloat]]:
    z_flxdiv_mass_wp = neighbor_sum(geofac_div * mass_fl_e(C2E), axis=C2EDim)
    z_flxdiv_theta_wp = neighbor_sum(geofac_div * z_theta_v_fl_e(C2E), axis=C2EDim)
    return astype((z_flxdiv_mass_wp, z_flxdiv_theta_wp), vpfloat)


@field_operator
def _compute_monotone_horizontal_multiplicative_flux_factors_min_max(
        z_tracer_max: Field[[Cell, K], vpfloat], z_tracer_min: Field[[Cell, K], vpfloat],
        beta_fct: wpfloat, r_beta_fct: wpfloat
) -> tuple[Field[[Cell, K], vpfloat], Field[[Cell, K], vpfloat]]:
    z_max = vpfloat(beta_fct) * maximum(max_over(z_tracer_max(C2E2C), axis=C2E2CDim),
                                        z_tracer_max)
    z_min = vpfloat(r_beta_fct) * minimum(min_over(z_tracer_min(C2E2C), axis=C2E2CDim),
                                          z_tracer_min)
    return z_max, z_min


@field_operator
def _compute_monotone_horizontal_multiplicative_flux_factors_p_m(
        z_mflx_anti_in: Field[[Cell, K], vpfloat], z_mflx_anti_out: Field[[Cell, K], vpfloat],
        z_tracer_new_low: Field[[Cell, K], wpfloat], z_max: Field[[Cell, K], vpfloat],
        z_min: Field[[Cell, K], vpfloat], dbl_eps: wpfloat
) -> tuple[Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat]]:
    r_p = (astype(z_max, wpfloat) - z_tracer_new_low) / (astype(z_mflx_anti_in, wpfloat)
                                                         + dbl_eps)
    r_m = (z_tracer_new_low - astype(z_min, wpfloat)) / (astype(z_mflx_anti_out, wpfloat)
                                                         + dbl_eps)
    return r_p, r_m


@field_operator
def _compute_monotone_horizontal_multiplicative_flux_factors(
        z_tracer_max: Field[[Cell, K], vpfloat], z_tracer_min: Field[[Cell, K], vpfloat],
        z_mflx_anti_in: Field[[Cell, K], vpfloat], z_mflx_anti_out: Field[[Cell, K], vpfloat],
        z_tracer_new_low: Field[[Cell, K], wpfloat], beta_fct: wpfloat, r_beta_fct: wpfloat,
        dbl_eps: wpfloat) -> tuple[Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat]]:
    z_max, z_min = _compute_monotone_horizontal_multiplicative_flux_factors_min_max(
        z_tracer_max, z_tracer_min, beta_fct, r_beta_fct)
    r_p, r_m = _compute_monotone_horizontal_multiplicative_flux_factors_p_m(
        z_mflx_anti_in, z_mflx_anti_out, z_tracer_new_low, z_max, z_min, dbl_eps)
    return r_p, r_m


@field_operator
def _interpolate_to_cell_center(interpolant: Field[[Edge, K], vpfloat],
                                e_bln_c_s: Field[[CE], wpfloat]) -> Field[[Cell, K], vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s(C2CE) * interpolant_wp(C2E), axis=C2EDim)
    return astype(interpolation_wp, vpfloat)


@field_operator
def _integrate_tracer_horizontally(
        p_mflx_tracer_h: Field[[Edge, K], wpfloat], deepatmo_divh: Field[[K], wpfloat],
        tracer_now: Field[[Cell, K], wpfloat], rhodz_now: Field[[Cell, K], wpfloat],
        rhodz_new: Field[[Cell, K], wpfloat], geofac_div: Field[Dims[Cell, C2EDim], wpfloat],
        p_dtime: wpfloat) -> Field[[Cell, K], wpfloat]:
    tracer_new_hor = (tracer_now * rhodz_now - p_dtime * deepatmo_divh
                      * neighbor_sum(p_mflx_tracer_h(C2E) * geofac_div, axis=C2EDim)) / rhodz_new
    return tracer_new_hor


@field_operator
def _edge_2_cell_vector_rbf_interpolation(
        p_e_in: Field[[Edge, K], wpfloat], ptr_coeff_1: Field[[Cell, C2E2C2EDim], wpfloat],
        ptr_coeff_2: Field[[Cell, C2E2C2EDim], wpfloat]
) -> tuple[Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(C2E2C2E), axis=C2E2C2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(C2E2C2E), axis=C2E2C2EDim)
    return p_u_out, p_v_out


@program
def cell_stencils(
        geofac_div: Field[Dims[Cell, C2EDim], wpfloat], mass_fl_e: Field[[Edge, K], wpfloat],
        z_theta_v_fl_e: Field[[Edge, K], wpfloat], z_flxdiv_mass: Field[[Cell, K], vpfloat],
        z_flxdiv_theta: Field[[Cell, K], vpfloat], z_tracer_max: Field[[Cell, K], vpfloat],
        z_tracer_min: Field[[Cell, K], vpfloat], z_mflx_anti_in: Field[[Cell, K], vpfloat],
        z_mflx_anti_out: Field[[Cell, K], vpfloat], z_tracer_new_low: Field[[Cell, K], wpfloat],
        r_p: Field[[Cell, K], wpfloat], r_m: Field[[Cell, K], wpfloat],
        interpolant: Field[[Edge, K], vpfloat], e_bln_c_s: Field[[CE], wpfloat],
        interpolation: Field[[Cell, K], vpfloat], deepatmo_divh: Field[[K], wpfloat],
        tracer_now: Field[[Cell, K], wpfloat], rhodz_now: Field[[Cell, K], wpfloat],
        rhodz_new: Field[[Cell, K], wpfloat], tracer_new_hor: Field[[Cell, K], wpfloat],
        ptr_coeff_1: Field[[Cell, C2E2C2EDim], wpfloat],
        ptr_coeff_2: Field[[Cell, C2E2C2EDim], wpfloat], p_u_out: Field[[Cell, K], wpfloat],
        p_v_out: Field[[Cell, K], wpfloat], beta_fct: wpfloat, r_beta_fct: wpfloat,
        dbl_eps: wpfloat, p_dtime: wpfloat, horizontal_start: int32, horizontal_end: int32,
        vertical_start: int32, vertical_end: int32):
    _compute_divergence_of_fluxes_of_rho_and_theta(
        geofac_div, mass_fl_e, z_theta_v_fl_e, out=(z_flxdiv_mass, z_flxdiv_theta),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _compute_monotone_horizontal_multiplicative_flux_factors(
        z_tracer_max, z_tracer_min, z_mflx_anti_in, z_mflx_anti_out, z_tracer_new_low,
        beta_fct, r_beta_fct, dbl_eps, out=(r_p, r_m),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _interpolate_to_cell_center(
        interpolant, e_bln_c_s, out=interpolation,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _integrate_tracer_horizontally(
        mass_fl_e, deepatmo_divh, tracer_now, rhodz_now, rhodz_new, geofac_div, p_dtime,
        out=tracer_new_hor,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _edge_2_cell_vector_rbf_interpolation(
        mass_fl_e, ptr_coeff_1, ptr_coeff_2, out=(p_u_out, p_v_out),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})


def cell_inputs():
    return dict(
        geofac_div=wp(NC, 3) - 0.5, mass_fl_e=wp(NE, NLEV), z_theta_v_fl_e=wp(NE, NLEV),
        z_flxdiv_mass=np.full((NC, NLEV), 2.0, f32), z_flxdiv_theta=np.full((NC, NLEV), 3.0, f32),
        z_tracer_max=vp(NC, NLEV), z_tracer_min=vp(NC, NLEV), z_mflx_anti_in=vp(NC, NLEV),
        z_mflx_anti_out=vp(NC, NLEV), z_tracer_new_low=wp(NC, NLEV),
        r_p=np.zeros((NC, NLEV)), r_m=np.zeros((NC, NLEV)), interpolant=vp(NE, NLEV),
        e_bln_c_s=wp(NC * 3), interpolation=np.full((NC, NLEV), 4.0, f32),
        deepatmo_divh=wp(NLEV), tracer_now=wp(NC, NLEV), rhodz_now=wp(NC, NLEV) + 0.5,
        rhodz_new=wp(NC, NLEV) + 0.5, tracer_new_hor=np.zeros((NC, NLEV)),
        ptr_coeff_1=wp(NC, 9), ptr_coeff_2=wp(NC, 9), p_u_out=np.zeros((NC, NLEV)),
        p_v_out=np.zeros((NC, NLEV)))


CELL_SCALARS = dict(beta_fct=1.1, r_beta_fct=0.9, dbl_eps=1e-3, p_dtime=0.7)


def over(field, tab, op, empty):
    """op over the present neighbours, ``empty`` where a point has none."""
    g = gather(field, tab)
    return np.where(np.isnan(g).all(1), empty, op(np.where(np.isnan(g), empty, g), axis=1))


def cell_numpy(o, s):
    t = TABLES
    zmax = f32(s["beta_fct"]) * np.maximum(
        over(o["z_tracer_max"], t["C2E2C"], np.max, -np.inf).astype(f32), o["z_tracer_max"])
    zmin = f32(s["r_beta_fct"]) * np.minimum(
        over(o["z_tracer_min"], t["C2E2C"], np.min, np.inf).astype(f32), o["z_tracer_min"])
    low, eps = o["z_tracer_new_low"], s["dbl_eps"]
    center = nbsum(o["e_bln_c_s"].reshape(NC, 3), o["interpolant"].astype(f64), t["C2E"])
    hor = (o["tracer_now"] * o["rhodz_now"] - s["p_dtime"] * o["deepatmo_divh"][None, :]
           * nbsum(o["geofac_div"], o["mass_fl_e"], t["C2E"])) / o["rhodz_new"]
    return dict(
        z_flxdiv_mass=nbsum(o["geofac_div"], o["mass_fl_e"], t["C2E"]).astype(f32),
        z_flxdiv_theta=nbsum(o["geofac_div"], o["z_theta_v_fl_e"], t["C2E"]).astype(f32),
        r_p=(zmax.astype(f64) - low) / (o["z_mflx_anti_in"].astype(f64) + eps),
        r_m=(low - zmin.astype(f64)) / (o["z_mflx_anti_out"].astype(f64) + eps),
        interpolation=center.astype(f32), tracer_new_hor=hor,
        p_u_out=nbsum(o["ptr_coeff_1"], o["mass_fl_e"], t["C2E2C2E"]),
        p_v_out=nbsum(o["ptr_coeff_2"], o["mass_fl_e"], t["C2E2C2E"]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV), (2, 7, 1, 5), (4, 4, 0, NLEV)])
def test_cell_stencils(backend, bounds):
    a = cell_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    run(cell_stencils, a, CELL_SCALARS, bounds, backend)
    check(a, {name: inside(v, o[name], *bounds)
              for name, v in cell_numpy(o, CELL_SCALARS).items()})


# ---------------------------------------------------------------- columns


@field_operator
def _compute_dwdz_for_divergence_damping(
        inv_ddqz_z_full: Field[[Cell, K], vpfloat], w: Field[[Cell, K], wpfloat],
        w_concorr_c: Field[[Cell, K], vpfloat]) -> Field[[Cell, K], vpfloat]:
    inv_ddqz_z_full_wp = astype(inv_ddqz_z_full, wpfloat)
    z_dwdz_dd_wp = inv_ddqz_z_full_wp * (
        (w - w(Koff[1])) - astype(w_concorr_c - w_concorr_c(Koff[1]), wpfloat))
    return astype(z_dwdz_dd_wp, vpfloat)


@field_operator
def _compute_solver_coefficients_matrix(
        exner_nnow: Field[[Cell, K], wpfloat], rho_nnow: Field[[Cell, K], wpfloat],
        theta_v_nnow: Field[[Cell, K], wpfloat], inv_ddqz_z_full: Field[[Cell, K], vpfloat],
        vwind_impl_wgt: Field[[Cell], wpfloat], theta_v_ic: Field[[Cell, K], wpfloat],
        rho_ic: Field[[Cell, K], wpfloat], dtime: wpfloat, rd: wpfloat, cvd: wpfloat
) -> tuple[Field[[Cell, K], vpfloat], Field[[Cell, K], vpfloat]]:
    inv_ddqz_z_full_wp = astype(inv_ddqz_z_full, wpfloat)
    z_beta_wp = dtime * rd * exner_nnow / (cvd * rho_nnow * theta_v_nnow) * inv_ddqz_z_full_wp
    z_alpha_wp = vwind_impl_wgt * theta_v_ic * rho_ic
    return astype((z_beta_wp, z_alpha_wp), vpfloat)


@field_operator
def _compute_exner_from_rhotheta(
        rho: Field[[Cell, K], wpfloat], exner: Field[[Cell, K], wpfloat], rd_o_cvd: wpfloat,
        rd_o_p0ref: wpfloat) -> tuple[Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat]]:
    theta_v_wp = exner
    exner_wp = exp(rd_o_cvd * log(rd_o_p0ref * rho * theta_v_wp))
    return theta_v_wp, exner_wp


@field_operator
def _integrate_tracer_vertically_a(
        tracer_now: Field[[Cell, K], wpfloat], rhodz_now: Field[[Cell, K], wpfloat],
        p_mflx_tracer_v: Field[[Cell, K], wpfloat], deepatmo_divzl: Field[[K], wpfloat],
        deepatmo_divzu: Field[[K], wpfloat], rhodz_new: Field[[Cell, K], wpfloat],
        p_dtime: wpfloat) -> Field[[Cell, K], wpfloat]:
    tracer_new = (tracer_now * rhodz_now + p_dtime * (
        p_mflx_tracer_v(Koff[1]) * deepatmo_divzl - p_mflx_tracer_v * deepatmo_divzu)
    ) / rhodz_new
    return tracer_new


@field_operator
def _integrate_tracer_vertically(
        tracer_now: Field[[Cell, K], wpfloat], rhodz_now: Field[[Cell, K], wpfloat],
        p_mflx_tracer_v: Field[[Cell, K], wpfloat], deepatmo_divzl: Field[[K], wpfloat],
        deepatmo_divzu: Field[[K], wpfloat], rhodz_new: Field[[Cell, K], wpfloat],
        k: Field[[K], int32], p_dtime: wpfloat, ivadv_tracer: int32, iadv_slev_jt: int32
) -> Field[[Cell, K], wpfloat]:
    tracer_new = (
        where((iadv_slev_jt <= k),
              _integrate_tracer_vertically_a(tracer_now, rhodz_now, p_mflx_tracer_v,
                                             deepatmo_divzl, deepatmo_divzu, rhodz_new, p_dtime),
              tracer_now)
        if (ivadv_tracer != 0)
        else tracer_now)
    return tracer_new


@field_operator
def _limit_vertical_slope_semi_monotonically(
        p_cc: Field[[Cell, K], wpfloat], z_slope: Field[[Cell, K], wpfloat],
        k: Field[[K], int32], elev: int32) -> Field[[Cell, K], wpfloat]:
    p_cc_min_last = minimum(p_cc(Koff[-1]), p_cc)
    p_cc_min = where(k == elev, p_cc_min_last, minimum(p_cc_min_last, p_cc(Koff[1])))
    slope_l = minimum(abs(z_slope), 2.0 * (p_cc - p_cc_min))
    slope = where(z_slope >= 0.0, slope_l, -slope_l)
    return slope


@scan_operator(axis=K, forward=True, init=wpfloat("0.0"))
def _accumulate_from_top(state: wpfloat, integrand: wpfloat) -> wpfloat:
    return state + integrand


@field_operator
def _compute_vertical_integral(integrand: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    return _accumulate_from_top(integrand)


@field_operator
def _interpolate_cell_field_to_half_levels_wp(
        wgtfac_c: Field[[Cell, K], wpfloat], interpolant: Field[[Cell, K], wpfloat]
) -> Field[[Cell, K], wpfloat]:
    interpolation_wp = wgtfac_c * interpolant + (wpfloat("1.0") - wgtfac_c) * interpolant(
        Koff[-1])
    return interpolation_wp


@field_operator
def extrapolate_quadratically_to_top_on_cells(
        interpolant: Field[[Cell, K], wpfloat], weight_0: Field[[Cell], wpfloat],
        weight_1: Field[[Cell], wpfloat], weight_2: Field[[Cell], wpfloat]
) -> Field[[Cell, K], wpfloat]:
    return (weight_0 * interpolant + weight_1 * interpolant(K + 1)
            + weight_2 * interpolant(K + 2))


@field_operator
def extrapolate_quadratically_to_surface_on_cells(
        interpolant: Field[[Cell, K], wpfloat], weight_0: Field[[Cell], wpfloat],
        weight_1: Field[[Cell], wpfloat], weight_2: Field[[Cell], wpfloat]
) -> Field[[Cell, K], wpfloat]:
    return (weight_0 * interpolant(K - 1) + weight_1 * interpolant(K - 2)
            + weight_2 * interpolant(K - 3))


@field_operator
def with_boundaries_on_half_levels_on_cells(
        top: Field[[Cell, K], wpfloat], interior: Field[[Cell, K], wpfloat],
        bottom: Field[[Cell, K], wpfloat], nlev: int32) -> Field[[Cell, K], wpfloat]:
    result = concat_where((K > 0) & (K < nlev), interior, 0.0)
    result = concat_where(K == 0, top, result)
    return concat_where(K == nlev, bottom, result)


@field_operator
def _interpolate_cell_field_to_half_levels_with_boundaries_wp(
        interpolant: Field[[Cell, K], wpfloat], wgtfac_c: Field[[Cell, K], wpfloat],
        wgtfacq1_0: Field[[Cell], wpfloat], wgtfacq1_1: Field[[Cell], wpfloat],
        wgtfacq1_2: Field[[Cell], wpfloat], wgtfacq_0: Field[[Cell], wpfloat],
        wgtfacq_1: Field[[Cell], wpfloat], wgtfacq_2: Field[[Cell], wpfloat], nlev: int32
) -> Field[[Cell, K], wpfloat]:
    return with_boundaries_on_half_levels_on_cells(
        top=extrapolate_quadratically_to_top_on_cells(
            interpolant=interpolant, weight_0=wgtfacq1_0, weight_1=wgtfacq1_1,
            weight_2=wgtfacq1_2),
        interior=_interpolate_cell_field_to_half_levels_wp(wgtfac_c=wgtfac_c,
                                                           interpolant=interpolant),
        bottom=extrapolate_quadratically_to_surface_on_cells(
            interpolant=interpolant, weight_0=wgtfacq_0, weight_1=wgtfacq_1,
            weight_2=wgtfacq_2),
        nlev=nlev)


@program
def column_stencils(
        inv_ddqz_z_full: Field[[Cell, K], vpfloat], w: Field[[Cell, K], wpfloat],
        w_concorr_c: Field[[Cell, K], vpfloat], z_dwdz_dd: Field[[Cell, K], vpfloat],
        z_beta: Field[[Cell, K], vpfloat], exner_nnow: Field[[Cell, K], wpfloat],
        rho_nnow: Field[[Cell, K], wpfloat], theta_v_nnow: Field[[Cell, K], wpfloat],
        z_alpha: Field[[Cell, K], vpfloat], vwind_impl_wgt: Field[[Cell], wpfloat],
        theta_v_ic: Field[[Cell, K], wpfloat], rho_ic: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat], theta_v: Field[[Cell, K], wpfloat],
        exner: Field[[Cell, K], wpfloat], tracer_now: Field[[Cell, K], wpfloat],
        rhodz_now: Field[[Cell, K], wpfloat], p_mflx_tracer_v: Field[[Cell, K], wpfloat],
        deepatmo_divzl: Field[[K], wpfloat], deepatmo_divzu: Field[[K], wpfloat],
        rhodz_new: Field[[Cell, K], wpfloat], tracer_new: Field[[Cell, K], wpfloat],
        k: Field[[K], int32], p_cc: Field[[Cell, K], wpfloat], z_slope: Field[[Cell, K], wpfloat],
        integrand: Field[[Cell, K], wpfloat], vertical_integral: Field[[Cell, K], wpfloat],
        interpolant: Field[[Cell, K], wpfloat], wgtfac_c: Field[[Cell, K], wpfloat],
        wgtfacq1_0: Field[[Cell], wpfloat], wgtfacq1_1: Field[[Cell], wpfloat],
        wgtfacq1_2: Field[[Cell], wpfloat], wgtfacq_0: Field[[Cell], wpfloat],
        wgtfacq_1: Field[[Cell], wpfloat], wgtfacq_2: Field[[Cell], wpfloat],
        interpolation: Field[[Cell, K], wpfloat], dtime: wpfloat, rd: wpfloat, cvd: wpfloat,
        rd_o_cvd: wpfloat, rd_o_p0ref: wpfloat, p_dtime: wpfloat, ivadv_tracer: int32,
        iadv_slev_jt: int32, elev: int32, nlev: int32, horizontal_start: int32,
        horizontal_end: int32, vertical_start: int32, vertical_end: int32):
    _compute_dwdz_for_divergence_damping(
        inv_ddqz_z_full=inv_ddqz_z_full, w=w, w_concorr_c=w_concorr_c, out=z_dwdz_dd,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _compute_solver_coefficients_matrix(
        exner_nnow=exner_nnow, rho_nnow=rho_nnow, theta_v_nnow=theta_v_nnow,
        inv_ddqz_z_full=inv_ddqz_z_full, vwind_impl_wgt=vwind_impl_wgt, theta_v_ic=theta_v_ic,
        rho_ic=rho_ic, dtime=dtime, rd=rd, cvd=cvd, out=(z_beta, z_alpha),
        domain=({Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)},
                {Cell: (horizontal_start, horizontal_end),
                 K: (vertical_start, vertical_end + 1)}))
    _compute_exner_from_rhotheta(
        rho, exner, rd_o_cvd, rd_o_p0ref, out=(theta_v, exner),
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _integrate_tracer_vertically(
        tracer_now, rhodz_now, p_mflx_tracer_v, deepatmo_divzl, deepatmo_divzu, rhodz_new, k,
        p_dtime, ivadv_tracer, iadv_slev_jt, out=tracer_new,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _limit_vertical_slope_semi_monotonically(
        p_cc, z_slope, k, elev, out=z_slope,
        domain={Cell: (horizontal_start, horizontal_end),
                K: (vertical_start + 1, vertical_end - 1)})
    _compute_vertical_integral(
        integrand=integrand, out=vertical_integral,
        domain={Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _interpolate_cell_field_to_half_levels_with_boundaries_wp(
        interpolant=interpolant, wgtfac_c=wgtfac_c, wgtfacq1_0=wgtfacq1_0,
        wgtfacq1_1=wgtfacq1_1, wgtfacq1_2=wgtfacq1_2, wgtfacq_0=wgtfacq_0, wgtfacq_1=wgtfacq_1,
        wgtfacq_2=wgtfacq_2, nlev=nlev, out=interpolation,
        domain={Cell: (horizontal_start, horizontal_end),
                K: (vertical_start, vertical_end + 1)})


def column_inputs():
    half = NLEV + 1
    return dict(
        inv_ddqz_z_full=vp(NC, NLEV) + 0.5, w=wp(NC, half), w_concorr_c=vp(NC, half),
        z_dwdz_dd=np.full((NC, NLEV), 2.0, f32), z_beta=np.full((NC, NLEV), 3.0, f32),
        exner_nnow=wp(NC, NLEV) + 0.5, rho_nnow=wp(NC, NLEV) + 0.5,
        theta_v_nnow=wp(NC, NLEV) + 0.5, z_alpha=np.full((NC, half), 4.0, f32),
        vwind_impl_wgt=wp(NC), theta_v_ic=wp(NC, half), rho_ic=wp(NC, half),
        rho=wp(NC, NLEV) + 0.5, theta_v=wp(NC, NLEV), exner=wp(NC, NLEV) + 0.5,
        tracer_now=wp(NC, NLEV), rhodz_now=wp(NC, NLEV) + 0.5, p_mflx_tracer_v=wp(NC, half),
        deepatmo_divzl=wp(NLEV), deepatmo_divzu=wp(NLEV), rhodz_new=wp(NC, NLEV) + 0.5,
        tracer_new=np.full((NC, NLEV), 5.0), k=np.arange(NLEV, dtype=np.int32),
        p_cc=wp(NC, NLEV), z_slope=wp(NC, NLEV) - 0.5, integrand=wp(NC, NLEV),
        vertical_integral=np.full((NC, NLEV), 6.0), interpolant=wp(NC, NLEV),
        wgtfac_c=wp(NC, half), wgtfacq1_0=wp(NC), wgtfacq1_1=wp(NC), wgtfacq1_2=wp(NC),
        wgtfacq_0=wp(NC), wgtfacq_1=wp(NC), wgtfacq_2=wp(NC),
        interpolation=np.full((NC, half), 7.0))


COLUMN_SCALARS = dict(dtime=0.9, rd=287.0, cvd=717.0, rd_o_cvd=0.4, rd_o_p0ref=0.8,
                      p_dtime=0.6, iadv_slev_jt=2, elev=NLEV - 2, nlev=NLEV)


def column_numpy(o, s, ivadv_tracer, vs, ve):
    """The columns' results on all levels (the scan from level ``vs`` on)."""
    inv = o["inv_ddqz_z_full"].astype(f64)
    w, wc = o["w"], o["w_concorr_c"]
    dwdz = inv * ((w[:, :-1] - w[:, 1:]) - (wc[:, :-1] - wc[:, 1:]).astype(f64))
    beta = s["dtime"] * s["rd"] * o["exner_nnow"] / (
        s["cvd"] * o["rho_nnow"] * o["theta_v_nnow"]) * inv
    alpha = o["vwind_impl_wgt"][:, None] * o["theta_v_ic"] * o["rho_ic"]
    exner = np.exp(s["rd_o_cvd"] * np.log(s["rd_o_p0ref"] * o["rho"] * o["exner"]))
    mf = o["p_mflx_tracer_v"]
    integrated = (o["tracer_now"] * o["rhodz_now"] + s["p_dtime"] * (
        mf[:, 1:] * o["deepatmo_divzl"] - mf[:, :-1] * o["deepatmo_divzu"])) / o["rhodz_new"]
    lev = np.arange(NLEV)[None, :]
    tracer = (np.where(s["iadv_slev_jt"] <= lev, integrated, o["tracer_now"])
              if ivadv_tracer != 0 else o["tracer_now"])
    p, z = o["p_cc"], o["z_slope"]
    slope = z.copy()
    for kk in range(1, NLEV - 1):
        last = np.minimum(p[:, kk - 1], p[:, kk])
        pmin = last if kk == s["elev"] else np.minimum(last, p[:, kk + 1])
        lim = np.minimum(np.abs(z[:, kk]), 2.0 * (p[:, kk] - pmin))
        slope[:, kk] = np.where(z[:, kk] >= 0, lim, -lim)
    integral = np.zeros((NC, NLEV))
    integral[:, vs:ve] = np.cumsum(o["integrand"][:, vs:ve], axis=1)
    i, wf = o["interpolant"], o["wgtfac_c"]
    half = np.empty((NC, NLEV + 1))
    half[:, 1:NLEV] = wf[:, 1:NLEV] * i[:, 1:] + (1.0 - wf[:, 1:NLEV]) * i[:, :-1]
    half[:, 0] = o["wgtfacq1_0"] * i[:, 0] + o["wgtfacq1_1"] * i[:, 1] + o["wgtfacq1_2"] * i[:, 2]
    half[:, NLEV] = (o["wgtfacq_0"] * i[:, -1] + o["wgtfacq_1"] * i[:, -2]
                     + o["wgtfacq_2"] * i[:, -3])
    return dict(z_dwdz_dd=dwdz.astype(f32), z_beta=beta.astype(f32), z_alpha=alpha.astype(f32),
                theta_v=o["exner"], exner=exner, tracer_new=tracer, z_slope=slope,
                vertical_integral=integral, interpolation=half)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds, ivadv_tracer", [((0, NC, 0, NLEV), 1), ((2, 7, 1, 5), 1),
                                                  ((1, 8, 2, 6), 0), ((4, 4, 0, NLEV), 1)])
def test_column_stencils(backend, bounds, ivadv_tracer):
    hs, he, vs, ve = bounds
    a = column_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    run(column_stencils, a, dict(COLUMN_SCALARS, ivadv_tracer=ivadv_tracer), bounds, backend)
    new = column_numpy(o, COLUMN_SCALARS, ivadv_tracer, vs, ve)
    levels = dict(z_alpha=(vs, ve + 1), interpolation=(vs, ve + 1), z_slope=(vs + 1, ve - 1))
    check(a, {name: inside(v, o[name], hs, he, *levels.get(name, (vs, ve)))
              for name, v in new.items()})
    for name in ("w", "rho", "p_cc", "interpolant", "integrand"):
        assert np.array_equal(a[name], o[name]), f"input {name} was changed"


# ---------------------------------------------------------------- vertices, steep points, masks


@field_operator
def _compute_cell_2_vertex_interpolation(
        cell_in: Field[[Cell, K], wpfloat], c_int: Field[Dims[Vertex, V2CDim], wpfloat]
) -> Field[[Vertex, K], wpfloat]:
    vert_out = neighbor_sum(c_int * cell_in(V2C), axis=V2CDim)
    return vert_out


@field_operator
def _compute_curl(vec_e: Field[[Edge, K], wpfloat],
                  geofac_rot: Field[Dims[Vertex, V2EDim], wpfloat]) -> Field[[Vertex, K], wpfloat]:
    return neighbor_sum(vec_e(V2E) * geofac_rot, axis=V2EDim)


@field_operator
def _mo_intp_rbf_rbf_vec_interpol_vertex(
        p_e_in: Field[[Edge, K], wpfloat], ptr_coeff_1: Field[[Vertex, V2EDim], wpfloat],
        ptr_coeff_2: Field[[Vertex, V2EDim], wpfloat]
) -> tuple[Field[[Vertex, K], wpfloat], Field[[Vertex, K], wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(V2E), axis=V2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(V2E), axis=V2EDim)
    return p_u_out, p_v_out


@field_operator
def _interpolate_wind_to_vertices(
        w: Field[[Cell, K], wpfloat], vn: Field[[Edge, K], wpfloat],
        cells_aw_verts: Field[Dims[Vertex, V2CDim], wpfloat],
        rbf_coeff_v1: Field[Dims[Vertex, V2EDim], wpfloat],
        rbf_coeff_v2: Field[Dims[Vertex, V2EDim], wpfloat]
) -> tuple[Field[[Vertex, K], wpfloat], Field[[Vertex, K], wpfloat],
           Field[[Vertex, K], wpfloat]]:
    w_vert = _compute_cell_2_vertex_interpolation(w, cells_aw_verts)
    u_vert, v_vert = _mo_intp_rbf_rbf_vec_interpol_vertex(
        p_e_in=vn, ptr_coeff_1=rbf_coeff_v1, ptr_coeff_2=rbf_coeff_v2)
    return w_vert, u_vert, v_vert


@field_operator
def _truly_horizontal_diffusion_nabla_of_theta_over_steep_points(
        mask: Field[[Cell, K], bool], zd_vertoffset: Field[[CEC, K], int32],
        zd_diffcoef: Field[[Cell, K], wpfloat], geofac_n2s_c: Field[[Cell], wpfloat],
        geofac_n2s_nbh: Field[[CEC], wpfloat], vcoef: Field[[CEC, K], wpfloat],
        theta_v: Field[[Cell, K], wpfloat], z_temp: Field[[Cell, K], vpfloat]
) -> Field[[Cell, K], vpfloat]:
    z_temp_wp = astype(z_temp, wpfloat)

    theta_v_0 = theta_v(as_offset(Koff, zd_vertoffset(C2CEC[0])))
    theta_v_1 = theta_v(as_offset(Koff, zd_vertoffset(C2CEC[1])))
    theta_v_2 = theta_v(as_offset(Koff, zd_vertoffset(C2CEC[2])))

    theta_v_0_m1 = theta_v(as_offset(Koff, zd_vertoffset(C2CEC[0]) + 1))
    theta_v_1_m1 = theta_v(as_offset(Koff, zd_vertoffset(C2CEC[1]) + 1))
    theta_v_2_m1 = theta_v(as_offset(Koff, zd_vertoffset(C2CEC[2]) + 1))

    sum_tmp = (
        theta_v * geofac_n2s_c
        + geofac_n2s_nbh(C2CEC[0]) * (
            vcoef(C2CEC[0]) * theta_v_0(C2E2C[0])
            + (wpfloat("1.0") - vcoef(C2CEC[0])) * theta_v_0_m1(C2E2C[0]))
        + geofac_n2s_nbh(C2CEC[1]) * (
            vcoef(C2CEC[1]) * theta_v_1(C2E2C[1])
            + (wpfloat("1.0") - vcoef(C2CEC[1])) * theta_v_1_m1(C2E2C[1]))
        + geofac_n2s_nbh(C2CEC[2]) * (
            vcoef(C2CEC[2]) * theta_v_2(C2E2C[2])
            + (wpfloat("1.0") - vcoef(C2CEC[2])) * theta_v_2_m1(C2E2C[2])))

    z_temp_wp = where(mask, z_temp_wp + zd_diffcoef * sum_tmp, z_temp_wp)
    return astype(z_temp_wp, vpfloat)


@field_operator
def _compute_ffsl_backtrajectory_length_indicator(
        p_vn: Field[[Edge, K], wpfloat], p_vt: Field[[Edge, K], wpfloat],
        edge_cell_length: Field[Dims[Edge, E2CDim], wpfloat], p_dt: wpfloat
) -> Field[[Edge, K], int32]:
    traj_length = sqrt(p_vn * p_vn + p_vt * p_vt) * p_dt
    e2c_length = where(p_vn >= 0.0, edge_cell_length[E2CDim(0)], edge_cell_length[E2CDim(1)])
    opt_famask_dsl = where(traj_length > 1.25 * e2c_length, 1, 0)
    return opt_famask_dsl


@field_operator
def _compute_vertical_tracer_flux_upwind(
        p_cc: Field[[Cell, K], wpfloat], p_mflx_contra_v: Field[[Cell, K], wpfloat]
) -> Field[[Cell, K], wpfloat]:
    p_upflux = where(p_mflx_contra_v >= 0.0, p_cc, p_cc(Koff[-1])) * p_mflx_contra_v
    return p_upflux


@program
def mixed_stencils(
        w: Field[[Cell, K], wpfloat], vn: Field[[Edge, K], wpfloat],
        cells_aw_verts: Field[Dims[Vertex, V2CDim], wpfloat],
        rbf_coeff_v1: Field[Dims[Vertex, V2EDim], wpfloat],
        rbf_coeff_v2: Field[Dims[Vertex, V2EDim], wpfloat], w_vert: Field[[Vertex, K], wpfloat],
        u_vert: Field[[Vertex, K], wpfloat], v_vert: Field[[Vertex, K], wpfloat],
        geofac_rot: Field[Dims[Vertex, V2EDim], wpfloat], curl: Field[[Vertex, K], wpfloat],
        mask: Field[[Cell, K], bool], zd_vertoffset: Field[[CEC, K], int32],
        zd_diffcoef: Field[[Cell, K], wpfloat], geofac_n2s_c: Field[[Cell], wpfloat],
        geofac_n2s_nbh: Field[[CEC], wpfloat], vcoef: Field[[CEC, K], wpfloat],
        theta_v: Field[[Cell, K], wpfloat], z_temp: Field[[Cell, K], vpfloat],
        p_vt: Field[[Edge, K], wpfloat], edge_cell_length: Field[Dims[Edge, E2CDim], wpfloat],
        opt_famask_dsl: Field[[Edge, K], int32], p_cc: Field[[Cell, K], wpfloat],
        p_mflx_contra_v: Field[[Cell, K], wpfloat], p_upflux: Field[[Cell, K], wpfloat],
        p_dt: wpfloat, horizontal_start: int32, horizontal_end: int32, cell_start: int32,
        cell_end: int32, edge_start: int32, edge_end: int32, vertical_start: int32,
        vertical_end: int32, vertical_end_half: int32):
    _interpolate_wind_to_vertices(
        w=w, vn=vn, cells_aw_verts=cells_aw_verts, rbf_coeff_v1=rbf_coeff_v1,
        rbf_coeff_v2=rbf_coeff_v2, out=(w_vert, u_vert, v_vert),
        domain=({Vertex: (horizontal_start, horizontal_end),
                 K: (vertical_start, vertical_end_half)},
                {Vertex: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)},
                {Vertex: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)}))
    _compute_curl(vn, geofac_rot, out=curl, domain={
        Vertex: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)})
    _truly_horizontal_diffusion_nabla_of_theta_over_steep_points(
        mask, zd_vertoffset, zd_diffcoef, geofac_n2s_c, geofac_n2s_nbh, vcoef, theta_v, z_temp,
        out=z_temp, domain={Cell: (cell_start, cell_end), K: (vertical_start, vertical_end)})
    _compute_ffsl_backtrajectory_length_indicator(
        vn, p_vt, edge_cell_length, p_dt, out=opt_famask_dsl,
        domain={Edge: (edge_start, edge_end), K: (vertical_start, vertical_end)})
    _compute_vertical_tracer_flux_upwind(
        p_cc, p_mflx_contra_v, out=(p_upflux),
        domain={Cell: (cell_start, cell_end), K: (vertical_start + 1, vertical_end)})


def vertical_offsets():
    """Offsets that keep level k + off and k + off + 1 inside the column."""
    off = RNG.integers(-2, 3, (NC * 3, NLEV))
    lev = np.arange(NLEV)[None, :]
    return np.clip(off, -lev, NLEV - 2 - lev).astype(np.int32)


def mixed_inputs():
    half = NLEV + 1
    return dict(
        w=wp(NC, half), vn=wp(NE, NLEV) - 0.5, cells_aw_verts=wp(NV, 6), rbf_coeff_v1=wp(NV, 6),
        rbf_coeff_v2=wp(NV, 6), w_vert=np.full((NV, half), 2.0), u_vert=np.full((NV, NLEV), 3.0),
        v_vert=np.full((NV, NLEV), 4.0), geofac_rot=wp(NV, 6), curl=np.full((NV, NLEV), 5.0),
        mask=RNG.random((NC, NLEV)) < 0.6, zd_vertoffset=vertical_offsets(),
        zd_diffcoef=wp(NC, NLEV), geofac_n2s_c=wp(NC), geofac_n2s_nbh=wp(NC * 3),
        vcoef=wp(NC * 3, NLEV), theta_v=wp(NC, NLEV), z_temp=vp(NC, NLEV), p_vt=wp(NE, NLEV),
        edge_cell_length=wp(NE, 2) + 0.5, opt_famask_dsl=np.full((NE, NLEV), 7, np.int32),
        p_cc=wp(NC, NLEV), p_mflx_contra_v=wp(NC, half) - 0.5,
        p_upflux=np.full((NC, half), 8.0))


# the steep-point stencil reads every C2E2C neighbour: a table without absent entries
MIXED_TABLES = dict(TABLES, C2E2C=table(NC, 3, NC))


def steep_points_numpy(o):
    t = MIXED_TABLES["C2E2C"]
    th, zd, vcoef, nbh = o["theta_v"], o["zd_vertoffset"], o["vcoef"], o["geofac_n2s_nbh"]
    lev = np.arange(NLEV)[None, :]
    total = th * o["geofac_n2s_c"][:, None]
    for j in range(3):
        n = t[:, j]
        off = zd[n * 3 + j]          # the offsets are read at the neighbour, as GT4Py shifts
        upper = th[n[:, None], lev + off]
        lower = th[n[:, None], lev + off + 1]
        v = vcoef[np.arange(NC) * 3 + j]
        total = total + nbh[np.arange(NC) * 3 + j][:, None] * (v * upper + (1.0 - v) * lower)
    z = o["z_temp"].astype(f64)
    return np.where(o["mask"], z + o["zd_diffcoef"] * total, z).astype(f32)


def mixed_numpy(o, p_dt):
    t = MIXED_TABLES
    vn, vt = o["vn"], o["p_vt"]
    ecl = o["edge_cell_length"]
    length = np.where(vn >= 0, ecl[:, :1], ecl[:, 1:])
    famask = (np.sqrt(vn * vn + vt * vt) * p_dt > 1.25 * length).astype(np.int32)
    pcc, mf = o["p_cc"], o["p_mflx_contra_v"]
    upflux = np.full_like(mf, np.nan)
    upflux[:, 1:NLEV] = np.where(mf[:, 1:NLEV] >= 0, pcc[:, 1:], pcc[:, :-1]) * mf[:, 1:NLEV]
    return dict(
        w_vert=nbsum(o["cells_aw_verts"], o["w"], t["V2C"]),
        u_vert=nbsum(o["rbf_coeff_v1"], vn, t["V2E"]),
        v_vert=nbsum(o["rbf_coeff_v2"], vn, t["V2E"]),
        curl=nbsum(o["geofac_rot"], vn, t["V2E"]), z_temp=steep_points_numpy(o),
        opt_famask_dsl=famask, p_upflux=upflux)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NV, 0, NC, 0, NE, 0, NLEV), (2, 6, 1, 8, 3, 11, 1, 5),
                                    (5, 5, 4, 4, 6, 6, 0, NLEV), (0, NV, 0, NC, 0, NE, 3, 3)])
def test_mixed_stencils(backend, bounds):
    hs, he, cs, ce, es, ee, vs, ve = bounds
    a = mixed_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    p_dt = 1.5
    mixed_stencils(**a, p_dt=p_dt, horizontal_start=hs, horizontal_end=he, cell_start=cs,
                   cell_end=ce, edge_start=es, edge_end=ee, vertical_start=vs, vertical_end=ve,
                   vertical_end_half=ve + 1, offset_provider=MIXED_TABLES, backend=backend)
    new = mixed_numpy(o, p_dt)
    where_ = dict(w_vert=(hs, he, vs, ve + 1), u_vert=(hs, he, vs, ve), v_vert=(hs, he, vs, ve),
                  curl=(hs, he, vs, ve), z_temp=(cs, ce, vs, ve), opt_famask_dsl=(es, ee, vs, ve),
                  p_upflux=(cs, ce, vs + 1, ve))
    check(a, {name: inside(v, o[name], *where_[name]) for name, v in new.items()})
    assert 0 < new["opt_famask_dsl"].sum() < new["opt_famask_dsl"].size


# ---------------------------------------------------------------- saturation adjustment


class _MicrophysicsConstants:
    """Constants read as attributes of an object, as icon4py's microphysics does."""

    vaporisation_latent_heat = 2.5008e6
    specific_heat_capacity_for_water = 4218.0
    tmelt = 273.15
    tetens_p0 = 610.78
    tetens_aw = 17.269
    tetens_bw = 35.86
    tetens_der = tetens_aw * (tmelt - tetens_bw)


microphy_const = _MicrophysicsConstants()
physics_constants = types.ModuleType("physics_constants")   # constants read from a module
physics_constants.rv = 461.51
physics_constants.cvd = 1004.64 - 287.04


@field_operator
def _latent_heat_vaporization(t: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    return (microphy_const.vaporisation_latent_heat
            + (1850.0 - microphy_const.specific_heat_capacity_for_water)
            * (t - microphy_const.tmelt) - physics_constants.rv * t)


@field_operator
def _sat_pres_water(t: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    return microphy_const.tetens_p0 * exp(
        microphy_const.tetens_aw * (t - microphy_const.tmelt) / (t - microphy_const.tetens_bw))


@field_operator
def _qsat_rho(t: Field[[Cell, K], wpfloat], rho: Field[[Cell, K], wpfloat]
              ) -> Field[[Cell, K], wpfloat]:
    return _sat_pres_water(t) / (rho * physics_constants.rv * t)


@field_operator
def _dqsatdT_rho(t: Field[[Cell, K], wpfloat], zqsat: Field[[Cell, K], wpfloat]
                 ) -> Field[[Cell, K], wpfloat]:
    beta = microphy_const.tetens_der / (t - microphy_const.tetens_bw) ** 2 - 1.0 / t
    return beta * zqsat


@field_operator
def _new_temperature_in_newton_iteration(
        temperature: Field[[Cell, K], wpfloat], qv: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat], lwdocvd: Field[[Cell, K], wpfloat],
        new_temperature2: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    ft = new_temperature2 - temperature + lwdocvd * (_qsat_rho(new_temperature2, rho) - qv)
    dft = 1.0 + lwdocvd * _dqsatdT_rho(new_temperature2, _qsat_rho(new_temperature2, rho))
    return new_temperature2 - ft / dft


@field_operator
def _update_temperature_by_newton_iteration(
        temperature: Field[[Cell, K], wpfloat], qv: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat], newton_iteration_mask: Field[[Cell, K], bool],
        lwdocvd: Field[[Cell, K], wpfloat], new_temperature2: Field[[Cell, K], wpfloat]
) -> Field[[Cell, K], wpfloat]:
    new_temperature1 = where(
        newton_iteration_mask,
        _new_temperature_in_newton_iteration(temperature, qv, rho, lwdocvd, new_temperature2),
        new_temperature2)
    return new_temperature1


@field_operator
def _update_temperature_qv_qc_tendencies(
        dtime: wpfloat, temperature: Field[[Cell, K], wpfloat],
        temperature_next: Field[[Cell, K], wpfloat], qv: Field[[Cell, K], wpfloat],
        qc: Field[[Cell, K], wpfloat], rho: Field[[Cell, K], wpfloat],
        subsaturated_mask: Field[[Cell, K], bool]
) -> tuple[Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat]]:
    zqwmin = 1e-20
    qv_tendency, qc_tendency = where(
        subsaturated_mask,
        (qc / dtime, -qc / dtime),
        ((_qsat_rho(temperature_next, rho) - qv) / dtime,
         (maximum(qv + qc - _qsat_rho(temperature_next, rho), zqwmin) - qc) / dtime))
    return (temperature_next - temperature) / dtime, qv_tendency, qc_tendency


@field_operator
def _compute_subsaturated_case_and_initialize_newton_iterations(
        tolerance: wpfloat, temperature: Field[[Cell, K], wpfloat],
        qv: Field[[Cell, K], wpfloat], qc: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat]
) -> tuple[Field[[Cell, K], bool], Field[[Cell, K], wpfloat], Field[[Cell, K], wpfloat],
           Field[[Cell, K], wpfloat], Field[[Cell, K], bool]]:
    temperature_after_all_qc_evaporated = (
        temperature - _latent_heat_vaporization(temperature) / physics_constants.cvd * qc)
    # Check, which points will still be subsaturated even after evaporating all cloud water.
    subsaturated_mask = qv + qc <= _qsat_rho(temperature_after_all_qc_evaporated, rho)
    # Remains const. during iteration
    lwdocvd = _latent_heat_vaporization(temperature) / physics_constants.cvd
    new_temperature1 = where(subsaturated_mask, temperature_after_all_qc_evaporated,
                             temperature - 2.0 * tolerance)
    new_temperature2 = where(subsaturated_mask, temperature_after_all_qc_evaporated, temperature)
    newton_iteration_mask = where(subsaturated_mask, False, True)
    return subsaturated_mask, lwdocvd, new_temperature1, new_temperature2, newton_iteration_mask


@field_operator
def _compute_newton_iteration_mask_and_copy_temperature_on_converged_cells(
        tolerance: wpfloat, temperature_current: Field[[Cell, K], wpfloat],
        temperature_next: Field[[Cell, K], wpfloat]
) -> tuple[Field[[Cell, K], bool], Field[[Cell, K], wpfloat]]:
    newton_iteration_mask = where(
        abs(temperature_current - temperature_next) > tolerance, True, False)
    new_temperature = where(newton_iteration_mask, 0.0, temperature_current)
    return newton_iteration_mask, new_temperature


@program
def saturation_adjustment(
        tolerance: wpfloat, dtime: wpfloat, temperature: Field[[Cell, K], wpfloat],
        qv: Field[[Cell, K], wpfloat], qc: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat], subsaturated_mask: Field[[Cell, K], bool],
        lwdocvd: Field[[Cell, K], wpfloat], new_temperature1: Field[[Cell, K], wpfloat],
        new_temperature2: Field[[Cell, K], wpfloat],
        newton_iteration_mask: Field[[Cell, K], bool],
        temperature_tendency: Field[[Cell, K], wpfloat], qv_tendency: Field[[Cell, K], wpfloat],
        qc_tendency: Field[[Cell, K], wpfloat], horizontal_start: int32, horizontal_end: int32,
        vertical_start: int32, vertical_end: int32):
    domain = {Cell: (horizontal_start, horizontal_end), K: (vertical_start, vertical_end)}
    _compute_subsaturated_case_and_initialize_newton_iterations(
        tolerance, temperature, qv, qc, rho,
        out=(subsaturated_mask, lwdocvd, new_temperature1, new_temperature2,
             newton_iteration_mask), domain=domain)
    _update_temperature_by_newton_iteration(
        temperature, qv, rho, newton_iteration_mask, lwdocvd, new_temperature2,
        out=new_temperature1, domain=domain)
    _update_temperature_qv_qc_tendencies(
        dtime, temperature, new_temperature1, qv, qc, rho, subsaturated_mask,
        out=(temperature_tendency, qv_tendency, qc_tendency), domain=domain)
    _compute_newton_iteration_mask_and_copy_temperature_on_converged_cells(
        tolerance, new_temperature2, new_temperature1,
        out=(newton_iteration_mask, new_temperature1), domain=domain)


def saturation_inputs():
    shape = (NC, NLEV)
    return dict(
        temperature=250.0 + 50.0 * wp(*shape), qv=0.002 + 0.02 * wp(*shape),
        qc=0.002 * wp(*shape), rho=0.6 + 0.6 * wp(*shape),
        subsaturated_mask=RNG.random(shape) < 0.5, lwdocvd=np.full(shape, 1.0),
        new_temperature1=np.full(shape, 2.0), new_temperature2=np.full(shape, 3.0),
        newton_iteration_mask=RNG.random(shape) < 0.5,
        temperature_tendency=np.full(shape, 4.0), qv_tendency=np.full(shape, 5.0),
        qc_tendency=np.full(shape, 6.0))


def saturation_numpy(o, tolerance, dtime, bounds):
    """The four statements by hand, each writing only inside ``bounds``."""
    mc, rv, cvd = microphy_const, 461.51, 1004.64 - 287.04
    t, qv, qc, rho = o["temperature"], o["qv"], o["qc"], o["rho"]

    def lhv(x):
        return (mc.vaporisation_latent_heat + (1850.0 - mc.specific_heat_capacity_for_water)
                * (x - mc.tmelt) - rv * x)

    def qsat(x):
        return mc.tetens_p0 * np.exp(mc.tetens_aw * (x - mc.tmelt) / (x - mc.tetens_bw)) / (
            rho * rv * x)

    r = {name: o[name].copy() for name in o}

    def put(name, value):
        r[name] = inside(value, r[name], *bounds)

    evaporated = t - lhv(t) / cvd * qc
    sub = qv + qc <= qsat(evaporated)
    put("subsaturated_mask", sub)
    put("lwdocvd", lhv(t) / cvd)
    put("new_temperature1", np.where(sub, evaporated, t - 2.0 * tolerance))
    put("new_temperature2", np.where(sub, evaporated, t))
    put("newton_iteration_mask", ~sub)
    t2, lw = r["new_temperature2"], r["lwdocvd"]
    ft = t2 - t + lw * (qsat(t2) - qv)
    dq = (mc.tetens_der / (t2 - mc.tetens_bw) ** 2 - 1.0 / t2) * qsat(t2)
    put("new_temperature1", np.where(r["newton_iteration_mask"], t2 - ft / (1.0 + lw * dq), t2))
    t1, sub = r["new_temperature1"], r["subsaturated_mask"]
    put("temperature_tendency", (t1 - t) / dtime)
    put("qv_tendency", np.where(sub, qc / dtime, (qsat(t1) - qv) / dtime))
    put("qc_tendency", np.where(sub, -qc / dtime,
                                (np.maximum(qv + qc - qsat(t1), 1e-20) - qc) / dtime))
    again = np.abs(t2 - t1) > tolerance
    put("newton_iteration_mask", again)
    put("new_temperature1", np.where(again, 0.0, t2))
    return r


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV), (2, 7, 1, 5), (4, 4, 0, NLEV)])
def test_saturation_adjustment(backend, bounds):
    a = saturation_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    tolerance, dtime = 0.05, 2.0
    run(saturation_adjustment, a, dict(tolerance=tolerance, dtime=dtime), bounds, backend)
    want = saturation_numpy(o, tolerance, dtime, bounds)
    check(a, want, rtol=1e-10)
    if bounds == (0, NC, 0, NLEV):      # both cases occur
        for mask in ("subsaturated_mask", "newton_iteration_mask"):
            assert 0 < want[mask].sum() < want[mask].size, mask


# ---------------------------------------------------------------- advection of rho and theta, PPM


@field_operator
def cell_horizontal_gradients_by_green_gauss_method(
        scalar_field: Field[[Cell, K], vpfloat],
        geofac_grg_x: Field[Dims[Cell, C2E2CODim], wpfloat],
        geofac_grg_y: Field[Dims[Cell, C2E2CODim], wpfloat]
) -> tuple[Field[[Cell, K], vpfloat], Field[[Cell, K], vpfloat]]:
    scalar_field_wp = astype((scalar_field), wpfloat)
    p_grad_1_u_wp = neighbor_sum(geofac_grg_x * scalar_field_wp(C2E2CO), axis=C2E2CODim)
    p_grad_1_v_wp = neighbor_sum(geofac_grg_y * scalar_field_wp(C2E2CO), axis=C2E2CODim)
    return astype((p_grad_1_u_wp, p_grad_1_v_wp), vpfloat)


@field_operator
def _compute_backward_trajectory_from_edge_center(
        p_vn: Field[[Edge, K], wpfloat], p_vt: Field[[Edge, K], vpfloat],
        pos_on_tplane_e_1: Field[Dims[Edge, E2CDim], wpfloat],
        pos_on_tplane_e_2: Field[Dims[Edge, E2CDim], wpfloat],
        primal_normal_cell_1: Field[Dims[Edge, E2CDim], wpfloat],
        dual_normal_cell_1: Field[Dims[Edge, E2CDim], wpfloat],
        primal_normal_cell_2: Field[Dims[Edge, E2CDim], wpfloat],
        dual_normal_cell_2: Field[Dims[Edge, E2CDim], wpfloat], p_dthalf: wpfloat
) -> tuple[Field[[Edge, K], wpfloat], Field[[Edge, K], wpfloat]]:
    lvn_pos = where(p_vn >= wpfloat("0.0"), True, False)
    z_ntdistv_bary_1 = -(
        p_vn * p_dthalf + where(lvn_pos, pos_on_tplane_e_1[E2CDim(0)],
                                pos_on_tplane_e_1[E2CDim(1)]))
    z_ntdistv_bary_2 = -(
        astype(p_vt, wpfloat) * p_dthalf
        + where(lvn_pos, pos_on_tplane_e_2[E2CDim(0)], pos_on_tplane_e_2[E2CDim(1)]))
    p_distv_bary_1 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_1[E2CDim(0)]
        + z_ntdistv_bary_2 * dual_normal_cell_1[E2CDim(0)],
        z_ntdistv_bary_1 * primal_normal_cell_1[E2CDim(1)]
        + z_ntdistv_bary_2 * dual_normal_cell_1[E2CDim(1)])
    p_distv_bary_2 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_2[E2CDim(0)]
        + z_ntdistv_bary_2 * dual_normal_cell_2[E2CDim(0)],
        z_ntdistv_bary_1 * primal_normal_cell_2[E2CDim(1)]
        + z_ntdistv_bary_2 * dual_normal_cell_2[E2CDim(1)])
    return p_distv_bary_1, p_distv_bary_2


@field_operator
def _compute_upwind_values_of_rho_and_theta_v_at_edges(
        p_vn: Field[[Edge, K], wpfloat], rho_ref_me: Field[[Edge, K], vpfloat],
        theta_ref_me: Field[[Edge, K], vpfloat], p_distv_bary_1: Field[[Edge, K], wpfloat],
        p_distv_bary_2: Field[[Edge, K], wpfloat], z_grad_rth_1: Field[[Cell, K], vpfloat],
        z_grad_rth_2: Field[[Cell, K], vpfloat], z_grad_rth_3: Field[[Cell, K], vpfloat],
        z_grad_rth_4: Field[[Cell, K], vpfloat], z_rth_pr_1: Field[[Cell, K], vpfloat],
        z_rth_pr_2: Field[[Cell, K], vpfloat]
) -> tuple[Field[[Edge, K], wpfloat], Field[[Edge, K], wpfloat]]:
    (theta_ref_me_wp, rho_ref_me_wp, z_grad_rth_1_wp, z_grad_rth_2_wp, z_grad_rth_3_wp,
     z_grad_rth_4_wp, z_rth_pr_1_wp, z_rth_pr_2_wp) = astype(
        (theta_ref_me, rho_ref_me, z_grad_rth_1, z_grad_rth_2, z_grad_rth_3, z_grad_rth_4,
         z_rth_pr_1, z_rth_pr_2), wpfloat)
    z_rho_e_wp = where(
        p_vn >= wpfloat("0.0"),
        rho_ref_me_wp + z_rth_pr_1_wp(E2C[0]) + p_distv_bary_1 * z_grad_rth_1_wp(E2C[0])
        + p_distv_bary_2 * z_grad_rth_2_wp(E2C[0]),
        rho_ref_me_wp + z_rth_pr_1_wp(E2C[1]) + p_distv_bary_1 * z_grad_rth_1_wp(E2C[1])
        + p_distv_bary_2 * z_grad_rth_2_wp(E2C[1]))
    z_theta_v_e_wp = where(
        p_vn >= wpfloat("0.0"),
        theta_ref_me_wp + z_rth_pr_2_wp(E2C[0]) + p_distv_bary_1 * z_grad_rth_3_wp(E2C[0])
        + p_distv_bary_2 * z_grad_rth_4_wp(E2C[0]),
        theta_ref_me_wp + z_rth_pr_2_wp(E2C[1]) + p_distv_bary_1 * z_grad_rth_3_wp(E2C[1])
        + p_distv_bary_2 * z_grad_rth_4_wp(E2C[1]))
    return z_rho_e_wp, z_theta_v_e_wp


@field_operator
def _compute_horizontal_advection_of_rho_and_theta(
        p_vn: Field[[Edge, K], wpfloat], p_vt: Field[[Edge, K], vpfloat],
        pos_on_tplane_e_1: Field[Dims[Edge, E2CDim], wpfloat],
        pos_on_tplane_e_2: Field[Dims[Edge, E2CDim], wpfloat],
        primal_normal_cell_1: Field[Dims[Edge, E2CDim], wpfloat],
        dual_normal_cell_1: Field[Dims[Edge, E2CDim], wpfloat],
        primal_normal_cell_2: Field[Dims[Edge, E2CDim], wpfloat],
        dual_normal_cell_2: Field[Dims[Edge, E2CDim], wpfloat], p_dthalf: wpfloat,
        rho_ref_me: Field[[Edge, K], vpfloat], theta_ref_me: Field[[Edge, K], vpfloat],
        perturbed_rho_at_cells_on_model_levels: Field[[Cell, K], vpfloat],
        perturbed_theta_v_at_cells_on_model_levels: Field[[Cell, K], vpfloat],
        geofac_grg_x: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_y: Field[[Cell, C2E2CODim], wpfloat]
) -> tuple[Field[[Edge, K], wpfloat], Field[[Edge, K], wpfloat]]:
    (ddx_perturbed_theta_v, ddy_perturbed_theta_v) = cell_horizontal_gradients_by_green_gauss_method(  # noqa: E501
        scalar_field=perturbed_theta_v_at_cells_on_model_levels, geofac_grg_x=geofac_grg_x,
        geofac_grg_y=geofac_grg_y)
    (ddx_perturbed_rho, ddy_perturbed_rho) = cell_horizontal_gradients_by_green_gauss_method(
        scalar_field=perturbed_rho_at_cells_on_model_levels, geofac_grg_x=geofac_grg_x,
        geofac_grg_y=geofac_grg_y)
    (p_distv_bary_1, p_distv_bary_2) = _compute_backward_trajectory_from_edge_center(
        p_vn, p_vt, pos_on_tplane_e_1, pos_on_tplane_e_2, primal_normal_cell_1,
        dual_normal_cell_1, primal_normal_cell_2, dual_normal_cell_2, p_dthalf)
    (rho_at_edges_on_model_levels, theta_at_edges_on_model_levels) = \
        _compute_upwind_values_of_rho_and_theta_v_at_edges(
            p_vn, rho_ref_me, theta_ref_me, p_distv_bary_1, p_distv_bary_2, ddx_perturbed_rho,
            ddy_perturbed_rho, ddx_perturbed_theta_v, ddy_perturbed_theta_v,
            perturbed_rho_at_cells_on_model_levels, perturbed_theta_v_at_cells_on_model_levels)
    return rho_at_edges_on_model_levels, theta_at_edges_on_model_levels


@field_operator
def _compute_ppm_slope_a(p_cc: Field[[Cell, K], wpfloat],
                         p_cellhgt_mc_now: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    zfac_m1 = (p_cc - p_cc(Koff[-1])) / (p_cellhgt_mc_now + p_cellhgt_mc_now(Koff[-1]))
    zfac = (p_cc(Koff[+1]) - p_cc) / (p_cellhgt_mc_now(Koff[+1]) + p_cellhgt_mc_now)
    z_slope = (p_cellhgt_mc_now / (p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now
                                   + p_cellhgt_mc_now(Koff[+1]))) * (
        (2.0 * p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now) * zfac
        + (p_cellhgt_mc_now + 2.0 * p_cellhgt_mc_now(Koff[+1])) * zfac_m1)
    return z_slope


@field_operator
def _compute_ppm_slope_b(p_cc: Field[[Cell, K], wpfloat],
                         p_cellhgt_mc_now: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    zfac_m1 = (p_cc - p_cc(Koff[-1])) / (p_cellhgt_mc_now + p_cellhgt_mc_now(Koff[-1]))
    z_slope = ((p_cellhgt_mc_now / (p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now
                                    + p_cellhgt_mc_now))
               * (p_cellhgt_mc_now + 2.0 * p_cellhgt_mc_now) * zfac_m1)
    return z_slope


@field_operator
def _compute_ppm_slope(p_cc: Field[[Cell, K], wpfloat], p_cellhgt_mc_now: Field[[Cell, K], wpfloat],
                       elev: int32) -> Field[[Cell, K], wpfloat]:
    z_slope = concat_where(K == elev, _compute_ppm_slope_b(p_cc, p_cellhgt_mc_now),
                           _compute_ppm_slope_a(p_cc, p_cellhgt_mc_now))
    return z_slope


@field_operator
def _compute_vertical_parabola_limiter_condition(
        p_face: Field[[Cell, K], wpfloat], p_cc: Field[[Cell, K], wpfloat]
) -> Field[[Cell, K], int32]:
    z_delta = p_face - p_face(Koff[1])
    z_a6i = 6.0 * (p_cc - 0.5 * (p_face + p_face(Koff[1])))
    l_limit = where(abs(z_delta) < -1.0 * z_a6i, 1, 0)
    return l_limit


@program
def advection_stencils(
        p_vn: Field[[Edge, K], wpfloat], p_vt: Field[[Edge, K], vpfloat],
        pos_on_tplane_e_1: Field[Dims[Edge, E2CDim], wpfloat],
        pos_on_tplane_e_2: Field[Dims[Edge, E2CDim], wpfloat],
        primal_normal_cell_1: Field[Dims[Edge, E2CDim], wpfloat],
        dual_normal_cell_1: Field[Dims[Edge, E2CDim], wpfloat],
        primal_normal_cell_2: Field[Dims[Edge, E2CDim], wpfloat],
        dual_normal_cell_2: Field[Dims[Edge, E2CDim], wpfloat],
        rho_ref_me: Field[[Edge, K], vpfloat], theta_ref_me: Field[[Edge, K], vpfloat],
        perturbed_rho: Field[[Cell, K], vpfloat], perturbed_theta_v: Field[[Cell, K], vpfloat],
        geofac_grg_x: Field[[Cell, C2E2CODim], wpfloat],
        geofac_grg_y: Field[[Cell, C2E2CODim], wpfloat], rho_e: Field[[Edge, K], wpfloat],
        theta_v_e: Field[[Edge, K], wpfloat], p_cc: Field[[Cell, K], wpfloat],
        p_cellhgt_mc_now: Field[[Cell, K], wpfloat], z_slope: Field[[Cell, K], wpfloat],
        p_face: Field[[Cell, K], wpfloat], l_limit: Field[[Cell, K], int32], p_dthalf: wpfloat,
        elev: int32, cell_start: int32, cell_end: int32, edge_start: int32, edge_end: int32,
        vertical_start: int32, vertical_end: int32):
    _compute_horizontal_advection_of_rho_and_theta(
        p_vn, p_vt, pos_on_tplane_e_1, pos_on_tplane_e_2, primal_normal_cell_1,
        dual_normal_cell_1, primal_normal_cell_2, dual_normal_cell_2, p_dthalf, rho_ref_me,
        theta_ref_me, perturbed_rho, perturbed_theta_v, geofac_grg_x, geofac_grg_y,
        out=(rho_e, theta_v_e),
        domain={Edge: (edge_start, edge_end), K: (vertical_start, vertical_end)})
    _compute_ppm_slope(p_cc, p_cellhgt_mc_now, elev, out=z_slope,
                       domain={Cell: (cell_start, cell_end), K: (vertical_start, vertical_end)})
    _compute_vertical_parabola_limiter_condition(
        p_face, p_cc, out=l_limit,
        domain={Cell: (cell_start, cell_end), K: (vertical_start, vertical_end)})


def advection_inputs():
    e2c = {name: wp(NE, 2) - 0.5 for name in (
        "pos_on_tplane_e_1", "pos_on_tplane_e_2", "primal_normal_cell_1", "dual_normal_cell_1",
        "primal_normal_cell_2", "dual_normal_cell_2")}
    return dict(
        p_vn=wp(NE, NLEV) - 0.5, p_vt=vp(NE, NLEV) - 0.5, **e2c, rho_ref_me=vp(NE, NLEV),
        theta_ref_me=vp(NE, NLEV), perturbed_rho=vp(NC, NLEV), perturbed_theta_v=vp(NC, NLEV),
        geofac_grg_x=wp(NC, 4), geofac_grg_y=wp(NC, 4), rho_e=np.full((NE, NLEV), 2.0),
        theta_v_e=np.full((NE, NLEV), 3.0), p_cc=wp(NC, NLEV), p_cellhgt_mc_now=wp(NC, NLEV) + 0.5,
        z_slope=np.full((NC, NLEV), 4.0), p_face=wp(NC, NLEV + 1),
        l_limit=np.full((NC, NLEV), 5, np.int32))


def advection_numpy(o, p_dthalf, elev):
    t = TABLES
    e2c = t["E2C"]

    def grads(field):
        return [nbsum(g, field.astype(f64), t["C2E2CO"]).astype(f32).astype(f64)
                for g in (o["geofac_grg_x"], o["geofac_grg_y"])]

    ddx_th, ddy_th = grads(o["perturbed_theta_v"])
    ddx_rho, ddy_rho = grads(o["perturbed_rho"])
    vn = o["p_vn"]
    pos = vn >= 0

    def side(name):
        s = o[name]
        return np.where(pos, s[:, :1], s[:, 1:])

    z1 = -(vn * p_dthalf + side("pos_on_tplane_e_1"))
    z2 = -(o["p_vt"].astype(f64) * p_dthalf + side("pos_on_tplane_e_2"))
    d1 = z1 * side("primal_normal_cell_1") + z2 * side("dual_normal_cell_1")
    d2 = z1 * side("primal_normal_cell_2") + z2 * side("dual_normal_cell_2")

    def at(field):
        return np.where(pos, field[e2c[:, 0]], field[e2c[:, 1]])

    rho_pr, th_pr = (o[n].astype(f64) for n in ("perturbed_rho", "perturbed_theta_v"))
    rho_e = o["rho_ref_me"].astype(f64) + at(rho_pr) + d1 * at(ddx_rho) + d2 * at(ddy_rho)
    theta_e = o["theta_ref_me"].astype(f64) + at(th_pr) + d1 * at(ddx_th) + d2 * at(ddy_th)

    p, h = o["p_cc"], o["p_cellhgt_mc_now"]
    slope = np.full((NC, NLEV), np.nan)
    for k in range(1, NLEV):
        zfac_m1 = (p[:, k] - p[:, k - 1]) / (h[:, k] + h[:, k - 1])
        if k == elev:
            slope[:, k] = h[:, k] / (h[:, k - 1] + 2 * h[:, k]) * (3 * h[:, k]) * zfac_m1
        elif k < NLEV - 1:
            zfac = (p[:, k + 1] - p[:, k]) / (h[:, k + 1] + h[:, k])
            slope[:, k] = h[:, k] / (h[:, k - 1] + h[:, k] + h[:, k + 1]) * (
                (2 * h[:, k - 1] + h[:, k]) * zfac + (h[:, k] + 2 * h[:, k + 1]) * zfac_m1)
    f = o["p_face"]
    delta = f[:, :-1] - f[:, 1:]
    a6i = 6.0 * (p - 0.5 * (f[:, :-1] + f[:, 1:]))
    limit = (np.abs(delta) < -a6i).astype(np.int32)
    return dict(rho_e=rho_e, theta_v_e=theta_e, z_slope=slope, l_limit=limit)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 0, NE, 1, NLEV), (2, 7, 3, 11, 2, 5),
                                    (4, 4, 6, 6, 1, NLEV)])
def test_advection_stencils(backend, bounds):
    cs, ce, es, ee, vs, ve = bounds
    a = advection_inputs()
    o = {name: np.copy(x) for name, x in a.items()}
    p_dthalf, elev = 0.4, ve - 1            # the last level takes the one-sided slope
    advection_stencils(**a, p_dthalf=p_dthalf, elev=elev, cell_start=cs, cell_end=ce,
                       edge_start=es, edge_end=ee, vertical_start=vs, vertical_end=ve,
                       offset_provider=TABLES, backend=backend)
    new = advection_numpy(o, p_dthalf, elev)
    where_ = dict(rho_e=(es, ee, vs, ve), theta_v_e=(es, ee, vs, ve), z_slope=(cs, ce, vs, ve),
                  l_limit=(cs, ce, vs, ve))
    check(a, {name: inside(v, o[name], *where_[name]) for name, v in new.items()}, rtol=1e-5)
