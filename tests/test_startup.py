"""Cached programs start at once and call cheaply; OpenMP settings for busy machines.

A program compiled before is looked up by its source and called through its
library with ctypes (no parsing, SymPy or DaCe); every call the plain checks
do not accept goes the full path and behaves exactly as before.
"""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import NEIGHBOUR_COLUMN_SCANS
from tensorir_dace import openmp, tablescan
from tensorir_dace.runtime.native import NativeCallable
from tensorir_dace.runtime.source_cache import source_key

SRC = str(pathlib.Path(__file__).resolve().parent.parent / "src")

# Symbolic sizes, a temporary (persistent scratch sized by N and M), a scalar.
LAP = """
lap(out: tensor<float, I[0:N], J[0:M]>, inp: tensor<float, I[-1:N+1], J[-1:M+1]>,
    w: tensor<float>) {
    tmp: tensor<float, I[0:N], J[0:M]>;
    tmp ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp)
    out ← w × tmp
}
"""


def numpy_lap(inp: np.ndarray, w: float) -> np.ndarray:
    return w * (-4.0 * inp[1:-1, 1:-1] + inp[:-2, 1:-1] + inp[2:, 1:-1]
                + inp[1:-1, :-2] + inp[1:-1, 2:])


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A compile cache of this module's own, holding LAP compiled once."""
    root = tmp_path_factory.mktemp("cache")
    prog = tir.compile(LAP, cache_dir=root)
    return root, prog


def run_fresh(code: str, cache: pathlib.Path, *argv: str | os.PathLike, **env: str) -> dict:
    """Run ``code`` in a new Python process; it prints one JSON line, returned."""
    full_env = {**os.environ, "PYTHONPATH": SRC, "TENSORIR_DACE_CACHE": str(cache), **env}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, argv)],
                         env=full_env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "stderr": out.stderr}


CALL_LAP = f"""
    import json, sys
    import numpy as np
    import tensorir_dace as tir
    prog = tir.compile({LAP!r})
    inp = np.arange(8 * 7, dtype=float).reshape(8, 7) ** 2
    out = np.zeros((6, 5))
    prog(out=out, inp=inp, w=0.5)
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
"""


def test_cached_program_runs_without_sympy_or_dace(cache):
    root, _ = cache
    got = run_fresh(CALL_LAP + """
    print(json.dumps({"heavy": heavy, "out": out.tolist(),
                      "native": type(prog._callable).__name__}))
    """, root)
    assert got["heavy"] == []
    assert got["native"] == "NativeCallable"
    inp = np.arange(8 * 7, dtype=float).reshape(8, 7) ** 2
    np.testing.assert_allclose(got["out"], numpy_lap(inp, 0.5), rtol=1e-14)


def test_sdfg_and_interop_load_dace_lazily(cache):
    root, _ = cache
    got = run_fresh(CALL_LAP + """
    before = "dace" in sys.modules
    sdfg = prog.sdfg
    print(json.dumps({"before": before, "after": "dace" in sys.modules,
                      "arrays": sorted(sdfg.arrays), "name": prog.program.name,
                      "nested": type(prog.__sdfg__()).__name__}))
    """, root)
    assert got == {**got, "before": False, "after": True, "name": "lap", "nested": "SDFG"}
    assert {"out", "inp"} <= set(got["arrays"])


def test_damaged_library_is_rebuilt_with_a_warning(tmp_path):
    # built by another process: this one must not map a library it then damages
    run_fresh(CALL_LAP + """
    print(json.dumps({}))
    """, tmp_path)
    plan = json.loads(next((tmp_path / "programs").glob("*.json")).read_text())
    library = tmp_path / plan["library"]
    library.write_bytes(library.read_bytes()[:4096])          # truncated
    got = run_fresh(CALL_LAP + """
    print(json.dumps({"out": out.tolist()}))
    """, tmp_path)
    assert "unusable" in got["stderr"] and "rebuilding" in got["stderr"]
    inp = np.arange(8 * 7, dtype=float).reshape(8, 7) ** 2
    np.testing.assert_allclose(got["out"], numpy_lap(inp, 0.5), rtol=1e-14)
    library.write_bytes(b"not a library")                    # not ELF at all
    got = run_fresh(CALL_LAP + """
    print(json.dumps({"out": out.tolist()}))
    """, tmp_path)
    assert "not an ELF file" in got["stderr"]
    np.testing.assert_allclose(got["out"], numpy_lap(inp, 0.5), rtol=1e-14)


