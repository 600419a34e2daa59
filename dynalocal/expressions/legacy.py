"""Legacy (pre-expression) parameters converted to the expression AST.

Expected / QueryFilter / ScanFilter (+ ConditionalOperator) become condition trees,
AttributeUpdates an UpdateExpr, KeyConditions key-condition leaves, AttributesToGet
top-level paths. Attribute names here are literal: no placeholders, no document paths.
"""
from __future__ import annotations

from dynalocal.errors import ValidationException, invalid
from dynalocal.expressions import ast as A
from dynalocal.expressions.semantics import SETS, order, tag_of
from dynalocal.values.attributes import validate_value

_ARG_COUNTS = {"EQ": 1, "NE": 1, "LE": 1, "LT": 1, "GE": 1, "GT": 1, "CONTAINS": 1, "NOT_CONTAINS": 1,
               "BEGINS_WITH": 1, "NULL": 0, "NOT_NULL": 0, "BETWEEN": 2}
_SCALAR = ("S", "N", "B")
_ALLOWED_TYPES = {"EQ": _SCALAR + ("SS", "NS", "BS"), "NE": _SCALAR + ("SS", "NS", "BS"),
                  "LE": _SCALAR, "LT": _SCALAR, "GE": _SCALAR, "GT": _SCALAR, "CONTAINS": _SCALAR,
                  "NOT_CONTAINS": _SCALAR, "BEGINS_WITH": ("S", "B"), "IN": _SCALAR, "BETWEEN": _SCALAR}
_COMPARATORS = {"EQ": "=", "NE": "<>", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}
_INDEXABLE = frozenset(("EQ", "LE", "LT", "GE", "GT", "BEGINS_WITH", "BETWEEN"))


def _check_values(op: str, values: list, restrict_equality: bool) -> None:
    """Argument count, allowed types and consistency of an AttributeValueList."""
    wanted = _ARG_COUNTS.get(op)
    if (len(values) != wanted) if wanted is not None else not values:
        raise invalid(f"Invalid number of argument(s) for the {op} ComparisonOperator")
    for av in values:
        validate_value(av)
    allowed = _ALLOWED_TYPES.get(op)
    first = None
    for av in values:
        tag = tag_of(av)
        if allowed and (restrict_equality or op not in ("EQ", "NE")) and tag not in allowed:
            raise invalid(f"ComparisonOperator {op} is not valid for {tag} AttributeValue type")
        if first is not None and tag != first:
            raise invalid("AttributeValues inside AttributeValueList must be of same type")
        first = tag
    if op == "BETWEEN" and (order(values[0], values[1]) or 0) > 0:
        raise ValidationException(
            "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")


def _named(name: str) -> str:
    """A legacy parameter's attribute name; an empty one is refused as everywhere else."""
    if not name:
        raise invalid("Empty attribute name")
    return name


def _node(name: str, op: str, values: list) -> object:
    path = A.Path((_named(name),), placeholders=False)
    consts = [A.Const(av) for av in values]
    if op in _COMPARATORS:
        return A.Compare(_COMPARATORS[op], path, consts[0])
    if op == "NOT_NULL":
        return A.Call("attribute_exists", (path,))
    if op == "NULL":
        return A.Call("attribute_not_exists", (path,))
    if op == "CONTAINS":
        return A.Call("contains", (path, consts[0]))
    if op == "NOT_CONTAINS":
        return A.Not(A.Call("contains", (path, consts[0])))
    if op == "BEGINS_WITH":
        return A.Call("begins_with", (path, consts[0]))
    if op == "IN":
        return A.In(path, tuple(consts))
    return A.Between(path, consts[0], consts[1])


def _combine(nodes: list, operator: str | None) -> object | None:
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    return A.Or(tuple(nodes)) if operator == "OR" else A.And(tuple(nodes))


