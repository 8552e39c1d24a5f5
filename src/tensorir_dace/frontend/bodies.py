"""Translating the statements of ``@function`` bodies (and of defs they contain).

A function body is not translated into IR statements: it is evaluated, in
order, to the value of its ``return``.  Assignments bind local names;
``if`` on a static condition and ``for`` over constants are unrolled.  A
compound value used more than once is bound by a lambda application,
``(λ(v: T) → rest)(value)``, so nothing is computed twice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import ir
from ..errors import FrontendError
from ..typing.scope import Binding
from ..typing.util import is_weak
from .meshes import (
    compound_whole,
    holds_namedtuple,
    is_namedtuple_class,
    named_value,
    viewed_as,
    whole_of_projections,
)
from .nodes import FUNCTION_STATEMENTS, UNSUPPORTED_STATEMENTS, handler
from .reductions import ReductionTranslator
from .values import (
    Bind,
    LocalCallable,
    contains_ir,
    describe,
    is_ir,
    is_trivial,
    project,
    pushable,
    small_lets,
    strip_masks,
)


@dataclass(frozen=True)
class _Value:
    """What a statement handler returns when the body's value is known."""

    value: Any


def definitely_assigned(stmts: list) -> set[str]:
    """The names that ``stmts`` bind on every path through them: an assignment's
    targets, and of an ``if`` the names both of its branches bind (a loop may run
    no times, so its body binds none for sure)."""
    out: set[str] = set()
    for st in stmts:
        if isinstance(st, ast.If):
            out |= definitely_assigned(st.body) & definitely_assigned(st.orelse)
        elif isinstance(st, (ast.Assign, ast.AugAssign)) or \
                (isinstance(st, ast.AnnAssign) and st.value is not None):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            out |= {n.id for t in targets for n in ast.walk(t)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


class BodyTranslator(ReductionTranslator):
    """Adds function bodies: :meth:`block` and its ``f_<Node>`` statement handlers
    (see :data:`.nodes.FUNCTION_STATEMENTS`)."""

    def block(self, stmts: list, fdef: ast.AST) -> Any:
        """A function body: statements ending in return; returns the value.

        A statement handler returns ``None`` to go on with the rest, a
        :class:`_Value` when the body's value is known, or the statements to
        translate instead of the rest (an unrolled loop, the branch an ``if``
        chose, the bindings of an unpacked tuple)."""
        todo = list(stmts)
        while todo:
            s, rest = todo[0], todo[1:]
            method = handler(FUNCTION_STATEMENTS, self, s)
            if method is None:
                raise self.unsupported(s)
            outcome = method(s, rest)
            if isinstance(outcome, _Value):
                return outcome.value
            todo = rest if outcome is None else outcome
        if isinstance(fdef, ast.If):
            raise self.error(fdef, "a branch of this if statement ends the function without "
                                   "returning a value")
        raise self.error(fdef, f"function '{getattr(fdef, 'name', '<lambda>')}' ends without "
                               "returning a value")

    def f_Bind(self, s: Bind, rest: list) -> Any:
        if not s.let:
            self.env[s.name] = s.value
            return None
        let = self.bind_local(s.name, s.value, rest, None, force=s.force)
        return None if let is None else _Value(let)

    def f_Return(self, s: ast.Return, rest: list) -> Any:
        if s.value is None:
            raise self.error(s, "a Tensor IR function must return a value")
        return _Value(self.expr(s.value))

    def f_Assign(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign, rest: list) -> Any:
        if isinstance(s, ast.AnnAssign) and s.value is None:
            return None
        targets, value = self.assignment_parts(s)
        for tgt in targets:
            if isinstance(tgt, ast.Name):
                let = self.bind_local(tgt.id, value, rest, s)
                if let is not None:
                    return _Value(let)
            elif isinstance(tgt, (ast.Tuple, ast.List)):
                binds = self.unpack(tgt, value, s)
                if len(targets) > 1:
                    raise self.error(s, "chained assignment with unpacking is not supported")
                return binds + list(rest)
            else:
                raise self.error(tgt, "a function cannot write into a tensor; return "
                                      "the new value instead (programs write outputs)")
        return None

    def unpack(self, tgt: ast.Tuple | ast.List, value: Any, s: ast.stmt) -> list:
        """``a, b = value`` (also nested: ``a, (b, c) = value``) as bindings; a
        compound IR value is bound once first (a nested target then unpacks its
        part where that binding is in scope)."""
        for e in tgt.elts:
            if not isinstance(e, (ast.Name, ast.Tuple, ast.List)):
                raise self.error(e, "only names (and tuples of names) can be unpacked into")
        n = len(tgt.elts)
        binds: list = []
        like = None
        hidden = None
        if isinstance(value, tuple) and (whole := whole_of_projections(value)) is not None \
                and not is_trivial(whole):
            # a view of one tuple value (``q, t = where(m, (q, te), …)``): bound once,
            # not copied into each element
            like, value = value, whole
        if is_ir(value) and not is_trivial(value) and \
                not (pushable(value) and (small_lets(value) or self.parts_differ(value, n, s))):
            self.unpack_value(value, n, s)   # checks the arity
            hidden = self.ctx.fresh("t")
            binds.append(Bind(hidden, value, let=True, force=True))
            hsym = ir.Sym(hidden, loc=self.loc(s))
            parts = [project(hsym, k, self.loc(s)) for k in range(n)]
            if like is not None:
                parts = [viewed_as(x, p, self.loc(s)) if isinstance(x, tuple) else p
                         for x, p in zip(like, parts)]
        else:
            parts = self.unpack_value(value, n, s)
            if like is not None:     # each part seen as the view's element (a NamedTuple)
                parts = [viewed_as(x, p, self.loc(s)) if isinstance(x, tuple) else p
                         for x, p in zip(like, parts)]
        for k, (e, part) in enumerate(zip(tgt.elts, parts)):
            if isinstance(e, (ast.Tuple, ast.List)) and hidden is not None:
                # the part reads the hidden binding: unpacked after it, in its scope
                # (the name holds a dot, so no Python name can meet it)
                held = f"{hidden}.{k}"
                later = ast.Assign(targets=[e], value=ast.Name(id=held, ctx=ast.Load()))
                binds += [Bind(held, part), ast.fix_missing_locations(
                    ast.copy_location(later, s))]
            elif isinstance(e, (ast.Tuple, ast.List)):
                binds += self.unpack(e, part, s)
            elif isinstance(e, ast.Name) and e.id != "_":
                binds.append(Bind(e.id, part, let=True))
        return binds

    def f_Expr(self, s: ast.Expr, rest: list) -> Any:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return None   # docstring
        raise self.error(s, "this expression statement has no effect; assign or return its "
                            "value")

    def f_Pass(self, s: ast.Pass, rest: list) -> Any:
        return None

    def f_If(self, s: ast.If, rest: list) -> Any:
        c = self.expr(s.test)
        if contains_ir(c):
            v = self.scalar_if(s, c, rest)
            return v if isinstance(v, list) else _Value(v)    # (a list: the rest, merged)
        chosen = s.body if self.static_truth(c, s.test) else s.orelse
        return list(chosen) + list(rest)

    def scalar_if(self, s: ast.If, c: Any, rest: list) -> Any:
        """``if flag: … else: …`` on a scalar (GT4Py's if statement): each branch
        followed by the rest of the body is the function's value on that side,
        and the value is ``if(flag, then, else)``; where the branches only assign
        (:meth:`merged_if`), the statements that bind the chosen values, then the
        rest.  In a scan or reduction body
        (GT4Py's per-column scalars) the flag may vary along the other dimensions:
        ``if`` then chooses element-wise, as ``where`` does."""
        cond = self.to_ir(c, s.test)
        t = self.type_of(cond, s.test)
        if t.dtype != ir.BOOL or not (t.is_scalar or self.ctx.pointwise > 0):
            raise self.error(s.test, f"an if statement inside a function needs a scalar bool "
                                     f"condition, got {t}; use where(c, a, b) for an "
                                     "element-wise choice or concat_where for a boundary")
        merged = self.merged_if(s, cond, rest)
        if merged is not None:
            return merged
        saved = dict(self.env)
        try:
            then = self.block(list(s.body) + list(rest), s)
            self.env = dict(saved)
            orelse = self.block(list(s.orelse) + list(rest), s)
        finally:
            self.env = saved
        value = self.call_ir("if", (cond, self.to_ir(then, s), self.to_ir(orelse, s)), s)
        if type(then) is type(orelse) and is_namedtuple_class(type(then)):
            return named_value(type(then), value, self.loc(s))   # result.x still works
        return value

    def merged_if(self, s: ast.If, cond: ir.Expr, rest: list) -> list | None:
        """``if flag: …`` on a scalar whose branches only assign: each branch's
        values of the names it assigns, chosen by ``if(flag, …)`` once, and the
        rest of the body translated once (not once per branch).  A name bound
        in one branch only (a temporary of that branch) is left out where the
        rest does not read it.  None where a branch returns, or assigns a name
        that is unbound on the other side and read afterwards."""
        branches = (list(s.body), list(s.orelse))
        if any(isinstance(n, ast.Return) for b in branches for st in b for n in ast.walk(st)):
            return None
        assigned = [{n.id for st in b for n in ast.walk(st)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                    for b in branches]
        # a name bound on every path through both branches (an inner if/else binds
        # it only where both of its own branches do), or bound before the if
        definite = [definitely_assigned(b) for b in branches]
        one_sided = {n for n in assigned[0] | assigned[1]
                     if n not in self.env and not all(n in d for d in definite)}
        read_later = {n.id for st in rest for n in ast.walk(st)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if one_sided & read_later:
            return None
        names = sorted((assigned[0] | assigned[1]) - one_sided)
        if not names:
            return None
        saved = dict(self.env)
        values = []
        try:
            for b in branches:
                self.env = dict(saved)
                ret = ast.copy_location(ast.Return(ast.copy_location(ast.Tuple(
                    [ast.copy_location(ast.Name(n, ast.Load()), s) for n in names],
                    ast.Load()), s)), s)
                values.append(self.block(b + [ret], s))
        finally:
            self.env = saved
        # a branch's value that is a view of one compound value (a call's result
        # holding NamedTuples) is chosen whole, not copied into each name's choice
        plain = [compound_whole(v) for v in values]
        if not all(isinstance(v, tuple) or is_ir(v) for v in plain):
            return None
        loc = self.loc(s)
        binds: list = []
        if all(isinstance(v, tuple) for v in plain):
            # a choice per name: each name is defined wherever its own values are
            try:
                each = [[self.to_ir(v[k], s) for v in plain] for k in range(len(names))]
            except FrontendError:
                return None
            for k, n in enumerate(names):
                hidden = self.ctx.fresh("if")
                binds.append(Bind(hidden, self.call_ir("if", (cond, *each[k]), s), let=True,
                                  force=True))
                binds.append(Bind(n, self.named_part(ir.Sym(hidden, loc=loc), values, k, loc),
                                  let=True))
            return binds + list(rest)
        try:
            both = [self.to_ir(v, s) for v in plain]
        except FrontendError:
            return None
        hidden = self.ctx.fresh("if")
        hsym = ir.Sym(hidden, loc=loc)
        binds.append(Bind(hidden, self.call_ir("if", (cond, *both), s), let=True, force=True))
        for k, n in enumerate(names):
            binds.append(Bind(n, self.named_part(project(hsym, k, loc), values, k, loc), let=True))
        return binds + list(rest)

    @staticmethod
    def named_part(part: ir.Expr, values: list, k: int, loc: Any) -> Any:
        """``part`` seen as the NamedTuple its branch values at ``k`` both are (or
        with the NamedTuples a branch's tuple at ``k`` holds)."""
        kinds = {type(v[k]) for v in values if isinstance(v, tuple)}
        if len(kinds) == 1 and is_namedtuple_class(c := kinds.pop()):
            return named_value(c, part, loc)
        like = next((v[k] for v in values if isinstance(v, tuple) and holds_namedtuple(v[k])),
                    None)
        return part if like is None else viewed_as(like, part, loc)

    def f_For(self, s: ast.For, rest: list) -> Any:
        return self.unroll(s) + list(rest)

    def f_FunctionDef(self, s: ast.FunctionDef, rest: list) -> Any:
        if s.decorator_list:
            raise self.error(s, "decorators on nested functions are not supported")
        self.env[s.name] = LocalCallable(s, self)
        return None

    def unsupported(self, s: ast.AST) -> FrontendError:
        what = UNSUPPORTED_STATEMENTS.get(type(s), type(s).__name__)
        hint = ""
        if isinstance(s, ast.While):
            hint = "; use 'for t in range(n)' in a program, or a scan_operator for a " \
                   "recurrence along a dimension"
        elif isinstance(s, (ast.Break, ast.Continue)):
            hint = "; loops cannot be left early"
        return self.error(s, f"{what} {'are' if what.endswith('s') else 'is'} not supported "
                             f"in Tensor IR code{hint}")

    def assignment_parts(self, s) -> tuple[list[ast.AST], Any]:
        if isinstance(s, ast.Assign):
            return list(s.targets), self.expr(s.value)
        if isinstance(s, ast.AnnAssign):
            assert s.value is not None   # a declaration without value binds nothing
            return [s.target], self.expr(s.value)
        # AugAssign: x op= v  →  x = x op v
        tgt = s.target
        if not isinstance(tgt, ast.Name):
            raise self.error(tgt, "augmented assignment needs a name on the left")
        load = ast.copy_location(ast.Name(tgt.id, ast.Load()), tgt)
        binop = ast.copy_location(ast.BinOp(load, s.op, s.value), s)
        return [tgt], self.expr(binop)

    def unpack_names(self, tgt: ast.Tuple | ast.List) -> list[str]:
        names = []
        for e in tgt.elts:
            if not isinstance(e, ast.Name):
                raise self.error(e, "only names can be unpacked into")
            names.append(e.id)
        return names

    def unpack_value(self, value: Any, n: int, node: ast.AST) -> list[Any]:
        if isinstance(value, tuple):
            if len(value) != n:
                raise self.error(node, f"cannot unpack a tuple of {len(value)} values into "
                                       f"{n} names")
            return list(value)
        if is_ir(value):
            t = self.type_of(value, node)
            if not isinstance(t.dtype, ir.TupleType):
                raise self.error(node, f"cannot unpack {t}: it is not tuple-typed")
            if len(t.dtype.elements) != n:
                raise self.error(node, f"cannot unpack {t.dtype} ({len(t.dtype.elements)} "
                                       f"elements) into {n} names")
            return [project(value, k, self.loc(node)) for k in range(n)]
        try:
            vals = list(value)
        except TypeError:
            raise self.error(node, f"cannot unpack {describe(value)}") from None
        if len(vals) != n:
            raise self.error(node, f"cannot unpack {len(vals)} values into {n} names")
        return vals

    def bind_local(self, name: str, value: Any, rest: list, node: ast.AST | None,
                   force: bool = False, like: tuple | None = None) -> Any:
        """Bind a local; a compound value used more than once becomes a let (lambda)
        (still seen with the NamedTuples of the tuple ``like`` it was built as, at
        any depth)."""
        # a value of Python numbers alone is not bound: each use keeps adapting to
        # its partner (``m = where(c, 1, 0)`` used with int32 and with float32 fields)
        if is_ir(value) and not is_trivial(value) and \
                (force or (uses_of(name, rest) > 1 and not is_weak(value))):
            t = strip_masks(self.type_of(value, node))
            fresh = name if force else self.ctx.fresh(name)
            loc = self.loc(node)
            sub = self.new_translator(self.source, dict(self.env),
                                      self.scope.child({fresh: Binding(fresh, "lambda", t)}),
                                      self.owner)
            if not force:
                # (a forced binding is the hidden value of ``a, b = …``: its IR name is
                # no Python name, and must not hide one, such as a parameter ``t``)
                sym = ir.Sym(fresh, loc=loc)
                self.mark_broadcast_like(sym, value)
                sub.env[name] = sym if like is None else viewed_as(like, sym, loc)
            result = sub.block(list(rest), self.source.node)
            call = ir.Call(ir.Lambda((ir.Param(fresh, t, loc=loc),), sub.to_ir(result, node),
                                     loc=loc), (value,), loc=loc)
            if holds_namedtuple(result):      # the body's value.x (r[1].x) still works
                return viewed_as(result, call, loc)
            return call
        if isinstance(value, tuple) and contains_ir(value) and uses_of(name, rest) > 1:
            like = value if holds_namedtuple(value) else None
            return self.bind_local(name, self.to_ir(value, node), rest, node, like=like)
        if like is not None and is_ir(value):       # a view of a trivial value stays one
            value = viewed_as(like, value, self.loc(node))
        self.env[name] = value
        return None

    def mark_broadcast_like(self, name: ir.Sym, value: ir.Expr) -> None:
        """Give the name of a let-bound ``value`` the dimensions that broadcasts
        inside ``value`` stand for (GT4Py's broadcast values, which Tensor IR
        broadcasts by name), so that a parameter annotated with them takes it."""
        spread: set[str] = set()
        for n in ir.walk(value):
            mark = self.ctx.broadcasts.get(id(n))
            if mark is not None and mark[0] is n:
                spread |= mark[1]
        if spread:
            self.ctx.broadcasts[id(name)] = (name, frozenset(spread))

    def unroll(self, s: ast.For) -> list:
        if s.orelse:
            raise self.error(s, "for … else is not supported")
        it = self.expr(s.iter)
        if contains_ir(it):
            raise self.error(s.iter, "a for loop inside a function must run over constants "
                                     "(e.g. range(3)); loops over scalar parameters belong "
                                     "in a @program")
        try:
            values = list(it)
        except TypeError:
            raise self.error(s.iter, f"cannot iterate over {describe(it)}") from None
        for n in ast.walk(s):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
                raise self.error(n, "break, continue and return are not supported inside a "
                                    "loop that is unrolled")
        out: list = []
        for v in values:
            if isinstance(s.target, ast.Name):
                out.append(Bind(s.target.id, v))
            elif isinstance(s.target, ast.Tuple):
                names = self.unpack_names(s.target)
                vals = self.unpack_value(v, len(names), s.target)
                out += [Bind(n, x) for n, x in zip(names, vals)]
            else:
                raise self.error(s.target, "unsupported loop target")
            out += list(s.body)
        return out

    # ------------------------------------------------------------------ builtins


def uses_of(name: str, stmts: Iterable[Any]) -> int:
    """How often ``name`` is read in ``stmts`` before it is reassigned (loops and
    nested functions count double)."""
    total = 0
    for s in stmts:
        if isinstance(s, Bind):
            if s.name == name:
                return total
            continue
        if isinstance(s, ast.expr):
            total += _load_counts(s).get(name, 0)
            continue
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            value = s.value
            total += _load_counts(value).get(name, 0) if value is not None else 0
            if isinstance(s, ast.AugAssign):
                total += _load_counts(s.target).get(name, 0) + (
                    1 if isinstance(s.target, ast.Name) and s.target.id == name else 0)
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            reassigned = any(name in _stored_names(t) for t in targets)
        else:
            total += _load_counts(s).get(name, 0)
            reassigned = name in _stored_names(s)
        if reassigned or total > 1:
            return total
    return total


_LOOPING = (ast.For, ast.While, ast.Lambda, ast.FunctionDef, ast.comprehension)


def _load_counts(node: ast.AST) -> dict[str, int]:
    """How often each name is read in ``node`` (reads inside loops and nested
    functions count double per level), remembered on the node: a scan body
    asks this of the statements after each of its assignments."""
    hit = getattr(node, "_tir_load_counts", None)
    if hit is not None:
        return hit
    counts: dict[str, int] = {}
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load):
            counts[node.id] = 1
    else:
        weight = 2 if isinstance(node, _LOOPING) else 1
        for c in ast.iter_child_nodes(node):
            for n, k in _load_counts(c).items():
                counts[n] = counts.get(n, 0) + weight * k
    node._tir_load_counts = counts  # type: ignore[attr-defined]
    return counts


def _stored_names(node: ast.AST) -> frozenset[str]:
    """The names ``node`` assigns anywhere in it, remembered on the node."""
    hit = getattr(node, "_tir_stored_names", None)
    if hit is None:
        hit = frozenset(n.id for n in ast.walk(node)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        node._tir_stored_names = hit  # type: ignore[attr-defined]
    return hit
