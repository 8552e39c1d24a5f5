"""The calling convention of a lowered program, as plain data.

The lowering produces a :class:`CallSignature`: which SDFG data container each
program parameter (leaf of a tuple-typed parameter) feeds, which SDFG symbol
each size symbol is, and which size orders a call must satisfy.  The runtime
consumes it to call the compiled SDFG.  It depends on nothing but :mod:`.ir`,
so the runtime can use it without the lowering, and it converts to and from
JSON-compatible data (``to_json``/``from_json``) to be stored next to a
compiled binary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import ir
from .lazy import lazy_module

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

__all__ = ["ArgBinding", "CallSignature"]


@dataclass(frozen=True)
class ArgBinding:
    """One SDFG data container fed by one program parameter leaf."""

    param: str               # program parameter name
    path: tuple[int, ...]    # index path into a tuple-typed value ((), (0,), (1, 0), ...)
    data: str                # SDFG array/scalar name (mangled)

    def to_json(self) -> dict[str, Any]:
        return {"param": self.param, "path": list(self.path), "data": self.data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArgBinding:
        return cls(data["param"], tuple(int(k) for k in data["path"]), data["data"])


@dataclass(frozen=True)
class CallSignature:
    """How a program's parameters map onto a compiled SDFG's arguments."""

    params: tuple[ir.Param, ...]          # the program parameters (types with sympy bounds)
    bindings: tuple[ArgBinding, ...]
    symbols: dict[str, str]               # size-symbol name -> SDFG symbol name (may be the same)
    constraints: tuple[ir.SizeConstraint, ...] = ()   # size orders checked per call

    def to_json(self) -> dict[str, Any]:
        """The signature as JSON-compatible data (source locations are dropped)."""
        return {
            "params": [{"name": p.name, "type": _type_json(p.type)} for p in self.params],
            "bindings": [b.to_json() for b in self.bindings],
            "symbols": dict(self.symbols),
            "constraints": [{"lower": str(c.lower), "upper": str(c.upper), "reason": c.reason}
                            for c in self.constraints],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CallSignature:
        return cls(
            params=tuple(ir.Param(p["name"], _type_from_json(p["type"]))
                         for p in data["params"]),
            bindings=tuple(ArgBinding.from_json(b) for b in data["bindings"]),
            symbols=dict(data["symbols"]),
            constraints=tuple(ir.SizeConstraint(ir.as_bound(c["lower"]),
                                                ir.as_bound(c["upper"]), c["reason"])
                              for c in data["constraints"]),
        )


def _element_json(t: ir.ElementType) -> Any:
    if isinstance(t, ir.TupleType):
        return [_element_json(e) for e in t.elements]
    return t.name


def _element_from_json(data: Any) -> ir.ElementType:
    if isinstance(data, list):
        return ir.TupleType(tuple(_element_from_json(e) for e in data))
    return ir.ScalarType(data)


def _bound_json(b: sympy.Expr) -> int | str:
    return int(b) if b.is_Integer else str(b)


def _type_json(t: ir.TensorType) -> dict[str, Any]:
    return {"dtype": _element_json(t.dtype),
            "dims": [[d.name, _bound_json(d.start), _bound_json(d.stop)] for d in t.dims]}


def _type_from_json(data: dict[str, Any]) -> ir.TensorType:
    return ir.TensorType(_element_from_json(data["dtype"]),
                         tuple(ir.Dim(name, start, stop) for name, start, stop in data["dims"]))
