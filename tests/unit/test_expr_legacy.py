"""Legacy parameters: Expected, QueryFilter/ScanFilter, ConditionalOperator, AttributeUpdates."""
import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request

ITEM = {"pk": {"S": "k"}, "n": {"N": "5"}, "s": {"S": "hello"}, "ss": {"SS": ["a", "b"]},
        "l": {"L": [{"S": "x"}]}, "z": {"NULL": True}, "t": {"BOOL": True}}
PREFIX = "One or more parameter values were invalid: "


def expected(conditions: dict, operator: str | None = None):
    params = {"Expected": conditions}
    if operator:
        params["ConditionalOperator"] = operator
    return compile_request(params, "PutItem").condition


def scan_filter(conditions: dict, operator: str | None = None):
    params = {"ScanFilter": conditions}
    if operator:
        params["ConditionalOperator"] = operator
    return compile_request(params, "Scan").filter


def error(params: dict, operation: str = "PutItem") -> str:
    with pytest.raises(ValidationException) as info:
        compile_request(params, operation)
    return info.value.message


def cmp(op: str, *values: dict) -> dict:
    return {"ComparisonOperator": op, "AttributeValueList": list(values)}


@pytest.mark.parametrize("name, condition, result", [
    ("n", cmp("EQ", {"N": "5.0"}), True), ("n", cmp("EQ", {"S": "5"}), False), ("absent", cmp("EQ", {"N": "5"}), False),
    ("n", cmp("NE", {"N": "4"}), True), ("absent", cmp("NE", {"N": "4"}), True), ("ss", cmp("EQ", {"SS": ["b", "a"]}), True),
    ("n", cmp("LT", {"N": "6"}), True), ("n", cmp("LE", {"N": "5"}), True), ("n", cmp("GT", {"N": "5"}), False),
    ("n", cmp("GE", {"N": "5"}), True), ("s", cmp("GT", {"N": "1"}), False),
    ("n", cmp("NOT_NULL"), True), ("z", cmp("NOT_NULL"), True), ("absent", cmp("NULL"), True), ("n", cmp("NULL"), False),
    ("s", cmp("CONTAINS", {"S": "ell"}), True), ("ss", cmp("CONTAINS", {"S": "a"}), True), ("l", cmp("CONTAINS", {"S": "x"}), True),
    ("s", cmp("NOT_CONTAINS", {"S": "xyz"}), True), ("ss", cmp("NOT_CONTAINS", {"S": "a"}), False),
    ("s", cmp("BEGINS_WITH", {"S": "he"}), True), ("n", cmp("BEGINS_WITH", {"S": "5"}), False),
    ("n", cmp("IN", {"N": "1"}, {"N": "5"}), True), ("n", cmp("IN", {"N": "1"}), False),
    ("n", cmp("BETWEEN", {"N": "1"}, {"N": "5"}), True), ("n", cmp("BETWEEN", {"N": "6"}, {"N": "9"}), False),
])
def test_filter_operators(name, condition, result):
    assert scan_filter({name: condition}).matches(ITEM) is result
    assert expected({name: condition}).matches(ITEM) is result


def test_expected_value_and_exists_forms():
    assert expected({"n": {"Value": {"N": "5"}}}).matches(ITEM)
    assert expected({"n": {"Value": {"N": "5"}, "Exists": True}}).matches(ITEM)
    assert not expected({"n": {"Value": {"N": "6"}}}).matches(ITEM)
    assert expected({"absent": {"Exists": False}}).matches(ITEM)
    assert not expected({"n": {"Exists": False}}).matches(ITEM)
    assert expected({"pk": {"Exists": False}}).matches(None)
    assert expected({"n": {"ComparisonOperator": "EQ", "Value": {"N": "5"}}}).matches(ITEM)


def test_conditional_operator():
    both = {"n": cmp("EQ", {"N": "5"}), "s": cmp("EQ", {"S": "nope"})}
    assert not expected(both).matches(ITEM)
    assert not expected(both, "AND").matches(ITEM)
    assert expected(both, "OR").matches(ITEM)
    assert scan_filter(both, "OR").matches(ITEM)


