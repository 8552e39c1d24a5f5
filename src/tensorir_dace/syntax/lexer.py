"""The tokenizer of the Tensor IR text syntax.

Every token has a canonical ``kind``: the Unicode spelling for operators and
punctuation (ASCII spellings map to it: ``<-`` is ``'←'``, ``*`` is ``'×'``,
``&&`` is ``'∧'`` …), ``'ident'``, ``'int'``, ``'float'``, ``'bool'`` or
``'eof'``.  ``text`` keeps the spelling found in the source, for messages.

The lexer is greedy: ``<<``, ``>>``, ``<-``, ``->``, ``<=``, ``>=``, ``!=``,
``==``, ``&&`` and ``||`` are always single tokens, so ``x<-1`` is
``x ← 1``; write ``x < -1`` to compare with a negative number.

A subscript ``ₒ`` (U+2092) directly after a number or a name is dropped
(``-1ₒ``, ``iₒ``: the offset tags of the design document).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ParseError, SourceLoc

SUBSCRIPT_O = "\u2092"  # ₒ

# ASCII two-character spellings, mapped to the canonical kind.
TWO_CHAR = {
    "<<": "⟪",
    ">>": "⟫",
    "<-": "←",
    "->": "→",
    "<=": "≤",
    ">=": "≥",
    "!=": "≠",
    "==": "==",
    "&&": "∧",
    "||": "∨",
}

ONE_CHAR = {
    "(": "(", ")": ")", "{": "{", "}": "}", "[": "[", "]": "]",
    ",": ",", ":": ":", ";": ";",
    "+": "+", "-": "-", "\u2212": "-",  # − (minus sign)
    "*": "×", "×": "×", "/": "/", "%": "%",
    "<": "<", ">": ">", "!": "¬", "¬": "¬",
    "←": "←", "→": "→", "λ": "λ", "⟪": "⟪", "⟫": "⟫",
    "≤": "≤", "≥": "≥", "≠": "≠", "∧": "∧", "∨": "∨",
}

# Characters that are alphabetic to Python but are tokens of their own.
_NOT_IDENT = {"λ", SUBSCRIPT_O}

# Hints for characters that are close to a token.
_LONE_HINTS = {
    "=": "use '←' (or '<-') to assign and '==' to compare",
    "&": "did you mean '∧' (or '&&')?",
    "|": "did you mean '∨' (or '||')?",
    "⟨": "shifts are written with '⟪ ⟫' (or '<< >>')",
    "⟩": "shifts are written with '⟪ ⟫' (or '<< >>')",
    "'": "there are no strings in Tensor IR",
    '"': "there are no strings in Tensor IR",
}

KEYWORDS = {"lambda": "λ", "True": "bool", "False": "bool"}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    column: int
    value: object = None

    @property
    def number(self) -> bool | int | float:
        """The value of an int, float or bool literal token."""
        assert isinstance(self.value, (bool, int, float)), self
        return self.value

    def describe(self) -> str:
        """How the token is named in an error message."""
        if self.kind == "eof":
            return "end of input"
        return repr_text(self.text)


def repr_text(text: str) -> str:
    return "'" + text + "'"


def _is_ident_start(c: str) -> bool:
    return (c == "_" or c.isalpha()) and c not in _NOT_IDENT


def _is_ident_char(c: str) -> bool:
    return (c == "_" or c.isalnum()) and c not in _NOT_IDENT


def _char_name(c: str) -> str:
    if c.isprintable() and not c.isspace():
        return f"'{c}'"
    return f"U+{ord(c):04X}"


def tokenize(text: str, filename: str | None = None) -> list[Token]:
    """The tokens of ``text``, ending with an ``'eof'`` token."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    line, line_start = 1, 0

    def error(message: str, at: int) -> ParseError:
        return ParseError(message, SourceLoc(line, at - line_start + 1, filename))

    while i < n:
        c = text[i]
        if c == "\n":
            i += 1
            line, line_start = line + 1, i
            continue
        if c.isspace():
            i += 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        col = i - line_start + 1
        two = text[i:i + 2]
        if two in TWO_CHAR:
            tokens.append(Token(TWO_CHAR[two], two, line, col))
            i += 2
            continue
        if c.isdigit() and c.isascii() or (c == "." and text[i + 1:i + 2].isdigit()):
            start = i
            while i < n and text[i].isascii() and text[i].isdigit():
                i += 1
            is_float = False
            if i < n and text[i] == ".":
                is_float = True
                i += 1
                while i < n and text[i].isascii() and text[i].isdigit():
                    i += 1
            if i < n and text[i] in "eE":
                j = i + 1
                if j < n and text[j] in "+-":
                    j += 1
                if j < n and text[j].isascii() and text[j].isdigit():
                    is_float = True
                    i = j
                    while i < n and text[i].isascii() and text[i].isdigit():
                        i += 1
                else:
                    raise error(f"invalid number '{text[start:j]}': the exponent "
                                "needs digits (e.g. '1e-3')", start)
            spelled = text[start:i]
            if i < n and (_is_ident_char(text[i]) or text[i] == "."):
                j = i
                while j < n and (_is_ident_char(text[j]) or text[j] == "."):
                    j += 1
                raise error(f"invalid number '{text[start:j]}'", start)
            if i < n and text[i] == SUBSCRIPT_O:
                i += 1
            if is_float:
                tokens.append(Token("float", spelled, line, col, float(spelled)))
            else:
                tokens.append(Token("int", spelled, line, col, _int_value(spelled)))
            continue
        if _is_ident_start(c):
            start = i
            while i < n and _is_ident_char(text[i]):
                i += 1
            name = text[start:i]
            if i < n and text[i] == SUBSCRIPT_O:
                i += 1
            kind = KEYWORDS.get(name, "ident")
            value = (name == "True") if kind == "bool" else name
            tokens.append(Token(kind, name, line, col, value))
            continue
        if c in ONE_CHAR:
            tokens.append(Token(ONE_CHAR[c], c, line, col))
            i += 1
            continue
        if c == SUBSCRIPT_O:
            raise error("unexpected 'ₒ': the subscript may only follow a number "
                        "or a name (as in 'iₒ' or '-1ₒ')", i)
        hint = _LONE_HINTS.get(c)
        raise error(f"unexpected character {_char_name(c)}" + (f"; {hint}" if hint else ""), i)
    tokens.append(Token("eof", "", line, n - line_start + 1))
    return tokens


def _int_value(digits: str) -> int:
    """The value of a decimal literal of any length (Python's ``int(str)`` refuses more
    than about 4,300 digits); the checker reports one too large for its type."""
    value = 0
    for i in range(0, len(digits), 4000):
        chunk = digits[i:i + 4000]
        value = value * 10 ** len(chunk) + int(chunk)
    return value
