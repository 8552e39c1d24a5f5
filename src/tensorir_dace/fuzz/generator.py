"""Random well-typed Tensor IR programs, seeded and reproducible.

A *case* is a small program: a few statements that write their own outputs
(and temporaries) from a fixed set of inputs.  Cases are batched: the
statements of many cases go into one program, so that one compile checks
many of them.  Every case covers one family of constructs (Cartesian
arithmetic with halos and broadcasting, float32, int32/int64 with negative
``/`` and ``%``, bool logic, tuples, neighbour tables with absent entries,
scans with wider operands, ``subset`` and ``concat``, temporaries,
chains of statements passing temporaries read with shifts, temporaries
sized by a loop variable (new in every iteration) that the loop body reads
before writing, writes in part or only on some steps,
program-level ``if``/``for``, runtime domains (``subset`` targets and
``concat`` pieces bounded by the scalar parameters ``h0`` and ``h1``, run
with several values through one binary, empty and inverted ranges included),
mesh values with levels reduced over neighbours at every level (weights,
tuples, level-dependent presence, point-wise operations after the
reduction), data-dependent offsets ``⟪K, off⟫`` with int32 and int64 offsets that may
land outside the column, nested partial shifts ``⟪V2E⟫(⟪E2V⟫(…))``
reduced over either neighbour axis, and applied lambdas whose parameters
carry the absence of shifted arguments into ``can_deref`` and ``reduce``)."""

from __future__ import annotations

import random
from dataclasses import dataclass

IJ = "I[0:N], J[0:M]"
HALO = "I[-2:N+2], J[-2:M+2]"
INPUTS = (
    f"a: tensor<float, {HALO}>", f"b: tensor<float, {HALO}>", "c: tensor<float, J[-2:M+2]>",
    f"f: tensor<float32, {HALO}>", f"n: tensor<int32, {HALO}>", f"m: tensor<int, {HALO}>",
    f"p: tensor<bool, {HALO}>", "col: tensor<float, I[0:N], K[-1:L+1]>",
    "v: tensor<float, V[0:NV]>", "e: tensor<float, E[0:NE]>",
    "E2V: tensor<int, E[0:NE], _NB_V[0:2]>", "V2E: tensor<int, V[0:NV], _NB_E[0:3]>",
    "V2F: tensor<int, V[0:NV], _NB_E[0:3]>",
    "s: tensor<int>", "alpha: tensor<float>",
    "h0: tensor<int>", "h1: tensor<int>",
    "ko: tensor<int32, I[0:N], K[0:L]>", "kl: tensor<int, I[0:N], K[0:L]>",
    "zd: tensor<int32, I[0:N], _NB_0[0:3], K[0:L]>", "I2I: tensor<int, I[0:N], _NB_I[0:3]>",
    "vk: tensor<float, V[0:NV], K[0:L]>", "ek: tensor<float, E[0:NE], K[0:L]>",
    "ke: tensor<int32, E[0:NE], K[0:L]>",
    # levels innermost, LK of them (a multiple of a cache line's values or not)
    f"x3: tensor<float, {HALO}, K[0:LK]>", f"w3: tensor<float, {HALO}, K[0:LK]>",
    f"f3: tensor<float32, {HALO}, K[0:LK]>",
    "y3: tensor<float, I[-1:N+1], J[-1:M+1], K[-1:LK+1]>",
)
# LK: rows of levels of whole cache lines for float64 and float32 (16), and of
# neither (12), so that flat rows (see ``stream`` below) run and fall back.
SIZES = ({"N": 5, "M": 4, "L": 3, "NV": 6, "NE": 9, "LK": 16},
         {"N": 8, "M": 3, "L": 5, "NV": 9, "NE": 13, "LK": 12})
# Runtime bounds (h0, h1) each run uses at each size: in range, inverted, out of
# range (an ArgumentError from both backends where an unclamped interval uses
# them), whole, empty.
BOUNDS = (({"h0": 1, "h1": 3}, {"h0": 3, "h1": 1}, {"h0": 1, "h1": 11}),
          ({"h0": 0, "h1": 8}, {"h0": 2, "h1": 2}))
KINDS = ("float", "float32", "int", "int32", "bool", "tuple", "mesh", "scan", "subset",
         "temporary", "control", "runtime", "offset", "nested", "chain", "looptemp", "twotables",
         "levels", "stream")
