"""The viewer page: self-contained, every stage selectable, and (where a
browser is installed) rendered in chromium without errors or fetches."""

from __future__ import annotations

import re
import webbrowser

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import compiled, example, parsed
from tensorir_dace.frontend import Tensor, dims, program
from tensorir_dace.lowering.stages import sdfg_stages, stage_names
from viewer_browser import check_page, unavailable

# A program with a library node (neighbour reduction) and one with control flow.
BROWSER_EXAMPLES = ["nabla", "program_if"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    return {name: tir.view(parsed(example(name)), out / f"{name}.html")
            for name in BROWSER_EXAMPLES}


def test_page_is_self_contained(pages):
    text = pages["nabla"].read_text()
    markup = re.sub(r"<script>.*?</script>", "", text, flags=re.DOTALL)   # the inlined code
    assert not re.search(r"\b(src|href)=", markup)    # no script, style or image URLs
    assert "site-packages" not in text and "/dist/" not in text
    assert "Automatic publicPath" not in text           # the inlined bundle does not throw
    assert "default-src 'none'" in text                 # and may fetch nothing
    assert "jinja" not in text


def test_page_has_every_stage_and_the_tensor_ir(pages):
    text = pages["program_if"].read_text()
    options = re.findall(r'<option value="([^"]+)">', text)
    assert options == stage_names()
    assert options[0] == "lowered" and options[-2:] == ["optimized", "gpu"]
    assert "fuse_maps_vertically" in options
    assert "relax(" in text                             # the Tensor IR beside the graph


def test_view_returns_path_and_opens_no_browser(tmp_path, monkeypatch, capsys):
    def fail(*a, **k):
        raise AssertionError("a browser was opened")
    monkeypatch.setattr(webbrowser, "open", fail)
    monkeypatch.chdir(tmp_path)
    path = tir.view(parsed(example("laplacian")))
    assert path == tmp_path.joinpath("laplacian.html").relative_to(tmp_path)
    assert path.is_file()
    assert "wrote laplacian.html" in capsys.readouterr().out     # the path is printed


def test_view_opens_browser_when_asked(tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url))
    path = tir.view(parsed(example("laplacian")), tmp_path / "lap.html", open=True)
    assert opened == [path.resolve().as_uri()]


I, J = dims("I J")


@program
def scale(inp: Tensor[float, I, J], out: Tensor[float, I, J], alpha: float):
    out[...] = alpha * inp


@program
def copy_any(a, out):
    out[...] = a


def test_view_of_decorated_programs_and_specialisations(tmp_path):
    page = tir.view(scale, tmp_path / "scale.html")
    assert "scale(" in page.read_text()
    assert scale.view(tmp_path / "scale2.html") == tmp_path / "scale2.html"
    spec = scale.specialize(np.zeros((3, 4)), np.zeros((3, 4)), 2.0)
    assert tir.view(spec, tmp_path / "spec.html").is_file()
    spec = copy_any.specialize(np.zeros((3, 4, 5)), np.zeros((3, 4, 5)))
    assert "D2" in spec.view(tmp_path / "generic.html").read_text()
    with pytest.raises(tir.TensorIRError, match=r"copy_any.specialize\(args\).view\(\)"):
        tir.view(copy_any, tmp_path / "x.html")


def test_view_of_a_compiled_program(tmp_path):
    page = tir.view(compiled(example("laplacian")), tmp_path / "lap.html")
    assert "laplacian(" in page.read_text()


def test_view_rejects_other_objects():
    with pytest.raises(tir.TensorIRError, match="cannot view a int"):
        tir.view(3)


def test_unknown_stage_lists_the_stages():
    with pytest.raises(tir.TensorIRError, match="the stages are lowered, simplify"):
        sdfg_stages(parsed(example("laplacian")), ["fused"])


REASON = unavailable()


@pytest.mark.skipif(REASON is not None, reason=f"no browser test: {REASON}")
@pytest.mark.parametrize("name", BROWSER_EXAMPLES)
def test_every_stage_renders_in_chromium(name, pages):
    report = check_page(pages[name])
    assert report.errors == []
    assert report.requests == []                    # nothing fetched
    stages = sdfg_stages(parsed(example(name)))
    assert [s.stage for s in report.stages] == list(stages)
    for s in report.stages:
        sdfg = stages[s.stage]
        names = set(sdfg.arrays) | {st.label for st in sdfg.states()} \
            | {n.label for st in sdfg.states() for n in st.nodes()}
        assert s.ink > 0.01, f"{s.stage}: blank canvas"
        assert s.labels & names, f"{s.stage}: no node labels drawn"
        assert s.info.endswith("containers")
