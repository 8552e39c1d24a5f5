"""Data-dependent offsets, nested partial shifts and typed literals in the text form.

One program holds every construct; it is compiled once per optimisation level
and compared with the interpreter, which is compared with hand-written NumPy on
meshes whose neighbour tables contain -1.
"""

from __future__ import annotations

import re
import runpy

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import ROOT, assert_same_results, compiled, parsed
from tensorir_dace.testing import clone, random_arguments

NC, NK, NV, NE = 6, 5, 5, 7

CONSTRUCTS = f"""
constructs(
    theta: tensor<float, Cell[0:{NC}], K[0:{NK}]>,
    off: tensor<int32, Cell[0:{NC}], K[0:{NK}]>,
    zd: tensor<int32, Cell[0:{NC}], _NB_0[0:3], K[0:{NK}]>,
    C2E2C: tensor<int, Cell[0:{NC}], _NB_Cell[0:3]>,
    x: tensor<float, Vertex[0:{NV}]>,
    E2V: tensor<int, Edge[0:{NE}], _NB_Vertex[0:2]>,
    V2E: tensor<int, Vertex[0:{NV}], _NB_Edge[0:3]>,
    shifted: tensor<float, Cell[0:{NC}], K[0:{NK}]>,
    shifted2: tensor<float, Cell[0:{NC}], K[0:{NK}]>,
    icon: tensor<float, Cell[0:{NC}], K[0:{NK}]>,
    inside: tensor<bool, Cell[0:{NC}], K[0:{NK}]>,
    guarded: tensor<float, Cell[0:{NC}], K[0:{NK}]>,
    lit: tensor<float32, Cell[0:{NC}], K[0:{NK}]>,
    inner_first: tensor<float, Vertex[0:{NV}]>,
    outer_first: tensor<float, Vertex[0:{NV}]>,
    per_slot: tensor<float, Vertex[0:{NV}], _NB_0[0:2]>,
    present: tensor<bool, Vertex[0:{NV}], _NB_1[0:3], _NB_0[0:2]>,
    count: tensor<int, Vertex[0:{NV}]>,
    slots: tensor<int, Vertex[0:{NV}]>
) {{
  shifted ← ⟪K, off⟫(theta);
  shifted2 ← ⟪K, off × 2 - 1⟫(theta × 2.0) + 1.0;
  icon ← ⟪K, shift_apply(0)(zd)⟫(⟪C2E2C, 0⟫(theta));
  inside ← can_deref(⟪K, shift_apply(1)(zd)⟫(⟪C2E2C, 1⟫(theta)));
  guarded ← if(can_deref(⟪K, off⟫(theta)), ⟪K, off⟫(theta), -1.0);
  lit ← cast(theta, float32) × cast(0.5, float32) + cast(2, float32);
  inner_first ← reduce(λ(acc: tensor<float, Vertex[0:{NV}]>, v: tensor<float, Vertex[0:{NV}]>)
                         → acc + v, 0.0)(
      reduce(λ(acc: tensor<float, Vertex[0:{NV}], _NB_0[0:2]>,
               v: tensor<float, Vertex[0:{NV}], _NB_0[0:2]>) → acc + v, 0.0)(⟪V2E⟫(⟪E2V⟫(x))));
  outer_first ← reduce(λ(acc: tensor<float, Vertex[0:{NV}]>, v: tensor<float, Vertex[0:{NV}]>)
                         → acc + v, 0.0)(
      reduce(λ(acc: tensor<float, Vertex[0:{NV}], _NB_1[0:3]>,
               v: tensor<float, Vertex[0:{NV}], _NB_1[0:3]>) → acc + v × v, 0.0, _NB_0)(
          ⟪V2E⟫(⟪E2V⟫(x))));
  per_slot ← reduce(λ(acc: tensor<float, Vertex[0:{NV}], _NB_0[0:2]>,
                      v: tensor<float, Vertex[0:{NV}], _NB_0[0:2]>) → acc + v, 0.0)(
      ⟪V2E⟫(⟪E2V⟫(x)));
  present ← can_deref(⟪V2E⟫(⟪E2V⟫(x)));
  count ← reduce(λ(acc: tensor<int, Vertex[0:{NV}]>, v: tensor<float, Vertex[0:{NV}]>)
                   → acc + 1, 0)(reduce(λ(acc: tensor<float, Vertex[0:{NV}], _NB_1[0:3]>,
                   v: tensor<float, Vertex[0:{NV}], _NB_1[0:3]>) → acc + v, 0.0, _NB_0)(
      ⟪V2E⟫(⟪E2V⟫(x))));
  slots ← reduce(λ(acc: tensor<int, Vertex[0:{NV}]>, v: tensor<float, Vertex[0:{NV}]>)
                   → acc + 1, 0)(per_slot);
}}
"""

