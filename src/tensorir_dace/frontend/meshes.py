"""Front-end spellings of mesh and column constructs, called from the translator:

* data-dependent offsets ``x(K + off)`` and ``x(as_offset(K, off))``;
* sparse-slot selection ``g[C2E2CDim(0)]``;
* typed literal constructors ``float64("1.0")``, ``int32(3)`` and their aliases;
* NamedTuple values (scan states and results) and ``astype`` on tuples;
* reductions over a named neighbour axis of nested partial shifts.

Each function takes the translator ``tr`` (for typing, locations and errors),
so the translator itself only dispatches to them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import ir
from ..lazy import lazy_module
from .annotations import evaluated_annotation
from .connectivities import CartesianOffset
from .dims import Dimension, NeighborDimension, NeighborSlot
from .values import contains_ir, is_ir, is_trivial, project

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

# --------------------------------------------------------------------------- offsets


@dataclass(frozen=True)
class TensorOffset:
    """``K + off``: a shift along ``dim`` by the integer tensor ``offset``."""

    dim: Dimension
    offset: ir.Expr


def source_text(tr, node: ast.AST | None) -> str:
    """How the user wrote ``node`` (for messages)."""
    try:
        return ast.unparse(node) if node is not None else "the offset"
    except Exception:  # noqa: BLE001 - a synthetic node
        return "the offset"


def tensor_offset(tr, dim: Dimension, value: Any, node: ast.AST, value_node: ast.AST | None,
                  negate: bool = False) -> TensorOffset:
    """``dim ± value`` with ``value`` a tensor: checked to be integer."""
    off = tr.to_ir(value, value_node or node)
    t = tr.type_of(off, value_node or node)
    if not (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int):
        what = source_text(tr, value_node)
        raise tr.error(value_node or node,
                       f"the offset '{what}' of the shift along {dim.name} must be an integer "
                       f"tensor (int32 or int64), got {t}; convert it with "
                       f"astype({what}, int32) or write a constant: x({dim.name} + 1)")
    if negate:
        off = ir.Call(ir.Sym("neg", loc=off.loc), (off,), loc=off.loc)
    return TensorOffset(dim, off)


def as_offset(tr, f: Any, args: list, kwargs: dict, node: ast.Call) -> TensorOffset:
    """GT4Py's ``as_offset(K, off)`` (``f`` is the builtin)."""
    dim, off = tr.positional(f, args, kwargs, ("offset", "field"), node)
    if isinstance(dim, CartesianOffset):        # GT4Py's as_offset(Koff, off)
        dim = dim.dim
    if not isinstance(dim, Dimension):
        raise tr.error(node, "as_offset(K, off): the first argument must be the dimension "
                             "to shift along (or a Cartesian FieldOffset such as Koff)")
    value_node = node.args[1] if len(node.args) > 1 else None
    if not contains_ir(off):
        raise tr.error(value_node or node, f"as_offset({dim.name}, …) takes an integer "
                                           f"tensor; for a constant offset write "
                                           f"x({dim.name} + 1)")
    return tensor_offset(tr, dim, off, node, value_node)


def offset_shift(x: ir.Expr, off: TensorOffset, loc) -> ir.Expr:
    """``⟪K, off⟫(x)``."""
    head = ir.Call(ir.Sym("shift", loc=loc), (ir.Sym(off.dim.name, loc=loc), off.offset),
                   loc=loc)
    return ir.Call(head, (x,), loc=loc)


def check_dimension_condition(tr, dim: Dimension, value: Any, node: ast.AST,
                              value_node: ast.AST) -> None:
    """``K == h`` compares coordinates: ``h`` must be a scalar integer."""
    if not is_ir(value):
        return
    t = tr.type_of(value, value_node)
    if t.dims or not (isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int):
        what = source_text(tr, value_node)
        raise tr.error(value_node, f"the condition compares dimension {dim.name} with "
                                   f"'{what}' of type {t}; an index condition needs a scalar "
                                   f"integer (int32 or int64) or a constant such as "
                                   f"{dim.name} == 0")


# --------------------------------------------------------------------------- sparse slots


