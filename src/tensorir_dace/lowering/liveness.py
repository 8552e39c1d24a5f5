"""Which writes to temporaries are lowered, and which temporaries start at zero.

Two facts about the statement order that the lowering needs and DaCe cannot
recover from C++ tasklets:

* a write to a temporary that no later statement reads is dead; DaCe's dead
  dataflow elimination fails on such a write ("cannot eliminate dead
  connector"), so it is not lowered at all;
* a temporary read before a statement has written all of it holds zeros
  there, as in the interpreter, so its array is zero-filled on entry; a
  temporary sized by a loop variable exists anew in every iteration, so it
  is zero-filled at the start of each iteration where the loop body may read
  it first.

Only the statements of one sequence (the program's body, or a loop's body for
the temporaries it makes) are ordered precisely; statements nested in
conditionals and loops count as reads and writes of everything they mention,
in both directions (a loop body may read what a later iteration wrote).
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import ir

__all__ = ["dead_writes", "live_temporaries", "read_before_written", "read_first",
           "target_name"]


def target_name(s: ir.Assign) -> str:
    """The temporary or parameter an assignment writes (whole or a subset of it)."""
    t = s.target
    if isinstance(t, ir.Sym):
        return t.name
    assert isinstance(t, ir.Call)
    return ir.sym_name(t.args[0])


def _names(*exprs: ir.Expr | None) -> set[str]:
    return {n.name for e in exprs if e is not None for n in ir.walk(e) if isinstance(n, ir.Sym)}


def _mentions(s: ir.Stmt) -> set[str]:
    """Every name a statement reads, including the targets and conditions inside it."""
    if isinstance(s, ir.Assign):
        target = s.target.args[1:] if isinstance(s.target, ir.Call) else ()
        return _names(s.value, *target)
    if isinstance(s, ir.IfStmt):
        inner = s.then_body + s.else_body
        return _names(s.cond) | set().union(*map(_mentions, inner)) | _written(inner)
    if isinstance(s, ir.ForStmt):
        return _names(s.start, s.stop) | set().union(*map(_mentions, s.body)) | _written(s.body)
    return set()


def _written(stmts: Sequence[ir.Stmt]) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ir.Assign):
            out.add(target_name(s))
        elif isinstance(s, ir.IfStmt):
            out |= _written(s.then_body + s.else_body)
        elif isinstance(s, ir.ForStmt):
            out |= _written(s.body)
    return out


def dead_writes(program: ir.Program) -> set[int]:
    """``id``s of the top-level assignments to temporaries that nothing reads later
    (directly, or through another temporary that is read later)."""
    temps = {t.name for t in program.temporaries}
    dead: set[int] = set()
    read_later: set[str] = set()
    for s in reversed(program.body):
        if isinstance(s, ir.Assign) and target_name(s) in temps \
                and target_name(s) not in read_later:
            dead.add(id(s))
            continue
        read_later |= _mentions(s)
    return dead


def read_before_written(program: ir.Program) -> set[str]:
    """Temporaries some statement may read before a top-level statement has
    assigned all of them (a subset write assigns only part)."""
    return read_first({t.name for t in program.temporaries}, program.body)


def read_first(temps: set[str], stmts: Sequence[ir.Stmt]) -> set[str]:
    """Those of ``temps`` that ``stmts`` may read before one of them has assigned
    all of it (a subset write, or one inside a conditional or loop, may leave
    part unassigned)."""
    whole: set[str] = set()
    early: set[str] = set()
    for s in stmts:
        early |= (_mentions(s) & temps) - whole
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Sym):
            whole.add(s.target.name)
        elif isinstance(s, ir.Assign) and target_name(s) not in whole:
            early.add(target_name(s))      # the rest of it keeps its zeros
    return early & temps


def live_temporaries(program: ir.Program) -> set[str]:
    """Parameters and the temporaries whose values reach one: an assignment to any
    other temporary is dead and not lowered (DaCe cannot remove such a write from a
    C++ tasklet itself)."""
    temps = {t.name for t in program.temporaries}
    live = {p.name for p in program.params}

    def used(e: ir.Expr) -> set[str]:
        return {n.name for n in ir.walk(e) if isinstance(n, ir.Sym) and n.name in temps}

    while True:
        before = len(live)
        stack = list(program.body)
        while stack:
            s = stack.pop()
            if isinstance(s, ir.Assign):
                if target_name(s) in live:
                    live |= used(s.value) | used(s.target)
            elif isinstance(s, ir.IfStmt):
                live |= used(s.cond)
                stack += s.then_body + s.else_body
            elif isinstance(s, ir.ForStmt):
                live |= used(s.start) | used(s.stop)
                stack += s.body
        if len(live) == before:
            return live
