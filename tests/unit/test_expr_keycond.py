"""KeyConditionExpression / KeyConditions: structure rules and key-schema resolution."""
import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request

VALUES = {":p": {"S": "p"}, ":a": {"N": "1"}, ":b": {"N": "5"}, ":s": {"S": "x"}}


def key(expression: str, names: dict | None = None):
    values = {k: dict(v) for k, v in VALUES.items() if k in expression}
    params = {"KeyConditionExpression": expression}
    if values:
        params["ExpressionAttributeValues"] = values
    if names:
        params["ExpressionAttributeNames"] = names
    return compile_request(params, "Query").key_condition


def error(expression: str, names: dict | None = None) -> str:
    with pytest.raises(ValidationException) as info:
        key(expression, names)
    return info.value.message


def resolve_error(expression: str, hash_name: str = "pk", range_name: str | None = "sk", **types) -> str:
    condition = key(expression)
    with pytest.raises(ValidationException) as info:
        condition.resolve(hash_name, range_name, **types)
    return info.value.message


@pytest.mark.parametrize("expression, expected", [
    ("pk = :p", ({"S": "p"}, None, [])),
    (":p = pk", ({"S": "p"}, None, [])),
    ("pk = :p AND sk = :a", ({"S": "p"}, "EQ", [{"N": "1"}])),
    ("pk = :p AND sk < :a", ({"S": "p"}, "LT", [{"N": "1"}])),
    ("pk = :p AND sk <= :a", ({"S": "p"}, "LE", [{"N": "1"}])),
    ("pk = :p AND sk > :a", ({"S": "p"}, "GT", [{"N": "1"}])),
    ("pk = :p AND sk >= :a", ({"S": "p"}, "GE", [{"N": "1"}])),
    ("pk = :p AND :a > sk", ({"S": "p"}, "LT", [{"N": "1"}])),
    ("pk = :p AND :a <= sk", ({"S": "p"}, "GE", [{"N": "1"}])),
    ("sk BETWEEN :a AND :b AND pk = :p", ({"S": "p"}, "BETWEEN", [{"N": "1"}, {"N": "5"}])),
    ("(pk = :p) AND (begins_with(sk, :s))", ({"S": "p"}, "BEGINS_WITH", [{"S": "x"}])),
])
def test_resolve(expression, expected):
    assert key(expression).resolve("pk", "sk") == expected


def test_placeholder_names():
    condition = key("#p = :p AND #t < :a", {"#p": "pk", "#t": "timestamp"})
    assert condition.resolve("pk", "timestamp") == ({"S": "p"}, "LT", [{"N": "1"}])


@pytest.mark.parametrize("expression, message", [
    ("pk = :p OR sk = :a", "Invalid operator used in KeyConditionExpression: OR"),
    ("NOT pk = :p", "Invalid operator used in KeyConditionExpression: NOT"),
    ("pk IN (:p)", "Invalid operator used in KeyConditionExpression: IN"),
    ("pk <> :p", "Invalid operator used in KeyConditionExpression: <>"),
    ("pk = :p AND attribute_exists(sk)", "Invalid operator used in KeyConditionExpression: attribute_exists"),
    ("pk = :p AND attribute_not_exists(sk)", "Invalid operator used in KeyConditionExpression: attribute_not_exists"),
    ("pk = :p AND contains(sk, :s)", "Invalid operator used in KeyConditionExpression: contains"),
    ("pk = :p AND size(sk) > :a", "KeyConditionExpressions cannot contain nested operations"),
    ("pk = :p AND sk.x > :a", "KeyConditionExpressions cannot have conditions on nested attributes"),
    ("pk = :p AND sk[0] > :a", "KeyConditionExpressions cannot have conditions on nested attributes"),
    ("pk = :p AND sk = attr2", "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"),
    ("pk = :p AND :a = :b", "Invalid condition in KeyConditionExpression: No key attribute specified"),
    ("pk = :p AND :a BETWEEN sk AND :b", "Invalid condition in KeyConditionExpression: BETWEEN operator must have the key attribute as its first operand"),
    ("pk = :p AND begins_with(:s, sk)", "Invalid condition in KeyConditionExpression: begins_with operator must have the key attribute as its first operand"),
    ("pk = :p AND pk = :p", "KeyConditionExpressions must only contain one condition per key"),
    ("BegIns_WiTh(sk, :s) AND pk = :p", "Invalid KeyConditionExpression: Invalid function name; function: BegIns_WiTh"),
    ("pk = :p AND sk BETWEEN :b AND :a", "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {N:5}, upper bound operand: AttributeValue: {N:1}"),
    ("pk = :p AND begins_with(sk, :a)", "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"),
])
def test_structure_errors(expression, message):
    assert error(expression) == message


def test_same_key_twice_through_placeholders():
    assert error("#a = :p AND pk > :p", {"#a": "pk"}) == "KeyConditionExpressions must only contain one condition per key"


