"""A value gathered through two different tables over one neighbour dimension.

``⟪S⟫(g) × ⟪C2E⟫(x)`` is absent where either table has no neighbour (an
element-wise operation propagates absence); the type of the product keeps
only one table as its mask, so the other's absent entries must still be
skipped by the reduction, whichever operand comes first, and survive in a
temporary the product is stored in.  Interpreter and
compiled code (both optimisation levels) are compared with hand-written
NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import compiled, parsed

LAMBDA = ("λ(acc: tensor<float, Cell[0:NC], K[0:NK]>, a: tensor<float, Cell[0:NC], K[0:NK]>) "
          "→ acc + a")
HEAD = """
two_tables(vn: tensor<float, Edge[0:NE], K[0:NK]>, g: tensor<float, Edge[0:NE]>,
           C2E: tensor<int, Cell[0:NC], _NB_Edge[0:3]>, S: tensor<int, Cell[0:NC], _NB_Edge[0:3]>,
           out: tensor<float, Cell[0:NC], K[0:NK]>) {
"""
PROGRAMS = {
    "first masked by S": HEAD + f"  out ← reduce({LAMBDA}, 0.0)(⟪S⟫(g) × ⟪C2E⟫(vn))\n}}",
    "first masked by C2E": HEAD + f"  out ← reduce({LAMBDA}, 0.0)(⟪C2E⟫(vn) × ⟪S⟫(g))\n}}",
    "stored in a temporary": HEAD.replace(") {\n", ") {\n  t: tensor<float, Cell[0:NC], K[0:NK], "
                                          "_NB_0[0:3]>;\n")
    + f"  t ← ⟪S⟫(g) × ⟪C2E⟫(vn);\n  out ← reduce({LAMBDA}, 0.0)(t)\n}}",
    "in a lambda": HEAD + f"  out ← reduce({LAMBDA}, 0.0)((λ(p: tensor<float, Cell[0:NC], "
                          "_NB_0[0:3]>, q: tensor<float, Cell[0:NC], K[0:NK], _NB_0[0:3]>) → "
                          "p + 2.0 × q)(⟪S⟫(g), ⟪C2E⟫(vn)))\n}",
}


def arguments(seed: int):
    rng = np.random.default_rng(seed)
    nc, ne, nk = 9, 12, 4
    c2e = rng.integers(0, ne, (nc, 3))
    s = rng.integers(0, ne, (nc, 3))
    c2e[rng.random((nc, 3)) < 0.3] = -1
    s[rng.random((nc, 3)) < 0.3] = -1
    c2e[0], s[1] = -1, -1                  # rows with nothing present
    return {"vn": rng.random((ne, nk)), "g": rng.random(ne), "C2E": c2e, "S": s,
            "out": np.full((nc, nk), 7.0)}


def expected(name: str, a: dict) -> np.ndarray:
    present = ((a["C2E"] >= 0) & (a["S"] >= 0))[:, :, None]
    gs = a["g"][np.where(a["S"] >= 0, a["S"], 0)][:, :, None]
    xs = a["vn"][np.where(a["C2E"] >= 0, a["C2E"], 0)]
    value = gs + 2.0 * xs if name == "in a lambda" else gs * xs     # (rows, nb, K)
    return np.where(present, value, 0.0).sum(1)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("run", ["interpreter", "none", "default"])
def test_absent_through_either_table_is_skipped(name, run):
    a = arguments(3)
    if run == "interpreter":
        tir.interpret(parsed(PROGRAMS[name]), **a)
    else:
        compiled(PROGRAMS[name], run)(**a)
    np.testing.assert_allclose(a["out"], expected(name, a), rtol=1e-14)
    assert not a["out"][:2].any()


SELECT = """
select(x: tensor<float, Edge[0:NE]>, c: tensor<bool, Cell[0:NC], _NB_0[0:3]>,
       C2E: tensor<int, Cell[0:NC], _NB_Edge[0:3]>, S: tensor<int, Cell[0:NC], _NB_Edge[0:3]>,
       out: tensor<float, Cell[0:NC]>) {
  out ← reduce(λ(acc: tensor<float, Cell[0:NC]>, a: tensor<float, Cell[0:NC]>) → acc + a,
               0.0)(if(c, ⟪S⟫(x), ⟪C2E⟫(x)))
}
"""


@pytest.mark.parametrize("run", ["interpreter", "none", "default"])
def test_a_selection_between_two_tables_is_present_where_the_chosen_one_is(run):
    rng = np.random.default_rng(8)
    nc, ne = 9, 12
    a = {"x": rng.random(ne), "c": rng.random((nc, 3)) < 0.5,
         "C2E": rng.integers(-1, ne, (nc, 3)), "S": rng.integers(-1, ne, (nc, 3)),
         "out": np.zeros(nc)}
    chosen = np.where(a["c"], a["S"], a["C2E"])
    expected = np.where(chosen >= 0, a["x"][np.where(chosen >= 0, chosen, 0)], 0.0).sum(1)
    if run == "interpreter":
        tir.interpret(parsed(SELECT), **a)
    else:
        compiled(SELECT, run)(**a)
    np.testing.assert_allclose(a["out"], expected, rtol=1e-14)
