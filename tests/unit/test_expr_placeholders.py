"""ExpressionAttributeNames/Values checks, parameter mixing and the message prefix quirk."""
import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile as compile_module
from dynalocal.expressions import compile_request

V1 = {"N": "1"}


def error(params: dict, operation: str = "Scan") -> str:
    with pytest.raises(ValidationException) as info:
        compile_request(params, operation)
    return info.value.message


def test_empty_maps():
    assert error({"FilterExpression": "a = :v", "ExpressionAttributeNames": {}}) == (
        "ExpressionAttributeNames must not be empty")
    assert error({"FilterExpression": "a = :v", "ExpressionAttributeValues": {}}) == (
        "ExpressionAttributeValues must not be empty")


def test_prefix_quirk_for_put_update_delete_only():
    params = {"ConditionExpression": "a = :v", "ExpressionAttributeValues": {}}
    for op in ("PutItem", "UpdateItem", "DeleteItem"):
        assert error(dict(params), op) == "1 validation error detected: ExpressionAttributeValues must not be empty"
    assert error(dict(params), "TransactWriteItems") == "ExpressionAttributeValues must not be empty"
    # docs/behaviour/validation.md §3: an empty expression and unused names/values carry no prefix
    assert error({"UpdateExpression": ""}, "UpdateItem") == "Invalid UpdateExpression: The expression can not be empty;"
    unused = {"ConditionExpression": "a = :v", "ExpressionAttributeValues": {":v": V1, ":x": V1}}
    for op in ("PutItem", "TransactWriteItems"):
        assert error(dict(unused), op) == "Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}"
    names = {"ConditionExpression": "a = :v", "ExpressionAttributeValues": {":v": V1}, "ExpressionAttributeNames": {"#u": "u"}}
    assert error(names, "DeleteItem") == "Value provided in ExpressionAttributeNames unused in expressions: keys: {#u}"


def test_an_empty_name_in_expression_attribute_names_is_refused():
    params = {"ProjectionExpression": "#e", "ExpressionAttributeNames": {"#e": ""}}
    assert "Empty attribute name" in error(params, "GetItem")


def test_invalid_keys():
    assert error({"FilterExpression": "a = b", "ExpressionAttributeNames": {"a": "x"}}) == (
        'ExpressionAttributeNames contains invalid key: Syntax error; key: "a"')
    assert error({"FilterExpression": "a = b", "ExpressionAttributeNames": {"#a-b": "x"}}) == (
        'ExpressionAttributeNames contains invalid key: Syntax error; key: "#a-b"')
    assert error({"FilterExpression": "a = :v", "ExpressionAttributeValues": {"loc": V1}}) == (
        'ExpressionAttributeValues contains invalid key: Syntax error; key: "loc"')
    assert error({"FilterExpression": "a = :v", "ExpressionAttributeValues": {":": V1}}) == (
        'ExpressionAttributeValues contains invalid key: Syntax error; key: ":"')


def test_invalid_values_are_wrapped():
    assert error({"FilterExpression": "a = :x", "ExpressionAttributeValues": {":x": {"SS": []}}}) == (
        "ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: "
        "An string set  may not be empty for key :x")
    assert error({"FilterExpression": "a = :x", "ExpressionAttributeValues": {":x": {"N": "dog"}}}) == (
        "ExpressionAttributeValues contains invalid value: The parameter cannot be converted to a numeric value: dog"
        " for key :x")


def test_values_are_canonicalised():
    params = {"FilterExpression": "a = :x", "ExpressionAttributeValues": {":x": {"N": "1.50e1"}}}
    compiled = compile_request(params, "Scan")
    assert compiled.filter.matches({"a": {"N": "15"}})


def test_undefined_placeholders():
    assert error({"FilterExpression": "#n = :v", "ExpressionAttributeValues": {":v": V1}}) == (
        "Invalid FilterExpression: An expression attribute name used in the document path is not defined; "
        "attribute name: #n")
    assert error({"FilterExpression": "a = :v", "ExpressionAttributeNames": {"#a": "a"},
                  "ProjectionExpression": "#a"}) == (
        "Invalid FilterExpression: An expression attribute value used in expression is not defined; "
        "attribute value: :v")
    assert error({"ProjectionExpression": "#p"}, "GetItem") == (
        "Invalid ProjectionExpression: An expression attribute name used in the document path is not defined; "
        "attribute name: #p")


