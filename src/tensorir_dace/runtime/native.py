"""Calling a cached program library through its call plan, without DaCe or SymPy.

:class:`NativeCallable` checks a call's arguments against the plan made by
:mod:`.plan` (types, dtypes, C order, writeable outputs, shapes for the size
symbols the arrays imply, size orders, overlapping buffers), builds the
library's argument vector and calls it through :class:`.library.Library`.
Any argument it does not accept as plainly valid -- a wrong shape, an
overlap that needs a copy, a device array, a size no extent or keyword gives -- is
handed to the full path (``fallback``: the program checked, lowered and
loaded through DaCe), which either runs the call or raises the precise
:class:`~tensorir_dace.ArgumentError`.  Both paths accept the same calls.
NumPy arrays that are not C-contiguous are first tried through C-contiguous
copies (:mod:`.staged`), off the path of plain calls.

Tuple-typed parameters are unpacked into their leaves (a tuple not shaped
like its type goes the full path), and neighbour tables are scanned against
the operand intervals the plan gives, through the per-buffer scan cache of
:mod:`tensorir_dace.tablescan` (a bad entry goes the full path, which names it).

Prepared argument vectors are kept per set of buffers: a key of one
expression over the keyword arguments by name, holding per array its shape,
C order, writeability, dtype and data pointer, per neighbour table the object
owning its memory (an entry stands for a table's scan only while that object
lives), and per scalar and size keyword its type and value (see
:func:`_keyer`).  Everything the checks decide and the vector holds follows
from them, so new array objects over known buffers, such as views made per
call, cost one key and one dictionary lookup.  The entries of the last two
calls are also found by their argument objects' identities (weak references
forget them when an object is freed), so calling again with the same arrays,
or alternating between two sets, costs a few identity and shape comparisons.
"""

from __future__ import annotations

import ast
import ctypes
import weakref
from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from .. import openmp
from ..pointers import ARRAY_DATA, ARRAY_DATA_WORD, data_pointer
from ..tablescan import first_bad_entry
from .gpu import gpu_available, gpu_failure, gpu_unavailable
from .library import Library
from .staged import StagedCalls

__all__ = ["PLAN_FORMAT", "NativeCallable", "evaluator"]

#: Bump when the call plan's layout changes (:mod:`.plan` writes it).
PLAN_FORMAT = 3

_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant,
            ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Call,
            ast.Tuple, ast.Compare, ast.LtE, ast.BoolOp, ast.And, ast.Pow, ast.Div)
_FUNCTIONS = {"Max": max, "Min": min, "floor": lambda x: x // 1, "ceiling": lambda x: -(-x // 1)}


def evaluator(text: str, names: list[str]) -> Callable[..., Any]:
    """A function of ``names`` computing the arithmetic expression ``text``
    (integers, ``+ - * // % **``, ``Max``, ``Min``, ``floor``, ``ceiling``)."""
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"unsupported expression {text!r}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCTIONS):
            raise ValueError(f"unsupported function in {text!r}")
    code = compile(f"lambda {', '.join(names)}: {text}", "<call plan>", "eval")
    return eval(code, {"__builtins__": {}, **_FUNCTIONS})  # checked above


_CTYPES = {"int32": ctypes.c_int32, "int64": ctypes.c_int64, "float64": ctypes.c_double,
           "float32": ctypes.c_float, "bool": ctypes.c_bool, "int8": ctypes.c_int8,
           "int16": ctypes.c_int16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64}
_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
           "int8": (-128, 127), "int16": (-(1 << 15), (1 << 15) - 1),
           "uint32": (0, (1 << 32) - 1), "uint64": (0, (1 << 64) - 1)}
_SCALAR_TYPES = {
    "float64": (float, int, np.float64, np.float32, np.int64, np.int32),
    "float32": (float, int, np.float64, np.float32, np.int64, np.int32),
    "int64": (int, np.int64, np.int32), "int32": (int, np.int64, np.int32),
    "bool": (bool, np.bool_),
}


