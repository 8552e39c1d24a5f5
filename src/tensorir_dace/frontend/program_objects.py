"""``@program``: a Python function whose body writes its tensor parameters,
translated to an :class:`ir.Program` on first use (``prog.ir``) and run with
NumPy arrays: compiled through DaCe by default (compiled once and cached), or
with the NumPy interpreter (``backend="interpreter"``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import ir
from ..errors import (
    ArgumentError,
    CoverageError,
    FrontendError,
    SourceLoc,
    TensorIRError,
)
from ..interop import SDFGConvertible
from ..ir import Param, Program
from ..tracebacks import api_boundary
from . import by_source
from .annotations import (
    GenericSpec,
    TensorArg,
    TensorSpec,
    annotation_spec,
    generic_spec,
    spread_leaves,
    spread_rebuilt,
    spread_values,
    spreadable,
)
from .callables import ProgramDefinition
from .connectivities import (
    TablesCall,
    declared_tables,
    table_arguments,
    used_strided,
)
from .names import PythonNamedCall
from .source import source_info
from .specialize import (
    ParamInfo,
    ParamSig,
    Specialization,
)
from .specialized import (
    SpecializedCallable,
    annotation_of,
    checked,
    python_messages,
)

if TYPE_CHECKING:
    from .analysis import Analysis


class ProgramObject(SpecializedCallable, ProgramDefinition, SDFGConvertible):
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
        # parameters annotated with a tuple of fields over different dimensions (or
        # of fields beside scalars): their annotation and elements' parameter names
        self._tuples: dict[str, tuple[Any, tuple]] = {}

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
        taken = {arg.arg for arg in a.args + a.kwonlyargs}

        def fresh(n: str) -> str:
            while n in taken:
                n += "_"
            taken.add(n)
            return n
        for arg in a.args + a.kwonlyargs:      # (GT4Py's programs take keyword-only ones)
            loc = src.loc(arg)
            has, ann = annotation_of(self.fn, arg.arg, loc, strict=True)
            spec: TensorSpec | GenericSpec | None
            spec = generic_spec(ann, annotated=has and ann is not None)
            if spec is None:
                spec = annotation_spec(ann)
            if spec is None and spreadable(ann):
                # a tuple tensor's elements have one shape: one parameter per element
                tree, leaves = spread_leaves(arg.arg, ann, fresh)
                self._tuples[arg.arg] = (ann, tree)
                out += [ParamInfo(n, annotation_spec(x) or GenericSpec(), loc)
                        for n, x in leaves]
                continue
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
        if self._tuples:
            # a spread parameter is the tuple of its elements (NamedTuples again)
            given = dict(static or {})

            def leaf(n: str) -> Any:
                return given[n] if n in given else ir.Sym(names.get(n, n), loc=self._def_loc())
            static = {**given, **{n: spread_rebuilt(ann, tree, leaf)
                                  for n, (ann, tree) in self._tuples.items()}}
        report: dict[str, Any] = {}
        sp = self._specializer()
        from .programs import translate_program
        with python_messages(self.fn, names):
            prog = checked(translate_program(self.fn, params, self._size_of(),
                                              sp.table_dims(a), static=static,
                                              rank_generic=sp.generic, report=report,
                                              names=names))
        return Specialization(self.fn.__name__, key, prog, dropped=report.get("dropped", {}),
                              names=names)

    def _default(self, verb: str = "translating") -> Specialization:
        if self._specializer().generic:
            raise self._generic_error("ir")
        try:
            return self._default_spec(verb)
        except CoverageError as e:
            if not self._ir:
                raise
            # calls made it with arrays of other lengths (half levels): say where
            # their programs are
            raise CoverageError(
                f"{e.message}; with arrays of equal lengths this program has no Tensor IR. "
                "The programs its calls made are prog.specialize(<arguments>).program "
                f"({len(self._ir)} so far, listed by prog.specializations())", e.loc) from None

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
        self._bind_locals((), static_args, offset_provider)
        names = {p.name for p in self._param_infos()}
        unknown = sorted(set(static_args) - names)
        if unknown:
            raise ArgumentError(f"{self.__name__}.compile() got values for {unknown}, which "
                                f"are not parameters (parameters: {sorted(names)})",
                                self._def_loc())
        takes_offsets = "offset_provider" not in names
        if self._tuples:        # called with the tuples, which the binary takes spread
            return _CompiledAtFirstCall(self, offset_provider if takes_offsets else None)
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
            wrapped = _OrOtherLengths(wrapped, self)
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
        args, kwargs = self._spread(args, kwargs)
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

    def _spread(self, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        """The arguments with those of spread tuple parameters given element by
        element (by keyword)."""
        self._param_infos()
        if not self._tuples:
            return args, kwargs
        src = source_info(self.fn)
        names = [x.arg for x in src.node.args.args + src.node.args.kwonlyargs]
        if len(args) > len(names) or any(k in names[:len(args)] for k in kwargs):
            return args, kwargs         # the binding says what is wrong
        values = {**dict(zip(names, args)), **kwargs}
        for n, (_, tree) in self._tuples.items():
            if n not in values:
                continue
            v = values.pop(n)
            leaves = spread_values(tree, v)
            if leaves is None:
                got = f"a tuple of {len(v)}" if isinstance(v, tuple) else type(v).__name__
                raise ArgumentError(f"{self.__name__}(): '{n}' takes a tuple of {len(tree)} "
                                    f"(its annotation's elements), got {got}", self._def_loc())
            values.update(leaves)
        return (), values

    @api_boundary
    def __call__(self, /, *args: Any, backend: str | None = None,
                 offset_provider: dict[str, Any] | None = None, **kwargs: Any) -> None:
        args, kwargs = self._spread(args, kwargs)
        plain_call = backend is None and self.backend == "compiled"
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


class _OrOtherLengths:
    """What ``compile()`` returns for a program it could compile: the binary
    for arrays of equal lengths along each dimension, which serves the calls
    whose arrays fit it.  A call that it refuses (arrays of other lengths the
    program also takes, half levels one longer than full levels, or a mistake)
    is made as a call of the program, compiled: its own specialisation runs,
    compiled when first met; a call that the program refuses too is reported
    by the binary's message.  The binary checks its arguments before it writes
    anything."""

    def __init__(self, compiled: Any, program: ProgramObject):
        self._compiled = compiled
        self._program_call = _CompiledAtFirstCall(program, None)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._compiled(*args, **kwargs)
        except ArgumentError as refused:
            try:
                return self._program_call(*args, **kwargs)
            except TensorIRError:
                raise refused from None     # a mistake: the binary's message names it

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
