"""Tokenizer for DynamoDB expressions: a simple character loop, no regular expressions.

Unknown characters become one-character ILLEGAL tokens rather than errors, so the parser
reports them the way DynamoDB does: `Syntax error; token: "_", near: "SET _123"`.
"""
from __future__ import annotations

from dynalocal.expressions.frozen import Frozen, set_field

NAME = "NAME"  # bare attribute name, keyword or function name
ATTR_NAME = "ATTR_NAME"  # #placeholder
ATTR_VALUE = "ATTR_VALUE"  # :placeholder
INT = "INT"  # decimal digits (list indexes)
PUNCT = "PUNCT"  # ( ) [ ] , . = + - < <= <> > >=
ILLEGAL = "ILLEGAL"
EOF = "EOF"

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
_WORD = _LETTERS | _DIGITS | {"_"}
_SPACE = frozenset(" \t\r\n")
_SINGLE = frozenset("()[],.=+-")


class Token(Frozen):
    """One token: its kind, its text and its [start, end) offsets in the source."""

    __slots__ = __match_args__ = ("kind", "text", "start", "end")
    kind: str
    text: str
    start: int
    end: int

    def __init__(self, kind: str, text: str, start: int, end: int) -> None:
        set_field(self, "kind", kind)
        set_field(self, "text", text)
        set_field(self, "start", start)
        set_field(self, "end", end)


def tokenize(source: str) -> list[Token]:
    """Split an expression into tokens, always ending with one EOF token."""
    tokens: list[Token] = []
    append = tokens.append
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch in _SPACE:
            i += 1
            continue
        start = i
        if ch in _LETTERS:
            i += 1
            while i < n and source[i] in _WORD:
                i += 1
            append(Token(NAME, source[start:i], start, i))
        elif ch in _DIGITS:
            i += 1
            while i < n and source[i] in _DIGITS:
                i += 1
            append(Token(INT, source[start:i], start, i))
        elif ch == "#" or ch == ":":
            i += 1
            while i < n and source[i] in _WORD:
                i += 1
            kind = (ATTR_NAME if ch == "#" else ATTR_VALUE) if i > start + 1 else ILLEGAL
            append(Token(kind, source[start:i], start, i))
        elif ch in _SINGLE:
            i += 1
            append(Token(PUNCT, ch, start, i))
        elif ch == "<":
            i += 1
            if i < n and source[i] in "=>":
                i += 1
            append(Token(PUNCT, source[start:i], start, i))
        elif ch == ">":
            i += 1
            if i < n and source[i] == "=":
                i += 1
            append(Token(PUNCT, source[start:i], start, i))
        else:
            i += 1
            append(Token(ILLEGAL, ch, start, i))
    append(Token(EOF, "<EOF>", n, n))
    return tokens
