"""Solving size symbols from array shapes: the plan behind argument binding.

Every dimension of every tensor parameter gives one equation
``extent(symbols) == shape[axis]``.  SymPy turns these equations, once per
parameter list, into a plan of small compiled Python functions (which symbol
to solve from which equation, and which equations to check afterwards), so
that :class:`~tensorir_dace.arguments.ArgumentBinder` binds a call with plain
Python arithmetic.  Kept apart from the binder because it is the only part
that reasons about symbolic extents.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import ir
from .lazy import lazy_module

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

__all__ = ["Equation", "Plan", "Solve", "as_int", "build_plan", "compile_expr", "make_solve"]


def compile_expr(expr: sympy.Expr, args: Sequence[str]) -> Callable[..., Any]:
    """A fast Python function of the named symbols (positional, in order)."""
    syms = [sympy.Symbol(a) for a in args]
    # Replace the (assumption-carrying) size symbols by plain ones of the same name.
    expr = expr.xreplace({s: sympy.Symbol(s.name) for s in expr.free_symbols})
    return sympy.lambdify(syms, expr, modules=["math"])


def as_int(x: Any) -> int | None:
    """``x`` as an exact int, or None if it is not an integer value."""
    if type(x) is int:
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    try:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        r = int(x)
        return r if r == x else None
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass
class Equation:
    """``extent(symbols) == shape[axis]`` for one dimension of one parameter."""

    param: str
    axis: int
    dim: ir.Dim
    extent: sympy.Expr
    names: tuple[str, ...]          # symbol names in extent, sorted
    fn: Callable[..., Any]          # extent from symbol values (in ``names`` order)


@dataclass
class Solve:
    """Determine ``symbol`` from one equation, all its other symbols known."""

    eq: Equation
    symbol: str
    known: tuple[str, ...]
    linear: bool
    coeff: Callable[..., Any] | None = None     # linear: extent = coeff*symbol + rest
    rest: Callable[..., Any] | None = None
    solutions: tuple[Callable[..., Any], ...] = ()  # non-linear: candidates f(S, known…)


@dataclass
class Plan:
    """The solves, in order, for one set of explicitly given symbols."""

    solves: list[Solve]
    undetermined: tuple[str, ...]   # symbols still unknown after all solves
    verify: list[Equation]          # equations not already implied by an exact solve


def build_plan(equations: list[Equation], all_symbols: Sequence[str],
               explicit: frozenset[str]) -> Plan:
    """Solve symbols one equation at a time, each with one unknown left, until none is left."""
    known = set(explicit)
    solves: list[Solve] = []
    used: set[int] = set()
    progress = True
    while progress:
        progress = False
        for i, eq in enumerate(equations):
            if i in used:
                continue
            unknown = [n for n in eq.names if n not in known]
            if len(unknown) != 1:
                continue
            solve = make_solve(eq, unknown[0])
            if solve is None:
                continue
            used.add(i)
            solves.append(solve)
            known.add(unknown[0])
            progress = True
    # A linear solve is exact integer arithmetic (checked at call time), so its
    # equation holds by construction; every other equation is checked.
    exact = {id(s.eq) for s in solves if s.linear}
    verify = [eq for eq in equations if id(eq) not in exact]
    return Plan(solves, tuple(s for s in all_symbols if s not in known), verify)


def make_solve(eq: Equation, name: str) -> Solve | None:
    """How to get ``name`` from ``eq`` (linear: exact integer arithmetic), or None."""
    sym = next(s for s in eq.extent.free_symbols if s.name == name)
    others = tuple(n for n in eq.names if n != name)
    coeff = sympy.expand(sympy.diff(eq.extent, sym))
    if sym not in coeff.free_symbols and not coeff.has(sympy.Piecewise, sympy.Max, sympy.Min,
                                                       sympy.floor, sympy.ceiling):
        rest = sympy.expand(eq.extent - coeff * sym)
        if sym not in rest.free_symbols and coeff != 0:
            return Solve(eq, name, others, True, coeff=compile_expr(coeff, others),
                         rest=compile_expr(rest, others))
    s_obs = sympy.Symbol("__shape__", integer=True, nonnegative=True)
    try:
        sols = sympy.solve(sympy.Eq(eq.extent, s_obs), sym)
    except Exception:  # noqa: BLE001 - unsolvable: the size is then checked, not solved
        return None
    sols = [x for x in sols if x.is_negative is not True]
    if not sols:
        return None
    return Solve(eq, name, others, False,
                 solutions=tuple(compile_expr(x, ("__shape__",) + others) for x in sols))
