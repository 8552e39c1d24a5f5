"""Binding Python arguments to the parameters of a Tensor IR program.

Shared by the NumPy interpreter and the compiled runtime, so that both accept
exactly the same arguments and reject the same mistakes with the same
messages, before any code runs.

Rules (DESIGN.md §2, "Python values"):

* A tensor parameter ``tensor<T, D1[a:b], D2[c:d]>`` takes an array of shape
  ``(b - a, d - c)`` in declaration order; element 0 is coordinate ``a``.
  The element type must match exactly (no silent casting of arrays).  NumPy
  arrays may have any layout (Fortran order, transposes, step slices,
  negative or zero strides): the interpreter reads them as they are, and
  compiled calls stage the ones that are not C-contiguous through
  C-contiguous copies (:mod:`tensorir_dace.staging`).  Anything with
  ``__array__`` is accepted through ``np.asarray`` (without a copy where
  NumPy can avoid one); GPU arrays
  (``__cuda_array_interface__``) are checked alike and bound as
  :class:`~tensorir_dace.device_arrays.DeviceArray` (only compiled GPU
  programs run them).
* A tuple-typed tensor takes a nested Python tuple of arrays, one per leaf,
  each with its own element type and all with the tensor's shape.
* A scalar parameter (``tensor<T>``) takes a Python or NumPy scalar, or a 0-d
  array, converted to ``T`` when that loses nothing: ``int`` to a float type
  is fine, a float to an integer type is an error, ``bool`` only comes from
  ``bool``.  (A Python float given for a ``float32`` parameter is rounded to
  the nearest ``float32``, as a literal would be.)
* Size symbols (``N`` in ``I[0:N]``) are inferred from the array shapes
  (``I[0:N]`` with 10 elements: ``N = 10``; ``J[-1:M+1]`` with 12:
  ``M = 10``; ``I[0:2*N]`` with 10: ``N = 5``).  Every occurrence must agree.
  A symbol that no shape determines (it only appears in bounds such as
  ``I[0:N+M]`` together with another unknown) is passed as a keyword
  argument with its name, e.g. ``prog(a=..., M=3)``; an explicit value for a
  symbol that the shapes do determine is checked against them.  A scalar
  integer parameter whose name is a size symbol provides that symbol's value.

SymPy is only used once per parameter list, to build a plan of small
compiled functions (:mod:`tensorir_dace.size_solving`); binding itself is
plain Python.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import ir
from .device_arrays import DeviceArray
from .errors import ArgumentError, did_you_mean
from .lazy import lazy_module
from .size_solving import Equation, Plan, as_int, build_plan, compile_expr
from .source_extents import extent_values, extents_of

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

__all__ = [
    "ArgumentBinder",
    "BoundArguments",
    "bind_arguments",
    "get_binder",
    "numpy_dtype",
    "leaf_types",
]

# --------------------------------------------------------------------------- types

_NUMPY_DTYPES: dict[str, np.dtype] = {
    "float64": np.dtype(np.float64),
    "float32": np.dtype(np.float32),
    "int64": np.dtype(np.int64),
    "int32": np.dtype(np.int32),
    "bool": np.dtype(np.bool_),
}


def numpy_dtype(t: ir.ScalarType) -> np.dtype:
    """The NumPy dtype that holds elements of the scalar type ``t``."""
    return _NUMPY_DTYPES[t.name]


def leaf_types(t: ir.ElementType,
               path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], ir.ScalarType]]:
    """The scalar leaves of an element type with their index paths, in order.

    ``float64`` gives ``[((), float64)]``; ``(float64, (int32, bool))`` gives
    ``[((0,), float64), ((1, 0), int32), ((1, 1), bool)]``.
    """
    if isinstance(t, ir.ScalarType):
        return [(path, t)]
    out: list[tuple[tuple[int, ...], ir.ScalarType]] = []
    for i, e in enumerate(t.elements):
        out.extend(leaf_types(e, path + (i,)))
    return out


def _path_str(path: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in path)


def _leaf_name(param: str, path: tuple[int, ...]) -> str:
    return f"parameter '{param}'" + (f" element {_path_str(path)}" if path else "")


def _shape_str(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _describe(value: Any) -> str:
    t = type(value)
    if t.__module__ == "builtins":
        return t.__name__
    return f"{t.__module__}.{t.__qualname__}"


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class BoundArguments:
    """Checked arguments of one call.

    ``values`` maps each parameter name (in declaration order) to an array
    (exact dtype, any layout for NumPy; a nested tuple of arrays for a tuple element
    type) or a NumPy scalar of the declared dtype for a scalar parameter.
    ``symbols`` maps each size-symbol name to its value.
    """

    values: dict[str, Any]
    symbols: dict[str, int]


# --------------------------------------------------------------------------- arrays


def _as_array(value: Any, what: str, where: str) -> Any:
    """``value`` as an array object (NumPy, or a :class:`DeviceArray` for GPU arrays)."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, np.ndarray):
        return np.asarray(value)  # a subclass: a base-class view, no copy
    if hasattr(value, "__cuda_array_interface__"):
        return DeviceArray(value, what, where)
    if hasattr(value, "__array__") and not isinstance(value, (np.generic, numbers.Number)):
        try:
            return np.asarray(value)
        except Exception as ex:  # noqa: BLE001 - any failure of __array__ is reported
            raise ArgumentError(f"{where}: {what} got a {_describe(value)} that cannot be "
                                f"converted to an array: {ex}") from None
    return None


