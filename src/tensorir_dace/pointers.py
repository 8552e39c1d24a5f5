"""The address of an array's first element, read fast (NumPy only needed).

Shared by the call-time checks and the runtime, which key prepared calls on
array buffers and pass data pointers to compiled code.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = ["ARRAY_DATA", "ARRAY_DATA_WORD", "data_pointer"]


def _interface_pointer(a: Any) -> int:
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.__cuda_array_interface__["data"][0]


def _struct_reader() -> tuple[Any, int] | None:
    """``(read, offset)``: ``read(id(a) + offset).value`` is ``PyArrayObject.data``
    of a NumPy array ``a`` (``None`` where that disagrees with NumPy here)."""
    offset = object.__basicsize__     # the data pointer follows PyObject_HEAD
    read = ctypes.c_void_p.from_address
    probe = np.arange(3.0)[1:]
    if read(id(probe) + offset).value != _interface_pointer(probe):
        return None
    return read, offset


#: ``(read, offset)`` for reading a NumPy array's data pointer inline, where
#: every microsecond counts (``read(id(a) + offset).value or 0``), or ``None``.
ARRAY_DATA = _struct_reader()


def _word_reader() -> tuple[Any, int] | None:
    """``(words, index)``: ``words[(id(a) >> 3) + index]`` is ``PyArrayObject.data``
    of a NumPy array ``a``, reading the process's memory as one ctypes array of
    64-bit words (objects are at least 8-byte aligned); ``None`` where that
    disagrees with NumPy here."""
    if ARRAY_DATA is None or ctypes.sizeof(ctypes.c_void_p) != 8 or ARRAY_DATA[1] % 8:
        return None
    try:
        words = (ctypes.c_uint64 * (1 << 59)).from_address(0)
    except (ValueError, OverflowError, MemoryError):
        return None
    index = ARRAY_DATA[1] >> 3
    probes = [np.arange(3.0)[1:], np.zeros((2, 3), np.int32)[1], np.ones(0)]
    if any(words[(id(p) >> 3) + index] != (_interface_pointer(p) or 0) for p in probes):
        return None
    return words, index


#: ``(words, index)`` for reading a NumPy array's data pointer with one index
#: operation, ``words[(id(a) >> 3) + index]`` (a third cheaper than through
#: :data:`ARRAY_DATA`; for the hottest call path), or ``None``.
ARRAY_DATA_WORD = _word_reader()


def _struct_pointer_reader():
    """Read ``PyArrayObject.data`` directly (~10x faster than
    ``__array_interface__``); used only if it agrees with NumPy here."""
    if ARRAY_DATA is None:
        return None
    read, offset = ARRAY_DATA

    def pointer(a: Any) -> int:
        if type(a) is np.ndarray:
            return read(id(a) + offset).value or 0
        return _interface_pointer(a)
    return pointer


data_pointer = _struct_pointer_reader() or _interface_pointer
data_pointer.__doc__ = "The address of an array's first element (NumPy or CUDA array)."
