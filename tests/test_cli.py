"""The command line: what ``lower`` writes, ``fmt``, ``bench``, ``view``,
``--version``, help texts, ``--size`` errors, progress output."""

from __future__ import annotations

import argparse
import io
import logging
import shutil
import subprocess
import sys

import pytest

import tensorir_dace as tir
from conftest import EXAMPLES
from tensorir_dace import cli, log


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    for name in ("laplacian", "program_if", "nabla"):
        shutil.copy(EXAMPLES / f"{name}.tir", tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def written(tmp_path) -> set[str]:
    return {p.name for p in tmp_path.iterdir() if not p.name.endswith(".tir")}


def test_lower_writes_name_sdfg_only_and_deterministically(workdir, capsys):
    assert cli.main(["lower", "laplacian.tir"]) == 0
    assert written(workdir) == {"laplacian.sdfg"}
    first = (workdir / "laplacian.sdfg").read_bytes()
    assert first == (EXAMPLES / "laplacian.sdfg").read_bytes()   # the checked-in file
    assert cli.main(["lower", "-q", "laplacian.tir"]) == 0
    assert (workdir / "laplacian.sdfg").read_bytes() == first     # byte-identical again
    assert "wrote laplacian.sdfg" in capsys.readouterr().out


def test_lower_optimize_stage_output_and_expand(workdir, capsys):
    assert cli.main(["lower", "-q", "laplacian.tir", "--optimize", "default"]) == 0
    assert written(workdir) == {"laplacian.optimized.sdfg"}
    assert cli.main(["lower", "-q", "program_if.tir", "--stage", "fuse_maps_vertically"]) == 0
    assert "program_if.fuse_maps_vertically.sdfg" in written(workdir)
    assert cli.main(["lower", "-q", "nabla.tir", "--expand"]) == 0
    assert (workdir / "nabla.expanded.sdfg").read_bytes() == \
        (EXAMPLES / "nabla.expanded.sdfg").read_bytes()
    assert cli.main(["lower", "-q", "laplacian.tir", "--stage", "gpu", "-o", "sub.sdfg"]) == 0
    assert written(workdir) == {"laplacian.optimized.sdfg", "program_if.fuse_maps_vertically.sdfg",
                                "nabla.expanded.sdfg", "sub.sdfg"}


def test_lower_stage_errors(workdir, capsys):
    assert cli.main(["lower", "-q", "laplacian.tir", "--stage", "fused"]) == 2
    err = capsys.readouterr().err
    assert "unknown stage 'fused'" in err and "lowered, simplify" in err and "gpu" in err
    assert cli.main(["lower", "-q", "laplacian.tir", "--stage", "gpu",
                     "--optimize", "default"]) == 2
    assert "not both" in capsys.readouterr().err
    assert written(workdir) == set()


COMMENTED = """\
# A commented program
p(out: tensor<float, I[0:4]>,   # the result
  a: tensor<float, I[0:4]>) {
  # twice a
  out <- 2.0 * a;
}
# end
"""


def test_fmt_prints_checks_and_rewrites_keeping_comments(workdir, capsys):
    (workdir / "c.tir").write_text(COMMENTED)
    assert cli.main(["fmt", "c.tir"]) == 0
    canonical = capsys.readouterr().out
    assert canonical.splitlines()[0] == "# A commented program"
    for comment in ("# the result", "# twice a", "# end"):
        assert comment in canonical
    assert "    out ← 2.0 × a;" in canonical
    assert tir.parse(canonical) == tir.parse(COMMENTED)
    assert cli.main(["fmt", "--check", "c.tir"]) == 1
    assert "c.tir: not in canonical form" in capsys.readouterr().out
    assert cli.main(["fmt", "-w", "c.tir"]) == 0
    assert (workdir / "c.tir").read_text() == canonical
    assert cli.main(["fmt", "--check", "c.tir"]) == 0         # idempotent
    assert capsys.readouterr().out == "formatted c.tir\n"


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith(f"tensorir-dace {tir.__version__} (DaCe ")


def test_every_option_has_help():
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == {"check", "fmt", "lower", "view", "run", "bench", "build"}
    for name, sub in [("", parser), *subparsers.choices.items()]:
        for action in sub._actions:
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, f"{name} {action.option_strings or action.dest}: no help"
        assert sub.format_help()


def test_size_for_a_name_that_is_not_a_symbol(workdir, capsys):
    assert cli.main(["run", "-q", "program_if.tir", "--size", "X=3"]) == 2
    err = capsys.readouterr().err
    assert "'X' is not a size symbol of program 'relax'; its size symbols are N, M" in err
    assert cli.main(["run", "-q", "laplacian.tir", "--size", "N=3"]) == 2
    assert "its size symbols are none" in capsys.readouterr().err


def test_bench_sizes_and_threads_against_the_interpreter(workdir, capsys):
    assert cli.main(["bench", "-q", "program_if.tir", "--size", "N=16,32", "--size", "M=8",
                     "--threads", "1,2", "--repeat", "3", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[:3] for r in rows] == [["16", "8", "1"], ["16", "8", "2"],
                                     ["32", "8", "1"], ["32", "8", "2"]]
    assert all(r[-1].endswith("x") for r in rows)
    assert float(out.rsplit("= ", 1)[1]) <= 1e-9


def test_view_writes_the_page_and_prints_its_path(workdir, capsys, monkeypatch):
    import webbrowser
    monkeypatch.setattr(webbrowser, "open", lambda *a: pytest.fail("browser opened"))
    assert cli.main(["view", "-q", "laplacian.tir"]) == 0
    assert "wrote laplacian.html" in capsys.readouterr().out
    assert written(workdir) == {"laplacian.html"}


def test_cli_shows_stages_with_times(workdir):
    r = subprocess.run([sys.executable, "-m", "tensorir_dace", "lower", "program_if.tir",
                        "--optimize", "default"], check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for stage in ("checking:", "lowering:", "pass simplify:", "pass fuse_maps_vertically:"):
        assert f"  {stage}" in r.stderr
    assert " s\n" in r.stderr


def test_live_progress_line_only_on_a_terminal_after_a_second():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty, plain = Tty(), io.StringIO()
    for stream in (tty, plain):
        h = cli._Progress(stream)
        h.tick("C++ build", 0.5)
        h.tick("C++ build", 2.2)
        h.emit(logging.LogRecord("tensorir_dace", logging.INFO, "", 0, "C++ build: %.2f s",
                                 (2.5,), None))
    assert tty.getvalue() == "\r  C++ build: 2 s …\r\x1b[K  C++ build: 2.50 s\n"
    assert plain.getvalue() == "  C++ build: 2.50 s\n"


def test_compile_logs_each_stage_and_cache_hits(tmp_path, caplog):
    from tensorir_dace.runtime.cache import set_cache_dir
    program = tir.parse("tiny(out: tensor<float, I[0:3]>, a: tensor<float, I[0:3]>) "
                        "{ out ← a + 1.0; }")
    ticks = []
    log.set_ticker(lambda stage, s: ticks.append(stage))
    set_cache_dir(tmp_path)
    try:
        with caplog.at_level(logging.INFO, logger="tensorir_dace"):
            tir.compile(program)
            tir.compile(program)
    finally:
        set_cache_dir(None)
        log.set_ticker(None)
    messages = [r.getMessage() for r in caplog.records if r.name == "tensorir_dace"]
    for stage in ("checking", "lowering", "pass simplify", "code generation", "C++ build",
                  "loading"):
        assert any(m.startswith(stage + ":") and m.endswith(" s") for m in messages), stage
    assert any("compile cache hit" in m for m in messages)


def test_log_env_variable_turns_the_log_on():
    code = ("import tensorir_dace as t; "
            "t.to_sdfg(t.parse(open(r'%s').read()))" % (EXAMPLES / "laplacian.tir"))
    on = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                        env={**__import__("os").environ, "TENSORIR_DACE_LOG": "info"})
    off = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert "tensorir_dace: checking:" in on.stderr and "tensorir_dace: lowering:" in on.stderr
    assert "checking" not in off.stderr


def test_check_prints_shifts_in_the_notation(capsys):
    from tensorir_dace.syntax.printer import format_checked
    for path in sorted(EXAMPLES.glob("*.tir")):
        assert cli.main(["check", "-q", str(path)]) == 0
        out = capsys.readouterr().out
        assert "cartesian_shift" not in out
        typed = tir.check(tir.parse(path.read_text()))
        assert tir.check(tir.parse(format_checked(typed))) == typed   # reads back the same
