"""The exact messages and shapes of docs/behaviour/validation.md and operations.md §2, end to end through boto3."""
from __future__ import annotations

import json
import urllib.request

import pytest
from botocore.exceptions import ClientError

VE = "ValidationException"


@pytest.fixture(scope="module")
def loose(server):
    """A client that sends what it is given (botocore's own checks would refuse these requests)."""
    return server.client(parameter_validation=False, retries={"max_attempts": 0})


def _error(call, **kwargs) -> tuple[str, str]:
    with pytest.raises(ClientError) as info:
        call(**kwargs)
    return info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]


def _raw_error(server, operation: str, body: dict) -> tuple[int, dict]:
    status, _, payload = server.raw(f"DynamoDB_20120810.{operation}", body)
    return status, json.loads(payload)


def _one(path: str, value: str, constraint: str) -> str:
    return f"1 validation error detected: Value {value} at '{path}' failed to satisfy constraint: {constraint}"


KEYS = [{"AttributeName": "pk", "KeyType": "HASH"}]
DEFS = [{"AttributeName": "pk", "AttributeType": "S"}]


# --- §1 table names --------------------------------------------------------------------------------

def test_missing_table_name(server):
    status, body = _raw_error(server, "GetItem", {"Key": {"pk": {"S": "a"}}})
    assert status == 400 and body["message"] == _one("tableName", "null", "Member must not be null")
    status, body = _raw_error(server, "CreateTable", {"KeySchema": KEYS, "AttributeDefinitions": DEFS,
                                                      "BillingMode": "PAY_PER_REQUEST"})
    assert body["message"] == "The parameter 'TableName' is required but was not present in the request"
    assert body["__type"] == "com.amazon.coral.validate#ValidationException"


@pytest.mark.parametrize("operation, name, constraint", [
    ("GetItem", "", "Member must have length greater than or equal to 1"),
    ("CreateTable", "ab", "Member must have length greater than or equal to 3"),
    ("DescribeTable", "x" * 256, "Member must have length less than or equal to 255"),
    ("PutItem", "bad table!@#", "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"),
])
def test_invalid_table_names(loose, operation, name, constraint):
    kwargs = {"TableName": name}
    if operation == "GetItem":
        kwargs["Key"] = {"pk": {"S": "a"}}
    elif operation == "PutItem":
        kwargs["Item"] = {"pk": {"S": "a"}}
    elif operation == "CreateTable":
        kwargs.update(KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    call = getattr(loose, {"GetItem": "get_item", "CreateTable": "create_table", "DescribeTable": "describe_table",
                           "PutItem": "put_item"}[operation])
    assert _error(call, **kwargs) == (VE, _one("tableName", f"'{name}'", constraint))


def test_only_the_table_name_is_reported(loose):
    # ReturnConsumedCapacity and Select are invalid too, but only tableName is reported
    assert _error(loose.query, TableName="bad table!@#", KeyConditionExpression="pk = :p", Limit=0,
                  ExpressionAttributeValues={":p": {"S": "a"}}, Select="NOPE", ReturnConsumedCapacity="BAD") == (
        VE, _one("tableName", "'bad table!@#'", "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"))


# --- §1 other exact texts --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def table(server, loose):
    name = "corrections-items"
    loose.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                       KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                       AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                             {"AttributeName": "sk", "AttributeType": "S"}])
    yield name
    loose.delete_table(TableName=name)


ITEM = {"pk": {"S": "a"}, "sk": {"S": "b"}}


def test_limit_zero(loose, table):
    expected = (VE, _one("limit", "'0'", "Member must have value greater than or equal to 1"))
    assert _error(loose.query, TableName=table, KeyConditionExpression="pk = :p",
                  ExpressionAttributeValues={":p": {"S": "a"}}, Limit=0) == expected
    assert _error(loose.scan, TableName=table, Limit=0) == expected


