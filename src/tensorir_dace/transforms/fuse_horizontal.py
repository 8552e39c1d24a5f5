"""SDFG pass: fuse sibling maps over the same domain into one map.

Two statements over the same points that read the same data (the two
components of a gradient gathering the same neighbour values) are lowered to
two maps, each streaming the shared inputs from memory.  DaCe's
``MapFusionHorizontal`` puts such independent maps with equal ranges into one
map, so each shared input is read once per point and the bodies sit side by
side in one loop, where the C++ compiler can share their common loads and
neighbour-table tests.  Maps that depend on each other are left alone by the
transformation.

The bodies of a fused map are then merged into one tasklet, each original
body in its own C++ block, with each input read once (inputs with the same
memlet share one connector).  Separate tasklets write their outputs between
the bodies, and the C++ compiler cannot tell that such a store leaves the
inputs of the next body unchanged; in one tasklet, nothing is stored before
the end, so it computes the shared neighbour-table loads, their bound tests
and the gathers through them once.

Only maps with the same parameter names are fused: the transformation renames
the second map's parameters, which does not reach into C++ tasklet code that
indexes whole-array pointers with them.
"""

from __future__ import annotations

import copy

import dace
from dace.sdfg import nodes
from dace.transformation.dataflow import MapFusionHorizontal

NAME = "fuse_maps_horizontally"


class _SameParameters(MapFusionHorizontal):
    """``MapFusionHorizontal`` restricted to maps whose parameters are named alike."""

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False) -> bool:
        if self.first_parallel_map_entry.map.params != \
                self.second_parallel_map_entry.map.params:
            return False
        return super().can_be_applied(graph, expr_index, sdfg, permissive)


def fuse_maps_horizontally(sdfg: dace.SDFG) -> None:
    """Fuse independent sibling maps with equal ranges (see the module docstring)."""
    if sdfg.apply_transformations_repeated(_SameParameters, print_report=False, progress=False):
        merge_sibling_tasklets(sdfg)


def merge_sibling_tasklets(sdfg: dace.SDFG) -> None:
    """Merge the independent C++ tasklets of each top-level map into one."""
    for state in sdfg.states():
        for entry in [n for n in state.nodes() if isinstance(n, nodes.MapEntry)
                      and state.entry_node(n) is None]:
            exit_ = state.exit_node(entry)
            children = state.scope_children()[entry]
            tasklets = [n for n in children if isinstance(n, nodes.Tasklet)]
            if len(tasklets) < 2 or len(children) != len(tasklets) + 1 or any(
                    t.language != dace.Language.CPP or t.state_fields
                    or any(e.src is not entry for e in state.in_edges(t))
                    or any(e.dst is not exit_ for e in state.out_edges(t)) for t in tasklets):
                continue
            _merge(state, entry, tasklets)


def _merge(state, entry, tasklets) -> None:
    inputs: dict[tuple, str] = {}
    blocks, globals_ = [], []
    merged = state.add_tasklet("_".join(t.label for t in tasklets), set(), set(), "",
                               language=dace.Language.CPP)
    for t in tasklets:
        lines = ["{"]
        for e in state.in_edges(t):
            if e.data.is_empty():
                continue
            key = (e.src_conn, e.data.data, str(e.data.subset), e.data.dynamic,
                   str(t.in_connectors[e.dst_conn]))
            if key not in inputs:
                inputs[key] = f"_h_in{len(inputs)}"
                merged.add_in_connector(inputs[key], t.in_connectors[e.dst_conn])
                state.add_edge(e.src, e.src_conn, merged, inputs[key], copy.deepcopy(e.data))
            lines.append(f"auto {e.dst_conn} = {inputs[key]};")
        for e in state.out_edges(t):
            name = f"_h_out{len(merged.out_connectors)}"
            merged.add_out_connector(name, t.out_connectors[e.src_conn])
            state.add_edge(merged, name, e.dst, e.dst_conn, copy.deepcopy(e.data))
            lines.append(f"auto& {e.src_conn} = {name};")
        blocks += lines + [t.code.as_string, "}"]
        if t.code_global.as_string and t.code_global.as_string not in globals_:
            globals_.append(t.code_global.as_string)
    merged.code = dace.properties.CodeBlock("\n".join(blocks), dace.Language.CPP)
    merged.code_global = dace.properties.CodeBlock("\n".join(globals_), dace.Language.CPP)
    if not inputs:
        state.add_nedge(entry, merged, dace.Memlet())
    state.remove_nodes_from(tasklets)
