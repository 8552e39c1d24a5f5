"""Random programs in GT4Py's spelling (``tensorir_dace.fuzz``, ``--front gtx``):
icon4py-style field operators, scan operators and a program, each field
operator written a second time as NumPy code over the whole mesh; the program
interpreted, compiled and compiled without the optimising passes must agree
with it at two sets of sizes and three runtime bound sets each.  A third of
the cases also make their calls directly from Python (``op(…, out=…,
domain=…, offset_provider=…)``), compared with a reference of their own.
Fixed seeded batches run here (one of them with half levels, GT4Py's
``KHalf``, one of direct calls); the command ``python -m tensorir_dace.fuzz
--front gtx`` runs any number."""

from __future__ import annotations

import re

import numpy as np

from tensorir_dace import fuzz
from tensorir_dace.frontend import TensorArg
from tensorir_dace.fuzz import gtx_programs, gtx_reference, gtx_runner

FIRST, COUNT = 0, 5
HALF_FIRST, HALF_COUNT = 20000, 4     # the first cases from here writing half levels
# cases made as direct calls too (besides 1 and 2 of the first batch: a tuple
# of domains, the same dict twice (1), one each (2); keyword arguments, no
# domain= (1); broadcasts of arguments (1, 2); compiled calls without
# backend=): keyword arguments, a broadcast of a number (10); no domain= and
# a tuple of broadcasts on a tuple of domains (11); compiled calls naming
# their backend (10)
DIRECT_SEEDS = (10, 11)
# a scan over both columns of a scan with a (float, bool) state: forward then
# backward (one column loop, a bool column buffer), and made as direct calls
CHAINED_SEEDS = (30138, 30017)


def test_the_gtx_generator_covers_its_constructs():
    source = fuzz.gtx_source(fuzz.gtx_batch(0, 200))
    for construct in ("@gtx.field_operator", "@gtx.scan_operator(axis=KDim, forward=False",
                      "forward=True", "init=(", "state[1]", "tuple[", "out=(", "domain={",
                      "KDim: (k0, ", "(hs, he)", "CellDim: (1, 4)", "nlev - 1", "Koff[-1]",
                      "Koff[1]", "(E2C[", "(C2E2C)", "(V2E)", "neighbor_sum(", "max_over(",
                      "min_over(", "concat_where(KDim ==", "concat_where(KDim <",
                      "& (KDim <", "<= CellDim)", "where(", "astype((", "astype(",
                      "broadcast(", "Field[[", "gtx.Field[gtx.Dims[", "Field[Dims[",
                      "vpfloat(", "wpfloat(", "int32(", "gtx.int32", "float32", ")[0]",
                      "t1, t2 = ", "* x", "sqrt(abs(", "init=(0.0, False)",
                      "x0: float64) -> tuple[float64, bool]", "(v if f else"):
        assert construct in source, construct
    half = fuzz.gtx_source(fuzz.gtx_batch(20000, 200))
    for construct in ("KHalfDim + 0.5)", "KHalfDim - 0.5)", "KHalfDim + 1.5)",
                      "KHalfDim - 1.5)", "KDim + 0.5)", "KDim - 0.5)", "KDim + 1.5)",
                      "KDim - 1.5)", "(KHalfOff[", "(KHalfDim + 1)", "concat_where(KHalfDim >",
                      "concat_where(KHalfDim == n", "KHalfDim: (0, nlev + 1)",
                      "KHalfDim: (k0, ", "KHalfDim: (1, 5)", "Dims[CellDim, KHalfDim]",
                      "KDim: (0, 3)", "concat_where(KDim > 0, ", "(Koff[-2])"):
        assert construct in half, construct
    assert re.search(r"_sc\d+_\d+\(\w+\(KDim [+-] [01]\.5\)", half)   # a scan of half levels
    # direct calls: one domain, a tuple of domains, none; keyword arguments;
    # broadcasts of a number and of arguments of fewer dimensions, compiled
    # calls with and without backend=
    for construct in ("def direct_", "def direct_reference_", ", domain=({", ", domain={",
                      "'plain': True", "'plain': False", ", n0=", "x0=",
                      "broadcast(x0, (CellDim, KDim,))", "broadcast(x0, (EdgeDim,))"):
        assert construct in source, construct
    assert re.search(r"call\(\d, _f\d+_\d+, [^\n]*out=\(\w+, \w+\), domain=\(\{", source)
    assert re.search(r"call\(\d, _f\d+_\d+, [^\n]*out=\w+\)\n", source)     # no domain=
    assert re.search(r"def _b\d+_\d+\(\) -> [^\n]*:\n    return broadcast\(", source)
    assert re.search(r"def _b\d+_\d+\(\) -> tuple\[", source)
    direct = [c for c in fuzz.gtx_batch(0, 200) if c.direct]
    assert 50 < len(direct) < 85      # a third


