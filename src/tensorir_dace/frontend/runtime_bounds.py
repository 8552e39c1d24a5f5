"""Runtime bounds in the Python front end: ``int`` parameters and loop variables as
interval bounds (``out[hs:he] = …``, ``domain={K: (vs, ve)}``,
``concat_where(K == nlev, a, b)``).

The translator's values for such bounds are IR expressions; here they become
SymPy bounds over runtime symbols (:func:`~tensorir_dace.ir.runtime_symbol`),
which the type checker turns into call-time checks.  ``concat_where`` on a
condition with runtime bounds becomes a ``concat`` whose pieces are clamped to
the target's interval with ``Max``/``Min``, so a condition outside it makes
empty pieces, and each branch stays lazy (evaluated on its own piece only).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals as iv
from .. import ir
from ..lazy import lazy_module
from ..typing.runtime import bound_of
from ..typing.scope import Scope
from .dims import DimMask

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


def runtime_value(v: Any, scope: Scope) -> sympy.Expr | None:
    """``v`` as an interval bound (an int, a size expression, or an IR expression
    of int parameters, loop variables, sizes and literals), or None."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return sympy.Integer(int(v))
    if isinstance(v, sympy.Expr):
        return v
    if isinstance(v, ir.Expr):
        return bound_of(v, scope)
    return None


def interval(name: str, lo: sympy.Expr, hi: sympy.Expr, loc: Any) -> ir.DimInterval:
    """``name[lo:hi]`` with bounds spelled as the parser would read them back."""
    return ir.DimInterval(name, ir.text_bound(lo), ir.text_bound(hi), loc=loc)


def _clamp(x: sympy.Expr, lo: sympy.Expr, hi: sympy.Expr) -> sympy.Expr:
    return _lower(_upper(x, lo), hi)


def _decided(a: sympy.Expr, b: sympy.Expr, larger: bool) -> sympy.Expr:
    """The larger (or smaller) of ``a`` and ``b`` where their order is decided,
    SymPy's ``Max`` (``Min``) only where it is not.  SymPy folds some ``Max`` of
    nested ``Min``/``Max`` wrongly: ``Max(Max(0, Min(1, s)), Min(Max(0, Min(1,
    s)), Max(7, t), N))`` comes back as one of its arguments, which is smaller
    than the other for ``s = 0``, ``N = 7``; the piece between them would be
    lost."""
    if iv.maybe_le(b, a) is True:
        return a if larger else b
    if iv.maybe_le(a, b) is True:
        return b if larger else a
    return sympy.Max(a, b) if larger else sympy.Min(a, b)


