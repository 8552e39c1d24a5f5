"""Call-time checks that keep a call meaningful and memory-safe.

Shared by the interpreter and the compiled runtime; they run after
:mod:`tensorir_dace.arguments` has checked dtypes, shapes and layouts, and
before anything is written (DESIGN.md §2, "Overlapping arguments" and
"Skip values"):

* **Written parameters** (the targets of the program's statements) must be
  writeable arrays, and two of them must not share memory.
* **Overlapping arguments.** Parameters are distinct variables: a parameter
  that is read and shares memory with a written one is copied on entry, so
  the call computes what it would with separate arrays (GPU arrays are never
  copied: for them such an overlap is an error).  Overlaps are found
  from address ranges (the extent of each array, sorted once), not with
  ``np.may_share_memory`` per pair; where a strided array's range overlaps
  another's, ``np.shares_memory`` decides (interleaved views share nothing).
* **Layouts.** A written array must hold an element per index: a zero
  stride (a broadcast view made writeable) is refused.  For compiled calls,
  :meth:`CallChecks.check_staged` also replaces every NumPy array that is
  not C-contiguous and aligned by a C-contiguous copy (see
  :mod:`tensorir_dace.staging`).
* **Neighbour tables.** An entry of a table parameter must name an element
  of the operand that a shift through the table reads (every use is
  checked, with the call's sizes), or be negative ("no neighbour").  A
  table is scanned (its maximum, and where needed its smallest non-negative
  entry) only when its buffer (data pointer, shape, strides, dtype, owning
  array) is new; the result is cached, so a table changed in place after a
  call is not scanned again: compiled kernels bound-check every indirect
  read, and the interpreter treats an entry outside the operand as absent.
  Tables in GPU memory are not scanned (the kernels' bound checks remain).

Everything per call is a few comparisons per array; the checks are built
once per program (:meth:`CallChecks.for_program`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import ir, pointers, staging, tablescan
from .device_arrays import DeviceArray
from .errors import ArgumentError, SourceLoc
from .lazy import lazy_module

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

__all__ = ["CallChecks", "TableUse", "data_pointer", "table_uses", "written_parameters"]


# --------------------------------------------------------------------------- pointers


data_pointer = pointers.data_pointer


# --------------------------------------------------------------------------- program facts


@dataclass(frozen=True)
class TableUse:
    """A shift that reads ``operand`` through the table parameter ``table``:
    the table's non-negative entries must lie in ``[start, stop)``."""

    table: str
    source: str                 # the operand's dimension that entries index
    start: sympy.Expr
    stop: sympy.Expr
    loc: SourceLoc | None


_SHIFTS = ("unstructured_shift", "shift_init")


def table_uses(program: ir.Program) -> tuple[TableUse, ...]:
    """Every shift of a typed program through a table that is a parameter."""
    params = {p.name for p in program.params if not p.type.is_scalar}
    out: list[TableUse] = []

    def visit(node: ir.Node, visible: frozenset[str]) -> None:
        if isinstance(node, ir.Lambda):
            visible = visible - {p.name for p in node.params}
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Call) and node.args:
            head = node.func.func
            table = node.func.args[0] if node.func.args else None
            if (isinstance(head, ir.Sym) and ir.canonical_builtin(head.name) in _SHIFTS
                    and isinstance(table, ir.Sym) and table.name in visible
                    and isinstance(table.type, ir.TensorType)
                    and isinstance(node.args[0].type, ir.TensorType)):
                src = next((d.neighbor_source for d in table.type.dims
                            if d.neighbor_source is not None), None)
                dim = node.args[0].type.dim(src) if src is not None else None
                if src is not None and dim is not None:
                    use = TableUse(table.name, src, dim.start, dim.stop,
                                   node.loc or node.func.loc)
                    if use not in out:
                        out.append(use)
        for child in ir.children(node):
            visit(child, visible)

    for stmt in program.body:
        visit(stmt, frozenset(params))
    return tuple(out)


