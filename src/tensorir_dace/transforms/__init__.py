"""Program transformations: SDFG passes and the pipelines built from them.

A pass is a function ``sdfg -> None`` that changes the SDFG in place; a
pipeline is a plain list of passes (see :mod:`.sdfg_passes`).
"""

from .sdfg_passes import PIPELINES, pipeline

__all__ = ["PIPELINES", "pipeline"]
