"""Random programs in GT4Py's spelling (icon4py style), each field operator
written twice: as a ``@gtx.field_operator`` and as a plain Python function over
the NumPy values of :mod:`.gtx_reference`, which is the reference.

A case is a few field operators calling each other, called by the batch's
``@gtx.program`` with ``out=`` (one output or a tuple) and ``domain=`` (static
bounds, the runtime ``hs``/``he``/``k0``/``nlev``, sub-domains and level
ranges; or none).  Bodies hold local assignments, tuple unpacking of a call,
shifts through ``FieldOffset``s (``E2C[0]``, ``Koff[-1]``, whole neighbourhoods
reduced by ``neighbor_sum``/``max_over``/``min_over``, tables with ``-1``
under the sums), sparse fields (``Field[[EdgeDim, E2CDim], float]``),
``concat_where`` on levels (static bounds, a runtime ``n_lev``) and on a
runtime cell range, ``scan_operator``s (forward and backward, float or tuple
carries, a scan over both columns of a ``(float, bool)`` scan) inside
``concat_where`` branches and level domains, ``where``,
``astype`` (tuples too), ``broadcast``, and int32/float32/float64 mixes.
Half levels (GT4Py's staggered ``KHalfDim``, ``nlev + 1`` of them): half-level
parameters and outputs, ``x(KHalfDim ± 0.5)``/``y(KDim ± 1.5)`` between full
and half levels (scan operands too), ``KHalfOff``/``KHalfDim + 1`` shifts,
``concat_where`` on ``KHalfDim`` (``KHalfDim == nlev``) and ``domain=`` over it.
A ``concat_where`` may leave a gap between its pieces below a literal domain
start (``concat_where(KDim > 0, a(Koff[-2]), b)`` from level 2) or below the
runtime start ``k0``, as may a value read two levels below it: such a
program's calls with ``k0 = 1`` must be refused with a TensorIRError before
writing (``GtxCase.k0_min``), unless their domain is empty.

A third of the cases (drawn from a generator of their own, so that the
programs stay as they were) also make their calls directly from Python, as
icon4py does (``GtxCase.direct``): ``_f(a, b, out=f, domain={CellDim: (hs,
he), KDim: (k0, nlev)})`` with the program's domain (its bounds Python ints
at run time), without ``domain=`` where the reads allow the whole ``out=``,
or for two outputs a tuple of domains (the same dict twice, or one each);
some arguments by keyword; and half of them a field operator that only
broadcasts a number (no argument) or an argument of fewer dimensions (a
level profile, a horizontal field, a scalar), one result or two.

The generator keeps every read it makes within its field for every point of
the domain it writes, as GT4Py's domain inference requires: expressions carry
how many levels below and above they read (``lo``, ``hi``), and a
``concat_where`` branch only needs its own part of the domain.

Not generated: a scan whose result is shifted (``s(Koff[1])``), bound to a name
or passed to a field operator, since GT4Py extends its range by the uses'
domains, which the reference does not model."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NOC = -99          # no constraint on the levels read
MAX_REACH = 2      # the most levels an expression reads below or above
NK_MIN = 5         # the fewest levels of any run (SIZES)
DIRECT_SHARE = 1 / 3   # the cases whose statements are also made as direct calls

DIM = {"C": "CellDim", "E": "EdgeDim", "V": "VertexDim", "K": "KDim", "KH": "KHalfDim",
       "E2C": "E2CDim",
       "C2E": "C2EDim", "C2E2C": "C2E2CDim", "V2E": "V2EDim", "E2V": "E2VDim"}
# table: (source, target, neighbours, whether some are absent)
TABLES = {"E2C": ("C", "E", 2, False), "C2E": ("E", "C", 3, False),
          "C2E2C": ("C", "C", 3, True), "V2E": ("E", "V", 6, True), "E2V": ("V", "E", 2, False)}
SIZES = ({"N_C": 6, "N_E": 9, "N_V": 5, "N_K": 5},
         {"N_C": 8, "N_E": 12, "N_V": 7, "N_K": 7})
# runtime (hs, he, k0) of each run; nlev is the number of levels
BOUNDS = (((0, 5, 1), (1, 4, 2), (2, 2, 1)),
          ((0, 7, 2), (2, 6, 1), (6, 7, 1)))
DTYPES = {"float64": ("float64", "wpfloat", "gtx.float64", "float"),
          "float32": ("float32", "vpfloat", "gtx.float32"),
          "int32": ("int32", "gtx.int32"), "bool": ("bool",)}


@dataclass(frozen=True)
class T:
    """A type: horizontal dimension, vertical or not, element type, local
    dimension (a sparse field), on the half levels (``KHalfDim``) or not."""

    h: str | None
    k: bool
    dt: str
    loc: str | None = None
    s: bool = False

    def dims(self) -> tuple[str, ...]:
        return tuple(d for d in (self.h, self.vert if self.k else None, self.loc) if d)

    @property
    def vert(self) -> str:
        """The vertical dimension's letter(s): ``K`` or ``KH``."""
        return "KH" if self.s else "K"

    def with_(self, **kw) -> T:
        return T(**({"h": self.h, "k": self.k, "dt": self.dt, "loc": self.loc, "s": self.s}
                    | kw))

    @property
    def scalar(self) -> bool:
        return not self.dims()


@dataclass
class Input:
    name: str
    t: T
    half: bool = False     # one level more than the full levels


INPUTS = (
    Input("c1", T("C", True, "float64")), Input("c2", T("C", True, "float64")),
    Input("ch", T("C", True, "float64"), True), Input("cf", T("C", True, "float32")),
    Input("ci", T("C", True, "int32")), Input("e1", T("E", True, "float64")),
    Input("ef", T("E", True, "float32")), Input("eh", T("E", True, "float64"), True),
    Input("v1", T("V", True, "float64")), Input("c0", T("C", False, "float64")),
    Input("e0", T("E", False, "float64")), Input("v0", T("V", False, "float32")),
    Input("kw", T(None, True, "float64")),
    Input("g_e2c", T("E", False, "float64", "E2C")),
    Input("g_c2e", T("C", False, "float64", "C2E")),
    Input("g_c2e2c", T("C", False, "float64", "C2E2C")),
    Input("g_v2e", T("V", False, "float64", "V2E")),
    Input("alpha", T(None, False, "float64")), Input("beta", T(None, False, "float32")),
    # half levels: nlev + 1 of them (GT4Py's KHalf)
    Input("wh", T("C", True, "float64", s=True)), Input("zh", T("C", True, "float64", s=True)),
    Input("fh", T("C", True, "float32", s=True)), Input("uh", T("E", True, "float64", s=True)),
)
# int scalars: name, form (a bound's kind for the level bookkeeping)
INTS = (("hs", ("h",)), ("he", ("h",)), ("k0", ("k0",)), ("nlev", ("n", 0)))
OUT_TYPES = (T("C", True, "float64"), T("E", True, "float64"), T("V", True, "float64"),
             T("C", True, "float32"), T("E", True, "float32"), T("C", True, "int32"),
             T("C", False, "float64"), T("E", False, "float64"), T("V", False, "float32"),
             T("C", True, "float64", s=True), T("E", True, "float64", s=True),
             T("C", True, "float32", s=True))