def test_sizes_change_between_calls(cache):
    """init runs again for new sizes: persistent scratch always fits."""
    _, prog = cache
    assert isinstance(prog._callable, NativeCallable)
    rng = np.random.default_rng(0)
    for n, m in [(4, 5), (30, 17), (2, 3), (30, 17), (64, 9)]:
        inp = rng.random((n + 2, m + 2))
        out = np.zeros((n, m))
        prog(out=out, inp=inp, w=1.5)
        np.testing.assert_allclose(out, numpy_lap(inp, 1.5), rtol=1e-13)
        ref = np.zeros((n, m))
        tir.interpret(tir.parse(LAP), out=ref, inp=inp, w=1.5)
        np.testing.assert_allclose(out, ref, rtol=1e-13)


def test_persistent_scratch_is_sized_again_when_sizes_change():
    """A scan read in neighbouring columns by the next one keeps its result in a
    scratch array between calls, sized by init: a larger call after a smaller one
    must run init again, also through the stored call plan."""
    prog = tir.compile(NEIGHBOUR_COLUMN_SCANS)
    call = prog._callable
    assert isinstance(call, NativeCallable) and call.plan["reinit"]
    parsed = tir.parse(NEIGHBOUR_COLUMN_SCANS)
    rng = np.random.default_rng(1)
    for n, m, k in [(2, 3, 4), (6, 5, 9), (2, 3, 4), (7, 8, 3)]:
        args = {"a": rng.random((n + 2, m, k)), "out": np.zeros((n, m, k))}
        ref = {**args, "out": np.zeros((n, m, k))}
        tir.interpret(parsed, **ref)
        prog(**args)
        np.testing.assert_allclose(args["out"], ref["out"], rtol=1e-12)
    assert call.library.handle is not None


def test_mistakes_report_what_the_full_path_reports(cache):
    _, prog = cache
    inp, out = np.random.rand(7, 9), np.zeros((5, 7))
    with pytest.raises(tir.ArgumentError, match="'inp'"):
        prog(out=out, inp=np.random.rand(7, 8), w=1.0)
    with pytest.raises(tir.ArgumentError, match="int32|float64|dtype"):
        prog(out=out, inp=inp.astype(np.int32), w=1.0)
    ro = np.zeros((5, 7))
    ro.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match="read-only"):
        prog(out=ro, inp=inp, w=1.0)
    with pytest.raises(tir.ArgumentError):
        prog(out=out, w=1.0)
    with pytest.raises(tir.ArgumentError, match="several indices"):
        prog(out=np.lib.stride_tricks.as_strided(out, (5, 7), (0, 8)), inp=inp, w=1.0)
    prog(out=out, inp=np.asfortranarray(inp), w=2.0)     # staged, not a mistake
    np.testing.assert_allclose(out, numpy_lap(inp, 2.0), rtol=1e-13)
    # a call that works still works afterwards, on the fast path
    prog(out=out, inp=inp, w=2.0)
    np.testing.assert_allclose(out, numpy_lap(inp, 2.0), rtol=1e-13)


def test_overlapping_arguments_behave_like_separate_arrays(cache):
    _, prog = cache
    buf = np.random.rand(7 * 9)
    inp = buf.reshape(7, 9)
    out = buf[:35].reshape(5, 7)                   # shares memory with inp
    expected = numpy_lap(inp.copy(), 1.0)
    prog(out=out, inp=inp, w=1.0)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


