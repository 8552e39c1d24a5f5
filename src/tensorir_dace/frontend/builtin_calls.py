"""Translating calls of builtins: element-wise functions, where, casts, shifts
and concat_where.

Argument binding for calls (``bind_arguments``) lives here too, since the
builtins, the reductions and inlined functions all bind Python arguments to
parameters the same way.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals as iv
from .. import ir
from ..errors import TensorIRError, did_you_mean
from . import api
from .annotations import element_type
from .dims import (
    CompoundMask,
    Dimension,
    DimMask,
    Mask,
    NeighborDimension,
    Offset,
    _complement,
    _is_empty,
    _le,
    _max,
    _min,
    has_runtime_bounds,
)
from .expressions import ExpressionTranslator
from .meshes import (
    TensorOffset,
    as_offset,
    cast_tuple,
    offset_shift,
)
from .runtime_bounds import no_extent_message, runtime_concat_where
from .scan_ranges import ConcatPieces
from .values import TableIndex, contains_ir, describe, is_ir, is_table_type

if TYPE_CHECKING:
    import sympy
else:
    from ..lazy import lazy_module
    sympy = lazy_module("sympy")


class BuiltinTranslator(ExpressionTranslator):
    """Adds the builtins of :mod:`.api`, casts, shifts and concat_where."""

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
            a, b = self.literals_alike(a, b, node)
            return self.choice(self.to_ir(c, node), a, b, node)
        if kind == "concat_where":
            c, a, b = self.positional(f, args, kwargs, ("condition", "a", "b"), node)
            if contains_ir(c):
                raise self.error(node, "concat_where() needs an index condition such as "
                                       "'K < 1' or 'I.interval(0, 1)' (known without "
                                       "computing); for an element-wise choice use where()")
            if not isinstance(c, Mask):
                return a if self.static_truth(c, node) else b
            return self.concat_where(c, a, b, node)
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
        if kind == "broadcast":
            x, dims = self.positional(f, args, kwargs, ("x", "dims"), node)
            return self.broadcast_to(x, dims, node)
        raise self.error(node, f"unknown builtin {f.name}")  # pragma: no cover

    def literals_alike(self, a: Any, b: Any, node: ast.AST, inner: bool = False
                       ) -> tuple[Any, Any]:
        """The branches of ``where`` with the Python numbers inside a tuple branch
        typed as the other branch's elements: ``where(m, (e_lev, k_lev), (0, 0))``
        over ``int32`` fields takes ``(0, 0)`` as ``int32`` (a number alone
        already adapts to its partner; inside a tuple it would keep its default
        type)."""
        if type(a) is tuple and type(b) is tuple and len(a) == len(b):
            pairs = [self.literals_alike(x, y, node, True) for x, y in zip(a, b)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        if type(a) is tuple and is_ir(b):
            return self.typed_like(a, b, node), b
        if type(b) is tuple and is_ir(a):
            return a, self.typed_like(b, a, node)
        if inner and _is_number(a) and is_ir(b):
            return self.typed_like(a, b, node), b
        if inner and _is_number(b) and is_ir(a):
            return a, self.typed_like(b, a, node)
        return a, b                     # a number alone adapts by itself

    def typed_like(self, value: Any, other: ir.Expr, node: ast.AST) -> Any:
        """``value`` (a Python number or tuple) with its numbers typed as
        ``other``'s (element) types (unchanged where that type is not known)."""
        try:
            dtype = self.type_of(other, node).dtype
        except TensorIRError:       # left to the type checker to report
            return value
        return _typed_numbers(value, dtype, self.loc(node))

    def broadcast_to(self, x: Any, dims: Any, node: ast.Call) -> Any:
        """``broadcast(x, (D1, D2, …))``: Tensor IR broadcasts by dimension name
        wherever values meet, so ``x`` itself is the value; checked here is that
        it has no dimension outside ``dims``."""
        dims = dims if isinstance(dims, (tuple, list)) else (dims,)
        if not dims or not all(isinstance(d, (Dimension, NeighborDimension)) for d in dims):
            raise self.error(node, "broadcast(x, dims): dims is a tuple of dimensions, such "
                                   f"as (Cell, K); got {describe(dims)}")
        wanted = {d.name for d in dims}
        if not contains_ir(x):
            if not isinstance(x, (int, float, np.number)) or isinstance(x, (bool, np.bool_)):
                return x
            # a number broadcast: an IR literal (it still adapts to its partners'
            # element type) that remembers the dimensions it stands for, so that
            # a value built from it fits a parameter annotated with them
            x = self.to_ir(x, node)
            self.ctx.broadcasts[id(x)] = (x, frozenset(wanted))
            return x
        t = self.type_of(self.to_ir(x, node), node)
        extra = [d.name for d in t.dims if d.name not in wanted and not d.is_neighbor]
        if extra:
            raise self.error(node, f"broadcast() cannot drop dimensions: the value ({t}) has "
                                   f"{', '.join(extra)}, which are not in "
                                   f"({', '.join(d.name for d in dims)})")
        if not isinstance(x, ir.Expr):
            return x
        x = dataclasses.replace(x)      # this value, not every use of x
        self.ctx.broadcasts[id(x)] = (x, frozenset(wanted))
        return x

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
                    reach = self.ctx.reach
                    reach[a.dim.name] = reach.get(a.dim.name, 0) + abs(a.offset)
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
        ttype = self.type_of(table, node)
        src = next((d.neighbor_source for d in ttype.dims if d.neighbor_source is not None),
                   None)
        dst = next((d.name for d in ttype.dims if not d.is_neighbor), None)
        xdims = self.type_of(x, node).dim_names
        if src is not None and src not in xdims and dst in xdims:
            # a value broadcast along the source but over the destination: read at
            # every neighbour over the parameters' extent of the source (a value
            # over neither is read through the table as it is, see the shift rules)
            x = self.with_dim(x, src, node)
            if src not in self.type_of(x, node).dim_names:
                raise self.error(node, f"this value has dimension {dst} but not {src}, "
                                       f"which the neighbour table reads: a value broadcast "
                                       f"along {src} and over {dst} is read through the "
                                       f"table only where a parameter over {src} gives "
                                       f"{src}'s extent; pass a field over {src}")
        if isinstance(table, ir.Sym):
            static = (table,) if k is None else (table, ir.Literal(k, loc=aloc))
            head = ir.Call(ir.Sym("shift", loc=loc), static, loc=loc)
        elif k is None:
            head = ir.Call(ir.Sym("shift_init", loc=loc), (table,), loc=loc)
        else:
            head = ir.Call(ir.Sym("unstructured_shift", loc=loc),
                           (table, ir.Literal(k, loc=aloc)), loc=loc)
        return ir.Call(head, (x,), loc=loc)

    def with_dim(self, x: ir.Expr, D: str, node: ast.AST, margin: int = 0) -> ir.Expr:
        """``x``, given dimension ``D`` where it has not got it (a value
        broadcast along ``D``, GT4Py's ``broadcast(s, (Cell,))``): over the hull
        of the parameters' static intervals of ``D``, widened by ``margin`` at
        both ends; unchanged if they have none."""
        if D in self.type_of(x, node).dim_names:
            return x
        wide = [d for d in self.ctx.dim_intervals(D)
                if not any(ir.has_runtime(b) for b in (d.start, d.stop))]
        if not wide:
            return x
        loc = self.loc(node)
        lo, hi = self.ctx.decide(
            lambda: functools.reduce(lambda p, d: (iv.smin(p[0], d.start), iv.smax(p[1], d.stop)),
                                     wide[1:], (wide[0].start, wide[0].stop)), loc, "broadcast")
        lo, hi = lo - margin, hi + margin
        return ir.Call(ir.Sym("add_dim", loc=loc), (ir.Sym(D, loc=loc), self.bound_ir(lo, node),
                                                    self.bound_ir(hi, node), x), loc=loc)

    # ------------------------------------------------------------------ concat_where

    def branch_of(self, mask: Any, node: ast.expr, which: str) -> Any:
        """A branch of ``concat_where(mask, a, b)`` translated while the ``domain=``
        range along the condition's dimension is narrowed to where the branch is
        chosen (``which``: ``"a"`` or ``"b"``), as GT4Py infers it: a scan in
        ``concat_where(K > 0, scan(…), x)`` starts at level 1 with its ``init``."""
        narrowed = narrowed_domain(self.ctx.domain, mask, which) if isinstance(mask, Mask) \
            else None
        if narrowed is None:
            return self.expr(node)
        saved = self.ctx.domain
        self.ctx.domain = narrowed
        try:
            return self.expr(node)
        finally:
            self.ctx.domain = saved

    def concat_where(self, mask: Mask, a: Any, b: Any, node: ast.AST) -> Any:
        parts = self.tuple_branches(a, b, node)
        if parts is not None:       # element by element, as where (choice)
            return parts(lambda x, y: self.concat_where(mask, x, y, node))
        if isinstance(mask, CompoundMask):
            if mask.op == "or":
                return self.concat_where(mask.left, a,
                                         self.concat_where(mask.right, a, b, node), node)
            return self.concat_where(mask.left, self.concat_where(mask.right, a, b, node), b,
                                     node)
        assert isinstance(mask, DimMask)
        D = mask.dim.name
        loc = self.loc(node)
        xa, xb = self.to_ir(a, node), self.to_ir(b, node)
        ta, tb = self.type_of(xa, node), self.type_of(xb, node)
        da, db = ta.dim(D), tb.dim(D)
        if has_runtime_bounds(mask) or any(
                ir.has_runtime(x) for d in (da, db) if d is not None for x in (d.start, d.stop)):
            # a runtime condition, or a branch from one (a compound condition)
            target = self.ctx.target.get(D) if self.ctx.target else None
            return runtime_concat_where(self, mask, xa, xb, node, target)
        margin = self.ctx.open_margin.get(D, 0)
        if da is None and db is None and not self.ctx.dim_intervals(D) and \
                D not in self.ctx.result_dims:
            # nothing gives D's extent: where neighbour tables index D, a
            # parameter added for it does (the value is read through them)
            self.ctx.source_extent(D)
        if da is None and db is None:     # two broadcast values: the parameters' D
            xa = self.with_dim(xa, D, node, margin)
            ta = self.type_of(xa, node)
            da = ta.dim(D)
            if da is not None:
                self.ctx.made_open(D)
        if da is None and db is None and D in self.ctx.result_dims:
            # ... or, in a direct call, the declared result's, which out= gives;
            # as GT4Py's broadcasts, the value has no end there: it reaches past
            # out='s extent by the margin of the shifts of it that follow
            whole = self.ctx.result_dims[D]
            xa = ir.Call(ir.Sym("add_dim", loc=loc),
                         (ir.Sym(D, loc=loc), self.bound_ir(whole.start - margin, node),
                          self.bound_ir(whole.stop + margin, node), xa), loc=loc)
            ta = self.type_of(xa, node)
            da = ta.dim(D)
            self.ctx.made_open(D)
        if da is None and db is None:
            raise self.error(node, no_extent_message(D))
        what = "concat_where"

        def go():
            # a branch without dimension D is defined everywhere along D: its pieces are
            # clipped to the hull of D's intervals in this program and in the branches
            bounded = [d for d in (da, db) if d is not None]
            if None in (da, db):
                # (the static ones: a value written on a runtime range leaves the
                # hull undecidable)
                bounded += [d for d in self.ctx.dim_intervals(D)
                            if not ir.has_runtime(d.start) and not ir.has_runtime(d.stop)]
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
                    if dom is None and sympy.oo in (-seg_lo, seg_hi):
                        # defined without end there (see ProgramContext.open_margin)
                        self.ctx.made_open(D)
                        p_lo = p_lo - margin if seg_lo == -sympy.oo else p_lo
                        p_hi = p_hi + margin if seg_hi == sympy.oo else p_hi
                    if not _is_empty(p_lo, p_hi):
                        pieces.append((p_lo, p_hi, x, dom, which))
            _sort_pieces(pieces)
            return pieces

        pieces = self.ctx.decide(go, loc, what)
        n_checks = len(self.ctx.constraints)
        if D in self.ctx.domain:
            pieces = self.pieces_in_domain(pieces, D, loc)
        gap_checks = self.ctx.constraints[n_checks:]
        if not pieces:
            raise self.error(node, f"concat_where on {D}: the result is empty (neither "
                                   "branch is defined where it is selected)")
        gapped = False
        for i, (p, q) in enumerate(itertools.pairwise(pieces)):
            if not iv.equal(p[1], q[0]):
                # an error where the program keeps this value: GT4Py never computes
                # a value that nothing uses (a tuple element that the caller drops);
                # until then the pieces below the gap stand for it
                self.ctx.defer(loc, self.error(
                    node, f"concat_where on {D}: the result would have a gap "
                          f"between {D}[{p[0]}:{p[1]}] "
                          f"({'true' if p[4] == 'a' else 'false'}"
                          f" branch) and {D}[{q[0]}:{q[1]}] "
                          f"({'true' if q[4] == 'a' else 'false'} branch); "
                          "extend the branches' domains"))
                pieces, gapped = pieces[:i + 1], True
                break
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
        for check in gap_checks:     # made only where this value is used
            self.ctx.gap_checks[check] = loc
        if len(exprs) == 1:
            if (gap_checks or gapped) and exprs[0] is pieces[0][2]:
                # (a node from here, which tells that the value is used)
                return ir.Call(ir.Sym("subset", loc=loc), (exprs[0], ir.DimInterval(
                    D, pieces[0][0], pieces[0][1], loc=loc)), loc=loc)
            return exprs[0]
        out = ir.Call(ir.Sym("concat", loc=loc), (ir.Sym(D, loc=loc),) + tuple(exprs), loc=loc)
        if D in self.ctx.domain:     # pieces outside the domain may be left out
            self.ctx.domain_concats[id(out)] = ConcatPieces(
                out, D, tuple((p[0], p[1]) for p in pieces))
        return out

    def pieces_in_domain(self, pieces: list[tuple[Any, ...]], D: str, loc: Any
                         ) -> list[tuple[Any, ...]]:
        """The ``pieces`` of a ``concat_where`` on ``D`` that the ``domain=``
        being translated needs (see :func:`_pieces_in_domain`).  Where they
        leave a gap inside a union of the domains of several outputs, those
        that the first output's domain without a gap (static bounds) needs:
        the value is then defined there only, which outputs on other domains
        must not need (their coverage is checked)."""
        sizes = {n for n, b in self.scope.bindings.items() if b.kind == "size"}

        def within(rng: ir.DimInterval, constraints: list | None) -> list[tuple[Any, ...]]:
            # (its bounds as the parser reads them back: int parameters as runtime values)
            runtime = {s: ir.runtime_symbol(s.name) for x in (rng.start, rng.stop)
                       for s in sympy.sympify(x).free_symbols if s.name not in sizes}
            return _pieces_in_domain(pieces, D, sympy.sympify(rng.start).xreplace(runtime),
                                     sympy.sympify(rng.stop).xreplace(runtime), constraints,
                                     f"concat_where on {D} at {loc}", self.ctx.gap_below_stop)

        kept = within(self.ctx.domain[D], self.ctx.constraints)
        if _meet(kept):
            return kept
        for dom in self.ctx.part_domains:
            rng = dom.get(D)
            if rng is None or any({s.name for s in sympy.sympify(b).free_symbols} - sizes
                                  for b in (rng.start, rng.stop)):
                continue
            mine = within(rng, None)
            if _meet(mine):
                return mine
        return kept

    # ------------------------------------------------------------------ reductions


