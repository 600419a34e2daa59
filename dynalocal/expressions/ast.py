"""The small typed AST shared by expression parsing, legacy-parameter conversion and evaluation.

Paths keep `#placeholders` unresolved so one parsed tree serves every request that uses
the same expression text; names are looked up per request when the tree is bound.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(slots=True, frozen=True)
class Path:
    """A document path: names (str) and list indexes (int).

    When `placeholders` is true, str elements starting with '#' are ExpressionAttributeNames
    keys; legacy-parameter paths set it false so any literal name is taken as is.
    """

    elements: tuple
    placeholders: bool = True


@dataclass(slots=True, frozen=True)
class Value:
    """An ExpressionAttributeValues placeholder such as `:v`."""

    name: str


@dataclass(slots=True, frozen=True)
class Const:
    """A literal AttributeValue (legacy parameters carry values inline)."""

    av: dict


@dataclass(slots=True, frozen=True)
class Call:
    """A function call: size, begins_with, if_not_exists, ..."""

    name: str
    args: tuple


@dataclass(slots=True, frozen=True)
class Arith:
    """`left + right` or `left - right` in an UpdateExpression SET action."""

    op: str
    left: "Operand"
    right: "Operand"


Operand = Union[Path, Value, Const, Call, Arith]


@dataclass(slots=True, frozen=True)
class Compare:
    op: str  # = <> < <= > >=
    left: Operand
    right: Operand


@dataclass(slots=True, frozen=True)
class Between:
    subject: Operand
    low: Operand
    high: Operand


@dataclass(slots=True, frozen=True)
class In:
    subject: Operand
    options: tuple


@dataclass(slots=True, frozen=True)
class And:
    """Two or more conditions joined by AND (chains are kept flat)."""

    items: tuple


@dataclass(slots=True, frozen=True)
class Or:
    """Two or more conditions joined by OR (chains are kept flat)."""

    items: tuple


@dataclass(slots=True, frozen=True)
class Not:
    operand: "Cond"


Cond = Union[Compare, Between, In, And, Or, Not, Call]


@dataclass(slots=True, frozen=True)
class Action:
    """One update action. clause is SET, REMOVE, ADD or DELETE; value is None for REMOVE."""

    clause: str
    path: Path
    value: Operand | None = None


@dataclass(slots=True, frozen=True)
class UpdateExpr:
    """All actions in textual order; `legacy` marks AttributeUpdates (different error texts)."""

    actions: tuple
    legacy: bool = False


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


def iter_paths(node: object):
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