def _check_leaf_array(value: Any, dtype: np.dtype, ptype: ir.TensorType, param: str,
                      path: tuple[int, ...], where: str) -> Any:
    rank = len(ptype.dims)
    if type(value) is np.ndarray and value.ndim == rank and value.dtype == dtype:
        flags = value.flags
        if flags.c_contiguous and flags.aligned:
            return value    # the common case, checked cheaply
    what = _leaf_name(param, path)
    arr = _as_array(value, what, where)
    if arr is None:
        raise ArgumentError(
            f"{where}: {what} expects a {rank}-D array of {dtype.name} "
            f"({ptype}), got {_describe(value)}")
    if arr.ndim != rank:
        raise ArgumentError(
            f"{where}: {what} expects a {rank}-D array ({ptype}), "
            f"got a {arr.ndim}-D array of shape {_shape_str(tuple(arr.shape))}")
    if arr.dtype != dtype:
        hint = f"use x.astype(np.{dtype.name})" if dtype.name != "bool" else "use x.astype(bool)"
        raise ArgumentError(
            f"{where}: {what} expects {dtype.name} elements, got {arr.dtype} ({hint})")
    if isinstance(arr, DeviceArray):    # passed by pointer, never staged
        dev = arr.flags
        if not dev.c_contiguous:
            hint = ("a Fortran-ordered array" if dev.f_contiguous and arr.ndim > 1
                    else "a strided view")
            raise ArgumentError(
                f"{where}: {what} must be a C-contiguous array, got {hint} with strides "
                f"{tuple(arr.strides)} (use cupy.ascontiguousarray(x), and copy "
                "results back if it is an output)")
        if not dev.aligned:
            raise ArgumentError(f"{where}: {what} is not aligned to its element size "
                                "(copy it with cupy.array(x))")
    return arr


# --------------------------------------------------------------------------- scalars


