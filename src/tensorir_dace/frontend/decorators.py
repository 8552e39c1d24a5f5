"""The decorators: ``@function``, ``@scan_operator(…)`` and ``@program``.

``@function`` and ``@scan_operator`` mark Python functions that programs (and
other functions) call; they are inlined into the caller's Tensor IR.  A
``@program`` is translated to an :class:`ir.Program` on first use
(``prog.ir``), and calling it with NumPy arrays runs it: compiled through DaCe
by default (compiled once and cached), or with the NumPy interpreter
(``backend="interpreter"``).  Outputs are written in place.

Parameters without annotation (or annotated ``Tensor`` / ``Tensor[T, ...]``)
are rank-generic: programs and functions are specialised for the dimensions,
halos and dtypes of their arguments (not their sizes), once per
specialisation (see :mod:`.specialize`).  A ``@function`` called directly with
arrays returns its value as a new array, JAX-style.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..errors import (
    ArgumentError,
    CoverageError,
    FrontendError,
    ShapeMismatchError,
    SourceLoc,
    TensorIRError,
    TypeCheckError,
)
from ..interop import SDFGConvertible
from ..ir import Param, Program
from ..lazy import lazy_module
from ..tracebacks import api_boundary
from . import by_source
from .annotations import (
    GenericSpec,
    TensorArg,
    TensorSpec,
    annotation_spec,
    evaluated_annotation,
    generic_spec,
)
from .callables import InlinedFunction, ProgramDefinition, ScanOperator
from .connectivities import (
    LocalOffset,
    TablesCall,
    bind_local_offsets,
    declared_tables,
    table_arguments,
    used_connectivities,
    used_strided,
)
from .dims import DefinitionError, Dimension, LocalDimension
from .names import PythonNamedCall, ir_names, python_message
from .source import source_info, user_frame
from .specialize import (
    NO_DEFAULT,
    CacheInfo,
    ParamInfo,
    ParamSig,
    Specialization,
    SpecializationCache,
)

if TYPE_CHECKING:
    import sympy

    from . import analysis
    from .analysis import Analysis, Specializer
else:
    sympy = lazy_module("sympy")
    analysis = lazy_module(f"{__package__}.analysis")    # the translator's first stage

BACKENDS = ("compiled", "interpreter")


class _Specialized:
    """What ``@program`` and ``@function`` objects share: parameters, the
    specialisation cache and its inspection."""

    fn: Callable
    backend: str
    compile_options: dict[str, Any]
    _cache: SpecializationCache
    _infos: list[ParamInfo] | None
    _spz: Specializer | None
    _tables: dict[str, Any] = {}     # declared connectivities used: trailing table parameters
    _strided: dict[str, Any] = {}    # strided offsets used: offset_provider entries checked
    # GT4Py local dimensions or offsets into them left to bind (None: not looked at yet)
    _locals_pending: bool | None = None

    def _setup(self, fn: Callable, decorator: str, backend: Any,
               compile_options: dict[str, Any]) -> None:
        if not inspect.isfunction(fn):
            raise DefinitionError(f"@{decorator} decorates a Python function")
        backend = _gt4py_backend(backend)
        if backend not in BACKENDS:
            raise DefinitionError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        compile_options = _check_compile_options(decorator, compile_options)
        self.fn = fn
        self.backend = backend
        self.compile_options = compile_options
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]  # subclasses are callable
        self._init_cache()

    def _init_cache(self) -> None:
        self._infos = None
        self._spz = None
        self._cache = SpecializationCache(self.fn.__name__)
        # compiled programs found by the Python source, by argument description
        # (None: translated in this process, the specialisations serve it)
        self._by_source: dict[tuple, Any] = {}
        self._serving = False     # some call was served that way
        self._rank_generic: bool | None = None
        # recorded for lookups by the source: the function's fingerprint per
        # specialisation translated here, and the descriptions stored
        self._fingerprints: dict[tuple, Any] = {}
        self._recorded: set[tuple] = set()
        # direct calls with domain=: specialisations translated for the domain
        # only, by argument description (see :meth:`_lookup`)
        self._fallen_back: dict[Any, Specialization] = {}

    # ------------------------------------------------------------------ inspection

    def specializations(self) -> list[str]:
        """The keys of the cached specialisations, readable, oldest first: each
        parameter with its type (sizes symbolic: ``N_I``), scalar type or static
        value; for a function called directly, ``-> result type``."""
        return [s.signature() for s in self._cache.entries()]

    def cache_info(self) -> CacheInfo:
        """Counters: ``hits``, ``misses``, ``specializations``, ``compiles`` (the C++
        compiler ran) and ``loads`` (binary loaded from the on-disk compile cache)."""
        return self._cache.info()

    def clear_cache(self) -> None:
        """Forget the specialisations of this object (the on-disk compile cache stays)."""
        self._cache.clear()
        self._by_source.clear()
        self._fallen_back.clear()
        self._serving = False
        self._fingerprints.clear()
        self._recorded.clear()

    # ------------------------------------------------------------------ by the source

    _by_source_kind: tuple = ()     # ends the argument description (a function's marker)

    def _described(self, args: tuple, kwargs: dict[str, Any], extra: analysis.Extra = None
                   ) -> tuple[dict[str, Any], tuple] | None:
        """The arguments by name (arrays wrapped by ``with_dims``/``with_interval``
        unwrapped, as the compiled program takes them) and as
        :func:`.by_source.describe` sees them (with the extra lengths of arrays
        longer than others over their dimensions; ``extra``: ``out=`` of a
        direct call), or None where the call cannot be looked up by the source."""
        code = self.fn.__code__
        names = code.co_varnames[:code.co_argcount]
        values = dict(zip(names, args))
        if len(args) > len(names) or any(k in values for k in kwargs):
            return None
        values.update(kwargs)
        expected = set(names)
        defaulted: set[str] = set()
        if values.keys() != expected:     # tables of declared connectivities by keyword, defaults
            infos = self._param_infos()
            expected |= set(self._tables)
            defaulted = {p.name for p in infos if p.default is not NO_DEFAULT} - values.keys()
        if values.keys() | defaulted != expected or {"backend", "offset_provider"} & values.keys():
            return None
        if self._rank_generic is None:
            self._rank_generic = by_source.is_rank_generic(self.fn)
        described = by_source.describe(values, self._rank_generic, tuple(defaulted))
        if described is None:
            return None
        longer = self._specializer().length_offsets(values, extra)
        if longer:     # arrays of different lengths: another specialisation
            described += (("lengths", tuple(sorted((n, tuple(sorted(d.items())))
                                                   for n, d in longer.items()))),)
        out_longer = self._specializer().out_length_offsets(values, extra)
        if out_longer:     # out= longer than the inputs: another program
            described += (("out lengths", tuple(sorted(out_longer.items()))),)
        plain = {k: (v.value if type(v) is TensorArg else v) for k, v in values.items()}
        return plain, described + self._by_source_kind

    def _found_by_source(self, described: tuple) -> tuple[Any, dict[str, Any]] | None:
        """The compiled program of calls so described and its stored entry
        (:func:`.by_source.load_entry`), found by the Python source without
        translating, or None."""
        found = self._by_source.get(described, False)
        if found is False:     # first call so described in this process: look it up
            key = by_source.call_key(self.fn, described, self.compile_options)
            entry = None if key is None else by_source.load_entry(
                key, self.compile_options.get("cache_dir"))
            found = None if entry is None else (compile_ir(entry["ir"], **self.compile_options),
                                                entry)
            self._by_source[described] = found
            if found is None:
                return None
            self._cache.misses += 1
            self._cache.loads += 1
            self._cache.by_source += 1
            self._serving = True
        elif found is not None:
            self._cache.hits += 1
        return found

    def _store_by_source(self, spec: Specialization, new: bool, described: Callable[[], Any],
                         served: Specialization, **extra: Any) -> None:
        """Record the program of ``served`` that served a call for lookups by
        the source, under the call's description (``described()``: None, or as
        :meth:`_described` gives it), once per description in this process:
        a later call that a specialisation translated earlier serves (a NumPy
        scalar where a float came first) is recorded too.  The key holds the
        function as it was when ``spec`` was translated here (``new``: now),
        so a global changed since is a miss in a new process, never a stale
        program.  The later calls so described in this process are served by
        the source too, from memory: they skip the argument analysis, which
        costs a rank-generic program far more than the call."""
        prog = served.program
        if new:
            self._fingerprints[spec.key] = by_source.function_fingerprint(self.fn)
        fingerprint = self._fingerprints.get(spec.key)
        if fingerprint is None:
            return
        if len(self._recorded) >= _MAX_RECORDED:
            return
        found = described()
        if found is None or (found[1], prog.name) in self._recorded:
            return
        self._recorded.add((found[1], prog.name))
        key = by_source.call_key(self.fn, found[1], self.compile_options, fingerprint)
        if key is not None:
            from ..syntax import format as format_program
            if spec.names:
                extra["names"] = spec.names
            text = format_program(prog)
            by_source.store_text(key, text, self.compile_options.get("cache_dir"), **extra)
            if served.compiled is not None:
                self._by_source[found[1]] = (served.compiled, {"ir": text, **extra})
                self._serving = True

    def _provided(self, kwargs: dict[str, Any], offset_provider: Any) -> dict[str, Any] | None:
        """``kwargs`` with the tables of ``offset_provider`` merged in as the
        translated path merges them (None: a mistake that path reports)."""
        self._param_infos()
        if not self._tables and not self._strided:
            return None
        try:
            return table_arguments(kwargs, offset_provider, self._tables, self.fn.__name__,
                                   strided=self._strided)
        except ArgumentError:
            return None

    def _bind_locals(self, args: tuple, kwargs: Mapping[str, Any], provider: Any) -> None:
        """GT4Py's local dimensions: resolve the offsets into them (table or
        strided) and their neighbour counts from this call's tables and
        arguments (see :class:`.LocalDimension`); nothing once all are bound."""
        if self._locals_pending is False:
            return
        if not LocalDimension.made:
            # a local dimension the function uses exists before its first call
            self._locals_pending = False
            return
        offsets = used_connectivities(self.fn, LocalOffset)
        before = [o.resolved for o in offsets]
        left = bind_local_offsets(offsets, kwargs, provider, self.fn.__name__, self._def_loc())
        if any(o.resolved is not was for o, was in zip(offsets, before)):
            self._infos = None          # the tables it takes changed
            self._spz = None
        for k, p in enumerate(self._param_infos()):
            dims = getattr(p.spec, "dims", None) or ()
            for axis, d in enumerate(dims):
                if not isinstance(d, LocalDimension) or d.bound:
                    continue
                value = kwargs.get(p.name, args[k] if k < len(args) else None)
                shape = getattr(getattr(value, "value", value), "shape", None)
                if shape is not None and len(shape) == len(dims):
                    d.bind(int(shape[axis]), f"{self.fn.__name__}(): the argument '{p.name}'")
                else:
                    left = True
        self._locals_pending = left

    # ------------------------------------------------------------------ helpers

    def _filename(self) -> str:
        return inspect.getsourcefile(self.fn) or self.fn.__code__.co_filename

    def _def_line(self) -> int:
        try:
            return inspect.getsourcelines(self.fn)[1]
        except (OSError, TypeError):
            return self.fn.__code__.co_firstlineno

    def _def_loc(self) -> SourceLoc:
        return SourceLoc(self._def_line(), 1, self._filename())

    def _argument_error(self, e: ArgumentError, names: dict[str, str] | None = None
                        ) -> ArgumentError:
        """The error with the user's parameter declaration as its place (``names``:
        the renamed parameters, {Python name: IR name}, named as in Python)."""
        message = python_message(e.message, names or {})
        loc = None
        for info in self._param_infos():
            if f"'{info.name}'" in message:
                loc = info.loc
                break
        loc = loc or self._def_loc()
        caller = _caller()
        where = f" (called at {caller})" if caller else ""
        return ArgumentError(f"{message}{where}", loc)

    def _param_infos(self) -> list[ParamInfo]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _size_of(self) -> Callable[[Dimension], sympy.Expr]:
        names = {p.name for p in self._param_infos()} | self._reserved_names()

        def size_of(d: Dimension) -> sympy.Expr:
            s = f"N_{d.name}"
            while s in names:
                s += "_"
            return ir.size_symbol(s)
        return size_of

    def _reserved_names(self) -> set[str]:
        return set()

    def _annotated_type(self, info: ParamInfo) -> ir.TensorType:
        assert isinstance(info.spec, TensorSpec)
        try:
            return info.spec.to_type(self._size_of())
        except (TypeError, ValueError) as e:
            raise FrontendError(f"parameter '{info.name}': {getattr(e, 'message', e)}",
                                info.loc) from None

    def _specializer(self) -> Specializer:
        if self._spz is None:
            self._spz = analysis.Specializer(self.fn.__name__, self._param_infos(), self._size_of(),
                                    self._annotated_type, _caller)
        return self._spz

    def with_backend(self, backend: Any) -> Any:
        """GT4Py's ``with_backend``: this program or function run by ``backend``
        by default: ``"compiled"`` or ``"interpreter"``; ``None`` (GT4Py's
        embedded execution) is the interpreter, a GT4Py backend object the
        compiled code.  The copy shares the specialisations and binaries."""
        new = copy.copy(self)
        new.backend = self._backend(_gt4py_backend(backend))
        return new

    def with_grid_type(self, grid_type: Any) -> Any:
        """GT4Py's ``with_grid_type``: accepted, without effect (as the
        decorators' ``grid_type=``: tables and offsets say what a grid is)."""
        return self

    def _backend(self, backend: str | None) -> str:
        backend = backend or self.backend
        if backend not in BACKENDS:
            raise DefinitionError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        return backend

    def _lookup(self, values: dict[str, Any], verb: str, extra: analysis.Extra = None,
                fallback: Callable[[tuple[ParamSig, ...], Analysis | None], Specialization]
                | None = None) -> tuple[Specialization, Analysis | None, dict[str, Any]]:
        """The specialisation for arguments ``values``; the values to pass
        (``extra``: ``out=`` of a direct call, see :meth:`.Specializer.length_offsets`).
        ``fallback(key, analysis)``: the specialisation where translating one
        fails (a direct call's ``domain=`` may leave out what the error is
        about), made once per argument description; the error stands where
        it fails too."""
        sp = self._specializer()
        a: Analysis | None = None
        if not sp.generic and len(values) == len(sp.params) and \
                not any(isinstance(v, TensorArg) for v in values.values()) and \
                not sp.length_offsets(values, extra):
            raw, plain = sp.default_raw, values
            if fallback is None:
                return self._default_spec(verb), None, values
        else:
            known = {p.name for p in sp.params}
            for k in values:
                if k not in known:
                    raise sp.error(None, f"got an unexpected argument '{k}'; the parameters "
                                         "are " + ", ".join(sorted(known)))
            a = sp.analyse(values, extra)
            raw, plain = a.raw, a.plain
        name = self.fn.__name__
        hit = self._fallen_back.get(raw) if fallback is not None else None
        if hit is not None:
            if a is not None:
                analysis.check_named(name, hit, a)
            self._cache.hits += 1
            return hit, a, plain
        failed: list[TensorIRError] = []

        def make(key: tuple[ParamSig, ...], b: Analysis) -> Specialization:
            try:
                return self._make_noted(key, b)
            except TensorIRError as e:
                failed.append(e)
                raise
        try:
            if a is None:
                b = self._default_analysis()
                spec = self._cache.lookup(raw, lambda: sp.key(b), lambda key: make(key, b),
                                          verb)
            else:
                b = a
                spec = self._cache.lookup(raw, lambda: sp.key(b), lambda key: make(key, b),
                                          verb, validate=lambda s: analysis.check_named(
                                              name, s, b))
        except TensorIRError:
            if fallback is None or not failed:
                raise
            spec = fallback(sp.key(b), a)
            if a is not None:
                analysis.check_named(name, spec, a)
            self._cache.misses += 1
            self._fallen_back[raw] = spec
        return spec, a, plain

    def _make_noted(self, key: tuple[ParamSig, ...], a: Analysis) -> Specialization:
        """:meth:`_make`; an error of a call whose arrays differ in length says
        which are longer (their intervals follow from that)."""
        with _lengths_noted(a):
            return self._make(key, a)

    def _default_spec(self, verb: str) -> Specialization:
        """The specialisation of the annotations as written (no call-time intervals)."""
        sp = self._specializer()
        a = self._default_analysis()
        return self._cache.lookup(sp.default_raw, lambda: sp.key(a),
                                  lambda key: self._make(key, a), verb)

    def _default_analysis(self) -> Analysis:
        sp = self._specializer()
        return analysis.Analysis(sp.default_raw, {}, {}, [],
                                 {p.name: ("A",) for p in sp.params}, {})

    def _make(self, key: tuple[ParamSig, ...], a: Analysis) -> Specialization:  # pragma: no cover
        raise NotImplementedError

    def _ir_params(self, key: tuple[ParamSig, ...]) -> tuple[list[ir.Param], dict[str, Any]]:
        """The IR parameters of ``key`` (named as :meth:`_renamed` says) and the
        static values by Python name."""
        loc_of = {p.name: p.loc for p in self._param_infos()}
        names = self._renamed(key)
        params = [ir.Param(names.get(s.name, s.name), s.type, loc=loc_of[s.name]) for s in key
                  if s.kind in ("tensor", "scalar") and s.type is not None]
        static = {s.name: s.static for s in key if s.kind == "static"}
        return params, static

    def _renamed(self, key: tuple[ParamSig, ...]) -> dict[str, str]:
        """The parameters of ``key`` whose Python names cannot be IR names (a
        builtin's, a dimension's …): {Python name: IR name} (see :mod:`.names`)."""
        return ir_names([s.name for s in key], [s.type for s in key], self._reserved_names())

    def _compile_fn(self) -> Callable[[ir.Program], Any]:
        options = self.compile_options
        return lambda prog: compile_ir(prog, **options)

    def _run(self, spec: Specialization, backend: str, new: bool, plain: dict[str, Any]) -> None:
        """Run ``spec`` on arguments ``plain`` (by Python name)."""
        values = spec.ir_values(plain)
        try:
            if backend == "interpreter":
                from ..interpreter import interpret
                interpret(spec.program, **values)
            else:
                compiled = self._cache.compiled(spec, self._compile_fn(),
                                                translated_before=not new)
                compiled(**values)
        except ArgumentError as e:
            raise self._argument_error(e, spec.names) from None
        spec.calls += 1


