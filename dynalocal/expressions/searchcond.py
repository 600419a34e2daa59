"""SearchVectors' SearchConditionExpression: equality terms `attr = :value` joined by AND
(docs/behaviour/vectors.md §4). Other comparators and operators are refused with DynamoDB's texts.
"""
from __future__ import annotations

import re

from dynalocal.errors import ValidationException
from dynalocal.expressions.reserved import RESERVED

PREFIX = "Invalid SearchConditionExpression: "
_TOKEN = re.compile(r"\s*(?:(#[A-Za-z0-9_]+)|(:[A-Za-z0-9_]+)|(<>|<=|>=|=|<|>)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")
_OPERATORS = frozenset(("OR", "NOT", "BETWEEN", "IN"))


def _fail(detail: str) -> ValidationException:
    return ValidationException(PREFIX + detail)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: name, alias, value, cmp, word-or-symbol."""
    out = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # only trailing blanks are left
            break
        pos = match.end()
        alias, value, cmp, word, other = match.groups()
        if alias:
            out.append(("name", alias))
        elif value:
            out.append(("value", value))
        elif cmp:
            out.append(("cmp", cmp))
        elif word:
            out.append(("word", word))
        elif other:
            out.append(("other", other))
    return out


def parse(text: str) -> list[tuple[str, str]]:
    """The (attribute name or #alias, :value) pairs of an expression, in order."""
    if not text.strip():
        raise _fail("The expression can not be empty;")
    tokens = _tokens(text)
    terms: list[tuple[str, str]] = []
    i = 0
    while True:
        chunk = tokens[i:i + 3]
        for kind, word in chunk:
            if kind == "word" and word.upper() in _OPERATORS or kind == "other" and word in "()":
                raise _fail("Invalid operator used in SearchConditionExpression")
        if len(chunk) < 3:
            raise _fail(f'Syntax error; token: <EOF>, near: "{text.strip()[-10:]}"')
        left, cmp, right = chunk
        if cmp[0] != "cmp":
            if cmp[0] == "other" and cmp[1] in ".[":
                raise _fail("Nested attributes are not supported in SearchConditionExpression")
            raise _fail(f'Syntax error; token: "{cmp[1]}"')
        if cmp[1] != "=":
            raise _fail("Invalid comparator used in SearchConditionExpression")
        if left[0] == "value" and right[0] in ("word", "name"):
            left, right = right, left
        if left[0] not in ("word", "name") or right[0] != "value":
            raise _fail("A SearchConditionExpression term must compare an attribute with a value")
        if left[0] == "word" and left[1].upper() in RESERVED:
            raise _fail(f"Attribute name is a reserved keyword; reserved keyword: {left[1]}")
        terms.append((left[1], right[1]))
        i += 3
        if i == len(tokens):
            return terms
        kind, word = tokens[i]
        if kind == "other" and word in ".[":
            raise _fail("Nested attributes are not supported in SearchConditionExpression")
        if kind == "word" and word.upper() in _OPERATORS:
            raise _fail("Invalid operator used in SearchConditionExpression")
        if kind != "word" or word.upper() != "AND":
            raise _fail(f'Syntax error; token: "{word}"')
        i += 1
