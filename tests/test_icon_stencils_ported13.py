"""A thirteenth round of ICON stencils (icon4py's field operators) in icon4py's
own spelling, beside ``test_icon_stencils_ported*.py``.

First the diffusion set-up: vertical profiles made from scalars alone
(``broadcast`` of a number to ``(KDim,)``, nested calls, a tuple of three
written with ``out=`` and no domain), the Smagorinsky enhancement read
through ``Koff[1]`` of the half-level heights, the nabla2 factor of the upper
damping zone cut by a ``concat_where`` on runtime bounds, and the same
profiles called directly on part of the levels.  Then the solver's zero
initialisers, field operators without arguments (one field or a tuple, in
working or variable precision) called with ``out=`` and runtime domains
before the accumulations that start from them, and called directly with
NumPy integer bounds.  Then the reference atmosphere on cells and edges
(``exp``, ``log``, a power, helpers called with keyword arguments), the
reference Exner derivative on half levels, the update of two fields by their
tendencies and the deep-atmosphere metric profiles.  Then the fused
Smagorinsky and turbulence diagnostics: a conditional expression choosing
between a call's tuple and the arguments' tuple, written on a tuple of four
domains (edges on full levels, cells on half levels) from a program and
called directly.  Then the first-match bounds of ``compute_zdiff_gradp``
(``min_over``/``max_over`` over a local candidate dimension of ``int32``
values), the contravariant correction brought to cell half levels through
two ``concat_where`` on a runtime ``nflatlev``, and the alternative Miura
edge steps (back-trajectory, the linear flux from the upwind cell chosen by
an ``int32`` field, the monotone limiter's factors).  Last the edge geometry
of a torus grid: vertex differences wrapped by the domain's size through
parameters reassigned by nested ``where``, the normalized tangent and normal
as a tuple of ten that repeats two values each, the distance between the far
vertices of the ``E2C2V`` diamond, the edge area and the Coriolis parameter,
and the PPM slope (a ``concat_where`` on a runtime ``elev`` between nested
calls) called directly on a domain of NumPy integers.
Each group is one program (or a few direct calls), interpreted and compiled,
compared with NumPy written from the formulas."""

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
    abs,
    astype,
    broadcast,
    concat_where,
    exp,
    log,
    max_over,
    maximum,
    min_over,
    minimum,
    neighbor_sum,
    sin,
    sqrt,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
