"""Typed Tensor IR → DaCe SDFG (see :mod:`.program` and :mod:`.expressions`)."""

from __future__ import annotations

import dace

from .. import ir
from ..typing import check
from .program import LoweredProgram, lower

OPTIMIZE_LEVELS = ("none", "default")


def lower_program(program: ir.Program, *, optimize: str = "none") -> LoweredProgram:
    """Check, lower and (for ``optimize="default"``) optimise a program."""
    from ..transforms import pipeline
    if optimize not in OPTIMIZE_LEVELS:
        from ..errors import TensorIRError
        raise TensorIRError(f"optimize must be one of {', '.join(OPTIMIZE_LEVELS)}, "
                            f"got {optimize!r}")
    typed = check(program)
    lowered = lower(typed, fused=optimize != "none")
    pipeline(optimize)(lowered.sdfg)
    return lowered


def to_sdfg(program: ir.Program, *, optimize: str = "none") -> dace.SDFG:
    """The SDFG of a program: as lowered (``"none"``) or optimised (``"default"``)."""
    return lower_program(program, optimize=optimize).sdfg


__all__ = ["to_sdfg", "lower", "lower_program", "LoweredProgram"]
