"""Cheap calls: the last call's arguments found again by identity, small
constant-size programs compiled as sequential loops, and every check still in force.

A call with the very argument objects of the previous call is recognised by
their identities (dictionary lookups by name, any keyword order) and runs at
once; anything that could make the prepared call wrong -- a shape or dtype
changed in place, an output made read-only, another scalar value, a freed
array whose id comes back -- takes the checked path.
"""

from __future__ import annotations

import gc
import pathlib

import dace
import numpy as np
import pytest

import tensorir_dace as tir
from conftest import assert_same_results
from tensorir_dace import openmp
from tensorir_dace.lowering import lower_program
from tensorir_dace.runtime.native import NativeCallable, _hot_call
from tensorir_dace.testing import clone, random_arguments
from tensorir_dace.transforms.openmp_maps import parallel_maps, small_maps_one_thread
from test_startup import LAP, numpy_lap

# Constant sizes, two statements (two parallel maps), a scalar.
SMALL = """
small(out: tensor<float, I[0:6], J[0:5]>, sq: tensor<float, I[0:6], J[0:5]>,
      inp: tensor<float, I[-1:7], J[0:5]>, w: tensor<float>) {
  out ← w × (⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) - 2.0 × inp)
  sq ← inp × inp
}
"""


@pytest.fixture(scope="module")
def lap(tmp_path_factory):
    prog = tir.compile(LAP, cache_dir=tmp_path_factory.mktemp("cache"))
    assert isinstance(prog._callable, NativeCallable)
    return prog


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    prog = tir.compile(SMALL, cache_dir=tmp_path_factory.mktemp("cache"))
    assert isinstance(prog._callable, NativeCallable)
    return prog


# --------------------------------------------------------------------------- small maps


def _top_maps(sdfg):
    return [n for s in sdfg.states() for n in s.nodes()
            if isinstance(n, dace.nodes.MapEntry) and s.entry_node(n) is None]


def test_constant_small_maps_are_compiled_as_sequential_loops():
    sdfg = lower_program(tir.parse(SMALL), optimize="none").sdfg
    count = len(parallel_maps(sdfg))
    small_maps_one_thread(sdfg)
    assert count >= 2 and not parallel_maps(sdfg)
    assert len(_top_maps(sdfg)) == count
    assert all(m.map.schedule == dace.ScheduleType.Sequential for m in _top_maps(sdfg))


def test_scratch_of_a_sequential_map_stays_on_the_stack():
    """Per-point scratch of a fused map gets the stack storage an OpenMP map
    gives it, not heap arrays allocated and freed at every point."""
    nabla = (pathlib.Path(__file__).parent.parent / "sdfg_examples" / "nabla.tir").read_text()
    sdfg = lower_program(tir.parse(nabla), optimize="default").sdfg
    assert not parallel_maps(sdfg)
    inner = [s.scope_dict() for s in sdfg.states()]
    scratch = {n.data for s, scopes in zip(sdfg.states(), inner) for n in s.data_nodes()
               if scopes[n] is not None and sdfg.arrays[n.data].transient}
    assert scratch and all(sdfg.arrays[d].storage == dace.StorageType.Register for d in scratch)
    code = sdfg.generate_code()[0].clean_code
    body = code[code.index("_internal("):code.index("DACE_EXPORTED")]    # not init
    assert "omp" not in code and "aligned_new_array" not in body


def test_symbolic_or_large_maps_are_left_to_the_runtime(monkeypatch):
    sdfg = lower_program(tir.parse(LAP), optimize="none").sdfg
    small_maps_one_thread(sdfg)
    assert all(m.map.omp_num_threads == 0 for m in parallel_maps(sdfg))
    monkeypatch.setattr(openmp, "SEQUENTIAL_BELOW", 30)     # 6 x 5 points: not below
    sdfg = lower_program(tir.parse(SMALL), optimize="none").sdfg
    small_maps_one_thread(sdfg)
    assert all(m.map.omp_num_threads == 0 for m in parallel_maps(sdfg))


LAP3D = """
lap3d(out: tensor<float, I[0:N], J[0:M], K[0:L]>,
      inp: tensor<float, I[-1:N+1], J[-1:M+1], K[0:L]>) {
  out ← -4.0 × inp + ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp)
}
"""