HEADER = '''"""Generated by tensorir_dace.fuzz.gtx_programs."""
import numpy as np

from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (Dimension, DimensionKind, Dims, Field, FieldOffset, abs,
    astype, broadcast, concat_where, cos, float32, float64, int32, max_over, maximum, min_over,
    minimum, neighbor_sum, sin, sqrt, tanh, where)
from tensorir_dace.fuzz import gtx_reference as R

wpfloat, vpfloat = float64, float32
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
KHalfDim = Dimension("KHalf", kind=DimensionKind.VERTICAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
C2E2CDim = Dimension("C2E2C", DimensionKind.LOCAL)
V2EDim = Dimension("V2E", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2E2C = FieldOffset("C2E2C", source=CellDim, target=(CellDim, C2E2CDim))
V2E = FieldOffset("V2E", source=EdgeDim, target=(VertexDim, V2EDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))
KHalfOff = FieldOffset("KHalfOff", source=KHalfDim, target=(KHalfDim,))
'''


@dataclass(frozen=True)
class E:
    """An expression in both spellings, its type, the levels it reads below
    (``lo``) and above the full levels (``hi``), whether it holds a scan."""

    py: str
    np: str
    t: T
    lo: int = NOC
    hi: int = NOC
    scan: bool = False


def _m(*xs: int) -> int:
    return max(xs) if xs else NOC


def _join(t: T, py: str, np_: str, *parts: E) -> E:
    return E(py, np_, t, _m(*(p.lo for p in parts)), _m(*(p.hi for p in parts)),
             any(p.scan for p in parts))


@dataclass
class Var:
    name: str
    t: T
    lo: int = NOC
    hi: int = NOC


@dataclass
class Body:
    """A field operator's scope: its variables, int parameters (name, form) and
    statements in both spellings."""

    vars: list[Var]
    ints: list[tuple[str, tuple]]
    py: list[str] = field(default_factory=list)
    np: list[str] = field(default_factory=list)
    fresh: int = 0
    program: bool = False

    def new(self, stem: str = "t") -> str:
        self.fresh += 1
        return f"{stem}{self.fresh}"


def _low_ok(c: tuple | None, need: int) -> bool:
    """Whether a branch starting at bound ``c`` never reads below level 0."""
    if need == NOC or need <= 0:
        return True
    if c is None:
        return False
    v = {"s": lambda: c[1], "k0": lambda: 1, "n": lambda: NK_MIN - c[1], "h": lambda: 0}[c[0]]()
    return v >= need


def _high_ok(c: tuple | None, need: int) -> bool:
    """Whether a branch ending at bound ``c`` never reads above the field."""
    if need == NOC:
        return True
    if c is None:       # up to the domain's end: nlev + 1 on half levels
        return need <= -1
    if c[0] == "n":     # nlev - j: j < 0 on half levels
        return c[1] >= need
    if need <= 0:
        return True
    if c[0] == "s":
        return c[1] <= NK_MIN - need
    if c[0] == "n":
        return c[1] >= need
    if c[0] == "k0":
        return 2 <= NK_MIN - need
    return False


