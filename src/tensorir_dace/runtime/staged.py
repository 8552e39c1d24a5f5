"""Calls through the call plan with arrays a kernel cannot take by pointer.

:class:`~.native.NativeCallable` prepares calls whose NumPy arrays are all
C-contiguous and aligned.  A call with others (Fortran order, ``x.T``,
``x[::2]``, unaligned data) is run here on C-contiguous copies, without
loading DaCe: each such array is copied into a staging buffer, the call
runs on the buffers as a plain call (through the same prepared entries),
and the buffers of written arrays are copied back.  The buffers of the last
few sets of such arrays are kept while those arrays live, so calling again
with them costs the copies and a prepared call.

What the copies would hide is left to the full path, which reports it on
the caller's arrays: a written array that is read-only or reaches an
element through several indices (a broadcast view), and two written arrays
that share memory.  An array read by the program that shares memory with a
written one needs nothing more: one of the two is a copy, so the program
reads the values from before the call, as the call checks' copy of an
overlapping input would give.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..staging import needs_staging, overlaps_itself, replace_leaf, shares_memory, staged_copy

__all__ = ["StagedCalls"]


def _leaf(kwargs: dict[str, Any], param: str, path: tuple[int, ...]) -> Any:
    value = kwargs[param]
    for i in path:
        value = value[i]
    return value


class _Buffers:
    """The staging buffers of one set of arrays, watched by weak references."""

    __slots__ = ("refs", "layouts", "buffers")

    def __init__(self, arrays: list[np.ndarray], forget: Callable[[Any], object]):
        self.refs = tuple(weakref.ref(a, forget) for a in arrays)
        self.layouts = tuple((a.shape, a.strides, a.dtype) for a in arrays)
        self.buffers = [staged_copy(a) for a in arrays]

    def fits(self, arrays: list[np.ndarray]) -> bool:
        return all(r() is a and (a.shape, a.strides, a.dtype) == lay
                   for r, a, lay in zip(self.refs, arrays, self.layouts))


class StagedCalls:
    """Staged calls of one program (see the module docstring).

    :param arrays: per array leaf of the plan: parameter, index path, dtype,
        rank and whether the program writes it.
    :param max_cached: how many sets of staging buffers to keep.
    """

    def __init__(self, arrays: Sequence[tuple[str, tuple[int, ...], np.dtype, int, bool]],
                 max_cached: int = 4):
        self.arrays = tuple(arrays)
        self.max_cached = max_cached
        self._cache: dict[tuple, _Buffers] = {}

    def run(self, kwargs: dict[str, Any], call: Callable[[dict[str, Any]], None]) -> bool:
        """Run the call with its arrays staged through ``call`` (``False``: nothing
        to stage here, or something the full path must report)."""
        staged: list[tuple[str, tuple[int, ...], np.ndarray, bool]] = []
        written: list[tuple[np.ndarray, bool]] = []
        for param, path, dtype, ndim, w in self.arrays:
            v = _leaf(kwargs, param, path)
            stage = type(v) is np.ndarray and needs_staging(v)
            if stage:
                if v.dtype != dtype or v.ndim != ndim or (w and (
                        not v.flags.writeable or overlaps_itself(v))):
                    return False
                staged.append((param, path, v, w))
            if w:
                written.append((v, stage))
        if not staged:
            return False
        for i, (a, sa) in enumerate(written):
            if any((sa or sb) and shares_memory(a, b) for b, sb in written[:i]):
                return False
        originals = [v for _, _, v, _ in staged]
        buffers = self._buffers(originals)
        args = dict(kwargs)
        for (param, path, _, _), buf in zip(staged, buffers):
            args[param] = replace_leaf(args[param], path, buf)
        call(args)
        for (_, _, v, w), buf in zip(staged, buffers):
            if w:
                v[...] = buf
        return True

    def _buffers(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Staging buffers holding the values of ``arrays`` (kept for the next call)."""
        key = tuple(map(id, arrays))
        cache = self._cache
        hit = cache.get(key)
        if hit is not None and hit.fits(arrays):
            for buf, a in zip(hit.buffers, arrays):
                np.copyto(buf, a)
            return hit.buffers
        cache.pop(key, None)
        if len(cache) >= self.max_cached:
            cache.pop(next(iter(cache)))

        def forget(_ref: Any) -> None:
            cache.pop(key, None)
        made = _Buffers(arrays, forget)
        cache[key] = made
        return made.buffers

    def clear(self) -> None:
        """Forget the staging buffers."""
        self._cache.clear()
