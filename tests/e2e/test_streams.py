"""DynamoDB Streams end to end through boto3's `dynamodbstreams` client, on an injected wall clock."""
from __future__ import annotations

import json
import time
import uuid

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock
from stream_reader import all_shards, read_shard, read_stream, streams_client

from dynalocal.config import Settings
from dynalocal.engine.context import Context


@pytest.fixture(scope="module")
def live():
    clock = WallClock()
    # Throttling off: the tests write in bursts to small provisioned tables (whose partition count
    # the dynalocal:partitions tag sets) and are about streams, not capacity.
    with LiveServer(Context(settings=Settings(ttl_interval=0.02, throttling="off"), wall_clock=clock)) as server:
        server.wall = clock
        server.ddb = server.client()
        server.streams = streams_client(server.url)
        yield server


def _code(info) -> str:
    return info.value.response["Error"]["Code"]


def _table(live, view: str | None = "NEW_AND_OLD_IMAGES", range_key: bool = False, **kwargs) -> tuple[str, str | None]:
    name = f"s-{uuid.uuid4().hex[:10]}"
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}] + ([{"AttributeName": "sk", "KeyType": "RANGE"}] if range_key else [])
    defs = [{"AttributeName": "pk", "AttributeType": "S"}] + ([{"AttributeName": "sk", "AttributeType": "N"}] if range_key else [])
    if view is not None:
        kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
    if "Tags" in kwargs:  # provisioned: a new on-demand table has 4 partitions whatever the tag says
        kwargs["ProvisionedThroughput"] = {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100}
    else:
        kwargs["BillingMode"] = "PAY_PER_REQUEST"
    out = live.ddb.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=defs, **kwargs)
    return name, out["TableDescription"].get("LatestStreamArn")


def _events(live, arn: str) -> list[tuple[str, dict]]:
    return [(r["eventName"], r["dynamodb"]) for r in read_stream(live.streams, arn)]


def test_stream_specification_lifecycle(live):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "KEYS_ONLY")
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    assert table["LatestStreamArn"] == arn == f"{table['TableArn']}/stream/{table['LatestStreamLabel']}"
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    assert _code(info) == "ValidationException"
    ddb.put_item(TableName=name, Item={"pk": {"S": "a"}})
    ddb.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    table = ddb.describe_table(TableName=name)["Table"]
    assert "StreamSpecification" not in table and table["LatestStreamArn"] == arn
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    assert _code(info) == "ValidationException"
    old = streams.describe_stream(StreamArn=arn)["StreamDescription"]
    assert old["StreamStatus"] == "DISABLED"
    assert all("EndingSequenceNumber" in s["SequenceNumberRange"] for s in old["Shards"])
    ddb.put_item(TableName=name, Item={"pk": {"S": "b"}})  # no stream: recorded nowhere
    live.wall.now += 1
    new_arn = ddb.update_table(TableName=name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})[
        "TableDescription"]["LatestStreamArn"]
    assert new_arn != arn
    listed = [s["StreamArn"] for s in streams.list_streams(TableName=name)["Streams"]]
    assert listed == [arn, new_arn]
    assert [e for e, _ in _events(live, arn)] == ["INSERT"]  # the disabled stream stays readable
    assert _events(live, new_arn) == []
    ddb.delete_table(TableName=name)
    assert streams.describe_stream(StreamArn=new_arn)["StreamDescription"]["StreamStatus"] == "DISABLED"
    live.wall.now += 23 * 3600
    assert len(streams.list_streams(TableName=name)["Streams"]) == 2
    live.wall.now += 3600 + 1
    assert streams.list_streams(TableName=name)["Streams"] == []
    with pytest.raises(ClientError) as info:
        streams.describe_stream(StreamArn=arn)
    assert _code(info) == "ResourceNotFoundException"


def test_create_table_stream_specification_is_validated(live):
    with pytest.raises(ClientError) as info:
        _table(live, None, StreamSpecification={"StreamEnabled": True})
    assert _code(info) == "ValidationException"
    name, arn = _table(live, None, StreamSpecification={"StreamEnabled": False})
    assert arn is None and "StreamSpecification" not in live.ddb.describe_table(TableName=name)["Table"]


