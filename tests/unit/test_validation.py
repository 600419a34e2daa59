"""Request shape validation: SerializationException texts, constraint messages, paths, opacity."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.engine import shapes, validation
from dynalocal.engine.validation import validate
from dynalocal.errors import DynamoError, SerializationException, ValidationException

PT = "Member must not be null"
CAST = shapes.CAST_MSG


def ser(op: str, body) -> str | None:
    with pytest.raises(SerializationException) as info:
        validate(op, body)
    assert type(info.value) is SerializationException
    return info.value.message


def val(op: str, body) -> str:
    with pytest.raises(ValidationException) as info:
        validate(op, body)
    return info.value.message


def ok(op: str, body) -> dict:
    validate(op, body)
    return body


def one(path: str, value: str, constraint: str) -> str:
    return f"1 validation error detected: Value {value} at '{path}' failed to satisfy constraint: {constraint}"


KEY = {"pk": {"S": "a"}}


# --- SerializationException (docs/behaviour/validation.md §4) ------------------------------------------------

@pytest.mark.parametrize("given,message", [
    (True, "TRUE_VALUE cannot be converted to String"),
    (False, "FALSE_VALUE cannot be converted to String"),
    (23, "NUMBER_VALUE cannot be converted to String"),
    (-2147483649, "NUMBER_VALUE cannot be converted to String"),
    (34.56, "DECIMAL_VALUE cannot be converted to String"),
    ([], "Unrecognized collection type class java.lang.String"),
    ({}, "Start of structure or map found where not expected"),
])
def test_string_member(given, message):
    assert ser("GetItem", {"TableName": given, "Key": KEY}) == message
    assert ser("Query", {"TableName": "abc", "KeyConditionExpression": given}) == message


@pytest.mark.parametrize("given,message", [
    (23, "NUMBER_VALUE cannot be converted to Boolean"),
    (1.5, "NUMBER_VALUE cannot be converted to Boolean"),
    ("maybe", "Unexpected token received from parser"),
    ("", "Unexpected token received from parser"),
    ([], "Unrecognized collection type class java.lang.Boolean"),
    ({}, "Start of structure or map found where not expected"),
])
def test_boolean_member(given, message):
    assert ser("GetItem", {"TableName": "abc", "Key": KEY, "ConsistentRead": given}) == message


@pytest.mark.parametrize("given,coerced", [
    ("true", True), ("TRUE", True), ("yes", True), ("Yes", True), ("1", True),
    ("false", False), ("False", False), ("no", False), ("NO", False), ("0", False),
])
def test_boolean_strings_are_coerced_in_place(given, coerced):
    body = ok("Query", {"TableName": "abc", "ScanIndexForward": given, "ConsistentRead": given})
    assert body["ScanIndexForward"] is coerced and body["ConsistentRead"] is coerced


def test_nested_boolean_coercion():
    body = ok("UpdateTable", {"TableName": "abc", "StreamSpecification": {"StreamEnabled": "yes"}})
    assert body["StreamSpecification"]["StreamEnabled"] is True


@pytest.mark.parametrize("given,message", [
    ("23", "STRING_VALUE cannot be converted to Integer"),
    (True, "TRUE_VALUE cannot be converted to Integer"),
    (False, "FALSE_VALUE cannot be converted to Integer"),
    ([], "Unrecognized collection type class java.lang.Integer"),
    ({}, "Start of structure or map found where not expected"),
])
def test_integer_member(given, message):
    assert ser("Scan", {"TableName": "abc", "Limit": given}) == message


@pytest.mark.parametrize("given,message", [
    ("23", "STRING_VALUE cannot be converted to Long"),
    (True, "TRUE_VALUE cannot be converted to Long"),
    ([], "Unrecognized collection type class java.lang.Long"),
    ({}, "Start of structure or map found where not expected"),
])
def test_long_member(given, message):
    body = {"TableName": "abc", "ProvisionedThroughput": {"ReadCapacityUnits": given, "WriteCapacityUnits": 1}}
    assert ser("UpdateTable", body) == message


def test_decimal_truncated_for_integer_and_long():
    body = ok("Scan", {"TableName": "abc", "Limit": 5.9, "Segment": 1.2, "TotalSegments": 3.99})
    assert (body["Limit"], body["Segment"], body["TotalSegments"]) == (5, 1, 3)
    assert type(body["Limit"]) is int
    assert val("Query", {"TableName": "abc", "Limit": 0.5}) == one(
        "limit", "'0'", "Member must have value greater than or equal to 1")
    body = ok("UpdateTable", {"TableName": "abc",
                              "ProvisionedThroughput": {"ReadCapacityUnits": 2.5, "WriteCapacityUnits": 1e3}})
    assert body["ProvisionedThroughput"] == {"ReadCapacityUnits": 2, "WriteCapacityUnits": 1000}


@pytest.mark.parametrize("given,message", [
    ("23", "Unexpected field type"),
    (5, "Unexpected field type"),
    (True, "Unexpected field type"),
    ({}, "Start of structure or map found where not expected"),
])
def test_list_member(given, message):
    assert ser("GetItem", {"TableName": "abc", "Key": KEY, "AttributesToGet": given}) == message
    assert ser("CreateTable", {"TableName": "abc", "KeySchema": given}) == message


def test_list_element_types():
    assert ser("GetItem", {"TableName": "abc", "Key": KEY, "AttributesToGet": ["a", 5]}) == \
        "NUMBER_VALUE cannot be converted to String"
    assert ser("CreateTable", {"TableName": "abc", "KeySchema": ["x"]}) == "Unexpected field type"
    assert ser("CreateTable", {"TableName": "abc", "KeySchema": [[]]}) == \
        "Unrecognized collection type class com.amazonaws.dynamodb.v20120810.KeySchemaElement"


@pytest.mark.parametrize("given,message", [
    ("23", "Unexpected field type"),
    (5, "Unexpected field type"),
    ([], "Unrecognized collection type java.util.Map<java.lang.String, "
         "com.amazonaws.dynamodb.v20120810.AttributeValue>"),
])
def test_attribute_value_map_member(given, message):
    assert ser("GetItem", {"TableName": "abc", "Key": given}) == message
    assert ser("PutItem", {"TableName": "abc", "Item": given}) == message
    assert ser("Scan", {"TableName": "abc", "ExclusiveStartKey": given}) == message
    assert ser("PutItem", {"TableName": "abc", "Item": {}, "ExpressionAttributeValues": given}) == message


def test_map_of_strings_and_structures():
    assert ser("GetItem", {"TableName": "abc", "Key": KEY, "ExpressionAttributeNames": []}) == \
        "Unrecognized collection type java.util.Map<java.lang.String, java.lang.String>"
    assert ser("GetItem", {"TableName": "abc", "Key": KEY, "ExpressionAttributeNames": {"#a": 1}}) == \
        "NUMBER_VALUE cannot be converted to String"
    assert ser("Query", {"TableName": "abc", "KeyConditions": []}) == \
        "Unrecognized collection type java.util.Map<java.lang.String, com.amazonaws.dynamodb.v20120810.Condition>"
    assert ser("BatchWriteItem", {"RequestItems": []}) == (
        "Unrecognized collection type java.util.Map<java.lang.String, "
        "java.util.List<com.amazonaws.dynamodb.v20120810.WriteRequest>>")
    assert ser("Query", {"TableName": "abc", "KeyConditions": {"a": "x"}}) == "Unexpected field type"


@pytest.mark.parametrize("given,message", [
    (5, "Unexpected field type"),
    ("x", "Unexpected field type"),
    (True, "Unexpected field type"),
    ([], "Unrecognized collection type class com.amazonaws.dynamodb.v20120810.ProvisionedThroughput"),
])
def test_structure_member(given, message):
    assert ser("CreateTable", {"TableName": "abc", "ProvisionedThroughput": given}) == message


def test_parameterized_collections():
    # a list that is a map value / a map that is a list element, given a scalar
    assert ser("BatchWriteItem", {"RequestItems": {"abc": "x"}}) == CAST
    assert ser("BatchWriteItem", {"RequestItems": {"abc": {}}}) == "Start of structure or map found where not expected"
    assert ser("BatchGetItem", {"RequestItems": {"abc": {"Keys": ["x"]}}}) == CAST
    assert ser("BatchGetItem", {"RequestItems": {"abc": {"Keys": [[]]}}}) == (
        "Unrecognized collection type java.util.Map<java.lang.String, "
        "com.amazonaws.dynamodb.v20120810.AttributeValue>")


def test_blob_messages():
    node = shapes.Node("blob", "Blob")
    node.java = "class java.nio.ByteBuffer"
    cases = [
        (True, "only base-64-encoded strings are convertible to bytes"),
        (23, "only base-64-encoded strings are convertible to bytes"),
        (34.56, "only base-64-encoded strings are convertible to bytes"),
        ([], "Unrecognized collection type class java.nio.ByteBuffer"),
        ({}, "Start of structure or map found where not expected"),
        ("23456", "Base64 encoded length is expected a multiple of 4 bytes but found: 5"),
        ("=+/=", "Invalid last non-pad Base64 character dectected"),
        ("+/+=", "Invalid last non-pad Base64 character dectected"),
    ]
    for value, message in cases:
        with pytest.raises(SerializationException) as info:
            shapes.type_walk(value, node)
        assert info.value.message == message, value
    assert shapes.type_walk("AQ==", node) == "AQ=="
    assert validation._b64ok("dGhpcw==") and not validation._b64ok("dGhpcw=")


def test_type_errors_reported_in_document_order():
    assert ser("Query", {"Limit": "x", "TableName": 5}) == "STRING_VALUE cannot be converted to Integer"
    assert ser("Query", {"TableName": 5, "Limit": "x"}) == "NUMBER_VALUE cannot be converted to String"
    assert ser("CreateTable", {"ProvisionedThroughput": {"WriteCapacityUnits": "1", "ReadCapacityUnits": True},
                               "TableName": []}) == "STRING_VALUE cannot be converted to Long"


def test_serialization_wins_over_validation():
    assert ser("Query", {"TableName": "x", "Select": "nope", "Limit": "5"}) == \
        "STRING_VALUE cannot be converted to Integer"
    # a coercion elsewhere does not hide the type error
    assert ser("Query", {"ConsistentRead": "yes", "TableName": "abc", "Limit": []}) == \
        "Unrecognized collection type class java.lang.Integer"


def test_nulls_are_absent():
    ok("GetItem", {"TableName": "abc", "Key": KEY, "ConsistentRead": None, "AttributesToGet": None})
    assert val("GetItem", {"TableName": None, "Key": KEY}) == one("tableName", "null", PT)


@pytest.mark.parametrize("body,message", [
    (None, None),
    ([], "Start of list found where not expected"),
    ([{"TableName": "abc"}], "Start of list found where not expected"),
    (5, "Unexpected value type in payload"),
    ("x", "Unexpected value type in payload"),
    (True, "Unexpected value type in payload"),
])
def test_body_not_an_object(body, message):
    assert ser("GetItem", body) == message
    assert SerializationException(message).body()["__type"] == "com.amazon.coral.service#SerializationException"


# --- ValidationException: model constraints ---------------------------------------------------------

def test_enum_spec_example():
    assert val("GetItem", {"TableName": "abc", "Key": KEY, "ReturnConsumedCapacity": "hi"}) == one(
        "returnConsumedCapacity", "'hi'", "Member must satisfy enum value set: [INDEXES, TOTAL, NONE]")


@pytest.mark.parametrize("op,member,path,listing", [
    ("PutItem", "ReturnValues", "returnValues", "[ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]"),
    ("Query", "Select", "select", "[SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"),
    ("Scan", "ConditionalOperator", "conditionalOperator", "[OR, AND]"),
    ("DeleteItem", "ReturnItemCollectionMetrics", "returnItemCollectionMetrics", "[SIZE, NONE]"),
    ("CreateTable", "BillingMode", "billingMode", "[PROVISIONED, PAY_PER_REQUEST]"),
    ("CreateTable", "TableClass", "tableClass", "[STANDARD, STANDARD_INFREQUENT_ACCESS]"),  # model order
])
def test_enum_listing_order(op, member, path, listing):
    body = {"TableName": "abc", "Key": KEY, "Item": KEY, member: "count"}
    assert val(op, body) == one(path, "'count'", "Member must satisfy enum value set: " + listing)


def test_enum_is_case_sensitive():
    ok("Query", {"TableName": "abc", "Select": "COUNT"})
    assert "enum value set" in val("Query", {"TableName": "abc", "Select": "count"})


def test_comparison_operator_in_map_path():
    body = {"TableName": "abc", "QueryFilter": {"a": {"ComparisonOperator": "XX"}}}
    assert val("Query", body) == one(
        "queryFilter.a.member.comparisonOperator", "'XX'",
        "Member must satisfy enum value set: [IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, "
        "BEGINS_WITH, GE, CONTAINS]")
    assert val("Query", {"TableName": "abc", "KeyConditions": {"pk": {}}}) == one(
        "keyConditions.pk.member.comparisonOperator", "null", PT)


def test_required_members():
    # a missing table name is reported alone (docs/behaviour/validation.md §1: only the tableName constraint)
    assert val("PutItem", {}) == one("tableName", "null", PT)
    assert val("PutItem", {"TableName": "abc"}) == one("item", "null", PT)
    # CreateTable words it as DynamoDB does
    assert val("CreateTable", {"KeySchema": []}) == \
        "The parameter 'TableName' is required but was not present in the request"
    assert val("GetItem", {"TableName": "abc"}) == one("key", "null", PT)
    assert val("DescribeTable", {}) == one("tableName", "null", PT)


def test_provisioned_throughput_spec_example():
    assert val("CreateTable", {"TableName": "abc", "ProvisionedThroughput": {}}) == (
        "2 validation errors detected: Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy "
        "constraint: Member must not be null; Value null at 'provisionedThroughput.readCapacityUnits' failed to "
        "satisfy constraint: Member must not be null")


def test_range():
    assert val("Query", {"TableName": "abc", "Limit": 0}) == one(
        "limit", "'0'", "Member must have value greater than or equal to 1")
    # several failures are listed in model member order (ScanInput: TotalSegments before Segment)
    assert val("Scan", {"TableName": "abc", "Segment": 1000000, "TotalSegments": 1000001}) == (
        "2 validation errors detected: "
        "Value '1000001' at 'totalSegments' failed to satisfy constraint: Member must have value less than "
        "or equal to 1000000; "
        "Value '1000000' at 'segment' failed to satisfy constraint: Member must have value less than or equal to "
        "999999")
    assert val("ListTables", {"Limit": 101}) == one("limit", "'101'", "Member must have value less than or equal to 100")
    assert val("UpdateTable", {"TableName": "abc",
                               "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 1}}) == one(
        "provisionedThroughput.readCapacityUnits", "'0'", "Member must have value greater than or equal to 1")


def test_length_and_pattern():
    assert val("ListTables", {"ExclusiveStartTableName": ""}) == (
        "2 validation errors detected: Value '' at 'exclusiveStartTableName' failed to satisfy constraint: Member "
        "must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; Value '' at 'exclusiveStartTableName' failed to "
        "satisfy constraint: Member must have length greater than or equal to 3")
    assert val("ListTables", {"ExclusiveStartTableName": "a" * 256}) == one(
        "exclusiveStartTableName", "'" + "a" * 256 + "'", "Member must have length less than or equal to 255")
    assert val("Query", {"TableName": "abc", "IndexName": "a!b"}) == one(
        "indexName", "'a!b'", "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+")
    assert val("GetItem", {"TableName": "abc", "Key": KEY, "AttributesToGet": []}) == one(
        "attributesToGet", "'[]'", "Member must have length greater than or equal to 1")
    assert val("TransactWriteItems", {"TransactItems": [{"ConditionCheck": {
        "TableName": "abc", "Key": KEY, "ConditionExpression": "x"}}], "ClientRequestToken": "x" * 37}) == one(
        "clientRequestToken", "'" + "x" * 37 + "'", "Member must have length less than or equal to 36")
    assert "length greater than or equal to 1" in val("ExecuteStatement", {"Statement": ""})


def test_lengths_count_utf16_units():
    tags = lambda key: {"ResourceArn": "arn:x", "Tags": [{"Key": key, "Value": "v"}]}  # noqa: E731
    ok("TagResource", tags("\U0001F600" * 64))  # 128 UTF-16 code units
    ok("TagResource", tags("é" * 128))
    assert val("TagResource", tags("\U0001F600" * 65)) == one(
        "tags.1.member.key", "'" + "\U0001F600" * 65 + "'", "Member must have length less than or equal to 128")
    assert "less than or equal to 128" in val("TagResource", tags("x" * 129))


def test_list_value_rendering():
    msg = val("CreateTable", {"TableName": "abc", "LocalSecondaryIndexes": [{
        "IndexName": "idx", "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": [f"a{i}" for i in range(21)]}}]})
    assert msg == one("localSecondaryIndexes.1.member.projection.nonKeyAttributes",
                      "'[" + ", ".join(f"a{i}" for i in range(21)) + "]'",
                      "Member must have length less than or equal to 20")


def test_nested_list_paths_create_table():
    body = {"TableName": "abc",
            "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "S"},
                                     {"AttributeName": "b", "AttributeType": "Q"}],
            "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}, {"AttributeName": "b", "KeyType": "SORT"}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "ok1", "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}],
                 "Projection": {"ProjectionType": "ALL"}},
                {"IndexName": "g2", "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"},
                                                  {"AttributeName": "b", "KeyType": "range"}],
                 "Projection": {"ProjectionType": "ALL"}}]}
    assert val("CreateTable", body) == (
        "4 validation errors detected: "
        "Value 'Q' at 'attributeDefinitions.2.member.attributeType' failed to satisfy constraint: "
        "Member must satisfy enum value set: [B, N, S]; "
        "Value 'SORT' at 'keySchema.2.member.keyType' failed to satisfy constraint: "
        "Member must satisfy enum value set: [HASH, RANGE]; "
        "Value 'g2' at 'globalSecondaryIndexes.2.member.indexName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3; "
        "Value 'range' at 'globalSecondaryIndexes.2.member.keySchema.2.member.keyType' failed to satisfy constraint: "
        "Member must satisfy enum value set: [HASH, RANGE]")


def test_nested_required_and_null_elements():
    assert val("CreateTable", {"TableName": "abc", "KeySchema": [{"KeyType": "HASH"}, None]}) == (
        "2 validation errors detected: "
        "Value null at 'keySchema.1.member.attributeName' failed to satisfy constraint: Member must not be null; "
        "Value null at 'keySchema.2.member' failed to satisfy constraint: Member must not be null")


def test_update_table_gsi_updates():
    body = {"TableName": "abc", "GlobalSecondaryIndexUpdates": [
        {"Delete": {"IndexName": "idx"}},
        {"Create": {"IndexName": "new", "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "NONE"},
                    "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 5}}},
        {"Update": {"IndexName": "i"}}]}
    assert val("UpdateTable", body) == (
        "3 validation errors detected: "
        "Value 'NONE' at 'globalSecondaryIndexUpdates.2.member.create.projection.projectionType' failed to satisfy "
        "constraint: Member must satisfy enum value set: [ALL, KEYS_ONLY, INCLUDE]; "
        "Value '0' at 'globalSecondaryIndexUpdates.2.member.create.provisionedThroughput.readCapacityUnits' failed to "
        "satisfy constraint: Member must have value greater than or equal to 1; "
        "Value 'i' at 'globalSecondaryIndexUpdates.3.member.update.indexName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3")
    assert val("UpdateTable", {"TableName": "abc", "GlobalSecondaryIndexUpdates": [{"Delete": {}}]}) == one(
        "globalSecondaryIndexUpdates.1.member.delete.indexName", "null", PT)


def test_batch_get_map_paths():
    assert val("BatchGetItem", {"RequestItems": {"abc": {}}}) == one("requestItems.abc.member.keys", "null", PT)
    # DynamoDB's own form for too many keys: no value, capitalized path (docs/behaviour/validation.md §2)
    assert val("BatchGetItem", {"RequestItems": {"abc": {"Keys": [KEY] * 101}}}) == (
        "1 validation error detected: Value at 'RequestItems.abc.member.Keys' failed to satisfy constraint: "
        "Member must have length less than or equal to 100")
    assert val("BatchGetItem", {"RequestItems": {}}) == "The requestItems parameter is required for BatchGetItem"
    assert val("BatchWriteItem", {"RequestItems": {}}) == "The requestItems parameter is required for BatchWriteItem"


def test_batch_write_map_value_form():
    items = [{"PutRequest": {"Item": {"pk": {"S": str(i)}}}} for i in range(26)]
    msg = val("BatchWriteItem", {"RequestItems": {"abc": items}})
    assert re.fullmatch(
        r"1 validation error detected: Value '\{.+\}' at 'requestItems' failed to satisfy constraint: "
        r"Map value must satisfy constraint: \[Member must have length less than or equal to 25, "
        r"Member must have length greater than or equal to 1\]", msg)
    assert msg.startswith("1 validation error detected: Value '{abc=[{PutRequest={Item={pk=AttributeValue: {S:0}}}}, ")
    assert "Map value must satisfy constraint" in val("BatchWriteItem", {"RequestItems": {"abc": []}})
    assert val("BatchWriteItem", {"RequestItems": {"abc": [{"PutRequest": {}}, {"DeleteRequest": {"Key": KEY}}]}}) \
        == one("requestItems.abc.member.1.member.putRequest.item", "null", PT)


def test_map_keys_form():
    assert val("BatchWriteItem", {"RequestItems": {"ab": [{"DeleteRequest": {"Key": KEY}}]}}) == one(
        "requestItems", "'{ab=[{DeleteRequest={Key={pk=AttributeValue: {S:a}}}}]}'",
        "Map keys must satisfy constraint: [Member must have length less than or equal to 255, "
        "Member must have length greater than or equal to 3, "
        "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+]")
    assert "Map keys must satisfy constraint" in val("BatchGetItem", {"RequestItems": {"a!b": {"Keys": [KEY]}}})
    ok("BatchGetItem", {"RequestItems": {"arn:aws:dynamodb:us-east-1:123456789012:table/abc": {"Keys": [KEY]}}})


def test_multiple_errors_capped_at_ten():
    body = {"TableName": "abc", "KeySchema": [{"KeyType": "X"}] * 8}
    msg = val("CreateTable", body)
    assert msg.startswith("10 validation errors detected: ")
    assert msg.count("failed to satisfy constraint") == 10
    assert msg.count("; ") == 9


# --- TableName --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, constraint", [
    ("", "Member must have length greater than or equal to 1"),  # the TableArn shape's minimum
    ("a", "Member must have length greater than or equal to 3"),
    ("ab", "Member must have length greater than or equal to 3"),
    ("a" * 256, "Member must have length less than or equal to 255"),
])
def test_table_name_length(name, constraint):
    expected = one("tableName", f"'{name}'", constraint)
    assert val("DescribeTable", {"TableName": name}) == expected
    assert val("CreateTable", {"TableName": name}) == expected
    # only the tableName constraint is reported, even when other members are invalid too
    assert val("Query", {"TableName": name, "Select": "x", "Limit": 0}) == expected


def test_invalid_table_name_hides_other_errors():
    assert val("GetItem", {"TableName": "bad table!@#", "ReturnConsumedCapacity": "BAD"}) == one(
        "tableName", "'bad table!@#'", "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+")
    assert val("GetItem", {"TableName": "a!", "Key": None}) == (
        "2 validation errors detected: "
        "Value 'a!' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: "
        "[a-zA-Z0-9_.-]+; Value 'a!' at 'tableName' failed to satisfy constraint: Member must have length greater "
        "than or equal to 3")


def test_table_name_pattern_and_valid_forms():
    assert val("DescribeTable", {"TableName": "non!existent!table"}) == one(
        "tableName", "'non!existent!table'", "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+")
    for name in ("abc", "a" * 255, "A-b_c.9", "arn:aws:dynamodb:us-east-1:123456789012:table/abc"):
        ok("DescribeTable", {"TableName": name})
        ok("DescribeTable", {"TableName": name})  # second time through the valid-name cache
    assert val("DescribeTable", {"TableName": "arn:" + "x" * 1021}) == one(
        "tableName", "'arn:" + "x" * 1021 + "'", "Member must have length less than or equal to 1024")


def test_nested_table_name_uses_constraint_form():
    body = {"TransactItems": [{"Get": {"TableName": "ab", "Key": KEY}}]}
    assert val("TransactGetItems", body) == one(
        "transactItems.1.member.get.tableName", "'ab'", "Member must have length greater than or equal to 3")
    body = {"TransactItems": [{"Put": {"TableName": "a!", "Item": KEY}}]}
    assert val("TransactWriteItems", body) == (
        "2 validation errors detected: Value 'a!' at 'transactItems.1.member.put.tableName' failed to satisfy "
        "constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; Value 'a!' at "
        "'transactItems.1.member.put.tableName' failed to satisfy constraint: Member must have length greater than "
        "or equal to 3")


# --- opacity of AttributeValues, unknown members ---------------------------------------------------

@pytest.mark.parametrize("av", [5, "x", [], {}, {"N": 5}, {"S": "a", "N": "1"}, {"dog": "cat"}, None, {"L": "x"}])
def test_attribute_values_are_not_descended(av):
    ok("PutItem", {"TableName": "abc", "Item": {"pk": av}, "ExpressionAttributeValues": {":v": av}})
    ok("GetItem", {"TableName": "abc", "Key": {"pk": av}})
    ok("Query", {"TableName": "abc", "ExclusiveStartKey": {"pk": av},
                 "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [av]}}})
    ok("UpdateItem", {"TableName": "abc", "Key": KEY, "AttributeUpdates": {"a": {"Value": av, "Action": "PUT"}},
                      "Expected": {"a": {"Value": av}}})
    ok("ExecuteStatement", {"Statement": "SELECT * FROM abc", "Parameters": [av]})
    ok("BatchGetItem", {"RequestItems": {"abc": {"Keys": [{"pk": av}]}}})
    ok("BatchWriteItem", {"RequestItems": {"abc": [{"PutRequest": {"Item": {"pk": av}}}]}})


def test_attribute_value_containers_are_checked():
    assert ser("Query", {"TableName": "abc", "KeyConditions": {"pk": {"ComparisonOperator": "EQ",
                                                                      "AttributeValueList": {}}}}) == \
        "Start of structure or map found where not expected"
    assert ser("ExecuteStatement", {"Statement": "x", "Parameters": "x"}) == "Unexpected field type"
    assert val("ExecuteStatement", {"Statement": "x", "Parameters": []}) == one(
        "parameters", "'[]'", "Member must have length greater than or equal to 1")


def test_unknown_members_ignored():
    body = {"TableName": "abc", "Key": KEY, "Foo": [1, {"x": 2}], "tablename": 5, "consistentRead": "junk"}
    assert ok("GetItem", body)["Foo"] == [1, {"x": 2}]
    ok("CreateTable", {"TableName": "abc", "KeySchema": [{"AttributeName": "a", "KeyType": "HASH", "Extra": []}]})


def test_valid_requests_pass():
    ok("GetItem", {"TableName": "abc", "Key": KEY, "ProjectionExpression": "a, #b",
                   "ExpressionAttributeNames": {"#b": "b"}, "ConsistentRead": True,
                   "ReturnConsumedCapacity": "TOTAL"})
    ok("PutItem", {"TableName": "abc", "Item": KEY, "ConditionExpression": "attribute_not_exists(pk)",
                   "ExpressionAttributeValues": {":v": {"N": "1"}}, "ReturnValues": "ALL_OLD",
                   "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})
    ok("CreateTable", {"TableName": "abc", "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                       "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",
                       "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
                       "Tags": [{"Key": "k", "Value": ""}]})
    ok("DescribeLimits", {})
    ok("ListTables", {})
    ok("UnknownOperation", {"anything": 1})


def test_streams_operations():
    assert val("GetShardIterator", {"StreamArn": "arn:" + "x" * 40, "ShardId": "shardId-" + "0" * 20,
                                    "ShardIteratorType": "OLDEST"}).endswith(
        "Member must satisfy enum value set: [TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER, "
        "AT_TIMESTAMP]")
    assert val("ListStreams", {"TableName": "ab"}) == one(
        "tableName", "'ab'", "Member must have length greater than or equal to 3")
    assert val("GetRecords", {"ShardIterator": "it", "Limit": 0}) == one(
        "limit", "'0'", "Member must have value greater than or equal to 1")


# --- robustness -------------------------------------------------------------------------------------

def _all_operations() -> list[str]:
    ops = []
    for service in ("dynamodb", "dynamodbstreams"):
        ops += list(validation._compiler(service).operations)
    return ops


def test_every_operation_compiles_and_handles_empty_body():
    for op in _all_operations():
        validation.compile_operation(op)
        try:
            validate(op, {})
        except ValidationException as e:
            assert "Member must not be null" in e.message or e.message == validation.CREATE_TABLE_NAME_MISSING


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5) | st.sampled_from(["abc", "HASH", "yes", "0", "AQ==", "ALL_OLD"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["TableName", "Key", "Item", "KeySchema", "AttributeName", "KeyType", "Limit", "Keys",
                         "RequestItems", "PutRequest", "ProvisionedThroughput", "ReadCapacityUnits",
                         "ConsistentRead", "Select", "abc", "x"]), children, max_size=4),
    max_leaves=12)
bodies = st.dictionaries(st.sampled_from(
    ["TableName", "Key", "Item", "KeySchema", "AttributeDefinitions", "Limit", "RequestItems", "Select",
     "ConsistentRead", "ProvisionedThroughput", "GlobalSecondaryIndexes", "TransactItems", "QueryFilter",
     "ExpressionAttributeNames", "ReturnValues", "Segment"]), json_values, max_size=6)


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(["GetItem", "PutItem", "Query", "Scan", "CreateTable", "UpdateTable", "BatchGetItem",
                           "BatchWriteItem", "TransactWriteItems", "TransactGetItems"]), body=bodies)
def test_fuzz_only_dynamo_errors_and_stable(op, body):
    try:
        validate(op, body)
        first = None
    except DynamoError as e:
        assert type(e) in (SerializationException, ValidationException)
        first = (type(e), e.message)
    try:  # coercions are idempotent: a second run gives the same answer
        validate(op, body)
        second = None
    except DynamoError as e:
        second = (type(e), e.message)
    assert first == second
