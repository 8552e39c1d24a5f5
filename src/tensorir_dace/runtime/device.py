"""Calling a GPU program with host (NumPy) or device-resident (CuPy, …) arrays.

A program compiled with ``device="gpu"`` has two builds, chosen per call by
where the array arguments live:

* **NumPy arrays**: the build made by :func:`tensorir_dace.compile`.  Each
  call allocates device buffers, copies every array argument to the device,
  runs the kernels and copies the written arrays back (DaCe's GPU
  transformation inserts these copies).
* **GPU arrays** (anything with ``__cuda_array_interface__``): a build whose
  argument arrays live in device memory, compiled on the first such call (or
  by :meth:`GPUCallable.resident`).  Nothing is copied: the kernels read and
  write the caller's arrays in place.

All array arguments of a call live in the same place; mixing raises
:class:`~tensorir_dace.ArgumentError`.  Scalars are passed by value either
way.  Every call is synchronous (see :mod:`tensorir_dace.transforms.gpu`): it
waits for GPU work queued before it, and returns when its kernels are done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArgumentError

if TYPE_CHECKING:
    from .compiled import SDFGCallable

__all__ = ["GPUCallable", "residence"]


def _kinds(value: Any, out: set[str]) -> None:
    if type(value) is tuple:
        for v in value:
            _kinds(v, out)
    elif hasattr(value, "__cuda_array_interface__"):
        out.add("device")
    elif hasattr(value, "__array__") and np.ndim(value) > 0:   # not scalars, not 0-d
        out.add("host")


def residence(kwargs: dict[str, Any], where: str) -> str:
    """``"device"`` when the array arguments are GPU arrays, else ``"host"``."""
    by_name: dict[str, set[str]] = {}
    for name, value in kwargs.items():
        kinds: set[str] = set()
        _kinds(value, kinds)
        by_name[name] = kinds
    found = set().union(*by_name.values()) if by_name else set()
    if found == {"host", "device"}:
        dev = [n for n, k in by_name.items() if "device" in k]
        host = [n for n, k in by_name.items() if "host" in k]
        raise ArgumentError(
            f"{where}: the array arguments must all be GPU arrays or all NumPy arrays, got GPU "
            f"arrays for {', '.join(map(repr, dev))} and NumPy arrays for "
            f"{', '.join(map(repr, host))} (move them with cupy.asarray(x) or "
            "cupy.asnumpy(x))")
    return "device" if found == {"device"} else "host"


class GPUCallable:
    """Dispatches the calls of a GPU program to its host-array or device-array build.

    :param host: calls the build for NumPy arrays (an ``SDFGCallable``, or
        a ``NativeCallable`` of a cached library).
    :param build_resident: compiles the build for device-resident arrays.
    :param where: the program, for messages.
    """

    def __init__(self, host: Any, build_resident: Callable[[], SDFGCallable], where: str):
        self.host = host
        self.where = where
        self._build_resident = build_resident
        self._resident: SDFGCallable | None = None

    def resident(self) -> SDFGCallable:
        """The build for device-resident arrays (compiled on first use)."""
        if self._resident is None:
            self._resident = self._build_resident()
        return self._resident

    def __call__(self, **kwargs: Any) -> None:
        if residence(kwargs, self.where) == "device":
            self.resident()(**kwargs)
        else:
            self.host(**kwargs)

    def set_fallback(self, full: Callable[..., None]) -> None:
        """Give a cached host build its full path (see ``NativeCallable``)."""
        if hasattr(self.host, "set_fallback"):
            self.host.set_fallback(full)

    def __repr__(self) -> str:
        return f"<GPUCallable {self.where} (host and device-resident builds)>"
