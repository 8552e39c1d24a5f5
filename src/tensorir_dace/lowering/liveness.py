"""Which writes to temporaries are lowered, and which temporaries start at zero.

Two facts about the statement order that the lowering needs and DaCe cannot
recover from C++ tasklets:

* a write to a temporary that no later statement reads is dead; DaCe's dead
  dataflow elimination fails on such a write ("cannot eliminate dead
  connector"), so it is not lowered at all;
* a temporary read before a statement has written all of it holds zeros
  there, as in the interpreter, so its array is zero-filled on entry.

Only the program's top-level statements are ordered precisely; statements
inside loops and conditionals count as reads and writes of everything they
mention, in both directions (a loop body may read what a later iteration
wrote).
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import ir

__all__ = ["dead_writes", "read_before_written"]


def _target_name(s: ir.Assign) -> str:
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
            out.add(_target_name(s))
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
        if isinstance(s, ir.Assign) and _target_name(s) in temps \
                and _target_name(s) not in read_later:
            dead.add(id(s))
            continue
        read_later |= _mentions(s)
    return dead


def read_before_written(program: ir.Program) -> set[str]:
    """Temporaries some statement may read before a top-level statement has
    assigned all of them (a subset write assigns only part)."""
    temps = {t.name for t in program.temporaries}
    whole: set[str] = set()
    early: set[str] = set()
    for s in program.body:
        early |= (_mentions(s) & temps) - whole
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Sym):
            whole.add(s.target.name)
        elif isinstance(s, ir.Assign) and _target_name(s) not in whole:
            early.add(_target_name(s))      # the rest of it keeps its zeros
    return early & temps