#: How the call-time check of a runtime start beside a gap begins its reason ...
_GAP_START = "the start of the domain's"
#: ... and how the checks of either bound end it.
GAP_CHECK = "between the pieces (no value is defined there)"


def _pieces_in_domain(pieces: list[tuple[Any, ...]], name: str, start: sympy.Expr,
                      stop: sympy.Expr, constraints: list[ir.SizeConstraint] | None = None,
                      where: str = "", below_stop: bool = False) -> list[tuple[Any, ...]]:
    """The sorted ``pieces`` of a ``concat_where`` less those beyond a gap that
    lies outside the ``domain=`` range ``name[start:stop]`` (GT4Py computes the
    value on the domain only: ``concat_where(K > 0, a(K - 2), b)`` from level 2
    leaves level 1 undefined, which nothing reads).  A read outside what is kept
    stays an error of that read.  A runtime bound is taken to lie beyond the gap, which
    a constraint appended to ``constraints`` checks at call time (where the
    domain is not empty); where both are runtime, the start (the domain lies
    above the first gap), or with ``below_stop`` the stop (below it)."""
    def known(a: Any, b: Any) -> bool:
        return iv.maybe_le(sympy.sympify(a), sympy.sympify(b)) is True

    at_start = ir.has_runtime(start) and constraints is not None
    at_stop = ir.has_runtime(stop) and constraints is not None
    first, last = 0, len(pieces)
    checks: dict[str, ir.SizeConstraint] = {}
    guard = ((start, stop),)
    for i, (p, q) in enumerate(itertools.pairwise(pieces)):
        if iv.equal(p[1], q[0]):
            continue
        gap = f"{name}[{p[1]}:{q[0]}]"
        if known(q[0], start):            # the gap ends where the domain starts, or below
            first = i + 1
            checks.pop("start", None)
        elif known(stop, p[1]) and last == len(pieces):   # starts at its end, or above
            last = i + 1
        elif below_stop and last == len(pieces) and at_stop and not known(p[1], start):
            last = i + 1
            checks["stop"] = _stop_check(name, gap, start, stop, p[1], guard, where)
        elif last == len(pieces) and at_start and ("start" not in checks or not at_stop) \
                and not known(stop, q[0]):    # (a domain ending in the gap keeps it)
            # a runtime start: the gap must end where it starts, or below
            first = i + 1
            checks["start"] = ir.SizeConstraint(
                sympy.sympify(q[0]), start,
                f"{where}: {_GAP_START} {name} must not lie below the end "
                f"of the gap {gap} {GAP_CHECK}",
                guard=guard, bound=start, allowed=(sympy.sympify(q[0]), stop))
        elif last == len(pieces) and at_stop and not known(p[1], start):
            # a runtime stop: the gap must start where it stops, or above
            last = i + 1
            checks["stop"] = _stop_check(name, gap, start, stop, p[1], guard, where)
    if first >= last:
        return pieces
    if constraints is not None:
        constraints += checks.values()
    return pieces[first:last]


