"""Arrays of any layout in compiled calls: memory extents and staging buffers.

Compiled kernels index every array as C-contiguous.  A NumPy array that is
not (Fortran order, a transpose, a step slice ``x[::2]``, negative strides,
a zero-stride broadcast view) or whose data is not aligned to its element
size is *staged*: the call runs on a C-contiguous copy, and for a written
parameter the copy is written back into the caller's array after the run.
A written array must hold each element once: one with a zero stride (or
strides that make two indices share an element) is refused, since which
value would land there is undefined.

The helpers here are plain NumPy, shared by the call checks (overlaps
between arguments of any layout, see :mod:`tensorir_dace.callchecks`) and
the compiled runtime's two call paths.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["extent", "needs_staging", "overlaps_itself", "replace_leaf", "shares_memory",
           "staged_copy"]


def needs_staging(a: Any) -> bool:
    """Whether ``a`` is a NumPy array a kernel cannot take by pointer (not
    C-contiguous, or not aligned)."""
    if not isinstance(a, np.ndarray):
        return False
    flags = a.flags
    return not (flags.c_contiguous and flags.aligned)


def extent(a: np.ndarray, pointer: int) -> tuple[int, int]:
    """The byte addresses ``[lo, hi)`` that array ``a`` (first element at
    ``pointer``) may touch; empty for an empty array."""
    if a.size == 0:
        return pointer, pointer
    lo = hi = pointer
    for n, s in zip(a.shape, a.strides):
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + a.itemsize


def overlaps_itself(a: np.ndarray) -> bool:
    """Whether two indices of ``a`` name the same element (a zero stride along
    an axis of several elements, or strides that interleave onto each other)."""
    axes = sorted((abs(s), n) for n, s in zip(a.shape, a.strides) if n > 1)
    if not axes or a.size == 0:
        return False
    span = a.itemsize
    for s, n in axes:            # each axis clears the block of the axes before it
        if s < span:
            break
        span += (n - 1) * s
    else:
        return False
    if axes[0][0] == 0:
        return True
    offsets = np.zeros(1, dtype=np.int64)   # rare layouts: compare every element's offset
    for s, n in axes:
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    return len(np.unique(offsets)) != len(offsets)


def shares_memory(a: Any, b: Any) -> bool:
    """Whether arrays ``a`` and ``b`` have an element in common (exactly for
    NumPy arrays whose extents overlap; in doubt, yes)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return True
    try:
        return bool(np.shares_memory(a, b, max_work=1 << 16))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:
        return True


def staged_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, aligned copy of ``a`` (same dtype, shape and values)."""
    return np.array(a, order="C", copy=True)


def replace_leaf(value: Any, path: tuple[int, ...], new: Any) -> Any:
    """``value`` (a nested tuple argument) with its leaf at ``path`` replaced by
    ``new``: staged and copied leaves go into the call's keyword arguments."""
    if not path:
        return new
    items = list(value)
    items[path[0]] = replace_leaf(items[path[0]], path[1:], new)
    return tuple(items)
