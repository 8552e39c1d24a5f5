"""The decorators: ``@function``, ``@scan_operator(…)`` and ``@program``.

``@function`` and ``@scan_operator`` mark Python functions that programs (and
other functions) call; they are inlined into the caller's Tensor IR.  A
``@program`` is translated to an :class:`ir.Program` on first use
(``prog.ir``), and calling it with NumPy arrays runs it: compiled through DaCe
by default (compiled once and cached), or with the NumPy interpreter
(``backend="interpreter"``).  Outputs are written in place.

Parameters without annotation (or annotated ``Tensor`` / ``Tensor[T, ...]``)
are rank-generic: programs and functions are specialised for the dimensions,
halos and dtypes of their arguments (not their sizes), once per
specialisation (see :mod:`.specialize`).  A ``@function`` called directly with
arrays returns its value as a new array, JAX-style.

The objects live in :mod:`.field_operators` and :mod:`.program_objects`;
what they share in :mod:`.specialized`."""

from __future__ import annotations

import enum

from .callables import ScanOperator
from .field_operators import (
    DirectScanOperator,
    FunctionObject,
    field_operator,
    function,
    scan_operator,
)
from .program_objects import ProgramObject, program
from .specialized import BACKENDS, compile_ir

__all__ = ["BACKENDS", "DirectScanOperator", "FunctionObject", "GridType", "ProgramObject",
           "ScanOperator", "compile_ir", "field_operator", "function", "program", "scan_operator"]


class GridType(str, enum.Enum):
    """GT4Py's grid types, for the decorators' ``grid_type=`` (accepted, no effect)."""

    CARTESIAN = "cartesian"
    UNSTRUCTURED = "unstructured"
