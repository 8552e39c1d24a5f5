"""A seventeenth round of ICON stencils (icon4py's field and scan operators) in
icon4py's own spelling, beside ``test_icon_stencils_ported*.py``.

First the turbulence scheme's semi-implicit vertical diffusion of one
variable: one program of five statements on four vertical domains built from
the same runtime pair (the upper boundary row, the flux levels, an implicit
surface coupling whose domain is empty for a surface-flux variable, the
right-hand side), written in place, then solved by a forward scan and a
backward scan that each carry a ``bool`` first-row flag beside the value
(``eliminated, _ = scan(...)``), the backward one reading a field one level
down (``inversion_factor(Koff[1])``); the solve is also called directly.
Then turbdiff's factorisation of the matrix of one variable type: six
statements on domains built from the runtime bounds and the type's
``elimination_end``, a ``CellField`` broadcast to ``(Cell, K)``, a ``KField``
weight, a field reduced in place, and a forward scan reading the level below;
and the vertical smoothing of a TKE forcing by nested ``concat_where``
half-spaces on a runtime ``nlev``, so that no branch reads beyond the column.
Then the turbulent master length scale (also called directly): a ``concat_where`` on a runtime
``KDim == nlev`` putting a cell field on the surface half level below a
full-level field, summed up by a backward scan and capped by ``maximum`` of a
scalar and a field, on half levels one more than the input has.
Then the vertically implicit solver's tridiagonal solve for ``w`` with the
Klemp damping: a forward sweep carrying ``(vpfloat, float)`` and a backward
substitution carrying ``(wpfloat, wpfloat, int32)`` whose ``if`` statement
compares an ``int32`` scalar with a module constant and whose ``if``
expression tests ``(a < b) & (a > 0)`` of scalars, a ``KField`` passed to the
scan beside ``(Cell, K)`` fields, and the scan's tuple indexed ``[0]``; both
scans are also called directly as icon4py's tests call them, with Python
numbers for the ``int32`` operands and ``out=`` arrays given with their
dimensions.
Then velocity advection stencils 8 to 14: ``where`` on chained comparisons of
a ``KField[int32]`` with scalars and ``maximum(3, nrdmax - 2)``, ``if``
expressions on an ``int32`` ``istep``, an operator without arguments as a
``where`` branch, a ``bool``/``vpfloat`` tuple chosen by ``where``, a field
passed through to an output, with ``C2E`` given as a table holding -1 (skip
values) beside the strided ``C2CE``.
Then the FFSL numerical quadrature of the cubic reconstruction: forty scalar
parameters, an ``int32`` mask compared with 1, eleven outputs; a program on
runtime bounds and a direct call with ``out=`` a tuple of eleven.
Last muphys' alternative saturation adjustment: a program of twenty calls
writing and re-reading temporaries in place (``out=Tx`` reading ``Tx``),
tuples of outputs without ``domain=``.
Each group is one program (or a few direct calls), interpreted and compiled,
compared with NumPy written from the formulas."""

from __future__ import annotations