@contextlib.contextmanager
def _lengths_noted(a: Analysis | None) -> Iterator[None]:
    """A type error of a call whose arrays differ in length (see
    :meth:`.Specializer.length_offsets`) as a :class:`ShapeMismatchError` that
    says which arrays are longer: their intervals follow from the lengths."""
    try:
        yield
    except TypeCheckError as e:
        if a is None or not a.longer:
            raise
        raise ShapeMismatchError(e.message + a.lengths_note(), e.loc) from None


#: What the call-time check of a ``concat_where`` gap beside a runtime
#: ``domain=`` bound says (see ``builtin_calls._pieces_in_domain``).
_GAP_CHECK = "between the pieces (no value is defined there)"

#: Descriptions recorded for lookups by the source per decorated object and
#: process (a rank-generic one's include shapes: a sweep over sizes stops here).
_MAX_RECORDED = 256

# Tensor IR spellings in checker messages, as written in Python.
_PYTHON_SPELLING = {"if(c, a, b)": "where(c, a, b)"}


def _scalar_annotation_hint(fn: Callable | None, message: str) -> str:
    """For a mixed-precision error (``message`` names the two element types):
    scalars annotated ``float``/``int`` are 64-bit."""
    kinds = {float: "float", int: "int", "float": "float", "int": "int"}
    anns = getattr(fn, "__annotations__", None) or {}
    fixed = [(name, kinds[a]) for name, a in anns.items()
             if name != "return" and isinstance(a, (type, str)) and a in kinds
             and f"{kinds[a]}64" in message and f"{kinds[a]}32" in message]
    if not fixed:
        return ""
    name, kind = fixed[0]
    return (f"; the annotation '{name}: {kind}' fixes {kind}64 (as in GT4Py): annotate "
            f"'{name}: {kind}32' or leave '{name}' unannotated to take the arrays' type")


