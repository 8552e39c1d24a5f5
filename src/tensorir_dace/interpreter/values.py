"""Runtime values of the NumPy interpreter and the helpers that align them.

A :class:`Value` is a tensor with concrete dimensions — ``(name, start,
stop)`` triples of Python ints, after the size symbols have been substituted —
and its data: an ``np.ndarray`` whose axes follow ``dims`` (element 0 of an
axis is coordinate ``start``), or, for a tuple element type, a (nested)
Python tuple of such arrays, one per leaf.  Every leaf has exactly the shape
``stop - start`` per dimension; a leaf may be a read-only broadcast view
(``np.broadcast_to``), so values are never written in place.

The one helper everything rests on is :func:`align`: it takes a value and a
target domain (a dims tuple) and returns the value's data sliced to the
target's intervals and transposed into the target's dimension order, with a
length-1 axis for every target dimension the value lacks.  Element-wise
builtins are then plain NumPy ufuncs on aligned arrays, and statement writes
are plain NumPy assignments.  Slicing, transposing and inserting axes are
views: no data is copied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import TensorIRError

#: A concrete dimension: (name, start, stop), half-open.
CDim = tuple[str, int, int]
CDims = tuple[CDim, ...]

__all__ = [
    "CDim",
    "CDims",
    "Argument",
    "Env",
    "InterpreterError",
    "Value",
    "absent_fill",
    "absent_names",
    "align",
    "dims_str",
    "full_like_dims",
    "gather",
    "leaves",
    "make_value",
    "map_leaves",
    "map_leaves2",
    "restrict",
    "shape_of",
]


class InterpreterError(TensorIRError):
    """An inconsistency the type checker should have rejected (an interpreter or
    checker bug), reported instead of a confusing NumPy error."""


def shape_of(dims: CDims) -> tuple[int, ...]:
    return tuple(max(stop - start, 0) for _, start, stop in dims)


def dims_str(dims: CDims) -> str:
    return "{" + ", ".join(f"{n}[{a}:{b}]" for n, a, b in dims) + "}"


# --------------------------------------------------------------------------- leaves


def map_leaves(fn: Callable[[np.ndarray], Any], data: Any) -> Any:
    """Apply ``fn`` to every leaf array of a (nested) tuple, keeping its structure."""
    if isinstance(data, tuple):
        return tuple(map_leaves(fn, d) for d in data)
    return fn(data)


def map_leaves2(fn: Callable[[np.ndarray, np.ndarray], Any], a: Any, b: Any) -> Any:
    """Like :func:`map_leaves` over two values of the same tuple structure."""
    if isinstance(a, tuple):
        return tuple(map_leaves2(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


def leaves(data: Any) -> list[np.ndarray]:
    """The leaf arrays of a value's data, in order."""
    if isinstance(data, tuple):
        out: list[np.ndarray] = []
        for d in data:
            out.extend(leaves(d))
        return out
    return [data]


def absent_fill(dtype: np.dtype) -> Any:
    """The value of an absent neighbour: NaN (floats), the minimum (ints), False."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype.type(np.nan)
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min)
    if dtype.kind == "b":
        return np.False_
    raise InterpreterError(f"no absent-neighbour value for dtype {dtype}")


# --------------------------------------------------------------------------- values


class Value:
    """A tensor value: concrete ``dims`` and ``data`` (array or nested tuple)."""

    __slots__ = ("data", "dims")

    def __init__(self, dims: CDims, data: Any):
        self.dims = dims
        self.data = data

    def dim(self, name: str) -> CDim | None:
        for d in self.dims:
            if d[0] == name:
                return d
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d[0] for d in self.dims)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Value({dims_str(self.dims)}, {self.data!r})"


class Argument(Value):
    """An applied lambda's parameter whose argument can be absent beyond its
    masks: the argument's value, and where it is ``present`` (over the
    argument's domain), which ``can_deref`` and ``reduce`` read through the
    parameter."""

    __slots__ = ("present",)

    def __init__(self, value: Value, present: Value):
        super().__init__(value.dims, value.data)
        self.present = present


#: The values of the names in scope while evaluating.
Env = dict[str, Value]


def absent_names(env: Env) -> frozenset[str]:
    """The parameters in scope that carry an argument's presence."""
    return frozenset(n for n, v in env.items() if isinstance(v, Argument))


def make_value(dims: CDims, data: Any) -> Value:
    """A value whose leaves are brought to the full shape of ``dims`` (a
    broadcast view where a leaf has length-1 or missing axes)."""
    shape = shape_of(dims)

    def fix(a: Any) -> np.ndarray:
        a = np.asarray(a)
        if a.shape != shape:
            a = np.broadcast_to(a, shape)
        return a

    return Value(dims, map_leaves(fix, data))


def full_like_dims(dims: CDims, scalar: Any) -> Any:
    """A scalar value's data broadcast (as a view) over ``dims``."""
    shape = shape_of(dims)
    return map_leaves(lambda a: np.broadcast_to(np.asarray(a), shape), scalar)


# --------------------------------------------------------------------------- alignment


def _align_leaf(arr: np.ndarray, slices: tuple, perm: list[int] | None,
                expand: tuple | None) -> np.ndarray:
    arr = arr[slices]
    if perm is not None:
        arr = arr.transpose(perm)
    if expand is not None:
        arr = arr[expand]
    return arr


