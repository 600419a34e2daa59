"""Control plane through boto3: CreateTable validation, DescribeTable, ListTables, DeleteTable, UpdateTable,
DescribeLimits, DescribeEndpoints and the boto3 waiters (docs/behaviour/operations.md §1)."""
from __future__ import annotations

import datetime
import re
import time
import uuid

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer

INVALID = "One or more parameter values were invalid: "
FAST = {"Delay": 0.1, "MaxAttempts": 50}


def unique(prefix: str = "tbl") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def error(call, *args, **kwargs) -> tuple[str, str]:
    with pytest.raises(ClientError) as info:
        call(*args, **kwargs)
    err = info.value.response["Error"]
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return err["Code"], err["Message"]


def keys(*pairs):
    return [{"AttributeName": n, "KeyType": t} for n, t in pairs]


def defs(*pairs):
    return [{"AttributeName": n, "AttributeType": t} for n, t in pairs]


def create_error(ddb, **kwargs) -> str:
    kwargs.setdefault("TableName", unique())
    kwargs.setdefault("BillingMode", "PAY_PER_REQUEST")
    code, message = error(ddb.create_table, **kwargs)
    assert code == "ValidationException", message
    if re.fullmatch(r"[a-zA-Z0-9_.-]{3,255}", kwargs["TableName"]):
        with pytest.raises(ddb.exceptions.ResourceNotFoundException):
            ddb.describe_table(TableName=kwargs["TableName"])  # a rejected CreateTable creates nothing
    return message


@pytest.fixture(scope="module")
def loose(server):
    """A client that lets through what botocore's own parameter validation would stop."""
    return server.client(parameter_validation=False)


HASH = dict(KeySchema=keys(("pk", "HASH")), AttributeDefinitions=defs(("pk", "S")))
COMPOSITE = dict(KeySchema=keys(("pk", "HASH"), ("sk", "RANGE")), AttributeDefinitions=defs(("pk", "S"), ("sk", "N")))
PT = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}


# --- CreateTable validation ----------------------------------------------------------------

def test_provisioned_needs_throughput(ddb):
    message = INVALID + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"
    assert create_error(ddb, BillingMode="PROVISIONED", **HASH) == message
    name = unique()
    code, got = error(ddb.create_table, TableName=name, **HASH)  # BillingMode omitted = PROVISIONED
    assert (code, got) == ("ValidationException", message)


