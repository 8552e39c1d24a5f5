"""A twelfth round of ICON stencils (icon4py's field operators) in icon4py's own
spelling, beside ``test_icon_stencils_ported*.py``.

First the diffusion of ``w`` on half levels: the ``C2E2CO`` Laplacian of a
``(Cell, KHalf)`` field cast to ``vpfloat`` and its application in the upper
damping layer (a ``KHalf`` profile times a cell area broadcast to
``(Cell, KHalf)``), written in place, both called with keyword arguments.
Then the horizontal diffusion of ``theta`` and of ``vn`` on full levels: the
``E2C`` gradient scaled by an edge field, its ``C2E`` divergence and the
fourth-order operator reading vertex fields through ``E2C2V`` with the
neighbour slots of its coefficients picked by ``E2C2VDim(i)``.  Then the
advection helpers: the linear least-squares reconstruction (a tuple of three
reading ``C2E2C`` neighbours and flattened ``C2CEC`` coefficients), the PPM
face copied from the level above, the first vertical derivative of a field on
half levels and the constant zero field called with ``out=`` alone from a
program.  Then the interpolation helpers: the vertical weights from the
half-level heights (``Koff[-1]`` and ``Koff[+1]``), the edge-to-cell average,
the interpolation to half levels and the edge field brought to cell half
levels by nested calls with keyword arguments, and the RBF reconstruction of
a cell vector from nine ``C2E2C2E`` edges (a tuple of two sums), and
muphys' sedimentation scan of one hydrometeor (a forward scan with a carry of
three, calling a scalar field operator, fed a ``Koff[1]`` argument).  Last a
direct call averaging a half-level cell field on the ``V2C`` cells of each
vertex.
Each group is one program, interpreted and compiled, compared with NumPy
written from the formulas."""

