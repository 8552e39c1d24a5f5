"""SDFG pass: neighbour loops outside, contiguous column loops inside.

A neighbour reduction over a mesh with levels (ICON's divergence: a map over
``(Vertex, K)``, K contiguous) is lowered per point: for each vertex and
level, a loop over the vertex's neighbours loads the table entry, tests the
neighbour's presence and gathers one value.  The table work is the same at
every level, and nothing vectorises, since consecutive levels are in
separate iterations of the map.

This pass takes the innermost map parameter (the contiguous one) into the
tasklet and interchanges it with the neighbour loop.  Per point of the
remaining map, and per tile of at most ``TILE`` levels, the accumulators
become rows on the stack; for each neighbour, the statements that do not
depend on the level (table entries, presence tests and guards on them) run
once, and those that do run in a loop over the tile's levels, which reads
contiguous rows of the neighbour's values and which the compiler
vectorises.  The rows are stored to the output at the end.  Every level
still folds the same neighbours in the same order, so the results do not
change.

A statement depends on the level when it mentions the level, an
accumulator, or a local that a dependent statement declares or assigns
(repeated until nothing changes, since the neighbour loop carries values
from one iteration to the next).  An ``if`` whose condition does not depend
on the level stays outside the level loop, and its block is split the same
way.

The pass changes nothing unless the map's only node is a neighbour loop in
the lowering's form (accumulator declarations and on-the-fly lambdas, one
loop, assignments of accumulators to outputs), the map has another
parameter to run in parallel, the inputs are whole arrays, and each output
is contiguous along the interchanged parameter.  It is for CPUs: on a GPU
the level is what neighbouring threads should differ in.
"""

from __future__ import annotations

import re

import dace
from dace.codegen.targets.cpp import sym2cpp
from dace.sdfg import nodes
from dace.subsets import Range

from ..library.nodes import NeighborReduce
from .cpp_text import JUMPS, LOCAL, assigned, if_block, split_loop, statements

NAME = "interchange_neighbor_loops"

#: Levels per tile: the accumulator rows (8 bytes each) stay in L1.
TILE = 128

_ACC = re.compile(r"^([A-Za-z_][\w:]*(?:\s+[A-Za-z_]\w*)*)\s+(_\w+)\s*=\s*(.+);$", re.S)
_OUT = re.compile(r"^(_\w+)\s*=\s*(_\w+);$")
_LAMBDA = re.compile(r"auto\s+_\w+\s*=\s*\[&\]")
_DECLARED = re.compile(r"\b(?:bool|char|short|int|long|float|double|unsigned|auto|"
                       r"int\d+_t|uint\d+_t)\s+(?:const\s+)?\**\s*(_\w+)")
_STORE = re.compile(r"\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")


def interchange_neighbor_loops(sdfg: dace.SDFG) -> None:
    """Interchange the neighbour and contiguous loops of each eligible map (see
    the module docstring)."""
    for state in sdfg.states():
        for entry in [n for n in state.nodes() if isinstance(n, nodes.MapEntry)]:
            _interchange(sdfg, state, entry)


def _interchange(sdfg, state, entry: nodes.MapEntry) -> bool:
    body = [n for n in state.scope_children()[entry] if n is not state.exit_node(entry)]
    if len(body) != 1 or len(entry.map.params) < 2:
        return False
    node = body[0]
    if not isinstance(node, (NeighborReduce, nodes.Tasklet)) or \
            isinstance(node, nodes.Tasklet) and node.language != dace.Language.CPP:
        return False
    param = entry.map.params[-1]
    start, stop, step = entry.map.range[-1]
    if step != 1:
        return False
    ins = state.in_edges(node)
    if any(e.src is not entry or (not e.data.is_empty() and param in
                                  {str(s) for s in e.data.subset.free_symbols})
           for e in ins):
        return False
    outs = {}
    for e in state.out_edges(node):
        axis = _contiguous_axis(sdfg, e.data, param)
        if axis is None:
            return False
        outs[e.src_conn] = (e, axis)
    code = node.code if isinstance(node, NeighborReduce) else node.code.as_string
    rows = _row_code(code, param, set(outs), start, stop + 1)
    if rows is None:
        return False
    for conn, (e, axis) in outs.items():
        subset = Range(list(e.data.subset.ranges))
        subset.ranges[axis] = (start, stop, 1)
        e.data = dace.Memlet(data=e.data.data, subset=subset)
        node.out_connectors[conn] = dace.pointer(sdfg.arrays[e.data.data].dtype)
    entry.map.params = entry.map.params[:-1]
    entry.map.range = Range(entry.map.range.ranges[:-1])
    if isinstance(node, NeighborReduce):
        node.code = rows
    else:
        node.code = dace.properties.CodeBlock(rows, dace.Language.CPP)
    return True


def _contiguous_axis(sdfg, memlet, param: str) -> int | None:
    """The dimension a point output ``memlet`` indexes by ``param`` alone, if
    the array is contiguous along it and no other dimension mentions it."""
    if memlet.is_empty() or memlet.data not in sdfg.arrays:
        return None
    desc = sdfg.arrays[memlet.data]
    found = None
    for i, (b, e, _step) in enumerate(memlet.subset.ranges):
        names = {str(x) for x in dace.symbolic.pystr_to_symbolic(b).free_symbols} | \
            {str(x) for x in dace.symbolic.pystr_to_symbolic(e).free_symbols}
        if str(b) == param and str(e) == param:
            found = i
        elif param in names:
            return None
    if found is None or str(desc.strides[found]) != "1":
        return None
    return found


