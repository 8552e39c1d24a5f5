"""A twenty-second round of ICON stencils (icon4py's field operators) in
icon4py's own spelling, beside ``test_icon_stencils_ported*.py``.

First the bin microphysics of AMPS, whose GT4Py operators are written by
code generators: the checked-in demonstration (two chunks of a per-bin
``a * x + y`` returning tuples of eight and of two fields), then the
generators themselves run here as icon4py runs them, each writing a module
to a file and importing it (the front end reads the source back from that
file): the collection rate matrix of the coalescence (one operator per pair
of chunks of collector and collectee bins, a tuple per pair, a ``wpfloat``
time step), the feasibility spike of the collection kernel (gains and losses
of every bin pair in one operator), and the wide scan of the sedimentation
(a ``NamedTuple`` carry of twice as many fields as bins built with keyword
arguments, scalar arguments of the scan given a field, the outputs read as
attributes ``s.q_00`` of the scan's result).  Then the other spikes: the
gather along ``Koff`` with a per-point offset (``offset_provider={}``), the
gather from a table over ``KDim`` alone at an index computed from a cell
field (GT4Py 1.1 refuses it; here the offset's dimensions give the result's),
the saturation vapour pressure analytic (``tanh``, ``log``, ``exp``) and
interpolated linearly from a table (tiled over cells and over ``KDim``
alone, the index from ``astype`` of a clipped temperature), and the
counter-based random numbers of ``int64`` arithmetic (``%`` of products near
``2**62``, a ``CellDim`` field times a ``KDim`` field; the integers exact, the
final division within one unit in the last place).
Last icon4py's constant fields shaped like another field
(``where(field == field, value, value)`` over cells on half levels, with a
``bool`` value, over half levels alone and over edges) and the boundary
conditions of w in the global nonhydrostatic solver: a ``concat_where`` on
``KHalfDim < 1`` choosing such a constant, nested with another on
``KHalfDim < nlev`` for a runtime ``nlev`` (called directly, from a program with
runtime bounds, and set up as the solver sets its operators up with
``with_grid_type(…).with_backend(None)``).  Then the vertical diffusion of vn
and w (``Koff[-1]`` and ``Koff[1]``, written in place on runtime levels) and
the diffusion of w on half levels with the horizontal gradients for
turbulence (``C2E2CO`` sums, an ``if`` expression on an ``int32`` choosing a
tuple, a ``concat_where`` over a level and a cell range, three outputs on a
tuple of domains bounded by ``vertical_start + 1``).
Each operator is interpreted and compiled, compared with NumPy written from
the formulas (or from icon4py's own NumPy references)."""

from __future__ import annotations

import importlib.util
import math
import sys
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
    as_offset,
    astype,
    broadcast,
    concat_where,
    exp,
    log,
    maximum,
    minimum,
    neighbor_sum,
    tanh,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)