def test_every_write_kind_and_no_op_writes(live):
    ddb = live.ddb
    name, arn = _table(live)
    item = {"pk": {"S": "k"}, "a": {"S": "1"}, "s": {"SS": ["x", "y"]}}
    ddb.put_item(TableName=name, Item=item)                                     # INSERT
    ddb.put_item(TableName=name, Item=item)                                     # identical: nothing
    ddb.put_item(TableName=name, Item={**item, "s": {"SS": ["y", "x"]}})        # same set: nothing
    ddb.put_item(TableName=name, Item={**item, "a": {"S": "2"}})                # MODIFY
    ddb.update_item(TableName=name, Key={"pk": {"S": "k"}}, UpdateExpression="SET a = :v",
                    ExpressionAttributeValues={":v": {"S": "2"}})               # same value: nothing
    ddb.update_item(TableName=name, Key={"pk": {"S": "k"}}, UpdateExpression="REMOVE absent_attr")  # nothing
    ddb.update_item(TableName=name, Key={"pk": {"S": "k"}}, UpdateExpression="SET b = :v",
                    ExpressionAttributeValues={":v": {"N": "3"}})               # MODIFY
    ddb.update_item(TableName=name, Key={"pk": {"S": "u"}}, UpdateExpression="SET b = :v",
                    ExpressionAttributeValues={":v": {"N": "1"}})               # INSERT
    ddb.delete_item(TableName=name, Key={"pk": {"S": "k"}})                      # REMOVE
    ddb.delete_item(TableName=name, Key={"pk": {"S": "k"}})                      # missing: nothing
    events = _events(live, arn)
    by_key = {}
    for event, data in events:
        by_key.setdefault(data["Keys"]["pk"]["S"], []).append(event)
    assert by_key == {"k": ["INSERT", "MODIFY", "MODIFY", "REMOVE"], "u": ["INSERT"]}
    k_records = [d for _, d in events if d["Keys"] == {"pk": {"S": "k"}}]
    assert k_records[2]["OldImage"]["a"] == {"S": "2"} and k_records[2]["NewImage"]["b"] == {"N": "3"}
    assert "NewImage" not in k_records[3] and k_records[3]["OldImage"]["pk"] == {"S": "k"}
    sequence = [int(d["SequenceNumber"]) for d in k_records]
    assert sequence == sorted(sequence) and all(len(d["SequenceNumber"]) >= 21 for d in k_records)


@pytest.mark.parametrize("view", ["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"])
def test_view_types_shape_the_images(live, view):
    ddb = live.ddb
    name, arn = _table(live, view, range_key=True)
    key = {"pk": {"S": "p"}, "sk": {"N": "1"}}
    ddb.put_item(TableName=name, Item={**key, "v": {"S": "one"}})
    ddb.put_item(TableName=name, Item={**key, "v": {"S": "two"}})
    ddb.delete_item(TableName=name, Key=key)
    records = read_stream(live.streams, arn)
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "REMOVE"]
    for record in records:
        assert record["eventSource"] == "aws:dynamodb" and record["awsRegion"] == "us-east-1"
        assert record["eventVersion"] == "1.1" and len(record["eventID"]) == 32
        data = record["dynamodb"]
        assert data["Keys"] == key and data["StreamViewType"] == view and data["SizeBytes"] > 0
        assert "userIdentity" not in record
    images = [(("NewImage" in r["dynamodb"]), ("OldImage" in r["dynamodb"])) for r in records]
    expected = {"KEYS_ONLY": [(False, False)] * 3,
                "NEW_IMAGE": [(True, False), (True, False), (False, False)],
                "OLD_IMAGE": [(False, False), (False, True), (False, True)],
                "NEW_AND_OLD_IMAGES": [(True, False), (True, True), (False, True)]}[view]
    assert images == expected
    if view == "NEW_AND_OLD_IMAGES":
        assert records[1]["dynamodb"]["OldImage"]["v"] == {"S": "one"}
        assert records[1]["dynamodb"]["NewImage"]["v"] == {"S": "two"}


