"""Direct ``@function`` calls with ``out=``, ``domain=`` and ``offset_provider=``
start from the compile cache without translating.

The calling style of weather-model stencils,
``f(a, b, out=c, domain={Edge: (s, e), K: (0, nlev)}, offset_provider={...})``,
is looked up by the Python source like a plain ``@program`` call
(``frontend.by_source``): the key holds ``out``'s dtypes and ranks (one array
or a tuple of them) and the domain's dimensions, and the bounds are arguments
of the compiled program.  A new process whose binaries are cached imports
neither SymPy nor DaCe (nor does an annotation written with ``I.size``), and
rejects bad arguments with the very errors of a process that translates.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import tensorir_dace as tir
from test_decorated_startup import first_and_cached_runs
from test_startup import run_fresh

ICON = '''
from tensorir_dace import Tensor, connectivity, dims, function, neighbor_dim, neighbor_sum

Vertex, Edge, K = dims("Vertex Edge K")
E2VDim = neighbor_dim(Vertex, 2)
E2V = connectivity("E2V", Edge, E2VDim)


@function
def edge_diff(x: Tensor[float, Vertex, K], w: Tensor[float, Edge, K[0:K.size]]):
    return w * (x(E2V[1]) - x(E2V[0]))


@function
def both(x: Tensor[float, Vertex, K], w: Tensor[float, Edge, K]):
    return neighbor_sum(x(E2V), axis=E2VDim), w * 2.0
'''

# Each call, then the errors of bad calls (after the heavy modules are noted).
CALL = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import icon
    import tensorir_dace as tir
    from tensorir_dace.runtime.cachedir import compile_count
    after_import = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    rng = np.random.default_rng(0)
    x, w = rng.random((5, 4)), rng.random((8, 4))
    e2v = rng.integers(0, 5, (8, 2)).astype(np.int32)
    tables = {"E2V": e2v}
    Edge, K = icon.Edge, icon.K
    outs = {}
    for name, domain in [("a", {Edge: (1, 7), K: (0, 4)}), ("b", {K: (0, 2), Edge: (0, 8)}),
                         ("k", {K: (1, 4)}), ("all", None)]:
        out = np.zeros((8, 4))
        icon.edge_diff(x, w, out=out, domain=domain, offset_provider=tables)
        outs[name] = out.tolist()
    s, d = np.zeros((8, 4)), np.zeros((8, 4))
    icon.both(x, w, out=(s, d), offset_provider=tables)
    outs["both"] = [s.tolist(), d.tolist()]
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    compiled = compile_count()
    info = [f.cache_info()._asdict() for f in (icon.edge_diff, icon.both)]
    errors = {}
    bad = [("dtype", np.zeros((8, 4), np.float32), {Edge: (0, 8)}, tables),
           ("shape", np.zeros((8, 3)), {Edge: (0, 8)}, tables),
           ("range", np.zeros((8, 4)), {Edge: (2, 9)}, tables),
           ("table", np.zeros((8, 4)), {Edge: (0, 8)}, {"E2V": np.where(e2v == 3, 7, e2v)})]
    for name, out, domain, provider in bad:
        try:
            icon.edge_diff(x, w, out=out, domain=domain, offset_provider=provider)
            errors[name] = None
        except tir.TensorIRError as e:
            errors[name] = [type(e).__name__, e.message, bool(out.any())]
    print(json.dumps({"outs": outs, "import": after_import, "heavy": heavy,
                      "compiled": compiled, "errors": errors,
                      "info": info[0], "info_both": info[1]}))
'''


def numpy_results() -> dict:
    rng = np.random.default_rng(0)
    x, w = rng.random((5, 4)), rng.random((8, 4))
    e2v = rng.integers(0, 5, (8, 2)).astype(np.int32)
    full = w * (x[e2v[:, 1]] - x[e2v[:, 0]])
    want = {}
    for name, (es, ks) in {"a": (slice(1, 7), slice(0, 4)), "b": (slice(0, 8), slice(0, 2)),
                           "k": (slice(None), slice(1, 4)), "all": (slice(None),) * 2}.items():
        out = np.zeros((8, 4))
        out[es, ks] = full[es, ks]
        want[name] = out
    want["both"] = [x[e2v].sum(axis=1), 2.0 * w]
    return want


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script run cold (translates and compiles) and again (all cached); the
    compile cache they share."""
    root = tmp_path_factory.mktemp("direct")
    return (*first_and_cached_runs(root, "icon", ICON, CALL), root / "cache")