OUTPUTS = {
    "shifted": ((NC, NK), np.float64), "shifted2": ((NC, NK), np.float64),
    "icon": ((NC, NK), np.float64), "inside": ((NC, NK), np.bool_),
    "guarded": ((NC, NK), np.float64), "lit": ((NC, NK), np.float32),
    "inner_first": ((NV,), np.float64), "outer_first": ((NV,), np.float64),
    "per_slot": ((NV, 2), np.float64), "present": ((NV, 3, 2), np.bool_),
    "count": ((NV,), np.int64), "slots": ((NV,), np.int64),
}


def mesh_arguments(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    c2e2c = rng.integers(0, NC, (NC, 3))
    c2e2c[rng.random((NC, 3)) < 0.3] = -1
    e2v = rng.integers(0, NV, (NE, 2))
    e2v[rng.random((NE, 2)) < 0.25] = -1
    v2e = rng.integers(0, NE, (NV, 3))
    v2e[rng.random((NV, 3)) < 0.25] = -1
    args = {
        "theta": rng.random((NC, NK)) + 0.5,
        "off": rng.integers(-3, 4, (NC, NK)).astype(np.int32),
        "zd": rng.integers(-3, 4, (NC, 3, NK)).astype(np.int32),
        "C2E2C": c2e2c, "x": rng.random(NV) + 0.5, "E2V": e2v, "V2E": v2e,
    }
    args.update({n: np.zeros(s, dtype=d) for n, (s, d) in OUTPUTS.items()})
    return args


def numpy_reference(a: dict) -> dict:
    """The expected outputs, element by element, straight from the definitions."""
    theta, off, zd, c2e2c = a["theta"], a["off"], a["zd"], a["C2E2C"]
    x, e2v, v2e = a["x"], a["E2V"], a["V2E"]
    out = {n: np.zeros(s, dtype=d) for n, (s, d) in OUTPUTS.items()}

    def at(field, c, k):        # absent outside the interval: NaN
        return field[c, k] if 0 <= k < NK else np.nan

    for c in range(NC):
        for k in range(NK):
            out["shifted"][c, k] = at(theta, c, k + off[c, k])
            out["shifted2"][c, k] = at(theta * 2.0, c, k + off[c, k] * 2 - 1) + 1.0
            n0, n1 = c2e2c[c, 0], c2e2c[c, 1]
            out["icon"][c, k] = at(theta, n0, k + zd[c, 0, k]) if n0 >= 0 else np.nan
            out["inside"][c, k] = n1 >= 0 and 0 <= k + zd[c, 1, k] < NK
            t = k + off[c, k]
            out["guarded"][c, k] = theta[c, t] if 0 <= t < NK else -1.0
    out["lit"] = theta.astype(np.float32) * np.float32(0.5) + np.float32(2)
    for v in range(NV):
        for j in range(3):
            e = v2e[v, j]
            for i in range(2):
                if e < 0 or e2v[e, i] < 0:      # absent: skipped one by one
                    continue
                val = x[e2v[e, i]]
                out["inner_first"][v] += val
                out["outer_first"][v] += val * val
                out["per_slot"][v, i] += val
                out["present"][v, j, i] = True
            out["count"][v] += int(e >= 0)      # reduced last over _NB_1: masked by V2E
    out["slots"][:] = 2       # _NB_0 reduced last: unmasked once _NB_1 is reduced
    return out


@pytest.fixture(scope="module")
def interpreted():
    args = mesh_arguments(seed=7)
    ref = clone(args)
    tir.interpret(parsed(CONSTRUCTS), **ref)
    return args, ref


def test_interpreter_matches_numpy(interpreted):
    args, ref = interpreted
    expected = numpy_reference(args)
    assert_same_results({n: ref[n] for n in OUTPUTS}, expected)
    assert np.isnan(expected["shifted"]).any() and np.isnan(expected["icon"]).any()
    assert not expected["present"].all() and expected["present"].any()


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_compiled_matches_interpreter(interpreted, optimize):
    args, ref = interpreted
    out = clone(args)
    compiled(CONSTRUCTS, optimize)(**out)
    assert_same_results(out, ref)


def test_compiled_never_reads_outside_the_array():
    """Offsets far outside the interval read nothing (absent, NaN) and do not crash."""
    args = mesh_arguments(seed=8)
    args["off"][:] = np.int32(2**30)
    args["zd"][:, :, ::2] = np.int32(-(2**30))
    ref, out = clone(args), clone(args)
    tir.interpret(parsed(CONSTRUCTS), **ref)
    compiled(CONSTRUCTS, "default")(**out)
    assert np.isnan(ref["shifted"]).all() and (ref["guarded"] == -1.0).all()
    assert_same_results(out, ref)


# ----------------------------------------------------------------------- typing

def test_offset_shift_types_and_round_trip():
    prog = tir.check(parsed(CONSTRUCTS))
    value = prog.body[2].value
    assert tir.ir.builtin_name(value) == "offset_shift"
    assert value.type == tir.parse_type(f"tensor<float, Cell[0:{NC}], K[0:{NK}]>")
    text = tir.format(parsed(CONSTRUCTS))
    assert "⟪K, off × 2 - 1⟫" in text or "shift(K, off × 2 - 1)" in text
    assert tir.parse(text) == parsed(CONSTRUCTS)
    assert tir.parse(tir.format(prog)) == tir.parse(tir.format(tir.check(tir.parse(
        tir.format(prog)))))


def test_offset_shift_domain_is_the_offsets_domain():
    src = """p(x: tensor<float, Cell[0:8], K[0:10]>, off: tensor<int, K[2:6]>,
               y: tensor<float, Cell[0:8], K[2:6]>) { y ← ⟪K, off⟫(x); }"""
    t = tir.check(tir.parse(src)).body[0].value.type
    assert t == tir.parse_type("tensor<float, Cell[0:8], K[2:6]>")


@pytest.mark.parametrize("expr, fragment", [
    ("⟪K, f⟫(x)", r"the offset 'f' of a shift along K must be an integer tensor"),
    ("⟪K, f + 1.0⟫(x)", r"the offset 'f \+ 1.0' of a shift along K must be an integer"),
    ("⟪Cell, off⟫(y)", r"needs an operand with dimension Cell"),
])
def test_offset_shift_errors(expr, fragment):
    src = f"""p(x: tensor<float, Cell[0:4], K[0:5]>, y: tensor<float, K[0:5]>,
               f: tensor<float, Cell[0:4], K[0:5]>, off: tensor<int, Cell[0:4], K[0:5]>,
               out: tensor<float, Cell[0:4], K[0:5]>) {{ out ← {expr}; }}"""
    with pytest.raises(tir.TypeCheckError, match=r"^3:\d+: .*" + fragment):
        tir.check(tir.parse(src))


def test_reduce_axis_must_name_a_neighbour_dimension():
    src = """p(x: tensor<float, Vertex[0:5]>, E2V: tensor<int, Edge[0:7], _NB_Vertex[0:2]>,
               out: tensor<float, Edge[0:7]>) {
      out ← reduce(λ(acc: tensor<float, Edge[0:7]>, v: tensor<float, Edge[0:7]>) → acc + v,
                   0.0, _NB_4)(⟪E2V⟫(x));
    }"""
    with pytest.raises(tir.TypeCheckError, match=r"^4:\d+: the axis of reduce must name a "
                                                 r"neighbour dimension of its operands: _NB_0"):
        tir.check(tir.parse(src))


def test_nested_shift_masks_depend_on_the_outer_table():
    src = """p(x: tensor<float, Vertex[0:5]>, E2V: tensor<int, Edge[0:7], _NB_Vertex[0:2]>,
               V2E: tensor<int, Vertex[0:5], _NB_Edge[0:3]>,
               out: tensor<bool, Vertex[0:5], _NB_1[0:3], _NB_0[0:2]>) {
      out ← can_deref(⟪V2E⟫(⟪E2V⟫(x)));
    }"""
    t = tir.check(tir.parse(src)).body[0].value.args[0].type
    assert [d.name for d in t.dims] == ["Vertex", "_NB_1", "_NB_0"]
    inner_mask = t.dim("_NB_0").mask
    assert tir.format(inner_mask) == "shift_init(V2E)(E2V)"
    assert tir.format(t.dim("_NB_1").mask) == "V2E"


def test_cast_literal_has_a_fixed_type():
    ok = """p(x: tensor<float32, I[0:4]>, y: tensor<float32, I[0:4]>) {
              y ← x × cast(0.5, float32); }"""
    tir.check(tir.parse(ok))
    bad = """p(x: tensor<float32, I[0:4]>, y: tensor<float32, I[0:4]>) {
               y ← cast(1.0, float64) × x; }"""
    with pytest.raises(tir.TypeCheckError, match=r"float64 and float32"):
        tir.check(tir.parse(bad))


# ----------------------------------------------------------------------- docs

DOC_BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "meshes.md").read_text(),
                        re.DOTALL)