def test_points_count_the_loops_passes_move_into_the_tasklet():
    """Streaming stores leave an I map whose tasklet loops over J and K (one
    run: the rows lie end to end): the threading decision must still see
    N x M x L points (a 256 x 256 x 80 Laplacian ran one-threaded when only
    the map's iterations were counted)."""
    from tensorir_dace.runtime.compiled import parallel_volume
    sdfg = lower_program(tir.parse(LAP3D), optimize="default").sdfg
    assert [len(m.map.params) for m in parallel_maps(sdfg)] == [1]      # J and K inside
    sizes = {dace.symbolic.pystr_to_symbolic(s): v for s, v in zip("NML", (256, 256, 80))}
    assert parallel_volume(sdfg).subs(sizes) == 256 * 256 * 80
    constant = LAP3D.replace("N", "64").replace("M", "64").replace("L", "80")
    sdfg = lower_program(tir.parse(constant), optimize="default").sdfg
    assert parallel_maps(sdfg)          # 327680 points: stays an OpenMP map


def test_points_count_the_neighbours_a_point_gathers():
    """A vertex that sums over six edges, each averaged from its two end
    vertices, does several stencil points' work: 200k such vertices are worth
    two threads (they ran one-threaded, 2x slower, when counted as 200k)."""
    from tensorir_dace.runtime.compiled import parallel_volume
    nabla = (pathlib.Path(__file__).parent.parent / "sdfg_examples" / "nabla.tir").read_text()
    symbolic = nabla.replace("5440", "V").replace("16167", "E")
    assert "V]" in symbolic and "E]" in symbolic
    sdfg = lower_program(tir.parse(symbolic), optimize="default").sdfg
    volume = parallel_volume(sdfg)
    points = {str(s): s for s in volume.free_symbols}
    at = {points["V"]: 200_000, **({points["E"]: 600_000} if "E" in points else {})}
    assert volume.subs(at) >= 4 * 200_000 >= openmp.SEQUENTIAL_BELOW


def test_integers_a_float_scalar_cannot_hold_are_argument_errors(lap):
    """The prepared call converts scalars itself: an integer beyond every
    float, or one a float would round, is the checked path's ArgumentError,
    never a raw OverflowError or a silently rounded value."""
    inp, out = np.random.rand(12, 12), np.zeros((10, 10))
    for w in (10**400, 2**53 + 1):
        with pytest.raises(tir.ArgumentError, match="not exactly representable"):
            lap(out=out, inp=inp, w=w)
    lap(out=out, inp=inp, w=2**53)
    np.testing.assert_allclose(out, numpy_lap(inp, 2.0**53), rtol=1e-13)


def test_one_threaded_program_agrees_with_the_interpreter(small):
    """The compiled code has no OpenMP region; the runtime switches nothing."""
    call = small._callable
    assert call.plan["volume"] is None
    source = (call.library.path.parent.parent / "src" / "cpu" / f"{call.plan['name']}.cpp")
    assert "#pragma omp parallel" not in source.read_text()
    parsed = tir.parse(SMALL)
    for seed in range(3):
        args = random_arguments(parsed, seed=seed)
        ref = clone(args)
        tir.interpret(parsed, **ref)
        small(**args)
        assert_same_results(args, ref)
        assert all(not e.sequential for e in call._entries.values())


# --------------------------------------------------------------------------- the last call


def test_the_same_objects_run_again_in_any_keyword_order(lap):
    call = lap._callable
    call.clear_cache()
    inp, out = np.random.rand(9, 8), np.zeros((7, 6))
    lap(out=out, inp=inp, w=2.0)
    assert call._last is not None
    first = call._last
    inp += 1.0                                     # same objects, new contents
    lap(inp=inp, w=2.0, out=out)                   # another keyword order
    assert call._last is first
    np.testing.assert_allclose(out, numpy_lap(inp, 2.0), rtol=1e-13)
    lap(out=out, inp=inp, w=3.0)                   # another scalar value
    np.testing.assert_allclose(out, numpy_lap(inp, 3.0), rtol=1e-13)
    lap(out=out, inp=inp, w=3)                     # another scalar type
    np.testing.assert_allclose(out, numpy_lap(inp, 3.0), rtol=1e-13)


def test_the_same_objects_take_the_hot_path_and_changes_do_not(lap):
    """A call with the last call's objects runs from the hot function alone;
    anything its checks do not accept goes on to the full call method."""
    call = lap._callable
    call.clear_cache()              # (else found by its buffers if a freed one's come back)
    inp, out = np.random.rand(9, 8), np.zeros((7, 6))
    lap(out=out, inp=inp, w=2.0)
    passed_on = []
    hot = _hot_call(call._same_text, call._hot, call._program,
                    lambda kwargs: (passed_on.append(sorted(kwargs)), call.call(kwargs)))
    inp += 1.0
    hot({"inp": inp, "w": 2.0, "out": out})
    assert passed_on == []
    np.testing.assert_allclose(out, numpy_lap(inp, 2.0), rtol=1e-13)
    hot({"inp": inp, "w": 3.0, "out": out})                 # another value
    hot({"inp": inp[:], "w": 3.0, "out": out})              # another object
    with pytest.raises(tir.ArgumentError, match="missing argument"):
        hot({"inp": inp, "w": 3.0})                         # a name missing
    out.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match="read-only"):
        hot({"inp": inp, "w": 3.0, "out": out})
    assert len(passed_on) == 4