def select_slot(tr, base: ir.Expr, slot: NeighborSlot, node: ast.AST,
                slot_node: ast.AST) -> ir.Expr:
    """``g[C2E2CDim(k)]``: neighbour slot ``k`` of a sparse tensor."""
    t = tr.type_of(base, node)
    nb = t.highest_neighbor
    name = source_text(tr, getattr(node, "value", None))
    if nb is None:
        raise tr.error(node, f"{name}[{slot!r}] selects a neighbour slot, but {name} has no "
                             f"neighbour dimension ({t})")
    size = sympy.expand(nb.stop - nb.start)
    n = slot.dim.size
    if not 0 <= slot.index < n:
        raise tr.error(slot_node, f"neighbour slot {slot.index} in "
                                  f"'{source_text(tr, slot_node)}' is outside {slot.dim!r}: "
                                  f"its {n} slots run from 0 to {n - 1}")
    if size.is_Integer and int(size) != n:
        raise tr.error(slot_node, f"{name}'s neighbour dimension {nb} has {size} slots, but "
                                  f"{slot.dim!r} has {n}")
    loc = tr.loc(node)
    head = ir.Call(ir.Sym("shift_apply", loc=loc),
                   (ir.Literal(int(nb.start) + slot.index if nb.start.is_Integer
                               else slot.index, loc=loc),), loc=loc)
    return ir.Call(head, (base,), loc=loc)


# --------------------------------------------------------------------------- typed literals


def typed_literal(tr, st: ir.ScalarType, args: list, kwargs: dict, node: ast.Call) -> Any:
    """``float64("1.0")``: a literal whose type does not adapt to its partner
    (``cast(1.0, float64)``); with a tensor argument, a cast."""
    spelled = source_text(tr, node.func)
    if kwargs or len(args) != 1:
        raise tr.error(node, f"{spelled}(value) takes one value: {spelled}(\"1.0\") or "
                             f"{spelled}(1.0)")
    v = args[0]
    if contains_ir(v):
        return tr.cast(v, st, node, node)
    value = literal_value(tr, st, v, spelled, node)
    loc = tr.loc(node)
    return ir.Call(ir.Sym("cast", loc=loc), (ir.Literal(value, loc=loc), ir.Sym(st.name, loc=loc)),
                   loc=loc)


def literal_value(tr, st: ir.ScalarType, v: Any, spelled: str, node: ast.AST):
    example = "True" if st.is_bool else "3" if st.is_int else "1.0"
    bad = tr.error(node, f"{spelled}({v!r}): {v!r} is not a {st} value; write e.g. "
                         f"{spelled}(\"{example}\") or {spelled}({example})")
    if isinstance(v, str):
        text = v.strip()
        if st.is_bool:
            if text not in ("True", "False"):
                raise bad
            return text == "True"
        try:
            v = int(text) if st.is_int else float(text)
        except ValueError:
            raise bad from None
    if isinstance(v, bool) and not st.is_bool:
        raise bad
    try:
        if st.is_bool:
            return bool(v)
        if st.is_int:
            if float(v) != int(v):
                raise bad
            return int(v)
        return float(v)
    except (TypeError, ValueError, OverflowError):
        raise bad from None


# --------------------------------------------------------------------------- tuples


def is_namedtuple_class(f: Any) -> bool:
    return isinstance(f, type) and issubclass(f, tuple) and hasattr(f, "_fields")


def holds_namedtuple(v: Any) -> bool:
    """Whether the (nested) tuple ``v`` is or holds a NamedTuple instance."""
    return isinstance(v, tuple) and (is_namedtuple_class(type(v))
                                     or any(holds_namedtuple(x) for x in v))


def named_value(cls: Any, e: ir.Expr, loc) -> Any:
    """A tuple-typed IR value seen as an instance of the NamedTuple ``cls``
    (attribute access ``state.z_q`` then works); a field annotated with a
    NamedTuple class (a nested state such as ``state.r.activated``) is seen as one
    in turn.  The elements are plain ``tuple_get``s (not pushed into a let's body,
    which would copy the let per element), so the whole is found again."""
    nested = field_classes(cls)

    def get(i: int) -> ir.Expr:
        return ir.Call(ir.Sym("tuple_get", loc=loc), (e, ir.Literal(i, loc=loc)), loc=loc)
    return cls(*(named_value(nested[f], get(i), loc) if f in nested else get(i)
                 for i, f in enumerate(cls._fields)))


def field_classes(cls: Any) -> dict[str, type]:
    """The fields of the NamedTuple ``cls`` annotated with NamedTuple classes."""
    import typing
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an annotation naming something unknown: no nesting
        return {}
    return {f: h for f, h in hints.items() if is_namedtuple_class(h)}


def whole_of_projections(v: tuple) -> ir.Expr | None:
    """``e`` when ``v`` is ``(e[0], e[1], …)`` (a NamedTuple view of ``e``, its
    elements possibly views of ``e[i]`` in turn), so
    that the tuple is not rebuilt element by element (nor ``e`` computed twice)."""
    if not v:
        return None
    whole = None
    for i, x in enumerate(v):
        if isinstance(x, tuple):        # a nested NamedTuple view: (e[i][0], e[i][1], …)
            x = whole_of_projections(x)
        match x:
            case ir.Call(func=ir.Sym(name="tuple_get"), args=(e, ir.Literal(value=k))) \
                    if k == i and (whole is None or e == whole):
                whole = e
            case _:
                return None
    return whole


