"""Helpers of the type checker: weak literals, skip masks, names in a program."""

from __future__ import annotations

from dataclasses import replace

from .. import intervals as iv
from .. import ir
from ..syntax.printer import format as format_node

ELEMENT_TYPE_NAMES = ir.SCALAR_NAMES + tuple(ir.SCALAR_ALIASES)



def ir_head(e: ir.Expr) -> ir.Expr:
    while isinstance(e, ir.Call):
        e = e.func
    return e


def name_of(e: ir.Expr) -> str:
    return e.name if isinstance(e, ir.Sym) else "the table"


def literal_text(e: ir.Expr) -> str:
    if isinstance(e, ir.Literal):
        if isinstance(e.value, int) and abs(e.value).bit_length() > 200:
            digits = int(abs(e.value).bit_length() * 0.30103) + 1
            return f"{'-' if e.value < 0 else ''}<an integer of about {digits} digits>"
        return repr(e.value)
    return "expression"


def offset_text(e: ir.Expr) -> str:
    """How an offset expression is named in a message: its name, or its text."""
    if isinstance(e, ir.Sym):
        return f"'{e.name}'"
    return f"'{format_node(e)}'"


def is_weak(e: ir.Expr, memo: dict[int, tuple[ir.Expr, bool]] | None = None) -> bool:
    """An expression built only from numeric literals: its type adapts to a partner.

    ``memo`` (by node identity) keeps the checker linear on long operator chains,
    where every level asks about its operands again."""
    if memo is not None:
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
    result = False
    match e:
        case ir.Literal(kind=k):
            result = k != "bool"
        case ir.Call(func=ir.Sym(name=n), args=args) if n in ir.ARITHMETIC or n in \
                ir.MATH_FUNCTIONS:
            result = all(is_weak(a, memo) for a in args)
        case ir.Call(func=ir.Sym(name="if"), args=(_, a, b)):
            result = is_weak(a, memo) and is_weak(b, memo)
        case ir.Call(func=ir.Call(func=ir.Sym(name="shift" | "cartesian_shift")), args=(x,)):
            result = is_weak(x, memo)
        case ir.Call(func=ir.Sym(name="add_dim"), args=(_, _, _, x)):
            result = is_weak(x, memo)       # a number placed along a dimension
        case ir.Call(func=ir.Sym(name="subset"), args=(x, *_)):
            result = is_weak(x, memo)
        case ir.Call(func=ir.Call(func=ir.Sym(name="reduce")), args=args) if args:
            # a reduction of such values (neighbor_sum(where(m, 1, 0)) counting
            # neighbours) adapts as they do: a partner converts its result
            result = all(is_weak(a, memo) for a in args)
    if memo is not None:
        memo[id(e)] = (e, result)
    return result



def shift_mask(d: ir.Dim, dim: str, offset: int) -> ir.Dim:
    """Keep a neighbour mask aligned with its tensor after a Cartesian shift."""
    if d.mask is None or not isinstance(d.mask.type, ir.TensorType) or \
            d.mask.type.dim(dim) is None:
        return d
    t = d.mask.type
    dims = tuple(iv.shifted(x, offset) if x.name == dim else x for x in t.dims)
    head = ir.Call(ir.Sym("cartesian_shift"), (ir.Sym(dim), ir.Literal(offset,
                                                                        type=ir.TensorType(
                                                                            ir.INT64))))
    return replace(d, mask=ir.Call(head, (d.mask,), type=replace(t, dims=dims)))


def substitute_masks(t: ir.TensorType, subst: dict[str, ir.Expr]) -> ir.TensorType:
    """Masks that name lambda parameters are rewritten to the arguments' expressions,
    so they stay meaningful outside the lambda."""
    if not any(d.mask is not None for d in t.dims):
        return t
    return replace(t, dims=tuple(replace(d, mask=_subst_expr(d.mask, subst))
                                 if d.mask is not None else d for d in t.dims))


def _subst_expr(e: ir.Expr, subst: dict[str, ir.Expr]) -> ir.Expr:
    match e:
        case ir.Sym(name=n) if n in subst:
            return subst[n]
        case ir.Call(func=f, args=args):
            return replace(e, func=_subst_expr(f, subst),
                           args=tuple(_subst_expr(a, subst) for a in args))
    return e


def collect_dim_names(p: ir.Program) -> set[str]:
    names: set[str] = set()

    def add_type(t):
        if isinstance(t, ir.TensorType):
            names.update(d.name for d in t.dims)

    for node in ir.walk(p):
        if isinstance(node, ir.Param):
            add_type(node.type)
        elif isinstance(node, ir.DimInterval):
            names.add(node.name)
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Sym) and \
                node.func.name == "add_dim" and node.args and isinstance(node.args[0], ir.Sym):
            names.add(node.args[0].name)
    for n in list(names):
        if n.startswith(ir.NB_PREFIX) and not n[len(ir.NB_PREFIX):].isdigit():
            names.add(n[len(ir.NB_PREFIX):])
    return names


def size_symbols(p: ir.Program) -> list[str]:
    syms: dict[str, None] = {}
    for node in ir.walk(p):
        if isinstance(node, ir.Param):
            for d in node.type.dims:
                for b in (d.start, d.stop):
                    for s in sorted(b.free_symbols, key=lambda s: s.name):
                        syms[s.name] = None
        elif isinstance(node, ir.DimInterval):
            for b in (node.start, node.stop):
                for s in b.free_symbols:
                    syms[s.name] = None
    return list(syms)
