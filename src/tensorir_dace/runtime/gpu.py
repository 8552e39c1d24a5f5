"""GPU availability and GPU errors, without DaCe.

Both call paths of a ``device="gpu"`` program use these: the DaCe-loaded one
(:mod:`.compiled`) and the ctypes one of a cache hit (:mod:`.native`), which
must not import DaCe.  Calling a CUDA-compiled library on a machine without a
GPU crashes the process, so both ask the driver first
(:func:`gpu_available`), and both read the error the generated code records
for its kernels after each call and raise :class:`GPUError` with it.
"""

from __future__ import annotations

import ctypes

from ..errors import TensorIRError

__all__ = ["GPUError", "GPUUnavailableError", "gpu_available", "gpu_failure",
           "gpu_unavailable"]


class GPUUnavailableError(TensorIRError, RuntimeError):
    """A program compiled for a GPU was called on a machine without a usable GPU."""


class GPUError(TensorIRError, RuntimeError):
    """A GPU program's kernel failed to launch or run (the CUDA error is in the message)."""


def gpu_unavailable(where: str) -> GPUUnavailableError:
    """The error of calling ``where`` (a program compiled for a GPU) without one."""
    return GPUUnavailableError(
        f"{where} was compiled for a GPU, but no usable GPU was found "
        "(calling it would crash the process); compile it for the CPU instead")


def gpu_failure(name: str, detail: str) -> GPUError:
    """The error of program ``name`` whose GPU work failed with ``detail``."""
    return GPUError(f"program '{name}' failed on the GPU: {detail}. A launch error "
                    "('invalid argument' or 'invalid configuration') means a grid "
                    "beyond CUDA's limits of 65535 blocks along y or z: a "
                    "three-dimensional domain longer than 131070 along its first or "
                    "262140 along its second dimension")


_GPU_AVAILABLE: bool | None = None


def gpu_available() -> bool:
    """Whether a CUDA (or HIP) device can be used by this process.

    Asks the driver library (``libcuda.so.1``: ``cuInit`` and
    ``cuDeviceGetCount``; or ``libamdhip64.so``), which is safe without a
    GPU -- unlike calling a CUDA-compiled program, which crashes the process.
    The answer is cached.
    """
    global _GPU_AVAILABLE
    if _GPU_AVAILABLE is None:
        _GPU_AVAILABLE = _probe_cuda() or _probe_hip()
    return _GPU_AVAILABLE


def _probe_cuda() -> bool:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if lib.cuInit(0) != 0:
            return False
        n = ctypes.c_int(0)
        return lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0
    except (OSError, AttributeError):
        return False


def _probe_hip() -> bool:
    try:
        lib = ctypes.CDLL("libamdhip64.so")
        n = ctypes.c_int(0)
        return lib.hipGetDeviceCount(ctypes.byref(n)) == 0 and n.value > 0
    except (OSError, AttributeError):
        return False