def test_changes_in_place_are_seen(lap):
    call = lap._callable
    inp, out = np.random.rand(9, 8), np.zeros((7, 6))
    lap(out=out, inp=inp, w=1.0)
    out.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match="read-only"):
        lap(out=out, inp=inp, w=1.0)
    out.flags.writeable = True
    flat = np.random.rand(8 * 9)
    inp2 = flat.reshape(9, 8)
    lap(out=out, inp=inp2, w=1.0)
    inp2.shape = (8, 9)                            # the same object, another shape
    out2 = np.zeros((6, 7))
    lap(out=out2, inp=inp2, w=1.0)
    np.testing.assert_allclose(out2, numpy_lap(inp2, 1.0), rtol=1e-13)
    lap(out=out2, inp=inp2, w=1.0)
    inp2.shape = (9, 8)
    with pytest.raises(tir.ArgumentError):         # out2 does not fit inp2 now
        lap(out=out2, inp=inp2, w=1.0)
    vals = np.random.rand(9, 8)
    lap(out=out, inp=vals, w=1.0)
    vals.dtype = np.int64                          # the same buffer read as integers
    with pytest.raises(tir.ArgumentError, match="expects float64 elements, got int64"):
        lap(out=out, inp=vals, w=1.0)


def test_a_freed_argument_forgets_the_last_call(lap):
    call = lap._callable
    inp, out = np.random.rand(9, 8), np.zeros((7, 6))
    lap(out=out, inp=inp, w=1.0)
    assert call._last is not None
    del inp
    gc.collect()
    assert call._last is None
    for _ in range(20):                            # ids come back: never a stale vector
        inp = np.random.rand(9, 8)
        lap(out=out, inp=inp, w=1.0)
        np.testing.assert_allclose(out, numpy_lap(inp, 1.0), rtol=1e-13)
        del inp


def test_views_and_other_sizes_between_repeated_calls(lap):
    call = lap._callable
    base, out = np.random.rand(12, 12), np.zeros((10, 10))
    small_in, small_out = np.random.rand(5, 6), np.zeros((3, 4))
    for k in range(3):
        lap(out=out, inp=base, w=1.0)
        lap(out=out, inp=base, w=1.0)
        np.testing.assert_allclose(out, numpy_lap(base, 1.0), rtol=1e-13)
        lap(out=out[:, :], inp=base[:, :], w=2.0)      # new objects, freed at once
        assert all(r() is not None for e in (call._last, call._prev) if e for r in e.refs)
        np.testing.assert_allclose(out, numpy_lap(base, 2.0), rtol=1e-13)
        lap(out=small_out, inp=small_in, w=1.0)        # other sizes: initialised again
        lap(out=small_out, inp=small_in, w=1.0)
        np.testing.assert_allclose(small_out, numpy_lap(small_in, 1.0), rtol=1e-13)


PAIR = """
pair(out: tensor<(float, float), I[0:N]>, a: tensor<float, I[0:N]>) {
  out ← make_tuple(a × 2.0, a + 1.0)
}
"""


def test_tuple_parameters_are_matched_leaf_by_leaf(tmp_path):
    prog = tir.compile(PAIR, cache_dir=tmp_path)
    call = prog._callable
    a, x, y = np.random.rand(7), np.zeros(7), np.zeros(7)
    prog(out=(x, y), a=a)
    assert call._last is not None
    first = call._last
    a += 1.0
    prog(out=(x, y), a=a)                          # a new tuple of the same leaves
    assert call._last is first
    np.testing.assert_allclose((x, y), (2.0 * a, a + 1.0), rtol=1e-14)
    z = np.zeros(7)
    prog(out=(x, z), a=a)                          # another leaf
    np.testing.assert_allclose((x, z), (2.0 * a, a + 1.0), rtol=1e-14)
    y.flags.writeable = False
    with pytest.raises(tir.ArgumentError, match="read-only"):
        prog(out=(x, y), a=a)
    with pytest.raises(tir.ArgumentError):
        prog(out=(x,), a=a)                        # not shaped like the type
