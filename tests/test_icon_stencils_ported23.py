"""A twenty-third round of ICON stencils (icon4py's field operators) in
icon4py's own spelling, beside ``test_icon_stencils_ported*.py``.

First the horizontal differential operators of the triangular grid that
icon4py's global diffusion is written with: their arguments and results are
``NamedTuple``s of fields (``RbfVectorCoefficients``, ``DiamondDirection``,
``DiamondLengths`` in, a ``VertexVector`` built with keyword arguments out),
read as attributes and shifted after (``vector.u(E2C2V[0])``), local fields
picked by ``direction.x[dims.E2C2VDim(0)]``, ``V2E``, ``C2E`` and ``E2C``
gathers on full and on half levels, operators calling operators that return
tuples unpacked into four names.  Then the global diffusion step built from
them: the cold-pool coefficient (``C2E2C`` sums, ``where`` of ``|`` and
``&``), the Laplacian at constant height (a ``NamedTuple`` of a cell field
and two ``[Cell, C2E2C, K]`` fields, one of ``int32`` offsets given to
``as_offset(Koff, …)`` after a ``C2E2C[i]`` shift), the Smagorinsky
coefficient from a ``NamedTuple`` holding both ``KField``s and scalars,
the diffusion of vn (a fourth-order term from the Laplacian of the
Laplacian), of w on half levels (a ``concat_where`` on a runtime
``KHalfDim`` range whose other branch is the scalar ``0.0``, inside a
``concat_where`` on ``KHalfDim < num_levels``), of theta and exner (a
``max_over`` of the cold-pool coefficient over ``E2C`` on the two lowest
levels, ``concat_where(num_levels - 2 <= dims.KDim, …)``, an ``if``
statement on a ``bool`` argument), and the whole step, called as icon4py's
``DiffusionGlobal`` calls it: set up with ``with_grid_type(…).with_backend(…)``,
keyword arguments, no ``out=``, its four results unpacked, theta and exner
chosen by an ``if`` expression on a ``bool`` between a call and the inputs
(each of the four results over its own domain: edges, cells on half levels,
cells).
Then the tmx momentum diffusion: the tridiagonal rows as ``NamedTuple``s
(``TridiagonalMatrixCells``, ``TridiagonalMatrixEdges``) from
``concat_where`` on runtime ``minlvl`` / ``maxlvl`` with zeros anchored to a
field (``like * 0.0 + value``), solved by a forward and a backward scan; the
horizontal stress tendency of vn (``u_vert(E2C2V)`` products picked by
``E2C2VDim(i)`` afterwards, a vertex field on half levels read at
``E2C2V[1]`` then ``KDim + 1``), its right-hand side (``concat_where`` on
``KDim == 0``, an ``E2C`` sum of cell fields without levels) and vertical
solve written in place on a range of levels; the w solve on half levels
annotated as full ones; the explicit step whose boundary rows read ``var``
on one side only.
Last AMPS' liquid saturation vapour pressure table (``_esat_lk_dsl``), the
Fortran order of truncating then clamping, its 150 entries tiled over cells
and its ``KDim`` index field both longer than the temperature it is read for.
Each operator is interpreted and compiled, compared with NumPy written from
the formulas."""

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
    as_offset,
    astype,
    concat_where,
    max_over,
    maximum,
    minimum,
    neighbor_sum,
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
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.E2CDim, dims.C2EDim, dims.V2EDim = E2CDim, C2EDim, V2EDim
dims.C2E2CDim, dims.E2C2VDim = C2E2CDim, E2C2VDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KField = Field[Dims[KDim], T]
fa.KHalfField = Field[Dims[KHalfDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.EdgeKHalfField = Field[Dims[EdgeDim, KHalfDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]

wpfloat = gtx.float64                         # icon4py's double precision build

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 12, 6, 6
NH = NLEV + 1
RNG = np.random.default_rng(23001)
_TABLE_RNG = np.random.default_rng(23002)


def _distinct(rows, n, k):
    return np.array([_TABLE_RNG.choice(n, k, replace=False) for _ in range(rows)])


def _other_cells(k):
    return np.array([_TABLE_RNG.choice([x for x in range(NC) if x != c], k, replace=False)
                     for c in range(NC)])


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3),
          "V2E": _distinct(NV, NE, 6), "E2C2V": _distinct(NE, NV, 4),
          "C2E2C": _other_cells(3), "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(23003).bit_generator.state


def nb(x, table):
    """``x(OFFSET)``: the neighbours' rows, a local axis second."""
    return np.asarray(x)[TABLES[table]]


def nbsum(weights, x, table):
    """``neighbor_sum(weights * x(OFFSET))`` for a field with levels."""
    return np.einsum("rn,rnk->rk", weights, nb(x, table))


# ================================================================== differential operators
#
# icon4py's model/common/math/differential_operators.py: Zängl et al. (2015)'s
# operators on the diamond of an edge, arguments grouped in NamedTuples.


class VertexVector(NamedTuple):
    u: fa.VertexKField[wpfloat]
    v: fa.VertexKField[wpfloat]


class RbfVectorCoefficients(NamedTuple):
    """Weights of the edge-normal components in the RBF reconstruction of (u, v) at a vertex."""

    u: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat]
    v: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2EDim], wpfloat]


class DiamondDirection(NamedTuple):
    """A unit vector given at each of the four diamond vertices."""

    x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat]
    y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat]


class DiamondLengths(NamedTuple):
    """Inverse lengths of the diamond diagonals."""

    inv_l_p: fa.EdgeField[wpfloat]
    inv_l_vv: fa.EdgeField[wpfloat]


@gtx.field_operator
def rbf_vector_at_vertices(
    psi_n: fa.EdgeKField[wpfloat], coeff: RbfVectorCoefficients
) -> VertexVector:
    return VertexVector(
        u=neighbor_sum(coeff.u * psi_n(V2E), axis=dims.V2EDim),
        v=neighbor_sum(coeff.v * psi_n(V2E), axis=dims.V2EDim),
    )


