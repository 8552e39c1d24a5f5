"""``@function`` (GT4Py's ``@field_operator``) and ``@scan_operator``: Tensor
IR functions inlined where programs call them.  Called directly with arrays
they run as a program of one statement and return a new array, JAX-style, or
write ``out=`` on its ``domain=``, GT4Py-style."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..errors import (
    ArgumentError,
    FrontendError,
    TensorIRError,
    TypeCheckError,
)
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
    tuple_element,
)
from .callables import InlinedFunction, ScanOperator
from .connectivities import (
    declared_tables,
    table_arguments,
    used_strided,
)
from .dims import Dimension
from .source import source_info
from .specialize import (
    NO_DEFAULT,
    ParamInfo,
    ParamSig,
    Specialization,
)
from .specialized import (
    SpecializedCallable,
    annotation_of,
    call_site,
    check_compile_options,
    checked,
    lengths_noted,
    python_messages,
)
from .tuple_calls import SpreadCall, as_annotated, part_functions

if TYPE_CHECKING:
    from . import analysis
    from .analysis import Analysis
else:
    analysis = lazy_module(f"{__package__}.analysis")    # the translator's first stage


#: What the call-time check of a ``concat_where`` gap beside a runtime
#: ``domain=`` bound says (see ``builtin_calls._pieces_in_domain``).
_GAP_CHECK = "between the pieces (no value is defined there)"


class FunctionObject(SpecializedCallable, InlinedFunction):
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
        self._spread: SpreadCall | None | bool = False       # False: not looked at yet
        self._parts: list[FunctionObject] | None | bool = False   # as _spread

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
            has, ann = annotation_of(self.fn, arg.arg, loc, strict=False)
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
        with python_messages(self.fn, names):
            prog = checked(translate_call(self.fn, params, sp.table_dims(a),
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
            caller = call_site()
            where = f" (called at {caller})" if caller else ""
            raise ArgumentError(f"{self.fn.__name__}(): {e}{where}", self._def_loc()) from None
        return {**bound.arguments,
                **table_arguments(tables, provider, self._tables, self.fn.__name__,
                                  self._def_loc(), strided=self._strided)}

    _by_source_kind = ("function",)

    def _out_extra(self, into: dict[str, Any]) -> analysis.Extra:
        """``out=`` as :meth:`.Specializer.length_offsets` sees it: its shape over
        the dimensions of the return annotation (else of the first annotated
        parameter of its rank); a tuple of arrays of one shape (GT4Py's
        ``out=(a, b)``) as one of them where the parts of a tuple annotation
        name the same dimensions; None for other tuples or where they are
        unknown."""
        leaves = [o for _, o in _out_leaves(into.get("out"))]
        shapes = {getattr(o, "shape", None) for o in leaves}
        if len(shapes) != 1:
            return None
        shape = shapes.pop()
        if shape is None:
            return None
        if self._out_dims is None:
            has, ann = annotation_of(self.fn, "return", self._def_loc(), strict=False)
            parts = [annotation_spec(p) for p in _annotation_leaves(ann)] if has else []
            names = {tuple(d.name for d in sp.dims) if isinstance(sp, TensorSpec) else None
                     for sp in parts}
            if len(parts) > 1 and (len(names) != 1 or None in names):
                self._out_dims = {}      # parts over different dimensions: no one shape
            else:
                spec = parts[0] if parts else None
                specs = [spec] if isinstance(spec, TensorSpec) else \
                    [p.spec for p in self._param_infos() if isinstance(p.spec, TensorSpec)]
                self._out_dims = {len(s.dims): tuple(d.name if analysis.bare_dimension(d)
                                                     else "" for d in s.dims)
                                  for s in reversed(specs)}
        names_ = self._out_dims.get(len(shape))
        return None if names_ is None else (names_, tuple(shape))

    def _part_extra(self, out: Any, path: tuple[int, ...],
                    spec_: Specialization | None = None) -> analysis.Extra:
        """Output ``out`` at ``path`` of a tuple ``out=`` as :meth:`_out_extra`
        sees a single one: its shape over the dimensions of its part of the tuple
        return annotation; None where they are unknown.  Without a return
        annotation (a scan operator's call: its parts are scalars per point),
        the dimensions of ``spec_``'s result, which all parts share."""
        shape = getattr(out, "shape", None)
        has, ann = annotation_of(self.fn, "return", self._def_loc(), strict=False)
        if shape is not None and not has and spec_ is not None \
                and spec_.result is not None and len(spec_.result.type.dims) == len(shape):
            return (tuple(d.name for d in spec_.result.type.dims), tuple(shape))
        if shape is None or not has:
            return None
        element = tuple_element(ann, path)
        spec = None if element is None else annotation_spec(element)
        if not isinstance(spec, TensorSpec) or len(spec.dims) != len(shape):
            return None
        return (tuple(d.name if analysis.bare_dimension(d) else "" for d in spec.dims),
                tuple(shape))

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
        if self._spread is False:
            self._spread = SpreadCall.of(self)
        if self._spread is not None:
            assert isinstance(self._spread, SpreadCall)
            return self._spread(self, args, kwargs)
        if "out" not in kwargs or "out" in self._names():
            if self._parts is False:
                self._parts = part_functions(self)
            if self._parts is not None:
                # a tuple of parts over different dimensions: each over its own domain
                assert isinstance(self._parts, list)
                kw = dict(kwargs)
                if "backend" not in self._names():
                    kw["backend"] = kw.get("backend") or self.backend
                try:
                    parts = [f(*args, **kw) for f in self._parts]
                except TensorIRError as e:
                    if e.loc is None or not str(e.loc.filename).startswith("<part "):
                        raise
                    # a part's made-up source: point at the function instead
                    raise type(e)(e.message, self._def_loc()) from None
                has, ann = annotation_of(self.fn, "return", self._def_loc(), strict=False)
                return as_annotated(tuple(parts), ann) if has else tuple(parts)
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
        named: list[tuple[tuple[int, ...], Any, tuple[str, ...]]] = []
        if "out" in into:
            into["out"] = self._unwrapped_out(into["out"], (), named)
            self._check_out_dims(named, None)
        self._bind_locals(args, kwargs, kwargs.get("offset_provider"))
        # as for programs: looked up by the source until one is translated here
        if plain_call and (self._serving or not len(self._cache)):
            result = self._call_by_source(args, kwargs, into)
            if result is not None:
                return result if into else self._as_returned(result)
        values = self._bind(args, kwargs)
        misses = self._cache.misses
        spec, a, plain = self._lookup(values, "compiling" if backend == "compiled"
                                      else "translating", self._out_extra(into),
                                      fallback=self._for_domain(into.get("domain")))
        new = self._cache.misses != misses
        assert spec.result is not None
        self._check_out_dims(named, spec)
        if into:
            record = (lambda: self._call_description(args, kwargs, into)) if plain_call \
                else None
            longer = self._specializer().out_length_offsets(values, self._out_extra(into))

            def longer_of(o: Any, path: tuple[int, ...]) -> dict[str, int]:
                return self._specializer().out_length_offsets(
                    values, self._part_extra(o, path, spec))
            domain = into.get("domain")
            if type(into["out"]) is tuple and not longer:
                # a tuple written on one domain: as long as all its outputs are
                each = [longer_of(o, p) for p, o in _out_leaves(into["out"])]
                shapes = {getattr(o, "shape", None) for _, o in _out_leaves(into["out"])}
                if each and all(x == each[0] for x in each) and (each[0] or len(shapes) == 1):
                    longer = each[0]
                elif isinstance(domain, dict):
                    # outputs of different lengths (half levels beside full levels)
                    # on one domain: that domain for each of them
                    domain = _same_domain_each(into["out"], domain)
                elif domain is None:
                    # without domain=, as GT4Py: the intersection of the outputs'
                    # domains, for each of them
                    common = self._common_domain(into["out"], spec)
                    if common is not None:
                        domain = _same_domain_each(into["out"], common)
            return self._call_into(spec, a, backend, plain, into["out"], domain,
                                   record, new, longer=longer, longer_of=longer_of)
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
        return self._as_returned(result)

    def _as_returned(self, result: Any) -> Any:
        """A tuple result as the return annotation declares it: a NamedTuple's
        class (``m.a`` of ``m = op(…)``), nested ones too."""
        has, ann = annotation_of(self.fn, "return", self._def_loc(), strict=False)
        return as_annotated(result, ann) if has else result


    def _unwrapped_out(self, out: Any, path: tuple[int, ...],
                       named: list[tuple[tuple[int, ...], Any, tuple[str, ...]]]) -> Any:
        """``out=`` with the arrays of its ``with_dims(o, Cell, K)`` (GT4Py's fields
        with their dimensions), noting each such array's path and dimension names
        in ``named`` for :meth:`_check_out_dims`."""
        if type(out) is tuple:
            parts = tuple(self._unwrapped_out(o, path + (k,), named) for k, o in enumerate(out))
            return out if all(p is o for p, o in zip(parts, out)) else parts
        if not isinstance(out, TensorArg):
            return out
        if out.intervals or out.dims is None or type(out.value) is tuple:
            raise ArgumentError(
                f"{self.fn.__name__}(): out= takes arrays, or with_dims(o, D1, D2, …) naming "
                f"the dimensions of the value in order, got {out!r}; to write part of an "
                "array give domain=", self._def_loc())
        named.append((path, out.value, tuple(_dim_label(d) for d in out.dims)))
        return out.value

    def _check_out_dims(self, named: list[tuple[tuple[int, ...], Any, tuple[str, ...]]],
                        spec: Specialization | None) -> None:
        """The dimensions ``with_dims`` gives an array of ``out=`` are those of its
        part of the value (of the return annotation, else of ``spec``'s result)."""
        for path, o, names in named:
            extra = self._part_extra(o, path, spec)
            if extra is None or "" in extra[0] or tuple(extra[0]) == names:
                continue
            where = "out=" if not path else f"out={''.join(f'[{k}]' for k in path)}"
            raise ArgumentError(
                f"{self.fn.__name__}(): {where} is with_dims over ({', '.join(names)}) but "
                f"the value written there is over ({', '.join(extra[0])})", self._def_loc())

    def _call_into(self, spec: Specialization, a: Analysis | None, backend: str,
                   plain: dict[str, Any], out: Any, domain: Any,
                   record: Callable[[], tuple | None] | None = None,
                   translated: bool = False, path: tuple[int, ...] = (),
                   longer: dict[str, int] | None = None,
                   longer_of: Callable[[Any, tuple[int, ...]], dict[str, int]] | None = None
                   ) -> Any:
        """``f(args, out=o, domain={D: (start, stop), …})``: write the value into ``o``
        on those coordinates (a dimension left out: its whole interval); one
        program per specialisation and set of dimensions, whatever the bounds.
        ``record``: the call's description for lookups by the source (the
        program is recorded under it; ``translated``: ``spec`` was translated
        by this call).  A tuple of domains (GT4Py's, one per output of
        ``out=(a, b)``, nested as ``out=`` is) writes each output on its own;
        ``path``: the part of the value ``out`` takes; ``longer``: how much longer
        ``out`` is than the inputs over a dimension (half levels written from
        full levels); ``longer_of``: the same for each output of a tuple, from
        the output and its path."""
        if domain is None and not path and type(out) is tuple:
            # a tuple value of parts over other dimensions (-> tuple[Field[[Cell, K], …],
            # Field[[K], …]]): each part written on its own, over its whole array
            domain = self._whole_domains(out)
        if isinstance(domain, (tuple, list)):
            return self._call_into_parts(spec, a, backend, plain, out,
                                         self._domain_parts(out, domain, path), longer_of)
        domain = {} if domain is None else domain
        assert spec.result is not None   # only a function specialisation has ``out=``
        self._check_domain(spec.result, domain)
        names = tuple(sorted(k.name for k in domain))
        longer = longer or {}
        into_key = (spec.key, names, path, tuple(sorted(longer.items())))
        new = into_key not in self._into
        try:
            derived, bounds = self._into_program(spec, a, names, path, longer, into_key)
        except TensorIRError as e:
            self._call_on_literals(spec, a, backend, plain, out, domain, path, into_key, e)
            return out

        def given(bounds: dict[str, tuple[str, str]]) -> dict[str, Any]:
            return _with_bounds(plain, spec, out, [(domain, bounds)])
        try:
            self._run(derived, backend, new, given(bounds))
        except ArgumentError as e:
            # a concat_where gap that the program takes to lie below a domain whose
            # bounds are both parameters, refused at the call before anything ran:
            # the domain may lie below it (the program that takes it so)
            if _GAP_CHECK not in e.message:
                self._call_on_literals(spec, a, backend, plain, out, domain, path,
                                       into_key, e)
                return out
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

    def _call_on_literals(self, spec: Specialization, a: Analysis | None, backend: str,
                          plain: dict[str, Any], out: Any, domain: dict, path: tuple[int, ...],
                          into_key: tuple, error: TensorIRError) -> None:
        """:meth:`_call_into` where its program (the domain's bounds as parameters)
        refused the call before anything ran or failed to translate (``error``)
        and the bounds are all Python ints: the function translated for those
        values, as a program body translates a literal ``domain=`` (a
        ``concat_where`` piece wholly outside the domain is left out, and needs
        no levels), made once per values; ``error`` where that fails too."""
        literal = {k.name: tuple(v) for k, v in domain.items()
                   if all(type(b) is int for b in v)}
        if not literal or len(literal) != len(domain):
            raise error
        assert spec.result is not None   # only a function specialisation has ``out=``
        key = into_key + ("literal", tuple(sorted(literal.items())))
        new = key not in self._into
        try:
            derived, bounds = self._into_program(spec, a, into_key[1], path, dict(into_key[3]),
                                                 key, literal=literal)
            self._run(derived, backend, new, _with_bounds(plain, spec, out, [(domain, bounds)]))
        except (ArgumentError, FrontendError, TypeCheckError):
            raise error from None

    def _check_domain(self, result: ir.Param, domain: Any) -> None:
        """``domain=`` must be a dict over the result's dimensions of (start, stop)
        pairs."""
        result_dims = {d.name for d in result.type.dims}
        if not isinstance(domain, dict) or not all(
                isinstance(k, Dimension) and k.name in result_dims for k in domain):
            raise ArgumentError(f"{self.fn.__name__}(): domain= takes a dict {{Dim: (start, "
                                f"stop)}} over the result's dimensions "
                                f"({', '.join(sorted(result_dims))}), got {domain!r}",
                                self._def_loc())
        for dim, pair in domain.items():
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ArgumentError(f"{self.fn.__name__}(): domain={{{dim.name}: (start, "
                                    f"stop)}} takes a pair of coordinates, got {pair!r}",
                                    self._def_loc())

    def _into_program(self, spec: Specialization, a: Analysis | None, names: tuple[str, ...],
                      path: tuple[int, ...], longer: dict[str, int], into_key: tuple,
                      below_stop: bool = False, literal: dict[str, tuple[int, int]] | None = None
                      ) -> tuple[Specialization, dict[str, tuple[str, str]]]:
        """The program :meth:`_call_into` runs (made once per ``into_key``) and
        per dimension of the domain its bound parameters; ``below_stop``: a
        ``concat_where`` gap is taken to lie above the domain where both its
        bounds are parameters (see :func:`.translate_call`).  Without ``domain=``,
        the function translated with ``out=``'s whole interval as its target (a
        scan in a ``concat_where`` piece runs over the piece's part of it, as in
        a program body; ``out=`` may be longer than the inputs); the
        specialisation's own program where that fails and it does not.  ``literal``: the domain's
        bounds, translated for those values (see :meth:`_call_on_literals`)."""
        hit = self._into.get(into_key)
        if hit is None:
            assert spec.result is not None   # only a function specialisation has ``out=``
            from .runtime_bounds import into_program

            def made(as_target: dict[str, int] | None
                     ) -> tuple[ir.Program, dict[str, tuple[str, str]]]:
                prog, result, given = self._in_domain(spec, a, names, path, below_stop,
                                                      as_target, literal)
                prog, bounds = into_program(prog, result, names, given, longer=longer)
                with lengths_noted(a), python_messages(self.fn, spec.names):
                    checked(prog)
                return prog, bounds
            if not names or longer:
                try:
                    prog, bounds = made(longer)
                except TensorIRError as e:
                    try:
                        prog, bounds = made(None)
                    except TensorIRError:
                        raise e from None
            else:
                prog, bounds = made(None)
            hit = self._into[into_key] = (
                Specialization(self.fn.__name__, spec.key, prog, names=spec.names), bounds)
        return hit

    def _call_into_parts(self, spec: Specialization, a: Analysis | None, backend: str,
                         plain: dict[str, Any], out: Any,
                         parts: list[tuple[tuple[int, ...], Any, dict]],
                         longer_of: Callable[[Any, tuple[int, ...]], dict[str, int]] | None = None
                         ) -> Any:
        """GT4Py's tuple of domains (``parts``: per output, the path of its part of
        the value, the output and its dict): each output written on its own
        domain, and, as in a program body (GT4Py's domain inference), each scan
        runs over the union of the domains of the outputs that read it.  One
        program per output, each taking the bounds of all the domains;
        ``longer_of``: how much longer than the inputs an output is (a part on
        half levels beside one on full levels), from the output and its path."""
        assert spec.result is not None   # only a function specialisation has ``out=``
        for _, _, d in parts:
            self._check_domain(spec.result, d)
        shape = tuple((p, tuple(sorted(k.name for k in d))) for p, _, d in parts)
        longer = [longer_of(o, p) if longer_of is not None else {} for p, o, _ in parts]
        if not any(names for _, names in shape):
            for (p, o, d), more in zip(parts, longer):   # no domain restricts anything
                self._call_into(spec, a, backend, plain, o, d, path=p, longer=more)
            return out
        # the bounds, where all are Python ints: translated for those values where
        # the program for parameter bounds refuses them (see _call_on_literals)
        given = tuple(tuple(sorted((k.name, tuple(v)) for k, v in d.items()))
                      for _, _, d in parts)
        literal = given if all(type(b) is int for d in given for _, v in d for b in v) \
            else None
        # every output's call is checked before any is written: a refused call
        # leaves all of out= as it was
        runs = [self._checked_part(spec, a, plain, parts, shape, i, literal,
                                   longer[i])
                for i in range(len(parts))]
        for derived, values, new in runs:
            self._run(derived, backend, new, values)
        return out

    def _checked_part(self, spec: Specialization, a: Analysis | None, plain: dict[str, Any],
                      parts: list[tuple[tuple[int, ...], Any, dict]],
                      shape: tuple[tuple[tuple[int, ...], tuple[str, ...]], ...], i: int,
                      literal: tuple | None, longer: dict[str, int]
                      ) -> tuple[Specialization, dict[str, Any], bool]:
        """Output ``i``'s program of a tuple of domains, its arguments and whether
        it was made now, once its arguments passed the call's checks; the
        program translated for the bounds' values (``literal``) where the one
        for parameter bounds refuses them; ``longer``: how much longer than the
        inputs the output is over a dimension."""
        def attempt(values_of: tuple | None) -> tuple[Specialization, dict[str, Any], bool]:
            derived, all_bounds, new = self._part_program(spec, a, shape, i, values_of, longer)
            values = _with_bounds(plain, spec, parts[i][1],
                                  [(d, b) for (_, _, d), b in zip(parts, all_bounds)])
            try:
                _check_arguments(derived, values)
            except ArgumentError as e:
                raise self._argument_error(e, spec.names) from None
            return derived, values, new
        try:
            return attempt(None)
        except (ArgumentError, FrontendError, TypeCheckError) as e:
            if literal is None:
                raise
            try:
                return attempt(literal)
            except (ArgumentError, FrontendError, TypeCheckError):
                raise e from None

    def _part_program(self, spec: Specialization, a: Analysis | None,
                      shape: tuple[tuple[tuple[int, ...], tuple[str, ...]], ...], i: int,
                      literal: tuple | None = None, longer: dict[str, int] | None = None
                      ) -> tuple[Specialization, list, bool]:
        """The program of output ``i`` of a tuple of domains (made once), its
        bound parameters per domain and whether it was made now; ``literal``:
        the domains' bounds, translated for those values; ``longer``: how much
        longer than the inputs the output is over a dimension."""
        longer = longer or {}
        key = (spec.key, shape, i, tuple(sorted(longer.items()))) + \
            (() if literal is None else ("literal", literal))
        hit = self._into.get(key)
        new = hit is None
        if hit is None:
            from .runtime_bounds import into_program
            prog, result, all_bounds = self._in_domains(spec, a, shape, i, literal, longer)
            prog, _ = into_program(prog, result, shape[i][1], all_bounds[i], longer=longer)
            with lengths_noted(a), python_messages(self.fn, spec.names):
                checked(prog)
            hit = self._into[key] = (
                Specialization(self.fn.__name__, spec.key, prog, names=spec.names), all_bounds)
        bounds: Any = hit[1]        # (per domain, where one is per output)
        return hit[0], bounds, new

    def _in_domains(self, spec: Specialization, a: Analysis | None,
                    shape: tuple[tuple[tuple[int, ...], tuple[str, ...]], ...], i: int,
                    literal: tuple | None = None, longer: dict[str, int] | None = None):
        """The function translated for output ``i`` of a tuple of domains
        (``shape``: per output, its path and the dimensions its dict restricts),
        with the bounds of all the domains as parameters: the program, its
        result parameter and per domain its bound parameters.  ``literal``: per
        domain, the values of its bounds, which the value is translated for
        (the parameters are still the targets'); ``longer``: how much longer than
        the inputs output ``i`` is."""
        from .functions import translate_call
        from .runtime_bounds import domain_bounds, out_target
        params, static = self._ir_params(spec.key)
        extent = out_target(params, list(longer), longer) if longer else None
        taken = list(params)
        all_bounds: list[dict] = []
        scalars: list[ir.Param] = []
        parts: list[tuple[tuple[int, ...], list]] = []
        for k, (path, names) in enumerate(shape):
            bounds, more, intervals = domain_bounds(taken + scalars, names, self._def_loc())
            if literal is not None:
                intervals = _at_values(intervals, dict(literal[k]))
            all_bounds.append(bounds)
            scalars += more
            parts.append((path, intervals))
        sp = self._specializer()
        analysis_ = a if a is not None else self._default_analysis()
        with python_messages(self.fn, spec.names):
            prog = translate_call(self.fn, list(params) + scalars, sp.table_dims(analysis_),
                                  self._result_name(), static=static, rank_generic=sp.generic,
                                  names=spec.names, parts=parts, part=i, extent=extent)
        return prog, prog.params[-1], all_bounds

    def _whole_domains(self, out: tuple) -> tuple | None:
        """For ``out=`` of a tuple return annotation whose parts have different
        dimensions: one domain per part, each its array's whole range over the
        dimensions its annotation names; else None (one program writes all)."""
        has, ann = annotation_of(self.fn, "return", self._def_loc(), strict=False)
        parts = typing.get_args(ann) if has and typing.get_origin(ann) is tuple else ()
        if len(parts) != len(out):
            return None
        specs = [sp for p in parts if isinstance(sp := annotation_spec(p), TensorSpec)
                 and all(isinstance(d, Dimension) for d in sp.dims)]
        if len(specs) != len(parts):
            return None
        if len({tuple(d.name for d in sp.dims) for sp in specs}) < 2:
            return None
        domains = []
        for sp, o in zip(specs, out):
            shape = getattr(o, "shape", None)
            if shape is None or len(shape) != len(sp.dims):
                return None
            domains.append({d: (0, int(n)) for d, n in zip(sp.dims, shape)})
        return tuple(domains)

    def _common_domain(self, out: tuple, spec: Specialization | None = None
                       ) -> dict | None:
        """For ``out=`` of a tuple return annotation whose parts all name the same
        dimensions: the intersection of its arrays' ranges (each from 0 to the
        shortest length over a dimension); else None.  A scan's return annotation
        names no dimensions (its parts are scalars per level): then those of the
        specialisation's result, which all parts share."""
        has, ann = annotation_of(self.fn, "return", self._def_loc(), strict=False)
        parts = [annotation_spec(p) for p in _annotation_leaves(ann)] if has else []
        leaves = [o for _, o in _out_leaves(out)]
        dims: list[Dimension]
        if len(parts) == len(leaves) and all(
                isinstance(sp, TensorSpec) and all(isinstance(d, Dimension) for d in sp.dims)
                for sp in parts):
            specs = typing.cast(list[TensorSpec], parts)
            if len({tuple(d.name for d in sp.dims) for sp in specs}) != 1:
                return None
            dims = list(specs[0].dims)
        elif spec is not None and spec.result is not None and (not has or all(
                not isinstance(sp, TensorSpec) for sp in parts) and parts):
            dims = [Dimension(d.name) for d in spec.result.type.dims]
        else:
            return None
        shapes: list[tuple[int, ...]] = []
        for o in leaves:
            sh = getattr(o, "shape", None)
            if sh is None or len(sh) != len(dims):
                return None
            shapes.append(tuple(sh))
        return {d: (0, min(int(sh[i]) for sh in shapes)) for i, d in enumerate(dims)}

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
                   path: tuple[int, ...] = (), below_stop: bool = False,
                   longer: dict[str, int] | None = None,
                   literal: dict[str, tuple[int, int]] | None = None
                   ) -> tuple[ir.Program, ir.Param, dict[str, tuple[str, str]] | None]:
        """The program, result and bound parameters (None: none yet) that
        ``into_program`` takes for ``domain=`` over ``names``: the function
        translated again with the domain's bounds as parameters, so that its
        scans run over the domain's range (as in a program body); ``path``: the
        part of the value written (of a tuple value, one per domain).  Without
        ``domain=``, given how much longer ``out=`` is than the inputs
        (``longer``, maybe nothing), the function translated again with
        ``out=``'s whole interval as its target, as in a program body: a scan
        in a ``concat_where`` piece runs over the piece's part of it, a runtime
        ``concat_where``'s piece at an end of ``out=`` (``KHalf == nlev``,
        ``K == nlev - 1``) is kept and checked at call time; ``longer`` None: the
        specialisation's own program."""
        assert spec.result is not None     # a direct call's specialisation has one
        if not names and longer is not None:
            prog = self._target_program(spec, a, longer)
            return _value_part(prog, prog.params[-1], path) + (None,)
        if not names:
            return _value_part(spec.program, spec.result, path) + (None,)
        prog, bounds = self._domain_program(spec.key, spec.names, a, names, below_stop,
                                            literal, longer)
        return _value_part(prog, prog.params[-1], path) + (bounds,)

    def _target_program(self, spec: Specialization, a: Analysis | None,
                        longer: dict[str, int]) -> ir.Program:
        """The function translated for ``spec`` with the whole interval of an
        ``out=`` longer than the inputs by ``longer`` as its target."""
        from .functions import translate_call
        from .runtime_bounds import out_target
        assert spec.result is not None     # a direct call's specialisation has one
        params, static = self._ir_params(spec.key)
        target = out_target(params, [d.name for d in spec.result.type.dims], longer)
        sp = self._specializer()
        analysis_ = a if a is not None else self._default_analysis()
        with lengths_noted(a), python_messages(self.fn, spec.names):
            return translate_call(self.fn, params, sp.table_dims(analysis_),
                                  self._result_name(), static=static, rank_generic=sp.generic,
                                  names=spec.names, target=target)

    def _domain_program(self, key: tuple[ParamSig, ...], renamed: dict[str, str],
                        a: Analysis | None, names: tuple[str, ...], below_stop: bool = False,
                        literal: dict[str, tuple[int, int]] | None = None,
                        longer: dict[str, int] | None = None
                        ) -> tuple[ir.Program, dict[str, tuple[str, str]]]:
        """The function translated for specialisation ``key`` (``renamed``: its
        parameters named otherwise in the IR) with bound parameters of the
        dimensions ``names`` as its domain: the program and per dimension the
        names of its start and stop parameters.  ``literal``: the values of the
        bounds, which the value is translated for (the parameters are still
        the target's); ``longer``: how much longer than the inputs ``out=`` is."""
        from .functions import translate_call
        from .runtime_bounds import domain_bounds, out_target
        params, static = self._ir_params(key)
        bounds, scalars, intervals = domain_bounds(params, names, self._def_loc())
        extent = out_target(params, list(longer), longer) if longer else None
        if literal:
            intervals = _at_values(intervals, literal)
        sp = self._specializer()
        analysis_ = a if a is not None else self._default_analysis()
        with python_messages(self.fn, renamed):
            prog = translate_call(self.fn, list(params) + scalars, sp.table_dims(analysis_),
                                  self._result_name(), static=static, rank_generic=sp.generic,
                                  domain=intervals, names=renamed, gap_below_stop=below_stop,
                                  extent=extent)
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
            with lengths_noted(a):
                prog, _ = self._domain_program(key, renamed, a, names)
            return Specialization(self.fn.__name__, key, prog, result=prog.params[-1],
                                  names=renamed)
        return make


