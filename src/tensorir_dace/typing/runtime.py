"""Runtime bounds: interval bounds that use scalar ``int`` parameters and loop variables.

Such bounds may appear in ``subset`` intervals (targets and pieces) and in
temporaries' types, never in parameter types (shapes are inferred from those).
An order that involves a runtime value cannot be decided here, so it becomes a
:class:`~tensorir_dace.ir.SizeConstraint` checked at call time, before anything
runs; an order that is false for every value is a type error.  ``lo >= hi`` is
an empty range: orders that only matter for the points of a range are guarded
by its non-emptiness.
"""

from __future__ import annotations

import sympy

from .. import intervals as iv
from .. import ir
from .rules import Rules
from .scope import Scope

#: Element types whose scalar parameters may be used as runtime bounds.
RUNTIME_DTYPES = (ir.INT64, ir.INT32)


def runtime_names(p: ir.Program) -> set[str]:
    """Names that may be runtime bounds: scalar int parameters and loop variables."""
    names = {q.name for q in p.params if q.type.is_scalar and q.type.dtype in RUNTIME_DTYPES}
    names |= {n.var for n in ir.walk(p) if isinstance(n, ir.ForStmt)}
    return names


def bound_of(e: ir.Expr, scope: Scope) -> sympy.Expr | None:
    """An integer scalar expression (literals, size symbols, int parameters, loop
    variables, + - ×) as a SymPy bound, or None when it is not one."""
    match e:
        case ir.Literal(kind="int", value=v):
            return sympy.Integer(v)
        case ir.Sym(name=n):
            b = scope.lookup(n)
            if b is None:
                return None
            if b.kind == "size":
                return ir.size_symbol(n)
            if b.kind == "loop" or (b.kind == "param" and b.type.is_scalar
                                    and b.type.dtype in RUNTIME_DTYPES):
                return ir.runtime_symbol(n)
        case ir.Call(func=ir.Sym(name=op), args=(x, y)) if op in ("plus", "minus",
                                                                     "multiplies"):
            lhs, rhs = bound_of(x, scope), bound_of(y, scope)
            if lhs is None or rhs is None:
                return None
            return {"plus": lhs + rhs, "minus": lhs - rhs, "multiplies": lhs * rhs}[op]
        case ir.Call(func=ir.Sym(name="neg"), args=(x,)):
            inner = bound_of(x, scope)
            return None if inner is None else -inner
    return None


