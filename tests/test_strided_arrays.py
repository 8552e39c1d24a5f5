"""Arrays of any NumPy layout: Fortran order, transposes, step slices, negative
and zero strides, unaligned data, views that overlap other arguments.

The interpreter reads them as they are (checked against hand-written NumPy);
compiled calls stage them through C-contiguous copies (checked against the
interpreter, and against the same compiled call with C-contiguous arrays of
equal values).  Both refuse what they refused before: wrong element types,
read-only outputs, two outputs that share memory, bad table entries; and
outputs that reach an element through several indices."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace import fuzz
from tensorir_dace.frontend import Tensor, dims, function, program, sizes
from tensorir_dace.runtime.native import NativeCallable
from tensorir_dace.staging import needs_staging
from tensorir_dace.testing import clone, leaves, random_arguments

# --------------------------------------------------------------------------- layouts


def fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


def transposed(a: np.ndarray) -> np.ndarray:
    """Equal values, the first axis innermost in memory."""
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 0, -1)), -1, 0)


def stepped(a: np.ndarray) -> np.ndarray:
    """Every other element of a larger buffer along every axis."""
    big = np.zeros(tuple(2 * n + 1 for n in a.shape), a.dtype)
    v = big[(slice(1, None, 2),) * a.ndim]
    v[...] = a
    return v


def reversed_(a: np.ndarray) -> np.ndarray:
    """Negative strides along every axis."""
    v = np.zeros_like(a)[(slice(None, None, -1),) * a.ndim]
    v[...] = a
    return v


def unaligned(a: np.ndarray) -> np.ndarray:
    """C order, but the data one byte off its element alignment."""
    buf = bytearray(a.nbytes + 1)
    v = np.frombuffer(buf, a.dtype, count=a.size, offset=1).reshape(a.shape)
    v[...] = a
    return v


LAYOUTS = {"fortran": fortran, "transposed": transposed, "stepped": stepped,
           "reversed": reversed_, "unaligned": unaligned}


def relayout(args: dict, how, r: random.Random | None = None) -> dict:
    """``args`` with every array leaf copied into another layout (``how``: a
    layout function, or None: one drawn per leaf from ``r``)."""
    def one(x):
        if isinstance(x, tuple):
            return tuple(one(v) for v in x)
        if not isinstance(x, np.ndarray) or x.ndim == 0:
            return x
        f = how or r.choice(list(LAYOUTS.values()))
        return f(x)
    return {k: one(v) for k, v in args.items()}


def assert_equal_results(actual: dict, expected: dict) -> None:
    """Every array leaf bitwise equal (NaN == NaN)."""
    for name in expected:
        for a, e in zip(leaves(actual[name]), leaves(expected[name])):
            if isinstance(e, np.ndarray):
                assert a.dtype == e.dtype and a.shape == e.shape, name
                assert np.array_equal(a, e, equal_nan=a.dtype.kind == "f"), name


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- programs

LAP = """
lap(out: tensor<float, I[0:N], J[0:M]>, acc: tensor<float, I[0:N], J[0:M]>,
    inp: tensor<float, I[-1:N+1], J[-1:M+1]>, alpha: tensor<float>) {
  out ← ⟪I, -1⟫(inp) + ⟪I, 1⟫(inp) + ⟪J, -1⟫(inp) + ⟪J, 1⟫(inp) - 4.0 × inp
  acc ← acc + alpha × inp
}
"""

PAIRS = """
pairs(o1: tensor<float, I[0:N]>, o2: tensor<float, I[0:N]>,
      t: tensor<(float, int), I[0:N]>, a: tensor<float, I[0:N]>) {
  o1 ← a × 2.0
  o2 ← a + 1.0
  t ← make_tuple(a - 1.0, cast(a, int))
}
"""

GATHER = """
gather(o: tensor<float, Edge[0:E]>, v: tensor<float, Vertex[0:V]>,
       E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>) {
  o ← ⟪E2V, 0⟫(v) + 10.0 × ⟪E2V, 1⟫(v)
}
"""


def numpy_lap(inp: np.ndarray) -> np.ndarray:
    return (inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:]
            - 4.0 * inp[1:-1, 1:-1])


@pytest.fixture(scope="module")
def lap():
    return tir.parse(LAP), tir.compile(LAP)


@pytest.fixture(scope="module")
def pairs():
    return tir.parse(PAIRS), tir.compile(PAIRS)


@pytest.fixture(scope="module")
def gather():
    return tir.parse(GATHER), tir.compile(GATHER)


def lap_args(seed: int = 0, n: int = 6, m: int = 5) -> dict:
    r = np.random.default_rng(seed)
    return {"out": r.random((n, m)), "acc": r.random((n, m)),
            "inp": r.random((n + 2, m + 2)), "alpha": 0.5}


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_each_layout_interpreted_matches_numpy_and_compiled_matches_interpreted(
        lap, layout, monkeypatch):
    prog, compiled = lap
    full = compiled._callable._make_fallback()      # the DaCe-loaded path
    monkeypatch.setattr(compiled._callable, "fallback", lambda **kw: pytest.fail("full path"))
    base = lap_args()
    want_out = numpy_lap(base["inp"])
    want_acc = base["acc"] + 0.5 * base["inp"][1:-1, 1:-1]
    ref = relayout(base, LAYOUTS[layout])
    assert all(needs_staging(ref[k]) for k in ("out", "acc", "inp"))
    tir.interpret(prog, **ref)
    assert_close(ref["out"], want_out)
    assert_close(ref["acc"], want_acc)
    plain = clone(base)
    compiled(**plain)
    for _ in range(2):          # a second call reuses the staging buffers
        got = relayout(base, LAYOUTS[layout])
        compiled(**got)
        assert_equal_results(got, plain)
        assert_close(got["out"], ref["out"])
        assert_close(got["acc"], ref["acc"])
        got = relayout(base, LAYOUTS[layout])
        full(**got)
        assert_equal_results(got, plain)
    assert isinstance(compiled._callable, NativeCallable)


def test_the_same_strided_arrays_called_again_read_their_new_values(lap):
    prog, compiled = lap
    args = relayout(lap_args(1), fortran)
    for k in range(3):
        args["inp"][...] = k + np.arange(args["inp"].size).reshape(args["inp"].shape) % 7
        before = args["acc"].copy()
        compiled(**args)
        assert_close(args["out"], numpy_lap(args["inp"]))
        assert_close(args["acc"], before + 0.5 * args["inp"][1:-1, 1:-1])


def test_views_into_larger_arrays_write_only_their_elements(lap):
    prog, compiled = lap
    base = lap_args(2)
    for run in (lambda **k: tir.interpret(prog, **k), compiled):
        grid = np.full((9, 14), -1.0)
        out = grid[1:7, 2:12:2]                 # every other column of a block
        acc = np.full((5, 6), 3.0).T[::-1]      # transposed and reversed
        run(out=out, acc=acc, inp=base["inp"].T.copy().T, alpha=2.0)
        assert_close(out, numpy_lap(base["inp"]))
        assert_close(acc, 3.0 + 2.0 * base["inp"][1:-1, 1:-1])
        untouched = np.ones(grid.shape, bool)
        untouched[1:7, 2:12:2] = False
        assert (grid[untouched] == -1.0).all()


def test_outputs_overlapping_an_input_read_it_before_the_call(lap):
    prog, compiled = lap
    rng = np.random.default_rng(3)
    big = rng.random((8, 7))
    want = numpy_lap(big)
    for run in (lambda **k: tir.interpret(prog, **k), compiled):
        for layout in (fortran, transposed, stepped):
            grid = layout(big)                    # the input; the output is its interior
            run(out=grid[1:-1, 1:-1], acc=np.zeros((6, 5)), inp=grid, alpha=1.0)
            assert_close(grid[1:-1, 1:-1], want)
            assert (grid[0] == big[0]).all() and (grid[:, -1] == big[:, -1]).all()
            grid = layout(big)                    # the output reversed inside the input
            run(out=grid[-2:0:-1, 1:-1], acc=np.zeros((6, 5)), inp=grid, alpha=1.0)
            assert_close(grid[-2:0:-1, 1:-1], want)


def test_zero_stride_inputs_are_read_and_zero_stride_outputs_refused(lap):
    prog, compiled = lap
    row = np.arange(7.0)
    inp = np.broadcast_to(row, (8, 7))          # read-only, zero stride
    want = numpy_lap(np.array(inp))
    for run in (lambda **k: tir.interpret(prog, **k), compiled):
        out, acc = np.zeros((6, 5)), np.zeros((6, 5))
        run(out=out, acc=acc, inp=inp, alpha=1.0)
        assert_close(out, want)
        shared = np.lib.stride_tricks.as_strided(np.zeros(5), (6, 5), (0, 8))   # writeable
        with pytest.raises(tir.ArgumentError, match=r"'out'.*strides \(0, 8\).*several indices"):
            run(out=shared, acc=acc, inp=inp, alpha=1.0)
        crossed = np.lib.stride_tricks.as_strided(np.zeros(20), (6, 5), (16, 8))
        with pytest.raises(tir.ArgumentError, match="'acc'.*several indices"):
            run(out=out, acc=crossed, inp=inp, alpha=1.0)
        with pytest.raises(tir.ArgumentError, match="'out'.*read-only"):
            run(out=np.broadcast_to(np.zeros(5), (6, 5)), acc=acc, inp=inp, alpha=1.0)
        with pytest.raises(tir.ArgumentError, match="'inp' expects float64 elements, got float32"):
            run(out=out, acc=acc, inp=np.asfortranarray(inp, np.float32), alpha=1.0)
        ro = np.asfortranarray(np.zeros((6, 5)))
        ro.flags.writeable = False
        with pytest.raises(tir.ArgumentError, match="'acc'.*read-only"):
            run(out=out, acc=ro, inp=inp, alpha=1.0)


def test_interleaved_outputs_and_tuple_leaves(pairs):
    prog, compiled = pairs
    a = np.linspace(-2.0, 3.0, 6)
    for run in (lambda **k: tir.interpret(prog, **k), compiled):
        x = np.zeros(12)
        t = (np.zeros(12)[::-2], np.zeros((6, 2), np.int64)[:, 1])
        run(o1=x[::2], o2=x[1::2], t=t, a=a[::-1].copy()[::-1])    # no element in common
        assert_close(x[::2], 2.0 * a)
        assert_close(x[1::2], a + 1.0)
        assert_close(t[0], a - 1.0)
        np.testing.assert_array_equal(t[1], a.astype(np.int64))
        # the input, reversed, in the memory of an output: read before the call
        x = np.zeros(12)
        x[::2] = a[::-1]
        run(o1=x[::2], o2=np.zeros(6), t=t, a=x[::2][::-1])
        assert_close(x[::2], 2.0 * a)
        with pytest.raises(tir.ArgumentError, match="'o1' and 'o2' are both written.*share"):
            run(o1=x[:6], o2=x[::2], t=t, a=a)
        with pytest.raises(tir.ArgumentError, match="both written.*share"):
            run(o1=np.zeros(6), o2=x[1::2], t=(x[::-2], t[1]), a=a)


def test_strided_tables_are_scanned_for_bad_entries(gather):
    prog, compiled = gather
    v = np.arange(5.0) ** 2
    table = np.array([[0, 1], [2, 4], [3, -1], [4, 0]])
    want = v[table[:, 0]] + 10.0 * v[table[:, 1]]
    # edge 2 has no second neighbour: compiled and interpreted agree (below)
    results = []
    for run in (lambda **k: tir.interpret(prog, **k), compiled):
        for layout in (fortran, stepped, reversed_):
            o = np.zeros(8)[::2]
            run(o=o, v=v[::-1].copy()[::-1], E2V=layout(table))
            np.testing.assert_array_equal(np.delete(o, 2), np.delete(want, 2))
            results.append(o.copy())
            bad = layout(table)
            bad[1, 1] = 5                        # one past the 5 vertices
            with pytest.raises(tir.ArgumentError, match=r"'E2V' has the entry 5 at index \[1, 1\]"):
                run(o=np.zeros(4), v=v, E2V=bad)
            bad = layout(table)[:, ::-1]
            bad[3, 0] = 10 ** 9
            with pytest.raises(tir.ArgumentError, match=r"entry 1000000000 at index \[3, 0\]"):
                run(o=np.zeros(8)[1::2], v=v, E2V=bad)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


# --------------------------------------------------------------------------- Python front end

I, J = dims("I J")
N, = sizes("N")


@function
def flap(x: Tensor[float, I[-1:N + 1], J[-1:J.size + 1]]):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


@program
def smooth(inp: Tensor[float, I, J], out: Tensor[float, I, J], alpha: float):
    out[1:-1, 1:-1] = inp + alpha * flap(inp)


def test_decorated_program_and_function_with_out_and_domain():
    rng = np.random.default_rng(5)
    x = rng.random((8, 9))
    want = numpy_lap(x)
    for backend in ("interpreter", "compiled"):
        out = np.full((9, 8), 7.0).T            # Fortran-ordered
        smooth(np.asfortranarray(x), out, 0.5, backend=backend)
        assert_close(out[1:-1, 1:-1], x[1:-1, 1:-1] + 0.5 * want)
        assert (out[0] == 7.0).all() and (out[:, -1] == 7.0).all()
        # a direct call writing a strided view under domain=: the rest stays
        grid = np.full((6, 14), -1.0)
        out = grid[:, ::2]
        flap(x[::-1].copy()[::-1], out=out, domain={I: (1, 5)}, backend=backend)
        assert_close(out[1:5], want[1:5])
        assert (out[0] == -1.0).all() and (out[5] == -1.0).all() and (grid[:, 1::2] == -1).all()
        r = flap(np.asfortranarray(x), backend=backend)
        assert_close(r, want)


# --------------------------------------------------------------------------- random programs


@pytest.fixture(scope="module")
def fuzzed():
    text = fuzz.program_text(fuzz.batch(0, 20))      # the first batch of the fuzz tests
    return tir.parse(text), tir.compile(text)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_programs_give_the_same_results_for_any_layout(fuzzed, seed):
    """Generated programs called with C-contiguous arguments and with copies of
    equal values in random layouts (Fortran order, transposes, steps, negative
    strides, unaligned data): compiled and interpreted, bitwise the same."""
    prog, compiled = fuzzed
    r = random.Random(seed)
    sizes = fuzz.SIZES[seed % len(fuzz.SIZES)]
    base = random_arguments(prog, sizes=sizes, seed=seed, absent_fraction=0.25)
    for bounds in fuzz.BOUNDS[seed % len(fuzz.BOUNDS)][:2]:
        args = base | {h: v for h, v in bounds.items() if h in base}
        plain, ref = clone(args), clone(args)
        compiled(**plain)
        tir.interpret(prog, **ref)
        strided = relayout(args, None, r)
        staged = sum(needs_staging(x) for v in strided.values() for x in leaves(v))
        assert staged >= len([x for v in args.values() for x in leaves(v)
                              if isinstance(x, np.ndarray) and x.size > 1]) // 2
        again = relayout(args, None, r)
        compiled(**strided)
        assert_equal_results(strided, plain)
        tir.interpret(prog, **again)
        assert_equal_results(again, ref)
