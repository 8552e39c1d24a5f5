"""Arrays over one dimension with different lengths (GT4Py's half levels).

In GT4Py every field's domain is its own shape, starting at 0: icon4py passes
half-level fields (nlev + 1 levels) next to full-level ones (nlev levels), all
annotated ``Field[[Cell, K], float]``.  Here the shortest length is the size
``N_K`` and a longer array gets ``K[0:N_K + c]``, as ``K.halo(0, c)`` would
give; the type checker decides coverage.  Interpreter vs NumPy, compiled vs
interpreter; one binary serves every nlev with the same differences.
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorir_dace import TensorIRError, TypeCheckError
from tensorir_dace.frontend import (
    Field,
    FieldOffset,
    concat_where,
    connectivity,
    dims,
    field_operator,
    neighbor_dim,
    program,
)

Cell, Edge, K = dims("Cell Edge K")
Koff = FieldOffset("Koff", source=K, target=(K,))
E2CDim = neighbor_dim(Cell, 2)
E2C = connectivity("E2C", Edge, E2CDim)
RNG = np.random.default_rng(77)
NC, NE, NLEV = 5, 9, 6


@field_operator
def interpolate_to_full_levels(w: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return 0.5 * (w + w(Koff[1]))


@field_operator
def difference_to_level_below(w: Field[[Cell, K], float],
                              theta: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    # w (half levels) at k, theta (full levels) at k - 1; level 0 has no k - 1
    return concat_where(K == 0, w, w - theta(Koff[-1]))


@program
def half_levels(w: Field[[Cell, K], float], theta: Field[[Cell, K], float],
                o: Field[[Cell, K], float], d: Field[[Cell, K], float]):
    interpolate_to_full_levels(w, out=o)
    difference_to_level_below(w, theta, out=d)


@field_operator
def edge_mean(c: Field[[Cell], float]) -> Field[[Edge], float]:
    return 0.5 * (c(E2C[0]) + c(E2C[1]))


@program
def first_edges(v: Field[[Edge], float], c: Field[[Cell], float], out: Field[[Edge], float]):
    # out covers the first edges only; v (and the table) every edge
    out[...] = v + edge_mean(c)


def half_levels_numpy(w, theta):
    o = 0.5 * (w[:, :-1] + w[:, 1:])
    d = np.empty_like(theta)
    d[:, 0] = w[:, 0]
    d[:, 1:] = w[:, 1:-1] - theta[:, :-1]
    return o, d


@pytest.fixture(scope="module")
def compiled_half_levels():
    """The program compiled once; every test below reuses its binary."""
    w, theta = RNG.random((NC, NLEV + 1)), RNG.random((NC, NLEV))
    o, d = np.zeros((NC, NLEV)), np.zeros((NC, NLEV))
    half_levels(w, theta, o, d, offset_provider={"Koff": K})
    return half_levels


def test_direct_call_with_out_and_domain():
    w = RNG.random((NC, NLEV + 1))
    want = 0.5 * (w[:, :-1] + w[:, 1:])
    got = {}
    for backend in ("interpreter", "compiled"):
        o = np.zeros((NC, NLEV))
        interpolate_to_full_levels(w, out=o, backend=backend, offset_provider={"Koff": K})
        got[backend] = o
        np.testing.assert_allclose(o, want)
        part = np.full((NC, NLEV), -1.0)
        interpolate_to_full_levels(w, out=part, domain={K: (1, NLEV - 1)}, backend=backend)
        np.testing.assert_allclose(part[:, 1:-1], want[:, 1:-1])
        assert (part[:, [0, -1]] == -1).all()
    np.testing.assert_array_equal(got["compiled"], got["interpreter"])
    assert any("K[0:N_K+1]" in s for s in interpolate_to_full_levels.specializations())


def test_program_with_half_and_full_levels(compiled_half_levels):
    w, theta = RNG.random((NC, NLEV + 1)), RNG.random((NC, NLEV))
    want_o, want_d = half_levels_numpy(w, theta)
    runs = {}
    for backend in ("interpreter", "compiled"):
        o, d = np.zeros((NC, NLEV)), np.zeros((NC, NLEV))
        compiled_half_levels(w, theta, o, d, backend=backend, offset_provider={"Koff": K})
        np.testing.assert_allclose(o, want_o)
        np.testing.assert_allclose(d, want_d)
        runs[backend] = (o, d)
    for a, b in zip(runs["compiled"], runs["interpreter"]):
        np.testing.assert_array_equal(a, b)


def test_one_binary_serves_every_nlev(compiled_half_levels):
    before = compiled_half_levels.cache_info()
    for nlev in (3, 11):
        w, theta = RNG.random((NC, nlev + 1)), RNG.random((NC, nlev))
        o, d = np.zeros((NC, nlev)), np.zeros((NC, nlev))
        compiled_half_levels(w, theta, o, d, offset_provider={"Koff": K})
        want_o, want_d = half_levels_numpy(w, theta)
        np.testing.assert_allclose(o, want_o)
        np.testing.assert_allclose(d, want_d)
    after = compiled_half_levels.cache_info()
    assert after.compiles == before.compiles
    assert after.specializations == before.specializations


def test_compile_without_arguments_serves_half_levels(compiled_half_levels):
    """``compile()`` knows no lengths: a program that needs half levels one
    longer than full levels compiles at its first call, for those lengths,
    and its calls run compiled (GT4Py's ``compile(offset_provider=...,
    name=[values])`` spelling accepted; the provider given there is used by
    calls without one)."""
    before = compiled_half_levels.cache_info()
    fast = compiled_half_levels.compile(offset_provider={"Koff": K}, enable_jit=False)
    w, theta = RNG.random((NC, NLEV + 1)), RNG.random((NC, NLEV))
    o, d = np.zeros((NC, NLEV)), np.zeros((NC, NLEV))
    fast(w, theta, o, d)
    want_o, want_d = half_levels_numpy(w, theta)
    np.testing.assert_allclose(o, want_o)
    np.testing.assert_allclose(d, want_d)
    o2 = np.zeros((NC, NLEV))
    fast(w=w, theta=theta, o=o2, d=d, offset_provider={"Koff": K})
    np.testing.assert_array_equal(o2, o)
    after = compiled_half_levels.cache_info()
    assert after.compiles == before.compiles        # the fixture's binary
    with pytest.raises(TensorIRError, match="not parameters"):
        compiled_half_levels.compile(nlev=[4])


def test_edge_output_shorter_than_edge_input():
    v, c = RNG.random(NE), RNG.random(NC)
    tab = RNG.integers(0, NC, (NE, 2))
    n = NE - 3
    want = v[:n] + 0.5 * (c[tab[:n, 0]] + c[tab[:n, 1]])
    runs = {}
    for backend in ("interpreter", "compiled"):
        out = np.zeros(n)
        first_edges(v, c, out, backend=backend, E2C=tab)
        np.testing.assert_allclose(out, want)
        runs[backend] = out
    np.testing.assert_array_equal(runs["compiled"], runs["interpreter"])


def test_equal_lengths_unchanged():
    @program
    def copy(a: Field[[Cell, K], float], b: Field[[Cell, K], float]):
        b[...] = a

    a = RNG.random((NC, NLEV))
    b = np.zeros((NC, NLEV))
    copy(a, b, backend="interpreter")
    np.testing.assert_array_equal(a, b)
    (spec,) = copy._cache.entries()
    assert spec.key == copy._specializer().default_key()
    assert "N_K + " not in spec.signature()


def test_uncovered_read_is_a_located_error():
    # o has as many levels as w: its top level needs w at nlev + 1
    w = RNG.random((NC, NLEV + 1))
    o = np.full((NC, NLEV + 2), -1.0)
    with pytest.raises(TypeCheckError) as e:
        half_levels(w, RNG.random((NC, NLEV)), o, np.zeros((NC, NLEV)),
                    backend="interpreter", offset_provider={"Koff": K})
    assert "test_field_lengths.py:" in str(e.value)
    assert "K[0:N_K+2]" in str(e.value).replace(" ", "")
    assert "'o' has 2 more elements along K" in str(e.value)
    assert (o == -1).all()
    with pytest.raises(TensorIRError) as e2:
        interpolate_to_full_levels(w, out=o)
    assert "test_field_lengths.py:" in str(e2.value)
    assert (o == -1).all()


def test_lookup_by_source_tells_lengths_apart():
    w, theta = RNG.random((NC, NLEV + 1)), RNG.random((NC, NLEV))
    o, d = np.zeros((NC, NLEV)), np.zeros((NC, NLEV))
    half = half_levels._described((w, theta, o, d), {})
    same = half_levels._described((theta, theta, o, d), {})
    assert half is not None and same is not None and half[1] != same[1]
    assert ("lengths", (("w", (("K", 1),)),)) in half[1]
    assert not any(isinstance(x, tuple) and x[:1] == ("lengths",) for x in same[1])


# ---------------------------------------------------------------- random programs

# Terms over the full levels: (Python, NumPy on w (nlev + 1 levels) and t (nlev)).
TERMS = [("w", lambda w, t: w[:, :-1]), ("w(Koff[1])", lambda w, t: w[:, 1:]),
         ("t", lambda w, t: t), ("(w - w(Koff[1]))", lambda w, t: w[:, :-1] - w[:, 1:])]


def random_statements(seed: int, count: int) -> list[tuple[str, list]]:
    """``count`` random sums of the terms with random coefficients (seeded)."""
    r = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        picks = [(TERMS[i], float(r.integers(1, 9)) / 4) for i in
                 r.choice(len(TERMS), size=int(r.integers(1, 4)), replace=False)]
        out.append((" + ".join(f"{c} * {py}" for (py, _), c in picks), picks))
    return out


def random_module(statements, path):
    """A @program writing each statement into its own full-level output, and the
    half-level ``h`` (nlev + 1 levels) from ``w``."""
    outs = [f"o{i}" for i in range(len(statements))]
    src = ["from tensorir_dace.frontend import Field, FieldOffset, dims, program",
           'Cell, K = dims("Cell K")', 'Koff = FieldOffset("Koff", source=K, target=(K,))',
           "@program",
           "def fuzz(w: Field[[Cell, K], float], t: Field[[Cell, K], float], "
           "h: Field[[Cell, K], float], "
           + ", ".join(f"{o}: Field[[Cell, K], float]" for o in outs) + "):",
           "    h[...] = 2.0 * w"]
    src += [f"    {o}[...] = {py}" for o, (py, _) in zip(outs, statements)]
    path.write_text("\n".join(src) + "\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_random_half_level_programs(tmp_path):
    statements = random_statements(2026, 6)
    module = random_module(statements, tmp_path / "half_level_fuzz.py")
    for nlev in (4, 9):
        w, t = RNG.random((NC, nlev + 1)), RNG.random((NC, nlev))
        runs = {}
        for backend in ("interpreter", "compiled"):
            h = np.zeros((NC, nlev + 1))
            outs = [np.zeros((NC, nlev)) for _ in statements]
            module.fuzz(w, t, h, *outs, backend=backend, offset_provider={"Koff": module.K})
            np.testing.assert_allclose(h, 2.0 * w)
            for (py, picks), o in zip(statements, outs):
                want = sum(c * fn(w, t) for (_, fn), c in picks)
                np.testing.assert_allclose(o, want, err_msg=py)
            runs[backend] = [h, *outs]
        for a, b in zip(runs["compiled"], runs["interpreter"]):   # (FMA: rounding)
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    assert module.fuzz.cache_info().specializations == 1


@field_operator
def _half_level_from_full(wgtfac_c: Field[[Cell, K], float],
                          z: Field[[Cell, K], float]) -> Field[[Cell, K], float]:
    return wgtfac_c * z + (1.0 - wgtfac_c) * z(Koff[-1])


@program
def half_level_from_full(wgtfac_c: Field[[Cell, K], float], z: Field[[Cell, K], float],
                         w_c: Field[[Cell, K], float], horizontal_start: int,
                         horizontal_end: int, vertical_start: int, vertical_end: int):
    _half_level_from_full(wgtfac_c, z, out=w_c,
                          domain={Cell: (horizontal_start, horizontal_end),
                                  K: (vertical_start, vertical_end)})


@pytest.mark.parametrize("backend", ["interpreter", "compiled"])
def test_half_level_output_written_from_full_level_inputs(backend):
    """icon4py's pattern: an output over nlev + 1 levels written on K[1:nlev]
    from nlev-level inputs read one level down; untouched elsewhere."""
    wg, z = RNG.random((NC, NLEV + 1)), RNG.random((NC, NLEV))
    w_c = np.full((NC, NLEV + 1), -7.0)
    half_level_from_full(wg, z, w_c, 1, NC, 1, NLEV, backend=backend,
                         offset_provider={"Koff": K})
    expected = np.full((NC, NLEV + 1), -7.0)
    expected[1:, 1:NLEV] = wg[1:, 1:NLEV] * z[1:, 1:] + (1 - wg[1:, 1:NLEV]) * z[1:, :-1]
    np.testing.assert_allclose(w_c, expected, rtol=1e-14)


@program
def scaled_on_levels(w: Field[[Cell, K], float], theta: Field[[Cell, K], float],
                     o: Field[[Cell, K], float], vertical_end: int):
    # reads the levels of the domain only: equal lengths do, and so do half
    # levels (w, nlev + 1) beside full levels (theta and o, nlev)
    difference_to_level_below(w, theta, out=o, domain={Cell: (0, NC), K: (0, vertical_end)})


def test_compile_serves_calls_with_other_lengths_than_its_binary():
    """``compile()`` of a program that takes equal lengths compiles the binary
    for equal lengths; a call of that compiled program with half levels one
    longer than full levels (as icon4py calls what it compiled up front) runs
    the program's own specialisation for those lengths, compiled."""
    fast = scaled_on_levels.compile(offset_provider={"Koff": K}, enable_jit=False)
    w, theta = RNG.random((NC, NLEV)), RNG.random((NC, NLEV))
    o = np.zeros((NC, NLEV))
    fast(w, theta, o, NLEV)                                   # the binary's own lengths
    np.testing.assert_allclose(o, half_levels_numpy(np.hstack([w, w[:, -1:]]), theta)[1])
    half = RNG.random((NC, NLEV + 1))
    o2 = np.zeros((NC, NLEV))
    fast(w=half, theta=theta, o=o2, vertical_end=NLEV)        # half and full levels
    np.testing.assert_allclose(o2, half_levels_numpy(half, theta)[1])
    assert any("K[0:N_K+1]" in s for s in scaled_on_levels.specializations())
    with pytest.raises(TensorIRError, match="'o'"):           # a mistake is still one
        fast(half, theta, np.zeros(NC), NLEV)
