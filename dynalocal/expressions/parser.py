"""Hand-written parser for condition, update and projection expressions.

Conditions are parsed with an explicit stack of parenthesis frames (not recursion), so
deeply nested input cannot exhaust Python's stack; only function-call nesting recurses and
it is capped by the operator limit. Syntax errors are raised at once; the semantic errors
DynamoDB reports only for well-formed input (reserved words, index range, nesting, repeated
clauses, redundant parentheses, operator count) are recorded and raised after the parse.
"""
from __future__ import annotations

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.lexer import ATTR_NAME, ATTR_VALUE, EOF, INT, NAME, PUNCT, Token, tokenize
from dynalocal.expressions.reserved import RESERVED

MAX_EXPRESSION_BYTES = 4096
MAX_OPERATORS = 300
MAX_PATH_DEPTH = 32
MAX_IN_OPERANDS = 100
MAX_INDEX = 2**31 - 1
COMPARATORS = frozenset(("=", "<>", "<", "<=", ">", ">="))
CONDITION_KEYWORDS = frozenset(("AND", "OR", "NOT", "BETWEEN", "IN"))
UPDATE_CLAUSES = ("SET", "REMOVE", "ADD", "DELETE")


class Parsed:
    """A parse result: the tree plus the placeholders it uses, in order of appearance."""

    __slots__ = ("tree", "names", "values")

    def __init__(self, tree: object, names: list[str], values: list[str]) -> None:
        self.tree = tree
        self.names = names
        self.values = values


def check_text(text: str, param: str) -> None:
    """Empty and oversized expressions are rejected before parsing."""
    if text == "":
        raise ValidationException(f"Invalid {param}: The expression can not be empty;")
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > MAX_EXPRESSION_BYTES:
        raise ValidationException(
            f"Invalid {param}: Expression size has exceeded the maximum allowed size; expression size: {size}")


class _Frame:
    """One parenthesis level of a condition: OR-terms, the current AND-run, pending NOTs."""

    __slots__ = ("ors", "ands", "nots", "items", "pure")

    def __init__(self) -> None:
        self.ors: list[A.Cond] = []
        self.ands: list[A.Cond] = []
        self.nots = 0
        self.items = 0
        self.pure = False  # exactly one primary, itself a parenthesised group, no operators

    def add(self, node: A.Cond, is_group: bool) -> None:
        if self.nots:
            for _ in range(self.nots):
                node = A.Not(node)
            self.nots = 0
            is_group = False
        self.items += 1
        self.pure = is_group and self.items == 1
        self.ands.append(node)

    def close_and(self) -> None:
        self.ors.append(self.ands[0] if len(self.ands) == 1 else A.And(tuple(self.ands)))
        self.ands = []
        self.pure = False

    def finish(self) -> A.Cond:
        self.close_and()
        return self.ors[0] if len(self.ors) == 1 else A.Or(tuple(self.ors))


