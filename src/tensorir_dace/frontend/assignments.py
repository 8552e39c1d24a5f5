"""Assignments in ``@program`` bodies: what each name is, and writing targets.

A name in a program is a tensor parameter, a scalar parameter, a temporary
(declared by its first assignment or an annotation), a loop variable or an
*alias* (a scalar or static value, substituted where it is used).  Writes go
to parameters and temporaries, whole or a subset (``out[1:-1, :] = …``), and
are checked here so that a mismatch names the statement.
"""

from __future__ import annotations

import ast
import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals as iv
from .. import ir
from ..errors import CoverageError, TensorIRError, TypeCheckError
from ..lazy import lazy_module
from .context import ProgramContext
from .dims import Dimension
from .functions import FunctionTranslator
from .meshes import is_namedtuple_class, named_value, whole_of_projections
from .runtime_bounds import interval, runtime_value
from .source import SourceInfo
from .values import (
    contains_ir,
    describe,
    free_syms,
    is_ir,
    is_trivial,
    project,
    pushable,
    small_lets,
)

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


def uncovered(value_type, target_type):
    """The dimensions of ``target_type`` that ``value_type`` is known not to
    cover, each with the value's interval along it.  Where coverage cannot
    be decided here the type checker decides (and names both bounds)."""
    for d in target_type.dims:
        vd = value_type.dim(d.name)
        if vd is None:
            continue
        try:
            ok = iv.covers(vd, d)
        except iv.Undecidable:
            continue
        if not ok:
            yield d, vd


