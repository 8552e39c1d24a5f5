"""SDFG pass: write the write-only output of a large map with streaming stores.

A map such as the Laplacian is limited by memory bandwidth, and an ordinary
store first reads the output's cache line from memory (write-allocate): a
third of the traffic is wasted.  Non-temporal ("streaming") stores write
whole lines without reading them.  GCC emits them neither by itself nor for
``#pragma omp simd nontemporal``, so the pass writes them through intrinsics.

The map's innermost dimension, contiguous in the output, moves into the
tasklet: the map runs over the other dimensions, and the new tasklet loops
over a row.  The original per-point code becomes an inlined lambda of the
row coordinate, whose scalar inputs are read through whole-array pointers at
the same (affine) coordinates.  The row is written in three parts: regular
stores until the address is aligned to the vector width (NumPy aligns large
arrays only to 16 bytes), blocks of vector-width values computed into a
small buffer and streamed out (``_mm512_stream_pd``/``_mm256_stream_pd``,
chosen when compiled from ``__AVX512F__``/``__AVX__``; regular stores on other
targets), and regular stores for the remainder.  A line must be streamed
whole: a line written partly by streaming and partly by regular stores costs
a read-modify-write in memory (four times slower, measured).  An sfence tasklet
follows the map, so the streamed lines are visible before anything reads them.
Each row first prefetches the row its leading input read reaches a few
rows later (:mod:`.prefetch`).

The buffer's block is computed by a ``#pragma omp simd`` loop calling a
lambda that captures by value: without both, GCC 12 unrolls the block and
assembles each vector from scalar loads (the Laplacian 256x256x80 at 20 GB/s
against 37 GB/s with the pragma and the copies, measured in one process).

Rows are short (80 levels: 640 bytes, ten lines, with a part-line at each
end when the array is 16 bytes past a line).  Where the rows of the
dimension before the innermost lie end to end in every array the map
touches (the innermost range spans each array's whole dimension, and the
point code does not use the two coordinates), the pass *flattens* them: one
run over both dimensions per point of the map's outer dimensions, whose
parts are long enough for the hardware prefetcher and whose only part-lines
are at its ends (the Laplacian at 1.3-1.4x the bandwidth of per-row
streaming).  The map keeps at least one dimension, so it stays parallel.
Each line of the run prefetches the leading read's line
:data:`.prefetch.AHEAD_BYTES` ahead (:func:`.prefetch.run_prefetch`).

Streaming pays only when the output does not fit in the cache (otherwise
the next statement would read it back from memory): the generated code
streams only when the output is at least :func:`min_bytes` large (8 MiB,
:data:`DEFAULT_MIN_BYTES`), checked at run time.  Set the environment variable
``TENSORIR_DACE_STREAMING_STORES=0`` to turn the pass off, and
``TENSORIR_DACE_STREAMING_MIN_BYTES`` to another threshold (``0``: stream
every output, as tests do to run these branches on small arrays); both are
read when a program is optimised, and the compile cache's keys cover them.

Only maps that qualify are changed: a top-level map with a static range whose body is one C++
tasklet with one output, written at the map's own coordinates, to an array
the map does not read, with the innermost map parameter indexing a
unit-stride dimension; inputs read at single, affine points; element type
float64 or float32.  A map that reads through whole-array pointers
(gathers through neighbour tables, data-dependent offsets) keeps regular
stores: ICON's edge gradient over levels (60k edges, 80 levels,
mesh-ordered tables) took 5.2-6.3 ms of CPU time per call with streamed
rows against 2.4-2.9 ms without, in one process, interleaved.
"""

from __future__ import annotations

import os
import re

import dace
from dace import symbolic
from dace.sdfg import nodes

from ..errors import LoweringError
from . import index_algebra, prefetch

NAME = "streaming_stores"

#: Outputs smaller than this (bytes) are written with regular stores, unless
#: ``TENSORIR_DACE_STREAMING_MIN_BYTES`` says otherwise (:func:`min_bytes`).
DEFAULT_MIN_BYTES = 8 << 20

