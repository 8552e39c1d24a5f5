"""Call-time safety: neighbour-table entries, overlapping and read-only outputs,
corrupt cached binaries.  Interpreter and compiled code are both compared with
hand-written NumPy; each program is compiled once (module-scoped fixtures)."""

from __future__ import annotations

import logging
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace import callchecks
from tensorir_dace.errors import ArgumentError
from tensorir_dace.runtime import cache as cache_mod

ROOT = pathlib.Path(__file__).resolve().parent.parent

TABLES = """
tables(v: tensor<float, Vertex[0:V]>, w: tensor<float, Vertex[0:W]>, e: tensor<float, Edge[0:E]>,
       E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, V2E: tensor<int, Vertex[0:V], _NB_Edge[0:3]>,
       o: tensor<float, Edge[0:E]>, s: tensor<float, Vertex[0:V]>, c: tensor<bool, Vertex[0:V]>) {
  o ← ⟪E2V, 0⟫(v) + ⟪E2V, 1⟫(w);
  s ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>) → acc + a,
             0.0)(⟪V2E⟫(e));
  c ← can_deref(⟪V2E, 2⟫(e))
}"""

# A computed table: its entries may land outside the operand (absent, not an error).
COMPUTED = """
computed(v: tensor<float, Vertex[0:V]>, E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>,
         k: tensor<int>, o: tensor<float, Edge[0:E]>) {
  t: tensor<int, Edge[0:E], _NB_Vertex[0:2]>;
  t ← E2V + k;
  o ← if(can_deref(⟪t, 0⟫(v)), ⟪t, 0⟫(v), -1.0) + ⟪t, 1⟫(v)
}"""

ALIAS = """
alias(o: tensor<float, I[0:N]>, a: tensor<float, I[-1:N+1]>) { o ← ⟪I, -1⟫(a) + ⟪I, 1⟫(a) }"""

# Reads 'a' after 'x' was written, and updates 'u' in place.
MULTI = """
multi(x: tensor<float, I[0:N]>, y: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>,
      u: tensor<float, I[0:N]>, p: tensor<(float, float), I[0:N]>) {
  x ← a × 2.0;
  y ← a + x;
  u ← u + a;
  p ← make_tuple(a, x)
}"""


@pytest.fixture(scope="module")
def progs():
    return {name: tir.parse(src) for name, src in
            [("tables", TABLES), ("computed", COMPUTED), ("alias", ALIAS), ("multi", MULTI)]}


@pytest.fixture(scope="module")
def comp(progs):
    built: dict = {}

    def get(name):
        if name not in built:
            built[name] = tir.compile(progs[name])
        return built[name]
    return get


def backends(progs, comp, name):
    """(label, run(**kwargs)) for the interpreter and the compiled program."""
    return [("interpret", lambda **kw: tir.interpret(progs[name], **kw)),
            ("compiled", lambda **kw: comp(name)(**kw))]


# --------------------------------------------------------------------------- tables


def table_args(nv=5, nw=4, ne=6, seed=0):
    rng = np.random.default_rng(seed)
    e2v = rng.integers(0, min(nv, nw), size=(ne, 2))
    if ne > 1:
        e2v[1, 1] = -1
    v2e = rng.integers(0, ne, size=(nv, 3)) if ne else np.zeros((nv, 3), dtype=np.int64)
    v2e[0, 2] = -1
    return dict(v=rng.random(nv), w=rng.random(nw), e=rng.random(ne), E2V=e2v, V2E=v2e,
                o=np.zeros(ne), s=np.zeros(nv), c=np.zeros(nv, dtype=bool))


def numpy_tables(v, w, e, E2V, V2E):
    def take(x, idx):
        ok = (idx >= 0) & (idx < len(x))
        return np.where(ok, x[np.where(ok, idx, 0)] if len(x) else 0.0, np.nan), ok
    o = take(v, E2V[:, 0])[0] + take(w, E2V[:, 1])[0]
    vals, ok = take(e, V2E)
    s = np.where(ok, vals, 0.0).sum(axis=1)
    return o, s, V2E[:, 2] >= 0


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_valid_tables_match_numpy(progs, comp, backend):
    run = dict(backends(progs, comp, "tables"))[backend]
    kw = table_args()
    run(**kw)
    o, s, c = numpy_tables(kw["v"], kw["w"], kw["e"], kw["E2V"], kw["V2E"])
    np.testing.assert_allclose(kw["o"], o, equal_nan=True)
    np.testing.assert_allclose(kw["s"], s)
    np.testing.assert_array_equal(kw["c"], c)
    assert np.isnan(kw["o"][1])      # a negative entry stays absent