def test_same_and_new_array_objects_positional_and_scalars(cache):
    _, prog = cache
    call = prog._callable
    base = np.random.rand(12, 12)
    out = np.zeros((10, 10))
    for k in range(3):
        w = 0.5 + k                                # a new float object each time
        view = base[:, :]                          # a new view of the same buffer
        prog(out, view, w)
        np.testing.assert_allclose(out, numpy_lap(base, w), rtol=1e-13)
    assert len(call._entries) <= call.max_cached
    del view
    import gc
    gc.collect()
    # an entry whose array was freed is dropped, so ids cannot be confused
    assert all(all(r() is not None for r in e.refs) for e in call._entries.values())


def test_source_key_covers_text_and_options():
    a = source_key(LAP, optimize="default", device="cpu")
    assert a == source_key(LAP, optimize="default", device="cpu")
    assert a != source_key(LAP, optimize="none", device="cpu")
    assert a != source_key(LAP, optimize="default", device="gpu")
    assert a != source_key(LAP + " ", optimize="default", device="cpu")


#: Outputs of a Laplacian over levels: streamed when at least the threshold large.
LAP3 = """
lap3(out: tensor<float, I[0:N], J[0:M], K[0:L]>, inp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>) {
    out ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp)
}
"""


def test_each_streaming_setting_is_served_its_own_library(tmp_path, monkeypatch):
    """The streaming stores' switch and size threshold (environment variables
    read when a program is optimised) change the generated code, so a
    program compiled with one setting is never served, by its source, the
    library built with another: each setting finds the library of its own
    SDFG, compiled once."""
    from tensorir_dace.runtime.cache import cache_key, compile_count
    settings = [{}, {"TENSORIR_DACE_STREAMING_MIN_BYTES": "0"},
                {"TENSORIR_DACE_STREAMING_STORES": "0"}]
    names = []
    for _ in range(2):
        for env in settings:
            for k in ("TENSORIR_DACE_STREAMING_MIN_BYTES", "TENSORIR_DACE_STREAMING_STORES"):
                monkeypatch.delenv(k, raising=False)
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            before = compile_count()
            fn = tir.compile(LAP3, cache_dir=tmp_path)
            assert isinstance(fn._callable, NativeCallable)
            name = fn._callable.plan["name"]
            assert name.endswith(cache_key(fn.sdfg)[:16])      # lowered with this setting
            assert compile_count() == before + (len(names) < len(settings))
            inp = np.random.default_rng(len(names)).random((7, 8, 16))
            out = np.zeros((5, 6, 16))
            fn(out=out, inp=inp)
            np.testing.assert_allclose(out, -4.0 * inp[1:-1, 1:-1] + inp[:-2, 1:-1]
                                       + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:],
                                       rtol=1e-13)
            names.append(name)
    assert len(set(names)) == len(settings) and names[:3] == names[3:]


def test_a_streaming_threshold_that_is_not_a_size_is_refused(monkeypatch):
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_MIN_BYTES", "8M")
    with pytest.raises(tir.TensorIRError, match="TENSORIR_DACE_STREAMING_MIN_BYTES='8M'"):
        tir.to_sdfg(tir.parse(LAP3), optimize="default")


# Sizes only a keyword argument gives: N (or M) splits the array.
SPLIT = """
split(out: tensor<float, I[0:N+M]>, a: tensor<float, I[0:N+M]>, c: tensor<float, J[-1:K+1]>) {
    subset(out, I[0:N]) ← subset(a, I[0:N]) + 1.0;
    subset(out, I[N:N+M]) ← subset(a, I[N:N+M]) × 2.0
}
"""