def test_on_demand_refuses_throughput(ddb):
    assert create_error(ddb, ProvisionedThroughput=PT, **HASH) == (
        INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")


@pytest.mark.parametrize("member", ["ReadCapacityUnits", "WriteCapacityUnits"])
def test_throughput_out_of_bounds(ddb, member):
    pt = dict(PT, **{member: 1_000_000_000_001})
    assert create_error(ddb, BillingMode="PROVISIONED", ProvisionedThroughput=pt, **HASH) == (
        f"Given value 1000000000001 for {member} is out of bounds")


def test_throughput_must_be_positive(loose):
    message = create_error(loose, BillingMode="PROVISIONED", ProvisionedThroughput=dict(PT, ReadCapacityUnits=0), **HASH)
    assert message == ("1 validation error detected: Value '0' at 'provisionedThroughput.readCapacityUnits' failed to "
                       "satisfy constraint: Member must have value greater than or equal to 1")


def test_more_keys_than_definitions(ddb):
    assert create_error(ddb, KeySchema=keys(("a", "HASH"), ("b", "RANGE")), AttributeDefinitions=defs(("a", "S"))) == (
        "Invalid KeySchema: Some index key attribute have no definition")


def test_key_not_defined(ddb):
    assert create_error(ddb, KeySchema=keys(("a", "HASH"), ("b", "RANGE")),
                        AttributeDefinitions=defs(("a", "S"), ("c", "S"))) == (
        INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
                  "Keys: [a, b], AttributeDefinitions: [a, c]")


def test_hash_and_range_with_the_same_name(ddb):
    for second in ("RANGE", "HASH"):
        assert create_error(ddb, KeySchema=keys(("a", "HASH"), ("a", second)),
                            AttributeDefinitions=defs(("a", "S"), ("b", "S"))) == (
            "Both the Hash Key and the Range Key element in the KeySchema have the same name")


def test_key_types_in_order(ddb):
    both = defs(("a", "S"), ("b", "S"))
    assert create_error(ddb, KeySchema=keys(("a", "RANGE"), ("b", "HASH")), AttributeDefinitions=both) == (
        "Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    assert create_error(ddb, KeySchema=keys(("a", "RANGE")), AttributeDefinitions=defs(("a", "S"))) == (
        "Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    assert create_error(ddb, KeySchema=keys(("a", "HASH"), ("b", "HASH")), AttributeDefinitions=both) == (
        "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")


def test_unused_attribute_definitions(ddb):
    message = create_error(ddb, KeySchema=keys(("id", "HASH"), ("user", "RANGE")),
                           AttributeDefinitions=defs(("user", "S"), ("id", "S"), ("created_at", "N")))
    assert message == (INVALID + "Some AttributeDefinitions are not used. "
                                 "AttributeDefinitions: [created_at, id, user], keys used: [id, user]")


def test_duplicate_attribute_definition(ddb):
    message = create_error(ddb, KeySchema=keys(("a", "HASH")), AttributeDefinitions=defs(("a", "S"), ("a", "N")))
    assert "uplicate" in message and "a" in message


def test_bad_attribute_type_is_an_enum_error(ddb):
    assert create_error(ddb, KeySchema=keys(("a", "HASH")), AttributeDefinitions=defs(("a", "BOOL"))) == (
        "1 validation error detected: Value 'BOOL' at 'attributeDefinitions.1.member.attributeType' failed to "
        "satisfy constraint: Member must satisfy enum value set: [B, N, S]")


def test_bad_key_type_is_an_enum_error(ddb):
    message = create_error(ddb, KeySchema=keys(("a", "HASH"), ("b", "SORT")),
                           AttributeDefinitions=defs(("a", "S"), ("b", "S")))
    assert message == ("1 validation error detected: Value 'SORT' at 'keySchema.2.member.keyType' failed to satisfy "
                       "constraint: Member must satisfy enum value set: [HASH, RANGE]")


def test_missing_key_schema_or_definitions(ddb):
    assert "keySchema" in create_error(ddb, AttributeDefinitions=defs(("a", "S")))
    assert "attributeDefinitions" in create_error(ddb, KeySchema=keys(("a", "HASH")))


def test_key_schema_length(ddb, loose):
    message = create_error(ddb, KeySchema=keys(("a", "HASH"), ("b", "RANGE"), ("c", "RANGE")),
                           AttributeDefinitions=defs(("a", "S"), ("b", "S"), ("c", "S")))
    assert message == ("1 validation error detected: Value '[KeySchemaElement(attributeName=a, keyType=HASH), "
                       "KeySchemaElement(attributeName=b, keyType=RANGE), KeySchemaElement(attributeName=c, "
                       "keyType=RANGE)]' at 'keySchema' failed to satisfy constraint: Member must have length less "
                       "than or equal to 2")
    message = create_error(loose, KeySchema=[], AttributeDefinitions=defs(("a", "S")))
    assert "keySchema" in message and "length greater than or equal to 1" in message


@pytest.mark.parametrize("name,message", [
    ("ab", "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: "
           "Member must have length greater than or equal to 3"),
    ("x" * 256, f"1 validation error detected: Value '{'x' * 256}' at 'tableName' failed to satisfy constraint: "
                "Member must have length less than or equal to 255"),
    ("bad!name", "1 validation error detected: Value 'bad!name' at 'tableName' failed to satisfy constraint: "
                 "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"),
])
def test_table_name_rules(ddb, name, message):
    assert create_error(ddb, TableName=name, **HASH) == message


def test_table_name_limits_accepted(ddb):
    for name in ("abc", "A" * 255, "a_b.c-9"):
        ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
        assert ddb.describe_table(TableName=name)["Table"]["TableName"] == name
        ddb.delete_table(TableName=name)


def lsi(name, range_attr="lsk", hash_attr="pk", projection=None):
    return {"IndexName": name, "KeySchema": keys((hash_attr, "HASH"), (range_attr, "RANGE")),
            "Projection": {"ProjectionType": "ALL"} if projection is None else projection}


def gsi(name, hash_attr="g", projection=None, **extra):
    return {"IndexName": name, "KeySchema": keys((hash_attr, "HASH")),
            "Projection": {"ProjectionType": "KEYS_ONLY"} if projection is None else projection, **extra}


WITH_LSK = dict(KeySchema=COMPOSITE["KeySchema"], AttributeDefinitions=defs(("pk", "S"), ("sk", "N"), ("lsk", "S")))


def test_lsi_validation(ddb):
    assert create_error(ddb, LocalSecondaryIndexes=[], **WITH_LSK) == INVALID + "List of LocalSecondaryIndexes is empty"
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=defs(("pk", "S"), ("lsk", "S")),
                        LocalSecondaryIndexes=[lsi("idx")]) == (
        INVALID + "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex")
    one_key = {"IndexName": "idx", "KeySchema": keys(("pk", "HASH")), "Projection": {"ProjectionType": "ALL"}}
    assert create_error(ddb, LocalSecondaryIndexes=[one_key], **COMPOSITE) == (
        INVALID + "Index KeySchema does not have a range key for index: idx")
    assert create_error(ddb, KeySchema=COMPOSITE["KeySchema"],
                        AttributeDefinitions=defs(("pk", "S"), ("sk", "N"), ("lsk", "S"), ("other", "S")),
                        LocalSecondaryIndexes=[lsi("idx", hash_attr="other")]) == (
        INVALID + "Index KeySchema does not have the same leading hash key as table KeySchema for index: idx. "
                  "index hash key: other, table hash key: pk")
    assert create_error(ddb, LocalSecondaryIndexes=[lsi(f"idx{i}") for i in range(6)], **WITH_LSK) == (
        INVALID + "Number of LocalSecondaryIndexes exceeds per-table limit of 5")


