"""Compiled code against the interpreter, for every builtin and statement kind,
in both lowering modes (one map per operation, and fused)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import (
    NEIGHBOUR_COLUMN_SCANS,
    check_against_interpreter,
    compiled,
    example,
    parsed,
)
from tensorir_dace.testing import random_arguments

F = "tensor<float, I[0:6], J[0:5]>"
B = "tensor<bool, I[0:6], J[0:5]>"

MATH = ["neg", "abs", "sqrt", "exp", "log", "log10", "log2", "sin", "cos", "tan", "arcsin",
        "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor",
        "ceil", "trunc"]
BINARY = ["plus", "minus", "multiplies", "divides", "mod", "power", "minimum", "maximum",
          "arctan2"]
COMPARE = ["eq", "neq", "less", "less_equal", "greater", "greater_equal"]


def elementwise_program(dtype: str) -> str:
    t = f"tensor<{dtype}, I[0:6], J[0:5]>"
    outs, stmts = [], []
    floaty = dtype.startswith("float")
    names = BINARY if floaty else [n for n in BINARY if n != "arctan2"]
    for n in names:
        outs.append(f"o_{n}: {t}")
        stmts.append(f"o_{n} ← {n}(a, b);")
    if floaty:
        for n in MATH:
            outs.append(f"o_{n}: {t}")
            stmts.append(f"o_{n} ← {n}(a - 0.7);")
        for n in ("isnan", "isinf", "isfinite"):
            outs.append(f"o_{n}: {B}")
            stmts.append(f"o_{n} ← {n}(log(a - 0.7));")
    else:
        for n in ("neg", "abs"):
            outs.append(f"o_{n}: {t}")
            stmts.append(f"o_{n} ← {n}(a);")
    for n in COMPARE:
        outs.append(f"o_{n}: {B}")
        stmts.append(f"o_{n} ← {n}(a, b);")
    outs += [f"o_logic: {B}", f"o_if: {t}", "o_cast: tensor<int32, I[0:6], J[0:5]>",
             f"o_castb: {B}", f"o_lit: {t}"]
    stmts += ["o_logic ← (a < b ∧ ¬(a == b)) ∨ p;",
              "o_if ← if(a < b, a, b × 2);",
              "o_cast ← cast(a × 3, int32);",
              "o_castb ← cast(a, bool);",
              "o_lit ← 2 × a + 1 - b / (a + 3);" if floaty else "o_lit ← 2 × a + 1 - b;"]
    return (f"ew_{dtype}(a: {t}, b: {t}, p: {B}, " + ", ".join(outs) + ") {\n  "
            + "\n  ".join(stmts) + "\n}")


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_elementwise_builtins(dtype, optimize):
    src = elementwise_program(dtype)
    prog = parsed(src)
    args = random_arguments(prog, seed=1)
    if not dtype.startswith("float"):     # negative operands: C division and modulo
        rng = np.random.default_rng(2)
        args["a"] = rng.integers(-9, 10, args["a"].shape).astype(dtype)
        args["b"] = rng.integers(-4, 5, args["b"].shape).astype(dtype)
    check_against_interpreter(src, optimize, args=args, rtol=1e-13)


SHIFTS = """
shifts(out: tensor<float, J[0:N], I[0:M]>, x: tensor<float, I[-2:M+1], J[-1:N+1]>,
       y: tensor<float, J[0:N]>, z: tensor<float, I[0:M]>, u: tensor<float, I[0:M]>,
       w: tensor<float, I[0:M+1]>) {
  out ← ⟪I, -2⟫(x) + ⟪J, 1⟫(x) × ⟪i, 1, j, -1⟫(x) + y - z;
  u ← ⟪I, 1⟫(w) - z;
  subset(w, I[1:M+1]) ← ⟪I, -1⟫(w);
}
"""


@pytest.mark.parametrize("size", [(3, 4), (7, 2), (12, 9)])
def test_shifts_broadcasting_symbolic_sizes_one_binary(size, optimize):
    m, n = size
    check_against_interpreter(SHIFTS, optimize, sizes={"M": m, "N": n}, seed=m)


def test_one_binary_serves_every_size():
    c = compiled(SHIFTS, "default")
    assert {"M", "N"} <= set(c.sdfg.symbols)
    def binary():       # the ctypes-loaded library, or DaCe's handle
        return getattr(c._callable, "library", None) or c._callable.compiled
    before = binary()
    for m, n in [(3, 4), (9, 9)]:
        args = random_arguments(parsed(SHIFTS), sizes={"M": m, "N": n})
        c(**args)
    assert binary() is before


MESH = ("out: tensor<float, Vertex[0:V]>, e: tensor<float, Edge[0:E]>, "
        "v: tensor<float, Vertex[0:V]>, "
        "E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>, "
        "V2E: tensor<int, Vertex[0:V], _NB_Edge[0:4]>")

UNSTRUCTURED = f"""
mesh({MESH}, full: tensor<float, Edge[0:E]>, partial: tensor<float, Vertex[0:V], _NB_0[0:4]>,
     picked: tensor<float, Vertex[0:V]>, ok1: tensor<bool, Edge[0:E]>,
     ok2: tensor<bool, Vertex[0:V], _NB_0[0:4]>, ok3: tensor<bool, Vertex[0:V]>,
     nested: tensor<float, Vertex[0:V]>, kept: tensor<float, Vertex[0:V]>,
     mx: tensor<float, Vertex[0:V]>, cnt: tensor<int, Vertex[0:V]>,
     safe: tensor<float, Edge[0:E]>) {{
  tmp: tensor<float, Vertex[0:V], _NB_0[0:4]>;
  full ← ⟪E2V, 0⟫(v) + ⟪E2V, 1⟫(v);
  partial ← ⟪V2E⟫(e × 2.0);
  picked ← shift_apply(2)(⟪V2E⟫(e));
  ok1 ← can_deref(⟪E2V, 1⟫(v));
  ok2 ← can_deref(⟪V2E⟫(e));
  ok3 ← can_deref(shift_apply(1)(⟪V2E⟫(e)));
  out ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>) → acc + a,
               0.0)(⟪V2E⟫(e));
  nested ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>) → acc + a,
                  0.0)(⟪V2E⟫(reduce(λ(acc: tensor<float, Edge[0:E]>, b: tensor<float, Edge[0:E]>)
                                   → acc + b × b, 1.0)(⟪E2V⟫(v))));
  tmp ← ⟪V2E⟫(e);
  kept ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>) → acc + a,
                0.0)(tmp);
  mx ← reduce(λ(acc: tensor<float, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>,
                s: tensor<float, Vertex[0:V]>) → maximum(acc, a × s), -1000.0)(⟪V2E⟫(e), partial);
  cnt ← reduce(λ(acc: tensor<int, Vertex[0:V]>, a: tensor<float, Vertex[0:V]>) → acc + 1,
               0)(⟪V2E⟫(e));
  safe ← if(can_deref(⟪E2V, 0⟫(v)), ⟪E2V, 0⟫(v), 0.0);
}}
"""


def test_unstructured_shifts_reductions_and_skip_values(optimize):
    args = random_arguments(parsed(UNSTRUCTURED), sizes={"V": 9, "E": 13}, seed=3,
                            absent_fraction=0.3)
    out, ref = check_against_interpreter(UNSTRUCTURED, optimize, args=args)
    assert np.isnan(ref["full"]).any()            # some neighbours are absent
    assert (ref["cnt"] < 4).any()                 # and reduce skips them


SCANS = """
scans(x: tensor<float, I[0:N], K[0:L]>, y: tensor<float, K[0:L]>,
      fwd: tensor<(float, float), I[0:N], K[0:L]>, bwd: tensor<float, I[0:N], K[0:L]>,
      part: tensor<float, I[0:N], K[1:L]>) {
  fwd ← scan(λ(s: tensor<(float, float), I[0:N]>, a: tensor<float, I[0:N]>,
               b: tensor<float>) → make_tuple(s[0] + a, s[1] × 0.5 + s[0] × b), True,
             make_tuple(0.0, 1.0))(x, y);
  bwd ← scan(λ(s: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>) → s × 0.9 + a,
             False, 0.0)(x);
  part ← scan(λ(s: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>) → s + ⟪K, -1⟫(a),
              True, 0.0, K)(subset(x, K[1:L]) + 0.0);
}
"""


def test_scans_forward_backward_tuple_state(optimize):
    check_against_interpreter(SCANS, optimize, sizes={"N": 5, "L": 7}, seed=4)


MISC = """
misc(x: tensor<float, I[0:N]>, y: tensor<float, I[0:N]>, flag: tensor<bool>,
     steps: tensor<int>, alpha: tensor<float>, s: tensor<float, I[0:N]>,
     c: tensor<float, I[0:N]>, ps: tensor<int, I[0:N]>, ad: tensor<float, K[0:3], I[0:N]>,
     loop: tensor<float, I[0:N]>, tup: tensor<(float, int), I[0:N]>) {
  subset(s, I[1:N-1]) ← ⟪I, 1⟫(x) + ⟪I, -1⟫(x);
  c ← concat(subset(x, I[0:1]) × 10.0, subset(⟪I, -1⟫(x), I[1:N-1]), subset(y, I[N-1:N]));
  ps ← pos(I, x) × 2;
  ad ← add_dim(K, 0, 3, x × alpha);
  if (flag ∧ alpha > 1.0) { y ← x × alpha; } else { y ← x - alpha; }
  loop ← x;
  for (t in 0:steps) { loop ← ⟪I, 0⟫(loop) × 0.5 + cast(t, float); }
  tup ← make_tuple(x + y, ps);
}
"""

def test_subset_concat_pos_add_dim_control_flow(optimize):
    prog = parsed(MISC)
    for flag in (True, False):
        args = random_arguments(prog, sizes={"N": 7}, seed=5)
        args["flag"] = flag
        args["alpha"] = np.float64(1.5)
        args["steps"] = 3
        check_against_interpreter(MISC, optimize, args=args)


SELF_READ = """
selfread(u: tensor<float, I[0:N]>, v: tensor<float, I[-1:N+1]>) {
  subset(u, I[0:N-1]) ← ⟪I, 1⟫(u) + u;
  v ← ⟪I, 0⟫(v) × 2.0;
}
"""


def test_statement_reading_its_own_target(optimize):
    check_against_interpreter(SELF_READ, optimize, sizes={"N": 9})


@pytest.mark.parametrize("name", ["laplacian", "tridiagonal", "nabla", "fencil_cos",
                                  "fencil_cos_tmp"])
def test_design_document_programs(name, optimize):
    src = example(name)
    check_against_interpreter(src, optimize, seed=7, rtol=1e-10)


# ------------------------------------------------------------------------- SDFG structure


def _maps(sdfg):
    import dace
    return [n for s in sdfg.states() for n in s.nodes() if isinstance(n, dace.nodes.MapEntry)]


def _transients(sdfg):
    return [k for k, d in sdfg.arrays.items() if d.transient]


def test_one_state_per_statement():
    prog = parsed(example("fencil_cos_tmp"))
    sdfg = tir.to_sdfg(prog)
    assert len(list(sdfg.states())) == len(prog.body) == 2
    sdfg = tir.to_sdfg(parsed(MISC))
    import dace
    blocks = list(sdfg.nodes())
    assert any(isinstance(b, dace.sdfg.state.ConditionalBlock) for b in blocks)
    assert any(isinstance(b, dace.sdfg.state.LoopRegion) for b in blocks)


def test_library_nodes_before_expansion():
    from tensorir_dace.library import ColumnScan, NeighborReduce
    sdfg = tir.to_sdfg(parsed(example("tridiagonal")))
    scans = [n for s in sdfg.states() for n in s.nodes() if isinstance(n, ColumnScan)]
    assert len(scans) == 2 and {s.forward for s in scans} == {True, False}
    assert "make_tuple" in scans[0].lambda_text + scans[1].lambda_text
    sdfg = tir.to_sdfg(parsed(example("nabla")))
    reds = [n for s in sdfg.states() for n in s.nodes() if isinstance(n, NeighborReduce)]
    assert len(reds) == 2 and all(r.mask_table == "V2E" for r in reds)
    assert all("acc" in r.lambda_text for r in reds)
    sdfg.expand_library_nodes()
    sdfg.validate()


def test_symbols_for_symbolic_sizes():
    sdfg = tir.to_sdfg(parsed(SHIFTS))
    assert {"M", "N"} <= set(sdfg.symbols)
    assert str(sdfg.arrays["x"].shape[0]) == "M + 3"


def test_shifts_are_memlet_offsets_not_copies(monkeypatch):
    # (streaming stores would read the rows through pointers at the same offsets)
    monkeypatch.setenv("TENSORIR_DACE_STREAMING_STORES", "0")
    sdfg = tir.to_sdfg(parsed(example("laplacian")), optimize="default")
    (state,) = sdfg.states()
    subsets = {str(e.data.subset) for e in state.edges() if e.data.data == "inp"
               and e.dst_conn}
    assert {"_i_IDim - 1, _i_JDim, _i_KDim", "_i_IDim + 1, _i_JDim, _i_KDim",
            "_i_IDim, _i_JDim - 1, _i_KDim"} <= subsets
    assert not _transients(sdfg)


def test_eager_if_is_one_tasklet():
    src = "sel(a: tensor<float, I[0:4]>, b: tensor<float, I[0:4]>, o: tensor<float, I[0:4]>) " \
          "{ o ← if(less(a, b), a × 2.0, b); }"
    import dace
    sdfg = tir.to_sdfg(parsed(src))
    tasklets = [n for s in sdfg.states() for n in s.nodes() if isinstance(n, dace.nodes.Tasklet)]
    assert len(tasklets) == 2            # the select (with the comparison) and a × 2.0
    select = next(t for t in tasklets if "?" in t.code.as_string)
    assert "<" in select.code.as_string


def test_laplacian_default_is_one_map_without_transients():
    sdfg = tir.to_sdfg(parsed(example("laplacian")), optimize="default")
    assert len(_maps(sdfg)) == 1 and not _transients(sdfg)
    raw = tir.to_sdfg(parsed(example("laplacian")))
    assert len(_maps(raw)) > 1 and _transients(raw)   # one map per operation before


def _chained_choices(depth: int) -> str:
    """``a = concat(a × 2 on I[0:3], a + 1 after)`` ``depth`` times, each choice a
    lambda's argument reading the value before it in both pieces."""
    t = "tensor<float, I[0:N]>"
    value = "x"
    for d in range(depth):
        value = (f"(λ(a{d}: {t}) → concat(subset(a{d} × 2.0, I[0:3]), "
                 f"subset(a{d} + 1.0, I[3:N])))({value})")
    return f"chain(x: {t}, o: {t}) {{\n  o ← {value};\n}}"


