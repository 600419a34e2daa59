"""Index write units in ConsumedCapacity, GSI capacity and back-pressure, Scan and batch throttling.

Throttling tests run on a server with an injected clock (burst 2 s, partition burst 1 s) in the
classic model, whose per-partition shares make small exact figures easy: buckets move only
when a test moves the clock, so every figure below is exact. The adaptive model has its own
tests in test_capacity_model.py.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.request

import pytest
from botocore.exceptions import ClientError
from conftest import FakeClock, LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context

TABLE_MESSAGE = "The level of configured provisioned throughput for the table was exceeded."
INDEX_MESSAGE = "The level of configured provisioned throughput for one or more global secondary indexes"


@pytest.fixture(scope="module")
def live():
    clock = FakeClock()
    with LiveServer(Context(settings=Settings(burst_seconds=2.0, partition_burst_seconds=1.0, capacity_model="classic"),
                            clock=clock)) as server:
        server.clock = clock
        yield server


@pytest.fixture(scope="module")
def client(live):
    return live.client(retries={"total_max_attempts": 1, "mode": "standard"})


_names = iter(range(10**6))


def _table(client, provisioned=None, gsi=None, gsi_rate=None, lsi=None, partitions=None, range_key=False):
    """A table keyed `pk` (and `sk` N), with a GSI on `g` and/or an LSI on `l` given their projections."""
    name = f"capi-{next(_names)}"
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    defs = [{"AttributeName": "pk", "AttributeType": "S"}]
    if range_key or lsi:
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
        defs.append({"AttributeName": "sk", "AttributeType": "N"})
    kwargs: dict = {"BillingMode": "PAY_PER_REQUEST"}
    if provisioned:
        kwargs = {"ProvisionedThroughput": {"ReadCapacityUnits": provisioned[0], "WriteCapacityUnits": provisioned[1]}}
    if gsi:
        spec = {"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}], "Projection": gsi}
        if provisioned:
            rate = gsi_rate or provisioned
            spec["ProvisionedThroughput"] = {"ReadCapacityUnits": rate[0], "WriteCapacityUnits": rate[1]}
        kwargs["GlobalSecondaryIndexes"] = [spec]
        defs.append({"AttributeName": "g", "AttributeType": "S"})
    if lsi:
        kwargs["LocalSecondaryIndexes"] = [{"IndexName": "byL", "Projection": lsi, "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}]}]
        defs.append({"AttributeName": "l", "AttributeType": "S"})
    if partitions:
        kwargs["Tags"] = [{"Key": "dynalocal:partitions", "Value": str(partitions)}]
    client.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=defs, **kwargs)
    return name


ALL = {"ProjectionType": "ALL"}
KEYS_ONLY = {"ProjectionType": "KEYS_ONLY"}


def _cc(resp):
    return resp["ConsumedCapacity"]


def _stats(live, table):
    with urllib.request.urlopen(f"{live.url}/_dynalocal/tables/{table}/partitions") as resp:
        return json.loads(resp.read())


def _error(info, code="ProvisionedThroughputExceededException"):
    """The throttle's reason, after checking the error type and HTTP status."""
    response = info.value.response
    assert response["Error"]["Code"] == code and response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return (response.get("ThrottlingReasons") or response.get("throttlingReasons"))[0]


def _keys_in_partitions(live, table, parts, per_part=1):
    """Partition key values grouped by the table partition they hash to."""
    t = live.ctx.db.tables[table].table
    out: list[list[str]] = [[] for _ in range(parts)]
    i = 0
    while any(len(keys) < per_part for keys in out):
        key = f"k{i}"
        keys = out[t.partition_index(t.schema.partition_prefix(key))]
        if len(keys) < per_part:
            keys.append(key)
        i += 1
    return out


def _s(value):
    return {"S": value}


# -- ConsumedCapacity of index writes -------------------------------------------------------------

