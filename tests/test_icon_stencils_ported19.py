"""A nineteenth round of ICON stencils (icon4py's field operators) in icon4py's
own spelling, beside ``test_icon_stencils_ported*.py``.

First the cell diagnostics of the velocity advection as icon4py writes them
now: the kinetic energy and the contravariant correction interpolated from
edges to cells (``C2CE`` strided weights), the correction set to
``broadcast(vpfloat("0.0"), ...)`` above ``nflatlev <= dims.KDim`` and
interpolated to half levels from ``nflatlev + 1 <= dims.KDim`` (a tuple of two
outputs, one of them also an input kept where ``concat_where`` does not
choose), then ``w`` less the correction on ``nflatlev + 1 <= dims.KDim < nlev``
(a chained comparison with the dimension in the middle) on a vertical domain
one level longer; the predictor and the corrector programs, with an unused
``k`` argument as icon4py leaves it.
Then the horizontal advection of ``w`` on half levels at edges: ``w``
interpolated to vertices (``V2C``) and zero outside ``start <= vertex < end``
of a ``VertexField[int32]``, read back through ``E2V`` inside the edge range
``start <= edge < end``; the program passes differently named scalars
positionally.
Last the physics-to-dynamics thermodynamic updates of icon4py's common
diagnostics: the virtual temperature and Exner tendencies and the update of
Exner and ``theta_v`` by ``exp`` and ``log``, constants read as class
attributes of a namespace class, ``wpfloat("1.0")``, programs declared
``-> None`` calling their field operators with keyword arguments, one with
``out=`` a tuple of two.
Then the newest predictor of the perturbed quantities at cells: one field
operator of eleven outputs whose parts are chosen by ``concat_where`` over a
cell range and a level range at once (built from ``vertical_start`` and
``vertical_end`` arguments), a chain of such choices each reading the tuple
the one before chose (compiled once per value, not once per branch).
Last icon4py's turbulence (turbdiff): the turbulent budgets (five statements
on two vertical domains, a caller passing one array as an input of the third
statement and the output of the fourth), the TKE diffusion solve (a forward
and a backward scan with a ``tuple[wpfloat, bool]`` state), the vertical
gradients of the conserved variables (a statement on ``CellDim`` alone,
``concat_where(dims.KDim == nlev, CellField, CellKField)``), the TKE forcing
functions, the three-dimensional shear forcing, the preparation of the TKE
diffusion (field operators called on shifted fields, main-level and
half-level fields together), the interpolation of seven profiles onto half
levels (in place, as ICON calls it), the TKE at the model top (in place) and
the virtual TKE profile (a scan with a scalar operand).
Each group is one program (or two), interpreted and compiled, compared with
NumPy written from the formulas."""

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
    log,
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
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
V2CDim = Dimension("V2C", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.E2CDim, dims.C2EDim, dims.E2VDim, dims.V2CDim = E2CDim, C2EDim, E2VDim, V2CDim
dims.CEDim = CEDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
V2C = FieldOffset("V2C", source=CellDim, target=(VertexDim, V2CDim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.VertexField = Field[Dims[VertexDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float64       # icon4py's double precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 8, 11, 7, 10
NH = NLEV + 1
VP = np.float64
RNG = np.random.default_rng(19001)
_TABLE_RNG = np.random.default_rng(19002)


def _distinct(rows, n, k):
    return np.array([_TABLE_RNG.choice(n, k, replace=False) for _ in range(rows)])


TABLES = {"E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3),
          "E2V": _distinct(NE, NV, 2), "V2C": _distinct(NV, NC, 6),
          "C2CE": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(19003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


def vp(*shape):
    return RNG.random(shape).astype(VP)


# ================================================================== cell diagnostics of advection
#
# icon4py's interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_terms
# (formerly fused_velocity_advection_stencil_8_to_13_predictor) and its
# corrector twin.


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
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat]
) -> fa.CellKField[vpfloat]:
    interpolation_to_half_levels_vp = wgtfac_c * interpolant + (
        vpfloat("1.0") - wgtfac_c
    ) * interpolant(Koff[-1])
    return interpolation_to_half_levels_vp


@gtx.field_operator
def _correct_contravariant_vertical_velocity(
    z_w_con_c: fa.CellKField[vpfloat],
    z_w_concorr_mc: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    z_w_con_c_vp = z_w_con_c - z_w_concorr_mc
    return z_w_con_c_vp


@gtx.field_operator
def _interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_correction(
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[vpfloat],
    nflatlev: gtx.int32,
) -> tuple[
    fa.CellKField[vpfloat],
    fa.CellKField[vpfloat],
]:
    horizontal_kinetic_energy_at_cells_on_model_levels = _interpolate_to_cell_center(
        horizontal_kinetic_energy_at_edges_on_model_levels, e_bln_c_s
    )

    contravariant_correction_at_cells_on_model_levels = concat_where(
        nflatlev <= dims.KDim,
        _interpolate_to_cell_center(contravariant_correction_at_edges_on_model_levels, e_bln_c_s),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
    )

    contravariant_correction_at_cells_on_half_levels = concat_where(
        nflatlev + 1 <= dims.KDim,
        _interpolate_cell_field_to_half_levels_vp(
            wgtfac_c=wgtfac_c, interpolant=contravariant_correction_at_cells_on_model_levels
        ),
        contravariant_correction_at_cells_on_half_levels,
    )

    return (
        horizontal_kinetic_energy_at_cells_on_model_levels,
        contravariant_correction_at_cells_on_half_levels,
    )


@gtx.field_operator
def _compute_contravariant_corrected_w(
    w: fa.CellKField[wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[vpfloat],
    nflatlev: gtx.int32,
    nlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    contravariant_corrected_w_at_cells_on_half_levels = concat_where(
        dims.KDim < nlev, astype(w, vpfloat), broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))
    )

    contravariant_corrected_w_at_cells_on_half_levels = concat_where(
        nflatlev + 1 <= dims.KDim < nlev,
        _correct_contravariant_vertical_velocity(
            contravariant_corrected_w_at_cells_on_half_levels,
            contravariant_correction_at_cells_on_half_levels,
        ),
        contravariant_corrected_w_at_cells_on_half_levels,
    )

    return contravariant_corrected_w_at_cells_on_half_levels


@gtx.program
def interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_terms(
    horizontal_kinetic_energy_at_cells_on_model_levels: fa.CellKField[vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[vpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32],
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    """Formerly known as fused_velocity_advection_stencil_8_to_13_predictor."""

    _interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_correction(
        horizontal_kinetic_energy_at_edges_on_model_levels,
        e_bln_c_s,
        contravariant_correction_at_edges_on_model_levels,
        wgtfac_c,
        contravariant_correction_at_cells_on_half_levels,
        nflatlev,
        out=(
            horizontal_kinetic_energy_at_cells_on_model_levels,
            contravariant_correction_at_cells_on_half_levels,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end - 1),
        },
    )

    _compute_contravariant_corrected_w(
        w,
        contravariant_correction_at_cells_on_half_levels,
        nflatlev,
        nlev,
        out=contravariant_corrected_w_at_cells_on_half_levels,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.program
def interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_corrected_w(
    horizontal_kinetic_energy_at_cells_on_model_levels: fa.CellKField[vpfloat],
    contravariant_corrected_w_at_cells_on_half_levels: fa.CellKField[vpfloat],
    w: fa.CellKField[wpfloat],
    horizontal_kinetic_energy_at_edges_on_model_levels: fa.EdgeKField[vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    k: fa.KField[gtx.int32],
    nflatlev: gtx.int32,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    """Formerly known as fused_velocity_advection_stencil_8_to_13_corrector."""

    _interpolate_to_cell_center(
        horizontal_kinetic_energy_at_edges_on_model_levels,
        e_bln_c_s,
        out=horizontal_kinetic_energy_at_cells_on_model_levels,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end - 1),
        },
    )
    _compute_contravariant_corrected_w(
        w,
        contravariant_correction_at_cells_on_half_levels,
        nflatlev,
        nlev,
        out=contravariant_corrected_w_at_cells_on_half_levels,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _cell_inputs():
    return dict(
        w=RNG.standard_normal((NC, NH)),
        horizontal_kinetic_energy_at_edges_on_model_levels=vp(NE, NLEV),
        contravariant_correction_at_edges_on_model_levels=vp(NE, NLEV) - VP(0.5),
        e_bln_c_s=f64(NC * 3), wgtfac_c=vp(NC, NH), k=np.arange(NH, dtype=np.int32))


def _to_cells(a, edge_field):
    bln = a["e_bln_c_s"].reshape(NC, 3)
    return np.einsum("cn,cnk->ck", bln,
                     edge_field.astype(np.float64)[TABLES["C2E"]]).astype(VP)


def _corrected_w(a, correction_on_half_levels, nflatlev):
    kk = np.arange(NH)
    wc = np.where(kk < NLEV, a["w"].astype(VP), VP(0.0))
    return np.where((nflatlev + 1 <= kk) & (kk < NLEV), wc - correction_on_half_levels, wc)


@pytest.mark.parametrize(("nflatlev", "bounds"), [(2, (0, NC, 0, NH)), (0, (1, NC - 2, 1, NH - 1))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_cell_diagnostics_for_velocity_advection_predictor(backend, nflatlev, bounds):
    hs, he, vs, ve = bounds
    a = _cell_inputs()
    base = dict(horizontal_kinetic_energy_at_cells_on_model_levels=vp(NC, NLEV),
                contravariant_correction_at_cells_on_half_levels=vp(NC, NH),
                contravariant_corrected_w_at_cells_on_half_levels=vp(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_terms(
        **got, **a, nflatlev=nflatlev, nlev=NLEV, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    kk = np.arange(NLEV)
    ke = _to_cells(a, a["horizontal_kinetic_energy_at_edges_on_model_levels"])
    corr_mc = np.where(kk >= nflatlev,
                       _to_cells(a, a["contravariant_correction_at_edges_on_model_levels"]),
                       VP(0.0))
    wgt = a["wgtfac_c"][:, :NLEV]
    below = np.concatenate([np.full((NC, 1), np.nan, VP), corr_mc[:, :-1]], axis=1)
    half = np.where(kk >= nflatlev + 1, wgt * corr_mc + (VP(1.0) - wgt) * below,
                    base["contravariant_correction_at_cells_on_half_levels"][:, :NLEV])
    corr_half = np.array(base["contravariant_correction_at_cells_on_half_levels"])
    corr_half[hs:he, vs:ve - 1] = half[hs:he, vs:ve - 1]
    check(got, dict(
        horizontal_kinetic_energy_at_cells_on_model_levels=inside(
            ke, base["horizontal_kinetic_energy_at_cells_on_model_levels"], hs, he, vs, ve - 1),
        contravariant_correction_at_cells_on_half_levels=corr_half,
        contravariant_corrected_w_at_cells_on_half_levels=inside(
            _corrected_w(a, corr_half, nflatlev),
            base["contravariant_corrected_w_at_cells_on_half_levels"], hs, he, vs, ve)),
        rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cell_diagnostics_for_velocity_advection_corrector(backend):
    hs, he, vs, ve, nflatlev = 2, NC, 0, NH, 3
    a = _cell_inputs()
    del a["contravariant_correction_at_edges_on_model_levels"], a["wgtfac_c"]
    a["contravariant_correction_at_cells_on_half_levels"] = vp(NC, NH)
    base = dict(horizontal_kinetic_energy_at_cells_on_model_levels=vp(NC, NLEV),
                contravariant_corrected_w_at_cells_on_half_levels=vp(NC, NH))
    got = {n: v.copy() for n, v in base.items()}
    interpolate_horizontal_kinetic_energy_to_cells_and_compute_contravariant_corrected_w(
        **got, **a, nflatlev=nflatlev, nlev=NLEV, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)

    ke = _to_cells(a, a["horizontal_kinetic_energy_at_edges_on_model_levels"])
    check(got, dict(
        horizontal_kinetic_energy_at_cells_on_model_levels=inside(
            ke, base["horizontal_kinetic_energy_at_cells_on_model_levels"], hs, he, vs, ve - 1),
        contravariant_corrected_w_at_cells_on_half_levels=inside(
            _corrected_w(a, a["contravariant_correction_at_cells_on_half_levels"], nflatlev),
            base["contravariant_corrected_w_at_cells_on_half_levels"], hs, he, vs, ve)),
        rtol=1e-6)


# ================================================================== horizontal advection of w
#
# icon4py's compute_khalf_horizontal_advection_of_w: w at vertices (zero
# outside a vertex range), then the horizontal advection term of w on the
# half levels of an edge range.


@gtx.field_operator
def _mo_icon_interpolation_scalar_cells2verts_scalar_ri_dsl(
    p_cell_in: fa.CellKField[wpfloat],
    c_intp: gtx.Field[gtx.Dims[dims.VertexDim, dims.V2CDim], wpfloat],
) -> gtx.Field[gtx.Dims[dims.VertexDim, dims.KDim], wpfloat]:
    p_vert_out = neighbor_sum(c_intp * p_cell_in(V2C), axis=dims.V2CDim)
    return p_vert_out


@gtx.field_operator
def _compute_horizontal_advection_term_for_vertical_velocity(
    vn_ie: fa.EdgeKField[vpfloat],
    inv_dual_edge_length: fa.EdgeField[wpfloat],
    w: fa.CellKField[wpfloat],
    z_vt_ie: fa.EdgeKField[wpfloat],
    inv_primal_edge_length: fa.EdgeField[wpfloat],
    tangent_orientation: fa.EdgeField[wpfloat],
    z_w_v: gtx.Field[gtx.Dims[dims.VertexDim, dims.KDim], wpfloat],
) -> fa.EdgeKField[vpfloat]:
    vn_ie_wp = astype(vn_ie, wpfloat)
    z_v_grad_w_wp = vn_ie_wp * inv_dual_edge_length * (
        w(E2C[0]) - w(E2C[1])
    ) + z_vt_ie * inv_primal_edge_length * tangent_orientation * (z_w_v(E2V[0]) - z_w_v(E2V[1]))
    return astype(z_v_grad_w_wp, vpfloat)


@gtx.field_operator
def _compute_khalf_horizontal_advection_of_w(
    khalf_horizontal_advection_of_w_at_edge: fa.EdgeKField[vpfloat],
    w: fa.CellKField[wpfloat],
    khalf_tangential_wind: fa.EdgeKField[wpfloat],
    khalf_vn: fa.EdgeKField[vpfloat],
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
) -> fa.EdgeKField[vpfloat]:
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
def compute_khalf_horizontal_advection_of_w(
    khalf_horizontal_advection_of_w_at_edge: fa.EdgeKField[vpfloat],
    w: fa.CellKField[wpfloat],
    khalf_tangential_wind: fa.EdgeKField[wpfloat],
    khalf_vn: fa.EdgeKField[vpfloat],
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
    _compute_khalf_horizontal_advection_of_w(
        khalf_horizontal_advection_of_w_at_edge,
        w,
        khalf_tangential_wind,
        khalf_vn,
        c_intp,
        inv_dual_edge_length,
        inv_primal_edge_length,
        tangent_orientation,
        edge,
        vertex,
        lateral_boundary_7,
        halo_1,
        start_vertex_lateral_boundary_level_2,
        end_vertex_halo,
        out=khalf_horizontal_advection_of_w_at_edge,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize(("ranges", "bounds"),
                         [((2, NE - 1, 1, NV - 1), (0, NE, 0, NH)),
                          ((0, NE, 0, NV), (3, NE - 2, 1, NH - 2))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_khalf_horizontal_advection_of_w(backend, ranges, bounds):
    el7, eh, vl2, vh = ranges
    hs, he, vs, ve = bounds
    a = dict(w=RNG.standard_normal((NC, NH)), khalf_tangential_wind=RNG.standard_normal((NE, NH)),
             khalf_vn=vp(NE, NH) - VP(0.5), c_intp=f64(NV, 6),
             inv_dual_edge_length=RNG.uniform(0.5, 2.0, NE),
             inv_primal_edge_length=RNG.uniform(0.5, 2.0, NE),
             tangent_orientation=np.where(RNG.random(NE) < 0.5, -1.0, 1.0),
             edge=np.arange(NE, dtype=np.int32), vertex=np.arange(NV, dtype=np.int32))
    base = vp(NE, NH)
    got = base.copy()
    compute_khalf_horizontal_advection_of_w(
        got, **a, lateral_boundary_7=el7, halo_1=eh, start_vertex_lateral_boundary_level_2=vl2,
        end_vertex_halo=vh, horizontal_start=hs, horizontal_end=he, vertical_start=vs,
        vertical_end=ve, offset_provider=TABLES, backend=backend)

    e2c, e2v = TABLES["E2C"], TABLES["E2V"]
    vr, er = np.arange(NV), np.arange(NE)
    w_v = np.einsum("vn,vnk->vk", a["c_intp"], a["w"][TABLES["V2C"]])
    w_v = np.where(((vl2 <= vr) & (vr < vh))[:, None], w_v, 0.0)
    term = (a["khalf_vn"].astype(np.float64) * a["inv_dual_edge_length"][:, None]
            * (a["w"][e2c[:, 0]] - a["w"][e2c[:, 1]])
            + a["khalf_tangential_wind"]
            * (a["inv_primal_edge_length"] * a["tangent_orientation"])[:, None]
            * (w_v[e2v[:, 0]] - w_v[e2v[:, 1]])).astype(VP)
    want = np.where(((el7 <= er) & (er < eh))[:, None], term, base)
    np.testing.assert_allclose(got, inside(want, base, hs, he, vs, ve), rtol=2e-6, atol=1e-6)


# ================================================================== physics-to-dynamics updates
#
# icon4py's calculate_virtual_temperature_tendency, calculate_exner_tendency,
# calculate_cell_kdim_field_tendency and update_exner_and_theta_v.


class PhysicsConstants:
    """icon4py's constants namespace, read by class attribute."""

    rd: Final[wpfloat] = 287.04
    rv: Final[wpfloat] = 461.51
    cpd: Final[wpfloat] = 1004.64
    p0ref: Final[wpfloat] = 100000.0
    rd_o_cpd: Final[wpfloat] = rd / cpd
    rd_o_p0ref: Final[wpfloat] = rd / p0ref
    rv_o_rd_minus_1: Final[wpfloat] = rv / rd - 1.0


@gtx.field_operator
def _calculate_virtual_temperature_tendency(
    dtime: ta.wpfloat,
    qv: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    qsum = qc + qi + qr + qs + qg

    new_virtual_temperature = temperature * (
        wpfloat("1.0") + PhysicsConstants.rv_o_rd_minus_1 * qv - qsum
    )

    return (new_virtual_temperature - virtual_temperature) / dtime


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def calculate_virtual_temperature_tendency(
    dtime: ta.wpfloat,
    qv: fa.CellKField[ta.wpfloat],
    qc: fa.CellKField[ta.wpfloat],
    qi: fa.CellKField[ta.wpfloat],
    qr: fa.CellKField[ta.wpfloat],
    qs: fa.CellKField[ta.wpfloat],
    qg: fa.CellKField[ta.wpfloat],
    temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature_tendency: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _calculate_virtual_temperature_tendency(
        dtime=dtime,
        qv=qv,
        qc=qc,
        qi=qi,
        qr=qr,
        qs=qs,
        qg=qg,
        temperature=temperature,
        virtual_temperature=virtual_temperature,
        out=virtual_temperature_tendency,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _calculate_exner_tendency(
    dtime: ta.wpfloat,
    virtual_temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature_tendency: fa.CellKField[ta.wpfloat],
    exner: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    new_exner = exner * (
        wpfloat("1.0")
        + PhysicsConstants.rd_o_cpd * virtual_temperature_tendency / virtual_temperature * dtime
    )

    return (new_exner - exner) / dtime


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def calculate_exner_tendency(
    dtime: ta.wpfloat,
    virtual_temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature_tendency: fa.CellKField[ta.wpfloat],
    exner: fa.CellKField[ta.wpfloat],
    exner_tendency: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _calculate_exner_tendency(
        dtime=dtime,
        virtual_temperature=virtual_temperature,
        virtual_temperature_tendency=virtual_temperature_tendency,
        exner=exner,
        out=exner_tendency,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _calculate_cell_kdim_field_tendency(
    dtime: ta.wpfloat,
    old_field: fa.CellKField[ta.wpfloat],
    new_field: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    return (new_field - old_field) / dtime


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def calculate_cell_kdim_field_tendency(
    dtime: ta.wpfloat,
    old_field: fa.CellKField[ta.wpfloat],
    new_field: fa.CellKField[ta.wpfloat],
    tendency: fa.CellKField[ta.wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _calculate_cell_kdim_field_tendency(
        dtime=dtime,
        old_field=old_field,
        new_field=new_field,
        out=tendency,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.field_operator
def _update_exner_and_theta_v(
    rho: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature_tendency: fa.CellKField[ta.wpfloat],
    dtime: ta.wpfloat,
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    new_virtual_temperature = virtual_temperature + virtual_temperature_tendency * dtime
    new_exner = exp(
        PhysicsConstants.rd_o_cpd * log(PhysicsConstants.rd_o_p0ref * rho * new_virtual_temperature)
    )
    new_theta_v = new_virtual_temperature / new_exner
    return new_exner, new_theta_v


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def update_exner_and_theta_v(
    rho: fa.CellKField[ta.wpfloat],
    virtual_temperature: fa.CellKField[ta.wpfloat],
    virtual_temperature_tendency: fa.CellKField[ta.wpfloat],
    dtime: ta.wpfloat,
    exner: fa.CellKField[wpfloat],
    theta_v: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _update_exner_and_theta_v(
        rho=rho,
        virtual_temperature=virtual_temperature,
        virtual_temperature_tendency=virtual_temperature_tendency,
        dtime=dtime,
        out=(exner, theta_v),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("bounds", [(0, NC, 0, NLEV), (1, NC - 1, 2, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_physics_to_dynamics_thermodynamic_update(backend, bounds):
    hs, he, vs, ve = bounds
    c = PhysicsConstants
    dtime = 10.0
    shape = (NC, NLEV)
    q = {n: RNG.uniform(0.0, 1e-3, shape) for n in ("qc", "qi", "qr", "qs", "qg")}
    qv = RNG.uniform(1e-3, 1e-2, shape)
    temperature = RNG.uniform(220.0, 300.0, shape)
    virtual_temperature = temperature * (1.0 + c.rv_o_rd_minus_1 * qv) + RNG.uniform(-1, 1, shape)
    rho = RNG.uniform(0.5, 1.2, shape)
    exner = RNG.uniform(0.8, 1.0, shape)
    dom = dict(horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve)
    run = dict(offset_provider={}, backend=backend)

    base = {n: RNG.standard_normal(shape) for n in ("tv_tend", "ex_tend", "exner", "theta_v",
                                                    "theta_v_tend")}
    got = {n: v.copy() for n, v in base.items()}
    calculate_virtual_temperature_tendency(
        dtime, qv, *(q[n] for n in ("qc", "qi", "qr", "qs", "qg")), temperature,
        virtual_temperature, got["tv_tend"], **dom, **run)
    calculate_exner_tendency(dtime, virtual_temperature, got["tv_tend"], exner, got["ex_tend"],
                             **dom, **run)
    update_exner_and_theta_v(rho=rho, virtual_temperature=virtual_temperature,
                             virtual_temperature_tendency=got["tv_tend"], dtime=dtime,
                             exner=got["exner"], theta_v=got["theta_v"], **dom, **run)
    old_theta_v = virtual_temperature / exner
    calculate_cell_kdim_field_tendency(dtime, old_theta_v, got["theta_v"], got["theta_v_tend"],
                                       **dom, **run)

    qsum = q["qc"] + q["qi"] + q["qr"] + q["qs"] + q["qg"]
    tv_tend = inside((temperature * (1.0 + c.rv_o_rd_minus_1 * qv - qsum) - virtual_temperature)
                     / dtime, base["tv_tend"], hs, he, vs, ve)
    ex_tend = (exner * (1.0 + c.rd_o_cpd * tv_tend / virtual_temperature * dtime) - exner) / dtime
    new_tv = virtual_temperature + tv_tend * dtime
    new_exner = np.exp(c.rd_o_cpd * np.log(c.rd_o_p0ref * rho * new_tv))
    theta_v = inside(new_tv / new_exner, base["theta_v"], hs, he, vs, ve)
    check(got, dict(
        tv_tend=tv_tend, ex_tend=inside(ex_tend, base["ex_tend"], hs, he, vs, ve),
        exner=inside(new_exner, base["exner"], hs, he, vs, ve), theta_v=theta_v,
        theta_v_tend=inside((theta_v - old_theta_v) / dtime, base["theta_v_tend"],
                            hs, he, vs, ve)),
        rtol=1e-10, atol=1e-12)


# ================================================================== perturbed quantities at once
#
# icon4py's newest compute_perturbed_quantities_and_interpolation (formerly
# fused_solve_nonhydro_stencil_1_to_13_predictor): one field operator of
# eleven outputs whose parts are chosen by ``concat_where`` over a cell range
# and a level range at once, the level ranges built from the ``vertical_start``
# and ``vertical_end`` arguments the operator receives beside the program's
# ``domain=`` (the model levels ``vertical_start <= KDim < vertical_end - 1``
# and the surface level ``vertical_end - 1 <= KDim < vertical_end``); inside,
# operators without arguments, conditional expressions on a ``bool`` and on
# an ``int32`` compared with a class attribute read through an instance, and
# a tuple of eleven chosen at once.


class HorizontalPressureDiscretizationType:
    TAYLOR_HYDRO: Final[int] = 3


horzpres_discr_type: Final = HorizontalPressureDiscretizationType()


@gtx.field_operator
def _init_cell_kdim_field_with_zero_wp() -> fa.CellKField[wpfloat]:
    return broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.field_operator
def _init_two_cell_kdim_fields_with_zero_vp() -> tuple[
    fa.CellKField[vpfloat], fa.CellKField[vpfloat]
]:
    return broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)), broadcast(
        vpfloat("0.0"), (dims.CellDim, dims.KDim)
    )


@gtx.field_operator
def _extrapolate_temporally_exner_pressure(
    exner_exfac: fa.CellKField[vpfloat],
    exner: fa.CellKField[wpfloat],
    exner_ref_mc: fa.CellKField[vpfloat],
    exner_pr: fa.CellKField[wpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[wpfloat]]:
    exner_exfac_wp, exner_ref_mc_wp = astype((exner_exfac, exner_ref_mc), wpfloat)
    z_exner_ex_pr_wp = (wpfloat("1.0") + exner_exfac_wp) * (
        exner - exner_ref_mc_wp
    ) - exner_exfac_wp * exner_pr
    exner_pr_wp = exner - exner_ref_mc_wp
    return astype(z_exner_ex_pr_wp, vpfloat), exner_pr_wp


@gtx.field_operator
def _interpolate_to_surface(
    wgtfacq_c: fa.CellKField[vpfloat],
    interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    interpolation_to_surface = (
        wgtfacq_c(Koff[-1]) * interpolant(Koff[-1])
        + wgtfacq_c(Koff[-2]) * interpolant(Koff[-2])
        + wgtfacq_c(Koff[-3]) * interpolant(Koff[-3])
    )
    return interpolation_to_surface


@gtx.field_operator
def _compute_perturbation_of_rho_and_theta(
    rho: fa.CellKField[wpfloat],
    rho_ref_mc: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    rho_ref_mc_wp, theta_ref_mc_wp = astype((rho_ref_mc, theta_ref_mc), wpfloat)
    z_rth_pr_1_wp = rho - rho_ref_mc_wp
    z_rth_pr_2_wp = theta_v - theta_ref_mc_wp
    return astype((z_rth_pr_1_wp, z_rth_pr_2_wp), vpfloat)


@gtx.field_operator
def _compute_perturbation_of_rho_and_theta_and_rho_interface_cell_centers(
    wgtfac_c: fa.CellKField[vpfloat],
    rho: fa.CellKField[wpfloat],
    rho_ref_mc: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    wgtfac_c_wp = astype(wgtfac_c, wpfloat)
    rho_ic_wp = wgtfac_c_wp * rho + (wpfloat("1.0") - wgtfac_c_wp) * rho(Koff[-1])
    z_rth_pr_1, z_rth_pr_2 = _compute_perturbation_of_rho_and_theta(
        rho=rho, rho_ref_mc=rho_ref_mc, theta_v=theta_v, theta_ref_mc=theta_ref_mc
    )
    return rho_ic_wp, z_rth_pr_1, z_rth_pr_2


@gtx.field_operator
def _compute_virtual_potential_temperatures_and_pressure_gradient(
    wgtfac_c: fa.CellKField[vpfloat],
    z_rth_pr_2: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    exner_pr: fa.CellKField[wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[wpfloat], fa.CellKField[vpfloat]]:
    wgtfac_c_wp, ddqz_z_half_wp = astype((wgtfac_c, ddqz_z_half), wpfloat)

    z_theta_v_pr_ic_vp = wgtfac_c * z_rth_pr_2 + (vpfloat("1.0") - wgtfac_c) * z_rth_pr_2(
        Koff[-1]
    )
    theta_v_ic_wp = wgtfac_c_wp * theta_v + (wpfloat("1.0") - wgtfac_c_wp) * theta_v(Koff[-1])
    z_th_ddz_exner_c_wp = vwind_expl_wgt * theta_v_ic_wp * (
        exner_pr(Koff[-1]) - exner_pr
    ) / ddqz_z_half_wp + astype(z_theta_v_pr_ic_vp * d_exner_dz_ref_ic, wpfloat)
    return z_theta_v_pr_ic_vp, theta_v_ic_wp, astype(z_th_ddz_exner_c_wp, vpfloat)


@gtx.field_operator
def _compute_pressure_gradient_and_perturbed_rho_and_potential_temperatures(
    rho: fa.CellKField[wpfloat],
    z_rth_pr_1: fa.CellKField[vpfloat],
    z_rth_pr_2: fa.CellKField[vpfloat],
    rho_ref_mc: fa.CellKField[vpfloat],
    theta_v: fa.CellKField[wpfloat],
    theta_ref_mc: fa.CellKField[vpfloat],
    rho_ic: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    vwind_expl_wgt: fa.CellField[wpfloat],
    exner_pr: fa.CellKField[wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[vpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    z_theta_v_pr_ic: fa.CellKField[vpfloat],
    theta_v_ic: fa.CellKField[wpfloat],
    z_th_ddz_exner_c: fa.CellKField[vpfloat],
) -> tuple[
    fa.CellKField[vpfloat],
    fa.CellKField[vpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[vpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[vpfloat],
]:
    (z_rth_pr_1, z_rth_pr_2) = concat_where(
        dims.KDim == 0,
        _compute_perturbation_of_rho_and_theta(rho, rho_ref_mc, theta_v, theta_ref_mc),
        (z_rth_pr_1, z_rth_pr_2),
    )

    (rho_ic, z_rth_pr_1, z_rth_pr_2) = concat_where(
        dims.KDim >= 1,
        _compute_perturbation_of_rho_and_theta_and_rho_interface_cell_centers(
            wgtfac_c, rho, rho_ref_mc, theta_v, theta_ref_mc
        ),
        (rho_ic, z_rth_pr_1, z_rth_pr_2),
    )

    (z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c) = concat_where(
        dims.KDim >= 1,
        _compute_virtual_potential_temperatures_and_pressure_gradient(
            wgtfac_c,
            z_rth_pr_2,
            theta_v,
            vwind_expl_wgt,
            exner_pr,
            d_exner_dz_ref_ic,
            ddqz_z_half,
        ),
        (z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c),
    )

    return z_rth_pr_1, z_rth_pr_2, rho_ic, z_theta_v_pr_ic, theta_v_ic, z_th_ddz_exner_c


@gtx.field_operator
def _compute_first_vertical_derivative_at_cells(
    cell_kdim_field: fa.CellKField[vpfloat], inv_ddqz_z_full: fa.CellKField[vpfloat]
) -> fa.CellKField[vpfloat]:
    first_vertical_derivative = (cell_kdim_field - cell_kdim_field(Koff[1])) * inv_ddqz_z_full
    return first_vertical_derivative


@gtx.field_operator
def _zero_initialize_for_limited_area_mode(
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    limited_area: bool,
) -> tuple[
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
]:
    (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels) = (
        _init_two_cell_kdim_fields_with_zero_vp()
        if limited_area
        else (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels)
    )

    return (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels)


@gtx.field_operator
def _compute_perturbed_quantities_and_interpolation(
    current_rho: fa.CellKField[ta.wpfloat],
    reference_rho_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    reference_theta_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    wgtfac_c: fa.CellKField[ta.wpfloat],
    vwind_expl_wgt: fa.CellField[ta.wpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    ddqz_z_half: fa.CellKField[ta.wpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    igradp_method: gtx.int32,
    nflatlev: gtx.int32,
) -> tuple[
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
]:
    exner_at_cells_on_half_levels = (
        concat_where(
            (maximum(1, nflatlev) <= dims.KDim),
            _interpolate_cell_field_to_half_levels_vp(
                wgtfac_c=wgtfac_c, interpolant=temporal_extrapolation_of_perturbed_exner
            ),
            exner_at_cells_on_half_levels,
        )
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else exner_at_cells_on_half_levels
    )

    (
        perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels,
        rho_at_cells_on_half_levels,
        perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels,
        pressure_buoyancy_acceleration_at_cells_on_half_levels,
    ) = _compute_pressure_gradient_and_perturbed_rho_and_potential_temperatures(
        rho=current_rho,
        z_rth_pr_1=perturbed_rho_at_cells_on_model_levels,
        z_rth_pr_2=perturbed_theta_v_at_cells_on_model_levels,
        rho_ref_mc=reference_rho_at_cells_on_model_levels,
        theta_v=current_theta_v,
        theta_ref_mc=reference_theta_at_cells_on_model_levels,
        rho_ic=rho_at_cells_on_half_levels,
        wgtfac_c=wgtfac_c,
        vwind_expl_wgt=vwind_expl_wgt,
        exner_pr=perturbed_exner_at_cells_on_model_levels,
        d_exner_dz_ref_ic=ddz_of_reference_exner_at_cells_on_half_levels,
        ddqz_z_half=ddqz_z_half,
        z_theta_v_pr_ic=perturbed_theta_v_at_cells_on_half_levels,
        theta_v_ic=theta_v_at_cells_on_half_levels,
        z_th_ddz_exner_c=pressure_buoyancy_acceleration_at_cells_on_half_levels,
    )

    perturbed_theta_v_at_cells_on_half_levels = concat_where(
        dims.KDim == 0,
        broadcast(0.0, (dims.CellDim, dims.KDim)),
        perturbed_theta_v_at_cells_on_half_levels,
    )

    return (
        perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels,
        temporal_extrapolation_of_perturbed_exner,
        perturbed_exner_at_cells_on_model_levels,
        rho_at_cells_on_half_levels,
        exner_at_cells_on_half_levels,
        perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels,
        pressure_buoyancy_acceleration_at_cells_on_half_levels,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
    )


@gtx.field_operator
def _surface_computations(
    wgtfacq_c: fa.CellKField[ta.wpfloat],
    exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    igradp_method: gtx.int32,
) -> tuple[
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
]:
    temporal_extrapolation_of_perturbed_exner = _init_cell_kdim_field_with_zero_wp()

    exner_at_cells_on_half_levels = (
        _interpolate_to_surface(
            wgtfacq_c=wgtfacq_c, interpolant=temporal_extrapolation_of_perturbed_exner
        )
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else exner_at_cells_on_half_levels
    )

    return (
        temporal_extrapolation_of_perturbed_exner,
        exner_at_cells_on_half_levels,
    )


@gtx.field_operator
def _compute_first_and_second_vertical_derivative_of_exner(
    exner_at_cells_on_half_levels: fa.CellKField[vpfloat],
    inv_ddqz_z_full: fa.CellKField[vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[vpfloat],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[vpfloat],
    d2dexdz2_fac1_mc: fa.CellKField[vpfloat],
    d2dexdz2_fac2_mc: fa.CellKField[vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[vpfloat],
    igradp_method: gtx.int32,
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
) -> tuple[
    fa.CellKField[vpfloat],
    fa.CellKField[vpfloat],
]:
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels = (
        concat_where(
            (nflatlev <= dims.KDim),
            _compute_first_vertical_derivative_at_cells(
                exner_at_cells_on_half_levels, inv_ddqz_z_full
            ),
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        )
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels
    )

    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels = (
        concat_where(
            (nflat_gradp <= dims.KDim),
            -vpfloat("0.5")
            * (
                (
                    perturbed_theta_v_at_cells_on_half_levels
                    - perturbed_theta_v_at_cells_on_half_levels(Koff[1])
                )
                * d2dexdz2_fac1_mc
                + perturbed_theta_v_at_cells_on_model_levels * d2dexdz2_fac2_mc
            ),
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        )
        if igradp_method == horzpres_discr_type.TAYLOR_HYDRO
        else d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels
    )

    return (
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
    )


@gtx.field_operator
def _set_theta_v_and_exner_on_surface_level(
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[vpfloat],
    wgtfacq_c: fa.CellKField[vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[vpfloat],
    reference_theta_at_cells_on_half_levels: fa.CellKField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[wpfloat], fa.CellKField[vpfloat]]:
    perturbed_theta_v_at_cells_on_half_levels = _interpolate_to_surface(
        wgtfacq_c=wgtfacq_c, interpolant=perturbed_theta_v_at_cells_on_model_levels
    )
    theta_v_at_cells_on_half_levels = (
        reference_theta_at_cells_on_half_levels + perturbed_theta_v_at_cells_on_half_levels
    )

    exner_at_cells_on_half_levels = _interpolate_to_surface(
        wgtfacq_c=wgtfacq_c, interpolant=temporal_extrapolation_of_perturbed_exner
    )

    return (
        perturbed_theta_v_at_cells_on_half_levels,
        astype(theta_v_at_cells_on_half_levels, wpfloat),
        exner_at_cells_on_half_levels,
    )


@gtx.field_operator
def _compute_perturbed_quantities_and_interpolation_wrapper(
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    reference_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    reference_theta_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    reference_theta_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    wgtfacq_c: fa.CellKField[ta.vpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    vwind_expl_wgt: fa.CellField[ta.wpfloat],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    time_extrapolation_parameter_for_exner: fa.CellKField[ta.vpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.wpfloat],
    d2dexdz2_fac1_mc: fa.CellKField[ta.vpfloat],
    d2dexdz2_fac2_mc: fa.CellKField[ta.vpfloat],
    limited_area: bool,
    igradp_method: gtx.int32,
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
    start_cell_lateral_boundary: gtx.int32,
    start_cell_lateral_boundary_level_3: gtx.int32,
    start_cell_halo_level_2: gtx.int32,
    end_cell_halo: gtx.int32,
    end_cell_halo_level_2: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> tuple[
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.vpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels) = (
        concat_where(
            (start_cell_halo_level_2 <= dims.CellDim)
            & (dims.CellDim < start_cell_lateral_boundary_level_3)
            & (vertical_start <= dims.KDim)
            & (dims.KDim < (vertical_end - 1)),
            _zero_initialize_for_limited_area_mode(
                temporal_extrapolation_of_perturbed_exner,
                perturbed_exner_at_cells_on_model_levels,
                limited_area,
            ),
            (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels),
        )
    )

    (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels) = (
        concat_where(
            (start_cell_lateral_boundary_level_3 <= dims.CellDim)
            & (dims.CellDim < end_cell_halo)
            & (vertical_start <= dims.KDim)
            & (dims.KDim < (vertical_end - 1)),
            _extrapolate_temporally_exner_pressure(
                time_extrapolation_parameter_for_exner,
                current_exner,
                reference_exner_at_cells_on_model_levels,
                perturbed_exner_at_cells_on_model_levels,
            ),
            (temporal_extrapolation_of_perturbed_exner, perturbed_exner_at_cells_on_model_levels),
        )
    )

    (temporal_extrapolation_of_perturbed_exner, exner_at_cells_on_half_levels) = concat_where(
        (start_cell_lateral_boundary_level_3 <= dims.CellDim)
        & (dims.CellDim < end_cell_halo)
        & ((vertical_end - 1) <= dims.KDim)
        & (dims.KDim < vertical_end),
        _surface_computations(wgtfacq_c, exner_at_cells_on_half_levels, igradp_method),
        (temporal_extrapolation_of_perturbed_exner, exner_at_cells_on_half_levels),
    )

    (
        perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels,
        temporal_extrapolation_of_perturbed_exner,
        perturbed_exner_at_cells_on_model_levels,
        rho_at_cells_on_half_levels,
        exner_at_cells_on_half_levels,
        perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels,
        pressure_buoyancy_acceleration_at_cells_on_half_levels,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
    ) = concat_where(
        (start_cell_lateral_boundary_level_3 <= dims.CellDim)
        & (dims.CellDim < end_cell_halo)
        & (vertical_start <= dims.KDim)
        & (dims.KDim < (vertical_end - 1)),
        _compute_perturbed_quantities_and_interpolation(
            current_rho,
            reference_rho_at_cells_on_model_levels,
            current_theta_v,
            reference_theta_at_cells_on_model_levels,
            perturbed_rho_at_cells_on_model_levels,
            perturbed_theta_v_at_cells_on_model_levels,
            perturbed_theta_v_at_cells_on_half_levels,
            wgtfac_c,
            vwind_expl_wgt,
            perturbed_exner_at_cells_on_model_levels,
            ddz_of_reference_exner_at_cells_on_half_levels,
            ddqz_z_half,
            pressure_buoyancy_acceleration_at_cells_on_half_levels,
            rho_at_cells_on_half_levels,
            exner_at_cells_on_half_levels,
            temporal_extrapolation_of_perturbed_exner,
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            theta_v_at_cells_on_half_levels,
            igradp_method,
            nflatlev,
        ),
        (
            perturbed_rho_at_cells_on_model_levels,
            perturbed_theta_v_at_cells_on_model_levels,
            temporal_extrapolation_of_perturbed_exner,
            perturbed_exner_at_cells_on_model_levels,
            rho_at_cells_on_half_levels,
            exner_at_cells_on_half_levels,
            perturbed_theta_v_at_cells_on_half_levels,
            theta_v_at_cells_on_half_levels,
            pressure_buoyancy_acceleration_at_cells_on_half_levels,
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        ),
    )

    (
        perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels,
        exner_at_cells_on_half_levels,
    ) = concat_where(
        (start_cell_lateral_boundary_level_3 <= dims.CellDim)
        & (dims.CellDim < end_cell_halo)
        & ((vertical_end - 1) <= dims.KDim)
        & (dims.KDim < vertical_end),
        _set_theta_v_and_exner_on_surface_level(
            temporal_extrapolation_of_perturbed_exner,
            wgtfacq_c,
            perturbed_theta_v_at_cells_on_model_levels,
            reference_theta_at_cells_on_half_levels,
        ),
        (
            perturbed_theta_v_at_cells_on_half_levels,
            theta_v_at_cells_on_half_levels,
            exner_at_cells_on_half_levels,
        ),
    )

    (
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
    ) = concat_where(
        (start_cell_lateral_boundary_level_3 <= dims.CellDim)
        & (dims.CellDim < end_cell_halo)
        & (vertical_start <= dims.KDim)
        & (dims.KDim < (vertical_end - 1)),
        _compute_first_and_second_vertical_derivative_of_exner(
            exner_at_cells_on_half_levels,
            inv_ddqz_z_full,
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            perturbed_theta_v_at_cells_on_half_levels,
            d2dexdz2_fac1_mc,
            d2dexdz2_fac2_mc,
            perturbed_theta_v_at_cells_on_model_levels,
            igradp_method,
            nflatlev,
            nflat_gradp,
        ),
        (
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        ),
    )

    (
        perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels,
    ) = concat_where(
        (start_cell_halo_level_2 <= dims.CellDim)
        & (dims.CellDim < end_cell_halo_level_2)
        & (vertical_start <= dims.KDim)
        & (dims.KDim < (vertical_end - 1)),
        _compute_perturbation_of_rho_and_theta(
            rho=current_rho,
            rho_ref_mc=reference_rho_at_cells_on_model_levels,
            theta_v=current_theta_v,
            theta_ref_mc=reference_theta_at_cells_on_model_levels,
        ),
        (
            perturbed_rho_at_cells_on_model_levels,
            perturbed_theta_v_at_cells_on_model_levels,
        ),
    )

    return (
        temporal_extrapolation_of_perturbed_exner,
        perturbed_exner_at_cells_on_model_levels,
        exner_at_cells_on_half_levels,
        perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels,
        rho_at_cells_on_half_levels,
        perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels,
        pressure_buoyancy_acceleration_at_cells_on_half_levels,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
    )


_PERTURBED_OUTPUTS = (
    "temporal_extrapolation_of_perturbed_exner",
    "perturbed_exner_at_cells_on_model_levels",
    "exner_at_cells_on_half_levels",
    "perturbed_rho_at_cells_on_model_levels",
    "perturbed_theta_v_at_cells_on_model_levels",
    "rho_at_cells_on_half_levels",
    "perturbed_theta_v_at_cells_on_half_levels",
    "theta_v_at_cells_on_half_levels",
    "pressure_buoyancy_acceleration_at_cells_on_half_levels",
    "ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels",
    "d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels",
)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_perturbed_quantities_and_interpolation(
    temporal_extrapolation_of_perturbed_exner: fa.CellKField[ta.vpfloat],
    ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_exner_at_cells_on_model_levels: fa.CellKField[ta.wpfloat],
    exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    perturbed_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    perturbed_theta_v_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    rho_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    perturbed_theta_v_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    theta_v_at_cells_on_half_levels: fa.CellKField[ta.wpfloat],
    current_rho: fa.CellKField[ta.wpfloat],
    reference_rho_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    current_theta_v: fa.CellKField[ta.wpfloat],
    reference_theta_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    reference_theta_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    wgtfacq_c: fa.CellKField[ta.vpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat],
    vwind_expl_wgt: fa.CellField[ta.wpfloat],
    ddz_of_reference_exner_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    ddqz_z_half: fa.CellKField[ta.vpfloat],
    pressure_buoyancy_acceleration_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    time_extrapolation_parameter_for_exner: fa.CellKField[ta.vpfloat],
    current_exner: fa.CellKField[ta.wpfloat],
    reference_exner_at_cells_on_model_levels: fa.CellKField[ta.vpfloat],
    inv_ddqz_z_full: fa.CellKField[ta.wpfloat],
    d2dexdz2_fac1_mc: fa.CellKField[ta.vpfloat],
    d2dexdz2_fac2_mc: fa.CellKField[ta.vpfloat],
    limited_area: bool,
    igradp_method: gtx.int32,
    nflatlev: gtx.int32,
    nflat_gradp: gtx.int32,
    start_cell_lateral_boundary: gtx.int32,
    start_cell_lateral_boundary_level_3: gtx.int32,
    start_cell_halo_level_2: gtx.int32,
    end_cell_halo: gtx.int32,
    end_cell_halo_level_2: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    """Formerly known as fused_solve_nonhydro_stencil_1_to_13_predictor."""

    _compute_perturbed_quantities_and_interpolation_wrapper(
        temporal_extrapolation_of_perturbed_exner=temporal_extrapolation_of_perturbed_exner,
        ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels=d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        perturbed_exner_at_cells_on_model_levels=perturbed_exner_at_cells_on_model_levels,
        exner_at_cells_on_half_levels=exner_at_cells_on_half_levels,
        perturbed_rho_at_cells_on_model_levels=perturbed_rho_at_cells_on_model_levels,
        perturbed_theta_v_at_cells_on_model_levels=perturbed_theta_v_at_cells_on_model_levels,
        rho_at_cells_on_half_levels=rho_at_cells_on_half_levels,
        perturbed_theta_v_at_cells_on_half_levels=perturbed_theta_v_at_cells_on_half_levels,
        theta_v_at_cells_on_half_levels=theta_v_at_cells_on_half_levels,
        current_rho=current_rho,
        reference_rho_at_cells_on_model_levels=reference_rho_at_cells_on_model_levels,
        current_theta_v=current_theta_v,
        reference_theta_at_cells_on_model_levels=reference_theta_at_cells_on_model_levels,
        reference_theta_at_cells_on_half_levels=reference_theta_at_cells_on_half_levels,
        wgtfacq_c=wgtfacq_c,
        wgtfac_c=wgtfac_c,
        vwind_expl_wgt=vwind_expl_wgt,
        ddz_of_reference_exner_at_cells_on_half_levels=ddz_of_reference_exner_at_cells_on_half_levels,
        ddqz_z_half=ddqz_z_half,
        pressure_buoyancy_acceleration_at_cells_on_half_levels=pressure_buoyancy_acceleration_at_cells_on_half_levels,
        time_extrapolation_parameter_for_exner=time_extrapolation_parameter_for_exner,
        current_exner=current_exner,
        reference_exner_at_cells_on_model_levels=reference_exner_at_cells_on_model_levels,
        inv_ddqz_z_full=inv_ddqz_z_full,
        d2dexdz2_fac1_mc=d2dexdz2_fac1_mc,
        d2dexdz2_fac2_mc=d2dexdz2_fac2_mc,
        limited_area=limited_area,
        igradp_method=igradp_method,
        nflatlev=nflatlev,
        nflat_gradp=nflat_gradp,
        start_cell_lateral_boundary=start_cell_lateral_boundary,
        start_cell_lateral_boundary_level_3=start_cell_lateral_boundary_level_3,
        start_cell_halo_level_2=start_cell_halo_level_2,
        end_cell_halo=end_cell_halo,
        end_cell_halo_level_2=end_cell_halo_level_2,
        horizontal_start=horizontal_start,
        horizontal_end=horizontal_end,
        vertical_start=vertical_start,
        vertical_end=vertical_end,
        out=(
            temporal_extrapolation_of_perturbed_exner,
            perturbed_exner_at_cells_on_model_levels,
            exner_at_cells_on_half_levels,
            perturbed_rho_at_cells_on_model_levels,
            perturbed_theta_v_at_cells_on_model_levels,
            rho_at_cells_on_half_levels,
            perturbed_theta_v_at_cells_on_half_levels,
            theta_v_at_cells_on_half_levels,
            pressure_buoyancy_acceleration_at_cells_on_half_levels,
            ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
            d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _up(x, n=1):
    """Level k takes level k - n (NaN above)."""
    out = np.full(x.shape, np.nan)
    out[:, n:] = x[:, :-n]
    return out


def _down(x):
    """Level k takes level k + 1 (NaN below)."""
    out = np.full(x.shape, np.nan)
    out[:, :-1] = x[:, 1:]
    return out


def _perturbed_quantities_numpy(g, base, limited_area, taylor, nflatlev, nflat_gradp,
                                h2, lb3, e_halo, e_h2, vs, ve):
    o = types.SimpleNamespace(**{n: np.array(v) for n, v in base.items()})
    kk, cr = np.arange(NH), np.arange(NC)
    levels = (vs <= kk) & (kk < ve - 1)
    surface = kk == ve - 1

    def on(lo, hi, lev):
        return ((lo <= cr) & (cr < hi))[:, None] & lev[None, :]

    model_h2, model, top = on(h2, lb3, levels), on(lb3, e_halo, levels), on(lb3, e_halo, surface)
    # the zeros for limited areas, then the temporal extrapolation
    if limited_area:
        o.temporal_extrapolation_of_perturbed_exner[model_h2] = 0.0
        o.perturbed_exner_at_cells_on_model_levels[model_h2] = 0.0
    exfac = g.time_extrapolation_parameter_for_exner
    pr_now = g.current_exner - g.reference_exner_at_cells_on_model_levels
    tex = (1.0 + exfac) * pr_now - exfac * o.perturbed_exner_at_cells_on_model_levels
    o.temporal_extrapolation_of_perturbed_exner = np.where(
        model, tex, o.temporal_extrapolation_of_perturbed_exner)
    o.perturbed_exner_at_cells_on_model_levels = np.where(
        model, pr_now, o.perturbed_exner_at_cells_on_model_levels)
    # the surface: a zero extrapolation, the Exner pressure from it
    o.temporal_extrapolation_of_perturbed_exner[top] = 0.0
    if taylor:
        o.exner_at_cells_on_half_levels[top] = 0.0
    # the perturbed quantities on the model levels
    w, tex = g.wgtfac_c, o.temporal_extrapolation_of_perturbed_exner
    if taylor:
        exner_ic = np.where(kk >= max(1, nflatlev), w * tex + (1.0 - w) * _up(tex),
                            o.exner_at_cells_on_half_levels)
        o.exner_at_cells_on_half_levels = np.where(model, exner_ic,
                                                   o.exner_at_cells_on_half_levels)
    rho, theta = g.current_rho, g.current_theta_v
    p_rho = rho - g.reference_rho_at_cells_on_model_levels
    p_th = theta - g.reference_theta_at_cells_on_model_levels
    first = kk >= 1
    rho_ic = np.where(first, w * rho + (1.0 - w) * _up(rho), o.rho_at_cells_on_half_levels)
    th_pr_ic = np.where(first, w * p_th + (1.0 - w) * _up(p_th),
                        o.perturbed_theta_v_at_cells_on_half_levels)
    th_ic = np.where(first, w * theta + (1.0 - w) * _up(theta),
                     o.theta_v_at_cells_on_half_levels)
    pex = o.perturbed_exner_at_cells_on_model_levels
    ddz = np.where(first, g.vwind_expl_wgt[:, None] * th_ic * (_up(pex) - pex) / g.ddqz_z_half
                   + th_pr_ic * g.ddz_of_reference_exner_at_cells_on_half_levels,
                   o.pressure_buoyancy_acceleration_at_cells_on_half_levels)
    th_pr_ic = np.where(kk == 0, 0.0, th_pr_ic)
    for name, new in (("perturbed_rho_at_cells_on_model_levels", p_rho),
                      ("perturbed_theta_v_at_cells_on_model_levels", p_th),
                      ("rho_at_cells_on_half_levels", rho_ic),
                      ("perturbed_theta_v_at_cells_on_half_levels", th_pr_ic),
                      ("theta_v_at_cells_on_half_levels", th_ic),
                      ("pressure_buoyancy_acceleration_at_cells_on_half_levels", ddz)):
        setattr(o, name, np.where(model, new, getattr(o, name)))
    # theta_v and the Exner pressure on the surface level

    def to_surface(x):
        return sum(_up(g.wgtfacq_c, j) * _up(x, j) for j in (1, 2, 3))

    th_pr_surface = to_surface(o.perturbed_theta_v_at_cells_on_model_levels)
    o.perturbed_theta_v_at_cells_on_half_levels = np.where(
        top, th_pr_surface, o.perturbed_theta_v_at_cells_on_half_levels)
    o.theta_v_at_cells_on_half_levels = np.where(
        top, g.reference_theta_at_cells_on_half_levels + th_pr_surface,
        o.theta_v_at_cells_on_half_levels)
    o.exner_at_cells_on_half_levels = np.where(
        top, to_surface(o.temporal_extrapolation_of_perturbed_exner),
        o.exner_at_cells_on_half_levels)
    # the vertical derivatives of the Exner pressure
    if taylor:
        e_ic = o.exner_at_cells_on_half_levels
        th_pr_ic = o.perturbed_theta_v_at_cells_on_half_levels
        name = "ddz_of_temporal_extrapolation_of_perturbed_exner_on_model_levels"
        setattr(o, name, np.where(model & (kk >= nflatlev),
                                  (e_ic - _down(e_ic)) * g.inv_ddqz_z_full, getattr(o, name)))
        name = "d2dz2_of_temporal_extrapolation_of_perturbed_exner_on_model_levels"
        d2 = -0.5 * ((th_pr_ic - _down(th_pr_ic)) * g.d2dexdz2_fac1_mc
                     + o.perturbed_theta_v_at_cells_on_model_levels * g.d2dexdz2_fac2_mc)
        setattr(o, name, np.where(model & (kk >= nflat_gradp), d2, getattr(o, name)))
    # the perturbations again on the halo cells
    halo = on(h2, e_h2, levels)
    o.perturbed_rho_at_cells_on_model_levels = np.where(
        halo, p_rho, o.perturbed_rho_at_cells_on_model_levels)
    o.perturbed_theta_v_at_cells_on_model_levels = np.where(
        halo, p_th, o.perturbed_theta_v_at_cells_on_model_levels)
    return vars(o)


@pytest.mark.parametrize(("limited_area", "igradp_method", "bounds"),
                         [(True, 3, (0, NC, 0, NH)), (False, 3, (1, NC - 1, 1, NH)),
                          (True, 2, (0, NC, 2, NH - 1))])
@pytest.mark.parametrize("backend", BACKENDS)
def test_compute_perturbed_quantities_and_interpolation(backend, limited_area, igradp_method,
                                                        bounds):
    hs, he, vs, ve = bounds
    h2, lb3, e_halo, e_h2, nflatlev, nflat_gradp = 1, 3, 6, 7, 2, 4
    s = (NC, NH)
    ins = dict(current_rho=f64(*s) + 1.0, reference_rho_at_cells_on_model_levels=f64(*s),
               current_theta_v=f64(*s) + 2.0, reference_theta_at_cells_on_model_levels=f64(*s),
               reference_theta_at_cells_on_half_levels=f64(*s), wgtfacq_c=f64(*s),
               wgtfac_c=f64(*s), vwind_expl_wgt=f64(NC),
               ddz_of_reference_exner_at_cells_on_half_levels=f64(*s),
               ddqz_z_half=f64(*s) + 0.5, time_extrapolation_parameter_for_exner=f64(*s),
               current_exner=f64(*s), reference_exner_at_cells_on_model_levels=f64(*s),
               inv_ddqz_z_full=f64(*s) + 0.5, d2dexdz2_fac1_mc=f64(*s), d2dexdz2_fac2_mc=f64(*s))
    base = {n: RNG.standard_normal(s) for n in _PERTURBED_OUTPUTS}
    got = {n: v.copy() for n, v in base.items()}
    compute_perturbed_quantities_and_interpolation(
        **got, **ins, limited_area=limited_area, igradp_method=igradp_method,
        nflatlev=nflatlev, nflat_gradp=nflat_gradp, start_cell_lateral_boundary=0,
        start_cell_lateral_boundary_level_3=lb3, start_cell_halo_level_2=h2,
        end_cell_halo=e_halo, end_cell_halo_level_2=e_h2, horizontal_start=hs,
        horizontal_end=he, vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
        backend=backend)

    want = _perturbed_quantities_numpy(
        types.SimpleNamespace(**ins), base, limited_area, igradp_method == 3, nflatlev,
        nflat_gradp, h2, lb3, e_halo, e_h2, vs, ve)
    check(got, {n: inside(want[n], base[n], hs, he, vs, ve) for n in _PERTURBED_OUTPUTS},
          rtol=1e-12, atol=1e-12)


# ================================================================== turbulent budgets
#
# icon4py's solve_turb_budgets (turbulence, section 3 of turbdiff): five
# statements on two vertical domains (one of them ``vertical_end + 1``), the
# later statements reading what the earlier ones wrote, a field operator
# called from two others with keyword arguments, a ``where`` choosing between
# two solutions of which the unchosen one may be NaN, and a caller that passes
# the same array as an input of the third statement and the output of the
# fourth (the order of the statements then decides the result).


@gtx.field_operator
def _effective_tke_forcing(
    stability_length_for_momentum: fa.CellKField[wpfloat],
    stability_length_for_scalars: fa.CellKField[wpfloat],
    mechanical_forcing: fa.CellKField[wpfloat],
    thermal_forcing: fa.CellKField[wpfloat],
    frcsecu: wpfloat,
    rim: wpfloat,
) -> fa.CellKField[wpfloat]:
    shear_production = stability_length_for_momentum * mechanical_forcing
    buoyancy_loss = stability_length_for_scalars * thermal_forcing
    return maximum(shear_production - buoyancy_loss, frcsecu * rim * shear_production)


@gtx.field_operator
def _compute_turbulent_velocity_scale(
    master_length_scale: fa.CellKField[wpfloat],
    stability_length_for_momentum: fa.CellKField[wpfloat],
    stability_length_for_scalars: fa.CellKField[wpfloat],
    mechanical_forcing: fa.CellKField[wpfloat],
    thermal_forcing: fa.CellKField[wpfloat],
    previous_velocity_scale: fa.CellKField[wpfloat],
    transport_tendency: fa.CellKField[wpfloat],
    d_m: wpfloat,
    d_4: wpfloat,
    b_m: wpfloat,
    rim: wpfloat,
    frcsecu: wpfloat,
    tkesecu: wpfloat,
    tkesmot: wpfloat,
    vel_min: wpfloat,
    tke_time_step: wpfloat,
    inverse_tke_time_step: wpfloat,
) -> fa.CellKField[wpfloat]:
    dissipation_length = master_length_scale * d_m
    forcing_length = master_length_scale * d_4 * (wpfloat("1.0") / b_m)
    forcing = _effective_tke_forcing(
        stability_length_for_momentum=stability_length_for_momentum,
        stability_length_for_scalars=stability_length_for_scalars,
        mechanical_forcing=mechanical_forcing,
        thermal_forcing=thermal_forcing,
        frcsecu=frcsecu,
        rim=rim,
    )

    q1 = dissipation_length * inverse_tke_time_step
    q2 = (
        maximum(wpfloat("0.0"), previous_velocity_scale + transport_tendency * tke_time_step)
        + forcing * tke_time_step
    )
    updated = (
        q1 * (sqrt(wpfloat("1.0") + wpfloat("4.0") * q2 / q1) - wpfloat("1.0")) * wpfloat("0.5")
    )

    equilibrium_floor = sqrt(forcing_length * maximum(forcing, wpfloat("0.0")))
    smoothed = tkesmot * previous_velocity_scale + (wpfloat("1.0") - tkesmot) * updated
    return maximum(maximum(tkesecu * vel_min, tkesecu * equilibrium_floor), smoothed)


@gtx.field_operator
def _compute_stability_lengths(
    master_length_scale: fa.CellKField[wpfloat],
    stability_length_for_momentum: fa.CellKField[wpfloat],
    stability_length_for_scalars: fa.CellKField[wpfloat],
    mechanical_forcing: fa.CellKField[wpfloat],
    thermal_forcing: fa.CellKField[wpfloat],
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    a_h: wpfloat,
    a_m: wpfloat,
    b_h: wpfloat,
    b_m: wpfloat,
    d_m: wpfloat,
    d_1: wpfloat,
    d_2: wpfloat,
    d_3: wpfloat,
    d_4: wpfloat,
    d_5: wpfloat,
    d_6: wpfloat,
    rim: wpfloat,
    frcsecu: wpfloat,
    stbsecu: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    forcing = _effective_tke_forcing(
        stability_length_for_momentum=stability_length_for_momentum,
        stability_length_for_scalars=stability_length_for_scalars,
        mechanical_forcing=mechanical_forcing,
        thermal_forcing=thermal_forcing,
        frcsecu=frcsecu,
        rim=rim,
    )

    turbulent_time_scale = master_length_scale / turbulent_velocity_scale
    tim2 = turbulent_time_scale * turbulent_time_scale
    gh = thermal_forcing * tim2
    gm = mechanical_forcing * tim2

    a11 = d_1 + (d_5 - d_4) * gh
    a12 = d_4 * gm
    a21 = (d_6 - d_4) * gh
    a22 = d_2 + d_3 * gh + d_4 * gm

    determinant = a11 * a22 - a12 * a21
    numerator_h = b_h * a22 - b_m * a12
    numerator_m = b_m * a11 - b_h * a21
    inverse_determinant = wpfloat("1.0") / determinant

    gam0 = stbsecu / d_m + (wpfloat("1.0") - stbsecu) * b_m / d_4
    gama = minimum(gam0, forcing * tim2 / master_length_scale)
    wert = d_4 * gama
    bb1 = (b_h - wert) * a_h
    bb2 = (b_m - wert) * a_m
    a3 = d_3 * gama * a_m
    a5 = d_5 * gama * a_h
    a6 = d_6 * gama * a_m

    val1 = (mechanical_forcing * bb2 + (a5 - a3 + bb1) * thermal_forcing) / (wpfloat("2.0") * bb1)
    val2 = val1 + sqrt(val1 * val1 - (a6 + bb2) * thermal_forcing * mechanical_forcing / bb1)
    fakt = thermal_forcing / (val2 - thermal_forcing)
    corrected_h = bb1 - a5 * fakt
    corrected_m = corrected_h * (bb2 - a6 * fakt) / (bb1 - (a5 - a3) * fakt)

    solvable = (
        (thermal_forcing >= wpfloat("0.0"))
        & (determinant > wpfloat("0.0"))
        & (numerator_h > wpfloat("0.0"))
        & (numerator_m > wpfloat("0.0"))
    )
    sh = where(solvable, numerator_h * inverse_determinant, corrected_h)
    sm = where(solvable, numerator_m * inverse_determinant, corrected_m)
    return master_length_scale * sm, master_length_scale * sh


@gtx.field_operator
def _compute_circulation_acceleration(
    cloud_cover: fa.CellKField[wpfloat],
    master_length_scale: fa.CellKField[wpfloat],
    thermal_forcing: fa.CellKField[wpfloat],
    half_level_pressure: fa.CellKField[wpfloat],
    air_density: fa.CellKField[wpfloat],
    pattern_length_scale: fa.CellField[wpfloat],
    horizontal_grid_scale: fa.CellField[wpfloat],
    gravitational_acceleration: wpfloat,
) -> fa.CellKField[wpfloat]:
    coherence_factor = wpfloat("1.0") - wpfloat("2.0") * abs(cloud_cover - wpfloat("0.5"))
    coherence_length = maximum(
        pattern_length_scale,
        sqrt(coherence_factor * master_length_scale * horizontal_grid_scale),
    )
    virtual_temperature_gradient = (
        thermal_forcing
        * half_level_pressure
        / (air_density * (gravitational_acceleration * gravitational_acceleration))
    )
    coherence_length = coherence_length * maximum(
        -wpfloat("1.0"), minimum(virtual_temperature_gradient, wpfloat("1.0"))
    )
    return coherence_length * thermal_forcing


@gtx.field_operator
def _compute_supersaturation_standard_deviation(
    master_length_scale: fa.CellKField[wpfloat],
    stability_length_for_scalars: fa.CellKField[wpfloat],
    exner_factor: fa.CellKField[wpfloat],
    saturation_humidity_derivative: fa.CellKField[wpfloat],
    gradient_of_liquid_water_potential_temperature: fa.CellKField[wpfloat],
    gradient_of_total_water: fa.CellKField[wpfloat],
    d_h: wpfloat,
) -> fa.CellKField[wpfloat]:
    length_scale = sqrt(master_length_scale * stability_length_for_scalars * d_h)
    supersaturation_gradient = (
        exner_factor
        * saturation_humidity_derivative
        * gradient_of_liquid_water_potential_temperature
        - gradient_of_total_water
    )
    return length_scale * abs(supersaturation_gradient)


@gtx.field_operator
def _compute_diffusion_coefficients_from_stability_lengths(
    stability_length_for_momentum: fa.CellKField[wpfloat],
    stability_length_for_scalars: fa.CellKField[wpfloat],
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    molecular_diffusivity_for_scalars: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    return (
        stability_length_for_momentum * turbulent_velocity_scale,
        maximum(
            stability_length_for_scalars * turbulent_velocity_scale,
            molecular_diffusivity_for_scalars,
        ),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def solve_turb_budgets(
    master_length_scale: fa.CellKField[wpfloat],
    stability_length_for_momentum: fa.CellKField[wpfloat],
    stability_length_for_scalars: fa.CellKField[wpfloat],
    mechanical_forcing: fa.CellKField[wpfloat],
    thermal_forcing: fa.CellKField[wpfloat],
    previous_velocity_scale: fa.CellKField[wpfloat],
    transport_tendency: fa.CellKField[wpfloat],
    cloud_cover: fa.CellKField[wpfloat],
    half_level_pressure: fa.CellKField[wpfloat],
    air_density: fa.CellKField[wpfloat],
    exner_factor: fa.CellKField[wpfloat],
    saturation_humidity_derivative: fa.CellKField[wpfloat],
    gradient_of_liquid_water_potential_temperature: fa.CellKField[wpfloat],
    gradient_of_total_water: fa.CellKField[wpfloat],
    pattern_length_scale: fa.CellField[wpfloat],
    horizontal_grid_scale: fa.CellField[wpfloat],
    a_h: wpfloat,
    a_m: wpfloat,
    b_h: wpfloat,
    b_m: wpfloat,
    d_h: wpfloat,
    d_m: wpfloat,
    d_1: wpfloat,
    d_2: wpfloat,
    d_3: wpfloat,
    d_4: wpfloat,
    d_5: wpfloat,
    d_6: wpfloat,
    rim: wpfloat,
    frcsecu: wpfloat,
    stbsecu: wpfloat,
    tkesecu: wpfloat,
    tkesmot: wpfloat,
    vel_min: wpfloat,
    tke_time_step: wpfloat,
    inverse_tke_time_step: wpfloat,
    gravitational_acceleration: wpfloat,
    molecular_diffusivity_for_scalars: wpfloat,
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    updated_stability_length_for_momentum: fa.CellKField[wpfloat],
    updated_stability_length_for_scalars: fa.CellKField[wpfloat],
    circulation_acceleration: fa.CellKField[wpfloat],
    supersaturation_standard_deviation: fa.CellKField[wpfloat],
    diffusion_coefficient_for_momentum: fa.CellKField[wpfloat],
    diffusion_coefficient_for_scalars: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_turbulent_velocity_scale(
        master_length_scale=master_length_scale,
        stability_length_for_momentum=stability_length_for_momentum,
        stability_length_for_scalars=stability_length_for_scalars,
        mechanical_forcing=mechanical_forcing,
        thermal_forcing=thermal_forcing,
        previous_velocity_scale=previous_velocity_scale,
        transport_tendency=transport_tendency,
        d_m=d_m,
        d_4=d_4,
        b_m=b_m,
        rim=rim,
        frcsecu=frcsecu,
        tkesecu=tkesecu,
        tkesmot=tkesmot,
        vel_min=vel_min,
        tke_time_step=tke_time_step,
        inverse_tke_time_step=inverse_tke_time_step,
        out=turbulent_velocity_scale,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_stability_lengths(
        master_length_scale=master_length_scale,
        stability_length_for_momentum=stability_length_for_momentum,
        stability_length_for_scalars=stability_length_for_scalars,
        mechanical_forcing=mechanical_forcing,
        thermal_forcing=thermal_forcing,
        turbulent_velocity_scale=turbulent_velocity_scale,
        a_h=a_h,
        a_m=a_m,
        b_h=b_h,
        b_m=b_m,
        d_m=d_m,
        d_1=d_1,
        d_2=d_2,
        d_3=d_3,
        d_4=d_4,
        d_5=d_5,
        d_6=d_6,
        rim=rim,
        frcsecu=frcsecu,
        stbsecu=stbsecu,
        out=(updated_stability_length_for_momentum, updated_stability_length_for_scalars),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_circulation_acceleration(
        cloud_cover=cloud_cover,
        master_length_scale=master_length_scale,
        thermal_forcing=thermal_forcing,
        half_level_pressure=half_level_pressure,
        air_density=air_density,
        pattern_length_scale=pattern_length_scale,
        horizontal_grid_scale=horizontal_grid_scale,
        gravitational_acceleration=gravitational_acceleration,
        out=circulation_acceleration,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end + 1),
        },
    )
    _compute_supersaturation_standard_deviation(
        master_length_scale=master_length_scale,
        stability_length_for_scalars=updated_stability_length_for_scalars,
        exner_factor=exner_factor,
        saturation_humidity_derivative=saturation_humidity_derivative,
        gradient_of_liquid_water_potential_temperature=gradient_of_liquid_water_potential_temperature,
        gradient_of_total_water=gradient_of_total_water,
        d_h=d_h,
        out=supersaturation_standard_deviation,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_diffusion_coefficients_from_stability_lengths(
        stability_length_for_momentum=updated_stability_length_for_momentum,
        stability_length_for_scalars=updated_stability_length_for_scalars,
        turbulent_velocity_scale=turbulent_velocity_scale,
        molecular_diffusivity_for_scalars=molecular_diffusivity_for_scalars,
        out=(diffusion_coefficient_for_momentum, diffusion_coefficient_for_scalars),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _turbulence_constants():
    a_h, a_m, b_h, b_m, d_h, d_m = 0.74, 0.92, 10.1, 6.08, 10.1, 16.6
    d_4 = 6.0 * a_m
    d_5 = 3.0 * (d_h + d_4)
    d_3 = 9.0 * a_h
    return dict(a_h=a_h, a_m=a_m, b_h=b_h, b_m=b_m, d_h=d_h, d_m=d_m, d_1=1.0 / a_h,
                d_2=1.0 / a_m, d_3=d_3, d_4=d_4, d_5=d_5, d_6=d_3 + 3.0 * d_4,
                rim=1.0 / (1.0 + (d_m - d_4) / d_5), frcsecu=1.0, stbsecu=0.0, tkesecu=1.0,
                tkesmot=0.15, vel_min=0.01, tke_time_step=60.0, inverse_tke_time_step=1.0 / 60.0,
                gravitational_acceleration=9.80665, molecular_diffusivity_for_scalars=2.2e-5)


def _turbulence_inputs():
    s = (NC, NH)
    return dict(
        master_length_scale=RNG.uniform(10.0, 100.0, s),
        stability_length_for_momentum=RNG.uniform(1.0, 10.0, s),
        stability_length_for_scalars=RNG.uniform(1.0, 10.0, s),
        mechanical_forcing=RNG.uniform(1e-5, 1e-3, s),
        thermal_forcing=RNG.uniform(-1e-3, 1e-3, s),
        previous_velocity_scale=RNG.uniform(0.1, 2.0, s),
        transport_tendency=RNG.uniform(-1e-3, 1e-3, s),
        cloud_cover=RNG.uniform(0.0, 1.0, s),
        half_level_pressure=RNG.uniform(5e4, 1e5, s),
        air_density=RNG.uniform(0.5, 1.2, s),
        exner_factor=RNG.uniform(0.8, 1.0, s),
        saturation_humidity_derivative=RNG.uniform(1e-4, 1e-3, s),
        gradient_of_liquid_water_potential_temperature=RNG.standard_normal(s) * 1e-2,
        gradient_of_total_water=RNG.standard_normal(s) * 1e-5,
        pattern_length_scale=RNG.uniform(100.0, 1000.0, NC),
        horizontal_grid_scale=RNG.uniform(1e3, 1e4, NC))


_TURBULENCE_OUTPUTS = ("turbulent_velocity_scale", "updated_stability_length_for_momentum",
                       "updated_stability_length_for_scalars", "circulation_acceleration",
                       "supersaturation_standard_deviation", "diffusion_coefficient_for_momentum",
                       "diffusion_coefficient_for_scalars")


def _turbulence_numpy(a, c):
    tls, lsm, lsh = a["master_length_scale"], a["stability_length_for_momentum"], \
        a["stability_length_for_scalars"]
    fm2, fh2 = a["mechanical_forcing"], a["thermal_forcing"]
    shear = lsm * fm2
    forcing = np.maximum(shear - lsh * fh2, c["frcsecu"] * c["rim"] * shear)
    q1 = tls * c["d_m"] * c["inverse_tke_time_step"]
    q2 = (np.maximum(0.0, a["previous_velocity_scale"]
                     + a["transport_tendency"] * c["tke_time_step"])
          + forcing * c["tke_time_step"])
    updated = q1 * (np.sqrt(1.0 + 4.0 * q2 / q1) - 1.0) * 0.5
    floor = np.sqrt(tls * c["d_4"] * (1.0 / c["b_m"]) * np.maximum(forcing, 0.0))
    smoothed = c["tkesmot"] * a["previous_velocity_scale"] + (1.0 - c["tkesmot"]) * updated
    tke = np.maximum(np.maximum(c["tkesecu"] * c["vel_min"], c["tkesecu"] * floor), smoothed)

    tim2 = (tls / tke) ** 2
    gh, gm = fh2 * tim2, fm2 * tim2
    a11 = c["d_1"] + (c["d_5"] - c["d_4"]) * gh
    a12 = c["d_4"] * gm
    a21 = (c["d_6"] - c["d_4"]) * gh
    a22 = c["d_2"] + c["d_3"] * gh + c["d_4"] * gm
    det = a11 * a22 - a12 * a21
    num_h = c["b_h"] * a22 - c["b_m"] * a12
    num_m = c["b_m"] * a11 - c["b_h"] * a21
    gam0 = c["stbsecu"] / c["d_m"] + (1.0 - c["stbsecu"]) * c["b_m"] / c["d_4"]
    gama = np.minimum(gam0, forcing * tim2 / tls)
    wert = c["d_4"] * gama
    bb1, bb2 = (c["b_h"] - wert) * c["a_h"], (c["b_m"] - wert) * c["a_m"]
    a3, a5, a6 = (c["d_3"] * gama * c["a_m"], c["d_5"] * gama * c["a_h"],
                  c["d_6"] * gama * c["a_m"])
    with np.errstate(invalid="ignore", divide="ignore"):
        val1 = (fm2 * bb2 + (a5 - a3 + bb1) * fh2) / (2.0 * bb1)
        val2 = val1 + np.sqrt(val1 * val1 - (a6 + bb2) * fh2 * fm2 / bb1)
        fakt = fh2 / (val2 - fh2)
        corr_h = bb1 - a5 * fakt
        corr_m = corr_h * (bb2 - a6 * fakt) / (bb1 - (a5 - a3) * fakt)
        solvable = (fh2 >= 0.0) & (det > 0.0) & (num_h > 0.0) & (num_m > 0.0)
        sh = np.where(solvable, num_h / det, corr_h)
        sm = np.where(solvable, num_m / det, corr_m)
    new_lsm, new_lsh = tls * sm, tls * sh

    coherence = 1.0 - 2.0 * np.abs(a["cloud_cover"] - 0.5)
    length = np.maximum(a["pattern_length_scale"][:, None],
                        np.sqrt(coherence * tls * a["horizontal_grid_scale"][:, None]))
    grad = fh2 * a["half_level_pressure"] / (a["air_density"]
                                              * c["gravitational_acceleration"] ** 2)
    circulation = length * np.clip(grad, -1.0, 1.0) * fh2
    with np.errstate(invalid="ignore"):
        sdss = np.sqrt(tls * new_lsh * c["d_h"]) * np.abs(
            a["exner_factor"] * a["saturation_humidity_derivative"]
            * a["gradient_of_liquid_water_potential_temperature"] - a["gradient_of_total_water"])
    return dict(turbulent_velocity_scale=tke, updated_stability_length_for_momentum=new_lsm,
                updated_stability_length_for_scalars=new_lsh,
                circulation_acceleration=circulation, supersaturation_standard_deviation=sdss,
                diffusion_coefficient_for_momentum=new_lsm * tke,
                diffusion_coefficient_for_scalars=np.maximum(
                    new_lsh * tke, c["molecular_diffusivity_for_scalars"]))


@pytest.mark.parametrize("aliased", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_solve_turb_budgets(backend, aliased):
    hs, he, vs, ve = 1, NC - 1, 1, NLEV
    a, c = _turbulence_inputs(), _turbulence_constants()
    base = {n: RNG.standard_normal((NC, NH)) for n in _TURBULENCE_OUTPUTS}
    got = {n: v.copy() for n, v in base.items()}
    inputs = dict(a)
    if aliased:   # icon4py's granule: the cloud cover comes in where the SDSS goes out
        got["supersaturation_standard_deviation"] = inputs["cloud_cover"] = a["cloud_cover"].copy()
        base["supersaturation_standard_deviation"] = a["cloud_cover"]
    solve_turb_budgets(**inputs, **c, **got, horizontal_start=hs, horizontal_end=he,
                       vertical_start=vs, vertical_end=ve, offset_provider={}, backend=backend)
    want = _turbulence_numpy(a, c)
    check(got, {n: inside(want[n], base[n], hs, he, vs,
                          ve + 1 if n == "circulation_acceleration" else ve)
                for n in _TURBULENCE_OUTPUTS}, rtol=1e-11, atol=1e-14)


# ================================================================== TKE diffusion solve
#
# icon4py's solve_tke_diffusion_equation (turbulence): a forward scan and a
# backward scan each carrying a ``tuple[wpfloat, bool]`` state whose flag
# marks the first row of the scan (``init=(wpfloat("0.0"), True)``), a
# conditional expression on the flag, the scans' tuple results unpacked with
# ``_``, the backward scan reading ``inversion_factor(Koff[1])``; the rows of
# the scans are those of the program's ``vertical_start``/``vertical_end``.


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
def _solve_tke_diffusion_equation(
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
def solve_tke_diffusion_equation(
    right_hand_side: fa.CellKField[wpfloat],
    implicit_diffusion_momentum: fa.CellKField[wpfloat],
    inverted_diffusion_momentum: fa.CellKField[wpfloat],
    inversion_factor: fa.CellKField[wpfloat],
    updated_tke_profile: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _solve_tke_diffusion_equation(
        right_hand_side=right_hand_side,
        implicit_diffusion_momentum=implicit_diffusion_momentum,
        inverted_diffusion_momentum=inverted_diffusion_momentum,
        inversion_factor=inversion_factor,
        out=updated_tke_profile,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("bounds", [(0, NC, 1, NLEV), (2, NC - 1, 3, NLEV - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_solve_tke_diffusion_equation(backend, bounds):
    hs, he, vs, ve = bounds
    s = (NC, NH)
    a = dict(right_hand_side=RNG.standard_normal(s), implicit_diffusion_momentum=f64(*s),
             inverted_diffusion_momentum=f64(*s) + 0.5, inversion_factor=f64(*s) * 0.5)
    base = RNG.standard_normal(s)
    got = base.copy()
    solve_tke_diffusion_equation(**a, updated_tke_profile=got, horizontal_start=hs,
                                 horizontal_end=he, vertical_start=vs, vertical_end=ve,
                                 offset_provider={"Koff": KDim}, backend=backend)
    rhs, impl, inv, fac = (a[n] for n in ("right_hand_side", "implicit_diffusion_momentum",
                                          "inverted_diffusion_momentum", "inversion_factor"))
    want = np.array(base)
    e = np.zeros(s)
    e[:, vs] = rhs[:, vs] * inv[:, vs]
    for k in range(vs + 1, ve):
        e[:, k] = (rhs[:, k] + impl[:, k] * e[:, k - 1]) * inv[:, k]
    want[:, ve - 1] = e[:, ve - 1]
    for k in range(ve - 2, vs - 1, -1):
        want[:, k] = e[:, k] + fac[:, k + 1] * want[:, k + 1]
    np.testing.assert_allclose(got, inside(want, base, hs, he, vs, ve), rtol=1e-12, atol=1e-14)


# ================================================================== turbulence, section 1
#
# icon4py's compute_vertical_gradients_of_conserved_variables: three
# statements on three domains (one naming ``CellDim`` alone, for two
# ``CellField`` outputs), the gradients choosing by ``concat_where(dims.KDim ==
# nlev, ...)`` between a ``CellField`` (no vertical axis) and a ``CellKField``
# the statement before wrote; then compute_tke_forcing_functions (two
# statements, the second on ``vertical_end - 1``) and the three-dimensional
# shear forcing.


@gtx.field_operator
def _compute_surface_transfer_ratios(
    tvm: fa.CellField[wpfloat],
    tvh: fa.CellField[wpfloat],
    tkvm_at_surface: fa.CellField[wpfloat],
    tkvh_at_surface: fa.CellField[wpfloat],
    tfm: fa.CellField[wpfloat],
    tfh: fa.CellField[wpfloat],
) -> tuple[fa.CellField[wpfloat], fa.CellField[wpfloat]]:
    surface_transfer_ratio_for_momentum = tvm / (tkvm_at_surface * tfm)
    surface_transfer_ratio_for_scalars = tvh / (tkvh_at_surface * tfh)
    return surface_transfer_ratio_for_momentum, surface_transfer_ratio_for_scalars


@gtx.field_operator
def _compute_inverse_layer_depth_and_tke_discretisation_momentum(
    hhl: fa.CellKField[wpfloat],
    rhon: fa.CellKField[wpfloat],
    inverse_tke_time_step: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    half = wpfloat("0.5")
    one = wpfloat("1.0")
    layer_depth = (hhl(Koff[-1]) - hhl(Koff[1])) * half
    inverse_layer_depth = one / layer_depth
    tke_discretisation_momentum = rhon * layer_depth * inverse_tke_time_step
    return inverse_layer_depth, tke_discretisation_momentum


@gtx.field_operator
def _gradient_of_conserved_variable(
    variable: fa.CellKField[wpfloat],
    inverse_depth: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return (variable(Koff[-1]) - variable) * inverse_depth


@gtx.field_operator
def _compute_vertical_gradients_of_conserved_variables(
    zonal_wind: fa.CellKField[wpfloat],
    meridional_wind: fa.CellKField[wpfloat],
    liquid_water_potential_temperature: fa.CellKField[wpfloat],
    total_water: fa.CellKField[wpfloat],
    liquid_water: fa.CellKField[wpfloat],
    inverse_layer_depth: fa.CellKField[wpfloat],
    surface_transfer_ratio_for_momentum: fa.CellField[wpfloat],
    surface_transfer_ratio_for_scalars: fa.CellField[wpfloat],
    nlev: gtx.int32,
) -> tuple[
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
]:
    inverse_depth_for_momentum = concat_where(
        dims.KDim == nlev, surface_transfer_ratio_for_momentum, inverse_layer_depth
    )
    inverse_depth_for_scalars = concat_where(
        dims.KDim == nlev, surface_transfer_ratio_for_scalars, inverse_layer_depth
    )
    return (
        _gradient_of_conserved_variable(zonal_wind, inverse_depth_for_momentum),
        _gradient_of_conserved_variable(meridional_wind, inverse_depth_for_momentum),
        _gradient_of_conserved_variable(
            liquid_water_potential_temperature, inverse_depth_for_scalars
        ),
        _gradient_of_conserved_variable(total_water, inverse_depth_for_scalars),
        _gradient_of_conserved_variable(liquid_water, inverse_depth_for_scalars),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_vertical_gradients_of_conserved_variables(
    tvm: fa.CellField[wpfloat],
    tvh: fa.CellField[wpfloat],
    tkvm_at_surface: fa.CellField[wpfloat],
    tkvh_at_surface: fa.CellField[wpfloat],
    tfm: fa.CellField[wpfloat],
    tfh: fa.CellField[wpfloat],
    hhl: fa.CellKField[wpfloat],
    rhon: fa.CellKField[wpfloat],
    inverse_tke_time_step: wpfloat,
    zonal_wind: fa.CellKField[wpfloat],
    meridional_wind: fa.CellKField[wpfloat],
    liquid_water_potential_temperature: fa.CellKField[wpfloat],
    total_water: fa.CellKField[wpfloat],
    liquid_water: fa.CellKField[wpfloat],
    nlev: gtx.int32,
    surface_transfer_ratio_for_momentum: fa.CellField[wpfloat],
    surface_transfer_ratio_for_scalars: fa.CellField[wpfloat],
    inverse_layer_depth: fa.CellKField[wpfloat],
    tke_discretisation_momentum: fa.CellKField[wpfloat],
    zonal_wind_gradient: fa.CellKField[wpfloat],
    meridional_wind_gradient: fa.CellKField[wpfloat],
    liquid_water_potential_temperature_gradient: fa.CellKField[wpfloat],
    total_water_gradient: fa.CellKField[wpfloat],
    liquid_water_gradient: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_surface_transfer_ratios(
        tvm=tvm,
        tvh=tvh,
        tkvm_at_surface=tkvm_at_surface,
        tkvh_at_surface=tkvh_at_surface,
        tfm=tfm,
        tfh=tfh,
        out=(surface_transfer_ratio_for_momentum, surface_transfer_ratio_for_scalars),
        domain={dims.CellDim: (horizontal_start, horizontal_end)},
    )
    _compute_inverse_layer_depth_and_tke_discretisation_momentum(
        hhl=hhl,
        rhon=rhon,
        inverse_tke_time_step=inverse_tke_time_step,
        out=(inverse_layer_depth, tke_discretisation_momentum),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end - 1),
        },
    )
    _compute_vertical_gradients_of_conserved_variables(
        zonal_wind=zonal_wind,
        meridional_wind=meridional_wind,
        liquid_water_potential_temperature=liquid_water_potential_temperature,
        total_water=total_water,
        liquid_water=liquid_water,
        inverse_layer_depth=inverse_layer_depth,
        surface_transfer_ratio_for_momentum=surface_transfer_ratio_for_momentum,
        surface_transfer_ratio_for_scalars=surface_transfer_ratio_for_scalars,
        nlev=nlev,
        out=(
            zonal_wind_gradient,
            meridional_wind_gradient,
            liquid_water_potential_temperature_gradient,
            total_water_gradient,
            liquid_water_gradient,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


_GRADIENTS = {"zonal_wind": "zonal_wind_gradient", "meridional_wind": "meridional_wind_gradient",
              "liquid_water_potential_temperature": "liquid_water_potential_temperature_gradient",
              "total_water": "total_water_gradient", "liquid_water": "liquid_water_gradient"}


@pytest.mark.parametrize("bounds", [(0, NC, 1, NH), (2, NC - 1, 3, NH)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_vertical_gradients_of_conserved_variables(backend, bounds):
    hs, he, vs, ve = bounds
    s = (NC, NH)
    surface = {n: RNG.uniform(0.5, 1.5, NC) for n in ("tvm", "tvh", "tkvm_at_surface",
                                                       "tkvh_at_surface", "tfm", "tfh")}
    hhl = np.cumsum(RNG.uniform(50.0, 150.0, s)[:, ::-1], axis=1)[:, ::-1]
    columns = dict(hhl=hhl, rhon=RNG.uniform(0.5, 1.2, s),
                   **{n: RNG.standard_normal(s) for n in _GRADIENTS})
    base = {n: RNG.standard_normal(NC) for n in ("surface_transfer_ratio_for_momentum",
                                                 "surface_transfer_ratio_for_scalars")}
    base |= {n: RNG.standard_normal(s) for n in ("inverse_layer_depth",
                                                 "tke_discretisation_momentum",
                                                 *_GRADIENTS.values())}
    got = {n: v.copy() for n, v in base.items()}
    compute_vertical_gradients_of_conserved_variables(
        **surface, **columns, inverse_tke_time_step=1.0 / 30.0, nlev=NLEV, **got,
        horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
        offset_provider={"Koff": KDim}, backend=backend)

    ratio_m = surface["tvm"] / (surface["tkvm_at_surface"] * surface["tfm"])
    ratio_s = surface["tvh"] / (surface["tkvh_at_surface"] * surface["tfh"])
    want = {}
    for name, value in (("surface_transfer_ratio_for_momentum", ratio_m),
                        ("surface_transfer_ratio_for_scalars", ratio_s)):
        want[name] = np.array(base[name])
        want[name][hs:he] = value[hs:he]
    depth = (_up(hhl) - _down(hhl)) * 0.5
    hlp = inside(1.0 / depth, base["inverse_layer_depth"], hs, he, vs, ve - 1)
    want["inverse_layer_depth"] = hlp
    want["tke_discretisation_momentum"] = inside(
        columns["rhon"] * depth / 30.0, base["tke_discretisation_momentum"], hs, he, vs, ve - 1)
    kk = np.arange(NH)
    for var, grad in _GRADIENTS.items():
        ratio = ratio_m if var in ("zonal_wind", "meridional_wind") else ratio_s
        inverse_depth = np.where(kk == NLEV, want["surface_transfer_ratio_for_momentum"
                                                  if ratio is ratio_m else
                                                  "surface_transfer_ratio_for_scalars"][:, None],
                                 hlp)
        x = columns[var]
        want[grad] = inside((_up(x) - x) * inverse_depth, base[grad], hs, he, vs, ve)
    check(got, want, rtol=1e-12, atol=1e-14)


@gtx.field_operator
def _compute_thermal_forcing(
    buoyancy_factor_tet_l: fa.CellKField[wpfloat],
    buoyancy_factor_h2o_g: fa.CellKField[wpfloat],
    vertical_gradient_tet_l: fa.CellKField[wpfloat],
    vertical_gradient_h2o_g: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return (
        buoyancy_factor_tet_l * vertical_gradient_tet_l
        + buoyancy_factor_h2o_g * vertical_gradient_h2o_g
    )


@gtx.field_operator
def _compute_mechanical_forcing(
    vertical_gradient_u: fa.CellKField[wpfloat],
    vertical_gradient_v: fa.CellKField[wpfloat],
    min_forcing: fa.CellField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return maximum(
        vertical_gradient_u * vertical_gradient_u + vertical_gradient_v * vertical_gradient_v,
        min_forcing,
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_tke_forcing_functions(
    buoyancy_factor_tet_l: fa.CellKField[wpfloat],
    buoyancy_factor_h2o_g: fa.CellKField[wpfloat],
    vertical_gradient_tet_l: fa.CellKField[wpfloat],
    vertical_gradient_h2o_g: fa.CellKField[wpfloat],
    vertical_gradient_u: fa.CellKField[wpfloat],
    vertical_gradient_v: fa.CellKField[wpfloat],
    min_forcing: fa.CellField[wpfloat],
    thermal_forcing: fa.CellKField[wpfloat],
    mechanical_forcing: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_thermal_forcing(
        buoyancy_factor_tet_l=buoyancy_factor_tet_l,
        buoyancy_factor_h2o_g=buoyancy_factor_h2o_g,
        vertical_gradient_tet_l=vertical_gradient_tet_l,
        vertical_gradient_h2o_g=vertical_gradient_h2o_g,
        out=thermal_forcing,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_mechanical_forcing(
        vertical_gradient_u=vertical_gradient_u,
        vertical_gradient_v=vertical_gradient_v,
        min_forcing=min_forcing,
        out=mechanical_forcing,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end - 1),
        },
    )


@gtx.field_operator
def _compute_three_dimensional_shear_forcing(
    vertical_gradient_u: fa.CellKField[wpfloat],
    vertical_gradient_v: fa.CellKField[wpfloat],
    dwdx: fa.CellKField[wpfloat],
    dwdy: fa.CellKField[wpfloat],
    horizontal_divergence: fa.CellKField[wpfloat],
    horizontal_deformation_square: fa.CellKField[wpfloat],
    min_forcing: fa.CellField[wpfloat],
) -> fa.CellKField[wpfloat]:
    shear_u = vertical_gradient_u + dwdx
    shear_v = vertical_gradient_v + dwdy
    single_column_and_vertical_wind_shear = maximum(
        shear_u * shear_u
        + shear_v * shear_v
        + wpfloat("3.0") * (horizontal_divergence * horizontal_divergence),
        min_forcing,
    )
    return single_column_and_vertical_wind_shear + horizontal_deformation_square


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_three_dimensional_shear_forcing(
    vertical_gradient_u: fa.CellKField[wpfloat],
    vertical_gradient_v: fa.CellKField[wpfloat],
    dwdx: fa.CellKField[wpfloat],
    dwdy: fa.CellKField[wpfloat],
    horizontal_divergence: fa.CellKField[wpfloat],
    horizontal_deformation_square: fa.CellKField[wpfloat],
    min_forcing: fa.CellField[wpfloat],
    mean_shear_forcing: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_three_dimensional_shear_forcing(
        vertical_gradient_u=vertical_gradient_u,
        vertical_gradient_v=vertical_gradient_v,
        dwdx=dwdx,
        dwdy=dwdy,
        horizontal_divergence=horizontal_divergence,
        horizontal_deformation_square=horizontal_deformation_square,
        min_forcing=min_forcing,
        out=mean_shear_forcing,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_tke_forcing_functions_and_three_dimensional_shear(backend):
    hs, he, vs, ve = 1, NC, 1, NH
    s = (NC, NH)
    g = {n: RNG.standard_normal(s) * 1e-2 for n in (
        "buoyancy_factor_tet_l", "buoyancy_factor_h2o_g", "vertical_gradient_tet_l",
        "vertical_gradient_h2o_g", "vertical_gradient_u", "vertical_gradient_v", "dwdx", "dwdy",
        "horizontal_divergence")}
    g["horizontal_deformation_square"] = f64(*s) * 1e-4
    min_forcing = f64(NC) * 2e-4
    base = {n: RNG.standard_normal(s) for n in ("thermal_forcing", "mechanical_forcing",
                                               "mean_shear_forcing")}
    got = {n: v.copy() for n, v in base.items()}
    dom = dict(horizontal_start=hs, horizontal_end=he, vertical_start=vs, vertical_end=ve,
               offset_provider={}, backend=backend)
    compute_tke_forcing_functions(
        **{n: g[n] for n in ("buoyancy_factor_tet_l", "buoyancy_factor_h2o_g",
                             "vertical_gradient_tet_l", "vertical_gradient_h2o_g",
                             "vertical_gradient_u", "vertical_gradient_v")},
        min_forcing=min_forcing, thermal_forcing=got["thermal_forcing"],
        mechanical_forcing=got["mechanical_forcing"], **dom)
    compute_three_dimensional_shear_forcing(
        **{n: g[n] for n in ("vertical_gradient_u", "vertical_gradient_v", "dwdx", "dwdy",
                             "horizontal_divergence", "horizontal_deformation_square")},
        min_forcing=min_forcing, mean_shear_forcing=got["mean_shear_forcing"], **dom)

    u, v = g["vertical_gradient_u"], g["vertical_gradient_v"]
    su, sv = u + g["dwdx"], v + g["dwdy"]
    check(got, dict(
        thermal_forcing=inside(g["buoyancy_factor_tet_l"] * g["vertical_gradient_tet_l"]
                               + g["buoyancy_factor_h2o_g"] * g["vertical_gradient_h2o_g"],
                               base["thermal_forcing"], hs, he, vs, ve),
        mechanical_forcing=inside(np.maximum(u * u + v * v, min_forcing[:, None]),
                                  base["mechanical_forcing"], hs, he, vs, ve - 1),
        mean_shear_forcing=inside(
            np.maximum(su * su + sv * sv + 3.0 * g["horizontal_divergence"] ** 2,
                       min_forcing[:, None]) + g["horizontal_deformation_square"],
            base["mean_shear_forcing"], hs, he, vs, ve)),
        rtol=1e-12, atol=1e-16)


# ================================================================== turbulence, section 6
#
# icon4py's prepare_the_tke_diffusion: four statements on two vertical domains
# (``vertical_start + 1``), a field operator called on shifted fields
# (``mixing_length(Koff[-1])``), a main-level field (``NLEV`` levels) read one
# level up beside half-level fields (``NLEV + 1``), the last statement reading
# what the one before wrote one level up.


@gtx.field_operator
def _compute_saved_tke_profile(
    turbulent_velocity_scale: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return wpfloat("0.5") * (turbulent_velocity_scale * turbulent_velocity_scale)


@gtx.field_operator
def _tke_diffusion_coefficient(
    mixing_length: fa.CellKField[wpfloat],
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    tke_diffusion_factor: wpfloat,
) -> fa.CellKField[wpfloat]:
    return tke_diffusion_factor * mixing_length * turbulent_velocity_scale


@gtx.field_operator
def _compute_explicit_tke_diffusion_momentum(
    mixing_length: fa.CellKField[wpfloat],
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    air_density_at_main_levels: fa.CellKField[wpfloat],
    half_level_height: fa.CellKField[wpfloat],
    tke_diffusion_factor: wpfloat,
) -> fa.CellKField[wpfloat]:
    coefficient_above = _tke_diffusion_coefficient(
        mixing_length(Koff[-1]), turbulent_velocity_scale(Koff[-1]), tke_diffusion_factor
    )
    coefficient_here = _tke_diffusion_coefficient(
        mixing_length, turbulent_velocity_scale, tke_diffusion_factor
    )
    return (
        air_density_at_main_levels(Koff[-1])
        * wpfloat("0.5")
        * (coefficient_above + coefficient_here)
        / (half_level_height(Koff[-1]) - half_level_height)
    )


@gtx.field_operator
def _compute_cke_flux_density(
    air_density: fa.CellKField[wpfloat],
    scalar_diffusion_coefficient: fa.CellKField[wpfloat],
    circulation_acceleration: fa.CellKField[wpfloat],
    mixing_length: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return air_density * scalar_diffusion_coefficient * circulation_acceleration * mixing_length


@gtx.field_operator
def _compute_cke_flux_at_main_levels(
    cke_flux_density: fa.CellKField[wpfloat],
    mixing_length: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return (cke_flux_density + cke_flux_density(Koff[-1])) / (
        mixing_length + mixing_length(Koff[-1])
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def prepare_the_tke_diffusion(
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    mixing_length: fa.CellKField[wpfloat],
    air_density_at_main_levels: fa.CellKField[wpfloat],
    half_level_height: fa.CellKField[wpfloat],
    tke_diffusion_factor: wpfloat,
    air_density: fa.CellKField[wpfloat],
    scalar_diffusion_coefficient: fa.CellKField[wpfloat],
    circulation_acceleration: fa.CellKField[wpfloat],
    saved_tke_profile: fa.CellKField[wpfloat],
    explicit_diffusion_momentum: fa.CellKField[wpfloat],
    cke_flux_density: fa.CellKField[wpfloat],
    cke_flux_at_main_levels: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_saved_tke_profile(
        turbulent_velocity_scale=turbulent_velocity_scale,
        out=saved_tke_profile,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_explicit_tke_diffusion_momentum(
        mixing_length=mixing_length,
        turbulent_velocity_scale=turbulent_velocity_scale,
        air_density_at_main_levels=air_density_at_main_levels,
        half_level_height=half_level_height,
        tke_diffusion_factor=tke_diffusion_factor,
        out=explicit_diffusion_momentum,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start + 1, vertical_end),
        },
    )
    _compute_cke_flux_density(
        air_density=air_density,
        scalar_diffusion_coefficient=scalar_diffusion_coefficient,
        circulation_acceleration=circulation_acceleration,
        mixing_length=mixing_length,
        out=cke_flux_density,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )
    _compute_cke_flux_at_main_levels(
        cke_flux_density=cke_flux_density,
        mixing_length=mixing_length,
        out=cke_flux_at_main_levels,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start + 1, vertical_end),
        },
    )


@pytest.mark.parametrize("bounds", [(0, NC, 1, NH), (2, NC - 1, 2, NH - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_prepare_the_tke_diffusion(backend, bounds):
    hs, he, vs, ve = bounds
    s = (NC, NH)
    hhl = np.cumsum(RNG.uniform(50.0, 150.0, s)[:, ::-1], axis=1)[:, ::-1]
    a = dict(turbulent_velocity_scale=RNG.uniform(0.1, 2.0, s),
             mixing_length=RNG.uniform(10.0, 100.0, s),
             air_density_at_main_levels=RNG.uniform(0.5, 1.2, (NC, NLEV)),
             half_level_height=hhl, air_density=RNG.uniform(0.5, 1.2, s),
             scalar_diffusion_coefficient=f64(*s), circulation_acceleration=f64(*s) - 0.5)
    base = {n: RNG.standard_normal(s) for n in ("saved_tke_profile",
                                               "explicit_diffusion_momentum",
                                               "cke_flux_density", "cke_flux_at_main_levels")}
    got = {n: v.copy() for n, v in base.items()}
    prepare_the_tke_diffusion(**a, tke_diffusion_factor=0.2, **got, horizontal_start=hs,
                              horizontal_end=he, vertical_start=vs, vertical_end=ve,
                              offset_provider={"Koff": KDim}, backend=backend)

    q, tls = a["turbulent_velocity_scale"], a["mixing_length"]
    coefficient = 0.2 * tls * q
    rho_main = np.concatenate([np.full((NC, 1), np.nan), a["air_density_at_main_levels"]],
                              axis=1)   # level k holds the main level k - 1
    expl = rho_main * 0.5 * (_up(coefficient) + coefficient) / (_up(hhl) - hhl)
    flux = inside(a["air_density"] * a["scalar_diffusion_coefficient"]
                  * a["circulation_acceleration"] * tls, base["cke_flux_density"], hs, he, vs, ve)
    check(got, dict(
        saved_tke_profile=inside(0.5 * q * q, base["saved_tke_profile"], hs, he, vs, ve),
        explicit_diffusion_momentum=inside(expl, base["explicit_diffusion_momentum"],
                                           hs, he, vs + 1, ve),
        cke_flux_density=flux,
        cke_flux_at_main_levels=inside((flux + _up(flux)) / (tls + _up(tls)),
                                       base["cke_flux_at_main_levels"], hs, he, vs + 1, ve)),
        rtol=1e-12, atol=1e-15)


# ================================================================== turbulence, section 0
#
# icon4py's interpolate_variables_onto_half_levels: seven profiles moved from
# main levels to the half levels between them by one shared weight, a tuple of
# seven written under one domain.  ICON interpolates five of them in place, so
# a caller passes the same array as the profile and as its result: every row
# must still read the main-level values of itself and of the row above.


@gtx.field_operator
def _interpolate_onto_half_levels(
    main_level_profile: fa.CellKField[wpfloat],
    interpolation_weight: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return main_level_profile * interpolation_weight + main_level_profile(Koff[-1]) * (
        wpfloat("1.0") - interpolation_weight
    )


@gtx.field_operator
def _interpolate_variables_onto_half_levels(
    cloud_cover: fa.CellKField[wpfloat],
    exner_factor: fa.CellKField[wpfloat],
    dqsat_dt: fa.CellKField[wpfloat],
    buoyancy_factor_tet_l: fa.CellKField[wpfloat],
    buoyancy_factor_h2o_g: fa.CellKField[wpfloat],
    pressure: fa.CellKField[wpfloat],
    air_density: fa.CellKField[wpfloat],
    interpolation_weight: fa.CellKField[wpfloat],
) -> tuple[
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
    fa.CellKField[wpfloat],
]:
    return (
        _interpolate_onto_half_levels(cloud_cover, interpolation_weight),
        _interpolate_onto_half_levels(exner_factor, interpolation_weight),
        _interpolate_onto_half_levels(dqsat_dt, interpolation_weight),
        _interpolate_onto_half_levels(buoyancy_factor_tet_l, interpolation_weight),
        _interpolate_onto_half_levels(buoyancy_factor_h2o_g, interpolation_weight),
        _interpolate_onto_half_levels(pressure, interpolation_weight),
        _interpolate_onto_half_levels(air_density, interpolation_weight),
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def interpolate_variables_onto_half_levels(
    cloud_cover: fa.CellKField[wpfloat],
    exner_factor: fa.CellKField[wpfloat],
    dqsat_dt: fa.CellKField[wpfloat],
    buoyancy_factor_tet_l: fa.CellKField[wpfloat],
    buoyancy_factor_h2o_g: fa.CellKField[wpfloat],
    pressure: fa.CellKField[wpfloat],
    air_density: fa.CellKField[wpfloat],
    interpolation_weight: fa.CellKField[wpfloat],
    cloud_cover_on_half_levels: fa.CellKField[wpfloat],
    exner_factor_on_half_levels: fa.CellKField[wpfloat],
    dqsat_dt_on_half_levels: fa.CellKField[wpfloat],
    buoyancy_factor_tet_l_on_half_levels: fa.CellKField[wpfloat],
    buoyancy_factor_h2o_g_on_half_levels: fa.CellKField[wpfloat],
    pressure_on_half_levels: fa.CellKField[wpfloat],
    air_density_on_half_levels: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _interpolate_variables_onto_half_levels(
        cloud_cover=cloud_cover,
        exner_factor=exner_factor,
        dqsat_dt=dqsat_dt,
        buoyancy_factor_tet_l=buoyancy_factor_tet_l,
        buoyancy_factor_h2o_g=buoyancy_factor_h2o_g,
        pressure=pressure,
        air_density=air_density,
        interpolation_weight=interpolation_weight,
        out=(
            cloud_cover_on_half_levels,
            exner_factor_on_half_levels,
            dqsat_dt_on_half_levels,
            buoyancy_factor_tet_l_on_half_levels,
            buoyancy_factor_h2o_g_on_half_levels,
            pressure_on_half_levels,
            air_density_on_half_levels,
        ),
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


_PROFILES = ("cloud_cover", "exner_factor", "dqsat_dt", "buoyancy_factor_tet_l",
             "buoyancy_factor_h2o_g", "pressure", "air_density")
_IN_PLACE = ("cloud_cover", "dqsat_dt", "buoyancy_factor_tet_l", "buoyancy_factor_h2o_g")


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolate_variables_onto_half_levels(backend, in_place):
    hs, he, vs, ve = 1, NC - 1, 1, NLEV
    s = (NC, NH)
    profiles = {n: RNG.standard_normal(s) for n in _PROFILES}
    weight = f64(*s)
    base = {n + "_on_half_levels": RNG.standard_normal(s) for n in _PROFILES}
    got = {n: v.copy() for n, v in base.items()}
    inputs = {n: v.copy() for n, v in profiles.items()}
    if in_place:   # ICON's own call: the profile is overwritten by its interpolation
        for n in _IN_PLACE:
            got[n + "_on_half_levels"] = inputs[n]
            base[n + "_on_half_levels"] = profiles[n]
    interpolate_variables_onto_half_levels(
        **inputs, interpolation_weight=weight, **got, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider={"Koff": KDim}, backend=backend)
    check(got, {n + "_on_half_levels": inside(p * weight + _up(p) * (1.0 - weight),
                                              base[n + "_on_half_levels"], hs, he, vs, ve)
                for n, p in profiles.items()}, rtol=1e-12, atol=1e-15)


# ================================================================== turbulence, the model top
#
# icon4py's set_turbulent_velocity_scale_at_model_top: the row below copied
# up, ``Koff[1]`` of the input; ICON passes the same array as input and output.
# On more than one row in place, each row still reads the value the row below
# had before the call.


@gtx.field_operator
def _set_turbulent_velocity_scale_at_model_top(
    turbulent_velocity_scale: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    return turbulent_velocity_scale(Koff[1])


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def set_turbulent_velocity_scale_at_model_top(
    turbulent_velocity_scale: fa.CellKField[wpfloat],
    turbulent_velocity_scale_with_top: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _set_turbulent_velocity_scale_at_model_top(
        turbulent_velocity_scale=turbulent_velocity_scale,
        out=turbulent_velocity_scale_with_top,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize(("in_place", "rows"), [(False, 1), (True, 1), (True, 4)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_turbulent_velocity_scale_at_model_top(backend, in_place, rows):
    tke = RNG.standard_normal((NC, NH))
    out = tke.copy() if in_place else RNG.standard_normal((NC, NH))
    before = out.copy()
    set_turbulent_velocity_scale_at_model_top(
        out if in_place else tke, out, horizontal_start=1, horizontal_end=NC,
        vertical_start=0, vertical_end=rows, offset_provider={"Koff": KDim}, backend=backend)
    want = before.copy()
    want[1:, :rows] = tke[1:, 1:rows + 1]
    np.testing.assert_array_equal(out, want)


# ================================================================== turbulence, section 8
#
# icon4py's compute_virtual_tke_profile: a forward scan whose flag marks its
# first row (the program's ``vertical_start``), a scalar among its operands,
# one operand the profile read one level up; the quotient on the first row is
# formed but not chosen (there the divisor holds what no statement wrote).


@gtx.scan_operator(axis=dims.KDim, forward=True, init=(wpfloat("0.0"), True))
def _accumulate_virtual_tke_profile(
    state: tuple[wpfloat, bool],
    saved_tke_profile: wpfloat,
    saved_tke_profile_above: wpfloat,
    cke_flux_at_main_levels: wpfloat,
    explicit_diffusion_momentum: wpfloat,
    tke_diffusion_limit_correction: wpfloat,
) -> tuple[wpfloat, bool]:
    virtual_profile_above, at_the_top = state
    circulation_increment = cke_flux_at_main_levels / explicit_diffusion_momentum
    virtual_profile = (
        saved_tke_profile
        if at_the_top
        else (virtual_profile_above - saved_tke_profile_above) * tke_diffusion_limit_correction
        + circulation_increment
        + saved_tke_profile
    )
    return virtual_profile, False


@gtx.field_operator
def _compute_virtual_tke_profile(
    saved_tke_profile: fa.CellKField[wpfloat],
    cke_flux_at_main_levels: fa.CellKField[wpfloat],
    explicit_diffusion_momentum: fa.CellKField[wpfloat],
    tke_diffusion_limit_correction: wpfloat,
) -> fa.CellKField[wpfloat]:
    virtual_profile, _ = _accumulate_virtual_tke_profile(
        saved_tke_profile,
        saved_tke_profile(Koff[-1]),
        cke_flux_at_main_levels,
        explicit_diffusion_momentum,
        tke_diffusion_limit_correction,
    )
    return virtual_profile


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_virtual_tke_profile(
    saved_tke_profile: fa.CellKField[wpfloat],
    cke_flux_at_main_levels: fa.CellKField[wpfloat],
    explicit_diffusion_momentum: fa.CellKField[wpfloat],
    tke_diffusion_limit_correction: wpfloat,
    virtual_tke_profile: fa.CellKField[wpfloat],
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _compute_virtual_tke_profile(
        saved_tke_profile=saved_tke_profile,
        cke_flux_at_main_levels=cke_flux_at_main_levels,
        explicit_diffusion_momentum=explicit_diffusion_momentum,
        tke_diffusion_limit_correction=tke_diffusion_limit_correction,
        out=virtual_tke_profile,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("bounds", [(0, NC, 1, NH), (1, NC - 2, 3, NH - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_compute_virtual_tke_profile(backend, bounds):
    hs, he, vs, ve = bounds
    s = (NC, NH)
    saved, flux = f64(*s), RNG.standard_normal(s)
    expl = f64(*s) + 0.5
    expl[:, vs] = 0.0                     # not written there: the quotient is not chosen
    base = RNG.standard_normal(s)
    got = base.copy()
    compute_virtual_tke_profile(saved, flux, expl, 0.8, got, horizontal_start=hs,
                                horizontal_end=he, vertical_start=vs, vertical_end=ve,
                                offset_provider={"Koff": KDim}, backend=backend)
    want = np.array(base)
    want[:, vs] = saved[:, vs]
    for k in range(vs + 1, ve):
        want[:, k] = ((want[:, k - 1] - saved[:, k - 1]) * 0.8 + flux[:, k] / expl[:, k]
                      + saved[:, k])
    np.testing.assert_allclose(got, inside(want, base, hs, he, vs, ve), rtol=1e-12, atol=1e-14)
