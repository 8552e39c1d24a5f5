"""The call plan: a compiled program's calling convention as JSON data.

Made once, when a program is compiled (with SymPy and DaCe at hand), from
the :class:`~.compiled.SDFGCallable` that calls it, and stored in the compile
cache next to the library; :mod:`.native` calls the library through it
without DaCe or SymPy.  It says, in the library's argument order, which
parameter leaf, scalar or size symbol each C argument is; how each size
symbol follows from an array extent (given the other symbols in it, which
may come from keyword arguments); every array's expected shape; the
size orders to check; and the volume of the largest parallel map (calls
smaller than :data:`tensorir_dace.openmp.SEQUENTIAL_BELOW` run one-threaded).
Expressions are Python expressions over the SDFG's symbol names, checked
against SymPy on sample values before they are stored.

Tuple-typed parameters are described leaf by leaf (with each parameter's
tuple structure), and neighbour tables by the operand intervals each shift
through them reads, as expressions over the size symbols.

A ``device="gpu"`` program's plan describes its build for NumPy arrays (the
library copies them to the device and back) and says ``gpu``: the native
call asks for a GPU first and reads the kernels' error after each call.

A program the plan cannot describe (arguments beyond plain arrays,
tuples of them, scalars and symbols, table intervals over sizes the library
does not take) gets no plan: its cached calls take the full path.
"""

from __future__ import annotations

import ctypes
import pathlib
import random
from typing import Any

import sympy

from ..ir import TupleType
from .compiled import _DEVICE, SDFGCallable, parallel_volume
from .library import file_digest
from .native import PLAN_FORMAT, evaluator

__all__ = ["call_plan"]

_CTYPES = {ctypes.c_int: "int32", ctypes.c_long: "int64", ctypes.c_longlong: "int64",
           ctypes.c_double: "float64", ctypes.c_float: "float32", ctypes.c_bool: "bool",
           ctypes.c_int8: "int8", ctypes.c_int16: "int16", ctypes.c_uint32: "uint32",
           ctypes.c_uint64: "uint64", ctypes.c_ulong: "uint64"}


class _NoPlan(Exception):
    pass


def _py(expr: Any, names: list[str]) -> str:
    """``expr`` as a Python expression, checked on sample values."""
    e = sympy.sympify(expr)
    e = e.xreplace({s: sympy.Symbol(str(s)) for s in e.free_symbols})
    text = str(e)
    free = sorted(str(s) for s in e.free_symbols)
    if not set(free) <= set(names):
        raise _NoPlan(f"{text} uses symbols beyond {names}")
    fn = evaluator(text, free)
    rng = random.Random(0)
    for _ in range(4):
        vals = [rng.randint(1, 40) for _ in free]
        want = e.xreplace({sympy.Symbol(n): sympy.Integer(v) for n, v in zip(free, vals)})
        got = fn(*vals)
        if want != got:
            raise _NoPlan(f"{text}: Python gives {got}, SymPy {want}")
    return text


def call_plan(callable: SDFGCallable, library: str) -> dict[str, Any] | None:
    """The plan of ``callable`` (``None``: it needs the full path, see above)."""
    try:
        return _plan(callable, library)
    except _NoPlan:
        return None