def test_put_reports_the_gsi_write_and_the_total(client):
    table = _table(client, gsi=ALL)
    r = client.put_item(TableName=table, Item={"pk": _s("a"), "g": _s("x")}, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 2.0, "Table": {"CapacityUnits": 1.0},
                      "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 1.0}}}
    r = client.put_item(TableName=table, Item={"pk": _s("b"), "g": _s("x")}, ReturnConsumedCapacity="TOTAL")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 2.0}
    r = client.put_item(TableName=table, Item={"pk": _s("c")}, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}, \
        "an item without the index key is not in the (sparse) index: no index write"
    r = client.put_item(TableName=table, Item={"pk": _s("a"), "g": _s("x")}, ReturnConsumedCapacity="INDEXES")
    assert "GlobalSecondaryIndexes" not in _cc(r), "rewriting an identical item leaves the index entry as it was"


def test_index_entries_are_sized_by_their_projection(client):
    table = _table(client, gsi=ALL)
    item = {"pk": _s("a"), "g": _s("x"), "v": _s("y" * 3000)}  # 3006 bytes: 3 units in table and index
    r = client.put_item(TableName=table, Item=item, ReturnConsumedCapacity="INDEXES")
    assert _cc(r)["GlobalSecondaryIndexes"] == {"byG": {"CapacityUnits": 3.0}} and _cc(r)["CapacityUnits"] == 6.0
    table = _table(client, gsi=KEYS_ONLY)
    r = client.put_item(TableName=table, Item=item, ReturnConsumedCapacity="INDEXES")
    assert _cc(r)["GlobalSecondaryIndexes"] == {"byG": {"CapacityUnits": 1.0}} and _cc(r)["CapacityUnits"] == 4.0


def test_updates_cost_what_they_do_to_each_index(client):
    table = _table(client, gsi=KEYS_ONLY)
    client.put_item(TableName=table, Item={"pk": _s("a"), "g": _s("x")})

    def update(expression, values):
        return _cc(client.update_item(TableName=table, Key={"pk": _s("a")}, UpdateExpression=expression,
                                      ExpressionAttributeValues=values, ReturnConsumedCapacity="INDEXES"))

    assert update("SET v = :v", {":v": _s("new")}) == {
        "TableName": table, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}, \
        "a non-projected attribute of a KEYS_ONLY index costs no index write"
    cc = update("SET g = :g", {":g": _s("y")})
    assert cc["GlobalSecondaryIndexes"] == {"byG": {"CapacityUnits": 2.0}} and cc["CapacityUnits"] == 3.0, \
        "moving the index key deletes the old entry and puts a new one"
    cc = _cc(client.update_item(TableName=table, Key={"pk": _s("a")}, UpdateExpression="REMOVE g",
                                ReturnConsumedCapacity="INDEXES"))
    assert cc["GlobalSecondaryIndexes"] == {"byG": {"CapacityUnits": 1.0}}, "removing the key deletes the entry"
    cc = update("SET g = :g", {":g": _s("z")})
    assert cc["GlobalSecondaryIndexes"] == {"byG": {"CapacityUnits": 1.0}}, "gaining the key puts an entry"
    included = _table(client, gsi={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["p"]})
    client.put_item(TableName=included, Item={"pk": _s("a"), "g": _s("x")})
    cc = _cc(client.update_item(TableName=included, Key={"pk": _s("a")}, UpdateExpression="SET p = :p",
                                ExpressionAttributeValues={":p": _s("v")}, ReturnConsumedCapacity="INDEXES"))
    assert cc["GlobalSecondaryIndexes"] == {"byG": {"CapacityUnits": 1.0}}, "a projected attribute rewrites the entry"


