"""Translating calls and inlining functions.

Calls of ``@function`` objects, undecorated Python functions and local
lambdas/defs are inlined as lambda applications: an argument that is a name or
a literal is substituted, a compound argument used more than once becomes a
lambda parameter whose type is the argument's inferred type (typed on demand
with the type checker).  Builtins, reductions and scans go to the translators
below (:mod:`.builtin_calls`, :mod:`.reductions`); calls with only static
arguments run now.

:func:`translate_call` is the entry point for a ``@function`` called
directly with arrays: the program ``result ← fn(params…)``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import typing
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import numpy as np
import sympy

from .. import intervals as iv
from .. import ir
from ..errors import ArgumentError, FrontendError
from ..typing.scope import Binding, Scope
from ..typing.util import is_weak
from . import api
from .annotations import (
    annotation_spec,
    evaluated_annotation,
    generic_spec,
    tuple_element,
    tuple_parts,
)
from .bodies import BodyTranslator, uses_of
from .callables import InlinedFunction, ProgramDefinition, ScanOperator
from .context import ProgramContext, with_open_margins
from .dims import Dimension, DimSpec, NeighborDimension
from .expressions import ExpressionTranslator
from .meshes import (
    compound_whole,
    holds_namedtuple,
    is_namedtuple_class,
    named_value,
    rebuild,
    typed_literal,
    viewed_as,
)
from .runtime_bounds import runtime_value
from .source import SourceInfo, source_info
from .values import (
    BoundMethod,
    LocalCallable,
    contains_ir,
    describe,
    is_ir,
    is_trivial,
    project,
    strip_masks,
)


class FunctionTranslator(BodyTranslator):
    """Translates a function body with everything it may call."""

    def new_translator(self, source: SourceInfo, env: dict[str, Any], scope: Scope,
                       owner: ExpressionTranslator | None) -> FunctionTranslator:
        return FunctionTranslator(self.ctx, source, env, scope, owner)

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
            shifted = self.shift(func, node)
            if not self.type_of(func, node.func).dims:
                # a scalar expression (astype(broadcast(0.25, …), float64)) shifted:
                # constant along every dimension it lacks, as a shifted number is
                self.ctx.broadcasts[id(shifted)] = (shifted, frozenset({ANY_DIMENSION}))
            return shifted
        if isinstance(func, (int, float, np.number, np.bool_)):
            # a number known while translating (a @function's argument or result),
            # shifted: a shifted scalar, as in the text
            value = self.shift(self.to_ir(func, node.func), node)
            # the same along every dimension it lacks (broadcast(2.0, (Vertex, K))
            # read through E2V[0] is over (Edge, K) in GT4Py)
            self.ctx.broadcasts[id(value)] = (value, frozenset({ANY_DIMENSION}))
            return value
        # reduce(lambda …, init)(…) written inline
        if func is api.reduce:
            return self.make_reduce(node)
        if func is api.concat_where and len(node.args) == 3 and not node.keywords:
            # each branch's scans run over the domain's part the branch is chosen on
            c = self.expr(node.args[0])
            a, b = (self.branch_of(c, n, which) for n, which in zip(node.args[1:], "ab"))
            return self.apply(func, [c, a, b], {}, node)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        return self.apply(func, args, kwargs, node)

    def apply(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if isinstance(func, InlinedFunction):
            return self.inline(func.fn, args, kwargs, node, func.__name__)
        if isinstance(func, ScanOperator):
            return self.scan(func, args, kwargs, node)
        if isinstance(func, ProgramDefinition):
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
        if is_namedtuple_class(func) or func is dict:   # dict(…): a domain= with scalars
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
        if inspect.ismethod(func) and isinstance(func.__self__, Dimension) and not kwargs:
            # K.interval(k0, k1) with int parameters: an index condition with runtime bounds
            bounds = [runtime_value(a, self.scope) for a in args]
            if None not in bounds:
                return self.static_op(node, lambda: func(*bounds))
        raise self.error(node, f"cannot call {describe(func)} with tensor arguments")

    # -- @function inlining

    # ------------------------------------------------------------------ inlining

    def annotations_of(self, src: SourceInfo, fdef) -> dict[str, Any]:
        fn = src.fn
        anns = dict(getattr(fn, "__annotations__", {}) or {})
        out = {}
        for k, v in anns.items():
            try:
                out[k] = evaluated_annotation(fn, v)
            except Exception:  # noqa: BLE001 - an unreadable annotation is none
                continue
        return out

    def inline(self, fn: Any, args: list, kwargs: dict, node: ast.AST, name: str) -> Any:
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
        params, defaults = self.function_params(owner.source, fn.node, owner)
        bound = self.bind_arguments(params, defaults, args, kwargs, node, fn.name)
        sub = FunctionTranslator(self.ctx, owner.source, {}, self.scope, owner)
        return self.enter(sub, fn.node, bound, node, {}, fn.name)

    def enter(self, sub: FunctionTranslator, fdef, bound: dict[str, Any], node: ast.AST,
              anns: dict[str, Any], name: str) -> Any:
        """Translate a callee body with its parameters bound; compound arguments used
        more than once become parameters of a lambda application."""
        body_stmts = fdef.body if isinstance(fdef, ast.FunctionDef) else None
        lam_params: list[ir.Param] = []
        lam_args: list[ir.Expr] = []
        bindings: dict[str, Binding] = {}

        def once(p: str, v: Any, n_uses: int) -> Any:
            """``v``, a compound value used more than once bound to a lambda parameter."""
            # an int expression of runtime values (``n_lev=ve - 1``) stays inline: it is
            # cheap, and an index condition (``K < n_lev``) needs it as a bound
            if is_ir(v) and not is_trivial(v) and n_uses > 1 and \
                    runtime_value(v, self.scope) is None:
                t = strip_masks(self.type_of(v, node))
                fresh = self.ctx.fresh(p)
                loc = sub.loc(fdef)
                lam_params.append(ir.Param(fresh, t, loc=loc))
                lam_args.append(v)
                bindings[fresh] = Binding(fresh, "lambda", t)
                return ir.Sym(fresh, loc=loc)
            if n_uses > 1 and (w := compound_whole(v)) is not v:    # bound once
                return viewed_as(v, once(p, w, n_uses), sub.loc(fdef))
            if isinstance(v, tuple):      # elements over different dimensions, one by one
                return rebuild(v, [once(p, x, n_uses) for x in v])
            return v

        for p, v in bound.items():
            if p in anns and is_ir(v) and is_weak(v):
                v = self.as_declared(v, anns[p], node)    # where(m, 1, 0) for an int32
            if p in anns and contains_ir(v):
                self.check_parts(v, anns[p], p, name, node)
            n_uses = uses_of(p, body_stmts if body_stmts is not None else [fdef.body])
            if isinstance(v, tuple) and contains_ir(v) and n_uses > 1 and \
                    self.one_shape(v, node):
                v = self.to_ir(v, node)
            sub.env[p] = once(p, v, n_uses)
            if isinstance(sub.env[p], tuple) and is_namedtuple_class(anns.get(p)) and \
                    len(sub.env[p]) == len(anns[p]._fields):
                sub.env[p] = anns[p](*sub.env[p])         # p.x then works
            if is_ir(sub.env[p]) and is_namedtuple_class(anns.get(p)):   # p.x then works
                sub.env[p] = named_value(anns[p], sub.env[p], sub.loc(fdef))
        if bindings:
            sub.scope = self.scope.child(bindings)
        if body_stmts is not None:
            result = sub.block(list(body_stmts), fdef)
        else:
            result = sub.expr(fdef.body)
        if "return" in anns:
            result = sub.as_declared(result, anns["return"], fdef)
        if not lam_params:
            return result
        body = sub.to_ir(result, fdef)
        loc = self.loc(node)
        call = ir.Call(ir.Lambda(tuple(lam_params), body, loc=sub.loc(fdef)), tuple(lam_args),
                       loc=loc)
        if isinstance(result, tuple) and holds_namedtuple(result):
            return viewed_as(result, call, loc)       # r[1].x of a tuple holding one
        return annotated_view(anns.get("return"), call, loc)

    def check_parts(self, v: Any, ann: Any, p: str, name: str, node: ast.AST) -> None:
        """``v`` against its annotation ``ann``, a tuple of fields over different
        dimensions element by element."""
        parts = tuple_parts(ann) if isinstance(v, tuple) else None
        if parts is not None and len(parts) == len(v) and not self.one_shape(v, node):
            for x, a in zip(v, parts):
                if contains_ir(x):
                    self.check_parts(x, a, p, name, node)
            return
        self.check_annotation(self.to_ir(v, node), ann, p, name, node)

    def one_shape(self, v: Any, node: ast.AST) -> bool:
        """Whether the fields of the tuple value ``v`` have one shape, as the
        elements of a tuple tensor do (a NamedTuple built of a cell field and
        fields over ``[Cell, C2E2C, K]`` stays a Python tuple of its elements)."""
        dims = {tuple(d.name for d in self.type_of(x, node).dims) for x in _ir_leaves(v)}
        return len(dims) <= 1

    def as_declared(self, value: Any, ann: Any, node: ast.AST) -> Any:
        """``value`` returned under the return annotation ``ann``: a part built
        from Python numbers alone (``where(m, 1, 0)``, whose numbers would
        otherwise keep Tensor IR's default ``int64``) takes the annotation's
        element type, as GT4Py types it (``-> Field[[Cell, K], int32]``)."""
        if isinstance(value, tuple) and typing.get_origin(ann) is tuple:
            anns = typing.get_args(ann)
            if len(anns) != len(value):
                return value
            parts = [self.as_declared(v, a, node) for v, a in zip(value, anns)]
            if all(p is v for p, v in zip(parts, value)):
                return value
            return type(value)(*parts) if is_namedtuple_class(type(value)) else tuple(parts)
        if not is_ir(value) or not is_weak(value):
            return value
        try:
            spec = annotation_spec(ann)
        except Exception:  # noqa: BLE001 - an unreadable annotation declares nothing
            return value
        want = None if spec is None else spec.element()
        if not isinstance(want, ir.ScalarType) or self.type_of(value, node).dtype == want:
            return value
        loc = self.loc(node)
        return ir.Call(ir.Sym("cast", loc=loc), (value, ir.Sym(want.name, loc=loc)), loc=loc)

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
        if not spec.dims and self.ctx.pointwise:
            # in a scan or reduce body a value is a point of its column: a scalar
            # annotation (GT4Py's helper called from a scan operator) checks the type
            if t.dtype != want_dtype:
                raise self.error(node, f"argument '{pname}' of {fname}() is annotated "
                                       f"{want_dtype} but the value is {t.dtype}")
            return
        names = set()
        n_nb = 0
        for d in spec.dims:
            if isinstance(d, NeighborDimension):
                n_nb += 1
            else:
                names.add(d.dim.name if isinstance(d, DimSpec) else d.name)
        got = {d.name for d in t.dims if not d.is_neighbor}
        if not t.dims and t.dtype == want_dtype:
            return      # the same at every point: broadcast(wpfloat("0.0"), (Cell,)) fits
        got_nb = sum(d.is_neighbor for d in t.dims)
        if got < names and (names - got <= (spread := self.broadcast_dims(v))
                            or ANY_DIMENSION in spread):
            got = names     # broadcast(x, dims) has dims (Tensor IR broadcasts by name)
        if t.dtype != want_dtype or got != names or got_nb != n_nb:
            raise self.error(node, f"argument '{pname}' of {fname}() is annotated {spec!r} "
                                   f"but the value is {t}")

    def broadcast_dims(self, v: Any) -> set[str]:
        """The dimensions ``broadcast(x, dims)`` gave ``v`` or a value it is built
        from (``broadcast(c, (Cell, K))(E2C[0]) * 2.0`` has ``K`` in GT4Py; Tensor
        IR broadcasts by name, so the value itself lacks it)."""
        out: set[str] = set()
        if not isinstance(v, ir.Node):
            return out
        for n in ir.walk(v):
            mark = self.ctx.broadcasts.get(id(n))
            if mark is not None and mark[0] is n:
                out |= mark[1]
        return out

    # -- function bodies


#: a mark of :attr:`ProgramContext.broadcasts` for a value constant along every
#: dimension it lacks
ANY_DIMENSION = "*"


def _declared_result_order(fn: Any, path: Sequence[int] = ()) -> tuple[str, ...] | None:
    """The dimension names of ``fn``'s return annotation in order (of each
    element of a ``tuple[…]`` annotation, where all have the same), or None;
    ``path``: of the element of a tuple annotation that part of the value has."""
    try:
        ann = evaluated_annotation(fn, (getattr(fn, "__annotations__", None) or {}).get("return"))
    except Exception:  # noqa: BLE001 - an unreadable annotation is none
        return None
    ann = tuple_element(ann, path)
    if ann is None:
        return None
    parts = typing.get_args(ann) if typing.get_origin(ann) is tuple else (ann,)
    orders = set()
    for part in parts:
        spec = annotation_spec(part)
        if spec is None or not spec.dims or \
                not all(isinstance(getattr(d, "name", None), str) for d in spec.dims):
            return None
        orders.add(tuple(d.name for d in spec.dims))
    return orders.pop() if len(orders) == 1 else None


def _sized_dims(names: Sequence[str], params: Sequence[ir.Param],
                taken: Collection[str] = ()) -> dict[str, ir.Dim]:
    """A dimension per name of ``names`` over a size symbol of its own (``N_K``,
    not one that ``params`` or ``taken`` use)."""
    used = set(taken) | {p.name for p in params} | {
        s.name for p in params for d in p.type.dims for b in (d.start, d.stop)
        for s in sympy.sympify(b).free_symbols}
    out = {}
    for n in names:
        size = f"N_{n}"
        while size in used:
            size += "_"
        used.add(size)
        out[n] = ir.Dim(n, 0, ir.size_symbol(size))
    return out


def _result_only_dims(order: tuple[str, ...] | None, params: Sequence[ir.Param]
                      ) -> dict[str, ir.Dim]:
    """The declared result's dimensions (``order``) that no parameter has, each
    over a size symbol of its own."""
    have = {d.name for p in params for d in p.type.dims}
    return _sized_dims([n for n in order or () if n not in have], params)


def _with_declared_dims(t: ir.TensorType, order: tuple[str, ...],
                        params: Sequence[ir.Param], result_dims: dict[str, ir.Dim]
                        ) -> ir.TensorType:
    """``t`` over the declared result's dimensions it lacks too, each over a size
    symbol of its own (``result_dims``' where no parameter has it):
    ``broadcast(0.0, (Cell, K))`` (a number) or ``broadcast(a, (Cell, K))`` of
    ``a`` over cells is constant along them, and a direct call writes it into
    ``out=`` over the whole of them."""
    missing = [n for n in order if n not in t.dim_names]
    if not missing:
        return t
    taken = {s.name for d in result_dims.values() for s in sympy.sympify(d.stop).free_symbols}
    own = _sized_dims([n for n in missing if n not in result_dims], params, taken)
    dims = list(t.dims) + [result_dims.get(n) or own[n] for n in missing]
    return ir.TensorType(t.dtype, tuple(dims))


def _within_hull(expr: ir.Expr, t: ir.TensorType, ctx: ProgramContext, loc: Any
                 ) -> ir.Expr:
    """``expr`` (of type ``t``) cut, along each dimension whose ``concat_where``
    pieces reach past the hull (``ctx.open_margin``), to the hull of the static
    intervals of the parameters and of ``out=`` there: a value constant along
    it beyond the inputs is returned over their levels, not over the margin."""
    for D in ctx.open_margin:
        d = t.dim(D)
        known = [(x.start, x.stop) for x in ctx.dim_intervals(D)] + \
            ([ctx.extent[D]] if D in ctx.extent else [])
        known = [b for b in known if not any(ir.has_runtime(x) for x in b)]
        if d is None or not known or any(ir.has_runtime(x) for x in (d.start, d.stop)):
            continue
        try:
            lo = functools.reduce(iv.smin, [b[0] for b in known])
            hi = functools.reduce(iv.smax, [b[1] for b in known])
            start, stop = iv.smax(d.start, lo), iv.smin(d.stop, hi)
        except iv.Undecidable:
            continue
        if (start, stop) != (d.start, d.stop) and iv.maybe_le(stop, start) is not True:
            expr = ir.Call(ir.Sym("subset", loc=loc),
                           (expr, ir.DimInterval(D, start, stop, loc=loc)), loc=loc)
    return expr


def _runtime_target(domain: Sequence[ir.DimInterval], params: Sequence[ir.Param]
                    ) -> dict[str, tuple[Any, Any]]:
    """``domain``'s bounds with its scalar parameters as runtime symbols."""
    scalars = {p.name for p in params if p.type.is_scalar}

    def runtime(bound: Any) -> Any:
        e = sympy.sympify(bound)
        return e.xreplace({x: ir.runtime_symbol(x.name) for x in e.free_symbols
                           if x.name in scalars})
    return {i.name: (runtime(i.start), runtime(i.stop)) for i in domain}


def _union_intervals(domains: list[list[ir.DimInterval]]) -> list[ir.DimInterval]:
    """The intervals over the dimensions all of ``domains`` restrict, each the
    union of theirs (the range of a scan read by all of them)."""
    out = []
    for a in domains[0]:
        same = [b for d in domains for b in d if b.name == a.name]
        if len(same) == len(domains):
            out.append(ir.DimInterval(a.name, sympy.Min(*[b.start for b in same]),
                                      sympy.Max(*[b.stop for b in same]), loc=a.loc))
    return out


def _part_of(e: ir.Expr, k: int, t: ir.TensorType, fn: Any, loc: Any) -> ir.Expr:
    """Element ``k`` of the tuple value ``e`` (of type ``t``) of a direct call,
    the selection pushed into the lets and the tuple that make it: the tuple of
    parts over other dimensions (``(kh_e, div_ic)`` over edges and over cells)
    has all their dimensions, an element of it only its own."""
    if not isinstance(t.dtype, ir.TupleType) or k >= len(t.dtype.elements):
        raise ArgumentError(f"{fn.__name__}(): domain= gives output {k} of a value of type "
                            f"{t.dtype}, which has no such element; give one domain per "
                            "element of the value (nested as it is)", loc)
    return project(e, k, loc)



def translate_call(fn: Any, params: Sequence[ir.Param], table_dims: dict[str, NeighborDimension],
                   result_name: str, *, static: dict[str, Any] | None = None,
                   rank_generic: bool = True, report: dict[str, Any] | None = None,
                   domain: Sequence[ir.DimInterval] = (),
                   names: dict[str, str] | None = None,
                   parts: Sequence[tuple[tuple[int, ...], Sequence[ir.DimInterval]]] = (),
                   part: int = 0, gap_below_stop: bool = False,
                   target: dict[str, tuple[Any, Any]] | None = None,
                   extent: dict[str, tuple[Any, Any]] | None = None,
                   open_margin: dict[str, int] | None = None,
                   made: list[ProgramContext] | None = None) -> ir.Program:
    """The (unchecked) program ``result ← fn(params…)`` of a ``@function`` called
    directly with arrays: the parameters are the function's (those not given are
    left to their defaults; ``static`` ones are Python values), plus
    ``result_name``, typed with the value's type.  Under ``domain`` (intervals
    over scalar parameters of ``params``), scans along those dimensions run over
    the domain's range only.  ``names``: parameters named otherwise in the IR
    ({Python name: IR name}).  ``parts``: GT4Py's tuple of domains, per output
    the path of its part of the value and its intervals; the program writes
    part ``part`` of them, its scans run over the union of the domains of the
    parts that read them (GT4Py's domain inference, as in a program body).
    ``gap_below_stop``: a ``concat_where`` gap is taken to lie above the
    domain, not below it, where both its bounds are parameters.  ``target``:
    the intervals of the target written without ``domain=`` ({dimension:
    (start, stop)} over size symbols), as an ``out=`` target's are in a program;
    ``extent``: the whole intervals of an ``out=`` longer than the inputs under a
    ``domain=`` (without it, ``target``'s).  ``open_margin`` and ``made``: see
    :func:`~.context.with_open_margins`, which translates the call without them."""
    if made is None:
        return with_open_margins(lambda margins, made: translate_call(
            fn, params, table_dims, result_name, static=static, rank_generic=rank_generic,
            report=report, domain=domain, names=names, parts=parts, part=part,
            gap_below_stop=gap_below_stop, target=target, extent=extent,
            open_margin=margins, made=made))
    if parts:
        domain = _union_intervals([list(d) for _, d in parts])
    src = source_info(fn)
    node = src.node
    loc = src.loc(node)
    ctx = ProgramContext(src.name, params, loc, table_dims)
    made.append(ctx)
    ctx.open_margin = open_margin or {}
    ctx.rank_generic = rank_generic
    ctx.domain = {i.name: i for i in domain}
    if not domain and target:
        # a whole out= target, as in a program body: a scan in a concat_where
        # piece runs over the piece's part of it
        ctx.domain = {n: ir.DimInterval(n, lo, hi, loc=loc) for n, (lo, hi) in target.items()}
    # the domain is the target's range, as an out= target's is in a program: a
    # runtime concat_where's pieces are clamped to it and checked at call time
    ctx.target = _runtime_target(domain, params) if domain else target
    ctx.extent = dict(extent or target or {})
    ctx.gap_below_stop = gap_below_stop
    ctx.part_domains = [{i.name: i for i in d} for _, d in parts]
    order = _declared_result_order(fn, parts[part][0] if parts else ())
    ctx.result_dims = _result_only_dims(order, params)
    ctx.checker.dim_names |= set(ctx.result_dims)     # the result's, as a parameter's
    ctx.used |= set(ctx.result_dims)
    for d in ctx.result_dims.values():
        for sym in sympy.sympify(d.stop).free_symbols:
            ctx.scope.bindings[sym.name] = Binding(sym.name, "size", ir.TensorType(ir.INT64))
            ctx.used.add(sym.name)
    ctx.rename(names)
    ctx.used.add(result_name)
    tr = FunctionTranslator(ctx, src, {}, ctx.scope, None)
    own = set(inspect.signature(fn).parameters)     # not the declared connectivities
    kwargs: dict[str, Any] = {ctx.python_name(p): ir.Sym(p.name, loc=p.loc) for p in params
                              if ctx.python_name(p) in own}
    kwargs.update(static or {})
    with ctx.deferred_first():
        value = tr.inline(fn, [], kwargs, node, src.name)
        if not contains_ir(value):
            raise FrontendError(f"{src.name}() returns {describe(value)} for these arguments, "
                                "not a tensor", loc)
        if parts:
            pieces = []
            for path, _ in parts:
                whole = value
                for k in path:          # the part of the value this output takes
                    whole = whole[k] if isinstance(whole, tuple) and k < len(whole) \
                        else _part_of(tr.to_ir(whole, node), k, tr.type_of(tr.to_ir(whole, node),
                                                                         node), fn, loc)
                pieces.append(whole)
            fitted = tr.fit_domain_scans(pieces, node, [{i.name: i for i in d} for _, d in parts])
            expr = tr.to_ir(fitted[part], node)
        else:
            expr = tr.fit_domain_scans(tr.to_ir(value, node), node)
        expr = _within_hull(expr, strip_masks(tr.type_of(expr, node)), ctx, loc)
        t = strip_masks(tr.type_of(expr, node))
        if order is not None:
            t = _with_declared_dims(t, order, params, ctx.result_dims)
        if t.is_scalar:
            raise FrontendError(f"{src.name}() returns a scalar ({t}) for these arguments; a "
                                "function called directly returns a tensor (pass at least one "
                                "array)", loc)
        if report is not None:
            report["dropped"] = dict(ctx.dropped)
        if order is not None and order != t.dim_names and sorted(order) == sorted(t.dim_names):
            # the array returned has the declared return type's dimension order
            # (``Field[[Cell, K], float]``), whichever order the value's type has
            t = ir.TensorType(t.dtype, tuple(d for n in order for d in t.dims if d.name == n))
        out = ir.Param(result_name, t, loc=loc)
        body = (ir.Assign(ir.Sym(result_name, loc=loc), expr, loc=loc),)
    return ir.Program(src.name, tuple(ctx.params) + (out,), tuple(ctx.temporaries), body, loc=loc,
                      constraints=ctx.live_constraints(body))


def _ir_leaves(v: Any) -> Iterator[Any]:
    if isinstance(v, tuple):
        for x in v:
            yield from _ir_leaves(x)
    elif is_ir(v):
        yield v


def annotated_view(ann: Any, e: ir.Expr, loc: Any) -> Any:
    """The tuple-typed ``e`` seen with the NamedTuples its annotation ``ann``
    names at any depth (``-> tuple[Field, State]``: ``s, state = f(...)`` then
    ``state.x`` works); ``e`` itself where ``ann`` names none."""
    if is_namedtuple_class(ann):
        return named_value(ann, e, loc)
    parts = tuple_parts(ann) if ann is not None else None
    if not parts or not any(_names_namedtuple(p) for p in parts):
        return e
    return tuple(annotated_view(p, ir.Call(ir.Sym("tuple_get", loc=loc),
                                           (e, ir.Literal(i, loc=loc)), loc=loc), loc)
                 for i, p in enumerate(parts))


def _names_namedtuple(ann: Any) -> bool:
    if is_namedtuple_class(ann):
        return True
    parts = tuple_parts(ann) or ()
    return any(_names_namedtuple(p) for p in parts)
