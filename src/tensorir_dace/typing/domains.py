"""Typing rules of the builtins that make or restrict domains: pos, add_dim, subset, concat."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import intervals as iv
from .. import ir
from ..errors import did_you_mean
from ..lazy import lazy_module
from .rules import Rules
from .scope import Scope

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")


class DomainRules(Rules):
    """Mixin of :class:`~.checker.Checker`."""

    def resolve_dim(self, a: ir.Expr, what: str) -> str:
        if not isinstance(a, ir.Sym):
            raise self.error(a, f"expected a dimension name for {what}")
        if a.name in self.dim_names:
            return a.name
        matches = sorted(d for d in self.dim_names
                         if d.lower().startswith(a.name.lower()) and not d.startswith("_NB_"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise self.error(a, f"offset tag '{a.name}' is ambiguous: it could name "
                                + ", ".join(matches) + "; write the full dimension name")
        raise self.error(a, f"'{a.name}' names no dimension of this program; dimensions are "
                            + ", ".join(sorted(self.dim_names)) + did_you_mean(a.name,
                                                                              self.dim_names))

    def b_pos(self, e, scope, expected):
        if len(e.args) != 2:
            raise self.error(e, "pos takes a dimension and a tensor: pos(I, x)")
        name = self.resolve_dim(e.args[0], "pos")
        x = self.expr(e.args[1], scope)
        d = self.tensor(x).dim(name)
        if d is None:
            raise self.error(e, f"pos({name}, x): x has no dimension {name} "
                                f"({self.tensor(x)})")
        return replace(e, args=(replace(e.args[0], name=name), x),
                       type=ir.TensorType(ir.INT64, (replace(d, mask=None),)))

    def b_add_dim(self, e, scope, expected):
        if len(e.args) != 4:
            raise self.error(e, "add_dim takes a name, start, stop and a tensor: "
                                "add_dim(K, 0, 5, x)")
        if not isinstance(e.args[0], ir.Sym):
            raise self.error(e.args[0], "add_dim needs a dimension name first")
        name = e.args[0].name
        start = self.static_bound(e.args[1], scope)
        stop = self.static_bound(e.args[2], scope)
        x = self.expr(e.args[3], scope, expected)
        t = self.tensor(x)
        if t.dim(name) is not None:
            raise self.error(e, f"add_dim: the operand already has dimension {name}")
        if self.decide(e, lambda: iv.maybe_le(stop, start)) is True and not iv.equal(start, stop):
            raise self.error(e, f"add_dim: empty interval [{start}:{stop}]")
        new = ir.Dim(name, start, stop)
        return replace(e, args=(e.args[0], e.args[1], e.args[2], x),
                       type=ir.TensorType(t.dtype, (new,) + t.dims))

    def static_bound(self, a: ir.Expr, scope: Scope) -> sympy.Expr:
        """An integer bound written as an expression: literals, size symbols, + - ×."""
        match a:
            case ir.Literal(kind="int", value=v):
                return sympy.Integer(v)
            case ir.Sym(name=n) if (b := scope.lookup(n)) is not None and b.kind == "size":
                return ir.size_symbol(n)
            case ir.Call(func=ir.Sym(name=op), args=(x, y)) if op in ("plus", "minus",
                                                                         "multiplies"):
                lhs, rhs = self.static_bound(x, scope), self.static_bound(y, scope)
                return {"plus": lhs + rhs, "minus": lhs - rhs, "multiplies": lhs * rhs}[op]
            case ir.Call(func=ir.Sym(name="neg"), args=(x,)):
                return -self.static_bound(x, scope)
        raise self.error(a, "expected an integer literal or size expression here")

    def b_subset(self, e, scope, expected):
        if not e.args:
            raise self.error(e, "subset takes a tensor and intervals: subset(x, I[1:4])")
        x = self.expr(e.args[0], scope, expected)
        t = self.tensor(x)
        new = {d.name: d for d in t.dims}
        intervals, runtime = [], []
        for a in e.args[1:]:
            if not isinstance(a, ir.DimInterval):
                raise self.error(a, "subset takes intervals like I[1:4] after the tensor")
            d = t.dim(a.name)
            if d is None:
                raise self.error(a, f"subset: the tensor has no dimension {a.name} ({t})")
            a = replace(a, start=self.runtime_bound(a.start, a, scope),
                        stop=self.runtime_bound(a.stop, a, scope))
            intervals.append(a)
            sub = d.with_interval(a.start, a.stop)
            if ir.has_runtime(a.start) or ir.has_runtime(a.stop):
                runtime.append((a, d, sub))
                new[a.name] = sub
                continue
            # An order that depends on the sizes is the user's assertion (I[1:N-1]
            # needs N >= 2); only a subset provably outside is an error.
            pairs = [(d.start, sub.start), (sub.stop, d.stop), (sub.start, sub.stop)]
            if iv.is_empty(sub):
                # no element taken (a concat_where piece cut to nothing beside an
                # empty scan): where it lies does not matter
                pairs = [(sub.start, sub.stop)]
            inside = [iv.maybe_le(lo, hi) for lo, hi in pairs]
            where = f"subset {a.name}[{a.start}:{a.stop}] of {a.name}[{d.start}:{d.stop}]" + (
                f" at {a.loc}" if a.loc else "")
            self.constraints += [ir.SizeConstraint(lo, hi, where)
                                 for (lo, hi), ok in zip(pairs, inside) if ok is None]
            if False in inside:
                raise self.error(a, f"subset {a.name}[{a.start}:{a.stop}] is not within "
                                    f"{a.name}[{d.start}:{d.stop}]")
            new[a.name] = sub
        guard = tuple((sub.start, sub.stop) for _, _, sub in runtime)
        for a, d, sub in runtime:
            def subset_text(a: ir.DimInterval = a) -> str:
                return f"subset {a.name}[{a.start}:{a.stop}]" + (f" at {a.loc}" if a.loc else "")
            self.runtime_subset(a, d, sub, guard, subset_text)
        return replace(e, args=(x,) + tuple(intervals),
                       type=ir.TensorType(t.dtype, tuple(new[d.name] for d in t.dims)))

    def b_concat(self, e, scope, expected):
        args = list(e.args)
        explicit = None
        if args and isinstance(args[0], ir.Sym) and scope.lookup(args[0].name) is None and \
                args[0].name in self.dim_names:
            explicit = args.pop(0).name
        if len(args) < 1:
            raise self.error(e, "concat needs at least one piece")
        pieces = self.unify_literals([self.expr(a, scope, expected) for a in args], args, scope)
        dtype = self.same_dtype(e, "concat", pieces)
        types = [self.tensor(p) for p in pieces]
        candidates = [explicit] if explicit else [
            d.name for d in types[0].dims if all(t.dim(d.name) is not None for t in types)]
        axis = None
        for name in candidates:
            ds = [d for t in types if (d := t.dim(name)) is not None]
            if len(ds) != len(types):
                raise self.error(e, f"concat along {name}: every piece needs dimension {name}")
            if all(iv.equal(a.stop, b.start) for a, b in zip(ds, ds[1:])):
                if axis is not None and explicit is None and len(types) > 1:
                    raise self.error(e, f"concat: both {axis} and {name} could be the "
                                        f"concatenation axis; name it: concat({axis}, …)")
                axis = name
                if explicit is None and len(types) == 1:
                    break
        if axis is None:
            raise self.error(e, "concat: the pieces must cover contiguous, disjoint intervals "
                                "of one dimension, in increasing order; got "
                                + "; ".join(str(t) for t in types))
        others = [ir.TensorType(t.dtype, tuple(d for d in t.dims if d.name != axis))
                  for t in types]
        rest = self.broadcast(e, others)
        ds = [d for t in types if (d := t.dim(axis)) is not None]
        self.runtime_concat(e, axis, ds)
        whole = ds[0].with_interval(ds[0].start, ds[-1].stop)
        order = list(dict.fromkeys(d.name for t in types for d in t.dims))
        dims = {d.name: d for d in rest}
        dims[axis] = replace(whole, mask=None)
        # The axis is recorded as the first argument, so later stages need not find it.
        return replace(e, args=(ir.Sym(axis, loc=e.loc),) + tuple(pieces),
                       type=ir.TensorType(dtype, tuple(dims[n] for n in order)))