def _convert_scalar(value: Any, t: ir.ScalarType, what: str, where: str) -> Any:
    """A NumPy scalar of type ``t`` from a Python/NumPy scalar or 0-d array."""
    dtype = numpy_dtype(t)
    v = value
    if isinstance(v, np.ndarray):
        if v.ndim != 0:
            raise ArgumentError(
                f"{where}: {what} expects a scalar of type {t}, got an array of shape "
                f"{_shape_str(tuple(v.shape))}")
        v = v[()]
    if isinstance(v, (bool, np.bool_)):
        if t.is_bool:
            return np.bool_(bool(v))
        raise ArgumentError(f"{where}: {what} expects a {t} scalar, got bool {v!r} "
                            f"(use {'1' if v else '0'}{'.0' if t.is_float else ''})")
    if t.is_bool:
        raise ArgumentError(f"{where}: {what} expects a bool scalar, got "
                            f"{_describe(v)} {v!r} (use True/False)")
    if isinstance(v, (int, np.integer)):
        iv = int(v)
        if t.is_int:
            info = np.iinfo(dtype)
            if not info.min <= iv <= info.max:
                raise ArgumentError(f"{where}: {what} expects a {t} scalar, and {iv} is "
                                    f"outside its range [{info.min}, {info.max}]")
            return dtype.type(iv)
        try:
            fv = dtype.type(iv)
        except OverflowError:            # beyond every float (10**400)
            fv = dtype.type(np.inf)
        if not np.isfinite(fv) or int(fv) != iv:
            shown = str(iv) if len(str(iv)) <= 24 else f"{str(iv)[:12]}… ({len(str(iv))} digits)"
            raise ArgumentError(f"{where}: {what} expects a {t} scalar, and the integer {shown} "
                                f"is not exactly representable as {t} (pass a float)")
        return fv
    if isinstance(v, (float, np.floating)):
        if t.is_int:
            raise ArgumentError(f"{where}: {what} expects an integer ({t}) scalar, got "
                                f"{_describe(v)} {v!r} (convert it explicitly with int(x))")
        with np.errstate(over="ignore"):
            fv = dtype.type(v)
        if np.isfinite(v) and not np.isfinite(fv):
            raise ArgumentError(f"{where}: {what}: {v!r} overflows {t}")
        return fv
    raise ArgumentError(f"{where}: {what} expects a {t} scalar, got {_describe(v)}"
                        + (f" {v!r}" if isinstance(v, (complex, str, np.complexfloating)) else ""))


# --------------------------------------------------------------------------- binder


@dataclass
class _ParamInfo:
    param: ir.Param
    name: str
    type: ir.TensorType
    leaves: list[tuple[tuple[int, ...], ir.ScalarType]]
    is_tuple: bool
    is_scalar: bool
    np_dtype: np.dtype | None      # of a non-tuple element type


