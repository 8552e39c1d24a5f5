"""A twenty-first round of ICON stencils (icon4py's field operators) in
icon4py's own spelling, beside ``test_icon_stencils_ported*.py``.

First the newer fused programs of the horizontal diffusion.  The diffusion of
vn: the fourth-order operator reading vertex fields through ``E2C2V`` with
the slots of its coefficients picked by ``E2C2VDim(i)``, then an ``if``
expression on a ``bool`` scalar choosing between two ``concat_where`` on an
edge index (the nudging zone with a tuple ``astype`` of two fields and a
scalar, the lateral boundary, and the global update beside the unchanged vn),
written in place.  The diffusion of theta and exner: the ``E2C`` gradient,
its ``C2E`` divergence, a GT4Py ``if`` on a ``bool`` scalar replacing the
Laplacian by the truly horizontal one where ``zd_diffcoef != 0.0`` (theta
read at ``C2E2C`` neighbours and at levels chosen by ``as_offset`` of a
``[Cell, C2E2C, K]`` index field), and the update of a tuple of two with
``exner`` both read and written.  The Smagorinsky coefficients with the
diagnostics for turbulence: a tuple of three from vertex winds gathered by
``E2C2V`` into a local field whose slots are picked after the products, an
``if`` expression on a ``bool`` choosing the half-level diagnostics (a ``C2E``
sum divided by a ``KField``, full levels read at ``KHalfDim ± 0.5``) or the
caller's two fields unchanged, written through four domains on two
horizontal and two vertical dimensions.
Then the older diagnostics of temperature and pressure: a backward scan
without a return annotation whose ``if state[0]:`` returns a tuple of three
in each branch, the surface pressure from level slices passed as cell
fields.  Then the older metric fields of the vertical grid: a broadcast
written on the whole field by a call without ``domain=`` before a call on a
domain, a cell field written by one call and read by the next, an ``if`` on
two ``int32`` scalars reassigning a parameter that is also the output, the
flat level index (``where`` of a ``KField[int32]`` against ``0``, a cell
field read at ``E2C[i]`` then ``Koff[1]``) and the extrapolation of the
pressure gradient (``int32`` fields in and out, ``where`` between ``True``
and ``False``).  Then the whole FFSL flux area patches list (six cases of
nested ``where``, 24 outputs written in place; its expected values run the
reference code itself on NumPy arrays).  Then icon4py's trial of a scan and
of level slices with the operators decorated inside a function body.  Last
three small programs of the nonhydro solver: zero fields from operators
without arguments, the kinetic energy on the top level with the
extrapolation to the surface (``Koff[-1..-3]``) on the last one, and the
nudging update with its last level written by a second call, and the ICON
graupel's precipitation fluxes at and above the ground (a constant of a float
``enum.Enum``, a total chosen by an ``if`` expression on a ``bool``), and the
ICON graupel scheme itself: a scan of a 28-element state whose body holds
dozens of ``if`` statements in a row (their translation used to double with
each of them) and calls ten scalar operators returning tuples.
Each group is one program (or a chain of them), interpreted and compiled,
compared with NumPy written from the formulas."""

from __future__ import annotations