def _annotation_leaves(ann: Any) -> Iterator[Any]:
    """The leaves of a (nested) ``tuple[…]`` annotation."""
    if typing.get_origin(ann) is tuple:
        for p in typing.get_args(ann):
            yield from _annotation_leaves(p)
    else:
        yield ann


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


def _at_values(intervals: list, values: dict[str, tuple[int, int]]) -> list:
    """``intervals`` with their bounds replaced by ``values`` ({dimension: (start,
    stop)}): a domain translated for the values of its bounds."""
    from .runtime_bounds import interval
    return [interval(i.name, ir.as_bound(values[i.name][0]), ir.as_bound(values[i.name][1]),
                     i.loc) for i in intervals]


def _with_bounds(plain: dict[str, Any], spec: Specialization, out: Any,
                 domains: list[tuple[dict, dict[str, tuple[str, str]]]]) -> dict[str, Any]:
    """The arguments (by Python name) of a program ``spec`` writing ``out``:
    ``plain`` and, per domain, its bounds given to its bound parameters."""
    assert spec.result is not None   # only a function specialisation has ``out=``
    values = dict(plain)
    values[spec.result.name] = out
    for domain, bounds in domains:
        for dim, pair in domain.items():
            for name, v in zip(bounds[dim.name], pair):
                values[name] = v
    return values


