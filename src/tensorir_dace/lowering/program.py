"""Typed program → SDFG: containers, control flow, one state per statement.

Parameters become non-transient arrays (one per tuple leaf, offset by the
interval start so coordinates index them directly) or scalars; temporaries
become transients; size symbols become SDFG symbols.  Each assignment gets
its own state; program-level ``if`` becomes a ``ConditionalBlock`` and
``for`` a ``LoopRegion``.  Inside a state, the value is computed by maps
(see :mod:`.expressions` for what is inlined and what is materialised).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import dace
import sympy
from dace.properties import CodeBlock
from dace.sdfg.state import ConditionalBlock, ControlFlowRegion, LoopRegion

from .. import ir
from ..errors import LoweringError
from ..library import ColumnScan, NeighborReduce, declare_symbols
from ..signature import ArgBinding, CallSignature
from ..typing import scope as typing_scope
from ..typing.runtime import bound_of, loop_hull, loop_sized
from .expressions import ExprGen, head_name
from .liveness import dead_writes, live_temporaries, read_before_written, read_first, target_name
from .names import Mangler, map_param
from .tasklet import TaskletBuilder
from .values import (
    DACE_TYPES,
    ArrayInfo,
    CScope,
    Idx,
    ScalarData,
    Stored,
    SymbolValue,
    lambda_bindings,
    leaves_of,
)


@dataclass
class LoweredProgram:
    """The SDFG of a program and how to call it."""

    sdfg: dace.SDFG
    signature: CallSignature


def _dace_expr(expr: sympy.Expr):
    """A SymPy bound as DaCe wants it: an int or a DaCe symbolic expression."""
    expr = sympy.expand(expr)
    if expr.is_Integer:
        return int(expr)
    return dace.symbolic.pystr_to_symbolic(str(expr))


def _text(node) -> str:
    try:
        from ..syntax import format as fmt
        return fmt(node)
    except Exception:  # noqa: BLE001 - the printer is only for display here
        return str(node)


class ProgramLowering:
    def __init__(self, program: ir.Program, *, fused: bool):
        self.program = program
        self.fused = fused
        self.names = Mangler()
        for p in program.params + program.temporaries:
            self.names.user(p.name)
        self.sdfg = dace.SDFG(self.names.user(program.name) if program.name else "program")
        self.symbol_names: dict[str, str] = {}
        self.runtime_names: dict[str, str] = {}   # runtime-bound parameters, loop variables
        self.scope = CScope()
        self.bindings: list[ArgBinding] = []
        self.state: dace.SDFGState = None   # the current state, made by new_state
        self.region: ControlFlowRegion = self.sdfg
        self.last_block = None
        # by the ids of the expression and scope, each kept alive with its
        # arrays so that no later object reuses the ids
        self._materialized: dict[tuple[int, int], tuple[ir.Expr, CScope, Stored]] = {}
        self._last_write: dict[str, object] = {}
        self._reads: dict[str, object] = {}
        self._keep: list = []
        self._declared: set[str] = set()   # temporaries that have arrays
        # enclosing loops: variable -> (start, stop) as SymPy, outermost first
        self.loop_ranges: dict[str, tuple[sympy.Expr, sympy.Expr]] = {}

    # ------------------------------------------------------------------ containers

    def bound(self, expr: sympy.Expr) -> sympy.Expr:
        names = {**self.symbol_names, **self.runtime_names}
        subs = {s: sympy.Symbol(names[s.name], **s.assumptions0)
                for s in expr.free_symbols if names.get(s.name, s.name) != s.name}
        return expr.subs(subs) if subs else expr

    def sdfg_dims(self, t: ir.TensorType) -> tuple[ir.Dim, ...]:
        return tuple(d.with_interval(self.bound(d.start), self.bound(d.stop)) for d in t.dims)

    def declare_symbols(self) -> None:
        names = []
        for node in ir.walk(self.program):
            if isinstance(node, ir.Param):
                for d in node.type.dims:
                    for b in (d.start, d.stop):
                        names += sorted(s.name for s in b.free_symbols
                                        if not ir.is_runtime_symbol(s))
        for n in dict.fromkeys(names):
            sname = self.names.user(n)
            self.symbol_names[n] = sname
            self.sdfg.add_symbol(sname, dace.int64)
            self.scope.bindings[n] = SymbolValue(sname)
        # Scalar parameters used as runtime bounds are SDFG symbols too: maps range
        # over them, so one binary serves every value.
        runtime = {s.name for node in ir.walk(self.program) for s in _bound_symbols(node)
                   if ir.is_runtime_symbol(s)}
        if loop_sized(self.program):     # loop ranges size the temporaries' storage
            runtime |= {n.name for loop in ir.walk(self.program)
                        if isinstance(loop, ir.ForStmt)
                        for b in (loop.start, loop.stop) for n in ir.walk(b)
                        if isinstance(n, ir.Sym)}
        for p in self.program.params:
            if p.name in runtime and p.type.is_scalar:
                sname = self.names.user(p.name)
                self.runtime_names[p.name] = sname
                self.sdfg.add_symbol(sname, DACE_TYPES[ir.scalar_dtype(p.type).name])

    def add_arrays(self, name: str, t: ir.TensorType, transient: bool,
                   path: tuple[int, ...] = (), dtype=None, fresh: bool = False):
        dtype = t.dtype if dtype is None else dtype
        if isinstance(dtype, ir.TupleType):
            return tuple(self.add_arrays(name, t, transient, path + (i,), d, fresh)
                         for i, d in enumerate(dtype.elements))
        leaf = name if not path else name + "_" + "_".join(map(str, path))
        data = (self.names.fresh(leaf) if fresh else
                self.names.leaf(name, path) if path else self.names.user(name))
        dims = self.sdfg_dims(t)
        info = ArrayInfo(data, dims, dtype)
        if not transient:
            self.bindings.append(ArgBinding(name, path, data))
        if not dims:
            self.sdfg.add_scalar(data, DACE_TYPES[dtype.name], transient=transient)
            return info
        self.sdfg.add_array(data, [_dace_expr(s) for s in info.shape], DACE_TYPES[dtype.name],
                            offset=[_dace_expr(-d.start) for d in dims], transient=transient)
        return info

    def add_temporary(self, tmp: ir.Param, storage: ir.TensorType | None = None) -> Stored:
        """The arrays of a temporary, shaped like ``storage`` (its type by default;
        a second set gets fresh names)."""
        fresh = tmp.name in self._declared
        self._declared.add(tmp.name)
        leaves = self.add_arrays(tmp.name, storage or tmp.type, transient=True, fresh=fresh)
        return Stored(ir.TensorType(tmp.type.dtype, self.sdfg_dims(tmp.type)), leaves)

    def loop_temporaries(self, var: str, scope: CScope) -> dict[str, Stored]:
        """Arrays of their own, in this loop, for the temporaries sized by ``var``
        (and by enclosing loops' variables).  Each iteration uses its own interval
        of the temporary, but the arrays cover the hull of those intervals over
        the loop's range (known before the loop): DaCe allocates arrays whose
        shape changes inside a loop once per iteration yet frees them once, so
        they are sized before the loop instead.  A second loop over ``var`` gets
        arrays of its own."""
        out = {}
        for tmp in self.program.temporaries:
            loops = self.loop_sized.get(tmp.name, ())
            if var not in loops or not all(v in self.loop_ranges for v in loops):
                continue
            ranges = [(v, lo, hi) for v, (lo, hi) in self.loop_ranges.items()]
            dims = []
            for d in tmp.type.dims:
                hull = loop_hull(d.start, d.stop, ranges)
                assert not isinstance(hull, str), hull   # refused by the type checker
                dims.append(d.with_interval(*hull))
            out[tmp.name] = self.add_temporary(tmp, replace(tmp.type, dims=tuple(dims)))
        return out

    def loop_range(self, start: ir.Expr, stop: ir.Expr) -> tuple[sympy.Expr, sympy.Expr]:
        """A loop's bounds as SymPy expressions of sizes, parameters and outer loop
        variables (the type checker made sure they are such expressions)."""
        bind = typing_scope.Binding
        names = {p.name: bind(p.name, "param", p.type) for p in self.program.params}
        names |= {n: bind(n, "size", ir.TensorType(ir.INT64)) for n in self.symbol_names}
        names |= {n: bind(n, "loop", ir.TensorType(ir.INT64)) for n in self.loop_ranges}
        scope = typing_scope.Scope(names)
        lo, hi = bound_of(start, scope), bound_of(stop, scope)
        return (sympy.nan if lo is None else lo), (sympy.nan if hi is None else hi)

    def add_transient(self, t: ir.TensorType) -> Stored:
        def leaf(dtype):
            if isinstance(dtype, ir.TupleType):
                return tuple(leaf(d) for d in dtype.elements)
            data = self.names.fresh("t")
            dims = tuple(t.dims)
            info = ArrayInfo(data, dims, dtype)
            self.sdfg.add_transient(data, [_dace_expr(s) for s in info.shape],
                                    DACE_TYPES[dtype.name],
                                    offset=[_dace_expr(-d.start) for d in dims])
            return info
        return Stored(t, leaf(t.dtype))

    def zero_fill(self, stored: Stored) -> None:
        """Zeros in every element of a temporary (read before it is written); for a
        loop temporary, on this iteration's interval of its storage."""
        state = self.new_state("zero_fill")
        for leaf in leaves_of(stored.leaves):
            dims = stored.type.dims
            params = [f"_z{i}" for i in range(len(dims))]
            shape = ArrayInfo(leaf.data, dims, leaf.dtype).shape
            ranges = {p: f"{_dace_expr(d.start)}:{_dace_expr(d.start + n)}"
                      for p, d, n in zip(params, dims, shape)}
            state.add_mapped_tasklet(f"zero_{leaf.data}", ranges, {}, "_z = 0",
                                     {"_z": dace.Memlet(f"{leaf.data}[{', '.join(params)}]")},
                                     external_edges=True)

    # ------------------------------------------------------------------ program

    def lower(self) -> LoweredProgram:
        self.declare_symbols()
        for p in self.program.params:
            if p.name in self.runtime_names:
                self.bindings.append(ArgBinding(p.name, (), self.runtime_names[p.name]))
                self.scope.bindings[p.name] = SymbolValue(self.runtime_names[p.name])
            elif p.type.is_scalar:
                if isinstance(p.type.dtype, ir.TupleType):
                    raise LoweringError(f"scalar parameter '{p.name}' of tuple type is not "
                                        "supported", p.loc)
                data = self.names.user(p.name)
                self.sdfg.add_scalar(data, DACE_TYPES[p.type.dtype.name])
                self.bindings.append(ArgBinding(p.name, (), data))
                self.scope.bindings[p.name] = ScalarData(data, p.type.dtype)
            else:
                leaves = self.add_arrays(p.name, p.type, transient=False)
                self.scope.bindings[p.name] = Stored(
                    ir.TensorType(p.type.dtype, self.sdfg_dims(p.type)), leaves)
        self.loop_sized = loop_sized(self.program)
        for tmp in self.program.temporaries:
            if tmp.name not in self.loop_sized:
                self.scope.bindings[tmp.name] = self.add_temporary(tmp)
        self.live = live_temporaries(self.program)
        self.dead = dead_writes(self.program)
        for name in sorted(read_before_written(self.program) - set(self.loop_sized)):
            stored = self.scope.bindings[name]
            assert isinstance(stored, Stored)
            self.zero_fill(stored)
        self.block(self.program.body, self.scope)
        if self.last_block is None:
            self.new_state("empty")
        self.sdfg.arg_names = [b.data for b in self.bindings]
        signature = CallSignature(self.program.params, tuple(self.bindings),
                                  dict(self.symbol_names), self.program.constraints)
        return LoweredProgram(self.sdfg, signature)

    def add_block(self, block) -> None:
        if self.last_block is None:
            self.region.add_node(block, is_start_block=True)
        else:
            self.region.add_node(block)
            self.region.add_edge(self.last_block, block, dace.InterstateEdge())
        self.last_block = block

    def new_state(self, label: str) -> dace.SDFGState:
        state = dace.SDFGState(self.names.fresh(label), sdfg=self.sdfg)
        # An explicit line stops DaCe from inspecting the Python stack for every node
        # (slow in deep expressions); ``assign`` sets the Tensor IR position.
        state.set_default_lineinfo(dace.dtypes.DebugInfo(0))
        self.add_block(state)
        self.state = state
        self._last_write = {}
        self._reads = {}
        return state

    def in_region(self, region: ControlFlowRegion, stmts, scope: CScope,
                  zeros: tuple[Stored, ...] = ()) -> None:
        """``stmts`` in ``region``, after zero-filling ``zeros`` there."""
        saved = (self.region, self.last_block)
        self.region, self.last_block = region, None
        for stored in zeros:
            self.zero_fill(stored)
        self.block(stmts, scope)
        if self.last_block is None:
            self.new_state("empty")
        self.region, self.last_block = saved

    def block(self, stmts, scope: CScope) -> None:
        for s in stmts:
            match s:
                case ir.Assign() if target_name(s) in self.live and id(s) not in self.dead:
                    self.assign(s, scope)
                case ir.IfStmt(cond=cond, then_body=tb, else_body=eb):
                    cb = ConditionalBlock(self.names.fresh("if"), sdfg=self.sdfg)
                    self.add_block(cb)
                    then_r = ControlFlowRegion(self.names.fresh("then"), sdfg=self.sdfg)
                    self.in_region(then_r, tb, scope)
                    cb.add_branch(CodeBlock(self.condition(cond, scope)), then_r)
                    if eb:
                        else_r = ControlFlowRegion(self.names.fresh("else"), sdfg=self.sdfg)
                        self.in_region(else_r, eb, scope)
                        cb.add_branch(None, else_r)
                case ir.ForStmt(var=var, start=start, stop=stop, body=body):
                    v = self.names.user(var)
                    self.runtime_names[var] = v
                    lo, hi = self.condition(start, scope), self.condition(stop, scope)
                    loop = LoopRegion(self.names.fresh("for_" + var),
                                      condition_expr=f"{v} < {hi}", loop_var=v,
                                      initialize_expr=f"{v} = {lo}",
                                      update_expr=f"{v} = {v} + 1", sdfg=self.sdfg)
                    self.add_block(loop)
                    inner = scope.child({var: SymbolValue(v)})
                    outer_ranges = dict(self.loop_ranges)
                    self.loop_ranges[var] = self.loop_range(start, stop)
                    fresh = self.loop_temporaries(var, inner)
                    inner.bindings |= fresh
                    self.in_region(loop, body, inner,
                                   tuple(fresh[n] for n in sorted(read_first(set(fresh), body))))
                    self.loop_ranges = outer_ranges

    # ------------------------------------------------------------------ conditions

    def condition(self, e: ir.Expr, scope: CScope) -> str:
        """A scalar expression as Python code for interstate conditions and loop bounds."""
        ops = {"plus": "+", "minus": "-", "multiplies": "*", "eq": "==", "neq": "!=",
               "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
               "and": "and", "or": "or"}
        match e:
            case ir.Call(func=ir.Sym(name="divides" | "mod" as op), args=(num, den)) \
                    if _is_int(e) and not (isinstance(den, ir.Literal)
                                           and den.value not in (0, -1)):
                # as in the interpreter and in tasklets: x / 0 and x % 0 are 0, x / -1
                # is -x; the CPU would trap on them
                x, y = self.condition(num, scope), self.condition(den, scope)
                exact = f"({x} / {y})" if op == "divides" else f"({x} % {y})"
                # MIN / -1 is MIN; spelled MIN + 1 - 1, as C++ has no literal for MIN
                bits = 32 if _scalar_dtype(e).name == "int32" else 64
                lowest = f"({1 - 2 ** (bits - 1)} - 1)"
                minus_one = f"({x} if {x} == {lowest} else -{x})" if op == "divides" else "0"
                return f"(0 if {y} == 0 else ({minus_one} if {y} == -1 else {exact}))"
            case ir.Call(func=ir.Sym(name="mod"), args=(num, den)):
                return f"({self.condition(num, scope)} % {self.condition(den, scope)})"
            case ir.Literal(value=v):
                return repr(v)
            case ir.Sym(name=n):
                b = scope.lookup(n)
                if isinstance(b, ScalarData):
                    return b.data
                if isinstance(b, SymbolValue):
                    return b.name
            case ir.Call(func=ir.Sym(name=op), args=(a, b)) if op in ops:
                return f"({self.condition(a, scope)} {ops[op]} {self.condition(b, scope)})"
            case ir.Call(func=ir.Sym(name="divides"), args=(a, b)):
                return f"({self.condition(a, scope)} / {self.condition(b, scope)})"
            case ir.Call(func=ir.Sym(name="not"), args=(a,)):
                return f"(not {self.condition(a, scope)})"
            case ir.Call(func=ir.Sym(name="if"), args=(c, a, b)):
                return (f"({self.condition(a, scope)} if {self.condition(c, scope)} "
                        f"else {self.condition(b, scope)})")
            case ir.Call(func=ir.Sym(name="cast"), args=(a, _)):
                kind = _scalar_kind(e)
                return f"{kind}({self.condition(a, scope)})"
            case ir.Call(func=ir.Sym(name="abs"), args=(a,)):
                return f"abs({self.condition(a, scope)})"
            case ir.Call(func=ir.Sym(name="minimum" | "maximum" as op), args=(a, b)):
                return f"{op[:3]}({self.condition(a, scope)}, {self.condition(b, scope)})"
            case ir.Call(func=ir.Sym(name="neg"), args=(a,)):
                return f"(-{self.condition(a, scope)})"
        raise LoweringError("program-level conditions and loop bounds may use scalar "
                            "parameters, size symbols, loop variables, literals, + - × / %, "
                            "minimum, maximum, abs, if, comparisons and logic only", e.loc)

    # ------------------------------------------------------------------ dataflow

    def read_node(self, data: str):
        if data in self._last_write:
            return self._last_write[data]
        if data not in self._reads:
            self._reads[data] = self.state.add_read(data)
        return self._reads[data]

    def write_node(self, data: str):
        node = self.state.add_write(data)
        self._last_write[data] = node
        return node

    def memlet(self, data: str, subset: str) -> dace.Memlet:
        return dace.Memlet(f"{data}[{subset}]")

    def debuginfo(self, node: ir.Node):
        """The Tensor IR source position, instead of the Python line that built a node
        (which would make the SDFG depend on where and how this package is installed)."""
        loc = node.loc
        if loc is None:
            return dace.dtypes.DebugInfo(0)
        return dace.dtypes.DebugInfo(loc.line, loc.column, loc.line, loc.column,
                                     loc.filename or self.program.name)

    def assign(self, s: ir.Assign, scope: CScope) -> None:
        self._assign(s, scope)
        info = self.debuginfo(s)
        for node in self.state.nodes():
            node.debuginfo = info

    def _assign(self, s: ir.Assign, scope: CScope) -> None:
        target = s.target
        name = ir.sym_name(target.args[0] if isinstance(target, ir.Call) else target)
        self.new_state("s_" + name)
        stored = scope.lookup(name)
        assert isinstance(stored, Stored)
        domain = self.sdfg_dims(target.type)
        reads_target = any(isinstance(n, ir.Sym) and n.name == name for n in ir.walk(s.value))
        if reads_target:
            tmp = self.materialize(s.value, scope, force=True)
            self.copy(tmp, stored, domain, scope)
            return
        root, root_scope = self.peel(s.value, scope)
        kind = head_name(root) if isinstance(root, ir.Call) else None
        if kind == "scan" and _same_domain(self.sdfg_dims(root.type), domain):
            self.scan_map(root, root_scope, stored, domain)
        elif kind == "scan":      # scanned over its operands' domain; the target's part
            self.copy(self.materialize(s.value, scope), stored, domain, scope)
        elif kind == "reduce" and root.type.dims:
            self.reduce_map(root, root_scope, stored, domain)
        else:
            self.tasklet_map(s.value, scope, stored, domain, label="s_" + name)

    def peel(self, e: ir.Expr, scope: CScope):
        """Look through lambda applications to the expression that computes the value."""
        while isinstance(e, ir.Call) and isinstance(e.func, ir.Lambda):
            scope = scope.child(lambda_bindings(e.func, e.args, scope, True))
            self._keep.append(scope)
            e = e.func.body
        return e, scope

    def copy(self, source: Stored, target: Stored, domain, scope: CScope) -> None:
        tmp_scope = CScope({"_value": source})
        self._keep.append(tmp_scope)
        expr = ir.Sym("_value", type=source.type)
        self._keep.append(expr)
        self.tasklet_map(expr, tmp_scope, target, domain, label="copy")

    def materialize(self, e: ir.Expr, scope: CScope, force: bool = False) -> Stored:
        """Compute ``e`` over its whole typed domain into new transient arrays."""
        key = (id(e), id(scope))
        if key in self._materialized and not force:
            return self._materialized[key][2]
        t = ir.TensorType(e.type.dtype, self.sdfg_dims(e.type))
        stored = self.add_transient(t)
        root, root_scope = self.peel(e, scope)
        kind = head_name(root) if isinstance(root, ir.Call) else None
        if kind == "scan":
            self.scan_map(root, root_scope, stored, t.dims)
        elif kind == "reduce":
            self.reduce_map(root, root_scope, stored, t.dims)
        else:
            self.tasklet_map(e, scope, stored, t.dims, label="op")
        self._materialized[key] = (e, scope, stored)
        return stored

    def point_env(self, dims) -> dict[str, Idx]:
        return {d.name: Idx.of(sympy.Symbol(map_param(d.name))) for d in dims}

    def map_ranges(self, dims) -> dict[str, str]:
        return {map_param(d.name): f"{d.start}:{_clamped_stop(d)}" for d in dims}

    def tasklet_map(self, e: ir.Expr, scope: CScope, target: Stored, domain, label: str):
        tb = TaskletBuilder()
        gen = ExprGen(self, tb, fused=self.fused)
        self._keep.append(gen)
        env = self.point_env(domain)
        value = gen.value(e, env, scope, root=True)
        outputs = {}
        for i, (leaf, v) in enumerate(zip(leaves_of(target.leaves), leaves_of(value))):
            conn = f"_out{i}"
            tb.emit(f"{conn} = {v};")
            subset = ", ".join(map_param(d.name) for d in leaf.dims)
            outputs[conn] = (leaf.data, subset)
        self.emit_map(self.names.fresh(label), domain, tb, outputs)

    def emit_map(self, label: str, domain, tb: TaskletBuilder, outputs: dict) -> None:
        inputs = {c: self.memlet(conn.data, conn.subset) for c, conn in tb.inputs.items()}
        input_nodes = {conn.data: self.read_node(conn.data) for conn in tb.inputs.values()}
        out_memlets = {c: self.memlet(d, sub) for c, (d, sub) in outputs.items()}
        output_nodes = {d: self.write_node(d) for d, _ in outputs.values()}
        if not domain:
            tasklet = self.state.add_tasklet(label, dict.fromkeys(inputs), dict.fromkeys(
                out_memlets), tb.code, language=dace.Language.CPP)
            for c, m in inputs.items():
                self.state.add_edge(input_nodes[m.data], None, tasklet, c, m)
            for c, m in out_memlets.items():
                self.state.add_edge(tasklet, c, output_nodes[m.data], None, m)
            return
        tasklet, _, _ = self.state.add_mapped_tasklet(
            label, self.map_ranges(domain), inputs, tb.code, out_memlets,
            language=dace.Language.CPP, external_edges=True, input_nodes=input_nodes,
            output_nodes=output_nodes)
        self.type_pointer_connectors(tasklet, tb)

    def type_pointer_connectors(self, node, tb: TaskletBuilder) -> None:
        """Whole-array connectors are pointers even when the array has one element."""
        for c, conn in tb.inputs.items():
            if conn.pointer:
                node.in_connectors[c] = dace.pointer(self.sdfg.arrays[conn.data].dtype)

    def library_map(self, label: str, domain, node, tb: TaskletBuilder, outputs: dict):
        """A map over ``domain`` whose body is one library node."""
        state = self.state
        # a scan of a value along its axis only (a K field) runs once
        me, mx = state.add_map(label, self.map_ranges(domain) or {"_once": "0:1"})
        declare_symbols(node, self.sdfg)
        state.add_node(node)
        for c, conn in tb.inputs.items():
            node.add_in_connector(c)
            state.add_memlet_path(self.read_node(conn.data), me, node, dst_conn=c,
                                  memlet=self.memlet(conn.data, conn.subset))
        if not tb.inputs:
            state.add_nedge(me, node, dace.Memlet())
        self.type_pointer_connectors(node, tb)
        for c, (data, subset) in outputs.items():
            node.add_out_connector(c)
            # Typed explicitly: left to inference, the CUDA generator makes a
            # one-element output a pointer and the expansion's assignment fails.
            dtype = self.sdfg.arrays[data].dtype
            node.out_connectors[c] = dace.pointer(dtype) if ":" in subset else dtype
            state.add_memlet_path(node, mx, self.write_node(data), src_conn=c,
                                  memlet=self.memlet(data, subset))

    def reduce_map(self, e: ir.Call, scope: CScope, target: Stored, domain) -> None:
        tb = TaskletBuilder(pointer_only=True)
        gen = ExprGen(self, tb, fused=self.fused)
        self._keep.append(gen)
        value = gen.reduce(e, self.point_env(domain), scope)
        outputs = {}
        for i, (leaf, v) in enumerate(zip(leaves_of(target.leaves), leaves_of(value))):
            conn = f"_out{i}"
            tb.emit(f"{conn} = {v};")
            outputs[conn] = (leaf.data, ", ".join(map_param(d.name) for d in leaf.dims))
        lam, init = ir.head_args(e)[:2]
        node = NeighborReduce(self.names.fresh("reduce"), lambda_text=_text(lam),
                              init_text=_text(init), code=tb.code, axis=ir.reduce_axis(e),
                              mask_table=", ".join(sorted(_table_names(e))))
        self.library_map(node.label + "_map", domain, node, tb, outputs)

    def scan_map(self, e: ir.Call, scope: CScope, target: Stored, domain) -> None:
        lam, forward, init, axis_sym = ir.head_args(e)
        assert isinstance(forward, ir.Literal)
        axis = ir.sym_name(axis_sym)
        columns = tuple(d for d in domain if d.name != axis)
        tb = TaskletBuilder(pointer_only=True)
        gen = ExprGen(self, tb, fused=self.fused)
        self._keep.append(gen)
        outputs, conns = {}, []
        for i, leaf in enumerate(leaves_of(target.leaves)):
            conn = f"_out{i}"
            ax = next(d for d in domain if d.name == axis)
            subset = ", ".join(f"{ax.start}:{ax.stop}" if d.name == axis else map_param(d.name)
                               for d in leaf.dims)
            outputs[conn] = (leaf.data, subset)
            conns.append((conn, leaf))
        gen.scan_column(e, self.point_env(columns), scope, conns)
        node = ColumnScan(self.names.fresh("scan"), lambda_text=_text(lam),
                          init_text=_text(init), code=tb.code, axis=axis,
                          forward=bool(forward.value))
        self.library_map(node.label + "_map", columns, node, tb, outputs)


def _clamped_stop(d: ir.Dim) -> sympy.Expr:
    """A runtime range with ``stop <= start`` is empty: its map never runs."""
    if ir.has_runtime(d.start) or ir.has_runtime(d.stop):
        return sympy.Max(d.start, d.stop)
    return d.stop


def _bound_symbols(node: ir.Node):
    """The symbols in the interval bounds a node carries (its type, its interval)."""
    types = [node.type] if isinstance(node, (ir.Expr, ir.Param)) else []
    for t in types:
        if isinstance(t, ir.TensorType):
            for d in t.dims:
                yield from d.start.free_symbols
                yield from d.stop.free_symbols
    if isinstance(node, ir.DimInterval):
        yield from node.start.free_symbols
        yield from node.stop.free_symbols


def _same_domain(a, b) -> bool:
    if {d.name for d in a} != {d.name for d in b}:
        return False
    bd = {d.name: d for d in b}
    return all(sympy.expand(d.start - bd[d.name].start) == 0 and
               sympy.expand(d.stop - bd[d.name].stop) == 0 for d in a)


def _table_names(e: ir.Call) -> set[str]:
    out = set()
    for a in e.args:
        for d in a.type.dims:
            if d.mask is not None:
                out |= {n.name for n in ir.walk(d.mask) if isinstance(n, ir.Sym)
                        and n.name not in ir.BUILTINS}
    return out


def lower(program: ir.Program, *, fused: bool = False) -> LoweredProgram:
    """Lower a type-checked program to an SDFG (not yet optimised)."""
    return ProgramLowering(program, fused=fused).lower()


def _scalar_dtype(e: ir.Expr) -> ir.ScalarType:
    """The element type of a typed scalar expression."""
    t = e.type
    assert isinstance(t, ir.TensorType) and isinstance(t.dtype, ir.ScalarType)
    return t.dtype


def _scalar_kind(e: ir.Expr) -> str:
    """The conversion that gives ``e``'s scalar type in interstate code (DaCe's
    type names: ``int64(x)`` is C++'s ``long long``)."""
    dtype = _scalar_dtype(e)
    return "bool" if dtype.is_bool else dtype.name


def _is_int(e: ir.Expr) -> bool:
    t = e.type
    return isinstance(t, ir.TensorType) and isinstance(t.dtype, ir.ScalarType) and t.dtype.is_int
