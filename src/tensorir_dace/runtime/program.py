"""Compiled Tensor IR programs: lower, optimise, compile (cached), call.

:func:`compile` first looks the program up by its source (:mod:`.source_cache`):
on a hit the cached library is called through ctypes (:mod:`.native`), and
nothing is parsed, lowered or imported from DaCe or SymPy until something
needs it (``.program``, ``.sdfg``, ``__sdfg__``, or a call the plain checks do
not accept).  This module imports neither at load time.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import TensorIRError
from ..interop import SDFGConvertible
from ..tracebacks import api_boundary
from .device import GPUCallable

if TYPE_CHECKING:
    import dace

    from .. import ir
    from .compiled import CallSignature

__all__ = ["CompiledProgram", "compile"]


class CompiledProgram(SDFGConvertible):
    """A program compiled through DaCe; call it with keyword arguments named like
    the parameters (same conventions as :func:`tensorir_dace.interpret`).

    ``program``, ``sdfg`` and ``signature`` are made when first used if the
    program came from the cache by its source."""

    def __init__(self, program: ir.Program, sdfg: dace.SDFG, signature: CallSignature,
                 *, cache_dir: str | os.PathLike | None = None, source_key: str | None = None,
                 resident_sdfg: Callable[[], dace.SDFG] | None = None):
        self._program: ir.Program | None = program
        self._source: str | None = None
        self._options: dict[str, Any] = {"cache_dir": cache_dir}
        self._sdfg: dace.SDFG | None = sdfg
        self._signature: CallSignature | None = signature
        self._params: tuple[str, ...] = tuple(p.name for p in program.params)
        full = self._full_callable()
        host: Any = full
        plan = _store_plan(full, source_key, cache_dir) if source_key is not None else None
        if plan is not None:
            # Calls go through ctypes as in a later process; DaCe's loader stays the fallback.
            from .library import Library, LibraryError
            from .native import NativeCallable
            try:
                library = Library(full.compiled._tir_library, plan["name"], plan)
                host = NativeCallable(plan, library, fallback=lambda: full)
            except LibraryError:
                pass            # changed on disk since DaCe loaded it: keep DaCe's handle
        self._callable: Any = host
        if resident_sdfg is not None:   # a GPU program: GPU arrays go to a second build
            self._callable = GPUCallable(host, lambda: self._callable_for(resident_sdfg()),
                                         full.where)

    @classmethod
    def _from_cache(cls, source: str, plan: dict[str, Any], library: Any,
                    options: dict[str, Any]) -> CompiledProgram:
        from .native import NativeCallable
        self = cls.__new__(cls)
        self._program = self._sdfg = self._signature = None
        self._source = source
        self._options = options
        self._params = tuple(plan["params"])
        native = NativeCallable(plan, library, fallback=self._full_callable)
        self._callable = native
        if options.get("device") == "gpu":     # GPU arrays go to a second build
            self._callable = GPUCallable(native, self._resident_callable,
                                         f"program '{plan['program']}'")
        return self

    def _resident_callable(self) -> Any:
        """The build of a GPU program for device-resident arrays (lowered now)."""
        from ..lowering import lower_program
        return self._callable_for(lower_program(
            self.program, optimize=self._options.get("optimize", "default"),
            device="gpu", resident=True).sdfg)

    def _full_callable(self) -> Any:
        """The DaCe-loaded callable with every check (lowers the program if needed)."""
        if self._sdfg is None or self._signature is None:
            from ..lowering import lower_program
            lowered = lower_program(self.program, optimize=self._options.get("optimize",
                                                                             "default"),
                                    device=self._options.get("device", "cpu"))
            self._sdfg, self._signature = lowered.sdfg, lowered.signature
        return self._callable_for(self._sdfg)

    def _callable_for(self, sdfg: dace.SDFG) -> Any:
        """An ``SDFGCallable`` of ``sdfg`` (compiled through the cache) with every check."""
        from ..callchecks import CallChecks
        from ..typing import check
        from .cache import compile_sdfg
        from .compiled import SDFGCallable
        try:
            checks = CallChecks.for_program(check(self.program))
            with warnings.catch_warnings():     # DaCe warns when ctypes loaded it already
                warnings.filterwarnings("ignore", message="Library .* already loaded")
                compiled = compile_sdfg(sdfg, cache_dir=self._options.get("cache_dir"))
            return SDFGCallable(compiled, self.signature, name=self.program.name,
                                checks=checks)
        except ValueError as e:
            raise TensorIRError(f"the SDFG '{sdfg.name}' does not fit program "
                                f"'{self.program.name}': {e}") from None

    @property
    def param_names(self) -> tuple[str, ...]:
        """The parameters' names, in order (known without parsing)."""
        return self._params

    @property
    def program(self) -> ir.Program:
        if self._program is None:
            from ..syntax import parse
            assert self._source is not None
            self._program = parse(self._source)
        return self._program

    @property
    def sdfg(self) -> dace.SDFG:
        """The SDFG that was built (loads DaCe and lowers the program when needed)."""
        if self._sdfg is None:
            self._callable.set_fallback(self._full_callable())
        assert self._sdfg is not None
        return self._sdfg

    @property
    def signature(self) -> CallSignature:
        self.sdfg  # noqa: B018  # made with it
        assert self._signature is not None
        return self._signature

    def device_resident(self) -> Any:
        """The build of a ``device="gpu"`` program that takes GPU arrays, compiled now
        (otherwise on the first call with GPU arrays); see :mod:`.device`."""
        if not isinstance(self._callable, GPUCallable):
            raise TensorIRError(f"program '{self.program.name}' was not compiled with "
                                "device=\"gpu\", so it has no build for GPU arrays")
        return self._callable.resident()

    @classmethod
    def from_sdfg(cls, program: ir.Program, sdfg: dace.SDFG, *,
                  cache_dir: str | os.PathLike | None = None) -> CompiledProgram:
        """Compile an SDFG obtained from :func:`tensorir_dace.to_sdfg` (and perhaps
        transformed by the user) behind this program's argument checks."""
        from ..lowering import lower
        from ..typing import check
        signature = lower(check(program)).signature
        missing = [b.data for b in signature.bindings
                   if b.data not in sdfg.arrays and b.data not in sdfg.symbols]
        if missing:
            raise TensorIRError("the SDFG lacks the containers "
                                + ", ".join(missing) + f" of program '{program.name}'; "
                                "was it made by to_sdfg from this program?")
        return cls(program, sdfg, signature, cache_dir=cache_dir)

    @property
    def _callable(self) -> Any:
        return self._callable_

    @_callable.setter
    def _callable(self, callable: Any) -> None:
        """Set the callable, and the function a call runs: the native
        callable's hot path (see :meth:`.NativeCallable.hot_call`), else one
        passing the keyword arguments on."""
        self._callable_ = callable
        self._call = callable.hot_call() if hasattr(callable, "hot_call") \
            else lambda kwargs: callable(**kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        try:                # an entry point, inlined: no extra frame per call
            if args:
                kwargs = self._merged(args, kwargs)
            self._call(kwargs)
        except TensorIRError as e:
            _reraise_at_boundary(e)

    def _merged(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Positional arguments merged into the keyword arguments."""
        if len(args) > len(self._params) or set(self._params[:len(args)]) & set(kwargs):
            from ..arguments import merge_positional
            return merge_positional(self.program.params, args, kwargs,
                                    f"program '{self.program.name}'")
        return {**dict(zip(self._params, args)), **kwargs}

    def interop_program(self) -> ir.Program:
        return self.program

    @property
    def name(self) -> str:
        if self._program is not None:
            return self._program.name
        return str(self._callable.plan["program"])

    def __repr__(self) -> str:
        sdfg = f"{self._sdfg.name!r}" if self._sdfg is not None else "(cached library)"
        return f"CompiledProgram({self.name!r}, sdfg={sdfg})"


@api_boundary
def _reraise_at_boundary(error: TensorIRError) -> None:
    """Raise ``error`` as a public entry point does (package frames hidden)."""
    raise error


def _store_plan(callable: Any, key: str, cache_dir: str | os.PathLike | None
                ) -> dict[str, Any] | None:
    """Record how to call the library without DaCe, for the next process."""
    from .plan import call_plan
    from .source_cache import store_plan
    library = getattr(callable.compiled, "_tir_library", None)
    if library is None:
        return None
    plan = call_plan(callable, str(library))
    if plan is not None:
        store_plan(key, plan, library, cache_dir)
    return plan


def compile(program: ir.Program | str, *, optimize: str = "default", device: str = "cpu",
            cache_dir: str | os.PathLike | None = None) -> CompiledProgram:
    """Check, lower, optimise and compile a program (compiled once per content).

    ``program`` is an :class:`~tensorir_dace.ir.Program` or its text.  The
    compile cache is looked up first by the program's text and the options
    (for an IR program, its printed text): a program compiled before, in any
    process, is then called through its cached library at once, without
    lowering, and -- for text -- without parsing or importing SymPy or DaCe.

    ``device="gpu"`` compiles CUDA kernels (with nvcc; DaCe's
    ``compiler.cuda.cuda_arch`` setting picks the architecture); such a
    program takes NumPy arrays (copied to the device and back on each call)
    or GPU arrays such as CuPy's (used in place, through a second build made on
    the first such call; see :mod:`.device`).  Calling it on a machine without
    a GPU raises ``GPUUnavailableError``."""
    from .source_cache import load_plan, source_key
    options = {"optimize": optimize, "device": device, "cache_dir": cache_dir}
    if isinstance(program, str):
        text = program
    else:
        from ..syntax import format as format_program
        text = format_program(program)
    key = source_key(text, optimize=optimize, device=device)
    hit = load_plan(key, cache_dir)
    if hit is not None:
        compiled = CompiledProgram._from_cache(text, hit[0], hit[1], options)
        if not isinstance(program, str):
            compiled._program = program
        return compiled
    from .. import ir as ir_module  # a miss: SymPy and DaCe are needed from here on
    with ir_module.recursion_room():
        if isinstance(program, str):
            from ..syntax import parse
            program = parse(text)
        from ..lowering import lower_program
        lowered = lower_program(program, optimize=optimize, device=device)
        resident = None
        if device == "gpu":
            typed = program
            resident = lambda: lower_program(typed, optimize=optimize,  # noqa: E731
                                             device=device, resident=True).sdfg
        return CompiledProgram(program, lowered.sdfg, lowered.signature,
                               cache_dir=cache_dir, source_key=key, resident_sdfg=resident)
