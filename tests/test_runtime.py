"""The runtime: compile cache and calling compiled SDFGs (hand-built SDFGs)."""

from __future__ import annotations

import gc
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import dace
import numpy as np
import pytest

from tensorir_dace import ir
from tensorir_dace.errors import ArgumentError
from tensorir_dace.runtime import (
    ArgBinding,
    CallSignature,
    GPUUnavailableError,
    SDFGCallable,
    cache_key,
    cache_stats,
    compile_count,
    compile_sdfg,
    get_cache_dir,
    reset_persistent_lifetimes,
    set_cache_dir,
)
from tensorir_dace.runtime import compiled as compiled_mod

TESTS_DIR = pathlib.Path(__file__).resolve().parent
N = ir.size_symbol("N")
F64 = ir.FLOAT64


def T(dtype, *dims):
    return ir.TensorType(dtype, tuple(ir.Dim(n, a, b) for n, a, b in dims))


# --------------------------------------------------------------------------- SDFGs


def build_shift(name: str = "shift", factor: float = 1.0) -> dace.SDFG:
    """out[i] = alpha * factor * (inp[i-1] + inp[i+1]); inp is I[-1:N+1] (offset 1)."""
    n = dace.symbol("N", dtype=dace.int32)
    sdfg = dace.SDFG(name)
    sdfg.add_array("inp", (n + 2,), dace.float64, offset=(1,))
    sdfg.add_array("out", (n,), dace.float64)
    sdfg.add_scalar("alpha", dace.float64)
    st = sdfg.add_state("s", is_start_block=True)
    st.add_mapped_tasklet(
        "m", {"i": "0:N"},
        inputs={"a": dace.Memlet("inp[i-1]"), "b": dace.Memlet("inp[i+1]"),
                "c": dace.Memlet("alpha[0]")},
        code=f"o = c * {factor!r} * (a + b)",
        outputs={"o": dace.Memlet("out[i]")}, external_edges=True)
    return sdfg


SHIFT_SIG = CallSignature(
    params=(ir.Param("inp", T(F64, ("I", -1, N + 1))),
            ir.Param("out", T(F64, ("I", 0, N))),
            ir.Param("alpha", T(F64))),
    bindings=(ArgBinding("inp", (), "inp"), ArgBinding("out", (), "out"),
              ArgBinding("alpha", (), "alpha")),
    symbols={"N": "N"},
)


def shift_ref(x, alpha, factor=1.0):
    return alpha * factor * (x[:-2] + x[2:])


def build_tuple() -> dace.SDFG:
    """out[i] = t0[i] * t1[i] where t = (float64, int32) leaves t_0, t_1."""
    n = dace.symbol("N", dtype=dace.int32)
    sdfg = dace.SDFG("tuple_mul")
    sdfg.add_array("t_0", (n,), dace.float64)
    sdfg.add_array("t_1", (n,), dace.int32)
    sdfg.add_array("out", (n,), dace.float64)
    st = sdfg.add_state("s", is_start_block=True)
    st.add_mapped_tasklet(
        "m", {"i": "0:N"},
        inputs={"a": dace.Memlet("t_0[i]"), "b": dace.Memlet("t_1[i]")},
        code="o = a * b", outputs={"o": dace.Memlet("out[i]")}, external_edges=True)
    return sdfg


TUPLE_SIG = CallSignature(
    params=(ir.Param("t", T(ir.TupleType((F64, ir.INT32)), ("I", 0, N))),
            ir.Param("out", T(F64, ("I", 0, N)))),
    bindings=(ArgBinding("t", (0,), "t_0"), ArgBinding("t", (1,), "t_1"),
              ArgBinding("out", (), "out")),
    symbols={"N": "N"},
)


