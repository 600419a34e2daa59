"""Single-item operations through boto3: PutItem, GetItem, DeleteItem (docs/behaviour/operations.md §3, values.md)."""
from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest
from boto3.dynamodb.types import Binary
from botocore.exceptions import ClientError

INVALID = "One or more parameter values were invalid: "
NO_MATCH = "The provided key element does not match the schema"
TOO_BIG = "Item size has exceeded the maximum allowed size"


def error(call, **kwargs) -> tuple[str, str]:
    with pytest.raises(ClientError) as info:
        call(**kwargs)
    err = info.value.response["Error"]
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return err["Code"], err["Message"]


@pytest.fixture
def hash_table(make_table):
    return make_table([("pk", "HASH")], [("pk", "S")])


@pytest.fixture
def composite(make_table):
    return make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])


@pytest.fixture(scope="module")
def loose(server):
    """A client that lets through what botocore's own parameter validation would stop."""
    return server.client(parameter_validation=False)


def get(ddb, table, key, **kwargs):
    return ddb.get_item(TableName=table, Key=key, **kwargs).get("Item")


ALL_TYPES = {
    "pk": {"S": "every-type"},
    "s": {"S": "héllo \U0001F600"},
    "empty_s": {"S": ""},
    "n": {"N": "-12.5"},
    "b": {"B": b"\x00\x01\xfe\xff"},
    "empty_b": {"B": b""},
    "t": {"BOOL": True},
    "f": {"BOOL": False},
    "z": {"NULL": True},
    "ss": {"SS": ["a", "b", ""]},
    "ns": {"NS": ["1", "2.5", "-3"]},
    "bs": {"BS": [b"\x01", b"\x02\x03"]},
    "l": {"L": [{"S": "x"}, {"N": "1"}, {"L": []}, {"M": {}}, {"NULL": True}]},
    "m": {"M": {"inner": {"M": {"deep": {"SS": ["y"]}}}, "num": {"N": "7"}, "": {"S": "empty name inside a map"}}},
}


def normalised(item: dict) -> dict:
    """Sets compared as sets (DynamoDB does not keep set order)."""
    out = {}
    for name, av in item.items():
        ((tag, value),) = av.items()
        if tag in ("SS", "NS", "BS"):
            out[name] = {tag: sorted(value)}
        elif tag == "M":
            out[name] = {"M": normalised(value)}
        elif tag == "L":
            out[name] = {"L": [normalised({"_": v})["_"] for v in value]}
        else:
            out[name] = av
    return out


# --- round trips ---------------------------------------------------------------------------

def test_put_get_delete(ddb, hash_table):
    key = {"pk": {"S": "a"}}
    assert get(ddb, hash_table, key) is None
    out = ddb.put_item(TableName=hash_table, Item={**key, "v": {"S": "1"}})
    assert set(out) == {"ResponseMetadata"}
    assert get(ddb, hash_table, key) == {"pk": {"S": "a"}, "v": {"S": "1"}}
    out = ddb.delete_item(TableName=hash_table, Key=key)
    assert set(out) == {"ResponseMetadata"}
    assert get(ddb, hash_table, key) is None
    ddb.delete_item(TableName=hash_table, Key=key)  # deleting a missing item succeeds


def test_every_type_round_trips(ddb, hash_table):
    ddb.put_item(TableName=hash_table, Item=ALL_TYPES)
    got = get(ddb, hash_table, {"pk": {"S": "every-type"}}, ConsistentRead=True)
    assert normalised(got) == normalised(ALL_TYPES)


def test_every_type_round_trips_through_the_resource_api(resource, hash_table):
    table = resource.Table(hash_table)
    item = {"pk": "res", "n": Decimal("3.14"), "big": Decimal("1" * 38), "tiny": Decimal("1e-130"),
            "b": Binary(b"\x00\xff"), "ss": {"x", "y"}, "ns": {Decimal(1), Decimal("2.5")}, "bs": {Binary(b"1")},
            "l": [1, "two", None, True, {"k": [Decimal("0.5")]}], "m": {"a": {"b": {"c": "d"}}}, "none": None}
    table.put_item(Item=item)
    assert table.get_item(Key={"pk": "res"})["Item"] == item


