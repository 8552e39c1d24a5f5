"""Calls with new array objects over known buffers, and why they never get a
stale prepared call.

A call whose argument objects are new (views made per call, say) is found by
its buffer key: per array its shape, C order, writeability, dtype and data
pointer, per table the object owning its memory, per scalar and size keyword
its type and value.  Each test below changes one of these while keeping the
others, and checks that the call is checked again: a result from the other
buffer, or the error the first call with such arguments gives.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace.runtime.native import NativeCallable

GATHER = """gather(o: tensor<float, Edge[0:E]>, v: tensor<float, Vertex[0:V]>,
  E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>) { o ← ⟪E2V, 1⟫(v) }"""

SCALE = """scale(o: tensor<float, I[0:N], J[0:N]>, a: tensor<float, I[0:N], J[0:N]>) {
  o ← a × 2.0 }"""

PAIR = """pair(out: tensor<(float, float), I[0:N]>, a: tensor<float, I[0:N]>) {
  out ← make_tuple(a × 2.0, a + 1.0) }"""

GOOD = [[0, 1], [2, 4], [3, -1]]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def gather(cache):
    prog = tir.compile(GATHER, cache_dir=cache)
    assert isinstance(prog._callable, NativeCallable)
    return prog


@pytest.fixture(scope="module")
def scale(cache):
    prog = tir.compile(SCALE, cache_dir=cache)
    assert isinstance(prog._callable, NativeCallable)
    return prog


def gathered(v: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``o`` of GATHER: ``v`` at the second column, NaN where it is -1."""
    out = np.full(len(table), np.nan)
    ok = table[:, 1] >= 0
    out[ok] = v[table[ok, 1]]
    return out


def test_views_of_another_buffer_with_the_same_shape_are_another_key(gather):
    call = gather._callable
    call.clear_cache()
    table, o = np.array(GOOD), np.zeros(3)
    one, two = np.random.rand(7), np.random.rand(7)
    for _ in range(3):
        for v in (one, two):
            gather(o=o[:], v=v[:5], E2V=table[:])
            np.testing.assert_array_equal(o, gathered(v[:5], table))
            gather(o=o[:], v=v[2:], E2V=table[:])          # another window
            np.testing.assert_array_equal(o, gathered(v[2:], table))
    assert len(call._buffers) == 4


def test_a_known_buffer_seen_transposed_is_staged_reinterpreted_or_read_only_refused(scale):
    call = scale._callable
    call.clear_cache()
    o, a = np.zeros((3, 3)), np.arange(9.0).reshape(3, 3)
    for _ in range(2):
        scale(o=o[:, :], a=a[:, :])
    assert len(call._buffers) == 1
    scale(o=o.T, a=a)                  # same pointer and shape: staged, written through
    np.testing.assert_array_equal(o, 2.0 * a.T)
    with pytest.raises(tir.ArgumentError, match="expects float64 elements, got int64"):
        scale(o=o, a=a.view(np.int64))                     # same pointer, shape, strides
    ro = o[:, :]
    ro.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match="read-only"):
        scale(o=ro, a=a[:, :])
    scale(o=o[:, :], a=a[:, :])
    np.testing.assert_array_equal(o, 2.0 * a)


def test_a_table_seen_through_another_owner_is_scanned_again(gather):
    """Two arrays over the same memory, each reached through its own
    memoryview: the second is a table new to the process, so an entry written
    in between is found."""
    call = gather._callable
    call.clear_cache()
    memory, v, o = np.array(GOOD), np.random.rand(5), np.zeros(3)

    def table() -> np.ndarray:
        return np.frombuffer(memoryview(memory), memory.dtype).reshape(memory.shape)

    first = table()
    gather(o=o, v=v, E2V=first)
    gather(o=o[:], v=v[:], E2V=first[:])                   # known buffers, same owner
    memory[1, 1] = 5                                       # V is 5: out of range
    with pytest.raises(tir.ArgumentError, match="'E2V' has the entry 5 at index \\[1, 1\\]"):
        gather(o=o[:], v=v[:], E2V=table())


def test_a_freed_table_whose_memory_comes_back_is_scanned_again(gather):
    """NumPy hands a freed small buffer to the next array of its size: the
    same address, shape and strides, a new owner, and here a bad entry."""
    call = gather._callable
    call.clear_cache()
    o = np.zeros(3)
    again = 0
    for k in range(10):
        gc.collect()                # frees what earlier rounds' errors still hold
        good, v = np.array(GOOD), np.random.rand(5)
        where = good.__array_interface__["data"][0]
        gather(o=o[:], v=v[:], E2V=good[:])
        np.testing.assert_array_equal(o, gathered(v, good))
        del good, v                 # freed at once: the next table of its size gets its memory
        bad, w = np.array(GOOD), np.random.rand(5)
        bad[2, 1] = 5 + k
        again += bad.__array_interface__["data"][0] == where
        with pytest.raises(tir.ArgumentError, match=f"has the entry {5 + k} at index"):
            gather(o=o[:], v=w[:], E2V=bad[:])
        bad[2, 1] = 4                                       # fixed in place: runs
        gather(o=o[:], v=w[:], E2V=bad[:])
        np.testing.assert_array_equal(o, gathered(w, bad))
        del bad, w
    assert again > 0                # the case this test is about did occur


