"""Differential runs of the GT4Py-spelled random programs (:mod:`.gtx_programs`):
the ``@gtx.program`` interpreted, compiled, and compiled without the optimising
passes, at both sizes and every runtime bound set, against the NumPy reference
written beside it; then the calls of the cases made directly from Python
(``op(…, out=…, domain=…, offset_provider=…)``) with each backend on the same
arguments, against their own reference.

A batch's module is written to a file and imported, as for the Python front."""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time
from typing import Any

import numpy as np

from ..errors import TensorIRError
from ..testing import streaming_threshold
from . import gtx_reference as R
from .compare import same_values
from .gtx_programs import (
    BOUNDS,
    INPUTS,
    INTS,
    SIZES,
    TABLES,
    GtxCase,
    generate_gtx_case,
    gtx_batch,
    gtx_source,
)
from .python_runner import (
    PyOutcome,
    _attempt,
    compiled_stream_counts,
    load_module,
    printed_reads_back,
)

# the program interpreted, compiled, and compiled without the optimising passes
BACKENDS = ("interpreter", "compiled", "unoptimised")


def tables(sizes: dict[str, int], seed: int) -> dict[str, Any]:
    """The offset provider of a run: random tables, ``-1`` for absent neighbours
    in those that have some, and ``Koff``."""
    rng = np.random.default_rng(seed)
    names = {"C": "N_C", "E": "N_E", "V": "N_V"}
    out: dict[str, Any] = {}
    for name, (src, tgt, width, absent) in TABLES.items():
        t = rng.integers(0, sizes[names[src]], (sizes[names[tgt]], width)).astype(np.int32)
        if absent:
            t[rng.random(t.shape) < 0.25] = -1
        out[name] = t
    return out


def arguments(cases: list[GtxCase], sizes: dict[str, int], seed: int) -> dict[str, Any]:
    """Random arguments (inputs and outputs) at ``sizes``, without the ints."""
    rng = np.random.default_rng(seed)
    length = {"C": sizes["N_C"], "E": sizes["N_E"], "V": sizes["N_V"], "K": sizes["N_K"],
              "KH": sizes["N_K"] + 1}
    length |= {n: s[2] for n, s in TABLES.items()}

    def value(t, half=False):
        shape = tuple(length[d] + (1 if d == "K" and half else 0) for d in t.dims())
        if t.dt == "int32":
            return rng.integers(-3, 4, shape).astype(np.int32)
        x = rng.normal(size=shape)
        return np.float32(x) if t.dt == "float32" and not shape else \
            x.astype(t.dt) if shape else float(x)
    args = {i.name: value(i.t, i.half) for i in INPUTS}
    for c in cases:
        for o, t in c.outputs:
            args[o] = value(t)
    return args


def differential(module: Any, outputs: list[str], seed: int = 0, calls: int = 0) -> PyOutcome:
    """Run ``module.fuzz`` with each backend and ``module.reference`` on the same
    arguments; compare ``outputs``; then the direct calls of ``module.DIRECT``
    (:func:`direct_runs`); then ``calls`` mutated calls, compiled against
    interpreted (:mod:`.gtx_calls`)."""
    out = PyOutcome()
    program_runs(module, outputs, seed, out)
    out.streamed = compiled_stream_counts(module.fuzz)
    if out.crash is None:
        printed_reads_back(module.fuzz, out)
        direct_runs(module, seed, out)
    if calls and not out.failed:
        import random

        from .gtx_calls import gtx_call_contract
        sizes = SIZES[0]
        hs, he, k0 = next(b for b in BOUNDS[0] if b[2] >= module.K0_MIN)
        args = arguments([], sizes, seed) | module.OUTPUT_ARRAYS(sizes, np.random.default_rng(seed))
        args |= {"hs": hs, "he": he, "k0": k0, "nlev": sizes["N_K"]}
        try:
            out.calls = tuple(gtx_call_contract(module.fuzz, args, tables(sizes, seed),
                                                random.Random(seed), calls))
        except Exception as err:   # noqa: BLE001 - the valid call it starts from failed
            out.failed.setdefault("*", f"the valid call of the call contract failed: "
                                       f"{type(err).__name__}: {err}")
    return out


