"""Reading the C++ code of generated tasklets: statements, blocks and the
neighbour loop.  The code is what the lowering emits (one statement per
line, fresh local names starting with ``_``), not arbitrary C++, which is
what makes these small textual readers sufficient."""

from __future__ import annotations

import re

#: A neighbour or column loop as the lowering writes it.
LOOP = re.compile(r"for \(long long (\w+) = ([^;]+); \1 < ([^;]+); \+\+\1\) \{")
#: A local name (the lowering's locals and connectors start with one ``_``).
LOCAL = re.compile(r"\b_(?!_)\w*")
#: Statements that leave a loop iteration early.
JUMPS = re.compile(r"\b(break|continue|goto)\b")


def split_loop(code: str):
    """``(before, loop match, body, after)`` of ``code`` with exactly one loop
    at the top level, else None."""
    loops, depth, i = [], 0, 0
    while i < len(code):
        c = code[i]
        if depth == 0 and (m := LOOP.match(code, i)) is not None \
                and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            loops.append(m)
            i = m.end()
            depth = 1
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        i += 1
    if len(loops) != 1:
        return None
    m = loops[0]
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    return code[:m.start()], m, code[m.end():i - 1], code[i:]


_BLOCK_START = re.compile(r"(if|else|for|while|do)\b|\{")


def statements(code: str) -> list[str] | None:
    """The top-level statements of C++ ``code`` (a ``;``-terminated statement,
    or a block statement with its ``else``), stripped; None if unbalanced."""
    out: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(code):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None
        i += 1
        text = code[start:i].strip()
        if depth or not text:
            continue
        if c == ";" or c == "}" and _BLOCK_START.match(text) \
                and not code[i:].lstrip().startswith("else"):
            out.append(text)
            start = i
    if depth or code[start:].strip():
        return None
    return out


def locals_of(code: str) -> set[str]:
    return set(LOCAL.findall(code))


def if_block(stmt: str) -> tuple[str, str] | None:
    """``(condition, inner code)`` of ``if (condition) { inner }`` with no else."""
    if not stmt.startswith("if (") or not stmt.endswith("}"):
        return None
    depth, i = 0, 3
    while True:
        depth += {"(": 1, ")": -1}.get(stmt[i], 0)
        i += 1
        if depth == 0:
            break
    rest = stmt[i:].lstrip()
    if not rest.startswith("{") or statements(rest) != [rest]:
        return None
    return stmt[4:i - 1], rest[1:-1]


_ASSIGNED = re.compile(r"(?:^|[;{}])\s*(_\w+)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                       r"(?:\+\+|--)\s*(_\w+)|(_\w+)\s*(?:\+\+|--)")


def assigned(stmts: list[str]) -> set[str]:
    """The locals that ``stmts`` assign after their declaration."""
    return {m.group(1) or m.group(2) or m.group(3)
            for s in stmts for m in _ASSIGNED.finditer(s)}
