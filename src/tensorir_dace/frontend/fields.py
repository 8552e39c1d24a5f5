"""GT4Py's field constructors: ``as_field``, ``empty``, ``zeros``, ``ones``, ``full``.

Code written for GT4Py builds its arguments with these (``gtx.as_field((CellDim,
KDim), array)``, ``gtx.zeros({CellDim: n, KDim: nlev})``) and reads results
back with ``field.asnumpy()``.  Here a field is a :class:`TensorArg`: a NumPy
array with the dimensions of its axes and, where the domain does not start at
0, the coordinate of its element 0 (as :func:`with_dims` and
:func:`with_interval` make).  Programs write such an ``out=`` in place.

A domain is given as GT4Py gives it: a mapping ``{Dim: size}``, ``{Dim:
(start, stop)}`` or ``{Dim: range(start, stop)}``, a sequence of ``(Dim,
range)`` pairs, or a :func:`domain` made from one of these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import ir
from ..arguments import numpy_dtype
from .annotations import Domain, TensorArg, _dim_name, element_type
from .dims import DefinitionError, Dimension, NeighborDimension


def _range(dim: Any, r: Any) -> tuple[int, int]:
    """``r`` (a size, ``(start, stop)`` or ``range``) as ``(start, stop)``."""
    if isinstance(r, range):
        if r.step != 1:
            raise DefinitionError(f"domain: the range of {_dim_name(dim)} must have step 1, "
                                  f"not {r.step}")
        start, stop = r.start, r.stop
    elif isinstance(r, (int, np.integer)) and not isinstance(r, bool):
        start, stop = 0, int(r)
    elif isinstance(r, tuple) and len(r) == 2 and all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in r):
        start, stop = int(r[0]), int(r[1])
    else:
        raise DefinitionError(f"domain: {_dim_name(dim)}: {r!r} is not a size, a (start, stop) "
                              "pair of integers or a range")
    if stop < start:
        raise DefinitionError(f"domain: {_dim_name(dim)} ends ({stop}) before it starts ({start})")
    return start, stop


def domain(spec: Any) -> Domain:
    """A :class:`Domain` from ``{Dim: size | (start, stop) | range}``, a sequence
    of ``(Dim, range)`` pairs or a Domain."""
    if isinstance(spec, Domain):
        return spec
    if isinstance(spec, Mapping):
        items = list(spec.items())
    elif isinstance(spec, Sequence) and not isinstance(spec, str) and all(
            isinstance(p, tuple) and len(p) == 2 for p in spec):
        items = list(spec)
    else:
        raise DefinitionError(f"domain: {spec!r} is not a domain; give {{Dim: size}}, "
                              "{Dim: (start, stop)} or a sequence of (Dim, range) pairs")
    dims: list[Dimension | NeighborDimension] = []
    for d, _ in items:
        if not isinstance(d, (Dimension, NeighborDimension)):
            raise DefinitionError(f"domain: {d!r} is not a dimension")
        if any(_dim_name(e) == _dim_name(d) for e in dims):
            raise DefinitionError(f"domain: dimension {_dim_name(d)} appears twice")
        dims.append(d)
    return Domain(tuple(dims), tuple(_range(d, r) for d, r in items))


def _field(dom: Domain, data: np.ndarray) -> TensorArg:
    intervals: dict[str, tuple[int, int | None]] = {
        _dim_name(d): r for d, r in zip(dom.dims, dom.ranges) if r[0] != 0}
    return TensorArg(data, intervals, dom.dims)


def _dtype(dtype: Any) -> np.dtype:
    t = element_type(dtype)
    if not isinstance(t, ir.ScalarType):
        raise DefinitionError(f"a field's dtype must be a scalar type, not {dtype!r}")
    return numpy_dtype(t)


def as_field(dims_or_domain: Any, data: Any, dtype: Any = None, *,
             origin: Mapping[Any, int] | None = None, allocator: Any = None,
             device: Any = None) -> TensorArg:
    """``data`` (copied, as GT4Py copies it) as a field over ``dims_or_domain``: a
    sequence of dimensions, one per axis (``origin={KDim: 1}`` makes element 1
    coordinate 0), or a domain whose shape is ``data``'s.  ``allocator``,
    ``device`` (and the other constructors' ``aligned_index``) are accepted
    and ignored: fields live in host memory, laid out as NumPy lays them out."""
    arr = np.asarray(data)
    dt = arr.dtype if dtype is None else _dtype(dtype)
    if isinstance(dims_or_domain, Sequence) and dims_or_domain and all(
            isinstance(d, (Dimension, NeighborDimension)) for d in dims_or_domain):
        dims = tuple(dims_or_domain)
        if len(dims) != arr.ndim:
            raise DefinitionError(f"as_field: {len(dims)} dimensions for an array of shape "
                                  f"{arr.shape}; give one dimension per axis")
        origin = dict(origin or {})
        unknown = [d for d in origin if not any(_dim_name(d) == _dim_name(e) for e in dims)]
        if unknown:
            raise DefinitionError(f"as_field: origin names {', '.join(map(_dim_name, unknown))}, "
                                  "not a dimension of the field")
        by_name = {_dim_name(d): int(o) for d, o in origin.items()}
        dom = Domain(dims, tuple((-by_name.get(_dim_name(d), 0), s - by_name.get(_dim_name(d), 0))
                                 for d, s in zip(dims, arr.shape)))
    else:
        if origin:
            raise DefinitionError("as_field: origin= goes with a sequence of dimensions; "
                                  "a domain already says where each dimension starts")
        dom = domain(dims_or_domain)
        if dom.shape != arr.shape:
            raise DefinitionError(f"as_field: an array of shape {arr.shape} does not fit "
                                  f"{dom!r} (shape {dom.shape})")
    return _field(dom, np.array(arr, dtype=dt, copy=True))


def empty(domain_like: Any, dtype: Any = float, *, aligned_index: Any = None,
          allocator: Any = None, device: Any = None) -> TensorArg:
    """A field of uninitialised values over ``domain_like``."""
    dom = domain(domain_like)
    return _field(dom, np.empty(dom.shape, dtype=_dtype(dtype)))


def zeros(domain_like: Any, dtype: Any = float, *, aligned_index: Any = None,
          allocator: Any = None, device: Any = None) -> TensorArg:
    """A field of zeros over ``domain_like``."""
    dom = domain(domain_like)
    return _field(dom, np.zeros(dom.shape, dtype=_dtype(dtype)))


def ones(domain_like: Any, dtype: Any = float, *, aligned_index: Any = None,
         allocator: Any = None, device: Any = None) -> TensorArg:
    """A field of ones over ``domain_like``."""
    dom = domain(domain_like)
    return _field(dom, np.ones(dom.shape, dtype=_dtype(dtype)))


def full(domain_like: Any, fill_value: Any, dtype: Any = None, *, aligned_index: Any = None,
         allocator: Any = None, device: Any = None) -> TensorArg:
    """A field of ``fill_value`` over ``domain_like``; the dtype defaults to the
    value's (a Python ``int`` is int64, a ``float`` float64)."""
    dom = domain(domain_like)
    if dtype is None:
        dtype = type(fill_value) if type(fill_value) in (bool, int, float) else \
            np.asarray(fill_value).dtype
    dt = _dtype(dtype)
    return _field(dom, np.full(dom.shape, fill_value, dtype=dt))