@contextlib.contextmanager
def _python_messages(fn: Callable, names: dict[str, str] | None = None) -> Iterator[None]:
    """Errors of translating and checking ``fn``, worded for Python source
    (``names``: the renamed parameters, named as in Python)."""
    try:
        yield
    except TensorIRError as e:
        message = python_message(e.message, names or {})
        for tir_text, python_text in _PYTHON_SPELLING.items():
            message = message.replace(tir_text, python_text)
        if "one element type" in message:
            message += _scalar_annotation_hint(fn, message)
        if message != e.message:
            raise type(e)(message, e.loc) from None
        raise


def _checked(prog: ir.Program) -> ir.Program:
    from ..typing import check
    try:
        check(prog)
    except TensorIRError as e:
        if e.loc is None:
            raise type(e)(e.message, prog.loc) from None
        raise
    return prog


def _gt4py_backend(backend: Any) -> Any:
    """GT4Py's ``backend=``: None (embedded execution) is the interpreter, a
    backend object the compiled code; a name stays as given."""
    if backend is None:
        return "interpreter"
    return backend if isinstance(backend, str) else "compiled"


def _annotation(fn: Callable, name: str, loc: SourceLoc, strict: bool) -> tuple[bool, Any]:
    anns = getattr(fn, "__annotations__", {}) or {}
    if name not in anns:
        return False, None
    try:
        return True, evaluated_annotation(fn, anns[name])
    except Exception as e:  # noqa: BLE001 - reported with the parameter's place
        if not strict:
            return False, None
        raise FrontendError(f"cannot evaluate the annotation of '{name}': {e}", loc) from None


