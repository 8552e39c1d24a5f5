"""SDFG pass: compute temporaries that later statements read with shifts in tiles.

``tmp ← lap(inp); out ← lap(tmp)`` is lowered to two maps exchanging the
full-size transient ``tmp``: it is written to memory and read back, three
transfers per point for a temporary that the second statement needs only
near the point it computes.  The maps cannot be fused point by point (the
consumer reads ``tmp`` at shifted points), so the pass fuses the group of
maps of such a chain of statements into one map over chunks of :data:`ROWS`
rows of the sink's first dimension.  The chunks form one run of
consecutive chunks per OpenMP thread, computed by the task of its first
chunk (see :func:`_run_bounds`).  In one run, one thread walks the rows in
order; the innermost dimension (contiguous in memory) stays whole, so the
loops over it vectorise, and the dimension in between is cut into tiles
whose width is sized at run time so that the buffers fill
:data:`BUFFER_BYTES` (a share of a core's L2 cache).  At each row step,

1. each temporary computes the newest row its readers need into a *ring*
   of as many rows as its readers' shifts span along the first dimension
   (a buffer of the thread that keeps its size between calls), in
   the statements' order, over the tile plus the halo its readers need;
   halos of neighbouring tiles overlap and are computed twice, and each
   run first computes the rows of halo above its first row;
2. or, for a temporary that is cheap to recompute, its statement is
   inlined as a function evaluated at each shifted point it is read at
   (on the fly);
3. then the sink statement computes its row into its output, with
   streaming stores (:mod:`.streaming_stores`, the same switch and size
   threshold) where the output is large.

With three or more dimensions the statements of a row step share one loop
over dimension 1, each a few columns (its lag) behind the columns it reads,
so that the core overlaps one statement's work with the next one's.

With *flat rows* (three dimensions, a streamed output, rows of whole lines
of levels stored one column after the other in every array; see
:func:`_flat_layout`), a step computes, per statement, the values from the
output's offset in a line before its column to that offset before the next
column: the vectors are whole cache lines of the output, of the rings
(which start at the same offset) and of inputs placed like the output.  At
the steps where every statement computes such a whole shifted column, one
loop computes them all, a line at a time, streaming the output's line from
a register.

A one-dimensional chain is cut into tiles of :data:`TILE` points instead,
each with its whole halo in the buffer.

A cost rule decides, per temporary, with ``ops`` the operations per point of
its statement (a math function counts :data:`MATH_OPS`) and ``shifts`` the
number of distinct shifts its readers read it at:

- on the fly when the extra work ``ops × (shifts − 1)`` is at most
  :data:`ON_THE_FLY_MAX_OPS`;
- otherwise in the tile buffer when the halo's extra work
  ``ops × (halo points / tile points)`` is at most :data:`TILE_MAX_OPS`;
- otherwise the statement is not fused (its temporary stays a full-size
  array, and so do the temporaries it reads).

The pass is conservative and leaves the SDFG unchanged unless all of this
holds: every map of the group is a top-level map of one state with a static
range whose body is one C++ tasklet; every temporary is a transient written
by one map of the group at the map's own point, with nothing else reading
or writing it anywhere in the SDFG; every read of a temporary is at the
reader's point plus constant offsets; the producer's range covers every
point its readers read; all maps have the same parameters; and the sink
does not write anything the group reads.  The pass is for the CPU (the
GPU pipeline leaves it out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import dace
from dace import symbolic
from dace.sdfg import nodes

from . import index_algebra, prefetch, streaming_stores
from .index_algebra import cpp, flat_cpp

NAME = "fuse_across_statements"

#: Points per tile of a one-dimensional chain, and the nominal tile side
#: the cost rule counts the halo's share of recomputation with.
TILE = 32

#: Rows of dimension 0 per task of the fused map (2 or more dimensions);
#: the tasks are grouped into one run per thread, each of which first
#: computes the rows of halo above its first row (the diffusion chain's
#: halo of 2 on each side: 4 rows per run).
ROWS = 32

#: Bytes of ring buffers per thread, the tile width along dimension 1 is
#: sized from: about half the 512 KiB L2 cache of a core, the rest holds
#: the rows of the inputs the stencils read.
BUFFER_BYTES = 256 << 10

#: Smallest tile width along dimension 1 (halos recomputed per tile).
MIN_WIDTH = 16

#: A temporary is recomputed on the fly when this costs at most this many
#: extra operations per point.  Writing and reading back a temporary costs
#: three memory transfers per point; the lap-of-lap recomputed on the fly
#: (4 extra evaluations of 5 operations = 20) measured 1.4–1.8× slower than
#: the round trip, so only a few operations pay.
ON_THE_FLY_MAX_OPS = 4

#: A temporary is computed in tiles when the halo's recomputation costs at
#: most this many operations per point (the Laplacian with a halo of one on
#: 32 × 32 tiles: 5 × 0.13 = 0.6; a square root with a halo of two: ~7).
TILE_MAX_OPS = 16

#: Operations counted for one call of a math function (sqrt, exp, …).
MATH_OPS = 8

#: Bytes the ring buffers are aligned to (a cache line).  The heap returns
#: 16-byte aligned blocks (a large one, mapped, 16 bytes past a page): the
#: diffusion chain's 64-byte vector accesses to rings 16 or 48 bytes past a
#: line measured 15% slower than to rings on a line (2-core AMD EPYC, AVX-512).
ALIGN = 64

#: Bytes the staging row of streamed output rows is aligned to (a page).  Its
#: vector stores start part-way into a line, so a row that crosses a page
#: boundary has one store split across two pages in every row: the
#: lap-of-lap chain measured 1.6-1.7x slower in the processes (about one in
#: five) whose staging row happened to cross one (2-core AMD EPYC, AVX-512).
ROW_ALIGN = 4096

_ASSIGN = re.compile(r"=(?!=)")
_CALL = re.compile(r"\b[A-Za-z_][A-Za-z0-9_:]*\s*\(")


def fuse_across_statements(sdfg: dace.SDFG) -> None:
    """Fuse chains of statements exchanging shifted temporaries (see the module docstring)."""
    for state in list(sdfg.states()):
        while _fuse_one(sdfg, state):
            pass


@dataclass
class _Map:
    """A top-level map whose body is one tasklet writing one point."""
    entry: nodes.MapEntry
    tasklet: nodes.Tasklet
    out: Any                        # the tasklet's output edge
    params: list[str]
    ranges: list[tuple]             # (begin, end inclusive) per parameter
    reads: list = field(default_factory=list)   # (connector, data, subset coords)

    @property
    def written(self) -> str:
        return self.out.data.data


def _simple_map(sdfg, state, entry) -> _Map | None:
    if state.entry_node(entry) is not None:
        return None
    if any(not c.startswith("IN_") for c in entry.in_connectors):
        return None                                   # a range read from data
    children = state.scope_children()[entry]
    tasklets = [n for n in children if isinstance(n, nodes.Tasklet)]
    if len(children) != 2 or len(tasklets) != 1:
        return None
    t = tasklets[0]
    if t.language != dace.Language.CPP or len(state.out_edges(t)) != 1:
        return None
    if any(s != 1 for _, _, s in entry.map.range.ranges):
        return None
    out = state.out_edges(t)[0]
    params = list(entry.map.params)
    if out.data.wcr is not None or out.data.dynamic or out.data.subset is None:
        return None
    if [str(b) for b, _, _ in out.data.subset.ranges] != params or \
            any(b != e for b, e, _ in out.data.subset.ranges):
        return None
    if not _plain_array(sdfg.arrays[out.data.data]):
        return None
    m = _Map(entry, t, out, params, [(b, e) for b, e, _ in entry.map.range.ranges])
    for e in state.in_edges(t):
        if e.data.is_empty():
            continue
        if e.data.wcr is not None or e.data.dynamic or e.data.subset is None \
                or e.data.subset.num_elements() != 1 \
                or isinstance(t.in_connectors[e.dst_conn], dace.pointer) \
                or not _plain_array(sdfg.arrays[e.data.data]):
            return None
        m.reads.append((e.dst_conn, e.data.data, [b for b, _, _ in e.data.subset.ranges]))
    return m


def _plain_array(desc) -> bool:
    return isinstance(desc, dace.data.Array) and not isinstance(desc.dtype, dace.pointer) \
        and isinstance(desc.dtype, dace.typeclass) and desc.dtype.ctype in (
            "double", "float", "int", "long long", "int64_t", "int32_t", "bool",
            "unsigned int", "uint64_t", "uint32_t", "int8_t", "uint8_t", "int16_t",
            "uint16_t", "char", "unsigned char", "short", "long")


def _offsets(coords, params) -> list[int] | None:
    """Constant offsets of ``coords`` from ``params`` (one per dimension), or None."""
    if len(coords) != len(params):
        return None
    out = []
    for c, p in zip(coords, params):
        d = index_algebra.normalised(c - symbolic.pystr_to_symbolic(p))
        if not d.is_Integer:
            return None
        out.append(int(d))
    return out


def _ops(code: str) -> int:
    """Operations per point of a lowered tasklet: one per assignment, plus
    :data:`MATH_OPS` per function call."""
    return max(1, len(_ASSIGN.findall(code)) - 1) + MATH_OPS * len(_CALL.findall(code))


def _only_access(sdfg, state, data: str) -> nodes.AccessNode | None:
    """The single access node of ``data`` in the SDFG if it is in ``state``."""
    found = []
    for sd in sdfg.all_sdfgs_recursive():
        for st in sd.states():
            for n in st.data_nodes():
                if n.data == data:
                    if sd is not sdfg or st is not state:
                        return None
                    found.append(n)
    if len(found) != 1:
        return None
    if data in {str(s) for e in sdfg.all_interstate_edges() for s in e.data.free_symbols}:
        return None
    return found[0]


def _fuse_one(sdfg, state) -> bool:
    maps = {}
    for n in state.nodes():
        if isinstance(n, nodes.MapEntry):
            m = _simple_map(sdfg, state, n)
            if m is not None:
                maps[n] = m
    # Sinks whose output no other map here could take as a temporary first,
    # so that a chain is fused from its end.
    sinks = sorted(maps.values(),
                   key=lambda m: _producer_of(sdfg, state, maps, m.written) is not None)
    for sink in sinks:
        plan = _plan(sdfg, state, maps, sink)
        if plan is not None:
            _apply(sdfg, state, sink, *plan)
            return True
    return False


def _producer_of(sdfg, state, maps, data):
    """The simple map writing temporary ``data`` and the readers' map entries, or None."""
    desc = sdfg.arrays[data]
    if not desc.transient:
        return None
    node = _only_access(sdfg, state, data)
    if node is None or state.in_degree(node) != 1:
        return None
    src = state.memlet_path(state.in_edges(node)[0])[0].src
    writer = next((m for m in maps.values() if m.tasklet is src), None)
    if writer is None:
        return None
    readers = set()
    for e in state.out_edges(node):
        if e.dst not in maps:
            return None
        readers.add(e.dst)
    return writer, readers


