"""SDFG pass: fuse sibling maps over the same domain into one map.

Two statements over the same points that read the same data (the two
components of a gradient gathering the same neighbour values) are lowered to
two maps, each streaming the shared inputs from memory.  DaCe's
``MapFusionHorizontal`` puts such independent maps with equal ranges into one
map, so each shared input is read once per point and the bodies sit side by
side in one loop, where the C++ compiler can share their common loads and
neighbour-table tests.  Maps that depend on each other are left alone by the
transformation.
"""

from __future__ import annotations

import dace
from dace.transformation.dataflow import MapFusionHorizontal

NAME = "fuse_maps_horizontally"


def fuse_maps_horizontally(sdfg: dace.SDFG) -> None:
    """Fuse independent sibling maps with equal ranges (see the module docstring)."""
    sdfg.apply_transformations_repeated(MapFusionHorizontal)
