"""Tokenizer for DynamoDB's PartiQL dialect: a character loop, no regular expressions.

Names follow PartiQL rather than the expression language: bare identifiers may contain `_`
and `$` and are not checked against DynamoDB's expression reserved words (only PartiQL's own
keywords are reserved), double quotes delimit identifiers (`""` escapes a quote), single
quotes delimit strings (`''` escapes). Positions are kept as line:column for error messages.
"""
from __future__ import annotations

from dynalocal.errors import malformed_statement
from dynalocal.expressions.frozen import Frozen, set_field

IDENT = "IDENT"  # bare identifier or keyword
QUOTED = "QUOTED"  # "double quoted" identifier
STRING = "STRING"  # 'single quoted' string
NUMBER = "NUMBER"
PUNCT = "PUNCT"  # ( ) [ ] { } , . = <> != < <= > >= + - * / ? : ; << >>
ION = "ION"  # `backtick` Ion literal (rejected by the parser)
EOF = "EOF"

_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
_DIGITS = frozenset("0123456789")
_WORD = _START | _DIGITS
_SPACE = frozenset(" \t\r\n")
_SINGLE = frozenset("()[]{},.=+-*/?:;%")

# PartiQL's reserved words (SQL-92 plus PartiQL's additions): bare identifiers spelled like
# these (any case) are keywords; quote them ("value") to use them as attribute names.
KEYWORDS = frozenset("""
ABSOLUTE ACTION ADD ALL ALLOCATE ALTER AND ANY ARE AS ASC ASSERTION AT AUTHORIZATION AVG BAG BEGIN
BETWEEN BIT BIT_LENGTH BOTH BY CASCADE CASCADED CASE CAST CATALOG CHAR CHARACTER CHARACTER_LENGTH
CHAR_LENGTH CHECK CLOSE COALESCE COLLATE COLLATION COLUMN COMMIT CONFLICT CONNECT CONNECTION
CONSTRAINT CONSTRAINTS CONTINUE CONVERT CORRESPONDING COUNT CREATE CROSS CURRENT CURRENT_DATE
CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURSOR DATE DATE_ADD DATE_DIFF DEALLOCATE DEC DECIMAL
DECLARE DEFAULT DEFERRABLE DEFERRED DELETE DESC DESCRIBE DESCRIPTOR DIAGNOSTICS DISCONNECT DISTINCT
DO DOMAIN DOUBLE DROP ELSE END END-EXEC ESCAPE EXCEPT EXCEPTION EXEC EXECUTE EXISTS EXTERNAL EXTRACT
FALSE FETCH FIRST FLOAT FOR FOREIGN FOUND FROM FULL GET GLOBAL GO GOTO GRANT GROUP HAVING IDENTITY
IMMEDIATE IN INDEX INDICATOR INITIALLY INNER INPUT INSENSITIVE INSERT INT INTEGER INTERSECT INTERVAL
INTO IS ISOLATION JOIN KEY LANGUAGE LAST LEADING LEFT LET LEVEL LIKE LIMIT LIST LOCAL LOWER MATCH
MAX MIN MISSING MINUTE MODIFIED MODULE MONTH NAMES NATIONAL NATURAL NCHAR NEW NEXT NO NOT NOTHING
NULL NULLIF NUMERIC OCTET_LENGTH OF OFFSET OLD ON ONLY OPEN OPTION OR ORDER OUTER OUTPUT OVERLAPS PAD
PARTIAL PIVOT POSITION PRECISION PREPARE PRESERVE PRIMARY PRIOR PRIVILEGES PROCEDURE PUBLIC READ
REAL REFERENCES RELATIVE REMOVE RESTRICT RETURNING REVOKE RIGHT ROLLBACK ROWS SCHEMA SCROLL SECOND
SECTION SELECT SESSION SESSION_USER SET SEXP SIZE SMALLINT SOME SPACE SQL SQLCODE SQLERROR SQLSTATE
STRUCT SUBSTRING SUM SYSTEM_USER TABLE TEMPORARY THEN TIME TIMESTAMP TO TRAILING TRANSACTION
TRANSLATE TRANSLATION TRIM TRUE TUPLE UNION UNIQUE UNKNOWN UNPIVOT UPDATE UPPER USAGE USER USING
VALUE VALUES VARCHAR VARYING VIEW WHEN WHENEVER WHERE WITH WORK WRITE YEAR ZONE
""".split())