class FunctionObject(_Specialized, InlinedFunction):
    """A ``@function``: a Tensor IR function, inlined where it is called.

    Called directly with arrays (outside a program), it runs JAX-style: it is
    specialised for the arguments' dimensions, halos and dtypes, compiled once
    per specialisation, and returns a new array holding its value over its
    result domain (a tuple of arrays for a tuple result).  Element 0 of the
    result is the first point of that domain: for ``lap(x)`` with ``x`` over
    ``I[0:N]`` and shifts ``I ± 1``, the domain is ``I[1:N-1]`` and ``out[k]``
    is the value at ``x``'s element ``k + 1`` (like NumPy's ``x[1:-1]``).
    """

    def __init__(self, fn: Callable, backend: str = "compiled", **compile_options: Any):
        self._setup(fn, "function", backend, compile_options)
        self._result: str | None = None
        self._sig: inspect.Signature | None = None
        self._into: dict[tuple, tuple[Specialization, dict]] = {}
        self._out_dims: dict[int, tuple[str, ...]] | None = None

    def __repr__(self) -> str:
        return f"<tensorir_dace.function {self.fn.__qualname__}>"

    def _param_infos(self) -> list[ParamInfo]:
        if self._infos is not None:
            return self._infos
        src = source_info(self.fn)
        a = src.node.args
        if a.vararg or a.kwarg:
            raise FrontendError(f"'{self.fn.__name__}' has *args or **kwargs parameters and "
                                "cannot be called directly", src.loc(src.node))
        sig = inspect.signature(self.fn)
        out = []
        for arg in a.posonlyargs + a.args + a.kwonlyargs:
            loc = src.loc(arg)
            has, ann = _annotation(self.fn, arg.arg, loc, strict=False)
            spec: TensorSpec | GenericSpec | None = annotation_spec(ann) if has else None
            if spec is None:
                spec = (generic_spec(ann) if has else None) or GenericSpec()
            default = sig.parameters[arg.arg].default
            out.append(ParamInfo(arg.arg, spec, loc,
                                 NO_DEFAULT if default is inspect.Parameter.empty else default))
        self._tables = declared_tables(self.fn, [p.name for p in out])
        self._strided = used_strided(self.fn)
        out += [ParamInfo(c.name, c.spec(), self._def_loc()) for c in self._tables.values()]
        self._infos = out
        return out

    def _result_name(self) -> str:
        if self._result is None:
            names = {p.name for p in self._param_infos()}
            r = "out"
            while r in names:
                r += "_"
            self._result = r
        return self._result

    def _reserved_names(self) -> set[str]:
        return {self._result_name()}

    def _make(self, key: tuple[ParamSig, ...], a: Analysis) -> Specialization:
        params, static = self._ir_params(key)
        names = self._renamed(key)
        report: dict[str, Any] = {}
        sp = self._specializer()
        from .functions import translate_call
        with _python_messages(self.fn, names):
            prog = _checked(translate_call(self.fn, params, sp.table_dims(a),
                                           self._result_name(), static=static,
                                           rank_generic=sp.generic, report=report,
                                           names=names))
        return Specialization(self.fn.__name__, key, prog, result=prog.params[-1],
                              dropped=report.get("dropped", {}), names=names)

    @api_boundary
    def specialize(self, *args: Any, **kwargs: Any) -> Specialization:
        """The specialisation for these arguments (translated and checked, not run):
        ``.ir`` is its Tensor IR program (the result is its last parameter),
        ``.key`` its key, ``.to_sdfg()`` its SDFG."""
        if "backend" not in self._names():
            kwargs.pop("backend", None)
        values = self._bind(args, kwargs)
        return self._lookup(values, "translating")[0]

    def _names(self) -> list[str]:
        return [p.name for p in self._param_infos()]

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self._sig is None:
            self._sig = inspect.signature(self.fn)
        kwargs = dict(kwargs)
        # GT4Py passes offset_provider= to every call (Cartesian offsets too)
        provider = kwargs.pop("offset_provider", None) \
            if "offset_provider" not in self._sig.parameters else None
        self._bind_locals(args, kwargs, provider)
        self._param_infos()
        tables = {k: kwargs.pop(k) for k in list(kwargs) if k in self._tables}
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            caller = _caller()
            where = f" (called at {caller})" if caller else ""
            raise ArgumentError(f"{self.fn.__name__}(): {e}{where}", self._def_loc()) from None
        return {**bound.arguments,
                **table_arguments(tables, provider, self._tables, self.fn.__name__,
                                  self._def_loc(), strided=self._strided)}

    _by_source_kind = ("function",)

    def _out_extra(self, into: dict[str, Any]) -> analysis.Extra:
        """``out=`` as :meth:`.Specializer.length_offsets` sees it: its shape over
        the dimensions of the return annotation (else of the first annotated
        parameter of its rank); None for a tuple or where they are unknown."""
        out = into.get("out")
        shape = getattr(out, "shape", None)
        if shape is None or type(out) is tuple:
            return None
        if self._out_dims is None:
            has, ann = _annotation(self.fn, "return", self._def_loc(), strict=False)
            spec = annotation_spec(ann) if has else None
            specs = [spec] if isinstance(spec, TensorSpec) else \
                [p.spec for p in self._param_infos() if isinstance(p.spec, TensorSpec)]
            self._out_dims = {len(s.dims): tuple(d.name if analysis.bare_dimension(d) else ""
                                                 for d in s.dims) for s in reversed(specs)}
        names = self._out_dims.get(len(shape))
        return None if names is None else (names, tuple(shape))

    def _call_description(self, args: tuple, kwargs: dict[str, Any], into: dict[str, Any]
                          ) -> tuple[dict[str, Any], tuple] | None:
        """The arguments by name (tables of ``offset_provider=`` merged in) and the
        call as the key sees it, ``out=`` and ``domain=`` included; None where
        the call cannot be looked up by the source."""
        if "offset_provider" in kwargs and "offset_provider" not in self._names():
            rest = dict(kwargs)
            provided = self._provided(rest, rest.pop("offset_provider"))
            if provided is None:
                return None
            kwargs = provided
        found = self._described(args, kwargs, self._out_extra(into))
        if found is None or not into:
            return found
        extra = by_source.describe_into(into.get("out"), into.get("domain"),
                                        bool(self._rank_generic))
        return None if extra is None else (found[0], found[1] + extra)

    def _call_by_source(self, args: tuple, kwargs: dict[str, Any], into: dict[str, Any]
                        ) -> Any:
        """The result of a direct call whose compiled program is found by the
        Python source (see :mod:`.by_source`), without translating: ``out=``,
        with ``domain=``'s bounds as the program's bound parameters, or a new
        array with the shape its call plan gives for the arguments.  None:
        translate (not found, no plan, or a mistake to report)."""
        found = self._call_description(args, kwargs, into)
        hit = None if found is None else self._found_by_source(found[1])
        if found is None or hit is None:
            return None
        values, (compiled, entry) = found[0], hit
        given = by_source.ir_arguments(values, compiled.param_names, entry)
        if into:
            name, bounds = entry.get("result"), entry.get("bounds")
            if not isinstance(name, str) or not isinstance(bounds, dict):
                return None
            result = into["out"]
            for dim, pair in (into.get("domain") or {}).items():
                lo, hi = bounds[dim.name]
                given[lo], given[hi] = pair
        else:
            shape_of = getattr(compiled._callable, "shape_of", None)
            name = compiled.param_names[-1]
            shape = None if shape_of is None else shape_of(name, given)
            if shape is None:
                return None
            dtype = next(lf["dtype"] for lf in compiled._callable.plan["leaves"]
                         if lf["param"] == name)
            result = np.empty(shape, dtype=dtype)
        try:
            compiled(**given, **{name: result})
        except ArgumentError:          # the translated path says it at the parameter
            return None
        return result

    @api_boundary
    def __call__(self, /, *args: Any, **kwargs: Any):
        backend = None
        if "backend" in kwargs and "backend" not in self._names():
            backend = kwargs.pop("backend")
        plain_call = backend is None and self.backend == "compiled"
        backend = self._backend(backend)
        into: dict[str, Any] = {k: kwargs.pop(k) for k in ("out", "domain")
                if k in kwargs and k not in self._names()}
        if "domain" in into and "out" not in into:
            raise ArgumentError(f"{self.fn.__name__}(): domain= needs out=, the array to "
                                "write", self._def_loc())
        if self._locals_pending is not False:
            self._bind_locals(args, kwargs, kwargs.get("offset_provider"))
        # as for programs: looked up by the source until one is translated here
        if plain_call and (self._serving or not len(self._cache)):
            result = self._call_by_source(args, kwargs, into)
            if result is not None:
                return result
        values = self._bind(args, kwargs)
        misses = self._cache.misses
        spec, a, plain = self._lookup(values, "compiling" if backend == "compiled"
                                      else "translating", self._out_extra(into),
                                      fallback=self._for_domain(into.get("domain")))
        new = self._cache.misses != misses
        assert spec.result is not None
        if into:
            record = (lambda: self._call_description(args, kwargs, into)) if plain_call \
                else None
            longer = self._specializer().out_length_offsets(values, self._out_extra(into))
            return self._call_into(spec, a, backend, plain, into["out"], into.get("domain"),
                                   record, new, longer=longer)
        symbols = a.sizes if a is not None else {}
        if not spec.result_symbols() <= symbols.keys():
            from ..arguments import bind_arguments
            try:
                symbols = bind_arguments(spec.input_params, spec.ir_values(plain),
                                         where=f"function '{self.fn.__name__}'").symbols
            except ArgumentError as e:
                raise self._argument_error(e, spec.names) from None
        result = _allocate(spec.result.type.dtype, spec.result_shape(symbols))
        plain = dict(plain)
        plain[spec.result.name] = result
        self._run(spec, backend, new, plain)
        if plain_call:
            self._store_by_source(spec, new, lambda: self._call_description(args, kwargs, into),
                                  spec)
        return result


    def _call_into(self, spec: Specialization, a: Analysis | None, backend: str,
                   plain: dict[str, Any], out: Any, domain: Any,
                   record: Callable[[], tuple | None] | None = None,
                   translated: bool = False, path: tuple[int, ...] = (),
                   longer: dict[str, int] | None = None) -> Any:
        """``f(args, out=o, domain={D: (start, stop), …})``: write the value into ``o``
        on those coordinates (a dimension left out: its whole interval); one
        program per specialisation and set of dimensions, whatever the bounds.
        ``record``: the call's description for lookups by the source (the
        program is recorded under it; ``translated``: ``spec`` was translated
        by this call).  A tuple of domains (GT4Py's, one per output of
        ``out=(a, b)``, nested as ``out=`` is) writes each output on its own;
        ``path``: the part of the value ``out`` takes; ``longer``: how much longer
        ``out`` is than the inputs over a dimension (half levels written from
        full levels)."""
        if isinstance(domain, (tuple, list)):
            return self._call_into_parts(spec, a, backend, plain, out,
                                         self._domain_parts(out, domain, path))
        domain = {} if domain is None else domain
        assert spec.result is not None   # only a function specialisation has ``out=``
        result_dims = {d.name for d in spec.result.type.dims}
        if not isinstance(domain, dict) or not all(
                isinstance(k, Dimension) and k.name in result_dims for k in domain):
            raise ArgumentError(f"{self.fn.__name__}(): domain= takes a dict {{Dim: (start, "
                                f"stop)}} over the result's dimensions "
                                f"({', '.join(sorted(result_dims))}), got {domain!r}",
                                self._def_loc())
        names = tuple(sorted(k.name for k in domain))
        longer = longer or {}
        into_key = (spec.key, names, path, tuple(sorted(longer.items())))
        new = into_key not in self._into
        derived, bounds = self._into_program(spec, a, names, path, longer, into_key)
        for dim, pair in domain.items():
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ArgumentError(f"{self.fn.__name__}(): domain={{{dim.name}: (start, "
                                    f"stop)}} takes a pair of coordinates, got {pair!r}",
                                    self._def_loc())

        result = spec.result.name

        def given(bounds: dict[str, tuple[str, str]]) -> dict[str, Any]:
            values = dict(plain)
            values[result] = out
            for dim, pair in domain.items():
                for name, v in zip(bounds[dim.name], pair):
                    values[name] = v
            return values
        try:
            self._run(derived, backend, new, given(bounds))
        except ArgumentError as e:
            # a concat_where gap that the program takes to lie below a domain whose
            # bounds are both parameters, refused at the call before anything ran:
            # the domain may lie below it (the program that takes it so)
            if _GAP_CHECK not in e.message:
                raise
            other_key = into_key + ("below the gap",)
            new = other_key not in self._into
            other, other_bounds = self._into_program(spec, a, names, path, longer, other_key,
                                                     below_stop=True)
            if [c.reason for c in other.program.constraints] == \
                    [c.reason for c in derived.program.constraints]:
                raise
            try:
                self._run(other, backend, new, given(other_bounds))
            except ArgumentError as e2:
                # the domain meets the gap: the error of the bound nearer to allowed
                far = _gap_miss(derived, given(bounds))
                raise (e2 if _gap_miss(other, given(other_bounds)) < far else e) from None
            derived, bounds = other, other_bounds
        if record is not None:
            self._store_by_source(spec, translated, record, derived,
                                  result=spec.result.name, bounds=bounds)
        return out

    def _into_program(self, spec: Specialization, a: Analysis | None, names: tuple[str, ...],
                      path: tuple[int, ...], longer: dict[str, int], into_key: tuple,
                      below_stop: bool = False
                      ) -> tuple[Specialization, dict[str, tuple[str, str]]]:
        """The program :meth:`_call_into` runs (made once per ``into_key``) and
        per dimension of the domain its bound parameters; ``below_stop``: a
        ``concat_where`` gap is taken to lie above the domain where both its
        bounds are parameters (see :func:`.translate_call`)."""
        hit = self._into.get(into_key)
        if hit is None:
            assert spec.result is not None   # only a function specialisation has ``out=``
            from .runtime_bounds import into_program
            prog, result, given = self._in_domain(spec, a, names, path, below_stop)
            prog, bounds = into_program(prog, result, names, given, longer=longer)
            with _lengths_noted(a), _python_messages(self.fn, spec.names):
                _checked(prog)
            hit = self._into[into_key] = (
                Specialization(self.fn.__name__, spec.key, prog, names=spec.names), bounds)
        return hit

    def _call_into_parts(self, spec: Specialization, a: Analysis | None, backend: str,
                         plain: dict[str, Any], out: Any,
                         parts: list[tuple[tuple[int, ...], Any, dict]]) -> Any:
        """GT4Py's tuple of domains (``parts``: per output, the path of its part of
        the value, the output and its dict): each output written on its own
        domain, and, as in a program body (GT4Py's domain inference), each scan
        runs over the union of the domains of the outputs that read it.  One
        program per output, each taking the bounds of all the domains."""
        assert spec.result is not None   # only a function specialisation has ``out=``
        result_dims = {d.name for d in spec.result.type.dims}
        for _, _, d in parts:
            if not isinstance(d, dict) or not all(
                    isinstance(k, Dimension) and k.name in result_dims for k in d):
                raise ArgumentError(f"{self.fn.__name__}(): domain= takes a dict {{Dim: "
                                    f"(start, stop)}} over the result's dimensions "
                                    f"({', '.join(sorted(result_dims))}), got {d!r}",
                                    self._def_loc())
            for dim, pair in d.items():
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise ArgumentError(f"{self.fn.__name__}(): domain={{{dim.name}: (start, "
                                        f"stop)}} takes a pair of coordinates, got {pair!r}",
                                        self._def_loc())
        shape = tuple((p, tuple(sorted(k.name for k in d))) for p, _, d in parts)
        if not any(names for _, names in shape):
            for p, o, d in parts:       # no domain restricts anything: whole intervals
                self._call_into(spec, a, backend, plain, o, d, path=p)
            return out
        for i, (_, o, _) in enumerate(parts):
            hit = self._into.get((spec.key, shape, i))
            new = hit is None
            if hit is None:
                from .runtime_bounds import into_program
                prog, result, all_bounds = self._in_domains(spec, a, shape, i)
                prog, _ = into_program(prog, result, shape[i][1], all_bounds[i])
                with _lengths_noted(a), _python_messages(self.fn, spec.names):
                    _checked(prog)
                hit = self._into[(spec.key, shape, i)] = (
                    Specialization(self.fn.__name__, spec.key, prog, names=spec.names),
                    all_bounds)
            derived, all_bounds = hit
            values = dict(plain)
            values[spec.result.name] = o
            for (_, _, dk), bounds in zip(parts, all_bounds):
                for dim, pair in dk.items():
                    for name, v in zip(bounds[dim.name], pair):
                        values[name] = v
            self._run(derived, backend, new, values)
        return out

    def _in_domains(self, spec: Specialization, a: Analysis | None,
                    shape: tuple[tuple[tuple[int, ...], tuple[str, ...]], ...], i: int):
        """The function translated for output ``i`` of a tuple of domains
        (``shape``: per output, its path and the dimensions its dict restricts),
        with the bounds of all the domains as parameters: the program, its
        result parameter and per domain its bound parameters."""
        from .functions import translate_call
        from .runtime_bounds import domain_bounds
        params, static = self._ir_params(spec.key)
        taken = list(params)
        all_bounds: list[dict] = []
        scalars: list[ir.Param] = []
        parts: list[tuple[tuple[int, ...], list]] = []
        for path, names in shape:
            bounds, more, intervals = domain_bounds(taken + scalars, names, self._def_loc())
            all_bounds.append(bounds)
            scalars += more
            parts.append((path, intervals))
        sp = self._specializer()
        analysis_ = a if a is not None else self._default_analysis()
        with _python_messages(self.fn, spec.names):
            prog = translate_call(self.fn, list(params) + scalars, sp.table_dims(analysis_),
                                  self._result_name(), static=static, rank_generic=sp.generic,
                                  names=spec.names, parts=parts, part=i)
        return prog, prog.params[-1], all_bounds

    def _domain_parts(self, out: Any, domain: tuple | list, path: tuple[int, ...]
                      ) -> list[tuple[tuple[int, ...], Any, dict]]:
        """GT4Py's tuple of domains for ``out=`` (at ``path`` in the value): per
        dict, the path of its output, the output (an array or a tuple of them)
        and the dict."""
        if not isinstance(out, tuple) or len(out) != len(domain):
            what = f"a tuple of {len(out)} outputs" if isinstance(out, tuple) else "one output"
            raise ArgumentError(f"{self.fn.__name__}(): domain= is a tuple of {len(domain)} "
                                f"domains but out= is {what}; give one dict {{Dim: (start, "
                                "stop)}} per output (nested as out= is), or one dict for all",
                                self._def_loc())
        parts: list[tuple[tuple[int, ...], Any, dict]] = []
        for k, (o, d) in enumerate(zip(out, domain)):
            if isinstance(d, (tuple, list)):
                parts += self._domain_parts(o, d, path + (k,))
            else:
                parts.append((path + (k,), o, d))
        return parts

    def _in_domain(self, spec: Specialization, a: Analysis | None, names: tuple[str, ...],
                   path: tuple[int, ...] = (), below_stop: bool = False
                   ) -> tuple[ir.Program, ir.Param, dict[str, tuple[str, str]] | None]:
        """The program, result and bound parameters (None: none yet) that
        ``into_program`` takes for ``domain=`` over ``names``: the function
        translated again with the domain's bounds as parameters, so that its
        scans run over the domain's range (as in a program body); ``path``: the
        part of the value written (of a tuple value, one per domain)."""
        assert spec.result is not None     # a direct call's specialisation has one
        if not names:
            return _value_part(spec.program, spec.result, path) + (None,)
        prog, bounds = self._domain_program(spec.key, spec.names, a, names, below_stop)
        return _value_part(prog, prog.params[-1], path) + (bounds,)

    def _domain_program(self, key: tuple[ParamSig, ...], renamed: dict[str, str],
                        a: Analysis | None, names: tuple[str, ...], below_stop: bool = False
                        ) -> tuple[ir.Program, dict[str, tuple[str, str]]]:
        """The function translated for specialisation ``key`` (``renamed``: its
        parameters named otherwise in the IR) with bound parameters of the
        dimensions ``names`` as its domain: the program and per dimension the
        names of its start and stop parameters."""
        from .functions import translate_call
        from .runtime_bounds import domain_bounds
        params, static = self._ir_params(key)
        bounds, scalars, intervals = domain_bounds(params, names, self._def_loc())
        sp = self._specializer()
        analysis_ = a if a is not None else self._default_analysis()
        with _python_messages(self.fn, renamed):
            prog = translate_call(self.fn, list(params) + scalars, sp.table_dims(analysis_),
                                  self._result_name(), static=static, rank_generic=sp.generic,
                                  domain=intervals, names=renamed, gap_below_stop=below_stop)
        return prog, bounds

    def _for_domain(self, domain: Any) -> Callable[[tuple[ParamSig, ...], Analysis | None],
                                                   Specialization] | None:
        """For :meth:`_lookup`: the specialisation of a direct call with
        ``domain=`` where the function's value is not defined without it (a
        ``concat_where`` gap outside the domain: GT4Py computes the value on
        the domain only), translated with the domain's bounds as parameters,
        as :meth:`_call_into` translates it again for the program it runs;
        None where the domain restricts no dimension (of every output, for a
        tuple of domains): the value is needed everywhere."""
        dicts = list(_domain_dicts(domain))
        if not dicts or not all(isinstance(d, dict) for d in dicts):
            return None
        common = set.intersection(*({getattr(k, "name", None) for k in d} for d in dicts))
        names = tuple(sorted(n for n in common if isinstance(n, str)))
        if not names:
            return None

        def make(key: tuple[ParamSig, ...], a: Analysis | None) -> Specialization:
            renamed = self._renamed(key)
            with _lengths_noted(a):
                prog, _ = self._domain_program(key, renamed, a, names)
            return Specialization(self.fn.__name__, key, prog, result=prog.params[-1],
                                  names=renamed)
        return make