BAD_ENTRIES = [
    ("V2E", (2, 0), 10**9, "Edge"),
    ("V2E", (4, 1), 6, "Edge"),            # equal to the source size
    ("V2E", (1, 2), 2**62, "Edge"),
    ("E2V", (3, 0), 5, "Vertex"),          # equal to V
    ("E2V", (0, 1), 4, "Vertex[0:W]"),     # inside V, but the second use reads w (W = 4)
]


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
@pytest.mark.parametrize("table,pos,value,dim", BAD_ENTRIES)
def test_table_entry_out_of_range_is_argument_error(progs, comp, backend, table, pos, value,
                                                    dim):
    run = dict(backends(progs, comp, "tables"))[backend]
    kw = table_args()
    kw[table][pos] = value
    kw["o"][:] = kw["s"][:] = 7.0
    with pytest.raises(ArgumentError) as info:
        run(**kw)
    msg = str(info.value)
    assert f"'{table}'" in msg and f"{value}" in msg and f"[{pos[0]}, {pos[1]}]" in msg, msg
    assert dim in msg, msg
    assert (kw["o"] == 7.0).all() and (kw["s"] == 7.0).all()   # nothing ran


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_table_into_empty_source_dimension(progs, comp, backend):
    run = dict(backends(progs, comp, "tables"))[backend]
    kw = table_args(ne=0)            # Edge[0:0], but V2E holds entries 0
    kw["V2E"][:] = 0
    with pytest.raises(ArgumentError, match=r"'V2E' has the entry 0 at index \[0, 0\]"):
        run(**kw)
    kw["V2E"][:] = -1                # all absent: fine
    run(**kw)
    np.testing.assert_array_equal(kw["s"], np.zeros(5))
    assert not kw["c"].any()


def test_table_changed_in_place_is_guarded_in_the_kernel(progs, comp):
    f = comp("tables")
    kw = table_args(seed=1)
    f(**kw)
    # The table's buffer was scanned already: an in-place change is not scanned
    # again, but the kernel never reads out of range (absent instead).
    kw["V2E"][2, 0] = 10**9
    kw["E2V"][3, 0] = 2**62
    f(**kw)
    o, s, _ = numpy_tables(kw["v"], kw["w"], kw["e"], kw["E2V"], kw["V2E"])
    np.testing.assert_allclose(kw["o"], o, equal_nan=True)
    np.testing.assert_allclose(kw["s"][[0, 1, 3, 4]], s[[0, 1, 3, 4]])
    assert np.isnan(kw["o"][3]) and np.isnan(kw["s"][2])
    ref = {**kw, "o": np.zeros_like(kw["o"]), "s": np.zeros_like(kw["s"]),
           "c": np.zeros_like(kw["c"])}
    tir.interpret(progs["tables"], **ref)     # the interpreter agrees (same cached scan)
    for k in ("o", "s", "c"):
        np.testing.assert_array_equal(ref[k], kw[k])
    # A new buffer with the same contents is scanned: an error again.
    with pytest.raises(ArgumentError, match="'V2E' has the entry 1000000000"):
        f(**{**kw, "V2E": kw["V2E"].copy()})


def test_table_scan_is_cached_per_buffer():
    t = np.arange(12).reshape(4, 3)
    st = callchecks._table_stats(t, callchecks.data_pointer(t))
    view = t[...]
    assert callchecks._table_stats(view, callchecks.data_pointer(view)) is st
    other = t.copy()
    assert callchecks._table_stats(other, callchecks.data_pointer(other)) is not st
    assert st.max == 11


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_computed_table_outside_operand_reads_absent(progs, comp, backend):
    run = dict(backends(progs, comp, "computed"))[backend]
    v = np.array([1.0, 2.0, 3.0])
    e2v = np.array([[0, 1], [1, 2], [2, 0], [-1, 2]])
    o = np.zeros(4)
    run(v=v, E2V=e2v, k=1, o=o)      # t = E2V + 1: entries 3 are outside Vertex[0:3]
    t = e2v + 1
    ok = (t >= 0) & (t < 3)
    val = np.where(ok, v[np.where(ok, t, 0)], np.nan)
    expected = np.where(ok[:, 0], val[:, 0], -1.0) + val[:, 1]
    np.testing.assert_allclose(o, expected, equal_nan=True)
    run(v=v, E2V=e2v, k=10**9, o=o)  # far outside: absent everywhere, no crash
    assert np.isnan(o).all()


# --------------------------------------------------------------------------- overlap


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_output_view_of_input(progs, comp, backend):
    run = dict(backends(progs, comp, "alias"))[backend]
    for _ in range(2):               # the second call reuses prepared arguments
        a = np.arange(10.0) ** 2
        expected = a[:-2] + a[2:]
        run(o=a[1:-1], a=a)
        np.testing.assert_allclose(a[1:-1], expected)