@gtx.field_operator
def grad_n(
    psi: fa.CellKField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return (psi(E2C[1]) - psi(E2C[0])) * inv_dual_edge_length


@gtx.field_operator
def grad_n_khalf(
    psi: fa.CellKHalfField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
) -> fa.EdgeKHalfField[wpfloat]:
    return (psi(E2C[1]) - psi(E2C[0])) * inv_dual_edge_length


@gtx.field_operator
def div(
    phi_e: fa.EdgeKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[wpfloat]:
    return neighbor_sum(phi_e(C2E) * geofac_div, axis=dims.C2EDim)


@gtx.field_operator
def div_khalf(
    phi_e: fa.EdgeKHalfField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKHalfField[wpfloat]:
    return neighbor_sum(phi_e(C2E) * geofac_div, axis=dims.C2EDim)


@gtx.field_operator
def nabla2_khalf(
    psi: fa.CellKHalfField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKHalfField[wpfloat]:
    return div_khalf(grad_n_khalf(psi, inv_dual_edge_length), geofac_div)


@gtx.field_operator
def components_at_diamond_vertices(
    vector: VertexVector, direction: DiamondDirection
) -> tuple[
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
    fa.EdgeKField[wpfloat],
]:
    return (
        vector.u(E2C2V[0]) * direction.x[dims.E2C2VDim(0)]
        + vector.v(E2C2V[0]) * direction.y[dims.E2C2VDim(0)],
        vector.u(E2C2V[1]) * direction.x[dims.E2C2VDim(1)]
        + vector.v(E2C2V[1]) * direction.y[dims.E2C2VDim(1)],
        vector.u(E2C2V[2]) * direction.x[dims.E2C2VDim(2)]
        + vector.v(E2C2V[2]) * direction.y[dims.E2C2VDim(2)],
        vector.u(E2C2V[3]) * direction.x[dims.E2C2VDim(3)]
        + vector.v(E2C2V[3]) * direction.y[dims.E2C2VDim(3)],
    )


@gtx.field_operator
def nabla2_diamond(
    psi: fa.EdgeKField[wpfloat],
    psi_1: fa.EdgeKField[wpfloat],
    psi_2: fa.EdgeKField[wpfloat],
    psi_3: fa.EdgeKField[wpfloat],
    psi_4: fa.EdgeKField[wpfloat],
    lengths: DiamondLengths,
) -> fa.EdgeKField[wpfloat]:
    return (psi_2 + psi_1 - 2.0 * psi) * lengths.inv_l_p**2 + (
        psi_4 + psi_3 - 2.0 * psi
    ) * lengths.inv_l_vv**2


@gtx.field_operator
def nabla2_n(
    vn: fa.EdgeKField[wpfloat],
    rbf_coeff: RbfVectorCoefficients,
    primal_normal: DiamondDirection,
    lengths: DiamondLengths,
) -> fa.EdgeKField[wpfloat]:
    vn1, vn2, vn3, vn4 = components_at_diamond_vertices(
        rbf_vector_at_vertices(vn, rbf_coeff), primal_normal
    )
    return nabla2_diamond(vn, vn1, vn2, vn3, vn4, lengths)


@gtx.field_operator
def horizontal_deformation(
    vn1: fa.EdgeKField[wpfloat],
    vn2: fa.EdgeKField[wpfloat],
    vn3: fa.EdgeKField[wpfloat],
    vn4: fa.EdgeKField[wpfloat],
    vt1: fa.EdgeKField[wpfloat],
    vt2: fa.EdgeKField[wpfloat],
    vt3: fa.EdgeKField[wpfloat],
    vt4: fa.EdgeKField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    lengths: DiamondLengths,
) -> fa.EdgeKField[wpfloat]:
    tension = (vn4 - vn3) * lengths.inv_l_vv - (vt2 - vt1) * tangent_orientation * lengths.inv_l_p
    shear = (vn2 - vn1) * tangent_orientation * lengths.inv_l_p + (vt4 - vt3) * lengths.inv_l_vv
    return sqrt(tension**2 + shear**2)


# ------------------------------------------------------------------ NumPy of the operators


def rbf_np(psi_n, coeff):
    return nbsum(coeff.u, psi_n, "V2E"), nbsum(coeff.v, psi_n, "V2E")


def grad_n_np(psi, inv_dual_edge_length):
    e2c = TABLES["E2C"]
    return (psi[e2c[:, 1]] - psi[e2c[:, 0]]) * inv_dual_edge_length[:, None]


def div_np(phi, geofac_div):
    return nbsum(geofac_div, phi, "C2E")


def components_np(u, v, direction):
    e2c2v = TABLES["E2C2V"]
    return tuple(u[e2c2v[:, i]] * direction.x[:, i, None] + v[e2c2v[:, i]] * direction.y[:, i, None]
                 for i in range(4))


def nabla2_diamond_np(psi, p1, p2, p3, p4, lengths):
    return ((p2 + p1 - 2.0 * psi) * lengths.inv_l_p[:, None] ** 2
            + (p4 + p3 - 2.0 * psi) * lengths.inv_l_vv[:, None] ** 2)


def nabla2_n_np(vn, rbf_coeff, primal_normal, lengths):
    return nabla2_diamond_np(vn, *components_np(*rbf_np(vn, rbf_coeff), primal_normal), lengths)


def deformation_np(vn_c, vt_c, tangent_orientation, lengths):
    (vn1, vn2, vn3, vn4), (vt1, vt2, vt3, vt4) = vn_c, vt_c
    to, ilp, ilvv = (tangent_orientation[:, None], lengths.inv_l_p[:, None],
                     lengths.inv_l_vv[:, None])
    tension = (vn4 - vn3) * ilvv - (vt2 - vt1) * to * ilp
    shear = (vn2 - vn1) * to * ilp + (vt4 - vt3) * ilvv
    return np.sqrt(tension**2 + shear**2)


def geometry():
    return types.SimpleNamespace(
        rbf_coeff=RbfVectorCoefficients(u=RNG.standard_normal((NV, 6)),
                                        v=RNG.standard_normal((NV, 6))),
        primal_normal=DiamondDirection(x=RNG.standard_normal((NE, 4)),
                                       y=RNG.standard_normal((NE, 4))),
        dual_normal=DiamondDirection(x=RNG.standard_normal((NE, 4)),
                                     y=RNG.standard_normal((NE, 4))),
        lengths=DiamondLengths(inv_l_p=RNG.uniform(0.5, 2.0, NE),
                               inv_l_vv=RNG.uniform(0.5, 2.0, NE)),
        tangent_orientation=RNG.choice([-1.0, 1.0], NE),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        geofac_div=RNG.standard_normal((NC, 3)),
        edge_area=RNG.uniform(0.5, 1.5, NE),
        cell_area=RNG.uniform(0.5, 1.5, NC),
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_rbf_vector_and_diamond_components(backend):
    g = geometry()
    vn = RNG.standard_normal((NE, NLEV))
    vec = VertexVector(u=np.full((NV, NLEV), np.nan), v=np.full((NV, NLEV), np.nan))
    rbf_vector_at_vertices(vn, g.rbf_coeff, out=vec, offset_provider=TABLES, backend=backend)
    want_u, want_v = rbf_np(vn, g.rbf_coeff)
    np.testing.assert_allclose(vec.u, want_u, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(vec.v, want_v, rtol=1e-13, atol=1e-13)

    # the vertex vector passed on as the NamedTuple it was returned as
    comps = tuple(np.full((NE, NLEV), np.nan) for _ in range(4))
    components_at_diamond_vertices(vec, g.dual_normal, out=comps, offset_provider=TABLES,
                                   backend=backend)
    for got, want in zip(comps, components_np(want_u, want_v, g.dual_normal)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_and_divergence_on_full_and_half_levels(backend):
    g = geometry()
    psi, psi_half = RNG.standard_normal((NC, NLEV)), RNG.standard_normal((NC, NH))
    out = np.full((NE, NLEV), np.nan)
    grad_n(psi, g.inv_dual_edge_length, out=out, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(out, grad_n_np(psi, g.inv_dual_edge_length), rtol=1e-14)
    out_half = np.full((NE, NH), np.nan)
    grad_n_khalf(psi_half, g.inv_dual_edge_length, out=out_half, offset_provider=TABLES,
                 backend=backend)
    np.testing.assert_allclose(out_half, grad_n_np(psi_half, g.inv_dual_edge_length),
                               rtol=1e-14)

    phi = RNG.standard_normal((NE, NLEV))
    out_c = np.full((NC, NLEV), np.nan)
    div(phi, g.geofac_div, out=out_c, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(out_c, div_np(phi, g.geofac_div), rtol=1e-13, atol=1e-14)
    out_ch = np.full((NC, NH), np.nan)
    div_khalf(out_half, g.geofac_div, out=out_ch, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(out_ch, div_np(out_half, g.geofac_div), rtol=1e-13, atol=1e-14)

    # the Laplacian on half levels, written on the upper levels only
    lap = np.full((NC, NH), np.nan)
    nabla2_khalf(psi_half, g.inv_dual_edge_length, g.geofac_div, out=lap,
                 domain={dims.CellDim: (1, NC), dims.KHalfDim: (0, NLEV)},
                 offset_provider=TABLES, backend=backend)
    want = div_np(grad_n_np(psi_half, g.inv_dual_edge_length), g.geofac_div)
    np.testing.assert_allclose(lap[1:, :NLEV], want[1:, :NLEV], rtol=1e-12, atol=1e-13)
    assert np.isnan(lap[0]).all() and np.isnan(lap[:, NLEV]).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla2_of_vn_and_horizontal_deformation(backend):
    g = geometry()
    vn = RNG.standard_normal((NE, NLEV))
    out = np.full((NE, NLEV), np.nan)
    nabla2_n(vn, g.rbf_coeff, g.primal_normal, g.lengths, out=out, offset_provider=TABLES,
             backend=backend)
    np.testing.assert_allclose(out, nabla2_n_np(vn, g.rbf_coeff, g.primal_normal, g.lengths),
                               rtol=1e-12, atol=1e-12)

    vn_c = [RNG.standard_normal((NE, NLEV)) for _ in range(4)]
    vt_c = [RNG.standard_normal((NE, NLEV)) for _ in range(4)]
    deform = np.full((NE, NLEV), np.nan)
    horizontal_deformation(*vn_c, *vt_c, g.tangent_orientation, g.lengths, out=deform,
                           offset_provider={}, backend=backend)
    np.testing.assert_allclose(deform, deformation_np(vn_c, vt_c, g.tangent_orientation,
                                                      g.lengths), rtol=1e-13)
    lap = np.full((NE, NLEV), np.nan)
    nabla2_diamond(vn, *vn_c, g.lengths, out=lap, offset_provider={}, backend=backend)
    np.testing.assert_allclose(lap, nabla2_diamond_np(vn, *vn_c, g.lengths), rtol=1e-13,
                               atol=1e-13)


# ================================================================== global diffusion step
#
# icon4py's atmosphere/diffusion/stencils/diffusion_global_step.py: one
# horizontal diffusion step (Zängl et al. 2015, §2.5) for grids without lateral
# boundaries, from the operators above.


class DiffusionCoefficients(NamedTuple):
    f_s: fa.KField[wpfloat]
    kh_offset: wpfloat
    kh_limit: fa.KField[wpfloat]
    k4_dt: fa.KField[wpfloat]
    kw_dt: wpfloat
    k2w_damping_layer: fa.KHalfField[wpfloat]


class SteepPointInterpolation(NamedTuple):
    diffusion_coefficient: fa.CellKField[wpfloat]
    vertical_offset: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], gtx.int32]
    weight: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim, dims.KDim], wpfloat]


class CellNeighbourWeights(NamedTuple):
    center: fa.CellField[wpfloat]
    neighbours: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CDim], wpfloat]


@gtx.field_operator
def cold_pool_diffusion_coefficient(
    theta_v: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[wpfloat],
    thresh_tdiff: wpfloat,
    smallest_coefficient: wpfloat,
) -> fa.CellKField[wpfloat]:
    tdiff = theta_v - neighbor_sum(theta_v(C2E2C), axis=dims.C2E2CDim) / 3.0
    trefdiff = theta_ref_mc - neighbor_sum(theta_ref_mc(C2E2C), axis=dims.C2E2CDim) / 3.0
    return where(
        ((tdiff - trefdiff < thresh_tdiff) & (trefdiff < 0.0))
        | (tdiff - trefdiff < 1.5 * thresh_tdiff),
        5.0e-4 * (thresh_tdiff - tdiff + trefdiff),
        smallest_coefficient,
    )


@gtx.field_operator
def nabla2_at_constant_height(
    psi: fa.CellKField[wpfloat],
    steep: SteepPointInterpolation,
    n2s: CellNeighbourWeights,
) -> fa.CellKField[wpfloat]:
    psi_1 = steep.weight[dims.C2E2CDim(0)] * psi(C2E2C[0])(
        as_offset(Koff, steep.vertical_offset[dims.C2E2CDim(0)])
    ) + (1.0 - steep.weight[dims.C2E2CDim(0)]) * psi(C2E2C[0])(
        as_offset(Koff, steep.vertical_offset[dims.C2E2CDim(0)] + 1)
    )
    psi_2 = steep.weight[dims.C2E2CDim(1)] * psi(C2E2C[1])(
        as_offset(Koff, steep.vertical_offset[dims.C2E2CDim(1)])
    ) + (1.0 - steep.weight[dims.C2E2CDim(1)]) * psi(C2E2C[1])(
        as_offset(Koff, steep.vertical_offset[dims.C2E2CDim(1)] + 1)
    )
    psi_3 = steep.weight[dims.C2E2CDim(2)] * psi(C2E2C[2])(
        as_offset(Koff, steep.vertical_offset[dims.C2E2CDim(2)])
    ) + (1.0 - steep.weight[dims.C2E2CDim(2)]) * psi(C2E2C[2])(
        as_offset(Koff, steep.vertical_offset[dims.C2E2CDim(2)] + 1)
    )
    return (
        n2s.center * psi
        + n2s.neighbours[dims.C2E2CDim(0)] * psi_1
        + n2s.neighbours[dims.C2E2CDim(1)] * psi_2
        + n2s.neighbours[dims.C2E2CDim(2)] * psi_3
    )


@gtx.field_operator
def exner_at_constant_density(
    exner: fa.CellKField[wpfloat],
    theta_v_new: fa.CellKField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    rd_o_cvd: wpfloat,
) -> fa.CellKField[wpfloat]:
    return exner * (1.0 + rd_o_cvd * (theta_v_new / theta_v - 1.0))


@gtx.field_operator
def smagorinsky_coefficient(
    vn: fa.EdgeKField[wpfloat],
    coefficients: DiffusionCoefficients,
    rbf_coeff: RbfVectorCoefficients,
    primal_normal: DiamondDirection,
    dual_normal: DiamondDirection,
    lengths: DiamondLengths,
    tangent_orientation: fa.EdgeField[wpfloat],
    dtime: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    vertex_wind = rbf_vector_at_vertices(vn, rbf_coeff)
    vn1, vn2, vn3, vn4 = components_at_diamond_vertices(vertex_wind, primal_normal)
    vt1, vt2, vt3, vt4 = components_at_diamond_vertices(vertex_wind, dual_normal)
    deformation = horizontal_deformation(
        vn1, vn2, vn3, vn4, vt1, vt2, vt3, vt4, tangent_orientation, lengths
    )
    return minimum(
        maximum(0.0, coefficients.f_s * dtime * deformation - coefficients.kh_offset),
        coefficients.kh_limit,
    )


@gtx.field_operator
def diffused_vn(
    vn: fa.EdgeKField[wpfloat],
    kh: fa.EdgeKField[wpfloat],
    coefficients: DiffusionCoefficients,
    rbf_coeff: RbfVectorCoefficients,
    primal_normal: DiamondDirection,
    lengths: DiamondLengths,
    edge_area: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    nabla2_vn = nabla2_n(vn, rbf_coeff, primal_normal, lengths)
    return (
        vn
        + 4.0 * edge_area * kh * nabla2_vn
        - 16.0
        * coefficients.k4_dt
        * edge_area**2
        * nabla2_n(nabla2_vn, rbf_coeff, primal_normal, lengths)
    )


@gtx.field_operator
def diffused_w(
    w: fa.CellKHalfField[wpfloat],
    coefficients: DiffusionCoefficients,
    cell_area: fa.CellField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    nrdmax: gtx.int32,
    num_levels: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    nabla2_w = nabla2_khalf(w, inv_dual_edge_length, geofac_div)
    return concat_where(
        dims.KHalfDim < num_levels,
        w
        - coefficients.kw_dt
        * cell_area**2
        * nabla2_khalf(nabla2_w, inv_dual_edge_length, geofac_div)
        + concat_where(
            (dims.KHalfDim >= 1) & (dims.KHalfDim < nrdmax),
            coefficients.k2w_damping_layer * cell_area * nabla2_w,
            0.0,
        ),
        w,
    )


@gtx.field_operator
def diffused_theta_v_and_exner(
    theta_v: fa.CellKField[wpfloat],
    exner: fa.CellKField[wpfloat],
    kh: fa.EdgeKField[wpfloat],
    theta_ref_mc: fa.CellKField[wpfloat],
    cell_area: fa.CellField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    steep: SteepPointInterpolation,
    n2s: CellNeighbourWeights,
    thresh_tdiff: wpfloat,
    smallest_coefficient: wpfloat,
    rd_o_cvd: wpfloat,
    num_levels: gtx.int32,
    apply_zdiffusion_t: bool,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    cold_pool = cold_pool_diffusion_coefficient(
        theta_v, theta_ref_mc, thresh_tdiff, smallest_coefficient
    )
    kh_theta = concat_where(
        num_levels - 2 <= dims.KDim,
        maximum(kh, max_over(cold_pool(E2C), axis=dims.E2CDim)),
        kh,
    )
    tendency = div(kh_theta * grad_n(theta_v, inv_dual_edge_length), geofac_div)
    if apply_zdiffusion_t:
        tendency = where(
            steep.diffusion_coefficient != 0.0,
            tendency + steep.diffusion_coefficient * nabla2_at_constant_height(theta_v, steep, n2s),
            tendency,
        )
    theta_v_new = theta_v + cell_area * tendency
    return theta_v_new, exner_at_constant_density(exner, theta_v_new, theta_v, rd_o_cvd)


@gtx.field_operator
def _diffusion_global_step(
    vn: fa.EdgeKField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    exner: fa.CellKField[wpfloat],
    coefficients: DiffusionCoefficients,
    rbf_coeff: RbfVectorCoefficients,
    primal_normal: DiamondDirection,
    dual_normal: DiamondDirection,
    lengths: DiamondLengths,
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    edge_area: fa.EdgeField[wpfloat],
    cell_area: fa.CellField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    n2s: CellNeighbourWeights,
    theta_ref_mc: fa.CellKField[wpfloat],
    steep: SteepPointInterpolation,
    dtime: wpfloat,
    thresh_tdiff: wpfloat,
    smallest_coefficient: wpfloat,
    rd_o_cvd: wpfloat,
    nrdmax: gtx.int32,
    num_levels: gtx.int32,
    apply_to_temperature: bool,
    apply_zdiffusion_t: bool,
) -> tuple[
    fa.EdgeKField[wpfloat],
    fa.CellKHalfField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
]:
    kh = smagorinsky_coefficient(
        vn, coefficients, rbf_coeff, primal_normal, dual_normal, lengths, tangent_orientation, dtime
    )
    vn_new = diffused_vn(vn, kh, coefficients, rbf_coeff, primal_normal, lengths, edge_area)
    w_new = diffused_w(
        w, coefficients, cell_area, inv_dual_edge_length, geofac_div, nrdmax, num_levels
    )
    theta_v_new, exner_new = (
        diffused_theta_v_and_exner(
            theta_v,
            exner,
            kh,
            theta_ref_mc,
            cell_area,
            inv_dual_edge_length,
            geofac_div,
            steep,
            n2s,
            thresh_tdiff,
            smallest_coefficient,
            rd_o_cvd,
            num_levels,
            apply_zdiffusion_t,
        )
        if apply_to_temperature
        else (theta_v, exner)
    )
    return vn_new, w_new, theta_v_new, exner_new


# ------------------------------------------------------------------ NumPy of the step

THRESH_TDIFF, SMALLEST, RD_O_CVD, DTIME = -5.0, 2.2e-16, 0.4, 2.0


def cold_pool_np(theta_v, theta_ref_mc):
    tdiff = theta_v - nb(theta_v, "C2E2C").sum(axis=1) / 3.0
    trefdiff = theta_ref_mc - nb(theta_ref_mc, "C2E2C").sum(axis=1) / 3.0
    d = tdiff - trefdiff
    return np.where(((d < THRESH_TDIFF) & (trefdiff < 0.0)) | (d < 1.5 * THRESH_TDIFF),
                    5.0e-4 * (THRESH_TDIFF - tdiff + trefdiff), SMALLEST)


def nabla2_at_constant_height_np(psi, steep, n2s):
    c2e2c = TABLES["C2E2C"]
    k = np.arange(NLEV)[None, :]
    out = n2s.center[:, None] * psi
    for i in range(3):
        rows = c2e2c[:, i][:, None]
        off = steep.vertical_offset[:, i, :]
        wgt = steep.weight[:, i, :]
        psi_i = wgt * psi[rows, k + off] + (1.0 - wgt) * psi[rows, k + off + 1]
        out = out + n2s.neighbours[:, i, None] * psi_i
    return out


def theta_and_exner_np(theta_v, exner, kh, theta_ref_mc, g, steep, n2s, num_levels,
                       apply_zdiffusion_t):
    cold = cold_pool_np(theta_v, theta_ref_mc)
    lowest = np.arange(NLEV)[None, :] >= num_levels - 2
    kh_theta = np.where(lowest, np.maximum(kh, nb(cold, "E2C").max(axis=1)), kh)
    tendency = div_np(kh_theta * grad_n_np(theta_v, g.inv_dual_edge_length), g.geofac_div)
    if apply_zdiffusion_t:
        dc = steep.diffusion_coefficient
        tendency = np.where(dc != 0.0,
                            tendency + dc * nabla2_at_constant_height_np(theta_v, steep, n2s),
                            tendency)
    theta_new = theta_v + g.cell_area[:, None] * tendency
    return theta_new, exner * (1.0 + RD_O_CVD * (theta_new / theta_v - 1.0))


def step_np(s, g, nrdmax, num_levels, apply_to_temperature, apply_zdiffusion_t):
    c = s.coefficients
    u, v = rbf_np(s.vn, g.rbf_coeff)
    deform = deformation_np(components_np(u, v, g.primal_normal),
                            components_np(u, v, g.dual_normal), g.tangent_orientation,
                            g.lengths)
    kh = np.minimum(np.maximum(0.0, c.f_s[None, :] * DTIME * deform - c.kh_offset),
                    c.kh_limit[None, :])
    n2 = nabla2_n_np(s.vn, g.rbf_coeff, g.primal_normal, g.lengths)
    ea = g.edge_area[:, None]
    vn_new = (s.vn + 4.0 * ea * kh * n2
              - 16.0 * c.k4_dt[None, :] * ea**2 * nabla2_n_np(n2, g.rbf_coeff, g.primal_normal,
                                                              g.lengths))
    lap = div_np(grad_n_np(s.w, g.inv_dual_edge_length), g.geofac_div)
    lap2 = div_np(grad_n_np(lap, g.inv_dual_edge_length), g.geofac_div)
    kh_ = np.arange(NH)[None, :]
    ca = g.cell_area[:, None]
    damping = np.where((kh_ >= 1) & (kh_ < nrdmax), c.k2w_damping_layer[None, :] * ca * lap, 0.0)
    w_new = np.where(kh_ < num_levels, s.w - c.kw_dt * ca**2 * lap2 + damping, s.w)
    if apply_to_temperature:
        theta_new, exner_new = theta_and_exner_np(s.theta_v, s.exner, kh, s.theta_ref_mc, g,
                                                  s.steep, s.n2s, num_levels, apply_zdiffusion_t)
    else:
        theta_new, exner_new = s.theta_v, s.exner
    return kh, vn_new, w_new, theta_new, exner_new


def steep_points():
    """Offsets that keep ``k + offset`` and ``k + offset + 1`` inside the column."""
    k = np.arange(NLEV)[None, None, :]
    lo, hi = -k, NLEV - 2 - k
    offset = (lo + np.floor(RNG.random((NC, 3, NLEV)) * (hi - lo + 1))).astype(np.int32)
    coefficient = np.where(RNG.random((NC, NLEV)) < 0.5, 0.0, RNG.uniform(0.1, 1.0, (NC, NLEV)))
    return SteepPointInterpolation(diffusion_coefficient=coefficient, vertical_offset=offset,
                                   weight=RNG.uniform(0.0, 1.0, (NC, 3, NLEV)))


def diffusion_state():
    theta_ref = RNG.uniform(280.0, 300.0, (NC, NLEV))
    return types.SimpleNamespace(
        vn=RNG.standard_normal((NE, NLEV)),
        w=RNG.standard_normal((NC, NH)),
        # cold cells beside warm ones: some pass the cold-pool thresholds, some do not
        theta_v=theta_ref + RNG.uniform(-30.0, 10.0, (NC, NLEV)),
        exner=RNG.uniform(0.8, 1.0, (NC, NLEV)),
        theta_ref_mc=theta_ref,
        coefficients=DiffusionCoefficients(
            f_s=RNG.uniform(0.0, 0.2, NLEV), kh_offset=0.01,
            kh_limit=RNG.uniform(0.05, 0.3, NLEV), k4_dt=RNG.uniform(0.0, 0.01, NLEV),
            kw_dt=0.002, k2w_damping_layer=RNG.uniform(0.0, 0.05, NH)),
        steep=steep_points(),
        n2s=CellNeighbourWeights(center=RNG.standard_normal(NC),
                                 neighbours=RNG.standard_normal((NC, 3))),
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_cold_pool_and_laplacian_at_constant_height(backend):
    s = diffusion_state()
    out = np.full((NC, NLEV), np.nan)
    cold_pool_diffusion_coefficient(s.theta_v, s.theta_ref_mc, THRESH_TDIFF, SMALLEST, out=out,
                                    offset_provider=TABLES, backend=backend)
    want = cold_pool_np(s.theta_v, s.theta_ref_mc)
    assert (want != SMALLEST).any() and (want == SMALLEST).any()
    np.testing.assert_allclose(out, want, rtol=1e-12)

    lap = np.full((NC, NLEV), np.nan)
    nabla2_at_constant_height(s.theta_v, s.steep, s.n2s, out=lap, offset_provider=TABLES,
                              backend=backend)
    np.testing.assert_allclose(lap, nabla2_at_constant_height_np(s.theta_v, s.steep, s.n2s),
                               rtol=1e-12)

    exner_new = np.full((NC, NLEV), np.nan)
    theta_new = s.theta_v + RNG.uniform(-1.0, 1.0, (NC, NLEV))
    exner_at_constant_density(s.exner, theta_new, s.theta_v, RD_O_CVD, out=exner_new,
                              offset_provider={}, backend=backend)
    np.testing.assert_allclose(exner_new, s.exner * (1.0 + RD_O_CVD * (theta_new / s.theta_v
                                                                        - 1.0)), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_smagorinsky_coefficient_and_diffused_vn(backend):
    g, s = geometry(), diffusion_state()
    kh = np.full((NE, NLEV), np.nan)
    smagorinsky_coefficient(s.vn, s.coefficients, g.rbf_coeff, g.primal_normal, g.dual_normal,
                            g.lengths, g.tangent_orientation, DTIME, out=kh,
                            offset_provider=TABLES, backend=backend)
    want_kh, want_vn = step_np(s, g, 3, NLEV, False, False)[:2]
    assert (want_kh == 0.0).any() and (want_kh == s.coefficients.kh_limit).any()
    np.testing.assert_allclose(kh, want_kh, rtol=1e-12, atol=1e-15)

    vn_new = np.full((NE, NLEV), np.nan)
    diffused_vn(s.vn, kh, s.coefficients, g.rbf_coeff, g.primal_normal, g.lengths, g.edge_area,
                out=vn_new, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(vn_new, want_vn, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize(("nrdmax", "num_levels"), [(3, NLEV), (1, NLEV - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffused_w_on_half_levels(backend, nrdmax, num_levels):
    g, s = geometry(), diffusion_state()
    w_new = np.full((NC, NH), np.nan)
    diffused_w(s.w, s.coefficients, g.cell_area, g.inv_dual_edge_length, g.geofac_div, nrdmax,
               num_levels, out=w_new, offset_provider=TABLES, backend=backend)
    want = step_np(s, g, nrdmax, num_levels, False, False)[2]
    np.testing.assert_allclose(w_new, want, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("apply_zdiffusion_t", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffused_theta_v_and_exner(backend, apply_zdiffusion_t):
    g, s = geometry(), diffusion_state()
    kh = RNG.uniform(0.0, 1e-3, (NE, NLEV))
    outs = (np.full((NC, NLEV), np.nan), np.full((NC, NLEV), np.nan))
    diffused_theta_v_and_exner(
        theta_v=s.theta_v, exner=s.exner, kh=kh, theta_ref_mc=s.theta_ref_mc,
        cell_area=g.cell_area, inv_dual_edge_length=g.inv_dual_edge_length,
        geofac_div=g.geofac_div, steep=s.steep, n2s=s.n2s, thresh_tdiff=THRESH_TDIFF,
        smallest_coefficient=SMALLEST, rd_o_cvd=RD_O_CVD, num_levels=NLEV,
        apply_zdiffusion_t=apply_zdiffusion_t, out=outs, offset_provider=TABLES,
        backend=backend)
    want = theta_and_exner_np(s.theta_v, s.exner, kh, s.theta_ref_mc, g, s.steep, s.n2s, NLEV,
                              apply_zdiffusion_t)
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w, rtol=1e-12)


@pytest.mark.parametrize(("apply_to_temperature", "apply_zdiffusion_t"),
                         [(True, True), (False, False)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_global_step_as_the_granule_calls_it(backend, apply_to_temperature,
                                                       apply_zdiffusion_t):
    g, s = geometry(), diffusion_state()
    nrdmax, num_levels = 3, NLEV
    step = _diffusion_global_step.with_grid_type(gtx.GridType.UNSTRUCTURED).with_backend(
        None if backend == "interpreter" else backend)
    vn, w, theta_v, exner = step(
        vn=s.vn,
        w=s.w,
        theta_v=s.theta_v,
        exner=s.exner,
        coefficients=s.coefficients,
        rbf_coeff=g.rbf_coeff,
        primal_normal=g.primal_normal,
        dual_normal=g.dual_normal,
        lengths=g.lengths,
        tangent_orientation=g.tangent_orientation,
        inv_dual_edge_length=g.inv_dual_edge_length,
        edge_area=g.edge_area,
        cell_area=g.cell_area,
        geofac_div=g.geofac_div,
        n2s=s.n2s,
        theta_ref_mc=s.theta_ref_mc,
        steep=s.steep,
        dtime=DTIME,
        thresh_tdiff=THRESH_TDIFF,
        smallest_coefficient=SMALLEST,
        rd_o_cvd=RD_O_CVD,
        nrdmax=gtx.int32(nrdmax),
        num_levels=gtx.int32(num_levels),
        apply_to_temperature=apply_to_temperature,
        apply_zdiffusion_t=apply_zdiffusion_t,
        offset_provider=TABLES,
    )
    want = step_np(s, g, nrdmax, num_levels, apply_to_temperature, apply_zdiffusion_t)[1:]
    for name, got, w_ in zip(("vn", "w", "theta_v", "exner"), (vn, w, theta_v, exner), want):
        assert np.shape(got) == w_.shape, name
        np.testing.assert_allclose(np.asarray(got), w_, rtol=1e-11, atol=1e-12, err_msg=name)


# ================================================================== tmx momentum diffusion
#
# icon4py's tmx (turbulence mixing) momentum diffusion: stencils/vertical_diffusion.py
# (tridiagonal rows returned as NamedTuples, solved by two scans) and the
# horizontal and vertical wind diffusion built on it.  Half-level fields are
# annotated as full-level ones with ``nlev + 1`` rows (``km_iv``, ``km_ie``, ``w``)
# and read at ``KDim + 1`` / ``KDim - 1``; boundary rows are chosen by
# ``concat_where`` on runtime ``minlvl`` / ``maxlvl`` and on ``KDim == 0``.


@gtx.field_operator
def _broadcast_value_on_cell_k(
    value: wpfloat,
    like: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return like * wpfloat("0.0") + value


@gtx.field_operator
def _broadcast_value_on_edge_k(
    value: wpfloat,
    like: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return like * wpfloat("0.0") + value


@gtx.field_operator
def _compute_reciprocal_on_edge_k(
    input_field: fa.EdgeKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return wpfloat("1.0") / input_field


@gtx.field_operator
def _cell_2_edge_interpolation(
    in_field: fa.CellKField[wpfloat],
    coeff: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
) -> fa.EdgeKField[wpfloat]:
    return neighbor_sum(in_field(E2C) * coeff, axis=dims.E2CDim)


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(wpfloat("0.0"), wpfloat("0.0")))
def _tridiagonal_forward_sweep(
    state_kminus1: tuple[wpfloat, wpfloat],
    a: wpfloat,
    b: wpfloat,
    c: wpfloat,
    d: wpfloat,
) -> tuple[wpfloat, wpfloat]:
    c_prime_kminus1 = state_kminus1[0]
    d_prime_kminus1 = state_kminus1[1]
    m = wpfloat("1.0") / (b - c_prime_kminus1 * a)
    c_prime = c * m
    d_prime = (d - d_prime_kminus1 * a) * m
    return c_prime, d_prime


@gtx.scan_operator(axis=dims.KDim, forward=False, init=wpfloat("0.0"))
def _tridiagonal_back_substitution(
    x_kplus1: wpfloat,
    c_prime: wpfloat,
    d_prime: wpfloat,
) -> wpfloat:
    return d_prime - c_prime * x_kplus1


class TridiagonalMatrixCells(NamedTuple):
    a: fa.CellKField[wpfloat]
    b: fa.CellKField[wpfloat]
    c: fa.CellKField[wpfloat]


class TridiagonalMatrixEdges(NamedTuple):
    a: fa.EdgeKField[wpfloat]
    b: fa.EdgeKField[wpfloat]
    c: fa.EdgeKField[wpfloat]


@gtx.field_operator
def _prepare_tridiagonal_matrix_cells_half(
    inv_mair: fa.CellKField[wpfloat],
    inv_dz: fa.CellKField[wpfloat],
    zk: fa.CellKField[wpfloat],
    zprefac: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> TridiagonalMatrixCells:
    zero = _broadcast_value_on_cell_k(wpfloat("0.0"), inv_mair)
    a_interior = wpfloat("0.0") - zprefac * zk(KDim - 1) * inv_dz(KDim - 1) * inv_mair
    c_interior = wpfloat("0.0") - zprefac * zk * inv_dz * inv_mair
    a = concat_where(dims.KDim > minlvl, a_interior, zero)
    c = concat_where(dims.KDim < maxlvl, c_interior, zero)
    b = wpfloat("0.0") - a - c
    return TridiagonalMatrixCells(a=a, b=b, c=c)


@gtx.field_operator
def _prepare_tridiagonal_matrix_edges(
    inv_mair: fa.EdgeKField[wpfloat],
    inv_dz: fa.EdgeKField[wpfloat],
    zk: fa.EdgeKField[wpfloat],
    zprefac: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> TridiagonalMatrixEdges:
    zero = _broadcast_value_on_edge_k(wpfloat("0.0"), inv_mair)
    a_interior = wpfloat("0.0") - zprefac * zk * inv_dz * inv_mair
    c_interior = wpfloat("0.0") - zprefac * zk(KDim + 1) * inv_dz(KDim + 1) * inv_mair
    a = concat_where(dims.KDim > minlvl, a_interior, zero)
    c = concat_where(dims.KDim < maxlvl, c_interior, zero)
    b = wpfloat("0.0") - a - c
    return TridiagonalMatrixEdges(a=a, b=b, c=c)


@gtx.field_operator
def _solve_vertical_diffusion_cells(
    a: fa.CellKField[wpfloat],
    b: fa.CellKField[wpfloat],
    c: fa.CellKField[wpfloat],
    rhs: fa.CellKField[wpfloat],
    var: fa.CellKField[wpfloat],
    tend: fa.CellKField[wpfloat],
    dtime: wpfloat,
) -> fa.CellKField[wpfloat]:
    rdtime = wpfloat("1.0") / dtime
    c_prime, d_prime = _tridiagonal_forward_sweep(a, rdtime + b, c, var * rdtime + rhs)
    new_var = _tridiagonal_back_substitution(c_prime, d_prime)
    return tend + (new_var - var) * rdtime


@gtx.field_operator
def _solve_vertical_diffusion_edges(
    a: fa.EdgeKField[wpfloat],
    b: fa.EdgeKField[wpfloat],
    c: fa.EdgeKField[wpfloat],
    rhs: fa.EdgeKField[wpfloat],
    var: fa.EdgeKField[wpfloat],
    tend: fa.EdgeKField[wpfloat],
    dtime: wpfloat,
) -> fa.EdgeKField[wpfloat]:
    rdtime = wpfloat("1.0") / dtime
    c_prime, d_prime = _tridiagonal_forward_sweep(a, rdtime + b, c, var * rdtime + rhs)
    new_var = _tridiagonal_back_substitution(c_prime, d_prime)
    return tend + (new_var - var) * rdtime


@gtx.field_operator
def _compute_vn_horizontal_stress_tendency(
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    km_iv: fa.VertexKField[wpfloat],
    inv_rhoe: fa.EdgeKField[wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    z_2by3 = wpfloat("2.0") / wpfloat("3.0")

    vn_vert = u_vert(E2C2V) * primal_normal_vert_x + v_vert(E2C2V) * primal_normal_vert_y
    vt_vert = u_vert(E2C2V) * dual_normal_vert_x + v_vert(E2C2V) * dual_normal_vert_y

    dvt = vt_vert[E2C2VDim(3)] - vt_vert[E2C2VDim(2)]

    flux_up_c = km_c(E2C[1]) * (
        wpfloat("4.0") * (vn_vert[E2C2VDim(3)] - vn) * inv_vert_vert_length - z_2by3 * div_c(E2C[1])
    )
    flux_dn_c = km_c(E2C[0]) * (
        wpfloat("4.0") * (vn - vn_vert[E2C2VDim(2)]) * inv_vert_vert_length - z_2by3 * div_c(E2C[0])
    )

    flux_up_v = (km_iv(E2C2V[1]) + km_iv(E2C2V[1])(KDim + 1)) * (
        tangent_orientation * (vn_vert[E2C2VDim(1)] - vn) * inv_primal_edge_length
        + wpfloat("0.5") * dvt * inv_vert_vert_length
    )
    flux_dn_v = (km_iv(E2C2V[0]) + km_iv(E2C2V[0])(KDim + 1)) * (
        tangent_orientation * (vn - vn_vert[E2C2VDim(0)]) * inv_primal_edge_length
        + wpfloat("0.5") * dvt * inv_vert_vert_length
    )

    return (
        (flux_up_c - flux_dn_c) * inv_dual_edge_length
        + wpfloat("2.0") * tangent_orientation * (flux_up_v - flux_dn_v) * inv_primal_edge_length
    ) * inv_rhoe


@gtx.field_operator
def _compute_inverse_density_and_vn_stress_tendency(
    rho: fa.CellKField[wpfloat],
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    km_iv: fa.VertexKField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    inv_rhoe = _compute_reciprocal_on_edge_k(input_field=_cell_2_edge_interpolation(rho, c_lin_e))
    tot_tend = _compute_vn_horizontal_stress_tendency(
        u_vert=u_vert,
        v_vert=v_vert,
        vn=vn,
        km_c=km_c,
        div_c=div_c,
        km_iv=km_iv,
        inv_rhoe=inv_rhoe,
        primal_normal_vert_x=primal_normal_vert_x,
        primal_normal_vert_y=primal_normal_vert_y,
        dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length,
        inv_dual_edge_length=inv_dual_edge_length,
    )
    return inv_rhoe, tot_tend


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_inverse_density_and_vn_stress_tendency(
    rho: fa.CellKField[wpfloat],
    u_vert: fa.VertexKField[wpfloat],
    v_vert: fa.VertexKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    km_iv: fa.VertexKField[wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    inv_rhoe: fa.EdgeKField[wpfloat],
    tot_tend: fa.EdgeKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_inverse_density_and_vn_stress_tendency(
        rho=rho,
        u_vert=u_vert,
        v_vert=v_vert,
        vn=vn,
        km_c=km_c,
        div_c=div_c,
        km_iv=km_iv,
        c_lin_e=c_lin_e,
        primal_normal_vert_x=primal_normal_vert_x,
        primal_normal_vert_y=primal_normal_vert_y,
        dual_normal_vert_x=dual_normal_vert_x,
        dual_normal_vert_y=dual_normal_vert_y,
        tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length,
        inv_dual_edge_length=inv_dual_edge_length,
        out=(inv_rhoe, tot_tend),
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_vn_vertical_diffusion_rhs(
    w: fa.CellKField[wpfloat],
    km_ie: fa.EdgeKField[wpfloat],
    inv_rhoe: fa.EdgeKField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
    u_stress: fa.CellField[wpfloat],
    v_stress: fa.CellField[wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    nlev: gtx.int32,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    inv_maire = inv_ddqz_z_full_e * inv_rhoe

    grad_k = km_ie * inv_dual_edge_length * (w(E2C[1]) - w(E2C[0]))
    grad_kp1 = km_ie(KDim + 1) * inv_dual_edge_length * (w(E2C[1])(KDim + 1) - w(E2C[0])(KDim + 1))

    flux_dn_e = neighbor_sum(
        (u_stress(E2C) * primal_normal_cell_x + v_stress(E2C) * primal_normal_cell_y) * c_lin_e,
        axis=E2CDim,
    )

    rhs_interior = (grad_k - grad_kp1) * inv_maire
    rhs_top = (wpfloat("0.0") - grad_kp1) * inv_maire
    rhs_bottom = grad_k * inv_maire - flux_dn_e * inv_maire

    rhs = concat_where(dims.KDim == 0, rhs_top, rhs_interior)
    rhs = concat_where(dims.KDim < nlev - 1, rhs, rhs_bottom)
    return rhs, inv_maire


@gtx.field_operator
def _solve_vn_vertical_diffusion(
    w: fa.CellKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    km_ie: fa.EdgeKField[wpfloat],
    inv_rhoe: fa.EdgeKField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
    inv_ddqz_z_half_e: fa.EdgeKField[wpfloat],
    u_stress: fa.CellField[wpfloat],
    v_stress: fa.CellField[wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    tot_tend: fa.EdgeKField[wpfloat],
    dtime: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
    nlev: gtx.int32,
) -> fa.EdgeKField[wpfloat]:
    rhs, inv_maire = _compute_vn_vertical_diffusion_rhs(
        w=w,
        km_ie=km_ie,
        inv_rhoe=inv_rhoe,
        inv_ddqz_z_full_e=inv_ddqz_z_full_e,
        u_stress=u_stress,
        v_stress=v_stress,
        primal_normal_cell_x=primal_normal_cell_x,
        primal_normal_cell_y=primal_normal_cell_y,
        c_lin_e=c_lin_e,
        inv_dual_edge_length=inv_dual_edge_length,
        nlev=nlev,
    )
    a, b, c = _prepare_tridiagonal_matrix_edges(
        inv_mair=inv_maire,
        inv_dz=inv_ddqz_z_half_e,
        zk=km_ie,
        zprefac=wpfloat("1.0"),
        minlvl=minlvl,
        maxlvl=maxlvl,
    )
    return _solve_vertical_diffusion_edges(
        a=a, b=b, c=c, rhs=rhs, var=vn, tend=tot_tend, dtime=dtime
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def solve_vn_vertical_diffusion(
    w: fa.CellKField[wpfloat],
    vn: fa.EdgeKField[wpfloat],
    km_ie: fa.EdgeKField[wpfloat],
    inv_rhoe: fa.EdgeKField[wpfloat],
    inv_ddqz_z_full_e: fa.EdgeKField[wpfloat],
    inv_ddqz_z_half_e: fa.EdgeKField[wpfloat],
    u_stress: fa.CellField[wpfloat],
    v_stress: fa.CellField[wpfloat],
    primal_normal_cell_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    primal_normal_cell_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    c_lin_e: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], wpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    tot_tend: fa.EdgeKField[wpfloat],
    dtime: wpfloat,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _solve_vn_vertical_diffusion(
        w=w,
        vn=vn,
        km_ie=km_ie,
        inv_rhoe=inv_rhoe,
        inv_ddqz_z_full_e=inv_ddqz_z_full_e,
        inv_ddqz_z_half_e=inv_ddqz_z_half_e,
        u_stress=u_stress,
        v_stress=v_stress,
        primal_normal_cell_x=primal_normal_cell_x,
        primal_normal_cell_y=primal_normal_cell_y,
        c_lin_e=c_lin_e,
        inv_dual_edge_length=inv_dual_edge_length,
        tot_tend=tot_tend,
        dtime=dtime,
        minlvl=vertical_start,
        maxlvl=vertical_end - 1,
        nlev=nlev,
        out=tot_tend,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _compute_w_vertical_diffusion_rhs(
    rho_ic: fa.CellKField[wpfloat],
    inv_ddqz_z_half: fa.CellKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_1by3 = wpfloat("1.0") / wpfloat("3.0")
    inv_rho_ic = wpfloat("1.0") / rho_ic
    inv_mair_ic = inv_rho_ic * inv_ddqz_z_half
    rhs = (
        wpfloat("2.0")
        * inv_mair_ic
        * (km_c * z_1by3 * div_c - km_c(KDim - 1) * z_1by3 * div_c(KDim - 1))
    )
    return rhs, inv_rho_ic, inv_mair_ic


@gtx.field_operator
def _modify_w_diffusion_matrix_boundary(
    b: fa.CellKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    inv_dz: fa.CellKField[wpfloat],
    inv_mair_ic: fa.CellKField[wpfloat],
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> fa.CellKField[wpfloat]:
    zero = _broadcast_value_on_cell_k(wpfloat("0.0"), inv_mair_ic)
    top_term = wpfloat("2.0") * km_c(KDim - 1) * inv_dz(KDim - 1) * inv_mair_ic
    bottom_term = wpfloat("2.0") * km_c * inv_dz * inv_mair_ic
    return (
        b
        + concat_where(dims.KDim > minlvl, zero, top_term)
        + concat_where(dims.KDim < maxlvl, zero, bottom_term)
    )


@gtx.field_operator
def _solve_w_vertical_diffusion(
    w: fa.CellKField[wpfloat],
    rho_ic: fa.CellKField[wpfloat],
    inv_ddqz_z_half: fa.CellKField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    tend: fa.CellKField[wpfloat],
    dtime: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    rhs, inv_rho_ic, inv_mair_ic = _compute_w_vertical_diffusion_rhs(
        rho_ic=rho_ic, inv_ddqz_z_half=inv_ddqz_z_half, km_c=km_c, div_c=div_c
    )
    a, b, c = _prepare_tridiagonal_matrix_cells_half(
        inv_mair=inv_mair_ic,
        inv_dz=inv_ddqz_z_full,
        zk=km_c,
        zprefac=wpfloat("2.0"),
        minlvl=minlvl,
        maxlvl=maxlvl,
    )
    b = _modify_w_diffusion_matrix_boundary(
        b=b,
        km_c=km_c,
        inv_dz=inv_ddqz_z_full,
        inv_mair_ic=inv_mair_ic,
        minlvl=minlvl,
        maxlvl=maxlvl,
    )
    new_tend = _solve_vertical_diffusion_cells(
        a=a, b=b, c=c, rhs=rhs, var=w, tend=tend, dtime=dtime
    )
    return inv_rho_ic, new_tend


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def solve_w_vertical_diffusion(
    w: fa.CellKField[wpfloat],
    rho_ic: fa.CellKField[wpfloat],
    inv_ddqz_z_half: fa.CellKField[wpfloat],
    inv_ddqz_z_full: fa.CellKField[wpfloat],
    km_c: fa.CellKField[wpfloat],
    div_c: fa.CellKField[wpfloat],
    inv_rho_ic: fa.CellKField[wpfloat],
    tend: fa.CellKField[wpfloat],
    dtime: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _solve_w_vertical_diffusion(
        w=w,
        rho_ic=rho_ic,
        inv_ddqz_z_half=inv_ddqz_z_half,
        inv_ddqz_z_full=inv_ddqz_z_full,
        km_c=km_c,
        div_c=div_c,
        tend=tend,
        dtime=dtime,
        minlvl=vertical_start,
        maxlvl=vertical_end - 1,
        out=(inv_rho_ic, tend),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


# ------------------------------------------------------------------ NumPy of the tmx stencils


def thomas_np(a, b, c, d, lo, hi):
    """The tridiagonal solve of rows ``lo:hi`` of every column (``a`` on the first
    row and ``c`` on the last row unused)."""
    x = np.full(d.shape, np.nan)
    cp, dp = np.zeros(d.shape), np.zeros(d.shape)
    for k in range(lo, hi):
        below_c = cp[:, k - 1] if k > lo else 0.0
        below_d = dp[:, k - 1] if k > lo else 0.0
        m = 1.0 / (b[:, k] - below_c * a[:, k])
        cp[:, k], dp[:, k] = c[:, k] * m, (d[:, k] - below_d * a[:, k]) * m
    for k in range(hi - 1, lo - 1, -1):
        x[:, k] = dp[:, k] - cp[:, k] * (x[:, k + 1] if k < hi - 1 else 0.0)
    return x


def tmx_inputs():
    return types.SimpleNamespace(
        rho=RNG.uniform(0.5, 1.5, (NC, NLEV)),
        u_vert=RNG.standard_normal((NV, NLEV)), v_vert=RNG.standard_normal((NV, NLEV)),
        vn=RNG.standard_normal((NE, NLEV)),
        km_c=RNG.uniform(0.1, 1.0, (NC, NLEV)), div_c=RNG.standard_normal((NC, NLEV)),
        km_iv=RNG.uniform(0.1, 1.0, (NV, NH)), km_ie=RNG.uniform(0.1, 1.0, (NE, NH)),
        c_lin_e=RNG.uniform(0.2, 0.8, (NE, 2)),
        primal_normal_vert_x=RNG.standard_normal((NE, 4)),
        primal_normal_vert_y=RNG.standard_normal((NE, 4)),
        dual_normal_vert_x=RNG.standard_normal((NE, 4)),
        dual_normal_vert_y=RNG.standard_normal((NE, 4)),
        primal_normal_cell_x=RNG.standard_normal((NE, 2)),
        primal_normal_cell_y=RNG.standard_normal((NE, 2)),
        tangent_orientation=RNG.choice([-1.0, 1.0], NE),
        inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
        inv_vert_vert_length=RNG.uniform(0.5, 2.0, NE),
        inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
        w=RNG.standard_normal((NC, NH)),
        inv_ddqz_z_full_e=RNG.uniform(0.5, 2.0, (NE, NLEV)),
        inv_ddqz_z_half_e=RNG.uniform(0.5, 2.0, (NE, NH)),
        u_stress=RNG.standard_normal(NC), v_stress=RNG.standard_normal(NC),
        rho_ic=RNG.uniform(0.5, 1.5, (NC, NH)),
        inv_ddqz_z_half=RNG.uniform(0.5, 2.0, (NC, NH)),
        inv_ddqz_z_full=RNG.uniform(0.5, 2.0, (NC, NLEV)),
    )


def vn_stress_np(t):
    e2c, e2c2v = TABLES["E2C"], TABLES["E2C2V"]
    vn_v = [t.u_vert[e2c2v[:, i]] * t.primal_normal_vert_x[:, i, None]
            + t.v_vert[e2c2v[:, i]] * t.primal_normal_vert_y[:, i, None] for i in range(4)]
    vt_v = [t.u_vert[e2c2v[:, i]] * t.dual_normal_vert_x[:, i, None]
            + t.v_vert[e2c2v[:, i]] * t.dual_normal_vert_y[:, i, None] for i in range(4)]
    ivv, ipe, ide = (t.inv_vert_vert_length[:, None], t.inv_primal_edge_length[:, None],
                     t.inv_dual_edge_length[:, None])
    to = t.tangent_orientation[:, None]
    dvt = vt_v[3] - vt_v[2]
    up_c = t.km_c[e2c[:, 1]] * (4.0 * (vn_v[3] - t.vn) * ivv - 2.0 / 3.0 * t.div_c[e2c[:, 1]])
    dn_c = t.km_c[e2c[:, 0]] * (4.0 * (t.vn - vn_v[2]) * ivv - 2.0 / 3.0 * t.div_c[e2c[:, 0]])
    km_v = [t.km_iv[e2c2v[:, i]][:, :NLEV] + t.km_iv[e2c2v[:, i]][:, 1:] for i in range(2)]
    up_v = km_v[1] * (to * (vn_v[1] - t.vn) * ipe + 0.5 * dvt * ivv)
    dn_v = km_v[0] * (to * (t.vn - vn_v[0]) * ipe + 0.5 * dvt * ivv)
    inv_rhoe = 1.0 / nbsum(t.c_lin_e, t.rho, "E2C")
    return inv_rhoe, ((up_c - dn_c) * ide + 2.0 * to * (up_v - dn_v) * ipe) * inv_rhoe


def vn_vertical_np(t, inv_rhoe, tot_tend, dtime, lo, hi):
    e2c = TABLES["E2C"]
    k = np.arange(NLEV)[None, :]
    inv_maire = t.inv_ddqz_z_full_e * inv_rhoe
    grad = t.km_ie * t.inv_dual_edge_length[:, None] * (t.w[e2c[:, 1]] - t.w[e2c[:, 0]])
    gk, gkp1 = grad[:, :NLEV], grad[:, 1:]
    flux_dn = ((t.u_stress[e2c] * t.primal_normal_cell_x
                + t.v_stress[e2c] * t.primal_normal_cell_y) * t.c_lin_e).sum(axis=1)[:, None]
    rhs = np.where(k == 0, -gkp1 * inv_maire, (gk - gkp1) * inv_maire)
    rhs = np.where(k < NLEV - 1, rhs, gk * inv_maire - flux_dn * inv_maire)
    a = np.where(k > lo, -t.km_ie[:, :NLEV] * t.inv_ddqz_z_half_e[:, :NLEV] * inv_maire, 0.0)
    c = np.where(k < hi - 1, -t.km_ie[:, 1:] * t.inv_ddqz_z_half_e[:, 1:] * inv_maire, 0.0)
    b = -a - c
    x = thomas_np(a, 1.0 / dtime + b, c, t.vn / dtime + rhs, lo, hi)
    return tot_tend + (x - t.vn) / dtime


def w_vertical_np(t, tend, dtime, lo, hi):
    k = np.arange(NH)[None, :]
    inv_rho = 1.0 / t.rho_ic
    inv_mair = inv_rho * t.inv_ddqz_z_half
    kd, kdm = np.full((NC, NH), np.nan), np.full((NC, NH), np.nan)   # km_c * x at k, k - 1
    kd[:, :NLEV] = t.km_c * t.div_c
    kdm[:, 1:] = t.km_c * t.div_c
    rhs = 2.0 * inv_mair * (kd / 3.0 - kdm / 3.0)
    kz, kzm = np.full((NC, NH), np.nan), np.full((NC, NH), np.nan)
    kz[:, :NLEV] = t.km_c * t.inv_ddqz_z_full
    kzm[:, 1:] = t.km_c * t.inv_ddqz_z_full
    a = np.where(k > lo, -2.0 * kzm * inv_mair, 0.0)
    c = np.where(k < hi - 1, -2.0 * kz * inv_mair, 0.0)
    b = -a - c + np.where(k > lo, 0.0, 2.0 * kzm * inv_mair) \
        + np.where(k < hi - 1, 0.0, 2.0 * kz * inv_mair)
    x = thomas_np(a, 1.0 / dtime + b, c, t.w / dtime + rhs, lo, hi)
    return inv_rho, tend + (x - t.w) / dtime


@pytest.mark.parametrize("backend", BACKENDS)
def test_tmx_vn_stress_tendency_and_vertical_solve(backend):
    t = tmx_inputs()
    hs, he, dtime = 1, NE - 1, 3.0
    inv_rhoe, tot_tend = np.full((NE, NLEV), np.nan), np.full((NE, NLEV), np.nan)
    names = ("rho", "u_vert", "v_vert", "vn", "km_c", "div_c", "km_iv", "c_lin_e",
             "primal_normal_vert_x", "primal_normal_vert_y", "dual_normal_vert_x",
             "dual_normal_vert_y", "tangent_orientation", "inv_primal_edge_length",
             "inv_vert_vert_length", "inv_dual_edge_length")
    compute_inverse_density_and_vn_stress_tendency(
        **{n: getattr(t, n) for n in names}, inv_rhoe=inv_rhoe, tot_tend=tot_tend,
        horizontal_start=hs, horizontal_end=he, vertical_start=0, vertical_end=NLEV,
        offset_provider=TABLES, backend=backend)
    want_inv_rhoe, want_tend = vn_stress_np(t)
    np.testing.assert_allclose(inv_rhoe[hs:he], want_inv_rhoe[hs:he], rtol=1e-13)
    np.testing.assert_allclose(tot_tend[hs:he], want_tend[hs:he], rtol=1e-11, atol=1e-12)
    assert np.isnan(inv_rhoe[[0, NE - 1]]).all()

    # the vertical solve on the whole column and on levels 1..NLEV-2, in place
    inv_rhoe[:] = want_inv_rhoe
    for lo, hi in ((0, NLEV), (1, NLEV - 1)):
        tend = want_tend.copy()
        solve_vn_vertical_diffusion(
            w=t.w, vn=t.vn, km_ie=t.km_ie, inv_rhoe=inv_rhoe,
            inv_ddqz_z_full_e=t.inv_ddqz_z_full_e, inv_ddqz_z_half_e=t.inv_ddqz_z_half_e,
            u_stress=t.u_stress, v_stress=t.v_stress,
            primal_normal_cell_x=t.primal_normal_cell_x,
            primal_normal_cell_y=t.primal_normal_cell_y, c_lin_e=t.c_lin_e,
            inv_dual_edge_length=t.inv_dual_edge_length, tot_tend=tend, dtime=dtime,
            nlev=NLEV, horizontal_start=0, horizontal_end=NE, vertical_start=lo,
            vertical_end=hi, offset_provider=TABLES, backend=backend)
        want = vn_vertical_np(t, want_inv_rhoe, want_tend, dtime, lo, hi)
        np.testing.assert_allclose(tend[:, lo:hi], want[:, lo:hi], rtol=1e-10, atol=1e-12,
                                   err_msg=f"levels {lo}:{hi}")
        np.testing.assert_array_equal(tend[:, :lo], want_tend[:, :lo])
        np.testing.assert_array_equal(tend[:, hi:], want_tend[:, hi:])


@pytest.mark.parametrize("backend", BACKENDS)
def test_tmx_w_vertical_solve_on_half_levels(backend):
    t = tmx_inputs()
    lo, hi, dtime = 1, NLEV, 3.0
    tend0 = RNG.standard_normal((NC, NH))
    inv_rho_ic, tend = np.full((NC, NH), np.nan), tend0.copy()
    solve_w_vertical_diffusion(
        w=t.w, rho_ic=t.rho_ic, inv_ddqz_z_half=t.inv_ddqz_z_half,
        inv_ddqz_z_full=t.inv_ddqz_z_full, km_c=t.km_c, div_c=t.div_c, inv_rho_ic=inv_rho_ic,
        tend=tend, dtime=dtime, horizontal_start=0, horizontal_end=NC, vertical_start=lo,
        vertical_end=hi, offset_provider=TABLES, backend=backend)
    want_inv_rho, want_tend = w_vertical_np(t, tend0, dtime, lo, hi)
    np.testing.assert_allclose(inv_rho_ic[:, lo:hi], want_inv_rho[:, lo:hi], rtol=1e-14)
    np.testing.assert_allclose(tend[:, lo:hi], want_tend[:, lo:hi], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(tend[:, [0, NLEV]], tend0[:, [0, NLEV]])
    assert np.isnan(inv_rho_ic[:, [0, NLEV]]).all()


@gtx.field_operator
def _prepare_tridiagonal_matrix_cells(
    inv_mair: fa.CellKField[wpfloat],
    inv_dz: fa.CellKField[wpfloat],
    zk: fa.CellKField[wpfloat],
    zprefac: wpfloat,
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> TridiagonalMatrixCells:
    zero = _broadcast_value_on_cell_k(wpfloat("0.0"), inv_mair)
    a_interior = wpfloat("0.0") - zprefac * zk * inv_dz * inv_mair
    c_interior = wpfloat("0.0") - zprefac * zk(KDim + 1) * inv_dz(KDim + 1) * inv_mair
    a = concat_where(dims.KDim > minlvl, a_interior, zero)
    c = concat_where(dims.KDim < maxlvl, c_interior, zero)
    b = wpfloat("0.0") - a - c
    return TridiagonalMatrixCells(a=a, b=b, c=c)


@gtx.field_operator
def _apply_explicit_vertical_diffusion_cells(
    a: fa.CellKField[wpfloat],
    b: fa.CellKField[wpfloat],
    c: fa.CellKField[wpfloat],
    rhs: fa.CellKField[wpfloat],
    var: fa.CellKField[wpfloat],
    tend: fa.CellKField[wpfloat],
    minlvl: gtx.int32,
    maxlvl: gtx.int32,
) -> fa.CellKField[wpfloat]:
    interior = tend - a * var(KDim - 1) - b * var - c * var(KDim + 1) + rhs
    top = tend - b * var - c * var(KDim + 1) + rhs
    bottom = tend - a * var(KDim - 1) - b * var + rhs
    new_tend = concat_where(dims.KDim > minlvl, interior, top)
    return concat_where(dims.KDim < maxlvl, new_tend, bottom)


@pytest.mark.parametrize(("lo", "hi"), [(0, NLEV), (1, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_tmx_explicit_vertical_diffusion_on_cells(backend, lo, hi):
    """The rows of the full-level matrix (``zk`` and ``inv_dz`` on half levels,
    read at ``KDim + 1``) as a ``TridiagonalMatrixCells`` returned by a direct
    call, then the explicit step: the boundary rows do not read ``var`` past the
    column, whose ends are runtime ``minlvl`` / ``maxlvl``."""
    inv_mair = RNG.uniform(0.5, 2.0, (NC, NLEV))
    inv_dz, zk = RNG.uniform(0.5, 2.0, (NC, NH)), RNG.uniform(0.1, 1.0, (NC, NH))
    m = _prepare_tridiagonal_matrix_cells(inv_mair, inv_dz, zk, 2.0, gtx.int32(lo),
                                          gtx.int32(hi - 1), backend=backend)
    k = np.arange(NLEV)[None, :]
    want_a = np.where(k > lo, -2.0 * zk[:, :NLEV] * inv_dz[:, :NLEV] * inv_mair, 0.0)
    want_c = np.where(k < hi - 1, -2.0 * zk[:, 1:] * inv_dz[:, 1:] * inv_mair, 0.0)
    assert isinstance(m, TridiagonalMatrixCells)
    np.testing.assert_allclose(m.a, want_a, rtol=1e-14)
    np.testing.assert_allclose(m.c, want_c, rtol=1e-14)
    np.testing.assert_allclose(m.b, -want_a - want_c, rtol=1e-14, atol=1e-15)

    var, rhs, tend = (RNG.standard_normal((NC, NLEV)) for _ in range(3))
    out = np.full((NC, NLEV), np.nan)
    _apply_explicit_vertical_diffusion_cells(
        *m, rhs, var, tend, gtx.int32(lo), gtx.int32(hi - 1), out=out,
        domain={dims.CellDim: (0, NC), dims.KDim: (lo, hi)}, offset_provider={},
        backend=backend)
    below, above = np.zeros_like(var), np.zeros_like(var)
    below[:, 1:], above[:, :-1] = var[:, :-1], var[:, 1:]
    want = tend - m.b * var + rhs - np.where(k > lo, m.a * below, 0.0) \
        - np.where(k < hi - 1, m.c * above, 0.0)
    np.testing.assert_allclose(out[:, lo:hi], want[:, lo:hi], rtol=1e-12, atol=1e-13)
    assert np.isnan(out[:, :lo]).all() and np.isnan(out[:, hi:]).all()


# ================================================================== AMPS: esat_lk
#
# amps/core/thermo.py: the liquid saturation vapour pressure of the Murphy-Koop
# table, Fortran-exact (truncate, then clamp the index to [1, 149]), the table
# tiled over cells; the table and the index field have 150 levels, the
# temperature and the result the model's.

ESAT_TABLE_SIZE = 150


def make_estbar():
    t = 163.0 + np.arange(1, 151, dtype=np.float64)
    return np.exp(54.842763 - 6763.22 / t - 4.210 * np.log(t) + 0.000367 * t
                  + np.tanh(0.0415 * (t - 218.8))
                  * (53.878 - 1331.22 / t - 9.44523 * np.log(t) + 0.014025 * t))


def esat_lk_np(t, estbar):
    i = np.maximum(1, np.minimum(np.trunc(t).astype(np.int64) - 163, 149))
    wt = np.clip(t - (i + 163).astype(np.float64), 0.0, 1.0)
    return (estbar[i - 1] * (1.0 - wt) + estbar[i] * wt) * 10.0


@gtx.field_operator
def _esat_lk_dsl(
    t: fa.CellKField[wpfloat],
    estbar_tiled: fa.CellKField[wpfloat],
    k_index: gtx.Field[gtx.Dims[dims.KDim], gtx.int32],
) -> fa.CellKField[wpfloat]:
    t_trunc = astype(t, gtx.int32)  # Fortran INT(T): truncation toward zero (T > 0)
    i_fortran = maximum(1, minimum(t_trunc - 163, 149))
    wt = maximum(minimum(t - astype(i_fortran + 163, wpfloat), 1.0), 0.0)
    e0 = estbar_tiled(as_offset(Koff, i_fortran - 1 - k_index))
    e1 = estbar_tiled(as_offset(Koff, i_fortran - k_index))
    return (e0 * (1.0 - wt) + e1 * wt) * 10.0


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def esat_lk_dsl(
    t: fa.CellKField[wpfloat],
    estbar_tiled: fa.CellKField[wpfloat],
    k_index: gtx.Field[gtx.Dims[dims.KDim], gtx.int32],
    out: fa.CellKField[wpfloat],
) -> None:
    _esat_lk_dsl(t, estbar_tiled, k_index, out=out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_esat_lk_with_a_table_longer_than_the_column(backend):
    estbar = make_estbar()
    # below the table, inside it, on whole kelvins, at its top and above it (T = 350 takes
    # the last entry with weight 1, where clamping before truncating would take the one before)
    t = RNG.uniform(150.0, 330.0, (NC, NLEV))
    t[0, :] = [150.0, 164.0, 200.0, 312.5, 313.0, 350.0]
    out = np.full((NC, NLEV), np.nan)
    esat_lk_dsl(t, np.tile(estbar, (NC, 1)), np.arange(ESAT_TABLE_SIZE, dtype=np.int32), out,
                offset_provider={"Koff": KDim}, backend=backend)
    np.testing.assert_allclose(out, esat_lk_np(t, estbar), rtol=1e-14)
    assert out[0, 5] == pytest.approx(estbar[149] * 10.0, rel=1e-14)
