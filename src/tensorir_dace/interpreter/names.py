"""Builtin names as the interpreter dispatches on them.

Shared by the evaluator and its shift and presence methods: the canonical
name of a builtin (cached, since every call node asks), the head of a curried
call, and the builtins that are applied element by element.
"""

from __future__ import annotations

from .. import ir

__all__ = ["ELEMENTWISE", "call_head", "canonical_name"]

ELEMENTWISE = frozenset(ir.ARITHMETIC + ir.COMPARISONS + ir.LOGICAL + ir.MATH_FUNCTIONS
                        + ir.PREDICATES)


_CANONICAL: dict[str, str | None] = {}


def canonical_name(name: str) -> str | None:
    """``ir.canonical_builtin(name)``, cached."""
    try:
        return _CANONICAL[name]
    except KeyError:
        c = _CANONICAL[name] = ir.canonical_builtin(name)
        return c


def call_head(e: ir.Expr) -> ir.Expr:
    """The function at the bottom of a curried call ``f(a)(b)…``."""
    while isinstance(e, ir.Call):
        e = e.func
    return e
