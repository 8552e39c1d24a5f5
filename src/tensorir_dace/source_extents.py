"""Source-extent parameters: the extent of a dimension that only neighbour tables give.

A value built along a neighbour table's source dimension (``Cell`` for a
table ``Edge -> Cell``) from broadcasts (GT4Py's ``concat_where(Cell < n, 1.0,
2.0)``, defined everywhere along ``Cell``) is computed over ``Cell[0:N]`` and
read through the table.  Where no parameter has that dimension, the program
takes a parameter for it, ``_extent_Cell: tensor<bool, Cell[0:N_Cell]>``
(the front end adds it), whose only use is its size.  A call binds it where it
is not given (:func:`extent_values`): to an array one longer than the largest
entry of the tables whose entries index the dimension, so that every entry
names one of its elements.  The argument binder does so for any program with
such a parameter (a program read back from its printed text too), and a
``@dace.program`` nesting one computes the size from the tables it passes
(:mod:`tensorir_dace.interop`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from . import ir
from .errors import ArgumentError

__all__ = ["EXTENT_DTYPE", "EXTENT_FACTOR", "EXTENT_FLOOR", "EXTENT_PREFIX", "extent_values",
           "extents_of", "is_extent_param", "tables_into"]

EXTENT_PREFIX = "_extent_"
EXTENT_DTYPE = ir.BOOL


def is_extent_param(p: ir.Param) -> bool:
    """Whether ``p`` is a source-extent parameter (see :data:`EXTENT_PREFIX`)."""
    return p.name.startswith(EXTENT_PREFIX) and p.type.dtype == EXTENT_DTYPE and \
        len(p.type.dims) == 1


def tables_into(params: Iterable[ir.Param], dim: str) -> list[ir.Param]:
    """The neighbour tables among ``params`` whose entries index dimension ``dim``."""
    return [p for p in params if any(d.neighbor_source == dim for d in p.type.dims)]


_EXTENT_ARRAYS: dict[int, np.ndarray] = {}


def _largest_entry(t: Any) -> int:
    """The largest entry of table ``t`` (-1 where it has none), scanned once per
    buffer; -1 too where ``t`` is not an array of integers, which the call's
    checks then refuse with their message."""
    if getattr(getattr(t, "dtype", None), "kind", None) not in ("i", "u"):
        return -1
    if isinstance(t, np.ndarray):
        from .tablescan import table_stats
        st = table_stats(t, t.ctypes.data)
        return -1 if st.max is None else st.max
    size = getattr(t, "size", None)
    return int(t.max()) if size else -1


def extents_of(params: Sequence[ir.Param]) -> dict[str, list[Any]]:
    """The source-extent parameters among ``params``: {name: [dimension, [the
    tables indexing it]]} (JSON data, stored with a program found by source)."""
    return {p.name: [d, [t.name for t in tables_into(params, d)]]
            for p in params if is_extent_param(p) for d in [p.type.dims[0].name]}


#: The longest extent a call's tables may give a dimension no argument has, as
#: a multiple of the call's largest argument (elements), and at least
#: :data:`EXTENT_FLOOR`.  On a mesh a table's entries index a dimension of a size
#: like its rows' (ICON: edges 1.5x cells, vertices 0.5x); an entry past that
#: is a corrupt table, and the value built along the dimension would take
#: memory and time for all the points up to it.
EXTENT_FACTOR = 16
EXTENT_FLOOR = 1 << 20


def extent_values(extents: Mapping[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (by IR name) with the source-extent parameters ``extents``
    (as :func:`extents_of` gives them) bound where they are not: each to an
    array (never written) one longer than the largest entry of its tables, so
    that every entry names one of its elements (the entries are checked
    against it at the call, as against any operand).  An entry that would make
    the dimension longer than :data:`EXTENT_FACTOR` times the largest argument
    is an :class:`~tensorir_dace.errors.ArgumentError`.  The tables are
    arrays of integers (checked by the caller)."""
    hidden = [(name, dim, tables) for name, (dim, tables) in extents.items()
              if name not in values]
    if not hidden:
        return values
    values = dict(values)
    largest = max((int(v.size) for v in values.values() if hasattr(v, "shape")), default=0)
    limit = max(EXTENT_FLOOR, EXTENT_FACTOR * largest)
    for name, dim, tables in hidden:
        n = 0
        for t in tables:
            if hasattr(values.get(t), "shape"):
                top = _largest_entry(values[t]) + 1
                if top > limit:
                    raise ArgumentError(
                        f"neighbour table '{t}' holds the entry {top - 1}, so {dim} would "
                        f"have {top} points; no argument has {dim}, so its extent comes from "
                        f"the tables, and it may be at most {limit} ({EXTENT_FACTOR} times the "
                        f"largest argument, at least {EXTENT_FLOOR}); check the table, or "
                        f"pass a field over {dim}")
                n = max(n, top)
        arr = _EXTENT_ARRAYS.get(n)
        if arr is None:
            if len(_EXTENT_ARRAYS) >= 8:
                _EXTENT_ARRAYS.clear()
            arr = _EXTENT_ARRAYS[n] = np.zeros(n, dtype=np.bool_)
        values[name] = arr
    return values