def test_batches_and_transactions_emit_one_record_per_item(live):
    ddb = live.ddb
    name, arn = _table(live, "NEW_IMAGE")
    ddb.put_item(TableName=name, Item={"pk": {"S": "old"}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "same"}})
    ddb.batch_write_item(RequestItems={name: [
        {"PutRequest": {"Item": {"pk": {"S": "b1"}}}},
        {"PutRequest": {"Item": {"pk": {"S": "b2"}}}},
        {"PutRequest": {"Item": {"pk": {"S": "same"}}}},     # identical: nothing
        {"DeleteRequest": {"Key": {"pk": {"S": "old"}}}},
        {"DeleteRequest": {"Key": {"pk": {"S": "gone"}}}},   # missing: nothing
    ]})
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": name, "Item": {"pk": {"S": "t1"}}}},
        {"Update": {"TableName": name, "Key": {"pk": {"S": "b1"}}, "UpdateExpression": "SET n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "1"}}}},
        {"Delete": {"TableName": name, "Key": {"pk": {"S": "b2"}}}},
        {"ConditionCheck": {"TableName": name, "Key": {"pk": {"S": "same"}},
                            "ConditionExpression": "attribute_exists(pk)"}},
    ])
    with pytest.raises(ClientError):  # a cancelled transaction writes nothing, so records nothing
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": "never"}}}},
            {"ConditionCheck": {"TableName": name, "Key": {"pk": {"S": "absent"}},
                                "ConditionExpression": "attribute_exists(pk)"}}])
    got = sorted((d["Keys"]["pk"]["S"], e) for e, d in _events(live, arn))
    assert got == sorted([("old", "INSERT"), ("same", "INSERT"), ("b1", "INSERT"), ("b2", "INSERT"),
                          ("old", "REMOVE"), ("t1", "INSERT"), ("b1", "MODIFY"), ("b2", "REMOVE")])


def test_ttl_deletions_carry_the_service_identity(live):
    ddb = live.ddb
    name, arn = _table(live, "OLD_IMAGE")
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
    ddb.put_item(TableName=name, Item={"pk": {"S": "ttl"}, "exp": {"N": str(int(live.wall.now) + 60)}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "user"}})
    ddb.delete_item(TableName=name, Key={"pk": {"S": "user"}})
    live.wall.now += 120
    deadline = time.monotonic() + 10
    while "Item" in ddb.get_item(TableName=name, Key={"pk": {"S": "ttl"}}):
        assert time.monotonic() < deadline, "the TTL sweeper never deleted the item"
        time.sleep(0.02)
    removes = {r["dynamodb"]["Keys"]["pk"]["S"]: r for r in read_stream(live.streams, arn) if r["eventName"] == "REMOVE"}
    assert removes["ttl"]["userIdentity"] == {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    assert removes["ttl"]["dynamodb"]["OldImage"]["pk"] == {"S": "ttl"}
    assert "userIdentity" not in removes["user"]


def test_paging_and_every_iterator_type(live):
    ddb, streams = live.ddb, live.streams
    names = [_table(live, "KEYS_ONLY", Tags=[{"Key": "dynalocal:partitions", "Value": "1"}]) for _ in range(3)]
    everything = [s["StreamArn"] for s in streams.list_streams()["Streams"]]
    page = streams.list_streams(Limit=2)
    assert [s["StreamArn"] for s in page["Streams"]] == everything[:2]
    rest = streams.list_streams(ExclusiveStartStreamArn=page["LastEvaluatedStreamArn"])
    assert [s["StreamArn"] for s in rest["Streams"]] == everything[2:] and "LastEvaluatedStreamArn" not in rest
    name, arn = names[0]
    for i in range(7):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}})
    (shard,) = all_shards(streams, arn)
    records, ended = read_shard(streams, arn, shard["ShardId"], limit=3)
    assert len(records) == 7 and not ended  # paged by 3; an open shard always has a next iterator
    seqs = [r["dynamodb"]["SequenceNumber"] for r in records]
    first = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")
    page = streams.get_records(ShardIterator=first["ShardIterator"], Limit=2)
    assert [r["dynamodb"]["SequenceNumber"] for r in page["Records"]] == seqs[:2]
    at = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="AT_SEQUENCE_NUMBER",
                                    SequenceNumber=seqs[3])["ShardIterator"]
    assert streams.get_records(ShardIterator=at, Limit=1)["Records"][0]["dynamodb"]["SequenceNumber"] == seqs[3]
    after = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                       ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=seqs[3])["ShardIterator"]
    assert streams.get_records(ShardIterator=after, Limit=1)["Records"][0]["dynamodb"]["SequenceNumber"] == seqs[4]
    latest = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST")
    assert streams.get_records(ShardIterator=latest["ShardIterator"])["Records"] == []
    ddb.put_item(TableName=name, Item={"pk": {"S": "late"}})
    assert [r["dynamodb"]["Keys"] for r in streams.get_records(ShardIterator=latest["ShardIterator"])["Records"]] == [
        {"pk": {"S": "late"}}]
    with pytest.raises(ClientError) as info:
        streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="AT_SEQUENCE_NUMBER")
    assert _code(info) == "ValidationException"


