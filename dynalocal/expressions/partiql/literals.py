"""PartiQL literals: strings, numbers, booleans, NULL, `?` parameters and (nested) list, bag and
map literals, as AttributeValues or, when they hold parameters, as templates filled per execution."""
from __future__ import annotations

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.partiql.ast import Composite, Param, Template, bag
from dynalocal.expressions.partiql.cursor import Cursor
from dynalocal.expressions.partiql.lexer import IDENT, ION, NUMBER, PUNCT, QUOTED, STRING
from dynalocal.values import numbers

MISSING_COMPARED = "MISSING must be compared using IS operator"


class LiteralParser(Cursor):
    """The literal part of the grammar; `Parser` adds statements, conditions and paths."""

    def slot(self, template: Template) -> A.Value:
        self.slots.append(template)
        return A.Value(f":v{len(self.slots) - 1}")

    def parse_value(self) -> A.Value:
        """A literal or `?` as a slot."""
        return self.slot(self.parse_literal())

    def parse_literal(self) -> Template:
        """An AttributeValue (constant) or a template holding parameters."""
        tok = self.next()
        kind, text = tok.kind, tok.text
        if kind == STRING:
            return {"S": text}
        if kind == NUMBER:
            return {"N": numbers.canonical(text)}
        if kind == PUNCT:
            if text in ("-", "+") and self.peek().kind == NUMBER:
                number = self.next().text
                return {"N": numbers.canonical(("-" if text == "-" else "") + number)}
            if text == "?":
                self.params += 1
                return Param(self.params - 1)
            if text in ("[", "<<", "{"):
                self.enter(tok)
                found = self._collection("]", "L") if text == "[" else \
                    self._collection(">>", "BAG") if text == "<<" else self._map()
                self.depth -= 1
                return found
        if kind == ION:
            raise ValidationException(
                f"Ion Literals are not supported: at {tok.line}:{tok.column}:{tok.end - tok.start}")
        word = tok.keyword()
        if word in ("TRUE", "FALSE"):
            return {"BOOL": word == "TRUE"}
        if word == "NULL":
            return {"NULL": True}
        if word == "MISSING":
            raise ValidationException(MISSING_COMPARED)
        raise self.error(tok)

    def _collection(self, close: str, kind: str) -> Template:
        items: list[Template] = []
        if not self.at_punct(close):
            items.append(self.parse_literal())
            while self.at_punct(","):
                self.pos += 1
                items.append(self.parse_literal())
        self.expect_punct(close)
        constants = [t for t in items if isinstance(t, dict)]
        if len(constants) != len(items):
            return Composite(kind, tuple(items))
        return {"L": constants} if kind == "L" else bag(constants)

    def _map(self) -> Template:
        pairs: list = []
        seen: set[str] = set()
        while not self.at_punct("}"):
            if pairs:
                self.expect_punct(",")
            tok = self.next()
            if tok.kind != STRING:
                what = "VariableReference" if tok.kind in (IDENT, QUOTED) else "Literal"
                raise ValidationException(f"Tuple keys must be of type String. Actual type: {what} under root at "
                                          f"{tok.line}:{tok.column}:{tok.end - tok.start}")
            if tok.text in seen:
                raise ValidationException(f"Duplicate keys in tuple. Key: {tok.text} under root at "
                                          f"{tok.line}:{tok.column}:{tok.end - tok.start}")
            seen.add(tok.text)
            self.expect_punct(":")
            pairs.append((tok.text, self.parse_literal()))
        self.pos += 1
        if any(not isinstance(t, dict) for _, t in pairs):
            return Composite("M", tuple(pairs))
        return {"M": dict(pairs)}
