"""A Query's key condition as store-key bounds: operand checks shared by every key, and the plan of
a multi-attribute GSI key (docs/behaviour/multikey-gsi.md), which query.py reads like any index."""
from __future__ import annotations

from dataclasses import dataclass

from dynalocal.errors import ValidationException, invalid
from dynalocal.expressions.keycond import KeyCondition
from dynalocal.storage.ranges import Bounds, sort_bounds, sort_matches
from dynalocal.values import numbers
from dynalocal.values.multikey import MultiKey

OUTSIDE = "The provided starting key is outside query boundaries based on provided conditions"
NO_RANGE_MATCH = "The provided starting key does not match the range key predicate"


def key_value(av: dict, kind: str, name: str) -> str:
    """The scalar of a key-condition operand, checked against the key's type."""
    value = av.get(kind) if len(av) == 1 else None
    if value is None:
        raise invalid("Condition parameter type does not match schema type")
    if value == "" and kind != "N":
        what = "string" if kind == "S" else "binary"
        raise ValidationException("One or more parameter values are not valid. The AttributeValue for a key "
                                  f"attribute cannot contain an empty {what} value. Key: {name}")
    return numbers.canonical(value) if kind == "N" else value


def java(av: dict) -> str:
    """An AttributeValue as DynamoDB's messages print it."""
    ((tag, value),) = av.items()
    return f"AttributeValue: {{{tag}:{value}}}"


def check_range_operands(op: str | None, kind: str | None, values: list[bytes], avs: list[dict],
                         body: dict) -> None:
    """begins_with takes no N; BETWEEN's bounds are in order."""
    if op == "BEGINS_WITH" and kind == "N":
        raise invalid("ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type")
    if op == "BETWEEN" and values[0] > values[1]:
        if "KeyConditionExpression" in body:
            raise ValidationException(
                "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal "
                f"to lower bound; lower bound operand: {java(avs[0])}, upper bound operand: {java(avs[1])}")
        raise ValidationException("The BETWEEN condition was provided a range where the lower bound is greater than "
                                  "the upper bound")


@dataclass(slots=True)
class MultiKeyPlan:
    """What a Query on a multi-attribute GSI key reads: one partition, a prefix of equal RANGE values,
    and at most one more condition on the next RANGE attribute."""

    prefix: bytes  # the partition prefix (a hash of the whole HASH tuple)
    hashes: list[str]
    equal: list[str]  # values of the leading RANGE attributes given with `=`
    op: str | None  # the condition on RANGE attribute len(equal), if any
    values: list[bytes]  # its operands' sort bytes
    bounds: Bounds


def plan_multi(key: MultiKey, condition: KeyCondition, body: dict) -> MultiKeyPlan:
    """Check a key condition against a multi-attribute key; return its bounds."""
    hash_avs, equal_avs, op, last_avs = condition.resolve_multi(key.hash_attrs, key.range_attrs)
    hashes = [key_value(av, kind, name) for av, (name, kind) in zip(hash_avs, key.hash_attrs, strict=True)]
    prefix = key.partition_prefix(hashes)
    equal = [key_value(av, key.range_attrs[i][1], key.range_attrs[i][0]) for i, av in enumerate(equal_avs)]
    base = prefix + key.sort_prefix(equal)
    values: list[bytes] = []
    if op is not None:
        name, kind = key.range_attrs[len(equal)]
        values = [key.sort_of(len(equal), key_value(av, kind, name)) for av in last_avs]
        check_range_operands(op, kind, values, last_avs, body)
    return MultiKeyPlan(prefix, hashes, equal, op, values, sort_bounds(base, op, values, escaped=True))


def check_multi_start(key: MultiKey, plan: MultiKeyPlan, esk: dict) -> None:
    """An ExclusiveStartKey (already checked against the key's names and types) lies in the plan's range."""
    if [_canonical(esk[name], kind) for name, kind in key.hash_attrs] != plan.hashes:
        raise ValidationException(OUTSIDE)
    n = len(plan.equal)
    if [_canonical(esk[name], kind) for name, kind in key.range_attrs[:n]] != plan.equal:
        raise ValidationException(NO_RANGE_MATCH)
    name, kind = key.range_attrs[n] if plan.op is not None else ("", "")
    if plan.op is not None and not sort_matches(plan.op, plan.values, key.sort_of(n, esk[name][kind])):
        raise ValidationException(NO_RANGE_MATCH)


def _canonical(av: dict, kind: str) -> str:
    return numbers.canonical(av[kind]) if kind == "N" else av[kind]


__all__ = ["key_value", "java", "check_range_operands", "MultiKeyPlan", "plan_multi", "check_multi_start"]
