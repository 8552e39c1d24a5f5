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
from one iteration to the next).  The others run once per neighbour; one
that follows dependent statements runs before their level loop when they
do not read what it writes.  An ``if`` whose condition does not depend
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
from collections.abc import Callable
from typing import Any

import dace
import networkx as nx
from dace.codegen.targets.cpp import sym2cpp
from dace.sdfg import nodes
from dace.subsets import Range

from ..library.nodes import NeighborReduce, declare_symbols
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
    exit_ = state.exit_node(entry)
    body = [n for n in state.scope_children()[entry] if n is not exit_]
    if len(entry.map.params) < 2:
        return False
    param = entry.map.params[-1]
    start, stop, step = entry.map.range[-1]
    loops = [n for n in body if _neighbor_loop(n)]
    if step != 1 or len(loops) != 1:
        return False
    node = loops[0]
    after = [n for n in body if n is not node]
    if not all(_pointwise(n) or _local_scalar(sdfg, state, n) for n in after):
        return False
    if any(e.data.wcr is not None for n in body for e in state.all_edges(n)):
        return False
    if any(e.src is not entry or (not e.data.is_empty() and param in _names(e.data.subset))
           for e in state.in_edges(node)):
        return False
    epilogue = _Epilogue(sdfg, state, entry, node, param, (start, stop))
    if not epilogue.plan([n for n in nx.topological_sort(state.nx) if n in after]):
        return False
    code = node.code if isinstance(node, NeighborReduce) else node.code.as_string
    rows = _row_code(code, param, set(epilogue.results), start, stop + 1, epilogue.lines)
    if rows is None:
        return False
    epilogue.rewire()
    entry.map.params = entry.map.params[:-1]
    entry.map.range = Range(entry.map.range.ranges[:-1])
    if isinstance(node, NeighborReduce):
        node.code = rows
        declare_symbols(node, sdfg)     # the level range's bounds, from the map
    else:
        node.code = dace.properties.CodeBlock(rows, dace.Language.CPP)
    return True


def _neighbor_loop(node) -> bool:
    if isinstance(node, NeighborReduce):
        return split_loop(node.code) is not None
    return isinstance(node, nodes.Tasklet) and node.language == dace.Language.CPP \
        and "for (long long _nb" in node.code.as_string \
        and split_loop(node.code.as_string) is not None


def _pointwise(node) -> bool:
    return isinstance(node, nodes.Tasklet) and node.language == dace.Language.CPP \
        and not node.code_global.as_string.strip() and not node.state_fields


def _local_scalar(sdfg, state, node) -> bool:
    """A one-element transient written and read only in this scope (map fusion's)."""
    if not isinstance(node, nodes.AccessNode):
        return False
    desc = sdfg.arrays[node.data]
    return desc.transient and desc.total_size == 1 and state.in_degree(node) == 1 \
        and sum(n.data == node.data for st in sdfg.states() for n in st.data_nodes()) == 1


def _is_pointer(tasklet, e) -> bool:
    """Whether a tasklet reads input edge ``e`` through a pointer (a whole array)."""
    return isinstance(tasklet.in_connectors.get(e.dst_conn), dace.dtypes.pointer) \
        or e.data.subset.num_elements() != 1


def _names(subset) -> set[str]:
    return {str(s) for s in subset.free_symbols}


