"""AttributeValue validation (messages and error types) and DynamoDB's item size."""
from __future__ import annotations

import base64

import pytest

from dynalocal.errors import SerializationException, ValidationException
from dynalocal.values import attributes as values

INVALID = "One or more parameter values were invalid: "


def fails(av, error=ValidationException) -> str:
    with pytest.raises(error) as info:
        values.validate_value(av)
    assert type(info.value) is error
    return info.value.message


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# --- structure -----------------------------------------------------------------------------

@pytest.mark.parametrize("av", [{}, {"S": None}, {"dog": "cat"}, {"S": None, "N": None}])
def test_empty_attribute_value(av):
    assert fails(av) == values.EMPTY == (
        "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")


@pytest.mark.parametrize("av", [{"S": "a", "N": "1"}, {"SS": ["a"], "NULL": True}, {"BOOL": True, "L": []}])
def test_more_than_one_type(av):
    assert fails(av) == (
        "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")


def test_null_members_and_unknown_tags_are_ignored_beside_one_type():
    av = {"S": "x", "N": None}
    assert values.validate_value(av) == 1 and av == {"S": "x"}
    av = {"dog": "cat", "N": "01"}
    assert values.validate_value(av) == 2 and av == {"N": "1"}


# --- scalars -------------------------------------------------------------------------------

def test_strings():
    assert values.validate_value({"S": ""}) == 0
    assert values.validate_value({"S": "héllo"}) == 6
    assert values.validate_value({"S": "a\x00b"}) == 3
    assert values.validate_value({"S": "\U0001F600"}) == 4


@pytest.mark.parametrize("value,message", [
    (1, "NUMBER_VALUE cannot be converted to String"),
    (1.5, "DECIMAL_VALUE cannot be converted to String"),
    (True, "TRUE_VALUE cannot be converted to String"),
    (False, "FALSE_VALUE cannot be converted to String"),
    ([1], "Unrecognized collection type class java.lang.String"),
    ({}, "Start of structure or map found where not expected"),
])
def test_string_json_type_mismatch(value, message):
    assert fails({"S": value}, SerializationException) == message


def test_numbers_are_canonicalised_in_place():
    av = {"N": "+001.50"}
    assert values.validate_value(av) == 3  # 1.5: exponent byte + base-100 digits 01 50
    assert av == {"N": "1.5"}
    assert fails({"N": 12}, SerializationException) == "NUMBER_VALUE cannot be converted to String"
    assert fails({"N": "x"}) == "The parameter cannot be converted to a numeric value: x"
    assert fails({"N": "1e126"}).startswith("Number overflow")


def test_binary():
    av = {"B": b64(b"\x00\x01\xff")}
    assert values.validate_value(av) == 3
    assert values.validate_value({"B": ""}) == 0
    assert fails({"B": 5}, SerializationException) == "only base-64-encoded strings are convertible to bytes"
    assert fails({"B": "AQ="}, SerializationException) == (
        "Base64 encoded length is expected a multiple of 4 bytes but found: 3")
    assert fails({"B": "AQ=A"}, SerializationException) == "Invalid last non-pad Base64 character dectected"
    assert fails({"B": "A?=="}, SerializationException) == "Invalid last non-pad Base64 character dectected"


def test_bool_and_null():
    assert values.validate_value({"BOOL": False}) == 1
    assert values.validate_value({"NULL": True}) == 1
    # DynamoDB's JSON reader coerces a few strings.
    av = {"BOOL": "Yes"}
    values.validate_value(av)
    assert av == {"BOOL": True}
    assert fails({"BOOL": 1}, SerializationException) == "NUMBER_VALUE cannot be converted to Boolean"
    assert fails({"BOOL": "maybe"}, SerializationException) == "Unexpected token received from parser"
    for value in (False, "false", "0"):
        assert fails({"NULL": value}) == INVALID + "Null attribute value types must have the value of true"


# --- sets ----------------------------------------------------------------------------------

def test_empty_sets():
    assert fails({"SS": []}) == INVALID + "An string set  may not be empty"
    assert fails({"NS": []}) == INVALID + "An number set  may not be empty"
    assert fails({"BS": []}) == INVALID + "Binary sets should not be empty"


def test_duplicate_set_members():
    assert fails({"SS": ["a", "b", "a"]}) == INVALID + "Input collection [a, b, a] contains duplicates."
    assert fails({"NS": ["1", "1"]}) == "Input collection contains duplicates"
    assert fails({"NS": ["1", "1.0"]}) == "Input collection contains duplicates"  # by value
    assert fails({"BS": ["AQ==", "AQ=="]}) == INVALID + "Input collection [AQ==, AQ==]of type BS contains duplicates."


def test_set_sizes_and_canonical_members():
    assert values.validate_value({"SS": ["", "ab", "é"]}) == 4
    av = {"NS": ["1.0", "-02", "3e2"]}
    assert values.validate_value(av) == 2 + 3 + 2
    assert av == {"NS": ["1", "-2", "300"]}
    assert values.validate_value({"BS": [b64(b"ab"), b64(b"")]}) == 2


