"""Random mesh expressions against an independent model of presence.

The differential tests compare compiled code with the interpreter, which
share the type checker's view of absent neighbours: a rule both get wrong
the same way passes them.  Here a few lines of plain Python evaluate each
expression point by point with DESIGN.md's rules written out directly
(``None`` is an absent value):

* a full shift through a table entry < 0 is absent, else the operand there;
* an element-wise operation is absent where any operand is;
* ``if(c, a, b)`` is absent where ``c`` is, else where the branch it selects is;
* ``can_deref(x)`` is whether ``x`` is present (itself always present, so
  ``if(can_deref(⟪V2E⟫(e)), ⟪V2E⟫(e), 7.0)`` is present at every neighbour);
* ``reduce`` skips absent elements (a partial shift's entry < 0, or an absent
  operand value there) and is always present;
* ``shift_apply(k)`` of a partial shift is its slot ``k``, absent as that is;
* an applied lambda's parameter carries its argument's presence;
* nested partial shifts ``⟪V2E⟫(⟪E2V⟫(x))`` are absent per element (j, i),
  reduced in either order.

The expressions gather through three tables, two of them of one type
(``V2E`` and ``V2F``), so that one neighbour dimension can be masked by
either.  Each expression is computed with its ``can_deref``: both backends
must say present exactly where the model does, and give the model's value
there (an absent value is undefined).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import tensorir_dace as tir
from conftest import compiled, parsed

NV, NE = 7, 11
VT, ET = "tensor<float, V[0:NV]>", "tensor<float, E[0:NE]>"
REDUCERS = {  # name: (lambda text, init, fold)
    "sum": (f"λ(acc: {VT}, x: {VT}) → acc + x", "0.0", lambda acc, x: acc + x, 0.0),
    "max": (f"λ(acc: {VT}, x: {VT}) → maximum(acc, x)", "-50.0", max, -50.0),
    "count": (f"λ(acc: {VT}, x: {VT}) → acc + 1.0", "0.0", lambda acc, x: acc + 1.0, 0.0),
}
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "×": lambda a, b: a * b}


# ------------------------------------------------------------------ expressions
# A tree is a tuple: (kind, ...children/fields); V, E and S (V × neighbour) valued.

def gen_v(r: random.Random, d: int):
    if d == 0 or r.random() < 0.15:
        return ("leaf", "v")
    return r.choice([
        lambda: ("full", r.choice(["V2E", "V2F"]), r.randrange(3), gen_e(r, d - 1)),
        lambda: ("op", r.choice(list(OPS)), gen_v(r, d - 1), gen_v(r, d - 1)),
        lambda: ("guard", gen_v(r, d - 1), -3.0),
        lambda: ("select", gen_v(r, d - 1), gen_v(r, d - 1)),
        lambda: ("reduce", r.choice(list(REDUCERS)), gen_s(r, d - 1)),
        lambda: ("slot", r.randrange(3), gen_s(r, d - 1)),
        lambda: ("deref", gen_v(r, d - 1)),
        lambda: ("apply", r.choice(["guarded", "plain"]), gen_v(r, d - 1)),
        lambda: ("nested", r.choice(["outer first", "inner first"]), gen_v(r, d - 1)),
    ])()


def gen_s(r: random.Random, d: int):
    if d == 0 or r.random() < 0.3:
        return ("partial", r.choice(["V2E", "V2F"]), gen_e(r, max(d - 1, 0)))
    return r.choice([
        lambda: ("op", r.choice(list(OPS)), gen_s(r, d - 1), gen_s(r, d - 1)),
        lambda: ("op", "×", gen_s(r, d - 1), gen_v(r, d - 1)),
        lambda: ("select", gen_s(r, d - 1), gen_s(r, d - 1)),
        lambda: ("threshold", gen_s(r, d - 1), gen_s(r, d - 1)),
        lambda: ("guard", gen_s(r, d - 1), 7.0),
    ])()


def gen_e(r: random.Random, d: int):
    if d == 0 or r.random() < 0.2:
        return ("leaf", "e")
    return r.choice([
        lambda: ("full", "E2V", r.randrange(2), gen_v(r, d - 1)),
        lambda: ("op", r.choice(list(OPS)), gen_e(r, d - 1), gen_e(r, d - 1)),
        lambda: ("guard", gen_e(r, d - 1), -2.0),
        lambda: ("reduce_e", gen_v(r, d - 1)),
    ])()


def text(t) -> str:
    kind = t[0]
    if kind == "leaf":
        return t[1]
    if kind == "full":
        return f"⟪{t[1]}, {t[2]}⟫({text(t[3])})"
    if kind == "partial":
        return f"⟪{t[1]}⟫({text(t[2])})"
    if kind == "op":
        return f"({text(t[2])} {t[1]} {text(t[3])})"
    if kind == "guard":
        return f"if(can_deref({text(t[1])}), {text(t[1])}, {t[2]})"
    if kind == "select":
        return f"if({text(t[1])} > {text(t[2])}, {text(t[1])}, {text(t[2])})"
    if kind == "threshold":
        return f"if({text(t[1])} > 1.0, {text(t[2])}, 0.5)"
    if kind == "reduce":
        lam, init = REDUCERS[t[1]][:2]
        return f"reduce({lam}, {init})({text(t[2])})"
    if kind == "slot":
        return f"shift_apply({t[1]})({text(t[2])})"
    if kind == "nested":
        x = f"⟪V2E⟫(⟪E2V⟫({text(t[2])}))"
        if t[1] == "outer first":       # over V2E's neighbours (the highest counter) first
            nb0 = "tensor<float, V[0:NV], _NB_0[0:2]>"
            inner = f"reduce(λ(acc: {nb0}, y: {nb0}) → acc + y × 0.5, 0.0)({x})"
            return f"reduce(λ(acc: {VT}, y: {VT}) → acc + y, 0.0)({inner})"
        nb1 = "tensor<float, V[0:NV], _NB_1[0:3]>"
        inner = f"reduce(λ(acc: {nb1}, y: {nb1}) → acc + y, 0.0, _NB_0)({x})"
        return f"reduce(λ(acc: {VT}, y: {VT}) → maximum(acc, y), -5.0)({inner})"
    if kind == "deref":
        return f"cast(can_deref({text(t[1])}), float)"
    if kind == "apply":
        body = "if(can_deref(y), y × 2.0, -1.0)" if t[1] == "guarded" else "y + v"
        return f"(λ(y: {VT}) → {body})({text(t[2])})"
    assert kind == "reduce_e"
    return f"reduce(λ(acc: {ET}, x: {ET}) → acc + x, 0.0)(⟪E2V⟫({text(t[1])}))"


# ------------------------------------------------------------------ the model

class Model:
    """Point-wise evaluation; ``None`` is absent."""

    def __init__(self, a: dict):
        self.a = a

    def v(self, t, p: int):
        kind = t[0]
        if kind == "leaf":
            return float(self.a["v"][p])
        if kind == "full":
            n = int(self.a[t[1]][p, t[2]])
            return None if n < 0 else self.e(t[3], n)
        if kind == "reduce":
            _, _, fold, acc = REDUCERS[t[1]]
            for k in range(3):
                x = self.s(t[2], p, k)
                if x is not None:
                    acc = fold(acc, x)
            return acc
        if kind == "slot":
            return self.s(t[2], p, t[1])
        if kind == "nested":
            return self.nested(t, p)
        if kind == "deref":
            return float(self.v(t[1], p) is not None)
        if kind == "apply":
            y = self.v(t[2], p)
            if t[1] == "guarded":
                return -1.0 if y is None else 2.0 * y
            return None if y is None else y + float(self.a["v"][p])
        return self.common(t, p, self.v)

    def s(self, t, p: int, k: int):
        if t[0] == "partial":
            n = int(self.a[t[1]][p, k])
            return None if n < 0 else self.e(t[2], n)
        return self.common(t, p, lambda x, q: self.s(x, q, k) if x[0] in S_KINDS and
                           _sparse(x) else self.v(x, q))

    def e(self, t, p: int):
        kind = t[0]
        if kind == "leaf":
            return float(self.a["e"][p])
        if kind == "full":
            n = int(self.a["E2V"][p, t[2]])
            return None if n < 0 else self.v(t[3], n)
        if kind == "reduce_e":
            acc = 0.0
            for k in range(2):
                n = int(self.a["E2V"][p, k])
                x = None if n < 0 else self.v(t[1], n)
                if x is not None:
                    acc += x
            return acc
        return self.common(t, p, self.e)

    def nested(self, t, p: int) -> float:
        """``⟪V2E⟫(⟪E2V⟫(x))``: element (j, i) is absent where V2E[p, j] < 0,
        E2V[V2E[p, j], i] < 0 or x there is; after one reduction the other
        dimension keeps only a mask that did not depend on the reduced one."""
        def element(j: int, i: int):
            e = int(self.a["V2E"][p, j])
            n = -1 if e < 0 else int(self.a["E2V"][e, i])
            return None if n < 0 else self.v(t[2], n)
        if t[1] == "outer first":
            inner = []
            for i in range(2):
                acc = 0.0
                for j in range(3):
                    if (y := element(j, i)) is not None:
                        acc += 0.5 * y
                inner.append(acc)              # E2V's mask depended on j: unmasked now
            return sum(inner)
        acc = -5.0
        for j in range(3):
            if int(self.a["V2E"][p, j]) < 0:   # V2E's mask stays
                continue
            acc = max(acc, sum(y for i in range(2) if (y := element(j, i)) is not None))
        return acc

    @staticmethod
    def common(t, p, ev):
        kind = t[0]
        if kind == "op":
            a, b = ev(t[2], p), ev(t[3], p)
            return None if a is None or b is None else OPS[t[1]](a, b)
        if kind == "guard":
            x = ev(t[1], p)
            return t[2] if x is None else x
        if kind == "select":
            a, b = ev(t[1], p), ev(t[2], p)
            if a is None or b is None:      # the condition a > b is absent
                return None
            return a if a > b else b
        assert kind == "threshold"
        c = ev(t[1], p)
        if c is None:
            return None
        return ev(t[2], p) if c > 1.0 else 0.5


S_KINDS = ("partial", "op", "select", "threshold", "guard")


def _sparse(t) -> bool:
    """Whether ``t`` has the neighbour dimension (a partial shift inside)."""
    if t[0] == "partial":
        return True
    if t[0] in ("op", "select", "threshold", "guard"):
        return any(_sparse(c) for c in t[1:] if isinstance(c, tuple))
    return False


# ------------------------------------------------------------------ the test

def program(trees) -> str:
    outs = ", ".join(f"o{i}: {VT}, c{i}: tensor<bool, V[0:NV]>" for i in range(len(trees)))
    body = ";\n".join(f"  o{i} ← {text(t)};\n  c{i} ← can_deref({text(t)})"
                       for i, t in enumerate(trees))
    return (f"oracle(v: {VT}, e: {ET}, E2V: tensor<int, E[0:NE], _NB_V[0:2]>,\n"
            f"       V2E: tensor<int, V[0:NV], _NB_E[0:3]>, "
            f"V2F: tensor<int, V[0:NV], _NB_E[0:3]>, {outs}) {{\n{body}\n}}")


def arguments(seed: int, n_out: int) -> dict:
    rng = np.random.default_rng(seed)

    def table(rows, cols, targets):
        t = rng.integers(0, targets, (rows, cols))
        t[rng.random((rows, cols)) < 0.3] = -1
        return t
    a = {"v": rng.random(NV) + 0.5, "e": rng.random(NE) + 0.5, "E2V": table(NE, 2, NV),
         "V2E": table(NV, 3, NE), "V2F": table(NV, 3, NE)}
    a["V2F"][0] = -1                      # a vertex without neighbours through V2F
    return a | {f"o{i}": np.zeros(NV) for i in range(n_out)} | {
        f"c{i}": np.zeros(NV, dtype=bool) for i in range(n_out)}


def expected(trees, a):
    model = Model(a)
    return [[model.v(t, p) for p in range(NV)] for t in trees]


def trees_of(seed: int, count: int = 25):
    r = random.Random(seed)
    return [gen_v(r, r.randint(2, 4)) for _ in range(count)]


SEEDS = range(8)


def check(trees, a) -> None:
    for i, (t, want) in enumerate(zip(trees, expected(trees, a))):
        got, present = a[f"o{i}"], a[f"c{i}"]
        for p, w in enumerate(want):
            assert present[p] == (w is not None), (text(t), p, w)
            if w is not None:      # an absent value is undefined
                assert got[p] == pytest.approx(w, rel=1e-12), (text(t), p, got[p], w)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_interpreter_follows_the_presence_rules(seed):
    trees = trees_of(seed)
    a = arguments(seed, len(trees))
    tir.interpret(parsed(program(trees)), **a)
    check(trees, a)


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("optimize", ["none", "default"])
def test_compiled_code_follows_the_presence_rules(seed, optimize):
    trees = trees_of(seed)
    a = arguments(seed, len(trees))
    compiled(program(trees), optimize)(**a)
    check(trees, a)


# ------------------------------------------------------------------ columns
# Data-dependent offsets along K: ``⟪K, off⟫(x)`` is defined on ``off``'s
# domain and absent where ``k + off`` leaves ``x``'s interval (or ``x`` is
# absent there); a Cartesian shift moves the interval.

N, L = 4, 6
CT = "tensor<float, I[0:N], K[0:L]>"


def gen_k(r: random.Random, d: int):
    if d == 0 or r.random() < 0.2:
        return r.choice([("leaf", "col"), ("cart", r.choice([-1, 1]))])
    return r.choice([
        lambda: ("dd", r.choice(["ko", "kl"]), gen_k(r, d - 1)),
        lambda: ("op", r.choice(list(OPS)), gen_k(r, d - 1), gen_k(r, d - 1)),
        lambda: ("guard", gen_k(r, d - 1), -1.0),
        lambda: ("select", gen_k(r, d - 1), gen_k(r, d - 1)),
    ])()


def k_text(t) -> str:
    kind = t[0]
    if kind == "leaf":
        return "col"
    if kind == "cart":
        return f"⟪K, {t[1]}⟫(col)"
    if kind == "dd":
        return f"⟪K, {t[1]}⟫({k_text(t[2])})"
    if kind == "op":
        return f"({k_text(t[2])} {t[1]} {k_text(t[3])})"
    if kind == "guard":
        return f"if(can_deref({k_text(t[1])}), {k_text(t[1])}, {t[2]})"
    return f"if({k_text(t[1])} > {k_text(t[2])}, {k_text(t[1])}, {k_text(t[2])})"


def k_interval(t) -> tuple[int, int]:
    """Where ``t`` is defined along K."""
    kind = t[0]
    if kind == "leaf":
        return -1, L + 1
    if kind == "cart":
        return -1 - t[1], L + 1 - t[1]
    if kind == "dd":
        return 0, L                                   # the offsets' domain
    parts = [k_interval(c) for c in t[1:] if isinstance(c, tuple)]
    return max(p[0] for p in parts), min(p[1] for p in parts)


def k_model(a: dict, t, i: int, k: int):
    kind = t[0]
    if kind == "leaf":
        return float(a["col"][i, k + 1])
    if kind == "cart":
        return float(a["col"][i, k + t[1] + 1])
    if kind == "dd":
        target = k + int(a[t[1]][i, k])
        lo, hi = k_interval(t[2])
        return k_model(a, t[2], i, target) if lo <= target < hi else None
    return Model.common(t, k, lambda x, q: k_model(a, x, i, q))


def k_program(trees) -> str:
    outs = ", ".join(f"o{i}: {CT}, c{i}: tensor<bool, I[0:N], K[0:L]>" for i in range(len(trees)))
    body = ";\n".join(f"  o{i} ← {k_text(t)};\n  c{i} ← can_deref({k_text(t)})"
                      for i, t in enumerate(trees))
    return (f"columns(col: tensor<float, I[0:N], K[-1:L+1]>, ko: tensor<int32, I[0:N], K[0:L]>,"
            f"\n        kl: {CT.replace('float', 'int')}, {outs}) {{\n{body}\n}}")


def k_case(seed: int, count: int = 20):
    r = random.Random(seed)
    trees = [gen_k(r, r.randint(1, 4)) for _ in range(count)]
    rng = np.random.default_rng(seed)
    a = {"col": rng.random((N, L + 2)) + 0.5,
         "ko": rng.integers(-3, 4, (N, L)).astype(np.int32), "kl": rng.integers(-7, 8, (N, L))}
    a |= {f"o{i}": np.zeros((N, L)) for i in range(count)}
    a |= {f"c{i}": np.zeros((N, L), dtype=bool) for i in range(count)}
    return trees, a


def k_check(trees, a) -> None:
    for n, t in enumerate(trees):
        got, present = a[f"o{n}"], a[f"c{n}"]
        for i in range(N):
            for k in range(L):
                w = k_model(a, t, i, k)
                assert present[i, k] == (w is not None), (k_text(t), i, k, w)
                if w is not None:
                    assert got[i, k] == pytest.approx(w, rel=1e-12), (k_text(t), i, k, w)


@pytest.mark.parametrize("seed", SEEDS)
def test_data_dependent_offsets_follow_the_presence_rules(seed):
    trees, a = k_case(seed)
    tir.interpret(parsed(k_program(trees)), **a)
    k_check(trees, a)


@pytest.mark.parametrize("optimize", ["none", "default"])
def test_compiled_data_dependent_offsets_follow_the_presence_rules(optimize):
    trees, a = k_case(100)
    compiled(k_program(trees), optimize)(**a)
    k_check(trees, a)
