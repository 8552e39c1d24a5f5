"""Regenerate the checked-in SDFGs of the example programs.

    python sdfg_examples/regenerate.py

Writes ``<name>.sdfg`` (as lowered) and ``<name>.optimized.sdfg``
(``optimize="default"``) next to each ``<name>.tir``.  A test fails when a
checked-in file no longer matches what the lowering produces.
"""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
LEVELS = {"none": "", "default": ".optimized"}


def sdfg_path(tir: pathlib.Path, optimize: str) -> pathlib.Path:
    return tir.with_name(tir.stem + LEVELS[optimize] + ".sdfg")


def lower(tir: pathlib.Path, optimize: str):
    import tensorir_dace as t
    return t.to_sdfg(t.parse(tir.read_text(), filename=tir.name), optimize=optimize)


def main() -> int:
    import dace
    for tir in sorted(HERE.glob("*.tir")):
        for optimize in LEVELS:
            out = sdfg_path(tir, optimize)
            fresh = lower(tir, optimize)
            if out.exists() and dace.SDFG.from_file(str(out)).hash_sdfg() == fresh.hash_sdfg():
                continue     # unchanged (the file differs only in ids): keep it
            fresh.save(str(out))
            print("wrote", out.relative_to(HERE.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
