"""Typing rules of the element-wise builtins: arithmetic, comparisons, logic, math,
casts, select, tuples."""

from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..errors import did_you_mean
from .rules import Rules
from .scope import Scope
from .util import ELEMENT_TYPE_NAMES, is_weak


class ElementwiseRules(Rules):
    """Mixin of :class:`~.checker.Checker`."""

    def arithmetic(self, e: ir.Call, name: str, scope: Scope, expected) -> ir.Expr:
        args = self.operands(e, scope, 2, name, expected)
        dtype = self.same_dtype(e, name, args)
        if not isinstance(dtype, ir.ScalarType) or dtype.is_bool:
            raise self.error(e, f"{name} is not defined on {dtype} operands")
        if name == "arctan2" and not dtype.is_float:
            raise self.error(e, f"arctan2 needs float operands, got {dtype}")
        dims = self.broadcast(e, [self.tensor(a) for a in args], combine_masks=True)
        return replace(e, args=tuple(args), type=ir.TensorType(dtype, dims))

    def comparison(self, e: ir.Call, name: str, scope: Scope) -> ir.Expr:
        args = self.operands(e, scope, 2, name)
        dtype = self.same_dtype(e, name, args)
        if not isinstance(dtype, ir.ScalarType):
            raise self.error(e, f"{name} is not defined on tuple operands ({dtype})")
        if dtype.is_bool and name not in ("eq", "neq"):
            raise self.error(e, f"{name} is not defined on bool operands")
        dims = self.broadcast(e, [self.tensor(a) for a in args], combine_masks=True)
        return replace(e, args=tuple(args), type=ir.TensorType(ir.BOOL, dims))

    def math(self, e: ir.Call, name: str, scope: Scope, expected) -> ir.Expr:
        args = self.operands(e, scope, 1, name, expected if name in ("neg", "abs") else None)
        if name not in ("neg", "abs") and is_weak(args[0], self.weak_memo):
            args = [self.expr(e.args[0], scope, ir.FLOAT64 if not isinstance(
                expected, ir.ScalarType) or not expected.is_float else expected)]
        t = self.tensor(args[0])
        dtype = t.dtype
        if not isinstance(dtype, ir.ScalarType) or dtype.is_bool:
            raise self.error(e, f"{name} is not defined on {dtype} operands")
        if name not in ("neg", "abs") and not dtype.is_float:
            raise self.error(e, f"{name} needs a float operand, got {dtype}; use "
                                f"cast(x, float64)")
        result = ir.BOOL if name in ir.PREDICATES else dtype
        return replace(e, args=tuple(args), type=ir.TensorType(result, t.dims))

    def b_and(self, e, scope, expected):
        return self.logical(e, "and", 2, scope)

    def b_or(self, e, scope, expected):
        return self.logical(e, "or", 2, scope)

    def b_not(self, e, scope, expected):
        return self.logical(e, "not", 1, scope)

    def logical(self, e: ir.Call, name: str, n: int, scope: Scope) -> ir.Expr:
        args = self.operands(e, scope, n, name)
        for a in args:
            if self.tensor(a).dtype != ir.BOOL:
                raise self.error(a, f"{name} needs bool operands, got {self.tensor(a).dtype}")
        dims = self.broadcast(e, [self.tensor(a) for a in args], combine_masks=True)
        return replace(e, args=tuple(args), type=ir.TensorType(ir.BOOL, dims))

    def b_cast(self, e, scope, expected):
        if len(e.args) != 2:
            raise self.error(e, "cast takes an operand and an element type: cast(x, float32)")
        dtype = self.element_type_arg(e.args[1])
        # cast(1.0, float64) is a literal of fixed type: read it as the target type.
        x = self.expr(e.args[0], scope, dtype if isinstance(e.args[0], ir.Literal) else None)
        src = self.tensor(x).dtype
        if not isinstance(src, ir.ScalarType) or not isinstance(dtype, ir.ScalarType):
            raise self.error(e, f"cast converts between scalar element types, got {src} → {dtype}")
        return replace(e, args=(x, replace(e.args[1], type=None)),
                       type=ir.TensorType(dtype, self.tensor(x).dims))

    def element_type_arg(self, a: ir.Expr) -> ir.ScalarType:
        if isinstance(a, ir.Sym) and a.name in ELEMENT_TYPE_NAMES:
            return ir.ScalarType(a.name)
        raise self.error(a, "expected an element type (float, float32, float64, int, int32, "
                            "int64 or bool)"
                         + (did_you_mean(a.name, ELEMENT_TYPE_NAMES) if isinstance(a, ir.Sym)
                            else ""))

    def b_if(self, e, scope, expected):
        if len(e.args) != 3:
            raise self.error(e, f"if takes a condition and two values, got {len(e.args)} "
                                "arguments")
        cond = self.expr(e.args[0], scope)
        if self.tensor(cond).dtype != ir.BOOL:
            raise self.error(e.args[0], f"the condition of if must be bool, got "
                                        f"{self.tensor(cond).dtype}")
        a, b = self.unify_literals([self.expr(x, scope, expected) for x in e.args[1:]],
                                   e.args[1:], scope)
        dtype = self.same_dtype(e, "if", [a, b])
        types = [self.tensor(x) for x in (cond, a, b)]
        dims = tuple(replace(d, mask=mask) if (mask := ir.select_mask(types, d.name)[0])
                     is not None else ir.unmasked(d) for d in self.broadcast(e, types))
        return replace(e, args=(cond, a, b), type=ir.TensorType(dtype, dims))

    def b_make_tuple(self, e, scope, expected):
        if not e.args:
            raise self.error(e, "make_tuple needs at least one element")
        exp = expected.elements if isinstance(expected, ir.TupleType) and \
            len(expected.elements) == len(e.args) else (None,) * len(e.args)
        args = [self.expr(a, scope, x) for a, x in zip(e.args, exp)]
        dims = self.broadcast(e, [self.tensor(a) for a in args], combine_masks=True)
        dtype = ir.TupleType(tuple(self.tensor(a).dtype for a in args))
        return replace(e, args=tuple(args), type=ir.TensorType(dtype, dims))

    def b_tuple_get(self, e, scope, expected):
        if len(e.args) != 2 or not isinstance(e.args[1], ir.Literal) or e.args[1].kind != "int":
            raise self.error(e, "tuple_get takes a tensor and an integer literal: tuple_get(x, 0)")
        x = self.expr(e.args[0], scope)
        t = self.tensor(x)
        i = int(e.args[1].value)
        if not isinstance(t.dtype, ir.TupleType):
            raise self.error(e, f"tuple_get needs a tuple-typed tensor, got {t}")
        if not 0 <= i < len(t.dtype.elements):
            raise self.error(e.args[1], f"tuple index {i} out of range for {t.dtype}")
        index = replace(e.args[1], type=ir.TensorType(ir.INT64))
        return replace(e, args=(x, index), type=ir.TensorType(t.dtype.elements[i], t.dims))

    def b_can_deref(self, e, scope, expected):
        (x,) = self.operands(e, scope, 1, "can_deref")
        # present everywhere: false where x is absent
        dims = tuple(ir.unmasked(d) for d in self.tensor(x).dims)
        return replace(e, args=(x,), type=ir.TensorType(ir.BOOL, dims))

    def b_lift(self, e, scope, expected):
        raise self.error(e, "lift(f) must be applied: lift(f)(args)")

    def b_deref(self, e, scope, expected):
        if len(e.args) != 1:
            raise self.error(e, "deref takes one operand")
        return self.expr(e.args[0], scope, expected)

    def c_lift(self, e, func, scope, expected):
        if len(func.args) != 1:
            raise self.error(func, "lift takes one function")
        return self.call(replace(e, func=func.args[0]), scope, expected)
