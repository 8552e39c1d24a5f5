"""OpenMP settings of a program's parallel maps, decided when compiling.

A call whose largest parallel map has fewer than
:data:`tensorir_dace.openmp.SEQUENTIAL_BELOW` points runs with one thread:
a parallel region costs more than such a map computes.  When the sizes are
symbols, the runtime decides per call (and switches libgomp's thread count
around the call).  When every map's size is a constant, the decision is
made here once: the maps get ``num_threads(1)``, which costs nothing per
call, and the runtime has nothing left to switch.
"""

from __future__ import annotations

import dace

from .. import openmp

__all__ = ["parallel_maps", "small_maps_one_thread"]


def parallel_maps(sdfg: dace.SDFG) -> list[dace.nodes.MapEntry]:
    """The top-level CPU maps of ``sdfg`` (each an OpenMP parallel loop)."""
    return [node for state in sdfg.states() for node in state.nodes()
            if isinstance(node, dace.nodes.MapEntry) and state.entry_node(node) is None
            and node.map.schedule in (dace.ScheduleType.Default,
                                      dace.ScheduleType.CPU_Multicore)]


def small_maps_one_thread(sdfg: dace.SDFG) -> None:
    """Run every parallel map with one thread when all have constant sizes
    and the largest has fewer than ``SEQUENTIAL_BELOW`` points."""
    maps = parallel_maps(sdfg)
    volumes = [dace.symbolic.pystr_to_symbolic(m.map.range.num_elements_exact()) for m in maps]
    if not maps or any(not v.is_Integer for v in volumes) \
            or max(int(v) for v in volumes) >= openmp.SEQUENTIAL_BELOW:
        return
    for m in maps:
        # Explicitly OpenMP: the property is kept (and hashed) only for CPU schedules.
        m.map.schedule = dace.ScheduleType.CPU_Multicore
        m.map.omp_num_threads = 1
