"""Differential runs of generated programs: check, compile, interpret, compare;
delta debugging of a failing case down to a minimal program."""

from __future__ import annotations

import itertools
import multiprocessing
import pathlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import ir
from ..errors import ArgumentError, TensorIRError
from ..testing import clone, leaves, random_arguments, streaming_threshold
from .compare import same_values
from .generator import BOUNDS, SIZES, Case, batch, generate_case, program_text


@dataclass
class Outcome:
    """What happened to one batch: ``failed`` maps a case's output name to a message."""

    statements: int
    failed: dict[str, str]
    crash: str | None = None      # an exception other than TensorIRError
    calls: tuple[str, ...] = ()   # mutated calls that broke the call contract (see .calls)
    streamed: tuple[int, int, int] = (0, 0, 0)    # see stream_counts


#: Marks of the code of the passes for large outputs, as :func:`stream_counts` counts them.
STREAM_MARKS = ("_TIR_STREAM(_st_out", "_tir_stage_end_", "if (_fflat) {")


def stream_counts(sdfg: Any) -> tuple[int, int, int]:
    """The code of ``sdfg`` that streams an output: (maps streamed by
    :mod:`~tensorir_dace.transforms.streaming_stores`, groups of statements
    fused in rows with a streamed output, of which with flat rows), each run
    when the output is at least the streaming threshold large (counted in the
    tasklets' code: tasklets of independent maps may be merged into one)."""
    codes = [n.code.as_string for n, _ in sdfg.all_nodes_recursive()
             if hasattr(n, "code") and hasattr(n.code, "as_string")]
    maps, rows, flat = (sum(c.count(mark) for c in codes) for mark in STREAM_MARKS)
    return maps, rows, flat


