"""Recursive-descent parser for DynamoDB's PartiQL: SELECT, INSERT, UPDATE, DELETE, EXISTS.

Produces partiql_ast statements whose conditions and update actions are expression-language
AST nodes. Parsed statements are cached by text, like expression templates.

Condition precedence (low to high): OR, AND, NOT, then one predicate (comparison, [NOT]
BETWEEN, [NOT] IN, IS [NOT] MISSING/NULL, function) over operands (paths, literals, `?`, size()).
Nesting (parentheses, NOTs, function calls, list/map/bag literals) is bounded by MAX_NESTING (cursor.py),
so deep input is a ValidationException rather than an exhausted Python stack (issue 28).
"""
from __future__ import annotations

from collections.abc import Callable

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.partiql.ast import (
    Delete,
    Exists,
    Insert,
    Select,
    Statement,
    Update,
)
from dynalocal.expressions.partiql.lexer import (
    EOF,
    IDENT,
    NUMBER,
    PUNCT,
    QUOTED,
    STRING,
    Token,
)
from dynalocal.expressions.partiql.literals import MISSING_COMPARED, LiteralParser
from dynalocal.values.sizedcache import SizedCache

COMPARATORS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
CONDITION_FUNCTIONS = frozenset(("begins_with", "contains", "attribute_type", "attribute_exists",
                                 "attribute_not_exists"))
ARITY = {"begins_with": 2, "contains": 2, "attribute_type": 2, "attribute_exists": 1, "attribute_not_exists": 1,
         "size": 1, "list_append": 2, "set_add": 2, "set_delete": 2, "if_not_exists": 2}
UPDATE_FUNCTIONS = frozenset(("list_append", "if_not_exists"))
RETURNING = {("ALL", "OLD"): "ALL_OLD", ("MODIFIED", "OLD"): "UPDATED_OLD", ("ALL", "NEW"): "ALL_NEW",
             ("MODIFIED", "NEW"): "UPDATED_NEW"}
CACHE_SIZE = 4096
# The cache is bounded in bytes too: a parsed text takes ~60 bytes per character, and texts reach 4 KB or more.
CACHE_BYTES = 32 << 20
AST_BYTES_PER_CHAR, ENTRY_BYTES = 64, 256


