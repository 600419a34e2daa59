"""The binding cache (compile._Plan): a request with a known shape gets what the full path would give."""
from __future__ import annotations

import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile as compiler
from dynalocal.expressions import compile_request

ITEM = {"pk": {"S": "a"}, "sk": {"N": "5"}, "c": {"N": "1"}, "tags": {"SS": ["x"]}, "m": {"M": {"k": {"S": "v"}}}}


def full_path(params: dict, operation: str):
    """compile_request with the binding cache bypassed."""
    return compiler._compile(params, operation, None)


def outcome(call, params: dict, operation: str):
    try:
        out = call(params, operation)
        key = out.key_condition.conditions if out.key_condition else None
        condition = out.condition.matches(ITEM) if out.condition else None
        projection = out.projection.apply(ITEM) if out.projection else None
        updated = out.update.apply(dict(ITEM), frozenset({"pk"})).item if out.update else None
    except ValidationException as err:
        return ("error", err.message)
    return ("ok", key, condition, projection, updated)


def query(value: dict, low: dict | None = None) -> dict:
    values = {":p": value, ":lo": low or {"N": "1"}}
    return {"KeyConditionExpression": "#p = :p AND sk > :lo", "ProjectionExpression": "#p, m.k",
            "ExpressionAttributeNames": {"#p": "pk"}, "ExpressionAttributeValues": values}


def update(value: dict, condition_value: dict | None = None) -> dict:
    return {"UpdateExpression": "SET #c = #c + :one ADD tags :t", "ConditionExpression": "#c < :max",
            "ExpressionAttributeNames": {"#c": "c"},
            "ExpressionAttributeValues": {":one": value, ":t": {"SS": ["y"]}, ":max": condition_value or {"N": "9"}}}


CASES = [
    (query({"S": "a"}), "Query"), (query({"S": "b"}, {"N": "7"}), "Query"),
    (query({"N": "1"}), "Query"),  # another value type under the same shape
    (query({"S": ""}), "Query"),  # a value the full path refuses (empty key value is checked later, by the handler)
    (query({"Q": "x"}), "Query"),  # an invalid AttributeValue: refused by value validation
    (update({"N": "1"}), "UpdateItem"), (update({"N": "2"}, {"N": "0"}), "UpdateItem"),
    (update({"S": "x"}), "UpdateItem"),  # a value-dependent check: adding a string to a number
    (update({"N": "1"}, {"BOOL": True}), "UpdateItem"),  # ordering against an unorderable value
]


@pytest.mark.parametrize("params, operation", CASES)
def test_a_cached_shape_answers_as_the_full_path(params, operation):
    compiler._plans.clear()
    first = outcome(compile_request, query({"S": "warm"}) if operation == "Query" else update({"N": "3"}), operation)
    assert first[0] == "ok" and len(compiler._plans) == 1  # the shape is now cached
    assert outcome(compile_request, params, operation) == outcome(full_path, params, operation)


def test_a_shape_that_failed_is_not_cached_and_other_names_are_other_shapes():
    compiler._plans.clear()
    bad = dict(update({"N": "1"}), ExpressionAttributeNames={"#c": "c", "#unused": "u"})
    for _ in range(2):
        with pytest.raises(ValidationException, match="unused in expressions: keys: {#unused}"):
            compile_request(bad, "UpdateItem")
    assert len(compiler._plans) == 0
    compile_request(update({"N": "1"}), "UpdateItem")
    renamed = dict(update({"N": "1"}), ExpressionAttributeNames={"#c": "other"})
    assert outcome(compile_request, renamed, "UpdateItem") == outcome(full_path, renamed, "UpdateItem")
    assert len(compiler._plans) == 2


def test_legacy_parameters_are_never_planned():
    compiler._plans.clear()
    compile_request({"AttributesToGet": ["a"]}, "GetItem")
    with pytest.raises(ValidationException, match="Can not use both expression and non-expression"):
        compile_request({"AttributesToGet": ["a"], "ProjectionExpression": "a"}, "GetItem")
    assert len(compiler._plans) == 0