def _meet(pieces: list[tuple[Any, ...]]) -> bool:
    """Whether each of the sorted ``pieces`` ends where the next begins."""
    return all(iv.equal(p[1], q[0]) for p, q in itertools.pairwise(pieces))


def either_side(checks: Sequence[ir.SizeConstraint]
                ) -> tuple[sympy.Expr, sympy.Expr] | None:
    """Where ``checks`` (the constraints one statement added) hold exactly one
    call-time check of :func:`_pieces_in_domain` that a runtime start of the
    domain lies at or above the end of a ``concat_where`` gap while the stop is
    runtime too (the domain might as well lie below the gap): that end and the
    start, else None."""
    found = {(c.lower, c.upper) for c in checks
             if _GAP_START in c.reason and c.guard and ir.has_runtime(c.guard[0][1])}
    return found.pop() if len(found) == 1 else None


def _stop_check(name: str, gap: str, start: sympy.Expr, stop: sympy.Expr, end: Any,
                guard: tuple, where: str) -> ir.SizeConstraint:
    """The call-time check that the runtime stop of the domain's ``name`` lies at
    the start ``end`` of the gap ``gap``, or below it."""
    return ir.SizeConstraint(
        stop, sympy.sympify(end),
        f"{where}: the stop of the domain's {name} must not lie above the start "
        f"of the gap {gap} {GAP_CHECK}",
        guard=guard, bound=stop, allowed=(start, sympy.sympify(end)))