def _plan(sdfg, state, maps, sink: _Map):
    """``(order, temporaries, halos, modes)`` for the group ending in ``sink``,
    or None.  A temporary too costly for the cost rule stays a full-size
    array, read by the group like any other input."""
    excluded: set[str] = set()
    while True:
        group = _group(sdfg, state, maps, sink, excluded)
        if group is None:
            return None
        order, temps, halos = group
        modes = _modes(order, temps, halos)
        costly = [d for d, mode in modes.items() if mode is None]
        if not costly:
            return order, temps, halos, modes
        excluded.update(costly)


def _group(sdfg, state, maps, sink: _Map, excluded: set[str]):
    members = {sink.entry: sink}
    temps: dict[str, _Map] = {}          # temporary -> producer
    changed = True
    while changed:
        changed = False
        for m in list(members.values()):
            for _, data, _ in m.reads:
                if data in temps or data in excluded:
                    continue
                found = _producer_of(sdfg, state, maps, data)
                if found is None:
                    continue
                writer, readers = found
                if writer.params != sink.params or not readers <= set(members):
                    continue
                temps[data] = writer
                members[writer.entry] = writer
                changed = True
    if not temps:
        return None
    order = _topological(members, temps)
    if order is None:
        return None
    reads = {d for m in members.values() for _, d, _ in m.reads}
    if sink.written in reads or sink.written in temps:
        return None
    halos = _halos(order, temps, sink)
    if halos is None or not _covered(halos, temps, sink):
        return None
    return order, temps, halos


