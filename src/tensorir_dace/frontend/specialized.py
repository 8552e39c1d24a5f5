"""What ``@function``, ``@scan_operator`` and ``@program`` objects share:
specialisation by their arguments (cached, see :mod:`.specialize`), lookups
by the Python source of a call, binding of local dimensions, and error
messages worded for Python source."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .. import ir
from ..errors import (
    ArgumentError,
    FrontendError,
    ShapeMismatchError,
    SourceLoc,
    TensorIRError,
    TypeCheckError,
)
from ..lazy import lazy_module
from . import by_source
from .annotations import (
    TensorArg,
    TensorSpec,
    evaluated_annotation,
)
from .connectivities import (
    LocalOffset,
    bind_local_offsets,
    table_arguments,
    used_connectivities,
)
from .dims import DefinitionError, Dimension, LocalDimension
from .names import ir_names, python_message
from .source import user_frame
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


# GT4Py's compilation options (``with_compilation_options``)
_COMPILATION_OPTIONS = frozenset({"enable_jit", "static_params", "connectivities",
                                  "static_domains"})


class SpecializedCallable:
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
    # the offsets into local dimensions used, and what each was when last bound
    _local_offsets: list[LocalOffset] = []
    _resolved_as: list[Any] = []

    def _setup(self, fn: Callable, decorator: str, backend: Any,
               compile_options: dict[str, Any]) -> None:
        if not inspect.isfunction(fn):
            raise DefinitionError(f"@{decorator} decorates a Python function")
        backend = gt4py_backend(backend)
        if backend not in BACKENDS:
            raise DefinitionError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        compile_options = check_compile_options(decorator, compile_options)
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
            from ..source_extents import extents_of
            from ..syntax import format as format_program
            if spec.names:
                extra["names"] = spec.names
            extents = extents_of(prog.params)
            if extents:
                extra["extents"] = extents
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
            # bound: but a table offset given None (or a strided provider) becomes
            # strided, here or in another function using it
            if not self._local_offsets or not any(
                    o.resolved is not was or o.turns_strided(provider)
                    for o, was in zip(self._local_offsets, self._resolved_as)):
                return
        if not LocalDimension.made:
            # a local dimension the function uses exists before its first call
            self._locals_pending = False
            return
        offsets = used_connectivities(self.fn, LocalOffset)
        before = self._resolved_as if self._locals_pending is False else \
            [o.resolved for o in offsets]
        left = bind_local_offsets(offsets, kwargs, provider, self.fn.__name__, self._def_loc())
        self._local_offsets = offsets
        self._resolved_as = [o.resolved for o in offsets]
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
        caller = call_site()
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
                                    self._annotated_type, call_site)
        return self._spz

    def with_backend(self, backend: Any) -> Any:
        """GT4Py's ``with_backend``: this program or function run by ``backend``
        by default: ``"compiled"`` or ``"interpreter"``; ``None`` (GT4Py's
        embedded execution) is the interpreter, a GT4Py backend object the
        compiled code.  The copy shares the specialisations and binaries."""
        new = copy.copy(self)
        new.backend = self._backend(gt4py_backend(backend))
        return new

    def with_grid_type(self, grid_type: Any) -> Any:
        """GT4Py's ``with_grid_type``: accepted, without effect (as the
        decorators' ``grid_type=``: tables and offsets say what a grid is)."""
        return self

    def with_compilation_options(self, **options: Any) -> Any:
        """GT4Py's ``with_compilation_options(enable_jit=False, ...)``, as icon4py
        sets its programs up before ``compile(...)``: accepted, without effect.
        A specialisation is made for the arguments' types when a call first
        meets them (or by ``compile()``), so a call never needs the precompiling
        that ``enable_jit=False`` asks for; the names are GT4Py's options."""
        unknown = sorted(set(options) - _COMPILATION_OPTIONS)
        if unknown:
            raise DefinitionError(f"{self.fn.__name__}.with_compilation_options() got "
                                  f"{unknown}, which are not GT4Py's compilation options "
                                  f"({', '.join(sorted(_COMPILATION_OPTIONS))})")
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
        with lengths_noted(a):
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
def lengths_noted(a: Analysis | None) -> Iterator[None]:
    """A type error of a call whose arrays differ in length (see
    :meth:`.Specializer.length_offsets`) as a :class:`ShapeMismatchError` that
    says which arrays are longer: their intervals follow from the lengths."""
    try:
        yield
    except TypeCheckError as e:
        if a is None or not a.longer:
            raise
        raise ShapeMismatchError(e.message + a.lengths_note(), e.loc) from None


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
def python_messages(fn: Callable, names: dict[str, str] | None = None) -> Iterator[None]:
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


def checked(prog: ir.Program) -> ir.Program:
    from ..typing import check
    try:
        check(prog)
    except TensorIRError as e:
        if e.loc is None:
            raise type(e)(e.message, prog.loc) from None
        raise
    return prog


def gt4py_backend(backend: Any) -> Any:
    """GT4Py's ``backend=``: None (embedded execution) is the interpreter, a
    backend object the compiled code; a name stays as given."""
    if backend is None:
        return "interpreter"
    return backend if isinstance(backend, str) else "compiled"


def annotation_of(fn: Callable, name: str, loc: SourceLoc, strict: bool) -> tuple[bool, Any]:
    anns = getattr(fn, "__annotations__", {}) or {}
    if name not in anns:
        return False, None
    try:
        return True, evaluated_annotation(fn, anns[name])
    except Exception as e:  # noqa: BLE001 - reported with the parameter's place
        if not strict:
            return False, None
        raise FrontendError(f"cannot evaluate the annotation of '{name}': {e}", loc) from None


_COMPILE_OPTIONS = ("optimize", "device", "cache_dir")


def check_compile_options(decorator: str, options: dict[str, Any]) -> dict[str, Any]:
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


def call_site() -> str | None:
    """file:line of the first frame outside this package (the user's call)."""
    frame = user_frame()
    return f"{frame[0]}:{frame[1]}" if frame is not None else None


def compile_ir(prog: ir.Program | str, **options: Any):
    """Compile an IR program (or its text) with :func:`tensorir_dace.compile`."""
    from ..runtime.program import compile as compile_program
    return compile_program(prog, **options)
