"""OpenMP settings of a program's parallel maps, decided when compiling.

A call whose largest parallel map has fewer than
:data:`tensorir_dace.openmp.SEQUENTIAL_BELOW` points runs with one thread:
a parallel region costs more than such a map computes.  When the sizes are
symbols, the runtime decides per call (and switches libgomp's thread count
around the call).  When every map's size is a constant, the decision is
made here once: the maps become plain sequential loops, without an OpenMP
region (even ``num_threads(1)`` costs a region per call: 0.65 µs, more than
the 315-point Laplacian computes), and the runtime has nothing left to switch.
"""

from __future__ import annotations

import dace
from dace.sdfg import nodes

from .. import openmp

__all__ = ["known_symbols", "map_points", "parallel_maps", "parallel_maps_with_states",
           "small_maps_one_thread"]


def parallel_maps_with_states(sdfg: dace.SDFG) -> list[tuple[dace.SDFGState, nodes.MapEntry]]:
    """The top-level CPU maps of ``sdfg`` with their states."""
    return [(state, node) for state in sdfg.states() for node in state.nodes()
            if isinstance(node, nodes.MapEntry) and state.entry_node(node) is None
            and node.map.schedule in (dace.ScheduleType.Default,
                                      dace.ScheduleType.CPU_Multicore)]


def parallel_maps(sdfg: dace.SDFG) -> list[nodes.MapEntry]:
    """The top-level CPU maps of ``sdfg`` (each an OpenMP parallel loop)."""
    return [node for _, node in parallel_maps_with_states(sdfg)]


#: Elements a point reads through a neighbour table or another gather count
#: as this many of a plain stencil's (the threshold's) points together.
GATHER_READS_PER_POINT = 3
#: A gathered array counts at most this many elements per point.
GATHER_ROW_CAP = 8


def known_symbols(sdfg: dace.SDFG) -> set[str]:
    """The names of the symbols a call of ``sdfg`` knows (its free symbols and
    declared ones): what :func:`map_points` may count in.  Computing them walks
    the whole SDFG, so callers measuring many maps pass them in once."""
    return {str(s) for s in sdfg.free_symbols} | set(map(str, sdfg.symbols))


def map_points(state: dace.SDFGState, entry: nodes.MapEntry, known: set[str] | None = None):
    """The points a map computes, in units of the plain stencil's points that
    :data:`~tensorir_dace.openmp.SEQUENTIAL_BELOW` was measured with.

    Two kinds of work hide from the iteration count:

    * passes that move a dimension into the tasklet's own loop (streaming
      stores, fused column scans) leave fewer iterations but as much work:
      the memlets into the map's exit (``out[i, j, 0:L]``: ``L`` per
      iteration; an iteration's count taken at the map's first point) count;
    * a point that gathers through neighbour tables reads a table row and the
      values it names (``V2E[0:V, 0:6]``: 6): every read of a whole array
      counts its row (at most :data:`GATHER_ROW_CAP`), and
      :data:`GATHER_READS_PER_POINT` such reads make one point.
    """
    sym = dace.symbolic.pystr_to_symbolic
    iterations = sym(entry.map.range.num_elements_exact())
    first = {dace.symbolic.symbol(p): sym(lo)
             for p, (lo, _, _) in zip(entry.map.params, entry.map.range)}
    params = set(entry.map.params)
    if known is None:
        known = known_symbols(state.sdfg)
    exit_node = state.exit_node(entry)
    per_iteration = set()
    for e in state.in_edges(exit_node):
        if e.data.subset is None or e.data.wcr is not None:
            continue
        n = sym(e.data.subset.num_elements_exact()).subs(first)
        if {str(s) for s in n.free_symbols} <= known:
            per_iteration.add(n)
    gathered = 0
    for node in state.scope_subgraph(entry).nodes():
        if isinstance(node, (nodes.AccessNode, nodes.EntryNode, nodes.ExitNode)):
            continue
        for e in state.in_edges(node):
            subset = e.data.subset
            if subset is None or {str(s) for s in subset.free_symbols} & params:
                continue
            size = subset.size()
            if size and sym(size[0]) == 0:
                continue        # an empty subset (a scan run over no level) reads nothing
            row = sym(subset.num_elements_exact()) / sym(size[0]) if size else 1
            row = dace.symbolic.simplify(row)
            gathered += min(int(row), GATHER_ROW_CAP) if row.is_Number else GATHER_ROW_CAP
    if gathered > GATHER_READS_PER_POINT:
        per_iteration.add(sym(-(-gathered // GATHER_READS_PER_POINT)))
    per_iteration.discard(1)
    if not per_iteration:
        return iterations
    if len(per_iteration) == 1:
        return iterations * per_iteration.pop()
    return iterations * dace.symbolic.sympy.Max(*per_iteration)


def small_maps_one_thread(sdfg: dace.SDFG) -> None:
    """Run every parallel map as a sequential loop when all have constant
    sizes and the largest has fewer than ``SEQUENTIAL_BELOW`` points."""
    maps = parallel_maps_with_states(sdfg)
    if any(not dace.symbolic.pystr_to_symbolic(m.map.range.num_elements_exact()).is_Number
           for _, m in maps):
        return      # a size known only at run time (the count of points has it too)
    known = known_symbols(sdfg)
    volumes = [map_points(state, m, known) for state, m in maps]
    if not maps or any(not v.is_Number for v in volumes) \
            or max(volumes) >= openmp.SEQUENTIAL_BELOW:
        return
    _scratch_in_registers(sdfg, maps)
    for _, m in maps:
        m.map.schedule = dace.ScheduleType.Sequential


def _scratch_in_registers(sdfg: dace.SDFG,
                          maps: list[tuple[dace.SDFGState, nodes.MapEntry]]) -> None:
    """Give the scratch data used only inside ``maps`` the storage an OpenMP
    map gives it: DaCe puts the undecided (``Default``) scratch of a parallel
    map on the stack, but that of a top-level sequential map on the heap,
    allocated and freed at every point (several times slower)."""
    inside: set[str] = set()
    outside: set[str] = set()
    scopes = {state: state.scope_dict() for state in sdfg.states()}
    entries = {m for _, m in maps}
    for state, scope in scopes.items():
        for node in state.nodes():
            top = node
            while scope.get(top) is not None:
                top = scope[top]
            within = top in entries and top is not node
            if isinstance(node, nodes.AccessNode):
                (inside if within else outside).add(node.data)
            elif isinstance(node, nodes.NestedSDFG) and within:
                for nested in node.sdfg.all_sdfgs_recursive():
                    for desc in nested.arrays.values():
                        if desc.transient and desc.storage == dace.StorageType.Default:
                            desc.storage = dace.StorageType.Register
    for name in inside - outside:
        desc = sdfg.arrays[name]
        if desc.transient and desc.storage == dace.StorageType.Default:
            desc.storage = dace.StorageType.Register