class _Entry:
    """Prepared argument vectors for one set of argument objects.

    Entries are found by argument names and object identities, and dropped
    (weak-reference callbacks) as soon as one of their arrays is freed, so a
    found entry's arrays are the very objects it was made for.  It is used if
    ``check(values, shapes, scalar_key)`` holds: their shapes and dtypes are
    unchanged, the written ones are still writeable, and the scalars have the
    same types and values (``check`` is compiled once per keyword order, see
    :func:`_checker`).  Entries are also found by their buffers (see
    :func:`_keyer`); ``owners`` then watches the arrays owning the neighbour
    tables' memory, whose scans the entry stands for."""

    __slots__ = ("callargs", "initargs", "init_key", "pick", "shapes", "refs", "owners",
                 "check", "scalar_key", "sequential", "handle", "full", "ident")

    def __init__(self, callargs: tuple, initargs: tuple, values: tuple, order: _Order,
                 sequential: bool):
        self.callargs = callargs
        self.initargs = initargs
        self.init_key = tuple(a.value for a in initargs)
        self.pick, self.check = order.pick, order.check
        self.shapes = tuple(x for a in self.pick(values) for x in (a.shape, a.dtype))
        self.refs: tuple = ()
        self.owners: tuple = ()
        self.scalar_key = tuple(x for i in order.scalars for x in (type(values[i]), values[i]))
        self.sequential = sequential
        self.handle: Any = _UNSET       # the library state the full vector was made for
        self.full: Any = None  # (None: not ready; never called so)
        self.ident: Any = None          # for the last-call check (see _same_call)

    def watch(self, values: tuple, forget: Callable[[Any], object]) -> None:
        """Call ``forget`` when one of the arrays in ``values`` is freed."""
        self.refs = tuple(weakref.ref(a, forget) for a in self.pick(values))


class _Order:
    """What calls with one order of keyword names share: where the arrays,
    tables, scalars and all the plan's leaves are among their (unpacked)
    values, and the compiled entry check (see :func:`_checker`)."""

    __slots__ = ("pick", "scalars", "leaves", "tables", "check")

    def __init__(self, arrays: list[int], written: list[int], tables: list[int],
                 scalars: tuple[int, ...], leaves: list[int]):
        self.pick = _picker(arrays)
        self.scalars = scalars
        self.leaves = _picker(leaves)
        self.tables = _picker(tables)
        self.check = _checker(arrays, written, scalars)


_UNSET = object()


def _checker(arrays: list[int], written: list[int], scalars: tuple[int, ...]
             ) -> Callable[[tuple, tuple, tuple], bool]:
    """``check(values, shapes, scalar_key)`` for :class:`_Entry`, as one expression
    over fixed positions (half the time of a loop over them)."""
    parts = ["(" + "".join(f"v[{i}].shape, v[{i}].dtype, " for i in arrays) + ") == s"]
    parts += [f"v[{i}].flags.writeable" for i in written]
    if scalars:
        parts.append("(" + "".join(f"type(v[{i}]), v[{i}], " for i in scalars) + ") == c")
    return eval(f"lambda v, s, c: {' and '.join(parts)}", {"type": type})   # ints only


def _at(name: str, path: tuple) -> str:
    """The expression for leaf ``path`` of keyword argument ``name`` in ``k``."""
    return f"k[{name!r}]" + "".join(f"[{i}]" for i in path)


def _shaped(expr: str, nesting: list | None) -> list[str]:
    """Conditions that ``expr`` is a tuple nested as ``nesting`` (none for a leaf)."""
    if nesting is None:
        return []
    out = [f"type({expr}) is tuple and len({expr}) == {len(nesting)}"]
    for i, inner in enumerate(nesting):
        out += _shaped(f"{expr}[{i}]", inner)
    return out


