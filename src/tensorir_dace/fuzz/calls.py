"""Random unusual and wrong calls of a compiled program: the call contract.

Valid arguments are changed one or two ways at a time -- another dtype, an
extent one too short or long, an extra or missing axis, Fortran order,
strides, a reversed view, a read-only array, a list for an array, a scalar of
the wrong type or out of its range, a 0-d array for a scalar, a missing or an
unknown argument, a bad or a wrongly typed neighbour table entry, a tuple of
the wrong arity, one array passed for two parameters -- and the call is made
through the compiled program and the interpreter.  Both must raise a
``TensorIRError``, or both must run and agree: nothing a caller passes may end
in a crash, another exception or a silently different result.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from .. import ir
from ..errors import TensorIRError
from ..testing import clone, leaves
from .compare import same_values

__all__ = ["MUTATIONS", "call_contract", "mutate_call"]

_DTYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_)


def _arrays(program: ir.Program, args: dict[str, Any]) -> list[str]:
    return [p.name for p in program.params
            if p.name in args and isinstance(args[p.name], np.ndarray) and args[p.name].ndim]


def _tables(program: ir.Program, args: dict[str, Any]) -> list[str]:
    return [p.name for p in program.params if p.name in args
            and any(d.neighbor_source for d in p.type.dims)
            and isinstance(args[p.name], np.ndarray)]


def _scalars(program: ir.Program, args: dict[str, Any]) -> list[str]:
    return [p.name for p in program.params if p.type.is_scalar and p.name in args]


def _dtype(r, program, args):
    name = r.choice(_arrays(program, args))
    new = r.choice([t for t in _DTYPES if np.dtype(t) != args[name].dtype])
    args[name] = args[name].astype(new)
    return f"{name} as {np.dtype(new)}"


def _extent(r, program, args):
    name = r.choice(_arrays(program, args))
    a = args[name]
    axis = r.randrange(a.ndim)
    if r.random() < 0.5 and a.shape[axis] > 0:
        args[name] = np.ascontiguousarray(np.take(a, range(a.shape[axis] - 1), axis=axis))
        return f"{name} one shorter along axis {axis}"
    args[name] = np.concatenate([a, np.take(a, [0], axis=axis)], axis=axis)
    return f"{name} one longer along axis {axis}"


def _rank(r, program, args):
    name = r.choice(_arrays(program, args))
    a = args[name]
    if r.random() < 0.5 or a.ndim == 1:
        args[name] = a[np.newaxis]
        return f"{name} with an extra axis"
    args[name] = np.ascontiguousarray(a[(slice(None),) * (a.ndim - 1) + (0,)])
    return f"{name} without its last axis"


def _layout(r, program, args):
    name = r.choice(_arrays(program, args))
    a = args[name]
    how = r.choice(["fortran", "strided", "reversed"])
    if how == "fortran":
        args[name] = np.asfortranarray(a)
    elif how == "strided":
        wide = np.repeat(a, 2, axis=a.ndim - 1)
        args[name] = wide[(slice(None),) * (a.ndim - 1) + (slice(None, None, 2),)]
    else:
        args[name] = a[::-1]
    return f"{name} {how}"


def _read_only(r, program, args):
    name = r.choice(_arrays(program, args))
    args[name] = args[name].copy()
    args[name].flags.writeable = False
    return f"{name} read-only"


def _as_list(r, program, args):
    name = r.choice(_arrays(program, args))
    args[name] = args[name].tolist()
    return f"{name} as a list"


def _scalar(r, program, args):
    name = r.choice(_scalars(program, args))
    # (No large in-range integers: a scalar may count a program's loop.)
    value = r.choice(["1", None, np.ones(2), np.array(1.25), 2 ** 63, -(2 ** 63) - 1, 1.5,
                      True, np.float32(0.5), np.int32(2), float("nan"), complex(1, 1)])
    args[name] = value
    return f"{name} = {value!r}"


def _missing(r, program, args):
    name = r.choice(sorted(args))
    del args[name]
    return f"{name} missing"


def _unknown(r, program, args):
    args["not_a_parameter"] = np.zeros(3)
    return "an unknown keyword"


def _table_entry(r, program, args):
    name = r.choice(_tables(program, args))
    t = args[name].copy()
    if t.size == 0:
        return f"{name} empty"
    idx = tuple(r.randrange(n) for n in t.shape)
    # int32 tables (GT4Py's) hold no 2**40; a table made float by another change takes any
    limits = np.iinfo(t.dtype if t.dtype.kind in "iu" else np.int64)
    t[idx] = r.choice([v for v in (-2, -(2 ** 40), 2 ** 40, 10 ** 6, int(limits.min),
                                   int(limits.max)) if limits.min <= v <= limits.max])
    args[name] = t
    return f"{name}{list(idx)} = {t[idx]}"


def _table_dtype(r, program, args):
    name = r.choice(_tables(program, args))
    new = r.choice([np.int32, np.int16, np.uint64, np.float64])
    args[name] = args[name].astype(new)
    return f"{name} as {np.dtype(new)}"


def _tuple_arity(r, program, args):
    name = r.choice([n for n, v in args.items() if isinstance(v, tuple)])
    v = args[name]
    args[name] = v[:-1] if r.random() < 0.5 else v + (v[0],)
    return f"{name} with {len(args[name])} elements"


def _alias(r, program, args):
    names = _arrays(program, args)
    pairs = [(a, b) for a in names for b in names if a < b
             and args[a].shape == args[b].shape and args[a].dtype == args[b].dtype]
    a, b = r.choice(pairs)
    args[b] = args[a]
    return f"{a} passed for {b} too"


#: name -> (applies to these arguments?, mutation)
MUTATIONS: dict[str, tuple[Callable[[ir.Program, dict], bool], Callable[..., str]]] = {
    "dtype": (lambda p, a: bool(_arrays(p, a)), _dtype),
    "extent": (lambda p, a: bool(_arrays(p, a)), _extent),
    "rank": (lambda p, a: bool(_arrays(p, a)), _rank),
    "layout": (lambda p, a: bool(_arrays(p, a)), _layout),
    "read_only": (lambda p, a: bool(_arrays(p, a)), _read_only),
    "list": (lambda p, a: bool(_arrays(p, a)), _as_list),
    "scalar": (lambda p, a: bool(_scalars(p, a)), _scalar),
    "missing": (lambda p, a: bool(a), _missing),
    "unknown": (lambda p, a: True, _unknown),
    "table_entry": (lambda p, a: bool(_tables(p, a)), _table_entry),
    "table_dtype": (lambda p, a: bool(_tables(p, a)), _table_dtype),
    "tuple_arity": (lambda p, a: any(isinstance(v, tuple) for v in a.values()), _tuple_arity),
    "alias": (lambda p, a: any(x.shape == y.shape and x.dtype == y.dtype
                               for i, x in enumerate(a.values()) for y in
                               list(a.values())[i + 1:]
                               if isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                               and x.ndim), _alias),
}


def mutate_call(program: ir.Program, args: dict[str, Any], r: random.Random
                ) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``args`` changed in one or two random ways, and what was changed."""
    out = clone(args)
    done: list[str] = []
    for _ in range(r.choice((1, 1, 2))):
        usable = [m for _, (applies, m) in sorted(MUTATIONS.items()) if applies(program, out)]
        if usable:
            done.append(r.choice(usable)(r, program, out))
    return out, done


