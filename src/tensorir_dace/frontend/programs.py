"""Translating ``@program`` bodies into IR statements: control flow and
declarations (assignments in :mod:`.assignments`).

:func:`translate_program` is the entry point: the (unchecked) IR program of a
``@program`` for given parameter types.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals as iv
from .. import ir
from ..errors import CoverageError, FrontendError, TensorIRError
from ..lazy import lazy_module
from ..typing.runtime import bound_of
from ..typing.scope import Binding
from .annotations import annotation_spec
from .assignments import AssignmentTranslator, uncovered
from .builtin_calls import GAP_CHECK, either_side
from .context import ProgramContext, with_open_margins
from .dims import Dimension, DimSpec, NeighborDimension
from .nodes import PROGRAM_STATEMENTS, handler
from .runtime_bounds import interval
from .source import source_info
from .values import LocalCallable, contains_ir, describe, project

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


class ProgramTranslator(AssignmentTranslator):
    """Translates a ``@program`` body into Tensor IR statements.

    * ``out = e`` / ``out[...] = e`` writes a tensor parameter;
      ``out[1:-1, 1:-1] = e`` writes a subset (slices relative to the array);
    * ``tmp = e`` for a new name declares a temporary of ``e``'s type (a scalar
      or static value is a plain alias instead); ``tmp: Tensor[…] = e``
      declares it explicitly;
    * ``a, b = e`` unpacks tuples; ``f(x, out=y)`` is ``y = f(x)``;
    * ``if`` on a scalar condition is an IR ``if`` statement (on a static
      value, the branch is chosen now); ``for t in range(a, b)`` is an IR ``for``.
    """

    # ------------------------------------------------------------------ statements

    def statements(self, stmts: Sequence[ast.stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out += self.statement(s)
        return out

    def statement(self, s: ast.stmt) -> list[ir.Stmt]:
        method = handler(PROGRAM_STATEMENTS, self, s)
        if method is None:
            raise self.unsupported(s)
        self.ctx.close_open()       # (values of other statements are not shifted here)
        return method(s)

    def p_Assign(self, s: ast.Assign) -> list[ir.Stmt]:
        with self.target_intervals(s.targets[0] if len(s.targets) == 1 else None):
            value = self.expr(s.value)
        out: list[ir.Stmt] = []
        for tgt in s.targets:
            out += self.assign(tgt, value, s)
        return out

    def p_AugAssign(self, s: ast.AugAssign) -> list[ir.Stmt]:
        tgt = s.target
        base = tgt.value if isinstance(tgt, ast.Subscript) else tgt
        if not isinstance(base, ast.Name):
            raise self.error(tgt, "augmented assignment needs a name or name[…] on the left")
        load = ast.copy_location(ast.Name(base.id, ast.Load()), base)
        with self.target_intervals(tgt):
            value = self.expr(ast.copy_location(ast.BinOp(load, s.op, s.value), s))
        return self.assign(tgt, value, s)

    def p_Expr(self, s: ast.Expr) -> list[ir.Stmt]:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return []
        if isinstance(s.value, ast.Call) and any(k.arg == "out" for k in s.value.keywords):
            call = s.value
            out_node = self.spread_out(next(k.value for k in call.keywords if k.arg == "out"))
            domain = next((k.value for k in call.keywords if k.arg == "domain"), None)
            rest = [k for k in call.keywords if k.arg not in ("out", "domain")]
            inner = ast.copy_location(ast.Call(call.func, call.args, rest), call)
            if domain is not None and isinstance(out_node, (ast.Tuple, ast.List)):
                return self.emit_tuple_in_domain(out_node, domain, inner, s)
            if domain is not None:      # GT4Py's spelling: write only that sub-domain
                return self.emit_in_domain(self.domain_target(out_node, domain), inner, s)
            first = next(iter(_leaves_of(out_node)), None)
            if isinstance(out_node, (ast.Tuple, ast.List)):
                on_first = self.tuple_on_first(out_node)
                if on_first is not None:
                    return self.emit_tuple_on(out_node, on_first, inner, s)
            if isinstance(first, ast.Name) and self.kinds.get(first.id) in ("param", "temp"):
                # GT4Py: the domain is the output's whole field (scans run over it,
                # and from a concat_where's first level where they are its branch);
                # the parts of a tuple share the first one's
                whole = ir.Sym(self.env[first.id].name, loc=self.loc(first))
                with self.target_intervals(out_node), self.scans_in(whole):
                    value = self.fit_domain_scans(self.expr(inner), inner)
                self.check_parts_cover(out_node, value, inner)
                return self.assign(out_node, value, s)
            with self.target_intervals(out_node):
                value = self.expr(inner)
            self.check_parts_cover(out_node, value, inner)
            return self.assign(out_node, value, s)
        raise self.error(s, "this expression statement has no effect; assign its value to "
                            "an output (out[...] = …) or pass out=…")

    def spread_out(self, node: ast.expr) -> ast.expr:
        """``out=`` naming a parameter annotated with a tuple over different
        dimensions, which the program takes element by element (its name is the
        tuple of its elements' parameters): the tuple of those names, nested as
        the annotation is (``out=q`` is ``out=(q_e, q_c)``)."""
        if isinstance(node, (ast.Tuple, ast.List)):
            elts = [self.spread_out(e) for e in node.elts]
            if all(a is b for a, b in zip(elts, node.elts)):
                return node
            return ast.copy_location(ast.Tuple(elts, ast.Load()), node)
        if not isinstance(node, ast.Name) or self.kinds.get(node.id) != "alias" or \
                not isinstance(self.env.get(node.id), tuple):
            return node
        python = {p.name: self.ctx.python_name(p) for p in self.ctx.params}

        def names(v: Any) -> ast.expr | None:
            if isinstance(v, tuple):
                elts = [e for x in v if (e := names(x)) is not None]
                if len(elts) != len(v):
                    return None
                return ast.copy_location(ast.Tuple(elts, ast.Load()), node)
            if isinstance(v, ir.Sym) and v.name in python:
                return ast.copy_location(ast.Name(python[v.name], ast.Load()), node)
            return None
        return names(self.env[node.id]) or node

    def check_parts_cover(self, out_node: ast.AST, value: Any, call: ast.Call) -> None:
        """``f(…, out=(a, b))`` without ``domain=``: each part of the tuple value
        covers its output, else the error names that output and that part's own
        intervals (one tensor of the tuple holds only the intervals all its parts
        share, so the first output would otherwise be named for another's part)."""
        if not isinstance(out_node, (ast.Tuple, ast.List)):
            return
        loc = self.loc(call)
        for k, node in enumerate(out_node.elts):
            if isinstance(value, tuple):
                if len(value) != len(out_node.elts):
                    return          # assign() reports the mismatch
                part = value[k]
            elif contains_ir(value):
                part = project(self.to_ir(value, call), k, loc)
            else:
                return
            if isinstance(node, (ast.Tuple, ast.List)):
                self.check_parts_cover(node, part, call)
                continue
            if not (isinstance(node, ast.Name) and self.kinds.get(node.id) in ("param", "temp")
                    and contains_ir(part)):
                continue
            try:
                pt = self.type_of(self.to_ir(part, call), call)
            except TensorIRError:
                return              # assign() reports it
            tt = self.tensor_type(self.env[node.id].name)
            for d, vd in uncovered(pt, tt):
                raise CoverageError(
                    f"part {k} of the value is defined on {d.name}[{vd.start}:{vd.stop}] "
                    f"but its output '{node.id}' needs {d.name}[{d.start}:{d.stop}]; give "
                    "domain= (or a tuple of domains, one per output)", loc)

    def emit_in_domain(self, target: ir.Expr, call: ast.Call, s: ast.stmt) -> list[ir.Stmt]:
        """``f(…, out=o, domain={…})``: the value written into the sub-domain
        ``target``.  Where a ``concat_where`` gap lies between pieces and both
        bounds of the domain are runtime, the domain may lie on either side of
        it: the statement taking it above the gap (pieces beyond it kept) runs
        where the start lies at the gap's end or above, the one taking it below
        elsewhere, and the call checks that the stop then lies at the gap's
        start or below (a domain meeting the gap is refused)."""
        def translate(below: bool) -> list[ir.Stmt]:
            saved = self.ctx.gap_below_stop
            self.ctx.gap_below_stop = below
            try:
                with self.target_intervals(target), self.scans_in(target):
                    value = self.fit_domain_scans(self.to_ir(self.expr(call), call), call)
                return [self.emit(target, value, s)]
            finally:
                self.ctx.gap_below_stop = saved

        n = len(self.ctx.constraints)
        above = translate(False)
        side = either_side(self.ctx.constraints[n:])
        if side is None:
            return above
        end, start = side
        first = self.ctx.constraints[n:]
        del self.ctx.constraints[n:]
        temporaries = len(self.ctx.temporaries)
        try:
            with self.ctx.undeferred():
                below = translate(True)
        except TensorIRError:
            below = None
            del self.ctx.temporaries[temporaries:]
        second = self.ctx.constraints[n:]
        if below is None or either_side(second) is not None:
            self.ctx.constraints[n:] = first       # no other side: the start is checked
            return above
        # the start's check is the branch's condition; the other side's checks hold
        # where the start lies below the gap's end
        cond = ir.Call(ir.Sym("less_equal", loc=self.loc(call)),
                       (self.bound_ir(end, call), self.bound_ir(start, call)),
                       loc=self.loc(call))
        checked = next(c for c in first if (c.lower, c.upper) == side)

        def other_side(c: ir.SizeConstraint) -> ir.SizeConstraint:
            """A check of the stop below the gap, where the start lies below its end:
            it names the start and its range, as the check of the start would."""
            if GAP_CHECK not in c.reason:
                return c
            return dataclasses.replace(
                c, bound=checked.bound, allowed=checked.allowed,
                reason=f"{checked.reason}, or the domain must lie below the gap: its "
                       f"stop at {c.upper} or below")
        self.ctx.constraints[n:] = [
            self.ctx.derived(c, dataclasses.replace(c, guard=c.guard + ((end, start + 1),)))
            if c.guard else c for c in first if c is not checked] + [
            self.ctx.derived(c, dataclasses.replace(other_side(c),
                                                    guard=c.guard + ((start, end),)))
            if c.guard else c for c in second]
        return [ir.IfStmt(cond, tuple(above), tuple(below), loc=self.loc(s))]

    def tuple_on_first(self, out_node: ast.Tuple | ast.List) -> list[ir.Expr] | None:
        """``out=(a, b)`` without ``domain=`` whose outputs differ in length (a
        half-level output beside a full-level one): as in GT4Py, the domain is
        the first output's, so each output restricted to the first one's
        intervals; None where they all have the same intervals or an output is
        not a parameter or temporary."""
        leaves = [t for t in _leaves(out_node) if isinstance(t, ast.Name)
                  and self.kinds.get(t.id) in ("param", "temp")]
        if not leaves or len(leaves) != len(_leaves(out_node)):
            return None
        types = [self.tensor_type(self.env[t.id].name) for t in leaves]
        first = types[0]
        if len({tuple((d.name, d.start, d.stop) for d in t.dims) for t in types}) == 1 or \
                not all(tuple(d.name for d in t.dims) == tuple(d.name for d in first.dims)
                        for t in types):
            return None
        targets: list[ir.Expr] = []
        for node, t in zip(leaves, types):
            loc = self.loc(node)
            sym = ir.Sym(self.env[node.id].name, loc=loc)
            if all(d.start == f.start and d.stop == f.stop for d, f in zip(t.dims, first.dims)):
                targets.append(sym)
                continue
            targets.append(ir.Call(ir.Sym("subset", loc=loc), (sym,) + tuple(
                interval(f.name, f.start, f.stop, loc) for f in first.dims), loc=loc))
        return targets

    def emit_tuple_on(self, out_node: ast.Tuple | ast.List, targets: list[ir.Expr],
                      call: ast.Call, s: ast.stmt) -> list[ir.Stmt]:
        """Each part of ``call``'s tuple value written into its target of
        ``targets`` (the leaves of ``out_node``, each restricted to one domain)."""
        first = targets[0]
        with self.target_intervals(first), self.scans_in(first):
            value = self.fit_domain_scans(self.expr(call), call)
        names = {b.name for t in targets
                 if isinstance(b := t.args[0] if isinstance(t, ir.Call) else t, ir.Sym)}
        differ = len({_target_intervals(t) for t in targets}) > 1
        out, parts = self.nested_parts(value, out_node, names, s, differ)
        return out + [self.emit(t, self.to_ir(p, call), s) for t, p in zip(targets, parts)]

    def emit_tuple_in_domain(self, out_node: ast.Tuple | ast.List, domain: ast.AST,
                             call: ast.Call, s: ast.stmt) -> list[ir.Stmt]:
        """``f(…, out=(a, b), domain={…})``: each part of ``f``'s tuple value written
        into the same sub-domain of its output; ``out=`` may be nested as the
        value is (``out=((a, b), c)``).  GT4Py's tuple of domains gives each
        output its own, following the nesting of ``out=`` (``domain=({…}, {…})``;
        a dict for a nested output covers its leaves): the call is translated once,
        over the union of the domains, and each scan runs over the union of the
        domains of the outputs that read it (GT4Py's domain inference)."""
        groups = self.domain_groups(out_node, domain)
        if groups is None:
            targets = [self.domain_target(t, domain) for t in _leaves(out_node)]
            first = targets[0] if targets else None
            with self.target_intervals(first), self.scans_in(first):
                value = self.fit_domain_scans(self.expr(call), call)
        else:
            targets, chosen = [], {}
            mines = [[self.domain_target(t, dnode, dvalue) for t in _leaves_of(node)]
                     for _, node, dnode, dvalue in groups]
            # GT4Py computes the call once, over the union of the domains, and each
            # output takes its part: a scan starts at the union's first level (a
            # surface flux written on the last level only is the whole column's)
            union = _union_target([t for mine in mines for t in mine])
            doms = [{a.name: a for a in mine[0].args[1:] if isinstance(a, ir.DimInterval)}
                    if isinstance(mine[0], ir.Call) else {} for mine in mines]
            with self.target_intervals(union), self.scans_in(union):
                self.ctx.part_domains = doms
                try:
                    value = self.expr(call)     # once: GT4Py computes it once too
                finally:
                    self.ctx.part_domains = []
                # the part of the value these outputs take: a plain tuple_get, so
                # that the targets share one temporary, unless the selection pushed
                # into the lets leaves a scan to some of the outputs only: that scan
                # is then fitted to their domains alone
                parts = self.parts_of(value, [path for path, *_ in groups], _element, call)
                if self.ctx.domain_scans:
                    own = self.parts_of(value, [path for path, *_ in groups], project, call)
                    if _scans_differ(own, {id(c) for c in self.ctx.domain_scans}):
                        parts = own
                # each scan runs over the union of the domains of the outputs reading it
                parts = self.fit_domain_scans(parts, call, doms)
            for (path, *_), part in zip(groups, parts):
                chosen[path] = part
            for mine in mines:
                targets += mine
            value = _assemble(out_node, (), chosen)
        names = {b.name for t in targets
                 if isinstance(b := t.args[0] if isinstance(t, ir.Call) else t, ir.Sym)}
        differ = len({_target_intervals(t) for t in targets}) > 1
        out, parts = self.nested_parts(value, out_node, names, s, differ)
        return out + [self.emit(t, self.to_ir(p, call), s) for t, p in zip(targets, parts)]

    def parts_of(self, value: Any, paths: list[tuple[int, ...]],
                 element: Callable[[ir.Expr, int, Any], ir.Expr], call: ast.Call) -> list[Any]:
        """The parts of ``value`` at ``paths``, an IR tuple's taken by ``element``."""
        parts = []
        for path in paths:
            whole = value
            for k in path:
                whole = whole[k] if isinstance(whole, tuple) and k < len(whole) \
                    else element(self.to_ir(whole, call), k, self.loc(call))
            parts.append(whole)
        return parts

    def nested_parts(self, value: Any, node: ast.Tuple | ast.List, names: set[str],
                     s: ast.stmt, targets_differ: bool = False
                     ) -> tuple[list[ir.Stmt], list[Any]]:
        """The parts of ``value`` for the leaves of the (nested) tuple ``node``:
        ``out=((a, b), c)`` takes a value ``((x, y), z)``."""
        out, parts = self.tuple_parts(value, len(node.elts), names, s, self.target_dtype(node),
                                      targets_differ)
        flat: list[Any] = []
        for e, p in zip(node.elts, parts):
            if isinstance(e, (ast.Tuple, ast.List)):
                more, sub = self.nested_parts(p, e, names, s, targets_differ)
                out, flat = out + more, flat + sub
            else:
                flat.append(p)
        return out, flat

    def domain_groups(self, out_node: ast.Tuple | ast.List, domain: ast.AST
                      ) -> list[tuple[tuple[int, ...], ast.AST, ast.AST, dict]] | None:
        """GT4Py's tuple of domains, one per output (``out=(a, b),
        domain=({Cell: …}, {Cell: …})``), nested as ``out=`` is: per dict, the path
        of its output in ``out=``, that output's node (a name, or a tuple whose
        leaves all take the dict), the dict's node and the dict.  None for one
        dict for all."""
        if isinstance(domain, ast.Dict):
            return None
        value = self.expr(domain)
        if not isinstance(value, (tuple, list)):
            return None
        groups: list[tuple[tuple[int, ...], ast.AST, ast.AST, dict]] = []

        def walk(node: ast.AST, dnode: ast.AST, dvalue: Any, path: tuple[int, ...]) -> None:
            if isinstance(dvalue, dict):
                groups.append((path, node, dnode, dvalue))
                return
            if isinstance(dvalue, (tuple, list)) and isinstance(node, ast.Name) and \
                    self.kinds.get(node.id) in ("param", "temp") and \
                    isinstance(self.tensor_type(self.env[node.id].name).dtype, ir.TupleType):
                # one output holding a tuple of fields (a NamedTuple of fields such as
                # muphys' ``Q``): GT4Py nests a domain per field; a tensor of tuples
                # has one domain, so they must all be the same
                leaves = list(_domain_leaves(dvalue))
                if leaves and all(isinstance(d, dict) for d in leaves):
                    if any(d != leaves[0] for d in leaves[1:]):
                        raise self.error(dnode, f"the fields of '{ast.unparse(node)}' are "
                                                "written as one tuple of fields: give them the "
                                                "same domain")
                    groups.append((path, node, dnode, leaves[0]))
                    return
            if not isinstance(dvalue, (tuple, list)) or \
                    not isinstance(node, (ast.Tuple, ast.List)):
                raise self.error(dnode, "a tuple of domains holds dicts {Dim: (start, stop), "
                                        f"…}}, one per output, got {describe(dvalue)}")
            if len(dvalue) != len(node.elts):
                raise self.error(dnode, f"domain= has {len(dvalue)} domains for "
                                        f"{len(node.elts)} outputs; give one dict per "
                                        "output, or one dict for all")
            nodes = dnode.elts if isinstance(dnode, (ast.Tuple, ast.List)) and \
                len(dnode.elts) == len(dvalue) else [dnode] * len(dvalue)
            for k, (e, dn, dv) in enumerate(zip(node.elts, nodes, dvalue)):
                walk(e, dn, dv, path + (k,))

        walk(out_node, domain, value, ())
        return groups

    @contextlib.contextmanager
    def scans_in(self, target: ir.Expr | None):
        """While a ``domain=`` call is translated, its scans along the domain's
        dimensions run over the levels their readers need (GT4Py: ``init`` before
        the domain's first level when the value is read there unshifted), not over
        their operands' whole interval (see :meth:`fit_domain_scans`)."""
        saved, scans, concats = self.ctx.domain, self.ctx.domain_scans, self.ctx.domain_concats
        if isinstance(target, ir.Call):
            self.ctx.domain = {a.name: a for a in target.args[1:]
                               if isinstance(a, ir.DimInterval)}
            self.ctx.domain_scans, self.ctx.domain_concats = {}, {}
        elif isinstance(target, ir.Sym):    # a whole output
            t = self.tensor_type(target.name)
            self.ctx.domain = {d.name: interval(d.name, d.start, d.stop, target.loc)
                               for d in t.dims if not d.is_neighbor}
            self.ctx.domain_scans, self.ctx.domain_concats = {}, {}
        try:
            yield
        finally:
            self.ctx.domain, self.ctx.domain_scans = saved, scans
            self.ctx.domain_concats = concats

    def p_Pass(self, s: ast.Pass) -> list[ir.Stmt]:
        return []

    def p_Return(self, s: ast.Return) -> list[ir.Stmt]:
        raise self.error(s, "a program does not return values: it writes its outputs; "
                            "assign to an output parameter (out[...] = value)")

    def p_FunctionDef(self, s: ast.FunctionDef) -> list[ir.Stmt]:
        if s.decorator_list:
            raise self.error(s, "decorators on nested functions are not supported")
        self.env[s.name] = LocalCallable(s, self)
        return []

    def p_If(self, s: ast.If) -> list[ir.Stmt]:
        c = self.expr(s.test)
        if not contains_ir(c):
            return self.statements(s.body if self.static_truth(c, s.test) else s.orelse)
        cond = self.to_ir(c, s.test)
        saved = dict(self.env)
        self.depth += 1
        try:
            then = self.statements(s.body)
            then_env = self.env
            self.env = dict(saved)
            orelse = self.statements(s.orelse)
            else_env = self.env
        finally:
            self.depth -= 1
        # temporaries declared in a branch stay visible; aliases do not
        self.env = dict(saved)
        for e in (then_env, else_env):
            for k, v in e.items():
                if self.kinds.get(k) == "temp" and isinstance(v, ir.Sym):
                    self.env[k] = v
        return [ir.IfStmt(cond, tuple(then), tuple(orelse), loc=self.loc(s))]

    def p_For(self, s: ast.For) -> list[ir.Stmt]:
        if s.orelse:
            raise self.error(s, "for … else is not supported")
        it = s.iter
        fn = self.expr(it.func) if isinstance(it, ast.Call) else None
        if fn is not range or not isinstance(it, ast.Call):
            raise self.error(it, "a program loop must be 'for t in range(n)' or "
                                 "'for t in range(start, stop)'")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range() takes 1 to 3 positional arguments")
        bounds = [self.expr(a) for a in it.args]
        if len(bounds) == 3:
            if bounds[2] != 1:
                raise self.error(it.args[2], "a program loop runs with step 1")
            bounds = bounds[:2]
        if len(bounds) == 1:
            bounds = [0] + bounds
        for b, n in zip(bounds, it.args[-len(bounds):] if len(it.args) > 1 else
                        [it.args[0], it.args[0]]):
            if isinstance(b, (float, np.floating)) or (not contains_ir(b) and not isinstance(
                    b, (int, np.integer, sympy.Expr))):
                raise self.error(n, f"a loop bound must be an integer, got {describe(b)}")
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "the loop variable must be a name")
        start = self.to_ir(bounds[0], it)
        stop = self.to_ir(bounds[1], it)
        name = s.target.id
        var = self.ctx.fresh(name)
        loc = self.loc(s)
        saved_env, saved_scope, saved_kind = dict(self.env), self.scope, self.kinds.get(name)
        self.env[name] = ir.Sym(var, loc=loc)
        self.kinds[name] = "loop"
        self.ctx.loops.append((var, bound_of(start, self.scope), bound_of(stop, self.scope)))
        self.scope = self.scope.child({var: Binding(var, "loop", ir.TensorType(ir.INT64))})
        self.depth += 1
        try:
            body = self.statements(s.body)
        finally:
            self.depth -= 1
            self.scope = saved_scope
            self.ctx.loops.pop()
        body_env = self.env
        self.env = saved_env
        if saved_kind is None:
            self.kinds.pop(name, None)
        else:
            self.kinds[name] = saved_kind
        for k, v in body_env.items():
            if self.kinds.get(k) == "temp" and isinstance(v, ir.Sym):
                self.env[k] = v
        return [ir.ForStmt(var, start, stop, tuple(body), loc=loc)]

    def p_AnnAssign(self, s: ast.AnnAssign) -> list[ir.Stmt]:
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "an annotated assignment declares a temporary: "
                                       "tmp: Tensor[float, I, J] = …")
        name = s.target.id
        if name in self.kinds and self.kinds[name] != "alias":
            raise self.error(s, f"'{name}' is already declared")
        ann = self.annotation(s.annotation)
        spec = annotation_spec(ann)
        if spec is None or not spec.dims:
            raise self.error(s.annotation, "a temporary is declared with a tensor type with "
                                           "dimensions, e.g. Tensor[float, I, J]")
        try:
            t = spec.to_type(self.size_of)
        except (TypeError, ValueError) as e:
            raise self.error(s.annotation, getattr(e, "message", str(e))) from None
        self.new_temp(name, t, s)
        if s.value is None:
            return []
        return self.assign(s.target, self.expr(s.value), s)


    def annotation(self, node: ast.expr) -> Any:
        """A temporary's annotation.  ``D[lo:hi]`` items (``Tensor[float, Cell,
        K[k0:k1]]``) are intervals whose coordinates may be int parameters, loop
        variables and integer expressions of them: the temporary only lives there."""
        if not isinstance(node, ast.Subscript):
            return self.expr(node)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        args = []
        for item in items:
            sl = item.slice if isinstance(item, ast.Subscript) else None
            dim = self.expr(item.value) if isinstance(item, ast.Subscript) and \
                isinstance(sl, ast.Slice) else None
            if not isinstance(dim, Dimension) or not isinstance(sl, ast.Slice):
                args.append(self.expr(item))
                continue
            if sl.step is not None:
                raise self.error(sl, f"write an interval as {dim.name}[start:stop]")
            lo = sympy.Integer(0) if sl.lower is None else \
                self.runtime_bound(self.expr(sl.lower), sl.lower, "an interval bound")
            hi = dim.size_symbol if sl.upper is None else \
                self.runtime_bound(self.expr(sl.upper), sl.upper, "an interval bound")
            args.append(DimSpec(dim, lo, hi))
        base = self.expr(node.value)
        try:
            return base[tuple(args) if len(args) > 1 else args[0]]
        except (TypeError, ValueError) as e:
            raise self.error(node, getattr(e, "message", str(e))) from None