@pytest.mark.parametrize("code", DOC_BLOCKS, ids=[f"block{i}" for i in range(len(DOC_BLOCKS))])
def test_docs_examples_run(code, monkeypatch, tmp_path):
    script = tmp_path / "meshes_example.py"
    script.write_text(code)
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(script), run_name="meshes_example")


# ----------------------------------------------------------------------- compositions

COMPOSED = """
composed(x: tensor<float, Cell[0:5], K[0:6]>, off: tensor<int32, Cell[0:5], K[0:6]>,
         C2E2C: tensor<int, Cell[0:5], _NB_Cell[0:3]>,
         s: tensor<float, Cell[0:5], K[0:6]>, r: tensor<float, Cell[0:5], K[0:6]>,
         t: tensor<float, Cell[0:5], K[1:4]>) {
  tmp: tensor<float, Cell[0:5], K[0:6]>;
  s ← scan(λ(st: tensor<float, Cell[0:5]>, a: tensor<float, Cell[0:5]>)
             → st + if(isnan(a), 0.0, a), True, 0.0)(⟪K, off⟫(x));
  r ← reduce(λ(acc: tensor<float, Cell[0:5], K[0:6]>, a: tensor<float, Cell[0:5], K[0:6]>)
               → acc + if(isnan(a), 1.0, a), 0.0)(⟪K, off⟫(⟪C2E2C⟫(x)));
  tmp ← ⟪K, off⟫(x) × 2.0;
  t ← ⟪K, -1⟫(⟪K, off⟫(tmp)) + ⟪K, 1⟫(⟪K, subset(off, K[1:5])⟫(x));
}
"""