class GtxGen:
    """Random field operators of case ``k``."""

    def __init__(self, r: random.Random, k: int):
        self.r = r
        self.k = k
        self.defs: list[str] = []
        self.fresh = 0
        self.params: dict[str, list[str]] = {}     # a field operator's parameters

    def name(self, stem: str) -> str:
        self.fresh += 1
        return f"{stem}{self.k}_{self.fresh}"

    # ------------------------------------------------------------ spellings
    def dt(self, dt: str) -> str:
        return self.r.choice(DTYPES[dt])

    def ann(self, t: T) -> str:
        if t.scalar:
            return self.dt(t.dt)
        dims = ", ".join(DIM[d] for d in t.dims())
        return self.r.choice([f"Field[Dims[{dims}], {self.dt(t.dt)}]",
                              f"gtx.Field[gtx.Dims[{dims}], {self.dt(t.dt)}]",
                              f"Field[[{dims}], {self.dt(t.dt)}]"])

    def lit(self, dt: str) -> tuple[str, str]:
        r = self.r
        if dt == "float64":
            v = r.choice(["0.5", "1.5", "0.25", "2.0", "-0.75"])
            return r.choice([v, f'wpfloat("{v}")', f"float64({v})"]), v
        if dt == "float32":
            v = r.choice(["0.5", "1.5", "0.25", "2.0", "-0.75"])
            return r.choice([f'vpfloat("{v}")', f"float32({v})"]), f"np.float32({v})"
        if dt == "int32":
            v = r.choice(["1", "2", "-3", "0"])
            return r.choice([v, f"int32({v})"]), v
        v = r.choice(["True", "False"])
        return v, v

    # ------------------------------------------------------------ expressions
    def leaf(self, t: T, b: Body) -> E:
        r = self.r
        exact = [v for v in b.vars if v.t == t]
        if exact and r.random() < 0.85:
            v = r.choice(exact)
            return E(v.name, v.name, t, v.lo, v.hi)
        if t.loc is None and not t.scalar:
            other = [v for v in b.vars if v.t.dims() == t.dims() and v.t.dt != t.dt
                     and t.dt != "bool" and v.t.dt != "bool" and not (t.dt == "int32")]
            if other and r.random() < 0.6:
                v = r.choice(other)
                return E(f"astype({v.name}, {self.dt(t.dt)})", f'R.astype({v.name}, "{t.dt}")',
                         t, v.lo, v.hi)
            sub = [v for v in b.vars if v.t.dt == t.dt and v.t.loc is None
                   and set(v.t.dims()) < set(t.dims())
                   and (v.t.h is None or v.t.h == t.h)]
            if sub and r.random() < 0.7:
                v = r.choice(sub)
                return E(self.broadcast_py(v.name, t), f"R.broadcast({v.name}, {t.dims()!r})",
                         t, v.lo, v.hi)
        if t.scalar:
            scal = [v for v in b.vars if v.t == t]
            if scal and r.random() < 0.5:
                v = r.choice(scal)
                return E(v.name, v.name, t)
        py, np_ = self.lit(t.dt)
        if t.scalar:
            return E(py, np_, t)
        if t.dt == "int32" and py.lstrip("-").isdigit():    # a bare int is int64 on its own
            py = f"int32({py})"
        return E(self.broadcast_py(py, t), f"R.broadcast({np_}, {t.dims()!r})", t)

    def literal(self, t: T) -> E:
        """A literal broadcast to ``t``: defined everywhere."""
        py, np_ = self.lit(t.dt)
        if t.dt == "int32" and py.lstrip("-").isdigit():
            py = f"int32({py})"
        return E(self.broadcast_py(py, t), f"R.broadcast({np_}, {t.dims()!r})", t)

    def broadcast_py(self, x: str, t: T) -> str:
        return f"broadcast({x}, ({', '.join(DIM[d] for d in t.dims())},))"

    def operand(self, t: T, d: int, b: Body, ctx: dict) -> E:
        """The other operand of a binary operation on a ``t``: of type ``t``, of
        fewer dimensions, a literal or a scalar parameter."""
        r = self.r
        c = r.random()
        if c < 0.5:
            return self.ex(t, d, b, ctx)
        if c < 0.7:
            py, np_ = self.lit(t.dt)
            return E(py, np_, t.with_(h=None, k=False))
        subs = [s for s in (t.with_(k=False), t.with_(h=None)) if s.dims() and s != t]
        if subs and c < 0.9:
            return self.ex(r.choice(subs), d, b, ctx)
        scal = [v for v in b.vars if v.t == T(None, False, t.dt)]
        if scal:
            v = r.choice(scal)
            return E(v.name, v.name, v.t)
        return self.ex(t, d, b, ctx)

    def ex(self, t: T, d: int, b: Body, ctx: dict) -> E:
        """An expression of type ``t`` (``ctx``: whether a scan may be used here)."""
        r = self.r
        if t.loc is not None or d <= 0 or r.random() < 0.15:
            return self.leaf(t, b)
        if t.scalar:
            return self.leaf(t, b)
        if t.dt == "bool":
            return self.bexpr(t, d, b, ctx)
        x = lambda: self.ex(t, d - 1, b, ctx)  # noqa: E731
        o = lambda: self.operand(t, d - 1, b, ctx)  # noqa: E731
        num = t.dt != "bool"
        flt = t.dt in ("float64", "float32")
        choices: list = []

        def binop() -> E:
            op = r.choice(["+", "-", "*"])
            a, c = x(), o()
            if r.random() < 0.3:
                a, c = c, a
            if a.t.scalar and c.t.scalar:
                a = x()
            return _join(t, f"({a.py} {op} {c.py})", f"({a.np} {op} {c.np})", a, c)
        choices += [binop, binop, binop]
        if flt:
            def div() -> E:
                a, c = x(), o()
                one = self.lit(t.dt)
                return _join(t, f"({a.py} / (abs({c.py}) + {one[0].replace('-', '')}))",
                             f"({a.np} / (R.fabs({c.np}) + {one[1].replace('-', '')}))", a, c)

            def unary() -> E:
                fn = r.choice(["sin", "cos", "tanh", "abs", "sqrt"])
                a = x()
                if fn == "sqrt":
                    return _join(t, f"sqrt(abs({a.py}))", f"R.sqrt(R.fabs({a.np}))", a)
                if fn == "abs":
                    return _join(t, f"abs({a.py})", f"R.fabs({a.np})", a)
                return _join(t, f"{fn}({a.py})", f"R.{fn}({a.np})", a)
            choices += [div, unary]
        if num:
            def minmax() -> E:
                fn = r.choice(["maximum", "minimum"])
                a, c = x(), o()
                if a.t.scalar and c.t.scalar:
                    a = x()
                return _join(t, f"{fn}({a.py}, {c.py})", f"R.{fn}({a.np}, {c.np})", a, c)

            def where_() -> E:
                cond = self.bexpr(t.with_(dt="bool"), d - 1, b, ctx)
                a, c = x(), o()
                return _join(t, f"where({cond.py}, {a.py}, {c.py})",
                             f"R.where({cond.np}, {a.np}, {c.np})", cond, a, c)

            def cast() -> E:
                if t.dt == "int32":
                    return where_()
                src = r.choice([dt for dt in ("float64", "float32", "int32") if dt != t.dt])
                a = self.ex(t.with_(dt=src), d - 1, b, ctx)
                return _join(t, f"astype({a.py}, {self.dt(t.dt)})",
                             f'R.astype({a.np}, "{t.dt}")', a)
            choices += [minmax, where_, cast]
        if t.k:
            choices += [lambda: self.kshift(t, d, b, ctx), lambda: self.kcond(t, d, b, ctx),
                        lambda: self.stagger(t, d, b, ctx)]
        if t.h:
            choices += [lambda: self.hshift(t, d, b, ctx)]
            if t.h == "C" and any(n[1][0] == "h" for n in b.ints):
                choices.append(lambda: self.hcond(t, d, b, ctx))
        if d >= 2:
            choices += [lambda: self.call(t, d, b, ctx)]
        if t.k and not t.s and t.h and t.dt == "float64" and ctx.get("scan", True):
            choices += [lambda: self.scan(t, d, b)] * 2
        if t.k and t.h:
            def bcast() -> E:
                s = t.with_(k=False) if r.random() < 0.5 else t.with_(h=None)
                a = self.ex(s, d - 1, b, ctx)
                return _join(t, self.broadcast_py(a.py, t), f"R.broadcast({a.np}, {t.dims()!r})",
                             a)
            choices.append(bcast)
        return r.choice(choices)()

    def bexpr(self, t: T, d: int, b: Body, ctx: dict) -> E:
        r = self.r
        ft = t.with_(dt=r.choice(["float64", "float64", "float32", "int32"]))
        if d <= 0 or r.random() < 0.5:
            op = r.choice(["<", "<=", ">", ">=", "==", "!="] if ft.dt == "int32"
                          else ["<", "<=", ">", ">="])
            a, c = self.ex(ft, d - 1, b, ctx), self.operand(ft, d - 1, b, ctx)
            if a.t.scalar and c.t.scalar:
                a = self.ex(ft, 0, b, ctx)
            return _join(t, f"({a.py} {op} {c.py})", f"({a.np} {op} {c.np})", a, c)
        if r.random() < 0.2:
            a = self.bexpr(t, d - 1, b, ctx)
            return _join(t, f"(~{a.py})", f"(~{a.np})", a)
        op = r.choice(["&", "|"])
        a, c = self.bexpr(t, d - 1, b, ctx), self.bexpr(t, d - 1, b, ctx)
        return _join(t, f"({a.py} {op} {c.py})", f"({a.np} {op} {c.np})", a, c)

    def bind(self, e: E, b: Body) -> Var:
        """``e`` as a name of ``b`` (a new local unless it is one)."""
        if e.py.isidentifier() and any(v.name == e.py for v in b.vars):
            return next(v for v in b.vars if v.name == e.py)
        n = b.new()
        b.py.append(f"{n} = {e.py}")
        b.np.append(f"{n} = {e.np}")
        v = Var(n, e.t, e.lo, e.hi)
        b.vars.append(v)
        return v

    def kshift(self, t: T, d: int, b: Body, ctx: dict, offset: int | None = None) -> E:
        r = self.r
        for _ in range(3):
            a = self.ex(t, d - 1, b, ctx | {"scan": False})
            o = offset or r.choice([-1, 1, -1, 1, 2, -2])
            # the reference holds values on the levels [0, N_K + 1) only (GT4Py's
            # t1(Koff[1]) is defined at level -1 too)
            lo = a.lo if a.lo == NOC else max(a.lo, 0) - o
            hi = a.hi if a.hi == NOC else max(a.hi, -1) + o
            if not a.scan and lo <= MAX_REACH and hi <= MAX_REACH:
                v = self.bind(a, b)
                if not t.s:
                    return E(f"{v.name}(Koff[{o}])", f"R.koff({v.name}, {o})", t, lo, hi)
                off = r.choice([f"KHalfOff[{o}]", f"KHalfDim + {o}" if o > 0
                                else f"KHalfDim - {-o}"])
                return E(f"{v.name}({off})", f"R.koff({v.name}, {o})", t, lo, hi)
        return self.leaf(t, b)

    def stagger(self, t: T, d: int, b: Body, ctx: dict) -> E:
        """A value on ``t``'s levels read from the other ones by a half offset:
        ``x(KHalfDim + 0.5)`` of a full-level ``x``, ``y(KDim - 1.5)`` of a
        half-level ``y``."""
        r = self.r
        for _ in range(3):
            a = self.ex(t.with_(s=not t.s), d - 1, b, ctx | {"scan": False})
            o = r.choice([0.5, -0.5, 0.5, -0.5, 1.5, -1.5])
            # the level of a read at level 0 (the bookkeeping's whole shift)
            shift = int(o - 0.5) if t.s else int(o + 0.5)
            lo = a.lo if a.lo == NOC else max(a.lo, 0) - shift
            hi = a.hi if a.hi == NOC else max(a.hi, -1) + shift
            if not a.scan and lo <= MAX_REACH and hi <= MAX_REACH:
                v = self.bind(a, b)
                dim = DIM[t.vert]
                off = f"{dim} + {o}" if o > 0 else f"{dim} - {-o}"
                return E(f"{v.name}({off})", f'R.stagger({v.name}, {o}, "{t.vert}")', t,
                         lo, hi)
        return self.leaf(t, b)

    def hshift(self, t: T, d: int, b: Body, ctx: dict) -> E:
        """A value on ``t.h`` read from a neighbouring dimension."""
        r = self.r
        routes = [(n, s) for n, s in TABLES.items() if s[1] == t.h]
        name, (src, _, width, absent) = r.choice(routes)
        ctx = ctx | {"scan": False}
        a = self.ex(t.with_(h=src), d - 1, b, ctx)
        v = self.bind(a, b)
        kinds = ["sum"] + ([] if absent else ["slot", "slot", "max", "min"])
        if t.dt == "float64" and any(w.t == T(t.h, False, "float64", name) for w in b.vars):
            kinds.append("weighted")
        kind = r.choice(kinds)
        if kind == "slot":
            j = r.randrange(width)
            return E(f"{v.name}({name}[{j}])", f'R.slot({v.name}, "{name}", {j})', t, v.lo, v.hi)
        shifted_py, shifted_np = f"{v.name}({name})", f'R.nb({v.name}, "{name}")'
        if kind == "weighted":
            w = r.choice([w for w in b.vars if w.t == T(t.h, False, "float64", name)])
            shifted_py = r.choice([f"{w.name} * {shifted_py}", f"{shifted_py} * {w.name}"])
            shifted_np = f"{w.name} * {shifted_np}"
        fn, ref = {"sum": ("neighbor_sum", "nsum"), "weighted": ("neighbor_sum", "nsum"),
                   "max": ("max_over", "nmax"), "min": ("min_over", "nmin")}[kind]
        return E(f"{fn}({shifted_py}, axis={DIM[name]})", f"R.{ref}({shifted_np})", t,
                 v.lo, v.hi)

    def kcond(self, t: T, d: int, b: Body, ctx: dict) -> E:
        """``concat_where`` on a level condition: its x branch holds the levels
        [c0, c1)."""
        r = self.r
        ns = [(n, f) for n, f in b.ints if f[0] in ("n", "k0")]
        forms: list[tuple[str, str, tuple | None, tuple | None, str, str]] = []
        c = r.choice([0, 1, 2])
        K = DIM[t.vert]
        forms += [(f"{K} > {c}", "", ("s", c + 1), None, str(c + 1), "None"),
                  (f"{c} < {K}", "", ("s", c + 1), None, str(c + 1), "None"),
                  (f"{K} >= {c}", "", ("s", c), None, str(c), "None"),
                  (f"{K} < {c + 1}", "", None, ("s", c + 1), "None", str(c + 1)),
                  (f"{K} == {c}", "", ("s", c), ("s", c + 1), str(c), str(c + 1))]
        for n, f in ns:
            j = f[1] if f[0] == "n" else 0
            if f[0] == "n":
                forms += [(f"{K} < {n}", "", None, f, "None", n),
                          (f"{K} < {n} - 1", "", None, ("n", j + 1), "None", f"{n} - 1"),
                          (f"{K} == {n} - 1", "", ("n", j + 1), f, f"{n} - 1", n),
                          (f"({K} >= {c}) & ({K} < {n})", "", ("s", c), f, str(c), n),
                          (f"({n} - 1 <= {K})", "", ("n", j + 1), None, f"{n} - 1", "None")]
                if t.s:     # the half level below the last full one (the surface)
                    forms += [(f"{K} == {n}", "", f, ("n", j - 1), n, f"{n} + 1"),
                              (f"{K} >= {n}", "", f, None, n, "None"),
                              (f"{K} < {n}", "", None, f, "None", n)]
            else:
                forms += [(f"{K} >= {n}", "", f, None, n, "None"),
                          (f"{K} < {n}", "", None, f, "None", n)]
        gap_ok = ctx.get("scan", True) and not ctx.get("kcond") and not ctx.get("in_scan")
        if gap_ok and r.random() < 0.25:     # from level 1 (gaps below it, below)
            forms = [(f"{K} > 0", "", ("s", 1), None, "1", "None"),
                     (f"{K} >= 1", "", ("s", 1), None, "1", "None")]
        cond, _, c0, c1, lo_np, hi_np = r.choice(forms)
        scan_ok = ctx.get("scan", True) and not t.s
        # (gap_ok: a gap between the pieces below a literal domain start; not
        # nested (the enclosing pieces' levels), nor where the value is shifted
        # or scanned)
        ctx = ctx | {"kcond": True}
        y_split = c0 is not None and c1 is not None
        if scan_ok and t.h and t.dt == "float64" and r.random() < 0.3:
            x = self.scan(t, d - 1, b)      # icon4py's solvers: a scan from level 1
        elif gap_ok and c0 == ("s", 1) and c1 is None and r.random() < 0.4:
            x = self.kshift(t, d - 1, b, ctx, -2)   # level 1 in neither piece
        else:
            x = self.ex(t, d - 1, b, ctx | {"scan": scan_ok})
        ys = [t, t] + ([t.with_(k=False)] if t.h else [])
        if scan_ok and not y_split and t.h and t.dt == "float64" and r.random() < 0.2:
            y = self.scan(t, d - 1, b)
        else:
            y = self.ex(r.choice(ys), d - 1, b, ctx | {"scan": scan_ok and not y_split})
        # concat_where(KDim > 0, a(Koff[-2]), b) leaves level 1 undefined: a domain
        # from level 2 (lo: x.lo) needs none of it; such a value is then neither
        # shifted nor passed on (marked as a scan is)
        gap = gap_ok and c0 is not None and c0[0] == "s" and c0[1] >= 1 and c1 is None \
            and not _low_ok(c0, x.lo) and x.lo <= MAX_REACH and r.random() < 0.7
        if not gap and ((c0 is not None and not _low_ok(c0, x.lo)) or
                        (c1 is not None and not _high_ok(c1, x.hi))):
            x = self.literal(t)
        if (c0 is not None and not _high_ok(c0, y.hi)) or \
                (c1 is not None and not _low_ok(c1, y.lo)):
            y = self.literal(t)
        lo = _m(NOC if _low_ok(c0, x.lo) else x.lo,
                (y.lo if c0 is not None else NOC),
                (NOC if _low_ok(c1, y.lo) else y.lo) if c1 is not None else NOC)
        hi = _m(NOC if _high_ok(c1, x.hi) else x.hi,
                (NOC if _high_ok(c0, y.hi) else y.hi) if c0 is not None else NOC,
                y.hi if c1 is not None else NOC)
        # the reference holds the result on the levels [0, N_K + 1) only (GT4Py's
        # extends a branch without K past them)
        lo, hi = max(lo, 0), max(hi, -1)
        return E(f"concat_where({cond}, {x.py}, {y.py})",
                 f"R.cw_k(dom, {lo_np}, {hi_np}, lambda dom: {x.np}, lambda dom: {y.np}, "
                 f'"{t.vert}")', t, lo, hi, x.scan or y.scan or gap)

    def hcond(self, t: T, d: int, b: Body, ctx: dict) -> E:
        r = self.r
        hs = [n for n, f in b.ints if f[0] == "h"]
        lo, hi = r.choice(hs), r.choice(hs)
        spell = r.choice(["both", "lo", "hi"])
        dim = DIM[t.h or "C"]
        cond = {"both": f"({lo} <= {dim}) & ({dim} < {hi})", "lo": f"{dim} >= {lo}",
                "hi": f"{dim} < {hi}"}[spell]
        lo_np = lo if spell != "hi" else "None"
        hi_np = hi if spell != "lo" else "None"
        x = self.ex(t, d - 1, b, ctx)
        y = self.ex(r.choice([t, t.with_(k=False)] if t.k else [t]), d - 1, b, ctx)
        return E(f"concat_where({cond}, {x.py}, {y.py})",
                 f'R.cw_h("{t.h}", {lo_np}, {hi_np}, {x.np}, {y.np})', t,
                 _m(x.lo, y.lo), _m(x.hi, y.hi), x.scan or y.scan)

    # ------------------------------------------------------------ calls
    def function(self, caller: Body, rets: list[T], d: int, ctx: dict | None = None
                 ) -> tuple[str, list[E], list[str], list[str]]:
        """A new field operator returning ``rets`` and its arguments in
        ``caller``: (name, its results as seen by the caller, the arguments' two
        spellings)."""
        r = self.r
        name = self.name("_f")
        want = {t.h for t in rets} | {TABLES[n][0] for n in TABLES if TABLES[n][1] in
                                      {t.h for t in rets}}
        pool = [v for v in caller.vars if v.t.h in want or v.t.h is None]
        r.shuffle(pool)
        chosen = pool[:r.randint(1, 5)] or [r.choice(caller.vars)]
        for t in rets:      # something of each result's type, where the caller has it
            if not any(v.t == t for v in chosen):
                same = [v for v in caller.vars if v.t == t]
                if same:
                    chosen.append(r.choice(same))
        params: list[Var] = []
        args_py: list[str] = []
        args_np: list[str] = []
        anns: list[str] = []
        for i, v in enumerate(dict.fromkeys(c.name for c in chosen)):
            var = next(c for c in caller.vars if c.name == v)
            if caller.program or var.t.loc or var.t.scalar or r.random() < 0.6:
                a = E(var.name, var.name, var.t, var.lo, var.hi)
            else:
                a = self.ex(var.t, d - 2, caller, {"scan": False})
            p = f"x{i}"
            params.append(Var(p, var.t, a.lo, a.hi))
            args_py.append(a.py)
            args_np.append(a.np)
            anns.append(f"{p}: {self.ann(var.t)}")
        ints: list[tuple[str, tuple]] = []
        for n, f in caller.ints:
            if r.random() < 0.5:
                p = f"n{len(ints)}"
                if f[0] == "n" and r.random() < 0.4:
                    args_py.append(f"{n} - 1")
                    args_np.append(f"{n} - 1")
                    ints.append((p, ("n", f[1] + 1)))
                else:
                    args_py.append(n)
                    args_np.append(n)
                    ints.append((p, f))
                anns.append(f"{p}: {r.choice(DTYPES['int32'])}")
        body = Body(list(params), ints)
        ret_py = ret_np = ""
        if len(rets) == 2 and all(t.dt == "float32" for t in rets) and r.random() < 0.4:
            # astype of a tuple: both results computed in float64
            results = [self.ex(t.with_(dt="float64"), d, body, {"scan": True}) for t in rets]
            ret_py = f"astype(({results[0].py}, {results[1].py}), {self.dt('float32')})"
            ret_np = f'R.astype(({results[0].np}, {results[1].np}), "float32")'
        elif len(rets) == 2 and rets[0].dims() == rets[1].dims() and r.random() < 0.3:
            results, ret_py, ret_np = self.tuple_choice(rets, d, body)
        else:
            results = [self.ex(t, d, body, ctx or {"scan": True}) for t in rets]
            ret_py = ", ".join(x.py for x in results)
            ret_np = ", ".join(x.np for x in results)
            if len(rets) > 1 and r.random() < 0.5:
                ret_py = f"({ret_py})"
        ret_ann = self.ann(rets[0]) if len(rets) == 1 else \
            f"tuple[{', '.join(self.ann(t) for t in rets)}]"
        sig = ",\n    ".join(anns)
        lines_py = "".join(f"    {s}\n" for s in body.py)
        lines_np = "".join(f"    {s}\n" for s in body.np)
        self.defs.append(f"@gtx.field_operator\ndef {name}(\n    {sig},\n) -> {ret_ann}:\n"
                         f"{lines_py}    return {ret_py}\n")
        params_np = ", ".join(["dom"] + [v.name for v in params] + [n for n, _ in ints])
        self.defs.append(f"def ref{name}({params_np}):\n{lines_np}    return {ret_np}\n")
        self.params[name] = [v.name for v in params] + [n for n, _ in ints]
        return name, results, args_py, args_np

    def tuple_choice(self, rets: list[T], d: int, b: Body) -> tuple[list[E], str, str]:
        """``where(c, (x0, x1), (y0, y1))`` or ``concat_where(KDim > c, …)`` of
        tuples: (the parts, the two spellings)."""
        r = self.r
        xs = [self.ex(t, d - 1, b, {"scan": False}) for t in rets]
        ys = [self.ex(t, d - 1, b, {"scan": False}) for t in rets]
        tx = f"({xs[0].py}, {xs[1].py})", f"({xs[0].np}, {xs[1].np})"
        ty = f"({ys[0].py}, {ys[1].py})", f"({ys[0].np}, {ys[1].np})"
        if rets[0].k and r.random() < 0.6:
            c = r.choice([0, 1])
            c0 = ("s", c + 1)
            xs = [x if _low_ok(c0, x.lo) else self.literal(t) for t, x in zip(rets, xs)]
            ys = [y if _high_ok(c0, y.hi) else self.literal(t) for t, y in zip(rets, ys)]
            tx = f"({xs[0].py}, {xs[1].py})", f"({xs[0].np}, {xs[1].np})"
            ty = f"({ys[0].py}, {ys[1].py})", f"({ys[0].np}, {ys[1].np})"
            parts = [E("", "", t, max(_m(NOC if _low_ok(c0, x.lo) else x.lo, y.lo), 0),
                       max(_m(x.hi, NOC if _high_ok(c0, y.hi) else y.hi), -1))
                     for t, x, y in zip(rets, xs, ys)]
            return (parts, f"concat_where({DIM[rets[0].vert]} > {c}, {tx[0]}, {ty[0]})",
                    f"R.cw_k(dom, {c + 1}, None, lambda dom: {tx[1]}, lambda dom: {ty[1]}, "
                    f'"{rets[0].vert}")')
        cond = self.bexpr(rets[0].with_(dt="bool"), d - 1, b, {"scan": False})
        parts = [_join(t, "", "", cond, x, y) for t, x, y in zip(rets, xs, ys)]
        return (parts, f"where({cond.py}, {tx[0]}, {ty[0]})",
                f"R.where({cond.np}, {tx[1]}, {ty[1]})")

    def call(self, t: T, d: int, b: Body, ctx: dict) -> E:
        """A call of a new field operator: of one result, one of two taken by
        ``[i]``, or two unpacked into locals."""
        r = self.r
        c = r.random()
        if c < 0.6:
            name, (one,), apy, anp = self.function(b, [t], d - 1, ctx)
            return E(f"{name}({', '.join(apy)})", f"ref{name}(dom, {', '.join(anp)})", t,
                     one.lo, one.hi, one.scan)
        other = r.choice([t, t.with_(dt="float64"), t.with_(k=False) if t.h else t])
        rets = [t, other] if r.random() < 0.5 else [other, t]
        i = rets.index(t)
        name, res, apy, anp = self.function(b, rets, d - 1, ctx)
        call_py, call_np = f"{name}({', '.join(apy)})", f"ref{name}(dom, {', '.join(anp)})"
        if c < 0.8 or any(x.scan for x in res):
            return E(f"{call_py}[{i}]", f"{call_np}[{i}]", t, res[i].lo, res[i].hi,
                     res[i].scan)
        n0, n1 = b.new(), b.new()
        b.py.append(f"{n0}, {n1} = {call_py}")
        b.np.append(f"{n0}, {n1} = {call_np}")
        b.vars += [Var(n0, rets[0], res[0].lo, res[0].hi), Var(n1, rets[1], res[1].lo,
                                                                res[1].hi)]
        n = (n0, n1)[i]
        return E(n, n, t, res[i].lo, res[i].hi)

    def scan(self, t: T, d: int, b: Body) -> E:
        """A scan operator over KDim on arguments built here."""
        r = self.r
        if r.random() < 0.4:
            return self.chained_scan(t, d, b)
        name = self.name("_sc")
        forward = r.choice([True, False])
        nargs = r.randint(1, 3)
        args = []
        for i in range(nargs):
            at = r.choice([t, t, t.with_(k=False)]) if i else t
            inner = {"scan": False, "in_scan": True}
            # half-level operands read onto the full levels (y(KDim + 0.5))
            args.append(self.stagger(at, d - 1, b, inner) if at.k and r.random() < 0.25
                        else self.ex(at, d - 1, b, inner))
        ps = [f"x{i}" for i in range(nargs)]
        width = 2 if r.random() < 0.4 else 1
        inits = [r.choice(["0.0", "1.0", "-0.5"]) for _ in range(width)]
        lines_py, lines_np = [], []
        for _ in range(width):
            s = "state" if width == 1 else f"state[{r.randrange(width)}]"
            e_py, e_np = self.scalar_expr(ps, 2)
            w = r.choice(["0.5", "0.25", "-0.5"])
            lines_py.append(f"{w} * {s} + {e_py}")
            lines_np.append(f"{w} * {s} + {e_np}")
        fl = r.choice(["float", "wpfloat", "float64"])
        st = fl if width == 1 else f"tuple[{fl}, {fl}]"
        init = inits[0] if width == 1 else f"({', '.join(inits)})"
        ret_py = lines_py[0] if width == 1 else f"({', '.join(lines_py)})"
        ret_np = lines_np[0] if width == 1 else f"({', '.join(lines_np)})"
        sig = ", ".join(f"{p}: {fl}" for p in ps)
        self.defs.append(f"@gtx.scan_operator(axis=KDim, forward={forward}, init={init})\n"
                         f"def {name}(state: {st}, {sig}) -> {st}:\n    return {ret_py}\n")
        self.defs.append(f"def ref{name}(state, {', '.join(ps)}):\n    return {ret_np}\n")
        call_py = f"{name}({', '.join(a.py for a in args)})"
        call_np = (f"R.scan(dom, ref{name}, {forward}, {init}, "
                   f"{', '.join(a.np for a in args)})")
        if width == 2:
            i = r.randrange(2)
            call_py, call_np = f"{call_py}[{i}]", f"{call_np}[{i}]"
        return E(call_py, call_np, t, _m(*(a.lo for a in args)), _m(*(a.hi for a in args)),
                 True)

    def chained_scan(self, t: T, d: int, b: Body) -> E:
        """A scan over both columns of a scan with a ``(float, bool)`` state, the
        flag choosing between two values (a forward scan's result read by a
        backward one runs in one column loop with a bool column buffer)."""
        r = self.r
        first, second = self.name("_sc"), self.name("_sc")
        x = self.ex(t, d - 1, b, {"scan": False, "in_scan": True})
        fl = r.choice(["float", "wpfloat", "float64"])
        e_py, e_np = self.scalar_expr(["x0"], 2)
        limit = r.choice(["0.0", "0.25", "-0.5"])
        flag_py, flag_np = r.choice([
            (f"x0 > {limit}", f"x0 > {limit}"),
            (f"state[1] | (x0 > {limit})", f"R.where(state[1], True, x0 > {limit})"),
            (f"(x0 < {limit}) & (state[0] > 0.0)", f"(x0 < {limit}) & (state[0] > 0.0)")])
        w = r.choice(["0.5", "0.25", "-0.5"])
        forward = [r.choice([True, False]) for _ in range(2)]
        self.defs.append(
            f"@gtx.scan_operator(axis=KDim, forward={forward[0]}, init=(0.0, False))\n"
            f"def {first}(state: tuple[{fl}, bool], x0: {fl}) -> tuple[{fl}, bool]:\n"
            f"    return ({w} * state[0] + {e_py}, {flag_py})\n")
        self.defs.append(f"def ref{first}(state, x0):\n"
                         f"    return ({w} * state[0] + {e_np}, {flag_np})\n")
        other_py, other_np = self.scalar_expr(["v"], 1)
        self.defs.append(
            f"@gtx.scan_operator(axis=KDim, forward={forward[1]}, init=1.0)\n"
            f"def {second}(state: {fl}, v: {fl}, f: bool) -> {fl}:\n"
            f"    return 0.5 * state + (v if f else {other_py})\n")
        self.defs.append(f"def ref{second}(state, v, f):\n"
                         f"    return 0.5 * state + R.where(f, v, {other_np})\n")
        inner_py = f"{first}({x.py})"
        inner_np = f"R.scan(dom, ref{first}, {forward[0]}, (0.0, False), {x.np})"
        call_py = f"{second}({inner_py}[0], {inner_py}[1])"
        call_np = f"R.scan(dom, ref{second}, {forward[1]}, 1.0, {inner_np}[0], {inner_np}[1])"
        return E(call_py, call_np, t, x.lo, x.hi, True)

    def scalar_expr(self, ps: list[str], d: int) -> tuple[str, str]:
        r = self.r
        if d == 0 or r.random() < 0.3:
            if r.random() < 0.8:
                p = r.choice(ps)
                return p, p
            v = r.choice(["0.5", "2.0", "1.0"])
            return v, v
        a, c = self.scalar_expr(ps, d - 1), self.scalar_expr(ps, d - 1)
        op = r.choice(["+", "-", "*", "max", "min"])
        if op in "+-*":
            return f"({a[0]} {op} {c[0]})", f"({a[1]} {op} {c[1]})"
        fn = {"max": "maximum", "min": "minimum"}[op]
        return f"{fn}({a[0]}, {c[0]})", f"R.{fn}({a[1]}, {c[1]})"


