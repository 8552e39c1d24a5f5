"""Direct calls of field operators over tuples of fields of different
dimensions (a NamedTuple such as icon4py's ``SteepPointInterpolation``: a
cell field beside fields over ``[Cell, C2E2C, K]``).

A tuple tensor holds elements of one shape, so such a parameter or result
cannot be one tensor.  :class:`SpreadCall` passes a parameter's elements one
by one to a wrapper function that builds the tuple again in its body;
:func:`part_functions` makes one function per part of such a result, each
returning its part over its own domain.  The wrappers are Python source
made here (registered with ``linecache``, which the front end reads source
from) and decorated like the operator they wrap.
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
from typing import Any

from ..errors import ArgumentError, TensorIRError
from .annotations import (
    annotation_spec,
    evaluated_annotation,
    spread_leaves,
    spread_values,
    spreadable,
    tuple_parts,
)
from .meshes import is_namedtuple_class
from .source import source_info
from .specialized import annotation_of, call_site


def _made_function(name: str, text: str, filename: str, namespace: dict[str, Any]) -> Any:
    """The function ``name`` that the source ``text`` defines (with the names
    of ``namespace``), readable by the front end under ``filename``."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


@dataclasses.dataclass(frozen=True)
class SpreadCall:
    """Direct calls of a function with a parameter annotated with a tuple of
    fields over different dimensions, or of fields beside scalars (a NamedTuple
    such as icon4py's ``SteepPointInterpolation``: a cell field beside fields
    over ``[Cell, C2E2C, K]``).  A tuple tensor holds elements of one shape, so
    such a call goes to a wrapper that takes each element as a parameter of its
    own and builds the tuple again in its body, where the function is inlined
    as a program inlines it.  ``trees``: each such parameter's elements (a leaf
    parameter's name, or a nested tuple of them)."""

    trees: dict[str, tuple]
    wrapper: Any

    @staticmethod
    def of(op: Any) -> SpreadCall | None:
        fn = op.fn
        src = source_info(fn)
        a = src.node.args
        if a.vararg or a.kwarg:
            return None
        sig = inspect.signature(fn)
        order = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        anns: dict[str, Any] = {}
        for name in [*order, "return"]:
            has, ann = annotation_of(fn, name, src.loc(src.node), strict=False)
            if has:
                anns[name] = ann
        spread = [n for n in order if n in anns and annotation_spec(anns[n]) is None
                  and spreadable(anns[n])
                  and sig.parameters[n].default is inspect.Parameter.empty]
        if not spread:
            return None
        taken = set(order)
        namespace: dict[str, Any] = {"_op": op, "__name__": fn.__module__}
        leaf_anns: dict[str, Any] = {}

        def fresh(n: str) -> str:
            while n in taken:
                n += "_"
            taken.add(n)
            return n

        def text_of(ann: Any, tree: tuple) -> str:
            parts = tuple_parts(ann) or ()
            items = [text_of(p, t) if isinstance(t, tuple) else t for p, t in zip(parts, tree)]
            if is_namedtuple_class(ann):
                cls = f"_tuple{len(namespace)}"
                namespace[cls] = ann
                return f"{cls}({', '.join(items)})"
            return f"({', '.join(items)},)"

        trees: dict[str, tuple] = {}
        params, args = [], []
        for n in order:
            if n in spread:
                trees[n], leaves = spread_leaves(n, anns[n], fresh)
                leaf_anns.update(leaves)
                params += [leaf for leaf, _ in leaves]
                args.append(f"{n}={text_of(anns[n], trees[n])}")
            else:
                params.append(n)
                args.append(f"{n}={n}")
        text = (f"def {fn.__name__}({', '.join(params)}):\n"
                f"    return _op({', '.join(args)})\n")
        filename = f"<spread {fn.__module__}.{fn.__qualname__}>"
        wrapper = _made_function(fn.__name__, text, filename, namespace)
        wrapper.__qualname__ = fn.__qualname__
        wrapper.__annotations__ = {**{n: anns[n] for n in [*order, "return"]
                                      if n in anns and n not in spread}, **leaf_anns}
        return SpreadCall(trees, type(op)(wrapper, op.backend, **op.compile_options))

    def __call__(self, op: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        kwargs = dict(kwargs)
        sig = inspect.signature(op.fn)
        # out=, domain=, offset_provider=, backend= and tables by keyword go through
        passed = {k: kwargs.pop(k) for k in list(kwargs) if k not in sig.parameters}
        passed["backend"] = passed.get("backend") or op.backend
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            caller = call_site()
            where = f" (called at {caller})" if caller else ""
            raise ArgumentError(f"{op.fn.__name__}(): {e}{where}", op._def_loc()) from None
        bound.apply_defaults()
        flat: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if name not in self.trees:
                flat[name] = value
                continue
            leaves = spread_values(self.trees[name], value)
            if leaves is None:
                got = f"a tuple of {len(value)}" if isinstance(value, tuple) else \
                    type(value).__name__
                raise ArgumentError(f"{op.fn.__name__}(): '{name}' takes a tuple of "
                                    f"{len(self.trees[name])} (its annotation's elements), "
                                    f"got {got}", op._def_loc())
            flat.update(leaves)
        try:
            return self.wrapper(**flat, **passed)
        except TensorIRError as e:
            if e.loc is None or not str(e.loc.filename).startswith("<spread "):
                raise
            # the wrapper's made-up source: point at the function instead
            raise type(e)(e.message, op._def_loc()) from None


def part_functions(op: Any) -> list[Any] | None:
    """For a function whose return annotation is a tuple of fields over
    different dimensions, a function per part (``def f(a, b): return op(a,
    b)[i]``): a direct call without ``out=`` returns each part over its own
    domain (a tuple tensor's elements have one shape, the union of theirs).
    None for any other function."""
    fn = op.fn
    src = source_info(fn)
    has, ann = annotation_of(fn, "return", src.loc(src.node), strict=False)
    if not has or annotation_spec(ann) is not None or not spreadable(ann):
        return None
    a = src.node.args
    if a.vararg or a.kwarg or a.posonlyargs or a.kwonlyargs:
        return None
    names = [x.arg for x in a.args]
    anns = dict(getattr(fn, "__annotations__", None) or {})
    out = []
    for i, part in enumerate(tuple_parts(ann) or ()):
        text = f"def {fn.__name__}({', '.join(names)}):\n" \
               f"    return _op({', '.join(names)})[{i}]\n"
        filename = f"<part {i} of {fn.__module__}.{fn.__qualname__}>"
        wrapper = _made_function(fn.__name__, text, filename,
                                 {"_op": op, "__name__": fn.__module__})
        wrapper.__qualname__ = fn.__qualname__
        wrapper.__annotations__ = {}
        for n in names:
            if n in anns:
                try:
                    wrapper.__annotations__[n] = evaluated_annotation(fn, anns[n])
                except Exception:  # noqa: BLE001 - an unreadable annotation declares nothing
                    pass
        wrapper.__annotations__["return"] = part
        out.append(type(op)(wrapper, op.backend, **op.compile_options))
    return out


def as_annotated(value: Any, ann: Any) -> Any:
    """``value`` with the (named) tuple structure of the annotation ``ann``."""
    parts = tuple_parts(ann) if isinstance(value, tuple) else None
    if parts is None or len(parts) != len(value):
        return value
    items = [as_annotated(v, p) for v, p in zip(value, parts)]
    return ann(*items) if is_namedtuple_class(ann) else tuple(items)