CandDim = Dimension("Cand", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim = CellDim, EdgeDim, VertexDim
dims.KDim, dims.KHalfDim = KDim, KHalfDim
dims.C2EDim, dims.E2C2VDim, dims.CandDim, dims.CEDim = C2EDim, E2C2VDim, CandDim, CEDim
dims.E2CDim, dims.E2VDim = E2CDim, E2VDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.VertexField = Field[Dims[VertexDim], T]
fa.KField = Field[Dims[KDim], T]
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
RNG = np.random.default_rng(13001)
_TABLE_RNG = np.random.default_rng(13002)
TABLES = {"C2E": _TABLE_RNG.integers(0, NE, (NC, 3)),
          "E2C2V": _TABLE_RNG.integers(0, NV, (NE, 4)),
          "E2C": _TABLE_RNG.integers(0, NC, (NE, 2)),
          "E2V": np.array([_TABLE_RNG.choice(NV, 2, replace=False) for _ in range(NE)]),
          "C2CE": None, "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(13003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


# ================================================================== diffusion set-up
#
# icon4py's diffusion utilities: vertical profiles made from scalars alone
# (``broadcast`` of a number to ``(KDim,)``, written with ``out=`` and no
# domain, so the output sizes them), the Smagorinsky enhancement profile read
# through ``Koff[1]`` of the half-level heights, and the nabla2 factor of the
# upper damping zone cut by a ``concat_where`` on runtime level bounds.


@gtx.field_operator
def _identity_c_k(field: fa.CellKField[float]) -> fa.CellKField[float]:
    return field


@gtx.field_operator
def _scale_k(field: fa.KField[float], factor: float) -> fa.KField[float]:
    return field * factor


@gtx.field_operator
def _setup_smag_limit(diff_multfac_vn: fa.KField[float]) -> fa.KField[float]:
    return 0.125 - 4.0 * diff_multfac_vn


@gtx.field_operator
def _setup_runtime_diff_multfac_vn(k4: float, dyn_substeps: float) -> fa.KField[float]:
    con = 1.0 / 128.0
    dyn = k4 * dyn_substeps / 3.0
    return broadcast(minimum(con, dyn), (KDim,))


@gtx.field_operator
def _setup_initial_diff_multfac_vn(k4: float, hdiff_efdt_ratio: float) -> fa.KField[float]:
    return broadcast(k4 / 3.0 * hdiff_efdt_ratio, (KDim,))


@gtx.field_operator
def _setup_fields_for_initial_step(
    k4: float, hdiff_efdt_ratio: float,
) -> tuple[fa.KField[float], fa.KField[float]]:
    diff_multfac_vn = _setup_initial_diff_multfac_vn(k4, hdiff_efdt_ratio)
    smag_limit = _setup_smag_limit(diff_multfac_vn)
    return diff_multfac_vn, smag_limit


@gtx.field_operator
def _en_smag_fac_for_zero_nshift(
    vect_a: fa.KField[float], hdiff_smag_fac: float, hdiff_smag_fac2: float,
    hdiff_smag_fac3: float, hdiff_smag_fac4: float, hdiff_smag_z: float,
    hdiff_smag_z2: float, hdiff_smag_z3: float, hdiff_smag_z4: float,
) -> fa.KField[float]:
    dz21 = hdiff_smag_z2 - hdiff_smag_z
    alin = (hdiff_smag_fac2 - hdiff_smag_fac) / dz21
    df32 = hdiff_smag_fac3 - hdiff_smag_fac2
    df42 = hdiff_smag_fac4 - hdiff_smag_fac2
    dz32 = hdiff_smag_z3 - hdiff_smag_z2
    dz42 = hdiff_smag_z4 - hdiff_smag_z2
    bqdr = (df42 * dz32 - df32 * dz42) / (dz32 * dz42 * (dz42 - dz32))
    aqdr = df32 / dz32 - bqdr * dz32
    zf = 0.5 * (vect_a + vect_a(Koff[1]))
    zero = broadcast(0.0, (KDim,))
    dzlin = minimum(broadcast(dz21, (KDim,)), maximum(zero, zf - hdiff_smag_z))
    dzqdr = minimum(broadcast(dz42, (KDim,)), maximum(zero, zf - hdiff_smag_z2))
    return hdiff_smag_fac + (dzlin * alin) + dzqdr * (aqdr + dzqdr * bqdr)


@gtx.field_operator
def _init_diffusion_local_fields_for_regular_timestemp(
    k4: float, dyn_substeps: float, hdiff_smag_fac: float, hdiff_smag_fac2: float,
    hdiff_smag_fac3: float, hdiff_smag_fac4: float, hdiff_smag_z: float, hdiff_smag_z2: float,
    hdiff_smag_z3: float, hdiff_smag_z4: float, vect_a: fa.KField[float],
) -> tuple[fa.KField[float], fa.KField[float], fa.KField[float]]:
    diff_multfac_vn = _setup_runtime_diff_multfac_vn(k4, dyn_substeps)
    smag_limit = _setup_smag_limit(diff_multfac_vn)
    enh_smag_fac = _en_smag_fac_for_zero_nshift(
        vect_a, hdiff_smag_fac, hdiff_smag_fac2, hdiff_smag_fac3, hdiff_smag_fac4,
        hdiff_smag_z, hdiff_smag_z2, hdiff_smag_z3, hdiff_smag_z4)
    return (
        diff_multfac_vn,
        smag_limit,
        enh_smag_fac,
    )


@gtx.field_operator
def _init_nabla2_factor_in_upper_damping_zone(
    physical_heights: fa.KField[float], end_index_of_damping_layer: gtx.int32,
    nshift: gtx.int32, heights_nrd_shift: float, heights_1: float,
) -> fa.KField[float]:
    height_sliced = concat_where(
        ((1 + nshift) <= dims.KDim) & (dims.KDim < (nshift + end_index_of_damping_layer + 1)),
        physical_heights,
        0.0,
    )
    diff_multfac_n2w = (
        1.0 / 12.0 * ((height_sliced - heights_nrd_shift) / (heights_1 - heights_nrd_shift)) ** 4
    )
    return diff_multfac_n2w


@gtx.program
def diffusion_setup(
    old_f: fa.CellKField[float], new_f: fa.CellKField[float], vect_a: fa.KField[float],
    factor: float, scaled_field: fa.KField[float], k4: float, hdiff_efdt_ratio: float,
    dyn_substeps: float, initial_diff_multfac_vn: fa.KField[float],
    initial_smag_limit: fa.KField[float], hdiff_smag_fac: float, hdiff_smag_fac2: float,
    hdiff_smag_fac3: float, hdiff_smag_fac4: float, hdiff_smag_z: float, hdiff_smag_z2: float,
    hdiff_smag_z3: float, hdiff_smag_z4: float, diff_multfac_vn: fa.KField[float],
    smag_limit: fa.KField[float], enh_smag_fac: fa.KField[float],
    diff_multfac_n2w: fa.KField[float], end_index_of_damping_layer: gtx.int32,
    nshift: gtx.int32, heights_nrd_shift: float, heights_1: float,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _identity_c_k(old_f, out=new_f)
    _scale_k(vect_a, factor, out=scaled_field)
    _setup_fields_for_initial_step(k4, hdiff_efdt_ratio,
                                   out=(initial_diff_multfac_vn, initial_smag_limit))
    _init_diffusion_local_fields_for_regular_timestemp(
        k4, dyn_substeps, hdiff_smag_fac, hdiff_smag_fac2, hdiff_smag_fac3, hdiff_smag_fac4,
        hdiff_smag_z, hdiff_smag_z2, hdiff_smag_z3, hdiff_smag_z4, vect_a,
        out=(
            diff_multfac_vn,
            smag_limit,
            enh_smag_fac,
        ),
    )
    _init_nabla2_factor_in_upper_damping_zone(
        physical_heights=vect_a, end_index_of_damping_layer=end_index_of_damping_layer,
        nshift=nshift, heights_nrd_shift=heights_nrd_shift, heights_1=heights_1,
        out=diff_multfac_n2w, domain={dims.KDim: (vertical_start, vertical_end)},
    )


SMAG = dict(hdiff_smag_fac=0.15, hdiff_smag_fac2=0.3, hdiff_smag_fac3=0.5, hdiff_smag_fac4=1.0,
            hdiff_smag_z=3000.0, hdiff_smag_z2=8000.0, hdiff_smag_z3=12000.0,
            hdiff_smag_z4=17000.0)


def en_smag_fac_numpy(vect_a, p):
    dz21 = p["hdiff_smag_z2"] - p["hdiff_smag_z"]
    alin = (p["hdiff_smag_fac2"] - p["hdiff_smag_fac"]) / dz21
    df32 = p["hdiff_smag_fac3"] - p["hdiff_smag_fac2"]
    df42 = p["hdiff_smag_fac4"] - p["hdiff_smag_fac2"]
    dz32 = p["hdiff_smag_z3"] - p["hdiff_smag_z2"]
    dz42 = p["hdiff_smag_z4"] - p["hdiff_smag_z2"]
    bqdr = (df42 * dz32 - df32 * dz42) / (dz32 * dz42 * (dz42 - dz32))
    aqdr = df32 / dz32 - bqdr * dz32
    zf = 0.5 * (vect_a[:-1] + vect_a[1:])
    dzlin = np.minimum(dz21, np.maximum(0.0, zf - p["hdiff_smag_z"]))
    dzqdr = np.minimum(dz42, np.maximum(0.0, zf - p["hdiff_smag_z2"]))
    return p["hdiff_smag_fac"] + dzlin * alin + dzqdr * (aqdr + dzqdr * bqdr)


@pytest.mark.parametrize("levels", [(0, NH, 4, 0), (2, NLEV, 6, 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_diffusion_setup(backend, levels):
    vs, ve, damp, nshift = levels
    vect_a = np.linspace(20000.0, 0.0, NH)            # half-level heights, top first
    old_f = RNG.standard_normal((NC, NLEV))
    k4, ratio, substeps, factor = 0.02, 0.9, 5.0, 1.7
    hnrd, h1 = vect_a[damp + nshift + 1], vect_a[1]
    base = dict(new_f=f64(NC, NLEV), scaled_field=f64(NH), initial_diff_multfac_vn=f64(NLEV),
                initial_smag_limit=f64(NLEV), diff_multfac_vn=f64(NLEV), smag_limit=f64(NLEV),
                enh_smag_fac=f64(NLEV), diff_multfac_n2w=f64(NH))
    got = {n: v.copy() for n, v in base.items()}
    diffusion_setup(old_f=old_f, vect_a=vect_a, factor=factor, k4=k4, hdiff_efdt_ratio=ratio,
                    dyn_substeps=substeps, **SMAG, **got, end_index_of_damping_layer=damp,
                    nshift=nshift, heights_nrd_shift=hnrd, heights_1=h1, vertical_start=vs,
                    vertical_end=ve, offset_provider=TABLES, backend=backend)

    initial = np.full(NLEV, k4 / 3.0 * ratio)
    runtime = np.full(NLEV, min(1.0 / 128.0, k4 * substeps / 3.0))
    k = np.arange(NH)
    sliced = np.where((k >= 1 + nshift) & (k < nshift + damp + 1), vect_a, 0.0)
    n2w = 1.0 / 12.0 * ((sliced - hnrd) / (h1 - hnrd)) ** 4
    want = dict(new_f=old_f, scaled_field=vect_a * factor, initial_diff_multfac_vn=initial,
                initial_smag_limit=0.125 - 4.0 * initial, diff_multfac_vn=runtime,
                smag_limit=0.125 - 4.0 * runtime,
                enh_smag_fac=en_smag_fac_numpy(vect_a, SMAG),
                diff_multfac_n2w=inside(n2w, base["diff_multfac_n2w"], vs, ve))
    check(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_of_a_profile_made_from_scalars(backend):
    # The two profiles of the first step on part of the levels, nothing but
    # scalars in: ``out=`` and ``domain=`` size them.
    a, b = f64(NLEV), f64(NLEV)
    a0, b0 = a.copy(), b.copy()
    _setup_fields_for_initial_step(0.04, 0.5, out=(a, b), domain={KDim: (2, NLEV - 1)},
                                   offset_provider={}, backend=backend)
    prof = np.full(NLEV, 0.04 / 3.0 * 0.5)
    check({"a": a, "b": b}, {"a": inside(prof, a0, 2, NLEV - 1),
                             "b": inside(0.125 - 4.0 * prof, b0, 2, NLEV - 1)}, rtol=1e-14)


# ================================================================== zero initialisers
#
# icon4py's solver set-up: field operators without arguments that return
# ``broadcast(0.0, ...)`` (one field or a tuple of two, in working or
# variable precision), called with ``out=`` and a runtime ``domain=`` and
# followed by the accumulations that start from those zeros.


@gtx.field_operator
def _init_cell_kdim_field_with_zero_wp() -> fa.CellKField[wpfloat]:
    return broadcast(wpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.field_operator
def _init_cell_kdim_field_with_zero_vp() -> fa.CellKField[vpfloat]:
    return broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.field_operator
def _init_two_edge_kdim_fields_with_zero_wp() -> tuple[
    fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]
]:
    return broadcast(wpfloat("0.0"), (dims.EdgeDim, dims.KDim)), broadcast(
        wpfloat("0.0"), (dims.EdgeDim, dims.KDim))


@gtx.field_operator
def _init_two_cell_kdim_fields_with_zero_vp() -> tuple[
    fa.CellKField[vpfloat], fa.CellKField[vpfloat]
]:
    return broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)), broadcast(
        vpfloat("0.0"), (dims.CellDim, dims.KDim))


@gtx.field_operator
def _accumulate_prep_adv_fields(
    z_vn_avg: fa.EdgeKField[wpfloat], mass_fl_e: fa.EdgeKField[wpfloat],
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat],
    r_nsubsteps: wpfloat,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    vn_traj_wp = vn_traj + r_nsubsteps * z_vn_avg
    mass_flx_me_wp = mass_flx_me + r_nsubsteps * mass_fl_e
    return vn_traj_wp, mass_flx_me_wp


@gtx.field_operator
def _update_mass_volume_flux(
    z_contr_w_fl_l: fa.CellKField[vpfloat], rho_ic: fa.CellKField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat], w: fa.CellKField[wpfloat],
    mass_flx_ic: fa.CellKField[wpfloat], r_nsubsteps: wpfloat,
) -> fa.CellKField[wpfloat]:
    z_contr_w_fl_l_wp = astype(z_contr_w_fl_l, wpfloat)
    z_a = r_nsubsteps * (z_contr_w_fl_l_wp + rho_ic * vwind_impl_wgt * w)
    mass_flx_ic_wp = mass_flx_ic + z_a
    return mass_flx_ic_wp


@gtx.program
def zero_and_accumulate(
    z_vn_avg: fa.EdgeKField[wpfloat], mass_fl_e: fa.EdgeKField[wpfloat],
    vn_traj: fa.EdgeKField[wpfloat], mass_flx_me: fa.EdgeKField[wpfloat],
    z_contr_w_fl_l: fa.CellKField[vpfloat], rho_ic: fa.CellKField[wpfloat],
    vwind_impl_wgt: fa.CellField[wpfloat], w: fa.CellKField[wpfloat],
    mass_flx_ic: fa.CellKField[wpfloat], z_rho_expl: fa.CellKField[wpfloat],
    z_dwdz_dd: fa.CellKField[vpfloat], z_exner_expl: fa.CellKField[vpfloat],
    z_theta_v_pr_ic: fa.CellKField[vpfloat], r_nsubsteps: wpfloat,
    edge_start: gtx.int32, edge_end: gtx.int32, cell_start: gtx.int32, cell_end: gtx.int32,
    nlev: gtx.int32, kstart_dd3d: gtx.int32,
):
    edges = {dims.EdgeDim: (edge_start, edge_end), dims.KDim: (0, nlev)}
    _init_two_edge_kdim_fields_with_zero_wp(out=(vn_traj, mass_flx_me), domain=edges)
    _accumulate_prep_adv_fields(z_vn_avg, mass_fl_e, vn_traj, mass_flx_me, r_nsubsteps,
                                out=(vn_traj, mass_flx_me), domain=edges)
    half = {dims.CellDim: (cell_start, cell_end), dims.KDim: (0, nlev + 1)}
    _init_cell_kdim_field_with_zero_wp(out=mass_flx_ic, domain=half)
    _update_mass_volume_flux(z_contr_w_fl_l, rho_ic, vwind_impl_wgt, w, mass_flx_ic,
                             r_nsubsteps, out=mass_flx_ic,
                             domain={dims.CellDim: (cell_start, cell_end),
                                     dims.KDim: (1, nlev)})
    _init_cell_kdim_field_with_zero_wp(out=z_rho_expl)
    _init_cell_kdim_field_with_zero_vp(out=z_dwdz_dd,
                                       domain={dims.CellDim: (cell_start, cell_end),
                                               dims.KDim: (kstart_dd3d, nlev)})
    _init_two_cell_kdim_fields_with_zero_vp(
        out=(z_exner_expl, z_theta_v_pr_ic),
        domain={dims.CellDim: (cell_start, cell_end), dims.KDim: (nlev, nlev + 1)})


@pytest.mark.parametrize("bounds", [(0, NE, 0, NC, 0), (2, NE - 1, 1, NC - 2, 4)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_and_accumulate(backend, bounds):
    es, ee, cs, ce, dd3d = bounds
    a = dict(z_vn_avg=RNG.standard_normal((NE, NLEV)), mass_fl_e=RNG.standard_normal((NE, NLEV)),
             z_contr_w_fl_l=RNG.standard_normal((NC, NH)).astype(np.float32),
             rho_ic=f64(NC, NH), vwind_impl_wgt=f64(NC), w=RNG.standard_normal((NC, NH)))
    base = dict(vn_traj=f64(NE, NLEV), mass_flx_me=f64(NE, NLEV), mass_flx_ic=f64(NC, NH),
                z_rho_expl=f64(NC, NLEV), z_dwdz_dd=f64(NC, NLEV).astype(np.float32),
                z_exner_expl=f64(NC, NH).astype(np.float32),
                z_theta_v_pr_ic=f64(NC, NH).astype(np.float32))
    got = {n: v.copy() for n, v in base.items()}
    r = 1.0 / 3.0
    zero_and_accumulate(**a, **got, r_nsubsteps=r, edge_start=es, edge_end=ee, cell_start=cs,
                        cell_end=ce, nlev=NLEV, kstart_dd3d=dd3d, offset_provider=TABLES,
                        backend=backend)

    flx = inside(r * (a["z_contr_w_fl_l"].astype(np.float64)
                      + a["rho_ic"] * a["vwind_impl_wgt"][:, None] * a["w"]),
                 inside(np.zeros((NC, NH)), base["mass_flx_ic"], cs, ce), cs, ce, 1, NLEV)
    zeros = np.zeros((NC, NH), np.float32)
    want = dict(vn_traj=inside(r * a["z_vn_avg"], base["vn_traj"], es, ee),
                mass_flx_me=inside(r * a["mass_fl_e"], base["mass_flx_me"], es, ee),
                mass_flx_ic=flx, z_rho_expl=np.zeros((NC, NLEV)),
                z_dwdz_dd=inside(zeros, base["z_dwdz_dd"], cs, ce, dd3d, NLEV),
                z_exner_expl=inside(zeros, base["z_exner_expl"], cs, ce, NLEV, NH),
                z_theta_v_pr_ic=inside(zeros, base["z_theta_v_pr_ic"], cs, ce, NLEV, NH))
    check(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_of_zero_initialisers(backend):
    # icon4py passes its bounds as ``gtx.int32`` values (NumPy integers).
    hs, he, vs, ve = np.int32(1), np.int32(NE - 2), np.int32(2), np.int32(NLEV)
    a, b = f64(NE, NLEV), f64(NE, NLEV)
    a0, b0 = a.copy(), b.copy()
    _init_two_edge_kdim_fields_with_zero_wp(out=(a, b),
                                            domain={dims.EdgeDim: (hs, he), dims.KDim: (vs, ve)},
                                            offset_provider={}, backend=backend)
    c = f64(NC, NH).astype(np.float32)
    c0 = c.copy()
    _init_cell_kdim_field_with_zero_vp(out=c, domain={dims.CellDim: (0, NC),
                                                      dims.KDim: (NLEV, NH)},
                                       offset_provider={}, backend=backend)
    z = np.zeros((NE, NLEV))
    check({"a": a, "b": b, "c": c},
          {"a": inside(z, a0, hs, he, vs, ve), "b": inside(z, b0, hs, he, vs, ve),
           "c": inside(np.zeros((NC, NH)), c0, 0, NC, NLEV, NH)}, rtol=0.0)


# ================================================================== reference atmosphere
#
# icon4py's reference atmosphere on cells and edges (``exp``, ``log`` and a
# field raised to a scalar power, helpers called with keyword arguments in
# another order than declared), the vertical derivative of the reference
# Exner pressure on half levels and the update of two fields by their
# tendencies.


@gtx.field_operator
def compute_z_temp(
    z_mc: fa.CellKField[wpfloat], t0sl_bg: wpfloat, del_t_bg: wpfloat, h_scal_bg: wpfloat,
) -> fa.CellKField[wpfloat]:
    denom = t0sl_bg - del_t_bg
    z_temp = denom + del_t_bg * exp(-z_mc / h_scal_bg)
    return z_temp


@gtx.field_operator
def compute_z_aux1_cell(
    z_mc: fa.CellKField[wpfloat], p0sl_bg: wpfloat, grav: wpfloat, rd: wpfloat,
    h_scal_bg: wpfloat, t0sl_bg: wpfloat, del_t_bg: wpfloat,
) -> fa.CellKField[wpfloat]:
    denom = t0sl_bg - del_t_bg
    logval = log((exp(z_mc / h_scal_bg) * denom + del_t_bg) / t0sl_bg)
    return p0sl_bg * exp(-grav / rd * h_scal_bg / denom * logval)


@gtx.field_operator
def _compute_reference_atmosphere_cell_fields(
    z_mc: fa.CellKField[wpfloat], p0ref: wpfloat, p0sl_bg: wpfloat, grav: wpfloat,
    cpd: wpfloat, rd: wpfloat, h_scal_bg: wpfloat, t0sl_bg: wpfloat, del_t_bg: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    z_aux1 = compute_z_aux1_cell(z_mc=z_mc, p0sl_bg=p0sl_bg, grav=grav, rd=rd,
                                 h_scal_bg=h_scal_bg, t0sl_bg=t0sl_bg, del_t_bg=del_t_bg)
    rd_o_cpd = rd / cpd
    exner_ref_mc = (z_aux1 / p0ref) ** rd_o_cpd
    z_temp = compute_z_temp(z_mc=z_mc, del_t_bg=del_t_bg, t0sl_bg=t0sl_bg, h_scal_bg=h_scal_bg)
    rho_ref_mc = z_aux1 / (rd * z_temp)
    theta_ref_mc = z_temp / exner_ref_mc
    return (
        theta_ref_mc,
        exner_ref_mc,
        rho_ref_mc,
    )


@gtx.field_operator
def _compute_reference_atmosphere_edge_fields(
    z_me: fa.EdgeKField[wpfloat], p0ref: wpfloat, p0sl_bg: wpfloat, grav: wpfloat,
    cpd: wpfloat, rd: wpfloat, h_scal_bg: wpfloat, t0sl_bg: wpfloat, del_t_bg: wpfloat,
) -> tuple[fa.EdgeKField[wpfloat], fa.EdgeKField[wpfloat]]:
    denom = t0sl_bg - del_t_bg
    exp_z_me = exp(z_me / h_scal_bg)
    logval = log((exp_z_me * denom + del_t_bg) / t0sl_bg)
    z_aux_1 = p0sl_bg * exp(-grav / rd * h_scal_bg / denom * logval)
    z_temp = denom + del_t_bg * exp(-z_me / h_scal_bg)
    rho_ref_me = z_aux_1 / (rd * z_temp)
    rd_o_cpd = rd / cpd
    theta_ref_me = z_temp / (z_aux_1 / p0ref) ** rd_o_cpd
    return (rho_ref_me, theta_ref_me)


@gtx.field_operator
def compute_d_exner_dz_ref_ic(
    theta_ref_ic: fa.CellKField[wpfloat], grav: wpfloat, cpd: wpfloat,
) -> fa.CellKField[wpfloat]:
    return -grav / (cpd * theta_ref_ic)


@gtx.field_operator
def _update_two_cell_kdim_fields_with_tendency(
    field_1: fa.CellKField[wpfloat], field_2: fa.CellKField[wpfloat],
    tendency_1: fa.CellKField[wpfloat], tendency_2: fa.CellKField[wpfloat], dtime: wpfloat,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    new_field_1 = field_1 + tendency_1 * dtime
    new_field_2 = field_2 + tendency_2 * dtime
    return new_field_1, new_field_2


@gtx.field_operator
def _compute_advection_deepatmo_fields(
    height_u: fa.KField[gtx.float64], height_l: fa.KField[gtx.float64],
    grid_sphere_radius: gtx.float64,
) -> tuple[fa.KField[gtx.float64], fa.KField[gtx.float64], fa.KField[gtx.float64]]:
    height = 0.5 * (height_l + height_u)
    radial_distance = height + grid_sphere_radius
    radial_distance_l = grid_sphere_radius + height_l
    radial_distance_u = grid_sphere_radius + height_u
    deepatmo_gradh = grid_sphere_radius / radial_distance
    deepatmo_divh = (
        deepatmo_gradh
        * 3.0
        / 4.0
        / (
            1.0
            - radial_distance_l * radial_distance_u / (radial_distance_l + radial_distance_u) ** 2
        )
    )
    deepatmo_divzL = 3.0 / (
        1.0 + radial_distance_u / radial_distance_l + (radial_distance_u / radial_distance_l) ** 2
    )
    deepatmo_divzU = 3.0 / (
        1.0 + radial_distance_l / radial_distance_u + (radial_distance_l / radial_distance_u) ** 2
    )
    return deepatmo_divh, deepatmo_divzL, deepatmo_divzU


@gtx.program
def reference_atmosphere(
    z_height: fa.CellKField[wpfloat], z_me: fa.EdgeKField[wpfloat],
    theta_ref_ic: fa.CellKField[wpfloat], exner_ref_mc: fa.CellKField[wpfloat],
    rho_ref_mc: fa.CellKField[wpfloat], theta_ref_mc: fa.CellKField[wpfloat],
    rho_ref_me: fa.EdgeKField[wpfloat], theta_ref_me: fa.EdgeKField[wpfloat],
    d_exner_dz_ref_ic: fa.CellKField[wpfloat], field_1: fa.CellKField[wpfloat],
    field_2: fa.CellKField[wpfloat], tendency_1: fa.CellKField[wpfloat],
    tendency_2: fa.CellKField[wpfloat], new_field_1: fa.CellKField[wpfloat],
    new_field_2: fa.CellKField[wpfloat], height_u: fa.KField[gtx.float64],
    height_l: fa.KField[gtx.float64], deepatmo_divh: fa.KField[gtx.float64],
    deepatmo_divzL: fa.KField[gtx.float64], deepatmo_divzU: fa.KField[gtx.float64],
    grid_sphere_radius: gtx.float64, p0ref: wpfloat, p0sl_bg: wpfloat, grav: wpfloat,
    cpd: wpfloat, rd: wpfloat, h_scal_bg: wpfloat, t0sl_bg: wpfloat, del_t_bg: wpfloat,
    dtime: wpfloat, cell_start: gtx.int32, cell_end: gtx.int32, edge_start: gtx.int32,
    edge_end: gtx.int32, vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _compute_reference_atmosphere_cell_fields(
        z_height, p0ref, p0sl_bg, grav, cpd, rd, h_scal_bg, t0sl_bg, del_t_bg,
        out=(theta_ref_mc, exner_ref_mc, rho_ref_mc),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_reference_atmosphere_edge_fields(
        z_me, p0ref, p0sl_bg, grav, cpd, rd, h_scal_bg, t0sl_bg, del_t_bg,
        out=(rho_ref_me, theta_ref_me),
        domain={dims.EdgeDim: (edge_start, edge_end),
                dims.KDim: (vertical_start, vertical_end)})
    compute_d_exner_dz_ref_ic(theta_ref_ic, grav=grav, cpd=cpd, out=d_exner_dz_ref_ic,
                              domain={dims.CellDim: (cell_start, cell_end),
                                      dims.KDim: (vertical_start, vertical_end + 1)})
    _update_two_cell_kdim_fields_with_tendency(
        field_1=field_1, field_2=field_2, tendency_1=tendency_1, tendency_2=tendency_2,
        dtime=dtime, out=(new_field_1, new_field_2),
        domain={dims.CellDim: (cell_start, cell_end),
                dims.KDim: (vertical_start, vertical_end)})
    _compute_advection_deepatmo_fields(
        height_u=height_u, height_l=height_l, grid_sphere_radius=grid_sphere_radius,
        out=(deepatmo_divh, deepatmo_divzL, deepatmo_divzU),
        domain={dims.KDim: (vertical_start, vertical_end)})


CONSTANTS = dict(p0ref=100000.0, p0sl_bg=101325.0, grav=9.80665, cpd=1004.64, rd=287.04,
                 h_scal_bg=10000.0, t0sl_bg=288.15, del_t_bg=75.0)


def reference_numpy(z, c):
    denom = c["t0sl_bg"] - c["del_t_bg"]
    logval = np.log((np.exp(z / c["h_scal_bg"]) * denom + c["del_t_bg"]) / c["t0sl_bg"])
    pressure = c["p0sl_bg"] * np.exp(-c["grav"] / c["rd"] * c["h_scal_bg"] / denom * logval)
    temperature = denom + c["del_t_bg"] * np.exp(-z / c["h_scal_bg"])
    exner = (pressure / c["p0ref"]) ** (c["rd"] / c["cpd"])
    return temperature / exner, exner, pressure / (c["rd"] * temperature)


@pytest.mark.parametrize("bounds", [(0, NC, 0, NE, 0, NLEV), (1, NC - 1, 2, NE, 3, NLEV - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_reference_atmosphere(backend, bounds):
    cs, ce, es, ee, vs, ve = bounds
    a = dict(z_height=RNG.uniform(0.0, 20000.0, (NC, NLEV)),
             z_me=RNG.uniform(0.0, 20000.0, (NE, NLEV)),
             theta_ref_ic=RNG.uniform(250.0, 400.0, (NC, NH)),
             field_1=RNG.standard_normal((NC, NLEV)), field_2=RNG.standard_normal((NC, NLEV)),
             tendency_1=RNG.standard_normal((NC, NLEV)),
             tendency_2=RNG.standard_normal((NC, NLEV)))
    base = {n: f64(NC, NLEV) for n in ("exner_ref_mc", "rho_ref_mc", "theta_ref_mc",
                                       "new_field_1", "new_field_2")}
    base |= dict(rho_ref_me=f64(NE, NLEV), theta_ref_me=f64(NE, NLEV),
                 d_exner_dz_ref_ic=f64(NC, NH), deepatmo_divh=f64(NLEV),
                 deepatmo_divzL=f64(NLEV), deepatmo_divzU=f64(NLEV))
    got = {n: v.copy() for n, v in base.items()}
    dtime, radius = 12.5, 6.371229e6
    vct_a = np.linspace(40000.0, 0.0, NH)
    reference_atmosphere(**a, **got, **CONSTANTS, height_u=vct_a[:NLEV].copy(),
                         height_l=vct_a[1:].copy(), grid_sphere_radius=radius,
                         dtime=dtime, cell_start=cs, cell_end=ce,
                         edge_start=es, edge_end=ee, vertical_start=vs, vertical_end=ve,
                         offset_provider=TABLES, backend=backend)

    theta, exner, rho = reference_numpy(a["z_height"], CONSTANTS)
    theta_e, _, rho_e = reference_numpy(a["z_me"], CONSTANTS)
    ddz = -CONSTANTS["grav"] / (CONSTANTS["cpd"] * a["theta_ref_ic"])
    want = dict(theta_ref_mc=inside(theta, base["theta_ref_mc"], cs, ce, vs, ve),
                exner_ref_mc=inside(exner, base["exner_ref_mc"], cs, ce, vs, ve),
                rho_ref_mc=inside(rho, base["rho_ref_mc"], cs, ce, vs, ve),
                rho_ref_me=inside(rho_e, base["rho_ref_me"], es, ee, vs, ve),
                theta_ref_me=inside(theta_e, base["theta_ref_me"], es, ee, vs, ve),
                d_exner_dz_ref_ic=inside(ddz, base["d_exner_dz_ref_ic"], cs, ce, vs, ve + 1),
                new_field_1=inside(a["field_1"] + a["tendency_1"] * dtime, base["new_field_1"],
                                   cs, ce, vs, ve),
                new_field_2=inside(a["field_2"] + a["tendency_2"] * dtime, base["new_field_2"],
                                   cs, ce, vs, ve))
    r_u, r_l = radius + vct_a[:NLEV], radius + vct_a[1:]
    r_mid = radius + 0.5 * (vct_a[:NLEV] + vct_a[1:])
    want["deepatmo_divh"] = inside(radius / r_mid * 0.75 / (1.0 - r_l * r_u / (r_l + r_u) ** 2),
                                   base["deepatmo_divh"], vs, ve)
    want["deepatmo_divzL"] = inside(3.0 / (1.0 + r_u / r_l + (r_u / r_l) ** 2),
                                    base["deepatmo_divzL"], vs, ve)
    want["deepatmo_divzU"] = inside(3.0 / (1.0 + r_l / r_u + (r_l / r_u) ** 2),
                                    base["deepatmo_divzU"], vs, ve)
    check(got, want, rtol=1e-12)


# ================================================================== Smagorinsky and turbulence
#
# icon4py's fused diffusion stencil: the nabla2 of ``vn`` and the Smagorinsky
# coefficients on edges (``E2C2V`` vertices, coefficient slots picked by
# ``E2C2VDim(i)``) and, only when a boolean argument asks for it, the
# turbulence diagnostics on cell half levels (a conditional expression
# choosing between a call's tuple and the tuple of the fields passed in),
# written on a tuple of four domains: two over edges and full levels, two
# over cells and half levels.


@gtx.field_operator
def _calculate_nabla2_and_smag_coefficients_for_vn(
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat], u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    vn: fa.EdgeKField[wpfloat], smag_limit: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    smag_offset: vpfloat,
) -> tuple[fa.EdgeKField[vpfloat], fa.EdgeKField[vpfloat], fa.EdgeKField[wpfloat]]:
    diff_multfac_smag_wp, u_vert_wp, v_vert_wp, smag_offset_wp = astype(
        (diff_multfac_smag, u_vert, v_vert, smag_offset), wpfloat)
    u0, u1, u2, u3 = (u_vert_wp(E2C2V[0]), u_vert_wp(E2C2V[1]), u_vert_wp(E2C2V[2]),
                      u_vert_wp(E2C2V[3]))
    v0, v1, v2, v3 = (v_vert_wp(E2C2V[0]), v_vert_wp(E2C2V[1]), v_vert_wp(E2C2V[2]),
                      v_vert_wp(E2C2V[3]))
    px, py = primal_normal_vert_x, primal_normal_vert_y
    dx, dy = dual_normal_vert_x, dual_normal_vert_y
    dvt_tang_wp = -(u0 * dx[E2C2VDim(0)] + v0 * dy[E2C2VDim(0)]) + (
        u1 * dx[E2C2VDim(1)] + v1 * dy[E2C2VDim(1)])
    dvt_norm_vp = astype(-(u2 * dx[E2C2VDim(2)] + v2 * dy[E2C2VDim(2)])
                         + (u3 * dx[E2C2VDim(3)] + v3 * dy[E2C2VDim(3)]), vpfloat)
    p0 = u0 * px[E2C2VDim(0)] + v0 * py[E2C2VDim(0)]
    p1 = u1 * px[E2C2VDim(1)] + v1 * py[E2C2VDim(1)]
    p2 = u2 * px[E2C2VDim(2)] + v2 * py[E2C2VDim(2)]
    p3 = u3 * px[E2C2VDim(3)] + v3 * py[E2C2VDim(3)]
    kh_smag_1_vp = -astype(p0, vpfloat) + astype(p1, vpfloat)
    dvt_tang_vp = astype(dvt_tang_wp * tangent_orientation, vpfloat)
    kh_smag_1_wp, dvt_norm_wp = astype((kh_smag_1_vp, dvt_norm_vp), wpfloat)
    kh_smag_1_wp = (kh_smag_1_wp * tangent_orientation * inv_primal_edge_length
                    + dvt_norm_wp * inv_vert_vert_length)
    kh_smag_1_wp = kh_smag_1_wp * kh_smag_1_wp
    kh_smag_2_wp = astype(-astype(p2, vpfloat) + astype(p3, vpfloat), wpfloat)
    kh_smag_2_wp = (kh_smag_2_wp * inv_vert_vert_length
                    - astype(dvt_tang_vp, wpfloat) * inv_primal_edge_length)
    kh_smag_2_wp = kh_smag_2_wp * kh_smag_2_wp
    kh_smag_e_wp = diff_multfac_smag_wp * sqrt(kh_smag_2_wp + kh_smag_1_wp)
    z_nabla2_e_wp = (astype(astype(p0, vpfloat) + astype(p1, vpfloat), wpfloat)
                     - wpfloat("2.0") * vn) * (inv_primal_edge_length * inv_primal_edge_length)
    z_nabla2_e_wp = z_nabla2_e_wp + (
        astype(astype(p2, vpfloat) + astype(p3, vpfloat), wpfloat)
        - wpfloat("2.0") * vn) * (inv_vert_vert_length * inv_vert_vert_length)
    z_nabla2_e_wp = wpfloat("4.0") * z_nabla2_e_wp
    kh_smag_e_vp = maximum(vpfloat("0.0"), astype(kh_smag_e_wp - smag_offset_wp, vpfloat))
    kh_smag_e_vp = minimum(kh_smag_e_vp, smag_limit)
    return kh_smag_e_vp, astype(kh_smag_e_wp, vpfloat), z_nabla2_e_wp


@gtx.field_operator
def _temporary_fields_for_turbulence_diagnostics(
    kh_smag_ec: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    diff_multfac_smag: fa.KField[vpfloat],
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    kh_smag_ec_wp, diff_multfac_smag_wp = astype((kh_smag_ec, diff_multfac_smag), wpfloat)
    kh_c_wp = (neighbor_sum(kh_smag_ec_wp(C2E) * e_bln_c_s, axis=dims.C2EDim)
               / diff_multfac_smag_wp)
    div_wp = neighbor_sum(vn(C2E) * geofac_div, axis=dims.C2EDim)
    return astype((kh_c_wp, div_wp), vpfloat)


@gtx.field_operator
def _calculate_diagnostics_for_turbulence(
    div: fa.CellKField[vpfloat], kh_c: fa.CellKField[vpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    wgtfac_c_wp, div_wp, kh_c_wp = astype((wgtfac_c, div, kh_c), wpfloat)
    div_ic_wp = wgtfac_c_wp * div_wp(dims.KHalfDim + 0.5) + (
        wpfloat("1.0") - wgtfac_c_wp) * div_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = wgtfac_c_wp * kh_c_wp(dims.KHalfDim + 0.5) + (
        wpfloat("1.0") - wgtfac_c_wp) * kh_c_wp(dims.KHalfDim - 0.5)
    hdef_ic_wp = hdef_ic_wp * hdef_ic_wp
    return astype((div_ic_wp, hdef_ic_wp), vpfloat)


@gtx.field_operator
def _calculate_diagnostic_quantities_for_turbulence(
    kh_smag_ec: fa.EdgeKField[vpfloat], vn: fa.EdgeKField[wpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    diff_multfac_smag: fa.KField[vpfloat], wgtfac_c: fa.CellKHalfField[vpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    kh_c, div = _temporary_fields_for_turbulence_diagnostics(
        kh_smag_ec, vn, e_bln_c_s, geofac_div, diff_multfac_smag)
    div_ic_vp, hdef_ic_vp = _calculate_diagnostics_for_turbulence(div, kh_c, wgtfac_c)
    return div_ic_vp, hdef_ic_vp


@gtx.field_operator
def _calculate_nabla2_smag_and_turbulence_diagnostics(
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat], u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    vn: fa.EdgeKField[wpfloat], smag_limit: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat], div_ic: fa.CellKHalfField[vpfloat],
    hdef_ic: fa.CellKHalfField[vpfloat], smag_offset: vpfloat,
    compute_diagnostic_quantities: bool,
) -> tuple[
    fa.EdgeKField[vpfloat],
    fa.EdgeKField[wpfloat],
    fa.CellKHalfField[vpfloat],
    fa.CellKHalfField[vpfloat],
]:
    kh_smag_e, kh_smag_ec, z_nabla2_e = _calculate_nabla2_and_smag_coefficients_for_vn(
        diff_multfac_smag=diff_multfac_smag, tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length, u_vert=u_vert, v_vert=v_vert,
        primal_normal_vert_x=primal_normal_vert_x, primal_normal_vert_y=primal_normal_vert_y,
        dual_normal_vert_x=dual_normal_vert_x, dual_normal_vert_y=dual_normal_vert_y, vn=vn,
        smag_limit=smag_limit, smag_offset=smag_offset,
    )
    div_ic, hdef_ic = (
        _calculate_diagnostic_quantities_for_turbulence(
            kh_smag_ec=kh_smag_ec, vn=vn, e_bln_c_s=e_bln_c_s, geofac_div=geofac_div,
            diff_multfac_smag=diff_multfac_smag, wgtfac_c=wgtfac_c,
        )
        if compute_diagnostic_quantities
        else (div_ic, hdef_ic)
    )
    return kh_smag_e, z_nabla2_e, div_ic, hdef_ic


@gtx.program
def calculate_nabla2_smag_and_turbulence_diagnostics(
    diff_multfac_smag: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    tangent_orientation: fa.EdgeField[wpfloat], inv_primal_edge_length: fa.EdgeField[wpfloat],
    inv_vert_vert_length: fa.EdgeField[wpfloat], u_vert: fa.VertexKField[vpfloat],
    v_vert: fa.VertexKField[vpfloat],
    primal_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    primal_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_x: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    dual_normal_vert_y: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2C2VDim], wpfloat],
    vn: fa.EdgeKField[wpfloat], smag_limit: gtx.Field[gtx.Dims[dims.KDim], vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    geofac_div: gtx.Field[gtx.Dims[dims.CellDim, dims.C2EDim], wpfloat],
    wgtfac_c: fa.CellKHalfField[vpfloat], kh_smag_e: fa.EdgeKField[vpfloat],
    z_nabla2_e: fa.EdgeKField[wpfloat], div_ic: fa.CellKHalfField[vpfloat],
    hdef_ic: fa.CellKHalfField[vpfloat], smag_offset: vpfloat,
    compute_diagnostic_quantities: bool, edge_horizontal_start: gtx.int32,
    edge_horizontal_end: gtx.int32, edge_vertical_start: gtx.int32,
    edge_vertical_end: gtx.int32, cell_horizontal_start: gtx.int32,
    cell_horizontal_end: gtx.int32, cell_vertical_start: gtx.int32,
    cell_vertical_end: gtx.int32,
) -> None:
    _calculate_nabla2_smag_and_turbulence_diagnostics(
        diff_multfac_smag=diff_multfac_smag, tangent_orientation=tangent_orientation,
        inv_primal_edge_length=inv_primal_edge_length,
        inv_vert_vert_length=inv_vert_vert_length, u_vert=u_vert, v_vert=v_vert,
        primal_normal_vert_x=primal_normal_vert_x, primal_normal_vert_y=primal_normal_vert_y,
        dual_normal_vert_x=dual_normal_vert_x, dual_normal_vert_y=dual_normal_vert_y, vn=vn,
        smag_limit=smag_limit, e_bln_c_s=e_bln_c_s, geofac_div=geofac_div, wgtfac_c=wgtfac_c,
        div_ic=div_ic, hdef_ic=hdef_ic, smag_offset=smag_offset,
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


def smag_numpy(a):
    """Smagorinsky coefficient (clipped and not) and nabla2 of vn, all edges and levels."""
    e2c2v = TABLES["E2C2V"]
    u, v = a["u_vert"].astype(np.float64), a["v_vert"].astype(np.float64)

    def proj(nx, ny, j):
        return u[e2c2v[:, j]] * a[nx][:, j, None] + v[e2c2v[:, j]] * a[ny][:, j, None]

    def dual(j):
        return proj("dual_normal_vert_x", "dual_normal_vert_y", j)

    def primal(j):
        return proj("primal_normal_vert_x", "primal_normal_vert_y", j)

    tang = a["tangent_orientation"][:, None]
    ipe, ivv = a["inv_primal_edge_length"][:, None], a["inv_vert_vert_length"][:, None]
    dvt_tang = (dual(1) - dual(0)) * tang
    dvt_norm = dual(3) - dual(2)
    k1 = ((primal(1) - primal(0)) * tang * ipe + dvt_norm * ivv) ** 2
    k2 = ((primal(3) - primal(2)) * ivv - dvt_tang * ipe) ** 2
    kh_ec = a["diff_multfac_smag"].astype(np.float64) * np.sqrt(k1 + k2)
    vn = a["vn"]
    nabla2 = 4.0 * ((primal(0) + primal(1) - 2.0 * vn) * ipe ** 2
                    + (primal(2) + primal(3) - 2.0 * vn) * ivv ** 2)
    kh_e = np.minimum(np.maximum(0.0, kh_ec - float(a["smag_offset"])),
                      a["smag_limit"].astype(np.float64))
    return kh_e, kh_ec, nabla2


def smag_inputs():
    return dict(diff_multfac_smag=RNG.uniform(0.5, 1.0, NLEV).astype(np.float32),
                tangent_orientation=RNG.choice([-1.0, 1.0], NE),
                inv_primal_edge_length=f64(NE) + 0.5, inv_vert_vert_length=f64(NE) + 0.5,
                u_vert=RNG.standard_normal((NV, NLEV)).astype(np.float32),
                v_vert=RNG.standard_normal((NV, NLEV)).astype(np.float32),
                primal_normal_vert_x=RNG.standard_normal((NE, 4)),
                primal_normal_vert_y=RNG.standard_normal((NE, 4)),
                dual_normal_vert_x=RNG.standard_normal((NE, 4)),
                dual_normal_vert_y=RNG.standard_normal((NE, 4)),
                vn=RNG.standard_normal((NE, NLEV)),
                smag_limit=RNG.uniform(1.0, 3.0, NLEV).astype(np.float32),
                e_bln_c_s=f64(NC, 3), geofac_div=RNG.standard_normal((NC, 3)),
                wgtfac_c=f64(NC, NH).astype(np.float32), smag_offset=np.float32(0.25))


def smag_outputs():
    return dict(kh_smag_e=f64(NE, NLEV).astype(np.float32), z_nabla2_e=f64(NE, NLEV),
                div_ic=f64(NC, NH).astype(np.float32), hdef_ic=f64(NC, NH).astype(np.float32))


def smag_expected(a, base, diagnostics, bounds):
    es, ee, evs, eve, cs, ce, cvs, cve = bounds
    kh_e, kh_ec, nabla2 = smag_numpy(a)
    want = dict(kh_smag_e=inside(kh_e, base["kh_smag_e"], es, ee, evs, eve),
                z_nabla2_e=inside(nabla2, base["z_nabla2_e"], es, ee, evs, eve),
                div_ic=base["div_ic"], hdef_ic=base["hdef_ic"])
    if diagnostics:
        c2e = TABLES["C2E"]
        kh_c = ((kh_ec[c2e] * a["e_bln_c_s"][:, :, None]).sum(axis=1)
                / a["diff_multfac_smag"].astype(np.float64))
        div = (a["vn"][c2e] * a["geofac_div"][:, :, None]).sum(axis=1)
        w = a["wgtfac_c"].astype(np.float64)[:, 1:NLEV]
        half_div, half_kh = np.zeros((NC, NH)), np.zeros((NC, NH))
        half_div[:, 1:NLEV] = w * div[:, 1:] + (1.0 - w) * div[:, :-1]
        half_kh[:, 1:NLEV] = (w * kh_c[:, 1:] + (1.0 - w) * kh_c[:, :-1]) ** 2
        want["div_ic"] = inside(half_div, base["div_ic"], cs, ce, cvs, cve)
        want["hdef_ic"] = inside(half_kh, base["hdef_ic"], cs, ce, cvs, cve)
    return want


@pytest.mark.parametrize("diagnostics", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_nabla2_smag_and_turbulence_diagnostics(backend, diagnostics):
    bounds = es, ee, evs, eve, cs, ce, cvs, cve = 1, NE - 1, 0, NLEV, 1, NC - 1, 1, NLEV
    a, base = smag_inputs(), smag_outputs()
    got = {n: v.copy() for n, v in base.items()}
    calculate_nabla2_smag_and_turbulence_diagnostics(
        **a, **got, compute_diagnostic_quantities=diagnostics, edge_horizontal_start=es,
        edge_horizontal_end=ee, edge_vertical_start=evs, edge_vertical_end=eve,
        cell_horizontal_start=cs, cell_horizontal_end=ce, cell_vertical_start=cvs,
        cell_vertical_end=cve, offset_provider=TABLES, backend=backend)
    check(got, smag_expected(a, base, diagnostics, bounds), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_on_edge_and_half_level_cell_domains(backend):
    # The fused operator called directly, as icon4py's program calls it: one
    # domain per output, over other dimensions and with NumPy integer bounds,
    # the half-level outputs passed in and written in place.
    bounds = es, ee, evs, eve, cs, ce, cvs, cve = 0, NE - 2, 2, NLEV, 2, NC, 2, NLEV - 1
    i32 = np.int32
    a, base = smag_inputs(), smag_outputs()
    got = {n: v.copy() for n, v in base.items()}
    edges = {dims.EdgeDim: (i32(es), i32(ee)), dims.KDim: (i32(evs), i32(eve))}
    cells = {dims.CellDim: (i32(cs), i32(ce)), dims.KHalfDim: (i32(cvs), i32(cve))}
    _calculate_nabla2_smag_and_turbulence_diagnostics(
        **a, div_ic=got["div_ic"], hdef_ic=got["hdef_ic"], compute_diagnostic_quantities=True,
        out=(got["kh_smag_e"], got["z_nabla2_e"], got["div_ic"], got["hdef_ic"]),
        domain=(edges, edges, cells, cells), offset_provider=TABLES, backend=backend)
    check(got, smag_expected(a, base, True, bounds), rtol=2e-4, atol=2e-4)


# ================================================================== zdiff_gradp bounds
#
# icon4py's first-match search of ``compute_zdiff_gradp``: a query on
# ``(Edge, K)`` compared with candidate columns on ``(Edge, Cand)`` (a local
# dimension with an identity connectivity), reduced over the candidates with
# ``min_over`` and ``max_over`` of ``int32`` values picked by ``where``.

EdgeKField = gtx.Field[gtx.Dims[dims.EdgeDim, dims.KDim], gtx.float64]
EdgeCandField = gtx.Field[gtx.Dims[dims.EdgeDim, dims.CandDim], gtx.float64]
EdgeCandIntField = gtx.Field[gtx.Dims[dims.EdgeDim, dims.CandDim], gtx.int32]
EdgeIntField = gtx.Field[gtx.Dims[dims.EdgeDim], gtx.int32]
EdgeKIntField = gtx.Field[gtx.Dims[dims.EdgeDim, dims.KDim], gtx.int32]


@gtx.field_operator
def _zdiff_match_bounds(
    query: EdgeKField, upper: EdgeCandField, lower: EdgeCandField,
    cand_idx: EdgeCandIntField, fi: EdgeIntField, nlev: gtx.int32,
) -> tuple[EdgeKIntField, EdgeKIntField]:
    deepest = nlev - 1
    in_range = cand_idx >= fi
    bracket = (upper >= query) & (query >= lower)
    unconditional = cand_idx == deepest
    gated = in_range & (unconditional | bracket)
    first_match = min_over(where(gated, cand_idx, nlev), axis=dims.CandDim)
    last_real_match = max_over(where(in_range & bracket, cand_idx, -1), axis=dims.CandDim)
    return first_match, last_real_match


@gtx.program
def _zdiff_match_bounds_program(
    query: EdgeKField, upper: EdgeCandField, lower: EdgeCandField,
    cand_idx: EdgeCandIntField, fi: EdgeIntField, nlev: gtx.int32,
    out_first: EdgeKIntField, out_last: EdgeKIntField,
) -> None:
    _zdiff_match_bounds(query, upper, lower, cand_idx, fi, nlev, out=(out_first, out_last))


@pytest.mark.parametrize("backend", BACKENDS)
def test_zdiff_match_bounds(backend):
    z_ifc = np.sort(RNG.uniform(0.0, 1000.0, (NE, NH)), axis=1)[:, ::-1].copy()
    upper, lower = z_ifc[:, :-1].copy(), z_ifc[:, 1:].copy()
    query = RNG.uniform(0.0, 1000.0, (NE, NLEV))
    query[:, 3] = upper[:, 5]                       # ties with a bracket's top
    cand = np.broadcast_to(np.arange(NLEV, dtype=np.int32), (NE, NLEV)).copy()
    fi = RNG.integers(0, NLEV, NE).astype(np.int32)
    first, last = np.zeros((NE, NLEV), np.int32), np.zeros((NE, NLEV), np.int32)
    _zdiff_match_bounds_program(query, upper, lower, cand, fi, np.int32(NLEV), first, last,
                                offset_provider={"Cand": cand}, backend=backend)

    in_range = cand[:, None, :] >= fi[:, None, None]
    bracket = ((upper[:, None, :] >= query[:, :, None])
               & (query[:, :, None] >= lower[:, None, :]))
    gated = in_range & ((cand[:, None, :] == NLEV - 1) | bracket)
    want_first = np.where(gated, cand[:, None, :], NLEV).min(axis=2)
    want_last = np.where(in_range & bracket, cand[:, None, :], -1).max(axis=2)
    np.testing.assert_array_equal(first, want_first)
    np.testing.assert_array_equal(last, want_last)
    assert first.dtype == np.int32 and (want_last >= 0).any()


# ================================================================== contravariant correction
#
# icon4py's contravariant correction brought from edges to cell half levels:
# a ``concat_where`` on a runtime ``nflatlev`` between a nested call (the
# edge-to-cell average through flattened ``C2CE`` weights) and a zero
# broadcast, then a second one between the interpolation to half levels and
# zero.


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s(C2CE) * interpolant_wp(C2E), axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_vp(
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    interpolation_to_half_levels_vp = wgtfac_c * interpolant + (
        vpfloat("1.0") - wgtfac_c) * interpolant(Koff[-1])
    return interpolation_to_half_levels_vp


@gtx.field_operator
def _interpolate_contravariant_correction_to_cells_on_half_levels(
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], ta.wpfloat],
    wgtfac_c: fa.CellKField[ta.vpfloat], nflatlev: gtx.int32,
) -> fa.CellKField[ta.vpfloat]:
    contravariant_correction_at_cells_model_levels = concat_where(
        dims.KDim >= nflatlev,
        _interpolate_to_cell_center(contravariant_correction_at_edges_on_model_levels, e_bln_c_s),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
    )
    contravariant_correction_at_cells_model_levels = astype(
        contravariant_correction_at_cells_model_levels, vpfloat)
    contravariant_correction_at_cells_on_half_levels = concat_where(
        dims.KDim >= nflatlev + 1,
        _interpolate_cell_field_to_half_levels_vp(
            wgtfac_c=wgtfac_c, interpolant=contravariant_correction_at_cells_model_levels),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
    )
    return contravariant_correction_at_cells_on_half_levels


@gtx.program
def interpolate_contravariant_correction_to_cells_on_half_levels(
    contravariant_correction_at_edges_on_model_levels: fa.EdgeKField[ta.vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], ta.wpfloat], wgtfac_c: fa.CellKField[ta.vpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKField[ta.vpfloat],
    nflatlev: gtx.int32, horizontal_start: gtx.int32, horizontal_end: gtx.int32,
    vertical_start: gtx.int32, vertical_end: gtx.int32,
):
    _interpolate_contravariant_correction_to_cells_on_half_levels(
        contravariant_correction_at_edges_on_model_levels, e_bln_c_s, wgtfac_c, nflatlev,
        out=contravariant_correction_at_cells_on_half_levels,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)})


@pytest.mark.parametrize("levels", [(0, NLEV, 0), (1, NLEV, 3), (2, NLEV - 1, NLEV - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_contravariant_correction_to_cells_on_half_levels(backend, levels):
    vs, ve, nflatlev = levels
    hs, he = 1, NC - 1
    corr = RNG.standard_normal((NE, NLEV)).astype(np.float32)
    e_bln_c_s, wgtfac_c = f64(NC * 3), f64(NC, NH).astype(np.float32)
    base = f64(NC, NH).astype(np.float32)
    got = base.copy()
    interpolate_contravariant_correction_to_cells_on_half_levels(
        corr, e_bln_c_s, wgtfac_c, got, nflatlev=nflatlev, horizontal_start=hs,
        horizontal_end=he, vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
        backend=backend)

    cells = (corr.astype(np.float64)[TABLES["C2E"]]
             * e_bln_c_s.reshape(NC, 3)[:, :, None]).sum(axis=1).astype(np.float32)
    k = np.arange(NLEV)
    cells = np.where(k >= nflatlev, cells, np.float32(0.0))
    w = wgtfac_c[:, :NLEV]
    half = np.zeros((NC, NLEV), np.float32)
    half[:, 1:] = w[:, 1:] * cells[:, 1:] + (np.float32(1.0) - w[:, 1:]) * cells[:, :-1]
    half = np.where(k >= nflatlev + 1, half, np.float32(0.0))
    np.testing.assert_allclose(got, inside(half, base, hs, he, vs, ve), rtol=1e-5, atol=1e-6)


# ================================================================== Miura edge fluxes
#
# icon4py's alternative Miura steps on edges: the barycentric back-trajectory
# (upwind cell slots picked by ``E2CDim(0)``/``E2CDim(1)`` under a boolean
# field), the linear reconstruction's flux from the upwind cell chosen by an
# ``int32`` field (``where(cell_rel_idx_dsl == 1, c(E2C[1]), c(E2C[0]))``)
# reading the distances just written, and the monotone flux limiter's factors
# from the ``E2C`` cells.


@gtx.field_operator
def _compute_barycentric_backtrajectory_alt(
    p_vn: fa.EdgeKField[ta.wpfloat], p_vt: fa.EdgeKField[ta.wpfloat],
    pos_on_tplane_e_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    pos_on_tplane_e_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    p_dthalf: ta.wpfloat,
) -> tuple[fa.EdgeKField[ta.vpfloat], fa.EdgeKField[ta.vpfloat]]:
    lvn_pos = p_vn >= 0.0
    z_ntdistv_bary_1 = -(
        p_vn * p_dthalf
        + where(lvn_pos, pos_on_tplane_e_1[E2CDim(0)], pos_on_tplane_e_1[E2CDim(1)]))
    z_ntdistv_bary_2 = -(
        p_vt * p_dthalf
        + where(lvn_pos, pos_on_tplane_e_2[E2CDim(0)], pos_on_tplane_e_2[E2CDim(1)]))
    p_distv_bary_1 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_1[E2CDim(0)]
        + z_ntdistv_bary_2 * dual_normal_cell_1[E2CDim(0)],
        z_ntdistv_bary_1 * primal_normal_cell_1[E2CDim(1)]
        + z_ntdistv_bary_2 * dual_normal_cell_1[E2CDim(1)],
    )
    p_distv_bary_2 = where(
        lvn_pos,
        z_ntdistv_bary_1 * primal_normal_cell_2[E2CDim(0)]
        + z_ntdistv_bary_2 * dual_normal_cell_2[E2CDim(0)],
        z_ntdistv_bary_1 * primal_normal_cell_2[E2CDim(1)]
        + z_ntdistv_bary_2 * dual_normal_cell_2[E2CDim(1)],
    )
    return (astype(p_distv_bary_1, vpfloat), astype(p_distv_bary_2, vpfloat))


@gtx.field_operator
def _compute_horizontal_tracer_flux_from_linear_coefficients(
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat], z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat], distv_bary_1: fa.EdgeKField[ta.vpfloat],
    distv_bary_2: fa.EdgeKField[ta.vpfloat], p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32],
) -> fa.EdgeKField[ta.wpfloat]:
    p_out_e = (
        where(cell_rel_idx_dsl == 1, z_lsq_coeff_1(E2C[1]), z_lsq_coeff_1(E2C[0]))
        + astype(distv_bary_1, wpfloat)
        * where(cell_rel_idx_dsl == 1, z_lsq_coeff_2(E2C[1]), z_lsq_coeff_2(E2C[0]))
        + astype(distv_bary_2, wpfloat)
        * where(cell_rel_idx_dsl == 1, z_lsq_coeff_3(E2C[1]), z_lsq_coeff_3(E2C[0]))
    ) * p_mass_flx_e
    return p_out_e


@gtx.field_operator
def _apply_monotone_horizontal_multiplicative_flux_factors_alt(
    z_anti: fa.EdgeKField[ta.wpfloat], z_mflx_low: fa.EdgeKField[ta.wpfloat],
    r_m: fa.CellKField[ta.wpfloat], r_p: fa.CellKField[ta.wpfloat],
) -> fa.EdgeKField[ta.wpfloat]:
    z_signum = where((z_anti > 0.0), 1.0, -1.0)
    r_frac = 0.5 * (
        (1.0 + z_signum) * minimum(r_m(E2C[0]), r_p(E2C[1]))
        + (1.0 - z_signum) * minimum(r_m(E2C[1]), r_p(E2C[0]))
    )
    p_mflx_tracer_h = z_mflx_low + minimum(1.0, r_frac) * z_anti
    return p_mflx_tracer_h


@gtx.program
def miura_edge_fluxes(
    p_vn: fa.EdgeKField[ta.wpfloat], p_vt: fa.EdgeKField[ta.wpfloat],
    pos_on_tplane_e_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    pos_on_tplane_e_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_1: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    primal_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    dual_normal_cell_2: gtx.Field[gtx.Dims[dims.EdgeDim, dims.E2CDim], ta.wpfloat],
    p_distv_bary_1: fa.EdgeKField[ta.vpfloat], p_distv_bary_2: fa.EdgeKField[ta.vpfloat],
    z_lsq_coeff_1: fa.CellKField[ta.wpfloat], z_lsq_coeff_2: fa.CellKField[ta.wpfloat],
    z_lsq_coeff_3: fa.CellKField[ta.wpfloat], p_mass_flx_e: fa.EdgeKField[ta.wpfloat],
    cell_rel_idx_dsl: fa.EdgeKField[gtx.int32], p_out_e: fa.EdgeKField[ta.wpfloat],
    z_anti: fa.EdgeKField[ta.wpfloat], z_mflx_low: fa.EdgeKField[ta.wpfloat],
    r_m: fa.CellKField[ta.wpfloat], r_p: fa.CellKField[ta.wpfloat],
    p_mflx_tracer_h: fa.EdgeKField[ta.wpfloat], p_dthalf: ta.wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32, vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    edges = {dims.EdgeDim: (horizontal_start, horizontal_end),
             dims.KDim: (vertical_start, vertical_end)}
    _compute_barycentric_backtrajectory_alt(
        p_vn, p_vt, pos_on_tplane_e_1, pos_on_tplane_e_2, primal_normal_cell_1,
        dual_normal_cell_1, primal_normal_cell_2, dual_normal_cell_2, p_dthalf,
        out=(p_distv_bary_1, p_distv_bary_2), domain=edges)
    _compute_horizontal_tracer_flux_from_linear_coefficients(
        z_lsq_coeff_1, z_lsq_coeff_2, z_lsq_coeff_3, p_distv_bary_1, p_distv_bary_2,
        p_mass_flx_e, cell_rel_idx_dsl, out=p_out_e, domain=edges)
    _apply_monotone_horizontal_multiplicative_flux_factors_alt(
        z_anti, z_mflx_low, r_m, r_p, out=p_mflx_tracer_h, domain=edges)


@pytest.mark.parametrize("bounds", [(0, NE, 0, NLEV), (2, NE - 1, 1, NLEV - 3)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_miura_edge_fluxes(backend, bounds):
    hs, he, vs, ve = bounds
    e2c = TABLES["E2C"]
    slot = ("pos_on_tplane_e_1", "pos_on_tplane_e_2", "primal_normal_cell_1",
            "dual_normal_cell_1", "primal_normal_cell_2", "dual_normal_cell_2")
    a = {n: RNG.standard_normal((NE, 2)) for n in slot}
    a |= dict(p_vn=RNG.standard_normal((NE, NLEV)), p_vt=RNG.standard_normal((NE, NLEV)),
              z_lsq_coeff_1=RNG.standard_normal((NC, NLEV)),
              z_lsq_coeff_2=RNG.standard_normal((NC, NLEV)),
              z_lsq_coeff_3=RNG.standard_normal((NC, NLEV)),
              p_mass_flx_e=RNG.standard_normal((NE, NLEV)),
              cell_rel_idx_dsl=RNG.integers(0, 2, (NE, NLEV)).astype(np.int32),
              z_anti=RNG.standard_normal((NE, NLEV)), z_mflx_low=RNG.standard_normal((NE, NLEV)),
              r_m=RNG.uniform(0.0, 2.0, (NC, NLEV)), r_p=RNG.uniform(0.0, 2.0, (NC, NLEV)))
    base = dict(p_distv_bary_1=f64(NE, NLEV).astype(np.float32),
                p_distv_bary_2=f64(NE, NLEV).astype(np.float32), p_out_e=f64(NE, NLEV),
                p_mflx_tracer_h=f64(NE, NLEV))
    got = {n: v.copy() for n, v in base.items()}
    dthalf = 30.0
    miura_edge_fluxes(**a, **got, p_dthalf=dthalf, horizontal_start=hs, horizontal_end=he,
                      vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                      backend=backend)

    pos = a["p_vn"] >= 0.0

    def upwind(name):
        return np.where(pos, a[name][:, 0, None], a[name][:, 1, None])

    d1 = -(a["p_vn"] * dthalf + upwind("pos_on_tplane_e_1"))
    d2 = -(a["p_vt"] * dthalf + upwind("pos_on_tplane_e_2"))
    bary_1 = (d1 * upwind("primal_normal_cell_1") + d2 * upwind("dual_normal_cell_1"))
    bary_2 = (d1 * upwind("primal_normal_cell_2") + d2 * upwind("dual_normal_cell_2"))
    bary_1 = inside(bary_1.astype(np.float32), base["p_distv_bary_1"], hs, he, vs, ve)
    bary_2 = inside(bary_2.astype(np.float32), base["p_distv_bary_2"], hs, he, vs, ve)
    second = a["cell_rel_idx_dsl"] == 1

    def upwind_cell(c):
        return np.where(second, c[e2c[:, 1]], c[e2c[:, 0]])

    flux = (upwind_cell(a["z_lsq_coeff_1"])
            + bary_1.astype(np.float64) * upwind_cell(a["z_lsq_coeff_2"])
            + bary_2.astype(np.float64) * upwind_cell(a["z_lsq_coeff_3"])) * a["p_mass_flx_e"]
    sign = np.where(a["z_anti"] > 0.0, 1.0, -1.0)
    r_m, r_p = a["r_m"], a["r_p"]
    frac = 0.5 * ((1.0 + sign) * np.minimum(r_m[e2c[:, 0]], r_p[e2c[:, 1]])
                  + (1.0 - sign) * np.minimum(r_m[e2c[:, 1]], r_p[e2c[:, 0]]))
    limited = a["z_mflx_low"] + np.minimum(1.0, frac) * a["z_anti"]
    want = dict(p_distv_bary_1=bary_1, p_distv_bary_2=bary_2,
                p_out_e=inside(flux, base["p_out_e"], hs, he, vs, ve),
                p_mflx_tracer_h=inside(limited, base["p_mflx_tracer_h"], hs, he, vs, ve))
    check(got, want, rtol=1e-5, atol=1e-5)


# ================================================================== torus geometry
#
# icon4py's edge geometry on a doubly periodic (torus) grid: differences of
# vertex coordinates wrapped by the domain's length and height (parameters
# reassigned by nested ``where``), the normalized tangent and normal (a tuple
# of ten in which two pairs repeat one value each, an unused parameter), the
# distance between the far vertices of the ``E2C2V`` diamond, the edge area
# under an owner mask and the Coriolis parameter.


@gtx.field_operator
def dot_product_on_edges(
    x1: fa.EdgeField[wpfloat], x2: fa.EdgeField[wpfloat], y1: fa.EdgeField[wpfloat],
    y2: fa.EdgeField[wpfloat], z1: fa.EdgeField[wpfloat], z2: fa.EdgeField[wpfloat],
) -> fa.EdgeField[wpfloat]:
    return x1 * x2 + y1 * y2 + z1 * z2


@gtx.field_operator
def norm2_on_edges(
    x: fa.EdgeField[wpfloat], y: fa.EdgeField[wpfloat], z: fa.EdgeField[wpfloat],
) -> fa.EdgeField[wpfloat]:
    return sqrt(dot_product_on_edges(x, x, y, y, z, z))


@gtx.field_operator
def normalize_cartesian_vector_on_edges(
    v_x: fa.EdgeField[wpfloat], v_y: fa.EdgeField[wpfloat], v_z: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    norm = norm2_on_edges(v_x, v_y, v_z)
    return v_x / norm, v_y / norm, v_z / norm


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def diff_on_edges_torus(
    x0: fa.EdgeField[wpfloat], x1: fa.EdgeField[wpfloat], y0: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat], domain_length: wpfloat, domain_height: wpfloat,
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    x1 = where(
        abs(x1 - x0) <= wpfloat(0.5) * domain_length,
        x1,
        where(x0 > x1, x1 + domain_length, x1 - domain_length),
    )
    y1 = where(
        abs(y1 - y0) <= wpfloat(0.5) * domain_height,
        y1,
        where(y0 > y1, y1 + domain_height, y1 - domain_height),
    )
    return (x1 - x0, y1 - y0)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def distance_on_edges_torus(
    x0: fa.EdgeField[wpfloat], x1: fa.EdgeField[wpfloat], y0: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat], domain_length: wpfloat, domain_height: wpfloat,
) -> fa.EdgeField[wpfloat]:
    xdiff, ydiff = diff_on_edges_torus(x0, x1, y0, y1, domain_length, domain_height)
    return sqrt(xdiff**2 + ydiff**2)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def cartesian_coordinates_of_edge_tangent_torus(
    vertex_x: fa.VertexField[ta.wpfloat], vertex_y: fa.VertexField[ta.wpfloat],
    edge_orientation: fa.EdgeField[ta.wpfloat], domain_length: ta.wpfloat,
    domain_height: ta.wpfloat,
) -> tuple[fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat]]:
    xdiff, ydiff = diff_on_edges_torus(
        vertex_x(E2V[0]), vertex_x(E2V[1]), vertex_y(E2V[0]), vertex_y(E2V[1]),
        domain_length, domain_height,
    )
    x = edge_orientation * xdiff
    y = edge_orientation * ydiff
    z = 0.0 * x
    return normalize_cartesian_vector_on_edges(x, y, z)


@gtx.field_operator
def cartesian_coordinates_of_edge_normal_torus(
    edge_tangent_x: fa.EdgeField[ta.wpfloat], edge_tangent_y: fa.EdgeField[ta.wpfloat],
) -> tuple[fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat]]:
    z = 0.0 * edge_tangent_x
    return normalize_cartesian_vector_on_edges(-edge_tangent_y, edge_tangent_x, z)


@gtx.field_operator
def cartesian_coordinates_edge_tangent_and_normal_torus(
    vertex_x: fa.VertexField[ta.wpfloat], vertex_y: fa.VertexField[ta.wpfloat],
    edge_x: fa.EdgeField[ta.wpfloat], edge_y: fa.EdgeField[ta.wpfloat],
    edge_orientation: fa.EdgeField[ta.wpfloat], domain_length: ta.wpfloat,
    domain_height: ta.wpfloat,
) -> tuple[
    fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat],
    fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat],
    fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat], fa.EdgeField[ta.wpfloat],
    fa.EdgeField[ta.wpfloat],
]:
    tangent_x, tangent_y, tangent_z = cartesian_coordinates_of_edge_tangent_torus(
        vertex_x=vertex_x, vertex_y=vertex_y, edge_orientation=edge_orientation,
        domain_length=domain_length, domain_height=domain_height,
    )
    tangent_u = tangent_x
    tangent_v = tangent_y
    normal_x, normal_y, normal_z = cartesian_coordinates_of_edge_normal_torus(
        edge_tangent_x=tangent_x, edge_tangent_y=tangent_y,
    )
    normal_u = normal_x
    normal_v = normal_y
    return (
        tangent_x, tangent_y, tangent_z, tangent_u, tangent_v,
        normal_x, normal_y, normal_z, normal_u, normal_v,
    )


@gtx.field_operator
def distance_of_far_edges_in_diamond_torus(
    vertex_x: fa.VertexField[ta.wpfloat], vertex_y: fa.VertexField[ta.wpfloat],
    domain_length: ta.wpfloat, domain_height: ta.wpfloat,
) -> fa.EdgeField[ta.wpfloat]:
    return distance_on_edges_torus(
        vertex_x(E2C2V[2]), vertex_x(E2C2V[3]), vertex_y(E2C2V[2]), vertex_y(E2C2V[3]),
        domain_length, domain_height,
    )


@gtx.field_operator
def edge_area(
    owner_mask: fa.EdgeField[bool], primal_edge_length: fa.EdgeField[ta.wpfloat],
    dual_edge_length: fa.EdgeField[ta.wpfloat],
) -> fa.EdgeField[ta.wpfloat]:
    return where(owner_mask, primal_edge_length * dual_edge_length, 0.0)


@gtx.field_operator
def coriolis_parameter_on_edges(
    edge_center_lat: fa.EdgeField[ta.wpfloat], angular_velocity: ta.wpfloat,
) -> fa.EdgeField[ta.wpfloat]:
    return 2.0 * angular_velocity * sin(edge_center_lat)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def torus_edge_geometry(
    vertex_x: fa.VertexField[ta.wpfloat], vertex_y: fa.VertexField[ta.wpfloat],
    edge_x: fa.EdgeField[ta.wpfloat], edge_y: fa.EdgeField[ta.wpfloat],
    edge_orientation: fa.EdgeField[ta.wpfloat], tangent_x: fa.EdgeField[ta.wpfloat],
    tangent_y: fa.EdgeField[ta.wpfloat], tangent_z: fa.EdgeField[ta.wpfloat],
    tangent_u: fa.EdgeField[ta.wpfloat], tangent_v: fa.EdgeField[ta.wpfloat],
    normal_x: fa.EdgeField[ta.wpfloat], normal_y: fa.EdgeField[ta.wpfloat],
    normal_z: fa.EdgeField[ta.wpfloat], normal_u: fa.EdgeField[ta.wpfloat],
    normal_v: fa.EdgeField[ta.wpfloat], far_vertex_distance: fa.EdgeField[ta.wpfloat],
    owner_mask: fa.EdgeField[bool], primal_edge_length: fa.EdgeField[ta.wpfloat],
    dual_edge_length: fa.EdgeField[ta.wpfloat], area: fa.EdgeField[ta.wpfloat],
    edge_center_lat: fa.EdgeField[ta.wpfloat], coriolis_parameter: fa.EdgeField[ta.wpfloat],
    domain_length: ta.wpfloat, domain_height: ta.wpfloat, angular_velocity: ta.wpfloat,
    horizontal_start: gtx.int32, horizontal_end: gtx.int32,
):
    cartesian_coordinates_edge_tangent_and_normal_torus(
        vertex_x=vertex_x, vertex_y=vertex_y, edge_x=edge_x, edge_y=edge_y,
        edge_orientation=edge_orientation, domain_length=domain_length,
        domain_height=domain_height,
        out=(
            tangent_x, tangent_y, tangent_z, tangent_u, tangent_v,
            normal_x, normal_y, normal_z, normal_u, normal_v,
        ),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end)},
    )
    distance_of_far_edges_in_diamond_torus(
        vertex_x=vertex_x, vertex_y=vertex_y, domain_length=domain_length,
        domain_height=domain_height, out=far_vertex_distance,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end)},
    )
    edge_area(owner_mask=owner_mask, primal_edge_length=primal_edge_length,
              dual_edge_length=dual_edge_length, out=area,
              domain={EdgeDim: (horizontal_start, horizontal_end)})
    coriolis_parameter_on_edges(edge_center_lat=edge_center_lat,
                                angular_velocity=angular_velocity, out=coriolis_parameter,
                                domain={dims.EdgeDim: (horizontal_start, horizontal_end)})


def torus_diff(x0, x1, length):
    x1 = np.where(np.abs(x1 - x0) <= 0.5 * length, x1,
                  np.where(x0 > x1, x1 + length, x1 - length))
    return x1 - x0


@pytest.mark.parametrize("bounds", [(0, NE), (2, NE - 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_torus_edge_geometry(backend, bounds):
    hs, he = bounds
    length, height, omega = 50000.0, 43301.27, 7.29212e-5
    a = dict(vertex_x=RNG.uniform(0.0, length, NV), vertex_y=RNG.uniform(0.0, height, NV),
             edge_x=RNG.uniform(0.0, length, NE), edge_y=RNG.uniform(0.0, height, NE),
             edge_orientation=RNG.choice([-1.0, 1.0], NE), owner_mask=RNG.random(NE) > 0.3,
             primal_edge_length=f64(NE) * 1000.0, dual_edge_length=f64(NE) * 1000.0,
             edge_center_lat=RNG.uniform(-1.5, 1.5, NE))
    names = ("tangent_x", "tangent_y", "tangent_z", "tangent_u", "tangent_v", "normal_x",
             "normal_y", "normal_z", "normal_u", "normal_v", "far_vertex_distance", "area",
             "coriolis_parameter")
    base = {n: f64(NE) for n in names}
    got = {n: v.copy() for n, v in base.items()}
    torus_edge_geometry(**a, **got, domain_length=length, domain_height=height,
                        angular_velocity=omega, horizontal_start=hs, horizontal_end=he,
                        offset_provider=TABLES, backend=backend)

    vx, vy, e2v, e2c2v = a["vertex_x"], a["vertex_y"], TABLES["E2V"], TABLES["E2C2V"]
    tx = a["edge_orientation"] * torus_diff(vx[e2v[:, 0]], vx[e2v[:, 1]], length)
    ty = a["edge_orientation"] * torus_diff(vy[e2v[:, 0]], vy[e2v[:, 1]], height)
    norm = np.sqrt(tx * tx + ty * ty)
    tx, ty = tx / norm, ty / norm
    far = np.hypot(torus_diff(vx[e2c2v[:, 2]], vx[e2c2v[:, 3]], length),
                   torus_diff(vy[e2c2v[:, 2]], vy[e2c2v[:, 3]], height))
    values = dict(tangent_x=tx, tangent_y=ty, tangent_z=np.zeros(NE), tangent_u=tx,
                  tangent_v=ty, normal_x=-ty, normal_y=tx, normal_z=np.zeros(NE),
                  normal_u=-ty, normal_v=tx, far_vertex_distance=far,
                  area=np.where(a["owner_mask"],
                                a["primal_edge_length"] * a["dual_edge_length"], 0.0),
                  coriolis_parameter=2.0 * omega * np.sin(a["edge_center_lat"]))
    check(got, {n: inside(v, base[n], hs, he) for n, v in values.items()}, rtol=1e-12,
          atol=1e-14)


# ================================================================== PPM slope, called directly
#
# icon4py's PPM slope: a ``concat_where`` on a runtime ``elev`` between two
# nested calls reading ``Koff[-1]`` and ``Koff[+1]``, the one-sided slope at
# the last level, called directly on a domain of NumPy integers.


@gtx.field_operator
def _compute_ppm_slope_a(
    p_cc: fa.CellKField[ta.wpfloat], p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    zfac_m1 = (p_cc - p_cc(Koff[-1])) / (p_cellhgt_mc_now + p_cellhgt_mc_now(Koff[-1]))
    zfac = (p_cc(Koff[+1]) - p_cc) / (p_cellhgt_mc_now(Koff[+1]) + p_cellhgt_mc_now)
    z_slope = (
        p_cellhgt_mc_now
        / (p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now + p_cellhgt_mc_now(Koff[+1]))
    ) * (
        (2.0 * p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now) * zfac
        + (p_cellhgt_mc_now + 2.0 * p_cellhgt_mc_now(Koff[+1])) * zfac_m1
    )
    return z_slope


@gtx.field_operator
def _compute_ppm_slope_b(
    p_cc: fa.CellKField[ta.wpfloat], p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
) -> fa.CellKField[ta.wpfloat]:
    zfac_m1 = (p_cc - p_cc(Koff[-1])) / (p_cellhgt_mc_now + p_cellhgt_mc_now(Koff[-1]))
    z_slope = (
        (p_cellhgt_mc_now / (p_cellhgt_mc_now(Koff[-1]) + p_cellhgt_mc_now + p_cellhgt_mc_now))
        * (p_cellhgt_mc_now + 2.0 * p_cellhgt_mc_now)
        * zfac_m1
    )
    return z_slope


@gtx.field_operator
def _compute_ppm_slope(
    p_cc: fa.CellKField[ta.wpfloat], p_cellhgt_mc_now: fa.CellKField[ta.wpfloat],
    elev: gtx.int32,
) -> fa.CellKField[ta.wpfloat]:
    z_slope = concat_where(
        dims.KDim == elev,
        _compute_ppm_slope_b(p_cc, p_cellhgt_mc_now),
        _compute_ppm_slope_a(p_cc, p_cellhgt_mc_now),
    )
    return z_slope


@pytest.mark.parametrize("levels", [(1, NLEV), (3, NLEV - 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_of_the_ppm_slope(backend, levels):
    vs, ve = levels
    hs, he = 1, NC - 1
    i32 = np.int32
    p, h = RNG.standard_normal((NC, NLEV)), RNG.uniform(100.0, 500.0, (NC, NLEV))
    base = f64(NC, NLEV)
    got = base.copy()
    _compute_ppm_slope(p, h, i32(ve - 1), out=got,
                       domain={dims.CellDim: (i32(hs), i32(he)), dims.KDim: (i32(vs), i32(ve))},
                       offset_provider=TABLES, backend=backend)
    want = np.array(base)
    for k in range(vs, ve):
        zfac_m1 = (p[:, k] - p[:, k - 1]) / (h[:, k] + h[:, k - 1])
        if k == ve - 1:
            slope = h[:, k] / (h[:, k - 1] + 2.0 * h[:, k]) * 3.0 * h[:, k] * zfac_m1
        else:
            zfac = (p[:, k + 1] - p[:, k]) / (h[:, k + 1] + h[:, k])
            slope = h[:, k] / (h[:, k - 1] + h[:, k] + h[:, k + 1]) * (
                (2.0 * h[:, k - 1] + h[:, k]) * zfac + (h[:, k] + 2.0 * h[:, k + 1]) * zfac_m1)
        want[hs:he, k] = slope[hs:he]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
