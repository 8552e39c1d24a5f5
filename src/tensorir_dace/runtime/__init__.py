"""Runtime: compile (with a content-addressed cache), check arguments, call.

* :func:`compile_sdfg` -- compile an SDFG once per content and machine, load
  it from ``get_cache_dir()`` afterwards (see :mod:`.cache`).
* :class:`SDFGCallable` -- call a compiled SDFG with Tensor IR arguments,
  checked by :func:`tensorir_dace.arguments.bind_arguments` (see
  :mod:`.compiled`).
"""

from .cache import (
    cache_key,
    cache_stats,
    compile_count,
    compile_sdfg,
    get_cache_dir,
    reset_persistent_lifetimes,
    set_cache_dir,
)
from .compiled import (
    ArgBinding,
    CallSignature,
    GPUUnavailableError,
    SDFGCallable,
    gpu_available,
)

__all__ = [
    "ArgBinding",
    "CallSignature",
    "GPUUnavailableError",
    "SDFGCallable",
    "cache_key",
    "cache_stats",
    "compile_count",
    "compile_sdfg",
    "get_cache_dir",
    "gpu_available",
    "reset_persistent_lifetimes",
    "set_cache_dir",
]
