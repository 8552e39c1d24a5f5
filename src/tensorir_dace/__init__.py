"""tensorir_dace: Tensor IR stencil programs, checked, interpreted with NumPy and
compiled through DaCe SDFGs.

    import tensorir_dace as tir
    prog = tir.parse(open("laplacian.tir").read())
    tir.interpret(prog, out=out, inp=inp)          # NumPy reference
    tir.compile(prog)(out=out, inp=inp)            # DaCe-compiled

DaCe is imported only when a program is lowered or compiled.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from . import ir
from .errors import (
    ArgumentError,
    FrontendError,
    LoweringError,
    ParseError,
    SourceLoc,
    TensorIRError,
    TypeCheckError,
)
from .log import configure_from_env as _configure_log
from .tracebacks import api_boundary
from .typing import check as _check

check = api_boundary(_check)

_configure_log()

__version__ = "0.1.0"

# Public names defined in submodules that import heavy dependencies (DaCe) or
# are loaded on first use.
_LAZY = {
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
    "isfinite": ("frontend", "isfinite"),
    "isnan": ("frontend", "isnan"),
    "isinf": ("frontend", "isinf"),
    "minimum": ("frontend", "minimum"),
    "maximum": ("frontend", "maximum"),
    "power": ("frontend", "power"),
    "abs": ("frontend", "abs"),
    "field_operator": ("frontend", "field_operator"),
}


# Entry points whose errors lose the package-internal traceback frames.
_BOUNDARIES = {"parse", "parse_expr", "parse_type", "format", "interpret", "to_sdfg",
               "compile", "view"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(import_module(f".{module}", __name__), attr)
        if name in _BOUNDARIES:
            value = api_boundary(value)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorir_dace' has no attribute '{name}'")


__all__ = ["ir", "check", "TensorIRError", "ParseError", "TypeCheckError", "ArgumentError",
           "FrontendError", "LoweringError", "SourceLoc", *_LAZY]
