"""Calling a cached program library through its call plan, without DaCe or SymPy.

:class:`NativeCallable` checks a call's arguments against the plan made by
:mod:`.plan` (types, dtypes, C order, writeable outputs, shapes for the size
symbols the arrays imply, size orders, overlapping buffers), builds the
library's argument vector and calls it through :class:`.library.Library`.
Any argument it does not accept as plainly valid -- a wrong shape, an
overlap that needs a copy, a device array, an explicit size symbol -- is
handed to the full path (``fallback``: the program checked, lowered and
loaded through DaCe), which either runs the call or raises the precise
:class:`~tensorir_dace.ArgumentError`.  Both paths accept the same calls.

Like :class:`.compiled.SDFGCallable`, prepared argument vectors are kept per
set of argument objects, so calling again with the same arrays costs a few
identity, shape and stride comparisons.
"""

from __future__ import annotations

import ast
import ctypes
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import openmp
from ..openmp import run_one_threaded
from ..pointers import data_pointer
from .library import Library

__all__ = ["PLAN_FORMAT", "NativeCallable", "evaluator"]

#: Bump when the call plan's layout changes (:mod:`.plan` writes it).
PLAN_FORMAT = 1

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
_KEY_TYPES = frozenset([int, float, bool, np.float64, np.float32, np.int64, np.int32, np.bool_])


