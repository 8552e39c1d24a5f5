"""What a translated body can call besides builtins: ``@function`` objects,
scan operators and programs.

The translator recognises them by the classes here, so that translation does
not depend on the decorators, which run translation at call time.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import FrontendError
from .dims import DefinitionError, Dimension


class InlinedFunction:
    """A ``@function``: the translator inlines ``fn`` where it is called."""

    fn: Callable
    __name__: str


class ProgramDefinition:
    """A ``@program``: the translator refuses calls of it from other bodies."""

    fn: Callable
    __name__: str


class ScanOperator:
    """A ``@scan_operator``: a recurrence along one dimension.

    The body takes ``(state, a1, …)`` — the state at the previous level and
    the operands at this level, without the scan dimension — and returns the
    new state (a tuple for a tuple state).  Called with ``(a1, …)``, it gives
    the states at every level.
    """

    __name__: str

    def __init__(self, fn: Callable, axis: Dimension, forward: bool, init: Any):
        if not inspect.isfunction(fn):
            raise DefinitionError("@scan_operator decorates a Python function")
        if not isinstance(axis, Dimension):
            raise DefinitionError("scan_operator(axis=K, …): axis must be a Dimension")
        _check_init(init)
        self.fn = fn
        self.axis = axis
        self.forward = bool(forward)
        self.init = init
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any):
        raise FrontendError(f"'{self.fn.__name__}' is a scan operator: call it from a "
                            "@tensorir_dace.program or @function")

    def __repr__(self) -> str:
        return (f"<tensorir_dace.scan_operator {self.fn.__qualname__} along "
                f"{self.axis.name}, {'forward' if self.forward else 'backward'}>")


def _check_init(init: Any) -> None:
    if isinstance(init, tuple):
        for x in init:
            _check_init(x)
        return
    if not isinstance(init, (bool, int, float, np.generic)):
        raise DefinitionError(f"scan_operator init must be a number or a tuple of numbers, got "
                              f"{init!r}")
