"""PartiQL statements, built from the expression AST (ast.py) so one evaluator serves both.

Conditions and update actions are ordinary `ast` nodes; paths carry literal names
(`placeholders=False`). Every literal or `?` in a statement becomes an `ast.Value` slot
(`:v0`, `:v1`, ...); `Slots` keeps, per slot, either the constant AttributeValue or a small
template that builds it from the request's Parameters, so one parsed statement serves every
request with the same text.
"""
from __future__ import annotations

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.frozen import Frozen, set_field

EMPTY_BAG = "Empty bags are not supported"
MIXED_BAG = "Unsupported data type in Bag. DynamoDB only supports either numbers or strings in bags"


class Param(Frozen):
    """The i-th `?` of a statement (0-based)."""

    __slots__ = __match_args__ = ("index",)
    index: int

    def __init__(self, index: int) -> None:
        set_field(self, "index", index)


class Composite(Frozen):
    """A list, map or bag literal with a `?` somewhere inside: kind L, M or BAG."""

    __slots__ = __match_args__ = ("kind", "items")
    kind: str
    items: tuple

    def __init__(self, kind: str, items: tuple) -> None:
        set_field(self, "kind", kind)
        set_field(self, "items", items)  # templates; for M, (key, template) pairs


Template = dict | Param | Composite  # what a slot holds: a constant AttributeValue or a template


def build(template: Template, params: list) -> dict:
    """The AttributeValue a slot template stands for, given the request's Parameters."""
    if isinstance(template, dict):
        return template
    if isinstance(template, Param):
        return params[template.index]
    if template.kind == "L":
        return {"L": [build(t, params) for t in template.items]}
    if template.kind == "M":
        return {"M": {k: build(t, params) for k, t in template.items}}
    return bag([build(t, params) for t in template.items])


def bag(members: list[dict]) -> dict:
    """A `<<...>>` literal: a string, number or binary set."""
    if not members:
        raise ValidationException(EMPTY_BAG)
    tags = {next(iter(m)) for m in members}
    if len(tags) != 1 or not tags <= {"S", "N", "B"}:
        raise ValidationException(MIXED_BAG)
    tag = tags.pop()
    return {tag + "S": [m[tag] for m in members]}


class Select(Frozen):
    """SELECT projection FROM table[.index] [WHERE] [ORDER BY]; projection None means `*`."""

    __slots__ = __match_args__ = ("table", "index", "projection", "where", "order")
    table: str
    index: str | None
    projection: tuple | None
    where: object
    order: tuple

    def __init__(self, table: str, index: str | None, projection: tuple | None, where: object,
                 order: tuple) -> None:
        set_field(self, "table", table)
        set_field(self, "index", index)
        set_field(self, "projection", projection)  # tuple of ast.Path
        set_field(self, "where", where)  # condition or None
        set_field(self, "order", order)  # ((name, descending), ...)


class Insert(Frozen):
    """INSERT INTO table VALUE {...}; item is the slot holding the whole item map."""

    __slots__ = __match_args__ = ("table", "item")
    table: str
    item: A.Value

    def __init__(self, table: str, item: A.Value) -> None:
        set_field(self, "table", table)
        set_field(self, "item", item)


class Update(Frozen):
    """UPDATE table SET/REMOVE ... WHERE ... [RETURNING ...]."""

    __slots__ = __match_args__ = ("table", "actions", "where", "returning")
    table: str
    actions: tuple
    where: object
    returning: str | None

    def __init__(self, table: str, actions: tuple, where: object, returning: str | None) -> None:
        set_field(self, "table", table)
        set_field(self, "actions", actions)  # ast.Action tuple
        set_field(self, "where", where)
        set_field(self, "returning", returning)  # ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW


class Delete(Frozen):
    """DELETE FROM table WHERE ... [RETURNING ALL OLD *]."""

    __slots__ = __match_args__ = ("table", "where", "returning")
    table: str
    where: object
    returning: str | None

    def __init__(self, table: str, where: object, returning: str | None) -> None:
        set_field(self, "table", table)
        set_field(self, "where", where)
        set_field(self, "returning", returning)


class Exists(Frozen):
    """[NOT] EXISTS(SELECT ...): a condition check inside ExecuteTransaction."""

    __slots__ = __match_args__ = ("select", "negated")
    select: Select
    negated: bool

    def __init__(self, select: Select, negated: bool) -> None:
        set_field(self, "select", select)
        set_field(self, "negated", negated)


class Statement:
    """A parsed statement: its tree, the slot templates and the number of `?` parameters."""

    __slots__ = ("tree", "slots", "params", "constant", "plans")

    def __init__(self, tree: object, slots: list, params: int) -> None:
        self.tree = tree
        self.slots = slots
        self.params = params
        self.constant = {f":v{i}": t for i, t in enumerate(slots) if isinstance(t, dict)}
        self.plans: dict = {}  # key schema -> plan (the server's planner fills it)

    @property
    def is_read(self) -> bool:
        return isinstance(self.tree, Select)

    def values(self, params: list) -> dict:
        """Slot name -> AttributeValue for one request (constants are shared, never copied)."""
        if len(self.constant) == len(self.slots):
            return self.constant
        out = dict(self.constant)
        for i, template in enumerate(self.slots):
            if not isinstance(template, dict):
                out[f":v{i}"] = build(template, params)
        return out