def build_symbol_param(symbol_type=dace.int64) -> dace.SDFG:
    """out[i] = inp[i] + n, with the scalar parameter n passed as an SDFG symbol."""
    size = dace.symbol("S", dtype=dace.int32)
    sdfg = dace.SDFG(f"addn_{symbol_type.to_string()}")
    sdfg.add_symbol("n", symbol_type)
    sdfg.add_array("inp", (size,), dace.float64)
    sdfg.add_array("out", (size,), dace.float64)
    st = sdfg.add_state("s", is_start_block=True)
    st.add_mapped_tasklet(
        "m", {"i": "0:S"}, inputs={"a": dace.Memlet("inp[i]")}, code="o = a + n",
        outputs={"o": dace.Memlet("out[i]")}, external_edges=True)
    return sdfg


SYMBOL_SIG = CallSignature(
    params=(ir.Param("inp", T(F64, ("I", 0, N))), ir.Param("out", T(F64, ("I", 0, N))),
            ir.Param("n", T(ir.INT64))),
    bindings=(ArgBinding("inp", (), "inp"), ArgBinding("out", (), "out"),
              ArgBinding("n", (), "n")),
    symbols={"N": "S"},   # size symbol N is SDFG symbol S
)


def build_persistent() -> dace.SDFG:
    """tmp = 2*inp (a Persistent transient of size N); out = tmp + 1."""
    n = dace.symbol("N", dtype=dace.int32)
    sdfg = dace.SDFG("persist")
    sdfg.add_array("inp", (n,), dace.float64)
    sdfg.add_array("out", (n,), dace.float64)
    sdfg.add_transient("tmp", (n,), dace.float64, lifetime=dace.AllocationLifetime.Persistent)
    sdfg.add_transient("small", (4,), dace.float64, lifetime=dace.AllocationLifetime.Persistent)
    s1 = sdfg.add_state("s1", is_start_block=True)
    s1.add_mapped_tasklet("m1", {"i": "0:N"}, inputs={"a": dace.Memlet("inp[i]")},
                          code="o = 2 * a", outputs={"o": dace.Memlet("tmp[i]")},
                          external_edges=True)
    s2 = sdfg.add_state_after(s1, "s2")
    s2.add_mapped_tasklet("m2", {"i": "0:N"}, inputs={"a": dace.Memlet("tmp[i]")},
                          code="o = a + 1", outputs={"o": dace.Memlet("out[i]")},
                          external_edges=True)
    return sdfg