def test_batch_requests(loose, table):
    assert _error(loose.batch_get_item, RequestItems={}) == (VE, "The requestItems parameter is required for BatchGetItem")
    assert _error(loose.batch_write_item, RequestItems={}) == (
        VE, "The requestItems parameter is required for BatchWriteItem")
    keys = [{"pk": {"S": str(i)}, "sk": {"S": "x"}} for i in range(101)]
    assert _error(loose.batch_get_item, RequestItems={table: {"Keys": keys}}) == (
        VE, f"1 validation error detected: Value at 'RequestItems.{table}.member.Keys' failed to satisfy constraint: "
            "Member must have length less than or equal to 100")


def test_unused_names_and_values_and_empty_update_expression(loose, table):
    assert _error(loose.put_item, TableName=table, Item=ITEM, ConditionExpression="attribute_not_exists(pk)",
                  ExpressionAttributeNames={"#unused": "x"}) == (
        VE, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#unused}")
    assert _error(loose.delete_item, TableName=table, Key=ITEM, ConditionExpression="attribute_exists(pk)",
                  ExpressionAttributeValues={":unused": {"S": "x"}}) == (
        VE, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}")
    assert _error(loose.update_item, TableName=table, Key=ITEM, UpdateExpression="") == (
        VE, "Invalid UpdateExpression: The expression can not be empty;")


def test_enum_errors_list_the_values(loose, table):
    assert _error(loose.create_table, TableName="enum-table", BillingMode="PAY_PER_REQUEST",
                  KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                  AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "X"}]) == (
        VE, _one("attributeDefinitions.1.member.attributeType", "'X'", "Member must satisfy enum value set: [B, N, S]"))
    assert _error(loose.create_table, TableName="enum-table", BillingMode="PAY_PER_REQUEST",
                  KeySchema=[{"AttributeName": "pk", "KeyType": "PRIMARY"}], AttributeDefinitions=DEFS) == (
        VE, _one("keySchema.1.member.keyType", "'PRIMARY'", "Member must satisfy enum value set: [HASH, RANGE]"))
    assert _error(loose.scan, TableName=table, Select="EVERYTHING") == (
        VE, _one("select", "'EVERYTHING'", "Member must satisfy enum value set: "
                 "[SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"))


def test_transactions(loose, table):
    assert _error(loose.transact_write_items, TransactItems=[]) == (
        VE, _one("transactItems", "'[]'", "Member must have length greater than or equal to 1"))
    get = {"Get": {"TableName": table, "Key": ITEM}}
    assert _error(loose.transact_get_items, TransactItems=[get, get]) == (
        VE, "Transaction request cannot include multiple operations on one item")