class Parser:
    """Parses one expression of one kind; `param` names it in error messages."""

    def __init__(self, text: str, param: str, keywords: frozenset[str] = CONDITION_KEYWORDS) -> None:
        self.text = text
        self.param = param
        self.keywords = keywords
        self.toks: list[Token] = tokenize(text)
        self.pos = 0
        self.operators = 0
        self.call_depth = 0
        self.pending: str | None = None  # first semantic error, raised after a clean parse
        self.names: dict[str, None] = {}
        self.values: dict[str, None] = {}

    # -- helpers ---------------------------------------------------------------------------

    def fail(self, detail: str) -> ValidationException:
        return ValidationException(f"Invalid {self.param}: {detail}")

    def syntax_error(self) -> ValidationException:
        """DynamoDB's syntax error: the token plus source from the previous to the next token."""
        i, toks = self.pos, self.toks
        tok = toks[i]
        prev = toks[i - 1] if i > 0 else None
        nxt = toks[i + 1] if tok.kind != EOF and toks[i + 1].kind != EOF else None
        start = prev.start if prev else tok.start
        if nxt:
            end = nxt.end
        elif tok.kind != EOF:
            end = tok.end
        else:
            end = prev.end if prev else 0
        return self.fail(f'Syntax error; token: "{tok.text}", near: "{self.text[start:end]}"')

    def record(self, detail: str) -> None:
        if self.pending is None:
            self.pending = detail

    def peek(self) -> Token:
        return self.toks[self.pos]

    def is_punct(self, text: str) -> bool:
        tok = self.toks[self.pos]
        return tok.kind == PUNCT and tok.text == text

    def is_keyword(self, word: str) -> bool:
        tok = self.toks[self.pos]
        return tok.kind == NAME and tok.text.upper() == word

    def expect_punct(self, text: str) -> None:
        if not self.is_punct(text):
            raise self.syntax_error()
        self.pos += 1

    def count_operator(self) -> None:
        self.operators += 1

    def finish(self, tree: object) -> Parsed:
        """Require end of input, then raise deferred semantic errors."""
        if self.peek().kind != EOF:
            raise self.syntax_error()
        if self.operators > MAX_OPERATORS:
            raise self.fail(f"The expression contains too many operators; operator count: {self.operators}")
        if self.pending is not None:
            raise self.fail(self.pending)
        return Parsed(tree, list(self.names), list(self.values))

    # -- paths and operands ------------------------------------------------------------------

    def parse_name(self) -> str:
        tok = self.peek()
        if tok.kind == ATTR_NAME:
            self.names.setdefault(tok.text, None)
        elif tok.kind == NAME and tok.text.upper() not in self.keywords:
            if tok.text.upper() in RESERVED:
                self.record(f"Attribute name is a reserved keyword; reserved keyword: {tok.text}")
        else:
            raise self.syntax_error()
        self.pos += 1
        return tok.text

    def parse_path(self) -> A.Path:
        elements: list = [self.parse_name()]
        while True:
            if self.is_punct("."):
                self.pos += 1
                elements.append(self.parse_name())
            elif self.is_punct("["):
                self.pos += 1
                tok = self.peek()
                if tok.kind != INT:
                    raise self.syntax_error()
                self.pos += 1
                self.expect_punct("]")
                index = int(tok.text)
                if index > MAX_INDEX:
                    self.record(f"List index is not within the allowable range; index: [{tok.text}]")
                elements.append(index)
            else:
                break
        if len(elements) > MAX_PATH_DEPTH:
            self.record(f"The document path has too many nesting levels; nesting levels: {len(elements)}")
        return A.Path(tuple(elements))

    def parse_operand(self) -> A.Operand:
        """path | :value | function(operand, ...)."""
        tok = self.peek()
        if tok.kind == ATTR_VALUE:
            self.pos += 1
            self.values.setdefault(tok.text, None)
            return A.Value(tok.text)
        if tok.kind == NAME and self.toks[self.pos + 1].text == "(" and tok.text.upper() not in self.keywords:
            return self.parse_call()
        return self.parse_path()

    def parse_call(self) -> A.Call:
        name = self.peek().text
        self.pos += 2  # name and "("
        self.count_operator()
        self.call_depth += 1
        if self.call_depth > MAX_OPERATORS:
            raise self.fail(f"The expression contains too many operators; operator count: {self.operators}")
        args = [self.parse_operand()]
        while self.is_punct(","):
            self.pos += 1
            args.append(self.parse_operand())
        self.expect_punct(")")
        self.call_depth -= 1
        return A.Call(name, tuple(args))

    # -- conditions --------------------------------------------------------------------------

    def parse_condition(self) -> Parsed:
        """condition ::= NOT* primary { (AND | OR) NOT* primary } with parentheses."""
        frames = [_Frame()]
        expecting_operand = True
        while True:
            frame = frames[-1]
            if expecting_operand:
                if self.is_keyword("NOT"):
                    self.pos += 1
                    self.count_operator()
                    frame.nots += 1
                elif self.is_punct("("):
                    self.pos += 1
                    frames.append(_Frame())
                else:
                    frame.add(self.parse_predicate(), False)
                    expecting_operand = False
            elif self.is_keyword("AND"):
                self.pos += 1
                self.count_operator()
                frame.pure = False
                expecting_operand = True
            elif self.is_keyword("OR"):
                self.pos += 1
                self.count_operator()
                frame.close_and()
                expecting_operand = True
            elif self.is_punct(")") and len(frames) > 1:
                self.pos += 1
                frames.pop()
                if frame.pure:
                    self.record("The expression has redundant parentheses;")
                frames[-1].add(frame.finish(), True)
            elif self.peek().kind == EOF and len(frames) == 1:
                return self.finish(frame.finish())
            else:
                raise self.syntax_error()

    def parse_predicate(self) -> A.Cond:
        """comparison | BETWEEN | IN | function call."""
        left = self.parse_operand()
        tok = self.peek()
        if tok.kind == PUNCT and tok.text in COMPARATORS:
            self.pos += 1
            self.count_operator()
            return A.Compare(tok.text, left, self.parse_operand())
        if self.is_keyword("BETWEEN"):
            self.pos += 1
            self.count_operator()
            low = self.parse_operand()
            if not self.is_keyword("AND"):
                raise self.syntax_error()
            self.pos += 1
            return A.Between(left, low, self.parse_operand())
        if self.is_keyword("IN"):
            self.pos += 1
            self.count_operator()
            self.expect_punct("(")
            options = [self.parse_operand()]
            while self.is_punct(","):
                self.pos += 1
                options.append(self.parse_operand())
            self.expect_punct(")")
            if len(options) > MAX_IN_OPERANDS:
                self.record("The IN operator is provided with too many operands; "
                            f"number of operands: {len(options)}")
            return A.In(left, tuple(options))
        if isinstance(left, A.Call):
            return left
        raise self.syntax_error()

    # -- projections -------------------------------------------------------------------------

    def parse_projection(self) -> Parsed:
        """path { , path }."""
        paths = [self.parse_path()]
        while self.is_punct(","):
            self.pos += 1
            paths.append(self.parse_path())
        return self.finish(tuple(paths))

    # -- updates -----------------------------------------------------------------------------

    def parse_update(self) -> Parsed:
        """clause { clause }, each of SET / REMOVE / ADD / DELETE at most once."""
        actions: list[A.Action] = []
        seen: set[str] = set()
        while True:
            tok = self.peek()
            clause = tok.text.upper() if tok.kind == NAME else ""
            if clause not in UPDATE_CLAUSES:
                if tok.kind == EOF and actions:
                    return self.finish(A.UpdateExpr(tuple(actions)))
                raise self.syntax_error()
            if clause in seen:
                self.record(f'The "{clause}" section can only be used once in an update expression;')
            seen.add(clause)
            self.pos += 1
            actions.append(self.parse_action(clause))
            while self.is_punct(","):
                self.pos += 1
                actions.append(self.parse_action(clause))

    def parse_action(self, clause: str) -> A.Action:
        path = self.parse_path()
        if clause == "REMOVE":
            return A.Action(clause, path)
        if clause == "SET":
            self.expect_punct("=")
            value = self.parse_operand()
            if self.is_punct("+") or self.is_punct("-"):
                op = self.peek().text
                self.pos += 1
                self.count_operator()
                value = A.Arith(op, value, self.parse_operand())
            return A.Action(clause, path, value)
        tok = self.peek()
        if tok.kind != ATTR_VALUE:
            raise self.syntax_error()
        self.pos += 1
        self.values.setdefault(tok.text, None)
        return A.Action(clause, path, A.Value(tok.text))


def parse_condition(text: str, param: str) -> Parsed:
    """Parse a Condition/Filter/KeyCondition expression (syntax and structural checks only)."""
    check_text(text, param)
    return Parser(text, param).parse_condition()


def parse_update(text: str) -> Parsed:
    """Parse an UpdateExpression."""
    check_text(text, "UpdateExpression")
    return Parser(text, "UpdateExpression", frozenset(UPDATE_CLAUSES)).parse_update()


def parse_projection(text: str) -> Parsed:
    """Parse a ProjectionExpression."""
    check_text(text, "ProjectionExpression")
    return Parser(text, "ProjectionExpression", frozenset()).parse_projection()

