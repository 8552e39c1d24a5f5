"""SDFG pass: fuse sibling maps over the same domain into one map.

Two statements over the same points that read the same data (the two
components of a gradient gathering the same neighbour values) are lowered to
two maps, each streaming the shared inputs from memory.  DaCe's
``MapFusionHorizontal`` puts such independent maps with equal ranges into one
map, so each shared input is read once per point and the bodies sit side by
side in one loop, where the C++ compiler can share their common loads and
neighbour-table tests.  Maps that depend on each other are left alone by the
transformation.

Only maps with the same parameter names are fused: the transformation renames
the second map's parameters, which does not reach into C++ tasklet code that
indexes whole-array pointers with them.
"""

from __future__ import annotations

import dace
from dace.transformation.dataflow import MapFusionHorizontal

NAME = "fuse_maps_horizontally"


class _SameParameters(MapFusionHorizontal):
    """``MapFusionHorizontal`` restricted to maps whose parameters are named alike."""

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False) -> bool:
        if self.first_parallel_map_entry.map.params != \
                self.second_parallel_map_entry.map.params:
            return False
        return super().can_be_applied(graph, expr_index, sdfg, permissive)


def fuse_maps_horizontally(sdfg: dace.SDFG) -> None:
    """Fuse independent sibling maps with equal ranges (see the module docstring)."""
    sdfg.apply_transformations_repeated(_SameParameters)