def translate_program(fn: Any, params: Sequence[ir.Param], size_of,
                      table_dims: dict[str, NeighborDimension], *,
                      static: dict[str, Any] | None = None, rank_generic: bool = False,
                      report: dict[str, Any] | None = None,
                      names: dict[str, str] | None = None,
                      open_margin: dict[str, int] | None = None,
                      made: list[ProgramContext] | None = None) -> ir.Program:
    """The (unchecked) Tensor IR program of a ``@program`` function.

    ``static`` binds parameters to Python values (static arguments); ``names``
    gives the Python names of parameters named otherwise in the IR ({Python
    name: IR name});
    ``rank_generic`` makes shifts along dimensions that no parameter has no-ops
    (their names and places go to ``report["dropped"]``). ``open_margin`` and
    ``made``: see :func:`~.context.with_open_margins`, which translates the
    program without them.
    """
    if made is None:
        return with_open_margins(lambda margins, made: translate_program(
            fn, params, size_of, table_dims, static=static, rank_generic=rank_generic,
            report=report, names=names, open_margin=margins, made=made))
    src = source_info(fn)
    if not isinstance(src.node, ast.FunctionDef):
        raise FrontendError("a @program is written with def, not lambda", src.loc(src.node))
    ctx = ProgramContext(src.name, params, src.loc(src.node), table_dims)
    made.append(ctx)
    ctx.open_margin = open_margin or {}
    ctx.rank_generic = rank_generic
    ctx.rename(names)
    tr = ProgramTranslator(ctx, src, size_of, static)
    with ctx.deferred_first():
        body = tr.statements(list(src.node.body))
    if report is not None:
        report["dropped"] = dict(ctx.dropped)
    return ir.Program(src.name, tuple(ctx.params), tuple(ctx.temporaries), tuple(body),
                      loc=src.loc(src.node), constraints=ctx.live_constraints(body))


