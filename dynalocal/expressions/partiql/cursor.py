"""The token cursor PartiQL's parser reads with: look ahead, accept and expect keywords and
punctuation, count nesting (bounded by MAX_NESTING, so deep input is a ValidationException rather
than an exhausted Python stack), and the error DynamoDB gives for an unexpected token."""
from __future__ import annotations

from dynalocal.errors import ValidationException, malformed_statement
from dynalocal.expressions.partiql.lexer import EOF, PUNCT, Token, tokenize

# Levels of parentheses, NOTs, calls and collection literals one statement may nest (all counted together);
# each level takes at most three Python frames here and in evaluation. DynamoDB's own limit is unpublished;
# values deeper than 32 levels are refused later by the item rules anyway (docs/behaviour/expressions.md §4).
MAX_NESTING = 100


class Cursor:
    """A statement's tokens and the position read to; `slots` collects its literal and parameter values."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks: list[Token] = tokenize(text)
        self.pos = 0
        self.slots: list = []
        self.params = 0
        self.depth = 0

    def error(self, tok: Token | None = None) -> ValidationException:
        tok = tok or self.toks[self.pos]
        where = f"{tok.line}:{tok.column}:{tok.end - tok.start}"
        return malformed_statement(f"Unexpected token '{tok.text}' at {where}")

    def peek(self, ahead: int = 0) -> Token:
        return self.toks[min(self.pos + ahead, len(self.toks) - 1)]

    def next(self) -> Token:
        tok = self.toks[self.pos]
        if tok.kind != EOF:
            self.pos += 1
        return tok

    def at(self, word: str) -> bool:
        return self.toks[self.pos].keyword() == word

    def at_punct(self, text: str) -> bool:
        tok = self.toks[self.pos]
        return tok.kind == PUNCT and tok.text == text

    def accept(self, word: str) -> bool:
        if self.at(word):
            self.pos += 1
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            raise self.error()

    def expect_punct(self, text: str) -> None:
        if not self.at_punct(text):
            raise self.error()
        self.pos += 1

    def enter(self, tok: Token) -> None:
        """One more level of nesting, opened by `tok`; a ValidationException past MAX_NESTING."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise malformed_statement(
                f"Nesting Levels have exceeded supported limits at {tok.line}:{tok.column}:{tok.end - tok.start}")
