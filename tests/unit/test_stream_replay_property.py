"""Property: for any sequence of writes (and re-partitionings), replaying the stream from
TRIM_HORIZON over an empty dict, parents before children, reproduces the table."""
from __future__ import annotations

import itertools

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

DDB = "DynamoDB_20120810."
STREAMS = "DynamoDBStreams_20120810."
TABLE = "prop"


def call(ctx: Context, target: str, body: dict) -> dict:
    status, out = dispatch(ctx, target, orjson.dumps(body))
    assert status == 200, out
    return orjson.loads(out) if out else {}


def key(pk: int, sk: int) -> dict:
    return {"pk": {"S": f"p{pk}"}, "sk": {"N": str(sk)}}


keys = st.tuples(st.integers(0, 5), st.integers(0, 2))
values = st.one_of(st.text(max_size=3), st.integers(-5, 5).map(str), st.just(None))
operations = st.one_of(
    st.tuples(st.just("put"), keys, values),
    st.tuples(st.just("update"), keys, values),
    st.tuples(st.just("delete"), keys, st.none()),
    st.tuples(st.just("batch"), st.lists(keys, min_size=1, max_size=4, unique=True), values),
    st.tuples(st.just("transact"), st.lists(keys, min_size=1, max_size=3, unique=True), values),
    st.tuples(st.just("partitions"), st.integers(1, 8), st.none()),
)


def apply(ctx: Context, op: tuple) -> None:
    kind, target, value = op
    attrs = {} if value is None else {"v": {"S": value}}
    if kind == "put":
        call(ctx, DDB + "PutItem", {"TableName": TABLE, "Item": {**key(*target), **attrs}})
    elif kind == "update":
        update = {"UpdateExpression": "REMOVE v"} if value is None else {
            "UpdateExpression": "SET v = :v", "ExpressionAttributeValues": {":v": {"S": value}}}
        call(ctx, DDB + "UpdateItem", {"TableName": TABLE, "Key": key(*target), **update})
    elif kind == "delete":
        call(ctx, DDB + "DeleteItem", {"TableName": TABLE, "Key": key(*target)})
    elif kind == "batch":
        writes = [{"PutRequest": {"Item": {**key(*k), **attrs}}} if (k[0] + k[1]) % 2 else
                  {"DeleteRequest": {"Key": key(*k)}} for k in target]
        assert not call(ctx, DDB + "BatchWriteItem", {"RequestItems": {TABLE: writes}})["UnprocessedItems"]
    elif kind == "transact":
        call(ctx, DDB + "TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": TABLE, "Item": {**key(*k), **attrs}}} if i % 2 == 0 else
            {"Delete": {"TableName": TABLE, "Key": key(*k)}} for i, k in enumerate(target)]})
    else:
        arn = call(ctx, DDB + "DescribeTable", {"TableName": TABLE})["Table"]["TableArn"]
        call(ctx, DDB + "TagResource", {"ResourceArn": arn, "Tags": [
            {"Key": "dynalocal:partitions", "Value": str(target)}]})


def read_all(ctx: Context, arn: str) -> list[dict]:
    shards = call(ctx, STREAMS + "DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"]
    done: set[str] = set()
    out: list[dict] = []
    while len(done) < len(shards):
        for shard in reversed(shards):  # newest first unless lineage says otherwise: lineage must be right
            parent = shard.get("ParentShardId")
            if shard["ShardId"] in done or (parent is not None and parent not in done):
                continue
            iterator = call(ctx, STREAMS + "GetShardIterator", {"StreamArn": arn, "ShardId": shard["ShardId"],
                                                                "ShardIteratorType": "TRIM_HORIZON"})["ShardIterator"]
            while iterator:
                page = call(ctx, STREAMS + "GetRecords", {"ShardIterator": iterator, "Limit": 3})
                out += page["Records"]
                iterator = page.get("NextShardIterator") if page["Records"] or "EndingSequenceNumber" in \
                    shard["SequenceNumberRange"] else None
            done.add(shard["ShardId"])
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(operations, max_size=30))
def test_replaying_the_stream_reproduces_the_table(ops):
    ctx = Context(settings=Settings(throttling="off"), clock=itertools.count(1000.0, 1e-3).__next__,
                  wall_clock=itertools.count(1_700_000_000.0, 0.01).__next__)
    arn = call(ctx, DDB + "CreateTable", {
        "TableName": TABLE, "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "N"}],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    })["TableDescription"]["LatestStreamArn"]
    for op in ops:
        apply(ctx, op)
    replayed: dict = {}
    for record in read_all(ctx, arn):
        data = record["dynamodb"]
        k = orjson.dumps(data["Keys"], option=orjson.OPT_SORT_KEYS)
        if record["eventName"] == "REMOVE":
            assert k in replayed  # never a REMOVE of something the stream did not create
            del replayed[k]
        else:
            assert (k in replayed) == (record["eventName"] == "MODIFY")
            assert replayed.get(k) != data["NewImage"]  # no record for a write that changed nothing
            replayed[k] = data["NewImage"]
    items = call(ctx, DDB + "Scan", {"TableName": TABLE})["Items"]
    table = {orjson.dumps({"pk": i["pk"], "sk": i["sk"]}, option=orjson.OPT_SORT_KEYS): i for i in items}
    assert replayed == table
