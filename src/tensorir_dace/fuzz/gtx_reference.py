"""The NumPy reference of the GT4Py-spelled random programs (:mod:`.gtx_programs`).

Every generated field operator is written a second time as a plain Python
function over :class:`V` values: NumPy arrays over the whole mesh (a
dimension's full length, the vertical one a level longer than the full-level
fields) with a mask of the points that are defined.  A point is undefined
where a read falls outside its field (a ``Koff`` shift past the first or last
level, a full-level field read at the extra level) or where a scan was not
run; a neighbour that a table marks ``-1`` is absent, not undefined: the
reductions over a local dimension skip it.  The generator chooses domains
whose points are all defined; :func:`write` reports any that is not.

Dimensions are named by one letter: ``C``, ``E``, ``V`` (horizontal), ``K``
(vertical), ``KH`` (the half levels, GT4Py's ``KHalf``), and local dimensions
by their table's name (``C2E``).  A value's axes follow the order horizontal,
vertical, local.  Both vertical axes hold :func:`levels` points: the
``N_K + 1`` half levels, and the ``N_K`` full levels padded by one undefined,
then :data:`ABOVE` more (undefined in fields, defined in broadcasts).
Half level ``h`` lies at height ``h``, full level ``k`` at ``k + 1/2`` (half
level ``h`` is the top face of full level ``h``): :func:`stagger` reads across
by that rule."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

HORIZONTAL = ("C", "E", "V")
# table name: (source dimension, target dimension)
TABLES = {"E2C": ("C", "E"), "C2E": ("E", "C"), "C2E2C": ("C", "C"), "V2E": ("E", "V"),
          "E2V": ("V", "E")}
SIZE_NAMES = {"C": "N_C", "E": "N_E", "V": "N_V"}
VERTICAL = ("K", "KH")
# the height of level 0 of each vertical axis
HEIGHT = {"K": 0.5, "KH": 0.0}


def _rank(d: str) -> int:
    return 0 if d in HORIZONTAL else 1 if d in VERTICAL else 2


def _vertical(dims: tuple[str, ...]) -> str | None:
    return next((d for d in dims if d in VERTICAL), None)


class V:
    """A value: ``a`` (axes named by ``dims``, length 1 where broadcast), ``d``
    its defined points, ``p`` the present neighbours (None: all)."""

    __slots__ = ("a", "d", "dims", "p")

    def __init__(self, a: Any, d: Any = True, dims: tuple[str, ...] = (), p: Any = None):
        self.a = np.asarray(a)
        self.d = np.asarray(d, bool)
        self.dims = tuple(dims)
        self.p = None if p is None else np.asarray(p, bool)

    def expand(self, dims: tuple[str, ...]) -> tuple[Any, Any, Any]:
        """(a, d, p) with axes ``dims`` (a superset of this value's)."""
        def fit(x: Any) -> Any:
            if x is None:
                return None
            x = np.asarray(x)
            if x.ndim == 0:
                return x.reshape((1,) * len(dims))
            return x.reshape([x.shape[self.dims.index(n)] if n in self.dims else 1 for n in dims])
        return fit(self.a), fit(self.d), fit(self.p)

    # arithmetic ------------------------------------------------------------
    def _op(self, other: Any, fn: Callable[[Any, Any], Any]) -> V:
        return apply(fn, self, other)

    def _rop(self, other: Any, fn: Callable[[Any, Any], Any]) -> V:
        return apply(fn, other, self)

    def __add__(self, o): return self._op(o, np.add)
    def __radd__(self, o): return self._rop(o, np.add)
    def __sub__(self, o): return self._op(o, np.subtract)
    def __rsub__(self, o): return self._rop(o, np.subtract)
    def __mul__(self, o): return self._op(o, np.multiply)
    def __rmul__(self, o): return self._rop(o, np.multiply)
    def __truediv__(self, o): return self._op(o, np.divide)
    def __rtruediv__(self, o): return self._rop(o, np.divide)
    def __pow__(self, o): return self._op(o, np.power)
    def __lt__(self, o): return self._op(o, np.less)
    def __le__(self, o): return self._op(o, np.less_equal)
    def __gt__(self, o): return self._op(o, np.greater)
    def __ge__(self, o): return self._op(o, np.greater_equal)
    def __eq__(self, o): return self._op(o, np.equal)
    def __ne__(self, o): return self._op(o, np.not_equal)
    def __and__(self, o): return self._op(o, np.logical_and)
    def __rand__(self, o): return self._rop(o, np.logical_and)
    def __or__(self, o): return self._op(o, np.logical_or)
    def __ror__(self, o): return self._rop(o, np.logical_or)
    def __invert__(self): return apply(np.logical_not, self)
    def __neg__(self): return apply(np.negative, self)
    def __abs__(self): return apply(np.abs, self)

    __hash__ = None  # type: ignore[assignment]


def _v(x: Any) -> V:
    return x if isinstance(x, V) else V(x)


def apply(fn: Callable, *xs: Any) -> V:
    """``fn`` pointwise over ``xs`` (values or numbers), dimensions united."""
    vs = [_v(x) for x in xs]
    dims = tuple(sorted({n for v in vs for n in v.dims}, key=_rank))
    parts = [v.expand(dims) for v in vs]
    with np.errstate(all="ignore"):
        a = fn(*(p[0] for p in parts))
    d = functools.reduce(np.logical_and, [p[1] for p in parts])
    ps = [p[2] for p in parts if p[2] is not None]
    p = functools.reduce(np.logical_and, ps) if ps else None
    return V(a, d, dims, p)


def sin(x): return apply(np.sin, x)
def cos(x): return apply(np.cos, x)
def tanh(x): return apply(np.tanh, x)
def sqrt(x): return apply(np.sqrt, x)
def floor(x): return apply(np.floor, x)
def fabs(x): return apply(np.abs, x)
def maximum(x, y): return apply(np.maximum, x, y)
def minimum(x, y): return apply(np.minimum, x, y)


def where(c: Any, x: Any, y: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(where(c, a, b) for a, b in zip(x, y))
    return apply(np.where, c, x, y)


def select(c: V, x: Any, y: Any) -> Any:
    """``concat_where``'s choice: defined where the chosen branch is."""
    if isinstance(x, tuple):
        return tuple(select(c, a, b) for a, b in zip(x, y))
    r = apply(np.where, c, x, y)
    dims = r.dims
    cd, xd, yd = (_v(v).expand(dims)[1] for v in (c, x, y))
    ca = c.expand(dims)[0]
    return V(r.a, np.where(ca, xd, yd) & cd, dims, r.p)


def astype(x: Any, dtype: str) -> Any:
    if isinstance(x, tuple):
        return tuple(astype(e, dtype) for e in x)
    return apply(lambda a: np.asarray(a).astype(dtype), x)


def broadcast(x: Any, dims: tuple[str, ...]) -> V:
    v = _v(x)
    a, d, p = v.expand(dims)
    return V(a, d, dims, p)


# fields, shifts, reductions ----------------------------------------------------
class Mesh:
    """The sizes and tables of one run (``set_mesh``)."""

    sizes: dict[str, int] = {}
    tables: dict[str, np.ndarray] = {}


def set_mesh(sizes: dict[str, int], tables: dict[str, Any]) -> None:
    Mesh.sizes = sizes
    Mesh.tables = {k: np.asarray(v) for k, v in tables.items() if k in TABLES}


#: Levels below level 0 and past the half levels that values hold: a value
#: constant along the vertical (a broadcast, or a ``concat_where`` piece of
#: one) has no end, and a shifted field is defined past its own levels, so a
#: shift may read there.  Level ``k`` is at index ``k + BELOW`` of an axis.
BELOW = 4
ABOVE = 4


def levels() -> int:
    """The length of the vertical axis of values: the half levels and
    :data:`BELOW` and :data:`ABOVE` more."""
    return BELOW + Mesh.sizes["N_K"] + 1 + ABOVE


def field(a: Any, dims: tuple[str, ...]) -> V:
    """An argument array as a value: its vertical axis padded to :func:`levels`,
    the padding undefined."""
    a = np.asarray(a)
    vert = _vertical(dims)
    if vert is None:
        return V(a, np.ones(a.shape, bool), dims)
    k = dims.index(vert)
    n = a.shape[k]
    shape = list(a.shape)
    shape[k] = levels()
    full, d = np.zeros(shape, a.dtype), np.zeros(shape, bool)
    index = tuple(slice(BELOW, BELOW + n) if i == k else slice(None) for i in range(a.ndim))
    full[index], d[index] = a, True
    return V(full, d, dims)


def koff(x: Any, o: int, to: str | None = None) -> Any:
    """``x(Koff[o])``: the value at k + o (on the vertical axis ``to``: the
    value's own unless given)."""
    if isinstance(x, tuple):
        return tuple(koff(e, o, to) for e in x)
    x = _v(x)
    vert = _vertical(x.dims)
    if vert is None:
        return x
    if to is not None and to != vert:
        x = V(x.a, x.d, tuple(to if n == vert else n for n in x.dims), x.p)
    k = x.dims.index(to or vert)
    n = levels()
    a = np.zeros_like(np.broadcast_to(x.a, x.a.shape))
    shape = list(x.a.shape)
    d = np.zeros(shape, bool)
    src = np.broadcast_to(x.d, shape)

    def sl(lo: int, hi: int) -> tuple:
        return tuple(slice(lo, hi) if i == k else slice(None) for i in range(len(shape)))
    if x.a.shape[k] == 1:       # broadcast along K: the same everywhere
        return x
    lo, hi = max(0, -o), min(n, n - o)
    if lo < hi:
        a[sl(lo, hi)] = x.a[sl(lo + o, hi + o)]
        d[sl(lo, hi)] = src[sl(lo + o, hi + o)]
    return V(a, d, x.dims, x.p)


def stagger(x: Any, offset: float, to: str) -> Any:
    """``x(KHalf + offset)`` of a full-level ``x`` (``to`` is ``"KH"``) or
    ``y(K + offset)`` of a half-level ``y`` (``to`` is ``"K"``): at a point of
    ``to``, the level of ``x`` at the point's height plus ``offset``."""
    v = _v(x)
    src = _vertical(v.dims)
    assert src is not None and src != to, (src, to)
    # the point i of ``to`` lies at HEIGHT[to] + i; level j of src at HEIGHT[src] + j
    shift = HEIGHT[to] + offset - HEIGHT[src]
    assert shift == int(shift), f"{offset} does not land on a level"
    return koff(v, int(shift), to)


def _gather(x: V, index: np.ndarray, target: str, local: str | None) -> V:
    """``x`` read at the source rows ``index`` (target rows × neighbours)."""
    h = next(n for n in x.dims if n in HORIZONTAL)
    axis = x.dims.index(h)
    safe = np.where(index >= 0, index, 0)
    a = np.take(np.broadcast_to(x.a, x.a.shape), safe, axis=axis) if x.a.shape[axis] > 1 \
        else np.take(x.a, np.zeros_like(safe), axis=axis)
    d = np.take(np.broadcast_to(x.d, x.a.shape), safe if x.a.shape[axis] > 1 else
                np.zeros_like(safe), axis=axis)
    dims = list(x.dims)
    dims[axis] = target
    if local is None:
        return V(a, d, tuple(dims))
    # the neighbour axis follows the target's: move it last
    a, d = np.moveaxis(a, axis + 1, -1), np.moveaxis(d, axis + 1, -1)
    dims.append(local)
    p = (index >= 0).reshape([index.shape[0] if n == target else index.shape[1] if n == local
                              else 1 for n in dims])
    return V(a, d, tuple(dims), p)


def slot(x: Any, table: str, j: int) -> V:
    """``x(T[j])``: the j-th neighbour (tables read this way have every one)."""
    x = _v(x)
    index = Mesh.tables[table][:, j]
    assert (index >= 0).all(), f"{table} has absent neighbours"
    return _gather(x, index, TABLES[table][1], None)


def nb(x: Any, table: str) -> V:
    """``x(T)``: every neighbour, along the local dimension ``table``."""
    return _gather(_v(x), Mesh.tables[table], TABLES[table][1], table)


def _reduce(x: V, fn: Callable, neutral: float) -> V:
    local = x.dims[-1]
    shape = np.broadcast_shapes(x.a.shape, x.d.shape, () if x.p is None else x.p.shape)
    a, d = np.broadcast_to(x.a, shape), np.broadcast_to(x.d, shape)
    p = np.ones(shape, bool) if x.p is None else np.broadcast_to(x.p, shape)
    if a.dtype.kind in "iu" and np.isinf(neutral):
        info = np.iinfo(a.dtype)
        neutral = info.min if neutral < 0 else info.max
    with np.errstate(all="ignore"):
        r = fn(np.where(p, a, np.asarray(neutral, a.dtype)), axis=-1)
    assert local not in HORIZONTAL and local not in VERTICAL
    return V(r, np.all(d | ~p, axis=-1), x.dims[:-1])


def nsum(x: Any) -> V: return _reduce(_v(x), np.sum, 0)
def nmax(x: Any) -> V: return _reduce(_v(x), np.max, -np.inf)
def nmin(x: Any) -> V: return _reduce(_v(x), np.min, np.inf)


# concat_where and scans ----------------------------------------------------------
Dom = tuple[int, int] | None


def _levels_mask(lo: int | None, hi: int | None, vert: str = "K") -> V:
    k = np.arange(levels()) - BELOW
    m = np.ones(levels(), bool)
    if lo is not None:
        m &= k >= lo
    if hi is not None:
        m &= k < hi
    return V(m, True, (vert,))


def cw_k(dom: Dom, lo: int | None, hi: int | None, x: Callable, y: Callable,
         vert: str = "K") -> Any:
    """``concat_where(lo <= KDim < hi, x, y)`` (``KHalfDim`` where ``vert`` is
    ``"KH"``): each branch evaluated on its part of ``dom`` (None where it is
    not one range: a scan there is a generator bug)."""
    if dom is None:
        xd: Dom = None
        yd: Dom = None
    else:
        d0, d1 = dom
        xd = (max(d0, lo if lo is not None else d0), min(d1, hi if hi is not None else d1))
        if lo is not None and hi is not None and lo > d0 and hi < d1:
            yd = None
        elif lo is not None and lo > d0:
            yd = (d0, min(d1, lo))
        elif hi is not None:
            yd = (max(d0, hi), d1)
        else:
            yd = (d0, d0)
    return select(_levels_mask(lo, hi, vert), x(xd), y(yd))


def cw_h(dim: str, lo: int | None, hi: int | None, x: Any, y: Any) -> Any:
    """``concat_where(lo <= H < hi, x, y)`` on the horizontal dimension ``dim``."""
    n = Mesh.sizes[SIZE_NAMES[dim]]
    i = np.arange(n)
    m = np.ones(n, bool)
    if lo is not None:
        m &= i >= lo
    if hi is not None:
        m &= i < hi
    return select(V(m, True, (dim,)), x, y)


def scan(dom: Dom, fn: Callable, forward: bool, init: Any, *args: Any) -> Any:
    """A scan over K on the levels of ``dom``: the others undefined."""
    assert dom is not None, "a scan on a domain that is not one range"
    vs = [_v(a) for a in args]
    h = next(n for v in vs for n in v.dims if n in HORIZONTAL)
    nh = Mesh.sizes[SIZE_NAMES[h]]
    n = levels()
    state = init
    d0, d1 = max(dom[0], 0) + BELOW, min(dom[1], Mesh.sizes["N_K"] + 1) + BELOW
    order = range(d0, d1) if forward else range(d1 - 1, d0 - 1, -1)

    def at(v: V, k: int) -> V:
        if "K" not in v.dims:
            return v
        i = v.dims.index("K")
        a = np.take(v.a, k if v.a.shape[i] > 1 else 0, axis=i)
        d = np.take(np.broadcast_to(v.d, v.a.shape), k if v.a.shape[i] > 1 else 0, axis=i)
        return V(a, d, tuple(x for x in v.dims if x != "K"))

    tuple_state = isinstance(init, tuple)
    width = len(init) if tuple_state else 1
    a = [np.zeros((nh, n)) for _ in range(width)]
    d = [np.zeros((nh, n), bool) for _ in range(width)]
    dtypes: list[Any] = [np.float64] * width
    for k in order:
        state = fn(state, *(at(v, k) for v in vs))
        parts = state if tuple_state else (state,)
        for j, s in enumerate(parts):
            s = broadcast(s, (h,))
            dtypes[j] = s.a.dtype
            a[j][:, k] = np.broadcast_to(s.a, (nh,))
            d[j][:, k] = np.broadcast_to(s.d, (nh,))
    res = tuple(V(x.astype(t), m, (h, "K")) for x, m, t in zip(a, d, dtypes))
    return res if tuple_state else res[0]


def write(args: dict[str, Any], name: str, value: Any, dims: tuple[str, ...],
          domain: dict[str, tuple[int, int]], bad: list[str]) -> None:
    """``args[name]`` written on ``domain`` (its whole extent where a dimension is
    not in it) with ``value``; an undefined point written is noted in ``bad``."""
    out = args[name]
    v = broadcast(value, dims)
    index = []
    for i, n in enumerate(dims):
        lo, hi = domain.get(n, (0, out.shape[i]))
        lo, hi = max(lo, 0), min(hi, out.shape[i])
        index.append(slice(lo, max(lo, hi)))
    a = np.broadcast_to(v.a, np.broadcast_shapes(v.a.shape, v.d.shape))
    d = np.broadcast_to(v.d, a.shape)
    # the array's points: from level 0 on a vertical axis the value holds
    full = tuple(slice(BELOW, BELOW + out.shape[i]) if n in VERTICAL and a.shape[i] > 1
                 else slice(0, out.shape[i]) if a.shape[i] > 1 else slice(None)
                 for i, n in enumerate(dims))
    a, d = np.broadcast_to(a[full], out.shape), np.broadcast_to(d[full], out.shape)
    sub = tuple(index)
    if not d[sub].all():
        bad.append(f"{name}: undefined points written")
    out[sub] = a[sub].astype(out.dtype)