def test_put_replaces_the_whole_item(ddb, hash_table):
    key = {"pk": {"S": "r"}}
    ddb.put_item(TableName=hash_table, Item={**key, "a": {"S": "1"}, "b": {"S": "2"}})
    ddb.put_item(TableName=hash_table, Item={**key, "c": {"S": "3"}})
    assert get(ddb, hash_table, key) == {**key, "c": {"S": "3"}}


def test_composite_keys(ddb, composite):
    for sk in ("1", "2", "10"):
        ddb.put_item(TableName=composite, Item={"pk": {"S": "p"}, "sk": {"N": sk}, "v": {"S": sk}})
    assert get(ddb, composite, {"pk": {"S": "p"}, "sk": {"N": "10"}})["v"] == {"S": "10"}
    assert get(ddb, composite, {"pk": {"S": "p"}, "sk": {"N": "3"}}) is None
    assert get(ddb, composite, {"pk": {"S": "q"}, "sk": {"N": "1"}}) is None


def test_binary_keys(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "B"), ("sk", "B")])
    key = {"pk": {"B": b"\x00\xff"}, "sk": {"B": b"\x80"}}
    ddb.put_item(TableName=table, Item={**key, "v": {"S": "bin"}})
    assert get(ddb, table, key)["v"] == {"S": "bin"}
    assert get(ddb, table, {"pk": {"B": b"\x00\xff"}, "sk": {"B": b"\x81"}}) is None


# --- numbers -------------------------------------------------------------------------------

@pytest.mark.parametrize("given,shown", [("007", "7"), ("1.0", "1"), ("1E+3", "1000"), ("-0.0", "0"), (".5", "0.5"),
                                         ("123e-2", "1.23"), ("1e-20", "0.00000000000000000001"),
                                         ("1e20", "100000000000000000000")])
def test_numbers_come_back_canonical(ddb, hash_table, given, shown):
    key = {"pk": {"S": "num"}}
    ddb.put_item(TableName=hash_table, Item={**key, "n": {"N": given}, "ns": {"NS": [given, "42"]},
                                             "deep": {"M": {"l": {"L": [{"N": given}]}}}})
    item = get(ddb, hash_table, key)
    assert item["n"] == {"N": shown}
    assert sorted(item["ns"]["NS"]) == sorted([shown, "42"])
    assert item["deep"]["M"]["l"]["L"][0] == {"N": shown}


def test_number_keys_match_by_value(ddb, make_table):
    table = make_table([("pk", "HASH")], [("pk", "N")])
    ddb.put_item(TableName=table, Item={"pk": {"N": "1000"}, "v": {"S": "first"}})
    ddb.put_item(TableName=table, Item={"pk": {"N": "+1000.0"}, "v": {"S": "second"}})
    assert get(ddb, table, {"pk": {"N": "1e3"}}) == {"pk": {"N": "1000"}, "v": {"S": "second"}}
    assert ddb.describe_table(TableName=table)["Table"]["ItemCount"] == 1


@pytest.mark.parametrize("number,message", [
    ("dog", "The parameter cannot be converted to a numeric value: dog"),
    ("1e126", "Number overflow. Attempting to store a number with magnitude larger than supported range"),
    ("1e-131", "Number underflow. Attempting to store a number with magnitude smaller than supported range"),
    ("1" * 39, "Attempting to store more than 38 significant digits in a Number"),
])
def test_bad_numbers(ddb, hash_table, number, message):
    code, got = error(ddb.put_item, TableName=hash_table, Item={"pk": {"S": "a"}, "n": {"N": number}})
    assert code == "ValidationException" and got.endswith(message), got


# --- ReturnValues, ConsistentRead, ConsumedCapacity, AttributesToGet ----------------------

