"""Acceptance audit of mistakes: every malformed text program, ill-typed
construct and misused Python value is a located ``TensorIRError`` subclass,
never a raw exception, and names what is wrong."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace.frontend import Field, FieldOffset, dims, field_operator, scan_operator

PROGRAM = """p(x: tensor<float, I[0:N], K[0:L]>, y: tensor<float32, I[0:N]>, n: tensor<int>,
  E2V: tensor<int, E[0:M], _NB_I[0:2]>, t: tensor<(float, int), I[0:N]>, b: tensor<bool, I[0:N]>,
  o: tensor<float, I[0:N], K[0:L]>, oe: tensor<float, E[0:M]>) {
%s
}"""

F = "tensor<float, I[0:N], K[0:L]>"
FE = "tensor<float, E[0:M]>"

# (statement, error class, a phrase of the message)
CASES = {
    "unclosed": ("o <- (x + 1.0", tir.ParseError, "to close"),
    "bad_character": ("o <- x $ 1.0", tir.ParseError, "unexpected character"),
    "unknown_element_type": ("tmp: tensor<floatt, I[0:N]>; o <- x", tir.ParseError,
                             "did you mean"),
    "unknown_name": ("o <- xx", tir.TypeCheckError, "unknown name 'xx'"),
    "element_types_differ": ("o <- x + y", tir.TypeCheckError, "one element type"),
    "target_element_type": ("o <- cast(x, float32)", tir.TypeCheckError, "cannot assign"),
    "domain_too_small": ("o <- <<I, 1>>(x)", tir.TypeCheckError, "defined on I[-1:N - 1]"),
    "unknown_offset_tag": ("o <- <<q, 1>>(x)", tir.TypeCheckError, "names no dimension"),
    "reduce_without_neighbours": (
        f"o <- reduce(lambda(a: {F}, v: {F}) -> a + v, 0.0)(x)", tir.TypeCheckError,
        "neighbour dimension"),
    "scan_without_axis": (f"o <- scan(lambda(s: {F}, v: {F}) -> s + v, True, 0.0)(x)",
                          tir.TypeCheckError, "scan axis"),
    "scan_direction": ("o <- scan(lambda(s: tensor<float, I[0:N]>, v: tensor<float, I[0:N]>)"
                       " -> s + v, 1, 0.0)(x)", tir.TypeCheckError, "direction"),
    "scan_returns_other_type": (
        "o <- scan(lambda(s: tensor<float, I[0:N]>, v: tensor<float, I[0:N]>) -> s < v, "
        "True, 0.0)(x)", tir.TypeCheckError, "state's type"),
    "tuple_index_out_of_range": ("o <- x + t[2]", tir.TypeCheckError, "out of range"),
    "tuple_get_of_scalar_type": ("o <- x[0]", tir.TypeCheckError, "tuple-typed"),
    "tuple_into_scalar_target": ("o <- make_tuple(x, x)", tir.TypeCheckError, "cannot assign"),
    "subset_outside": ("subset(o, I[0:N+1]) <- x", tir.TypeCheckError, "not within"),
    "subset_unknown_dimension": ("subset(o, J[0:1]) <- x", tir.TypeCheckError, "no dimension J"),
    "concat_gap": ("o <- concat(K, subset(x, K[0:1]), subset(x, K[2:L]))",
                   tir.TypeCheckError, "contiguous"),
    "concat_overlap": ("o <- concat(K, subset(x, K[0:2]), subset(x, K[1:L]))",
                       tir.TypeCheckError, "disjoint"),
    "shift_apply_index": ("oe <- shift_apply(5)(<<E2V>>(cast(y, float)))", tir.TypeCheckError,
                          "outside _NB_0"),
    "shift_apply_without_neighbours": ("o <- shift_apply(0)(x)", tir.TypeCheckError,
                                       "_NB_<n>"),
    "full_shift_index": ("oe <- cast(<<E2V, 2>>(y), float)", tir.TypeCheckError,
                         "outside _NB_I"),
    "float_table": ("o <- <<y, 0>>(x)", tir.TypeCheckError, "neighbour table"),
    "cast_to_unknown": ("o <- cast(x, float16)", tir.TypeCheckError, "element type"),
    "lambda_arity": (f"o <- (lambda(a: {F}) -> a)(x, x)", tir.TypeCheckError, "1 parameters"),
    "lambda_duplicate_parameter": (f"o <- (lambda(a: {F}, a: {F}) -> a)(x, x)",
                                   tir.TypeCheckError, "two parameters named 'a'"),
    "lambda_element_type": ("o <- (lambda(a: tensor<int, I[0:N], K[0:L]>) -> cast(a, float))(x)",
                            tir.TypeCheckError, "expects element type int64"),
    "call_a_tensor": ("o <- x(x)", tir.TypeCheckError, "not a function"),
    "if_on_floats": ("o <- if(x, x, x)", tir.TypeCheckError, "must be bool"),
    "bool_arithmetic": ("o <- cast(b + b, float) + x", tir.TypeCheckError, "bool"),
    "program_if_on_tensor": ("if (b) { o <- x }", tir.TypeCheckError, "scalar bool"),
    "program_if_on_int": ("if (n) { o <- x }", tir.TypeCheckError, "scalar bool"),
    "float_loop_bound": ("for (s in 0:1.5) { o <- x }", tir.TypeCheckError, "integer"),
    "assign_to_unknown": ("zz <- x", tir.TypeCheckError, "unknown name 'zz'"),
    "temporary_named_like_parameter": ("x: tensor<float, I[0:N]>; o <- x", tir.TypeCheckError,
                                       "declared twice"),
    "reduce_axis_unknown": (
        f"oe <- reduce(lambda(a: {FE}, v: {FE}) -> a + v, 0.0, _NB_7)(<<E2V>>(cast(y, float)))",
        tir.TypeCheckError, "axis of reduce"),
    "reduce_init_type": (
        f"oe <- reduce(lambda(a: {FE}, v: {FE}) -> a + v, True)(<<E2V>>(cast(y, float)))",
        tir.TypeCheckError, "init of reduce"),
    "int32_literal_overflow": ("o <- x + cast(cast(y, int32) + 3000000000, float)",
                               tir.TypeCheckError, "does not fit in int32"),
    "float_offset_tensor": ("o <- <<K, x>>(x)", tir.TypeCheckError, "integer tensor"),
    "power_arity": ("o <- power(x)", tir.TypeCheckError, "2 operands"),
    "sqrt_of_int": ("o <- cast(sqrt(n), float) + x", tir.TypeCheckError, "float operand"),
    "not_of_float": ("o <- if(!x, x, x)", tir.TypeCheckError, "bool operands"),
    "neg_of_bool": ("o <- if(-b, x, x)", tir.TypeCheckError, "bool"),
    "bad_literal": ("o <- x + 1.0.0", tir.ParseError, "invalid number"),
    "assign_loop_variable": ("for (q in 0:n) { q <- 1 }", tir.TypeCheckError, "'q'"),
    "assign_scalar_parameter": ("n <- 3", tir.TypeCheckError, "scalar parameter"),
    "float_shift_offset": ("o <- <<I, 1.5>>(x)", tir.ParseError, "offset"),
    "lambda_without_types": ("o <- (lambda(a) -> a)(x)", tir.ParseError, "expected ':'"),
    "no_arrow": ("o x", tir.ParseError, "expected '←'"),
    "math_in_a_condition": ("if (sqrt(cast(n, float)) > 1.0) { o <- x }", tir.TypeCheckError,
                            "sqrt cannot be used in a program-level condition"),
    "lambda_in_a_loop_bound": ("for (s in 0:(lambda(q: tensor<int>) -> q + 1)(n)) { o <- x }",
                               tir.TypeCheckError, "a lambda call cannot be used"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_mistakes_are_located_errors(name):
    body, kind, phrase = CASES[name]
    with pytest.raises(kind) as info:
        tir.check(tir.parse(PROGRAM % body))
    message = str(info.value)
    assert re.match(r"\d+:\d+: ", message), message
    assert phrase in message, message


# ------------------------------------------------------------ Python front end

Cell, K = dims("Cell K")
Koff = FieldOffset("Koff", source=K, target=(K,))


def test_a_bad_offset_value_points_at_the_expression():
    @field_operator
    def shifted(x: Field[[Cell, K], float]):
        return x(Koff[1.5])

    line = shifted.fn.__code__.co_firstlineno + 2
    with pytest.raises(tir.FrontendError, match=rf"test_conformance_errors.py:{line}:\d+: "
                                                r"Koff\[…\] takes an integer offset"):
        shifted(np.zeros((2, 3)), backend="interpreter")


def test_a_scan_init_of_the_wrong_shape_points_at_the_decorator():
    @scan_operator(axis=K, forward=True, init=(0.0, 0.0))
    def running(acc: float, x: float) -> float:
        return acc + x

    @field_operator
    def use(x: Field[[Cell, K], float]):
        return running(x)

    line = running.fn.__code__.co_firstlineno   # the decorator line
    with pytest.raises(tir.FrontendError, match=rf"test_conformance_errors.py:{line}:\d+: "
                                                r"the initial value \(0.0, 0.0\)"):
        use(np.zeros((2, 3)), backend="interpreter")


def test_a_direct_scan_call_with_too_many_arguments_points_at_the_scan_operator():
    @scan_operator(axis=K, forward=True, init=0.0)
    def running(acc: float, x: float) -> float:
        return acc + x

    with pytest.raises(tir.ArgumentError, match=r"test_conformance_errors.py:\d+:\d+: "
                                                r".*too many positional arguments"):
        running(np.zeros((2, 3)), np.zeros((2, 3)), backend="interpreter")


def test_unknown_decorator_keywords_are_named_where_written():
    from tensorir_dace.frontend import program

    with pytest.raises(tir.FrontendError, match=r"test_conformance_errors.py:\d+:\d+: @program "
                                                r"got the unknown keyword argument optimise"):
        @program(optimise="none")
        def misspelt(x: Field[[Cell, K], float], o: Field[[Cell, K], float]):
            o[...] = x

    with pytest.raises(tir.FrontendError, match="@scan_operator got the unknown keyword"):
        scan_operator(axis=K, forward=True, init=0.0, optimise="none")


def test_gt4py_grid_type_keyword_is_accepted():
    from tensorir_dace.frontend import program

    @program(grid_type="unstructured")
    def doubled(x: Field[[Cell, K], float], o: Field[[Cell, K], float]):
        o[...] = 2.0 * x

    o = np.zeros((2, 3))
    doubled(np.ones((2, 3)), o, backend="interpreter")
    np.testing.assert_array_equal(o, 2.0)
