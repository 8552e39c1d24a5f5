"""SDFG pass: neighbour reductions at the same point share one neighbour loop.

The two components of the nabla operator are two reductions over the same
neighbours of a vertex; lowered, each is a loop of its own, which loads the
neighbour table entries, tests the neighbours' presence and gathers the
neighbour values again.  The C++ compiler does not fuse two such loops, so
this pass merges independent reductions over the same neighbour dimension
in one map into one tasklet with one loop: each iteration runs the bodies
of all of them one after the other, each still updating only its own
accumulator in the same order, so the results do not change; in one
iteration the compiler loads the table entries, tests them and gathers
once for all.

The code of each reduction is its declarations, one neighbour loop (at the
top level of its code) and the assignments of its results.  The merged
code is the declarations of all, one loop whose body holds each body in its
own block, and the assignments of all; the locals and connectors of the
second and later reductions are renamed apart, except inputs that read the
same data through the same memlet, which are read through one connector.

The pass changes nothing unless the reductions are library nodes over the
same neighbour dimension directly inside the same map, read only from the
map entry (so none reads another's result), have loops with the same
bounds, and contain no ``break``, ``continue`` or ``goto``.
"""

from __future__ import annotations

import copy
import re

import dace
from dace.sdfg import nodes

from ..library.nodes import NeighborReduce

NAME = "fuse_neighbor_reductions"

_LOOP = re.compile(r"for \(long long (\w+) = ([^;]+); \1 < ([^;]+); \+\+\1\) \{")
_LOCAL = re.compile(r"\b_(?!_)\w*")
_JUMPS = re.compile(r"\b(break|continue|goto)\b")


def fuse_neighbor_reductions(sdfg: dace.SDFG) -> None:
    """Merge the reductions over the same neighbours of each map (see the module docstring)."""
    for state in sdfg.states():
        for entry in [n for n in state.nodes() if isinstance(n, nodes.MapEntry)]:
            groups: dict[tuple, list] = {}
            for n in state.scope_children()[entry]:
                key = _key(state, entry, n)
                if key is not None:
                    groups.setdefault(key, []).append(n)
            for group in groups.values():
                if len(group) > 1:
                    _merge(sdfg, state, entry, group)


def _key(state, entry, node) -> tuple | None:
    """The neighbour dimension and loop bounds of a mergeable reduction, else None."""
    if not isinstance(node, NeighborReduce) or not node.axis:
        return None
    if any(e.src is not entry for e in state.in_edges(node)):
        return None
    parts = split_loop(node.code)
    if parts is None or _JUMPS.search(node.code):
        return None
    _, loop, _, _ = parts
    return node.axis, loop.group(2), loop.group(3)


def split_loop(code: str):
    """``(before, loop match, body, after)`` of ``code`` with exactly one loop
    at the top level, else None."""
    loops, depth, i = [], 0, 0
    while i < len(code):
        c = code[i]
        if depth == 0 and (m := _LOOP.match(code, i)) is not None \
                and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            loops.append(m)
            i = m.end()
            depth = 1
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        i += 1
    if len(loops) != 1:
        return None
    m = loops[0]
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    return code[:m.start()], m, code[m.end():i - 1], code[i:]


def _merge(sdfg, state, entry, group) -> None:
    first = group[0]
    keep = {str(s) for s in sdfg.free_symbols} | set(sdfg.symbols)
    scope = entry
    while scope is not None:                  # the parameters of this and enclosing maps
        keep |= set(scope.map.params)
        scope = state.entry_node(scope)
    before, loop, body, after = split_loop(first.code)
    var = loop.group(1)
    merged = state.add_tasklet("_".join(n.label for n in group), {}, {}, "",
                               language=dace.Language.CPP)
    inputs: dict[str, tuple] = {}       # connector -> (data, subset, type)
    drop = []
    parts_before, parts_body, parts_after = [before], [body], [after]
    for k, node in enumerate(group):
        rename: dict[str, str] = {}
        for e in state.in_edges(node):
            if e.data.is_empty():
                continue
            key = (e.data.data, str(e.data.subset), str(node.in_connectors[e.dst_conn]))
            name = e.dst_conn
            if name in inputs and inputs[name] == key:
                drop.append(e)
                continue
            if name in inputs or k:
                name = rename[e.dst_conn] = _fresh(e.dst_conn, k, inputs)
            inputs[name] = key
            merged.add_in_connector(name, node.in_connectors[e.dst_conn])
            state.add_edge(e.src, e.src_conn, merged, name, copy.deepcopy(e.data))
        for e in state.out_edges(node):
            name = e.src_conn if not k else f"{e.src_conn}_r{k}"
            merged.add_out_connector(name, node.out_connectors[e.src_conn])
            state.add_edge(merged, name, e.dst, e.dst_conn, copy.deepcopy(e.data))
        if k:
            shared = {e.dst_conn for e in drop if e.dst is node}
            code = _renamed(node.code, keep | shared, rename, f"_r{k}")
            b, lp, bd, a = split_loop(code)
            bd = re.sub(rf"\b{re.escape(lp.group(1))}\b", var, bd)
            parts_before.append(b)
            parts_body.append("{\n" + bd + "\n}")
            parts_after.append(a)
    if not inputs:
        state.add_nedge(entry, merged, dace.Memlet())
    merged.code = dace.properties.CodeBlock(
        "".join(parts_before) + loop.group(0) + "\n" + "\n".join(parts_body) + "\n}"
        + "".join(parts_after), dace.Language.CPP)
    for e in drop:
        state.remove_memlet_path(e, remove_orphans=False)
    state.remove_nodes_from(group)


def _fresh(name: str, k: int, taken) -> str:
    new = f"{name}_r{k}"
    while new in taken:
        new += "_"
    return new


def _renamed(code: str, keep: set[str], rename: dict[str, str], suffix: str) -> str:
    """``code`` with each local name not in ``keep`` renamed (by ``rename``,
    else with ``suffix`` appended)."""
    def one(m: re.Match) -> str:
        name = m.group(0)
        return name if name in keep else rename.get(name, name + suffix)
    return _LOCAL.sub(one, code)
