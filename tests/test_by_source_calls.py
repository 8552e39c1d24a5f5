"""Calls with wrapped arrays, new scalar values and defaulted parameters are
found by the Python source too.

A new process whose binaries are cached runs such calls of ``@program``s and
``@function``s without translating (neither SymPy nor DaCe imported): the key
describes an array wrapped by ``with_dims``/``with_interval`` by the
dimensions and intervals it names (and every array's shape), a number by its
type only (its value is a parameter of the program), and a parameter left to
its default by name (the default's value is part of the function's
fingerprint).  Whatever would change the specialisation changes the key: an
interval with another start, an edited default, another scalar type.
"""

from __future__ import annotations

import numpy as np

from tensorir_dace.frontend import by_source, dims, with_dims, with_interval
from test_startup import run_fresh

MODULE = '''
from tensorir_dace import dims, function, program

I, J = dims("I J")
SCALE = 2.0


@program
def halo(a, out):
    out[...] = a(I - 1) + SCALE * a(I + 1)


@program
def scale(a, out, w):
    out[...] = a * w


@function
def weighted(a, w=3.0):
    return a * w


@function
def shifted(a):
    return a(I + 1) - a
'''

# argv: the module's folder, a scalar value, the start of a's interval along I.
CALLS = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import wrapped_calls as m
    from tensorir_dace.frontend import with_dims, with_interval
    from tensorir_dace.runtime.cachedir import compile_count
    w, start = float(sys.argv[2]), int(sys.argv[3])
    I, J = m.I, m.J
    a = np.arange(42.0).reshape(6, 7) ** 2 / 10
    res = {}
    out = np.zeros((5 + start, 7))          # a covers I[start:start + 6]
    m.halo(with_dims(a, I[start:], J), with_dims(out, I, J))
    res["halo"] = out.tolist()
    o = np.zeros((6, 7))
    m.scale(with_interval(a, I=(0, 6), J=(0, 7)), with_interval(o, I=(0, 6), J=(0, 7)), w)
    res["scale"] = o.tolist()
    m.scale(with_dims(a, I, J), with_dims(o, I, J), np.float64(3.0))   # another key
    res["scale_np"] = o.tolist()
    res["weighted_default"] = m.weighted(with_dims(a, I, J)).tolist()
    res["weighted"] = m.weighted(with_dims(a, I, J), w).tolist()
    res["shifted"] = m.shifted(with_dims(a, I[start:], J)).tolist()
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"res": res, "heavy": heavy, "compiled": compile_count()}))
'''


def expected(w: float, start: int, default: float) -> dict:
    a = np.arange(42.0).reshape(6, 7) ** 2 / 10
    n = 5 + start
    rows = np.arange(n)
    return {"halo": a[rows - 1 - start] + 2.0 * a[rows + 1 - start], "scale": a * w,
            "scale_np": a * 3.0, "weighted_default": a * default, "weighted": a * w,
            "shifted": a[1:] - a[:-1]}


def check(got: dict, w: float, start: int, default: float) -> None:
    for name, want in expected(w, start, default).items():
        np.testing.assert_allclose(got["res"][name], want, rtol=1e-14, err_msg=name)


def test_wrapped_arrays_scalars_and_defaults_are_found_by_the_source(tmp_path):
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    module = src / "wrapped_calls.py"
    module.write_text(MODULE)

    first = run_fresh(CALLS, cache, src, "2.0", "-1")
    assert "sympy" in first["heavy"] and first["compiled"] > 0
    check(first, 2.0, -1, 3.0)

    # other scalar values, the same wrappers: nothing translated or compiled
    again = run_fresh(CALLS, cache, src, "5.0", "-1")
    assert again["heavy"] == [] and again["compiled"] == 0
    check(again, 5.0, -1, 3.0)

    # another interval start and an edited default: translated, never stale
    module.write_text(MODULE.replace("w=3.0", "w=4.0"))
    moved = run_fresh(CALLS, cache, src, "7.0", "-2")
    assert "sympy" in moved["heavy"]
    check(moved, 7.0, -2, 4.0)
    last = run_fresh(CALLS, cache, src, "1.5", "-2")
    assert last["heavy"] == [] and last["compiled"] == 0
    check(last, 1.5, -2, 4.0)


def test_the_description_follows_wrappers_types_and_defaults():
    I, J = dims("I J")
    a, o = np.zeros((6, 7)), np.zeros((4, 7))

    def described(**values):
        return by_source.describe(values, False)

    base = described(a=with_dims(a, I[-1:], J), out=o, w=2.0)
    assert base == described(a=with_dims(a, I[-1:], J), out=o, w=9.5)     # values: parameters
    assert base == described(a=with_interval(a, I=(-1, None)).__class__(
        a, {"I": (-1, None)}, (I, J)), out=o, w=2.0)
    others = [described(a=with_dims(a, I[-2:], J), out=o, w=2.0),     # another start
              described(a=with_dims(a, J, I), out=o, w=2.0),           # other axes
              described(a=with_dims(a, I[-1:5], J), out=o, w=2.0),     # a given stop
              described(a=with_dims(a, I[-1:], J), out=np.zeros((3, 7)), w=2.0),   # sizes
              described(a=with_dims(a, I[-1:], J), out=o, w=2),        # an int
              described(a=with_dims(a, I[-1:], J), out=o, w=np.float32(2.0)),
              described(a=with_dims(a.astype(np.float32), I[-1:], J), out=o, w=2.0)]
    assert len({base, *others}) == len(others) + 1
    assert by_source.describe({"a": a}, False, ("w",)) != by_source.describe({"a": a}, False)
    assert described(a=with_dims([1.0, 2.0], I), out=o, w=2.0) is None


I2, J2 = dims("I2 J2")


def _halo2(a, out):
    out[...] = a(I2 - 1) + 2.0 * a(I2 + 1)


def test_a_rank_generic_program_translated_here_is_served_by_the_source(tmp_path, monkeypatch):
    """Calls of a rank-generic program after one translated in this process skip
    the argument analysis (the translated path's cost), described like the
    first: by wrappers, dtypes and shapes; another shape is analysed once."""
    from tensorir_dace.frontend import analysis, program

    analysed = []
    original = analysis.Specializer.analyse

    def counting(self, *args, **kwargs):
        analysed.append(1)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(analysis.Specializer, "analyse", counting)
    halo2 = program(cache_dir=str(tmp_path))(_halo2)

    def run(n: int) -> None:
        a = np.random.default_rng(n).random((n + 2, 5))
        out = np.zeros((n, 5))
        halo2(with_dims(a, I2[-1:], J2), with_dims(out, I2, J2))
        np.testing.assert_allclose(out, a[:-2] + 2.0 * a[2:], rtol=1e-14)

    run(6)
    assert len(analysed) == 1 and halo2.cache_info().specializations == 1
    hits = halo2.cache_info().hits
    for _ in range(3):                      # new arrays and wrappers, the same description
        run(6)
    assert len(analysed) == 1 and halo2.cache_info().hits == hits + 3
    run(9)                                  # another shape: analysed, nothing translated
    run(9)
    assert len(analysed) == 2 and halo2.cache_info().specializations == 1



NAMEDTUPLE_MODULE = """
from typing import NamedTuple

from tensorir_dace.frontend import dims, float64, int32, scan_operator

I, K = dims("I K")


class Carry(NamedTuple):
    count: {count}
    total: float64


@scan_operator(axis=K, forward=True, init=Carry(count=0, total=0.0))
def count_levels(state, x):
    return state[0] + 1, state[1] + x


def use(x):
    return count_levels(x)
"""


def test_the_source_key_tells_namedtuple_inits_apart_by_their_declared_types(tmp_path,
                                                                             monkeypatch):
    """A scan's NamedTuple init gives the state its class's types: the same
    source whose class declares another type for a field is another key."""
    import importlib
    import sys

    monkeypatch.syspath_prepend(str(tmp_path))
    prints = []
    for count in ("int32", "float64"):
        (tmp_path / "carry_module.py").write_text(NAMEDTUPLE_MODULE.format(count=count))
        sys.modules.pop("carry_module", None)
        importlib.invalidate_caches()
        module = importlib.import_module("carry_module")
        prints.append(by_source.function_fingerprint(module.use))
    sys.modules.pop("carry_module", None)
    assert None not in prints and prints[0] != prints[1]