def program_runs(module: Any, outputs: list[str], seed: int, out: PyOutcome) -> None:
    """The program's runs of :func:`differential`, noted in ``out``."""
    from ..frontend import program
    progs = {"interpreter": module.fuzz, "compiled": module.fuzz,
             "unoptimised": program(module.fuzz.fn, optimize="none")}
    for n, sizes in enumerate(SIZES):
        provider = tables(sizes, seed + n)
        base = arguments([], sizes, seed + n)
        for hs, he, k0 in BOUNDS[n]:
            ints = {"hs": hs, "he": he, "k0": k0, "nlev": sizes["N_K"]}
            where = f"{sizes} hs={hs} he={he} k0={k0}"
            args = dict(base)
            rng = np.random.default_rng(seed + 7 * n + hs)
            for o in outputs:
                args[o] = module.OUTPUT_ARRAYS(sizes, rng)[o]
            args |= ints
            if k0 < module.K0_MIN:     # refused, unless the domain is empty
                verdict = _refused(progs, args, provider, outputs, where)
                if verdict is None:
                    out.runs += len(BACKENDS)
                    out.refused += len(BACKENDS)
                    continue
                if verdict != "ran":
                    out.failed.setdefault("*", verdict)
                    return
            ref = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
            bad: list[str] = []
            R.set_mesh(sizes, provider)
            try:
                module.reference(ref, bad)
            except Exception as err:    # noqa: BLE001
                out.failed.setdefault("*", f"reference failed (a generator bug) at {where}: "
                                           f"{type(err).__name__}: {err}")
                return
            if bad:
                out.failed.setdefault("*", f"generator bug at {where}: {bad}")
                return
            for backend in BACKENDS:
                kw = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
                prog = progs[backend]
                fields = backend == "compiled" and (seed + n + hs) % 2 == 1
                given = as_fields(prog.fn, kw) if fields else kw
                status, detail = _attempt(
                    lambda f=prog, p=provider, b=backend, **k: f(
                        **k, offset_provider=p, backend="interpreter" if b == "interpreter"
                        else "compiled"), given)
                if fields:
                    kw |= {k: v.asnumpy() for k, v in given.items() if hasattr(v, "asnumpy")}
                out.runs += 1
                if status == "crash":
                    out.crash = f"{backend} at {where}: {detail}"
                    return
                if status == "error":
                    out.failed.setdefault("*", f"{backend} at {where}: {detail!r}")
                    return
                for o in outputs:
                    if not same_values(kw[o], ref[o], loose=True):
                        out.failed.setdefault(o, f"{backend} differs from the reference at "
                                                 f"{where}")


