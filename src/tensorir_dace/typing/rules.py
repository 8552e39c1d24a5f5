"""What the families of typing rules use of the checker.

The rule families (:mod:`.elementwise`, :mod:`.domains`, :mod:`.shifts`,
:mod:`.loops`) are mixins of :class:`.checker.Checker`; they derive from
:class:`Rules` so that the names they use of the checker, and of each other,
are declared with their types.  ``Checker`` (and ``DomainRules`` for
``resolve_dim``) implement them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ir
from ..errors import TypeCheckError
from .scope import Binding, Scope


class Rules:
    dim_names: set[str]
    constraints: list[ir.SizeConstraint]
    weak_memo: dict[int, tuple[ir.Expr, bool]]

    def error(self, node: ir.Node | None, message: str) -> TypeCheckError:
        raise NotImplementedError

    def decide(self, node: ir.Node | None, fn: Callable[[], Any]) -> Any:
        raise NotImplementedError

    @staticmethod
    def tensor(e: ir.Expr) -> ir.TensorType:
        raise NotImplementedError

    def expr(self, e: ir.Expr, scope: Scope, expected: ir.ElementType | None = None) -> ir.Expr:
        raise NotImplementedError

    def call(self, e: ir.Call, scope: Scope, expected: Any) -> ir.Expr:
        raise NotImplementedError

    def operands(self, e: ir.Call, scope: Scope, n: int | None, name: str,
                 expected: Any = None) -> list[ir.Expr]:
        raise NotImplementedError

    def unify_literals(self, typed: list[ir.Expr], raw: Sequence[ir.Expr],
                       scope: Scope) -> list[ir.Expr]:
        raise NotImplementedError

    def broadcast(self, node: ir.Node | None, types: Sequence[ir.TensorType],
                  combine_masks: bool = False) -> tuple[ir.Dim, ...]:
        raise NotImplementedError

    def same_dtype(self, node: ir.Node, name: str, typed: Sequence[ir.Expr]) -> ir.ElementType:
        raise NotImplementedError

    def bind_params(self, node: ir.Node, lam: ir.Lambda, arg_types: Sequence[ir.TensorType],
                    what: str, scope: Scope) -> dict[str, Binding]:
        raise NotImplementedError

    def typed_lambda(self, lam: ir.Lambda, bindings: dict[str, Binding], scope: Scope,
                     expected: Any = None) -> ir.Lambda:
        raise NotImplementedError

    def resolve_dim(self, a: ir.Expr, what: str) -> str:
        raise NotImplementedError

    def runtime_bound(self, b: Any, node: ir.Node, scope: Scope,
                      declaration: bool = False, lenient: bool = False) -> Any:
        raise NotImplementedError

    def runtime_subset(self, a: ir.DimInterval, d: ir.Dim, sub: ir.Dim, guard: tuple,
                       where: Callable[[], str]) -> None:
        raise NotImplementedError

    def runtime_concat(self, node: ir.Node, axis: str, ds: list[ir.Dim]) -> None:
        raise NotImplementedError