def test_legacy_names_are_literal_and_top_level_reported():
    condition = scan_filter({"a.b": cmp("EQ", {"N": "1"}), "#x": cmp("NOT_NULL")})
    assert condition.matches({"a.b": {"N": "1"}, "#x": {"S": "y"}})
    assert condition.top_level == frozenset({"a.b", "#x"})


def test_empty_expected_means_no_condition():
    assert compile_request({"Expected": {}}, "PutItem").condition is None


@pytest.mark.parametrize("conditions, message", [
    ({"a": {"Value": {"N": "1"}, "AttributeValueList": [{"N": "1"}]}}, "Value and AttributeValueList cannot be used together for Attribute: a"),
    ({"a": {"Exists": True, "ComparisonOperator": "EQ", "Value": {"N": "1"}}}, "Exists and ComparisonOperator cannot be used together for Attribute: a"),
    ({"a": {"ComparisonOperator": "EQ"}}, "Value or AttributeValueList must be used with ComparisonOperator: EQ for Attribute: a"),
    ({"a": {"AttributeValueList": [{"N": "1"}]}}, "AttributeValueList can only be used with a ComparisonOperator for Attribute: a"),
    ({"a": {}}, "Value must be provided when Exists is null for Attribute: a"),
    ({"a": {"Exists": True}}, "Value must be provided when Exists is true for Attribute: a"),
    ({"a": {"Exists": False, "Value": {"N": "1"}}}, "Value cannot be used when Exists is false for Attribute: a"),
    ({"a": cmp("BETWEEN", {"N": "1"})}, "Invalid number of argument(s) for the BETWEEN ComparisonOperator"),
    ({"a": cmp("NULL", {"N": "1"})}, "Invalid number of argument(s) for the NULL ComparisonOperator"),
    ({"a": {"ComparisonOperator": "IN", "AttributeValueList": []}}, "Invalid number of argument(s) for the IN ComparisonOperator"),
    ({"a": cmp("LT", {"SS": ["x"]})}, "ComparisonOperator LT is not valid for SS AttributeValue type"),
    ({"a": cmp("IN", {"N": "1"}, {"S": "x"})}, "AttributeValues inside AttributeValueList must be of same type"),
])
def test_expected_errors(conditions, message):
    assert error({"Expected": conditions}) == PREFIX + message


@pytest.mark.parametrize("value", [{"BOOL": True}, {"NULL": True}, {"L": [{"S": "x"}]}, {"M": {"k": {"N": "1"}}}])
def test_equality_accepts_every_type_in_expected_and_filters(value):
    # docs/behaviour/expressions.md §2: EQ and NE take L, M, BOOL and NULL too, in Expected and in Query/Scan filters
    item = {"pk": {"S": "k"}, "t": value}
    assert expected({"t": cmp("EQ", value)}).matches(item)
    assert not expected({"t": cmp("NE", value)}).matches(item)
    scan = compile_request({"ScanFilter": {"t": cmp("EQ", value)}}, "Scan")
    assert scan.filter.matches(item)
    assert not compile_request({"ScanFilter": {"t": cmp("NE", value)}}, "Scan").filter.matches(item)


@pytest.mark.parametrize("item_value", [{"S": "abc"}, {"SS": ["a", "b"]}, {"L": [{"S": "b"}]}, {"B": "AQI="}])
def test_not_contains_on_strings_sets_lists_and_binary(item_value):
    needle = {"B": "AQ=="} if "B" in item_value else {"S": "b"}
    missing = {"B": "Aw=="} if "B" in item_value else {"S": "z"}
    item = {"pk": {"S": "k"}, "a": item_value}
    assert not expected({"a": cmp("NOT_CONTAINS", needle)}).matches(item)
    assert expected({"a": cmp("NOT_CONTAINS", missing)}).matches(item)