def test_sizes_given_by_keyword_call_through_the_plan(tmp_path):
    prog = tir.compile(SPLIT, cache_dir=tmp_path)
    call = prog._callable
    assert isinstance(call, NativeCallable) and call.plan["sizes"].keys() == {"N", "M", "K"}
    a, c = np.random.default_rng(3).random(9), np.zeros(4)
    for sizes in ({"N": 4}, {"M": 5}, {"N": 4, "M": 5}, {"N": np.int64(0)}, {"M": 0},
                  {"N": 4, "K": 2}):
        out, ref = np.zeros(9), np.zeros(9)
        prog(out=out, a=a, c=c, **sizes)
        tir.interpret(tir.parse(SPLIT), out=ref, a=a, c=c, **sizes)
        n = int(sizes.get("N", 9 - sizes.get("M", 0)))
        np.testing.assert_array_equal(out, np.concatenate([a[:n] + 1.0, a[n:] * 2.0]))
        np.testing.assert_array_equal(out, ref)
    assert call._fallback is None           # every call above ran through the plan
    for sizes, message in [({}, "cannot infer size symbols"), ({"N": 4, "M": 4}, "mismatch"),
                           ({"N": -1}, "non-negative"), ({"N": True}, "must be an integer"),
                           ({"N": 10}, "M = -1"), ({"K": 3, "N": 1}, "K=3")]:
        out = np.zeros(9)
        with pytest.raises(tir.ArgumentError, match=message):
            prog(out=out, a=a, c=c, **sizes)
        assert not out.any()
    with pytest.raises(tir.ArgumentError, match="K = -1"):     # c: J[-1:K+1] of 1 element
        prog(out=out, a=a, c=np.zeros(1), N=4)
    # a new process: the cached plan, without SymPy or DaCe
    got = run_fresh(f"""
    import json, sys
    import numpy as np
    import tensorir_dace as tir
    prog = tir.compile({SPLIT!r})
    out = np.zeros(9)
    prog(out=out, a=np.arange(9.0), c=np.zeros(4), M=3)
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
    print(json.dumps({{"heavy": heavy, "out": out.tolist()}}))
    """, tmp_path)
    assert got["heavy"] == []
    np.testing.assert_array_equal(got["out"], [1, 2, 3, 4, 5, 6, 12, 14, 16])


# --------------------------------------------------------------------------- tables, tuples

NABLA = (pathlib.Path(__file__).resolve().parent.parent / "sdfg_examples" / "nabla.tir"
         ).read_text()
V, E = 5440, 16167


def nabla_arguments(seed: int = 0) -> dict:
    """Arguments of NABLA, a quarter of the V2E entries -1 ("no neighbour")."""
    rng = np.random.default_rng(seed)
    v2e = rng.integers(0, E, (V, 7))
    v2e[rng.random((V, 7)) < 0.25] = -1
    return dict(n_nodes=V, pp=rng.random(V), S_MXX=rng.random(E), S_MYY=rng.random(E),
                sign=rng.random((V, 7)), vol=rng.random(V) + 1.0,
                E2V=rng.integers(0, V, (E, 2)), V2E=v2e)


def nabla_mistakes(args: dict, out: tuple) -> list[dict]:
    """Calls of NABLA the checks refuse: bad table entries, a badly shaped tuple."""
    e2v, v2e = args["E2V"].copy(), args["V2E"].copy()
    e2v[7, 1] = V                            # one past the vertices
    v2e[100, 3] = E + 5                      # beyond the edges
    return [{**args, "out": out, "E2V": e2v}, {**args, "out": out, "V2E": v2e},
            {**args, "out": list(out)}, {**args, "out": out[:1]},
            {**args, "out": (out[0], np.zeros(V - 1))}]


# A new process: NABLA from the cache, arguments from ARGS (an .npz file).
NABLA_CALLS = f"""
    import json, sys
    import numpy as np
    import tensorir_dace as tir
    V, E = {V}, {E}
    prog = tir.compile({NABLA!r})
    args = dict(np.load(sys.argv[1]))
    args["n_nodes"] = int(args["n_nodes"])
    out = (np.zeros(V), np.zeros(V))
    prog(out=out, **args)
    again = (np.zeros(V), np.zeros(V))
    prog(out=again, **args)                  # new tuple, new output buffers
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
    native = type(prog._callable).__name__
""" + textwrap.indent(inspect.getsource(nabla_mistakes), "    ") + """
    errors = []
    for bad in nabla_mistakes(args, out):
        try:
            prog(**bad)
            errors.append(None)
        except tir.TensorIRError as ex:
            errors.append([type(ex).__name__, str(ex)])
    print(json.dumps({"heavy": heavy, "native": native, "out": [o.tolist() for o in out],
                      "again": [o.tolist() for o in again], "errors": errors}))
"""


