"""Calling compiled SDFGs with Tensor IR arguments, safely and fast.

:class:`SDFGCallable` wraps a DaCe ``CompiledSDFG`` and a
:class:`CallSignature` (which SDFG container each program parameter leaf
feeds, and which SDFG symbol each size symbol is).  A call:

1. checks the arguments with :mod:`tensorir_dace.arguments` (dtype, rank,
   shape, size symbols) -- DaCe itself would silently compute
   garbage for a wrong dtype, a Fortran-ordered array or a too-small array;
2. builds the argument vectors that DaCe's ``construct_arguments`` would
   build (pointers and ctypes scalars in the C signature's order; for plain
   arrays/scalars/symbols this is done here, ~5x faster than DaCe's, else
   DaCe's own is used), after checking each array's shape and strides against
   the SDFG's descriptors, and calls ``fast_call``;
3. runs the call-time checks of :mod:`tensorir_dace.callchecks` (read-only
   or overlapping outputs, neighbour-table entries) and copies an input that
   shares memory with an output;
4. remembers those vectors, keyed by the identities of the arrays (for GPU
   arrays: their pointers and layouts) and the values of the scalars, so
   that calling again with the same arrays skips steps 1-3 (a few
   microseconds per call: identities, shapes and strides are compared,
   written arrays must still be writeable, and the copies of overlapping
   inputs are refreshed).

C-contiguous views (``big[2:7]``) are passed by pointer: DaCe refuses every
NumPy view by default, but a C-contiguous one is laid out exactly like the
array the program expects, so it is correct as input and as output.  Other
layouts (Fortran order, ``x[::2]``, ``x.T``) are staged by the call checks
(:meth:`~tensorir_dace.callchecks.CallChecks.check_staged`): the program
runs on C-contiguous copies, refreshed from a read array on every call
(like the copy of an overlapping input) and copied back into a written
one after it; calls with a staged written array are not remembered.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import dace
import numpy as np
import sympy
from dace import data as dt
from dace import dtypes
from dace.codegen.compiled_sdfg import CompiledSDFG

from .. import ir, openmp
from ..arguments import (
    ArgumentBinder,
    BoundArguments,
    check_size_constraints,
    numpy_dtype,
    runtime_values,
)
from ..callchecks import CallChecks, data_pointer
from ..device_arrays import interface_key
from ..errors import ArgumentError
from ..openmp import run_one_threaded
from ..signature import ArgBinding, CallSignature
from ..transforms.openmp_maps import known_symbols, map_points, parallel_maps_with_states
from .gpu import GPUError, GPUUnavailableError, gpu_available, gpu_failure, gpu_unavailable

__all__ = [
    "ArgBinding",
    "CallSignature",
    "GPUError",
    "GPUUnavailableError",
    "SDFGCallable",
    "gpu_available",
]


# --------------------------------------------------------------------------- interface


def _reporting_gpu_errors(fast_call: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fast_call`` of a GPU program, its CUDA errors raised as :class:`GPUError`."""
    def call(*args: Any) -> Any:
        try:
            return fast_call(*args)
        except RuntimeError as ex:
            raise gpu_failure(name, str(ex)) from ex
    return call


# --------------------------------------------------------------------------- helpers


def _leaf_type(t: ir.ElementType, path: tuple[int, ...]) -> ir.ScalarType:
    for i in path:
        if not isinstance(t, ir.TupleType) or not 0 <= i < len(t.elements):
            raise ValueError(f"index path {path} does not name a leaf of {t}")
        t = t.elements[i]
    if not isinstance(t, ir.ScalarType):
        raise ValueError(f"index path {path} names a tuple ({t}), not a scalar leaf")
    return t


