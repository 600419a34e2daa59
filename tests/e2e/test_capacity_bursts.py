"""docs/behaviour/capacity.md §2 against a default server through boto3, retries off: the bursts Amazon
DynamoDB accepts are accepted, and WarmThroughput / OnDemandThroughput travel through botocore.

The server runs with default options (enforce, adaptive, 5 s partition burst) and the real
clock: however fast or slow the machine, the bursts must pass (a slower client only helps).
"""
from __future__ import annotations

import pytest
from conftest import LiveServer


@pytest.fixture(scope="module")
def client():
    with LiveServer() as live:
        yield live.client(retries={"total_max_attempts": 1, "mode": "standard"})


_names = iter(range(10**6))


def _table(client, hash_type="S", range_key=True, **extra) -> str:
    name = f"burst-{next(_names)}"
    keys = [{"AttributeName": "p", "KeyType": "HASH"}]
    defs = [{"AttributeName": "p", "AttributeType": hash_type}]
    if range_key:
        keys.append({"AttributeName": "c", "KeyType": "RANGE"})
        defs.append({"AttributeName": "c", "AttributeType": "N"})
    client.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=defs, BillingMode="PAY_PER_REQUEST",
                        **extra)
    return name


def _write_all(client, table, items) -> None:
    for i in range(0, len(items), 25):
        r = client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": it}} for it in items[i:i + 25]]})
        assert not r.get("UnprocessedItems"), f"throttled after {i} items"


def test_one_batch_of_25_items_of_49_kb_under_one_partition_key(client):
    table = _table(client)
    big = "x" * 49_000
    _write_all(client, table, [{"p": {"S": "k"}, "c": {"N": str(i)}, "v": {"S": big}} for i in range(25)])
    for i in range(25, 30):
        client.put_item(TableName=table, Item={"p": {"S": "k"}, "c": {"N": str(i)}, "v": {"S": big}})


def test_200_items_of_10_kb_under_one_partition_key_in_batches_of_25(client):
    """What batch_writer() sends; here every UnprocessedItems is a failure (batch_writer would hide it)."""
    table = _table(client)
    ten_kb = "y" * 10_240
    _write_all(client, table, [{"p": {"S": "one"}, "c": {"N": str(i)}, "s": {"S": ten_kb}} for i in range(200)])


def test_800_items_of_10_kb_over_800_keys_as_fast_as_one_client_writes(client):
    table = _table(client, hash_type="N", range_key=False)
    ten_kb = "y" * 10_240
    _write_all(client, table, [{"p": {"N": str(i)}, "s": {"S": ten_kb}} for i in range(800)])


def test_warm_throughput_and_on_demand_maximums_round_trip_through_botocore(client):
    table = _table(client, WarmThroughput={"ReadUnitsPerSecond": 24000, "WriteUnitsPerSecond": 8000},
                   OnDemandThroughput={"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": -1})
    described = client.describe_table(TableName=table)["Table"]
    assert described["WarmThroughput"] == {"ReadUnitsPerSecond": 24000, "WriteUnitsPerSecond": 8000,
                                           "Status": "ACTIVE"}
    assert described["OnDemandThroughput"] == {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": -1}
    client.update_table(TableName=table, WarmThroughput={"WriteUnitsPerSecond": 12000})
    assert client.describe_table(TableName=table)["Table"]["WarmThroughput"]["WriteUnitsPerSecond"] == 12000
