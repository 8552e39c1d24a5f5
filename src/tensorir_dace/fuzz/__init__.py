"""Differential fuzzing: random well-typed programs compiled and compared with the
interpreter, and mutated program texts fed to the parser and checker.

    python -m tensorir_dace.fuzz --programs 1000 --jobs 2 --seed 0 --out fuzz-failures

The contract it checks: what ``check`` accepts, ``compile`` compiles, and the
result agrees with ``interpret`` at two sets of sizes and several runtime
bounds (``BOUNDS``) through one binary; only
a ``TensorIRError`` may come out of any stage."""

from .generator import (
    BOUNDS,
    CUTS,
    I_RANGES,
    INPUTS,
    J_RANGES,
    KINDS,
    SIZES,
    Case,
    batch,
    float_expression,
    generate_case,
    program_text,
)
from .runner import Outcome, case_fails, fuzz_parser, mutate, run_text, shrink

__all__ = ["BOUNDS", "CUTS", "I_RANGES", "INPUTS", "J_RANGES", "KINDS", "SIZES", "Case",
           "Outcome", "batch", "case_fails", "float_expression", "fuzz_parser",
           "generate_case", "mutate", "program_text", "run_text", "shrink"]
