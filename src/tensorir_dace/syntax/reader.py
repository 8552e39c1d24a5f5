"""Reading tokens for the parser: look-ahead, expectations, and error messages
that name the token found and its position."""

from __future__ import annotations

from ..errors import ParseError, SourceLoc
from .lexer import Token, tokenize

# How an expected token kind is named in messages.
_SHOWN = {
    "←": "'←' (or '<-')",
    "→": "'→' (or '->')",
    "⟫": "'⟫' (or '>>')",
    "ident": "a name",
    "eof": "end of input",
}


def shown(kind: str) -> str:
    return _SHOWN.get(kind, f"'{kind}'")


class TokenReader:
    """The token stream of one text and the position in it."""

    def __init__(self, text: str, filename: str | None = None):
        if not isinstance(text, str):
            raise TypeError(f"expected the program text as a str, got {type(text).__name__}")
        self.filename = filename
        self.tokens = tokenize(text, filename)
        self.pos = 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def at(self, kind: str, ahead: int = 0) -> bool:
        return self.peek(ahead).kind == kind

    def at_word(self, word: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == "ident" and tok.text == word

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "eof":
            self.pos += 1
        return tok

    def accept(self, kind: str) -> Token | None:
        if self.at(kind):
            return self.advance()
        return None

    def loc(self, tok: Token) -> SourceLoc:
        return SourceLoc(tok.line, tok.column, self.filename)

    def where(self, tok: Token) -> str:
        return f"{tok.line}:{tok.column}"

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        return ParseError(message, self.loc(tok if tok is not None else self.peek()))

    def found(self, tok: Token | None = None) -> str:
        tok = tok if tok is not None else self.peek()
        text = "found " + tok.describe()
        if tok.kind == "←" and tok.text == "<-":
            text += " (write 'x < -1', with a space, to compare with a negative number)"
        elif tok.kind == "⟪" and tok.text == "<<":
            text += " (write 'x < <<…>>(y)' or 'x < (<<…>>(y))' to compare with a shift)"
        return text

    def expect(self, kind: str, context: str = "") -> Token:
        if self.at(kind):
            return self.advance()
        context = f" {context}" if context else ""
        raise self.error(f"expected {shown(kind)}{context}, {self.found()}")

    def expect_closing(self, kind: str, what: str, opener: Token) -> Token:
        """``kind`` closing ``what`` opened by ``opener``."""
        return self.expect(kind, f"to close the {what} opened at {self.where(opener)}")

    def expect_ident(self, what: str) -> Token:
        if self.at("ident"):
            return self.advance()
        raise self.error(f"expected {what}, {self.found()}")

    def expect_end(self, after: str) -> None:
        if not self.at("eof"):
            raise self.error(f"expected end of input after {after}, {self.found()}")