def test_return_values_all_old(ddb, hash_table):
    key = {"pk": {"S": "rv"}}
    out = ddb.put_item(TableName=hash_table, Item={**key, "v": {"N": "1"}}, ReturnValues="ALL_OLD")
    assert "Attributes" not in out
    out = ddb.put_item(TableName=hash_table, Item={**key, "v": {"N": "2"}}, ReturnValues="ALL_OLD")
    assert out["Attributes"] == {**key, "v": {"N": "1"}}
    out = ddb.put_item(TableName=hash_table, Item={**key, "v": {"N": "3"}}, ReturnValues="NONE")
    assert "Attributes" not in out
    out = ddb.delete_item(TableName=hash_table, Key=key, ReturnValues="ALL_OLD")
    assert out["Attributes"] == {**key, "v": {"N": "3"}}
    out = ddb.delete_item(TableName=hash_table, Key=key, ReturnValues="ALL_OLD")
    assert "Attributes" not in out


@pytest.mark.parametrize("value", ["ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"])
def test_put_and_delete_refuse_other_return_values(ddb, hash_table, value):
    key = {"pk": {"S": "rv"}}
    ddb.put_item(TableName=hash_table, Item=key)
    assert error(ddb.put_item, TableName=hash_table, Item={**key, "x": {"S": "changed"}}, ReturnValues=value) == (
        "ValidationException", "ReturnValues can only be ALL_OLD or NONE")
    assert error(ddb.delete_item, TableName=hash_table, Key=key, ReturnValues=value) == (
        "ValidationException", "ReturnValues can only be ALL_OLD or NONE")
    assert get(ddb, hash_table, key) == key  # neither request changed anything


def test_unknown_return_values_is_an_enum_error(loose, hash_table):
    code, message = error(loose.put_item, TableName=hash_table, Item={"pk": {"S": "a"}}, ReturnValues="SOME")
    assert code == "ValidationException"
    assert message == ("1 validation error detected: Value 'SOME' at 'returnValues' failed to satisfy constraint: "
                       "Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]")


def test_consistent_and_eventual_reads(ddb, hash_table):
    key = {"pk": {"S": "c"}}
    ddb.put_item(TableName=hash_table, Item=key)
    for consistent in (True, False):
        out = ddb.get_item(TableName=hash_table, Key=key, ConsistentRead=consistent, ReturnConsumedCapacity="TOTAL")
        assert out["Item"] == key
        assert out["ConsumedCapacity"] == {"TableName": hash_table, "CapacityUnits": 1.0 if consistent else 0.5}