#: C++ global code defining ``_tir_stream512_pd(p, b)`` (and ``256``, ``_ps``:
#: stream one vector read from ``b`` to the aligned ``p``) and ``_tir_sfence()``.
#: With GCC they are its builtins, declared here: ``<immintrin.h>`` with
#: ``-march=native`` took 0.5 s to parse, most of a small program's C++ compile.
NONTEMPORAL = """\
#include <cstdint>
#ifndef _TIR_NONTEMPORAL
#define _TIR_NONTEMPORAL
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
typedef double _tir_v8pd __attribute__((vector_size(64), aligned(1), may_alias));
typedef double _tir_v4pd __attribute__((vector_size(32), aligned(1), may_alias));
typedef float _tir_v16ps __attribute__((vector_size(64), aligned(1), may_alias));
typedef float _tir_v8ps __attribute__((vector_size(32), aligned(1), may_alias));
#define _tir_stream512_pd(p, b) __builtin_ia32_movntpd512((p), *(const _tir_v8pd*)(b))
#define _tir_stream256_pd(p, b) __builtin_ia32_movntpd256((p), *(const _tir_v4pd*)(b))
#define _tir_stream512_ps(p, b) __builtin_ia32_movntps512((p), *(const _tir_v16ps*)(b))
#define _tir_stream256_ps(p, b) __builtin_ia32_movntps256((p), *(const _tir_v8ps*)(b))
#define _tir_sfence() __builtin_ia32_sfence()
#elif defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define _tir_stream512_pd(p, b) _mm512_stream_pd((p), _mm512_loadu_pd(b))
#define _tir_stream256_pd(p, b) _mm256_stream_pd((p), _mm256_loadu_pd(b))
#define _tir_stream512_ps(p, b) _mm512_stream_ps((p), _mm512_loadu_ps(b))
#define _tir_stream256_ps(p, b) _mm256_stream_ps((p), _mm256_loadu_ps(b))
#define _tir_sfence() _mm_sfence()
#else
#define _tir_sfence() ((void)0)
#endif
#endif
"""

#: Bytes computed into the buffer and streamed at a time: one cache line
#: (four lines measured 1.4x slower: the buffer no longer stays in registers).
BLOCK_BYTES = 64

_WIDTH = {"double": ("pd", 8, 4), "float": ("ps", 16, 8)}     # suffix, AVX-512, AVX lanes


def enabled() -> bool:
    """Whether the switch ``TENSORIR_DACE_STREAMING_STORES`` leaves the pass on."""
    return os.environ.get("TENSORIR_DACE_STREAMING_STORES", "1").strip().lower() \
        not in ("0", "off", "false", "no")


def min_bytes() -> int:
    """The size in bytes from which outputs are streamed: the environment
    variable ``TENSORIR_DACE_STREAMING_MIN_BYTES``, or :data:`DEFAULT_MIN_BYTES`."""
    text = os.environ.get("TENSORIR_DACE_STREAMING_MIN_BYTES", "").strip()
    if not text:
        return DEFAULT_MIN_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise LoweringError(f"TENSORIR_DACE_STREAMING_MIN_BYTES={text!r} is not a number of "
                            f"bytes: set it to a non-negative integer (0 streams every "
                            f"output), or unset it for the default {DEFAULT_MIN_BYTES}")
    return value


def streaming_stores(sdfg: dace.SDFG) -> None:
    """Stream the write-only outputs of qualifying maps (see the module docstring)."""
    if not enabled():
        return
    for state in list(sdfg.states()):
        for entry in [n for n in state.nodes() if isinstance(n, nodes.MapEntry)
                      and state.entry_node(n) is None]:
            plan = _plan(sdfg, state, entry)
            if plan is not None:
                _apply(sdfg, state, entry, *plan)


def _plan(sdfg, state, entry):
    if any(not c.startswith("IN_") for c in entry.in_connectors):
        return None                      # a range read from data (runtime bounds)
    children = state.scope_children()[entry]
    tasklets = [n for n in children if isinstance(n, nodes.Tasklet)]
    if len(children) != 2 or len(tasklets) != 1:
        return None
    tasklet = tasklets[0]
    if tasklet.language != dace.Language.CPP or len(state.out_edges(tasklet)) != 1:
        return None
    out = state.out_edges(tasklet)[0]
    params = entry.map.params
    if len(params) < 2:
        return None
    inner = params[-1]
    if out.data.wcr is not None or out.data.dynamic:
        return None
    desc = sdfg.arrays[out.data.data]
    ctype = desc.dtype.ctype
    if ctype not in _WIDTH or not isinstance(desc, dace.data.Array):
        return None
    index = [str(b) for b, e, s in out.data.subset.ranges]
    if any(b != e for b, e, s in out.data.subset.ranges) or sorted(index) != sorted(params):
        return None
    if desc.strides[index.index(inner)] != 1:
        return None
    b, e, s = entry.map.range.ranges[-1]
    if s != 1:
        return None
    for e_in in state.in_edges(tasklet):
        m = e_in.data
        if m.is_empty():
            continue
        if m.data == out.data.data or m.wcr is not None or m.dynamic:
            return None
        if isinstance(tasklet.in_connectors[e_in.dst_conn], dace.pointer) \
                or m.subset.num_elements() != 1:
            return None
    return tasklet, out


