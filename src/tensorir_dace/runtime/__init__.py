"""Runtime: compile (with a content-addressed cache), check arguments, call.

* :func:`compile_sdfg` -- compile an SDFG once per content and machine, load
  it from ``get_cache_dir()`` afterwards (see :mod:`.cache`).
* :class:`SDFGCallable` -- call a compiled SDFG with Tensor IR arguments,
  checked by :func:`tensorir_dace.arguments.bind_arguments` (see
  :mod:`.compiled`).
* :mod:`.native` -- call a cached library through ctypes, without DaCe or
  SymPy (a program looked up by its source, see :mod:`.source_cache`).

The names are loaded on first use, so that importing a submodule that needs
neither DaCe nor SymPy imports neither.
"""

from importlib import import_module
from typing import Any

_NAMES = {
    "cache_key": "cache",
    "cache_stats": "cache",
    "compile_count": "cache",
    "compile_sdfg": "cache",
    "get_cache_dir": "cache",
    "reset_persistent_lifetimes": "cache",
    "set_cache_dir": "cache",
    "ArgBinding": "compiled",
    "CallSignature": "compiled",
    "GPUError": "gpu",
    "GPUUnavailableError": "gpu",
    "SDFGCallable": "compiled",
    "gpu_available": "gpu",
}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = getattr(import_module(f".{_NAMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorir_dace.runtime' has no attribute '{name}'")


__all__ = sorted(_NAMES)
