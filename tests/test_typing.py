"""Type inference and checking: the rules of DESIGN.md §2, good and bad programs."""

from __future__ import annotations

import pytest
import sympy

import tensorir_dace as tir
from tensorir_dace import ir

F1 = "tensor<float, I[0:10]>"


def typed_value(src: str, stmt: int = 0) -> ir.Expr:
    prog = tir.check(tir.parse(src))
    return prog.body[stmt].value


def expr_type(params: str, expr: str, target: str = "out: tensor<float, I[0:10]>") -> ir.TensorType:
    """The type of ``expr`` (checked as the value of a statement ``out ← expr``)."""
    src = f"p({target}, {params}) {{ out ← {expr}; }}"
    return typed_value(src).type


def T(text: str) -> ir.TensorType:
    return tir.parse_type(text)


# ------------------------------------------------------------------------------- good


def test_broadcast_union_of_dims_and_intersection_of_intervals():
    t = expr_type("a: tensor<int, x[-3:5]>, b: tensor<int, x[1:9], y[5:8]>", "a × b",
                  "out: tensor<int, x[1:5], y[5:8]>")
    assert t == T("tensor<int, x[1:5], y[5:8]>")


def test_broadcast_dimension_order_is_first_appearance():
    t = expr_type("a: tensor<float, J[0:4]>, b: tensor<float, I[0:3], J[0:4]>", "a + b",
                  "out: tensor<float, I[0:3], J[0:4]>")
    assert t.dim_names == ("J", "I")


def test_cartesian_shift_moves_interval_against_offset():
    # ⟪I, 1⟫(x)[i] = x[i + 1]: the interval moves to [start - 1, stop - 1)
    t = expr_type(f"x: {F1}", "⟪I, 1⟫(x)", "out: tensor<float, I[0:9]>")
    assert t == T("tensor<float, I[-1:9]>")


def test_offset_tags_resolve_by_prefix_and_compose():
    src = ("p(out: tensor<float, IDim[0:5]>, x: tensor<float, IDim[-1:6]>) "
           "{ out ← ⟪iₒ, -1ₒ, iₒ, 1ₒ⟫(x); }")
    v = typed_value(src)
    assert v.type == T("tensor<float, IDim[-1:6]>")
    assert v.func.func.name == "cartesian_shift" and v.func.args[0].name == "IDim"
    assert v.func.args[1].value == 0


def test_shift_along_missing_dimension_is_noop():
    t = expr_type(f"x: {F1}, y: tensor<float, J[0:3]>", "⟪J, 1⟫(x)")
    assert t == T(F1)


def test_literals_adapt_to_partner():
    assert expr_type("x: tensor<float32, I[0:10]>", "x + 1.0",
                     "out: tensor<float32, I[0:10]>").dtype == ir.FLOAT32
    assert expr_type("x: tensor<int32, I[0:10]>", "x × 2",
                     "out: tensor<int32, I[0:10]>").dtype == ir.INT32
    v = typed_value(f"p(out: {F1}, x: {F1}) {{ out ← x + 1; }}")
    assert v.args[1].type.dtype == ir.FLOAT64   # an int literal adapts to a float partner


def test_literal_alone_takes_target_type():
    v = typed_value("p(out: tensor<float32, I[0:10]>) { out ← 2.5; }")
    assert v.type == ir.TensorType(ir.FLOAT32)


def test_comparison_gives_bool_and_if_selects():
    t = expr_type(f"a: {F1}, b: {F1}", "if(a < b, a, b × 2.0)")
    assert t == T(F1)


def test_symbolic_bounds_and_size_symbols():
    src = ("p(out: tensor<float, I[0:N]>, x: tensor<float, I[-1:N+1]>) "
           "{ out ← ⟪I, 1⟫(x) + ⟪I, -1⟫(x); }")
    v = typed_value(src)
    n = ir.size_symbol("N")
    assert v.type.dim("I").start == 0 and sympy.simplify(v.type.dim("I").stop - n) == 0


