"""Size expressions written where programs are defined, kept as text until needed.

``N = size("N")``, ``I[-1:N + 1]`` and ``I.halo(1)`` are evaluated when a
module defines its programs.  Holding them as SymPy would import SymPy
(about 0.4 s) in every process, also in one whose calls are found in the
compile cache by their source and never translate.  A :class:`SizeExpr`
records the integer arithmetic as text and becomes the SymPy expression of
size symbols where translation first needs it (``sympy.sympify`` calls
``_sympy_``); every other attribute (``free_symbols``, ``subs``, ``name``)
is that expression's.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np

__all__ = ["SizeExpr", "as_sympy", "bound_text", "is_sympy"]

_NAME = re.compile(r"[A-Za-z_]\w*")
_ATOM = re.compile(r"-?\w+")


def is_sympy(value: Any) -> bool:
    """Whether ``value`` is a SymPy expression (without importing SymPy: a
    process that has not imported it holds none)."""
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(value, sympy.Expr)


def _operand(value: Any) -> str | None:
    if isinstance(value, SizeExpr):
        return value.text if _ATOM.fullmatch(value.text) else f"({value.text})"
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value)) if value >= 0 else f"({int(value)})"
    return None


def _arithmetic(op: str, method: str, reflected: bool = False):
    def apply(self: SizeExpr, other: Any) -> Any:
        text = _operand(other)
        if text is None:
            return getattr(self.sympy(), method)(other) if is_sympy(other) else NotImplemented
        a, b = (text, _operand(self)) if reflected else (_operand(self), text)
        return SizeExpr(f"{a} {op} {b}")
    apply.__name__ = method
    return apply


def _to_sympy(method: str):
    def apply(self: SizeExpr, *args: Any) -> Any:
        return getattr(self.sympy(), method)(*(as_sympy(a) for a in args))
    apply.__name__ = method
    return apply


class SizeExpr:
    """An integer expression of size symbols (``N + 1``), as text."""

    __slots__ = ("text", "_expr")

    def __init__(self, text: str):
        self.text = text
        self._expr: Any = None

    def sympy(self) -> Any:
        """The SymPy expression (size symbols are non-negative integers)."""
        if self._expr is None:
            import sympy

            from .. import ir
            names = {n: ir.size_symbol(n) for n in _NAME.findall(self.text)}
            self._expr = sympy.sympify(self.text, locals=names)
        return self._expr

    _sympy_ = sympy

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.sympy(), name)

    __add__ = _arithmetic("+", "__add__")
    __radd__ = _arithmetic("+", "__radd__", reflected=True)
    __sub__ = _arithmetic("-", "__sub__")
    __rsub__ = _arithmetic("-", "__rsub__", reflected=True)
    __mul__ = _arithmetic("*", "__mul__")
    __rmul__ = _arithmetic("*", "__rmul__", reflected=True)
    __floordiv__ = _arithmetic("//", "__floordiv__")
    __rfloordiv__ = _arithmetic("//", "__rfloordiv__", reflected=True)
    __mod__ = _arithmetic("%", "__mod__")
    __rmod__ = _arithmetic("%", "__rmod__", reflected=True)
    __truediv__ = _to_sympy("__truediv__")
    __rtruediv__ = _to_sympy("__rtruediv__")
    __pow__ = _to_sympy("__pow__")
    __lt__ = _to_sympy("__lt__")
    __le__ = _to_sympy("__le__")
    __gt__ = _to_sympy("__gt__")
    __ge__ = _to_sympy("__ge__")

    def __neg__(self) -> SizeExpr:
        return SizeExpr(f"-{_operand(self)}")

    def __pos__(self) -> SizeExpr:
        return self

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, SizeExpr) and other.text == self.text:
            return True
        return bool(self.sympy() == as_sympy(other))

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.sympy())

    def __str__(self) -> str:
        return str(self.sympy())

    def __repr__(self) -> str:
        return repr(self.sympy())


def as_sympy(value: Any) -> Any:
    """``value`` with a :class:`SizeExpr` made SymPy (anything else unchanged)."""
    return value.sympy() if isinstance(value, SizeExpr) else value


def bound_text(value: Any) -> str:
    """A bound as text for cache keys, without importing SymPy for one that is
    not SymPy already."""
    if isinstance(value, SizeExpr):
        return value.text
    return str(value)
