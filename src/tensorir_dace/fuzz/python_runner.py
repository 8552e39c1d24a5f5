"""Differential runs of generated Python front-end programs: the decorated program
interpreted and compiled, against the interpreted text of the same program; and
bad calls, which must raise a ``TensorIRError``.

A batch's module is written to a file and imported, so that the front end
reads its source as it reads a user's."""

from __future__ import annotations

import importlib.util
import itertools
import os
import pathlib
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentError, TensorIRError
from ..testing import clone, leaves, random_arguments, streaming_threshold
from .compare import same_values
from .python_programs import (
    BOUNDS,
    SIZES,
    PyCase,
    builtin_like_names,
    generate_python_case,
    python_batch,
    python_source,
    text_source,
)

_counter = itertools.count()


def load_module(source: str, folder: str, stem: str = "pyfuzz") -> Any:
    """Import ``source`` as a new module from a file of its own in ``folder``."""
    name = f"{stem}_{os.getpid()}_{next(_counter)}"
    path = os.path.join(folder, name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class PyOutcome:
    """What happened to one batch: ``failed`` maps an output name ("*": all of
    them) to a message; ``crash``: an exception other than a TensorIRError."""

    failed: dict[str, str] = field(default_factory=dict)
    crash: str | None = None
    runs: int = 0
    calls: tuple[str, ...] = ()     # mutated calls that broke the call contract
    refused: int = 0                # runs refused as expected (a bound outside its range)
    direct: int = 0                 # runs of direct calls of field operators (GT4Py spelling)
    streamed: tuple[int, int, int] = (0, 0, 0)  # .runner.stream_counts of the compiled program


def compiled_stream_counts(prog: Any) -> tuple[int, int, int]:
    """:func:`.runner.stream_counts` summed over the binaries the decorated
    ``prog`` compiled."""
    from .runner import stream_counts
    counts = [stream_counts(sdfg) for spec in prog._cache.entries()
              if (sdfg := getattr(spec.compiled, "sdfg", None)) is not None]
    maps, rows, flat = (sum(c[k] for c in counts) for k in range(3))
    return maps, rows, flat


def printed_reads_back(prog: Any, out: PyOutcome) -> None:
    """The printed Tensor IR of each specialisation the decorated program's
    calls made parses and type-checks again, as the compile caches,
    ``tensorir-dace`` and DaCe interop read it; noted in ``out`` where it does
    not.  (Not ``prog.format()``: a program that reads half levels has no
    specialisation for the equal lengths that one assumes.)"""
    from ..syntax import format, parse
    from ..typing import check
    for program in prog._ir.values():
        try:
            check(parse(format(program)))
        except Exception as err:   # noqa: BLE001 - any failure is the finding
            out.failed.setdefault("*", "the printed program does not read back: "
                                       f"{type(err).__name__}: {err}")
            return


def _attempt(run, kw: dict[str, Any]) -> tuple[str, Any]:
    """("ok", None), ("error", the TensorIRError) or ("crash", a message)."""
    try:
        run(**kw)
        return "ok", None
    except TensorIRError as err:
        return "error", err
    except Exception as err:   # noqa: BLE001 - the contract allows TensorIRError only
        return "crash", f"{type(err).__name__}: {err}"


def loose(case: PyCase) -> bool:
    """Whether a case's outputs go through float32 (the input ``f`` or a cast)."""
    return re.search(r"\bf\b|float32", " ".join(case.tx_temps + case.tx_body)) is not None


def run_python(cases: list[PyCase], seed: int = 0, names: dict[str, str] | None = None,
               calls: int = 0) -> PyOutcome:
    """Translate, compile once and run the cases' program at both sizes and every
    runtime bound set; compare with the interpreted text program; then ``calls``
    mutated calls, compiled against interpreted (:mod:`.calls`).  ``names``: the
    Python program's parameters renamed (:func:`.builtin_like_names`)."""
    from ..syntax import parse
    from ..typing import check
    text = text_source(cases)
    try:
        check(parse(text))
    except TensorIRError as err:
        return PyOutcome({"*": f"text refused (a generator bug): {err}"})
    outputs = [(o, loose(c)) for c in cases for o, _ in c.outputs]
    with tempfile.TemporaryDirectory(prefix="tir_pyfuzz_") as folder:
        try:
            module = load_module(python_source(cases, names=names), folder)
        except TensorIRError as err:
            return PyOutcome({"*": f"Python program refused: {err}"})
        except Exception as err:   # noqa: BLE001
            return PyOutcome(crash=f"translate: {type(err).__name__}: {err}")
        try:
            return differential(module.fuzz, text, outputs, seed, names, calls)
        finally:
            sys.modules.pop(module.__name__, None)


def differential(prog: Any, text: str, outputs: list[tuple[str, bool]],
                 seed: int = 0, names: dict[str, str] | None = None,
                 calls: int = 0) -> PyOutcome:
    """Run the decorated ``prog`` interpreted and compiled and the Tensor IR
    ``text`` interpreted, at both sizes and every runtime bound set, on the same
    random arguments; compare ``outputs`` (name, whether it went through float32).
    ``names``: the Python names of the text's parameters, where they differ."""
    from ..interpreter import interpret
    from ..syntax import parse
    from ..typing import check
    out = PyOutcome()
    try:
        tprog = check(parse(text))
        prog.format()
    except TensorIRError as err:
        return PyOutcome({"*": f"refused: {err}"})
    except Exception as err:   # noqa: BLE001
        return PyOutcome(crash=f"translate: {type(err).__name__}: {err}")
    tables = {"E2V", "V2E"}

    def python(backend: str):
        def run(**k):   # tables as GT4Py's offset provider: unused ones are ignored
            provider = {t: k.pop(t) for t in tables if t in k}
            prog(**{(names or {}).get(n, n): v for n, v in k.items()},
                 offset_provider=provider, backend=backend)
        return run

    backends = (("text interpreted", lambda **k: interpret(tprog, **k)),
                ("Python interpreted", python("interpreter")),
                ("Python compiled", python("compiled")))
    for sizes, bounds in zip(SIZES, BOUNDS):
        base = random_arguments(tprog, sizes=sizes, seed=seed, absent_fraction=0.25)
        for h0, h1 in bounds:
            args = base | {"h0": h0, "h1": h1}
            where = f"{sizes} h0={h0} h1={h1}"
            results = []
            for label, run in backends:
                kw = clone(args)
                status, detail = _attempt(run, kw)
                out.runs += 1
                if status == "crash":
                    out.crash = f"{label} at {where}: {detail}"
                    return out
                results.append((label, status, detail, kw))
            statuses = {s for _, s, _, _ in results}
            if statuses == {"error"}:
                if all(isinstance(d, ArgumentError) for _, _, d, _ in results):
                    continue
            if statuses != {"ok"}:
                msg = "; ".join(f"{lb}: {d!r}" if s == "error" else f"{lb}: ran"
                                for lb, s, d, _ in results)
                out.failed.setdefault("*", f"at {where}: {msg}")
                return out
            _, _, _, ref = results[0]
            for label, _, _, got in results[1:]:
                for name, is_loose in outputs:
                    if not all(same_values(x, y, is_loose) for x, y in zip(leaves(got[name]),
                                                                      leaves(ref[name]))):
                        out.failed.setdefault(name, f"{label} differs from the text "
                                                    f"interpreter at {where}")
    printed_reads_back(prog, out)
    out.streamed = compiled_stream_counts(prog)
    if calls and not out.failed:
        import random

        from .calls import call_contract
        base = random_arguments(tprog, sizes=SIZES[0], seed=seed, absent_fraction=0.25)
        out.calls = tuple(call_contract(tprog, python("compiled"), base, random.Random(seed),
                                        calls, reference=python("interpreter"),
                                        loose={o for o, is_loose in outputs if is_loose}))
    return out


def case_fails(case: PyCase, seed: int = 0, builtin_names: bool = False,
               stream: int | None = None) -> str | None:
    """Why ``case`` alone fails (None: it passes); ``stream``: the streaming
    threshold to compile with."""
    names = builtin_like_names(seed, [case]) if builtin_names else None
    with streaming_threshold(stream):
        out = run_python([case], seed, names)
    return out.crash or next(iter(out.failed.values()), None)


def run_python_batch(job: tuple
                     ) -> tuple[int, int, list[tuple[int, str]], str | None, tuple[str, ...],
                                tuple[int, int, int]]:
    """Run the ``count`` cases from seed ``first`` as one program (``job``: first,
    count and, optionally, whether its parameters get builtin-like names, how
    many mutated calls to make and the streaming thresholds' mode of
    :func:`.runner.stream_threshold`): (first, runs, [(seed, why)] of failed
    cases, crash, broken calls, :func:`.runner.stream_counts`)."""
    from .runner import stream_threshold
    first, count, *options = job
    builtin_names = bool(options[0]) if options else False
    calls = int(options[1]) if len(options) > 1 else 0
    stream = stream_threshold(first, count, str(options[2]) if len(options) > 2 else "mix",
                              period=2)
    cases = python_batch(first, count)
    names = builtin_like_names(first, cases) if builtin_names else None
    with streaming_threshold(stream):
        out = run_python(cases, seed=first, names=names, calls=calls)
    bad = []
    for c in cases:
        outputs = {o for o, _ in c.outputs}
        for name, why in out.failed.items():
            if name in outputs:
                bad.append((c.seed, why))
                break
    if "*" in out.failed or out.crash:     # pin it on the cases that fail alone
        for c in cases:
            alone = case_fails(generate_python_case(c.seed), first, builtin_names, stream)
            if alone:
                bad.append((c.seed, alone))
    return first, out.runs, bad, out.crash, out.calls, out.streamed


def reproducer(seed: int, reason: str = "", arg_seed: int = 0,
               builtin_names: bool = False) -> str:
    """A runnable module reproducing the case of ``seed``: its Python program, its
    Tensor IR text (``TEXT``) and, run as a script, the differential run on the
    arguments of ``arg_seed`` (``builtin_names``: parameters named as
    :func:`.builtin_like_names` chooses for ``arg_seed``)."""
    case = generate_python_case(seed)
    outputs = [(o, loose(case)) for o, _ in case.outputs]
    names = builtin_like_names(arg_seed, [case]) if builtin_names else None
    why = "".join(f"\n# {line}" for line in reason.splitlines())
    return (f"# seed {seed}, {case.kind}{why}\n" + python_source([case], names=names)
            + '\n\nTEXT = """\n' + text_source([case]) + '"""\n\n'
            + 'if __name__ == "__main__":\n'
            + "    from tensorir_dace.fuzz.python_runner import differential\n"
            + f"    out = differential(fuzz, TEXT, {outputs!r}, seed={arg_seed}, "
            f"names={names!r})\n"
            + '    print(out.crash or out.failed or "passes")\n')


def run_python_front(programs: int, jobs: int, seed: int, size: int,
                     out: pathlib.Path, builtin_names: bool = False,
                     calls: int = 0, stream: str = "mix") -> tuple[str, bool]:
    """Fuzz the Python front: generated programs ``size`` to a compile; each case
    that fails alone is written to ``out`` as a runnable ``.py`` reproducer (not
    shrunk below the one case).  ``builtin_names``: the programs' parameters get
    names of Tensor IR builtins and size symbols; ``stream``: the streaming
    thresholds (:func:`.runner.stream_threshold`).  (A summary line, whether
    anything failed.)"""
    from .runner import (
        batch_outcomes,
        batches,
        run_parallel,
        stream_summary,
        stream_threshold,
        write_broken_calls,
    )
    start = time.time()
    work = [(first, count, builtin_names, calls, stream)
            for first, count in batches(seed, programs, size)]
    threshold = {first: stream_threshold(first, count, stream, period=2)
                 for first, count, *_ in work}
    results = run_parallel(run_python_batch, work, jobs)
    failures, crashes, broken_calls = batch_outcomes(results)
    write_broken_calls(out, "python", broken_calls)
    for s, (first, why) in sorted(failures.items()):
        alone = case_fails(generate_python_case(s), first, builtin_names, threshold[first])
        why += "\nalone: " + (alone or "passes (it failed in its batch only)")
        if threshold[first] is not None:
            why += f"\nwith TENSORIR_DACE_STREAMING_MIN_BYTES={threshold[first]}"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"python_case_{s}.py").write_text(reproducer(s, why, first, builtin_names))
    runs = sum(r[1] for r in results)
    streamed = [r[5] for r in results if threshold[r[0]] == 0]
    summary = (f"Python front: programs {programs}, compiles {len(work)} ({len(streamed)} "
               f"streaming from 0 bytes: {stream_summary(streamed)}), runs {runs}, "
               f"mismatches {len(failures)}, crashes {len(crashes)}, "
               f"mutated calls {calls * len(work)} ({len(broken_calls)} broke the contract), "
               f"{time.time() - start:.0f} s")
    return summary, bool(failures or crashes or broken_calls)