# How often each kind is drawn (relative): ``stream`` reaches the passes for
# large outputs (streaming stores, statements fused in rows, flat rows), which
# the runner compiles with the streaming threshold at 0 every other batch.
WEIGHTS = tuple(4 if k == "stream" else 1 for k in KINDS)
# Intervals of I from the runtime bounds that stay inside I[0:N] for every BOUNDS
# entry (the checker cannot know that, the argument check at call time does).
I_RANGES = (("h0", "h1"), ("h0 + 1", "h1"), ("h0", "N - h0"), ("1", "h1"), ("h1", "h0"),
            ("Max(0, h0 - 1)", "Min(N, h1 + 2)"), ("Min(N, h0 + h1)", "N"))
J_RANGES = (("0", "M"), ("Min(M, h0)", "M"), ("0", "Max(0, M - h1)"))
CUTS = ("Min(N, Max(0, h0))", "Min(N, h1)", "Max(0, Min(N, h0 - h1))")


@dataclass(frozen=True)
class Case:
    """One generated program: declarations (outputs, temporaries) and statements,
    all names suffixed with the case number so cases can share one program."""

    seed: int
    kind: str
    outputs: tuple[str, ...]
    temporaries: tuple[str, ...]
    statements: tuple[str, ...]


class _Gen:
    def __init__(self, r: random.Random):
        self.r = r
        # parameters of the applied lambdas around the expression being made
        self.params: dict[str, list[str]] = {"V": [], "E": []}

    def pick(self, *xs):
        return self.r.choice(xs)

    # ------------------------------------------------------------ float over I, J
    def fexpr(self, d: int, names=("a", "b"), lit=("1.5", "2.0", "0.25", "3", "-0.5"),
              halo: int = 2) -> str:
        """``halo``: how far the remaining shifts may reach into the inputs' halo."""
        r = self.r
        if d == 0 or r.random() < 0.2 or (halo == 0 and r.random() < 0.5):
            c = r.random()
            if c < 0.4:
                return r.choice(names)
            if c < 0.55:
                return r.choice(lit)
            if c < 0.65:
                return "c" if "a" in names else r.choice(names)
            if c < 0.7 and "a" in names:
                return "alpha"
            if halo == 0:
                return r.choice(names)
            off = r.choice([o for o in (-2, -1, 1, 2) if abs(o) <= halo])
            return f"⟪{r.choice('IJ')}, {off}⟫({r.choice(names)})"
        x = lambda: self.fexpr(d - 1, names, lit, halo)  # noqa: E731
        shifted = lambda: self.fexpr(d - 1, names, lit, halo - 1)  # noqa: E731
        return r.choice([
            lambda: f"({x()} + {x()})", lambda: f"({x()} - {x()})",
            lambda: f"({x()} × {x()})", lambda: f"({x()} / {x()})",
            lambda: f"if({x()} < {x()}, {x()}, {x()})", lambda: f"-{x()}",
            lambda: f"minimum({x()}, {x()})", lambda: f"maximum({x()}, {x()})",
            lambda: f"{self.pick('sin', 'cos', 'tanh', 'exp', 'floor', 'cbrt', 'gamma')}({x()})",
            lambda: f"sqrt(abs({x()}))", lambda: f"power({x()}, 2)",
            lambda: f"⟪{r.choice('IJ')}, {r.choice([-1, 1])}⟫({shifted()})" if halo > 0
                    else x(),
        ])()

    def iexpr(self, d: int, dt: str) -> str:
        r = self.r
        names = ("n",) if dt == "int32" else ("m",)
        if d == 0 or r.random() < 0.2:
            c = r.random()
            if c < 0.45:
                return names[0]
            if c < 0.7:
                return r.choice(["1", "2", "-3", "0", "7", "-5"])
            if c < 0.8:
                return f"cast(s, {dt})" if dt == "int32" else "s"
            return f"⟪{r.choice('IJ')}, {r.choice([-1, 1])}⟫({names[0]})"
        x = lambda: self.iexpr(d - 1, dt)  # noqa: E731
        nz = lambda: f"(abs({x()}) + 1)"   # noqa: E731  a divisor that is never 0
        return r.choice([
            lambda: f"({x()} + {x()})", lambda: f"({x()} - {x()})",
            lambda: f"({x()} × {r.choice(['2', '-3'])})", lambda: f"({x()} / {nz()})",
            lambda: f"({x()} / -{nz()})", lambda: f"({x()} % {nz()})",
            lambda: f"({x()} % -{nz()})", lambda: f"fmod({x()}, -{nz()})",
            lambda: f"minimum({x()}, {x()})",
            lambda: f"maximum({x()}, {x()})", lambda: f"abs({x()})", lambda: f"-{x()}",
            lambda: f"if({x()} < {x()}, {x()}, {x()})",
            lambda: f"cast(cast({x()}, float) × 0.5, {dt})",
            lambda: f"cast(a > b, {dt})" if r.random() < 0.3 else f"({x()} × 2)",
        ])()

    def bexpr(self, d: int) -> str:
        r = self.r
        if d == 0 or r.random() < 0.25:
            return r.choice(["p", "(a < b)", "(m ≥ 0)", "(n == 1)", "⟪I, 1⟫(p)", "True"])
        x = lambda: self.bexpr(d - 1)  # noqa: E731
        return r.choice([
            lambda: f"({x()} ∧ {x()})", lambda: f"({x()} ∨ {x()})", lambda: f"¬{x()}",
            lambda: f"({x()} == {x()})", lambda: f"({x()} ≠ {x()})",
            lambda: f"if({x()}, {x()}, {x()})",
            lambda: f"({self.fexpr(1)} ≤ {self.fexpr(1)})",
        ])()

    # ------------------------------------------------------------ mesh
    def mesh_leaf(self, kind: str, names: list[str]) -> str:
        """An input, or mostly a parameter of an enclosing applied lambda."""
        if self.params[kind] and self.r.random() < 0.7:
            return self.r.choice(self.params[kind])
        return self.r.choice(names)

    def applied(self, d: int, kind: str) -> str:
        """``(λ(y…) → body)(args…)`` of type ``kind`` (V or E): arguments often
        shifted through tables with absent entries, so the parameters carry
        absence into the body (its ``can_deref`` and ``reduce``)."""
        r = self.r
        params: list[tuple[str, str]] = []
        args: list[str] = []
        for _ in range(r.randint(1, 2)):
            pk = r.choice("VE")
            name = f"y{sum(map(len, self.params.values())) + len(params)}"
            params.append((name, pk))
            args.append(self.vexpr(d - 1) if pk == "V" else self.eexpr(d - 1))
        for name, pk in params:
            self.params[pk].append(name)
        body = self.vexpr(d - 1) if kind == "V" else self.eexpr(d - 1)
        same = [n for n, pk in params if pk == kind]
        if same and r.random() < 0.5:        # the body tests its parameter's presence
            body = f"if(can_deref({r.choice(same)}), {body}, -3.0)"
        for name, pk in params:
            self.params[pk].remove(name)
        decls = ", ".join(f"{n}: tensor<float, {'V[0:NV]' if pk == 'V' else 'E[0:NE]'}>"
                          for n, pk in params)
        return f"(λ({decls}) → {body})({', '.join(args)})"

    def vexpr(self, d: int) -> str:
        VT, ET = "tensor<float, V[0:NV]>", "tensor<float, E[0:NE]>"
        r = self.r
        if d == 0 or r.random() < 0.2:
            return self.mesh_leaf("V", ["v", "(v × 1.5)"])
        ee = lambda: self.eexpr(d - 1)  # noqa: E731
        vv = lambda: self.vexpr(d - 1)  # noqa: E731
        return r.choice([
            lambda: f"if(can_deref(⟪V2E, {r.randrange(3)}⟫(e)), ⟪V2E, {r.randrange(3)}⟫(e), 0.0)"
                    if r.random() < 0.5 else f"⟪V2E, {r.randrange(3)}⟫({ee()})",
            lambda: f"reduce(λ(acc: {VT}, x: {VT}) → acc + x × 0.5, 0.0)(⟪V2E⟫({ee()}))",
            lambda: f"reduce(λ(acc: {VT}, x: {VT}) → maximum(acc, x), -100.0)(⟪V2E⟫({ee()}))",
            lambda: f"if(can_deref(⟪V2E, {r.randrange(3)}⟫({ee()})), {vv()}, -1.0)",
            lambda: f"shift_apply({r.randrange(3)})(⟪V2E⟫({ee()}))",
            lambda: f"cast(can_deref(⟪V2E, {r.randrange(3)}⟫(⟪E2V, {r.randrange(2)}⟫(v))), float)",
            lambda: f"({vv()} {r.choice(['+', '-', '×'])} {vv()})",
            lambda: f"reduce(λ(acc: {VT}, x: {ET}) → acc + x, 0.0)(⟪V2E⟫(e))"
                    if False else f"({vv()} + 1.0)",
            lambda: self.applied(d, "V"),
            lambda: self.two_tables(d),
            lambda: f"cast(can_deref({self.applied(d, 'V')}), float)",
            lambda: f"cast(can_deref(⟪V2E, {r.randrange(3)}⟫({self.applied(d, 'E')})), float)",
        ])()

    def sparse(self, d: int) -> str:
        """A value over ``V, _NB_0[0:3]`` gathered through ``V2E`` and ``V2F``, two
        tables of one type with their own absent entries, combined element-wise or
        selected between."""
        r = self.r
        ee = lambda: self.eexpr(d - 1)  # noqa: E731
        a, b = f"⟪V2E⟫({ee()})", f"⟪V2F⟫({ee()})"
        if r.random() < 0.5:
            a, b = b, a
        return r.choice([
            lambda: f"({a} {r.choice(['+', '-', '×'])} {b})",
            lambda: f"if({a} > {b}, {a}, {b})",
            lambda: f"if(⟪V2F⟫(e) > 0.5, {a}, {r.choice(['1.0', b])})",
            lambda: f"maximum({a}, {b} × 0.5)",
        ])()

    def two_tables(self, d: int) -> str:
        """A reduction of :meth:`sparse`: absent through either table is skipped."""
        VT = "tensor<float, V[0:NV]>"
        return self.pick(
            f"reduce(λ(acc: {VT}, x: {VT}) → acc + x, 0.0)({self.sparse(d)})",
            f"reduce(λ(acc: {VT}, x: {VT}) → maximum(acc, x), -50.0)({self.sparse(d)})",
            f"cast(reduce(λ(k: tensor<int, V[0:NV]>, x: {VT}) → k + 1, 0)({self.sparse(d)}), "
            "float)")

    def eexpr(self, d: int) -> str:
        ET = "tensor<float, E[0:NE]>"
        r = self.r
        if d == 0 or r.random() < 0.2:
            return self.mesh_leaf("E", ["e", "(e + 2.0)"])
        vv = lambda: self.vexpr(d - 1)  # noqa: E731
        ee = lambda: self.eexpr(d - 1)  # noqa: E731
        return r.choice([
            lambda: f"⟪E2V, {r.randrange(2)}⟫({vv()})",
            lambda: f"reduce(λ(acc: {ET}, x: {ET}) → acc + x, 0.0)(⟪E2V⟫({vv()}))",
            lambda: f"({ee()} {r.choice(['+', '-', '×'])} {ee()})",
            lambda: self.applied(d, "E"),
            lambda: f"if(can_deref({(x := ee())}), {x}, -2.0)",
        ])()


    # ------------------------------------------------------------ columns, offsets
    def koff(self) -> str:
        """An int32 or int64 offset along K; random values reach outside the column."""
        j = self.r.randrange(3)
        return self.pick("ko", "kl", "(ko + 1)", "-kl", "cast(ko, int)", "(kl % 3)",
                         "minimum(ko, 1)", "cast(kl, int32)", f"shift_apply({j})(zd)",
                         f"⟪I2I, {j}⟫(ko)")

    def kexpr(self, d: int) -> str:
        """A float over I[0:N], K[0:L] reading ``col`` at computed offsets."""
        r = self.r
        if d == 0 or r.random() < 0.2:
            return r.choice(["col", "(col × 0.5)"]) if r.random() < 0.3 else \
                f"if(can_deref(⟪K, {(k := self.koff())}⟫(col)), ⟪K, {k}⟫(col), 0.5)"
        x = lambda: self.kexpr(d - 1)  # noqa: E731
        return r.choice([
            lambda: f"if(can_deref(⟪K, {(k := self.koff())}⟫({x()})), ⟪K, {k}⟫({x()}), -1.0)",
            lambda: f"⟪K, {self.koff()}⟫({x()})",
            lambda: f"if(can_deref(⟪K, {self.koff()}⟫(col)), {x()}, {x()})",
            lambda: f"cast(can_deref(⟪K, {self.koff()}⟫(⟪K, {self.koff()}⟫(col))), float)",
            lambda: f"({x()} {r.choice(['+', '-', '×'])} {x()})",
            lambda: f"maximum({x()}, ⟪K, {r.choice([-1, 1])}⟫(col))",
            lambda: f"⟪I2I, {r.randrange(3)}⟫({x()})",
            lambda: self.nested_reduce(f"⟪I2I⟫(⟪I2I⟫({x()}))", "I[0:N], K[0:L]", 3, 3),
        ])()

    # ------------------------------------------------------------ mesh with levels
    def ekexpr(self, d: int) -> str:
        """A float over E[0:NE], K[0:L]; data-dependent level offsets make
        presence differ from level to level."""
        r = self.r
        if d == 0 or r.random() < 0.25:
            k = self.pick("ke", "(ke % 2)", "-ke")
            return r.choice(["ek", "(ek + e)", f"⟪E2V, {r.randrange(2)}⟫(vk)",
                             f"if(can_deref(⟪K, {k}⟫(ek)), ⟪K, {k}⟫(ek), 0.25)"])
        x = lambda: self.ekexpr(d - 1)  # noqa: E731
        return r.choice([
            lambda: f"({x()} {r.choice(['+', '-', '×'])} {x()})",
            lambda: f"maximum({x()}, {x()})",
            lambda: f"⟪E2V, {r.randrange(2)}⟫({self.vkexpr(d - 1)})",
            lambda: f"⟪K, {self.pick('ke', '(ke % 2)')}⟫({x()})",
        ])()

    def vkexpr(self, d: int) -> str:
        """A float over V[0:NV], K[0:L]: neighbour reductions at every level,
        often followed by point-wise work (what the interchanged neighbour
        loops run per level after the accumulators)."""
        r = self.r
        VK = "tensor<float, V[0:NV], K[0:L]>"
        if d == 0 or r.random() < 0.2:
            return r.choice(["vk", "(vk × 2.0)", f"⟪V2E, {r.randrange(3)}⟫(ek)"])
        x = lambda: self.vkexpr(d - 1)  # noqa: E731
        ee = lambda: self.ekexpr(d - 1)  # noqa: E731
        two = "tensor<(float, float), V[0:NV], K[0:L]>"
        reduced = r.choice([
            lambda: f"reduce(λ(acc: {VK}, y: {VK}) → acc + y × 0.5, 0.0)(⟪V2E⟫({ee()}))",
            lambda: f"reduce(λ(acc: {VK}, y: {VK}, w: tensor<float, V[0:NV]>) → acc + y × w, "
                    f"0.0)(⟪V2E⟫({ee()}), ⟪V2E⟫(e))",
            lambda: f"reduce(λ(acc: {VK}, y: {VK}) → maximum(acc, y), -9.0)(⟪V2F⟫({ee()}))",
            lambda: f"(λ(q: {two}) → q[0] - q[1])(reduce(λ(acc: {two}, y: {VK}) → "
                    f"make_tuple(acc[0] + y, maximum(acc[1], y)), make_tuple(0.0, -9.0))"
                    f"(⟪V2E⟫({ee()})))",
        ])()
        return r.choice([
            lambda: reduced,
            lambda: f"{reduced} / (abs({x()}) + 1.0)",
            lambda: f"({x()} {r.choice(['+', '-', '×'])} {reduced})",
            lambda: f"if({reduced} > 0.0, {x()}, -{x()})",
        ])()

    def nested_reduce(self, x: str, dims: str, n1: int, n0: int) -> str:
        """``x`` with dims (dims, _NB_1[0:n1], _NB_0[0:n0]) reduced to ``dims``:
        over _NB_1 then _NB_0, or over the named axis _NB_0 first."""
        T = f"tensor<float, {dims}>"
        NB0, NB1 = f"tensor<float, {dims}, _NB_0[0:{n0}]>", f"tensor<float, {dims}, _NB_1[0:{n1}]>"
        inner = self.pick(
            f"reduce(λ(acc: {NB0}, y: {NB0}) → maximum(acc, y), -9.0)({x})",
            f"reduce(λ(acc: {NB0}, y: {NB0}) → acc + y × 0.5, 0.0)({x})",
            f"reduce(λ(acc: {NB1}, y: {NB1}) → acc + y, 0.0, _NB_0)({x})",
            f"reduce(λ(acc: {NB1}, y: {NB1}) → minimum(acc, y), 9.0, _NB_0)({x})",
        )
        return self.pick(
            f"reduce(λ(acc: {T}, y: {T}) → acc + y, 0.0)({inner})",
            f"cast(reduce(λ(k: tensor<int, {dims}>, y: {T}) → k + 1, 0)({inner}), float)",
            f"reduce(λ(acc: {T}, y: {T}) → maximum(acc, y), -5.0)({inner})",
        )

    def nested(self, d: int) -> str:
        """A float over V from ``⟪V2E⟫(⟪E2V⟫(x))`` (dims V, _NB_1, _NB_0) reduced."""
        x = f"⟪V2E⟫(⟪E2V⟫({self.vexpr(d - 1)}))"
        out = self.nested_reduce(x, "V[0:NV]", 3, 2)
        return out if self.r.random() < 0.6 else f"({out} + {self.vexpr(1)})"