def test_chained_choices_reading_the_one_before_are_computed_once():
    # Each value is read in both pieces of the next choice: evaluated where it is
    # read, its code would be repeated in each branch, 2 ** depth times in all.
    import dace
    src = _chained_choices(14)
    sdfg = tir.to_sdfg(parsed(src), optimize="default")
    code = sum(len(n.code.as_string) for s in sdfg.states() for n in s.nodes()
               if isinstance(n, dace.nodes.Tasklet))
    assert code < 30_000, code
    check_against_interpreter(src, "default", sizes={"N": 7})


def test_sdfg_names_are_mangled():
    src = ("k(new: tensor<float, I[0:3]>, int: tensor<float, I[0:3]>, _x: tensor<float, I[0:3]>) "
           "{ new ← int + _x; }")
    check_against_interpreter(src, "default")
    sdfg = tir.to_sdfg(parsed(src))
    assert "new" not in sdfg.arrays and "int" not in sdfg.arrays and "_x" not in sdfg.arrays


# ------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("mutate,fragment", [
    (lambda a: a.pop("inp"), "missing"),
    (lambda a: a.update(inpt=a["inp"]), "inpt"),
    (lambda a: a.update(inp=a["inp"].astype(np.float32)), "float32"),
    (lambda a: a.update(inp=np.asfortranarray(a["inp"]).astype(np.float32)), "float32"),
    (lambda a: a.update(inp=a["inp"][:, :, ::2]), "inp"),
    (lambda a: a.update(inp=a["inp"][1:]), "inp"),
    (lambda a: a.update(inp=a["inp"][..., 0]), "inp"),
])
def test_bad_arguments_raise_before_anything_is_written(mutate, fragment):
    prog = compiled(example("laplacian"))
    args = random_arguments(parsed(example("laplacian")))
    args["out"][...] = 42.0
    mutate(args)
    with pytest.raises(tir.ArgumentError, match=fragment):
        prog(**args)
    assert (args["out"] == 42.0).all()


