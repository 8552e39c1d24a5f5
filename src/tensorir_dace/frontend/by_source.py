"""Decorated programs found in the compile cache by their Python source.

A call of a ``@program`` in a new process would translate the function to
Tensor IR (SymPy) before the compile cache is looked up by the printed IR.
Here the call is looked up first by a key made without translating
(:func:`call_key`), from

* the compile cache's environment fingerprint (the package's files, DaCe,
  compilers, CPU: :func:`~tensorir_dace.runtime.source_cache.environment_fingerprint`)
  and the compile options;
* the program's source, defaults, annotations and closure;
* every global name its code mentions, with a fingerprint of the value:
  numbers and strings by value, dimensions by name, annotations field by
  field, a NamedTuple (a scan's init) by its class's name, declared field
  types and values, ``@function``\\ s, scan operators and plain functions by their source
  and, recursively, their own globals; a module by its name and the
  attributes the code may read from it (library modules by name only);
* the arguments: each array's dtype and rank, each scalar's type; for a
  program with rank-generic parameters also the shapes, the scalar values and
  the default dimensions;
* for a ``@function`` called directly with ``out=`` (an array or a tuple of
  them) and ``domain=``: ``out``'s dtypes and ranks and the domain's
  dimensions (:func:`describe_into`); the bounds are arguments of the
  compiled program, as in a process that translates.

This over-approximates what translation reads: a change anywhere in it (a
global constant, a called function's source, an argument dtype) is a miss,
never a stale binary.  A value it cannot describe (an object of a user's
class) gives no key: the call is translated as before.  Declared
connectivities are described by name, dimensions and element type; their
tables (by keyword or ``offset_provider=``) are arguments like any other.

``<cache>/decorated/<key>.json`` holds the printed IR of the translated
program (for ``out=``, also the result parameter's name and the names of the
bound parameters); a hit compiles that text, which :mod:`tensorir_dace.runtime.source_cache`
finds by its text, without parsing, SymPy or DaCe.
"""

from __future__ import annotations

import builtins
import hashlib
import inspect
import json
import linecache
import os
import pathlib
import re
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ir
from .annotations import (
    GenericSpec,
    TensorArg,
    TensorSpec,
    annotation_spec,
    generic_spec,
    tuple_parts,
)
from .callables import InlinedFunction, ProgramDefinition, ScanOperator
from .connectivities import Connectivity, LocalOffset
from .dims import Dimension, DimSpec, Mask, NeighborDimension, NeighborSlot, Offset
from .size_exprs import SizeExpr
from .specialize import get_default_dims

__all__ = ["annotated_calls", "call_key", "describe", "describe_into", "function_fingerprint",
           "ir_arguments", "is_rank_generic", "load_entry", "load_text", "store_text"]

#: Bump when the key recipe changes.
_FORMAT = 3
_LIBRARIES = ("tensorir_dace", "numpy", "math", "builtins")
_COMPILE_OPTIONS = ("optimize", "device", "cache_dir")


class _Unknown(Exception):
    """A value the key cannot describe."""


def _library(module: Any) -> bool:
    return isinstance(module, str) and module.split(".")[0] in _LIBRARIES


def _code_names(code: types.CodeType) -> set[str]:
    """Global and attribute names of ``code`` and the code nested in it."""
    return {n for c in _codes(code) for n in c.co_names}