def half_level_cases() -> list[gtx_programs.GtxCase]:
    cases = (fuzz.generate_gtx_case(s) for s in range(HALF_FIRST, HALF_FIRST + 100))
    return [c for c in cases if any(t.s for _, t in c.outputs)][:HALF_COUNT]


def test_generated_half_level_programs_match_their_reference():
    outcome = fuzz.run_gtx(half_level_cases(), seed=HALF_FIRST)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed


def test_generated_gtx_programs_match_their_reference():
    outcome = fuzz.run_gtx(fuzz.gtx_batch(FIRST, COUNT), seed=FIRST)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    runs = len(gtx_runner.BACKENDS) * sum(len(b) for b in gtx_programs.BOUNDS)
    assert outcome.runs == runs
    direct = [c.seed for c in fuzz.gtx_batch(FIRST, COUNT) if c.direct]
    assert direct == [1, 2] and outcome.direct == len(direct) * runs


def test_generated_scans_of_a_scans_bool_column_match_their_reference():
    cases = [fuzz.generate_gtx_case(s) for s in CHAINED_SEEDS]
    assert all("init=(0.0, False)" in "\n".join(c.defs) for c in cases)
    outcome = fuzz.run_gtx(cases, seed=CHAINED_SEEDS[0])
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    assert outcome.runs > 0 and outcome.direct > 0


def test_calls_with_a_runtime_start_inside_a_gap_are_refused():
    """A case whose runtime start ``k0`` must be 2 or more (a gap below it, or a
    value read two levels below it): its calls with ``k0 = 1`` are refused by
    every backend before writing, the others match the reference."""
    case = next(c for c in map(fuzz.generate_gtx_case, range(50000, 50100))
                if c.k0_min > 1)
    outcome = fuzz.run_gtx([case], seed=case.seed)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    assert outcome.refused > 0


def test_generated_direct_calls_match_their_reference(monkeypatch):
    """Also with fields: the program's runs and the direct calls that pass
    them count the fields they made."""
    made = {"program": 0, "direct": 0}

    def counted(fn, name):
        def wrapper(*a):
            got = fn(*a)
            args = got if isinstance(got, dict) else {**dict(enumerate(got[0])), **got[1]}
            made[name] += sum(isinstance(v, TensorArg) for v in args.values())
            return got
        return wrapper
    monkeypatch.setattr(gtx_runner, "as_fields", counted(gtx_runner.as_fields, "program"))
    monkeypatch.setattr(gtx_runner, "direct_fields",
                        counted(gtx_runner.direct_fields, "direct"))
    cases = [fuzz.generate_gtx_case(s) for s in DIRECT_SEEDS]
    assert all(c.direct is not None for c in cases)
    outcome = fuzz.run_gtx(cases, seed=DIRECT_SEEDS[0])
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    bound_sets = sum(len(b) for b in gtx_programs.BOUNDS)
    assert outcome.direct == len(gtx_runner.BACKENDS) * len(cases) * bound_sets
    assert made["program"] > 0 and made["direct"] > 0


def test_direct_calls_with_a_runtime_start_inside_a_gap_are_refused():
    """A case whose second call needs ``k0 >= 2``: made directly with ``k0 = 1``,
    the first call runs and matches the reference, the second is refused with
    a TensorIRError before writing, as the program is."""
    case = next(c for c in map(fuzz.generate_gtx_case, range(50000, 50400))
                if c.direct and [k for _, k in c.direct.calls][:2] == [1, 2])
    outcome = fuzz.run_gtx([case], seed=case.seed)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
    refused = sum(k0 < 2 for bounds in gtx_programs.BOUNDS for _, _, k0 in bounds)
    assert outcome.refused == 2 * len(gtx_runner.BACKENDS) * refused    # program and calls


def test_wrong_direct_calls_are_reported(monkeypatch):
    """The runner must see direct calls that write nothing, and those that raise
    something other than a TensorIRError."""
    case = fuzz.generate_gtx_case(DIRECT_SEEDS[1])
    first = case.outputs[0][0]

    def nothing(*args):
        return lambda i, op, *a, **k: None
    monkeypatch.setattr(gtx_runner, "_caller", nothing)
    outcome = fuzz.run_gtx([case], seed=case.seed)
    assert set(outcome.failed) == {first}, outcome.failed
    assert "direct calls: interpreter at" in outcome.failed[first]
    assert "differs from the reference" in outcome.failed[first]

    def raising(*args):
        def call(i, op, *a, **k):
            raise gtx_runner._Crash(i, "ValueError: made up")
        return call
    monkeypatch.setattr(gtx_runner, "_caller", raising)
    outcome = fuzz.run_gtx([case], seed=case.seed)
    assert "call 0 crashed: ValueError: made up" in outcome.failed[first], outcome.failed