def test_size_symbol_only_in_an_input_shape():
    src = """
gather(out: tensor<float, Edge[0:E]>, pp: tensor<float, Vertex[0:V]>,
       E2V: tensor<int, Edge[0:E], _NB_Vertex[0:2]>) {
  out ← ⟪E2V, 0⟫(pp) + ⟪E2V, 1⟫(pp)
}"""
    check_against_interpreter(src, "default", sizes={"E": 7, "V": 5})


def test_persistent_scratch_follows_the_sizes_of_each_call():
    """A scan whose result the next scan reads in neighbouring columns keeps it in
    a scratch array between calls; calls with other sizes (smaller, larger,
    smaller again) must re-size it."""
    prog = compiled(NEIGHBOUR_COLUMN_SCANS)
    assert any(d.transient and d.lifetime.name == "Persistent" for d in prog.sdfg.arrays.values())
    for n in (3, 17, 4, 17):
        args = random_arguments(parsed(NEIGHBOUR_COLUMN_SCANS),
                                sizes={"N": n, "M": 5, "L": n + 2}, seed=n)
        check_against_interpreter(NEIGHBOUR_COLUMN_SCANS, "default", args=args)


def test_sizes_too_small_for_a_subset_are_refused():
    src = """
inner(out: tensor<float, I[0:N]>, x: tensor<float, I[0:N]>) {
  subset(out, I[1:N-1]) ← subset(x, I[1:N-1]) × 2.0
}"""
    prog = compiled(src)
    ok = random_arguments(parsed(src), sizes={"N": 4})
    prog(**ok)
    small = {"out": np.full(0, 7.0), "x": np.zeros(0)}
    with pytest.raises(tir.ArgumentError, match=r"too small for the subset I\[1:N - 1\]"):
        prog(**small)
    with pytest.raises(tir.ArgumentError, match="too small"):
        tir.interpret(parsed(src), **small)


