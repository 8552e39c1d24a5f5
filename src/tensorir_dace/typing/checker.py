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

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import intervals as iv
from .. import ir
from ..errors import CoverageError, TypeCheckError, did_you_mean
from ..lazy import lazy_module
from .domains import DomainRules
from .elementwise import ElementwiseRules
from .loops import LoopRules
from .runtime import RuntimeBounds, bound_of, runtime_names
from .scope import Binding, Scope
from .shifts import ShiftRules
from .util import (
    collect_dim_names,
    ir_head,
    is_weak,
    literal_text,
    size_symbols,
    substitute_masks,
)

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")



# The scalar operations of program-level conditions and loop bounds (the lowering
# writes them as DaCe interstate code).
CONTROL_OPERATIONS = frozenset({
    "plus", "minus", "multiplies", "divides", "mod", "neg", "abs", "minimum", "maximum",
    "eq", "neq", "less", "less_equal", "greater", "greater_equal", "and", "or", "not", "if",
    "cast"})


def both_masks(a: ir.Dim, b: ir.Dim) -> ir.Expr | None:
    """One mask for a neighbour dimension that two operands mask by different
    tables of one type (``⟪S⟫(g) × ⟪C2E⟫(x)``): their minimum, negative where
    either table has no neighbour, so that the presence of both survives in
    the result's type and in a temporary it is stored in.  None where the
    masks are the same or of different types (then the result keeps the first,
    and :func:`~tensorir_dace.ir.absent_beyond_masks` tells readers to test
    the operands)."""
    if a.mask is None or b.mask is None or a.mask == b.mask or a.mask.type != b.mask.type:
        return None
    return ir.Call(ir.Sym("minimum", type=a.mask.type), (a.mask, b.mask), type=a.mask.type)

