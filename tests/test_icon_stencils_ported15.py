"""A fifteenth round of ICON stencils (icon4py's field and scan operators) in
icon4py's own spelling, beside ``test_icon_stencils_ported*.py``: scans down
and up the column called the ways icon4py calls them.

First muphys' temperature update after sedimentation: a forward scan whose
carried state is a NamedTuple (temperature, energy flux, whether the column
is active yet) with a NamedTuple ``init``, switched on by a mask and staying
on below it (an ``if``-expression on the carried ``bool``), the temperature
recovered from the internal energy with the energy flux of the level above.
A program writes it on runtime cell and level bounds; then the field
operator is called directly with ``out=`` a tuple, on one domain of NumPy
``int32`` bounds and on a tuple of domains (the scan runs over the union of
their levels).
Then two column integrations on half and full levels: the hydrostatic
pressure summed down the half levels (a forward scan over ``KHalfDim``) and
the height above the surface and the column water summed up the full levels
(a backward scan whose carry and ``init`` are tuples; once more of layer
depths read from the half-level heights, ``z_ifc(KDim - 0.5) - z_ifc(KDim +
0.5)``), written by one
program on runtime bounds, each on its own dimension; the backward scan is
then called directly with ``with_dims`` arrays into a full-level and a
half-level output (the levels both have), and from a program without
``domain=`` (the first output's levels), and the forward one with
``domain=`` over half levels.
Last the cloud top of a column (a forward scan carrying a ``bool`` and an
``int32`` with a tuple ``init``, into a ``bool`` and an ``int32`` output) and
the implicit vertical diffusion of a tracer (a tridiagonal forward sweep with
a carry of two and a backward substitution in one field operator), written
by one program on runtime bounds; the cloud top is then called directly
without ``domain=``.
Each group is one program (or a few direct calls), interpreted and compiled,
compared with NumPy written from the formulas."""

from __future__ import annotations

import types
from typing import NamedTuple, TypeVar

import numpy as np
import pytest

from icon_numpy import check, inside
from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import Dimension, DimensionKind, Dims, Field, with_dims

T = TypeVar("T")
CellDim = Dimension("Cell")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.KDim, dims.KHalfDim = CellDim, KDim, KHalfDim

fa = types.ModuleType("icon_field_aliases")
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat = gtx.float64
wpfloat = ta.wpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NLEV = 7, 9
NH = NLEV + 1
RNG = np.random.default_rng(15001)

# thermodynamic constants (muphys' t_d / g_ct)
CVD, CVV, CLW, CI = 717.6, 1407.95, 4192.66, 2108.0
LVC, LSC, GRAV = 3135383.2, 2899657.2, 9.80665


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(15002).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


# ================================================================== temperature update
#
# muphys' temperature update: once a level of the mask is reached the column
# is active down to the surface; each active level takes the energy flux of
# the level above, loses its own and recovers the temperature from the
# internal energy; an inactive level keeps its temperature and passes the
# flux from above on.


class TempState(NamedTuple):
    t: wpfloat
    eflx: wpfloat
    activated: bool


@gtx.field_operator
def _internal_energy_to_temperature(e_int: wpfloat, qv: wpfloat, qliq: wpfloat,
                                    qice: wpfloat, rho: wpfloat, dz: wpfloat) -> wpfloat:
    qtot = qliq + qice + qv
    cv = (CVD * (1.0 - qtot) + CVV * qv + CLW * qliq + CI * qice) * rho * dz
    return (e_int + rho * dz * (qliq * LVC + qice * LSC)) / cv


@gtx.scan_operator(axis=dims.KDim, forward=True, init=TempState(0.0, 0.0, False))
def _temperature_update(
    previous_level: TempState, t: wpfloat, t_kp1: wpfloat, ei_old: wpfloat, pr: wpfloat,
    pflx_tot: wpfloat, qv: wpfloat, qliq: wpfloat, qice: wpfloat, rho: wpfloat,
    dz: wpfloat, dt: wpfloat, mask: bool,
) -> TempState:
    current_level_activated = previous_level.activated | mask
    eflx = dt * (pr * (CLW * t - CVD * t_kp1 - LVC)
                 + pflx_tot * (CI * t - CVD * t_kp1 - LSC))
    e_int = ei_old + previous_level.eflx - eflx
    t_new = _internal_energy_to_temperature(e_int, qv, qliq, qice, rho, dz)
    return TempState(
        t=t_new if current_level_activated else t,
        eflx=eflx if current_level_activated else previous_level.eflx,
        activated=current_level_activated,
    )


