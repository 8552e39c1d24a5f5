"""tensorir_dace: Tensor IR stencil programs, checked, interpreted with NumPy and
compiled through DaCe SDFGs.

    import tensorir_dace as tir
    prog = tir.parse(open("laplacian.tir").read())
    tir.interpret(prog, out=out, inp=inp)          # NumPy reference
    tir.compile(prog)(out=out, inp=inp)            # DaCe-compiled

Importing the package is cheap: SymPy is imported when a program is parsed
or checked, DaCe when one is lowered or compiled; a program whose binary is
in the compile cache runs without either (see ``tensorir_dace.compile``).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from . import openmp  # noqa: F401  # sets the OpenMP wait policy before libgomp loads
from .errors import (
    ArgumentError,
    FrontendError,
    LoweringError,
    ParseError,
    ShapeMismatchError,
    SourceLoc,
    TensorIRError,
    TypeCheckError,
)
from .log import configure_from_env as _configure_log
from .tracebacks import api_boundary

_configure_log()

__version__ = "0.1.0"

# Public names defined in submodules that import heavy dependencies (DaCe) or
# are loaded on first use.
_LAZY = {
    "check": ("typing", "check"),
    "build": ("build", "build"),
    "set_num_threads": ("openmp", "set_num_threads"),
    "get_num_threads": ("openmp", "get_num_threads"),
    "parse": ("syntax", "parse"),
    "parse_expr": ("syntax", "parse_expr"),
    "parse_type": ("syntax", "parse_type"),
    "format": ("syntax", "format"),
    "interpret": ("interpreter", "interpret"),
    "to_sdfg": ("lowering", "to_sdfg"),
    "compile": ("runtime.program", "compile"),
    "view": ("viewer", "view"),
    "CompiledProgram": ("runtime.program", "CompiledProgram"),
    "function": ("frontend", "function"),
    "program": ("frontend", "program"),
    "Tensor": ("frontend", "Tensor"),
    "dims": ("frontend", "dims"),
    "scan_operator": ("frontend", "scan_operator"),
    "neighbor_dim": ("frontend", "neighbor_dim"),
    "neighbor_sum": ("frontend", "neighbor_sum"),
    "max_over": ("frontend", "max_over"),
    "min_over": ("frontend", "min_over"),
    "reduce": ("frontend", "reduce"),
    "where": ("frontend", "where"),
    "concat_where": ("frontend", "concat_where"),
    "cast": ("frontend", "cast"),
    "index": ("frontend", "index"),
    "can_deref": ("frontend", "can_deref"),
    "connectivity": ("frontend", "connectivity"),
    "as_offset": ("frontend", "as_offset"),
    "broadcast": ("frontend", "broadcast"),
    "astype": ("frontend", "astype"),
    "with_interval": ("frontend", "with_interval"),
    "sizes": ("frontend", "sizes"),
    "SparseTensor": ("frontend", "SparseTensor"),
    "float32": ("frontend", "float32"),
    "float64": ("frontend", "float64"),
    "int32": ("frontend", "int32"),
    "int64": ("frontend", "int64"),
    "with_dims": ("frontend", "with_dims"),
    "default_dims": ("frontend", "default_dims"),
    "get_default_dims": ("frontend", "get_default_dims"),
    "CacheInfo": ("frontend", "CacheInfo"),
    "Specialization": ("frontend", "Specialization"),
    "sqrt": ("frontend", "sqrt"),
    "exp": ("frontend", "exp"),
    "log": ("frontend", "log"),
    "log10": ("frontend", "log10"),
    "log2": ("frontend", "log2"),
    "sin": ("frontend", "sin"),
    "cos": ("frontend", "cos"),
    "tan": ("frontend", "tan"),
    "arcsin": ("frontend", "arcsin"),
    "arccos": ("frontend", "arccos"),
    "arctan": ("frontend", "arctan"),
    "arctan2": ("frontend", "arctan2"),
    "sinh": ("frontend", "sinh"),
    "cosh": ("frontend", "cosh"),
    "tanh": ("frontend", "tanh"),
    "arcsinh": ("frontend", "arcsinh"),
    "arccosh": ("frontend", "arccosh"),
    "arctanh": ("frontend", "arctanh"),
    "floor": ("frontend", "floor"),
    "ceil": ("frontend", "ceil"),
    "trunc": ("frontend", "trunc"),
    "cbrt": ("frontend", "cbrt"),
    "gamma": ("frontend", "gamma"),
    "isfinite": ("frontend", "isfinite"),
    "isnan": ("frontend", "isnan"),
    "isinf": ("frontend", "isinf"),
    "minimum": ("frontend", "minimum"),
    "maximum": ("frontend", "maximum"),
    "power": ("frontend", "power"),
    "fmod": ("frontend", "fmod"),
    "abs": ("frontend", "abs"),
    "field_operator": ("frontend", "field_operator"),
}


# Entry points whose errors lose the package-internal traceback frames.
_BOUNDARIES = {"parse", "parse_expr", "parse_type", "format", "interpret", "to_sdfg",
               "compile", "view", "check", "build"}


def __getattr__(name: str) -> Any:
    if name == "ir":
        value = import_module(".ir", __name__)
        globals()[name] = value
        return value
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(import_module(f".{module}", __name__), attr)
        if name in _BOUNDARIES:
            value = api_boundary(value)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorir_dace' has no attribute '{name}'")


__all__ = ["ir", "check", "TensorIRError", "ParseError", "TypeCheckError", "ArgumentError",
           "FrontendError", "LoweringError", "ShapeMismatchError", "SourceLoc", *_LAZY]
