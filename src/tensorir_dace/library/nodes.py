"""The library node classes and their expansions (see the package docstring)."""

from __future__ import annotations

import dace
import dace.library
from dace.properties import ListProperty, Property, make_properties
from dace.sdfg import nodes
from dace.transformation.transformation import ExpandTransformation


def _tasklet(node: TensorIRLoopNode) -> nodes.Tasklet:
    return nodes.Tasklet(node.label, dict(node.in_connectors), dict(node.out_connectors),
                         node.code, language=dace.Language.CPP)


@dace.library.expansion
class ExpandPureReduce(ExpandTransformation):
    """A C++ tasklet looping over the neighbours of one point."""

    environments: list = []

    @staticmethod
    def expansion(node, parent_state, parent_sdfg, **kwargs):
        return _tasklet(node)


@dace.library.expansion
class ExpandPureScan(ExpandTransformation):
    """A C++ tasklet looping over one column; the carried state lives in
    local variables, so it is sized per column (registers), never per array."""

    environments: list = []

    @staticmethod
    def expansion(node, parent_state, parent_sdfg, **kwargs):
        return _tasklet(node)


@make_properties
class TensorIRLoopNode(nodes.LibraryNode):
    """Common properties: the Tensor IR text and the generated per-point code."""

    lambda_text = Property(dtype=str, default="", desc="the Tensor IR lambda")
    init_text = Property(dtype=str, default="", desc="the initial value (Tensor IR)")
    code = Property(dtype=str, default="", desc="C++ code of the expansion for one point")
    symbols = ListProperty(element_type=str, default=[],
                           desc="the SDFG symbols the code reads (sizes, runtime bounds)")

    def __init__(self, name, *, lambda_text="", init_text="", code="", inputs=(), outputs=(),
                 **kwargs):
        super().__init__(name, inputs=dict.fromkeys(inputs), outputs=dict.fromkeys(outputs),
                         **kwargs)
        self.lambda_text = lambda_text
        self.init_text = init_text
        self.code = code

    @property
    def free_symbols(self) -> set[str]:
        """DaCe reads no symbols from a library node's code: they are declared,
        so that passes keep them and the generated function takes them (a
        runtime bound read only by a scan's operand)."""
        return super().free_symbols | set(self.symbols)


@dace.library.node
class NeighborReduce(TensorIRLoopNode):
    """``reduce(λ(acc, …) → …, init)(x, …)`` at one point: folds over the
    neighbour dimension, skipping absent neighbours (negative table entries)."""

    implementations = {"pure": ExpandPureReduce}
    default_implementation = "pure"

    axis = Property(dtype=str, default="", desc="the neighbour dimension reduced over")
    mask_table = Property(dtype=str, default="", desc="the table whose negative entries "
                                                      "mark absent neighbours")

    def __init__(self, name="reduce", *, axis="", mask_table="", **kwargs):
        super().__init__(name, **kwargs)
        self.axis = axis
        self.mask_table = mask_table


@dace.library.node
class ColumnScan(TensorIRLoopNode):
    """``scan(λ(state, …) → …, forward, init)(x, …)`` for one column."""

    implementations = {"pure": ExpandPureScan}
    default_implementation = "pure"

    axis = Property(dtype=str, default="", desc="the dimension scanned along")
    forward = Property(dtype=bool, default=True, desc="scan direction")

    def __init__(self, name="scan", *, axis="", forward=True, **kwargs):
        super().__init__(name, **kwargs)
        self.axis = axis
        self.forward = forward


def declare_symbols(node: TensorIRLoopNode, sdfg: dace.SDFG, *more: TensorIRLoopNode) -> None:
    """Declare the symbols of ``sdfg`` that the node's code reads (and those
    the nodes in ``more``, merged into it, declared): DaCe does not look into
    a library node's code, so an undeclared symbol read only there would be
    dropped from the SDFG and from the generated function's parameters."""
    found = dace.symbolic.symbols_in_code(node.code, set(sdfg.symbols))
    node.symbols = sorted(set(node.symbols).union(found, *(m.symbols for m in more)))