def test_consumed_capacity_shapes(ddb, hash_table):
    key = {"pk": {"S": "cc"}}
    out = ddb.put_item(TableName=hash_table, Item=key, ReturnConsumedCapacity="TOTAL")
    assert out["ConsumedCapacity"] == {"TableName": hash_table, "CapacityUnits": 1.0}
    out = ddb.put_item(TableName=hash_table, Item=key, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"]["CapacityUnits"] == 1.0
    assert out["ConsumedCapacity"]["Table"] == {"CapacityUnits": 1.0}
    out = ddb.put_item(TableName=hash_table, Item=key, ReturnConsumedCapacity="NONE")
    assert "ConsumedCapacity" not in out
    out = ddb.get_item(TableName=hash_table, Key={"pk": {"S": "missing"}}, ReturnConsumedCapacity="TOTAL")
    assert "Item" not in out and out["ConsumedCapacity"]["CapacityUnits"] == 0.5
    out = ddb.delete_item(TableName=hash_table, Key=key, ReturnConsumedCapacity="TOTAL")
    assert out["ConsumedCapacity"] == {"TableName": hash_table, "CapacityUnits": 1.0}


def test_attributes_to_get(ddb, hash_table):
    key = {"pk": {"S": "atg"}}
    ddb.put_item(TableName=hash_table, Item={**key, "a": {"S": "1"}, "b": {"N": "2"}, "c": {"L": []}})
    assert get(ddb, hash_table, key, AttributesToGet=["a", "c"]) == {"a": {"S": "1"}, "c": {"L": []}}
    assert get(ddb, hash_table, key, AttributesToGet=["nothing"]) == {}
    assert "Item" not in ddb.get_item(TableName=hash_table, Key={"pk": {"S": "none"}}, AttributesToGet=["a"])
    code, message = error(ddb.get_item, TableName=hash_table, Key=key, AttributesToGet=["a", "a"])
    assert code == "ValidationException" and "a" in message


# --- key validation ------------------------------------------------------------------------

@pytest.mark.parametrize("key", [
    {"pk": {"S": "a"}},  # missing sort key
    {"sk": {"N": "1"}},  # missing partition key
    {"pk": {"S": "a"}, "sk": {"N": "1"}, "extra": {"S": "x"}},  # extra attribute
    {"pk": {"S": "a"}, "sk": {"S": "1"}},  # wrong type
    {"pk": {"N": "1"}, "sk": {"N": "1"}},  # wrong type
    {"pk": {"S": "a"}, "other": {"N": "1"}},  # wrong name
])
def test_key_does_not_match_schema(ddb, composite, key):
    assert error(ddb.get_item, TableName=composite, Key=key) == ("ValidationException", NO_MATCH)
    assert error(ddb.delete_item, TableName=composite, Key=key) == ("ValidationException", NO_MATCH)


def test_item_missing_key_attributes(ddb, composite):
    assert error(ddb.put_item, TableName=composite, Item={"pk": {"S": "a"}}) == (
        "ValidationException", INVALID + "Missing the key sk in the item")
    assert error(ddb.put_item, TableName=composite, Item={"sk": {"N": "1"}}) == (
        "ValidationException", INVALID + "Missing the key pk in the item")


def test_item_key_of_the_wrong_type(ddb, composite):
    assert error(ddb.put_item, TableName=composite, Item={"pk": {"S": "a"}, "sk": {"S": "1"}}) == (
        "ValidationException", INVALID + "Type mismatch for key sk expected: N actual: S")
    assert error(ddb.put_item, TableName=composite, Item={"pk": {"B": b"a"}, "sk": {"N": "1"}}) == (
        "ValidationException", INVALID + "Type mismatch for key pk expected: S actual: B")


def test_empty_key_values(ddb, hash_table, make_table):
    assert error(ddb.put_item, TableName=hash_table, Item={"pk": {"S": ""}}) == (
        "ValidationException", "One or more parameter values are not valid. The AttributeValue for a key attribute "
                               "cannot contain an empty string value. Key: pk")
    code, message = error(ddb.get_item, TableName=hash_table, Key={"pk": {"S": ""}})
    assert code == "ValidationException"
    assert message.endswith("The AttributeValue for a key attribute cannot contain an empty string value. Key: pk")
    code, message = error(ddb.delete_item, TableName=hash_table, Key={"pk": {"S": ""}})
    assert code == "ValidationException" and "cannot contain an empty string value" in message
    binary = make_table([("pk", "HASH")], [("pk", "B")])
    code, message = error(ddb.put_item, TableName=binary, Item={"pk": {"B": b""}})
    assert code == "ValidationException" and message.endswith(
        "The AttributeValue for a key attribute cannot contain an empty binary value. Key: pk")


def test_key_size_limits(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "S")])
    ok = {"pk": {"S": "p" * 2048}, "sk": {"S": "s" * 1024}}
    ddb.put_item(TableName=table, Item=ok)
    assert get(ddb, table, ok) == ok
    hash_msg = INVALID + "Size of hashkey has exceeded the maximum size limit of2048 bytes"
    range_msg = INVALID + "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
    long_hash = {"pk": {"S": "p" * 2049}, "sk": {"S": "s"}}
    long_range = {"pk": {"S": "p"}, "sk": {"S": "s" * 1025}}
    assert error(ddb.put_item, TableName=table, Item=long_hash) == ("ValidationException", hash_msg)
    assert error(ddb.put_item, TableName=table, Item=long_range) == ("ValidationException", range_msg)
    assert error(ddb.get_item, TableName=table, Key=long_hash) == ("ValidationException", hash_msg)
    assert error(ddb.delete_item, TableName=table, Key=long_range) == ("ValidationException", range_msg)
    # multi-byte characters count in UTF-8 bytes
    assert error(ddb.put_item, TableName=table, Item={"pk": {"S": "é" * 1025}, "sk": {"S": "s"}}) == (
        "ValidationException", hash_msg)


