"""Typing rules of the shifts: Cartesian, unstructured (full and partial), shift_apply."""

from __future__ import annotations

from dataclasses import replace

from .. import intervals as iv
from .. import ir
from .rules import Rules
from .scope import Scope
from .util import name_of, shift_mask


class ShiftRules(Rules):
    """Mixin of :class:`~.checker.Checker`."""

    def c_shift(self, e, func, scope, expected):
        """The general shift ⟪…⟫(x): dispatch to Cartesian and unstructured shifts."""
        items = list(func.args)
        if len(e.args) != 1:
            raise self.error(e, "a shift is applied to exactly one tensor")
        steps: list[tuple[str, tuple[ir.Expr, ...]]] = []
        i = 0
        while i < len(items):
            a = items[i]
            nxt = items[i + 1] if i + 1 < len(items) else None
            is_offset = isinstance(nxt, ir.Literal) and nxt.kind == "int"
            bound = scope.lookup(a.name) if isinstance(a, ir.Sym) else None
            if bound is not None and bound.type.dims:
                if is_offset:
                    assert nxt is not None
                    steps.append(("unstructured_shift", (a, nxt)))
                    i += 2
                else:
                    steps.append(("shift_init", (a,)))
                    i += 1
            else:
                if not is_offset:
                    raise self.error(a, "a Cartesian shift needs a dimension and an integer "
                                        "offset: ⟪I, 1⟫")
                assert nxt is not None
                if steps and steps[-1][0] == "cartesian_shift":
                    steps[-1] = ("cartesian_shift", steps[-1][1] + (a, nxt))
                else:
                    steps.append(("cartesian_shift", (a, nxt)))
                i += 2
        if not steps:
            raise self.error(func, "an empty shift ⟪⟫ is not allowed")
        result = e.args[0]
        for name, args in reversed(steps):
            result = ir.Call(ir.Call(ir.Sym(name, loc=func.loc), args, loc=func.loc),
                             (result,), loc=e.loc)
        return self.expr(result, scope, expected)

    def c_cartesian_shift(self, e, func, scope, expected):
        items = func.args
        if len(items) % 2 or not items:
            raise self.error(func, "cartesian_shift takes pairs of dimension and offset")
        if len(e.args) != 1:
            raise self.error(e, "a shift is applied to exactly one tensor")
        pairs: dict[str, int] = {}
        for d, o in zip(items[::2], items[1::2]):
            if not (isinstance(o, ir.Literal) and o.kind == "int"):
                raise self.error(o, "a Cartesian shift offset must be an integer literal")
            name = self.resolve_dim(d, "a Cartesian shift")
            pairs[name] = pairs.get(name, 0) + int(o.value)
        x = self.expr(e.args[0], scope, expected)
        for name, offset in pairs.items():
            t = self.tensor(x)
            dims = tuple(iv.shifted(d, offset) if d.name == name else d for d in t.dims)
            dims = tuple(shift_mask(d, name, offset) for d in dims)
            head = ir.Call(ir.Sym("cartesian_shift", loc=func.loc),
                           (ir.Sym(name, loc=func.loc),
                            ir.Literal(offset, loc=func.loc, type=ir.TensorType(ir.INT64))),
                           loc=func.loc)
            x = ir.Call(head, (x,), loc=e.loc, type=replace(t, dims=dims))
        return x

    def table(self, a: ir.Expr, scope: Scope) -> tuple[ir.Expr, ir.Dim, ir.Dim]:
        """A neighbour table: (typed expr, destination dim, _NB_<Src> dim)."""
        t_expr = self.expr(a, scope)
        t = self.tensor(t_expr)
        nb = [d for d in t.dims if d.neighbor_source is not None]
        dst = [d for d in t.dims if not d.is_neighbor]
        if len(t.dims) != 2 or len(nb) != 1 or len(dst) != 1 or \
                not (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int):
            raise self.error(a, f"a neighbour table must be an int tensor with one "
                                f"dimension and one _NB_<Source> dimension, got {t}")
        return t_expr, dst[0], nb[0]

    def unstructured_operand(self, e, x: ir.Expr, src: str | None,
                             table_name: str) -> ir.TensorType:
        t = self.tensor(x)
        if src is None or t.dim(src) is None:
            raise self.error(e, f"shifting with {table_name} needs an operand with dimension "
                                f"{src}, got {t}")
        for d in t.dims:
            if d.mask is not None and src in self.tensor(d.mask).dim_names:
                raise self.error(e, f"cannot shift along {src}: the neighbour dimension "
                                    f"{d.name} depends on it; reduce {d.name} first")
        return t

    def c_shift_init(self, e, func, scope, expected):
        if len(func.args) != 1 or len(e.args) != 1:
            raise self.error(e, "shift_init takes a neighbour table: shift_init(V2E)(x)")
        tbl, dst, nb = self.table(func.args[0], scope)
        x = self.expr(e.args[0], scope, expected)
        t = self.unstructured_operand(e, x, nb.neighbor_source, name_of(func.args[0]))
        counter = 1 + max((d.neighbor_counter for d in t.dims
                           if d.neighbor_counter is not None), default=-1)
        new_nb = ir.Dim(f"_NB_{counter}", nb.start, nb.stop, mask=tbl)
        dims: list[ir.Dim] = []
        for d in t.dims:
            if d.name == nb.neighbor_source:
                dims += [dst, new_nb]
            elif d.name == dst.name:
                continue
            else:
                dims.append(d)
        other = t.dim(dst.name)
        if other is not None and dst.name != nb.neighbor_source:
            dims = [self.decide(e, lambda: iv.intersect(dst, other)) if d.name == dst.name
                    else d for d in dims]
        return replace(e, func=replace(func, args=(tbl,)), args=(x,),
                       type=ir.TensorType(t.dtype, tuple(dims)))

    def c_unstructured_shift(self, e, func, scope, expected):
        if len(func.args) != 2 or len(e.args) != 1 or not (
                isinstance(func.args[1], ir.Literal) and func.args[1].kind == "int"):
            raise self.error(e, "unstructured_shift takes a table and a neighbour index: "
                                "⟪E2V, 0⟫(x)")
        tbl, dst, nb = self.table(func.args[0], scope)
        k = int(func.args[1].value)
        self.check_neighbor_index(func.args[1], k, nb)
        x = self.expr(e.args[0], scope, expected)
        t = self.unstructured_operand(e, x, nb.neighbor_source, name_of(func.args[0]))
        dims = []
        other = t.dim(dst.name) if dst.name != nb.neighbor_source else None
        for d in t.dims:
            if d.name == nb.neighbor_source:
                dims.append(self.decide(e, lambda: iv.intersect(dst, other)) if other else dst)
            elif d.name != dst.name:
                dims.append(d)
        index = replace(func.args[1], type=ir.TensorType(ir.INT64))
        return replace(e, func=replace(func, args=(tbl, index)), args=(x,),
                       type=ir.TensorType(t.dtype, tuple(dims)))

    def check_neighbor_index(self, node, k: int, nb: ir.Dim) -> None:
        if k < 0 or (nb.start.is_Integer and nb.stop.is_Integer
                     and not int(nb.start) <= k < int(nb.stop)):
            raise self.error(node, f"neighbour index {k} is outside {nb}")

    def c_shift_apply(self, e, func, scope, expected):
        if len(func.args) != 1 or len(e.args) != 1 or not (
                isinstance(func.args[0], ir.Literal) and func.args[0].kind == "int"):
            raise self.error(e, "shift_apply takes a neighbour index: shift_apply(0)(x)")
        x = self.expr(e.args[0], scope, expected)
        t = self.tensor(x)
        nb = t.highest_neighbor
        if nb is None:
            raise self.error(e, f"shift_apply needs a tensor with a _NB_<n> dimension, got {t}")
        self.check_neighbor_index(func.args[0], int(func.args[0].value), nb)
        index = replace(func.args[0], type=ir.TensorType(ir.INT64))
        return replace(e, func=replace(func, args=(index,)), args=(x,),
                       type=ir.TensorType(t.dtype, tuple(d for d in t.dims if d is not nb)))