def _same_call(structure: dict[str, list | None], arrays: list[tuple[str, tuple, bool]],
               scalars: list[tuple[str, tuple]]
               ) -> tuple[str, Callable[[dict], tuple]]:
    """``same`` (an expression over ``k`` and ``t``) and ``ident(kwargs)``: whether a call passes
    exactly the argument objects of an earlier call (by name, in any keyword
    order; tuple parameters shaped as their types, holding the same leaves),
    with unchanged shapes and dtypes, written arrays still writeable and
    equal scalars.  ``structure`` gives every parameter's tuple nesting
    (``None``: not a tuple), ``arrays`` and ``scalars`` the leaves (parameter,
    index path, written).  One expression each, over dictionary lookups by
    constant names and indexing by constant positions."""
    same = [f"len(k) == {len(structure)}"]
    for name, nesting in structure.items():
        same += _shaped(f"k[{name!r}]", nesting)
    ident = []
    for j, (name, path, _) in enumerate(arrays):
        x = _at(name, path)
        same.append(f"id(a{j} := {x}) == t[{3 * j}] and a{j}.shape == t[{3 * j + 1}] "
                    f"and a{j}.dtype is t[{3 * j + 2}]")
        ident.append(f"id({x}), {x}.shape, {x}.dtype, ")
    same += [f"a{j}.flags.writeable" for j, (_, _, written) in enumerate(arrays) if written]
    for j, (name, path) in enumerate(scalars):
        x, pos = _at(name, path), 3 * len(arrays) + 2 * j
        same.append(f"type(s{j} := {x}) is t[{pos}] and s{j} == t[{pos + 1}]")
        ident.append(f"type({x}), {x}, ")
    env = {"id": id, "len": len, "type": type, "tuple": tuple}
    return (" and ".join(same),
            eval(f"lambda k: ({''.join(ident)})", env))      # names from the plan only


_SAME_ENV = {"id": id, "len": len, "type": type, "tuple": tuple}