def float_expression(r: random.Random, depth: int) -> str:
    """A random float expression over ``I, J`` reading the inputs ``a``, ``b``, ``c``
    and ``alpha`` of INPUTS, shifts within their halo of 2."""
    return _Gen(r).fexpr(depth)


def generate_case(seed: int, index: int | None = None) -> Case:
    """The case of ``seed``; its names end in ``_<index>`` (default: the seed)."""
    r = random.Random(seed)
    g = _Gen(r)
    k = seed if index is None else index
    kind = r.choices(KINDS, WEIGHTS)[0]
    o, t = f"o_{k}", f"t_{k}"
    decl = lambda name, dt, dims=IJ: f"{name}: tensor<{dt}, {dims}>"  # noqa: E731
    d = r.randint(1, 4)
    outs, temps, stmts = [], [], []
    if kind == "float":
        outs, stmts = [decl(o, "float")], [f"{o} ← {g.fexpr(d)}"]
    elif kind == "float32":
        outs = [decl(o, "float32")]
        stmts = [f"{o} ← {g.fexpr(d, names=('f',), lit=('1.5', '2.0', '0.25', '3'))}"]
    elif kind in ("int", "int32"):
        outs, stmts = [decl(o, kind)], [f"{o} ← {g.iexpr(d, kind)}"]
    elif kind == "bool":
        outs, stmts = [decl(o, "bool")], [f"{o} ← {g.bexpr(d)}"]
    elif kind == "tuple":
        outs = [decl(o, "float")]
        temps = [decl(t, "(float, (float, int))")]
        stmts = [f"{t} ← make_tuple({g.fexpr(d)}, make_tuple({g.fexpr(1)}, {g.iexpr(1, 'int')}))",
                 f"{o} ← {t}[0] × {t}[1][0] + cast({t}[1][1], float)"]
    elif kind == "mesh":
        outs, stmts = [decl(o, "float", "V[0:NV]")], [f"{o} ← {g.vexpr(d)}"]
    elif kind == "scan":
        ct = "tensor<float, I[0:N]>"
        forward = r.choice(["True", "False"])
        outs = [decl(o, "float", "I[0:N], K[0:L]")]
        shape = r.random()
        if shape < 0.35:
            lam = (f"λ(st: tensor<(float, float), I[0:N]>, x: {ct}) → "
                   f"make_tuple(st[0] × 0.5 + x, maximum(st[1], x))")
            stmts = [f"{o} ← (λ(q: tensor<(float, float), I[0:N], K[-1:L+1]>) → "
                     f"q[0] + q[1])(scan({lam}, {forward}, make_tuple(0.0, -1.0))(col))"]
        elif shape < 0.65:
            # a scan over a scan's (float, bool) columns: fused into one column
            # loop, the flag's column buffer a bool one
            tb = "tensor<(float, bool), I[0:N]>"
            temps = [decl(t, "(float, bool)", "I[0:N], K[0:L]")]
            stmts = [f"{t} ← scan(λ(st: {tb}, x: {ct}) → make_tuple(st[0] × 0.5 + x, "
                     f"x > {g.pick('0.0', '0.5')}), {forward}, make_tuple(0.0, False))("
                     f"{g.pick('col', 'subset(col, K[0:L])')})",
                     f"{o} ← scan(λ(st: {ct}, q: {tb}) → q[0] + if(q[1], st × 0.5, 0.25), "
                     f"{g.pick('True', 'False')}, 0.0)({t})"]
        else:
            body = g.pick("0.5 × st + x", "st + x × x", "maximum(st, x) - 0.25")
            stmts = [f"{o} ← scan(λ(st: {ct}, x: {ct}) → {body}, {forward}, "
                     f"{g.pick('0.0', '1.0')})(col)"]
    elif kind == "subset":
        outs = [decl(o, "float")]
        stmts = [f"{o} ← a",
                 f"subset({o}, I[1:N-1], J[0:M]) ← {g.fexpr(d)}",
                 f"{o} ← concat(subset(a × {g.fexpr(1)}, I[0:1]), subset(⟪I, -1⟫({o}), I[1:N]))"
                 if r.random() < 0.5 else
                 f"{o} ← concat(J, subset(a × 2.0, J[0:1]), subset(b - {g.fexpr(1)}, J[1:M]))"]
    elif kind == "temporary":
        outs = [decl(o, "float")]
        temps = [decl(t, "float"), decl(t + "u", "float")]
        stmts = [f"{t}u ← {g.fexpr(d)}",                     # never read
                 f"{t} ← {g.fexpr(d)}",
                 f"{t} ← {t} × 0.5 + {g.fexpr(1)}",          # reads itself
                 f"{o} ← {t} + ⟪J, 0⟫({t})"]
    elif kind == "chain":       # statements passing temporaries read with shifts
        outs = [decl(o, "float")]
        temps = [decl(t, "float", "I[-1:N+1], J[-1:M+1]"), decl(t + "u", "float")]
        stmts = [f"{t} ← {g.fexpr(d, halo=1)}",
                 f"{t}u ← {g.fexpr(d, names=(t, 'a'), halo=1)}",
                 f"{o} ← {g.fexpr(d, names=(t + 'u', t), halo=0)} + ⟪I, -1⟫({t}) "
                 f"+ ⟪J, 1⟫({t})"]
    elif kind == "runtime":
        outs = [decl(o, "float"), decl(o + "c", "float")]
        (i0, i1), (j0, j1) = r.choice(I_RANGES), r.choice(J_RANGES)
        cut = r.choice(CUTS)
        stmts = [f"{o} ← b",
                 f"subset({o}, I[{i0}:{i1}], J[{j0}:{j1}]) ← {g.fexpr(d)}",
                 f"{o}c ← concat(I, subset({g.fexpr(d)} + a, I[0:{cut}]), "
                 f"subset(b × {g.fexpr(d)}, I[{cut}:N]))"]
        if r.random() < 0.5:
            stmts.append(f"{o}c ← concat(J, subset({o}c, J[0:Min(M, h1)]), "
                         f"subset({o} + {o}c, J[Min(M, h1):M]))")
    elif kind == "offset":
        outs, stmts = [decl(o, "float", "I[0:N], K[0:L]")], [f"{o} ← {g.kexpr(d)}"]
    elif kind == "nested":
        outs, stmts = [decl(o, "float", "V[0:NV]")], [f"{o} ← {g.nested(d)}"]
    elif kind == "twotables":    # a sparse temporary through two tables, then reduced
        VT, ST = "tensor<float, V[0:NV]>", "float, V[0:NV], _NB_0[0:3]"
        outs, temps = [decl(o, "float", "V[0:NV]")], [f"{t}: tensor<{ST}>"]
        stmts = [f"{t} ← {g.sparse(d)}",
                 f"{o} ← reduce(λ(acc: {VT}, x: {VT}) → acc + x × 0.5, 0.0)({t})"]
    elif kind == "levels":
        outs, stmts = [decl(o, "float", "V[0:NV], K[0:L]")], [f"{o} ← {g.vkexpr(d)}"]
    elif kind == "stream":
        outs, temps, stmts = _streamed(g, o, t, d)
    elif kind == "looptemp":
        outs, temps, stmts = [decl(o, "float")], *_loop_temporaries(g, k, o, d)
    else:   # control
        outs = [decl(o, "float")]
        cond = g.pick("s % 2 == 1", "s / 2 ≥ 1", "alpha > 1.0", "s % 3 == -1 ∨ s < 0")
        stmts = [f"if ({cond}) {{ {o} ← {g.fexpr(d)} }} else {{ {o} ← {g.fexpr(d)} }}",
                 f"for (it in 0:{g.pick('2', 's', 's % 3')}) {{ {o} ← {o} × 0.5 + a }}"]
    return Case(seed, kind, tuple(outs), tuple(temps), tuple(stmts))


