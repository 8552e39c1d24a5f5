"""Python AST → Tensor IR.

The source of a decorated function is read with :func:`inspect.getsourcelines`
and parsed with :mod:`ast`; every IR node gets a :class:`SourceLoc` with the
user's file name and absolute line, so errors of the type checker point into
the user's Python code.

Values during translation are

* IR expressions (:class:`ir.Expr`): tensors and scalars of the program;
* Python tuples of values (``a, b``), turned into ``make_tuple`` when needed;
* static Python objects: numbers, dimensions, offsets (``I + 1``), index
  conditions (``K < 1``), functions, modules, … — evaluated at translation
  time, like JAX's static arguments.

Functions calling functions are inlined as lambda applications: an argument
that is a name or a literal is substituted, a compound argument used more
than once becomes a lambda parameter whose type is the argument's inferred
type (typed on demand with the type checker).  Local variables used more than
once become ``(λ(v: T) → rest)(value)`` bindings, so nothing is duplicated.
"""


from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import sympy

from .. import intervals as iv
from .. import ir
from ..errors import (
    FrontendError,
    SourceLoc,
    TensorIRError,
    did_you_mean,
)
from ..typing.scope import Binding, Scope
from . import api
from .annotations import annotation_spec, element_type, generic_spec
from .context import ProgramContext
from .dims import (
    CompoundMask,
    Dimension,
    DimMask,
    DimSpec,
    Mask,
    NeighborDimension,
    NeighborSlot,
    Offset,
    _complement,
    _is_empty,
    _le,
    _max,
    _min,
)
from .markers import (
    _CMP_IR,
    _CMP_STATIC,
    _IR_BINOPS,
    _OP_TEXT,
    _STATIC_BINOPS,
    _UNSUPPORTED_EXPRS,
    _UNSUPPORTED_STMTS,
    BoundMethod,
    LocalCallable,
    TableIndex,
    contains_ir,
    is_ir,
    is_number,
    is_table_type,
    project,
    strip_masks,
)
from .connectivities import Connectivity
from .meshes import (
    TensorOffset,
    as_offset,
    cast_tuple,
    check_dimension_condition,
    is_namedtuple_class,
    mask_table,
    named_value,
    namedtuple_of,
    offset_shift,
    reduce_axis_arg,
    reduction_axis_by_table,
    select_slot,
    tensor_offset,
    typed_literal,
    whole_of_projections,
)
from .source import SourceInfo, source_info

# --------------------------------------------------------------------------- translator