def _topological(members, temps):
    """The group's maps, producers before their readers."""
    done, order = set(), []
    pending = list(members.values())
    while pending:
        ready = [m for m in pending
                 if all(temps[d].entry in done for _, d, _ in m.reads if d in temps)]
        if not ready:
            return None
        for m in ready:
            order.append(m)
            done.add(m.entry)
            pending.remove(m)
    return order


def _halos(order, temps, sink):
    """Per temporary: the (low, high) offsets per dimension, relative to the
    sink's tile, of the points its readers read."""
    need = {sink.written: [(0, 0)] * len(sink.params)}
    for m in reversed(order):
        mine = need.get(m.written)
        if mine is None:
            return None
        for _, data, coords in m.reads:
            if data not in temps:
                continue
            off = _offsets(coords, m.params)
            if off is None:
                return None
            span = [(lo + o, hi + o) for (lo, hi), o in zip(mine, off)]
            old = need.get(data)
            need[data] = span if old is None else \
                [(min(a, c), max(b, d)) for (a, b), (c, d) in zip(old, span)]
    return need


def _covered(halos, temps, sink) -> bool:
    """Each producer's range covers the points its readers read."""
    for data, p in temps.items():
        for (b, e), (sb, se), (lo, hi) in zip(p.ranges, sink.ranges, halos[data]):
            below = index_algebra.normalised(sb + lo - b)
            above = index_algebra.normalised(e - (se + hi))
            if not (below.is_Integer and above.is_Integer and below >= 0 and above >= 0):
                return False
    return True


def _modes(order, temps, halos):
    """Per temporary "fly" (recomputed where read), "tile" (buffered) or
    None (too costly for both), by the cost rule."""
    modes: dict[str, str | None] = {}
    tiled = len(order[0].params) - 1 if len(order[0].params) > 1 else 1
    for m in order:
        data = m.written
        if data not in temps:
            continue
        ops = _ops(m.tasklet.code.as_string)
        shifts = {tuple(_offsets(c, r.params) or ()) for r in order for _, d, c in r.reads
                  if d == data}
        leaf = all(modes.get(d) != "fly" for _, d, _ in m.reads)
        if leaf and ops * (len(shifts) - 1) <= ON_THE_FLY_MAX_OPS:
            modes[data] = "fly"
            continue
        area = 1.0
        for lo, hi in halos[data][:tiled]:
            area *= (TILE + hi - lo) / TILE
        modes[data] = "tile" if ops * (area - 1.0) <= TILE_MAX_OPS else None
    return modes