@dataclass
class Direct:
    """A case's statements as direct calls of its field operators from Python, as
    icon4py makes them (``op(a, b, out=f, domain={CellDim: (hs, he), …},
    offset_provider=…)``): the statements of ``direct_K(a, call)`` (each
    ``call(i, op, …)``), those of its reference, the outputs of calls the
    program does not make (broadcasts), per call its outputs and the smallest
    runtime start ``k0`` its domains allow, and whether compiled calls leave
    out ``backend=`` (found by the source)."""

    py: list[str] = field(default_factory=list)
    np: list[str] = field(default_factory=list)
    outputs: list[tuple[str, T]] = field(default_factory=list)
    calls: list[tuple[list[str], int]] = field(default_factory=list)
    plain: bool = False


@dataclass
class GtxCase:
    """One case: its definitions in both spellings, its outputs (name, type) and
    its program statements (Python) and reference statements."""

    seed: int
    defs: list[str] = field(default_factory=list)
    outputs: list[tuple[str, T]] = field(default_factory=list)
    py_body: list[str] = field(default_factory=list)
    np_body: list[str] = field(default_factory=list)
    # the smallest runtime start k0 its domains allow (a larger one where a
    # value reads two levels below it: calls with a smaller k0 are refused)
    k0_min: int = 1
    # its statements also made as direct calls (a share of the cases)
    direct: Direct | None = None