def _row_code(code: str, param: str, outputs: set[str], start, stop) -> str | None:
    """``code`` (one neighbour loop per point) rewritten for a row of points
    along ``param`` from ``start`` to ``stop``, or None if it is not in the form
    the pass understands."""
    parts = split_loop(code)
    if parts is None:
        return None
    before, loop, body, after = parts
    lambdas, decls = _split_lambdas(before)
    accs = {}
    for stmt in decls or []:
        m = _ACC.match(stmt)
        if m is None or re.search(rf"\b{param}\b", m.group(3)):
            return None
        accs[m.group(2)] = (m.group(1), m.group(3))
    after_stmts = statements(after)
    if decls is None or not accs or after_stmts is None:
        return None
    stores = []
    for stmt in after_stmts:
        m = _OUT.match(stmt)
        if m is None or m.group(1) not in outputs or m.group(2) not in accs:
            return None
        stores.append((m.group(1), m.group(2)))
    stmts = statements(body)
    if stmts is None or JUMPS.search(body) or re.search(r"\breturn\b", body) \
            or _STORE.search(body):
        return None
    tainted = _dependent_names(stmts, {param, *accs})
    lo, hi = sym2cpp(start), sym2cpp(stop)
    level = f"const long long {param} = _row0 + _rowk;"
    every = "for (long long _rowk = 0; _rowk < _rown; ++_rowk)"

    def in_row(stmt: str) -> str:
        for a in accs:
            stmt = re.sub(rf"\b{a}\b", f"{a}[_rowk]", stmt)
        return stmt

    closed: set[str] = set()     # locals declared in row loops already closed

    def flush(run: list[str]) -> list[str]:
        closed.update(_written(run))
        return _row_loop(run, every, level)

    def split(block: list[str]) -> list[str]:
        out: list[str] = []
        run: list[str] = []
        for stmt in block:
            dependent = _mentions(stmt, tainted)
            if dependent and _mentions(stmt, closed):
                raise _NotRows
            inner = if_block(stmt)
            if dependent and inner is not None and not _mentions(inner[0], tainted) \
                    and (inner_stmts := statements(inner[1])) is not None:
                out += flush(run)
                run = []
                out.append(f"if ({inner[0]}) {{\n" + "\n".join(split(inner_stmts)) + "\n}")
            elif dependent:
                run.append(in_row(stmt))
            else:
                out += flush(run)
                run = []
                out.append(stmt)
        return out + flush(run)

    try:
        rewritten = split(stmts)
    except _NotRows:
        return None
    lines = [lambdas.strip(),
             f"for (long long _row0 = {lo}; _row0 < {hi}; _row0 += {TILE}) {{",
             f"const long long _rown = ({hi}) - _row0 < {TILE} ? ({hi}) - _row0 : {TILE};"]
    lines += [f"{ctype} {a}[{TILE}];" for a, (ctype, _) in accs.items()]
    lines += [f"{every} {{"] + [f"{a}[_rowk] = {init};" for a, (_, init) in accs.items()] + ["}"]
    lines += [loop.group(0)] + rewritten + ["}"]
    lines += [f"{every} {{"] + [f"{o}[_row0 - ({lo}) + _rowk] = {a}[_rowk];"
                                for o, a in stores] + ["}", "}"]
    return "\n".join(line for line in lines if line)


def _row_loop(run: list[str], every: str, level: str) -> list[str]:
    return [f"{every} {{\n{level}\n" + "\n".join(run) + "\n}"] if run else []


def _split_lambdas(before: str) -> tuple[str, list[str] | None]:
    """The on-the-fly lambda definitions of ``before`` and its other statements."""
    lambdas, rest, pos = [], [], 0
    while (m := _LAMBDA.search(before, pos)) is not None:
        rest.append(before[pos:m.start()])
        i = before.index("{", m.end())
        depth = 0
        while True:
            depth += {"{": 1, "}": -1}.get(before[i], 0)
            i += 1
            if depth == 0:
                break
        end = before.index(";", i) + 1
        lambdas.append(before[m.start():end])
        pos = end
    rest.append(before[pos:])
    return "\n".join(lambdas), statements("".join(rest))


def _dependent_names(stmts: list[str], seeds: set[str]) -> set[str]:
    """``seeds`` and every local that a statement mentioning one of them
    declares or assigns, or that a block under a condition mentioning one of
    them does, to a fixed point (see the module docstring)."""
    tainted = set(seeds)
    while True:
        grown = set(tainted)
        _taint(stmts, grown)
        if grown == tainted:
            return tainted
        tainted = grown


def _taint(stmts: list[str], tainted: set[str]) -> None:
    for stmt in stmts:
        inner = if_block(stmt)
        parts = statements(inner[1]) if inner is not None else None
        if inner is not None and parts is not None and not _mentions(inner[0], tainted):
            _taint(parts, tainted)
        elif _mentions(stmt, tainted):
            tainted |= _written([stmt])


def _written(stmts: list[str]) -> set[str]:
    """The locals ``stmts`` declare or assign, at any depth."""
    return {n for s in stmts for n in _DECLARED.findall(s)} | assigned(stmts)


class _NotRows(Exception):
    """A level-dependent local is needed beyond the level loop that declares it."""


def _mentions(text: str, names: set[str]) -> bool:
    return any(m.group(0) in names for m in LOCAL.finditer(text)) or \
        any(re.search(rf"\b{re.escape(n)}\b", text) for n in names if not n.startswith("_"))
