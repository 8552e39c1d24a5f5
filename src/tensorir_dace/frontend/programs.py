"""Translating whole programs: parameters, statements, temporaries, control flow."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy

from .. import intervals as iv
from .. import ir
from ..errors import (
    FrontendError,
    TypeCheckError,
)
from ..typing.scope import Binding
from .annotations import annotation_spec
from .context import ProgramContext
from .dims import (
    NeighborDimension,
)
from .markers import LocalCallable, contains_ir, free_syms, is_ir, project, strip_masks
from .meshes import is_namedtuple_class, named_value
from .source import SourceInfo, source_info
from .translate import FunctionTranslator, describe, is_trivial, pushable

# --------------------------------------------------------------------------- programs


class ProgramTranslator(FunctionTranslator):
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

    def __init__(self, ctx: ProgramContext, source: SourceInfo,
                 size_of, static: dict[str, Any] | None = None):
        env: dict[str, Any] = {}
        super().__init__(ctx, source, env, ctx.scope, None)
        self.size_of = size_of
        self.kinds: dict[str, str] = {}
        self.alias_depth: dict[str, int] = {}
        self.depth = 0
        for p in ctx.params:
            env[p.name] = ir.Sym(p.name, loc=p.loc)
            self.kinds[p.name] = "scalar_param" if p.type.is_scalar else "param"
        for k, v in (static or {}).items():     # static arguments: plain Python values
            env[k] = v
            self.kinds[k] = "alias"
            self.alias_depth[k] = 0

    # ------------------------------------------------------------------ statements

    def statements(self, stmts: Sequence[ast.stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out += self.statement(s)
        return out

    def statement(self, s: ast.stmt) -> list[ir.Stmt]:
        if isinstance(s, ast.Assign):
            value = self.expr(s.value)
            out: list[ir.Stmt] = []
            for tgt in s.targets:
                out += self.assign(tgt, value, s)
            return out
        if isinstance(s, ast.AugAssign):
            tgt = s.target
            base = tgt.value if isinstance(tgt, ast.Subscript) else tgt
            if not isinstance(base, ast.Name):
                raise self.error(tgt, "augmented assignment needs a name or name[…] on the left")
            load = ast.copy_location(ast.Name(base.id, ast.Load()), base)
            value = self.expr(ast.copy_location(ast.BinOp(load, s.op, s.value), s))
            return self.assign(tgt, value, s)
        if isinstance(s, ast.AnnAssign):
            return self.declare(s)
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return []
            if isinstance(s.value, ast.Call) and any(k.arg == "out" for k in s.value.keywords):
                call = s.value
                out_node = next(k.value for k in call.keywords if k.arg == "out")
                rest = [k for k in call.keywords if k.arg != "out"]
                inner = ast.copy_location(ast.Call(call.func, call.args, rest), call)
                return self.assign(out_node, self.expr(inner), s)
            raise self.error(s, "this expression statement has no effect; assign its value to "
                                "an output (out[...] = …) or pass out=…")
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, ast.If):
            return self.if_statement(s)
        if isinstance(s, ast.For):
            return self.for_statement(s)
        if isinstance(s, ast.Return):
            raise self.error(s, "a program does not return values: it writes its outputs; "
                                "assign to an output parameter (out[...] = value)")
        if isinstance(s, ast.FunctionDef):
            if s.decorator_list:
                raise self.error(s, "decorators on nested functions are not supported")
            self.env[s.name] = LocalCallable(s, self)
            return []
        raise self.unsupported(s)

    def if_statement(self, s: ast.If) -> list[ir.Stmt]:
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

    def for_statement(self, s: ast.For) -> list[ir.Stmt]:
        if s.orelse:
            raise self.error(s, "for … else is not supported")
        it = s.iter
        fn = self.expr(it.func) if isinstance(it, ast.Call) else None
        if fn is not range:
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
        self.scope = self.scope.child({var: Binding(var, "loop", ir.TensorType(ir.INT64))})
        self.depth += 1
        try:
            body = self.statements(s.body)
        finally:
            self.depth -= 1
            self.scope = saved_scope
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

    # ------------------------------------------------------------------ assignments

    def tensor_type(self, name: str) -> ir.TensorType:
        b = self.ctx.scope.lookup(name)
        assert b is not None
        return b.type

    def declare(self, s: ast.AnnAssign) -> list[ir.Stmt]:
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "an annotated assignment declares a temporary: "
                                       "tmp: Tensor[float, I, J] = …")
        name = s.target.id
        if name in self.kinds and self.kinds[name] != "alias":
            raise self.error(s, f"'{name}' is already declared")
        ann = self.expr(s.annotation)
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
        name = target.name if isinstance(target, ir.Sym) else target.args[0].name
        vt = self.type_of(value, s, tt.dtype)
        if vt.dtype != tt.dtype:
            raise TypeCheckError(f"cannot assign a {vt.dtype} expression to '{name}' of "
                                 f"element type {tt.dtype}; use cast(…, {tt.dtype})", loc)
        for d in vt.dims:
            if tt.dim(d.name) is None:
                raise TypeCheckError(f"the expression has dimension {d.name} that the target "
                                     f"'{name}' ({tt}) lacks", loc)
        for d in tt.dims:
            vd = vt.dim(d.name)
            if vd is None:
                continue
            try:
                ok = iv.covers(vd, d)
            except iv.Undecidable:
                continue   # the type checker decides (and names both bounds)
            if not ok:
                raise TypeCheckError(f"the expression is defined on {d.name}[{vd.start}:"
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
            return all(iv.covers(vt.dim(d.name), d) for d in tt.dims
                       if vt.dim(d.name) is not None)
        except iv.Undecidable:
            return False

    def subset_target(self, tgt: ast.Subscript) -> ir.Expr:
        base = tgt.value
        if not isinstance(base, ast.Name) or self.kinds.get(base.id) not in ("param", "temp"):
            what = base.id if isinstance(base, ast.Name) else "this expression"
            raise self.error(base, f"cannot write into {what!s}: only tensor parameters and "
                                   "temporaries can be written (out[…] = …)")
        ir_name = self.env[base.id].name
        t = self.tensor_type(ir_name)
        sl = tgt.slice
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
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
            ivs.append(ir.DimInterval(d.name, lo, hi, loc=self.loc(item)))
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
        raise self.error(node, f"a slice bound must be an integer or a size expression, got "
                               f"{describe(v)}")

    def assign_tuple(self, tgt: ast.Tuple | ast.List, value: Any, s: ast.stmt) -> list[ir.Stmt]:
        targets = list(tgt.elts)
        n = len(targets)
        vnode = getattr(s, "value", None) or s
        target_names = set()
        for t in targets:
            base = t.value if isinstance(t, ast.Subscript) else t
            if isinstance(base, ast.Name) and isinstance(self.env.get(base.id), ir.Sym):
                target_names.add(self.env[base.id].name)
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
            for t, p in zip(targets, parts):
                out += self.assign(t, p, s)
            return out
        if not is_ir(value):
            raise self.error(s, f"cannot unpack {describe(value)}")
        vt = self.type_of(value, vnode)
        if not isinstance(vt.dtype, ir.TupleType) or len(vt.dtype.elements) != n:
            raise self.error(s, f"cannot unpack {vt} into {n} targets: it is not a tuple of "
                                f"{n} elements")
        out = []
        if not (is_trivial(value) or pushable(value)) or (free_syms(value) & target_names):
            tmp = self.ctx.fresh("tmp")
            self.ctx.add_temporary(tmp, vt, self.loc(s))
            out.append(ir.Assign(ir.Sym(tmp, loc=self.loc(s)), value, loc=self.loc(s)))
            value = ir.Sym(tmp, loc=self.loc(s))
        for k, t in enumerate(targets):
            out += self.assign(t, project(value, k, self.loc(s)), s)
        return out


def translate_program(fn: Any, params: Sequence[ir.Param], size_of,
                      table_dims: dict[str, NeighborDimension], *,
                      static: dict[str, Any] | None = None, rank_generic: bool = False,
                      report: dict[str, Any] | None = None) -> ir.Program:
    """The (unchecked) Tensor IR program of a ``@program`` function.

    ``static`` binds parameters to Python values (static arguments);
    ``rank_generic`` makes shifts along dimensions that no parameter has no-ops
    (their names and places go to ``report["dropped"]``).
    """
    src = source_info(fn)
    ctx = ProgramContext(src.name, params, src.loc(src.node), table_dims)
    ctx.rank_generic = rank_generic
    tr = ProgramTranslator(ctx, src, size_of, static)
    body = tr.statements(list(src.node.body))
    if report is not None:
        report["dropped"] = dict(ctx.dropped)
    return ir.Program(src.name, tuple(params), tuple(ctx.temporaries), tuple(body),
                      loc=src.loc(src.node))


def translate_call(fn: Any, params: Sequence[ir.Param], table_dims: dict[str, NeighborDimension],
                   result_name: str, *, static: dict[str, Any] | None = None,
                   rank_generic: bool = True,
                   report: dict[str, Any] | None = None) -> ir.Program:
    """The (unchecked) program ``result ← fn(params…)`` of a ``@function`` called
    directly with arrays: the parameters are the function's (those not given are
    left to their defaults; ``static`` ones are Python values), plus
    ``result_name``, typed with the value's type."""
    src = source_info(fn)
    node = src.node
    loc = src.loc(node)
    ctx = ProgramContext(src.name, params, loc, table_dims)
    ctx.rank_generic = rank_generic
    ctx.used.add(result_name)
    tr = FunctionTranslator(ctx, src, {}, ctx.scope, None)
    kwargs: dict[str, Any] = {p.name: ir.Sym(p.name, loc=p.loc) for p in params}
    kwargs.update(static or {})
    value = tr.inline(fn, [], kwargs, node, src.name)
    if not contains_ir(value):
        raise FrontendError(f"{src.name}() returns {describe(value)} for these arguments, "
                            "not a tensor", loc)
    expr = tr.to_ir(value, node)
    t = strip_masks(tr.type_of(expr, node))
    if t.is_scalar:
        raise FrontendError(f"{src.name}() returns a scalar ({t}) for these arguments; a "
                            "function called directly returns a tensor (pass at least one "
                            "array)", loc)
    if report is not None:
        report["dropped"] = dict(ctx.dropped)
    out = ir.Param(result_name, t, loc=loc)
    body = (ir.Assign(ir.Sym(result_name, loc=loc), expr, loc=loc),)
    return ir.Program(src.name, tuple(params) + (out,), tuple(ctx.temporaries), body, loc=loc)