def test_tuples():
    src = ("p(out: tensor<(float, int), I[0:10]>, a: tensor<float, I[0:10]>, "
           "b: tensor<int, I[0:12]>) { out ← make_tuple(a, b); }")
    assert typed_value(src).type == T("tensor<(float, int), I[0:10]>")
    t = expr_type("x: tensor<(float, (int, bool)), I[0:10]>", "x[1][1]",
                  "out: tensor<bool, I[0:10]>")
    assert t.dtype == ir.BOOL


UNSTRUCTURED = ("out: tensor<float, Vertex[0:4]>, e: tensor<float, Edge[0:6]>, "
                "v: tensor<float, Vertex[0:4]>, "
                "E2V: tensor<int, Edge[0:6], _NB_Vertex[0:2]>, "
                "V2E: tensor<int, Vertex[0:4], _NB_Edge[0:3]>")


def test_full_and_partial_unstructured_shifts():
    src = f"p({UNSTRUCTURED}) {{ out ← ⟪V2E, 1⟫(e); }}"
    assert typed_value(src).type == T("tensor<float, Vertex[0:4]>")
    src = f"p({UNSTRUCTURED}, o2: tensor<float, Vertex[0:4], _NB_0[0:3]>) {{ o2 ← ⟪V2E⟫(e); }}"
    v = typed_value(src)
    assert v.type == T("tensor<float, Vertex[0:4], _NB_0[0:3]>")
    assert v.type.dim("_NB_0").mask == ir.Sym("V2E")      # the skip-value table is remembered
    assert v.func.func.name == "shift_init"


def test_partial_shift_counter_increases_and_shift_apply_removes_highest():
    src = (f"p({UNSTRUCTURED}, s: tensor<float, Edge[0:6], _NB_0[0:2]>, "
           "o: tensor<float, Vertex[0:4], _NB_0[0:2]>) { o ← shift_apply(1)(⟪V2E⟫(s)); }")
    v = typed_value(src)
    assert v.args[0].type.dim_names == ("Vertex", "_NB_1", "_NB_0")
    assert v.type.dim_names == ("Vertex", "_NB_0")


def test_reduce_over_highest_neighbor_dim():
    src = (f"p({UNSTRUCTURED}) {{ out ← reduce(λ(acc: tensor<float, Vertex[0:4]>, "
           "x: tensor<float, Vertex[0:4]>) → acc + x, 0.0)(⟪V2E⟫(e)); }")
    v = typed_value(src)
    assert v.type == T("tensor<float, Vertex[0:4]>")
    assert v.func.args[1].type.dtype == ir.FLOAT64


def test_scan_axis_is_the_dimension_the_lambda_lacks():
    src = ("p(out: tensor<float, I[0:3], K[0:5]>, x: tensor<float, I[0:3], K[0:5]>) "
           "{ out ← scan(λ(s: tensor<float, I[0:3]>, a: tensor<float, I[0:3]>) → s + a, "
           "True, 0.0)(x); }")
    v = typed_value(src)
    assert v.func.args[3] == ir.Sym("K")
    assert v.type == T("tensor<float, I[0:3], K[0:5]>")


def test_subset_concat_pos_add_dim():
    t = expr_type(f"x: {F1}", "subset(x, I[2:5])", "out: tensor<float, I[2:5]>")
    assert t == T("tensor<float, I[2:5]>")
    t = expr_type("a: tensor<float, I[0:3]>, b: tensor<float, I[3:10]>", "concat(a, b)")
    assert t == T(F1)
    t = expr_type(f"x: {F1}", "pos(I, x)", "out: tensor<int, I[0:10]>")
    assert t == T("tensor<int, I[0:10]>")
    t = expr_type(f"x: {F1}", "add_dim(K, 0, 5, x)", "out: tensor<float, K[0:5], I[0:10]>")
    assert t.dim_names == ("K", "I")


