"""What a translation knows about its program: parameters, tables, on-demand typing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from .. import intervals as iv
from .. import ir
from ..errors import (
    FrontendError,
    SourceLoc,
    TensorIRError,
    TypeCheckError,
)
from ..typing.checker import Checker
from ..typing.scope import Binding, Scope
from .dims import (
    NeighborDimension,
)
from .scan_ranges import ConcatPieces, DomainScan
from .values import strip_masks


class ProgramContext:
    """What one program translation shares: names, types, temporaries."""

    def __init__(self, name: str, params: Sequence[ir.Param], loc: SourceLoc,
                 table_dims: dict[str, NeighborDimension]):
        self.name = name
        self.params = list(params)
        self.loc = loc
        self.table_dims = table_dims
        # parameters whose IR name is not their Python name: {IR name: Python name}
        self.python_names: dict[str, str] = {}
        self.temporaries: list[ir.Param] = []
        # runtime bounds: call-time checks the front end adds (a runtime slice bound
        # is never negative), the enclosing loops, and the interval of each
        # dimension of the statement target being translated (for concat_where)
        self.constraints: list[ir.SizeConstraint] = []
        self.loops: list[tuple[str, Any, Any]] = []
        self.target: dict[str, tuple[Any, Any]] | None = None
        # the static intervals of a direct call's out= (maybe longer than the
        # inputs: half levels written from full levels), with or without domain=:
        # where a runtime concat_where's branch defined everywhere reaches
        self.extent: dict[str, tuple[Any, Any]] = {}
        # values of broadcast(x, dims) (by id, with the value): a parameter annotated
        # with those dimensions takes them, though x has not got them all
        self.broadcasts: dict[int, tuple[ir.Expr, frozenset[str]]] = {}
        # the ``domain=`` of the call being translated: scans along one of its
        # dimensions run over its range only (GT4Py's column range)
        self.domain: dict[str, ir.DimInterval] = {}
        # the scans along those dimensions, translated over their operands' whole
        # interval until fit_scans gives each the levels its readers need
        self.domain_scans: dict[ir.Call, DomainScan] = {}
        # the concats of concat_where along those dimensions (by id), whose pieces
        # outside the levels their readers need trim_pieces leaves out
        self.domain_concats: dict[int, ConcatPieces] = {}
        # a concat_where gap and a domain whose bounds are both runtime values:
        # the domain taken to lie below the gap (else above it)
        self.gap_below_stop = False
        # GT4Py's tuple of domains: the domain of each output (``domain`` is their
        # union): a concat_where with a gap in the union may keep the pieces one
        # output's domain needs (the others' values not needing them)
        self.part_domains: list[dict[str, ir.DimInterval]] = []
        # a direct call's declared result dimensions that no parameter has, each
        # over a size symbol of its own that ``out=`` gives: a concat_where along
        # one of them with neither branch over it is defined over the whole of it
        self.result_dims: dict[str, ir.Dim] = {}
        # a concat_where piece of a branch without its dimension at an open end of
        # the condition (``concat_where(K < 1, a, broadcast(s, (Cell, K)))`` above
        # level 0) is defined without end there, as in GT4Py: it reaches past the
        # hull of the dimension's intervals by ``open_margin`` (per dimension), at
        # least the sum of the Cartesian offsets along it translated after the
        # first such piece in its statement (``reach``, and ``open_dims``: its
        # value then, per dimension along which such pieces were made in the
        # statement; ``open_needed``: that sum, the most over the statements),
        # so that no chain of shifts of the value draws its end inside a target
        self.open_margin: dict[str, int] = {}
        self.reach: dict[str, int] = {}
        self.open_dims: dict[str, int] = {}
        self.open_needed: dict[str, int] = {}
        # the call-time checks that a domain lies beside a concat_where gap, by
        # the place of that concat_where: a check whose concat_where the program
        # no longer holds (a tuple element that the caller drops) is not made
        self.gap_checks: dict[ir.SizeConstraint, SourceLoc | None] = {}
        # errors of values that are errors only where the program keeps them (a
        # concat_where with a gap), by the place of the value (see :meth:`defer`)
        self.deferred: dict[SourceLoc | None, TensorIRError] = {}
        self.defer_now = False      # raised at once instead (see :meth:`undeferred`)
        self.checker = Checker(ir.Program("__frontend__", tuple(params)))
        self.scope = Scope()
        sizes: set[str] = set()
        for p in params:
            for d in p.type.dims:
                for b in (d.start, d.stop):
                    sizes |= {s.name for s in b.free_symbols}
        for s in sorted(sizes):
            self.scope.bindings[s] = Binding(s, "size", ir.TensorType(ir.INT64))
        for p in params:
            self.scope.bindings[p.name] = Binding(p.name, "param", p.type)
        self.used: set[str] = set(sizes) | {p.name for p in params} | \
            set(self.checker.dim_names) | set(ir.BUILTINS) | set(ir.BUILTIN_ALIASES)
        self.stack: list[Any] = []
        # > 0 inside the body of a scan or reduce function, where values are the
        # points of a column (GT4Py's scalars)
        self.pointwise = 0
        # rank-generic specialisations: a Cartesian shift along a dimension that no
        # parameter has is a no-op (dropped here, remembered for the log)
        self.rank_generic = False
        self.dropped: dict[str, SourceLoc] = {}

    def made_open(self, name: str) -> None:
        """Note a ``concat_where`` piece without end along dimension ``name``."""
        self.open_dims.setdefault(name, self.reach.get(name, 0))

    def close_open(self) -> None:
        """End a statement for :meth:`made_open`: the offsets translated since
        its first piece without end along each dimension go to ``open_needed``."""
        for name, at in self.open_dims.items():
            self.open_needed[name] = max(self.open_needed.get(name, 0),
                                         self.reach.get(name, 0) - at)
        self.open_dims.clear()

    def derived(self, old: ir.SizeConstraint, new: ir.SizeConstraint) -> ir.SizeConstraint:
        """``new``, a check made from ``old``: a gap check of the same place."""
        if old in self.gap_checks:
            self.gap_checks[new] = self.gap_checks[old]
        return new

    def defer(self, loc: SourceLoc | None, error: TensorIRError) -> None:
        """``error``, of the value made at ``loc`` (a node of that place stands for
        it): raised by :meth:`live_constraints` where the program keeps a node
        from ``loc``, and in place of any error the translation meets after it
        (:meth:`deferred_first`)."""
        if self.defer_now:
            raise error
        self.deferred.setdefault(loc, error)

    @contextlib.contextmanager
    def undeferred(self) -> Iterator[None]:
        """A translation tried as an alternative (that falls back on another
        where it fails): errors are raised at once, not deferred."""
        saved, self.defer_now = self.defer_now, True
        try:
            yield
        finally:
            self.defer_now = saved

    @contextlib.contextmanager
    def deferred_first(self) -> Iterator[None]:
        """A translation's errors, where it has deferred one (:meth:`defer`): the
        first deferred error instead (the value that stands for the one in error
        may be what the later error is about)."""
        try:
            yield
        except TensorIRError:
            if self.deferred:
                raise next(iter(self.deferred.values())) from None
            raise

    def live_constraints(self, body: Sequence[ir.Node]) -> tuple[ir.SizeConstraint, ...]:
        """The constraints the program ``body`` needs: all but the gap checks of
        a ``concat_where`` that no node of ``body`` comes from.  A deferred
        error (:meth:`defer`) of a place that a node of ``body`` comes from is
        raised."""
        places = {n.loc for stmt in body for n in ir.walk(stmt) if isinstance(n, ir.Call)}
        for loc, error in self.deferred.items():
            if loc in places:
                raise error
        return tuple(c for c in dict.fromkeys(self.constraints)
                     if c not in self.gap_checks or self.gap_checks[c] in places)

    def rename(self, names: dict[str, str] | None) -> None:
        """Parameters named in the IR otherwise than in Python ({Python name: IR
        name}, see :mod:`.names`)."""
        self.python_names = {v: k for k, v in (names or {}).items()}

    def python_name(self, p: ir.Param) -> str:
        """The name the Python code gives parameter ``p``."""
        return self.python_names.get(p.name, p.name)

    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() else "v"
        if ir.canonical_builtin(base) is not None:
            base = base + "_"
        name = base
        k = 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name

    def source_extent(self, name: str) -> ir.Dim | None:
        """The interval of dimension ``name`` where no parameter has it but a
        neighbour table's entries index it (``Cell`` for a table ``Edge ->
        Cell``): that of a parameter added for it, over a size of its own,
        which the call binds to an array one longer than the tables' largest
        entry (see :func:`~tensorir_dace.source_extents.extent_values`).  GT4Py defines a
        broadcast everywhere along ``name``; read through the tables, a value
        built from broadcasts along it is needed there only.  None where no
        table indexes ``name``."""
        from ..source_extents import EXTENT_DTYPE, EXTENT_PREFIX, is_extent_param, tables_into
        for p in self.params:
            if is_extent_param(p) and p.type.dims[0].name == name:
                return p.type.dims[0]
        if not tables_into(self.params, name):
            return None
        size = self.fresh(f"N_{name}")
        dim = ir.Dim(name, 0, ir.size_symbol(size))
        p = ir.Param(self.fresh(f"{EXTENT_PREFIX}{name}"), ir.TensorType(EXTENT_DTYPE, (dim,)),
                     loc=self.loc)
        self.params.append(p)
        self.checker.dim_names.add(name)
        self.scope.bindings[size] = Binding(size, "size", ir.TensorType(ir.INT64))
        self.scope.bindings[p.name] = Binding(p.name, "param", p.type)
        return dim

    def add_temporary(self, name: str, t: ir.TensorType, loc: SourceLoc) -> ir.Param:
        t = strip_masks(t)
        # runtime bounds (int parameters, loop variables) as the parser reads them back
        text = replace(t, dims=tuple(d.with_interval(ir.text_bound(d.start),
                                                     ir.text_bound(d.stop)) for d in t.dims))
        p = ir.Param(name, text, loc=loc)
        self.temporaries.append(p)
        self.checker.dim_names |= set(t.dim_names)
        self.scope.bindings[name] = Binding(name, "temp", t)
        return p

    def type_of(self, e: ir.Expr, scope: Scope, loc: SourceLoc | None,
                expected: ir.ElementType | None = None) -> ir.TensorType:
        try:
            typed = self.checker.expr(e, scope, expected)
        except TypeCheckError as err:
            if err.loc is None:
                raise TypeCheckError(err.message, loc) from None
            raise
        t = typed.type
        if not isinstance(t, ir.TensorType):  # pragma: no cover - lambdas are applied
            raise FrontendError("expected a tensor value", loc)
        return t

    def dim_intervals(self, name: str) -> list[ir.Dim]:
        """The intervals of dimension ``name`` in the parameters and temporaries."""
        out = []
        for p in self.params + self.temporaries:
            d = p.type.dim(name)
            if d is not None:
                out.append(d)
        return out

    def broadcast(self, types: Sequence[ir.TensorType], loc: SourceLoc | None,
                  what: str) -> tuple[ir.Dim, ...]:
        try:
            return self.decide(lambda: self.checker.broadcast(None, types), loc, what)
        except TypeCheckError as err:
            raise TypeCheckError(f"{what}: {err.message}", err.loc or loc) from None

    def decide(self, fn, loc: SourceLoc | None, what: str):
        try:
            return fn()
        except iv.Undecidable as e:
            raise FrontendError(f"{what}: cannot decide whether {e.a} <= {e.b} for all "
                                "sizes", loc) from None


def with_open_margins(translate: Callable[[dict[str, int], list[ProgramContext]], Any]
                      ) -> Any:
    """``translate(margins, made)`` (a translation that sets ``open_margin =
    margins`` on its context and appends that context to ``made``), done once
    more where it made ``concat_where`` pieces without end along a dimension
    that it then shifts along in the same statement (or failed having made
    them): each such piece then reaches past the hull by the sum of the
    offsets along its dimension translated after the first such piece of a
    statement (the most over the statements), as GT4Py's broadcast has an
    unbounded domain that no shift draws inside a target."""
    margins: dict[str, int] = {}
    for _ in range(4):
        made: list[ProgramContext] = []
        try:
            result = translate(margins, made)
            failure = None
        except (FrontendError, TypeCheckError) as err:
            if not made:
                raise
            result, failure = None, err
        ctx = made[-1]
        ctx.close_open()
        wanted = {d: n for d, n in ctx.open_needed.items() if n > margins.get(d, 0)}
        if not wanted:
            break
        margins = {**margins, **wanted}
    if failure is not None:
        raise failure
    return result
