"""A sixth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

Fields on half levels (``KHalfDim``, a vertical dimension of ``nlev + 1``
levels, with ``KHalfOff`` and ``dims.KHalfDim ± n`` shifts): the metrics'
``_compute_wgtfac_c`` assembled by ``with_boundaries_on_half_levels_on_cells``
(``concat_where`` on ``KHalfDim == 0``, ``== nlev`` and the interior, each
branch shifted by up to two levels), the Smagorinsky viscosity's ``km_ic`` and
``kh_ic`` at half levels (a tuple of two outputs with a tuple of domains), and
``_init_constant_cell_khalf_field`` (``broadcast`` over ``CellDim, KHalfDim``),
all in one program of several field operators over a domain on ``KHalfDim``.
Each group is one program, interpreted and compiled once, compared with
hand-written NumPy.
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
    broadcast,
    concat_where,
    float32,
    float64,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.KDim, dims.KHalfDim = CellDim, KDim, KHalfDim
dims.Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
dims.KHalfOff = FieldOffset("KHalfOff", source=KHalfDim, target=(KHalfDim,))
KHalfOff = dims.KHalfOff

fa = types.ModuleType("icon_field_aliases")
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.CellField = Field[Dims[CellDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NLEV = 7, 6
RNG = np.random.default_rng(2701)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(2702).bit_generator.state


def check(got, expected, rtol, atol=0.0):
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


# ================================================================== half levels
#
# The vertical operations on half levels (icon4py's math.vertical_operations),
# with KHalfDim in place of KDim.


@gtx.field_operator
def with_boundaries_on_half_levels_on_cells(
    top: fa.CellKHalfField[wpfloat],
    interior: fa.CellKHalfField[wpfloat],
    bottom: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    result = concat_where(
        (dims.KHalfDim > 0) & (dims.KHalfDim < nlev),
        interior,
        0.0,
    )
    result = concat_where(dims.KHalfDim == 0, top, result)
    return concat_where(dims.KHalfDim == nlev, bottom, result)


@gtx.field_operator
def _compute_wgtfac_c(
    z_ifc: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    return with_boundaries_on_half_levels_on_cells(
        top=(z_ifc(dims.KHalfDim + 1) - z_ifc) / (z_ifc(dims.KHalfDim + 2) - z_ifc),
        interior=(z_ifc(dims.KHalfDim - 1) - z_ifc)
        / (z_ifc(dims.KHalfDim - 1) - z_ifc(dims.KHalfDim + 1)),
        bottom=(z_ifc(dims.KHalfDim - 1) - z_ifc) / (z_ifc(dims.KHalfDim - 2) - z_ifc),
        nlev=nlev,
    )


@gtx.field_operator
def _smagorinsky_viscosity_at_half_levels(
    rho_ic: fa.CellKHalfField[wpfloat],
    mixing_length_sq: fa.CellKHalfField[wpfloat],
    stability_term: fa.CellKHalfField[wpfloat],
    rturb_prandtl: wpfloat,
    nlev: gtx.int32,
) -> tuple[fa.CellKHalfField[wpfloat], fa.CellKHalfField[wpfloat]]:
    km = rho_ic * mixing_length_sq * stability_term
    km_ic = with_boundaries_on_half_levels_on_cells(
        top=km(KHalfOff[1]), interior=km, bottom=km(KHalfOff[-1]), nlev=nlev
    )
    kh_ic = km_ic * rturb_prandtl
    return km_ic, kh_ic


@gtx.field_operator
def _init_constant_cell_khalf_field(value: ta.wpfloat) -> fa.CellKHalfField[ta.wpfloat]:
    return broadcast(value, (dims.CellDim, dims.KHalfDim))


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def half_level_metrics(
    z_ifc: fa.CellKHalfField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    mixing_length_sq: fa.CellKHalfField[wpfloat],
    stability_term: fa.CellKHalfField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    km_ic: fa.CellKHalfField[wpfloat],
    kh_ic: fa.CellKHalfField[wpfloat],
    tke: fa.CellKHalfField[wpfloat],
    rturb_prandtl: wpfloat,
    tke_min: wpfloat,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_wgtfac_c(
        z_ifc=z_ifc,
        nlev=nlev,
        out=wgtfac_c,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )
    _smagorinsky_viscosity_at_half_levels(
        rho_ic, mixing_length_sq, stability_term, rturb_prandtl, nlev,
        out=(km_ic, kh_ic),
        domain=(
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KHalfDim: (vertical_start, vertical_end)},
            {dims.CellDim: (horizontal_start, horizontal_end),
             dims.KHalfDim: (0, vertical_end)},
        ),
    )
    _init_constant_cell_khalf_field(
        value=tke_min,
        out=tke,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


def with_boundaries(top, interior, bottom, nlev):
    """``top`` on half level 0, ``bottom`` on ``nlev``, ``interior`` between (all
    given on every half level; NaN where a shift leaves the column)."""
    out = np.array(interior)
    out[:, 0] = top[:, 0]
    out[:, nlev] = bottom[:, nlev]
    return out


def shifted(x, n):
    """``x(KHalfOff[n])``: level k takes level k + n (NaN outside the column)."""
    out = np.full(x.shape, np.nan)
    lo, hi = max(0, -n), min(x.shape[1], x.shape[1] - n)
    out[:, lo:hi] = x[:, lo + n:hi + n]
    return out


def inside(value, base, hs, he, vs, ve):
    out = np.array(base)
    out[hs:he, vs:ve] = value[hs:he, vs:ve]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("levels", [(0, NLEV + 1), (1, NLEV)])
def test_half_level_metrics(backend, levels):
    vs, ve = levels
    hs, he = 1, NC - 1
    nhalf = NLEV + 1
    # heights of the interfaces, falling from the top with random spacings
    z_ifc = np.cumsum(RNG.uniform(100.0, 500.0, (NC, nhalf))[:, ::-1], axis=1)[:, ::-1]
    rho_ic, mix, stab = (RNG.uniform(0.5, 1.5, (NC, nhalf)) for _ in range(3))
    base = {name: RNG.random((NC, nhalf)) for name in ("wgtfac_c", "km_ic", "kh_ic", "tke")}
    got = {name: v.copy() for name, v in base.items()}
    half_level_metrics(z_ifc, rho_ic, mix, stab, got["wgtfac_c"], got["km_ic"], got["kh_ic"],
                       got["tke"], 0.33, 1.0e-4, NLEV, hs, he, vs, ve,
                       offset_provider={"KHalfOff": KHalfDim}, backend=backend)

    def z(n):
        return shifted(z_ifc, n)
    with np.errstate(invalid="ignore"):
        wgtfac = with_boundaries(top=(z(1) - z_ifc) / (z(2) - z_ifc),
                                 interior=(z(-1) - z_ifc) / (z(-1) - z(1)),
                                 bottom=(z(-1) - z_ifc) / (z(-2) - z_ifc), nlev=NLEV)
    km = rho_ic * mix * stab
    km_ic = with_boundaries(shifted(km, 1), km, shifted(km, -1), NLEV)
    check(got, dict(
        wgtfac_c=inside(wgtfac, base["wgtfac_c"], hs, he, vs, ve),
        km_ic=inside(km_ic, base["km_ic"], hs, he, vs, ve),
        kh_ic=inside(0.33 * km_ic, base["kh_ic"], hs, he, 0, ve),
        tke=inside(np.full((NC, nhalf), 1.0e-4), base["tke"], hs, he, vs, ve)), rtol=1e-12)
