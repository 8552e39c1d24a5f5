"""The decorators: ``@function``, ``@scan_operator(…)`` and ``@program``.

``@function`` and ``@scan_operator`` mark Python functions that programs (and
other functions) call; they are inlined into the caller's Tensor IR.  A
``@program`` is translated to an :class:`ir.Program` on first use
(``prog.ir``), and calling it with NumPy arrays runs it: compiled through DaCe
by default (compiled once and cached), or with the NumPy interpreter
(``backend="interpreter"``).  Outputs are written in place.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from .. import ir
from ..errors import ArgumentError, FrontendError, SourceLoc, TensorIRError
from .annotations import TensorArg, TensorSpec, annotation_spec
from .dims import DefinitionError, Dimension, NeighborDimension

BACKENDS = ("compiled", "interpreter")


class FunctionObject:
    """A ``@function``: a Tensor IR function, inlined where it is called."""

    def __init__(self, fn: Callable):
        if not inspect.isfunction(fn):
            raise DefinitionError("@function decorates a Python function")
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any):
        raise FrontendError(f"'{self.fn.__name__}' is a Tensor IR function: call it from a "
                            "@tensorir_dace.program (or another @function), and call the "
                            "program with arrays")

    def __repr__(self) -> str:
        return f"<tensorir_dace.function {self.fn.__qualname__}>"


def function(fn: Callable | None = None):
    """Decorate a Python function written with tensor operations (``x(I + 1)``,
    ``neighbor_sum``, ``where``, …); programs call it and it is inlined."""
    if fn is None:
        return FunctionObject
    return FunctionObject(fn)


field_operator = function


class ScanOperator:
    """A ``@scan_operator``: a recurrence along one dimension.

    The body takes ``(state, a1, …)`` — the state at the previous level and
    the operands at this level, without the scan dimension — and returns the
    new state (a tuple for a tuple state).  Called with ``(a1, …)``, it gives
    the states at every level.
    """

    def __init__(self, fn: Callable, axis: Dimension, forward: bool, init: Any):
        if not inspect.isfunction(fn):
            raise DefinitionError("@scan_operator decorates a Python function")
        if not isinstance(axis, Dimension):
            raise DefinitionError("scan_operator(axis=K, …): axis must be a Dimension")
        _check_init(init)
        self.fn = fn
        self.axis = axis
        self.forward = bool(forward)
        self.init = init
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any):
        raise FrontendError(f"'{self.fn.__name__}' is a scan operator: call it from a "
                            "@tensorir_dace.program or @function")

    def __repr__(self) -> str:
        return (f"<tensorir_dace.scan_operator {self.fn.__qualname__} along "
                f"{self.axis.name}, {'forward' if self.forward else 'backward'}>")


def _check_init(init: Any) -> None:
    if isinstance(init, tuple):
        for x in init:
            _check_init(x)
        return
    if not isinstance(init, (bool, int, float, np.generic)):
        raise DefinitionError(f"scan_operator init must be a number or a tuple of numbers, got "
                        f"{init!r}")


def scan_operator(*, axis: Dimension, forward: bool = True, init: Any = 0.0):
    """``@scan_operator(axis=K, forward=True, init=(0.0, 0.0))`` on ``def f(state, …)``."""
    def deco(fn: Callable) -> ScanOperator:
        return ScanOperator(fn, axis, forward, init)
    return deco


# --------------------------------------------------------------------------- programs


class ProgramObject:
    """A ``@program``: translated to Tensor IR, runnable with arrays.

    * ``prog.ir`` — the :class:`ir.Program` (print it with ``tensorir_dace.format``);
    * ``prog.to_sdfg()`` — the DaCe SDFG; ``prog.compile()`` — the compiled
      callable (cached);
    * ``prog(a, b, out=c, alpha=0.5)`` — run it (``backend="interpreter"`` for
      the NumPy interpreter); arrays passed with :func:`with_interval` have
      explicit coordinate intervals (halos), which specialises the program.
    """

    def __init__(self, fn: Callable, backend: str = "compiled", **compile_options: Any):
        if not inspect.isfunction(fn):
            raise DefinitionError("@program decorates a Python function")
        if backend not in BACKENDS:
            raise DefinitionError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.fn = fn
        self.backend = backend
        self.compile_options = compile_options
        functools.update_wrapper(self, fn)
        self._params: list[tuple[str, TensorSpec, SourceLoc]] | None = None
        self._ir: dict[tuple, ir.Program] = {}
        self._compiled: dict[tuple, Any] = {}

    def __repr__(self) -> str:
        return f"<tensorir_dace.program {self.fn.__qualname__}>"

    # ------------------------------------------------------------------ parameters

    def _param_specs(self) -> list[tuple[str, TensorSpec, SourceLoc]]:
        if self._params is not None:
            return self._params
        from .translate import source_info
        src = source_info(self.fn)
        a = src.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise FrontendError("program parameters must be plain positional-or-keyword "
                                "parameters", src.loc(src.node))
        out = []
        anns = getattr(self.fn, "__annotations__", {})
        for arg in a.args:
            loc = src.loc(arg)
            ann = anns.get(arg.arg, None)
            if isinstance(ann, str):
                try:
                    ann = eval(ann, dict(self.fn.__globals__))
                except Exception as e:  # noqa: BLE001 - reported with the parameter's place
                    raise FrontendError(f"cannot evaluate the annotation of '{arg.arg}': {e}",
                                        loc) from None
            if ann is None:
                raise FrontendError(f"program parameter '{arg.arg}' needs a type annotation, "
                                    "e.g. Tensor[float, I, J] or float", loc)
            spec = annotation_spec(ann)
            if spec is None:
                raise FrontendError(f"the annotation of '{arg.arg}' ({ann!r}) is not a "
                                    "Tensor IR type; write Tensor[float, I, J], float, int, "
                                    "bool, …", loc)
            if ir.canonical_builtin(arg.arg) is not None:
                raise FrontendError(f"'{arg.arg}' is the name of a Tensor IR builtin; rename "
                                    "the parameter", loc)
            out.append((arg.arg, spec, loc))
        names = {n for n, _, _ in out}
        for n, spec, loc in out:
            for d in spec.dims:
                dn = d.name if isinstance(d, Dimension) else getattr(getattr(d, "dim", None),
                                                                     "name", None)
                if dn in names:
                    raise FrontendError(f"parameter '{dn}' has the name of a dimension; "
                                        "rename it", loc)
        self._params = out
        return out

    def _size_of(self) -> Callable[[Dimension], sympy.Expr]:
        names = {n for n, _, _ in self._param_specs()}

        def size_of(d: Dimension) -> sympy.Expr:
            s = f"N_{d.name}"
            while s in names:
                s += "_"
            return ir.size_symbol(s)
        return size_of

    def _params_ir(self, overrides: dict[str, dict[str, tuple[int, int]]]) -> list[ir.Param]:
        size_of = self._size_of()
        params = []
        for name, spec, loc in self._param_specs():
            try:
                t = spec.to_type(size_of)
            except (TypeError, ValueError) as e:
                raise FrontendError(f"parameter '{name}': {getattr(e, 'message', e)}", loc) from None
            if name in overrides:
                dims = []
                for d in t.dims:
                    if d.name in overrides[name]:
                        ds, de = overrides[name][d.name]
                        d = ir.Dim(d.name, d.start + ds, d.stop + de)
                    dims.append(d)
                t = ir.TensorType(t.dtype, tuple(dims))
            params.append(ir.Param(name, t, loc=loc))
        return params

    def _table_dims(self) -> dict[str, NeighborDimension]:
        return {n: spec.dims[1] for n, spec, _ in self._param_specs() if spec.is_table()}

    def _translate(self, key: tuple, overrides) -> ir.Program:
        hit = self._ir.get(key)
        if hit is not None:
            return hit
        from ..typing import check
        from .translate import translate_program
        params = self._params_ir(overrides)
        prog = translate_program(self.fn, params, self._size_of(), self._table_dims())
        try:
            check(prog)
        except TensorIRError as e:
            if e.loc is None:
                raise type(e)(e.message, prog.loc) from None
            raise
        self._ir[key] = prog
        return prog

    @property
    def ir(self) -> ir.Program:
        """The Tensor IR program (arrays starting at coordinate 0)."""
        return self._translate((), {})

    @property
    def params(self) -> tuple[ir.Param, ...]:
        return tuple(self._params_ir({}))

    def format(self, ascii: bool = False) -> str:
        from ..syntax import format as fmt
        return fmt(self.ir, ascii=ascii)

    # ------------------------------------------------------------------ running

    def to_sdfg(self, optimize: str = "none"):
        """The DaCe SDFG of the program (``optimize="default"`` for the optimised one)."""
        from ..lowering import to_sdfg
        return to_sdfg(self.ir, optimize=optimize)

    def compile(self):
        """The compiled program (a callable taking keyword arguments); cached."""
        return self._compile_key(())

    def _compile_key(self, key: tuple, overrides=None):
        hit = self._compiled.get(key)
        if hit is not None:
            return hit
        prog = self._translate(key, overrides or {})
        compiled = compile_ir(prog, **self.compile_options)
        self._compiled[key] = compiled
        return compiled

    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the program with the NumPy interpreter."""
        return self.__call__(*args, backend="interpreter", **kwargs)

    def __call__(self, *args: Any, backend: str | None = None, **kwargs: Any) -> None:
        specs = self._param_specs()
        names = [n for n, _, _ in specs]
        if "backend" in names and backend is not None:
            kwargs["backend"] = backend
            backend = None
        backend = backend or self.backend
        if backend not in BACKENDS:
            raise DefinitionError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        loc = SourceLoc(self._def_line(), 1, self._filename())
        if len(args) > len(names):
            raise ArgumentError(f"{self.__name__}() takes {len(names)} arguments but "
                                f"{len(args)} were given", loc)
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in values:
                raise ArgumentError(f"{self.__name__}() got multiple values for '{k}'", loc)
            values[k] = v
        key, overrides = self._specialize(values)
        plain = {k: (v.value if isinstance(v, TensorArg) else v) for k, v in values.items()}
        try:
            if backend == "interpreter":
                from ..interpreter import interpret
                interpret(self._translate(key, overrides), **plain)
            else:
                self._compile_key(key, overrides)(**plain)
        except ArgumentError as e:
            raise self._argument_error(e) from None

    def _filename(self) -> str:
        return inspect.getsourcefile(self.fn) or self.fn.__code__.co_filename

    def _def_line(self) -> int:
        try:
            return inspect.getsourcelines(self.fn)[1]
        except (OSError, TypeError):
            return self.fn.__code__.co_firstlineno

    def _argument_error(self, e: ArgumentError) -> ArgumentError:
        """The error with the user's parameter declaration as its place."""
        loc = None
        for name, _, ploc in self._param_specs():
            if f"'{name}'" in e.message:
                loc = ploc
                break
        loc = loc or SourceLoc(self._def_line(), 1, self._filename())
        caller = _caller()
        where = f" (called at {caller})" if caller else ""
        return ArgumentError(f"{e.message}{where}", loc)

    def _specialize(self, values: dict[str, Any]) -> tuple[tuple, dict]:
        """Specialise parameter intervals for arrays passed with with_interval."""
        wrapped = {k: v for k, v in values.items() if isinstance(v, TensorArg)}
        if not wrapped:
            return (), {}
        params = {p.name: p for p in self._params_ir({})}
        loc_of = {n: l for n, _, l in self._param_specs()}
        known: dict[sympy.Symbol, int] = {}
        for name, v in values.items():
            p = params.get(name)
            if p is None or isinstance(v, TensorArg) or not p.type.dims:
                continue
            shape = _shape(v)
            if shape is None or len(shape) != len(p.type.dims):
                continue
            for d, n in zip(p.type.dims, shape):
                _solve(d.stop - d.start, n, known)
        key = []
        overrides: dict[str, dict[str, tuple[int, int]]] = {}
        for name, ta in wrapped.items():
            p = params.get(name)
            if p is None:
                raise ArgumentError(f"{self.__name__}() has no parameter '{name}'",
                                    SourceLoc(self._def_line(), 1, self._filename()))
            shape = _shape(ta.value)
            if shape is None or len(shape) != len(p.type.dims):
                raise ArgumentError(f"'{name}' expects {len(p.type.dims)} dimensions "
                                    f"({p.type}), got shape {shape}", loc_of[name])
            dims_by_name = {d.name: (i, d) for i, d in enumerate(p.type.dims)}
            for dname, (a, b) in ta.intervals.items():
                if dname not in dims_by_name:
                    raise ArgumentError(f"with_interval: '{name}' has no dimension {dname} "
                                        f"({p.type})", loc_of[name])
                i, d = dims_by_name[dname]
                if b is None:
                    b = a + shape[i]
                if b - a != shape[i]:
                    raise ArgumentError(f"with_interval: '{name}' has {shape[i]} elements "
                                        f"along {dname} but the interval [{a}:{b}] has "
                                        f"{b - a}", loc_of[name])
                if d.stop.free_symbols - set(known):
                    _solve(d.stop, b, known)
                s0 = d.start.subs(known)
                e0 = d.stop.subs(known)
                if not (s0.is_Integer and e0.is_Integer):
                    raise ArgumentError(f"with_interval: cannot relate the interval of "
                                        f"'{name}' along {dname} ({d}) to the other "
                                        "arguments", loc_of[name])
                ds, de = a - int(s0), b - int(e0)
                overrides.setdefault(name, {})[dname] = (ds, de)
                key.append((name, dname, ds, de))
        return tuple(sorted(key)), overrides