class Token(Frozen):
    """One token: kind, text (identifiers/strings unescaped), offsets, and its 1-based line/column."""

    __slots__ = __match_args__ = ("kind", "text", "start", "end", "line", "column")
    kind: str
    text: str
    start: int
    end: int
    line: int
    column: int

    def __init__(self, kind: str, text: str, start: int, end: int, line: int, column: int) -> None:
        set_field(self, "kind", kind)
        set_field(self, "text", text)
        set_field(self, "start", start)
        set_field(self, "end", end)
        set_field(self, "line", line)
        set_field(self, "column", column)

    def keyword(self) -> str | None:
        """The upper-cased keyword this token is, if it is a bare reserved word."""
        if self.kind != IDENT:
            return None
        upper = self.text.upper()
        return upper if upper in KEYWORDS else None


def _quoted(source: str, i: int, quote: str) -> tuple[str, int] | None:
    """Body of a quoted token starting at i (the quote), with doubled quotes unescaped; None if unterminated."""
    out, n, j = [], len(source), i + 1
    while j < n:
        ch = source[j]
        if ch == quote:
            if j + 1 < n and source[j + 1] == quote:
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1
        out.append(ch)
        j += 1
    return None


def _number_end(source: str, i: int) -> int:
    """End of a numeric literal (digits, optional fraction, optional exponent) starting at i."""
    n = len(source)
    while i < n and source[i] in _DIGITS:
        i += 1
    if i < n and source[i] == "." and i + 1 < n and source[i + 1] in _DIGITS:
        i += 1
        while i < n and source[i] in _DIGITS:
            i += 1
    if i < n and source[i] in "eE":
        j = i + 1
        if j < n and source[j] in "+-":
            j += 1
        if j < n and source[j] in _DIGITS:
            i = j
            while i < n and source[i] in _DIGITS:
                i += 1
    return i


def tokenize(source: str) -> list[Token]:
    """Split a statement into tokens ending with EOF; unterminated quotes are syntax errors."""
    tokens: list[Token] = []
    append = tokens.append
    i, n, line, line_start = 0, len(source), 1, 0
    while i < n:
        ch = source[i]
        if ch in _SPACE:
            if ch == "\n":
                line, line_start = line + 1, i + 1
            i += 1
            continue
        start, column = i, i - line_start + 1
        if ch == "-" and source[i + 1:i + 2] == "-":  # -- comment to end of line
            while i < n and source[i] != "\n":
                i += 1
            continue
        if ch == "/" and source[i + 1:i + 2] == "*":  # /* block comment */
            end = source.find("*/", i + 2)
            if end < 0:
                raise malformed_statement(f"Unterminated comment at {line}:{column}")
            line += source.count("\n", i, end)
            if "\n" in source[i:end]:
                line_start = source.rfind("\n", i, end) + 1
            i = end + 2
            continue
        if ch in _START:
            i += 1
            while i < n and source[i] in _WORD:
                i += 1
            append(Token(IDENT, source[start:i], start, i, line, column))
        elif ch in _DIGITS or (ch == "." and source[i + 1:i + 2] in _DIGITS and i + 1 < n):
            i = _number_end(source, i + (ch == "."))
            append(Token(NUMBER, source[start:i], start, i, line, column))
        elif ch in "'\"`":
            if ch == "`":
                end = source.find("`", i + 1)
                if end < 0:
                    raise malformed_statement(f"Unterminated Ion literal at {line}:{column}")
                append(Token(ION, source[i + 1:end], start, end + 1, line, column))
                i = end + 1
                continue
            found = _quoted(source, i, ch)
            if found is None:
                raise malformed_statement(f"Unterminated quoted {'string' if ch == chr(39) else 'identifier'} "
                                        f"at {line}:{column}")
            text, i = found
            append(Token(STRING if ch == "'" else QUOTED, text, start, i, line, column))
        elif ch == "<":
            i += 1
            if i < n and source[i] in "=><":
                i += 1
            append(Token(PUNCT, source[start:i], start, i, line, column))
        elif ch == ">":
            i += 1
            if i < n and source[i] in "=>":
                i += 1
            append(Token(PUNCT, source[start:i], start, i, line, column))
        elif ch == "!" and source[i + 1:i + 2] == "=":
            i += 2
            append(Token(PUNCT, "!=", start, i, line, column))
        elif ch == "=" and source[i + 1:i + 2] == "=":
            i += 2
            append(Token(PUNCT, "==", start, i, line, column))
        elif ch == "|" and source[i + 1:i + 2] == "|":
            i += 2
            append(Token(PUNCT, "||", start, i, line, column))
        elif ch in _SINGLE:
            i += 1
            append(Token(PUNCT, ch, start, i, line, column))
        else:
            i += 1
            append(Token(PUNCT, ch, start, i, line, column))  # unknown: the parser rejects it
    append(Token(EOF, "<EOF>", n, n, line, n - line_start + 1))
    return tokens
