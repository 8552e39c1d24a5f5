"""Random programs for the Python front end (``tensorir_dace.fuzz``): each is
written as a decorated module and as Tensor IR text; the module interpreted and
compiled must agree with the interpreted text at two sets of sizes and several
runtime bounds.  A fixed set of seeded batches runs here, one compile each; the
command ``python -m tensorir_dace.fuzz --front python`` runs any number."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import assert_same_results
from tensorir_dace import fuzz
from tensorir_dace.frontend import Tensor, astype, dims, float32, function, int32, program

# Three batches of generated cases, each one compiled program; together they
# hold every kind of case.
BATCHES = [(0, 8), (136, 8), (728, 8)]


def test_the_python_generator_covers_every_kind_and_spelling():
    cases = fuzz.python_batch(0, 300)
    assert {c.kind for c in cases} == set(fuzz.PYTHON_KINDS)
    py, tx = fuzz.python_source(cases), fuzz.text_source(cases)
    for construct in ("where(", ".astype(", "astype(", "neighbor_sum(", "max_over(",
                      "min_over(", "can_deref(", "(V2E[", "(E2V)(V2E)", "@function",
                      "@scan_operator", "forward=False", "out=(", "domain={", "[h0:h1, :]",
                      "for it_", "if s", " if ", "np.sin(", "** 2", "(I + 1)", "(J - 2)",
                      "broadcast(c, (I, J))", 'float64("0.75")', "float32(0.5)", "cbrt(",
                      "gamma(", "fmod(", "Tensor[float32, I, J, K]", "y3(K - 1)", "y3(K + 1)",
                      "+ y3)"):
        assert construct in py, construct
    for construct in ("⟪I, 1⟫(", "cast(", "reduce(", "scan(", "subset(o", "K[h0:h1]",
                      "make_tuple(", "for (", "if ("):
        assert construct in tx, construct
    assert {c.kind for f, n in BATCHES for c in fuzz.python_batch(f, n)} \
        == set(fuzz.PYTHON_KINDS)


def test_generated_streamed_python_programs_match_their_text():
    """Cases with levels innermost, compiled with the streaming threshold at
    0: streamed maps, statements fused in rows (an inferred temporary read
    with shifts) with a streamed output and flat rows run on the small
    arrays, at 5 levels and 16 (whole cache lines: flat rows)."""
    from tensorir_dace.testing import streaming_threshold
    cases = [c for c in fuzz.python_batch(0, 100) if c.kind == "stream"][:12]
    with streaming_threshold(0):
        outcome = fuzz.run_python(cases, seed=2)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    maps, rows, flat = outcome.streamed
    assert maps >= 1 and rows >= 2 and flat >= 1, outcome.streamed


@pytest.mark.parametrize("first,count", BATCHES)
def test_generated_python_programs_match_their_text(first, count):
    """Then ten mutated calls (wrong dtypes, extents, ranks, layouts, scalars,
    tables, aliases): compiled and interpreted, both refuse a call with a
    TensorIRError or both run it to the same result."""
    cases = fuzz.python_batch(first, count)
    outcome = fuzz.run_python(cases, seed=first, calls=10)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    assert outcome.runs == 3 * sum(len(b) for b in fuzz.python_programs.BOUNDS)
    assert outcome.calls == ()


def test_parameters_named_like_builtins_and_size_symbols():
    """GT4Py's names are free: the same programs with their parameters renamed to
    Tensor IR builtins and size symbols (``index``, ``shift``, ``N_I``, ``self``)."""
    cases = fuzz.python_batch(400, 10)
    names = fuzz.builtin_like_names(400, cases)
    assert len(names) >= 20 and set(names.values()) <= set(fuzz.python_programs.BUILTIN_LIKE)
    assert names == fuzz.builtin_like_names(400, cases)            # seeded
    source = fuzz.python_source(cases, names=names)
    assert all(f"{n}:" in source for n in names.values())
    outcome = fuzz.run_python(cases, seed=400, names=names)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    assert outcome.runs == 3 * sum(len(b) for b in fuzz.python_programs.BOUNDS)


def first_float_case():
    """The first generated case whose one output is a float64 expression."""
    return next(c for c in map(fuzz.generate_python_case, range(100))
                if c.kind == "float" and not fuzz.python_runner.loose(c))


def test_a_wrong_reference_is_reported_on_its_output(tmp_path, monkeypatch):
    """The fuzzer must see a difference: the text (the reference) of a case has
    ``1.0 +`` in front of its expression.  Its reproducer, written by the
    command's front runner, is a script that reports the same mismatch."""
    from tensorir_dace.fuzz import python_runner, runner
    case = first_float_case()
    (out_name, _), = case.outputs
    assert fuzz.run_python([case], seed=case.seed).failed == {}
    real = python_runner.text_source

    def wrong(cases, name="fuzz"):
        return real(cases, name).replace(f"{out_name} ← ", f"{out_name} ← 1.0 + ")
    monkeypatch.setattr(python_runner, "text_source", wrong)
    outcome = fuzz.run_python([case], seed=case.seed)
    assert set(outcome.failed) == {out_name}
    assert "differs from the text interpreter" in outcome.failed[out_name]
    # the same through the command's runner, in this process
    monkeypatch.setattr(runner, "run_parallel", lambda fn, jobs, _: list(map(fn, jobs)))
    summary, failed = python_runner.run_python_front(1, 1, case.seed, 1, tmp_path)
    assert failed and "mismatches 1" in summary, summary
    script = tmp_path / f"python_case_{case.seed}.py"
    text = script.read_text()
    assert "alone: Python interpreted differs" in text and "1.0 + " in text
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert out_name in done.stdout and "differs" in done.stdout, done.stdout + done.stderr


