"""The last differences from DynamoDB on the wire (issue 25), one end-to-end test each: what
DynamoDB answers and where that was found is in docs/behaviour/*.md next to each rule."""
from __future__ import annotations

import http.client
import json
import zlib

import pytest
from botocore.exceptions import ClientError

from stream_reader import all_shards, streams_client

AUTH = ("AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, "
        "Signature=00")


def error(call, *args, **kwargs) -> tuple[str, str]:
    """The (code, message) of the ClientError a call raises."""
    with pytest.raises(ClientError) as caught:
        call(*args, **kwargs)
    err = caught.value.response["Error"]
    return err["Code"], err["Message"]


# --- 1. Accept-Encoding as several lines, and the client's order --------------------------------

def _get(server, body: bytes, *accept: str) -> tuple[str | None, bytes]:
    conn = http.client.HTTPConnection(server.url.split("//", 1)[1], timeout=10)
    conn.putrequest("POST", "/", skip_accept_encoding=True)
    for name, value in (("Content-Type", "application/x-amz-json-1.0"), ("Authorization", AUTH),
                        ("X-Amz-Target", "DynamoDB_20120810.GetItem"), ("Content-Length", str(len(body)))):
        conn.putheader(name, value)
    for value in accept:
        conn.putheader("Accept-Encoding", value)
    conn.endheaders(body)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.getheader("Content-Encoding"), payload


