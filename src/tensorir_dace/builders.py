"""Short constructors for writing Tensor IR by hand (tests, front ends).

    from tensorir_dace import builders as b
    t = b.tensor("float", I=(0, 5), J=(0, 7))
    prog = b.program("copy", [("out", t), ("inp", t)], [b.assign("out", b.sym("inp"))])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import ir


def scalar(name: str) -> ir.ScalarType:
    return ir.ScalarType(name)


def element(spec: Any) -> ir.ElementType:
    """``'float'`` → ScalarType, ``('float', 'int')`` → TupleType (nested allowed)."""
    if isinstance(spec, (ir.ScalarType, ir.TupleType)):
        return spec
    if isinstance(spec, (tuple, list)):
        return ir.TupleType(tuple(element(s) for s in spec))
    return ir.ScalarType(spec)


def dim(name: str, start: Any, stop: Any) -> ir.Dim:
    return ir.Dim(name, ir.as_bound(start), ir.as_bound(stop))


def tensor(dtype: Any, *dims: ir.Dim | tuple, **named: tuple) -> ir.TensorType:
    """A tensor type from Dim objects, ``(name, start, stop)`` tuples or
    keyword ``Name=(start, stop)`` pairs (keyword order is dimension order)."""
    ds = [d if isinstance(d, ir.Dim) else dim(*d) for d in dims]
    ds += [dim(n, *iv) for n, iv in named.items()]
    return ir.TensorType(element(dtype), tuple(ds))


def sym(name: str) -> ir.Sym:
    return ir.Sym(name)


def lit(value: bool | int | float) -> ir.Literal:
    return ir.Literal(value)


def _expr(x: Any) -> ir.Expr:
    if isinstance(x, ir.Expr):
        return x
    if isinstance(x, str):
        return ir.Sym(x)
    if isinstance(x, (bool, int, float)):
        return ir.Literal(x)
    raise TypeError(f"cannot make an expression of {x!r}")


def call(func: Any, *args: Any) -> ir.Call:
    """``call('plus', 'a', 1.0)``: strings become symbols, numbers literals."""
    return ir.Call(_expr(func), tuple(_expr(a) for a in args))


def lam(params: Iterable[tuple[str, ir.TensorType]], body: Any) -> ir.Lambda:
    return ir.Lambda(tuple(ir.Param(n, t) for n, t in params), _expr(body))


def assign(target: Any, value: Any) -> ir.Assign:
    return ir.Assign(_expr(target), _expr(value))


def program(name: str, params: Iterable[tuple[str, ir.TensorType]], body: Iterable[ir.Stmt],
            temporaries: Iterable[tuple[str, ir.TensorType]] = ()) -> ir.Program:
    return ir.Program(name, tuple(ir.Param(n, t) for n, t in params),
                      tuple(ir.Param(n, t) for n, t in temporaries), tuple(body))
