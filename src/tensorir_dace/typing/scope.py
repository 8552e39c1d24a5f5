"""Name resolution for the type checker: what a symbol means where it is used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def _counting(method: Any) -> Any:
    """``method`` of dict, counting in :data:`_CHANGES` before it runs."""
    def changing(self: dict, *args: Any, **kwargs: Any) -> Any:
        _CHANGES[0] += 1
        return method(self, *args, **kwargs)
    return changing


class _Bindings(dict):
    """A scope's own names; every change counts in :data:`_CHANGES`, which
    tells the scopes' lookup caches that they may be stale."""

    __setitem__ = _counting(dict.__setitem__)
    __delitem__ = _counting(dict.__delitem__)
    __ior__ = _counting(dict.__ior__)
    update = _counting(dict.update)
    pop = _counting(dict.pop)
    popitem = _counting(dict.popitem)
    setdefault = _counting(dict.setdefault)
    clear = _counting(dict.clear)


#: How many times any scope's names changed (see :class:`_Bindings`).
_CHANGES = [0]


class Scope:
    """A chain of name → Binding maps; lambda parameters shadow outer names.

    The front ends bind one name per local assignment of a scan body, so a
    chain can be hundreds of scopes deep, and the checker looks up every name
    of each call it types: lookups are remembered per scope until any
    scope's names change."""

    def __init__(self, bindings: dict[str, Binding] | None = None, parent: Scope | None = None):
        self.bindings: dict[str, Binding] = _Bindings(bindings or {})
        self.parent = parent
        self._found: dict[str, Binding | None] = {}
        self._found_at = -1

    def lookup(self, name: str) -> Binding | None:
        now = _CHANGES[0]
        visited: list[Scope] = []
        scope: Scope | None = self
        found = None
        while scope is not None:
            if scope._found_at != now:
                scope._found.clear()
                scope._found_at = now
            elif name in scope._found:
                found = scope._found[name]
                break
            visited.append(scope)
            if name in scope.bindings:
                found = scope.bindings[name]
                break
            scope = scope.parent
        for s in visited:
            s._found[name] = found
        return found

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
