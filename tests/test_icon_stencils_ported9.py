"""A ninth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

First the horizontal tracer advection's higher order reconstructions: the
numerical quadrature over a departure region (eight ``vpfloat`` vertex
coordinates and thirty-eight ``wpfloat`` scalars, eleven ``vpfloat`` outputs,
composed of helper field operators taking scalars), the intermediate fluxes
from linear and cubic least squares coefficients choosing a cell through
``E2C`` by an ``int32`` edge field, the Miura third order flux, the quadratic
WENO candidate over the nine cells of ``C2E2C2E2C`` beside ``C2E2C``
(differences of a cell field gathered through a local dimension from the
same field unshifted), the PPM parabola in ``float`` called without
``domain=``, the copies shifted by one level up and down, a constant
broadcast and the flux averaged over two substeps.  Then metric fields and
nonhydro pieces: the coefficients of the second order ``dw/dz``, the normal
and tangential slopes of the half level heights (the latter through a
vertex field built from ``V2C`` inside an operator without a return
annotation), the virtual potential temperatures on half levels with the
pressure gradient (``astype`` of a tuple, ``KDim - 1`` shifts,
``wpfloat("1.0")``), the mass and temperature fluxes, the vertical diffusion
of ``vn`` and ``w``, an edge field interpolated to cell half levels, the
Laplacian over ``C2E2CO`` and a copy to ``vpfloat``.  Then the turbulence
diagnostics of the Smagorinsky model (tmx): the velocity gradient tensor at
edges as a tuple of three tuples of three fields (``w(E2C[0])(KDim - 0.5)``
on half-level cells, vertices through ``E2C2V``, ``vn_vert[E2C2VDim(3)]`` of
a computed sparse field), tensor helpers taking such nested tuples as
parameters (transpose, sum, trace, diagonal, dot product, squared norm), the
strain rate gathered to cell half levels on a tuple of a full- and a
half-level domain, the mixing length and the eddy viscosity with the Louis
stability function chosen by three ``bool`` scalars in nested ``if``.  Last,
the rest of those diagnostics: the winds at edge half levels with
extrapolated boundary rows (the tangential wind from that intermediate
through ``E2C2E``) and the thermodynamic cell diagnostics, each output on its
own domain of a tuple of domains with unrelated runtime vertical bounds.
Each group is one program, interpreted and compiled, compared with NumPy
written from the formulas.
"""

from __future__ import annotations

import types
from typing import TypeVar

import numpy as np
import pytest

from icon_numpy import check, inside, shifted
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
    float32,
    float64,
    maximum,
    minimum,
    neighbor_sum,
    power,
    sqrt,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
