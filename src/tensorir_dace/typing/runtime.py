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

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import intervals as iv
from .. import ir
from ..lazy import lazy_module
from .rules import Rules
from .scope import Scope

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

#: Element types whose scalar parameters may be used as runtime bounds.
RUNTIME_DTYPES = (ir.INT64, ir.INT32)


def runtime_names(p: ir.Program) -> set[str]:
    """Names that may be runtime bounds: scalar int parameters and loop variables."""
    names = {q.name for q in p.params if q.type.is_scalar and q.type.dtype in RUNTIME_DTYPES}
    names |= {n.var for n in ir.walk(p) if isinstance(n, ir.ForStmt)}
    return names


def loop_sized(p: ir.Program) -> dict[str, tuple[str, ...]]:
    """The temporaries of a typed program whose types use loop variables, each
    with those variables: such a temporary exists anew in every iteration."""
    loops = {n.var for n in ir.walk(p) if isinstance(n, ir.ForStmt)}
    out = {}
    for tmp in p.temporaries:
        used = sorted({s.name for d in tmp.type.dims for b in (d.start, d.stop)
                       for s in b.free_symbols if ir.is_runtime_symbol(s)} & loops)
        if used:
            out[tmp.name] = tuple(used)
    return out


def direction(e: sympy.Expr, var: str) -> int | None:
    """1 (or -1) when ``e`` never decreases (increases) as loop variable ``var``
    grows, 0 when it does not use it, None when that is not evident from its
    form (sums, constant multiples, Max and Min of monotone parts)."""
    if var not in {s.name for s in e.free_symbols}:
        return 0
    if isinstance(e, sympy.Symbol):
        return 1
    if isinstance(e, (sympy.Add, sympy.Max, sympy.Min)):
        ds = {direction(a, var) for a in e.args} - {0}
        return ds.pop() if len(ds) == 1 and None not in ds else None
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        d = direction(rest, var) if rest is not e and coeff != 0 else None
        return None if d is None else (d if coeff > 0 else -d)
    return None


def loop_hull(lo: sympy.Expr, hi: sympy.Expr, loops: Sequence[tuple[str, sympy.Expr,
                                                                    sympy.Expr]]):
    """The smallest ``lo`` and the largest ``hi`` over every iteration of ``loops``
    (outermost first), free of their variables, or the first variable they are not
    monotone in.  Monotone bounds take their extremes at the ends of a range; an
    empty inner range only widens the hull."""
    for var, start, stop in reversed(loops):
        dlo, dhi = direction(lo, var), direction(hi, var)
        if dlo is None or dhi is None:
            return var
        sym = {s.name: s for s in lo.free_symbols | hi.free_symbols}.get(var)
        if sym is None:
            continue
        lo = lo.xreplace({sym: start if dlo > 0 else stop - 1})
        hi = hi.xreplace({sym: stop - 1 if dhi > 0 else start})
    return lo, hi


def bound_of(e: ir.Expr, scope: Scope) -> sympy.Expr | None:
    """An integer scalar expression (literals, size symbols, int parameters, loop
    variables, + - ×, maximum and minimum) as a SymPy bound, or None when it is
    not one."""
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
        case ir.Call(func=ir.Sym(name=op), args=(x, y)) if op in ("maximum", "minimum"):
            # maximum(1, nflatlev) <= K: a clamped bound
            lhs, rhs = bound_of(x, scope), bound_of(y, scope)
            if lhs is None or rhs is None:
                return None
            return sympy.Max(lhs, rhs) if op == "maximum" else sympy.Min(lhs, rhs)
        case ir.Call(func=ir.Sym(name="neg"), args=(x,)):
            inner = bound_of(x, scope)
            return None if inner is None else -inner
    return None


@functools.lru_cache(maxsize=4096)
def _replaced(b: sympy.Expr, subs: tuple[tuple[sympy.Symbol, sympy.Symbol], ...]) -> sympy.Expr:
    """``b.xreplace(subs)``, remembered: sympy re-evaluates each nested Min/Max
    it rebuilds (slowly), and a program's bounds recur in many of its
    expressions (nested ``concat_where`` regions on a runtime level)."""
    return b.xreplace(dict(subs))


