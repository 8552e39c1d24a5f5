"""Lane-major layout for the interleaved columns of a column scan.

:mod:`.interleave_columns` solves ``LANES`` neighbouring columns in lockstep.
With the columns' data where the arrays keep it (a column's levels one after
the other, the next column ``L`` values further), the lanes of one level lie
far apart, so the compiler cannot vectorise across them, and each division of
the recurrence stays a scalar division.  This rewrite keeps everything the
level loops touch *lane-major*: element ``e`` of lane ``c`` at ``e * LANES + c``.

- Inputs read in a level loop at the lane's own column are copied into a
  lane-major buffer by a loop over the same levels just before it (reading
  exactly what the level loop would read), and read from there.
- Outputs are computed into a lane-major buffer and copied to their columns
  after the scan (read from their columns first unless the level loops write
  every element).
- Column buffers and other arrays declared outside the level loops get the
  lane dimension innermost; scalars get one element per lane.

The loop over the lanes inside each level loop then has a constant trip count
and unit-stride accesses only, and is vectorised (``#pragma omp simd``): one
vector division per level for all lanes.  In the last group of a row, lanes
past the columns (``_c >= _nl``) compute on copies of the first lane's inputs
and are never written back.  Code of any other shape (an input read at a
lane's column only under a condition: in some branches of an ``if``, or in
a branch of a choice ``?:``, an
input read outside the level loops in anything but an initial value, a
statement outside the level loops, an output whose column is not contiguous)
is not rewritten (``None``): the caller keeps the columns where they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sympy
from dace import symbolic

_UP = re.compile(r"^\s*for \(long long (_k\d+) = (.+); \1 < (.+); \+\+\1\) \{$")
_DOWN = re.compile(r"^\s*for \(long long (_k\d+) = (.+); \1 >= (.+); --\1\) \{$")
#: A declaration in a scan's code: its type, name, array extent and initial value.
DECL = re.compile(r"^\s*((?:const )?(?:std::unique_ptr<\w+\[\]>|[A-Za-z_][\w ]*?)\s*\**)"
                  r"\s*(?:const\s+)?(?P<name>\w+)(?P<dims>\[[^\]]*\])?(?:\s*=\s*(?P<init>.*))?;$")
# a fused scan's column buffer taken from the heap when the column is tall
_RESIZE = re.compile(r"^if \((.*)\) (\w+)\.reset\(new (\w[\w ]*)\[(.*)\]\);$")
_SHIFT = re.compile(r"^\((_k\d+) ([-+]) (\d+)\)$")
#: The element types of scan states and column buffers.
SCALARS = {"double", "float", "long long", "int", "bool", "int64_t", "int32_t", "int8_t",
            "int16_t", "uint8_t"}
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


class _Refused(Exception):
    """The code has a shape this rewrite does not handle."""


@dataclass
class Output:
    """An output connector: its element type, the distance between neighbouring
    columns (elements) and its column's length."""
    ctype: str
    lane_stride: str
    length: str


@dataclass
class _Loop:
    var: str
    low: str                       # the smallest level (C++)
    count: str                     # the number of levels (C++)
    at: int                        # where its header is in the output lines
    staged: dict[tuple[str, str], str] = field(default_factory=dict)
    always: set[tuple[str, str]] = field(default_factory=set)
    # an if-else chain at the loop body's top level: the reads of each branch
    chain: list[set[tuple[str, str]]] | None = None
    branch: set[tuple[str, str]] | None = None
    otherwise: bool = False             # the chain ends with a plain ``else``

    def branches(self, s: str) -> None:
        """Follow if-else chains from the top-level line ``s``: a read in
        every branch of a chain that ends with ``else`` is read at every level."""
        if s.startswith("if (") and s.endswith("{"):
            self.end_chain()
            self.chain, self.branch, self.otherwise = [], set(), False
        elif self.chain is not None and s.startswith(("else", "} else")) and s.endswith("{"):
            self.branch = set()
            self.otherwise = s.replace("}", "").strip() == "else {"
        elif s != "}":
            self.end_chain()

    def end_branch(self) -> None:
        if self.chain is not None and self.branch is not None:
            self.chain.append(self.branch)
            self.branch = None

    def end_chain(self) -> None:
        if self.chain and self.otherwise:
            self.always |= set.intersection(*self.chain)
        self.chain, self.branch, self.otherwise = None, None, False


