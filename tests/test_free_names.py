"""Python names are free: parameters named like Tensor IR builtins, dimensions,
size symbols or generated names work, as in GT4Py.

Such a parameter has another name in the IR (``index`` → ``index_``), chosen so
that it meets no other name; callers (positional, by keyword, ``out=`` /
``domain=``, ``prog.compile()``, a new process served by the source) and
messages keep the Python names.  The printed IR parses back to the same
program.  Interpreter and compiled code are compared with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from tensorir_dace import ArgumentError
from tensorir_dace.frontend import (
    Dimension,
    Field,
    FieldOffset,
    dims,
    field_operator,
    float64,
    int32,
    program,
    scan_operator,
    with_dims,
)
from tensorir_dace.frontend.names import ir_names, python_message
from test_startup import run_fresh

Cell, K = dims("Cell K")
CellDim, KDim = Dimension("Cell"), Dimension("K")     # GT4Py's spelling: XDim = Dimension("X")
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
F = Field[[Cell, K], float64]
BACKENDS = ["interpreter", "compiled"]
RNG = np.random.default_rng(5)
NC, NK = 5, 6


@field_operator
def shift(pos: F, index: F) -> F:          # a field operator named like a builtin
    neg = -index                            # locals too
    concat = (lambda deref: deref + pos)(neg)
    return concat


@scan_operator(axis=K, forward=True, init=0.0)
def scan(state: float, index: float, reduce: float) -> float:
    plus = state + index * reduce
    return plus


@program
def builtins_named(pos: F, neg: F, index: F, subset: F, concat: F, lift: F, deref: F,
                   reduce: F, cast: F, abs: F, min: F, max: F, where: F, sqrt: F,
                   tuple_get: F, make_tuple: F, power: F, plus: F, minus: F,
                   tuple: F, out: F, scanned: F, n: int32, self: float, program: F):
    tmp = pos + neg * index - subset + concat * lift + deref * reduce
    tmp = tmp + cast + abs * min - max + where + sqrt * tuple_get + make_tuple
    tmp = tmp + power + plus - minus * tuple + self * program
    for minus_ in range(n):
        tmp = tmp + 1.0
    out[...] = shift(tmp, index)
    scanned[...] = scan(index, reduce)


NAMES = ["pos", "neg", "index", "subset", "concat", "lift", "deref", "reduce", "cast", "abs",
         "min", "max", "where", "sqrt", "tuple_get", "make_tuple", "power", "plus", "minus",
         "tuple"]


def builtins_numpy(v: dict, n: int, s: float) -> tuple[np.ndarray, np.ndarray]:
    tmp = v["pos"] + v["neg"] * v["index"] - v["subset"] + v["concat"] * v["lift"] \
        + v["deref"] * v["reduce"]
    tmp = tmp + v["cast"] + v["abs"] * v["min"] - v["max"] + v["where"] \
        + v["sqrt"] * v["tuple_get"] + v["make_tuple"]
    tmp = tmp + v["power"] + v["plus"] - v["minus"] * v["tuple"] + s * v["program"] + n
    return tmp - v["index"], np.cumsum(v["index"] * v["reduce"], axis=1)


def builtin_arguments() -> dict:
    v = {n: RNG.random((NC, NK)) for n in NAMES + ["program"]}
    v.update(out=np.zeros((NC, NK)), scanned=np.zeros((NC, NK)), n=np.int32(3), self=0.5)
    return v


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_named_like_builtins(backend):
    v = builtin_arguments()
    builtins_named(**v, backend=backend)                        # by keyword, every name
    want, scanned = builtins_numpy(v, 3, 0.5)
    np.testing.assert_allclose(v["out"], want, rtol=1e-12)
    np.testing.assert_allclose(v["scanned"], scanned, rtol=1e-12)
    w = builtin_arguments()
    order = NAMES + ["out", "scanned", "n", "self", "program"]
    builtins_named(*[w[k] for k in order], backend=backend)    # positionally
    np.testing.assert_allclose(w["out"], builtins_numpy(w, 3, 0.5)[0], rtol=1e-12)


def test_the_ir_renames_them_and_prints_back():
    prog = builtins_named.ir
    names = [p.name for p in prog.params]
    assert names[:4] == ["pos_", "neg_", "index_", "subset_"]
    assert {"self_", "program", "out", "n", "where", "min", "max"} <= set(names)
    assert tir.parse(tir.format(prog)) == prog
    tir.check(tir.parse(tir.format(prog)))


def test_compile_takes_the_python_names():
    fn = builtins_named.compile()
    assert fn.param_names[:3] == ("pos", "neg", "index")
    v = builtin_arguments()
    fn(**v)
    np.testing.assert_allclose(v["out"], builtins_numpy(v, 3, 0.5)[0], rtol=1e-12)
    v["index"] = v["index"][:2]
    with pytest.raises(ArgumentError, match=r"parameter 'index' has 2 elements") as info:
        fn(**v)
    assert "index_" not in str(info.value)


def test_messages_name_the_python_parameter():
    v = builtin_arguments()
    v["reduce"] = np.zeros(NC)
    for backend in BACKENDS:
        with pytest.raises(ArgumentError, match=r"'reduce'") as info:
            builtins_named(**v, backend=backend)
        assert "reduce_" not in str(info.value)
        assert "test_free_names.py:" in str(info.value.loc)


def test_translation_errors_name_the_python_parameter():
    @program
    def wrong(a: F, index: Field[[Cell, K], int32]):
        index[...] = a

    with pytest.raises(tir.TypeCheckError,
                       match=r"cannot assign a float64 expression to 'index' of element "
                             r"type int32") as info:
        wrong(np.zeros((2, 3)), np.zeros((2, 3), dtype=np.int32), backend="interpreter")
    assert "index_" not in str(info.value)


# --------------------------------------------------------------- dimensions, sizes


@program
def dimension_named(Cell: Field[[CellDim, KDim], float64], K: Field[[CellDim, KDim], float64],
                    N_K: float64, N_K_: float64, K_: Field[[CellDim, KDim], float64],
                    o: Field[[CellDim, KDim], float64]):
    o[:, 1:] = Cell + K(Koff[-1]) * N_K + K_ * N_K_


@pytest.mark.parametrize("backend", BACKENDS)
def test_names_of_dimensions_and_size_symbols(backend):
    a, b, c = (RNG.random((NC, NK)) for _ in range(3))
    o = np.zeros((NC, NK))
    dimension_named(Cell=a, K=b, N_K=2.0, N_K_=3.0, K_=c, o=o, backend=backend)
    np.testing.assert_allclose(o[:, 1:], a[:, 1:] + 2.0 * b[:, :-1] + 3.0 * c[:, 1:],
                               rtol=1e-12)
    assert not o[:, 0].any()
    prog = dimension_named.ir
    assert len({p.name for p in prog.params}) == 6
    sizes = {s.name for p in prog.params for d in p.type.dims for s in d.stop.free_symbols}
    assert not sizes & {p.name for p in prog.params}
    assert tir.parse(tir.format(prog)) == prog


def test_the_choice_is_deterministic_and_collision_free():
    t = tir.parse("p(x: tensor<float, K[0:N_K]>) { }").params[0].type
    names = ["index", "index_", "K", "K_", "N_K", "pos", "__scan", "self", "x"]
    got = ir_names(names, [t] * len(names), avoid={"pos_"})
    assert got == {"index": "index__", "K": "K__", "N_K": "N_K_", "pos": "pos__",
                   "__scan": "__scan_", "self": "self_"}
    assert got == ir_names(names, [t] * len(names), avoid={"pos_"})
    final = [got.get(n, n) for n in names]
    assert len(set(final)) == len(final)
    assert python_message("'index__' and index__[0] but not index___", got) == \
        "'index' and index[0] but not index___"


# ------------------------------------------------------------------ direct calls


@field_operator
def direct(index: F, pos, shift: float, min: int32, out_: F):
    return index * shift + pos + out_ + float(min)


@field_operator
def along(K):                                # a rank-generic parameter named like its dimension
    return K + K(Koff[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_with_out_and_domain(backend):
    a, b, c = (RNG.random((NC, NK)) for _ in range(3))
    want = 2.0 * a + b + c + 3.0
    got = direct(a, with_dims(b, Cell, K), 2.0, np.int32(3), c, backend=backend)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    o = np.zeros((NC, NK))
    direct(index=a, pos=with_dims(b, Cell, K), shift=2.0, min=np.int32(3), out_=c, out=o,
           domain={K: (1, 4)}, backend=backend)
    np.testing.assert_allclose(o[:, 1:4], want[:, 1:4], rtol=1e-12)
    assert not o[:, [0, 4, 5]].any()
    s = scan(index=with_dims(a, Cell, K), reduce=with_dims(b, Cell, K), backend=backend)
    np.testing.assert_allclose(s, np.cumsum(a * b, axis=1), rtol=1e-12)
    r = along(with_dims(a, Cell, K), backend=backend)
    np.testing.assert_allclose(r, a[:, :-1] + a[:, 1:], rtol=1e-12)


# ------------------------------------------------------------------ by the source

MODULE = '''
from tensorir_dace.frontend import Field, dims, field_operator, float64, program

Cell, K = dims("Cell K")


@program
def named(index: Field[[Cell, K], float64], pos: Field[[Cell, K], float64],
          shift: float64, out: Field[[Cell, K], float64]):
    out[...] = index * shift + pos


@field_operator
def scaled(scan: Field[[Cell, K], float64], min: float64):
    return scan * min
'''

CALLS = '''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import free_names as m
    from tensorir_dace.runtime.cachedir import compile_count
    a = np.arange(12.0).reshape(3, 4)
    out = np.zeros((3, 4))
    m.named(index=a, pos=a * a, shift=float(sys.argv[2]), out=out)
    o2 = np.zeros((3, 4))
    m.scaled(scan=a, min=float(sys.argv[2]), out=o2, domain={m.K: (1, 3)})
    o3 = m.scaled(a, 2.0)
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sympy", "dace"})
    print(json.dumps({"out": out.tolist(), "o2": o2.tolist(), "o3": o3.tolist(),
                      "heavy": heavy, "compiled": compile_count()}))
'''


def test_a_new_process_finds_them_by_the_source(tmp_path):
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    (src / "free_names.py").write_text(MODULE)
    a = np.arange(12.0).reshape(3, 4)
    first = run_fresh(CALLS, cache, src, "2.0")
    assert "sympy" in first["heavy"] and first["compiled"] > 0
    again = run_fresh(CALLS, cache, src, "3.0")
    assert again["heavy"] == [] and again["compiled"] == 0
    for got, w in ((first, 2.0), (again, 3.0)):
        np.testing.assert_allclose(got["out"], a * w + a * a)
        o2 = np.zeros((3, 4))
        o2[:, 1:3] = a[:, 1:3] * w
        np.testing.assert_allclose(got["o2"], o2)
        np.testing.assert_allclose(got["o3"], a * 2.0)



# ------------------------------------------------------- runtime bounds named like C++ words

WORDS = """
words(a: tensor<float, I[0:N], K[0:M]>, o: tensor<float, I[0:N], K[0:M]>,
      c: tensor<float, I[0:N], K[0:M]>, k: tensor<int>, input: tensor<int>) {
    subset(o, K[k:input]) ← scan(λ(s: tensor<float, I[0:N]>, x: tensor<float, I[0:N]>) → s + x,
                                 True, 0.0, K)(subset(a, K[k:input]));
    c ← concat(subset(a, K[0:k]), subset(2.0 × a, K[k:input]), subset(3.0 × a, K[input:M]))
}
"""


def test_scans_and_concats_bounded_by_parameters_named_like_cpp_words():
    """``k`` and ``input`` are renamed in the SDFG (C++ and DaCe words): the point
    code of scans and concats bounded by them uses the SDFG names."""
    prog = tir.parse(WORDS)
    a = RNG.random((3, 7))
    want_o = np.zeros((3, 7))
    want_o[:, 2:5] = np.cumsum(a[:, 2:5], axis=1)
    want_c = np.concatenate([a[:, :2], 2 * a[:, 2:5], 3 * a[:, 5:]], axis=1)
    for run in (lambda **kw: tir.interpret(prog, **kw), tir.compile(prog)):
        o, c = np.zeros((3, 7)), np.zeros((3, 7))
        run(a=a, o=o, c=c, k=2, input=5)
        np.testing.assert_allclose(o, want_o, rtol=1e-12)
        np.testing.assert_allclose(c, want_c, rtol=1e-12)


@program
def cpp_named(M_PI: F, EOF: F, DBL_MAX: F, INT_MAX: F, double: F, new: F, state: F, i: F,
              errno: F, stdin: F, o: F):
    o[...] = M_PI + EOF * DBL_MAX - INT_MAX + double * new + state - i + errno * stdin


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_named_like_cpp_words_and_macros(backend):
    names = ["M_PI", "EOF", "DBL_MAX", "INT_MAX", "double", "new", "state", "i", "errno",
             "stdin"]
    v = {n: RNG.random((NC, NK)) for n in names}
    o = np.zeros((NC, NK))
    cpp_named(**v, o=o, backend=backend)
    want = v["M_PI"] + v["EOF"] * v["DBL_MAX"] - v["INT_MAX"] + v["double"] * v["new"] \
        + v["state"] - v["i"] + v["errno"] * v["stdin"]
    np.testing.assert_allclose(o, want, rtol=1e-12)