def test_negated_negative_literals_and_weak_math_literals():
    src = """
lits(i: tensor<int, I[0:4]>, f: tensor<float32, I[0:4]>, oi: tensor<int, I[0:4]>,
     of: tensor<float32, I[0:4]>) {
  oi ← -(-3) + abs(-3) - i;
  of ← sin(0.25) × f + maximum(sqrt(2.0), f);
}"""
    check_against_interpreter(src, "default")
    assert tir.check(parsed(src)).body[1].value.args[0].args[0].type.dtype.name == "float32"


def test_positional_arguments_follow_the_parameter_order():
    prog = compiled(example("laplacian"))
    args = random_arguments(parsed(example("laplacian")))
    ref = {k: v.copy() for k, v in args.items()}
    tir.interpret(parsed(example("laplacian")), **ref)
    prog(args["out"], args["inp"])
    again = {k: v.copy() for k, v in args.items()}
    tir.interpret(parsed(example("laplacian")), again["out"], inp=again["inp"])
    np.testing.assert_allclose(again["out"], ref["out"])
    np.testing.assert_allclose(args["out"], ref["out"])
    with pytest.raises(tir.ArgumentError, match="takes 2 arguments"):
        prog(args["out"], args["inp"], args["inp"])
    with pytest.raises(tir.ArgumentError, match="two values for parameter 'out'"):
        prog(args["out"], out=args["out"])
