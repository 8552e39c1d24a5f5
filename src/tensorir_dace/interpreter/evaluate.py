"""Evaluation of typed Tensor IR expressions and statements on NumPy.

Every typed expression is evaluated to a :class:`~.values.Value` that covers
(at least, and for element-wise builtins exactly) the domain of its type,
with the size symbols substituted.  Element-wise builtins align their
operands to the node's domain (:func:`~.values.align`: views) and apply one
NumPy ufunc; Cartesian shifts only move intervals (no copy); unstructured
shifts are one ``np.take`` each.  The only Python loops are over statements,
for-loop iterations, scan levels and reduce neighbours.  Shifts and presence
live in :mod:`.shifts`, builtin names in :mod:`.names`.

Numerical conventions (DESIGN.md §2, and the decisions below):

* Element types are kept exactly (float32 stays float32): every result is
  cast to the node's NumPy dtype.
* Integer ``divides`` truncates toward zero and integer ``mod`` takes the
  sign of the dividend (C semantics).  Integer division or modulo by zero is
  defined here as ``0`` (in C it is undefined; compiled code may differ).
  Float ``mod`` is ``fmod`` (sign of the dividend, as C's ``fmod``), float
  ``divides`` follows IEEE.  The builtin ``fmod`` is ``mod`` under GT4Py's
  name (NumPy's ``np.fmod``: for ints the same truncating remainder).
* ``gamma`` is C's ``tgamma``: ±inf at ±0, NaN at negative integers and
  -inf, ±inf on overflow; computed in double precision for float32 too.
* Integer ``power`` is exact integer power (wrapping on overflow); a negative
  exponent gives the truncated value of ``1 / a**|b|``: ``1`` for ``a == 1``,
  ``±1`` for ``a == -1``, else ``0`` (also for ``a == 0``).
* ``minimum``/``maximum`` propagate NaN (``np.minimum``/``np.maximum``).
* Floating-point warnings (overflow, invalid, division by zero) are
  suppressed: IEEE results (inf, NaN) are the answer.
* An absent neighbour (negative table entry, or an entry outside the
  operand's interval) reads as NaN for floats, the minimum value for ints
  and False for bools; it is never used as an index.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import intervals as iv
from .. import ir
from ..arguments import numpy_dtype
from ..errors import ArgumentError
from ..typing.runtime import loop_sized
from .names import ELEMENTWISE, call_head, canonical_name
from .shifts import ShiftsMixin
from .values import (
    Argument,
    CDims,
    Env,
    InterpreterError,
    Value,
    absent_names,
    align,
    full_like_dims,
    leaves,
    make_value,
    map_leaves,
    map_leaves2,
    restrict,
    shape_of,
)

# --------------------------------------------------------------------------- arithmetic


def _int_divides(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero; division by zero gives 0."""
    zero = b == 0
    bs = np.where(zero, 1, b).astype(b.dtype, copy=False)
    q = np.floor_divide(a, bs)
    r = a - q * bs
    q = q + ((r != 0) & ((a < 0) != (bs < 0))).astype(q.dtype)
    return np.where(zero, 0, q).astype(q.dtype, copy=False)


def _int_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer remainder with the sign of the dividend; modulo zero gives 0."""
    zero = b == 0
    bs = np.where(zero, 1, b).astype(b.dtype, copy=False)
    r = np.fmod(a, bs)
    return np.where(zero, 0, r).astype(r.dtype, copy=False)


def _int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact integer power; negative exponents truncate 1 / a**|b| (see module doc)."""
    neg = b < 0
    if not np.any(neg):
        return np.power(a, b)
    p = np.power(a, np.where(neg, 0, b).astype(b.dtype, copy=False))
    odd = (b % 2) != 0
    negres = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
    return np.where(neg, negres, p).astype(p.dtype, copy=False)


def _gamma_scalar(x: float) -> float:
    """C's ``tgamma``: ``math.gamma`` where it is defined; ±inf at ±0, NaN at the
    negative integers and at -inf, and ±inf where the result overflows."""
    try:
        return math.gamma(x)
    except OverflowError:     # x > ~171.6, or a tiny negative x near a pole
        return math.inf if x > 0 or math.floor(x) % 2 == 0 else -math.inf
    except ValueError:        # a pole (0, a negative integer) or -inf
        return math.copysign(math.inf, x) if x == 0 else math.nan


_gamma_ufunc = np.frompyfunc(_gamma_scalar, 1, 1)