@pytest.mark.parametrize("expression, hash_name, range_name, message", [
    ("sk = :a", "pk", "sk", "Query condition missed key schema element: pk"),
    ("attr2 = :p", "pk", "sk", "Query condition missed key schema element: pk"),
    ("pk > :p", "pk", "sk", "Query key condition not supported"),
    ("pk = :p AND sk > :a", "pk", None, "Query key condition not supported"),
    ("pk = :p AND attr2 > :a", "pk", "sk", "Query condition missed key schema element: sk"),
    # more than two conditions fit only a multi-attribute GSI key, so they are refused against a schema
    ("pk = :p AND sk > :a AND x = :b", "pk", "sk", "KeyConditionExpressions must only contain one condition per key"),
])
def test_schema_errors(expression, hash_name, range_name, message):
    assert resolve_error(expression, hash_name, range_name) == message


def test_type_mismatch_against_schema_types():
    assert resolve_error("pk = :p AND sk > :a", hash_type="N") == (
        "One or more parameter values were invalid: Condition parameter type does not match schema type")
    assert resolve_error("pk = :p AND sk > :a", hash_type="S", range_type="S") == (
        "One or more parameter values were invalid: Condition parameter type does not match schema type")
    assert key("pk = :p AND sk > :a").resolve("pk", "sk", "S", "N")[1] == "GT"


# -- legacy KeyConditions -----------------------------------------------------------------------------

def legacy(conditions: dict):
    return compile_request({"KeyConditions": conditions}, "Query").key_condition


def legacy_error(conditions: dict) -> str:
    with pytest.raises(ValidationException) as info:
        legacy(conditions)
    return info.value.message


def test_legacy_key_conditions():
    condition = legacy({"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]},
                        "sk": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "1"}, {"N": "2"}]}})
    assert condition.resolve("pk", "sk") == ({"S": "p"}, "BETWEEN", [{"N": "1"}, {"N": "2"}])


def test_legacy_key_condition_errors():
    eq = {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]}
    with pytest.raises(ValidationException) as info:  # against a schema: only multi-attribute keys take more
        legacy({"pk": eq, "a": eq, "b": eq}).resolve("pk", "sk")
    assert info.value.message == "Conditions can be of length 1 or 2 only"
    assert legacy_error({"pk": {"ComparisonOperator": "NE", "AttributeValueList": [{"S": "p"}]}}) == (
        "Attempted conditional constraint is not an indexable operation")
    assert legacy_error({"pk": {"ComparisonOperator": "EQ", "AttributeValueList": []}}) == (
        "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator")
    assert legacy_error({"pk": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"N": "1"}]}}) == (
        "One or more parameter values were invalid: ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type")
    assert legacy_error({"pk": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "3"}, {"N": "1"}]}}) == (
        "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")


# -- multi-attribute GSI keys (docs/behaviour/multikey-gsi.md §3) ------------------------------------

HASHES = (("pk", "S"), ("h2", "N"))
RANGES = (("sk", "N"), ("r2", "S"))
MULTI = {":p": {"S": "p"}, ":a": {"N": "1"}, ":b": {"N": "5"}, ":s": {"S": "x"}}


def multi(expression: str):
    values = {k: v for k, v in MULTI.items() if k in expression}
    return compile_request({"KeyConditionExpression": expression, "ExpressionAttributeValues": values},
                           "Query").key_condition.resolve_multi(HASHES, RANGES)


@pytest.mark.parametrize("expression, expected", [
    ("h2 = :a AND pk = :p", ([{"S": "p"}, {"N": "1"}], [], None, [])),
    ("pk = :p AND h2 = :a AND sk = :b", ([{"S": "p"}, {"N": "1"}], [{"N": "5"}], None, [])),
    ("r2 > :s AND pk = :p AND h2 = :a AND sk = :b", ([{"S": "p"}, {"N": "1"}], [{"N": "5"}], "GT", [{"S": "x"}])),
    ("pk = :p AND h2 = :a AND sk BETWEEN :a AND :b", ([{"S": "p"}, {"N": "1"}], [], "BETWEEN",
                                                      [{"N": "1"}, {"N": "5"}])),
])
def test_resolve_multi(expression, expected):
    assert multi(expression) == expected


@pytest.mark.parametrize("expression, message", [
    ("pk = :p", "Query condition missed key schema element: h2"),
    ("pk = :p AND h2 > :a", "Query key condition not supported"),
    ("pk = :p AND h2 = :a AND r2 = :s", "Query condition missed key schema element: sk"),
    ("pk = :p AND h2 = :a AND sk > :a AND r2 = :s", "Query key condition not supported"),
    ("pk = :p AND h2 = :a AND sk = :a AND r2 = :s AND x = :b", "Query key condition not supported"),
    ("pk = :p AND h2 = :s", "One or more parameter values were invalid: Condition parameter type does not match "
                            "schema type"),
])
def test_resolve_multi_errors(expression, message):
    with pytest.raises(ValidationException) as info:
        multi(expression)
    assert info.value.message == message