# --- item size -----------------------------------------------------------------------------

def sized_item(total: int) -> dict:
    """An item of exactly `total` bytes: pk "k" (2+1) plus attribute "big" (3) holding a string."""
    return {"pk": {"S": "k"}, "big": {"S": "x" * (total - 3 - 3)}}


def test_400_kb_boundary(ddb, hash_table):
    ddb.put_item(TableName=hash_table, Item=sized_item(409_600))
    assert len(get(ddb, hash_table, {"pk": {"S": "k"}})["big"]["S"]) == 409_594
    assert ddb.describe_table(TableName=hash_table)["Table"]["TableSizeBytes"] == 409_600
    assert error(ddb.put_item, TableName=hash_table, Item=sized_item(409_601)) == ("ValidationException", TOO_BIG)
    assert error(ddb.put_item, TableName=hash_table, Item={"pk": {"S": "k"}, "big": {"B": b"x" * 409_600}}) == (
        "ValidationException", TOO_BIG)


def test_item_size_counts_names_and_documents(ddb, hash_table):
    # 409_600 bytes: a nested map costs 3 bytes plus 1 byte and the name of each entry.
    inner = 409_600 - (2 + 1) - (1 + 3) - (1 + 1)
    item = {"pk": {"S": "k"}, "m": {"M": {"s": {"S": "x" * inner}}}}
    ddb.put_item(TableName=hash_table, Item=item)
    item["m"]["M"]["s"]["S"] += "x"
    assert error(ddb.put_item, TableName=hash_table, Item=item) == ("ValidationException", TOO_BIG)


def test_oversize_item_for_a_missing_table_is_a_validation_error(ddb):
    # request validation comes before the table lookup
    assert error(ddb.put_item, TableName="no-such-table", Item=sized_item(409_601)) == ("ValidationException", TOO_BIG)


# --- attribute value validation ------------------------------------------------------------

@pytest.mark.parametrize("av,message", [
    ({"SS": []}, INVALID + "An string set  may not be empty"),
    ({"NS": []}, INVALID + "An number set  may not be empty"),
    ({"BS": []}, INVALID + "Binary sets should not be empty"),
    ({"SS": ["a", "a"]}, INVALID + "Input collection [a, a] contains duplicates."),
    ({"NS": ["1", "1"]}, "Input collection contains duplicates"),
    ({"NULL": False}, INVALID + "Null attribute value types must have the value of true"),
    ({}, "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"),
    ({"S": "a", "N": "1"}, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the "
                           "supported datatypes"),
])
def test_bad_attribute_values(loose, hash_table, av, message):
    code, got = error(loose.put_item, TableName=hash_table, Item={"pk": {"S": "bad"}, "x": av})
    assert code == "ValidationException" and got.endswith(message), got
    assert get(loose, hash_table, {"pk": {"S": "bad"}}) is None


def test_json_type_mismatches_are_serialization_errors(server, hash_table):
    for av, message in (({"N": 5}, "NUMBER_VALUE cannot be converted to String"),
                        ({"S": True}, "TRUE_VALUE cannot be converted to String"),
                        ({"B": "AQ="}, "Base64 encoded length is expected a multiple of 4 bytes but found: 3")):
        status, _, body = server.raw("DynamoDB_20120810.PutItem", {"TableName": hash_table,
                                                                  "Item": {"pk": {"S": "j"}, "x": av}})
        assert status == 400
        assert json.loads(body) == {"__type": "com.amazon.coral.service#SerializationException", "Message": message}


def test_unknown_table(ddb):
    for call, kwargs in ((ddb.get_item, {"Key": {"pk": {"S": "a"}}}), (ddb.put_item, {"Item": {"pk": {"S": "a"}}}),
                         (ddb.delete_item, {"Key": {"pk": {"S": "a"}}})):
        assert error(call, TableName="no-such-table", **kwargs) == (
            "ResourceNotFoundException", "Requested resource not found")