def _source(fn: Any, code: types.CodeType) -> str:
    """The lines of ``fn``'s definition, decorators included, as the translator
    reads them (current on disk; cheaper than ``inspect.getsource``)."""
    if sys.version_info < (3, 11):      # no end lines in code objects
        try:
            return inspect.getsource(fn)
        except (OSError, TypeError):
            raise _Unknown from None
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    last = max((end for c in _codes(code) for _, end, _, _ in c.co_positions()
                if end is not None), default=0)
    if not lines or last < code.co_firstlineno or last > len(lines):
        raise _Unknown
    return "".join(lines[code.co_firstlineno - 1:last])


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the code objects nested in it."""
    out = [code]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _codes(c)
    return out


class _Fingerprint:
    """Plain-data descriptions of values, following functions into their globals."""

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}
        self._keep: list[Any] = []        # objects seen, alive while ids are compared

    def _first(self, obj: Any) -> int | None:
        """None the first time ``obj`` is met; its number after that (cycles)."""
        if id(obj) in self._seen:
            return self._seen[id(obj)]
        self._seen[id(obj)] = len(self._seen)
        self._keep.append(obj)
        return None

    def function(self, fn: Callable) -> Any:
        seen = self._first(fn)
        if seen is not None:
            return ["ref", seen]
        code = fn.__code__
        source = _source(fn, code)
        names = _code_names(code)
        anns = getattr(fn, "__annotations__", None) or {}
        for a in anns.values():       # string annotations name globals the code may not
            if isinstance(a, str):
                names |= set(re.findall(r"[A-Za-z_]\w*", a))
        glb = fn.__globals__
        deps = []
        for n in sorted(names):
            if n in glb:
                deps.append([n, self.value(glb[n], names)])
            else:
                deps.append([n, "builtin" if hasattr(builtins, n) else None])
        cells = []
        for n, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                cells.append([n, self.value(cell.cell_contents, names)])
            except ValueError:        # not assigned yet
                cells.append([n, None])
        return ["function", fn.__module__, fn.__qualname__, source, deps, cells,
                self.value(getattr(fn, "__defaults__", None), names),
                self.value(sorted((getattr(fn, "__kwdefaults__", None) or {}).items()), names),
                self.value(sorted(anns.items()), names)]

    def value(self, v: Any, names: set[str]) -> Any:
        """``names``: the attribute names the code reading ``v`` mentions."""
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            return [type(v).__name__, repr(v)]
        if isinstance(v, np.generic):
            return ["np", v.dtype.str, repr(v.item())]
        if isinstance(v, np.dtype):
            return ["dtype", v.str]
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            # a NamedTuple (a scan's init): its class declares the state's types
            cls: Any = type(v)
            declared = tuple_parts(cls)     # string annotations evaluated in its module
            if declared is None:
                raise _Unknown
            return ["namedtuple", cls.__module__, cls.__qualname__,
                    [[f, self.value(a, names)] for f, a in zip(cls._fields, declared)],
                    [self.value(x, names) for x in v]]
        if isinstance(v, (tuple, list)):
            return [type(v).__name__, [self.value(x, names) for x in v]]
        if isinstance(v, Dimension):    # a staggered one shifts by halves differently
            return ["dim", v.name] + (["staggered"] if getattr(v, "staggered", False) else [])
        if isinstance(v, NeighborDimension):
            return list(v.token())
        if isinstance(v, Connectivity):
            return ["connectivity", v.name, v.target.name, self.value(v.neighbors, names),
                    str(v.dtype)]
        if isinstance(v, LocalOffset) and v.resolved is not None:
            return ["local offset", self.value(v.resolved, names)]
        if isinstance(v, SizeExpr):
            return ["size", v.text]
        if isinstance(v, DimSpec):
            return ["DimSpec", v.key()]
        if isinstance(v, (Offset, NeighborSlot, Mask)):
            return [type(v).__name__, repr(v)]
        if isinstance(v, TensorSpec):
            return ["tensor", self.value(v.dtype, names),
                    [self.value(d, names) for d in v.dims], v.sparse]
        if isinstance(v, GenericSpec):
            return ["generic", self.value(v.dtype, names), v.tensor_only]
        if isinstance(v, (ir.ScalarType, ir.TupleType)):
            return ["element", str(v)]
        if isinstance(v, ScanOperator):
            return ["scan", self.function(v.fn), v.axis.name, v.forward,
                    self.value(v.init, names)]
        if isinstance(v, (InlinedFunction, ProgramDefinition)):
            return [type(v).__name__, self.function(v.fn)]
        if inspect.ismodule(v):
            return self._module(v, names)
        if inspect.isfunction(v) and not _library(v.__module__):
            return self.function(v)
        module = getattr(v, "__module__", None) or type(v).__module__
        if (isinstance(v, type) or callable(v)) and _library(module):
            return ["library", module, getattr(v, "__qualname__", None) or repr(v)]
        raise _Unknown

    def _module(self, m: types.ModuleType, names: set[str]) -> Any:
        if _library(m.__name__):
            return ["module", m.__name__]
        seen = self._first(m)
        if seen is not None:
            return ["ref", seen]
        return ["module", m.__name__,
                [[n, self.value(getattr(m, n), names)] for n in sorted(names) if hasattr(m, n)]]


def is_rank_generic(fn: Callable) -> bool:
    """Whether a parameter of ``fn`` is specialised from its argument (or its
    annotation is a string, not evaluated here)."""
    anns = getattr(fn, "__annotations__", None) or {}
    code = fn.__code__
    for name in code.co_varnames[:code.co_argcount]:
        ann = anns.get(name)
        if ann is None or isinstance(ann, str) or generic_spec(ann) is not None \
                or annotation_spec(ann) is None:
            return True
    return False


def _dim_token(d: Any) -> tuple:
    """A dimension named by ``with_dims``, as the key sees it (see :meth:`_Fingerprint.value`)."""
    if isinstance(d, Dimension):
        return ("dim", d.name)
    if isinstance(d, NeighborDimension):
        return d.token()
    raise _Unknown


def describe(values: dict[str, Any], generic: bool, defaulted: tuple[str, ...] = ()
             ) -> tuple | None:
    """The arguments as the key sees them: each array's dtype and rank, each
    scalar's type (its value is not part of a specialisation: numbers are
    parameters); an array wrapped by ``with_dims``/``with_interval`` also by
    the dimensions and intervals it names; the parameters left to their
    defaults (``defaulted``: translation writes their values, which the key
    holds with the function).  For a rank-generic program, or a call with a
    wrapped array (the intervals are read relative to the other arrays'
    sizes), also every array's shape and the default dimensions.  None for
    any other argument."""
    wrapped = any(type(v) is TensorArg for v in values.values())
    shapes = generic or wrapped
    out: list[Any] = []
    for name in sorted(values):
        v = values[name]
        if type(v) is TensorArg:
            a = v.value
            if type(a) is not np.ndarray:
                return None
            try:
                dims = None if v.dims is None else tuple(_dim_token(d) for d in v.dims)
            except _Unknown:
                return None
            out.append((name, "wrapped", a.dtype.str, a.ndim, a.shape, dims,
                        tuple(sorted(v.intervals.items()))))
        elif type(v) is np.ndarray:
            out.append((name, "array", v.dtype.str, v.ndim) + ((v.shape,) if shapes else ()))
        elif isinstance(v, np.generic):
            out.append((name, "np", v.dtype.str))
        elif isinstance(v, (bool, int, float)):
            out.append((name, type(v).__name__))
        else:
            return None
    out += [(name, "default") for name in sorted(defaulted)]
    if shapes:
        out.append(tuple(d.name for d in get_default_dims() or ()))
    return tuple(out)


def describe_into(out: Any, domain: Any, generic: bool) -> tuple | None:
    """``out=`` and ``domain=`` of a direct call as the key sees them: each
    array of ``out`` (one, or a tuple) by dtype and rank (and shape for a
    rank-generic function) and the domain's dimensions, sorted; their bounds
    are arguments of the compiled program.  None for anything else (the
    translated path reports a mistake)."""
    leaves = out if type(out) is tuple else (out,)
    if not leaves or any(type(a) is not np.ndarray for a in leaves):
        return None
    arrays = tuple((a.dtype.str, a.ndim) + ((a.shape,) if generic else ()) for a in leaves)
    domain = {} if domain is None else domain
    if type(domain) is not dict or not all(
            isinstance(k, Dimension) and type(v) in (tuple, list) and len(v) == 2
            for k, v in domain.items()):
        return None
    return ("into", type(out) is tuple, arrays, tuple(sorted(k.name for k in domain)))


_PYTHON_SCALARS = {"float64": "float", "float32": "float", "int64": "int", "int32": "int",
                   "bool": "bool"}


def annotated_calls(types: dict[str, ir.TensorType], limit: int = 16) -> list[tuple]:
    """The argument descriptions (:func:`describe`) of the likely calls of a
    program whose parameters have these annotated types: arrays of the
    annotated dtype and rank; each scalar a Python number or a NumPy scalar of
    its type (every combination, up to ``limit``; beyond it all Python or all
    NumPy).  Empty where a parameter takes something else (a tuple)."""
    choices: list[list[tuple]] = []
    for name in sorted(types):
        t = types[name]
        if isinstance(t.dtype, ir.TupleType):
            return []
        dtype = np.dtype(t.dtype.name)
        if t.dims:
            choices.append([(name, "array", dtype.str, len(t.dims))])
        else:
            python = _PYTHON_SCALARS.get(t.dtype.name)
            choices.append([(name, "np", dtype.str)] + ([(name, python)] if python else []))
    combos: list[tuple] = [()]
    width = 1
    for c in choices:
        width *= len(c)
    if width > limit:
        return [tuple(c[0] for c in choices), tuple(c[-1] for c in choices)]
    for c in choices:
        combos = [(*done, x) for done in combos for x in c]
    return combos


def function_fingerprint(fn: Callable) -> Any:
    """The part of a key that describes ``fn`` (its source, defaults,
    annotations, closure and globals, as now), or None where some value
    cannot be described."""
    try:
        fp = _Fingerprint().function(fn)
        json.dumps(fp)
    except (_Unknown, RecursionError):
        return None
    except Exception:  # noqa: BLE001 - a user's value that fails to describe itself: no key
        return None
    return fp


def call_key(fn: Callable, described: tuple, options: dict[str, Any],
             fingerprint: Any = None) -> str | None:
    """The key of calling program ``fn`` with arguments ``described`` compiled
    with ``options``, or None where some value cannot be described.
    ``fingerprint``: ``fn``'s (:func:`function_fingerprint`) as it was when
    the program was translated; by default, as it is now."""
    from ..runtime.source_cache import environment_fingerprint
    if any(k not in _COMPILE_OPTIONS for k in options):
        return None
    fp = function_fingerprint(fn) if fingerprint is None else fingerprint
    if fp is None:
        return None
    try:
        blob = json.dumps([_FORMAT, environment_fingerprint(),
                           sorted((k, str(v)) for k, v in options.items()), fp, described])
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(blob.encode()).hexdigest()


def _path(key: str, cache_dir: Any) -> pathlib.Path:
    from ..runtime.cachedir import get_cache_dir
    root = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else get_cache_dir()
    return root / "decorated" / f"{key}.json"


def load_entry(key: str, cache_dir: Any = None) -> dict[str, Any] | None:
    """The entry stored under ``key`` (``"ir"``: the printed IR; for a direct
    call with ``out=``, also ``"result"`` and ``"bounds"``; ``"names"`` where
    parameters are named otherwise in the IR; ``"extents"`` where the program
    has source-extent parameters, see :func:`tensorir_dace.source_extents.extents_of`), or
    None."""
    try:
        data = json.loads(_path(key, cache_dir).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or data.get("format") != _FORMAT \
            or not isinstance(data.get("ir"), str):
        return None
    return data


def ir_arguments(values: dict[str, Any], params: Sequence[str], entry: dict[str, Any]
                 ) -> dict[str, Any]:
    """The arguments ``values`` (by Python name) of the program ``params`` names,
    by IR name: an entry's ``"names"`` gives the parameters named otherwise in
    the IR ({Python name: IR name}, see :mod:`.names`)."""
    renamed = entry.get("names")
    python = {v: k for k, v in renamed.items()} if isinstance(renamed, dict) else {}
    given = {k: values[python.get(k, k)] for k in params if python.get(k, k) in values}
    extents = entry.get("extents")
    if isinstance(extents, dict):     # the tables' source extents (see ..source_extents)
        from ..source_extents import extent_values
        given = extent_values(extents, given)
    return given


def load_text(key: str, cache_dir: Any = None) -> str | None:
    """The printed IR stored under ``key``, or None."""
    entry = load_entry(key, cache_dir)
    return None if entry is None else entry["ir"]


def store_text(key: str, text: str, cache_dir: Any = None, **extra: Any) -> None:
    """Store the printed IR of a translated call under ``key`` (atomically),
    with ``extra`` JSON data that calling it needs."""
    path = _path(key, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    staging.write_text(json.dumps({**extra, "format": _FORMAT, "key": key, "ir": text}))
    os.replace(staging, path)