C2E2CODim = Dimension("C2E2CO", DimensionKind.LOCAL)
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
C2E2CO = FieldOffset("C2E2CO", source=CellDim, target=(CellDim, C2E2CODim))

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.KDim, dims.KHalfDim = CellDim, EdgeDim, KDim, KHalfDim
dims.C2E2CODim = C2E2CODim
dims.Koff, dims.C2E2CO = Koff, C2E2CO

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]
fa.CellKHalfField = Field[Dims[CellDim, KHalfDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.KHalfField = Field[Dims[KHalfDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float64       # icon4py's double precision build
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

# The generated modules import these as icon4py's do (``from icon4py.model.common
# import dimension as dims, field_type_aliases as fa, type_alias as ta``).
_COMMON = types.ModuleType("icon22_common")
_COMMON.dimension, _COMMON.field_type_aliases, _COMMON.type_alias = dims, fa, ta
sys.modules.setdefault("icon22_common", _COMMON)
IMPORTS = ("import tensorir_dace.frontend as gtx\n\n"
           "from icon22_common import field_type_aliases as fa, type_alias as ta\n")

BACKENDS = ["interpreter", "compiled"]
NC, NE, NLEV = 5, 6, 6
RNG = np.random.default_rng(22001)
_TABLE_RNG = np.random.default_rng(22002)
TABLES = {"C2E2CO": np.array([np.concatenate(([c], _TABLE_RNG.choice(
    [x for x in range(NC) if x != c], 3, replace=False))) for c in range(NC)]), "Koff": KDim}


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(22003).bit_generator.state


@pytest.fixture(scope="module")
def gendir(tmp_path_factory):
    return tmp_path_factory.mktemp("amps_generated")


def load_generated_operator(gendir, source: str, module_name: str, attr: str):
    """Write generated DSL source to a real file (the front end reads the source
    back) and import the named attribute from it, as the AMPS spikes do."""
    path = gendir / f"{module_name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, attr)


def cellk(*shape_prefix, low=0.0, high=1.0):
    return RNG.uniform(low, high, (*shape_prefix, NC, NLEV))


# ================================================================== AMPS: checked-in axpy demo
#
# core/generated/axpy_demo.py (GENERATED by codegen/generate.py, nbins=10).


@gtx.field_operator
def _axpy_bins_00_08(
    x_00: fa.CellKField[ta.wpfloat],
    y_00: fa.CellKField[ta.wpfloat],
    x_01: fa.CellKField[ta.wpfloat],
    y_01: fa.CellKField[ta.wpfloat],
    x_02: fa.CellKField[ta.wpfloat],
    y_02: fa.CellKField[ta.wpfloat],
    x_03: fa.CellKField[ta.wpfloat],
    y_03: fa.CellKField[ta.wpfloat],
    x_04: fa.CellKField[ta.wpfloat],
    y_04: fa.CellKField[ta.wpfloat],
    x_05: fa.CellKField[ta.wpfloat],
    y_05: fa.CellKField[ta.wpfloat],
    x_06: fa.CellKField[ta.wpfloat],
    y_06: fa.CellKField[ta.wpfloat],
    x_07: fa.CellKField[ta.wpfloat],
    y_07: fa.CellKField[ta.wpfloat],
) -> tuple[
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
    fa.CellKField[ta.wpfloat],
]:
    out_00 = 1.0 * x_00 + y_00
    out_01 = 1.5 * x_01 + y_01
    out_02 = 2.0 * x_02 + y_02
    out_03 = 2.5 * x_03 + y_03
    out_04 = 3.0 * x_04 + y_04
    out_05 = 3.5 * x_05 + y_05
    out_06 = 4.0 * x_06 + y_06
    out_07 = 4.5 * x_07 + y_07
    return out_00, out_01, out_02, out_03, out_04, out_05, out_06, out_07


@gtx.field_operator
def _axpy_bins_08_10(
    x_08: fa.CellKField[ta.wpfloat],
    y_08: fa.CellKField[ta.wpfloat],
    x_09: fa.CellKField[ta.wpfloat],
    y_09: fa.CellKField[ta.wpfloat],
) -> tuple[fa.CellKField[ta.wpfloat], fa.CellKField[ta.wpfloat]]:
    out_08 = 5.0 * x_08 + y_08
    out_09 = 5.5 * x_09 + y_09
    return out_08, out_09


@pytest.mark.parametrize("backend", BACKENDS)
def test_axpy_demo(backend):
    x, y = cellk(10), cellk(10)
    outs = tuple(np.full((NC, NLEV), np.nan) for _ in range(10))
    _axpy_bins_00_08(*[v for b in range(8) for v in (x[b], y[b])], out=outs[:8],
                     offset_provider={}, backend=backend)
    _axpy_bins_08_10(x[8], y[8], x[9], y[9], out=outs[8:], offset_provider={}, backend=backend)
    for b in range(10):
        np.testing.assert_allclose(outs[b], (1.0 + 0.5 * b) * x[b] + y[b], rtol=1e-15)


# ================================================================== AMPS: generators
#
# codegen/templates.py (chunk_bins) and codegen/collection_gen.py: the collision
# rate matrix KC_ij = E_c_ij * (vtm_i - vtm_j) * A_c_ij * con_j * dt, one field
# operator per (i_chunk, j_chunk) pair.

_A_C_COEF = 0.25 * math.pi


def chunk_bins(nbins: int, chunk_size: int = 8) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk_size, nbins)) for lo in range(0, nbins, chunk_size)]


def kc_chunk_name(ilo: int, ihi: int, jlo: int, jhi: int) -> str:
    return f"_kc_bins_i{ilo:02d}_{ihi:02d}_j{jlo:02d}_{jhi:02d}"


def _build_kc_chunk(ilo: int, ihi: int, jlo: int, jhi: int) -> str:
    i_bins = list(range(ilo, ihi))
    j_bins = list(range(jlo, jhi))

    arg_lines = []
    for i in i_bins:
        arg_lines.append(f"len_i{i:02d}: fa.CellKField[ta.wpfloat],")
        arg_lines.append(f"vtm_i{i:02d}: fa.CellKField[ta.wpfloat],")
    for j in j_bins:
        arg_lines.append(f"len_j{j:02d}: fa.CellKField[ta.wpfloat],")
        arg_lines.append(f"vtm_j{j:02d}: fa.CellKField[ta.wpfloat],")
        arg_lines.append(f"con_j{j:02d}: fa.CellKField[ta.wpfloat],")
    arg_lines.extend(
        f"ec_i{i:02d}_j{j:02d}: fa.CellKField[ta.wpfloat]," for i in i_bins for j in j_bins
    )
    arg_lines.append("dt: ta.wpfloat,")
    args_block = "\n    ".join(arg_lines)

    outs: list[str] = []
    body_lines: list[str] = []
    for i in i_bins:
        for j in j_bins:
            out_name = f"kc_i{i:02d}_j{j:02d}"
            outs.append(out_name)
            a_c = f"({float(_A_C_COEF)!r} * (len_i{i:02d} + len_j{j:02d}) ** 2.0)"
            body_lines.append(
                f"    {out_name} = ec_i{i:02d}_j{j:02d} * (vtm_i{i:02d} - vtm_j{j:02d}) "
                f"* {a_c} * con_j{j:02d} * dt"
            )

    rets = ", ".join("fa.CellKField[ta.wpfloat]" for _ in outs)
    outs_str = ", ".join(outs)
    codes = "PLR0915, PLR0917" if len(outs) > 60 else "PLR0917"
    noqa = f"  # noqa: {codes}"
    return (
        "@gtx.field_operator\n"
        f"def {kc_chunk_name(ilo, ihi, jlo, jhi)}({noqa}\n    {args_block}\n"
        f") -> tuple[{rets}]:\n" + "\n".join(body_lines) + f"\n    return {outs_str}\n"
    )


def build_collision_rate_matrix(nbins: int, *, chunk_size: int = 8) -> str:
    blocks = [IMPORTS.rstrip("\n")]
    i_chunks = chunk_bins(nbins, chunk_size)
    j_chunks = chunk_bins(nbins, chunk_size)
    for ilo, ihi in i_chunks:
        for jlo, jhi in j_chunks:
            blocks.append(_build_kc_chunk(ilo, ihi, jlo, jhi).rstrip("\n"))
    return "\n\n\n".join(blocks) + "\n"


KC_NBINS, KC_CHUNK = 3, 2


@pytest.fixture(scope="module")
def kc_module(gendir):
    load_generated_operator(gendir, build_collision_rate_matrix(KC_NBINS, chunk_size=KC_CHUNK),
                            "icon22_collection_rate_matrix", kc_chunk_name(0, 2, 0, 2))
    return sys.modules["icon22_collection_rate_matrix"]


@pytest.mark.parametrize("chunk", [(0, 2, 2, 3), (2, 3, 0, 2)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_collision_rate_matrix(kc_module, backend, chunk):
    ilo, ihi, jlo, jhi = chunk
    length, vtm, con = cellk(KC_NBINS), cellk(KC_NBINS, high=8.0), cellk(KC_NBINS)
    ec = cellk(KC_NBINS, KC_NBINS)
    dt = 2.5
    # keyword arguments, as icon4py's test of the generated module passes them
    kwargs = {}
    for i in range(ilo, ihi):
        kwargs[f"len_i{i:02d}"], kwargs[f"vtm_i{i:02d}"] = length[i], vtm[i]
    for j in range(jlo, jhi):
        kwargs[f"len_j{j:02d}"], kwargs[f"vtm_j{j:02d}"] = length[j], vtm[j]
        kwargs[f"con_j{j:02d}"] = con[j]
    for i in range(ilo, ihi):
        for j in range(jlo, jhi):
            kwargs[f"ec_i{i:02d}_j{j:02d}"] = ec[i, j]
    kwargs["dt"] = dt
    pairs = [(i, j) for i in range(ilo, ihi) for j in range(jlo, jhi)]
    outs = tuple(np.full((NC, NLEV), np.nan) for _ in pairs)
    op = getattr(kc_module, kc_chunk_name(*chunk))
    op(**kwargs, out=outs, offset_provider={}, backend=backend)
    for (i, j), got in zip(pairs, outs):
        want = ec[i, j] * (vtm[i] - vtm[j]) * (0.25 * np.pi * (length[i] + length[j]) ** 2) \
            * con[j] * dt
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=f"kc_i{i}_j{j}")


# ------------------------------------------------------------------ spike B: collection kernel
#
# spikes/spike_b_collection_codegen.py: Golovin kernel K_ij = k0 * (m_i + m_j) on
# mass-doubling bins, two-bin deposit of coalesced mass, loss terms.


def pair_weights(nbins: int) -> dict:
    mass = 2.0 ** np.arange(nbins)
    weights = {}
    for i in range(nbins):
        for j in range(i, nbins):
            m_new = mass[i] + mass[j]
            d = min(int(np.floor(np.log2(m_new))), nbins - 1)
            if d >= nbins - 1:
                weights[(i, j)] = [(nbins - 1, 1.0)]
            else:
                frac = (mass[d + 1] - m_new) / (mass[d + 1] - mass[d])
                weights[(i, j)] = [(d, frac), (d + 1, 1.0 - frac)]
    return weights


def kernel_table(nbins: int, k0: float = 1.5e-3) -> np.ndarray:
    mass = 2.0 ** np.arange(nbins)
    return k0 * (mass[:, None] + mass[None, :])


def gen_collection_source(nbins: int) -> str:
    kern = kernel_table(nbins)
    weights = pair_weights(nbins)
    args = ",\n    ".join(f"n_{b:02d}: fa.CellKField[ta.wpfloat]" for b in range(nbins))
    rets = ", ".join("fa.CellKField[ta.wpfloat]" for _ in range(nbins))
    gains: dict[int, list[str]] = {b: [] for b in range(nbins)}
    for (i, j), deps in weights.items():
        sym = 1.0
        for d, frac in deps:
            gains[d].append(f"{float(frac * sym * kern[i, j])!r} * n_{i:02d} * n_{j:02d}")
    lines = []
    for b in range(nbins):
        loss = " + ".join(f"{float(kern[b, j])!r} * n_{j:02d}" for j in range(nbins))
        gain = " + ".join(gains[b]) if gains[b] else "0.0"
        lines.append(f"    dn_{b:02d} = ({gain}) - n_{b:02d} * ({loss})")
    outs = ", ".join(f"dn_{b:02d}" for b in range(nbins))
    return (
        IMPORTS
        + "\n@gtx.field_operator\n"
        + f"def _collection_{nbins}(\n    {args},\n) -> tuple[{rets}]:\n"
        + "\n".join(lines)
        + f"\n    return {outs}\n"
    )


def collection_numpy_reference(n: np.ndarray, nbins: int) -> np.ndarray:
    kern = kernel_table(nbins)
    dn = np.zeros_like(n)
    for (i, j), deps in pair_weights(nbins).items():
        prod = kern[i, j] * n[i] * n[j]
        for d, frac in deps:
            dn[d] += frac * prod
    dn -= n * np.einsum("bj,j...->b...", kern, n)
    return dn


COLL_NBINS = 4


@pytest.fixture(scope="module")
def collection_op(gendir):
    return load_generated_operator(gendir, gen_collection_source(COLL_NBINS),
                                   f"icon22_gen_collection_{COLL_NBINS}",
                                   f"_collection_{COLL_NBINS}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_collection_kernel(collection_op, backend):
    n = cellk(COLL_NBINS)
    outs = tuple(np.full((NC, NLEV), np.nan) for _ in range(COLL_NBINS))
    collection_op(*n, out=outs, offset_provider={}, backend=backend)
    np.testing.assert_allclose(np.stack(outs), collection_numpy_reference(n, COLL_NBINS),
                               rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ spike C: wide scan
#
# spikes/spike_c_wide_scan.py: a forward scan whose NamedTuple carry holds a flux
# and an updated q per bin; level k's output q_k + zeta * (flux_{k-1} - flux_k).

SED_NBINS = 3
VTS = np.linspace(0.1, 8.0, SED_NBINS)


def gen_sed_source(nbins: int) -> str:
    header = (
        "from typing import NamedTuple\n\n"
        "import tensorir_dace.frontend as gtx\n\n"
        "from icon22_common import dimension as dims, type_alias as ta\n\n\n"
    )
    carry_fields = "\n".join(
        f"    f_{b:02d}: ta.wpfloat\n    q_{b:02d}: ta.wpfloat" for b in range(nbins)
    )
    carry = f"class Carry{nbins}(NamedTuple):\n{carry_fields}\n\n\n"
    init = ", ".join(f"f_{b:02d}=0.0, q_{b:02d}=0.0" for b in range(nbins))
    qargs = ",\n    ".join(f"q_{b:02d}: ta.wpfloat" for b in range(nbins))
    body_flux = "\n".join(
        f"    fl_{b:02d} = {float(VTS[b])!r} * q_{b:02d} * rho" for b in range(nbins)
    )
    body_q = "\n".join(
        f"    qo_{b:02d} = q_{b:02d} + zeta * (carry.f_{b:02d} - fl_{b:02d})" for b in range(nbins)
    )
    ret_carry = ", ".join(f"f_{b:02d}=fl_{b:02d}, q_{b:02d}=qo_{b:02d}" for b in range(nbins))
    outs_tuple = ", ".join(f"s.q_{b:02d}" for b in range(nbins))
    rets = ", ".join(
        "gtx.Field[gtx.Dims[dims.CellDim, dims.KDim], ta.wpfloat]" for _ in range(nbins)
    )
    fargs = ",\n    ".join(
        f"q_{b:02d}: gtx.Field[gtx.Dims[dims.CellDim, dims.KDim], ta.wpfloat]" for b in range(nbins)
    )
    fcall = ", ".join(f"q_{b:02d}" for b in range(nbins))
    return (
        header
        + carry
        + f"@gtx.scan_operator(axis=dims.KDim, forward=True, init=Carry{nbins}({init}))\n"
        + f"def _sed_scan_{nbins}(\n    carry: Carry{nbins},\n    {qargs},\n"
        + "    rho: ta.wpfloat,\n    zeta: ta.wpfloat,\n"
        + f") -> Carry{nbins}:\n"
        + body_flux
        + "\n"
        + body_q
        + "\n"
        + f"    return Carry{nbins}({ret_carry})\n\n\n"
        + "@gtx.field_operator\n"
        + f"def _sed_{nbins}(\n    {fargs},\n"
        + "    rho: gtx.Field[gtx.Dims[dims.CellDim, dims.KDim], ta.wpfloat],\n"
        + "    zeta: ta.wpfloat,\n"
        + f") -> tuple[{rets}]:\n"
        + f"    s = _sed_scan_{nbins}({fcall}, rho, zeta)\n"
        + f"    return {outs_tuple}\n"
    )


def sed_numpy_reference(q: np.ndarray, rho: np.ndarray, zeta: float) -> np.ndarray:
    out = np.empty_like(q)
    prev_flux = np.zeros((q.shape[0], q.shape[1]))
    for k in range(q.shape[2]):
        fl_k = VTS[:, None] * q[:, :, k] * rho[None, :, k]
        out[:, :, k] = q[:, :, k] + zeta * (prev_flux - fl_k)
        prev_flux = fl_k
    return out


@pytest.fixture(scope="module")
def sed_op(gendir):
    return load_generated_operator(gendir, gen_sed_source(SED_NBINS),
                                   f"icon22_gen_sed_{SED_NBINS}", f"_sed_{SED_NBINS}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_wide_scan(sed_op, backend):
    q, rho, zeta = cellk(SED_NBINS, high=1e-3), cellk(low=0.8, high=1.2), 0.5
    outs = tuple(np.full((NC, NLEV), np.nan) for _ in range(SED_NBINS))
    sed_op(*q, rho, zeta, out=outs, offset_provider={}, backend=backend)
    np.testing.assert_allclose(np.stack(outs), sed_numpy_reference(q, rho, zeta), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wide_scan_carries_level_0_into_level_1(sed_op, backend):
    """The spike's perturbation check: level 1's output depends on level 0's input."""
    q, rho = cellk(SED_NBINS, high=1e-3), cellk(low=0.8, high=1.2)

    def run(q_arr):
        outs = tuple(np.zeros((NC, NLEV)) for _ in range(SED_NBINS))
        sed_op(*q_arr, rho, 0.5, out=outs, offset_provider={}, backend=backend)
        return np.stack(outs)

    perturbed_q = q.copy()
    perturbed_q[:, :, 0] += 1.0
    baseline, perturbed = run(q), run(perturbed_q)
    assert not np.allclose(perturbed[:, :, 1], baseline[:, :, 1])
    np.testing.assert_allclose(perturbed[:, :, 2:], baseline[:, :, 2:], rtol=1e-15)


# ================================================================== AMPS spikes A, D, E
#
# spikes/spike_a_remap_gather.py: gathers along Koff at a per-point offset.


@gtx.field_operator
def _gather_shift(
    q: fa.CellKField[ta.wpfloat], koffset: fa.CellKField[gtx.int32]
) -> fa.CellKField[ta.wpfloat]:
    return q(as_offset(Koff, koffset))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_shift(backend):
    q = cellk()
    k = np.arange(NLEV)
    koffset = RNG.integers(-k, NLEV - 1 - k, size=(NC, NLEV)).astype(np.int32)
    assert (koffset != 0).any()
    out = np.full((NC, NLEV), np.nan)
    # Koff is a Cartesian offset with a per-point shift: no connectivity, an empty provider.
    _gather_shift(q, koffset, out=out, offset_provider={}, backend=backend)
    np.testing.assert_array_equal(out, np.take_along_axis(q, k[None, :] + koffset, axis=1))


@gtx.field_operator
def _table_gather(
    t: fa.CellKField[ta.wpfloat],
    table: gtx.Field[gtx.Dims[dims.KDim], ta.wpfloat],
    k_index: gtx.Field[gtx.Dims[dims.KDim], gtx.int32],
) -> fa.CellKField[ta.wpfloat]:
    idx = astype(maximum(0.0, minimum(t, 59.0)), gtx.int32)
    return table(as_offset(Koff, idx - k_index))


@pytest.mark.parametrize("backend", BACKENDS)
def test_table_gather(backend):
    """GT4Py 1.1 refuses this at decoration (it types the result by ``table``'s
    dimensions); here the offset's ``(Cell, K)`` give the result's, as the spike meant."""
    t = RNG.uniform(0.0, NLEV - 0.01, (NC, NLEV))
    table = np.linspace(100.0, 200.0, NLEV)
    k_index = np.arange(NLEV, dtype=np.int32)
    out = np.full((NC, NLEV), np.nan)
    _table_gather(t, table, k_index, out=out, offset_provider={}, backend=backend)
    np.testing.assert_array_equal(out, table[np.clip(t, 0.0, 59.0).astype(np.int32)])


# spikes/spike_d_esat.py: saturation vapour pressure over liquid, Murphy-Koop,
# analytic and linearly interpolated from a table of 150 entries at T = 163 + i K.

ESAT_NLEV = 152         # the table needs >= 150 levels


def murphy_koop_np(t: np.ndarray) -> np.ndarray:
    return np.exp(
        54.842763
        - 6763.22 / t
        - 4.210 * np.log(t)
        + 0.000367 * t
        + np.tanh(0.0415 * (t - 218.8))
        * (53.878 - 1331.22 / t - 9.44523 * np.log(t) + 0.014025 * t)
    )


def esat_table_interp_np(t: np.ndarray, table_1d: np.ndarray) -> np.ndarray:
    ti = np.clip(t - 163.0, 1.0, 149.0)
    i0 = ti.astype(np.int32)
    frac = ti - i0.astype(np.float64)
    e0 = table_1d[i0 - 1]
    e1 = table_1d[i0]
    return e0 + frac * (e1 - e0)


@gtx.field_operator
def _esat_analytic(t: fa.CellKField[ta.wpfloat]) -> fa.CellKField[ta.wpfloat]:
    return exp(
        54.842763
        - 6763.22 / t
        - 4.210 * log(t)
        + 0.000367 * t
        + tanh(0.0415 * (t - 218.8)) * (53.878 - 1331.22 / t - 9.44523 * log(t) + 0.014025 * t)
    )


@gtx.field_operator
def _esat_table_k_only(
    t: fa.CellKField[ta.wpfloat],
    table: gtx.Field[gtx.Dims[dims.KDim], ta.wpfloat],
    k_index: gtx.Field[gtx.Dims[dims.KDim], gtx.int32],
) -> fa.CellKField[ta.wpfloat]:
    ti = maximum(1.0, minimum(t - 163.0, 149.0))
    i0 = astype(ti, gtx.int32)
    frac = ti - astype(i0, ta.wpfloat)
    e0 = table(as_offset(Koff, i0 - 1 - k_index))
    e1 = table(as_offset(Koff, i0 - k_index))
    return e0 + frac * (e1 - e0)


@gtx.field_operator
def _esat_table_tiled(
    t: fa.CellKField[ta.wpfloat],
    table: fa.CellKField[ta.wpfloat],
    k_index: gtx.Field[gtx.Dims[dims.KDim], gtx.int32],
) -> fa.CellKField[ta.wpfloat]:
    ti = maximum(1.0, minimum(t - 163.0, 149.0))
    i0 = astype(ti, gtx.int32)
    frac = ti - astype(i0, ta.wpfloat)
    e0 = table(as_offset(Koff, i0 - 1 - k_index))
    e1 = table(as_offset(Koff, i0 - k_index))
    return e0 + frac * (e1 - e0)


@pytest.fixture(scope="module")
def esat_data():
    rng = np.random.default_rng(5)
    t = rng.uniform(150.0, 320.0, size=(NC, ESAT_NLEV))      # below and above the table too
    table = np.zeros(ESAT_NLEV)
    table[:150] = murphy_koop_np(np.arange(1, 151) + 163.0)
    return t, table, np.arange(ESAT_NLEV, dtype=np.int32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_esat_analytic(esat_data, backend):
    t = esat_data[0]
    out = np.full(t.shape, np.nan)
    _esat_analytic(t, out=out, offset_provider={}, backend=backend)
    np.testing.assert_allclose(out, murphy_koop_np(t), rtol=1e-12)


@pytest.mark.parametrize("tiled", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_esat_table(esat_data, backend, tiled):
    t, table, k_index = esat_data
    out = np.full(t.shape, np.nan)
    if tiled:
        _esat_table_tiled(t, np.tile(table, (NC, 1)), k_index, out=out, offset_provider={},
                          backend=backend)
    else:
        _esat_table_k_only(t, table, k_index, out=out, offset_provider={}, backend=backend)
    want = esat_table_interp_np(t, table)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    inside = (t > 165.0) & (t < 311.0)
    np.testing.assert_allclose(out[inside], murphy_koop_np(t)[inside], rtol=2e-2)


# spikes/spike_e_counter_rng.py: a counter-based RNG of int64 arithmetic, one
# quadratic mixing round and three Park-Miller rounds modulo 2**31 - 1.

M31 = 2147483647
A1 = 16807
A2 = 48271
A3 = 69621
C_CELL = 999983
C_K = 424243
C_BIN = 786433
C_STEP = 611953


@gtx.field_operator
def _hash01(
    cell_id: gtx.Field[gtx.Dims[dims.CellDim], gtx.int64],
    k_id: gtx.Field[gtx.Dims[dims.KDim], gtx.int64],
    bin_id: gtx.int64,
    step: gtx.int64,
    c_cell: gtx.int64,
    c_k: gtx.int64,
    c_bin: gtx.int64,
    c_step: gtx.int64,
    m31: gtx.int64,
    a1: gtx.int64,
    a2: gtx.int64,
    a3: gtx.int64,
) -> fa.CellKField[ta.wpfloat]:
    one = astype(1, gtx.int64)
    x = (cell_id * c_cell + k_id * c_k + bin_id * c_bin + step * c_step + one) % m31
    x = (x * x + x + one) % m31
    x = (x * a1) % m31
    x = (x * a2) % m31
    x = (x * a3) % m31
    return astype(x, ta.wpfloat) / 2147483647.0


def rng_numpy_replica(ncells: int, nlev: int, bin_id: int, step: int) -> np.ndarray:
    cell = np.arange(ncells, dtype=np.int64)[:, None]
    k = np.arange(nlev, dtype=np.int64)[None, :]
    x = (cell * C_CELL + k * C_K + bin_id * C_BIN + step * C_STEP + 1) % M31
    x = (x * x + x + 1) % M31
    for a in (A1, A2, A3):
        x = (x * a) % M31
    return x.astype(np.float64) / float(M31)


@pytest.mark.parametrize("backend", BACKENDS)
def test_counter_rng(backend):
    ncells, nlev = 64, 16
    cell_id = np.arange(ncells, dtype=np.int64)
    k_id = np.arange(nlev, dtype=np.int64)
    out = np.full((ncells, nlev), np.nan)
    _hash01(cell_id, k_id, gtx.int64(7), gtx.int64(1234), gtx.int64(C_CELL), gtx.int64(C_K),
            gtx.int64(C_BIN), gtx.int64(C_STEP), gtx.int64(M31), gtx.int64(A1), gtx.int64(A2),
            gtx.int64(A3), out=out, offset_provider={}, backend=backend)
    want = rng_numpy_replica(ncells, nlev, 7, 1234)
    # The integers are exact; the final division may differ in its last bit
    # (builds keep DaCe's -freciprocal-math, see the README's floating point).
    np.testing.assert_array_max_ulp(out, want, maxulp=1)
    if backend == "interpreter":
        np.testing.assert_array_equal(out, want)
    assert 0.3 < out.mean() < 0.7


# ================================================================== value_of_size
#
# icon4py's common/math/value_of_size.py and the boundary conditions of w in the
# global nonhydrostatic solver.


@gtx.field_operator
def value_of_size_on_cells_on_half_levels_wp(
    value: wpfloat, field: fa.CellKHalfField[wpfloat]
) -> fa.CellKHalfField[wpfloat]:
    return where(field == field, value, value)


@gtx.field_operator
def value_of_size_on_cells_on_half_levels_bool(
    value: bool, field: fa.CellKHalfField[vpfloat]
) -> fa.CellKHalfField[bool]:
    return where(field == field, value, value)


@gtx.field_operator
def value_of_size_on_edges_wp(
    value: wpfloat, field: fa.EdgeField[wpfloat]
) -> fa.EdgeField[wpfloat]:
    return where(field == field, value, value)


@gtx.field_operator
def value_of_size_on_half_levels_wp(
    value: wpfloat, field: fa.KHalfField[wpfloat]
) -> fa.KHalfField[wpfloat]:
    return where(field == field, value, value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_of_size(backend):
    """The value on the field's domain whatever the field holds, NaN and inf included."""
    field = RNG.standard_normal((NC, NLEV + 1))
    field[0, 0], field[1, 2], field[2, 3] = np.nan, np.inf, -np.inf
    out = np.zeros((NC, NLEV + 1))
    value_of_size_on_cells_on_half_levels_wp(wpfloat(2.5), field, out=out, offset_provider={},
                                             backend=backend)
    np.testing.assert_array_equal(out, 2.5)
    flags = np.zeros((NC, NLEV + 1), dtype=bool)
    value_of_size_on_cells_on_half_levels_bool(True, field, out=flags, offset_provider={},
                                               backend=backend)
    assert flags.all()
    edges = np.full(NE, np.nan)
    value_of_size_on_edges_wp(-1.0, np.full(NE, np.nan), out=edges,
                              domain={dims.EdgeDim: (1, NE - 1)}, offset_provider={},
                              backend=backend)
    np.testing.assert_array_equal(edges[1:-1], -1.0)
    assert np.isnan(edges[[0, -1]]).all()
    half = np.zeros(NLEV + 1)
    value_of_size_on_half_levels_wp(0.25, field[3], out=half, offset_provider={},
                                    backend=backend)
    np.testing.assert_array_equal(half, 0.25)


@gtx.field_operator
def _w_with_boundary_conditions(
    w: fa.CellKHalfField[wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[vpfloat],
    nlev: gtx.int32,
) -> fa.CellKHalfField[wpfloat]:
    """`w` with zero at the model top and the surface boundary condition at the bottom."""
    return concat_where(
        dims.KHalfDim < 1,
        value_of_size_on_cells_on_half_levels_wp(wpfloat("0.0"), w),
        concat_where(
            dims.KHalfDim < nlev,
            w,
            astype(contravariant_correction_at_cells_on_half_levels, wpfloat),
        ),
    )


@pytest.mark.parametrize("domain", [None, (1, NC - 1, 0, NLEV + 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_w_with_boundary_conditions(backend, domain):
    w = RNG.standard_normal((NC, NLEV + 1))
    cc = RNG.standard_normal((NC, NLEV + 1))
    want = w.copy()
    want[:, 0] = 0.0
    want[:, NLEV] = cc[:, NLEV]
    out = np.full((NC, NLEV + 1), np.nan)
    if domain is None:
        _w_with_boundary_conditions(w, cc, gtx.int32(NLEV), out=out, offset_provider={},
                                    backend=backend)
    else:
        hs, he, vs, ve = domain
        _w_with_boundary_conditions(
            w, cc, gtx.int32(NLEV), out=out,
            domain={dims.CellDim: (hs, he), dims.KHalfDim: (vs, ve)}, offset_provider={},
            backend=backend)
        want[:hs], want[he:] = np.nan, np.nan
    np.testing.assert_array_equal(out, want)


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def w_with_boundary_conditions(
    w: fa.CellKHalfField[wpfloat],
    contravariant_correction_at_cells_on_half_levels: fa.CellKHalfField[vpfloat],
    w_out: fa.CellKHalfField[wpfloat],
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _w_with_boundary_conditions(
        w,
        contravariant_correction_at_cells_on_half_levels,
        nlev,
        out=w_out,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KHalfDim: (vertical_start, vertical_end),
        },
    )


@pytest.mark.parametrize("bounds", [(NLEV - 2, 0, NLEV + 1), (NLEV, 1, NLEV),
                                    (NLEV - 1, 2, NLEV + 1), (NLEV, 0, 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_w_with_boundary_conditions_program(backend, bounds):
    """The same in a program, ``nlev`` and the levels written given at run time."""
    nlev, vs, ve = bounds
    w = RNG.standard_normal((NC, NLEV + 1))
    cc = RNG.standard_normal((NC, NLEV + 1))
    value = w.copy()
    value[:, 0] = 0.0
    value[:, nlev:] = cc[:, nlev:]
    out = np.full((NC, NLEV + 1), np.nan)
    w_with_boundary_conditions(w, cc, out, nlev, 1, NC, vs, ve, offset_provider={},
                               backend=backend)
    want = np.full((NC, NLEV + 1), np.nan)
    want[1:, vs:ve] = value[1:, vs:ve]
    np.testing.assert_array_equal(out, want)


# ================================================================== vertical diffusion
#
# icon4py's diffusion/stencils/vertical_wind_diffusion.py: a second vertical
# derivative written in place over the levels with a neighbour above and below.


@gtx.field_operator
def _apply_vertical_diffusion_to_vn(
    vn: fa.EdgeKField[wpfloat],
    ddqz_z_half_e: fa.EdgeKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
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
    ddqz_z_half: fa.CellKField[vpfloat],
    ddqz_z_full: fa.CellKField[vpfloat],
    coeff: wpfloat,
) -> fa.CellKField[wpfloat]:
    d2wdz2 = (
        (w(Koff[-1]) - w) / ddqz_z_full(Koff[-1]) - (w - w(Koff[1])) / ddqz_z_full
    ) / ddqz_z_half
    w = w + coeff * d2wdz2
    return w


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def apply_vertical_diffusion_to_vn(
    vn: fa.EdgeKField[wpfloat],
    ddqz_z_half_e: fa.EdgeKField[vpfloat],
    ddqz_z_full_e: fa.EdgeKField[vpfloat],
    coeff: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _apply_vertical_diffusion_to_vn(
        vn,
        ddqz_z_half_e,
        ddqz_z_full_e,
        coeff,
        out=vn,
        domain={
            dims.EdgeDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def apply_vertical_diffusion_to_w(
    w: fa.CellKField[wpfloat],
    ddqz_z_half: fa.CellKField[vpfloat],
    ddqz_z_full: fa.CellKField[vpfloat],
    coeff: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
):
    _apply_vertical_diffusion_to_w(
        w,
        ddqz_z_half,
        ddqz_z_full,
        coeff,
        out=w,
        domain={
            dims.CellDim: (horizontal_start, horizontal_end),
            dims.KDim: (vertical_start, vertical_end),
        },
    )


def _shift(x, n):
    """``x(Koff[n])`` on levels 1 .. nlev - 2 (NaN where it reads outside)."""
    out = np.full(x.shape, np.nan)
    lo, hi = max(0, -n), min(x.shape[1], x.shape[1] - n)
    out[:, lo:hi] = x[:, lo + n:hi + n]
    return out


@pytest.mark.parametrize("bounds", [(1, NLEV - 1), (2, 4)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_vertical_wind_diffusion(backend, bounds):
    vs, ve = bounds
    coeff = 0.3
    vn = RNG.standard_normal((NE, NLEV))
    half_e, full_e = RNG.uniform(0.5, 2.0, (NE, NLEV)), RNG.uniform(0.5, 2.0, (NE, NLEV))
    d2 = ((_shift(vn, -1) - vn) / half_e - (vn - _shift(vn, 1)) / _shift(half_e, 1)) / full_e
    want_vn = vn.copy()
    want_vn[1:NE - 1, vs:ve] = (vn + coeff * d2)[1:NE - 1, vs:ve]
    apply_vertical_diffusion_to_vn(vn, half_e, full_e, coeff, 1, NE - 1, vs, ve,
                                   offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(vn, want_vn, rtol=1e-13)

    w = RNG.standard_normal((NC, NLEV))
    half, full = RNG.uniform(0.5, 2.0, (NC, NLEV)), RNG.uniform(0.5, 2.0, (NC, NLEV))
    d2 = ((_shift(w, -1) - w) / _shift(full, -1) - (w - _shift(w, 1)) / full) / half
    want_w = w.copy()
    want_w[:, vs:ve] = (w + coeff * d2)[:, vs:ve]
    apply_vertical_diffusion_to_w(w, half, full, coeff, 0, NC, vs, ve, offset_provider=TABLES,
                                  backend=backend)
    np.testing.assert_allclose(w, want_w, rtol=1e-13)


# ================================================================== diffusion of w on half levels
#
# icon4py's apply_diffusion_to_w_and_horizontal_gradients_for_turbulence on
# KHalfDim: an if expression on an int32 choosing a tuple, a concat_where over a
# level and a cell range, three outputs on a tuple of domains whose bounds are
# runtime expressions (``vertical_start + 1``).


@gtx.field_operator
def _horizontal_gradients_for_turbulence(
    w: fa.CellKHalfField[wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> tuple[fa.CellKHalfField[vpfloat], fa.CellKHalfField[vpfloat]]:
    dwdx_wp = neighbor_sum(geofac_grg_x * w(C2E2CO), axis=dims.C2E2CODim)
    dwdy_wp = neighbor_sum(geofac_grg_y * w(C2E2CO), axis=dims.C2E2CODim)
    return astype((dwdx_wp, dwdy_wp), vpfloat)


@gtx.field_operator
def _nabla2_for_w(
    w: fa.CellKHalfField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
) -> fa.CellKHalfField[vpfloat]:
    z_nabla2_c_wp = neighbor_sum(w(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim)
    return astype(z_nabla2_c_wp, vpfloat)


@gtx.field_operator
def _apply_nabla2_to_w(
    area: fa.CellField[wpfloat],
    z_nabla2_c: fa.CellKHalfField[vpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w: fa.CellKHalfField[wpfloat],
    diff_multfac_w: wpfloat,
) -> fa.CellKHalfField[wpfloat]:
    z_nabla2_c_wp = astype(z_nabla2_c, wpfloat)

    w_wp = w - diff_multfac_w * (area * area) * neighbor_sum(
        z_nabla2_c_wp(C2E2CO) * geofac_n2s, axis=dims.C2E2CODim
    )
    return w_wp


@gtx.field_operator
def _apply_nabla2_to_w_in_upper_damping_layer(
    w: fa.CellKHalfField[wpfloat],
    diff_multfac_n2w: fa.KHalfField[wpfloat],
    cell_area: fa.CellField[wpfloat],
    z_nabla2_c: fa.CellKHalfField[vpfloat],
) -> fa.CellKHalfField[wpfloat]:
    z_nabla2_c_wp = astype(z_nabla2_c, wpfloat)
    cell_area_tmp = broadcast(cell_area, (dims.CellDim, dims.KHalfDim))

    w_wp = w + diff_multfac_n2w * cell_area_tmp * z_nabla2_c_wp
    return w_wp


@gtx.field_operator
def _apply_diffusion_to_w_and_horizontal_gradients_for_turbulence(
    area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w_old: fa.CellKHalfField[wpfloat],
    type_shear: gtx.int32,
    dwdx: fa.CellKHalfField[vpfloat],
    dwdy: fa.CellKHalfField[vpfloat],
    diff_multfac_w: wpfloat,
    diff_multfac_n2w: fa.KHalfField[wpfloat],
    nrdmax: gtx.int32,
    interior_idx: gtx.int32,
    halo_idx: gtx.int32,
) -> tuple[
    fa.CellKHalfField[wpfloat],
    fa.CellKHalfField[vpfloat],
    fa.CellKHalfField[vpfloat],
]:
    dwdx, dwdy = (
        _horizontal_gradients_for_turbulence(w_old, geofac_grg_x, geofac_grg_y)
        if type_shear == 2
        else (dwdx, dwdy)
    )

    z_nabla2_c = _nabla2_for_w(w_old, geofac_n2s)

    w = _apply_nabla2_to_w(area, z_nabla2_c, geofac_n2s, w_old, diff_multfac_w)

    w = concat_where(
        (0 < dims.KHalfDim)
        & (dims.KHalfDim < nrdmax)
        & (interior_idx <= dims.CellDim)
        & (dims.CellDim < halo_idx),
        _apply_nabla2_to_w_in_upper_damping_layer(w, diff_multfac_n2w, area, z_nabla2_c),
        w,
    )

    return w, dwdx, dwdy


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def apply_diffusion_to_w_and_horizontal_gradients_for_turbulence(
    area: fa.CellField[wpfloat],
    geofac_n2s: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_x: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    geofac_grg_y: gtx.Field[gtx.Dims[dims.CellDim, dims.C2E2CODim], wpfloat],
    w_old: fa.CellKHalfField[wpfloat],
    w: fa.CellKHalfField[wpfloat],
    type_shear: gtx.int32,
    dwdx: fa.CellKHalfField[vpfloat],
    dwdy: fa.CellKHalfField[vpfloat],
    diff_multfac_w: wpfloat,
    diff_multfac_n2w: fa.KHalfField[wpfloat],
    nrdmax: gtx.int32,
    interior_idx: gtx.int32,
    halo_idx: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _apply_diffusion_to_w_and_horizontal_gradients_for_turbulence(
        area=area,
        geofac_n2s=geofac_n2s,
        geofac_grg_x=geofac_grg_x,
        geofac_grg_y=geofac_grg_y,
        w_old=w_old,
        type_shear=type_shear,
        dwdx=dwdx,
        dwdy=dwdy,
        diff_multfac_w=diff_multfac_w,
        diff_multfac_n2w=diff_multfac_n2w,
        nrdmax=nrdmax,
        interior_idx=interior_idx,
        halo_idx=halo_idx,
        out=(w, dwdx, dwdy),
        domain=(
            {
                dims.CellDim: (interior_idx, halo_idx),
                dims.KHalfDim: (vertical_start, vertical_end),
            },
            {
                dims.CellDim: (horizontal_start, horizontal_end),
                dims.KHalfDim: (vertical_start + 1, vertical_end),
            },
            {
                dims.CellDim: (horizontal_start, horizontal_end),
                dims.KHalfDim: (vertical_start + 1, vertical_end),
            },
        ),
    )


def _c2e2co_sum(weights, x):
    return np.einsum("cn,cnk->ck", weights, x[TABLES["C2E2CO"]])


@pytest.mark.parametrize("type_shear", [2, 1])
@pytest.mark.parametrize("backend", BACKENDS)
def test_apply_diffusion_to_w_and_horizontal_gradients_for_turbulence(backend, type_shear):
    nh = NLEV + 1
    interior_idx, halo_idx, hs, he, vs, ve, nrdmax = 1, NC - 1, 0, NC - 1, 0, nh, 3
    diff_multfac_w = 0.04
    a = dict(
        area=RNG.uniform(0.5, 1.5, NC), geofac_n2s=RNG.standard_normal((NC, 4)),
        geofac_grg_x=RNG.standard_normal((NC, 4)), geofac_grg_y=RNG.standard_normal((NC, 4)),
        w_old=RNG.standard_normal((NC, nh)), w=np.full((NC, nh), np.nan),
        dwdx=RNG.standard_normal((NC, nh)), dwdy=RNG.standard_normal((NC, nh)),
        diff_multfac_n2w=RNG.uniform(0.0, 0.1, nh))
    g = types.SimpleNamespace(**{k: np.array(v) for k, v in a.items()})
    if type_shear == 2:
        dwdx, dwdy = _c2e2co_sum(g.geofac_grg_x, g.w_old), _c2e2co_sum(g.geofac_grg_y, g.w_old)
    else:
        dwdx, dwdy = g.dwdx, g.dwdy
    z_nabla2_c = _c2e2co_sum(g.geofac_n2s, g.w_old)
    w = g.w_old - diff_multfac_w * (g.area * g.area)[:, None] * _c2e2co_sum(g.geofac_n2s,
                                                                              z_nabla2_c)
    k, c = np.arange(nh)[None, :], np.arange(NC)[:, None]
    damped = (0 < k) & (k < nrdmax) & (interior_idx <= c) & (c < halo_idx)
    w = np.where(damped, w + g.diff_multfac_n2w[None, :] * g.area[:, None] * z_nabla2_c, w)
    want_w = np.full((NC, nh), np.nan)
    want_w[interior_idx:halo_idx, vs:ve] = w[interior_idx:halo_idx, vs:ve]
    want_dwdx, want_dwdy = g.dwdx.copy(), g.dwdy.copy()
    want_dwdx[hs:he, vs + 1:ve] = dwdx[hs:he, vs + 1:ve]
    want_dwdy[hs:he, vs + 1:ve] = dwdy[hs:he, vs + 1:ve]
    apply_diffusion_to_w_and_horizontal_gradients_for_turbulence(
        **a, type_shear=type_shear, diff_multfac_w=diff_multfac_w, nrdmax=nrdmax,
        interior_idx=interior_idx, halo_idx=halo_idx, horizontal_start=hs, horizontal_end=he,
        vertical_start=vs, vertical_end=ve, offset_provider=TABLES, backend=backend)
    np.testing.assert_allclose(a["w"], want_w, rtol=1e-13)
    np.testing.assert_allclose(a["dwdx"], want_dwdx, rtol=1e-13)
    np.testing.assert_allclose(a["dwdy"], want_dwdy, rtol=1e-13)


@pytest.mark.parametrize("backend", [None, "compiled"])
def test_w_with_boundary_conditions_as_the_global_solver_calls_it(backend):
    """icon4py's SolveNonhydroGlobal sets its operators up with
    ``op.with_grid_type(gtx.GridType.UNSTRUCTURED).with_backend(backend)`` (``None``:
    GT4Py's embedded execution) and calls them with ``gtx.int32`` bounds."""
    def unstructured(op):
        return op.with_grid_type(gtx.GridType.UNSTRUCTURED).with_backend(backend)

    w = RNG.standard_normal((NC, NLEV + 1))
    cc = RNG.standard_normal((NC, NLEV + 1))
    out = np.full((NC, NLEV + 1), np.nan)
    unstructured(_w_with_boundary_conditions)(
        w, cc, gtx.int32(NLEV), out=out,
        domain={dims.CellDim: (gtx.int32(0), gtx.int32(NC)),
                dims.KHalfDim: (gtx.int32(0), gtx.int32(NLEV + 1))},
        offset_provider={})
    want = w.copy()
    want[:, 0] = 0.0
    want[:, NLEV] = cc[:, NLEV]
    np.testing.assert_array_equal(out, want)