def as_fields(fn: Any, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with each array of a parameter annotated ``Field[[…], …]`` made
    a field by GT4Py's ``as_field`` over those dimensions (a copy, as
    GT4Py's is: read the outputs back with ``asnumpy()``)."""
    from ..frontend import as_field
    from ..frontend.annotations import annotation_spec, evaluated_annotation
    anns = getattr(fn, "__annotations__", {})
    out = dict(args)
    for name, v in args.items():
        if not isinstance(v, np.ndarray) or name not in anns:
            continue
        spec = annotation_spec(evaluated_annotation(fn, anns[name]))
        if spec is not None and len(spec.dims) == v.ndim:
            out[name] = as_field(spec.dims, v)
    return out


def direct_fields(fn: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A direct call's arguments with its input arrays made fields
    (:func:`as_fields`) and a single array ``out=`` given its dimensions by
    ``with_dims`` (written in place), where the annotations say them."""
    import inspect

    from ..frontend import with_dims
    from ..frontend.annotations import annotation_spec, evaluated_annotation
    bound = inspect.signature(fn).bind_partial(*args, **{k: v for k, v in kwargs.items()
                                                       if k not in ("out", "domain")})
    fields = as_fields(fn, dict(bound.arguments))
    for name, v in fields.items():
        bound.arguments[name] = v
    kw = {k: v for k, v in kwargs.items() if k in ("out", "domain")} | dict(bound.kwargs)
    ret = getattr(fn, "__annotations__", {}).get("return")
    spec = annotation_spec(evaluated_annotation(fn, ret)) if ret is not None else None
    o = kw.get("out")
    if isinstance(o, np.ndarray) and spec is not None and len(spec.dims) == o.ndim and \
            not isinstance(spec.dtype, tuple):
        kw["out"] = with_dims(o, *spec.dims)
    return tuple(bound.args), kw


class _Refused(Exception):
    """A direct call refused with a TensorIRError: its index, the error and the
    outputs it wrote before (by position in ``out=``)."""

    def __init__(self, index: int, error: TensorIRError, wrote: list[int]):
        super().__init__(index)
        self.index, self.error, self.wrote = index, error, wrote


class _Crash(Exception):
    """A direct call that raised something other than a TensorIRError."""

    def __init__(self, index: int, message: str):
        super().__init__(index)
        self.index, self.message = index, message


def direct_runs(module: Any, seed: int, out: PyOutcome) -> None:
    """The cases of ``module.DIRECT`` made as direct calls of their field operators
    (``op(…, out=…, domain=…, offset_provider=…)``, the bounds Python ints) with
    each backend on the arguments of the program's runs, against their own
    reference; a failure is noted under the case's first output."""
    cases = getattr(module, "DIRECT", [])
    unoptimised: dict[int, Any] = {}
    failed: set[int] = set()
    for n, sizes in enumerate(SIZES):
        provider = tables(sizes, seed + n)
        base = arguments([], sizes, seed + n)
        for hs, he, k0 in BOUNDS[n]:
            args = base | module.OUTPUT_ARRAYS(sizes, np.random.default_rng(seed + 7 * n + hs),
                                               direct=True)
            args |= {"hs": hs, "he": he, "k0": k0, "nlev": sizes["N_K"]}
            where = f"{sizes} hs={hs} he={he} k0={k0}"
            for c in cases:
                if c["seed"] in failed:
                    continue
                why = _direct_case(c, args, sizes, provider, unoptimised, where, out)
                if why is not None:
                    failed.add(c["seed"])
                    out.failed.setdefault(c["calls"][0][0][0], f"direct calls: {why}")


def _direct_case(c: dict[str, Any], args: dict[str, Any], sizes: dict[str, int],
                 provider: dict[str, Any], unoptimised: dict[int, Any], where: str,
                 out: PyOutcome) -> str | None:
    """Case ``c`` of ``DIRECT`` at one bound set with every backend: what went
    wrong, or None.  A call whose domain starts below what it allows (its
    smallest ``k0``) is refused with a TensorIRError before writing its
    outputs (then the later calls are not made), or runs: where its domain
    needs no level of the gap, or where the levels the reference leaves
    undefined are GT4Py's (a value shifted up, then down again, is defined
    below level 0 in between); from there on the backends are compared with
    each other.  Every other call runs and matches the reference."""
    def copies(a: dict[str, Any]) -> dict[str, Any]:
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in a.items()}
    k0 = args["k0"]
    ref, bad = copies(args), list[str]()
    R.set_mesh(sizes, provider)
    try:
        c["reference"](ref, bad)
    except Exception as err:    # noqa: BLE001
        return f"reference failed (a generator bug) at {where}: {type(err).__name__}: {err}"
    stops: dict[str, int | None] = {}
    first: dict[str, Any] | None = None      # the first backend's outputs
    for backend in BACKENDS:
        kw = copies(args)
        out.direct += 1
        stop = None
        try:
            c["run"](kw, _caller(backend, c["plain"], provider, unoptimised))
        except _Crash as crash:
            return f"{backend} at {where}: call {crash.index} crashed: {crash.message}"
        except _Refused as refused:
            i, why = refused.index, refused.error
            if k0 >= c["calls"][i][1]:
                return f"{backend} at {where}: call {i} refused: {why}"
            if refused.wrote:
                names = [c["calls"][i][0][j] for j in refused.wrote]
                return (f"{backend} at {where}: call {i} refused after writing "
                        f"{', '.join(names)}: {why}")
            stop = i
        stops[backend] = stop
        made = c["calls"] if stop is None else c["calls"][:stop]
        checked = True     # against the reference, else against the first backend
        for j, (outputs, k0_min) in enumerate(made):
            undefined = [b for b in bad if b.split(":")[0] in outputs]
            if undefined and k0 >= k0_min:
                return (f"generator bug at {where}: call {j} writes undefined points: "
                        f"{undefined}")
            checked = checked and not undefined
            for o in outputs:
                if checked and not same_values(kw[o], ref[o], loose=True):
                    return f"{backend} at {where}: call {j} differs from the reference in {o}"
                if not checked and first is not None and \
                        not same_values(kw[o], first[o], loose=True):
                    return (f"{backend} at {where}: call {j} (k0 below its smallest, "
                            f"{k0_min}) differs from {BACKENDS[0]} in {o}")
        if first is None:
            first = kw
    if len(set(stops.values())) > 1:
        return f"the backends disagree on refusing at {where}: {stops}"
    if stops.get(BACKENDS[0]) is not None:
        out.refused += len(BACKENDS)
    return None


def _caller(backend: str, plain: bool, provider: dict[str, Any], unoptimised: dict[int, Any]
            ) -> Any:
    """The ``call(i, op, *args, **kw)`` of a case's ``direct_K``: ``op`` called
    with ``offset_provider=`` and ``backend=`` (none for compiled calls where
    ``plain``; the unoptimised backend: ``op`` decorated again without the
    optimising passes)."""
    from ..frontend import function

    def call(i: int, op: Any, *a: Any, **k: Any) -> None:
        outs = list(k["out"]) if isinstance(k["out"], tuple) else [k["out"]]
        before = [o.copy() for o in outs]
        if backend == "unoptimised":
            op = unoptimised.setdefault(id(op), function(op.fn, optimize="none"))
        named = {} if plain and backend != "interpreter" else \
            {"backend": "interpreter" if backend == "interpreter" else "compiled"}
        if backend == "compiled" and i % 2 == 1:
            a, k = direct_fields(op.fn, a, k)
        try:
            op(*a, **k, offset_provider=provider, **named)
        except TensorIRError as err:
            wrote = [j for j, (o, b) in enumerate(zip(outs, before))
                     if not np.array_equal(o, b, equal_nan=True)]
            raise _Refused(i, err, wrote) from None
        except Exception as err:    # noqa: BLE001 - only a TensorIRError may come out
            raise _Crash(i, f"{type(err).__name__}: {err}") from None
    return call


def _refused(progs: dict[str, Any], args: dict[str, Any], provider: dict[str, Any],
             outputs: list[str], where: str) -> str | None:
    """Check a call whose ``k0`` lies below what its domains allow: None where
    every backend refused it with a TensorIRError before writing, ``"ran"``
    where every backend ran it (its domain is empty: no level is computed), else
    what went wrong."""
    statuses = set()
    for backend in BACKENDS:
        kw = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        status, detail = _attempt(
            lambda f=progs[backend], b=backend, **k: f(
                **k, offset_provider=provider, backend="interpreter" if b == "interpreter"
                else "compiled"), kw)
        statuses.add(status)
        if status == "crash":
            return f"{backend} at {where}: {detail}"
        if status == "error" and any(not np.array_equal(kw[o], args[o], equal_nan=True)
                                     for o in outputs):
            return f"{backend} at {where}: refused after writing an output"
    if statuses == {"ok"}:
        return "ran"
    return None if statuses == {"error"} else \
        f"the backends disagree on refusing k0 below the domain's start at {where}"


def source(cases: list[GtxCase]) -> str:
    """The module of ``cases`` with ``OUTPUT_ARRAYS(sizes, rng)``."""
    shapes = []
    direct = [x for c in cases if c.direct for x in c.direct.outputs]
    for o, t in [x for c in cases for x in c.outputs] + direct:
        shapes.append(f"    {o!r}: ({', '.join(repr(d) for d in t.dims())}, {t.dt!r}),")
    direct_only = sorted({o for o, _ in direct} - {o for c in cases for o, _ in c.outputs})
    return (gtx_source(cases) + "\n\nOUTPUTS = {\n" + "\n".join(shapes) + "\n}\n\n\n"
            f"DIRECT_ONLY = {direct_only!r}\n\n\n"
            f"K0_MIN = {max((c.k0_min for c in cases), default=1)}\n\n\n"
            "def OUTPUT_ARRAYS(sizes, rng, direct=False):\n"
            '    """Random initial values of the program\'s outputs (``direct``: also\n'
            '    of those only the direct calls write)."""\n'
            "    from tensorir_dace.fuzz.gtx_runner import output_arrays\n"
            "    res = output_arrays(OUTPUTS, sizes, rng)\n"
            "    return res if direct else {o: v for o, v in res.items()\n"
            "                               if o not in DIRECT_ONLY}\n")


def output_arrays(outputs: dict[str, tuple], sizes: dict[str, int], rng: Any) -> dict:
    length = {"C": sizes["N_C"], "E": sizes["N_E"], "V": sizes["N_V"], "K": sizes["N_K"],
              "KH": sizes["N_K"] + 1}
    res = {}
    for o, (*dims, dt) in outputs.items():
        shape = tuple(length[d] for d in dims)
        res[o] = rng.integers(-3, 4, shape).astype(np.int32) if dt == "int32" \
            else rng.normal(size=shape).astype(dt)
    return res


def run_gtx(cases: list[GtxCase], seed: int = 0, calls: int = 0) -> PyOutcome:
    """Import the cases' module, run it (see :func:`differential`)."""
    outputs = [o for c in cases for o, _ in c.outputs]
    with tempfile.TemporaryDirectory(prefix="tir_gtxfuzz_") as folder:
        try:
            module = load_module(source(cases), folder, "gtxfuzz")
        except Exception as err:   # noqa: BLE001
            return PyOutcome(crash=f"import: {type(err).__name__}: {err}")
        try:
            return differential(module, outputs, seed, calls)
        finally:
            sys.modules.pop(module.__name__, None)


def case_fails(case: GtxCase, seed: int = 0, stream: int | None = None) -> str | None:
    """Why ``case`` alone fails (None: it passes); ``stream``: the streaming
    threshold to compile with."""
    with streaming_threshold(stream):
        out = run_gtx([case], seed)
    return out.crash or next(iter(out.failed.values()), None)


def run_gtx_batch(job: tuple) -> tuple[int, tuple[int, int, int], list[tuple[int, str]],
                                       str | None, tuple[str, ...], tuple[int, int, int]]:
    """Run the ``count`` cases from seed ``first`` as one program (``job``: first,
    count and optionally how many mutated calls to make and the streaming
    thresholds' mode of :func:`.runner.stream_threshold`): (first, (runs of the
    program, runs of direct calls, runs refused as expected), [(seed, why)] of
    failed cases, crash, broken calls, :func:`.runner.stream_counts` of the
    program)."""
    from .runner import stream_threshold
    first, count = job[:2]
    calls = int(job[2]) if len(job) > 2 else 0
    stream = stream_threshold(first, count, str(job[3]) if len(job) > 3 else "mix", period=2)
    cases = gtx_batch(first, count)
    with streaming_threshold(stream):
        out = run_gtx(cases, seed=first, calls=calls)
    bad = []
    for c in cases:
        outputs = {o for o, _ in c.outputs + (c.direct.outputs if c.direct else [])}
        for name, why in out.failed.items():
            if name in outputs:
                bad.append((c.seed, why))
                break
    if "*" in out.failed or out.crash:     # pin it on the cases that fail alone
        for c in cases:
            alone = case_fails(generate_gtx_case(c.seed), first, stream)
            if alone:
                bad.append((c.seed, alone))
    return first, (out.runs, out.direct, out.refused), bad, out.crash, out.calls, out.streamed


def reproducer(seed: int, reason: str = "", arg_seed: int = 0) -> str:
    """A runnable module reproducing the case of ``seed``: run as a script, the
    differential run on the arguments of ``arg_seed``."""
    case = generate_gtx_case(seed)
    why = "".join(f"\n# {line}" for line in reason.splitlines())
    outputs = [o for o, _ in case.outputs]
    return (f"# seed {seed}{why}\n" + source([case])
            + '\n\nif __name__ == "__main__":\n'
            + "    import sys\n"
            + "    from tensorir_dace.fuzz.gtx_runner import differential\n"
            + f"    out = differential(sys.modules[__name__], {outputs!r}, seed={arg_seed})\n"
            + '    print(out.crash or out.failed or "passes")\n')


def run_gtx_front(programs: int, jobs: int, seed: int, size: int, out: pathlib.Path,
                  calls: int = 0, stream: str = "mix") -> tuple[str, bool]:
    """Fuzz the GT4Py spelling: generated programs ``size`` to a compile; each
    case that fails alone is written to ``out`` as a runnable ``.py``
    reproducer; ``stream``: the streaming thresholds
    (:func:`.runner.stream_threshold`, every other batch).  (A summary line,
    whether anything failed.)"""
    from .runner import (
        batch_outcomes,
        batches,
        run_parallel,
        stream_summary,
        stream_threshold,
        write_broken_calls,
    )
    start = time.time()
    work = [(first, count, calls, stream) for first, count in batches(seed, programs, size)]
    threshold = {w[0]: stream_threshold(w[0], w[1], stream, period=2) for w in work}
    results = run_parallel(run_gtx_batch, work, jobs)
    failures, crashes, broken_calls = batch_outcomes(results)
    write_broken_calls(out, "gtx", broken_calls)
    for s, (first, why) in sorted(failures.items()):
        alone = case_fails(generate_gtx_case(s), first, threshold[first])
        why += "\nalone: " + (alone or "passes (it failed in its batch only)")
        if threshold[first] is not None:
            why += f"\nwith TENSORIR_DACE_STREAMING_MIN_BYTES={threshold[first]}"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"gtx_case_{s}.py").write_text(reproducer(s, why, first))
    runs, direct, refused = (sum(r[1][i] for r in results) for i in range(3))
    streamed = [r[5] for r in results if threshold[r[0]] == 0]
    summary = (f"GT4Py front: programs {programs}, compiles {len(work)} ({len(streamed)} "
               f"streaming from 0 bytes: {stream_summary(streamed)}), runs {runs}, "
               f"mismatches {len(failures)}, crashes {len(crashes)}, "
               f"direct-call runs {direct}, refused as expected {refused}, "
               f"mutated calls {calls * len(work)} ({len(broken_calls)} broke the contract), "
               f"{time.time() - start:.0f} s")
    return summary, bool(failures or crashes or broken_calls)


__all__ = ["INTS", "case_fails", "differential", "reproducer", "run_gtx", "run_gtx_batch",
           "run_gtx_front"]