def test_describe_stream_paging_and_child_filter_across_a_split(live):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "NEW_IMAGE", Tags=[{"Key": "dynalocal:partitions", "Value": "2"}])
    ddb.tag_resource(ResourceArn=ddb.describe_table(TableName=name)["Table"]["TableArn"],
                     Tags=[{"Key": "dynalocal:partitions", "Value": "4"}])
    shards = all_shards(streams, arn)
    assert len(shards) == 6
    parents = [s for s in shards if "ParentShardId" not in s]
    assert len(parents) == 2 and all("EndingSequenceNumber" in s["SequenceNumberRange"] for s in parents)
    first = streams.describe_stream(StreamArn=arn, Limit=4)["StreamDescription"]
    assert [s["ShardId"] for s in first["Shards"]] == [s["ShardId"] for s in shards[:4]]
    assert first["LastEvaluatedShardId"] == shards[3]["ShardId"]
    children = streams.describe_stream(StreamArn=arn, ShardFilter={"Type": "CHILD_SHARDS",
                                                                    "ShardId": parents[0]["ShardId"]})
    assert [s["ParentShardId"] for s in children["StreamDescription"]["Shards"]] == [parents[0]["ShardId"]] * 2


def test_split_loses_and_duplicates_nothing_and_keeps_each_item_in_order(live):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "NEW_IMAGE", Tags=[{"Key": "dynalocal:partitions", "Value": "2"}])
    table_arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    expected: dict[str, list[int]] = {}
    for round_, partitions in enumerate(("4", "8", None)):
        for i in range(40):
            ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "n": {"N": str(round_)}})
            expected.setdefault(f"k{i}", []).append(round_)
        if partitions:
            ddb.tag_resource(ResourceArn=table_arn, Tags=[{"Key": "dynalocal:partitions", "Value": partitions}])
    shards = all_shards(streams, arn)
    closed = [s for s in shards if "EndingSequenceNumber" in s["SequenceNumberRange"]]
    for shard in closed:  # a closed shard read to its end gives no next iterator
        assert read_shard(streams, arn, shard["ShardId"])[1]
    seen: dict[str, list[int]] = {}
    for record in read_stream(streams, arn, limit=7):
        seen.setdefault(record["dynamodb"]["Keys"]["pk"]["S"], []).append(int(record["dynamodb"]["NewImage"]["n"]["N"]))
    assert seen == expected


def test_iterators_expire_after_15_minutes_and_records_are_trimmed_after_24_hours(live):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "KEYS_ONLY", Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
    ddb.put_item(TableName=name, Item={"pk": {"S": "early"}})
    (shard,) = all_shards(streams, arn)
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    first_seq = streams.get_records(ShardIterator=iterator)["Records"][0]["dynamodb"]["SequenceNumber"]
    live.wall.now += 15 * 60 + 1
    with pytest.raises(ClientError) as info:
        streams.get_records(ShardIterator=iterator)
    assert _code(info) == "ExpiredIteratorException"
    live.wall.now += 24 * 3600
    ddb.put_item(TableName=name, Item={"pk": {"S": "late"}})
    with pytest.raises(ClientError) as info:
        streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="AT_SEQUENCE_NUMBER",
                                   SequenceNumber=first_seq)
    assert _code(info) == "TrimmedDataAccessException"
    records, _ = read_shard(streams, arn, shard["ShardId"])
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in records] == ["late"]