def test_gsi_validation(ddb):
    attrs = defs(("pk", "S"), ("g", "S"))
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=attrs, GlobalSecondaryIndexes=[]) == (
        INVALID + "List of GlobalSecondaryIndexes is empty")
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=attrs,
                        GlobalSecondaryIndexes=[gsi(f"idx{i}") for i in range(21)]) == (
        INVALID + "GlobalSecondaryIndex count exceeds the per-table limit of 20")
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=attrs,
                        GlobalSecondaryIndexes=[gsi("idx", ProvisionedThroughput=PT)]) == (
        INVALID + "ProvisionedThroughput should not be specified for index: idx when BillingMode is PAY_PER_REQUEST")
    message = create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=attrs, BillingMode="PROVISIONED",
                           ProvisionedThroughput=PT, GlobalSecondaryIndexes=[gsi("idx")])
    assert "ProvisionedThroughput" in message and "idx" in message


def test_projection_validation(ddb):
    attrs = defs(("pk", "S"), ("g", "S"))
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=attrs,
                        GlobalSecondaryIndexes=[gsi("idx", projection={})]) == INVALID + "Unknown ProjectionType: null"
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=attrs, GlobalSecondaryIndexes=[
        gsi("idx", projection={"ProjectionType": "KEYS_ONLY", "NonKeyAttributes": ["x"]})]) == (
        INVALID + "ProjectionType is KEYS_ONLY, but NonKeyAttributes is specified")


def test_duplicate_index_names(ddb):
    assert create_error(ddb, KeySchema=keys(("pk", "HASH")), AttributeDefinitions=defs(("pk", "S"), ("g", "S")),
                        GlobalSecondaryIndexes=[gsi("idx"), gsi("idx")]) == INVALID + "Duplicate index name: idx"
    assert create_error(ddb, KeySchema=COMPOSITE["KeySchema"],
                        AttributeDefinitions=defs(("pk", "S"), ("sk", "N"), ("lsk", "S"), ("g", "S")),
                        LocalSecondaryIndexes=[lsi("idx")], GlobalSecondaryIndexes=[gsi("idx")]) == (
        INVALID + "Duplicate index name: idx")