def _apply(sdfg, state, sink, order, temps, halos, modes) -> None:
    params = sink.params
    nd = len(params)
    rolled = nd > 1                  # rows of dimension 0 roll through ring buffers
    first = 1 if rolled else 0       # the first dimension with loops inside a row
    odesc = sdfg.arrays[sink.written]
    stream = rolled and streaming_stores.enabled() and streaming_stores.streamable(odesc)
    ends = [cpp(e + 1) for _, e in sink.ranges]
    pointers: dict[str, str] = {}
    lines = []
    buffered = [m.written for m in order if modes.get(m.written) == "tile"]
    if rolled:
        lines += _run_bounds(cpp(sink.ranges[0][0]), ends[0])
    else:
        lines.append(f"const long long _lo0 = _tile0, _hi0 = std::min<long long>(_lo0 + {TILE}, "
                     f"{ends[0]});")
    for d in range(2, nd - 1):                     # further middle dimensions stay whole
        lines.append(f"const long long _lo{d} = {cpp(sink.ranges[d][0])}, _hi{d} = {ends[d]};")
    if rolled:
        lines.append(f"const long long _lo{nd - 1} = {cpp(sink.ranges[-1][0])}, "
                     f"_hi{nd - 1} = {ends[-1]};")

    # Buffer extents per temporary and dimension (dimension 0 when rolled: ring rows).
    def extent(data, d) -> str:
        lo, hi = halos[data][d]
        b, e = sink.ranges[d]
        if d == 0:
            return str(hi - lo + 1) if rolled else str(TILE + hi - lo)
        if d == 1 and nd > 2:
            return f"(_tw + {hi - lo})"
        return f"({cpp(e - b + 1 + hi - lo)})"

    if rolled and nd > 2:
        # Tile width along dimension 1 from the bytes of one column of all rings.
        column = " + ".join(
            f"{extent(t, 0)} * (long long)sizeof({sdfg.arrays[t].dtype.ctype})"
            + "".join(f" * {extent(t, d)}" for d in range(2, nd)) for t in buffered) or "1"
        lines.append(f"const long long _tw = std::max<long long>({MIN_WIDTH}, "
                     f"std::min<long long>({ends[1]} - ({cpp(sink.ranges[1][0])}), "
                     f"({BUFFER_BYTES}LL / ({column})) / 8 * 8));")
    if stream:
        ctype = odesc.dtype.ctype
        row = f"({ends[-1]} - ({cpp(sink.ranges[-1][0])}))"
        size = " * ".join(f"({cpp(e - b + 1)})" for b, e in sink.ranges)
        lines += _scratch("_frow", ctype, f"{row} + 128 / sizeof({ctype})", ROW_ALIGN) + [
                  f"_tir_carry_{ctype} _fcarry;", "_fcarry.n = 0;",
                  f"const bool _fstream = (long long)({size}) * (long long)sizeof({ctype}) "
                  f">= {streaming_stores.min_bytes()}LL;"]
    flat = stream and nd == 3 and _flat_layout(sdfg, order, temps, halos, modes, sink)
    if flat:
        # Whole lines: the rows of levels are a multiple of a line, the output
        # (and so every row of it) starts `_fsh` values past a line.
        octype = odesc.dtype.ctype
        first_point = [symbolic.pystr_to_symbolic(str(b)) for b, _ in sink.ranges]
        lines += [f"const bool _fflat = _fstream && (_hi2 - _lo2) % (64 / (long long)sizeof("
                  f"{octype})) == 0 && (uintptr_t)_fo_out % sizeof({octype}) == 0;",
                  f"const long long _fsh = _fflat ? (long long)(((uintptr_t)&_fo_out["
                  f"{flat_cpp(odesc, first_point)}] % 64) / sizeof({octype})) : 0;"]
    for data in buffered:
        ident = _ident(data)
        exts = [extent(data, d) for d in range(nd)]
        for d in range(nd):
            lines.append(f"const long long _fs_{ident}_{d} = "
                         f"{' * '.join(exts[d + 1:]) or '1'};")
        rtype = sdfg.arrays[data].dtype.ctype
        # with flat rows, the ring starts at the output's offset in a line, so
        # that the same vectors are whole lines of both
        phase = f"_fsh * (long long)sizeof({odesc.dtype.ctype}) / (long long)sizeof({rtype})" \
            if flat else None
        lines += _scratch(f"_fb_{ident}", rtype, " * ".join(exts), phase=phase)

    def buffer_index(data, coords):
        terms = []
        for d, c in enumerate(coords):
            lo, r = halos[data][d][0], extent(data, 0)
            if d == 0 and rolled:
                terms.append(f"_tir_ring({c}, {r}) * _fs_{_ident(data)}_0")
            else:
                terms.append(f"(({c}) - (_lo{d} + ({lo}))) * _fs_{_ident(data)}_{d}")
        return " + ".join(terms)

    def loads(m: _Map) -> list[str]:
        out = []
        for conn, data, coords in m.reads:
            desc = sdfg.arrays[data]
            ctype = desc.dtype.ctype
            text = [cpp(c) for c in coords]
            if modes.get(data) == "tile":
                out.append(f"const {ctype} {conn} = _fb_{_ident(data)}"
                           f"[{buffer_index(data, text)}];")
            elif modes.get(data) == "fly":
                out.append(f"const {ctype} {conn} = _fx_{_ident(data)}({', '.join(text)});")
            else:
                if data not in pointers:
                    pointers[data] = f"_fp_{_ident(data)}"
                out.append(f"const {ctype} {conn} = {pointers[data]}[{flat_cpp(desc, coords)}];")
        return out

    def body(m: _Map) -> list[str]:
        ctype = sdfg.arrays[m.written].dtype.ctype
        return loads(m) + [f"{ctype} {m.out.src_conn};", m.tasklet.code.as_string]

    def memory_reads(m: _Map) -> list:
        """``(data, desc, coords)`` of the arrays ``m`` reads from memory,
        with the reads of the temporaries it computes on the fly."""
        out = []
        for _, data, coords in m.reads:
            if modes.get(data) == "fly":
                fly = temps[data]
                at = dict(zip((symbolic.pystr_to_symbolic(p) for p in fly.params), coords))
                out += [(d, desc, [symbolic.pystr_to_symbolic(str(c)).subs(at, simultaneous=True)
                                   for c in cs]) for d, desc, cs in memory_reads(fly)]
            elif modes.get(data) is None:
                out.append((data, sdfg.arrays[data], coords))
        return out

    def row_of(m: _Map) -> int:
        """The row ``m`` computes at a row step, relative to the sink's."""
        return 0 if m is sink else halos[m.written][0][1]

    def newest_rows() -> dict[str, int]:
        """Per array read from memory: the newest row (relative to the
        sink's) any statement reads of it at a row step; ``None`` where a
        read is not at a constant offset."""
        out: dict[str, Any] = {}
        for m in order:
            if modes.get(m.written) == "fly":
                continue
            for data, _, coords in memory_reads(m):
                off = _offsets(coords, params)
                row = None if off is None or out.get(data, 0) is None \
                    else max(out.get(data, off[0] + row_of(m)), off[0] + row_of(m))
                out[data] = row
        return out

    def prefetches(m: _Map, span) -> list[str]:
        """Prefetch lines for the loop over dimension ``nd - 2`` (see
        :mod:`.prefetch`).  With ``rolled``, only for rows no statement read
        at an earlier row step (those are in the cache)."""
        out = []
        for data, coords in prefetch.leading_reads(memory_reads(m), params).items():
            off = _offsets(coords, params)
            if rolled and off is not None and newest.get(data) is not None \
                    and off[0] + row_of(m) < newest[data]:
                continue
            pointer = pointers.setdefault(data, f"_fp_{_ident(data)}")
            out += prefetch.row_prefetch(pointer, sdfg.arrays[data], coords, params,
                                         span[nd - 2][1], *span[nd - 1])
        return out

    def loops(m: _Map, span, store: list[str], dims=None) -> list[str]:
        out = []
        for d in dims if dims is not None else range(first, nd):
            lo, hi = span[d]
            if d == nd - 1:
                out.append("#pragma omp simd")
            out.append(f"for (long long {params[d]} = {lo}; {params[d]} < {hi}; "
                       f"++{params[d]}) {{")
            if d == nd - 2 and d >= first:
                out += prefetches(m, span)
        n = len(dims) if dims is not None else nd - first
        return ["{"] + out + body(m) + store + ["}"] * n + ["}"]

    newest = newest_rows() if rolled else {}
    skewed = rolled and nd > 2      # one loop over dimension 1 for all statements of a row
    inner_dims = list(range(2, nd)) if skewed else None

    def columns(m: _Map, span) -> list[str]:
        """With ``skewed``: the column of ``m`` the shared loop over
        dimension 1 reaches, its prefetch when dimension 1 is the row loop."""
        return [f"const long long {params[1]} = _j1 - {lags[m.written]};"] + \
            (prefetches(m, span) if nd == 3 else [])

    def tile_reads(m: _Map) -> list[tuple[str, list[int]]]:
        """The buffered temporaries ``m`` reads and their offsets, with
        those of the temporaries it computes on the fly."""
        out = []
        for _, data, coords in m.reads:
            off = _offsets(coords, m.params) or [0] * nd
            if modes.get(data) == "tile":
                out.append((data, off))
            elif modes.get(data) == "fly":
                out += [(d, [a + b for a, b in zip(off, o)]) for d, o in tile_reads(temps[data])]
        return out

    # With ``skewed``, statement ``m`` computes column ``_j1 - lags[m]`` at step
    # ``_j1``: after the columns of the same row it reads further along.
    lags: dict[str, int] = {}
    for m in order if skewed else ():
        if modes.get(m.written) != "fly":
            lags[m.written] = max([lags[d] + max(0, off[1]) for d, off in tile_reads(m)] or [0])

    def flat_steps() -> list[str]:
        """The loop over dimension 1 of a row step with flat rows (see
        :func:`_flat_layout`): at each step every statement computes the
        values from ``_fsh`` values before its column to ``_fsh`` before the
        next one, so that a vector of the loop over dimension 2 is a whole
        line of the output (and of the rings, which start at the same offset
        in a line); a statement's first column starts at its start, and one
        more step computes the end of its last.  At the steps where every
        statement computes a whole column, one loop computes them all, a line
        of each at a time, and streams the output's line from a register."""
        octype = odesc.dtype.ctype
        k = params[2]
        members = []                  # (map, row condition, row, lag, first, last)
        for m in order:
            if modes.get(m.written) == "fly":
                continue
            if m is sink:
                lag = lags[m.written]
                members.append((m, "_s >= _c0", "_s", lag, lag, lag))
            else:
                lo, hi = halos[m.written][0]
                (a, b), lag = halos[m.written][1], lags[m.written]
                members.append((m, f"_s + ({hi}) >= _c0 + ({lo})", f"_s + ({hi})", lag,
                                a + lag, b + lag))
        out = [f"for (long long _j1 = _lo1 + ({min(f for *_, f, _ in members)}); "
               f"_j1 < _hi1 + ({max(e for *_, e in members)}) + 1; ++_j1) {{"]
        for n, (_, cond, _, _, f, e) in enumerate(members):
            out += [f"const bool _fa{n} = {cond} && _j1 >= _lo1 + ({f}) && "
                    f"_j1 < _hi1 + ({e}) + 1;",
                    f"const bool _fw{n} = _j1 != _lo1 + ({f}) && _j1 != _hi1 + ({e});"]
        at = [f"const long long {params[0]} = {row};\n"
              f"const long long {params[1]} = _j1 - {lag};" for _, _, row, lag, _, _ in members]
        spans = {m.written: [(f"_lo{d} + ({lo})", f"_hi{d} + ({hi})") for d, (lo, hi)
                             in enumerate(halos[m.written])] for m, *_ in members
                 if m is not sink}
        spans[sink.written] = [(f"_lo{d}", f"_hi{d}") for d in range(nd)]
        point = [symbolic.pystr_to_symbolic(p) for p in params]
        sink_at = f"_fo_out[{flat_cpp(odesc, point)}]"
        sink_store = f"{sink_at} = {sink.out.src_conn};"

        def store_of(m):
            return f"_fb_{_ident(m.written)}[{buffer_index(m.written, params)}] = " \
                f"{m.out.src_conn};"

        def lines_loop(parts):
            """A loop over whole lines of the output, the statements ``parts``
            (index into ``members``) computing a line each, the sink's streamed."""
            body_lines = []
            for n in parts:
                m = members[n][0]
                store = f"_fl[_fu] = {m.out.src_conn};" if m is sink else store_of(m)
                body_lines += ["{", at[n], f"const long long {k} = _fk + _fu;"] + body(m) + \
                    [store, "}"]
            s_at = at[[m for m, *_ in members].index(sink)]
            return [f"for (long long _fk = _lo2 - _fsh; _fk < _hi2 - _fsh; "
                    f"_fk += 64 / (long long)sizeof({octype})) {{",
                    f"alignas(64) {octype} _fl[64 / sizeof({octype})];",
                    "#pragma omp simd",
                    f"for (long long _fu = 0; _fu < (long long)(64 / sizeof({octype})); ++_fu) {{"
                    ] + body_lines + ["}", "{", s_at, f"const long long {k} = _fk;",
                                      f"_tir_stream_line_{octype}(&{sink_at}, "
                                      f"_fl);", "}", "}"]

        every = " && ".join(f"_fa{n} && _fw{n}" for n in range(len(members)))
        out += [f"if ({every}) {{"]
        for n, (m, *_) in enumerate(members):
            out += ["{", at[n]] + prefetches(m, spans[m.written]) + ["}"]
        out += lines_loop(range(len(members))) + ["} else {"]
        for n, (m, *_) in enumerate(members):
            out += [f"if (_fa{n}) {{", at[n]] + prefetches(m, spans[m.written])
            lo_k, hi_k = spans[m.written][2]
            shifted = [f"const long long _fk0 = _j1 == _lo1 + ({members[n][4]}) ? {lo_k} : "
                       f"{lo_k} - _fsh;",
                       f"const long long _fk1 = _j1 == _hi1 + ({members[n][5]}) ? {lo_k} : "
                       f"{hi_k} - _fsh;",
                       "#pragma omp simd",
                       f"for (long long {k} = _fk0; {k} < _fk1; ++{k}) {{"]
            if m is sink:
                out += [f"if (_fw{n}) {{"] + lines_loop([n]) + ["} else {"] + shifted + \
                    body(m) + [sink_store, "}", "}"]
            else:
                out += shifted + body(m) + [store_of(m), "}"]
            out += ["}"]
        return out + ["}", "}"]

    flies, steps = [], []
    bounds = []                       # per statement: its dimension-1 range's offsets, lag
    for m in order:
        data = m.written
        ctype = sdfg.arrays[data].dtype.ctype
        if m is sink:
            continue
        if modes[data] == "fly":
            args = ", ".join(f"long long {p}" for p in params)
            # captured by value: the sizes and pointers are then known not to
            # change inside the vectorised loops (5-7% less CPU time on the
            # diffusion chain than by reference, hand-written variants, two runs)
            flies += [f"auto _fx_{_ident(data)} = [=]({args}) -> {ctype} {{"] + body(m) + \
                [f"return {m.out.src_conn};", "};"]
            continue
        span = [(f"_lo{d} + ({lo})", f"_hi{d} + ({hi})") for d, (lo, hi)
                in enumerate(halos[data])]
        store = [f"_fb_{_ident(data)}[{buffer_index(data, params)}] = {m.out.src_conn};"]
        if skewed:
            lo, hi = halos[data][0]
            (a, b), lag = halos[data][1], lags[data]
            bounds.append((a + lag, b + lag))
            steps += [f"if (_s + ({hi}) >= _c0 + ({lo}) && _j1 >= _lo1 + ({a + lag}) "
                      f"&& _j1 < _hi1 + ({b + lag})) {{",
                      f"const long long {params[0]} = _s + ({hi});"] + \
                columns(m, span) + loops(m, span, store, inner_dims) + ["}"]
        elif rolled:                      # the newest row its readers need at this step
            lo, hi = halos[data][0]
            steps += [f"if (_s + ({hi}) >= _c0 + ({lo})) {{",
                      f"const long long {params[0]} = _s + ({hi});"] + \
                loops(m, span, store) + ["}"]
        else:
            steps += loops(m, span, store)
    own = [(f"_lo{d}", f"_hi{d}") for d in range(nd)]
    point = [symbolic.pystr_to_symbolic(p) for p in params]
    store = [f"_fo_out[{flat_cpp(odesc, point)}] = {sink.out.src_conn};"]
    row_dims = range(2 if skewed else 1, nd - 1)     # loops around the streamed rows
    if stream:
        start = point[:-1] + [symbolic.pystr_to_symbolic(f"_lo{nd - 1}")]
        inner = loops(sink, own, [f"_frow[_fo + {params[-1]} - _lo{nd - 1}] = "
                                  f"{sink.out.src_conn};"], dims=[nd - 1])
        rows = ["if (_fstream) {"] + [
            f"for (long long {params[d]} = _lo{d}; {params[d]} < _hi{d}; ++{params[d]}) {{"
            for d in row_dims] + (prefetches(sink, own) if nd > 2 and not skewed or nd > 3
                                  else []) + [
            f"const long long _fo = _tir_stage_begin_{odesc.dtype.ctype}("
            f"&_fo_out[{flat_cpp(odesc, start)}], _frow, _fcarry);"] + inner + [
            f"_tir_stage_end_{odesc.dtype.ctype}(&_fo_out[{flat_cpp(odesc, start)}], _frow, _fo, "
            f"_hi{nd - 1} - _lo{nd - 1}, _fcarry);"] + ["}"] * len(row_dims) + \
            ["} else"] + loops(sink, own, store, inner_dims)
    else:
        rows = loops(sink, own, store, inner_dims)
    if skewed:
        lag = lags[sink.written]
        bounds.append((lag, lag))
        rows = [f"if (_s >= _c0 && _j1 >= _lo1 + ({lag}) && _j1 < _hi1 + ({lag})) {{",
                f"const long long {params[0]} = _s;"] + columns(sink, own) + rows + ["}"]
        steps = [f"for (long long _j1 = _lo1 + ({min(a for a, _ in bounds)}); "
                 f"_j1 < _hi1 + ({max(b for _, b in bounds)}); ++_j1) {{"] + steps + rows + ["}"]
        if flat:
            steps = ["if (_fflat) {"] + flat_steps() + ["} else {"] + steps + ["}"]
        rows = []
    elif rolled:
        rows = ["if (_s >= _c0) {", f"const long long {params[0]} = _s;"] + rows + ["}"]
    if rolled:
        reach = max([halos[t][0][1] - halos[t][0][0] for t in buffered] or [0])
        tiles = ["{"] if nd == 2 else [
            f"for (long long _t1 = {cpp(sink.ranges[1][0])}; _t1 < {ends[1]}; _t1 += _tw) {{",
            f"const long long _lo1 = _t1, _hi1 = std::min<long long>(_t1 + _tw, {ends[1]});"]
        lines += ["if (_run) {"] + tiles + flies \
            + [f"for (long long _s = _c0 - ({reach}); _s < _e0; ++_s) {{"] \
            + steps + rows + ["}", "}", "}"]
    else:
        lines += flies + steps + rows
    if stream:
        lines += [f"if (_fstream) _tir_flush_carry_{odesc.dtype.ctype}(_fcarry);",
                  "#if defined(__AVX512F__) || defined(__AVX__)",
                  "if (_fstream) _tir_sfence();", "#endif"]
    code = "\n".join(lines)
    ctype_out = odesc.dtype.ctype
    code_global = "#include <memory>\n#include <cstdint>\n" + prefetch.HEADERS + _RING + _OMP + \
        (streaming_stores.staged_rows_functions(ctype_out) if stream else "") + \
        (streaming_stores.stream_line_function(ctype_out) if flat else "")

    # The new map over row chunks (or tiles of one dimension), one tasklet inside.
    b0, e0 = sink.ranges[0]
    new_entry, new_exit = state.add_map(f"{sink.entry.map.label}_tiles", {"_tile0": "0:1"})
    new_entry.map.range = dace.subsets.Range([(b0, e0, ROWS if rolled else TILE)])
    tasklet = state.add_tasklet(f"{sink.tasklet.label}_tiled", set(), set(), code,
                                language=dace.Language.CPP, code_global=code_global)
    sources: dict[str, Any] = {}
    for m in order:
        for e in state.in_edges(m.tasklet):
            if not e.data.is_empty() and e.data.data in pointers:
                sources.setdefault(e.data.data, state.memlet_path(e)[0])
    for data, conn in pointers.items():
        src = sources[data]
        tasklet.add_in_connector(conn, dace.pointer(sdfg.arrays[data].dtype))
        state.add_memlet_path(src.src, new_entry, tasklet, src_conn=src.src_conn,
                              dst_conn=conn,
                              memlet=dace.Memlet.from_array(data, sdfg.arrays[data]))
    if not pointers:
        state.add_nedge(new_entry, tasklet, dace.Memlet())
    out_node = state.memlet_path(sink.out)[-1].dst
    tasklet.add_out_connector("_fo_out", dace.pointer(odesc.dtype))
    state.add_memlet_path(tasklet, new_exit, out_node, src_conn="_fo_out",
                          memlet=dace.Memlet.from_array(sink.written, odesc))
    # Remove the old maps and the temporaries.
    for m in order:
        scope = state.scope_subgraph(m.entry)
        state.remove_nodes_from(list(scope.nodes()))
    state.remove_nodes_from([n for n in state.data_nodes() if n.data in temps])
    state.remove_nodes_from([n for n in state.data_nodes() if state.degree(n) == 0])
    for data in temps:
        sdfg.remove_data(data, validate=False)