def _gamma(a: np.ndarray) -> np.ndarray:
    """The gamma function element-wise (NumPy has none): computed in double
    precision, rounded once to the operand's type."""
    return np.asarray(_gamma_ufunc(a.astype(np.float64, copy=False)), dtype=np.float64) \
        .astype(a.dtype, copy=False)


_FLOAT_BINARY: dict[str, Callable] = {
    "plus": np.add, "minus": np.subtract, "multiplies": np.multiply,
    "divides": np.true_divide, "mod": np.fmod, "power": np.power,
    "minimum": np.minimum, "maximum": np.maximum, "arctan2": np.arctan2, "fmod": np.fmod,
}
_INT_BINARY: dict[str, Callable] = {
    "plus": np.add, "minus": np.subtract, "multiplies": np.multiply,
    "divides": _int_divides, "mod": _int_mod, "power": _int_power,
    "minimum": np.minimum, "maximum": np.maximum, "fmod": _int_mod,
}
_OTHER: dict[str, Callable] = {
    "eq": np.equal, "neq": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "and": np.logical_and, "or": np.logical_or, "not": np.logical_not,
    "neg": np.negative, "abs": np.absolute, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
    "log10": np.log10, "log2": np.log2, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "arcsinh": np.arcsinh, "arccosh": np.arccosh,
    "arctanh": np.arctanh, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "cbrt": np.cbrt, "gamma": _gamma,
    "isfinite": np.isfinite, "isnan": np.isnan, "isinf": np.isinf,
}


def _at_last(k: int) -> Callable[[np.ndarray], np.ndarray]:
    """Element ``k`` along the last axis of an array."""
    return lambda a: a[..., k]


def _zeros(dims: Any, dt: np.dtype) -> np.ndarray:
    return np.zeros(shape_of(dims), dtype=dt)



def _dtype_data(dtype: ir.ElementType, make: Callable[[np.dtype], np.ndarray]) -> Any:
    """A (nested) tuple of ``make(np dtype)`` following the element type."""
    if isinstance(dtype, ir.ScalarType):
        return make(numpy_dtype(dtype))
    return tuple(_dtype_data(e, make) for e in dtype.elements)


def _reduce_masks(types: list[ir.TensorType], axis: str) -> list[ir.Dim]:
    """The masked dimensions a reduce over ``axis`` consults, element by element:
    the axis itself and every neighbour dimension whose mask depends on it."""
    return [d for t in types for d in t.dims if d.mask is not None and (
        d.name == axis or axis in d.mask.type.dim_names)]


# --------------------------------------------------------------------------- evaluator


