"""A fifth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

muphys' graupel microphysics: the fourteen phase transitions
(``_cloud_to_rain`` … ``_vapor_x_snow``), the particle properties
(``_snow_number``, ``_snow_lambda``, ``_ice_number``, ``_ice_mass``,
``_ice_sticking``, ``_deposition_factor``, ``_deposition_auto_conversion``,
``_ice_deposition_nucleation``, ``_vel_scale_factor_snow``), the saturation
functions over ice and at the melting point, and the whole ``graupel`` field
operator: ``_q_t_update`` on a NamedTuple of fields (``Q``), with
``symmetric``/``cond_symmetric`` returning tuples chosen by ``where``,
``sink_saturation`` taking a tuple parameter and returning five fields without
a return annotation, a GT4Py ``if`` on a ``bool`` scalar choosing a
``broadcast(True, …)``, ``~`` on a bool scalar inside a field expression, and
``where(mask, _q_t_update(…), (q, te))`` on a nested tuple; then the
precipitation scan (``_precip_and_t``: a NamedTuple of NamedTuples as the
carried state, the snow fall-speed factor through ``_snow_number_scalar``'s
``if``-expression) behind ``concat_where(dims.KDim < last_lev, t(KDim + 1),
t)``; written by ``graupel_run`` with a nested tuple of domains, the surface
fluxes on the last level only (GT4Py runs the scan over the union of the
domains of the outputs reading it).  Then the vertical diffusion of vn and w
written in place, and the horizontal advection of w at half levels with index
fields in chained comparisons; advection's least-squares reconstructions over
``C2E2C`` (coefficients read through a strided offset) and ``C2E2C2E2C``
(nine sparse coefficient fields, missing neighbours, ten outputs); PPM face
values with ``concat_where`` on runtime single levels; and tracer densities (an
``if``-expression on an ``int32`` choosing a float32 ``C2E`` sum, ``KField``
coefficients of a vertical increment).  Each group is one
program, interpreted and compiled once, compared with hand-written NumPy.
"""

from __future__ import annotations

import types
from typing import NamedTuple, TypeVar

import numpy as np
import pytest

from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    astype,
    broadcast,
    concat_where,
    exp,
    float32,
    float64,
    maximum,
    minimum,
    neighbor_sum,
    power,
    sqrt,
    where,
)
from test_icon_stencils_local import (
    _cells2verts_scalar as _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl,
)
from test_icon_stencils_local import _compute_horizontal_advection_term_for_vertical_velocity
from test_icon_stencils_ported3 import (
    IntegrationState,
    PrecipStateQx,
    Q_scalar,
    TempState,
    _temperature_update,
    _vel_scale_factor_default_scalar,
    _vel_scale_factor_ice_scalar,
    precip_qx_level_update,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)

CECDim = Dimension("CEC")
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
C2E2C2E2CDim = Dimension("C2E2C2E2C", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.E2VDim, dims.V2CDim = E2CDim, E2VDim, V2CDim
dims.CECDim, dims.C2E2CDim, dims.C2E2C2E2CDim = CECDim, C2E2CDim, C2E2C2E2CDim
dims.C2EDim = C2EDim
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
C2CEC = FieldOffset("C2CEC", source=CECDim, target=(CellDim, C2E2CDim))
C2E2C2E2C = FieldOffset("C2E2C2E2C", source=CellDim, target=(CellDim, C2E2C2E2CDim))
dims.E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
dims.E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
dims.V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
dims.Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
Koff = dims.Koff

fa = types.ModuleType("icon_field_aliases")
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KField = Field[Dims[KDim], T]
fa.VertexField = Field[Dims[VertexDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NLEV = 9, 7
RNG = np.random.default_rng(2601)
f64 = np.float64


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2602).bit_generator.state


def check(got, expected, rtol, atol=0.0):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


# ================================================================== muphys: graupel
#
# Constants as icon4py's muphys defines them (GraupelConsts, ThermodynamicConsts,
# IndexConsts).


class GraupelConsts:
    rho_00 = 1.225
    q1 = 8.0e-6
    qmin = 1.0e-15
    ams = 0.069
    bms = 2.0
    v0s = 25.0
    v1s = 0.5
    m0_ice = 1.0e-12
    ci = 2108.0
    tx = 3339.5
    tfrz_het1 = 267.15
    tfrz_het2 = 248.15
    tfrz_hom = 236.15
    lvc = 3135383.2031928
    lsc = 2899657.201


class ThermodynamicConsts:
    rd = 287.04
    cpd = 1004.64
    cvd = 717.60
    rv = 461.51
    cvv = 1407.95
    als = 2.8345e6
    tmelt = 273.15
    clw = 4192.6641119999995


class IndexConsts:
    prefactor_r, exponent_r, offset_r = 14.58, 0.111, 1.0e-12
    prefactor_i, exponent_i, offset_i = 1.25, 0.160, 1.0e-12
    prefactor_s, exponent_s, offset_s = 57.80, 0.16666666666666666, 1.0e-12
    prefactor_g, exponent_g, offset_g = 12.24, 0.217, 1.0e-08


class Q(NamedTuple):
    v: fa.CellKField[ta.wpfloat]
    c: fa.CellKField[ta.wpfloat]
    r: fa.CellKField[ta.wpfloat]
    s: fa.CellKField[ta.wpfloat]
    i: fa.CellKField[ta.wpfloat]
    g: fa.CellKField[ta.wpfloat]


# ------------------------------------------------------------------ thermodynamics


@gtx.field_operator
def _qsat_rho(t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat]
              ) -> fa.CellKField[ta.wpfloat]:
    C1ES = 610.78
    C3LES = 17.269
    C4LES = 35.86
    return (C1ES * exp(C3LES * (t - ThermodynamicConsts.tmelt) / (t - C4LES))) / (
        rho * ThermodynamicConsts.rv * t)


@gtx.field_operator
def _qsat_ice_rho(t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat]
                  ) -> fa.CellKField[ta.wpfloat]:
    C1ES = 610.78
    C3IES = 21.875
    C4IES = 7.66
    return (C1ES * exp(C3IES * (t - ThermodynamicConsts.tmelt) / (t - C4IES))) / (
        rho * ThermodynamicConsts.rv * t)


