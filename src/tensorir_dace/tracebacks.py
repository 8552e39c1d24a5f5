"""Short tracebacks for user mistakes, as JAX does.

A :class:`~tensorir_dace.errors.TensorIRError` raised inside the package
surfaces at the public call that the user made (:func:`api_boundary`)
without the package-internal frames below it and without the exceptions it
was raised while handling: the message (which names the file:line of the
mistake) is what matters.  ``TENSORIR_DACE_TRACEBACK=full`` keeps
everything, for debugging the package itself."""

from __future__ import annotations

import functools
import os
import pathlib
import types
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import TensorIRError

F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE = str(pathlib.Path(__file__).resolve().parent) + os.sep
_NOTE = ("(frames inside tensorir_dace are hidden; set TENSORIR_DACE_TRACEBACK=full "
         "to show them)")


def full_tracebacks() -> bool:
    return os.environ.get("TENSORIR_DACE_TRACEBACK", "").strip().lower() == "full"


def _outside(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback ``tb`` without the frames of this package's files."""
    frames = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(frames):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def api_boundary(fn: F) -> F:
    """Make ``fn`` a public entry point: its :class:`TensorIRError` loses the
    package-internal frames (unless ``TENSORIR_DACE_TRACEBACK=full``)."""
    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TensorIRError as e:
            if full_tracebacks():
                raise
            e.__cause__ = None
            e.__suppress_context__ = True
            if hasattr(e, "add_note") and _NOTE not in getattr(e, "__notes__", ()):
                e.add_note(_NOTE)          # Python 3.11+
            raise e.with_traceback(_outside(e.__traceback__)) from None
    return entry  # type: ignore[return-value]