def _domain_dicts(domain: Any) -> Iterator[Any]:
    """The dicts of ``domain=``: itself, or those of a (nested) tuple of domains."""
    if isinstance(domain, (tuple, list)):
        for d in domain:
            yield from _domain_dicts(d)
    else:
        yield domain


def _gap_miss(spec: Specialization, values: dict[str, Any]) -> float:
    """How far the domain's bounds in ``values`` (by Python name) miss the
    allowed ranges of the call-time checks of ``concat_where`` gaps in the
    program of ``spec`` (infinite where that cannot be told)."""
    from .. import intervals
    from ..arguments import bind_arguments, runtime_values
    given = spec.ir_values(values)
    try:
        symbols = dict(bind_arguments(spec.program.params, given,
                                      where=spec.owner).symbols)
        symbols.update(runtime_values(spec.program.params, given))
        return max((intervals.evaluate(c.lower - c.upper, symbols)
                    for c in spec.program.constraints if _GAP_CHECK in c.reason),
                   default=float("inf"))
    except (TensorIRError, KeyError, TypeError, ValueError):
        return float("inf")


def _value_part(prog: ir.Program, result: ir.Param, path: tuple[int, ...]
                ) -> tuple[ir.Program, ir.Param]:
    """The program of a direct call (``result ← value``) that writes only the
    part ``path`` of its tuple value, and its result parameter."""
    if not path:
        return prog, result
    from .values import project
    (stmt,) = prog.body
    assert isinstance(stmt, ir.Assign)   # a function body is one assignment
    value, dtype = stmt.value, result.type.dtype
    for k in path:
        if not isinstance(dtype, ir.TupleType) or k >= len(dtype.elements):
            raise ArgumentError(f"{prog.name}(): domain= gives output {k} of a value of type "
                                f"{dtype}, which has no such element; give one domain per "
                                "element of the value (nested as it is)", result.loc)
        value, dtype = project(value, k, stmt.loc), dtype.elements[k]
    part = dataclasses.replace(result, type=dataclasses.replace(result.type, dtype=dtype))
    params = tuple(part if p.name == result.name else p for p in prog.params)
    return dataclasses.replace(prog, params=params,
                               body=(dataclasses.replace(stmt, value=value),)), part