def align(value: Value, target: Sequence[CDim], rename: dict[str, str] | None = None,
          what: str = "a value") -> Any:
    """``value``'s data sliced to ``target``'s intervals and ordered like it.

    Every dimension of ``value`` must occur in ``target`` with an interval the
    value covers; a target dimension the value lacks becomes a length-1 axis
    (so NumPy broadcasting fills it).  ``rename`` maps dimension names of the
    value to names of the target (used to view a neighbour table's
    ``_NB_<Src>`` axis as a tensor's ``_NB_<n>`` axis).  All views, no copies.
    """
    src = value.dims
    if rename:
        src = tuple((rename.get(n, n), a, b) for n, a, b in src)
    if src == tuple(target):
        return value.data
    pos = {d[0]: i for i, d in enumerate(src)}
    tnames = {d[0] for d in target}
    for n, _, _ in src:
        if n not in tnames:
            raise InterpreterError(f"cannot align {what} {dims_str(src)} to "
                                   f"{dims_str(tuple(target))}: dimension {n} is not in "
                                   "the target")
    slices = [slice(None)] * len(src)
    order: list[int] = []
    for n, ts, te in target:
        i = pos.get(n)
        if i is None:
            continue
        _, s, e = src[i]
        if te > ts and (ts < s or te > e):
            raise InterpreterError(f"cannot align {what} {dims_str(src)} to "
                                   f"{dims_str(tuple(target))}: {n}[{s}:{e}] does not cover "
                                   f"{n}[{ts}:{te}]")
        if te <= ts:
            slices[i] = slice(0, 0)
        elif ts != s or te != e:
            slices[i] = slice(ts - s, te - s)
        order.append(i)
    perm = order if order != sorted(order) else None
    expand = None
    if len(order) != len(target):
        expand = tuple(slice(None) if n in pos else np.newaxis for n, _, _ in target)
    slc = tuple(slices)
    return map_leaves(lambda a: _align_leaf(a, slc, perm, expand), value.data)


def restrict(value: Value, target: CDims, what: str = "a value") -> Value:
    """``value`` seen on exactly ``target`` (full-shape leaves, views)."""
    return make_value(tuple(target), align(value, target, what=what))


# --------------------------------------------------------------------------- gathers


def gather(value: Value, src: str, coords: np.ndarray, coord_dims: CDims,
           fill: Callable[[np.dtype], Any] = absent_fill) -> Value:
    """Replace dimension ``src`` of ``value`` by ``coord_dims``, reading through
    a neighbour table: ``result[c…, rest] = value[src = coords[c…], rest]``.

    ``coords`` holds coordinates of ``src`` (shape ``shape_of(coord_dims)``).
    A negative coordinate means "no neighbour"; a coordinate outside the
    value's interval is treated the same way, so that nothing is ever read out
    of range.  Where there is no neighbour the result is ``fill(dtype)``.
    If ``value`` also has a dimension of ``coord_dims`` (other than ``src``),
    the result takes the diagonal: ``result[d, …] = value[src = coords[d, …],
    d, …]`` over the intersection of the two intervals.
    A ``value`` without dimension ``src`` is constant along it: every
    non-negative coordinate reads it.
    """
    if src not in value.names:
        value = Value(((src, 0, 1),) + value.dims,
                      map_leaves(lambda a: np.asarray(a)[np.newaxis], value.data))
        coords = np.where(coords >= 0, 0, -1)
    axis = value.names.index(src)
    _, s0, s1 = value.dims[axis]
    n = s1 - s0
    rel = coords - s0
    valid = (coords >= 0) & (rel >= 0) & (rel < n)
    all_valid = bool(valid.all())
    if n == 0:
        safe = np.zeros_like(rel)
    else:
        safe = rel if all_valid else np.where(valid, rel, 0)
    nd = len(value.dims)
    vshape = (1,) * axis + valid.shape + (1,) * (nd - axis - 1)
    vb = valid.reshape(vshape)

    def leaf(a: np.ndarray) -> np.ndarray:
        if n == 0:
            shape = a.shape[:axis] + safe.shape + a.shape[axis + 1:]
            return np.full(shape, fill(a.dtype), dtype=a.dtype)
        g = np.take(a, safe, axis=axis)
        if not all_valid:
            g = np.where(vb, g, fill(a.dtype))
        return g

    data = map_leaves(leaf, value.data)
    dims = value.dims[:axis] + tuple(coord_dims) + value.dims[axis + 1:]
    # A dimension that now occurs twice (the operand already had the
    # destination dimension): keep the diagonal.
    names = [d[0] for d in dims]
    for name in {x for x in names if names.count(x) > 1}:
        new = axis + [d[0] for d in coord_dims].index(name)
        old = next(i for i, x in enumerate(names) if x == name and i != new)
        lo = max(dims[new][1], dims[old][1])
        hi = max(min(dims[new][2], dims[old][2]), lo)

        def diag(a: np.ndarray, new=new, old=old, lo=lo, hi=hi, dims=dims) -> np.ndarray:
            idx = [slice(None)] * a.ndim
            idx[new] = slice(lo - dims[new][1], hi - dims[new][1])
            idx[old] = slice(lo - dims[old][1], hi - dims[old][1])
            d = np.diagonal(a[tuple(idx)], axis1=new, axis2=old)  # diagonal goes last
            target = new if new < old else new - 1
            return np.moveaxis(d, -1, target)

        data = map_leaves(diag, data)
        nd_ = list(dims)
        nd_[new] = (name, lo, hi)
        del nd_[old]
        dims = tuple(nd_)
        names = [d[0] for d in dims]
    return Value(dims, data)