def compound_whole(v: Any) -> Any:
    """The compound ``e`` that the tuple ``v`` is a view of (``(e[0], e[1], …)``,
    a call's NamedTuple result), so that ``e`` is used once rather than copied
    into each element; ``v`` itself otherwise."""
    if isinstance(v, tuple) and (w := whole_of_projections(v)) is not None \
            and not is_trivial(w):
        return w
    return v


def viewed_as(like: tuple, e: ir.Expr, loc: Any) -> Any:
    """The tuple-typed ``e`` seen with the (named) tuple structure of ``like``."""
    def get(i: int) -> ir.Expr:
        return ir.Call(ir.Sym("tuple_get", loc=loc), (e, ir.Literal(i, loc=loc)), loc=loc)
    return rebuild(like, [viewed_as(x, get(i), loc) if isinstance(x, tuple) else get(i)
                          for i, x in enumerate(like)])


def rebuild(like: tuple, items: list) -> tuple:
    """A tuple of ``items`` of the same (named) tuple class as ``like``."""
    return type(like)(*items) if is_namedtuple_class(type(like)) else tuple(items)


def cast_tuple(tr, x: Any, dtype: Any, node: ast.AST, dnode: ast.AST) -> Any:
    """``astype((a, b), float32)``: a cast of every element, or None when ``x`` is
    not a tuple value."""
    if isinstance(x, tuple):
        return rebuild(x, [tr.cast(v, dtype, node, dnode) for v in x])
    if is_ir(x):
        t = tr.type_of(x, node)
        if isinstance(t.dtype, ir.TupleType):
            loc = tr.loc(node)
            return tuple(tr.cast(project(x, i, loc), dtype, node, dnode)
                         for i in range(len(t.dtype.elements)))
    return None


def namedtuple_params(fn: Any) -> dict[str, type]:
    """The parameters of ``fn`` annotated with a NamedTuple class (``q: Q_scalar``),
    string annotations resolved in the function's module."""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    found = {}
    for p in params:
        try:
            ann = evaluated_annotation(fn, p.annotation)
        except Exception:  # noqa: BLE001 - an unreadable annotation is none
            continue
        if is_namedtuple_class(ann):
            found[p.name] = ann
    return found


def namedtuple_of(fn: Any, init: Any) -> type | None:
    """The NamedTuple class of a scan's state: its init's class or the
    annotation of its first parameter (a string one resolved in the function's
    module, as under ``from __future__ import annotations``)."""
    if is_namedtuple_class(type(init)):
        return type(init)
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
        ann = evaluated_annotation(fn, params[0].annotation) if params else None
    except Exception:  # noqa: BLE001 - no signature, or an unreadable annotation: none
        return None
    return ann if is_namedtuple_class(ann) else None


# --------------------------------------------------------------------------- reductions


def mask_table(nb: ir.Dim) -> str | None:
    """The name of the table a neighbour dimension's mask comes from: the
    innermost operand of its (possibly shifted) mask expression."""
    return ir.table_of_mask(nb.mask) if nb.mask is not None else nb.origin


def reduce_axis_arg(nb: ir.Dim, types: list[ir.TensorType], loc) -> tuple[ir.Expr, ...]:
    """The axis argument of an IR ``reduce`` over ``nb``: none for the highest
    neighbour dimension (the default), else its name."""
    highest = max((d for t in types for d in t.dims if d.neighbor_counter is not None),
                  key=lambda d: d.neighbor_counter or 0)
    return () if highest.name == nb.name else (ir.Sym(nb.name, loc=loc),)


def reduction_axis_by_table(types: list[ir.TensorType], axis: NeighborDimension,
                            table_dims: dict[str, NeighborDimension]) -> ir.Dim | None:
    """The neighbour dimension of ``types`` introduced by a table over ``axis``
    (for nested partial shifts, where it need not be the highest), if unique."""
    hits: dict[str, ir.Dim] = {}
    for t in types:
        for d in t.dims:
            if d.neighbor_counter is None or (d.mask is None and d.origin is None):
                continue
            src = table_dims.get(mask_table(d) or "")
            if src is not None and axis.matches(src):
                hits.setdefault(d.name, d)
    return next(iter(hits.values())) if len(hits) == 1 else None


__all__ = ["TensorOffset", "as_offset", "cast_tuple", "check_dimension_condition",
           "compound_whole",
           "holds_namedtuple", "is_namedtuple_class", "literal_value", "mask_table", "named_value",
           "namedtuple_of", "namedtuple_params", "offset_shift", "rebuild", "reduce_axis_arg",
           "reduction_axis_by_table",
           "select_slot", "tensor_offset", "typed_literal", "whole_of_projections"]
