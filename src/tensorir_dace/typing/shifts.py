"""Typing rules of the shifts: Cartesian, unstructured (full and partial), shift_apply."""

from __future__ import annotations

from dataclasses import replace

from .. import intervals as iv
from .. import ir
from .rules import Rules
from .scope import Scope
from .util import name_of, offset_text, shift_mask


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
                if nxt is not None and not is_offset and not self.is_table(nxt, scope):
                    steps.append(("offset_shift", (a, nxt)))
                    i += 2
                    continue
                if not is_offset:
                    raise self.error(a, "a Cartesian shift needs a dimension and an integer "
                                        "offset: ⟪I, 1⟫ (or an integer tensor: ⟪K, off⟫)")
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

    @staticmethod
    def is_table(a: ir.Expr, scope: Scope) -> bool:
        """A name bound to a tensor with dimensions (a neighbour table in a shift)."""
        bound = scope.lookup(a.name) if isinstance(a, ir.Sym) else None
        return bound is not None and bool(bound.type.dims) and any(
            d.neighbor_source is not None for d in bound.type.dims)

    def c_offset_shift(self, e, func, scope, expected):
        """⟪K, off⟫(x) with an integer tensor ``off``: result[p] = x[p + off[p]·e_K],
        on ``off``'s domain intersected with ``x``'s other dimensions; targets
        outside ``x``'s interval of K are absent neighbours."""
        if len(func.args) != 2 or len(e.args) != 1:
            raise self.error(e, "offset_shift takes a dimension and an integer tensor: "
                                "⟪K, off⟫(x)")
        dim_e, off_e = func.args
        name = self.resolve_dim(dim_e, "a data-dependent shift")
        off = self.expr(off_e, scope, ir.INT64)
        ot = self.tensor(off)
        if not (isinstance(ot.dtype, ir.ScalarType) and ot.dtype.is_int):
            raise self.error(off_e, f"the offset {offset_text(off_e)} of a shift along {name} "
                                    f"must be an integer tensor (int32 or int64), got {ot}; "
                                    f"convert it with cast(…, int32)")
        x = self.expr(e.args[0], scope, expected)
        t = self.tensor(x)
        kd = t.dim(name)
        if kd is None:
            raise self.error(e, f"a shift along {name} by {offset_text(off_e)} needs an "
                                f"operand with dimension {name}, got {t}")
        for d in t.dims + ot.dims:
            if d.mask is not None and name in self.tensor(d.mask).dim_names:
                raise self.error(e, f"cannot shift along {name} by {offset_text(off_e)}: the "
                                    f"neighbour dimension {d.name} depends on {name}; reduce "
                                    f"{d.name} first")
        dims: list[ir.Dim] = []
        for d in t.dims:
            od = ot.dim(d.name)
            if d.name == name:
                dims.append(replace(od if od is not None else d, mask=None))
            elif od is not None:
                dims.append(self.broadcast(e, [ir.TensorType(ir.BOOL, (d,)),
                                               ir.TensorType(ir.BOOL, (od,))])[0])
            else:
                dims.append(d)
        dims += [d for d in ot.dims if t.dim(d.name) is None]
        head = replace(func, args=(replace(dim_e, name=name), off))
        return replace(e, func=head, args=(x,), type=ir.TensorType(t.dtype, tuple(dims)))

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

    def unstructured_operand(self, e, x: ir.Expr, src: str | None, dst: str,
                             table_name: str) -> ir.TensorType:
        """The operand's type: it has the table's source dimension, or neither the
        source nor the destination dimension (a value constant along the source,
        read the same at every neighbour; one over the destination but not the
        source is more likely a slip than a broadcast)."""
        t = self.tensor(x)
        if src is None or (t.dim(src) is None and t.dim(dst) is not None):
            raise self.error(e, f"shifting with {table_name} needs an operand with dimension "
                                f"{src}, got {t}")
        return t

    def partial_dims(self, e, t: ir.TensorType, dst: ir.Dim, nb: ir.Dim,
                     new_nb: ir.Dim) -> tuple[ir.Dim, ...]:
        """The dimensions of ``t`` after a partial shift: Dst and the new ``_NB_<n>``
        where the source dimension was."""
        dims: list[ir.Dim] = []
        if t.dim(ir.neighbor_source_of(nb)) is None:    # constant along the source
            dims += [dst, new_nb]
        for d in t.dims:
            if d.name == nb.neighbor_source:
                dims += [dst, new_nb]
            elif d.name != dst.name:
                dims.append(d)
        other = t.dim(dst.name)
        if other is not None and dst.name != nb.neighbor_source:
            dims = [self.decide(e, lambda: iv.intersect(dst, other)) if d.name == dst.name
                    else d for d in dims]
        return tuple(dims)

    def full_dims(self, e, t: ir.TensorType, dst: ir.Dim, nb: ir.Dim) -> tuple[ir.Dim, ...]:
        """The dimensions of ``t`` after a full shift: Dst where the source was."""
        dims = []
        other = t.dim(dst.name) if dst.name != nb.neighbor_source else None
        if t.dim(ir.neighbor_source_of(nb)) is None:    # constant along the source
            dims.append(dst)
        for d in t.dims:
            if d.name == nb.neighbor_source:
                dims.append(self.decide(e, lambda: iv.intersect(dst, other)) if other else dst)
            elif d.name != dst.name:
                dims.append(d)
        return tuple(dims)

    def carry_masks(self, t: ir.TensorType, dims: tuple[ir.Dim, ...], src: str,
                    head: ir.Call, dims_of) -> tuple[ir.Dim, ...]:
        """Nested shifts: a neighbour mask that depends on the shifted dimension is
        shifted with the same table, so it stays a table seen from the result's
        coordinates (an absent outer neighbour makes it negative)."""
        out = []
        for d in dims:
            if d.mask is not None and t.dim(d.name) is not None and \
                    src in self.tensor(d.mask).dim_names:
                mt = self.tensor(d.mask)
                d = replace(d, mask=ir.Call(head, (d.mask,),
                                            type=ir.TensorType(mt.dtype, dims_of(mt))))
            out.append(d)
        return tuple(out)

    def c_shift_init(self, e, func, scope, expected):
        if len(func.args) != 1 or len(e.args) != 1:
            raise self.error(e, "shift_init takes a neighbour table: shift_init(V2E)(x)")
        tbl, dst, nb = self.table(func.args[0], scope)
        x = self.expr(e.args[0], scope, expected)
        t = self.unstructured_operand(e, x, nb.neighbor_source, dst.name, name_of(func.args[0]))
        counter = 1 + max((d.neighbor_counter for d in t.dims
                           if d.neighbor_counter is not None), default=-1)
        new_nb = ir.Dim(f"_NB_{counter}", nb.start, nb.stop, mask=tbl)
        head = replace(func, args=(tbl,))
        dims = self.carry_masks(t, self.partial_dims(e, t, dst, nb, new_nb),
                                ir.neighbor_source_of(nb), head,
                                lambda mt: self.partial_dims(e, mt, dst, nb, new_nb))
        return replace(e, func=head, args=(x,), type=ir.TensorType(t.dtype, dims))

    def c_unstructured_shift(self, e, func, scope, expected):
        if len(func.args) != 2 or len(e.args) != 1 or not (
                isinstance(func.args[1], ir.Literal) and func.args[1].kind == "int"):
            raise self.error(e, "unstructured_shift takes a table and a neighbour index: "
                                "⟪E2V, 0⟫(x)")
        tbl, dst, nb = self.table(func.args[0], scope)
        k = int(func.args[1].value)
        self.check_neighbor_index(func.args[1], k, nb)
        x = self.expr(e.args[0], scope, expected)
        t = self.unstructured_operand(e, x, nb.neighbor_source, dst.name, name_of(func.args[0]))
        index = replace(func.args[1], type=ir.TensorType(ir.INT64))
        head = replace(func, args=(tbl, index))
        dims = self.carry_masks(t, self.full_dims(e, t, dst, nb), ir.neighbor_source_of(nb), head,
                                lambda mt: self.full_dims(e, mt, dst, nb))
        return replace(e, func=head, args=(x,), type=ir.TensorType(t.dtype, dims))

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
        head = replace(func, args=(index,))
        dims = []
        for d in t.dims:
            if d is nb:
                continue
            if d.mask is not None and nb.name in (mt := self.tensor(d.mask)).dim_names:
                # A nested shift's mask that depends on the applied neighbour
                # is read at the same neighbour.
                d = replace(d, mask=ir.Call(head, (d.mask,), type=ir.TensorType(
                    mt.dtype, tuple(m for m in mt.dims if m.name != nb.name))))
            dims.append(d)
        return replace(e, func=head, args=(x,), type=ir.TensorType(t.dtype, tuple(dims)))