def _domain(g: GtxGen, outs: list[tuple[str, T]], results: list[E],
            r: random.Random | None = None, whole: bool = True
            ) -> tuple[str | None, dict[str, tuple[str, str]]]:
    """A ``domain=`` for ``outs`` keeping the reads of ``results`` in their fields:
    (its Python spelling or None, the bounds by dimension); ``whole``: None
    (no ``domain=``) may be chosen."""
    r = r or g.r
    t = outs[0][1]
    lo, hi = _m(*(x.lo for x in results)), _m(*(x.hi for x in results))
    if whole and r.random() < 0.15 and lo <= 0 and hi <= (-1 if t.s else 0):
        return None, {}
    bounds: dict[str, tuple[str, str]] = {}
    if t.h:
        bounds[t.h] = r.choice([("hs", "he"), ("hs", "he"), ("1", "4"), ("0", "3"), ("2", "he")])
    if t.k:
        # ("k0", 2): a start of k0 where two levels below it are read (a shift, or
        # a concat_where leaving a gap below level 2) holds for k0 >= 2 only
        lows = [x for x, need in (("0", 0), ("1", 1), ("2", 2), ("k0", max(lo, 1)))
                if lo <= need]
        highs = [x for x, need in (("nlev", 0), ("nlev - 1", 1), ("nlev - 2", 2),
                                   (str(NK_MIN - 2), 2), (str(NK_MIN - 1), 1)) if hi <= need]
        if t.s:     # half levels: nlev + 1 of them
            highs += [x for x, need in (("nlev + 1", -1), ("nlev + 1", -1), (str(NK_MIN), 0))
                      if hi <= need]
        bounds[t.vert] = (r.choice(lows), r.choice(highs))
    py = "{" + ", ".join(f"{DIM[dim]}: ({a}, {b})" for dim, (a, b) in bounds.items()) + "}"
    return py, bounds


