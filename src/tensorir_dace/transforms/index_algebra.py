"""Cheap algebra on index expressions for the passes.

Index expressions in our SDFGs are sums of products of symbols and integers,
so expanding them is enough to cancel terms and compare offsets.
``dace.symbolic.simplify`` runs SymPy's general ``simplify``, which imports
``sympy.physics`` on first use and costs a few hundred milliseconds per
compile for the same answers."""

from __future__ import annotations

import sympy
from dace import symbolic


def normalised(expr):
    """``expr`` with products expanded and like terms collected."""
    return sympy.expand(expr)


def cpp(expr) -> str:
    """``expr``, normalised, as C++ source."""
    return symbolic.symstr(normalised(expr), cpp_mode=True)


def flat_index(desc, coords):
    """The flat (symbolic) index of ``coords`` in the array ``desc``."""
    return sum((c + o) * st for c, o, st in zip(coords, desc.offset, desc.strides))


def flat_cpp(desc, coords) -> str:
    """The flat index of ``coords`` in ``desc``, normalised, as C++ source."""
    return cpp(flat_index(desc, coords))