def test_existing_table_is_resource_in_use(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    code, message = error(ddb.create_table, TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
    assert (code, message) == ("ResourceInUseException", f"Table already exists: {name}")


# --- CreateTable / DescribeTable output ----------------------------------------------------

ARN = re.compile(r"arn:aws:dynamodb:[a-z0-9-]+:\d{12}:table/(.+)")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_create_and_describe_provisioned_table(ddb):
    name = unique()
    before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=5)
    created = ddb.create_table(TableName=name, ProvisionedThroughput=PT, **COMPOSITE)["TableDescription"]
    assert created["TableStatus"] in ("CREATING", "ACTIVE")
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig=FAST)
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["TableName"] == name and table["TableStatus"] == "ACTIVE"
    assert table["KeySchema"] == COMPOSITE["KeySchema"]
    assert table["AttributeDefinitions"] == COMPOSITE["AttributeDefinitions"]
    assert table["ProvisionedThroughput"] == {"NumberOfDecreasesToday": 0, "ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    assert table["ItemCount"] == 0 and table["TableSizeBytes"] == 0
    assert ARN.fullmatch(table["TableArn"]).group(1) == name
    assert UUID.fullmatch(table["TableId"])
    assert before < table["CreationDateTime"] <= datetime.datetime.now(datetime.UTC)
    assert table["DeletionProtectionEnabled"] is False
    assert "BillingModeSummary" not in table or table["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
    for member in ("TableArn", "TableId", "CreationDateTime", "KeySchema", "AttributeDefinitions"):
        assert created[member] == table[member]
    ddb.delete_table(TableName=name)


def test_create_and_describe_on_demand_table_with_indexes_and_tags(ddb):
    name = unique()
    ddb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=COMPOSITE["KeySchema"],
        AttributeDefinitions=defs(("pk", "S"), ("sk", "N"), ("lsk", "S"), ("g", "S")),
        LocalSecondaryIndexes=[lsi("by-lsk", projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]})],
        GlobalSecondaryIndexes=[gsi("by-g")],
        Tags=[{"Key": "team", "Value": "storage"}])
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig=FAST)
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 0
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 0
    (g,) = table["GlobalSecondaryIndexes"]
    assert g["IndexName"] == "by-g" and g["IndexStatus"] == "ACTIVE"
    assert g["KeySchema"] == keys(("g", "HASH")) and g["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert g["IndexArn"] == table["TableArn"] + "/index/by-g"
    assert g["ItemCount"] == 0 and g["IndexSizeBytes"] == 0 and "ProvisionedThroughput" in g
    (l,) = table["LocalSecondaryIndexes"]
    assert l["IndexName"] == "by-lsk" and l["IndexArn"] == table["TableArn"] + "/index/by-lsk"
    assert l["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]}
    assert "IndexStatus" not in l
    ddb.delete_table(TableName=name)


def test_describe_table_counts_items(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    ddb.put_item(TableName=name, Item={"pk": {"S": "a"}, "v": {"S": "xyz"}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "b"}})
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["ItemCount"] == 2
    assert table["TableSizeBytes"] == (2 + 1 + 1 + 3) + (2 + 1)


def test_describe_missing_table(ddb):
    code, message = error(ddb.describe_table, TableName="no-such-table")
    assert (code, message) == ("ResourceNotFoundException", "Requested resource not found: Table: no-such-table not found")


def test_describe_by_arn(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    assert ddb.describe_table(TableName=arn)["Table"]["TableName"] == name


# --- waiters, DeleteTable ------------------------------------------------------------------

def test_waiters_and_delete(ddb):
    name = unique()
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
    started = time.monotonic()
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig=FAST)
    deleted = ddb.delete_table(TableName=name)["TableDescription"]
    assert deleted["TableStatus"] == "DELETING" and deleted["TableName"] == name
    assert "GlobalSecondaryIndexes" not in deleted
    ddb.get_waiter("table_not_exists").wait(TableName=name, WaiterConfig=FAST)
    assert time.monotonic() - started < 5
    with pytest.raises(ddb.exceptions.ResourceNotFoundException):
        ddb.describe_table(TableName=name)
    assert name not in ddb.list_tables()["TableNames"]
    code, message = error(ddb.delete_table, TableName=name)
    assert (code, message) == ("ResourceNotFoundException", f"Requested resource not found: Table: {name} not found")
    # the name is free again, and the new table starts empty
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
    assert ddb.describe_table(TableName=name)["Table"]["ItemCount"] == 0
    ddb.delete_table(TableName=name)


def test_deleted_table_takes_its_items(ddb):
    name = unique()
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
    ddb.put_item(TableName=name, Item={"pk": {"S": "a"}})
    ddb.delete_table(TableName=name)
    with pytest.raises(ddb.exceptions.ResourceNotFoundException):
        ddb.get_item(TableName=name, Key={"pk": {"S": "a"}})
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
    assert "Item" not in ddb.get_item(TableName=name, Key={"pk": {"S": "a"}})
    ddb.delete_table(TableName=name)


def test_deletion_protection(ddb):
    name = unique()
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", DeletionProtectionEnabled=True, **HASH)
    assert ddb.describe_table(TableName=name)["Table"]["DeletionProtectionEnabled"] is True
    code, _ = error(ddb.delete_table, TableName=name)
    assert code == "ValidationException"
    ddb.update_table(TableName=name, DeletionProtectionEnabled=False)
    ddb.delete_table(TableName=name)


# --- ListTables ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lonely():
    """A server of its own, so that ListTables sees only this module's tables."""
    with LiveServer() as live:
        yield live.client()


def test_list_tables_pages(lonely):
    empty = lonely.list_tables()
    assert empty["TableNames"] == [] and "LastEvaluatedTableName" not in empty
    names = ["b-tab", "a-tab", "A-tab", "c.tab", "a_tab", "0-tab", "zzz"]
    for name in names:
        lonely.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **HASH)
    ordered = sorted(names, key=str.encode)
    first = lonely.list_tables()
    assert first["TableNames"] == ordered and "LastEvaluatedTableName" not in first
    page = lonely.list_tables(Limit=3)
    assert page["TableNames"] == ordered[:3] and page["LastEvaluatedTableName"] == ordered[2]
    page = lonely.list_tables(Limit=3, ExclusiveStartTableName=page["LastEvaluatedTableName"])
    assert page["TableNames"] == ordered[3:6] and page["LastEvaluatedTableName"] == ordered[5]
    page = lonely.list_tables(Limit=3, ExclusiveStartTableName=page["LastEvaluatedTableName"])
    assert page["TableNames"] == ordered[6:] and "LastEvaluatedTableName" not in page
    # the start name need not exist; names strictly greater follow
    assert lonely.list_tables(ExclusiveStartTableName="a.x")["TableNames"] == [n for n in ordered if n > "a.x"]
    assert lonely.list_tables(ExclusiveStartTableName="b-t")["TableNames"] == ["b-tab", "c.tab", "zzz"]
    assert lonely.list_tables(ExclusiveStartTableName="zzz")["TableNames"] == []
    # boto3's paginator follows LastEvaluatedTableName
    pages = list(lonely.get_paginator("list_tables").paginate(PaginationConfig={"PageSize": 2}))
    assert [n for p in pages for n in p["TableNames"]] == ordered
    for name in names:
        lonely.delete_table(TableName=name)
    assert lonely.list_tables()["TableNames"] == []


@pytest.mark.parametrize("kwargs,message", [
    ({"Limit": 0}, "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: "
                   "Member must have value greater than or equal to 1"),
    ({"Limit": 101}, "1 validation error detected: Value '101' at 'limit' failed to satisfy constraint: "
                     "Member must have value less than or equal to 100"),
    ({"ExclusiveStartTableName": "ab"}, "at 'exclusiveStartTableName' failed to satisfy constraint: "
                                        "Member must have length greater than or equal to 3"),
])
def test_list_tables_validation(loose, kwargs, message):
    code, got = error(loose.list_tables, **kwargs)
    assert code == "ValidationException" and got.endswith(message), got


# --- UpdateTable ---------------------------------------------------------------------------

def test_update_throughput(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")], ProvisionedThroughput=PT)
    out = ddb.update_table(TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 20})
    assert out["TableDescription"]["TableStatus"] in ("UPDATING", "ACTIVE")
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig=FAST)
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["TableStatus"] == "ACTIVE"
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 10
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 20


