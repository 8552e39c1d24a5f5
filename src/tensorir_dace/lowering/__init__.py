"""Typed Tensor IR → DaCe SDFG (see :mod:`.program` and :mod:`.expressions`)."""

from __future__ import annotations

import dace

from .. import ir
from ..log import stage
from ..typing import check
from .program import LoweredProgram, lower

OPTIMIZE_LEVELS = ("none", "default")


DEVICES = ("cpu", "gpu")


def lower_program(program: ir.Program, *, optimize: str = "none",
                  device: str = "cpu", resident: bool = False) -> LoweredProgram:
    """Check, lower and (for ``optimize="default"``) optimise a program;
    ``device="gpu"`` makes its maps CUDA kernels, which take the array
    arguments in host memory or (``resident=True``) in device memory."""
    from ..errors import TensorIRError
    from ..transforms import pipeline
    from ..transforms.sdfg_passes import to_gpu
    if optimize not in OPTIMIZE_LEVELS:
        raise TensorIRError(f"optimize must be one of {', '.join(OPTIMIZE_LEVELS)}, "
                            f"got {optimize!r}")
    if device not in DEVICES:
        raise TensorIRError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    with stage("checking"):
        typed = check(program)
    with stage("lowering"):
        lowered = lower(typed, fused=optimize != "none")
    pipeline(optimize, device)(lowered.sdfg)
    if device == "gpu":
        with stage("pass to_gpu"):
            to_gpu(lowered.sdfg, resident_arrays(typed, lowered) if resident else ())
    return lowered


def resident_arrays(typed: ir.Program, lowered: LoweredProgram) -> list[str]:
    """The SDFG containers of the array (not scalar) parameters."""
    arrays = {p.name for p in typed.params if not p.type.is_scalar}
    return [b.data for b in lowered.signature.bindings if b.param in arrays]


@ir.with_recursion_room
def to_sdfg(program: ir.Program, *, optimize: str = "none", device: str = "cpu") -> dace.SDFG:
    """The SDFG of a program: as lowered (``"none"``) or optimised (``"default"``),
    for the CPU or (``device="gpu"``) a CUDA GPU."""
    return lower_program(program, optimize=optimize, device=device).sdfg


__all__ = ["to_sdfg", "lower", "lower_program", "LoweredProgram"]