def _flat_layout(sdfg, order, temps, halos, modes, sink) -> bool:
    """Whether a row of three-dimensional arrays can be computed as one run
    of values (*flat rows*): the last dimension is read at the statements'
    own level only (no shift along it), and for every array the group reads
    from memory, the output and the rings, a row of it holds the sink's levels
    one column after the other (the last dimension contiguous, the one before
    it with a stride of the sink's number of levels).  Then a value ``k``
    levels past the end of a column is the value at level ``k`` of the next
    column, in every array alike."""
    b, e = sink.ranges[-1]
    levels = e - b + 1
    if sdfg.arrays[sink.written].dtype.ctype not in ("double", "float"):
        return False

    def rows_of(desc) -> bool:
        return len(desc.shape) == 3 and desc.strides[-1] == 1 \
            and index_algebra.normalised(desc.strides[-2] - levels) == 0

    if not rows_of(sdfg.arrays[sink.written]):
        return False
    for m in order:
        for _, data, coords in m.reads:
            off = _offsets(coords, m.params)
            if off is None or off[-1] != 0:
                return False
            if data in temps:
                if modes.get(data) == "tile" and tuple(halos[data][-1]) != (0, 0):
                    return False
            elif not rows_of(sdfg.arrays[data]):
                return False
    return all(m.ranges[-1] == sink.ranges[-1] for m in order)