from __future__ import annotations

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
    astype,
    broadcast,
    minimum,
    neighbor_sum,
    power,
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
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
C2E2C2EDim = Dimension("C2E2C2E", DimensionKind.LOCAL)
CECDim = Dimension("CEC")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.E2CDim, dims.C2EDim, dims.C2E2CDim, dims.C2E2CODim = E2CDim, C2EDim, C2E2CDim, C2E2CODim
dims.E2C2VDim, dims.CECDim, dims.C2E2C2EDim = E2C2VDim, CECDim, C2E2C2EDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
C2E2C2E = FieldOffset("C2E2C2E", source=EdgeDim, target=(CellDim, C2E2C2EDim))
C2CEC = FieldOffset("C2CEC", source=CECDim, target=(CellDim, C2E2CDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KHalfField = Field[Dims[KHalfDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.VertexKField = Field[Dims[VertexDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 9, 6, 10
NH = NLEV + 1
RNG = np.random.default_rng(12001)
_TABLE_RNG = np.random.default_rng(12002)
TABLES = {"E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "C2E2C": _TABLE_RNG.integers(0, NC, (NC, 3)),
          "C2E2CO": np.concatenate([np.arange(NC)[:, None],
                                    _TABLE_RNG.integers(0, NC, (NC, 3))], axis=1),
          "E2C2V": _TABLE_RNG.integers(0, NV, (NE, 4)),
          "C2E2C2E": _TABLE_RNG.integers(0, NE, (NC, 9)),
          "C2CEC": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(12003).bit_generator.state






def f64(*shape):
    return RNG.random(shape)


# ================================================================== w on half levels
#
# icon4py's diffusion of the vertical wind: ``w`` and its Laplacian live on
# the NLEV + 1 half levels.


@gtx.field_operator
def _nabla2_for_w(
    w: fa.CellKHalfField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> fa.CellKHalfField[vpfloat]:
    lap = neighbor_sum(geofac_n2s * w(C2E2CO), axis=dims.C2E2CODim)
    return astype(lap, vpfloat)


@gtx.field_operator
def _nabla2_for_w_in_upper_damping_layer(
    w: fa.CellKHalfField[wpfloat], diff_multfac_n2w: fa.KHalfField[wpfloat],
    cell_area: fa.CellField[wpfloat], z_nabla2_c: fa.CellKHalfField[vpfloat],
) -> fa.CellKHalfField[wpfloat]:
    area = broadcast(cell_area, (dims.CellDim, dims.KHalfDim))
    return w + diff_multfac_n2w * area * astype(z_nabla2_c, wpfloat)


@gtx.program
def w_half_level_diffusion(
    w: fa.CellKHalfField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    diff_multfac_n2w: fa.KHalfField[wpfloat], cell_area: fa.CellField[wpfloat],
    z_nabla2_c: fa.CellKHalfField[vpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32, damp_end: gtx.int32,
):
    _nabla2_for_w(w=w, geofac_n2s=geofac_n2s, out=z_nabla2_c,
                  domain={dims.CellDim: (horizontal_start, horizontal_end),
                          dims.KHalfDim: (vertical_start, vertical_end)})
    _nabla2_for_w_in_upper_damping_layer(
        w=w, diff_multfac_n2w=diff_multfac_n2w, cell_area=cell_area, z_nabla2_c=z_nabla2_c,
        out=w, domain={dims.CellDim: (horizontal_start, horizontal_end),
                       dims.KHalfDim: (vertical_start, damp_end)})


@pytest.mark.parametrize("bounds", [(0, NH, 3), (1, NLEV, NLEV)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_w_half_level_diffusion(backend, bounds):
    hs, he = 1, NC - 1
    vs, ve, de = bounds
    w0 = RNG.standard_normal((NC, NH))
    geo = RNG.standard_normal((NC, 4))
    mult, area = f64(NH), RNG.uniform(1.0, 2.0, NC)
    lap0 = f64(NC, NH).astype(np.float32)
    w, lap = w0.copy(), lap0.copy()
    w_half_level_diffusion(w, geo, mult, area, lap, horizontal_start=hs, horizontal_end=he,
                           vertical_start=vs, vertical_end=ve, damp_end=de,
                           offset_provider=TABLES, backend=backend)
    c2e2co = TABLES["C2E2CO"]
    lap_want = inside((w0[c2e2co] * geo[:, :, None]).sum(axis=1).astype(np.float32),
                      lap0, hs, he, vs, ve)
    w_want = inside(w0 + mult * area[:, None] * lap_want.astype(np.float64), w0,
                    hs, he, vs, de)
    check({"z_nabla2_c": lap, "w": w}, {"z_nabla2_c": lap_want, "w": w_want},
          rtol=1e-5, atol=1e-6)


# ================================================================== horizontal diffusion
#
# icon4py's horizontal diffusion on full levels: the gradient of ``theta_v``
# on edges, its divergence on cells and the fourth-order operator on ``vn``.


@gtx.field_operator
def _nabla2_for_z(
    kh_smag_e: fa.EdgeKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
) -> fa.EdgeKField[wpfloat]:
    diff = theta_v(E2C[1]) - theta_v(E2C[0])
    return astype(kh_smag_e, wpfloat) * inv_dual_edge_length * diff


@gtx.field_operator
def _nabla2_of_theta(
    z_nabla2_e: fa.EdgeKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    return astype(neighbor_sum(geofac_div * z_nabla2_e(C2E), axis=dims.C2EDim), vpfloat)


@gtx.field_operator
def _nabla4(
    u_vert: fa.VertexKField[vpfloat], v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat], inv_vert_vert_length: fa.EdgeField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
) -> fa.EdgeKField[vpfloat]:
    u, v = astype((u_vert, v_vert), wpfloat)
    p1, p2 = primal_normal_vert_v1, primal_normal_vert_v2
    tang = astype(u(E2C2V[0]) * p1[E2C2VDim(0)] + v(E2C2V[0]) * p2[E2C2VDim(0)]
                  + u(E2C2V[1]) * p1[E2C2VDim(1)] + v(E2C2V[1]) * p2[E2C2VDim(1)], vpfloat)
    norm = astype(u(E2C2V[2]) * p1[E2C2VDim(2)] + v(E2C2V[2]) * p2[E2C2VDim(2)]
                  + u(E2C2V[3]) * p1[E2C2VDim(3)] + v(E2C2V[3]) * p2[E2C2VDim(3)], vpfloat)
    tang_wp, norm_wp = astype((tang, norm), wpfloat)
    nab4 = wpfloat("4.0") * (
        (norm_wp - wpfloat("2.0") * z_nabla2_e) * (inv_vert_vert_length * inv_vert_vert_length)
        + (tang_wp - wpfloat("2.0") * z_nabla2_e)
        * (inv_primal_edge_length * inv_primal_edge_length))
    return astype(nab4, vpfloat)


@gtx.program
def horizontal_diffusion(
    kh_smag_e: fa.EdgeKField[vpfloat], inv_dual_edge_length: fa.EdgeField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    u_vert: fa.VertexKField[vpfloat], v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_v1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_v2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat], z_temp: fa.CellKField[vpfloat],
    z_nabla4_e2: fa.EdgeKField[vpfloat],
    cell_start: gtx.int32, cell_end: gtx.int32, edge_start: gtx.int32, edge_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    edges = {dims.EdgeDim: (edge_start, edge_end), dims.KDim: (vertical_start, vertical_end)}
    _nabla2_for_z(kh_smag_e=kh_smag_e, inv_dual_edge_length=inv_dual_edge_length,
                  theta_v=theta_v, out=z_nabla2_e, domain=edges)
    _nabla2_of_theta(z_nabla2_e=z_nabla2_e, geofac_div=geofac_div, out=z_temp,
                     domain={dims.CellDim: (cell_start, cell_end),
                             dims.KDim: (vertical_start, vertical_end)})
    _nabla4(u_vert, v_vert, primal_normal_vert_v1, primal_normal_vert_v2, z_nabla2_e,
            inv_vert_vert_length, inv_primal_edge_length, out=z_nabla4_e2, domain=edges)


@pytest.mark.parametrize("backend", BACKENDS)
def test_horizontal_diffusion(backend):
    cs, ce, es, ee, vs, ve = 1, NC - 1, 2, NE - 1, 1, NLEV - 1
    a = dict(kh_smag_e=f64(NE, NLEV).astype(np.float32), inv_dual_edge_length=f64(NE) + 0.5,
             theta_v=RNG.standard_normal((NC, NLEV)), geofac_div=RNG.standard_normal((NC, 3)),
             u_vert=RNG.standard_normal((NV, NLEV)).astype(np.float32),
             v_vert=RNG.standard_normal((NV, NLEV)).astype(np.float32),
             primal_normal_vert_v1=RNG.standard_normal((NE, 4)),
             primal_normal_vert_v2=RNG.standard_normal((NE, 4)),
             inv_vert_vert_length=f64(NE) + 0.5, inv_primal_edge_length=f64(NE) + 0.5)
    base = dict(z_nabla2_e=f64(NE, NLEV), z_temp=f64(NC, NLEV).astype(np.float32),
                z_nabla4_e2=f64(NE, NLEV).astype(np.float32))
    got = {n: v.copy() for n, v in base.items()}
    horizontal_diffusion(**a, **got, cell_start=cs, cell_end=ce, edge_start=es, edge_end=ee,
                         vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                         backend=backend)

    e2c, c2e, e2c2v = TABLES["E2C"], TABLES["C2E"], TABLES["E2C2V"]
    th = a["theta_v"]
    grad = (a["kh_smag_e"].astype(np.float64) * a["inv_dual_edge_length"][:, None]
            * (th[e2c[:, 1]] - th[e2c[:, 0]]))
    nab2 = inside(grad, base["z_nabla2_e"], es, ee, vs, ve)
    div = (nab2[c2e] * a["geofac_div"][:, :, None]).sum(axis=1)
    u, v = a["u_vert"].astype(np.float64), a["v_vert"].astype(np.float64)
    p1, p2 = a["primal_normal_vert_v1"], a["primal_normal_vert_v2"]

    def part(j):
        return u[e2c2v[:, j]] * p1[:, j, None] + v[e2c2v[:, j]] * p2[:, j, None]

    tang = (part(0) + part(1)).astype(np.float32).astype(np.float64)
    norm = (part(2) + part(3)).astype(np.float32).astype(np.float64)
    ivv, ipe = a["inv_vert_vert_length"][:, None], a["inv_primal_edge_length"][:, None]
    nab4 = 4.0 * ((norm - 2.0 * nab2) * ivv * ivv + (tang - 2.0 * nab2) * ipe * ipe)
    want = dict(z_nabla2_e=nab2, z_temp=inside(div, base["z_temp"], cs, ce, vs, ve),
                z_nabla4_e2=inside(nab4, base["z_nabla4_e2"], es, ee, vs, ve))
    check(got, want, rtol=1e-5, atol=1e-5)


# ================================================================== advection helpers
#
# icon4py's linear least-squares reconstruction, the PPM face copy and the
# vertical derivative of the half-level Exner perturbation.


@gtx.field_operator
def _recon_lsq_cell_l_svd_stencil(
    p_cc: fa.CellKField[float], lsq_pseudoinv_1: Field[[CECDim], float],
    lsq_pseudoinv_2: Field[[CECDim], float],
) -> tuple[fa.CellKField[float], fa.CellKField[float], fa.CellKField[float]]:
    d0, d1, d2 = p_cc(C2E2C[0]) - p_cc, p_cc(C2E2C[1]) - p_cc, p_cc(C2E2C[2]) - p_cc
    c2 = lsq_pseudoinv_1(C2CEC[0]) * d0 + lsq_pseudoinv_1(C2CEC[1]) * d1 \
        + lsq_pseudoinv_1(C2CEC[2]) * d2
    c3 = lsq_pseudoinv_2(C2CEC[0]) * d0 + lsq_pseudoinv_2(C2CEC[1]) * d1 \
        + lsq_pseudoinv_2(C2CEC[2]) * d2
    return p_cc, c2, c3


@gtx.field_operator
def _copy_ppm_p1(p_cc: fa.CellKField[float]) -> fa.CellKField[float]:
    p_face = p_cc(Koff[-1])
    return p_face


@gtx.field_operator
def _compute_first_vertical_derivative(
    z_exner_ic: fa.CellKField[vpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    return (z_exner_ic - z_exner_ic(Koff[1])) * inv_ddqz_z_full


@gtx.field_operator
def _set_zero_cell_field() -> fa.CellKField[float]:
    return broadcast(0.0, (CellDim, KDim))


@gtx.program
def advection_helpers(
    p_cc: fa.CellKField[float], lsq_pseudoinv_1: Field[[CECDim], float],
    lsq_pseudoinv_2: Field[[CECDim], float], z_exner_ic: fa.CellKField[vpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    p_coeff_1: fa.CellKField[float], p_coeff_2: fa.CellKField[float],
    p_coeff_3: fa.CellKField[float], p_face: fa.CellKField[float],
    z_dexner_dz_c_1: fa.CellKField[vpfloat], zero: fa.CellKField[float],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    full = {CellDim: (horizontal_start, horizontal_end), KDim: (vertical_start, vertical_end)}
    _recon_lsq_cell_l_svd_stencil(p_cc, lsq_pseudoinv_1, lsq_pseudoinv_2,
                                  out=(p_coeff_1, p_coeff_2, p_coeff_3), domain=full)
    _copy_ppm_p1(p_coeff_2, out=p_face,
                 domain={CellDim: (horizontal_start, horizontal_end),
                         KDim: (vertical_start + 1, vertical_end)})
    _compute_first_vertical_derivative(z_exner_ic, inv_ddqz_z_full, out=z_dexner_dz_c_1,
                                       domain=full)
    _set_zero_cell_field(out=zero)


@pytest.mark.parametrize("bounds", [(0, NLEV), (2, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_advection_helpers(backend, bounds):
    hs, he = 1, NC - 1
    vs, ve = bounds
    a = dict(p_cc=RNG.standard_normal((NC, NLEV)), lsq_pseudoinv_1=RNG.standard_normal(NC * 3),
             lsq_pseudoinv_2=RNG.standard_normal(NC * 3),
             z_exner_ic=RNG.standard_normal((NC, NH)).astype(np.float32),
             inv_ddqz_z_full=f64(NC, NLEV).astype(np.float32))
    base = {n: f64(NC, NLEV) for n in ("p_coeff_1", "p_coeff_2", "p_coeff_3", "p_face",
                                       "zero")}
    base["z_dexner_dz_c_1"] = f64(NC, NLEV).astype(np.float32)
    got = {n: v.copy() for n, v in base.items()}
    advection_helpers(**a, **got, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                      vertical_end=ve, offset_provider=TABLES, backend=backend)

    p = a["p_cc"]
    d = p[TABLES["C2E2C"]] - p[:, None, :]
    l1, l2 = a["lsq_pseudoinv_1"].reshape(NC, 3), a["lsq_pseudoinv_2"].reshape(NC, 3)
    c2 = inside((l1[:, :, None] * d).sum(axis=1), base["p_coeff_2"], hs, he, vs, ve)
    c3 = (l2[:, :, None] * d).sum(axis=1)
    face = np.array(base["p_face"])
    face[hs:he, vs + 1:ve] = c2[hs:he, vs:ve - 1]
    ex = a["z_exner_ic"]
    dz = (ex[:, :-1] - ex[:, 1:]) * a["inv_ddqz_z_full"]
    want = dict(p_coeff_1=inside(p, base["p_coeff_1"], hs, he, vs, ve), p_coeff_2=c2,
                p_coeff_3=inside(c3, base["p_coeff_3"], hs, he, vs, ve), p_face=face,
                z_dexner_dz_c_1=inside(dz, base["z_dexner_dz_c_1"], hs, he, vs, ve),
                zero=np.zeros((NC, NLEV)))
    check(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_on_the_top_half_levels(backend):
    # icon4py damps ``w`` in place on the half levels of the upper damping layer.
    w0, mult, area = RNG.standard_normal((NC, NH)), f64(NH), RNG.uniform(1.0, 2.0, NC)
    lap = RNG.standard_normal((NC, NH)).astype(np.float32)
    w = w0.copy()
    _nabla2_for_w_in_upper_damping_layer(
        w=w, diff_multfac_n2w=mult, cell_area=area, z_nabla2_c=lap, out=w,
        domain={KHalfDim: (0, 4), CellDim: (2, NC)}, offset_provider=TABLES, backend=backend)
    want = inside(w0 + mult * area[:, None] * lap.astype(np.float64), w0, 2, NC, 0, 4)
    np.testing.assert_allclose(w, want, rtol=1e-12, atol=1e-12)


# ================================================================== interpolation
#
# icon4py's interpolation helpers: vertical weights, edge-to-cell averages,
# interpolation to half levels and the RBF vector reconstruction on cells.


@gtx.field_operator
def _calc_wgtfac_c(z_ifc: Field[[CellDim, KDim], wpfloat]) -> Field[[CellDim, KDim], wpfloat]:
    return (z_ifc(Koff[-1]) - z_ifc) / (z_ifc(Koff[-1]) - z_ifc(Koff[+1]))


@gtx.field_operator
def _interpolate_to_cell_center_wp(
    interpolant: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
) -> fa.CellKField[wpfloat]:
    return neighbor_sum(e_bln_c_s * interpolant(C2E), axis=C2EDim)


@gtx.field_operator
def _interpolate_to_half_levels_wp(
    wgtfac_c: fa.CellKField[wpfloat], interpolant: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return wgtfac_c * interpolant + (wpfloat("1.0") - wgtfac_c) * interpolant(Koff[-1])


@gtx.field_operator
def _interpolate_edge_field_to_cell_half_levels_wp(
    interpolant: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    on_cells = _interpolate_to_cell_center_wp(interpolant=interpolant, e_bln_c_s=e_bln_c_s)
    return _interpolate_to_half_levels_wp(wgtfac_c=wgtfac_c, interpolant=on_cells)


@gtx.field_operator
def _rbf_vec_interpol_edge2cell(
    p_e_in: Field[[EdgeDim, KDim], wpfloat], ptr_coeff_1: Field[[CellDim, C2E2C2EDim], wpfloat],
    ptr_coeff_2: Field[[CellDim, C2E2C2EDim], wpfloat],
) -> tuple[Field[[CellDim, KDim], wpfloat], Field[[CellDim, KDim], wpfloat]]:
    u = neighbor_sum(ptr_coeff_1 * p_e_in(C2E2C2E), axis=C2E2C2EDim)
    return u, neighbor_sum(p_e_in(C2E2C2E) * ptr_coeff_2, axis=C2E2C2EDim)


@gtx.program
def interpolation_helpers(
    z_ifc: fa.CellKField[wpfloat], vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    theta: fa.CellKField[wpfloat], ptr_coeff_1: Field[[CellDim, C2E2C2EDim], wpfloat],
    ptr_coeff_2: Field[[CellDim, C2E2C2EDim], wpfloat],
    wgtfac_c: fa.CellKField[wpfloat], vn_c: fa.CellKField[wpfloat],
    theta_ic: fa.CellKField[wpfloat], vn_ic: fa.CellKField[wpfloat],
    u_c: fa.CellKField[wpfloat], v_c: fa.CellKField[wpfloat],
    cell_start: gtx.int32, cell_end: gtx.int32, nlev: gtx.int32,
):
    _calc_wgtfac_c(z_ifc=z_ifc, out=wgtfac_c,
                   domain={CellDim: (cell_start, cell_end), KDim: (1, nlev)})
    _interpolate_to_cell_center_wp(vn, e_bln_c_s, out=vn_c,
                                   domain={CellDim: (cell_start, cell_end), KDim: (0, nlev)})
    _interpolate_to_half_levels_wp(wgtfac_c, theta, out=theta_ic,
                                   domain={CellDim: (cell_start, cell_end), KDim: (1, nlev)})
    _interpolate_edge_field_to_cell_half_levels_wp(
        interpolant=vn, e_bln_c_s=e_bln_c_s, wgtfac_c=wgtfac_c, out=vn_ic,
        domain={CellDim: (cell_start, cell_end), KDim: (1, nlev)})
    _rbf_vec_interpol_edge2cell(vn, ptr_coeff_1, ptr_coeff_2, out=(u_c, v_c),
                                domain={CellDim: (cell_start, cell_end), KDim: (0, nlev)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolation_helpers(backend):
    cs, ce = 1, NC - 1
    z_ifc = np.cumsum(RNG.uniform(1.0, 2.0, (NC, NH)), axis=1)[:, ::-1].copy()
    a = dict(z_ifc=z_ifc, vn=RNG.standard_normal((NE, NLEV)), e_bln_c_s=f64(NC, 3),
             theta=RNG.standard_normal((NC, NLEV)), ptr_coeff_1=RNG.standard_normal((NC, 9)),
             ptr_coeff_2=RNG.standard_normal((NC, 9)))
    base = dict(wgtfac_c=f64(NC, NH))
    base |= {n: f64(NC, NLEV) for n in ("vn_c", "theta_ic", "vn_ic", "u_c", "v_c")}
    got = {n: v.copy() for n, v in base.items()}
    interpolation_helpers(**a, **got, cell_start=cs, cell_end=ce, nlev=NLEV,
                          offset_provider=TABLES, backend=backend)

    wgtfac = np.array(base["wgtfac_c"])
    wgtfac[cs:ce, 1:NLEV] = ((z_ifc[:, :-2] - z_ifc[:, 1:-1])
                             / (z_ifc[:, :-2] - z_ifc[:, 2:]))[cs:ce]
    vn_c_all = (a["vn"][TABLES["C2E"]] * a["e_bln_c_s"][:, :, None]).sum(axis=1)

    def half(values):
        out = np.zeros((NC, NLEV))
        w = wgtfac[:, 1:NLEV]
        out[:, 1:] = w * values[:, 1:] + (1.0 - w) * values[:, :-1]
        return out

    c2e2c2e = TABLES["C2E2C2E"]
    u = (a["ptr_coeff_1"][:, :, None] * a["vn"][c2e2c2e]).sum(axis=1)
    v = (a["ptr_coeff_2"][:, :, None] * a["vn"][c2e2c2e]).sum(axis=1)
    want = dict(wgtfac_c=wgtfac, vn_c=inside(vn_c_all, base["vn_c"], cs, ce, 0, NLEV),
                theta_ic=inside(half(a["theta"]), base["theta_ic"], cs, ce, 1, NLEV),
                vn_ic=inside(half(vn_c_all), base["vn_ic"], cs, ce, 1, NLEV),
                u_c=inside(u, base["u_c"], cs, ce, 0, NLEV),
                v_c=inside(v, base["v_c"], cs, ce, 0, NLEV))
    check(got, want, rtol=1e-12, atol=1e-12)


# ================================================================== precipitation scan
#
# muphys' sedimentation of one hydrometeor down the column: a forward scan
# whose carry is a tuple of three; its third member takes the place of the
# ``vt`` argument, so each level falls at the speed computed one level above.


@gtx.field_operator
def _fall_speed_scalar(density: wpfloat, prefactor: wpfloat, offset: wpfloat,
                       exponent: wpfloat) -> wpfloat:
    return prefactor * power(density + offset, exponent)


@gtx.scan_operator(axis=KDim, forward=True, init=(0.0, 0.0, 0.0))
def _precip(
    state: tuple[wpfloat, wpfloat, wpfloat], prefactor: wpfloat, exponent: wpfloat,
    offset: wpfloat, zeta: wpfloat, vc: wpfloat, flx: wpfloat, vt: wpfloat, q: wpfloat,
    q_kp1: wpfloat, rho: wpfloat,
) -> tuple[wpfloat, wpfloat, wpfloat]:
    qx, vx, vt = state
    rho_x = q * rho
    flx_eff = (rho_x / zeta) + 2.0 * flx
    flx_partial = minimum(rho_x * vc * _fall_speed_scalar(rho_x, prefactor, offset, exponent),
                          flx_eff)
    update0 = (zeta * (flx_eff - flx_partial)) / ((1.0 + zeta * vt) * rho)
    update1 = (update0 * rho * vt + flx_partial) * 0.5
    update2 = vc * _fall_speed_scalar(rho_x, prefactor, offset, exponent)
    return update0, update1, update2


@gtx.program
def precipitation_scan(
    zeta: fa.CellKField[wpfloat], vc: fa.CellKField[wpfloat], flx: fa.CellKField[wpfloat],
    vt: fa.CellKField[wpfloat], q: fa.CellKField[wpfloat], rho: fa.CellKField[wpfloat],
    prefactor: wpfloat, exponent: wpfloat, offset: wpfloat,
    q_new: fa.CellKField[wpfloat], flx_new: fa.CellKField[wpfloat],
    vt_new: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _precip(prefactor, exponent, offset, zeta, vc, flx, vt, q, q(Koff[1]), rho,
            out=(q_new, flx_new, vt_new),
            domain={CellDim: (horizontal_start, horizontal_end),
                    KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("bounds", [(0, NLEV - 1), (3, NLEV - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_precipitation_scan(backend, bounds):
    hs, he = 1, NC - 2
    vs, ve = bounds
    a = dict(zeta=RNG.uniform(0.5, 1.5, (NC, NLEV)), vc=RNG.uniform(0.5, 1.5, (NC, NLEV)),
             flx=f64(NC, NLEV), vt=f64(NC, NLEV), q=f64(NC, NLEV) * 1e-2,
             rho=RNG.uniform(0.8, 1.2, (NC, NLEV)))
    prefactor, exponent, offset = 14.58, 0.111, 1e-12
    base = {n: f64(NC, NLEV) for n in ("q_new", "flx_new", "vt_new")}
    got = {n: v.copy() for n, v in base.items()}
    precipitation_scan(**a, **got, prefactor=prefactor, exponent=exponent, offset=offset,
                       horizontal_start=hs, horizontal_end=he, vertical_start=vs,
                       vertical_end=ve, offset_provider=TABLES, backend=backend)

    want = {n: np.array(v) for n, v in base.items()}
    vt_prev = np.zeros(NC)
    for k in range(vs, ve):
        rho_x = a["q"][:, k] * a["rho"][:, k]
        zeta, vc = a["zeta"][:, k], a["vc"][:, k]
        speed = prefactor * (rho_x + offset) ** exponent
        eff = rho_x / zeta + 2.0 * a["flx"][:, k]
        partial = np.minimum(rho_x * vc * speed, eff)
        u0 = zeta * (eff - partial) / ((1.0 + zeta * vt_prev) * a["rho"][:, k])
        u1 = (u0 * a["rho"][:, k] * vt_prev + partial) * 0.5
        vt_prev = vc * speed
        want["q_new"][hs:he, k] = u0[hs:he]
        want["flx_new"][hs:he, k] = u1[hs:he]
        want["vt_new"][hs:he, k] = vt_prev[hs:he]
    check(got, want, rtol=1e-12, atol=1e-14)


# ================================================================== cells to vertices
#
# icon4py's average of a half-level cell field on the six cells around each
# vertex, called directly on part of the vertices and half levels.

V2CDim = Dimension("V2C", DimensionKind.LOCAL)
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
fa.VertexKHalfField = Field[Dims[VertexDim, KHalfDim], T]
V2C_TABLES = {"V2C": np.random.default_rng(12004).integers(0, NC, (NV, 6))}


@gtx.field_operator
def _interpolate_cell_field_to_vertex(
    cell_in: fa.CellKHalfField[wpfloat], c_int: gtx.Field[gtx.Dims[VertexDim, V2CDim], wpfloat],
) -> fa.VertexKHalfField[wpfloat]:
    return neighbor_sum(cell_in(V2C) * c_int, axis=V2CDim)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_from_cells_to_vertices_on_half_levels(backend):
    cell_in, c_int = RNG.standard_normal((NC, NH)), RNG.standard_normal((NV, 6))
    base = f64(NV, NH)
    got = base.copy()
    _interpolate_cell_field_to_vertex(cell_in=cell_in, c_int=c_int, out=got,
                                      domain={VertexDim: (1, NV - 1), KHalfDim: (2, NH)},
                                      offset_provider=V2C_TABLES, backend=backend)
    avg = (cell_in[V2C_TABLES["V2C"]] * c_int[:, :, None]).sum(axis=1)
    np.testing.assert_allclose(got, inside(avg, base, 1, NV - 1, 2, NH), rtol=1e-12,
                               atol=1e-12)