def test_temporaries_keep_the_skip_table():
    src = (f"p({UNSTRUCTURED}) {{ tmp: tensor<float, Vertex[0:4], _NB_0[0:3]>; "
           "tmp ← ⟪V2E⟫(e); "
           "out ← reduce(λ(acc: tensor<float, Vertex[0:4]>, x: tensor<float, Vertex[0:4]>) "
           "→ acc + x, 0.0)(tmp); }")
    prog = tir.check(tir.parse(src))
    assert prog.body[1].value.args[0].type.dim("_NB_0").mask == ir.Sym("V2E")


def test_program_if_and_for():
    src = (f"p(out: {F1}, x: {F1}, flag: tensor<bool>, n: tensor<int>) {{ "
           "if (flag) { out ← x; } else { out ← x × 2.0; } "
           "for (t in 0:n) { out ← out + cast(t, float); } }")
    prog = tir.check(tir.parse(src))
    assert isinstance(prog.body[0], ir.IfStmt) and isinstance(prog.body[1], ir.ForStmt)


def test_check_keeps_equality_with_input():
    prog = tir.parse(open("sdfg_examples/laplacian.tir").read())
    assert tir.check(prog).params == prog.params


@pytest.mark.parametrize("name", ["laplacian", "tridiagonal", "nabla", "fencil_cos",
                                  "fencil_cos_tmp"])
def test_design_document_programs_check(name):
    prog = tir.check(tir.parse(open(f"sdfg_examples/{name}.tir").read()))
    for stmt in prog.body:
        assert stmt.value.type is not None


# ------------------------------------------------------------------------------- bad

