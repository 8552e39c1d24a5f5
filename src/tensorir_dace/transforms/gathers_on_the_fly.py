"""SDFG pass: compute cheap gathered temporaries where they are gathered.

An operand of a neighbour shift that is itself computed (``⟪V2E⟫(S_M ×
(⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)))`` in the nabla operator) is lowered to a map
over its own domain (the edges) that writes a full-size transient, and the
reader (the vertex reduction) gathers it back through the table: every
value is written to memory, with its cache line read first, and read back.
When the producer is cheap, it costs less to compute each value where it
is gathered, from the producer's inputs: on a mesh numbered locally those
are read from memory once and then hit the cache, as do the neighbour
tables the reader already loads.  Each value is then computed once per
read instead of once (twice for an edge value read by its two end
vertices).

The pass turns the producer's body into a C++ lambda of the point defined
in each reader, replaces every gather ``p[index]`` of the temporary by a
call of the lambda at that point, connects the producer's inputs to the
reader, and removes the producer map and the temporary.

Cost rule: a temporary is computed on the fly when its producer costs at
most :data:`MAX_OPS` arithmetic operations per point, a math function
counting :data:`MATH_OPS`; the round trip through memory it saves is
about 24 bytes per value (write, the line read before the write, read
back), the time of several such operations on a core.  A temporary of a
constant size of at most :data:`CACHED_BYTES` stays in memory: it stays in
the cache, so there is no round trip to save, and computing it where it is
gathered would compute every value once per read (the nabla operator on
5440 vertices with random tables: 14% less CPU time per call in memory, the
same with tables numbered locally).

The pass changes nothing unless all of this holds: the temporary is a
transient array with a single access node in the SDFG, written at every
element by a top-level map of as many dimensions whose body is one C++
tasklet writing it at the map's point (and nothing else); the tasklet
reads single elements at affine points or whole arrays; nothing in the
state writes what it reads; and every reader is a node with C++ code (a
tasklet or a neighbour reduction) directly inside another top-level map of
the same state that reads the whole temporary through a pointer connector
used only as ``p[index]``.

A temporary of several dimensions (an edge value at each level, gathered
as ``t[E2C[c, j], k]``) becomes a lambda with one argument per dimension.
The reader's flat index is split into coordinates only where it has
exactly the form the lowering writes (see :func:`_coordinates`); any
other gather leaves the temporary in memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import dace
from dace import symbolic
from dace.sdfg import nodes

from ..library.nodes import TensorIRLoopNode, declare_symbols
from .index_algebra import cpp, flat_cpp, normalised

NAME = "compute_gathered_on_the_fly"

#: A gathered temporary whose producer costs at most this many operations
#: per point is computed where it is read (see the module docstring).
MAX_OPS = 8

#: Operations counted for one call of a math function (sqrt, exp, …).
MATH_OPS = 8

#: A temporary of a constant size up to this many bytes stays in memory
#: (see the module docstring).
CACHED_BYTES = 256 << 10

_ARITH = re.compile(r"(?<![eE])[-+*/%](?!=)")
_CALL = re.compile(r"\b(?!(?:if|for|while|switch|return|sizeof)\b)[A-Za-z_][A-Za-z0-9_:]*\s*\(")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")


def compute_gathered_on_the_fly(sdfg: dace.SDFG) -> None:
    """Compute cheap gathered temporaries in their readers (see the module docstring)."""
    for state in list(sdfg.states()):
        for node in list(state.data_nodes()):
            if node in state.nodes() and _candidate(sdfg, state, node):
                _apply(sdfg, state, node)


def ops(code: str) -> int:
    """Arithmetic operations per point of C++ ``code``, not counting index
    arithmetic inside brackets; a math function call counts :data:`MATH_OPS`."""
    text = code
    while _BRACKETS.search(text):
        text = _BRACKETS.sub("", text)
    text = re.sub(r"\b\d+(\.\d*)?([eE][-+]?\d+)?", "0", text)     # exponents of literals
    return len(_ARITH.findall(text)) + MATH_OPS * len(_CALL.findall(text))


@dataclass
class _Producer:
    entry: nodes.MapEntry
    tasklet: nodes.Tasklet
    out_conn: str
    params: list[str]       # the map parameters, in the temporary's dimension order


def _producer(sdfg, state, temp: nodes.AccessNode) -> _Producer | None:
    """The map writing ``temp`` if it has the form the pass rewrites."""
    ins = state.in_edges(temp)
    if len(ins) != 1 or not isinstance(ins[0].src, nodes.MapExit):
        return None
    exit_ = ins[0].src
    entry = state.entry_node(exit_)
    desc = sdfg.arrays[temp.data]
    if state.entry_node(entry) is not None or len(entry.map.params) != len(desc.shape) \
            or any(not c.startswith("IN_") for c in entry.in_connectors):
        return None
    children = state.scope_children()[entry]
    if len(children) != 2 or not isinstance(children[0] if children[0] is not exit_
                                            else children[1], nodes.Tasklet):
        return None
    t = children[0] if children[0] is not exit_ else children[1]
    if t.language != dace.Language.CPP or t.state_fields or t.code_global.as_string.strip() \
            or len(state.out_edges(t)) != 1 or len(state.out_edges(exit_)) != 1:
        return None
    out = state.out_edges(t)[0]
    params = [str(b) for b, _, _ in out.data.subset.ranges]
    if out.data.data != temp.data or out.data.wcr is not None or out.data.dynamic \
            or sorted(params) != sorted(entry.map.params) \
            or out.data.subset.num_elements() != 1 or not _covers(entry, params, desc):
        return None
    for e in state.in_edges(t):
        if e.data.is_empty():
            continue
        if e.data.wcr is not None or e.data.dynamic:
            return None
        in_desc = sdfg.arrays[e.data.data]
        if not isinstance(in_desc, dace.data.Array):
            return None
        if isinstance(t.in_connectors[e.dst_conn], dace.pointer):
            if not _whole(e.data, in_desc):
                return None
        elif e.data.subset.num_elements() != 1:
            return None
    return _Producer(entry, t, out.src_conn, params)


def _covers(entry: nodes.MapEntry, params: list[str], desc) -> bool:
    """Whether the map writes every element of ``desc`` (``params`` in its
    dimension order): then each point a reader may gather is the value of
    the producer at that point, with its inputs read where the producer
    reads them."""
    ranges = dict(zip(entry.map.params, entry.map.range.ranges))
    for param, size, offset in zip(params, desc.shape, desc.offset):
        begin, end, step = ranges[param]
        if normalised(step) != 1 or normalised(begin + offset) != 0 \
                or normalised(end + 1 + offset - size) != 0:
            return False
    return True


def _whole(memlet, desc) -> bool:
    """Whether ``memlet`` covers all of ``desc`` (its pointer is the array's start)."""
    whole = dace.Memlet.from_array(memlet.data, desc).subset
    return memlet.subset == whole


def _readers(sdfg, state, temp: nodes.AccessNode, producer: _Producer):
    """``(node, connector)`` of every reader of ``temp``, or None if one is not rewritable."""
    found = []
    for e in state.out_edges(temp):
        entry = e.dst
        if not isinstance(entry, nodes.MapEntry) or entry is producer.entry \
                or state.entry_node(entry) is not None or e.dst_conn is None:
            return None
        for inner in state.out_edges_by_connector(entry, "OUT_" + e.dst_conn[3:]):
            node = inner.dst
            if not (isinstance(node, nodes.Tasklet) and node.language == dace.Language.CPP
                    or isinstance(node, TensorIRLoopNode)) \
                    or state.entry_node(node) is not entry \
                    or not isinstance(node.in_connectors.get(inner.dst_conn), dace.pointer) \
                    or not _whole(inner.data, sdfg.arrays[temp.data]):
                return None
            code = _code(node)
            conn = re.escape(inner.dst_conn)
            if len(re.findall(rf"\b{conn}\b", code)) != len(re.findall(rf"\b{conn}\s*\[", code)) \
                    or any(_coordinates(i, sdfg.arrays[temp.data]) is None
                           for i in _gathers(code, inner.dst_conn)):
                return None
            found.append((node, inner.dst_conn))
    return found or None


def _code(node) -> str:
    return node.code if isinstance(node, TensorIRLoopNode) else node.code.as_string


def _set_code(sdfg, node, code: str) -> None:
    if isinstance(node, TensorIRLoopNode):
        node.code = code
        declare_symbols(node, sdfg)
    else:
        node.code = dace.properties.CodeBlock(code, dace.Language.CPP)


def _only_access(sdfg, state, data: str) -> bool:
    count = 0
    for sd in sdfg.all_sdfgs_recursive():
        for st in sd.states():
            for n in st.data_nodes():
                if n.data == data:
                    if sd is not sdfg or st is not state:
                        return False
                    count += 1
    used_in_edges = data in {str(s) for e in sdfg.all_interstate_edges()
                             for s in e.data.free_symbols}
    return count == 1 and not used_in_edges


def _candidate(sdfg, state, temp: nodes.AccessNode) -> bool:
    desc = sdfg.arrays[temp.data]
    if not desc.transient or not isinstance(desc, dace.data.Array) \
            or isinstance(desc.dtype, dace.pointer) or not _only_access(sdfg, state, temp.data):
        return False
    size = symbolic.pystr_to_symbolic(desc.total_size) * desc.dtype.bytes
    if size.is_Integer and int(size) <= CACHED_BYTES:
        return False            # stays in the cache
    producer = _producer(sdfg, state, temp)
    if producer is None or _readers(sdfg, state, temp, producer) is None:
        return False
    if ops(producer.tasklet.code.as_string) > MAX_OPS:
        return False
    written = {n.data for n in state.data_nodes() if state.in_degree(n) > 0}
    read = {e.data.data for e in state.in_edges(producer.tasklet) if not e.data.is_empty()}
    return not read & written


def _apply(sdfg, state, temp: nodes.AccessNode) -> None:
    producer = _producer(sdfg, state, temp)
    assert producer is not None
    readers = _readers(sdfg, state, temp, producer)
    assert readers is not None
    t = producer.tasklet
    ident = re.sub(r"\W", "_", temp.data)
    fn = f"_fly_{ident}"
    desc = sdfg.arrays[temp.data]
    sources = {e.data.data: state.memlet_path(e)[0] for e in state.in_edges(t)
               if not e.data.is_empty()}
    for reader, conn in readers:
        entry = state.entry_node(reader)
        lam, pointers = _lambda(sdfg, state, producer, fn, desc.dtype.ctype)
        code = _replace_gathers(_code(reader), conn, fn, desc)
        _set_code(sdfg, reader, "\n".join(lam) + "\n" + code)
        # The reader reads the producer's inputs instead of the temporary.
        for e in [e for e in state.in_edges(reader) if e.dst_conn == conn]:
            state.remove_memlet_path(e)
        reader.remove_in_connector(conn)
        for data, name in pointers.items():
            if name in reader.in_connectors:     # from a temporary inlined before
                continue
            desc = sdfg.arrays[data]
            reader.add_in_connector(name, dace.pointer(desc.dtype))
            state.add_memlet_path(sources[data].src, entry, reader, dst_conn=name,
                                  memlet=dace.Memlet.from_array(data, desc))
    scope = state.scope_subgraph(producer.entry)
    state.remove_nodes_from(list(scope.nodes()))
    state.remove_nodes_from([temp])
    state.remove_nodes_from([n for n in state.data_nodes() if state.degree(n) == 0])
    sdfg.remove_data(temp.data, validate=False)


def _lambda(sdfg, state, producer: _Producer, fn: str,
            ctype: str) -> tuple[list[str], dict[str, str]]:
    """C++ lines defining ``fn``, the producer's body as a lambda of its map
    parameters (in the temporary's dimension order), and the pointer
    connectors (by array) it reads through."""
    t = producer.tasklet
    pointers: dict[str, str] = {}
    body = []
    for e in state.in_edges(t):
        if e.data.is_empty():
            continue
        data, ctype_in = e.data.data, t.in_connectors[e.dst_conn]
        pointer = pointers.setdefault(data, "_fly_p_" + re.sub(r"\W", "_", data))
        if isinstance(ctype_in, dace.pointer):
            body.append(f"{ctype_in.ctype} const {e.dst_conn} = {pointer};")
        else:
            desc = sdfg.arrays[data]
            coords = [b for b, _, _ in e.data.subset.ranges]
            body.append(f"const {desc.dtype.ctype} {e.dst_conn} = "
                        f"{pointer}[{flat_cpp(desc, coords)}];")
    args = ", ".join(f"long long {p}" for p in producer.params)
    lines = [f"auto {fn} = [&]({args}) -> {ctype} {{", *body,
             f"{ctype} {producer.out_conn};", t.code.as_string,
             f"return {producer.out_conn};", "};"]
    return lines, pointers


def _gathers(code: str, conn: str) -> list[str]:
    """The index of each ``conn[index]`` in ``code``."""
    return [code[a:b] for a, b in _gather_spans(code, conn)]


def _gather_spans(code: str, conn: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the index inside the brackets of each ``conn[...]``."""
    spans, pos = [], 0
    pattern = re.compile(rf"\b{re.escape(conn)}\s*\[")
    while (m := pattern.search(code, pos)) is not None:
        depth, i = 1, m.end()
        while depth:
            depth += {"[": 1, "]": -1}.get(code[i], 0)
            i += 1
        spans.append((m.end(), i - 1))
        pos = i
    return spans


def _coordinates(index: str, desc) -> list[str] | None:
    """The coordinates (C++ integers or parenthesised, from the array's
    start) of the element at flat ``index`` of ``desc``, or None if
    ``index`` is not in the lowering's form.

    The lowering writes a flat index as ``a * s + b * t + c``: each term an
    integer or a parenthesised coordinate, times its dimension's stride
    unless that is 1, zero coordinates left out.  The index splits into
    coordinates only in exactly that form, each term matched to the one
    dimension whose stride it names; the sum of the terms is then the index
    (atoms are parenthesised, so C++ precedence cannot regroup them).  A
    coordinate the lowering writes is in its dimension's range, so the
    split names the element the index reads."""
    if len(desc.shape) == 1:
        return [f"({index})"]
    strides = [normalised(st) for st in desc.strides]
    if len(set(strides)) != len(strides):
        return None
    coords = ["0"] * len(strides)
    seen = set()
    for term in _split_top(index, "+"):
        factors = _split_top(term, "*")
        if not 1 <= len(factors) <= 2 or not all(_atom(f) for f in factors):
            return None
        try:
            stride = normalised(symbolic.pystr_to_symbolic(factors[1])) if len(factors) == 2 else 1
        except Exception:       # noqa: BLE001  (text SymPy cannot read: not the lowering's form)
            return None
        if stride not in strides or stride in seen:
            return None
        seen.add(stride)
        coords[strides.index(stride)] = factors[0]
    return coords


def _split_top(text: str, op: str) -> list[str]:
    """``text`` split at ``op`` outside parentheses and brackets, stripped."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == op and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def _atom(text: str) -> bool:
    """Whether ``text`` is an integer literal or one parenthesised group."""
    if re.fullmatch(r"-?\d+", text):
        return True
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(text) - 1:
            return False
    return True


def _replace_gathers(code: str, conn: str, fn: str, desc) -> str:
    """``code`` with each ``conn[index]`` replaced by ``fn(coordinates)``, the
    coordinates of the element relative to the producer's map (minus the
    array's offsets)."""
    out, pos = [], 0
    for start, end in _gather_spans(code, conn):
        coords = _coordinates(code[start:end], desc)
        assert coords is not None
        args = ", ".join(c if cpp(o) == "0" else f"{c} - ({cpp(o)})"
                         for c, o in zip(coords, desc.offset))
        head = code.rindex(conn, pos, start)
        out += [code[pos:head], f"{fn}({args})"]
        pos = end + 1
    return "".join(out) + code[pos:]
