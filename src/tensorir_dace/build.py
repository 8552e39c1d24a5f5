"""Compile many programs at once, into the compile cache, in parallel processes.

Weather models have hundreds of stencils: :func:`build` compiles every
``.tir`` file and every annotated ``@program`` of the Python modules it is
given (directories are searched), each in a worker process, and shows a
progress line.  Afterwards each program starts at once in any process
(:func:`tensorir_dace.compile` finds it by its source; a decorated program
finds the specialisation of its annotations, and its calls with arrays of
the annotated dtypes and ranks and Python or NumPy scalars are recorded for
the lookup by the Python source, so they translate nothing either).  Rank-generic programs need
arguments to be specialised, so they are skipped with a note.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import multiprocessing as mp
import os
import pathlib
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["BuildReport", "build"]


@dataclass
class BuildReport:
    """What :func:`build` did: ``built`` (name, seconds), ``skipped`` (name,
    why), ``failed`` (name, message), and the wall-clock ``seconds``."""

    built: list[tuple[str, float]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def _files(paths: Iterable[str | os.PathLike]) -> list[pathlib.Path]:
    from .errors import TensorIRError
    out: list[pathlib.Path] = []
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in (".tir", ".py")))
        elif p.is_file() and p.suffix in (".tir", ".py"):
            out.append(p)
        else:
            raise TensorIRError(f"{p}: expected a .tir file, a Python module or a directory")
    return out


def _import(path: pathlib.Path) -> Any:
    """The module at ``path``, imported under the name its users import it by
    (``pkg.mod`` inside packages), which the lookup of its programs' calls by
    their Python source includes; a private name where another module has it."""
    parts, root = ([] if path.stem == "__init__" else [path.stem]), path.parent
    while (root / "__init__.py").exists():
        parts.insert(0, root.name)
        root = root.parent
    name = ".".join(parts)
    known = sys.modules.get(name)
    if known is not None and pathlib.Path(getattr(known, "__file__", None) or ".").resolve() \
            == path.resolve():
        return known
    sys.path.insert(0, str(root if known is None else path.parent))
    try:
        if known is None:     # leaves no trace in sys.modules (a later import reads it anew)
            try:
                return importlib.import_module(name)
            finally:
                sys.modules.pop(name, None)
        spec = importlib.util.spec_from_file_location(f"_tensorir_build_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError("not a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(root if known is None else path.parent))


def _module_programs(path: pathlib.Path, report: BuildReport
                     ) -> list[tuple[str, str, Any]]:
    """(name, program text, the ``@program``) of each annotated ``@program``
    defined in a module."""
    from .frontend.program_objects import ProgramObject
    from .syntax import format as format_program
    try:
        module = _import(path)
    except Exception as ex:  # noqa: BLE001  # the user's module: report, go on
        report.failed.append((str(path), f"importing it failed: {type(ex).__name__}: {ex}"))
        return []
    found = []
    for attr, obj in vars(module).items():
        if not isinstance(obj, ProgramObject) or getattr(obj.fn, "__module__", None) \
                != module.__name__:
            continue
        name = f"{path}:{attr}"
        if obj._specializer().generic:
            report.skipped.append((name, "rank-generic: it is specialised by its first call"))
            continue
        found.append((name, format_program(obj.ir), obj))
    return found


def _compile_one(name: str, text: str, options: dict[str, Any]) -> tuple[str, float, str | None]:
    """Worker: compile one program text into the cache."""
    from .errors import TensorIRError
    from .runtime.program import compile as compile_program
    t0 = time.perf_counter()
    try:
        compile_program(text, **options)
    except TensorIRError as ex:
        return name, time.perf_counter() - t0, str(ex)
    return name, time.perf_counter() - t0, None


def build(paths: Iterable[str | os.PathLike], *, optimize: str = "default", device: str = "cpu",
          jobs: int | None = None, cache_dir: str | os.PathLike | None = None,
          progress: TextIO | None = sys.stderr) -> BuildReport:
    """Compile the programs in ``paths`` (``.tir`` files, Python modules with
    ``@program``s, directories) into the compile cache, ``jobs`` at a time
    (default: one per core).  Progress goes to ``progress`` (``None``: quiet)."""
    t0 = time.perf_counter()
    report = BuildReport()
    work: list[tuple[str, str, Any]] = []
    for f in _files(paths):
        if f.suffix == ".tir":
            work.append((str(f), f.read_text(), None))
        else:
            work.extend(_module_programs(f, report))
    decorated = {name: (text, obj) for name, text, obj in work if obj is not None}
    for name, why in report.skipped:
        _say(progress, f"skipped {name}: {why}\n")
    options = {"optimize": optimize, "device": device, "cache_dir": cache_dir}
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(work) or 1))
    done = 0
    # fork: workers must not re-import the caller's script (spawn would run an
    # unguarded script again); they only compile, so the parent's threads do not matter.
    context = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [pool.submit(_compile_one, name, text, options) for name, text, _ in work]
        for fut in cf.as_completed(futures):
            name, seconds, error = fut.result()
            done += 1
            if error is None:
                report.built.append((name, seconds))
                if name in decorated:   # its calls in a new process translate nothing
                    text, obj = decorated[name]
                    obj.record_by_source(text, cache_dir)
            else:
                report.failed.append((name, error))
                _say(progress, f"\rfailed {name}: {error}\n")
            _say(progress, f"\r[{done}/{len(work)}] {name} ({seconds:.1f} s)\033[K",
                 end=done == len(work))
    report.seconds = time.perf_counter() - t0
    return report


def _say(stream: TextIO | None, text: str, end: bool = False) -> None:
    if stream is None:
        return
    if not stream.isatty():       # a log: one line per event
        text = text.replace("\r", "").replace("\033[K", "") + ("" if text.endswith("\n")
                                                                  else "\n")
    elif end:
        text += "\n"
    stream.write(text)
    stream.flush()