def test_conditional_operator_needs_expected():
    message = "One or more parameter values were invalid: ConditionalOperator cannot be used without Expected"
    for params in ({"ConditionalOperator": "AND"}, {"ConditionalOperator": "OR", "Expected": {}}):
        for op in ("PutItem", "UpdateItem", "DeleteItem"):
            assert error(dict(params), op) == message
    assert compile_request({"Expected": {}}, "PutItem").condition is None  # an empty Expected is no condition


def test_empty_attribute_names_are_refused():
    message = "One or more parameter values were invalid: Empty attribute name"
    assert error({"Expected": {"": {"Exists": False}}}) == message
    assert error({"AttributeUpdates": {"": {"Value": {"S": "x"}}}}, "UpdateItem") == message
    assert error({"AttributesToGet": [""]}, "GetItem") == message
    assert error({"ScanFilter": {"": cmp("EQ", {"S": "x"})}}, "Scan") == message


def test_filter_between_bounds():
    assert error({"QueryFilter": {"a": cmp("BETWEEN", {"N": "9"}, {"N": "1"})},
                  "KeyConditions": {"pk": cmp("EQ", {"S": "k"})}}, "Query") == (
        "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")


def test_legacy_values_are_validated_and_canonicalised():
    assert "numeric" in error({"Expected": {"a": {"Value": {"N": "x1"}}}})
    assert expected({"n": {"Value": {"N": "5.00"}}}).matches(ITEM)


# -- AttributeUpdates --------------------------------------------------------------------------------------

def updates(attribute_updates: dict):
    return compile_request({"AttributeUpdates": attribute_updates}, "UpdateItem").update


def test_attribute_updates_actions():
    update = updates({
        "s": {"Value": {"S": "new"}}, "put": {"Action": "PUT", "Value": {"N": "1"}},
        "n": {"Action": "ADD", "Value": {"N": "2"}}, "ss": {"Action": "DELETE", "Value": {"SS": ["a"]}},
        "l": {"Action": "ADD", "Value": {"L": [{"S": "y"}]}}, "z": {"Action": "DELETE"},
        "fresh": {"Action": "ADD", "Value": {"NS": ["1"]}},
    })
    result = update.apply(ITEM, frozenset({"pk"}))
    assert result.item == {"pk": {"S": "k"}, "n": {"N": "7"}, "s": {"S": "new"}, "ss": {"SS": ["b"]},
                           "l": {"L": [{"S": "x"}, {"S": "y"}]}, "t": {"BOOL": True}, "put": {"N": "1"},
                           "fresh": {"NS": ["1"]}}


def test_attribute_updates_empty_creates_item():
    assert updates({}).apply(None, frozenset({"pk"})).item == {}


def test_attribute_updates_delete_only_does_not_create():
    assert updates({"a": {"Action": "DELETE"}}).apply(None, frozenset({"pk"})).item is None


def test_attribute_updates_errors():
    assert error({"AttributeUpdates": {"a": {"Action": "PUT"}}}, "UpdateItem") == (
        PREFIX + "Only DELETE action is allowed when no attribute value is specified")
    assert error({"AttributeUpdates": {"a": {"Action": "ADD", "Value": {"S": "x"}}}}, "UpdateItem") == (
        PREFIX + "ADD action is not supported for the type S")
    assert error({"AttributeUpdates": {"a": {"Action": "DELETE", "Value": {"S": "x"}}}}, "UpdateItem") == (
        PREFIX + "DELETE action with value is not supported for the type S")
    update = updates({"s": {"Action": "ADD", "Value": {"N": "1"}}})
    with pytest.raises(ValidationException, match="^Type mismatch for attribute to update$"):
        update.apply(ITEM, frozenset({"pk"}))
    update = updates({"pk": {"Value": {"S": "other"}}})
    with pytest.raises(ValidationException, match="Cannot update attribute pk. This attribute is part of the key"):
        update.apply(ITEM, frozenset({"pk"}))