BAD = [
    # (id, program text, message fragment)
    ("unknown-name", f"p(out: {F1}) {{ out ← y; }}", "unknown name 'y'"),
    ("unknown-name-suggests", f"p(out: {F1}, inp: {F1}) {{ out ← inpt; }}",
     "did you mean 'inp'"),
    ("unknown-function", f"p(out: {F1}, x: {F1}) {{ out ← sine(x); }}", "unknown function 'sine'"),
    ("unknown-function-suggests", f"p(out: {F1}, x: {F1}) {{ out ← sqr(x); }}",
     "did you mean 'sqrt'"),
    ("dtype-mismatch", f"p(out: {F1}, a: {F1}, b: tensor<float32, I[0:10]>) {{ out ← a + b; }}",
     "one element type, got float64 and float32"),
    ("int-float-mix", f"p(out: {F1}, a: {F1}, b: tensor<int, I[0:10]>) {{ out ← a + b; }}",
     "cast"),
    ("float-literal-int", "p(out: tensor<int, I[0:10]>, a: tensor<int, I[0:10]>) "
     "{ out ← a + 1.5; }", "literal 1.5 cannot be used with a int64"),
    ("bool-arith", "p(out: tensor<bool, I[0:10]>, a: tensor<bool, I[0:10]>) "
     "{ out ← a + a; }", "plus is not defined on bool"),
    ("sqrt-int", "p(out: tensor<int, I[0:10]>, a: tensor<int, I[0:10]>) { out ← sqrt(a); }",
     "sqrt needs a float operand"),
    ("and-float", f"p(out: tensor<bool, I[0:10]>, a: {F1}) {{ out ← a ∧ a; }}",
     "and needs bool operands"),
    ("empty-intersection", "p(out: tensor<float, I[0:3]>, a: tensor<float, I[0:3]>, "
     "b: tensor<float, I[5:9]>) { out ← a + b; }", "do not overlap along I"),
    ("target-not-covered", f"p(out: tensor<float, I[0:10]>, x: {F1}) {{ out ← ⟪I, 1⟫(x); }}",
     "the expression is defined on I[-1:9] but the target 'out' needs I[0:10]"),
    ("extra-dim", f"p(out: {F1}, x: tensor<float, I[0:10], J[0:3]>) {{ out ← x; }}",
     "dimension J that the target 'out'"),
    ("assign-dtype", f"p(out: {F1}, x: tensor<int, I[0:10]>) {{ out ← x; }}",
     "cannot assign a int64 expression to 'out'"),
    ("assign-unknown", f"p(out: {F1}) {{ res ← 1.0; }}", "cannot assign to unknown name 'res'"),
    ("assign-scalar", f"p(out: {F1}, a: tensor<float>) {{ a ← 1.0; }}",
     "cannot assign to scalar parameter 'a'"),
    ("if-cond-not-scalar", f"p(out: {F1}, x: {F1}) {{ if (x > 0.0) {{ out ← x; }} }}",
     "must be a scalar bool"),
    ("if-cond-not-bool", f"p(out: {F1}, n: tensor<int>) {{ if (n) {{ out ← 1.0; }} }}",
     "must be a scalar bool"),
    ("for-bound-float", f"p(out: {F1}, a: tensor<float>) {{ for (t in 0:a) {{ out ← 1.0; }} }}",
     "for-loop bound must be a scalar integer"),
    ("if-branches", f"p(out: {F1}, c: tensor<bool, I[0:10]>, a: {F1}, b: tensor<int, I[0:10]>) "
     "{ out ← if(c, a, b); }", "if needs operands of one element type"),
    ("if-cond-float", f"p(out: {F1}, a: {F1}) {{ out ← if(a, a, a); }}",
     "the condition of if must be bool"),
    ("tuple-get-range", "p(out: tensor<float, I[0:10]>, x: tensor<(float, float), I[0:10]>) "
     "{ out ← x[2]; }", "tuple index 2 out of range"),
    ("tuple-get-nontuple", f"p(out: {F1}, x: {F1}) {{ out ← x[0]; }}",
     "tuple_get needs a tuple-typed tensor"),
    ("shift-unknown-dim", f"p(out: {F1}, x: {F1}) {{ out ← ⟪Q, 1⟫(x); }}",
     "'Q' names no dimension of this program"),
    ("shift-ambiguous-tag", "p(out: tensor<float, Ia[0:3], Ib[0:3]>, x: tensor<float, Ia[0:3], "
     "Ib[0:3]>) { out ← ⟪i, 0⟫(x); }", "offset tag 'i' is ambiguous"),
    ("table-not-int", "p(out: tensor<float, Vertex[0:4]>, e: tensor<float, Edge[0:6]>, "
     "V2E: tensor<float, Vertex[0:4], _NB_Edge[0:3]>) { out ← ⟪V2E, 0⟫(e); }",
     "a neighbour table must be an int tensor"),
    ("shift-wrong-source", f"p({UNSTRUCTURED}) {{ out ← ⟪V2E, 0⟫(v); }}",
     "needs an operand with dimension Edge"),
    ("neighbor-index-range", f"p({UNSTRUCTURED}) {{ out ← ⟪V2E, 5⟫(e); }}",
     "neighbour index 5 is outside"),
    ("reduce-no-nb", f"p({UNSTRUCTURED}) {{ out ← reduce(λ(acc: tensor<float, Vertex[0:4]>, "
     "x: tensor<float, Vertex[0:4]>) → acc + x, 0.0)(v); }", "needs an operand with a neighbour"),
    ("reduce-bad-init", f"p({UNSTRUCTURED}) {{ out ← reduce(λ(acc: tensor<float, Vertex[0:4]>, "
     "x: tensor<float, Vertex[0:4]>) → acc + x, True)(⟪V2E⟫(e)); }",
     "the init of reduce has element type bool"),
    ("reduce-arity", f"p({UNSTRUCTURED}) {{ out ← reduce(λ(acc: tensor<float, Vertex[0:4]>) "
     "→ acc, 0.0)(⟪V2E⟫(e)); }", "the lambda takes 1 parameters but gets 2"),
    ("lambda-param-type", f"p(out: {F1}, x: {F1}) {{ out ← (λ(y: tensor<int, I[0:10]>) → y)(x); }}",
     "parameter 'y' expects element type int64, got float64"),
    ("lambda-param-dims", f"p(out: {F1}, x: {F1}) "
     "{ out ← (λ(y: tensor<float, J[0:10]>) → y)(x); }", "the dimensions differ"),
    ("lambda-param-cover", f"p(out: {F1}, x: {F1}) "
     "{ out ← (λ(y: tensor<float, I[0:12]>) → y)(x); }",
     "needs I[0:12] but the argument only covers [0:10]"),
    ("reduce-body-shrinks", f"p({UNSTRUCTURED}) {{ out ← reduce(λ(acc: tensor<float, Vertex[0:4]>, "
     "x: tensor<float, Vertex[0:4]>) → ⟪Vertex, 1⟫(acc) + x, 0.0)(⟪V2E⟫(e)); }",
     "the reduce lambda returns Vertex[0:3] but the accumulator needs Vertex[0:4]"),
    ("scan-body-shrinks", "p(out: tensor<float, I[0:3], K[0:5]>, x: tensor<float, I[0:3], "
     "K[0:5]>) { out ← scan(λ(s: tensor<float, I[0:3]>, a: tensor<float, I[0:3]>) → "
     "⟪I, 1⟫(s) + a, True, 0.0)(x); }",
     "the scan lambda returns I[0:2] but the state needs I[0:3]"),
    ("shift-overlap-dst", "p(out: tensor<float, Edge[0:9]>, x: tensor<float, Vertex[0:6], "
     "Edge[2:5]>, E2V: tensor<int, Edge[0:9], _NB_Vertex[0:2]>) { out ← ⟪E2V, 0⟫(x); }",
     "the expression is defined on Edge[2:5] but the target 'out' needs Edge[0:9]"),
    ("scan-axis-unclear", "p(out: tensor<float, I[0:3], K[0:5]>, x: tensor<float, I[0:3], K[0:5]>)"
     " { out ← scan(λ(s: tensor<float>, a: tensor<float>) → s + a, True, 0.0)(x); }",
     "cannot tell the scan axis"),
    ("scan-direction", "p(out: tensor<float, I[0:3], K[0:5]>, x: tensor<float, I[0:3], K[0:5]>) "
     "{ out ← scan(λ(s: tensor<float, I[0:3]>, a: tensor<float, I[0:3]>) → s + a, 1, 0.0)(x); }",
     "the direction"),
    ("subset-outside", f"p(out: {F1}, x: {F1}) {{ subset(out, I[0:12]) ← x; }}",
     "subset I[0:12] is not within I[0:10]"),
    ("concat-gap", "p(out: tensor<float, I[0:10]>, a: tensor<float, I[0:3]>, "
     "b: tensor<float, I[4:10]>) { out ← concat(a, b); }", "contiguous, disjoint intervals"),
    ("pos-missing-dim", f"p(out: tensor<int, J[0:10]>, x: {F1}, y: tensor<float, J[0:3]>) "
     "{ out ← pos(J, x); }", "x has no dimension J"),
    ("cast-bad-type", f"p(out: {F1}, x: {F1}) {{ out ← cast(x, float16); }}",
     "expected an element type"),
    ("undecidable-bounds", "p(out: tensor<float, I[0:N]>, a: tensor<float, I[0:N]>, "
     "b: tensor<float, I[0:M]>) { out ← a + b; }", "cannot decide whether"),
    ("undetermined-size", f"p(out: {F1}) {{ tmp: tensor<float, I[0:Q]>; out ← 1.0; }}",
     "size symbol 'Q' appears in no parameter type"),
    ("duplicate-param", f"p(out: {F1}, out: {F1}) {{ out ← 1.0; }}", "'out' is declared twice"),
    ("duplicate-dim", "p(out: tensor<float, I[0:3], I[0:3]>) { out ← 1.0; }",
     "dimension 'I' appears twice"),
    ("builtin-as-param", f"p(out: {F1}, sin: {F1}) {{ out ← 1.0; }}", "'sin' is a builtin"),
    ("builtin-uncalled", f"p(out: {F1}, x: {F1}) {{ out ← sqrt; }}",
     "builtin 'sqrt' must be called"),
    ("dim-as-value", f"p(out: {F1}, x: {F1}) {{ out ← I; }}", "'I' is a dimension, not a value"),
    ("wrong-arity", f"p(out: {F1}, x: {F1}) {{ out ← plus(x); }}", "plus takes 2 operands, got 1"),
    ("tensor-called", f"p(out: {F1}, x: {F1}) {{ out ← x(x); }}",
     "'x' is a tensor, not a function"),
]


