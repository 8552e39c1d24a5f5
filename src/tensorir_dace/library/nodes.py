"""The library node classes and their expansions (see the package docstring)."""

from __future__ import annotations

import dace
import dace.library
import sympy
from dace.properties import DictProperty, ListProperty, Property, make_properties
from dace.sdfg import nodes
from dace.transformation.transformation import ExpandTransformation


def _tasklet(node: TensorIRLoopNode) -> nodes.Tasklet:
    return nodes.Tasklet(node.label, dict(node.in_connectors), dict(node.out_connectors),
                         _symbol_values(node) + node.code, language=dace.Language.CPP)


def _symbol_values(node: TensorIRLoopNode) -> str:
    """C++ declarations giving the symbols the code reads the values that
    ``node.symbol_mapping`` has for them where these are other expressions
    (through temporaries, so that values naming each other's keys read the
    outer ones)."""
    changed = {k: v for k, v in node.symbol_mapping.items() if str(v) != k}
    if not changed:
        return ""
    cpp = {k: dace.symbolic.symstr(v, cpp_mode=True) for k, v in changed.items()}
    return "".join(f"const long long __tir_symbol_{k} = {v};\n" for k, v in cpp.items()) + \
        "".join(f"const long long {k} = __tir_symbol_{k};\n" for k in cpp)


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
    # Named as a nested SDFG's, so that DaCe substitutes into the values when
    # it renames or replaces symbols (inlining this SDFG into another one).
    symbol_mapping = DictProperty(
        key_type=str, value_type=sympy.Basic, default={},
        desc="where set: the symbols the code reads, each with its value in the SDFG "
             "(declared in the code where it is another expression)")

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
        if self.symbol_mapping:
            return super().free_symbols.union(
                *(map(str, dace.symbolic.pystr_to_symbolic(v).free_symbols)
                  for v in self.symbol_mapping.values()))
        return super().free_symbols | set(self.symbols)

    def map_symbols(self) -> None:
        """Let the code read its symbols through :attr:`symbol_mapping` (each
        its own value now), so that it follows DaCe's renaming of them."""
        self.symbol_mapping = {s: dace.symbolic.symbol(s) for s in self.symbols}


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
