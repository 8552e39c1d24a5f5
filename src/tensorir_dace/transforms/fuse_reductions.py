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

The bodies of reductions over the same operand presence start alike: the
same table entries loaded into locals, the same presence tests, and the
same guard around the update.  Statements at the start of a later body
that are the same text as those of the first, using only locals those
statements declare (not its accumulators), shared connectors and map
parameters, compute the same values and are kept once; where both bodies
then continue with ``if`` blocks of the same condition, the later block's
statements move into the first's, merged again the same way.  Each table
entry is then loaded and each presence tested once per neighbour.

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
from .cpp_text import JUMPS, LOCAL, assigned, if_block, locals_of, split_loop, statements

NAME = "fuse_neighbor_reductions"



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
    if parts is None or JUMPS.search(node.code):
        return None
    _, loop, _, _ = parts
    return node.axis, loop.group(2), loop.group(3)


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
    parts_before, parts_after = [before], [after]
    stmts = statements(body)
    forbidden = locals_of(before) - keep
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
            common: set[str] = set()
            raw = split_loop(_renamed(node.code, keep | shared, rename, ""))
            mine = statements(re.sub(rf"\b{re.escape(raw[1].group(1))}\b", var, raw[2]))
            forbidden |= locals_of(raw[0]) - keep
            if stmts is not None and mine is not None:     # which locals are kept once
                share_statements(stmts, mine, forbidden, common)
            code = _renamed(node.code, keep | shared | common, rename, f"_r{k}")
            b, lp, bd, a = split_loop(code)
            bd = re.sub(rf"\b{re.escape(lp.group(1))}\b", var, bd)
            forbidden |= locals_of(b) - keep
            mine = statements(bd)
            if stmts is not None and mine is not None:
                stmts, mine = share_statements(stmts, mine, forbidden, set())
                if mine:
                    stmts.append("{\n" + "\n".join(mine) + "\n}")
            else:
                body = (body if stmts is None else "\n".join(stmts)) + "\n{\n" + bd + "\n}"
                stmts = None
            parts_before.append(b)
            parts_after.append(a)
    if not inputs:
        state.add_nedge(entry, merged, dace.Memlet())
    merged.code = dace.properties.CodeBlock(
        "".join(parts_before) + loop.group(0) + "\n"
        + ("\n".join(stmts) if stmts is not None else body) + "\n}"
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
    return LOCAL.sub(one, code)


def share_statements(first: list[str], later: list[str], forbidden: set[str],
           common: set[str]) -> tuple[list[str], list[str]]:
    """``first`` with the leading statements of ``later`` that it already has
    kept once (an ``if`` of the same condition merged, see the module
    docstring), and what is left of ``later``; the locals of the kept
    statements are added to ``common``.  A kept statement uses no local that
    a statement not kept assigns (``bool ok = false;`` is kept only together
    with the block that sets it)."""
    n = 0
    while n < min(len(first), len(later)) and first[n] == later[n] \
            and not locals_of(first[n]) & forbidden:
        n += 1
    while n and any(locals_of(s) & assigned(first[n:] + later[n:]) for s in first[:n]):
        n -= 1
    for stmt in first[:n]:
        common |= locals_of(stmt)
    if n == len(later):
        return first, []
    a, b = if_block(first[n]) if n < len(first) else None, if_block(later[n])
    if a is None or b is None or a[0] != b[0] \
            or locals_of(a[0]) & (forbidden | assigned(first[n:] + later[n:])):
        return first, later[n:]
    inner_a, inner_b = statements(a[1]), statements(b[1])
    if inner_a is None or inner_b is None:
        return first, later[n:]
    common |= locals_of(a[0])
    merged, left = share_statements(inner_a, inner_b, forbidden, common)
    if left:
        merged = [*merged, "{\n" + "\n".join(left) + "\n}"]
    block = f"if ({a[0]}) {{\n" + "\n".join(merged) + "\n}"
    return [*first[:n], block, *first[n + 1:]], later[n + 1:]
