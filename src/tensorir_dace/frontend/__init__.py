"""The Python front end: Tensor IR programs written as decorated Python functions.

    import tensorir_dace as tir
    from tensorir_dace import Tensor, dims

    I, J = dims("I J")

    @tir.function
    def lap(x):
        return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)

    @tir.program
    def smooth(inp: Tensor[float, I, J], out: Tensor[float, I, J], alpha: float):
        out[2:-2, 2:-2] = inp - alpha * lap(lap(inp))

    smooth(inp, out, 0.1)          # compiled with DaCe, out written in place
    print(tir.format(smooth.ir))   # the Tensor IR

    y = lap(tir.with_dims(a, I, J))   # rank-generic @function called directly: a new array
    lap.specializations()             # what was specialised (and logged why, on the logger
                                      # "tensorir_dace.specialization")

See docs/frontend.md for the tutorial and docs/specialization.md for rank-generic
programs and functions.

Layout, in the order a call flows through it.  What users write with:
``dims`` (dimensions, offsets, index conditions), ``annotations`` (``Tensor[…]``
and argument wrappers), ``api`` (the builtins), ``callables`` (scan operators
and the classes translation recognises decorated objects by).  Specialising at
call time: ``decorators`` gathers the decorators; ``field_operators``
(``@function``/``@scan_operator`` objects) and ``program_objects``
(``@program`` objects) share ``specialized``, which asks ``analysis`` to
describe the arguments and ``specialize`` for the cached specialisation (keys,
logging, compiled binaries); a new one is translated.  Reading the
source: ``source`` (AST and file positions).  Translating: ``nodes`` lists every
supported AST node type and the method that handles it; the translator is a
chain of classes, each adding one concern: ``expressions`` (names, operators,
subscripts; the values of ``values``; the program state of ``context``) <
``builtin_calls`` (builtins, casts, shifts, concat_where) < ``reductions``
(reductions and scans) < ``bodies`` (statements of function bodies, evaluated
to their return value) < ``functions`` (calls and inlining; entry point
``translate_call``) < ``assignments`` (names and writes in programs) <
``programs`` (program statements and control flow; entry point
``translate_program``).
"""

from .annotations import (
    Dims,
    Field,
    GenericSpec,
    SparseTensor,
    Tensor,
    TensorArg,
    TensorSpec,
    bool_,
    element_type,
    float32,
    float64,
    int32,
    int64,
    with_dims,
    with_interval,
)
from .api import (
    ReduceOp,
    abs,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    as_offset,
    astype,
    broadcast,
    can_deref,
    cast,
    cbrt,
    ceil,
    concat_where,
    cos,
    cosh,
    exp,
    floor,
    fmod,
    gamma,
    index,
    isfinite,
    isinf,
    isnan,
    log,
    log2,
    log10,
    max_over,
    maximum,
    min_over,
    minimum,
    neighbor_sum,
    power,
    reduce,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
    where,
)
from .connectivities import (
    CartesianOffset,
    Connectivity,
    FieldOffset,
    LocalOffset,
    NeighborTableOffsetProvider,
    StridedNeighborOffsetProvider,
    as_connectivity,
    connectivity,
)
from .decorators import (
    FunctionObject,
    GridType,
    ProgramObject,
    ScanOperator,
    field_operator,
    function,
    program,
    scan_operator,
)
from .dims import (
    Dimension,
    DimensionKind,
    DimMask,
    LocalDimension,
    NeighborDimension,
    NeighborSlot,
    Offset,
    as_non_staggered,
    dims,
    flip_staggered,
    is_staggered,
    neighbor_dim,
    size,
    sizes,
)
from .fields import Domain, as_field, domain, empty, full, ones, zeros
from .specialize import (
    CacheInfo,
    ParamSig,
    Specialization,
    default_dims,
    get_default_dims,
)

__all__ = [
    "CacheInfo",
    "CartesianOffset",
    "Connectivity",
    "DimMask",
    "Dimension",
    "DimensionKind",
    "Domain",
    "Dims",
    "Field",
    "FieldOffset",
    "FunctionObject",
    "GenericSpec",
    "GridType",
    "LocalDimension",
    "LocalOffset",
    "NeighborDimension",
    "NeighborTableOffsetProvider",
    "NeighborSlot",
    "Offset",
    "ParamSig",
    "ProgramObject",
    "ReduceOp",
    "ScanOperator",
    "SparseTensor",
    "Specialization",
    "StridedNeighborOffsetProvider",
    "Tensor",
    "TensorArg",
    "TensorSpec",
    "abs",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "as_connectivity",
    "as_field",
    "as_non_staggered",
    "as_offset",
    "broadcast",
    "astype",
    "bool_",
    "can_deref",
    "cast",
    "cbrt",
    "ceil",
    "concat_where",
    "connectivity",
    "cos",
    "cosh",
    "default_dims",
    "dims",
    "domain",
    "element_type",
    "empty",
    "exp",
    "field_operator",
    "float32",
    "float64",
    "floor",
    "flip_staggered",
    "fmod",
    "full",
    "function",
    "gamma",
    "get_default_dims",
    "index",
    "int32",
    "int64",
    "isfinite",
    "is_staggered",
    "isinf",
    "isnan",
    "log",
    "log2",
    "log10",
    "max_over",
    "maximum",
    "min_over",
    "minimum",
    "neighbor_dim",
    "neighbor_sum",
    "ones",
    "power",
    "program",
    "reduce",
    "scan_operator",
    "sin",
    "sinh",
    "size",
    "sizes",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "where",
    "with_dims",
    "with_interval",
    "zeros",
]