def test_size_keywords_and_other_names_are_part_of_the_key(gather):
    call = gather._callable
    call.clear_cache()
    table, v, o = np.array(GOOD), np.random.rand(5), np.zeros(3)
    for _ in range(2):
        gather(o=o[:], v=v[:], E2V=table[:], V=5)
        gather(o=o[:], v=v[:], E2V=table[:])
    with pytest.raises(tir.ArgumentError, match="V = 6 from keyword argument V=6"):
        gather(o=o[:], v=v[:], E2V=table[:], V=6)
    with pytest.raises(tir.ArgumentError, match="W"):
        gather(o=o[:], v=v[:], E2V=table[:], W=5)
    with pytest.raises(tir.ArgumentError, match="'E2V'"):
        gather(o=o[:], v=v[:], V=5, E=3)                   # a parameter missing
    gather(E2V=table[:], v=v[:], o=o[:])                   # any keyword order
    np.testing.assert_array_equal(o, gathered(v, table))


def test_two_alternating_argument_sets_are_found_by_identity(scale, monkeypatch):
    call = scale._callable
    call.clear_cache()
    sets = [(np.zeros((4, 4)), np.random.rand(4, 4)) for _ in range(2)]
    slow = []
    real = call._entry_for
    monkeypatch.setattr(call, "_entry_for", lambda *a: slow.append(1) or real(*a))
    for _ in range(5):
        for o, a in sets:
            a += 1.0
            scale(o=o, a=a)
            np.testing.assert_array_equal(o, 2.0 * a)
    assert len(slow) == 2           # only the first call of each set looked further
    del sets[0], o, a
    gc.collect()                    # a freed array forgets its entry: no stale identity
    assert all(r() is not None for e in (call._last, call._prev) if e for r in e.refs)
    for _ in range(3):
        o, a = np.zeros((4, 4)), np.random.rand(4, 4)
        scale(o=o, a=a)
        np.testing.assert_array_equal(o, 2.0 * a)
        del o, a


def test_a_list_for_a_tuple_parameter_is_refused_after_tuples(cache):
    prog = tir.compile(PAIR, cache_dir=cache)
    x, y, a = np.zeros(4), np.zeros(4), np.random.rand(4)
    for _ in range(2):
        prog(out=(x[:], y[:]), a=a[:])
    np.testing.assert_array_equal(x, 2.0 * a)
    with pytest.raises(tir.ArgumentError, match="expects a tuple of 2 arrays, got list"):
        prog(out=[x[:], y[:]], a=a[:])
    with pytest.raises(tir.ArgumentError, match="tuple"):
        prog(out=(x[:],), a=a[:])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_call_sequences_agree_with_numpy(gather, seed):
    """Seeded random sequences of calls mixing kept arrays, new views of them,
    new copies, freed and reallocated arrays, read-only outputs and tables
    with a bad entry: each call either agrees with NumPy or raises the error
    a first call with those arguments raises."""
    rng = np.random.default_rng(seed)
    gather._callable.clear_cache()
    vs = [np.random.rand(9) for _ in range(3)]
    tables = [np.array(GOOD), np.array([[4, 0], [1, 1], [2, 3]])]
    outs = [np.zeros(3), np.zeros(5)]
    for step in range(150):
        k = rng.integers(0, 5)
        v = vs[rng.integers(0, 3)]
        v = v[k:k + 5] if rng.random() < 0.7 else v[k:k + 5].copy()
        t = tables[rng.integers(0, 2)]
        if rng.random() < 0.3:
            t = t.copy()
            if rng.random() < 0.3:
                t[rng.integers(0, 3), 1] = 5 + rng.integers(0, 3)       # out of range
        elif rng.random() < 0.5:
            t = t[:]
        o = outs[0] if rng.random() < 0.5 else outs[1][1:4]
        if rng.random() < 0.1:
            o = o[:]
            o.flags.writeable = False
        if rng.random() < 0.1:                                   # free and reallocate
            i = rng.integers(0, 3)
            vs[i] = np.random.rand(9)
        mistakes = ["has the entry"] * bool(t[:, 1].max() >= 5) \
            + ["read-only"] * (not o.flags.writeable)
        if mistakes:
            with pytest.raises(tir.ArgumentError, match="|".join(mistakes)):
                gather(o=o, v=v, E2V=t)
            continue
        gather(o=o, v=v, E2V=t)
        np.testing.assert_array_equal(o, gathered(v, t), err_msg=f"step {step}")
