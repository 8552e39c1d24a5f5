"""Typing rules of reduce and scan: the neighbour axis, the scan axis, the carried value."""

from __future__ import annotations

from dataclasses import replace

from .. import intervals as iv
from .. import ir
from .rules import Rules
from .scope import Scope
from .util import substitute_masks


class LoopRules(Rules):
    """Mixin of :class:`~.checker.Checker`."""

    def lambda_and_init(self, func: ir.Call, name: str, counts: tuple[int, ...]) -> ir.Lambda:
        if len(func.args) not in counts or not isinstance(func.args[0], ir.Lambda):
            raise self.error(func, f"{name} takes a lambda and its static arguments: "
                             + ("reduce(λ(acc, …) → …, init)" if name == "reduce" else
                                "scan(λ(state, …) → …, forward, init)"))
        return func.args[0]

    def init_value(self, a: ir.Expr, scope: Scope, dtype: ir.ElementType, what: str):
        init = self.expr(a, scope, dtype)
        t = self.tensor(init)
        if t.dims:
            raise self.error(a, f"the init of {what} must be a scalar value, got {t}")
        if t.dtype != dtype:
            raise self.error(a, f"the init of {what} has element type {t.dtype} but the "
                                f"accumulator is {dtype}")
        return init

    def c_reduce(self, e, func, scope, expected):
        lam = self.lambda_and_init(func, "reduce", (2, 3))
        args = [self.expr(a, scope) for a in e.args]
        if not args:
            raise self.error(e, "reduce needs at least one operand")
        types = [self.tensor(a) for a in args]
        nbs = [t.highest_neighbor for t in types]
        counters = [c for d in nbs if d is not None and (c := d.neighbor_counter) is not None]
        if not counters:
            raise self.error(e, "reduce needs an operand with a neighbour dimension "
                                "(_NB_<n>), e.g. from a partial shift ⟪V2E⟫(x)")
        axis = f"_NB_{max(counters)}"
        static: tuple[ir.Expr, ...] = ()
        if len(func.args) == 3:
            axis = self.reduce_axis_name(func.args[2], types)
            static = (ir.Sym(axis, loc=func.args[2].loc),)
        axis_dims = [d for t in types if (d := t.dim(axis)) is not None]
        self.broadcast(e, [ir.TensorType(ir.BOOL, (d,)) for d in axis_dims])
        # A neighbour dimension whose mask depends on the reduced one is unmasked
        # afterwards: the reduction has already skipped its absent elements.
        sliced = [ir.TensorType(t.dtype, tuple(
            replace(d, mask=None) if d.mask is not None and axis in self.tensor(d.mask).dim_names
            else d for d in t.dims if d.name != axis)) for t in types]
        if not lam.params:
            raise self.error(lam, "the reduce lambda needs an accumulator parameter")
        acc_t = lam.params[0].type
        init = self.init_value(func.args[1], scope, acc_t.dtype, "reduce")
        dr = self.broadcast(e, sliced)
        if set(acc_t.dim_names) != {d.name for d in dr}:
            raise self.error(lam.params[0], f"the reduce accumulator is declared {acc_t} but "
                                            f"the operands without {axis} have dimensions "
                                            + ", ".join(d.name for d in dr))
        acc_arg = ir.TensorType(acc_t.dtype, dr)
        typed, body_t = self.typed_step(e, lam, acc_arg, sliced, scope, "reduce", "accumulator")
        result = ir.TensorType(acc_t.dtype, tuple(body_t.dim(n) for n in acc_t.dim_names))
        result = substitute_masks(result, {p.name: a for p, a in zip(lam.params[1:], args)})
        return replace(e, func=replace(func, args=(typed, init) + static), args=tuple(args),
                       type=result)

    def reduce_axis_name(self, a: ir.Expr, types: list[ir.TensorType]) -> str:
        """The neighbour dimension named as reduce's third argument."""
        names = sorted({d.name for t in types for d in t.dims if d.neighbor_counter is not None})
        if not isinstance(a, ir.Sym) or a.name not in names:
            raise self.error(a, "the axis of reduce must name a neighbour dimension of its "
                                "operands: " + ", ".join(names))
        return a.name

    def typed_step(self, e: ir.Call, lam: ir.Lambda, carried: ir.TensorType,
                   operands: list[ir.TensorType], scope, what: str, role: str):
        """Type the lambda of one reduce/scan step; it must return the carried
        value's type (``role``: accumulator or state) on its whole declared domain."""
        bindings = self.bind_params(e, lam, [carried] + operands, what, scope)
        typed = self.typed_lambda(lam, bindings, scope, carried.dtype)
        body_t = self.tensor(typed.body)
        declared = lam.params[0].type
        if body_t.dtype != declared.dtype or set(body_t.dim_names) != set(declared.dim_names):
            raise self.error(lam.body, f"the {what} lambda must return the {role}'s type "
                                       f"{declared}, got {body_t}")
        self.body_covers(lam, body_t, bindings[lam.params[0].name].type, what, role)
        return typed, body_t

    def body_covers(self, lam: ir.Lambda, body_t: ir.TensorType, carried: ir.TensorType,
                    what: str, role: str) -> None:
        """The next step needs the carried value on its whole declared domain."""
        for d in carried.dims:
            bd = body_t.dim(d.name)
            assert bd is not None   # the body's dims are broadcast with the carried ones
            if not self.decide(lam.body, lambda: iv.covers(bd, d)):
                raise self.error(lam.body, f"the {what} lambda returns {d.name}"
                                           f"[{bd.start}:{bd.stop}] but the {role} needs "
                                           f"{d.name}[{d.start}:{d.stop}]")

    def c_scan(self, e, func, scope, expected):
        lam = self.lambda_and_init(func, "scan", (3, 4))
        forward = func.args[1]
        if not (isinstance(forward, ir.Literal) and forward.kind == "bool"):
            raise self.error(forward, "the second argument of scan is the direction: True "
                                      "(forward) or False (backward)")
        args = [self.expr(a, scope) for a in e.args]
        types = [self.tensor(a) for a in args]
        if not lam.params:
            raise self.error(lam, "the scan lambda needs a state parameter")
        whole = self.broadcast(e, types) if types else ()
        param_dims = set().union(*(p.type.dim_names for p in lam.params))
        if len(func.args) == 4:
            axis = self.resolve_dim(func.args[3], "the scan axis")
        else:
            missing = [d.name for d in whole if d.name not in param_dims]
            if len(missing) != 1:
                raise self.error(e, "cannot tell the scan axis: it is the one dimension of the "
                                    "operands that the lambda's parameter types lack, but "
                                    + (f"{', '.join(missing)} are all missing" if missing
                                       else "there is none") + "; name it as a fourth argument")
            axis = missing[0]
        axis_dim = next((d for d in whole if d.name == axis), None)
        if axis_dim is None:
            raise self.error(e, f"the operands of scan have no dimension {axis}")
        state_t = lam.params[0].type
        init = self.init_value(func.args[2], scope, state_t.dtype, "scan")
        sliced = [ir.TensorType(t.dtype, tuple(d for d in t.dims if d.name != axis))
                  for t in types]
        typed, body_t = self.typed_step(e, lam, state_t, sliced, scope, "scan", "state")
        dims = []
        for d in whole:
            if d.name == axis:
                dims.append(replace(axis_dim, mask=None))
            elif body_t.dim(d.name) is not None:
                dims.append(body_t.dim(d.name))
        for d in body_t.dims:
            if d.name not in {x.name for x in dims}:
                dims.append(d)
        static = (typed, forward, init, ir.Sym(axis, loc=func.loc))
        return replace(e, func=replace(func, args=static), args=tuple(args),
                       type=ir.TensorType(state_t.dtype, tuple(dims)))