@gtx.field_operator
def _qsat_rho_tmelt(rho: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    C1ES = 610.78
    return C1ES / (rho * ThermodynamicConsts.rv * ThermodynamicConsts.tmelt)


# ------------------------------------------------------------------ properties


@gtx.field_operator
def _deposition_auto_conversion(
    qi: fa.CellKField[ta.wpfloat], m_ice: fa.CellKField[ta.wpfloat],
    ice_dep: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    M0_S = wpfloat(3.0e-9)
    B_DEP = wpfloat(0.666666666666666667)
    XCRIT = wpfloat(1.0)
    return where(
        qi > GraupelConsts.qmin,
        maximum(wpfloat(0.0), ice_dep) * B_DEP / (power((M0_S / m_ice), B_DEP) - XCRIT),
        wpfloat(0.0),
    )


@gtx.field_operator
def _deposition_factor(t: fa.CellKField[ta.wpfloat], qvsi: fa.CellKField[ta.wpfloat]
                       ) -> fa.CellKField[ta.wpfloat]:
    KAPPA = wpfloat(2.40e-2)
    B = wpfloat(1.94)
    A = ThermodynamicConsts.als * ThermodynamicConsts.als / (KAPPA * ThermodynamicConsts.rv)
    CX = wpfloat(2.22e-5) * power(ThermodynamicConsts.tmelt, (-B)) * wpfloat(101325.0)
    x = CX / ThermodynamicConsts.rd * power(t, B - wpfloat(1.0))
    return x / (wpfloat("1.0") + A * x * qvsi / (t * t))


@gtx.field_operator
def _ice_deposition_nucleation(
    t: fa.CellKField[ta.wpfloat], qc: fa.CellKField[ta.wpfloat], qi: fa.CellKField[ta.wpfloat],
    ni: fa.CellKField[ta.wpfloat], dvsi: fa.CellKField[ta.wpfloat], dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    return where(
        (qi <= GraupelConsts.qmin)
        & (
            ((t < GraupelConsts.tfrz_het2) & (dvsi > wpfloat(0.0)))
            | ((t <= GraupelConsts.tfrz_het1) & (qc > GraupelConsts.qmin))
        ),
        minimum(GraupelConsts.m0_ice * ni, maximum(wpfloat(0.0), dvsi)) / dt,
        wpfloat(0.0),
    )


@gtx.field_operator
def _ice_mass(qi: fa.CellKField[ta.wpfloat], ni: fa.CellKField[ta.wpfloat]
              ) -> fa.CellKField[ta.wpfloat]:
    MI_MAX = wpfloat(1.0e-9)
    return maximum(GraupelConsts.m0_ice, minimum(qi / ni, MI_MAX))


@gtx.field_operator
def _ice_number(t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat]
                ) -> fa.CellKField[ta.wpfloat]:
    A_COOP = wpfloat(5.000)
    B_COOP = wpfloat(0.304)
    NIMAX = wpfloat(250.0e3)
    return minimum(NIMAX, A_COOP * exp(B_COOP * (ThermodynamicConsts.tmelt - t))) / rho


@gtx.field_operator
def _ice_sticking(t: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    A_FREEZ = wpfloat(0.09)
    B_MAX_EXP = wpfloat(1.00)
    EFF_MIN = wpfloat(0.075)
    EFF_FAC = wpfloat(3.5e-3)
    TCRIT = ThermodynamicConsts.tmelt - wpfloat(85.0)
    return maximum(
        maximum(minimum(exp(A_FREEZ * (t - ThermodynamicConsts.tmelt)), B_MAX_EXP), EFF_MIN),
        EFF_FAC * (t - TCRIT),
    )


@gtx.field_operator
def _snow_lambda(rho: fa.CellKField[ta.wpfloat], qs: fa.CellKField[ta.wpfloat],
                 ns: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    A2 = GraupelConsts.ams * wpfloat(2.0)
    LMD_0 = wpfloat(1.0e10)
    BX = wpfloat(1.0) / (GraupelConsts.bms + wpfloat(1.0))
    QSMIN = wpfloat(0.0e-6)
    return where(qs > GraupelConsts.qmin, power((A2 * ns / ((qs + QSMIN) * rho)), BX), LMD_0)


@gtx.field_operator
def _snow_number(t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
                 qs: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    TMIN = ThermodynamicConsts.tmelt - wpfloat(40.0)
    TMAX = ThermodynamicConsts.tmelt
    QSMIN = wpfloat(2.0e-6)
    XA1 = wpfloat(-1.65e0)
    XA2 = wpfloat(5.45e-2)
    XA3 = wpfloat(3.27e-4)
    XB1 = wpfloat(1.42e0)
    XB2 = wpfloat(1.19e-2)
    XB3 = wpfloat(9.60e-5)
    N0S0 = wpfloat(8.00e5)
    N0S1 = wpfloat(13.5) * wpfloat(5.65e05)
    N0S2 = wpfloat(-0.107)
    N0S3 = wpfloat(13.5)
    N0S4 = wpfloat(0.5) * N0S1
    N0S5 = wpfloat(1.0e6)
    N0S6 = wpfloat(1.0e2) * N0S1
    N0S7 = wpfloat(1.0e9)
    tc = maximum(minimum(t, TMAX), TMIN) - ThermodynamicConsts.tmelt
    alf = power(wpfloat(10.0), (XA1 + tc * (XA2 + tc * XA3)))
    bet = XB1 + tc * (XB2 + tc * XB3)
    n0s = (
        N0S3
        * power(((qs + QSMIN) * rho / GraupelConsts.ams), (wpfloat(4.0) - wpfloat(3.0) * bet))
        / (alf * alf * alf)
    )
    y = exp(N0S2 * tc)
    n0smn = maximum(N0S4 * y, N0S5)
    n0smx = minimum(N0S6 * y, N0S7)
    return where(qs > GraupelConsts.qmin, minimum(n0smx, maximum(n0smn, n0s)), N0S0)


@gtx.field_operator
def _snow_number_scalar(t: ta.wpfloat, rho: ta.wpfloat, qs: ta.wpfloat) -> ta.wpfloat:
    TMIN = ThermodynamicConsts.tmelt - wpfloat(40.0)
    TMAX = ThermodynamicConsts.tmelt
    QSMIN = wpfloat(2.0e-6)
    XA1 = wpfloat(-1.65e0)
    XA2 = wpfloat(5.45e-2)
    XA3 = wpfloat(3.27e-4)
    XB1 = wpfloat(1.42e0)
    XB2 = wpfloat(1.19e-2)
    XB3 = wpfloat(9.60e-5)
    N0S0 = wpfloat(8.00e5)
    N0S1 = wpfloat(13.5) * wpfloat(5.65e05)
    N0S2 = wpfloat(-0.107)
    N0S3 = wpfloat(13.5)
    N0S4 = wpfloat(0.5) * N0S1
    N0S5 = wpfloat(1.0e6)
    N0S6 = wpfloat(1.0e2) * N0S1
    N0S7 = wpfloat(1.0e9)
    tc = maximum(minimum(t, TMAX), TMIN) - ThermodynamicConsts.tmelt
    alf = power(wpfloat(10.0), (XA1 + tc * (XA2 + tc * XA3)))
    bet = XB1 + tc * (XB2 + tc * XB3)
    n0s = (
        N0S3
        * power(((qs + QSMIN) * rho / GraupelConsts.ams), (wpfloat(4.0) - wpfloat(3.0) * bet))
        / (alf * alf * alf)
    )
    y = exp(N0S2 * tc)
    n0smn = maximum(N0S4 * y, N0S5)
    n0smx = minimum(N0S6 * y, N0S7)
    return minimum(n0smx, maximum(n0smn, n0s)) if qs > GraupelConsts.qmin else N0S0


@gtx.field_operator
def _vel_scale_factor_ice(xrho: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    B_I = wpfloat(0.66666666666666667)
    return power(xrho, B_I)


@gtx.field_operator
def _vel_scale_factor_snow(
    xrho: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    t: fa.CellKField[ta.wpfloat], qs: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    B_S = wpfloat(-0.16666666666666667)
    return xrho * power(_snow_number(t, rho, qs), B_S)


@gtx.field_operator
def _vel_scale_factor_snow_scalar(xrho: ta.wpfloat, rho: ta.wpfloat, t: ta.wpfloat,
                                  qs: ta.wpfloat) -> ta.wpfloat:
    B_S = wpfloat(-0.16666666666666667)
    return xrho * power(_snow_number_scalar(t=t, rho=rho, qs=qs), B_S)


# ------------------------------------------------------------------ transitions


@gtx.field_operator
def _cloud_to_graupel(
    t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat], qg: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    A_RIM = 4.43
    B_RIM = 0.94878
    return where((minimum(qc, qg) > GraupelConsts.qmin) & (t > GraupelConsts.tfrz_hom),
                 A_RIM * qc * power(qg * rho, B_RIM), 0.)


@gtx.field_operator
def _cloud_to_rain(
    t: fa.CellKField[ta.wpfloat], qc: fa.CellKField[ta.wpfloat], qr: fa.CellKField[ta.wpfloat],
    nc: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    QMIN_AC = 1.0e-6
    TAU_MAX = 0.90e0
    TAU_MIN = 1.0e-30
    A_PHI = 6.0e2
    B_PHI = 0.68e0
    C_PHI = 5.0e-5
    AC_KERNEL = 5.25e0
    X3 = 2.0e0
    X2 = 2.6e-10
    X1 = 9.44e9
    AU_KERNEL = X1 / (20.0 * X2) * (X3 + 2.0) * (X3 + 4.0) / ((X3 + 1.0) * (X3 + 1.0))
    tau = maximum(TAU_MIN, minimum(1.0 - qc / (qc + qr), TAU_MAX))
    phi = power(tau, B_PHI)
    phi = A_PHI * phi * power(1.0 - phi, 3.0)
    xau = AU_KERNEL * power(qc * qc / nc, 2.0) * (1.0 + phi / power(1.0 - tau, 2.0))
    xac = AC_KERNEL * qc * qr * power(tau / (tau + C_PHI), 4.0)
    return where((qc > QMIN_AC) & (t > GraupelConsts.tfrz_hom), xau + xac, 0.)


@gtx.field_operator
def _cloud_to_snow(
    t: fa.CellKField[ta.wpfloat], qc: fa.CellKField[ta.wpfloat], qs: fa.CellKField[ta.wpfloat],
    ns: fa.CellKField[ta.wpfloat], lam: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    ECS = 0.9
    B_RIM = -(GraupelConsts.v1s + 3.0)
    C_RIM = 2.61 * ECS * GraupelConsts.v0s
    return where((minimum(qc, qs) > GraupelConsts.qmin) & (t > GraupelConsts.tfrz_hom),
                 C_RIM * ns * qc * power(lam, B_RIM), 0.)


@gtx.field_operator
def _cloud_x_ice(
    t: fa.CellKField[ta.wpfloat], qc: fa.CellKField[ta.wpfloat], qi: fa.CellKField[ta.wpfloat],
    dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    result = where((qc > GraupelConsts.qmin) & (t < GraupelConsts.tfrz_hom), qc / dt, 0.)
    result = where((qi > GraupelConsts.qmin) & (t > ThermodynamicConsts.tmelt), -qi / dt, result)
    return result


@gtx.field_operator
def _graupel_to_rain(
    t: fa.CellKField[ta.wpfloat], p: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    dvsw0: fa.CellKField[ta.wpfloat], qg: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    A_MELT = GraupelConsts.tx - 389.5
    B_MELT = 0.6
    C1_MELT = 12.31698
    C2_MELT = 7.39441e-05
    return where(
        (t > maximum(ThermodynamicConsts.tmelt, ThermodynamicConsts.tmelt
                     - GraupelConsts.tx * dvsw0)) & (qg > GraupelConsts.qmin),
        (C1_MELT / p + C2_MELT) * (t - ThermodynamicConsts.tmelt + A_MELT * dvsw0)
        * power(qg * rho, B_MELT),
        0.)


@gtx.field_operator
def _ice_to_graupel(
    rho: fa.CellKField[ta.wpfloat], qr: fa.CellKField[ta.wpfloat], qg: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat], sticking_eff: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    A_CT = 1.72
    B_CT = 0.875
    C_AGG_CT = 2.46
    B_AGG_CT = 0.94878
    result = where((qi > GraupelConsts.qmin) & (qg > GraupelConsts.qmin),
                   sticking_eff * qi * C_AGG_CT * power(rho * qg, B_AGG_CT), 0.)
    result = where((qi > GraupelConsts.qmin) & (qr > GraupelConsts.qmin),
                   result + A_CT * qi * power(rho * qr, B_CT), result)
    return result


@gtx.field_operator
def _ice_to_snow(
    qi: fa.CellKField[ta.wpfloat], ns: fa.CellKField[ta.wpfloat],
    lam: fa.CellKField[ta.wpfloat], sticking_eff: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    QI0 = 0.0
    C_IAU = 1.0e-3
    C_AGG = 2.61 * GraupelConsts.v0s
    B_AGG = -(GraupelConsts.v1s + 3.0)
    return where((qi > GraupelConsts.qmin),
                 sticking_eff * (C_IAU * maximum(0.0, (qi - QI0))
                                 + qi * (C_AGG * ns) * power(lam, B_AGG)), 0.)


@gtx.field_operator
def _rain_to_graupel(
    t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat], qc: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat], qi: fa.CellKField[ta.wpfloat], qs: fa.CellKField[ta.wpfloat],
    mi: fa.CellKField[ta.wpfloat], dvsw: fa.CellKField[ta.wpfloat], dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    TFRZ_RAIN = ThermodynamicConsts.tmelt - 2.0
    A1 = 9.95e-5
    B1 = 1.75
    C2 = 0.66
    C3 = 1.0
    C4 = 0.1
    A2 = 1.24e-3
    B2 = 1.625
    QS_CRIT = 1.0e-7
    maskinner = ((dvsw + qc <= 0.0) | (qr > C4 * qc))
    mask = (qr > GraupelConsts.qmin) & (t < TFRZ_RAIN)
    result = where(mask & (t > GraupelConsts.tfrz_hom) & maskinner,
                   (exp(C2 * (TFRZ_RAIN - t)) - C3) * (A1 * power((qr * rho), B1)), 0.)
    result = where(mask & (t <= GraupelConsts.tfrz_hom), qr / dt, result)
    return where((minimum(qi, qr) > GraupelConsts.qmin) & (qs > QS_CRIT),
                 result + A2 * (qi / mi) * power((rho * qr), B2), result)


@gtx.field_operator
def _rain_to_vapor(
    t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat], qc: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat], dvsw: fa.CellKField[ta.wpfloat], dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    B1_RV = 0.16667
    B2_RV = 0.55555
    C1_RV = 0.61
    C2_RV = -0.0163
    C3_RV = 1.111e-4
    A1_RV = 1.536e-3
    A2_RV = 1.0e0
    A3_RV = 19.0621e0
    tc = t - ThermodynamicConsts.tmelt
    evap_max = (C1_RV + tc * (C2_RV + C3_RV * tc)) * (-dvsw) / dt
    return where((qr > GraupelConsts.qmin) & (dvsw + qc <= 0.0),
                 minimum(A1_RV * (A2_RV + A3_RV * power(qr * rho, B1_RV)) * (-dvsw)
                         * power(qr * rho, B2_RV), evap_max), 0.)


@gtx.field_operator
def _snow_to_graupel(
    t: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat], qs: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    A_RIM_CT = 0.5
    B_RIM_CT = 0.75
    return where((minimum(qc, qs) > GraupelConsts.qmin) & (t > GraupelConsts.tfrz_hom),
                 A_RIM_CT * qc * power(qs * rho, B_RIM_CT), 0.)


@gtx.field_operator
def _snow_to_rain(
    t: fa.CellKField[ta.wpfloat], p: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    dvsw0: fa.CellKField[ta.wpfloat], qs: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    C1_SR = 79.6863
    C2_SR = 0.612654e-3
    A_SR = GraupelConsts.tx - 389.5
    B_SR = 0.8
    return where(
        (t > maximum(ThermodynamicConsts.tmelt, ThermodynamicConsts.tmelt
                     - GraupelConsts.tx * dvsw0)) & (qs > GraupelConsts.qmin),
        (C1_SR / p + C2_SR) * (t - ThermodynamicConsts.tmelt + A_SR * dvsw0)
        * power(qs * rho, B_SR),
        0.0)


@gtx.field_operator
def _vapor_x_graupel(
    t: fa.CellKField[ta.wpfloat], p: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat], dvsw: fa.CellKField[ta.wpfloat],
    dvsi: fa.CellKField[ta.wpfloat], dvsw0: fa.CellKField[ta.wpfloat], dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    A1_VG = 0.398561
    A2_VG = -0.00152398
    A3 = 2554.99
    A4 = 2.6531E-7
    A5 = 0.153907
    A6 = -7.86703e-07
    A7 = 0.0418521
    A8 = -4.7524E-8
    B_VG = 0.6
    result = where(
        (t < ThermodynamicConsts.tmelt),
        (A1_VG + A2_VG * t + A3 / p + A4 * p) * dvsi * power(qg * rho, B_VG),
        where((t > (ThermodynamicConsts.tmelt - GraupelConsts.tx * dvsw0)),
              (A5 + A6 * p) * minimum(0.0, dvsw0) * power(qg * rho, B_VG),
              (A7 + A8 * p) * dvsw * power(qg * rho, B_VG)))
    return where(qg > GraupelConsts.qmin, maximum(result, -qg / dt), 0.0)


@gtx.field_operator
def _vapor_x_ice(
    qi: fa.CellKField[ta.wpfloat], mi: fa.CellKField[ta.wpfloat],
    eta: fa.CellKField[ta.wpfloat], dvsi: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat], dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    AMI = 130.0
    B_EXP = -0.67
    A_FACT = 4.0 * AMI ** (-1.0 / 3.0)
    result = (A_FACT * eta) * rho * qi * power(mi, B_EXP) * dvsi
    result = where(result > 0.0, minimum(result, dvsi / dt),
                   maximum(maximum(result, dvsi / dt), -qi / dt))
    return where(qi > GraupelConsts.qmin, result, 0.0)


@gtx.field_operator
def _vapor_x_snow(
    t: fa.CellKField[ta.wpfloat], p: fa.CellKField[ta.wpfloat], rho: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat], ns: fa.CellKField[ta.wpfloat],
    lam: fa.CellKField[ta.wpfloat], eta: fa.CellKField[ta.wpfloat],
    ice_dep: fa.CellKField[ta.wpfloat], dvsw: fa.CellKField[ta.wpfloat],
    dvsi: fa.CellKField[ta.wpfloat], dvsw0: fa.CellKField[ta.wpfloat], dt: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    NU = 1.75e-5
    A0_VS = 1.0
    A1_VS = 0.4182 * sqrt(GraupelConsts.v0s / NU)
    A2_VS = -(GraupelConsts.v1s + 1.0) / 2.0
    EPS = 1.0e-15
    QS_LIM = 1.0e-7
    CNX = 4.0
    B_VS = 0.8
    C1_VS = 31282.3
    C2_VS = 0.241897
    C3_VS = 0.28003
    C4_VS = -0.146293E-6
    mask = (CNX * ns * eta / rho) * (A0_VS + A1_VS * power(lam, A2_VS)) * dvsi / (
        lam * lam + EPS)
    result = where((qs > GraupelConsts.qmin) & (t < ThermodynamicConsts.tmelt) & (mask > 0.0),
                   minimum(mask, dvsi / dt - ice_dep), 0.0)
    result = where((qs > GraupelConsts.qmin) & (t < ThermodynamicConsts.tmelt) & (qs <= QS_LIM),
                   minimum(result, 0.0), result)
    result = where(
        (qs > GraupelConsts.qmin) & (t >= ThermodynamicConsts.tmelt)
        & (t > (ThermodynamicConsts.tmelt - GraupelConsts.tx * dvsw0)),
        (C1_VS / p + C2_VS) * minimum(0.0, dvsw0) * power(qs * rho, B_VS), result)
    result = where(
        (qs > GraupelConsts.qmin) & (t >= ThermodynamicConsts.tmelt)
        & (t <= (ThermodynamicConsts.tmelt - GraupelConsts.tx * dvsw0)),
        (C3_VS + C4_VS * p) * dvsw * power(qs * rho, B_VS), result)
    return where((qs > GraupelConsts.qmin), maximum(result, -qs / dt), 0.0)


# ------------------------------------------------------------------ one program per stencil
#
# Every transition and property written to its own output under one domain.


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def muphys_transitions_and_properties(
    t: fa.CellKField[ta.wpfloat], p: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat], qv: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat], qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat], qi: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat], ns: fa.CellKField[ta.wpfloat],
    lam: fa.CellKField[ta.wpfloat], ni: fa.CellKField[ta.wpfloat],
    mi: fa.CellKField[ta.wpfloat], eta: fa.CellKField[ta.wpfloat],
    sticking_eff: fa.CellKField[ta.wpfloat], ice_dep: fa.CellKField[ta.wpfloat],
    dvsw: fa.CellKField[ta.wpfloat], dvsi: fa.CellKField[ta.wpfloat],
    dvsw0: fa.CellKField[ta.wpfloat], xrho: fa.CellKField[ta.wpfloat],
    nc: ta.wpfloat, dt: ta.wpfloat,
    riming_graupel_rate: fa.CellKField[ta.wpfloat], cloud_rain_rate: fa.CellKField[ta.wpfloat],
    riming_snow_rate: fa.CellKField[ta.wpfloat], freezing_rate: fa.CellKField[ta.wpfloat],
    graupel_rain_rate: fa.CellKField[ta.wpfloat], aggregation: fa.CellKField[ta.wpfloat],
    ice_snow_rate: fa.CellKField[ta.wpfloat], rain_graupel_rate: fa.CellKField[ta.wpfloat],
    rain_vapor_rate: fa.CellKField[ta.wpfloat], snow_graupel_rate: fa.CellKField[ta.wpfloat],
    snow_rain_rate: fa.CellKField[ta.wpfloat], graupel_exchange_rate: fa.CellKField[ta.wpfloat],
    ice_deposition_rate: fa.CellKField[ta.wpfloat],
    snow_deposition_rate: fa.CellKField[ta.wpfloat],
    auto_conversion_rate: fa.CellKField[ta.wpfloat], deposition: fa.CellKField[ta.wpfloat],
    nucleation_rate: fa.CellKField[ta.wpfloat], ice_mass: fa.CellKField[ta.wpfloat],
    ice_number: fa.CellKField[ta.wpfloat], sticking_factor: fa.CellKField[ta.wpfloat],
    snow_lambda: fa.CellKField[ta.wpfloat], snow_number: fa.CellKField[ta.wpfloat],
    vel_ice: fa.CellKField[ta.wpfloat], vel_snow: fa.CellKField[ta.wpfloat],
    qsat_water: fa.CellKField[ta.wpfloat], qsat_ice: fa.CellKField[ta.wpfloat],
    qsat_tmelt: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    domain = {dims.CellDim: (horizontal_start, horizontal_end),
              dims.KDim: (vertical_start, vertical_end)}
    _cloud_to_graupel(t, rho, qc, qg, out=riming_graupel_rate, domain=domain)
    _cloud_to_rain(t, qc, qr, nc, out=cloud_rain_rate, domain=domain)
    _cloud_to_snow(t, qc, qs, ns, lam, out=riming_snow_rate, domain=domain)
    _cloud_x_ice(t, qc, qi, dt, out=freezing_rate, domain=domain)
    _graupel_to_rain(t, p, rho, dvsw0, qg, out=graupel_rain_rate, domain=domain)
    _ice_to_graupel(rho, qr, qg, qi, sticking_eff, out=aggregation, domain=domain)
    _ice_to_snow(qi, ns, lam, sticking_eff, out=ice_snow_rate, domain=domain)
    _rain_to_graupel(t, rho, qc, qr, qi, qs, mi, dvsw, dt, out=rain_graupel_rate,
                     domain=domain)
    _rain_to_vapor(t, rho, qc, qr, dvsw, dt, out=rain_vapor_rate, domain=domain)
    _snow_to_graupel(t, rho, qc, qs, out=snow_graupel_rate, domain=domain)
    _snow_to_rain(t, p, rho, dvsw0, qs, out=snow_rain_rate, domain=domain)
    _vapor_x_graupel(t, p, rho, qg, dvsw, dvsi, dvsw0, dt, out=graupel_exchange_rate,
                     domain=domain)
    _vapor_x_ice(qi, mi, eta, dvsi, rho, dt, out=ice_deposition_rate, domain=domain)
    _vapor_x_snow(t, p, rho, qs, ns, lam, eta, ice_dep, dvsw, dvsi, dvsw0, dt,
                  out=snow_deposition_rate, domain=domain)
    _deposition_auto_conversion(qi=qi, m_ice=mi, ice_dep=ice_dep, out=auto_conversion_rate,
                                domain=domain)
    _deposition_factor(t=t, qvsi=qv, out=deposition, domain=domain)
    _ice_deposition_nucleation(t=t, qc=qc, qi=qi, ni=ni, dvsi=dvsi, dt=dt,
                               out=nucleation_rate, domain=domain)
    _ice_mass(qi=qi, ni=ni, out=ice_mass, domain=domain)
    _ice_number(t=t, rho=rho, out=ice_number, domain=domain)
    _ice_sticking(t=t, out=sticking_factor, domain=domain)
    _snow_lambda(rho=rho, qs=qs, ns=ns, out=snow_lambda, domain=domain)
    _snow_number(t=t, rho=rho, qs=qs, out=snow_number, domain=domain)
    _vel_scale_factor_ice(xrho, out=vel_ice, domain=domain)
    _vel_scale_factor_snow(xrho, rho, t, qs, out=vel_snow, domain=domain)
    _qsat_rho(t, rho, out=qsat_water, domain=domain)
    _qsat_ice_rho(t, rho, out=qsat_ice, domain=domain)
    _qsat_rho_tmelt(rho, out=qsat_tmelt, domain=domain)


# ------------------------------------------------------------------ NumPy, from icon4py's formulas

G, TD = GraupelConsts, ThermodynamicConsts


def np_qsat_rho(t, rho):
    return 610.78 * np.exp(17.269 * (t - TD.tmelt) / (t - 35.86)) / (rho * TD.rv * t)


def np_qsat_ice_rho(t, rho):
    return 610.78 * np.exp(21.875 * (t - TD.tmelt) / (t - 7.66)) / (rho * TD.rv * t)


def np_qsat_rho_tmelt(rho):
    return 610.78 / (rho * TD.rv * TD.tmelt)


def np_snow_number(t, rho, qs):
    tc = np.clip(t, TD.tmelt - 40.0, TD.tmelt) - TD.tmelt
    alf = 10.0 ** (-1.65 + tc * (5.45e-2 + tc * 3.27e-4))
    bet = 1.42 + tc * (1.19e-2 + tc * 9.60e-5)
    n0s = 13.5 * ((qs + 2.0e-6) * rho / G.ams) ** (4.0 - 3.0 * bet) / alf**3
    n1 = 13.5 * 5.65e5
    y = np.exp(-0.107 * tc)
    lo, hi = np.maximum(0.5 * n1 * y, 1.0e6), np.minimum(1.0e2 * n1 * y, 1.0e9)
    return np.where(qs > G.qmin, np.minimum(hi, np.maximum(lo, n0s)), 8.0e5)


def np_snow_lambda(rho, qs, ns):
    return np.where(qs > G.qmin, (G.ams * 2.0 * ns / (qs * rho)) ** (1.0 / (G.bms + 1.0)), 1e10)


def np_ice_number(t, rho):
    return np.minimum(250.0e3, 5.0 * np.exp(0.304 * (TD.tmelt - t))) / rho


def np_ice_mass(qi, ni):
    return np.maximum(G.m0_ice, np.minimum(qi / ni, 1.0e-9))


def np_ice_sticking(t):
    return np.maximum(np.maximum(np.minimum(np.exp(0.09 * (t - TD.tmelt)), 1.0), 0.075),
                      3.5e-3 * (t - (TD.tmelt - 85.0)))


def np_deposition_factor(t, qvsi):
    a = TD.als**2 / (2.40e-2 * TD.rv)
    cx = 2.22e-5 * TD.tmelt ** (-1.94) * 101325.0
    x = cx / TD.rd * t ** 0.94
    return x / (1.0 + a * x * qvsi / t**2)


def np_deposition_auto_conversion(qi, m_ice, ice_dep):
    b = 0.666666666666666667
    return np.where(qi > G.qmin, np.maximum(0.0, ice_dep) * b / ((3.0e-9 / m_ice) ** b - 1.0), 0.0)


def np_ice_deposition_nucleation(t, qc, qi, ni, dvsi, dt):
    on = (qi <= G.qmin) & (((t < G.tfrz_het2) & (dvsi > 0.0))
                           | ((t <= G.tfrz_het1) & (qc > G.qmin)))
    return np.where(on, np.minimum(G.m0_ice * ni, np.maximum(0.0, dvsi)) / dt, 0.0)


def np_cloud_to_graupel(t, rho, qc, qg):
    return np.where((np.minimum(qc, qg) > G.qmin) & (t > G.tfrz_hom),
                    4.43 * qc * (qg * rho) ** 0.94878, 0.0)


def np_cloud_to_rain(t, qc, qr, nc):
    au_kernel = 9.44e9 / (20.0 * 2.6e-10) * 4.0 * 6.0 / 9.0
    tau = np.maximum(1.0e-30, np.minimum(1.0 - qc / (qc + qr), 0.9))
    phi = tau**0.68
    phi = 6.0e2 * phi * (1.0 - phi) ** 3
    xau = au_kernel * (qc * qc / nc) ** 2 * (1.0 + phi / (1.0 - tau) ** 2)
    xac = 5.25 * qc * qr * (tau / (tau + 5.0e-5)) ** 4
    return np.where((qc > 1.0e-6) & (t > G.tfrz_hom), xau + xac, 0.0)


def np_cloud_to_snow(t, qc, qs, ns, lam):
    return np.where((np.minimum(qc, qs) > G.qmin) & (t > G.tfrz_hom),
                    2.61 * 0.9 * G.v0s * ns * qc * lam ** (-(G.v1s + 3.0)), 0.0)


def np_cloud_x_ice(t, qc, qi, dt):
    r = np.where((qc > G.qmin) & (t < G.tfrz_hom), qc / dt, 0.0)
    return np.where((qi > G.qmin) & (t > TD.tmelt), -qi / dt, r)


def _melting(t, p, rho, dvsw0, qx, c1, c2, b):
    on = (t > np.maximum(TD.tmelt, TD.tmelt - G.tx * dvsw0)) & (qx > G.qmin)
    return np.where(on, (c1 / p + c2) * (t - TD.tmelt + (G.tx - 389.5) * dvsw0)
                    * (qx * rho) ** b, 0.0)


def np_graupel_to_rain(t, p, rho, dvsw0, qg):
    return _melting(t, p, rho, dvsw0, qg, 12.31698, 7.39441e-05, 0.6)


def np_snow_to_rain(t, p, rho, dvsw0, qs):
    return _melting(t, p, rho, dvsw0, qs, 79.6863, 0.612654e-3, 0.8)


def np_ice_to_graupel(rho, qr, qg, qi, eff):
    r = np.where((qi > G.qmin) & (qg > G.qmin), eff * qi * 2.46 * (rho * qg) ** 0.94878, 0.0)
    return np.where((qi > G.qmin) & (qr > G.qmin), r + 1.72 * qi * (rho * qr) ** 0.875, r)


def np_ice_to_snow(qi, ns, lam, eff):
    return np.where(qi > G.qmin, eff * (1.0e-3 * np.maximum(0.0, qi)
                                        + qi * 2.61 * G.v0s * ns * lam ** (-(G.v1s + 3.0))), 0.0)


def np_rain_to_graupel(t, rho, qc, qr, qi, qs, mi, dvsw, dt):
    tfrz_rain = TD.tmelt - 2.0
    inner = (dvsw + qc <= 0.0) | (qr > 0.1 * qc)
    mask = (qr > G.qmin) & (t < tfrz_rain)
    r = np.where(mask & (t > G.tfrz_hom) & inner,
                 (np.exp(0.66 * (tfrz_rain - t)) - 1.0) * 9.95e-5 * (qr * rho) ** 1.75, 0.0)
    r = np.where(mask & (t <= G.tfrz_hom), qr / dt, r)
    return np.where((np.minimum(qi, qr) > G.qmin) & (qs > 1.0e-7),
                    r + 1.24e-3 * (qi / mi) * (rho * qr) ** 1.625, r)


def np_rain_to_vapor(t, rho, qc, qr, dvsw, dt):
    tc = t - TD.tmelt
    evap_max = (0.61 + tc * (-0.0163 + 1.111e-4 * tc)) * (-dvsw) / dt
    x = qr * rho
    rate = 1.536e-3 * (1.0 + 19.0621 * x**0.16667) * (-dvsw) * x**0.55555
    return np.where((qr > G.qmin) & (dvsw + qc <= 0.0), np.minimum(rate, evap_max), 0.0)


def np_snow_to_graupel(t, rho, qc, qs):
    return np.where((np.minimum(qc, qs) > G.qmin) & (t > G.tfrz_hom),
                    0.5 * qc * (qs * rho) ** 0.75, 0.0)


def np_vapor_x_graupel(t, p, rho, qg, dvsw, dvsi, dvsw0, dt):
    x = (qg * rho) ** 0.6
    r = np.where(t < TD.tmelt, (0.398561 - 0.00152398 * t + 2554.99 / p + 2.6531e-7 * p) * dvsi * x,
                 np.where(t > TD.tmelt - G.tx * dvsw0,
                          (0.153907 - 7.86703e-07 * p) * np.minimum(0.0, dvsw0) * x,
                          (0.0418521 - 4.7524e-8 * p) * dvsw * x))
    return np.where(qg > G.qmin, np.maximum(r, -qg / dt), 0.0)


def np_vapor_x_ice(qi, mi, eta, dvsi, rho, dt):
    r = 4.0 * 130.0 ** (-1.0 / 3.0) * eta * rho * qi * mi ** (-0.67) * dvsi
    r = np.where(r > 0.0, np.minimum(r, dvsi / dt), np.maximum(np.maximum(r, dvsi / dt), -qi / dt))
    return np.where(qi > G.qmin, r, 0.0)


def np_vapor_x_snow(t, p, rho, qs, ns, lam, eta, ice_dep, dvsw, dvsi, dvsw0, dt):
    a1 = 0.4182 * np.sqrt(G.v0s / 1.75e-5)
    a2 = -(G.v1s + 1.0) / 2.0
    m = (4.0 * ns * eta / rho) * (1.0 + a1 * lam**a2) * dvsi / (lam * lam + 1.0e-15)
    present, cold = qs > G.qmin, t < TD.tmelt
    r = np.where(present & cold & (m > 0.0), np.minimum(m, dvsi / dt - ice_dep), 0.0)
    r = np.where(present & cold & (qs <= 1.0e-7), np.minimum(r, 0.0), r)
    x = (qs * rho) ** 0.8
    warm = present & ~cold
    r = np.where(warm & (t > TD.tmelt - G.tx * dvsw0),
                 (31282.3 / p + 0.241897) * np.minimum(0.0, dvsw0) * x, r)
    r = np.where(warm & (t <= TD.tmelt - G.tx * dvsw0), (0.28003 - 0.146293e-6 * p) * dvsw * x, r)
    return np.where(present, np.maximum(r, -qs / dt), 0.0)


# ------------------------------------------------------------------ inputs


def species(shape, scale, absent=0.3):
    """A specific mass: zero (below qmin) on about ``absent`` of the points."""
    x = RNG.random(shape) * scale
    x[RNG.random(shape) < absent] = 0.0
    return x


def muphys_inputs(n=NLEV):
    s = (NC, n)
    t = 225.0 + RNG.random(s) * 65.0               # across tfrz_hom, the freezing and melting
    rho = 0.4 + RNG.random(s) * 0.9
    a = dict(t=t, p=4.0e4 + RNG.random(s) * 6.0e4, rho=rho,
             qv=2e-4 + RNG.random(s) * 1.2e-2, qc=species(s, 1e-3), qr=species(s, 1e-3),
             qs=species(s, 1e-3), qi=species(s, 1e-4), qg=species(s, 1e-3))
    return a


# ------------------------------------------------------------------ the transitions one by one


@pytest.mark.parametrize("backend", BACKENDS)
def test_muphys_transitions_and_properties(backend):
    a = muphys_inputs()
    s = (NC, NLEV)
    t, p, rho = a["t"], a["p"], a["rho"]
    qv, qc, qr, qs, qi, qg = (a[k] for k in ("qv", "qc", "qr", "qs", "qi", "qg"))
    with np.errstate(all="ignore"):
        ns = np_snow_number(t, rho, qs)
        lam = np_snow_lambda(rho, qs, ns)
    ni = np_ice_number(t, rho)
    mi = np_ice_mass(qi, ni)
    a.update(ns=ns, lam=lam, ni=ni, mi=mi, eta=RNG.random(s) * 1e-9,
             sticking_eff=np_ice_sticking(t), ice_dep=(RNG.random(s) - 0.5) * 1e-6,
             dvsw=(RNG.random(s) - 0.6) * 2e-3, dvsi=(RNG.random(s) - 0.4) * 2e-3,
             dvsw0=(RNG.random(s) - 0.5) * 4e-3, xrho=np.sqrt(G.rho_00 / rho))
    a["dvsw"][0, :3] = -a["qc"][0, :3]             # dvsw + qc == 0: the <= comparison
    nc, dt = 1.0e8, 30.0
    outs = ("riming_graupel_rate cloud_rain_rate riming_snow_rate freezing_rate "
            "graupel_rain_rate aggregation ice_snow_rate rain_graupel_rate rain_vapor_rate "
            "snow_graupel_rate snow_rain_rate graupel_exchange_rate ice_deposition_rate "
            "snow_deposition_rate auto_conversion_rate deposition nucleation_rate ice_mass "
            "ice_number sticking_factor snow_lambda snow_number vel_ice vel_snow qsat_water "
            "qsat_ice qsat_tmelt").split()
    old = {k: RNG.random(s) for k in outs}
    e = a
    with np.errstate(all="ignore"):
        new = dict(
            riming_graupel_rate=np_cloud_to_graupel(t, rho, qc, qg),
            cloud_rain_rate=np_cloud_to_rain(t, qc, qr, nc),
            riming_snow_rate=np_cloud_to_snow(t, qc, qs, ns, lam),
            freezing_rate=np_cloud_x_ice(t, qc, qi, dt),
            graupel_rain_rate=np_graupel_to_rain(t, p, rho, e["dvsw0"], qg),
            aggregation=np_ice_to_graupel(rho, qr, qg, qi, e["sticking_eff"]),
            ice_snow_rate=np_ice_to_snow(qi, ns, lam, e["sticking_eff"]),
            rain_graupel_rate=np_rain_to_graupel(t, rho, qc, qr, qi, qs, mi, e["dvsw"], dt),
            rain_vapor_rate=np_rain_to_vapor(t, rho, qc, qr, e["dvsw"], dt),
            snow_graupel_rate=np_snow_to_graupel(t, rho, qc, qs),
            snow_rain_rate=np_snow_to_rain(t, p, rho, e["dvsw0"], qs),
            graupel_exchange_rate=np_vapor_x_graupel(t, p, rho, qg, e["dvsw"], e["dvsi"],
                                                     e["dvsw0"], dt),
            ice_deposition_rate=np_vapor_x_ice(qi, mi, e["eta"], e["dvsi"], rho, dt),
            snow_deposition_rate=np_vapor_x_snow(t, p, rho, qs, ns, lam, e["eta"], e["ice_dep"],
                                                 e["dvsw"], e["dvsi"], e["dvsw0"], dt),
            auto_conversion_rate=np_deposition_auto_conversion(qi, mi, e["ice_dep"]),
            deposition=np_deposition_factor(t, qv),
            nucleation_rate=np_ice_deposition_nucleation(t, qc, qi, ni, e["dvsi"], dt),
            ice_mass=mi, ice_number=ni, sticking_factor=e["sticking_eff"], snow_lambda=lam,
            snow_number=ns, vel_ice=e["xrho"] ** (2.0 / 3.0),
            vel_snow=e["xrho"] * ns ** (-1.0 / 6.0),
            qsat_water=np_qsat_rho(t, rho), qsat_ice=np_qsat_ice_rho(t, rho),
            qsat_tmelt=np_qsat_rho_tmelt(rho))
    bounds = (1, NC - 1, 1, NLEV)
    hs, he, vs, ve = bounds
    expected = {}
    for k in outs:
        want = old[k].copy()
        want[hs:he, vs:ve] = new[k][hs:he, vs:ve]
        expected[k] = want
    for k in ("riming_snow_rate", "aggregation", "rain_vapor_rate", "snow_deposition_rate",
              "freezing_rate", "graupel_exchange_rate"):
        assert np.count_nonzero(new[k]) > 3, k     # the data reach each formula
    args = {**a, **{k: v.copy() for k, v in old.items()}}
    muphys_transitions_and_properties(
        **args, nc=nc, dt=dt, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, offset_provider={}, backend=backend)
    check(args, expected, rtol=1e-10)


# ------------------------------------------------------------------ the whole graupel scheme


@gtx.field_operator
def symmetric(
    transition: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    return maximum(transition, wpfloat(0.0)), -minimum(transition, wpfloat(0.0))


@gtx.field_operator
def cond_symmetric(
    condition: fa.CellKField[bool], transition: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    return where(condition, symmetric(transition), (wpfloat(0.0), wpfloat(0.0)))


@gtx.field_operator
def sink_saturation(
    t: tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
             fa.CellKField[ta.wpfloat]],
    x: fa.CellKField[ta.wpfloat],
    dt: ta.wpfloat,
    where_: fa.CellKField[bool],
):
    sink = where(where_, t[0] + t[1] + t[2] + t[3], wpfloat(0.0))
    stot = x / dt
    sink_saturated = (sink > stot) & (x > GraupelConsts.qmin)
    t0 = where(sink_saturated, t[0] * stot / sink, t[0])
    t1 = where(sink_saturated, t[1] * stot / sink, t[1])
    t2 = where(sink_saturated, t[2] * stot / sink, t[2])
    t3 = where(sink_saturated, t[3] * stot / sink, t[3])
    sink = where(sink_saturated, t0 + t1 + t2 + t3, sink)
    return sink, t0, t1, t2, t3


@gtx.field_operator
def _q_t_update(
    t: fa.CellKField[ta.wpfloat],
    p: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    q: Q,
    dt: ta.wpfloat,
    qnc: ta.wpfloat,
    enable_masking: bool,
) -> tuple[Q, fa.CellKField[ta.wpfloat]]:
    if enable_masking:
        is_sig_present = maximum(q.g, maximum(q.i, q.s)) > GraupelConsts.qmin
    else:
        is_sig_present = broadcast(True, (dims.CellDim, dims.KDim))

    dvsw = q.v - _qsat_rho(t, rho)
    qvsi = _qsat_ice_rho(t, rho)
    dvsi = q.v - qvsi
    n_snow = _snow_number(t, rho, q.s)
    l_snow = _snow_lambda(rho, q.s, n_snow)

    t_below_tmelt = t < ThermodynamicConsts.tmelt
    t_at_least_tmelt = ~t_below_tmelt

    c2r = _cloud_to_rain(t, q.c, q.r, qnc)
    r2v = _rain_to_vapor(t, rho, q.c, q.r, dvsw, dt)
    c2i, i2c = symmetric(_cloud_x_ice(t, q.c, q.i, dt))
    c2s = _cloud_to_snow(t, q.c, q.s, n_snow, l_snow)
    c2g = _cloud_to_graupel(t, rho, q.c, q.g)

    c2r = where(t_at_least_tmelt, c2r + c2s + c2g, c2r)
    c2s = where(t_at_least_tmelt, wpfloat(0.0), c2s)
    c2g = where(t_at_least_tmelt, wpfloat(0.0), c2g)

    n_ice = _ice_number(t, rho)
    m_ice = _ice_mass(q.i, n_ice)
    x_ice = _ice_sticking(t)

    eta = where(t_below_tmelt, _deposition_factor(t, qvsi), wpfloat(0.0))
    v2i, i2v = cond_symmetric(
        t_below_tmelt & is_sig_present, _vapor_x_ice(q.i, m_ice, eta, dvsi, rho, dt))
    v2i = where(
        t_below_tmelt, v2i + _ice_deposition_nucleation(t, q.c, q.i, n_ice, dvsi, dt),
        wpfloat(0.0))

    ice_dep = where(t_below_tmelt, minimum(v2i, dvsi / dt), wpfloat(0.0))
    i2s = where(
        t_below_tmelt & is_sig_present,
        _deposition_auto_conversion(q.i, m_ice, ice_dep) + _ice_to_snow(q.i, n_snow, l_snow, x_ice),
        wpfloat(0.0))
    i2g = where(t_below_tmelt & is_sig_present, _ice_to_graupel(rho, q.r, q.g, q.i, x_ice),
                wpfloat(0.0))
    s2g = where(t_below_tmelt & is_sig_present, _snow_to_graupel(t, rho, q.c, q.s), wpfloat(0.0))
    r2g = where(t_below_tmelt & is_sig_present,
                _rain_to_graupel(t, rho, q.c, q.r, q.i, q.s, m_ice, dvsw, dt), wpfloat(0.0))

    dvsw0 = q.v - _qsat_rho_tmelt(rho)
    v2s, s2v = cond_symmetric(
        is_sig_present,
        _vapor_x_snow(t, p, rho, q.s, n_snow, l_snow, eta, ice_dep, dvsw, dvsi, dvsw0, dt))
    v2g, g2v = cond_symmetric(
        is_sig_present, _vapor_x_graupel(t, p, rho, q.g, dvsw, dvsi, dvsw0, dt))

    s2r = where(is_sig_present, _snow_to_rain(t, p, rho, dvsw0, q.s), wpfloat(0.0))
    g2r = where(is_sig_present, _graupel_to_rain(t, p, rho, dvsw0, q.g), wpfloat(0.0))

    UNUSED = broadcast(wpfloat(0.0), (dims.CellDim, dims.KDim))
    EVERYWHERE = broadcast(True, (dims.CellDim, dims.KDim))
    sink_v, v2s, v2i, v2g, _ = sink_saturation((v2s, v2i, v2g, UNUSED), q.v, dt,
                                               where_=EVERYWHERE)
    sink_c, c2r, c2s, c2i, c2g = sink_saturation((c2r, c2s, c2i, c2g), q.c, dt,
                                                 where_=EVERYWHERE)
    sink_r, r2v, r2g, _, __ = sink_saturation(
        (r2v, r2g, UNUSED, UNUSED), q.r, dt, where_=EVERYWHERE)
    sink_s, s2v, s2r, s2g, _ = sink_saturation(
        (s2v, s2r, s2g, UNUSED), q.s, dt, where_=is_sig_present)
    sink_i, i2v, i2c, i2s, i2g = sink_saturation(
        (i2v, i2c, i2s, i2g), q.i, dt, where_=is_sig_present)
    sink_g, g2v, g2r, _, __ = sink_saturation(
        (g2v, g2r, UNUSED, UNUSED), q.g, dt, where_=is_sig_present)

    dqdt_v = r2v + s2v + i2v + g2v - sink_v
    qv = maximum(wpfloat(0.0), q.v + dqdt_v * dt)
    dqdt_c = i2c - sink_c
    qc = maximum(wpfloat(0.0), q.c + dqdt_c * dt)
    dqdt_r = c2r + s2r + g2r - sink_r
    qr = maximum(wpfloat(0.0), q.r + dqdt_r * dt)
    dqdt_s = v2s + c2s + i2s - sink_s
    qs = maximum(wpfloat(0.0), q.s + dqdt_s * dt)
    dqdt_i = v2i + c2i - sink_i
    qi = maximum(wpfloat(0.0), q.i + dqdt_i * dt)
    dqdt_g = v2g + c2g + r2g + s2g + i2g - sink_g
    qg = maximum(wpfloat(0.0), q.g + dqdt_g * dt)

    qice = qs + qi + qg
    qliq = qc + qr
    qtot = qv + qice + qliq

    cv = (
        ThermodynamicConsts.cvd
        + (ThermodynamicConsts.cvv - ThermodynamicConsts.cvd) * qtot
        + (ThermodynamicConsts.clw - ThermodynamicConsts.cvv) * qliq
        + (GraupelConsts.ci - ThermodynamicConsts.cvv) * qice
    )
    t = (
        t
        + dt
        * (
            (dqdt_c + dqdt_r)
            * (GraupelConsts.lvc - (ThermodynamicConsts.clw - ThermodynamicConsts.cvv) * t)
            + (dqdt_i + dqdt_s + dqdt_g)
            * (GraupelConsts.lsc - (GraupelConsts.ci - ThermodynamicConsts.cvv) * t)
        )
        / cv
    )
    return Q(v=qv, c=qc, r=qr, s=qs, i=qi, g=qg), t


@gtx.scan_operator(
    axis=dims.KDim,
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
def _precip_and_t(
    previous_level: IntegrationState,
    t: ta.wpfloat,
    t_kp1: ta.wpfloat,
    rho: ta.wpfloat,
    q: Q_scalar,
    mask_r: bool,
    mask_s: bool,
    mask_i: bool,
    mask_g: bool,
    dt: ta.wpfloat,
    dz: ta.wpfloat,
) -> IntegrationState:
    zeta = dt / (wpfloat(2.0) * dz)
    xrho = astype(sqrt(GraupelConsts.rho_00 / rho), wpfloat)

    vc_r = _vel_scale_factor_default_scalar(xrho)
    vc_s = _vel_scale_factor_snow_scalar(xrho, rho, t, q.s)
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
        r_update = precip_qx_level_update(
            previous_level.r, previous_level.rho, IndexConsts.prefactor_r,
            IndexConsts.exponent_r, IndexConsts.offset_r, zeta, vc_r, q.r, rho, mask_r)
        s_update = precip_qx_level_update(
            previous_level.s, previous_level.rho, IndexConsts.prefactor_s,
            IndexConsts.exponent_s, IndexConsts.offset_s, zeta, vc_s, q.s, rho, mask_s)
        i_update = precip_qx_level_update(
            previous_level.i, previous_level.rho, IndexConsts.prefactor_i,
            IndexConsts.exponent_i, IndexConsts.offset_i, zeta, vc_i, q.i, rho, mask_i)
        g_update = precip_qx_level_update(
            previous_level.g, previous_level.rho, IndexConsts.prefactor_g,
            IndexConsts.exponent_g, IndexConsts.offset_g, zeta, vc_g, q.g, rho, mask_g)

        qliq = q.c + r_update.x
        qice = s_update.x + i_update.x + g_update.x
        t_update = _temperature_update(
            previous_level.t_state, t=t, t_kp1=t_kp1, pr=r_update.p,
            pflx_tot=s_update.p + i_update.p + g_update.p, q=q, qliq=qliq, qice=qice,
            rho=rho, dz=dz, dt=dt, mask=any_mask)
    else:
        r_update = PrecipStateQx(x=q.r, p=wpfloat(0.0), vc=vc_r, activated=False)
        s_update = PrecipStateQx(x=q.s, p=wpfloat(0.0), vc=vc_s, activated=False)
        i_update = PrecipStateQx(x=q.i, p=wpfloat(0.0), vc=vc_i, activated=False)
        g_update = PrecipStateQx(x=q.g, p=wpfloat(0.0), vc=vc_g, activated=False)
        t_update = TempState(t=t, eflx=previous_level.t_state.eflx, activated=False)

    return IntegrationState(
        r=r_update, s=s_update, i=i_update, g=g_update, t_state=t_update, rho=rho,
        pflx_tot=s_update.p + i_update.p + g_update.p + r_update.p)


@gtx.field_operator
def _precipitation_effects(
    last_lev: gtx.int32,
    kmin_r: fa.CellKField[bool],
    kmin_i: fa.CellKField[bool],
    kmin_s: fa.CellKField[bool],
    kmin_g: fa.CellKField[bool],
    q_in: Q,
    t: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    dz: fa.CellKField[ta.wpfloat],
    dt: ta.wpfloat,
) -> tuple[
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
]:
    t_kp1 = concat_where(dims.KDim < last_lev, t(KDim + 1), t)

    precip_state = _precip_and_t(t, t_kp1, rho, q_in, kmin_r, kmin_s, kmin_i, kmin_g, dt, dz)
    qr = precip_state.r.x
    pr = precip_state.r.p
    qs = precip_state.s.x
    ps = precip_state.s.p
    qi = precip_state.i.x
    pi = precip_state.i.p
    qg = precip_state.g.x
    pg = precip_state.g.p

    t = precip_state.t_state.t
    eflx = precip_state.t_state.eflx

    pflx_tot = precip_state.pflx_tot

    return qr, qs, qi, qg, t, pflx_tot, pr, ps, pi, pg, eflx


@gtx.field_operator
def graupel(
    last_level: gtx.int32,
    dz: fa.CellKField[ta.wpfloat],
    te: fa.CellKField[ta.wpfloat],
    p: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    q: Q,
    dt: ta.wpfloat,
    qnc: ta.wpfloat,
    enable_masking: bool,
) -> tuple[
    fa.CellKField[ta.wpfloat], Q, fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    kmin_r = q.r > GraupelConsts.qmin
    kmin_i = q.i > GraupelConsts.qmin
    kmin_s = q.s > GraupelConsts.qmin
    kmin_g = q.g > GraupelConsts.qmin
    mask = (
        (maximum(q.c, maximum(q.g, maximum(q.i, maximum(q.r, q.s)))) > GraupelConsts.qmin)
        | ((te < GraupelConsts.tfrz_het2) & (q.v > _qsat_ice_rho(te, rho)))
        | ~enable_masking
    )
    q, t = where(mask, _q_t_update(te, p, rho, q, dt, qnc, enable_masking=enable_masking),
                 (q, te))
    qr, qs, qi, qg, t, pflx, pr, ps, pi, pg, pre = _precipitation_effects(
        last_level, kmin_r, kmin_i, kmin_s, kmin_g, q, t, rho, dz, dt)

    return t, Q(v=q.v, c=q.c, r=qr, s=qs, i=qi, g=qg), pflx, pr, ps, pi, pg, pre


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def graupel_run(
    dz: fa.CellKField[ta.wpfloat],
    te: fa.CellKField[ta.wpfloat],
    p: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    q_in: Q,
    dt: ta.wpfloat,
    qnc: ta.wpfloat,
    q_out: Q,
    t_out: fa.CellKField[ta.wpfloat],
    pflx: fa.CellKField[ta.wpfloat],
    pr: fa.CellKField[ta.wpfloat],
    ps: fa.CellKField[ta.wpfloat],
    pi: fa.CellKField[ta.wpfloat],
    pg: fa.CellKField[ta.wpfloat],
    pre: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
    enable_masking: bool,
) -> None:
    graupel(
        last_level=vertical_end - 1,
        dz=dz,
        te=te,
        p=p,
        rho=rho,
        q=q_in,
        dt=dt,
        qnc=qnc,
        enable_masking=enable_masking,
        out=(t_out, q_out, pflx, pr, ps, pi, pg, pre),
        domain=(
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_start, vertical_end)},
            (
                {dims.CellDim: (horizontal_start, horizontal_end),
                 dims.KDim: (vertical_start, vertical_end)},
                {dims.CellDim: (horizontal_start, horizontal_end),
                 dims.KDim: (vertical_start, vertical_end)},
                {dims.CellDim: (horizontal_start, horizontal_end),
                 dims.KDim: (vertical_start, vertical_end)},
                {dims.CellDim: (horizontal_start, horizontal_end),
                 dims.KDim: (vertical_start, vertical_end)},
                {dims.CellDim: (horizontal_start, horizontal_end),
                 dims.KDim: (vertical_start, vertical_end)},
                {dims.CellDim: (horizontal_start, horizontal_end),
                 dims.KDim: (vertical_start, vertical_end)},
            ),
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_start, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_end - 1, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_end - 1, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_end - 1, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_end - 1, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_end - 1, vertical_end)},
        ),
    )


# ------------------------------------------------------------------ NumPy: the graupel scheme


def np_sink_saturation(ts, x, dt, where_):
    sink = np.where(where_, ts[0] + ts[1] + ts[2] + ts[3], 0.0)
    stot = x / dt
    sat = (sink > stot) & (x > G.qmin)
    ts = [np.where(sat, ti * stot / sink, ti) for ti in ts]
    return np.where(sat, ts[0] + ts[1] + ts[2] + ts[3], sink), ts


def np_q_t_update(t, p, rho, q, dt, qnc, enable_masking):
    v, c, r, s, i, g = q
    sig = (np.maximum(g, np.maximum(i, s)) > G.qmin) if enable_masking else np.ones(t.shape, bool)
    dvsw = v - np_qsat_rho(t, rho)
    qvsi = np_qsat_ice_rho(t, rho)
    dvsi = v - qvsi
    ns = np_snow_number(t, rho, s)
    lam = np_snow_lambda(rho, s, ns)
    cold = t < TD.tmelt
    c2r = np_cloud_to_rain(t, c, r, qnc)
    r2v = np_rain_to_vapor(t, rho, c, r, dvsw, dt)
    cxi = np_cloud_x_ice(t, c, i, dt)
    c2i, i2c = np.maximum(cxi, 0.0), -np.minimum(cxi, 0.0)
    c2s = np_cloud_to_snow(t, c, s, ns, lam)
    c2g = np_cloud_to_graupel(t, rho, c, g)
    c2r = np.where(~cold, c2r + c2s + c2g, c2r)
    c2s = np.where(~cold, 0.0, c2s)
    c2g = np.where(~cold, 0.0, c2g)
    ni = np_ice_number(t, rho)
    mi = np_ice_mass(i, ni)
    xi = np_ice_sticking(t)
    eta = np.where(cold, np_deposition_factor(t, qvsi), 0.0)
    vxi = np_vapor_x_ice(i, mi, eta, dvsi, rho, dt)
    on = cold & sig
    v2i, i2v = np.where(on, np.maximum(vxi, 0.0), 0.0), np.where(on, -np.minimum(vxi, 0.0), 0.0)
    v2i = np.where(cold, v2i + np_ice_deposition_nucleation(t, c, i, ni, dvsi, dt), 0.0)
    ice_dep = np.where(cold, np.minimum(v2i, dvsi / dt), 0.0)
    i2s = np.where(on, np_deposition_auto_conversion(i, mi, ice_dep)
                   + np_ice_to_snow(i, ns, lam, xi), 0.0)
    i2g = np.where(on, np_ice_to_graupel(rho, r, g, i, xi), 0.0)
    s2g = np.where(on, np_snow_to_graupel(t, rho, c, s), 0.0)
    r2g = np.where(on, np_rain_to_graupel(t, rho, c, r, i, s, mi, dvsw, dt), 0.0)
    dvsw0 = v - np_qsat_rho_tmelt(rho)
    vxs = np_vapor_x_snow(t, p, rho, s, ns, lam, eta, ice_dep, dvsw, dvsi, dvsw0, dt)
    v2s, s2v = np.where(sig, np.maximum(vxs, 0.0), 0.0), np.where(sig, -np.minimum(vxs, 0.0), 0.0)
    vxg = np_vapor_x_graupel(t, p, rho, g, dvsw, dvsi, dvsw0, dt)
    v2g, g2v = np.where(sig, np.maximum(vxg, 0.0), 0.0), np.where(sig, -np.minimum(vxg, 0.0), 0.0)
    s2r = np.where(sig, np_snow_to_rain(t, p, rho, dvsw0, s), 0.0)
    g2r = np.where(sig, np_graupel_to_rain(t, p, rho, dvsw0, g), 0.0)
    zero, every = np.zeros(t.shape), np.ones(t.shape, bool)
    sink_v, (v2s, v2i, v2g, _) = np_sink_saturation((v2s, v2i, v2g, zero), v, dt, every)
    sink_c, (c2r, c2s, c2i, c2g) = np_sink_saturation((c2r, c2s, c2i, c2g), c, dt, every)
    sink_r, (r2v, r2g, _, _) = np_sink_saturation((r2v, r2g, zero, zero), r, dt, every)
    sink_s, (s2v, s2r, s2g, _) = np_sink_saturation((s2v, s2r, s2g, zero), s, dt, sig)
    sink_i, (i2v, i2c, i2s, i2g) = np_sink_saturation((i2v, i2c, i2s, i2g), i, dt, sig)
    sink_g, (g2v, g2r, _, _) = np_sink_saturation((g2v, g2r, zero, zero), g, dt, sig)
    d_v = r2v + s2v + i2v + g2v - sink_v
    d_c = i2c - sink_c
    d_r = c2r + s2r + g2r - sink_r
    d_s = v2s + c2s + i2s - sink_s
    d_i = v2i + c2i - sink_i
    d_g = v2g + c2g + r2g + s2g + i2g - sink_g
    new = [np.maximum(0.0, x + d * dt) for x, d in zip(q, (d_v, d_c, d_r, d_s, d_i, d_g))]
    qv, qc, qr, qs, qi, qg = new
    qice, qliq = qs + qi + qg, qc + qr
    cv = TD.cvd + (TD.cvv - TD.cvd) * (qv + qice + qliq) + (TD.clw - TD.cvv) * qliq \
        + (G.ci - TD.cvv) * qice
    t = t + dt * ((d_c + d_r) * (G.lvc - (TD.clw - TD.cvv) * t)
                  + (d_i + d_s + d_g) * (G.lsc - (G.ci - TD.cvv) * t)) / cv
    return new, t


PRECIP = {"r": (IndexConsts.prefactor_r, IndexConsts.exponent_r, IndexConsts.offset_r),
          "s": (IndexConsts.prefactor_s, IndexConsts.exponent_s, IndexConsts.offset_s),
          "i": (IndexConsts.prefactor_i, IndexConsts.exponent_i, IndexConsts.offset_i),
          "g": (IndexConsts.prefactor_g, IndexConsts.exponent_g, IndexConsts.offset_g)}


def np_precip_column(t, t_kp1, rho, q, masks, dt, dz):
    """muphys' sedimentation and temperature update, one column, top to bottom."""
    n = len(t)
    prev = {x: (0.0, 0.0, 0.0, False) for x in "rsig"}
    t_prev, prev_rho = (0.0, 0.0, False), 0.0
    out = {k: np.zeros(n) for k in ("qr", "qs", "qi", "qg", "t", "pflx", "pr", "ps", "pi",
                                    "pg", "eflx")}
    for k in range(n):
        zeta = dt / (2.0 * dz[k])
        xrho = np.sqrt(G.rho_00 / rho[k])
        vc = {"r": xrho, "g": xrho, "i": xrho ** 0.66666666666666667,
              "s": xrho * float(np_snow_number(t[k], rho[k], q["s"][k])) ** -0.16666666666666667}
        any_mask = any(masks[x][k] for x in "rsig")
        active = any_mask or any(prev[x][3] for x in "rsig") or t_prev[2]
        upd = {}
        if active:
            for x in "rsig":
                px, pp, pvc, pact = prev[x]
                pref, expo, off = PRECIP[x]
                act = pact or masks[x][k]
                qx = q[x][k]
                rho_x = qx * rho[k]
                flx_eff = rho_x / zeta + 2.0 * pp
                flx_partial = min(rho_x * vc[x] * pref * (rho_x + off) ** expo, flx_eff)
                if act:
                    rhox_prev = (px + qx) * 0.5 * prev_rho
                    vt = pvc * pref * (rhox_prev + off) ** expo if pact else 0.0
                    xn = zeta * (flx_eff - flx_partial) / ((1.0 + zeta * vt) * rho[k])
                    pn = (xn * rho[k] * vt + flx_partial) * 0.5
                else:
                    xn, pn = qx, 0.0
                upd[x] = (xn, pn, vc[x], act)
            qliq = q["c"][k] + upd["r"][0]
            qice = upd["s"][0] + upd["i"][0] + upd["g"][0]
            t_act = t_prev[2] or any_mask
            tk = t[k]
            if t_act:
                pr, pflx = upd["r"][1], upd["s"][1] + upd["i"][1] + upd["g"][1]
                eflx = pr * (TD.clw * tk - TD.cvd * t_kp1[k] - G.lvc) \
                    + pflx * (G.ci * tk - TD.cvd * t_kp1[k] - G.lsc)
                ql, qi_ = q["c"][k] + q["r"][k], q["s"][k] + q["i"][k] + q["g"][k]
                qv = q["v"][k]
                cv0 = TD.cvd * (1.0 - (ql + qi_ + qv)) + TD.cvv * qv + TD.clw * ql + G.ci * qi_
                e_int = rho[k] * dz[k] * (cv0 * tk - ql * G.lvc - qi_ * G.lsc) \
                    + dt * t_prev[1] - dt * eflx
                cv = (TD.cvd * (1.0 - (qliq + qice + qv)) + TD.cvv * qv + TD.clw * qliq
                      + G.ci * qice) * rho[k] * dz[k]
                tk = (e_int + rho[k] * dz[k] * (qliq * G.lvc + qice * G.lsc)) / cv
            else:
                eflx = t_prev[1]
            t_prev = (tk, eflx, t_act)
        else:
            upd = {x: (q[x][k], 0.0, vc[x], False) for x in "rsig"}
            t_prev = (t[k], t_prev[1], False)
        prev, prev_rho = upd, rho[k]
        for x in "rsig":
            out["q" + x][k], out["p" + x][k] = upd[x][0], upd[x][1]
        out["t"][k], out["eflx"][k] = t_prev[0], t_prev[1]
        out["pflx"][k] = sum(upd[x][1] for x in "rsig")
    return out


def graupel_numpy(a, dt, qnc, enable_masking, hs, he, vs, ve):
    q = [a["q_in"][x] for x in range(6)]
    te, rho, p = a["te"], a["rho"], a["p"]
    kmin = {x: q[j] > G.qmin for x, j in (("r", 2), ("i", 4), ("s", 3), ("g", 5))}
    with np.errstate(all="ignore"):
        mask = ((np.maximum(q[1], np.maximum(q[5], np.maximum(q[4], np.maximum(q[2], q[3]))))
                 > G.qmin) | ((te < G.tfrz_het2) & (q[0] > np_qsat_ice_rho(te, rho)))
                | (not enable_masking))
        new_q, new_t = np_q_t_update(te, p, rho, q, dt, qnc, enable_masking)
    q = [np.where(mask, nq, oq) for nq, oq in zip(new_q, q)]
    t = np.where(mask, new_t, te)
    last = ve - 1
    t_kp1 = t.copy()
    t_kp1[:, :last] = t[:, 1:last + 1]
    res = {k: np.zeros(te.shape) for k in ("qr", "qs", "qi", "qg", "t", "pflx", "pr", "ps", "pi",
                                          "pg", "eflx")}
    qd = dict(zip("vcrsig", q))
    for c in range(hs, he):
        col = np_precip_column(
            t[c, vs:ve], t_kp1[c, vs:ve], rho[c, vs:ve], {x: qd[x][c, vs:ve] for x in "vcrsig"},
            {x: kmin[x][c, vs:ve] for x in "rsig"}, dt, a["dz"][c, vs:ve])
        for k, v in col.items():
            res[k][c, vs:ve] = v
    exp_ = {k: np.array(a[k], copy=True) for k in ("t_out", "pflx", "pr", "ps", "pi", "pg",
                                                   "pre")}
    q_out = [np.array(x, copy=True) for x in a["q_out"]]
    inner = (slice(hs, he), slice(vs, ve))
    surface = (slice(hs, he), slice(ve - 1, ve))
    exp_["t_out"][inner] = res["t"][inner]
    exp_["pflx"][inner] = res["pflx"][inner]
    for name, key in (("pr", "pr"), ("ps", "ps"), ("pi", "pi"), ("pg", "pg"), ("pre", "eflx")):
        exp_[name][surface] = res[key][surface]
    for j, x in enumerate(["v", "c"]):
        q_out[j][inner] = q[j][inner]
    for j, x in zip((2, 3, 4, 5), "rsig"):
        q_out[j][inner] = res["q" + x][inner]
    return exp_, q_out


def graupel_inputs():
    a = muphys_inputs()
    s = (NC, NLEV)
    args = dict(dz=100.0 + RNG.random(s) * 300.0, te=a["t"], p=a["p"], rho=a["rho"],
                q_in=Q(*(a[k] for k in ("qv", "qc", "qr", "qs", "qi", "qg"))),
                q_out=Q(*(RNG.random(s) for _ in range(6))),
                **{k: RNG.random(s) for k in ("t_out", "pflx", "pr", "ps", "pi", "pg", "pre")})
    # a column without any condensate at the top: the precipitation starts further down
    for x in range(1, 6):
        args["q_in"][x][2, :3] = 0.0
    args["te"][2, :3] = 280.0
    return args


GRAUPEL_CASES = [dict(enable_masking=True, bounds=(0, NC, 0, NLEV)),
                 dict(enable_masking=False, bounds=(1, NC - 2, 0, NLEV - 1))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(GRAUPEL_CASES)))
def test_graupel(backend, case):
    a = graupel_inputs()
    s = GRAUPEL_CASES[case]
    hs, he, vs, ve = s["bounds"]
    dt, qnc = 30.0, 1.0e8
    expected, q_out = graupel_numpy(a, dt, qnc, s["enable_masking"], hs, he, vs, ve)
    graupel_run(**a, dt=dt, qnc=qnc, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                vertical_end=ve, enable_masking=s["enable_masking"], offset_provider={},
                backend=backend)
    check(a, expected, rtol=1e-9, atol=1e-14)
    for j in range(6):
        np.testing.assert_allclose(a["q_out"][j], q_out[j], rtol=1e-9, atol=1e-15,
                                   err_msg=f"q_out[{j}]")


def test_graupel_is_translated_without_copies():
    """The ``if enable_masking:`` of ``_q_t_update`` only assigns, the tuples
    unpacked from ``sink_saturation`` are bound once, and the eight outputs take
    their parts of one temporary: the program stays small (a copy of the rest of
    the body per branch, of a function's body per unpacked element, or of the
    whole value per output made it up to forty times larger)."""
    from tensorir_dace import ir
    assert sum(1 for _ in ir.walk(graupel_run.ir)) < 12_000


# ================================================================== diffusion and advection of w
#
# Vertical diffusion written in place (``out=vn`` of an operator reading
# ``vn(Koff[-1])`` and ``vn(Koff[1])``: GT4Py computes the new field from the old
# one), and the horizontal advection of w at half levels with index fields
# (``edge: EdgeField[int32]``, ``vertex: VertexField[int32]``) compared in
# chained comparisons with runtime bounds, a vertex value chosen by ``where``
# before it is read through ``E2V``, and ``V2C`` with missing neighbours.  As
# in icon4py's double-precision build, vpfloat is wpfloat here (these operators
# divide wpfloat by vpfloat fields, which GT4Py refuses for two float types).

NE, NV = 13, 8


def table(rows, cols, targets, absent=0.0):
    t = RNG.integers(0, targets, (rows, cols))
    t[RNG.random((rows, cols)) < absent] = -1
    return t


@gtx.field_operator
def _apply_vertical_diffusion_to_vn(
    vn: fa.EdgeKField[wpfloat],
    ddqz_z_half_e: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[wpfloat],
    coeff: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    d2vndz2 = (
        (vn(Koff[-1]) - vn) / ddqz_z_half_e - (vn - vn(Koff[1])) / ddqz_z_half_e(Koff[1])
    ) / ddqz_z_full_e
    vn = vn + coeff * d2vndz2
    return vn


@gtx.field_operator
def _apply_vertical_diffusion_to_w(
    w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[wpfloat],
    ddqz_z_full: fa.CellKField[wpfloat],
    coeff: wpfloat,
) -> fa.CellKField[wpfloat]:
    d2wdz2 = (
        (w(Koff[-1]) - w) / ddqz_z_full(Koff[-1]) - (w - w(Koff[1])) / ddqz_z_full
    ) / ddqz_z_half
    w = w + coeff * d2wdz2
    return w


@gtx.field_operator
def _compute_horizontal_advection_of_w(
    khalf_horizontal_advection_of_w_at_edge: fa.EdgeKField[wpfloat],
    w: fa.CellKField[wpfloat],
    khalf_tangential_wind: fa.EdgeKField[wpfloat],
    khalf_vn: fa.EdgeKField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    edge: fa.EdgeField[gtx.int32],
    vertex: fa.VertexField[gtx.int32],
    start_edge_lateral_boundary_level_7: gtx.int32,
    end_edge_halo: gtx.int32,
    start_vertex_lateral_boundary_level_2: gtx.int32,
    end_vertex_halo: gtx.int32,
) -> fa.EdgeKField[wpfloat]:
    khalf_w_at_vertex = where(
        (start_vertex_lateral_boundary_level_2 <= vertex < end_vertex_halo),
        _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(w, c_intp),
        0.0,
    )

    khalf_horizontal_advection_of_w_at_edge = where(
        (start_edge_lateral_boundary_level_7 <= edge < end_edge_halo),
        _compute_horizontal_advection_term_for_vertical_velocity(
            khalf_vn,
            inv_dual_edge_length,
            w,
            khalf_tangential_wind,
            inv_primal_edge_length,
            tangent_orientation,
            khalf_w_at_vertex,
        ),
        khalf_horizontal_advection_of_w_at_edge,
    )

    return khalf_horizontal_advection_of_w_at_edge


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def diffusion_and_advection_of_w(
    vn: fa.EdgeKField[wpfloat],
    ddqz_z_half_e: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[wpfloat],
    w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[wpfloat],
    ddqz_z_full: fa.CellKField[wpfloat],
    coeff: wpfloat,
    khalf_horizontal_advection_of_w_at_edge: fa.EdgeKField[wpfloat],
    khalf_tangential_wind: fa.EdgeKField[wpfloat],
    khalf_vn: fa.EdgeKField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    edge: fa.EdgeField[gtx.int32],
    vertex: fa.VertexField[gtx.int32],
    lateral_boundary_7: gtx.int32,
    halo_1: gtx.int32,
    start_vertex_lateral_boundary_level_2: gtx.int32,
    end_vertex_halo: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _apply_vertical_diffusion_to_vn(
        vn, ddqz_z_half_e, ddqz_z_full_e, coeff, out=vn,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end - 1)})
    _apply_vertical_diffusion_to_w(
        w, ddqz_z_half, ddqz_z_full, coeff, out=w,
        domain={dims.CellDim: (0, 7), dims.KDim: (vertical_start, vertical_end)})
    _compute_horizontal_advection_of_w(
        khalf_horizontal_advection_of_w_at_edge, w, khalf_tangential_wind, khalf_vn, c_intp,
        inv_dual_edge_length, inv_primal_edge_length, tangent_orientation, edge, vertex,
        lateral_boundary_7, halo_1, start_vertex_lateral_boundary_level_2, end_vertex_halo,
        out=khalf_horizontal_advection_of_w_at_edge,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


ADV_TABLES = {"E2C": table(NE, 2, NC), "E2V": table(NE, 2, NV),
              "V2C": table(NV, 6, NC, absent=0.25), "Koff": KDim}
ADV_TABLES["V2C"][1, :] = -1            # a vertex without any cell


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounds", [(1, NE - 2, 1, NLEV, 2, NE - 1, 1, NV - 2),
                                    (0, NE, 2, NLEV - 1, 0, 5, 3, 4)])
def test_diffusion_and_advection_of_w(backend, bounds):
    hs, he, vs, ve, lb7, halo, vlb2, veh = bounds
    n, h = NLEV, NLEV + 1
    a = dict(vn=RNG.random((NE, n)) - 0.5, ddqz_z_half_e=RNG.random((NE, h)) + 1,
             ddqz_z_full_e=RNG.random((NE, n)) + 1,
             w=RNG.random((NC, h)) - 0.5, ddqz_z_half=RNG.random((NC, h)) + 1,
             ddqz_z_full=RNG.random((NC, n)) + 1,
             khalf_horizontal_advection_of_w_at_edge=RNG.random((NE, n)),
             khalf_tangential_wind=RNG.random((NE, n)) - 0.5,
             khalf_vn=(RNG.random((NE, n)) - 0.5), c_intp=RNG.random((NV, 6)),
             inv_dual_edge_length=RNG.random(NE) + 1, inv_primal_edge_length=RNG.random(NE) + 1,
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
             edge=np.arange(NE, dtype=np.int32), vertex=np.arange(NV, dtype=np.int32))
    coeff = 0.3
    e = {k: np.array(v, copy=True) for k, v in a.items()}
    # vertical diffusion, from the old values
    vn, dh, df = e["vn"], e["ddqz_z_half_e"].astype(f64), e["ddqz_z_full_e"].astype(f64)
    new_vn = vn.copy()
    for k in range(vs, ve - 1):
        d2 = ((vn[:, k - 1] - vn[:, k]) / dh[:, k] - (vn[:, k] - vn[:, k + 1]) / dh[:, k + 1]) \
            / df[:, k]
        new_vn[hs:he, k] = (vn[:, k] + coeff * d2)[hs:he]
    w, wh, wf = e["w"], e["ddqz_z_half"].astype(f64), e["ddqz_z_full"].astype(f64)
    new_w = w.copy()
    for k in range(vs, ve):
        d2 = ((w[:, k - 1] - w[:, k]) / wf[:, k - 1] - (w[:, k] - w[:, k + 1]) / wf[:, k]) \
            / wh[:, k]
        new_w[:7, k] = (w[:, k] + coeff * d2)[:7]
    # the advection of w reads the new w
    v2c = ADV_TABLES["V2C"]
    gathered = new_w[np.where(v2c >= 0, v2c, 0)]
    w_v = np.where((v2c >= 0)[:, :, None], e["c_intp"][:, :, None] * gathered, 0.0).sum(1)
    vidx = np.arange(NV)[:, None]
    w_v = np.where((vlb2 <= vidx) & (vidx < veh), w_v, 0.0)
    e2c, e2v = ADV_TABLES["E2C"], ADV_TABLES["E2V"]
    term = (e["khalf_vn"].astype(f64) * e["inv_dual_edge_length"][:, None]
            * (new_w[e2c[:, 0], :n] - new_w[e2c[:, 1], :n])
            + e["khalf_tangential_wind"] * (e["inv_primal_edge_length"]
                                            * e["tangent_orientation"])[:, None]
            * (w_v[e2v[:, 0], :n] - w_v[e2v[:, 1], :n]))
    eidx = np.arange(NE)[:, None]
    old_adv = e["khalf_horizontal_advection_of_w_at_edge"]
    adv = np.where((lb7 <= eidx) & (eidx < halo), term, old_adv)
    want_adv = old_adv.copy()
    want_adv[hs:he, vs:ve] = adv[hs:he, vs:ve]
    diffusion_and_advection_of_w(
        **a, coeff=coeff, lateral_boundary_7=lb7, halo_1=halo,
        start_vertex_lateral_boundary_level_2=vlb2, end_vertex_halo=veh, horizontal_start=hs,
        horizontal_end=he, vertical_start=vs, vertical_end=ve, offset_provider=ADV_TABLES,
        backend=backend)
    np.testing.assert_allclose(a["vn"], new_vn, rtol=1e-12, err_msg="vn")
    np.testing.assert_allclose(a["w"], new_w, rtol=1e-12, err_msg="w")
    np.testing.assert_allclose(a["khalf_horizontal_advection_of_w_at_edge"], want_adv,
                               rtol=2e-6, atol=2e-6, err_msg="advection of w")


# ================================================================== least-squares reconstructions
#
# Advection's least-squares coefficients: ``C2E2C`` with coefficients in a
# flattened ``CECDim`` field read through the strided ``C2CEC``, and
# ``C2E2C2E2C`` (nine neighbours, some missing) with nine sparse coefficient
# fields and ten outputs.

CellSparse = gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2C2E2CDim], ta.wpfloat]


@gtx.field_operator
def _reconstruct_linear_coefficients_svd(
    p_cc: fa.CellKField[ta.wpfloat],
    lsq_pseudoinv_1: gtx.Field[gtx.Dims[dims.CECDim], ta.wpfloat],
    lsq_pseudoinv_2: gtx.Field[gtx.Dims[dims.CECDim], ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    p_coeff_1_dsl = p_cc
    p_coeff_2_dsl = neighbor_sum(lsq_pseudoinv_1(C2CEC) * (p_cc(C2E2C) - p_cc), axis=C2E2CDim)
    p_coeff_3_dsl = neighbor_sum(lsq_pseudoinv_2(C2CEC) * (p_cc(C2E2C) - p_cc), axis=C2E2CDim)
    return p_coeff_1_dsl, p_coeff_2_dsl, p_coeff_3_dsl


@gtx.field_operator
def _reconstruct_cubic_coefficients_svd(
    p_cc: fa.CellKField[ta.wpfloat],
    lsq_pseudoinv_1: CellSparse, lsq_pseudoinv_2: CellSparse, lsq_pseudoinv_3: CellSparse,
    lsq_pseudoinv_4: CellSparse, lsq_pseudoinv_5: CellSparse, lsq_pseudoinv_6: CellSparse,
    lsq_pseudoinv_7: CellSparse, lsq_pseudoinv_8: CellSparse, lsq_pseudoinv_9: CellSparse,
    lsq_moments_1: fa.CellField[ta.wpfloat], lsq_moments_2: fa.CellField[ta.wpfloat],
    lsq_moments_3: fa.CellField[ta.wpfloat], lsq_moments_4: fa.CellField[ta.wpfloat],
    lsq_moments_5: fa.CellField[ta.wpfloat], lsq_moments_6: fa.CellField[ta.wpfloat],
    lsq_moments_7: fa.CellField[ta.wpfloat], lsq_moments_8: fa.CellField[ta.wpfloat],
    lsq_moments_9: fa.CellField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    p_coeff_10_dsl = neighbor_sum(lsq_pseudoinv_9 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_9_dsl = neighbor_sum(lsq_pseudoinv_8 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_8_dsl = neighbor_sum(lsq_pseudoinv_7 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_7_dsl = neighbor_sum(lsq_pseudoinv_6 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_6_dsl = neighbor_sum(lsq_pseudoinv_5 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_5_dsl = neighbor_sum(lsq_pseudoinv_4 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_4_dsl = neighbor_sum(lsq_pseudoinv_3 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_3_dsl = neighbor_sum(lsq_pseudoinv_2 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)
    p_coeff_2_dsl = neighbor_sum(lsq_pseudoinv_1 * (p_cc(C2E2C2E2C) - p_cc), axis=C2E2C2E2CDim)

    p_coeff_1_dsl = p_cc - (
        p_coeff_2_dsl * lsq_moments_1
        + p_coeff_3_dsl * lsq_moments_2
        + p_coeff_4_dsl * lsq_moments_3
        + p_coeff_5_dsl * lsq_moments_4
        + p_coeff_6_dsl * lsq_moments_5
        + p_coeff_7_dsl * lsq_moments_6
        + p_coeff_8_dsl * lsq_moments_7
        + p_coeff_9_dsl * lsq_moments_8
        + p_coeff_10_dsl * lsq_moments_9
    )

    return (
        p_coeff_1_dsl, p_coeff_2_dsl, p_coeff_3_dsl, p_coeff_4_dsl, p_coeff_5_dsl,
        p_coeff_6_dsl, p_coeff_7_dsl, p_coeff_8_dsl, p_coeff_9_dsl, p_coeff_10_dsl,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def lsq_reconstructions(
    p_cc: fa.CellKField[ta.wpfloat],
    lin_pseudoinv_1: gtx.Field[gtx.Dims[dims.CECDim], ta.wpfloat],
    lin_pseudoinv_2: gtx.Field[gtx.Dims[dims.CECDim], ta.wpfloat],
    lin_1: fa.CellKField[ta.wpfloat], lin_2: fa.CellKField[ta.wpfloat],
    lin_3: fa.CellKField[ta.wpfloat],
    lsq_pseudoinv_1: CellSparse, lsq_pseudoinv_2: CellSparse, lsq_pseudoinv_3: CellSparse,
    lsq_pseudoinv_4: CellSparse, lsq_pseudoinv_5: CellSparse, lsq_pseudoinv_6: CellSparse,
    lsq_pseudoinv_7: CellSparse, lsq_pseudoinv_8: CellSparse, lsq_pseudoinv_9: CellSparse,
    lsq_moments_1: fa.CellField[ta.wpfloat], lsq_moments_2: fa.CellField[ta.wpfloat],
    lsq_moments_3: fa.CellField[ta.wpfloat], lsq_moments_4: fa.CellField[ta.wpfloat],
    lsq_moments_5: fa.CellField[ta.wpfloat], lsq_moments_6: fa.CellField[ta.wpfloat],
    lsq_moments_7: fa.CellField[ta.wpfloat], lsq_moments_8: fa.CellField[ta.wpfloat],
    lsq_moments_9: fa.CellField[ta.wpfloat],
    p_coeff_1_dsl: fa.CellKField[ta.wpfloat], p_coeff_2_dsl: fa.CellKField[ta.wpfloat],
    p_coeff_3_dsl: fa.CellKField[ta.wpfloat], p_coeff_4_dsl: fa.CellKField[ta.wpfloat],
    p_coeff_5_dsl: fa.CellKField[ta.wpfloat], p_coeff_6_dsl: fa.CellKField[ta.wpfloat],
    p_coeff_7_dsl: fa.CellKField[ta.wpfloat], p_coeff_8_dsl: fa.CellKField[ta.wpfloat],
    p_coeff_9_dsl: fa.CellKField[ta.wpfloat], p_coeff_10_dsl: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _reconstruct_linear_coefficients_svd(
        p_cc, lin_pseudoinv_1, lin_pseudoinv_2, out=(lin_1, lin_2, lin_3),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _reconstruct_cubic_coefficients_svd(
        p_cc, lsq_pseudoinv_1, lsq_pseudoinv_2, lsq_pseudoinv_3, lsq_pseudoinv_4,
        lsq_pseudoinv_5, lsq_pseudoinv_6, lsq_pseudoinv_7, lsq_pseudoinv_8, lsq_pseudoinv_9,
        lsq_moments_1, lsq_moments_2, lsq_moments_3, lsq_moments_4, lsq_moments_5,
        lsq_moments_6, lsq_moments_7, lsq_moments_8, lsq_moments_9,
        out=(p_coeff_1_dsl, p_coeff_2_dsl, p_coeff_3_dsl, p_coeff_4_dsl, p_coeff_5_dsl,
             p_coeff_6_dsl, p_coeff_7_dsl, p_coeff_8_dsl, p_coeff_9_dsl, p_coeff_10_dsl),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


LSQ_TABLES = {"C2E2C": table(NC, 3, NC, absent=0.2), "C2CEC": None,
              "C2E2C2E2C": table(NC, 9, NC, absent=0.25)}
LSQ_TABLES["C2E2C2E2C"][2, :] = -1      # a cell without any of the nine


def lsq_sum(coeff, p, tab):
    """sum over j of coeff[:, j] * (p[tab[:, j]] - p), absent (-1) neighbours skipped."""
    g = p[np.where(tab >= 0, tab, 0)] - p[:, None, :]
    return np.where((tab >= 0)[:, :, None], coeff[:, :, None] * g, 0.0).sum(1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lsq_reconstructions(backend):
    n = NLEV
    p_cc = RNG.random((NC, n))
    a = dict(p_cc=p_cc, lin_pseudoinv_1=RNG.random(NC * 3), lin_pseudoinv_2=RNG.random(NC * 3),
             **{f"lsq_pseudoinv_{i}": RNG.random((NC, 9)) for i in range(1, 10)},
             **{f"lsq_moments_{i}": RNG.random(NC) for i in range(1, 10)})
    outs = ["lin_1", "lin_2", "lin_3"] + [f"p_coeff_{i}_dsl" for i in range(1, 11)]
    old = {k: RNG.random((NC, n)) for k in outs}
    hs, he, vs, ve = 1, NC - 1, 1, n - 1
    c2e2c = LSQ_TABLES["C2E2C"]
    new = {"lin_1": p_cc,
           "lin_2": lsq_sum(a["lin_pseudoinv_1"].reshape(NC, 3), p_cc, c2e2c),
           "lin_3": lsq_sum(a["lin_pseudoinv_2"].reshape(NC, 3), p_cc, c2e2c)}
    for i in range(2, 11):
        new[f"p_coeff_{i}_dsl"] = lsq_sum(a[f"lsq_pseudoinv_{i - 1}"], p_cc,
                                          LSQ_TABLES["C2E2C2E2C"])
    new["p_coeff_1_dsl"] = p_cc - sum(new[f"p_coeff_{i + 1}_dsl"] * a[f"lsq_moments_{i}"][:, None]
                                      for i in range(1, 10))
    expected = {}
    for k in outs:
        expected[k] = old[k].copy()
        expected[k][hs:he, vs:ve] = new[k][hs:he, vs:ve]
    args = {**a, **{k: v.copy() for k, v in old.items()}}
    lsq_reconstructions(**args, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                        vertical_end=ve, offset_provider=LSQ_TABLES, backend=backend)
    check(args, expected, rtol=1e-12, atol=1e-12)


# ================================================================== PPM face values
#
# ``concat_where`` on runtime single levels (``(KDim == slevp1) | (KDim ==
# elev)``, ``KDim == slev``, ``KDim == elevp1``) choosing between a face value
# that reads ``KDim - 1`` and a half-level input, and the quartic face values
# reading two levels up and one down.


@gtx.field_operator
def _compute_ppm_quadratic_face_values(
    p_cc: fa.CellKField[wpfloat],
    p_cellhgt_mc_now: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    p_face = p_cc * (wpfloat(1.0) - (p_cellhgt_mc_now / p_cellhgt_mc_now(KDim - 1))) + (
        p_cellhgt_mc_now / (p_cellhgt_mc_now(KDim - 1) + p_cellhgt_mc_now)
    ) * ((p_cellhgt_mc_now / p_cellhgt_mc_now(KDim - 1)) * p_cc + p_cc(KDim - 1))

    return p_face


@gtx.field_operator
def _compute_ppm_all_face_values(
    p_cc: fa.CellKField[ta.wpfloat],
    p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
    p_face_in: fa.CellKField[ta.wpfloat],
    slev: gtx.int32,
    elev: gtx.int32,
    slevp1: gtx.int32,
    elevp1: gtx.int32,
) -> fa.CellKField[ta.wpfloat]:
    p_face = concat_where(
        (dims.KDim == slevp1) | (dims.KDim == elev),
        _compute_ppm_quadratic_face_values(p_cc, p_cellhgt_mc_now),
        p_face_in,
    )

    p_face = concat_where(dims.KDim == slev, p_cc, p_face)

    p_face = concat_where(dims.KDim == elevp1, p_cc(Koff[-1]), p_face)

    return p_face


@gtx.field_operator
def _compute_ppm_quartic_face_values(
    p_cc: fa.CellKField[ta.wpfloat],
    p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
    z_slope: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    zgeo1 = p_cellhgt_mc_now(Koff[-1]) / (p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now)
    zgeo2 = 1.0 / (
        p_cellhgt_mc_now(Koff[-2])
        + p_cellhgt_mc_now(Koff[-1])
        + p_cellhgt_mc_now
        + p_cellhgt_mc_now(Koff[1])
    )
    zgeo3 = (p_cellhgt_mc_now(Koff[-2]) + p_cellhgt_mc_now(Koff[-1])) / (
        2.0 * p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now
    )
    zgeo4 = (p_cellhgt_mc_now(Koff[1]) + p_cellhgt_mc_now) / (
        2.0 * p_cellhgt_mc_now + p_cellhgt_mc_now(Koff[-1])
    )

    p_face = (
        p_cc(Koff[-1])
        + zgeo1 * (p_cc - p_cc(Koff[-1]))
        + zgeo2
        * (
            (2.0 * p_cellhgt_mc_now * zgeo1) * (zgeo3 - zgeo4) * (p_cc - p_cc(Koff[-1]))
            - zgeo3 * p_cellhgt_mc_now(Koff[-1]) * z_slope
            + zgeo4 * p_cellhgt_mc_now * z_slope(Koff[-1])
        )
    )

    return p_face


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def ppm_face_values(
    p_cc: fa.CellKField[ta.wpfloat], p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
    z_slope: fa.CellKField[ta.wpfloat], p_face_in: fa.CellKField[ta.wpfloat],
    p_face: fa.CellKField[ta.wpfloat], p_face_quartic: fa.CellKField[ta.wpfloat],
    slev: gtx.int32, elev: gtx.int32, slevp1: gtx.int32, elevp1: gtx.int32,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_ppm_all_face_values(
        p_cc, p_cellhgt_mc_now, p_face_in, slev, elev, slevp1, elevp1, out=p_face,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_ppm_quartic_face_values(
        p_cc, p_cellhgt_mc_now, z_slope, out=p_face_quartic,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (slevp1 + 1, elev)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(0, NLEV - 1), (1, NLEV - 2)])
def test_ppm_face_values(backend, levels):
    slev, elev = levels
    n, h = NLEV, NLEV + 1
    hs, he = 1, NC - 1
    a = dict(p_cc=RNG.random((NC, n)), p_cellhgt_mc_now=RNG.random((NC, n)) + 0.5,
             z_slope=RNG.random((NC, n)) - 0.5, p_face_in=RNG.random((NC, h)),
             p_face=RNG.random((NC, h)), p_face_quartic=RNG.random((NC, n)))
    e = {k: v.copy() for k, v in a.items()}
    cc, dz, sl = e["p_cc"], e["p_cellhgt_mc_now"], e["z_slope"]
    face = e["p_face"]
    for k in range(slev, elev + 2):
        if k == elev + 1:
            v = cc[:, k - 1]
        elif k == slev:
            v = cc[:, k]
        elif k in (slev + 1, elev):
            r = dz[:, k] / dz[:, k - 1]
            v = cc[:, k] * (1.0 - r) + dz[:, k] / (dz[:, k - 1] + dz[:, k]) * (r * cc[:, k]
                                                                               + cc[:, k - 1])
        else:
            v = e["p_face_in"][:, k]
        face[hs:he, k] = v[hs:he]
    quartic = e["p_face_quartic"]
    for k in range(slev + 2, elev):
        g1 = dz[:, k - 1] / (dz[:, k - 1] + dz[:, k])
        g2 = 1.0 / (dz[:, k - 2] + dz[:, k - 1] + dz[:, k] + dz[:, k + 1])
        g3 = (dz[:, k - 2] + dz[:, k - 1]) / (2.0 * dz[:, k - 1] + dz[:, k])
        g4 = (dz[:, k + 1] + dz[:, k]) / (2.0 * dz[:, k] + dz[:, k - 1])
        v = cc[:, k - 1] + g1 * (cc[:, k] - cc[:, k - 1]) + g2 * (
            2.0 * dz[:, k] * g1 * (g3 - g4) * (cc[:, k] - cc[:, k - 1])
            - g3 * dz[:, k - 1] * sl[:, k] + g4 * dz[:, k] * sl[:, k - 1])
        quartic[hs:he, k] = v[hs:he]
    ppm_face_values(**a, slev=slev, elev=elev, slevp1=slev + 1, elevp1=elev + 1,
                    horizontal_start=hs, horizontal_end=he, vertical_start=slev,
                    vertical_end=elev + 2, offset_provider={"Koff": KDim}, backend=backend)
    check(a, {"p_face": face, "p_face_quartic": quartic}, rtol=1e-12, atol=1e-12)


# ================================================================== tracer densities
#
# An ``if``-expression on an ``int32`` scalar choosing a float32 (vpfloat) sum
# over ``C2E`` or a vpfloat input, float32 sums used in float64 updates
# through ``astype``, and a vertical increment with ``KField`` coefficients.


@gtx.field_operator
def _integrate_tracer_density_horizontally(
    p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    z_rhofluxdiv_c: fa.CellKField[ta.vpfloat],
    z_tracer_mflx: fa.EdgeKField[ta.wpfloat],
    z_rho_now: fa.CellKField[ta.wpfloat],
    z_tracer_now: fa.CellKField[ta.wpfloat],
    z_dtsub: ta.wpfloat,
    nsub: gtx.int32,
) -> tuple[
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    z_rhofluxdiv_c_out = (
        astype(neighbor_sum(p_mass_flx_e(C2E) * geofac_div, axis=dims.C2EDim), vpfloat)
        if nsub == 1
        else z_rhofluxdiv_c
    )

    z_fluxdiv_c_dsl = astype(
        neighbor_sum(z_tracer_mflx(C2E) * geofac_div, axis=dims.C2EDim), vpfloat
    )

    z_rho_new_dsl = z_rho_now - z_dtsub * astype(z_rhofluxdiv_c_out, wpfloat)

    z_tracer_new_dsl = (
        z_tracer_now * z_rho_now - z_dtsub * astype(z_fluxdiv_c_dsl, wpfloat)
    ) / z_rho_new_dsl

    return (
        z_rhofluxdiv_c_out,
        z_fluxdiv_c_dsl,
        z_rho_new_dsl,
        z_tracer_new_dsl,
    )


@gtx.field_operator
def _apply_vertical_density_increment(
    rhodz_ast: fa.CellKField[ta.wpfloat],
    p_mflx_contra_v: fa.CellKField[ta.wpfloat],
    deepatmo_divzl: fa.KField[ta.wpfloat],
    deepatmo_divzu: fa.KField[ta.wpfloat],
    p_dtime: ta.wpfloat,
) -> fa.CellKField[ta.wpfloat]:
    k_offset_up_low = p_dtime * (
        p_mflx_contra_v(Koff[1]) * deepatmo_divzl - p_mflx_contra_v * deepatmo_divzu
    )
    return rhodz_ast + k_offset_up_low


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def tracer_density_increments(
    p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], ta.wpfloat],
    z_rhofluxdiv_c: fa.CellKField[ta.vpfloat],
    z_tracer_mflx: fa.EdgeKField[ta.wpfloat],
    z_rho_now: fa.CellKField[ta.wpfloat],
    z_tracer_now: fa.CellKField[ta.wpfloat],
    z_rhofluxdiv_c_out: fa.CellKField[ta.vpfloat],
    z_fluxdiv_c_dsl: fa.CellKField[ta.vpfloat],
    z_rho_new_dsl: fa.CellKField[ta.wpfloat],
    z_tracer_new_dsl: fa.CellKField[ta.wpfloat],
    rhodz_ast: fa.CellKField[ta.wpfloat],
    p_mflx_contra_v: fa.CellKField[ta.wpfloat],
    deepatmo_divzl: fa.KField[ta.wpfloat],
    deepatmo_divzu: fa.KField[ta.wpfloat],
    rhodz_ast2: fa.CellKField[ta.wpfloat],
    z_dtsub: ta.wpfloat,
    nsub: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _integrate_tracer_density_horizontally(
        p_mass_flx_e, geofac_div, z_rhofluxdiv_c, z_tracer_mflx, z_rho_now, z_tracer_now,
        z_dtsub, nsub,
        out=(z_rhofluxdiv_c_out, z_fluxdiv_c_dsl, z_rho_new_dsl, z_tracer_new_dsl),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_vertical_density_increment(
        rhodz_ast, p_mflx_contra_v, deepatmo_divzl, deepatmo_divzu, z_dtsub, out=rhodz_ast2,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("nsub", [1, 2])
def test_tracer_density_increments(backend, nsub):
    n, h = NLEV, NLEV + 1
    hs, he, vs, ve = 0, NC - 2, 1, n
    c2e = table(NC, 3, NE)
    f32 = np.float32
    a = dict(p_mass_flx_e=RNG.random((NE, n)) - 0.5, geofac_div=RNG.random((NC, 3)),
             z_rhofluxdiv_c=(RNG.random((NC, n)) - 0.5).astype(f32),
             z_tracer_mflx=RNG.random((NE, n)) - 0.5, z_rho_now=RNG.random((NC, n)) + 1.0,
             z_tracer_now=RNG.random((NC, n)), z_rhofluxdiv_c_out=RNG.random((NC, n)).astype(f32),
             z_fluxdiv_c_dsl=RNG.random((NC, n)).astype(f32), z_rho_new_dsl=RNG.random((NC, n)),
             z_tracer_new_dsl=RNG.random((NC, n)), rhodz_ast=RNG.random((NC, n)),
             p_mflx_contra_v=RNG.random((NC, h)), deepatmo_divzl=RNG.random(n),
             deepatmo_divzu=RNG.random(n), rhodz_ast2=RNG.random((NC, n)))
    dt = 0.7
    e = {k: v.copy() for k, v in a.items()}

    def div(flux):
        return (flux[c2e] * e["geofac_div"][:, :, None]).sum(1).astype(f32)

    rhoflux = div(e["p_mass_flx_e"]) if nsub == 1 else e["z_rhofluxdiv_c"]
    fluxdiv = div(e["z_tracer_mflx"])
    rho_new = e["z_rho_now"] - dt * rhoflux.astype(f64)
    tracer_new = (e["z_tracer_now"] * e["z_rho_now"] - dt * fluxdiv.astype(f64)) / rho_new
    pm = e["p_mflx_contra_v"]
    incr = e["rhodz_ast"] + dt * (pm[:, 1:] * e["deepatmo_divzl"] - pm[:, :n] * e["deepatmo_divzu"])
    expected = {}
    for k, v in (("z_rhofluxdiv_c_out", rhoflux), ("z_fluxdiv_c_dsl", fluxdiv),
                 ("z_rho_new_dsl", rho_new), ("z_tracer_new_dsl", tracer_new),
                 ("rhodz_ast2", incr)):
        want = e[k].copy()
        want[hs:he, vs:ve] = v[hs:he, vs:ve]
        expected[k] = want
    tracer_density_increments(**a, z_dtsub=dt, nsub=nsub, horizontal_start=hs,
                              horizontal_end=he, vertical_start=vs, vertical_end=ve,
                              offset_provider={"C2E": c2e, "Koff": KDim}, backend=backend)
    check(a, expected, rtol=2e-6, atol=2e-6)
    assert a["z_rhofluxdiv_c_out"].dtype == f32
