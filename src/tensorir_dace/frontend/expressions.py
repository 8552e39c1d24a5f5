"""Translating Python expressions: names, constants, operators, subscripts.

:class:`ExpressionTranslator` is the base of the translators: it holds what
a translated body knows (its program context, source, local names, type scope)
and turns values (:mod:`.values`) into IR expressions.  Operators on static
values are evaluated now; on tensors they become IR builtin calls.  Calls are
translated by the subclasses (:mod:`.builtin_calls`, :mod:`.reductions`,
:mod:`.functions`); the hooks at the end of the class name what they provide.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import operator
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals as iv
from .. import ir
from ..errors import FrontendError, SourceLoc, TensorIRError, did_you_mean
from ..lazy import lazy_module
from ..typing.scope import Scope
from .connectivities import Connectivity, LocalOffset, StridedOffset
from .context import ProgramContext
from .dims import DefinitionError, Dimension, Mask, NeighborSlot, Offset
from .meshes import (
    check_dimension_condition,
    compound_whole,
    holds_namedtuple,
    is_namedtuple_class,
    rebuild,
    select_slot,
    tensor_offset,
    viewed_as,
    whole_of_projections,
)
from .nodes import (
    CMP_IR,
    CMP_STATIC,
    EXPRESSIONS,
    IR_BINOPS,
    OP_TEXT,
    STATIC_BINOPS,
    STATIC_UNARY,
    UNSUPPORTED_EXPRESSIONS,
    handler,
)
from .runtime_bounds import runtime_value
from .size_exprs import as_sympy
from .source import SourceInfo, parameters
from .strided import strided_table
from .values import (
    BoundMethod,
    LocalCallable,
    TableIndex,
    contains_ir,
    describe,
    is_ir,
    is_table_type,
    project,
    pushable,
    small_lets,
    strip_masks,
)

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


class ExpressionTranslator:
    """Translates the expressions of one Python function body."""

    def __init__(self, ctx: ProgramContext, source: SourceInfo, env: dict[str, Any],
                 scope: Scope, owner: ExpressionTranslator | None = None):
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

    def type_of(self, e: ir.Expr, node: ast.AST | None,
                expected: ir.ElementType | None = None) -> ir.TensorType:
        return self.ctx.type_of(e, self.scope, self.loc(node), expected)

    def call_ir(self, name: str, args: Sequence[ir.Expr], node: ast.AST | None) -> ir.Call:
        loc = self.loc(node)
        return ir.Call(ir.Sym(name, loc=loc), tuple(args), loc=loc)

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.env:
            return self.env[name]
        t: ExpressionTranslator | None = self.owner
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
        own = set(self.env) | self.source.global_names()
        raise self.error(node, f"unknown name '{name}'" + did_you_mean(name, own, dir(builtins)))

    def to_ir(self, v: Any, node: ast.AST | None) -> ir.Expr:
        loc = self.loc(node)
        if is_ir(v):
            return v
        if isinstance(v, tuple):
            whole = whole_of_projections(v)
            # (e[0], e[1]) is e only when e has two elements, not three
            if whole is not None and _arity(self.type_of(whole, node)) == len(v):
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
        elif isinstance(v, dict):
            hint = "; a dict is only used as the domain= of a call with out="
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
        if b.is_Add or b.is_Mul:
            name = "plus" if b.is_Add else "multiplies"
            parts = b.as_ordered_terms() if b.is_Add else b.as_ordered_factors()
            out = self.bound_ir(parts[0], node)
            for part in parts[1:]:
                out = ir.Call(ir.Sym(name, loc=loc), (out, self.bound_ir(part, node)), loc=loc)
            return out
        raise self.error(node, f"cannot use the size expression {b} as a value")

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.AST) -> Any:
        method = handler(EXPRESSIONS, self, node)
        if method is None:
            what = UNSUPPORTED_EXPRESSIONS.get(type(node), type(node).__name__)
            raise self.error(node, f"{what} are not supported in Tensor IR code"
                             if what.endswith("s") else f"{what} is not supported in "
                                                        "Tensor IR code")
        try:
            return method(node)
        except DefinitionError as e:
            if e.at_node:
                raise
            # a Python value misused inside the translated code (``Koff[1.5]``):
            # point at the expression, not at the caller of the program
            located = DefinitionError(e.message, self.loc(node))
            located.at_node = True
            raise located from None

    def e_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def e_Name(self, node: ast.Name) -> Any:
        v = self.offset_value(self.lookup(node.id, node), node)
        if isinstance(v, ir.Sym):
            mark = self.ctx.broadcasts.get(id(v))
            if mark is not None and mark[0] is not v:
                mark = None
            v = replace(v, loc=self.loc(node))
            if mark is not None:        # a name of broadcast(x, dims)
                self.ctx.broadcasts[id(v)] = (v, mark[1])
        return v

    def offset_value(self, v: Any, node: ast.AST) -> Any:
        """An offset named in the code (``C2E``, ``dims.C2E``) as the translator
        uses it: a local offset as what the provider made it, a table as its
        table argument, a strided offset as its index table; any other value
        unchanged."""
        if isinstance(v, LocalOffset):
            if v.resolved is None:
                raise self.error(node, f"{v!r} points into the local dimension "
                                       f"{v.local.name}: whether it is a table or strided, and "
                                       f"its neighbour count, come from the offset provider; "
                                       f"pass offset_provider={{'{v.name}': table}} (or "
                                       f"{v.name}=table) when calling or compiling "
                                       f"'{self.ctx.name}'")
            v = v.resolved
        if isinstance(v, Connectivity):
            v = self.connectivity_table(v, node)
        elif isinstance(v, StridedOffset):
            v = strided_table(self, v, node)
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
        """A Python list of static values or scalars (``domain={Cell: [hs, he]}``,
        ``dict([(K, (vs, ve))])``); tensors go in tuples."""
        vals = [self.expr(e) for e in node.elts]
        if not all(self.only_scalars(v, node) for v in vals):
            raise self.error(node, "lists of tensors are not supported; use a tuple")
        return vals

    def only_scalars(self, v: Any, node: ast.AST) -> bool:
        """Whether every IR value inside ``v`` (nested tuples and lists) is a scalar."""
        if isinstance(v, (tuple, list)):
            return all(self.only_scalars(x, node) for x in v)
        return not is_ir(v) or self.type_of(v, node).is_scalar

    def e_Dict(self, node: ast.Dict) -> Any:
        """A dict known while translating (``{Cell: (hs, he), K: (vs, ve)}``, for
        ``domain=``): its keys are static values, its values anything."""
        out: dict[Any, Any] = {}
        for knode, vnode in zip(node.keys, node.values):
            if knode is None:
                raise self.error(vnode, "'**' unpacking in a dict is not supported")
            key = self.expr(knode)
            if contains_ir(key):
                raise self.error(knode, "a dict key must be known while translating (a "
                                        "dimension, a number or a string), not a tensor")
            try:
                hash(key)
            except TypeError:
                raise self.error(knode, f"{describe(key)} cannot be a dict key") from None
            out[key] = self.expr(vnode)
        return out

    def e_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if is_ir(base):
            if node.attr == "astype":
                return BoundMethod(base, "astype")
            raise self.error(node, f"tensors have no attribute '{node.attr}' here (only "
                                   ".astype(T))")
        if node.attr == "astype" and isinstance(base, (int, float, np.generic)):
            return BoundMethod(base, "astype")   # np.sin(0.5).astype(float32): a cast
        if isinstance(base, tuple) and contains_ir(base):
            if node.attr == "astype":
                return BoundMethod(base, "astype")
            if is_namedtuple_class(type(base)) and node.attr in getattr(base, "_fields", ()):
                return getattr(base, node.attr)
            raise self.error(node, f"a tuple has no attribute '{node.attr}'")
        try:
            # an offset reached through a module or namespace (``dims.C2E``) is
            # the offset named directly
            return as_sympy(self.offset_value(getattr(base, node.attr), node))
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
            return self.static_op(node, STATIC_BINOPS[op], left, right)
        if isinstance(left, Dimension) and op in (ast.Add, ast.Sub) and contains_ir(right):
            return tensor_offset(self, left, right, node, node.right, negate=op is ast.Sub)
        if isinstance(left, Dimension) or isinstance(right, Dimension):
            raise self.error(node, "a shift offset is a dimension plus an integer: x(I + 1), "
                                   "or x(K + off) with an integer tensor off; for "
                                   "coordinates as values use index(I, x)")
        if op is ast.FloorDiv:
            return self.floor_divide(self.to_ir(left, node.left), self.to_ir(right, node.right),
                                     node)
        if op is ast.BitXor:     # GT4Py's xor_ on bool fields: "differ"
            a, b = self.to_ir(left, node.left), self.to_ir(right, node.right)
            dtypes = {self.type_of(x, node).dtype for x in (a, b) if not isinstance(x, ir.Literal)}
            if dtypes - {ir.BOOL}:
                raise self.error(node, "'^' is the exclusive or of bool tensors, got "
                                       + " and ".join(sorted(map(str, dtypes)))
                                       + "; there are no bitwise operations on integers")
            return self.call_ir("neq", (a, b), node)
        if op not in IR_BINOPS:
            raise self.error(node, f"the operator '{OP_TEXT.get(op, op.__name__)}' is not "
                                   "supported on tensors")
        return self.call_ir(IR_BINOPS[op], (self.to_ir(left, node.left),
                                             self.to_ir(right, node.right)), node)

    def floor_divide(self, a: ir.Expr, b: ir.Expr, node: ast.BinOp) -> ir.Expr:
        """``a // b`` as in Python and NumPy: rounded toward −∞ (``floor(a / b)``
        for floats; for integers the truncated quotient, one less where the
        remainder is non-zero and its sign differs from the divisor's)."""
        dtype = self.type_of(self.call_ir("divides", (a, b), node), node).dtype
        if isinstance(dtype, ir.ScalarType) and dtype.is_float:
            return self.call_ir("floor", (self.call_ir("divides", (a, b), node),), node)
        loc = self.loc(node)
        scalar = self.type_of(a, node).is_scalar and self.type_of(b, node).is_scalar
        params, args, names = [], [], []
        for x in (a, b):        # each operand is evaluated once: a lambda parameter
            if scalar or isinstance(x, (ir.Sym, ir.Literal)):   # (scalars: cheap, and
                # program-level conditions and loop bounds take no lambdas)
                names.append(x)
                continue
            fresh = self.ctx.fresh("q")
            params.append(ir.Param(fresh, strip_masks(self.type_of(x, node)), loc=loc))
            args.append(x)
            names.append(ir.Sym(fresh, loc=loc))
        x, y = names
        r = self.call_ir("mod", (x, y), node)
        zero = ir.Literal(0, loc=loc)
        inexact = self.call_ir("neq", (r, zero), node)
        signs = self.call_ir("neq", (self.call_ir("less", (r, zero), node),
                                     self.call_ir("less", (y, zero), node)), node)
        down = self.call_ir("if", (self.call_ir("and", (inexact, signs), node),
                                   ir.Literal(1, loc=loc), zero), node)
        body = self.call_ir("minus", (self.call_ir("divides", (x, y), node), down), node)
        if not params:
            return body
        return ir.Call(ir.Lambda(tuple(params), body, loc=loc), tuple(args), loc=loc)

    def e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.expr(node.operand)
        op = type(node.op)
        if not contains_ir(v):
            if op is ast.Invert and isinstance(v, (bool, np.bool_)):
                return not v
            if op is ast.Not and isinstance(v, Mask):
                return ~v
            return self.static_op(node, STATIC_UNARY[op], v)
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
            if t not in CMP_STATIC:
                raise self.error(node, f"the comparison '{type(op).__name__}' is not supported"
                                       " in Tensor IR code")
            a, b = self.runtime_index_bounds(a, b, na, nb)
            if not contains_ir(a) and not contains_ir(b):
                results.append(self.static_op(node, CMP_STATIC[t], a, b))
            else:
                for d, v, vn in ((a, b, nb), (b, a, na)):
                    if isinstance(d, Dimension):
                        check_dimension_condition(self, d, v, node, vn)
                results.append(self.call_ir(CMP_IR[t], (self.to_ir(a, na),
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

    def runtime_index_bounds(self, a: Any, b: Any, na: ast.AST, nb: ast.AST) -> tuple:
        """``K == nlev`` with an int parameter: the IR side becomes a runtime bound,
        so the comparison is an index condition (for ``concat_where``)."""
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Dimension) and contains_ir(y):
                bound = runtime_value(y, self.scope)
                if bound is not None:       # else the comparison reports what is wrong
                    return (x, bound) if x is a else (bound, x)
        return a, b

    def e_IfExp(self, node: ast.IfExp) -> Any:
        c = self.expr(node.test)
        if not contains_ir(c):
            if isinstance(c, Mask):
                return self.concat_where(c, self.expr(node.body), self.expr(node.orelse), node)
            return self.expr(node.body) if self.static_truth(c, node.test) else \
                self.expr(node.orelse)
        return self.choice(self.to_ir(c, node.test), self.expr(node.body),
                           self.expr(node.orelse), node)

    def choice(self, cond: ir.Expr, a: Any, b: Any, node: ast.AST) -> Any:
        """``if(cond, a, b)``, split element by element where both branches are
        tuples of the same length: each element is then defined wherever its
        own branches are (``x, y = where(m, (a(K - 1), b), (a, b))`` leaves
        ``y`` defined on every level, as GT4Py's element-wise ``where`` does).
        GT4Py keeps the branches' NamedTuples: ``q, t = where(m, (q, te), …)``
        then reads ``q.v``."""
        parts = self.tuple_branches(a, b, node)
        if parts is not None:
            return parts(lambda x, y: self.choice(cond, x, y, node))
        like = next((x for x in (a, b) if holds_namedtuple(x)), None)
        value = self.call_ir("if", [cond, self.to_ir(a, node), self.to_ir(b, node)], node)
        return value if like is None else viewed_as(like, value, self.loc(node))

    def tuple_branches(self, a: Any, b: Any, node: ast.AST) -> Any:
        """For two branches that are tuples of the same length (a tuple-typed IR
        branch split where :meth:`split_tuple` does): a function building the
        tuple of ``f(a_i, b_i)`` (of the branches' NamedTuple class, if any),
        so that each element is defined wherever its own branches are; else None."""
        like = next((x for x in (a, b) if holds_namedtuple(x)), None)
        # a view of one compound value (a call's NamedTuple result) is split only
        # where its whole would be: not copied into each element
        a, b = compound_whole(a), compound_whole(b)
        a, b = (self.split_tuple(x, len(y), node) if isinstance(y, tuple) else x
                for x, y in ((a, b), (b, a)))
        if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)):
            return None
        shape = like if like is not None and len(like) == len(a) else a
        return lambda f: rebuild(shape, [f(x, y) for x, y in zip(a, b)])

    def split_tuple(self, value: Any, n: int, node: ast.AST) -> Any:
        """The tuple-typed IR ``value`` as a Python tuple of its ``n`` parts where
        selecting them copies little, or its parts are defined on intervals of
        their own (a tuple holds only their intersection); else ``value``."""
        if is_ir(value) and pushable(value) and \
                (small_lets(value) or self.parts_differ(value, n, node)):
            return tuple(project(value, k, self.loc(node)) for k in range(n))
        return value

    def parts_differ(self, value: ir.Expr, n: int, node: ast.AST) -> bool:
        """Whether some part of the tuple ``value`` of ``n`` elements is defined
        beyond the interval of the tuple (the intersection of its parts')."""
        loc = self.loc(node)
        vt = self.type_of(value, node)
        if not isinstance(vt.dtype, ir.TupleType) or len(vt.dtype.elements) != n:
            return False
        for k in range(n):
            for d in self.type_of(project(value, k, loc), node).dims:
                vd = vt.dim(d.name)
                try:
                    if vd is not None and not iv.covers(vd, d):
                        return True
                except iv.Undecidable:
                    return True
        return False

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
                if not is_table_type(self.type_of(base, node.value)):
                    return select_slot(self, base, k, node, sl)
                k = k.index         # E2V[E2VDim(0)] is the table entry E2V[0]
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

    # ------------------------------------------------------------------ Python functions

    def function_params(self, src: SourceInfo, fdef: ast.FunctionDef | ast.Lambda,
                        owner: ExpressionTranslator | None) -> tuple[list[str], dict]:
        """Parameters and defaults of a def or lambda; a nested one (``owner``) has
        its defaults evaluated in the defining body."""
        return parameters(src, fdef, (owner or self).expr, from_signature=owner is None)

    # ------------------------------------------------------------------ hooks

    def concat_where(self, mask: Mask, a: Any, b: Any, node: ast.AST) -> Any:
        """``concat_where(mask, a, b)`` (:mod:`.builtin_calls`)."""
        raise NotImplementedError

    def new_translator(self, source: SourceInfo, env: dict[str, Any], scope: Scope,
                       owner: ExpressionTranslator | None) -> ExpressionTranslator:
        """A translator for an inlined body (:mod:`.functions`)."""
        raise NotImplementedError

    def block(self, stmts: list, fdef: ast.AST) -> Any:
        """The value of a function body (:mod:`.bodies`)."""
        raise NotImplementedError


def _arity(t: ir.TensorType) -> int | None:
    """The number of elements of a tuple-typed tensor, None for a scalar type."""
    return len(t.dtype.elements) if isinstance(t.dtype, ir.TupleType) else None