def _allocate(dtype: ir.ElementType, shape: tuple[int, ...]):
    from ..arguments import numpy_dtype
    if isinstance(dtype, ir.TupleType):
        return tuple(_allocate(e, shape) for e in dtype.elements)
    return np.empty(shape, dtype=numpy_dtype(dtype))


@api_boundary
def function(fn: Callable | None = None, *, backend: str = "compiled", **compile_options: Any):
    """Decorate a Python function written with tensor operations (``x(I + 1)``,
    ``neighbor_sum``, ``where``, …); programs call it and it is inlined.

    Called directly with arrays it runs (compiled by default, or
    ``backend="interpreter"``) and returns its value as a new array.  Extra
    keyword arguments are passed to :func:`tensorir_dace.compile`.
    """
    def deco(f: Callable) -> FunctionObject:
        return FunctionObject(f, backend=backend, **compile_options)
    if fn is None:
        return deco
    return deco(fn)


field_operator = function


def scan_operator(*, axis: Dimension, forward: bool = True, init: Any = 0.0,
                  backend: str = "compiled", **compile_options: Any):
    """``@scan_operator(axis=K, forward=True, init=(0.0, 0.0))`` on ``def f(state, …)``.

    Programs and functions call it; called directly with arrays it runs like a
    ``@function`` (``out=`` and ``domain=`` included)."""
    compile_options = _check_compile_options("scan_operator", compile_options)

    def deco(fn: Callable) -> ScanOperator:
        return DirectScanOperator(fn, axis, forward, init, backend, compile_options)
    return deco


