"""Name resolution for the type checker: what a symbol means where it is used."""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir


@dataclass(frozen=True)
class Binding:
    """A name bound to a tensor value.

    kind: 'param' (program parameter), 'temp' (temporary), 'lambda' (lambda
    parameter), 'loop' (for-loop variable) or 'size' (size symbol).
    """

    name: str
    kind: str
    type: ir.TensorType


class Scope:
    """A chain of name → Binding maps; lambda parameters shadow outer names."""

    def __init__(self, bindings: dict[str, Binding] | None = None, parent: Scope | None = None):
        self.bindings = dict(bindings or {})
        self.parent = parent

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.bindings:
                return scope.bindings[name]
            scope = scope.parent
        return None

    def child(self, bindings: dict[str, Binding]) -> Scope:
        return Scope(bindings, self)

    def names(self) -> set[str]:
        out: set[str] = set()
        scope: Scope | None = self
        while scope is not None:
            out |= set(scope.bindings)
            scope = scope.parent
        return out

    def rebind(self, binding: Binding) -> None:
        """Replace the binding of an existing name where it is defined."""
        scope: Scope | None = self
        while scope is not None:
            if binding.name in scope.bindings:
                scope.bindings[binding.name] = binding
                return
            scope = scope.parent
        self.bindings[binding.name] = binding
