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

__all__ = ["SYNC_CODE", "keep_on_device", "synchronize_calls"]

#: The host code of the synchronisation states (DaCe's error check records a failure).
SYNC_CODE = "DACE_GPU_CHECK(cudaDeviceSynchronize());"


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