def composed_numpy(x: np.ndarray, off: np.ndarray, c2e2c: np.ndarray) -> dict:
    n, m = x.shape

    def at(field, c, k):
        return field[c, k] if 0 <= k < m else np.nan

    shifted = np.array([[at(x, c, k + off[c, k]) for k in range(m)] for c in range(n)])
    tmp = shifted * 2.0
    s = np.cumsum(np.where(np.isnan(shifted), 0.0, shifted), axis=1)
    r = np.zeros((n, m))
    for c in range(n):
        for k in range(m):
            for j in range(3):
                v = at(x, c2e2c[c, j], k + off[c, k]) if c2e2c[c, j] >= 0 else np.nan
                if not np.isnan(v):         # absent elements (table or offset) are skipped
                    r[c, k] += v
    t = np.array([[at(tmp, c, k - 1 + off[c, k - 1]) + shifted[c, k + 1] for k in range(1, 4)]
                  for c in range(n)])
    return {"s": s, "r": r, "t": t}


def test_offsets_inside_scans_reductions_and_temporaries():
    prog = parsed(COMPOSED)
    args = random_arguments(prog, seed=3, absent_fraction=0.3)
    ref, out = clone(args), clone(args)
    tir.interpret(prog, **ref)
    assert_same_results({k: ref[k] for k in "srt"},
                        composed_numpy(args["x"], args["off"], args["C2E2C"]))
    compiled(COMPOSED, "default")(**out)
    assert_same_results(out, ref)
