"""The exception hierarchy: every mistake a user can make raises one of these.

Each error carries the place it refers to (``line:column`` of a ``.tir`` text,
or ``file:line`` of decorated Python source) and a message that says what is
wrong and what would be right.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A position in a source text: 1-based line and column, optional file name."""

    line: int
    column: int
    filename: str | None = None

    def __str__(self) -> str:
        if self.filename:
            return f"{self.filename}:{self.line}:{self.column}"
        return f"{self.line}:{self.column}"


class TensorIRError(Exception):
    """Base class of all errors a user of tensorir_dace can cause."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc is not None else message)


class ParseError(TensorIRError):
    """The program text does not follow the Tensor IR syntax."""


class TypeCheckError(TensorIRError):
    """The program is syntactically valid but ill-typed."""


class CoverageError(TypeCheckError):
    """An assignment's value is defined on fewer points than its target needs
    (with arrays of equal lengths this may hold only for some lengths: half
    levels one longer than full levels)."""


class ArgumentError(TensorIRError):
    """Arguments passed to a program do not match its parameters."""


class ShapeMismatchError(ArgumentError, TypeCheckError):
    """A call's arrays differ in length along a dimension in a way the
    program's statements cannot cover: an argument error (the caller's
    shapes) located at the statement that needs them (a type error)."""


class FrontendError(TensorIRError):
    """A decorated Python function uses a construct that has no Tensor IR meaning."""


class LoweringError(TensorIRError):
    """A well-typed program uses a feature the DaCe lowering cannot express."""


def did_you_mean(name: str, candidates: Iterable[str], then: Iterable[str] = ()) -> str:
    """A ' (did you mean ...?)' suffix naming close matches, or ''.

    Matches among ``candidates`` (the user's own names) come first, then
    those among ``then`` (e.g. Python's builtins)."""
    own = sorted(set(candidates))
    close = difflib.get_close_matches(name, own, n=3, cutoff=0.6)
    rest = sorted(set(then) - set(own))
    close += difflib.get_close_matches(name, rest, n=3 - len(close), cutoff=0.6) \
        if len(close) < 3 else []
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)"
