"""Compiled Tensor IR programs: lower, optimise, compile (cached), call."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import dace

from .. import ir
from ..arguments import merge_positional
from ..callchecks import CallChecks
from ..errors import TensorIRError
from ..interop import SDFGConvertible
from ..lowering import lower_program
from ..tracebacks import api_boundary
from ..typing import check
from .cache import compile_sdfg
from .compiled import CallSignature, SDFGCallable
from .device import GPUCallable


class CompiledProgram(SDFGConvertible):
    """A program compiled through DaCe; call it with keyword arguments named like
    the parameters (same conventions as :func:`tensorir_dace.interpret`)."""

    def __init__(self, program: ir.Program, sdfg: dace.SDFG, signature: CallSignature,
                 *, cache_dir: str | os.PathLike | None = None,
                 resident_sdfg: Callable[[], dace.SDFG] | None = None):
        self.program = program
        self.sdfg = sdfg
        self.signature = signature
        self._callable: SDFGCallable | GPUCallable = self._wrap(sdfg, cache_dir)
        if resident_sdfg is not None:
            self._callable = GPUCallable(self._callable,
                                         lambda: self._wrap(resident_sdfg(), cache_dir))

    def _wrap(self, sdfg: dace.SDFG, cache_dir: str | os.PathLike | None) -> SDFGCallable:
        program = self.program
        try:
            checks = CallChecks.for_program(check(program))
            return SDFGCallable(compile_sdfg(sdfg, cache_dir=cache_dir), self.signature,
                                name=program.name, checks=checks)
        except ValueError as e:
            raise TensorIRError(f"the SDFG '{sdfg.name}' does not fit program "
                                f"'{program.name}': {e}") from None

    def device_resident(self) -> SDFGCallable:
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
        signature = lower(check(program)).signature
        missing = [b.data for b in signature.bindings if b.data not in sdfg.arrays]
        if missing:
            raise TensorIRError("the SDFG lacks the containers "
                                + ", ".join(missing) + f" of program '{program.name}'; "
                                "was it made by to_sdfg from this program?")
        return cls(program, sdfg, signature, cache_dir=cache_dir)

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            kwargs = merge_positional(self.program.params, args, kwargs,
                                      f"program '{self.program.name}'")
        self._callable(**kwargs)


    def interop_program(self) -> ir.Program:
        return self.program

    def __repr__(self) -> str:
        return f"CompiledProgram({self.program.name!r}, sdfg={self.sdfg.name!r})"


def compile(program: ir.Program, *, optimize: str = "default", device: str = "cpu",
            cache_dir: str | os.PathLike | None = None) -> CompiledProgram:
    """Check, lower, optimise and compile a program (compiled once per content).

    ``device="gpu"`` compiles CUDA kernels (with nvcc; DaCe's
    ``compiler.cuda.cuda_arch`` setting picks the architecture); such a
    program takes NumPy arrays (copied to the device and back on each call)
    or GPU arrays such as CuPy's (used in place, through a second build made on
    the first such call; see :mod:`.device`).  Calling it on a machine without
    a GPU raises ``GPUUnavailableError``."""
    lowered = lower_program(program, optimize=optimize, device=device)
    resident = (lambda: lower_program(program, optimize=optimize, device=device,
                                      resident=True).sdfg) if device == "gpu" else None
    return CompiledProgram(program, lowered.sdfg, lowered.signature, cache_dir=cache_dir,
                           resident_sdfg=resident)
