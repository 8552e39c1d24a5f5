"""Regenerate the checked-in SDFGs of the example programs.

    python sdfg_examples/regenerate.py

Writes, next to each ``<name>.tir``, what ``tensorir-dace lower`` writes:
``<name>.sdfg`` (as lowered), ``<name>.optimized.sdfg`` (``--optimize
default``) and ``<name>.expanded.sdfg`` (as lowered, library nodes expanded:
loads in DaCe without this package).  The files are deterministic, so only
changed programs give changed files.  A test fails when a checked-in file no
longer matches what ``lower`` writes.
"""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
#: (stage, expanded) of each file kept for an example.
VARIANTS = [("lowered", False), ("optimized", False), ("lowered", True)]


def sdfg_path(tir: pathlib.Path, stage: str, expand: bool) -> pathlib.Path:
    from tensorir_dace.cli import default_sdfg_path
    return default_sdfg_path(tir, stage, expand)


def sdfg_text(tir: pathlib.Path, stage: str, expand: bool) -> str:
    """The file ``tensorir-dace lower`` writes for this variant."""
    import contextlib
    import io
    import tempfile

    from tensorir_dace.cli import main
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        out = pathlib.Path(tmp) / "out.sdfg"
        args = ["lower", "-q", str(tir), "--stage", stage, "-o", str(out)]
        if main(args + (["--expand"] if expand else [])) != 0:
            raise SystemExit(f"lowering {tir.name} failed")
        return out.read_text()


def main() -> int:
    for tir in sorted(HERE.glob("*.tir")):
        for stage, expand in VARIANTS:
            out = sdfg_path(tir, stage, expand)
            fresh = sdfg_text(tir, stage, expand)
            if out.exists() and out.read_text() == fresh:
                continue
            out.write_text(fresh)
            print("wrote", out.relative_to(HERE.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
