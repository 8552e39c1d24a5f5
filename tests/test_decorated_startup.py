"""Decorated programs start from the compile cache without translating.

A new process calling a ``@program`` whose binary is cached finds it by the
Python source, the globals it reads and the arguments (``frontend.by_source``),
importing neither SymPy nor DaCe; a changed global, a changed called
``@function`` or another argument dtype is a miss: translated again, correct.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from test_startup import run_fresh

HELPERS = '''
from tensorir_dace import dims, function

I, J = dims("I J")


@function
def lap(x):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)
'''

STENCILS = '''
from tensorir_dace import Tensor, program
from helpers import I, J, lap

ALPHA = 0.25


@program
def smooth(inp: Tensor[float, I, J], out: Tensor[float, I, J]):
    out[1:-1, 1:-1] = inp + ALPHA * lap(inp)


@program
def scale(a, out):
    out[...] = a * 2.0 + ALPHA
'''

# Prints the outputs, the heavy modules imported, C++ builds and cache counters.
CALL = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import stencils
    from tensorir_dace.runtime.cachedir import compile_count
    dtype = sys.argv[2]
    inp = (np.arange(42.0).reshape(6, 7) ** 2 / 10).astype(dtype)
    out = np.zeros((6, 7), dtype=dtype)
    out2 = np.zeros((6, 7), dtype=dtype)
    {before}
    if dtype == "float64":
        stencils.smooth(inp, out)
    stencils.scale(inp, out2)
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"sympy", "dace"}})
    print(json.dumps({{"out": out.tolist(), "out2": out2.tolist(), "heavy": heavy,
                      "compiled": compile_count(),
                      "info": stencils.smooth.cache_info()._asdict()}}))
'''


def first_and_cached_runs(tmp_path, module: str, text: str, script: str) -> tuple[dict, dict]:
    """``script`` run in two new processes sharing a new cache, with the module
    ``module`` (source ``text``) importable from ``tmp_path / "src"``: the first
    translates and compiles, the second should find everything by the source."""
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    (src / f"{module}.py").write_text(text)
    return run_fresh(script, cache, src), run_fresh(script, cache, src)


def call(src, cache, dtype: str = "float64", before: str = "") -> dict:
    return run_fresh(CALL.format(before=before), cache, src, dtype)


def expected(alpha: float = 0.25, centre: float = -4.0, dtype=np.float64):
    inp = (np.arange(42.0).reshape(6, 7) ** 2 / 10).astype(dtype)
    out = np.zeros((6, 7), dtype=dtype)
    c = inp[1:-1, 1:-1]
    out[1:-1, 1:-1] = c + alpha * (centre * c + inp[2:, 1:-1] + inp[:-2, 1:-1]
                                   + inp[1:-1, 2:] + inp[1:-1, :-2])
    return out, (inp * dtype(2.0) + dtype(alpha)).astype(dtype)


def write(path, helpers: str = HELPERS, stencils: str = STENCILS):
    path.mkdir(parents=True, exist_ok=True)
    (path / "helpers.py").write_text(helpers)
    (path / "stencils.py").write_text(stencils)
    return path


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """Sources and a compile cache holding their binaries (built by a first process)."""
    root = tmp_path_factory.mktemp("decorated")
    src, cache = write(root / "src"), root / "cache"
    first = call(src, cache)
    assert first["compiled"] == 2 and "sympy" in first["heavy"]
    return src, cache


def test_warm_first_call_imports_neither_sympy_nor_dace(warm):
    src, cache = warm
    got = call(src, cache)
    assert got["heavy"] == [] and got["compiled"] == 0
    assert got["info"] == {"hits": 0, "misses": 1, "specializations": 1, "compiles": 0,
                           "loads": 1}
    out, out2 = expected()
    np.testing.assert_allclose(got["out"], out, rtol=1e-14)
    np.testing.assert_allclose(got["out2"], out2, rtol=1e-14)
    # the interpreter agrees
    sys.path.insert(0, str(src))
    try:
        stencils = importlib.import_module("stencils")
        inp = np.arange(42.0).reshape(6, 7) ** 2 / 10
        ref, ref2 = np.zeros((6, 7)), np.zeros((6, 7))
        stencils.smooth(inp, ref, backend="interpreter")
        stencils.scale(inp, ref2, backend="interpreter")
    finally:
        sys.path.remove(str(src))
        sys.modules.pop("stencils", None)
        sys.modules.pop("helpers", None)
    np.testing.assert_allclose(got["out"], ref, rtol=1e-14)
    np.testing.assert_allclose(got["out2"], ref2, rtol=1e-14)


def test_a_global_changed_in_the_source_or_at_run_time_is_a_miss(warm, tmp_path):
    src, cache = warm
    changed = write(tmp_path / "src", stencils=STENCILS.replace("ALPHA = 0.25", "ALPHA = 0.5"))
    got = call(changed, cache)
    assert "sympy" in got["heavy"] and got["compiled"] == 2
    out, out2 = expected(alpha=0.5)
    np.testing.assert_allclose(got["out"], out, rtol=1e-14)
    np.testing.assert_allclose(got["out2"], out2, rtol=1e-14)
    got = call(src, cache, before="stencils.ALPHA = 0.5")    # the binaries just built
    assert got["compiled"] == 0
    np.testing.assert_allclose(got["out"], out, rtol=1e-14)
    np.testing.assert_allclose(got["out2"], out2, rtol=1e-14)


def test_a_changed_called_function_is_a_miss(warm, tmp_path):
    src, cache = warm
    changed = write(tmp_path / "src", helpers=HELPERS.replace("-4.0 * x", "-3.0 * x"))
    got = call(changed, cache)
    assert "sympy" in got["heavy"] and got["compiled"] == 1     # scale does not call lap
    out, _ = expected(centre=-3.0)
    np.testing.assert_allclose(got["out"], out, rtol=1e-14)
    again = call(changed, cache)                                 # now cached as changed
    assert again["heavy"] == [] and again["out"] == got["out"]


def test_another_argument_dtype_is_a_miss(warm, tmp_path):
    src, cache = warm
    got = call(src, cache, dtype="float32")
    assert "sympy" in got["heavy"] and got["compiled"] == 1
    _, out2 = expected(dtype=np.float32)
    np.testing.assert_allclose(got["out2"], out2, rtol=1e-6)
    again = call(src, cache, dtype="float32")
    assert again["heavy"] == [] and again["out2"] == got["out2"]


class Config:
    alpha = 0.25


SCALE = 2.0
CFG = Config()


def test_the_key_follows_globals_and_arguments_and_gives_up_on_unknown_values():
    from tensorir_dace import program
    from tensorir_dace.frontend.by_source import call_key, describe

    @program
    def twice(a, out):
        out[...] = a * SCALE

    @program
    def configured(a, out):
        out[...] = a * CFG.alpha

    args = {"a": np.zeros(3), "out": np.zeros(3)}
    d64 = describe(args, True)
    d32 = describe({k: v.astype(np.float32) for k, v in args.items()}, True)
    key = call_key(twice.fn, d64, {})
    assert key is not None and key == call_key(twice.fn, d64, {})
    assert call_key(twice.fn, d32, {}) != key
    assert call_key(twice.fn, d64, {"optimize": "none"}) != key
    global SCALE
    SCALE = 3.0
    try:
        assert call_key(twice.fn, d64, {}) != key
    finally:
        SCALE = 2.0
    assert call_key(configured.fn, d64, {}) is None      # an object of a user's class
    assert describe({"a": [1.0]}, True) is None           # a list argument


TWO_DTYPES = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import stencils
    from tensorir_dace.runtime.cachedir import compile_count
    outs = []
    for dtype in ("float64", "float32", "float64"):
        a = np.arange(6.0, dtype=dtype)
        out = np.zeros(6, dtype=dtype)
        stencils.scale(a, out)
        outs.append(out.tolist())
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"outs": outs, "heavy": heavy, "compiled": compile_count(),
                      "info": stencils.scale.cache_info()._asdict()}))
'''


def test_every_specialisation_translated_in_a_process_is_found_by_the_next(tmp_path):
    src, cache = write(tmp_path / "src"), tmp_path / "cache"
    first = run_fresh(TWO_DTYPES, cache, src)
    assert first["compiled"] == 2 and "sympy" in first["heavy"]
    assert first["info"]["misses"] == 2 and first["info"]["hits"] == 1
    again = run_fresh(TWO_DTYPES, cache, src)
    assert again["heavy"] == [] and again["compiled"] == 0
    assert again["info"] == {"hits": 1, "misses": 2, "specializations": 2, "compiles": 0,
                             "loads": 2}
    expect = [list(np.arange(6.0) * 2.0 + 0.25)] * 3
    assert first["outs"] == again["outs"]
    np.testing.assert_allclose(again["outs"], expect, rtol=1e-6)


# Interval annotations: own size symbols, halos, a constant interval.
INTERVALS = '''
from tensorir_dace import Tensor, dims, program, sizes

I, J = dims("I J")
N, = sizes("N")


@program
def band(inp: Tensor[float, I[-1:N + 1], J.halo(1)], out: Tensor[float, I[0:2 * N - N], J]):
    out[...] = inp(I - 1) + inp(I + 1) + inp(J + 1) - 3.0 * inp
'''

CALL_INTERVALS = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import intervals
    after_import = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    inp = np.arange(42.0).reshape(7, 6) ** 2 / 10
    out = np.zeros((5, 4))
    intervals.band(inp, out)
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"out": out.tolist(), "import": after_import, "heavy": heavy,
                      "info": intervals.band.cache_info()._asdict()}))
'''


def test_interval_annotations_import_neither_sympy_nor_dace(tmp_path):
    """Annotations with intervals over size symbols keep them as text: defining
    the program imports no SymPy, and a cached call translates nothing."""
    first, again = first_and_cached_runs(tmp_path, "intervals", INTERVALS, CALL_INTERVALS)
    assert first["import"] == [] and "sympy" in first["heavy"]
    assert again["import"] == [] and again["heavy"] == []
    assert again["info"]["loads"] == 1 and again["info"]["compiles"] == 0
    inp = np.arange(42.0).reshape(7, 6) ** 2 / 10
    c = inp[1:-1, 1:-1]
    want = inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, 2:] - 3.0 * c
    np.testing.assert_allclose(again["out"], want, rtol=1e-14)
    np.testing.assert_allclose(first["out"], want, rtol=1e-14)
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        ref = np.zeros((5, 4))
        importlib.import_module("intervals").band(inp, ref, backend="interpreter")
    finally:
        sys.path.remove(str(tmp_path / "src"))
        sys.modules.pop("intervals", None)
    np.testing.assert_allclose(again["out"], ref, rtol=1e-14)


def test_size_expressions_become_the_sympy_expressions_they_spell():
    import sympy

    from tensorir_dace import dims, sizes
    from tensorir_dace.ir import size_symbol

    I = dims("I")
    N, M = sizes("N M")
    n, m = size_symbol("N"), size_symbol("M")
    for lazy, want in [(N + 1, n + 1), (2 * N - M, 2 * n - m), (-(N - 3), 3 - n),
                       (1 - N, 1 - n), (N // 2 + M % 3, sympy.floor(n / 2) + sympy.Mod(m, 3)),
                       (N + sympy.Integer(2), n + 2), (sympy.Max(N, M), sympy.Max(n, m))]:
        assert sympy.sympify(lazy) == want and lazy == want, (lazy, want)
    assert (N + 1).free_symbols == {n} and N.name == "N" and str(N * 2) == "2*N"
    spec = I[-1:N + 1]
    assert spec.key() == "I[-1:N + 1]" and (spec.start, spec.stop) == (-1, n + 1)
    assert I.halo(2).key() == "I[-2:N_I + 2]" and I.halo(2) == I[-2:I.size + 2]
    n_i = size_symbol("N_I")
    assert I.size == n_i and sympy.sympify(I.size) == n_i and I.size_symbol is n_i
    assert I[0:I.size - 1].key() == "I[0:N_I - 1]" and (I.size - 1).free_symbols == {n_i}
    with pytest.raises(TypeError, match="must be an integer or a size expression"):
        I[0:1.5]


# Declared connectivities: tables by offset_provider= or by keyword.
MESH = '''
import numpy as np
from tensorir_dace import Tensor, connectivity, dims, neighbor_dim, neighbor_sum, program

Vertex, Edge = dims("Vertex Edge")
E2VDim = neighbor_dim(Vertex, 2)
E2V = connectivity("E2V", Edge, E2VDim)


@program
def edge_sum(x: Tensor[float, Vertex], out: Tensor[float, Edge]):
    out[...] = neighbor_sum(x(E2V), axis=E2VDim) + x(E2V[0])
'''

CALL_MESH = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import mesh
    x = np.array([1.0, 10.0, 100.0])
    e2v = np.array([[0, 1], [1, 2], [2, -1], [-1, 0]], dtype=np.int32)
    out, out2 = np.zeros(4), np.zeros(4)
    mesh.edge_sum(x, out, offset_provider={"E2V": e2v, "Other": None})
    mesh.edge_sum(x, out2, E2V=e2v.astype(np.int64))
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"out": out.tolist(), "out2": out2.tolist(), "heavy": heavy,
                      "info": mesh.edge_sum.cache_info()._asdict()}))
'''


def test_calls_with_tables_of_declared_connectivities_are_found_by_the_source(tmp_path):
    first, again = first_and_cached_runs(tmp_path, "mesh", MESH, CALL_MESH)
    assert "sympy" in first["heavy"]
    assert again["heavy"] == [] and again["info"]["compiles"] == 0
    want = [12.0, 120.0, 200.0, np.nan]          # an absent first neighbour: NaN
    for got in (first, again):
        np.testing.assert_array_equal(got["out"], want)
        np.testing.assert_array_equal(got["out2"], want)
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        ref = np.zeros(4)
        importlib.import_module("mesh").edge_sum(
            np.array([1.0, 10.0, 100.0]), ref, backend="interpreter",
            offset_provider={"E2V": np.array([[0, 1], [1, 2], [2, -1], [-1, 0]])})
    finally:
        sys.path.remove(str(tmp_path / "src"))
        sys.modules.pop("mesh", None)
    np.testing.assert_array_equal(again["out"], ref)


# A @function called directly: its result is allocated from the call plan.
FUNCTIONS = '''
from tensorir_dace import Tensor, dims, function

I, J = dims("I J")


@function
def lap(x: Tensor[float, I, J]):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


@function
def scaled(x, s):
    return x * s + 1.0
'''

CALL_FUNCTIONS = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import functions
    x = np.arange(42.0).reshape(6, 7) ** 2 / 10
    r, r2 = functions.lap(x), functions.lap(x + 1.0)
    s = functions.scaled(np.arange(5, dtype=np.float32), 2.0)
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"r": r.tolist(), "r2": r2.tolist(), "s": s.tolist(),
                      "dtype": str(s.dtype), "heavy": heavy,
                      "info": functions.lap.cache_info()._asdict()}))
'''


def test_functions_called_directly_are_found_by_the_source(tmp_path):
    first, again = first_and_cached_runs(tmp_path, "functions", FUNCTIONS, CALL_FUNCTIONS)
    assert "sympy" in first["heavy"]
    assert again["heavy"] == []
    assert again["info"] == {"hits": 1, "misses": 1, "specializations": 1, "compiles": 0,
                             "loads": 1}
    x = np.arange(42.0).reshape(6, 7) ** 2 / 10

    def lap(x):
        return (-4.0 * x[1:-1, 1:-1] + x[2:, 1:-1] + x[:-2, 1:-1] + x[1:-1, 2:]
                + x[1:-1, :-2])
    for got in (first, again):
        np.testing.assert_allclose(got["r"], lap(x), rtol=1e-14)
        np.testing.assert_allclose(got["r2"], lap(x + 1.0), rtol=1e-14)
        assert got["s"] == [1.0, 3.0, 5.0, 7.0, 9.0] and got["dtype"] == "float32"
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        ref = importlib.import_module("functions").lap(x, backend="interpreter")
    finally:
        sys.path.remove(str(tmp_path / "src"))
        sys.modules.pop("functions", None)
    np.testing.assert_allclose(again["r"], ref, rtol=1e-14)