def _check_arguments(spec: Specialization, values: dict[str, Any]) -> None:
    """The checks a call of ``spec`` with ``values`` (by Python name) makes
    before it writes anything: dtypes, shapes, the orders of its bounds,
    writeable outputs and neighbour tables."""
    from ..interpreter import checked_arguments, typed_program
    checked_arguments(typed_program(spec.program), spec.ir_values(values))


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
    compile_options = check_compile_options("scan_operator", compile_options)

    def deco(fn: Callable) -> ScanOperator:
        return DirectScanOperator(fn, axis, forward, init, backend, compile_options)
    return deco


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
    # an operand annotated with a scalar type (``nlev: int32``) takes arrays of any
    # dimensions, and a Python number given to it takes that type, as in GT4Py
    anns = getattr(op.fn, "__annotations__", None) or {}
    wrapper.__annotations__ = {}
    for n in names:
        try:
            spec = annotation_spec(evaluated_annotation(op.fn, anns[n])) if n in anns else None
        except Exception:  # noqa: BLE001 - an unreadable annotation declares nothing
            spec = None
        if spec is not None and not spec.dims and isinstance(spec.element(), ir.ScalarType):
            wrapper.__annotations__[n] = GenericSpec(numbers=spec.dtype)
    return wrapper


def _dim_label(d: Any) -> str:
    return d.name if isinstance(d, Dimension) else repr(d)


def _out_leaves(out: Any, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Any]]:
    """The arrays of a (nested) tuple ``out=``, each with its path."""
    if type(out) is tuple:
        for k, o in enumerate(out):
            yield from _out_leaves(o, path + (k,))
    else:
        yield path, out


def _same_domain_each(out: Any, domain: dict) -> Any:
    """One domain for a (nested) tuple ``out=`` as GT4Py's tuple of domains:
    ``domain`` for each of its outputs, nested as ``out=`` is."""
    if type(out) is tuple:
        return tuple(_same_domain_each(o, domain) for o in out)
    return domain
