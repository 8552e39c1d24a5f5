"""OpenMP settings of compiled programs: wait policy, thread count, small maps.

Compiled programs run their maps as OpenMP parallel loops (GNU libgomp).
Two defaults of libgomp hurt on a shared machine:

* **Wait policy.**  Idle threads spin at barriers for a while before they
  sleep.  When other processes hold the cores, a spinning thread delays the
  one that has work, and a call that takes 0.1 ms alone takes 10 ms or more.
  ``import tensorir_dace`` therefore sets ``OMP_WAIT_POLICY=PASSIVE`` unless
  the user set it.  libgomp reads its environment once, when it is loaded,
  so this works only if no library has loaded libgomp before;
  :func:`wait_policy` says which policy is in effect.
* **Small maps.**  Starting a parallel region costs microseconds on an idle
  machine and milliseconds on a busy one.  A call whose largest parallel
  map has fewer than :data:`SEQUENTIAL_BELOW` points (its work, counted by
  :func:`tensorir_dace.transforms.openmp_maps.map_points`) runs with one thread:
  decided when compiling where every map's size is a constant (the maps
  become sequential loops, their scratch kept on the stack, see
  :mod:`tensorir_dace.transforms.openmp_maps`), else per call from the sizes
  (see :mod:`tensorir_dace.runtime`).

The thread count follows ``OMP_NUM_THREADS`` (libgomp's own rule: all cores
when unset); :func:`set_num_threads` changes it for the calling thread.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["SEQUENTIAL_BELOW", "get_num_threads", "set_num_threads", "wait_policy"]

#: A call whose largest parallel map has fewer points runs with one thread.
#: Measured with ``benchmarks/bench_threads.py`` (a 3-point stencil, two
#: cores): two threads were slower than one at every size up to 2**18
#: points, on a shared machine and with two CPU-bound processes alongside
#: (0.4x at 4096 points, 0.9x at 2**18); from about 2**20 points they pay.
SEQUENTIAL_BELOW = 262144

_policy_source = "user"          # "user", "tensorir_dace" or "too late"


def _libgomp_loaded() -> bool:
    """Whether libgomp is already mapped into this process (Linux; else False)."""
    try:
        with open("/proc/self/maps") as fp:
            return any("libgomp" in line for line in fp)
    except OSError:
        return False


def _configure() -> None:
    """Make idle OpenMP threads sleep instead of spin, unless the user chose."""
    global _policy_source
    if "OMP_WAIT_POLICY" in os.environ:
        return
    if sys.platform.startswith("linux") and _libgomp_loaded():
        _policy_source = "too late"
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    _policy_source = "tensorir_dace"


def wait_policy() -> str:
    """The OpenMP wait policy compiled programs run with, and who chose it:
    ``"PASSIVE (set by tensorir_dace)"``, ``"ACTIVE (OMP_WAIT_POLICY)"``, or
    ``"libgomp default (loaded before tensorir_dace)"``."""
    if _policy_source == "too late":
        return "libgomp default (loaded before tensorir_dace)"
    value = os.environ.get("OMP_WAIT_POLICY", "")
    who = "set by tensorir_dace" if _policy_source == "tensorir_dace" else "OMP_WAIT_POLICY"
    return f"{value.upper()} ({who})"


_gomp: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _gomp
    if _gomp is None:
        try:
            _gomp = ctypes.CDLL("libgomp.so.1")
            _gomp.omp_set_num_threads.restype = None    # void: nothing to convert per call
        except OSError:
            from .errors import TensorIRError
            raise TensorIRError("the OpenMP runtime (libgomp.so.1) is not installed; "
                                "compiled programs need it") from None
    return _gomp


class ThreadSwitch:
    """This process's thread count (``count``, once known) and libgomp's
    ``omp_set_num_threads`` (``set``): what running a call one-threaded needs,
    as two attribute reads for the hottest call paths (see :func:`one_thread`)."""

    __slots__ = ("count", "set")

    def __init__(self) -> None:
        self.count: int | None = None
        self.set: Any = None


_switch = ThreadSwitch()


def one_thread() -> ThreadSwitch:
    """The thread switch, ready: ``s.set(1)``, call, ``s.set(s.count)``."""
    if _switch.set is None:
        _switch.set = _lib().omp_set_num_threads
    if _switch.count is None:
        _switch.count = int(_lib().omp_get_max_threads())
    return _switch


def get_num_threads() -> int:
    """How many OpenMP threads the next compiled call of this thread may use."""
    return int(_lib().omp_get_max_threads()) if _switch.count is None else _switch.count


def set_num_threads(n: int) -> None:
    """Use ``n`` OpenMP threads in the compiled calls of this thread."""
    if int(n) < 1:
        from .errors import ArgumentError
        raise ArgumentError(f"the thread count must be at least 1, got {n}")
    _lib().omp_set_num_threads(int(n))
    _switch.count = int(n)


def run_one_threaded(fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` with one OpenMP thread (for calls whose maps are all small)."""
    s = _switch if _switch.count is not None and _switch.set is not None else one_thread()
    s.set(1)
    try:
        fn(*args)
    finally:
        s.set(s.count)


_configure()