class _Epilogue:
    """What runs per level after the accumulators are complete: the loop
    node's results stored, and the point-wise tasklets of the map (a division
    by a volume, a tuple stored) run on them, in order, each in its own block
    with its connectors as locals, reading the arrays of the map through row
    pointers."""

    def __init__(self, sdfg, state, entry, node, param: str, levels) -> None:
        self.sdfg, self.state, self.entry, self.node = sdfg, state, entry, node
        self.exit = state.exit_node(entry)
        self.param, (self.start, self.last) = param, levels
        self.results: dict[str, list[str]] = {}    # loop node's output -> destinations
        self.values: dict[str, tuple[str, str]] = {}   # local scalar data -> (C name, type)
        self.blocks: list[list[str]] = []
        self.new_ins: dict[tuple, tuple[str, dace.Memlet, str | None, Any, bool]] = {}
        self.new_outs: list[tuple[str, dace.Memlet, Any]] = []
        self.tasklets: list = []
        self.stores: list[str] = []

    def plan(self, order) -> bool:
        for n in order:
            if isinstance(n, nodes.AccessNode):
                desc = self.sdfg.arrays[n.data]
                self.values[n.data] = (f"_rowv{len(self.values)}", desc.dtype.ctype)
        for e in self.state.out_edges(self.node):
            target = self._target(e)
            if target is None:
                return False
            self.results.setdefault(e.src_conn, []).append(target)
        for n in order:                  # in order: tasklets, and copies between scalars
            if isinstance(n, nodes.Tasklet):
                block = self._block(n)
                if block is None:
                    return False
                self.blocks.append(block)
                self.tasklets.append(n)
            else:
                for e in self.state.in_edges(n):
                    if isinstance(e.src, nodes.AccessNode):
                        self.blocks.append([f"{self.values[n.data][0]} = "
                                            f"{self.values[e.src.data][0]};"])
        for n in order:                  # a scalar also stored to an array of the map
            if isinstance(n, nodes.AccessNode):
                for e in self.state.out_edges(n):
                    if e.dst is self.exit:
                        target = self._target(e)
                        if target is None:
                            return False
                        self.stores.append(f"{target} = {self.values[n.data][0]};")
                    elif e.dst not in self.tasklets and not (
                            isinstance(e.dst, nodes.AccessNode) and e.dst.data in self.values):
                        return False
        return True

    def _target(self, e) -> str | None:
        """The C++ lvalue, at the current level, that an output edge stores to
        (a row pointer into an array of the map, or a local scalar's name)."""
        if e.dst is self.exit:
            row = self._row(self._stored(e), out=True)
            if row is None:
                return None
            name = f"_rowp{len(self.new_outs)}"
            self.new_outs.append((name, row[0], e))
            return f"{name}[{row[1]}]"
        if isinstance(e.dst, nodes.AccessNode) and e.dst.data in self.values:
            return self.values[e.dst.data][0]
        return None

    def _stored(self, e) -> dace.Memlet | None:
        """The memlet of the array an edge into the map's exit writes."""
        data = self.state.memlet_path(e)[-1].dst.data
        if e.data.data == data:
            return e.data
        subset = e.data.other_subset
        return None if subset is None else dace.Memlet(data=data, subset=subset)

    def _block(self, t) -> list[str] | None:
        """Tasklet ``t`` as a C++ block for one level: its connectors declared
        as locals from their sources, its code, and its outputs stored."""
        lines = []
        for e in self.state.in_edges(t):
            if e.data.is_empty():
                continue
            ctype = self.sdfg.arrays[e.data.data].dtype.ctype
            source: str | None = None
            if isinstance(e.src, nodes.AccessNode) and e.src.data in self.values:
                source = self.values[e.src.data][0]
            elif e.src is self.entry:
                pointer = _is_pointer(t, e)
                source = self._input(e, pointer)
                if source is None:
                    return None
                if pointer:
                    lines.append(f"auto const {e.dst_conn} = {source};")
                    continue
            else:
                return None
            lines.append(f"const {ctype} {e.dst_conn} = {source};")
        stores = []
        for e in self.state.out_edges(t):
            target = self._target(e)
            if target is None:
                return None
            lines.append(f"{self.sdfg.arrays[e.data.data].dtype.ctype} {e.src_conn};")
            stores.append(f"{target} = {e.src_conn};")
        return ["{", *lines, t.code.as_string, *stores, "}"]

    def _input(self, e, pointer: bool) -> str | None:
        """The C++ expression of an input of a tasklet, read through a new
        connector of the loop node: a row pointer indexed by the level if it
        moves with the level (a point), else the value or pointer it was."""
        key = (e.data.data, str(e.data.subset), pointer)
        if key not in self.new_ins:
            row = self._row(e.data, out=False)
            if row is None or pointer and row[1] is not None:
                return None
            name = f"_rowi{len(self.new_ins)}"
            self.new_ins[key] = (name, row[0], row[1], e, pointer)
        name, _, index, _, _ = self.new_ins[key]
        return f"{name}[{index}]" if index is not None else name

    def _row(self, memlet, out: bool):
        """``(memlet, index)``: the memlet widened to the map's levels and the
        C++ index of the current level in it; for a memlet that does not move
        with the level, itself and None (None if it is an output)."""
        if memlet is None or memlet.data not in self.sdfg.arrays or memlet.subset is None:
            return None
        desc = self.sdfg.arrays[memlet.data]
        moving = [i for i, r in enumerate(memlet.subset.ranges)
                  if self.param in _names(Range([r]))]
        if not moving:
            return None if out else (dace.Memlet.from_memlet(memlet), None)
        if len(moving) != 1:
            return None
        axis = moving[0]
        b, e, _ = memlet.subset.ranges[axis]
        level = dace.symbolic.pystr_to_symbolic(self.param)
        shift = dace.symbolic.pystr_to_symbolic(b) - level
        if b != e or level in shift.free_symbols:
            return None
        subset = Range(list(memlet.subset.ranges))
        subset.ranges[axis] = (self.start + shift, self.last + shift, 1)
        index = f"({self.param} - ({sym2cpp(self.start)})) * ({sym2cpp(desc.strides[axis])})"
        return dace.Memlet(data=memlet.data, subset=subset), index

    def lines(self, results: dict[str, str]) -> list[str]:
        """The statements per level, given each output's value expression."""
        out = [f"{ctype} {name};" for name, ctype in self.values.values()]
        out += [f"{t} = {v};" for c, v in results.items() for t in self.results[c]]
        for block in self.blocks:
            out += block
        return out + self.stores

    def rewire(self) -> None:
        """Connect the loop node to the map's arrays through row memlets and
        remove the point-wise tasklets and local scalars."""
        state, node, sdfg = self.state, self.node, self.sdfg
        for name, row, e in self.new_outs:
            node.add_out_connector(name, dace.pointer(sdfg.arrays[row.data].dtype), force=True)
            state.add_edge(node, name, self.exit, e.dst_conn, row)
        for name, row, index, e, pointer in self.new_ins.values():
            dtype = sdfg.arrays[row.data].dtype
            node.add_in_connector(name, dace.pointer(dtype) if pointer or index is not None
                                  else dtype, force=True)
            state.add_edge(self.entry, e.src_conn, node, name, row)
        for e in list(state.out_edges(node)):
            if e.src_conn in self.results and not e.src_conn.startswith("_rowp"):
                state.remove_edge(e)
                node.remove_out_connector(e.src_conn)
        for n in self.tasklets:
            state.remove_node(n)
        for data in self.values:
            for n in [n for n in state.data_nodes() if n.data == data]:
                state.remove_node(n)
            del sdfg.arrays[data]
        self._drop_unused_inputs()

    def _drop_unused_inputs(self) -> None:
        """Remove the map's inputs that nothing reads any more: two connectors of
        one array and subset now feed the loop node through one of them."""
        state, entry = self.state, self.entry
        for conn in list(entry.out_connectors):
            if not conn.startswith("OUT_") or any(True for _ in state.out_edges_by_connector(
                    entry, conn)):
                continue
            inner = "IN_" + conn[len("OUT_"):]
            for e in list(state.in_edges_by_connector(entry, inner)):
                state.remove_edge(e)
                if isinstance(e.src, nodes.AccessNode) and state.degree(e.src) == 0:
                    state.remove_node(e.src)
            entry.remove_in_connector(inner)
            entry.remove_out_connector(conn)