def _k0_min(bounds: dict[str, tuple[str, str]], results: list[E]) -> int:
    """The smallest runtime start ``k0`` a domain of these ``bounds`` allows."""
    if any(lo_hi[0] == "k0" for lo_hi in bounds.values()):
        return max(1, *(x.lo for x in results))
    return 1


def _writes(name: str, anp: list[str], outs: list[tuple[str, T]],
            domains: list[dict[str, tuple[str, str]]], res: str) -> list[str]:
    """The reference of a call of ``name`` writing ``outs``, each on its own
    domain's bounds (the same dict for all, or one each)."""
    lines = []
    calls: dict[tuple[str, str], str] = {}
    for i, ((o, t), bounds) in enumerate(zip(outs, domains)):
        kdom = bounds.get("K", ("0", "nlev"))      # the levels a scan runs on
        if kdom not in calls:
            calls[kdom] = res if not calls else f"{res}_{i}"
            lines.append(f"{calls[kdom]} = ref{name}(({kdom[0]}, {kdom[1]}), {', '.join(anp)})")
        value = calls[kdom] if len(outs) == 1 else f"{calls[kdom]}[{i}]"
        dom_np = "{" + ", ".join(f'"{dim}": ({a}, {b})' for dim, (a, b) in bounds.items()) + "}"
        lines.append(f"R.write(a, {o!r}, {value}, {t.dims()!r}, {dom_np}, bad)")
    return lines


