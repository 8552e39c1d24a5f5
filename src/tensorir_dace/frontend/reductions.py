"""Translating reductions and scans: ``neighbor_sum``/``max_over``/``min_over``,
``reduce(fn, init)`` and ``@scan_operator`` calls.

The combining function of a reduction or scan is translated into an IR lambda
whose parameter types are the accumulator (state) and operand types; its
element type comes from the first parameter's annotation, or else from the
initial value and the operands (:meth:`ReductionTranslator.infer_dtype`).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..errors import FrontendError, TensorIRError, did_you_mean
from ..lazy import lazy_module
from ..typing.scope import Binding, Scope
from ..typing.util import is_weak
from . import api
from .annotations import annotation_spec, element_type, evaluated_annotation, generic_spec
from .builtin_calls import BuiltinTranslator
from .callables import InlinedFunction, ScanOperator
from .dims import Dimension, NeighborDimension
from .meshes import (
    mask_table,
    named_value,
    namedtuple_of,
    namedtuple_params,
    reduce_axis_arg,
    reduction_axis_by_table,
)
from .scan_ranges import DomainScan, fit_scans, trim_pieces
from .source import source_info
from .values import LocalCallable, contains_ir, describe, is_ir, is_number, strip_masks

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


class ReductionTranslator(BuiltinTranslator):
    """Adds neighbour reductions, ``reduce`` and scans."""

    def builtin(self, f: api.Builtin, args: list, kwargs: dict, node: ast.Call) -> Any:
        if f.kind in ("neighbor_sum", "max_over", "min_over"):
            x, axis = self.positional(f, args, kwargs, ("x", "axis"), node, {"axis": None})
            return self.neighbor_reduce(f.kind, x, axis, node)
        return super().builtin(f, args, kwargs, node)

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
        nbs = [d for t in types if (d := t.highest_neighbor) is not None]
        if not nbs:
            raise self.error(node, f"{what} needs an operand with a neighbour dimension, e.g. "
                                   f"x(V2E) (a partial shift) or a sparse field; got "
                                   + ", ".join(str(t) for t in types))
        nb = max(nbs, key=lambda d: d.neighbor_counter or 0)
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
        """The element type the first parameter's annotation declares (a scan's
        state, a reduction's accumulator); a string annotation (``from
        __future__ import annotations``) is resolved in the function's module."""
        f = fn.fn if isinstance(fn, InlinedFunction) else fn
        if inspect.isfunction(f):
            try:
                params = list(inspect.signature(f).parameters)
                ann = getattr(f, "__annotations__", {}).get(params[0]) if params else None
                ann = evaluated_annotation(f, ann) if ann is not None else None
            except Exception:  # noqa: BLE001 - no signature, or an unreadable annotation: none
                return None
            spec = annotation_spec(ann) if ann is not None else None
            if spec is not None:
                return spec.element()
            gen = generic_spec(ann) if ann is not None else None
            if gen is not None:
                return gen.element()
        return None

    @staticmethod
    def namedtuple_state_type(named: type) -> ir.ElementType | None:
        """The element type a NamedTuple scan state declares (``count: int32``
        beside ``flux: wpfloat``), as GT4Py takes a carry's type from its class;
        None where a field is unannotated or not a scalar type (the init decides)."""
        spec = annotation_spec(named)
        return spec.element() if spec is not None and not spec.dims else None

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
        floats = {x for x in leaves if x.is_float}
        ints = {x for x in leaves if x.is_int}

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
        if isinstance(fn, InlinedFunction):
            fn = fn.fn
        if isinstance(fn, LocalCallable):
            owner = fn.owner
            src = owner.source
            fdef = fn.node
            names, _ = self.function_params(src, fdef, owner)
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
        for n, cls in namedtuple_params(fn).items():
            if n in env and n != names[0]:
                env[n] = named_value(cls, env[n], loc)
        sub = self.new_translator(src, env, self.scope.child(bindings), owner)
        if fn in self.ctx.stack:
            raise self.error(node, "recursive call inside a reduction or scan")
        self.ctx.stack.append(fn)
        self.ctx.pointwise += 1
        try:
            if isinstance(fdef, ast.Lambda):
                result = sub.expr(fdef.body)
            else:
                result = sub.block(list(fdef.body), fdef)
        finally:
            self.ctx.pointwise -= 1
            self.ctx.stack.pop()
        return ir.Lambda(tuple(params), sub.to_ir(result, fdef), loc=loc)

    # ------------------------------------------------------------------ scans

    def fit_domain_scans(self, value: Any, node: ast.AST,
                         domains: list[dict[str, ir.DimInterval]] | None = None) -> Any:
        """``value`` of a ``domain=`` call (an IR value or a tuple of them) with its
        scans along the domain's dimensions run over the levels its readers need
        (see :mod:`.scan_ranges`).  With ``domains``, ``value`` is a list of parts,
        each written on its own domain: a scan read by several runs over the
        union of what they ask."""
        value = self.trim_domain_concats(value, domains)
        if not self.ctx.domain_scans:
            return value
        leaves: list[ir.Expr] = []
        leaf_domains: list[dict[str, ir.DimInterval]] = []
        current: list[dict[str, ir.DimInterval]] = [self.ctx.domain]

        def collect(v: Any) -> None:
            if isinstance(v, tuple):
                for x in v:
                    collect(x)
            elif is_ir(v):
                leaves.append(v)
                leaf_domains.append(current[0])

        def rebuilt(v: Any, fitted: Iterator[ir.Expr]) -> Any:
            if isinstance(v, tuple):
                from .meshes import rebuild
                return rebuild(v, [rebuilt(x, fitted) for x in v])
            return next(fitted) if is_ir(v) else v

        if domains is None:
            collect(value)      # the parts of a tuple value share their scans' ranges
        else:
            for part, d in zip(value, domains):
                current[0] = d
                collect(part)
        runtime = {p.name for p in self.ctx.params if p.type.is_scalar} | \
            {v for v, _, _ in self.ctx.loops}

        def type_of(e: ir.Expr, scope: Scope) -> ir.TensorType | None:
            try:
                return self.ctx.type_of(e, scope, self.loc(node))
            except TensorIRError:
                return None

        fitted = fit_scans(leaves, self.ctx.domain, self.ctx.domain_scans, runtime,
                           self.scope, type_of, None if domains is None else leaf_domains)
        if domains is None:
            return rebuilt(value, iter(fitted))
        it = iter(fitted)
        return [rebuilt(part, it) for part in value]

    def trim_domain_concats(self, value: Any,
                            domains: list[dict[str, ir.DimInterval]] | None = None) -> Any:
        """``value`` (as :meth:`fit_domain_scans` takes it) with the pieces of its
        ``concat_where``s that lie wholly outside what the domain asks of them
        left out (see :func:`.scan_ranges.trim_pieces`)."""
        concats = self.ctx.domain_concats
        if not concats:
            return value
        runtime = {p.name for p in self.ctx.params if p.type.is_scalar} | \
            {v for v, _, _ in self.ctx.loops}

        def trim(v: Any, domain: dict[str, ir.DimInterval]) -> Any:
            if isinstance(v, tuple):
                from .meshes import rebuild
                return rebuild(v, [trim(x, domain) for x in v])
            return trim_pieces(v, domain, concats, runtime) if is_ir(v) else v

        if domains is None:
            return trim(value, self.ctx.domain)
        return [trim(part, d) for part, d in zip(value, domains)]

    def scan_operand(self, op: ScanOperator, name: str, x: ir.Expr, node: ast.AST) -> ir.Expr:
        """The operand ``x`` of the scan parameter ``name``: one built from Python
        numbers alone (``scan(w, 4, nlev - 1)`` with a literal, whose numbers would
        otherwise keep Tensor IR's default ``int64``) takes the element type of the
        parameter's scalar annotation (``nlev: int32``), as GT4Py types it."""
        if not is_weak(x):
            return x
        ann = (getattr(op.fn, "__annotations__", None) or {}).get(name)
        if ann is None:
            return x
        try:
            spec = annotation_spec(evaluated_annotation(op.fn, ann))
        except Exception:  # noqa: BLE001 - an unreadable annotation declares nothing
            return x
        want = None if spec is None or spec.dims else spec.element()
        got = self.type_of(x, node).dtype
        if not isinstance(want, ir.ScalarType) or not isinstance(got, ir.ScalarType) \
                or got == want:
            return x
        if want.is_bool != got.is_bool:
            return x        # a number for a bool (or the reverse): the body reports it
        loc = self.loc(node)
        return ir.Call(ir.Sym("cast", loc=loc), (x, ir.Sym(want.name, loc=loc)), loc=loc)

    def scan(self, op: ScanOperator, args: list, kwargs: dict, node: ast.Call) -> ir.Expr:
        loc = self.loc(node)
        src = source_info(op.fn)
        names, _ = self.function_params(src, src.node, None)
        if not names:
            raise self.error(node, f"scan operator '{op.__name__}' needs a state parameter")
        bound = self.bind_arguments(names[1:], {}, args, kwargs, node, op.__name__)
        xs = [self.scan_operand(op, n, self.to_ir(bound[n], node), node) for n in names[1:]]
        types = [self.type_of(x, node) for x in xs]
        axis = op.axis.name
        whole = self.ctx.broadcast(types, loc, "scan")
        if xs and axis not in {d.name for d in whole}:     # operands broadcast along it
            xs[0] = self.with_dim(xs[0], axis, node)
            types[0] = self.type_of(xs[0], node)
            whole = self.ctx.broadcast(types, loc, "scan")
        if axis not in {d.name for d in whole}:
            raise self.error(node, f"scan operator '{op.__name__}' scans along {axis}, but its "
                                   f"operands have no dimension {axis} ("
                                   + ", ".join(str(t) for t in types) + ")")
        sliced = [strip_masks(ir.TensorType(t.dtype, tuple(d for d in t.dims if d.name != axis)))
                  for t in types]
        state_dims = tuple(replace(d, mask=None) for d in whole if d.name != axis)
        named = namedtuple_of(op.fn, op.init)
        dtype = (self.namedtuple_state_type(named) if named else
                 self.first_param_annotation(op.fn)) or self.infer_dtype(op.init, sliced, node)
        state_t = ir.TensorType(dtype, state_dims)
        try:
            init = self.typed_init(op.init, dtype, node)
        except FrontendError as e:   # the init is written in the decorator: point there
            deco = getattr(src.node, "decorator_list", None)
            raise FrontendError(e.message, src.loc(deco[0] if deco else None)) from None
        lam = self.callable_lambda(op.fn, [state_t] + sliced, node, "scan", named)
        head = ir.Call(ir.Sym("scan", loc=loc),
                       (lam, ir.Literal(bool(op.forward), loc=loc), init, ir.Sym(axis, loc=loc)),
                       loc=loc)
        result = ir.Call(head, tuple(xs), loc=loc)
        if axis in self.ctx.domain:
            # under domain=: the scan runs over the levels its readers need (fit_scans)
            over = next(d for d in whole if d.name == axis)
            self.ctx.domain_scans[result] = DomainScan(
                axis, over.start, over.stop, tuple(t.dim(axis) is not None for t in types))
        return named_value(named, result, loc) if named else result