class GridType(str, enum.Enum):
    """GT4Py's grid types, for the decorators' ``grid_type=`` (accepted, no effect)."""

    CARTESIAN = "cartesian"
    UNSTRUCTURED = "unstructured"


_COMPILE_OPTIONS = ("optimize", "device", "cache_dir")


def _check_compile_options(decorator: str, options: dict[str, Any]) -> dict[str, Any]:
    """The decorators' extra keywords, for :func:`tensorir_dace.compile`; a misspelt
    one is named where it is written.  GT4Py's ``grid_type=`` is accepted and has no
    effect (neighbour tables make a program unstructured)."""
    options = {k: v for k, v in options.items() if k != "grid_type"}
    unknown = sorted(set(options) - set(_COMPILE_OPTIONS))
    if unknown:
        raise DefinitionError(f"@{decorator} got the unknown keyword argument"
                              f"{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; it "
                              f"takes backend= and the options of tensorir_dace.compile: "
                              f"{', '.join(_COMPILE_OPTIONS)}")
    return options


class DirectScanOperator(ScanOperator):
    """A scan operator that can also be called directly with arrays: the call goes
    to a ``@function`` whose body is the scan applied to its operands (made on
    the first direct call)."""

    def __init__(self, fn: Callable, axis: Dimension, forward: bool, init: Any,
                 backend: str, compile_options: dict[str, Any]):
        super().__init__(fn, axis, forward, init)
        self._options = dict(compile_options, backend=backend)
        self._direct: FunctionObject | None = None

    def __call__(self, /, *args: Any, **kwargs: Any):
        if self._direct is None:
            self._direct = FunctionObject(_applying(self), **self._options)
        try:
            return self._direct(*args, **kwargs)
        except TensorIRError as e:
            if e.loc is None or not str(e.loc.filename).startswith("<scan_operator "):
                raise
            # the wrapper's made-up source: point at the scan operator instead
            src = source_info(self.fn)
            raise type(e)(e.message, src.loc(None)) from None


def _applying(op: ScanOperator) -> Callable:
    """``def f(a, b): return op(a, b)`` for the operands of ``op`` (its parameters
    after the state), with its source registered so that it can be translated."""
    import linecache
    names = list(inspect.signature(op.fn).parameters)[1:]
    name = op.fn.__name__
    text = f"def {name}({', '.join(names)}):\n    return _scan({', '.join(names)})\n"
    filename = f"<scan_operator {op.fn.__module__}.{op.fn.__qualname__}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict[str, Any] = {"_scan": op, "__name__": op.fn.__module__}
    exec(compile(text, filename, "exec"), namespace)
    wrapper = namespace[name]
    wrapper.__qualname__ = op.fn.__qualname__
    return wrapper


# --------------------------------------------------------------------------- programs