def _get_leaf(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = value[i]
    return value


_INT_RANGES = {
    np.dtype(np.int8): (-(1 << 7), (1 << 7) - 1),
    np.dtype(np.int16): (-(1 << 15), (1 << 15) - 1),
    np.dtype(np.int32): (-(1 << 31), (1 << 31) - 1),
    np.dtype(np.int64): (-(1 << 63), (1 << 63) - 1),
    np.dtype(np.uint32): (0, (1 << 32) - 1),
    np.dtype(np.uint64): (0, (1 << 64) - 1),
}


_DEVICE = object()   # marshalling marker: a device array (pointer via __cuda_array_interface__)

_SCALAR_KEY_TYPES = frozenset([int, float, bool, np.float64, np.float32, np.int64, np.int32,
                               np.bool_])


class _Entry:
    """Prepared DaCe argument vectors for one set of argument objects."""

    __slots__ = ("callargs", "initargs", "init_key", "checks", "keepalive", "copies",
                 "sequential")

    def __init__(self, callargs: tuple, initargs: tuple,
                 checks: tuple[tuple[Any, tuple, tuple, np.dtype, bool], ...], keepalive: tuple,
                 copies: tuple[tuple[Any, Any], ...], sequential: bool = False):
        self.callargs = callargs
        self.initargs = initargs
        self.init_key = _init_key(initargs)
        self.checks = checks        # (weakref, shape, strides, dtype, written) per array
        self.keepalive = keepalive  # arrays we made (scalars passed as arrays, copies)
        self.copies = copies        # (copy, original): inputs overlapping an output
        self.sequential = sequential  # every parallel map is small: run one-threaded


def _init_key(initargs: tuple) -> tuple:
    """The values the program's init function sizes persistent transients with."""
    return tuple(getattr(a, "value", a) for a in initargs)


def _has_sized_persistent(sdfg: dace.SDFG) -> bool:
    """Whether the SDFG keeps transients alive between calls whose size depends on
    symbols: then the program must be initialised again when the sizes change."""
    risky = (dtypes.AllocationLifetime.Persistent, dtypes.AllocationLifetime.Global)
    return any(desc.transient and desc.lifetime in risky and getattr(desc, "free_symbols", None)
               for sd in sdfg.all_sdfgs_recursive() for desc in sd.arrays.values())


def _ensure_initialized_for(compiled: CompiledSDFG, init_key: tuple) -> None:
    """Re-initialise ``compiled`` when a call's sizes differ from those its persistent
    transients were allocated with (DaCe allocates them once, in the init function,
    with the first call's sizes; a larger later call would write past them)."""
    if getattr(compiled, "_tir_init_key", None) != init_key:
        compiled.finalize()          # the next call runs __dace_init with the new sizes
        compiled._tir_init_key = init_key


# --------------------------------------------------------------------------- callable


class SDFGCallable:
    """Calls a compiled SDFG with the arguments of a Tensor IR program.

    ``callable(**kwargs)`` takes the program's parameters by name (and, where
    the shapes do not determine them, size symbols; see
    :mod:`tensorir_dace.arguments`), checks them, and runs the compiled code.
    Outputs are written in place; the call returns ``None``.

    :param compiled: the ``CompiledSDFG`` (see :func:`~tensorir_dace.runtime.compile_sdfg`).
    :param signature: which SDFG argument each parameter leaf / size symbol is.
    :param name: used in error messages (default: the SDFG name).
    :param max_cached: how many argument sets to remember (LRU).
    :param checks: the call-time checks (default: written parameters taken from
        the SDFG's written containers, no neighbour-table uses).
    """

    #: Build argument vectors without DaCe's (slow) ``construct_arguments``
    #: where the SDFG's arguments are plain arrays, scalars and symbols.
    use_fast_marshalling = True

    def __init__(self, compiled: CompiledSDFG, signature: CallSignature, *,
                 name: str | None = None, max_cached: int = 8,
                 checks: CallChecks | None = None):
        self.compiled = compiled
        self.signature = signature
        self.name = name or compiled.sdfg.name
        self.where = f"program '{self.name}'"
        self.max_cached = max(1, int(max_cached))
        self._binder = ArgumentBinder(signature.params, self.where)
        self._entries: dict[tuple, _Entry] = {}
        self._hits = 0
        self._misses = 0
        self._gpu_checked = False
        self._has_gpu_code = bool(getattr(compiled, "has_gpu_code", False))
        self._fast_call = compiled.fast_call
        if self._has_gpu_code:
            self._fast_call = _reporting_gpu_errors(compiled.fast_call, self.name)
        self._reinit = _has_sized_persistent(compiled.sdfg)
        self._analyse()
        if checks is None:
            written = _written_containers(compiled.sdfg)
            checks = CallChecks(signature.params, {b.param for b in signature.bindings
                                                   if b.data in written}, (), self.where)
        self._checks = checks
        self._written = checks.written

    @classmethod
    def from_sdfg(cls, sdfg: dace.SDFG, signature: CallSignature, *,
                  cache_dir: str | os.PathLike | None = None, name: str | None = None,
                  **kwargs: Any) -> SDFGCallable:
        """Compile ``sdfg`` through the compile cache and wrap it."""
        from .cache import compile_sdfg
        return cls(compile_sdfg(sdfg, cache_dir=cache_dir), signature,
                   name=name or sdfg.name, **kwargs)

    # ------------------------------------------------------------------ analysis

    def _analyse(self) -> None:
        """Match the signature against the SDFG's arguments (once)."""
        sdfg = self.compiled.sdfg
        typedict = getattr(self.compiled, "_typedict", None) or sdfg.arglist()
        sig = list(getattr(self.compiled, "_sig", None)
                   or sdfg.signature_arglist(with_types=False, arglist=typedict))
        params = {p.name: p for p in self.signature.params}
        sdfg_symbols = {s: typedict[s] for s in sig if s in typedict and s not in sdfg.arrays}

        problems: list[str] = []
        # (binding, descriptor, dtype, kind: array / scalar / scalar_array / symbol)
        self._arrays: list[tuple[ArgBinding, dt.Data, np.dtype, str]] = []
        provided: set[str] = set()
        for b in self.signature.bindings:
            p = params.get(b.param)
            if p is None:
                problems.append(f"binding {b} names no program parameter")
                continue
            try:
                leaf = _leaf_type(p.type.dtype, b.path)
            except ValueError as ex:
                problems.append(f"binding {b}: {ex}")
                continue
            want = numpy_dtype(leaf)
            if b.data in sdfg.arrays:
                desc = sdfg.arrays[b.data]
                got = desc.dtype.as_numpy_dtype()
                if got != want:
                    problems.append(f"'{b.data}' is {got} in the SDFG but parameter "
                                    f"'{b.param}'{''.join(f'[{i}]' for i in b.path)} is {leaf}")
                if p.type.is_scalar:
                    if isinstance(desc, dt.Scalar):
                        kind = "scalar"
                    elif isinstance(desc, dt.Array) and _prod(desc.shape) == 1:
                        kind = "scalar_array"
                    else:
                        problems.append(f"scalar parameter '{b.param}' is bound to '{b.data}', "
                                        f"a {type(desc).__name__} of shape {desc.shape}")
                        continue
                else:
                    if not isinstance(desc, dt.Array) or len(desc.shape) != len(p.type.dims):
                        problems.append(
                            f"parameter '{b.param}' ({len(p.type.dims)}-D) is bound to "
                            f"'{b.data}' ({type(desc).__name__} of shape {desc.shape})")
                        continue
                    kind = "array"
                if desc.transient:
                    problems.append(f"'{b.data}' is a transient of the SDFG, not an argument")
                self._arrays.append((b, desc, want, kind))
            elif b.data in sdfg_symbols:
                if not (p.type.is_scalar and leaf.is_int):
                    problems.append(f"'{b.data}' is an SDFG symbol but parameter '{b.param}' "
                                    f"is {p.type}, not an integer scalar")
                    continue
                self._arrays.append((b, sdfg_symbols[b.data], want, "symbol"))
            elif p.type.is_scalar and leaf.is_int and b.data not in sdfg.arrays:
                continue    # an integer the SDFG does not use (e.g. simplified away)
            else:
                problems.append(f"'{b.data}' (parameter '{b.param}') is not an argument of the "
                                f"SDFG (its arguments: {', '.join(sig)})")
                continue
            provided.add(b.data)

        self._symbol_map: list[tuple[str, str, np.dtype]] = []
        for size_name, sym in self.signature.symbols.items():
            if size_name not in self._binder.symbol_names:
                problems.append(f"size symbol '{size_name}' occurs in no parameter type")
                continue
            if sym in provided:
                problems.append(f"SDFG symbol '{sym}' is provided twice")
                continue
            if sym not in sdfg_symbols:
                continue    # the SDFG does not need it (e.g. simplified away)
            self._symbol_map.append((size_name, sym, sdfg_symbols[sym].dtype.as_numpy_dtype()))
            provided.add(sym)

        missing = [a for a in sig if a not in provided]
        if missing:
            problems.append(f"SDFG arguments {', '.join(repr(m) for m in missing)} are fed by "
                            "no binding or size symbol")
        if problems:
            raise ValueError(f"call signature does not match SDFG '{sdfg.name}':\n  "
                             + "\n  ".join(problems))

        # Lowering self-check, evaluated on every argument-vector construction:
        # each array's SDFG shape and strides for the call's symbol values.
        exprs: list[Any] = []
        self._layout: list[tuple[int, int, int]] = []   # (index into _arrays, ndim, first expr)
        for i, (_, desc, _, kind) in enumerate(self._arrays):
            if kind != "array":
                continue
            self._layout.append((i, len(desc.shape), len(exprs)))
            exprs.extend(sympy.sympify(s) for s in desc.shape)
            exprs.extend(sympy.sympify(s) for s in desc.strides)
        names = sorted({str(s) for e in exprs for s in e.free_symbols})
        # Size symbols the generated code does not need (DaCe drops them from the
        # signature) still have values: the binder infers every size symbol.
        known = set(sdfg_symbols) | set(self.signature.symbols.values())
        symvals_known = known
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"SDFG '{sdfg.name}': array sizes use symbols {unknown} that are "
                             "not arguments")
        plain = [sympy.Symbol(n) for n in names]
        subs = {s: sympy.Symbol(str(s)) for e in exprs for s in e.free_symbols}
        self._layout_names = names
        self._layout_fn = sympy.lambdify(plain, [e.xreplace(subs) for e in exprs],
                                         modules=["math"])
        self._storage_gpu = {b.data: desc.storage in (dtypes.StorageType.GPU_Global,)
                             for b, desc, _, _ in self._arrays if isinstance(desc, dt.Data)}
        self._plan_marshalling(sig, typedict)
        volume = parallel_volume(sdfg)
        self._volume_fn = None
        if volume is not None and {str(s) for s in volume.free_symbols} <= set(symvals_known):
            self._volume_names = sorted(str(s) for s in volume.free_symbols)
            self._volume_fn = sympy.lambdify([sympy.Symbol(n) for n in self._volume_names],
                                             volume.xreplace({s: sympy.Symbol(str(s))
                                                              for s in volume.free_symbols}),
                                             modules=["math"])

    def _plan_marshalling(self, sig: list[str], typedict: Mapping[str, dt.Data]) -> None:
        """Per C argument: how to turn its value into a ctypes object.  Falls
        back to DaCe's ``construct_arguments`` for anything beyond plain arrays,
        scalars and symbols (return values, structures, callbacks, …)."""
        sdfg = self.compiled.sdfg
        self._marshal_plan: list[tuple[str, Any]] | None = None
        if not self.use_fast_marshalling or any(
                n == "__return" or n.startswith("__return_") for n in sdfg.arrays):
            return
        plan: list[tuple[str, Any]] = []
        for name in sig:
            desc = typedict[name]
            if isinstance(desc.dtype, (dtypes.callback, dtypes.pyobject)) or \
                    type(desc) not in (dt.Array, dt.Scalar):
                return
            if isinstance(desc, dt.Array):
                gpu = desc.storage == dtypes.StorageType.GPU_Global
                plan.append((name, _DEVICE if gpu else None))
            else:
                plan.append((name, desc.dtype.as_ctypes()))
        free = self.compiled._free_symbols if hasattr(self.compiled, "_free_symbols") \
            else sdfg.free_symbols
        self._init_positions = tuple(i for i, n in enumerate(sig) if n in free)
        self._marshal_plan = plan

    # ------------------------------------------------------------------ calling

    def __call__(self, **kwargs: Any) -> None:
        # Hot path: key on array identities and scalar values (see _key, inlined).
        parts: list[Any] = []
        arrays: list[Any] = []
        key: tuple | None
        for k, v in kwargs.items():
            t = type(v)
            if t is np.ndarray:
                parts.append(k)
                parts.append(id(v))
                arrays.append(v)
            elif t in _SCALAR_KEY_TYPES:
                parts.append(k)
                parts.append(t)
                parts.append(v)
            else:
                key, arrays = self._key(kwargs)
                break
        else:
            key = tuple(parts)
        if key is not None:
            entry = self._entries.get(key)
            if entry is not None:
                for a, (ref, shape, strides, dtype, written) in zip(arrays, entry.checks):
                    if ref() is not a or a.shape != shape or a.strides != strides \
                            or a.dtype is not dtype or (written and not a.flags.writeable):
                        break
                else:
                    self._hits += 1
                    for dup, src in entry.copies:
                        dup[...] = src      # NumPy or device arrays
                    if self._reinit:
                        _ensure_initialized_for(self.compiled, entry.init_key)
                    if entry.sequential:
                        run_one_threaded(self._fast_call, entry.callargs, entry.initargs,
                                         self._has_gpu_code)
                    else:
                        self._fast_call(entry.callargs, entry.initargs, self._has_gpu_code)
                    return
                del self._entries[key]
        self._call_slow(kwargs, key, arrays)
        return

    @staticmethod
    def _key(kwargs: Mapping[str, Any]) -> tuple[tuple | None, list]:
        """A hashable key for the argument objects, and the arrays in it."""
        parts: list[Any] = []
        arrays: list[Any] = []
        for k, v in kwargs.items():
            parts.append(k)
            t = type(v)
            if t is np.ndarray:
                parts.append(id(v))
                arrays.append(v)
            elif t in _SCALAR_KEY_TYPES:
                parts.append(t)
                parts.append(v)
            elif t is tuple:
                stack = [v]
                parts.append(tuple)
                while stack:
                    x = stack.pop()
                    tx = type(x)
                    if tx is tuple:
                        parts.append(len(x))
                        stack.extend(reversed(x))
                    elif tx is np.ndarray:
                        parts.append(id(x))
                        arrays.append(x)
                    elif tx in _SCALAR_KEY_TYPES:
                        parts.append(tx)
                        parts.append(x)
                    elif (dkey := interface_key(x)) is not None:
                        parts.append(dkey)
                    else:
                        return None, arrays
            elif (dkey := interface_key(v)) is not None:
                # A GPU array: keyed by all that the prepared call depends on (pointer,
                # layout, read-only flag), not by identity.
                parts.append(dkey)
            else:
                return None, arrays   # not safely cacheable (0-d arrays, __array__ objects, …)
        return tuple(parts), arrays

    def _call_slow(self, kwargs: Mapping[str, Any], key: tuple | None, arrays: list) -> None:
        self._misses += 1
        bound = self._binder.bind(kwargs)
        if self.signature.constraints:
            check_size_constraints(self.signature.constraints,
                                   {**runtime_values(self.signature.params, bound.values),
                                    **bound.symbols}, self.where)
        values, copies, writebacks = self._checks.check_staged(bound.values, bound.symbols)
        if copies or writebacks:
            bound = BoundArguments(values, bound.symbols)
        callargs, initargs, keepalive, sequential = self._construct(bound)
        if self._has_gpu_code and not self._gpu_checked:
            if not gpu_available():
                raise gpu_unavailable(self.where)
            self._gpu_checked = True
        if self._reinit:
            _ensure_initialized_for(self.compiled, _init_key(initargs))
        if sequential:
            run_one_threaded(self._fast_call, callargs, initargs, self._has_gpu_code)
        else:
            self._fast_call(callargs, initargs, self._has_gpu_code)
        for original, staged in writebacks:
            original[...] = staged
        if key is not None and not writebacks:     # (staged outputs: prepared anew)
            written = {id(x) for name in self._written for x in _leaf_values(kwargs[name])}
            checks = tuple((weakref.ref(a), a.shape, a.strides, a.dtype, id(a) in written)
                           for a in arrays)
            if len(self._entries) >= self.max_cached:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = _Entry(callargs, initargs, checks,
                                        keepalive + tuple(c for c, _ in copies), tuple(copies),
                                        sequential)

    def _construct(self, bound: BoundArguments) -> tuple[tuple, tuple, tuple, bool]:
        """DaCe argument vectors for checked arguments."""
        where = self.where
        dkw: dict[str, Any] = {}
        keepalive: list[Any] = []
        symvals: dict[str, int] = {}
        any_view = False
        for size_name, sym, sdtype in self._symbol_map:
            v = bound.symbols[size_name]
            lo, hi = _INT_RANGES.get(sdtype, (None, None))
            if lo is not None and hi is not None and not lo <= v <= hi:
                raise ArgumentError(f"{where}: size {size_name} = {v} does not fit the "
                                    f"compiled program's {sdtype} symbol '{sym}'")
            dkw[sym] = v
            symvals[sym] = v
        for size_name, sym in self.signature.symbols.items():
            if sym not in symvals and size_name in bound.symbols:
                symvals[sym] = bound.symbols[size_name]
        for b, desc, want, kind in self._arrays:
            value = _get_leaf(bound.values[b.param], b.path)
            if kind == "symbol":
                iv = int(value)
                sdtype = desc.dtype.as_numpy_dtype()
                lo, hi = _INT_RANGES.get(sdtype, (None, None))
                if lo is not None and hi is not None and not lo <= iv <= hi:
                    raise ArgumentError(f"{where}: parameter '{b.param}' = {iv} does not fit the "
                                        f"compiled program's {sdtype} symbol '{b.data}'")
                dkw[b.data] = iv
                symvals[b.data] = iv
            elif kind == "scalar":
                dkw[b.data] = value
            elif kind == "scalar_array":
                arr = np.full((1,) * len(desc.shape), value, dtype=want)
                keepalive.append(arr)
                dkw[b.data] = arr
            else:
                on_gpu = self._storage_gpu.get(b.data, False)
                is_device = not isinstance(value, np.ndarray)
                if on_gpu != is_device:
                    raise ArgumentError(
                        f"{where}: parameter '{b.param}' must be a "
                        f"{'GPU (CuPy)' if on_gpu else 'host (NumPy)'} array for this compiled "
                        f"program, got {type(value).__module__}.{type(value).__name__}")
                if getattr(value, "base", None) is not None:
                    any_view = True
                dkw[b.data] = value   # identity-checked on reuse; no reference kept

        # Lowering self-check: the SDFG's idea of each array's shape and strides.
        if self._layout:
            vals = self._layout_fn(*[symvals[n] for n in self._layout_names])
            for i, ndim, first in self._layout:
                b, desc, want, _ = self._arrays[i]
                arr = dkw[b.data]
                shape = tuple(int(x) for x in vals[first:first + ndim])
                strides = tuple(int(x) * arr.itemsize for x in vals[first + ndim:first + 2 * ndim])
                if shape != tuple(arr.shape) or (arr.size > 1 and any(
                        s != a for s, a, n in zip(strides, arr.strides, arr.shape) if n > 1)):
                    raise RuntimeError(
                        f"{where}: internal error: SDFG array '{b.data}' has shape {shape} and "
                        f"strides {strides} for this call, but parameter '{b.param}' has shape "
                        f"{tuple(arr.shape)} and strides {tuple(arr.strides)} (lowering bug)")

        if self._marshal_plan is None:
            callargs, initargs = self._dace_construct(dkw, any_view)
        else:
            callargs, initargs = self._marshal(dkw)
        sequential = False
        if self._volume_fn is not None and not self._has_gpu_code:
            volume = self._volume_fn(*[symvals[n] for n in self._volume_names])
            sequential = volume < openmp.SEQUENTIAL_BELOW
        return callargs, initargs, tuple(keepalive), sequential

    def _dace_construct(self, dkw: dict[str, Any], any_view: bool) -> tuple[tuple, tuple]:
        """DaCe's own marshalling (``construct_arguments``), views allowed."""
        if any_view:
            with dace.config.set_temporary("compiler", "allow_view_arguments", value=True):
                return self.compiled.construct_arguments(**dkw)
        return self.compiled.construct_arguments(**dkw)

    def _marshal(self, dkw: dict[str, Any]) -> tuple[tuple, tuple]:
        """What ``construct_arguments`` computes for plain arrays and scalars, in
        a fraction of the time (DaCe's takes ~70 µs for a few arguments):
        array pointers as ``c_void_p``, scalars and symbols as their ctypes."""
        callargs = []
        assert self._marshal_plan is not None   # made by the first call
        for name, conv in self._marshal_plan:
            v = dkw[name]
            if conv is None:    # host array
                callargs.append(ctypes.c_void_p(data_pointer(v)))
            elif conv is _DEVICE:
                callargs.append(ctypes.c_void_p(data_pointer(v)))
            else:
                callargs.append(conv(v))
        return tuple(callargs), tuple(callargs[i] for i in self._init_positions)

    # ------------------------------------------------------------------ introspection

    def bind(self, **kwargs: Any) -> BoundArguments:
        """Check arguments as a call would, without running anything."""
        return self._binder.bind(kwargs)

    def cache_info(self) -> dict[str, int]:
        """``hits`` (calls that reused prepared arguments), ``misses``, ``size``."""
        return {"hits": self._hits, "misses": self._misses, "size": len(self._entries)}

    def clear_cache(self) -> None:
        """Forget the prepared argument vectors."""
        self._entries.clear()

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.type}" for p in self.signature.params)
        return f"<SDFGCallable {self.name}({params})>"