def _row_code(code: str, param: str, outputs: set[str], start, stop,
              epilogue: Callable[[dict[str, str]], list[str]] | None = None) -> str | None:
    """``code`` (one neighbour loop per point) rewritten for a row of points
    along ``param`` from ``start`` to ``stop``, or None if it is not in the form
    the pass understands.  ``epilogue`` gives the statements per level from
    each output's value (by default, each output a row pointer)."""
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
                    and not _mentions(stmt, _written(run)) \
                    and (inner_stmts := statements(inner[1])) is not None:
                out += flush(run)
                run = []
                out.append(f"if ({inner[0]}) {{\n" + "\n".join(split(inner_stmts)) + "\n}")
            elif dependent:
                run.append(in_row(stmt))
            elif not _mentions("\n".join(run), _written([stmt])):
                out.append(stmt)     # independent: runs before the level loop still open
            else:
                out += flush(run)
                run = []
                out.append(stmt)
        return out + flush(run)

    try:
        rewritten = split(stmts)
    except _NotRows:
        return None
    if len(rewritten) == 1 and rewritten[0].startswith(every):
        return None          # nothing is done once per neighbour: no gain
    lines = [lambdas.strip(),
             f"for (long long _row0 = {lo}; _row0 < {hi}; _row0 += {TILE}) {{",
             f"const long long _rown = ({hi}) - _row0 < {TILE} ? ({hi}) - _row0 : {TILE};"]
    lines += [f"{ctype} {a}[{TILE}];" for a, (ctype, _) in accs.items()]
    lines += [f"{every} {{"] + [f"{a}[_rowk] = {init};" for a, (_, init) in accs.items()] + ["}"]
    lines += [loop.group(0)] + rewritten + ["}"]
    values = {o: f"{a}[_rowk]" for o, a in stores}
    lines += [f"{every} {{", level]
    lines += epilogue(values) if epilogue else [f"{o}[{param} - ({lo})] = {v};"
                                                for o, v in values.items()]
    lines += ["}", "}"]
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