import types
from typing import Final, TypeVar

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
    neighbor_sum,
    where,
    with_dims,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.KDim, dims.C2EDim, dims.CEDim = (
    CellDim, EdgeDim, KDim, C2EDim, CEDim)
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float32       # icon4py's mixed precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NLEV = 7, 10, 10
NH = NLEV + 1
RNG = np.random.default_rng(17001)
_TABLE_RNG = np.random.default_rng(17002)
_C2E = np.array([_TABLE_RNG.choice(NE, 3, replace=False) for _ in range(NC)])
_C2E[2, 1] = -1          # a cell with two edges (icon4py's skip value)
_C2E[5, 2] = -1
TABLES = {"C2E": _C2E, "C2CE": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(17003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


def f32(*shape):
    return RNG.random(shape).astype(np.float32)


# ================================================================== implicit vertical diffusion
#
# turbdiff's calc_impl_vert_diff: the explicit flux density on the flux
# levels, the implicit surface coupling for the momentum type only (an empty
# domain for the scalars), the right-hand side, then the Thomas solve.


@gtx.field_operator
def _compute_explicit_flux_density(
    explicit_diffusion_momentum: fa.CellKField[wpfloat],
    current_profile: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return explicit_diffusion_momentum * (current_profile - current_profile(Koff[-1]))


@gtx.field_operator
def _no_flux_through_the_model_top() -> fa.CellKField[wpfloat]:
    return broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.field_operator
def _add_implicit_surface_flux_to_the_explicit_flux_density(
    explicit_flux_density: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
    current_profile: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return explicit_flux_density + implicit_diffusion_momentum * current_profile(Koff[-1])


@gtx.field_operator
def _compute_diffusion_right_hand_side(
    discretisation_momentum: fa.CellKField[wpfloat],
    current_profile: fa.CellKField[wpfloat],
    explicit_flux_density: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return (
        discretisation_momentum * current_profile
        + explicit_flux_density(Koff[1])
        - explicit_flux_density
    )


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(wpfloat("0.0"), True))
def _eliminate_downward(
    state: tuple[wpfloat, bool],
    right_hand_side: wpfloat,
    implicit_diffusion_momentum: wpfloat,
    inverted_diffusion_momentum: wpfloat,
) -> tuple[wpfloat, bool]:
    eliminated_above, at_the_top = state
    eliminated = (
        right_hand_side * inverted_diffusion_momentum
        if at_the_top
        else (right_hand_side + implicit_diffusion_momentum * eliminated_above)
        * inverted_diffusion_momentum
    )
    return eliminated, False


@gtx.scan_operator(axis=dims.KDim, forward=False, init=(wpfloat("0.0"), True))
def _substitute_upward(
    state: tuple[wpfloat, bool],
    eliminated: wpfloat,
    inversion_factor_below: wpfloat,
) -> tuple[wpfloat, bool]:
    solution_below, at_the_bottom = state
    solution = eliminated if at_the_bottom else eliminated + inversion_factor_below * solution_below
    return solution, False


@gtx.field_operator
def _solve_vertical_diffusion_equation(
    right_hand_side: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
    inverted_diffusion_momentum: fa.CellKField[wpfloat],
    inversion_factor: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    eliminated, _ = _eliminate_downward(
        right_hand_side, implicit_diffusion_momentum, inverted_diffusion_momentum
    )
    solution, _ = _substitute_upward(eliminated, inversion_factor(Koff[1]))
    return solution


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def calc_impl_vert_diff(
    explicit_diffusion_momentum: fa.CellKField[wpfloat],
    current_profile: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
    discretisation_momentum: fa.CellKField[wpfloat],
    inverted_diffusion_momentum: fa.CellKField[wpfloat],
    inversion_factor: fa.CellKField[wpfloat],
    surface_addition_start: gtx.int32,
    explicit_flux_density: fa.CellKField[wpfloat],
    right_hand_side: fa.CellKField[wpfloat],
    updated_profile: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _no_flux_through_the_model_top(
        out=explicit_flux_density,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_start + 1),
        },
    )
    _compute_explicit_flux_density(
        explicit_diffusion_momentum=explicit_diffusion_momentum,
        current_profile=current_profile,
        out=explicit_flux_density,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start + 1, vertical_end + 1),
        },
    )
    _add_implicit_surface_flux_to_the_explicit_flux_density(
        explicit_flux_density=explicit_flux_density,
        implicit_diffusion_momentum=implicit_diffusion_momentum,
        current_profile=current_profile,
        out=explicit_flux_density,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (surface_addition_start, vertical_end + 1),
        },
    )
    _compute_diffusion_right_hand_side(
        discretisation_momentum=discretisation_momentum,
        current_profile=current_profile,
        explicit_flux_density=explicit_flux_density,
        out=right_hand_side,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _solve_vertical_diffusion_equation(
        right_hand_side=right_hand_side,
        implicit_diffusion_momentum=implicit_diffusion_momentum,
        inverted_diffusion_momentum=inverted_diffusion_momentum,
        inversion_factor=inversion_factor,
        out=updated_profile,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _diffusion_inputs():
    # every field on the flux (half) levels: the profile includes its lower boundary value
    return dict(explicit_diffusion_momentum=f64(NC, NH), current_profile=f64(NC, NH),
                implicit_diffusion_momentum=f64(NC, NH) * 0.3,
                discretisation_momentum=f64(NC, NH) + 1.0,
                inverted_diffusion_momentum=f64(NC, NH) + 0.5,
                inversion_factor=f64(NC, NH) * 0.5)


def _thomas_numpy(rhs, impl, inv, fac, vs, ve):
    elim, sol = np.zeros(rhs.shape), np.zeros(rhs.shape)
    elim[:, vs] = rhs[:, vs] * inv[:, vs]
    for k in range(vs + 1, ve):
        elim[:, k] = (rhs[:, k] + impl[:, k] * elim[:, k - 1]) * inv[:, k]
    sol[:, ve - 1] = elim[:, ve - 1]
    for k in range(ve - 2, vs - 1, -1):
        sol[:, k] = elim[:, k] + fac[:, k + 1] * sol[:, k + 1]
    return sol


@pytest.mark.parametrize(("bounds", "momentum"), [((0, NLEV), True), ((2, NLEV - 1), False)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_calc_impl_vert_diff(backend, bounds, momentum):
    a = _diffusion_inputs()
    hs, he = 1, NC - 1
    vs, ve = bounds
    base = dict(explicit_flux_density=f64(NC, NH), right_hand_side=f64(NC, NH),
                updated_profile=f64(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    calc_impl_vert_diff(**a, **got, surface_addition_start=ve if momentum else ve + 1,
                        horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                        vertical_end=ve, offset_provider=TABLES, backend=backend)

    cur, expl, impl = a["current_profile"], a["explicit_diffusion_momentum"], \
        a["implicit_diffusion_momentum"]
    flux = np.array(base["explicit_flux_density"])
    flux[:, vs] = 0.0
    flux[:, vs + 1:ve + 1] = (expl[:, 1:] * (cur[:, 1:] - cur[:, :-1]))[:, vs:ve]
    if momentum:
        flux[:, ve] += impl[:, ve] * cur[:, ve - 1]
    rhs = np.array(base["right_hand_side"])
    rhs[:, vs:ve] = (a["discretisation_momentum"][:, :-1] * cur[:, :-1] + flux[:, 1:]
                     - flux[:, :-1])[:, vs:ve]
    sol = _thomas_numpy(rhs, impl, a["inverted_diffusion_momentum"], a["inversion_factor"],
                        vs, ve)
    check(got, dict(
        explicit_flux_density=inside(flux, base["explicit_flux_density"], hs, he),
        right_hand_side=inside(rhs, base["right_hand_side"], hs, he),
        updated_profile=inside(sol, base["updated_profile"], hs, he, vs, ve)), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vertical_diffusion_solve_called_directly(backend):
    a = _diffusion_inputs()
    rhs = f64(NC, NH)
    out = np.zeros((NC, NH))
    _solve_vertical_diffusion_equation(
        rhs, a["implicit_diffusion_momentum"], a["inverted_diffusion_momentum"],
        a["inversion_factor"], out=out, domain={CellDim: (0, NC), KDim: (0, NLEV)},
        offset_provider=TABLES, backend=backend)
    want = _thomas_numpy(rhs, a["implicit_diffusion_momentum"],
                         a["inverted_diffusion_momentum"], a["inversion_factor"], 0, NLEV)
    np.testing.assert_allclose(out, want, rtol=1e-12)


# ================================================================== diffusion matrix of a type
#
# turbdiff's prep_impl_vert_diff: the diffusion momentum inside and at the
# surface flux level, its implicit part (one row further for the momentum
# type than for the scalars), the explicit rest in place, and the forward
# elimination's reciprocal pivots by a scan reading the level below.


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(wpfloat("0.0"), True))
def _invert_diffusion_momentum(
    state: tuple[wpfloat, bool],
    discretisation_momentum: wpfloat,
    implicit_diffusion_momentum: wpfloat,
    implicit_diffusion_momentum_below: wpfloat,
) -> tuple[wpfloat, bool]:
    inverted_above, at_the_top = state
    inversion_factor = inverted_above * implicit_diffusion_momentum
    inverted = (
        wpfloat("1.0") / (discretisation_momentum + implicit_diffusion_momentum_below)
        if at_the_top
        else wpfloat("1.0")
        / (
            discretisation_momentum
            + implicit_diffusion_momentum_below
            + implicit_diffusion_momentum * (wpfloat("1.0") - inversion_factor)
        )
    )
    return inverted, False


@gtx.field_operator
def _compute_inverted_diffusion_momentum(
    discretisation_momentum: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    inverted, _ = _invert_diffusion_momentum(
        discretisation_momentum,
        implicit_diffusion_momentum,
        implicit_diffusion_momentum(Koff[1]),
    )
    return inverted


@gtx.field_operator
def _compute_diffusion_momentum(
    diffusion_coefficient: fa.CellKField[wpfloat],
    air_density: fa.CellKField[wpfloat],
    diffusion_depth: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return diffusion_coefficient * air_density / diffusion_depth


@gtx.field_operator
def _compute_surface_diffusion_momentum(
    air_density: fa.CellKField[wpfloat],
    surface_transfer_velocity: fa.CellField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return air_density * broadcast(surface_transfer_velocity, (dims.CellDim, dims.KDim))


@gtx.field_operator
def _compute_surface_diffusion_depth(
    diffusion_coefficient: fa.CellKField[wpfloat],
    surface_transfer_velocity: fa.CellField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return diffusion_coefficient / broadcast(surface_transfer_velocity, (dims.CellDim, dims.KDim))


@gtx.field_operator
def _compute_implicit_diffusion_momentum(
    diffusion_momentum: fa.CellKField[wpfloat],
    implicit_weight: fa.KField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return diffusion_momentum * implicit_weight


@gtx.field_operator
def _subtract_implicit_diffusion_momentum(
    diffusion_momentum: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return diffusion_momentum - implicit_diffusion_momentum


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def prep_impl_vert_diff(
    diffusion_coefficient: fa.CellKField[wpfloat],
    air_density: fa.CellKField[wpfloat],
    surface_transfer_velocity: fa.CellField[wpfloat],
    implicit_weight: fa.KField[wpfloat],
    discretisation_momentum: fa.CellKField[wpfloat],
    elimination_end: gtx.int32,
    diffusion_momentum: fa.CellKField[wpfloat],
    diffusion_depth: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
    inverted_diffusion_momentum: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_diffusion_momentum(
        diffusion_coefficient=diffusion_coefficient,
        air_density=air_density,
        diffusion_depth=diffusion_depth,
        out=diffusion_momentum,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_surface_diffusion_momentum(
        air_density=air_density,
        surface_transfer_velocity=surface_transfer_velocity,
        out=diffusion_momentum,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_end, vertical_end + 1),
        },
    )
    _compute_surface_diffusion_depth(
        diffusion_coefficient=diffusion_coefficient,
        surface_transfer_velocity=surface_transfer_velocity,
        out=diffusion_depth,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_end, vertical_end + 1),
        },
    )
    _compute_implicit_diffusion_momentum(
        diffusion_momentum=diffusion_momentum,
        implicit_weight=implicit_weight,
        out=implicit_diffusion_momentum,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, elimination_end + 1),
        },
    )
    _subtract_implicit_diffusion_momentum(
        diffusion_momentum=diffusion_momentum,
        implicit_diffusion_momentum=implicit_diffusion_momentum,
        out=diffusion_momentum,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_inverted_diffusion_momentum(
        discretisation_momentum=discretisation_momentum,
        implicit_diffusion_momentum=implicit_diffusion_momentum,
        out=inverted_diffusion_momentum,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start - 1, elimination_end),
        },
    )


@pytest.mark.parametrize("momentum", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_prep_impl_vert_diff(backend, momentum):
    hs, he, vs, ve = 1, NC - 1, 1, NLEV
    ee = NLEV if momentum else NLEV - 1
    a = dict(diffusion_coefficient=f64(NC, NH) + 0.5, air_density=f64(NC, NH) + 0.5,
             surface_transfer_velocity=f64(NC) + 0.1, implicit_weight=f64(NH),
             discretisation_momentum=f64(NC, NH) + 1.0)
    base = dict(diffusion_momentum=f64(NC, NH), diffusion_depth=f64(NC, NH) + 0.5,
                implicit_diffusion_momentum=f64(NC, NH), inverted_diffusion_momentum=f64(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    prep_impl_vert_diff(**a, **got, elimination_end=ee, horizontal_start=hs, horizontal_end=he,
                        vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                        backend=backend)

    tkv, rho, tsv = a["diffusion_coefficient"], a["air_density"], a["surface_transfer_velocity"]
    dm, depth, impl, inv = (np.array(base[n]) for n in (
        "diffusion_momentum", "diffusion_depth", "implicit_diffusion_momentum",
        "inverted_diffusion_momentum"))
    dm[:, vs:ve] = (tkv * rho / depth)[:, vs:ve]
    dm[:, ve] = rho[:, ve] * tsv
    depth[:, ve] = tkv[:, ve] / tsv
    impl[:, vs:ee + 1] = (dm * a["implicit_weight"])[:, vs:ee + 1]
    dm[:, vs:ve] -= impl[:, vs:ve]
    disc = a["discretisation_momentum"]
    inv[:, vs - 1] = 1.0 / (disc[:, vs - 1] + impl[:, vs])
    for k in range(vs, ee):
        inv[:, k] = 1.0 / (disc[:, k] + impl[:, k + 1]
                           + impl[:, k] * (1.0 - inv[:, k - 1] * impl[:, k]))
    want = dict(diffusion_momentum=dm, diffusion_depth=depth, implicit_diffusion_momentum=impl,
                inverted_diffusion_momentum=inv)
    check(got, {n: inside(v, base[n], hs, he) for n, v in want.items()}, rtol=1e-12)


# ================================================================== vertical smoothing
#
# turbdiff's vert_smooth of a TKE forcing: a three-point stencil with one-sided
# ends, chosen by nested concat_where half-spaces on a runtime nlev so that no
# branch reads beyond the column; the top and surface rows are copied through.


@gtx.field_operator
def _smooth_tke_forcing_vertically(
    tke_forcing: fa.CellKField[wpfloat],
    discretisation_momentum: fa.CellKField[wpfloat],
    smoothing_mask: fa.CellField[wpfloat],
    smoothing_weight: wpfloat,
    nlev: gtx.int32,
) -> fa.CellKField[wpfloat]:
    smoothing = smoothing_weight * smoothing_mask
    remaining_at_an_end = wpfloat("1.0") - smoothing
    remaining_inside = wpfloat("1.0") - wpfloat("2.0") * smoothing

    at_the_top = (
        remaining_at_an_end * tke_forcing
        + smoothing
        * tke_forcing(Koff[1])
        * discretisation_momentum(Koff[1])
        / discretisation_momentum
    )
    inside = (
        remaining_inside * tke_forcing
        + smoothing
        * (
            tke_forcing(Koff[-1]) * discretisation_momentum(Koff[-1])
            + tke_forcing(Koff[1]) * discretisation_momentum(Koff[1])
        )
        / discretisation_momentum
    )
    at_the_bottom = (
        remaining_at_an_end * tke_forcing
        + smoothing
        * tke_forcing(Koff[-1])
        * discretisation_momentum(Koff[-1])
        / discretisation_momentum
    )

    smoothed = concat_where(dims.KDim < nlev, at_the_bottom, tke_forcing)
    smoothed = concat_where(dims.KDim < nlev - 1, inside, smoothed)
    smoothed = concat_where(dims.KDim < 2, at_the_top, smoothed)
    return concat_where(dims.KDim < 1, tke_forcing, smoothed)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def smooth_tke_forcing_vertically(
    tke_forcing: fa.CellKField[wpfloat],
    discretisation_momentum: fa.CellKField[wpfloat],
    smoothing_mask: fa.CellField[wpfloat],
    smoothing_weight: wpfloat,
    nlev: gtx.int32,
    smoothed_tke_forcing: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _smooth_tke_forcing_vertically(
        tke_forcing=tke_forcing,
        discretisation_momentum=discretisation_momentum,
        smoothing_mask=smoothing_mask,
        smoothing_weight=smoothing_weight,
        nlev=nlev,
        out=smoothed_tke_forcing,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _smooth_numpy(f, dm, s, nlev):
    s = s[:, None]
    out = np.array(f)
    out[:, 1] = ((1 - s) * f + s * np.roll(f, -1, 1) * np.roll(dm, -1, 1) / dm)[:, 1]
    for k in range(2, nlev - 1):
        out[:, k] = ((1 - 2 * s[:, 0]) * f[:, k]
                     + s[:, 0] * (f[:, k - 1] * dm[:, k - 1] + f[:, k + 1] * dm[:, k + 1])
                     / dm[:, k])
    k = nlev - 1
    out[:, k] = (1 - s[:, 0]) * f[:, k] + s[:, 0] * f[:, k - 1] * dm[:, k - 1] / dm[:, k]
    return out


@pytest.mark.parametrize("nlev", [NLEV, NLEV - 3])
@pytest.mark.parametrize("backend", BACKENDS)
def test_smooth_tke_forcing_vertically(backend, nlev):
    # the whole column, top and surface rows included; nlev below the arrays' last
    # half level smooths a shorter column inside longer arrays
    hs, he = 0, NC - 1
    f, dm = RNG.standard_normal((NC, NH)), f64(NC, NH) + 0.5
    mask = (RNG.random(NC) < 0.7).astype(float)
    base = f64(NC, NH)
    got = base.copy()
    smooth_tke_forcing_vertically(f, dm, mask, 0.2, nlev, got, horizontal_start=hs,
                                  horizontal_end=he, vertical_start=0, vertical_end=nlev + 1,
                                  offset_provider=TABLES, backend=backend)
    want = _smooth_numpy(f, dm, 0.2 * mask, nlev)
    np.testing.assert_allclose(got, inside(want, base, hs, he, 0, nlev + 1), rtol=1e-12)


# ================================================================== turbulent length scale
#
# The raw length scale at a half level is its height above the surface: the
# roughness length on the surface half level plus the layer depths above it,
# summed up from the surface; then capped harmonically and scaled.


class ThermoConstants:
    EDGRAV: Final = 1.0 / 9.80665


@gtx.scan_operator(axis=dims.KDim, forward=False, init=wpfloat("0.0"))
def _accumulate_upward_from_the_surface(carry: wpfloat, increment: wpfloat) -> wpfloat:
    return increment + carry


@gtx.field_operator
def _effective_length_scale(
    maximal_length_scale: fa.CellKField[wpfloat],
    horizontal_length_scale_limit: fa.CellField[wpfloat],
    von_karman_constant: wpfloat,
    minimal_length_scale: wpfloat,
) -> fa.CellKField[wpfloat]:
    return von_karman_constant * maximum(
        minimal_length_scale,
        horizontal_length_scale_limit
        * maximal_length_scale
        / (horizontal_length_scale_limit + maximal_length_scale),
    )


@gtx.field_operator
def _compute_turbulent_length_scale(
    layer_depth: fa.CellKField[wpfloat],
    roughness_length_times_gravity: fa.CellField[wpfloat],
    horizontal_length_scale_limit: fa.CellField[wpfloat],
    nlev: gtx.int32,
    von_karman_constant: wpfloat,
    minimal_length_scale: wpfloat,
) -> fa.CellKField[wpfloat]:
    increment = concat_where(
        dims.KDim == nlev, roughness_length_times_gravity * ThermoConstants.EDGRAV, layer_depth
    )
    return _effective_length_scale(
        _accumulate_upward_from_the_surface(increment),
        horizontal_length_scale_limit,
        von_karman_constant,
        minimal_length_scale,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_turbulent_length_scale(
    layer_depth: fa.CellKField[wpfloat],
    roughness_length_times_gravity: fa.CellField[wpfloat],
    horizontal_length_scale_limit: fa.CellField[wpfloat],
    nlev: gtx.int32,
    von_karman_constant: wpfloat,
    minimal_length_scale: wpfloat,
    turbulent_length_scale: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_turbulent_length_scale(
        layer_depth=layer_depth,
        roughness_length_times_gravity=roughness_length_times_gravity,
        horizontal_length_scale_limit=horizontal_length_scale_limit,
        nlev=nlev,
        von_karman_constant=von_karman_constant,
        minimal_length_scale=minimal_length_scale,
        out=turbulent_length_scale,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("bounds", [(0, NC, 0), (1, NC - 2, 3)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_turbulent_length_scale(backend, bounds):
    hs, he, vs = bounds
    depth = RNG.uniform(20.0, 300.0, (NC, NLEV))          # on the full levels only
    gz0 = RNG.uniform(0.1, 5.0, NC)
    l_scal = RNG.uniform(100.0, 500.0, NC)
    l_scal[3] = 1.0                                       # the minimum takes over there
    base = f64(NC, NH)
    got = base.copy()
    compute_turbulent_length_scale(
        depth, gz0, l_scal, NLEV, 0.4, 1.0, got, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=NH, offset_provider={}, backend=backend)
    inc = np.concatenate([depth, (gz0 / 9.80665)[:, None]], axis=1)
    acc = np.cumsum(inc[:, ::-1], axis=1)[:, ::-1]
    want = 0.4 * np.maximum(1.0, l_scal[:, None] * acc / (l_scal[:, None] + acc))
    np.testing.assert_allclose(got, inside(want, base, hs, he, vs, NH), rtol=1e-12)
    assert np.any(want[3] == 0.4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_turbulent_length_scale_called_directly(backend):
    # no domain=: the output's levels, one more than the layer depths have
    depth = RNG.uniform(20.0, 300.0, (NC, NLEV))
    gz0, l_scal = RNG.uniform(0.1, 5.0, NC), RNG.uniform(100.0, 500.0, NC)
    out = np.zeros((NC, NH))
    _compute_turbulent_length_scale(depth, gz0, l_scal, NLEV, 0.4, 1.0, out=out,
                                    offset_provider={}, backend=backend)
    inc = np.concatenate([depth, (gz0 / 9.80665)[:, None]], axis=1)
    acc = np.cumsum(inc[:, ::-1], axis=1)[:, ::-1]
    np.testing.assert_allclose(
        out, 0.4 * np.maximum(1.0, l_scal[:, None] * acc / (l_scal[:, None] + acc)), rtol=1e-12)


# ================================================================== tridiagonal solve for w
#
# The vertically implicit solver's forward sweep and its back substitution,
# which damps w below the damping layer's end when the Rayleigh type is Klemp's.


class RayleighType:
    CLASSIC: Final = 1
    KLEMP: Final = 2


rayleigh_damping_options: Final = RayleighType()


@gtx.scan_operator(
    axis=dims.KDim,
    forward=True,
    init=(vpfloat("0.0"), 0.0),
)
def tridiagonal_forward_sweep_for_w(
    state_kminus1: tuple[vpfloat, float],
    a: vpfloat,
    b: vpfloat,
    c: vpfloat,
    d: wpfloat,
) -> tuple[vpfloat, wpfloat]:
    c_kminus1 = astype(state_kminus1[0], vpfloat)
    d_kminus1 = state_kminus1[1]
    normalization = vpfloat("1.0") / (b + a * c_kminus1)
    c_new = (vpfloat("0.0") - c) * normalization
    d_new = (d - astype(a, wpfloat) * d_kminus1) * astype(normalization, wpfloat)
    return c_new, d_new


@gtx.scan_operator(axis=dims.KDim, forward=False, init=(wpfloat(0.0), wpfloat(0.0), gtx.int32(0)))
def _solve_tridiagonal_matrix_for_w_back_substitution_scan_with_klemp(
    state: tuple[wpfloat, wpfloat, gtx.int32],
    z_q: vpfloat,
    w: wpfloat,
    rayleigh_type: gtx.int32,
    rayleigh_damping_factor: ta.wpfloat,
    end_index_of_damping_layer: gtx.int32,
    nlev: gtx.int32,
) -> tuple[wpfloat, wpfloat, gtx.int32]:
    _, w_state, count = state

    non_damped_w = w + w_state * astype(z_q, wpfloat)

    if rayleigh_type == rayleigh_damping_options.KLEMP:
        k_index = nlev - 1 - count
        next_w = (
            rayleigh_damping_factor * non_damped_w
            if (k_index < end_index_of_damping_layer + 1) & (k_index > 0)
            else non_damped_w
        )
    else:
        next_w = non_damped_w

    return next_w, non_damped_w, count + 1


@gtx.field_operator
def _vertically_implicit_solver_at_predictor_step_solve(
    z_a: fa.CellKField[vpfloat],
    z_b: fa.CellKField[vpfloat],
    z_c: fa.CellKField[vpfloat],
    w_prep: fa.CellKField[wpfloat],
    rayleigh_type: gtx.int32,
    rayleigh_damping_factor: fa.KField[ta.wpfloat],
    end_index_of_damping_layer: gtx.int32,
    nlev: gtx.int32,
) -> fa.CellKField[wpfloat]:
    tridiagonal_intermediate_result, next_w_intermediate_result = tridiagonal_forward_sweep_for_w(
        z_a, z_b, z_c, w_prep
    )
    next_w = _solve_tridiagonal_matrix_for_w_back_substitution_scan_with_klemp(
        z_q=tridiagonal_intermediate_result,
        w=next_w_intermediate_result,
        rayleigh_type=rayleigh_type,
        rayleigh_damping_factor=rayleigh_damping_factor,
        end_index_of_damping_layer=end_index_of_damping_layer,
        nlev=nlev,
    )[0]

    return next_w


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def vertically_implicit_solver_at_predictor_step_solve(
    z_a: fa.CellKField[vpfloat],
    z_b: fa.CellKField[vpfloat],
    z_c: fa.CellKField[vpfloat],
    w_prep: fa.CellKField[wpfloat],
    next_w: fa.CellKField[wpfloat],
    rayleigh_damping_factor: fa.KField[ta.wpfloat],
    rayleigh_type: gtx.int32,
    end_index_of_damping_layer: gtx.int32,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _vertically_implicit_solver_at_predictor_step_solve(
        z_a, z_b, z_c, w_prep, rayleigh_type, rayleigh_damping_factor,
        end_index_of_damping_layer, nlev,
        out=next_w,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)},
    )


def _w_solve_numpy(a, rayleigh_type, end_damping, vs, ve):
    za, zb, zc = (a[n].astype(np.float32) for n in ("z_a", "z_b", "z_c"))
    d = a["w_prep"]
    q, wf = np.zeros((NC, NLEV), np.float32), np.zeros((NC, NLEV))
    cq, dq = np.zeros(NC, np.float32), np.zeros(NC)
    for k in range(vs, ve):
        norm = np.float32(1.0) / (zb[:, k] + za[:, k] * cq)
        cq = (np.float32(0.0) - zc[:, k]) * norm
        dq = (d[:, k] - za[:, k].astype(np.float64) * dq) * norm.astype(np.float64)
        q[:, k], wf[:, k] = cq, dq
    out = np.zeros((NC, NLEV))
    w_state, count = np.zeros(NC), 0
    for k in range(ve - 1, vs - 1, -1):
        non_damped = wf[:, k] + w_state * q[:, k].astype(np.float64)
        k_index = NLEV - 1 - count
        damp = rayleigh_type == 2 and k_index < end_damping + 1 and k_index > 0
        out[:, k] = a["rayleigh_damping_factor"][k] * non_damped if damp else non_damped
        w_state, count = non_damped, count + 1
    return out


@pytest.mark.parametrize(("rayleigh_type", "vs"), [(2, 1), (1, 0)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_tridiagonal_solve_for_w_with_klemp_damping(backend, rayleigh_type, vs):
    hs, he, end_damping = 1, NC - 1, 4
    a = dict(z_a=-f32(NC, NLEV) * 0.3, z_b=f32(NC, NLEV) + 1.5, z_c=-f32(NC, NLEV) * 0.3,
             w_prep=RNG.standard_normal((NC, NLEV)),
             rayleigh_damping_factor=RNG.uniform(0.5, 1.0, NLEV))
    base = f64(NC, NLEV)
    got = base.copy()
    vertically_implicit_solver_at_predictor_step_solve(
        **a, next_w=got, rayleigh_type=rayleigh_type, end_index_of_damping_layer=end_damping,
        nlev=NLEV, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=NLEV, offset_provider={}, backend=backend)
    want = _w_solve_numpy(a, rayleigh_type, end_damping, vs, NLEV)
    np.testing.assert_allclose(got, inside(want, base, hs, he, vs, NLEV), rtol=2e-5, atol=1e-6)
    undamped = _w_solve_numpy(a, 1, end_damping, vs, NLEV)
    assert np.array_equal(want, undamped) == (rayleigh_type != 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tridiagonal_scans_for_w_called_directly(backend):
    # the scans called as icon4py's tests call them: numbers for the int32
    # operands, the profile over K, every output of the carry written into
    # arrays given with their dimensions (icon4py's fields)
    a = dict(z_a=-f32(NC, NLEV) * 0.3, z_b=f32(NC, NLEV) + 1.5, z_c=-f32(NC, NLEV) * 0.3,
             w_prep=RNG.standard_normal((NC, NLEV)),
             rayleigh_damping_factor=RNG.uniform(0.5, 1.0, NLEV))
    ck = [with_dims(a[n], CellDim, KDim) for n in ("z_a", "z_b", "z_c", "w_prep")]
    q, wf = np.zeros((NC, NLEV), np.float32), np.zeros((NC, NLEV))
    tridiagonal_forward_sweep_for_w(*ck, out=(q, wf),
                                    domain={CellDim: (np.int32(0), np.int32(NC)),
                                            KDim: (np.int32(0), np.int32(NLEV))},
                                    offset_provider={}, backend=backend)
    w, undamped, count = np.zeros((NC, NLEV)), np.zeros((NC, NLEV)), np.zeros((NC, NLEV),
                                                                             np.int32)
    _solve_tridiagonal_matrix_for_w_back_substitution_scan_with_klemp(
        with_dims(q, CellDim, KDim), with_dims(wf, CellDim, KDim), RayleighType.KLEMP,
        with_dims(a["rayleigh_damping_factor"], KDim), 4, NLEV,
        out=tuple(with_dims(o, CellDim, KDim) for o in (w, undamped, count)),
        offset_provider={}, backend=backend)
    np.testing.assert_allclose(w, _w_solve_numpy(a, 2, 4, 0, NLEV), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(undamped, _w_solve_numpy(a, 1, 4, 0, NLEV), rtol=2e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(count, np.tile(np.arange(NLEV, 0, -1), (NC, 1)))


# ================================================================== velocity advection 8 to 14
#
# The kinetic energy and the contravariant correction at cells, the
# contravariant vertical velocity and its clipping near the CFL limit.


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s(C2CE) * interpolant_wp(C2E), axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_vp(
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    interpolation_to_half_levels_vp = wgtfac_c * interpolant + (
        vpfloat("1.0") - wgtfac_c
    ) * interpolant(Koff[-1])
    return interpolation_to_half_levels_vp


@gtx.field_operator
def _copy_cell_kdim_field_to_vp(field: fa.CellKField[wpfloat]) -> fa.CellKField[vpfloat]:
    field_vp = astype(field, vpfloat)
    return field_vp


@gtx.field_operator
def _init_cell_kdim_field_with_zero_vp() -> fa.CellKField[vpfloat]:
    return broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.field_operator
def _correct_contravariant_vertical_velocity(
    z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    return z_w_con_c - w_concorr_c


@gtx.field_operator
def _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
    ddqz_z_half: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat],
    cfl_w_limit: vpfloat,
    dtime: wpfloat,
) -> tuple[fa.CellKField[bool], fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    z_w_con_c_wp, ddqz_z_half_wp = astype((z_w_con_c, ddqz_z_half), wpfloat)

    cfl_clipping = where(
        abs(z_w_con_c) > cfl_w_limit * ddqz_z_half,
        broadcast(True, (dims.CellDim, dims.KDim)),
        False,
    )
    vcfl = where(cfl_clipping, z_w_con_c_wp * dtime / ddqz_z_half_wp, wpfloat("0.0"))
    vcfl_vp = astype(vcfl, vpfloat)
    z_w_con_c_wp = where(
        cfl_clipping & (vcfl_vp < -vpfloat("0.85")),
        astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        z_w_con_c_wp,
    )
    z_w_con_c_wp = where(
        cfl_clipping & (vcfl_vp > vpfloat("0.85")),
        astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        z_w_con_c_wp,
    )
    return cfl_clipping, vcfl_vp, astype(z_w_con_c_wp, vpfloat)


@gtx.field_operator
def _fused_velocity_advection_stencil_8_to_14(
    z_kin_hor_e: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    cfl_clipping: fa.CellKField[bool],
    pre_levelmask: fa.CellKField[bool],
    vcfl: fa.CellKField[vpfloat],
    z_w_concorr_mc: fa.CellKField[vpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    z_ekinh: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32],
    istep: gtx.int32,
    cfl_w_limit: vpfloat,
    dtime: wpfloat,
    nlevp1: gtx.int32,
    nlev: gtx.int32,
    nflatlev: gtx.int32,
    nrdmax: gtx.int32,
) -> tuple[
    fa.CellKField[vpfloat],
    fa.CellKField[bool],
    fa.CellKField[bool],
    fa.CellKField[vpfloat],
    fa.CellKField[vpfloat],
]:
    z_ekinh = where(
        k < nlev,
        _interpolate_to_cell_center(z_kin_hor_e, e_bln_c_s),
        z_ekinh,
    )

    z_w_concorr_mc = (
        where(
            nflatlev < k < nlev,
            _interpolate_to_cell_center(z_w_concorr_me, e_bln_c_s),
            z_w_concorr_mc,
        )
        if istep == 1
        else z_w_concorr_mc
    )

    w_concorr_c = (
        where(
            nflatlev + 1 < k < nlev,
            _interpolate_cell_field_to_half_levels_vp(
                interpolant=z_w_concorr_mc, wgtfac_c=wgtfac_c
            ),
            w_concorr_c,
        )
        if istep == 1
        else w_concorr_c
    )

    z_w_con_c = where(
        k < nlevp1,
        _copy_cell_kdim_field_to_vp(w),
        _init_cell_kdim_field_with_zero_vp(),
    )

    z_w_con_c = where(
        nflatlev + 1 < k < nlev,
        _correct_contravariant_vertical_velocity(z_w_con_c, w_concorr_c),
        z_w_con_c,
    )
    cfl_clipping, vcfl, z_w_con_c = where(
        maximum(3, nrdmax - 2) < k < nlev - 3,
        _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
            ddqz_z_half, z_w_con_c, cfl_w_limit, dtime
        ),
        (cfl_clipping, vcfl, z_w_con_c),
    )

    return z_ekinh, cfl_clipping, pre_levelmask, vcfl, z_w_con_c


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def fused_velocity_advection_stencil_8_to_14(
    z_kin_hor_e: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    z_w_concorr_me: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    cfl_clipping: fa.CellKField[bool],
    pre_levelmask: fa.CellKField[bool],
    vcfl: fa.CellKField[vpfloat],
    z_w_concorr_mc: fa.CellKField[vpfloat],
    w_concorr_c: fa.CellKField[vpfloat],
    z_ekinh: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32],
    istep: gtx.int32,
    cfl_w_limit: vpfloat,      # icon4py: wpfloat, one type in its double precision build
    dtime: wpfloat,
    nlevp1: gtx.int32,
    nlev: gtx.int32,
    nflatlev: gtx.int32,
    nrdmax: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    # icon4py's program has no ``domain=``; the half-level interpolation reads
    # the level above, so the levels start below the first (as its callers do)
    _fused_velocity_advection_stencil_8_to_14(
        z_kin_hor_e,
        e_bln_c_s,
        z_w_concorr_me,
        wgtfac_c,
        w,
        ddqz_z_half,
        cfl_clipping,
        pre_levelmask,
        vcfl,
        z_w_concorr_mc,
        w_concorr_c,
        z_ekinh,
        k,
        istep,
        cfl_w_limit,
        dtime,
        nlevp1,
        nlev,
        nflatlev,
        nrdmax,
        out=(z_ekinh, cfl_clipping, pre_levelmask, vcfl, z_w_con_c),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)},
    )


@pytest.mark.parametrize(("istep", "nrdmax"), [(1, 4), (2, 7), (1, 8)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_velocity_advection_stencil_8_to_14(backend, istep, nrdmax):
    hs, he, vs, nflatlev = 1, NC, 1, 3
    a = dict(z_kin_hor_e=f32(NE, NH), e_bln_c_s=f64(NC * 3), z_w_concorr_me=f32(NE, NH),
             wgtfac_c=f32(NC, NH), w=RNG.standard_normal((NC, NH)),
             ddqz_z_half=RNG.uniform(0.5, 1.5, (NC, NH)).astype(np.float32),
             z_w_concorr_mc=f32(NC, NH), w_concorr_c=f32(NC, NH) * 0.1,
             k=np.arange(NH, dtype=np.int32))
    base = dict(z_ekinh=f32(NC, NH), cfl_clipping=RNG.random((NC, NH)) < 0.5,
                pre_levelmask=RNG.random((NC, NH)) < 0.5, vcfl=f32(NC, NH),
                z_w_con_c=f32(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    fused_velocity_advection_stencil_8_to_14(
        **a, **got, istep=istep, cfl_w_limit=0.6, dtime=1.5, nlevp1=NH, nlev=NLEV,
        nflatlev=nflatlev, nrdmax=nrdmax, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=NH, offset_provider=TABLES, backend=backend)

    c2e, bln = TABLES["C2E"], a["e_bln_c_s"].reshape(NC, 3)
    present = (c2e >= 0)[:, :, None]

    def to_cells(x):
        terms = np.where(present, bln[:, :, None] * x.astype(np.float64)[c2e], 0.0)
        return terms.sum(axis=1).astype(np.float32)

    kk = np.arange(NH)[None, :]
    ekinh = np.where(kk < NLEV, to_cells(a["z_kin_hor_e"]), base["z_ekinh"])
    mc, concorr = a["z_w_concorr_mc"], a["w_concorr_c"]
    if istep == 1:
        mc = np.where((nflatlev < kk) & (kk < NLEV), to_cells(a["z_w_concorr_me"]), mc)
        below = np.concatenate([np.full((NC, 1), np.nan, np.float32), mc[:, :-1]], axis=1)
        wgt = a["wgtfac_c"]
        concorr = np.where((nflatlev + 1 < kk) & (kk < NLEV),
                           wgt * mc + (np.float32(1.0) - wgt) * below, concorr)
    w_con = a["w"].astype(np.float32)
    w_con = np.where((nflatlev + 1 < kk) & (kk < NLEV), w_con - concorr, w_con)
    ddqz = a["ddqz_z_half"]
    clip = np.abs(w_con) > np.float32(0.6) * ddqz
    vcfl = np.where(clip, w_con.astype(np.float64) * 1.5 / ddqz.astype(np.float64),
                    0.0).astype(np.float32)
    clipped = w_con.astype(np.float64)
    clipped = np.where(clip & (vcfl < -0.85), (-np.float32(0.85) * ddqz).astype(np.float64)
                       / 1.5, clipped)
    clipped = np.where(clip & (vcfl > 0.85), (np.float32(0.85) * ddqz).astype(np.float64)
                       / 1.5, clipped)
    region = (max(3, nrdmax - 2) < kk) & (kk < NLEV - 3)
    want = dict(
        z_ekinh=ekinh, cfl_clipping=np.where(region, clip, base["cfl_clipping"]),
        pre_levelmask=base["pre_levelmask"], vcfl=np.where(region, vcfl, base["vcfl"]),
        z_w_con_c=np.where(region, clipped.astype(np.float32), w_con))
    check(got, {n: inside(v, base[n], hs, he, vs, NH) for n, v in want.items()},
          rtol=2e-6, atol=2e-6)
    if nrdmax < 8:
        assert region.any() and (clip & region).any()
    else:
        assert not region.any()


# ================================================================== cubic quadrature
#
# The Gauss quadrature over each flux area's four corners: weights times the
# Jacobian's determinant at four points, and the moments up to third order.


@gtx.field_operator
def _prepare_numerical_quadrature_list_for_cubic_reconstruction(
    famask_int: fa.EdgeKField[gtx.int32],
    p_coords_dreg_v_1_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_2_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_3_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_4_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_1_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_2_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_3_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_4_y: fa.EdgeKField[ta.vpfloat],
    p_dreg_area_in: fa.EdgeKField[ta.vpfloat],
    shape_func_1_1: ta.wpfloat,
    shape_func_2_1: ta.wpfloat,
    shape_func_3_1: ta.wpfloat,
    shape_func_4_1: ta.wpfloat,
    shape_func_1_2: ta.wpfloat,
    shape_func_2_2: ta.wpfloat,
    shape_func_3_2: ta.wpfloat,
    shape_func_4_2: ta.wpfloat,
    shape_func_1_3: ta.wpfloat,
    shape_func_2_3: ta.wpfloat,
    shape_func_3_3: ta.wpfloat,
    shape_func_4_3: ta.wpfloat,
    shape_func_1_4: ta.wpfloat,
    shape_func_2_4: ta.wpfloat,
    shape_func_3_4: ta.wpfloat,
    shape_func_4_4: ta.wpfloat,
    zeta_1: ta.wpfloat,
    zeta_2: ta.wpfloat,
    zeta_3: ta.wpfloat,
    zeta_4: ta.wpfloat,
    eta_1: ta.wpfloat,
    eta_2: ta.wpfloat,
    eta_3: ta.wpfloat,
    eta_4: ta.wpfloat,
    wgt_zeta_1: ta.wpfloat,
    wgt_zeta_2: ta.wpfloat,
    wgt_eta_1: ta.wpfloat,
    wgt_eta_2: ta.wpfloat,
    dbl_eps: ta.wpfloat,
    eps: ta.wpfloat,
) -> tuple[
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    z_wgt_1 = 0.0625 * wgt_zeta_1 * wgt_eta_1
    z_wgt_2 = 0.0625 * wgt_zeta_1 * wgt_eta_2
    z_wgt_3 = 0.0625 * wgt_zeta_2 * wgt_eta_1
    z_wgt_4 = 0.0625 * wgt_zeta_2 * wgt_eta_2

    z_eta_1_1 = 1.0 - eta_1
    z_eta_2_1 = 1.0 - eta_2
    z_eta_3_1 = 1.0 - eta_3
    z_eta_4_1 = 1.0 - eta_4
    z_eta_1_2 = 1.0 + eta_1
    z_eta_2_2 = 1.0 + eta_2
    z_eta_3_2 = 1.0 + eta_3
    z_eta_4_2 = 1.0 + eta_4
    z_eta_1_3 = 1.0 - zeta_1
    z_eta_2_3 = 1.0 - zeta_2
    z_eta_3_3 = 1.0 - zeta_3
    z_eta_4_3 = 1.0 - zeta_4
    z_eta_1_4 = 1.0 + zeta_1
    z_eta_2_4 = 1.0 + zeta_2
    z_eta_3_4 = 1.0 + zeta_3
    z_eta_4_4 = 1.0 + zeta_4

    famask_bool = famask_int == 1
    p_coords_dreg_v_1_x = where(famask_bool, p_coords_dreg_v_1_x, 0.0)
    p_coords_dreg_v_2_x = where(famask_bool, p_coords_dreg_v_2_x, 0.0)
    p_coords_dreg_v_3_x = where(famask_bool, p_coords_dreg_v_3_x, 0.0)
    p_coords_dreg_v_4_x = where(famask_bool, p_coords_dreg_v_4_x, 0.0)
    p_coords_dreg_v_1_y = where(famask_bool, p_coords_dreg_v_1_y, 0.0)
    p_coords_dreg_v_2_y = where(famask_bool, p_coords_dreg_v_2_y, 0.0)
    p_coords_dreg_v_3_y = where(famask_bool, p_coords_dreg_v_3_y, 0.0)
    p_coords_dreg_v_4_y = where(famask_bool, p_coords_dreg_v_4_y, 0.0)
    p_coords_dreg_v_1_x_wp = astype(p_coords_dreg_v_1_x, wpfloat)
    p_coords_dreg_v_2_x_wp = astype(p_coords_dreg_v_2_x, wpfloat)
    p_coords_dreg_v_3_x_wp = astype(p_coords_dreg_v_3_x, wpfloat)
    p_coords_dreg_v_4_x_wp = astype(p_coords_dreg_v_4_x, wpfloat)
    p_coords_dreg_v_1_y_wp = astype(p_coords_dreg_v_1_y, wpfloat)
    p_coords_dreg_v_2_y_wp = astype(p_coords_dreg_v_2_y, wpfloat)
    p_coords_dreg_v_3_y_wp = astype(p_coords_dreg_v_3_y, wpfloat)
    p_coords_dreg_v_4_y_wp = astype(p_coords_dreg_v_4_y, wpfloat)

    wgt_t_detjac_1 = where(
        famask_bool,
        dbl_eps
        + z_wgt_1
        * (
            (
                z_eta_1_1 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_1_x_wp)
                + z_eta_1_2 * (p_coords_dreg_v_3_x_wp - p_coords_dreg_v_4_x_wp)
            )
            * (
                z_eta_1_3 * (p_coords_dreg_v_4_y_wp - p_coords_dreg_v_1_y_wp)
                - z_eta_1_4 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_3_y_wp)
            )
            - (
                z_eta_1_1 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_1_y_wp)
                + z_eta_1_2 * (p_coords_dreg_v_3_y_wp - p_coords_dreg_v_4_y_wp)
            )
            * (
                z_eta_1_3 * (p_coords_dreg_v_4_x_wp - p_coords_dreg_v_1_x_wp)
                - z_eta_1_4 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_3_x_wp)
            )
        ),
        0.0,
    )
    wgt_t_detjac_2 = where(
        famask_bool,
        dbl_eps
        + z_wgt_2
        * (
            (
                z_eta_2_1 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_1_x_wp)
                + z_eta_2_2 * (p_coords_dreg_v_3_x_wp - p_coords_dreg_v_4_x_wp)
            )
            * (
                z_eta_2_3 * (p_coords_dreg_v_4_y_wp - p_coords_dreg_v_1_y_wp)
                - z_eta_2_4 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_3_y_wp)
            )
            - (
                z_eta_2_1 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_1_y_wp)
                + z_eta_2_2 * (p_coords_dreg_v_3_y_wp - p_coords_dreg_v_4_y_wp)
            )
            * (
                z_eta_2_3 * (p_coords_dreg_v_4_x_wp - p_coords_dreg_v_1_x_wp)
                - z_eta_2_4 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_3_x_wp)
            )
        ),
        0.0,
    )
    wgt_t_detjac_3 = where(
        famask_bool,
        dbl_eps
        + z_wgt_3
        * (
            (
                z_eta_3_1 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_1_x_wp)
                + z_eta_3_2 * (p_coords_dreg_v_3_x_wp - p_coords_dreg_v_4_x_wp)
            )
            * (
                z_eta_3_3 * (p_coords_dreg_v_4_y_wp - p_coords_dreg_v_1_y_wp)
                - z_eta_3_4 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_3_y_wp)
            )
            - (
                z_eta_3_1 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_1_y_wp)
                + z_eta_3_2 * (p_coords_dreg_v_3_y_wp - p_coords_dreg_v_4_y_wp)
            )
            * (
                z_eta_3_3 * (p_coords_dreg_v_4_x_wp - p_coords_dreg_v_1_x_wp)
                - z_eta_3_4 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_3_x_wp)
            )
        ),
        0.0,
    )
    wgt_t_detjac_4 = where(
        famask_bool,
        dbl_eps
        + z_wgt_4
        * (
            (
                z_eta_4_1 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_1_x_wp)
                + z_eta_4_2 * (p_coords_dreg_v_3_x_wp - p_coords_dreg_v_4_x_wp)
            )
            * (
                z_eta_4_3 * (p_coords_dreg_v_4_y_wp - p_coords_dreg_v_1_y_wp)
                - z_eta_4_4 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_3_y_wp)
            )
            - (
                z_eta_4_1 * (p_coords_dreg_v_2_y_wp - p_coords_dreg_v_1_y_wp)
                + z_eta_4_2 * (p_coords_dreg_v_3_y_wp - p_coords_dreg_v_4_y_wp)
            )
            * (
                z_eta_4_3 * (p_coords_dreg_v_4_x_wp - p_coords_dreg_v_1_x_wp)
                - z_eta_4_4 * (p_coords_dreg_v_2_x_wp - p_coords_dreg_v_3_x_wp)
            )
        ),
        0.0,
    )

    z_gauss_pts_1_x = (
        shape_func_1_1 * p_coords_dreg_v_1_x_wp
        + shape_func_2_1 * p_coords_dreg_v_2_x_wp
        + shape_func_3_1 * p_coords_dreg_v_3_x_wp
        + shape_func_4_1 * p_coords_dreg_v_4_x_wp
    )
    z_gauss_pts_1_y = (
        shape_func_1_1 * p_coords_dreg_v_1_y_wp
        + shape_func_2_1 * p_coords_dreg_v_2_y_wp
        + shape_func_3_1 * p_coords_dreg_v_3_y_wp
        + shape_func_4_1 * p_coords_dreg_v_4_y_wp
    )
    z_gauss_pts_2_x = (
        shape_func_1_2 * p_coords_dreg_v_1_x_wp
        + shape_func_2_2 * p_coords_dreg_v_2_x_wp
        + shape_func_3_2 * p_coords_dreg_v_3_x_wp
        + shape_func_4_2 * p_coords_dreg_v_4_x_wp
    )
    z_gauss_pts_2_y = (
        shape_func_1_2 * p_coords_dreg_v_1_y_wp
        + shape_func_2_2 * p_coords_dreg_v_2_y_wp
        + shape_func_3_2 * p_coords_dreg_v_3_y_wp
        + shape_func_4_2 * p_coords_dreg_v_4_y_wp
    )
    z_gauss_pts_3_x = (
        shape_func_1_3 * p_coords_dreg_v_1_x_wp
        + shape_func_2_3 * p_coords_dreg_v_2_x_wp
        + shape_func_3_3 * p_coords_dreg_v_3_x_wp
        + shape_func_4_3 * p_coords_dreg_v_4_x_wp
    )
    z_gauss_pts_3_y = (
        shape_func_1_3 * p_coords_dreg_v_1_y_wp
        + shape_func_2_3 * p_coords_dreg_v_2_y_wp
        + shape_func_3_3 * p_coords_dreg_v_3_y_wp
        + shape_func_4_3 * p_coords_dreg_v_4_y_wp
    )
    z_gauss_pts_4_x = (
        shape_func_1_4 * p_coords_dreg_v_1_x_wp
        + shape_func_2_4 * p_coords_dreg_v_2_x_wp
        + shape_func_3_4 * p_coords_dreg_v_3_x_wp
        + shape_func_4_4 * p_coords_dreg_v_4_x_wp
    )
    z_gauss_pts_4_y = (
        shape_func_1_4 * p_coords_dreg_v_1_y_wp
        + shape_func_2_4 * p_coords_dreg_v_2_y_wp
        + shape_func_3_4 * p_coords_dreg_v_3_y_wp
        + shape_func_4_4 * p_coords_dreg_v_4_y_wp
    )

    p_quad_vector_sum_1 = wgt_t_detjac_1 + wgt_t_detjac_2 + wgt_t_detjac_3 + wgt_t_detjac_4
    p_quad_vector_sum_2 = (
        wgt_t_detjac_1 * z_gauss_pts_1_x
        + wgt_t_detjac_2 * z_gauss_pts_2_x
        + wgt_t_detjac_3 * z_gauss_pts_3_x
        + wgt_t_detjac_4 * z_gauss_pts_4_x
    )
    p_quad_vector_sum_3 = (
        wgt_t_detjac_1 * z_gauss_pts_1_y
        + wgt_t_detjac_2 * z_gauss_pts_2_y
        + wgt_t_detjac_3 * z_gauss_pts_3_y
        + wgt_t_detjac_4 * z_gauss_pts_4_y
    )
    p_quad_vector_sum_4 = (
        wgt_t_detjac_1 * z_gauss_pts_1_x * z_gauss_pts_1_x
        + wgt_t_detjac_2 * z_gauss_pts_2_x * z_gauss_pts_2_x
        + wgt_t_detjac_3 * z_gauss_pts_3_x * z_gauss_pts_3_x
        + wgt_t_detjac_4 * z_gauss_pts_4_x * z_gauss_pts_4_x
    )
    p_quad_vector_sum_5 = (
        wgt_t_detjac_1 * z_gauss_pts_1_y * z_gauss_pts_1_y
        + wgt_t_detjac_2 * z_gauss_pts_2_y * z_gauss_pts_2_y
        + wgt_t_detjac_3 * z_gauss_pts_3_y * z_gauss_pts_3_y
        + wgt_t_detjac_4 * z_gauss_pts_4_y * z_gauss_pts_4_y
    )
    p_quad_vector_sum_6 = (
        wgt_t_detjac_1 * z_gauss_pts_1_x * z_gauss_pts_1_y
        + wgt_t_detjac_2 * z_gauss_pts_2_x * z_gauss_pts_2_y
        + wgt_t_detjac_3 * z_gauss_pts_3_x * z_gauss_pts_3_y
        + wgt_t_detjac_4 * z_gauss_pts_4_x * z_gauss_pts_4_y
    )
    p_quad_vector_sum_7 = (
        wgt_t_detjac_1 * z_gauss_pts_1_x * z_gauss_pts_1_x * z_gauss_pts_1_x
        + wgt_t_detjac_2 * z_gauss_pts_2_x * z_gauss_pts_2_x * z_gauss_pts_2_x
        + wgt_t_detjac_3 * z_gauss_pts_3_x * z_gauss_pts_3_x * z_gauss_pts_3_x
        + wgt_t_detjac_4 * z_gauss_pts_4_x * z_gauss_pts_4_x * z_gauss_pts_4_x
    )
    p_quad_vector_sum_8 = (
        wgt_t_detjac_1 * z_gauss_pts_1_y * z_gauss_pts_1_y * z_gauss_pts_1_y
        + wgt_t_detjac_2 * z_gauss_pts_2_y * z_gauss_pts_2_y * z_gauss_pts_2_y
        + wgt_t_detjac_3 * z_gauss_pts_3_y * z_gauss_pts_3_y * z_gauss_pts_3_y
        + wgt_t_detjac_4 * z_gauss_pts_4_y * z_gauss_pts_4_y * z_gauss_pts_4_y
    )
    p_quad_vector_sum_9 = (
        wgt_t_detjac_1 * z_gauss_pts_1_x * z_gauss_pts_1_x * z_gauss_pts_1_y
        + wgt_t_detjac_2 * z_gauss_pts_2_x * z_gauss_pts_2_x * z_gauss_pts_2_y
        + wgt_t_detjac_3 * z_gauss_pts_3_x * z_gauss_pts_3_x * z_gauss_pts_3_y
        + wgt_t_detjac_4 * z_gauss_pts_4_x * z_gauss_pts_4_x * z_gauss_pts_4_y
    )
    p_quad_vector_sum_10 = (
        wgt_t_detjac_1 * z_gauss_pts_1_x * z_gauss_pts_1_y * z_gauss_pts_1_y
        + wgt_t_detjac_2 * z_gauss_pts_2_x * z_gauss_pts_2_y * z_gauss_pts_2_y
        + wgt_t_detjac_3 * z_gauss_pts_3_x * z_gauss_pts_3_y * z_gauss_pts_3_y
        + wgt_t_detjac_4 * z_gauss_pts_4_x * z_gauss_pts_4_y * z_gauss_pts_4_y
    )

    p_dreg_area = p_dreg_area_in + astype(p_quad_vector_sum_1, vpfloat)

    return (
        astype(p_quad_vector_sum_1, vpfloat),
        astype(p_quad_vector_sum_2, vpfloat),
        astype(p_quad_vector_sum_3, vpfloat),
        astype(p_quad_vector_sum_4, vpfloat),
        astype(p_quad_vector_sum_5, vpfloat),
        astype(p_quad_vector_sum_6, vpfloat),
        astype(p_quad_vector_sum_7, vpfloat),
        astype(p_quad_vector_sum_8, vpfloat),
        astype(p_quad_vector_sum_9, vpfloat),
        astype(p_quad_vector_sum_10, vpfloat),
        p_dreg_area,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def prepare_numerical_quadrature_list_for_cubic_reconstruction(
    famask_int: fa.EdgeKField[gtx.int32],
    p_coords_dreg_v_1_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_2_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_3_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_4_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_1_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_2_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_3_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_4_y: fa.EdgeKField[ta.vpfloat],
    p_dreg_area_in: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_1: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_2: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_3: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_4: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_5: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_6: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_7: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_8: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_9: fa.EdgeKField[ta.vpfloat],
    p_quad_vector_sum_10: fa.EdgeKField[ta.vpfloat],
    p_dreg_area: fa.EdgeKField[ta.vpfloat],
    shape_func_1_1: ta.wpfloat,
    shape_func_2_1: ta.wpfloat,
    shape_func_3_1: ta.wpfloat,
    shape_func_4_1: ta.wpfloat,
    shape_func_1_2: ta.wpfloat,
    shape_func_2_2: ta.wpfloat,
    shape_func_3_2: ta.wpfloat,
    shape_func_4_2: ta.wpfloat,
    shape_func_1_3: ta.wpfloat,
    shape_func_2_3: ta.wpfloat,
    shape_func_3_3: ta.wpfloat,
    shape_func_4_3: ta.wpfloat,
    shape_func_1_4: ta.wpfloat,
    shape_func_2_4: ta.wpfloat,
    shape_func_3_4: ta.wpfloat,
    shape_func_4_4: ta.wpfloat,
    zeta_1: ta.wpfloat,
    zeta_2: ta.wpfloat,
    zeta_3: ta.wpfloat,
    zeta_4: ta.wpfloat,
    eta_1: ta.wpfloat,
    eta_2: ta.wpfloat,
    eta_3: ta.wpfloat,
    eta_4: ta.wpfloat,
    wgt_zeta_1: ta.wpfloat,
    wgt_zeta_2: ta.wpfloat,
    wgt_eta_1: ta.wpfloat,
    wgt_eta_2: ta.wpfloat,
    dbl_eps: ta.wpfloat,
    eps: ta.wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _prepare_numerical_quadrature_list_for_cubic_reconstruction(
        famask_int,
        p_coords_dreg_v_1_x,
        p_coords_dreg_v_2_x,
        p_coords_dreg_v_3_x,
        p_coords_dreg_v_4_x,
        p_coords_dreg_v_1_y,
        p_coords_dreg_v_2_y,
        p_coords_dreg_v_3_y,
        p_coords_dreg_v_4_y,
        p_dreg_area_in,
        shape_func_1_1,
        shape_func_2_1,
        shape_func_3_1,
        shape_func_4_1,
        shape_func_1_2,
        shape_func_2_2,
        shape_func_3_2,
        shape_func_4_2,
        shape_func_1_3,
        shape_func_2_3,
        shape_func_3_3,
        shape_func_4_3,
        shape_func_1_4,
        shape_func_2_4,
        shape_func_3_4,
        shape_func_4_4,
        zeta_1,
        zeta_2,
        zeta_3,
        zeta_4,
        eta_1,
        eta_2,
        eta_3,
        eta_4,
        wgt_zeta_1,
        wgt_zeta_2,
        wgt_eta_1,
        wgt_eta_2,
        dbl_eps,
        eps,
        out=(
            p_quad_vector_sum_1,
            p_quad_vector_sum_2,
            p_quad_vector_sum_3,
            p_quad_vector_sum_4,
            p_quad_vector_sum_5,
            p_quad_vector_sum_6,
            p_quad_vector_sum_7,
            p_quad_vector_sum_8,
            p_quad_vector_sum_9,
            p_quad_vector_sum_10,
            p_dreg_area,
        ),
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


_QUAD_NAMES = [f"shape_func_{i}_{j}" for j in range(1, 5) for i in range(1, 5)] + [
    "zeta_1", "zeta_2", "zeta_3", "zeta_4", "eta_1", "eta_2", "eta_3", "eta_4",
    "wgt_zeta_1", "wgt_zeta_2", "wgt_eta_1", "wgt_eta_2", "dbl_eps", "eps"]
_QUAD_OUTS = [f"p_quad_vector_sum_{i}" for i in range(1, 11)] + ["p_dreg_area"]


def _quadrature_inputs():
    fields = {f"p_coords_dreg_v_{i}_{c}": (RNG.random((NE, NLEV)) - 0.5).astype(np.float32)
              for c in "xy" for i in range(1, 5)}
    fields["famask_int"] = RNG.integers(0, 3, (NE, NLEV)).astype(np.int32)   # 1 is on
    fields["p_dreg_area_in"] = f32(NE, NLEV)
    scalars = dict(zip(_QUAD_NAMES, RNG.random(len(_QUAD_NAMES)) - 0.5, strict=True))
    scalars["dbl_eps"], scalars["eps"] = 1e-12, 1e-8
    return fields, scalars


def _quadrature_numpy(f, s):
    on = f["famask_int"] == 1
    x = [np.where(on, f[f"p_coords_dreg_v_{i}_x"], np.float32(0)).astype(np.float64)
         for i in range(1, 5)]
    y = [np.where(on, f[f"p_coords_dreg_v_{i}_y"], np.float32(0)).astype(np.float64)
         for i in range(1, 5)]
    wz, we = (s["wgt_zeta_1"], s["wgt_zeta_2"]), (s["wgt_eta_1"], s["wgt_eta_2"])
    wgts = [0.0625 * wz[0] * we[0], 0.0625 * wz[0] * we[1], 0.0625 * wz[1] * we[0],
            0.0625 * wz[1] * we[1]]
    det, gx, gy = [], [], []
    for p in range(4):
        e1, e2 = 1.0 - s[f"eta_{p + 1}"], 1.0 + s[f"eta_{p + 1}"]
        e3, e4 = 1.0 - s[f"zeta_{p + 1}"], 1.0 + s[f"zeta_{p + 1}"]
        jac = ((e1 * (x[1] - x[0]) + e2 * (x[2] - x[3])) * (e3 * (y[3] - y[0]) - e4 * (y[1] - y[2]))
               - (e1 * (y[1] - y[0]) + e2 * (y[2] - y[3]))
               * (e3 * (x[3] - x[0]) - e4 * (x[1] - x[2])))
        det.append(np.where(on, s["dbl_eps"] + wgts[p] * jac, 0.0))
        gx.append(sum(s[f"shape_func_{i + 1}_{p + 1}"] * x[i] for i in range(4)))
        gy.append(sum(s[f"shape_func_{i + 1}_{p + 1}"] * y[i] for i in range(4)))
    moments = [lambda px, py: 1.0, lambda px, py: px, lambda px, py: py,
               lambda px, py: px * px, lambda px, py: py * py, lambda px, py: px * py,
               lambda px, py: px * px * px, lambda px, py: py * py * py,
               lambda px, py: px * px * py, lambda px, py: px * py * py]
    out = {f"p_quad_vector_sum_{m + 1}": sum(det[p] * fn(gx[p], gy[p]) for p in range(4))
           .astype(np.float32) for m, fn in enumerate(moments)}
    out["p_dreg_area"] = f["p_dreg_area_in"] + out["p_quad_vector_sum_1"]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_numerical_quadrature_list_for_cubic_reconstruction(backend):
    fields, scalars = _quadrature_inputs()
    hs, he, vs, ve = 2, NE - 1, 1, NLEV - 2
    base = {n: f32(NE, NLEV) for n in _QUAD_OUTS}
    got = {n: v.copy() for n, v in base.items()}
    prepare_numerical_quadrature_list_for_cubic_reconstruction(
        **fields, **got, **scalars, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider={}, backend=backend)
    want = _quadrature_numpy(fields, scalars)
    check(got, {n: inside(want[n], base[n], hs, he, vs, ve) for n in _QUAD_OUTS},
          rtol=2e-5, atol=2e-6)
    assert (want["p_quad_vector_sum_1"] == 0).any() and (want["p_quad_vector_sum_1"] != 0).any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_numerical_quadrature_called_directly(backend):
    fields, scalars = _quadrature_inputs()
    out = tuple(np.zeros((NE, NLEV), np.float32) for _ in _QUAD_OUTS)
    _prepare_numerical_quadrature_list_for_cubic_reconstruction(
        **fields, **scalars, out=out, offset_provider={}, backend=backend)
    want = _quadrature_numpy(fields, scalars)
    check(dict(zip(_QUAD_OUTS, out, strict=True)), want, rtol=2e-5, atol=2e-6)


# ================================================================== saturation adjustment
#
# muphys' alternative saturation adjustment: six Newton-Raphson steps for the
# temperature at which the cloud water is in balance, each statement writing
# the temporaries the next one reads.


class _ThermodynamicConsts:
    cvd = 717.60
    cvv = 1407.95
    clw = 4192.6641119999995
    rv = 461.51
    tmelt = 273.15


class _GraupelConsts:
    ci = 2108.0
    lvc = 3135383.2031928


t_d, g_ct = _ThermodynamicConsts, _GraupelConsts


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
def _satadj_init(
    te: fa.CellKField[ta.wpfloat],
    qve: fa.CellKField[ta.wpfloat],
    qce: fa.CellKField[ta.wpfloat],
    qre: fa.CellKField[ta.wpfloat],
    qti: fa.CellKField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    qt = qve + qce + qre + qti
    cvc = t_d.cvd * (1.0 - qt) + t_d.clw * qre + g_ct.ci * qti
    cv = cvc + t_d.cvv * qve + t_d.clw * qce
    ue = cv * te - qce * g_ct.lvc
    Tx_hold = ue / (cv + qce * (t_d.cvv - t_d.clw))
    Tx = te
    return cvc, ue, Tx_hold, Tx


@gtx.field_operator
def _output_calculation(
    qve: fa.CellKField[ta.wpfloat],
    qce: fa.CellKField[ta.wpfloat],
    qx_hold: fa.CellKField[ta.wpfloat],
    qx: fa.CellKField[ta.wpfloat],
    Tx_hold: fa.CellKField[ta.wpfloat],
    Tx: fa.CellKField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]
]:
    te = where((qve + qce <= qx_hold), Tx_hold, Tx)
    qce = where((qve + qce <= qx_hold), 0.0, maximum(qve + qce - qx, 0.0))
    qve = where((qve + qce <= qx_hold), qve + qce, qx)
    return te, qve, qce


@gtx.field_operator
def _newton_raphson(
    qx: fa.CellKField[ta.wpfloat],
    dqx: fa.CellKField[ta.wpfloat],
    Tx: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    qve: fa.CellKField[ta.wpfloat],
    qce: fa.CellKField[ta.wpfloat],
    cvc: fa.CellKField[ta.wpfloat],
    ue: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    qcx = qve + qce - qx
    cv = cvc + t_d.cvv * qx + t_d.clw * qcx
    ux = cv * Tx - qcx * g_ct.lvc
    dux = cv + dqx * (g_ct.lvc + (t_d.cvv - t_d.clw) * Tx)
    Tx = Tx - (ux - ue) / dux
    return Tx


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def saturation_adjustment2(
    te: fa.CellKField[ta.wpfloat],
    qve: fa.CellKField[ta.wpfloat],
    qce: fa.CellKField[ta.wpfloat],
    qre: fa.CellKField[ta.wpfloat],
    qti: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    cvc: fa.CellKField[ta.wpfloat],
    ue: fa.CellKField[ta.wpfloat],
    Tx_hold: fa.CellKField[ta.wpfloat],
    Tx: fa.CellKField[ta.wpfloat],
    qx_hold: fa.CellKField[ta.wpfloat],
    qx: fa.CellKField[ta.wpfloat],
    dqx: fa.CellKField[ta.wpfloat],
    qve_out: fa.CellKField[ta.wpfloat],
    qce_out: fa.CellKField[ta.wpfloat],
    te_out: fa.CellKField[ta.wpfloat],
):
    _satadj_init(te, qve, qce, qre, qti, out=(cvc, ue, Tx_hold, Tx))
    _qsat_rho(Tx_hold, rho, out=qx_hold)

    # Newton-Raphson iteration
    _qsat_rho(Tx, rho, out=qx)
    _dqsatdT_rho(qx, Tx, out=dqx)
    _newton_raphson(qx, dqx, Tx, rho, qve, qce, cvc, ue, out=Tx)
    _qsat_rho(Tx, rho, out=qx)
    _dqsatdT_rho(qx, Tx, out=dqx)
    _newton_raphson(qx, dqx, Tx, rho, qve, qce, cvc, ue, out=Tx)
    _qsat_rho(Tx, rho, out=qx)
    _dqsatdT_rho(qx, Tx, out=dqx)
    _newton_raphson(qx, dqx, Tx, rho, qve, qce, cvc, ue, out=Tx)
    _qsat_rho(Tx, rho, out=qx)
    _dqsatdT_rho(qx, Tx, out=dqx)
    _newton_raphson(qx, dqx, Tx, rho, qve, qce, cvc, ue, out=Tx)
    _qsat_rho(Tx, rho, out=qx)
    _dqsatdT_rho(qx, Tx, out=dqx)
    _newton_raphson(qx, dqx, Tx, rho, qve, qce, cvc, ue, out=Tx)
    _qsat_rho(Tx, rho, out=qx)
    _dqsatdT_rho(qx, Tx, out=dqx)
    _newton_raphson(qx, dqx, Tx, rho, qve, qce, cvc, ue, out=Tx)

    # final humidity calculation
    _qsat_rho(Tx, rho, out=qx)

    # final calculation of output variables
    _output_calculation(qve, qce, qx_hold, qx, Tx_hold, Tx, out=(te_out, qve_out, qce_out))


def _np_qsat_rho(t, rho):
    return 610.78 * np.exp(17.269 * (t - 273.15) / (t - 35.86)) / (rho * 461.51 * t)


def _np_dqsatdT_rho(qs, t):
    return qs * (17.269 * (273.15 - 35.86) / ((t - 35.86) * (t - 35.86)) - 1.0 / t)


@pytest.mark.parametrize("backend", BACKENDS)
def test_saturation_adjustment2(backend):
    c, g = _ThermodynamicConsts, _GraupelConsts
    shape = (NC, NLEV)
    a = dict(te=RNG.uniform(250.0, 300.0, shape), qve=RNG.uniform(1e-3, 2e-2, shape),
             qce=RNG.uniform(0.0, 2e-3, shape), qre=RNG.uniform(0.0, 1e-3, shape),
             qti=RNG.uniform(0.0, 2e-3, shape), rho=RNG.uniform(0.5, 1.2, shape))
    temps = ("cvc", "ue", "Tx_hold", "Tx", "qx_hold", "qx", "dqx", "qve_out", "qce_out",
             "te_out")
    got = {n: f64(*shape) for n in temps}
    saturation_adjustment2(**a, **got, offset_provider={}, backend=backend)

    te, qve, qce, qre, qti, rho = (a[n] for n in ("te", "qve", "qce", "qre", "qti", "rho"))
    cvc = c.cvd * (1.0 - (qve + qce + qre + qti)) + c.clw * qre + g.ci * qti
    cv = cvc + c.cvv * qve + c.clw * qce
    ue = cv * te - qce * g.lvc
    tx_hold = ue / (cv + qce * (c.cvv - c.clw))
    qx_hold = _np_qsat_rho(tx_hold, rho)
    tx = te
    for _ in range(6):
        qx = _np_qsat_rho(tx, rho)
        dqx = _np_dqsatdT_rho(qx, tx)
        qcx = qve + qce - qx
        cvx = cvc + c.cvv * qx + c.clw * qcx
        ux = cvx * tx - qcx * g.lvc
        dux = cvx + dqx * (g.lvc + (c.cvv - c.clw) * tx)
        tx = tx - (ux - ue) / dux
    qx = _np_qsat_rho(tx, rho)
    mask = qve + qce <= qx_hold
    te_out = np.where(mask, tx_hold, tx)
    qce_out = np.where(mask, 0.0, np.maximum(qve + qce - qx, 0.0))
    # icon4py's third line reads the qce it has just reassigned
    qve_out = np.where(qve + qce_out <= qx_hold, qve + qce_out, qx)
    check(got, dict(cvc=cvc, ue=ue, Tx_hold=tx_hold, Tx=tx, qx_hold=qx_hold, qx=qx,
                    dqx=dqx, te_out=te_out, qce_out=qce_out, qve_out=qve_out), rtol=1e-10)
    assert mask.any() and (~mask).any()