@pytest.fixture(scope="module")
def nabla_cache(tmp_path_factory):
    """A compile cache holding NABLA, compiled (with its call plan) once."""
    root = tmp_path_factory.mktemp("nabla")
    return root, tir.compile(NABLA, cache_dir=root)


def test_tables_and_tuples_run_from_the_cache_without_sympy_or_dace(nabla_cache):
    root, prog = nabla_cache
    assert isinstance(prog._callable, NativeCallable)
    args = nabla_arguments()
    np.savez(root / "args.npz", **args)
    got = run_fresh(NABLA_CALLS, root, root / "args.npz")
    assert got["heavy"] == [] and got["native"] == "NativeCallable"
    ref = (np.zeros(V), np.zeros(V))
    tir.interpret(tir.parse(NABLA), out=ref, **args)
    for k in range(2):
        np.testing.assert_allclose(got["out"][k], ref[k], rtol=1e-12)
        np.testing.assert_allclose(got["again"][k], ref[k], rtol=1e-12)
    # the same mistakes on the full path (DaCe-loaded, every check) give the same errors
    full = prog._callable._make_fallback()
    want = []
    for bad in nabla_mistakes(args, ref):
        with pytest.raises(tir.TensorIRError) as info:
            full(**bad)
        want.append([type(info.value).__name__, str(info.value)])
    assert got["errors"] == want
    assert want[0][0] == "ArgumentError" and "'E2V' has the entry 5440 at index [7, 1]" \
        in want[0][1]
    assert "'V2E' has the entry 16172 at index [100, 3]" in want[1][1]


def test_tables_are_scanned_once_per_buffer_on_the_native_path(nabla_cache, monkeypatch):
    _, prog = nabla_cache
    call = prog._callable
    call.clear_cache()
    args = nabla_arguments(1)
    scans = []
    real = tablescan.table_stats
    monkeypatch.setattr(tablescan, "table_stats",
                        lambda t, p: scans.append(p) or real(t, p))
    tablescan.STATS.clear()
    out = (np.zeros(V), np.zeros(V))
    prog(out=out, **args)
    first = len(scans)
    assert first >= 2                        # E2V and V2E scanned
    for _ in range(3):                       # same buffers, new views and tuples
        prog(out=(out[0][:], out[1]), **{**args, "E2V": args["E2V"][:]})
    assert len(scans) == first
    bad = args["V2E"].copy()
    bad[0, 0] = E
    with pytest.raises(tir.ArgumentError, match="'V2E' has the entry 16167 at index \\[0, 0\\]"):
        prog(out=out, **{**args, "V2E": bad})


@pytest.mark.parametrize("seed", [5, 11])
def test_random_mesh_programs_through_the_cached_path(seed):
    """Seeded random mesh programs (tables with absent neighbours), called through
    their call plan at several sizes, agree with the interpreter."""
    from conftest import assert_same_results
    from tensorir_dace.testing import clone, random_arguments
    from test_random_programs import mesh_program
    src = mesh_program(seed, statements=4)
    prog = tir.compile(src)
    assert isinstance(prog._callable, NativeCallable) and prog._callable.plan["tables"]
    parsed = tir.parse(src)
    for v, e in [(9, 14), (5, 11), (9, 14)]:
        args = random_arguments(parsed, sizes={"V": v, "E": e}, seed=seed + v,
                                absent_fraction=0.25)
        ref, out = clone(args), clone(args)
        tir.interpret(parsed, **ref)
        prog(**out)
        assert_same_results(out, ref, 1e-11)


def test_tuple_outputs_through_the_cached_path(tmp_path):
    src = """
    t(out: tensor<((float, float), float), I[0:N]>, a: tensor<float, I[0:N]>) {
        out ← make_tuple(make_tuple(a + 1.0, a × 2.0), a - 3.0)
    }
    """
    prog = tir.compile(src, cache_dir=tmp_path)
    assert isinstance(prog._callable, NativeCallable)
    for n in (9, 4):
        a = np.random.rand(n)
        out = ((np.zeros(n), np.zeros(n)), np.zeros(n))
        prog(out=out, a=a)
        np.testing.assert_allclose(out[0][0], a + 1.0)
        np.testing.assert_allclose(out[0][1], a * 2.0)
        np.testing.assert_allclose(out[1], a - 3.0)
    with pytest.raises(tir.ArgumentError, match="'out'"):
        prog(out=(out[0][0], out[0][1], out[1]), a=a)
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match=r"'out'\[1\] .*read-only"):
        prog(out=(out[0], ro), a=a)


