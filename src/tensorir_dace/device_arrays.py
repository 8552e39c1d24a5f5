"""GPU arrays given to compiled programs, read through ``__cuda_array_interface__``.

A compiled GPU program takes device-resident arrays (CuPy, PyTorch, Numba, …)
without copying them through the host.  The argument checks see them through
:class:`DeviceArray`, a read-only description made from the object's CUDA
array interface (version 0-3): the shape, the byte strides (``None`` in the
interface means C-contiguous), the element type, the data pointer and the
read-only flag.  No CuPy import is needed and no device memory is touched,
so the checks (element type, shape, C-contiguity, alignment, read-only
outputs, overlap by pointer ranges) are the same as for NumPy arrays and run
on machines without a GPU.

Device arrays are never copied by the runtime: an input that shares memory
with an output is an error for them (NumPy arrays get a copy instead).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ArgumentError

__all__ = ["DeviceArray", "device_parameters", "interface_key", "is_device_array",
           "require_host_arrays"]


def is_device_array(value: Any) -> bool:
    """Whether ``value`` is a GPU array (has ``__cuda_array_interface__``) and not NumPy."""
    return not isinstance(value, np.ndarray) and hasattr(value, "__cuda_array_interface__")


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "aligned", "writeable")

    def __init__(self, c: bool, f: bool, aligned: bool, writeable: bool):
        self.c_contiguous, self.f_contiguous = c, f
        self.aligned, self.writeable = aligned, writeable


def _contiguous_strides(shape: tuple[int, ...], itemsize: int, order: str) -> tuple[int, ...]:
    out = [0] * len(shape)
    step = itemsize
    axes = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for i in axes:
        out[i] = step
        step *= max(shape[i], 1)
    return tuple(out)


def _same_layout(shape: tuple[int, ...], strides: tuple[int, ...],
                 want: tuple[int, ...]) -> bool:
    """Strides equal where they matter (axes of length 1 may have any stride)."""
    if 0 in shape:
        return True
    return all(s == w for n, s, w in zip(shape, strides, want) if n > 1)


class DeviceArray:
    """The facts about a GPU array that the argument checks and the runtime use.

    ``obj`` is the array given; :attr:`ptr` is the address of its first
    element on the device.  Attributes mirror NumPy's (``shape``, ``strides``
    in bytes, ``dtype``, ``ndim``, ``size``, ``itemsize``, ``nbytes``,
    ``flags.c_contiguous`` / ``f_contiguous`` / ``aligned`` / ``writeable``).
    """

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "flags", "stream")

    def __init__(self, obj: Any, what: str = "argument", where: str = "program"):
        try:
            cai = obj.__cuda_array_interface__
            shape = tuple(int(n) for n in cai["shape"])
            dtype = np.dtype(cai["typestr"])
            ptr, readonly = cai["data"]
            strides = cai.get("strides")
        except Exception as ex:  # noqa: BLE001 - any malformed interface is the caller's
            raise ArgumentError(f"{where}: {what} got a {type(obj).__name__} whose "
                                f"__cuda_array_interface__ is unusable ({ex!r}); it needs "
                                "'shape', 'typestr' and 'data' entries") from None
        if cai.get("mask") is not None:
            raise ArgumentError(f"{where}: {what} got a masked GPU array; pass the data "
                                "without a mask")
        c_strides = _contiguous_strides(shape, dtype.itemsize, "C")
        strides = c_strides if strides is None else tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise ArgumentError(f"{where}: {what} got a GPU array with {len(shape)} "
                                f"dimensions but {len(strides)} strides")
        self.obj = obj
        self.ptr = int(ptr or 0)
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.stream = cai.get("stream")
        self.flags = _Flags(
            _same_layout(shape, strides, c_strides),
            _same_layout(shape, strides, _contiguous_strides(shape, dtype.itemsize, "F")),
            self.ptr % max(dtype.alignment, 1) == 0,
            not readonly)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.obj.__cuda_array_interface__

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def base(self) -> None:
        return None     # laid out as a whole array: the pointer is all a program needs

    def copy(self) -> Any:
        """Device arrays are not copied by the runtime (see the module docstring)."""
        raise TypeError("DeviceArray.copy: device arrays are passed by pointer, never copied")

    def __repr__(self) -> str:
        return (f"DeviceArray({type(self.obj).__name__}, shape={self.shape}, "
                f"dtype={self.dtype}, ptr=0x{self.ptr:x})")


def _leaves(value: Any) -> list[Any]:
    if type(value) is tuple:
        return [x for v in value for x in _leaves(v)]
    return [value]


def device_parameters(values: dict[str, Any]) -> list[str]:
    """The names of the bound parameters given as GPU arrays (any leaf)."""
    return [name for name, v in values.items()
            if any(isinstance(x, DeviceArray) for x in _leaves(v))]


def require_host_arrays(values: dict[str, Any], where: str, runner: str) -> None:
    """Raise :class:`ArgumentError` when bound ``values`` hold GPU arrays that
    ``runner`` (e.g. "the interpreter") cannot read."""
    names = device_parameters(values)
    if names:
        raise ArgumentError(
            f"{where}: {runner} runs on the host, but parameter"
            f"{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)} "
            f"{'are' if len(names) > 1 else 'is a'} GPU array{'s' if len(names) > 1 else ''}; "
            "pass NumPy arrays (e.g. cupy.asnumpy(x)), or compile the program with "
            "device=\"gpu\"")


def interface_key(value: Any) -> tuple | None:
    """Everything a checked, prepared call with the GPU array ``value`` depends on
    (pointer and read-only flag, shape, strides, element type), as a hashable key;
    None when the interface is unusable (the full check then reports why)."""
    try:
        cai = value.__cuda_array_interface__
        if cai.get("mask") is not None:
            return None
        strides = cai.get("strides")
        return (_DEVICE_KEY, tuple(cai["data"]), tuple(cai["shape"]),
                None if strides is None else tuple(strides), cai["typestr"])
    except Exception:  # noqa: BLE001 - malformed: not cacheable, checked in full instead
        return None


_DEVICE_KEY = "cuda_array"    # tags device-array keys among argument-cache key parts