def _stream_macro(ctype: str) -> str:
    """``_W`` (lanes per vector) and ``_TIR_STREAM(p, b)`` (stream one vector
    from ``b`` to the aligned ``p``), inside ``#if __AVX512F__ || __AVX__``."""
    suffix, w512, w256 = _WIDTH[ctype]
    return f"""\
#if defined(__AVX512F__)
constexpr int _W = {w512};
#define _TIR_STREAM(p, b) _tir_stream512_{suffix}(p, b)
#else
constexpr int _W = {w256};
#define _TIR_STREAM(p, b) _tir_stream256_{suffix}(p, b)
#endif"""


def streamable(desc) -> bool:
    """Whether rows of ``desc`` along its last dimension can be streamed."""
    return isinstance(desc, dace.data.Array) and desc.dtype.ctype in _WIDTH \
        and desc.strides[-1] == 1


def stream_line_function(ctype: str) -> str:
    """C++ global code defining ``_tir_stream_line_<ctype>(p, b)``: stream the
    64-byte line at ``p`` (on a line) from the values at ``b`` (on a line)."""
    suffix, wide, narrow = _WIDTH[ctype]
    return f"""\
#ifndef _TIR_STREAM_LINE_{ctype.upper()}
#define _TIR_STREAM_LINE_{ctype.upper()}
static inline void _tir_stream_line_{ctype}({ctype}* p, const {ctype}* b) {{
#if defined(__AVX512F__) && (defined(__x86_64__) || defined(__i386__))
    _tir_stream512_{suffix}(p, b);
#elif defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
    _tir_stream256_{suffix}(p, b);
    _tir_stream256_{suffix}(p + {narrow}, b + {narrow});
#else
    for (int t = 0; t < {wide}; ++t) p[t] = b[t];
#endif
}}
#endif
"""


def staged_rows_functions(ctype: str) -> str:
    """C++ global code streaming rows written one after another (rows of a
    contiguous block) through a staging buffer, whole cache lines only:

    ``o = _tir_stage_begin_<ctype>(dst, buf, carry)`` before a row is
    computed: ``o`` is the row's offset in its first cache line (in
    values); when the row continues where the values still waiting in
    ``carry`` (a ``_tir_carry_<ctype>``, ``n = 0`` to start) end, they are
    copied to ``buf[0:o]``, else written out.  The row is then computed into
    ``buf[o:o + n]`` (``buf`` aligned to a line, ``n + 2 × 64`` bytes long),
    and ``_tir_stage_end_<ctype>(dst, buf, o, n, carry)`` streams its whole
    lines, aligned in ``buf`` as in memory, and keeps the last, partial
    line's values in ``carry`` for the next row.  So a row whose start is not
    on a line (80 float64 levels of an array 16 bytes past a line) shares
    its first line with the previous row's last one, streamed whole instead
    of both parts written with regular stores (which read the line from
    memory first).  ``_tir_flush_carry_<ctype>(carry)`` writes the values
    still waiting with regular stores: after the last row, before the store
    fence.  An array not aligned to its values is written with regular
    stores only."""
    t = ctype.replace(" ", "_")
    begin, end = f"_tir_stage_begin_{t}", f"_tir_stage_end_{t}"
    carry, flush = f"_tir_carry_{t}", f"_tir_flush_carry_{t}"
    return NONTEMPORAL + f"""\
#ifndef {begin.upper()}
#define {begin.upper()}
struct alignas(64) {carry} {{ {ctype} v[64 / sizeof({ctype})]; {ctype}* dst; int n; }};
static inline void {flush}({carry}& c) {{
    for (int t = 0; t < c.n; ++t) c.dst[t] = c.v[t];
    c.n = 0;
}}
static inline long long {begin}({ctype}* dst, {ctype}* __restrict__ buf, {carry}& c) {{
    const long long o = (long long)(((uintptr_t)dst % 64) / sizeof({ctype}));
    if (c.n) {{
        if (c.dst + c.n == dst) __builtin_memcpy(buf, c.v, 64);
        else {flush}(c);
    }}
    return o;
}}
static inline void {end}({ctype}* dst, const {ctype}* __restrict__ buf, long long o,
        long long n, {carry}& c) {{
    constexpr int _B = 64 / (int)sizeof({ctype});
    {ctype}* const line = dst - o;
    const long long e = o + n;
    long long k = 0;
#if defined(__AVX512F__) || defined(__AVX__)
{_stream_macro(ctype)}
    if ((uintptr_t)dst % sizeof({ctype}) == 0) {{
        if (c.n == 0 && o) {{             /* the first line's start is not this thread's */
            const long long h = e < _B ? e : _B;
            for (long long t = o; t < h; ++t) line[t] = buf[t];
            k = _B;
        }}
        c.n = 0;
        for (; k + _B <= e; k += _B)
            for (int t = 0; t < _B; t += _W) _TIR_STREAM(line + k + t, buf + k + t);
        if (k < e) {{
            __builtin_memcpy(c.v, buf + k, 64);
            c.dst = line + k;
            c.n = (int)(e - k);
        }}
        return;
    }}
#undef _TIR_STREAM
#endif
    if (c.n) {flush}(c);
    for (k = o; k < e; ++k) line[k] = buf[k];
}}
#endif
"""


