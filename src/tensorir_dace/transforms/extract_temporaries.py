"""IR pass: store repeated expensive subexpressions in temporaries.

The transformation of the design document's "Storing Intermediate Results
into Temporary Buffers" section: in

    out ← (λ(x: tensor<float, I[0:100]>) → ⟪I, 1⟫(cos(x)) + ⟪I, -1⟫(cos(x)))(inp)

``cos(x)`` is evaluated twice per point (at two shifted points), so the
pass adds a temporary over the subexpression's typed domain, computes it in
a statement of its own, and reads it where the expression was:

    t_cos ← cos(inp)
    out ← ⟪I, 1⟫(t_cos) + ⟪I, -1⟫(t_cos)

Lambda applications whose arguments are names are inlined first, so that a
subexpression of a lambda's parameters can be seen as one of the program's
tensors.  Only element-wise builtin calls that contain a math function,
``power``, ``reduce`` or ``scan`` are extracted (cheap arithmetic is left to
the compiler), and only when they depend on nothing but program-level
tensors.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from .. import ir
from ..typing import check

EXPENSIVE = frozenset(ir.MATH_FUNCTIONS + ("power", "arctan2")) - {"neg", "abs"}
NAME = "extract_temporaries"


def extract_temporaries(program: ir.Program) -> ir.Program:
    """The program with repeated expensive subexpressions in temporaries."""
    program = check(program)
    names = {p.name for p in program.params + program.temporaries}
    temporaries = list(program.temporaries)
    body: list[ir.Stmt] = []
    for stmt in program.body:
        if not isinstance(stmt, ir.Assign):
            body.append(stmt)
            continue
        value = _inline_name_lambdas(stmt.value)
        while True:
            typed = _typed_value(program, temporaries, body, replace(stmt, value=value))
            candidate = _repeated(typed, names)
            if candidate is None:
                break
            tmp_name = _fresh(names, "t_" + _head(candidate))
            temporaries.append(ir.Param(tmp_name, _declared(candidate.type), loc=stmt.loc))
            body.append(ir.Assign(ir.Sym(tmp_name, loc=stmt.loc), candidate,
                                  loc=stmt.loc))
            value = _replace(value, candidate, ir.Sym(tmp_name, loc=stmt.loc))
        body.append(replace(stmt, value=value))
    return replace(program, temporaries=tuple(temporaries), body=tuple(body))


def _typed_value(program, temporaries, body, stmt) -> ir.Expr:
    """The statement's value typed in the program as it stands."""
    trial = replace(program, temporaries=tuple(temporaries), body=tuple(body) + (stmt,))
    stmt = check(trial).body[-1]
    assert isinstance(stmt, ir.Assign)
    return stmt.value


def _inline_name_lambdas(e: ir.Expr) -> ir.Expr:
    """``(λ(p) → body)(a)`` with names as arguments → ``body[p := a]``."""
    match e:
        case ir.Call(func=ir.Lambda(params=params, body=body), args=args) if all(
                isinstance(a, ir.Sym) for a in args) and len(args) == len(params):
            subst = {p.name: a for p, a in zip(params, args)}
            return _inline_name_lambdas(_substitute(body, subst))
        case ir.Call(func=func, args=args):
            func = func if isinstance(func, ir.Lambda) else _inline_name_lambdas(func)
            return replace(e, func=func, args=tuple(_inline_name_lambdas(a) for a in args))
    return e


def _substitute(e: ir.Expr, subst: dict[str, ir.Expr]) -> ir.Expr:
    match e:
        case ir.Sym(name=n) if n in subst:
            return subst[n]
        case ir.Lambda(params=params, body=body):
            inner = {k: v for k, v in subst.items() if k not in {p.name for p in params}}
            return replace(e, body=_substitute(body, inner))
        case ir.Call(func=func, args=args):
            return replace(e, func=_substitute(func, subst),
                           args=tuple(_substitute(a, subst) for a in args))
    return e


def _head(e: ir.Expr) -> str:
    while isinstance(e, ir.Call):
        e = e.func
    return e.name if isinstance(e, ir.Sym) else "expr"


def _expensive(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.Call) and _head(n) in EXPENSIVE | {"reduce", "scan"}
               for n in ir.walk(e))


def _outside_lambdas(e: ir.Expr):
    """Subexpressions not under a lambda (whose parameters would be free in them)."""
    yield e
    if isinstance(e, ir.Call):
        if not isinstance(e.func, ir.Lambda):
            yield from _outside_lambdas(e.func)
        for a in e.args:
            yield from _outside_lambdas(a)


def _repeated(value: ir.Expr, names: set[str]) -> ir.Expr | None:
    """The largest expensive tensor-valued call occurring twice or more."""
    calls = [n for n in _outside_lambdas(value)
             if isinstance(n, ir.Call) and isinstance(n.type, ir.TensorType) and n.type.dims
             and _expensive(n) and _free_tensor_names(n) <= names]
    counts = Counter(calls)
    repeated = [c for c in calls if counts[c] > 1]
    if not repeated:
        return None
    return max(repeated, key=lambda c: sum(1 for _ in ir.walk(c)))


def _free_tensor_names(e: ir.Expr, bound: frozenset[str] = frozenset()) -> set[str]:
    """Names of tensors an expression reads that it does not bind itself.  (Static
    arguments — dimensions, element types — carry no type after checking.)"""
    match e:
        case ir.Sym(name=n):
            return {n} if isinstance(e.type, ir.TensorType) and n not in bound else set()
        case ir.Lambda(params=params, body=body):
            return _free_tensor_names(body, bound | {p.name for p in params})
        case ir.Call(func=func, args=args):
            out = _free_tensor_names(func, bound)
            for a in args:
                out |= _free_tensor_names(a, bound)
            return out
    return set()


def _declared(t: ir.TensorType) -> ir.TensorType:
    """A type as it can be written (no inferred neighbour masks)."""
    return ir.TensorType(t.dtype, tuple(replace(d, mask=None) for d in t.dims))


def _replace(e: ir.Expr, old: ir.Expr, new: ir.Expr) -> ir.Expr:
    if e == old:
        return new
    match e:
        case ir.Call(func=func, args=args):
            func = func if isinstance(func, ir.Lambda) else _replace(func, old, new)
            return replace(e, func=func, args=tuple(_replace(a, old, new) for a in args))
    return e


def _fresh(names: set[str], base: str) -> str:
    name, n = base, 0
    while name in names or ir.canonical_builtin(name) is not None:
        n += 1
        name = f"{base}{n}"
    names.add(name)
    return name