class ArgumentBinder:
    """Checks and converts keyword arguments for one parameter list.

    Built once per parameter list (SymPy work happens here); :meth:`bind` is
    plain Python.
    """

    def __init__(self, params: Sequence[ir.Param], where: str = "program"):
        self.params = tuple(params)
        self.where = where
        self._infos: list[_ParamInfo] = []
        names_seen: set[str] = set()
        for p in self.params:
            if p.name in names_seen:
                raise ValueError(f"duplicate parameter name {p.name!r}")
            names_seen.add(p.name)
            t = p.type
            if not isinstance(t, ir.TensorType):
                raise TypeError(f"parameter {p.name!r} has no tensor type: {t!r}")
            leaves = leaf_types(t.dtype)
            self._infos.append(_ParamInfo(p, p.name, t, leaves, isinstance(t.dtype, ir.TupleType),
                                          not t.dims,
                                          numpy_dtype(t.dtype) if isinstance(t.dtype, ir.ScalarType)
                                          else None))
        self.param_names = tuple(i.name for i in self._infos)
        self._nparams = len(self.param_names)

        # One equation per (parameter, dimension).
        symbols: dict[str, None] = {}
        self._equations: list[Equation] = []
        for info in self._infos:
            for axis, d in enumerate(info.type.dims):
                extent = sympy.expand(ir.as_bound(d.stop) - ir.as_bound(d.start))
                names = tuple(sorted({s.name for s in extent.free_symbols}))
                for n in names:
                    symbols.setdefault(n)
                self._equations.append(Equation(info.name, axis, d, extent, names,
                                                compile_expr(extent, names)))
        self.symbol_names = tuple(symbols)
        # Scalar integer parameters named like a size symbol provide its value.
        self._symbol_params = tuple(
            i.name for i in self._infos
            if i.is_scalar and not i.is_tuple and i.name in symbols
            and isinstance(i.type.dtype, ir.ScalarType) and i.type.dtype.is_int)
        self._plans: dict[frozenset[str], Plan] = {}
        self._default_plan = self._plan(frozenset(self._symbol_params))
        #: Symbols that the shapes alone cannot determine: pass them by keyword.
        self.explicit_symbols = self._default_plan.undetermined
        self._accepted = set(self.param_names) | set(self.symbol_names)
        # source-extent parameters a call binds from the tables (see ..source_extents)
        self._extents = {n: e for n, e in extents_of(self.params).items() if e[1]}

    # ------------------------------------------------------------------ plans

    def _plan(self, explicit: frozenset[str]) -> Plan:
        plan = self._plans.get(explicit)
        if plan is None:
            plan = build_plan(self._equations, self.symbol_names, explicit)
            self._plans[explicit] = plan
        return plan

    # ------------------------------------------------------------------ bind

    def bind(self, kwargs: Mapping[str, Any], where: str | None = None) -> BoundArguments:
        """Check ``kwargs``; ``where`` (default: the binder's) prefixes messages."""
        if where is None:
            where = self.where
        accepted = self._accepted
        for k in kwargs:
            if k not in accepted:
                raise ArgumentError(
                    f"{where}: unexpected keyword argument '{k}'"
                    + (did_you_mean(k, accepted) or
                       f"; the parameters are {', '.join(self.param_names) or '(none)'}"))
        if self._extents:
            kwargs = self._with_extents(kwargs, where)
        # (a source extent is bound once its tables are given: not the caller's to pass)
        missing = [i for i in self._infos if i.name not in kwargs and i.name not in self._extents]
        if missing:
            desc = ", ".join(f"'{i.name}' ({i.type})" for i in missing)
            raise ArgumentError(f"{where}: missing argument{'s' if len(missing) > 1 else ''} "
                                f"for parameter{'s' if len(missing) > 1 else ''} {desc}")

        values: dict[str, Any] = {}
        shapes: dict[str, tuple[int, ...]] = {}
        for info in self._infos:
            v = kwargs[info.name]
            if info.is_scalar:
                values[info.name] = self._bind_scalar(info, v, where)
            else:
                values[info.name], shapes[info.name] = self._bind_tensor(info, v, where)

        symbols = self._solve(kwargs, values, shapes, where)
        return BoundArguments(values, symbols)

    def _with_extents(self, kwargs: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        """``kwargs`` with the source-extent parameters that are not given bound
        from the tables, once these are (checked first: arrays of integers of
        the right rank); see :func:`~tensorir_dace.source_extents.extent_values`."""
        hidden = {n: e for n, e in self._extents.items()
                  if n not in kwargs and all(t in kwargs for t in e[1])}
        if not hidden:
            return kwargs
        tables = {t for _, ts in hidden.values() for t in ts}
        values = dict(kwargs)
        for info in self._infos:
            if info.name in tables:
                bound = self._bind_tensor(info, kwargs[info.name], where)[0]
                if isinstance(bound, DeviceArray):
                    bound = bound.obj
                values[info.name] = bound
        bound_extents = extent_values(hidden, values)
        return {**kwargs, **{n: bound_extents[n] for n in hidden}}

    def _bind_scalar(self, info: _ParamInfo, v: Any, where: str) -> Any:
        if not isinstance(info.type.dtype, ir.TupleType):
            return _convert_scalar(v, info.type.dtype, f"parameter '{info.name}'", where)
        return self._bind_tuple(info, v, info.type.dtype, (), where,
                                lambda leaf, t, path: _convert_scalar(
                                    leaf, t, _leaf_name(info.name, path), where))

    def _bind_tensor(self, info: _ParamInfo, v: Any, where: str) -> tuple[Any, tuple[int, ...]]:
        if info.np_dtype is not None:    # not a tuple
            arr = _check_leaf_array(v, info.np_dtype, info.type, info.name, (), where)
            return arr, arr.shape
        first: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

        def leaf(x: Any, t: ir.ScalarType, path: tuple[int, ...]) -> Any:
            arr = _check_leaf_array(x, numpy_dtype(t), info.type, info.name, path, where)
            shape = arr.shape
            if first and first[0][1] != shape:
                p0, s0 = first[0]
                raise ArgumentError(
                    f"{where}: {_leaf_name(info.name, path)} has shape {_shape_str(shape)}, "
                    f"but element {_path_str(p0)} of the same parameter has shape "
                    f"{_shape_str(s0)}; all elements of a tuple-typed tensor have the same shape")
            if not first:
                first.append((path, shape))
            return arr

        bound = self._bind_tuple(info, v, info.type.dtype, (), where, leaf)
        return bound, first[0][1]

    def _bind_tuple(self, info: _ParamInfo, v: Any, t: ir.ElementType, path: tuple[int, ...],
                    where: str, leaf: Callable[[Any, ir.ScalarType, tuple[int, ...]], Any]) -> Any:
        if isinstance(t, ir.ScalarType):
            return leaf(v, t, path)
        if not isinstance(v, tuple):
            raise ArgumentError(
                f"{where}: {_leaf_name(info.name, path)} has element type {t} and expects "
                f"a tuple of {len(t.elements)} {'arrays' if not info.is_scalar else 'scalars'}, "
                f"got {_describe(v)}")
        if len(v) != len(t.elements):
            raise ArgumentError(
                f"{where}: {_leaf_name(info.name, path)} has element type {t} and expects "
                f"a tuple of {len(t.elements)} elements, got {len(v)}")
        return tuple(self._bind_tuple(info, x, e, path + (i,), where, leaf)
                     for i, (x, e) in enumerate(zip(v, t.elements)))

    # ------------------------------------------------------------------ symbols

    def _solve(self, kwargs: Mapping[str, Any], values: dict[str, Any],
               shapes: dict[str, tuple[int, ...]], where: str) -> dict[str, int]:
        syms: dict[str, int] = {}
        source: dict[str, tuple[str, Any]] = {}   # symbol -> where its value came from
        for name in self._symbol_params:
            syms[name] = int(values[name])
            source[name] = ("param", name)
        for name in (self.symbol_names if len(kwargs) > self._nparams else ()):
            if name in kwargs and name not in self._symbol_params:
                val = kwargs[name]
                if isinstance(val, (bool, np.bool_)) or not isinstance(val, (int, np.integer)):
                    raise ArgumentError(f"{where}: size symbol '{name}' must be an integer, "
                                        f"got {_describe(val)} {val!r}")
                if int(val) < 0:
                    raise ArgumentError(f"{where}: size symbol '{name}' must be non-negative, "
                                        f"got {int(val)}")
                syms[name] = int(val)
                source[name] = ("kwarg", name)
        plan = self._default_plan if len(syms) == len(self._symbol_params) else \
            self._plan(frozenset(syms))
        if plan.undetermined:
            uses: dict[str, list[str]] = {}
            for eq in self._equations:
                for n in eq.names:
                    if n in plan.undetermined:
                        uses.setdefault(n, []).append(f"'{eq.param}' ({eq.dim})")
            parts = [f"'{n}' (used by {', '.join(uses.get(n, ['?']))})"
                     for n in plan.undetermined]
            raise ArgumentError(
                f"{where}: cannot infer size symbol{'s' if len(parts) > 1 else ''} "
                f"{', '.join(parts)} from the array shapes; pass "
                f"{'them' if len(parts) > 1 else 'it'} as keyword argument"
                f"{'s' if len(parts) > 1 else ''}, e.g. "
                f"{', '.join(f'{n}=...' for n in plan.undetermined)}")

        for s in plan.solves:
            eq = s.eq
            observed = shapes[eq.param][eq.axis]
            args = [syms[n] for n in s.known]
            value: Any
            try:
                if s.linear:
                    assert s.coeff is not None and s.rest is not None
                    a = s.coeff(*args)
                    b = s.rest(*args)
                    ia, ib = as_int(a), as_int(b)
                    if ia is not None and ib is not None and ia != 0:
                        q, r = divmod(observed - ib, ia)
                        value = q if r == 0 else (observed - ib) / ia
                    else:   # not integer coefficients: solve, then check the equation
                        value = (observed - b) / a
                        iv = as_int(value)
                        if iv is not None and as_int(eq.fn(*[
                                iv if n == s.symbol else syms[n] for n in eq.names])) != observed:
                            value = None
                else:
                    value = None
                    found = set()
                    for f in s.solutions:
                        try:
                            c = as_int(f(observed, *args))
                        except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                            continue
                        if c is not None and c >= 0:
                            found.add(c)
                    if len(found) == 1:
                        value = found.pop()
                    elif found:
                        raise ArgumentError(
                            f"{where}: parameter '{eq.param}' has {observed} elements along "
                            f"axis {eq.axis} ({eq.dim}), which allows several values of "
                            f"{s.symbol} ({sorted(found)}); pass {s.symbol}=... explicitly")
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                value = None
            iv = as_int(value) if value is not None else None
            if iv is None or iv < 0:
                got = (f"no non-negative integer value of {s.symbol}" if value is None
                       else f"{s.symbol} = {value}")
                known = "".join(f" (with {self._source_str(n, source, syms, shapes)})"
                                for n in s.known)
                raise ArgumentError(
                    f"{where}: parameter '{eq.param}' has {observed} elements along axis "
                    f"{eq.axis} ({eq.dim}), which gives {got}{known}; size symbols are "
                    f"non-negative integers, so this size is impossible")
            syms[s.symbol] = iv
            source[s.symbol] = ("eq", eq)

        for eq in plan.verify:
            observed = shapes[eq.param][eq.axis]
            expected = eq.fn(*[syms[n] for n in eq.names])
            if as_int(expected) != observed:
                if eq.names:
                    because = "; ".join(self._source_str(n, source, syms, shapes)
                                        for n in eq.names)
                    raise ArgumentError(
                        f"{where}: size mismatch: parameter '{eq.param}' has {observed} elements "
                        f"along axis {eq.axis} ({eq.dim}), but {because}, so it needs "
                        f"{expected}")
                raise ArgumentError(
                    f"{where}: parameter '{eq.param}' has {observed} elements along axis "
                    f"{eq.axis} ({eq.dim}), expected {expected}")
        return {n: syms[n] for n in self.symbol_names}

    @staticmethod
    def _source_str(name: str, source: dict[str, Any], syms: dict[str, int],
                    shapes: dict[str, tuple[int, ...]]) -> str:
        kind, what = source[name]
        if kind == "param":
            return f"{name} = {syms[name]} from parameter '{name}'"
        if kind == "kwarg":
            return f"{name} = {syms[name]} from keyword argument {name}={syms[name]}"
        eq = what
        return (f"{name} = {syms[name]} from parameter '{eq.param}' ({eq.dim} has "
                f"{shapes[eq.param][eq.axis]} elements along axis {eq.axis})")


# --------------------------------------------------------------------------- cache

_BINDERS: dict[tuple[ir.Param, ...], ArgumentBinder] = {}
_LAST: list[Any] = [None, None]   # (params tuple, binder): identity fast path


def get_binder(params: Sequence[ir.Param]) -> ArgumentBinder:
    """The (cached) :class:`ArgumentBinder` of a parameter list."""
    last = _LAST
    if last[0] is params:
        return last[1]
    key = tuple(params)
    binder = _BINDERS.get(key)
    if binder is None:
        binder = ArgumentBinder(key)
        if len(_BINDERS) >= 256:
            _BINDERS.clear()
        _BINDERS[key] = binder
    if type(params) is tuple:   # immutable: safe to recognise by identity next time
        last[0], last[1] = params, binder
    return binder


def bind_arguments(params: Sequence[ir.Param], kwargs: Mapping[str, Any], *,
                   where: str) -> BoundArguments:
    """Check ``kwargs`` against ``params`` and infer the size symbols.

    Raises :class:`~tensorir_dace.errors.ArgumentError` (naming the parameter,
    what was expected and what was given) for a missing or unknown argument,
    a wrong rank, shape, dtype or layout, an impossible or inconsistent size,
    or a scalar that cannot be converted without loss.  No argument is
    modified.  ``where`` prefixes every message (e.g. ``"program 'lap'"``).
    The SymPy work is done once per parameter list and cached.
    """
    return get_binder(params).bind(kwargs, where)


def check_size_constraints(constraints: Sequence[ir.SizeConstraint], symbols: dict[str, int],
                           where: str) -> None:
    """Raise ArgumentError when the call's sizes (or runtime bound values, in
    ``symbols`` too) break an order the program relies on."""
    for c in constraints:
        if c.loops or c.guard or c.bound is not None:
            _check_runtime(c, dict(symbols), 0, where)
            continue
        lo, hi = _eval_bound(c.lower, symbols), _eval_bound(c.upper, symbols)
        if lo is not None and hi is not None and lo > hi:
            sizes = ", ".join(f"{k}={v}" for k, v in sorted(symbols.items()))
            raise ArgumentError(f"{where}: the sizes ({sizes}) are too small for the "
                                f"{c.reason}: it needs {c.lower} <= {c.upper}")


def runtime_values(params: Sequence[ir.Param], values: Mapping[str, Any]) -> dict[str, int]:
    """The values of the scalar int parameters: they may be used as runtime bounds."""
    return {p.name: int(values[p.name]) for p in params
            if p.type.is_scalar and p.type.dtype in (ir.INT64, ir.INT32) and p.name in values}


_EVALUATORS: dict[sympy.Expr, tuple[tuple[str, ...], Callable[..., Any]]] = {}


def _plain(expr: sympy.Expr, subs: dict) -> sympy.Expr:
    """``expr.xreplace(subs)`` without evaluating ``Min``/``Max`` again: only
    evaluated here, and SymPy's pairwise comparison of their arguments is slow."""
    if not expr.args:
        return subs.get(expr, expr)
    args = [_plain(a, subs) for a in expr.args]
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return expr.func(*args, evaluate=False)
    return expr.func(*args)


def _eval_bound(expr: sympy.Expr, symbols: dict[str, int]) -> int | None:
    """A bound's value, or None when a symbol is unknown (cached compiled form)."""
    if expr.is_Integer:
        return int(expr)
    hit = _EVALUATORS.get(expr)
    if hit is None:
        names = tuple(sorted(s.name for s in expr.free_symbols))
        plain = {s: sympy.Symbol(s.name) for s in expr.free_symbols}
        fn = sympy.lambdify([sympy.Symbol(n) for n in names], _plain(expr, plain), "math")
        hit = _EVALUATORS[expr] = (names, fn)
    names, fn = hit
    try:
        return int(fn(*[symbols[n] for n in names]))
    except KeyError:
        return None


def _check_runtime(c: ir.SizeConstraint, symbols: dict[str, int], depth: int,
                   where: str) -> None:
    """One constraint on runtime bounds, for every iteration of its loops."""
    if depth < len(c.loops):
        var, start, stop = c.loops[depth]
        lo, hi = _eval_bound(start, symbols), _eval_bound(stop, symbols)
        if lo is None or hi is None:
            return
        for step in range(lo, hi):
            symbols[var] = step
            _check_runtime(c, symbols, depth + 1, where)
        return
    for g_lo, g_hi in c.guard:
        a, b = _eval_bound(g_lo, symbols), _eval_bound(g_hi, symbols)
        if a is None or b is None or a >= b:
            return          # an empty range reads and writes nothing
    lo, hi = _eval_bound(c.lower, symbols), _eval_bound(c.upper, symbols)
    if lo is None or hi is None or lo <= hi:
        return
    names = sorted({s.name for e in (c.lower, c.upper, *[x for g in c.guard for x in g])
                    for s in e.free_symbols if s.name in symbols})
    given = ", ".join(f"{n}={symbols[n]}" for n in names)
    if c.bound is None or c.allowed is None:
        raise ArgumentError(f"{where}: {c.reason} needs {c.lower} <= {c.upper}, which "
                            f"fails for {given}")
    value = _eval_bound(c.bound, symbols)
    alo, ahi = (_eval_bound(x, symbols) for x in c.allowed)
    # (a literal bound, such as a target's start 0, is named once)
    bound = f"{c.bound} = {value}" if sympy.sympify(c.bound).free_symbols else f"{value}"
    raise ArgumentError(f"{where}: the bound {bound} is outside its allowed "
                        f"range [{alo}, {ahi}] ({c.reason}; with {given}); a range "
                        "whose stop is not above its start is empty and allowed")


def merge_positional(params: Sequence[ir.Param], args: tuple, kwargs: dict[str, Any],
                     where: str) -> dict[str, Any]:
    """Keyword arguments with positional ones assigned in parameter order."""
    names = [p.name for p in params]
    if len(args) > len(names):
        raise ArgumentError(f"{where} takes {len(names)} arguments ({', '.join(names)}) "
                            f"but {len(args)} were given")
    merged = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in merged:
            raise ArgumentError(f"{where} got two values for parameter '{k}'")
        merged[k] = v
    return merged
