"""The NumPy interpreter: the embedded backend and the reference every compiled
result is compared against.

    import tensorir_dace as tir
    tir.interpret(program, out=out, inp=inp)

:func:`interpret` type-checks the program (memoised per program), binds and
checks the arguments with :func:`tensorir_dace.arguments.bind_arguments`
(every check happens before anything is written), evaluates the statements
with vectorised NumPy (:mod:`.evaluate`, values in :mod:`.values`) and writes
the outputs in place into the caller's arrays.  Temporaries are allocated
internally for each call and zero-initialised (deterministic; compiled code
need not do the same, so a program must not read a temporary before writing
it).  Semantic conventions (integer division, absent neighbours, …) are listed
in :mod:`.evaluate`.  An :class:`~.values.InterpreterError` means the typed
program is inconsistent in a way the type checker should have rejected.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import ir
from ..arguments import (
    bind_arguments,
    check_size_constraints,
    merge_positional,
    runtime_values,
)
from ..callchecks import CallChecks
from ..device_arrays import require_host_arrays
from ..typing import check
from .evaluate import Evaluator, interpret_program
from .values import InterpreterError, Value, align

__all__ = ["Evaluator", "InterpreterError", "Value", "align", "interpret", "typed_program"]

_BY_ID: dict[int, tuple[ir.Program, ir.Program]] = {}


@functools.lru_cache(maxsize=128)
def _check_cached(program: ir.Program, constraints: tuple[ir.SizeConstraint, ...]
                  ) -> ir.Program:
    """(``constraints``: the program's, which its equality leaves out: two
    programs alike but for the orders they check at call time differ.)"""
    return check(program)


def typed_program(program: ir.Program) -> ir.Program:
    """The type-checked form of ``program`` (memoised: by identity, then by value)."""
    hit = _BY_ID.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    typed = _check_cached(program, program.constraints)
    if len(_BY_ID) >= 128:
        _BY_ID.clear()
    _BY_ID[id(program)] = (program, typed)
    return typed


@ir.with_recursion_room
def interpret(program: ir.Program, /, *positional: Any, **args: Any) -> None:
    """Run ``program`` on NumPy; outputs are written in place into ``args``.

    Raises :class:`~tensorir_dace.TypeCheckError` for an ill-typed program and
    :class:`~tensorir_dace.ArgumentError` for missing, unknown or mismatching
    arguments, read-only or overlapping outputs and neighbour-table entries
    out of range (before any output is touched; see :mod:`..callchecks`).
    An input that shares memory with an output is read from a copy.
    """
    if not isinstance(program, ir.Program):
        raise TypeError(f"interpret() expects an ir.Program, got {type(program).__name__}")
    typed = typed_program(program)
    if positional:
        args = merge_positional(typed.params, positional, args, f"program '{typed.name}'")
    values, symbols = checked_arguments(typed, args, host_only=True)
    interpret_program(typed, values, symbols)


def checked_arguments(typed: ir.Program, args: dict[str, Any], host_only: bool = False
                      ) -> tuple[dict[str, Any], dict[str, int]]:
    """The checks a call of the type-checked ``typed`` makes before it writes
    anything (dtypes, shapes, orders of sizes and bounds, writeable outputs,
    neighbour tables; ``host_only``: NumPy arrays only): the arguments as the
    program reads them, and the sizes."""
    where = f"program '{typed.name}'"
    bound = bind_arguments(typed.params, args, where=where)
    if host_only:
        require_host_arrays(bound.values, where, "the interpreter")
    symbols = {**runtime_values(typed.params, bound.values), **bound.symbols}
    check_size_constraints(typed.constraints, symbols, where)
    values, _ = CallChecks.for_program(typed).check(bound.values, symbols)
    return values, symbols