def test_stream_errors(live):
    streams = live.streams
    with pytest.raises(ClientError) as info:
        streams.describe_stream(StreamArn="x" * 40)
    assert _code(info) == "ValidationException"
    missing = "arn:aws:dynamodb:us-east-1:000000000000:table/nothing/stream/2024-01-01T00:00:00.000"
    for call in (lambda: streams.describe_stream(StreamArn=missing),
                 lambda: streams.get_shard_iterator(StreamArn=missing, ShardId="shardId-00000000000000000000-00000000",
                                                    ShardIteratorType="LATEST")):
        with pytest.raises(ClientError) as info:
            call()
        assert _code(info) == "ResourceNotFoundException"
    with pytest.raises(ClientError) as info:
        streams.get_records(ShardIterator="garbage")
    assert _code(info) == "ValidationException"
    name, arn = _table(live, "KEYS_ONLY")
    shard = all_shards(streams, arn)[0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="LATEST")["ShardIterator"]
    with pytest.raises(ClientError) as info:
        streams.get_records(ShardIterator=iterator, Limit=1001)
    assert _code(info) == "ValidationException"
    with pytest.raises(ClientError) as info:
        streams.get_records(ShardIterator=iterator[:-6] + "AAAAAA")
    assert _code(info) == "ValidationException"
    status, _, body = live.raw("DynamoDBStreams_20120810.PutItem", {})
    assert status == 400 and b"UnknownOperationException" in body
    status, _, body = live.raw("DynamoDB_20120810.ListStreams", {})
    assert status == 400 and b"UnknownOperationException" in body


@pytest.mark.parametrize("change", [
    {"WarmThroughput": {"WriteUnitsPerSecond": 4000}},
    {"ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 3000}},
])
def test_updatetable_growth_splits_shards_with_lineage(live, change):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "KEYS_ONLY", Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
    ddb.put_item(TableName=name, Item={"pk": {"S": "before"}})
    (parent,) = all_shards(streams, arn)
    ddb.update_table(TableName=name, **change)
    shards = all_shards(streams, arn)
    children = [s for s in shards if s.get("ParentShardId") == parent["ShardId"]]
    assert len(children) >= 3 and len(shards) == len(children) + 1
    assert "EndingSequenceNumber" in shards[0]["SequenceNumberRange"]
    ddb.put_item(TableName=name, Item={"pk": {"S": "after"}})
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in read_stream(streams, arn)] == ["before", "after"]


def test_get_records_pages_stop_at_1_mb(live):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "NEW_IMAGE", Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
    for i in range(5):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"big{i}"}, "blob": {"S": "x" * 300_000}})
    (shard,) = all_shards(streams, arn)
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    first = streams.get_records(ShardIterator=iterator)
    assert len(first["Records"]) == 3 and sum(r["dynamodb"]["SizeBytes"] for r in first["Records"]) <= 1024 * 1024
    rest = streams.get_records(ShardIterator=first["NextShardIterator"])
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in rest["Records"]] == ["big3", "big4"]


def test_requests_are_validated_by_the_streams_service_model(live):
    status, _, body = live.raw("DynamoDBStreams_20120810.DescribeStream", {"StreamArn": "short"})
    assert status == 400 and json.loads(body) == {
        "__type": "com.amazon.coral.validate#ValidationException",
        "message": "1 validation error detected: Value 'short' at 'streamArn' failed to satisfy constraint: "
                   "Member must have length greater than or equal to 37"}
    status, _, body = live.raw("DynamoDBStreams_20120810.GetShardIterator", {
        "StreamArn": "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2024-01-01T00:00:00.000",
        "ShardId": "shardId-00000000000000000000-00000000", "ShardIteratorType": "OLDEST"})
    assert status == 400 and "Member must satisfy enum value set: [TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER, " \
        "AFTER_SEQUENCE_NUMBER, AT_TIMESTAMP]" in json.loads(body)["message"]
    status, _, body = live.raw("DynamoDBStreams_20120810.ListStreams", {"Limit": 0})
    assert status == 400 and "Member must have value greater than or equal to 1" in json.loads(body)["message"]


