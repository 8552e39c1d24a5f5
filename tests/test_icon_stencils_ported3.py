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
    dims,
    field_operator,
    float64,
    minimum,
    power,
    program,
    scan_operator,
    sqrt,
)

Cell, K = dims("Cell K")
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