def _target_intervals(target: ir.Expr) -> tuple:
    """The intervals a ``domain=`` target restricts (its whole array's: none)."""
    if isinstance(target, ir.Call):
        return tuple((a.name, a.start, a.stop) for a in target.args[1:]
                     if isinstance(a, ir.DimInterval))
    return ()


def _union_target(targets: list[ir.Expr]) -> ir.Expr | None:
    """A target whose intervals are the union of those of ``targets`` (the
    dimensions all of them restrict), for the ranges of scans."""
    subsets = [t for t in targets if isinstance(t, ir.Call)]
    if not subsets or len(subsets) != len(targets):
        return None
    first = subsets[0]
    ivs = []
    for a in first.args[1:]:
        if not isinstance(a, ir.DimInterval):
            continue
        same = [b for t in subsets for b in t.args[1:]
                if isinstance(b, ir.DimInterval) and b.name == a.name]
        if len(same) != len(subsets):
            continue
        lo, hi = a.start, a.stop
        for b in same[1:]:
            lo, hi = _either(iv.smin, sympy.Min, lo, b.start), \
                _either(iv.smax, sympy.Max, hi, b.stop)
        ivs.append(ir.DimInterval(a.name, lo, hi, loc=a.loc))
    return ir.Call(first.func, (first.args[0], *ivs), loc=first.loc)


