"""Differential fuzzing: random well-typed programs compiled and compared with the
interpreter, and mutated program texts fed to the parser and checker.

    python -m tensorir_dace.fuzz --programs 1000 --jobs 2 --seed 0 --out fuzz-failures
    python -m tensorir_dace.fuzz --front python --programs 200 --out fuzz-failures

The contract it checks: what ``check`` accepts, ``compile`` compiles, and the
result agrees with ``interpret`` at two sets of sizes and several runtime
bounds (``BOUNDS``) through one binary; only
a ``TensorIRError`` may come out of any stage.  Mutated calls of each binary
(wrong dtypes, shapes, layouts, scalars, tables, aliases: :mod:`.calls`) must
be refused by both the binary and the interpreter, or agree.  For the Python front end each
program is written twice, as a decorated module and as Tensor IR text; the
module interpreted and compiled must agree with the interpreted text.  Programs
in GT4Py's spelling (``--front gtx``) are compared with a NumPy reference
written beside each field operator (:mod:`.gtx_programs`)."""

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
from .gtx_programs import GtxCase, generate_gtx_case, gtx_batch, gtx_source
from .gtx_runner import run_gtx, run_gtx_batch
from .python_programs import KINDS as PYTHON_KINDS
from .python_programs import (
    PyCase,
    builtin_like_names,
    generate_python_case,
    python_batch,
    python_source,
    text_source,
)
from .python_runner import PyOutcome, differential, run_python, run_python_batch
from .python_runner import case_fails as python_case_fails
from .python_runner import reproducer as python_reproducer
from .runner import Outcome, case_fails, fuzz_parser, mutate, run_text, shrink

__all__ = ["BOUNDS", "CUTS", "GtxCase", "generate_gtx_case", "gtx_batch", "gtx_source",
           "run_gtx", "run_gtx_batch", "I_RANGES", "INPUTS", "J_RANGES", "KINDS", "PYTHON_KINDS",
           "SIZES", "Case", "Outcome", "PyCase", "PyOutcome", "batch", "builtin_like_names",
           "case_fails",
           "differential", "float_expression", "fuzz_parser", "generate_case",
           "generate_python_case", "mutate", "program_text", "python_batch",
           "python_case_fails", "python_reproducer", "python_source", "run_python",
           "run_python_batch", "run_text", "shrink", "text_source"]
