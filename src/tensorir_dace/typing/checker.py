"""Type inference and checking of whole programs.

The checker returns the program with every expression's ``type`` filled in
and with a few spellings made canonical, so that later stages need not
re-derive them:

* the general shift ``⟪…⟫(x)`` becomes nested ``cartesian_shift(D, o)``,
  ``shift_init(T)`` and ``unstructured_shift(T, k)`` calls (one pair each,
  offset tags resolved to dimension names, the first pair outermost);
* ``scan`` always carries its axis as a fourth argument;
* ``lift(f)`` and ``deref(x)`` disappear;
* literals get the element type their context gives them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import sympy

from .. import intervals as iv
from .. import ir
from ..errors import TypeCheckError, did_you_mean
from .scope import Binding, Scope

ELEMENT_TYPE_NAMES = ir.SCALAR_NAMES + tuple(ir.SCALAR_ALIASES)


def _fmt(x) -> str:
    return str(x)


class Checker:
    def __init__(self, program: ir.Program):
        self.program = program
        self.dim_names = _collect_dim_names(program)
        self.constraints: list[ir.SizeConstraint] = []

    # ------------------------------------------------------------------ errors

    def error(self, node: ir.Node | None, message: str) -> TypeCheckError:
        return TypeCheckError(message, node.loc if node is not None else None)

    def decide(self, node: ir.Node, fn: Callable[[], object]):
        """Run an interval comparison; undecidable bounds become a type error."""
        try:
            return fn()
        except iv.Undecidable as e:
            raise self.error(node, f"cannot decide whether {e.a} <= {e.b} for all sizes "
                                   f"(bounds {e.a} and {e.b}); use bounds whose order "
                                   f"does not depend on the size symbols") from None

    # ------------------------------------------------------------------ program

    def check_program(self) -> ir.Program:
        p = self.program
        seen: set[str] = set()
        scope = Scope()
        for param in p.params + p.temporaries:
            if param.name in seen:
                raise self.error(param, f"'{param.name}' is declared twice")
            if ir.canonical_builtin(param.name) is not None:
                raise self.error(param, f"'{param.name}' is a builtin and cannot name a "
                                        "parameter; rename it")
            seen.add(param.name)
            self.check_declared_type(param, param.type)
        from_params = {s.name for param in p.params for d in param.type.dims
                       for b in (d.start, d.stop) for s in b.free_symbols}
        for sym in _size_symbols(p):
            if sym not in from_params:
                raise self.error(p, f"size symbol '{sym}' appears in no parameter type, so no "
                                    "argument can determine it; use it in a parameter's "
                                    "interval or write a number")
            if sym in seen:
                raise self.error(p, f"'{sym}' is used both as a size symbol and as a parameter")
            scope.bindings[sym] = Binding(sym, "size", ir.TensorType(ir.INT64))
        for param in p.params:
            scope.bindings[param.name] = Binding(param.name, "param", param.type)
        for tmp in p.temporaries:
            if tmp.type.is_scalar:
                raise self.error(tmp, f"temporary '{tmp.name}' must have dimensions")
            scope.bindings[tmp.name] = Binding(tmp.name, "temp", tmp.type)
        body = self.block(p.body, scope)
        return replace(p, body=body, constraints=tuple(dict.fromkeys(self.constraints)))

    def check_declared_type(self, node: ir.Node, t: ir.TensorType) -> None:
        names = [d.name for d in t.dims]
        for n in names:
            if names.count(n) > 1:
                raise self.error(node, f"dimension '{n}' appears twice in {t}")
        for d in t.dims:
            if self.decide(node, lambda: iv.maybe_le(d.stop, d.start)) is True and \
                    not iv.equal(d.start, d.stop):
                raise self.error(node, f"interval {d} of {t} is empty: its stop must not "
                                       "lie below its start")

    def block(self, stmts: Sequence[ir.Stmt], scope: Scope) -> tuple[ir.Stmt, ...]:
        return tuple(self.stmt(s, scope) for s in stmts)

    def stmt(self, s: ir.Stmt, scope: Scope) -> ir.Stmt:
        match s:
            case ir.Assign():
                return self.assign(s, scope)
            case ir.IfStmt(cond=cond, then_body=tb, else_body=eb):
                c = self.expr(cond, scope)
                t = self.tensor(c)
                if t.dims or not (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_bool):
                    raise self.error(cond, f"the condition of a program-level if must be a "
                                           f"scalar bool (tensor<bool>), got {t}; for an "
                                           "element-wise choice use if(c, a, b)")
                return replace(s, cond=c, then_body=self.block(tb, scope),
                               else_body=self.block(eb, scope))
            case ir.ForStmt(var=var, start=start, stop=stop, body=body):
                bounds = []
                for b in (start, stop):
                    tb = self.expr(b, scope, ir.INT64)
                    t = self.tensor(tb)
                    if t.dims or not (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int):
                        raise self.error(b, f"a for-loop bound must be a scalar integer, got {t}")
                    bounds.append(tb)
                if scope.lookup(var) is not None and scope.lookup(var).kind != "loop":
                    raise self.error(s, f"loop variable '{var}' shadows a parameter; rename it")
                inner = scope.child({var: Binding(var, "loop", ir.TensorType(ir.INT64))})
                return replace(s, start=bounds[0], stop=bounds[1], body=self.block(body, inner))
        raise self.error(s, f"unknown statement {type(s).__name__}")

    def assign(self, s: ir.Assign, scope: Scope) -> ir.Assign:
        target = s.target
        if isinstance(target, ir.Sym):
            name = target.name
            binding = self.writable(target, scope)
            ttype = binding.type
            typed_target: ir.Expr = replace(target, type=ttype)
        elif isinstance(target, ir.Call) and isinstance(target.func, ir.Sym) \
                and target.func.name == "subset" and target.args \
                and isinstance(target.args[0], ir.Sym):
            name = target.args[0].name
            self.writable(target.args[0], scope)
            typed_target = self.expr(target, scope)
            ttype = self.tensor(typed_target)
        else:
            raise self.error(target, "the target of '←' must be a parameter or temporary name, "
                                     "or subset(name, D[a:b], …)")
        value = self.expr(s.value, scope, ttype.dtype)
        vtype = self.tensor(value)
        if vtype.dtype != ttype.dtype:
            raise self.error(s.value, f"cannot assign a {vtype.dtype} expression to '{name}' "
                                      f"of element type {ttype.dtype}; use cast(…, "
                                      f"{ttype.dtype})")
        for d in vtype.dims:
            if ttype.dim(d.name) is None:
                raise self.error(s.value, f"the expression has dimension {d.name} that the "
                                          f"target '{name}' ({ttype}) lacks")
        for d in ttype.dims:
            vd = vtype.dim(d.name)
            if vd is not None and not self.decide(s, lambda: iv.covers(vd, d)):
                raise self.error(s.value, f"the expression is defined on {d.name}"
                                          f"[{vd.start}:{vd.stop}] but the target '{name}' "
                                          f"needs {d.name}[{d.start}:{d.stop}]")
        # The neighbour masks of the value survive in the temporary it is stored in.
        binding = scope.lookup(name)
        if binding.kind == "temp" and isinstance(target, ir.Sym):
            masked = tuple(replace(d, mask=vtype.dim(d.name).mask)
                           if vtype.dim(d.name) is not None and vtype.dim(d.name).mask is not None
                           else d for d in binding.type.dims)
            scope.rebind(replace(binding, type=replace(binding.type, dims=masked)))
        return replace(s, target=typed_target, value=value)

    def writable(self, target: ir.Sym, scope: Scope) -> Binding:
        binding = scope.lookup(target.name)
        if binding is None:
            raise self.error(target, f"cannot assign to unknown name '{target.name}'"
                             + did_you_mean(target.name, scope.names()))
        if binding.kind not in ("param", "temp"):
            raise self.error(target, f"cannot assign to {binding.kind} '{target.name}'")
        if binding.type.is_scalar:
            raise self.error(target, f"cannot assign to scalar parameter '{target.name}'; "
                                     "outputs must be tensors with dimensions")
        return binding

    # ------------------------------------------------------------------ expressions

    @staticmethod
    def tensor(e: ir.Expr) -> ir.TensorType:
        assert isinstance(e.type, ir.TensorType), e
        return e.type

    def expr(self, e: ir.Expr, scope: Scope, expected: ir.ElementType | None = None) -> ir.Expr:
        match e:
            case ir.Literal():
                return self.literal(e, expected)
            case ir.Sym(name=name):
                binding = scope.lookup(name)
                if binding is not None:
                    return replace(e, type=binding.type)
                if ir.canonical_builtin(name) is not None:
                    raise self.error(e, f"builtin '{name}' must be called")
                if name in self.dim_names:
                    raise self.error(e, f"'{name}' is a dimension, not a value; use pos({name}, x) "
                                        "for its coordinates")
                raise self.error(e, f"unknown name '{name}'"
                                    + did_you_mean(name, scope.names() | ir.BUILTINS))
            case ir.Lambda():
                raise self.error(e, "a lambda must be applied to arguments or passed to "
                                    "reduce/scan")
            case ir.DimInterval():
                raise self.error(e, f"'{e.name}[…:…]' is only allowed as an argument of subset")
            case ir.Call():
                return self.call(e, scope, expected)
        raise self.error(e, f"unknown expression {type(e).__name__}")

    def literal(self, e: ir.Literal, expected: ir.ElementType | None) -> ir.Literal:
        if e.kind == "bool":
            return replace(e, type=ir.TensorType(ir.BOOL))
        default = ir.INT64 if e.kind == "int" else ir.FLOAT64
        if isinstance(expected, ir.ScalarType) and not expected.is_bool:
            if e.kind == "int" or expected.is_float:
                return replace(e, type=ir.TensorType(expected))
        return replace(e, type=ir.TensorType(default))

    # ------------------------------------------------------------------ calls

    def call(self, e: ir.Call, scope: Scope, expected) -> ir.Expr:
        func = e.func
        if isinstance(func, ir.Sym) and scope.lookup(func.name) is None:
            name = ir.canonical_builtin(func.name)
            if name is None:
                raise self.error(func, f"unknown function '{func.name}'"
                                       + did_you_mean(func.name, ir.BUILTINS | scope.names()))
            rule = getattr(self, "b_" + name, None)
            if name in ir.ARITHMETIC:
                return self.arithmetic(e, name, scope, expected)
            if name in ir.COMPARISONS:
                return self.comparison(e, name, scope)
            if name in ir.MATH_FUNCTIONS or name in ir.PREDICATES:
                return self.math(e, name, scope, expected)
            if rule is None:
                raise self.error(e, f"'{name}' takes static arguments first: "
                                    f"{name}(…)(operands)")
            return rule(e, scope, expected)
        if isinstance(func, ir.Lambda):
            return self.apply_lambda(e, func, scope, expected)
        if isinstance(func, ir.Call) and isinstance(ir_head(func), ir.Sym):
            head = ir.canonical_builtin(ir_head(func).name)
            rule = getattr(self, "c_" + (head or ""), None)
            if rule is None:
                raise self.error(e, f"'{ir_head(func).name}(…)' does not return a function")
            return rule(e, func, scope, expected)
        if isinstance(func, ir.Sym):
            raise self.error(func, f"'{func.name}' is a tensor, not a function")
        raise self.error(e, "only builtins and lambdas can be called")

    def operands(self, e: ir.Call, scope: Scope, n: int | None, name: str,
                 expected=None) -> list[ir.Expr]:
        if n is not None and len(e.args) != n:
            raise self.error(e, f"{name} takes {n} operand{'s' if n != 1 else ''}, "
                                f"got {len(e.args)}")
        return self.unify_literals([self.expr(a, scope, expected) for a in e.args],
                                   e.args, scope)

    def unify_literals(self, typed: list[ir.Expr], raw: Sequence[ir.Expr], scope: Scope):
        """Weak (literal-only) operands take the element type of a strong partner."""
        strong = [t for t in typed if not _is_weak(t)]
        if strong:
            target = self.tensor(strong[0]).dtype
        else:
            kinds = {self.tensor(t).dtype for t in typed}
            target = ir.FLOAT64 if ir.FLOAT64 in kinds else None
        if target is None:
            return typed
        out = []
        for t, r in zip(typed, raw):
            if _is_weak(t) and self.tensor(t).dtype != target:
                t = self.expr(r, scope, target)
                if self.tensor(t).dtype != target:
                    raise self.error(r, f"the literal {_literal_text(r)} cannot be used with a "
                                        f"{target} operand; write it as a {target} value")
            out.append(t)
        return out

    def broadcast(self, node: ir.Node, types: Sequence[ir.TensorType]) -> tuple[ir.Dim, ...]:
        """Union of dimensions (first appearance order), intersection of intervals."""
        dims: dict[str, ir.Dim] = {}
        for t in types:
            for d in t.dims:
                if d.name in dims:
                    prev = dims[d.name]
                    merged = self.decide(node, lambda: iv.intersect(prev, d))
                    if merged.mask is None and d.mask is not None:
                        merged = replace(merged, mask=d.mask)
                    if self.decide(node, lambda: iv.is_empty(merged)):
                        raise self.error(node, f"the operands do not overlap along {d.name}: "
                                               f"[{prev.start}:{prev.stop}] and "
                                               f"[{d.start}:{d.stop}] have an empty "
                                               "intersection")
                    dims[d.name] = merged
                else:
                    dims[d.name] = d
        return tuple(dims.values())

    def same_dtype(self, node: ir.Node, name: str, typed: Sequence[ir.Expr]) -> ir.ElementType:
        dtypes = [self.tensor(t).dtype for t in typed]
        for d in dtypes[1:]:
            if d != dtypes[0]:
                raise self.error(node, f"{name} needs operands of one element type, got "
                                       + " and ".join(str(x) for x in dtypes)
                                       + "; convert one with cast(…, T)")
        return dtypes[0]

    def arithmetic(self, e: ir.Call, name: str, scope: Scope, expected) -> ir.Expr:
        args = self.operands(e, scope, 2, name, expected)
        dtype = self.same_dtype(e, name, args)
        if not isinstance(dtype, ir.ScalarType) or dtype.is_bool:
            raise self.error(e, f"{name} is not defined on {dtype} operands")
        if name == "arctan2" and not dtype.is_float:
            raise self.error(e, f"arctan2 needs float operands, got {dtype}")
        dims = self.broadcast(e, [self.tensor(a) for a in args])
        return replace(e, args=tuple(args), type=ir.TensorType(dtype, dims))

    def comparison(self, e: ir.Call, name: str, scope: Scope) -> ir.Expr:
        args = self.operands(e, scope, 2, name)
        dtype = self.same_dtype(e, name, args)
        if not isinstance(dtype, ir.ScalarType):
            raise self.error(e, f"{name} is not defined on tuple operands ({dtype})")
        if dtype.is_bool and name not in ("eq", "neq"):
            raise self.error(e, f"{name} is not defined on bool operands")
        dims = self.broadcast(e, [self.tensor(a) for a in args])
        return replace(e, args=tuple(args), type=ir.TensorType(ir.BOOL, dims))

    def math(self, e: ir.Call, name: str, scope: Scope, expected) -> ir.Expr:
        args = self.operands(e, scope, 1, name, expected if name in ("neg", "abs") else None)
        if name not in ("neg", "abs") and _is_weak(args[0]):
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
        dims = self.broadcast(e, [self.tensor(a) for a in args])
        return replace(e, args=tuple(args), type=ir.TensorType(ir.BOOL, dims))

    def b_cast(self, e, scope, expected):
        if len(e.args) != 2:
            raise self.error(e, "cast takes an operand and an element type: cast(x, float32)")
        x = self.expr(e.args[0], scope)
        dtype = self.element_type_arg(e.args[1])
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
        dims = self.broadcast(e, [self.tensor(x) for x in (cond, a, b)])
        return replace(e, args=(cond, a, b), type=ir.TensorType(dtype, dims))

    def b_make_tuple(self, e, scope, expected):
        if not e.args:
            raise self.error(e, "make_tuple needs at least one element")
        exp = expected.elements if isinstance(expected, ir.TupleType) and \
            len(expected.elements) == len(e.args) else (None,) * len(e.args)
        args = [self.expr(a, scope, x) for a, x in zip(e.args, exp)]
        dims = self.broadcast(e, [self.tensor(a) for a in args])
        dtype = ir.TupleType(tuple(self.tensor(a).dtype for a in args))
        return replace(e, args=tuple(args), type=ir.TensorType(dtype, dims))

    def b_tuple_get(self, e, scope, expected):
        if len(e.args) != 2 or not isinstance(e.args[1], ir.Literal) or e.args[1].kind != "int":
            raise self.error(e, "tuple_get takes a tensor and an integer literal: tuple_get(x, 0)")
        x = self.expr(e.args[0], scope)
        t = self.tensor(x)
        i = e.args[1].value
        if not isinstance(t.dtype, ir.TupleType):
            raise self.error(e, f"tuple_get needs a tuple-typed tensor, got {t}")
        if not 0 <= i < len(t.dtype.elements):
            raise self.error(e.args[1], f"tuple index {i} out of range for {t.dtype}")
        index = replace(e.args[1], type=ir.TensorType(ir.INT64))
        return replace(e, args=(x, index), type=ir.TensorType(t.dtype.elements[i], t.dims))

    def b_can_deref(self, e, scope, expected):
        (x,) = self.operands(e, scope, 1, "can_deref")
        return replace(e, args=(x,), type=ir.TensorType(ir.BOOL, self.tensor(x).dims))

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

    def resolve_dim(self, a: ir.Expr, what: str) -> str:
        if not isinstance(a, ir.Sym):
            raise self.error(a, f"expected a dimension name for {what}")
        if a.name in self.dim_names:
            return a.name
        matches = sorted(d for d in self.dim_names
                         if d.lower().startswith(a.name.lower()) and not d.startswith("_NB_"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise self.error(a, f"offset tag '{a.name}' is ambiguous: it could name "
                                + ", ".join(matches) + "; write the full dimension name")
        raise self.error(a, f"'{a.name}' names no dimension of this program; dimensions are "
                            + ", ".join(sorted(self.dim_names)) + did_you_mean(a.name,
                                                                              self.dim_names))

    def b_pos(self, e, scope, expected):
        if len(e.args) != 2:
            raise self.error(e, "pos takes a dimension and a tensor: pos(I, x)")
        name = self.resolve_dim(e.args[0], "pos")
        x = self.expr(e.args[1], scope)
        d = self.tensor(x).dim(name)
        if d is None:
            raise self.error(e, f"pos({name}, x): x has no dimension {name} "
                                f"({self.tensor(x)})")
        return replace(e, args=(replace(e.args[0], name=name), x),
                       type=ir.TensorType(ir.INT64, (replace(d, mask=None),)))

    def b_add_dim(self, e, scope, expected):
        if len(e.args) != 4:
            raise self.error(e, "add_dim takes a name, start, stop and a tensor: "
                                "add_dim(K, 0, 5, x)")
        if not isinstance(e.args[0], ir.Sym):
            raise self.error(e.args[0], "add_dim needs a dimension name first")
        name = e.args[0].name
        start = self.static_bound(e.args[1], scope)
        stop = self.static_bound(e.args[2], scope)
        x = self.expr(e.args[3], scope)
        t = self.tensor(x)
        if t.dim(name) is not None:
            raise self.error(e, f"add_dim: the operand already has dimension {name}")
        if self.decide(e, lambda: iv.maybe_le(stop, start)) is True and not iv.equal(start, stop):
            raise self.error(e, f"add_dim: empty interval [{start}:{stop}]")
        new = ir.Dim(name, start, stop)
        return replace(e, args=(e.args[0], e.args[1], e.args[2], x),
                       type=ir.TensorType(t.dtype, (new,) + t.dims))

    def static_bound(self, a: ir.Expr, scope: Scope) -> sympy.Expr:
        """An integer bound written as an expression: literals, size symbols, + - ×."""
        match a:
            case ir.Literal(kind="int", value=v):
                return sympy.Integer(v)
            case ir.Sym(name=n) if scope.lookup(n) is not None and scope.lookup(n).kind == "size":
                return ir.size_symbol(n)
            case ir.Call(func=ir.Sym(name=op), args=(x, y)) if op in ("plus", "minus",
                                                                         "multiplies"):
                lhs, rhs = self.static_bound(x, scope), self.static_bound(y, scope)
                return {"plus": lhs + rhs, "minus": lhs - rhs, "multiplies": lhs * rhs}[op]
            case ir.Call(func=ir.Sym(name="neg"), args=(x,)):
                return -self.static_bound(x, scope)
        raise self.error(a, "expected an integer literal or size expression here")

    def b_subset(self, e, scope, expected):
        if not e.args:
            raise self.error(e, "subset takes a tensor and intervals: subset(x, I[1:4])")
        x = self.expr(e.args[0], scope)
        t = self.tensor(x)
        new = {d.name: d for d in t.dims}
        for a in e.args[1:]:
            if not isinstance(a, ir.DimInterval):
                raise self.error(a, "subset takes intervals like I[1:4] after the tensor")
            d = t.dim(a.name)
            if d is None:
                raise self.error(a, f"subset: the tensor has no dimension {a.name} ({t})")
            sub = d.with_interval(a.start, a.stop)
            # An order that depends on the sizes is the user's assertion (I[1:N-1]
            # needs N >= 2); only a subset provably outside is an error.
            pairs = [(d.start, sub.start), (sub.stop, d.stop), (sub.start, sub.stop)]
            inside = [iv.maybe_le(lo, hi) for lo, hi in pairs]
            where = f"subset {a.name}[{a.start}:{a.stop}] of {a.name}[{d.start}:{d.stop}]" + (
                f" at {a.loc}" if a.loc else "")
            self.constraints += [ir.SizeConstraint(lo, hi, where)
                                 for (lo, hi), ok in zip(pairs, inside) if ok is None]
            if False in inside:
                raise self.error(a, f"subset {a.name}[{a.start}:{a.stop}] is not within "
                                    f"{a.name}[{d.start}:{d.stop}]")
            new[a.name] = sub
        return replace(e, args=(x,) + tuple(e.args[1:]),
                       type=ir.TensorType(t.dtype, tuple(new[d.name] for d in t.dims)))

    def b_concat(self, e, scope, expected):
        args = list(e.args)
        explicit = None
        if args and isinstance(args[0], ir.Sym) and scope.lookup(args[0].name) is None and \
                args[0].name in self.dim_names:
            explicit = args.pop(0).name
        if len(args) < 1:
            raise self.error(e, "concat needs at least one piece")
        pieces = self.unify_literals([self.expr(a, scope, expected) for a in args], args, scope)
        dtype = self.same_dtype(e, "concat", pieces)
        types = [self.tensor(p) for p in pieces]
        candidates = [explicit] if explicit else [
            d.name for d in types[0].dims if all(t.dim(d.name) is not None for t in types)]
        axis = None
        for name in candidates:
            ds = [t.dim(name) for t in types]
            if any(d is None for d in ds):
                raise self.error(e, f"concat along {name}: every piece needs dimension {name}")
            if all(iv.equal(a.stop, b.start) for a, b in zip(ds, ds[1:])):
                if axis is not None and explicit is None and len(types) > 1:
                    raise self.error(e, f"concat: both {axis} and {name} could be the "
                                        f"concatenation axis; name it: concat({axis}, …)")
                axis = name
                if explicit is None and len(types) == 1:
                    break
        if axis is None:
            raise self.error(e, "concat: the pieces must cover contiguous, disjoint intervals "
                                "of one dimension, in increasing order; got "
                                + "; ".join(str(t) for t in types))
        others = [ir.TensorType(t.dtype, tuple(d for d in t.dims if d.name != axis))
                  for t in types]
        rest = self.broadcast(e, others)
        ds = [t.dim(axis) for t in types]
        whole = ds[0].with_interval(ds[0].start, ds[-1].stop)
        order = list(dict.fromkeys(d.name for t in types for d in t.dims))
        dims = {d.name: d for d in rest}
        dims[axis] = replace(whole, mask=None)
        prefix = (ir.Sym(axis),) if explicit else ()
        return replace(e, args=prefix + tuple(pieces),
                       type=ir.TensorType(dtype, tuple(dims[n] for n in order)))

    # ------------------------------------------------------------------ lambdas

    def bind_params(self, node: ir.Node, lam: ir.Lambda, arg_types: Sequence[ir.TensorType],
                    what: str) -> dict[str, Binding]:
        if len(lam.params) != len(arg_types):
            raise self.error(node, f"{what}: the lambda takes {len(lam.params)} parameters "
                                   f"but gets {len(arg_types)} arguments")
        bindings = {}
        for p, at in zip(lam.params, arg_types):
            self.check_declared_type(p, p.type)
            pt = p.type
            if pt.dtype != at.dtype:
                raise self.error(p, f"{what}: parameter '{p.name}' expects element type "
                                    f"{pt.dtype}, got {at.dtype}")
            if set(pt.dim_names) != set(at.dim_names):
                raise self.error(p, f"{what}: parameter '{p.name}' is declared {pt} but the "
                                    f"argument is {at}: the dimensions differ")
            dims = []
            for d in pt.dims:
                ad = at.dim(d.name)
                if not self.decide(p, lambda: iv.covers(ad, d)):
                    raise self.error(p, f"{what}: parameter '{p.name}' needs {d.name}"
                                        f"[{d.start}:{d.stop}] but the argument only covers "
                                        f"[{ad.start}:{ad.stop}]")
                dims.append(replace(d, mask=ad.mask))
            bindings[p.name] = Binding(p.name, "lambda", replace(pt, dims=tuple(dims)))
        return bindings

    def typed_lambda(self, lam: ir.Lambda, bindings: dict[str, Binding], scope: Scope,
                     expected=None) -> ir.Lambda:
        body = self.expr(lam.body, scope.child(bindings), expected)
        params = tuple(replace(p, type=bindings[p.name].type) for p in lam.params)
        return replace(lam, params=params, body=body,
                       type=ir.FunctionType(tuple(p.type for p in params), body.type))

    def apply_lambda(self, e: ir.Call, lam: ir.Lambda, scope: Scope, expected) -> ir.Expr:
        args = [self.expr(a, scope, p.type.dtype) for a, p in zip(e.args, lam.params)] \
            if len(e.args) == len(lam.params) else [self.expr(a, scope) for a in e.args]
        bindings = self.bind_params(e, lam, [self.tensor(a) for a in args], "lambda call")
        typed = self.typed_lambda(lam, bindings, scope, expected)
        result = self.tensor(typed.body)
        subst = {p.name: a for p, a in zip(lam.params, args)}
        result = _substitute_masks(result, subst)
        return replace(e, func=typed, args=tuple(args), type=result)

    # ------------------------------------------------------------------ shifts

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
                    steps.append(("unstructured_shift", (a, nxt)))
                    i += 2
                else:
                    steps.append(("shift_init", (a,)))
                    i += 1
            else:
                if not is_offset:
                    raise self.error(a, "a Cartesian shift needs a dimension and an integer "
                                        "offset: ⟪I, 1⟫")
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
            pairs[name] = pairs.get(name, 0) + o.value
        x = self.expr(e.args[0], scope, expected)
        for name, offset in pairs.items():
            t = self.tensor(x)
            dims = tuple(iv.shifted(d, offset) if d.name == name else d for d in t.dims)
            dims = tuple(_shift_mask(d, name, offset) for d in dims)
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

    def unstructured_operand(self, e, x: ir.Expr, src: str, table_name: str) -> ir.TensorType:
        t = self.tensor(x)
        if t.dim(src) is None:
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
        t = self.unstructured_operand(e, x, nb.neighbor_source, _name_of(func.args[0]))
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
        k = func.args[1].value
        self.check_neighbor_index(func.args[1], k, nb)
        x = self.expr(e.args[0], scope, expected)
        t = self.unstructured_operand(e, x, nb.neighbor_source, _name_of(func.args[0]))
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
        self.check_neighbor_index(func.args[0], func.args[0].value, nb)
        index = replace(func.args[0], type=ir.TensorType(ir.INT64))
        return replace(e, func=replace(func, args=(index,)), args=(x,),
                       type=ir.TensorType(t.dtype, tuple(d for d in t.dims if d is not nb)))

    # ------------------------------------------------------------------ reduce / scan

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
        lam = self.lambda_and_init(func, "reduce", (2,))
        args = [self.expr(a, scope) for a in e.args]
        if not args:
            raise self.error(e, "reduce needs at least one operand")
        types = [self.tensor(a) for a in args]
        nbs = [t.highest_neighbor for t in types]
        counters = [d.neighbor_counter for d in nbs if d is not None]
        if not counters:
            raise self.error(e, "reduce needs an operand with a neighbour dimension "
                                "(_NB_<n>), e.g. from a partial shift ⟪V2E⟫(x)")
        axis = f"_NB_{max(counters)}"
        axis_dims = [t.dim(axis) for t in types if t.dim(axis) is not None]
        self.broadcast(e, [ir.TensorType(ir.BOOL, (d,)) for d in axis_dims])
        sliced = [ir.TensorType(t.dtype, tuple(d for d in t.dims if d.name != axis))
                  for t in types]
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
        bindings = self.bind_params(e, lam, [acc_arg] + sliced, "reduce")
        typed = self.typed_lambda(lam, bindings, scope, acc_t.dtype)
        body_t = self.tensor(typed.body)
        if body_t.dtype != acc_t.dtype or set(body_t.dim_names) != set(acc_t.dim_names):
            raise self.error(lam.body, f"the reduce lambda must return the accumulator's type "
                                       f"{acc_t}, got {body_t}")
        self.body_covers(lam, body_t, bindings[lam.params[0].name].type, "reduce", "accumulator")
        result = ir.TensorType(acc_t.dtype, tuple(body_t.dim(n) for n in acc_t.dim_names))
        result = _substitute_masks(result, {p.name: a for p, a in zip(lam.params[1:], args)})
        return replace(e, func=replace(func, args=(typed, init)), args=tuple(args),
                       type=result)

    def body_covers(self, lam: ir.Lambda, body_t: ir.TensorType, carried: ir.TensorType,
                    what: str, role: str) -> None:
        """The next step needs the carried value on its whole declared domain."""
        for d in carried.dims:
            bd = body_t.dim(d.name)
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
        bindings = self.bind_params(e, lam, [state_t] + sliced, "scan")
        typed = self.typed_lambda(lam, bindings, scope, state_t.dtype)
        body_t = self.tensor(typed.body)
        if body_t.dtype != state_t.dtype or set(body_t.dim_names) != set(state_t.dim_names):
            raise self.error(lam.body, f"the scan lambda must return the state's type "
                                       f"{state_t}, got {body_t}")
        self.body_covers(lam, body_t, state_t, "scan", "state")
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


# ---------------------------------------------------------------------- helpers


def ir_head(e: ir.Expr) -> ir.Expr:
    while isinstance(e, ir.Call):
        e = e.func
    return e


def _name_of(e: ir.Expr) -> str:
    return e.name if isinstance(e, ir.Sym) else "the table"


def _literal_text(e: ir.Expr) -> str:
    if isinstance(e, ir.Literal):
        return repr(e.value)
    return "expression"


def _is_weak(e: ir.Expr) -> bool:
    """An expression built only from numeric literals: its type adapts to a partner."""
    match e:
        case ir.Literal(kind=k):
            return k != "bool"
        case ir.Call(func=ir.Sym(name=n), args=args) if n in ir.ARITHMETIC or n in \
                ir.MATH_FUNCTIONS:
            return all(_is_weak(a) for a in args)
        case ir.Call(func=ir.Sym(name="if"), args=(_, a, b)):
            return _is_weak(a) and _is_weak(b)
        case ir.Call(func=ir.Call(func=ir.Sym(name="shift" | "cartesian_shift")), args=(x,)):
            return _is_weak(x)
    return False



def _shift_mask(d: ir.Dim, dim: str, offset: int) -> ir.Dim:
    """Keep a neighbour mask aligned with its tensor after a Cartesian shift."""
    if d.mask is None or not isinstance(d.mask.type, ir.TensorType) or \
            d.mask.type.dim(dim) is None:
        return d
    t = d.mask.type
    dims = tuple(iv.shifted(x, offset) if x.name == dim else x for x in t.dims)
    head = ir.Call(ir.Sym("cartesian_shift"), (ir.Sym(dim), ir.Literal(offset,
                                                                        type=ir.TensorType(
                                                                            ir.INT64))))
    return replace(d, mask=ir.Call(head, (d.mask,), type=replace(t, dims=dims)))


def _substitute_masks(t: ir.TensorType, subst: dict[str, ir.Expr]) -> ir.TensorType:
    """Masks that name lambda parameters are rewritten to the arguments' expressions,
    so they stay meaningful outside the lambda."""
    if not any(d.mask is not None for d in t.dims):
        return t
    return replace(t, dims=tuple(replace(d, mask=_subst_expr(d.mask, subst))
                                 if d.mask is not None else d for d in t.dims))


def _subst_expr(e: ir.Expr, subst: dict[str, ir.Expr]) -> ir.Expr:
    match e:
        case ir.Sym(name=n) if n in subst:
            return subst[n]
        case ir.Call(func=f, args=args):
            return replace(e, func=_subst_expr(f, subst),
                           args=tuple(_subst_expr(a, subst) for a in args))
    return e


def _collect_dim_names(p: ir.Program) -> set[str]:
    names: set[str] = set()

    def add_type(t):
        if isinstance(t, ir.TensorType):
            names.update(d.name for d in t.dims)

    for node in ir.walk(p):
        if isinstance(node, ir.Param):
            add_type(node.type)
        elif isinstance(node, ir.DimInterval):
            names.add(node.name)
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Sym) and \
                node.func.name == "add_dim" and node.args and isinstance(node.args[0], ir.Sym):
            names.add(node.args[0].name)
    for n in list(names):
        if n.startswith(ir.NB_PREFIX) and not n[len(ir.NB_PREFIX):].isdigit():
            names.add(n[len(ir.NB_PREFIX):])
    return names


def _size_symbols(p: ir.Program) -> list[str]:
    syms: dict[str, None] = {}
    for node in ir.walk(p):
        if isinstance(node, ir.Param):
            for d in node.type.dims:
                for b in (d.start, d.stop):
                    for s in sorted(b.free_symbols, key=lambda s: s.name):
                        syms[s.name] = None
        elif isinstance(node, ir.DimInterval):
            for b in (node.start, node.stop):
                for s in b.free_symbols:
                    syms[s.name] = None
    return list(syms)


def check(program: ir.Program) -> ir.Program:
    """Infer and check the types of a whole program; returns the typed program."""
    if not isinstance(program, ir.Program):
        raise TypeError(f"check() expects an ir.Program, got {type(program).__name__}")
    return Checker(program).check_program()
