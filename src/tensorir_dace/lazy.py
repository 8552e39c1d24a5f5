"""Modules imported on first use, so that importing the package stays cheap.

``sympy = lazy_module("sympy")`` binds a stand-in that imports SymPy the
first time one of its attributes is read and then serves every attribute from
its own dictionary (as fast as a module's).  Modules that need SymPy only
inside functions use it: a program found in the compile cache then runs
without importing SymPy at all.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["lazy_module"]


class _LazyModule:
    def __init__(self, name: str):
        object.__setattr__(self, "_lazy_module_name", name)

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(object.__getattribute__(self, "_lazy_module_name"))
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {object.__getattribute__(self, '_lazy_module_name')!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it when first used."""
    return _LazyModule(name)