def _upper(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``Max(a, b)``, decided where it can be (see :func:`_decided`)."""
    return _decided(a, b, larger=True)


def _lower(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``Min(a, b)``, decided where it can be (see :func:`_decided`)."""
    return _decided(a, b, larger=False)


def runtime_pieces(segments, lo: sympy.Expr, hi: sympy.Expr) -> list[tuple]:
    """``(start, stop, branch)`` pieces covering ``[lo, hi)`` in order: branch ``a``
    on the (clamped) segments, ``b`` in between.  Every boundary is the maximum of
    the one before, so the pieces never overlap; a segment outside the interval
    or an inverted one gives empty pieces.  Pieces empty for all values (the
    one after a segment open to +∞) are left out."""
    cursor, out = lo, []
    for s_lo, s_hi in segments:
        a_lo = _upper(cursor, _clamp(s_lo, lo, hi))
        a_hi = _upper(a_lo, _clamp(s_hi, lo, hi))
        out += [(cursor, a_lo, "b"), (a_lo, a_hi, "a")]
        cursor = a_hi
    out.append((cursor, hi, "b"))
    return [p for p in out if iv.maybe_le(p[1], p[0]) is not True]


def runtime_concat_where(tr: Any, mask: DimMask, a: Any, b: Any, node: Any,
                         target: tuple[sympy.Expr, sympy.Expr] | None) -> ir.Expr:
    """``concat_where`` on a runtime condition, as a ``concat`` over the hull of the
    branches' intervals; within the statement target's interval ``target`` where a
    branch lacks the dimension or the hull has runtime bounds."""
    loc = tr.loc(node)
    D = mask.dim.name
    xs = {"a": tr.to_ir(a, node), "b": tr.to_ir(b, node)}
    doms = {k: tr.type_of(x, node).dim(D) for k, x in xs.items()}
    known = [d for d in doms.values() if d is not None]
    if not known and not tr.ctx.dim_intervals(D) and D not in tr.ctx.result_dims and \
            D not in tr.ctx.extent:
        # nothing gives D's extent: where neighbour tables index D, a parameter
        # added for it does (the value is read through them)
        tr.ctx.source_extent(D)
    # the whole of a direct call's out= along D (maybe longer than the parameters:
    # half levels written from full levels): where a branch defined everywhere
    # along D reaches
    whole = [_Interval(*tr.ctx.extent[D])] if D in tr.ctx.extent else []
    if None in doms.values():
        # a branch defined everywhere along D (a broadcast literal) fills the
        # program's intervals of D, as a static condition's does, and the target's
        known += tr.ctx.dim_intervals(D) + whole
    if not known and D in tr.ctx.result_dims:
        # ... or, in a direct call where no parameter has D, the declared
        # result's interval of D, which out= gives
        known = [tr.ctx.result_dims[D]]
    if not known:
        raise tr.error(node, no_extent_message(D))

    def hull():
        lo, hi = known[0].start, known[0].stop
        for d in known[1:]:
            # a branch may itself come from a runtime concat_where
            lo, hi = iv.runtime_min(lo, d.start), iv.runtime_max(hi, d.stop)
        if target is not None and None in doms.values() and \
                any(ir.has_runtime(b) for b in (lo, hi)) and \
                any(ir.has_runtime(b) for b in target):
            lo, hi = target     # ... and within a statement, its whole runtime target
        elif target is not None and not ir.has_runtime(lo) and not ir.has_runtime(hi):
            pass    # static branches keep their hull: the value may be read shifted past
            #         the target (a temporary's ``t(Koff[1])`` at the target's last level)
        elif target is not None:
            # (widened by the shifts of the value that follow in the statement:
            # ``t(Koff[1])`` at the target's last level reads one above it)
            tr.ctx.made_open(D)
            margin = tr.ctx.open_margin.get(D, 0)
            lo = _within(lo, target[0] - margin, iv.runtime_max)
            hi = _within(hi, target[1] + margin, iv.runtime_min)
        at_call = target is not None
        return _open_ends(mask.segments, doms, lo, hi, at_call)

    lo, hi = tr.ctx.decide(hull, loc, "concat_where")
    # a branch defined everywhere along D gets D over a static interval (add_dim's
    # bounds are sizes), the hull of the parameters' and of the pieces where it is
    # static (the other branch may reach past the parameters: ``x(Koff[-1])`` to
    # level N_K), cut to the pieces below
    of_d = (tr.ctx.dim_intervals(D) or
            ([tr.ctx.result_dims[D]] if D in tr.ctx.result_dims else [])) + whole
    wide = [d for d in of_d if not any(ir.has_runtime(b) for b in (d.start, d.stop))]
    starts = [d.start for d in wide] + ([lo] if wide and not ir.has_runtime(lo) else [])
    stops = [d.stop for d in wide] + ([hi] if wide and not ir.has_runtime(hi) else [])
    w_lo, w_hi = (lo, hi) if not wide else tr.ctx.decide(
        lambda: (functools.reduce(iv.smin, starts), functools.reduce(iv.smax, stops)),
        loc, "concat_where")
    pieces = runtime_pieces(mask.segments, lo, hi)
    # a branch without D chosen at an end of the condition is defined without end
    # there (see ProgramContext.open_margin)
    margin = tr.ctx.open_margin.get(D, 0)
    low, high = (bool(pieces) and doms[pieces[k][2]] is None for k in (0, -1))
    if low or high:
        tr.ctx.made_open(D)
    if margin and low:
        pieces[0] = (pieces[0][0] - margin,) + pieces[0][1:]
        w_lo -= margin
    if margin and high:
        pieces[-1] = (pieces[-1][0], pieces[-1][1] + margin, pieces[-1][2])
        w_hi += margin
    exprs = []
    for p_lo, p_hi, which in pieces:
        x = xs[which]
        if doms[which] is None:      # defined everywhere along D
            x = ir.Call(ir.Sym("add_dim", loc=loc), (ir.Sym(D, loc=loc), tr.bound_ir(w_lo, node),
                                                     tr.bound_ir(w_hi, node), x), loc=loc)
        exprs.append(ir.Call(ir.Sym("subset", loc=loc), (x, interval(D, p_lo, p_hi, loc)),
                             loc=loc))
    return ir.Call(ir.Sym("concat", loc=loc), (ir.Sym(D, loc=loc),) + tuple(exprs), loc=loc)


@dataclasses.dataclass(frozen=True)
class _Interval:
    """The bounds of an interval, as an ``ir.Dim``'s."""
    start: Any
    stop: Any


def _open_ends(segs, doms: dict, lo: sympy.Expr, hi: sympy.Expr, at_call: bool
               ) -> tuple[sympy.Expr, sympy.Expr]:
    """``[lo, hi)`` cut to where a runtime ``concat_where`` is defined at its ends.

    The branch chosen at an open end of the condition bounds the result there (as
    static conditions do: the result is defined where its pieces are), unless it
    has no point there: then the condition's edge and the other branch bound it (a
    top level chosen by ``K == 0`` beside a branch from level 1; a last level
    chosen by ``K == elev`` beside a branch ending one above).  That is decided
    when SymPy can; otherwise at call time under a target with runtime bounds
    (``at_call``), and conservatively, before anything runs, under a static one."""
    first, second = ("a", "b") if segs and segs[0][0] == -sympy.oo else ("b", "a")
    last, before = ("a", "b") if segs and segs[-1][1] == sympy.oo else ("b", "a")
    edge_lo = (segs[0][1] if first == "a" else segs[0][0]) if segs else sympy.oo
    edge_hi = (segs[-1][0] if last == "a" else segs[-1][1]) if segs else -sympy.oo
    if doms[first] is not None:
        start = doms[first].start
        if at_call or iv.maybe_le(edge_lo, start) is True:
            other = edge_lo if doms[second] is None else _order(
                iv.runtime_max, edge_lo, doms[second].start)
            start = _order(iv.runtime_min, start, other)
        lo = _within(start, lo, iv.runtime_max)
    if doms[last] is not None:
        stop = doms[last].stop
        if at_call or iv.maybe_le(stop, edge_hi) is True:
            other = edge_hi if doms[before] is None else _order(
                iv.runtime_min, edge_hi, doms[before].stop)
            stop = _order(iv.runtime_max, stop, other)
        hi = _within(stop, hi, iv.runtime_min)
    return lo, hi


def _order(pick, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``pick(a, b)`` (``iv.runtime_min``/``runtime_max``), left symbolic where the
    order of two size expressions depends on the sizes."""
    try:
        return pick(a, b)
    except iv.Undecidable:
        return (sympy.Min if pick is iv.runtime_min else sympy.Max)(a, b)


def _within(bound: sympy.Expr, other: sympy.Expr, pick) -> sympy.Expr:
    """``pick(bound, other)``; ``bound`` where their order depends on the sizes (a
    literal ``domain=`` bound such as ``K: (0, 6)`` beside a branch over
    ``K[0:N_K]``): the statement's target is checked against it."""
    try:
        return pick(bound, other)
    except iv.Undecidable:
        return bound


def domain_bounds(params: Sequence[ir.Param], domain: Sequence[str], loc: Any
                  ) -> tuple[dict[str, tuple[str, str]], list[ir.Param], list[ir.DimInterval]]:
    """The scalar parameters that carry ``domain=``'s bounds into a program: per
    dimension the names of its start and stop parameters (fresh names), the
    parameters, and the intervals ``D[start:stop]``."""
    taken = {p.name for p in params} | {s.name for p in params for d in p.type.dims
                                        for b in (d.start, d.stop) for s in b.free_symbols}
    names, scalars, intervals = {}, [], []
    for name in domain:
        lo, hi = _fresh(f"{name}_start", taken), _fresh(f"{name}_stop", taken)
        names[name] = (lo, hi)
        scalars += [ir.Param(n, ir.TensorType(ir.INT64), loc=loc) for n in (lo, hi)]
        intervals.append(interval(name, sympy.Symbol(lo), sympy.Symbol(hi), loc))
    return names, scalars, intervals


def no_extent_message(D: str) -> str:
    """The error of a ``concat_where`` on ``D`` between values without ``D`` where
    nothing gives ``D``'s extent (no parameter over ``D``, no neighbour table
    whose entries index ``D``)."""
    return (f"concat_where on {D}: neither branch has dimension {D}, and no parameter has it "
            f"to give its extent, nor does a neighbour table index it (GT4Py's broadcasts "
            f"have no end along {D}; a value here is computed over a known extent): pass a "
            f"field over {D} as an argument (the function need not read it), or broadcast a "
            f"field over {D} in a branch")


def out_stop(inputs: Sequence[ir.Param], name: str, longer: dict[str, int] | None = None
             ) -> sympy.Expr | None:
    """The stop of ``out=``'s dimension ``name`` in the program of a direct call
    (its start is 0): the size of the inputs over it, plus how much longer
    ``out`` is (``longer``); None where no input has it with static bounds."""
    known = [k for x in inputs if (k := x.type.dim(name)) is not None
             and not any(ir.has_runtime(b) for b in (k.start, k.stop))]
    syms = [s for k in known for s in k.stop.free_symbols]
    return syms[0] + (longer or {}).get(name, 0) if syms else None


def out_target(params: Sequence[ir.Param], names: Sequence[str], longer: dict[str, int]
               ) -> dict[str, tuple[sympy.Expr, sympy.Expr]]:
    """The whole interval of ``out=`` over the dimensions ``names`` of the value
    (those of them the inputs have), as a statement target: the target of a
    direct call without ``domain=`` into an ``out=`` longer than its inputs."""
    stops = {n: out_stop(params, n, longer) for n in names}
    return {n: (sympy.Integer(0), stop) for n, stop in stops.items() if stop is not None}


def into_program(prog: ir.Program, result: ir.Param, domain: tuple[str, ...],
                 bounds: dict[str, tuple[str, str]] | None = None,
                 longer: dict[str, int] | None = None
                 ) -> tuple[ir.Program, dict[str, tuple[str, str]]]:
    """The program of a ``@function`` called with ``out=`` (and ``domain=``): the
    value is written into ``out`` (element 0 is coordinate 0), on the runtime
    coordinates ``[start, stop)`` of the dimensions in ``domain`` and on the whole
    interval of the others.  Returns the program and, per dimension, the names of
    its two scalar bound parameters.  ``bounds`` names bound parameters that
    ``prog`` already has (its scans were translated for the domain); ``longer``:
    how much longer ``out`` is than the shortest input over a dimension (a
    half-level output of full-level inputs)."""
    inputs = tuple(p for p in prog.params if p.name != result.name)
    taken = {p.name for p in prog.params} | {s.name for p in prog.params
                                             for d in p.type.dims
                                             for b in (d.start, d.stop) for s in b.free_symbols}
    given = {s for p in inputs for d in p.type.dims for b in (d.start, d.stop)
             for s in b.free_symbols}
    dims = []
    for d in result.type.dims:
        stop = out_stop(inputs, d.name, longer)
        if stop is None:
            # a dimension only the result has: out= gives the size its value is
            # over (``K[0:N_K]``, or ``K[-1:N_K]`` where the value is shifted)
            own = {s for b in (d.start, d.stop) for s in b.free_symbols} - given
            if len(own) == 1 and not ir.has_runtime(d.start) and not ir.has_runtime(d.stop):
                stop = next(iter(own))
        if stop is None:
            stop = ir.size_symbol(_fresh(f"N_{result.name}_{d.name}", taken))
        dims.append(ir.Dim(d.name, 0, stop))
    out = ir.Param(result.name, ir.TensorType(result.type.dtype, tuple(dims)), loc=result.loc)
    if bounds is None:
        names, scalars, intervals = domain_bounds(prog.params, domain, result.loc)
    else:
        names, scalars = bounds, []
        intervals = [interval(n, sympy.Symbol(lo), sympy.Symbol(hi), result.loc)
                     for n, (lo, hi) in bounds.items()]
    (stmt,) = prog.body
    assert isinstance(stmt, ir.Assign)   # a function body is one assignment
    target: ir.Expr = ir.Sym(out.name, loc=stmt.loc)
    if intervals:
        target = ir.Call(ir.Sym("subset", loc=stmt.loc), (target,) + tuple(intervals),
                         loc=stmt.loc)
    body = (ir.Assign(target, stmt.value, loc=stmt.loc),)
    return ir.Program(prog.name, inputs + (out,) + tuple(scalars), prog.temporaries, body,
                      loc=prog.loc, constraints=prog.constraints), names


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name