def test_set_json_type_mismatch():
    assert fails({"SS": "a"}, SerializationException) == "Unexpected field type"
    assert fails({"SS": [1]}, SerializationException) == "NUMBER_VALUE cannot be converted to String"
    assert fails({"NS": {}}, SerializationException) == "Start of structure or map found where not expected"


# --- documents -----------------------------------------------------------------------------

def test_lists_and_maps():
    assert values.validate_value({"L": []}) == 3
    assert values.validate_value({"M": {}}) == 3
    assert values.validate_value({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (1 + 2) + (1 + 2)
    assert values.validate_value({"M": {"k": {"S": "ab"}}}) == 3 + 1 + 1 + 2
    av = {"M": {"a": {"L": [{"N": "1.50"}]}}}
    values.validate_value(av)
    assert av == {"M": {"a": {"L": [{"N": "1.5"}]}}}
    assert fails({"M": []}, SerializationException) == (
        "Unrecognized collection type java.util.Map<java.lang.String, com.amazonaws.dynamodb.v20120810.AttributeValue>")
    assert fails({"M": "x"}, SerializationException) == "Unexpected field type"
    assert fails({"L": "x"}, SerializationException) == "Unexpected field type"
    assert fails({"L": [5]}, SerializationException) == "Unexpected value type in payload"
    assert fails({"L": [[]]}, SerializationException).startswith("Unrecognized collection type")
    # errors inside documents are found too
    assert fails({"M": {"a": {"L": [{"SS": []}]}}}) == INVALID + "An string set  may not be empty"


def nested_maps(count: int) -> dict:
    """An AttributeValue that is `count` maps, each inside the previous one; the innermost is empty."""
    av: dict = {"M": {}}
    for _ in range(count - 1):
        av = {"M": {"a": av}}
    return av


def test_nesting_limit():
    # The item is level 1: an attribute holding a map with 30 further nested maps reaches level 32.
    values.validate_item({"x": nested_maps(31)})
    with pytest.raises(ValidationException) as info:
        values.validate_item({"x": nested_maps(32)})
    assert "Nesting Levels have exceeded supported limits" in info.value.message
    lists: dict = {"L": []}
    for _ in range(30):
        lists = {"L": [lists]}
    values.validate_item({"x": lists})
    with pytest.raises(ValidationException):
        values.validate_item({"x": {"L": [lists]}})


# --- items and sizes -----------------------------------------------------------------------

def test_attribute_names():
    with pytest.raises(ValidationException) as info:
        values.validate_item({"": {"S": "x"}})
    assert "Empty attribute name" in info.value.message
    assert values.validate_item({"n" * 65535: {"S": ""}}) == 65535
    with pytest.raises(ValidationException) as info:
        values.validate_item({"n" * 65536: {"S": ""}})
    assert "65535" in info.value.message


def test_item_must_be_a_map():
    with pytest.raises(SerializationException):
        values.validate_item([])


def test_developer_guide_example_is_23_bytes():
    item = {"shirt-color": {"S": "R"}, "shirt-size": {"S": "M"}}
    assert values.validate_item(item) == 23
    assert values.item_size(item) == 23


def test_size_of_every_type():
    item = {
        "s": {"S": "héllo"},  # 1 + 6
        "n": {"N": "-12.5"},  # 1 + 4
        "b": {"B": b64(b"12345")},  # 1 + 5
        "t": {"BOOL": True},  # 1 + 1
        "z": {"NULL": True},  # 1 + 1
        "ss": {"SS": ["a", "bc"]},  # 2 + 3
        "ns": {"NS": ["1", "100"]},  # 2 + 4
        "bs": {"BS": [b64(b"x"), b64(b"yz")]},  # 2 + 3
        "l": {"L": [{"S": "a"}, {"NULL": True}]},  # 1 + 3 + 2 + 2
        "m": {"M": {"k": {"N": "1"}, "kk": {"L": []}}},  # 1 + 3 + (1+1+2) + (1+2+3)
    }
    expected = 7 + 5 + 6 + 2 + 2 + 5 + 6 + 5 + 8 + 14
    assert values.validate_item(item) == expected
    assert values.item_size(item) == expected
    for name, av in item.items():
        assert values.value_size(av) == values.item_size({name: av}) - len(name)


@pytest.mark.parametrize("total", [409_600, 409_601])
def test_400kb_boundary_sizes(total):
    item = {"pk": {"S": "k"}, "big": {"S": "x" * (total - 2 - 1 - 3)}}
    assert values.validate_item(item) == total
    assert (total <= values.MAX_ITEM_SIZE) is (total == 409_600)


def test_validate_item_rejects_bad_values_with_their_messages():
    with pytest.raises(ValidationException) as info:
        values.validate_item({"a": {"S": "x"}, "b": {}})
    assert info.value.message == values.EMPTY