class Checker(ElementwiseRules, DomainRules, ShiftRules, LoopRules, RuntimeBounds):
    """Checks one program: statements, names, calls and lambdas here; the rules
    of each family of builtins in the mixins (``b_<name>`` for a builtin called
    directly, ``c_<name>`` for a curried one such as ``reduce(f, init)(x)``)."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.dim_names = collect_dim_names(program)
        self.constraints: list[ir.SizeConstraint] = []
        self.weak_memo: dict[int, tuple[ir.Expr, bool]] = {}
        # typed calls of single-expression checks, by node: (node, expected type,
        # bindings of its names, typed node); see :meth:`remembered_call`
        self.call_memo: dict[int, tuple[ir.Call, Any, tuple, ir.Expr]] = {}
        self.names_memo: dict[int, tuple[ir.Expr, tuple[str, ...]]] = {}
        # enclosing for loops (var, start, stop as SymPy or None) while checking a
        # whole program; None when checking single expressions (the front end)
        self.loops: list[tuple[str, sympy.Expr | None, sympy.Expr | None]] | None = None
        self.loop_vars = {n.var for n in ir.walk(program) if isinstance(n, ir.ForStmt)}
        self.loop_sized: dict[str, tuple[str, ...]] = {}
        self.loop_sized_types: dict[str, ir.TensorType] = {}

    # ------------------------------------------------------------------ errors

    def error(self, node: ir.Node | None, message: str) -> TypeCheckError:
        return TypeCheckError(message, node.loc if node is not None else None)

    def decide(self, node: ir.Node | None, fn: Callable[[], Any]) -> Any:
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
        self.loops = []
        seen: set[str] = set()
        scope = Scope()
        for param in p.params + p.temporaries:
            if param.name in seen:
                raise self.error(param, f"'{param.name}' is declared twice")
            if ir.canonical_builtin(param.name) is not None and \
                    param.name not in ir.NAMEABLE_BUILTINS:
                raise self.error(param, f"'{param.name}' is a builtin and cannot name a "
                                        "parameter; rename it")
            seen.add(param.name)
            self.check_declared_type(param, param.type)
        from_params = {s.name for param in p.params for d in param.type.dims
                       for b in (d.start, d.stop) for s in b.free_symbols}
        runtime = runtime_names(p)
        for sym in size_symbols(p):
            if sym in runtime and sym in from_params:
                raise self.error(p, f"'{sym}' is a scalar parameter or loop variable, so it "
                                    "cannot be used in a parameter type (array shapes are "
                                    "inferred from those); use it in subset bounds or "
                                    "temporaries' types, or use a size symbol")
            if sym in runtime:
                continue
            if sym in seen and sym not in from_params:
                raise self.error(p, f"'{sym}' cannot be used in a bound: bounds use size "
                                    "symbols, scalar int/int32 parameters, loop variables "
                                    f"and literals, and '{sym}' is "
                                    f"{getattr(p.param(sym), 'type', '?')}")
            if sym not in from_params:
                raise self.error(p, f"size symbol '{sym}' appears in no parameter type, so no "
                                    "argument can determine it; use it in a parameter's "
                                    "interval or write a number")
            if sym in seen:
                raise self.error(p, f"'{sym}' is used both as a size symbol and as a parameter")
            scope.bindings[sym] = Binding(sym, "size", ir.TensorType(ir.INT64))
        for param in p.params:
            scope.bindings[param.name] = Binding(param.name, "param", param.type)
        temporaries = []
        for tmp in p.temporaries:
            if tmp.type.is_scalar:
                raise self.error(tmp, f"temporary '{tmp.name}' must have dimensions")
            dims = tuple(d.with_interval(self.runtime_bound(d.start, tmp, scope, True),
                                         self.runtime_bound(d.stop, tmp, scope, True))
                         for d in tmp.type.dims)
            tmp = replace(tmp, type=replace(tmp.type, dims=dims))
            used = {s.name for d in dims for b in (d.start, d.stop) for s in b.free_symbols}
            if loops := sorted(used & (self.loop_vars - set(scope.bindings))):
                self.loop_sized[tmp.name] = tuple(loops)
                self.loop_sized_types[tmp.name] = tmp.type
            temporaries.append(tmp)
            scope.bindings[tmp.name] = Binding(tmp.name, "temp", tmp.type)
        body = self.block(p.body, scope)
        return replace(p, body=body, temporaries=tuple(temporaries),
                       constraints=tuple(dict.fromkeys(p.constraints + tuple(self.constraints))))

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

    def control_expr(self, e: ir.Expr) -> None:
        """Program-level conditions and loop bounds become DaCe control flow, which
        computes scalars with these operations only: refuse others here, for
        every backend alike."""
        for node in ir.walk(e):
            if isinstance(node, ir.Call) and not (
                    isinstance(node.func, ir.Sym) and node.func.name in CONTROL_OPERATIONS):
                head = node.func.name if isinstance(node.func, ir.Sym) else "a lambda call"
                raise self.error(node, f"{head} cannot be used in a program-level condition "
                                       "or loop bound; they may use scalar parameters, size "
                                       "symbols, loop variables, literals, + - × / %, "
                                       "minimum, maximum, abs, if(c, a, b), comparisons "
                                       "and logic")

    def branch_constraints(self, cond: ir.Expr, scope: Scope, n: int, m: int) -> None:
        """The runtime constraints of an if-statement's branches (``n:m`` the
        then-branch's, ``m:`` the else-branch's) checked only where their branch
        runs, where the condition is an order of runtime bounds (``lo <= hi``)."""
        order = _order_of(cond, scope)
        if order is None:
            return
        lo, hi = order
        for k in range(n, len(self.constraints)):
            c = self.constraints[k]
            if c.guard:          # (a size order stays checked for every call)
                when = (lo, hi + 1) if k < m else (hi, lo)
                self.constraints[k] = replace(c, guard=c.guard + (when,))

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
                self.control_expr(c)
                n = len(self.constraints)
                then = self.block(tb, scope)
                m = len(self.constraints)
                orelse = self.block(eb, scope)
                self.branch_constraints(c, scope, n, m)
                return replace(s, cond=c, then_body=then, else_body=orelse)
            case ir.ForStmt(var=var, start=start, stop=stop, body=body):
                bounds = []
                for b in (start, stop):
                    tbound = self.expr(b, scope, ir.INT64)
                    t = self.tensor(tbound)
                    if t.dims or not (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int):
                        raise self.error(b, f"a for-loop bound must be a scalar integer, got {t}")
                    self.control_expr(tbound)
                    bounds.append(tbound)
                if (bound := scope.lookup(var)) is not None and bound.kind != "loop":
                    raise self.error(s, f"loop variable '{var}' shadows a parameter; rename it")
                inner = scope.child({var: Binding(var, "loop", ir.TensorType(ir.INT64))})
                loops = self.loops if self.loops is not None else []
                loops.append((var, self.loop_bound(bounds[0], scope),
                              self.loop_bound(bounds[1], scope)))
                try:
                    typed_body = self.block(body, inner)
                finally:
                    loops.pop()
                return replace(s, start=bounds[0], stop=bounds[1], body=typed_body)
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
            if vd is not None and any(ir.has_runtime(b) for b in (d.start, d.stop, vd.start,
                                                                   vd.stop)):
                self.runtime_covers(s.value, vd, d, ttype, name)
            elif vd is not None and not self.covers(s, vd, d, isinstance(target, ir.Call),
                                                    name):
                raise CoverageError(f"the expression is defined on {d.name}[{vd.start}:"
                                    f"{vd.stop}] but the target '{name}' needs {d.name}"
                                    f"[{d.start}:{d.stop}]", s.value.loc)
        # The neighbour masks of the value survive in the temporary it is stored in.
        stored = scope.lookup(name)
        if stored is not None and stored.kind == "temp" and isinstance(target, ir.Sym):
            masked = tuple(replace(d, mask=vd.mask)
                           if (vd := vtype.dim(d.name)) is not None and vd.mask is not None
                           else d for d in stored.type.dims)
            scope.rebind(replace(stored, type=replace(stored.type, dims=masked)))
        return replace(s, target=typed_target, value=value)

    def covers(self, s: ir.Assign, vd: ir.Dim, d: ir.Dim, subset: bool, name: str) -> bool:
        """Whether the value's interval ``vd`` covers the target's ``d``.  For a
        subset target (``domain={K: (0, 1)}``, ``out[1:3]``) an order that depends
        on the sizes is the user's assertion, checked at call time, as the
        subset's own bounds are."""
        if not subset:
            return self.decide(s, lambda: iv.covers(vd, d))
        pairs = [(vd.start, d.start), (d.stop, vd.stop)]
        orders = [iv.maybe_le(lo, hi) for lo, hi in pairs]
        if False in orders:
            return False
        where = (f"target range {d.name}[{d.start}:{d.stop}] of '{name}', which reads an "
                 f"expression defined on {d.name}[{vd.start}:{vd.stop}]"
                 + (f" at {s.value.loc}" if s.value.loc else "")
                 + "; shrink the range or guard the levels it cannot read with concat_where")
        self.constraints += [ir.SizeConstraint(lo, hi, where)
                             for (lo, hi), ok in zip(pairs, orders) if ok is None]
        return True

    def writable(self, target: ir.Sym, scope: Scope) -> Binding:
        binding = scope.lookup(target.name)
        if binding is None:
            raise self.error(target, f"cannot assign to unknown name '{target.name}'"
                             + did_you_mean(target.name, scope.names()))
        if binding.kind not in ("param", "temp"):
            raise self.error(target, f"cannot assign to {binding.kind} '{target.name}'")
        if binding.kind == "temp":
            self.require_loops(target, target.name, scope)
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
                    if binding.kind == "temp":
                        self.require_loops(e, name, scope)
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
                if self.loops is None:
                    return self.remembered_call(e, scope, expected)
                return self.call(e, scope, expected)
        raise self.error(e, f"unknown expression {type(e).__name__}")

    def remembered_call(self, e: ir.Call, scope: Scope, expected) -> ir.Expr:
        """``call``, remembered for single-expression checks (the front ends'):
        they type each new expression built from ones typed before, so without
        it checking a chain of nested choices took time quadratic in its depth.
        A typed call is reused for the same node, expected type and bindings
        of the names it uses (the objects themselves: a name rebound, or a
        lambda parameter of another application, is checked again).  Only the
        checked result is reused: the constraints it added were added the first
        time, and single-expression checks do not collect them."""
        bindings = tuple(scope.lookup(n) for n in self.names_of(e))
        hit = self.call_memo.get(id(e))
        if hit is not None and hit[0] is e and hit[1] == expected and \
                len(hit[2]) == len(bindings) and all(a is b for a, b in zip(hit[2], bindings)):
            return hit[3]
        typed = self.call(e, scope, expected)
        self.call_memo[id(e)] = (e, expected, bindings, typed)
        return typed

    def names_of(self, e: ir.Expr) -> tuple[str, ...]:
        """The names ``e`` uses (symbols anywhere in it), remembered by node."""
        hit = self.names_memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if isinstance(e, ir.Sym):
            names: tuple[str, ...] = (e.name,)
        else:   # from the parts' names: walking each subexpression again was quadratic
            names = tuple(dict.fromkeys(n for c in ir.children(e) if isinstance(c, ir.Expr)
                                        for n in self.names_of(c)))
        self.names_memo[id(e)] = (e, names)
        return names

    def literal(self, e: ir.Literal, expected: ir.ElementType | None) -> ir.Literal:
        if e.kind == "bool":
            return replace(e, type=ir.TensorType(ir.BOOL))
        dtype = ir.INT64 if e.kind == "int" else ir.FLOAT64
        if isinstance(expected, ir.ScalarType) and not expected.is_bool:
            if e.kind == "int" or expected.is_float:
                dtype = expected
        if e.kind == "int" and dtype.is_int:
            bits = 32 if dtype.name == "int32" else 64
            lo, hi = -2 ** (bits - 1), 2 ** (bits - 1) - 1
            if not lo <= e.value <= hi:
                raise self.error(e, f"the integer literal {literal_text(e)} does not fit in "
                                    f"{dtype} ({lo} to {hi})")
        return replace(e, type=ir.TensorType(dtype))

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
        if isinstance(func, ir.Call) and isinstance(root := ir_head(func), ir.Sym):
            head = ir.canonical_builtin(root.name)
            rule = getattr(self, "c_" + (head or ""), None)
            if rule is None:
                raise self.error(e, f"'{root.name}(…)' does not return a function")
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
        strong = [t for t in typed if not is_weak(t, self.weak_memo)]
        target: ir.ElementType | None
        if strong:
            target = self.tensor(strong[0]).dtype
        else:
            kinds = {self.tensor(t).dtype for t in typed}
            target = ir.FLOAT64 if ir.FLOAT64 in kinds else None
        if target is None:
            return typed
        out = []
        for t, r in zip(typed, raw):
            if is_weak(t, self.weak_memo) and self.tensor(t).dtype != target:
                t = self.expr(r, scope, target)
                if self.tensor(t).dtype != target and _is_reduce(r) and \
                        isinstance(target, ir.ScalarType) and not target.is_bool:
                    # a reduction types its accumulator itself: its result converts
                    cast = ir.Call(ir.Sym("cast", loc=r.loc), (r, ir.Sym(target.name, loc=r.loc)),
                                   loc=r.loc)
                    t = self.expr(cast, scope)
                if self.tensor(t).dtype != target:
                    raise self.error(r, f"the literal {literal_text(r)} cannot be used with a "
                                        f"{target} operand; write it as a {target} value")
            out.append(t)
        return out

    def broadcast(self, node: ir.Node | None, types: Sequence[ir.TensorType],
                  combine_masks: bool = False) -> tuple[ir.Dim, ...]:
        """Union of dimensions (first appearance order), intersection of intervals.
        ``combine_masks``: the result is absent where any operand is (element-wise
        operations), so two tables masking one dimension become one mask
        (:func:`both_masks`); else (``if``, pieces of ``concat``) the first mask."""
        dims: dict[str, ir.Dim] = {}
        for t in types:
            for d in t.dims:
                if d.name in dims:
                    prev = dims[d.name]
                    merged = self.decide(node, lambda: iv.intersect(prev, d))
                    if merged.mask is None and d.mask is not None:
                        merged = replace(merged, mask=d.mask)
                    elif combine_masks and (both := both_masks(prev, d)) is not None:
                        merged = replace(merged, mask=both)
                    # (an operand empty already, as a scan asked for no levels is,
                    # makes an empty value: nothing to overlap)
                    if self.decide(node, lambda: iv.is_empty(merged)) and \
                            not iv.is_empty(prev) and not iv.is_empty(d):
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
                fixed = [t for t in typed if isinstance(t, ir.Call) and t.func == ir.Sym("cast")
                         and isinstance(t.args[0], ir.Literal)]
                hint = (f"; the literal cast({literal_text(fixed[0].args[0])}, "
                        f"{fixed[0].type.dtype}) has a fixed type and does not adapt: give it "
                        "the other operand's type") if fixed else ""
                raise self.error(node, f"{name} needs operands of one element type, got "
                                       + " and ".join(str(x) for x in dtypes)
                                       + "; convert one with cast(…, T)" + hint)
        return dtypes[0]

    # ------------------------------------------------------------------ lambdas

    def bind_params(self, node: ir.Node, lam: ir.Lambda, arg_types: Sequence[ir.TensorType],
                    what: str, scope: Scope) -> dict[str, Binding]:
        if len(lam.params) != len(arg_types):
            raise self.error(node, f"{what}: the lambda takes {len(lam.params)} parameters "
                                   f"but gets {len(arg_types)} arguments")
        bindings = {}
        for p, at in zip(lam.params, arg_types):
            if p.name in bindings:
                raise self.error(p, f"{what}: the lambda has two parameters named "
                                    f"'{p.name}'; rename one")
            self.check_declared_type(p, p.type)
            pt = self.declared_bounds(p, scope)
            if pt.dtype != at.dtype:
                raise self.error(p, f"{what}: parameter '{p.name}' expects element type "
                                    f"{pt.dtype}, got {at.dtype}")
            if set(pt.dim_names) != set(at.dim_names):
                raise self.error(p, f"{what}: parameter '{p.name}' is declared {pt} but the "
                                    f"argument is {at}: the dimensions differ")
            dims = []
            for d in pt.dims:
                ad = at.dim(d.name)
                assert ad is not None   # the dimension names are the same (checked above)
                if not self.decide(p, lambda: iv.covers(ad, d)):
                    raise self.error(p, f"{what}: parameter '{p.name}' needs {d.name}"
                                        f"[{d.start}:{d.stop}] but the argument only covers "
                                        f"[{ad.start}:{ad.stop}]")
                dims.append(replace(d, mask=ad.mask))
            bindings[p.name] = Binding(p.name, "lambda", replace(pt, dims=tuple(dims)))
        return bindings

    def declared_bounds(self, p: ir.Param, scope: Scope) -> ir.TensorType:
        """A lambda parameter's declared type with the names of runtime values in
        its bounds made runtime symbols, as in a temporary's declaration (the
        printed program declares ``K[Max(0,k0):Min(N_K,k1)]`` with plain names).
        Names bound to other values are left as they are."""
        t = p.type
        if not any(d.start.free_symbols or d.stop.free_symbols for d in t.dims):
            return t
        return replace(t, dims=tuple(
            d.with_interval(self.runtime_bound(d.start, p, scope, lenient=True),
                            self.runtime_bound(d.stop, p, scope, lenient=True))
            for d in t.dims))

    def typed_lambda(self, lam: ir.Lambda, bindings: dict[str, Binding], scope: Scope,
                     expected=None) -> ir.Lambda:
        body = self.expr(lam.body, scope.child(bindings), expected)
        params = tuple(replace(p, type=bindings[p.name].type) for p in lam.params)
        return replace(lam, params=params, body=body,
                       type=ir.FunctionType(tuple(p.type for p in params), body.type))

    def apply_lambda(self, e: ir.Call, lam: ir.Lambda, scope: Scope, expected) -> ir.Expr:
        args = [self.expr(a, scope, p.type.dtype) for a, p in zip(e.args, lam.params)] \
            if len(e.args) == len(lam.params) else [self.expr(a, scope) for a in e.args]
        bindings = self.bind_params(e, lam, [self.tensor(a) for a in args], "lambda call",
                                    scope)
        typed = self.typed_lambda(lam, bindings, scope, expected)
        result = self.tensor(typed.body)
        subst = {p.name: a for p, a in zip(lam.params, args)}
        result = substitute_masks(result, subst)
        return replace(e, func=typed, args=tuple(args), type=result)

    # ------------------------------------------------------------------ shifts

    # ------------------------------------------------------------------ reduce / scan



