"""C++ code for a typed expression evaluated at one point of its domain.

An *environment* maps dimension names to the coordinate (:class:`Idx`) of the
current point.  Shifts only change the environment: a Cartesian shift adds
an offset, an unstructured shift replaces the destination coordinate by an
index read from the neighbour table (guarded, so an absent neighbour, or an
entry outside the operand's interval, is never read).  Lambda parameters are
bound to their argument expressions and evaluated where they are used, so a
shifted parameter reads its argument at the shifted point.

Some nodes are *materialised* instead: computed by their own map (or
library node) into a transient array, which the consumer then reads.  Which
ones depends on the mode: without fusion every element-wise operation is
its own map; with fusion only reductions, scans and non-trivial operands of
unstructured shifts are.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol

import sympy

from .. import ir
from ..errors import LoweringError
from .tasklet import TaskletBuilder
from .values import (
    CPP_TYPES,
    ArrayInfo,
    Binding,
    CScope,
    Deferred,
    Idx,
    PointValue,
    ScalarData,
    Stored,
    SymbolValue,
    absent_names,
    ccode,
    lambda_bindings,
    leaves_of,
    map_leaves,
)

Env = dict[str, Idx]


class Materializer(Protocol):
    """What point code needs of the program lowering (``ProgramLowering``): a
    value computed over its whole domain into transient arrays."""

    def materialize(self, e: ir.Expr, scope: CScope, force: bool = False) -> Stored: ...

    def bound(self, expr: sympy.Expr) -> sympy.Expr: ...

BINARY_CPP = {"plus": "+", "minus": "-", "multiplies": "*", "eq": "==", "neq": "!=",
              "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
              "and": "&&", "or": "||"}
UNARY_CPP = {"sqrt": "sqrt", "exp": "exp", "log": "log", "log10": "log10", "log2": "log2",
             "sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos",
             "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
             "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "floor": "floor",
             "ceil": "ceil", "trunc": "trunc", "cbrt": "cbrt", "gamma": "tgamma"}
ELEMENTWISE = frozenset(ir.ARITHMETIC + ir.COMPARISONS + ir.LOGICAL + ir.MATH_FUNCTIONS
                        + ir.PREDICATES + ("cast", "if", "can_deref", "concat"))
# Builtins whose value is absent where an operand is (as in the interpreter).
PRESENCE_THROUGH = frozenset(ir.ARITHMETIC + ir.COMPARISONS + ir.LOGICAL + ir.MATH_FUNCTIONS
                             + ir.PREDICATES + ("cast", "make_tuple"))
SHIFTS = frozenset(("cartesian_shift", "unstructured_shift", "shift_init", "shift_apply"))


def head_name(e: ir.Expr) -> str | None:
    while isinstance(e, ir.Call):
        e = e.func
    return e.name if isinstance(e, ir.Sym) and e.name in ir.BUILTINS else None


def is_leaf(e: ir.Expr) -> bool:
    """A name, or only re-indexing of a name: nothing worth computing once."""
    match e:
        case ir.Sym() | ir.Literal():
            return True
        case ir.Call(func=ir.Call(func=ir.Sym(name=n)), args=(x,)) if n in SHIFTS:
            return is_leaf(x)
        case ir.Call(func=ir.Sym(name="tuple_get" | "subset"), args=(x, *_)):
            return is_leaf(x)
    return False


def literal_code(value, dtype: ir.ScalarType) -> str:
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.is_int:
        n = int(value)
        return f"{n}LL" if dtype.name == "int64" else str(n)
    v = float(value)
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = repr(v)
        if "e" not in text and "." not in text:
            text += ".0"
    if dtype.name == "float32" and "N" not in text:
        text += "f"
    return text


def absent_code(dtype: ir.ScalarType) -> str:
    """The value of an absent neighbour (DESIGN: NaN, the minimum int, False)."""
    if dtype.is_float:
        return "NAN"
    if dtype.is_bool:
        return "false"
    return "(-9223372036854775807LL - 1)" if dtype.name == "int64" else "(-2147483647 - 1)"


class ExprGen:
    def __init__(self, lowering: Materializer | None, tb: TaskletBuilder, *,
                 fused: bool, materialize: bool = True):
        self.low = lowering
        self.tb = tb
        self.fused = fused
        self.allow_materialize = materialize and lowering is not None
        self._scopes: list[CScope] = []   # keeps scopes alive: memo keys use their ids

    def child_scope(self, scope: CScope, bindings: dict) -> CScope:
        child = scope.child(bindings)
        self._scopes.append(child)
        return child

    def fail(self, e: ir.Node, message: str) -> LoweringError:
        return LoweringError(message, e.loc)

    def bound_code(self, expr: sympy.Expr) -> str:
        """An interval bound of a type as C++: its symbols (sizes, runtime-bound
        parameters) by their SDFG names, which a C++ word (``k``, ``input``)
        does not keep."""
        return ccode(self.low.bound(expr) if self.low is not None else expr)

    # ------------------------------------------------------------------ entry

    def value(self, e: ir.Expr, env: Env, scope: CScope, *, root: bool = False,
              cond: bool = False) -> Any:
        if isinstance(e, ir.Literal):
            return literal_code(e.value, ir.scalar_dtype(e.type))
        key = (e, id(scope), tuple(sorted((k, v.key()) for k, v in env.items())),
               root, cond)
        cached = self.tb.recall(key)
        if cached is not None:
            return cached
        if self.allow_materialize and not root and self.should_materialize(e, cond):
            assert self.low is not None   # allow_materialize needs it
            stored = self.low.materialize(e, scope)
            result = self.read_stored(e, stored, env)
        else:
            result = self.compute(e, env, scope, root=root, cond=cond)
        self.tb.remember(key, result)
        return result

    def should_materialize(self, e: ir.Expr, cond: bool) -> bool:
        if not isinstance(e, ir.Call) or not isinstance(e.type, ir.TensorType) or \
                not e.type.dims:
            return False
        name = head_name(e)
        if name in ("reduce", "scan"):
            return True
        if self.fused or name is None or name not in ELEMENTWISE:
            return False
        if cond and (name in ir.COMPARISONS or name in ir.LOGICAL):
            return False
        return True

    def read_stored(self, node: ir.Node, stored: Stored, env: Env) -> Any:
        def read(leaf: ArrayInfo):
            try:
                coords = [env[d.name] for d in leaf.dims]
            except KeyError as missing:
                raise self.fail(node, f"internal: no coordinate for {missing} when reading "
                                      f"{leaf.data}") from None
            return self.tb.read(leaf, coords)
        return _map_tree(read, stored.leaves)

    # ------------------------------------------------------------------ dispatch

    def compute(self, e: ir.Expr, env: Env, scope: CScope, *, root: bool, cond: bool) -> Any:
        match e:
            case ir.Sym():
                return self.sym(e, env, scope)
            case ir.Call(func=ir.Lambda() as lam, args=args):
                bindings = lambda_bindings(lam, args, scope, self.allow_materialize)
                self.store_shared_choices(lam, args, bindings)
                return self.value(lam.body, env, self.child_scope(scope, bindings), root=root)
            case ir.Call(func=ir.Sym(name=name), args=args):
                return self.builtin(e, name, args, env, scope, cond)
            case ir.Call(func=ir.Call(func=ir.Sym(name=name), args=static), args=args):
                return self.curried(e, name, static, args, env, scope)
        raise self.fail(e, f"cannot lower expression {type(e).__name__}")

    def store_shared_choices(self, lam: ir.Lambda, args, bindings: dict[str, Binding]) -> None:
        """Fused, a parameter read more than once whose argument chooses by ``concat``
        is computed once, at its first read, into transient arrays the later reads
        read.  Evaluated where it is read, each read would repeat the argument's code
        in the branches of every choice around it (each branch is a block of its own,
        whose values the next branch cannot use), and a chain of choices each reading
        the one before (``x = concat_where(c, f(x), x)`` repeated) would grow as the
        product of the reads."""
        if not (self.fused and self.allow_materialize):
            return
        for p, a in zip(lam.params, args):
            b = bindings[p.name]
            if (isinstance(b, Deferred) and not b.may_be_absent
                    and isinstance(a.type, ir.TensorType) and a.type.dims
                    and _reads_of(lam.body, p.name) > 1 and _chooses(a)):
                bindings[p.name] = dataclasses.replace(b, shared=True)

    def sym(self, e: ir.Sym, env: Env, scope: CScope) -> Any:
        b = scope.lookup(e.name)
        match b:
            case Stored():
                return self.read_stored(e, b, env)
            case ScalarData(data=data):
                return self.tb.scalar(data)
            case SymbolValue(name=name):
                return f"((long long)({name}))"
            case Deferred(expr=expr, scope=dscope, extra_env=extra, may_materialize=may,
                          shared=True) if may and self.low is not None:
                stored = self.low.materialize(expr, dscope)
                return self.read_stored(e, stored, {**env, **dict(extra)})
            case Deferred(expr=expr, scope=dscope, extra_env=extra, may_materialize=may):
                saved = self.allow_materialize
                self.allow_materialize = may and self.low is not None
                try:
                    return self.value(expr, {**env, **dict(extra)}, dscope)
                finally:
                    self.allow_materialize = saved
            case PointValue(value=v):
                return v
        raise self.fail(e, f"internal: '{e.name}' is not bound")

    # ------------------------------------------------------------------ builtins

    def builtin(self, e: ir.Call, name: str, args, env: Env, scope: CScope, cond: bool):
        t: ir.TensorType = e.type
        dtype = t.dtype
        in_cond = cond and (name in ir.COMPARISONS or name in ir.LOGICAL)
        if name in BINARY_CPP or name in ("divides", "mod", "power", "minimum", "maximum",
                                          "arctan2", "fmod"):
            a, b = (self.value(x, env, scope, cond=in_cond) for x in args)
            return self.tb.var(ir.scalar_dtype(t).name,
                               self.binary(name, args[0].type.dtype, a, b))
        if name in ("not", "neg", "abs") or name in UNARY_CPP or name in ir.PREDICATES:
            a = self.value(args[0], env, scope, cond=in_cond)
            return self.tb.var(ir.scalar_dtype(t).name, self.unary(name, args[0].type.dtype, a))
        match name:
            case "cast":
                a = self.value(args[0], env, scope)
                target = ir.scalar_dtype(t)
                code = f"({a} != 0)" if target.is_bool else \
                    f"static_cast<{CPP_TYPES[target.name]}>({a})"
                return self.tb.var(target.name, code)
            case "if":
                c = self.value(args[0], env, scope, cond=True)
                a = self.value(args[1], env, scope)
                b = self.value(args[2], env, scope)
                return map_leaves(lambda d, x, y: self.tb.var(d.name, f"({c} ? {x} : {y})"),
                                  dtype, a, b)
            case "make_tuple":
                return tuple(self.value(x, env, scope) for x in args)
            case "tuple_get":
                return self.value(args[0], env, scope)[args[1].value]
            case "subset":
                return self.value(args[0], env, scope)
            case "pos":
                return self.tb.var("int64", f"(long long)({env[args[0].name].code})")
            case "add_dim":
                inner = {k: v for k, v in env.items() if k != args[0].name}
                return self.value(args[3], inner, scope)
            case "can_deref":
                return self.valid(args[0], env, scope)
            case "concat":
                return self.concat(e, args, env, scope)
        raise self.fail(e, f"cannot lower builtin '{name}'")

    def binary(self, name: str, dtype: ir.ScalarType, a: str, b: str) -> str:
        if name in BINARY_CPP:
            return f"({a} {BINARY_CPP[name]} {b})"
        # Integer division by 0 gives 0 and by -1 negates with wrap-around (MIN / -1 is
        # MIN), as in the interpreter: the CPU would trap on either.
        if name == "divides":
            return f"({a} / {b})" if dtype.is_float else (
                f"(({b}) == 0 ? 0LL : ({b}) == -1 ? (long long)(0ULL - (unsigned long long)"
                f"(long long)({a})) : (long long)(({a}) / ({b})))")
        if name in ("mod", "fmod"):     # fmod is GT4Py's name of the same operation
            return f"fmod({a}, {b})" if dtype.is_float else \
                f"((({b}) == 0 || ({b}) == -1) ? 0 : ({a}) % ({b}))"
        if name == "power":
            if dtype.is_float:
                return f"pow({a}, {b})"
            return (f"[](long long _b, long long _e) {{ long long _r = 1; if (_e < 0) return "
                    f"(long long)(_b == 1 ? 1 : (_b == -1 ? (_e % 2 ? -1 : 1) : 0)); "
                    f"while (_e > 0) {{ if (_e & 1) _r *= _b; _b *= _b; _e >>= 1; }} "
                    f"return _r; }}({a}, {b})")
        if name == "minimum":
            return f"(({a} != {a} || {a} < {b}) ? {a} : {b})" if dtype.is_float else \
                f"({a} < {b} ? {a} : {b})"
        if name == "maximum":
            return f"(({a} != {a} || {a} > {b}) ? {a} : {b})" if dtype.is_float else \
                f"({a} > {b} ? {a} : {b})"
        if name == "arctan2":
            return f"atan2({a}, {b})"
        raise AssertionError(name)

    def unary(self, name: str, dtype: ir.ScalarType, a: str) -> str:
        match name:
            case "not":
                return f"(!{a})"
            case "neg":
                return f"(-({a}))"
            case "abs":
                return f"fabs({a})" if dtype.is_float else f"({a} < 0 ? -({a}) : {a})"
            case "isnan":
                return f"({a} != {a})"
            case "isinf":
                return f"isinf({a})"
            case "isfinite":
                return f"isfinite({a})"
        return f"{UNARY_CPP[name]}({a})"

    # ------------------------------------------------------------------ shifts

    def curried(self, e: ir.Call, name: str, static, args, env: Env, scope: CScope):
        match name:
            case "cartesian_shift":
                dim, offset = static[0].name, static[1].value
                inner = dict(env)
                if dim in inner:
                    inner[dim] = inner[dim].shifted(offset)
                return self.value(args[0], inner, scope)
            case "shift_apply":
                nb = args[0].type.highest_neighbor
                inner = {**env, nb.name: Idx.of(nb.start + static[0].value)}
                return self.value(args[0], inner, scope)
            case "unstructured_shift":
                table = static[0]
                _, nbt = _table_dims(table.type)
                nb_coord = Idx.of(nbt.start + static[1].value)
                return self.indirect(e, table, nb_coord, None, args[0], env, scope)
            case "shift_init":
                table = static[0]
                nb = ir.neighbor_axis(e.type)
                return self.indirect(e, table, env[nb.name], nb.name, args[0], env, scope)
            case "offset_shift":
                return self.offset_read(e, static, args[0], env, scope)
            case "reduce":
                return self.reduce(e, env, scope)
            case "scan":
                raise self.fail(e, "a scan cannot be nested inside a reduce or scan lambda; "
                                   "compute it in its own statement or outside the lambda")
        raise self.fail(e, f"cannot lower '{name}(…)(…)'")

    def table_entry(self, table: ir.Expr, dst_coord: Idx, nb_coord: Idx, scope: CScope) -> str:
        dst, nbt = _table_dims(table.type)
        return self.entry_var(self.value(table, {dst.name: dst_coord, nbt.name: nb_coord},
                                         scope))

    def entry_var(self, code: str) -> str:
        """A local holding the table entry read by ``code``: each entry is loaded
        once where it is visible (a neighbour loop's presence test, mask test and
        gathers all use the same local)."""
        if code.isidentifier():
            return code
        key = ("entry", code)
        name = self.tb.recall(key)
        if name is None:
            name = self.tb.var("int64", code, "n")
            self.tb.remember(key, name)
        return name

    def known(self, cond: str) -> bool:
        """Whether ``cond`` holds wherever code is emitted now (see :meth:`assume`)."""
        return self.tb.recall(("known", cond)) is not None

    def assume(self, conds) -> None:
        """Record that ``conds`` (and what they imply) hold in the current block."""
        todo = list(conds)
        while todo:
            c = todo.pop()
            if not self.known(c):
                self.tb.remember(("known", c), True)
                todo += self.tb.recall(("implies", c)) or ()

    def implies(self, var: str, conds) -> None:
        """Record that the bool local ``var`` being true implies each of ``conds``."""
        self.tb.remember(("implies", var), [c for c in conds if c != "true"])

    def indirect(self, e: ir.Call, table: ir.Expr, nb_coord: Idx, nb_name: str | None,
                 operand: ir.Expr, env: Env, scope: CScope):
        """Read ``operand`` at the neighbour the table names; absent → NaN/min."""
        dst, nbt = _table_dims(table.type)
        src = ir.neighbor_source_of(nbt)
        idx = self.table_entry(table, env[dst.name], nb_coord, scope)
        inner = {k: v for k, v in env.items() if k not in (dst.name, nb_name)}
        inner[src] = Idx(idx)
        return self.guarded_read(e, operand, inner, table_guard(idx, operand, src), scope)

    def guarded_read(self, e: ir.Call, operand: ir.Expr, inner: Env, guard: str,
                     scope: CScope):
        """``operand`` at the point ``inner`` where ``guard`` holds, else the absent
        value: nothing is read when the guard is false."""
        if self.allow_materialize and not is_leaf(operand) and \
                isinstance(operand.type, ir.TensorType) and operand.type.dims:
            # (a value without dimensions, read through a table at every
            # neighbour alike, is computed where it is read)
            assert self.low is not None   # allow_materialize needs it
            stored = self.low.materialize(operand, scope)
            compute = lambda: self.read_stored(operand, stored, inner)  # noqa: E731
        else:
            compute = lambda: self.value(operand, inner, scope)  # noqa: E731
        if self.known(guard):       # tested already (a neighbour loop's presence guard)
            return compute()
        dtype = e.type.dtype
        out = map_leaves(lambda d: self.tb.declare(d.name), dtype)
        with self.tb.block(f"if ({guard})"):
            val = compute()
            for o, v in zip(leaves_of(out), leaves_of(val)):
                self.tb.emit(f"{o} = {v};")
        with self.tb.block("else", guarded=False):
            map_leaves(lambda d, o: self.tb.emit(f"{o} = {absent_code(d)};"), dtype, out)
        return out

    def offset_target(self, static, operand: ir.Expr, env: Env, scope: CScope
                      ) -> tuple[str, str, str]:
        """(dimension, target coordinate, in-range test) of ``⟪K, off⟫(operand)``."""
        dim, off = static[0].name, static[1]
        k = ir.required_dim(operand.type, dim)
        target = self.tb.var("int64", f"{env[dim].code} + (long long)"
                                      f"({self.value(off, env, scope)})", "t")
        return dim, target, (f"{target} >= {self.bound_code(k.start)} && "
                             f"{target} < {self.bound_code(k.stop)}")

    def offset_read(self, e: ir.Call, static, operand: ir.Expr, env: Env, scope: CScope):
        """A data-dependent shift: read ``operand`` at the computed coordinate,
        guarded so that a target outside its interval is never read."""
        dim, target, in_range = self.offset_target(static, operand, env, scope)
        return self.guarded_read(e, operand, {**env, dim: Idx(target)}, in_range, scope)

    def valid(self, x: ir.Expr, env: Env, scope: CScope) -> str:
        """C++ bool: is the value of ``x`` at this point present (can_deref)?"""
        match x:
            case ir.Call(func=ir.Call(func=ir.Sym(name="cartesian_shift"), args=st), args=(y,)):
                inner = dict(env)
                dim = ir.sym_name(st[0])
                if dim in inner:
                    inner[dim] = inner[dim].shifted(ir.int_value(st[1]))
                return self.valid(y, inner, scope)
            case ir.Call(func=ir.Call(func=ir.Sym(name="shift_apply"), args=st), args=(y,)):
                nb = ir.neighbor_axis(y.type)
                return self.valid(y, {**env, nb.name: Idx.of(nb.start + ir.int_value(st[0]))},
                                  scope)
            case ir.Call(func=ir.Call(func=ir.Sym(name="unstructured_shift" | "shift_init"
                                                  ) as h, args=st), args=(y,)):
                table = st[0]
                dst, nbt = _table_dims(table.type)
                if h.name == "unstructured_shift":
                    nb_coord, nb_name = Idx.of(nbt.start + ir.int_value(st[1])), None
                else:
                    nb_name = ir.neighbor_axis(x.type).name
                    nb_coord = env[nb_name]
                idx = self.table_entry(table, env[dst.name], nb_coord, scope)
                inner = {k: v for k, v in env.items() if k not in (dst.name, nb_name)}
                inner[ir.neighbor_source_of(nbt)] = Idx(idx)
                guard = table_guard(idx, y, ir.neighbor_source_of(nbt))
                if self.known(guard):
                    return self.valid(y, inner, scope)
                mark = len(self.tb.lines)
                ok = self.tb.var("bool", "false", "ok")
                with self.tb.block(f"if ({guard})"):
                    self.assume([guard])
                    inner_ok = self.valid(y, inner, scope)
                    self.tb.emit(f"{ok} = {inner_ok};")
                if len(self.tb.lines) == mark + 4 and inner_ok == "true":   # nothing else
                    del self.tb.lines[mark:]
                    if (tested := self.tb.recall(("tested", guard))) is not None:
                        return tested
                    ok = self.tb.var("bool", guard, "ok")
                    self.tb.remember(("tested", guard), ok)
                self.implies(ok, [guard])
                return ok
            case ir.Call(func=ir.Call(func=ir.Sym(name="offset_shift"), args=st), args=(y,)):
                dim, target, in_range = self.offset_target(st, y, env, scope)
                ok = self.tb.var("bool", "false", "ok")
                with self.tb.block(f"if ({in_range})"):
                    self.tb.emit(f"{ok} = {self.valid(y, {**env, dim: Idx(target)}, scope)};")
                return self.tb.var("bool", f"{ok} && {self.valid(st[1], env, scope)}", "ok")
            case ir.Call(func=ir.Sym(name="tuple_get" | "subset"), args=(y, *_)):
                return self.valid(y, env, scope)
        checks = []
        match x:   # absence propagates; a select's comes from its condition and choice
            case ir.Sym(name=name):    # an applied lambda's parameter: its argument's
                b = scope.lookup(name)
                if isinstance(b, Deferred) and b.may_be_absent:
                    checks.append(self.valid_argument(b, env))
            case ir.Call(func=ir.Lambda() as lam, args=args):   # its body's
                bindings = lambda_bindings(lam, args, scope, self.allow_materialize)
                checks.append(self.valid(lam.body, env, self.child_scope(scope, bindings)))
            case ir.Call(func=ir.Sym(name="if"), args=(c, a, b)):
                vc, va, vb = (self.valid(y, env, scope) for y in (c, a, b))
                checks.append(vc)
                checks.append(va if va == vb else f"({self.value(c, env, scope)} ? {va} : {vb})")
            case ir.Call(func=ir.Sym(name=n), args=args) if n in PRESENCE_THROUGH:
                checks += [self.valid(a, env, scope) for a in args
                           if isinstance(a.type, ir.TensorType)]
        for d in x.type.dims:
            if d.mask is not None and d.name in env:
                checks.append(f"({self.entry_var(self.mask_entry(d, env, scope))} >= 0)")
        checks = [c for c in checks if c != "true" and not self.known(c)]
        if not checks:
            return "true"
        if len(checks) == 1 and checks[0].isidentifier():
            return checks[0]
        ok = self.tb.var("bool", " && ".join(checks), "ok")
        self.implies(ok, checks)
        return ok

    def valid_argument(self, b: Deferred, env: Env) -> str:
        """The presence of a parameter's argument, where the parameter is used."""
        saved = self.allow_materialize
        self.allow_materialize = b.may_materialize and self.low is not None
        try:
            return self.valid(b.expr, {**env, **dict(b.extra_env)}, b.scope)
        finally:
            self.allow_materialize = saved

    def mask_entry(self, nb: ir.Dim, env: Env, scope: CScope) -> str:
        """The entry of ``nb``'s mask at this point; its ``_NB_<Src>`` axis is ``nb``
        (a nested shift's mask also has the outer dimensions)."""
        assert nb.mask is not None
        menv = {d.name: env[nb.name] if d.neighbor_source is not None else env[d.name]
                for d in nb.mask.type.dims}
        return self.value(nb.mask, menv, scope)

    # ------------------------------------------------------------------ concat

    def concat(self, e: ir.Call, args, env: Env, scope: CScope):
        axis, pieces = args[0].name, args[1:]     # the checker records the axis first
        coord = env[axis].code
        dtype = e.type.dtype
        out = map_leaves(lambda d: self.tb.declare(d.name), dtype)
        for i, piece in enumerate(pieces):
            stop = piece.type.dim(axis).stop
            last = i == len(pieces) - 1
            header = ("if" if i == 0 else "else if") + f" ({coord} < {self.bound_code(stop)})" \
                if not last else ("else" if i else "if (true)")
            with self.tb.block(header):
                val = self.value(piece, env, scope)
                for o, v in zip(leaves_of(out), leaves_of(val)):
                    self.tb.emit(f"{o} = {v};")
        return out

    # ------------------------------------------------------------------ reduce / scan

    def reduce(self, e: ir.Call, env: Env, scope: CScope):
        """The neighbour loop of reduce; absent neighbours leave the accumulator alone."""
        lam, init = ir.head_args(e)[:2]
        assert isinstance(lam, ir.Lambda)
        operands = e.args
        axis_name = ir.reduce_axis(e)
        axis = next(d for a in operands if (d := a.type.dim(axis_name)) is not None)
        masks = {d.name: d for a in operands for d in a.type.dims if d.mask is not None
                 and (d.name == axis_name or axis_name in d.mask.type.dim_names)}
        # Operands absent beyond their masks (full or offset shifts) need their presence.
        names = absent_names(scope)
        absent = [a for a in operands if a.type.dim(axis_name) is not None
                  and ir.absent_beyond_masks(a, names)]
        dtype = e.type.dtype
        init_val = self.value(init, {}, scope)
        acc = map_leaves(lambda d, v: self.tb.var(d.name, v, "acc"), dtype, init_val)
        n = self.tb.fresh("nb")
        header = (f"for (long long {n} = {self.bound_code(axis.start)}; "
                  f"{n} < {self.bound_code(axis.stop)}; ++{n})")
        with self.tb.block(header):
            nenv = {**env, axis.name: Idx(n)}
            checks = [f"{self.entry_var(self.mask_entry(d, nenv, scope))} >= 0"
                      for d in masks.values()]
            checks += [self.valid(a, nenv, scope) for a in absent]
            checks = [c for c in checks if c != "true"]
            guard = "if (" + " && ".join(checks) + ")" if checks else None
            bindings: dict[str, Binding] = {lam.params[0].name: PointValue(acc,
                                                                            lam.params[0].name)}
            for p, a in zip(lam.params[1:], operands):
                bindings[p.name] = Deferred(a, scope, ((axis.name, Idx(n)),),
                                            self.allow_materialize)
            body_scope = self.child_scope(scope, bindings)
            with (self.tb.block(guard) if guard else _null()):
                self.assume(checks)
                saved = self.allow_materialize
                self.allow_materialize = False
                try:
                    new = self.value(lam.body, env, body_scope)
                finally:
                    self.allow_materialize = saved
                for a, v in zip(leaves_of(acc), leaves_of(new)):
                    self.tb.emit(f"{a} = {v};")
        return acc

    def scan_column(self, e: ir.Call, env: Env, scope: CScope,
                    outputs: list[tuple[str, ArrayInfo]]) -> None:
        """The loop of one column of a scan, writing each level through ``outputs``
        (connector, array) pointers to the column's first element."""
        lam, forward, init, axis_sym = ir.head_args(e)
        assert isinstance(lam, ir.Lambda) and isinstance(forward, ir.Literal)
        axis = ir.required_dim(e.type, ir.sym_name(axis_sym))
        dtype = e.type.dtype
        init_val = self.value(init, {}, scope)
        state = map_leaves(lambda d, v: self.tb.var(d.name, v, "state"), dtype, init_val)
        k = self.tb.fresh("k")
        start, stop = self.bound_code(axis.start), self.bound_code(axis.stop)
        if forward.value:
            header = f"for (long long {k} = {start}; {k} < {stop}; ++{k})"
        else:
            header = f"for (long long {k} = {stop} - 1; {k} >= {start}; --{k})"
        with self.tb.block(header):
            bindings: dict[str, Binding] = {lam.params[0].name: PointValue(state,
                                                                            lam.params[0].name)}
            for p, a in zip(lam.params[1:], e.args):
                bindings[p.name] = Deferred(a, scope, ((axis.name, Idx(k)),),
                                            self.allow_materialize)
            saved = self.allow_materialize
            self.allow_materialize = False
            try:
                new = self.value(lam.body, env, self.child_scope(scope, bindings))
            finally:
                self.allow_materialize = saved
            fresh = map_leaves(lambda d, v: self.tb.var(d.name, v, "next"), dtype, new)
            for s, v in zip(leaves_of(state), leaves_of(fresh)):
                self.tb.emit(f"{s} = {v};")
            for (conn, arr), s in zip(outputs, leaves_of(state)):
                axis_pos = [d.name for d in arr.dims].index(axis.name)
                stride = arr.strides[axis_pos]
                off = f"({k} - {start})" + ("" if stride == 1 else f" * {ccode(stride)}")
                self.tb.emit(f"{conn}[{off}] = {s};")


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _reads_of(body: ir.Expr, name: str) -> int:
    """How many times ``body`` names ``name`` (not counting lambdas that rebind it)."""
    count = 0
    stack: list[ir.Node] = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.Sym):
            count += n.name == name
        elif isinstance(n, ir.Lambda) and any(q.name == name for q in n.params):
            continue
        else:
            stack.extend(ir.children(n))
    return count


