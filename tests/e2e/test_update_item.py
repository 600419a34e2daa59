"""UpdateItem and conditional writes end to end, through the low-level client and the resource layer."""
from __future__ import annotations

from decimal import Decimal

import pytest
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError


@pytest.fixture
def table(make_table):
    return make_table([("id", "HASH")], [("id", "S")])


def _err(info) -> tuple[str, str]:
    e = info.value.response["Error"]
    return e["Code"], e["Message"]


K = {"id": {"S": "k"}}


def _get(ddb, table):
    return ddb.get_item(TableName=table, Key=K, ConsistentRead=True).get("Item")


def test_set_arithmetic_and_functions(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "n": {"N": "10"}, "l": {"L": [{"S": "a"}]}})
    r = ddb.update_item(
        TableName=table, Key=K,
        UpdateExpression="SET n = n - :two, m = :two + :two, l = list_append(:front, l), c = if_not_exists(c, :z)",
        ExpressionAttributeValues={":two": {"N": "2"}, ":front": {"L": [{"S": "z"}]}, ":z": {"N": "0"}},
        ReturnValues="ALL_NEW")
    assert r["Attributes"] == {**K, "n": {"N": "8"}, "m": {"N": "4"}, "l": {"L": [{"S": "z"}, {"S": "a"}]},
                               "c": {"N": "0"}}
    r = ddb.update_item(TableName=table, Key=K, UpdateExpression="SET c = if_not_exists(c, :one)",
                        ExpressionAttributeValues={":one": {"N": "1"}}, ReturnValues="UPDATED_NEW")
    assert r["Attributes"] == {"c": {"N": "0"}}, "if_not_exists keeps an existing value"


def test_remove_shifts_list_elements_and_nested_members(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "l": {"L": [{"N": str(i)} for i in range(5)]},
                                        "m": {"M": {"a": {"N": "1"}, "b": {"N": "2"}}}})
    ddb.update_item(TableName=table, Key=K, UpdateExpression="REMOVE l[1], l[3], m.a")
    item = _get(ddb, table)
    assert item["l"] == {"L": [{"N": "0"}, {"N": "2"}, {"N": "4"}]}
    assert item["m"] == {"M": {"b": {"N": "2"}}}


def test_add_and_delete_on_sets_and_numbers(ddb, table):
    ddb.update_item(TableName=table, Key=K, UpdateExpression="ADD n :five, s :ab",
                    ExpressionAttributeValues={":five": {"N": "5"}, ":ab": {"SS": ["a", "b"]}})
    item = _get(ddb, table)
    assert item["n"] == {"N": "5"} and sorted(item["s"]["SS"]) == ["a", "b"]
    ddb.update_item(TableName=table, Key=K, UpdateExpression="ADD n :neg DELETE s :a",
                    ExpressionAttributeValues={":neg": {"N": "-7.5"}, ":a": {"SS": ["a"]}})
    item = _get(ddb, table)
    assert item["n"] == {"N": "-2.5"} and item["s"] == {"SS": ["b"]}
    ddb.update_item(TableName=table, Key=K, UpdateExpression="DELETE s :b", ExpressionAttributeValues={":b": {"SS": ["b"]}})
    assert "s" not in _get(ddb, table), "an emptied set removes the attribute"


def test_upsert_and_remove_only_on_a_missing_item(ddb, table):
    ddb.update_item(TableName=table, Key={"id": {"S": "new"}}, UpdateExpression="SET a = :v",
                    ExpressionAttributeValues={":v": {"S": "x"}})
    assert ddb.get_item(TableName=table, Key={"id": {"S": "new"}})["Item"] == {"id": {"S": "new"}, "a": {"S": "x"}}
    ddb.update_item(TableName=table, Key={"id": {"S": "ghost"}}, UpdateExpression="REMOVE a")
    assert "Item" not in ddb.get_item(TableName=table, Key={"id": {"S": "ghost"}})
    ddb.update_item(TableName=table, Key={"id": {"S": "bare"}})
    assert ddb.get_item(TableName=table, Key={"id": {"S": "bare"}})["Item"] == {"id": {"S": "bare"}}


