"""DaCe library nodes for the Tensor IR builtins that are not element-wise.

They sit inside a map over the points they compute (the result domain of a
reduction, the columns of a scan) and keep the Tensor IR text of their lambda
and init as properties, so the viewer shows what they compute.  Their
``pure`` expansion is a C++ tasklet with the neighbour or column loop.
"""

from .nodes import ColumnScan, NeighborReduce, declare_symbols

__all__ = ["NeighborReduce", "ColumnScan", "declare_symbols"]