# --------------------------------------------------------------------------- threads


def test_small_calls_run_one_threaded(cache, monkeypatch):
    _, prog = cache
    call = prog._callable
    inp, out = np.random.rand(12, 12), np.zeros((10, 10))
    call.clear_cache()
    prog(out=out, inp=inp, w=1.0)
    assert [e.sequential for e in call._entries.values()] == [True]
    monkeypatch.setattr(openmp, "SEQUENTIAL_BELOW", 50)
    call.clear_cache()
    prog(out=out, inp=inp, w=1.0)
    assert [e.sequential for e in call._entries.values()] == [False]
    np.testing.assert_allclose(out, numpy_lap(inp, 1.0), rtol=1e-13)
    threads = tir.get_num_threads()
    monkeypatch.setattr(openmp, "SEQUENTIAL_BELOW", 10**9)
    call.clear_cache()
    prog(out=out, inp=inp, w=1.0)
    assert tir.get_num_threads() == threads          # restored after the call


def test_thread_count_is_set_and_reported():
    before = tir.get_num_threads()
    try:
        tir.set_num_threads(1)
        assert tir.get_num_threads() == 1
        with pytest.raises(tir.ArgumentError, match="at least 1"):
            tir.set_num_threads(0)
    finally:
        tir.set_num_threads(before)


@pytest.mark.parametrize("user", [None, "ACTIVE"])
def test_wait_policy_is_passive_unless_the_user_chose(user, tmp_path):
    env = {} if user is None else {"OMP_WAIT_POLICY": user}
    code = f"""
    import json, os
    os.environ.pop("OMP_WAIT_POLICY", None) if {user!r} is None else None
    import tensorir_dace as tir
    from tensorir_dace import openmp, tablescan
    print(json.dumps({{"env": os.environ.get("OMP_WAIT_POLICY"), "says": openmp.wait_policy(),
                       "threads": tir.get_num_threads()}}))
    """
    got = run_fresh(code, tmp_path, OMP_NUM_THREADS="3", **env)
    if user is None:
        assert got["env"] == "PASSIVE" and "set by tensorir_dace" in got["says"]
    else:
        assert got["env"] == "ACTIVE" and "OMP_WAIT_POLICY" in got["says"]
    assert got["threads"] == 3                       # OMP_NUM_THREADS is honoured


def test_run_reports_and_sets_threads(capsys):
    from tensorir_dace.cli import main
    root = pathlib.Path(__file__).resolve().parent.parent
    before = tir.get_num_threads()
    try:
        assert main(["run", str(root / "sdfg_examples" / "laplacian.tir"), "--threads", "1",
                     "--repeat", "1", "--quiet"]) == 0
    finally:
        tir.set_num_threads(before)
    text = capsys.readouterr().out
    assert "threads     1 OpenMP threads" in text


# --------------------------------------------------------------------------- build

MODULE = '''
from tensorir_dace.frontend import Tensor, dims, program

I, J = dims("I J")


@program
def shifted(inp: Tensor[float, I, J], out: Tensor[float, I, J], alpha: float):
    out[1:-1, 1:-1] = alpha * (inp(I + 1) - inp(I - 1))


@program
def generic(a, out):
    out[...] = a + 1.0
'''