class _Entry:
    __slots__ = ("callargs", "initargs", "init_key", "checks", "sequential")

    def __init__(self, callargs: tuple, initargs: tuple, checks: tuple, sequential: bool):
        self.callargs = callargs
        self.initargs = initargs
        self.init_key = tuple(a.value for a in initargs)
        self.checks = checks           # (weakref, shape, strides, dtype, written) per array
        self.sequential = sequential


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
        self._entries: dict[tuple, _Entry] = {}
        self.params = tuple(plan["params"])
        self._param_set = frozenset(self.params)
        names = list(plan["symbols"])
        self._names = names
        # (param, path, kind, dtype, ndim, written)
        self._leaves = tuple((lf["param"], tuple(lf["path"]), lf["kind"], np.dtype(lf["dtype"]),
                              len(lf.get("shape", ())), bool(lf.get("written")))
                             for lf in plan["leaves"])
        self._arrays = tuple(i for i, lf in enumerate(plan["leaves"]) if lf["kind"] == "array")
        self._shapes = evaluator("(" + "".join(
            "(" + "".join(f"{e}, " for e in plan["leaves"][i]["shape"]) + "), "
            for i in self._arrays) + ")", names)
        self._solve = tuple((sym, i, d, evaluator(e, ["x"]))
                            for sym, (i, d, e) in plan["solve"].items())
        self._scalar_symbols = tuple(plan["scalar_symbols"].items())
        cons = plan["constraints"]
        self._constraints = evaluator(" and ".join(f"({lo}) <= ({hi})" for lo, hi in cons),
                                      names) if cons else None
        self._volume = evaluator(plan["volume"], names) if plan.get("volume") else None
        self._args = tuple((kind, ref, _CTYPES[ct] if ct else None, _RANGES.get(ct))
                           for kind, ref, *rest in plan["args"] for ct in [rest[0] if rest
                                                                           else None])
        self._init = tuple(plan["init"])
        self._reinit = bool(plan["reinit"])

    # ------------------------------------------------------------------ calling

    def __call__(self, **kwargs: Any) -> None:
        parts: list[Any] = []
        arrays: list[Any] = []
        for k, v in kwargs.items():
            t = type(v)
            if t is np.ndarray:
                parts.append(k)
                parts.append(id(v))
                arrays.append(v)
            elif t in _KEY_TYPES:
                parts.append(k)
                parts.append(t)
                parts.append(v)
            else:
                self.fallback(**kwargs)      # tuples, device arrays, …
                return
        key = tuple(parts)
        entry = self._entries.get(key)
        if entry is not None:
            for a, (ref, shape, strides, dtype, written) in zip(arrays, entry.checks):
                if ref() is not a or a.shape != shape or a.strides != strides \
                        or a.dtype is not dtype or (written and not a.flags.writeable):
                    break
            else:
                self._run(entry)
                return
            del self._entries[key]
        entry = self._prepare(kwargs)
        if entry is None:
            self.fallback(**kwargs)
            return
        self._run(entry)
        if len(self._entries) >= self.max_cached:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = entry

    def _run(self, entry: _Entry) -> None:
        lib = self.library
        if lib.handle is None or (self._reinit and lib.init_key != entry.init_key):
            lib.ensure_init(entry.initargs, entry.init_key)
        if entry.sequential:
            run_one_threaded(lib.call, entry.callargs)
        else:
            lib.call(entry.callargs)

    def set_fallback(self, full: Callable[..., None]) -> None:
        """Use ``full`` as the full path (made already)."""
        self._fallback = full

    def fallback(self, **kwargs: Any) -> None:
        """Run the call on the full path (DaCe-loaded, every check with its message)."""
        if self._fallback is None:
            self._fallback = self._make_fallback()
        self._fallback(**kwargs)

    # ------------------------------------------------------------------ preparing

    def _prepare(self, kwargs: dict[str, Any]) -> _Entry | None:
        """Argument vectors for a plainly valid call; ``None``: take the full path."""
        if len(kwargs) != len(self._param_set) or not self._param_set.issuperset(kwargs):
            return None
        values: list[Any] = []
        for param, path, kind, dtype, ndim, written in self._leaves:
            v = kwargs[param]
            for i in path:
                if type(v) is not tuple or i >= len(v):
                    return None
                v = v[i]
            if kind == "array":
                if type(v) is not np.ndarray or v.dtype != dtype or v.ndim != ndim \
                        or not v.flags.c_contiguous or (written and not v.flags.writeable):
                    return None
            elif type(v) not in _SCALAR_TYPES.get(dtype.name, ()):
                return None
            values.append(v)
        env: dict[str, int] = {}
        for sym, i, d, fn in self._solve:
            env[sym] = int(fn(values[i].shape[d]))
        for sym, i in self._scalar_symbols:
            env[sym] = int(values[i])
        syms = [env[n] for n in self._names]
        for i, shape in zip(self._arrays, self._shapes(*syms)):
            if values[i].shape != shape:
                return None
        if self._constraints is not None and not self._constraints(*syms):
            return None
        if self._overlap(values):
            return None
        callargs: list[Any] = []
        for kind, ref, ctype, bounds in self._args:
            if kind == "array":
                callargs.append(ctypes.c_void_p(data_pointer(values[ref])))
                continue
            v = values[ref] if kind == "scalar" else env[ref]
            if bounds is not None and not bounds[0] <= int(v) <= bounds[1]:
                return None
            callargs.append(ctype(v))
        checks = tuple((weakref.ref(v), v.shape, v.strides, v.dtype, self._leaves[i][5])
                       for i, v in enumerate(values) if self._leaves[i][2] == "array")
        sequential = self._volume is not None and \
            self._volume(*syms) < openmp.SEQUENTIAL_BELOW
        return _Entry(tuple(callargs), tuple(callargs[i] for i in self._init), checks,
                      sequential)

    def _overlap(self, values: list[Any]) -> bool:
        """Whether a written array shares memory with another array argument."""
        spans = []
        for i in self._arrays:
            v = values[i]
            if v.nbytes:
                start = data_pointer(v)
                spans.append((start, start + v.nbytes, self._leaves[i][5]))
        spans.sort()
        for before, after in zip(spans, spans[1:]):
            if after[0] < before[1]:
                return any(a[0] < b[1] and b[0] < a[1] and (a[2] or b[2])
                           for n, a in enumerate(spans) for b in spans[n + 1:])
        return False

    def clear_cache(self) -> None:
        """Forget the prepared argument vectors."""
        self._entries.clear()