IJK = "I[0:N], J[0:M], K[0:LK]"


def _streamed(g: _Gen, o: str, t: str, d: int) -> tuple[list[str], list[str], list[str]]:
    """Three-dimensional statements over ``IJK`` (levels innermost), the output
    written whole at its own points: one statement (a streamed map, its rows
    of levels one run where every array's rows lie end to end), or a chain of
    statements passing temporaries read with shifts along I and J (fused in
    rows, the output streamed; flat rows where no read is shifted along K and
    every array has the output's levels), sometimes followed by a statement
    reading the chain's output.  float64 or float32; a read of ``y3`` (a
    level of halo on each side, so rows of another length), shifted along K
    or not, makes the layouts differ."""
    r = g.r
    names: tuple[str, ...]
    lit: tuple[str, ...]
    if r.random() < 0.3:
        dt, names, lit = "float32", ("f3",), ("1.5", "2.0", "0.25", "3")
    else:
        dt, names, lit = "float", ("x3", "w3"), ("1.5", "2.0", "0.25", "3", "-0.5")
    levels = ""
    if dt == "float" and r.random() < 0.2:
        levels = f" + ⟪K, {r.choice([-1, 1])}⟫(y3)" if r.random() < 0.5 else " × y3"
    decl = lambda name, dims=IJK: f"{name}: tensor<{dt}, {dims}>"  # noqa: E731
    shape = r.random()
    if shape < 0.25:
        return [decl(o)], [], [f"{o} ← {g.fexpr(d, names, lit)}{levels}"]
    halo = "I[-1:N+1], J[-1:M+1], K[0:LK]"
    if shape < 0.5:         # Laplacians of Laplacians (buffered in rings)
        def lap(x: str, w: str) -> str:
            return f"{w} × {x} + ⟪I, -1⟫({x}) + ⟪I, 1⟫({x}) + ⟪J, -1⟫({x}) + ⟪J, 1⟫({x})"
        src = r.choice(names)
        return [decl(o)], [decl(t, halo)], [
            f"{t} ← {lap(src, r.choice(['-4.0', '2.0']))}",
            f"{o} ← {lap(t, r.choice(['-4.0', '0.5']))}{levels}"]
    outs, stmts = [decl(o)], [
        f"{t} ← {g.fexpr(d, names, lit, halo=1)}",
        f"{t}u ← {g.fexpr(d, (t,) + names, lit, halo=1)}",
        f"{o} ← {g.fexpr(d, (t + 'u', t), lit, halo=0)} + ⟪I, -1⟫({t}) + ⟪J, 1⟫({t}){levels}"]
    if r.random() < 0.3:      # a statement after the chain reads its streamed output
        outs.append(decl(o + "b"))
        stmts.append(f"{o}b ← {g.fexpr(d, (o,) + names, lit, halo=0)} × {o}")
    return outs, [decl(t, halo), decl(t + "u")], stmts