def test_return_values_variants(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "a": {"N": "1"}, "m": {"M": {"x": {"N": "1"}, "y": {"N": "2"}}}})
    upd = dict(TableName=table, Key=K, UpdateExpression="SET a = a + :one, m.x = :ten",
               ExpressionAttributeValues={":one": {"N": "1"}, ":ten": {"N": "10"}})
    assert ddb.update_item(**upd, ReturnValues="UPDATED_OLD")["Attributes"] == {
        "a": {"N": "1"}, "m": {"M": {"x": {"N": "1"}}}}
    # m.x is already 10: a nested path set to its own value is in neither UPDATED_* (issue 25)
    assert ddb.update_item(**upd, ReturnValues="UPDATED_NEW")["Attributes"] == {"a": {"N": "3"}}
    old = ddb.update_item(**upd, ReturnValues="ALL_OLD")["Attributes"]
    assert old["a"] == {"N": "3"} and old["m"]["M"]["y"] == {"N": "2"}
    assert "Attributes" not in ddb.update_item(**upd, ReturnValues="NONE")
    with pytest.raises(ClientError) as info:
        ddb.update_item(**upd, ReturnValues="EVERYTHING")
    assert _err(info)[0] == "ValidationException"


def test_conditions_and_return_values_on_failure(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "v": {"N": "1"}})
    with pytest.raises(ClientError) as info:
        ddb.update_item(TableName=table, Key=K, UpdateExpression="SET v = :two", ConditionExpression="v = :zero",
                        ExpressionAttributeValues={":two": {"N": "2"}, ":zero": {"N": "0"}},
                        ReturnValuesOnConditionCheckFailure="ALL_OLD")
    assert _err(info) == ("ConditionalCheckFailedException", "The conditional request failed")
    assert info.value.response["Item"] == {**K, "v": {"N": "1"}}
    with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
        ddb.delete_item(TableName=table, Key=K, ConditionExpression="attribute_not_exists(v)")
    with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
        ddb.put_item(TableName=table, Item=K, ConditionExpression="attribute_type(v, :s)",
                     ExpressionAttributeValues={":s": {"S": "S"}})
    assert _get(ddb, table) == {**K, "v": {"N": "1"}}, "failed conditions change nothing"
    ddb.delete_item(TableName=table, Key=K, ConditionExpression="v BETWEEN :a AND :b AND NOT begins_with(id, :x)",
                    ExpressionAttributeValues={":a": {"N": "0"}, ":b": {"N": "5"}, ":x": {"S": "z"}})
    assert _get(ddb, table) is None


def test_invalid_updates_are_rejected_with_dynamodb_messages(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "n": {"N": "1"}, "s": {"S": "x"}})
    cases = [
        (dict(UpdateExpression="SET id = :v", ExpressionAttributeValues={":v": {"S": "y"}}),
         "Cannot update attribute id. This attribute is part of the key"),
        (dict(UpdateExpression="SET a = :v", ExpressionAttributeValues={":v": {"S": "y"}, ":unused": {"S": "z"}}),
         "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}"),
        (dict(UpdateExpression="SET a = :v"), "An expression attribute value used in expression is not defined"),
        (dict(UpdateExpression="SET a = :v SET b = :v", ExpressionAttributeValues={":v": {"S": "y"}}),
         "The \"SET\" section can only be used once in an update expression"),
        (dict(UpdateExpression="SET a = :v REMOVE a.b", ExpressionAttributeValues={":v": {"S": "y"}}),
         "Two document paths overlap with each other"),
        (dict(UpdateExpression="SET status = :v", ExpressionAttributeValues={":v": {"S": "y"}}),
         "Attribute name is a reserved keyword; reserved keyword: status"),
        (dict(UpdateExpression="SET a = :v +", ExpressionAttributeValues={":v": {"S": "y"}}),
         "Invalid UpdateExpression: Syntax error; token: "),
        (dict(UpdateExpression="SET n = s + :v", ExpressionAttributeValues={":v": {"N": "1"}}),
         "An operand in the update expression has an incorrect data type"),
        (dict(UpdateExpression="SET nosuch.deep = :v", ExpressionAttributeValues={":v": {"N": "1"}}),
         "The document path provided in the update expression is invalid for update"),
        (dict(AttributeUpdates={"a": {"Action": "PUT", "Value": {"S": "x"}}}, UpdateExpression="SET b = :v",
              ExpressionAttributeValues={":v": {"N": "1"}}),
         "Can not use both expression and non-expression parameters in the same request"),
    ]
    for kwargs, words in cases:
        with pytest.raises(ClientError) as info:
            ddb.update_item(TableName=table, Key=K, **kwargs)
        code, message = _err(info)
        assert code == "ValidationException" and words in message, (kwargs, message)
    assert _get(ddb, table) == {**K, "n": {"N": "1"}, "s": {"S": "x"}}


