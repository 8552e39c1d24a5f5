"""Shifts, neighbour gathers and presence (``can_deref``) in the interpreter.

A mixin of :class:`~.evaluate.Evaluator`, kept apart because it is the one
concern that reads values through neighbour tables and offsets: Cartesian
shifts move intervals, unstructured and offset shifts gather with
``np.take``-style indexing, and :meth:`ShiftsMixin.presence` re-applies the
same shifts to boolean masks to find where a shifted value exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from .names import ELEMENTWISE, call_head, canonical_name
from .values import (
    Argument,
    CDims,
    Env,
    InterpreterError,
    Value,
    absent_fill,
    align,
    gather,
    make_value,
    map_leaves,
    shape_of,
)

__all__ = ["ShiftsMixin"]


def _false_fill(dtype: np.dtype) -> Any:
    """An absent neighbour of a presence mask: not present."""
    return np.False_


class ShiftsMixin:
    """Shift builtins and presence; the evaluator provides the methods below."""

    if TYPE_CHECKING:
        def eval(self, e: ir.Expr, env: Env) -> Value: ...

        def dims_of(self, t: ir.TensorType) -> CDims: ...

        def dim_of(self, d: ir.Dim) -> tuple[str, int, int]: ...

        def bind_lambda(self, lam: ir.Lambda, args, env: Env) -> Env: ...

    def c_cartesian_shift(self, e, env):
        v = self.eval(e.args[0], env)
        dname, off = e.func.args[0].name, e.func.args[1].value
        if off == 0:
            return v
        return Value(tuple((n, a - off, b - off) if n == dname else (n, a, b)
                           for n, a, b in v.dims), v.data)

    def _table(self, tbl: ir.Expr, dst_interval: tuple[str, int, int], env: Env,
               nb_name: str | None = None):
        """The table aligned to (Dst over ``dst_interval``, its neighbour dim)."""
        t = tbl.type
        nb = next(d for d in t.dims if d.is_neighbor)
        nb_c = self.dim_of(nb)
        data = align(self.eval(tbl, env), (dst_interval, nb_c), what="a neighbour table")
        return np.asarray(data), nb, nb_c

    def unstructured(self, e: ir.Call, x: Value, env: Env, fill=absent_fill) -> Value:
        """``unstructured_shift(T, k)`` applied to the value ``x``."""
        tbl, k = ir.head_args(e)
        dst = next(d for d in tbl.type.dims if not d.is_neighbor)
        nb = next(d for d in tbl.type.dims if d.is_neighbor)
        dst_c = next(d for d in self.dims_of(e.type) if d[0] == dst.name)
        table, _, (_, n0, _) = self._table(tbl, dst_c, env)
        col = table[:, ir.int_value(k) - n0]
        return gather(x, ir.neighbor_source_of(nb), col, (dst_c,), fill)

    def partial(self, e: ir.Call, x: Value, env: Env, fill=absent_fill) -> Value:
        """``shift_init(T)`` applied to the value ``x``."""
        (tbl,) = ir.head_args(e)
        dst = next(d for d in tbl.type.dims if not d.is_neighbor)
        nb = next(d for d in tbl.type.dims if d.is_neighbor)
        rdims = self.dims_of(e.type)
        dst_c = next(d for d in rdims if d[0] == dst.name)
        new_nb = ir.neighbor_axis(e.type).name
        table, _, (_, n0, n1) = self._table(tbl, dst_c, env)
        return gather(x, ir.neighbor_source_of(nb), table, (dst_c, (new_nb, n0, n1)), fill)

    def c_unstructured_shift(self, e, env):
        return self.unstructured(e, self.eval(e.args[0], env), env)

    def c_shift_init(self, e, env):
        return self.partial(e, self.eval(e.args[0], env), env)

    def offset_gather(self, e: ir.Call, x: Value, env: Env, fill=absent_fill) -> Value:
        """``offset_shift(K, off)`` applied to the value ``x``: ``x`` read at
        ``p + off[p]`` along K; targets outside ``x``'s interval are absent."""
        dim_e, off_e = ir.head_args(e)
        k = ir.sym_name(dim_e)
        R = self.dims_of(e.type)
        shape = shape_of(R)
        ai = [d[0] for d in R].index(k)
        _, r0, _ = R[ai]
        kdim = x.dim(k)
        assert kdim is not None   # the operand has the shifted dimension
        _, x0, x1 = kdim
        target = np.asarray(align(self.eval(off_e, env), R, what="a shift offset"))
        target = np.broadcast_to(target, shape) + (np.arange(shape[ai]) + r0).reshape(
            (-1,) + (1,) * (len(R) - ai - 1))
        rel = target.astype(np.int64) - x0
        valid = (rel >= 0) & (rel < x1 - x0)
        safe = np.where(valid, rel, 0)
        xdims = tuple((n, x0, x1) if n == k else d for d in R for n in (d[0],))
        full = shape[:ai] + (x1 - x0,) + shape[ai + 1:]

        def leaf(a: np.ndarray) -> np.ndarray:
            if x1 <= x0:
                return np.full(shape, fill(a.dtype), dtype=a.dtype)
            g = np.take_along_axis(np.broadcast_to(a, full), safe, axis=ai)
            return np.where(valid, g, fill(a.dtype))

        return Value(R, map_leaves(leaf, align(x, xdims, what="a shifted operand")))

    def c_offset_shift(self, e, env):
        return self.offset_gather(e, self.eval(e.args[0], env), env)

    def apply_index(self, e: ir.Call, x: Value) -> Value:
        """``shift_apply(k)`` applied to the value ``x``."""
        name = ir.neighbor_axis(e.args[0].type).name
        axis = x.names.index(name)
        start = x.dims[axis][1]
        (k,) = ir.head_args(e)
        idx = (slice(None),) * axis + (ir.int_value(k) - start,)
        return Value(x.dims[:axis] + x.dims[axis + 1:], map_leaves(lambda a: a[idx], x.data))

    def c_shift_apply(self, e, env):
        return self.apply_index(e, self.eval(e.args[0], env))

    # ------------------------------------------------------------------ masks

    def mask_present(self, d: ir.Dim, target: CDims, env: Env) -> np.ndarray | None:
        """Where neighbour ``d`` (a ``_NB_<n>`` dim with a mask) is present, as a
        bool array aligned to ``target`` (which contains ``d``)."""
        if d.mask is None:
            return None
        m = self.eval(d.mask, env)
        nb = [x.name for x in d.mask.type.dims if x.neighbor_source is not None]
        if len(nb) != 1:
            raise InterpreterError(f"the mask of {d.name} is not a neighbour table "
                                   f"({d.mask.type})")
        data = align(m, target, rename={nb[0]: d.name}, what=f"the mask of {d.name}")
        return np.asarray(data) >= 0

    def type_presence(self, t: ir.TensorType, env: Env) -> list[np.ndarray]:
        dims = self.dims_of(t)
        out: list[np.ndarray] = []
        for d in t.dims:
            if (present := self.mask_present(d, dims, env)) is not None:
                out.append(present)
        return out

    def presence(self, x: ir.Expr, env: Env) -> Value | None:
        """Where ``x``'s value is present (None: everywhere), over ``x``'s domain."""
        dims = self.dims_of(x.type)
        parts: list[np.ndarray] = self.type_presence(x.type, env)
        if isinstance(x, ir.Sym) and isinstance(bound := env.get(x.name), Argument):
            parts.append(align(bound.present, dims))
        if isinstance(x, ir.Call):
            f = x.func
            if isinstance(f, ir.Lambda):   # the body's, each parameter its argument's
                inner = self.presence(f.body, self.bind_lambda(f, x.args, env))
                if inner is not None:
                    parts.append(align(inner, dims))
            elif isinstance(f, ir.Call):
                head = call_head(f)
                name = canonical_name(head.name) if isinstance(head, ir.Sym) else None
                if name in ("unstructured_shift", "shift_init", "shift_apply") and x.args:
                    y = x.args[0]
                    inner = self.presence(y, env)
                    ydims = self.dims_of(y.type)
                    if inner is None:
                        if name == "shift_apply":
                            inner = None
                        else:
                            inner = Value(ydims, np.broadcast_to(np.True_, shape_of(ydims)))
                    if inner is not None:
                        if name == "unstructured_shift":
                            p = self.unstructured(x, inner, env, _false_fill)
                        elif name == "shift_init":
                            p = self.partial(x, inner, env, _false_fill)
                        else:
                            p = self.apply_index(x, inner)
                        parts.append(align(p, dims))
                elif name == "offset_shift" and x.args:
                    y = x.args[0]
                    inner = self.presence(y, env)
                    ydims = self.dims_of(y.type)
                    if inner is None:
                        inner = Value(ydims, np.broadcast_to(np.True_, shape_of(ydims)))
                    parts.append(align(self.offset_gather(x, inner, env, _false_fill), dims))
                    offset_present = self.presence(f.args[1], env)
                    if offset_present is not None:
                        parts.append(align(offset_present, dims))
                elif name == "cartesian_shift" and x.args:
                    inner = self.presence(x.args[0], env)
                    if inner is not None:
                        dname, off = ir.sym_name(f.args[0]), ir.int_value(f.args[1])
                        p = Value(tuple((n, a - off, b - off) if n == dname else (n, a, b)
                                        for n, a, b in inner.dims), inner.data)
                        parts.append(align(p, dims))
            elif isinstance(f, ir.Sym) and canonical_name(f.name) == "subset":
                inner = self.presence(x.args[0], env)
                if inner is not None:
                    parts.append(align(inner, dims))
            elif isinstance(f, ir.Sym) and canonical_name(f.name) == "if":
                chosen = self.select_presence(x, env)
                if chosen is not None:
                    parts.append(chosen)
            elif isinstance(f, ir.Sym) and (canonical_name(f.name) in ELEMENTWISE or canonical_name(
                    f.name) in ("if", "cast", "make_tuple", "tuple_get")):
                for a in x.args:
                    if isinstance(a.type, ir.TensorType):
                        pa = self.presence(a, env)
                        if pa is not None:
                            parts.append(align(pa, dims))
        if not parts:
            return None
        acc = parts[0]
        for part in parts[1:]:
            acc = np.logical_and(acc, part)
        return make_value(dims, acc)

    def select_presence(self, x: ir.Call, env: Env) -> np.ndarray | None:
        """``if(c, a, b)`` is present where ``c`` is and the branch it selects is:
        the absent value of the other branch is never used."""
        dims = self.dims_of(x.type)
        c, a, b = x.args
        pc, pa, pb = (self.presence(y, env) if isinstance(y.type, ir.TensorType) else None
                      for y in (c, a, b))
        if pa is None and pb is None:
            return None if pc is None else align(pc, dims)
        true = np.True_
        chosen = np.where(align(self.eval(c, env), dims),
                          true if pa is None else align(pa, dims),
                          true if pb is None else align(pb, dims))
        return chosen if pc is None else np.logical_and(align(pc, dims), chosen)

    def b_can_deref(self, e, env):
        dims = self.dims_of(e.type)
        p = self.presence(e.args[0], env)
        if p is None:
            return make_value(dims, np.True_)
        return make_value(dims, align(p, dims))
