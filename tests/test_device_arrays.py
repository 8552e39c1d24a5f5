"""GPU arrays (``__cuda_array_interface__``) as arguments, checked without a GPU.

The stand-in :class:`conftest.FakeDeviceArray` owns no memory: these tests cover
what happens before any device code runs (binding, the call-time checks,
choosing the build).  Where the calls reach compiled CUDA code is tested in
``test_gpu.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import FakeDeviceArray, compiled, example, fake_device_like, parsed
from tensorir_dace import ir
from tensorir_dace.arguments import bind_arguments
from tensorir_dace.callchecks import CallChecks, data_pointer
from tensorir_dace.device_arrays import DeviceArray, device_parameters, is_device_array
from tensorir_dace.errors import ArgumentError
from tensorir_dace.runtime.device import residence
from tensorir_dace.testing import random_arguments

N = ir.size_symbol("N")
WHERE = "program 'p'"


def T(dtype, *dims):
    return ir.TensorType(dtype, tuple(ir.Dim(n, a, b) for n, a, b in dims))


PARAMS = (ir.Param("out", T(ir.FLOAT64, ("I", 0, N), ("J", 0, 4))),
          ir.Param("inp", T(ir.FLOAT64, ("I", -1, N + 1), ("J", 0, 4))),
          ir.Param("pair", T(ir.TupleType((ir.FLOAT32, ir.INT32)), ("I", 0, N), ("J", 0, 4))),
          ir.Param("alpha", T(ir.FLOAT64)))


def args(**changes):
    base = {"out": FakeDeviceArray((5, 4), ptr=0x10000),
            "inp": FakeDeviceArray((7, 4), ptr=0x20000),
            "pair": (FakeDeviceArray((5, 4), np.float32, 0x30000),
                     FakeDeviceArray((5, 4), np.int32, 0x40000)),
            "alpha": 2.0}
    return base | changes


def bind(**kwargs):
    return bind_arguments(PARAMS, kwargs, where=WHERE)


def check(**kwargs):
    bound = bind(**kwargs)
    return CallChecks(PARAMS, {"out"}, (), WHERE).check(bound.values, bound.symbols)


def test_device_array_reads_the_interface():
    a = DeviceArray(FakeDeviceArray((3, 4), np.float32, ptr=0x1000))
    assert (a.shape, a.strides, a.dtype, a.ptr) == ((3, 4), (16, 4), np.float32, 0x1000)
    assert (a.ndim, a.size, a.itemsize, a.nbytes) == (2, 12, 4, 48)
    assert a.flags.c_contiguous and not a.flags.f_contiguous and a.flags.writeable
    assert a.flags.aligned and a.base is None and data_pointer(a) == 0x1000
    f = DeviceArray(FakeDeviceArray((3, 4), strides=(8, 24)))        # Fortran order
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    one = DeviceArray(FakeDeviceArray((1, 4), strides=(999, 8)))      # length-1 axis: any stride
    assert one.flags.c_contiguous
    ro = DeviceArray(FakeDeviceArray((2,), readonly=True))
    assert not ro.flags.writeable
    assert not DeviceArray(FakeDeviceArray((2,), ptr=0x1004)).flags.aligned
    assert is_device_array(FakeDeviceArray((2,))) and not is_device_array(np.zeros(2))


def test_unusable_interfaces_are_argument_errors():
    class Broken:
        __cuda_array_interface__ = {"shape": (3,)}

    class Masked:
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (64, False),
                                    "mask": object(), "version": 3}
    with pytest.raises(ArgumentError, match="unusable.*'typestr'"):
        DeviceArray(Broken(), "parameter 'x'", WHERE)
    with pytest.raises(ArgumentError, match="masked GPU array"):
        DeviceArray(Masked(), "parameter 'x'", WHERE)


def test_binding_device_arrays_infers_sizes_without_copies():
    given = args()
    bound = bind(**given)
    assert bound.symbols == {"N": 5}
    out, inp = bound.values["out"], bound.values["inp"]
    assert isinstance(out, DeviceArray) and out.obj is given["out"] and out.ptr == 0x10000
    assert inp.obj is given["inp"]
    assert [x.obj for x in bound.values["pair"]] == list(given["pair"])
    assert bound.values["alpha"] == 2.0 and device_parameters(bound.values) == [
        "out", "inp", "pair"]


@pytest.mark.parametrize("change, match", [
    ({"out": FakeDeviceArray((5, 4), np.float32, 0x10000)},
     "parameter 'out' expects float64 elements, got float32"),
    ({"out": FakeDeviceArray((5,), ptr=0x10000)}, "expects a 2-D array"),
    ({"inp": FakeDeviceArray((8, 4), ptr=0x20000)}, "size mismatch.*'inp' has 8 elements"),
    ({"out": FakeDeviceArray((5, 4), strides=(8, 40), ptr=0x10000)},
     r"C-contiguous array, got a Fortran-ordered array with strides \(8, 40\) "
     r"\(use cupy.ascontiguousarray"),
    ({"out": FakeDeviceArray((5, 4), strides=(64, 16), ptr=0x10000)}, "a strided view"),
    ({"out": FakeDeviceArray((5, 4), ptr=0x10004)}, "not aligned.*cupy.array"),
    ({"pair": (FakeDeviceArray((5, 4), np.float32, 0x30000),
               FakeDeviceArray((5, 3), np.int32, 0x40000))}, r"element \[1\] has shape \(5, 3\)"),
])
def test_device_arrays_get_the_argument_checks(change, match):
    with pytest.raises(ArgumentError, match=match) as info:
        bind(**args(**change))
    assert str(info.value).startswith(WHERE)


def test_call_checks_use_pointer_ranges_and_the_read_only_flag():
    values, copies = check(**args())
    assert copies == [] and values["out"].ptr == 0x10000
    # out spans [0x10000, 0x100a0): an input just past it is fine, one inside is not.
    check(**args(inp=FakeDeviceArray((7, 4), ptr=0x100A0)))
    with pytest.raises(ArgumentError, match="'inp' is read by the program and shares GPU "
                                            "memory with a parameter it writes.*never copied"):
        check(**args(inp=FakeDeviceArray((7, 4), ptr=0x10098)))
    with pytest.raises(ArgumentError, match="'out' is written by the program, but the array "
                                            "given for it is read-only"):
        check(**args(out=FakeDeviceArray((5, 4), ptr=0x10000, readonly=True)))
    check(**args(inp=FakeDeviceArray((7, 4), ptr=0x20000, readonly=True)))   # read: fine


def test_residence_picks_a_build_and_rejects_mixtures():
    assert residence(args(), WHERE) == "device"
    host = {"out": np.zeros((5, 4)), "inp": np.zeros((7, 4)), "alpha": np.float64(1.0)}
    assert residence(host, WHERE) == "host"
    assert residence({"alpha": 1.0}, WHERE) == "host"
    assert residence(args(alpha=np.array(2.0)), WHERE) == "device"     # a 0-d scalar
    with pytest.raises(ArgumentError, match="all be GPU arrays or all NumPy arrays, got GPU "
                                            "arrays for 'out', 'pair' and NumPy arrays for "
                                            "'inp'"):
        residence(args(inp=np.zeros((7, 4))), WHERE)


def test_host_runners_refuse_device_arrays():
    src = example("laplacian")
    fakes = fake_device_like(random_arguments(parsed(src)))
    with pytest.raises(ArgumentError, match="the interpreter runs on the host, but parameters "
                                            "'out', 'inp' are GPU arrays"):
        tir.interpret(parsed(src), **fakes)
    with pytest.raises(ArgumentError, match="'out' must be a host \\(NumPy\\) array"):
        compiled(src)(**fakes)                      # a CPU build
