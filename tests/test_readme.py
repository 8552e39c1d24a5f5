"""Every ```python block of the README and of docs/ runs as pasted, each in a
fresh process (fragments are marked ``pycon`` or ``text``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks():
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            line = text[:m.start()].count("\n") + 1
            yield f"{path.name}:{line}", m.group(1)


BLOCKS = list(_blocks())


@pytest.mark.parametrize("code", [c for _, c in BLOCKS], ids=[i for i, _ in BLOCKS])
def test_python_block_runs_as_pasted(code, tmp_path):
    # A real file, so that the decorators can read the functions' source.
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, check=False, capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def test_docs_have_examples_and_every_doc_is_linked():
    assert len([b for b in BLOCKS if b[0].startswith("README")]) >= 3
    readme = (ROOT / "README.md").read_text()
    for path in DOCS[1:]:
        assert f"docs/{path.name}" in readme, f"README does not link docs/{path.name}"


def test_docs_are_not_copies_of_the_readme():
    readme = {p.strip() for p in (ROOT / "README.md").read_text().split("\n\n")}
    for path in DOCS[1:]:
        paragraphs = [p.strip() for p in path.read_text().split("\n\n") if len(p) > 200]
        copied = [p for p in paragraphs if p in readme]
        assert not copied, f"{path.name} repeats the README: {copied[0][:80]}…"


def test_fragments_are_marked():
    """A block with a prompt or shell output is not marked python."""
    for name, code in BLOCKS:
        assert not code.lstrip().startswith((">>>", "$ ")), name