class AssignmentTranslator(FunctionTranslator):
    """Adds the names of a program body and assignments to them; ``kinds`` says
    what each name is (``param``, ``scalar_param``, ``temp``, ``loop``, ``alias``)."""

    def __init__(self, ctx: ProgramContext, source: SourceInfo,
                 size_of, static: dict[str, Any] | None = None):
        env: dict[str, Any] = {}
        super().__init__(ctx, source, env, ctx.scope, None)
        self.size_of = size_of
        self.kinds: dict[str, str] = {}
        self.alias_depth: dict[str, int] = {}
        self.depth = 0
        for p in ctx.params:
            env[ctx.python_name(p)] = ir.Sym(p.name, loc=p.loc)
            self.kinds[ctx.python_name(p)] = "scalar_param" if p.type.is_scalar else "param"
        for k, v in (static or {}).items():     # static arguments: plain Python values
            env[k] = v
            self.kinds[k] = "alias"
            self.alias_depth[k] = 0

    def tensor_type(self, name: str) -> ir.TensorType:
        b = self.ctx.scope.lookup(name)
        assert b is not None
        return b.type

    def new_temp(self, name: str, t: ir.TensorType, node: ast.AST) -> str:
        ir_name = self.ctx.fresh(name)
        self.ctx.add_temporary(ir_name, t, self.loc(node))
        self.env[name] = ir.Sym(ir_name, loc=self.loc(node))
        self.kinds[name] = "temp"
        return ir_name

    def assign(self, tgt: ast.AST, value: Any, s: ast.stmt) -> list[ir.Stmt]:
        if isinstance(tgt, ast.Name):
            return self.assign_name(tgt, value, s)
        if isinstance(tgt, ast.Subscript):
            target = self.subset_target(tgt)
            return [self.emit(target, self.to_ir(value, getattr(s, "value", None) or s), s)]
        if isinstance(tgt, (ast.Tuple, ast.List)):
            return self.assign_tuple(tgt, value, s)
        raise self.error(tgt, "the target of an assignment must be a name, name[…] or a "
                              "tuple of them")

    def assign_name(self, tgt: ast.Name, value: Any, s: ast.stmt) -> list[ir.Stmt]:
        name = tgt.id
        kind = self.kinds.get(name)
        vnode = getattr(s, "value", None) or s
        if kind == "scalar_param":
            raise self.error(tgt, f"cannot assign to the scalar parameter '{name}'; outputs "
                                  "must be tensors with dimensions")
        if kind == "loop":
            raise self.error(tgt, f"cannot assign to the loop variable '{name}'")
        if kind in ("param", "temp"):
            ir_name = self.env[name].name
            v = self.to_ir(value, vnode)
            if kind == "temp":
                tt = self.tensor_type(ir_name)
                if not self.fits(v, tt, vnode) and self.depth == 0 and \
                        self.alias_depth.get(name, 0) == 0:
                    # a value of another type: a new temporary (Python rebinding)
                    vt = self.type_of(v, vnode)
                    if not vt.is_scalar:
                        ir_name = self.new_temp(name, vt, s)
            return [self.emit(ir.Sym(ir_name, loc=self.loc(tgt)), v, s)]
        # a new local, or an alias rebound
        if kind == "alias" and self.depth > self.alias_depth.get(name, 0):
            raise self.error(tgt, f"'{name}' holds a scalar or constant value and cannot be "
                                  "updated inside an if or for: the Tensor IR has no scalar "
                                  "variables (make it a tensor temporary, or compute it "
                                  "outside)")
        if not contains_ir(value):
            return self.alias(name, value)
        v = self.to_ir(value, vnode)
        t = self.type_of(v, vnode)
        if t.is_scalar:
            return self.alias(name, v)
        ir_name = self.new_temp(name, t, s)
        self.alias_depth[name] = self.depth
        if is_namedtuple_class(type(value)):       # keep state.z_q working on the copy
            self.env[name] = named_value(type(value), self.env[name], self.loc(tgt))
        return [self.emit(ir.Sym(ir_name, loc=self.loc(tgt)), v, s)]

    def emit(self, target: ir.Expr, value: ir.Expr, s: ast.stmt) -> ir.Assign:
        """``target ← value``, checked here so that a mismatch names this statement
        (the value may come from a function defined elsewhere)."""
        loc = self.loc(s)
        tt = self.type_of(target, s)
        base = target.args[0] if isinstance(target, ir.Call) else target   # subset(name, …)
        assert isinstance(base, ir.Sym)
        name = base.name
        vt = self.type_of(value, s, tt.dtype)
        if vt.dtype != tt.dtype:
            raise TypeCheckError(f"cannot assign a {vt.dtype} expression to '{name}' of "
                                 f"element type {tt.dtype}; use cast(…, {tt.dtype})", loc)
        for d in vt.dims:
            if tt.dim(d.name) is None:
                raise TypeCheckError(f"the expression has dimension {d.name} that the target "
                                     f"'{name}' ({tt}) lacks", loc)
        for d, vd in uncovered(vt, tt):
            raise CoverageError(f"the expression is defined on {d.name}[{vd.start}:"
                                f"{vd.stop}] but the target '{name}' needs {d.name}"
                                f"[{d.start}:{d.stop}]", loc)
        return ir.Assign(target, value, loc=loc)

    def alias(self, name: str, value: Any) -> list[ir.Stmt]:
        self.env[name] = value
        self.kinds[name] = "alias"
        self.alias_depth[name] = self.depth
        return []

    def fits(self, v: ir.Expr, tt: ir.TensorType, node: ast.AST) -> bool:
        vt = self.type_of(v, node)
        if vt.dtype != tt.dtype or not set(vt.dim_names) <= set(tt.dim_names):
            return False
        try:
            return all(iv.covers(vd, d) for d in tt.dims if (vd := vt.dim(d.name)) is not None)
        except iv.Undecidable:
            # a temporary declared on a runtime interval: the call-time checks decide
            return any(ir.has_runtime(b) for d in tt.dims for b in (d.start, d.stop))

    def subset_target(self, tgt: ast.Subscript) -> ir.Expr:
        base = tgt.value
        if not isinstance(base, ast.Name) or self.kinds.get(base.id) not in ("param", "temp"):
            what = base.id if isinstance(base, ast.Name) else "this expression"
            raise self.error(base, f"cannot write into {what!s}: only tensor parameters and "
                                   "temporaries can be written (out[…] = …)")
        ir_name = self.env[base.id].name
        t = self.tensor_type(ir_name)
        sl = tgt.slice
        items: list[ast.expr | None] = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        n_ell = sum(isinstance(i, ast.Constant) and i.value is Ellipsis for i in items)
        if n_ell > 1:
            raise self.error(sl, "at most one '...' in a subscript")
        if n_ell:
            k = next(j for j, i in enumerate(items)
                     if isinstance(i, ast.Constant) and i.value is Ellipsis)
            fill = len(t.dims) - (len(items) - 1)
            if fill < 0:
                raise self.error(sl, f"too many indices for '{base.id}' ({t})")
            items = items[:k] + [None] * fill + items[k + 1:]
        if len(items) > len(t.dims):
            raise self.error(sl, f"'{base.id}' has {len(t.dims)} dimension"
                                 f"{'s' if len(t.dims) != 1 else ''} ({t}) but the subscript "
                                 f"has {len(items)} indices")
        loc = self.loc(tgt)
        ivs: list[ir.DimInterval] = []
        for d, item in zip(t.dims, items):
            if item is None:
                continue
            if not isinstance(item, ast.Slice):
                raise self.error(item, "write a range of the output: out[1:-1, :] (a single "
                                       "index k is out[k:k+1])")
            if item.step is not None:
                raise self.error(item, "slices with a step are not supported")
            lo = self.slice_bound(item.lower, d, d.start, item)
            hi = self.slice_bound(item.upper, d, d.stop, item)
            if iv.equal(lo, d.start) and iv.equal(hi, d.stop):
                continue
            ivs.append(interval(d.name, lo, hi, self.loc(item)))
        if not ivs:
            return ir.Sym(ir_name, loc=loc)
        return ir.Call(ir.Sym("subset", loc=loc), (ir.Sym(ir_name, loc=loc),) + tuple(ivs),
                       loc=loc)

    def slice_bound(self, node: ast.AST | None, d: ir.Dim, default: sympy.Expr,
                    item: ast.AST) -> sympy.Expr:
        if node is None:
            return default
        v = self.expr(node)
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            v = int(v)
            return d.stop + v if v < 0 else d.start + v
        if isinstance(v, sympy.Expr):
            return d.start + v
        if contains_ir(v):
            return d.start + self.runtime_position(v, d, node)
        raise self.error(node, f"a slice bound must be an integer or a size expression, got "
                               f"{describe(v)}")

    # ------------------------------------------------------------------ runtime bounds

    def runtime_bound(self, v: Any, node: ast.AST, what: str) -> sympy.Expr:
        b = runtime_value(v, self.scope)
        if b is None:
            raise self.error(node, f"{what} must be an integer, an int parameter, a loop "
                                   "variable or an integer expression of them (+ - *), got "
                                   f"{describe(v)}")
        return b

    def runtime_position(self, v: Any, d: ir.Dim, node: ast.AST) -> sympy.Expr:
        """A runtime slice bound: a position from the array's first element, which
        never wraps around, so a negative value is an error at call time."""
        b = self.runtime_bound(v, node, "a slice bound")
        names = {s.name for s in b.free_symbols}
        loops = tuple(self.ctx.loops) if any(var in names for var, _, _ in self.ctx.loops) \
            else ()
        where = f"slice bound {ast.unparse(node)} of {d.name} at {self.loc(node)}"
        self.ctx.constraints.append(ir.SizeConstraint(
            sympy.Integer(0), b, where + " (a position from the first element)",
            loops=loops, bound=b, allowed=(sympy.Integer(0), d.stop - d.start)))
        return b

    def domain_target(self, out_node: ast.AST, domain: ast.AST, value: Any = None) -> ir.Expr:
        """``out=o, domain={D: (lo, hi), …}``: ``o`` restricted to those coordinates
        (a dimension left out keeps its whole interval).  Bounds are a pair, a
        tuple or a list (``{Cell: [hs, he]}``); ``value``: the dict, where
        ``domain`` is the node of a larger expression (one of a tuple of domains)."""
        if isinstance(out_node, ast.Subscript):     # GT4Py refuses it the same way
            base = ast.unparse(out_node.value)
            raise self.error(out_node, f"out={ast.unparse(out_node)} with domain=: either "
                                       "a domain or a slice, not both (as in GT4Py); write "
                                       f"out={base} with domain= in {base}'s own coordinates, "
                                       f"or out={ast.unparse(out_node)} without domain=")
        if not isinstance(out_node, ast.Name) or \
                self.kinds.get(out_node.id) not in ("param", "temp"):
            raise self.error(out_node, "domain= needs out= to name a tensor parameter or "
                                       "temporary")
        ir_name = self.env[out_node.id].name
        t = self.tensor_type(ir_name)
        loc = self.loc(domain)
        ivs: dict[str, ir.DimInterval] = {}
        items = self.domain_items(domain) if value is None else \
            [(k, v, domain, domain) for k, v in value.items()]
        for dim, bounds, knode, vnode in items:
            if not isinstance(dim, Dimension) or t.dim(dim.name) is None:
                raise self.error(knode, f"domain= keys are dimensions of '{out_node.id}' "
                                        f"({t}), got {describe(dim)}")
            name = dim.name
            if isinstance(bounds, ir.Call) and isinstance(bounds.func, ir.Sym) and \
                    bounds.func.name == "make_tuple":
                bounds = bounds.args    # a pair held in a name (cells = (hs, he))
            if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
                raise self.error(vnode, f"domain={{{name}: (start, stop)}} takes a pair of "
                                        f"coordinates, got {describe(bounds)}")
            lo, hi = (self.runtime_bound(x, vnode, "a domain bound") for x in bounds)
            ivs[name] = interval(name, lo, hi, self.loc(vnode))
        if not ivs:
            return ir.Sym(ir_name, loc=self.loc(out_node))
        return ir.Call(ir.Sym("subset", loc=loc), (ir.Sym(ir_name, loc=loc),)
                       + tuple(ivs[d.name] for d in t.dims if d.name in ivs), loc=loc)

    def domain_items(self, domain: ast.AST) -> list[tuple[Any, Any, ast.AST, ast.AST]]:
        """The ``(key, bounds, key node, bounds node)`` entries of ``domain=``: a
        dict written in the call (each entry located) or any expression whose
        value is a dict (``dom = {Cell: (hs, he)}; f(…, domain=dom)``)."""
        if isinstance(domain, ast.Dict):
            if None in domain.keys:
                raise self.error(domain, "domain= takes a dict {Dim: (start, stop), …} "
                                         "without '**' entries")
            return [(self.expr(k), self.expr(v), k, v)
                    for k, v in zip(domain.keys, domain.values) if k is not None]
        value = self.expr(domain)
        if not isinstance(value, dict):
            raise self.error(domain, "domain= takes a dict {Dim: (start, stop), …}, got "
                                     f"{describe(value)}")
        return [(k, v, domain, domain) for k, v in value.items()]

    @contextlib.contextmanager
    def target_intervals(self, target: ast.AST | ir.Expr | None):
        """While the value of a statement is translated, ``ctx.target`` holds the
        intervals of its target (``concat_where`` clamps runtime pieces to them)."""
        saved = self.ctx.target
        self.ctx.target = None
        try:
            expr = target
            if isinstance(target, ast.Name) and self.kinds.get(target.id) in ("param", "temp"):
                expr = ir.Sym(self.env[target.id].name)
            elif isinstance(target, ast.Subscript):
                expr = self.subset_target(target)
            elif isinstance(target, (ast.Tuple, ast.List)):
                # a tuple of targets over the same intervals: those intervals
                expr = self.common_target(target)
            if isinstance(expr, ir.Expr):
                t = self.type_of(expr, target if isinstance(target, ast.AST) else None)
                self.ctx.target = {d.name: (d.start, d.stop) for d in t.dims}
        except TensorIRError:
            self.ctx.target = None      # the assignment itself reports the problem
        try:
            yield
        finally:
            self.ctx.target = saved

    def common_target(self, target: ast.Tuple | ast.List) -> ir.Expr | None:
        """The first of a (nested) tuple of parameters or temporaries whose types
        all have the same intervals; None where they differ or are others."""
        leaves: list[ast.expr] = []
        stack: list[ast.expr] = [target]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Tuple, ast.List)):
                stack.extend(reversed(node.elts))
            else:
                leaves.append(node)
        exprs: list[ir.Expr] = []
        for leaf in leaves:
            if not (isinstance(leaf, ast.Name) and self.kinds.get(leaf.id) in ("param", "temp")):
                return None
            exprs.append(ir.Sym(self.env[leaf.id].name))
        dims = {tuple((d.name, d.start, d.stop) for d in self.type_of(e, target).dims)
                for e in exprs}
        return exprs[0] if exprs and len(dims) == 1 else None

    def assign_tuple(self, tgt: ast.Tuple | ast.List, value: Any, s: ast.stmt) -> list[ir.Stmt]:
        targets = list(tgt.elts)
        target_names = set()
        for t in targets:
            base = t.value if isinstance(t, ast.Subscript) else t
            if isinstance(base, ast.Name) and isinstance(self.env.get(base.id), ir.Sym):
                target_names.add(self.env[base.id].name)
        out, parts = self.tuple_parts(value, len(targets), target_names, s,
                                      self.target_dtype(tgt))
        for t, p in zip(targets, parts):
            out += self.assign(t, p, s)
        return out

    def one_tuple_holds(self, value: ir.Expr, n: int, vt: ir.TensorType,
                        node: ast.AST, targets_differ: bool) -> bool:
        """Whether a tensor of the tuple ``value`` (typed ``vt``: the intersection of
        its parts' intervals) serves its targets: it covers each of the ``n`` parts
        where that part is defined, or all targets take the same interval (then the
        intersection covers it exactly when every part does, and computing the
        value once is what GT4Py does).  A part whose interval reaches past the
        tuple's for all sizes through a runtime bound (``Max(N + 1, nlev)`` half
        levels beside ``N`` full levels) counts as not covered."""
        if not targets_differ:
            return True
        loc = self.loc(node)
        for k in range(n):
            pt = self.type_of(project(value, k, loc), node)
            for d in pt.dims:
                vd = vt.dim(d.name)
                if vd is None:
                    continue
                try:
                    if not iv.covers(vd, d):
                        return False
                except iv.Undecidable:
                    if _surely_beyond(d.start, d.stop, vd.start, vd.stop):
                        return False
        return True

    def target_dtype(self, node: ast.AST) -> ir.ElementType | None:
        """The element type an output ``node`` of ``out=``/an assignment holds (a
        tuple type for a tuple of outputs), or None where it is not a tensor name."""
        if isinstance(node, (ast.Tuple, ast.List)):
            parts = [self.target_dtype(e) for e in node.elts]
            return None if any(p is None for p in parts) else \
                ir.TupleType(tuple(p for p in parts if p is not None))
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name) and self.kinds.get(node.id) in ("param", "temp"):
            try:
                return self.tensor_type(self.env[node.id].name).dtype
            except (KeyError, AttributeError, TensorIRError):
                return None
        return None

    def tuple_parts(self, value: Any, n: int, target_names: set[str],
                    s: ast.stmt, expected: ir.ElementType | None = None,
                    targets_differ: bool = False) -> tuple[list[ir.Stmt], list[Any]]:
        """The ``n`` parts of a tuple value, and the statements that must run first:
        a part that reads one of the targets is staged in a temporary, so that
        writing an earlier target cannot change what a later part reads.
        ``targets_differ``: the targets take the parts on different intervals (a
        tuple of domains), so one that may need more of its part than the tuple's
        common interval takes the part on its own (see :meth:`one_tuple_holds`)."""
        vnode = getattr(s, "value", None) or s
        if isinstance(value, tuple) and (whole := whole_of_projections(value)) is not None \
                and not is_trivial(whole):
            value = whole       # the elements of one value: computed once, not per target
        if isinstance(value, tuple):
            if len(value) != n:
                raise self.error(s, f"cannot unpack {len(value)} values into {n} targets")
            parts = list(value)
            clash = any(contains_ir(p) and free_syms(self.to_ir(p, vnode)) & target_names
                        for p in parts)
            out: list[ir.Stmt] = []
            if clash:
                staged = []
                for p in parts:
                    if contains_ir(p):
                        pv = self.to_ir(p, vnode)
                        pt = self.type_of(pv, vnode)
                        if not pt.is_scalar:
                            tmp = self.ctx.fresh("tmp")
                            self.ctx.add_temporary(tmp, pt, self.loc(s))
                            out.append(ir.Assign(ir.Sym(tmp, loc=self.loc(s)), pv,
                                                 loc=self.loc(s)))
                            p = ir.Sym(tmp, loc=self.loc(s))
                    staged.append(p)
                parts = staged
            return out, parts
        if not is_ir(value):
            raise self.error(s, f"cannot unpack {describe(value)}")
        # (typed as its targets hold it: a literal element such as where(c, 0, 1)
        # written to an int32 output is an int32 in the temporary too)
        vt = self.type_of(value, vnode, expected)
        if not isinstance(vt.dtype, ir.TupleType) or len(vt.dtype.elements) != n:
            raise self.error(s, f"cannot unpack {vt} into {n} targets: it is not a tuple of "
                                f"{n} elements")
        out = []
        if not (is_trivial(value) or (pushable(value) and small_lets(value))) or \
                (free_syms(value) & target_names):
            if pushable(value) and \
                    not self.one_tuple_holds(value, n, vt, vnode, targets_differ):
                # parts defined on different intervals (a full-level part read from a
                # half-level value beside a half-level part): one temporary of the
                # tuple holds only their common interval, so each part is its own
                loc = self.loc(s)
                return self.tuple_parts(tuple(project(value, k, loc) for k in range(n)),
                                        n, target_names, s, expected)
            tmp = self.ctx.fresh("tmp")
            self.ctx.add_temporary(tmp, vt, self.loc(s))
            out.append(ir.Assign(ir.Sym(tmp, loc=self.loc(s)), value, loc=self.loc(s)))
            value = ir.Sym(tmp, loc=self.loc(s))
        return out, [project(value, k, self.loc(s)) for k in range(n)]


def _surely_beyond(start: Any, stop: Any, lo: Any, hi: Any) -> bool:
    """Whether ``[start, stop)`` reaches past ``[lo, hi)`` for all sizes, seen
    through a ``Max`` stop (or a ``Min`` start): one of its terms does."""
    stops = stop.args if isinstance(stop, sympy.Max) else (stop,)
    starts = start.args if isinstance(start, sympy.Min) else (start,)
    return any(iv.maybe_le(x, hi) is False for x in stops) or \
        any(iv.maybe_le(lo, x) is False for x in starts)
