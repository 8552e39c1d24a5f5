"""Binding Python arguments to Tensor IR program parameters (no compilation)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import ir
from tensorir_dace.arguments import ArgumentBinder, bind_arguments, get_binder, leaf_types
from tensorir_dace.errors import ArgumentError, TensorIRError

N, M, K = ir.size_symbol("N"), ir.size_symbol("M"), ir.size_symbol("K")
F64, F32, I64, I32, BOOL = ir.FLOAT64, ir.FLOAT32, ir.INT64, ir.INT32, ir.BOOL
WHERE = "program 'p'"


def T(dtype, *dims):
    return ir.TensorType(dtype, tuple(ir.Dim(n, a, b) for n, a, b in dims))


def P(name, t):
    return ir.Param(name, t)


def bind(params, **kwargs):
    return bind_arguments(tuple(params), kwargs, where=WHERE)


def raises(params, match, **kwargs):
    with pytest.raises(ArgumentError, match=match) as info:
        bind(params, **kwargs)
    assert str(info.value).startswith(WHERE)
    return str(info.value)


# --------------------------------------------------------------------------- symbols

STENCIL = (
    P("a", T(F64, ("I", 0, N), ("J", -1, M + 1))),
    P("b", T(F64, ("I", 0, N))),
    P("c", T(F32, ("K", 0, 2 * N))),
)


def test_infers_symbols_with_offsets_and_multiples():
    r = bind(STENCIL, a=np.zeros((10, 12)), b=np.zeros(10), c=np.zeros(20, np.float32))
    assert r.symbols == {"N": 10, "M": 10}
    assert all(type(v) is int for v in r.symbols.values())
    assert list(r.values) == ["a", "b", "c"]


def test_values_are_the_same_arrays():
    a, b, c = np.zeros((3, 5)), np.zeros(3), np.zeros(6, np.float32)
    r = bind(STENCIL, a=a, b=b, c=c)
    assert r.values["a"] is a and r.values["b"] is b and r.values["c"] is c


def test_odd_size_for_twice_n_is_an_error():
    msg = raises(STENCIL, "K\\[0:2\\*N\\]", a=np.zeros((5, 3)), b=np.zeros(5),
                 c=np.zeros(11, np.float32))
    assert "'c'" in msg and "11" in msg


def test_only_twice_n_determines_n():
    params = (P("c", T(F64, ("K", 0, 2 * N))),)
    assert bind(params, c=np.zeros(10)).symbols == {"N": 5}
    raises(params, "non-negative integer", c=np.zeros(9))


def test_negative_symbol_is_an_error():
    params = (P("a", T(F64, ("J", -1, M + 1))),)
    raises(params, "M = -1", a=np.zeros(1))
    assert bind(params, a=np.zeros(2)).symbols == {"M": 0}


def test_conflicting_sizes_name_both_parameters():
    msg = raises(STENCIL, "size mismatch", a=np.zeros((10, 12)), b=np.zeros(11),
                 c=np.zeros(20, np.float32))
    assert "'b'" in msg and "'a'" in msg and "11" in msg and "10" in msg and "I[0:N]" in msg


def test_constant_extent_is_checked():
    params = (P("a", T(F64, ("I", 0, 4))),)
    bind(params, a=np.zeros(4))
    raises(params, "expected 4", a=np.zeros(5))


def test_symbols_given_explicitly():
    params = (P("x", T(F64, ("I", 0, N + M))),)
    msg = raises(params, "cannot infer size symbols", x=np.zeros(5))
    assert "M=..." in msg and "N=..." in msg
    assert bind(params, x=np.zeros(5), M=2).symbols == {"M": 2, "N": 3}
    assert bind(params, x=np.zeros(5), N=np.int64(1)).symbols == {"M": 4, "N": 1}
    assert bind(params, x=np.zeros(5), N=1, M=4).symbols == {"M": 4, "N": 1}
    raises(params, "size mismatch", x=np.zeros(5), N=1, M=3)
    raises(params, "must be an integer", x=np.zeros(5), N=1.0)
    raises(params, "must be an integer", x=np.zeros(5), N=True)
    raises(params, "non-negative", x=np.zeros(5), N=-1)
    raises(params, "M = -1", x=np.zeros(5), N=6)


def test_explicit_symbol_that_shapes_determine_is_checked():
    params = (P("b", T(F64, ("I", 0, N))),)
    assert bind(params, b=np.zeros(4), N=4).symbols == {"N": 4}
    msg = raises(params, "keyword argument N=5", b=np.zeros(4), N=5)
    assert "'b'" in msg


def test_symbol_solved_through_another():
    # N from y, then M from x (x alone has two unknowns).
    params = (P("x", T(F64, ("I", 0, N + M))), P("y", T(F64, ("I", 0, N))))
    assert bind(params, x=np.zeros(7), y=np.zeros(3)).symbols == {"N": 3, "M": 4}


def test_nonlinear_extent():
    params = (P("y", T(F64, ("I", 0, N * N))),)
    assert bind(params, y=np.zeros(9)).symbols == {"N": 3}
    raises(params, "non-negative integer", y=np.zeros(10))


def test_product_of_symbols():
    params = (P("a", T(F64, ("I", 0, N))), P("f", T(F64, ("IJ", 0, N * M))))
    assert bind(params, a=np.zeros(3), f=np.zeros(12)).symbols == {"N": 3, "M": 4}
    raises(params, "f", a=np.zeros(3), f=np.zeros(13))


def test_scalar_int_parameter_named_like_a_symbol_provides_it():
    params = (P("N", T(I64)), P("a", T(F64, ("I", 0, N + 1))))
    r = bind(params, N=3, a=np.zeros(4))
    assert r.symbols == {"N": 3} and r.values["N"] == 3
    raises(params, "size mismatch", N=3, a=np.zeros(5))


def test_plan_is_cached_per_parameter_list():
    params = tuple(STENCIL)
    assert get_binder(params) is get_binder(params)
    assert get_binder(params) is get_binder(list(params))   # equal lists share the binder


# --------------------------------------------------------------------------- arrays


def test_wrong_dtype_message_suggests_astype():
    msg = raises(STENCIL, "parameter 'b' expects float64 elements, got float32 "
                 r"\(use x.astype\(np.float64\)\)",
                 a=np.zeros((3, 5)), b=np.zeros(3, np.float32), c=np.zeros(6, np.float32))
    assert msg


@pytest.mark.parametrize("dtype,bad", [(I32, np.int64), (I64, np.int32), (BOOL, np.int8),
                                       (F32, np.float64), (I64, np.float64)])
def test_no_silent_casting_of_arrays(dtype, bad):
    params = (P("x", T(dtype, ("I", 0, N))),)
    raises(params, "expects", x=np.zeros(3, bad))


def test_wrong_rank():
    msg = raises(STENCIL, "parameter 'a' expects a 2-D array", a=np.zeros(10), b=np.zeros(10),
                 c=np.zeros(20, np.float32))
    assert "1-D" in msg and "(10,)" in msg


def test_scalar_for_array_and_list_are_errors():
    params = (P("x", T(F64, ("I", 0, N))),)
    raises(params, "expects a 1-D array of float64.*got float", x=1.0)
    raises(params, "got list", x=[1.0, 2.0])


def test_fortran_order_and_strided_views_are_accepted_as_they_are():
    a = np.asfortranarray(np.zeros((3, 5)))
    r = bind(STENCIL, a=a, b=np.zeros(3), c=np.zeros(6, np.float32))
    assert r.values["a"] is a and r.symbols == {"N": 3, "M": 3}
    params = (P("b", T(F64, ("I", 0, N))),)
    big = np.arange(20.0)
    for view in (big[::2], big[::-2], big[2:7]):
        r = bind(params, b=view)
        assert r.values["b"] is view and r.symbols == {"N": len(view)}
    grid = np.zeros((6, 8))
    assert bind(STENCIL, a=grid[1:4], b=np.zeros(3), c=np.zeros(6, np.float32)).symbols == \
        {"N": 3, "M": 6}
    assert bind(STENCIL, a=grid[1:4, 1:7], b=np.zeros(3)[::-1],
                c=np.zeros(12, np.float32)[::2]).symbols == {"N": 3, "M": 4}
    raises(STENCIL, "expects float32 elements, got float64", a=grid[1:4, 1:7],
           b=np.zeros(3), c=np.zeros(12)[::2])


def test_array_like_objects_are_converted_without_copy():
    class Wrapper:
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    base = np.arange(4.0)
    params = (P("b", T(F64, ("I", 0, N))),)
    r = bind(params, b=Wrapper(base))
    assert r.values["b"] is base and r.symbols == {"N": 4}


def test_missing_and_unknown_arguments():
    msg = raises(STENCIL, "missing arguments for parameters 'b'.*'c'", a=np.zeros((3, 5)))
    assert "tensor<float64, I[0:N]>" in msg
    raises(STENCIL, "unexpected keyword argument 'bb' \\(did you mean 'b'\\?\\)",
           a=np.zeros((3, 5)), b=np.zeros(3), c=np.zeros(6, np.float32), bb=1)
    raises(STENCIL, "unexpected keyword argument 'zzz'; the parameters are a, b, c",
           a=np.zeros((3, 5)), b=np.zeros(3), c=np.zeros(6, np.float32), zzz=1)


def test_errors_are_tensor_ir_errors():
    assert issubclass(ArgumentError, TensorIRError)


def test_zero_sized_arrays():
    r = bind(STENCIL, a=np.zeros((0, 2)), b=np.zeros(0), c=np.zeros(0, np.float32))
    assert r.symbols == {"N": 0, "M": 0}


def test_arguments_are_not_modified():
    a = np.arange(15.0).reshape(3, 5)
    b = np.arange(3.0)
    c = np.arange(6, dtype=np.float32)
    before = [x.copy() for x in (a, b, c)]
    flags = [x.flags.writeable for x in (a, b, c)]
    bind(STENCIL, a=a, b=b, c=c)
    with pytest.raises(ArgumentError):
        bind(STENCIL, a=a, b=b, c=c.astype(np.float64))
    for x, y, w in zip((a, b, c), before, flags):
        np.testing.assert_array_equal(x, y)
        assert x.flags.writeable == w


# --------------------------------------------------------------------------- tuples

TUP = ir.TupleType((F64, ir.TupleType((I32, BOOL))))
TUPLE_PARAMS = (P("t", T(TUP, ("I", 0, N))), P("o", T(F64, ("I", 0, N))))


def test_leaf_types():
    assert leaf_types(TUP) == [((0,), F64), ((1, 0), I32), ((1, 1), BOOL)]
    assert leaf_types(F64) == [((), F64)]


def test_tuple_leaves():
    t = (np.zeros(4), (np.zeros(4, np.int32), np.zeros(4, bool)))
    r = bind(TUPLE_PARAMS, t=t, o=np.zeros(4))
    assert r.symbols == {"N": 4}
    assert r.values["t"][0] is t[0] and r.values["t"][1][1] is t[1][1]


def test_tuple_leaf_errors():
    ok = (np.zeros(4), (np.zeros(4, np.int32), np.zeros(4, bool)))
    raises(TUPLE_PARAMS, r"'t' element \[1\]\[0\] expects int32 elements, got int64",
           t=(ok[0], (np.zeros(4, np.int64), ok[1][1])), o=np.zeros(4))
    raises(TUPLE_PARAMS, r"element \[1\]\[1\] has shape \(5,\), but element \[0\]",
           t=(ok[0], (ok[1][0], np.zeros(5, bool))), o=np.zeros(4))
    raises(TUPLE_PARAMS, "expects a tuple of 2 elements, got 3", t=ok + (ok[0],), o=np.zeros(4))
    raises(TUPLE_PARAMS, "expects a tuple of 2 arrays, got numpy.ndarray", t=ok[0],
           o=np.zeros(4))
    raises(TUPLE_PARAMS, "size mismatch", t=ok, o=np.zeros(5))


def test_tuple_of_scalars():
    params = (P("s", T(ir.TupleType((F64, I32)))),)
    r = bind(params, s=(1, np.int32(2)))
    assert r.values["s"] == (1.0, 2)
    assert type(r.values["s"][0]) is np.float64 and type(r.values["s"][1]) is np.int32
    raises(params, r"'s' element \[1\] expects an integer", s=(1.0, 2.5))


# --------------------------------------------------------------------------- scalars


def scalar(t, v):
    return bind((P("s", T(t)),), s=v).values["s"]


@pytest.mark.parametrize("t,v,expected,np_type", [
    (F64, 2, 2.0, np.float64),
    (F64, 2.5, 2.5, np.float64),
    (F64, np.float32(0.5), 0.5, np.float64),
    (F64, np.int32(3), 3.0, np.float64),
    (F64, np.array(1.5), 1.5, np.float64),
    (F32, 0.5, 0.5, np.float32),
    (F32, 3, 3.0, np.float32),
    (I64, 7, 7, np.int64),
    (I64, np.int32(7), 7, np.int64),
    (I32, np.int64(7), 7, np.int32),
    (I32, np.array(7), 7, np.int32),
    (BOOL, True, True, np.bool_),
    (BOOL, np.bool_(False), False, np.bool_),
])
def test_scalar_conversions(t, v, expected, np_type):
    got = scalar(t, v)
    assert type(got) is np_type and got == expected


@pytest.mark.parametrize("t,v,match", [
    (I64, 2.0, "expects an integer"),
    (I32, np.float64(2.0), "expects an integer"),
    (I32, 2**31, "outside its range"),
    (I64, True, "got bool"),
    (F64, True, "got bool"),
    (BOOL, 1, "expects a bool"),
    (BOOL, 1.0, "expects a bool"),
    (F64, 2**53 + 1, "not exactly representable"),
    (F32, 2**24 + 1, "not exactly representable"),
    (F64, 10**400, "not exactly representable"),
    (F32, 1e300, "overflows"),
    (F64, "1.0", "got str"),
    (F64, 1j, "got complex"),
    (F64, np.zeros(2), "shape \\(2,\\)"),
    (F64, None, "got NoneType"),
])
def test_scalar_conversion_errors(t, v, match):
    with pytest.raises(ArgumentError, match=match):
        scalar(t, v)


def test_binder_default_where():
    b = ArgumentBinder((P("s", T(F64)),), "program 'q'")
    with pytest.raises(ArgumentError, match="^program 'q': "):
        b.bind({"s": "x"})
    with pytest.raises(ArgumentError, match="^elsewhere: "):
        b.bind({"s": "x"}, "elsewhere")