def _scratch(name: str, ctype: str, size: str, align: int = ALIGN,
             phase: str | None = None) -> list[str]:
    """C++ lines declaring ``name``, a buffer of at least ``size`` values of the
    thread, kept between calls (so it stays in the cache) and grown when
    needed (a ``unique_ptr`` array: ``std::vector<bool>`` has no ``data()``).
    It starts on a multiple of ``align`` bytes (by default a cache line,
    :data:`ALIGN`): vector loads and stores of rows whose length is a multiple
    of the line then never straddle two.  ``phase``: values past that
    boundary it starts at instead (less than a line)."""
    pad = f"({align} / sizeof({ctype}))" if phase is None else f"(2 * {align} / sizeof({ctype}))"
    shift = "" if phase is None else f" + ({phase})"
    return [f"static thread_local std::unique_ptr<{ctype}[]> {name}_v;",
            f"static thread_local long long {name}_n = 0;",
            f"if ({name}_n < (long long)({size})) {{ {name}_n = (long long)({size}); "
            f"{name}_v.reset(new {ctype}[{name}_n + {pad}]); }}",
            f"{ctype}* const __restrict__ {name} = reinterpret_cast<{ctype}*>("
            f"(reinterpret_cast<uintptr_t>({name}_v.get()) + {align - 1}) & "
            f"~(uintptr_t){align - 1}){shift};"]