def _loop_temporaries(g: _Gen, k: int, o: str, d: int) -> tuple[list[str], list[str]]:
    """Temporaries on ``J[it:M]`` inside a loop over ``it`` (each step reads level
    ``it``, which the previous step wrote): read first, written in part, written
    on even steps only, or written whole first."""
    it = f"it_{k}"
    ij = lambda lo, hi: f"I[0:N], J[{lo}:{hi}]"  # noqa: E731
    level = lambda name: f"subset({name}, {ij(it, it + ' + 1')})"  # noqa: E731
    value = lambda lo: f"subset({g.fexpr(d)} + a, {ij(lo, 'M')})"  # noqa: E731
    variants = {
        "r": lambda t: [f"{level(o)} ← {level(o)} × 0.5 + {level(t)}", f"{t} ← {value(it)}"],
        "p": lambda t: [f"subset({t}, {ij(it + ' + 1', 'M')}) ← {value(it + ' + 1')}",
                        f"{level(o)} ← {level(o)} + {level(t)}"],
        "c": lambda t: [f"if ({it} % 2 == 0) {{ {t} ← {value(it)} }}",
                        f"{level(o)} ← {level(o)} - {level(t)}"],
        "w": lambda t: [f"{t} ← {value(it)}",
                        f"subset({o}, {ij(it, 'M')}) ← subset({o}, {ij(it, 'M')}) + {t} × 0.5"],
    }
    chosen = g.r.sample(sorted(variants), 2)
    temps = [f"t_{k}{v}: tensor<float, {ij(it, 'M')}>" for v in chosen]
    body = [x for v in chosen for x in variants[v](f"t_{k}{v}")]
    stop = g.pick("2", "3", "M - 1")
    return temps, [f"{o} ← {g.fexpr(d)} + b",
                   f"for ({it} in 0:{stop}) {{ " + "; ".join(body) + " }"]


def program_text(cases: list[Case] | tuple[Case, ...], name: str = "fuzz") -> str:
    """One program holding the statements of ``cases``."""
    params = list(INPUTS) + [x for c in cases for x in c.outputs]
    body = [f"    {t};" for c in cases for t in c.temporaries]
    body += [f"    {s};" for c in cases for s in c.statements]
    return f"{name}(\n    " + ",\n    ".join(params) + "\n) {\n" + "\n".join(body) + "\n}\n"


def batch(first_seed: int, count: int) -> list[Case]:
    return [generate_case(first_seed + i) for i in range(count)]