def test_unused_placeholders_across_all_expressions():
    compile_request({"FilterExpression": "a = :v", "ProjectionExpression": "#p",
                     "ExpressionAttributeNames": {"#p": "p"}, "ExpressionAttributeValues": {":v": V1}}, "Scan")
    assert error({"FilterExpression": "a = :v", "ExpressionAttributeNames": {"#a": "a", "#b": "b"},
                  "ExpressionAttributeValues": {":v": V1}}) == (
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a, #b}")
    assert error({"FilterExpression": "a = :v OR a = :w", "ExpressionAttributeValues": {":v": V1, ":w": V1, ":z": V1}}) == (
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:z}")


def test_unused_check_is_static_not_short_circuit():
    compiled = compile_request({"FilterExpression": "attribute_exists(a) OR b = :v",
                                "ExpressionAttributeValues": {":v": V1}}, "Scan")
    assert compiled.filter.matches({"a": V1})


def test_names_map_to_any_string_with_literal_dots():
    compiled = compile_request({"FilterExpression": "#n = :v", "ExpressionAttributeNames": {"#n": "a.b"},
                                "ExpressionAttributeValues": {":v": V1}}, "Scan")
    assert compiled.filter.matches({"a.b": V1})
    assert not compiled.filter.matches({"a": {"M": {"b": V1}}})


def test_names_without_expression():
    assert error({"ExpressionAttributeNames": {"#a": "a"}}, "GetItem") == (
        "ExpressionAttributeNames can only be specified when using expressions")
    assert error({"Expected": {"a": {"Exists": False}}, "ExpressionAttributeNames": {"#a": "a"}}, "PutItem") == (
        "ExpressionAttributeNames can only be specified when using expressions")


@pytest.mark.parametrize("operation, params, text", [
    ("Query", {"ProjectionExpression": "a"}, "FilterExpression and KeyConditionExpression are null"),
    ("Scan", {}, "FilterExpression is null"),
    ("PutItem", {}, "ConditionExpression is null"),
    ("DeleteItem", {}, "ConditionExpression is null"),
    ("UpdateItem", {}, "UpdateExpression and ConditionExpression are null"),
    ("TransactWriteItems", {}, "ConditionExpression is null"),
])
def test_values_without_value_expressions(operation, params, text):
    params = {**params, "ExpressionAttributeValues": {":v": V1}}
    assert error(params, operation) == "ExpressionAttributeValues can only be specified when using expressions: " + text


@pytest.mark.parametrize("operation, params, legacy, expressions", [
    ("UpdateItem", {"UpdateExpression": "SET a = :v", "AttributeUpdates": {}, "ExpressionAttributeValues": {":v": V1}},
     "AttributeUpdates", "UpdateExpression"),
    ("UpdateItem", {"ConditionExpression": "a = b", "UpdateExpression": "REMOVE c", "Expected": {},
                    "AttributeUpdates": {}}, "AttributeUpdates, Expected", "UpdateExpression, ConditionExpression"),
    ("Query", {"ProjectionExpression": "a", "FilterExpression": "b = c", "KeyConditionExpression": "p = q",
               "AttributesToGet": ["a"], "QueryFilter": {}, "ConditionalOperator": "AND", "KeyConditions": {}},
     "AttributesToGet, QueryFilter, ConditionalOperator, KeyConditions",
     "ProjectionExpression, FilterExpression, KeyConditionExpression"),
    ("Scan", {"FilterExpression": "b = c", "ScanFilter": {}}, "ScanFilter", "FilterExpression"),
    ("GetItem", {"ProjectionExpression": "a", "AttributesToGet": ["a"]}, "AttributesToGet", "ProjectionExpression"),
    ("PutItem", {"ConditionExpression": "a = b", "Expected": {}}, "Expected", "ConditionExpression"),
])
def test_mixing_legacy_and_expression_parameters(operation, params, legacy, expressions):
    assert error(params, operation) == (
        "Can not use both expression and non-expression parameters in the same request: "
        f"Non-expression parameters: {{{legacy}}} Expression parameters: {{{expressions}}}")


def test_query_key_conditions_may_combine_with_filter_expression():
    compiled = compile_request({
        "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]}},
        "FilterExpression": "b = :v", "ExpressionAttributeValues": {":v": V1}}, "Query")
    assert compiled.key_condition.resolve("pk", None) == ({"S": "a"}, None, [])
    assert compiled.filter.matches({"b": V1})


def test_order_update_before_condition():
    # Both are broken; the UpdateExpression is checked first.
    msg = error({"UpdateExpression": "SET", "ConditionExpression": "("}, "UpdateItem")
    assert msg.startswith("Invalid UpdateExpression")


def test_cache_reuses_parse_and_binds_per_request():
    compile_module._cache.clear()
    first = compile_request({"FilterExpression": "#a = :v", "ExpressionAttributeNames": {"#a": "x"},
                             "ExpressionAttributeValues": {":v": V1}}, "Scan")
    assert len(compile_module._cache) == 1
    second = compile_request({"FilterExpression": "#a = :v", "ExpressionAttributeNames": {"#a": "y"},
                              "ExpressionAttributeValues": {":v": {"S": "s"}}}, "Scan")
    assert len(compile_module._cache) == 1
    assert first.filter.matches({"x": V1}) and not first.filter.matches({"y": {"S": "s"}})
    assert second.filter.matches({"y": {"S": "s"}}) and not second.filter.matches({"x": V1})


def test_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(compile_module, "CACHE_SIZE", 3)
    compile_module._cache.clear()
    for i in range(5):
        compile_request({"FilterExpression": f"a{i} = b"}, "Scan")
    assert 1 <= len(compile_module._cache) <= 3


def test_failed_parse_is_not_cached():
    compile_module._cache.clear()
    error({"FilterExpression": "a ="})
    assert not compile_module._cache
