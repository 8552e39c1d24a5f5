"""Each element of a tuple chosen or unpacked is defined wherever its own value
is, as in GT4Py: ``x, y = where(m, (a(K - 1), b), (a, b))`` leaves ``y``
defined on every level though ``x`` lacks the first.  Covered: ``where`` and
``concat_where`` on tuple branches (a tuple written out, or the result of a
called operator, small or large), a conditional expression on a scalar ``bool`` choosing
tuples, an ``if`` statement on a scalar whose branches assign the names, one
that binds a name of its own in a branch and one that returns in a branch (the
rest of the body follows each branch: the element is chosen between the
branches' elements), and the unpacking of a large operator's result.  Each program writes ``y`` from
level 0; interpreter and compiled code are compared with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace.frontend import (
    Field,
    FieldOffset,
    concat_where,
    dims,
    field_operator,
    float64,
    int32,
    program,
    where,
)

Cell, K = dims("Cell K")
Koff = FieldOffset("Koff", source=K, target=(K,))
F = Field[[Cell, K], float64]
KI = Field[[K], int32]
NC, NK = 3, 8
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(23)


@field_operator
def small(a: F, b: F) -> tuple[F, F]:
    return a(Koff[-1]), 2.0 * b


@field_operator
def large(a: F, b: F, k: KI) -> tuple[F, F]:
    x = a(Koff[-1])
    y = 2.0 * b
    for _ in range(12):        # a body too large to copy into each element unasked
        x = where(k > 2, x * 0.5 + 1.0, x - 1.0)
        y = where(k > 3, y * 0.5 + 1.0, y - 1.0)
    return x, y


@field_operator
def where_on_written_tuples(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = where(k > 4, (a(Koff[-1]), 2.0 * b), (a, b))
    return y


@field_operator
def where_on_a_small_call(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = where(k > 4, small(a, b), (a, b))
    return y


@field_operator
def where_on_a_large_call(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = where(k > 4, large(a, b, k), (a, b))
    return y


@field_operator
def concat_where_on_written_tuples(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = concat_where(Cell < 2, (a(Koff[-1]), 2.0 * b), (a, b))
    return y


@field_operator
def concat_where_on_a_large_call(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = concat_where((1 <= Cell) & (Cell < 3), large(a, b, k), (a, b))
    return y


@field_operator
def conditional_expression(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = (a(Koff[-1]), 2.0 * b) if flag else (a, b)
    return y


@field_operator
def if_statement(a: F, b: F, k: KI, flag: bool) -> F:
    if flag:
        x = a(Koff[-1])
        y = 2.0 * b
    else:
        x = a
        y = b
    return y


@field_operator
def a_name_of_its_own(a: F, b: F, flag: bool) -> tuple[F, F]:
    x = a
    y = b
    if flag:
        t = a(Koff[-1])    # bound in this branch only: the rest follows each branch
        x = t
        y = 2.0 * b
    return x, y


@field_operator
def if_statement_with_a_name_of_its_own(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = a_name_of_its_own(a, b, flag)
    return y


@field_operator
def returns_in_branches(a: F, b: F, flag: bool) -> tuple[F, F]:
    if flag:
        return a(Koff[-1]), 2.0 * b
    return a, b


@field_operator
def if_statement_that_returns(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = returns_in_branches(a, b, flag)
    return y


@field_operator
def unpacked_large_call(a: F, b: F, k: KI, flag: bool) -> F:
    x, y = large(a, b, k)
    return y


def make(op):
    @program
    def prog(a: F, b: F, k: KI, flag: bool, out: F, vs: int32):
        op(a, b, k, flag, out=out, domain={Cell: (0, NC), K: (vs, NK)})
    return prog


def large_y(b, k):
    y = 2.0 * b
    for _ in range(12):
        y = np.where(k > 3, y * 0.5 + 1.0, y - 1.0)
    return y


CASES = {
    "where_on_written_tuples": (where_on_written_tuples,
                                lambda b, k, flag: np.where(k > 4, 2.0 * b, b)),
    "where_on_a_small_call": (where_on_a_small_call,
                              lambda b, k, flag: np.where(k > 4, 2.0 * b, b)),
    "where_on_a_large_call": (where_on_a_large_call,
                              lambda b, k, flag: np.where(k > 4, large_y(b, k), b)),
    "concat_where_on_written_tuples": (
        concat_where_on_written_tuples,
        lambda b, k, flag: np.where(np.arange(NC)[:, None] < 2, 2.0 * b, b)),
    "concat_where_on_a_large_call": (
        concat_where_on_a_large_call,
        lambda b, k, flag: np.where(np.arange(NC)[:, None] >= 1, large_y(b, k), b)),
    "conditional_expression": (conditional_expression,
                               lambda b, k, flag: 2.0 * b if flag else b),
    "if_statement": (if_statement, lambda b, k, flag: 2.0 * b if flag else b),
    "if_statement_with_a_name_of_its_own": (if_statement_with_a_name_of_its_own,
                                            lambda b, k, flag: 2.0 * b if flag else b),
    "if_statement_that_returns": (if_statement_that_returns,
                                  lambda b, k, flag: 2.0 * b if flag else b),
    "unpacked_large_call": (unpacked_large_call, lambda b, k, flag: large_y(b, k)),
}
PROGRAMS = {name: make(op) for name, (op, _) in CASES.items()}


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_element_is_defined_where_its_own_value_is(backend, name, flag):
    a, b = RNG.random((NC, NK)), RNG.random((NC, NK))
    k = np.arange(NK, dtype=np.int32)
    out = np.full((NC, NK), -7.0)
    PROGRAMS[name](a, b, k, flag, out, 0, backend=backend)
    np.testing.assert_allclose(out, CASES[name][1](b, k, flag), rtol=1e-12)
