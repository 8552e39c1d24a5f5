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

Tuple-typed parameters are unpacked into their leaves (a tuple not shaped
like its type goes the full path), and neighbour tables are scanned against
the operand intervals the plan gives, through the per-buffer scan cache of
:mod:`tensorir_dace.tablescan` (a bad entry goes the full path, which names it).

Prepared argument vectors are kept per set of argument objects, so calling
again with the same arrays costs a few identity and shape comparisons, and
per set of buffers (address, shape, strides and dtype of each array, value of
each scalar: everything the checks decide and the vector holds follows from
them), so new array objects over known buffers, such as views made per call,
cost one such key and a writeability check.
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
from ..pointers import ARRAY_DATA, data_pointer
from ..tablescan import first_bad_entry
from .library import Library

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
    :func:`_checker`)."""

    __slots__ = ("callargs", "initargs", "init_key", "pick", "shapes", "pick_written", "refs",
                 "check", "scalar_key", "sequential", "handle", "full", "ident")

    def __init__(self, callargs: tuple, initargs: tuple, values: tuple,
                 positions: tuple[Callable, Callable, tuple[int, ...], Callable, Callable],
                 sequential: bool):
        self.callargs = callargs
        self.initargs = initargs
        self.init_key = tuple(a.value for a in initargs)
        self.pick, self.pick_written, scalars, _, self.check = positions
        self.shapes = tuple(x for a in self.pick(values) for x in (a.shape, a.dtype))
        self.refs: tuple = ()
        self.scalar_key = tuple(x for i in scalars for x in (type(values[i]), values[i]))
        self.sequential = sequential
        self.handle: Any = _UNSET       # the library state the full vector was made for
        self.full: tuple = ()
        self.ident: Any = None          # for the last-call check (see _same_call)

    def watch(self, values: tuple, forget: Callable[[Any], object]) -> None:
        """Call ``forget`` when one of the arrays in ``values`` is freed."""
        self.refs = tuple(weakref.ref(a, forget) for a in self.pick(values))


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


def _same_call(structure: dict[str, list | None], arrays: list[tuple[str, tuple, bool]],
               scalars: list[tuple[str, tuple]]
               ) -> tuple[Callable[[dict, tuple], bool], Callable[[dict], tuple]]:
    """``same(kwargs, ident)`` and ``ident(kwargs)``: whether a call passes
    exactly the argument objects of the last call (by name, in any keyword
    order; tuple parameters shaped as their types, holding the same leaves),
    with unchanged shapes and dtypes, written arrays still writeable and
    equal scalars.  ``structure`` gives every parameter's tuple nesting
    (``None``: not a tuple), ``arrays`` and ``scalars`` the leaves (parameter,
    index path, written).  One expression each, over dictionary lookups by
    constant names and indexing by constant positions."""
    def at(name: str, path: tuple) -> str:
        return f"k[{name!r}]" + "".join(f"[{i}]" for i in path)

    def shaped(expr: str, nesting: list | None) -> list[str]:
        if nesting is None:
            return []
        out = [f"type({expr}) is tuple and len({expr}) == {len(nesting)}"]
        for i, inner in enumerate(nesting):
            out += shaped(f"{expr}[{i}]", inner)
        return out

    same = [f"len(k) == {len(structure)}"]
    for name, nesting in structure.items():
        same += shaped(f"k[{name!r}]", nesting)
    ident = []
    for j, (name, path, _) in enumerate(arrays):
        x = at(name, path)
        same.append(f"id(a{j} := {x}) == t[{3 * j}] and a{j}.shape == t[{3 * j + 1}] "
                    f"and a{j}.dtype is t[{3 * j + 2}]")
        ident.append(f"id({x}), {x}.shape, {x}.dtype, ")
    same += [f"a{j}.flags.writeable" for j, (_, _, written) in enumerate(arrays) if written]
    for j, (name, path) in enumerate(scalars):
        x, pos = at(name, path), 3 * len(arrays) + 2 * j
        same.append(f"type(s{j} := {x}) is t[{pos}] and s{j} == t[{pos + 1}]")
        ident.append(f"type({x}), {x}, ")
    env = {"id": id, "len": len, "type": type, "tuple": tuple}
    return (eval(f"lambda k, t: {' and '.join(same)}", env),    # names from the plan only
            eval(f"lambda k: ({''.join(ident)})", env))


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


def _buffer_key_portable(kwargs: dict[str, Any], values: tuple) -> tuple:
    """The names, and per value its buffer (data pointer, shape, strides and
    dtype of an array; type and value of anything else)."""
    return (*kwargs, *[(data_pointer(v), v.shape, v.strides, v.dtype)
                       if type(v) is np.ndarray else (type(v), v) for v in values])


def _buffer_key_inline(kwargs: dict[str, Any], values: tuple) -> tuple:
    """The same, with the data pointer read inline (a third faster)."""
    read, offset = ARRAY_DATA   # type: ignore[misc]  # used only when not None
    return (*kwargs, *[((read(id(v) + offset).value or 0), v.shape, v.strides, v.dtype)
                       if type(v) is np.ndarray else (type(v), v) for v in values])


_buffer_key = _buffer_key_inline if ARRAY_DATA is not None else _buffer_key_portable


_SHAPE = attrgetter("shape")
_WRITEABLE = attrgetter("flags.writeable")


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
        self._buffers: dict[tuple, _Entry] = {}       # by buffers (see _by_buffers)
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
        self._orders: dict[tuple, tuple[Callable, Callable, tuple[int, ...], Callable,
                                        Callable]] = {}
        self._init = tuple(plan["init"])
        self._reinit = bool(plan["reinit"])
        self._program = library.program
        self._switch: Any = None     # the openmp.ThreadSwitch, got for the first small call
        # The last call's entry, ready to run, while its argument objects live
        # (see _same_call).
        self._last: _Entry | None = None
        self._same, self._ident = _same_call(
            {p: self._structure.get(p) for p in self._param_keys},
            [(leaves[i]["param"], tuple(leaves[i]["path"]), w) for i, _, _, w in self._array_specs],
            [(leaves[i]["param"], tuple(leaves[i]["path"])) for i, _ in self._scalar_specs])

    # ------------------------------------------------------------------ calling

    def __call__(self, **kwargs: Any) -> None:
        self.call(kwargs)

    def call(self, kwargs: dict[str, Any]) -> None:
        """``self(**kwargs)``, without unpacking the dictionary again."""
        entry = self._last
        try:
            same = entry is not None and self._same(kwargs, entry.ident)
        except KeyError:            # other names than the last call's
            same = False
        if not same or entry is None:
            entry = self._entry_for(kwargs)
            if entry is None:
                return              # it ran on the full path
        if entry.sequential:
            switch = self._switch
            switch.set(1)
            try:
                self._program(*entry.full)
            finally:
                switch.set(switch.count)
        else:
            self._program(*entry.full)

    def _entry_for(self, kwargs: dict[str, Any]) -> _Entry | None:
        """The ready entry for a call that is not the last call again (``None``:
        the call ran on the full path)."""
        values = tuple(kwargs.values()) if not self._structure else self._flatten(kwargs)
        if values is None:
            self.fallback(**kwargs)   # a tuple parameter given something else
            return None
        entry = None
        if self._entries:           # (none left when every call makes new views)
            key = (*kwargs, *map(id, values))
            entry = self._entries.get(key)
            if entry is not None and not entry.check(values, entry.shapes, entry.scalar_key):
                entry = None
        # An entry kept under this call's identities watches these very arrays
        # (freeing one forgets it), so the next call may find it by them.
        watched = entry is not None
        if entry is None:
            entry, watched = self._find(kwargs, values)
            if entry is None:
                return None
        lib = self.library
        if entry.handle is not lib.handle or (self._reinit and lib.init_key != entry.init_key):
            self._ready(entry)
        self._last = None
        if watched:
            entry.ident = self._ident(kwargs)
            self._last = entry
        return entry

    def _find(self, kwargs: dict[str, Any], values: tuple) -> tuple[_Entry | None, bool]:
        """The entry for a call whose argument objects are new: by their buffers,
        or prepared now (``None``: the call ran on the full path), and whether
        it watches these objects (it does when prepared now)."""
        bkey: tuple | None
        try:
            bkey = _buffer_key(kwargs, values)
            entry = self._buffers.get(bkey)
        except TypeError:           # unhashable: not a plain call
            bkey = entry = None
        if entry is not None and all(map(_WRITEABLE, entry.pick_written(values))):
            return entry, False     # new objects, known buffers (e.g. views made per call)
        entry = self._prepare(kwargs, values)
        if entry is None:
            self.fallback(**kwargs)   # tuples, device arrays, anything to report, …
            return None, False
        key = (*kwargs, *map(id, values))
        entries, buffers = self._entries, self._buffers
        if key not in entries and len(entries) >= self.max_cached:
            entries.pop(next(iter(entries)))
        owner, eid = weakref.ref(self), id(entry)

        def forget(_ref: Any) -> None:      # no reference to the entry: no cycle
            entries.pop(key, None)
            me = owner()
            if me is not None and id(me._last) == eid:
                me._last = None
        entry.watch(values, forget)
        entries[key] = entry
        if bkey is not None:
            if bkey not in buffers and len(buffers) >= 4 * self.max_cached:
                buffers.pop(next(iter(buffers)))
            buffers[bkey] = entry
        return entry, True

    def _ready(self, entry: _Entry) -> None:
        """Initialise the library for the entry's sizes where needed, and lead its
        argument vector with the library's state handle."""
        lib = self.library
        if lib.handle is None or (self._reinit and lib.init_key != entry.init_key):
            lib.ensure_init(entry.initargs, entry.init_key)
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

    def _prepare(self, kwargs: dict[str, Any], flat: tuple) -> _Entry | None:
        """Argument vectors for a plainly valid call; ``None``: take the full path."""
        env: dict[str, int] = {}
        if kwargs.keys() != self._param_keys:
            sizes = self._keyword_sizes(kwargs)
            if sizes is None or not self._param_keys <= kwargs.keys():
                return None
            env = sizes
        positions = self._positions(kwargs)
        values = positions[3](flat)       # in the plan's leaf order
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
                      flat, positions, sequential)

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

    def _positions(self, kwargs: dict[str, Any]
                   ) -> tuple[Callable, Callable, tuple[int, ...], Callable, Callable]:
        """Where the arrays, the written arrays, the scalars (and sizes given by
        keyword) and all the plan's leaves are among the (unpacked) values of a
        call with these keyword names (computed once per name order)."""
        order = tuple(kwargs)
        hit = self._orders.get(order)
        if hit is None:
            flat = [(k, path) for k in order for path in self._paths.get(k, ((),))]
            at = [flat.index(leaf) for leaf in self._leaf_keys]
            arrays = [at[i] for i, *_ in self._array_specs]
            written = [at[i] for i, _, _, w in self._array_specs if w]
            scalars = tuple(at[i] for i, _ in self._scalar_specs) + tuple(
                flat.index((k, ())) for k in order if k not in self._param_keys)  # sizes
            hit = self._orders[order] = (_picker(arrays), _picker(written), scalars,
                                         _picker(at), _checker(arrays, written, scalars))
        return hit

    def _mixed_args(self, values: list, env: dict[str, int], pointers: list[int]) -> list | None:
        callargs: list[Any] = []
        for kind, ref, ctype, bounds in self._args:
            if kind == "array":
                callargs.append(ctypes.c_void_p(pointers[ref]))
                continue
            v = values[ref] if kind == "scalar" else env[str(ref)]   # leaf index / symbol
            if bounds is not None and not bounds[0] <= int(v) <= bounds[1]:
                return None
            callargs.append(ctype(v))   # type: ignore[misc]  # scalars have a ctype
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
        self._last = None