def test_build_compiles_files_and_modules_in_parallel(tmp_path, capsys):
    from tensorir_dace.cli import main
    src = tmp_path / "src"
    src.mkdir()
    (src / "lap.tir").write_text(LAP)
    (src / "stencils.py").write_text(MODULE)
    cache = tmp_path / "cache"
    report = tir.build([src], jobs=2, cache_dir=cache, progress=None)
    assert sorted(n.rsplit("/", 1)[-1] for n, _ in report.built) == ["lap.tir",
                                                                      "stencils.py:shifted"]
    assert [(n.rsplit("/", 1)[-1], why.split(":")[0]) for n, why in report.skipped] == \
        [("stencils.py:generic", "rank-generic")]
    assert report.ok and len(list((cache / "programs").glob("*.json"))) == 2
    # a new process finds the decorated program by its Python source: no
    # translation, SymPy or DaCe, with a Python or a NumPy scalar
    got = run_fresh(f"""
    import json, sys
    sys.path.insert(0, {str(src)!r})
    import numpy as np
    import stencils
    inp = np.arange(30.0).reshape(5, 6) ** 2
    out, out2 = np.zeros((5, 6)), np.zeros((5, 6))
    stencils.shifted(inp, out, 0.5)
    stencils.shifted(inp, out2, alpha=np.float64(0.5))
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
    print(json.dumps({{"out": out.tolist(), "out2": out2.tolist(), "heavy": heavy,
                      "info": stencils.shifted.cache_info()._asdict()}}))
    """, cache)
    inp = np.arange(30.0).reshape(5, 6) ** 2
    expected = np.zeros((5, 6))
    expected[1:-1, 1:-1] = 0.5 * (inp[2:, 1:-1] - inp[:-2, 1:-1])
    assert got["heavy"] == [] and got["info"]["loads"] == 2 and got["info"]["compiles"] == 0
    np.testing.assert_allclose(got["out"], expected, rtol=1e-14)
    np.testing.assert_array_equal(got["out2"], got["out"])
    # the command line: a broken file fails the build and says why
    (src / "bad.tir").write_text("bad(out: tensor<float, I[0:N]>) { out ← zz }")
    assert main(["build", str(src / "bad.tir"), str(src / "lap.tir"), "--jobs", "1",
                 "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "bad.tir" in captured.err and "unknown name 'zz'" in captured.err
    assert "built 1 programs" in captured.out


def test_new_views_of_known_buffers_reuse_the_prepared_call(cache):
    _, prog = cache
    call = prog._callable
    call.clear_cache()
    base, out_base = np.random.rand(12, 12), np.zeros((10, 10))
    for k in range(4):
        prog(out=out_base[:, :], inp=base[:, :], w=1.0 + k)
        np.testing.assert_allclose(out_base, numpy_lap(base, 1.0 + k), rtol=1e-13)
    assert len(call._buffers) == 4          # one per scalar value, none per view object
    for _ in range(3):
        prog(out=out_base[:, :], inp=base[:, :], w=1.0)
    assert len(call._buffers) == 4
    # a read-only view of a known output buffer is still refused
    ro = out_base[:, :]
    ro.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match="read-only"):
        prog(out=ro, inp=base[:, :], w=1.0)
    # a different window of the same buffer is a different buffer key
    big = np.random.rand(14, 12)
    prog(out=out_base, inp=big[2:, :], w=1.0)
    np.testing.assert_allclose(out_base, numpy_lap(big[2:, :], 1.0), rtol=1e-13)


@pytest.mark.parametrize("seed,dtype", [(3, "float"), (7, "float32"), (2, "int")])
def test_random_programs_through_the_cached_path(seed, dtype):
    """Seeded random programs (see test_random_programs), called through their call
    plan at several sizes and with views, agree with the interpreter."""
    from conftest import assert_same_results
    from tensorir_dace.testing import clone, random_arguments
    from test_random_programs import random_program
    src = random_program(seed, dtype=dtype)
    prog = tir.compile(src)
    assert isinstance(prog._callable, NativeCallable)
    parsed = tir.parse(src)
    for n, m in [(5, 4), (9, 2), (5, 4)]:
        args = random_arguments(parsed, sizes={"N": n, "M": m}, seed=seed + n)
        ref, out = clone(args), clone(args)
        tir.interpret(parsed, **ref)
        prog(**out)
        assert_same_results(out, ref, 1e-11 if dtype != "float32" else 1e-5)
        views = {k: v[...] if isinstance(v, np.ndarray) else v for k, v in clone(args).items()}
        prog(**views)
        assert_same_results(views, ref, 1e-11 if dtype != "float32" else 1e-5)
