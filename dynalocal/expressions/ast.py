"""The small typed AST shared by expression parsing, legacy-parameter conversion and evaluation.

Paths keep `#placeholders` unresolved so one parsed tree serves every request that uses
the same expression text; names are looked up per request when the tree is bound.
"""
from __future__ import annotations

from collections.abc import Iterator

from dynalocal.expressions.frozen import Frozen
from dynalocal.expressions.frozen import set_field as _set


class Path(Frozen):
    """A document path: names (str) and list indexes (int).

    When `placeholders` is true, str elements starting with '#' are ExpressionAttributeNames
    keys; legacy-parameter paths set it false so any literal name is taken as is.
    """

    __slots__ = __match_args__ = ("elements", "placeholders")
    elements: tuple
    placeholders: bool

    def __init__(self, elements: tuple, placeholders: bool = True) -> None:
        _set(self, "elements", elements)
        _set(self, "placeholders", placeholders)


class Value(Frozen):
    """An ExpressionAttributeValues placeholder such as `:v`."""

    __slots__ = __match_args__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        _set(self, "name", name)


class Const(Frozen):
    """A literal AttributeValue (legacy parameters carry values inline)."""

    __slots__ = __match_args__ = ("av",)
    av: dict

    def __init__(self, av: dict) -> None:
        _set(self, "av", av)


class Call(Frozen):
    """A function call: size, begins_with, if_not_exists, ..."""

    __slots__ = __match_args__ = ("name", "args")
    name: str
    args: tuple

    def __init__(self, name: str, args: tuple) -> None:
        _set(self, "name", name)
        _set(self, "args", args)


class Arith(Frozen):
    """`left + right` or `left - right` in an UpdateExpression SET action."""

    __slots__ = __match_args__ = ("op", "left", "right")
    op: str
    left: Operand
    right: Operand

    def __init__(self, op: str, left: Operand, right: Operand) -> None:
        _set(self, "op", op)
        _set(self, "left", left)
        _set(self, "right", right)


Operand = Path | Value | Const | Call | Arith


class Compare(Frozen):
    """`left op right` with op one of = <> < <= > >=."""

    __slots__ = __match_args__ = ("op", "left", "right")
    op: str
    left: Operand
    right: Operand

    def __init__(self, op: str, left: Operand, right: Operand) -> None:
        _set(self, "op", op)
        _set(self, "left", left)
        _set(self, "right", right)


class Between(Frozen):
    """`subject BETWEEN low AND high`."""

    __slots__ = __match_args__ = ("subject", "low", "high")
    subject: Operand
    low: Operand
    high: Operand

    def __init__(self, subject: Operand, low: Operand, high: Operand) -> None:
        _set(self, "subject", subject)
        _set(self, "low", low)
        _set(self, "high", high)


class In(Frozen):
    """`subject IN (options...)`."""

    __slots__ = __match_args__ = ("subject", "options")
    subject: Operand
    options: tuple

    def __init__(self, subject: Operand, options: tuple) -> None:
        _set(self, "subject", subject)
        _set(self, "options", options)


class And(Frozen):
    """Two or more conditions joined by AND (chains are kept flat)."""

    __slots__ = __match_args__ = ("items",)
    items: tuple

    def __init__(self, items: tuple) -> None:
        _set(self, "items", items)


class Or(Frozen):
    """Two or more conditions joined by OR (chains are kept flat)."""

    __slots__ = __match_args__ = ("items",)
    items: tuple

    def __init__(self, items: tuple) -> None:
        _set(self, "items", items)


class Not(Frozen):
    """`NOT operand`."""

    __slots__ = __match_args__ = ("operand",)
    operand: Cond

    def __init__(self, operand: Cond) -> None:
        _set(self, "operand", operand)


Cond = Compare | Between | In | And | Or | Not | Call


class Action(Frozen):
    """One update action. clause is SET, REMOVE, ADD or DELETE; value is None for REMOVE."""

    __slots__ = __match_args__ = ("clause", "path", "value")
    clause: str
    path: Path
    value: Operand | None

    def __init__(self, clause: str, path: Path, value: Operand | None = None) -> None:
        _set(self, "clause", clause)
        _set(self, "path", path)
        _set(self, "value", value)


class UpdateExpr(Frozen):
    """All actions in textual order; `legacy` marks AttributeUpdates (different error texts)."""

    __slots__ = __match_args__ = ("actions", "legacy")
    actions: tuple
    legacy: bool

    def __init__(self, actions: tuple, legacy: bool = False) -> None:
        _set(self, "actions", actions)
        _set(self, "legacy", legacy)


def path_placeholders(path: Path) -> list[str]:
    """The #names a path uses, in order."""
    if not path.placeholders:
        return []
    return [e for e in path.elements if isinstance(e, str) and e[:1] == "#"]


def resolve_path(path: Path, names: dict) -> tuple:
    """The path with #placeholders replaced by their names (names must define them all)."""
    if not path.placeholders:
        return path.elements
    return tuple(names[e] if isinstance(e, str) and e[:1] == "#" else e for e in path.elements)


def format_path(elements: tuple) -> str:
    """Render a resolved path as DynamoDB prints it in messages: [a, b, [0]]."""
    return "[" + ", ".join(f"[{e}]" if isinstance(e, int) else e for e in elements) + "]"


def iter_paths(node: object) -> Iterator[Path]:
    """Every Path in a condition or operand tree, in textual order."""
    if isinstance(node, Path):
        yield node
    elif isinstance(node, (And, Or)):
        for item in node.items:
            yield from iter_paths(item)
    elif isinstance(node, Not):
        yield from iter_paths(node.operand)
    elif isinstance(node, Compare):
        yield from iter_paths(node.left)
        yield from iter_paths(node.right)
    elif isinstance(node, Between):
        for part in (node.subject, node.low, node.high):
            yield from iter_paths(part)
    elif isinstance(node, In):
        for part in (node.subject, *node.options):
            yield from iter_paths(part)
    elif isinstance(node, Call):
        for arg in node.args:
            yield from iter_paths(arg)
    elif isinstance(node, Arith):
        yield from iter_paths(node.left)
        yield from iter_paths(node.right)