def expected_tree(expected: dict, operator: str | None) -> object | None:
    """Expected map (+ ConditionalOperator) as a condition tree."""
    nodes = []
    for name, cond in expected.items():
        has_value, has_list = cond.get("Value") is not None, cond.get("AttributeValueList") is not None
        op, exists = cond.get("ComparisonOperator"), cond.get("Exists")
        if has_value and has_list:
            raise invalid(f"Value and AttributeValueList cannot be used together for Attribute: {name}")
        if op is not None:
            if exists is not None:
                raise invalid(f"Exists and ComparisonOperator cannot be used together for Attribute: {name}")
            if op not in ("NULL", "NOT_NULL") and not has_value and not has_list:
                raise invalid(f"Value or AttributeValueList must be used with ComparisonOperator: {op} "
                              f"for Attribute: {name}")
            values = cond["AttributeValueList"] if has_list else [cond["Value"]] if has_value else []
            _check_values(op, values, restrict_equality=False)
            nodes.append(_node(name, op, values))
        elif has_list:
            raise invalid(f"AttributeValueList can only be used with a ComparisonOperator for Attribute: {name}")
        elif exists is None or exists:
            if not has_value:
                shown = "null" if exists is None else "true"
                raise invalid(f"Value must be provided when Exists is {shown} for Attribute: {name}")
            validate_value(cond["Value"])
            nodes.append(_node(name, "EQ", [cond["Value"]]))
        else:
            if has_value:
                raise invalid(f"Value cannot be used when Exists is false for Attribute: {name}")
            nodes.append(_node(name, "NULL", []))
    return _combine(nodes, operator)


def filter_tree(conditions: dict, operator: str | None) -> object | None:
    """QueryFilter / ScanFilter map (+ ConditionalOperator) as a condition tree."""
    nodes = []
    for name, cond in conditions.items():
        op = cond.get("ComparisonOperator")
        values = cond.get("AttributeValueList") or []
        _check_values(op, values, restrict_equality=False)  # EQ / NE take every type, L, M, BOOL, NULL too
        nodes.append(_node(name, op, values))
    return _combine(nodes, operator)


def key_conditions(conditions: dict) -> list[tuple[str, str, list[dict]]]:
    """KeyConditions map as (name, op, values) leaves."""
    leaves = []
    for name, cond in conditions.items():
        op = cond.get("ComparisonOperator")
        values = cond.get("AttributeValueList") or []
        _check_values(op, values, restrict_equality=True)
        leaves.append((_named(name), op, values))
    # More than two only on a multi-attribute GSI key (checked by KeyCondition.resolve), and indexable.
    if not 1 <= len(leaves) <= 8 or (len(leaves) > 2 and any(op not in _INDEXABLE for _, op, _ in leaves)):
        raise ValidationException("Conditions can be of length 1 or 2 only")
    for _, op, _ in leaves:
        if op not in _INDEXABLE:
            raise ValidationException("Attempted conditional constraint is not an indexable operation")
    return leaves


def attribute_updates(updates: dict) -> A.UpdateExpr:
    """AttributeUpdates map as a legacy UpdateExpr (PUT/ADD/DELETE actions)."""
    actions = []
    for name, update in updates.items():
        action = update.get("Action") or "PUT"
        value = update.get("Value")
        path = A.Path((_named(name),), placeholders=False)
        if value is None:
            if action != "DELETE":
                raise invalid("Only DELETE action is allowed when no attribute value is specified")
            actions.append(A.Action("REMOVE", path))
            continue
        validate_value(value)
        tag = tag_of(value)
        if action == "ADD" and tag not in SETS and tag not in ("N", "L"):
            raise invalid(f"ADD action is not supported for the type {tag}")
        if action == "DELETE" and tag not in SETS:
            raise invalid(f"DELETE action with value is not supported for the type {tag}")
        actions.append(A.Action("SET" if action == "PUT" else action, path, A.Const(value)))
    return A.UpdateExpr(tuple(actions), legacy=True)


def attributes_to_get(names: list[str]) -> list[tuple]:
    """AttributesToGet as top-level projection paths (duplicates rejected)."""
    seen: set[str] = set()
    for name in names:
        _named(name)
        if name in seen:
            raise invalid(f"Duplicate value in attribute name: {name}")
        seen.add(name)
    return [(name,) for name in names]
