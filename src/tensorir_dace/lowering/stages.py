"""The named stages of the pipeline, for ``lower --stage`` and the viewer.

``lowered`` is the SDFG as lowered (``to_sdfg(optimize="none")``); then one
stage per pass of the default pipeline, named like the pass (the lowering
for that pipeline fuses more, so the first pass starts from its own
lowering); ``optimized`` is ``to_sdfg(optimize="default")`` and ``gpu`` the
optimised SDFG made for a CUDA GPU.  A pass added to
``transforms.PIPELINES["default"]`` becomes a stage by itself."""

from __future__ import annotations

import copy

import dace

from .. import ir
from ..errors import TensorIRError
from ..log import stage
from ..transforms.sdfg_passes import CHECKS, PIPELINES, pass_names, pipeline, to_gpu
from ..typing import check
from .program import lower


def stage_names() -> list[str]:
    """Every stage name, in pipeline order."""
    return ["lowered", *pass_names("default"), "optimized", "gpu"]


def sdfg_stages(program: ir.Program, names: list[str] | None = None) -> dict[str, dace.SDFG]:
    """The SDFGs of the stages ``names`` (default: all), in pipeline order.

    Raises :class:`TensorIRError` for an unknown stage name, listing the names."""
    known = stage_names()
    wanted = known if names is None else list(names)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise TensorIRError(f"unknown stage {unknown[0]!r}; the stages are "
                            + ", ".join(known))
    with stage("checking"):
        typed = check(program)
    out: dict[str, dace.SDFG] = {}
    if "lowered" in wanted:
        with stage("lowering"):
            out["lowered"] = lower(typed, fused=False).sdfg
    if any(n != "lowered" for n in wanted):
        with stage("lowering"):
            sdfg = lower(typed, fused=True).sdfg
        for p in PIPELINES["default"]:
            with stage(f"pass {p.__name__}"):
                p(sdfg)
            if p not in CHECKS and p.__name__ in wanted:
                out[p.__name__] = copy.deepcopy(sdfg)
        if "optimized" in wanted:
            out["optimized"] = copy.deepcopy(sdfg)
        if "gpu" in wanted:
            with stage("lowering"):
                sdfg = lower(typed, fused=True).sdfg
            pipeline("default", "gpu")(sdfg)
            with stage("pass to_gpu"):
                to_gpu(sdfg)
            out["gpu"] = sdfg
    return {n: out[n] for n in known if n in out}
