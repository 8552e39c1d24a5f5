"""SDFG passes, each small and runnable alone, and the named pipelines."""

from __future__ import annotations

from typing import Callable

import dace
from dace.transformation.dataflow import MapFusionVertical

SDFGPass = Callable[[dace.SDFG], None]


def simplify(sdfg: dace.SDFG) -> None:
    """DaCe's simplification pipeline (state fusion, dead dataflow, inlining…)."""
    sdfg.simplify()


def fuse_maps_vertically(sdfg: dace.SDFG) -> None:
    """Fuse producer/consumer maps over the same range (point-wise chains)."""
    sdfg.apply_transformations_repeated(MapFusionVertical)


def scope_lifetimes(sdfg: dace.SDFG) -> None:
    """Transients must not outlive a call: sizes may change between calls, and a
    persistent transient sized by the first call corrupts memory on a larger one."""
    for sd in sdfg.all_sdfgs_recursive():
        for desc in sd.arrays.values():
            if desc.transient and desc.lifetime == dace.AllocationLifetime.Persistent:
                desc.lifetime = dace.AllocationLifetime.Scope


def validate(sdfg: dace.SDFG) -> None:
    sdfg.validate()


PIPELINES: dict[str, list[SDFGPass]] = {
    "none": [validate],
    "default": [simplify, fuse_maps_vertically, scope_lifetimes, validate],
}


def pipeline(name: str) -> SDFGPass:
    """The pipeline ``name`` as one pass."""
    passes = PIPELINES[name]

    def run(sdfg: dace.SDFG) -> None:
        for p in passes:
            p(sdfg)
    return run