class ProgramObject(_Specialized, ProgramDefinition, SDFGConvertible):
    """A ``@program``: translated to Tensor IR, runnable with arrays.

    * ``prog.ir`` — the :class:`ir.Program` (print it with ``tensorir_dace.format``);
    * ``prog.to_sdfg()`` — the DaCe SDFG; ``prog.compile()`` — the compiled
      callable (cached);
    * ``prog(a, b, out=c, alpha=0.5)`` — run it (``backend="interpreter"`` for
      the NumPy interpreter); arrays passed with :func:`with_interval` have
      explicit coordinate intervals (halos), which specialises the program;
    * parameters without annotation (or ``Tensor``, ``Tensor[T, ...]``) are
      rank-generic: ``prog.specializations()``, ``prog.cache_info()`` and
      ``prog.specialize(args…)`` show what was specialised and why.
    """

    def __init__(self, fn: Callable, backend: str = "compiled", **compile_options: Any):
        self._setup(fn, "program", backend, compile_options)
        # the last compiled program and the callable compile() returned for it
        self._last_compiled: tuple[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"<tensorir_dace.program {self.fn.__qualname__}>"

    # ------------------------------------------------------------------ parameters

    def _param_specs(self) -> list[tuple[str, TensorSpec | GenericSpec, SourceLoc]]:
        return [(p.name, p.spec, p.loc) for p in self._param_infos()]

    def _param_infos(self) -> list[ParamInfo]:
        if self._infos is not None:
            return self._infos
        src = source_info(self.fn)
        a = src.node.args
        if a.vararg or a.kwarg or a.posonlyargs:
            raise FrontendError("program parameters must be plain positional-or-keyword "
                                "or keyword-only parameters", src.loc(src.node))
        out = []
        for arg in a.args + a.kwonlyargs:      # (GT4Py's programs take keyword-only ones)
            loc = src.loc(arg)
            has, ann = _annotation(self.fn, arg.arg, loc, strict=True)
            spec: TensorSpec | GenericSpec | None
            spec = generic_spec(ann, annotated=has and ann is not None)
            if spec is None:
                spec = annotation_spec(ann)
            if spec is None:
                raise FrontendError(f"the annotation of '{arg.arg}' ({ann!r}) is not a "
                                    "Tensor IR type; write Tensor[float, I, J], float, int, "
                                    "bool, … (or leave it out: the parameter is then "
                                    "specialised from its argument)", loc)
            out.append(ParamInfo(arg.arg, spec, loc))
        names = {p.name for p in out}
        # declared connectivities it uses: keyword-only table parameters, last
        self._tables = declared_tables(self.fn, names)
        self._strided = used_strided(self.fn)
        out += [ParamInfo(c.name, c.spec(), self._def_loc()) for c in self._tables.values()]
        self._infos = out
        return out

    def _generic_error(self, what: str) -> FrontendError:
        p = next(p for p in self._param_infos() if p.generic)
        name = self.fn.__name__
        return FrontendError(f"'{name}' is rank-generic: program parameter '{p.name}' needs a "
                             f"type annotation for {name}.{what} (e.g. Tensor[float, I, J] or "
                             f"float), or call {name} with arrays — it is specialised from "
                             f"them — and see {name}.specialize(…).ir", p.loc)

    def _make(self, key: tuple[ParamSig, ...], a: Analysis) -> Specialization:
        params, static = self._ir_params(key)
        names = self._renamed(key)
        report: dict[str, Any] = {}
        sp = self._specializer()
        from .programs import translate_program
        with _python_messages(self.fn, names):
            prog = _checked(translate_program(self.fn, params, self._size_of(),
                                              sp.table_dims(a), static=static,
                                              rank_generic=sp.generic, report=report,
                                              names=names))
        return Specialization(self.fn.__name__, key, prog, dropped=report.get("dropped", {}),
                              names=names)

    def _default(self, verb: str = "translating") -> Specialization:
        if self._specializer().generic:
            raise self._generic_error("ir")
        return self._default_spec(verb)

    @property
    def _ir(self) -> dict[tuple, ir.Program]:
        """The translated programs by specialisation key."""
        return {s.key: s.program for s in self._cache.entries()}

    @property
    def ir(self) -> ir.Program:
        """The Tensor IR program (arrays starting at coordinate 0)."""
        return self._default().program

    @property
    def params(self) -> tuple[Param, ...]:   # (``ir`` is the property above)
        sp = self._specializer()
        if sp.generic:
            raise self._generic_error("params")
        return tuple(self._ir_params(sp.key(self._default_analysis()))[0])

    def format(self, ascii: bool = False) -> str:
        from ..syntax import format as fmt
        return fmt(self.ir, ascii=ascii)

    # ------------------------------------------------------------------ running

    def interop_program(self) -> Program:
        """The program DaCe nests when a ``@dace.program`` calls this one."""
        return self.ir

    @api_boundary
    def to_sdfg(self, optimize: str = "none"):
        """The DaCe SDFG of the program (``optimize="default"`` for the optimised one)."""
        from ..lowering import to_sdfg
        return to_sdfg(self.ir, optimize=optimize)

    @api_boundary
    def view(self, path: Any = None, open: bool = False) -> Any:
        """Write the viewer page of the program (see :func:`tensorir_dace.view`); a
        rank-generic program is viewed through ``prog.specialize(args).view()``."""
        from ..viewer import view
        return view(self, path, open=open)

    @api_boundary
    def compile(self, offset_provider: dict[str, Any] | None = None,
                enable_jit: bool | None = None, **static_args: Any):
        """The compiled program (a callable taking keyword arguments, and
        ``offset_provider=`` as a call does, unless a parameter has that name);
        cached.

        GT4Py's spelling ``compile(offset_provider=..., enable_jit=...,
        name=[values], ...)`` is accepted: the offset provider given here is
        the one calls without their own use; static values need no
        precompiling (programs are specialised by their arguments' types, not
        values) and must name parameters.  A program whose arrays must differ
        in length along a dimension (half levels one longer than full levels)
        has no binary for equal lengths: it is compiled at its first call, for
        the length differences of that call's arrays.
        """
        if self._locals_pending is not False:
            self._bind_locals((), static_args, offset_provider)
        names = {p.name for p in self._param_infos()}
        unknown = sorted(set(static_args) - names)
        if unknown:
            raise ArgumentError(f"{self.__name__}.compile() got values for {unknown}, which "
                                f"are not parameters (parameters: {sorted(names)})",
                                self._def_loc())
        takes_offsets = "offset_provider" not in names
        try:
            spec = self._default("compiling")
        except CoverageError:
            return _CompiledAtFirstCall(self, offset_provider if takes_offsets else None)
        compiled = self._cache.compiled(spec, self._compile_fn())
        if self._last_compiled is not None and self._last_compiled[0] is compiled:
            wrapped = self._last_compiled[1]
        else:
            wrapped = compiled
            if spec.names:      # called with the Python names
                wrapped = PythonNamedCall(wrapped, spec.names)
            if takes_offsets:
                # GT4Py passes offset_provider= to compiled programs too (Cartesian offsets as well)
                wrapped = TablesCall(wrapped, self._tables, self.__name__, self._strided)
            self._last_compiled = (compiled, wrapped)
        if takes_offsets and offset_provider is not None:
            return _DefaultOffsets(wrapped, offset_provider)
        return wrapped

    @api_boundary
    def specialize(self, *args: Any, **kwargs: Any) -> Specialization:
        """The specialisation for these arguments (translated and checked, not run):
        ``.ir``, ``.key``, ``.to_sdfg()``."""
        provider = kwargs.pop("offset_provider", None) \
            if all(p.name != "offset_provider" for p in self._param_infos()) else None
        self._bind_locals(args, kwargs, provider)
        if provider is not None:
            kwargs = table_arguments(kwargs, provider, self._tables, self.__name__,
                                     self._def_loc(), strided=self._strided)
        return self._lookup(self._bind(args, kwargs), "translating")[0]

    @api_boundary
    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the program with the NumPy interpreter."""
        return self.__call__(*args, backend="interpreter", **kwargs)

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        names = [p.name for p in self._param_infos() if p.name not in self._tables]
        if len(args) > len(names):
            raise ArgumentError(f"{self.__name__}() takes {len(names)} arguments but "
                                f"{len(args)} were given", self._def_loc())
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in values:
                raise ArgumentError(f"{self.__name__}() got multiple values for '{k}'",
                                    self._def_loc())
            values[k] = v
        return values

    def _call_by_source(self, args: tuple, kwargs: dict[str, Any]) -> bool:
        """Run a call whose compiled program is found by the Python source (see
        :mod:`.by_source`), without translating; whether it ran."""
        found = self._described(args, kwargs)
        if found is None:
            return False
        values, described = found
        hit = self._found_by_source(described)
        if hit is None:
            return False
        compiled, entry = hit
        try:      # static values are in the key and not parameters of the program
            compiled(**by_source.ir_arguments(values, compiled.param_names, entry))
        except ArgumentError:          # the translated path says it at the parameter
            return False
        return True

    def record_by_source(self, text: str, cache_dir: Any = None) -> int:
        """Record ``text``, the printed IR of this program's annotated
        specialisation, for lookups by the source of the calls its annotations
        lead one to expect (:func:`.by_source.annotated_calls`), so that such
        a call in a new process translates nothing; how many were recorded
        (none for a rank-generic program)."""
        if self._specializer().generic:
            return 0
        types = {p.name: self._annotated_type(p) for p in self._param_infos()}
        names = self._renamed(self._specializer().key(self._default_analysis()))
        extra = {"names": names} if names else {}
        count = 0
        for described in by_source.annotated_calls(types):
            key = by_source.call_key(self.fn, described, self.compile_options)
            if key is not None:
                by_source.store_text(key, text, cache_dir, **extra)
                count += 1
        return count

    @api_boundary
    def __call__(self, /, *args: Any, backend: str | None = None,
                 offset_provider: dict[str, Any] | None = None, **kwargs: Any) -> None:
        plain_call = backend is None and self.backend == "compiled"
        if self._locals_pending is not False:
            self._bind_locals(args, kwargs, offset_provider)
        # looked up by the source while nothing was translated in this process, or
        # while some call was served that way (translating records the call's
        # description in memory): else the specialisations serve it
        if plain_call and (self._serving or not len(self._cache)):
            tables = kwargs if offset_provider is None else self._provided(kwargs,
                                                                           offset_provider)
            if tables is not None and self._call_by_source(args, tables):
                return
        names = [p.name for p in self._param_infos()]
        if "backend" in names and backend is not None:
            kwargs["backend"] = backend
            backend = None
        backend = self._backend(backend)
        kwargs = table_arguments(kwargs, offset_provider, self._tables, self.__name__,
                                 self._def_loc(), strided=self._strided)
        values = self._bind(args, kwargs)
        misses = self._cache.misses
        spec, _, plain = self._lookup(values, "compiling" if backend == "compiled"
                                      else "translating")
        if plain is values:
            plain = {k: (v.value if isinstance(v, TensorArg) else v) for k, v in values.items()}
        new = self._cache.misses != misses
        self._run(spec, backend, new, plain)
        if plain_call:
            self._store_by_source(spec, new, lambda: self._described(args, kwargs), spec)


class _DefaultOffsets:
    """A compiled program whose calls without ``offset_provider=`` use the one
    given to ``compile``."""

    def __init__(self, compiled: Any, offset_provider: dict[str, Any]):
        self._compiled = compiled
        self._offset_provider = offset_provider

    def __call__(self, /, *args: Any, offset_provider: dict[str, Any] | None = None,
                 **kwargs: Any) -> Any:
        provider = self._offset_provider if offset_provider is None else offset_provider
        return self._compiled(*args, offset_provider=provider, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


class _CompiledAtFirstCall:
    """What ``compile()`` returns for a program that needs arrays of different
    lengths: its calls run compiled, each specialisation compiled when first
    met (as calls of the program itself)."""

    def __init__(self, program: ProgramObject, offset_provider: dict[str, Any] | None):
        self._program = program
        self._offset_provider = offset_provider
        # a parameter named backend takes backend= itself
        self._backend: dict[str, Any] = {} if any(
            p.name == "backend" for p in program._param_infos()) \
            else {"backend": "compiled"}

    def __call__(self, /, *args: Any, offset_provider: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        provider = self._offset_provider if offset_provider is None else offset_provider
        if provider is not None:
            kwargs["offset_provider"] = provider
        self._program(*args, **self._backend, **kwargs)

    @property
    def name(self) -> str:
        return self._program.__name__


def _caller() -> str | None:
    """file:line of the first frame outside this package (the user's call)."""
    frame = user_frame()
    return f"{frame[0]}:{frame[1]}" if frame is not None else None


@api_boundary
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


def compile_ir(prog: ir.Program | str, **options: Any):
    """Compile an IR program (or its text) with :func:`tensorir_dace.compile`."""
    from ..runtime.program import compile as compile_program
    return compile_program(prog, **options)