@pytest.mark.parametrize("src,fragment", [(s, f) for _, s, f in BAD], ids=[i for i, _, _ in BAD])
def test_bad_programs_raise_type_errors_with_location(src, fragment):
    with pytest.raises(tir.TypeCheckError) as info:
        tir.check(tir.parse(src))
    err = info.value
    assert fragment in str(err), str(err)
    assert err.loc is not None and err.loc.line >= 1 and err.loc.column >= 1
    assert str(err).startswith(f"{err.loc.line}:{err.loc.column}:")


def test_error_location_points_at_the_offending_expression():
    src = "p(out: tensor<float, I[0:10]>,\n  a: tensor<float, I[0:10]>) {\n  out ← a + zz;\n}"
    with pytest.raises(tir.TypeCheckError, match=r"^3:13: unknown name 'zz'"):
        tir.check(tir.parse(src))


def test_there_are_at_least_thirty_bad_programs():
    assert len({fragment for _, _, fragment in BAD}) >= 30


def test_a_bound_clamped_twice_compares_with_its_folded_form():
    """GT4Py's clamped level ranges: ``Min(N, Max(0, k1 + 31, k0 - 31))`` (as
    SymPy folds it) and ``Min(N, Max(0, k0 - 31, Min(N, k1 + 31)))`` (as built)
    are the same bound; comparing them must not be undecidable."""
    import sympy

    from tensorir_dace import intervals, ir
    n = ir.size_symbol("N")
    k0, k1 = ir.runtime_symbol("k0"), ir.runtime_symbol("k1")
    folded = sympy.Min(n, sympy.Max(0, k1 + 31, k0 - 31))
    built = sympy.Min(n, sympy.Max(0, k0 - 31, sympy.Min(n, k1 + 31), evaluate=False),
                      evaluate=False)
    assert intervals.le(folded, built) is True
    assert intervals.le(built, folded) is True
    with pytest.raises(intervals.Undecidable):
        intervals.le(sympy.Min(n, k1), sympy.Min(n, k0))