import enum
import math
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
    as_offset,
    astype,
    broadcast,
    concat_where,
    exp,
    int32,
    log,
    maximum,
    minimum,
    neighbor_sum,
    scan_operator,
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
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.E2CDim, dims.C2EDim, dims.C2E2CDim, dims.E2C2VDim = E2CDim, C2EDim, C2E2CDim, E2C2VDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
dims.Koff = Koff

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KField = Field[Dims[KDim], T]
fa.KHalfField = Field[Dims[KHalfDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float64       # icon4py's double precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 12, 6, 7
NH = NLEV + 1
RNG = np.random.default_rng(21001)
_TABLE_RNG = np.random.default_rng(21002)


def _distinct(rows, n, k):
    return np.array([_TABLE_RNG.choice(n, k, replace=False) for _ in range(rows)])


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3),
          "C2E2C": _distinct(NC, NC, 3), "E2C2V": _distinct(NE, NV, 4), "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(21003).bit_generator.state


def nb(x, table):
    """``x(OFFSET)``: the neighbours' rows, a local axis second."""
    return np.asarray(x)[TABLES[table]]


def nbsum(weights, x, table):
    """``neighbor_sum(weights * x(OFFSET))`` for a field with levels."""
    return np.einsum("rn,rnk->rk", weights, nb(x, table))


# ================================================================== diffusion of vn
#
# icon4py's diffusion_for_vn: the fourth-order operator and the three updates
# of vn (nudging zone, lateral boundary, global) chosen by an if expression.


@gtx.field_operator
def _nabla4(
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
            u_vert_wp(E2C2V[0]) * primal_normal_vert_v1[dims.E2C2VDim(0)]
            + v_vert_wp(E2C2V[0]) * primal_normal_vert_v2[dims.E2C2VDim(0)]
            + u_vert_wp(E2C2V[1]) * primal_normal_vert_v1[dims.E2C2VDim(1)]
            + v_vert_wp(E2C2V[1]) * primal_normal_vert_v2[dims.E2C2VDim(1)]
        ),
        vpfloat,
    )

    nabv_norm_vp = astype(
        (
            u_vert_wp(E2C2V[2]) * primal_normal_vert_v1[dims.E2C2VDim(2)]
            + v_vert_wp(E2C2V[2]) * primal_normal_vert_v2[dims.E2C2VDim(2)]
            + u_vert_wp(E2C2V[3]) * primal_normal_vert_v1[dims.E2C2VDim(3)]
            + v_vert_wp(E2C2V[3]) * primal_normal_vert_v2[dims.E2C2VDim(3)]
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
def _nabla2_and_nabla4_for_vn(
    area_edge: fa.EdgeField[wpfloat],
    kh_smag_e: fa.EdgeKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    z_nabla4_e2: fa.EdgeKField[vpfloat],
    diff_multfac_vn: fa.KField[wpfloat],
    nudgecoeff_e: fa.EdgeField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    nudgezone_diff: vpfloat,
) -> fa.EdgeKField[wpfloat]:
    kh_smag_e_wp, z_nabla4_e2_wp, nudgezone_diff_wp = astype(
        (kh_smag_e, z_nabla4_e2, nudgezone_diff), wpfloat
    )
    area_edge_broadcast = broadcast(area_edge, (dims.EdgeDim, dims.KDim))

    vn_wp = vn + area_edge * (
        maximum(nudgezone_diff_wp * nudgecoeff_e, kh_smag_e_wp) * z_nabla2_e
        - area_edge_broadcast * diff_multfac_vn * z_nabla4_e2_wp
    )
    return vn_wp


@gtx.field_operator
def _nabla2_and_nabla4_global_for_vn(
    area_edge: fa.EdgeField[wpfloat],
    kh_smag_e: fa.EdgeKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    z_nabla4_e2: fa.EdgeKField[vpfloat],
    diff_multfac_vn: fa.KField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    kh_smag_e_wp, z_nabla4_e2_wp = astype((kh_smag_e, z_nabla4_e2), wpfloat)

    vn_wp = vn + area_edge * (
        kh_smag_e_wp * z_nabla2_e - diff_multfac_vn * z_nabla4_e2_wp * area_edge
    )
    return vn_wp


@gtx.field_operator
def _nabla2_for_vn_in_lateral_boundary(
    z_nabla2_e: fa.EdgeKField[wpfloat],
    area_edge: fa.EdgeField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    fac_bdydiff_v: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    vn_wp = vn + (area_edge * fac_bdydiff_v * z_nabla2_e)
    return vn_wp


@gtx.field_operator
def _diffusion_for_vn(
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    area_edge: fa.EdgeField[wpfloat],
    kh_smag_e: fa.EdgeKField[vpfloat],
    diff_multfac_vn: fa.KField[wpfloat],
    nudgecoeff_e: fa.EdgeField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    nudgezone_diff: vpfloat,
    fac_bdydiff_v: wpfloat,
    start_2nd_nudge_line_idx_e: gtx.int32,
    limited_area: bool,
) -> fa.EdgeKField[wpfloat]:
    z_nabla4_e2 = _nabla4(
        u_vert,
        v_vert,
        primal_normal_vert_v1,
        primal_normal_vert_v2,
        z_nabla2_e,
        inv_vert_vert_length,
        inv_primal_edge_length,
    )

    # TODO(): Use if-else statement instead
    vn = (
        concat_where(
            dims.EdgeDim >= start_2nd_nudge_line_idx_e,
            _nabla2_and_nabla4_for_vn(
                area_edge,
                kh_smag_e,
                z_nabla2_e,
                z_nabla4_e2,
                diff_multfac_vn,
                nudgecoeff_e,
                vn,
                nudgezone_diff,
            ),
            _nabla2_for_vn_in_lateral_boundary(z_nabla2_e, area_edge, vn, fac_bdydiff_v),
        )
        if limited_area
        else concat_where(
            dims.EdgeDim >= start_2nd_nudge_line_idx_e,
            _nabla2_and_nabla4_global_for_vn(
                area_edge,
                kh_smag_e,
                z_nabla2_e,
                z_nabla4_e2,
                diff_multfac_vn,
                vn,
            ),
            vn,
        )
    )

    return vn


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def diffusion_for_vn(
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    area_edge: fa.EdgeField[wpfloat],
    kh_smag_e: fa.EdgeKField[vpfloat],
    diff_multfac_vn: fa.KField[wpfloat],
    nudgecoeff_e: fa.EdgeField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    nudgezone_diff: vpfloat,
    fac_bdydiff_v: wpfloat,
    start_2nd_nudge_line_idx_e: gtx.int32,
    limited_area: bool,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _diffusion_for_vn(
        u_vert=u_vert,
        v_vert=v_vert,
        primal_normal_vert_v1=primal_normal_vert_v1,
        primal_normal_vert_v2=primal_normal_vert_v2,
        z_nabla2_e=z_nabla2_e,
        inv_vert_vert_length=inv_vert_vert_length,
        inv_primal_edge_length=inv_primal_edge_length,
        area_edge=area_edge,
        kh_smag_e=kh_smag_e,
        diff_multfac_vn=diff_multfac_vn,
        nudgecoeff_e=nudgecoeff_e,
        vn=vn,
        nudgezone_diff=nudgezone_diff,
        fac_bdydiff_v=fac_bdydiff_v,
        start_2nd_nudge_line_idx_e=start_2nd_nudge_line_idx_e,
        limited_area=limited_area,
        out=vn,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _diffusion_for_vn_numpy(a, nudgezone_diff, fac_bdydiff_v, start, limited_area):
    g = types.SimpleNamespace(**a)
    u, v = nb(g.u_vert, "E2C2V"), nb(g.v_vert, "E2C2V")
    p1, p2 = g.primal_normal_vert_v1[:, :, None], g.primal_normal_vert_v2[:, :, None]
    proj = u * p1 + v * p2
    tang, norm = proj[:, 0] + proj[:, 1], proj[:, 2] + proj[:, 3]
    z2 = g.z_nabla2_e
    ivv, ipe = g.inv_vert_vert_length[:, None], g.inv_primal_edge_length[:, None]
    z4 = 4.0 * ((norm - 2.0 * z2) * ivv**2 + (tang - 2.0 * z2) * ipe**2)
    area = g.area_edge[:, None]
    dmf = g.diff_multfac_vn[None, :]
    kh = g.kh_smag_e
    e = np.arange(NE)[:, None] >= start
    if limited_area:
        nudged = g.vn + area * (np.maximum(nudgezone_diff * g.nudgecoeff_e[:, None], kh) * z2
                                - area * dmf * z4)
        return np.where(e, nudged, g.vn + area * fac_bdydiff_v * z2)
    return np.where(e, g.vn + area * (kh * z2 - dmf * z4 * area), g.vn)


@pytest.mark.parametrize(("limited_area", "bounds"), [(True, (1, NE - 1, 0, NLEV)),
                                                       (False, (0, NE, 1, NLEV - 1))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_for_vn(backend, limited_area, bounds):
    hs, he, vs, ve = bounds
    start, nudgezone_diff, fac_bdydiff_v = 4, 0.04, 0.3
    a = dict(
        u_vert=RNG.standard_normal((NV, NLEV)), v_vert=RNG.standard_normal((NV, NLEV)),
        primal_normal_vert_v1=RNG.standard_normal((NE, 4)),
        primal_normal_vert_v2=RNG.standard_normal((NE, 4)),
        z_nabla2_e=RNG.standard_normal((NE, NLEV)),
        inv_vert_vert_length=RNG.uniform(0.5, 2.0, NE),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE), area_edge=RNG.uniform(0.5, 2.0, NE),
        kh_smag_e=RNG.uniform(0.0, 0.1, (NE, NLEV)), diff_multfac_vn=RNG.uniform(0.0, 0.1, NLEV),
        nudgecoeff_e=RNG.uniform(0.0, 3.0, NE), vn=RNG.standard_normal((NE, NLEV)))
    want = _diffusion_for_vn_numpy(a, nudgezone_diff, fac_bdydiff_v, start, limited_area)
    want = inside(want, a["vn"], hs, he, vs, ve)
    diffusion_for_vn(**a, nudgezone_diff=nudgezone_diff, fac_bdydiff_v=fac_bdydiff_v,
                     start_2nd_nudge_line_idx_e=start, limited_area=limited_area,
                     horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                     vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, dict(vn=want), rtol=1e-12, atol=1e-14)


# ================================================================== diffusion of theta and exner
#
# icon4py's diffusion_for_theta_and_exner: the Laplacian of theta, replaced
# by the truly horizontal one over steep points under a bool scalar.


@gtx.field_operator
def _nabla2_for_z(
    kh_smag_e: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    kh_smag_e_wp = astype(kh_smag_e, wpfloat)

    z_nabla2_e_wp = kh_smag_e_wp * inv_dual_edge_length * (theta_v(E2C[1]) - theta_v(E2C[0]))
    return z_nabla2_e_wp


@gtx.field_operator
def _nabla2_of_theta(
    z_nabla2_e: fa.EdgeKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    z_temp_wp = neighbor_sum(z_nabla2_e(C2E) * geofac_div, axis=dims.C2EDim)
    return astype(z_temp_wp, vpfloat)


@gtx.field_operator
def _truly_horizontal_diffusion_nabla_of_theta_over_steep_points(
    zd_vertoffset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32],
    zd_diffcoef: fa.CellKField[wpfloat],
    geofac_n2s_c: fa.CellField[wpfloat],
    geofac_n2s_nbh: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat],
    vcoef: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat],
    theta_v: fa.CellKField[wpfloat],
    z_temp: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_temp_wp = astype(z_temp, wpfloat)

    theta_v_0 = theta_v(C2E2C[0])(as_offset(Koff, zd_vertoffset[C2E2CDim(0)]))
    theta_v_1 = theta_v(C2E2C[1])(as_offset(Koff, zd_vertoffset[C2E2CDim(1)]))
    theta_v_2 = theta_v(C2E2C[2])(as_offset(Koff, zd_vertoffset[C2E2CDim(2)]))

    theta_v_0_m1 = theta_v(C2E2C[0])(as_offset(Koff, zd_vertoffset[C2E2CDim(0)] + 1))
    theta_v_1_m1 = theta_v(C2E2C[1])(as_offset(Koff, zd_vertoffset[C2E2CDim(1)] + 1))
    theta_v_2_m1 = theta_v(C2E2C[2])(as_offset(Koff, zd_vertoffset[C2E2CDim(2)] + 1))

    sum_tmp = (
        theta_v * geofac_n2s_c
        + geofac_n2s_nbh[C2E2CDim(0)]
        * (vcoef[C2E2CDim(0)] * theta_v_0 + (wpfloat("1.0") - vcoef[C2E2CDim(0)]) * theta_v_0_m1)
        + geofac_n2s_nbh[C2E2CDim(1)]
        * (vcoef[C2E2CDim(1)] * theta_v_1 + (wpfloat("1.0") - vcoef[C2E2CDim(1)]) * theta_v_1_m1)
        + geofac_n2s_nbh[C2E2CDim(2)]
        * (vcoef[C2E2CDim(2)] * theta_v_2 + (wpfloat("1.0") - vcoef[C2E2CDim(2)]) * theta_v_2_m1)
    )

    # Note: In the original Fortran code `zd_diffcoef` is implemented as a list,
    # in ICON4Py it's a full field intialized with zeros for points that are not in the list.
    z_temp_wp = z_temp_wp + zd_diffcoef * sum_tmp

    return astype(z_temp_wp, vpfloat)


@gtx.field_operator
def _update_theta_and_exner(
    z_temp: fa.CellKField[vpfloat],
    area: fa.CellField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    exner: fa.CellKField[wpfloat],
    rd_o_cvd: vpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    rd_o_cvd_wp, z_temp_wp = astype((rd_o_cvd, z_temp), wpfloat)

    z_theta = theta_v
    theta_v = theta_v + (area * z_temp_wp)
    exner = exner * (wpfloat("1.0") + rd_o_cvd_wp * (theta_v / z_theta - wpfloat("1.0")))
    return theta_v, exner


@gtx.field_operator
def _diffusion_for_theta_and_exner(
    kh_smag_e: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    zd_vertoffset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32],
    zd_diffcoef: fa.CellKField[wpfloat],
    geofac_n2s_c: fa.CellField[wpfloat],
    geofac_n2s_nbh: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat],
    vcoef: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat],
    area: fa.CellField[wpfloat],
    exner: fa.CellKField[wpfloat],
    rd_o_cvd: vpfloat,
    apply_zdiffusion_t: bool,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_nabla2_e = _nabla2_for_z(kh_smag_e, inv_dual_edge_length, theta_v)
    z_temp = _nabla2_of_theta(z_nabla2_e, geofac_div)

    if apply_zdiffusion_t:
        # Only where `zd_diffcoef` is not 0 to avoid loading the other fields.
        # Eventually the toolchain could consider extracting a mask `zd_diffcoef != 0`
        # if we tell gt4py that `zd_diffcoef` is static.
        z_temp = where(
            zd_diffcoef != 0.0,
            _truly_horizontal_diffusion_nabla_of_theta_over_steep_points(
                zd_vertoffset,
                zd_diffcoef,
                geofac_n2s_c,
                geofac_n2s_nbh,
                vcoef,
                theta_v,
                z_temp,
            ),
            z_temp,
        )

    theta_v, exner = _update_theta_and_exner(z_temp, area, theta_v, exner, rd_o_cvd)

    return theta_v, exner


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def diffusion_for_theta_and_exner(
    kh_smag_e: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v_in: fa.CellKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    zd_vertoffset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32],
    zd_diffcoef: fa.CellKField[wpfloat],
    geofac_n2s_c: fa.CellField[wpfloat],
    geofac_n2s_nbh: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat],
    vcoef: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat],
    area: fa.CellField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    exner: fa.CellKField[wpfloat],
    rd_o_cvd: vpfloat,
    apply_zdiffusion_t: bool,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _diffusion_for_theta_and_exner(
        kh_smag_e=kh_smag_e,
        inv_dual_edge_length=inv_dual_edge_length,
        theta_v=theta_v_in,
        geofac_div=geofac_div,
        zd_vertoffset=zd_vertoffset,
        zd_diffcoef=zd_diffcoef,
        geofac_n2s_c=geofac_n2s_c,
        geofac_n2s_nbh=geofac_n2s_nbh,
        vcoef=vcoef,
        area=area,
        exner=exner,
        rd_o_cvd=rd_o_cvd,
        apply_zdiffusion_t=apply_zdiffusion_t,
        out=(theta_v, exner),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _theta_and_exner_numpy(a, rd_o_cvd, apply_zdiffusion_t):
    g = types.SimpleNamespace(**a)
    th = g.theta_v_in
    e2c = TABLES["E2C"]
    z2 = g.kh_smag_e * g.inv_dual_edge_length[:, None] * (th[e2c[:, 1]] - th[e2c[:, 0]])
    z_temp = nbsum(g.geofac_div, z2, "C2E")
    if apply_zdiffusion_t:
        c2e2c = TABLES["C2E2C"]
        k = np.arange(NLEV)[None, :]
        total = th * g.geofac_n2s_c[:, None]
        for n in range(3):
            lev = k + g.zd_vertoffset[:, n, :]
            nbr = c2e2c[:, n][:, None]
            at, below = th[nbr, lev], th[nbr, lev + 1]
            vc = g.vcoef[:, n, :]
            total = total + g.geofac_n2s_nbh[:, n, None] * (vc * at + (1.0 - vc) * below)
        z_temp = np.where(g.zd_diffcoef != 0.0, z_temp + g.zd_diffcoef * total, z_temp)
    theta = th + g.area[:, None] * z_temp
    return theta, g.exner * (1.0 + rd_o_cvd * (theta / th - 1.0))


@pytest.mark.parametrize("apply_zdiffusion_t", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_for_theta_and_exner(backend, apply_zdiffusion_t):
    hs, he, vs, ve, rd_o_cvd = 1, NC - 1, 1, NLEV, 0.287 / 0.717
    k = np.arange(NLEV)[None, None, :]
    offsets = np.clip(RNG.integers(-2, 3, (NC, 3, NLEV)), -k, NLEV - 2 - k)
    assert (offsets != 0).any()
    a = dict(
        kh_smag_e=RNG.uniform(0.0, 0.1, (NE, NLEV)),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        theta_v_in=RNG.uniform(280.0, 320.0, (NC, NLEV)),
        geofac_div=RNG.standard_normal((NC, 3)),
        zd_vertoffset=offsets.astype(np.int32),
        zd_diffcoef=np.where(RNG.random((NC, NLEV)) < 0.5, 0.0, RNG.uniform(0.0, 0.01, (NC, NLEV))),
        geofac_n2s_c=RNG.standard_normal(NC), geofac_n2s_nbh=RNG.standard_normal((NC, 3)),
        vcoef=RNG.random((NC, 3, NLEV)), area=RNG.uniform(0.5, 2.0, NC),
        theta_v=RNG.random((NC, NLEV)), exner=RNG.uniform(0.8, 1.0, (NC, NLEV)))
    theta, exner = _theta_and_exner_numpy(a, rd_o_cvd, apply_zdiffusion_t)
    want = dict(theta_v=inside(theta, a["theta_v"], hs, he, vs, ve),
                exner=inside(exner, a["exner"], hs, he, vs, ve))
    diffusion_for_theta_and_exner(**a, rd_o_cvd=rd_o_cvd, apply_zdiffusion_t=apply_zdiffusion_t,
                                  horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                                  vertical_end=ve, offset_provider=TABLES, backend=backend)
    check(a, want, rtol=1e-12)


# ================================================================== Smagorinsky and turbulence
#
# icon4py's nabla2_smag_and_turbulence_diagnostics: the Smagorinsky
# coefficients and the Laplacian of vn on edges, and the divergence and
# deformation on cell half levels when asked for (else the caller's fields).


@gtx.field_operator
def _nabla2_and_smag_coefficients_for_vn(
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    smag_limit: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    smag_offset: vpfloat,
) -> tuple[
    fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat],
    fa.EdgeKField[wpfloat],
]:
    diff_multfac_smag_wp, u_vert_wp, v_vert_wp, smag_offset_wp = astype(
        (diff_multfac_smag, u_vert, v_vert, smag_offset), wpfloat
    )

    v_n = u_vert_wp(E2C2V) * primal_normal_vert_x + v_vert_wp(E2C2V) * primal_normal_vert_y

    nabla2_of_vn = (v_n[dims.E2C2VDim(0)] + v_n[dims.E2C2VDim(1)] - wpfloat("2.0") * vn) * (
        inv_primal_edge_length * inv_primal_edge_length
    ) + (v_n[dims.E2C2VDim(2)] + v_n[dims.E2C2VDim(3)] - wpfloat("2.0") * vn) * (
        inv_vert_vert_length * inv_vert_vert_length
    )
    # The factor of 4 comes from the lengths in the denominator being twice those needed
    # for the diffusion stencil (https://doi.org/10.1002%2Fqj.2378).
    nabla2_of_vn = wpfloat("4.0") * nabla2_of_vn

    v_t = u_vert_wp(E2C2V) * dual_normal_vert_x + v_vert_wp(E2C2V) * dual_normal_vert_y
    l_p = tangent_orientation * inv_primal_edge_length
    l_vv = inv_vert_vert_length

    kh_smag_part1 = (v_n[dims.E2C2VDim(3)] - v_n[dims.E2C2VDim(2)]) * l_vv - (
        v_t[dims.E2C2VDim(1)] - v_t[dims.E2C2VDim(0)]
    ) * l_p
    kh_smag_part2 = (v_n[dims.E2C2VDim(1)] - v_n[dims.E2C2VDim(0)]) * l_p + (
        v_t[dims.E2C2VDim(3)] - v_t[dims.E2C2VDim(2)]
    ) * l_vv

    kh_smag_wp = diff_multfac_smag_wp * sqrt(
        kh_smag_part1 * kh_smag_part1 + kh_smag_part2 * kh_smag_part2
    )

    kh_smag_vp_for_diffusion = maximum(vpfloat("0.0"), astype(kh_smag_wp - smag_offset_wp, vpfloat))
    kh_smag_vp_for_diffusion = minimum(kh_smag_vp_for_diffusion, smag_limit)

    return kh_smag_vp_for_diffusion, astype(kh_smag_wp, vpfloat), nabla2_of_vn


@gtx.field_operator
def _temporary_fields_for_turbulence_diagnostics(
    kh_smag_ec: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    kh_smag_ec_wp, diff_multfac_smag_wp = astype((kh_smag_ec, diff_multfac_smag), wpfloat)

    kh_c_wp = neighbor_sum(kh_smag_ec_wp(C2E) * e_bln_c_s, axis=dims.C2EDim) / diff_multfac_smag_wp
    div_wp = neighbor_sum(vn(C2E) * geofac_div, axis=dims.C2EDim)
    return astype((kh_c_wp, div_wp), vpfloat)


@gtx.field_operator
def _diagnostics_for_turbulence(
    div: fa.CellKField[vpfloat],
    kh_c: fa.CellKField[vpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    div_wp, kh_c_wp = astype((div, kh_c), wpfloat)

    div_ic_wp = astype(wgtfac_c * div(dims.KHalfDim + 0.5), wpfloat) + (
        wpfloat("1.0") - wgtfac_c_wp
    ) * div_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = astype(wgtfac_c * kh_c(dims.KHalfDim + 0.5), wpfloat) + (
        wpfloat("1.0") - wgtfac_c_wp
    ) * kh_c_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = hdef_ic_wp * hdef_ic_wp

    return astype((div_ic_wp, hdef_ic_wp), vpfloat)


@gtx.field_operator
def _diagnostic_quantities_for_turbulence(
    kh_smag_ec: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    kh_c, div = _temporary_fields_for_turbulence_diagnostics(
        kh_smag_ec, vn, e_bln_c_s, geofac_div, diff_multfac_smag
    )
    div_ic_vp, hdef_ic_vp = _diagnostics_for_turbulence(div, kh_c, wgtfac_c)
    return div_ic_vp, hdef_ic_vp


@gtx.field_operator
def _nabla2_smag_and_turbulence_diagnostics(
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    smag_limit: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
    div_ic: fa.CellKHalfField[vpfloat],
    hdef_ic: fa.CellKHalfField[vpfloat],
    smag_offset: vpfloat,
    compute_diagnostic_quantities: bool,
) -> tuple[
    fa.EdgeKField[vpfloat],
    fa.EdgeKField[wpfloat],
    fa.CellKHalfField[vpfloat],
    fa.CellKHalfField[vpfloat],
]:
    kh_smag_e, kh_smag_ec, z_nabla2_e = _nabla2_and_smag_coefficients_for_vn(
        diff_multfac_smag=diff_multfac_smag,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length,
        u_vert=u_vert,
        v_vert=v_vert,
        primal_normal_vert_x=primal_normal_vert_x,
        primal_normal_vert_y=primal_normal_vert_y,
        dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y,
        vn=vn,
        smag_limit=smag_limit,
        smag_offset=smag_offset,
    )
    div_ic, hdef_ic = (
        _diagnostic_quantities_for_turbulence(
            kh_smag_ec=kh_smag_ec,
            vn=vn,
            e_bln_c_s=e_bln_c_s,
            geofac_div=geofac_div,
            diff_multfac_smag=diff_multfac_smag,
            wgtfac_c=wgtfac_c,
        )
        if compute_diagnostic_quantities
        else (div_ic, hdef_ic)
    )
    return kh_smag_e, z_nabla2_e, div_ic, hdef_ic


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def nabla2_smag_and_turbulence_diagnostics(
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    vn: fa.EdgeKField[wpfloat],
    smag_limit: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
    kh_smag_e: fa.EdgeKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat],
    div_ic: fa.CellKHalfField[vpfloat],
    hdef_ic: fa.CellKHalfField[vpfloat],
    smag_offset: vpfloat,
    compute_diagnostic_quantities: bool,
    edge_horizontal_start: gtx.int32,
    edge_horizontal_end: gtx.int32,
    edge_vertical_start: gtx.int32,
    edge_vertical_end: gtx.int32,
    cell_horizontal_start: gtx.int32,
    cell_horizontal_end: gtx.int32,
    cell_vertical_start: gtx.int32,
    cell_vertical_end: gtx.int32,
) -> None:
    _nabla2_smag_and_turbulence_diagnostics(
        diff_multfac_smag=diff_multfac_smag,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length,
        u_vert=u_vert,
        v_vert=v_vert,
        primal_normal_vert_x=primal_normal_vert_x,
        primal_normal_vert_y=primal_normal_vert_y,
        dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y,
        vn=vn,
        smag_limit=smag_limit,
        e_bln_c_s=e_bln_c_s,
        geofac_div=geofac_div,
        wgtfac_c=wgtfac_c,
        div_ic=div_ic,
        hdef_ic=hdef_ic,
        smag_offset=smag_offset,
        compute_diagnostic_quantities=compute_diagnostic_quantities,
        out=(kh_smag_e, z_nabla2_e, div_ic, hdef_ic),
        domain=(
            {
                dims.EdgeDim: (edge_horizontal_start, edge_horizontal_end),
                dims.KDim: (edge_vertical_start, edge_vertical_end),
            },
            {
                dims.EdgeDim: (edge_horizontal_start, edge_horizontal_end),
                dims.KDim: (edge_vertical_start, edge_vertical_end),
            },
            {
                dims.CellDim: (cell_horizontal_start, cell_horizontal_end),
                dims.KHalfDim: (cell_vertical_start, cell_vertical_end),
            },
            {
                dims.CellDim: (cell_horizontal_start, cell_horizontal_end),
                dims.KHalfDim: (cell_vertical_start, cell_vertical_end),
            },
        ),
    )


def _smag_numpy(a, smag_offset):
    g = types.SimpleNamespace(**a)
    u, v = nb(g.u_vert, "E2C2V"), nb(g.v_vert, "E2C2V")
    v_n = u * g.primal_normal_vert_x[:, :, None] + v * g.primal_normal_vert_y[:, :, None]
    v_t = u * g.dual_normal_vert_x[:, :, None] + v * g.dual_normal_vert_y[:, :, None]
    ipe, ivv = g.inv_primal_edge_length[:, None], g.inv_vert_vert_length[:, None]
    nabla2 = 4.0 * ((v_n[:, 0] + v_n[:, 1] - 2.0 * g.vn) * ipe**2
                    + (v_n[:, 2] + v_n[:, 3] - 2.0 * g.vn) * ivv**2)
    l_p = g.tangent_orientation[:, None] * ipe
    part1 = (v_n[:, 3] - v_n[:, 2]) * ivv - (v_t[:, 1] - v_t[:, 0]) * l_p
    part2 = (v_n[:, 1] - v_n[:, 0]) * l_p + (v_t[:, 3] - v_t[:, 2]) * ivv
    kh = g.diff_multfac_smag[None, :] * np.sqrt(part1**2 + part2**2)
    kh_e = np.minimum(np.maximum(0.0, kh - smag_offset), g.smag_limit[None, :])
    kh_c = nbsum(g.e_bln_c_s, kh, "C2E") / g.diff_multfac_smag[None, :]
    div = nbsum(g.geofac_div, g.vn, "C2E")
    w = g.wgtfac_c
    div_ic, hdef_ic = np.full((NC, NH), np.nan), np.full((NC, NH), np.nan)
    div_ic[:, 1:NLEV] = w[:, 1:NLEV] * div[:, 1:] + (1.0 - w[:, 1:NLEV]) * div[:, :-1]
    hdef_ic[:, 1:NLEV] = (w[:, 1:NLEV] * kh_c[:, 1:] + (1.0 - w[:, 1:NLEV]) * kh_c[:, :-1])**2
    return kh_e, nabla2, div_ic, hdef_ic


@pytest.mark.parametrize("compute_diagnostic_quantities", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla2_smag_and_turbulence_diagnostics(backend, compute_diagnostic_quantities):
    es, ee, ks, ke, cs, ce, hs, he = 1, NE - 1, 0, NLEV, 0, NC - 1, 1, NLEV
    smag_offset = 1.0
    a = dict(
        diff_multfac_smag=RNG.uniform(0.5, 1.5, NLEV),
        tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_vert_vert_length=RNG.uniform(0.5, 2.0, NE),
        u_vert=RNG.standard_normal((NV, NLEV)), v_vert=RNG.standard_normal((NV, NLEV)),
        primal_normal_vert_x=RNG.standard_normal((NE, 4)),
        primal_normal_vert_y=RNG.standard_normal((NE, 4)),
        dual_normal_vert_x=RNG.standard_normal((NE, 4)),
        dual_normal_vert_y=RNG.standard_normal((NE, 4)),
        vn=RNG.standard_normal((NE, NLEV)), smag_limit=RNG.uniform(0.2, 1.0, NLEV),
        e_bln_c_s=RNG.uniform(0.2, 0.5, (NC, 3)), geofac_div=RNG.standard_normal((NC, 3)),
        wgtfac_c=RNG.uniform(0.3, 0.7, (NC, NH)))
    base = dict(kh_smag_e=RNG.random((NE, NLEV)), z_nabla2_e=RNG.random((NE, NLEV)),
                div_ic=RNG.random((NC, NH)), hdef_ic=RNG.random((NC, NH)))
    got = {n: v.copy() for n, v in base.items()}
    kh_e, nabla2, div_ic, hdef_ic = _smag_numpy(a, smag_offset)
    assert (kh_e == 0.0).any() and (kh_e == a["smag_limit"][None, :]).any()
    if not compute_diagnostic_quantities:
        div_ic, hdef_ic = base["div_ic"], base["hdef_ic"]
    want = dict(kh_smag_e=inside(kh_e, base["kh_smag_e"], es, ee, ks, ke),
                z_nabla2_e=inside(nabla2, base["z_nabla2_e"], es, ee, ks, ke),
                div_ic=inside(div_ic, base["div_ic"], cs, ce, hs, he),
                hdef_ic=inside(hdef_ic, base["hdef_ic"], cs, ce, hs, he))
    nabla2_smag_and_turbulence_diagnostics(
        **a, **got, smag_offset=smag_offset,
        compute_diagnostic_quantities=compute_diagnostic_quantities,
        edge_horizontal_start=es, edge_horizontal_end=ee, edge_vertical_start=ks,
        edge_vertical_end=ke, cell_horizontal_start=cs, cell_horizontal_end=ce,
        cell_vertical_start=hs, cell_vertical_end=he, offset_provider=TABLES, backend=backend)
    check(got, want, rtol=1e-12, atol=1e-14)


# ================================================================== temperature and pressure
#
# icon4py's older diagnostics of temperature and pressure (``Field[[CellDim,
# KDim], vpfloat]``, ``field_operator``/``program``/``scan_operator`` imported
# bare): a backward scan without a return annotation whose ``if state[0]:``
# returns a tuple of three in each branch, unpacked into three names of which
# one is dropped; the surface pressure from three levels passed as cell fields
# with ``float`` scalars; ``out=(temperature)`` in parentheses.

field_operator, program = gtx.field_operator, gtx.program
GridType = gtx.GridType


@field_operator
def _diagnose_temperature(
    theta_v: Field[[CellDim, KDim], vpfloat],
    exner: Field[[CellDim, KDim], vpfloat],
) -> Field[[CellDim, KDim], vpfloat]:
    temperature = theta_v * exner
    return temperature


@field_operator
def _diagnose_pressure_sfc(
    exner_nlev_minus2: Field[[CellDim], vpfloat],
    temperature_nlev: Field[[CellDim], vpfloat],
    temperature_nlev_minus1: Field[[CellDim], vpfloat],
    temperature_nlev_minus2: Field[[CellDim], vpfloat],
    ddqz_z_full_nlev: Field[[CellDim], wpfloat],
    ddqz_z_full_nlev_minus1: Field[[CellDim], wpfloat],
    ddqz_z_full_nlev_minus2: Field[[CellDim], wpfloat],
    cpd_o_rd: float,
    p0ref: float,
    grav_o_rd: float,
) -> Field[[CellDim], float]:
    pressure_sfc = p0ref * exp(
        cpd_o_rd * log(exner_nlev_minus2)
        + grav_o_rd
        * (
            ddqz_z_full_nlev / temperature_nlev
            + ddqz_z_full_nlev_minus1 / temperature_nlev_minus1
            + 0.5 * ddqz_z_full_nlev_minus2 / temperature_nlev_minus2
        )
    )
    return pressure_sfc


@scan_operator(axis=KDim, forward=False, init=(True, 0.0, 0.0))
def _scan_pressure(
    state: tuple[bool, float, float],
    ddqz_z_full: float,
    temperature: float,
    pressure_sfc: float,
):
    if state[0]:
        pressure_first_level = pressure_sfc * exp(-ddqz_z_full / temperature)
        pressure = sqrt(pressure_sfc * pressure_first_level)
        return False, pressure, pressure_first_level
    else:
        pressure_interface = state[1] * exp(-ddqz_z_full / temperature)
        pressure = sqrt(state[1] * pressure_interface)
        return False, pressure, pressure_interface


@field_operator
def _diagnose_pressure(
    ddqz_z_full: Field[[CellDim, KDim], wpfloat],
    temperature: Field[[CellDim, KDim], vpfloat],
    pressure_sfc: Field[[CellDim], vpfloat],
) -> tuple[Field[[CellDim, KDim], vpfloat], Field[[CellDim, KDim], vpfloat]]:
    redundant, pressure, pressure_ifc = _scan_pressure(ddqz_z_full, temperature, pressure_sfc)
    return pressure, pressure_ifc


@program(grid_type=GridType.UNSTRUCTURED)
def diagnose_temperature(
    theta_v: Field[[CellDim, KDim], vpfloat],
    exner: Field[[CellDim, KDim], vpfloat],
    temperature: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _diagnose_temperature(
        theta_v,
        exner,
        out=(temperature),
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@program(grid_type=GridType.UNSTRUCTURED)
def diagnose_pressure_sfc(
    exner_nlev_minus2: Field[[CellDim], vpfloat],
    temperature_nlev: Field[[CellDim], vpfloat],
    temperature_nlev_minus1: Field[[CellDim], vpfloat],
    temperature_nlev_minus2: Field[[CellDim], vpfloat],
    ddqz_z_full_nlev: Field[[CellDim], wpfloat],
    ddqz_z_full_nlev_minus1: Field[[CellDim], wpfloat],
    ddqz_z_full_nlev_minus2: Field[[CellDim], wpfloat],
    pressure_sfc: Field[[CellDim], vpfloat],
    cpd_o_rd: wpfloat,
    p0ref: wpfloat,
    grav_o_rd: wpfloat,
    horizontal_start: int32,
    horizontal_end: int32,
):
    _diagnose_pressure_sfc(
        exner_nlev_minus2,
        temperature_nlev,
        temperature_nlev_minus1,
        temperature_nlev_minus2,
        ddqz_z_full_nlev,
        ddqz_z_full_nlev_minus1,
        ddqz_z_full_nlev_minus2,
        cpd_o_rd,
        p0ref,
        grav_o_rd,
        out=pressure_sfc,
        domain={
            CellDim: (horizontal_start, horizontal_end),
        },
    )


@program
def diagnose_pressure(
    ddqz_z_full: Field[[CellDim, KDim], wpfloat],
    temperature: Field[[CellDim, KDim], vpfloat],
    pressure_sfc: Field[[CellDim], vpfloat],
    pressure: Field[[CellDim, KDim], vpfloat],
    pressure_ifc: Field[[CellDim, KDim], vpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _diagnose_pressure(
        ddqz_z_full,
        temperature,
        pressure_sfc,
        out=(pressure, pressure_ifc),
        domain={CellDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)},
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_diagnose_temperature_and_pressure(backend):
    hs, he, vs, ve = 1, NC, 1, NLEV
    cpd_o_rd, p0ref, grav_o_rd = 1004.64 / 287.04, 100000.0, 9.80665 / 287.04
    theta_v = RNG.uniform(290.0, 330.0, (NC, NLEV))
    exner = RNG.uniform(0.7, 1.0, (NC, NLEV))
    ddqz = RNG.uniform(50.0, 500.0, (NC, NLEV))
    t0, p0, pi0 = RNG.random((NC, NLEV)), RNG.random((NC, NLEV)), RNG.random((NC, NLEV))
    psfc0 = RNG.random(NC)
    temperature, pressure, pressure_ifc, psfc = t0.copy(), p0.copy(), pi0.copy(), psfc0.copy()
    diagnose_temperature(theta_v, exner, temperature, 0, NC, 0, NLEV, offset_provider={},
                         backend=backend)
    n = NLEV - 1
    diagnose_pressure_sfc(exner[:, n - 2], temperature[:, n], temperature[:, n - 1],
                          temperature[:, n - 2], ddqz[:, n], ddqz[:, n - 1], ddqz[:, n - 2],
                          psfc, cpd_o_rd, p0ref, grav_o_rd, hs, he, offset_provider={},
                          backend=backend)
    diagnose_pressure(ddqz, temperature, psfc, pressure, pressure_ifc, hs, he, vs, ve,
                      offset_provider={}, backend=backend)

    want_t = theta_v * exner
    want_sfc = p0ref * np.exp(cpd_o_rd * np.log(exner[:, n - 2]) + grav_o_rd * (
        ddqz[:, n] / want_t[:, n] + ddqz[:, n - 1] / want_t[:, n - 1]
        + 0.5 * ddqz[:, n - 2] / want_t[:, n - 2]))
    want_sfc = inside(want_sfc, psfc0, hs, he)
    want_p, want_pi = np.array(p0), np.array(pi0)
    below = want_sfc
    for k in range(ve - 1, vs - 1, -1):
        interface = below * np.exp(-ddqz[:, k] / want_t[:, k])
        want_p[:, k] = np.sqrt(below * interface)
        want_pi[:, k] = interface
        below = want_p[:, k]         # the older scan carries the pressure, not the interface
    check(dict(temperature=temperature, pressure_sfc=psfc, pressure=pressure,
               pressure_ifc=pressure_ifc),
          dict(temperature=want_t, pressure_sfc=want_sfc,
               pressure=inside(want_p, p0, hs, he, vs, ve),
               pressure_ifc=inside(want_pi, pi0, hs, he, vs, ve)), rtol=1e-12)


# ================================================================== older metric fields
#
# icon4py's metric fields of mo_vertical_grid in an older spelling
# (``from gt4py.next import field_operator, program, ...``,
# ``backend=settings.backend``, ``EdgeDim``/``KDim`` bound at module level):
# the exner extrapolation factor written first on the whole field by a call
# without ``domain=`` then on a domain; the implicit weight of w on cells then
# read back on cells and levels by the next call; the second derivative
# factors of the reference exner under an ``if`` on two ``int32`` scalars
# that reassigns a parameter (an output passed in); the flat level index of
# edges (``where`` of a ``KField[int32]`` against a literal ``0``, a cell
# field read at ``E2C[i]`` then ``Koff[1]``); and the extrapolation of the
# pressure gradient (an ``int32`` edge index and a ``KField[int32]``
# broadcast to ``(Edge, K)``, in-and-out ``int32`` fields, ``where`` between
# ``True`` and ``False``).

settings = types.ModuleType("icon_settings")
settings.backend = None
EdgeDimM, KDimM = dims.EdgeDim, dims.KDim


@field_operator
def average_cell_kdim_level_up(
    half_level_field: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    """
    Calculate the mean value of adjacent interface levels.

    Computes the average of two adjacent interface levels upwards over a cell field for storage
    in the corresponding full levels.
    """
    return 0.5 * (half_level_field + half_level_field(Koff[1]))


@field_operator
def _cell_2_edge_interpolation(
    in_field: fa.CellKField[wpfloat],
    coeff: Field[[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=dims.E2CDim)


@field_operator
def _compute_maxslp_maxhgtd(
    ddxn_z_full: fa.EdgeKField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_maxslp_0_1 = maximum(abs(ddxn_z_full(C2E[0])), abs(ddxn_z_full(C2E[1])))
    z_maxslp = maximum(z_maxslp_0_1, abs(ddxn_z_full(C2E[2])))

    z_maxhgtd_0_1 = maximum(
        abs(ddxn_z_full(C2E[0]) * dual_edge_length(C2E[0])),
        abs(ddxn_z_full(C2E[1]) * dual_edge_length(C2E[1])),
    )

    z_maxhgtd = maximum(z_maxhgtd_0_1, abs(ddxn_z_full(C2E[2]) * dual_edge_length(C2E[2])))
    return z_maxslp, z_maxhgtd


@field_operator
def _exner_exfac_broadcast(exner_expol: wpfloat,) -> fa.CellKField[wpfloat]:
    return broadcast(exner_expol, (CellDim, KDim))


@field_operator
def _compute_exner_exfac(
    ddxn_z_full: fa.EdgeKField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    exner_expol: wpfloat,
) -> fa.CellKField[wpfloat]:
    z_maxslp, z_maxhgtd = _compute_maxslp_maxhgtd(ddxn_z_full, dual_edge_length)

    exner_exfac = exner_expol * minimum(1.0 - (4.0 * z_maxslp) ** 2, 1.0 - (0.002 * z_maxhgtd) ** 2)
    exner_exfac = maximum(0.0, exner_exfac)
    exner_exfac = where(
        z_maxslp > 1.5, maximum(-1.0 / 6.0, 1.0 / 9.0 * (1.5 - z_maxslp)), exner_exfac
    )

    return exner_exfac


@program(grid_type=GridType.UNSTRUCTURED)
def compute_exner_exfac(
    ddxn_z_full: fa.EdgeKField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    exner_exfac: fa.CellKField[wpfloat],
    exner_expol: wpfloat,
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    """
    Compute exner_exfac.

    Exner extrapolation reaches zero for a slope of 1/4 or a height difference of 500 m
    between adjacent grid points (empirically determined values). See mo_vertical_grid.f90
    """
    _exner_exfac_broadcast(
        exner_expol,
        out=exner_exfac
    )
    _compute_exner_exfac(
        ddxn_z_full=ddxn_z_full,
        dual_edge_length=dual_edge_length,
        exner_expol=exner_expol,
        out=exner_exfac,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_older_exner_exfac(backend):
    hs, he, vs, ve, exner_expol = 1, NC - 1, 1, NLEV - 1, 1.0 / 3.0
    ddxn = RNG.normal(0.0, 0.3, (NE, NLEV))
    ddxn[:3, :] *= 10.0
    dual = RNG.uniform(100.0, 1500.0, NE)
    exfac = RNG.random((NC, NLEV))
    compute_exner_exfac(ddxn, dual, exfac, exner_expol, hs, he, vs, ve, offset_provider=TABLES,
                        backend=backend)
    slopes = np.abs(nb(ddxn, "C2E"))
    maxslp = slopes.max(axis=1)
    maxhgtd = np.abs(nb(ddxn * dual[:, None], "C2E")).max(axis=1)
    want = np.maximum(0.0, exner_expol * np.minimum(1.0 - (4.0 * maxslp)**2,
                                                    1.0 - (0.002 * maxhgtd)**2))
    want = np.where(maxslp > 1.5, np.maximum(-1.0 / 6.0, (1.5 - maxslp) / 9.0), want)
    assert (maxslp > 1.5).any() and (want > 0.0).any()
    check(dict(exner_exfac=exfac),
          dict(exner_exfac=inside(want, np.full((NC, NLEV), exner_expol), hs, he, vs, ve)),
          rtol=1e-12)


@field_operator
def _compute_vwind_expl_wgt(vwind_impl_wgt: fa.CellField[wpfloat]) -> fa.CellField[wpfloat]:
    return 1.0 - vwind_impl_wgt


@program(grid_type=GridType.UNSTRUCTURED)
def compute_vwind_expl_wgt(
    vwind_impl_wgt: fa.CellField[wpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
):
    _compute_vwind_expl_wgt(
        vwind_impl_wgt=vwind_impl_wgt,
        out=vwind_expl_wgt,
        domain={CellDim: (horizontal_start, horizontal_end)},
    )


@field_operator
def _compute_vwind_impl_wgt_1(
    z_ddxn_z_half_e: fa.EdgeField[wpfloat],
    z_ddxt_z_half_e: fa.EdgeField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    vwind_offctr: wpfloat,
) -> fa.CellField[wpfloat]:
    z_ddx_1 = maximum(abs(z_ddxn_z_half_e(C2E[0])), abs(z_ddxt_z_half_e(C2E[0])))
    z_ddx_2 = maximum(abs(z_ddxn_z_half_e(C2E[1])), abs(z_ddxt_z_half_e(C2E[1])))
    z_ddx_3 = maximum(abs(z_ddxn_z_half_e(C2E[2])), abs(z_ddxt_z_half_e(C2E[2])))
    z_ddx_1_2 = maximum(z_ddx_1, z_ddx_2)
    z_maxslope = maximum(z_ddx_1_2, z_ddx_3)

    z_diff_1_2 = maximum(
        abs(z_ddxn_z_half_e(C2E[0]) * dual_edge_length(C2E[0])),
        abs(z_ddxn_z_half_e(C2E[1]) * dual_edge_length(C2E[1])),
    )
    z_diff = maximum(z_diff_1_2, abs(z_ddxn_z_half_e(C2E[2]) * dual_edge_length(C2E[2])))
    z_offctr_1 = maximum(vwind_offctr, 0.425 * z_maxslope ** (0.75))
    z_offctr = maximum(z_offctr_1, minimum(0.25, 0.00025 * (z_diff - 250.0)))
    z_offctr = minimum(maximum(vwind_offctr, 0.75), z_offctr)
    vwind_impl_wgt = 0.5 + z_offctr
    return vwind_impl_wgt


@field_operator
def _compute_vwind_impl_wgt_2(
    vct_a: fa.KField[wpfloat],
    z_ifc: fa.CellKField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat],
) -> fa.CellKField[wpfloat]:
    z_diff_2 = (z_ifc - z_ifc(Koff[-1])) / (vct_a - vct_a(Koff[-1]))
    vwind_impl_wgt_k = where(
        z_diff_2 < 0.6, maximum(vwind_impl_wgt, 1.2 - z_diff_2), vwind_impl_wgt
    )
    return vwind_impl_wgt_k


@program(grid_type=GridType.UNSTRUCTURED)
def compute_vwind_impl_wgt_partial(
    z_ddxn_z_half_e: fa.EdgeField[wpfloat],
    z_ddxt_z_half_e: fa.EdgeField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    vct_a: fa.KField[wpfloat],
    z_ifc: fa.CellKField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat],
    vwind_impl_wgt_k: fa.CellKField[wpfloat],
    vwind_offctr: wpfloat,
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    """
    Compute vwind_impl_wgt.

    See mo_vertical_grid.f90
    """
    _compute_vwind_impl_wgt_1(
        z_ddxn_z_half_e=z_ddxn_z_half_e,
        z_ddxt_z_half_e=z_ddxt_z_half_e,
        dual_edge_length=dual_edge_length,
        vwind_offctr=vwind_offctr,
        out=vwind_impl_wgt,
        domain={CellDim: (horizontal_start, horizontal_end)},
    )

    _compute_vwind_impl_wgt_2(
        vct_a=vct_a,
        z_ifc=z_ifc,
        vwind_impl_wgt=vwind_impl_wgt,
        out=vwind_impl_wgt_k,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


def _heights():
    """Half-level heights falling with the level, over terrain that differs by cell."""
    vct_a = np.linspace(20000.0, 0.0, NH)
    terrain = RNG.uniform(0.0, 6000.0, NC)
    sigma = np.linspace(0.0, 1.0, NH) ** 2
    return vct_a, vct_a[None, :] + terrain[:, None] * sigma[None, :]


@pytest.mark.parametrize("backend", BACKENDS)
def test_older_vwind_weights(backend):
    hs, he, vs, ve, offctr = 1, NC, 1, NH, 0.15
    vct_a, z_ifc = _heights()
    n = RNG.normal(0.0, 0.2, NE)
    t = RNG.normal(0.0, 0.2, NE)
    dual = RNG.uniform(500.0, 3000.0, NE)
    impl0, impl_k0, expl0 = RNG.random(NC), RNG.random((NC, NH)), RNG.random(NC)
    impl, impl_k, expl = impl0.copy(), impl_k0.copy(), expl0.copy()
    compute_vwind_impl_wgt_partial(n, t, dual, vct_a, z_ifc, impl, impl_k, offctr, hs, he, vs,
                                   ve, offset_provider=TABLES, backend=backend)
    compute_vwind_expl_wgt(impl, expl, hs, he, offset_provider=TABLES, backend=backend)

    maxslope = np.maximum(np.abs(nb(n, "C2E")), np.abs(nb(t, "C2E"))).max(axis=1)
    diff = np.abs(nb(n * dual, "C2E")).max(axis=1)
    z_offctr = np.maximum(offctr, 0.425 * maxslope**0.75)
    z_offctr = np.maximum(z_offctr, np.minimum(0.25, 0.00025 * (diff - 250.0)))
    z_offctr = np.minimum(max(offctr, 0.75), z_offctr)
    want_impl = inside(0.5 + z_offctr, impl0, hs, he)
    z_diff_2 = np.full((NC, NH), np.nan)
    z_diff_2[:, 1:] = (z_ifc[:, 1:] - z_ifc[:, :-1]) / (vct_a[1:] - vct_a[:-1])
    want_k = np.where(z_diff_2 < 0.6, np.maximum(want_impl[:, None], 1.2 - z_diff_2),
                      want_impl[:, None])
    assert (z_diff_2[hs:he, 1:] < 0.6).any() and (z_diff_2[hs:he, 1:] >= 0.6).any()
    check(dict(vwind_impl_wgt=impl, vwind_impl_wgt_k=impl_k, vwind_expl_wgt=expl),
          dict(vwind_impl_wgt=want_impl, vwind_impl_wgt_k=inside(want_k, impl_k0, hs, he, vs, ve),
               vwind_expl_wgt=inside(1.0 - want_impl, expl0, hs, he)), rtol=1e-12)


@field_operator
def _compute_d2dexdz2_fac1_mc(
    theta_ref_mc: fa.CellKField[vpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    d2dexdz2_fac1_mc: fa.CellKField[vpfloat],
    cpd: float,
    grav: wpfloat,
    igradp_method: int32,
    igradp_constant: int32,
) -> fa.CellKField[vpfloat]:
    if igradp_method <= igradp_constant:
        d2dexdz2_fac1_mc = -grav / (cpd * theta_ref_mc**2) * inv_ddqz_z_full

    return d2dexdz2_fac1_mc


@field_operator
def _compute_d2dexdz2_fac2_mc(
    theta_ref_mc: fa.CellKField[vpfloat],
    exner_ref_mc: fa.CellKField[vpfloat],
    z_mc: fa.CellKField[wpfloat],
    d2dexdz2_fac2_mc: fa.CellKField[vpfloat],
    cpd: float,
    grav: wpfloat,
    del_t_bg: wpfloat,
    h_scal_bg: wpfloat,
    igradp_method: int32,
    igradp_constant: int32,
) -> fa.CellKField[vpfloat]:
    if igradp_method <= igradp_constant:
        d2dexdz2_fac2_mc = (
            2.0
            * grav
            / (cpd * theta_ref_mc**3)
            * (grav / cpd - del_t_bg / h_scal_bg * exp(-z_mc / h_scal_bg))
            / exner_ref_mc
        )
    return d2dexdz2_fac2_mc


@program(grid_type=GridType.UNSTRUCTURED)
def compute_d2dexdz2_fac_mc(
    theta_ref_mc: fa.CellKField[vpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    exner_ref_mc: fa.CellKField[vpfloat],
    z_mc: fa.CellKField[wpfloat],
    d2dexdz2_fac1_mc: fa.CellKField[vpfloat],
    d2dexdz2_fac2_mc: fa.CellKField[vpfloat],
    cpd: float,
    grav: wpfloat,
    del_t_bg: wpfloat,
    h_scal_bg: wpfloat,
    igradp_method: int32,
    igradp_constant: int32,
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    """
    Compute d2dexdz2_fac1_mc and d2dexdz2_fac2_mc factors.

    See mo_vertical_grid.f90
    """

    _compute_d2dexdz2_fac1_mc(
        theta_ref_mc,
        inv_ddqz_z_full,
        d2dexdz2_fac1_mc,
        cpd,
        grav,
        igradp_method,
        igradp_constant,
        out=d2dexdz2_fac1_mc,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )

    _compute_d2dexdz2_fac2_mc(
        theta_ref_mc,
        exner_ref_mc,
        z_mc,
        d2dexdz2_fac2_mc,
        cpd,
        grav,
        del_t_bg,
        h_scal_bg,
        igradp_method,
        igradp_constant,
        out=d2dexdz2_fac2_mc,
        domain={
            CellDim: (horizontal_start, horizontal_end),
            KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("igradp_method", [3, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_older_d2dexdz2_factors(backend, igradp_method):
    hs, he, vs, ve = 0, NC - 2, 1, NLEV
    cpd, grav, del_t_bg, h_scal_bg = 1004.64, 9.80665, 75.0, 10000.0
    theta = RNG.uniform(280.0, 400.0, (NC, NLEV))
    inv_ddqz = RNG.uniform(1e-3, 1e-2, (NC, NLEV))
    exner = RNG.uniform(0.6, 1.0, (NC, NLEV))
    z_mc = RNG.uniform(0.0, 20000.0, (NC, NLEV))
    fac1_0, fac2_0 = RNG.random((NC, NLEV)), RNG.random((NC, NLEV))
    fac1, fac2 = fac1_0.copy(), fac2_0.copy()
    compute_d2dexdz2_fac_mc(theta, inv_ddqz, exner, z_mc, fac1, fac2, cpd, grav, del_t_bg,
                            h_scal_bg, igradp_method, 3, hs, he, vs, ve, offset_provider={},
                            backend=backend)
    if igradp_method <= 3:
        want1 = -grav / (cpd * theta**2) * inv_ddqz
        want2 = (2.0 * grav / (cpd * theta**3)
                 * (grav / cpd - del_t_bg / h_scal_bg * np.exp(-z_mc / h_scal_bg)) / exner)
    else:
        want1, want2 = fac1_0, fac2_0
    check(dict(fac1=fac1, fac2=fac2),
          dict(fac1=inside(want1, fac1_0, hs, he, vs, ve),
               fac2=inside(want2, fac2_0, hs, he, vs, ve)), rtol=1e-12)


@field_operator
def _compute_flat_idx(
    z_me: fa.EdgeKField[wpfloat],
    z_ifc: fa.CellKField[wpfloat],
    k_lev: fa.KField[int32],
) -> fa.EdgeKField[int32]:
    z_ifc_e_0 = z_ifc(E2C[0])
    z_ifc_e_k_0 = z_ifc_e_0(Koff[1])
    z_ifc_e_1 = z_ifc(E2C[1])
    z_ifc_e_k_1 = z_ifc_e_1(Koff[1])
    flat_idx = where(
        (z_me <= z_ifc_e_0) & (z_me >= z_ifc_e_k_0) & (z_me <= z_ifc_e_1) & (z_me >= z_ifc_e_k_1),
        k_lev,
        0,
    )
    return flat_idx


@program
def compute_flat_idx(
    z_me: fa.EdgeKField[wpfloat],
    z_ifc: fa.CellKField[wpfloat],
    k_lev: fa.KField[int32],
    flat_idx: fa.EdgeKField[int32],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_flat_idx(
        z_me=z_me,
        z_ifc=z_ifc,
        k_lev=k_lev,
        out=flat_idx,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@field_operator
def _compute_z_aux2(
    z_ifc: fa.CellField[wpfloat],
) -> fa.EdgeField[wpfloat]:
    extrapol_dist = 5.0
    z_aux1 = maximum(z_ifc(E2C[0]), z_ifc(E2C[1]))
    z_aux2 = z_aux1 - extrapol_dist

    return z_aux2


@program
def compute_z_aux2(
    z_ifc_sliced: fa.CellField[wpfloat],
    z_aux2: fa.EdgeField[wpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
):
    _compute_z_aux2(
        z_ifc=z_ifc_sliced, out=z_aux2, domain={dims.EdgeDim: (horizontal_start, horizontal_end)}
    )


@field_operator
def _compute_pg_edgeidx_vertidx(
    c_lin_e: Field[[dims.EdgeDim, dims.E2CDim], float],
    z_ifc: fa.CellKField[wpfloat],
    z_aux2: fa.EdgeField[wpfloat],
    e_owner_mask: fa.EdgeField[bool],
    flat_idx_max: fa.EdgeField[int32],
    e_lev: fa.EdgeField[int32],
    k_lev: fa.KField[int32],
    pg_edgeidx: fa.EdgeKField[int32],
    pg_vertidx: fa.EdgeKField[int32],
) -> tuple[fa.EdgeKField[int32], fa.EdgeKField[int32]]:
    e_lev = broadcast(e_lev, (EdgeDimM, KDimM))
    k_lev = broadcast(k_lev, (EdgeDimM, KDimM))
    z_mc = average_cell_kdim_level_up(z_ifc)
    z_me = _cell_2_edge_interpolation(in_field=z_mc, coeff=c_lin_e)
    pg_edgeidx = where(
        (k_lev >= (flat_idx_max + 1)) & (z_me < z_aux2) & e_owner_mask, e_lev, pg_edgeidx
    )
    pg_vertidx = where(
        (k_lev >= (flat_idx_max + 1)) & (z_me < z_aux2) & e_owner_mask, k_lev, pg_vertidx
    )
    return pg_edgeidx, pg_vertidx


@program
def compute_pg_edgeidx_vertidx(
    c_lin_e: Field[[dims.EdgeDim, dims.E2CDim], float],
    z_ifc: fa.CellKField[wpfloat],
    z_aux2: fa.EdgeField[wpfloat],
    e_owner_mask: fa.EdgeField[bool],
    flat_idx_max: fa.EdgeField[int32],
    e_lev: fa.EdgeField[int32],
    k_lev: fa.KField[int32],
    pg_edgeidx: fa.EdgeKField[int32],
    pg_vertidx: fa.EdgeKField[int32],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_pg_edgeidx_vertidx(
        c_lin_e=c_lin_e,
        z_ifc=z_ifc,
        z_aux2=z_aux2,
        e_owner_mask=e_owner_mask,
        flat_idx_max=flat_idx_max,
        e_lev=e_lev,
        k_lev=k_lev,
        pg_edgeidx=pg_edgeidx,
        pg_vertidx=pg_vertidx,
        out=(pg_edgeidx, pg_vertidx),
        domain={EdgeDimM: (horizontal_start, horizontal_end),
                KDimM: (vertical_start, vertical_end)},
    )


@field_operator
def _compute_pg_exdist_dsl(
    z_me: fa.EdgeKField[wpfloat],
    z_aux2: fa.EdgeField[wpfloat],
    e_owner_mask: fa.EdgeField[bool],
    flat_idx_max: fa.EdgeField[int32],
    k_lev: fa.KField[int32],
    pg_exdist_dsl: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    k_lev = broadcast(k_lev, (EdgeDimM, KDimM))
    pg_exdist_dsl = where(
        (k_lev >= (flat_idx_max + 1)) & (z_me < z_aux2) & e_owner_mask,
        z_me - z_aux2,
        pg_exdist_dsl,
    )
    return pg_exdist_dsl


@program
def compute_pg_exdist_dsl(
    z_aux2: fa.EdgeField[wpfloat],
    z_me: fa.EdgeKField[wpfloat],
    e_owner_mask: fa.EdgeField[bool],
    flat_idx_max: fa.EdgeField[int32],
    k_lev: fa.KField[int32],
    pg_exdist_dsl: fa.EdgeKField[wpfloat],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_pg_exdist_dsl(
        z_me=z_me,
        z_aux2=z_aux2,
        e_owner_mask=e_owner_mask,
        flat_idx_max=flat_idx_max,
        k_lev=k_lev,
        pg_exdist_dsl=pg_exdist_dsl,
        out=pg_exdist_dsl,
        domain={
            EdgeDimM: (horizontal_start, horizontal_end),
            KDimM: (vertical_start, vertical_end),
        },
    )


@field_operator
def _compute_pg_edgeidx_dsl(
    pg_edgeidx: fa.EdgeKField[int32],
    pg_vertidx: fa.EdgeKField[int32],
) -> fa.EdgeKField[bool]:
    pg_edgeidx_dsl = where((pg_edgeidx > 0) & (pg_vertidx > 0), True, False)
    return pg_edgeidx_dsl


@program
def compute_pg_edgeidx_dsl(
    pg_edgeidx: fa.EdgeKField[int32],
    pg_vertidx: fa.EdgeKField[int32],
    pg_edgeidx_dsl: fa.EdgeKField[bool],
    horizontal_start: int32,
    horizontal_end: int32,
    vertical_start: int32,
    vertical_end: int32,
):
    _compute_pg_edgeidx_dsl(
        pg_edgeidx=pg_edgeidx,
        pg_vertidx=pg_vertidx,
        out=pg_edgeidx_dsl,
        domain={
            EdgeDimM: (horizontal_start, horizontal_end),
            KDimM: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_older_flat_levels_and_pressure_gradient_extrapolation(backend):
    hs, he, vs, ve = 1, NE, 0, NLEV
    _, z_ifc = _heights()
    c_lin_e = np.full((NE, 2), 0.5)
    e2c = TABLES["E2C"]
    z_mc = 0.5 * (z_ifc[:, :-1] + z_ifc[:, 1:])
    z_me = 0.5 * (z_mc[e2c[:, 0]] + z_mc[e2c[:, 1]])
    k_lev = np.arange(NLEV, dtype=np.int32)
    e_lev = np.arange(NE, dtype=np.int32)
    flat0 = RNG.integers(-5, 5, (NE, NLEV)).astype(np.int32)
    flat = flat0.copy()
    compute_flat_idx(z_me, z_ifc, k_lev, flat, hs, he, vs, ve, offset_provider=TABLES,
                     backend=backend)
    a, b = z_ifc[e2c[:, 0]], z_ifc[e2c[:, 1]]
    inside_box = ((z_me <= a[:, :-1]) & (z_me >= a[:, 1:]) & (z_me <= b[:, :-1])
                  & (z_me >= b[:, 1:]))
    want_flat = np.where(inside_box, k_lev[None, :], 0)
    assert inside_box.any() and not inside_box.all()
    check(dict(flat_idx=flat), dict(flat_idx=inside(want_flat, flat0, hs, he, vs, ve)), rtol=0)
    flat_idx_max = want_flat.max(axis=1).astype(np.int32)

    z_aux2 = RNG.random(NE)
    compute_z_aux2(np.ascontiguousarray(z_ifc[:, NLEV]), z_aux2, 0, NE, offset_provider=TABLES,
                   backend=backend)
    want_aux2 = np.maximum(z_ifc[e2c[:, 0], NLEV], z_ifc[e2c[:, 1], NLEV]) - 5.0
    check(dict(z_aux2=z_aux2), dict(z_aux2=want_aux2), rtol=1e-12)

    owner = RNG.random(NE) < 0.8
    edgeidx0 = np.zeros((NE, NLEV), np.int32)
    vertidx0 = np.zeros((NE, NLEV), np.int32)
    edgeidx, vertidx = edgeidx0.copy(), vertidx0.copy()
    compute_pg_edgeidx_vertidx(c_lin_e, z_ifc, z_aux2, owner, flat_idx_max, e_lev, k_lev,
                               edgeidx, vertidx, hs, he, vs, ve, offset_provider=TABLES,
                               backend=backend)
    cond = ((k_lev[None, :] >= flat_idx_max[:, None] + 1) & (z_me < want_aux2[:, None])
            & owner[:, None])
    assert cond[hs:he].any() and not cond[hs:he].all()
    want_e = inside(np.where(cond, e_lev[:, None], edgeidx0), edgeidx0, hs, he, vs, ve)
    want_v = inside(np.where(cond, k_lev[None, :], vertidx0), vertidx0, hs, he, vs, ve)
    check(dict(pg_edgeidx=edgeidx, pg_vertidx=vertidx),
          dict(pg_edgeidx=want_e, pg_vertidx=want_v), rtol=0)

    dsl = np.zeros((NE, NLEV), bool)
    compute_pg_edgeidx_dsl(edgeidx, vertidx, dsl, 0, NE, 0, NLEV, offset_provider=TABLES,
                           backend=backend)
    exdist0 = RNG.random((NE, NLEV))
    exdist = exdist0.copy()
    compute_pg_exdist_dsl(z_aux2, z_me, owner, flat_idx_max, k_lev, exdist, hs, he, vs, ve,
                          offset_provider=TABLES, backend=backend)
    check(dict(pg_edgeidx_dsl=dsl, pg_exdist_dsl=exdist),
          dict(pg_edgeidx_dsl=(want_e > 0) & (want_v > 0),
               pg_exdist_dsl=inside(np.where(cond, z_me - want_aux2[:, None], exdist0), exdist0,
                                    hs, he, vs, ve)), rtol=1e-12)


# ================================================================== FFSL flux area patches
#
# icon4py's whole prepare_ffsl_flux_area_patches_list (the file raises the
# recursion limit for GT4Py): ``int32`` and ``bool`` helper operators called
# many times, the departure region split into three patches by six cases of
# nested ``where`` (24 fields reassigned case after case), 24 outputs written
# in place.  The expected values run the same reference code on NumPy arrays.


@gtx.field_operator
def ccw(
    p0_lon: fa.EdgeKField[ta.wpfloat],
    p0_lat: fa.EdgeKField[ta.wpfloat],
    p1_lon: fa.EdgeKField[ta.wpfloat],
    p1_lat: fa.EdgeKField[ta.wpfloat],
    p2_lon: fa.EdgeKField[ta.wpfloat],
    p2_lat: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[gtx.int32]:
    dx1dy2 = (p1_lon - p0_lon) * (p2_lat - p0_lat)
    dy1dx2 = (p1_lat - p0_lat) * (p2_lon - p0_lon)
    lccw = dx1dy2 > dy1dx2
    ccw_out = where(lccw, 1, -1)  # 1: clockwise, -1: counterclockwise
    return ccw_out


# Checks whether two lines intersect
@gtx.field_operator
def lintersect(
    line1_p1_lon: fa.EdgeKField[ta.wpfloat],
    line1_p1_lat: fa.EdgeKField[ta.wpfloat],
    line1_p2_lon: fa.EdgeKField[ta.wpfloat],
    line1_p2_lat: fa.EdgeKField[ta.wpfloat],
    line2_p1_lon: fa.EdgeKField[ta.wpfloat],
    line2_p1_lat: fa.EdgeKField[ta.wpfloat],
    line2_p2_lon: fa.EdgeKField[ta.wpfloat],
    line2_p2_lat: fa.EdgeKField[ta.wpfloat],
) -> fa.EdgeKField[bool]:
    intersect1 = ccw(
        line1_p1_lon,
        line1_p1_lat,
        line1_p2_lon,
        line1_p2_lat,
        line2_p1_lon,
        line2_p1_lat,
    ) * ccw(
        line1_p1_lon,
        line1_p1_lat,
        line1_p2_lon,
        line1_p2_lat,
        line2_p2_lon,
        line2_p2_lat,
    )
    intersect2 = ccw(
        line2_p1_lon,
        line2_p1_lat,
        line2_p2_lon,
        line2_p2_lat,
        line1_p1_lon,
        line1_p1_lat,
    ) * ccw(
        line2_p1_lon,
        line2_p1_lat,
        line2_p2_lon,
        line2_p2_lat,
        line1_p2_lon,
        line1_p2_lat,
    )
    lintersect_out = (intersect1 + intersect2) == -2

    return lintersect_out


# Compute intersection point of two lines in 2D
@gtx.field_operator
def line_intersect(
    line1_p1_lon: fa.EdgeKField[ta.wpfloat],
    line1_p1_lat: fa.EdgeKField[ta.wpfloat],
    line1_p2_lon: fa.EdgeKField[ta.wpfloat],
    line1_p2_lat: fa.EdgeKField[ta.wpfloat],
    line2_p1_lon: fa.EdgeKField[ta.wpfloat],
    line2_p1_lat: fa.EdgeKField[ta.wpfloat],
    line2_p2_lon: fa.EdgeKField[ta.wpfloat],
    line2_p2_lat: fa.EdgeKField[ta.wpfloat],
) -> tuple[fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat]]:
    # avoid division with zero
    d1 = line1_p2_lon - line1_p1_lon
    d1 = where(d1 != 0.0, d1, line1_p2_lon)

    d2 = line2_p2_lon - line2_p1_lon
    d2 = where(d2 != 0.0, d2, line2_p2_lon)

    m1 = (line1_p2_lat - line1_p1_lat) / d1
    m2 = (line2_p2_lat - line2_p1_lat) / d2

    intersect_1 = (line2_p1_lat - line1_p1_lat + m1 * line1_p1_lon - m2 * line2_p1_lon) / (m1 - m2)
    intersect_2 = line1_p1_lat + m1 * (intersect_1 - line1_p1_lon)

    return astype(intersect_1, vpfloat), astype(intersect_2, vpfloat)


@gtx.field_operator
def _prepare_ffsl_flux_area_patches_list(
    famask_int: fa.EdgeKField[gtx.int32],
    p_vn: fa.EdgeKField[ta.wpfloat],
    ptr_v3_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ptr_v3_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    tangent_orientation_dsl: fa.EdgeField[ta.wpfloat],
    dreg_patch0_1_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_1_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_2_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_2_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_3_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_3_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_4_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_4_lat_dsl: fa.EdgeKField[ta.vpfloat],
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
    fa.EdgeKField[ta.vpfloat],
    fa.EdgeKField[ta.vpfloat],
]:
    arrival_pts_1_lon_dsl = dreg_patch0_1_lon_dsl
    arrival_pts_1_lat_dsl = dreg_patch0_1_lat_dsl
    arrival_pts_2_lon_dsl = dreg_patch0_2_lon_dsl
    arrival_pts_2_lat_dsl = dreg_patch0_2_lat_dsl
    # indices have to be switched so that dep 1 belongs to arr 1 (and d2->a2)
    depart_pts_1_lon_dsl = dreg_patch0_4_lon_dsl
    depart_pts_1_lat_dsl = dreg_patch0_4_lat_dsl
    depart_pts_2_lon_dsl = dreg_patch0_3_lon_dsl
    depart_pts_2_lat_dsl = dreg_patch0_3_lat_dsl

    lvn_pos = p_vn >= 0.0

    # get flux area departure-line segment
    fl_line_p1_lon = astype(depart_pts_1_lon_dsl, wpfloat)
    fl_line_p1_lat = astype(depart_pts_1_lat_dsl, wpfloat)
    fl_line_p2_lon = astype(depart_pts_2_lon_dsl, wpfloat)
    fl_line_p2_lat = astype(depart_pts_2_lat_dsl, wpfloat)

    # get triangle edge 1 (A1V3)
    tri_line1_p1_lon = astype(arrival_pts_1_lon_dsl, wpfloat)
    tri_line1_p1_lat = astype(arrival_pts_1_lat_dsl, wpfloat)
    tri_line1_p2_lon = where(lvn_pos, ptr_v3_lon[E2CDim(0)], ptr_v3_lon[E2CDim(1)])
    tri_line1_p2_lat = where(lvn_pos, ptr_v3_lat[E2CDim(0)], ptr_v3_lat[E2CDim(1)])

    # get triangle edge 2 (A2V3)
    tri_line2_p1_lon = astype(arrival_pts_2_lon_dsl, wpfloat)
    tri_line2_p1_lat = astype(arrival_pts_2_lat_dsl, wpfloat)
    tri_line2_p2_lon = where(lvn_pos, ptr_v3_lon[E2CDim(0)], ptr_v3_lon[E2CDim(1)])
    tri_line2_p2_lat = where(lvn_pos, ptr_v3_lat[E2CDim(0)], ptr_v3_lat[E2CDim(1)])

    # Create first mask does departure-line segment intersects with A1V3
    lintersect_line1 = lintersect(
        fl_line_p1_lon,
        fl_line_p1_lat,
        fl_line_p2_lon,
        fl_line_p2_lat,
        tri_line1_p1_lon,
        tri_line1_p1_lat,
        tri_line1_p2_lon,
        tri_line1_p2_lat,
    )
    # Create first mask does departure-line segment intersects with A2V3
    lintersect_line2 = lintersect(
        fl_line_p1_lon,
        fl_line_p1_lat,
        fl_line_p2_lon,
        fl_line_p2_lat,
        tri_line2_p1_lon,
        tri_line2_p1_lat,
        tri_line2_p2_lon,
        tri_line2_p2_lat,
    )

    lvn_sys_pos = (p_vn * broadcast(tangent_orientation_dsl, (dims.EdgeDim, dims.KDim))) >= 0.0
    famask_bool = famask_int == 1
    # ------------------------------------------------- Case 1
    mask_case1 = lintersect_line1 & lintersect_line2 & famask_bool
    ps1_x, ps1_y = line_intersect(
        fl_line_p1_lon,
        fl_line_p1_lat,
        fl_line_p2_lon,
        fl_line_p2_lat,
        tri_line1_p1_lon,
        tri_line1_p1_lat,
        tri_line1_p2_lon,
        tri_line1_p2_lat,
    )
    ps2_x, ps2_y = line_intersect(
        fl_line_p1_lon,
        fl_line_p1_lat,
        fl_line_p2_lon,
        fl_line_p2_lat,
        tri_line2_p1_lon,
        tri_line2_p1_lat,
        tri_line2_p2_lon,
        tri_line2_p2_lat,
    )

    # Case 1 - patch 0
    dreg_patch0_1_lon_dsl = where(mask_case1, arrival_pts_1_lon_dsl, dreg_patch0_1_lon_dsl)
    dreg_patch0_1_lat_dsl = where(mask_case1, arrival_pts_1_lat_dsl, dreg_patch0_1_lat_dsl)
    dreg_patch0_2_lon_dsl = where(
        mask_case1, where(lvn_sys_pos, arrival_pts_2_lon_dsl, ps1_x), dreg_patch0_2_lon_dsl
    )
    dreg_patch0_2_lat_dsl = where(
        mask_case1, where(lvn_sys_pos, arrival_pts_2_lat_dsl, ps1_y), dreg_patch0_2_lat_dsl
    )
    dreg_patch0_3_lon_dsl = where(mask_case1, ps2_x, dreg_patch0_3_lon_dsl)
    dreg_patch0_3_lat_dsl = where(mask_case1, ps2_y, dreg_patch0_3_lat_dsl)
    dreg_patch0_4_lon_dsl = where(
        mask_case1, where(lvn_sys_pos, ps1_x, arrival_pts_2_lon_dsl), dreg_patch0_4_lon_dsl
    )
    dreg_patch0_4_lat_dsl = where(
        mask_case1, where(lvn_sys_pos, ps1_y, arrival_pts_2_lat_dsl), dreg_patch0_4_lat_dsl
    )
    # Case 1 - patch 1
    dreg_patch1_1_lon_vmask = where(mask_case1, arrival_pts_1_lon_dsl, 0.0)
    dreg_patch1_1_lat_vmask = where(mask_case1, arrival_pts_1_lat_dsl, 0.0)
    dreg_patch1_4_lon_vmask = where(mask_case1, arrival_pts_1_lon_dsl, 0.0)
    dreg_patch1_4_lat_vmask = where(mask_case1, arrival_pts_1_lat_dsl, 0.0)
    dreg_patch1_2_lon_vmask = where(
        mask_case1, where(lvn_sys_pos, ps1_x, depart_pts_1_lon_dsl), 0.0
    )
    dreg_patch1_2_lat_vmask = where(
        mask_case1, where(lvn_sys_pos, ps1_y, depart_pts_1_lat_dsl), 0.0
    )
    dreg_patch1_3_lon_vmask = where(
        mask_case1, where(lvn_sys_pos, depart_pts_1_lon_dsl, ps1_x), 0.0
    )
    dreg_patch1_3_lat_vmask = where(
        mask_case1, where(lvn_sys_pos, depart_pts_1_lat_dsl, ps1_y), 0.0
    )
    # Case 1 - patch 2
    dreg_patch2_1_lon_vmask = where(mask_case1, arrival_pts_2_lon_dsl, 0.0)
    dreg_patch2_1_lat_vmask = where(mask_case1, arrival_pts_2_lat_dsl, 0.0)
    dreg_patch2_4_lon_vmask = where(mask_case1, arrival_pts_2_lon_dsl, 0.0)
    dreg_patch2_4_lat_vmask = where(mask_case1, arrival_pts_2_lat_dsl, 0.0)
    dreg_patch2_2_lon_vmask = where(
        mask_case1, where(lvn_sys_pos, depart_pts_2_lon_dsl, ps2_x), 0.0
    )
    dreg_patch2_2_lat_vmask = where(
        mask_case1, where(lvn_sys_pos, depart_pts_2_lat_dsl, ps2_y), 0.0
    )
    dreg_patch2_3_lon_vmask = where(
        mask_case1, where(lvn_sys_pos, ps2_x, depart_pts_2_lon_dsl), 0.0
    )
    dreg_patch2_3_lat_vmask = where(
        mask_case1, where(lvn_sys_pos, ps2_y, depart_pts_2_lat_dsl), 0.0
    )

    # ------------------------------------------------- Case 2a
    mask_case2a = lintersect_line1 & (~lintersect_line2) & famask_bool
    # Case 2a - patch 0
    dreg_patch0_1_lon_dsl = where(mask_case2a, arrival_pts_1_lon_dsl, dreg_patch0_1_lon_dsl)
    dreg_patch0_1_lat_dsl = where(mask_case2a, arrival_pts_1_lat_dsl, dreg_patch0_1_lat_dsl)
    dreg_patch0_2_lon_dsl = where(
        mask_case2a, where(lvn_sys_pos, arrival_pts_2_lon_dsl, ps1_x), dreg_patch0_2_lon_dsl
    )
    dreg_patch0_2_lat_dsl = where(
        mask_case2a, where(lvn_sys_pos, arrival_pts_2_lat_dsl, ps1_y), dreg_patch0_2_lat_dsl
    )
    dreg_patch0_3_lon_dsl = where(mask_case2a, depart_pts_2_lon_dsl, dreg_patch0_3_lon_dsl)
    dreg_patch0_3_lat_dsl = where(mask_case2a, depart_pts_2_lat_dsl, dreg_patch0_3_lat_dsl)
    dreg_patch0_4_lon_dsl = where(
        mask_case2a, where(lvn_sys_pos, ps1_x, arrival_pts_2_lon_dsl), dreg_patch0_4_lon_dsl
    )
    dreg_patch0_4_lat_dsl = where(
        mask_case2a, where(lvn_sys_pos, ps1_y, arrival_pts_2_lat_dsl), dreg_patch0_4_lat_dsl
    )
    # Case 2a - patch 1
    dreg_patch1_1_lon_vmask = where(mask_case2a, arrival_pts_1_lon_dsl, dreg_patch1_1_lon_vmask)
    dreg_patch1_1_lat_vmask = where(mask_case2a, arrival_pts_1_lat_dsl, dreg_patch1_1_lat_vmask)
    dreg_patch1_4_lon_vmask = where(mask_case2a, arrival_pts_1_lon_dsl, dreg_patch1_4_lon_vmask)
    dreg_patch1_4_lat_vmask = where(mask_case2a, arrival_pts_1_lat_dsl, dreg_patch1_4_lat_vmask)
    dreg_patch1_2_lon_vmask = where(
        mask_case2a, where(lvn_sys_pos, ps1_x, depart_pts_1_lon_dsl), dreg_patch1_2_lon_vmask
    )
    dreg_patch1_2_lat_vmask = where(
        mask_case2a, where(lvn_sys_pos, ps1_y, depart_pts_1_lat_dsl), dreg_patch1_2_lat_vmask
    )
    dreg_patch1_3_lon_vmask = where(
        mask_case2a, where(lvn_sys_pos, depart_pts_1_lon_dsl, ps1_x), dreg_patch1_3_lon_vmask
    )
    dreg_patch1_3_lat_vmask = where(
        mask_case2a, where(lvn_sys_pos, depart_pts_1_lat_dsl, ps1_y), dreg_patch1_3_lat_vmask
    )
    # Case 2a - patch 2
    dreg_patch2_1_lon_vmask = where(mask_case2a, 0.0, dreg_patch2_1_lon_vmask)
    dreg_patch2_1_lat_vmask = where(mask_case2a, 0.0, dreg_patch2_1_lat_vmask)
    dreg_patch2_2_lon_vmask = where(mask_case2a, 0.0, dreg_patch2_2_lon_vmask)
    dreg_patch2_2_lat_vmask = where(mask_case2a, 0.0, dreg_patch2_2_lat_vmask)
    dreg_patch2_3_lon_vmask = where(mask_case2a, 0.0, dreg_patch2_3_lon_vmask)
    dreg_patch2_3_lat_vmask = where(mask_case2a, 0.0, dreg_patch2_3_lat_vmask)
    dreg_patch2_4_lon_vmask = where(mask_case2a, 0.0, dreg_patch2_4_lon_vmask)
    dreg_patch2_4_lat_vmask = where(mask_case2a, 0.0, dreg_patch2_4_lat_vmask)

    # -------------------------------------------------- Case 2b
    mask_case2b = lintersect_line2 & (~lintersect_line1) & famask_bool
    # Case 2b - patch 0
    dreg_patch0_1_lon_dsl = where(mask_case2b, arrival_pts_1_lon_dsl, dreg_patch0_1_lon_dsl)
    dreg_patch0_1_lat_dsl = where(mask_case2b, arrival_pts_1_lat_dsl, dreg_patch0_1_lat_dsl)
    dreg_patch0_2_lon_dsl = where(
        mask_case2b,
        where(lvn_sys_pos, arrival_pts_2_lon_dsl, depart_pts_1_lon_dsl),
        dreg_patch0_2_lon_dsl,
    )
    dreg_patch0_2_lat_dsl = where(
        mask_case2b,
        where(lvn_sys_pos, arrival_pts_2_lat_dsl, depart_pts_1_lat_dsl),
        dreg_patch0_2_lat_dsl,
    )
    dreg_patch0_3_lon_dsl = where(mask_case2b, ps2_x, dreg_patch0_3_lon_dsl)
    dreg_patch0_3_lat_dsl = where(mask_case2b, ps2_y, dreg_patch0_3_lat_dsl)
    dreg_patch0_4_lon_dsl = where(
        mask_case2b,
        where(lvn_sys_pos, depart_pts_1_lon_dsl, arrival_pts_2_lon_dsl),
        dreg_patch0_4_lon_dsl,
    )
    dreg_patch0_4_lat_dsl = where(
        mask_case2b,
        where(lvn_sys_pos, depart_pts_1_lat_dsl, arrival_pts_2_lat_dsl),
        dreg_patch0_4_lat_dsl,
    )
    # Case 2b - patch 1
    dreg_patch1_1_lon_vmask = where(mask_case2b, 0.0, dreg_patch1_1_lon_vmask)
    dreg_patch1_1_lat_vmask = where(mask_case2b, 0.0, dreg_patch1_1_lat_vmask)
    dreg_patch1_2_lon_vmask = where(mask_case2b, 0.0, dreg_patch1_2_lon_vmask)
    dreg_patch1_2_lat_vmask = where(mask_case2b, 0.0, dreg_patch1_2_lat_vmask)
    dreg_patch1_3_lon_vmask = where(mask_case2b, 0.0, dreg_patch1_3_lon_vmask)
    dreg_patch1_3_lat_vmask = where(mask_case2b, 0.0, dreg_patch1_3_lat_vmask)
    dreg_patch1_4_lon_vmask = where(mask_case2b, 0.0, dreg_patch1_4_lon_vmask)
    dreg_patch1_4_lat_vmask = where(mask_case2b, 0.0, dreg_patch1_4_lat_vmask)
    # Case 2b - patch 2
    dreg_patch2_1_lon_vmask = where(mask_case2b, arrival_pts_2_lon_dsl, dreg_patch2_1_lon_vmask)
    dreg_patch2_1_lat_vmask = where(mask_case2b, arrival_pts_2_lat_dsl, dreg_patch2_1_lat_vmask)
    dreg_patch2_4_lon_vmask = where(mask_case2b, arrival_pts_2_lon_dsl, dreg_patch2_4_lon_vmask)
    dreg_patch2_4_lat_vmask = where(mask_case2b, arrival_pts_2_lat_dsl, dreg_patch2_4_lat_vmask)
    dreg_patch2_2_lon_vmask = where(
        mask_case2b, where(lvn_sys_pos, depart_pts_2_lon_dsl, ps2_x), dreg_patch2_2_lon_vmask
    )
    dreg_patch2_2_lat_vmask = where(
        mask_case2b, where(lvn_sys_pos, depart_pts_2_lat_dsl, ps2_y), dreg_patch2_2_lat_vmask
    )
    dreg_patch2_3_lon_vmask = where(
        mask_case2b, where(lvn_sys_pos, ps2_x, depart_pts_2_lon_dsl), dreg_patch2_3_lon_vmask
    )
    dreg_patch2_3_lat_vmask = where(
        mask_case2b, where(lvn_sys_pos, ps2_y, depart_pts_2_lat_dsl), dreg_patch2_3_lat_vmask
    )

    # flux area edge 1 and 2
    fl_e1_p1_lon = astype(arrival_pts_1_lon_dsl, wpfloat)
    fl_e1_p1_lat = astype(arrival_pts_1_lat_dsl, wpfloat)
    fl_e1_p2_lon = astype(depart_pts_1_lon_dsl, wpfloat)
    fl_e1_p2_lat = astype(depart_pts_1_lat_dsl, wpfloat)
    fl_e2_p1_lon = astype(arrival_pts_2_lon_dsl, wpfloat)
    fl_e2_p1_lat = astype(arrival_pts_2_lat_dsl, wpfloat)
    fl_e2_p2_lon = astype(depart_pts_2_lon_dsl, wpfloat)
    fl_e2_p2_lat = astype(depart_pts_2_lat_dsl, wpfloat)

    # ----------------------------------------------- Case 3a
    # Check whether flux area edge 2 intersects with triangle edge 1
    lintersect_e2_line1 = lintersect(
        fl_e2_p1_lon,
        fl_e2_p1_lat,
        fl_e2_p2_lon,
        fl_e2_p2_lat,
        tri_line1_p1_lon,
        tri_line1_p1_lat,
        tri_line1_p2_lon,
        tri_line1_p2_lat,
    )
    mask_case3a = lintersect_e2_line1 & famask_bool
    pi1_x, pi1_y = line_intersect(
        fl_e2_p1_lon,
        fl_e2_p1_lat,
        fl_e2_p2_lon,
        fl_e2_p2_lat,
        tri_line1_p1_lon,
        tri_line1_p1_lat,
        tri_line1_p2_lon,
        tri_line1_p2_lat,
    )
    # Case 3a - patch 0
    dreg_patch0_1_lon_dsl = where(mask_case3a, arrival_pts_1_lon_dsl, dreg_patch0_1_lon_dsl)
    dreg_patch0_1_lat_dsl = where(mask_case3a, arrival_pts_1_lat_dsl, dreg_patch0_1_lat_dsl)
    dreg_patch0_2_lon_dsl = where(
        mask_case3a,
        where(lvn_sys_pos, arrival_pts_2_lon_dsl, depart_pts_1_lon_dsl),
        dreg_patch0_2_lon_dsl,
    )
    dreg_patch0_2_lat_dsl = where(
        mask_case3a,
        where(lvn_sys_pos, arrival_pts_2_lat_dsl, depart_pts_1_lat_dsl),
        dreg_patch0_2_lat_dsl,
    )
    dreg_patch0_3_lon_dsl = where(mask_case3a, ps2_x, dreg_patch0_3_lon_dsl)
    dreg_patch0_3_lat_dsl = where(mask_case3a, ps2_y, dreg_patch0_3_lat_dsl)
    dreg_patch0_4_lon_dsl = where(
        mask_case3a,
        where(lvn_sys_pos, depart_pts_1_lon_dsl, arrival_pts_2_lon_dsl),
        dreg_patch0_4_lon_dsl,
    )
    dreg_patch0_4_lat_dsl = where(
        mask_case3a,
        where(lvn_sys_pos, depart_pts_1_lat_dsl, arrival_pts_2_lat_dsl),
        dreg_patch0_4_lat_dsl,
    )
    # Case 3a - patch 1
    dreg_patch1_1_lon_vmask = where(mask_case3a, arrival_pts_1_lon_dsl, dreg_patch1_1_lon_vmask)
    dreg_patch1_1_lat_vmask = where(mask_case3a, arrival_pts_1_lat_dsl, dreg_patch1_1_lat_vmask)
    dreg_patch1_2_lon_vmask = where(
        mask_case3a,
        where(lvn_sys_pos, pi1_x, depart_pts_2_lon_dsl),
        dreg_patch1_2_lon_vmask,
    )
    dreg_patch1_2_lat_vmask = where(
        mask_case3a,
        where(lvn_sys_pos, pi1_y, depart_pts_2_lat_dsl),
        dreg_patch1_2_lat_vmask,
    )
    dreg_patch1_3_lon_vmask = where(mask_case3a, depart_pts_1_lon_dsl, dreg_patch1_3_lon_vmask)
    dreg_patch1_3_lat_vmask = where(mask_case3a, depart_pts_1_lat_dsl, dreg_patch1_3_lat_vmask)
    dreg_patch1_4_lon_vmask = where(
        mask_case3a,
        where(lvn_sys_pos, depart_pts_1_lon_dsl, pi1_x),
        dreg_patch1_4_lon_vmask,
    )
    dreg_patch1_4_lat_vmask = where(
        mask_case3a,
        where(lvn_sys_pos, depart_pts_1_lat_dsl, pi1_y),
        dreg_patch1_4_lat_vmask,
    )
    # Case 3a - patch 2
    dreg_patch2_1_lon_vmask = where(mask_case3a, 0.0, dreg_patch2_1_lon_vmask)
    dreg_patch2_1_lat_vmask = where(mask_case3a, 0.0, dreg_patch2_1_lat_vmask)
    dreg_patch2_2_lon_vmask = where(mask_case3a, 0.0, dreg_patch2_2_lon_vmask)
    dreg_patch2_2_lat_vmask = where(mask_case3a, 0.0, dreg_patch2_2_lat_vmask)
    dreg_patch2_3_lon_vmask = where(mask_case3a, 0.0, dreg_patch2_3_lon_vmask)
    dreg_patch2_3_lat_vmask = where(mask_case3a, 0.0, dreg_patch2_3_lat_vmask)
    dreg_patch2_4_lon_vmask = where(mask_case3a, 0.0, dreg_patch2_4_lon_vmask)
    dreg_patch2_4_lat_vmask = where(mask_case3a, 0.0, dreg_patch2_4_lat_vmask)

    # ------------------------------------------------ Case 3b
    # Check whether flux area edge 1 intersects with triangle edge 2
    lintersect_e1_line2 = lintersect(
        fl_e1_p1_lon,
        fl_e1_p1_lat,
        fl_e1_p2_lon,
        fl_e1_p2_lat,
        tri_line2_p1_lon,
        tri_line2_p1_lat,
        tri_line2_p2_lon,
        tri_line2_p2_lat,
    )
    mask_case3b = lintersect_e1_line2 & famask_bool
    pi2_x, pi2_y = line_intersect(
        fl_e1_p1_lon,
        fl_e1_p1_lat,
        fl_e1_p2_lon,
        fl_e1_p2_lat,
        tri_line2_p1_lon,
        tri_line2_p1_lat,
        tri_line2_p2_lon,
        tri_line2_p2_lat,
    )
    # Case 3b - patch 0
    dreg_patch0_1_lon_dsl = where(mask_case3b, arrival_pts_1_lon_dsl, dreg_patch0_1_lon_dsl)
    dreg_patch0_1_lat_dsl = where(mask_case3b, arrival_pts_1_lat_dsl, dreg_patch0_1_lat_dsl)
    dreg_patch0_4_lon_dsl = where(mask_case3b, arrival_pts_1_lon_dsl, dreg_patch0_4_lon_dsl)
    dreg_patch0_4_lat_dsl = where(mask_case3b, arrival_pts_1_lat_dsl, dreg_patch0_4_lat_dsl)
    dreg_patch0_2_lon_dsl = where(
        mask_case3b, where(lvn_sys_pos, arrival_pts_2_lon_dsl, pi2_x), dreg_patch0_2_lon_dsl
    )
    dreg_patch0_2_lat_dsl = where(
        mask_case3b, where(lvn_sys_pos, arrival_pts_2_lat_dsl, pi2_y), dreg_patch0_2_lat_dsl
    )
    dreg_patch0_3_lon_dsl = where(
        mask_case3b, where(lvn_sys_pos, pi2_x, arrival_pts_2_lon_dsl), dreg_patch0_3_lon_dsl
    )
    dreg_patch0_3_lat_dsl = where(
        mask_case3b, where(lvn_sys_pos, pi2_y, arrival_pts_2_lat_dsl), dreg_patch0_3_lat_dsl
    )
    # Case 3b - patch 1
    dreg_patch1_1_lon_vmask = where(mask_case3b, 0.0, dreg_patch1_1_lon_vmask)
    dreg_patch1_1_lat_vmask = where(mask_case3b, 0.0, dreg_patch1_1_lat_vmask)
    dreg_patch1_2_lon_vmask = where(mask_case3b, 0.0, dreg_patch1_2_lon_vmask)
    dreg_patch1_2_lat_vmask = where(mask_case3b, 0.0, dreg_patch1_2_lat_vmask)
    dreg_patch1_3_lon_vmask = where(mask_case3b, 0.0, dreg_patch1_3_lon_vmask)
    dreg_patch1_3_lat_vmask = where(mask_case3b, 0.0, dreg_patch1_3_lat_vmask)
    dreg_patch1_4_lon_vmask = where(mask_case3b, 0.0, dreg_patch1_4_lon_vmask)
    dreg_patch1_4_lat_vmask = where(mask_case3b, 0.0, dreg_patch1_4_lat_vmask)
    # Case 3b - patch 2
    dreg_patch2_1_lon_vmask = where(mask_case3b, arrival_pts_2_lon_dsl, dreg_patch2_1_lon_vmask)
    dreg_patch2_1_lat_vmask = where(mask_case3b, arrival_pts_2_lat_dsl, dreg_patch2_1_lat_vmask)
    dreg_patch2_2_lon_vmask = where(
        mask_case3b, where(lvn_sys_pos, depart_pts_2_lon_dsl, pi2_x), dreg_patch2_2_lon_vmask
    )
    dreg_patch2_2_lat_vmask = where(
        mask_case3b, where(lvn_sys_pos, depart_pts_2_lat_dsl, pi2_y), dreg_patch2_2_lat_vmask
    )
    dreg_patch2_3_lon_vmask = where(mask_case3b, depart_pts_1_lon_dsl, dreg_patch2_3_lon_vmask)
    dreg_patch2_3_lat_vmask = where(mask_case3b, depart_pts_1_lat_dsl, dreg_patch2_3_lat_vmask)
    dreg_patch2_4_lon_vmask = where(
        mask_case3b, where(lvn_sys_pos, pi2_x, depart_pts_2_lon_dsl), dreg_patch2_4_lon_vmask
    )
    dreg_patch2_4_lat_vmask = where(
        mask_case3b, where(lvn_sys_pos, pi2_y, depart_pts_2_lat_dsl), dreg_patch2_4_lat_vmask
    )

    # --------------------------------------------- Case 4
    # NB: Next line acts as the "ELSE IF", indices that already previously matched one of the
    # above conditions can't be overwritten by this new condition.
    indices_previously_matched = mask_case3b | mask_case3a | mask_case2b | mask_case2a | mask_case1
    #    mask_case4 = (abs(p_vn) < 0.1) & famask_bool & (not indices_previously_matched)
    #    we insert also the error indices
    mask_case4 = famask_bool & (~indices_previously_matched)
    # Case 4 - patch 0 - no change
    # Case 4 - patch 1
    dreg_patch1_1_lon_vmask = where(mask_case4, 0.0, dreg_patch1_1_lon_vmask)
    dreg_patch1_1_lat_vmask = where(mask_case4, 0.0, dreg_patch1_1_lat_vmask)
    dreg_patch1_2_lon_vmask = where(mask_case4, 0.0, dreg_patch1_2_lon_vmask)
    dreg_patch1_2_lat_vmask = where(mask_case4, 0.0, dreg_patch1_2_lat_vmask)
    dreg_patch1_3_lon_vmask = where(mask_case4, 0.0, dreg_patch1_3_lon_vmask)
    dreg_patch1_3_lat_vmask = where(mask_case4, 0.0, dreg_patch1_3_lat_vmask)
    dreg_patch1_4_lon_vmask = where(mask_case4, 0.0, dreg_patch1_4_lon_vmask)
    dreg_patch1_4_lat_vmask = where(mask_case4, 0.0, dreg_patch1_4_lat_vmask)
    # Case 4 - patch 2
    dreg_patch2_1_lon_vmask = where(mask_case4, 0.0, dreg_patch2_1_lon_vmask)
    dreg_patch2_1_lat_vmask = where(mask_case4, 0.0, dreg_patch2_1_lat_vmask)
    dreg_patch2_2_lon_vmask = where(mask_case4, 0.0, dreg_patch2_2_lon_vmask)
    dreg_patch2_2_lat_vmask = where(mask_case4, 0.0, dreg_patch2_2_lat_vmask)
    dreg_patch2_3_lon_vmask = where(mask_case4, 0.0, dreg_patch2_3_lon_vmask)
    dreg_patch2_3_lat_vmask = where(mask_case4, 0.0, dreg_patch2_3_lat_vmask)
    dreg_patch2_4_lon_vmask = where(mask_case4, 0.0, dreg_patch2_4_lon_vmask)
    dreg_patch2_4_lat_vmask = where(mask_case4, 0.0, dreg_patch2_4_lat_vmask)

    return (
        dreg_patch0_1_lon_dsl,
        dreg_patch0_1_lat_dsl,
        dreg_patch0_2_lon_dsl,
        dreg_patch0_2_lat_dsl,
        dreg_patch0_3_lon_dsl,
        dreg_patch0_3_lat_dsl,
        dreg_patch0_4_lon_dsl,
        dreg_patch0_4_lat_dsl,
        dreg_patch1_1_lon_vmask,
        dreg_patch1_1_lat_vmask,
        dreg_patch1_2_lon_vmask,
        dreg_patch1_2_lat_vmask,
        dreg_patch1_3_lon_vmask,
        dreg_patch1_3_lat_vmask,
        dreg_patch1_4_lon_vmask,
        dreg_patch1_4_lat_vmask,
        dreg_patch2_1_lon_vmask,
        dreg_patch2_1_lat_vmask,
        dreg_patch2_2_lon_vmask,
        dreg_patch2_2_lat_vmask,
        dreg_patch2_3_lon_vmask,
        dreg_patch2_3_lat_vmask,
        dreg_patch2_4_lon_vmask,
        dreg_patch2_4_lat_vmask,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def prepare_ffsl_flux_area_patches_list(
    famask_int: fa.EdgeKField[gtx.int32],
    p_vn: fa.EdgeKField[ta.wpfloat],
    ptr_v3_lon: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    ptr_v3_lat: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    tangent_orientation_dsl: fa.EdgeField[ta.wpfloat],
    dreg_patch0_1_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_1_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_2_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_2_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_3_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_3_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_4_lon_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch0_4_lat_dsl: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_1_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_1_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_2_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_2_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_3_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_3_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_4_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch1_4_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_1_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_1_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_2_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_2_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_3_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_3_lat_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_4_lon_vmask: fa.EdgeKField[ta.vpfloat],
    dreg_patch2_4_lat_vmask: fa.EdgeKField[ta.vpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _prepare_ffsl_flux_area_patches_list(
        famask_int,
        p_vn,
        ptr_v3_lon,
        ptr_v3_lat,
        tangent_orientation_dsl,
        dreg_patch0_1_lon_dsl,
        dreg_patch0_1_lat_dsl,
        dreg_patch0_2_lon_dsl,
        dreg_patch0_2_lat_dsl,
        dreg_patch0_3_lon_dsl,
        dreg_patch0_3_lat_dsl,
        dreg_patch0_4_lon_dsl,
        dreg_patch0_4_lat_dsl,
        out=(
            dreg_patch0_1_lon_dsl,
            dreg_patch0_1_lat_dsl,
            dreg_patch0_2_lon_dsl,
            dreg_patch0_2_lat_dsl,
            dreg_patch0_3_lon_dsl,
            dreg_patch0_3_lat_dsl,
            dreg_patch0_4_lon_dsl,
            dreg_patch0_4_lat_dsl,
            dreg_patch1_1_lon_vmask,
            dreg_patch1_1_lat_vmask,
            dreg_patch1_2_lon_vmask,
            dreg_patch1_2_lat_vmask,
            dreg_patch1_3_lon_vmask,
            dreg_patch1_3_lat_vmask,
            dreg_patch1_4_lon_vmask,
            dreg_patch1_4_lat_vmask,
            dreg_patch2_1_lon_vmask,
            dreg_patch2_1_lat_vmask,
            dreg_patch2_2_lon_vmask,
            dreg_patch2_2_lat_vmask,
            dreg_patch2_3_lon_vmask,
            dreg_patch2_3_lat_vmask,
            dreg_patch2_4_lon_vmask,
            dreg_patch2_4_lat_vmask,
        ),
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _on_numpy(operator, namespace):
    """The Python function of ``operator`` run on NumPy arrays: the reference code itself."""
    return types.FunctionType(operator.__wrapped__.__code__, namespace)


def _ffsl_patches_numpy(*args):
    namespace = dict(
        where=np.where, astype=lambda x, _: np.asarray(x, dtype=np.float64),
        broadcast=lambda x, _: np.asarray(x)[:, None], E2CDim=lambda i: (slice(None), i, None),
        dims=dims, gtx=gtx, wpfloat=wpfloat, vpfloat=vpfloat)
    for op in (ccw, lintersect, line_intersect):
        namespace[op.__wrapped__.__name__] = _on_numpy(op, namespace)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _on_numpy(_prepare_ffsl_flux_area_patches_list, namespace)(*args)


_PATCH_NAMES = [f"dreg_patch{p}_{c}_{ll}_{'dsl' if p == 0 else 'vmask'}"
                for p in range(3) for c in range(1, 5) for ll in ("lon", "lat")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_prepare_ffsl_flux_area_patches_list(backend):
    hs, he, vs, ve = 1, NE - 1, 0, NLEV
    shape = (NE, NLEV)
    inputs = dict(famask_int=(RNG.random(shape) < 0.8).astype(np.int32),
                  p_vn=RNG.standard_normal(shape), ptr_v3_lon=RNG.standard_normal((NE, 2)),
                  ptr_v3_lat=RNG.standard_normal((NE, 2)),
                  tangent_orientation_dsl=np.where(RNG.random(NE) < 0.5, -1.0, 1.0))
    patches = {n: RNG.standard_normal(shape) for n in _PATCH_NAMES}
    want = _ffsl_patches_numpy(*inputs.values(), *(patches[n] for n in _PATCH_NAMES[:8]))
    got = {n: v.copy() for n, v in patches.items()}
    prepare_ffsl_flux_area_patches_list(**inputs, **got, horizontal_start=hs, horizontal_end=he,
                                        vertical_start=vs, vertical_end=ve,
                                        offset_provider=TABLES, backend=backend)
    expected = {n: inside(w, patches[n], hs, he, vs, ve) for n, w in zip(_PATCH_NAMES, want)}
    for n in _PATCH_NAMES[8:]:
        assert (expected[n][hs:he] == 0.0).any() and (expected[n][hs:he] != 0.0).any(), n
    check(got, expected, rtol=1e-12, atol=1e-12)


# ================================================================== operators defined in a function
#
# icon4py's own trial of a scan and of surface slices (diagnostic_calculations'
# test_scan): a scan operator, a field operator and a program decorated inside
# a function body, each reaching the one before it as a closure variable, a
# scan without a return annotation on a ``KDim`` field alone, and a field
# operator without a return annotation fed three level slices of a
# ``(Cell, K)`` array.


def _scan_half(backend, vertical_start, vertical_end):
    size = 10

    @scan_operator(
        axis=KDim,
        forward=True,
        init=0.0
    )
    def k_level_simple(
        state: float,
        input_var1: float,
        input_var2: float,
    ):
        return state + input_var1 * input_var2

    @field_operator
    def field_wrapper(
        input_var1: Field[[KDim], float],
        input_var2: Field[[KDim], float],
    ) -> Field[[KDim], float]:
        output = k_level_simple(input_var1, input_var2)
        #output = input_var1 * input_var2
        return output

    @program
    def wrapper(
        input_var1: Field[[KDim], float],
        input_var2: Field[[KDim], float],
        output: Field[[KDim], float],
        vertical_start: int32,
        vertical_end: int32,
    ):
        field_wrapper(
            input_var1,
            input_var2,
            out=output,
            domain={
                KDim: (vertical_start, vertical_end),
            },
        )

    temp = np.ones((size,), dtype=float)
    temp[5:] = 2.0
    a = np.arange(size, dtype=float)
    out = np.zeros((size,), dtype=float)
    wrapper(a, temp, out, vertical_start, vertical_end, offset_provider={}, backend=backend)
    want = np.zeros(size)
    want[vertical_start:vertical_end] = np.cumsum((a * temp)[vertical_start:vertical_end])
    return out, want


def _slice(backend):
    @field_operator
    def _surface(
        input_var1_slice1: Field[[CellDim], float],
        input_var1_slice2: Field[[CellDim], float],
        input_var1_slice3: Field[[CellDim], float],
    ):
        output = input_var1_slice1 + input_var1_slice2 + input_var1_slice3
        return output

    @program
    def wrapper_worked(
        input_var1_slice1: Field[[CellDim], float],
        input_var1_slice2: Field[[CellDim], float],
        input_var1_slice3: Field[[CellDim], float],
        output: Field[[CellDim], float],
        horizontal_start: int32,
        horizontal_end: int32,
    ):
        _surface(
            input_var1_slice1,
            input_var1_slice2,
            input_var1_slice3,
            out=output,
            domain={
                CellDim: (horizontal_start, horizontal_end),
            }
        )

    c_size = 10
    k_size = 5
    a_np = RNG.random((c_size, k_size))
    out = np.zeros(c_size, dtype=float)
    wrapper_worked(a_np[:, 0], a_np[:, 1], a_np[:, 2], out, 1, c_size, offset_provider={},
                   backend=backend)
    return out, inside(a_np[:, 0] + a_np[:, 1] + a_np[:, 2], np.zeros(c_size), 1, c_size)


@pytest.mark.parametrize("backend", BACKENDS)
def test_operators_defined_in_a_function(backend):
    for bounds in ((0, 10), (3, 8)):
        out, want = _scan_half(backend, *bounds)
        check(dict(output=out), dict(output=want), rtol=1e-15)
    out, want = _slice(backend)
    check(dict(output=out), dict(output=want), rtol=1e-15)


# ================================================================== small solver programs
#
# icon4py's solve_nonhydro_stencils: the zero initialisation of three edge
# fields and a cell field by operators without arguments (``out=`` a tuple of
# three), the kinetic energy at the top level with the extrapolation to the
# surface (a tuple of three written on one level, then one of its fields
# again on the last level, ``Koff[-1..-3]``), and the update by the nudging
# tendencies (a call by keyword arguments inside the operator, the last
# level written by a second call).


@gtx.field_operator
def _broadcast_zero_to_three_edge_kdim_fields_2wp1vp() -> tuple[
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[vpfloat],
]:
    return (
        broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
        broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
        broadcast(vpfloat("0.0"), (dims.EdgeDim, dims.KDim)),
    )


@gtx.field_operator
def _init_cell_kdim_field_with_zero_vp() -> fa.CellKField[vpfloat]:
    return broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def init_test_fields(
    z_rho_e: fa.EdgeKField[wpfloat],
    z_theta_v_e: fa.EdgeKField[wpfloat],
    z_dwdz_dd: fa.CellKField[vpfloat],
    z_graddiv_vn: fa.EdgeKField[vpfloat],
    edges_start: gtx.int32,
    edges_end: gtx.int32,
    cells_start: gtx.int32,
    cells_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _broadcast_zero_to_three_edge_kdim_fields_2wp1vp(
        out=(z_rho_e, z_theta_v_e, z_graddiv_vn),
        domain={dims.EdgeDim: (edges_start, edges_end), dims.KDim: (vertical_start, vertical_end)},
    )
    _init_cell_kdim_field_with_zero_vp(
        out=z_dwdz_dd,
        domain={dims.CellDim: (cells_start, cells_end), dims.KDim: (vertical_start, vertical_end)},
    )


@field_operator
def _compute_horizontal_kinetic_energy(
    vn: fa.EdgeKField[wpfloat],
    vt: fa.EdgeKField[vpfloat],
) -> tuple[
    fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat],
    fa.EdgeKField[vpfloat],
]:
    """Formerly known as _mo_solve_nonhydro_stencil_37 or _mo_velocity_advection_stencil_05."""
    vn_ie_wp = vn
    z_vt_ie_vp = vt
    z_kin_hor_e_wp = wpfloat("0.5") * (vn * vn + astype(vt * vt, wpfloat))
    return astype(vn_ie_wp, vpfloat), z_vt_ie_vp, astype(z_kin_hor_e_wp, vpfloat)


@gtx.field_operator
def _extrapolate_at_top(
    wgtfacq_e: fa.EdgeKField[vpfloat],
    vn: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[vpfloat]:
    """Formerly known as mo_velocity_advection_stencil_06 or mo_solve_nonhydro_stencil_38."""
    wgtfacq_e_wp = astype(wgtfacq_e, wpfloat)

    vn_ie_wp = (
        wgtfacq_e_wp(Koff[-1]) * vn(Koff[-1])
        + wgtfacq_e_wp(Koff[-2]) * vn(Koff[-2])
        + wgtfacq_e_wp(Koff[-3]) * vn(Koff[-3])
    )

    return astype(vn_ie_wp, vpfloat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def predictor_stencils_37_38(
    vn: fa.EdgeKField[wpfloat],
    vt: fa.EdgeKField[vpfloat],
    vn_ie: fa.EdgeKField[vpfloat],
    z_vt_ie: fa.EdgeKField[vpfloat],
    z_kin_hor_e: fa.EdgeKField[vpfloat],
    wgtfacq_e_dsl: fa.EdgeKField[vpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _compute_horizontal_kinetic_energy(
        vn,
        vt,
        out=(vn_ie, z_vt_ie, z_kin_hor_e),
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_start + 1),
        },
    )
    _extrapolate_at_top(
        wgtfacq_e_dsl,
        vn,
        out=vn_ie,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_end - 1, vertical_end),
        },
    )


@gtx.field_operator
def _update_wind(
    w_now: fa.CellKField[wpfloat],
    grf_tend_w: fa.CellKField[wpfloat],
    dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    """Formerly known as _mo_solve_nonhydro_stencil_62."""
    w_new_wp = w_now + dtime * grf_tend_w
    return w_new_wp


@gtx.field_operator
def _update_density_exner_wind(
    current_rho: fa.CellKField[wpfloat],
    grf_tend_rho: fa.CellKField[wpfloat],
    current_theta_v: fa.CellKField[wpfloat],
    grf_tend_thv: fa.CellKField[wpfloat],
    w_now: fa.CellKField[wpfloat],
    grf_tend_w: fa.CellKField[wpfloat],
    dtime: wpfloat,
) -> tuple[
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
]:
    """Formerly known as _mo_solve_nonhydro_stencil_61."""
    rho_new_wp = current_rho + dtime * grf_tend_rho
    exner_new_wp = current_theta_v + dtime * grf_tend_thv
    w_new_wp = _update_wind(w_now=w_now, grf_tend_w=grf_tend_w, dtime=dtime)
    return rho_new_wp, exner_new_wp, w_new_wp


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def stencils_61_62(
    rho_now: fa.CellKField[wpfloat],
    grf_tend_rho: fa.CellKField[wpfloat],
    theta_v_now: fa.CellKField[wpfloat],
    grf_tend_thv: fa.CellKField[wpfloat],
    w_now: fa.CellKField[wpfloat],
    grf_tend_w: fa.CellKField[wpfloat],
    rho_new: fa.CellKField[wpfloat],
    exner_new: fa.CellKField[wpfloat],
    w_new: fa.CellKField[wpfloat],
    dtime: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _update_density_exner_wind(
        rho_now,
        grf_tend_rho,
        theta_v_now,
        grf_tend_thv,
        w_now,
        grf_tend_w,
        dtime,
        out=(rho_new, exner_new, w_new),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end - 1),
        },
    )
    _update_wind(
        w_now,
        grf_tend_w,
        dtime,
        out=w_new,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_end - 1, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_small_solver_programs(backend):
    base = dict(z_rho_e=RNG.random((NE, NLEV)), z_theta_v_e=RNG.random((NE, NLEV)),
                z_dwdz_dd=RNG.random((NC, NLEV)), z_graddiv_vn=RNG.random((NE, NLEV)))
    got = {n: v.copy() for n, v in base.items()}
    init_test_fields(**got, edges_start=1, edges_end=NE - 2, cells_start=2, cells_end=NC,
                     vertical_start=1, vertical_end=NLEV, offset_provider={}, backend=backend)
    check(got, {n: inside(np.zeros_like(v), v, *((2, NC) if n == "z_dwdz_dd" else (1, NE - 2)),
                          1, NLEV) for n, v in base.items()}, rtol=0)

    # the kinetic energy at the top (level 0 of NH half levels) and the surface level NLEV
    hs, he = 1, NE
    vn, vt = RNG.standard_normal((NE, NH)), RNG.standard_normal((NE, NH))
    wgtfacq = RNG.uniform(-1.0, 2.0, (NE, NH))
    base = dict(vn_ie=RNG.random((NE, NH)), z_vt_ie=RNG.random((NE, NH)),
                z_kin_hor_e=RNG.random((NE, NH)))
    got = {n: v.copy() for n, v in base.items()}
    predictor_stencils_37_38(vn, vt, **got, wgtfacq_e_dsl=wgtfacq, horizontal_start=hs,
                             horizontal_end=he, vertical_start=0, vertical_end=NH,
                             offset_provider={"Koff": KDim}, backend=backend)
    want = {n: np.array(v) for n, v in base.items()}
    want["vn_ie"][hs:he, 0], want["z_vt_ie"][hs:he, 0] = vn[hs:he, 0], vt[hs:he, 0]
    want["z_kin_hor_e"][hs:he, 0] = 0.5 * (vn[hs:he, 0] ** 2 + vt[hs:he, 0] ** 2)
    want["vn_ie"][hs:he, NLEV] = sum(wgtfacq[hs:he, NLEV - j] * vn[hs:he, NLEV - j]
                                     for j in (1, 2, 3))
    check(got, want, rtol=1e-13)

    # the nudging update with the last level by a second call
    a = dict(rho_now=RNG.random((NC, NLEV)), grf_tend_rho=RNG.standard_normal((NC, NLEV)),
             theta_v_now=RNG.random((NC, NLEV)), grf_tend_thv=RNG.standard_normal((NC, NLEV)),
             w_now=RNG.random((NC, NLEV)), grf_tend_w=RNG.standard_normal((NC, NLEV)))
    base = dict(rho_new=RNG.random((NC, NLEV)), exner_new=RNG.random((NC, NLEV)),
                w_new=RNG.random((NC, NLEV)))
    got = {n: v.copy() for n, v in base.items()}
    dtime, hs, he, vs = 12.0, 0, NC - 1, 2
    stencils_61_62(**a, **got, dtime=dtime, horizontal_start=hs, horizontal_end=he,
                   vertical_start=vs, vertical_end=NLEV, offset_provider={}, backend=backend)
    check(got, dict(
        rho_new=inside(a["rho_now"] + dtime * a["grf_tend_rho"], base["rho_new"], hs, he, vs,
                       NLEV - 1),
        exner_new=inside(a["theta_v_now"] + dtime * a["grf_tend_thv"], base["exner_new"], hs,
                         he, vs, NLEV - 1),
        w_new=inside(a["w_now"] + dtime * a["grf_tend_w"], base["w_new"], hs, he, vs, NLEV)),
        rtol=1e-14)


# ================================================================== graupel precipitation fluxes
#
# icon4py's ICON graupel: the precipitation fluxes at the ground level and
# above it, with ``MicrophysicsConstants.QMIN`` a member of a float
# ``enum.Enum`` (icon4py's constants class derives from ``wpfloat`` and
# ``enum.Enum``), the total flux chosen by an ``if`` expression on a ``bool``
# against a ``broadcast`` zero, and programs whose vertical domain is
# ``(ground_level, model_num_levels)`` and ``(model_top, ground_level)``.


class PhysicsConstants:
    """The physical constants of icon4py that the graupel scheme reads (ICON's values)."""

    tmelt = 273.15
    rd = 287.04
    rv = 461.51
    cpd = 1004.64
    cvd = cpd - rd
    cpl = 4186.84
    cpi = 2108.0
    lh_vaporise = 2.5008e6
    lh_sublimate = 2.8345e6
    water_density = 1000.0
    eps = 1.0e-8


class MicrophysicsConstants(np.float64, enum.Enum):
    """icon4py's MicrophysicsConstants (a ``wpfloat`` ``enum.Enum``) for the graupel scheme."""

    TETENS_P0 = np.float64(610.78)
    TETENS_AW = np.float64(17.269)
    TETENS_BW = np.float64(35.86)
    TETENS_AI = np.float64(21.875)
    TETENS_BI = np.float64(7.66)
    THRESHOLD_FREEZE_TEMPERATURE = np.float64(271.15)
    COEFF_RAIN_FREEZE1 = np.float64(9.95e-5)
    COEFF_RAIN_FREEZE2 = np.float64(0.66)
    HOMOGENEOUS_FREEZE_TEMPERATURE = np.float64(236.15)
    THRESHOLD_FREEZE_TEMPERATURE_MIXEDPHASE = np.float64(250.15)
    QMIN = np.float64(1.0e-15)
    POWER_LAW_EXPONENT_FOR_ICE_MEAN_FALL_SPEED = np.float64(0.16)
    REF_AIR_DENSITY = np.float64(1.225e0)
    MINIMUM_RAIN_FALL_SPEED = np.float64(0.7)
    MINIMUM_SNOW_FALL_SPEED = np.float64(0.1)
    MINIMUM_GRAUPEL_FALL_SPEED = np.float64(0.4)
    NIMAX_THOM = np.float64(250.0e3)
    POWER_LAW_COEFF_FOR_SNOW_MD_RELATION = np.float64(0.069)
    SNOW_DEFAULT_INTERCEPT_PARAM = np.float64(8.0e5)
    GRAUPEL_RIMEXP = np.float64(0.94878)
    POWER_LAW_EXPONENT_FOR_GRAUPEL_MEAN_FALL_SPEED = np.float64(0.217)
    POWER_LAW_COEFF_FOR_GRAUPEL_MEAN_FALL_SPEED = np.float64(12.24)
    ICE_INITIAL_MASS = np.float64(1.0e-12)
    ICE_MAX_MASS = np.float64(1.0e-9)
    ICE_STICKING_EFF_FACTOR = np.float64(3.5e-3)
    TMIN_ICEAUTOCONV = np.float64(188.15)
    DIST_CLDTOP_REF = np.float64(500.0)
    REDUCE_DEP_REF = np.float64(0.1)  # noqa: PIE796
    POWER_LAW_EXPONENT_FOR_SNOW_FALL_SPEED = np.float64(0.5)
    AIR_KINEMATIC_VISCOSITY = np.float64(1.75e-5)
    THERMAL_CONDUCTIVITY_DRY_AIR = np.float64(2.40e-2)
    POWER_LAW_EXPONENT_FOR_SNOW_MD_RELATION = np.float64(2.0)
    POWER_LAW_EXPONENT_FOR_ICE_MD_RELATION = np.float64(130.0)
    CP_V = np.float64(1850.0)
    RCVD = np.float64(1.0) / PhysicsConstants.cvd
    SNOW_INTERCEPT_PARAMETER_N0S1 = np.float64(13.5 * 5.65e5)
    SNOW_INTERCEPT_PARAMETER_N0S2 = np.float64(-0.107)
    SNOW_INTERCEPT_PARAMETER_MMA1 = np.float64(5.065339)
    SNOW_INTERCEPT_PARAMETER_MMA2 = np.float64(-0.062659)
    SNOW_INTERCEPT_PARAMETER_MMA3 = np.float64(-3.032362)
    SNOW_INTERCEPT_PARAMETER_MMA4 = np.float64(0.029469)
    SNOW_INTERCEPT_PARAMETER_MMA5 = np.float64(-0.000285)
    SNOW_INTERCEPT_PARAMETER_MMA6 = np.float64(0.312550)
    SNOW_INTERCEPT_PARAMETER_MMA7 = np.float64(0.000204)
    SNOW_INTERCEPT_PARAMETER_MMA8 = np.float64(0.003199)
    SNOW_INTERCEPT_PARAMETER_MMA9 = np.float64(0.000000)
    SNOW_INTERCEPT_PARAMETER_MMA10 = np.float64(-0.015952)
    SNOW_INTERCEPT_PARAMETER_MMB1 = np.float64(0.476221)
    SNOW_INTERCEPT_PARAMETER_MMB2 = np.float64(-0.015896)
    SNOW_INTERCEPT_PARAMETER_MMB3 = np.float64(0.165977)
    SNOW_INTERCEPT_PARAMETER_MMB4 = np.float64(0.007468)
    SNOW_INTERCEPT_PARAMETER_MMB5 = np.float64(-0.000141)
    SNOW_INTERCEPT_PARAMETER_MMB6 = np.float64(0.060366)
    SNOW_INTERCEPT_PARAMETER_MMB7 = np.float64(0.000079)
    SNOW_INTERCEPT_PARAMETER_MMB8 = np.float64(0.000594)
    SNOW_INTERCEPT_PARAMETER_MMB9 = np.float64(0.000000)  # noqa: PIE796
    SNOW_INTERCEPT_PARAMETER_MMB10 = np.float64(-0.003577)
    HETEROGENEOUS_FREEZE_TEMPERATURE = np.float64(248.15)
    KESSLER_CLOUD2RAIN_AUTOCONVERSION_COEFF_FOR_CLOUD = np.float64(4.0e-4)
    KESSLER_CLOUD2RAIN_AUTOCONVERSION_COEFF_FOR_RAIN = np.float64(1.72)
    KPHI1 = np.float64(6.00e02)
    KPHI2 = np.float64(0.68e00)
    KPHI3 = np.float64(5.00e-05)
    KCAU = np.float64(9.44e09)
    KCAC = np.float64(5.25e00)
    CNUE = np.float64(2.00e00)  # noqa: PIE796
    XSTAR = np.float64(2.60e-10)
    CRIM_G = np.float64(4.43)
    CAGG_G = np.float64(2.46)
    CIAU = np.float64(1.0e-3)
    MSMIN = np.float64(3.0e-9)
    CICRI = np.float64(1.72)  # noqa: PIE796
    CRCRI = np.float64(1.24e-3)
    ASMEL = np.float64(2.95e3)
    TCRIT = np.float64(3339.5)
    QC0 = np.float64(0.0)  # noqa: PIE796
    QI0 = np.float64(0.0)  # noqa: PIE796
    NIMIX = np.float64(5.0) * np.exp(
        np.float64(0.304) * (PhysicsConstants.tmelt - THRESHOLD_FREEZE_TEMPERATURE_MIXEDPHASE)
    )
    CCSDEP = (
        np.float64(0.26)
        * math.gamma((POWER_LAW_EXPONENT_FOR_SNOW_FALL_SPEED + np.float64(5.0)) / np.float64(2.0))
        * np.sqrt(np.float64(1.0) / AIR_KINEMATIC_VISCOSITY)
    )
    CCSVXP = -(
        POWER_LAW_EXPONENT_FOR_SNOW_FALL_SPEED
        / (POWER_LAW_EXPONENT_FOR_SNOW_MD_RELATION + np.float64(1.0))
        + np.float64(1.0)
    ) + np.float64(1.0)
    CCSLAM = POWER_LAW_COEFF_FOR_SNOW_MD_RELATION * math.gamma(
        POWER_LAW_EXPONENT_FOR_SNOW_MD_RELATION + np.float64(1.0)
    )
    CCSLXP = np.float64(1.0) / (POWER_LAW_EXPONENT_FOR_SNOW_MD_RELATION + np.float64(1.0))
    CCSWXP = POWER_LAW_EXPONENT_FOR_SNOW_FALL_SPEED * CCSLXP
    CCSAXP = -(POWER_LAW_EXPONENT_FOR_SNOW_FALL_SPEED + np.float64(3.0))
    CCSDXP = -(POWER_LAW_EXPONENT_FOR_SNOW_FALL_SPEED + np.float64(1.0)) / np.float64(2.0)
    CCSHI1 = (
        PhysicsConstants.lh_sublimate
        * PhysicsConstants.lh_sublimate
        / (THERMAL_CONDUCTIVITY_DRY_AIR * PhysicsConstants.rv)
    )
    CCDVTP = (
        np.float64(2.22e-5) * PhysicsConstants.tmelt ** (np.float64(-1.94)) * np.float64(101325.0)
    )
    CCIDEP = np.float64(4.0) * POWER_LAW_EXPONENT_FOR_ICE_MD_RELATION ** np.float64(-1.0 / 3.0)
    CCSWXP_LN1O2 = np.exp(CCSWXP * np.log(np.float64(0.5)))
    PVSW0 = TETENS_P0 * np.exp(
        TETENS_AW
        * (PhysicsConstants.tmelt - PhysicsConstants.tmelt)
        / (PhysicsConstants.tmelt - TETENS_BW)
    )


class LiquidAutoConversionType(np.int32, enum.Enum):
    """Options for computing liquid auto conversion rate."""

    #: Kessler (1969) liquid auto conversion mode
    KESSLER = 0
    #: Seifert & Beheng (2006) liquid auto conversion mode
    SEIFERT_BEHENG = 1


class SnowInterceptParametererization(np.int32, enum.Enum):
    """Options for deriving snow intercept parameter."""

    FIELD_BEST_FIT_ESTIMATION = 1
    FIELD_GENERAL_MOMENT_ESTIMATION = 2


@gtx.field_operator
def _icon_graupel_flux_at_ground(
    do_latent_heat_nudging: bool,
    dtime: ta.wpfloat,
    rho: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr_tendency: fa.CellKField[ta.wpfloat],
    qs_tendency: fa.CellKField[ta.wpfloat],
    qg_tendency: fa.CellKField[ta.wpfloat],
    qi_tendency: fa.CellKField[ta.wpfloat],
    rhoqrv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqsv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqgv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqiv_old_kup: fa.CellKField[ta.wpfloat],
    vnew_r: fa.CellKField[ta.wpfloat],
    vnew_s: fa.CellKField[ta.wpfloat],
    vnew_g: fa.CellKField[ta.wpfloat],
    vnew_i: fa.CellKField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    rain_flux = wpfloat("0.5") * ((qr + qr_tendency * dtime) * rho * vnew_r + rhoqrv_old_kup)
    snow_flux = wpfloat("0.5") * ((qs + qs_tendency * dtime) * rho * vnew_s + rhoqsv_old_kup)
    graupel_flux = wpfloat("0.5") * ((qg + qg_tendency * dtime) * rho * vnew_g + rhoqgv_old_kup)
    ice_flux = wpfloat("0.5") * ((qi + qi_tendency * dtime) * rho * vnew_i + rhoqiv_old_kup)
    zero = broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim))
    # for the latent heat nudging
    total_flux = rain_flux + snow_flux + graupel_flux if do_latent_heat_nudging else zero
    return rain_flux, snow_flux, graupel_flux, ice_flux, total_flux


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def icon_graupel_flux_at_ground(
    do_latent_heat_nudging: bool,
    dtime: ta.wpfloat,
    rho: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr_tendency: fa.CellKField[ta.wpfloat],
    qs_tendency: fa.CellKField[ta.wpfloat],
    qg_tendency: fa.CellKField[ta.wpfloat],
    qi_tendency: fa.CellKField[ta.wpfloat],
    rhoqrv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqsv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqgv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqiv_old_kup: fa.CellKField[ta.wpfloat],
    vnew_r: fa.CellKField[ta.wpfloat],
    vnew_s: fa.CellKField[ta.wpfloat],
    vnew_g: fa.CellKField[ta.wpfloat],
    vnew_i: fa.CellKField[ta.wpfloat],
    rain_precipitation_flux: fa.CellKField[ta.wpfloat],
    snow_precipitation_flux: fa.CellKField[ta.wpfloat],
    graupel_precipitation_flux: fa.CellKField[ta.wpfloat],
    ice_precipitation_flux: fa.CellKField[ta.wpfloat],
    total_precipitation_flux: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    ground_level: gtx.int32,
    model_num_levels: gtx.int32,
) -> None:
    _icon_graupel_flux_at_ground(
        do_latent_heat_nudging,
        dtime,
        rho,
        qr,
        qs,
        qg,
        qi,
        qr_tendency,
        qs_tendency,
        qg_tendency,
        qi_tendency,
        rhoqrv_old_kup,
        rhoqsv_old_kup,
        rhoqgv_old_kup,
        rhoqiv_old_kup,
        vnew_r,
        vnew_s,
        vnew_g,
        vnew_i,
        out=(
            rain_precipitation_flux,
            snow_precipitation_flux,
            graupel_precipitation_flux,
            ice_precipitation_flux,
            total_precipitation_flux,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (ground_level, model_num_levels),
        },
    )


@gtx.field_operator
def _icon_graupel_flux_above_ground(
    do_latent_heat_nudging: bool,
    dtime: ta.wpfloat,
    rho: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr_tendency: fa.CellKField[ta.wpfloat],
    qs_tendency: fa.CellKField[ta.wpfloat],
    qg_tendency: fa.CellKField[ta.wpfloat],
    qi_tendency: fa.CellKField[ta.wpfloat],
    rhoqrv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqsv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqgv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqiv_old_kup: fa.CellKField[ta.wpfloat],
    vnew_r: fa.CellKField[ta.wpfloat],
    vnew_s: fa.CellKField[ta.wpfloat],
    vnew_g: fa.CellKField[ta.wpfloat],
    vnew_i: fa.CellKField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    zero = broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim))

    rain_flux_ = (qr + qr_tendency * dtime) * rho * vnew_r
    snow_flux_ = (qs + qs_tendency * dtime) * rho * vnew_s
    graupel_flux_ = (qg + qg_tendency * dtime) * rho * vnew_g
    ice_flux_ = (qi + qi_tendency * dtime) * rho * vnew_i

    rain_flux_new = where(rain_flux_ <= MicrophysicsConstants.QMIN, zero, rain_flux_)
    snow_flux_new = where(snow_flux_ <= MicrophysicsConstants.QMIN, zero, snow_flux_)
    graupel_flux_new = where(graupel_flux_ <= MicrophysicsConstants.QMIN, zero, graupel_flux_)
    ice_flux_new = where(ice_flux_ <= MicrophysicsConstants.QMIN, zero, ice_flux_)

    rain_flux = wpfloat("0.5") * (rain_flux_new + rhoqrv_old_kup)
    snow_flux = wpfloat("0.5") * (snow_flux_new + rhoqsv_old_kup)
    graupel_flux = wpfloat("0.5") * (graupel_flux_new + rhoqgv_old_kup)
    ice_flux = wpfloat("0.5") * (ice_flux_new + rhoqiv_old_kup)
    total_flux = rain_flux + snow_flux + graupel_flux + ice_flux if do_latent_heat_nudging else zero

    return rain_flux, snow_flux, graupel_flux, ice_flux, total_flux


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def icon_graupel_flux_above_ground(
    do_latent_heat_nudging: bool,
    dtime: ta.wpfloat,
    rho: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr_tendency: fa.CellKField[ta.wpfloat],
    qs_tendency: fa.CellKField[ta.wpfloat],
    qg_tendency: fa.CellKField[ta.wpfloat],
    qi_tendency: fa.CellKField[ta.wpfloat],
    rhoqrv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqsv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqgv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqiv_old_kup: fa.CellKField[ta.wpfloat],
    vnew_r: fa.CellKField[ta.wpfloat],
    vnew_s: fa.CellKField[ta.wpfloat],
    vnew_g: fa.CellKField[ta.wpfloat],
    vnew_i: fa.CellKField[ta.wpfloat],
    rain_precipitation_flux: fa.CellKField[ta.wpfloat],
    snow_precipitation_flux: fa.CellKField[ta.wpfloat],
    graupel_precipitation_flux: fa.CellKField[ta.wpfloat],
    ice_precipitation_flux: fa.CellKField[ta.wpfloat],
    total_precipitation_flux: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    model_top: gtx.int32,
    ground_level: gtx.int32,
) -> None:
    _icon_graupel_flux_above_ground(
        do_latent_heat_nudging,
        dtime,
        rho,
        qr,
        qs,
        qg,
        qi,
        qr_tendency,
        qs_tendency,
        qg_tendency,
        qi_tendency,
        rhoqrv_old_kup,
        rhoqsv_old_kup,
        rhoqgv_old_kup,
        rhoqiv_old_kup,
        vnew_r,
        vnew_s,
        vnew_g,
        vnew_i,
        out=(
            rain_precipitation_flux,
            snow_precipitation_flux,
            graupel_precipitation_flux,
            ice_precipitation_flux,
            total_precipitation_flux,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (model_top, ground_level),
        },
    )


_FLUX_INPUTS = ("rho", "qr", "qs", "qg", "qi", "qr_tendency", "qs_tendency", "qg_tendency",
                "qi_tendency", "rhoqrv_old_kup", "rhoqsv_old_kup", "rhoqgv_old_kup",
                "rhoqiv_old_kup", "vnew_r", "vnew_s", "vnew_g", "vnew_i")
_FLUXES = ("rain", "snow", "graupel", "ice", "total")


@pytest.mark.parametrize("nudging", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_graupel_precipitation_fluxes(backend, nudging):
    hs, he, ground, dtime = 1, NC - 1, NLEV - 1, 30.0
    a = {n: RNG.uniform(0.0, 2e-3, (NC, NLEV)) for n in _FLUX_INPUTS}
    a["rho"] = RNG.uniform(0.5, 1.2, (NC, NLEV))
    for n in ("qr", "qs", "qg", "qi"):        # some fluxes vanish, some fall below QMIN
        a[n] = np.where(RNG.random((NC, NLEV)) < 0.3, 0.0, a[n])
        a[f"{n}_tendency"] = np.where(a[n] == 0.0, 1e-20, RNG.normal(0.0, 1e-6, (NC, NLEV)))
    base = {f"{f}_precipitation_flux": RNG.random((NC, NLEV)) for f in _FLUXES}
    got = {n: v.copy() for n, v in base.items()}
    icon_graupel_flux_above_ground(nudging, dtime, **a, **got, horizontal_start=hs,
                                   horizontal_end=he, model_top=0, ground_level=ground,
                                   offset_provider={}, backend=backend)
    icon_graupel_flux_at_ground(nudging, dtime, **a, **got, horizontal_start=hs,
                                horizontal_end=he, ground_level=ground, model_num_levels=NLEV,
                                offset_provider={}, backend=backend)
    raw = {q: (a[f"q{q[0]}"] + a[f"q{q[0]}_tendency"] * dtime) * a["rho"] * a[f"vnew_{q[0]}"]
           for q in _FLUXES[:4]}
    below = {q: a[f"rhoq{q[0]}v_old_kup"] for q in _FLUXES[:4]}
    above = {q: 0.5 * (np.where(raw[q] <= 1.0e-15, 0.0, raw[q]) + below[q]) for q in raw}
    at = {q: 0.5 * (raw[q] + below[q]) for q in raw}
    assert all((raw[q] <= 1.0e-15).any() for q in raw)
    want = {q: np.where(np.arange(NLEV) < ground, above[q], at[q]) for q in raw}
    total = np.where(np.arange(NLEV) < ground, sum(above.values()),
                     at["rain"] + at["snow"] + at["graupel"])
    want["total"] = total if nudging else np.zeros((NC, NLEV))
    check(got, {f"{f}_precipitation_flux": inside(want[f], base[f"{f}_precipitation_flux"],
                                                  hs, he) for f in _FLUXES}, rtol=1e-13)


# ================================================================== ICON graupel scan
#
# icon4py's single-moment six-class ICON graupel (``graupel_stencils`` and
# ``microphysical_processes``; icon4py raises the recursion limit to 350000
# for GT4Py here): a forward scan whose state is a tuple of 27 ``wpfloat`` and
# an ``int32`` level counter (unpacked with ``_`` first), twenty scalar
# parameters among them two ``int32`` options compared with members of
# ``int32`` ``enum.Enum``s and a ``bool``, ``True if c else False`` flags,
# variables first bound in both branches of nested ``if``/``elif``/``else``
# statements, ``if`` statements without ``else`` reassigning state values,
# ten scalar field operators called from the scan with ``bool`` arguments and
# returning tuples of up to nine, constants of float ``enum.Enum``s and of a
# class, ``**`` with float exponents on scalars; the field operator drops 13
# of the 28 scan results and the program writes 15 outputs.  The expected
# values run the reference scan body itself, level by level, on NumPy scalars.


@gtx.field_operator
def compute_cooper_inp_concentration(temperature: ta.wpfloat) -> ta.wpfloat:
    cnin = 5.0 * exp(0.304 * (PhysicsConstants.tmelt - temperature))
    cnin = minimum(cnin, MicrophysicsConstants.NIMAX_THOM)
    return cnin


@gtx.field_operator
def compute_snow_interception_and_collision_parameters(
    temperature: ta.wpfloat,
    rho: ta.wpfloat,
    qs: ta.wpfloat,
    precomputed_riming_coef: ta.wpfloat,
    precomputed_agg_coef: ta.wpfloat,
    precomputed_snow_sed_coef: ta.wpfloat,
    power_law_coeff_for_snow_fall_speed: ta.wpfloat,
    snow_exists: bool,
    snow_intercept_option: gtx.int32,
) -> tuple[ta.wpfloat, ta.wpfloat, ta.wpfloat, ta.wpfloat, ta.wpfloat]:
    """Compute the intercept parameter, N0, of the snow exponential size distribution."""
    if snow_exists:
        if snow_intercept_option == SnowInterceptParametererization.FIELD_BEST_FIT_ESTIMATION:
            # Calculate n0s using the temperature-dependent
            # formula of Field et al. (2005)
            local_tc = temperature - PhysicsConstants.tmelt
            local_tc = minimum(local_tc, wpfloat("0.0"))
            local_tc = maximum(local_tc, wpfloat("-40.0"))
            n0s = MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_N0S1 * exp(
                MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_N0S2 * local_tc
            )
            n0s = minimum(n0s, wpfloat("1.0e9"))
            n0s = maximum(n0s, wpfloat("1.0e6"))

        elif (
            snow_intercept_option == SnowInterceptParametererization.FIELD_GENERAL_MOMENT_ESTIMATION
        ):
            # Calculate n0s using the temperature-dependent moment
            # relations of Field et al. (2005)
            local_tc = temperature - PhysicsConstants.tmelt
            local_tc = minimum(local_tc, wpfloat("0.0"))
            local_tc = maximum(local_tc, wpfloat("-40.0"))

            local_nnr = wpfloat("3.0")
            local_hlp = (
                MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA1
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA2 * local_tc
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA3 * local_nnr
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA4 * local_tc * local_nnr
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA5 * local_tc**2.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA6 * local_nnr**2.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA7 * local_tc**2.0 * local_nnr
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA8 * local_tc * local_nnr**2.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA9 * local_tc**3.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMA10 * local_nnr**3.0
            )
            local_alf = exp(local_hlp * log(wpfloat("10.0")))
            local_bet = (
                MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB1
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB2 * local_tc
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB3 * local_nnr
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB4 * local_tc * local_nnr
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB5 * local_tc**2.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB6 * local_nnr**2.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB7 * local_tc**2.0 * local_nnr
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB8 * local_tc * local_nnr**2.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB9 * local_tc**3.0
                + MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_MMB10 * local_nnr**3.0
            )

            # Here is the exponent bms=2.0 hardwired# not ideal# (Uli Blahak)
            local_m2s = (
                qs * rho / MicrophysicsConstants.POWER_LAW_COEFF_FOR_SNOW_MD_RELATION
            )  # UB rho added as bugfix
            local_m3s = local_alf * exp(local_bet * log(local_m2s))

            local_hlp = MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_N0S1 * exp(
                MicrophysicsConstants.SNOW_INTERCEPT_PARAMETER_N0S2 * local_tc
            )
            n0s = wpfloat("13.50") * local_m2s * (local_m2s / local_m3s) ** 3.0
            n0s = maximum(n0s, wpfloat("0.5") * local_hlp)
            n0s = minimum(n0s, wpfloat("1.0e2") * local_hlp)
            n0s = minimum(n0s, wpfloat("1.0e9"))
            n0s = maximum(n0s, wpfloat("1.0e6"))

        else:
            n0s = MicrophysicsConstants.SNOW_DEFAULT_INTERCEPT_PARAM

        # compute integration factor for terminal velocity
        snow_sed0 = precomputed_snow_sed_coef * exp(MicrophysicsConstants.CCSVXP * log(n0s))
        # compute constants for riming, aggregation, and deposition processes for snow
        crim = precomputed_riming_coef * n0s
        cagg = precomputed_agg_coef * n0s
        cbsdep = MicrophysicsConstants.CCSDEP * sqrt(power_law_coeff_for_snow_fall_speed)
    else:
        n0s = MicrophysicsConstants.SNOW_DEFAULT_INTERCEPT_PARAM
        snow_sed0 = wpfloat("0.0")
        crim = wpfloat("0.0")
        cagg = wpfloat("0.0")
        cbsdep = wpfloat("0.0")

    return n0s, snow_sed0, crim, cagg, cbsdep


@gtx.field_operator
def deposition_nucleation_at_low_temperature_or_in_clouds(
    temperature: ta.wpfloat,
    rho: ta.wpfloat,
    qv: ta.wpfloat,
    qi: ta.wpfloat,
    qvsi: ta.wpfloat,
    cnin: ta.wpfloat,
    dtime: ta.wpfloat,
    cloud_exists: bool,
) -> ta.wpfloat:
    """Heterogeneous deposition nucleation for low temperatures below a threshold or in clouds."""
    ice_nucleation_rate_v2i = (
        MicrophysicsConstants.ICE_INITIAL_MASS / rho * cnin / dtime
        if (cloud_exists & (temperature <= wpfloat("267.15")) & (qi <= MicrophysicsConstants.QMIN))
        | (
            (temperature < MicrophysicsConstants.HETEROGENEOUS_FREEZE_TEMPERATURE)
            & (qv > wpfloat("8.0e-6"))
            & (qi <= wpfloat("0.0"))
            & (qv > qvsi)
        )
        else wpfloat("0.0")
    )
    return ice_nucleation_rate_v2i


@gtx.field_operator
def autoconversion_and_rain_accretion(
    temperature: ta.wpfloat,
    qc: ta.wpfloat,
    qr: ta.wpfloat,
    qnc: ta.wpfloat,
    celn7o8qrk: ta.wpfloat,
    cloud_exists: bool,
    liquid_autoconversion_option: gtx.int32,
) -> tuple[ta.wpfloat, ta.wpfloat]:
    """Compute the rate of cloud-to-rain autoconversion and the mass of cloud accreted by rain."""
    if cloud_exists & (temperature > MicrophysicsConstants.HOMOGENEOUS_FREEZE_TEMPERATURE):
        if liquid_autoconversion_option == LiquidAutoConversionType.KESSLER:
            # Kessler(1969) autoconversion rate
            cloud_autoconversion_rate_c2r = (
                MicrophysicsConstants.KESSLER_CLOUD2RAIN_AUTOCONVERSION_COEFF_FOR_CLOUD
                * maximum(qc - MicrophysicsConstants.QC0, wpfloat("0.0"))
            )
            rain_cloud_collision_rate_c2r = (
                MicrophysicsConstants.KESSLER_CLOUD2RAIN_AUTOCONVERSION_COEFF_FOR_RAIN
                * qc
                * celn7o8qrk
            )

        elif liquid_autoconversion_option == LiquidAutoConversionType.SEIFERT_BEHENG:
            # Seifert and Beheng (2001) autoconversion rate
            local_const = (
                MicrophysicsConstants.KCAU
                / (wpfloat("20.0") * MicrophysicsConstants.XSTAR)
                * (MicrophysicsConstants.CNUE + wpfloat("2.0"))
                * (MicrophysicsConstants.CNUE + wpfloat("4.0"))
                / (MicrophysicsConstants.CNUE + wpfloat("1.0")) ** 2.0
            )

            # with constant cloud droplet number concentration qnc
            if qc > wpfloat("1.0e-6"):
                local_tau = minimum(wpfloat("1.0") - qc / (qc + qr), wpfloat("0.9"))
                local_tau = maximum(local_tau, wpfloat("1.0e-30"))
                local_hlp = exp(MicrophysicsConstants.KPHI2 * log(local_tau))
                local_phi = (
                    MicrophysicsConstants.KPHI1 * local_hlp * (wpfloat("1.0") - local_hlp) ** 3.0
                )
                cloud_autoconversion_rate_c2r = (
                    local_const
                    * qc
                    * qc
                    * qc
                    * qc
                    / (qnc * qnc)
                    * (wpfloat("1.0") + local_phi / (wpfloat("1.0") - local_tau) ** 2.0)
                )
                local_phi = (local_tau / (local_tau + MicrophysicsConstants.KPHI3)) ** 4.0
                rain_cloud_collision_rate_c2r = MicrophysicsConstants.KCAC * qc * qr * local_phi
            else:
                cloud_autoconversion_rate_c2r = wpfloat("0.0")
                rain_cloud_collision_rate_c2r = wpfloat("0.0")
        else:
            cloud_autoconversion_rate_c2r = wpfloat("0.0")
            rain_cloud_collision_rate_c2r = wpfloat("0.0")
    else:
        cloud_autoconversion_rate_c2r = wpfloat("0.0")
        rain_cloud_collision_rate_c2r = wpfloat("0.0")

    return cloud_autoconversion_rate_c2r, rain_cloud_collision_rate_c2r


@gtx.field_operator
def freezing_in_clouds(
    temperature: ta.wpfloat,
    qc: ta.wpfloat,
    qr: ta.wpfloat,
    cscmax: ta.wpfloat,
    csrmax: ta.wpfloat,
    celn7o4qrk: ta.wpfloat,
    cloud_exists: bool,
    rain_exists: bool,
) -> tuple[ta.wpfloat, ta.wpfloat]:
    """Compute the freezing rate of cloud and rain in clouds."""
    if cloud_exists:
        if temperature > MicrophysicsConstants.HOMOGENEOUS_FREEZE_TEMPERATURE:
            # Calculation of in-cloud rainwater freezing
            if (
                rain_exists
                & (temperature < MicrophysicsConstants.THRESHOLD_FREEZE_TEMPERATURE)
                & (qr > wpfloat("0.1") * qc)
            ):
                rain_freezing_rate_r2g_in_clouds = (
                    MicrophysicsConstants.COEFF_RAIN_FREEZE1
                    * (
                        exp(
                            MicrophysicsConstants.COEFF_RAIN_FREEZE2
                            * (MicrophysicsConstants.THRESHOLD_FREEZE_TEMPERATURE - temperature)
                        )
                        - wpfloat("1.0")
                    )
                    * celn7o4qrk
                )
            else:
                rain_freezing_rate_r2g_in_clouds = wpfloat("0.0")
            cloud_freezing_rate_c2i = wpfloat("0.0")
        else:
            # tg <= tg: ! hom. freezing of cloud and rain water
            cloud_freezing_rate_c2i = cscmax
            rain_freezing_rate_r2g_in_clouds = csrmax
    else:
        cloud_freezing_rate_c2i = wpfloat("0.0")
        rain_freezing_rate_r2g_in_clouds = wpfloat("0.0")

    return cloud_freezing_rate_c2i, rain_freezing_rate_r2g_in_clouds


@gtx.field_operator
def riming_in_clouds(
    temperature: ta.wpfloat,
    qc: ta.wpfloat,
    crim: ta.wpfloat,
    cslam: ta.wpfloat,
    celnrimexp_g: ta.wpfloat,
    celn3o4qsk: ta.wpfloat,
    snow2graupel_riming_coeff: ta.wpfloat,
    cloud_exists: bool,
    snow_exists: bool,
) -> tuple[ta.wpfloat, ta.wpfloat, ta.wpfloat, ta.wpfloat]:
    """Compute the rate of riming by snow and graupel in clouds."""
    if cloud_exists & (temperature > MicrophysicsConstants.HOMOGENEOUS_FREEZE_TEMPERATURE):
        if snow_exists:
            snow_riming_rate_c2s = crim * qc * exp(MicrophysicsConstants.CCSAXP * log(cslam))
        else:
            snow_riming_rate_c2s = wpfloat("0.0")

        graupel_riming_rate_c2g = MicrophysicsConstants.CRIM_G * qc * celnrimexp_g

        if temperature >= PhysicsConstants.tmelt:
            rain_shedding_rate_c2r = snow_riming_rate_c2s + graupel_riming_rate_c2g
            snow_riming_rate_c2s = wpfloat("0.0")
            graupel_riming_rate_c2g = wpfloat("0.0")
            snow_autoconversion_rate_s2g = wpfloat("0.0")
        else:
            if qc >= MicrophysicsConstants.QC0:
                snow_autoconversion_rate_s2g = snow2graupel_riming_coeff * qc * celn3o4qsk
            else:
                snow_autoconversion_rate_s2g = wpfloat("0.0")
            rain_shedding_rate_c2r = wpfloat("0.0")
    else:
        snow_riming_rate_c2s = wpfloat("0.0")
        graupel_riming_rate_c2g = wpfloat("0.0")
        rain_shedding_rate_c2r = wpfloat("0.0")
        snow_autoconversion_rate_s2g = wpfloat("0.0")

    return (
        snow_riming_rate_c2s,
        graupel_riming_rate_c2g,
        rain_shedding_rate_c2r,
        snow_autoconversion_rate_s2g,
    )


@gtx.field_operator
def reduced_deposition_in_clouds(
    temperature: ta.wpfloat,
    qv_kup: ta.wpfloat,
    qc_kup: ta.wpfloat,
    qi_kup: ta.wpfloat,
    qs_kup: ta.wpfloat,
    qg_kup: ta.wpfloat,
    qvsw_kup: ta.wpfloat,
    dz: ta.wpfloat,
    dist_cldtop_kup: ta.wpfloat,
    k_lev: gtx.int32,
    is_surface: bool,
    cloud_exists: bool,
) -> tuple[ta.wpfloat, ta.wpfloat]:
    """Artificially reduce the deposition rate in clouds."""
    if cloud_exists:
        if (k_lev > 0) & (not is_surface):
            cqcgk_1 = qi_kup + qs_kup + qg_kup

            # distance from cloud top
            if (qv_kup + qc_kup < qvsw_kup) & (cqcgk_1 < MicrophysicsConstants.QMIN):
                # upper cloud layer
                dist_cldtop = wpfloat("0.0")  # reset distance to upper cloud layer
            else:
                dist_cldtop = dist_cldtop_kup + dz
        else:
            dist_cldtop = dist_cldtop_kup

        if (k_lev > 0) & (not is_surface):
            # finalizing transfer rates in clouds and calculate depositional growth reduction
            cnin = compute_cooper_inp_concentration(temperature)
            cfnuc = minimum(cnin / MicrophysicsConstants.NIMIX, wpfloat("1.0"))

            # without asymptotic behaviour dz -> 0
            reduce_dep = cfnuc + (wpfloat("1.0") - cfnuc) * (
                MicrophysicsConstants.REDUCE_DEP_REF
                + dist_cldtop / MicrophysicsConstants.DIST_CLDTOP_REF
            )
            reduce_dep = minimum(reduce_dep, wpfloat("1.0"))
        else:
            reduce_dep = wpfloat("1.0")
    else:
        dist_cldtop = dist_cldtop_kup
        reduce_dep = wpfloat("1.0")

    return dist_cldtop, reduce_dep


@gtx.field_operator
def collision_and_ice_deposition_in_cold_ice_clouds(
    temperature: ta.wpfloat,
    rho: ta.wpfloat,
    qv: ta.wpfloat,
    qi: ta.wpfloat,
    qs: ta.wpfloat,
    qvsi: ta.wpfloat,
    rhoqi_intermediate: ta.wpfloat,
    dtime: ta.wpfloat,
    cslam: ta.wpfloat,
    cidep: ta.wpfloat,
    cagg: ta.wpfloat,
    cmi: ta.wpfloat,
    ice_stickeff_min: ta.wpfloat,
    reduce_dep: ta.wpfloat,
    celnrimexp_g: ta.wpfloat,
    celn7o8qrk: ta.wpfloat,
    celn13o8qrk: ta.wpfloat,
    ice_exists: bool,
) -> tuple[
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
]:
    """Aggregation, autoconversion and deposition of ice in cold ice clouds."""
    if (temperature <= PhysicsConstants.tmelt) & ice_exists:
        # Change in sticking efficiency needed in case of cloud ice sedimentation
        # (based on Guenther Zaengls work)
        local_eff = minimum(
            exp(wpfloat("0.09") * (temperature - PhysicsConstants.tmelt)),
            wpfloat("1.0"),
        )
        local_eff = maximum(local_eff, ice_stickeff_min)
        local_eff = maximum(
            local_eff,
            MicrophysicsConstants.ICE_STICKING_EFF_FACTOR
            * (temperature - MicrophysicsConstants.TMIN_ICEAUTOCONV),
        )

        local_nid = rho * qi / cmi
        local_lnlogmi = log(cmi)

        local_qvsidiff = qv - qvsi
        local_svmax = local_qvsidiff / dtime

        snow_ice_collision_rate_i2s = (
            local_eff * qi * cagg * exp(MicrophysicsConstants.CCSAXP * log(cslam))
        )
        graupel_ice_collision_rate_i2g = (
            local_eff * qi * MicrophysicsConstants.CAGG_G * celnrimexp_g
        )
        ice_autoconverson_rate_i2s = (
            local_eff
            * MicrophysicsConstants.CIAU
            * maximum(qi - MicrophysicsConstants.QI0, wpfloat("0.0"))
        )

        rain_ice_2graupel_ice_loss_rate_i2g = MicrophysicsConstants.CICRI * qi * celn7o8qrk
        if qs > wpfloat("1.0e-7"):
            rain_ice_2graupel_rain_loss_rate_r2g = (
                MicrophysicsConstants.CRCRI * (qi / cmi) * celn13o8qrk
            )
        else:
            rain_ice_2graupel_rain_loss_rate_r2g = wpfloat("0.0")

        local_icetotaldeposition = (
            cidep * local_nid * exp(wpfloat("0.33") * local_lnlogmi) * local_qvsidiff
        )
        ice_deposition_rate_v2i = local_icetotaldeposition

        # for sedimenting quantities the maximum
        # allowed depletion is determined by the predictor value.
        local_simax = rhoqi_intermediate / rho / dtime

        if local_icetotaldeposition > wpfloat("0.0"):
            local_icetotaldeposition = (
                local_icetotaldeposition * reduce_dep
            )  # FR new: depositional growth reduction
            ice_net_deposition_rate_v2i = minimum(local_icetotaldeposition, local_svmax)
            ice_net_sublimation_rate_v2i = wpfloat("0.0")
        elif local_icetotaldeposition < wpfloat("0.0"):
            ice_net_deposition_rate_v2i = wpfloat("0.0")
            ice_net_sublimation_rate_v2i = maximum(local_icetotaldeposition, local_svmax)
            ice_net_sublimation_rate_v2i = -maximum(ice_net_sublimation_rate_v2i, -local_simax)
        else:
            ice_net_deposition_rate_v2i = wpfloat("0.0")
            ice_net_sublimation_rate_v2i = wpfloat("0.0")

        local_lnlogmi = log(MicrophysicsConstants.MSMIN / cmi)
        local_ztau = wpfloat("1.5") * (exp(wpfloat("0.66") * local_lnlogmi) - wpfloat("1.0"))
        ice_dep_autoconversion_rate_i2s = ice_net_deposition_rate_v2i / local_ztau
    else:
        snow_ice_collision_rate_i2s = wpfloat("0.0")
        graupel_ice_collision_rate_i2g = wpfloat("0.0")
        ice_autoconverson_rate_i2s = wpfloat("0.0")
        ice_deposition_rate_v2i = wpfloat("0.0")
        rain_ice_2graupel_ice_loss_rate_i2g = wpfloat("0.0")
        rain_ice_2graupel_rain_loss_rate_r2g = wpfloat("0.0")
        ice_dep_autoconversion_rate_i2s = wpfloat("0.0")
        ice_net_deposition_rate_v2i = wpfloat("0.0")
        ice_net_sublimation_rate_v2i = wpfloat("0.0")

    return (
        snow_ice_collision_rate_i2s,
        graupel_ice_collision_rate_i2g,
        ice_autoconverson_rate_i2s,
        ice_deposition_rate_v2i,
        rain_ice_2graupel_ice_loss_rate_i2g,
        rain_ice_2graupel_rain_loss_rate_r2g,
        ice_dep_autoconversion_rate_i2s,
        ice_net_deposition_rate_v2i,
        ice_net_sublimation_rate_v2i,
    )


@gtx.field_operator
def snow_and_graupel_depositional_growth_in_cold_ice_clouds(
    temperature: ta.wpfloat,
    pressure: ta.wpfloat,
    qv: ta.wpfloat,
    qs: ta.wpfloat,
    qvsi: ta.wpfloat,
    dtime: ta.wpfloat,
    ice_net_deposition_rate_v2i: ta.wpfloat,
    cslam: ta.wpfloat,
    cbsdep: ta.wpfloat,
    csdep: ta.wpfloat,
    reduce_dep: ta.wpfloat,
    celn6qgk: ta.wpfloat,
    ice_exists: bool,
    snow_exists: bool,
    graupel_exists: bool,
) -> tuple[ta.wpfloat, ta.wpfloat]:
    """Vapor deposition of snow and graupel in cold ice clouds."""
    if ice_exists | snow_exists | graupel_exists:
        if temperature <= PhysicsConstants.tmelt:
            local_qvsidiff = qv - qvsi
            local_svmax = local_qvsidiff / dtime

            local_xfac = wpfloat("1.0") + cbsdep * exp(MicrophysicsConstants.CCSDXP * log(cslam))
            snow_deposition_rate_v2s_in_cold_clouds = (
                csdep * local_xfac * local_qvsidiff / (cslam + PhysicsConstants.eps) ** 2.0
            )
            # FR new: depositional growth reduction
            if snow_deposition_rate_v2s_in_cold_clouds > wpfloat("0.0"):
                snow_deposition_rate_v2s_in_cold_clouds = (
                    snow_deposition_rate_v2s_in_cold_clouds * reduce_dep
                )

            # GZ: This limitation, which was missing in the original graupel scheme,
            # is crucial for numerical stability in the tropics!
            if snow_deposition_rate_v2s_in_cold_clouds > wpfloat("0.0"):
                snow_deposition_rate_v2s_in_cold_clouds = minimum(
                    snow_deposition_rate_v2s_in_cold_clouds,
                    local_svmax - ice_net_deposition_rate_v2i,
                )
            # Suppress depositional growth of snow if the existing amount is too small for a
            # a meaningful distiction between cloud ice and snow
            if qs <= wpfloat("1.0e-7"):
                snow_deposition_rate_v2s_in_cold_clouds = minimum(
                    snow_deposition_rate_v2s_in_cold_clouds, wpfloat("0.0")
                )
            # ** GZ: this numerical fit should be replaced with a physically more meaningful
            # formulation **
            graupel_deposition_rate_v2g_in_cold_clouds = (
                (
                    wpfloat("0.398561")
                    - wpfloat("0.00152398") * temperature
                    + wpfloat("2554.99") / pressure
                    + wpfloat("2.6531e-7") * pressure
                )
                * local_qvsidiff
                * celn6qgk
            )
        else:
            snow_deposition_rate_v2s_in_cold_clouds = wpfloat("0.0")
            graupel_deposition_rate_v2g_in_cold_clouds = wpfloat("0.0")
    else:
        snow_deposition_rate_v2s_in_cold_clouds = wpfloat("0.0")
        graupel_deposition_rate_v2g_in_cold_clouds = wpfloat("0.0")

    return snow_deposition_rate_v2s_in_cold_clouds, graupel_deposition_rate_v2g_in_cold_clouds


@gtx.field_operator
def melting(
    temperature: ta.wpfloat,
    pressure: ta.wpfloat,
    rho: ta.wpfloat,
    qv: ta.wpfloat,
    qvsw: ta.wpfloat,
    rhoqi_intermediate: ta.wpfloat,
    dtime: ta.wpfloat,
    cssmax: ta.wpfloat,
    csgmax: ta.wpfloat,
    celn8qsk: ta.wpfloat,
    celn6qgk: ta.wpfloat,
    ice_exists: bool,
    snow_exists: bool,
    graupel_exists: bool,
) -> tuple[ta.wpfloat, ta.wpfloat, ta.wpfloat, ta.wpfloat, ta.wpfloat, ta.wpfloat]:
    """Melting and vapor deposition of ice, snow and graupel above zero degree Celsius."""
    if ice_exists | snow_exists | graupel_exists:
        if temperature > PhysicsConstants.tmelt:
            # cloud ice melts instantaneously
            ice_melting_rate_i2c = rhoqi_intermediate / rho / dtime

            local_qvsw0 = MicrophysicsConstants.PVSW0 / (
                rho * PhysicsConstants.rv * PhysicsConstants.tmelt
            )
            local_qvsw0diff = qv - local_qvsw0

            # ** GZ: several numerical fits in this section should be replaced with physically
            # more meaningful formulations **
            if temperature > PhysicsConstants.tmelt - MicrophysicsConstants.TCRIT * local_qvsw0diff:
                # calculate melting rate
                local_x1 = (
                    temperature
                    - PhysicsConstants.tmelt
                    + MicrophysicsConstants.ASMEL * local_qvsw0diff
                )
                snow_melting_rate_s2r = (
                    (wpfloat("79.6863") / pressure + wpfloat("0.612654e-3")) * local_x1 * celn8qsk
                )
                snow_melting_rate_s2r = minimum(snow_melting_rate_s2r, cssmax)
                graupel_melting_rate_g2r = (
                    (wpfloat("12.31698") / pressure + wpfloat("7.39441e-05")) * local_x1 * celn6qgk
                )
                graupel_melting_rate_g2r = minimum(graupel_melting_rate_g2r, csgmax)
                # deposition + melting, ice particle temperature: t0
                # calculation without howell-factor!
                snow_deposition_rate_v2s_in_melting_condition = (
                    (wpfloat("31282.3") / pressure + wpfloat("0.241897"))
                    * local_qvsw0diff
                    * celn8qsk
                )
                graupel_deposition_rate_v2g_in_melting_condition = (
                    (wpfloat("0.153907") - pressure * wpfloat("7.86703e-07"))
                    * local_qvsw0diff
                    * celn6qgk
                )
                if local_qvsw0diff < wpfloat("0.0"):
                    # melting + evaporation of snow/graupel
                    snow_deposition_rate_v2s_in_melting_condition = maximum(
                        -cssmax, snow_deposition_rate_v2s_in_melting_condition
                    )
                    graupel_deposition_rate_v2g_in_melting_condition = maximum(
                        -csgmax, graupel_deposition_rate_v2g_in_melting_condition
                    )
                    # melt water evaporates
                    snow_melting_rate_s2r = (
                        snow_melting_rate_s2r + snow_deposition_rate_v2s_in_melting_condition
                    )
                    graupel_melting_rate_g2r = (
                        graupel_melting_rate_g2r + graupel_deposition_rate_v2g_in_melting_condition
                    )
                    snow_melting_rate_s2r = maximum(snow_melting_rate_s2r, wpfloat("0.0"))
                    graupel_melting_rate_g2r = maximum(graupel_melting_rate_g2r, wpfloat("0.0"))
                    rain_deposition_rate_v2r = wpfloat("0.0")
                else:
                    # deposition on snow/graupel is interpreted as increase in rain water
                    # ( qv --> qr, sconr), therefore,  sconr=(zssdep+zsgdep)
                    rain_deposition_rate_v2r = (
                        snow_deposition_rate_v2s_in_melting_condition
                        + graupel_deposition_rate_v2g_in_melting_condition
                    )
                    snow_deposition_rate_v2s_in_melting_condition = wpfloat("0.0")
                    graupel_deposition_rate_v2g_in_melting_condition = wpfloat("0.0")
            else:
                snow_melting_rate_s2r = wpfloat("0.0")
                graupel_melting_rate_g2r = wpfloat("0.0")
                rain_deposition_rate_v2r = wpfloat("0.0")
                # if t<t_crit, no melting, only evaporation of snow/graupel
                local_qvsidiff = qv - qvsw
                snow_deposition_rate_v2s_in_melting_condition = (
                    (wpfloat("0.28003") - pressure * wpfloat("0.146293e-6"))
                    * local_qvsidiff
                    * celn8qsk
                )
                graupel_deposition_rate_v2g_in_melting_condition = (
                    (wpfloat("0.0418521") - pressure * wpfloat("4.7524e-8"))
                    * local_qvsidiff
                    * celn6qgk
                )
                snow_deposition_rate_v2s_in_melting_condition = maximum(
                    -cssmax, snow_deposition_rate_v2s_in_melting_condition
                )
                graupel_deposition_rate_v2g_in_melting_condition = maximum(
                    -csgmax, graupel_deposition_rate_v2g_in_melting_condition
                )
        else:
            ice_melting_rate_i2c = wpfloat("0.0")
            snow_melting_rate_s2r = wpfloat("0.0")
            graupel_melting_rate_g2r = wpfloat("0.0")
            rain_deposition_rate_v2r = wpfloat("0.0")
            snow_deposition_rate_v2s_in_melting_condition = wpfloat("0.0")
            graupel_deposition_rate_v2g_in_melting_condition = wpfloat("0.0")
    else:
        ice_melting_rate_i2c = wpfloat("0.0")
        snow_melting_rate_s2r = wpfloat("0.0")
        graupel_melting_rate_g2r = wpfloat("0.0")
        rain_deposition_rate_v2r = wpfloat("0.0")
        snow_deposition_rate_v2s_in_melting_condition = wpfloat("0.0")
        graupel_deposition_rate_v2g_in_melting_condition = wpfloat("0.0")

    return (
        ice_melting_rate_i2c,
        snow_melting_rate_s2r,
        graupel_melting_rate_g2r,
        snow_deposition_rate_v2s_in_melting_condition,
        graupel_deposition_rate_v2g_in_melting_condition,
        rain_deposition_rate_v2r,
    )


@gtx.field_operator
def evaporation_and_freezing_in_subsaturated_air(
    temperature: ta.wpfloat,
    qv: ta.wpfloat,
    qc: ta.wpfloat,
    qvsw: ta.wpfloat,
    rhoqr: ta.wpfloat,
    dtime: ta.wpfloat,
    rain_freezing_rate_r2g_in_clouds: ta.wpfloat,
    csrmax: ta.wpfloat,
    precomputed_evaporation_alpha_exp_coeff: ta.wpfloat,
    precomputed_evaporation_alpha_coeff: ta.wpfloat,
    precomputed_evaporation_beta_exp_coeff: ta.wpfloat,
    precomputed_evaporation_beta_coeff: ta.wpfloat,
    celn7o4qrk: ta.wpfloat,
    rain_exists: bool,
) -> tuple[ta.wpfloat, ta.wpfloat]:
    """Compute the evaporation rate of rain in subsaturated condition."""
    rain_freezing_rate_r2g = rain_freezing_rate_r2g_in_clouds
    if rain_exists & (qv + qc <= qvsw):
        local_lnqr = log(rhoqr)
        local_x1 = wpfloat("1.0") + precomputed_evaporation_beta_coeff * exp(
            precomputed_evaporation_beta_exp_coeff * local_lnqr
        )
        # Limit evaporation rate in order to avoid overshoots towards supersaturation, the
        # pre-factor approximates (esat(T_wb)-e)/(esat(T)-e) at temperatures between 0 degC
        # and 30 degC
        local_temp_c = temperature - PhysicsConstants.tmelt
        local_maxevap = (
            (
                wpfloat("0.61")
                - wpfloat("0.0163") * local_temp_c
                + wpfloat("1.111e-4") * local_temp_c**2.0
            )
            * (qvsw - qv)
            / dtime
        )
        rain_evaporation_rate_r2v = (
            precomputed_evaporation_alpha_coeff
            * local_x1
            * (qvsw - qv)
            * exp(precomputed_evaporation_alpha_exp_coeff * local_lnqr)
        )
        rain_evaporation_rate_r2v = minimum(rain_evaporation_rate_r2v, local_maxevap)

        if temperature > MicrophysicsConstants.HOMOGENEOUS_FREEZE_TEMPERATURE:
            # Calculation of below-cloud rainwater freezing
            if temperature < MicrophysicsConstants.THRESHOLD_FREEZE_TEMPERATURE:
                # FR new: reduced rain freezing rate
                rain_freezing_rate_r2g = (
                    MicrophysicsConstants.COEFF_RAIN_FREEZE1
                    * (
                        exp(
                            MicrophysicsConstants.COEFF_RAIN_FREEZE2
                            * (MicrophysicsConstants.THRESHOLD_FREEZE_TEMPERATURE - temperature)
                        )
                        - wpfloat("1.0")
                    )
                    * celn7o4qrk
                )
        else:  # Hom. freezing of rain water
            rain_freezing_rate_r2g = csrmax
    else:
        rain_evaporation_rate_r2v = wpfloat("0.0")

    return rain_evaporation_rate_r2v, rain_freezing_rate_r2g


@gtx.field_operator
def sat_pres_water_scalar(temperature: ta.wpfloat) -> ta.wpfloat:
    """Compute saturation water vapour pressure by the Tetens formula."""
    return MicrophysicsConstants.TETENS_P0 * exp(
        MicrophysicsConstants.TETENS_AW
        * (temperature - PhysicsConstants.tmelt)
        / (temperature - MicrophysicsConstants.TETENS_BW)
    )


@gtx.field_operator
def sat_pres_ice(temperature: ta.wpfloat) -> ta.wpfloat:
    return MicrophysicsConstants.TETENS_P0 * exp(
        MicrophysicsConstants.TETENS_AI
        * (temperature - PhysicsConstants.tmelt)
        / (temperature - MicrophysicsConstants.TETENS_BI)
    )


@gtx.scan_operator(
    axis=dims.KDim,
    forward=True,
    init=(
        wpfloat("0.0"),  # temperature tendency
        wpfloat("0.0"),  # qv tendency
        wpfloat("0.0"),  # qc tendency
        wpfloat("0.0"),  # qi tendency
        wpfloat("0.0"),  # qr tendency
        wpfloat("0.0"),  # qs tendency
        wpfloat("0.0"),  # qg tendency
        wpfloat("0.0"),  # qv
        wpfloat("0.0"),  # qc
        wpfloat("0.0"),  # qi
        wpfloat("0.0"),  # qr
        wpfloat("0.0"),  # qs
        wpfloat("0.0"),  # qg
        wpfloat("0.0"),  # rhoqrv
        wpfloat("0.0"),  # rhoqsv
        wpfloat("0.0"),  # rhoqgv
        wpfloat("0.0"),  # rhoqiv
        wpfloat("0.0"),  # newv_r
        wpfloat("0.0"),  # newv_s
        wpfloat("0.0"),  # newv_g
        wpfloat("0.0"),  # newv_i
        wpfloat("0.0"),  # cloud top distance
        wpfloat("0.0"),  # density
        wpfloat("0.0"),  # density factor
        wpfloat("0.0"),  # density factor for ice
        wpfloat("0.0"),  # snow intercept parameter
        wpfloat("0.0"),  # saturation pressure
        gtx.int32(0),  # k level
    ),
)
def _icon_graupel_scan(
    state_kup: tuple[
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        ta.wpfloat,
        gtx.int32,
    ],
    ground_level: gtx.int32,  # k bottom level
    liquid_autoconversion_option: gtx.int32,
    snow_intercept_option: gtx.int32,
    use_constant_latent_heat: bool,
    ice_stickeff_min: ta.wpfloat,
    snow2graupel_riming_coeff: ta.wpfloat,
    power_law_coeff_for_ice_mean_fall_speed: ta.wpfloat,
    exponent_for_density_factor_in_ice_sedimentation: ta.wpfloat,
    power_law_coeff_for_snow_fall_speed: ta.wpfloat,
    precomputed_riming_coef: ta.wpfloat,
    precomputed_agg_coef: ta.wpfloat,
    precomputed_snow_sed_coef: ta.wpfloat,
    power_law_exponent_for_rain_mean_fall_speed: ta.wpfloat,
    power_law_coeff_for_rain_mean_fall_speed: ta.wpfloat,
    precomputed_evaporation_alpha_exp_coeff: ta.wpfloat,
    precomputed_evaporation_alpha_coeff: ta.wpfloat,
    precomputed_evaporation_beta_exp_coeff: ta.wpfloat,
    precomputed_evaporation_beta_coeff: ta.wpfloat,
    power_law_exponent_for_rain_mean_fall_speed_ln1o2: ta.wpfloat,
    power_law_exponent_for_ice_mean_fall_speed_ln1o2: ta.wpfloat,
    power_law_exponent_for_graupel_mean_fall_speed_ln1o2: ta.wpfloat,
    dtime: ta.wpfloat,
    dz: ta.wpfloat,
    temperature: ta.wpfloat,
    pressure: ta.wpfloat,
    rho: ta.wpfloat,
    qv: ta.wpfloat,
    qc: ta.wpfloat,
    qi: ta.wpfloat,
    qr: ta.wpfloat,
    qs: ta.wpfloat,
    qg: ta.wpfloat,
    qnc: ta.wpfloat,
) -> tuple[
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    ta.wpfloat,
    gtx.int32,
]:
    """The ICON graupel scheme on one level, given the state of the level above."""
    (
        _,
        qv_tendency_kup,
        qc_tendency_kup,
        qi_tendency_kup,
        qr_tendency_kup,
        qs_tendency_kup,
        qg_tendency_kup,
        qv_old_kup,
        qc_old_kup,
        qi_old_kup,
        qr_old_kup,
        qs_old_kup,
        qg_old_kup,
        rhoqrv_old_kup,
        rhoqsv_old_kup,
        rhoqgv_old_kup,
        rhoqiv_old_kup,
        vnew_r,
        vnew_s,
        vnew_g,
        vnew_i,
        dist_cldtop_kup,
        rho_kup,
        crho1o2_kup,
        crhofac_qi_kup,
        snow_sed0_kup,
        qvsw_kup,
        k_lev,
    ) = state_kup

    # ------------------------------------------------------------------------------
    #  Section 1: Precomputed coefficients
    # ------------------------------------------------------------------------------

    qv_kup = qv_old_kup + qv_tendency_kup * dtime
    qc_kup = qc_old_kup + qc_tendency_kup * dtime
    qi_kup = qi_old_kup + qi_tendency_kup * dtime
    qr_kup = qr_old_kup + qr_tendency_kup * dtime
    qs_kup = qs_old_kup + qs_tendency_kup * dtime
    qg_kup = qg_old_kup + qg_tendency_kup * dtime

    is_surface = True if k_lev == ground_level else False

    lhv = (
        PhysicsConstants.lh_vaporise
        if use_constant_latent_heat
        else PhysicsConstants.lh_vaporise
        + (MicrophysicsConstants.CP_V - PhysicsConstants.cpl)
        * (temperature - PhysicsConstants.tmelt)
        - PhysicsConstants.rv * temperature
    )
    lhs = (
        PhysicsConstants.lh_sublimate
        if use_constant_latent_heat
        else PhysicsConstants.lh_sublimate
        + (MicrophysicsConstants.CP_V - PhysicsConstants.cpi)
        * (temperature - PhysicsConstants.tmelt)
        - PhysicsConstants.rv * temperature
    )

    # for density correction of fall speeds
    chlp = log(MicrophysicsConstants.REF_AIR_DENSITY / rho)
    crho1o2 = exp(chlp / wpfloat("2.0"))
    crhofac_qi = exp(chlp * exponent_for_density_factor_in_ice_sedimentation)

    cdtdh = wpfloat("0.5") * dtime / dz
    cscmax = qc / dtime
    cnin = compute_cooper_inp_concentration(temperature)
    cmi = minimum(rho * qi / cnin, MicrophysicsConstants.ICE_MAX_MASS)
    cmi = maximum(MicrophysicsConstants.ICE_INITIAL_MASS, cmi)

    qvsw = sat_pres_water_scalar(temperature) / (rho * PhysicsConstants.rv * temperature)
    qvsi = sat_pres_ice(temperature) / (rho * PhysicsConstants.rv * temperature)

    rhoqr = qr * rho
    rhoqs = qs * rho
    rhoqg = qg * rho
    rhoqi = qi * rho

    rhoqrv_new_kup = qr_kup * rho_kup * vnew_r
    rhoqsv_new_kup = qs_kup * rho_kup * vnew_s
    rhoqgv_new_kup = qg_kup * rho_kup * vnew_g
    rhoqiv_new_kup = qi_kup * rho_kup * vnew_i

    if rhoqrv_new_kup <= MicrophysicsConstants.QMIN:
        rhoqrv_new_kup = wpfloat("0.0")
    if rhoqsv_new_kup <= MicrophysicsConstants.QMIN:
        rhoqsv_new_kup = wpfloat("0.0")
    if rhoqgv_new_kup <= MicrophysicsConstants.QMIN:
        rhoqgv_new_kup = wpfloat("0.0")
    if rhoqiv_new_kup <= MicrophysicsConstants.QMIN:
        rhoqiv_new_kup = wpfloat("0.0")

    rhoqr_intermediate = rhoqr / cdtdh + rhoqrv_new_kup + rhoqrv_old_kup
    rhoqs_intermediate = rhoqs / cdtdh + rhoqsv_new_kup + rhoqsv_old_kup
    rhoqg_intermediate = rhoqg / cdtdh + rhoqgv_new_kup + rhoqgv_old_kup
    rhoqi_intermediate = rhoqi / cdtdh + rhoqiv_new_kup + rhoqiv_old_kup

    rain_exists = True if (rhoqr > MicrophysicsConstants.QMIN) else False
    snow_exists = True if (rhoqs > MicrophysicsConstants.QMIN) else False
    graupel_exists = True if (rhoqg > MicrophysicsConstants.QMIN) else False
    ice_exists = True if (rhoqi > MicrophysicsConstants.QMIN) else False

    n0s, snow_sed0, crim, cagg, cbsdep = compute_snow_interception_and_collision_parameters(
        temperature,
        rho,
        qs,
        precomputed_riming_coef,
        precomputed_agg_coef,
        precomputed_snow_sed_coef,
        power_law_coeff_for_snow_fall_speed,
        snow_exists,
        snow_intercept_option,
    )

    # ------------------------------------------------------------------------------
    #  Section 2: Sedimentation fluxes
    # ------------------------------------------------------------------------------

    if k_lev > 0:
        vnew_s = (
            snow_sed0_kup
            * exp(MicrophysicsConstants.CCSWXP * log((qs_kup + qs) * wpfloat("0.5") * rho_kup))
            * crho1o2_kup
            if qs_kup + qs > MicrophysicsConstants.QMIN
            else wpfloat("0.0")
        )
        vnew_r = (
            power_law_coeff_for_rain_mean_fall_speed
            * exp(
                power_law_exponent_for_rain_mean_fall_speed
                * log((qr_kup + qr) * wpfloat("0.5") * rho_kup)
            )
            * crho1o2_kup
            if qr_kup + qr > MicrophysicsConstants.QMIN
            else wpfloat("0.0")
        )
        vnew_g = (
            MicrophysicsConstants.POWER_LAW_COEFF_FOR_GRAUPEL_MEAN_FALL_SPEED
            * exp(
                MicrophysicsConstants.POWER_LAW_EXPONENT_FOR_GRAUPEL_MEAN_FALL_SPEED
                * log((qg_kup + qg) * wpfloat("0.5") * rho_kup)
            )
            * crho1o2_kup
            if qg_kup + qg > MicrophysicsConstants.QMIN
            else wpfloat("0.0")
        )
        vnew_i = (
            power_law_coeff_for_ice_mean_fall_speed
            * exp(
                MicrophysicsConstants.POWER_LAW_EXPONENT_FOR_ICE_MEAN_FALL_SPEED
                * log((qi_kup + qi) * wpfloat("0.5") * rho_kup)
            )
            * crhofac_qi_kup
            if qi_kup + qi > MicrophysicsConstants.QMIN
            else wpfloat("0.0")
        )

    if snow_exists:
        terminal_velocity = snow_sed0 * exp(MicrophysicsConstants.CCSWXP * log(rhoqs)) * crho1o2
        # Prevent terminal fall speed of snow from being zero at the surface level
        if is_surface:
            terminal_velocity = maximum(
                terminal_velocity, MicrophysicsConstants.MINIMUM_SNOW_FALL_SPEED
            )

        rhoqsv = rhoqs * terminal_velocity

        # because we are at the model top, simply multiply by a factor of (0.5)^(V_intg_exp)
        if vnew_s == wpfloat("0.0"):
            vnew_s = terminal_velocity * MicrophysicsConstants.CCSWXP_LN1O2

    else:
        rhoqsv = wpfloat("0.0")

    if rain_exists:
        terminal_velocity = (
            power_law_coeff_for_rain_mean_fall_speed
            * exp(power_law_exponent_for_rain_mean_fall_speed * log(rhoqr))
            * crho1o2
        )
        # Prevent terminal fall speed of rain from being zero at the surface level
        if is_surface:
            terminal_velocity = maximum(
                terminal_velocity, MicrophysicsConstants.MINIMUM_RAIN_FALL_SPEED
            )

        rhoqrv = rhoqr * terminal_velocity

        # because we are at the model top, simply multiply by a factor of (0.5)^(V_intg_exp)
        if vnew_r == wpfloat("0.0"):
            vnew_r = terminal_velocity * power_law_exponent_for_rain_mean_fall_speed_ln1o2

    else:
        rhoqrv = wpfloat("0.0")

    if graupel_exists:
        terminal_velocity = (
            MicrophysicsConstants.POWER_LAW_COEFF_FOR_GRAUPEL_MEAN_FALL_SPEED
            * exp(MicrophysicsConstants.POWER_LAW_EXPONENT_FOR_GRAUPEL_MEAN_FALL_SPEED * log(rhoqg))
            * crho1o2
        )
        # Prevent terminal fall speed of graupel from being zero at the surface level
        if is_surface:
            terminal_velocity = maximum(
                terminal_velocity, MicrophysicsConstants.MINIMUM_GRAUPEL_FALL_SPEED
            )

        rhoqgv = rhoqg * terminal_velocity

        # because we are at the model top, simply multiply by a factor of (0.5)^(V_intg_exp)
        if vnew_g == wpfloat("0.0"):
            vnew_g = terminal_velocity * power_law_exponent_for_graupel_mean_fall_speed_ln1o2

    else:
        rhoqgv = wpfloat("0.0")

    if ice_exists:
        terminal_velocity = (
            power_law_coeff_for_ice_mean_fall_speed
            * exp(MicrophysicsConstants.POWER_LAW_EXPONENT_FOR_ICE_MEAN_FALL_SPEED * log(rhoqi))
            * crhofac_qi
        )

        rhoqiv = rhoqi * terminal_velocity

        # because we are at the model top, simply multiply by a factor of (0.5)^(V_intg_exp)
        if vnew_i == wpfloat("0.0"):
            vnew_i = terminal_velocity * power_law_exponent_for_ice_mean_fall_speed_ln1o2

    else:
        rhoqiv = wpfloat("0.0")

    # Prevent terminal fall speeds of precip hydrometeors from being zero at the surface level
    if is_surface:
        vnew_s = maximum(vnew_s, MicrophysicsConstants.MINIMUM_SNOW_FALL_SPEED)
        vnew_r = maximum(vnew_r, MicrophysicsConstants.MINIMUM_RAIN_FALL_SPEED)
        vnew_g = maximum(vnew_g, MicrophysicsConstants.MINIMUM_GRAUPEL_FALL_SPEED)

    # derive the intermediate density of hydrometeors, Eq. 5.21:
    # limit the precipitation flux at this k level such that mixing ratio won't go below zero
    rhoqrv = minimum(rhoqrv, rhoqr_intermediate)
    rhoqsv = minimum(rhoqsv, rhoqs_intermediate)
    rhoqgv = minimum(rhoqgv, maximum(wpfloat("0.0"), rhoqg_intermediate))
    rhoqiv = minimum(rhoqiv, rhoqi_intermediate)

    rhoqr_intermediate = cdtdh * (rhoqr_intermediate - rhoqrv)
    rhoqs_intermediate = cdtdh * (rhoqs_intermediate - rhoqsv)
    rhoqg_intermediate = cdtdh * (rhoqg_intermediate - rhoqgv)
    rhoqi_intermediate = cdtdh * (rhoqi_intermediate - rhoqiv)

    cimr = wpfloat("1.0") / (wpfloat("1.0") + vnew_r * cdtdh)
    cims = wpfloat("1.0") / (wpfloat("1.0") + vnew_s * cdtdh)
    cimg = wpfloat("1.0") / (wpfloat("1.0") + vnew_g * cdtdh)
    cimi = wpfloat("1.0") / (wpfloat("1.0") + vnew_i * cdtdh)

    # intermediate values
    rhoqr = rhoqr_intermediate * cimr
    rhoqs = rhoqs_intermediate * cims
    rhoqg = rhoqg_intermediate * cimg

    # ------------------------------------------------------------------------------
    #  Section 3: Precomputed coefficients after sedimentation for implicitness
    # ------------------------------------------------------------------------------

    rain_exists = True if (rhoqr > MicrophysicsConstants.QMIN) else False
    snow_exists = True if (rhoqs > MicrophysicsConstants.QMIN) else False
    graupel_exists = True if (rhoqg > MicrophysicsConstants.QMIN) else False
    ice_exists = True if (qi > MicrophysicsConstants.QMIN) else False
    cloud_exists = True if (qc > MicrophysicsConstants.QMIN) else False

    if rain_exists:
        clnrhoqr = log(rhoqr)
        csrmax = (
            rhoqr_intermediate / rho / dtime
        )  # GZ: shifting this computation ahead of the IF condition changes results!
        celn7o8qrk = (
            exp(wpfloat("7.0") / wpfloat("8.0") * clnrhoqr)
            if qi + qc > MicrophysicsConstants.QMIN
            else wpfloat("0.0")
        )
        celn7o4qrk = (
            exp(wpfloat("7.0") / wpfloat("4.0") * clnrhoqr)
            if temperature < MicrophysicsConstants.THRESHOLD_FREEZE_TEMPERATURE
            else wpfloat("0.0")
        )  # FR new
        celn13o8qrk = (
            exp(wpfloat("13.0") / wpfloat("8.0") * clnrhoqr) if ice_exists else wpfloat("0.0")
        )

    else:
        csrmax = wpfloat("0.0")
        celn7o8qrk = wpfloat("0.0")
        celn7o4qrk = wpfloat("0.0")
        celn13o8qrk = wpfloat("0.0")

    # ** GZ: the following computation differs substantially from the corresponding code in
    # cloudice **
    if snow_exists:
        clnrhoqs = log(rhoqs)
        cssmax = (
            rhoqs_intermediate / rho / dtime
        )  # GZ: shifting this computation ahead of the IF condition changes results#
        if qi + qc > MicrophysicsConstants.QMIN:
            celn3o4qsk = exp(wpfloat("3.0") / wpfloat("4.0") * clnrhoqs)
        else:
            celn3o4qsk = wpfloat("0.0")
        celn8qsk = exp(wpfloat("0.8") * clnrhoqs)
    else:
        cssmax = wpfloat("0.0")
        celn3o4qsk = wpfloat("0.0")
        celn8qsk = wpfloat("0.0")

    if graupel_exists:
        clnrhoqg = log(rhoqg)
        csgmax = rhoqg_intermediate / rho / dtime
        if qi + qc > MicrophysicsConstants.QMIN:
            celnrimexp_g = exp(MicrophysicsConstants.GRAUPEL_RIMEXP * clnrhoqg)
        else:
            celnrimexp_g = wpfloat("0.0")
        celn6qgk = exp(wpfloat("0.6") * clnrhoqg)
    else:
        csgmax = wpfloat("0.0")
        celnrimexp_g = wpfloat("0.0")
        celn6qgk = wpfloat("0.0")

    if ice_exists | snow_exists:
        cdvtp = MicrophysicsConstants.CCDVTP * exp(wpfloat("1.94") * log(temperature)) / pressure
        chi = MicrophysicsConstants.CCSHI1 * cdvtp * rho * qvsi / (temperature * temperature)
        chlp = cdvtp / (wpfloat("1.0") + chi)
        cidep = MicrophysicsConstants.CCIDEP * chlp

        if snow_exists:
            cslam = exp(
                MicrophysicsConstants.CCSLXP * log(MicrophysicsConstants.CCSLAM * n0s / rhoqs)
            )
            cslam = minimum(cslam, wpfloat("1.0e15"))
            csdep = wpfloat("4.0") * n0s * chlp
        else:
            cslam = wpfloat("1.0e10")
            csdep = wpfloat("3.367e-2")
    else:
        cidep = wpfloat("1.3e-5")
        cslam = wpfloat("1.0e10")
        csdep = wpfloat("3.367e-2")

    # ------------------------------------------------------------------------------
    #  Section 4: Transfer rates
    # ------------------------------------------------------------------------------

    ice_nucleation_rate_v2i = deposition_nucleation_at_low_temperature_or_in_clouds(
        temperature, rho, qv, qi, qvsi, cnin, dtime, cloud_exists
    )

    (
        cloud_autoconversion_rate_c2r,
        rain_cloud_collision_rate_c2r,
    ) = autoconversion_and_rain_accretion(
        temperature, qc, qr, qnc, celn7o8qrk, cloud_exists, liquid_autoconversion_option
    )

    cloud_freezing_rate_c2i, rain_freezing_rate_r2g_in_clouds = freezing_in_clouds(
        temperature, qc, qr, cscmax, csrmax, celn7o4qrk, cloud_exists, rain_exists
    )

    (
        snow_riming_rate_c2s,
        graupel_riming_rate_c2g,
        rain_shedding_rate_c2r,
        snow_autoconversion_rate_s2g,
    ) = riming_in_clouds(
        temperature,
        qc,
        crim,
        cslam,
        celnrimexp_g,
        celn3o4qsk,
        snow2graupel_riming_coeff,
        cloud_exists,
        snow_exists,
    )

    dist_cldtop, reduce_dep = reduced_deposition_in_clouds(
        temperature,
        qv_kup,
        qc_kup,
        qi_kup,
        qs_kup,
        qg_kup,
        qvsw_kup,
        dz,
        dist_cldtop_kup,
        k_lev,
        is_surface,
        cloud_exists,
    )

    (
        snow_ice_collision_rate_i2s,
        graupel_ice_collision_rate_i2g,
        ice_autoconverson_rate_i2s,
        ice_deposition_rate_v2i,
        rain_ice_2graupel_ice_loss_rate_i2g,
        rain_ice_2graupel_rain_loss_rate_r2g,
        ice_dep_autoconversion_rate_i2s,
        ice_net_deposition_rate_v2i,
        ice_net_sublimation_rate_v2i,
    ) = collision_and_ice_deposition_in_cold_ice_clouds(
        temperature,
        rho,
        qv,
        qi,
        qs,
        qvsi,
        rhoqi_intermediate,
        dtime,
        cslam,
        cidep,
        cagg,
        cmi,
        ice_stickeff_min,
        reduce_dep,
        celnrimexp_g,
        celn7o8qrk,
        celn13o8qrk,
        ice_exists,
    )

    (
        snow_deposition_rate_v2s_in_cold_clouds,
        graupel_deposition_rate_v2g_in_cold_clouds,
    ) = snow_and_graupel_depositional_growth_in_cold_ice_clouds(
        temperature,
        pressure,
        qv,
        qs,
        qvsi,
        dtime,
        ice_net_deposition_rate_v2i,
        cslam,
        cbsdep,
        csdep,
        reduce_dep,
        celn6qgk,
        ice_exists,
        snow_exists,
        graupel_exists,
    )

    (
        ice_melting_rate_i2c,
        snow_melting_rate_s2r,
        graupel_melting_rate_g2r,
        snow_deposition_rate_v2s_in_melting_condition,
        graupel_deposition_rate_v2g_in_melting_condition,
        rain_deposition_rate_v2r,
    ) = melting(
        temperature,
        pressure,
        rho,
        qv,
        qvsw,
        rhoqi_intermediate,
        dtime,
        cssmax,
        csgmax,
        celn8qsk,
        celn6qgk,
        ice_exists,
        snow_exists,
        graupel_exists,
    )

    (
        rain_evaporation_rate_r2v,
        rain_freezing_rate_r2g,
    ) = evaporation_and_freezing_in_subsaturated_air(
        temperature,
        qv,
        qc,
        qvsw,
        rhoqr,
        dtime,
        rain_freezing_rate_r2g_in_clouds,
        csrmax,
        precomputed_evaporation_alpha_exp_coeff,
        precomputed_evaporation_alpha_coeff,
        precomputed_evaporation_beta_exp_coeff,
        precomputed_evaporation_beta_coeff,
        celn7o4qrk,
        rain_exists,
    )

    # ------------------------------------------------------------------------------
    #  Section 5: Check for negative mass
    # ------------------------------------------------------------------------------

    snow_deposition_rate_v2s = (
        snow_deposition_rate_v2s_in_cold_clouds + snow_deposition_rate_v2s_in_melting_condition
    )
    graupel_deposition_rate_v2g = (
        graupel_deposition_rate_v2g_in_cold_clouds
        + graupel_deposition_rate_v2g_in_melting_condition
    )

    # finalizing transfer rates in clouds and calculate depositional growth reduction
    if cloud_exists & (temperature > MicrophysicsConstants.HOMOGENEOUS_FREEZE_TEMPERATURE):
        # Check for maximum depletion of cloud water and adjust the
        # transfer rates accordingly
        csum = (
            cloud_autoconversion_rate_c2r
            + rain_cloud_collision_rate_c2r
            + snow_riming_rate_c2s
            + graupel_riming_rate_c2g
            + rain_shedding_rate_c2r
        )
        ccorr = cscmax / maximum(cscmax, csum)
        cloud_autoconversion_rate_c2r = ccorr * cloud_autoconversion_rate_c2r
        rain_cloud_collision_rate_c2r = ccorr * rain_cloud_collision_rate_c2r
        snow_riming_rate_c2s = ccorr * snow_riming_rate_c2s
        graupel_riming_rate_c2g = ccorr * graupel_riming_rate_c2g
        rain_shedding_rate_c2r = ccorr * rain_shedding_rate_c2r
        snow_autoconversion_rate_s2g = minimum(
            snow_autoconversion_rate_s2g, snow_riming_rate_c2s + cssmax
        )

    if ice_exists | snow_exists | graupel_exists:
        if temperature <= PhysicsConstants.tmelt:  # cold case
            qvsidiff = qv - qvsi
            csimax = rhoqi_intermediate / rho / dtime

            # Check for maximal depletion of cloud ice
            # No check is done for depositional autoconversion (sdau) because
            # this is a always a fraction of the gain rate due to
            # deposition (i.e the sum of this rates is always positive)
            csum = (
                ice_autoconverson_rate_i2s
                + snow_ice_collision_rate_i2s
                + graupel_ice_collision_rate_i2g
                + rain_ice_2graupel_ice_loss_rate_i2g
                + ice_net_sublimation_rate_v2i
            )
            ccorr = csimax / maximum(csimax, csum) if csimax > wpfloat("0.0") else wpfloat("0.0")
            ice_deposition_rate_v2i = (
                ice_net_deposition_rate_v2i - ccorr * ice_net_sublimation_rate_v2i
            )
            ice_autoconverson_rate_i2s = ccorr * ice_autoconverson_rate_i2s
            snow_ice_collision_rate_i2s = ccorr * snow_ice_collision_rate_i2s
            graupel_ice_collision_rate_i2g = ccorr * graupel_ice_collision_rate_i2g
            rain_ice_2graupel_ice_loss_rate_i2g = ccorr * rain_ice_2graupel_ice_loss_rate_i2g
            if qvsidiff < wpfloat("0.0"):
                snow_deposition_rate_v2s = maximum(snow_deposition_rate_v2s, -cssmax)
                graupel_deposition_rate_v2g = maximum(graupel_deposition_rate_v2g, -csgmax)

    csum = rain_evaporation_rate_r2v + rain_freezing_rate_r2g + rain_ice_2graupel_rain_loss_rate_r2g
    ccorr = csrmax / maximum(csrmax, csum) if csum > wpfloat("0.0") else wpfloat("1.0")
    rain_evaporation_rate_r2v = ccorr * rain_evaporation_rate_r2v
    rain_freezing_rate_r2g = ccorr * rain_freezing_rate_r2g
    rain_ice_2graupel_rain_loss_rate_r2g = ccorr * rain_ice_2graupel_rain_loss_rate_r2g

    # limit snow depletion in order to avoid negative values of qs
    ccorr = wpfloat("1.0")
    if snow_deposition_rate_v2s <= wpfloat("0.0"):
        csum = snow_melting_rate_s2r + snow_autoconversion_rate_s2g - snow_deposition_rate_v2s
        if csum > wpfloat("0.0"):
            ccorr = cssmax / maximum(cssmax, csum)
        snow_melting_rate_s2r = ccorr * snow_melting_rate_s2r
        snow_autoconversion_rate_s2g = ccorr * snow_autoconversion_rate_s2g
        snow_deposition_rate_v2s = ccorr * snow_deposition_rate_v2s
    else:
        csum = snow_melting_rate_s2r + snow_autoconversion_rate_s2g
        if csum > wpfloat("0.0"):
            ccorr = cssmax / maximum(cssmax, csum)
        snow_melting_rate_s2r = ccorr * snow_melting_rate_s2r
        snow_autoconversion_rate_s2g = ccorr * snow_autoconversion_rate_s2g

    # ------------------------------------------------------------------------------
    #  Section 6: Update tendencies
    # ------------------------------------------------------------------------------

    cqvt = (
        rain_evaporation_rate_r2v
        - ice_deposition_rate_v2i
        - snow_deposition_rate_v2s
        - graupel_deposition_rate_v2g
        - ice_nucleation_rate_v2i
        - rain_deposition_rate_v2r
    )
    cqct = (
        ice_melting_rate_i2c
        - cloud_autoconversion_rate_c2r
        - cloud_freezing_rate_c2i
        - rain_cloud_collision_rate_c2r
        - rain_shedding_rate_c2r
        - snow_riming_rate_c2s
        - graupel_riming_rate_c2g
    )
    cqit = (
        ice_nucleation_rate_v2i
        + cloud_freezing_rate_c2i
        - ice_melting_rate_i2c
        - rain_ice_2graupel_ice_loss_rate_i2g
        + ice_deposition_rate_v2i
        - ice_dep_autoconversion_rate_i2s
        - snow_ice_collision_rate_i2s
        - graupel_ice_collision_rate_i2g
        - ice_autoconverson_rate_i2s
    )
    cqrt = (
        cloud_autoconversion_rate_c2r
        + rain_shedding_rate_c2r
        + rain_cloud_collision_rate_c2r
        + snow_melting_rate_s2r
        + graupel_melting_rate_g2r
        - rain_evaporation_rate_r2v
        - rain_ice_2graupel_rain_loss_rate_r2g
        - rain_freezing_rate_r2g
        + rain_deposition_rate_v2r
    )
    cqst = (
        ice_autoconverson_rate_i2s
        + ice_dep_autoconversion_rate_i2s
        - snow_melting_rate_s2r
        + snow_riming_rate_c2s
        + snow_deposition_rate_v2s
        + snow_ice_collision_rate_i2s
        - snow_autoconversion_rate_s2g
    )
    cqgt = (
        graupel_ice_collision_rate_i2g
        - graupel_melting_rate_g2r
        + rain_ice_2graupel_ice_loss_rate_i2g
        + rain_ice_2graupel_rain_loss_rate_r2g
        + graupel_deposition_rate_v2g
        + rain_freezing_rate_r2g
        + graupel_riming_rate_c2g
        + snow_autoconversion_rate_s2g
    )

    # l_cv (is_isochoric) is removed in icon4py. So, heat_cap_r (reciprocal of heat capacity of
    # dry air) = MicrophysicsConstants.RCVD (at constant volume)
    temperature_tendency = MicrophysicsConstants.RCVD * (
        lhv * (cqct + cqrt) + lhs * (cqit + cqst + cqgt)
    )
    qi_tendency = maximum((rhoqi_intermediate / rho * cimi - qi) / dtime + cqit * cimi, -qi / dtime)
    qr_tendency = maximum((rhoqr_intermediate / rho * cimr - qr) / dtime + cqrt * cimr, -qr / dtime)
    qs_tendency = maximum((rhoqs_intermediate / rho * cims - qs) / dtime + cqst * cims, -qs / dtime)
    qg_tendency = maximum((rhoqg_intermediate / rho * cimg - qg) / dtime + cqgt * cimg, -qg / dtime)
    qc_tendency = maximum(cqct, -qc / dtime)
    qv_tendency = maximum(cqvt, -qv / dtime)

    k_lev = k_lev + 1

    return (
        temperature_tendency,
        qv_tendency,
        qc_tendency,
        qi_tendency,
        qr_tendency,
        qs_tendency,
        qg_tendency,
        qv,
        qc,
        qi,
        qr,
        qs,
        qg,
        rhoqrv,
        rhoqsv,
        rhoqgv,
        rhoqiv,
        vnew_r,
        vnew_s,
        vnew_g,
        vnew_i,
        dist_cldtop,
        rho,
        crho1o2,
        crhofac_qi,
        snow_sed0,
        qvsw,
        k_lev,
    )


@gtx.field_operator
def _icon_graupel(
    ground_level: gtx.int32,
    liquid_autoconversion_option: gtx.int32,
    snow_intercept_option: gtx.int32,
    use_constant_latent_heat: bool,
    ice_stickeff_min: ta.wpfloat,
    snow2graupel_riming_coeff: ta.wpfloat,
    power_law_coeff_for_ice_mean_fall_speed: ta.wpfloat,
    exponent_for_density_factor_in_ice_sedimentation: ta.wpfloat,
    power_law_coeff_for_snow_fall_speed: ta.wpfloat,
    precomputed_riming_coef: ta.wpfloat,
    precomputed_agg_coef: ta.wpfloat,
    precomputed_snow_sed_coef: ta.wpfloat,
    power_law_exponent_for_rain_mean_fall_speed: ta.wpfloat,
    power_law_coeff_for_rain_mean_fall_speed: ta.wpfloat,
    precomputed_evaporation_alpha_exp_coeff: ta.wpfloat,
    precomputed_evaporation_alpha_coeff: ta.wpfloat,
    precomputed_evaporation_beta_exp_coeff: ta.wpfloat,
    precomputed_evaporation_beta_coeff: ta.wpfloat,
    power_law_exponent_for_rain_mean_fall_speed_ln1o2: ta.wpfloat,
    power_law_exponent_for_ice_mean_fall_speed_ln1o2: ta.wpfloat,
    power_law_exponent_for_graupel_mean_fall_speed_ln1o2: ta.wpfloat,
    dtime: ta.wpfloat,
    dz: fa.CellKField[ta.wpfloat],
    temperature: fa.CellKField[ta.wpfloat],
    pressure: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    qv: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    qnc: fa.CellField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    (
        temperature_tendency,
        qv_tendency,
        qc_tendency,
        qi_tendency,
        qr_tendency,
        qs_tendency,
        qg_tendency,
        _,
        _,
        _,
        _,
        _,
        _,
        rhoqrv_old_kup,
        rhoqsv_old_kup,
        rhoqgv_old_kup,
        rhoqiv_old_kup,
        vnew_r,
        vnew_s,
        vnew_g,
        vnew_i,
        _,
        _,
        _,
        _,
        _,
        _,
        _,
    ) = _icon_graupel_scan(
        ground_level,
        liquid_autoconversion_option,
        snow_intercept_option,
        use_constant_latent_heat,
        ice_stickeff_min,
        snow2graupel_riming_coeff,
        power_law_coeff_for_ice_mean_fall_speed,
        exponent_for_density_factor_in_ice_sedimentation,
        power_law_coeff_for_snow_fall_speed,
        precomputed_riming_coef,
        precomputed_agg_coef,
        precomputed_snow_sed_coef,
        power_law_exponent_for_rain_mean_fall_speed,
        power_law_coeff_for_rain_mean_fall_speed,
        precomputed_evaporation_alpha_exp_coeff,
        precomputed_evaporation_alpha_coeff,
        precomputed_evaporation_beta_exp_coeff,
        precomputed_evaporation_beta_coeff,
        power_law_exponent_for_rain_mean_fall_speed_ln1o2,
        power_law_exponent_for_ice_mean_fall_speed_ln1o2,
        power_law_exponent_for_graupel_mean_fall_speed_ln1o2,
        dtime,
        dz,
        temperature,
        pressure,
        rho,
        qv,
        qc,
        qi,
        qr,
        qs,
        qg,
        qnc,
    )

    return (
        temperature_tendency,
        qv_tendency,
        qc_tendency,
        qi_tendency,
        qr_tendency,
        qs_tendency,
        qg_tendency,
        rhoqrv_old_kup,
        rhoqsv_old_kup,
        rhoqgv_old_kup,
        rhoqiv_old_kup,
        vnew_r,
        vnew_s,
        vnew_g,
        vnew_i,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def icon_graupel(
    ground_level: gtx.int32,
    liquid_autoconversion_option: gtx.int32,
    snow_intercept_option: gtx.int32,
    use_constant_latent_heat: bool,
    ice_stickeff_min: ta.wpfloat,
    snow2graupel_riming_coeff: ta.wpfloat,
    power_law_coeff_for_ice_mean_fall_speed: ta.wpfloat,
    exponent_for_density_factor_in_ice_sedimentation: ta.wpfloat,
    power_law_coeff_for_snow_fall_speed: ta.wpfloat,
    precomputed_riming_coef: ta.wpfloat,
    precomputed_agg_coef: ta.wpfloat,
    precomputed_snow_sed_coef: ta.wpfloat,
    power_law_exponent_for_rain_mean_fall_speed: ta.wpfloat,
    power_law_coeff_for_rain_mean_fall_speed: ta.wpfloat,
    precomputed_evaporation_alpha_exp_coeff: ta.wpfloat,
    precomputed_evaporation_alpha_coeff: ta.wpfloat,
    precomputed_evaporation_beta_exp_coeff: ta.wpfloat,
    precomputed_evaporation_beta_coeff: ta.wpfloat,
    power_law_exponent_for_rain_mean_fall_speed_ln1o2: ta.wpfloat,
    power_law_exponent_for_ice_mean_fall_speed_ln1o2: ta.wpfloat,
    power_law_exponent_for_graupel_mean_fall_speed_ln1o2: ta.wpfloat,
    dtime: ta.wpfloat,
    dz: fa.CellKField[ta.wpfloat],
    temperature: fa.CellKField[ta.wpfloat],
    pressure: fa.CellKField[ta.wpfloat],
    rho: fa.CellKField[ta.wpfloat],
    qv: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    qnc: fa.CellField[ta.wpfloat],
    temperature_tendency: fa.CellKField[ta.wpfloat],
    qv_tendency: fa.CellKField[ta.wpfloat],
    qc_tendency: fa.CellKField[ta.wpfloat],
    qi_tendency: fa.CellKField[ta.wpfloat],
    qr_tendency: fa.CellKField[ta.wpfloat],
    qs_tendency: fa.CellKField[ta.wpfloat],
    qg_tendency: fa.CellKField[ta.wpfloat],
    rhoqrv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqsv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqgv_old_kup: fa.CellKField[ta.wpfloat],
    rhoqiv_old_kup: fa.CellKField[ta.wpfloat],
    vnew_r: fa.CellKField[ta.wpfloat],
    vnew_s: fa.CellKField[ta.wpfloat],
    vnew_g: fa.CellKField[ta.wpfloat],
    vnew_i: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _icon_graupel(
        ground_level,
        liquid_autoconversion_option,
        snow_intercept_option,
        use_constant_latent_heat,
        ice_stickeff_min,
        snow2graupel_riming_coeff,
        power_law_coeff_for_ice_mean_fall_speed,
        exponent_for_density_factor_in_ice_sedimentation,
        power_law_coeff_for_snow_fall_speed,
        precomputed_riming_coef,
        precomputed_agg_coef,
        precomputed_snow_sed_coef,
        power_law_exponent_for_rain_mean_fall_speed,
        power_law_coeff_for_rain_mean_fall_speed,
        precomputed_evaporation_alpha_exp_coeff,
        precomputed_evaporation_alpha_coeff,
        precomputed_evaporation_beta_exp_coeff,
        precomputed_evaporation_beta_coeff,
        power_law_exponent_for_rain_mean_fall_speed_ln1o2,
        power_law_exponent_for_ice_mean_fall_speed_ln1o2,
        power_law_exponent_for_graupel_mean_fall_speed_ln1o2,
        dtime,
        dz,
        temperature,
        pressure,
        rho,
        qv,
        qc,
        qi,
        qr,
        qs,
        qg,
        qnc,
        out=(
            temperature_tendency,
            qv_tendency,
            qc_tendency,
            qi_tendency,
            qr_tendency,
            qs_tendency,
            qg_tendency,
            rhoqrv_old_kup,
            rhoqsv_old_kup,
            rhoqgv_old_kup,
            rhoqiv_old_kup,
            vnew_r,
            vnew_s,
            vnew_g,
            vnew_i,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _graupel_parameters(power_law_coeff_for_snow_fall_speed=20.0, rain_mu=0.0, rain_n0=1.0):
    """The scheme's precomputed coefficients, as icon4py's graupel component computes them."""
    mc = MicrophysicsConstants
    v1s, bms, ams = 0.5, float(mc.POWER_LAW_EXPONENT_FOR_SNOW_MD_RELATION), 0.069
    riming = 0.25 * math.pi * 0.9 * power_law_coeff_for_snow_fall_speed * math.gamma(v1s + 3.0)
    agg = 0.25 * math.pi * power_law_coeff_for_snow_fall_speed * math.gamma(v1s + 3.0)
    ccsvxp = -(v1s / (bms + 1.0) + 1.0)
    snow_sed = (ams * power_law_coeff_for_snow_fall_speed * math.gamma(bms + v1s + 1.0)
                * (ams * math.gamma(bms + 1.0)) ** ccsvxp)
    n0r = 8.0e6 * math.exp(3.2 * rain_mu) * 0.01 ** (-rain_mu) * rain_n0
    ar = math.pi * PhysicsConstants.water_density / 6.0 * n0r * math.gamma(rain_mu + 4.0)
    rain_exp = 0.5 / (rain_mu + 4.0)
    rain_coeff = 130.0 * math.gamma(rain_mu + 4.5) / math.gamma(rain_mu + 4.0) * ar ** -rain_exp
    alpha_exp = (rain_mu + 2.0) / (rain_mu + 4.0)
    alpha = (2.0 * math.pi * 2.22e-5 / 2.270603 * n0r * ar ** -alpha_exp
             * math.gamma(rain_mu + 2.0))
    beta_exp = (2.0 * rain_mu + 5.5) / (2.0 * rain_mu + 8.0) - alpha_exp
    beta = (0.26 * math.sqrt(1.225 * 130.0 / 1.75e-5) * ar ** -beta_exp
            * math.gamma((2.0 * rain_mu + 5.5) / 2.0) / math.gamma(rain_mu + 2.0))
    return dict(
        ice_stickeff_min=0.075, snow2graupel_riming_coeff=0.5,
        power_law_coeff_for_ice_mean_fall_speed=1.25,
        exponent_for_density_factor_in_ice_sedimentation=0.33,
        power_law_coeff_for_snow_fall_speed=power_law_coeff_for_snow_fall_speed,
        precomputed_riming_coef=riming, precomputed_agg_coef=agg,
        precomputed_snow_sed_coef=snow_sed,
        power_law_exponent_for_rain_mean_fall_speed=rain_exp,
        power_law_coeff_for_rain_mean_fall_speed=rain_coeff,
        precomputed_evaporation_alpha_exp_coeff=alpha_exp,
        precomputed_evaporation_alpha_coeff=alpha,
        precomputed_evaporation_beta_exp_coeff=beta_exp,
        precomputed_evaporation_beta_coeff=beta,
        power_law_exponent_for_rain_mean_fall_speed_ln1o2=math.exp(rain_exp * math.log(0.5)),
        power_law_exponent_for_ice_mean_fall_speed_ln1o2=math.exp(0.16 * math.log(0.5)),
        power_law_exponent_for_graupel_mean_fall_speed_ln1o2=math.exp(0.217 * math.log(0.5)))


def _graupel_column_inputs():
    """A cold top and a warm bottom, clouds, ice and precipitation here and there."""
    k = np.linspace(0.0, 1.0, NLEV)[None, :]
    temperature = 228.0 + 65.0 * k + RNG.normal(0.0, 3.0, (NC, NLEV))
    pressure = 2.5e4 + 7.5e4 * k + RNG.normal(0.0, 500.0, (NC, NLEV))
    rho = pressure / (PhysicsConstants.rd * temperature)
    psat = 610.78 * np.exp(17.269 * (temperature - 273.15) / (temperature - 35.86))
    qsat = psat / (rho * PhysicsConstants.rv * temperature)

    def some(scale, share=0.6):
        return np.where(RNG.random((NC, NLEV)) < share, RNG.uniform(0.0, scale, (NC, NLEV)), 0.0)

    return dict(
        dz=RNG.uniform(300.0, 600.0, (NC, NLEV)), temperature=temperature, pressure=pressure,
        rho=rho, qv=qsat * RNG.uniform(0.7, 1.1, (NC, NLEV)), qc=some(5e-4),
        qi=np.where(temperature < 268.0, some(2e-4), 0.0), qr=some(3e-4), qs=some(3e-4),
        qg=some(2e-4), qnc=np.full(NC, 1.0e8))


_GRAUPEL_OUTPUTS = ("temperature_tendency", "qv_tendency", "qc_tendency", "qi_tendency",
                    "qr_tendency", "qs_tendency", "qg_tendency", "rhoqrv_old_kup",
                    "rhoqsv_old_kup", "rhoqgv_old_kup", "rhoqiv_old_kup", "vnew_r", "vnew_s",
                    "vnew_g", "vnew_i")
_GRAUPEL_KEPT = (0, 1, 2, 3, 4, 5, 6, 13, 14, 15, 16, 17, 18, 19, 20)


def _graupel_numpy(options, parameters, dtime, fields, hs, he, vs, ve, base):
    """The reference scan body run on NumPy scalars, down each column of the domain."""
    namespace = dict(
        exp=np.exp, log=np.log, sqrt=np.sqrt, maximum=np.maximum, minimum=np.minimum,
        wpfloat=np.float64, gtx=types.SimpleNamespace(int32=np.int32), ta=ta,
        PhysicsConstants=PhysicsConstants, MicrophysicsConstants=MicrophysicsConstants,
        LiquidAutoConversionType=LiquidAutoConversionType,
        SnowInterceptParametererization=SnowInterceptParametererization)
    for op in (compute_cooper_inp_concentration,
               compute_snow_interception_and_collision_parameters,
               deposition_nucleation_at_low_temperature_or_in_clouds,
               autoconversion_and_rain_accretion, freezing_in_clouds, riming_in_clouds,
               reduced_deposition_in_clouds, collision_and_ice_deposition_in_cold_ice_clouds,
               snow_and_graupel_depositional_growth_in_cold_ice_clouds, melting,
               evaporation_and_freezing_in_subsaturated_air, sat_pres_water_scalar,
               sat_pres_ice):
        namespace[op.__wrapped__.__name__] = _on_numpy(op, namespace)
    scan = _on_numpy(_icon_graupel_scan, namespace)
    out = {n: np.array(base[n]) for n in _GRAUPEL_OUTPUTS}
    g = types.SimpleNamespace(**fields)
    with np.errstate(all="ignore"):
        for c in range(hs, he):
            state = (np.float64(0.0),) * 27 + (np.int32(0),)
            for k in range(vs, ve):
                state = scan(state, *options, *parameters.values(), np.float64(dtime),
                             *(np.float64(getattr(g, n)[c, k]) for n in (
                                 "dz", "temperature", "pressure", "rho", "qv", "qc", "qi", "qr",
                                 "qs", "qg")), np.float64(g.qnc[c]))
                for name, i in zip(_GRAUPEL_OUTPUTS, _GRAUPEL_KEPT):
                    out[name][c, k] = state[i]
    return out


@pytest.mark.parametrize(("options", "bounds"), [
    ((LiquidAutoConversionType.KESSLER,
      SnowInterceptParametererization.FIELD_GENERAL_MOMENT_ESTIMATION, True), (1, NC, 1, NLEV)),
    ((LiquidAutoConversionType.SEIFERT_BEHENG,
      SnowInterceptParametererization.FIELD_BEST_FIT_ESTIMATION, False), (0, NC - 1, 0, NLEV)),
])
@pytest.mark.parametrize("backend", BACKENDS)
def test_icon_graupel(backend, options, bounds):
    hs, he, vs, ve = bounds
    dtime, ground_level = 30.0, NLEV - 1
    fields = _graupel_column_inputs()
    parameters = _graupel_parameters()
    base = {n: RNG.random((NC, NLEV)) for n in _GRAUPEL_OUTPUTS}
    got = {n: v.copy() for n, v in base.items()}
    liquid, snow, constant_heat = options
    icon_graupel(ground_level, int(liquid), int(snow), constant_heat, **parameters,
                 dtime=dtime, **fields, **got, horizontal_start=hs, horizontal_end=he,
                 vertical_start=vs, vertical_end=ve, offset_provider={}, backend=backend)
    want = _graupel_numpy((np.int32(ground_level), liquid, snow, constant_heat), parameters,
                          dtime, fields, hs, he, vs, ve, base)
    assert all(np.isfinite(w).all() for w in want.values())
    for name in ("qr_tendency", "qs_tendency", "vnew_s", "rhoqiv_old_kup"):
        assert (want[name][hs:he, vs:ve] != 0.0).any(), name
    check(got, want, rtol=1e-10, atol=1e-18)
