"""A third round of ICON stencils in GT4Py's spelling: muphys' graupel
sedimentation (``precip_qx_level_update``) inside a ``scan_operator`` whose
state is a NamedTuple of NamedTuples, with a NamedTuple of fields as a scan
operand and a GT4Py ``if`` statement / ``if``-expression on per-column values
inside the scan.  Compared with a hand-written NumPy column loop, interpreted
and compiled.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from tensorir_dace.frontend import (
    Field,
    FieldOffset,
    astype,
    concat_where,
    dims,
    field_operator,
    float64,
    int32,
    minimum,
    power,
    program,
    scan_operator,
    sqrt,
)

Cell, K = dims("Cell K")
Koff = FieldOffset("Koff", source=K, target=(K,))
wpfloat = float64
BACKENDS = ["interpreter", "compiled"]
NC, NLEV = 6, 8
RNG = np.random.default_rng(2301)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2302).bit_generator.state


class Q_scalar(NamedTuple):
    v: wpfloat
    c: wpfloat
    r: wpfloat
    s: wpfloat
    i: wpfloat
    g: wpfloat

class PrecipStateQx(NamedTuple):
    x: wpfloat
    p: wpfloat
    vc: wpfloat
    activated: bool


class TempState(NamedTuple):
    t: wpfloat
    eflx: wpfloat
    activated: bool

class IntegrationState(NamedTuple):
    r: PrecipStateQx
    s: PrecipStateQx
    i: PrecipStateQx
    g: PrecipStateQx
    t_state: TempState
    rho: wpfloat
    pflx_tot: wpfloat

class GraupelConsts:
    rho_00 = 1.225
    ci = 2108.0
    lvc = 3135383.2031927
    lsc = 2899657.201

class ThermodynamicConsts:
    clw = 4192.6641119999995
    cvd = 717.60
    cvv = 1407.95

class IndexConsts:
    prefactor_r, exponent_r, offset_r = 14.58, 0.111, 1.0e-12
    prefactor_s, exponent_s, offset_s = 1.25, 0.160, 1.0e-12
    prefactor_i, exponent_i, offset_i = 1.25, 0.160, 1.0e-12
    prefactor_g, exponent_g, offset_g = 12.24, 0.217, 1.0e-08

@field_operator
def _vel_scale_factor_default_scalar(xrho: wpfloat) -> wpfloat:
    return xrho

@field_operator
def _vel_scale_factor_ice_scalar(xrho: wpfloat) -> wpfloat:
    B_I = wpfloat(0.66666666666666667)
    return power(xrho, B_I)

@field_operator
def precip_qx_level_update(previous_level_q: PrecipStateQx, previous_level_rho: wpfloat,
        prefactor: wpfloat, exponent: wpfloat, offset: wpfloat, zeta: wpfloat, vc: wpfloat,
        q: wpfloat, rho: wpfloat, mask: bool) -> PrecipStateQx:
    current_level_activated = previous_level_q.activated | mask
    rho_x = q * rho
    flx_eff = (rho_x / zeta) + wpfloat(2.0) * previous_level_q.p
    flx_partial = minimum(rho_x * vc * prefactor * power((rho_x + offset), exponent), flx_eff)
    rhox_prev = (previous_level_q.x + q) * wpfloat(0.5) * previous_level_rho
    if current_level_activated:
        vt = (
            previous_level_q.vc * prefactor * power((rhox_prev + offset), exponent)
            if previous_level_q.activated
            else wpfloat(0.0)
        )
        x = (zeta * (flx_eff - flx_partial)) / ((wpfloat(1.0) + zeta * vt) * rho)
        p = (x * rho * vt + flx_partial) * wpfloat(0.5)
    else:
        x = q
        p = wpfloat(0.0)
    return PrecipStateQx(x=x, p=p, vc=vc, activated=current_level_activated)


@field_operator
def _internal_energy_scalar(t: wpfloat, qv: wpfloat, qliq: wpfloat, qice: wpfloat,
                            rho: wpfloat, dz: wpfloat) -> wpfloat:
    qtot = qliq + qice + qv
    cv = (ThermodynamicConsts.cvd * (wpfloat(1.0) - qtot) + ThermodynamicConsts.cvv * qv
          + ThermodynamicConsts.clw * qliq + GraupelConsts.ci * qice)
    return rho * dz * (cv * t - qliq * GraupelConsts.lvc - qice * GraupelConsts.lsc)


@field_operator
def _temperature_update(previous_level: TempState, t: wpfloat, t_kp1: wpfloat, pr: wpfloat,
        pflx_tot: wpfloat, q: Q_scalar, qliq: wpfloat, qice: wpfloat, rho: wpfloat,
        dz: wpfloat, dt: wpfloat, mask: bool) -> TempState:
    current_level_activated = previous_level.activated | mask
    if current_level_activated:
        eflx = pr * (
            ThermodynamicConsts.clw * t - ThermodynamicConsts.cvd * t_kp1 - GraupelConsts.lvc
        ) + (pflx_tot) * (
            GraupelConsts.ci * t - ThermodynamicConsts.cvd * t_kp1 - GraupelConsts.lsc
        )
        e_int = (
            _internal_energy_scalar(
                t=t, qv=q.v, qliq=q.c + q.r, qice=q.s + q.i + q.g, rho=rho, dz=dz
            )
            + dt * previous_level.eflx
            - dt * eflx
        )
        qtot = qliq + qice + q.v
        cv = (
            (
                ThermodynamicConsts.cvd * (wpfloat(1.0) - qtot)
                + ThermodynamicConsts.cvv * q.v
                + ThermodynamicConsts.clw * qliq
                + GraupelConsts.ci * qice
            )
            * rho
            * dz
        )
        t = (e_int + rho * dz * (qliq * GraupelConsts.lvc + qice * GraupelConsts.lsc)) / cv
    else:
        eflx = previous_level.eflx
    return TempState(t=t, eflx=eflx, activated=current_level_activated)

@scan_operator(
    axis=K,
    forward=True,
    init=IntegrationState(
        r=PrecipStateQx(x=0.0, p=0.0, vc=0.0, activated=False),
        s=PrecipStateQx(x=0.0, p=0.0, vc=0.0, activated=False),
        i=PrecipStateQx(x=0.0, p=0.0, vc=0.0, activated=False),
        g=PrecipStateQx(x=0.0, p=0.0, vc=0.0, activated=False),
        t_state=TempState(t=0.0, eflx=0.0, activated=False),
        rho=0.0,
        pflx_tot=0.0,
    ),
)
def _precip_and_t(previous_level: IntegrationState, t: wpfloat, t_kp1: wpfloat, rho: wpfloat,
        q: Q_scalar, mask_r: bool, mask_s: bool, mask_i: bool, mask_g: bool, dt: wpfloat,
        dz: wpfloat) -> IntegrationState:
    zeta = dt / (wpfloat(2.0) * dz)
    xrho = astype(sqrt(GraupelConsts.rho_00 / rho), wpfloat)
    vc_r = _vel_scale_factor_default_scalar(xrho)
    vc_s = _vel_scale_factor_ice_scalar(xrho)
    vc_i = _vel_scale_factor_ice_scalar(xrho)
    vc_g = _vel_scale_factor_default_scalar(xrho)
    any_mask = mask_r | mask_s | mask_i | mask_g
    previous_level_activated = (
        previous_level.r.activated
        | previous_level.s.activated
        | previous_level.i.activated
        | previous_level.g.activated
        | previous_level.t_state.activated
    )
    current_level_activated = any_mask | previous_level_activated
    if current_level_activated:
        r_update = precip_qx_level_update(previous_level.r, previous_level.rho,
            IndexConsts.prefactor_r, IndexConsts.exponent_r, IndexConsts.offset_r, zeta, vc_r,
            q.r, rho, mask_r)
        s_update = precip_qx_level_update(previous_level.s, previous_level.rho,
            IndexConsts.prefactor_s, IndexConsts.exponent_s, IndexConsts.offset_s, zeta, vc_s,
            q.s, rho, mask_s)
        i_update = precip_qx_level_update(previous_level.i, previous_level.rho,
            IndexConsts.prefactor_i, IndexConsts.exponent_i, IndexConsts.offset_i, zeta, vc_i,
            q.i, rho, mask_i)
        g_update = precip_qx_level_update(previous_level.g, previous_level.rho,
            IndexConsts.prefactor_g, IndexConsts.exponent_g, IndexConsts.offset_g, zeta, vc_g,
            q.g, rho, mask_g)
        qliq = q.c + r_update.x
        qice = s_update.x + i_update.x + g_update.x
        t_update = _temperature_update(previous_level.t_state, t=t, t_kp1=t_kp1, pr=r_update.p,
            pflx_tot=s_update.p + i_update.p + g_update.p, q=q, qliq=qliq, qice=qice, rho=rho,
            dz=dz, dt=dt, mask=any_mask)
    else:
        r_update = PrecipStateQx(x=q.r, p=wpfloat(0.0), vc=vc_r, activated=False)
        s_update = PrecipStateQx(x=q.s, p=wpfloat(0.0), vc=vc_s, activated=False)
        i_update = PrecipStateQx(x=q.i, p=wpfloat(0.0), vc=vc_i, activated=False)
        g_update = PrecipStateQx(x=q.g, p=wpfloat(0.0), vc=vc_g, activated=False)
        t_update = TempState(t=t, eflx=previous_level.t_state.eflx, activated=False)
    return IntegrationState(r=r_update, s=s_update, i=i_update, g=g_update, t_state=t_update,
        rho=rho, pflx_tot=s_update.p + i_update.p + g_update.p + r_update.p)

@field_operator
def _graupel_precip(t: Field[[Cell, K], wpfloat], rho: Field[[Cell, K], wpfloat],
        qv: Field[[Cell, K], wpfloat], qc: Field[[Cell, K], wpfloat], qr: Field[[Cell, K], wpfloat],
        qs: Field[[Cell, K], wpfloat], qi: Field[[Cell, K], wpfloat], qg: Field[[Cell, K], wpfloat],
        dz: Field[[Cell, K], wpfloat], dt: wpfloat, qmin: wpfloat, last_lev: int32):
    t_kp1 = concat_where(K < last_lev, t(Koff[1]), t)
    q = Q_scalar(v=qv, c=qc, r=qr, s=qs, i=qi, g=qg)
    r, s, i, g, t_state, _rho, pflx_tot = _precip_and_t(
        t, t_kp1, rho, q, qr > qmin, qs > qmin, qi > qmin, qg > qmin, dt, dz)
    return r.x, s.x, i.x, g.x, t_state.t, r.p, pflx_tot

@program
def graupel_precip(t: Field[[Cell, K], wpfloat], rho: Field[[Cell, K], wpfloat],
        qv: Field[[Cell, K], wpfloat], qc: Field[[Cell, K], wpfloat], qr: Field[[Cell, K], wpfloat],
        qs: Field[[Cell, K], wpfloat], qi: Field[[Cell, K], wpfloat], qg: Field[[Cell, K], wpfloat],
        dz: Field[[Cell, K], wpfloat], qr_out: Field[[Cell, K], wpfloat],
        qs_out: Field[[Cell, K], wpfloat], qi_out: Field[[Cell, K], wpfloat],
        qg_out: Field[[Cell, K], wpfloat], t_out: Field[[Cell, K], wpfloat],
        pr: Field[[Cell, K], wpfloat], pflx: Field[[Cell, K], wpfloat], dt: wpfloat,
        qmin: wpfloat, last_lev: int32, horizontal_start: int32, horizontal_end: int32):
    _graupel_precip(t, rho, qv, qc, qr, qs, qi, qg, dz, dt, qmin, last_lev,
        out=(qr_out, qs_out, qi_out, qg_out, t_out, pr, pflx),
        domain={Cell: (horizontal_start, horizontal_end), K: (0, last_lev + 1)})

class RainSnow(NamedTuple):
    r: PrecipStateQx
    s: PrecipStateQx
    rho: wpfloat


@scan_operator(
    axis=K,
    forward=True,
    init=RainSnow(r=PrecipStateQx(x=0.0, p=0.0, vc=0.0, activated=False),
                  s=PrecipStateQx(x=0.0, p=0.0, vc=0.0, activated=False), rho=0.0),
)
def _precip_rain_and_snow(previous_level: RainSnow, q: Q_scalar, rho: wpfloat, dt: wpfloat,
                          dz: wpfloat, qmin: wpfloat) -> RainSnow:
    zeta = dt / (wpfloat(2.0) * dz)
    xrho = sqrt(GraupelConsts.rho_00 / rho)
    r_update = precip_qx_level_update(
        previous_level.r, previous_level.rho, IndexConsts.prefactor_r, IndexConsts.exponent_r,
        IndexConsts.offset_r, zeta, _vel_scale_factor_default_scalar(xrho), q.r, rho,
        q.r > qmin)
    s_update = precip_qx_level_update(
        previous_level.s, previous_level.rho, IndexConsts.prefactor_s, IndexConsts.exponent_s,
        IndexConsts.offset_s, zeta, _vel_scale_factor_ice_scalar(xrho), q.s, rho, q.s > qmin)
    return RainSnow(r=r_update, s=s_update, rho=rho)


@field_operator
def _graupel_sedimentation(
        qv: Field[[Cell, K], wpfloat], qc: Field[[Cell, K], wpfloat],
        qr: Field[[Cell, K], wpfloat], qs: Field[[Cell, K], wpfloat],
        qi: Field[[Cell, K], wpfloat], qg: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat], dz: Field[[Cell, K], wpfloat], dt: wpfloat,
        qmin: wpfloat):
    q = Q_scalar(v=qv, c=qc, r=qr, s=qs, i=qi, g=qg)
    r, s, _ = _precip_rain_and_snow(q, rho, dt, dz, qmin)
    return r.x, r.p, s.x, s.p


@program
def graupel_sedimentation(
        qv: Field[[Cell, K], wpfloat], qc: Field[[Cell, K], wpfloat],
        qr: Field[[Cell, K], wpfloat], qs: Field[[Cell, K], wpfloat],
        qi: Field[[Cell, K], wpfloat], qg: Field[[Cell, K], wpfloat],
        rho: Field[[Cell, K], wpfloat], dz: Field[[Cell, K], wpfloat],
        qr_out: Field[[Cell, K], wpfloat], pr: Field[[Cell, K], wpfloat],
        qs_out: Field[[Cell, K], wpfloat], ps: Field[[Cell, K], wpfloat], dt: wpfloat,
        qmin: wpfloat):
    _graupel_sedimentation(qv, qc, qr, qs, qi, qg, rho, dz, dt, qmin,
                           out=(qr_out, pr, qs_out, ps))


def sedimentation_numpy(q, rho, dz, dt, qmin, pref, expo, off, vc):
    """One species falling through each column, level by level from the top."""
    x_out, p_out = np.zeros_like(q), np.zeros_like(q)
    for c in range(q.shape[0]):
        px = pp = pvc = prho = 0.0
        pact = False
        for k in range(q.shape[1]):
            zeta = dt / (2.0 * dz[c, k])
            act = pact or q[c, k] > qmin
            rho_x = q[c, k] * rho[c, k]
            flx_eff = rho_x / zeta + 2.0 * pp
            flx_partial = min(rho_x * vc[c, k] * pref * (rho_x + off) ** expo, flx_eff)
            if act:
                rhox_prev = (px + q[c, k]) * 0.5 * prho
                vt = pvc * pref * (rhox_prev + off) ** expo if pact else 0.0
                x = zeta * (flx_eff - flx_partial) / ((1.0 + zeta * vt) * rho[c, k])
                p = (x * rho[c, k] * vt + flx_partial) * 0.5
            else:
                x, p = q[c, k], 0.0
            x_out[c, k], p_out[c, k] = x, p
            px, pp, pvc, pact, prho = x, p, vc[c, k], act, rho[c, k]
    return x_out, p_out


def sedimentation_inputs():
    a = {n: np.where(RNG.random((NC, NLEV)) < 0.4, 0.0, 1e-3 * RNG.random((NC, NLEV)))
         for n in ("qv", "qc", "qr", "qs", "qi", "qg")}
    a["rho"] = 0.5 + RNG.random((NC, NLEV))
    a["dz"] = 100.0 + 200.0 * RNG.random((NC, NLEV))
    for n in ("qr_out", "pr", "qs_out", "ps"):
        a[n] = np.full((NC, NLEV), -1.0)
    return a


@pytest.mark.parametrize("backend", BACKENDS)
def test_graupel_sedimentation(backend):
    a = sedimentation_inputs()
    o = {n: v.copy() for n, v in a.items()}
    dt, qmin = 30.0, 2e-4
    graupel_sedimentation(**a, dt=dt, qmin=qmin, offset_provider={}, backend=backend)
    xrho = np.sqrt(GraupelConsts.rho_00 / o["rho"])
    c = IndexConsts
    qr, pr = sedimentation_numpy(o["qr"], o["rho"], o["dz"], dt, qmin, c.prefactor_r,
                                 c.exponent_r, c.offset_r, xrho)
    qs, ps = sedimentation_numpy(o["qs"], o["rho"], o["dz"], dt, qmin, c.prefactor_s,
                                 c.exponent_s, c.offset_s, xrho ** 0.66666666666666667)
    for name, want in dict(qr_out=qr, pr=pr, qs_out=qs, ps=ps).items():
        np.testing.assert_allclose(a[name], want, rtol=1e-10, atol=1e-14, err_msg=name)
    assert (a["pr"] > 0).any() and (a["ps"] > 0).any() and (a["pr"] == 0).any()


def test_compiled_sedimentation_matches_the_interpreter():
    a = sedimentation_inputs()
    b = {n: v.copy() for n, v in a.items()}
    graupel_sedimentation(**a, dt=30.0, qmin=2e-4, offset_provider={}, backend="interpreter")
    graupel_sedimentation(**b, dt=30.0, qmin=2e-4, offset_provider={}, backend="compiled")
    for n in ("qr_out", "pr", "qs_out", "ps"):
        np.testing.assert_allclose(b[n], a[n], rtol=1e-12, atol=0, err_msg=n)


def precip_and_t_numpy(o, dt, qmin, hs, he):
    """muphys' sedimentation of rain, snow, ice and graupel and the temperature
    update, column by column from the top, written as plain loops."""
    g, th, ix = GraupelConsts, ThermodynamicConsts, IndexConsts
    names = ("r", "s", "i", "g")
    params = {n: (getattr(ix, f"prefactor_{n}"), getattr(ix, f"exponent_{n}"),
                  getattr(ix, f"offset_{n}")) for n in names}
    out = {n: o[n].copy() for n in ("qr_out", "qs_out", "qi_out", "qg_out", "t_out", "pr",
                                      "pflx")}
    t = o["t"]
    for c in range(hs, he):
        prev = {n: (0.0, 0.0, 0.0, False) for n in names}
        tprev, prho = (0.0, 0.0, False), 0.0
        for k in range(NLEV):
            rho, dz, tk = o["rho"][c, k], o["dz"][c, k], t[c, k]
            t_kp1 = t[c, k + 1] if k < NLEV - 1 else tk
            q = {n: o["q" + n][c, k] for n in ("v", "c", "r", "s", "i", "g")}
            zeta = dt / (2.0 * dz)
            xrho = np.sqrt(g.rho_00 / rho)
            vc = dict(r=xrho, s=xrho ** 0.66666666666666667, i=xrho ** 0.66666666666666667,
                      g=xrho)
            mask = {n: q[n] > qmin for n in names}
            any_mask = any(mask.values())
            if any_mask or any(prev[n][3] for n in names) or tprev[2]:
                new = {}
                for n in names:
                    px, pp, pvc, pact = prev[n]
                    pref, expo, off = params[n]
                    act = pact or mask[n]
                    rho_x = q[n] * rho
                    flx_eff = rho_x / zeta + 2.0 * pp
                    flx_partial = min(rho_x * vc[n] * pref * (rho_x + off) ** expo, flx_eff)
                    if act:
                        vt = pvc * pref * ((px + q[n]) * 0.5 * prho + off) ** expo if pact else 0.0
                        x = zeta * (flx_eff - flx_partial) / ((1.0 + zeta * vt) * rho)
                        p = (x * rho * vt + flx_partial) * 0.5
                    else:
                        x, p = q[n], 0.0
                    new[n] = (x, p, vc[n], act)
                qliq = q["c"] + new["r"][0]
                qice = new["s"][0] + new["i"][0] + new["g"][0]
                t_act = tprev[2] or any_mask
                if t_act:
                    psum = new["s"][1] + new["i"][1] + new["g"][1]
                    eflx = (new["r"][1] * (th.clw * tk - th.cvd * t_kp1 - g.lvc)
                            + psum * (g.ci * tk - th.cvd * t_kp1 - g.lsc))
                    ql0, qi0 = q["c"] + q["r"], q["s"] + q["i"] + q["g"]
                    cv0 = (th.cvd * (1.0 - (ql0 + qi0 + q["v"])) + th.cvv * q["v"]
                           + th.clw * ql0 + g.ci * qi0)
                    e_int = (rho * dz * (cv0 * tk - ql0 * g.lvc - qi0 * g.lsc)
                             + dt * tprev[1] - dt * eflx)
                    cv = (th.cvd * (1.0 - (qliq + qice + q["v"])) + th.cvv * q["v"]
                          + th.clw * qliq + g.ci * qice) * rho * dz
                    tn = (e_int + rho * dz * (qliq * g.lvc + qice * g.lsc)) / cv
                else:
                    eflx, tn = tprev[1], tk
                tstate = (tn, eflx, t_act)
            else:
                new = {n: (q[n], 0.0, vc[n], False) for n in names}
                tstate = (tk, tprev[1], False)
            for n in names:
                out[f"q{n}_out"][c, k] = new[n][0]
            out["t_out"][c, k], out["pr"][c, k] = tstate[0], new["r"][1]
            out["pflx"][c, k] = sum(new[n][1] for n in names)
            prev, tprev, prho = new, tstate, rho
    return out


def precip_inputs():
    a = {"t": 250.0 + 40.0 * RNG.random((NC, NLEV)), "rho": 0.5 + RNG.random((NC, NLEV))}
    for n in ("qv", "qc", "qr", "qs", "qi", "qg"):
        a[n] = np.where(RNG.random((NC, NLEV)) < 0.5, 0.0, 1e-3 * RNG.random((NC, NLEV)))
    a["qr"][:, :3] = 0.0     # columns start inactive: the else branches run too
    a["qs"][:, :3] = 0.0
    a["qi"][:, :3] = 0.0
    a["qg"][:, :3] = 0.0
    a["dz"] = 100.0 + 200.0 * RNG.random((NC, NLEV))
    for n in ("qr_out", "qs_out", "qi_out", "qg_out", "t_out", "pr", "pflx"):
        a[n] = np.full((NC, NLEV), -1.0)
    return a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cells", [(0, NC), (1, 4), (3, 3)])
def test_graupel_precipitation_and_temperature(backend, cells):
    a = precip_inputs()
    o = {n: v.copy() for n, v in a.items()}
    dt, qmin = 30.0, 2e-4
    graupel_precip(**a, dt=dt, qmin=qmin, last_lev=NLEV - 1, horizontal_start=cells[0],
                   horizontal_end=cells[1], offset_provider={"Koff": K}, backend=backend)
    want = precip_and_t_numpy(o, dt, qmin, *cells)
    for name, w in want.items():
        np.testing.assert_allclose(a[name], w, rtol=1e-10, atol=1e-14, err_msg=name)


# ---------------------------------------------------------------- metrics


@field_operator
def _compute_wgtfac_c_nlev(z_ifc: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    z_wgtfac_c = (z_ifc(Koff[-1]) - z_ifc) / (z_ifc(Koff[-2]) - z_ifc)
    return z_wgtfac_c


@field_operator
def _compute_wgtfac_c_0(z_ifc: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    z_wgtfac_c = (z_ifc(Koff[+1]) - z_ifc) / (z_ifc(Koff[+2]) - z_ifc)
    return z_wgtfac_c


@field_operator
def _compute_wgtfac_c_inner(z_ifc: Field[[Cell, K], wpfloat]) -> Field[[Cell, K], wpfloat]:
    z_wgtfac_c = (z_ifc(Koff[-1]) - z_ifc) / (z_ifc(Koff[-1]) - z_ifc(Koff[+1]))
    return z_wgtfac_c


@field_operator
def _compute_wgtfac_c(z_ifc: Field[[Cell, K], wpfloat], nlev: int32
                      ) -> Field[[Cell, K], wpfloat]:
    wgt_fac_c = concat_where((0 < K) & (K < nlev), _compute_wgtfac_c_inner(z_ifc), z_ifc)
    wgt_fac_c = concat_where(K == 0, _compute_wgtfac_c_0(z_ifc=z_ifc), wgt_fac_c)
    wgt_fac_c = concat_where(K == nlev, _compute_wgtfac_c_nlev(z_ifc=z_ifc), wgt_fac_c)
    return wgt_fac_c


@program
def compute_wgtfac_c(wgtfac_c: Field[[Cell, K], wpfloat], z_ifc: Field[[Cell, K], wpfloat],
                     nlev: int32, horizontal_start: int32, horizontal_end: int32,
                     vertical_start: int32, vertical_end: int32):
    _compute_wgtfac_c(z_ifc=z_ifc, nlev=nlev, out=wgtfac_c,
                      domain={Cell: (horizontal_start, horizontal_end),
                              K: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV + 1), (1, 5, 1, NLEV), (2, 4, 0, 1),
                                    (0, NC, NLEV, NLEV + 1), (3, 3, 0, NLEV + 1)])
def test_compute_wgtfac_c(backend, bounds):
    hs, he, vs, ve = bounds
    z = np.cumsum(RNG.random((NC, NLEV + 1)) + 0.5, axis=1)[:, ::-1].copy()
    out = np.full((NC, NLEV + 1), -7.0)
    compute_wgtfac_c(wgtfac_c=out, z_ifc=z, nlev=NLEV, horizontal_start=hs,
                     horizontal_end=he, vertical_start=vs, vertical_end=ve,
                     offset_provider={"Koff": K}, backend=backend)
    want = np.empty_like(z)
    want[:, 0] = (z[:, 1] - z[:, 0]) / (z[:, 2] - z[:, 0])
    want[:, 1:-1] = (z[:, :-2] - z[:, 1:-1]) / (z[:, :-2] - z[:, 2:])
    want[:, -1] = (z[:, -2] - z[:, -1]) / (z[:, -3] - z[:, -1])
    expected = np.full((NC, NLEV + 1), -7.0)
    expected[hs:he, vs:ve] = want[hs:he, vs:ve]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
