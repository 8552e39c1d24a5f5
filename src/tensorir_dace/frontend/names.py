"""Python parameter names as Tensor IR names.

Any Python identifier may name a parameter, as in GT4Py (``index``, ``pos``,
``shift``, ``scan``, ``min``, or ``K`` beside a dimension named ``K``), but
in Tensor IR some names mean something else: the builtins and their
spellings (``pos``, ``index``, ``__scan``), the dimensions and size symbols
of the program's types, and ``self`` (compiled programs take their
arguments as keywords).  Such a parameter gets an IR name with trailing
underscores (``index`` → ``index_``), as many as it takes to be none of
those and no other parameter's name; the choice depends only on the
parameter names and types, so it is the same in every process.  Callers
keep the Python names: arguments are renamed on the way in, and messages
name the parameters as written (:func:`python_message`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import ir
from ..errors import ArgumentError

#: Keywords the compiled program's call takes besides the parameters.
_CALL_NAMES = frozenset({"self"})


def _taken(types: Sequence[ir.TensorType | None]) -> set[str]:
    """The dimension and size-symbol names of ``types``."""
    out: set[str] = set()
    for t in types:
        for d in t.dims if t is not None else ():
            out.add(d.name)
            for b in (d.start, d.stop):
                out |= {s.name for s in getattr(b, "free_symbols", ())}
    return out


def ir_names(names: Sequence[str], types: Sequence[ir.TensorType | None],
             avoid: Iterable[str] = ()) -> dict[str, str]:
    """The IR name of each parameter in ``names`` (with ``types``, None for a
    static value) that needs another one: ``{python name: IR name}``; no new
    name is one of ``avoid`` (other names the program has)."""
    taken = _taken(types)

    def reserved(n: str) -> bool:
        return ir.canonical_builtin(n) is not None or n in taken or n in _CALL_NAMES

    used = set(names) | set(avoid)
    out: dict[str, str] = {}
    for n in names:
        if not reserved(n):
            continue
        m = n + "_"
        while m in used or reserved(m):
            m += "_"
        used.add(m)
        out[n] = m
    return out


def python_message(message: str, names: Mapping[str, str]) -> str:
    """``message`` with the IR names of renamed parameters (``names``: {Python
    name: IR name}) written as in Python (IR names end in ``_`` and are no
    other name: whole words are replaced)."""
    if not names:
        return message
    back = {v: k for k, v in names.items()}
    words = "|".join(re.escape(v) for v in sorted(back, key=len, reverse=True))
    return re.sub(rf"(?<!\w)({words})(?!\w)", lambda m: back[m.group(1)], message)


class PythonNamedCall:
    """A compiled program called with the Python names of its parameters
    (``names``: {Python name: IR name}); everything else is the compiled
    program's."""

    def __init__(self, compiled: Any, names: Mapping[str, str]):
        self._compiled = compiled
        self._names = dict(names)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._compiled(*args, **{self._names.get(k, k): v for k, v in kwargs.items()})
        except ArgumentError as e:
            raise ArgumentError(python_message(e.message, self._names), e.loc) from None

    @property
    def param_names(self) -> tuple[str, ...]:
        back = {v: k for k, v in self._names.items()}
        return tuple(back.get(n, n) for n in self._compiled.param_names)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)
