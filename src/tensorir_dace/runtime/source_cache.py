"""Programs looked up by their source: a cache hit without parsing, SymPy or DaCe.

The key (:func:`source_key`) is computed from the program text and the
compile options before anything is parsed, together with everything that
changes the generated library: the tensorir_dace version and the size and
modification time of each of its source files (an upgrade or a local edit
never serves a stale binary), the DaCe version, the DaCe configuration files
and ``DACE_*`` variables, the compilers named in the environment, the
host CPU, and the package's own ``TENSORIR_DACE_*`` variables that the
optimisation reads (the streaming stores' switch and threshold; read at
each lookup, so a variable set in a running process is never served a
library built without it).  ``<cache_dir>/programs/<key>.json`` holds the program's call
plan (:mod:`.plan`), which names the library in the compile cache; a hit
loads that library with ctypes (:mod:`.library`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import pathlib
import platform
import sys
import time
from typing import Any

from ..log import info as log_info
from .cachedir import _stats, get_cache_dir
from .library import Library, LibraryError
from .native import PLAN_FORMAT

__all__ = ["load_plan", "source_key", "store_plan"]

#: Bump when the key recipe changes.
_KEY_FORMAT = 2

_log = logging.getLogger(__name__)
_fingerprint: str | None = None


def _files_fingerprint(root: pathlib.Path, pattern: str) -> list[Any]:
    out = []
    for p in sorted(root.rglob(pattern)):
        st = p.stat()
        out.append([str(p.relative_to(root)), st.st_size, st.st_mtime_ns])
    return out


def _read(path: pathlib.Path | str) -> str:
    try:
        return pathlib.Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _host_cpu() -> str:
    """The CPU model and flags (DaCe compiles with ``-march=native``)."""
    text = _read("/proc/cpuinfo")
    first = text.split("\n\n", 1)[0]
    keep = [ln for ln in first.splitlines() if ln.startswith(("model name", "flags", "Features"))]
    return f"{platform.machine()}|{sys.platform}|" + "|".join(keep)


def environment_fingerprint() -> str:
    """Everything but the program that the library depends on (computed once)."""
    global _fingerprint
    if _fingerprint is None:
        package = pathlib.Path(__file__).resolve().parent.parent
        spec = importlib.util.find_spec("dace")
        dace_dir = pathlib.Path(spec.origin).parent if spec and spec.origin else None
        configs = [os.environ.get("DACE_CONFIG", ""), ".dace.conf",
                   str(pathlib.Path.home() / ".dace.conf")]
        parts = {
            "format": _KEY_FORMAT,
            "tensorir_dace": _files_fingerprint(package, "*.py"),   # version in __init__.py
            "dace": [_read(dace_dir / "version.py"), dace_dir and str(dace_dir)]
            if dace_dir else None,
            "dace_config": [_read(c) for c in configs if c],
            "env": {k: v for k, v in os.environ.items()
                    if k.startswith("DACE_") or k in ("CC", "CXX", "CUDACXX", "CUDA_HOME")},
            "cpu": _host_cpu(),
            "python": sys.version,
        }
        blob = json.dumps(parts, sort_keys=True, default=str)
        _fingerprint = hashlib.sha256(blob.encode()).hexdigest()
    return _fingerprint


#: The package's environment variables that cannot change a generated library.
_NOT_CODE = frozenset({"TENSORIR_DACE_CACHE", "TENSORIR_DACE_LOG", "TENSORIR_DACE_TRACEBACK"})


def code_settings() -> dict[str, str]:
    """The ``TENSORIR_DACE_*`` environment variables set now that may change
    the generated code (such as ``TENSORIR_DACE_STREAMING_STORES`` and
    ``TENSORIR_DACE_STREAMING_MIN_BYTES``, read when a program is optimised):
    all but those known not to (:data:`_NOT_CODE`)."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("TENSORIR_DACE_") and k not in _NOT_CODE}


def source_key(text: str, *, optimize: str, device: str) -> str:
    """The cache key of a program's source text compiled with these options
    and the code settings of the environment (:func:`code_settings`)."""
    blob = json.dumps([environment_fingerprint(), code_settings(), text, optimize, device])
    return hashlib.sha256(blob.encode()).hexdigest()


def _plan_path(key: str, cache_dir: str | os.PathLike | None) -> pathlib.Path:
    root = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else get_cache_dir()
    return root / "programs" / f"{key}.json"


def load_plan(key: str, cache_dir: str | os.PathLike | None = None
              ) -> tuple[dict[str, Any], Library] | None:
    """The stored plan and its loaded library, or ``None`` (not cached, or the
    library is damaged: then a warning is logged and the caller rebuilds)."""
    path = _plan_path(key, cache_dir)
    try:
        plan = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(plan, dict) or plan.get("key") != key \
            or plan.get("format") != PLAN_FORMAT:
        return None
    library = path.parent.parent / plan["library"]
    try:
        t0 = time.perf_counter()
        loaded = plan, Library(library, plan["name"], plan)
        _stats["loaded"] += 1
        _stats["load_seconds"] += time.perf_counter() - t0
        log_info("compile cache hit: %s found by its source, loaded in %.3f s",
                 plan["name"], time.perf_counter() - t0)
        return loaded
    except LibraryError as ex:
        _log.warning("compile cache: %s; rebuilding it", ex)
        return None


def store_plan(key: str, plan: dict[str, Any], library: pathlib.Path,
               cache_dir: str | os.PathLike | None = None) -> None:
    """Store ``plan`` under ``key`` (atomically; the library path is kept
    relative to the cache directory, so the cache may move)."""
    path = _plan_path(key, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dict(plan, key=key, library=os.path.relpath(library, path.parent.parent))
    staging = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    staging.write_text(json.dumps(data, indent=1))
    os.replace(staging, path)