def parallel_volume(sdfg: dace.SDFG) -> sympy.Expr | None:
    """The points (:func:`map_points`) of the largest top-level CPU map (``None``: none,
    every one runs one-threaded already, or a map whose size depends on loop
    variables)."""
    volumes: list[sympy.Expr] = []
    known = {str(s) for s in sdfg.free_symbols}
    counted = known_symbols(sdfg)
    for state, node in parallel_maps_with_states(sdfg):
        if node.map.omp_num_threads == 1:       # one-threaded already
            continue
        v = sympy.sympify(map_points(state, node, counted))
        if not {str(s) for s in v.free_symbols} <= known:
            return None
        volumes.append(v)
    if not volumes:
        return None
    return sympy.Max(*volumes) if len(volumes) > 1 else volumes[0]


def _leaf_values(value: Any) -> list[Any]:
    if type(value) is tuple:
        return [x for v in value for x in _leaf_values(v)]
    return [value]


def _written_containers(sdfg: dace.SDFG) -> set[str]:
    """Names of the SDFG's data containers that some state writes."""
    out = set()
    for state in sdfg.states():
        for node in state.data_nodes():
            if state.in_degree(node) > 0:
                out.add(node.data)
    return out


def _prod(shape: Any) -> Any:
    out: Any = 1
    for s in shape:
        out = out * s
    try:
        return int(out)
    except TypeError:
        return None