def test_validation_before_table_lookup(ddb):
    code, _ = error(ddb.put_item, TableName="no-such-table", Item={"pk": {"S": "a"}, "s": {"SS": []}})
    assert code == "ValidationException"


# --- rejected requests change nothing; the server keeps serving ------------------------

def test_rejected_requests_change_nothing(ddb, loose, server, composite):
    key = {"pk": {"S": "keep"}, "sk": {"N": "1"}}
    original = {**key, "v": {"S": "original"}}
    ddb.put_item(TableName=composite, Item=original)
    bad_puts = [
        {**original, "v": {"S": "changed"}, "s": {"SS": []}},
        {**original, "v": {"S": "changed"}, "n": {"N": "1e126"}},
        {**original, "v": {"S": "x" * 409_600}},
        {**original, "sk": {"S": "1"}},
        {"pk": key["pk"], "v": {"S": "changed"}},
        {**original, "v": {"S": "changed"}, "m": {"M": {"deep": {"NULL": False}}}},
    ]
    for item in bad_puts:
        with pytest.raises(ClientError):
            loose.put_item(TableName=composite, Item=item)
    with pytest.raises(ClientError):
        ddb.put_item(TableName=composite, Item={**original, "v": {"S": "changed"}}, ReturnValues="ALL_NEW")
    with pytest.raises(ClientError):
        ddb.delete_item(TableName=composite, Key=key, ReturnValues="UPDATED_OLD")
    with pytest.raises(ClientError):
        ddb.delete_item(TableName=composite, Key={**key, "extra": {"S": "x"}})
    for raw in (b"{not json", b'{"TableName": "' + composite.encode() + b'", "Item": [1]}', b"[]"):
        status, _, _ = server.raw("DynamoDB_20120810.PutItem", raw)
        assert status == 400
    assert get(ddb, composite, key) == original
    table = ddb.describe_table(TableName=composite)["Table"]
    assert table["ItemCount"] == 1


def test_server_keeps_serving_after_bad_input(ddb, server, hash_table):
    for raw in (b"\x00\x01\x02", b'{"TableName": 1}', b'{"Item": {"pk": {"S": {"S": "x"}}}}', b"[[[[[[]]]]]]"):
        for operation in ("GetItem", "PutItem", "DeleteItem"):
            status, _, body = server.raw(f"DynamoDB_20120810.{operation}", raw)
            assert 400 <= status < 500, (operation, raw, body)
    status, _, body = server.raw("DynamoDB_20120810.GetItem", {"TableName": hash_table, "Key": {"pk": {"S": "x"}},
                                                              "AttributesToGet": "a"})
    assert status == 400 and b"SerializationException" in body
    status, _, body = server.raw("DynamoDB_20120810.PutItem", {"TableName": hash_table, "Item": 7})
    assert status == 400 and b"SerializationException" in body
    ddb.put_item(TableName=hash_table, Item={"pk": {"S": "alive"}})
    assert get(ddb, hash_table, {"pk": {"S": "alive"}}) == {"pk": {"S": "alive"}}


def test_binary_is_base64_on_the_wire(server, hash_table):
    raw = base64.b64encode(b"\x00\x10\x83").decode()
    status, _, _ = server.raw("DynamoDB_20120810.PutItem", {"TableName": hash_table,
                                                           "Item": {"pk": {"S": "wire"}, "b": {"B": raw}}})
    assert status == 200
    status, _, body = server.raw("DynamoDB_20120810.GetItem", {"TableName": hash_table, "Key": {"pk": {"S": "wire"}}})
    assert json.loads(body) == {"Item": {"pk": {"S": "wire"}, "b": {"B": raw}}}
    status, _, body = server.raw("DynamoDB_20120810.GetItem", {"TableName": hash_table, "Key": {"pk": {"S": "nope"}}})
    assert status == 200 and body == b"{}"