def _apply(sdfg, state, entry, tasklet, out) -> None:
    exit_ = state.exit_node(entry)
    params = entry.map.params
    inner = params[-1]
    begin, end, _ = entry.map.range.ranges[-1]
    odesc = sdfg.arrays[out.data.data]
    ctype = odesc.dtype.ctype
    out_node = state.memlet_path(out)[-1].dst

    # Inputs (all read at points): one whole-array pointer per array.
    inputs, prelude, pointers, reads = [], [], {}, []
    for e_in in state.in_edges(tasklet):
        m = e_in.data
        if m.is_empty():
            continue
        src = state.memlet_path(e_in)[0]
        desc = sdfg.arrays[m.data]
        if m.data not in pointers:
            pointers[m.data] = f"_sp_{m.data.lstrip('_')}"
            full = dace.Memlet.from_array(m.data, desc)
            inputs.append((pointers[m.data], dace.pointer(desc.dtype), src, full))
        coords = [b for b, _, _ in m.subset.ranges]
        reads.append((m.data, desc, coords))
        prelude.append(f"const {desc.dtype.ctype} {e_in.dst_conn} = "
                       f"{pointers[m.data]}[{index_algebra.flat_cpp(desc, coords)}];")

    size = symbolic.symstr(entry.map.range.num_elements() * odesc.dtype.bytes, cpp_mode=True)
    lo, hi = (symbolic.symstr(x, cpp_mode=True) for x in (begin, end + 1))
    flat = _flattenable(entry, tasklet, out, odesc, reads)
    moved = {inner: f"{begin}:{end} + 1"}           # the map ranges the tasklet loops over
    ahead, run_ahead = [], []
    leading = prefetch.leading_reads(reads, params).items()
    if flat:
        (jb, je, _), = entry.map.range.ranges[-2:-1]
        moved[params[-2]] = f"{jb}:{je} + 1"
        hi = symbolic.symstr(begin + (je + 1 - jb) * (end + 1 - begin), cpp_mode=True)
        ahead.append(f"const long long {params[-2]} = {symbolic.symstr(jb, cpp_mode=True)};")
        for data, coords in leading:
            run_ahead += prefetch.run_prefetch(pointers[data], sdfg.arrays[data], coords,
                                               params, "_k", "_hi - 1")
    else:
        row_end = symbolic.symstr(entry.map.range.ranges[-2][1] + 1, cpp_mode=True)
        for data, coords in leading:
            ahead += prefetch.row_prefetch(pointers[data], sdfg.arrays[data], coords, params,
                                           row_end, lo, hi)
    row_subset = ", ".join(moved.get(str(b), str(b)) for b, _, _ in out.data.subset.ranges)
    body = "\n".join(prelude + [f"{ctype} {out.src_conn};", tasklet.code.as_string,
                                f"return {out.src_conn};"])
    run_prefetches = "\n".join(run_ahead)
    threshold = min_bytes()
    code = "\n".join(ahead) + f"""
auto _point = [=](long long {inner}) -> {ctype} {{
{body}
}};
const long long _lo = {lo}, _hi = {hi};
long long _k = _lo;
#if defined(__AVX512F__) || defined(__AVX__)
{_stream_macro(ctype)}
if ((long long)({size}) >= {threshold}LL) {{
    for (; _k < _hi && ((uintptr_t)(_st_out + (_k - _lo)) % 64); ++_k)
        _st_out[_k - _lo] = _point(_k);
    constexpr int _B = {BLOCK_BYTES} / (int)sizeof({ctype});
    for (; _k + _B <= _hi; _k += _B) {{
{run_prefetches}
        alignas(64) {ctype} _buf[_B];
        #pragma omp simd
        for (int _t = 0; _t < _B; ++_t) _buf[_t] = _point(_k + _t);
        for (int _t = 0; _t < _B; _t += _W) _TIR_STREAM(_st_out + (_k - _lo) + _t, _buf + _t);
    }}
}}
#undef _TIR_STREAM
#endif
for (; _k < _hi; ++_k) _st_out[_k - _lo] = _point(_k);"""

    new = state.add_tasklet(tasklet.label + "_rows", {}, {"_st_out": dace.pointer(odesc.dtype)},
                            code, language=dace.Language.CPP,
                            code_global=NONTEMPORAL + prefetch.HEADERS)
    kept = len(params) - (2 if flat else 1)
    entry.map.params = params[:kept]
    entry.map.range = dace.subsets.Range(entry.map.range.ranges[:kept])
    for conn, ctype_, src, memlet in inputs:
        new.add_in_connector(conn, ctype_)
        # the whole array inside the map is the whole array outside: nothing to
        # propagate (propagating costs ~10 ms a path, seconds for many outputs)
        state.add_memlet_path(src.src, entry, new, src_conn=src.src_conn, dst_conn=conn,
                              memlet=memlet, propagate=False)
        (inner,) = [e for e in state.in_edges(new) if e.dst_conn == conn]
        for e in state.memlet_path(inner)[:-1]:     # (each edge its own memlet object)
            e.data = dace.Memlet.from_array(memlet.data, sdfg.arrays[memlet.data])
    if not inputs:
        state.add_nedge(entry, new, dace.Memlet())
    state.add_memlet_path(new, exit_, out_node, src_conn="_st_out",
                          memlet=dace.Memlet(f"{out.data.data}[{row_subset}]"))
    for e in list(state.in_edges(tasklet)) + list(state.out_edges(tasklet)):
        state.remove_memlet_path(e)
    state.remove_node(tasklet)
    fence = state.add_tasklet("sfence", {}, {}, "_tir_sfence();", language=dace.Language.CPP,
                              code_global=NONTEMPORAL)
    state.add_nedge(out_node, fence, dace.Memlet())