def rewrite(code: str, param: str, lanes: int, inputs: dict[str, str],
            outputs: dict[str, Output]) -> str | None:
    """``code`` with ``lanes`` columns per call in lane-major layout, or None.

    ``inputs``: the element type of each input pointer connector; ``outputs``:
    the output connectors.  The code must define ``_nl`` (the number of
    columns, at most ``lanes``) before it runs."""
    try:
        return _Rewriter(param, lanes, inputs, outputs).run(code)
    except _Refused:
        return None


class _Rewriter:
    def __init__(self, param, lanes, inputs, outputs):
        self.param, self.lanes, self.inputs, self.outputs = param, lanes, inputs, outputs
        # per block: name -> "scalar" (one element per lane) or "array" (lane-major)
        self.scopes: list[dict[str, str]] = [{}]
        self.out: list[str] = []
        self.written: dict[str, list[tuple[str, str]]] = {}     # output -> (first, count)
        self.used: set[str] = set()
        self.staged = 0

    # ------------------------------------------------------------------ names
    def kind(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.outputs:
            return "output"
        if name in self.inputs:
            return "input"
        return None

    def lane_names(self, text: str, lane: str) -> str:
        """Scalars declared per lane as ``name[lane]``, the column parameter
        as that lane's column."""
        def sub(m: re.Match) -> str:
            name = m.group(0)
            if name == self.param:
                return f"({name} + {lane})"
            return f"{name}[{lane}]" if self.kind(name) == "scalar" else name
        return _IDENT.sub(sub, text)

    # -------------------------------------------------------------- accesses
    def accesses(self, text: str, loop: _Loop | None, depth: int, lane: str) -> str:
        """``text`` with its subscripts rewritten (see the module docstring)."""
        out, i = [], 0
        for m in re.finditer(r"\b([A-Za-z_]\w*)\[", text):
            if m.start() < i:
                continue
            end = _closing(text, m.end() - 1)
            name, index = m.group(1), text[m.end():end]
            kind = self.kind(name)
            out.append(self.lane_names(text[i:m.start()], lane))
            at_column = re.search(rf"\b{re.escape(self.param)}\b", index) is not None
            if kind == "input" and at_column:
                out.append(self.input_read(name, index, m.start() < _choice(text), loop,
                                           depth, lane))
            elif kind in ("array", "output"):
                if loop is None or at_column:
                    raise _Refused
                inner = self.accesses(index, loop, depth, lane)
                target = name
                if kind == "output":
                    target = f"_tout_{name}"
                    self.used.add(name)
                    self.written.setdefault(name, []).append(self.levels(index, loop, depth))
                out.append(f"{target}[({inner}) * {self.lanes} + _c]")
            elif kind == "scalar":
                raise _Refused                  # a per-lane scalar is never subscripted
            elif at_column:
                raise _Refused                  # another subscript at the lane's column
            else:
                out.append(f"{name}[{self.accesses(index, loop, depth, lane)}]")
            i = end + 1
        out.append(self.lane_names(text[i:], lane))
        return "".join(out)

    def input_read(self, name, index, evaluated, loop, depth, lane) -> str:
        """The read of input ``name`` at ``index`` (``evaluated``: before the
        line's first choice ``?:``, so read whenever the line runs)."""
        if loop is None:                        # an initial value: read at the lane's column
            if "[" in index:
                raise _Refused
            return f"{name}[{self.lane_names(index, '_sc')}]"
        if "[" in index or not re.search(rf"\b{loop.var}\b", index):
            raise _Refused
        key = (name, index)
        if depth == 1 and evaluated:
            loop.always.add(key)            # read at every level (else: checked at the end)
        elif depth == 2 and evaluated and loop.branch is not None:
            loop.branch.add(key)            # read in this branch of an if-else chain
        if key not in loop.staged:
            loop.staged[key] = f"_tin{self.staged}"
            self.staged += 1
        return f"{loop.staged[key]}[({loop.var} - ({loop.low})) * {self.lanes} + _c]"

    @staticmethod
    def levels(index: str, loop: _Loop, depth: int) -> tuple[str, str]:
        """The elements of an output a write in ``loop`` covers: (first, count),
        or ("", "") where that is not known."""
        m = _SHIFT.match(index.strip())
        if depth != 1 or m is None or m.group(1) != loop.var:
            return ("", "")
        shift = int(m.group(3)) * (1 if m.group(2) == "+" else -1)
        return (f"({loop.low}) + ({shift})", loop.count)

    # ----------------------------------------------------------------- lines
    def run(self, code: str) -> str:
        loop: _Loop | None = None
        depth = 0
        for line in code.splitlines():
            s = line.strip()
            if not s:
                continue
            if loop is not None:
                before = depth
                depth += s.count("{") - s.count("}")
                if before == 1:
                    loop.branches(s)
                elif before == 2 and s.startswith("} else") and s.endswith("{"):
                    loop.end_branch()
                    loop.branches(s)
                if depth == 0:
                    loop.end_chain()
                    if s != "}" or set(loop.staged) - loop.always:
                        raise _Refused      # an input read only under a condition
                    self.out += ["}", "}"]
                    self.out[loop.at:loop.at] = self.staging(loop)
                    loop = None
                    continue
                m = DECL.match(line)
                if m and self.kind(m.group("name")) is not None:
                    raise _Refused              # a local hiding an outer name
                self.out.append(self.accesses(line, loop, depth, "_c"))
                if before == 2 and depth == 1:
                    loop.end_branch()
                continue
            up = _UP.match(line)
            header = up or _DOWN.match(line)
            if header:
                var, a, b = header.groups()
                low, count = (a, f"({b}) - ({a})") if up else (b, f"({a}) - ({b}) + 1")
                loop, depth = _Loop(var, low, count, len(self.out)), 1
                self.out += [line, "#pragma omp simd",
                             f"for (int _c = 0; _c < {self.lanes}; ++_c) {{"]
                continue
            if s == "{":
                self.scopes.append({})
                self.out.append(s)
            elif s == "}":
                if len(self.scopes) == 1:
                    raise _Refused
                self.scopes.pop()
                self.out.append(s)
            elif s.endswith("{") or s.startswith(("}", "#")) or "for (" in s:
                raise _Refused                  # a block outside the level loops
            else:
                self.outside(s)
        if loop is not None or len(self.scopes) != 1:
            raise _Refused
        return "\n".join(self.prologue() + self.out + self.epilogue())

    def outside(self, s: str) -> None:
        """A statement outside the level loops."""
        resize = _RESIZE.match(s)
        if resize:
            cond, name, ctype, size = resize.groups()
            if self.kind(name) != "heap":
                raise _Refused
            self.out.append(f"if ({cond}) {name}.reset(new {ctype}[({size}) * {self.lanes}]);")
            return
        m = DECL.match(s)
        if m is None:
            raise _Refused
        ctype, name, dims, init = m.group(1).strip(), m.group("name"), m.group("dims"), \
            m.group("init")
        if ctype.startswith("std::unique_ptr<") and init is None and not dims:
            self.scopes[-1][name] = "heap"
            self.out.append(s)
        elif ctype.endswith("*"):
            # a pointer into a lane-major buffer (a column buffer, or an alias of one)
            value = init.split("?")[-1] if init else ""
            names = [n for n in _IDENT.findall(value) if n != "get"]
            if not names or dims or re.search(r"[-+\[]", value) or \
                    any(self.kind(n) not in ("array", "heap") for n in names):
                raise _Refused
            self.scopes[-1][name] = "array"
            self.out.append(s)
        elif ctype in SCALARS and dims:
            if init is not None:
                raise _Refused
            self.scopes[-1][name] = "array"
            self.out.append(f"{ctype} {name}[({dims[1:-1]}) * {self.lanes}];")
        elif ctype in SCALARS:
            self.out.append(f"{ctype} {name}[{self.lanes}];")
            if init is not None:
                value = self.accesses(init, None, 0, "_sc")
                lane = "const int _sc = _c < _nl ? _c : 0; " if "_sc" in value else ""
                self.out.append(f"for (int _c = 0; _c < {self.lanes}; ++_c) {{ "
                                f"{lane}{name}[_c] = {value}; }}")
            self.scopes[-1][name] = "scalar"
        else:
            raise _Refused

    # --------------------------------------------------------------- buffers
    def staging(self, loop: _Loop) -> list[str]:
        """The lane-major copies of the inputs ``loop`` reads, before it."""
        lines = []
        for (name, _), buf in loop.staged.items():
            lines += _scratch(buf, self.inputs[name], loop.count, self.lanes)
        if loop.staged:
            # the same levels, in ascending order: copying a backward scan's
            # inputs downwards made a multiply-add scan 2.6x slower (2.38 against
            # 0.90 ms, 128 x 128 x 80)
            header = (f"for (long long {loop.var} = {loop.low}; {loop.var} < ({loop.low}) + "
                      f"({loop.count}); ++{loop.var}) {{")
            copies = " ".join(f"{buf}[({loop.var} - ({loop.low})) * {self.lanes} + _c] = "
                              f"{name}[{self.lane_names(index, '_sc')}];"
                              for (name, index), buf in loop.staged.items())
            # lane by lane: each lane's levels are read one after the other
            lines += [f"for (int _c = 0; _c < {self.lanes}; ++_c) {{",
                      "const int _sc = _c < _nl ? _c : 0;", header, copies, "}", "}"]
        return lines

    def whole(self, name: str) -> bool:
        """Whether the level loops write every element of output ``name``
        (then its column need not be read first)."""
        try:
            length = symbolic.pystr_to_symbolic(self.outputs[name].length)
            for first, count in self.written.get(name, []):
                if first and symbolic.pystr_to_symbolic(first) == 0 and \
                        symbolic.pystr_to_symbolic(count) == length:
                    return True
        except (SyntaxError, TypeError, ValueError, sympy.SympifyError):   # a bound it cannot read
            return False
        return False

    def prologue(self) -> list[str]:
        lines = []
        for name in sorted(self.used):
            o = self.outputs[name]
            lines += _scratch(f"_tout_{name}", o.ctype, o.length, self.lanes)
            if not self.whole(name):
                lines.append(f"for (int _c = 0; _c < _nl; ++_c) for (long long _e = 0; "
                             f"_e < ({o.length}); ++_e) _tout_{name}[_e * {self.lanes} + _c] = "
                             f"{name}[_c * ({o.lane_stride}) + _e];")
        return lines

    def epilogue(self) -> list[str]:
        return [f"for (int _c = 0; _c < _nl; ++_c) for (long long _e = 0; "
                f"_e < ({o.length}); ++_e) {name}[_c * ({o.lane_stride}) + _e] = "
                f"_tout_{name}[_e * {self.lanes} + _c];"
                for name, o in sorted(self.outputs.items()) if name in self.used]


#: Levels of a lane-major buffer kept on the stack (8 KiB of doubles for four
#: lanes); taller columns get theirs from the heap.  A buffer kept per thread
#: between calls instead (``thread_local``) made the tridiagonal solver 10%
#: slower: in a shared library each access to it is a call.
STACK_LEVELS = 256


def _scratch(name: str, ctype: str, levels: str, lanes: int) -> list[str]:
    """A buffer of ``levels × lanes`` elements."""
    n = f"(long long)({levels})"
    return [f"alignas(64) {ctype} {name}_stack[{STACK_LEVELS * lanes}];",
            f"std::unique_ptr<{ctype}[]> {name}_heap;",
            f"if ({n} > {STACK_LEVELS}) {name}_heap.reset(new {ctype}[{n} * {lanes}]);",
            f"{ctype}* const __restrict__ {name} = {n} > {STACK_LEVELS} ? {name}_heap.get() "
            f": {name}_stack;"]


def _choice(text: str) -> int:
    """Where ``text``'s first ``?`` outside subscripts is (its length if none).
    What comes before it runs whenever the line does (a bound's ``?:``
    inside an index chooses no read; both sides of ``&&`` and ``||`` are
    defined wherever the expression is, so the lowering never guards a
    read with them)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "?" and depth == 0:
            return i
    return len(text)


def _closing(text: str, at: int) -> int:
    """The index of the ``]`` matching the ``[`` at ``at``."""
    depth = 0
    for i in range(at, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise _Refused