class _Hot:
    """The entry of the last call, shared by a :class:`NativeCallable` and its
    hot call function (see :meth:`NativeCallable.hot_call`) without a
    reference cycle."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: _Entry | None = None


def _hot_call(same: str, hot: _Hot, program: Any, slow: Callable[[dict], None]
              ) -> Callable[[dict], None]:
    """``call(kwargs)``: run the library at once if the call passes the argument
    objects of the last call (``same``, the expression of :func:`_same_call`
    over ``k`` and the entry's ``t``); else ``slow(kwargs)``.  One frame and
    one expression: the hottest path of a call."""
    src = f"""def call(k):
    e = H.last
    if e is not None:
        t = e.ident
        try:
            if {same}:
                if e.sequential:
                    return R(P, *e.full)
                return P(*e.full)
        except KeyError:
            pass
    return S(k)
"""
    env = dict(_SAME_ENV, H=hot, P=program, S=slow, R=openmp.run_one_threaded)
    exec(compile(src, "<call plan>", "exec"), env)        # names from the plan only
    return env["call"]


def _keyer(structure: dict[str, list | None], arrays: list[tuple[str, tuple, bool]],
           scalars: list[tuple[str, tuple]], sizes: list[str]) -> Callable[[dict], tuple]:
    """``key(kwargs)``: the buffers of a call, as one expression over dictionary
    lookups by constant names (any keyword order).  It holds the number of
    keywords, whether each tuple parameter is shaped as its type, and per array
    leaf its shape, whether it is C-ordered (which with the shape fixes the
    strides that matter) and writeable, its dtype (by identity:
    entries are made only for NumPy's built-in dtypes, which live as long as
    the process), data pointer (``None`` for anything but a NumPy array), and
    for a neighbour table the identity of the object owning its memory (kept
    alive while an entry stands for its scan, see
    :meth:`NativeCallable._keep_by_buffers`); per scalar leaf and per size
    keyword (absent: a marker) its type and value.  Every check and the argument
    vector of a plainly valid call follow from these.  ``arrays`` gives the
    array leaves (parameter, index path, table), ``scalars`` the others."""
    if ARRAY_DATA_WORD is not None:     # the data pointer read inline, by one index
        pointer, env = "W[(id({0}) >> 3) + I] if type({0}) is nd else None", {
            "W": ARRAY_DATA_WORD[0], "I": ARRAY_DATA_WORD[1]}
    elif ARRAY_DATA is not None:
        pointer, env = "R(id({0}) + O).value if type({0}) is nd else None", {
            "R": ARRAY_DATA[0], "O": ARRAY_DATA[1]}
    else:
        pointer, env = "P({0}) if type({0}) is nd else None", {"P": data_pointer}
    parts = ["len(k), "] + [f"{c}, " for name, nesting in structure.items()
                            for c in _shaped(f"k[{name!r}]", nesting)]
    for j, (name, path, table) in enumerate(arrays):
        x = f"x{j}"
        parts.append(f"({x} := {_at(name, path)}).shape, {x}.flags.num & F, id({x}.dtype), "
                     + pointer.format(x) + ", ")
        if table:
            parts.append(f"id(b if (b := {x}.base) is not None else {x}), ")
    parts += [f"type(s{j} := {_at(name, path)}), s{j}, " for j, (name, path) in enumerate(scalars)]
    if sizes:                       # read only when there are more keywords than parameters
        parts.append("(" + "".join(f"type(z{j} := k.get({name!r}, U)), z{j}, "
                                   for j, name in enumerate(sizes))
                     + f") if len(k) > {len(structure)} else None, ")
    env.update({"id": id, "len": len, "type": type, "tuple": tuple, "nd": np.ndarray,
                "U": _UNSET, "F": _C_ORDER | _WRITEABLE})
    return eval(f"lambda k: ({''.join(parts)})", env)      # names from the plan only


_C_ORDER, _WRITEABLE = 0x1, 0x400     # NPY_ARRAY_C_CONTIGUOUS, NPY_ARRAY_WRITEABLE


def _owner(a: np.ndarray) -> Any:
    """The object a table's buffer key names as owning its memory (see :func:`_keyer`)."""
    return a if a.base is None else a.base


def _picker(positions: list[int]) -> Callable[[Sequence[Any]], tuple]:
    """``values -> tuple of values[i] for i in positions``, at C speed."""
    if len(positions) > 1:
        return itemgetter(*positions)
    if positions:
        i = positions[0]
        return lambda values: (values[i],)
    return lambda values: ()


def _nesting(paths: Sequence[tuple[int, ...]]) -> list | None:
    """The nesting of a tuple type from its leaves' index paths (``None``: a leaf)."""
    if list(paths) == [()]:
        return None
    return [_nesting([p[1:] for p in paths if p[0] == i])
            for i in range(1 + max(p[0] for p in paths))]


def _unpack(value: Any, nesting: list | None, out: list) -> bool:
    """Append the leaves of ``value``, a tuple nested as ``nesting``, to ``out``."""
    if nesting is None:
        out.append(value)
        return True
    return type(value) is tuple and len(value) == len(nesting) \
        and all(_unpack(v, n, out) for v, n in zip(value, nesting))


_SIZE_TYPES = (int, np.int64, np.int32)


_SHAPE = attrgetter("shape")


def _reporting_gpu_errors(library: Library, name: str) -> Callable[..., None]:
    """The program function of a GPU library, raising the error its kernels
    recorded as :class:`~.gpu.GPUError` (a copy or a launch failed)."""
    program = library.program

    def run(*args: Any) -> None:
        program(*args)
        detail = library.gpu_error()
        if detail is not None:
            raise gpu_failure(name, detail)
    return run


class NativeCallable:
    """Calls ``library`` with keyword arguments as the plan describes (see above).

    :param plan: the call plan (:func:`.plan.call_plan`).
    :param library: the loaded library.
    :param fallback: makes the full-path callable (called at most once).
    """

    def __init__(self, plan: dict[str, Any], library: Library,
                 fallback: Callable[[], Callable[..., None]], max_cached: int = 8):
        self.plan = plan
        self.library = library
        self._make_fallback = fallback
        self._fallback: Callable[..., None] | None = None
        self.max_cached = max_cached
        self._entries: dict[tuple, _Entry] = {}       # by argument object identities
        self._buffers: dict[tuple, _Entry] = {}       # by buffers (see _keyer)
        self.params = tuple(plan["params"])
        leaves = plan["leaves"]
        self._param_keys = frozenset(lf["param"] for lf in leaves)
        self._leaf_keys = tuple((lf["param"], tuple(lf["path"])) for lf in leaves)
        # tuple-typed parameters: leaf paths in order, and the nesting to unpack
        self._paths = {p: tuple(map(tuple, paths)) for p, paths in plan["tuples"].items()}
        self._structure = {p: _nesting(paths) for p, paths in self._paths.items()}
        names = list(plan["symbols"])
        self._names = names
        arrays = [i for i, lf in enumerate(leaves) if lf["kind"] == "array"]
        # (leaf, dtype, ndim, written) per array; (leaf, accepted types) per scalar
        self._array_specs = tuple((i, np.dtype(leaves[i]["dtype"]), len(leaves[i]["shape"]),
                                   bool(leaves[i]["written"])) for i in arrays)
        self._scalar_specs = tuple((i, _SCALAR_TYPES.get(lf["dtype"], ()))
                                   for i, lf in enumerate(leaves) if lf["kind"] != "array")
        self._pick_arrays = _picker(arrays)
        self._shapes = evaluator("(" + "".join(
            "(" + "".join(f"{e}, " for e in leaves[i]["shape"]) + "), " for i in arrays) + ")",
            names)
        # (symbol, leaf, axis, solution from the extent and deps, deps)
        self._solve = tuple((sym, i, d, evaluator(e, ["x", *deps]), tuple(deps))
                            for sym, i, d, e, deps in plan["solve"])
        self._sizes: dict[str, str] = plan["sizes"]     # keyword size -> symbol
        self._scalar_symbols = tuple(plan["scalar_symbols"].items())
        cons = plan["constraints"]
        self._constraints = evaluator(" and ".join(f"({lo}) <= ({hi})" for lo, hi in cons),
                                      names) if cons else None
        self._volume = evaluator(plan["volume"], names) if plan.get("volume") else None
        # per table: (array position, bounds of the operands read through it)
        self._tables = tuple((arrays.index(i), evaluator("(" + "".join(
            f"(({lo}), ({hi})), " for lo, hi in uses) + ")", names)) for i, uses in plan["tables"])
        # per C argument: (kind, leaf index / array position / symbol, ctype, int range)
        position = {leaf: k for k, leaf in enumerate(arrays)}
        self._args = tuple((kind, position[ref] if kind == "array" else ref,
                            _CTYPES[rest[0]] if rest else None,
                            _RANGES.get(rest[0]) if rest else None)
                           for kind, ref, *rest in plan["args"])
        self._array_args = _picker([ref for _, ref, *_ in self._args]) \
            if all(kind == "array" for kind, *_ in self._args) else None
        self._orders: dict[tuple, _Order] = {}
        self._init = tuple(plan["init"])
        self._reinit = bool(plan["reinit"])
        self._gpu = bool(plan.get("gpu"))
        self._program = _reporting_gpu_errors(library, plan["program"]) if self._gpu \
            else library.program
        self._switch: Any = None     # the openmp.ThreadSwitch, got for the first small call
        # The entries of the last two calls with watched argument objects, ready
        # to run while those objects live (see _same_call): calling again with
        # the same arrays, or alternating between two sets, costs one check.
        self._hot = _Hot()              # holds the last call's entry (see _last)
        self._prev: _Entry | None = None
        array_leaves = [(leaves[i]["param"], tuple(leaves[i]["path"]), w)
                        for i, _, _, w in self._array_specs]
        scalar_leaves = [(leaves[i]["param"], tuple(leaves[i]["path"]))
                         for i, _ in self._scalar_specs]
        structure = {p: self._structure.get(p) for p in self._param_keys}
        self._same_text, self._ident = _same_call(structure, array_leaves, scalar_leaves)
        self._same = eval(f"lambda k, t: {self._same_text}", _SAME_ENV)
        self._staged = StagedCalls([(*self._leaf_keys[i], dtype, ndim, w)
                                    for i, dtype, ndim, w in self._array_specs])
        tables = {arrays[k] for k, _ in self._tables}
        self._key = _keyer(structure, [(param, path, i in tables) for (param, path, _), (i, *_)
                                       in zip(array_leaves, self._array_specs)],
                           scalar_leaves, sorted(self._sizes))

    # ------------------------------------------------------------------ calling

    @property
    def _last(self) -> _Entry | None:
        """The entry of the last call."""
        return self._hot.last

    @_last.setter
    def _last(self, entry: _Entry | None) -> None:
        self._hot.last = entry

    def hot_call(self) -> Callable[[dict[str, Any]], None]:
        """A function doing what :meth:`call` does, quicker when the call passes
        the argument objects of the last call (the checks of :func:`_same_call`
        in one expression, no method frames); for the caller to keep."""
        return _hot_call(self._same_text, self._hot, self._program, self.call)

    def __call__(self, **kwargs: Any) -> None:
        self.call(kwargs)

    def call(self, kwargs: dict[str, Any]) -> None:
        """``self(**kwargs)``, without unpacking the dictionary again."""
        entry = self._last
        try:
            same = entry is not None and self._same(kwargs, entry.ident)
            if not same and self._prev is not None:
                entry = self._prev
                same = self._same(kwargs, entry.ident)
                if same:
                    self._prev, self._last = self._last, entry
        except KeyError:            # other names than that call's
            same = False
        if not same or entry is None:
            # new objects over known buffers, ready for the library's state
            bkey: tuple | None
            try:
                bkey = self._key(kwargs)
                entry = self._buffers.get(bkey)
            except Exception:  # noqa: BLE001  # a name missing, a value not hashable, …: no key
                bkey = entry = None
            if entry is None or entry.handle is not self.library.handle:
                entry = self._entry_for(kwargs, bkey, entry)
                if entry is None:
                    return          # it ran on the full path
        if entry.sequential:
            switch = self._switch
            switch.set(1)
            try:
                self._program(*entry.full)
            finally:
                switch.set(switch.count)
        else:
            self._program(*entry.full)

    def _entry_for(self, kwargs: dict[str, Any], bkey: tuple | None,
                   entry: _Entry | None) -> _Entry | None:
        """The ready entry for a call that is not one of the last two again
        (``None``: the call ran on the full path): ``entry``, found by the
        call's buffer key ``bkey`` (see :func:`_keyer`; ``None``: no key), else
        by its argument objects, else prepared now.  An entry is ready when the
        library's state handle is the one its vector holds: every
        initialisation makes a new handle object."""
        if entry is None:
            entry = self._find(kwargs, bkey)
            if entry is None:
                return None
        if entry.handle is not self.library.handle:
            try:
                self._ready(entry)
            except BaseException:       # (no GPU, a failed init): not the last call's entry
                if self._last is entry:
                    self._last = None
                if self._prev is entry:
                    self._prev = None
                raise
        return entry

    def _find(self, kwargs: dict[str, Any], bkey: tuple | None) -> _Entry | None:
        """The entry for a call whose buffers are not known: by its argument
        objects, or prepared now (``None``: the call ran on the full path).
        Either way it watches these objects and becomes the last call's entry."""
        values = tuple(kwargs.values()) if not self._structure else self._flatten(kwargs)
        order = self._order(kwargs) if values is not None else None
        if values is None or order is None:
            self.fallback(**kwargs)   # a tuple parameter given something else, a name missing
            return None
        key = (*kwargs, *map(id, values))
        entries = self._entries
        entry = entries.get(key)
        if entry is None or not entry.check(values, entry.shapes, entry.scalar_key):
            entry = self._prepare(kwargs, values, order)
            if entry is None:
                if not self._staged.run(kwargs, self.call):    # strided arrays: copies
                    self.fallback(**kwargs)   # device arrays, anything to report, …
                return None
            if key not in entries and len(entries) >= self.max_cached:
                entries.pop(next(iter(entries)))
            owner, eid = weakref.ref(self), id(entry)

            def forget(_ref: Any) -> None:      # no reference to the entry: no cycle
                entries.pop(key, None)
                me = owner()
                if me is not None:
                    if id(me._last) == eid:
                        me._last = None
                    if id(me._prev) == eid:
                        me._prev = None
            entry.watch(values, forget)
            entries[key] = entry
            if bkey is not None:
                self._keep_by_buffers(entry, bkey, order.tables(values))
        entry.ident = self._ident(kwargs)
        if entry is not self._last:
            self._prev, self._last = self._last, entry
        return entry

    def _keep_by_buffers(self, entry: _Entry, bkey: tuple, tables: tuple) -> None:
        """Keep ``entry`` under its buffer key while the objects owning its
        tables' memory live: the key names them by identity, and a table
        allocated anew where a freed one was must be scanned anew."""
        buffers = self._buffers

        def drop(_ref: Any) -> None:
            buffers.pop(bkey, None)
        try:
            entry.owners = tuple(weakref.ref(_owner(t), drop) for t in tables)
        except TypeError:           # an owner without weak references: by identity only
            return
        if bkey not in buffers and len(buffers) >= 4 * self.max_cached:
            buffers.pop(next(iter(buffers)))
        buffers[bkey] = entry

    def _ready(self, entry: _Entry) -> None:
        """Initialise the library for the entry's sizes where needed, and lead its
        argument vector with the library's state handle.  A new state leaves
        the other entries of the last calls stale: they are forgotten."""
        lib = self.library
        if lib.handle is None or (self._reinit and lib.init_key != entry.init_key):
            if self._gpu and not gpu_available():     # (initialising would crash)
                raise gpu_unavailable(f"program '{self.plan['program']}'")
            lib.ensure_init(entry.initargs, entry.init_key)
            if self._last is not entry:
                self._last = None
            if self._prev is not entry:
                self._prev = None
        entry.handle = lib.handle
        entry.full = (lib.handle, *entry.callargs)
        if entry.sequential and self._switch is None:
            self._switch = openmp.one_thread()

    def set_fallback(self, full: Callable[..., None]) -> None:
        """Use ``full`` as the full path (made already)."""
        self._fallback = full

    def fallback(self, **kwargs: Any) -> None:
        """Run the call on the full path (DaCe-loaded, every check with its message)."""
        if self._fallback is None:
            self._fallback = self._make_fallback()
        self._fallback(**kwargs)

    # ------------------------------------------------------------------ preparing

    def _flatten(self, kwargs: dict[str, Any]) -> tuple | None:
        """The call's values, tuple-typed parameters unpacked into their leaves
        (``None``: a tuple parameter given something not shaped like its type)."""
        out: list[Any] = []
        for k, v in kwargs.items():
            nesting = self._structure.get(k)
            if nesting is None:
                out.append(v)
            elif not _unpack(v, nesting, out):
                return None
        return tuple(out)

    def _prepare(self, kwargs: dict[str, Any], flat: tuple, order: _Order) -> _Entry | None:
        """Argument vectors for a plainly valid call; ``None``: take the full path."""
        env: dict[str, int] = {}
        if kwargs.keys() != self._param_keys:
            sizes = self._keyword_sizes(kwargs)
            if sizes is None or not self._param_keys <= kwargs.keys():
                return None
            env = sizes
        values = order.leaves(flat)       # in the plan's leaf order
        for i, dtype, ndim, written in self._array_specs:
            v = values[i]
            if type(v) is not np.ndarray or v.dtype is not dtype or v.ndim != ndim:
                return None
            flags = v.flags
            if not flags.c_contiguous or (written and not flags.writeable):
                return None
        for i, types in self._scalar_specs:
            if type(values[i]) not in types:
                return None
        for sym, i in self._scalar_symbols:
            env[sym] = int(values[i])
        if not self._solve_sizes(values, env):
            return None
        syms = [env[n] for n in self._names]
        arrays = self._pick_arrays(values)
        if tuple(map(_SHAPE, arrays)) != self._shapes(*syms):
            return None
        if self._constraints is not None and not self._constraints(*syms):
            return None
        pointers = [data_pointer(a) for a in arrays]
        if self._overlap(arrays, pointers):
            return None
        for k, bounds in self._tables:     # the full path reports a bad entry
            for lo, hi in bounds(*syms):
                if first_bad_entry(arrays[k], pointers[k], lo, hi) is not None:
                    return None
        callargs: list[Any] | None
        if self._array_args is not None:      # arrays only: pointers in argument order
            callargs = list(map(ctypes.c_void_p, self._array_args(pointers)))
        else:
            callargs = self._mixed_args(values, env, pointers)
            if callargs is None:
                return None
        sequential = self._volume is not None and \
            self._volume(*syms) < openmp.SEQUENTIAL_BELOW
        return _Entry(tuple(callargs), tuple(callargs[i] for i in self._init),
                      flat, order, sequential)

    def _keyword_sizes(self, kwargs: dict[str, Any]) -> dict[str, int] | None:
        """The size symbols given by keyword, the keywords beyond the parameters
        (``None``: another keyword, or a value the full path must report)."""
        env: dict[str, int] = {}
        for k in kwargs.keys() - self._param_keys:
            sym, v = self._sizes.get(k), kwargs[k]
            if sym is None or type(v) not in _SIZE_TYPES or v < 0:
                return None
            env[sym] = int(v)
        return env

    def _solve_sizes(self, values: tuple, env: dict[str, int]) -> bool:
        """Add to ``env`` the size symbols the array extents give, each once the
        other symbols in its extent are known (``False``: one stays unknown or
        comes out negative)."""
        progress = True
        while progress and len(env) < len(self._names):
            progress = False
            for sym, i, d, fn, deps in self._solve:
                if sym not in env and values[i] is not None and all(n in env for n in deps):
                    try:
                        v = int(fn(values[i].shape[d], *[env[n] for n in deps]))
                    except (ArithmeticError, ValueError):
                        return False
                    if v < 0:
                        return False    # the full path reports it
                    env[sym] = v
                    progress = True
        return all(n in env for n in self._names)

    def shape_of(self, param: str, kwargs: dict[str, Any]) -> tuple[int, ...] | None:
        """The shape of array parameter ``param`` for the sizes the other
        arguments (arrays, int scalars, sizes by keyword) imply; None where they
        do not imply them all (a function's result is allocated so)."""
        leaves = self.plan["leaves"]
        arrays = [i for i, lf in enumerate(leaves) if lf["kind"] == "array"]
        at = [k for k, i in enumerate(arrays) if leaves[i]["param"] == param]
        values = tuple(None if lf["path"] or lf["param"] == param else kwargs.get(lf["param"])
                       for lf in leaves)
        env = self._keyword_sizes(kwargs)
        if env is None:
            return None
        for sym, i in self._scalar_symbols:
            if type(values[i]) not in _SIZE_TYPES:
                return None
            env[sym] = int(values[i])
        if len(at) != 1 or any(v is not None and type(v) is not np.ndarray
                               for v, lf in zip(values, leaves) if lf["kind"] == "array") \
                or not self._solve_sizes(values, env):
            return None
        return self._shapes(*[env[n] for n in self._names])[at[0]]

    def _order(self, kwargs: dict[str, Any]) -> _Order | None:
        """Where the arrays, the written arrays, the tables, the scalars (and
        sizes given by keyword) and all the plan's leaves are among the
        (unpacked) values of a call with these keyword names (computed once per
        name order; ``None``: a parameter missing, or a keyword that is neither
        a parameter nor a size)."""
        names = tuple(kwargs)
        hit = self._orders.get(names)
        if hit is None:
            if not self._param_keys <= set(names) or any(
                    k not in self._param_keys and k not in self._sizes for k in names):
                return None
            flat = [(k, path) for k in names for path in self._paths.get(k, ((),))]
            at = [flat.index(leaf) for leaf in self._leaf_keys]
            arrays = [at[i] for i, *_ in self._array_specs]
            scalars = tuple(at[i] for i, _ in self._scalar_specs) + tuple(
                flat.index((k, ())) for k in names if k not in self._param_keys)  # sizes
            hit = self._orders[names] = _Order(
                arrays, [at[i] for i, _, _, w in self._array_specs if w],
                [arrays[k] for k, _ in self._tables], scalars, at)
        return hit

    def _mixed_args(self, values: Sequence[Any], env: dict[str, int],
                    pointers: list[int]) -> list | None:
        callargs: list[Any] = []
        for kind, ref, ctype, bounds in self._args:
            if kind == "array":
                callargs.append(ctypes.c_void_p(pointers[ref]))
                continue
            v = values[ref] if kind == "scalar" else env[str(ref)]   # leaf index / symbol
            if bounds is not None and not bounds[0] <= int(v) <= bounds[1]:
                return None
            try:
                c: Any = ctype(v)       # type: ignore[misc]  # scalars have a ctype
            except (OverflowError, TypeError):
                return None             # the full path says why (10**400 for a float)
            if isinstance(v, (int, np.integer)) and c.value != v:
                return None             # an integer a float parameter cannot hold exactly
            callargs.append(c)
        return callargs

    def _overlap(self, arrays: tuple, pointers: list[int]) -> bool:
        """Whether a written array shares memory with another array argument."""
        spans = sorted((p, p + a.nbytes, spec[3]) for a, p, spec
                       in zip(arrays, pointers, self._array_specs) if a.nbytes)
        for before, after in zip(spans, spans[1:]):
            if after[0] < before[1]:
                return any(a[0] < b[1] and b[0] < a[1] and (a[2] or b[2])
                           for n, a in enumerate(spans) for b in spans[n + 1:])
        return False

    def clear_cache(self) -> None:
        """Forget the prepared argument vectors."""
        self._entries.clear()
        self._buffers.clear()
        self._staged.clear()
        self._last = self._prev = None