def test_output_view_of_input_repeated_with_same_arrays(comp):
    f = comp("alias")
    a = np.arange(10.0) ** 2
    o = a[1:-1]
    for _ in range(3):               # same objects: the copy is refreshed per call
        expected = a[:-2] + a[2:]
        f(o=o, a=a)
        np.testing.assert_allclose(o, expected)


def multi_args(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return dict(x=np.zeros(n), y=np.zeros(n), a=rng.random(n), u=rng.random(n),
                p=(np.zeros(n), np.zeros(n)))


def numpy_multi(a, u):
    x = 2.0 * a
    return dict(x=x, y=a + x, u=u + a, p=(a, x))


def assert_multi(kw, ref):
    for k in ("x", "y", "u"):
        np.testing.assert_allclose(kw[k], ref[k], err_msg=k)
    np.testing.assert_allclose(kw["p"][0], ref["p"][0])
    np.testing.assert_allclose(kw["p"][1], ref["p"][1])


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_one_buffer_as_written_and_read_parameter(progs, comp, backend):
    run = dict(backends(progs, comp, "multi"))[backend]
    kw = multi_args()
    ref = numpy_multi(kw["a"].copy(), kw["u"].copy())
    kw["x"] = kw["a"]                # x ← 2a, then y ← a + x must read the original a
    run(**kw)
    assert_multi(kw, ref)
    kw = multi_args(seed=1)
    kw["u"] = kw["a"][:]             # a view of the input as the in-place output
    ref = numpy_multi(kw["a"].copy(), kw["a"].copy())
    run(**kw)                        # x, y and p read the original a; u ends as 2a
    assert_multi(kw, ref)


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_in_place_update_of_one_parameter(progs, comp, backend):
    run = dict(backends(progs, comp, "multi"))[backend]
    kw = multi_args(seed=2)
    ref = numpy_multi(kw["a"].copy(), kw["u"].copy())
    run(**kw)                        # u ← u + a: the same array in and out
    assert_multi(kw, ref)


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
@pytest.mark.parametrize("how", ["same", "partial", "tuple"])
def test_overlapping_written_parameters_are_refused(progs, comp, backend, how):
    run = dict(backends(progs, comp, "multi"))[backend]
    kw = multi_args()
    big = np.zeros(10)
    if how == "same":
        kw["x"] = kw["y"]
        names = ("'x'", "'y'")
    elif how == "partial":
        kw["x"], kw["y"] = big[:6], big[3:9]
        names = ("'x'", "'y'")
    else:
        kw["p"] = (kw["u"], np.zeros(6))
        names = ("'u'", "'p'[0]")
    with pytest.raises(ArgumentError, match="both written by the program but share memory") \
            as info:
        run(**kw)
    assert all(n in str(info.value) for n in names), str(info.value)


def test_overlap_detection_from_address_ranges():
    base = np.zeros(20)
    spans = [(0, 10, "a", (), False), (10, 20, "b", (), True), (30, 40, "c", (), True)]
    assert not callchecks._any_overlap(list(spans))
    assert callchecks._any_overlap(spans + [(5, 11, "d", (), False)])
    chk = callchecks.CallChecks(tir.parse(ALIAS).params, {"o"})
    values, copies = chk.check({"o": base[2:8], "a": base[10:18]}, {"N": 6})
    assert copies == [] and values["a"] is not None
    values, copies = chk.check({"o": base[2:8], "a": base[1:9]}, {"N": 6})
    assert len(copies) == 1 and copies[0][1].base is base
    assert not np.may_share_memory(values["a"], base)


# --------------------------------------------------------------------------- read-only


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_read_only_output_is_refused(progs, comp, backend):
    run = dict(backends(progs, comp, "alias"))[backend]
    a = np.arange(8.0)
    a.flags.writeable = False        # a read-only input is fine
    o = np.zeros(6)
    run(o=o, a=a)
    np.testing.assert_allclose(o, a[:-2] + a[2:])
    o.flags.writeable = False        # the same objects again, now read-only
    with pytest.raises(ArgumentError, match="parameter 'o' is written by the program, but "
                                            "the array given for it is read-only"):
        run(o=o, a=a)
    fresh = np.zeros(6)
    fresh.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only"):
        run(o=fresh, a=a)
    assert (fresh == 0).all()


# --------------------------------------------------------------------------- cache


SMALL = "small(a: tensor<float, I[0:N]>, o: tensor<float, I[0:N]>) { o ← a × 3.0 }"


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """A cache directory holding the built library of SMALL."""
    root = tmp_path_factory.mktemp("tir_cache_corrupt")
    tir.compile(tir.parse(SMALL), cache_dir=root)
    (lib,) = root.glob("small_*/build/libsmall_*.so")
    return root, lib.relative_to(root)


def corrupted_copy(built_cache, tmp_path, how):
    root, rel = built_cache
    dst = tmp_path / "cache"
    shutil.copytree(root, dst)
    lib = dst / rel
    if how == "stub":               # DaCe's loader library next to the program's
        lib = lib.with_name(lib.name.replace("lib", "libdacestub_", 1))
    if how in ("truncated", "stub"):
        os.truncate(lib, lib.stat().st_size // 3)
    else:
        lib.write_bytes(b"not a shared library\n")
    return dst


@pytest.mark.parametrize("how", ["truncated", "not-elf"])
def test_corrupt_cached_library_rebuilt_in_fresh_process(built_cache, tmp_path, how):
    dst = corrupted_copy(built_cache, tmp_path, how)
    code = f"""
        import numpy as np, tensorir_dace as tir
        from tensorir_dace.runtime import set_cache_dir, cache_stats
        set_cache_dir({str(dst)!r})
        f = tir.compile(tir.parse({SMALL!r}))
        o = np.zeros(4); f(a=np.arange(4.0), o=o)
        print(o.tolist(), cache_stats()["compiled"])
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[-2] == "[0.0, 3.0, 6.0, 9.0] 1"
    assert "rebuilding it" in out.stderr
    assert "truncated" in out.stderr if how == "truncated" else "not an ELF" in out.stderr


@pytest.mark.parametrize("how", ["not-elf", "stub"])
def test_corrupt_cached_library_rebuilt_in_process(built_cache, tmp_path, caplog, monkeypatch,
                                                   how):
    dst = corrupted_copy(built_cache, tmp_path, how)
    monkeypatch.setattr(cache_mod, "_memo", {})     # as a process that has not loaded it
    cache_mod.set_cache_dir(dst)
    try:
        with caplog.at_level(logging.WARNING, logger="tensorir_dace.runtime.cache"):
            f = tir.compile(tir.parse(SMALL))
    finally:
        cache_mod.set_cache_dir(None)
    assert any("rebuilding it" in r.getMessage() for r in caplog.records)
    o = np.zeros(3)
    f(a=np.arange(3.0), o=o)
    np.testing.assert_allclose(o, [0.0, 3.0, 6.0])
    marker = next(dst.glob("small_*/ready")).read_text()
    assert '"sha256"' in marker


# --------------------------------------------------------------------------- seeded random


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_random_tables_error_exactly_when_out_of_range(progs, comp, backend):
    run = dict(backends(progs, comp, "tables"))[backend]
    rng = np.random.default_rng(11)
    for _ in range(30):
        nv, nw, ne = (int(x) for x in rng.integers(0, 6, size=3))
        kw = dict(v=rng.random(nv), w=rng.random(nw), e=rng.random(ne),
                  E2V=rng.integers(-2, max(min(nv, nw), 0) or -1, size=(ne, 2)),
                  V2E=rng.integers(-2, ne or -1, size=(nv, 3)),
                  o=np.zeros(ne), s=np.zeros(nv), c=np.zeros(nv, dtype=bool))
        table = kw["E2V" if rng.random() < 0.5 else "V2E"]
        if table.size and rng.random() < 0.5:      # one entry out of range, maybe
            pos = tuple(int(rng.integers(0, n)) for n in table.shape)
            table[pos] = rng.choice([nv, nw, ne, nv + 1, 10**9, 2**62])
        bad = (kw["E2V"][:, 0] >= nv).any() or (kw["E2V"][:, 1] >= nw).any() \
            or (kw["V2E"] >= ne).any()
        if bad:
            with pytest.raises(ArgumentError, match="neighbour table"):
                run(**kw)
            continue
        run(**kw)
        o, s, c = numpy_tables(kw["v"], kw["w"], kw["e"], kw["E2V"], kw["V2E"])
        np.testing.assert_allclose(kw["o"], o, equal_nan=True)
        np.testing.assert_allclose(kw["s"], s)
        np.testing.assert_array_equal(kw["c"], c)


@pytest.mark.parametrize("backend", ["interpret", "compiled"])
def test_random_overlaps_behave_like_separate_arrays(progs, comp, backend):
    run = dict(backends(progs, comp, "multi"))[backend]
    rng = np.random.default_rng(5)
    n = 6
    for _ in range(40):
        buf = rng.random(4 * n)

        def window(buf=buf):
            """A random window of the shared buffer, or a fresh array."""
            if rng.random() < 0.5:
                return rng.random(n)
            start = int(rng.integers(0, 3 * n + 1))
            return buf[start:start + n]
        kw = dict(x=window(), y=window(), a=window(), u=window(), p=(window(), window()))
        written = [kw["x"], kw["y"], kw["u"], *kw["p"]]
        clash = any(np.may_share_memory(s, t) for i, s in enumerate(written)
                    for t in written[i + 1:])
        if clash:
            with pytest.raises(ArgumentError, match="share memory"):
                run(**kw)
            continue
        ref = numpy_multi(kw["a"].copy(), kw["u"].copy())
        run(**kw)
        assert_multi(kw, ref)