def test_partiql_writes_emit_records(live):
    ddb = live.ddb
    name, arn = _table(live, "NEW_AND_OLD_IMAGES")
    ddb.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'pk': 'q', 'n': 1}}")
    ddb.execute_statement(Statement=f"UPDATE \"{name}\" SET n = 2 WHERE pk = 'q'")
    ddb.execute_statement(Statement=f"UPDATE \"{name}\" SET n = 2 WHERE pk = 'q'")  # no change: no record
    ddb.execute_statement(Statement=f"DELETE FROM \"{name}\" WHERE pk = 'q'")
    assert [(e, d.get("NewImage", {}).get("n")) for e, d in _events(live, arn)] == [
        ("INSERT", {"N": "1"}), ("MODIFY", {"N": "2"}), ("REMOVE", None)]


def test_reset_forgets_every_stream():
    with LiveServer() as server:
        ddb, streams = server.client(), streams_client(server.url)
        ddb.create_table(TableName="gone", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST",
                         StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
        assert len(streams.list_streams()["Streams"]) == 1
        status, _, _ = server.raw(None, b"", path="/_dynalocal/reset")
        assert status == 200
        assert streams.list_streams()["Streams"] == []


def test_under_region_isolation_another_region_cannot_read_a_stream_by_its_arn():
    import boto3

    with LiveServer(Context(settings=Settings(isolation="region"))) as server:
        def clients(region):
            session = boto3.session.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name=region)
            return (session.client("dynamodb", endpoint_url=server.url),
                    session.client("dynamodbstreams", endpoint_url=server.url))

        (east, east_streams), (_, west_streams) = clients("us-east-1"), clients("us-west-2")
        arn = east.create_table(TableName="events", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                                BillingMode="PAY_PER_REQUEST",
                                StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})[
            "TableDescription"]["LatestStreamArn"]
        assert east_streams.describe_stream(StreamArn=arn)["StreamDescription"]["TableName"] == "events"
        assert west_streams.list_streams()["Streams"] == []
        with pytest.raises(ClientError) as info:
            west_streams.describe_stream(StreamArn=arn)
        assert _code(info) == "ResourceNotFoundException"


def test_at_timestamp_and_sequence_numbers_outside_the_shard(live):
    ddb, streams = live.ddb, live.streams
    name, arn = _table(live, "KEYS_ONLY", Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
    ddb.put_item(TableName=name, Item={"pk": {"S": "first"}})
    live.wall.now += 10
    middle = live.wall.now
    ddb.put_item(TableName=name, Item={"pk": {"S": "second"}})
    (shard,) = all_shards(streams, arn)
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="AT_TIMESTAMP",
                                          Timestamp=middle)["ShardIterator"]
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in streams.get_records(ShardIterator=iterator)["Records"]] == [
        "second"]
    with pytest.raises(ClientError) as info:
        streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="AT_SEQUENCE_NUMBER",
                                   SequenceNumber="0" * 21)
    assert _code(info) == "ValidationException"


@pytest.mark.parametrize(("sequence", "message"), [
    ("9" * 40, "Invalid SequenceNumber {seq} for shard {shard}"),  # past any 64-bit position (issue 28)
    ("1" * 21, "Invalid SequenceNumber {seq} for shard {shard}"),
    ("١" * 21, "Invalid SequenceNumber: {seq}"),  # digits of another script
    ("²" * 21, "Invalid SequenceNumber: {seq}"),
    ("abc" + "1" * 20, "Invalid SequenceNumber: {seq}"),
])
@pytest.mark.parametrize("kind", ["AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"])
def test_sequence_numbers_out_of_range_or_format_are_refused(live, sequence, message, kind):
    """DynamoDB sequence numbers are 21 to 40 ASCII digits (docs/behaviour/operations.md §4)."""
    _, arn = _table(live, "KEYS_ONLY")
    shard = all_shards(live.streams, arn)[0]["ShardId"]
    with pytest.raises(ClientError) as info:
        live.streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType=kind, SequenceNumber=sequence)
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert _code(info) == "ValidationException"
    assert info.value.response["Error"]["Message"] == message.format(seq=sequence, shard=shard)
