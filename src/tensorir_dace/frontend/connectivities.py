"""Neighbour tables declared once, at module level.

``E2V = connectivity("E2V", Edge, E2VDim)`` declares the table
``tensor<int64, Edge[0:N_Edge], _NB_Vertex[0:2]>`` under the name ``E2V``.
Function and program bodies use it like a table parameter (``x(E2V)``,
``x(E2V[0])``) without declaring one: a program that uses declared
connectivities (directly or through the functions it calls) takes their arrays
as keyword-only arguments named by the connectivity, after its declared
parameters (``prog(a, out, E2V=arr)``), or as GT4Py's
``offset_provider={"E2V": arr}``.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .. import ir
from ..errors import ArgumentError, SourceLoc
from .annotations import TensorSpec, element_type
from .dims import DefinitionError, Dimension, LocalDimension, NeighborDimension, Offset


class Connectivity:
    """A neighbour table declared by :func:`connectivity`."""

    def __init__(self, name: str, target: Dimension, neighbors: NeighborDimension,
                 dtype: Any = int):
        if not isinstance(name, str) or not name.isidentifier():
            raise DefinitionError(f"connectivity(name, …): the name must be an identifier, "
                                  f"got {name!r}")
        if not isinstance(target, Dimension):
            raise DefinitionError(f"connectivity({name!r}, target, …): target must be a "
                                  f"Dimension (the table's rows), got {target!r}")
        if not isinstance(neighbors, NeighborDimension):
            raise DefinitionError(f"connectivity({name!r}, {target.name}, neighbors): "
                                  "neighbors must be a neighbour dimension, e.g. "
                                  f"neighbor_dim(Vertex, 2), got {neighbors!r}")
        et = element_type(dtype)
        if not (isinstance(et, ir.ScalarType) and et.is_int):
            raise DefinitionError(f"connectivity({name!r}, …): the entries are integers "
                                  f"(int32 or int64), not {et}")
        self.name = name
        self.target = target
        self.neighbors = neighbors
        self.dtype = et

    def spec(self) -> TensorSpec:
        """The annotation of the table parameter: ``Tensor[int, Edge, E2VDim]``."""
        return TensorSpec(self.dtype, (self.target, self.neighbors))

    def __repr__(self) -> str:
        return (f"connectivity({self.name!r}, {self.target.name}, {self.neighbors!r}"
                + (f", {self.dtype}" if self.dtype != ir.INT64 else "") + ")")


def connectivity(name: str, target: Dimension, neighbors: NeighborDimension,
                 dtype: Any = int) -> Connectivity:
    """Declare the neighbour table ``name`` with rows along ``target`` and entries
    indexing ``neighbors.source``: ``E2V = connectivity("E2V", Edge, E2VDim)``."""
    return Connectivity(name, target, neighbors, dtype)


class StridedOffset:
    """GT4Py's offset into a flattened sparse field: ``FieldOffset("C2CE",
    source=CE, target=(Cell, C2EDim))`` with the offset provider
    ``StridedNeighborOffsetProvider(Cell, CE, 3)``.  Neighbour ``k`` of row
    ``c`` is element ``c * 3 + k`` of a field over ``CE`` (3 is the neighbour
    dimension's size), so ``geofac_div(C2CE[k])`` is that element and
    ``geofac_div(C2CE)`` the row's 3 elements.  No table is passed: the
    translation writes the index expression itself."""

    def __init__(self, name: str, rows: Dimension, neighbors: NeighborDimension,
                 source: Dimension):
        self.name = name
        self.rows = rows
        self.neighbors = neighbors
        self.source = source

    @property
    def stride(self) -> int:
        return self.neighbors.size

    def __repr__(self) -> str:
        return (f"FieldOffset({self.name!r}, source={self.source.name}, "
                f"target=({self.rows.name}, {self.neighbors!r}))")


class CartesianOffset:
    """GT4Py's Cartesian ``FieldOffset``: ``Koff[-1]`` is ``K - 1``."""

    def __init__(self, name: str, dim: Dimension):
        self.name = name
        self.dim = dim

    def __getitem__(self, offset: int) -> Offset:
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
            raise DefinitionError(f"{self.name}[…] takes an integer offset, got {offset!r}")
        return Offset(self.dim, int(offset))

    def __repr__(self) -> str:
        return f"FieldOffset({self.name!r}, source={self.dim.name}, target=({self.dim.name},))"


class LocalOffset:
    """GT4Py's ``FieldOffset("C2E", source=Edge, target=(Cell, C2EDim))`` with a
    :class:`~.dims.LocalDimension`: a neighbour table or a strided offset, as
    the offset provider says when a program using it is first called or
    compiled (:func:`bind_local_offsets`); then it is that offset for good.
    A table gives the local dimension its count."""

    def __init__(self, name: str, rows: Dimension, local: LocalDimension, source: Dimension):
        self.name = name
        self.rows = rows
        self.local = local
        self.source = source
        self.resolved: Connectivity | StridedOffset | None = None

    def resolve(self, value: Any, where: str, loc: SourceLoc | None = None) -> None:
        """Become a table or a strided offset by the provider's ``value`` (an
        array or connectivity object: a table; ``None`` or a strided provider:
        strided), and bind the local dimension's count where the value has one.
        A table becomes strided where a later call gives ``None`` or a strided
        provider (:meth:`turns_strided`): a strided offset takes the table of
        its layout too (:func:`check_strided`), so both kinds of call work."""
        if _is_strided_value(value):
            count = getattr(value, "max_neighbors", None)
            if count is not None:
                self.local.bind(count, f"{where}: offset_provider['{self.name}']")
            if not isinstance(self.resolved, StridedOffset):
                self.resolved = StridedOffset(self.name, self.rows, self.local, self.source)
            return
        arr = _table_array(value)
        if not hasattr(arr, "shape") and isinstance(arr, (list, tuple)):
            arr = np.asarray(arr)           # a table written as nested lists
        shape = getattr(arr, "shape", None)
        if shape is None or len(shape) != 2:
            raise ArgumentError(f"{where}: the table '{self.name}' must be a 2-dimensional "
                                f"integer array (N_{self.rows.name}, neighbours), got "
                                f"{shape if shape is not None else type(value).__name__}", loc)
        self.local.bind(int(shape[1]), f"{where}: the table '{self.name}'")
        if self.resolved is None:
            nb = NeighborDimension(self.source, self.local.size)
            nb.local = self.local
            self.resolved = Connectivity(self.name, self.rows, nb)

    def turns_strided(self, provider: Any) -> bool:
        """Whether ``provider`` (a call's ``offset_provider``) gives ``None`` or a
        strided provider for this offset, which is a table so far."""
        return isinstance(self.resolved, Connectivity) and isinstance(provider, Mapping) \
            and self.name in provider and _is_strided_value(provider[self.name])

    def __repr__(self) -> str:
        return (f"FieldOffset({self.name!r}, source={self.source.name}, "
                f"target=({self.rows.name}, {self.local.name}))")


def _is_strided_value(value: Any) -> bool:
    """An offset provider entry that makes a local offset strided: ``None`` or a
    strided provider (GT4Py's ``StridedNeighborOffsetProvider``)."""
    return value is None or (not hasattr(value, "shape") and hasattr(value, "max_neighbors")
                             and _table_array(value) is value)


class NeighborTableOffsetProvider:
    """GT4Py's offset provider for a neighbour table: ``NeighborTableOffsetProvider(
    table, Cell, Edge, 3)`` gives ``table`` (rows along ``origin_axis``,
    ``max_neighbors`` entries into ``neighbor_axis``, -1 for none) to the offset
    it is passed for in ``offset_provider={...}``; the array itself does the same."""

    def __init__(self, table: Any, origin_axis: Dimension, neighbor_axis: Dimension,
                 max_neighbors: int, has_skip_values: bool = True):
        self.table = table
        self.origin_axis = origin_axis
        self.neighbor_axis = neighbor_axis
        self.max_neighbors = max_neighbors
        self.has_skip_values = has_skip_values
        shape = getattr(table, "shape", None)
        if shape is None or len(shape) != 2 or shape[1] != max_neighbors:
            raise DefinitionError(f"NeighborTableOffsetProvider(table, …, max_neighbors="
                                  f"{max_neighbors}): the table must have shape (rows, "
                                  f"{max_neighbors}), got {shape}")

    @property
    def ndarray(self) -> Any:
        return self.table


class StridedNeighborOffsetProvider:
    """GT4Py's offset provider for a strided offset into a flattened field:
    neighbour ``k`` of row ``c`` is element ``c * max_neighbors + k`` (see
    :class:`StridedOffset`); no table is read."""

    def __init__(self, origin_axis: Dimension, neighbor_axis: Dimension, max_neighbors: int,
                 has_skip_values: bool = False):
        self.origin_axis = origin_axis
        self.neighbor_axis = neighbor_axis
        self.max_neighbors = max_neighbors
        self.has_skip_values = has_skip_values


def as_connectivity(domain: Any, codomain: Dimension, data: Any,
                    skip_value: int | None = None) -> NeighborTableOffsetProvider:
    """GT4Py's ``as_connectivity([Cell, C2EDim], codomain=Edge, data=table,
    skip_value=-1)``: a neighbour table for ``offset_provider``."""
    dims = tuple(domain) if isinstance(domain, (tuple, list)) else (domain,)
    shape = getattr(data, "shape", None)
    if len(dims) != 2 or shape is None or len(shape) != 2:
        raise DefinitionError("as_connectivity(domain, codomain, data): domain is (rows, "
                              "neighbour dimension) and data a 2-dimensional table")
    if skip_value not in (None, -1):
        raise DefinitionError(f"as_connectivity(…, skip_value={skip_value}): absent "
                              "neighbours are -1 (any negative entry)")
    return NeighborTableOffsetProvider(data, dims[0], codomain, int(shape[1]),
                                       has_skip_values=skip_value is not None)


def bind_local_offsets(offsets: Iterable[LocalOffset], tables: Mapping[str, Any],
                       provider: Mapping[str, Any] | None, where: str,
                       loc: SourceLoc | None = None) -> bool:
    """Resolve ``offsets`` (a function's :class:`LocalOffset` objects) from the
    call's tables (keyword arguments) and ``offset_provider``; whether any is
    left unresolved (not given)."""
    left = False
    for off in offsets:
        if off.resolved is not None and off.local.bound and not off.turns_strided(provider):
            continue
        if provider is not None and isinstance(provider, Mapping) and off.name in provider:
            off.resolve(provider[off.name], where, loc)
        elif off.name in tables:
            off.resolve(tables[off.name], where, loc)
        else:
            left = True
        if not off.local.bound:
            left = True     # None gives no count: a later table (or argument) still may
    return left


def FieldOffset(name: str, source: Any, target: Any) -> Any:
    """GT4Py's spelling of an offset: ``FieldOffset("Koff", source=K, target=(K,))`` is the
    Cartesian offset ``Koff[-1]`` (``K - 1``); ``FieldOffset("E2V", source=Vertex,
    target=(Edge, E2VDim))`` is ``connectivity("E2V", Edge, E2VDim)``; a source other
    than the neighbour dimension's (``FieldOffset("C2CE", source=CE, target=(Cell,
    C2EDim))``) is a :class:`StridedOffset` into a flattened sparse field."""
    target = tuple(target) if isinstance(target, (tuple, list)) else (target,)
    if len(target) == 2 and isinstance(target[1], LocalDimension):
        if not isinstance(source, Dimension) or not isinstance(target[0], Dimension):
            raise DefinitionError(f"FieldOffset({name!r}, source, target=(rows, "
                                  f"{target[1].name})): source and rows must be Dimensions, "
                                  f"got {source!r} and {target[0]!r}")
        return LocalOffset(name, target[0], target[1], source)
    if len(target) == 1 and isinstance(source, Dimension) and target[0] is not None \
            and isinstance(target[0], Dimension) and target[0].same(source):
        return CartesianOffset(name, source)
    if len(target) == 2 and isinstance(target[1], NeighborDimension):
        if not isinstance(source, Dimension):
            raise DefinitionError(f"FieldOffset({name!r}, source={source!r}, …): the source "
                                  f"must be a Dimension, e.g. {target[1].source.name}")
        if not target[1].source.same(source):
            if not isinstance(target[0], Dimension):
                raise DefinitionError(f"FieldOffset({name!r}, …, target=(rows, …)): rows "
                                      f"must be a Dimension, got {target[0]!r}")
            return StridedOffset(name, target[0], target[1], source)
        return Connectivity(name, target[0], target[1])
    raise DefinitionError(f"FieldOffset({name!r}, source, target): target must be (source,) "
                          "for a Cartesian offset or (rows, neighbor_dim(source, n)) for a "
                          f"neighbour table, got {target!r}")

# --------------------------------------------------------------------------- discovery


_ABSENT = object()


def used_connectivities(fn: Callable, kind: type = Connectivity) -> list[Any]:
    """The connectivities (or other offsets of type ``kind``) a function's code
    names, directly or through the functions, scan operators and reductions it
    calls (in first-use order)."""
    found: dict[str, Any] = {}
    seen: set[int] = set()

    def visit_function(f: Any) -> None:
        f = inspect.unwrap(getattr(f, "fn", f)) if not inspect.isfunction(f) else f
        if not inspect.isfunction(f) or id(f) in seen:
            return
        seen.add(id(f))
        cells = dict(zip(f.__code__.co_freevars,
                         (c.cell_contents for c in (f.__closure__ or ())
                          if _has_contents(c))))
        visit_code(f.__code__, f.__globals__, cells)

    def visit_code(code: types.CodeType, globs: Mapping[str, Any],
                   cells: Mapping[str, Any]) -> None:
        for n in code.co_names + code.co_freevars:
            v = cells[n] if n in cells else globs.get(n, _ABSENT)
            if isinstance(v, types.ModuleType):
                # offsets and functions reached through a module (``dims.C2E``):
                # the module's attributes the code names
                for a in code.co_names:
                    attr = getattr(v, a, None)
                    if not (inspect.isfunction(attr)
                            and attr.__module__.startswith("tensorir_dace")):
                        visit_value(attr)     # not the library's own functions (gtx.where)
            elif v is not _ABSENT:
                visit_value(v)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                visit_code(c, globs, cells)

    def visit_value(v: Any) -> None:
        if isinstance(v, LocalOffset) and kind is not LocalOffset and v.resolved is not None:
            v = v.resolved
        if isinstance(v, kind):
            named: Any = v      # every offset kind has a name
            found.setdefault(named.name, v)
        elif inspect.isfunction(v) or inspect.isfunction(getattr(v, "fn", None)):
            visit_function(v)

    visit_function(fn)
    return list(found.values())


def _has_contents(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- arguments


def merge_offset_provider(kwargs: dict[str, Any], provider: Mapping[str, Any] | None,
                          tables: Iterable[str], where: str,
                          loc: SourceLoc | None = None,
                          strided: Mapping[str, StridedOffset] | None = None
                          ) -> dict[str, Any]:
    """``kwargs`` with the tables of GT4Py's ``offset_provider={"E2V": arr}``
    added; entries the program does not use are ignored, as in GT4Py, and a
    table given twice is an ``ArgumentError``.  An entry for a strided offset
    the program uses is checked against its layout (:func:`check_strided`)."""
    if provider is None:
        return kwargs
    if not isinstance(provider, Mapping):
        raise ArgumentError(f"{where}: offset_provider must be a dict of neighbour tables "
                            f"by connectivity name, got {type(provider).__name__}", loc)
    names = list(tables)
    out = dict(kwargs)
    for k, v in provider.items():
        if strided and k in strided:
            check_strided(strided[k], v, where, loc)
        if k not in names:
            continue    # one provider serves many programs (and Cartesian offsets)
        if k in out:
            raise ArgumentError(f"{where}: the table '{k}' is given both as an argument and "
                                "in offset_provider", loc)
        out[k] = _table_array(v)
    return out


def check_strided(offset: StridedOffset, value: Any, where: str,
                  loc: SourceLoc | None = None) -> None:
    """An ``offset_provider`` entry for a strided offset: nothing (``None``),
    GT4Py's ``StridedNeighborOffsetProvider``, or a table, which GT4Py would
    read instead of the stride.  The translation computes ``c * n + k``, so a
    table is accepted when it is exactly that layout (icon4py builds its
    ``C2CE`` table so) and refused otherwise, never silently ignored."""
    if value is None or (not hasattr(value, "shape") and "Strided" in type(value).__name__):
        return
    n, rows = offset.stride, offset.rows.name
    arr = _table_array(value)
    if not isinstance(arr, np.ndarray) and callable(getattr(arr, "get", None)):
        arr = arr.get()                 # a device array: compared on the host
    try:
        arr = np.asarray(arr)
    except Exception:  # noqa: BLE001 - anything that is not an array is reported below
        arr = None
    layout = f"{offset.name}[{rows} c, k] = c * {n} + k"
    if arr is None or arr.dtype.kind not in "iu" or arr.ndim != 2 or arr.shape[1] != n:
        raise ArgumentError(f"{where}: offset_provider['{offset.name}'] for the strided "
                            f"offset {offset!r} must be None or a table of integers of "
                            f"shape (N_{rows}, {n}) with {layout}, got "
                            f"{getattr(arr, 'shape', type(value).__name__)}", loc)
    expected = np.arange(arr.shape[0] * n).reshape(arr.shape[0], n)
    if not np.array_equal(arr, expected):
        r, k = (int(x[0]) for x in np.nonzero(arr != expected))
        raise ArgumentError(f"{where}: offset_provider['{offset.name}'] is a table that is "
                            f"not the strided layout {layout} (entry [{r}, {k}] is "
                            f"{int(arr[r, k])}, not {r * n + k}); a strided offset always "
                            f"reads element c * {n} + k. For another numbering declare the "
                            f"offset as a table, FieldOffset('{offset.name}', source="
                            f"{offset.source.name}, target=({rows}, neighbor_dim("
                            f"{offset.source.name}, {n}))), and pass it", loc)


def used_strided(fn: Callable) -> dict[str, StridedOffset]:
    """The strided offsets a function's code uses, by name."""
    return {s.name: s for s in used_connectivities(fn, StridedOffset)}


def declared_tables(fn: Callable, declared: Iterable[str]) -> dict[str, Connectivity]:
    """The connectivities a program takes as extra keyword-only parameters: the
    ones it uses that are not already declared parameters (tables passed as
    parameters keep working)."""
    names = set(declared)
    return {c.name: c for c in used_connectivities(fn) if c.name not in names}


def table_arguments(kwargs: dict[str, Any], offset_provider: Mapping[str, Any] | None,
                    tables: Mapping[str, Connectivity], where: str,
                    loc: SourceLoc | None = None,
                    strided: Mapping[str, StridedOffset] | None = None) -> dict[str, Any]:
    """Keyword arguments with ``offset_provider``'s tables merged in and
    integer tables converted to their declared element type."""
    out = merge_offset_provider(kwargs, offset_provider, tables, where, loc, strided)
    for name, c in tables.items():
        if name in out:
            out[name] = as_table_dtype(_table_array(out[name]), c.dtype)
    return out


class TablesCall:
    """A compiled program that also takes ``offset_provider=`` for its declared
    connectivities; everything else is the compiled program's."""

    def __init__(self, compiled: Any, tables: Mapping[str, Connectivity], where: str,
                 strided: Mapping[str, StridedOffset] | None = None):
        self._compiled = compiled
        self._tables = dict(tables)
        self._where = where
        self._strided = dict(strided or {})

    def __call__(self, /, *args: Any, offset_provider: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> Any:
        return self._compiled(*args, **table_arguments(kwargs, offset_provider, self._tables,
                                                       self._where, strided=self._strided))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


def _table_array(v: Any) -> Any:
    """The array of a table given as an array or as a GT4Py-style connectivity object."""
    for attr in ("ndarray", "table"):
        inner = getattr(v, attr, None)
        if inner is not None and not callable(inner):
            return inner
    return v


def as_table_dtype(value: Any, dtype: ir.ScalarType) -> Any:
    """A NumPy integer table of another width converted to the declared element
    type (tables are read-only inputs; other arrays pass unchanged)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and \
            value.dtype != np.dtype(dtype.name):
        return value.astype(dtype.name)
    return value


__all__ = ["Connectivity", "LocalOffset", "NeighborTableOffsetProvider",
           "StridedNeighborOffsetProvider", "StridedOffset", "TablesCall", "as_connectivity",
           "as_table_dtype",
           "bind_local_offsets", "check_strided", "connectivity", "declared_tables",
           "merge_offset_provider", "table_arguments", "used_connectivities", "used_strided"]
