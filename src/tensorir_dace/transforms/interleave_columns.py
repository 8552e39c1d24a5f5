"""SDFG pass: solve neighbouring columns of a column scan in lockstep.

A column scan such as the tridiagonal solver's forward sweep is a chain of
dependent operations (a division per level): one column at a time, the core
waits for each level's division before it can start the next.  Columns are
independent, so the pass makes each map iteration solve :func:`lanes_of`
neighbouring columns (along the map's innermost parameter) with the level
loop outside and a loop over the columns inside: the core overlaps the
columns' chains, and the compiler may vectorise across them.

The scan's C++ code is rewritten line by line.  Variables declared outside
the level loops (the carried state, fused-scan column buffers) become arrays
with one element per column; statements outside the level loops run once per
column; the body of each level loop is wrapped in the loop over columns; the
innermost map parameter ``p`` reads as ``(p + _c)`` and each output pointer
moves to its column.  Code that does not have this shape (a block opened
outside a level loop, a local that hides an outer name, per-point scalar
inputs) is left as it was.
"""

from __future__ import annotations

import re

import dace
from dace import symbolic
from dace.sdfg import nodes

from . import lane_major

NAME = "interleave_columns"

#: Columns solved in lockstep by one map iteration: 32 bytes of values, a
#: vector of four float64 values (eight float64 lanes took 16% more time on
#: the tridiagonal solver), or of eight float32 where no value of the scan is
#: wider than four bytes (18% less time than four lanes; sixteen: 4% more).
LANES = 4
NARROW_LANES = 8

_LOOP = re.compile(r"^\s*for \(long long _k\d+ = .*\) \{$")
# scalars, pointers to them, and the heap buffers of fused scans' column buffers
_TYPES = lane_major.SCALARS | {f"{t}*" for t in lane_major.SCALARS} | \
    {f"std::unique_ptr<{t}[]>" for t in lane_major.SCALARS}


def interleave_columns(sdfg: dace.SDFG) -> None:
    """Interleave the columns of qualifying scans (see the module docstring)."""
    for state in sdfg.states():
        for node in [n for n in state.nodes() if _is_scan(n)]:
            entry = state.entry_node(node)
            if not isinstance(entry, nodes.MapEntry) or state.entry_node(entry) is not None:
                continue
            if any(not c.startswith("IN_") for c in entry.in_connectors) or \
                    len(state.scope_children()[entry]) != 2:
                continue
            if any(not isinstance(t, dace.pointer) for t in node.in_connectors.values()):
                continue
            _apply(sdfg, state, entry, node)


def _is_scan(node) -> bool:
    return isinstance(node, nodes.LibraryNode) and hasattr(node, "forward") \
        and hasattr(node, "axis") and hasattr(node, "code")


def lanes_of(sdfg, state, node) -> int:
    """:data:`NARROW_LANES` where no input or output of the scan has more than
    four bytes and its code computes no ``double``, else :data:`LANES`."""
    types = [t.base_type if isinstance(t, dace.pointer) else t
             for t in node.in_connectors.values()]
    types += [sdfg.arrays[e.data.data].dtype for e in state.out_edges(node)]
    if all(t.bytes <= 4 for t in types) and not re.search(r"\bdouble\b", node.code):
        return NARROW_LANES
    return LANES


def _apply(sdfg, state, entry, node) -> None:
    lanes = lanes_of(sdfg, state, node)
    param = entry.map.params[-1]
    begin, end, step = entry.map.range.ranges[-1]
    if step != 1:
        return
    outs = {}
    for e in state.out_edges(node):
        desc = sdfg.arrays[e.data.data]
        index = [str(b) for b, _, _ in e.data.subset.ranges]
        if param not in index or e.data.subset.ranges[index.index(param)][0] != \
                e.data.subset.ranges[index.index(param)][1]:
            return
        outs[e.src_conn] = (e, symbolic.symstr(desc.strides[index.index(param)], cpp_mode=True))
    strides = {c: s for c, (_, s) in outs.items()}
    code = _lane_major(sdfg, state, node, param, strides, lanes) or \
        _rewrite(node.code, param, strides, lanes)
    if code is None:
        return
    stop = symbolic.symstr(end + 1, cpp_mode=True)
    node.code = (f"const long long _nl = ({stop}) - {param} < {lanes} ? "
                 f"({stop}) - {param} : {lanes};\n" + code)
    ranges = list(entry.map.range.ranges)
    ranges[-1] = (begin, end, lanes)
    entry.map.range = dace.subsets.Range(ranges)
    for e, _ in outs.values():
        rng = list(e.data.subset.ranges)
        pos = [str(b) for b, _, _ in rng].index(param)
        p = symbolic.pystr_to_symbolic(param)
        rng[pos] = (p, symbolic.pystr_to_symbolic(f"Min({param} + {lanes - 1}, {end})"), 1)
        e.data.subset = dace.subsets.Range(rng)
    node.label = node.label + f"_x{lanes}"


