"""The example programs: checked-in SDFGs are current and load back; the main job runs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import dace
import pytest

from conftest import EXAMPLES, check_against_interpreter

spec = importlib.util.spec_from_file_location("regenerate", EXAMPLES / "regenerate.py")
regenerate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(regenerate)

PROGRAMS = sorted(EXAMPLES.glob("*.tir"))


@pytest.mark.parametrize("variant", regenerate.VARIANTS,
                         ids=[f"{s}{'-expanded' if e else ''}" for s, e in regenerate.VARIANTS])
@pytest.mark.parametrize("tir", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_checked_in_sdfg_is_what_lower_writes(tir, variant):
    path = regenerate.sdfg_path(tir, *variant)
    assert path.exists(), f"{path.name} is missing: run python sdfg_examples/regenerate.py"
    assert path.read_text() == regenerate.sdfg_text(tir, *variant), (
        f"{path.name} is out of date: run python sdfg_examples/regenerate.py")
    if not variant[1]:
        dace.SDFG.from_file(str(path)).validate()


# Runs where tensorir_dace cannot be imported: plain DaCe only.
PLAIN_DACE = """
import sys
sys.modules["tensorir_dace"] = None          # any import of the package fails
import dace
for path in sys.argv[1:]:
    dace.SDFG.from_file(path).validate()
    print("ok", path)
try:
    dace.SDFG.from_file(sys.argv[-1].replace(".expanded.sdfg", ".sdfg"))
except Exception as e:
    print("unexpanded fails:", type(e).__name__)
"""


def test_expanded_copies_load_in_plain_dace():
    expanded = sorted(EXAMPLES.glob("*.expanded.sdfg"))
    assert {p.name.split(".")[0] for p in expanded} == {p.stem for p in PROGRAMS}
    assert not any("tensorir_dace" in p.read_text() for p in expanded)
    nabla = EXAMPLES / "nabla.expanded.sdfg"          # has library nodes when not expanded
    paths = [str(p) for p in expanded if p != nabla] + [str(nabla)]
    r = subprocess.run([sys.executable, "-c", PLAIN_DACE, *paths], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("ok ") == len(expanded)
    assert "unexpanded fails:" in r.stdout             # the copies are needed there


@pytest.mark.parametrize("name", ["program_if", "symbolic_sizes", "concat_boundary",
                                  "vertical_offset"])
def test_own_examples_match_interpreter(name):
    src = (EXAMPLES / f"{name}.tir").read_text()
    check_against_interpreter(src, "default", sizes={"N": 6, "M": 5, "K": 3, "L": 7, "C": 6})


def test_command_line_check_lower_run(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "tensorir_dace", *a],  # noqa: E731
                                    capture_output=True, text=True)
    r = run("check", str(EXAMPLES / "fencil_cos.tir"))
    assert r.returncode == 0 and "⟪I, 1⟫(cos(x))" in r.stdout, r.stdout
    assert "cartesian_shift" not in r.stdout
    out = tmp_path / "lap.sdfg"
    r = run("lower", str(EXAMPLES / "laplacian.tir"), "-o", str(out))
    assert r.returncode == 0 and out.exists()
    dace.SDFG.from_file(str(out)).validate()
    r = run("run", str(EXAMPLES / "nabla.tir"), "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert "max |compiled - interpreted|" in r.stdout
    r = run("check", str(tmp_path / "missing.tir"))
    assert r.returncode == 2 and "cannot read" in r.stderr
    bad = tmp_path / "bad.tir"
    bad.write_text("p(out: tensor<float, I[0:3]>) {\n  out ← nope;\n}\n")
    r = run("check", str(bad))
    assert r.returncode == 2 and "bad.tir:2:9: unknown name 'nope'" in r.stderr


RUNTIME_BOUNDS = {"lateral_boundary": dict(horizontal_start=2, horizontal_end=5,
                                           vertical_start=1, vertical_end=4),
                  "vertical_nlev": dict(nlev=3)}


@pytest.mark.parametrize("name", sorted(RUNTIME_BOUNDS))
def test_runtime_domain_examples_match_interpreter_unoptimized(name):
    """The runtime-bound examples (the optimised level is tested in test_runtime_domains)."""
    from conftest import parsed
    from tensorir_dace.testing import random_arguments
    src = (EXAMPLES / f"{name}.tir").read_text()
    args = random_arguments(parsed(src), sizes={"N": 6, "L": 5}) | RUNTIME_BOUNDS[name]
    check_against_interpreter(src, "none", args=args)
