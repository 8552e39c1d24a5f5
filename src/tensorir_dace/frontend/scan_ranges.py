"""Scans under ``domain=``: each runs over the levels its readers need.

A scan along a dimension of a ``domain=`` call runs over a range of its own, as
in GT4Py's domain inference, where every temporary is computed on the union of
the domains its readers need: the statement's target asks for the domain's
range, a shift ``w(K + 1)`` asks ``w`` for the levels one above what it is asked
for, a ``concat_where`` piece asks its branch only for the levels of its piece,
and a scan asks its operands for its own range.  That range is clipped to the
scan operands' interval; a read beyond it stays an error of the statement
(``w(K + 1)`` on the last level).  The scans are translated over their
operands' whole interval first (so that ``concat_where`` sees the branches'
whole extent); :func:`fit_scans` then restricts each to its range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .. import intervals as iv
from .. import ir
from ..lazy import lazy_module
from ..typing.scope import Binding, Scope
from .runtime_bounds import interval
from .values import strip_masks

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

# the levels asked for along one dimension, [start, stop); None: all of them
Range = tuple["sympy.Expr", "sympy.Expr"] | None
Needs = dict[str, Range]


@dataclass(frozen=True)
class DomainScan:
    """A scan along ``axis``, a dimension of the ``domain=`` being translated:
    its operands' interval ``[start, stop)`` along it and which operands have it."""

    axis: str
    start: sympy.Expr
    stop: sympy.Expr
    has_axis: tuple[bool, ...]


