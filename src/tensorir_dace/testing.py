"""Reproducible random arguments for any program, and result comparison.

Used by the command line (``tensorir-dace run``), the tests and the
benchmarks: neighbour tables get valid source coordinates (inside every
operand shifted through them) with some ``-1`` (absent) entries, other int
tensors small values, floats values in [0.5, 1.5) (safe for division and
logarithms).
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import ir
from .arguments import numpy_dtype
from .callchecks import table_uses
from .errors import TensorIRError
from .intervals import evaluate
from .typing import check

DEFAULT_SIZE = 8


@contextlib.contextmanager
def streaming_threshold(min_bytes: int | None) -> Iterator[None]:
    """Compile with outputs streamed from ``min_bytes`` bytes on (``0``: every
    output, so that the streamed branches run on small test arrays), by
    setting ``TENSORIR_DACE_STREAMING_MIN_BYTES`` for the block (the compile
    cache keys by it); ``None`` leaves the environment as it is."""
    name = "TENSORIR_DACE_STREAMING_MIN_BYTES"
    old = os.environ.get(name)
    if min_bytes is not None:
        os.environ[name] = str(min_bytes)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def size_symbols(program: ir.Program) -> list[str]:
    names: dict[str, None] = {}
    for p in program.params:
        for d in p.type.dims:
            for b in (d.start, d.stop):
                for s in sorted(b.free_symbols, key=lambda s: s.name):
                    names[s.name] = None
    return list(names)


def random_arguments(program: ir.Program, *, sizes: dict[str, int] | None = None,
                     seed: int = 0, absent_fraction: float = 0.1) -> dict[str, Any]:
    """Keyword arguments for ``program``: arrays for tensors, scalars for scalars."""
    sizes = {s: DEFAULT_SIZE for s in size_symbols(program)} | dict(sizes or {})
    rng = np.random.default_rng(seed)
    intervals: dict[str, tuple[int, int]] = {}
    for p in program.params:
        for d in p.type.dims:
            intervals.setdefault(d.name, (evaluate(d.start, sizes), evaluate(d.stop, sizes)))

    ranges = _table_ranges(program, sizes)

    def leaf(dtype: ir.ScalarType, t: ir.TensorType, shape: tuple[int, ...], name: str):
        np_t = numpy_dtype(dtype)
        if dtype.is_bool:
            return rng.random(shape) < 0.5
        if dtype.is_float:
            return (rng.random(shape) + 0.5).astype(np_t)
        src = next((d.neighbor_source for d in t.dims if d.neighbor_source), None)
        if src is not None:
            # no parameter over the source: only values constant along it are
            # read through the table, at any entry
            lo, hi = ranges.get(name, intervals.get(src, (0, DEFAULT_SIZE)))
            values = rng.integers(lo, max(hi, lo + 1), shape)
            if hi <= lo:
                values[...] = -1
            values[rng.random(shape) < absent_fraction] = -1
            return values.astype(np_t)
        return rng.integers(-4, 5, shape).astype(np_t)

    def value(dtype: ir.ElementType, t: ir.TensorType, shape, name: str):
        if isinstance(dtype, ir.TupleType):
            return tuple(value(d, t, shape, name) for d in dtype.elements)
        return leaf(dtype, t, shape, name)

    args: dict[str, Any] = {}
    for p in program.params:
        t = p.type
        if t.is_scalar:
            dtype = t.dtype
            if isinstance(dtype, ir.TupleType):
                raise TensorIRError(f"tuple scalar parameter '{p.name}' is not supported")
            args[p.name] = (True if dtype.is_bool else 3 if dtype.is_int
                            else numpy_dtype(dtype).type(1.25))
            continue
        shape = tuple(evaluate(d.stop, sizes) - evaluate(d.start, sizes) for d in t.dims)
        args[p.name] = value(t.dtype, t, shape, p.name)
    return args


def _table_ranges(program: ir.Program, sizes: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Per table parameter, the entries valid for every operand shifted through it."""
    try:
        uses = table_uses(check(program))
    except TensorIRError:
        return {}
    out: dict[str, tuple[int, int]] = {}
    for u in uses:
        try:
            lo, hi = evaluate(u.start, sizes), evaluate(u.stop, sizes)
        except (KeyError, TypeError, ValueError):
            continue
        a, b = out.get(u.table, (lo, hi))
        out[u.table] = (max(a, lo, 0), min(b, hi))
    return out


def clone(args: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(args)


def leaves(x):
    """The arrays of an argument: itself, or the leaves of a (nested) tuple."""
    if isinstance(x, tuple):
        for v in x:
            yield from leaves(v)
    else:
        yield x


def max_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The largest absolute difference over all array leaves (NaN == NaN); inf if
    NaN appears on one side only."""
    worst = 0.0
    for name in a:
        for x, y in zip(leaves(a[name]), leaves(b[name])):
            if not isinstance(x, np.ndarray) or x.size == 0:
                continue
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            nan_x, nan_y = np.isnan(x64), np.isnan(y64)
            if (nan_x != nan_y).any():
                return float("inf")
            ok = ~nan_x
            if ok.any():
                inf_same = (x64[ok] == y64[ok])
                diff = np.where(inf_same, 0.0, np.abs(x64[ok] - y64[ok]))
                worst = max(worst, float(np.max(diff)))
    return worst