def _sort_pieces(pieces: list[tuple[Any, ...]]) -> None:
    def compare(p: tuple[Any, ...], q: tuple[Any, ...]) -> int:
        return 0 if iv.equal(p[0], q[0]) else (-1 if _le(p[0], q[0]) else 1)
    pieces.sort(key=functools.cmp_to_key(compare))


def narrowed_domain(domain: dict[str, ir.DimInterval], mask: Mask,
                    which: str) -> dict[str, ir.DimInterval] | None:
    """``domain`` with its interval along the condition's dimension cut to the one
    segment where branch ``which`` of ``concat_where(mask, a, b)`` is chosen; None
    where nothing changes (no ``domain=``, or the branch's part is not one segment).
    ``a & b`` on one dimension (runtime bounds) cuts with both conditions."""
    if isinstance(mask, CompoundMask):
        if which != "a" or mask.op != "and":
            return None
        left = narrowed_domain(domain, mask.left, "a")
        return narrowed_domain(left if left is not None else domain, mask.right, "a") or left
    if not isinstance(mask, DimMask) or mask.dim.name not in domain:
        return None
    segments = mask.segments if which == "a" else _complement(mask.segments)
    if len(segments) != 1:
        return None
    (lo, hi), dom = segments[0], domain[mask.dim.name]
    start = dom.start if lo == -sympy.oo else sympy.Max(dom.start, lo)
    stop = dom.stop if hi == sympy.oo else sympy.Max(start, sympy.Min(dom.stop, hi))
    if start == dom.start and stop == dom.stop:
        return None
    return {**domain, mask.dim.name: ir.DimInterval(dom.name, start, stop, loc=dom.loc)}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _typed_numbers(value: Any, dtype: Any, loc: Any) -> Any:
    """The Python numbers of the (nested) tuple ``value`` cast to the matching
    elements of the tuple type ``dtype``."""
    if type(value) is tuple and isinstance(dtype, ir.TupleType) and \
            len(value) == len(dtype.elements):
        return tuple(_typed_numbers(v, t, loc) for v, t in zip(value, dtype.elements))
    if _is_number(value) and isinstance(dtype, ir.ScalarType) and not dtype.is_bool:
        return ir.Call(ir.Sym("cast", loc=loc), (ir.Literal(value, loc=loc),
                                                 ir.Sym(dtype.name, loc=loc)), loc=loc)
    return value
