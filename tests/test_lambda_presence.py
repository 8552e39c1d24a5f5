"""Presence looks inside applied lambdas: the value of ``(λ(y) → body)(arg)`` is
present where ``body`` is, with ``y`` carrying the presence of ``arg``.

One program applies lambdas to values shifted through a table with -1 entries:
``can_deref`` of them, reductions over them (absent elements skipped), nested
and shadowing lambdas, a reduce inside a lambda body over its parameter, and a
body that selects on ``can_deref`` of its parameter.  The interpreter is
compared with hand-written NumPy on a small mesh, the compiled program (both
optimisation levels) with the interpreter on a random one; the ``nabla.tir``
example with absent ``E2V`` entries skips the edges with an absent end.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import check_against_interpreter, compiled, example, parsed
from tensorir_dace.testing import random_arguments
from test_frontend import nabla_args, nabla_numpy

V, E = "Vertex[0:NV]", "Edge[0:NE]"
VT, ET = f"tensor<float, {V}>", f"tensor<float, {E}>"
SUM = f"λ(acc: {VT}, a: {VT}) → acc + a"
COUNT = f"λ(n: tensor<int, {V}>, a: {VT}) → n + 1"
ENDS = "⟪E2V, 0⟫(pp), ⟪E2V, 1⟫(pp)"
PAIR = f"(λ(a: {ET}, b: {ET}) → a + b)({ENDS})"
SELECT = f"(λ(y: {ET}) → if(can_deref(y), y, -1.0))(⟪E2V, 1⟫(v))"

SRC = f"""
lambdas(v: {VT}, pp: {VT}, e: {ET},
        E2V: tensor<int, {E}, _NB_Vertex[0:2]>, V2E: tensor<int, {V}, _NB_Edge[0:3]>,
        ident: tensor<bool, {E}>, pair_sum: {VT}, pair_count: tensor<int, {V}>,
        nested: {VT}, nested_ok: tensor<bool, {E}>, select: {ET},
        select_ok: tensor<bool, {E}>, select_sum: {VT}, inner_sum: {VT},
        shadowed: tensor<bool, {E}>, outer: tensor<bool, {E}>, pair_ok: tensor<bool, {E}>) {{
  ident ← can_deref((λ(y: {ET}) → y)(⟪E2V, 1⟫(v)));
  pair_sum ← reduce({SUM}, 0.0)(⟪V2E⟫({PAIR}));
  pair_count ← reduce({COUNT}, 0)(⟪V2E⟫({PAIR}));
  pair_ok ← can_deref({PAIR});
  nested ← reduce({SUM}, 0.0)(⟪V2E⟫(
      (λ(y: {ET}) → (λ(z: {ET}) → z × 2.0)(y + 1.0))(⟪E2V, 1⟫(v))));
  nested_ok ← can_deref((λ(y: {ET}) → (λ(z: {ET}) → z)(y))(⟪E2V, 0⟫(v)));
  select ← {SELECT};
  select_ok ← can_deref({SELECT});
  select_sum ← reduce({SUM}, 0.0)(⟪V2E⟫({SELECT}));
  inner_sum ← (λ(y: {ET}) → reduce({SUM}, 0.0)(⟪V2E⟫(y)))(⟪E2V, 1⟫(v));
  shadowed ← (λ(y: {ET}) → (λ(y: {ET}) → can_deref(y))(e))(⟪E2V, 1⟫(v));
  outer ← (λ(y: {ET}) → (λ(z: {ET}) → can_deref(y))(e))(⟪E2V, 1⟫(v));
}}
"""

# A small mesh: edges 2 and 3 have an absent end, vertices 0 and 2 an absent edge.
E2V = np.array([[0, 1], [1, 2], [2, -1], [-1, 0]])
V2E = np.array([[0, 3, -1], [0, 1, 3], [1, 2, -1]])


def small_arguments() -> dict:
    nv, ne = 3, 4
    return dict(v=np.array([1.0, 10.0, 100.0]), pp=np.array([2.0, 20.0, 200.0]),
                e=np.arange(ne, dtype=float), E2V=E2V, V2E=V2E,
                ident=np.zeros(ne, bool), pair_sum=np.zeros(nv),
                pair_count=np.zeros(nv, np.int64), nested=np.zeros(nv),
                nested_ok=np.zeros(ne, bool), select=np.zeros(ne), select_ok=np.zeros(ne, bool),
                select_sum=np.zeros(nv), inner_sum=np.zeros(nv), shadowed=np.zeros(ne, bool),
                outer=np.zeros(ne, bool), pair_ok=np.zeros(ne, bool))


def expected(v, pp, e, E2V, V2E, **_) -> dict:
    """The program in NumPy: an edge value is absent where an end it reads is."""
    def end(x, k):
        return np.where(E2V[:, k] >= 0, x[np.maximum(E2V[:, k], 0)], np.nan)

    def vertex_sum(edge_value, edge_present):
        slot = V2E >= 0
        slot &= edge_present[np.maximum(V2E, 0)]
        return np.where(slot, edge_value[np.maximum(V2E, 0)], 0.0).sum(axis=1), slot.sum(axis=1)

    has0, has1 = E2V[:, 0] >= 0, E2V[:, 1] >= 0
    both = has0 & has1
    select = np.where(has1, end(v, 1), -1.0)
    everywhere = np.ones(len(E2V), bool)
    pair_sum, pair_count = vertex_sum(end(pp, 0) + end(pp, 1), both)
    return dict(ident=has1, pair_sum=pair_sum, pair_count=pair_count, pair_ok=both,
                nested=vertex_sum((end(v, 1) + 1.0) * 2.0, has1)[0], nested_ok=has0,
                select=select, select_ok=everywhere,
                select_sum=vertex_sum(select, everywhere)[0],
                inner_sum=vertex_sum(end(v, 1), has1)[0], shadowed=everywhere, outer=has1)


def test_interpreter_matches_numpy():
    args = small_arguments()
    tir.interpret(parsed(SRC), **args)
    for name, want in expected(**args).items():
        np.testing.assert_array_equal(args[name], want, err_msg=name)
    assert args["pair_count"].tolist() == [1, 2, 1]     # edges 2 and 3 skipped
    assert not np.isnan(args["pair_sum"]).any()


def test_compiled_matches_interpreter(optimize):
    args = random_arguments(parsed(SRC), sizes={"NV": 11, "NE": 17}, seed=4,
                            absent_fraction=0.25)
    assert (args["E2V"] < 0).any() and (args["V2E"] < 0).any()
    out, ref = check_against_interpreter(SRC, optimize, args=args)
    assert not ref["ident"].all() and ref["select_ok"].all()
    for name, want in expected(**args).items():
        np.testing.assert_allclose(ref[name], want, rtol=1e-12, err_msg=name)


@pytest.fixture(scope="module")
def nabla_case():
    """The nabla example on a mesh whose E2V has absent entries, interpreted."""
    args = nabla_args(5440, 16167, absent_e2v=0.01)
    ref = copy.deepcopy(args)
    tir.interpret(parsed(example("nabla")), **ref)
    return args, ref


def test_nabla_example_skips_edges_with_an_absent_end(nabla_case):
    args, ref = nabla_case
    want, with_nan = nabla_numpy(**args), nabla_numpy(**args, skip_absent=False)
    for k in range(2):
        assert np.isnan(with_nan[k]).any()
        np.testing.assert_allclose(ref["out"][k], want[k], rtol=1e-12)


def test_nabla_example_compiled_matches_interpreter(nabla_case):
    args, ref = nabla_case
    out = copy.deepcopy(args)
    compiled(example("nabla"))(**out)
    for k in range(2):
        assert not np.isnan(out["out"][k]).any()
        np.testing.assert_allclose(out["out"][k], ref["out"][k], rtol=1e-12)
