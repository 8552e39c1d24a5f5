"""Interval algebra on SymPy bounds, under "size symbols are non-negative integers".

Comparisons that SymPy cannot decide are not guessed: they raise
:class:`Undecidable`, which the type checker turns into an error naming both
bounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ir
from .lazy import lazy_module

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


class Undecidable(Exception):
    """SymPy cannot order two bounds for all non-negative sizes."""

    def __init__(self, a: sympy.Expr, b: sympy.Expr):
        super().__init__(a, b)
        self.a, self.b = a, b

    def __str__(self) -> str:   # written when shown: most are caught (maybe_le)
        return f"cannot decide whether {self.a} <= {self.b} for all sizes"


#: Decided comparisons, by their bounds: a program's types compare the same
#: bounds again and again (every broadcast and shift of a large program), and
#: SymPy's sign rules take most of a large program's type check.
_DECIDED: dict[tuple[sympy.Expr, sympy.Expr], bool | None] = {}
_DECIDED_MAX = 1 << 16


def le(a: sympy.Expr, b: sympy.Expr) -> bool:
    """``a <= b`` for all sizes; raises Undecidable when it depends on them."""
    key = (a, b)
    decided = _DECIDED.get(key, _UNKNOWN)
    if decided is _UNKNOWN:
        decided = _decide_le(a, b)
        if len(_DECIDED) >= _DECIDED_MAX:
            _DECIDED.clear()
        _DECIDED[key] = decided
    if decided is None:
        raise Undecidable(a, b)
    return bool(decided)


_UNKNOWN = object()


def _decide_le(a: sympy.Expr, b: sympy.Expr) -> bool | None:
    """``a <= b`` for all sizes, None when it depends on them."""
    diff = sympy.expand(b - a)
    if diff.is_nonnegative:
        return True
    if diff.is_negative:
        return False
    return _le_through_extrema(a, b)


def _le_through_extrema(a: sympy.Expr, b: sympy.Expr) -> bool | None:
    """``a <= b`` decided through a ``Max``/``Min`` on either side, which SymPy's
    sign rules cannot see through: ``N <= Max(1, N)`` holds, so the clamped piece
    ``[Max(1, N), N)`` is empty for all sizes.  None when still undecidable."""
    if isinstance(b, sympy.Max) and any(maybe_le(a, x) for x in b.args):
        return True
    if isinstance(a, sympy.Min) and any(maybe_le(x, b) for x in a.args):
        return True
    if isinstance(a, sympy.Max) and all(maybe_le(x, b) for x in a.args):
        return True
    if isinstance(b, sympy.Min) and all(maybe_le(a, x) for x in b.args):
        return True
    spread = _distributed(a)
    if spread is not None and maybe_le(spread, b):
        return True
    return _le_moving_offsets(a, b)


def _distributed(a: sympy.Expr) -> sympy.Expr | None:
    """``Min(x, Max(y, z))`` as ``Max(Min(x, y), Min(x, z))`` (a ``Min`` over one
    ``Max``), whose pieces the rules above compare one by one: a bound clamped
    twice, ``Min(N, Max(0, k1, k0))`` against ``Min(N, Max(0, k0, Min(N, k1)))``.
    None for other shapes."""
    if not isinstance(a, sympy.Min):
        return None
    inner = [x for x in a.args if isinstance(x, sympy.Max)]
    if len(inner) != 1:
        return None
    rest = [x for x in a.args if x is not inner[0]]
    # unevaluated: SymPy would fold the pieces back into the Min
    return sympy.Max(*(sympy.Min(*rest, y, evaluate=False) for y in inner[0].args),
                     evaluate=False)


def _le_moving_offsets(a: sympy.Expr, b: sympy.Expr) -> bool | None:
    """``Min(5, N + 1) - 1 <= N`` as ``Min(5, N + 1) <= N + 1``: a ``Max``/``Min``
    with an offset beside it is compared alone, the offset moved to the other
    side (one without ``Max``/``Min`` of its own, so the moves end).  None when
    neither side is such a sum."""
    for side, other, flip in ((a, b, False), (b, a, True)):
        if not isinstance(side, sympy.Add) or other.has(sympy.Max, sympy.Min):
            continue
        extrema = [t for t in side.args if isinstance(t, (sympy.Max, sympy.Min))]
        if len(extrema) != 1:
            continue
        rest = side - extrema[0]
        moved = sympy.expand(other - rest)
        return maybe_le(moved, extrema[0]) if flip else maybe_le(extrema[0], moved)
    return None


def maybe_le(a: sympy.Expr, b: sympy.Expr) -> bool | None:
    """Like :func:`le` but returns None when undecidable."""
    try:
        return le(a, b)
    except Undecidable:
        return None


def equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    return sympy.expand(a - b) == 0


def smax(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return b if le(a, b) else a


def smin(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return a if le(a, b) else b


def runtime_max(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``Max(a, b)``; left symbolic when a runtime bound makes it undecidable."""
    ok = maybe_le(a, b)
    if ok is None and maybe_le(b, a):       # N <= Max(3, N), undecidable one way only
        return a
    if ok is None and (ir.has_runtime(a) or ir.has_runtime(b) or _clipped(a, b)):
        return sympy.Max(a, b)
    return smax(a, b)