def stream_threshold(first: int, count: int, mode: str = "mix", period: int = 3
                     ) -> int | None:
    """The streaming threshold (bytes) the batch from seed ``first`` is compiled
    with: ``mode`` "mix" gives every ``period``-th batch 0 (every output
    streamed, so that the streamed branches run on the small arrays) and the
    others None (the environment's, by default 8 MiB: regular stores for
    them); "default" None; a number that.  With the text front's period of 3 that is every other
    optimised batch (:func:`batch_options`); the Python front, whose batches
    are all optimised, takes 2."""
    if mode == "mix":
        return 0 if (first // max(count, 1)) % period == 0 else None
    return None if mode == "default" else int(mode)


def run_text(text: str, seed: int = 0, compile_kw: dict | None = None,
             calls: int = 0, stream: int | None = None) -> Outcome:
    """Check, compile once, run at both sizes against the interpreter; then
    ``calls`` mutated calls (:func:`.calls.call_contract`).  ``stream``: the
    streaming threshold to compile with (:func:`stream_threshold`)."""
    with streaming_threshold(stream):
        return _run_text(text, seed, compile_kw, calls)


def _run_text(text: str, seed: int, compile_kw: dict | None, calls: int) -> Outcome:
    from ..runtime.program import compile
    from ..syntax import parse
    from ..typing import check
    prog = parse(text)
    statements = sum(1 for n in ir.walk(prog) if isinstance(n, ir.Assign))
    failed: dict[str, str] = {}
    try:
        check(prog)
    except TensorIRError as err:
        return Outcome(statements, {"*": f"refused by the checker: {err}"})
    try:
        binary = compile(prog, **(compile_kw or {}))
    except TensorIRError as err:
        return Outcome(statements, {"*": f"accepted but not compiled: {err}"})
    except Exception as err:   # noqa: BLE001 - the contract allows TensorIRError only
        return Outcome(statements, {}, crash=f"compile: {type(err).__name__}: {err}")
    for sizes, bounds in zip(SIZES, BOUNDS):
        base = random_arguments(prog, sizes=sizes, seed=seed, absent_fraction=0.25)
        for hs in bounds:     # runtime bounds: several values through the same binary
            args = base | {h: v for h, v in hs.items() if h in base}
            why = _run_once(prog, binary, args, f"{sizes} {hs}", failed)
            if why is not None:
                return Outcome(statements, {}, crash=why) if why.startswith("crash") \
                    else Outcome(statements, {"*": why})
    broken: list[str] = []
    if calls:
        from .calls import call_contract
        args = random_arguments(prog, sizes=SIZES[0], seed=seed, absent_fraction=0.25)
        broken = call_contract(prog, binary, args, random.Random(seed), calls)
    streamed = stream_counts(binary.sdfg) if (compile_kw or {}).get("optimize", "default") \
        != "none" else (0, 0, 0)
    return Outcome(statements, failed, calls=tuple(broken), streamed=streamed)


def _run_once(prog, binary, args, where: str, failed: dict[str, str]) -> str | None:
    """Run the interpreter and ``binary`` on copies of ``args``; record differing
    outputs in ``failed``.  An ``ArgumentError`` from both (bounds out of range) is
    agreement."""
    from ..interpreter import interpret
    ref, out = clone(args), clone(args)
    errors: list[TensorIRError | None] = []
    for run, kw in ((lambda **k: interpret(prog, **k), ref), (binary, out)):
        try:
            run(**kw)
            errors.append(None)
        except TensorIRError as err:
            errors.append(err)
        except Exception as err:   # noqa: BLE001 - the contract allows TensorIRError only
            return f"crash: run at {where}: {type(err).__name__}: {err}"
    if errors[0] is not None or errors[1] is not None:
        if all(isinstance(e, ArgumentError) for e in errors):
            return None
        return f"run at {where}: interpreter {errors[0]!r}, compiled {errors[1]!r}"
    for name in ref:
        if isinstance(args[name], (np.ndarray, tuple)) and not all(
                same_values(x, y)
                for x, y in zip(leaves(out[name]), leaves(ref[name]))):
            failed.setdefault(name, f"compiled and interpreted differ at {where}")
    return None


def batch_options(first: int, count: int) -> dict:
    """The compile options of the batch from seed ``first``: every third batch
    compiles without optimisation, so that the unoptimised lowering (what the
    passes start from) is compared with the interpreter too."""
    return {"optimize": "none"} if (first // max(count, 1)) % 3 == 2 else {}


def case_fails(case: Case, seed: int = 0, stream: int | None = None) -> str | None:
    """Why ``case`` alone fails, optimised or not (None: it passes); ``stream``:
    the streaming threshold."""
    for options in ({}, {"optimize": "none"}):
        try:
            out = run_text(program_text([case]), seed, options, stream=stream)
        except TensorIRError as err:
            return f"refused: {err}"
        if out.crash:
            return out.crash
        why = next(iter(out.failed.values()), None)
        if why is not None:
            return why + (" (optimize='none')" if options else "")
    return None


def run_batch(job: tuple
              ) -> tuple[int, int, list[tuple[int, str]], str | None, tuple[str, ...],
                         tuple[int, int, int]]:
    """Run the ``count`` cases from seed ``first`` as one program, and ``calls``
    mutated calls of it, compiled with the streaming threshold of ``mode``
    (:func:`stream_threshold`; ``job``: first, count, calls and, optionally,
    mode): (first, statements, [(seed, why)] of failed cases, crash, broken
    calls, :func:`stream_counts`)."""
    first, count, calls, *mode = job
    cases = batch(first, count)
    out = run_text(program_text(cases), seed=first, compile_kw=batch_options(first, count),
                   calls=calls, stream=stream_threshold(first, count, *mode))
    bad = []
    for c in cases:
        names = {o.split(":")[0] for o in c.outputs}
        for name, why in out.failed.items():
            if name == "*" or name in names:
                bad.append((c.seed, why))
                break
    return first, out.statements, bad, out.crash, out.calls, out.streamed


def batches(seed: int, programs: int, size: int) -> list[tuple[int, int]]:
    """The (first seed, count) jobs that split ``programs`` seeds from ``seed``."""
    return [(s, min(size, seed + programs - s)) for s in range(seed, seed + programs, size)]


def batch_outcomes(results: list[tuple]) -> tuple[dict[int, tuple[int, str]], list[int],
                                                  list[tuple[int, str]]]:
    """The failed cases ({seed: (first seed of the batch, why)}), the batches that
    crashed and the broken calls ((first, why)) of the Python-module fronts'
    batch results ``(first, runs, bad, crash, broken calls)``."""
    failures = {s: (first, why) for first, _, bad, _, _, *_ in results for s, why in bad}
    crashes = [first for first, _, _, crash, *_ in results if crash]
    broken = [(first, why) for first, _, _, _, calls, *_ in results for why in calls]
    return failures, crashes, broken


def write_broken_calls(out: pathlib.Path, front: str, broken: list[tuple[int, str]]) -> None:
    """Each batch's broken calls, a line each, in ``<front>_calls_<first>.txt``."""
    for first, why in broken:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / f"{front}_calls_{first}.txt", "a") as fh:
            fh.write(why + "\n")


def run_parallel(fn: Callable, jobs: list, processes: int) -> list:
    """``fn`` over ``jobs`` in ``processes`` fresh processes (one compile each)."""
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.map(fn, jobs, chunksize=1)


def run_text_front(programs: int, jobs: int, seed: int, size: int, parser: int,
                   out: pathlib.Path, calls: int = 0, stream: str = "mix") -> tuple[str, bool]:
    """Fuzz the text front: generated programs ``size`` to a compile, each failure
    shrunk and written to ``out`` as a ``.tir`` file, and ``calls`` mutated calls
    per compile (the broken ones written beside the program); then ``parser``
    mutated texts.  ``stream``: the streaming thresholds (:func:`stream_threshold`).
    (A summary line, whether anything failed.)"""
    start = time.time()
    work = batches(seed, programs, size)
    results = run_parallel(run_batch, [(first, count, calls, stream) for first, count in work],
                           jobs)
    statements = sum(r[1] for r in results)
    threshold = {first: stream_threshold(first, count, stream) for first, count in work}
    failures = [(s, why, threshold[r[0]]) for r in results for s, why in r[2]]
    crashes = [(r[0], r[3]) for r in results if r[3]]
    for first, _ in crashes:     # pin a crash on its cases
        for k in range(size):
            reason = case_fails(generate_case(first + k), stream=threshold[first])
            if reason:
                failures.append((first + k, reason, threshold[first]))
    for s, _, at in failures:
        small, reason = shrink(generate_case(s), s, stream=at)
        out.mkdir(parents=True, exist_ok=True)
        where = "" if at is None else f" (TENSORIR_DACE_STREAMING_MIN_BYTES={at})"
        (out / f"case_{s}.tir").write_text(
            f"# seed {s}, {small.kind}{where}: {reason}\n" + program_text([small]))
    broken_calls = [(r[0], why) for r in results for why in r[4]]
    for first, group in itertools.groupby(broken_calls, key=lambda x: x[0]):
        out.mkdir(parents=True, exist_ok=True)
        count = next(c for f, c in work if f == first)
        (out / f"calls_{first}.tir").write_text(
            "".join(f"# {why}\n" for _, why in group)
            + program_text(batch(first, count)))
    bad_texts = fuzz_parser(parser, seed)
    for k, (text, why) in enumerate(bad_texts):
        out.mkdir(parents=True, exist_ok=True)
        (out / f"parser_{k}.tir").write_text(f"# {why}\n{text}")
    streamed = [r[5] for r in results if threshold[r[0]] == 0]
    summary = (f"text front: programs {programs}, statements {statements}, "
               f"compiles {len(work)} ({sum(bool(batch_options(*w)) for w in work)} "
               f"unoptimised, {len(streamed)} streaming from 0 bytes: "
               f"{stream_summary(streamed)}), mismatches {len(failures)}, "
               f"crashes {len(crashes)}, "
               f"mutated calls {calls * len(work)} ({len(broken_calls)} broke the contract), "
               f"parser texts {parser} ({len(bad_texts)} escaped), "
               f"{time.time() - start:.0f} s")
    return summary, bool(failures or crashes or bad_texts or broken_calls)


def stream_summary(counts: list[tuple[int, int, int]]) -> str:
    """What the compiles streaming from 0 bytes ran (:func:`stream_counts` of each)."""
    maps, rows, flat = (sum(c[k] for c in counts) for k in range(3))
    return f"{maps} streamed maps, {rows} fused groups streamed, {flat} of them in flat rows"


# --------------------------------------------------------------------------- shrinking


def _replace(node, old, new):
    """``node`` with the sub-node ``old`` (by identity) replaced by ``new``."""
    if node is old:
        return new
    match node:
        case ir.Call(func=f, args=args):
            return replace(node, func=_replace(f, old, new),
                           args=tuple(_replace(a, old, new) for a in args))
        case ir.Lambda(body=b):
            return replace(node, body=_replace(b, old, new))
    return node


def _simpler(stmt: str, program_of: Callable[[str], str]) -> list[str]:
    """Candidate simplifications of one statement: a call replaced by one of its
    arguments of the same type."""
    from ..syntax import format as fmt
    from ..syntax import parse
    from ..typing import check
    try:
        typed = check(parse(program_of(stmt)))
    except TensorIRError:
        return []
    (assign,) = [n for n in ir.walk(typed) if isinstance(n, ir.Assign)][-1:]
    out = []
    for node in ir.walk(assign.value):
        if isinstance(node, ir.Call) and not isinstance(node.func, ir.Lambda):
            for a in node.args:
                if isinstance(a, (ir.Call, ir.Sym, ir.Literal)) and a.type == node.type:
                    new = replace(assign, value=_replace(assign.value, node, a))
                    out.append(fmt(new).rstrip(";"))
    return out


def shrink(case: Case, seed: int = 0, budget: int = 40,
           stream: int | None = None) -> tuple[Case, str]:
    """A smaller case that still fails: statements dropped, then calls replaced by
    their arguments (greedy delta debugging, at most ``budget`` runs; ``stream``:
    the streaming threshold)."""
    reason = case_fails(case, seed, stream) or "passes"
    runs = 1
    stmts = list(case.statements)
    i = 0
    while i < len(stmts) and runs < budget and len(stmts) > 1:
        trial = replace(case, statements=tuple(stmts[:i] + stmts[i + 1:]))
        runs += 1
        why = case_fails(trial, seed, stream)
        if why is not None and not why.startswith("refused"):
            stmts, case, reason = list(trial.statements), trial, why
        else:
            i += 1
    changed = True
    while changed and runs < budget:
        changed = False
        for k, stmt in enumerate(stmts):
            def program_of(s: str, k=k, case=case, stmts=stmts) -> str:
                return program_text([replace(case, statements=tuple(
                    stmts[:k] + [s] + stmts[k + 1:]))])
            for cand in _simpler(stmt, program_of):
                if runs >= budget:
                    break
                trial = replace(case, statements=tuple(stmts[:k] + [cand] + stmts[k + 1:]))
                runs += 1
                why = case_fails(trial, seed, stream)
                if why is not None and not why.startswith("refused"):
                    stmts, case, reason, changed = list(trial.statements), trial, why, True
                    break
            if changed:
                break
    return case, reason


# --------------------------------------------------------------------------- parser


def mutate(text: str, r: random.Random) -> str:
    """``text`` with a few characters or tokens deleted, duplicated or swapped."""
    for _ in range(r.randint(1, 4)):
        if not text:
            break
        i, j = sorted(r.randrange(len(text)) for _ in range(2))
        op = r.randrange(5)
        if op == 0:
            text = text[:i] + text[i + 1:]
        elif op == 1:
            text = text[:i] + text[i] + text[i:]
        elif op == 2:
            text = text[:i] + text[j] + text[i + 1:j] + text[i] + text[j + 1:]
        else:
            words = text.split(" ")
            a, b = r.randrange(len(words)), r.randrange(len(words))
            if op == 3:
                words[a], words[b] = words[b], words[a]
            else:
                words.insert(a, words[b])
            text = " ".join(words)
    return text


def fuzz_parser(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """Parse and check ``count`` mutated programs; the (text, error) pairs where
    anything but a TensorIRError came out."""
    from ..syntax import parse
    from ..typing import check
    r = random.Random(seed)
    bad = []
    for k in range(count):
        base = program_text([generate_case(seed + k * 7 + i) for i in range(2)])
        text = mutate(base, r)
        try:
            check(parse(text))
        except TensorIRError:
            pass
        except Exception as err:   # noqa: BLE001
            bad.append((text, f"{type(err).__name__}: {err}"))
    return bad