def generate_gtx_case(seed: int, index: int | None = None) -> GtxCase:
    """The case of ``seed``; its names hold ``index`` (default: the seed)."""
    r = random.Random(seed)
    k = seed if index is None else index
    g = GtxGen(r, k)
    case = GtxCase(seed)
    prog = Body([Var(i.name, i.t, 0 if i.t.k else NOC,
                     (-1 if i.half or i.t.s else 0) if i.t.k else NOC)
                 for i in INPUTS], list(INTS), program=True)
    statements = 2 if r.random() < 0.3 else 1
    made = []
    for s in range(statements):
        rets = [r.choice(OUT_TYPES)]
        if r.random() < 0.3:
            rets.append(r.choice([x for x in OUT_TYPES if x.h == rets[0].h and x.k == rets[0].k
                                  and x.s == rets[0].s]))
        outs = [(f"o{k}_{s}{i}", t) for i, t in enumerate(rets)]
        d = r.randint(2, 4)
        name, results, apy, anp = g.function(prog, rets, d)
        domain_py, bounds = _domain(g, outs, results)
        case.k0_min = max(case.k0_min, _k0_min(bounds, results))
        target = outs[0][0] if len(outs) == 1 else f"({', '.join(o for o, _ in outs)})"
        case.py_body.append(f"{name}({', '.join(apy)}, out={target}"
                            + (f", domain={domain_py})" if domain_py else ")"))
        case.np_body += _writes(name, anp, outs, [bounds] * len(outs), f"_r{k}_{s}")
        case.outputs += outs
        for o, t in outs:      # a later statement may read what this one wrote
            prog.vars.append(Var(o, t, 0 if t.k else NOC, (-1 if t.s else 0) if t.k else NOC))
        made.append((name, results, apy, anp, outs, domain_py, bounds))
    case.defs = g.defs
    # drawn from a generator of its own: the cases' programs stay as they were
    direct = random.Random(f"gtx direct {seed}")
    if direct.random() < DIRECT_SHARE:
        g.r = direct
        case.direct = Direct(plain=direct.random() < 0.5)
        for s, call in enumerate(made):
            _direct_call(g, case.direct, s, *call)
        if direct.random() < 0.5:
            _broadcast_call(g, case.direct, len(made))
    return case


def _direct_call(g: GtxGen, d: Direct, s: int, name: str, results: list[E], apy: list[str],
                 anp: list[str], outs: list[tuple[str, T]], domain_py: str | None,
                 bounds: dict[str, tuple[str, str]]) -> None:
    """Statement ``s`` of the program as a direct call: on the program's domain,
    on the whole of ``out=`` (no ``domain=``) where the reads allow it, or for
    two outputs on a tuple of domains (the same dict twice, or one each)."""
    r = g.r
    t = outs[0][1]
    lo, hi = _m(*(x.lo for x in results)), _m(*(x.hi for x in results))
    forms = ["same", "same"]
    if lo <= 0 and hi <= (-1 if t.s else 0):
        forms.append("whole")
    if len(outs) > 1:
        forms += ["tuple", "each", "each"]
    form = r.choice(forms)
    if form == "whole":
        domain_py, bounds = None, {}
    if form in ("same", "whole"):
        _call(g, d, s, name, apy, anp, outs, [(domain_py, bounds)], _k0_min(bounds, results),
              False)
        return
    if form == "tuple":
        if domain_py is None:
            domain_py, bounds = _domain(g, outs, results, whole=False)
        doms = [(domain_py, bounds)] * len(outs)
        k0_min = _k0_min(bounds, results)
    else:
        doms = [_domain(g, [o], [x], whole=False) for o, x in zip(outs, results)]
        k0_min = max(_k0_min(b, [x]) for (_, b), x in zip(doms, results))
    _call(g, d, s, name, apy, anp, outs, doms, k0_min, True)


def _call(g: GtxGen, d: Direct, s: int, name: str, apy: list[str], anp: list[str],
          outs: list[tuple[str, T]], doms: list[tuple[str | None, dict]], k0_min: int,
          per_output: bool) -> None:
    """A direct call of ``name``: its arguments (a suffix of them by keyword,
    sometimes), ``out=`` and ``domain=`` (``per_output``: a tuple of domains)."""
    r = g.r
    params = g.params.get(name, [])
    args = list(apy)
    if params and len(params) == len(args) and r.random() < 0.3:
        j = r.randrange(len(args))
        named = [f"{p}={a}" for p, a in zip(params[j:], args[j:])]
        r.shuffle(named)
        args = args[:j] + named
    target = outs[0][0] if len(outs) == 1 else f"({', '.join(o for o, _ in outs)})"
    if per_output:
        domain = f", domain=({', '.join(str(p) for p, _ in doms)})"
    else:
        domain = f", domain={doms[0][0]}" if doms[0][0] else ""
    d.py.append(f"call({s}, {name}, {''.join(a + ', ' for a in args)}out={target}{domain})")
    d.np += _writes(name, anp, outs, [b for _, b in doms] if per_output
                    else [doms[0][1]] * len(outs), f"_d{g.k}_{s}")
    d.calls.append(([o for o, _ in outs], k0_min))


