"""Canonical text of a ``.tir`` file, keeping its ``#`` comments.

The printer knows nothing of comments (the lexer drops them), so
:func:`format_source` puts each comment on a line of its own before the
first statement that starts after it; comments before the program stay
above it, comments after the last statement stay before the closing ``}``
(or after it).  Formatting canonical text again changes nothing."""

from __future__ import annotations

from .. import ir
from .parser import parse
from .printer import INDENT, Printer


def _comments(text: str) -> list[tuple[int, str]]:
    """``(line, comment)`` for every ``#`` comment (``#`` always starts one)."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        at = line.find("#")
        if at >= 0:
            out.append((number, line[at:].rstrip()))
    return out


class _CommentPrinter(Printer):
    def __init__(self, comments: list[tuple[int, str]], ascii: bool):
        super().__init__(ascii)
        self.pending = comments

    def take(self, before_line: int, indent: str) -> list[str]:
        taken = [c for line, c in self.pending if line < before_line]
        self.pending = [(line, c) for line, c in self.pending if line >= before_line]
        return [f"{indent}{c}" for c in taken]

    def body(self, stmts: tuple[ir.Stmt, ...], indent: str) -> list[str]:
        lines: list[str] = []
        for s in stmts:
            if s.loc is not None:
                lines += self.take(s.loc.line, indent)
            lines += self.stmt(s, indent)
        return lines


def format_source(text: str, *, filename: str | None = None, ascii: bool = False) -> str:
    """The canonical form of the program in ``text``, with its comments."""
    program = parse(text, filename=filename)
    printer = _CommentPrinter(_comments(text), ascii)
    first = program.loc.line if program.loc is not None else 1
    head = printer.take(first, "")
    body = printer.program(program).splitlines()
    # Comments left over sit after the last statement: before "}" if they come
    # before the line of the program's last "}", else after it.
    last_brace = max(i for i, line in enumerate(text.splitlines(), 1) if "}" in line.split("#")[0])
    inner = printer.take(last_brace, INDENT)
    tail = printer.take(10 ** 9, "")
    lines = head + body[:-1] + inner + body[-1:] + tail
    return "\n".join(lines) + "\n"
