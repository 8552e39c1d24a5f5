"""The calling convention of lowered programs is plain data that survives JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tensorir_dace as tir
from tensorir_dace import ir
from tensorir_dace.lowering import lower_program
from tensorir_dace.signature import ArgBinding, CallSignature

EXAMPLES = Path(__file__).resolve().parent.parent / "sdfg_examples"
N = ir.size_symbol("N")


def round_trip(sig: CallSignature) -> CallSignature:
    return CallSignature.from_json(json.loads(json.dumps(sig.to_json())))


def test_hand_written_signature_round_trips():
    sig = CallSignature(
        params=(ir.Param("t", ir.TensorType(ir.TupleType((ir.FLOAT64, ir.TupleType(
            (ir.INT32, ir.BOOL)))), (ir.Dim("I", -1, N + 1), ir.Dim("K", 0, 2 * N)))),
                ir.Param("alpha", ir.TensorType(ir.FLOAT32))),
        bindings=(ArgBinding("t", (0,), "t_0"), ArgBinding("t", (1, 0), "t_1_0"),
                  ArgBinding("t", (1, 1), "t_1_1"), ArgBinding("alpha", (), "alpha")),
        symbols={"N": "N_"},
        constraints=(ir.SizeConstraint(ir.as_bound(1), N - 1, "I[1:N-1] of I[0:N]"),))
    back = round_trip(sig)
    assert back == sig
    assert back.params[0].type.dims[1].stop.free_symbols == {N}   # the size symbol itself
    assert back.constraints[0].reason == "I[1:N-1] of I[0:N]"


@pytest.mark.parametrize("name", ["laplacian", "nabla", "tridiagonal", "symbolic_sizes"])
def test_lowered_signatures_round_trip(name):
    prog = tir.parse((EXAMPLES / f"{name}.tir").read_text())
    sig = lower_program(prog, optimize="none").signature
    back = round_trip(sig)
    assert back == sig
    assert [p.type for p in back.params] == [p.type for p in prog.params]