def test_cached_direct_calls_import_neither_sympy_nor_dace(runs):
    first, again, _ = runs
    assert first["import"] == [] and "sympy" in first["heavy"] and first["compiled"] == 4
    assert again["import"] == [] and again["heavy"] == [] and again["compiled"] == 0
    # one program per set of domain dimensions; the bounds are arguments
    assert again["info"] == {"hits": 1, "misses": 3, "specializations": 3, "compiles": 0,
                             "loads": 3}
    assert again["info_both"]["loads"] == 1 and again["info_both"]["compiles"] == 0
    want = numpy_results()
    for got in (first, again):
        for name in ("a", "b", "k", "all"):
            np.testing.assert_allclose(got["outs"][name], want[name], rtol=1e-14,
                                       err_msg=name)
        np.testing.assert_allclose(got["outs"]["both"], want["both"], rtol=1e-14)


def test_the_interpreter_agrees(runs, tmp_path):
    _, again, _ = runs
    src = tmp_path
    (src / "icon.py").write_text(ICON)
    sys.path.insert(0, str(src))
    try:
        icon = importlib.import_module("icon")
        rng = np.random.default_rng(0)
        x, w = rng.random((5, 4)), rng.random((8, 4))
        e2v = rng.integers(0, 5, (8, 2)).astype(np.int32)
        out = np.zeros((8, 4))
        icon.edge_diff(x, w, out=out, domain={icon.Edge: (1, 7), icon.K: (0, 4)},
                       offset_provider={"E2V": e2v}, backend="interpreter")
        s, d = np.zeros((8, 4)), np.zeros((8, 4))
        icon.both(x, w, out=(s, d), offset_provider={"E2V": e2v}, backend="interpreter")
    finally:
        sys.path.remove(str(src))
        sys.modules.pop("icon", None)
    np.testing.assert_allclose(again["outs"]["a"], out, rtol=1e-14)
    np.testing.assert_allclose(again["outs"]["both"], [s, d], rtol=1e-14)


def test_bad_calls_raise_the_errors_of_the_translated_path(runs):
    first, again, _ = runs
    assert again["errors"] == first["errors"]
    errors = again["errors"]
    for name in ("dtype", "shape", "range", "table"):
        assert errors[name] is not None and errors[name][0] == "ArgumentError", name
        assert not errors[name][2], f"{name}: the output was written"
    assert "float32" in errors["dtype"][1] and "float64" in errors["dtype"][1]
    assert "E2V" in errors["table"][1]
    assert "9" in errors["range"][1]


def test_an_edited_function_is_a_miss(runs, tmp_path):
    *_, cache = runs
    changed = tmp_path / "src"
    changed.mkdir()
    (changed / "icon.py").write_text(ICON.replace("return w * (", "return 2.0 * w * ("))
    got = run_fresh(CALL, cache, changed)
    assert "sympy" in got["heavy"] and got["compiled"] == 3     # ``both`` is unchanged
    assert got["info_both"]["loads"] == 1
    want = numpy_results()
    np.testing.assert_allclose(got["outs"]["a"], 2.0 * want["a"], rtol=1e-14)


def test_the_key_follows_out_domain_and_device():
    from tensorir_dace.frontend.by_source import call_key, describe_into

    I, J = tir.dims("I J")
    a, b = np.zeros((3, 4)), np.zeros((3, 4), np.float32)
    keys = {describe_into(a, {I: (0, 3)}, False), describe_into(a, {J: (0, 3)}, False),
            describe_into(a, {I: (0, 1), J: (0, 3)}, False), describe_into(a, None, False),
            describe_into(b, {I: (0, 3)}, False), describe_into((a, a), None, False),
            describe_into(a[None], None, False)}
    assert None not in keys and len(keys) == 7
    assert describe_into(a, {I: (0, 3)}, False) == describe_into(a, {I: (1, 2)}, False)
    assert describe_into(a, {I: (0, 3)}, True) != describe_into(a[:2], {I: (0, 2)}, True)
    assert describe_into(a, {I: [0, 3]}, False) == describe_into(a, {I: (0, 3)}, False)
    for bad_out, domain in [([a], None), (a, {"I": (0, 3)}), (a, {I: {0, 3}}),
                            (a, {I: (0, 1, 2)}), ((), None)]:
        assert describe_into(bad_out, domain, False) is None

    def twice(x):
        return x * 2.0

    into = {"out": a, "domain": {I: (0, 3)}}
    cpu, gpu = tir.function(twice), tir.function(twice, device="gpu")
    described = cpu._call_description((a,), {}, into)[1]
    assert described == gpu._call_description((a,), {}, into)[1]
    assert described[-4:] == ("into", False, (("<f8", 2, (3, 4)),), ("I",))
    key = call_key(cpu.fn, described, cpu.compile_options)
    assert key is not None and key != call_key(gpu.fn, described, gpu.compile_options)
    assert key != call_key(cpu.fn, described, {"optimize": "none"})
    assert key != call_key(cpu.fn, cpu._call_description((a,), {}, {"out": a})[1], {})
