"""What a GPU build adds to DaCe's GPU transformation: device-resident
arguments and synchronous calls.

* :func:`keep_on_device` marks argument arrays as GPU memory before the
  transformation, which then neither allocates device copies of them nor
  copies them between host and device: the program reads and writes the
  caller's device arrays in place.
* :func:`synchronize_calls` makes a call synchronous with the rest of the
  GPU: a first state waits for all work queued on the device before the call
  (CuPy kernels on any stream; DaCe runs its kernels on streams of its own
  that do not wait for other streams), a last state waits for the program's
  own kernels.  A call thus returns finished results, and a failing kernel
  is reported by the call that launched it.
"""

from __future__ import annotations

from collections.abc import Iterable

import dace
from dace import dtypes

__all__ = ["SYNC_CODE", "block_size", "cap_grid", "keep_on_device", "synchronize_calls"]

#: CUDA's limit on the number of blocks along the grid's y and z dimensions.
MAX_GRID_YZ = 65535

#: The host code of the synchronisation states (DaCe's error check records a failure).
SYNC_CODE = "DACE_GPU_CHECK(cudaDeviceSynchronize());"


#: Threads per block of a kernel by its map's number of dimensions (the
#: innermost, contiguous one first).  Measured on an H100: blocks of 64
#: threads left the Laplacian at 55% of a device copy's bandwidth, any block
#: of 128 or more threads at 87-93%; a one-dimensional gather (nabla's edge
#: map) ran fastest with 512.
BLOCK_BY_RANK = {1: [512, 1, 1], 2: [32, 8, 1]}
BLOCK_3D = [32, 4, 2]

#: A column scan: one thread walks a whole column.  With the contiguous
#: dimension being the scanned one, each thread touches its own cache lines;
#: few threads per block (and so per multiprocessor) keep those lines in L1
#: between levels: blocks of 4 threads ran the tridiagonal solver 4.2x
#: faster than blocks of 64 (8: 3.3x, 16: 2.2x).
COLUMN_BLOCK = [4, 1, 1]


def block_size(state: dace.SDFGState, entry: dace.nodes.MapEntry) -> list[int]:
    """The block size of the kernel that ``entry``'s map becomes."""
    from ..library import ColumnScan
    if any(isinstance(n, ColumnScan) for n in state.scope_subgraph(entry).nodes()):
        return list(COLUMN_BLOCK)
    return list(BLOCK_BY_RANK.get(len(entry.map.params), BLOCK_3D))


def cap_grid(sdfg: dace.SDFG, state: dace.SDFGState, entry: dace.nodes.MapEntry) -> None:
    """Keep a two-dimensional kernel's grid within CUDA's limits, whatever the
    sizes at run time.

    The innermost dimension becomes the grid's x (2^31 - 1 blocks); the
    outer one becomes y, limited to 65535 blocks: a (Cell, K) map over more
    than 65535 x 8 cells (ICON's finer grids have millions) would fail to
    launch.  That dimension is tiled so that every thread walks
    ``ceil(size / (65535 x block))`` points of it in a loop: one point for
    sizes within the limit, at the same speed as an untiled map (measured).
    A dimension of a constant size within the limit is left alone.

    Three-dimensional maps are not tiled: on an H100 the loop made the
    Laplacian 1.5x slower per tiled dimension.  Their limits, 65535 x 4
    along the middle and 65535 x 2 along the outer dimension, are far
    beyond structured grids; a launch beyond them is reported by the call as
    a :class:`~tensorir_dace.runtime.GPUError`."""
    from dace.transformation.dataflow import MapTiling
    params = entry.map.params
    if len(params) != 2:
        return
    block = list(entry.map.gpu_block_size) + [1, 1]
    sizes = entry.map.range.size()
    tiles: list = [1] * len(params)
    for i in range(len(params) - 1):            # every dimension but the innermost (x)
        limit = MAX_GRID_YZ * block[len(params) - 1 - i]
        size = sizes[i]
        if dace.symbolic.issymbolic(size) or int(size) > limit:
            tiles[i] = dace.symbolic.pystr_to_symbolic(f"Max(1, int_ceil({size}, {limit}))")
    if all(t == 1 for t in tiles):
        return
    MapTiling.apply_to(sdfg, map_entry=entry, verify=False,
                       options={"tile_sizes": tuple(tiles), "divides_evenly": False})
    outer = state.entry_node(entry)             # the tiles; ``entry`` now walks one tile
    outer.map.schedule = dtypes.ScheduleType.GPU_Device
    outer.map.gpu_block_size = entry.map.gpu_block_size
    entry.map.schedule = dtypes.ScheduleType.Sequential
    entry.map.gpu_block_size = None


def keep_on_device(sdfg: dace.SDFG, names: Iterable[str]) -> None:
    """Make the non-transient arrays ``names`` live in GPU global memory."""
    for name in names:
        desc = sdfg.arrays.get(name)
        if isinstance(desc, dace.data.Array) and not desc.transient:
            desc.storage = dtypes.StorageType.GPU_Global


def _sync_state(sdfg: dace.SDFG, state: dace.SDFGState, label: str) -> None:
    tasklet = state.add_tasklet(label, {}, {}, SYNC_CODE, language=dtypes.Language.CPP,
                                side_effects=True)
    tasklet.schedule = dtypes.ScheduleType.Sequential


def synchronize_calls(sdfg: dace.SDFG) -> None:
    """Add a device synchronisation before the first and after the last state."""
    sinks = list(sdfg.sink_nodes())
    first = sdfg.add_state_before(sdfg.start_block, "gpu_sync_before", is_start_block=True)
    _sync_state(sdfg, first, "wait_for_queued_gpu_work")
    last = sdfg.add_state("gpu_sync_after")
    for s in sinks:
        sdfg.add_edge(s, last, dace.InterstateEdge())
    _sync_state(sdfg, last, "wait_for_kernels")
