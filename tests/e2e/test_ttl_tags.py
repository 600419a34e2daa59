"""Time to live (with an injected wall clock), tags, and the control-plane reads infrastructure tools make."""
from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock

from dynalocal.config import Settings
from dynalocal.engine.context import Context


@pytest.fixture(scope="module")
def ttl_server():
    clock = WallClock()
    with LiveServer(Context(settings=Settings(ttl_interval=0.02), wall_clock=clock)) as live:
        live.wall = clock
        yield live


def _code(info) -> str:
    return info.value.response["Error"]["Code"]


def _wait_for(predicate, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _ttl_table(client, name="ttl"):
    client.create_table(TableName=name, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    return name


def test_ttl_lifecycle_and_errors(ttl_server):
    client = ttl_server.client()
    table = _ttl_table(client, "ttl-life")
    assert client.describe_time_to_live(TableName=table)["TimeToLiveDescription"] == {"TimeToLiveStatus": "DISABLED"}
    r = client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
    assert r["TimeToLiveSpecification"] == {"Enabled": True, "AttributeName": "exp"}
    assert client.describe_time_to_live(TableName=table)["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "ENABLED", "AttributeName": "exp"}
    with pytest.raises(ClientError) as info:
        client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
    assert info.value.response["Error"]["Message"] == "TimeToLive is already enabled"
    with pytest.raises(ClientError) as info:
        client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "other"})
    assert "different AttributeName" in info.value.response["Error"]["Message"]
    client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": False, "AttributeName": "exp"})
    with pytest.raises(ClientError) as info:
        client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": False, "AttributeName": "exp"})
    assert _code(info) == "ValidationException"
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.describe_time_to_live(TableName="no-such-table")


def test_expired_items_are_deleted_and_others_never(ttl_server):
    client = ttl_server.client()
    table = _ttl_table(client, "ttl-sweep")
    now = ttl_server.wall.now
    items = {
        "past": {"N": str(int(now) - 10)},
        "future": {"N": str(int(now) + 100)},
        "text": {"S": str(int(now) - 10)},  # not a number: never expires
        "ancient": {"N": str(int(now) - 6 * 365 * 24 * 3600)},  # over five years old: ignored
    }
    for key, exp in items.items():
        client.put_item(TableName=table, Item={"id": {"S": key}, "exp": exp})
    client.put_item(TableName=table, Item={"id": {"S": "none"}})
    client.put_item(TableName=table, Item={"id": {"S": "before"}, "exp": {"N": str(int(now) - 1)}})
    client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})

    def present(key):
        return "Item" in client.get_item(TableName=table, Key={"id": {"S": key}})

    assert _wait_for(lambda: not present("past") and not present("before")), "expired items must be swept"
    assert all(present(k) for k in ("future", "text", "ancient", "none"))
    ttl_server.wall.now += 200
    assert _wait_for(lambda: not present("future"))
    # A write that moves the expiry into the future saves the item.
    client.put_item(TableName=table, Item={"id": {"S": "late"}, "exp": {"N": str(int(ttl_server.wall.now) - 1)}})
    client.put_item(TableName=table, Item={"id": {"S": "late"}, "exp": {"N": str(int(ttl_server.wall.now) + 1000)}})
    time.sleep(0.2)
    assert present("late") and present("text")


def test_tags_round_trip_and_limits(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")], Tags=[{"Key": "team", "Value": "core"}])
    arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
    assert ddb.list_tags_of_resource(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "core"}]
    ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "dev"}, {"Key": "team", "Value": "data"}])
    assert sorted((t["Key"], t["Value"]) for t in ddb.list_tags_of_resource(ResourceArn=arn)["Tags"]) == [
        ("env", "dev"), ("team", "data")]
    ddb.untag_resource(ResourceArn=arn, TagKeys=["team"])
    assert ddb.list_tags_of_resource(ResourceArn=arn)["Tags"] == [{"Key": "env", "Value": "dev"}]
    with pytest.raises(ClientError) as info:
        ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(50)])
    assert _code(info) == "ValidationException" and "50" in info.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as info:
        ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "bad|key", "Value": "v"}])
    assert _code(info) == "ValidationException"
    with pytest.raises(ClientError) as info:
        ddb.tag_resource(ResourceArn=arn, Tags=[])
    assert "Atleast one Tag" in info.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as info:
        ddb.list_tags_of_resource(ResourceArn="not-an-arn")
    assert _code(info) == "ValidationException"
    with pytest.raises(ClientError) as info:
        ddb.list_tags_of_resource(ResourceArn=arn + "/index/foo")
    assert _code(info) == "ValidationException"
    with pytest.raises(ClientError) as info:
        ddb.list_tags_of_resource(ResourceArn=arn.replace(table, "missing-table"))
    assert _code(info) == "AccessDeniedException"  # DynamoDB's answer for a table that does not exist


def test_tagging_answers_with_an_empty_body(server, make_table, ddb):
    table = make_table([("id", "HASH")], [("id", "S")])
    arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
    status, headers, body = server.raw("DynamoDB_20120810.TagResource",
                                       {"ResourceArn": arn, "Tags": [{"Key": "a", "Value": "b"}]})
    assert status == 200 and body == b"" and headers["x-amz-crc32"] == "0"


def test_partitions_tag_repartitions_the_table(server, ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    for i in range(40):
        ddb.put_item(TableName=table, Item={"id": {"S": f"k{i}"}})
    arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
    ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "dynalocal:partitions", "Value": "7"}])
    parts = server.ctx.db.tables[table].table.partitions
    assert len(parts) == 7 and sum(len(p) for p in parts) == 40
    assert ddb.scan(TableName=table)["Count"] == 40


def test_infrastructure_reads(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    ddb.update_continuous_backups(TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert ddb.describe_contributor_insights(TableName=table)["ContributorInsightsStatus"] == "DISABLED"
    assert ddb.update_contributor_insights(TableName=table, ContributorInsightsAction="ENABLE")[
        "ContributorInsightsStatus"] == "ENABLING"
    assert ddb.describe_contributor_insights(TableName=table)["ContributorInsightsStatus"] == "ENABLED"
    assert ddb.describe_kinesis_streaming_destination(TableName=table)["KinesisDataStreamDestinations"] == []
    with pytest.raises(ddb.exceptions.TableNotFoundException):
        ddb.describe_continuous_backups(TableName="no-such-table")


def test_expiry_maintains_secondary_indexes(ttl_server):
    client = ttl_server.client()
    client.create_table(TableName="ttl-gsi", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                              {"AttributeName": "g", "AttributeType": "S"}],
                        GlobalSecondaryIndexes=[{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                                 "Projection": {"ProjectionType": "KEYS_ONLY"}}])
    client.update_time_to_live(TableName="ttl-gsi", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
    now = int(ttl_server.wall.now)
    client.put_item(TableName="ttl-gsi", Item={"id": {"S": "old"}, "g": {"S": "x"}, "exp": {"N": str(now - 5)}})
    client.put_item(TableName="ttl-gsi", Item={"id": {"S": "new"}, "g": {"S": "x"}, "exp": {"N": str(now + 500)}})

    def in_index():
        r = client.query(TableName="ttl-gsi", IndexName="byG", KeyConditionExpression="g = :g",
                         ExpressionAttributeValues={":g": {"S": "x"}})
        return sorted(i["id"]["S"] for i in r["Items"])

    assert _wait_for(lambda: in_index() == ["new"]), in_index()
    desc = client.describe_table(TableName="ttl-gsi")["Table"]
    assert desc["ItemCount"] == 1 and desc["GlobalSecondaryIndexes"][0]["ItemCount"] == 1