def _either(decided: Any, symbolic: Any, a: Any, b: Any) -> Any:
    try:
        return decided(a, b)
    except iv.Undecidable:      # runtime bounds: left to the run
        return symbolic(a, b)


def _scans_differ(parts: list[Any], scans: set[int]) -> bool:
    """Whether the parts read different sets of the scans ``scans`` (by identity)."""
    def read(part: Any) -> frozenset[int]:
        if isinstance(part, tuple):
            return frozenset().union(*(read(x) for x in part))
        return frozenset(id(n) for n in ir.walk(part) if id(n) in scans) \
            if isinstance(part, ir.Node) else frozenset()
    return len({read(p) for p in parts}) > 1


def _element(e: ir.Expr, k: int, loc: Any) -> ir.Expr:
    return ir.Call(ir.Sym("tuple_get", loc=loc), (e, ir.Literal(k, loc=loc)), loc=loc)


def _domain_leaves(value: Any):
    """The dicts (and anything else) at the leaves of a nested tuple of domains."""
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _domain_leaves(v)
    else:
        yield value


def _leaves(node: ast.Tuple | ast.List) -> list[ast.AST]:
    """The outputs named by a (nested) tuple ``out=((a, b), c)``, in order."""
    return [x for e in node.elts for x in _leaves_of(e)]


def _leaves_of(node: ast.AST) -> list[ast.AST]:
    """The outputs ``node`` names: itself, or the leaves of a tuple."""
    return _leaves(node) if isinstance(node, (ast.Tuple, ast.List)) else [node]


def _assemble(node: ast.AST, path: tuple[int, ...], chosen: dict[tuple[int, ...], Any]) -> Any:
    """The value for the outputs ``node`` at ``path`` in ``out=``, nested as they
    are, from the values ``chosen`` for some paths."""
    if path in chosen:
        return chosen[path]
    assert isinstance(node, (ast.Tuple, ast.List))
    return tuple(_assemble(e, path + (k,), chosen) for k, e in enumerate(node.elts))