def test_bound_comparisons_are_decided_once_and_stay_decided():
    """``intervals.le`` remembers its decisions (large programs compare the same
    bounds again and again): the second answer is the first, an undecidable
    comparison raises every time, and symbols of other assumptions differ."""
    import sympy

    from tensorir_dace import intervals
    n = sympy.Symbol("N", integer=True, nonnegative=True)
    h = sympy.Symbol("h", integer=True)
    for _ in range(2):
        assert intervals.le(n, n + 1) is True
        assert intervals.le(n + 1, n) is False
        assert intervals.le(n, sympy.Max(1, n)) is True
        with pytest.raises(intervals.Undecidable):
            intervals.le(h, n)
    free = sympy.Symbol("N")             # no assumptions: another symbol
    with pytest.raises(intervals.Undecidable):
        intervals.le(free, n)


def test_scope_lookups_see_names_bound_or_rebound_after_them():
    """Scopes remember their lookups (chains of one scope per let binding are
    hundreds deep); a name bound, rebound or removed anywhere afterwards is
    seen by every scope below it."""
    from tensorir_dace.typing.scope import Binding, Scope
    t = ir.TensorType(ir.INT64)
    root = Scope()
    leaf = root.child({})
    for k in range(300):
        leaf = leaf.child({f"v{k}": Binding(f"v{k}", "lambda", t)})
    assert leaf.lookup("y") is None and leaf.lookup("v3").kind == "lambda"
    root.bindings["y"] = Binding("y", "temp", t)
    assert leaf.lookup("y").kind == "temp"
    leaf.rebind(Binding("y", "param", t))
    assert leaf.lookup("y").kind == "param" and root.lookup("y").kind == "param"
    root.bindings.update({"v3": Binding("v3", "size", t)})
    assert leaf.lookup("v3").kind == "lambda"          # the lambda parameter shadows it
    assert root.lookup("v3").kind == "size"
    del root.bindings["y"]
    assert leaf.lookup("y") is None
