"""DaCe interoperability: Tensor IR programs inside ``@dace.program``.

Objects that carry a Tensor IR program (compiled programs, decorated
programs) implement DaCe's SDFG-convertible protocol through
:class:`SDFGConvertible`, so a ``@dace.program`` can call them with keyword
arguments named like the SDFG's containers (the parameter names; a tuple
parameter ``out`` is passed per element as ``out_0``, ``out_1``, …) and DaCe
nests their SDFG into one program.
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
            lowered = lower_program(self.interop_program(), optimize="default")
            zero_offsets(lowered.sdfg)
            self._interop_sdfg = lowered.sdfg
        return self._interop_sdfg

    def __sdfg__(self, *args: Any, **kwargs: Any):
        import copy
        return copy.deepcopy(self._nested_sdfg())

    def __sdfg_signature__(self) -> tuple[list[str], list[str]]:
        return list(self._nested_sdfg().arg_names), []

    def __sdfg_closure__(self, reevaluate: Any = None) -> dict[str, Any]:
        return {}
