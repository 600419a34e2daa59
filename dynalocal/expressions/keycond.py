"""Key conditions for Query: KeyConditionExpression structure rules and key-schema matching.

A key condition reduces to at most two leaves `(path, op, value operands)`; op is one of
EQ LT LE GT GE BETWEEN BEGINS_WITH, the forms an index seek over a sorted partition serves.
"""
from __future__ import annotations

from dynalocal.errors import ValidationException, invalid
from dynalocal.expressions import ast as A
from dynalocal.expressions.semantics import tag_of

_OPS = {"=": "EQ", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NOT_ALLOWED = frozenset(("attribute_exists", "attribute_not_exists", "attribute_type", "contains"))
ONE_PER_KEY = "KeyConditionExpressions must only contain one condition per key"
LEGACY_LENGTH = "Conditions can be of length 1 or 2 only"
MAX_LEAVES = 8  # a multi-attribute GSI key has up to 4 HASH and 4 RANGE attributes
NOT_SUPPORTED = "Query key condition not supported"


def _error(detail: str) -> ValidationException:
    return ValidationException(detail)


def _condition_error(detail: str) -> ValidationException:
    return ValidationException(f"Invalid condition in KeyConditionExpression: {detail}")


def _leaf(path_first: object, rest: tuple, op: str, first_operand_name: str | None) -> tuple:
    operands = (path_first, *rest)
    if any(isinstance(o, A.Call) for o in operands):
        raise _error("KeyConditionExpressions cannot contain nested operations")
    paths = [o for o in operands if isinstance(o, A.Path)]
    if first_operand_name and not isinstance(path_first, A.Path):
        raise _condition_error(f"{first_operand_name} operator must have the key attribute as its first operand")
    if len(paths) > 1:
        raise _condition_error("Multiple attribute names used in one condition")
    if not paths:
        raise _condition_error("No key attribute specified")
    if len(paths[0].elements) > 1:
        raise _error("KeyConditionExpressions cannot have conditions on nested attributes")
    return paths[0], op, tuple(o for o in operands if not isinstance(o, A.Path))


def key_leaves(tree: object) -> list[tuple]:
    """Validate a parsed KeyConditionExpression; return its (path, op, value nodes) leaves."""
    leaves: list[tuple] = []

    def walk(node: object) -> None:
        if isinstance(node, A.And):
            for item in node.items:
                walk(item)
        elif isinstance(node, A.Or):
            raise _error("Invalid operator used in KeyConditionExpression: OR")
        elif isinstance(node, A.Not):
            raise _error("Invalid operator used in KeyConditionExpression: NOT")
        elif isinstance(node, A.In):
            raise _error("Invalid operator used in KeyConditionExpression: IN")
        elif isinstance(node, A.Compare):
            if node.op == "<>":
                raise _error("Invalid operator used in KeyConditionExpression: <>")
            op = node.op if isinstance(node.left, A.Path) or not isinstance(node.right, A.Path) else _FLIPPED[node.op]
            leaves.append(_leaf(node.left, (node.right,), _OPS[op], None))
        elif isinstance(node, A.Between):
            leaves.append(_leaf(node.subject, (node.low, node.high), "BETWEEN", "BETWEEN"))
        elif not isinstance(node, A.Call):  # the parser builds no other condition node
            raise TypeError(f"unexpected condition node {node!r}")
        elif node.name in _NOT_ALLOWED:
            raise _error(f"Invalid operator used in KeyConditionExpression: {node.name}")
        else:  # begins_with (size as a whole condition was rejected earlier)
            leaves.append(_leaf(node.args[0], node.args[1:], "BEGINS_WITH", "begins_with"))

    walk(tree)
    if len(leaves) > MAX_LEAVES:  # more than two are refused by `resolve` (multi-attribute keys take up to 8)
        raise _error(ONE_PER_KEY)
    return leaves


class KeyCondition:
    """Resolved key conditions: a list of (attribute name, op, value AttributeValues)."""

    __slots__ = ("conditions", "legacy")

    def __init__(self, conditions: list[tuple[str, str, list[dict]]], legacy: bool = False) -> None:
        if len({name for name, _, _ in conditions}) != len(conditions):
            raise _error(ONE_PER_KEY)
        self.conditions = conditions
        self.legacy = legacy  # from KeyConditions: more than two conditions answer that parameter's message

    def resolve(self, hash_name: str, range_name: str | None, hash_type: str | None = None,
                range_type: str | None = None) -> tuple[dict, str | None, list[dict]]:
        """Match against a key schema: (hash value, range op or None, range values).

        Key types, when given, are checked against the condition values.
        """
        if len(self.conditions) > 2:
            raise _error(LEGACY_LENGTH if self.legacy else ONE_PER_KEY)
        by_name = {name: (op, avs) for name, op, avs in self.conditions}
        if hash_name not in by_name:
            raise _error(f"Query condition missed key schema element: {hash_name}")
        hash_op, hash_avs = by_name.pop(hash_name)
        if hash_op != "EQ":
            raise _error("Query key condition not supported")
        range_op: str | None = None
        range_avs: list[dict] = []
        if by_name:
            ((name, (range_op, range_avs)),) = by_name.items()
            if range_name is None:
                raise _error("Query key condition not supported")
            if name != range_name:
                raise _error(f"Query condition missed key schema element: {range_name}")
        mismatch = (hash_type is not None and tag_of(hash_avs[0]) != hash_type) or (
            range_type is not None and any(tag_of(av) != range_type for av in range_avs))
        if mismatch:
            raise invalid("Condition parameter type does not match schema type")
        return hash_avs[0], range_op, list(range_avs)

    def resolve_multi(self, hash_attrs: tuple[tuple[str, str], ...], range_attrs: tuple[tuple[str, str], ...]
                      ) -> tuple[list[dict], list[dict], str | None, list[dict]]:
        """Match against a multi-attribute GSI key (docs/behaviour/multikey-gsi.md): every HASH attribute
        with `=`, then a prefix of the RANGE attributes, all `=` but the last. Returns (HASH values,
        equal RANGE values, the last RANGE condition's op or None, its values)."""
        by_name = {name: (op, avs) for name, op, avs in self.conditions}
        typed: list[tuple[str, list[dict]]] = []
        hash_avs = []
        for name, kind in hash_attrs:
            if name not in by_name:
                raise _error(f"Query condition missed key schema element: {name}")
            op, avs = by_name.pop(name)
            if op != "EQ":
                raise _error(NOT_SUPPORTED)
            typed.append((kind, avs))
            hash_avs.append(avs[0])
        used = []
        for name, kind in range_attrs:
            if name not in by_name:
                break
            op, avs = by_name.pop(name)
            used.append((op, avs))
            typed.append((kind, avs))
        if by_name:  # a condition on a skipped RANGE attribute, or on an attribute that is no key
            missed = range_attrs[len(used)][0] if len(used) < len(range_attrs) else None
            raise _error(f"Query condition missed key schema element: {missed}" if missed else NOT_SUPPORTED)
        if any(op != "EQ" for op, _ in used[:-1]):
            raise _error(NOT_SUPPORTED)
        if any(tag_of(av) != kind for kind, avs in typed for av in avs):
            raise invalid("Condition parameter type does not match schema type")
        eq = [avs[0] for _, avs in used[:-1]]
        if used and used[-1][0] == "EQ":
            return hash_avs, eq + [used[-1][1][0]], None, []
        last_op, last_avs = used[-1] if used else (None, [])
        return hash_avs, eq, last_op, list(last_avs)