def _plan(c: SDFGCallable, library: str) -> dict[str, Any]:
    if c._marshal_plan is None:
        raise _NoPlan("needs DaCe's marshalling")
    if any(conv is _DEVICE for _, conv in c._marshal_plan):
        raise _NoPlan("takes device-resident arrays")
    sdfg = c.compiled.sdfg
    params = {p.name: p for p in c.signature.params}
    leaves: list[dict[str, Any]] = []
    by_data: dict[str, int] = {}
    symbol_of_scalar: dict[str, int] = {}
    for b, desc, want, kind in c._arrays:
        leaf: dict[str, Any] = {"param": b.param, "path": list(b.path), "kind": kind,
                                "dtype": str(want)}
        if kind == "array":
            leaf["shape"] = [sympy.sympify(s) for s in desc.shape]
            leaf["written"] = b.param in c._checks.written
        if kind == "scalar_array":
            raise _NoPlan("scalar passed as an array")
        elif kind == "symbol":
            symbol_of_scalar[b.data] = len(leaves)
        by_data[b.data] = len(leaves)
        leaves.append(leaf)

    # Size symbols: the value of an int scalar, a keyword argument, or solved
    # from an array extent once the other symbols in it are known.
    symbols = sorted({str(s) for leaf in leaves for e in leaf.get("shape", ())
                      for s in e.free_symbols} | {sym for _, sym, _ in c._symbol_map})
    solve: list[list[Any]] = []
    for sym in symbols:
        if sym in symbol_of_scalar:
            continue
        seen: set[tuple[str, ...]] = set()
        for i, leaf in enumerate(leaves):
            for d, e in enumerate(leaf.get("shape", ())):
                free = {str(s) for s in e.free_symbols}
                deps = tuple(sorted(free - {sym}))
                if sym not in free or deps in seen:
                    continue
                x = sympy.Symbol("x")
                try:
                    found = sympy.solve(sympy.Eq(e.xreplace({s: sympy.Symbol(str(s))
                                                             for s in e.free_symbols}), x),
                                        sympy.Symbol(sym))
                    if len(found) != 1:
                        continue
                    solve.append([sym, i, d, _py(found[0], ["x", *deps]), list(deps)])
                except (_NoPlan, NotImplementedError):
                    continue    # not solvable in plain arithmetic: the full path solves it
                seen.add(deps)
    solve.sort(key=lambda entry: len(entry[4]))     # the ones needing no other symbol first
    names = symbols + sorted(set(symbol_of_scalar) - set(symbols))
    for leaf in leaves:
        if "shape" in leaf:
            leaf["shape"] = [_py(e, names) for e in leaf["shape"]]

    # Size orders, over SDFG symbol names.
    rename: dict[str, str] = {size: sym for size, sym in c.signature.symbols.items()}
    rename.update({b.param: b.data for b, _, _, kind in c._arrays if kind == "symbol"})
    constraints = []
    for con in c.signature.constraints:
        lo, hi = (sympy.sympify(x) for x in (con.lower, con.upper))
        sub = {s: sympy.Symbol(rename.get(s.name, s.name)) for e in (lo, hi)
               for s in e.free_symbols}
        constraints.append([_py(lo.xreplace(sub), names), _py(hi.xreplace(sub), names)])

    tables: dict[int, list[list[str]]] = {}
    for use in c._checks.tables:
        at = [i for i, leaf in enumerate(leaves)
              if leaf["param"] == use.table and not leaf["path"] and leaf["kind"] == "array"]
        if len(at) != 1:
            raise _NoPlan(f"table {use.table} is not one plain array")
        lo, hi = (sympy.sympify(x) for x in (use.start, use.stop))
        sub = {s: sympy.Symbol(rename.get(s.name, s.name)) for e in (lo, hi)
               for s in e.free_symbols}
        tables.setdefault(at[0], []).append([_py(lo.xreplace(sub), names),
                                             _py(hi.xreplace(sub), names)])

    args: list[list[Any]] = []
    for name, conv in c._marshal_plan:
        if name in by_data and leaves[by_data[name]]["kind"] == "array":
            args.append(["array", by_data[name]])
        elif name in by_data and leaves[by_data[name]]["kind"] == "scalar":
            args.append(["scalar", by_data[name], _CTYPES[conv]])
        elif name in names and conv in _CTYPES:
            args.append(["symbol", name, _CTYPES[conv]])
        else:
            raise _NoPlan(f"argument {name} is neither a leaf nor a symbol")
    gpu = bool(c._has_gpu_code)
    volume = None if gpu else parallel_volume(sdfg)
    return {
        "format": PLAN_FORMAT,
        "name": sdfg.name,
        "program": c.name,
        "library": library,
        "size": pathlib.Path(library).stat().st_size,
        "sha256": file_digest(pathlib.Path(library)),
        "params": [p.name for p in c.signature.params],
        "scalars": [p for p in params if params[p].type.is_scalar],
        "leaves": leaves,
        "tuples": _tuple_leaves(c),
        "tables": [[i, uses] for i, uses in tables.items()],
        "symbols": names,
        "scalar_symbols": symbol_of_scalar,
        "solve": solve,
        "sizes": {size: sym for size, sym in c.signature.symbols.items()
                  if sym in names and sym not in symbol_of_scalar},
        "constraints": constraints,
        "args": args,
        "init": list(c._init_positions),
        "reinit": c._reinit,
        "volume": None if volume is None else _py(volume, names),
        "gpu": gpu,
    }


def _tuple_leaves(c: SDFGCallable) -> dict[str, list[list[int]]]:
    """Per tuple-typed parameter, the index paths of all its leaves in order
    (every one must be a leaf the library takes)."""
    out: dict[str, list[list[int]]] = {}
    for p in c.signature.params:
        if not isinstance(p.type.dtype, TupleType):
            continue
        paths = sorted(_paths(p.type.dtype))
        bound = sorted(tuple(b.path) for b, *_ in c._arrays if b.param == p.name)
        if paths != bound:
            raise _NoPlan(f"the leaves of tuple parameter {p.name} are not all arguments")
        out[p.name] = [list(path) for path in paths]
    return out


def _paths(t: Any, prefix: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    if not isinstance(t, TupleType):
        return [prefix]
    return [path for i, e in enumerate(t.elements) for path in _paths(e, (*prefix, i))]
