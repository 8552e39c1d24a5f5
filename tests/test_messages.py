"""Messages users see: short tracebacks and the wording of common mistakes."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace.errors import did_you_mean
from tensorir_dace.frontend import (
    Tensor,
    dims,
    function,
    int32,
    max_over,
    min_over,
    neighbor_dim,
    program,
    with_interval,
)
from tensorir_dace.frontend.dims import Dimension

I, J = dims("I J")

MISTAKE = textwrap.dedent("""\
    import numpy as np
    from tensorir_dace.frontend import Tensor, dims, program

    I, J = dims("I J")

    @program
    def bad(inp: Tensor[float, I, J], out: Tensor[float, I, J]):
        out[...] = inp + nope

    bad(np.zeros((3, 3)), np.zeros((3, 3)))
""")


def _run(tmp_path, env_extra):
    script = tmp_path / "mistake.py"
    script.write_text(MISTAKE)
    env = {k: v for k, v in os.environ.items() if k != "TENSORIR_DACE_TRACEBACK"}
    return subprocess.run([sys.executable, str(script)], check=False, capture_output=True,
                          text=True, env={**env, **env_extra})


def test_user_mistake_shows_a_short_traceback(tmp_path):
    r = _run(tmp_path, {})
    frames = [line for line in r.stderr.splitlines() if line.startswith("  File ")]
    assert frames[0].startswith(f'  File "{tmp_path / "mistake.py"}", line 10')
    assert len(frames) == 2                      # the user's call and the API boundary
    assert "During handling" not in r.stderr and "direct cause" not in r.stderr
    assert f"FrontendError: {tmp_path / 'mistake.py'}:8:22: unknown name 'nope'" in r.stderr
    assert "TENSORIR_DACE_TRACEBACK=full" in r.stderr


def test_full_traceback_on_request(tmp_path):
    r = _run(tmp_path, {"TENSORIR_DACE_TRACEBACK": "full"})
    frames = [line for line in r.stderr.splitlines() if line.startswith("  File ")]
    assert len(frames) > 5
    assert any("frontend" in f for f in frames)
    assert "unknown name 'nope'" in r.stderr


def test_short_traceback_in_process_keeps_user_frames():
    def user_code():
        tir.parse("p(out: tensor<float, I[0:3]>) { out ← ; }")
    with pytest.raises(tir.ParseError) as info:
        user_code()
    files = {str(entry.path) for entry in info.traceback}
    assert __file__ in files
    internal = [f for f in files if os.sep + "tensorir_dace" + os.sep in str(f)]
    assert [os.path.basename(f) for f in internal] == ["tracebacks.py"]
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_tensor_condition_in_python_if_suggests_where():
    @program
    def p_if(a: Tensor[float, I], out: Tensor[float, I]):
        if a > 0.0:
            out[...] = a

    with pytest.raises(tir.TypeCheckError) as info:
        p_if.specialize(np.ones(3), np.ones(3))
    assert "where(c, a, b)" in str(info.value) and "if(c, a, b)" not in str(info.value)
    # the text syntax keeps the Tensor IR spelling
    with pytest.raises(tir.TypeCheckError, match=r"use if\(c, a, b\)"):
        tir.check(tir.parse("p(a: tensor<float, I[0:3]>, o: tensor<float, I[0:3]>) "
                            "{ if (a > 0.0) { o ← a; } }"))


def test_did_you_mean_ranks_the_users_names_first():
    @program
    def typo(inp: Tensor[float, I], out: Tensor[float, I]):
        out[...] = inpt  # noqa: F821 (the mistake under test)

    with pytest.raises(tir.FrontendError) as info:
        typo.specialize(np.ones(3), np.ones(3))
    assert "(did you mean 'inp'" in str(info.value)
    assert did_you_mean("inpt", ["inp"], ["input", "int"]) == \
        " (did you mean 'inp' or 'input' or 'int'?)"
    assert did_you_mean("inpt", [], ["input"]) == " (did you mean 'input'?)"


@function
def g(a: Tensor[float, I, J]):
    return 2.0 * a


def test_function_argument_errors_name_the_function():
    with pytest.raises(tir.ArgumentError) as info:
        g(np.ones((3, 4), np.int32))
    assert "function 'g'" in str(info.value) and "program 'g'" not in str(info.value)
    assert (g(np.asfortranarray(np.ones((3, 4)))) == 2.0).all()     # any layout is fine
    with pytest.raises(tir.ArgumentError) as info:
        g(np.ones((3, 4), np.float32))
    assert "function 'g'" in str(info.value) and "program" not in str(info.value)


@function(backend="interpreter")
def scaled(x, a: float):
    return a * x


def test_annotated_float_scalar_with_float32_arrays():
    with pytest.raises(tir.TypeCheckError) as info:
        scaled(np.ones(3, np.float32), 2.0)
    message = str(info.value)
    assert "the annotation 'a: float' fixes float64" in message
    assert "'a: float32'" in message and "unannotated" in message
    assert scaled(np.ones(3), 2.0).dtype == np.float64      # float64 arrays are fine


def test_recompile_log_compares_with_the_closest_specialisation(caplog):
    @function(backend="interpreter")
    def twice(a):
        return 2.0 * a

    with caplog.at_level(logging.INFO, logger="tensorir_dace.specialization"):
        twice(np.ones((4, 5)))
        twice(np.ones((4, 5, 6)))
        twice(with_interval(np.ones((6, 5)), D0=(-1, 5), D1=(0, 5)))
    last = [r.getMessage() for r in caplog.records
            if r.name == "tensorir_dace.specialization"][-1]
    assert "has a different halo" in last and "dimensions" not in last


def test_dims_with_one_name_is_the_dimension():
    K = dims("K")
    assert isinstance(K, Dimension) and K.name == "K"
    assert [d.name for d in dims("A B")] == ["A", "B"]
    with pytest.raises(tir.FrontendError, match=r"K\[0\]: .*is the dimension itself; drop "
                                                r"the \[0\]"):
        K[0]
    with pytest.raises(tir.FrontendError, match="not a sequence"):
        (_,) = dims("K")
    assert K[0:3].stop == 3                         # intervals still work


Vertex, Edge = dims("Vertex Edge")
V2EDim = neighbor_dim(Edge, 2)


@program
def extremes(f: Tensor[float, Edge], n: Tensor[int32, Edge], V2E: Tensor[int, Vertex, V2EDim],
             fmax: Tensor[float, Vertex], fmin: Tensor[float, Vertex],
             nmax: Tensor[int32, Vertex], nmin: Tensor[int32, Vertex]):
    fmax[...] = max_over(f(V2E), axis=V2EDim)
    fmin[...] = min_over(f(V2E), axis=V2EDim)
    nmax[...] = max_over(n(V2E), axis=V2EDim)
    nmin[...] = min_over(n(V2E), axis=V2EDim)


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_max_min_over_an_empty_neighbourhood(backend):
    """As documented: -inf / +inf for floats; for integers the type's maximum
    (min_over) and its minimum + 1 (max_over; the minimum marks an absent value)."""
    table = np.array([[0, 1], [-1, -1]])
    outs = [np.zeros(2), np.zeros(2), np.zeros(2, np.int32), np.zeros(2, np.int32)]
    extremes(np.array([1.0, 2.0]), np.array([1, 2], np.int32), table, *outs, backend=backend)
    i32 = np.iinfo(np.int32)
    assert outs[0].tolist() == [2.0, -np.inf] and outs[1].tolist() == [1.0, np.inf]
    assert outs[2].tolist() == [2, i32.min + 1] and outs[3].tolist() == [1, i32.max]
