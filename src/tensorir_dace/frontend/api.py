"""The functions available inside ``@function`` / ``@program`` bodies.

They are markers: the translator recognises them and emits Tensor IR; calling
one outside a decorated body raises :class:`~tensorir_dace.FrontendError`.

* element-wise math: ``sqrt``, ``exp``, ``log``, ``sin``, … (the IR's math
  builtins, also ``cbrt`` and ``gamma``), ``minimum``, ``maximum``, ``arctan2``,
  ``fmod``, ``power``, ``isnan``, …;
  ``math.*`` and ``numpy.*`` functions of the same names and the Python
  builtins ``abs``, ``min``, ``max``, ``pow`` mean the same;
* ``where(c, a, b)``: the eager element-wise select (IR ``if``);
* ``concat_where(condition, a, b)``: the lazy select on an index condition
  (``K < 1``, ``I.interval(0, 1)``, combined with ``& | ~``) → IR ``concat``
  of subsets; never evaluates ``a`` or ``b`` outside their pieces;
* ``neighbor_sum``, ``max_over``, ``min_over`` and ``reduce(f, init)``:
  reductions over a neighbour dimension (absent neighbours are skipped);
* ``cast(x, float32)`` (also ``x.astype(float32)``), ``index(I, x)`` (the
  ``I`` coordinates of ``x``'s domain), ``can_deref(x)`` (the neighbour exists).
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import FrontendError


class Builtin:
    """A function that only has a meaning inside a translated body."""

    def __init__(self, name: str, kind: str, ir_name: str | None = None,
                 arity: int | None = None, doc: str = ""):
        self.name = name
        self.kind = kind
        self.ir_name = ir_name or name
        self.arity = arity
        self.__name__ = name
        self.__doc__ = doc or f"tensorir_dace.{name}: usable inside @function/@program bodies."

    def __call__(self, *args: Any, **kwargs: Any):
        raise FrontendError(f"{self.name}() can only be used inside a @tensorir_dace.function, "
                            "@scan_operator or @program body")

    def __repr__(self) -> str:
        return f"<tensorir_dace builtin {self.name}>"


ELEMENTWISE: dict[str, Builtin] = {}


def _elementwise(name: str, arity: int = 1, ir_name: str | None = None) -> Builtin:
    ELEMENTWISE[name] = Builtin(name, "elementwise", ir_name or name, arity)
    return ELEMENTWISE[name]


sqrt = _elementwise("sqrt")
exp = _elementwise("exp")
log = _elementwise("log")
log10 = _elementwise("log10")
log2 = _elementwise("log2")
sin = _elementwise("sin")
cos = _elementwise("cos")
tan = _elementwise("tan")
arcsin = _elementwise("arcsin")
arccos = _elementwise("arccos")
arctan = _elementwise("arctan")
sinh = _elementwise("sinh")
cosh = _elementwise("cosh")
tanh = _elementwise("tanh")
arcsinh = _elementwise("arcsinh")
arccosh = _elementwise("arccosh")
arctanh = _elementwise("arctanh")
floor = _elementwise("floor")
ceil = _elementwise("ceil")
trunc = _elementwise("trunc")
cbrt = _elementwise("cbrt")
gamma = _elementwise("gamma")
isfinite = _elementwise("isfinite")
isnan = _elementwise("isnan")
isinf = _elementwise("isinf")
minimum = _elementwise("minimum", 2)
maximum = _elementwise("maximum", 2)
arctan2 = _elementwise("arctan2", 2)
fmod = _elementwise("fmod", 2)
power = _elementwise("power", 2)
abs = _elementwise("abs")   # the Tensor IR builtin (shadows Python's here)
absolute = abs
negative = _elementwise("negative", 1, "neg")

where = Builtin("where", "where", doc="where(c, a, b): element-wise select; both branches "
                "are evaluated on the intersection of the domains (IR `if`).")
concat_where = Builtin("concat_where", "concat_where",
                       doc="concat_where(index_condition, a, b): `a` where the condition "
                           "holds, `b` elsewhere; each is only evaluated on its own piece.")
neighbor_sum = Builtin("neighbor_sum", "neighbor_sum",
                       doc="neighbor_sum(x, axis=V2EDim): sum over a neighbour dimension, "
                           "skipping absent neighbours.")
max_over = Builtin("max_over", "max_over", doc="max_over(x, axis=…): maximum over neighbours.")
min_over = Builtin("min_over", "min_over", doc="min_over(x, axis=…): minimum over neighbours.")
cast = Builtin("cast", "cast", doc="cast(x, float32): convert the element type.")
index = Builtin("index", "index", doc="index(I, x): the I coordinates of x's domain (int64).")
astype = Builtin("astype", "cast", doc="astype(x, float32): convert the element type "
                                       "(element-wise on tuples).")
as_offset = Builtin("as_offset", "as_offset",
                    doc="as_offset(K, off): a shift along K by the integer tensor off: "
                        "x(as_offset(K, off)) is x(K + off).")
broadcast = Builtin("broadcast", "broadcast",
                    doc="broadcast(x, (Cell, K)): x as a value over those dimensions (GT4Py's "
                        "spelling); dimensions x lacks are added where it is combined or "
                        "assigned, as for any operand.")
can_deref = Builtin("can_deref", "can_deref",
                    doc="can_deref(x): whether each neighbour of a shifted tensor exists.")


@dataclass(frozen=True, eq=False)
class ReduceOp:
    """``reduce(f, init, axis=None)``: a reduction over a neighbour dimension.

    ``f(acc, a1, …)`` combines the accumulator with one neighbour's values; the
    result is ``f`` folded over the neighbours, starting at ``init``, skipping
    absent ones.  Apply it to the operands: ``reduce(f, 0.0)(x(V2E), w)``.
    """

    fn: Any
    init: Any
    axis: Any = None
    node: Any = None        # the lambda's AST node, when written inline
    owner: Any = None       # the translator that owns that lambda

    def __call__(self, *args: Any, **kwargs: Any):
        raise FrontendError("a reduce(…) can only be applied inside a "
                            "@tensorir_dace.function or @program body")


def reduce(fn: Any, init: Any, axis: Any = None) -> ReduceOp:
    """``reduce(lambda acc, a: acc + a * a, init=0.0)(x)``: see :class:`ReduceOp`."""
    return ReduceOp(fn, init, axis)


# numpy / math / Python builtins that mean an IR builtin
PYTHON_EQUIVALENTS: dict[Any, str] = {}


def _register() -> None:
    for name in ELEMENTWISE:
        for mod in (np, math):
            f = getattr(mod, name, None)
            if f is not None:
                PYTHON_EQUIVALENTS.setdefault(f, name)
    extra = {math.asin: "arcsin", math.acos: "arccos", math.atan: "arctan",
             math.asinh: "arcsinh", math.acosh: "arccosh", math.atanh: "arctanh",
             math.atan2: "arctan2", math.pow: "power", np.fmax: "maximum",
             np.fmin: "minimum", np.abs: "abs", np.absolute: "abs", np.fabs: "abs",
             math.fabs: "abs", np.negative: "neg", np.where: "where", builtins.abs: "abs",
             builtins.min: "minimum", builtins.max: "maximum", builtins.pow: "power"}
    PYTHON_EQUIVALENTS.update(extra)


_register()

__all__ = ["Builtin", "ReduceOp", "reduce", "where", "concat_where", "neighbor_sum",
           "max_over", "min_over", "cast", "index", "can_deref", "broadcast", *ELEMENTWISE]