class RuntimeBounds(Rules):
    """Mixin of :class:`~.checker.Checker`."""

    loops: list[tuple[str, sympy.Expr | None, sympy.Expr | None]] | None

    def runtime_bound(self, b: sympy.Expr, node: ir.Node, scope: Scope,
                      allow_loops: bool = True) -> sympy.Expr:
        """``b`` with the symbols of runtime values made runtime symbols."""
        subs = {}
        for s in b.free_symbols:
            binding = scope.lookup(s.name)
            if binding is None:
                continue
            if binding.kind == "size":
                subs[s] = ir.size_symbol(s.name)
                continue
            scalar_int = binding.type.is_scalar and binding.type.dtype in RUNTIME_DTYPES
            if binding.kind == "param" and scalar_int:
                subs[s] = ir.runtime_symbol(s.name)
            elif binding.kind == "loop" and allow_loops:
                if self.loops is not None and self.loop_range(s.name) is None:
                    raise self.error(node, f"loop variable '{s.name}' is used in a bound, so "
                                           "its loop's bounds must be integer expressions of "
                                           "int parameters, sizes, outer loop variables and "
                                           "literals")
                subs[s] = ir.runtime_symbol(s.name)
            elif binding.kind == "loop":
                raise self.error(node, f"loop variable '{s.name}' cannot size a temporary; "
                                       "use int parameters or size symbols")
            else:
                raise self.error(node, f"'{s.name}' cannot be used in a bound: bounds use "
                                       "size symbols, scalar int parameters, loop variables "
                                       f"and literals (got {binding.kind} of type "
                                       f"{binding.type})")
        return b.xreplace(subs) if subs else b

    def loop_range(self, var: str):
        for name, lo, hi in reversed(self.loops or []):
            if name == var:
                return None if lo is None or hi is None else (lo, hi)
        return None

    def loop_bound(self, e: ir.Expr, scope: Scope) -> sympy.Expr | None:
        """A for-loop bound as a SymPy expression, or None when it is not one."""
        return bound_of(e, scope)

    def enclosing_loops(self, *exprs: sympy.Expr) -> tuple:
        """The enclosing loops a constraint must be checked over (all of them when it
        uses a loop variable: inner loop bounds may depend on outer variables)."""
        names = {s.name for e in exprs for s in e.free_symbols}
        if not self.loops or not any(v in names for v, _, _ in self.loops):
            return ()
        return tuple((v, lo, hi) for v, lo, hi in self.loops)

    def runtime_order(self, node: ir.Node, lower: sympy.Expr, upper: sympy.Expr,
                      guard: tuple, bound: sympy.Expr, allowed: tuple, reason: str,
                      false_message: str) -> None:
        """Require ``lower <= upper`` where the ranges in ``guard`` are non-empty:
        statically when SymPy can decide it, else at call time."""
        ok = iv.maybe_le(lower, upper)
        if ok is True:
            return
        if ok is False:
            raise self.error(node, false_message)
        self.constraints.append(ir.SizeConstraint(
            lower, upper, reason, guard=guard,
            loops=self.enclosing_loops(lower, upper, *[x for g in guard for x in g]),
            bound=bound, allowed=allowed))

    def runtime_subset(self, a: ir.DimInterval, d: ir.Dim, sub: ir.Dim, guard: tuple,
                       where: str) -> None:
        """A non-empty runtime range must lie within the interval it restricts."""
        outside = f"{where} is not within {d.name}[{d.start}:{d.stop}] for any value"
        self.runtime_order(a, d.start, sub.start, guard, sub.start, (d.start, d.stop),
                           where, outside)
        self.runtime_order(a, sub.stop, d.stop, guard, sub.stop, (d.start, d.stop),
                           where, outside)

    def runtime_covers(self, node: ir.Node, vd: ir.Dim, d: ir.Dim, target: ir.TensorType,
                       name: str) -> None:
        """The expression must be defined on every point of a non-empty target range."""
        guard = tuple((x.start, x.stop) for x in target.dims
                      if ir.has_runtime(x.start) or ir.has_runtime(x.stop))
        where = (f"the target range {d.name}[{d.start}:{d.stop}] of '{name}' reads an "
                 f"expression defined on {d.name}[{vd.start}:{vd.stop}]"
                 + (f" at {node.loc}" if node.loc else ""))
        never = (f"the expression is defined on {d.name}[{vd.start}:{vd.stop}] but the "
                 f"target '{name}' needs {d.name}[{d.start}:{d.stop}] for every value")
        self.runtime_order(node, vd.start, d.start, guard, d.start, (vd.start, vd.stop),
                           where, never)
        self.runtime_order(node, d.stop, vd.stop, guard, d.stop, (vd.start, vd.stop),
                           where, never)

    def runtime_concat(self, node: ir.Node, axis: str, ds: list[ir.Dim]) -> None:
        """Pieces with runtime bounds must not be inverted, so that they partition
        the concatenation's interval in order."""
        for d in ds:
            if ir.has_runtime(d.start) or ir.has_runtime(d.stop):
                where = (f"concat piece {axis}[{d.start}:{d.stop}]"
                         + (f" at {node.loc}" if node.loc else ""))
                self.runtime_order(node, d.start, d.stop, (), d.stop,
                                   (d.start, ds[-1].stop), where,
                                   f"{where} is inverted for every value")