class Parser(LiteralParser):
    """Parses one statement; `slots` collects its literal and parameter values."""

    # -- statements ----------------------------------------------------------------------------

    def parse(self) -> Statement:
        tok = self.peek()
        word = tok.keyword()
        if word == "SELECT":
            tree: object = self.parse_select()
        elif word == "INSERT":
            tree = self.parse_insert()
        elif word == "UPDATE":
            tree = self.parse_update()
        elif word == "DELETE":
            tree = self.parse_delete()
        elif word in ("EXISTS", "NOT"):
            negated = self.accept("NOT")
            self.expect("EXISTS")
            self.expect_punct("(")
            if not self.at("SELECT"):
                raise self.error()
            tree = Exists(self.parse_select(), negated)
            self.expect_punct(")")
        elif tok.kind == EOF:
            raise self.error()
        else:
            raise ValidationException("Invalid operation. Only select, insert, update and delete operations are valid")
        if self.at_punct(";"):
            self.pos += 1
        if self.peek().kind != EOF:
            raise self.error()
        return Statement(tree, self.slots, self.params)

    def parse_target(self) -> tuple[str, str | None]:
        table = self.parse_name()
        index = None
        if self.at_punct("."):
            self.pos += 1
            index = self.parse_name()
        return table, index

    def parse_select(self) -> Select:
        self.expect("SELECT")
        projection: tuple | None = None
        if self.at_punct("*"):
            self.pos += 1
        else:
            paths = [self.parse_path()]
            while self.at_punct(","):
                self.pos += 1
                paths.append(self.parse_path())
            projection = tuple(paths)
        self.expect("FROM")
        table, index = self.parse_target()
        if self.at_punct(","):
            raise ValidationException("Only select from a single table or index is supported.")
        where = self.parse_condition() if self.accept("WHERE") else None
        order = []
        if self.accept("ORDER"):
            self.expect("BY")
            while True:
                name = self.parse_name()
                descending = self.accept("DESC")
                if not descending:
                    self.accept("ASC")
                order.append((name, descending))
                if not self.at_punct(","):
                    break
                self.pos += 1
        if self.peek().keyword() in ("LIMIT", "OFFSET", "GROUP", "HAVING"):
            tok = self.peek()
            raise ValidationException(
                f"Unsupported clause: {tok.text.upper()} at {tok.line}:{tok.column}:{tok.end - tok.start}")
        return Select(table, index, projection, where, tuple(order))

    def parse_insert(self) -> Insert:
        self.expect("INSERT")
        self.expect("INTO")
        table, index = self.parse_target()
        if index is not None:
            raise self.error()
        self.expect("VALUE")
        tok = self.peek()
        if tok.kind != PUNCT or tok.text != "{":
            raise ValidationException("Unsupported format in item expression. Please use struct format {...} to "
                                      f"express item values for insert statement. at {tok.line}:{tok.column}:"
                                      f"{tok.end - tok.start}")
        return Insert(table, self.parse_value())

    def parse_update(self) -> Update:
        self.expect("UPDATE")
        table, index = self.parse_target()
        if index is not None:
            raise self.error()
        actions: list[A.Action] = []
        while True:
            if self.accept("SET"):
                actions.append(self.parse_assignment())
                while self.at_punct(","):
                    self.pos += 1
                    actions.append(self.parse_assignment())
            elif self.accept("REMOVE"):
                actions.append(A.Action("REMOVE", self.parse_path()))
                while self.at_punct(","):
                    self.pos += 1
                    actions.append(A.Action("REMOVE", self.parse_path()))
            else:
                break
        if not actions:
            raise self.error()
        where = self.parse_condition() if self.accept("WHERE") else None
        return Update(table, tuple(actions), where, self.parse_returning())

    def parse_delete(self) -> Delete:
        self.expect("DELETE")
        self.expect("FROM")
        table, index = self.parse_target()
        if index is not None:
            raise self.error()
        where = self.parse_condition() if self.accept("WHERE") else None
        returning = self.parse_returning()
        if returning is not None and returning != "ALL_OLD":
            raise ValidationException(f"Invalid returning clause: {self.text[self._returning_at:].strip().rstrip(';')}"
                                      ". Only RETURNING ALL OLD * is allowed in DELETE statements.")
        return Delete(table, where, returning)

    def parse_returning(self) -> str | None:
        self._returning_at = self.peek().start
        if not self.accept("RETURNING"):
            return None
        first, second = self.next(), self.next()
        mode = RETURNING.get((first.text.upper(), second.text.upper()))
        if mode is None or first.kind != IDENT or second.kind != IDENT:
            raise self.error(first if mode is None else second)
        self.expect_punct("*")
        return mode

    def parse_assignment(self) -> A.Action:
        path = self.parse_path()
        self.expect_punct("=")
        tok = self.peek()
        if tok.kind == IDENT and tok.text.lower() in ("set_add", "set_delete") and self.peek(1).text == "(":
            call = self.parse_call(tok.text.lower())
            if call.args[0] != path:
                raise ValidationException(f"The first argument to {tok.text.upper()} must equal the assignment value")
            if not isinstance(call.args[1], A.Value):
                raise self.error(tok)
            return A.Action("ADD" if call.name == "set_add" else "DELETE", path, call.args[1])
        value = self.parse_update_operand()
        if self.at_punct("+") or self.at_punct("-"):
            op = self.next().text
            value = A.Arith(op, value, self.parse_update_operand())
        return A.Action("SET", path, value)

    def parse_update_operand(self) -> A.Operand:
        tok = self.peek()
        if tok.kind == IDENT and self.peek(1).text == "(":
            if tok.text.lower() not in UPDATE_FUNCTIONS:
                self._check_function(tok)
            call = self.parse_call(tok.text.lower(), self.parse_update_operand)
            if call.name == "if_not_exists" and not isinstance(call.args[0], A.Path):
                raise self.error(tok)
            return call
        return self.parse_operand()

    # -- conditions ----------------------------------------------------------------------------

    def parse_condition(self) -> A.Cond:
        items = [self.parse_and()]
        while self.accept("OR"):
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else A.Or(tuple(items))

    def parse_and(self) -> A.Cond:
        items = [self.parse_not()]
        while self.accept("AND"):
            items.append(self.parse_not())
        return items[0] if len(items) == 1 else A.And(tuple(items))

    def parse_not(self) -> A.Cond:
        tok = self.peek()
        if self.accept("NOT"):
            self.enter(tok)
            node: A.Cond = A.Not(self.parse_not())
        elif self.at_punct("("):
            self.enter(tok)
            self.pos += 1
            node = self.parse_condition()
            self.expect_punct(")")
        else:
            return self.parse_predicate()
        self.depth -= 1
        return node

    def parse_predicate(self) -> A.Cond:
        left = self.parse_operand()
        tok = self.peek()
        if tok.kind == PUNCT and tok.text in COMPARATORS:
            self.pos += 1
            right = self.parse_operand()  # MISSING there is an error of its own (parse_operand)
            self._no_arithmetic()
            return A.Compare(COMPARATORS[tok.text], left, right)
        self._no_arithmetic()
        if self.accept("IS"):
            negated = self.accept("NOT")
            if self.accept("MISSING"):
                self._require_path(left, tok)
                return A.Call("attribute_exists" if negated else "attribute_not_exists", (left,))
            self.expect("NULL")
            self._require_path(left, tok)
            test = A.Call("attribute_type", (left, self.slot({"S": "NULL"})))
            return A.Not(test) if negated else test
        negated = self.accept("NOT")
        if self.accept("BETWEEN"):
            low = self.parse_operand()
            self.expect("AND")
            node: A.Cond = A.Between(left, low, self.parse_operand())
        elif self.accept("IN"):
            node = A.In(left, self.parse_in_list())
        elif negated:
            raise self.error()
        elif isinstance(left, A.Call) and left.name in CONDITION_FUNCTIONS:
            return left
        else:
            raise self.error()
        return A.Not(node) if negated else node

    def _no_arithmetic(self) -> None:
        tok = self.peek()
        if tok.kind == PUNCT and tok.text in ("+", "-", "*", "/", "%", "||"):
            raise ValidationException(f"Unsupported operator in Condition Expression. Operator: {tok.text}")

    def _require_path(self, node: object, tok: Token) -> None:
        if not isinstance(node, A.Path):
            raise self.error(tok)

    def parse_in_list(self) -> tuple:
        close = {"(": ")", "[": "]"}.get(self.peek().text) if self.peek().kind == PUNCT else None
        if close is None:
            raise self.error()
        self.pos += 1
        options = [self.parse_operand()]
        while self.at_punct(","):
            self.pos += 1
            options.append(self.parse_operand())
        self.expect_punct(close)
        return tuple(options)

    # -- operands, paths and literals ----------------------------------------------------------

    def parse_operand(self) -> A.Operand:
        """path | literal | ? | function call."""
        tok = self.peek()
        if tok.kind == IDENT and self.peek(1).kind == PUNCT and self.peek(1).text == "(":
            if tok.text.lower() not in CONDITION_FUNCTIONS and tok.text.lower() != "size":
                self._check_function(tok)
            return self.parse_call(tok.text.lower())
        if tok.kind == QUOTED or (tok.kind == IDENT and tok.keyword() is None):
            return self.parse_path()
        if tok.keyword() == "MISSING":
            self.pos += 1  # MISSING is legal only after IS [NOT] (parse_predicate)
            raise ValidationException(MISSING_COMPARED)
        return self.parse_value()

    def _check_function(self, tok: Token) -> None:
        """A function name that does not belong here: unknown, or known but for the other context."""
        if tok.text.lower() not in ARITY:
            raise ValidationException(f"Unrecognized function: {tok.text.lower()}")
        raise self.error(tok)

    def parse_call(self, name: str, operand: Callable[[], A.Operand] | None = None) -> A.Call:
        if name not in ARITY:
            raise ValidationException(f"Unrecognized function: {name}")
        self.enter(self.peek())
        self.pos += 2  # name and "("
        operand = operand or self.parse_operand
        args = [operand()]
        while self.at_punct(","):
            self.pos += 1
            args.append(operand())
        self.expect_punct(")")
        if len(args) != ARITY[name]:
            raise ValidationException(f"Incorrect number of arguments for function: {name}")
        self.depth -= 1
        return A.Call(name, tuple(args))

    def parse_name(self) -> str:
        tok = self.peek()
        if tok.kind == QUOTED or (tok.kind == IDENT and tok.keyword() is None):
            self.pos += 1
            return tok.text
        raise self.error()

    def parse_path(self) -> A.Path:
        elements: list = [self.parse_name()]
        while True:
            if self.at_punct("."):
                self.pos += 1
                elements.append(self.parse_name())
            elif self.at_punct("["):
                self.pos += 1
                tok = self.next()
                if tok.kind == NUMBER and tok.text.isdigit():
                    elements.append(int(tok.text))
                elif tok.kind == STRING:
                    elements.append(tok.text)
                else:
                    raise self.error(tok)
                self.expect_punct("]")
            else:
                return A.Path(tuple(elements), placeholders=False)


_cache = SizedCache()  # text -> parsed, bounded in entries and bytes


def parse_statement(text: str) -> Statement:
    """The parsed statement for a text (cached; ValidationException on any syntax error)."""
    found = _cache.get(text)
    if found is None:
        found = Parser(text).parse()
        _cache.remember(text, found, ENTRY_BYTES + AST_BYTES_PER_CHAR * len(text), CACHE_SIZE, CACHE_BYTES)
    return found