class RuntimeBounds(Rules):
    """Mixin of :class:`~.checker.Checker`."""

    loops: list[tuple[str, sympy.Expr | None, sympy.Expr | None]] | None
    loop_vars: set[str]                   # the program's loop variables
    loop_sized: dict[str, tuple[str, ...]]   # temporary -> the loop variables sizing it
    loop_sized_types: dict[str, ir.TensorType]

    def runtime_bound(self, b: sympy.Expr, node: ir.Node, scope: Scope,
                      declaration: bool = False, lenient: bool = False) -> sympy.Expr:
        """``b`` with the symbols of runtime values made runtime symbols.

        In a temporary's ``declaration`` (checked at program level, outside any
        loop) a loop variable of the program is a runtime symbol too; the
        temporary then exists inside that loop only (:meth:`require_loops`).
        ``lenient``: a name bound to another kind of value is left as it is
        (a lambda parameter's type, checked where the lambda is applied)."""
        subs = {}
        for s in b.free_symbols:
            binding = scope.lookup(s.name)
            if binding is None:
                if declaration and s.name in self.loop_vars:
                    subs[s] = ir.runtime_symbol(s.name)
                continue
            if binding.kind == "size":
                subs[s] = ir.size_symbol(s.name)
                continue
            scalar_int = binding.type.is_scalar and binding.type.dtype in RUNTIME_DTYPES
            if binding.kind == "param" and scalar_int:
                subs[s] = ir.runtime_symbol(s.name)
            elif binding.kind == "loop":
                self.require_loop_range(s.name, node)
                subs[s] = ir.runtime_symbol(s.name)
            elif not lenient:
                raise self.error(node, f"'{s.name}' cannot be used in a bound: bounds use "
                                       "size symbols, scalar int parameters, loop variables "
                                       f"and literals (got {binding.kind} of type "
                                       f"{binding.type})")
        if lenient:     # symbols already of their kind are kept: rebuilding a Min/Max
            subs = {k: v for k, v in subs.items() if k != v}   # simplifies its form
        return _replaced(b, tuple(sorted(subs.items(), key=str))) if subs else b

    def require_loop_range(self, var: str, node: ir.Node) -> None:
        """A loop variable used in a bound needs a loop range the call-time checks
        can enumerate."""
        if self.loops is not None and self.loop_range(var) is None:
            raise self.error(node, f"loop variable '{var}' is used in a bound, so its "
                                   "loop's bounds must be integer expressions of int "
                                   "parameters, sizes, outer loop variables and literals "
                                   "(with + - *, maximum and minimum)")

    def require_loops(self, node: ir.Node, name: str, scope: Scope) -> None:
        """A temporary sized by loop variables exists only inside loops over them."""
        for var in self.loop_sized.get(name, ()):
            binding = scope.lookup(var)
            if binding is None or binding.kind != "loop":
                raise self.error(node, f"temporary '{name}' is sized by the loop variable "
                                       f"'{var}', so it exists only inside a loop over "
                                       f"'{var}'; use it there, or size it with int "
                                       "parameters or size symbols")
            self.require_loop_range(var, node)
        if name in self.loop_sized and self.loops is not None:
            ranges = [(v, lo, hi) for v, lo, hi in self.loops if lo is not None
                      and hi is not None]
            for d in self.loop_sized_types[name].dims:
                hull = loop_hull(d.start, d.stop, ranges)
                if not isinstance(hull, str):
                    left = {x.name for b in hull for x in b.free_symbols} & self.loop_vars
                    hull = min(left) if left else hull
                if isinstance(hull, str):
                    raise self.error(node, f"temporary '{name}' is sized by {d.name}"
                                           f"[{d.start}:{d.stop}], whose bounds must grow "
                                           f"or shrink steadily with the loop variable "
                                           f"'{hull}' (sums, constant multiples, Max and "
                                           "Min of it) so that its storage can be sized "
                                           "before the loop")

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
                      guard: tuple, bound: sympy.Expr, allowed: tuple,
                      reason: Callable[[], str], false_message: Callable[[], str]) -> None:
        """Require ``lower <= upper`` where the ranges in ``guard`` are non-empty:
        statically when SymPy can decide it, else at call time.  The messages are
        functions: most orders are decided statically, and printing SymPy bounds
        into every message took a third of the time of checking programs with
        many runtime ranges."""
        ok = iv.maybe_le(lower, upper)
        if ok is True:
            return
        if ok is False:
            raise self.error(node, false_message())
        self.constraints.append(ir.SizeConstraint(
            lower, upper, reason(), guard=guard,
            loops=self.enclosing_loops(lower, upper, *[x for g in guard for x in g]),
            bound=bound, allowed=allowed))

    def runtime_subset(self, a: ir.DimInterval, d: ir.Dim, sub: ir.Dim, guard: tuple,
                       where: Callable[[], str]) -> None:
        """A non-empty runtime range must lie within the interval it restricts."""
        def outside() -> str:
            return f"{where()} is not within {d.name}[{d.start}:{d.stop}] for any value"
        self.runtime_order(a, d.start, sub.start, guard, sub.start, (d.start, d.stop),
                           where, outside)
        self.runtime_order(a, sub.stop, d.stop, guard, sub.stop, (d.start, d.stop),
                           where, outside)

    def runtime_covers(self, node: ir.Node, vd: ir.Dim, d: ir.Dim, target: ir.TensorType,
                       name: str) -> None:
        """The expression must be defined on every point of a non-empty target range."""
        guard = tuple((x.start, x.stop) for x in target.dims
                      if ir.has_runtime(x.start) or ir.has_runtime(x.stop))

        def where() -> str:
            return (f"the target range {d.name}[{d.start}:{d.stop}] of '{name}' reads an "
                    f"expression defined on {d.name}[{vd.start}:{vd.stop}]"
                    + (f" at {node.loc}" if node.loc else ""))

        def never() -> str:
            return (f"the expression is defined on {d.name}[{vd.start}:{vd.stop}] but "
                    f"the target '{name}' needs {d.name}[{d.start}:{d.stop}] for every value")
        self.runtime_order(node, vd.start, d.start, guard, d.start, (vd.start, vd.stop),
                           where, never)
        self.runtime_order(node, d.stop, vd.stop, guard, d.stop, (vd.start, vd.stop),
                           where, never)

    def runtime_concat(self, node: ir.Node, axis: str, ds: list[ir.Dim]) -> None:
        """Pieces with runtime bounds must not be inverted, so that they partition
        the concatenation's interval in order."""
        for d in ds:
            if ir.has_runtime(d.start) or ir.has_runtime(d.stop):
                def where(d: ir.Dim = d) -> str:
                    return (f"concat piece {axis}[{d.start}:{d.stop}]"
                            + (f" at {node.loc}" if node.loc else ""))
                def inverted(where: Callable[[], str] = where) -> str:
                    return f"{where()} is inverted for every value"
                self.runtime_order(node, d.start, d.stop, (), d.stop,
                                   (d.start, ds[-1].stop), where, inverted)