@ir.with_recursion_room
def check(program: ir.Program) -> ir.Program:
    """Infer and check the types of a whole program; returns the typed program."""
    if not isinstance(program, ir.Program):
        raise TypeError(f"check() expects an ir.Program, got {type(program).__name__}")
    deep = ir.too_deep(program)
    if deep is not None:
        raise TypeCheckError(f"expressions nest more than {ir.MAX_DEPTH} levels deep; split "
                             "the expression with temporaries", deep.loc)
    return Checker(program).check_program()


def _order_of(cond: ir.Expr, scope: Scope) -> tuple[sympy.Expr, sympy.Expr] | None:
    """``(lo, hi)`` where ``cond`` is ``lo <= hi`` (or ``<``, ``>=``, ``>``) over
    integer bounds (:func:`.runtime.bound_of`), else None."""
    match cond:
        case ir.Call(func=ir.Sym(name=op), args=(x, y)) if op in (
                "less_equal", "less", "greater_equal", "greater"):
            a, b = bound_of(x, scope), bound_of(y, scope)
            if a is None or b is None:
                return None
            return {"less_equal": (a, b), "less": (a + 1, b),
                    "greater_equal": (b, a), "greater": (b + 1, a)}[op]
    return None


def _is_reduce(e: ir.Expr) -> bool:
    """``e`` is a reduction (``reduce(λ, init)(x)``, as ``neighbor_sum`` becomes)."""
    return isinstance(e, ir.Call) and isinstance(e.func, ir.Call) and \
        isinstance(e.func.func, ir.Sym) and e.func.func.name == "reduce"