def _max(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    try:
        return iv.runtime_max(a, b)
    except iv.Undecidable:
        return sympy.Max(a, b)


def _min(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    try:
        return iv.runtime_min(a, b)
    except iv.Undecidable:
        return sympy.Min(a, b)


def _runtime(b: sympy.Expr, runtime: set[str]) -> sympy.Expr:
    """``b`` with its runtime names as runtime symbols (no sign assumed)."""
    return b.xreplace({s: ir.runtime_symbol(s.name) for s in b.free_symbols
                       if s.name in runtime})


def _union(a: Range, b: Range) -> Range:
    if a is None or b is None:
        return None
    return _min(a[0], b[0]), _max(a[1], b[1])


def _intersect(a: Range, lo: sympy.Expr, hi: sympy.Expr) -> Range:
    if a is None:
        return lo, hi
    return _max(a[0], lo), _min(a[1], hi)


def _shift_head(head: ir.Call, needs: Needs) -> Needs:
    """What a shift ``⟪…⟫(x)`` asks of ``x``: a Cartesian offset ``(D, c)`` moves
    the levels asked for along ``D`` by ``c``; a data-dependent one asks for all."""
    name = ir.builtin_name(head)
    items = head.args
    out = dict(needs)
    i = 0
    while i < len(items):
        a = items[i]
        nxt = items[i + 1] if i + 1 < len(items) else None
        literal = isinstance(nxt, ir.Literal) and nxt.kind == "int"
        if isinstance(a, ir.Sym) and a.name in out and nxt is not None and \
                name in ("shift", "cartesian_shift", "offset_shift"):
            r = out[a.name]
            if not literal:
                out[a.name] = None
            elif r is not None:
                assert isinstance(nxt, ir.Literal)
                c = int(nxt.value)
                out[a.name] = (r[0] + c, r[1] + c)
            i += 2
        else:
            i += 2 if literal else 1
    return out


def fit_scans(values: list[ir.Expr], domain: dict[str, ir.DimInterval],
              scans: dict[ir.Call, DomainScan], runtime: set[str], scope: Scope,
              type_of: Callable[[ir.Expr, Scope], ir.TensorType | None],
              domains: list[dict[str, ir.DimInterval]] | None = None) -> list[ir.Expr]:
    """``values`` (all written on ``domain``, or each on its own of ``domains``),
    each scan of ``scans`` restricted to the range its readers need (the union
    of what each value asks, as GT4Py's domain inference does for a scan whose
    tuple feeds outputs with different domains), clipped to its operands'
    interval.  ``runtime``: the names of runtime bounds; ``type_of``: the type
    of an expression in a scope (None when it has none).  A let (an applied
    lambda) asks its arguments for what its body asks of its parameters; its
    parameters then take the types of the restricted arguments."""
    if not scans or not any(isinstance(n, ir.Call) and ir.builtin_name(n) == "scan" and
                            n in scans for v in values for n in ir.walk(v)):
        return values

    def needs(d: dict[str, ir.DimInterval]) -> Needs:
        return {a: (_runtime(x.start, runtime), _runtime(x.stop, runtime))
                for a, x in d.items()}
    roots = [needs(d) for d in domains] if domains is not None else [needs(domain)] * len(values)
    root: Needs = dict(roots[0]) if roots else needs(domain)
    for r in roots[1:]:
        root = {a: _union(x, r[a]) for a, x in root.items() if a in r}
    ranges: dict[ir.Call, Range] = {}
    for _ in range(len(scans) + 2):   # a scan's range depends on the scans around it
        asked, cuts = _analyse(values, roots, root, scans, ranges, runtime, scope, type_of)
        fitted = {s: _fit(r, scans[s], root.get(scans[s].axis), runtime)
                  for s, r in asked.items()}
        if fitted == ranges:
            break
        ranges = fitted
    memo: dict[int, ir.Expr] = {}
    return [_rewrite(v, scans, ranges, cuts, scope, type_of, memo) for v in values]


def _analyse(values: list[ir.Expr], roots: list[Needs], root: Needs,
             scans: dict[ir.Call, DomainScan],
             ranges: dict[ir.Call, Range], runtime: set[str], scope: Scope,
             type_of: Callable[[ir.Expr, Scope], ir.TensorType | None]
             ) -> tuple[dict[ir.Call, Range], dict[int, tuple[str, Range, list[Range]]]]:
    """What each scan of ``scans`` is asked for when ``values`` are asked for
    ``root`` and the scans run over ``ranges``; and per ``concat``/``subset``
    along a domain dimension, what it is asked for and its pieces' intervals."""
    asked: dict[ir.Call, Range] = {}
    seen: set[tuple[int, tuple]] = set()
    lets: dict[str, Needs] = {}     # what a let's body asks of its parameters
    # per concat (and subset) along a domain dimension: what it is asked for
    # and its pieces' intervals
    cuts: dict[int, tuple[str, Range, list[Range]]] = {}

    def note(node: ir.Call, D: str, r: Range, pieces: list[Range]) -> None:
        old = cuts.get(id(node))
        cuts[id(node)] = (D, r if old is None else _union(old[1], r), pieces)

    def visit(node: ir.Expr, needs: Needs, scope: Scope) -> None:
        if isinstance(node, ir.Sym):
            if node.name in lets:
                lets[node.name] = {a: _union(lets[node.name][a], r) if a in lets[node.name]
                                   else r for a, r in needs.items()}
            return
        key = (id(node), tuple(sorted(needs.items(), key=lambda kv: kv[0])))
        if key in seen or not isinstance(node, ir.Call):
            return
        seen.add(key)
        if isinstance(node.func, ir.Lambda):
            params = [p.name for p in node.func.params]
            for p in params:
                lets.setdefault(p, {})
            inner_scope = scope.child({p.name: Binding(p.name, "lambda", p.type)
                                       for p in node.func.params})
            visit(node.func.body, needs, inner_scope)
            for p, x in zip(params, node.args):
                if lets[p]:
                    visit(x, dict(lets[p]), scope)
            return
        name = ir.builtin_name(node)
        info = scans.get(node) if name == "scan" else None
        if info is not None:
            r = needs.get(info.axis)
            asked[node] = _union(asked[node], r) if node in asked else r
            inner = dict(needs)
            inner[info.axis] = ranges.get(node, root.get(info.axis))
            for x in node.args:
                visit(x, inner, scope)
            return
        head = node.func
        if isinstance(head, ir.Call) and isinstance(head.func, ir.Sym) and \
                name in ("shift", "cartesian_shift", "offset_shift"):
            for x in head.args:       # a data-dependent offset is read where x is
                if not isinstance(x, ir.Sym) and not isinstance(x, ir.Literal):
                    visit(x, needs, scope)
            visit(node.args[0], _shift_head(head, needs), scope)
            return
        if name == "subset" and isinstance(node.func, ir.Sym):
            inner = dict(needs)
            for d in node.args[1:]:
                if isinstance(d, ir.DimInterval) and d.name in inner:
                    lo, hi = _runtime(d.start, runtime), _runtime(d.stop, runtime)
                    note(node, d.name, inner[d.name], [(lo, hi)])
                    inner[d.name] = _intersect(inner[d.name], lo, hi)
            visit(node.args[0], inner, scope)
            return
        if name == "concat" and isinstance(node.func, ir.Sym) and node.args and \
                isinstance(node.args[0], ir.Sym) and node.args[0].name in needs:
            D = node.args[0].name
            bounds: list[Range] = []
            for piece in node.args[1:]:
                inner = dict(needs)
                t = type_of(piece, scope)
                pd = t.dim(D) if t is not None else None
                if pd is None:
                    bounds.append(None)
                else:
                    lo, hi = _runtime(pd.start, runtime), _runtime(pd.stop, runtime)
                    inner[D] = _intersect(inner[D], lo, hi)
                    bounds.append((lo, hi))
                visit(piece, inner, scope)
            note(node, D, needs[D], bounds)
            return
        if name == "scan" and isinstance(head, ir.Call):
            static = ir.head_args(node)
            axis = static[3].name if len(static) > 3 and isinstance(static[3], ir.Sym) \
                else None
            inner = dict(needs)
            if axis is None:
                inner = dict.fromkeys(needs)
            elif axis in inner:        # a scan over its operands' whole interval
                inner[axis] = None
            for x in node.args:
                visit(x, inner, scope)
            return
        if isinstance(head, ir.Call):
            visit(head, needs, scope)
        for x in node.args:
            visit(x, needs, scope)

    for v, r in zip(values, roots):
        visit(v, r, scope)
    return asked, cuts


def _fit(r: Range, info: DomainScan, domain: Range, runtime: set[str]) -> Range:
    """The range a scan runs over: ``r`` clipped to its operands' interval where
    it reaches beyond the domain's range (a scan asked for no more than the
    domain keeps the domain's bounds, as written)."""
    start, stop = _runtime(info.start, runtime), _runtime(info.stop, runtime)
    if r is None:
        return start, stop
    lo, hi = r
    # (and where the order with the operands' bounds is unknown: a literal stop
    # [2, 3) over operands [0, N_K) runs over [2, Min(3, N_K)), which meets
    # those operands' [0, N_K) at a known bound)
    if domain is None or iv.maybe_le(domain[0], lo) is not True or \
            iv.maybe_le(start, lo) is None:
        lo = _max(lo, start)
    if domain is None or iv.maybe_le(hi, domain[1]) is not True or \
            iv.maybe_le(hi, stop) is None:
        hi = _min(hi, stop)
    if iv.maybe_le(hi, lo) is True:
        # asked for nothing (a concat_where piece nested in another one's piece,
        # outside it): an empty range, taken by empty subsets wherever they lie
        lo = hi
    return lo, hi


def _clamp(b: sympy.Expr, r: tuple[sympy.Expr, sympy.Expr]) -> sympy.Expr:
    return _min(_max(b, r[0]), r[1])


def _cut(node: ir.Call, args: tuple[ir.Expr, ...], cut: tuple[str, Range, list[Range]]
         ) -> tuple[ir.Expr, ...] | None:
    """The arguments of a ``concat`` (or ``subset``) along ``D`` whose pieces
    shrank with their scans: every piece cut to the part of its interval that the
    node is asked for (``[clamp(b_i), clamp(b_{i+1}))``, so the pieces stay
    contiguous).  None where that cannot be done."""
    D, r, bounds = cut
    if r is None or any(b is None for b in bounds):
        return None
    loc = node.loc
    if ir.builtin_name(node) == "subset":
        lo, hi = bounds[0]  # type: ignore[misc]
        return tuple(interval(D, _clamp(lo, r), _clamp(hi, r), a.loc)
                     if isinstance(a, ir.DimInterval) and a.name == D else a for a in args)
    out: list[ir.Expr] = [args[0]]
    for piece, b in zip(args[1:], bounds):
        assert b is not None
        if isinstance(piece, ir.Call) and ir.builtin_name(piece) == "subset" and \
                isinstance(piece.func, ir.Sym) and len(piece.args) == 2 and \
                isinstance(piece.args[1], ir.DimInterval) and piece.args[1].name == D:
            piece = piece.args[0]
        out.append(ir.Call(ir.Sym("subset", loc=loc),
                           (piece, interval(D, _clamp(b[0], r), _clamp(b[1], r), loc)),
                           loc=loc))
    return tuple(out)


def _mentions(node: ir.Expr, names: frozenset[str]) -> bool:
    return any(isinstance(n, ir.Sym) and n.name in names for n in ir.walk(node))


def _rewrite(node: ir.Expr, scans: dict[ir.Call, DomainScan], ranges: dict[ir.Call, Range],
             cuts: dict[int, tuple[str, Range, list[Range]]], scope: Scope,
             type_of: Callable[[ir.Expr, Scope], ir.TensorType | None],
             memo: dict[int, ir.Expr], narrowed: frozenset[str] = frozenset()) -> ir.Expr:
    """``node`` with its scans restricted to ``ranges`` and the ``concat``s and
    subsets whose pieces read them cut (:func:`_cut`); ``narrowed``: the let
    parameters bound to a restricted scan, whose readers are cut too though
    they are otherwise unchanged (``w = scan(…); concat_where(…, w(K - 1), …)``)."""
    if not isinstance(node, ir.Call):
        return node
    if id(node) in memo:
        return memo[id(node)]
    args = tuple(_rewrite(a, scans, ranges, cuts, scope, type_of, memo, narrowed)
                 for a in node.args)
    lam = node.func
    if isinstance(lam, ir.Lambda):      # a let: its parameters take the arguments' types
        params = []         # (also an argument unchanged but reading a narrowed let)
        for p, a, old in zip(lam.params, args, node.args):
            t = type_of(a, scope) if a is not old or _mentions(a, narrowed) else None
            params.append(p if t is None else replace(p, type=strip_masks(t)))
        inner = scope.child({p.name: Binding(p.name, "lambda", p.type) for p in params})
        inner_narrowed = (narrowed - {q.name for q in lam.params}) | {
            q.name for p, q in zip(params, lam.params) if p is not q}
        body = _rewrite(lam.body, scans, ranges, cuts, inner, type_of, memo,
                        frozenset(inner_narrowed))
        func: ir.Expr = lam if body is lam.body and all(
            p is q for p, q in zip(params, lam.params)) else \
            replace(lam, params=tuple(params), body=body)
    else:
        func = _rewrite(lam, scans, ranges, cuts, scope, type_of, memo, narrowed)
    changed = func is not node.func or any(a is not b for a, b in zip(args, node.args)) or \
        (id(node) in cuts and bool(narrowed) and _mentions(node, narrowed))
    if changed and id(node) in cuts:
        args = _cut(node, args, cuts[id(node)]) or args
    info = scans.get(node) if ir.builtin_name(node) == "scan" else None
    r = ranges.get(node) if info is not None else None
    if info is not None and r is not None:
        loc = node.loc
        iv_ = interval(info.axis, r[0], r[1], loc)
        args = tuple(ir.Call(ir.Sym("subset", loc=loc), (a, iv_), loc=loc) if has else a
                     for a, has in zip(args, info.has_axis))
    out = node if func is node.func and all(a is b for a, b in zip(args, node.args)) \
        else ir.Call(func, args, loc=node.loc)
    memo[id(node)] = out
    return out


# ``concat_where`` pieces outside the domain

#: Builtins whose value at a point is made of their operands' values at that
#: point: they ask their operands for what they are asked for.
_POINTWISE = frozenset(ir.ARITHMETIC + ir.COMPARISONS + ir.LOGICAL + ir.MATH_FUNCTIONS
                       + ir.PREDICATES + ("cast", "if", "make_tuple", "tuple_get"))


@dataclass(frozen=True)
class ConcatPieces:
    """A ``concat`` made by a ``concat_where`` along ``axis``, a dimension of the
    ``domain=`` being translated, and its pieces' intervals along it."""

    node: ir.Call
    axis: str
    bounds: tuple[tuple[sympy.Expr, sympy.Expr], ...]


def trim_pieces(value: ir.Expr, domain: dict[str, ir.DimInterval],
                concats: dict[int, ConcatPieces], runtime: set[str]) -> ir.Expr:
    """``value`` (written on ``domain``) with the pieces of the ``concat``s of
    ``concats`` that lie wholly outside the levels their readers need left out
    (GT4Py computes the value on the domain only): under ``domain={KHalf: (0,
    7)}``, ``concat_where(KHalf == 6, a, b)`` with ``b`` on ``KHalf[1:N]`` has a
    piece ``KHalf[7:N]`` that would need ``7 <= N``, and nothing reads it.

    The levels asked for follow the value's structure, conservatively: the
    target asks for the domain's range, a pointwise operation asks its operands
    for the same, a shift ``x(K + 1)`` asks ``x`` for the levels one above, a
    ``subset`` its operand for the whole subset, a let's body for what the let
    is asked for.  A ``concat`` is left whole where its levels are asked for
    by anything else (a let's argument, a scan, a reduction, a shift through a
    table or by a data-dependent offset): a piece read there keeps what that
    read needs.  Only a piece at an end that its reader may shrink is left out
    (the first or last piece of a ``concat``, whose inner boundaries stay)."""
    if not concats:
        return value
    needs: Needs = {a: (_runtime(x.start, runtime), _runtime(x.stop, runtime))
                    for a, x in domain.items()}

    def outside(lo: sympy.Expr, hi: sympy.Expr, r: Range) -> bool:
        return r is not None and (iv.maybe_le(hi, r[0]) is True or
                                  iv.maybe_le(r[1], lo) is True)

    def rewrite(node: ir.Expr, needs: Needs, free_lo: bool, free_hi: bool) -> ir.Expr:
        if not isinstance(node, ir.Call):
            return node
        info = concats.get(id(node))
        if info is not None and info.node is node:
            r = needs.get(info.axis)
            bounds = [(_runtime(lo, runtime), _runtime(hi, runtime)) for lo, hi in info.bounds]
            pieces = list(node.args[1:])
            first, last = 0, len(pieces)
            while free_lo and first < last - 1 and outside(*bounds[first], r):
                first += 1
            while free_hi and last - 1 > first and outside(*bounds[last - 1], r):
                last -= 1
            kept = []
            for k in range(first, last):
                inner = dict(needs)
                inner[info.axis] = _intersect(r, *bounds[k])
                kept.append(rewrite(pieces[k], inner, free_lo and k == first,
                                    free_hi and k == last - 1))
            if len(kept) == 1:
                return kept[0]
            if len(kept) == len(pieces) and all(a is b for a, b in zip(kept, pieces)):
                return node
            return ir.Call(node.func, (node.args[0],) + tuple(kept), loc=node.loc)
        func = node.func
        if isinstance(func, ir.Lambda):       # a let: its body is the value
            body = rewrite(func.body, needs, free_lo, free_hi)
            return node if body is func.body else \
                ir.Call(replace(func, body=body), node.args, loc=node.loc)
        name = ir.builtin_name(node)
        if isinstance(func, ir.Sym) and name in _POINTWISE:
            args = tuple(rewrite(a, needs, free_lo, free_hi) for a in node.args)
        elif isinstance(func, ir.Sym) and name == "subset" and node.args:
            inner = dict(needs)
            for d in node.args[1:]:
                if isinstance(d, ir.DimInterval) and d.name in inner:
                    inner[d.name] = (_runtime(d.start, runtime), _runtime(d.stop, runtime))
            # (the operand must cover the subset, and may reach beyond it)
            args = (rewrite(node.args[0], inner, True, True),) + node.args[1:]
        elif isinstance(func, ir.Call) and isinstance(func.func, ir.Sym) and \
                name in ("shift", "cartesian_shift", "offset_shift") and \
                len(node.args) == 1 and _cartesian(func, needs):
            args = (rewrite(node.args[0], _shift_head(func, needs), free_lo, free_hi),)
        else:
            return node
        if all(a is b for a, b in zip(args, node.args)):
            return node
        return ir.Call(func, args, loc=node.loc)

    with ir.recursion_room():
        return rewrite(value, needs, True, True)


def _cartesian(head: ir.Call, needs: Needs) -> bool:
    """A shift head of whole offsets along dimensions of the domain only
    (``⟪K, 1⟫``): a table's (``⟪E2C, 0⟫``) or a dimension's outside the domain
    asks for levels this analysis does not follow."""
    items = head.args
    if len(items) % 2:
        return False
    return all(isinstance(d, ir.Sym) and d.name in needs and isinstance(c, ir.Literal)
               and c.kind == "int" for d, c in zip(items[::2], items[1::2]))