def test_accept_encoding_lines_join_and_the_clients_order_decides(server, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    server.client().put_item(TableName=table, Item={"id": {"S": "big"}, "pad": {"S": "y" * 5000}})
    body = json.dumps({"TableName": table, "Key": {"id": {"S": "big"}}}).encode()
    coding, payload = _get(server, body, "br, identity, deflate, gzip")
    assert coding == "deflate" and json.loads(zlib.decompress(payload))["Item"]["pad"]["S"] == "y" * 5000
    coding, payload = _get(server, body, "br", "gzip")  # two lines: one list
    assert coding == "gzip" and json.loads(zlib.decompress(payload, 31))["Item"]
    coding, _ = _get(server, body, "deflate", "gzip;q=0.5")
    assert coding == "deflate"
    coding, payload = _get(server, body, "br", "identity")
    assert coding is None and len(payload) > 5000


# --- 2. attribute_type with a value first -------------------------------------------------------

def test_attribute_type_takes_any_operand_first(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    item = {"id": {"S": "a"}, "x": {"S": "s"}}
    ddb.put_item(TableName=table, Item=item, ConditionExpression="attribute_type(:v, :t)",
                 ExpressionAttributeValues={":v": {"S": "x"}, ":t": {"S": "S"}})
    ddb.put_item(TableName=table, Item=item, ConditionExpression="attribute_type(size(x), :t)",
                 ExpressionAttributeValues={":t": {"S": "N"}})
    code, _ = error(ddb.put_item, TableName=table, Item=item, ConditionExpression="attribute_type(:v, :t)",
                    ExpressionAttributeValues={":v": {"N": "1"}, ":t": {"S": "S"}})
    assert code == "ConditionalCheckFailedException"
    assert error(ddb.put_item, TableName=table, Item=item, ConditionExpression="attribute_type(x, x)") == (
        "ValidationException", "Invalid ConditionExpression: The first operand must be distinct from the remaining "
        "operands for this operator or function; operator: attribute_type, first operand: [x]")
    assert error(ddb.put_item, TableName=table, Item=item, ConditionExpression="attribute_exists(:v)",
                 ExpressionAttributeValues={":v": {"S": "x"}}) == (
        "ValidationException", "Invalid ConditionExpression: Operator or function requires a document path; "
        "operator or function: attribute_exists")


# --- 4. the nesting limit's message -------------------------------------------------------------

def test_nesting_beyond_32_levels_says_nested(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])

    def deep(levels: int) -> dict:
        value: dict = {"S": "leaf"}
        for _ in range(levels):
            value = {"M": {"n": value}}
        return value
    ddb.put_item(TableName=table, Item={"id": {"S": "ok"}, "data": deep(31)})
    assert error(ddb.put_item, TableName=table, Item={"id": {"S": "no"}, "data": deep(32)}) == (
        "ValidationException", "Nesting Levels have exceeded supported limits: Attributes in the item have "
                               "nested levels beyond supported limit")


# --- 5. UpdateTable with nothing to do, malformed GSI updates -----------------------------------

NOTHING = ("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, "
           "SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, "
           "DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")


def test_update_table_with_nothing_to_do_and_malformed_gsi_updates(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    assert error(ddb.update_table, TableName=table) == ("ValidationException", NOTHING)
    assert error(ddb.update_table, TableName=table, GlobalSecondaryIndexUpdates=[]) == ("ValidationException", NOTHING)
    assert error(ddb.update_table, TableName=table, GlobalSecondaryIndexUpdates=[
        {"Delete": {"IndexName": "gsi"}, "Update": {"IndexName": "gsi"}}]) == (
        "ValidationException", "One or more parameter values were invalid: Only one global secondary index action is "
                               "allowed per GlobalSecondaryIndexUpdate object")
    assert error(ddb.update_table, TableName=table, GlobalSecondaryIndexUpdates=[{}]) == (
        "ValidationException", "One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Update, "
                               "GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Delete must not be null")


# --- 6. streams: disabling a disabled stream ----------------------------------------------------

def test_disabling_a_stream_that_is_not_enabled(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    assert error(ddb.update_table, TableName=table, StreamSpecification={"StreamEnabled": False}) == (
        "ValidationException", f"Table has no stream to disable: TableName: {table}")


def test_list_streams_from_no_stream_and_an_unknown_shard(server, ddb, make_table):
    streams = streams_client(server.url)
    table = make_table([("id", "HASH")], [("id", "S")],
                       StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    earlier = arn.rsplit("/", 1)[0] + "/2000-01-01T00:00:00.000"  # no such stream; sorts before `arn`
    assert arn in [s["StreamArn"] for s in streams.list_streams(TableName=table, ExclusiveStartStreamArn=earlier)[
        "Streams"]]
    later = arn.rsplit("/", 1)[0] + "/2999-01-01T00:00:00.000"
    assert streams.list_streams(TableName=table, ExclusiveStartStreamArn=later)["Streams"] == []
    assert error(streams.get_shard_iterator, StreamArn=arn, ShardId="shardId-00000000000000000000-00000000",
                 ShardIteratorType="TRIM_HORIZON") == (
        "ResourceNotFoundException", "Requested resource not found: Shard does not exist")


# --- 9. unchanged throughput, Limit 0, too many key elements -----------------------------------

def test_unchanged_throughput_limit_zero_and_three_key_elements(server, ddb, make_table):
    pt = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    table = make_table([("id", "HASH")], [("id", "S")], ProvisionedThroughput=pt)
    same = ("ValidationException", "The provisioned throughput for the table will not change. The requested value "
            "equals the current value. Current ReadCapacityUnits provisioned for the table: 5. Requested "
            "ReadCapacityUnits: 5. Current WriteCapacityUnits provisioned for the table: 5. Requested "
            "WriteCapacityUnits: 5. Refer to the Amazon DynamoDB Developer Guide for current limits and how to "
            "request higher limits.")
    assert error(ddb.update_table, TableName=table, ProvisionedThroughput=pt) == same
    assert error(ddb.update_table, TableName=table, BillingMode="PROVISIONED", ProvisionedThroughput=pt) == same
    status, _, payload = server.raw("DynamoDB_20120810.Query", {
        "TableName": table, "KeyConditionExpression": "id = :v", "ExpressionAttributeValues": {":v": {"S": "a"}},
        "Limit": 0})
    assert status == 400 and json.loads(payload)["message"] == (
        "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value "
        "greater than or equal to 1")
    keys = [{"AttributeName": n, "KeyType": t} for n, t in (("a", "HASH"), ("b", "RANGE"), ("c", "RANGE"))]
    assert error(ddb.create_table, TableName="three-keys", KeySchema=keys, BillingMode="PAY_PER_REQUEST",
                 AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in "abc"]) == (
        "ValidationException", "1 validation error detected: Value '[KeySchemaElement(attributeName=a, keyType=HASH), "
        "KeySchemaElement(attributeName=b, keyType=RANGE), KeySchemaElement(attributeName=c, keyType=RANGE)]' at "
        "'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2")


# --- 10. DescribeStream's ShardFilter -----------------------------------------------------------

def test_describe_stream_child_shards_filter(server, ddb, make_table):
    streams = streams_client(server.url)
    table = make_table([("id", "HASH")], [("id", "S")], ProvisionedThroughput={"ReadCapacityUnits": 100,
                                                                              "WriteCapacityUnits": 100},
                       StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
                       Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
    described = ddb.describe_table(TableName=table)["Table"]
    ddb.tag_resource(ResourceArn=described["TableArn"], Tags=[{"Key": "dynalocal:partitions", "Value": "2"}])
    arn = described["LatestStreamArn"]
    shards = all_shards(streams, arn)
    (parent,) = [s for s in shards if "ParentShardId" not in s]
    children = streams.describe_stream(StreamArn=arn, ShardFilter={"Type": "CHILD_SHARDS",
                                                                    "ShardId": parent["ShardId"]})
    got = children["StreamDescription"]["Shards"]
    assert len(got) == 2 and {s["ParentShardId"] for s in got} == {parent["ShardId"]}
    leaf = got[0]["ShardId"]
    assert streams.describe_stream(StreamArn=arn, ShardFilter={"Type": "CHILD_SHARDS", "ShardId": leaf})[
        "StreamDescription"]["Shards"] == []


# --- 7. legacy NOT_CONTAINS -------------------------------------------------------------------

def test_legacy_not_contains_refuses_values_nothing_can_contain(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}, "s": {"S": "hello"}})
    for value, kind in (({"L": [{"N": "1"}]}, "L"), ({"SS": ["x"]}, "SS"), ({"M": {}}, "M"), ({"BOOL": True}, "BOOL")):
        assert error(ddb.put_item, TableName=table, Item={"id": {"S": "a"}},
                     Expected={"s": {"ComparisonOperator": "NOT_CONTAINS", "AttributeValueList": [value]}}) == (
            "ValidationException", "One or more parameter values were invalid: ComparisonOperator NOT_CONTAINS is "
                                   f"not valid for {kind} AttributeValue type")
    # a scalar of another type than the attribute's is a comparison, true for NOT_CONTAINS
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}, "s": {"S": "hello"}},
                 Expected={"s": {"ComparisonOperator": "NOT_CONTAINS", "AttributeValueList": [{"N": "1"}]}})


