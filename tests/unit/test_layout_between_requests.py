"""A re-partitioning (heat split, on-demand growth) never changes what a request sees.

The defect this guards against: a meter asked for a new layout while charging one request, and
the next request's Charge applied it after the handler had looked its key's partition up, so
the handler read (or wrote) the partition now at that index: an existing item was not found,
an UpdateItem said the attribute did not exist, a conditional PutItem wrote a second copy into
a partition that does not own the key. Layouts now change only between requests
(`Capacity.settle`). Each test forces that periodic event (a meter asking for a layout) right
before one operation, or drives it with the fake clock, and checks every answer.
"""
from __future__ import annotations

import orjson
import pytest
from conftest import FakeClock as Clock

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from dynalocal.storage.table import ItemStore

PREFIX = "DynamoDB_20120810."
KEYS = [f"k{i}" for i in range(64)]


def _call(ctx: Context, op: str, body: dict) -> dict:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    answer = orjson.loads(out) if out else {}
    assert status == 200, (op, answer)
    return answer


def _server(throttling: str = "enforce") -> tuple[Context, Clock]:
    clock = Clock()
    return Context(settings=Settings(throttling=throttling), clock=clock), clock


def _table(ctx: Context, name: str = "tbl", gsi: bool = True) -> None:
    body: dict = {"TableName": name, "BillingMode": "PAY_PER_REQUEST",
                  "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                  "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "N"},
                                           {"AttributeName": "g", "AttributeType": "S"}],
                  "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}}
    if gsi:
        body["GlobalSecondaryIndexes"] = [{"IndexName": "by-g", "Projection": {"ProjectionType": "ALL"},
                                           "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                                                         {"AttributeName": "pk", "KeyType": "RANGE"}]}]
    else:
        del body["AttributeDefinitions"][2]
    _call(ctx, "CreateTable", body)
    for i, pk in enumerate(KEYS):
        _call(ctx, "PutItem", {"TableName": name, "Item": {"pk": {"S": pk}, "sk": {"N": "0"}, "c": {"N": "0"},
                                                           "g": {"S": f"g{i % 4}"}}})


def _ask_split(ctx: Context, name: str = "tbl") -> list[int]:
    """Make the table's (and its GSIs') meters ask for twice their partitions, as a heat split
    does while a request is charged; return the partition counts before."""
    entry = ctx.db.tables[name]
    tm = ctx.capacity.meters(entry)
    before = [len(entry.table.partitions)] + [len(i.partitions) for i in entry.table.indexes.values()]
    for m in (tm.table, *tm.gsis.values()):
        m.split_floor = 2 * len(m.parts)
        m._ask_layout()
    return before


def _check_stores(ctx: Context, name: str = "tbl") -> None:
    """Every key lives in exactly one partition: the one owning its token."""
    table = ctx.db.tables[name].table
    stores: list[ItemStore] = [table, *table.indexes.values()]
    for store in stores:
        seen: set[bytes] = set()
        for part in store.partitions:
            for key, _ in part.items():
                assert part.lo <= int.from_bytes(key[:8], "big") < part.hi
                assert key not in seen
                seen.add(key)
        assert len(seen) == store.item_count


def _grew(ctx: Context, before: list[int], name: str = "tbl") -> None:
    table = ctx.db.tables[name].table
    after = [len(table.partitions)] + [len(i.partitions) for i in table.indexes.values()]
    assert after == [2 * n for n in before], "the forced split did not happen"
    _check_stores(ctx, name)


def _key(pk: str) -> dict:
    return {"pk": {"S": pk}, "sk": {"N": "0"}}


OPERATIONS = {
    "GetItem": lambda ctx, pk: _call(ctx, "GetItem", {"TableName": "tbl", "Key": _key(pk), "ConsistentRead": True})
    ["Item"]["pk"] == {"S": pk},
    "BatchGetItem": lambda ctx, pk: len(_call(ctx, "BatchGetItem", {"RequestItems": {"tbl": {"Keys": [
        _key(k) for k in KEYS[:50]]}}})["Responses"]["tbl"]) == 50,
    "Query": lambda ctx, pk: _call(ctx, "Query", {"TableName": "tbl", "KeyConditionExpression": "pk = :p",
                                                  "ExpressionAttributeValues": {":p": {"S": pk}}})["Count"] == 1,
    "Query GSI": lambda ctx, pk: sum(_call(ctx, "Query", {
        "TableName": "tbl", "IndexName": "by-g", "KeyConditionExpression": "g = :g",
        "ExpressionAttributeValues": {":g": {"S": f"g{n}"}}})["Count"] for n in range(4)) == len(KEYS),
    "Scan": lambda ctx, pk: _call(ctx, "Scan", {"TableName": "tbl"})["Count"] == len(KEYS),
    "UpdateItem": lambda ctx, pk: _call(ctx, "UpdateItem", {
        "TableName": "tbl", "Key": _key(pk), "UpdateExpression": "SET #c = #c + :one",
        "ExpressionAttributeNames": {"#c": "c"}, "ExpressionAttributeValues": {":one": {"N": "1"}},
        "ReturnValues": "UPDATED_NEW"})["Attributes"] == {"c": {"N": "1"}},
    "conditional PutItem": lambda ctx, pk: _call(ctx, "PutItem", {
        "TableName": "tbl", "Item": {**_key(pk), "c": {"N": "5"}, "g": {"S": "g9"}},
        "ConditionExpression": "attribute_exists(pk)", "ReturnValues": "ALL_OLD"})["Attributes"]["pk"] == {"S": pk},
    "conditional DeleteItem": lambda ctx, pk: _call(ctx, "DeleteItem", {
        "TableName": "tbl", "Key": _key(pk), "ConditionExpression": "attribute_exists(pk)",
        "ReturnValues": "ALL_OLD"})["Attributes"]["pk"] == {"S": pk},
    "TransactWriteItems": lambda ctx, pk: _call(ctx, "TransactWriteItems", {"TransactItems": [
        {"Update": {"TableName": "tbl", "Key": _key(k), "UpdateExpression": "SET c = c + :one",
                    "ConditionExpression": "attribute_exists(pk)", "ExpressionAttributeValues": {":one": {"N": "1"}}}}
        for k in (pk, KEYS[-1])]}) == {},
    "TransactGetItems": lambda ctx, pk: all("Item" in r for r in _call(ctx, "TransactGetItems", {"TransactItems": [
        {"Get": {"TableName": "tbl", "Key": _key(k)}} for k in KEYS[:10]]})["Responses"]),
    "BatchWriteItem": lambda ctx, pk: _call(ctx, "BatchWriteItem", {"RequestItems": {"tbl": [
        {"PutRequest": {"Item": {**_key(k), "c": {"N": "7"}}}} for k in KEYS[:25]]}})["UnprocessedItems"] == {},
    "PartiQL SELECT": lambda ctx, pk: len(_call(ctx, "ExecuteStatement", {
        "Statement": f"SELECT * FROM tbl WHERE pk = '{pk}' AND sk = 0"})["Items"]) == 1,
    "PartiQL UPDATE": lambda ctx, pk: _call(ctx, "ExecuteStatement", {
        "Statement": f"UPDATE tbl SET c = c + 1 WHERE pk = '{pk}' AND sk = 0"}) is not None,
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_layout_asked_for_before_a_request_never_changes_its_answer(operation):
    ctx, _ = _server()
    _table(ctx)
    table = ctx.db.tables["tbl"].table
    # keys outside the first partition: a stale partition index finds another partition there
    keys = [k for k in KEYS if table.partition_index(table.schema.partition_prefix(k)) > 0]
    before = _ask_split(ctx)
    assert OPERATIONS[operation](ctx, keys[0]), operation
    _grew(ctx, before)
    for pk in KEYS:  # and afterwards every item is where its key says
        assert "Item" in _call(ctx, "GetItem", {"TableName": "tbl", "Key": _key(pk), "ConsistentRead": True}) \
            or operation == "conditional DeleteItem"


def test_stream_records_follow_the_split_without_loss():
    ctx, _ = _server()
    _table(ctx, gsi=False)
    before = _ask_split(ctx)
    _call(ctx, "UpdateItem", {"TableName": "tbl", "Key": _key("k5"), "UpdateExpression": "SET c = c + :one",
                              "ExpressionAttributeValues": {":one": {"N": "1"}}})
    _grew(ctx, before)
    arn = _call(ctx, "DescribeTable", {"TableName": "tbl"})["Table"]["LatestStreamArn"]
    status, out = dispatch(ctx, "DynamoDBStreams_20120810.DescribeStream", orjson.dumps({"StreamArn": arn}))
    shards = orjson.loads(out)["StreamDescription"]["Shards"]
    records = 0
    for shard in shards:
        _, it = dispatch(ctx, "DynamoDBStreams_20120810.GetShardIterator", orjson.dumps(
            {"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}))
        _, got = dispatch(ctx, "DynamoDBStreams_20120810.GetRecords",
                          orjson.dumps({"ShardIterator": orjson.loads(it)["ShardIterator"]}))
        records += len(orjson.loads(got)["Records"])
    assert records == len(KEYS) + 1  # every insert and the one update, once each


def test_on_demand_growth_under_sustained_reads_never_hides_the_item():
    """The periodic event itself, on the fake clock: a single large item read consistently at
    ~20 000 RRU/s of fake time grows the table (report mode: nothing refused, so the growth is
    modelled); every read before, at and after each growth finds the item."""
    ctx, clock = _server(throttling="report")
    _call(ctx, "CreateTable", {"TableName": "one", "BillingMode": "PAY_PER_REQUEST",
                               "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                               "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]})
    table = ctx.db.tables["one"].table
    # a key outside the first partition (any growth moves the bounds of every other partition)
    pk = next(k for k in KEYS if table.partition_index(table.schema.partition_prefix(k)) > 0)
    _call(ctx, "PutItem", {"TableName": "one", "Item": {"pk": {"S": pk}, "pad": {"S": "x" * 390_000}}})
    get = orjson.dumps({"TableName": "one", "Key": {"pk": {"S": pk}}, "ConsistentRead": True,
                        "ProjectionExpression": "pk"})
    counts = {len(table.partitions)}
    for _ in range(45):  # seconds of fake time, 200 reads of 96 RRU each per second
        for _ in range(200):
            status, out = dispatch(ctx, PREFIX + "GetItem", get)
            assert status == 200 and out == b'{"Item":{"pk":{"S":"' + pk.encode() + b'"}}}', out
            counts.add(len(ctx.db.tables["one"].table.partitions))
        clock.advance(1.0)
    assert len(counts) >= 3, f"the table did not grow: {counts}"
    _check_stores(ctx, "one")


def test_no_reshaping_for_traffic_when_throttling_is_off():
    """Under --throttling off the served traffic is not what DynamoDB would admit: no growth."""
    ctx, clock = _server(throttling="off")
    _call(ctx, "CreateTable", {"TableName": "one", "BillingMode": "PAY_PER_REQUEST",
                               "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                               "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]})
    _call(ctx, "PutItem", {"TableName": "one", "Item": {"pk": {"S": "a"}, "pad": {"S": "x" * 390_000}}})
    get = orjson.dumps({"TableName": "one", "Key": {"pk": {"S": "a"}}, "ConsistentRead": True})
    start = len(ctx.db.tables["one"].table.partitions)
    for _ in range(45):
        for _ in range(200):
            assert dispatch(ctx, PREFIX + "GetItem", get)[0] == 200
        clock.advance(1.0)
    assert len(ctx.db.tables["one"].table.partitions) == start