def test_update_to_the_same_throughput(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")], ProvisionedThroughput=PT)
    code, message = error(ddb.update_table, TableName=name, ProvisionedThroughput=PT)
    assert code == "ValidationException"
    assert message == (
        "The provisioned throughput for the table will not change. The requested value equals the current value. "
        "Current ReadCapacityUnits provisioned for the table: 5. Requested ReadCapacityUnits: 5. "
        "Current WriteCapacityUnits provisioned for the table: 5. Requested WriteCapacityUnits: 5. "
        "Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits.")


def test_update_billing_mode_both_ways(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")], ProvisionedThroughput=PT)
    ddb.put_item(TableName=name, Item={"pk": {"S": "kept"}})
    ddb.update_table(TableName=name, BillingMode="PAY_PER_REQUEST")
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 0
    code, message = error(ddb.update_table, TableName=name, BillingMode="PROVISIONED")
    assert (code, message) == ("ValidationException",
                               INVALID + "ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
    code, message = error(ddb.update_table, TableName=name, ProvisionedThroughput=PT)
    assert message == (INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when "
                                 "BillingMode is PAY_PER_REQUEST")
    ddb.update_table(TableName=name, BillingMode="PROVISIONED", ProvisionedThroughput={
        "ReadCapacityUnits": 7, "WriteCapacityUnits": 8})
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 7
    assert table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED") == "PROVISIONED"
    assert ddb.get_item(TableName=name, Key={"pk": {"S": "kept"}})["Item"] == {"pk": {"S": "kept"}}


def test_update_on_demand_table_with_gsi_to_provisioned_needs_index_throughput(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S"), ("g", "S")], GlobalSecondaryIndexes=[gsi("by-g")])
    code, message = error(ddb.update_table, TableName=name, BillingMode="PROVISIONED", ProvisionedThroughput=PT)
    assert (code, message) == ("ValidationException",
                               INVALID + "ProvisionedThroughput must be specified for index: by-g")


def test_update_errors(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")], ProvisionedThroughput=PT)
    code, message = error(ddb.update_table, TableName=name)
    assert (code, message) == ("ValidationException",
                               "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, "
                               "GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, "
                               "ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, "
                               "OnDemandThroughput, WarmThroughput or TableClass is required")
    code, message = error(ddb.update_table, TableName=name, ProvisionedThroughput=dict(PT, ReadCapacityUnits=10**12 + 1))
    assert message == "Given value 1000000000001 for ReadCapacityUnits is out of bounds"
    code, message = error(ddb.update_table, TableName="no-such-table", BillingMode="PAY_PER_REQUEST")
    assert (code, message) == ("ResourceNotFoundException", "Requested resource not found: Table: no-such-table not found")
    code, message = error(ddb.update_table, TableName=name, BillingMode="FREE")
    assert code == "ValidationException" and "enum value set: [PROVISIONED, PAY_PER_REQUEST]" in message
    # nothing changed
    assert ddb.describe_table(TableName=name)["Table"]["ProvisionedThroughput"]["ReadCapacityUnits"] == 5


# --- DescribeLimits, DescribeEndpoints -----------------------------------------------------

def test_describe_limits(ddb):
    out = ddb.describe_limits()
    out.pop("ResponseMetadata")
    assert out == {"AccountMaxReadCapacityUnits": 80000, "AccountMaxWriteCapacityUnits": 80000,
                   "TableMaxReadCapacityUnits": 40000, "TableMaxWriteCapacityUnits": 40000}


def test_describe_endpoints(ddb, server):
    (endpoint,) = ddb.describe_endpoints()["Endpoints"]
    assert "://" not in endpoint["Address"]
    assert endpoint["Address"].endswith(f":{server.port}")
    assert endpoint["CachePeriodInMinutes"] > 0
