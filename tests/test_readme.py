"""The README's self-contained Python examples run as written."""

from __future__ import annotations

import re
import runpy

import pytest

from conftest import ROOT

BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
          if "import tensorir_dace" in b]


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code, monkeypatch, tmp_path):
    # A real file, so that the decorators can read the functions' source.
    script = tmp_path / "readme_example.py"
    script.write_text(code)
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(script), run_name="readme_example")


def test_readme_has_examples():
    assert len(BLOCKS) >= 3