def written_parameters(program: ir.Program) -> frozenset[str]:
    """The parameters that some statement of ``program`` assigns to."""
    params = {p.name for p in program.params}
    out = set()
    for node in (n for s in program.body for n in ir.walk(s)):
        if isinstance(node, ir.Assign):
            t = node.target
            while isinstance(t, ir.Call) and t.args:   # subset(x, …) targets
                t = t.args[0]
            if isinstance(t, ir.Sym) and t.name in params:
                out.add(t.name)
    return frozenset(out)


# --------------------------------------------------------------------------- table scans


_table_stats = tablescan.table_stats     # cached per buffer (see tablescan)


# --------------------------------------------------------------------------- checks


def _leaves(value: Any, path: tuple[int, ...] = ()) -> Iterable[tuple[tuple[int, ...], Any]]:
    if isinstance(value, tuple):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))
    else:
        yield path, value


def _leaf_str(param: str, path: tuple[int, ...]) -> str:
    return f"'{param}'" + "".join(f"[{i}]" for i in path)


@dataclass
class _Use:
    use: TableUse
    names: tuple[str, ...]
    bounds: Any                 # f(*symbols) -> (start, stop)


class CallChecks:
    """The call-time checks of one parameter list (see the module docstring).

    :param params: the program's parameters.
    :param written: names of the parameters the program writes.
    :param tables: the shifts through table parameters (:func:`table_uses`).
    :param where: prefixes messages (e.g. ``"program 'p'"``).
    """

    def __init__(self, params: Sequence[ir.Param], written: Iterable[str],
                 tables: Sequence[TableUse] = (), where: str = "program"):
        self.where = where
        arrays = [p for p in params if not p.type.is_scalar]
        self.written = frozenset(written) & frozenset(p.name for p in arrays)
        # (name, written, tuple-typed) per array parameter
        self._plan = tuple((p.name, p.name in self.written, isinstance(p.type.dtype, ir.TupleType))
                           for p in arrays)
        self.tables = tuple(tables)
        uses: dict[str, list[_Use]] = {}
        for u in self.tables:
            exprs = (sympy.sympify(u.start), sympy.sympify(u.stop))
            names = tuple(sorted({s.name for e in exprs for s in e.free_symbols}))
            plain = {s: sympy.Symbol(s.name) for e in exprs for s in e.free_symbols}
            fn = sympy.lambdify([sympy.Symbol(n) for n in names],
                                [e.xreplace(plain) for e in exprs], modules=["math"])
            uses.setdefault(u.table, []).append(_Use(u, names, fn))
        self._uses = uses
        # Interval bounds that name scalar parameters are evaluated on every call.
        scalars = {p.name for p in params if p.type.is_scalar}
        self._scalar_bounds = any(set(u.names) & scalars for us in uses.values() for u in us)
        self._bounds_for: tuple[dict, dict] | None = None    # (symbols, bounds per use)

    @classmethod
    def for_program(cls, program: ir.Program, where: str | None = None) -> CallChecks:
        """The checks of a typed program (built once per program)."""
        hit = _BY_PROGRAM.get(id(program))
        if hit is not None and hit[0] is program:
            return hit[1]
        checks = cls(program.params, written_parameters(program), table_uses(program),
                     where or f"program '{program.name}'")
        if len(_BY_PROGRAM) >= 128:
            _BY_PROGRAM.clear()
        _BY_PROGRAM[id(program)] = (program, checks)
        return checks

    def check(self, values: dict[str, Any], symbols: Mapping[str, int]
              ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        """Raise :class:`ArgumentError` for an unusable call; else return the
        values to run with (read parameters overlapping a written one
        replaced by copies; ``values`` itself when nothing overlaps) and the
        ``(copy, original)`` pairs made."""
        out, copies, _ = self._check(values, symbols, False)
        return out, copies

    def check_staged(self, values: dict[str, Any], symbols: Mapping[str, int]
                     ) -> tuple[dict[str, Any], list[tuple[Any, Any]], list[tuple[Any, Any]]]:
        """:meth:`check`, and every NumPy array a kernel cannot take by pointer
        (see :mod:`tensorir_dace.staging`) replaced by a C-contiguous copy: a
        read one joins the ``(copy, original)`` pairs, a written one is given
        in the third list as ``(original, copy)``, to be copied back after
        the run."""
        return self._check(values, symbols, True)

    def _check(self, values: dict[str, Any], symbols: Mapping[str, int], stage: bool
               ) -> tuple[dict[str, Any], list[tuple[Any, Any]], list[tuple[Any, Any]]]:
        spans: list[tuple[int, int, str, tuple[int, ...], bool]] = []
        pointers: dict[str, int] = {}
        strided: list[tuple[str, tuple[int, ...], bool]] = []
        pointer = data_pointer
        for name, w, is_tuple in self._plan:
            a = values[name]
            if is_tuple:
                for path, leaf in _leaves(a):
                    self._span(name, path, leaf, w, spans, strided)
                continue
            if type(a) is np.ndarray:
                flags = a.flags
                if not (flags.c_contiguous and flags.aligned):
                    lo = self._span(name, (), a, w, spans, strided)
                    if lo is not None:
                        pointers[name] = lo
                    continue
                if w and not flags.writeable:
                    self._read_only(name, ())
            elif w and not _writeable(a):
                self._read_only(name, ())
            n = a.nbytes
            if n:
                lo = pointer(a)
                spans.append((lo, lo + n, name, (), w))
                pointers[name] = lo
        out = values
        copies: list[tuple[Any, Any]] = []
        if self.written and len(spans) > 1 and _any_overlap(spans):
            out = dict(values)
            for name, path in self._overlaps(spans, values):
                leaf = dict(_leaves(out[name]))[path]
                if isinstance(leaf, DeviceArray):
                    self._shared_device_memory(name, path)
                dup = leaf.copy()
                copies.append((dup, leaf))
                out[name] = staging.replace_leaf(out[name], path, dup)
        if self._uses:
            bounds = self._bounds({**symbols, **values} if self._scalar_bounds else symbols)
            for table, uses in self._uses.items():
                if table in pointers:
                    self._check_table(table, values[table], pointers[table], uses, bounds)
        writebacks: list[tuple[Any, Any]] = []
        if stage and strided:
            out = dict(out) if out is values else out
            for name, path, w in strided:
                leaf = dict(_leaves(out[name]))[path]
                if not staging.needs_staging(leaf):
                    continue        # a read array already copied for an overlap
                dup = staging.staged_copy(leaf)
                if w:
                    writebacks.append((leaf, dup))
                else:
                    copies.append((dup, leaf))
                out[name] = staging.replace_leaf(out[name], path, dup)
        return out, copies, writebacks

    def _span(self, name: str, path: tuple[int, ...], a: Any, w: bool, spans: list,
              strided: list) -> int | None:
        """Check that a written leaf is writeable and holds an element per index;
        add the leaf's address range to ``spans`` (and the leaf to ``strided``
        when it needs staging); its data pointer (``None``: empty)."""
        if w and not _writeable(a):
            self._read_only(name, path)
        plain = type(a) is not np.ndarray or not staging.needs_staging(a)
        if not plain:
            strided.append((name, path, w))
            if w and staging.overlaps_itself(a):
                self._repeats_elements(name, path, a)
        n = a.nbytes
        if not n:
            return None
        p = data_pointer(a)
        lo, hi = (p, p + n) if plain or a.flags.c_contiguous else staging.extent(a, p)
        spans.append((lo, hi, name, path, w))
        return p

    def _read_only(self, name: str, path: tuple[int, ...]) -> None:
        raise ArgumentError(
            f"{self.where}: parameter {_leaf_str(name, path)} is written by the program, but "
            "the array given for it is read-only (pass a writeable array, e.g. a copy made "
            "with np.array(x))")

    def _repeats_elements(self, name: str, path: tuple[int, ...], a: np.ndarray) -> None:
        raise ArgumentError(
            f"{self.where}: parameter {_leaf_str(name, path)} is written by the program, but "
            f"the array given for it (shape {tuple(a.shape)}, strides {tuple(a.strides)}) "
            "reaches some elements through several indices, as a broadcast view does, so "
            "which value lands there is undefined; pass an array with an element of its "
            "own per index (e.g. np.empty(shape) or a copy made with np.array(x))")

    def _shared_device_memory(self, name: str, path: tuple[int, ...]) -> None:
        raise ArgumentError(
            f"{self.where}: parameter {_leaf_str(name, path)} is read by the program and shares "
            "GPU memory with a parameter it writes; device arrays are passed by pointer, never "
            "copied, so pass a separate array (e.g. x.copy())")

    def _bounds(self, symbols: Mapping[str, Any]) -> dict[int, tuple[int, int] | None]:
        """The interval of each table use for these sizes (None: not known here)."""
        last = self._bounds_for
        if last is not None and not self._scalar_bounds and last[0] == symbols:
            return last[1]
        bounds: dict[int, tuple[int, int] | None] = {}
        for uses in self._uses.values():
            for u in uses:
                try:
                    lo, hi = u.bounds(*[symbols[n] for n in u.names])
                    bounds[id(u)] = (int(lo), int(hi))
                except (KeyError, TypeError, ValueError):
                    bounds[id(u)] = None    # a bound only known inside the program
        self._bounds_for = (dict(symbols), bounds)
        return bounds

    def _overlaps(self, spans: list, values: dict[str, Any]
                  ) -> list[tuple[str, tuple[int, ...]]]:
        """Read leaves to copy; raise for two written parameters that share memory
        (address ranges that overlap, and for strided arrays an element in common)."""
        to_copy: dict[tuple[str, tuple[int, ...]], None] = {}
        active: list = []
        for s in spans:
            active = [a for a in active if a[1] > s[0]]
            for a in active:
                if not (a[4] or s[4]):
                    continue        # reads of shared memory need no copy
                x, y = (dict(_leaves(values[v[2]]))[v[3]] for v in (a, s))
                if staging.needs_staging(x) or staging.needs_staging(y):
                    if not staging.shares_memory(x, y):
                        continue    # interleaved strided views
                if a[4] and s[4]:
                    raise ArgumentError(
                        f"{self.where}: parameters {_leaf_str(a[2], a[3])} and "
                        f"{_leaf_str(s[2], s[3])} are both written by the program but share "
                        "memory; pass separate arrays")
                r = s if a[4] else a
                to_copy[(r[2], r[3])] = None
            active.append(s)
        return list(to_copy)

    def _check_table(self, table: str, t: Any, pointer: int, uses: list[_Use],
                     bounds: dict[int, tuple[int, int] | None]) -> None:
        if not isinstance(t, np.ndarray):
            return
        for u in uses:
            b = bounds[id(u)]
            if b is None:
                continue
            lo, hi = b
            pos = tablescan.first_bad_entry(t, pointer, lo, hi)
            if pos is None:
                continue
            raise ArgumentError(
                f"{self.where}: neighbour table '{table}' has the entry {int(t[pos])} at index "
                f"[{', '.join(str(int(i)) for i in pos)}], but the shift through it reads "
                f"an operand over {u.use.source}[{u.use.start}:{u.use.stop}] = [{lo}, {hi}) for "
                f"these sizes; entries must lie in [{max(lo, 0)}, {hi}), or be negative for "
                "'no neighbour'", u.use.loc)


def _writeable(a: Any) -> bool:
    if type(a) is np.ndarray:
        return a.flags.writeable
    return getattr(getattr(a, "flags", None), "writeable", True)   # device arrays


def _any_overlap(spans: list) -> bool:
    """Sort ``spans`` (lo, hi, …) in place; whether two of them overlap."""
    spans.sort()
    end = spans[0][1]
    for s in spans[1:]:
        if s[0] < end:
            return True
        end = max(end, s[1])
    return False


_BY_PROGRAM: dict[int, tuple[ir.Program, CallChecks]] = {}
