"""DaCe interoperability: Tensor IR programs inside ``@dace.program``.

Objects that carry a Tensor IR program (compiled programs, decorated
programs) implement DaCe's SDFG-convertible protocol through
:class:`SDFGConvertible`, so a ``@dace.program`` can call them with keyword
arguments named like the SDFG's containers (the parameter names; a tuple
parameter ``out`` is passed per element as ``out_0``, ``out_1``, …) and DaCe
nests their SDFG into one program.  The calling program may name the sizes
otherwise and give runtime bounds as numbers: the code of the library nodes
reads its symbols through a mapping that DaCe rewrites, as it does a nested
SDFG's.  A source-extent parameter (see :mod:`.source_extents`) is no
argument of the nested SDFG: it computes the extent from the tables it is
given (:func:`derive_source_extents`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import ir


class SDFGConvertible:
    """Mixin: subclasses provide ``interop_program() -> ir.Program``."""

    _interop_sdfg = None

    def interop_program(self) -> ir.Program:  # pragma: no cover - abstract
        raise NotImplementedError

    def _nested_sdfg(self):
        if self._interop_sdfg is None:
            from .lowering import lower_program
            from .transforms.sdfg_passes import zero_offsets
            program = self.interop_program()
            lowered = lower_program(program, optimize="default")
            zero_offsets(lowered.sdfg)
            derive_source_extents(program, lowered)
            # the library nodes' code follows DaCe's renaming of the symbols it
            # reads when the SDFG is inlined (the outer program's names, constants)
            from .library.nodes import TensorIRLoopNode
            for node, _ in lowered.sdfg.all_nodes_recursive():
                if isinstance(node, TensorIRLoopNode):
                    node.map_symbols()
            self._interop_sdfg = lowered.sdfg
        return self._interop_sdfg

    def __sdfg__(self, *args: Any, **kwargs: Any):
        import copy
        return copy.deepcopy(self._nested_sdfg())

    def __sdfg_signature__(self) -> tuple[list[str], list[str]]:
        return list(self._nested_sdfg().arg_names), []

    def __sdfg_closure__(self, reevaluate: Any = None) -> dict[str, Any]:
        return {}


def derive_source_extents(program: ir.Program, lowered: Any) -> None:
    """Let the SDFG of ``program`` (``lowered``, rebased to 0) compute the size
    of each source-extent parameter (see :mod:`.source_extents`) from the
    tables it takes, as a call does: one more than their largest entry.  The
    parameter's container is used for its size only; it leaves the SDFG, so
    a ``@dace.program`` passes the tables alone.  New states before the first
    scan the tables into a scalar and set the size symbol from it."""
    import dace
    import sympy

    from .errors import TensorIRError
    from .source_extents import is_extent_param, tables_into
    sdfg = lowered.sdfg
    container = {b.param: b.data for b in lowered.signature.bindings}
    used = {n.data for n, _ in sdfg.all_nodes_recursive()
            if isinstance(n, dace.nodes.AccessNode)}
    for p in program.params:
        if not is_extent_param(p):
            continue
        dim = p.type.dims[0].name
        tables = [container[t.name] for t in tables_into(program.params, dim)]
        name = container.get(p.name)
        size = sdfg.arrays[name].shape[0] if name in sdfg.arrays else None
        reason = ("no table of the program indexes it" if not tables else
                  "the program reads its elements" if name in used else
                  None if isinstance(size, sympy.Symbol) and not any(
                      str(size) in map(str, dace.symbolic.symlist(d.shape))
                      for n, d in sdfg.arrays.items() if n != name and not d.transient) else
                  "its size is not a size of its own")
        if reason is not None:
            raise TensorIRError(
                f"program '{program.name}': parameter '{p.name}' stands for the extent of "
                f"{dim} that the tables give, but {reason}, so a @dace.program calling the "
                f"program cannot compute it from the tables; give the program a parameter "
                f"over {dim} instead (a field, read or not), or name this one otherwise")
        sdfg.remove_data(name, validate=False)
        sdfg.arg_names = [a for a in sdfg.arg_names if a != name]
        top = sdfg.add_scalar(f"extent_{dim}_top", dace.int64, transient=True,
                              find_new_name=True)[0]
        first = sdfg.start_block
        state = sdfg.add_state_before(first, f"extent_{dim}", is_start_block=True)
        # (the SDFG's own names never start with an underscore: no clash)
        init = state.add_tasklet(f"no_entry_{dim}", {}, {"__out"}, "__out = -1")
        state.add_edge(init, "__out", state.add_write(top), None, dace.Memlet(f"{top}[0]"))
        for table in tables:
            state = sdfg.add_state_after(state, f"extent_{dim}_{table}")
            idx = [f"__i{k}" for k in range(len(sdfg.arrays[table].shape))]
            state.add_mapped_tasklet(
                f"largest_entry_{table}",
                {i: f"0:{n}" for i, n in zip(idx, sdfg.arrays[table].shape)},
                {"__in": dace.Memlet(f"{table}[{', '.join(idx)}]")}, "__out = __in",
                {"__out": dace.Memlet(f"{top}[0]", wcr="lambda a, b: max(a, b)")},
                schedule=dace.ScheduleType.Sequential, external_edges=True)
        (edge,) = sdfg.out_edges(state)
        edge.data.assignments[str(size)] = f"{top} + 1"