def _run_bounds(begin: str, end: str) -> list[str]:
    """C++ lines setting ``_c0``, ``_e0`` (the rows the task of chunk
    ``_tile0`` computes) and ``_run`` (whether it computes any).  The chunks
    are grouped into one run of consecutive chunks per thread, split as
    OpenMP's static schedule splits the chunks: a run's first chunk computes
    the whole run, so the halo rows above a chunk are computed once per run,
    not once per chunk.  Which thread takes which chunk only balances the
    work: every run is computed once whatever the schedule."""
    return [
        f"const long long _nch = (({end}) - ({begin}) + {ROWS - 1}) / {ROWS};",
        f"const long long _ci = (_tile0 - ({begin})) / {ROWS};",
        "const long long _nth = std::max<long long>(1, std::min<long long>("
        "_tir_team_size(), _nch));",
        "const long long _q = _nch / _nth, _r = _nch % _nth;",
        "const long long _rn = _ci < _r * (_q + 1) ? _ci / (_q + 1) "
        ": _r + (_ci - _r * (_q + 1)) / _q;",
        "const long long _rb = _rn * _q + std::min<long long>(_rn, _r), "
        "_rb1 = (_rn + 1) * _q + std::min<long long>(_rn + 1, _r);",
        "const bool _run = _rb == _ci;",
        f"const long long _c0 = _tile0, _e0 = std::min<long long>(({begin}) + _rb1 * {ROWS}, "
        f"{end});",
    ]


_OMP = """\
#ifndef _TIR_TEAM_SIZE
#define _TIR_TEAM_SIZE
#ifdef _OPENMP
#include <omp.h>
static inline long long _tir_team_size() { return omp_get_num_threads(); }
#else
static inline long long _tir_team_size() { return 1; }
#endif
#endif
"""


_RING = """\
#ifndef _TIR_RING
#define _TIR_RING
static inline long long _tir_ring(long long row, long long n) {
    const long long r = row % n;
    return r < 0 ? r + n : r;
}
#endif
"""


def _ident(data: str) -> str:
    return data