def _shape(v: Any) -> tuple[int, ...] | None:
    while isinstance(v, tuple) and v:
        v = v[0]
    s = getattr(v, "shape", None)
    if s is None:
        try:
            s = np.shape(v)
        except Exception:  # noqa: BLE001 - not array-like: no shape
            return None
    return tuple(int(x) for x in s)


def _solve(expr: sympy.Expr, value: int, known: dict) -> None:
    expr = sympy.expand(expr.subs(known))
    free = list(expr.free_symbols)
    if len(free) != 1:
        return
    sol = sympy.solve(sympy.Eq(expr, value), free[0])
    if len(sol) == 1 and sol[0].is_Integer:
        known[free[0]] = int(sol[0])


def _caller() -> str | None:
    """file:line of the first frame outside this package (the user's call)."""
    import os
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(pkg + os.sep):
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return None


def program(fn: Callable | None = None, *, backend: str = "compiled", **compile_options: Any):
    """Decorate a Python function whose body writes its tensor parameters.

    ``@program`` or ``@program(backend="interpreter")``; extra keyword
    arguments are passed to :func:`tensorir_dace.compile`.
    """
    def deco(f: Callable) -> ProgramObject:
        return ProgramObject(f, backend=backend, **compile_options)
    if fn is None:
        return deco
    return deco(fn)


def compile_ir(prog: ir.Program, **options: Any):
    """Compile an IR program: ``tensorir_dace.compile`` where available."""
    import tensorir_dace as tir
    try:
        comp = tir.compile
    except AttributeError:
        comp = None
    if comp is not None:
        return comp(prog, **options)
    from ..lowering import lower_program
    from ..runtime.compiled import SDFGCallable
    lowered = lower_program(prog, optimize=options.get("optimize", "default"))
    return SDFGCallable.from_sdfg(lowered.sdfg, lowered.signature)
