"""SDFG pass: run a column scan that consumes another scan's result in the same column map.

A backward scan over the result of a forward scan (the tridiagonal solver)
is lowered to two maps over the same columns exchanging full-size scratch
arrays.  When the consumer reads each scratch array only in its own column,
the two column loops can run one after the other inside one map, and the
scratch array shrinks to one column: a buffer on the stack of the thread
solving it (on the heap for columns longer than :data:`STACK_ELEMENTS`).
The full-size transient disappears, and the intermediate column stays in
cache.

The pass is conservative: it fuses only when every condition below holds,
and otherwise leaves the SDFG unchanged.

- Both nodes are column-scan library nodes, each alone in a map, the two
  maps with the same parameters and ranges, in the same state.
- Every output of the producer is a transient written as one whole column
  with unit stride along the scanned axis, read by the consumer only, and
  used nowhere else in the SDFG.
- Every index of the consumer into such a transient is plain affine C
  arithmetic whose column part is the map's own column (checked
  symbolically), so it addresses the buffer.
- The consumer writes nothing the producer reads.

The pass is for the CPU (the GPU pipeline leaves it out): a GPU thread has
no room for a column buffer of unknown length.
"""

from __future__ import annotations

import re

import dace
from dace import symbolic
from dace.sdfg import nodes

from ..library import declare_symbols
from . import index_algebra

NAME = "fuse_column_scans"

#: Columns up to this many levels keep their buffer on the stack (8 KiB in
#: float64); longer ones use a heap buffer per column.
STACK_ELEMENTS = 1024
_INDEX_CHARS = re.compile(r"^[A-Za-z0-9_ ()+\-*]*$")


def fuse_column_scans(sdfg: dace.SDFG) -> None:
    """Fuse producer/consumer column scans (see the module docstring)."""
    for sd in sdfg.all_sdfgs_recursive():
        for state in sd.states():
            while _fuse_one(sd, state):
                pass


def _is_scan(node) -> bool:
    return isinstance(node, nodes.LibraryNode) and hasattr(node, "forward") \
        and hasattr(node, "axis") and hasattr(node, "code")


def _lone_map(state, node):
    """The map entry/exit around ``node`` if ``node`` is the only node in it."""
    entry = state.entry_node(node)
    if not isinstance(entry, nodes.MapEntry) or state.entry_node(entry) is not None:
        return None
    if any(not c.startswith("IN_") for c in entry.in_connectors):
        return None                      # a range read from data (runtime bounds)
    if len(state.scope_children()[entry]) != 2:      # the node and the exit
        return None
    return entry, state.exit_node(entry)


def _fuse_one(sd: dace.SDFG, state) -> bool:
    for producer in [n for n in state.nodes() if _is_scan(n)]:
        plan = _plan(sd, state, producer)
        if plan is not None:
            _apply(sd, state, producer, *plan)
            return True
    return False


def _plan(sd, state, producer):
    """``(consumer, buffers, rewrites)`` when ``producer`` can be fused into its consumer."""
    outer = _lone_map(state, producer)
    if outer is None:
        return None
    pentry, pexit = outer
    buffers: dict[str, tuple[str, dace.Memlet]] = {}     # transient -> (conn, write memlet)
    consumers = set()
    for e in state.out_edges(producer):
        path = state.memlet_path(e)
        node = path[-1].dst
        if not isinstance(node, nodes.AccessNode) or not sd.arrays[node.data].transient:
            return None
        if not _whole_column(sd.arrays[node.data], e.data):
            return None
        if not _used_only_here(sd, state, node):
            return None
        for out in state.out_edges(node):
            consumers.add(state.memlet_path(out)[-1].dst)
        buffers[node.data] = (e.src_conn, e.data)
    if len(consumers) != 1:
        return None
    consumer = consumers.pop()
    if not _is_scan(consumer) or consumer is producer:
        return None
    inner = _lone_map(state, consumer)
    if inner is None:
        return None
    centry = inner[0]
    if centry.map.params != pentry.map.params or centry.map.range != pentry.map.range:
        return None
    written = {state.memlet_path(e)[-1].dst.data for e in state.out_edges(consumer)}
    read = {state.memlet_path(e)[0].src.data for e in state.in_edges(producer)
            if not e.data.is_empty()}
    if written & read:
        return None
    rewrites = _buffer_reads(sd, state, consumer, buffers, centry.map.params)
    if rewrites is None:
        return None
    return consumer, buffers, rewrites


def _whole_column(desc, memlet: dace.Memlet) -> bool:
    """The write covers one whole column with unit stride along its axis."""
    ranges = memlet.subset.ranges
    axes = [i for i, (b, e, s) in enumerate(ranges) if b != e]
    if len(axes) != 1:
        return False
    ax = axes[0]
    b, e, s = ranges[ax]
    return s == 1 and desc.strides[ax] == 1 and \
        index_algebra.normalised(e - b + 1 - desc.shape[ax]) == 0


def _used_only_here(sd, state, node) -> bool:
    """``node`` is the only access to its data in the SDFG (one writer)."""
    for st in sd.states():
        for n in st.data_nodes():
            if n.data == node.data and n is not node:
                return False
    return node.data not in {str(s) for e in sd.all_interstate_edges()
                             for s in e.data.free_symbols}


def _flat_start(desc, subset) -> symbolic.SymExpr:
    return sum((b + o) * st for (b, _, _), o, st in
               zip(subset.ranges, desc.offset, desc.strides))