def runtime_min(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    ok = maybe_le(a, b)
    if ok is None and maybe_le(b, a):       # Min(3, N) <= N, undecidable one way only
        return b
    if ok is None and (ir.has_runtime(a) or ir.has_runtime(b) or _clipped(a, b)):
        return sympy.Min(a, b)
    return smin(a, b)


def _clipped(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether ``a`` or ``b`` is clipped already (a ``Min``/``Max``, as a scan's
    range under a literal level stop is: ``[2, Min(3, N_K))``): their extremum
    stays symbolic, as one of a runtime bound does."""
    return any(x.has(sympy.Min, sympy.Max) for x in (a, b))


def _over_one_size(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Bounds over one size symbol at most, whose order depends on its value
    (``4`` and ``N_K``, ``Max(4, Min(5, N_K) - 1)`` and ``N_K``): a literal
    domain's level range against a whole column."""
    return len(a.free_symbols | b.free_symbols) == 1


def _clamped_max(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if maybe_le(a, b) is None and maybe_le(b, a) is None and _over_one_size(a, b):
        return sympy.Max(a, b)
    return runtime_max(a, b)


def _clamped_min(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if maybe_le(a, b) is None and maybe_le(b, a) is None and _over_one_size(a, b):
        return sympy.Min(a, b)
    return runtime_min(a, b)


def intersect(a: ir.Dim, b: ir.Dim) -> ir.Dim:
    """The intersection of two intervals of the same dimension (keeps a's mask).

    Size-symbol orders SymPy cannot decide raise :class:`Undecidable`; with a
    runtime bound, or a literal bound against one of sizes (a literal domain's
    ``K[1:4]`` against a column's ``K[0:N_K]``), the result keeps a symbolic
    ``Max``/``Min``."""
    return a.with_interval(_clamped_max(a.start, b.start), _clamped_min(a.stop, b.stop))


def covers(outer: ir.Dim, inner: ir.Dim) -> bool:
    """``inner``'s interval lies within ``outer``'s for all sizes."""
    return le(outer.start, inner.start) and le(inner.stop, outer.stop)


def is_empty(d: ir.Dim) -> bool:
    """Provably empty for all sizes (undecidable counts as not empty)."""
    return maybe_le(d.stop, d.start) is True


def shifted(d: ir.Dim, offset: int) -> ir.Dim:
    """The interval of ``x`` after ``⟪D, offset⟫``: result[p] = x[p + offset]."""
    return d.with_interval(d.start - offset, d.stop - offset)


def evaluate(bound: sympy.Expr, symbols: dict[str, int]) -> int:
    """A bound's integer value for concrete sizes (and runtime bound values)."""
    if bound.is_Integer:
        return int(bound)
    # All the symbols at once (``xreplace``), so that only numbers meet in each
    # Min/Max: ``subs`` replaces one symbol after another and SymPy simplifies
    # the partly numeric Min/Max in between, which it can get wrong
    # (``Max(0, Min(1, Max(a, Min(Max(6, Min(7, n + 1)), Max(b, c)))))`` gives 0).
    value = bound.xreplace({s: sympy.Integer(symbols[s.name]) for s in bound.free_symbols})
    return int(value)