def _flattenable(entry, tasklet, out, odesc, reads) -> bool:
    """Whether the map's last two dimensions can run as one contiguous run
    (see the module docstring): the map keeps a dimension, the point code
    does not name the two, and in the output and every read one step along
    the dimension before the innermost moves as far in memory as the
    innermost range's length of steps along the innermost."""
    params = entry.map.params
    if len(params) < 3 or entry.map.range.ranges[-2][2] != 1:
        return False
    if any(re.search(rf"\b{re.escape(p)}\b", tasklet.code.as_string) for p in params[-2:]):
        return False
    row, inner = (symbolic.pystr_to_symbolic(p) for p in params[-2:])
    begin, end, _ = entry.map.range.ranges[-1]
    length = symbolic.pystr_to_symbolic(str(end + 1 - begin))
    accesses = [(odesc, [b for b, _, _ in out.data.subset.ranges])]
    accesses += [(desc, coords) for _, desc, coords in reads]
    for desc, coords in accesses:
        flat = symbolic.pystr_to_symbolic(str(index_algebra.flat_index(desc, coords)))
        along = index_algebra.normalised(flat.subs(inner, inner + 1) - flat)
        across = index_algebra.normalised(flat.subs(row, row + 1) - flat)
        if {row, inner} & (along.free_symbols | across.free_symbols) \
                or index_algebra.normalised(across - length * along) != 0:
            return False
    return True
