"""SDFG passes, each small and runnable alone, and the named pipelines."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import dace
from dace.transformation.dataflow import MapFusionVertical

from ..log import stage
from .fuse_horizontal import fuse_maps_horizontally
from .fuse_reductions import fuse_neighbor_reductions
from .fuse_scans import fuse_column_scans
from .fuse_statements import fuse_across_statements
from .gathers_on_the_fly import compute_gathered_on_the_fly
from .gpu import block_size, cap_grid, keep_on_device, synchronize_calls
from .interchange_neighbor_loops import interchange_neighbor_loops
from .interleave_columns import interleave_columns
from .openmp_maps import small_maps_one_thread
from .streaming_stores import streaming_stores

SDFGPass = Callable[[dace.SDFG], None]


def simplify(sdfg: dace.SDFG) -> None:
    """DaCe's simplification pipeline (state fusion, dead dataflow, inlining…)."""
    sdfg.simplify()


def fuse_maps_vertically(sdfg: dace.SDFG) -> None:
    """Fuse producer/consumer maps over the same range (point-wise chains)."""
    sdfg.apply_transformations_repeated(MapFusionVertical, print_report=False, progress=False)


def persistent_transients(sdfg: dace.SDFG) -> None:
    """Keep the top-level transient arrays allocated between calls.

    Allocating (and first touching) large scratch arrays on every call costs
    more than the computation of a column solver; persistent transients are
    allocated by the program's init function instead.  The runtime
    initialises the program again whenever the sizes change, so a call with
    other sizes never uses arrays sized for the previous ones."""
    inside_maps: set[str] = set()
    for state in sdfg.states():
        scopes = state.scope_dict()
        for node in state.data_nodes():
            if scopes[node] is not None:
                inside_maps.add(node.data)     # per-point scratch (e.g. from map fusion)
    # Sizes that depend on loop variables (runtime bounds) are unknown at init time.
    known = {str(s) for s in sdfg.free_symbols}
    for name, desc in sdfg.arrays.items():
        if desc.transient and isinstance(desc, dace.data.Array) and name not in inside_maps \
                and desc.storage in (dace.StorageType.Default, dace.StorageType.CPU_Heap) \
                and {str(s) for s in desc.free_symbols} <= known:
            desc.lifetime = dace.AllocationLifetime.Persistent


def zero_offsets(sdfg: dace.SDFG) -> None:
    """Rebase every array to start at index 0 (memlets shifted accordingly).

    The lowering gives arrays the offset of their interval start, so that
    coordinates index them directly.  DaCe's nesting and inlining (e.g. when
    the SDFG is called from a ``@dace.program``) assume zero offsets, so
    SDFGs handed to other DaCe code are rebased first.  Tasklet code indexes
    whole-array pointers relative to the connector's subset start, which
    moves with the memlet, so the code stays valid."""
    for sd in sdfg.all_sdfgs_recursive():
        shifts = {name: [int(o) if str(o).lstrip("-").isdigit() else o for o in desc.offset]
                  for name, desc in sd.arrays.items()
                  if isinstance(desc, dace.data.Array) and any(o != 0 for o in desc.offset)}
        if not shifts:
            continue
        for state in sd.states():
            for edge in state.edges():
                m = edge.data
                if m.data in shifts and m.subset is not None:
                    m.subset.offset(shifts[m.data], negative=False)
                if m.other_subset is not None:
                    ends = [n.data for n in (edge.src, edge.dst)
                            if isinstance(n, dace.nodes.AccessNode) and n.data != m.data]
                    if ends and ends[0] in shifts:
                        m.other_subset.offset(shifts[ends[0]], negative=False)
        for name in shifts:
            desc = sd.arrays[name]
            desc.offset = [0] * len(desc.shape)


def to_gpu(sdfg: dace.SDFG, resident: Iterable[str] = ()) -> None:
    """Run the maps on a CUDA GPU: DaCe's GPU transformation (device copies of
    the arguments, kernels for the top-level maps), with a block size chosen
    for every kernel (:func:`.gpu.block_size`), and synchronous calls.
    The argument arrays named in ``resident`` stay in device memory: the
    caller passes device arrays for them and nothing is copied (see
    :mod:`.gpu`)."""
    keep_on_device(sdfg, resident)
    sdfg.apply_gpu_transformations()
    kernels = [(state, node) for state in sdfg.all_control_flow_blocks()
               if isinstance(state, dace.SDFGState) for node in state.nodes()
               if isinstance(node, dace.nodes.MapEntry)
               and node.map.schedule == dace.ScheduleType.GPU_Device]
    for state, node in kernels:
        node.map.gpu_block_size = block_size(state, node)
        cap_grid(state.sdfg, state, node)
    synchronize_calls(sdfg)


def validate(sdfg: dace.SDFG) -> None:
    sdfg.validate()


# A pass named here is also a stage of ``lower --stage`` and of the viewer
# (its function name is the stage name): adding a pass is a one-line change.
PIPELINES: dict[str, list[SDFGPass]] = {
    "none": [validate],
    "default": [simplify, fuse_maps_vertically, compute_gathered_on_the_fly,
                fuse_neighbor_reductions, interchange_neighbor_loops, fuse_across_statements,
                fuse_column_scans, interleave_columns, streaming_stores, fuse_maps_horizontally,
                persistent_transients, small_maps_one_thread, validate],
}

#: Passes whose generated code runs on the CPU only (left out for ``device="gpu"``).
CPU_ONLY: tuple[SDFGPass, ...] = (compute_gathered_on_the_fly, fuse_neighbor_reductions,
                                  interchange_neighbor_loops,
                                  fuse_across_statements, fuse_column_scans,
                                  interleave_columns, streaming_stores, small_maps_one_thread)

#: Passes that check the SDFG without changing it (no stage of their own).
CHECKS: tuple[SDFGPass, ...] = (validate,)


def pass_names(name: str = "default") -> list[str]:
    """The names of the passes of pipeline ``name`` that change the SDFG, in order."""
    return [p.__name__ for p in PIPELINES[name] if p not in CHECKS]


def passes_for(name: str = "default", device: str = "cpu") -> list[SDFGPass]:
    """The passes of pipeline ``name`` for ``device`` ("cpu" or "gpu")."""
    return [p for p in PIPELINES[name] if device == "cpu" or p not in CPU_ONLY]


def pipeline(name: str, device: str = "cpu") -> SDFGPass:
    """The pipeline ``name`` as one pass; each pass is logged with its time."""
    passes = passes_for(name, device)

    def run(sdfg: dace.SDFG) -> None:
        for p in passes:
            with stage(f"pass {p.__name__}"):
                p(sdfg)
    return run