def test_a_reproducer_runs_as_a_script_and_passes(tmp_path):
    case = first_float_case()
    script = tmp_path / "case.py"
    script.write_text(fuzz.python_reproducer(case.seed, "a note", case.seed))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.stdout.strip() == "passes", done.stdout + done.stderr


def test_the_command_runs_the_python_front(tmp_path, capsys):
    from tensorir_dace.fuzz.__main__ import main
    seed = str(first_float_case().seed)     # compiled above: a cache hit
    assert main(["--front", "python", "--programs", "1", "--batch", "1", "--jobs", "1",
                 "--seed", seed, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Python front: programs 1, compiles 1 (" in out
    assert "runs 27, mismatches 0, crashes 0" in out
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- regressions

I, J = dims("I J")


@function
def two():
    return 2.0


@function
def shifted_sum(x, y):
    return x(J + 1) + y(J - 1)


@program
def numbers(f: Tensor[float32, I, J], a: Tensor[float, I, J], h: Tensor[float, I, J.halo(1)],
            o: Tensor[float32, I, J], p: Tensor[float, I, J], q: Tensor[int32, I, J],
            r: Tensor[float, I, J]):
    o[...] = f * np.sin(0.5).astype(float32) + (2.5).astype(float32)
    p[...] = a * np.cos(0.25).astype(float32).astype(float)
    q[...] = np.floor(-2.5).astype(int32) + astype(a, int32)
    r[...] = shifted_sum(two(), h) + shifted_sum(h, np.sin(0.5))


def test_numbers_known_while_translating_cast_and_shift():
    """A number known while translating (``np.sin(0.5)``, a @function's constant
    result) is cast by ``.astype(T)`` and shifted as a scalar is; interpreter
    against NumPy, compiled against the interpreter."""
    rng = np.random.default_rng(3)
    f = rng.normal(size=(4, 5)).astype(np.float32)
    a = rng.normal(size=(4, 5)) * 4
    h = rng.normal(size=(4, 7))
    args = {"f": f, "a": a, "h": h, "o": np.zeros((4, 5), np.float32), "p": np.zeros((4, 5)),
            "q": np.zeros((4, 5), np.int32), "r": np.zeros((4, 5))}
    expected = {"o": f * np.float32(np.sin(0.5)) + np.float32(2.5),
                "p": a * np.float64(np.float32(np.cos(0.25))),
                "q": np.int32(-3) + a.astype(np.int32),
                "r": 2.0 + h[:, :5] + h[:, 2:] + np.sin(0.5)}
    ref = {k: v.copy() for k, v in args.items()}
    numbers(**ref, backend="interpreter")
    assert_same_results(ref, expected, 1e-12)
    out = {k: v.copy() for k, v in args.items()}
    numbers(**out, backend="compiled")
    assert_same_results(out, ref, 1e-12)
    assert numbers.format().count("cast(") >= 4