def _buffer_reads(sd, state, consumer, buffers, params):
    """Per fused input connector: the buffer index of each of its reads, or None."""
    out = {}
    code = consumer.code
    params = {symbolic.pystr_to_symbolic(p) for p in params}
    for e in state.in_edges(consumer):
        data = state.memlet_path(e)[0].src.data
        if data not in buffers:
            continue
        desc = sd.arrays[data]
        base = _flat_start(desc, e.data.subset) - _flat_start(desc, buffers[data][1].subset)
        reads = {}
        for idx in _indices(code, e.dst_conn):
            if idx is None or not _INDEX_CHARS.match(idx):
                return None
            try:
                rel = index_algebra.normalised(symbolic.pystr_to_symbolic(idx) + base)
            except (SyntaxError, TypeError, ValueError):   # not plain arithmetic: leave it
                return None
            if rel.free_symbols & params:
                return None         # a read outside the map's own column
            reads[idx] = symbolic.symstr(rel, cpp_mode=True)
        if not reads and e.dst_conn in code:
            return None
        out[e.dst_conn] = (data, reads)
    if set(buffers) - {d for d, _ in out.values()}:
        return None
    return out


def _indices(code: str, conn: str):
    """The index text of every ``conn[...]`` in ``code`` (None if unbalanced or bare)."""
    pos = 0
    pattern = re.compile(r"\b" + re.escape(conn) + r"\b")
    while True:
        m = pattern.search(code, pos)
        if m is None:
            return
        i = m.end()
        if i >= len(code) or code[i] != "[":
            yield None              # used other than indexed
            return
        depth, j = 1, i + 1
        while j < len(code) and depth:
            depth += {"[": 1, "]": -1}.get(code[j], 0)
            j += 1
        if depth:
            yield None
            return
        yield code[i + 1:j - 1]
        pos = j


def _apply(sd, state, producer, consumer, buffers, rewrites) -> None:
    pentry, pexit = _lone_map(state, producer)
    centry = state.entry_node(consumer)
    buf_names = {data: f"_colbuf{i}" for i, data in enumerate(buffers)}
    lines = ["{"]
    for data, (_, memlet) in buffers.items():
        desc = sd.arrays[data]
        ctype = desc.dtype.ctype
        size = symbolic.symstr(memlet.subset.num_elements(), cpp_mode=True)
        name = buf_names[data]
        # (a unique_ptr, not a std::vector: std::vector<bool> has no data())
        lines += [f"{ctype} {name}_stack[{STACK_ELEMENTS}];",
                  f"std::unique_ptr<{ctype}[]> {name}_heap;",
                  f"if ((long long)({size}) > {STACK_ELEMENTS}) "
                  f"{name}_heap.reset(new {ctype}[{size}]);",
                  f"{ctype}* const {name} = (long long)({size}) > {STACK_ELEMENTS} ? "
                  f"{name}_heap.get() : {name}_stack;"]
    # The producer's inputs join the consumer's; a name both use for different
    # memlets is renamed and aliased inside the producer's block.
    taken = set(consumer.in_connectors) | set(consumer.out_connectors)
    renamed, moved = {}, []
    for e in state.in_edges(producer):
        if e.data.is_empty():
            continue
        conn = e.dst_conn
        same = [c for c in state.in_edges(consumer) if c.dst_conn == conn]
        if same and str(same[0].data) == str(e.data):
            continue
        if conn in taken:
            new = conn
            while new in taken:
                new += "_"
            renamed[conn] = new
        taken.add(renamed.get(conn, conn))
        moved.append(e)
    lines.append("{")
    for data, (conn, _) in buffers.items():
        lines.append(f"{sd.arrays[data].dtype.ctype}* {conn} = {buf_names[data]};")
    lines += [f"auto {old} = {new};" for old, new in renamed.items()]
    lines += [producer.code, "}", "{"]
    ccode = consumer.code
    for conn, (data, reads) in rewrites.items():
        for idx, rel in reads.items():
            ccode = ccode.replace(f"{conn}[{idx}]", f"{buf_names[data]}[{rel}]")
    lines += [ccode, "}", "}"]
    # Rewire: the producer's inputs into the consumer's map.
    for e in moved:
        src = state.memlet_path(e)[0]
        conn = renamed.get(e.dst_conn, e.dst_conn)
        consumer.add_in_connector(conn, producer.in_connectors[e.dst_conn])
        state.add_memlet_path(src.src, centry, consumer, src_conn=src.src_conn,
                              dst_conn=conn, memlet=dace.Memlet.from_memlet(e.data))
    for e in list(state.in_edges(consumer)):
        if e.dst_conn in rewrites:
            state.remove_memlet_path(e)
            consumer.remove_in_connector(e.dst_conn)
    consumer.code = "\n".join(lines)
    declare_symbols(consumer, sd, producer)
    consumer.lambda_text = f"{producer.lambda_text}  ⨟  {consumer.lambda_text}"
    consumer.label = f"{producer.label}_{consumer.label}"
    stale = [n for n in state.data_nodes() if n.data in buffers]
    state.remove_nodes_from([producer, pentry, pexit, *stale])
    state.remove_nodes_from([n for n in state.data_nodes() if state.degree(n) == 0])
    for data in buffers:
        sd.remove_data(data, validate=False)
    if not any(c for c in centry.in_connectors) and not state.in_edges(centry):
        state.add_nedge(centry, consumer, dace.Memlet())