def call_contract(program: ir.Program, binary: Callable[..., None], args: dict[str, Any],
                  r: random.Random, calls: int,
                  reference: Callable[..., None] | None = None,
                  loose: Collection[str] = ()) -> list[str]:
    """``calls`` mutated calls of ``binary`` (compiled from ``program``) against
    ``reference`` (default: the interpreter of ``program``); a message per call
    that broke the contract.  ``loose``: outputs computed through float32, compared
    as such (C++ and NumPy round float32 functions differently)."""
    from ..interpreter import interpret
    if reference is None:
        def reference(**kw: Any) -> None:
            interpret(program, **kw)
    broken = []
    for _ in range(calls):
        seed = r.random()       # the same change made twice: copies keep no layout or flags
        ref, what = mutate_call(program, args, random.Random(seed))
        out, _ = mutate_call(program, args, random.Random(seed))
        outcome: list[BaseException | None] = []
        for run, kw in ((reference, ref), (binary, out)):
            try:
                run(**kw)
                outcome.append(None)
            except TensorIRError as err:
                outcome.append(err)
            except Exception as err:  # noqa: BLE001 - the contract allows TensorIRError only
                outcome.append(err)
                broken.append(f"{'; '.join(what)}: {type(err).__name__}: {err}")
        if any(e is not None and not isinstance(e, TensorIRError) for e in outcome):
            continue
        if (outcome[0] is None) != (outcome[1] is None):
            broken.append(f"{'; '.join(what)}: the interpreter "
                          f"{'ran' if outcome[0] is None else f'raised {outcome[0]!r}'}, the "
                          f"compiled program "
                          f"{'ran' if outcome[1] is None else f'raised {outcome[1]!r}'}")
        elif outcome[0] is None:
            for name in ref:
                if isinstance(ref[name], (np.ndarray, tuple)) and not all(
                        same_values(x, y, name in loose)
                        for x, y in zip(leaves(out[name]), leaves(ref[name]))):
                    broken.append(f"{'; '.join(what)}: '{name}' differs")
                    break
    return broken