def test_list_index_past_the_end_appends(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "l": {"L": [{"S": "a"}]}})
    ddb.update_item(TableName=table, Key=K, UpdateExpression="SET l[9] = :b", ExpressionAttributeValues={":b": {"S": "b"}})
    assert _get(ddb, table)["l"] == {"L": [{"S": "a"}, {"S": "b"}]}


def test_legacy_parameters(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "n": {"N": "1"}, "s": {"SS": ["a"]}})
    ddb.update_item(TableName=table, Key=K, AttributeUpdates={
        "n": {"Action": "ADD", "Value": {"N": "2"}}, "s": {"Action": "DELETE", "Value": {"SS": ["a"]}},
        "t": {"Action": "PUT", "Value": {"S": "x"}}},
        Expected={"n": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}})
    assert _get(ddb, table) == {**K, "n": {"N": "3"}, "t": {"S": "x"}}
    with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
        ddb.put_item(TableName=table, Item=K, Expected={"t": {"Exists": False}})
    ddb.put_item(TableName=table, Item={**K, "x": {"N": "1"}},
                 Expected={"t": {"Value": {"S": "x"}}, "n": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "2"}]}},
                 ConditionalOperator="AND")
    got = ddb.get_item(TableName=table, Key=K, AttributesToGet=["x"])["Item"]
    assert got == {"x": {"N": "1"}}


def test_projection_expression_on_get_item(ddb, table):
    ddb.put_item(TableName=table, Item={**K, "a": {"M": {"b": {"L": [{"N": "1"}, {"N": "2"}]}, "c": {"S": "x"}}},
                                        "d": {"S": "y"}})
    got = ddb.get_item(TableName=table, Key=K, ProjectionExpression="a.b[1], #d",
                       ExpressionAttributeNames={"#d": "d"})["Item"]
    assert got == {"a": {"M": {"b": {"L": [{"N": "2"}]}}}, "d": {"S": "y"}}
    assert ddb.get_item(TableName=table, Key=K, ProjectionExpression="nothing")["Item"] == {}


def test_resource_layer_conditions_and_updates(resource, table):
    t = resource.Table(table)
    t.put_item(Item={"id": "r", "count": 0, "tags": {"a"}})
    t.update_item(Key={"id": "r"}, UpdateExpression="SET #c = #c + :one ADD tags :b",
                  ExpressionAttributeNames={"#c": "count"}, ExpressionAttributeValues={":one": 1, ":b": {"b"}},
                  ConditionExpression=Attr("count").lt(10) & Attr("tags").contains("a"))
    item = t.get_item(Key={"id": "r"})["Item"]
    assert item["count"] == Decimal(1) and item["tags"] == {"a", "b"}
    with pytest.raises(ClientError) as info:
        t.put_item(Item={"id": "r"}, ConditionExpression=Attr("id").not_exists())
    assert _err(info)[0] == "ConditionalCheckFailedException"
    t.delete_item(Key={"id": "r"}, ConditionExpression=Attr("count").between(0, 5) & Attr("tags").size().gt(1))
    assert "Item" not in t.get_item(Key={"id": "r"})
