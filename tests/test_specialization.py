"""Rank-generic functions and programs: specialisation at call time, caching, and
the log that explains each new specialisation.

Every test compiles into its own empty compile cache (``TENSORIR_DACE_CACHE``
points into ``tmp_path``), and every compiled function or program is used by
one test only, so ``compile_count()`` deltas are exact.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace.errors import ArgumentError, FrontendError, TypeCheckError
from tensorir_dace.frontend import (
    Tensor,
    default_dims,
    dims,
    function,
    get_default_dims,
    program,
    with_dims,
    with_interval,
)
from tensorir_dace.runtime import compile_count

LOGGER = "tensorir_dace.specialization"
TESTS_DIR = pathlib.Path(__file__).resolve().parent
HERE = str(pathlib.Path(__file__).resolve())

I, J, K = dims("I J K")
RNG = np.random.default_rng(2024)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    """An empty on-disk compile cache for each test."""
    path = tmp_path / "tir_cache"
    monkeypatch.setenv("TENSORIR_DACE_CACHE", str(path))
    return path


def messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.INFO]


def lap_np(a: np.ndarray) -> np.ndarray:
    """The Laplacian over all axes of ``a``, on the interior (NumPy reference)."""
    core = (slice(1, -1),) * a.ndim
    out = -2.0 * a.ndim * a[core]
    for ax in range(a.ndim):
        lo, hi = list(core), list(core)
        lo[ax], hi[ax] = slice(0, -2), slice(2, None)
        out = out + a[tuple(lo)] + a[tuple(hi)]
    return out


# =========================================================================== ranks


@function
def lap3(x):
    # shifts along a dimension that the argument lacks are no-ops: this is the
    # Laplacian of a 1-D, 2-D or 3-D field
    return x(I - 1) + x(I + 1) + x(J - 1) + x(J + 1) + x(K - 1) + x(K + 1) - 6.0 * x


def test_one_function_at_three_ranks_compiles_three_specialisations(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    for axes, shape in (((I,), (9,)), ((I, J), (9, 8)), ((I, J, K), (9, 8, 7))):
        a = RNG.random(shape)
        before = compile_count()
        out = lap3(with_dims(a, *axes))
        assert compile_count() == before + 1            # compiled once …
        np.testing.assert_allclose(out, lap_np(a), rtol=1e-12)
        again = lap3(with_dims(a, *axes))
        assert compile_count() == before + 1            # … and not again
        np.testing.assert_array_equal(again, out)
    assert lap3.specializations() == [
        "x: tensor<float64, I[0:N_I]> -> tensor<float64, I[1:N_I-1]>",
        "x: tensor<float64, I[0:N_I], J[0:N_J]> -> tensor<float64, I[1:N_I-1], J[1:N_J-1]>",
        ("x: tensor<float64, I[0:N_I], J[0:N_J], K[0:N_K]> -> "
         "tensor<float64, I[1:N_I-1], J[1:N_J-1], K[1:N_K-1]>"),
    ]
    info = lap3.cache_info()
    assert (info.specializations, info.misses, info.hits, info.compiles, info.loads) == \
        (3, 3, 3, 3, 0)
    assert messages(caplog) == [
        ("compiling lap3 for a new specialisation: nothing cached yet "
         "(x: tensor<float64, I[0:N_I]>); shifts along J, K are no-ops (no argument has "
         "these dimensions)"),
        ("compiling lap3 for a new specialisation: argument 'x' has 2 dimensions (I, J) "
         "(cached: 1 (I)); shifts along K are no-ops (no argument has this dimension)"),
        ("compiling lap3 for a new specialisation: argument 'x' has 3 dimensions (I, J, K) "
         "(cached: 2 (I, J))"),
    ]


@function
def smooth1(x, alpha):
    return x + alpha * (x(I - 1) - 2.0 * x + x(I + 1))


def smooth1_np(a, alpha):
    return a[1:-1] + alpha * (a[:-2] - 2.0 * a[1:-1] + a[2:])


def test_a_new_size_reuses_the_binary():
    before = compile_count()
    for n in (10, 37, 3, 1000):
        a = RNG.random(n)
        out = smooth1(with_dims(a, I), 0.1)
        assert out.shape == (n - 2,)
        np.testing.assert_allclose(out, smooth1_np(a, 0.1), rtol=1e-12)
    assert compile_count() == before + 1
    assert smooth1.cache_info().specializations == 1
    assert smooth1.specializations() == [
        "x: tensor<float64, I[0:N_I]>, alpha: float64 -> tensor<float64, I[1:N_I-1]>"]


@function
def axpy(a, x, y):
    return a * x + y


def test_a_new_dtype_recompiles_and_the_log_says_why(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    x, y = RNG.random(10), RNG.random(10)
    before = compile_count()
    np.testing.assert_allclose(axpy(2.0, x, y), 2.0 * x + y, rtol=1e-12)
    assert messages(caplog) == [
        ("compiling axpy for a new specialisation: nothing cached yet (a: float64, "
         "x: tensor<float64, D0[0:N_D0]>, y: tensor<float64, D0[0:N_D0]>)")]
    caplog.clear()
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    out = axpy(2.0, x32, y32)           # a Python float follows the float32 arrays
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2.0 * x32 + y32, rtol=1e-6)
    assert compile_count() == before + 2
    assert messages(caplog) == [
        ("compiling axpy for a new specialisation: argument 'a' has dtype float32 (cached: "
         "float64); argument 'x' has dtype float32 (cached: float64); argument 'y' has "
         "dtype float32 (cached: float64)")]
    caplog.clear()
    axpy(np.float32(3.0), x32[:4], y32[:4])     # same specialisation, other size
    assert messages(caplog) == [] and compile_count() == before + 2
    # a float64 scalar with float32 arrays is another specialisation, and a type error
    with pytest.raises(TypeCheckError, match="float64 and float32"):
        axpy(np.float64(3.0), x32, y32)


# =========================================================================== halos


@program(backend="interpreter")
def lap_into(inp, out):
    out[...] = lap3(inp)


def test_halos_are_part_of_the_key_and_the_log_names_them(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    a = RNG.random((12, 14))
    out = np.zeros((10, 12))
    # inp's element 0 is coordinate -1 along I and J: a halo of one
    lap_into(with_interval(a, I=(-1, 11), J=(-1, 13)), with_dims(out, I, J))
    np.testing.assert_allclose(out, lap_np(a), rtol=1e-12)
    # a halo of two along I
    b = RNG.random((14, 14))
    lap_into(with_interval(b, I=(-2, 12), J=(-1, 13)), with_dims(out, I, J))
    np.testing.assert_allclose(out, lap_np(b[1:-1]), rtol=1e-12)
    # the first halo again, another size: no new specialisation
    c = RNG.random((7, 5))
    out_c = np.zeros((5, 3))
    lap_into(with_interval(c, I=-1, J=-1), with_dims(out_c, I, J))
    np.testing.assert_allclose(out_c, lap_np(c), rtol=1e-12)
    assert lap_into.specializations() == [
        ("inp: tensor<float64, I[-1:N_I+1], J[-1:N_J+1]>, out: tensor<float64, I[0:N_I], "
         "J[0:N_J]>"),
        ("inp: tensor<float64, I[-2:N_I+2], J[-1:N_J+1]>, out: tensor<float64, I[0:N_I], "
         "J[0:N_J]>"),
    ]
    assert messages(caplog)[1] == (
        "translating lap_into for a new specialisation: argument 'inp' has a different "
        "halo: I[-2:N_I+2] (cached: I[-1:N_I+1])")
    # the same halo spelled with with_dims
    lap_into(with_dims(a, I[-1:], J.halo(1)), with_dims(out, I, J))
    assert lap_into.cache_info().specializations == 2
    # no halo: the type checker explains why the program needs one
    with pytest.raises(TypeCheckError, match="the target 'out' needs I"):
        lap_into(with_dims(out, I, J), with_dims(np.zeros_like(out), I, J))


# =========================================================================== programs


@program
def blend(x, y, out, w):
    out[...] = w * x + (1.0 - w) * y


def test_rank_generic_program_with_an_output_parameter():
    before = compile_count()
    for shape in ((6,), (4, 5), (3, 4, 2)):
        x, y = RNG.random(shape), RNG.random(shape)
        out = np.zeros(shape)
        blend(x, y, out, 0.25)
        np.testing.assert_allclose(out, 0.25 * x + 0.75 * y, rtol=1e-12)
    assert compile_count() == before + 3
    # the interpreter uses the same specialisations
    ref = np.zeros(shape)
    blend(x, y, ref, 0.25, backend="interpreter")
    np.testing.assert_allclose(ref, out, rtol=1e-12)
    assert blend.cache_info().specializations == 3
    assert blend.specializations()[1] == (
        "x: tensor<float64, D0[0:N_D0], D1[0:N_D1]>, y: tensor<float64, D0[0:N_D0], "
        "D1[0:N_D1]>, out: tensor<float64, D0[0:N_D0], D1[0:N_D1]>, w: float64")
    spec = blend.specialize(x, y, out, 0.25)
    assert spec.ir.params[2].name == "out"
    assert tir.parse(tir.format(spec.ir)) == spec.ir
    assert blend.cache_info().specializations == 3


@program(backend="interpreter")
def halo_into(inp: Tensor[float, I.halo(1), J.halo(1)], out):
    out[...] = lap3(inp)


def test_annotated_and_rank_generic_parameters_together():
    a = RNG.random((8, 9))
    with default_dims(I, J):            # plain arrays are over I, J
        out = np.zeros((6, 7))
        halo_into(a, out)
        np.testing.assert_allclose(out, lap_np(a), rtol=1e-12)
        with pytest.raises(ArgumentError) as e:
            halo_into(a, np.zeros((8, 9)))
    assert get_default_dims() is None
    msg = str(e.value)
    assert "inconsistent sizes along I: 'out' has 8 elements but the annotation of 'inp' " \
           "makes N_I = 6" in msg
    assert e.value.loc.filename == HERE


@function
def shifted(x, d):
    return x(d + 1) - x


def test_static_arguments_are_part_of_the_key():
    a = RNG.random((5, 6))
    along_i = shifted(with_dims(a, I, J), I, backend="interpreter")
    along_j = shifted(with_dims(a, I, J), J, backend="interpreter")
    np.testing.assert_allclose(along_i, a[1:] - a[:-1])
    np.testing.assert_allclose(along_j, a[:, 1:] - a[:, :-1])
    assert [s.split(" -> ")[0] for s in shifted.specializations()] == [
        "x: tensor<float64, I[0:N_I], J[0:N_J]>, d=I",
        "x: tensor<float64, I[0:N_I], J[0:N_J]>, d=J"]


@function
def sum_and_product(x, y):
    return x + y, x * y


def test_tuple_results_are_tuples_of_arrays():
    x, y = RNG.random(4), RNG.random(4)
    s, p = sum_and_product(x, y, backend="interpreter")
    np.testing.assert_allclose(s, x + y)
    np.testing.assert_allclose(p, x * y)


# =========================================================================== on disk


@function
def persisted(x, w):
    return w * x(I + 1) - x


def persisted_np(a, w):
    return w * a[1:] - a[:-1]


def test_a_later_process_reuses_the_binaries_without_compiling(fresh_cache):
    a1, a2 = RNG.random(10), RNG.random((10, 3))
    before = compile_count()
    np.testing.assert_allclose(persisted(with_dims(a1, I), 0.5), persisted_np(a1, 0.5))
    np.testing.assert_allclose(persisted(with_dims(a2, I, J), 0.5), persisted_np(a2, 0.5))
    assert compile_count() == before + 2
    # the child uses other sizes and calls the specialisations in the other order
    code = f"""
        import json, sys
        sys.path.insert(0, {str(TESTS_DIR)!r})
        import numpy as np
        from tensorir_dace.frontend import with_dims
        from tensorir_dace.runtime import cache_stats, compile_count
        import test_specialization as T
        rng = np.random.default_rng(5)
        b2, b1 = rng.random((17, 4)), rng.random(23)
        ok = bool(np.allclose(T.persisted(with_dims(b2, T.I, T.J), 2.0), T.persisted_np(b2, 2.0))
                  and np.allclose(T.persisted(with_dims(b1, T.I), 2.0), T.persisted_np(b1, 2.0)))
        print(json.dumps(dict(compiled=compile_count(), loaded=cache_stats()["loaded"], ok=ok,
                              info=T.persisted.cache_info()._asdict())))
    """
    env = dict(os.environ, TENSORIR_DACE_CACHE=str(fresh_cache))
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, env=env, cwd=str(TESTS_DIR), timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    assert stats["ok"]
    assert stats["compiled"] == 0 and stats["loaded"] == 2
    assert stats["info"] == {"hits": 0, "misses": 2, "specializations": 2, "compiles": 0,
                             "loads": 2}


# =========================================================================== user errors


@function
def add(x, y):
    return x + y


def test_error_inconsistent_sizes():
    with pytest.raises(ArgumentError) as e:
        add(np.zeros(3), np.zeros(4))
    err = e.value
    assert err.loc.filename == HERE
    assert "add(): inconsistent sizes along D0: 'y' has 4 elements but 'x' has 3" in str(err)
    assert "with_interval(y, D0=(start, stop))" in str(err)
    assert "called at" in str(err) and "test_specialization.py" in str(err)


@program
def annotated(x: Tensor[float, I, J], y: Tensor[float, I, J]):
    y[...] = x


def test_error_wrong_rank_for_an_annotated_parameter():
    with pytest.raises(ArgumentError, match=r"parameter 'x' expects a 2-D array .*got a "
                                            r"1-D array of shape \(3,\)"):
        annotated(np.zeros(3), np.zeros((3, 3)), backend="interpreter")
    with pytest.raises(ArgumentError, match=r"'x' is annotated Tensor\[float64, I, J\] .* "
                                            r"with_dims names its axes \(J, I\)"):
        annotated(with_dims(np.zeros((3, 3)), J, I), np.zeros((3, 3)), backend="interpreter")


def test_error_naming_the_axes():
    with pytest.raises(ArgumentError, match=r"with_dims names 1 dimension \(I\) but 'x' is a "
                                            r"2-D array"):
        add(with_dims(np.zeros((3, 2)), I), 1.0)
    with pytest.raises(ArgumentError, match=r"names 1 \(I\) of the 2 axes"):
        add(with_interval(np.zeros((3, 2)), I=-1), 1.0)
    with pytest.raises(ArgumentError, match="the interval \\[0:5\\] has 5"):
        add(with_interval(np.zeros(3), I=(0, 5)), 1.0)
    with pytest.raises(ArgumentError, match="dtype uint8, which Tensor IR does not support"):
        add(np.zeros(3, dtype=np.uint8), 1)
    with pytest.raises(ArgumentError, match="got a list"):
        add(np.zeros(3), [1.0, 2.0, 3.0])
    with pytest.raises(ArgumentError, match="missing a required argument: 'y'"):
        add(np.zeros(3))
    with pytest.raises(ArgumentError, match=r"4-D array but default_dims\(I, J\) names 2"), \
            default_dims(I, J):
        add(np.zeros((1, 1, 1, 1)), 1.0)


@function
def typed(x: Tensor[float, ...], n: int):
    return x * 2.0


def test_error_element_type_annotation():
    np.testing.assert_allclose(typed(np.ones(2), 3, backend="interpreter"), [2.0, 2.0])
    with pytest.raises(ArgumentError, match=r"'x' \(Tensor\[float64, ...\]\) expects float64 "
                                            "elements, got float32"):
        typed(np.ones(2, dtype=np.float32), 3)
    with pytest.raises(ArgumentError, match="expects an array, got a float"):
        typed(1.0, 3)


def test_error_plain_arrays_and_named_shifts():
    with pytest.raises(FrontendError) as e:
        lap3(np.zeros(5))
    msg = str(e.value)
    assert "lap3() shifts along I, J, K, but no argument has these dimensions" in msg
    assert "with_dims(x, I, J, K)" in msg


def test_error_ir_of_a_rank_generic_program():
    with pytest.raises(FrontendError) as e:
        _ = blend.ir
    assert "'blend' is rank-generic: program parameter 'x' needs a type annotation" in \
        str(e.value)
    assert e.value.loc.filename == HERE