# --- 8. tags at CreateTable -------------------------------------------------------------------

def test_create_table_holds_tags_to_tag_resources_limits(ddb):
    base = {"TableName": "tagged-too-much", "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}
    assert error(ddb.create_table, **base, Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(51)]) == (
        "ValidationException", "One or more parameter values were invalid: The number of tags exceeds the limit of 50")
    assert error(ddb.create_table, **base, Tags=[{"Key": "a*b", "Value": "v"}]) == (
        "ValidationException", "Invalid tag key or value: allowed characters are letters, numbers, spaces "
                               "representable in UTF-8, and the following characters: + - = . _ : / @")
    code, message = error(ddb.create_table, **base, Tags=[{"Key": "k" * 129, "Value": "v"}])
    assert code == "ValidationException" and message.endswith(
        "at 'tags.1.member.key' failed to satisfy constraint: Member must have length less than or equal to 128")
    assert "tagged-too-much" not in ddb.list_tables()["TableNames"]


# --- 3. UPDATED_OLD / UPDATED_NEW for a nested path set to the value it has ----------------------

def test_updated_values_leave_out_a_nested_path_set_to_its_own_value(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    key = {"id": {"S": "a"}}
    ddb.put_item(TableName=table, Item={**key, "a": {"M": {"c": {"L": [{"N": "1"}, {"N": "2"}]}}}, "b": {"N": "5"}})
    for returned in ("UPDATED_OLD", "UPDATED_NEW"):
        out = ddb.update_item(TableName=table, Key=key, UpdateExpression="SET a.c[0] = :v", ReturnValues=returned,
                              ExpressionAttributeValues={":v": {"N": "1"}})
        assert "Attributes" not in out
        out = ddb.update_item(TableName=table, Key=key, UpdateExpression="SET a.c[0] = :v, b = :b",
                              ReturnValues=returned, ExpressionAttributeValues={":v": {"N": "1"}, ":b": {"N": "5"}})
        assert out["Attributes"] == {"b": {"N": "5"}}  # a top-level attribute still counts as updated
    out = ddb.update_item(TableName=table, Key=key, UpdateExpression="SET a.c[0] = :v", ReturnValues="UPDATED_OLD",
                          ExpressionAttributeValues={":v": {"N": "3"}})
    assert out["Attributes"] == {"a": {"M": {"c": {"L": [{"N": "1"}]}}}}


def test_gsi_added_by_update_table_orders_definitions_before_the_lsis(ddb, make_table):
    table = make_table([("p", "HASH"), ("s", "RANGE")], [("p", "S"), ("s", "S"), ("l", "S")],
                       LocalSecondaryIndexes=[{"IndexName": "lsi", "Projection": {"ProjectionType": "ALL"},
                                               "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                                                             {"AttributeName": "l", "KeyType": "RANGE"}]}])
    ddb.put_item(TableName=table, Item={"p": {"S": "p"}, "s": {"S": "1"}, "l": {"S": "l"}, "g": {"S": "g"}})
    out = ddb.update_table(TableName=table, AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
                           GlobalSecondaryIndexUpdates=[{"Create": {
                               "IndexName": "gsi", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                               "Projection": {"ProjectionType": "ALL"}}}])
    assert [d["AttributeName"] for d in out["TableDescription"]["AttributeDefinitions"]] == ["p", "s", "g", "l"]
    described = ddb.describe_table(TableName=table)["Table"]
    assert [d["AttributeName"] for d in described["AttributeDefinitions"]] == ["p", "s", "g", "l"]
    assert ddb.query(TableName=table, IndexName="gsi", KeyConditionExpression="g = :g",
                     ExpressionAttributeValues={":g": {"S": "g"}})["Count"] == 1
