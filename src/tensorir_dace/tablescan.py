"""Neighbour-table scans, cached per buffer (NumPy only, no SymPy).

A table parameter's non-negative entries must index the operand a shift
reads through it.  Checking that needs the table's maximum and, where an
operand interval starts above zero, its smallest non-negative entry: a scan
of the whole table, done only when its buffer (data pointer, shape,
strides, dtype, owning array) is new.  The results are shared by the call
checks of the interpreter and the DaCe-loaded runtime and by the cached
programs called through their call plan, so a table is scanned once per
process whichever path calls with it.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

__all__ = ["first_bad_entry", "table_stats"]


class TableStats:
    """What a scan found: the largest entry and the smallest non-negative one."""

    __slots__ = ("max", "min_nonneg", "owner")

    def __init__(self, owner: Any, mx: int | None):
        self.owner = owner          # weak reference to the array owning the buffer
        self.max = mx               # None: empty table
        self.min_nonneg: int | None = None


STATS: dict[tuple, TableStats] = {}
_STATS_LIMIT = 256


def _owner(a: np.ndarray) -> Any:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def stats_key(t: Any, pointer: int) -> tuple:
    return (pointer, t.shape, t.strides, t.dtype.num)


def table_stats(t: Any, pointer: int) -> TableStats:
    """Scan results of table ``t`` (starting at ``pointer``), cached per buffer."""
    key = stats_key(t, pointer)
    st = STATS.get(key)
    owner = _owner(t)
    if st is not None and (st.owner is None or st.owner() is owner):
        return st
    try:
        ref = weakref.ref(owner)
    except TypeError:
        ref = None
    st = TableStats(ref, int(t.max()) if t.size else None)
    if len(STATS) >= _STATS_LIMIT:
        STATS.clear()
    STATS[key] = st
    return st


def min_nonnegative(t: Any, st: TableStats) -> int | None:
    if st.min_nonneg is None and st.max is not None and st.max >= 0:
        st.min_nonneg = int(t[t >= 0].min())
    return st.min_nonneg


def first_bad_entry(t: np.ndarray, pointer: int, lo: int, hi: int) -> tuple[int, ...] | None:
    """The index of the first entry of table ``t`` outside ``[max(lo, 0), hi)``
    and not negative, or ``None``: every entry names an element of an operand
    over ``[lo, hi)`` or is "no neighbour".  The cached scan decides; only
    when it says no is the table searched (and a stale scan replaced)."""
    st = table_stats(t, pointer)
    if st.max is None or st.max < 0:
        return None                 # empty, or no neighbour anywhere
    if st.max < hi and (lo <= 0 or (min_nonnegative(t, st) or 0) >= lo):
        return None
    bad = (t >= hi) | ((t >= 0) & (t < lo))
    if not bad.any():               # the cached scan is stale: scan again
        STATS.pop(stats_key(t, pointer), None)
        table_stats(t, pointer)
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), t.shape))