def _chooses(e: ir.Expr) -> bool:
    """``e`` has a ``concat`` (whose pieces are lowered as branches of their own)."""
    return any(isinstance(n, ir.Call) and isinstance(n.func, ir.Sym) and n.func.name == "concat"
               for n in ir.walk(e))


def _map_tree(fn, tree):
    if isinstance(tree, tuple):
        return tuple(_map_tree(fn, t) for t in tree)
    return fn(tree)



def table_guard(idx: str, operand: ir.Expr, src: str) -> str:
    """C++: the table entry ``idx`` names an element of ``operand``'s interval
    along ``src`` (a negative entry never does).  Every indirect read is guarded
    by it, so no table, however it was changed, makes a kernel read out of range."""
    t = operand.type
    dim = t.dim(src) if isinstance(t, ir.TensorType) else None
    if dim is None:
        return f"{idx} >= 0"
    start = sympy.sympify(dim.start)
    lower = [f"{idx} >= {ccode(start)}"] if start.is_nonnegative else \
        [f"{idx} >= 0"] if start.is_nonpositive else [f"{idx} >= 0", f"{idx} >= {ccode(start)}"]
    return " && ".join(lower + [f"{idx} < {ccode(dim.stop)}"])


def _table_dims(t: ir.TensorType) -> tuple[ir.Dim, ir.Dim]:
    dst = next(d for d in t.dims if not d.is_neighbor)
    nb = next(d for d in t.dims if d.neighbor_source is not None)
    return dst, nb