class FunctionTranslator:
    """Translates the expressions and statements of one Python function body."""

    def __init__(self, ctx: ProgramContext, source: SourceInfo, env: dict[str, Any],
                 scope: Scope, owner: FunctionTranslator | None = None):
        self.ctx = ctx
        self.source = source
        self.env = env
        self.scope = scope
        self.owner = owner    # for lambdas / nested defs: the defining translator

    # ------------------------------------------------------------------ helpers

    def loc(self, node: ast.AST | None) -> SourceLoc:
        return self.source.loc(node)

    def error(self, node: ast.AST | None, message: str) -> FrontendError:
        return FrontendError(message, self.loc(node))

    def child(self, env: dict[str, Any] | None = None, scope: Scope | None = None,
              source: SourceInfo | None = None) -> FunctionTranslator:
        cls = FunctionTranslator
        return cls(self.ctx, source or self.source, dict(self.env if env is None else env),
                   scope or self.scope, self.owner)

    def type_of(self, e: ir.Expr, node: ast.AST | None,
                expected: ir.ElementType | None = None) -> ir.TensorType:
        return self.ctx.type_of(e, self.scope, self.loc(node), expected)

    def call_ir(self, name: str, args: Sequence[ir.Expr], node: ast.AST | None) -> ir.Call:
        loc = self.loc(node)
        return ir.Call(ir.Sym(name, loc=loc), tuple(args), loc=loc)

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.env:
            return self.env[name]
        t: FunctionTranslator | None = self.owner
        while t is not None:
            if name in t.env:
                return t.env[name]
            t = t.owner
        found, value = self.source.lookup_global(name)
        if found:
            return value
        owner = self.owner
        while owner is not None:
            found, value = owner.source.lookup_global(name)
            if found:
                return value
            owner = owner.owner
        candidates = set(self.env) | self.source.global_names() | set(dir(builtins))
        raise self.error(node, f"unknown name '{name}'" + did_you_mean(name, candidates))

    def to_ir(self, v: Any, node: ast.AST | None) -> ir.Expr:
        loc = self.loc(node)
        if is_ir(v):
            return v
        if isinstance(v, tuple):
            whole = whole_of_projections(v)
            if whole is not None:
                return whole
            if not v:
                raise self.error(node, "an empty tuple has no Tensor IR meaning")
            return ir.Call(ir.Sym("make_tuple", loc=loc),
                           tuple(self.to_ir(x, node) for x in v), loc=loc)
        if isinstance(v, (bool, np.bool_)):
            return ir.Literal(bool(v), loc=loc)
        if isinstance(v, (int, np.integer)):
            return ir.Literal(int(v), loc=loc)
        if isinstance(v, (float, np.floating)):
            return ir.Literal(float(v), loc=loc)
        if isinstance(v, sympy.Expr):
            return self.bound_ir(v, node)
        what = describe(v)
        hint = ""
        if isinstance(v, Dimension):
            hint = f"; for its coordinates use index({v.name}, x)"
        elif isinstance(v, Offset):
            hint = "; offsets are arguments of a shift: x(I + 1)"
        elif isinstance(v, TableIndex):
            hint = "; a table entry is an argument of a shift: x(E2V[0])"
        elif isinstance(v, Mask):
            hint = "; index conditions are the first argument of concat_where"
        elif callable(v):
            hint = "; call it"
        raise self.error(node, f"{what} is not a tensor value{hint}")

    def bound_ir(self, b: sympy.Expr, node: ast.AST | None) -> ir.Expr:
        """A size expression as an IR expression over size symbols."""
        loc = self.loc(node)
        b = sympy.expand(b)
        if b.is_Integer:
            return ir.Literal(int(b), loc=loc)
        if b.is_Symbol:
            if self.ctx.scope.lookup(b.name) is None:
                raise self.error(node, f"size symbol '{b.name}' does not appear in the "
                                       "parameter types of this program")
            return ir.Sym(b.name, loc=loc)
        if b.is_Add:
            terms = [self.bound_ir(t, node) for t in b.as_ordered_terms()]
            out = terms[0]
            for t in terms[1:]:
                out = ir.Call(ir.Sym("plus", loc=loc), (out, t), loc=loc)
            return out
        if b.is_Mul:
            facs = [self.bound_ir(f, node) for f in b.as_ordered_factors()]
            out = facs[0]
            for f in facs[1:]:
                out = ir.Call(ir.Sym("multiplies", loc=loc), (out, f), loc=loc)
            return out
        raise self.error(node, f"cannot use the size expression {b} as a value")

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.AST) -> Any:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            what = _UNSUPPORTED_EXPRS.get(type(node), type(node).__name__)
            raise self.error(node, f"{what} are not supported in Tensor IR code"
                             if what.endswith("s") else f"{what} is not supported in "
                                                        "Tensor IR code")
        return method(node)

    def e_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def e_Name(self, node: ast.Name) -> Any:
        v = self.lookup(node.id, node)
        if isinstance(v, Connectivity):
            v = self.connectivity_table(v, node)
        if isinstance(v, ir.Sym):
            v = replace(v, loc=self.loc(node))
        return v

    def connectivity_table(self, c: Connectivity, node: ast.AST) -> ir.Sym:
        """A declared connectivity: the program's table parameter of that name."""
        b = self.ctx.scope.lookup(c.name)
        if b is None or b.kind != "param":
            raise self.error(node, f"the connectivity {c.name} is not a parameter of program "
                                   f"'{self.ctx.name}'; declare it at module level (or pass "
                                   "the table as a parameter)")
        return ir.Sym(c.name, loc=self.loc(node))

    def e_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.expr(e) for e in node.elts)

    def e_List(self, node: ast.List) -> Any:
        vals = [self.expr(e) for e in node.elts]
        if any(contains_ir(v) for v in vals):
            raise self.error(node, "lists of tensors are not supported; use a tuple")
        return vals

    def e_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if is_ir(base):
            if node.attr == "astype":
                return BoundMethod(base, "astype")
            raise self.error(node, f"tensors have no attribute '{node.attr}' here (only "
                                   ".astype(T))")
        if isinstance(base, tuple) and contains_ir(base):
            if node.attr == "astype":
                return BoundMethod(base, "astype")
            if is_namedtuple_class(type(base)) and node.attr in type(base)._fields:
                return getattr(base, node.attr)
            raise self.error(node, f"a tuple has no attribute '{node.attr}'")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"{describe(base)} has no attribute '{node.attr}'"
                             + did_you_mean(node.attr, dir(base))) from None

    def e_Lambda(self, node: ast.Lambda) -> Any:
        return LocalCallable(node, self)

    def static_op(self, node: ast.AST, fn, *args) -> Any:
        try:
            return fn(*args)
        except TensorIRError:
            raise
        except iv.Undecidable as e:
            raise self.error(node, f"cannot decide whether {e.a} <= {e.b} for all "
                                   "sizes") from None
        except Exception as e:  # noqa: BLE001 - a Python error in a static computation
            raise self.error(node, f"{type(e).__name__}: {getattr(e, 'message', e)}") from None

    def e_BinOp(self, node: ast.BinOp) -> Any:
        left = self.expr(node.left)
        right = self.expr(node.right)
        op = type(node.op)
        if not contains_ir(left) and not contains_ir(right):
            return self.static_op(node, _STATIC_BINOPS[op], left, right)
        if isinstance(left, Dimension) and op in (ast.Add, ast.Sub) and contains_ir(right):
            return tensor_offset(self, left, right, node, node.right, negate=op is ast.Sub)
        if isinstance(left, Dimension) or isinstance(right, Dimension):
            raise self.error(node, "a shift offset is a dimension plus an integer: x(I + 1), "
                                   "or x(K + off) with an integer tensor off; for "
                                   "coordinates as values use index(I, x)")
        if op not in _IR_BINOPS:
            hint = " (use / : integer division truncates toward zero)" \
                if op is ast.FloorDiv else ""
            raise self.error(node, f"the operator '{_OP_TEXT.get(op, op.__name__)}' is not "
                                   f"supported on tensors{hint}")
        return self.call_ir(_IR_BINOPS[op], (self.to_ir(left, node.left),
                                             self.to_ir(right, node.right)), node)

    def e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.expr(node.operand)
        op = type(node.op)
        if not contains_ir(v):
            if op is ast.Invert and isinstance(v, (bool, np.bool_)):
                return not v
            if op is ast.Not and isinstance(v, Mask):
                return ~v
            fn = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                  ast.Invert: operator.invert}[op]
            return self.static_op(node, fn, v)
        x = self.to_ir(v, node.operand)
        if op is ast.UAdd:
            return x
        if op is ast.USub:
            return self.call_ir("neg", (x,), node)
        return self.call_ir("not", (x,), node)

    def e_BoolOp(self, node: ast.BoolOp) -> Any:
        vals = [self.expr(v) for v in node.values]
        name = "and" if isinstance(node.op, ast.And) else "or"
        if not any(contains_ir(v) for v in vals):
            out = vals[0]
            masks = any(isinstance(v, Mask) for v in vals)
            for v in vals[1:]:
                if masks:    # (K < 1) or (K > 5) on index conditions means |
                    fn = operator.and_ if name == "and" else operator.or_
                else:
                    fn = (lambda a, b: a and b) if name == "and" else (lambda a, b: a or b)
                out = self.static_op(node, fn, out, v)
            return out
        out = self.to_ir(vals[0], node.values[0])
        for v, n in zip(vals[1:], node.values[1:]):
            out = self.call_ir(name, (out, self.to_ir(v, n)), node)
        return out

    def e_Compare(self, node: ast.Compare) -> Any:
        operands = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        nodes = [node.left] + list(node.comparators)
        results = []
        for op, (a, b), (na, nb) in zip(node.ops, itertools.pairwise(operands),
                                        itertools.pairwise(nodes)):
            t = type(op)
            if t not in _CMP_STATIC:
                raise self.error(node, f"the comparison '{type(op).__name__}' is not supported"
                                       " in Tensor IR code")
            if not contains_ir(a) and not contains_ir(b):
                results.append(self.static_op(node, _CMP_STATIC[t], a, b))
            else:
                for d, v, vn in ((a, b, nb), (b, a, na)):
                    if isinstance(d, Dimension):
                        check_dimension_condition(self, d, v, node, vn)
                results.append(self.call_ir(_CMP_IR[t], (self.to_ir(a, na),
                                                         self.to_ir(b, nb)), node))
        if len(results) == 1:
            return results[0]
        if not any(contains_ir(r) for r in results):
            if any(isinstance(r, Mask) for r in results):   # 0 <= K < 3
                out = results[0]
                for r in results[1:]:
                    out = self.static_op(node, operator.and_, out, r)
                return out
            return all(results)
        out = self.to_ir(results[0], node)
        for r in results[1:]:
            out = self.call_ir("and", (out, self.to_ir(r, node)), node)
        return out

    def e_IfExp(self, node: ast.IfExp) -> Any:
        c = self.expr(node.test)
        if not contains_ir(c):
            if isinstance(c, Mask):
                return self.concat_where(c, self.expr(node.body), self.expr(node.orelse), node)
            return self.expr(node.body) if self.static_truth(c, node.test) else \
                self.expr(node.orelse)
        return self.call_ir("if", (self.to_ir(c, node.test),
                                   self.to_ir(self.expr(node.body), node.body),
                                   self.to_ir(self.expr(node.orelse), node.orelse)), node)

    def static_truth(self, c: Any, node: ast.AST) -> bool:
        if isinstance(c, Mask):
            raise self.error(node, "an index condition such as 'K < 1' has no single truth "
                                   "value; use concat_where(condition, a, b)")
        try:
            return bool(c)
        except Exception as e:  # noqa: BLE001 - e.g. the truth value of an array
            raise self.error(node, f"cannot use {describe(c)} as a condition: {e}") from None

    def e_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        sl = node.slice
        if isinstance(base, tuple) and contains_ir(base):
            k = self.expr(sl)
            if not isinstance(k, int) or isinstance(k, bool):
                raise self.error(sl, "a tuple index must be an integer constant")
            try:
                return base[k]
            except IndexError:
                raise self.error(sl, f"tuple index {k} out of range for a tuple of "
                                     f"{len(base)} elements") from None
        if is_ir(base):
            if isinstance(sl, ast.Slice) or (isinstance(sl, ast.Tuple) and any(
                    isinstance(e, ast.Slice) for e in sl.elts)):
                raise self.error(node, "slicing a tensor is only allowed on the left of an "
                                       "assignment in a program (out[1:-1, :] = …)")
            k = self.expr(sl)
            if isinstance(k, NeighborSlot):
                return select_slot(self, base, k, node, sl)
            if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
                raise self.error(sl, "the index of x[k] (tuple element, table entry or "
                                     "neighbour slot C2E2CDim(0)) must be an integer constant")
            k = int(k)
            t = self.type_of(base, node.value)
            if is_table_type(t):
                nb = next(d for d in t.dims if d.neighbor_source is not None)
                if nb.start.is_Integer and nb.stop.is_Integer and not \
                        int(nb.start) <= k < int(nb.stop):
                    raise self.error(sl, f"neighbour index {k} is outside {nb}")
                return TableIndex(base, k)
            if not isinstance(t.dtype, ir.TupleType):
                raise self.error(node, f"x[{k}] selects a tuple element, but x is {t}; shift "
                                       "with x(I + 1) or x(E2V[0])")
            n = len(t.dtype.elements)
            if not -n <= k < n:
                raise self.error(sl, f"tuple index {k} out of range for {t.dtype}")
            return project(base, k % n, self.loc(node))
        k = self.expr(sl)
        if contains_ir(k):
            raise self.error(sl, "an index must be a constant")
        return self.static_op(node, operator.getitem, base, k)

    # ------------------------------------------------------------------ calls

    def e_Call(self, node: ast.Call) -> Any:
        func = self.expr(node.func)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error(node, "*args and **kwargs in calls are not supported")
        if isinstance(func, BoundMethod):
            args = [self.expr(a) for a in node.args]
            if len(args) != 1 or node.keywords:
                raise self.error(node, "x.astype(T) takes one element type")
            return self.cast(func.value, args[0], node, node.args[0])
        if is_ir(func):
            if node.keywords:
                raise self.error(node, "a shift takes no keyword arguments")
            return self.shift(func, node)
        # reduce(lambda …, init)(…) written inline
        if func is api.reduce:
            return self.make_reduce(node)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        return self.apply(func, args, kwargs, node)

    def apply(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        from .decorators import FunctionObject, ProgramObject, ScanOperator
        if isinstance(func, FunctionObject):
            return self.inline(func.fn, args, kwargs, node, func.__name__)
        if isinstance(func, ScanOperator):
            return self.scan(func, args, kwargs, node)
        if isinstance(func, ProgramObject):
            raise self.error(node, f"'{func.__name__}' is a program; call @function's from "
                                   "programs, not programs")
        if isinstance(func, api.ReduceOp):
            return self.reduce(func, args, kwargs, node)
        if isinstance(func, LocalCallable):
            return self.inline_local(func, args, kwargs, node)
        if isinstance(func, api.Builtin):
            return self.builtin(func, args, kwargs, node)
        if isinstance(func, ir.ScalarType):
            return typed_literal(self, func, args, kwargs, node)
        if is_namedtuple_class(func):
            return self.static_op(node, lambda: func(*args, **kwargs))
        try:
            equiv = api.PYTHON_EQUIVALENTS.get(func)
        except TypeError:
            equiv = None
        static = not any(contains_ir(a) for a in args) and not any(
            contains_ir(v) for v in kwargs.values())
        if equiv is not None and not static:
            if equiv == "where":
                return self.builtin(api.where, args, kwargs, node)
            fn = api.ELEMENTWISE.get(equiv) or api.Builtin(equiv, "elementwise", equiv, 1)
            if func in (builtins.min, builtins.max) and len(args) > 2 and not kwargs:
                out = args[0]
                for a in args[1:]:
                    out = self.builtin(fn, [out, a], {}, node)
                return out
            return self.builtin(fn, args, kwargs, node)
        if not static and func in (float, int, bool) and len(args) == 1 and not kwargs:
            return self.cast(args[0], func, node, node)
        if static and callable(func):
            if func is range or isinstance(func, type) or not inspect.isfunction(func):
                return self.static_op(node, lambda: func(*args, **kwargs))
            # a plain Python function with static arguments: run it
            return self.static_op(node, lambda: func(*args, **kwargs))
        if inspect.isfunction(func):
            # an undecorated Python function with tensor arguments: inline it
            return self.inline(func, args, kwargs, node, func.__name__)
        raise self.error(node, f"cannot call {describe(func)} with tensor arguments")

    # -- @function inlining

    def bind_arguments(self, params: list[str], defaults: dict[str, Any], args: list,
                       kwargs: dict, node: ast.AST, name: str) -> dict[str, Any]:
        if len(args) > len(params):
            raise self.error(node, f"{name}() takes {len(params)} argument"
                                   f"{'s' if len(params) != 1 else ''} but {len(args)} "
                                   "were given")
        bound = dict(zip(params, args))
        for k, v in kwargs.items():
            if k not in params:
                raise self.error(node, f"{name}() got an unexpected keyword argument '{k}'"
                                 + did_you_mean(k, params))
            if k in bound:
                raise self.error(node, f"{name}() got multiple values for argument '{k}'")
            bound[k] = v
        for p in params:
            if p not in bound:
                if p in defaults:
                    bound[p] = defaults[p]
                else:
                    raise self.error(node, f"{name}() missing required argument '{p}'")
        return bound

    def function_params(self, src: SourceInfo, fdef: ast.FunctionDef | ast.Lambda,
                        owner: FunctionTranslator | None) -> tuple[list[str], dict]:
        a = fdef.args
        if a.vararg or a.kwarg:
            raise FrontendError("*args and **kwargs parameters are not supported",
                                src.loc(fdef))
        names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        defaults: dict[str, Any] = {}
        if isinstance(fdef, ast.Lambda):
            if a.defaults or any(d is not None for d in a.kw_defaults):
                raise FrontendError("lambdas with default arguments are not supported; "
                                    "write the lambda without defaults or use a def",
                                    src.loc(fdef))
            return names, defaults
        fn = src.fn
        if fn is not None and not isinstance(fn, ast.AST) and owner is None:
            sig = inspect.signature(fn)
            for p in sig.parameters.values():
                if p.default is not inspect.Parameter.empty:
                    defaults[p.name] = p.default
        else:
            pos = a.posonlyargs + a.args
            for arg, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
                defaults[arg.arg] = (owner or self).expr(d)
            for arg, d in zip(a.kwonlyargs, a.kw_defaults):
                if d is not None:
                    defaults[arg.arg] = (owner or self).expr(d)
        return names, defaults

    def annotations_of(self, src: SourceInfo, fdef) -> dict[str, Any]:
        fn = src.fn
        anns = dict(getattr(fn, "__annotations__", {}) or {})
        out = {}
        for k, v in anns.items():
            if isinstance(v, str):
                try:
                    v = eval(v, dict(getattr(fn, "__globals__", {})))
                except Exception:  # noqa: BLE001, S112 - an unreadable annotation is none
                    continue
            out[k] = v
        return out

    def inline(self, fn: Any, args: list, kwargs: dict, node: ast.Call, name: str) -> Any:
        src = source_info(fn)
        fdef = src.node
        if fn in self.ctx.stack:
            raise self.error(node, f"recursive call of '{name}': Tensor IR functions are "
                                   "inlined and cannot recurse")
        params, defaults = self.function_params(src, fdef, None)
        bound = self.bind_arguments(params, defaults, args, kwargs, node, name)
        anns = self.annotations_of(src, fdef)
        self.ctx.stack.append(fn)
        try:
            sub = FunctionTranslator(self.ctx, src, {}, self.scope, None)
            return self.enter(sub, fdef, bound, node, anns, name)
        finally:
            self.ctx.stack.pop()

    def inline_local(self, fn: LocalCallable, args: list, kwargs: dict, node: ast.Call) -> Any:
        owner = fn.owner
        params, defaults = owner.function_params(owner.source, fn.node, owner) \
            if isinstance(fn.node, ast.Lambda) else \
            self._local_params(fn)
        bound = self.bind_arguments(params, defaults, args, kwargs, node, fn.name)
        sub = FunctionTranslator(self.ctx, owner.source, {}, self.scope, owner)
        return self.enter(sub, fn.node, bound, node, {}, fn.name)

    def _local_params(self, fn: LocalCallable):
        a = fn.node.args
        if a.vararg or a.kwarg:
            raise fn.owner.error(fn.node, "*args and **kwargs parameters are not supported")
        names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        defaults: dict[str, Any] = {}
        pos = a.posonlyargs + a.args
        for arg, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
            defaults[arg.arg] = fn.owner.expr(d)
        for arg, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                defaults[arg.arg] = fn.owner.expr(d)
        return names, defaults

    def enter(self, sub: FunctionTranslator, fdef, bound: dict[str, Any], node: ast.Call,
              anns: dict[str, Any], name: str) -> Any:
        """Translate a callee body with its parameters bound; compound arguments used
        more than once become parameters of a lambda application."""
        body_stmts = fdef.body if isinstance(fdef, ast.FunctionDef) else None
        lam_params: list[ir.Param] = []
        lam_args: list[ir.Expr] = []
        bindings: dict[str, Binding] = {}
        for p, v in bound.items():
            if p in anns and contains_ir(v):
                self.check_annotation(self.to_ir(v, node), anns[p], p, name, node)
            n_uses = uses_of(p, body_stmts if body_stmts is not None else [fdef.body])
            if isinstance(v, tuple) and contains_ir(v) and n_uses > 1:
                v = self.to_ir(v, node)
            if is_ir(v) and not is_trivial(v) and n_uses > 1:
                t = strip_masks(self.type_of(v, node))
                fresh = self.ctx.fresh(p)
                loc = sub.loc(fdef)
                lam_params.append(ir.Param(fresh, t, loc=loc))
                lam_args.append(v)
                bindings[fresh] = Binding(fresh, "lambda", t)
                sub.env[p] = ir.Sym(fresh, loc=loc)
            else:
                sub.env[p] = v
        if bindings:
            sub.scope = self.scope.child(bindings)
        if body_stmts is not None:
            result = sub.block(list(body_stmts), fdef)
        else:
            result = sub.expr(fdef.body)
        if not lam_params:
            return result
        body = sub.to_ir(result, fdef)
        loc = self.loc(node)
        return ir.Call(ir.Lambda(tuple(lam_params), body, loc=sub.loc(fdef)), tuple(lam_args),
                       loc=loc)

    def check_annotation(self, v: ir.Expr, ann: Any, pname: str, fname: str,
                         node: ast.AST) -> None:
        gen = generic_spec(ann)
        if gen is not None:
            want = gen.element()
            if want is not None:
                t = self.type_of(v, node)
                if t.dtype != want:
                    raise self.error(node, f"argument '{pname}' of {fname}() is annotated "
                                           f"{gen!r} but the value is {t}")
            return
        spec = annotation_spec(ann)
        if spec is None:
            return
        t = self.type_of(v, node)
        want_dtype = spec.element()
        names = set()
        n_nb = 0
        for d in spec.dims:
            if isinstance(d, NeighborDimension):
                n_nb += 1
            else:
                names.add(d.dim.name if isinstance(d, DimSpec) else d.name)
        got = {d.name for d in t.dims if not d.is_neighbor}
        got_nb = sum(d.is_neighbor for d in t.dims)
        if t.dtype != want_dtype or got != names or got_nb != n_nb:
            raise self.error(node, f"argument '{pname}' of {fname}() is annotated {spec!r} "
                                   f"but the value is {t}")

    # -- function bodies

    def block(self, stmts: list, fdef: ast.AST) -> Any:
        """A function body: statements ending in return; returns the value."""
        i = 0
        while i < len(stmts):
            s = stmts[i]
            rest = stmts[i + 1:]
            if isinstance(s, _Bind):
                if s.let:
                    let = self.bind_local(s.name, s.value, rest, None, force=s.force)
                    if let is not None:
                        return let
                else:
                    self.env[s.name] = s.value
            elif isinstance(s, ast.Return):
                if s.value is None:
                    raise self.error(s, "a Tensor IR function must return a value")
                return self.expr(s.value)
            elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                if isinstance(s, ast.AnnAssign) and s.value is None:
                    i += 1
                    continue
                targets, value = self.assignment_parts(s)
                restarted = False
                for tgt in targets:
                    if isinstance(tgt, ast.Name):
                        let = self.bind_local(tgt.id, value, rest, s)
                        if let is not None:
                            return let
                    elif isinstance(tgt, (ast.Tuple, ast.List)):
                        names = self.unpack_names(tgt)
                        binds: list[Any] = []
                        if is_ir(value) and not is_trivial(value) and not pushable(value):
                            self.unpack_value(value, len(names), s)   # checks the arity
                            hidden = self.ctx.fresh("t")
                            binds.append(_Bind(hidden, value, let=True, force=True))
                            hsym = ir.Sym(hidden, loc=self.loc(s))
                            parts = [project(hsym, k, self.loc(s)) for k in range(len(names))]
                        else:
                            parts = self.unpack_value(value, len(names), s)
                        binds += [_Bind(n, part, let=True) for n, part in zip(names, parts)
                                  if n != "_"]
                        if len(targets) > 1:
                            raise self.error(s, "chained assignment with unpacking is not "
                                                "supported")
                        stmts = binds + list(rest)
                        i = 0
                        restarted = True
                        break
                    else:
                        raise self.error(tgt, "a function cannot write into a tensor; return "
                                              "the new value instead (programs write outputs)")
                if restarted:
                    continue
            elif isinstance(s, ast.Expr):
                if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                    pass  # docstring
                else:
                    raise self.error(s, "this expression statement has no effect; assign "
                                        "or return its value")
            elif isinstance(s, ast.Pass):
                pass
            elif isinstance(s, ast.If):
                c = self.expr(s.test)
                if contains_ir(c):
                    raise self.error(s, "an if statement inside a function cannot depend on a "
                                        "tensor or scalar value; use where(c, a, b) for an "
                                        "element-wise choice, concat_where for a boundary, "
                                        "or a program-level if")
                chosen = s.body if self.static_truth(c, s.test) else s.orelse
                stmts = list(chosen) + list(rest)
                i = 0
                continue
            elif isinstance(s, ast.For):
                stmts = self.unroll(s) + list(rest)
                i = 0
                continue
            elif isinstance(s, ast.FunctionDef):
                if s.decorator_list:
                    raise self.error(s, "decorators on nested functions are not supported")
                self.env[s.name] = LocalCallable(s, self)
            else:
                raise self.unsupported(s)
            i += 1
        raise self.error(fdef, f"function '{getattr(fdef, 'name', '<lambda>')}' ends without "
                               "returning a value")

    def unsupported(self, s: ast.AST) -> FrontendError:
        what = _UNSUPPORTED_STMTS.get(type(s), type(s).__name__)
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
                   force: bool = False) -> Any:
        """Bind a local; a compound value used more than once becomes a let (lambda)."""
        if is_ir(value) and not is_trivial(value) and (force or uses_of(name, rest) > 1):
            t = strip_masks(self.type_of(value, node))
            fresh = name if force else self.ctx.fresh(name)
            loc = self.loc(node)
            sub = FunctionTranslator(self.ctx, self.source, dict(self.env),
                                     self.scope.child({fresh: Binding(fresh, "lambda", t)}),
                                     self.owner)
            sub.env[name] = ir.Sym(fresh, loc=loc)
            body = sub.to_ir(sub.block(list(rest), self.source.node), node)
            return ir.Call(ir.Lambda((ir.Param(fresh, t, loc=loc),), body, loc=loc),
                           (value,), loc=loc)
        if isinstance(value, tuple) and contains_ir(value) and uses_of(name, rest) > 1:
            return self.bind_local(name, self.to_ir(value, node), rest, node)
        self.env[name] = value
        return None

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
                out.append(_Bind(s.target.id, v))
            elif isinstance(s.target, ast.Tuple):
                names = self.unpack_names(s.target)
                vals = self.unpack_value(v, len(names), s.target)
                out += [_Bind(n, x) for n, x in zip(names, vals)]
            else:
                raise self.error(s.target, "unsupported loop target")
            out += list(s.body)
        return out

    # ------------------------------------------------------------------ builtins

    def builtin(self, f: api.Builtin, args: list, kwargs: dict, node: ast.Call) -> Any:
        kind = f.kind
        if kind == "elementwise":
            if kwargs:
                raise self.error(node, f"{f.name}() takes no keyword arguments")
            if len(args) != f.arity:
                raise self.error(node, f"{f.name}() takes {f.arity} argument"
                                       f"{'s' if f.arity != 1 else ''}, got {len(args)}")
            return self.call_ir(f.ir_name, [self.to_ir(a, node) for a in args], node)
        if kind == "where":
            args = self.positional(f, args, kwargs, ("condition", "a", "b"), node)
            c, a, b = args
            if isinstance(c, Mask):
                raise self.error(node, "where() takes an element-wise bool condition; for an "
                                       "index condition such as 'K < 1' use concat_where")
            if not contains_ir(c):
                return a if self.static_truth(c, node) else b
            return self.call_ir("if", [self.to_ir(x, node) for x in (c, a, b)], node)
        if kind == "concat_where":
            c, a, b = self.positional(f, args, kwargs, ("condition", "a", "b"), node)
            if contains_ir(c):
                raise self.error(node, "concat_where() needs an index condition such as "
                                       "'K < 1' or 'I.interval(0, 1)' (known without "
                                       "computing); for an element-wise choice use where()")
            if not isinstance(c, Mask):
                return a if self.static_truth(c, node) else b
            return self.concat_where(c, a, b, node)
        if kind in ("neighbor_sum", "max_over", "min_over"):
            x, axis = self.positional(f, args, kwargs, ("x", "axis"), node, {"axis": None})
            return self.neighbor_reduce(kind, x, axis, node)
        if kind == "cast":
            x, dtype = self.positional(f, args, kwargs, ("x", "dtype"), node)
            return self.cast(x, dtype, node, node)
        if kind == "index":
            d, x = self.positional(f, args, kwargs, ("dim", "x"), node)
            if not isinstance(d, Dimension):
                raise self.error(node, "index(I, x): the first argument must be a dimension")
            return self.call_ir("pos", [ir.Sym(d.name, loc=self.loc(node)),
                                        self.to_ir(x, node)], node)
        if kind == "can_deref":
            (x,) = self.positional(f, args, kwargs, ("x",), node)
            return self.call_ir("can_deref", [self.to_ir(x, node)], node)
        if kind == "as_offset":
            return as_offset(self, f, args, kwargs, node)
        raise self.error(node, f"unknown builtin {f.name}")  # pragma: no cover

    def positional(self, f, args, kwargs, names, node, defaults=None) -> list:
        bound = self.bind_arguments(list(names), defaults or {}, list(args), dict(kwargs),
                                    node, f.name)
        return [bound[n] for n in names]

    def cast(self, x: Any, dtype: Any, node: ast.AST, dnode: ast.AST) -> Any:
        elementwise = cast_tuple(self, x, dtype, node, dnode)
        if elementwise is not None:
            return elementwise
        try:
            et = element_type(dtype)
        except (TypeError, ValueError):
            raise self.error(dnode, f"{describe(dtype)} is not an element type; use float32, "
                                    "float64, int32, int64 or bool") from None
        if not isinstance(et, ir.ScalarType):
            raise self.error(dnode, "cast converts to a scalar element type")
        if not contains_ir(x):
            conv = {"bool": bool}.get(et.name, float if et.is_float else int)
            x = conv(x)
        loc = self.loc(node)
        return ir.Call(ir.Sym("cast", loc=loc), (self.to_ir(x, node), ir.Sym(et.name, loc=loc)),
                       loc=loc)

    # ------------------------------------------------------------------ shifts

    def shift(self, x: ir.Expr, node: ast.Call) -> ir.Expr:
        if not node.args:
            raise self.error(node, "a tensor called without arguments: write x(I + 1) to "
                                   "shift, x(E2V[0]) or x(V2E) to follow neighbour tables")
        loc = self.loc(node)
        items: list[ir.Expr] = []   # pending Cartesian pairs

        def flush(x):
            nonlocal items
            if items:
                x = ir.Call(ir.Call(ir.Sym("shift", loc=loc), tuple(items), loc=loc), (x,),
                            loc=loc)
                items = []
            return x

        for a_node in node.args:
            a = self.expr(a_node)
            aloc = self.loc(a_node)
            if isinstance(a, Offset):
                if self.ctx.rank_generic and a.dim.name not in self.ctx.checker.dim_names:
                    self.ctx.dropped.setdefault(a.dim.name, aloc)
                    continue
                if a.offset != 0:
                    items += [ir.Sym(a.dim.name, loc=aloc), ir.Literal(a.offset, loc=aloc)]
            elif isinstance(a, Dimension):
                raise self.error(a_node, f"x({a.name}) needs an offset: x({a.name} + 1) or "
                                         f"x({a.name} - 1)")
            elif isinstance(a, TableIndex):
                x = flush(x)
                x = self.table_shift(x, a.table, a.index, node, aloc)
            elif isinstance(a, TensorOffset):
                x = offset_shift(flush(x), a, aloc)
            elif is_ir(a):
                t = self.type_of(a, a_node)
                if not is_table_type(t):
                    raise self.error(a_node, f"cannot shift by {t}: a shift takes an offset "
                                             "(I + 1), a neighbour table (V2E) or a table "
                                             "entry (E2V[0])")
                x = flush(x)
                x = self.table_shift(x, a, None, node, aloc)
            else:
                raise self.error(a_node, f"cannot shift by {describe(a)}: a shift takes an "
                                         "offset (I + 1), a neighbour table (V2E) or a table "
                                         "entry (E2V[0])")
        return flush(x)

    def table_shift(self, x: ir.Expr, table: ir.Expr, k: int | None, node, aloc) -> ir.Expr:
        loc = self.loc(node)
        if isinstance(table, ir.Sym):
            static = (table,) if k is None else (table, ir.Literal(k, loc=aloc))
            head = ir.Call(ir.Sym("shift", loc=loc), static, loc=loc)
        elif k is None:
            head = ir.Call(ir.Sym("shift_init", loc=loc), (table,), loc=loc)
        else:
            head = ir.Call(ir.Sym("unstructured_shift", loc=loc),
                           (table, ir.Literal(k, loc=aloc)), loc=loc)
        return ir.Call(head, (x,), loc=loc)

    # ------------------------------------------------------------------ concat_where

    def concat_where(self, mask: Mask, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(mask, CompoundMask):
            if mask.op == "or":
                return self.concat_where(mask.left, a,
                                         self.concat_where(mask.right, a, b, node), node)
            return self.concat_where(mask.left, self.concat_where(mask.right, a, b, node), b,
                                     node)
        assert isinstance(mask, DimMask)
        loc = self.loc(node)
        D = mask.dim.name
        xa, xb = self.to_ir(a, node), self.to_ir(b, node)
        ta, tb = self.type_of(xa, node), self.type_of(xb, node)
        da, db = ta.dim(D), tb.dim(D)
        if da is None and db is None:
            raise self.error(node, f"concat_where on {D}: neither branch has dimension {D}")
        what = "concat_where"

        def go():
            # a branch without dimension D is defined everywhere along D: its pieces are
            # clipped to the hull of D's intervals in this program and in the branches
            bounded = [d for d in (da, db) if d is not None] + self.ctx.dim_intervals(D)
            lo = bounded[0].start
            hi = bounded[0].stop
            for d in bounded[1:]:
                lo, hi = _min(lo, d.start), _max(hi, d.stop)
            pieces = []
            for segs, dom, x, which in ((mask.segments, da, xa, "a"),
                                        (_complement(mask.segments), db, xb, "b")):
                s0, s1 = (dom.start, dom.stop) if dom is not None else (lo, hi)
                for seg_lo, seg_hi in segs:
                    p_lo, p_hi = _max(seg_lo, s0), _min(seg_hi, s1)
                    if not _is_empty(p_lo, p_hi):
                        pieces.append((p_lo, p_hi, x, dom, which))
            _sort_pieces(pieces)
            return pieces

        pieces = self.ctx.decide(go, loc, what)
        if not pieces:
            raise self.error(node, f"concat_where on {D}: the result is empty (neither "
                                   "branch is defined where it is selected)")
        for p, q in itertools.pairwise(pieces):
            if not iv.equal(p[1], q[0]):
                raise self.error(node, f"concat_where on {D}: the result would have a gap "
                                       f"between {D}[{p[0]}:{p[1]}] ({'true' if p[4] == 'a' else 'false'}"
                                       f" branch) and {D}[{q[0]}:{q[1]}] "
                                       f"({'true' if q[4] == 'a' else 'false'} branch); "
                                       "extend the branches' domains")
        exprs = []
        for p_lo, p_hi, x, dom, _ in pieces:
            if dom is None:
                exprs.append(ir.Call(ir.Sym("add_dim", loc=loc),
                                     (ir.Sym(D, loc=loc), self.bound_ir(p_lo, node),
                                      self.bound_ir(p_hi, node), x), loc=loc))
            elif iv.equal(p_lo, dom.start) and iv.equal(p_hi, dom.stop):
                exprs.append(x)
            else:
                exprs.append(ir.Call(ir.Sym("subset", loc=loc),
                                     (x, ir.DimInterval(D, p_lo, p_hi, loc=loc)), loc=loc))
        if len(exprs) == 1:
            return exprs[0]
        return ir.Call(ir.Sym("concat", loc=loc), (ir.Sym(D, loc=loc),) + tuple(exprs), loc=loc)

    # ------------------------------------------------------------------ reductions

    def neighbor_reduce(self, kind: str, x: Any, axis: Any, node: ast.Call) -> ir.Expr:
        loc = self.loc(node)
        xe = self.to_ir(x, node)
        t = self.type_of(xe, node)
        nb = self.reduction_axis([t], axis, node, kind)
        if not isinstance(t.dtype, ir.ScalarType) or t.dtype.is_bool:
            raise self.error(node, f"{kind} needs numeric values, got {t.dtype}")
        acc_t = strip_masks(ir.TensorType(t.dtype, tuple(d for d in t.dims
                                                          if d.name != nb.name)))
        acc, a = self.ctx.fresh("acc"), self.ctx.fresh("a")
        op = {"neighbor_sum": "plus", "max_over": "maximum", "min_over": "minimum"}[kind]
        body = ir.Call(ir.Sym(op, loc=loc), (ir.Sym(acc, loc=loc), ir.Sym(a, loc=loc)), loc=loc)
        lam = ir.Lambda((ir.Param(acc, acc_t, loc=loc), ir.Param(a, acc_t, loc=loc)), body,
                        loc=loc)
        dt = t.dtype
        if kind == "neighbor_sum":
            init = ir.Literal(0.0 if dt.is_float else 0, loc=loc)
        elif dt.is_float:
            init = ir.Literal(float("-inf") if kind == "max_over" else float("inf"), loc=loc)
        else:
            info = np.iinfo(np.dtype(dt.name))
            init = ir.Literal(int(info.min) + 1 if kind == "max_over" else int(info.max),
                              loc=loc)
        head = ir.Call(ir.Sym("reduce", loc=loc), (lam, init) + reduce_axis_arg(nb, [t], loc),
                       loc=loc)
        return ir.Call(head, (xe,), loc=loc)

    def reduction_axis(self, types: list[ir.TensorType], axis: Any, node: ast.AST,
                       what: str) -> ir.Dim:
        nbs = [t.highest_neighbor for t in types]
        nbs = [d for d in nbs if d is not None]
        if not nbs:
            raise self.error(node, f"{what} needs an operand with a neighbour dimension, e.g. "
                                   f"x(V2E) (a partial shift) or a sparse field; got "
                                   + ", ".join(str(t) for t in types))
        nb = max(nbs, key=lambda d: d.neighbor_counter)
        if axis is None:
            return nb
        if isinstance(axis, Dimension):
            raise self.error(node, f"{what} reduces over a neighbour dimension, not over "
                                   f"{axis.name}; for a recurrence along {axis.name} use a "
                                   "scan_operator")
        if not isinstance(axis, NeighborDimension):
            raise self.error(node, f"axis must be a neighbour dimension (neighbor_dim(…)), got "
                                   f"{describe(axis)}")
        source = self.mask_source(nb)
        if source is not None:
            ok = axis.matches(source)
        else:
            size = sympy.expand(nb.stop - nb.start)
            ok = size == axis.size
        nested = None if ok else reduction_axis_by_table(types, axis, self.ctx.table_dims)
        if nested is not None:      # nested partial shifts: an inner neighbour dimension
            return nested
        if not ok:
            src = f" (from the table {self.mask_table_name(nb)})" if source is not None else ""
            raise self.error(node, f"{what}(…, axis={axis!r}): the operand's last neighbour "
                                   f"dimension is {nb}{src}, which is not {axis!r}; only the "
                                   "most recently added neighbour dimension can be reduced")
        return nb

    def mask_table_name(self, nb: ir.Dim) -> str | None:
        if nb.mask is None:
            return None
        name = mask_table(nb)
        return name if name in self.ctx.table_dims else None

    def mask_source(self, nb: ir.Dim) -> NeighborDimension | None:
        name = self.mask_table_name(nb)
        return self.ctx.table_dims.get(name) if name else None

    def make_reduce(self, node: ast.Call) -> api.ReduceOp:
        """``reduce(fn, init, axis=None)`` with the function possibly a lambda literal."""
        names = ("fn", "init", "axis")
        if len(node.args) > 3:
            raise self.error(node, "reduce(fn, init, axis=None) takes at most 3 arguments")
        vals: dict[str, Any] = {}
        for n, a in zip(names, node.args):
            vals[n] = a
        for k in node.keywords:
            if k.arg not in names:
                raise self.error(node, f"reduce() got an unexpected keyword argument '{k.arg}'"
                                 + did_you_mean(k.arg or "", names))
            vals[k.arg] = k.value
        if "fn" not in vals or "init" not in vals:
            raise self.error(node, "reduce(fn, init): give the combining function and the "
                                   "initial value")
        fn = self.expr(vals["fn"])
        init = self.expr(vals["init"])
        axis = self.expr(vals["axis"]) if "axis" in vals else None
        if contains_ir(init):
            init = self.to_ir(init, vals["init"])
        return api.ReduceOp(fn, init, axis, node=node, owner=self)

    def reduce(self, op: api.ReduceOp, args: list, kwargs: dict, node: ast.Call) -> ir.Expr:
        if kwargs:
            raise self.error(node, "a reduce(…) is applied to positional operands")
        if not args:
            raise self.error(node, "a reduce(…) needs at least one operand")
        loc = self.loc(node)
        xs = [self.to_ir(a, node) for a in args]
        types = [self.type_of(x, node) for x in xs]
        nb = self.reduction_axis(types, op.axis, node, "reduce")
        sliced = [strip_masks(ir.TensorType(t.dtype, tuple(d for d in t.dims
                                                            if d.name != nb.name)))
                  for t in types]
        dims = self.ctx.broadcast(sliced, loc, "reduce")
        fn = op.fn
        annotated = self.first_param_annotation(fn)
        init_v = op.init
        acc_dtype = annotated or self.infer_dtype(init_v, sliced, node)
        acc_t = strip_masks(ir.TensorType(acc_dtype, dims))
        init = self.to_ir(init_v, node) if contains_ir(init_v) else self.typed_init(
            init_v, acc_dtype, node)
        lam = self.callable_lambda(fn, [acc_t] + sliced, node, "reduce")
        head = ir.Call(ir.Sym("reduce", loc=loc), (lam, init) + reduce_axis_arg(nb, types, loc),
                       loc=loc)
        return ir.Call(head, tuple(xs), loc=loc)

    def first_param_annotation(self, fn: Any) -> ir.ElementType | None:
        from .decorators import FunctionObject
        f = fn.fn if isinstance(fn, FunctionObject) else fn
        if inspect.isfunction(f):
            try:
                params = list(inspect.signature(f).parameters)
            except (TypeError, ValueError):
                return None
            ann = getattr(f, "__annotations__", {}).get(params[0]) if params else None
            spec = annotation_spec(ann) if ann is not None else None
            if spec is not None:
                return spec.element()
            gen = generic_spec(ann) if ann is not None else None
            if gen is not None:
                return gen.element()
        return None

    def infer_dtype(self, init: Any, operand_types: list[ir.TensorType],
                    node: ast.AST) -> ir.ElementType:
        leaves: list[ir.ScalarType] = []

        def collect(t):
            if isinstance(t, ir.TupleType):
                for e in t.elements:
                    collect(e)
            else:
                leaves.append(t)
        for t in operand_types:
            collect(t.dtype)
        floats = {l for l in leaves if l.is_float}
        ints = {l for l in leaves if l.is_int}

        def leaf(v):
            if isinstance(v, tuple):
                return ir.TupleType(tuple(leaf(x) for x in v))
            if isinstance(v, (np.generic,)):
                return element_type(v.dtype)
            if isinstance(v, bool):
                return ir.BOOL
            if isinstance(v, int):
                if len(ints) == 1:
                    return next(iter(ints))
                if not ints and len(floats) == 1:
                    return next(iter(floats))
                return ir.INT64
            if isinstance(v, float):
                return next(iter(floats)) if len(floats) == 1 else ir.FLOAT64
            if is_ir(v):
                return self.type_of(v, node).dtype
            raise self.error(node, f"the initial value {describe(v)} must be a number or a "
                                   "tuple of numbers")
        return leaf(init)

    def typed_init(self, v: Any, dtype: ir.ElementType, node: ast.AST) -> ir.Expr:
        loc = self.loc(node)
        if isinstance(v, tuple):
            if not isinstance(dtype, ir.TupleType) or len(dtype.elements) != len(v):
                raise self.error(node, f"the initial value {v!r} does not match the state "
                                       f"type {dtype}")
            return ir.Call(ir.Sym("make_tuple", loc=loc),
                           tuple(self.typed_init(x, d, node)
                                 for x, d in zip(v, dtype.elements)), loc=loc)
        if isinstance(dtype, ir.TupleType):
            raise self.error(node, f"the initial value {v!r} does not match the state type "
                                   f"{dtype}; give a tuple")
        if not is_number(v):
            raise self.error(node, f"the initial value {describe(v)} must be a number")
        if dtype.is_bool:
            return ir.Literal(bool(v), loc=loc)
        if dtype.is_int:
            if isinstance(v, (float, np.floating)) and float(v) != int(v):
                raise self.error(node, f"the initial value {v!r} is not an integer but the "
                                       f"state is {dtype}")
            return ir.Literal(int(v), loc=loc)
        return ir.Literal(float(v), loc=loc)

    def callable_lambda(self, fn: Any, param_types: list[ir.TensorType], node: ast.AST,
                        what: str, state_class: type | None = None) -> ir.Lambda:
        """An IR lambda from a Python callable (lambda literal, def, @function); the
        first parameter is seen as a ``state_class`` NamedTuple when given."""
        from .decorators import FunctionObject
        if isinstance(fn, FunctionObject):
            fn = fn.fn
        if isinstance(fn, LocalCallable):
            owner = fn.owner
            src = owner.source
            fdef = fn.node
            if isinstance(fdef, ast.Lambda):
                names, _ = owner.function_params(src, fdef, owner)
            else:
                names, _ = self._local_params(fn)
        elif inspect.isfunction(fn):
            src = source_info(fn)
            fdef = src.node
            owner = None
            names, _ = self.function_params(src, fdef, None)
        else:
            raise self.error(node, f"{what} needs a function (a lambda or a def), got "
                                   f"{describe(fn)}")
        if len(names) != len(param_types):
            raise self.error(node, f"the {what} function takes {len(names)} parameters but "
                                   f"gets {len(param_types)} (the "
                                   f"{'accumulator' if what == 'reduce' else 'state'} and "
                                   f"{len(param_types) - 1} operand"
                                   f"{'s' if len(param_types) != 2 else ''})")
        loc = src.loc(fdef)
        params = []
        bindings = {}
        env = {}
        for n, t in zip(names, param_types):
            fresh = self.ctx.fresh(n)
            params.append(ir.Param(fresh, t, loc=loc))
            bindings[fresh] = Binding(fresh, "lambda", t)
            env[n] = ir.Sym(fresh, loc=loc)
        if state_class is not None:
            env[names[0]] = named_value(state_class, env[names[0]], loc)
        sub = FunctionTranslator(self.ctx, src, env, self.scope.child(bindings), owner)
        if fn in self.ctx.stack:
            raise self.error(node, "recursive call inside a reduction or scan")
        self.ctx.stack.append(fn)
        try:
            if isinstance(fdef, ast.Lambda):
                result = sub.expr(fdef.body)
            else:
                result = sub.block(list(fdef.body), fdef)
        finally:
            self.ctx.stack.pop()
        return ir.Lambda(tuple(params), sub.to_ir(result, fdef), loc=loc)

    # ------------------------------------------------------------------ scans

    def scan(self, op: Any, args: list, kwargs: dict, node: ast.Call) -> ir.Expr:
        loc = self.loc(node)
        src = source_info(op.fn)
        names, _ = self.function_params(src, src.node, None)
        if not names:
            raise self.error(node, f"scan operator '{op.__name__}' needs a state parameter")
        bound = self.bind_arguments(names[1:], {}, args, kwargs, node, op.__name__)
        xs = [self.to_ir(bound[n], node) for n in names[1:]]
        types = [self.type_of(x, node) for x in xs]
        axis = op.axis.name
        whole = self.ctx.broadcast(types, loc, "scan")
        if axis not in {d.name for d in whole}:
            raise self.error(node, f"scan operator '{op.__name__}' scans along {axis}, but its "
                                   f"operands have no dimension {axis} ("
                                   + ", ".join(str(t) for t in types) + ")")
        sliced = [strip_masks(ir.TensorType(t.dtype, tuple(d for d in t.dims if d.name != axis)))
                  for t in types]
        state_dims = tuple(replace(d, mask=None) for d in whole if d.name != axis)
        named = namedtuple_of(op.fn, op.init)
        dtype = (None if named else self.first_param_annotation(op.fn)) or \
            self.infer_dtype(op.init, sliced, node)
        state_t = ir.TensorType(dtype, state_dims)
        init = self.typed_init(op.init, dtype, node)
        lam = self.callable_lambda(op.fn, [state_t] + sliced, node, "scan", named)
        head = ir.Call(ir.Sym("scan", loc=loc),
                       (lam, ir.Literal(bool(op.forward), loc=loc), init, ir.Sym(axis, loc=loc)),
                       loc=loc)
        result = ir.Call(head, tuple(xs), loc=loc)
        return named_value(named, result, loc) if named else result


def _sort_pieces(pieces: list) -> None:
    import functools
    pieces.sort(key=functools.cmp_to_key(
        lambda p, q: 0 if iv.equal(p[0], q[0]) else (-1 if _le(p[0], q[0]) else 1)))


@dataclass(frozen=True)
class _Bind:
    """A binding inserted by loop unrolling (static values) or tuple unpacking
    (``let``: bound like an assignment, ``force``: always bound by a lambda)."""

    name: str
    value: Any
    let: bool = False
    force: bool = False


def is_trivial(e: Any) -> bool:
    """Nothing worth binding: a name, a literal or a tuple element of one."""
    match e:
        case ir.Sym() | ir.Literal():
            return True
        case ir.Call(func=ir.Sym(name="tuple_get"), args=(x, ir.Literal())):
            return is_trivial(x)
    return not is_ir(e) and not isinstance(e, tuple)


def pushable(e: Any) -> bool:
    """Whether :func:`project` can select a tuple element without a tuple_get."""
    match e:
        case ir.Call(func=ir.Sym(name="make_tuple")):
            return True
        case ir.Call(func=ir.Lambda(body=body)):
            return pushable(body)
    return False


def uses_of(name: str, stmts: Iterable[Any]) -> int:
    """How often ``name`` is read in ``stmts`` before it is reassigned (loops and
    nested functions count double)."""
    total = 0
    for s in stmts:
        if isinstance(s, _Bind):
            if s.name == name:
                return total
            continue
        if isinstance(s, ast.expr):
            total += _loads(name, s, 1)
            continue
        reassigned = False
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            value = s.value
            total += _loads(name, value, 1) if value is not None else 0
            if isinstance(s, ast.AugAssign):
                total += _loads(name, s.target, 1) + (1 if isinstance(s.target, ast.Name)
                                                      and s.target.id == name else 0)
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                        reassigned = True
        else:
            total += _loads(name, s, 1)
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                    reassigned = True
        if reassigned or total > 1:
            return total
    return total


def _loads(name: str, node: ast.AST, weight: int) -> int:
    if isinstance(node, ast.Name):
        return weight if node.id == name and isinstance(node.ctx, ast.Load) else 0
    if isinstance(node, (ast.For, ast.While, ast.Lambda, ast.FunctionDef,
                         ast.comprehension)):
        weight *= 2
    return sum(_loads(name, c, weight) for c in ast.iter_child_nodes(node))


def describe(v: Any) -> str:
    from .decorators import FunctionObject, ProgramObject, ScanOperator
    if isinstance(v, Dimension):
        return f"the dimension {v.name}"
    if isinstance(v, NeighborDimension):
        return f"the neighbour dimension {v!r}"
    if isinstance(v, Offset):
        return f"the offset {v!r}"
    if isinstance(v, Mask):
        return f"the index condition {v!r}"
    if isinstance(v, TableIndex):
        return "a neighbour table entry"
    if isinstance(v, (FunctionObject, ScanOperator, ProgramObject)):
        return f"'{v.__name__}'"
    if isinstance(v, LocalCallable):
        return f"the local function '{v.name}'"
    if inspect.ismodule(v):
        return f"the module '{v.__name__}'"
    if callable(v) and hasattr(v, "__name__"):
        return f"'{v.__name__}'"
    if isinstance(v, str):
        return repr(v)
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{type(v).__name__} {r}"