def _lane_major(sdfg, state, node, param, strides: dict[str, str], lanes: int) -> str | None:
    """The code in lane-major layout (see :mod:`.lane_major`), or None where an
    output's column is not contiguous or the code has another shape."""
    inputs = {c: t.base_type.ctype for c, t in node.in_connectors.items()}
    outputs = {}
    for e in state.out_edges(node):
        desc = sdfg.arrays[e.data.data]
        along = [d for d, (b, last, _) in enumerate(e.data.subset.ranges) if b != last]
        if len(along) != 1 or desc.strides[along[0]] != 1:
            return None
        outputs[e.src_conn] = lane_major.Output(
            desc.dtype.ctype, strides[e.src_conn],
            symbolic.symstr(e.data.subset.size()[along[0]], cpp_mode=True))
    return lane_major.rewrite(node.code, param, lanes, inputs, outputs)


def _rewrite(code: str, param: str, outputs: dict[str, str], lanes: int) -> str | None:
    """The code with ``lanes`` columns per call, or None when it has another shape."""
    lane_loop = "for (int _c = 0; _c < _nl; ++_c)"
    out: list[str] = []
    scopes: list[dict[str, str]] = [{}]
    for conn, stride in outputs.items():
        out += [f"decltype({conn}) _lane_{conn}[{lanes}];",
                f"{lane_loop} _lane_{conn}[_c] = {conn} + _c * ({stride});"]
        scopes[0][conn] = f"_lane_{conn}[_c]"
    in_loop = 0                                  # depth inside a level loop (0: outside)

    def subst(text: str) -> str:
        names = {}
        for scope in scopes:
            names.update(scope)
        text = re.sub(rf"\b{re.escape(param)}\b", f"({param} + _c)", text)
        if names:
            pattern = r"\b(" + "|".join(map(re.escape, names)) + r")\b"
            text = re.sub(pattern, lambda m: names[m.group(1)], text)
        return text

    for line in code.splitlines():
        s = line.strip()
        if not s:
            continue
        if in_loop:
            in_loop += s.count("{") - s.count("}")
            if in_loop == 0:
                if s != "}":
                    return None
                out += ["}", "}"]               # the loop over columns, then the level loop
                continue
            m = lane_major.DECL.match(line)
            if m and any(m.group("name") in scope for scope in scopes):
                return None                     # a local hiding an outer name
            out.append(subst(line))
            continue
        if _LOOP.match(line):
            out += [line, lane_loop + " {"]
            in_loop = 1
            continue
        if s == "{":
            scopes.append({})
            out.append(s)
            continue
        if s == "}":
            if len(scopes) == 1:
                return None
            scopes.pop()
            out.append(s)
            continue
        if s.endswith("{") or s.startswith(("}", "#")):
            return None                          # a block outside the level loops
        m = lane_major.DECL.match(line)
        if m and m.group(1).replace(" *", "*").strip() in _TYPES:
            ctype, name, dims, init = m.group(1).strip(), m.group("name"), m.group("dims") or "", \
                m.group("init")
            out.append(f"{ctype} {name}[{lanes}]{dims};")
            if init is not None:
                out.append(f"{lane_loop} {name}[_c] = {subst(init)};")
            scopes[-1][name] = f"{name}[_c]"
            continue
        if m or not s.endswith(";"):
            return None
        out.append(f"{lane_loop} {{ {subst(s)} }}")
    if in_loop or len(scopes) != 1:
        return None
    return "\n".join(out)
