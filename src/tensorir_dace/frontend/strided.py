"""GT4Py's strided offsets into flattened sparse fields, as index expressions.

Older ICON code stores a sparse field of ``n`` values per cell as one flat
field over its own dimension (``geofac_div: Field[[CEDim], float]``, element
``c * n + k`` for neighbour ``k`` of cell ``c``) and reads it through
``FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))``.  Here that
offset is the neighbour table ``c * n + k`` over ``(Cell, _NB_CE[0:n])``,
written as an expression (``pos(Cell, t) × n + pos(_NB_CE, t)``), so no table
is passed and the compiled code computes the index instead of loading it;
every shift through tables (``x(C2CE)``, ``x(C2CE[k])``) works unchanged.
"""

from __future__ import annotations

import ast
from typing import Any

from .. import intervals as iv
from .. import ir
from .connectivities import StridedOffset


def strided_table(tr: Any, offset: StridedOffset, node: ast.AST) -> ir.Expr:
    """The index table of ``offset`` over the program's interval of its rows, with
    call-time checks that every index lies inside the flattened fields."""
    rows, src, n = offset.rows.name, offset.source.name, offset.stride
    loc = tr.loc(node)
    intervals = tr.ctx.dim_intervals(rows)
    if not intervals:
        raise tr.error(node, f"{offset.name} maps {rows} to elements of {src}, but no "
                             f"parameter of '{tr.ctx.name}' has dimension {rows}: give "
                             f"one (the output over {rows}, for instance)")
    d = intervals[0]
    for other in tr.ctx.dim_intervals(src):     # c * n + k stays inside each field
        where = (f"strided offset {offset.name}, which reads {n} elements of each field "
                 f"over {src} per {rows}")
        for lo, hi in ((other.start, n * d.start), (n * d.stop, other.stop)):
            if iv.maybe_le(lo, hi) is not True:
                tr.ctx.constraints.append(ir.SizeConstraint(lo, hi, where))
    nb = f"{ir.NB_PREFIX}{src}"
    tr.ctx.checker.dim_names.add(nb)

    def sym(name: str) -> ir.Sym:
        return ir.Sym(name, loc=loc)

    def call(fn: str, *args: ir.Expr) -> ir.Expr:
        return ir.Call(sym(fn), args, loc=loc)

    zero, width = ir.Literal(0, loc=loc), ir.Literal(n, loc=loc)
    grid = call("add_dim", sym(rows), tr.bound_ir(d.start, node), tr.bound_ir(d.stop, node),
                call("add_dim", sym(nb), zero, width, zero))
    return call("plus", call("multiplies", call("pos", sym(rows), grid), width),
                call("pos", sym(nb), grid))


__all__ = ["strided_table"]