def first_float_case() -> gtx_programs.GtxCase:
    """The first generated case of one float64 output, written on its whole
    domain by its first statement."""
    return next(c for c in map(fuzz.generate_gtx_case, range(100))
                if len(c.outputs) == 1 and c.outputs[0][1].dt == "float64")


def test_a_wrong_reference_is_reported_and_reproduced(tmp_path, monkeypatch):
    """The runner must see a difference: the reference adds 1 to what it writes.
    The command's front runner writes the case as a script that reports it."""
    case = first_float_case()
    (name, _), = case.outputs
    real = gtx_reference.write

    def wrong(args, out, value, dims, domain, bad):
        real(args, out, value + 1.0, dims, domain, bad)
    monkeypatch.setattr(gtx_reference, "write", wrong)
    outcome = fuzz.run_gtx([case], seed=case.seed)
    assert set(outcome.failed) == {name}, outcome.failed
    assert "differs from the reference" in outcome.failed[name]
    from tensorir_dace.fuzz import runner
    monkeypatch.setattr(runner, "run_parallel", lambda fn, jobs, _: list(map(fn, jobs)))
    summary, failed = gtx_runner.run_gtx_front(1, 1, case.seed, 1, tmp_path)
    assert failed and "mismatches 1" in summary, summary
    script = (tmp_path / f"gtx_case_{case.seed}.py").read_text()
    assert "alone: interpreter differs" in script and "def reference(a, bad):" in script


def test_the_command_runs_the_gtx_front(tmp_path, capsys):
    from tensorir_dace.fuzz.__main__ import main
    seed = str(first_float_case().seed)
    assert main(["--front", "gtx", "--programs", "1", "--batch", "1", "--jobs", "1",
                 "--seed", seed, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "GT4Py front: programs 1, compiles 1 (" in out
    assert "runs 18, mismatches 0, crashes 0" in out
    assert not any(tmp_path.iterdir())


def test_the_reference_skips_absent_neighbours_and_marks_undefined_levels():
    gtx_reference.set_mesh({"N_C": 2, "N_E": 3, "N_V": 1, "N_K": 2},
                           {"C2E2C": np.array([[1, -1, 0], [-1, -1, -1]])})
    x = gtx_reference.field(np.array([[1.0, 2.0], [10.0, 20.0]]), ("C", "K"))
    total = gtx_reference.nsum(gtx_reference.nb(x, "C2E2C"))
    k = gtx_reference.BELOW          # the index of level 0
    np.testing.assert_array_equal(total.a[:, k:k + 2], [[11.0, 22.0], [0.0, 0.0]])
    assert total.d[:, k:k + 2].all() and not total.d[0, k + 2]   # the half level is not x's
    assert total.d[1, k + 2]             # a cell without neighbours: the sum is 0
    assert not total.d[0, :k].any()      # nor the levels below 0
    below = gtx_reference.koff(x, -1)
    assert not below.d[:, k].any() and below.d[:, k + 1].all()
    # one level up: x's level 0 is defined at level -1
    up = gtx_reference.koff(x, 1)
    assert up.d[:, k - 1].all() and up.a[0, k - 1] == 1.0 and not up.d[:, k + 1].any()


def test_the_reference_holds_broadcasts_below_and_above_the_levels():
    """A concat_where of broadcasts has no end along K: read one level below
    level 0 and past the half levels, it is defined, and written from level 0."""
    gtx_reference.set_mesh({"N_C": 2, "N_E": 3, "N_V": 1, "N_K": 3}, {})
    R = gtx_reference
    pieces = R.cw_k(None, 1, None, lambda _: R.broadcast(2.0, ("C", "K")),
                    lambda _: R.broadcast(5.0, ("C", "K")))
    down, up = R.koff(pieces, -1), R.koff(pieces, 2)
    out = {"o": np.zeros((2, 4))}
    bad: list[str] = []
    R.write(out, "o", R.stagger(down, -0.5, "KH"), ("C", "KH"), {}, bad)
    assert not bad
    np.testing.assert_array_equal(out["o"][0], [5.0, 5.0, 5.0, 2.0])
    R.write(out, "o", R.stagger(up, 0.5, "KH"), ("C", "KH"), {}, bad)
    assert not bad
    np.testing.assert_array_equal(out["o"][0], [2.0, 2.0, 2.0, 2.0])


def test_a_program_only_half_levels_satisfy_is_read_back_as_its_calls_made_it():
    """Its only specialisation takes ``ch`` one level longer (it reads
    ``ch(Koff[1])`` on every full level); the printed-program check reads back
    that one, not the equal lengths ``prog.format()`` assumes (which has no
    program)."""
    case = fuzz.generate_gtx_case(181053)
    assert "x4(Koff[1])" in "\n".join(case.defs)
    outcome = fuzz.run_gtx([case], seed=181040)
    assert outcome.crash is None, outcome.crash
    assert outcome.failed == {}, outcome.failed