PERSIST_SIG = CallSignature(
    params=(ir.Param("inp", T(F64, ("I", 0, N))), ir.Param("out", T(F64, ("I", 0, N)))),
    bindings=(ArgBinding("inp", (), "inp"), ArgBinding("out", (), "out")),
    symbols={"N": "N"},
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tir_cache")


@pytest.fixture(scope="module")
def shift_compiled(cache_dir):
    return compile_sdfg(build_shift(), cache_dir=cache_dir)


@pytest.fixture(scope="module")
def shift(shift_compiled):
    return SDFGCallable(shift_compiled, SHIFT_SIG)


def run_child(code: str, **env: str) -> dict:
    full_env = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, env=full_env, cwd=str(TESTS_DIR), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- calling


def test_call_with_offsets(shift):
    x = np.arange(12.0)
    y = np.zeros(10)
    assert shift(inp=x, out=y, alpha=0.5) is None
    np.testing.assert_allclose(y, shift_ref(x, 0.5))


def test_scalar_int_converts_to_float(shift):
    x = np.arange(7.0)
    y = np.zeros(5)
    shift(inp=x, out=y, alpha=2)
    np.testing.assert_allclose(y, shift_ref(x, 2.0))


@pytest.mark.parametrize("bad,match", [
    (dict(inp=np.arange(12, dtype=np.float32)), "expects float64 elements, got float32"),
    (dict(inp=np.arange(11.0)), "size mismatch"),
    (dict(inp=np.zeros((12, 1))), "expects a 1-D array"),
    (dict(out=np.asfortranarray(np.zeros((10, 1)))), "expects a 1-D array"),
    (dict(out=np.lib.stride_tricks.as_strided(np.zeros(1), (10,), (0,))), "several indices"),
    (dict(alpha=1.5 + 0j), "expects a float64 scalar"),
    (dict(alpha=None), "expects a float64 scalar"),
    (dict(bogus=1), "unexpected keyword argument 'bogus'"),
    (dict(alpa=1.0), "did you mean 'alpha'"),
])
def test_bad_arguments_raise_before_running(shift, bad, match):
    kw = dict(inp=np.arange(12.0), out=np.full(10, -7.0), alpha=0.5)
    kw.update(bad)
    if "alpa" in bad:
        del kw["alpha"]
    out_before = kw["out"].copy()
    with pytest.raises(ArgumentError, match=match):
        shift(**kw)
    np.testing.assert_array_equal(kw["out"], out_before)


def test_missing_argument(shift):
    y = np.full(10, -7.0)
    with pytest.raises(ArgumentError, match="missing argument for parameter 'alpha'"):
        shift(inp=np.arange(12.0), out=y)
    assert (y == -7.0).all()


def test_fortran_and_strided_arguments_are_staged(shift):
    big = np.arange(30.0)
    out = np.full(30, -1.0)
    shift(inp=big[::-2][:12], out=out[::3], alpha=1.0)
    np.testing.assert_allclose(out[::3], shift_ref(big[::-2][:12], 1.0))
    assert (np.delete(out, np.arange(0, 30, 3)) == -1).all()


def test_views_as_input_and_output_write_through(shift):
    big = np.arange(30.0)
    out = np.full(40, -1.0)
    shift(inp=big[2:14], out=out[5:15], alpha=1.0)
    np.testing.assert_allclose(out[5:15], shift_ref(big[2:14], 1.0))
    assert (out[:5] == -1).all() and (out[15:] == -1).all()
    # a row of a 2-D array is a C-contiguous view too
    grid = np.arange(60.0).reshape(5, 12)
    res = np.zeros((3, 10))
    shift(inp=grid[3], out=res[1], alpha=1.0)
    np.testing.assert_allclose(res[1], shift_ref(grid[3], 1.0))
    assert (res[0] == 0).all() and (res[2] == 0).all()


def test_repeat_calls_reuse_prepared_arguments(shift_compiled):
    f = SDFGCallable(shift_compiled, SHIFT_SIG)
    x = np.arange(12.0)
    y = np.zeros(10)
    f(inp=x, out=y, alpha=0.5)
    assert f.cache_info() == {"hits": 0, "misses": 1, "size": 1}
    for _ in range(5):
        f(inp=x, out=y, alpha=0.5)
    assert f.cache_info()["hits"] == 5 and f.cache_info()["misses"] == 1
    x[:] = 2 * x   # same arrays, new contents: still correct
    f(inp=x, out=y, alpha=0.5)
    np.testing.assert_allclose(y, shift_ref(x, 0.5))
    assert f.cache_info()["hits"] == 6
    f(inp=x, out=y, alpha=0.25)      # new scalar value: a new entry
    np.testing.assert_allclose(y, shift_ref(x, 0.25))
    assert f.cache_info()["misses"] == 2
    f(inp=x, out=y, alpha=0.5)       # the first entry is still there
    assert f.cache_info()["hits"] == 7


def test_scalar_type_is_part_of_the_key(shift_compiled):
    # 1 and 1.0 are equal and hash alike; an int param would accept one and not
    # the other, so the key keeps the type.  Here: both are fine for float64.
    f = SDFGCallable(shift_compiled, SHIFT_SIG)
    x, y = np.arange(12.0), np.zeros(10)
    f(inp=x, out=y, alpha=1)
    f(inp=x, out=y, alpha=1.0)
    assert f.cache_info()["misses"] == 2
    with pytest.raises(ArgumentError, match="got bool"):
        f(inp=x, out=y, alpha=True)


def test_new_arrays_each_call_stay_correct(shift_compiled):
    # Freed arrays may have their id() reused: entries must not be mistaken.
    f = SDFGCallable(shift_compiled, SHIFT_SIG, max_cached=2)
    rng = np.random.default_rng(0)
    for i in range(50):
        n = int(rng.integers(1, 30))
        x = rng.random(n + 2)
        y = np.zeros(n)
        f(inp=x, out=y, alpha=0.5)
        np.testing.assert_allclose(y, shift_ref(x, 0.5))
        del x, y
        if i % 10 == 0:
            gc.collect()
    assert f.cache_info()["size"] <= 2


def test_size_change_between_calls(shift):
    for n in (3, 1000, 3, 0):
        x = np.arange(n + 2.0)
        y = np.zeros(n)
        shift(inp=x, out=y, alpha=1.0)
        np.testing.assert_allclose(y, shift_ref(x, 1.0))


def test_fast_marshalling_matches_dace(shift_compiled):
    class DaceMarshalling(SDFGCallable):
        use_fast_marshalling = False

    fast = SDFGCallable(shift_compiled, SHIFT_SIG)
    slow = DaceMarshalling(shift_compiled, SHIFT_SIG)
    assert fast._marshal_plan is not None and slow._marshal_plan is None
    x, y = np.arange(12.0), np.zeros(10)
    fast(inp=x, out=y, alpha=0.5)
    slow(inp=x, out=y, alpha=0.5)
    (ef,), (es,) = fast._entries.values(), slow._entries.values()
    assert [type(a) for a in ef.callargs] == [type(a) for a in es.callargs]
    assert [a.value for a in ef.callargs] == [a.value for a in es.callargs]
    assert [a.value for a in ef.initargs] == [a.value for a in es.initargs]
    y2 = np.zeros(10)
    slow(inp=x[:], out=y2, alpha=0.5)   # DaCe's path with a view
    np.testing.assert_allclose(y2, shift_ref(x, 0.5))


def test_tuple_leaves(cache_dir):
    f = SDFGCallable.from_sdfg(build_tuple(), TUPLE_SIG, cache_dir=cache_dir)
    a = np.arange(5.0)
    b = np.arange(5, dtype=np.int32)
    out = np.zeros(5)
    f(t=(a, b), out=out)
    np.testing.assert_allclose(out, a * b)
    f(t=(a, b), out=out)
    assert f.cache_info()["hits"] == 1     # tuple leaves are keyed by identity too
    with pytest.raises(ArgumentError, match=r"'t' element \[1\] expects int32"):
        f(t=(a, b.astype(np.int64)), out=out)


def test_scalar_parameter_as_sdfg_symbol(cache_dir):
    f = SDFGCallable.from_sdfg(build_symbol_param(dace.int64), SYMBOL_SIG, cache_dir=cache_dir)
    x, y = np.arange(4.0), np.zeros(4)
    f(inp=x, out=y, n=2**40)
    np.testing.assert_allclose(y, x + 2.0**40)
    f(inp=x, out=y, n=3)
    np.testing.assert_allclose(y, x + 3)


def test_symbol_out_of_range_for_int32(cache_dir):
    f = SDFGCallable.from_sdfg(build_symbol_param(dace.int32), SYMBOL_SIG, cache_dir=cache_dir)
    x, y = np.arange(4.0), np.zeros(4)
    f(inp=x, out=y, n=-5)
    np.testing.assert_allclose(y, x - 5)
    with pytest.raises(ArgumentError, match="does not fit"):
        f(inp=x, out=y, n=2**40)


def test_signature_mismatch_is_reported(shift_compiled):
    bad_dtype = CallSignature(
        params=(ir.Param("inp", T(ir.FLOAT32, ("I", -1, N + 1))),) + SHIFT_SIG.params[1:],
        bindings=SHIFT_SIG.bindings, symbols=SHIFT_SIG.symbols)
    with pytest.raises(ValueError, match="'inp' is float64 in the SDFG"):
        SDFGCallable(shift_compiled, bad_dtype)
    missing = CallSignature(params=SHIFT_SIG.params, bindings=SHIFT_SIG.bindings[:2],
                            symbols=SHIFT_SIG.symbols)
    with pytest.raises(ValueError, match="'alpha'"):
        SDFGCallable(shift_compiled, missing)
    wrong_name = CallSignature(params=SHIFT_SIG.params,
                               bindings=SHIFT_SIG.bindings[:2] + (ArgBinding("alpha", (), "beta"),),
                               symbols=SHIFT_SIG.symbols)
    with pytest.raises(ValueError, match="'beta'.*not an argument"):
        SDFGCallable(shift_compiled, wrong_name)


def test_lowering_shape_bug_is_caught(shift_compiled):
    # A signature claiming inp is I[0:N] while the SDFG's inp has N+2 elements.
    lying = CallSignature(
        params=(ir.Param("inp", T(F64, ("I", 0, N))),) + SHIFT_SIG.params[1:],
        bindings=SHIFT_SIG.bindings, symbols=SHIFT_SIG.symbols)
    f = SDFGCallable(shift_compiled, lying)
    y = np.full(10, -1.0)
    with pytest.raises(RuntimeError, match="internal error.*'inp'"):
        f(inp=np.zeros(10), out=y, alpha=1.0)
    assert (y == -1).all()


def test_gpu_program_without_gpu_is_refused(shift_compiled, monkeypatch):
    f = SDFGCallable(shift_compiled, SHIFT_SIG)
    monkeypatch.setattr(compiled_mod, "gpu_available", lambda: False)
    f._has_gpu_code = True     # as if compiled for CUDA; must not reach the library
    y = np.full(10, -1.0)
    with pytest.raises(GPUUnavailableError, match="compiled for a GPU"):
        f(inp=np.arange(12.0), out=y, alpha=1.0)
    assert (y == -1).all()


def test_gpu_probe_does_not_crash():
    assert compiled_mod.gpu_available() in (True, False)


# --------------------------------------------------------------------------- cache


def test_cache_dir_defaults(monkeypatch, tmp_path):
    set_cache_dir(None)
    monkeypatch.setenv("TENSORIR_DACE_CACHE", str(tmp_path / "a"))
    assert get_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("TENSORIR_DACE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert get_cache_dir() == tmp_path / "xdg" / "tensorir_dace"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert get_cache_dir() == pathlib.Path.home() / ".cache" / "tensorir_dace"
    set_cache_dir(tmp_path / "b")
    try:
        assert get_cache_dir() == tmp_path / "b"
    finally:
        set_cache_dir(None)


def test_key_is_content_addressed():
    assert cache_key(build_shift()) == cache_key(build_shift())
    assert cache_key(build_shift()) != cache_key(build_shift(factor=2.0))
    with dace.config.set_temporary("compiler", "build_type", value="Debug"):
        debug_key = cache_key(build_shift())
    assert debug_key != cache_key(build_shift())


def test_folder_layout(shift_compiled, cache_dir):
    key = cache_key(build_shift())
    name = f"shift_{key[:16]}"
    folder = cache_dir / name
    assert shift_compiled.sdfg.name == name
    assert (folder / "ready").is_file()
    assert (cache_dir / f"{name}.lock").exists()
    info = json.loads((folder / "ready").read_text())
    assert info["key"] == key and (folder / info["library"]).is_file()


def test_identical_sdfg_hits_memo(shift_compiled, cache_dir):
    before = cache_stats()
    again = compile_sdfg(build_shift(), cache_dir=cache_dir)   # a new, equal SDFG object
    after = cache_stats()
    assert again is shift_compiled
    assert after["compiled"] == before["compiled"]
    assert after["memo_hits"] == before["memo_hits"] + 1


def test_changed_sdfg_compiles_again(cache_dir):
    before = compile_count()
    c = compile_sdfg(build_shift(factor=3.0), cache_dir=cache_dir)
    assert compile_count() == before + 1
    f = SDFGCallable(c, SHIFT_SIG)
    x, y = np.arange(12.0), np.zeros(10)
    f(inp=x, out=y, alpha=1.0)
    np.testing.assert_allclose(y, shift_ref(x, 1.0, 3.0))


def test_input_sdfg_is_not_modified(cache_dir):
    sdfg = build_persistent()
    name, key = sdfg.name, cache_key(sdfg)
    compile_sdfg(sdfg, cache_dir=cache_dir)
    assert sdfg.name == name and cache_key(sdfg) == key
    assert sdfg.arrays["tmp"].lifetime == dace.AllocationLifetime.Persistent


def test_persistent_transients_follow_the_sizes(cache_dir):
    """Persistent transients stay persistent (allocated once per size, not per
    call); the program is initialised again when the sizes change."""
    c = compile_sdfg(build_persistent(), cache_dir=cache_dir)
    assert c.sdfg.arrays["tmp"].lifetime == dace.AllocationLifetime.Persistent
    assert c.sdfg.arrays["small"].lifetime == dace.AllocationLifetime.Persistent   # constant size
    f = SDFGCallable(c, PERSIST_SIG)
    for n in (4, 5000, 4, 20000):    # growing sizes would overflow a Persistent tmp
        x = np.arange(float(n))
        y = np.zeros(n)
        f(inp=x, out=y)
        np.testing.assert_allclose(y, 2 * x + 1)


def test_reset_persistent_lifetimes_counts():
    sdfg = build_persistent()
    assert reset_persistent_lifetimes(sdfg) == 1
    assert reset_persistent_lifetimes(sdfg) == 0


def test_subprocess_loads_without_compiling(shift_compiled, cache_dir):
    stats = run_child(f"""
        import json, sys
        sys.path.insert(0, {str(TESTS_DIR)!r})
        import numpy as np
        from tensorir_dace.runtime import SDFGCallable, cache_stats, compile_sdfg
        import test_runtime as T
        c = compile_sdfg(T.build_shift(), cache_dir={str(cache_dir)!r})
        f = SDFGCallable(c, T.SHIFT_SIG)
        x, y = np.arange(12.0), np.zeros(10)
        f(inp=x, out=y, alpha=0.5)
        ok = bool(np.allclose(y, T.shift_ref(x, 0.5)))
        print(json.dumps(dict(cache_stats(), ok=ok)))
    """)
    assert stats["ok"]
    assert stats["compiled"] == 0 and stats["loaded"] == 1


def test_subprocess_uses_env_cache_dir(shift_compiled, cache_dir):
    stats = run_child(f"""
        import json, sys
        sys.path.insert(0, {str(TESTS_DIR)!r})
        from tensorir_dace.runtime import cache_stats, compile_sdfg, get_cache_dir
        import test_runtime as T
        compile_sdfg(T.build_shift())
        print(json.dumps(dict(cache_stats(), dir=str(get_cache_dir()))))
    """, TENSORIR_DACE_CACHE=str(cache_dir))
    assert stats["dir"] == str(cache_dir)
    assert stats["compiled"] == 0 and stats["loaded"] == 1


def test_concurrent_processes_build_once(tmp_path):
    code = f"""
        import json, sys
        sys.path.insert(0, {str(TESTS_DIR)!r})
        import numpy as np
        from tensorir_dace.runtime import SDFGCallable, cache_stats, compile_sdfg
        import test_runtime as T
        c = compile_sdfg(T.build_shift("race", factor=5.0), cache_dir={str(tmp_path)!r})
        f = SDFGCallable(c, T.SHIFT_SIG)
        x, y = np.arange(12.0), np.zeros(10)
        f(inp=x, out=y, alpha=1.0)
        print(json.dumps(dict(cache_stats(), ok=bool(np.allclose(y, T.shift_ref(x, 1.0, 5.0))))))
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=str(TESTS_DIR),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] for r in results)
    assert sorted((r["compiled"], r["loaded"]) for r in results) == [(0, 1), (1, 0)]


def test_unfinished_folder_is_rebuilt(tmp_path):
    sdfg = build_shift("stale", factor=7.0)
    key = cache_key(sdfg)
    folder = tmp_path / f"stale_{key[:16]}"
    (folder / "build").mkdir(parents=True)
    (folder / "build" / f"libstale_{key[:16]}.so").write_text("garbage")   # no 'ready'
    before = compile_count()
    c = compile_sdfg(sdfg, cache_dir=tmp_path)
    assert compile_count() == before + 1
    f = SDFGCallable(c, SHIFT_SIG)
    x, y = np.arange(12.0), np.zeros(10)
    f(inp=x, out=y, alpha=1.0)
    np.testing.assert_allclose(y, shift_ref(x, 1.0, 7.0))
    assert (folder / "ready").is_file()
