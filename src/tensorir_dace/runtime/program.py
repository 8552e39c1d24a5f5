"""Compiled Tensor IR programs: lower, optimise, compile (cached), call."""

from __future__ import annotations

import os
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


class CompiledProgram(SDFGConvertible):
    """A program compiled through DaCe; call it with keyword arguments named like
    the parameters (same conventions as :func:`tensorir_dace.interpret`)."""

    def __init__(self, program: ir.Program, sdfg: dace.SDFG, signature: CallSignature,
                 *, cache_dir: str | os.PathLike | None = None):
        self.program = program
        self.sdfg = sdfg
        self.signature = signature
        try:
            checks = CallChecks.for_program(check(program))
            self._callable = SDFGCallable(compile_sdfg(sdfg, cache_dir=cache_dir), signature,
                                          name=program.name, checks=checks)
        except ValueError as e:
            raise TensorIRError(f"the SDFG '{sdfg.name}' does not fit program "
                                f"'{program.name}': {e}") from None

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
    ``compiler.cuda.cuda_arch`` setting picks the architecture); calling such a
    program on a machine without a GPU raises ``GPUUnavailableError``."""
    lowered = lower_program(program, optimize=optimize, device=device)
    return CompiledProgram(program, lowered.sdfg, lowered.signature, cache_dir=cache_dir)