C2E2C2E2CDim = Dimension("C2E2C2E2C", DimensionKind.LOCAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
E2C2EDim = Dimension("E2C2E", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.C2E2CDim, dims.C2E2C2E2CDim = E2CDim, C2EDim, C2E2CDim, C2E2C2E2CDim
dims.C2E2CODim, dims.E2VDim, dims.V2CDim = C2E2CODim, E2VDim, V2CDim
dims.KHalfDim, dims.E2C2VDim, dims.E2C2EDim = KHalfDim, E2C2VDim, E2C2EDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
C2E2C2E2C = FieldOffset("C2E2C2E2C", source=CellDim, target=(CellDim, C2E2C2E2CDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
E2C2E = FieldOffset("E2C2E", source=EdgeDim, target=(EdgeDim, E2C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
dims.E2C, dims.C2E, dims.C2E2C, dims.C2E2C2E2C, dims.Koff = E2C, C2E, C2E2C, C2E2C2E2C, Koff
dims.C2E2CO, dims.E2V, dims.V2C = C2E2CO, E2V, V2C

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeKHalfField = Field[Dims[EdgeDim, KHalfDim], T]
fa.VertexKHalfField = Field[Dims[VertexDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = float64, float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat


class PhysicsConstants:
    von_karman = 0.4
    cpd = 1004.64
    rd = 287.04
    p0ref = 100000.0
    rd_o_cpd = rd / cpd

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 9, 6, 12
RNG = np.random.default_rng(9001)
_TABLE_RNG = np.random.default_rng(9002)
TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "C2E2C": _TABLE_RNG.integers(0, NC, (NC, 3)),
          "C2E2C2E2C": _TABLE_RNG.integers(0, NC, (NC, 9)),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None],
                                    _TABLE_RNG.integers(0, NC, (NC, 3))], axis=1),
          "E2V": _TABLE_RNG.integers(0, NV, (NE, 2)),
          "V2C": _TABLE_RNG.integers(0, NC, (NV, 6)),
          "E2C2V": _TABLE_RNG.integers(0, NV, (NE, 4)),
          "E2C2E": _TABLE_RNG.integers(0, NE, (NE, 4)),
          "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(9003).bit_generator.state








def f32(*shape):
    return RNG.random(shape).astype(np.float32)


# ================================================================== higher order tracer fluxes
#
# icon4py's horizontal advection: quadrature over the departure region, the
# fluxes from the least squares coefficients of the upwind cell, WENO.


@gtx.field_operator
def _quadrature_weight_times_jacobian(
    x_1: fa.EdgeKField[wpfloat], x_2: fa.EdgeKField[wpfloat],
    x_3: fa.EdgeKField[wpfloat], x_4: fa.EdgeKField[wpfloat],
    y_1: fa.EdgeKField[wpfloat], y_2: fa.EdgeKField[wpfloat],
    y_3: fa.EdgeKField[wpfloat], y_4: fa.EdgeKField[wpfloat],
    zeta: wpfloat, eta: wpfloat, weight: wpfloat, dbl_eps: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    # d(x, y)/d(zeta, eta) of the bilinear map of the quadrilateral, at one point.
    dx_dzeta = (1.0 - eta) * (x_2 - x_1) + (1.0 + eta) * (x_3 - x_4)
    dy_dzeta = (1.0 - eta) * (y_2 - y_1) + (1.0 + eta) * (y_3 - y_4)
    dy_deta = (1.0 - zeta) * (y_4 - y_1) - (1.0 + zeta) * (y_2 - y_3)
    dx_deta = (1.0 - zeta) * (x_4 - x_1) - (1.0 + zeta) * (x_2 - x_3)
    return dbl_eps + 0.0625 * weight * (dx_dzeta * dy_deta - dy_dzeta * dx_deta)


@gtx.field_operator
def _gauss_point(
    v_1: fa.EdgeKField[wpfloat], v_2: fa.EdgeKField[wpfloat],
    v_3: fa.EdgeKField[wpfloat], v_4: fa.EdgeKField[wpfloat],
    s_1: wpfloat, s_2: wpfloat, s_3: wpfloat, s_4: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    return s_1 * v_1 + s_2 * v_2 + s_3 * v_3 + s_4 * v_4


@gtx.field_operator
def _prepare_numerical_quadrature_for_cubic_reconstruction(
    p_coords_dreg_v_1_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_2_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_3_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_4_x: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_1_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_2_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_3_y: fa.EdgeKField[ta.vpfloat],
    p_coords_dreg_v_4_y: fa.EdgeKField[ta.vpfloat],
    shape_func_1_1: ta.wpfloat, shape_func_2_1: ta.wpfloat,
    shape_func_3_1: ta.wpfloat, shape_func_4_1: ta.wpfloat,
    shape_func_1_2: ta.wpfloat, shape_func_2_2: ta.wpfloat,
    shape_func_3_2: ta.wpfloat, shape_func_4_2: ta.wpfloat,
    shape_func_1_3: ta.wpfloat, shape_func_2_3: ta.wpfloat,
    shape_func_3_3: ta.wpfloat, shape_func_4_3: ta.wpfloat,
    shape_func_1_4: ta.wpfloat, shape_func_2_4: ta.wpfloat,
    shape_func_3_4: ta.wpfloat, shape_func_4_4: ta.wpfloat,
    zeta_1: ta.wpfloat, zeta_2: ta.wpfloat, zeta_3: ta.wpfloat, zeta_4: ta.wpfloat,
    eta_1: ta.wpfloat, eta_2: ta.wpfloat, eta_3: ta.wpfloat, eta_4: ta.wpfloat,
    wgt_zeta_1: ta.wpfloat, wgt_zeta_2: ta.wpfloat,
    wgt_eta_1: ta.wpfloat, wgt_eta_2: ta.wpfloat,
    dbl_eps: ta.wpfloat,
    eps: ta.wpfloat,
) -> tuple[
    fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat],
]:
    x1, x2, x3, x4 = astype(
        (p_coords_dreg_v_1_x, p_coords_dreg_v_2_x, p_coords_dreg_v_3_x, p_coords_dreg_v_4_x),
        wpfloat,
    )
    y1 = astype(p_coords_dreg_v_1_y, wpfloat)
    y2 = astype(p_coords_dreg_v_2_y, wpfloat)
    y3 = astype(p_coords_dreg_v_3_y, wpfloat)
    y4 = astype(p_coords_dreg_v_4_y, wpfloat)

    j1 = _quadrature_weight_times_jacobian(
        x1, x2, x3, x4, y1, y2, y3, y4, zeta_1, eta_1, wgt_zeta_1 * wgt_eta_1, dbl_eps)
    j2 = _quadrature_weight_times_jacobian(
        x1, x2, x3, x4, y1, y2, y3, y4, zeta_2, eta_2, wgt_zeta_1 * wgt_eta_2, dbl_eps)
    j3 = _quadrature_weight_times_jacobian(
        x1, x2, x3, x4, y1, y2, y3, y4, zeta_3, eta_3, wgt_zeta_2 * wgt_eta_1, dbl_eps)
    j4 = _quadrature_weight_times_jacobian(
        x1, x2, x3, x4, y1, y2, y3, y4, zeta_4, eta_4, wgt_zeta_2 * wgt_eta_2, dbl_eps)

    gx1 = _gauss_point(x1, x2, x3, x4, shape_func_1_1, shape_func_2_1, shape_func_3_1,
                       shape_func_4_1)
    gy1 = _gauss_point(y1, y2, y3, y4, shape_func_1_1, shape_func_2_1, shape_func_3_1,
                       shape_func_4_1)
    gx2 = _gauss_point(x1, x2, x3, x4, shape_func_1_2, shape_func_2_2, shape_func_3_2,
                       shape_func_4_2)
    gy2 = _gauss_point(y1, y2, y3, y4, shape_func_1_2, shape_func_2_2, shape_func_3_2,
                       shape_func_4_2)
    gx3 = _gauss_point(x1, x2, x3, x4, shape_func_1_3, shape_func_2_3, shape_func_3_3,
                       shape_func_4_3)
    gy3 = _gauss_point(y1, y2, y3, y4, shape_func_1_3, shape_func_2_3, shape_func_3_3,
                       shape_func_4_3)
    gx4 = _gauss_point(x1, x2, x3, x4, shape_func_1_4, shape_func_2_4, shape_func_3_4,
                       shape_func_4_4)
    gy4 = _gauss_point(y1, y2, y3, y4, shape_func_1_4, shape_func_2_4, shape_func_3_4,
                       shape_func_4_4)

    s1 = j1 + j2 + j3 + j4
    s2 = j1 * gx1 + j2 * gx2 + j3 * gx3 + j4 * gx4
    s3 = j1 * gy1 + j2 * gy2 + j3 * gy3 + j4 * gy4
    s4 = j1 * gx1 * gx1 + j2 * gx2 * gx2 + j3 * gx3 * gx3 + j4 * gx4 * gx4
    s5 = j1 * gy1 * gy1 + j2 * gy2 * gy2 + j3 * gy3 * gy3 + j4 * gy4 * gy4
    s6 = j1 * gx1 * gy1 + j2 * gx2 * gy2 + j3 * gx3 * gy3 + j4 * gx4 * gy4
    s7 = j1 * gx1 * gx1 * gx1 + j2 * gx2 * gx2 * gx2 + j3 * gx3 * gx3 * gx3 + j4 * gx4 * gx4 * gx4
    s8 = j1 * gy1 * gy1 * gy1 + j2 * gy2 * gy2 * gy2 + j3 * gy3 * gy3 * gy3 + j4 * gy4 * gy4 * gy4
    s9 = j1 * gx1 * gx1 * gy1 + j2 * gx2 * gx2 * gy2 + j3 * gx3 * gx3 * gy3 + j4 * gx4 * gx4 * gy4
    s10 = j1 * gx1 * gy1 * gy1 + j2 * gx2 * gy2 * gy2 + j3 * gx3 * gy3 * gy3 + j4 * gx4 * gy4 * gy4
    area = where(s1 >= 0.0, maximum(eps, abs(s1)), -maximum(eps, abs(s1)))
    return (
        astype(s1, vpfloat), astype(s2, vpfloat), astype(s3, vpfloat), astype(s4, vpfloat),
        astype(s5, vpfloat), astype(s6, vpfloat), astype(s7, vpfloat), astype(s8, vpfloat),
        astype(s9, vpfloat), astype(s10, vpfloat), astype(area, vpfloat),
    )


@gtx.field_operator
def _upwind_coefficient(
    coeff: fa.CellKField[wpfloat], cell_rel_idx_dsl: fa.EdgeKField[gtx.int32]
) -> fa.EdgeKField[wpfloat]:
    return where(cell_rel_idx_dsl == 1, coeff(E2C[1]), coeff(E2C[0]))


@gtx.field_operator
def _compute_intermediate_horizontal_tracer_flux_from_cubic_coefficients(
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat], z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat], z_lsq_coeff_4: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_5: fa.CellKField[ta.wpfloat], z_lsq_coeff_6: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_7: fa.CellKField[ta.wpfloat], z_lsq_coeff_8: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_9: fa.CellKField[ta.wpfloat], z_lsq_coeff_10: fa.CellKField[ta.wpfloat],
    z_quad_vector_sum0_1: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_2: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_3: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_4: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_5: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_6: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_7: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_8: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_9: fa.EdgeKField[ta.vpfloat],
    z_quad_vector_sum0_10: fa.EdgeKField[ta.vpfloat],
    patch0_cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
) -> fa.EdgeKField[ta.wpfloat]:
    idx = patch0_cell_rel_idx_dsl
    return (
        where(idx == 1, z_lsq_coeff_1(E2C[1]), z_lsq_coeff_1(E2C[0]))
        * astype(z_quad_vector_sum0_1, wpfloat)
        + where(idx == 1, z_lsq_coeff_2(E2C[1]), z_lsq_coeff_2(E2C[0]))
        * astype(z_quad_vector_sum0_2, wpfloat)
        + where(idx == 1, z_lsq_coeff_3(E2C[1]), z_lsq_coeff_3(E2C[0]))
        * astype(z_quad_vector_sum0_3, wpfloat)
        + where(idx == 1, z_lsq_coeff_4(E2C[1]), z_lsq_coeff_4(E2C[0]))
        * astype(z_quad_vector_sum0_4, wpfloat)
        + where(idx == 1, z_lsq_coeff_5(E2C[1]), z_lsq_coeff_5(E2C[0]))
        * astype(z_quad_vector_sum0_5, wpfloat)
        + where(idx == 1, z_lsq_coeff_6(E2C[1]), z_lsq_coeff_6(E2C[0]))
        * astype(z_quad_vector_sum0_6, wpfloat)
        + where(idx == 1, z_lsq_coeff_7(E2C[1]), z_lsq_coeff_7(E2C[0]))
        * astype(z_quad_vector_sum0_7, wpfloat)
        + where(idx == 1, z_lsq_coeff_8(E2C[1]), z_lsq_coeff_8(E2C[0]))
        * astype(z_quad_vector_sum0_8, wpfloat)
        + where(idx == 1, z_lsq_coeff_9(E2C[1]), z_lsq_coeff_9(E2C[0]))
        * astype(z_quad_vector_sum0_9, wpfloat)
        + where(idx == 1, z_lsq_coeff_10(E2C[1]), z_lsq_coeff_10(E2C[0]))
        * astype(z_quad_vector_sum0_10, wpfloat)
    )


@gtx.field_operator
def _upwind_hflux_miura3_stencil_01(
    z_lsq_coeff_1: fa.CellKField[wpfloat], z_lsq_coeff_2: fa.CellKField[wpfloat],
    z_lsq_coeff_3: fa.CellKField[wpfloat], z_lsq_coeff_4: fa.CellKField[wpfloat],
    z_lsq_coeff_5: fa.CellKField[wpfloat], z_lsq_coeff_6: fa.CellKField[wpfloat],
    z_lsq_coeff_7: fa.CellKField[wpfloat], z_lsq_coeff_8: fa.CellKField[wpfloat],
    z_lsq_coeff_9: fa.CellKField[wpfloat], z_lsq_coeff_10: fa.CellKField[wpfloat],
    z_quad_vector_sum_1: fa.EdgeKField[vpfloat], z_quad_vector_sum_2: fa.EdgeKField[vpfloat],
    z_quad_vector_sum_3: fa.EdgeKField[vpfloat], z_quad_vector_sum_4: fa.EdgeKField[vpfloat],
    z_quad_vector_sum_5: fa.EdgeKField[vpfloat], z_quad_vector_sum_6: fa.EdgeKField[vpfloat],
    z_quad_vector_sum_7: fa.EdgeKField[vpfloat], z_quad_vector_sum_8: fa.EdgeKField[vpfloat],
    z_quad_vector_sum_9: fa.EdgeKField[vpfloat], z_quad_vector_sum_10: fa.EdgeKField[vpfloat],
    z_dreg_area: fa.EdgeKField[vpfloat],
    p_mass_flx_e: fa.EdgeKField[wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
) -> fa.EdgeKField[wpfloat]:
    coeffs = (z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, z_lsq_coeff_4, z_lsq_coeff_5,
              z_lsq_coeff_6, z_lsq_coeff_7, z_lsq_coeff_8, z_lsq_coeff_9, z_lsq_coeff_10)
    sums = astype(
        (z_quad_vector_sum_1, z_quad_vector_sum_2, z_quad_vector_sum_3, z_quad_vector_sum_4,
         z_quad_vector_sum_5, z_quad_vector_sum_6, z_quad_vector_sum_7, z_quad_vector_sum_8,
         z_quad_vector_sum_9, z_quad_vector_sum_10),
        wpfloat,
    )
    integral = _upwind_coefficient(coeffs[0], cell_rel_idx_dsl) * sums[0]
    integral = integral + _upwind_coefficient(coeffs[1], cell_rel_idx_dsl) * sums[1]
    integral = integral + _upwind_coefficient(coeffs[2], cell_rel_idx_dsl) * sums[2]
    integral = integral + _upwind_coefficient(coeffs[3], cell_rel_idx_dsl) * sums[3]
    integral = integral + _upwind_coefficient(coeffs[4], cell_rel_idx_dsl) * sums[4]
    integral = integral + _upwind_coefficient(coeffs[5], cell_rel_idx_dsl) * sums[5]
    integral = integral + _upwind_coefficient(coeffs[6], cell_rel_idx_dsl) * sums[6]
    integral = integral + _upwind_coefficient(coeffs[7], cell_rel_idx_dsl) * sums[7]
    integral = integral + _upwind_coefficient(coeffs[8], cell_rel_idx_dsl) * sums[8]
    integral = integral + _upwind_coefficient(coeffs[9], cell_rel_idx_dsl) * sums[9]
    return integral / astype(z_dreg_area, wpfloat) * p_mass_flx_e


@gtx.field_operator
def _compute_intermediate_horizontal_flux_from_linear_coefficients(
    z_lsq_coeff_1_dsl: fa.CellKField[wpfloat],
    z_lsq_coeff_2_dsl: fa.CellKField[wpfloat],
    z_lsq_coeff_3_dsl: fa.CellKField[wpfloat],
    distv_bary_1: fa.EdgeKField[vpfloat],
    distv_bary_2: fa.EdgeKField[vpfloat],
    p_mass_flx_e: fa.EdgeKField[wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
) -> fa.EdgeKField[wpfloat]:
    return (
        where(cell_rel_idx_dsl == 1, z_lsq_coeff_1_dsl(E2C[1]), z_lsq_coeff_1_dsl(E2C[0]))
        + astype(distv_bary_1, wpfloat)
        * where(cell_rel_idx_dsl == 1, z_lsq_coeff_2_dsl(E2C[1]), z_lsq_coeff_2_dsl(E2C[0]))
        + astype(distv_bary_2, wpfloat)
        * where(cell_rel_idx_dsl == 1, z_lsq_coeff_3_dsl(E2C[1]), z_lsq_coeff_3_dsl(E2C[0]))
    ) * p_mass_flx_e


@gtx.field_operator
def _reconstruct_quadratic_coefficients_weno_candidate(
    p_cc: fa.CellKField[ta.wpfloat],
    lsq_pseudoinv_direct_1: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_direct_2: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_direct_3: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_direct_4: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_direct_5: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_butterfly_1: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_butterfly_2: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_butterfly_3: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_butterfly_4: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2C2E2CDim], ta.wpfloat],
    lsq_pseudoinv_butterfly_5: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2C2E2CDim], ta.wpfloat],
    lsq_moments_1: fa.CellField[ta.wpfloat],
    lsq_moments_2: fa.CellField[ta.wpfloat],
    lsq_moments_3: fa.CellField[ta.wpfloat],
    lsq_moments_4: fa.CellField[ta.wpfloat],
    lsq_moments_5: fa.CellField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat],
]:
    near = p_cc(C2E2C) - p_cc
    far = p_cc(C2E2C2E2C) - p_cc
    c2 = neighbor_sum(lsq_pseudoinv_direct_1 * near, axis=C2E2CDim) + neighbor_sum(
        lsq_pseudoinv_butterfly_1 * far, axis=C2E2C2E2CDim)
    c3 = neighbor_sum(lsq_pseudoinv_direct_2 * near, axis=C2E2CDim) + neighbor_sum(
        lsq_pseudoinv_butterfly_2 * far, axis=C2E2C2E2CDim)
    c4 = neighbor_sum(lsq_pseudoinv_direct_3 * near, axis=C2E2CDim) + neighbor_sum(
        lsq_pseudoinv_butterfly_3 * far, axis=C2E2C2E2CDim)
    c5 = neighbor_sum(lsq_pseudoinv_direct_4 * near, axis=C2E2CDim) + neighbor_sum(
        lsq_pseudoinv_butterfly_4 * far, axis=C2E2C2E2CDim)
    c6 = neighbor_sum(lsq_pseudoinv_direct_5 * near, axis=C2E2CDim) + neighbor_sum(
        lsq_pseudoinv_butterfly_5 * far, axis=C2E2C2E2CDim)
    c1 = p_cc - (c2 * lsq_moments_1 + c3 * lsq_moments_2 + c4 * lsq_moments_3
                 + c5 * lsq_moments_4 + c6 * lsq_moments_5)
    return c1, c2, c3, c4, c5, c6


@gtx.field_operator
def _upwind_vflux_ppm_stencil_01(
    z_face_up: fa.CellKField[float],
    z_face_low: fa.CellKField[float],
    p_cc: fa.CellKField[float],
) -> tuple[fa.CellKField[float], fa.CellKField[float]]:
    z_delta_q = 0.5 * (z_face_up - z_face_low)
    z_a1 = p_cc - 0.5 * (z_face_up + z_face_low)
    return z_delta_q, z_a1


@gtx.field_operator
def _copy_cell_kdim_field_koff_minus1(
    field_in: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    return field_in(Koff[-1])


@gtx.field_operator
def _copy_cell_kdim_field_koff_plus1(
    field_in: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    return field_in(Koff[1])


@gtx.field_operator
def _init_constant_cell_kdim_field(value: ta.wpfloat) -> fa.CellKField[ta.wpfloat]:
    return broadcast(value, (dims.CellDim, dims.KDim))


@gtx.field_operator
def _average_horizontal_flux_subcycling_2(
    z_tracer_mflx_1_dsl: fa.EdgeKField[ta.wpfloat],
    z_tracer_mflx_2_dsl: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    return (z_tracer_mflx_1_dsl + z_tracer_mflx_2_dsl) / 2.0


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def higher_order_tracer_fluxes(
    p_coords_dreg_v_1_x: fa.EdgeKField[vpfloat], p_coords_dreg_v_2_x: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_3_x: fa.EdgeKField[vpfloat], p_coords_dreg_v_4_x: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_1_y: fa.EdgeKField[vpfloat], p_coords_dreg_v_2_y: fa.EdgeKField[vpfloat],
    p_coords_dreg_v_3_y: fa.EdgeKField[vpfloat], p_coords_dreg_v_4_y: fa.EdgeKField[vpfloat],
    z_lsq_coeff_1: fa.CellKField[wpfloat], z_lsq_coeff_2: fa.CellKField[wpfloat],
    z_lsq_coeff_3: fa.CellKField[wpfloat], z_lsq_coeff_4: fa.CellKField[wpfloat],
    z_lsq_coeff_5: fa.CellKField[wpfloat], z_lsq_coeff_6: fa.CellKField[wpfloat],
    z_lsq_coeff_7: fa.CellKField[wpfloat], z_lsq_coeff_8: fa.CellKField[wpfloat],
    z_lsq_coeff_9: fa.CellKField[wpfloat], z_lsq_coeff_10: fa.CellKField[wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
    p_mass_flx_e: fa.EdgeKField[wpfloat],
    distv_bary_1: fa.EdgeKField[vpfloat], distv_bary_2: fa.EdgeKField[vpfloat],
    p_cc: fa.CellKField[wpfloat],
    lsq_pseudoinv_direct_1: Field[[dims.CellDim, dims.C2E2CDim], wpfloat],
    lsq_pseudoinv_direct_2: Field[[dims.CellDim, dims.C2E2CDim], wpfloat],
    lsq_pseudoinv_direct_3: Field[[dims.CellDim, dims.C2E2CDim], wpfloat],
    lsq_pseudoinv_direct_4: Field[[dims.CellDim, dims.C2E2CDim], wpfloat],
    lsq_pseudoinv_direct_5: Field[[dims.CellDim, dims.C2E2CDim], wpfloat],
    lsq_pseudoinv_butterfly_1: Field[[dims.CellDim, dims.C2E2C2E2CDim], wpfloat],
    lsq_pseudoinv_butterfly_2: Field[[dims.CellDim, dims.C2E2C2E2CDim], wpfloat],
    lsq_pseudoinv_butterfly_3: Field[[dims.CellDim, dims.C2E2C2E2CDim], wpfloat],
    lsq_pseudoinv_butterfly_4: Field[[dims.CellDim, dims.C2E2C2E2CDim], wpfloat],
    lsq_pseudoinv_butterfly_5: Field[[dims.CellDim, dims.C2E2C2E2CDim], wpfloat],
    lsq_moments_1: fa.CellField[wpfloat], lsq_moments_2: fa.CellField[wpfloat],
    lsq_moments_3: fa.CellField[wpfloat], lsq_moments_4: fa.CellField[wpfloat],
    lsq_moments_5: fa.CellField[wpfloat],
    z_face_up: fa.CellKField[float], z_face_low: fa.CellKField[float],
    z_tracer_mflx_1_dsl: fa.EdgeKField[wpfloat], z_tracer_mflx_2_dsl: fa.EdgeKField[wpfloat],
    q_1: fa.EdgeKField[vpfloat], q_2: fa.EdgeKField[vpfloat], q_3: fa.EdgeKField[vpfloat],
    q_4: fa.EdgeKField[vpfloat], q_5: fa.EdgeKField[vpfloat], q_6: fa.EdgeKField[vpfloat],
    q_7: fa.EdgeKField[vpfloat], q_8: fa.EdgeKField[vpfloat], q_9: fa.EdgeKField[vpfloat],
    q_10: fa.EdgeKField[vpfloat], p_dreg_area_out: fa.EdgeKField[vpfloat],
    p_out_e_hybrid_1a: fa.EdgeKField[wpfloat],
    p_out_e_miura3: fa.EdgeKField[wpfloat],
    z_tracer_mflx_dsl: fa.EdgeKField[wpfloat],
    p_coeff_1_dsl: fa.CellKField[wpfloat], p_coeff_2_dsl: fa.CellKField[wpfloat],
    p_coeff_3_dsl: fa.CellKField[wpfloat], p_coeff_4_dsl: fa.CellKField[wpfloat],
    p_coeff_5_dsl: fa.CellKField[wpfloat], p_coeff_6_dsl: fa.CellKField[wpfloat],
    z_delta_q: fa.CellKField[float], z_a1: fa.CellKField[float],
    field_below: fa.CellKField[wpfloat], field_above: fa.CellKField[wpfloat],
    constant_out: fa.CellKField[wpfloat],
    p_mflx_avg: fa.EdgeKField[wpfloat],
    shape_func_1_1: wpfloat, shape_func_2_1: wpfloat, shape_func_3_1: wpfloat,
    shape_func_4_1: wpfloat, shape_func_1_2: wpfloat, shape_func_2_2: wpfloat,
    shape_func_3_2: wpfloat, shape_func_4_2: wpfloat, shape_func_1_3: wpfloat,
    shape_func_2_3: wpfloat, shape_func_3_3: wpfloat, shape_func_4_3: wpfloat,
    shape_func_1_4: wpfloat, shape_func_2_4: wpfloat, shape_func_3_4: wpfloat,
    shape_func_4_4: wpfloat,
    zeta_1: wpfloat, zeta_2: wpfloat, zeta_3: wpfloat, zeta_4: wpfloat,
    eta_1: wpfloat, eta_2: wpfloat, eta_3: wpfloat, eta_4: wpfloat,
    wgt_zeta_1: wpfloat, wgt_zeta_2: wpfloat, wgt_eta_1: wpfloat, wgt_eta_2: wpfloat,
    dbl_eps: wpfloat, eps: wpfloat, value: wpfloat,
    cell_start: gtx.int32, cell_end: gtx.int32,
    edge_start: gtx.int32, edge_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
) -> None:
    _prepare_numerical_quadrature_for_cubic_reconstruction(
        p_coords_dreg_v_1_x, p_coords_dreg_v_2_x, p_coords_dreg_v_3_x, p_coords_dreg_v_4_x,
        p_coords_dreg_v_1_y, p_coords_dreg_v_2_y, p_coords_dreg_v_3_y, p_coords_dreg_v_4_y,
        shape_func_1_1, shape_func_2_1, shape_func_3_1, shape_func_4_1,
        shape_func_1_2, shape_func_2_2, shape_func_3_2, shape_func_4_2,
        shape_func_1_3, shape_func_2_3, shape_func_3_3, shape_func_4_3,
        shape_func_1_4, shape_func_2_4, shape_func_3_4, shape_func_4_4,
        zeta_1, zeta_2, zeta_3, zeta_4, eta_1, eta_2, eta_3, eta_4,
        wgt_zeta_1, wgt_zeta_2, wgt_eta_1, wgt_eta_2, dbl_eps, eps,
        out=(q_1, q_2, q_3, q_4, q_5, q_6, q_7, q_8, q_9, q_10, p_dreg_area_out),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_intermediate_horizontal_tracer_flux_from_cubic_coefficients(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, z_lsq_coeff_4, z_lsq_coeff_5,
        z_lsq_coeff_6, z_lsq_coeff_7, z_lsq_coeff_8, z_lsq_coeff_9, z_lsq_coeff_10,
        q_1, q_2, q_3, q_4, q_5, q_6, q_7, q_8, q_9, q_10, cell_rel_idx_dsl,
        out=p_out_e_hybrid_1a,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _upwind_hflux_miura3_stencil_01(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, z_lsq_coeff_4, z_lsq_coeff_5,
        z_lsq_coeff_6, z_lsq_coeff_7, z_lsq_coeff_8, z_lsq_coeff_9, z_lsq_coeff_10,
        q_1, q_2, q_3, q_4, q_5, q_6, q_7, q_8, q_9, q_10, p_dreg_area_out,
        p_mass_flx_e, cell_rel_idx_dsl,
        out=(p_out_e_miura3),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_intermediate_horizontal_flux_from_linear_coefficients(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, distv_bary_1, distv_bary_2,
        p_mass_flx_e, cell_rel_idx_dsl, out=(z_tracer_mflx_dsl),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _reconstruct_quadratic_coefficients_weno_candidate(
        p_cc=p_cc,
        lsq_pseudoinv_direct_1=lsq_pseudoinv_direct_1,
        lsq_pseudoinv_direct_2=lsq_pseudoinv_direct_2,
        lsq_pseudoinv_direct_3=lsq_pseudoinv_direct_3,
        lsq_pseudoinv_direct_4=lsq_pseudoinv_direct_4,
        lsq_pseudoinv_direct_5=lsq_pseudoinv_direct_5,
        lsq_pseudoinv_butterfly_1=lsq_pseudoinv_butterfly_1,
        lsq_pseudoinv_butterfly_2=lsq_pseudoinv_butterfly_2,
        lsq_pseudoinv_butterfly_3=lsq_pseudoinv_butterfly_3,
        lsq_pseudoinv_butterfly_4=lsq_pseudoinv_butterfly_4,
        lsq_pseudoinv_butterfly_5=lsq_pseudoinv_butterfly_5,
        lsq_moments_1=lsq_moments_1, lsq_moments_2=lsq_moments_2,
        lsq_moments_3=lsq_moments_3, lsq_moments_4=lsq_moments_4,
        lsq_moments_5=lsq_moments_5,
        out=(p_coeff_1_dsl, p_coeff_2_dsl, p_coeff_3_dsl, p_coeff_4_dsl, p_coeff_5_dsl,
             p_coeff_6_dsl),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _upwind_vflux_ppm_stencil_01(z_face_up, z_face_low, p_cc, out=(z_delta_q, z_a1))
    _copy_cell_kdim_field_koff_minus1(
        p_cc, out=field_below,
        domain={dims.CellDim: (cell_start, cell_end), dims.KDim: (1, vertical_end)})
    _copy_cell_kdim_field_koff_plus1(
        p_cc, out=field_above,
        domain={dims.CellDim: (cell_start, cell_end), dims.KDim: (vertical_start, 11)})
    _init_constant_cell_kdim_field(
        value, out=constant_out,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _average_horizontal_flux_subcycling_2(
        z_tracer_mflx_1_dsl, z_tracer_mflx_2_dsl, out=p_mflx_avg,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_higher_order_tracer_fluxes(backend):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 1, NE - 1, 2, NLEV - 1
    e2c, c2e2c, c2e2c2e2c = TABLES["E2C"], TABLES["C2E2C"], TABLES["C2E2C2E2C"]
    coords = {f"p_coords_dreg_v_{i}_{c}": (RNG.standard_normal((NE, NLEV)) * 3.0
                                           ).astype(np.float32)
              for c in "xy" for i in range(1, 5)}
    lsq = {f"z_lsq_coeff_{i}": RNG.standard_normal((NC, NLEV)) for i in range(1, 11)}
    weno = {f"lsq_pseudoinv_direct_{i}": RNG.standard_normal((NC, 3)) for i in range(1, 6)}
    weno |= {f"lsq_pseudoinv_butterfly_{i}": RNG.standard_normal((NC, 9)) for i in range(1, 6)}
    weno |= {f"lsq_moments_{i}": RNG.standard_normal(NC) for i in range(1, 6)}
    a = dict(**coords, **lsq, **weno,
             cell_rel_idx_dsl=RNG.integers(0, 2, (NE, NLEV)).astype(np.int32),
             p_mass_flx_e=RNG.standard_normal((NE, NLEV)),
             distv_bary_1=f32(NE, NLEV), distv_bary_2=f32(NE, NLEV),
             p_cc=RNG.standard_normal((NC, NLEV)), z_face_up=RNG.standard_normal((NC, NLEV)),
             z_face_low=RNG.standard_normal((NC, NLEV)),
             z_tracer_mflx_1_dsl=RNG.standard_normal((NE, NLEV)),
             z_tracer_mflx_2_dsl=RNG.standard_normal((NE, NLEV)))
    shape = RNG.uniform(-1.0, 1.0, (4, 4))  # shape[i, q]: vertex i at quadrature point q
    zeta, eta = RNG.uniform(-0.9, 0.9, 4), RNG.uniform(-0.9, 0.9, 4)
    wgt_zeta, wgt_eta = RNG.uniform(0.5, 1.5, 2), RNG.uniform(0.5, 1.5, 2)
    s = {f"shape_func_{i + 1}_{q + 1}": float(shape[i, q]) for i in range(4) for q in range(4)}
    s |= {f"zeta_{q + 1}": float(zeta[q]) for q in range(4)}
    s |= {f"eta_{q + 1}": float(eta[q]) for q in range(4)}
    s |= dict(wgt_zeta_1=float(wgt_zeta[0]), wgt_zeta_2=float(wgt_zeta[1]),
              wgt_eta_1=float(wgt_eta[0]), wgt_eta_2=float(wgt_eta[1]),
              dbl_eps=1e-14, eps=0.3, value=2.5)
    base = {f"q_{i}": f32(NE, NLEV) for i in range(1, 11)}
    base |= dict(p_dreg_area_out=f32(NE, NLEV), p_out_e_hybrid_1a=RNG.random((NE, NLEV)),
                 p_out_e_miura3=RNG.random((NE, NLEV)), z_tracer_mflx_dsl=RNG.random((NE, NLEV)),
                 z_delta_q=RNG.random((NC, NLEV)), z_a1=RNG.random((NC, NLEV)),
                 field_below=RNG.random((NC, NLEV)), field_above=RNG.random((NC, NLEV)),
                 constant_out=RNG.random((NC, NLEV)), p_mflx_avg=RNG.random((NE, NLEV)))
    base |= {f"p_coeff_{i}_dsl": RNG.random((NC, NLEV)) for i in range(1, 7)}
    got = {k: v.copy() for k, v in base.items()}
    higher_order_tracer_fluxes(
        **a, **got, **s, cell_start=cs, cell_end=ce, edge_start=es, edge_end=ee,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    x = [coords[f"p_coords_dreg_v_{i}_x"].astype(np.float64) for i in range(1, 5)]
    y = [coords[f"p_coords_dreg_v_{i}_y"].astype(np.float64) for i in range(1, 5)]
    weights = [wgt_zeta[0] * wgt_eta[0], wgt_zeta[0] * wgt_eta[1],
               wgt_zeta[1] * wgt_eta[0], wgt_zeta[1] * wgt_eta[1]]
    moments = np.zeros((10, NE, NLEV))
    for q in range(4):
        ze, et = zeta[q], eta[q]
        jac = ((1 - et) * (x[1] - x[0]) + (1 + et) * (x[2] - x[3])) * (
            (1 - ze) * (y[3] - y[0]) - (1 + ze) * (y[1] - y[2])) - (
            (1 - et) * (y[1] - y[0]) + (1 + et) * (y[2] - y[3])) * (
            (1 - ze) * (x[3] - x[0]) - (1 + ze) * (x[1] - x[2]))
        w = 1e-14 + weights[q] / 16.0 * jac
        gx = sum(shape[i, q] * x[i] for i in range(4))
        gy = sum(shape[i, q] * y[i] for i in range(4))
        for n, mono in enumerate([1.0, gx, gy, gx**2, gy**2, gx * gy, gx**3, gy**3,
                                  gx**2 * gy, gx * gy**2]):
            moments[n] += w * mono
    area = np.sign(moments[0]) * np.maximum(0.3, np.abs(moments[0]))
    area[moments[0] == 0.0] = 0.3
    want = {f"q_{n + 1}": inside(moments[n].astype(np.float32), base[f"q_{n + 1}"],
                                 es, ee, vs, ve) for n in range(10)}
    want["p_dreg_area_out"] = inside(area.astype(np.float32), base["p_dreg_area_out"],
                                     es, ee, vs, ve)
    idx = a["cell_rel_idx_dsl"]

    def upwind(c):
        return np.where(idx == 1, c[e2c[:, 1]], c[e2c[:, 0]])

    q = [want[f"q_{n}"].astype(np.float64) for n in range(1, 11)]
    cubic = sum(upwind(lsq[f"z_lsq_coeff_{n + 1}"]) * q[n] for n in range(10))
    miura3 = cubic / want["p_dreg_area_out"].astype(np.float64) * a["p_mass_flx_e"]
    linear = (upwind(lsq["z_lsq_coeff_1"])
              + a["distv_bary_1"].astype(np.float64) * upwind(lsq["z_lsq_coeff_2"])
              + a["distv_bary_2"].astype(np.float64) * upwind(lsq["z_lsq_coeff_3"])
              ) * a["p_mass_flx_e"]
    cc = a["p_cc"]
    near, far = cc[c2e2c] - cc[:, None], cc[c2e2c2e2c] - cc[:, None]
    coeff = [None] + [np.einsum("cn,cnk->ck", weno[f"lsq_pseudoinv_direct_{i}"], near)
                      + np.einsum("cn,cnk->ck", weno[f"lsq_pseudoinv_butterfly_{i}"], far)
                      for i in range(1, 6)]
    coeff[0] = cc - sum(coeff[i] * weno[f"lsq_moments_{i}"][:, None] for i in range(1, 6))
    want |= {f"p_coeff_{i + 1}_dsl": inside(coeff[i], base[f"p_coeff_{i + 1}_dsl"],
                                            cs, ce, vs, ve) for i in range(6)}
    want |= dict(
        p_out_e_hybrid_1a=inside(cubic, base["p_out_e_hybrid_1a"], es, ee, vs, ve),
        p_out_e_miura3=inside(miura3, base["p_out_e_miura3"], es, ee, vs, ve),
        z_tracer_mflx_dsl=inside(linear, base["z_tracer_mflx_dsl"], es, ee, vs, ve),
        z_delta_q=0.5 * (a["z_face_up"] - a["z_face_low"]),
        z_a1=cc - 0.5 * (a["z_face_up"] + a["z_face_low"]),
        field_below=inside(shifted(cc, -1), base["field_below"], cs, ce, 1, ve),
        field_above=inside(shifted(cc, 1), base["field_above"], cs, ce, vs, NLEV - 1),
        constant_out=inside(np.full((NC, NLEV), 2.5), base["constant_out"], cs, ce, vs, ve),
        p_mflx_avg=inside((a["z_tracer_mflx_1_dsl"] + a["z_tracer_mflx_2_dsl"]) / 2.0,
                          base["p_mflx_avg"], es, ee, vs, ve))
    check(got, want, rtol=2e-5, atol=1e-6)


# ================================================================== metrics and nonhydro pieces
#
# icon4py's metric fields (mo_vertical_grid), the virtual potential
# temperatures on half levels with the pressure gradient, mass fluxes and
# the vertical diffusion of the winds.


@gtx.field_operator
def _compute_coeff_dwdz(
    ddqz_z_full: fa.CellKField[wpfloat], z_ifc: fa.CellKField[wpfloat]
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    layer_ratio = ddqz_z_full / ddqz_z_full(Koff[-1])
    two_layers = z_ifc(Koff[-1]) - z_ifc(Koff[1])
    return layer_ratio / two_layers, 1.0 / layer_ratio / two_layers


@gtx.field_operator
def grad_fd_norm(
    psi_c: fa.CellKField[float],
    inv_dual_edge_length: fa.EdgeField[float],
) -> fa.EdgeKField[float]:
    return (psi_c(E2C[1]) - psi_c(E2C[0])) * inv_dual_edge_length


@gtx.field_operator
def _compute_cell_2_vertex_interpolation(
    cell_in: fa.CellKField[wpfloat],
    c_int: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
) -> fa.VertexKField[wpfloat]:
    return neighbor_sum(c_int * cell_in(V2C), axis=V2CDim)


@gtx.field_operator
def _grad_fd_tang(
    psi_v: fa.VertexKField[float],
    inv_primal_edge_length: fa.EdgeField[float],
    tangent_orientation: fa.EdgeField[float],
) -> fa.EdgeKField[float]:
    return tangent_orientation * (psi_v(E2V[1]) - psi_v(E2V[0])) * inv_primal_edge_length


@gtx.field_operator
def _compute_ddxt_z_half_e(
    cell_in: fa.CellKField[wpfloat],
    c_int: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
):
    z_ifv = _compute_cell_2_vertex_interpolation(cell_in, c_int)
    return _grad_fd_tang(z_ifv, inv_primal_edge_length, tangent_orientation)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_vp(
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat]
) -> fa.CellKField[vpfloat]:
    return wgtfac_c * interpolant + (vpfloat("1.0") - wgtfac_c) * interpolant(Koff[-1])


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_wp(
    wgtfac_c: fa.CellKField[wpfloat], interpolant: fa.CellKField[wpfloat]
) -> fa.CellKField[wpfloat]:
    return wgtfac_c * interpolant + (wpfloat("1.0") - wgtfac_c) * interpolant(Koff[-1])


@gtx.field_operator
def _compute_virtual_potential_temperatures_and_pressure_gradient(
    wgtfac_c: fa.CellKField[ta.vpfloat],
    z_rth_pr_2: fa.CellKField[ta.vpfloat],
    theta_v: fa.CellKField[ta.wpfloat],
    vwind_expl_wgt: fa.CellField[ta.wpfloat],
    exner_pr: fa.CellKField[ta.wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[ta.wpfloat], fa.CellKField[ta.vpfloat]]:
    wgtfac_c_wp, ddqz_z_half_wp = astype((wgtfac_c, ddqz_z_half), wpfloat)
    theta_pr_ic = _interpolate_cell_field_to_half_levels_vp(
        wgtfac_c=wgtfac_c, interpolant=z_rth_pr_2)
    theta_ic = _interpolate_cell_field_to_half_levels_wp(wgtfac_c=wgtfac_c_wp, interpolant=theta_v)
    gradient = vwind_expl_wgt * theta_ic * (exner_pr(KDim - 1) - exner_pr) / ddqz_z_half_wp
    gradient = gradient + astype(theta_pr_ic * d_exner_dz_ref_ic, wpfloat)
    return theta_pr_ic, theta_ic, astype(gradient, vpfloat)


@gtx.field_operator
def _compute_virtual_potential_temperatures(
    wgtfac_c: fa.CellKField[ta.vpfloat],
    z_rth_pr_2: fa.CellKField[ta.vpfloat],
    theta_v: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.vpfloat], fa.CellKField[ta.wpfloat]]:
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    theta_pr_ic = _interpolate_cell_field_to_half_levels_vp(
        wgtfac_c=wgtfac_c, interpolant=z_rth_pr_2)
    return theta_pr_ic, wgtfac_c_wp * theta_v + (wpfloat("1.0") - wgtfac_c_wp) * theta_v(KDim - 1)


@gtx.field_operator
def _compute_pressure_gradient(
    vwind_expl_wgt: fa.CellField[ta.wpfloat],
    theta_v_ic: fa.CellKField[ta.wpfloat],
    z_theta_v_pr_ic: fa.CellKField[ta.wpfloat],
    exner_pr: fa.CellKField[ta.wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
) -> fa.CellKField[ta.vpfloat]:
    explicit = vwind_expl_wgt * theta_v_ic * (exner_pr(KDim - 1) - exner_pr) / astype(
        ddqz_z_half, wpfloat)
    return astype(explicit + z_theta_v_pr_ic * astype(d_exner_dz_ref_ic, wpfloat), vpfloat)


@gtx.field_operator
def _compute_mass_and_temperature_flux(
    z_rho_e: fa.EdgeKField[wpfloat],
    z_vn_avg: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    theta_v_at_edges_on_model_levels: fa.EdgeKField[wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    mass_fl_e = z_rho_e * z_vn_avg * astype(ddqz_z_full_e, wpfloat)
    return mass_fl_e, mass_fl_e * theta_v_at_edges_on_model_levels


@gtx.field_operator
def _apply_vertical_diffusion_to_vn(
    vn: fa.EdgeKField[wpfloat],
    ddqz_z_half_e: fa.EdgeKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    coeff: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    half_e, full_e = astype((ddqz_z_half_e, ddqz_z_full_e), wpfloat)
    upper = (vn(Koff[-1]) - vn) / half_e
    lower = (vn - vn(Koff[1])) / half_e(Koff[1])
    vn = vn + coeff * (upper - lower) / full_e
    return vn


@gtx.field_operator
def _apply_vertical_diffusion_to_w(
    w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    ddqz_z_full: fa.CellKField[vpfloat],
    coeff: wpfloat,
) -> fa.CellKField[wpfloat]:
    full = astype(ddqz_z_full, wpfloat)
    d2wdz2 = ((w(Koff[-1]) - w) / full(Koff[-1]) - (w - w(Koff[1])) / full) / astype(
        ddqz_z_half, wpfloat)
    w = w + coeff * d2wdz2
    return w


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[wpfloat]:
    return neighbor_sum(interpolant(C2E) * e_bln_c_s, axis=C2EDim)


@gtx.field_operator
def _interpolate_edge_field_to_cell_half_levels(
    interpolant: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    interpolant_c = _interpolate_to_cell_center(interpolant=interpolant, e_bln_c_s=e_bln_c_s)
    return _interpolate_cell_field_to_half_levels_wp(wgtfac_c=wgtfac_c, interpolant=interpolant_c)


@gtx.field_operator
def _compute_nabla2_on_cell_k(
    psi_c: fa.CellKField[ta.wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    return neighbor_sum(psi_c(C2E2CO) * geofac_n2s, axis=C2E2CODim)


@gtx.field_operator
def _copy_cell_kdim_field_to_vp(field: fa.CellKField[wpfloat]) -> fa.CellKField[vpfloat]:
    return astype(field, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def metrics_and_nonhydro_pieces(
    ddqz_z_full: fa.CellKField[wpfloat],
    z_ifc: fa.CellKField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    c_int: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    z_rth_pr_2: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    exner_pr: fa.CellKField[wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    z_rho_e: fa.EdgeKField[wpfloat],
    z_vn_avg: fa.EdgeKField[wpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    ddqz_z_half_e: fa.EdgeKField[vpfloat],
    theta_v_e: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c_wp: fa.CellKField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    ddqz_z_full_vp: fa.CellKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    w: fa.CellKField[wpfloat],
    coeff1_dwdz: fa.CellKField[wpfloat],
    coeff2_dwdz: fa.CellKField[wpfloat],
    ddxn_z_half_e: fa.EdgeKField[wpfloat],
    ddxt_z_half_e: fa.EdgeKField[wpfloat],
    z_theta_v_pr_ic: fa.CellKField[vpfloat],
    theta_v_ic: fa.CellKField[wpfloat],
    z_th_ddz_exner_c: fa.CellKField[vpfloat],
    z_theta_v_pr_ic_2: fa.CellKField[vpfloat],
    theta_v_ic_2: fa.CellKField[wpfloat],
    z_th_ddz_exner_c_2: fa.CellKField[vpfloat],
    mass_fl_e: fa.EdgeKField[wpfloat],
    z_theta_v_fl_e: fa.EdgeKField[wpfloat],
    vn_diffused: fa.EdgeKField[wpfloat],
    w_diffused: fa.CellKField[wpfloat],
    vn_on_half_levels: fa.CellKField[wpfloat],
    nabla2_psi_c: fa.CellKField[wpfloat],
    theta_vp: fa.CellKField[vpfloat],
    coeff: wpfloat,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_coeff_dwdz(
        ddqz_z_full, z_ifc, out=(coeff1_dwdz, coeff2_dwdz),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    grad_fd_norm(
        z_ifc, inv_dual_edge_length, out=ddxn_z_half_e,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_ddxt_z_half_e(
        z_ifc, c_int, inv_primal_edge_length, tangent_orientation, out=ddxt_z_half_e,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_virtual_potential_temperatures_and_pressure_gradient(
        wgtfac_c=wgtfac_c, z_rth_pr_2=z_rth_pr_2, theta_v=theta_v,
        vwind_expl_wgt=vwind_expl_wgt, exner_pr=exner_pr,
        d_exner_dz_ref_ic=d_exner_dz_ref_ic, ddqz_z_half=ddqz_z_half,
        out=(z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_virtual_potential_temperatures(
        wgtfac_c, z_rth_pr_2, theta_v, out=(z_theta_v_pr_ic_2, theta_v_ic_2),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_pressure_gradient(
        vwind_expl_wgt, theta_v_ic_2, theta_v, exner_pr, d_exner_dz_ref_ic, ddqz_z_half,
        out=z_th_ddz_exner_c_2,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_mass_and_temperature_flux(
        z_rho_e, z_vn_avg, ddqz_z_full_e, theta_v_e, out=(mass_fl_e, z_theta_v_fl_e),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_vertical_diffusion_to_vn(
        vn, ddqz_z_half_e, ddqz_z_full_e, coeff, out=vn_diffused,
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    _apply_vertical_diffusion_to_w(
        w, ddqz_z_half, ddqz_z_full_vp, coeff, out=w_diffused,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _interpolate_edge_field_to_cell_half_levels(
        vn, e_bln_c_s, wgtfac_c_wp, out=vn_on_half_levels,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_nabla2_on_cell_k(
        psi_c=theta_v, geofac_n2s=geofac_n2s, out=nabla2_psi_c,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _copy_cell_kdim_field_to_vp(
        theta_v, out=theta_vp,
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_metrics_and_nonhydro_pieces(backend):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 0, NE - 1, 1, NLEV - 1
    e2c, e2v, v2c = TABLES["E2C"], TABLES["E2V"], TABLES["V2C"]
    c2e, c2e2co = TABLES["C2E"], TABLES["C2E2CO"]
    a = dict(
        ddqz_z_full=RNG.uniform(50.0, 200.0, (NC, NLEV)),
        z_ifc=np.cumsum(RNG.uniform(50.0, 200.0, (NC, NLEV)), axis=1)[:, ::-1].copy(),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE), c_int=RNG.random((NV, 6)),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        wgtfac_c=f32(NC, NLEV), z_rth_pr_2=f32(NC, NLEV),
        theta_v=RNG.uniform(280.0, 320.0, (NC, NLEV)), vwind_expl_wgt=RNG.random(NC),
        exner_pr=RNG.standard_normal((NC, NLEV)) * 1e-3,
        d_exner_dz_ref_ic=(f32(NC, NLEV) * np.float32(1e-4)),
        ddqz_z_half=(f32(NC, NLEV) * np.float32(100.0) + np.float32(50.0)),
        z_rho_e=RNG.uniform(0.5, 1.5, (NE, NLEV)), z_vn_avg=RNG.standard_normal((NE, NLEV)),
        ddqz_z_full_e=(f32(NE, NLEV) * np.float32(100.0) + np.float32(50.0)),
        ddqz_z_half_e=(f32(NE, NLEV) * np.float32(100.0) + np.float32(50.0)),
        theta_v_e=RNG.uniform(280.0, 320.0, (NE, NLEV)), e_bln_c_s=RNG.random((NC, 3)),
        wgtfac_c_wp=RNG.random((NC, NLEV)), geofac_n2s=RNG.standard_normal((NC, 4)),
        ddqz_z_full_vp=(f32(NC, NLEV) * np.float32(100.0) + np.float32(50.0)),
        vn=RNG.standard_normal((NE, NLEV)), w=RNG.standard_normal((NC, NLEV)))
    base = dict(
        coeff1_dwdz=RNG.random((NC, NLEV)), coeff2_dwdz=RNG.random((NC, NLEV)),
        ddxn_z_half_e=RNG.random((NE, NLEV)), ddxt_z_half_e=RNG.random((NE, NLEV)),
        z_theta_v_pr_ic=f32(NC, NLEV), theta_v_ic=RNG.random((NC, NLEV)),
        z_th_ddz_exner_c=f32(NC, NLEV), z_theta_v_pr_ic_2=f32(NC, NLEV),
        theta_v_ic_2=RNG.random((NC, NLEV)), z_th_ddz_exner_c_2=f32(NC, NLEV),
        mass_fl_e=RNG.random((NE, NLEV)), z_theta_v_fl_e=RNG.random((NE, NLEV)),
        vn_diffused=RNG.random((NE, NLEV)), w_diffused=RNG.random((NC, NLEV)),
        vn_on_half_levels=RNG.random((NC, NLEV)), nabla2_psi_c=RNG.random((NC, NLEV)),
        theta_vp=f32(NC, NLEV))
    got = {k: v.copy() for k, v in base.items()}
    coeff = 0.7
    metrics_and_nonhydro_pieces(
        **a, **got, coeff=coeff, cell_start=cs, cell_end=ce, edge_start=es, edge_end=ee,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    dz, z = a["ddqz_z_full"], a["z_ifc"]
    two_layers = shifted(z, -1) - shifted(z, 1)
    c1 = dz / shifted(dz, -1) / two_layers
    c2 = shifted(dz, -1) / dz / two_layers
    ddxn = (z[e2c[:, 1]] - z[e2c[:, 0]]) * a["inv_dual_edge_length"][:, None]
    z_v = np.einsum("vn,vnk->vk", a["c_int"], z[v2c])
    ddxt = (a["tangent_orientation"][:, None] * (z_v[e2v[:, 1]] - z_v[e2v[:, 0]])
            * a["inv_primal_edge_length"][:, None])
    wgt32, pr32 = a["wgtfac_c"], a["z_rth_pr_2"]
    pr_ic = (wgt32 * pr32 + (np.float32(1.0) - wgt32) * shifted(pr32, -1).astype(np.float32))
    wgt = wgt32.astype(np.float64)
    th = a["theta_v"]
    th_ic = wgt * th + (1.0 - wgt) * shifted(th, -1)
    dexner = a["exner_pr"]
    expl = a["vwind_expl_wgt"][:, None] * th_ic * (shifted(dexner, -1) - dexner)
    grad1 = expl / a["ddqz_z_half"] + (pr_ic * a["d_exner_dz_ref_ic"]).astype(np.float64)
    grad2 = expl / a["ddqz_z_half"] + th * a["d_exner_dz_ref_ic"].astype(np.float64)
    mass = a["z_rho_e"] * a["z_vn_avg"] * a["ddqz_z_full_e"].astype(np.float64)
    vn, he, fe = a["vn"], a["ddqz_z_half_e"].astype(np.float64), a["ddqz_z_full_e"]
    vn_new = vn + coeff * ((shifted(vn, -1) - vn) / he - (vn - shifted(vn, 1)) / shifted(he, 1)
                           ) / fe.astype(np.float64)
    w, fc = a["w"], a["ddqz_z_full_vp"].astype(np.float64)
    w_new = w + coeff * ((shifted(w, -1) - w) / shifted(fc, -1) - (w - shifted(w, 1)) / fc
                         ) / a["ddqz_z_half"].astype(np.float64)
    vn_c = np.einsum("cn,cnk->ck", a["e_bln_c_s"], vn[c2e])
    vn_half = a["wgtfac_c_wp"] * vn_c + (1.0 - a["wgtfac_c_wp"]) * shifted(vn_c, -1)
    nabla2 = np.einsum("cn,cnk->ck", a["geofac_n2s"], th[c2e2co])

    def cells(value, name):
        return inside(value, base[name], cs, ce, vs, ve)

    def edges(value, name):
        return inside(value, base[name], es, ee, vs, ve)

    check(got, dict(
        coeff1_dwdz=cells(c1, "coeff1_dwdz"), coeff2_dwdz=cells(c2, "coeff2_dwdz"),
        ddxn_z_half_e=edges(ddxn, "ddxn_z_half_e"), ddxt_z_half_e=edges(ddxt, "ddxt_z_half_e"),
        theta_v_ic=cells(th_ic, "theta_v_ic"), theta_v_ic_2=cells(th_ic, "theta_v_ic_2"),
        mass_fl_e=edges(mass, "mass_fl_e"),
        z_theta_v_fl_e=edges(mass * a["theta_v_e"], "z_theta_v_fl_e"),
        vn_diffused=edges(vn_new, "vn_diffused"), w_diffused=cells(w_new, "w_diffused"),
        vn_on_half_levels=cells(vn_half, "vn_on_half_levels"),
        nabla2_psi_c=cells(nabla2, "nabla2_psi_c")), rtol=1e-10, atol=1e-12)
    check(got, dict(
        z_theta_v_pr_ic=cells(pr_ic, "z_theta_v_pr_ic"),
        z_theta_v_pr_ic_2=cells(pr_ic, "z_theta_v_pr_ic_2"),
        z_th_ddz_exner_c=cells(grad1.astype(np.float32), "z_th_ddz_exner_c"),
        z_th_ddz_exner_c_2=cells(grad2.astype(np.float32), "z_th_ddz_exner_c_2"),
        theta_vp=cells(th.astype(np.float32), "theta_vp")), rtol=2e-6, atol=1e-9)


# ================================================================== turbulence diagnostics
#
# icon4py's tmx diagnostics (the Smagorinsky model): the velocity gradient
# tensor at edges as a tuple of three tuples of three fields, the tensor
# helpers taking such tuples as parameters, the strain rate gathered to cell
# half levels, the mixing length and the eddy viscosity with the Louis
# stability function chosen by three ``bool`` scalars in nested ``if``.

Vec3OnEdges = tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]
Mat3OnEdges = tuple[Vec3OnEdges, Vec3OnEdges, Vec3OnEdges]


@gtx.field_operator
def transpose_on_edges(m: Mat3OnEdges) -> Mat3OnEdges:
    return (
        (m[0][0], m[1][0], m[2][0]),
        (m[0][1], m[1][1], m[2][1]),
        (m[0][2], m[1][2], m[2][2]),
    )


@gtx.field_operator
def add_on_edges(a: Mat3OnEdges, b: Mat3OnEdges) -> Mat3OnEdges:
    row_0 = (a[0][0] + b[0][0], a[0][1] + b[0][1], a[0][2] + b[0][2])
    row_1 = (a[1][0] + b[1][0], a[1][1] + b[1][1], a[1][2] + b[1][2])
    row_2 = (a[2][0] + b[2][0], a[2][1] + b[2][1], a[2][2] + b[2][2])
    return row_0, row_1, row_2


@gtx.field_operator
def trace_on_edges(m: Mat3OnEdges) -> fa.EdgeKField[wpfloat]:
    return m[0][0] + m[1][1] + m[2][2]


@gtx.field_operator
def diagonal_on_edges(m: Mat3OnEdges) -> Vec3OnEdges:
    return (m[0][0], m[1][1], m[2][2])


@gtx.field_operator
def upper_offdiagonal_on_edges(m: Mat3OnEdges) -> Vec3OnEdges:
    return (m[0][1], m[0][2], m[1][2])


@gtx.field_operator
def dot_on_edges(a: Vec3OnEdges, b: Vec3OnEdges) -> fa.EdgeKField[wpfloat]:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@gtx.field_operator
def twice_symmetric_part_on_edges(m: Mat3OnEdges) -> Mat3OnEdges:
    return add_on_edges(m, transpose_on_edges(m))


@gtx.field_operator
def squared_norm_of_symmetric_on_edges(m: Mat3OnEdges) -> fa.EdgeKField[wpfloat]:
    diagonal = diagonal_on_edges(m)
    upper = upper_offdiagonal_on_edges(m)
    return dot_on_edges(diagonal, diagonal) + wpfloat("2.0") * dot_on_edges(upper, upper)


@gtx.field_operator
def _compute_velocity_gradient_tensor(
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    vn_ie: fa.EdgeKHalfField[wpfloat],
    vt_ie: fa.EdgeKHalfField[wpfloat],
    w_ie: fa.EdgeKHalfField[wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
) -> Mat3OnEdges:
    # Rows: velocity component (normal, tangential, vertical); columns: the
    # derivative along the normal, the tangent and the vertical.
    vn_vert = u_vert(E2C2V) * primal_normal_vert_x + v_vert(E2C2V) * primal_normal_vert_y
    vt_vert = u_vert(E2C2V) * dual_normal_vert_x + v_vert(E2C2V) * dual_normal_vert_y
    w_c0 = wpfloat("0.5") * (w(E2C[0])(KDim - 0.5) + w(E2C[0])(KDim + 0.5))
    w_c1 = wpfloat("0.5") * (w(E2C[1])(KDim - 0.5) + w(E2C[1])(KDim + 0.5))
    w_v0 = wpfloat("0.5") * (w_vert(E2C2V[0])(KDim - 0.5) + w_vert(E2C2V[0])(KDim + 0.5))
    w_v1 = wpfloat("0.5") * (w_vert(E2C2V[1])(KDim - 0.5) + w_vert(E2C2V[1])(KDim + 0.5))
    along_tangent = tangent_orientation * inv_primal_edge_length
    d_vn = (
        (vn_vert[E2C2VDim(3)] - vn_vert[E2C2VDim(2)]) * inv_vert_vert_length,
        (vn_vert[E2C2VDim(1)] - vn_vert[E2C2VDim(0)]) * along_tangent,
        (vn_ie(KDim - 0.5) - vn_ie(KDim + 0.5)) * inv_ddqz_z_full_e,
    )
    d_vt = (
        (vt_vert[E2C2VDim(3)] - vt_vert[E2C2VDim(2)]) * inv_vert_vert_length,
        (vt_vert[E2C2VDim(1)] - vt_vert[E2C2VDim(0)]) * along_tangent,
        (vt_ie(KDim - 0.5) - vt_ie(KDim + 0.5)) * inv_ddqz_z_full_e,
    )
    d_w = (
        (w_c1 - w_c0) * inv_dual_edge_length,
        (w_v1 - w_v0) * along_tangent,
        (w_ie(KDim - 0.5) - w_ie(KDim + 0.5)) * inv_ddqz_z_full_e,
    )
    return d_vn, d_vt, d_w


@gtx.field_operator
def _compute_shear_and_div_of_stress(
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    vn_ie: fa.EdgeKHalfField[wpfloat],
    vt_ie: fa.EdgeKHalfField[wpfloat],
    w_ie: fa.EdgeKHalfField[wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    gradient = _compute_velocity_gradient_tensor(
        u_vert, v_vert, w_vert, w, vn_ie, vt_ie, w_ie, primal_normal_vert_x,
        primal_normal_vert_y, dual_normal_vert_x, dual_normal_vert_y, tangent_orientation,
        inv_primal_edge_length, inv_vert_vert_length, inv_dual_edge_length, inv_ddqz_z_full_e)
    shear = squared_norm_of_symmetric_on_edges(twice_symmetric_part_on_edges(gradient))
    return shear, trace_on_edges(gradient)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_on_half_levels(
    wgtfac_c: fa.CellKHalfField[wpfloat], interpolant: fa.CellKField[wpfloat]
) -> fa.CellKHalfField[wpfloat]:
    return wgtfac_c * interpolant(KHalfDim + 0.5) + (wpfloat("1.0") - wgtfac_c) * interpolant(
        KHalfDim - 0.5)


@gtx.field_operator
def _compute_strain_rate_diagnostics(
    shear: fa.EdgeKField[wpfloat],
    div_of_stress: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKHalfField[wpfloat]]:
    div_c = _interpolate_to_cell_center(interpolant=div_of_stress, e_bln_c_s=e_bln_c_s)
    mech_prod = _interpolate_cell_field_to_half_levels_on_half_levels(
        wgtfac_c=wgtfac_c,
        interpolant=_interpolate_to_cell_center(interpolant=shear, e_bln_c_s=e_bln_c_s),
    )
    return div_c, mech_prod


@gtx.field_operator
def _compute_smagorinsky_mixing_length(
    ddqz_z_half: fa.CellKHalfField[wpfloat],
    geopot_agl_ifc: fa.CellKHalfField[wpfloat],
    cell_area: fa.CellField[wpfloat],
    smag_constant: wpfloat,
    max_turb_scale: wpfloat,
    grav: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    kappa = PhysicsConstants.von_karman
    height = geopot_agl_ifc * (wpfloat("1.0") / grav)
    filter_width = smag_constant * minimum(
        max_turb_scale, power(ddqz_z_half * cell_area, wpfloat("0.33333")))
    return (filter_width * height) * (filter_width * height) / (
        (filter_width / kappa) * (filter_width / kappa) + height * height)


@gtx.field_operator
def _compute_scaling_factor_louis(cell_area: fa.CellField[wpfloat]) -> fa.CellField[wpfloat]:
    mean_cell_area_r2b8 = wpfloat("97294071.23714285")
    return mean_cell_area_r2b8 / cell_area


@gtx.field_operator
def _compute_stability_term_classic(
    mech_prod: fa.CellKHalfField[wpfloat],
    bruvais: fa.CellKHalfField[wpfloat],
    rturb_prandtl: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    return sqrt(maximum(wpfloat("0.0"), wpfloat("0.5") * mech_prod - rturb_prandtl * bruvais))


@gtx.field_operator
def _compute_stability_term_louis(
    mech_prod: fa.CellKHalfField[wpfloat],
    bruvais: fa.CellKHalfField[wpfloat],
    scaling_factor_louis: fa.CellField[wpfloat],
    rturb_prandtl: wpfloat,
    louis_constant_b: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    richardson = wpfloat("2.0") * bruvais / maximum(wpfloat("1.0e-28"), mech_prod)
    damping = wpfloat("1.0") / (
        wpfloat("1.0") + louis_constant_b * scaling_factor_louis * abs(richardson))
    stability_function = maximum(
        wpfloat("1.0") - richardson * rturb_prandtl,
        minimum(wpfloat("1.0"), power(damping, wpfloat("4.0"))),
    )
    return sqrt(wpfloat("0.5") * mech_prod * stability_function)


@gtx.field_operator
def with_boundaries_on_half_levels_on_cells(
    top: fa.CellKHalfField[wpfloat],
    interior: fa.CellKHalfField[wpfloat],
    bottom: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    return concat_where(
        dims.KHalfDim == 0, top, concat_where(dims.KHalfDim == nlev, bottom, interior))


@gtx.field_operator
def _compute_smagorinsky_viscosity(
    mech_prod: fa.CellKHalfField[wpfloat],
    bruvais: fa.CellKHalfField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    mixing_length_sq: fa.CellKHalfField[wpfloat],
    scaling_factor_louis: fa.CellField[wpfloat],
    fract_land: fa.CellField[wpfloat],
    fract_ice: fa.CellField[wpfloat],
    rturb_prandtl: wpfloat,
    louis_constant_b: wpfloat,
    use_louis: bool,
    use_louis_land: bool,
    use_louis_ice: bool,
    nlev: gtx.int32,
) -> tuple[fa.CellKHalfField[wpfloat], fa.CellKHalfField[wpfloat]]:
    if use_louis:
        classic = _compute_stability_term_classic(
            mech_prod=mech_prod, bruvais=bruvais, rturb_prandtl=rturb_prandtl)
        louis = _compute_stability_term_louis(
            mech_prod=mech_prod, bruvais=bruvais, scaling_factor_louis=scaling_factor_louis,
            rturb_prandtl=rturb_prandtl, louis_constant_b=louis_constant_b)
        if use_louis_land:
            if use_louis_ice:
                stability_term = louis
            else:
                stability_term = where(fract_ice > wpfloat("0.5"), classic, louis)
        else:
            if use_louis_ice:
                stability_term = where(fract_land > wpfloat("0.5"), classic, louis)
            else:
                stability_term = where(
                    (fract_land > wpfloat("0.5")) | (fract_ice > wpfloat("0.5")), classic, louis)
    else:
        stability_term = _compute_stability_term_classic(
            mech_prod=mech_prod, bruvais=bruvais, rturb_prandtl=rturb_prandtl)
    km = rho_ic * mixing_length_sq * stability_term
    km_ic = with_boundaries_on_half_levels_on_cells(
        top=km(dims.KHalfDim + 1), interior=km, bottom=km(dims.KHalfDim - 1), nlev=nlev)
    return km_ic, km_ic * rturb_prandtl


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def turbulence_diagnostics(
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    vn_ie: fa.EdgeKHalfField[wpfloat],
    vt_ie: fa.EdgeKHalfField[wpfloat],
    w_ie: fa.EdgeKHalfField[wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    ddqz_z_half: fa.CellKHalfField[wpfloat],
    geopot_agl_ifc: fa.CellKHalfField[wpfloat],
    cell_area: fa.CellField[wpfloat],
    bruvais: fa.CellKHalfField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    fract_land: fa.CellField[wpfloat],
    fract_ice: fa.CellField[wpfloat],
    shear: fa.EdgeKField[wpfloat],
    div_of_stress: fa.EdgeKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    mech_prod: fa.CellKHalfField[wpfloat],
    mixing_length_sq: fa.CellKHalfField[wpfloat],
    scaling_factor_louis: fa.CellField[wpfloat],
    km_ic: fa.CellKHalfField[wpfloat],
    kh_ic: fa.CellKHalfField[wpfloat],
    smag_constant: wpfloat,
    max_turb_scale: wpfloat,
    grav: wpfloat,
    rturb_prandtl: wpfloat,
    louis_constant_b: wpfloat,
    use_louis: bool,
    use_louis_land: bool,
    use_louis_ice: bool,
    nlev: gtx.int32,
    cell_start: gtx.int32,
    cell_end: gtx.int32,
    edge_start: gtx.int32,
    edge_end: gtx.int32,
) -> None:
    _compute_shear_and_div_of_stress(
        u_vert, v_vert, w_vert, w, vn_ie, vt_ie, w_ie, primal_normal_vert_x,
        primal_normal_vert_y, dual_normal_vert_x, dual_normal_vert_y, tangent_orientation,
        inv_primal_edge_length, inv_vert_vert_length, inv_dual_edge_length, inv_ddqz_z_full_e,
        out=(shear, div_of_stress),
        domain={dims.EdgeDim: (edge_start, edge_end), dims.KDim: (0, nlev)})
    _compute_strain_rate_diagnostics(
        shear=shear, div_of_stress=div_of_stress, e_bln_c_s=e_bln_c_s, wgtfac_c=wgtfac_c,
        out=(div_c, mech_prod),
        domain=(
            {dims.CellDim: (cell_start, cell_end), dims.KDim: (0, nlev)},
            {dims.CellDim: (cell_start, cell_end), dims.KHalfDim: (1, nlev)},
        ))
    _compute_smagorinsky_mixing_length(
        ddqz_z_half=ddqz_z_half, geopot_agl_ifc=geopot_agl_ifc, cell_area=cell_area,
        smag_constant=smag_constant, max_turb_scale=max_turb_scale, grav=grav,
        out=mixing_length_sq,
        domain={dims.CellDim: (cell_start, cell_end), dims.KHalfDim: (0, nlev + 1)})
    _compute_scaling_factor_louis(
        cell_area=cell_area, out=scaling_factor_louis,
        domain={dims.CellDim: (cell_start, cell_end)})
    _compute_smagorinsky_viscosity(
        mech_prod, bruvais, rho_ic, mixing_length_sq, scaling_factor_louis, fract_land,
        fract_ice, rturb_prandtl, louis_constant_b, use_louis, use_louis_land, use_louis_ice,
        nlev, out=(km_ic, kh_ic),
        domain={dims.CellDim: (cell_start, cell_end), dims.KHalfDim: (0, nlev + 1)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_turbulence_diagnostics(backend):
    cs, ce, es, ee = 1, NC - 1, 0, NE
    e2c, e2c2v, c2e = TABLES["E2C"], TABLES["E2C2V"], TABLES["C2E"]
    nh = NLEV + 1
    a = dict(
        u_vert=RNG.standard_normal((NV, NLEV)), v_vert=RNG.standard_normal((NV, NLEV)),
        w_vert=RNG.standard_normal((NV, nh)), w=RNG.standard_normal((NC, nh)),
        vn_ie=RNG.standard_normal((NE, nh)), vt_ie=RNG.standard_normal((NE, nh)),
        w_ie=RNG.standard_normal((NE, nh)),
        primal_normal_vert_x=RNG.standard_normal((NE, 4)),
        primal_normal_vert_y=RNG.standard_normal((NE, 4)),
        dual_normal_vert_x=RNG.standard_normal((NE, 4)),
        dual_normal_vert_y=RNG.standard_normal((NE, 4)),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_vert_vert_length=RNG.uniform(0.5, 2.0, NE),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_ddqz_z_full_e=RNG.uniform(0.5, 2.0, (NE, NLEV)), e_bln_c_s=RNG.random((NC, 3)),
        wgtfac_c=RNG.random((NC, nh)), ddqz_z_half=RNG.uniform(20.0, 200.0, (NC, nh)),
        geopot_agl_ifc=RNG.uniform(0.0, 2e5, (NC, nh)),
        cell_area=RNG.uniform(1e9, 1e10, NC), bruvais=RNG.standard_normal((NC, nh)) * 5.0,
        rho_ic=RNG.uniform(0.5, 1.5, (NC, nh)), fract_land=RNG.random(NC),
        fract_ice=RNG.random(NC))
    s = dict(smag_constant=0.23, max_turb_scale=300.0, grav=9.80665, rturb_prandtl=1.0 / 0.7,
             louis_constant_b=4.2)
    base = dict(
        shear=RNG.random((NE, NLEV)), div_of_stress=RNG.random((NE, NLEV)),
        div_c=RNG.random((NC, NLEV)), mech_prod=RNG.random((NC, nh)),
        mixing_length_sq=RNG.random((NC, nh)), scaling_factor_louis=RNG.random(NC),
        km_ic=RNG.random((NC, nh)), kh_ic=RNG.random((NC, nh)))

    def full(x):
        """A half-level field averaged to full levels."""
        return 0.5 * (x[:, :-1] + x[:, 1:])

    def d_dz(x):
        return (x[:, :-1] - x[:, 1:]) * a["inv_ddqz_z_full_e"]

    along = (a["tangent_orientation"] * a["inv_primal_edge_length"])[:, None]
    across = a["inv_vert_vert_length"][:, None]
    u_v, v_v = a["u_vert"][e2c2v], a["v_vert"][e2c2v]
    vn_v = u_v * a["primal_normal_vert_x"][..., None] + v_v * a["primal_normal_vert_y"][..., None]
    vt_v = u_v * a["dual_normal_vert_x"][..., None] + v_v * a["dual_normal_vert_y"][..., None]
    w_c, w_v = full(a["w"]), full(a["w_vert"])
    gradient = np.array([
        [(vn_v[:, 3] - vn_v[:, 2]) * across, (vn_v[:, 1] - vn_v[:, 0]) * along, d_dz(a["vn_ie"])],
        [(vt_v[:, 3] - vt_v[:, 2]) * across, (vt_v[:, 1] - vt_v[:, 0]) * along, d_dz(a["vt_ie"])],
        [(w_c[e2c[:, 1]] - w_c[e2c[:, 0]]) * a["inv_dual_edge_length"][:, None],
         (w_v[e2c2v[:, 1]] - w_v[e2c2v[:, 0]]) * along, d_dz(a["w_ie"])]])
    strain = gradient + gradient.transpose(1, 0, 2, 3)
    shear = (strain ** 2).sum(axis=(0, 1))
    div = np.trace(gradient)
    div_c = np.einsum("cn,cnk->ck", a["e_bln_c_s"], div[c2e])
    shear_c = np.einsum("cn,cnk->ck", a["e_bln_c_s"], shear[c2e])
    mech_prod = np.array(base["mech_prod"])
    wgt = a["wgtfac_c"][:, 1:NLEV]
    mech_prod[:, 1:NLEV] = wgt * shear_c[:, 1:] + (1.0 - wgt) * shear_c[:, :-1]
    height = a["geopot_agl_ifc"] / s["grav"]
    width = s["smag_constant"] * np.minimum(
        s["max_turb_scale"], (a["ddqz_z_half"] * a["cell_area"][:, None]) ** 0.33333)
    mixing = (width * height) ** 2 / ((width / 0.4) ** 2 + height ** 2)
    louis_scale = 97294071.23714285 / a["cell_area"]
    rtp, bv = s["rturb_prandtl"], a["bruvais"]
    classic = np.sqrt(np.maximum(0.0, 0.5 * mech_prod - rtp * bv))
    ri = 2.0 * bv / np.maximum(1e-28, mech_prod)
    louis = np.sqrt(0.5 * mech_prod * np.maximum(
        1.0 - ri * rtp,
        np.minimum(1.0, (1.0 / (1.0 + s["louis_constant_b"] * louis_scale[:, None]
                                * np.abs(ri))) ** 4)))
    land, ice = (a["fract_land"] > 0.5)[:, None], (a["fract_ice"] > 0.5)[:, None]

    for flags in [(True, True, True), (True, True, False), (True, False, True),
                  (True, False, False), (False, True, False)]:
        got = {k: v.copy() for k, v in base.items()}
        turbulence_diagnostics(
            **a, **got, **s, use_louis=flags[0], use_louis_land=flags[1],
            use_louis_ice=flags[2], nlev=NLEV, cell_start=cs, cell_end=ce, edge_start=es,
            edge_end=ee, offset_provider=TABLES, backend=backend)
        use_louis, on_land, on_ice = flags
        classic_here = (land & (not on_land)) | (ice & (not on_ice))
        stability = np.where(classic_here, classic, louis) if use_louis else classic
        km = a["rho_ic"] * mixing * stability
        km[:, 0], km[:, NLEV] = km[:, 1], km[:, NLEV - 1]
        cells = np.arange(NC)[:, None]
        inner = (cells >= cs) & (cells < ce)
        check(got, dict(
            shear=shear, div_of_stress=div,
            div_c=np.where(inner, div_c, base["div_c"]),
            mech_prod=np.where(inner, mech_prod, base["mech_prod"]),
            mixing_length_sq=np.where(inner, mixing, base["mixing_length_sq"]),
            scaling_factor_louis=np.where(inner[:, 0], louis_scale,
                                          base["scaling_factor_louis"]),
            km_ic=np.where(inner, km, base["km_ic"]),
            kh_ic=np.where(inner, km * rtp, base["kh_ic"])), rtol=1e-10, atol=1e-12)


# ========================================================= edge and thermodynamic diagnostics
#
# The rest of icon4py's tmx diagnostics: the winds at edge half levels (the
# tangential one from the normal one through ``E2C2E``) with the shear, and
# the thermodynamic cell diagnostics, each output written on its own domain
# of a tuple of domains, narrower than where the others read it.


@gtx.field_operator
def extrapolate_quadratically_to_top_on_edges(
    interpolant: fa.EdgeKField[wpfloat], weights: fa.EdgeKField[wpfloat]
) -> fa.EdgeKHalfField[wpfloat]:
    return (weights(KHalfDim + 0.5) * interpolant(KHalfDim + 0.5)
            + weights(KHalfDim + 1.5) * interpolant(KHalfDim + 1.5)
            + weights(KHalfDim + 2.5) * interpolant(KHalfDim + 2.5))


@gtx.field_operator
def extrapolate_quadratically_to_surface_on_edges(
    interpolant: fa.EdgeKField[wpfloat], weights: fa.EdgeKField[wpfloat]
) -> fa.EdgeKHalfField[wpfloat]:
    return (weights(KHalfDim - 0.5) * interpolant(KHalfDim - 0.5)
            + weights(KHalfDim - 1.5) * interpolant(KHalfDim - 1.5)
            + weights(KHalfDim - 2.5) * interpolant(KHalfDim - 2.5))


@gtx.field_operator
def extrapolate_quadratically_to_top_on_cells(
    interpolant: fa.CellKField[wpfloat], weights: fa.CellKField[wpfloat]
) -> fa.CellKHalfField[wpfloat]:
    return (weights(KHalfDim + 0.5) * interpolant(KHalfDim + 0.5)
            + weights(KHalfDim + 1.5) * interpolant(KHalfDim + 1.5)
            + weights(KHalfDim + 2.5) * interpolant(KHalfDim + 2.5))


@gtx.field_operator
def extrapolate_quadratically_to_surface_on_cells(
    interpolant: fa.CellKField[wpfloat], weights: fa.CellKField[wpfloat]
) -> fa.CellKHalfField[wpfloat]:
    return (weights(KHalfDim - 0.5) * interpolant(KHalfDim - 0.5)
            + weights(KHalfDim - 1.5) * interpolant(KHalfDim - 1.5)
            + weights(KHalfDim - 2.5) * interpolant(KHalfDim - 2.5))


@gtx.field_operator
def with_boundaries_on_half_levels_on_edges(
    top: fa.EdgeKHalfField[wpfloat],
    interior: fa.EdgeKHalfField[wpfloat],
    bottom: fa.EdgeKHalfField[wpfloat],
    nlev: gtx.int32,
) -> fa.EdgeKHalfField[wpfloat]:
    inner = concat_where((dims.KHalfDim > 0) & (dims.KHalfDim < nlev), interior, bottom)
    return concat_where(dims.KHalfDim == 0, top, inner)


@gtx.field_operator
def _cell_2_edge_interpolation_on_half_levels(
    in_field: fa.CellKHalfField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=E2CDim)


@gtx.field_operator
def _interpolate_edge_field_to_half_levels_with_boundaries(
    interpolant: fa.EdgeKField[wpfloat],
    wgtfac_e: fa.EdgeKHalfField[wpfloat],
    wgtfacq1_e: fa.EdgeKField[wpfloat],
    wgtfacq_e: fa.EdgeKField[wpfloat],
    nlev: gtx.int32,
) -> fa.EdgeKHalfField[wpfloat]:
    interior = wgtfac_e * interpolant(KHalfDim + 0.5) + (1.0 - wgtfac_e) * interpolant(
        KHalfDim - 0.5)
    return with_boundaries_on_half_levels_on_edges(
        top=extrapolate_quadratically_to_top_on_edges(interpolant, wgtfacq1_e),
        interior=interior,
        bottom=extrapolate_quadratically_to_surface_on_edges(interpolant, wgtfacq_e),
        nlev=nlev,
    )


@gtx.field_operator
def _compute_tangential_wind_on_half_levels(
    vn: fa.EdgeKHalfField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    return neighbor_sum(rbf_vec_coeff_e * vn(E2C2E), axis=E2C2EDim)


@gtx.field_operator
def _compute_edge_shear_diagnostics(
    w: fa.CellKHalfField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    wgtfac_e: fa.EdgeKHalfField[wpfloat],
    wgtfacq1_e: fa.EdgeKField[wpfloat],
    wgtfacq_e: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
    nlev: gtx.int32,
) -> tuple[
    fa.EdgeKHalfField[wpfloat],
    fa.EdgeKHalfField[wpfloat],
    fa.EdgeKHalfField[wpfloat],
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
]:
    w_ie = _cell_2_edge_interpolation_on_half_levels(w, c_lin_e)
    vn_ie = _interpolate_edge_field_to_half_levels_with_boundaries(
        interpolant=vn, wgtfac_e=wgtfac_e, wgtfacq1_e=wgtfacq1_e, wgtfacq_e=wgtfacq_e,
        nlev=nlev)
    vt_ie = _compute_tangential_wind_on_half_levels(vn=vn_ie, rbf_vec_coeff_e=rbf_vec_coeff_e)
    shear, div_of_stress = _compute_shear_and_div_of_stress(
        u_vert=u_vert, v_vert=v_vert, w_vert=w_vert, w=w, vn_ie=vn_ie, vt_ie=vt_ie,
        w_ie=w_ie, primal_normal_vert_x=primal_normal_vert_x,
        primal_normal_vert_y=primal_normal_vert_y, dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y, tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length, inv_dual_edge_length=inv_dual_edge_length,
        inv_ddqz_z_full_e=inv_ddqz_z_full_e)
    return w_ie, vn_ie, vt_ie, shear, div_of_stress


@gtx.field_operator
def _compute_dry_static_energy(
    temperature: fa.CellKField[wpfloat],
    height_above_ground: fa.CellKField[wpfloat],
    grav: wpfloat,
) -> fa.CellKField[wpfloat]:
    return PhysicsConstants.cpd * temperature + grav * height_above_ground


@gtx.field_operator
def _compute_virtual_potential_temperature(
    virtual_temperature: fa.CellKField[wpfloat],
    pressure: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return virtual_temperature * power(PhysicsConstants.p0ref / pressure,
                                       PhysicsConstants.rd_o_cpd)


@gtx.field_operator
def _compute_brunt_vaisala_frequency(
    theta_v: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    grav: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    theta_v_ic = _interpolate_cell_field_to_half_levels_on_half_levels(
        wgtfac_c=wgtfac_c, interpolant=theta_v)
    return grav * (theta_v(KHalfDim - 0.5) - theta_v(KHalfDim + 0.5)) * inv_ddqz_z_half / (
        theta_v_ic)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_with_boundaries(
    interpolant: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    wgtfacq1_c: fa.CellKField[wpfloat],
    wgtfacq_c: fa.CellKField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    return with_boundaries_on_half_levels_on_cells(
        top=extrapolate_quadratically_to_top_on_cells(interpolant=interpolant, weights=wgtfacq1_c),
        interior=_interpolate_cell_field_to_half_levels_on_half_levels(
            wgtfac_c=wgtfac_c, interpolant=interpolant),
        bottom=extrapolate_quadratically_to_surface_on_cells(
            interpolant=interpolant, weights=wgtfacq_c),
        nlev=nlev,
    )


@gtx.field_operator
def _compute_thermodynamic_diagnostics(
    temperature: fa.CellKField[wpfloat],
    virtual_temperature: fa.CellKField[wpfloat],
    pressure: fa.CellKField[wpfloat],
    rho: fa.CellKField[wpfloat],
    height_above_ground: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    wgtfacq1_c: fa.CellKField[wpfloat],
    wgtfacq_c: fa.CellKField[wpfloat],
    grav: wpfloat,
    nlev: gtx.int32,
) -> tuple[
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKHalfField[wpfloat],
    fa.CellKHalfField[wpfloat],
]:
    theta_v = _compute_virtual_potential_temperature(
        virtual_temperature=virtual_temperature, pressure=pressure)
    return (
        _compute_dry_static_energy(temperature, height_above_ground, grav),
        theta_v,
        _interpolate_cell_field_to_half_levels_with_boundaries(
            rho, wgtfac_c, wgtfacq1_c, wgtfacq_c, nlev),
        _compute_brunt_vaisala_frequency(
            theta_v=theta_v, wgtfac_c=wgtfac_c, inv_ddqz_z_half=inv_ddqz_z_half, grav=grav),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def edge_and_thermodynamic_diagnostics(
    w: fa.CellKHalfField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    w_vert: fa.VertexKHalfField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    wgtfac_e: fa.EdgeKHalfField[wpfloat],
    wgtfacq1_e: fa.EdgeKField[wpfloat],
    wgtfacq_e: fa.EdgeKField[wpfloat],
    rbf_vec_coeff_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2EDim], wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
    temperature: fa.CellKField[wpfloat],
    virtual_temperature: fa.CellKField[wpfloat],
    pressure: fa.CellKField[wpfloat],
    rho: fa.CellKField[wpfloat],
    height_above_ground: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKHalfField[wpfloat],
    inv_ddqz_z_half: fa.CellKHalfField[wpfloat],
    wgtfacq1_c: fa.CellKField[wpfloat],
    wgtfacq_c: fa.CellKField[wpfloat],
    w_ie: fa.EdgeKHalfField[wpfloat],
    vn_ie: fa.EdgeKHalfField[wpfloat],
    vt_ie: fa.EdgeKHalfField[wpfloat],
    shear: fa.EdgeKField[wpfloat],
    div_of_stress: fa.EdgeKField[wpfloat],
    dry_static_energy: fa.CellKField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    rho_ic: fa.CellKHalfField[wpfloat],
    bruvais: fa.CellKHalfField[wpfloat],
    grav: wpfloat,
    nlev: gtx.int32,
    edge_start_2: gtx.int32,
    edge_start_3: gtx.int32,
    edge_end_2: gtx.int32,
    edge_end_3: gtx.int32,
    cell_start_1: gtx.int32,
    cell_start_2: gtx.int32,
    cell_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
    vertical_end_half: gtx.int32,
) -> None:
    _compute_edge_shear_diagnostics(
        w=w, vn=vn, u_vert=u_vert, v_vert=v_vert, w_vert=w_vert, c_lin_e=c_lin_e,
        wgtfac_e=wgtfac_e, wgtfacq1_e=wgtfacq1_e, wgtfacq_e=wgtfacq_e,
        rbf_vec_coeff_e=rbf_vec_coeff_e, primal_normal_vert_x=primal_normal_vert_x,
        primal_normal_vert_y=primal_normal_vert_y, dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y, tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length, inv_dual_edge_length=inv_dual_edge_length,
        inv_ddqz_z_full_e=inv_ddqz_z_full_e, nlev=nlev,
        out=(w_ie, vn_ie, vt_ie, shear, div_of_stress),
        domain=(
            {dims.EdgeDim: (edge_start_2, edge_end_2),
             dims.KHalfDim: (vertical_start, vertical_end_half)},
            {dims.EdgeDim: (edge_start_2, edge_end_3),
             dims.KHalfDim: (vertical_start, vertical_end_half)},
            {dims.EdgeDim: (edge_start_3, edge_end_2),
             dims.KHalfDim: (vertical_start, vertical_end_half)},
            {dims.EdgeDim: (0, edge_end_2), dims.KDim: (vertical_start, vertical_end)},
            {dims.EdgeDim: (0, edge_end_2), dims.KDim: (vertical_start, vertical_end)},
        ))
    _compute_thermodynamic_diagnostics(
        temperature=temperature, virtual_temperature=virtual_temperature, pressure=pressure,
        rho=rho, height_above_ground=height_above_ground, wgtfac_c=wgtfac_c,
        inv_ddqz_z_half=inv_ddqz_z_half, wgtfacq1_c=wgtfacq1_c, wgtfacq_c=wgtfacq_c,
        grav=grav, nlev=nlev,
        out=(dry_static_energy, theta_v, rho_ic, bruvais),
        domain=(
            {dims.CellDim: (cell_start_1, cell_end), dims.KDim: (vertical_start, vertical_end)},
            {dims.CellDim: (cell_start_2, cell_end), dims.KDim: (vertical_start, vertical_end)},
            {dims.CellDim: (cell_start_1, cell_end),
             dims.KHalfDim: (vertical_start, vertical_end_half)},
            {dims.CellDim: (0, cell_end), dims.KHalfDim: (1, vertical_end)},
        ))


@pytest.mark.parametrize("backend", BACKENDS)
def test_edge_and_thermodynamic_diagnostics(backend):
    nh = NLEV + 1
    e2c, e2c2v, e2c2e = TABLES["E2C"], TABLES["E2C2V"], TABLES["E2C2E"]
    a = dict(
        w=RNG.standard_normal((NC, nh)), vn=RNG.standard_normal((NE, NLEV)),
        u_vert=RNG.standard_normal((NV, NLEV)), v_vert=RNG.standard_normal((NV, NLEV)),
        w_vert=RNG.standard_normal((NV, nh)), c_lin_e=RNG.random((NE, 2)),
        wgtfac_e=RNG.random((NE, nh)), wgtfacq1_e=RNG.random((NE, NLEV)),
        wgtfacq_e=RNG.random((NE, NLEV)), rbf_vec_coeff_e=RNG.standard_normal((NE, 4)),
        primal_normal_vert_x=RNG.standard_normal((NE, 4)),
        primal_normal_vert_y=RNG.standard_normal((NE, 4)),
        dual_normal_vert_x=RNG.standard_normal((NE, 4)),
        dual_normal_vert_y=RNG.standard_normal((NE, 4)),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_vert_vert_length=RNG.uniform(0.5, 2.0, NE),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_ddqz_z_full_e=RNG.uniform(0.5, 2.0, (NE, NLEV)),
        temperature=RNG.uniform(200.0, 300.0, (NC, NLEV)),
        virtual_temperature=RNG.uniform(200.0, 300.0, (NC, NLEV)),
        pressure=RNG.uniform(2e4, 1e5, (NC, NLEV)), rho=RNG.uniform(0.3, 1.3, (NC, NLEV)),
        height_above_ground=RNG.uniform(0.0, 2e4, (NC, NLEV)), wgtfac_c=RNG.random((NC, nh)),
        inv_ddqz_z_half=RNG.uniform(0.005, 0.05, (NC, nh)), wgtfacq1_c=RNG.random((NC, NLEV)),
        wgtfacq_c=RNG.random((NC, NLEV)))
    base = dict(
        w_ie=RNG.random((NE, nh)), vn_ie=RNG.random((NE, nh)), vt_ie=RNG.random((NE, nh)),
        shear=RNG.random((NE, NLEV)), div_of_stress=RNG.random((NE, NLEV)),
        dry_static_energy=RNG.random((NC, NLEV)), theta_v=RNG.random((NC, NLEV)),
        rho_ic=RNG.random((NC, nh)), bruvais=RNG.random((NC, nh)))
    got = {k: v.copy() for k, v in base.items()}
    es2, es3, ee2, ee3, cs1, cs2, ce = 1, 3, NE - 1, NE - 3, 1, 2, NC - 1
    edge_and_thermodynamic_diagnostics(
        **a, **got, grav=9.80665, nlev=NLEV, edge_start_2=es2, edge_start_3=es3,
        edge_end_2=ee2, edge_end_3=ee3, cell_start_1=cs1, cell_start_2=cs2, cell_end=ce,
        vertical_start=0, vertical_end=NLEV, vertical_end_half=nh, offset_provider=TABLES,
        backend=backend)

    def half_levels(x, wgt, top_w, bottom_w):
        out = np.empty((x.shape[0], nh))
        out[:, 1:NLEV] = wgt[:, 1:NLEV] * x[:, 1:] + (1.0 - wgt[:, 1:NLEV]) * x[:, :-1]
        out[:, 0] = (top_w[:, :3] * x[:, :3]).sum(axis=1)
        out[:, NLEV] = (bottom_w[:, -3:] * x[:, -3:]).sum(axis=1)
        return out

    w_ie = np.einsum("en,enk->ek", a["c_lin_e"], a["w"][e2c])
    vn_ie = half_levels(a["vn"], a["wgtfac_e"], a["wgtfacq1_e"], a["wgtfacq_e"])
    vt_ie = np.einsum("en,enk->ek", a["rbf_vec_coeff_e"], vn_ie[e2c2e])

    def full(x):
        return 0.5 * (x[:, :-1] + x[:, 1:])

    def d_dz(x):
        return (x[:, :-1] - x[:, 1:]) * a["inv_ddqz_z_full_e"]

    along = (a["tangent_orientation"] * a["inv_primal_edge_length"])[:, None]
    across = a["inv_vert_vert_length"][:, None]
    u_v, v_v = a["u_vert"][e2c2v], a["v_vert"][e2c2v]
    vn_v = u_v * a["primal_normal_vert_x"][..., None] + v_v * a["primal_normal_vert_y"][..., None]
    vt_v = u_v * a["dual_normal_vert_x"][..., None] + v_v * a["dual_normal_vert_y"][..., None]
    w_c, w_v = full(a["w"]), full(a["w_vert"])
    gradient = np.array([
        [(vn_v[:, 3] - vn_v[:, 2]) * across, (vn_v[:, 1] - vn_v[:, 0]) * along, d_dz(vn_ie)],
        [(vt_v[:, 3] - vt_v[:, 2]) * across, (vt_v[:, 1] - vt_v[:, 0]) * along, d_dz(vt_ie)],
        [(w_c[e2c[:, 1]] - w_c[e2c[:, 0]]) * a["inv_dual_edge_length"][:, None],
         (w_v[e2c2v[:, 1]] - w_v[e2c2v[:, 0]]) * along, d_dz(w_ie)]])
    strain = gradient + gradient.transpose(1, 0, 2, 3)
    shear = (strain ** 2).sum(axis=(0, 1))
    div = np.trace(gradient)
    dse = 1004.64 * a["temperature"] + 9.80665 * a["height_above_ground"]
    theta_v = a["virtual_temperature"] * (1e5 / a["pressure"]) ** (287.04 / 1004.64)
    rho_ic = half_levels(a["rho"], a["wgtfac_c"], a["wgtfacq1_c"], a["wgtfacq_c"])
    theta_ic = a["wgtfac_c"][:, 1:NLEV] * theta_v[:, 1:] + (
        1.0 - a["wgtfac_c"][:, 1:NLEV]) * theta_v[:, :-1]
    bruvais = np.array(base["bruvais"])
    bruvais[:, 1:NLEV] = (9.80665 * (theta_v[:, :-1] - theta_v[:, 1:])
                          * a["inv_ddqz_z_half"][:, 1:NLEV] / theta_ic)

    def rows(value, name, lo, hi):
        out = np.array(base[name])
        out[lo:hi] = value[lo:hi]
        return out

    check(got, dict(
        w_ie=rows(w_ie, "w_ie", es2, ee2), vn_ie=rows(vn_ie, "vn_ie", es2, ee3),
        vt_ie=rows(vt_ie, "vt_ie", es3, ee2), shear=rows(shear, "shear", 0, ee2),
        div_of_stress=rows(div, "div_of_stress", 0, ee2),
        dry_static_energy=rows(dse, "dry_static_energy", cs1, ce),
        theta_v=rows(theta_v, "theta_v", cs2, ce), rho_ic=rows(rho_ic, "rho_ic", cs1, ce),
        bruvais=rows(bruvais, "bruvais", 0, ce)), rtol=1e-10, atol=1e-12)