def test_deletes_report_the_index_entries_they_remove(client):
    table = _table(client, gsi=ALL)
    client.put_item(TableName=table, Item={"pk": _s("a"), "g": _s("x"), "v": _s("y" * 1500)})
    r = client.delete_item(TableName=table, Key={"pk": _s("a")}, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 4.0, "Table": {"CapacityUnits": 2.0},
                      "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 2.0}}}
    r = client.delete_item(TableName=table, Key={"pk": _s("a")}, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}


def test_lsi_writes_are_reported_separately_and_charged_to_the_table(live, client):
    table = _table(client, lsi=KEYS_ONLY, gsi=ALL, partitions=1)
    item = {"pk": _s("a"), "sk": {"N": "1"}, "l": _s("x"), "g": _s("y")}
    r = client.put_item(TableName=table, Item=item, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 3.0, "Table": {"CapacityUnits": 1.0},
                      "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 1.0}},
                      "LocalSecondaryIndexes": {"byL": {"CapacityUnits": 1.0}}}
    stats = _stats(live, table)
    assert sum(p["write_units_consumed"] for p in stats["partitions"]) == 2.0, "LSIs share the table's capacity"
    assert sum(p["write_units_consumed"] for p in stats["indexes"]["byG"]) == 1.0, "a GSI has its own"
    assert "byL" not in stats["indexes"]


def test_batch_and_transaction_writes_report_indexes_per_table(client):
    table, plain = _table(client, gsi=ALL), _table(client)
    r = client.batch_write_item(RequestItems={
        table: [{"PutRequest": {"Item": {"pk": _s(k), "g": _s("x")}}} for k in "ab"]
        + [{"PutRequest": {"Item": {"pk": _s("c")}}}],
        plain: [{"PutRequest": {"Item": {"pk": _s("a")}}}]}, ReturnConsumedCapacity="INDEXES")
    assert sorted(r["ConsumedCapacity"], key=lambda c: c["TableName"]) == sorted([
        {"TableName": table, "CapacityUnits": 5.0, "Table": {"CapacityUnits": 3.0},
         "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 2.0}}},
        {"TableName": plain, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}], key=lambda c: c["TableName"])
    r = client.batch_write_item(RequestItems={table: [{"DeleteRequest": {"Key": {"pk": _s("a")}}},
                                                      {"DeleteRequest": {"Key": {"pk": _s("never")}}}]},
                                ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 3.0}]
    r = client.transact_write_items(TransactItems=[
        {"Put": {"TableName": table, "Item": {"pk": _s("t"), "g": _s("x")}}},
        {"Update": {"TableName": table, "Key": {"pk": _s("b")}, "UpdateExpression": "SET g = :g",
                    "ExpressionAttributeValues": {":g": _s("y")}}}], ReturnConsumedCapacity="INDEXES")
    assert r["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 10.0, "WriteCapacityUnits": 10.0,
                                      "Table": {"CapacityUnits": 4.0},
                                      "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 6.0}}}]


def test_index_reads_report_only_the_index(client):
    table = _table(client, gsi=ALL, lsi=KEYS_ONLY)
    client.put_item(TableName=table, Item={"pk": _s("a"), "sk": {"N": "1"}, "g": _s("x"), "l": _s("y")})
    r = client.query(TableName=table, IndexName="byG", KeyConditionExpression="g = :g",
                     ExpressionAttributeValues={":g": _s("x")}, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 0.5, "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 0.5}}}
    r = client.scan(TableName=table, IndexName="byL", ConsistentRead=True, ReturnConsumedCapacity="INDEXES")
    assert _cc(r) == {"TableName": table, "CapacityUnits": 1.0, "LocalSecondaryIndexes": {"byL": {"CapacityUnits": 1.0}}}


# -- GSI capacity and back-pressure ---------------------------------------------------------------

def test_a_gsi_without_write_capacity_throttles_base_table_writes(live, client, caplog):
    # The table has 100 WCU (200 units of burst); the GSI has 1 WCU: 2 units of burst.
    table = _table(client, provisioned=(100, 100), gsi=KEYS_ONLY, gsi_rate=(100, 1))
    for k in ("a1", "a2"):
        client.put_item(TableName=table, Item={"pk": _s(k), "g": _s("x")})
    with caplog.at_level(logging.WARNING, logger="dynalocal.capacity"), pytest.raises(ClientError) as info:
        client.put_item(TableName=table, Item={"pk": _s("a3"), "g": _s("x")})
    reason = _error(info)
    assert reason == {"reason": "IndexWriteProvisionedThroughputExceeded",
                      "resource": f"arn:aws:dynamodb:us-east-1:000000000000:table/{table}/index/byG"}
    assert info.value.response["Error"]["Message"].startswith(INDEX_MESSAGE)
    lines = [r.getMessage() for r in caplog.records if table in r.getMessage()]
    assert len(lines) == 1 and "global secondary index byG" in lines[0] and "GlobalSecondaryIndexUpdates" in lines[0]
    assert "Item" not in client.get_item(TableName=table, Key={"pk": _s("a3")}), "a throttled write changes nothing"

    # Writes that leave the index alone still go through; the others are refused.
    client.put_item(TableName=table, Item={"pk": _s("b1")})
    client.update_item(TableName=table, Key={"pk": _s("a1")}, UpdateExpression="SET v = :v",
                       ExpressionAttributeValues={":v": _s("not projected")})
    refused = [
        lambda: client.update_item(TableName=table, Key={"pk": _s("a1")}, UpdateExpression="SET g = :g",
                                   ExpressionAttributeValues={":g": _s("y")}),
        lambda: client.delete_item(TableName=table, Key={"pk": _s("a2")}),
    ]
    for call in refused:
        with pytest.raises(ClientError) as info:
            call()
        assert _error(info)["reason"] == "IndexWriteProvisionedThroughputExceeded"
    with pytest.raises(ClientError) as info:
        client.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": {"pk": _s("t"), "g": _s("x")}}}])
    assert info.value.response["CancellationReasons"][0]["Code"] == "ProvisionedThroughputExceeded"
    r = client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": {"pk": _s("a4"), "g": _s("x")}}},
                                                      {"PutRequest": {"Item": {"pk": _s("b2")}}}]})
    assert r["UnprocessedItems"] == {table: [{"PutRequest": {"Item": {"pk": _s("a4"), "g": _s("x")}}}]}
    r = client.query(TableName=table, IndexName="byG", KeyConditionExpression="g = :g",
                     ExpressionAttributeValues={":g": _s("x")})
    assert sorted(i["pk"]["S"] for i in r["Items"]) == ["a1", "a2"]
    stats = _stats(live, table)
    assert stats["indexes"]["byG"][0]["write_throttle_events"] == 5
    assert stats["indexes"]["byG"][0]["write_units_consumed"] == 2.0
    # The base table records these refusals as GSI back-pressure, not as its own capacity's.
    assert sum(p["throttles_by_cause"]["write"].get("gsi_backpressure", 0) for p in stats["partitions"]) == 5
    assert all(set(p["throttles_by_cause"]["write"]) <= {"gsi_backpressure"} for p in stats["partitions"])

    live.clock.advance(1.0)  # 1 unit of GSI write capacity
    client.put_item(TableName=table, Item={"pk": _s("a3"), "g": _s("x")})
    client.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{"Update": {
        "IndexName": "byG", "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 40}}}])
    live.clock.advance(0.125)  # 5 units at the new rate
    for k in range(5):
        client.put_item(TableName=table, Item={"pk": _s(f"c{k}"), "g": _s("x")})
    with pytest.raises(ClientError):
        client.put_item(TableName=table, Item={"pk": _s("c5"), "g": _s("x")})


def test_on_demand_gsi_partitions_are_capped_at_1000_wcu(live, client):
    table = _table(client, gsi=ALL, partitions=4)
    keys = [k for (k,) in _keys_in_partitions(live, table, 4)]
    big = "y" * 400_000  # about 400 WCU in the table and in the index
    for k in keys[:3]:  # one write on each of three table partitions, all on one index partition: -200 WCU
        client.put_item(TableName=table, Item={"pk": _s(k), "g": _s("same"), "v": _s(big)})
    with pytest.raises(ClientError) as info:
        client.put_item(TableName=table, Item={"pk": _s(keys[3]), "g": _s("same")})
    assert _error(info, "ThrottlingException")["reason"] == "IndexWriteKeyRangeThroughputExceeded"
    assert info.value.response["Error"]["Message"].startswith(
        "Throughput exceeds the current capacity for one or more global secondary indexes.")
    client.put_item(TableName=table, Item={"pk": _s(keys[3]), "g": _s("other")})


def test_gsi_reads_consume_the_gsi_capacity(live, client):
    table = _table(client, provisioned=(100, 100), gsi=ALL, gsi_rate=(1, 100))  # 2 read units of burst
    client.put_item(TableName=table, Item={"pk": _s("a"), "g": _s("x")})

    def query_gsi():
        return client.query(TableName=table, IndexName="byG", KeyConditionExpression="g = :g",
                            ExpressionAttributeValues={":g": _s("x")})

    for _ in range(4):  # eventually consistent: 0.5 each
        assert query_gsi()["Count"] == 1
    with pytest.raises(ClientError) as info:
        query_gsi()
    assert _error(info)["reason"] == "IndexReadProvisionedThroughputExceeded"
    assert info.value.response["Error"]["Message"].startswith(INDEX_MESSAGE)
    with pytest.raises(ClientError) as info:
        client.scan(TableName=table, IndexName="byG")
    assert _error(info)["resource"].endswith(f"table/{table}/index/byG")
    assert client.query(TableName=table, KeyConditionExpression="pk = :p", ConsistentRead=True,
                        ExpressionAttributeValues={":p": _s("a")})["Count"] == 1, "the table has its own capacity"
    gsi = _stats(live, table)["indexes"]["byG"][0]
    assert gsi["read_units_consumed"] == 2.0 and gsi["read_throttle_events"] == 2 and gsi["hot_keys"][0]["key"] == "x"
    live.clock.advance(0.5)
    assert query_gsi()["Count"] == 1


# -- Scan ------------------------------------------------------------------------------------------

def test_scan_charges_each_partition_it_reads(live, client):
    # Two partitions of 1 RCU/s each, 2 units of burst each; four 2 KB items per partition.
    table = _table(client, provisioned=(2, 100), partitions=2)
    groups = _keys_in_partitions(live, table, 2, per_part=4)
    for keys in groups:
        for k in keys:
            client.put_item(TableName=table, Item={"pk": _s(k), "v": _s("x" * (2048 - 3 - len(k)))})
    r = client.scan(TableName=table, Limit=6, ConsistentRead=True, ReturnConsumedCapacity="TOTAL")
    assert r["Count"] == 6 and _cc(r)["CapacityUnits"] == 3.0  # 12 KB: 8 KB in one partition, 4 KB in the other
    stats = _stats(live, table)["partitions"]
    assert [p["read_units_consumed"] for p in stats] == [2.0, 1.0]
    with pytest.raises(ClientError) as info:  # partition 0 is spent: a Scan starting there is refused
        client.scan(TableName=table, ConsistentRead=True)
    assert _error(info)["reason"] == "TableReadProvisionedThroughputExceeded"
    assert info.value.response["Error"]["Message"].startswith(TABLE_MESSAGE)
    r = client.scan(TableName=table, Segment=1, TotalSegments=2, ConsistentRead=True)
    assert sorted(i["pk"]["S"] for i in r["Items"]) == sorted(groups[1]), "the other partition keeps serving"
    stats = _stats(live, table)["partitions"]
    assert [p["read_throttle_events"] for p in stats] == [1, 0] and stats[1]["read_units_consumed"] == 3.0
    live.clock.advance(1.0)
    assert client.scan(TableName=table, ConsistentRead=True)["Count"] == 8


# -- Batch operations ------------------------------------------------------------------------------

def test_batch_get_leaves_throttled_keys_unprocessed(live, client):
    table = _table(client, provisioned=(2, 100), partitions=2)  # 2 read units of burst per partition
    (hot,), (cold,) = _keys_in_partitions(live, table, 2)
    for k in (hot, cold):
        client.put_item(TableName=table, Item={"pk": _s(k), "v": _s("v")})
    for _ in range(2):
        client.get_item(TableName=table, Key={"pk": _s(hot)}, ConsistentRead=True)
    spec = {"ConsistentRead": True, "ProjectionExpression": "#p", "ExpressionAttributeNames": {"#p": "pk"}}
    r = client.batch_get_item(RequestItems={table: {"Keys": [{"pk": _s(hot)}, {"pk": _s(cold)}], **spec}},
                              ReturnConsumedCapacity="TOTAL")
    assert r["Responses"] == {table: [{"pk": _s(cold)}]}
    assert r["UnprocessedKeys"] == {table: {"Keys": [{"pk": _s(hot)}], **spec}}
    assert r["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 1.0}]
    with pytest.raises(ClientError) as info:  # nothing at all could be read: the call fails
        client.batch_get_item(RequestItems=r["UnprocessedKeys"])
    assert _error(info)["reason"] == "TableReadProvisionedThroughputExceeded"
    live.clock.advance(1.0)
    r = client.batch_get_item(RequestItems=r["UnprocessedKeys"])
    assert r["Responses"] == {table: [{"pk": _s(hot)}]} and r["UnprocessedKeys"] == {}


def test_batch_get_on_demand_fails_with_throttling_exception_when_all_throttled(live, client):
    table = _table(client, partitions=1)
    client.put_item(TableName=table, Item={"pk": _s("k"), "v": _s("y" * 409_000)})  # 100 RCU per read
    for _ in range(30):
        client.get_item(TableName=table, Key={"pk": _s("k")}, ConsistentRead=True)
    with pytest.raises(ClientError) as info:
        client.batch_get_item(RequestItems={table: {"Keys": [{"pk": _s("k")}], "ConsistentRead": True}})
    assert _error(info, "ThrottlingException")["reason"] == "TableReadKeyRangeThroughputExceeded"
    live.clock.advance(1.0)


def test_batch_write_leaves_throttled_items_unprocessed(live, client):
    table = _table(client, provisioned=(100, 2), partitions=2)  # 2 write units of burst per partition
    hot, cold = _keys_in_partitions(live, table, 2, per_part=3)
    for k in hot[:2]:
        client.put_item(TableName=table, Item={"pk": _s(k)})
    writes = [{"PutRequest": {"Item": {"pk": _s(hot[2])}}}, {"DeleteRequest": {"Key": {"pk": _s(hot[0])}}},
              {"PutRequest": {"Item": {"pk": _s(cold[0])}}}]
    r = client.batch_write_item(RequestItems={table: writes}, ReturnConsumedCapacity="TOTAL")
    assert r["UnprocessedItems"] == {table: writes[:2]}
    assert r["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 1.0}]
    assert "Item" in client.get_item(TableName=table, Key={"pk": _s(cold[0])})
    assert "Item" not in client.get_item(TableName=table, Key={"pk": _s(hot[2])})
    with pytest.raises(ClientError) as info:
        client.batch_write_item(RequestItems=r["UnprocessedItems"])
    assert _error(info)["reason"] == "TableWriteProvisionedThroughputExceeded"
    assert "Item" in client.get_item(TableName=table, Key={"pk": _s(hot[0])}), "nothing was deleted"


def test_batch_writer_completes_under_throttling():
    """boto3's batch_writer resubmits UnprocessedItems; the default retrying client handles calls
    refused outright. Server time runs 100 times faster than real time, so the table's 10 WCU
    (10 units of burst) refill at 1000 units per real second: 200 writes take under a second,
    and each 25-item request outruns the refill, so some writes are throttled."""

    class FastClock:
        def __init__(self) -> None:
            self.started = time.monotonic()

        def __call__(self) -> float:
            return 1000.0 + (time.monotonic() - self.started) * 100

    with LiveServer(Context(settings=Settings(burst_seconds=1.0), clock=FastClock())) as server:
        client = server.client()
        table = _table(client, provisioned=(10, 10), partitions=1)
        started = time.monotonic()
        with server.resource().Table(table).batch_writer() as writer:
            for i in range(200):
                writer.put_item(Item={"pk": f"item-{i}"})
        elapsed = time.monotonic() - started
        assert client.scan(TableName=table, Select="COUNT")["Count"] == 200
        stats = _stats(server, table)["partitions"][0]
        assert stats["write_throttle_events"] > 0 and stats["write_units_consumed"] == 200.0
        assert elapsed < 20, elapsed


def test_metrics_label_gsi_partitions_with_their_index(live, client):
    table = _table(client, gsi=ALL)
    client.put_item(TableName=table, Item={"pk": _s("a"), "g": _s("x")})
    with urllib.request.urlopen(f"{live.url}/_dynalocal/metrics") as resp:
        text = resp.read().decode()
    lines = [line for line in text.splitlines()
             if line.startswith(f'dynalocal_partition_write_units_total{{table="{table}",index="byG",partition="')]
    assert len(lines) == 4 and sum(float(line.rsplit(" ", 1)[1]) for line in lines) == 1.0
    assert sum(p["items"] for p in _stats(live, table)["indexes"]["byG"]) == 1
