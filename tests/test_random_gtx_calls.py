"""The call contract for random programs in GT4Py's spelling: mutated calls,
tables in ``offset_provider=`` included, raise a ``TensorIRError`` in both
backends or agree with the interpreter."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tensorir_dace import ArgumentError
from tensorir_dace.fuzz.gtx_calls import gtx_call_contract
from tensorir_dace.fuzz.gtx_programs import BOUNDS, SIZES, gtx_batch
from tensorir_dace.fuzz.gtx_runner import arguments, load_module, source, tables


def valid_call(first: int, folder) -> tuple:
    module = load_module(source(gtx_batch(first, 2)), str(folder), f"gtx_calls_{first}")
    args = arguments([], SIZES[0], first)
    args |= module.OUTPUT_ARRAYS(SIZES[0], np.random.default_rng(first))
    hs, he, k0 = BOUNDS[0][0]
    args |= {"hs": hs, "he": he, "k0": k0, "nlev": SIZES[0]["N_K"]}
    return module.fuzz, args, tables(SIZES[0], first)


@pytest.mark.parametrize("first", [110, 128])
def test_mutated_calls_keep_the_contract(first, tmp_path):
    prog, args, provider = valid_call(first, tmp_path)
    assert gtx_call_contract(prog, args, provider, random.Random(first), 15) == []


def test_a_table_with_an_entry_out_of_range_is_refused_by_both(tmp_path):
    prog, args, provider = valid_call(114, tmp_path)
    prog(**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()},
         offset_provider=provider, backend="interpreter")     # the tables' counts are known
    read = [p.name for p in prog.ir.params if p.name in provider]
    assert read, "the batch reads a table"
    bad = {**provider, read[0]: provider[read[0]].copy()}
    bad[read[0]][0, 0] = 10 ** 6
    for backend in ("interpreter", "compiled"):
        with pytest.raises(ArgumentError, match=f"neighbour table '{read[0]}'"):
            prog(**args, offset_provider=bad, backend=backend)
