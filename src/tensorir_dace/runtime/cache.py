"""A content-addressed, process-safe compile cache for DaCe SDFGs.

:func:`compile_sdfg` compiles an SDFG once per *content* (``sdfg.hash_sdfg()``
plus every DaCe setting that changes the generated library) and machine,
and afterwards loads the built library from disk without running the C++
compiler.  Why not DaCe's own caching: ``compiler.use_cache`` with a fixed
SDFG name silently loads a stale library after the SDFG changed, and
``cache='hash'`` is not stable across processes.

Layout: ``<cache_dir>/<sdfg.name>_<key16>/`` is the DaCe build folder of a
copy of the SDFG renamed to ``<sdfg.name>_<key16>`` (so two programs never
share a library name); ``<folder>.lock`` serialises processes that build or
load the same program; ``<folder>/ready`` (JSON) is written after a
successful build, and only folders with it are trusted.  The marker records
the library's size and SHA-256; a library that no longer matches (truncated,
overwritten, not an ELF file) or that fails to load is rebuilt, with a
logged warning, instead of crashing the process (loading a truncated shared
object can end in SIGBUS).

The cache directory is, in order: :func:`set_cache_dir`, the environment
variable ``TENSORIR_DACE_CACHE``, ``$XDG_CACHE_HOME/tensorir_dace``,
``~/.cache/tensorir_dace``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import pathlib
import platform
import shutil
import sys
import threading
import time
import uuid
from typing import Any

import dace
from dace import dtypes
from dace.codegen import compiler as dace_compiler
from dace.codegen.compiled_sdfg import CompiledSDFG
from dace.config import Config
from filelock import FileLock

from ..log import info as log_info
from ..log import stage
from .cachedir import _stats, cache_stats, compile_count, get_cache_dir, set_cache_dir
from .library import file_digest, library_problem

__all__ = [
    "cache_key",
    "cache_stats",
    "compile_count",
    "compile_sdfg",
    "get_cache_dir",
    "reset_persistent_lifetimes",
    "set_cache_dir",
]

#: Bump when the folder layout or the key recipe changes.
_FORMAT = 2

_log = logging.getLogger(__name__)

_lock = threading.RLock()
_memo: dict[str, CompiledSDFG] = {}

# --------------------------------------------------------------------------- key

# Settings that cannot change the generated library.
_CONFIG_IGNORED = {"use_cache", "build_jobs", "allow_view_arguments", "format_code",
                   "format_config_file", "indentation_spaces", "precompiled_header",
                   "configure_cache", "command_cache"}


def _config_fingerprint() -> dict[str, Any]:
    def clean(d: Any, top: bool) -> Any:
        if isinstance(d, dict):
            return {k: clean(v, False) for k, v in sorted(d.items())
                    if not (top and k in _CONFIG_IGNORED)}
        return d if isinstance(d, (str, int, float, bool, type(None))) else str(d)

    fp: dict[str, Any] = {"compiler": clean(Config.get("compiler"), True)}
    for section in ("instrumentation", "profiling"):
        try:
            fp[section] = clean(Config.get(section), False)
        except Exception:  # noqa: BLE001  # pragma: no cover - absent in this DaCe version
            pass
    return fp


def _host_isa() -> str:
    try:
        return dace_compiler.host_isa_id()
    except Exception:  # noqa: BLE001  # pragma: no cover - older/newer DaCe
        return f"{platform.machine()}|{platform.processor()}"


def _collect_instrumentation(obj: Any, out: list[str]) -> None:
    # hash_sdfg() drops "instrument" attributes, but they change the generated code.
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "instrument" and v not in (None, "No_Instrumentation"):
                out.append(str(v))
            else:
                _collect_instrumentation(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect_instrumentation(v, out)


def cache_key(sdfg: dace.SDFG) -> str:
    """The content key (SHA-256 hex) under which :func:`compile_sdfg` stores ``sdfg``.

    Covers the SDFG content (``hash_sdfg()``, which ignores names and ids; the
    SDFG name is part of the folder name instead), its instrumentation, the
    DaCe version, the ``compiler`` configuration (flags, build type, CUDA
    architecture, …), the compilers named in ``CC``/``CXX``/``CUDACXX`` and the
    host instruction set (``-march=native``).
    """
    jsondict = sdfg.to_json()
    instrument: list[str] = []
    _collect_instrumentation(jsondict, instrument)
    with ieee_flags():              # the flags the build uses
        config = _config_fingerprint()
    parts = {
        "format": _FORMAT,
        "sdfg": sdfg.hash_sdfg(jsondict),
        "instrument": instrument,
        "dace": dace.__version__,
        "config": config,
        "env": {k: os.environ.get(k, "") for k in ("CC", "CXX", "CUDACXX", "CUDA_HOME")},
        "isa": _host_isa(),
        "platform": sys.platform,
    }
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


# --------------------------------------------------------------------------- preparation


def reset_persistent_lifetimes(sdfg: dace.SDFG) -> int:
    """Give every transient whose size depends on symbols Scope lifetime (in place).

    DaCe allocates Persistent (and Global) transients once, in the program's
    init function, with the sizes of the *first* call; a later call with
    larger sizes then writes past the allocation (heap corruption, often a
    crash at exit).  ``auto_optimize`` makes surviving transients Persistent.
    Our calls do not need this (:class:`~.compiled.SDFGCallable` initialises
    the program again when the sizes change, so persistent transients are
    allocated once per size, not once per call); it is for SDFGs called by
    other means.  Transients of constant size keep their lifetime.  Returns
    how many were changed.
    """
    changed = 0
    risky = (dtypes.AllocationLifetime.Persistent, dtypes.AllocationLifetime.Global)
    for sd in sdfg.all_sdfgs_recursive():
        for desc in sd.arrays.values():
            if not desc.transient or desc.lifetime not in risky:
                continue
            if not getattr(desc, "free_symbols", None):
                continue   # constant size: safe to keep
            desc.lifetime = dtypes.AllocationLifetime.Scope
            changed += 1
    return changed


def _prepared_copy(sdfg: dace.SDFG, name: str, folder: pathlib.Path) -> dace.SDFG:
    """A copy of ``sdfg`` to compile/load as ``name`` in ``folder``."""
    dup = copy.deepcopy(sdfg)
    dup.name = name
    dup.build_folder = str(folder)
    return dup


def _signature(sdfg: dace.SDFG) -> list[str]:
    return list(sdfg.signature_arglist(with_types=True))


def _write_atomically(path: pathlib.Path, text: str) -> None:
    staging = path.with_name(f"{path.name}.{uuid.uuid4().hex}")
    with open(staging, "x") as fp:
        fp.write(text)
        fp.flush()
        os.fsync(fp.fileno())
    os.replace(staging, path)


# --------------------------------------------------------------------------- compile / load


def _read_marker(folder: pathlib.Path, name: str, key: str) -> dict[str, Any] | None:
    try:
        info = json.loads((folder / "ready").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("key") != key or info.get("name") != name:
        return None
    lib = folder / str(info.get("library", ""))
    if not lib.is_file():
        return None
    problem = library_problem(lib, info)
    if problem is not None:
        _log.warning("compile cache: the cached library %s is unusable (%s); rebuilding it",
                     lib, problem)
        return None
    return info


def _handle(folder: pathlib.Path, info: dict[str, Any], dup: dace.SDFG) -> CompiledSDFG:
    """Load the library in ``folder`` for the prepared SDFG ``dup``.

    The library was generated from DaCe's own (library-node-expanded) copy,
    saved as ``program.sdfgz``; its C signature is recorded in the marker.
    Normally ``dup`` has the same signature and is used directly (fast); if
    not, the saved SDFG is loaded so that arguments are passed in the order
    the library expects.
    """
    sdfg = dup
    if _signature(dup) != info.get("signature"):
        saved = folder / "program.sdfgz"
        sdfg = dace.SDFG.from_file(str(saved))
    compiled = dace_compiler.get_program_handle(folder / info["library"], sdfg)
    # Where the library lives: the call plan names it.
    compiled._tir_library = folder / info["library"]
    return compiled


#: DaCe's default C++ flags that change results the interpreter (NumPy, IEEE 754)
#: defines: without signed zeros, ``-(x / (b - b))`` came out as ``+inf`` for
#: ``x > 0``.  They are dropped from the flags of every build (the other
#: fast-math flags of DaCe's defaults stay: they change no result beyond
#: rounding).
NON_IEEE_FLAGS = ("-fno-signed-zeros",)


def ieee_flags():
    """DaCe's ``compiler.cpu.args`` (also the host flags of CUDA builds) without
    :data:`NON_IEEE_FLAGS`, for the duration of a ``with`` block."""
    args = str(Config.get("compiler", "cpu", "args"))
    kept = " ".join(a for a in args.split() if a not in NON_IEEE_FLAGS)
    return dace.config.set_temporary("compiler", "cpu", "args", value=kept)


def compile_sdfg(sdfg: dace.SDFG, *,
                 cache_dir: str | os.PathLike | None = None) -> CompiledSDFG:
    """Compile ``sdfg`` (or load it from the cache) and return DaCe's ``CompiledSDFG``,
    built with IEEE-preserving flags (:func:`ieee_flags`); see :func:`_compile_sdfg`."""
    with ieee_flags():
        return _compile_sdfg(sdfg, cache_dir=cache_dir)


def _compile_sdfg(sdfg: dace.SDFG, *,
                  cache_dir: str | os.PathLike | None = None) -> CompiledSDFG:
    """Compile ``sdfg`` (or load it from the cache) and return DaCe's ``CompiledSDFG``.

    ``sdfg`` itself is not modified: a copy named ``<sdfg.name>_<key16>``, with
    symbol-sized Persistent transients reset to Scope lifetime (see
    :func:`reset_persistent_lifetimes`), is built in
    ``<cache_dir>/<sdfg.name>_<key16>``.  The same content compiled again in
    this process returns the same ``CompiledSDFG`` object; in another process
    it loads the built library without invoking the C++ compiler.  Concurrent
    processes are serialised by a file lock per program.
    """
    key = cache_key(sdfg)
    name = f"{sdfg.name}_{key[:16]}"
    memo_key = f"{name}:{key}"
    with _lock:
        hit = _memo.get(memo_key)
        if hit is not None:
            _stats["memo_hits"] += 1
            log_info("compile cache hit: %s already loaded", name)
            return hit

        root = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else get_cache_dir()
        root.mkdir(parents=True, exist_ok=True)
        folder = (root / name).resolve()
        t0 = time.perf_counter()
        with FileLock(folder.with_name(folder.name + ".lock")):
            dup = _prepared_copy(sdfg, name, folder)
            info = _read_marker(folder, name, key)
            compiled = None
            if info is not None:
                try:
                    with stage(f"loading {name} from the compile cache"):
                        compiled = _handle(folder, info, dup)
                except Exception as ex:  # noqa: BLE001 - any failure to load: build it again
                    _log.warning("compile cache: cannot load the cached library in %s (%s); "
                                 "rebuilding it", folder, ex)
            if compiled is not None:
                _stats["loaded"] += 1
                _stats["load_seconds"] += time.perf_counter() - t0
            else:
                compiled = _build(dup, folder, name, key)
                _stats["compiled"] += 1
                _stats["compile_seconds"] += time.perf_counter() - t0
        _memo[memo_key] = compiled
        return compiled


def _build(dup: dace.SDFG, folder: pathlib.Path, name: str, key: str) -> CompiledSDFG:
    if folder.exists():   # a build that failed or was interrupted: start over
        shutil.rmtree(folder)
    from dace.codegen import codegen
    with stage("code generation"):
        gen = copy.deepcopy(dup)
        gen.build_folder = str(folder)
        for _ in gen.all_sdfgs_recursive(load_ext=True):
            pass
        gen.fill_scope_connectors()
        objects = codegen.generate_code(gen, validate=True)
        program_folder = dace_compiler.generate_program_folder(gen, objects, str(folder))
    with stage("C++ build", live=True):
        dace_compiler.configure_and_compile(program_folder, name)
    lib = dace_compiler.get_binary_name(folder, name)
    if not lib.is_file():  # pragma: no cover - DaCe renamed the library
        raise RuntimeError(f"DaCe did not produce {lib}")
    saved = folder / "program.sdfgz"
    built_sig = _signature(dace.SDFG.from_file(str(saved))) if saved.is_file() \
        else _signature(dup)
    info = {
        "name": name,
        "key": key,
        "library": os.path.relpath(lib, folder),
        "size": lib.stat().st_size,
        "sha256": file_digest(lib),
        "signature": built_sig,
        "dace": dace.__version__,
        "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    _write_atomically(folder / "ready", json.dumps(info, indent=1))
    with stage("loading"):
        return _handle(folder, info, dup)
