"""Where the compile cache lives, and its counters (no DaCe import: the
cached path needs them too).

The cache directory is, in order: :func:`set_cache_dir`, the environment
variable ``TENSORIR_DACE_CACHE``, ``$XDG_CACHE_HOME/tensorir_dace``,
``~/.cache/tensorir_dace``.
"""

from __future__ import annotations

import os
import pathlib

__all__ = ["cache_stats", "compile_count", "get_cache_dir", "set_cache_dir"]

_cache_dir_override: pathlib.Path | None = None
_stats = {"compiled": 0, "loaded": 0, "memo_hits": 0, "compile_seconds": 0.0,
          "load_seconds": 0.0}


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Use ``path`` as the compile cache of this process (``None``: back to the default)."""
    global _cache_dir_override
    _cache_dir_override = None if path is None else pathlib.Path(path).expanduser()


def get_cache_dir() -> pathlib.Path:
    """The compile cache directory in effect (it need not exist yet)."""
    if _cache_dir_override is not None:
        return _cache_dir_override
    env = os.environ.get("TENSORIR_DACE_CACHE")
    if env:
        return pathlib.Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return base / "tensorir_dace"


def compile_count() -> int:
    """How many times this process ran the C++ compiler through ``compile_sdfg``."""
    return int(_stats["compiled"])


def cache_stats() -> dict[str, float]:
    """Counters of this process: ``compiled`` (C++ compiler ran), ``loaded``
    (built library loaded from disk), ``memo_hits`` (already loaded in this
    process), and the seconds spent compiling and loading."""
    return dict(_stats)