def test_update_table_refusals(loose):
    name = "corrections-provisioned"
    loose.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=DEFS,
                       ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
                       GlobalSecondaryIndexes=[{"IndexName": "gsi1", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                                                "Projection": {"ProjectionType": "ALL"},
                                                "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}])
    try:
        code, message = _error(loose.update_table, TableName=name,
                               ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
        assert code == VE and message.startswith("The provisioned throughput for the table will not change.")
        assert _error(loose.update_table, TableName=name)[0] == VE
        create = {"Create": {"IndexName": "gsi1", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                             "Projection": {"ProjectionType": "ALL"},
                             "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}}
        code, message = _error(loose.update_table, TableName=name, AttributeDefinitions=DEFS,
                               GlobalSecondaryIndexUpdates=[create])
        assert code == VE and "already exists" in message
        other = {"Create": dict(create["Create"], IndexName="gsi2")}
        code, message = _error(loose.update_table, TableName=name, AttributeDefinitions=DEFS,
                               GlobalSecondaryIndexUpdates=[other, {"Delete": {"IndexName": "gsi1"}}])
        assert code == VE and "one" in message.split()
        indexes = loose.describe_table(TableName=name)["Table"]["GlobalSecondaryIndexes"]
        assert [i["IndexName"] for i in indexes] == ["gsi1"]  # nothing changed
    finally:
        loose.delete_table(TableName=name)


def test_tags(loose):
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/never-created"
    code, message = _error(loose.list_tags_of_resource, ResourceArn=arn)
    assert code == "AccessDeniedException" and message.endswith(
        f"is not authorized to perform: dynamodb:ListTagsOfResource on resource: {arn}")
    code, message = _error(loose.create_table, TableName="tagged-table", KeySchema=KEYS, AttributeDefinitions=DEFS,
                           BillingMode="PAY_PER_REQUEST", Tags=[{"Key": "k" * 129, "Value": "v"}])
    assert code == VE and "tags.1.member.key" in message
    assert "tagged-table" not in loose.list_tables()["TableNames"]


@pytest.mark.parametrize("kwargs", [
    {"op": "put_item", "Item": {**ITEM, "": {"S": "x"}}},
    {"op": "get_item", "Key": ITEM, "ProjectionExpression": "#e", "ExpressionAttributeNames": {"#e": ""}},
    {"op": "get_item", "Key": ITEM, "AttributesToGet": [""]},
    {"op": "update_item", "Key": ITEM, "AttributeUpdates": {"": {"Value": {"S": "x"}}}},
    {"op": "update_item", "Key": ITEM, "UpdateExpression": "SET #e = :v", "ExpressionAttributeNames": {"#e": ""},
     "ExpressionAttributeValues": {":v": {"S": "x"}}},
    {"op": "delete_item", "Key": ITEM, "ConditionExpression": "attribute_exists(#e)",
     "ExpressionAttributeNames": {"#e": ""}},
])
def test_empty_attribute_names(loose, table, kwargs):
    kwargs = dict(kwargs)
    call = getattr(loose, kwargs.pop("op"))
    code, message = _error(call, TableName=table, **kwargs)
    assert code == VE and "Empty attribute name" in message
    assert "Item" not in loose.get_item(TableName=table, Key=ITEM)  # nothing was written


def test_nesting_beyond_32_levels(loose, table):
    value = {"S": "x"}
    for _ in range(33):
        value = {"M": {"a": value}}
    code, message = _error(loose.put_item, TableName=table, Item={**ITEM, "deep": value})
    assert code == VE and "nest" in message.lower()


def test_expected_and_conditional_operator(loose, table):
    loose.put_item(TableName=table, Item=ITEM, Expected={})  # an empty Expected is no condition
    for extra in ({}, {"Expected": {}}):
        code, message = _error(loose.put_item, TableName=table, Item=ITEM, ConditionalOperator="AND", **extra)
        assert code == VE and "ConditionalOperator" in message
    loose.delete_item(TableName=table, Key=ITEM)


def test_equality_of_every_type_in_legacy_filters(loose, table):
    values = [{"L": [{"S": "x"}]}, {"M": {"k": {"N": "1"}}}, {"BOOL": False}, {"NULL": True}]
    for i, value in enumerate(values):
        loose.put_item(TableName=table, Item={"pk": {"S": "eq"}, "sk": {"S": str(i)}, "v": value})
    for i, value in enumerate(values):
        eq = loose.query(TableName=table, KeyConditions={"pk": {"ComparisonOperator": "EQ",
                                                                 "AttributeValueList": [{"S": "eq"}]}},
                         QueryFilter={"v": {"ComparisonOperator": "EQ", "AttributeValueList": [value]}})
        assert [item["sk"]["S"] for item in eq["Items"]] == [str(i)]
        ne = loose.scan(TableName=table, ScanFilter={"v": {"ComparisonOperator": "NE", "AttributeValueList": [value]}})
        assert sorted(item["sk"]["S"] for item in ne["Items"]) == [str(j) for j in range(len(values)) if j != i]
    for i in range(len(values)):
        loose.delete_item(TableName=table, Key={"pk": {"S": "eq"}, "sk": {"S": str(i)}})


def test_not_contains_on_strings_sets_lists_and_binary(loose, table):
    values = {"s": {"S": "abc"}, "ss": {"SS": ["a", "b"]}, "l": {"L": [{"S": "b"}]}, "bin": {"B": b"\x01\x02"}}
    for sk, value in values.items():
        loose.put_item(TableName=table, Item={"pk": {"S": "nc"}, "sk": {"S": sk}, "v": value})
    out = loose.scan(TableName=table, ScanFilter={
        "pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "nc"}]},
        "v": {"ComparisonOperator": "NOT_CONTAINS", "AttributeValueList": [{"S": "b"}]}})
    assert sorted(item["sk"]["S"] for item in out["Items"]) == ["bin"]
    out = loose.scan(TableName=table, ScanFilter={
        "v": {"ComparisonOperator": "NOT_CONTAINS", "AttributeValueList": [{"B": b"\x02"}]}})
    assert "bin" not in {item["sk"]["S"] for item in out["Items"] if item["pk"]["S"] == "nc"}
    for sk in values:
        loose.delete_item(TableName=table, Key={"pk": {"S": "nc"}, "sk": {"S": sk}})


def test_condition_expression_rules(loose, table):
    loose.put_item(TableName=table, Item={**ITEM, "l": {"L": []}, "n": {"N": "5"}})
    for value in ({"L": []}, {"M": {}}, {"SS": ["x"]}, {"BOOL": True}, {"NULL": True}):
        code, message = _error(loose.put_item, TableName=table, Item=ITEM, ConditionExpression="n < :v",
                               ExpressionAttributeValues={":v": value})
        assert code == VE and "Incorrect operand type" in message
    # an unorderable value in the item only makes the comparison false
    code, _ = _error(loose.put_item, TableName=table, Item=ITEM, ConditionExpression="l < :v",
                     ExpressionAttributeValues={":v": {"N": "1"}})
    assert code == "ConditionalCheckFailedException"
    for type_name, attr in (("L", "l"), ("N", "n"), ("S", "pk")):
        loose.put_item(TableName=table, Item={**ITEM, "l": {"L": []}, "n": {"N": "5"}},
                       ConditionExpression=f"attribute_type({attr}, :t)", ExpressionAttributeValues={":t": {"S": type_name}})
    code, message = _error(loose.put_item, TableName=table, Item=ITEM, ConditionExpression="nope(n)")
    assert code == VE and "function" in message
    code, message = _error(loose.put_item, TableName=table, Item=ITEM, ConditionExpression="if_not_exists(n, :v) = :v",
                           ExpressionAttributeValues={":v": {"N": "1"}})
    assert code == VE and "not allowed" in message
    loose.delete_item(TableName=table, Key=ITEM)


def test_index_key_type_through_update_item(loose):
    name = "corrections-gsi"
    loose.create_table(TableName=name, KeySchema=KEYS, BillingMode="PAY_PER_REQUEST",
                       AttributeDefinitions=DEFS + [{"AttributeName": "g", "AttributeType": "S"}],
                       GlobalSecondaryIndexes=[{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                                "Projection": {"ProjectionType": "ALL"}}])
    try:
        code, message = _error(loose.update_item, TableName=name, Key={"pk": {"S": "a"}},
                               UpdateExpression="SET g = :v", ExpressionAttributeValues={":v": {"N": "1"}})
        assert code == VE and "mismatch" in message
        code, message = _error(loose.update_item, TableName=name, Key={"pk": {"S": "a"}},
                               UpdateExpression="SET g = :v", ExpressionAttributeValues={":v": {"NULL": True}})
        assert code == VE and "NULL" in message
        assert "Item" not in loose.get_item(TableName=name, Key={"pk": {"S": "a"}})
    finally:
        loose.delete_table(TableName=name)


def test_gsi_backfill_skips_items_with_an_oversized_index_key(loose):
    name = "corrections-backfill"
    loose.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    try:
        loose.put_item(TableName=name, Item={"pk": {"S": "big"}, "g": {"S": "x" * 3000}})
        loose.put_item(TableName=name, Item={"pk": {"S": "small"}, "g": {"S": "y"}})
        loose.update_table(TableName=name, AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
                           GlobalSecondaryIndexUpdates=[{"Create": {
                               "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                               "Projection": {"ProjectionType": "ALL"}}}])
        items = loose.scan(TableName=name, IndexName="byG")["Items"]
        assert [item["pk"]["S"] for item in items] == ["small"]
        assert loose.scan(TableName=name)["Count"] == 2  # the table keeps both
    finally:
        loose.delete_table(TableName=name)


# --- §2 shapes -------------------------------------------------------------------------------------

def test_delete_table_description_is_minimal(loose):
    for name, kwargs in (("corrections-del-od", {"BillingMode": "PAY_PER_REQUEST"}),
                         ("corrections-del-pv", {"ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4}})):
        loose.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=DEFS, **kwargs)
        loose.put_item(TableName=name, Item={"pk": {"S": "a"}})
        desc = loose.delete_table(TableName=name)["TableDescription"]
        assert set(desc) == {"TableName", "TableStatus", "TableId", "TableArn", "ItemCount", "TableSizeBytes",
                             "BillingModeSummary", "ProvisionedThroughput"}
        assert desc["TableStatus"] == "DELETING" and desc["ItemCount"] == 1
        on_demand = "BillingMode" in kwargs
        assert desc["BillingModeSummary"]["BillingMode"] == ("PAY_PER_REQUEST" if on_demand else "PROVISIONED")
        assert desc["ProvisionedThroughput"] == {"NumberOfDecreasesToday": 0, "ReadCapacityUnits": 0 if on_demand else 3,
                                                 "WriteCapacityUnits": 0 if on_demand else 4}


def test_describe_continuous_backups(loose, table):
    out = loose.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert out["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    assert _error(loose.describe_continuous_backups, TableName="never-created") == (
        "TableNotFoundException", "Table not found: never-created")


def test_item_collection_metrics_for_lsi_tables(loose, table):
    name = "corrections-lsi"
    loose.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                       KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                       AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                             {"AttributeName": "sk", "AttributeType": "S"},
                                             {"AttributeName": "l", "AttributeType": "S"}],
                       LocalSecondaryIndexes=[{"IndexName": "byL", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                               "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                                             {"AttributeName": "l", "KeyType": "RANGE"}]}])
    try:
        metrics = {"ItemCollectionKey": {"pk": {"S": "a"}}, "SizeEstimateRangeGB": [0.0, 1.0]}
        out = loose.put_item(TableName=name, Item={**ITEM, "l": {"S": "x"}}, ReturnItemCollectionMetrics="SIZE")
        assert out["ItemCollectionMetrics"] == metrics
        out = loose.update_item(TableName=name, Key=ITEM, UpdateExpression="SET l = :v",
                                ExpressionAttributeValues={":v": {"S": "y"}}, ReturnItemCollectionMetrics="SIZE")
        assert out["ItemCollectionMetrics"] == metrics
        out = loose.delete_item(TableName=name, Key=ITEM, ReturnItemCollectionMetrics="SIZE")
        assert out["ItemCollectionMetrics"] == metrics
        # tables without an LSI return none
        out = loose.put_item(TableName=table, Item=ITEM, ReturnItemCollectionMetrics="SIZE")
        assert "ItemCollectionMetrics" not in out
        loose.delete_item(TableName=table, Key=ITEM)
    finally:
        loose.delete_table(TableName=name)


def test_billing_mode_summary_after_switching_to_provisioned(loose):
    name = "corrections-billing"
    loose.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    try:
        created = loose.describe_table(TableName=name)["Table"]["BillingModeSummary"]
        loose.update_table(TableName=name, BillingMode="PROVISIONED",
                           ProvisionedThroughput={"ReadCapacityUnits": 2, "WriteCapacityUnits": 2})
        summary = loose.describe_table(TableName=name)["Table"]["BillingModeSummary"]
        assert summary == {"BillingMode": "PROVISIONED",
                           "LastUpdateToPayPerRequestDateTime": created["LastUpdateToPayPerRequestDateTime"]}
    finally:
        loose.delete_table(TableName=name)


def test_health_check_names_the_host_addressed(server):
    with urllib.request.urlopen(server.url + "/", timeout=10) as resp:
        assert resp.read() == f"healthy: 127.0.0.1:{server.port}".encode()
    request = urllib.request.Request(server.url + "/", headers={"Host": "dynamodb.local:8000"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.read() == b"healthy: dynamodb.local:8000"