class Evaluator(ShiftsMixin):
    """Evaluates typed expressions and statements for one set of size symbols.

    Shifts, gathers and presence (``can_deref``) come from :class:`~.shifts.ShiftsMixin`.
    """

    def __init__(self, symbols: dict[str, int]):
        self.symbols = symbols
        self._dims: dict[int, tuple[ir.TensorType, CDims]] = {}
        self._bounds: dict[Any, int] = {}
        self._concat_axes: dict[int, tuple[ir.Expr, str | None, tuple[ir.Expr, ...]]] = {}
        # temporaries sized by loop variables, with those variables: made anew in
        # every iteration of the innermost of their loops
        self.loop_temporaries: dict[str, tuple[ir.Param, tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ domains

    def bound(self, b) -> int:
        if b.is_Integer:
            return int(b)
        r = self._bounds.get(b)
        if r is None:
            r = self._bounds[b] = iv.evaluate(b, self.symbols)
        return r

    def dims_of(self, t: ir.TensorType) -> CDims:
        """The concrete dims of a type (cached per type object)."""
        hit = self._dims.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        dims = tuple(self.dim_of(d) for d in t.dims)
        self._dims[id(t)] = (t, dims)
        return dims

    def dim_of(self, d: ir.Dim) -> tuple[str, int, int]:
        """``(name, start, stop)``; a runtime range with ``stop <= start`` is empty."""
        start, stop = self.bound(d.start), self.bound(d.stop)
        return (d.name, start, max(start, stop))

    def set_runtime(self, name: str, value: int) -> None:
        """A loop variable's new value: bounds that use it change."""
        self.symbols[name] = value
        self._bounds.clear()
        self._dims.clear()

    # ------------------------------------------------------------------ expressions

    def eval(self, e: ir.Expr, env: Env) -> Value:
        if type(e) is ir.Sym:
            try:
                return env[e.name]
            except KeyError:
                raise InterpreterError(f"unbound name '{e.name}'", e.loc) from None
        if type(e) is ir.Literal:
            dt = numpy_dtype(ir.scalar_dtype(e.type))
            try:
                return Value((), np.asarray(e.value, dtype=dt))
            except OverflowError:
                return Value((), np.asarray(e.value).astype(dt))
        if type(e) is ir.Call:
            f = e.func
            if type(f) is ir.Sym:
                name = canonical_name(f.name)
                if name in ELEMENTWISE:
                    return self.elementwise(e, name, env)
                method = getattr(self, "b_" + str(name), None)
                if method is None:
                    raise InterpreterError(f"unsupported builtin '{f.name}'", e.loc)
                return method(e, env)
            if type(f) is ir.Lambda:
                return self.apply_lambda(f, e.args, env)
            if type(f) is ir.Call:
                head = call_head(f)
                name = canonical_name(head.name) if isinstance(head, ir.Sym) else None
                method = getattr(self, "c_" + str(name), None)
                if method is None:
                    raise InterpreterError(f"unsupported curried call of {head}", e.loc)
                return method(e, env)
        raise InterpreterError(f"cannot evaluate {type(e).__name__}", e.loc)

    def elementwise(self, e: ir.Call, name: str, env: Env) -> Value:
        dims = self.dims_of(e.type)
        args = [align(self.eval(a, env), dims) for a in e.args]
        fn = _OTHER.get(name)
        if fn is None:
            operand = ir.scalar_dtype(e.args[0].type)
            fn = (_FLOAT_BINARY if operand.is_float else _INT_BINARY)[name]
        out = np.asarray(fn(*args))
        dt = numpy_dtype(ir.scalar_dtype(e.type))
        if out.dtype != dt:
            out = out.astype(dt)
        return make_value(dims, out)

    def apply_lambda(self, lam: ir.Lambda, args, env: Env) -> Value:
        return self.eval(lam.body, self.bind_lambda(lam, args, env))

    def bind_lambda(self, lam: ir.Lambda, args, env: Env) -> Env:
        """The environment of an applied lambda's body: each parameter bound to
        its argument's value, and, where the argument can be absent beyond its
        masks, to its presence as well (an :class:`~.values.Argument`)."""
        absent = absent_names(env)
        child = dict(env)
        for p, a in zip(lam.params, args):
            v = restrict(self.eval(a, env), self.dims_of(p.type), what=f"argument '{p.name}'")
            if ir.absent_beyond_masks(a, absent) and (pa := self.presence(a, env)) is not None:
                v = Argument(v, pa)
            child[p.name] = v
        return child

    # ------------------------------------------------------------------ simple builtins

    def b_cast(self, e, env):
        dims = self.dims_of(e.type)
        dt = numpy_dtype(e.type.dtype)
        x = align(self.eval(e.args[0], env), dims)
        return make_value(dims, np.asarray(x).astype(dt))

    def b_if(self, e, env):
        dims = self.dims_of(e.type)
        c, a, b = (align(self.eval(x, env), dims) for x in e.args)
        return make_value(dims, map_leaves2(lambda x, y: np.where(c, x, y), a, b))

    def b_make_tuple(self, e, env):
        dims = self.dims_of(e.type)
        return make_value(dims, tuple(align(self.eval(a, env), dims) for a in e.args))

    def b_tuple_get(self, e, env):
        v = self.eval(e.args[0], env)
        return Value(v.dims, v.data[e.args[1].value])

    def b_subset(self, e, env):
        return restrict(self.eval(e.args[0], env), self.dims_of(e.type))

    def b_pos(self, e, env):
        dims = self.dims_of(e.type)
        (_, a, b), = dims
        return Value(dims, np.arange(a, b, dtype=np.int64))

    def b_add_dim(self, e, env):
        dims = self.dims_of(e.type)
        return make_value(dims, align(self.eval(e.args[3], env), dims))

    def b_concat(self, e, env):
        dims = self.dims_of(e.type)
        axis, pieces = self.concat_axis(e)
        if axis is None or len(pieces) == 1:
            return restrict(self.eval(pieces[0], env), dims)
        out = _dtype_data(e.type.dtype, lambda dt: np.empty(shape_of(dims), dtype=dt))
        ai = [d[0] for d in dims].index(axis)
        a0 = dims[ai][1]
        for piece in pieces:
            _, s, t = self.dim_of(ir.required_dim(piece.type, axis))
            if s >= t:
                continue     # an empty piece is never evaluated
            part = tuple((n, s, t) if n == axis else (n, a, b) for n, a, b in dims)
            data = align(self.eval(piece, env), part, what="a concat piece")
            idx = (slice(None),) * ai + (slice(s - a0, t - a0),)
            for o, x in zip(leaves(out), leaves(data)):
                o[idx] = x
        return Value(dims, out)

    def concat_axis(self, e: ir.Call) -> tuple[str | None, tuple[ir.Expr, ...]]:
        hit = self._concat_axes.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1], hit[2]
        args = e.args
        if args and isinstance(args[0], ir.Sym) and args[0].type is None:
            axis, pieces = args[0].name, tuple(args[1:])
        else:
            pieces = tuple(args)
            axis = None
            types = [p.type for p in pieces]
            if len(types) > 1:
                for d in types[0].dims:
                    ds = [x for t in types if (x := t.dim(d.name)) is not None]
                    if len(ds) == len(types) and all(
                            iv.equal(a.stop, b.start) for a, b in itertools.pairwise(ds)):
                        axis = d.name
                        break
                if axis is None:
                    raise InterpreterError("concat: cannot find the concatenation axis", e.loc)
        self._concat_axes[id(e)] = (e, axis, pieces)
        return axis, pieces

    # ------------------------------------------------------------------ reduce / scan

    def c_reduce(self, e, env):
        lam, init_e = e.func.args[:2]
        types = [a.type for a in e.args]
        axis = ir.reduce_axis(e)
        R = self.dims_of(e.type)
        intervals = [self.dim_of(t.dim(axis)) for t in types if t.dim(axis) is not None]
        a0 = max(i[1] for i in intervals)
        a1 = max(min(i[2] for i in intervals), a0)
        ax = (axis, a0, a1)
        vals = [self.eval(a, env) for a in e.args]
        prepared = []
        for p, v, t in zip(lam.params[1:], vals, types):
            pd = self.dims_of(p.type)
            if t.dim(axis) is not None:
                prepared.append((p.name, pd, align(v, pd + (ax,), what=f"operand '{p.name}'"),
                                 True))
            else:
                prepared.append((p.name, pd, restrict(v, pd).data, False))
        present = None
        for d in _reduce_masks(types, axis):
            m = self.mask_present(d, R + (ax,), env)
            present = m if present is None else present & m
        absent = absent_names(env)
        for a, t in zip(e.args, types):   # absent through full or offset shifts
            if t.dim(axis) is not None and ir.absent_beyond_masks(a, absent):
                pa = self.presence(a, env)
                if pa is not None:
                    m = np.asarray(align(pa, R + (ax,), what="an operand's presence"))
                    present = m if present is None else present & m
        acc = full_like_dims(R, self.eval(init_e, env).data)
        acc_name, acc_dims = lam.params[0].name, self.dims_of(lam.params[0].type)
        child = dict(env)
        for j in range(a1 - a0):
            child[acc_name] = restrict(Value(R, acc), acc_dims, what="the accumulator")
            for name, pd, data, has in prepared:
                child[name] = Value(pd, map_leaves(_at_last(j), data) if has else data)
            new = align(self.eval(lam.body, child), R, what="the reduce lambda's result")
            if present is not None:
                pj = present[..., j]
                new = map_leaves2(functools.partial(np.where, pj), new, acc)
            acc = make_value(R, new).data
        return Value(R, acc)

    def c_scan(self, e, env):
        lam, forward, init_e, axis_e = e.func.args
        axis = axis_e.name
        R = self.dims_of(e.type)
        ai = [d[0] for d in R].index(axis)
        _, a0, a1 = R[ai]
        ax = (axis, a0, a1)
        rest = R[:ai] + R[ai + 1:]
        vals = [self.eval(a, env) for a in e.args]
        prepared = []
        for p, v, a in zip(lam.params[1:], vals, e.args):
            pd = self.dims_of(p.type)
            if a.type.dim(axis) is not None:
                prepared.append((p.name, pd, align(v, pd + (ax,), what=f"operand '{p.name}'"),
                                 True))
            else:
                prepared.append((p.name, pd, restrict(v, pd).data, False))
        out = _dtype_data(e.type.dtype, lambda dt: np.empty(shape_of(R), dtype=dt))
        out_leaves = leaves(out)
        state_name, state_dims = lam.params[0].name, self.dims_of(lam.params[0].type)
        state = Value(state_dims, full_like_dims(state_dims, self.eval(init_e, env).data))
        child = dict(env)
        levels = range(a1 - a0) if forward.value else range(a1 - a0 - 1, -1, -1)
        for k in levels:
            child[state_name] = state
            for name, pd, data, has in prepared:
                child[name] = Value(pd, map_leaves(_at_last(k), data) if has else data)
            body = self.eval(lam.body, child)
            level = align(body, rest, what="the scan lambda's result")
            idx = (slice(None),) * ai + (k,)
            for o, x in zip(out_leaves, leaves(level)):
                o[idx] = x
            state = restrict(body, state_dims, what="the scan state")
        return Value(R, out)

    # ------------------------------------------------------------------ statements

    def run(self, stmts, env: Env, storage: dict[str, Value]) -> None:
        for s in stmts:
            t = type(s)
            if t is ir.Assign:
                self.assign(s, env, storage)
            elif t is ir.IfStmt:
                c = self.eval(s.cond, env)
                self.run(s.then_body if bool(np.asarray(c.data)) else s.else_body, env,
                         storage)
            elif t is ir.ForStmt:
                start = int(np.asarray(self.eval(s.start, env).data))
                stop = int(np.asarray(self.eval(s.stop, env).data))
                child = dict(env)
                for i in range(start, stop):
                    child[s.var] = Value((), np.asarray(i, dtype=np.int64))
                    self.set_runtime(s.var, i)
                    self.allocate_loop_temporaries(s.var, child, storage)
                    self.run(s.body, child, storage)
            else:
                raise InterpreterError(f"unknown statement {t.__name__}", s.loc)

    def allocate_loop_temporaries(self, var: str, env: Env, storage: dict[str, Value]
                                  ) -> None:
        """New storage for the temporaries sized by ``var`` (and by loop variables
        already bound): their extent is that of this iteration."""
        for name, (tmp, loops) in self.loop_temporaries.items():
            if var in loops and all(v in env for v in loops):
                env[name] = storage[name] = _allocate(tmp.type, self.dims_of(tmp.type))

    def assign(self, s: ir.Assign, env: Env, storage: dict[str, Value]) -> None:
        target = s.target
        name = ir.sym_name(target.args[0] if isinstance(target, ir.Call) else target)
        store = storage[name]
        tdims = {d[0]: d for d in self.dims_of(target.type)}
        # The written region, in the storage's dimension order.
        region = tuple(tdims[n] for n, _, _ in store.dims)
        if any(a >= b for _, a, b in region):
            return      # an empty range: nothing is read or written
        value = self.eval(s.value, env)
        data = align(value, region, what=f"the value assigned to '{name}'")
        idx = tuple(slice(a - sa, b - sa) for (_, a, b), (_, sa, _) in zip(region, store.dims))
        dst = leaves(store.data)
        src = leaves(data)
        # The value is complete before anything is written: copy what aliases the target.
        src = [np.array(x) if any(np.may_share_memory(x, d) for d in dst) else x for x in src]
        for d, x in zip(dst, src):
            d[idx] = x


def _allocate(t: ir.TensorType, dims: CDims) -> Value:
    """Zero-initialised storage of a temporary."""
    return Value(dims, _dtype_data(t.dtype, functools.partial(_zeros, dims)))


def interpret_program(typed: ir.Program, values: dict[str, Any], symbols: dict[str, int]
                      ) -> None:
    """Run a typed program on bound arguments (arrays written in place)."""
    ev = Evaluator(symbols)
    env: Env = {}
    storage: dict[str, Value] = {}
    sized = loop_sized(typed)
    ev.loop_temporaries = {t.name: (t, sized[t.name]) for t in typed.temporaries
                           if t.name in sized}
    # Temporaries first: everything that can go wrong is found before any write.
    tmp_dims = {}
    for tmp in typed.temporaries:
        if tmp.name in sized:
            continue
        try:
            dims = ev.dims_of(tmp.type)
        except KeyError as ex:
            raise ArgumentError(f"program '{typed.name}': the size symbol {ex} of temporary "
                                f"'{tmp.name}' ({tmp.type}) is not determined by the "
                                "parameters' shapes") from None
        for n, a, b in dims:
            if b < a:
                raise ArgumentError(f"program '{typed.name}': temporary '{tmp.name}' "
                                    f"({tmp.type}) would have a negative extent {b - a} "
                                    f"along {n} for sizes {symbols}")
        tmp_dims[tmp.name] = dims
    for name, v in symbols.items():
        env[name] = Value((), np.asarray(v, dtype=np.int64))
    for p in typed.params:
        v = values[p.name]
        if p.type.is_scalar:
            env[p.name] = Value((), map_leaves(np.asarray, v))
        else:
            env[p.name] = storage[p.name] = Value(ev.dims_of(p.type), v)
    for tmp in typed.temporaries:
        if tmp.name in tmp_dims:
            env[tmp.name] = storage[tmp.name] = _allocate(tmp.type, tmp_dims[tmp.name])
    with np.errstate(all="ignore"):
        ev.run(typed.body, env, storage)


__all__ = ["ELEMENTWISE", "Evaluator", "interpret_program"]
