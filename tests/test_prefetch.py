"""Which read a stencil loop prefetches, and the rows it leaves alone
(the compiled results are checked in the tests of the passes that use it)."""

from __future__ import annotations

import dace
from dace import symbolic

from conftest import assert_address
from tensorir_dace.transforms import prefetch

N, M, L = (dace.symbol(s) for s in "NML")
PARAMS = ["i", "j", "k"]


def at(*offsets):
    return [symbolic.pystr_to_symbolic(f"{p} + ({o})") for p, o in zip(PARAMS, offsets)]


def test_the_read_furthest_ahead_in_memory_leads():
    a = dace.data.Array(dace.float64, [N + 2, M + 2, L])
    b = dace.data.Array(dace.float32, [N, M, L])
    reads = [("a", a, at(0, 1, 0)), ("a", a, at(1, -1, 0)), ("a", a, at(-1, 2, 0)),
             ("b", b, at(0, 0, 0))]
    lead = prefetch.leading_reads(reads, PARAMS)
    assert lead == {"a": at(1, -1, 0), "b": at(0, 0, 0)}


def test_rows_that_do_not_move_or_are_not_contiguous_are_not_prefetched():
    a = dace.data.Array(dace.float64, [N, M, L])
    row = prefetch.row_prefetch("_p", a, at(1, 0, 0), PARAMS, "M", "0", "L")
    assert any("__builtin_prefetch(_pf + _p, 0, 3)" in line for line in row)
    assert_address("\n".join(row), "_p", "L*M*(i + 1) + L*_pf_row + _pf_lo")
    per_level = dace.data.Array(dace.float64, [N, L])       # does not depend on j
    i, _, k = at(0, 0, 0)
    assert prefetch.row_prefetch("_p", per_level, [i, k], PARAMS, "M", "0", "L") == []
    k_first = dace.data.Array(dace.float64, [N, M, L], strides=[M, 1, N * M])
    assert prefetch.row_prefetch("_p", k_first, at(0, 0, 0), PARAMS, "M", "0", "L") == []