# inputs a top-level broadcast may take: a profile on levels, a horizontal
# field, a scalar
BROADCAST_SOURCES = ("kw", "c0", "e0", "v0", "alpha", "beta")


def _broadcast_targets(src: T | None, dt: str) -> list[T]:
    """The types a broadcast of ``src`` (None: a number of ``dt``) may have."""
    out = []
    for h in ("C", "E", "V"):
        for k, s in ((True, False), (True, True), (False, False)):
            t = T(h, k, src.dt if src else dt, s=s)
            if src is None or (set(src.dims()) < set(t.dims())
                               and (src.h is None or src.h == h)
                               and (not src.k or not t.s)):
                out.append(t)
    return out


def _broadcast_call(g: GtxGen, d: Direct, s: int) -> None:
    """A direct call of a field operator that only broadcasts: a number (no
    argument, icon4py's ``_set_zero_c_k``) or an argument of fewer dimensions
    (``broadcast(k_profile, (CellDim, KDim))``), one result or two."""
    r = g.r
    name = g.name("_b")
    inputs = {i.name: i for i in INPUTS}
    src = inputs[r.choice(BROADCAST_SOURCES)] if r.random() < 0.6 else None
    t = r.choice(_broadcast_targets(src.t if src else None,
                                    r.choice(["float64", "float64", "float32", "int32"])))
    parts: list[Input | None] = [src]
    if r.random() < 0.3:     # a second result of the same dimensions
        others = [i for i in INPUTS if i.name in BROADCAST_SOURCES
                  and t in _broadcast_targets(i.t, t.dt)]
        parts.append(r.choice(others) if others and r.random() < 0.5 else None)
    params: list[str] = []
    args: list[str] = []
    rets_py, rets_np = [], []
    for p in parts:
        if p is None:
            py, np_ = g.lit(t.dt)
        else:
            py = np_ = f"x{len(params)}"
            params.append(f"{py}: {g.ann(p.t)}")
            args.append(p.name)
        rets_py.append(g.broadcast_py(py, t))
        rets_np.append(f"R.broadcast({np_}, {t.dims()!r})")
    ann = g.ann(t) if len(parts) == 1 else f"tuple[{g.ann(t)}, {g.ann(t)}]"
    g.defs.append(f"@gtx.field_operator\ndef {name}({', '.join(params)}) -> {ann}:\n"
                  f"    return {', '.join(rets_py)}\n")
    g.defs.append(f"def ref{name}({', '.join(['dom'] + [f'x{i}' for i in range(len(args))])}):"
                  f"\n    return {', '.join(rets_np)}\n")
    g.params[name] = [f"x{i}" for i in range(len(args))]
    outs = [(f"o{g.k}_d{s}{i}", t) for i in range(len(parts))]
    d.outputs += outs
    whole = E("", "", t)         # defined everywhere
    form = r.choice(["whole", "one", "one"] + (["tuple", "each"] if len(outs) > 1 else []))
    if form == "whole":
        doms: list[tuple[str | None, dict]] = [(None, {})]
    elif form == "each":
        doms = [_domain(g, [o], [whole], whole=False) for o in outs]
    else:
        doms = [_domain(g, outs, [whole], whole=False)] * (len(outs) if form == "tuple" else 1)
    _call(g, d, s, name, args, args, outs, doms, 1, form in ("tuple", "each"))


def gtx_batch(first_seed: int, count: int) -> list[GtxCase]:
    return [generate_gtx_case(first_seed + i) for i in range(count)]


def gtx_source(cases: list[GtxCase], name: str = "fuzz") -> str:
    """The module: definitions, the program, ``reference(a, bad)``, and for the
    cases made as direct calls ``direct_K(a, call)``, ``direct_reference_K(a,
    bad)`` and ``DIRECT``, a dict per case (its seed, the two functions, per call
    its outputs and smallest ``k0``, whether compiled calls name no backend)."""
    params = [f"{i.name}: {_plain_ann(i.t)}" for i in INPUTS]
    params += [f"{o}: {_plain_ann(t)}" for c in cases for o, t in c.outputs]
    params += [f"{n}: gtx.int32" for n, _ in INTS]
    defs = "\n\n".join(d for c in cases for d in c.defs)
    body = [f"    {line}" for c in cases for line in c.py_body] or ["    pass"]
    prog = ("@gtx.program\ndef " + name + "(\n        " + ",\n        ".join(params) + "):\n"
            + "\n".join(body) + "\n")
    ref = ["def reference(a, bad):", '    """The NumPy reference: writes the outputs in a."""']
    ref += _unpack()
    for c in cases:
        ref += _reference_lines(c.np_body, c.outputs)
    direct = [c for c in cases if c.direct is not None]
    more = "".join(_direct_source(c) for c in direct)
    table = "".join(f"\n    {{'seed': {c.seed}, 'run': direct_{c.seed}, "
                    f"'reference': direct_reference_{c.seed}, 'calls': {c.direct.calls!r}, "
                    f"'plain': {c.direct.plain}}}," for c in direct if c.direct)
    return (HEADER + "\n\n" + defs + "\n\n" + prog + "\n\n" + "\n".join(ref) + "\n" + more
            + f"\n\nDIRECT = [{table}\n]\n")


def _unpack() -> list[str]:
    """The reference's inputs: ints, and values of the arrays."""
    lines = ["    " + ", ".join(n for n, _ in INTS) + " = " + ", ".join(
        f'a["{n}"]' for n, _ in INTS)]
    lines += [f"    {i.name} = R.field(a[{i.name!r}], {i.t.dims()!r})" if i.t.dims()
              else f"    {i.name} = a[{i.name!r}]" for i in INPUTS]
    return lines


def _reference_lines(body: list[str], outputs: list[tuple[str, T]]) -> list[str]:
    """Reference statements, each output read again after it is written."""
    lines = []
    types = dict(outputs)
    for line in body:
        lines.append(f"    {line}")
        if line.startswith("R.write("):
            o = line.split("'")[1]
            lines.append(f"    {o} = R.field(a[{o!r}], {types[o].dims()!r})")
    return lines


def _direct_source(c: GtxCase) -> str:
    """``direct_K(a, call)``: the case's direct calls, each ``call(i, op, *args,
    **kw)`` (the caller adds ``offset_provider=`` and ``backend=``), and its
    reference ``direct_reference_K(a, bad)``."""
    assert c.direct is not None
    outputs = c.outputs + c.direct.outputs
    names = [n for n, _ in INTS] + [i.name for i in INPUTS] + [o for o, _ in outputs]
    run = [f"def direct_{c.seed}(a, call):",
           f'    """The calls of case {c.seed} made directly from Python."""']
    run += [f"    {n} = a[{n!r}]" for n in names]
    run += [f"    {line}" for line in c.direct.py]
    ref = [f"def direct_reference_{c.seed}(a, bad):",
           '    """The NumPy reference of the direct calls: writes their outputs in a."""']
    ref += _unpack() + _reference_lines(c.direct.np, outputs)
    return "\n\n" + "\n".join(run) + "\n\n\n" + "\n".join(ref) + "\n"


def _plain_ann(t: T) -> str:
    if t.scalar:
        return {"float64": "gtx.float64", "float32": "gtx.float32", "int32": "gtx.int32"}[t.dt]
    return f"gtx.Field[gtx.Dims[{', '.join(DIM[d] for d in t.dims())}], gtx.{t.dt}]"