@gtx.field_operator
def _update_temperature_after_sedimentation(
    t: fa.CellKField[wpfloat], t_kp1: fa.CellKField[wpfloat], ei_old: fa.CellKField[wpfloat],
    pr: fa.CellKField[wpfloat], pflx_tot: fa.CellKField[wpfloat], qv: fa.CellKField[wpfloat],
    qliq: fa.CellKField[wpfloat], qice: fa.CellKField[wpfloat], rho: fa.CellKField[wpfloat],
    dz: fa.CellKField[wpfloat], dt: wpfloat, mask: fa.CellKField[bool],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    state = _temperature_update(t, t_kp1, ei_old, pr, pflx_tot, qv, qliq, qice, rho, dz, dt,
                                mask)
    return state.t, state.eflx


@gtx.program
def update_temperature_after_sedimentation(
    t: fa.CellKField[wpfloat], t_kp1: fa.CellKField[wpfloat], ei_old: fa.CellKField[wpfloat],
    pr: fa.CellKField[wpfloat], pflx_tot: fa.CellKField[wpfloat], qv: fa.CellKField[wpfloat],
    qliq: fa.CellKField[wpfloat], qice: fa.CellKField[wpfloat], rho: fa.CellKField[wpfloat],
    dz: fa.CellKField[wpfloat], dt: wpfloat, mask: fa.CellKField[bool],
    t_new: fa.CellKField[wpfloat], eflx: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _update_temperature_after_sedimentation(
        t, t_kp1, ei_old, pr, pflx_tot, qv, qliq, qice, rho, dz, dt, mask,
        out=(t_new, eflx),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


def _temperature_inputs():
    t = RNG.uniform(250.0, 300.0, (NC, NLEV))
    mask = RNG.random((NC, NLEV)) < 0.3
    mask[0, :] = False                       # a column that never switches on
    return dict(t=t, t_kp1=t + RNG.uniform(-1.0, 1.0, (NC, NLEV)),
                ei_old=RNG.uniform(1e5, 2e5, (NC, NLEV)), pr=f64(NC, NLEV) * 1e-3,
                pflx_tot=f64(NC, NLEV) * 1e-3, qv=f64(NC, NLEV) * 1e-2,
                qliq=f64(NC, NLEV) * 1e-3, qice=f64(NC, NLEV) * 1e-3,
                rho=RNG.uniform(0.8, 1.2, (NC, NLEV)), dz=RNG.uniform(50.0, 200.0, (NC, NLEV)),
                dt=30.0, mask=mask)


def _temperature_numpy(a, vs, ve):
    """The scan's temperature and energy flux on levels vs:ve of every cell."""
    t_new, eflx_out = np.zeros((NC, NLEV)), np.zeros((NC, NLEV))
    act, flx = np.zeros(NC, bool), np.zeros(NC)
    for k in range(vs, ve):
        act = act | a["mask"][:, k]
        t, tk = a["t"][:, k], a["t_kp1"][:, k]
        e = a["dt"] * (a["pr"][:, k] * (CLW * t - CVD * tk - LVC)
                       + a["pflx_tot"][:, k] * (CI * t - CVD * tk - LSC))
        e_int = a["ei_old"][:, k] + flx - e
        qv, ql, qi = a["qv"][:, k], a["qliq"][:, k], a["qice"][:, k]
        rdz = a["rho"][:, k] * a["dz"][:, k]
        cv = (CVD * (1.0 - ql - qi - qv) + CVV * qv + CLW * ql + CI * qi) * rdz
        tn = (e_int + rdz * (ql * LVC + qi * LSC)) / cv
        t_new[:, k] = np.where(act, tn, t)
        flx = np.where(act, e, flx)
        eflx_out[:, k] = flx
    return t_new, eflx_out


@pytest.mark.parametrize("backend", BACKENDS)
def test_temperature_update(backend):
    a = _temperature_inputs()
    hs, he, vs, ve = 1, NC - 1, 2, NLEV
    base = {n: f64(NC, NLEV) for n in ("t_new", "eflx")}
    got = {n: v.copy() for n, v in base.items()}
    update_temperature_after_sedimentation(
        **a, **got, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, offset_provider={}, backend=backend)
    t_new, eflx = _temperature_numpy(a, vs, ve)
    check(got, {"t_new": inside(t_new, base["t_new"], hs, he, vs, ve),
                "eflx": inside(eflx, base["eflx"], hs, he, vs, ve)}, rtol=1e-12)
    assert not np.array_equal(got["t_new"][1:, vs:], a["t"][1:, vs:])   # some levels active

    # called directly: one domain of NumPy int32 bounds
    o = (base["t_new"].copy(), base["eflx"].copy())
    _update_temperature_after_sedimentation(
        **a, out=o, domain={CellDim: (np.int32(0), np.int32(NC)), KDim: (np.int32(0), NLEV)},
        offset_provider={}, backend=backend)
    t_new, eflx = _temperature_numpy(a, 0, NLEV)
    np.testing.assert_allclose(o[0], t_new, rtol=1e-12)
    np.testing.assert_allclose(o[1], eflx, rtol=1e-12)

    # a tuple of domains: each output on its own, the scan from the first level either has
    o = (base["t_new"].copy(), base["eflx"].copy())
    _update_temperature_after_sedimentation(
        **a, out=o, domain=({CellDim: (1, 4), KDim: (3, NLEV)}, {CellDim: (2, NC), KDim: (1, 6)}),
        offset_provider={}, backend=backend)
    t_new, eflx = _temperature_numpy(a, 1, NLEV)
    np.testing.assert_allclose(o[0], inside(t_new, base["t_new"], 1, 4, 3, NLEV), rtol=1e-12)
    np.testing.assert_allclose(o[1], inside(eflx, base["eflx"], 2, NC, 1, 6), rtol=1e-12)


# ================================================================== column integrals
#
# the hydrostatic pressure summed down the half levels from the model top, and
# the height above the surface with the column water (density times specific
# water times layer depth) summed up the full levels from the surface.


@gtx.scan_operator(axis=dims.KHalfDim, forward=True, init=0.0)
def _integrate_pressure_down_half_levels(p_above: wpfloat, rho_ic: wpfloat,
                                         dz_ic: wpfloat) -> wpfloat:
    return p_above + GRAV * rho_ic * dz_ic


@gtx.scan_operator(axis=dims.KDim, forward=False, init=(0.0, 0.0))
def _integrate_column_up_from_surface(
    state: tuple[wpfloat, wpfloat], ddqz_z_full: wpfloat, q: wpfloat, rho: wpfloat,
) -> tuple[wpfloat, wpfloat]:
    z_below, column_below = state
    return z_below + ddqz_z_full, column_below + rho * q * ddqz_z_full


@gtx.field_operator
def _compute_pressure_on_half_levels(
    p_top: fa.CellKHalfField[wpfloat], rho_ic: fa.CellKHalfField[wpfloat],
    dz_ic: fa.CellKHalfField[wpfloat],
) -> fa.CellKHalfField[wpfloat]:
    return p_top + _integrate_pressure_down_half_levels(rho_ic, dz_ic)


@gtx.field_operator
def _compute_height_and_column_water(
    ddqz_z_full: fa.CellKField[wpfloat], q: fa.CellKField[wpfloat],
    rho: fa.CellKField[wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z, column = _integrate_column_up_from_surface(ddqz_z_full, q, rho)
    return z - 0.5 * ddqz_z_full, column


@gtx.field_operator
def _compute_column_water_from_interface_heights(
    z_ifc: fa.CellKHalfField[wpfloat], q: fa.CellKField[wpfloat], rho: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    _, column = _integrate_column_up_from_surface(
        z_ifc(dims.KDim - 0.5) - z_ifc(dims.KDim + 0.5), q, rho)
    return column


@gtx.program
def compute_column_integrals(
    p_top: fa.CellKHalfField[wpfloat], rho_ic: fa.CellKHalfField[wpfloat],
    dz_ic: fa.CellKHalfField[wpfloat], ddqz_z_full: fa.CellKField[wpfloat],
    q: fa.CellKField[wpfloat], rho: fa.CellKField[wpfloat], z_ifc: fa.CellKHalfField[wpfloat],
    pressure_ifc: fa.CellKHalfField[wpfloat], z_mc: fa.CellKField[wpfloat],
    column_water: fa.CellKField[wpfloat], column_water_ifc: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_pressure_on_half_levels(
        p_top, rho_ic, dz_ic, out=pressure_ifc,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KHalfDim: (vertical_start, vertical_end + 1)})
    _compute_height_and_column_water(
        ddqz_z_full, q, rho, out=(z_mc, column_water),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_column_water_from_interface_heights(
        z_ifc, q, rho, out=column_water_ifc,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@gtx.program
def integrate_column_into_full_and_half_levels(
    ddqz_z_full: fa.CellKField[wpfloat], q: fa.CellKField[wpfloat],
    rho: fa.CellKField[wpfloat], z_above_surface: fa.CellKField[wpfloat],
    column_water: fa.CellKHalfField[wpfloat],
):
    _integrate_column_up_from_surface(ddqz_z_full, q, rho, out=(z_above_surface, column_water))


def _down(a, vs, ve):
    """Sums of ``a`` down levels vs:ve (zero elsewhere)."""
    out = np.zeros(a.shape)
    out[:, vs:ve] = np.cumsum(a[:, vs:ve], axis=1)
    return out


def _up(a, vs, ve):
    """Sums of ``a`` up levels ve-1 … vs (zero elsewhere)."""
    out = np.zeros(a.shape)
    out[:, vs:ve] = np.cumsum(a[:, vs:ve][:, ::-1], axis=1)[:, ::-1]
    return out


def _column_inputs():
    return dict(p_top=RNG.uniform(1e3, 2e3, (NC, NH)), rho_ic=RNG.uniform(0.8, 1.2, (NC, NH)),
                dz_ic=RNG.uniform(50.0, 200.0, (NC, NH)),
                ddqz_z_full=RNG.uniform(50.0, 200.0, (NC, NLEV)), q=f64(NC, NLEV) * 1e-2,
                rho=RNG.uniform(0.8, 1.2, (NC, NLEV)),
                z_ifc=np.cumsum(RNG.uniform(50.0, 200.0, (NC, NH))[:, ::-1], axis=1)[:, ::-1])


@pytest.mark.parametrize("bounds", [(0, NLEV), (2, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_column_integrals(backend, bounds):
    a = _column_inputs()
    hs, he = 1, NC - 1
    vs, ve = bounds
    base = dict(pressure_ifc=f64(NC, NH), z_mc=f64(NC, NLEV), column_water=f64(NC, NLEV),
                column_water_ifc=f64(NC, NLEV))
    got = {n: v.copy() for n, v in base.items()}
    compute_column_integrals(**a, **got, horizontal_start=hs, horizontal_end=he,
                             vertical_start=vs, vertical_end=ve, offset_provider={},
                             backend=backend)
    p = a["p_top"] + _down(GRAV * a["rho_ic"] * a["dz_ic"], vs, ve + 1)
    z = _up(a["ddqz_z_full"], vs, ve) - 0.5 * a["ddqz_z_full"]
    col = _up(a["rho"] * a["q"] * a["ddqz_z_full"], vs, ve)
    col_ifc = _up(a["rho"] * a["q"] * (a["z_ifc"][:, :-1] - a["z_ifc"][:, 1:]), vs, ve)
    check(got, {"pressure_ifc": inside(p, base["pressure_ifc"], hs, he, vs, ve + 1),
                "z_mc": inside(z, base["z_mc"], hs, he, vs, ve),
                "column_water": inside(col, base["column_water"], hs, he, vs, ve),
                "column_water_ifc": inside(col_ifc, base["column_water_ifc"], hs, he, vs, ve)},
          rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_column_integrals(backend):
    a = _column_inputs()
    # the backward scan itself, of with_dims arrays, into a full-level and a
    # half-level output: on the levels both have, the last half level kept
    z, col = np.full((NC, NLEV), 7.0), np.full((NC, NH), 7.0)
    _integrate_column_up_from_surface(
        with_dims(a["ddqz_z_full"], CellDim, KDim), with_dims(a["q"], CellDim, KDim),
        with_dims(a["rho"], CellDim, KDim), out=(z, col), offset_provider={}, backend=backend)
    np.testing.assert_allclose(z, _up(a["ddqz_z_full"], 0, NLEV), rtol=1e-12)
    np.testing.assert_allclose(col[:, :NLEV], _up(a["rho"] * a["q"] * a["ddqz_z_full"], 0,
                                                  NLEV), rtol=1e-12)
    np.testing.assert_array_equal(col[:, NLEV], 7.0)
    # on one domain, the scan from its last level up
    z, col = np.full((NC, NLEV), 7.0), np.full((NC, NH), 7.0)
    _integrate_column_up_from_surface(
        with_dims(a["ddqz_z_full"], CellDim, KDim), with_dims(a["q"], CellDim, KDim),
        with_dims(a["rho"], CellDim, KDim), out=(z, col),
        domain={CellDim: (2, NC), KDim: (np.int32(1), NLEV - 2)}, offset_provider={},
        backend=backend)
    seven = np.full((NC, NH), 7.0)
    np.testing.assert_allclose(z, inside(_up(a["ddqz_z_full"], 1, NLEV - 2), seven[:, :NLEV],
                                         2, NC, 1, NLEV - 2), rtol=1e-12)
    np.testing.assert_allclose(
        col, inside(np.pad(_up(a["rho"] * a["q"] * a["ddqz_z_full"], 1, NLEV - 2),
                           ((0, 0), (0, 1))), seven, 2, NC, 1, NLEV - 2), rtol=1e-12)
    # the scan operator called in a program without domain=: the first
    # output's domain, the full levels, for the half-level output too
    z, col = np.full((NC, NLEV), 7.0), np.full((NC, NH), 7.0)
    integrate_column_into_full_and_half_levels(a["ddqz_z_full"], a["q"], a["rho"], z, col,
                                               offset_provider={}, backend=backend)
    np.testing.assert_allclose(z, _up(a["ddqz_z_full"], 0, NLEV), rtol=1e-12)
    np.testing.assert_allclose(col[:, :NLEV], _up(a["rho"] * a["q"] * a["ddqz_z_full"], 0,
                                                  NLEV), rtol=1e-12)
    np.testing.assert_array_equal(col[:, NLEV], 7.0)
    # the half-level field operator on part of the half levels
    base = f64(NC, NH)
    p = base.copy()
    _compute_pressure_on_half_levels(a["p_top"], a["rho_ic"], a["dz_ic"], out=p,
                                     domain={CellDim: (0, NC - 2), KHalfDim: (3, NH)},
                                     offset_provider={}, backend=backend)
    want = a["p_top"] + _down(GRAV * a["rho_ic"] * a["dz_ic"], 3, NH)
    np.testing.assert_allclose(p, inside(want, base, 0, NC - 2, 3, NH), rtol=1e-12)


# ============================================================ cloud top, implicit diffusion
#
# the cloud top of a column: a forward scan carrying whether cloud was met and
# the level where it was first met (a bool and an int32 carry with a tuple
# ``init``), from icon4py's level field; and the implicit vertical diffusion of
# a tracer, a tridiagonal system solved by a forward sweep (carry of two) and
# a backward substitution, both in one field operator.


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(False, gtx.int32(0)))
def _search_cloud_top(state: tuple[bool, gtx.int32], qc: wpfloat, k: gtx.int32,
                      qc_threshold: wpfloat) -> tuple[bool, gtx.int32]:
    found_above, top_above = state
    here = qc > qc_threshold
    return found_above | here, top_above if found_above else k


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(0.0, 0.0))
def _tridiagonal_forward_sweep(state: tuple[wpfloat, wpfloat], a: wpfloat, b: wpfloat,
                               c: wpfloat, d: wpfloat) -> tuple[wpfloat, wpfloat]:
    c_prime_above, d_prime_above = state
    denominator = b - a * c_prime_above
    return c / denominator, (d - a * d_prime_above) / denominator


@gtx.scan_operator(axis=dims.KDim, forward=False, init=0.0)
def _tridiagonal_back_substitution(x_below: wpfloat, c_prime: wpfloat,
                                   d_prime: wpfloat) -> wpfloat:
    return d_prime - c_prime * x_below


@gtx.field_operator
def _diffuse_tracer_implicitly(
    tracer: fa.CellKField[wpfloat], kh: fa.CellKField[wpfloat],
    inv_dz2: fa.CellKField[wpfloat], dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    a = -dtime * kh * inv_dz2
    c = a
    b = 1.0 - 2.0 * a
    c_prime, d_prime = _tridiagonal_forward_sweep(a, b, c, tracer)
    return _tridiagonal_back_substitution(c_prime, d_prime)


@gtx.field_operator
def _cloud_top(qc: fa.CellKField[wpfloat], k_field: fa.CellKField[gtx.int32],
               qc_threshold: wpfloat
               ) -> tuple[fa.CellKField[bool], fa.CellKField[gtx.int32]]:
    return _search_cloud_top(qc, k_field, qc_threshold)


@gtx.program
def cloud_top_and_implicit_diffusion(
    qc: fa.CellKField[wpfloat], k_field: fa.CellKField[gtx.int32], qc_threshold: wpfloat,
    tracer: fa.CellKField[wpfloat], kh: fa.CellKField[wpfloat],
    inv_dz2: fa.CellKField[wpfloat], dtime: wpfloat,
    cloud_found: fa.CellKField[bool], cloud_top: fa.CellKField[gtx.int32],
    tracer_new: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _cloud_top(qc, k_field, qc_threshold, out=(cloud_found, cloud_top),
               domain={dims.CellDim: (horizontal_start, horizontal_end),
                       dims.KDim: (vertical_start, vertical_end)})
    _diffuse_tracer_implicitly(tracer, kh, inv_dz2, dtime, out=tracer_new,
                               domain={dims.CellDim: (horizontal_start, horizontal_end),
                                       dims.KDim: (vertical_start, vertical_end)})


def _cloud_top_numpy(qc, thr, vs, ve):
    found, top = np.zeros((NC, NLEV), bool), np.zeros((NC, NLEV), np.int32)
    f, t = np.zeros(NC, bool), np.zeros(NC, np.int32)
    for k in range(vs, ve):
        t = np.where(f, t, k).astype(np.int32)
        f = f | (qc[:, k] > thr)
        found[:, k], top[:, k] = f, t
    return found, top


def _implicit_diffusion_numpy(tracer, kh, inv_dz2, dtime, vs, ve):
    a = -dtime * kh * inv_dz2
    b = 1.0 - 2.0 * a
    out = np.zeros(tracer.shape)
    cp, dp = np.zeros(tracer.shape), np.zeros(tracer.shape)
    c_above, d_above = np.zeros(NC), np.zeros(NC)
    for k in range(vs, ve):
        den = b[:, k] - a[:, k] * c_above
        c_above, d_above = a[:, k] / den, (tracer[:, k] - a[:, k] * d_above) / den
        cp[:, k], dp[:, k] = c_above, d_above
    x = np.zeros(NC)
    for k in range(ve - 1, vs - 1, -1):
        x = dp[:, k] - cp[:, k] * x
        out[:, k] = x
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_cloud_top_and_implicit_diffusion(backend):
    qc = f64(NC, NLEV) * np.where(RNG.random((NC, NLEV)) < 0.3, 1.0, 1e-3)
    k_field = np.broadcast_to(np.arange(NLEV, dtype=np.int32), (NC, NLEV)).copy()
    tracer, kh = f64(NC, NLEV), f64(NC, NLEV)
    inv_dz2, dtime, thr = RNG.uniform(0.5, 1.0, (NC, NLEV)), 0.4, 0.1
    hs, he, vs, ve = 0, NC - 1, 1, NLEV - 1
    found = np.zeros((NC, NLEV), bool)
    top = np.full((NC, NLEV), -5, np.int32)
    base = f64(NC, NLEV)
    new = base.copy()
    cloud_top_and_implicit_diffusion(
        qc=qc, k_field=k_field, qc_threshold=thr, tracer=tracer, kh=kh, inv_dz2=inv_dz2,
        dtime=dtime, cloud_found=found, cloud_top=top, tracer_new=new,
        horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
        offset_provider={}, backend=backend)
    want_found, want_top = _cloud_top_numpy(qc, thr, vs, ve)
    np.testing.assert_array_equal(found, inside(want_found, np.zeros((NC, NLEV), bool),
                                                hs, he, vs, ve))
    np.testing.assert_array_equal(top, inside(want_top, np.full((NC, NLEV), -5, np.int32),
                                              hs, he, vs, ve))
    want = _implicit_diffusion_numpy(tracer, kh, inv_dz2, dtime, vs, ve)
    np.testing.assert_allclose(new, inside(want, base, hs, he, vs, ve), rtol=1e-12)

    # the cloud-top field operator called directly, without domain= (the whole
    # column), into a bool and an int32 output
    found = np.zeros((NC, NLEV), bool)
    top = np.full((NC, NLEV), -5, np.int32)
    _cloud_top(qc, k_field, thr, out=(found, top), offset_provider={}, backend=backend)
    want_found, want_top = _cloud_top_numpy(qc, thr, 0, NLEV)
    np.testing.assert_array_equal(found, want_found)
    np.testing.assert_array_equal(top, want_top)
