"""Program transformations: IR passes and SDFG passes, and the pipelines built from them.

An IR pass is a function ``ir.Program -> ir.Program`` (e.g.
:func:`extract_temporaries`); an SDFG pass is a function ``sdfg -> None``
that changes the SDFG in place (see :mod:`.sdfg_passes`); a pipeline is a
plain list of passes.
"""

from .extract_temporaries import extract_temporaries
from .sdfg_passes import PIPELINES, pass_names, pipeline

__all__ = ["PIPELINES", "extract_temporaries", "pass_names", "pipeline"]
