"""A twenty-fourth round of ICON stencils (icon4py's field operators) in
icon4py's own spelling, beside ``test_icon_stencils_ported*.py``.

First the fourth-order diffusion of vn reconstructed at vertices, as a fork
of icon4py writes it: ``_rbf_nabla4`` composes ``_calculate_nabla4`` (a
``vpfloat`` pair cast with one ``astype`` of a tuple) and the RBF
reconstruction at vertices, its program writing a tuple of two vertex fields
on runtime horizontal and vertical bounds; ``_rbf_nabla4_direct`` spells the
same out by hand: the seven vertices of a ``V2E2C2V`` neighbourhood, edge
fields read through ``V2E[s]`` and sparse edge fields shifted first and
picked after (``primal_normal_vert_v1(V2E[0])[E2C2VDim(2)]``), local
coefficients picked by ``V2EDim(s)``; a ``V2E`` reduction of an ``E2C2V``
sum, written from its test's reference.
Then a structured-grid pressure gradient from the same fork: fields over
``IDim``, ``JDim`` and a third horizontal dimension ``Kolor`` (the three
edges of a structured triangle), ``concat_where`` on runtime equalities
(``JDim == domain_max_j - 1``) nested three deep with ``pp - pp`` and the
scalar ``0.0`` as branches, a selection by ``Kolor == 0`` / ``Kolor == 1``,
and a sum of ``Kolor + 1`` and ``Kolor + 2`` shifts written on fewer colours
than the inputs hold.
Then the two-hop neighbour sums of another fork (``cell_input(E2C[0])(V2E[3])``
and the like, eighteen terms of shifts of shifts), as field operators and as
the programs that call them.
Last the whole of muphys (icon4py's ``_muphys_run``): a saturation
adjustment, the graupel scheme with its column scans, and a second
adjustment of what it returns, the species passed on as the ``Q`` NamedTuple
unpacked from the graupel scheme's tuple result (``t_out, q_out, ... =
graupel(...)`` then ``q_out.v``).
Each operator is interpreted and compiled, compared with NumPy written from
the formulas."""

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
    astype,
    concat_where,
    neighbor_sum,
)
from test_icon_stencils_ported5 import NC as GNC
from test_icon_stencils_ported5 import NLEV as GNLEV
from test_icon_stencils_ported5 import (
    Q,
    graupel,
    graupel_inputs,
    graupel_numpy,
)
from test_icon_stencils_ported11 import (
    _GraupelConsts,
    _np_newton,
    _np_qsat_rho,
    _saturation_adjustment,
    _ThermodynamicConsts,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
V2E2C2VDim = Dimension("V2E2C2V", DimensionKind.LOCAL)
C2VDim = Dimension("C2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)

E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
V2E2C2V = FieldOffset("V2E2C2V", source=VertexDim, target=(VertexDim, V2E2C2VDim))
C2V = FieldOffset("C2V", source=VertexDim, target=(CellDim, C2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.V2EDim, dims.E2C2VDim = E2CDim, C2EDim, V2EDim, E2C2VDim
dims.E2C2V, dims.V2E = E2C2V, V2E

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.VertexField = Field[Dims[VertexDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]

wpfloat = gtx.float64
vpfloat = gtx.float32                         # icon4py's mixed precision build

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 12, 6, 5
RNG = np.random.default_rng(24001)
_TABLE_RNG = np.random.default_rng(24002)


def _distinct(rows, n, k):
    return np.array([_TABLE_RNG.choice(n, k, replace=False) for _ in range(rows)])


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3),
          "V2E": _distinct(NV, NE, 6), "E2C2V": _distinct(NE, NV, 4),
          "V2E2C2V": _distinct(NV, NV, 6)[:, [0, 1, 2, 3, 4, 5, 0]],
          "C2V": _distinct(NC, NV, 3), "V2C": _distinct(NV, NC, 6),
          "E2V": _distinct(NE, NV, 2)}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(24003).bit_generator.state


# ================================================================== nabla4 at vertices
#
# A fork of icon4py (grafrap/icon4py), model/atmosphere/diffusion/stencils/
# rbf_nabla4.py and rbf_nabla4_direct.py, with icon4py's _calculate_nabla4 and
# _mo_intp_rbf_rbf_vec_interpol_vertex they call.


@gtx.field_operator
def _calculate_nabla4(
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[vpfloat]:
    u_vert_wp, v_vert_wp = astype((u_vert, v_vert), wpfloat)

    nabv_tang_vp = astype(
        (
            u_vert_wp(E2C2V[0]) * primal_normal_vert_v1[E2C2VDim(0)]
            + v_vert_wp(E2C2V[0]) * primal_normal_vert_v2[E2C2VDim(0)]
            + u_vert_wp(E2C2V[1]) * primal_normal_vert_v1[E2C2VDim(1)]
            + v_vert_wp(E2C2V[1]) * primal_normal_vert_v2[E2C2VDim(1)]
        ),
        vpfloat,
    )

    nabv_norm_vp = astype(
        (
            u_vert_wp(E2C2V[2]) * primal_normal_vert_v1[E2C2VDim(2)]
            + v_vert_wp(E2C2V[2]) * primal_normal_vert_v2[E2C2VDim(2)]
            + u_vert_wp(E2C2V[3]) * primal_normal_vert_v1[E2C2VDim(3)]
            + v_vert_wp(E2C2V[3]) * primal_normal_vert_v2[E2C2VDim(3)]
        ),
        vpfloat,
    )
    nabv_tang_wp, nabv_norm_wp = astype((nabv_tang_vp, nabv_norm_vp), wpfloat)
    z_nabla4_e2_wp = wpfloat("4.0") * (
        (nabv_norm_wp - wpfloat("2.0") * z_nabla2_e) * (inv_vert_vert_length * inv_vert_vert_length)
        + (nabv_tang_wp - wpfloat("2.0") * z_nabla2_e)
        * (inv_primal_edge_length * inv_primal_edge_length)
    )
    return astype(z_nabla4_e2_wp, vpfloat)


@gtx.field_operator
def _mo_intp_rbf_rbf_vec_interpol_vertex(
    p_e_in: fa.EdgeKField[wpfloat],
    ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
) -> tuple[fa.VertexKField[wpfloat], fa.VertexKField[wpfloat]]:
    p_u_out = neighbor_sum(ptr_coeff_1 * p_e_in(V2E), axis=V2EDim)
    p_v_out = neighbor_sum(ptr_coeff_2 * p_e_in(V2E), axis=V2EDim)
    return p_u_out, p_v_out


@gtx.field_operator
def _rbf_nabla4(
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
) -> tuple[fa.VertexKField[wpfloat], fa.VertexKField[wpfloat]]:
    z_nabla4_e2 = _calculate_nabla4(
        u_vert,
        v_vert,
        primal_normal_vert_v1,
        primal_normal_vert_v2,
        z_nabla2_e,
        inv_vert_vert_length,
        inv_primal_edge_length,
    )
    return _mo_intp_rbf_rbf_vec_interpol_vertex(
        astype(z_nabla4_e2, wpfloat), ptr_coeff_1, ptr_coeff_2
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def rbf_nabla4(
    u_vert_out: fa.VertexKField[wpfloat],
    v_vert_out: fa.VertexKField[wpfloat],
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _rbf_nabla4(
        u_vert,
        v_vert,
        z_nabla2_e,
        ptr_coeff_1,
        ptr_coeff_2,
        primal_normal_vert_v1,
        primal_normal_vert_v2,
        inv_vert_vert_length,
        inv_primal_edge_length,
        out=(u_vert_out, v_vert_out),
        domain={
            dims.VertexDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _rbf_nabla4_direct(
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, V2EDim], wpfloat],
    ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, V2EDim], wpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, E2C2VDim], wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
) -> tuple[fa.VertexKField[wpfloat], fa.VertexKField[wpfloat]]:
    u_wp, v_wp = astype((u_vert, v_vert), wpfloat)

    # the seven vertices of the neighbourhood, each read once
    u0, v0 = u_wp(V2E2C2V[0]), v_wp(V2E2C2V[0])
    u1, v1 = u_wp(V2E2C2V[1]), v_wp(V2E2C2V[1])
    u2, v2 = u_wp(V2E2C2V[2]), v_wp(V2E2C2V[2])
    u3, v3 = u_wp(V2E2C2V[3]), v_wp(V2E2C2V[3])
    u4, v4 = u_wp(V2E2C2V[4]), v_wp(V2E2C2V[4])
    u5, v5 = u_wp(V2E2C2V[5]), v_wp(V2E2C2V[5])
    u6, v6 = u_wp(V2E2C2V[6]), v_wp(V2E2C2V[6])

    n2_0 = z_nabla2_e(V2E[0])
    ivvl0 = inv_vert_vert_length(V2E[0])
    ipel0 = inv_primal_edge_length(V2E[0])
    tang0 = (u0 * primal_normal_vert_v1(V2E[0])[E2C2VDim(0)]
             + v0 * primal_normal_vert_v2(V2E[0])[E2C2VDim(0)]
             + u1 * primal_normal_vert_v1(V2E[0])[E2C2VDim(1)]
             + v1 * primal_normal_vert_v2(V2E[0])[E2C2VDim(1)])
    norm0 = (u2 * primal_normal_vert_v1(V2E[0])[E2C2VDim(2)]
             + v2 * primal_normal_vert_v2(V2E[0])[E2C2VDim(2)]
             + u3 * primal_normal_vert_v1(V2E[0])[E2C2VDim(3)]
             + v3 * primal_normal_vert_v2(V2E[0])[E2C2VDim(3)])
    n4_0 = wpfloat("4.0") * (
        (norm0 - wpfloat("2.0") * n2_0) * (ivvl0 * ivvl0)
        + (tang0 - wpfloat("2.0") * n2_0) * (ipel0 * ipel0)
    )

    n2_1 = z_nabla2_e(V2E[1])
    ivvl1 = inv_vert_vert_length(V2E[1])
    ipel1 = inv_primal_edge_length(V2E[1])
    tang1 = (u0 * primal_normal_vert_v1(V2E[1])[E2C2VDim(0)]
             + v0 * primal_normal_vert_v2(V2E[1])[E2C2VDim(0)]
             + u3 * primal_normal_vert_v1(V2E[1])[E2C2VDim(1)]
             + v3 * primal_normal_vert_v2(V2E[1])[E2C2VDim(1)])
    norm1 = (u1 * primal_normal_vert_v1(V2E[1])[E2C2VDim(2)]
             + v1 * primal_normal_vert_v2(V2E[1])[E2C2VDim(2)]
             + u4 * primal_normal_vert_v1(V2E[1])[E2C2VDim(3)]
             + v4 * primal_normal_vert_v2(V2E[1])[E2C2VDim(3)])
    n4_1 = wpfloat("4.0") * (
        (norm1 - wpfloat("2.0") * n2_1) * (ivvl1 * ivvl1)
        + (tang1 - wpfloat("2.0") * n2_1) * (ipel1 * ipel1)
    )

    n2_2 = z_nabla2_e(V2E[2])
    ivvl2 = inv_vert_vert_length(V2E[2])
    ipel2 = inv_primal_edge_length(V2E[2])
    tang2 = (u0 * primal_normal_vert_v1(V2E[2])[E2C2VDim(0)]
             + v0 * primal_normal_vert_v2(V2E[2])[E2C2VDim(0)]
             + u4 * primal_normal_vert_v1(V2E[2])[E2C2VDim(1)]
             + v4 * primal_normal_vert_v2(V2E[2])[E2C2VDim(1)])
    norm2 = (u3 * primal_normal_vert_v1(V2E[2])[E2C2VDim(2)]
             + v3 * primal_normal_vert_v2(V2E[2])[E2C2VDim(2)]
             + u5 * primal_normal_vert_v1(V2E[2])[E2C2VDim(3)]
             + v5 * primal_normal_vert_v2(V2E[2])[E2C2VDim(3)])
    n4_2 = wpfloat("4.0") * (
        (norm2 - wpfloat("2.0") * n2_2) * (ivvl2 * ivvl2)
        + (tang2 - wpfloat("2.0") * n2_2) * (ipel2 * ipel2)
    )

    n2_3 = z_nabla2_e(V2E[3])
    ivvl3 = inv_vert_vert_length(V2E[3])
    ipel3 = inv_primal_edge_length(V2E[3])
    tang3 = (u5 * primal_normal_vert_v1(V2E[3])[E2C2VDim(0)]
             + v5 * primal_normal_vert_v2(V2E[3])[E2C2VDim(0)]
             + u0 * primal_normal_vert_v1(V2E[3])[E2C2VDim(1)]
             + v0 * primal_normal_vert_v2(V2E[3])[E2C2VDim(1)])
    norm3 = (u6 * primal_normal_vert_v1(V2E[3])[E2C2VDim(2)]
             + v6 * primal_normal_vert_v2(V2E[3])[E2C2VDim(2)]
             + u4 * primal_normal_vert_v1(V2E[3])[E2C2VDim(3)]
             + v4 * primal_normal_vert_v2(V2E[3])[E2C2VDim(3)])
    n4_3 = wpfloat("4.0") * (
        (norm3 - wpfloat("2.0") * n2_3) * (ivvl3 * ivvl3)
        + (tang3 - wpfloat("2.0") * n2_3) * (ipel3 * ipel3)
    )

    n2_4 = z_nabla2_e(V2E[4])
    ivvl4 = inv_vert_vert_length(V2E[4])
    ipel4 = inv_primal_edge_length(V2E[4])
    tang4 = (u6 * primal_normal_vert_v1(V2E[4])[E2C2VDim(0)]
             + v6 * primal_normal_vert_v2(V2E[4])[E2C2VDim(0)]
             + u0 * primal_normal_vert_v1(V2E[4])[E2C2VDim(1)]
             + v0 * primal_normal_vert_v2(V2E[4])[E2C2VDim(1)])
    norm4 = (u2 * primal_normal_vert_v1(V2E[4])[E2C2VDim(2)]
             + v2 * primal_normal_vert_v2(V2E[4])[E2C2VDim(2)]
             + u5 * primal_normal_vert_v1(V2E[4])[E2C2VDim(3)]
             + v5 * primal_normal_vert_v2(V2E[4])[E2C2VDim(3)])
    n4_4 = wpfloat("4.0") * (
        (norm4 - wpfloat("2.0") * n2_4) * (ivvl4 * ivvl4)
        + (tang4 - wpfloat("2.0") * n2_4) * (ipel4 * ipel4)
    )

    n2_5 = z_nabla2_e(V2E[5])
    ivvl5 = inv_vert_vert_length(V2E[5])
    ipel5 = inv_primal_edge_length(V2E[5])
    tang5 = (u2 * primal_normal_vert_v1(V2E[5])[E2C2VDim(0)]
             + v2 * primal_normal_vert_v2(V2E[5])[E2C2VDim(0)]
             + u0 * primal_normal_vert_v1(V2E[5])[E2C2VDim(1)]
             + v0 * primal_normal_vert_v2(V2E[5])[E2C2VDim(1)])
    norm5 = (u1 * primal_normal_vert_v1(V2E[5])[E2C2VDim(2)]
             + v1 * primal_normal_vert_v2(V2E[5])[E2C2VDim(2)]
             + u6 * primal_normal_vert_v1(V2E[5])[E2C2VDim(3)]
             + v6 * primal_normal_vert_v2(V2E[5])[E2C2VDim(3)])
    n4_5 = wpfloat("4.0") * (
        (norm5 - wpfloat("2.0") * n2_5) * (ivvl5 * ivvl5)
        + (tang5 - wpfloat("2.0") * n2_5) * (ipel5 * ipel5)
    )

    u_out = (ptr_coeff_1[V2EDim(0)] * n4_0
             + ptr_coeff_1[V2EDim(1)] * n4_1
             + ptr_coeff_1[V2EDim(2)] * n4_2
             + ptr_coeff_1[V2EDim(3)] * n4_3
             + ptr_coeff_1[V2EDim(4)] * n4_4
             + ptr_coeff_1[V2EDim(5)] * n4_5)
    v_out = (ptr_coeff_2[V2EDim(0)] * n4_0
             + ptr_coeff_2[V2EDim(1)] * n4_1
             + ptr_coeff_2[V2EDim(2)] * n4_2
             + ptr_coeff_2[V2EDim(3)] * n4_3
             + ptr_coeff_2[V2EDim(4)] * n4_4
             + ptr_coeff_2[V2EDim(5)] * n4_5)
    return u_out, v_out


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def rbf_nabla4_direct(
    u_vert_out: fa.VertexKField[wpfloat],
    v_vert_out: fa.VertexKField[wpfloat],
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    ptr_coeff_1: gtx.Field[gtx.Dims[dims.VertexDim, V2EDim], wpfloat],
    ptr_coeff_2: gtx.Field[gtx.Dims[dims.VertexDim, V2EDim], wpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, E2C2VDim], wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _rbf_nabla4_direct(
        u_vert,
        v_vert,
        z_nabla2_e,
        ptr_coeff_1,
        ptr_coeff_2,
        primal_normal_vert_v1,
        primal_normal_vert_v2,
        inv_vert_vert_length,
        inv_primal_edge_length,
        out=(u_vert_out, v_vert_out),
        domain={
            dims.VertexDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _simple_v2e_e2c2v(
    u_vert: fa.VertexKField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
) -> fa.VertexKField[wpfloat]:
    inner_e = u_vert(E2C2V[0]) + u_vert(E2C2V[1])
    return neighbor_sum(coeff * inner_e(V2E), axis=V2EDim)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def simple_v2e_e2c2v(
    u_vert: fa.VertexKField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat],
    output: fa.VertexKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _simple_v2e_e2c2v(
        u_vert,
        coeff,
        out=output,
        domain={
            dims.VertexDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


# ------------------------------------------------------------------ NumPy of the operators


def nb(x, table):
    """``x(OFFSET)``: the neighbours' rows, a local axis second."""
    return np.asarray(x)[TABLES[table]]


def nabla4_np(u, v, pn1, pn2, z_nabla2_e, ivvl, ipel):
    u, v = u.astype(np.float64), v.astype(np.float64)
    e2c2v = TABLES["E2C2V"]

    def part(i):
        return u[e2c2v[:, i]] * pn1[:, i, None] + v[e2c2v[:, i]] * pn2[:, i, None]

    tang = (part(0) + part(1)).astype(np.float32).astype(np.float64)
    norm = (part(2) + part(3)).astype(np.float32).astype(np.float64)
    n4 = 4.0 * ((norm - 2.0 * z_nabla2_e) * (ivvl * ivvl)[:, None]
                + (tang - 2.0 * z_nabla2_e) * (ipel * ipel)[:, None])
    return n4.astype(np.float32)


def rbf_vertex_np(p_e, c1, c2):
    return (np.einsum("vn,vnk->vk", c1, nb(p_e, "V2E")),
            np.einsum("vn,vnk->vk", c2, nb(p_e, "V2E")))


# (V2E slot s) -> the V2E2C2V slots read at E2C2V slots 0..3 of that edge
DIRECT_SLOTS = [(0, 1, 2, 3), (0, 3, 1, 4), (0, 4, 3, 5), (5, 0, 6, 4), (6, 0, 2, 5),
                (2, 0, 1, 6)]


def nabla4_direct_np(u, v, z_nabla2_e, c1, c2, pn1, pn2, ivvl, ipel):
    u, v = u.astype(np.float64), v.astype(np.float64)
    uu, vv = nb(u, "V2E2C2V"), nb(v, "V2E2C2V")                 # (NV, 7, K)
    v2e = TABLES["V2E"]
    u_out = np.zeros((NV, u.shape[1]))
    v_out = np.zeros((NV, u.shape[1]))
    for s, slots in enumerate(DIRECT_SLOTS):
        e = v2e[:, s]

        def term(j, slot, e=e):
            return uu[:, slot] * pn1[e, j, None] + vv[:, slot] * pn2[e, j, None]

        tang = term(0, slots[0]) + term(1, slots[1])
        norm = term(2, slots[2]) + term(3, slots[3])
        n2 = z_nabla2_e[e]
        n4 = 4.0 * ((norm - 2.0 * n2) * (ivvl[e] * ivvl[e])[:, None]
                    + (tang - 2.0 * n2) * (ipel[e] * ipel[e])[:, None])
        u_out += c1[:, s, None] * n4
        v_out += c2[:, s, None] * n4
    return u_out, v_out


def nabla4_inputs():
    return types.SimpleNamespace(
        u_vert=RNG.standard_normal((NV, NLEV)).astype(np.float32),
        v_vert=RNG.standard_normal((NV, NLEV)).astype(np.float32),
        z_nabla2_e=RNG.standard_normal((NE, NLEV)),
        ptr_coeff_1=RNG.standard_normal((NV, 6)),
        ptr_coeff_2=RNG.standard_normal((NV, 6)),
        primal_normal_vert_v1=RNG.standard_normal((NE, 4)),
        primal_normal_vert_v2=RNG.standard_normal((NE, 4)),
        inv_vert_vert_length=RNG.uniform(0.5, 2.0, NE),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
    )


def _as_fields(x):
    """The inputs as icon4py's tests build them: ``gtx.as_field`` over their dimensions."""
    dims_of = {"u_vert": (VertexDim, KDim), "v_vert": (VertexDim, KDim),
               "z_nabla2_e": (EdgeDim, KDim), "ptr_coeff_1": (VertexDim, V2EDim),
               "ptr_coeff_2": (VertexDim, V2EDim), "primal_normal_vert_v1": (EdgeDim, E2C2VDim),
               "primal_normal_vert_v2": (EdgeDim, E2C2VDim), "inv_vert_vert_length": (EdgeDim,),
               "inv_primal_edge_length": (EdgeDim,)}
    return {name: gtx.as_field(dims_of[name], value) for name, value in vars(x).items()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla4_at_vertices_through_the_rbf_reconstruction(backend):
    x = nabla4_inputs()
    n4 = nabla4_np(x.u_vert, x.v_vert, x.primal_normal_vert_v1, x.primal_normal_vert_v2,
                   x.z_nabla2_e, x.inv_vert_vert_length, x.inv_primal_edge_length)
    want_u, want_v = rbf_vertex_np(n4.astype(np.float64), x.ptr_coeff_1, x.ptr_coeff_2)

    # the field operator called directly, into a tuple of two vertex fields
    out = (gtx.zeros({VertexDim: NV, KDim: NLEV}), gtx.zeros({VertexDim: NV, KDim: NLEV}))
    _rbf_nabla4(x.u_vert, x.v_vert, x.z_nabla2_e, x.ptr_coeff_1, x.ptr_coeff_2,
                x.primal_normal_vert_v1, x.primal_normal_vert_v2, x.inv_vert_vert_length,
                x.inv_primal_edge_length, out=out, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(out[0].asnumpy(), want_u, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1].asnumpy(), want_v, rtol=1e-5, atol=1e-5)

    # the program on runtime bounds, its arguments built with as_field
    u_out = gtx.full({VertexDim: NV, KDim: NLEV}, np.nan)
    v_out = gtx.full({VertexDim: NV, KDim: NLEV}, np.nan)
    rbf_nabla4.with_backend(backend)(
        u_out, v_out, **_as_fields(x), horizontal_start=1, horizontal_end=NV - 1,
        vertical_start=1, vertical_end=NLEV, offset_provider=TABLES)
    got_u, got_v = u_out.asnumpy(), v_out.asnumpy()
    np.testing.assert_allclose(got_u[1:NV - 1, 1:], want_u[1:NV - 1, 1:], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_v[1:NV - 1, 1:], want_v[1:NV - 1, 1:], rtol=1e-5, atol=1e-5)
    assert np.isnan(got_u[0]).all() and np.isnan(got_v[NV - 1]).all()
    assert np.isnan(got_u[:, 0]).all() and np.isnan(got_v[:, 0]).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla4_at_vertices_spelled_out_over_seven_vertices(backend):
    x = nabla4_inputs()
    want_u, want_v = nabla4_direct_np(x.u_vert, x.v_vert, x.z_nabla2_e, x.ptr_coeff_1,
                                      x.ptr_coeff_2, x.primal_normal_vert_v1,
                                      x.primal_normal_vert_v2, x.inv_vert_vert_length,
                                      x.inv_primal_edge_length)
    out = (np.full((NV, NLEV), np.nan), np.full((NV, NLEV), np.nan))
    _rbf_nabla4_direct(*vars(x).values(), out=out, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(out[0], want_u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[1], want_v, rtol=1e-12, atol=1e-12)

    u_out, v_out = np.full((NV, NLEV), np.nan), np.full((NV, NLEV), np.nan)
    rbf_nabla4_direct(u_out, v_out, *vars(x).values(), 0, NV - 2, 0, NLEV - 1,
                      offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(u_out[:NV - 2, :NLEV - 1], want_u[:NV - 2, :NLEV - 1],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v_out[:NV - 2, :NLEV - 1], want_v[:NV - 2, :NLEV - 1],
                               rtol=1e-12, atol=1e-12)
    assert np.isnan(u_out[NV - 2:]).all() and np.isnan(v_out[:, NLEV - 1]).all()


V2E_WITH_GAPS = TABLES["V2E"].copy()
V2E_WITH_GAPS[0, 5] = V2E_WITH_GAPS[3, 4] = V2E_WITH_GAPS[3, 5] = -1      # pentagons


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("gaps", [False, True])
def test_v2e_reduction_of_an_e2c2v_sum(backend, gaps):
    tables = dict(TABLES, V2E=V2E_WITH_GAPS) if gaps else TABLES
    u_vert = RNG.standard_normal((NV, NLEV))
    coeff = RNG.standard_normal((NV, 6))
    e2c2v, v2e = tables["E2C2V"], tables["V2E"]
    inner_e = u_vert[e2c2v[:, 0]] + u_vert[e2c2v[:, 1]]
    want = np.einsum("vn,vnk->vk", np.where(v2e >= 0, coeff, 0.0), inner_e[v2e])
    output = gtx.zeros({VertexDim: NV, KDim: NLEV})
    simple_v2e_e2c2v(gtx.as_field((VertexDim, KDim), u_vert),
                     gtx.as_field((VertexDim, V2EDim), coeff), output, 2, NV, 0, NLEV,
                     offset_provider=tables, backend=backend)
    np.testing.assert_allclose(output.asnumpy()[2:], want[2:], rtol=1e-12, atol=1e-13)
    assert (output.asnumpy()[:2] == 0.0).all()


# ================================================================== a structured triangular grid
#
# The same fork, model/atmosphere/advection/stencils/simple_structured.py: the
# vertices of a parallelogram grid over (IDim, JDim), its three edge colours
# (east, north-east, south-east) a third horizontal dimension Kolor.

IDim = Dimension("IDim", kind=DimensionKind.HORIZONTAL)
JDim = Dimension("JDim", kind=DimensionKind.HORIZONTAL)
Kolor = Dimension("Kolor", kind=DimensionKind.HORIZONTAL)


class ta:
    wpfloat = gtx.float64


@gtx.field_operator
def compute_zavgS_cartesian_0(
    pp: gtx.Field[[IDim, JDim], float],
    S_M: gtx.Field[[IDim, JDim, Kolor], float],
    domain_max_j: gtx.int32,
) -> gtx.Field[[IDim, JDim, Kolor], float]:
    zavg = 0.5 * concat_where(
        JDim == domain_max_j - 1,
        pp,
        pp + pp(JDim + 1))
    return S_M * zavg


@gtx.field_operator
def compute_zavgS_cartesian_1(
    pp: gtx.Field[[IDim, JDim], float],
    S_M: gtx.Field[[IDim, JDim, Kolor], float],
    domain_max_i: gtx.int32,
) -> gtx.Field[[IDim, JDim, Kolor], float]:
    zavg = 0.5 * concat_where(
        IDim == domain_max_i - 1,
        pp,
        pp + pp(IDim + 1))
    return S_M * zavg


@gtx.field_operator
def compute_zavgS_cartesian_2(
    pp: gtx.Field[[IDim, JDim], float],
    S_M: gtx.Field[[IDim, JDim, Kolor], float],
    domain_max_i: gtx.int32,
    domain_max_j: gtx.int32,
) -> gtx.Field[[IDim, JDim, Kolor], float]:
    zavg = 0.5 * concat_where(
        IDim == domain_max_i - 1, concat_where(
            JDim == domain_max_j - 1,
            pp-pp,
            pp + pp(JDim + 1)),
        concat_where(JDim == domain_max_j - 1,
            pp(IDim + 1), pp(IDim + 1) + pp(JDim + 1))
    )
    return S_M * zavg


@gtx.field_operator
def on_edges(
    f0: gtx.Field[[IDim, JDim, Kolor], float],
    f1: gtx.Field[[IDim, JDim, Kolor], float],
    f2: gtx.Field[[IDim, JDim, Kolor], float],
) -> gtx.Field[[IDim, JDim, Kolor], float]:
    return concat_where(
        Kolor == 0,
        f0,
        concat_where(Kolor == 1, f1, f2),
    )


@gtx.field_operator
def compute_zavgS_cartesian(
    pp: gtx.Field[[IDim, JDim], float],
    S_M: gtx.Field[[IDim, JDim, Kolor], float],
    domain_max_i: gtx.int32,
    domain_max_j: gtx.int32,
) -> gtx.Field[[IDim, JDim, Kolor], float]:

    return on_edges(
        compute_zavgS_cartesian_0(pp, S_M, domain_max_j),
        compute_zavgS_cartesian_1(pp, S_M, domain_max_i),
        compute_zavgS_cartesian_2(pp, S_M, domain_max_i, domain_max_j),
    )


@gtx.field_operator
def _compute_pnabla_cartesian_direct(
    pp: gtx.Field[gtx.Dims[IDim, JDim], ta.wpfloat],
    S_M: gtx.Field[gtx.Dims[IDim, JDim, Kolor], ta.wpfloat],
    sign: gtx.Field[gtx.Dims[IDim, JDim, Kolor], ta.wpfloat],
    vol: gtx.Field[gtx.Dims[IDim, JDim], ta.wpfloat],
    domain_max_i: gtx.int32,
    domain_max_j: gtx.int32,
) -> gtx.Field[gtx.Dims[IDim, JDim, Kolor], ta.wpfloat]:
    zavg_s = compute_zavgS_cartesian(pp, S_M, domain_max_i, domain_max_j)
    pnabla_color = concat_where(
        Kolor == 0,
        concat_where(JDim == 0, zavg_s, zavg_s + zavg_s(JDim - 1)),
        concat_where(
            Kolor == 1,
            concat_where(IDim == 0, zavg_s, zavg_s + zavg_s(IDim - 1)),
            concat_where(
                IDim == 0,
                concat_where(JDim == 0, 0.0, zavg_s(JDim - 1)),
                concat_where(JDim == 0, zavg_s(IDim - 1), zavg_s(IDim - 1) + zavg_s(JDim - 1)),
            ),
        ),
    )
    pnabla_color_signed = pnabla_color * sign
    return (pnabla_color_signed + pnabla_color_signed(Kolor + 1)
            + pnabla_color_signed(Kolor + 2)) / vol


@gtx.program
def compute_pnabla_cartesian(
    pp: gtx.Field[gtx.Dims[IDim, JDim], ta.wpfloat],
    S_M: gtx.Field[gtx.Dims[IDim, JDim, Kolor], ta.wpfloat],
    sign: gtx.Field[gtx.Dims[IDim, JDim, Kolor], ta.wpfloat],
    vol: gtx.Field[gtx.Dims[IDim, JDim], ta.wpfloat],
    out: gtx.Field[gtx.Dims[IDim, JDim, Kolor], ta.wpfloat],
    domain_max_i: gtx.int32,
    domain_max_j: gtx.int32,
    domain_max_kolor: gtx.int32,
):
    _compute_pnabla_cartesian_direct(
        pp,
        S_M,
        sign,
        vol,
        domain_max_i,
        domain_max_j,
        out=out,
        domain={
            IDim: (0, domain_max_i),
            JDim: (0, domain_max_j),
            Kolor: (0, domain_max_kolor),
        },
    )


# ------------------------------------------------------------------ NumPy of the operators

NI, NJ = 5, 6


def zavg_np(pp, s_m):
    half = 0.5 * pp
    z0 = half.copy()
    z0[:, :-1] += 0.5 * pp[:, 1:]
    z1 = half.copy()
    z1[:-1, :] += 0.5 * pp[1:, :]
    z2 = np.zeros_like(pp)
    z2[:-1, :] += 0.5 * pp[1:, :]
    z2[:, :-1] += 0.5 * pp[:, 1:]
    z2[-1, :-1] += 0.5 * pp[-1, :-1]                 # the last row: pp + pp(J + 1)
    return s_m[..., 0] * z0, s_m[..., 1] * z1, s_m[..., 2] * z2, (z0, z1, z2)


def pnabla_np(pp, s_m, sign, vol):
    zs = np.stack(zavg_np(pp, s_m)[:3], axis=-1)
    col = np.zeros_like(zs)
    col[..., 0] = zs[..., 0]
    col[:, 1:, 0] += zs[:, :-1, 0]
    col[..., 1] = zs[..., 1]
    col[1:, :, 1] += zs[:-1, :, 1]
    col[:, 1:, 2] += zs[:, :-1, 2]
    col[1:, :, 2] += zs[:-1, :, 2]
    signed = col * sign
    return (signed[..., 0] + signed[..., 1] + signed[..., 2]) / vol


def structured_inputs():
    return types.SimpleNamespace(pp=RNG.standard_normal((NI, NJ)),
                                 S_M=RNG.standard_normal((NI, NJ, 3)),
                                 sign=RNG.choice([-1.0, 1.0], (NI, NJ, 3)),
                                 vol=RNG.uniform(0.5, 2.0, (NI, NJ)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_edge_averages_on_a_structured_grid(backend):
    x = structured_inputs()
    z0, z1, z2, (a0, a1, a2) = zavg_np(x.pp, x.S_M)
    for op, args, want in ((compute_zavgS_cartesian_0, (NJ,), a0),
                           (compute_zavgS_cartesian_1, (NI,), a1),
                           (compute_zavgS_cartesian_2, (NI, NJ), a2)):
        out = np.full((NI, NJ, 3), np.nan)
        op(x.pp, x.S_M, *args, out=out, offset_provider={}, backend=backend)
        np.testing.assert_allclose(out, x.S_M * want[..., None], rtol=1e-14, atol=1e-15,
                                   err_msg=op.__name__)

    out = gtx.full({IDim: NI, JDim: NJ, Kolor: 3}, np.nan)
    compute_zavgS_cartesian(gtx.as_field((IDim, JDim), x.pp),
                            gtx.as_field((IDim, JDim, Kolor), x.S_M), NI, NJ, out=out,
                            offset_provider={}, backend=backend)
    np.testing.assert_allclose(out.asnumpy(), np.stack((z0, z1, z2), axis=-1), rtol=1e-14,
                               atol=1e-15)

    picked = np.full((NI, NJ, 3), np.nan)
    on_edges(x.S_M, 2.0 * x.S_M, 3.0 * x.S_M, out=picked, offset_provider={}, backend=backend)
    np.testing.assert_array_equal(picked, x.S_M * np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_pressure_gradient_on_a_structured_grid(backend):
    x = structured_inputs()
    want = pnabla_np(x.pp, x.S_M, x.sign, x.vol)
    out = gtx.as_field((IDim, JDim, Kolor), np.full((NI, NJ, 1), np.nan))
    compute_pnabla_cartesian(gtx.as_field((IDim, JDim), x.pp),
                             gtx.as_field((IDim, JDim, Kolor), x.S_M),
                             sign=gtx.as_field((IDim, JDim, Kolor), x.sign),
                             vol=gtx.as_field((IDim, JDim), x.vol), out=out,
                             domain_max_i=NI, domain_max_j=NJ,
                             domain_max_kolor=gtx.int32(1), offset_provider={},
                             backend=backend)
    np.testing.assert_allclose(out.asnumpy()[..., 0], want, rtol=1e-13, atol=1e-14)


# ================================================================== two-hop neighbour sums
#
# Another fork (michiklein/icon4py), model/common/tests/mklein/stencils_combined.py:
# every neighbour of every neighbour summed with shifts of shifts.


@gtx.field_operator
def _v2c2e_sum(edge_input: fa.EdgeField[float]) -> fa.VertexField[float]:
    return (
        edge_input(C2E[0])(V2C[0])
        + edge_input(C2E[1])(V2C[0])
        + edge_input(C2E[2])(V2C[0])
        + edge_input(C2E[0])(V2C[1])
        + edge_input(C2E[1])(V2C[1])
        + edge_input(C2E[2])(V2C[1])
        + edge_input(C2E[0])(V2C[2])
        + edge_input(C2E[1])(V2C[2])
        + edge_input(C2E[2])(V2C[2])
        + edge_input(C2E[0])(V2C[3])
        + edge_input(C2E[1])(V2C[3])
        + edge_input(C2E[2])(V2C[3])
        + edge_input(C2E[0])(V2C[4])
        + edge_input(C2E[1])(V2C[4])
        + edge_input(C2E[2])(V2C[4])
        + edge_input(C2E[0])(V2C[5])
        + edge_input(C2E[1])(V2C[5])
        + edge_input(C2E[2])(V2C[5])
    )


@gtx.program
def v2c2e_sum_program(
    edge_input: fa.EdgeField[float], vertex_out: fa.VertexField[float]
):
    _v2c2e_sum(edge_input, out=vertex_out)


@gtx.field_operator
def _v2e2c_sum(cell_input: fa.CellField[float]) -> fa.VertexField[float]:
    return (
        cell_input(E2C[0])(V2E[0])
        + cell_input(E2C[1])(V2E[0])
        + cell_input(E2C[0])(V2E[1])
        + cell_input(E2C[1])(V2E[1])
        + cell_input(E2C[0])(V2E[2])
        + cell_input(E2C[1])(V2E[2])
        + cell_input(E2C[0])(V2E[3])
        + cell_input(E2C[1])(V2E[3])
        + cell_input(E2C[0])(V2E[4])
        + cell_input(E2C[1])(V2E[4])
        + cell_input(E2C[0])(V2E[5])
        + cell_input(E2C[1])(V2E[5])
    )


@gtx.program
def v2e2c_sum_program(
    cell_input: fa.CellField[float], vertex_out: fa.VertexField[float]
):
    _v2e2c_sum(cell_input, out=vertex_out)


@gtx.field_operator
def _e2c2e_sum(edge_input: fa.EdgeField[float]) -> fa.EdgeField[float]:
    return (
        edge_input(C2E[0])(E2C[0])
        + edge_input(C2E[1])(E2C[0])
        + edge_input(C2E[2])(E2C[0])
        + edge_input(C2E[0])(E2C[1])
        + edge_input(C2E[1])(E2C[1])
        + edge_input(C2E[2])(E2C[1])
    )


@gtx.program
def e2c2e_sum_program(edge_input: fa.EdgeField[float], edge_out: fa.EdgeField[float]):
    _e2c2e_sum(edge_input, out=edge_out)


@gtx.field_operator
def _e2v2c_sum(cell_input: fa.CellField[float]) -> fa.EdgeField[float]:
    return (
        cell_input(V2C[0])(E2V[0])
        + cell_input(V2C[1])(E2V[0])
        + cell_input(V2C[2])(E2V[0])
        + cell_input(V2C[3])(E2V[0])
        + cell_input(V2C[4])(E2V[0])
        + cell_input(V2C[5])(E2V[0])
        + cell_input(V2C[0])(E2V[1])
        + cell_input(V2C[1])(E2V[1])
        + cell_input(V2C[2])(E2V[1])
        + cell_input(V2C[3])(E2V[1])
        + cell_input(V2C[4])(E2V[1])
        + cell_input(V2C[5])(E2V[1])
    )


@gtx.program
def e2v2c_sum_program(cell_input: fa.CellField[float], edge_out: fa.EdgeField[float]):
    _e2v2c_sum(cell_input, out=edge_out)


@gtx.field_operator
def _c2e2v_sum(vertex_input: fa.VertexField[float]) -> fa.CellField[float]:
    return (
        vertex_input(E2V[0])(C2E[0])
        + vertex_input(E2V[1])(C2E[0])
        + vertex_input(E2V[0])(C2E[1])
        + vertex_input(E2V[1])(C2E[1])
        + vertex_input(E2V[0])(C2E[2])
        + vertex_input(E2V[1])(C2E[2])
    )


@gtx.program
def c2e2v_sum_program(
    vertex_input: fa.VertexField[float], cell_out: fa.CellField[float]
):
    _c2e2v_sum(vertex_input, out=cell_out)


@gtx.field_operator
def _c2v2e_sum(edge_input: fa.EdgeField[float]) -> fa.CellField[float]:
    return (
        edge_input(V2E[0])(C2V[0])
        + edge_input(V2E[1])(C2V[0])
        + edge_input(V2E[2])(C2V[0])
        + edge_input(V2E[3])(C2V[0])
        + edge_input(V2E[4])(C2V[0])
        + edge_input(V2E[5])(C2V[0])
        + edge_input(V2E[0])(C2V[1])
        + edge_input(V2E[1])(C2V[1])
        + edge_input(V2E[2])(C2V[1])
        + edge_input(V2E[3])(C2V[1])
        + edge_input(V2E[4])(C2V[1])
        + edge_input(V2E[5])(C2V[1])
        + edge_input(V2E[0])(C2V[2])
        + edge_input(V2E[1])(C2V[2])
        + edge_input(V2E[2])(C2V[2])
        + edge_input(V2E[3])(C2V[2])
        + edge_input(V2E[4])(C2V[2])
        + edge_input(V2E[5])(C2V[2])
    )


@gtx.program
def c2v2e_sum_program(edge_input: fa.EdgeField[float], cell_out: fa.CellField[float]):
    _c2v2e_sum(edge_input, out=cell_out)


TWO_HOPS = [  # (operator, program, first table, second table, input length, output length)
    (_v2c2e_sum, v2c2e_sum_program, "V2C", "C2E", NE, NV),
    (_v2e2c_sum, v2e2c_sum_program, "V2E", "E2C", NC, NV),
    (_e2c2e_sum, e2c2e_sum_program, "E2C", "C2E", NE, NE),
    (_e2v2c_sum, e2v2c_sum_program, "E2V", "V2C", NC, NE),
    (_c2e2v_sum, c2e2v_sum_program, "C2E", "E2V", NV, NC),
    (_c2v2e_sum, c2v2e_sum_program, "C2V", "V2E", NE, NC),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", TWO_HOPS, ids=lambda case: case[0].__name__)
def test_two_hop_neighbour_sums(case, backend):
    op, prog, first, second, n_in, n_out = case
    x = RNG.standard_normal(n_in)
    want = x[TABLES[second]][TABLES[first]].sum(axis=(1, 2))
    out = np.full(n_out, np.nan)
    op(x, out=out, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)
    out_field = gtx.empty({(VertexDim if n_out == NV else EdgeDim if n_out == NE
                            else CellDim): n_out})
    prog.with_backend(backend)(x, out_field, offset_provider=TABLES)
    np.testing.assert_allclose(out_field.asnumpy(), want, rtol=1e-13, atol=1e-13)


# ================================================================== the whole of muphys
#
# icon4py's muphys/implementations/muphys.py: a saturation adjustment, the
# graupel scheme (its column scans inside) and a second saturation adjustment
# in one field operator, the species passed on as icon4py's Q NamedTuple.

CellKField = Field[Dims[CellDim, KDim], T]


@gtx.field_operator
def _muphys_run(
    last_lev: gtx.int32,
    dz: CellKField[wpfloat],
    te: CellKField[wpfloat],  # Temperature
    p: CellKField[wpfloat],  # Pressure
    rho: CellKField[wpfloat],  # Density containing dry air and water constituents
    q: Q,  # Specific humidity, cloud water, rain, snow, ice and graupel
    dt: wpfloat,
    qnc: wpfloat,
    enable_masking: bool,
) -> tuple[
    CellKField[wpfloat],
    Q,
    CellKField[wpfloat],
    CellKField[wpfloat],
    CellKField[wpfloat],
    CellKField[wpfloat],
    CellKField[wpfloat],
    CellKField[wpfloat],
]:
    te, qve, qce = _saturation_adjustment(te, rho, q.v, q.c, q.r, q.s, q.i, q.g)

    t_out, q_out, pflx_out, pr_out, ps_out, pi_out, pg_out, pre_out = graupel(
        last_lev, dz, te, p, rho, Q(v=qve, c=qce, r=q.r, s=q.s, i=q.i, g=q.g), dt, qnc,
        enable_masking)

    te_out, qv_out, qc_out = _saturation_adjustment(
        t_out, rho, q_out.v, q_out.c, q_out.r, q_out.s, q_out.i, q_out.g)

    return (te_out, Q(v=qv_out, c=qc_out, r=q_out.r, s=q_out.s, i=q_out.i, g=q_out.g),
            pflx_out, pr_out, ps_out, pi_out, pg_out, pre_out)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def muphys_run(
    last_lev: gtx.int32,
    dz: CellKField[wpfloat],
    te: CellKField[wpfloat],  # Temperature
    p: CellKField[wpfloat],  # Pressure
    rho: CellKField[wpfloat],  # Density containing dry air and water constituents
    q_in: Q,
    dt: wpfloat,  # Time step
    qnc: wpfloat,
    enable_masking: bool,
    t_out: CellKField[wpfloat],  # Revised temperature
    q_out: Q,  # Revised species
    pflx: CellKField[wpfloat],  # Total precipitation flux
    pr: CellKField[wpfloat],  # Precipitation of rain
    ps: CellKField[wpfloat],  # Precipitation of snow
    pi: CellKField[wpfloat],  # Precipitation of ice
    pg: CellKField[wpfloat],  # Precipitation of graupel
    pre: CellKField[wpfloat],  # Energy flux of the precipitation
):
    _muphys_run(
        last_lev,
        dz,
        te,
        p,
        rho,
        q_in,
        dt,
        qnc,
        enable_masking,
        out=(t_out, q_out, pflx, pr, ps, pi, pg, pre),
    )


def saturation_adjustment_np(te, rho, qv, qc, qr, qs, qi, qg):
    c, g = _ThermodynamicConsts, _GraupelConsts
    qti = qs + qi + qg
    cvc = c.cvd * (1.0 - (qv + qc + qr + qti)) + c.clw * qr + g.ci * qti
    cv = cvc + c.cvv * qv + c.clw * qc
    ue = cv * te - qc * g.lvc
    tx_hold = ue / (cv + qc * (c.cvv - c.clw))
    tx = te
    for _ in range(6):
        tx = _np_newton(tx, rho, qv, qc, cvc, ue)
    qx = _np_qsat_rho(tx, rho)
    mask = qv + qc <= _np_qsat_rho(tx_hold, rho)
    return (np.where(mask, tx_hold, tx), np.where(mask, qv + qc, qx),
            np.where(mask, 0.0, np.maximum(qv + qc - qx, 0.0)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_muphys_saturation_adjustment_around_graupel(backend):
    a = graupel_inputs()
    dt, qnc = 30.0, 1.0e8
    q = a["q_in"]
    te1, qv1, qc1 = saturation_adjustment_np(a["te"], a["rho"], *q)
    mid = dict(a, te=te1, q_in=Q(qv1, qc1, *q[2:]))
    expected, q_mid = graupel_numpy(mid, dt, qnc, True, 0, GNC, 0, GNLEV)
    te2, qv2, qc2 = saturation_adjustment_np(expected["t_out"], a["rho"], *q_mid)

    outs = dict(t_out=np.full((GNC, GNLEV), np.nan),
                q_out=Q(*(np.full((GNC, GNLEV), np.nan) for _ in range(6))),
                **{k: np.full((GNC, GNLEV), np.nan) for k in ("pflx", "pr", "ps", "pi", "pg",
                                                               "pre")})
    muphys_run(GNLEV - 1, a["dz"], a["te"], a["p"], a["rho"], a["q_in"], dt, qnc, True,
               **outs, offset_provider={}, backend=backend)
    np.testing.assert_allclose(outs["t_out"], te2, rtol=1e-9)
    for got, want in zip(outs["q_out"], (qv2, qc2, *q_mid[2:])):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(outs["pflx"], expected["pflx"], rtol=1e-9, atol=1e-15)
    for name in ("pr", "ps", "pi", "pg", "pre"):
        np.testing.assert_allclose(outs[name][:, -1], expected[name][:, -1], rtol=1e-9,
                                   atol=1e-15, err_msg=name)
