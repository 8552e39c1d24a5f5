"""Shared fixtures: compile each program once per test run."""

from __future__ import annotations

import functools
import pathlib

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace.testing import clone, random_arguments

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "sdfg_examples"


@functools.cache
def parsed(src: str):
    return tir.parse(src)


@functools.cache
def compiled(src: str, optimize: str = "default"):
    """The compiled program of a source text (one compile per text and level)."""
    return tir.compile(parsed(src), optimize=optimize)


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.tir").read_text()


def assert_same_results(actual: dict, expected: dict, rtol: float = 1e-12) -> None:
    """Every array leaf equal up to ``rtol`` (NaN == NaN, same dtype)."""
    def leaves(x):
        if isinstance(x, tuple):
            for v in x:
                yield from leaves(v)
        else:
            yield x
    for name in expected:
        for a, e in zip(leaves(actual[name]), leaves(expected[name])):
            if isinstance(e, np.ndarray):
                assert a.dtype == e.dtype, (name, a.dtype, e.dtype)
                tol = max(rtol, 2e-6) if a.dtype == np.float32 else rtol
                if a.dtype.kind == "f":
                    np.testing.assert_allclose(a, e, rtol=tol, atol=tol, equal_nan=True,
                                               err_msg=name)
                else:
                    np.testing.assert_array_equal(a, e, err_msg=name)


def check_against_interpreter(src: str, optimize: str = "default", *, sizes=None, seed=0,
                              rtol: float = 1e-12, args=None):
    """Run ``src`` compiled and interpreted on the same random inputs; compare."""
    prog = parsed(src)
    base = args if args is not None else random_arguments(prog, sizes=sizes, seed=seed)
    ref, out = clone(base), clone(base)
    tir.interpret(prog, **ref)
    compiled(src, optimize)(**out)
    assert_same_results(out, ref, rtol)
    return out, ref


@pytest.fixture(params=["none", "default"])
def optimize(request):
    return request.param


class FakeDeviceArray:
    """Looks like a GPU array (CuPy, …) through ``__cuda_array_interface__`` but
    owns no memory: for testing the checks and the pointer plumbing without a GPU."""

    def __init__(self, shape, dtype=np.float64, ptr=0x7F00_0000_0000, strides=None,
                 readonly=False):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": np.dtype(dtype).str, "data": (ptr, readonly),
            "strides": strides, "version": 3}

    @property
    def ptr(self) -> int:
        return self.__cuda_array_interface__["data"][0]


def fake_device_like(arrays: dict, base: int = 0x7F00_0000_0000) -> dict:
    """Stand-ins with the shapes and dtypes of ``arrays`` (NumPy arrays and
    tuples of them; scalars kept), at disjoint, aligned fake addresses."""
    out, nxt = {}, [base]

    def fake(a):
        if isinstance(a, tuple):
            return tuple(fake(x) for x in a)
        if not isinstance(a, np.ndarray) or a.ndim == 0:
            return a
        f = FakeDeviceArray(a.shape, a.dtype, nxt[0])
        nxt[0] += (a.nbytes + 255) // 256 * 256 + 256
        return f
    for k, v in arrays.items():
        out[k] = fake(v)
    return out


# A scan whose result the next scan reads in neighbouring columns: the one shape
# that keeps a persistent scratch array after scan fusion.
NEIGHBOUR_COLUMN_SCANS = """
scratch(a: tensor<float, I[-1:N+1], J[0:M], K[0:L]>, out: tensor<float, I[0:N], J[0:M], K[0:L]>) {
  t: tensor<float, I[-1:N+1], J[0:M], K[0:L]>;
  t ← scan(λ(s: tensor<float, I[-1:N+1], J[0:M]>, x: tensor<float, I[-1:N+1], J[0:M]>)
             → x + 0.5 × s, True, 0.0)(a);
  out ← scan(λ(s: tensor<float, I[0:N], J[0:M]>, x: tensor<float, I[0:N], J[0:M]>,
               y: tensor<float, I[0:N], J[0:M]>) → x - 0.25 × s + y, False, 0.0)(
           ⟪I, 1⟫(t), ⟪I, -1⟫(t));
}
"""


def assert_address(code: str, pointer: str, expected: str) -> None:
    """The generated C++ ``code`` takes ``&pointer[index]`` with ``index`` equal
    to ``expected`` as algebra (the printed form of an index is free)."""
    import re

    import sympy
    found = re.search(rf"&{re.escape(pointer)}\[(.*?)\];", code)
    assert found, f"no &{pointer}[...] in the code"
    assert sympy.expand(sympy.sympify(found.group(1)) - sympy.sympify(expected)) == 0, \
        found.group(1)
