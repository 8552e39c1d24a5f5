"""What the lowering knows about values: coordinates at a point, arrays, bindings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dace
import sympy
from sympy.printing.c import C99CodePrinter

from .. import ir

DACE_TYPES = {"float64": dace.float64, "float32": dace.float32, "int64": dace.int64,
              "int32": dace.int32, "bool": dace.bool_}
CPP_TYPES = {"float64": "double", "float32": "float", "int64": "long long", "int32": "int",
             "bool": "bool"}


class _IntPrinter(C99CodePrinter):
    """Integer ``Max``/``Min`` (runtime bounds) as conditionals, not float fmax/fmin."""

    def _minmax(self, expr, op: str) -> str:
        args = [self._print(a) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = f"(({out}) {op} ({a}) ? ({out}) : ({a}))"
        return out

    def _print_Max(self, expr) -> str:
        return self._minmax(expr, ">")

    def _print_Min(self, expr) -> str:
        return self._minmax(expr, "<")


_PRINTER = _IntPrinter()


def ccode(expr: sympy.Expr) -> str:
    """An integer SymPy expression as C++ (size symbols are already SDFG names)."""
    expr = sympy.expand(expr)
    if expr.is_Integer:
        return str(int(expr))
    return "(" + _PRINTER.doprint(expr) + ")"


@dataclass(frozen=True)
class Idx:
    """A coordinate along one dimension at the current point: affine in map
    parameters and size symbols (then memlets can name it), or only known at
    run time (an index read from a neighbour table)."""

    code: str
    affine: sympy.Expr | None = None

    @staticmethod
    def of(expr: sympy.Expr) -> Idx:
        return Idx(ccode(expr), sympy.expand(expr))

    def shifted(self, offset: int | sympy.Expr) -> Idx:
        if self.affine is not None:
            return Idx.of(self.affine + offset)
        step = sympy.Integer(offset) if isinstance(offset, int) else offset
        return Idx(f"({self.code} + {ccode(step)})")

    def key(self) -> str:
        return str(self.affine) if self.affine is not None else "rt:" + self.code


@dataclass(frozen=True)
class ArrayInfo:
    """One SDFG array holding a scalar-typed tensor (or one leaf of a tuple)."""

    data: str
    dims: tuple[ir.Dim, ...]      # bounds in SDFG symbol names
    dtype: ir.ScalarType

    @property
    def shape(self) -> tuple[sympy.Expr, ...]:
        return tuple(sympy.Max(0, sympy.expand(d.stop - d.start))
                     if ir.has_runtime(d.start) or ir.has_runtime(d.stop)
                     else sympy.expand(d.stop - d.start) for d in self.dims)

    @property
    def strides(self) -> tuple[sympy.Expr, ...]:
        out, acc = [], sympy.Integer(1)
        for s in reversed(self.shape):
            out.append(acc)
            acc = sympy.expand(acc * s)
        return tuple(reversed(out))

    def full_subset(self) -> str:
        return ", ".join(f"{d.start}:{d.stop}" for d in self.dims) if self.dims else "0"


Leaves = ArrayInfo | tuple    # nested like the element type


@dataclass(frozen=True)
class Stored:
    """A tensor held in SDFG arrays (structure of arrays for tuples)."""

    type: ir.TensorType
    leaves: Any


@dataclass(frozen=True)
class ScalarData:
    """A scalar program parameter: an SDFG scalar container."""

    data: str
    dtype: ir.ScalarType


@dataclass(frozen=True)
class SymbolValue:
    """A value that is an SDFG symbol: a size symbol or a loop variable."""

    name: str


@dataclass(frozen=True)
class Deferred:
    """A lambda parameter bound to its argument expression, evaluated lazily at
    the point of use (``extra_env`` pins e.g. the neighbour index in reduce)."""

    expr: ir.Expr
    scope: CScope
    extra_env: tuple = ()
    may_materialize: bool = True
    # An applied lambda's parameter whose argument can be absent beyond its
    # masks: ``can_deref`` and ``reduce`` test the argument's presence.
    may_be_absent: bool = False
    # Computed once into transient arrays at its first read, which later reads
    # read (a parameter read more than once whose argument is costly to repeat).
    shared: bool = False


@dataclass(frozen=True)
class PointValue:
    """A C++ value valid only at the current point (reduce accumulator, scan state)."""

    value: Any
    name: str


Binding = Stored | ScalarData | SymbolValue | Deferred | PointValue


@dataclass(eq=False)
class CScope:
    bindings: dict[str, Binding] = field(default_factory=dict)
    parent: CScope | None = None

    def lookup(self, name: str) -> Binding | None:
        s: CScope | None = self
        while s is not None:
            if name in s.bindings:
                return s.bindings[name]
            s = s.parent
        return None

    def child(self, bindings: dict[str, Binding]) -> CScope:
        return CScope(dict(bindings), self)


def absent_names(scope: CScope) -> frozenset[str]:
    """The names in scope bound to arguments that can be absent beyond their masks."""
    seen: set[str] = set()
    out: set[str] = set()
    s: CScope | None = scope
    while s is not None:
        for name, b in s.bindings.items():
            if name not in seen:
                seen.add(name)
                if isinstance(b, Deferred) and b.may_be_absent:
                    out.add(name)
        s = s.parent
    return frozenset(out)


def lambda_bindings(lam: ir.Lambda, args, scope: CScope, may_materialize: bool
                    ) -> dict[str, Binding]:
    """An applied lambda's parameters bound to its arguments, each carrying
    whether its argument can be absent (then its presence is the argument's)."""
    absent = absent_names(scope)
    return {p.name: Deferred(a, scope, (), may_materialize, ir.absent_beyond_masks(a, absent))
            for p, a in zip(lam.params, args)}


def leaves_of(value: Any) -> list:
    """Flatten a nested tuple of leaves."""
    if isinstance(value, tuple):
        return [x for v in value for x in leaves_of(v)]
    return [value]


def map_leaves(fn, dtype: ir.ElementType, *values):
    """Apply ``fn(scalar_dtype, *leaf_values)`` leaf-wise over a (tuple) element type."""
    if isinstance(dtype, ir.TupleType):
        return tuple(map_leaves(fn, d, *(v[i] for v in values))
                     for i, d in enumerate(dtype.elements))
    return fn(dtype, *values)
