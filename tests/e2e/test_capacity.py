"""ConsumedCapacity figures and per-partition throttling, with an injected clock (no sleeping)."""
from __future__ import annotations

import json
import logging
import urllib.request

import pytest
from botocore.exceptions import ClientError
from conftest import FakeClock, LiveServer, capacity_args

from dynalocal.config import Settings
from dynalocal.engine.context import Context


def _server(throttling: str = "enforce", burst: float = 2.0):
    clock = FakeClock()
    live = LiveServer(Context(settings=Settings(throttling=throttling, burst_seconds=burst, partition_burst_seconds=1.0),
                              clock=clock))
    live.clock = clock
    return live


@pytest.fixture(scope="module")
def live():
    with _server() as s:
        yield s


@pytest.fixture(scope="module")
def client(live):
    return live.client(retries={"total_max_attempts": 1, "mode": "standard"})


_names = iter(range(10**6))


def _table(client, provisioned=None, partitions=None, range_key=False, classic=False):
    name = f"cap-{next(_names)}"
    kwargs = capacity_args(provisioned, partitions, classic)
    keys = [{"AttributeName": "id", "KeyType": "HASH"}]
    defs = [{"AttributeName": "id", "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
        defs.append({"AttributeName": "sk", "AttributeType": "N"})
    client.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=defs, **kwargs)
    return name


def _units(resp):
    return resp["ConsumedCapacity"]["CapacityUnits"]


def _item(key: str, total_size: int) -> dict:
    """An item of exactly `total_size` bytes: 'id' (2) + key + 'v' (1) + padding."""
    pad = total_size - 2 - len(key) - 1
    return {"id": {"S": key}, "v": {"S": "x" * pad}}


@pytest.mark.parametrize("size,units", [(1, 1.0), (1024, 1.0), (1025, 2.0), (2048, 2.0), (5000, 5.0), (409_600, 400.0)])
def test_put_item_write_units_round_up_per_kilobyte(client, size, units):
    table = _table(client)
    item = _item("k", max(size, 4)) if size > 4 else {"id": {"S": "k"}}
    r = client.put_item(TableName=table, Item=item, ReturnConsumedCapacity="TOTAL")
    assert _units(r) == units
    assert r["ConsumedCapacity"]["TableName"] == table


@pytest.mark.parametrize("size,consistent,units", [(4096, True, 1.0), (4097, True, 2.0), (4096, False, 0.5),
                                                   (4097, False, 1.0), (12_288, True, 3.0)])
def test_get_item_read_units_round_up_per_4kb(client, size, consistent, units):
    table = _table(client)
    client.put_item(TableName=table, Item=_item("k", size))
    r = client.get_item(TableName=table, Key={"id": {"S": "k"}}, ConsistentRead=consistent, ReturnConsumedCapacity="TOTAL")
    assert _units(r) == units


def test_missing_items_cost_the_minimum(client):
    table = _table(client)
    assert _units(client.get_item(TableName=table, Key={"id": {"S": "no"}}, ReturnConsumedCapacity="TOTAL")) == 0.5
    assert _units(client.get_item(TableName=table, Key={"id": {"S": "no"}}, ConsistentRead=True,
                                  ReturnConsumedCapacity="TOTAL")) == 1.0
    assert _units(client.delete_item(TableName=table, Key={"id": {"S": "no"}}, ReturnConsumedCapacity="TOTAL")) == 1.0


def test_overwrites_and_deletes_cost_the_larger_item(client):
    table = _table(client)
    client.put_item(TableName=table, Item=_item("k", 2100))
    r = client.put_item(TableName=table, Item={"id": {"S": "k"}}, ReturnConsumedCapacity="TOTAL")
    assert _units(r) == 3.0, "a tiny put replacing a 2100-byte item costs W(max(old, new))"
    assert _units(client.put_item(TableName=table, Item={"id": {"S": "k"}}, ReturnConsumedCapacity="TOTAL")) == 1.0
    client.put_item(TableName=table, Item=_item("k", 2500))
    assert _units(client.delete_item(TableName=table, Key={"id": {"S": "k"}}, ReturnConsumedCapacity="TOTAL")) == 3.0


def test_indexes_mode_reports_the_table_breakdown(client):
    table = _table(client)
    r = client.put_item(TableName=table, Item={"id": {"S": "k"}}, ReturnConsumedCapacity="INDEXES")
    assert r["ConsumedCapacity"] == {"TableName": table, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    r = client.put_item(TableName=table, Item={"id": {"S": "k"}}, ReturnConsumedCapacity="NONE")
    assert "ConsumedCapacity" not in r


def _is_throttle(err: ClientError, code: str = "ProvisionedThroughputExceededException") -> bool:
    return err.response["Error"]["Code"] == code and err.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def _reads_until_throttled(client, table, key="k", limit=10_000):
    for served in range(limit):
        try:
            client.get_item(TableName=table, Key={"id": {"S": key}}, ConsistentRead=True)
        except ClientError as err:
            return served, err
    return limit, None


def test_burst_then_refill_at_the_partition_share(live, client):
    table = _table(client, provisioned=(10, 10), partitions=1)  # 10 RCU/s, burst 2 s = 20 units
    client.put_item(TableName=table, Item={"id": {"S": "k"}})
    served, err = _reads_until_throttled(client, table)
    assert served == 20 and _is_throttle(err)
    assert err.response["ThrottlingReasons"][0]["reason"] == "TableReadProvisionedThroughputExceeded"
    assert "provisioned throughput for the table was exceeded" in err.response["Error"]["Message"]
    live.clock.advance(0.5)  # refills 5 units
    served, err = _reads_until_throttled(client, table)
    assert served == 5 and err is not None
    live.clock.advance(100)  # refill never exceeds the burst capacity
    served, _ = _reads_until_throttled(client, table)
    assert served == 20


def test_throttled_writes_change_nothing(live, client):
    table = _table(client, provisioned=(10, 1), partitions=1)  # burst: 2 write units
    client.put_item(TableName=table, Item={"id": {"S": "a"}})
    client.put_item(TableName=table, Item={"id": {"S": "b"}})
    with pytest.raises(ClientError) as info:
        client.put_item(TableName=table, Item={"id": {"S": "c"}})
    assert _is_throttle(info.value)
    assert info.value.response["ThrottlingReasons"][0]["reason"] == "TableWriteProvisionedThroughputExceeded"
    assert "Item" not in client.get_item(TableName=table, Key={"id": {"S": "c"}})


def test_adaptive_model_lets_one_partition_use_the_whole_table_rate(live, client):
    """Adaptive capacity: imbalance alone is not throttled; the table's rate (and burst) is the cap."""
    table = _table(client, provisioned=(30, 100), partitions=3)  # 30 RCU/s, 60 units of burst in all
    keys = [f"key-{i}" for i in range(30)]
    for k in keys:
        client.put_item(TableName=table, Item={"id": {"S": k}})
    served, err = _reads_until_throttled(client, table, keys[0])
    assert served == 60 and _is_throttle(err)
    assert err.response["ThrottlingReasons"][0]["reason"] == "TableReadProvisionedThroughputExceeded"
    with pytest.raises(ClientError) as info:  # the table's capacity is spent: every partition refuses
        client.get_item(TableName=table, Key={"id": {"S": keys[1]}}, ConsistentRead=True)
    assert _is_throttle(info.value)


def test_classic_model_gives_each_partition_a_share_and_cold_partitions_keep_serving(live, client):
    table = _table(client, provisioned=(30, 100), partitions=3, classic=True)  # 10 RCU/s, 20 units burst each
    keys = [f"key-{i}" for i in range(30)]
    for k in keys:
        client.put_item(TableName=table, Item={"id": {"S": k}})
    served, err = _reads_until_throttled(client, table, keys[0])
    assert served == 20 and err is not None
    ok = refused = 0
    for k in keys[1:]:
        try:
            client.get_item(TableName=table, Key={"id": {"S": k}}, ConsistentRead=True)
            ok += 1
        except ClientError:
            refused += 1
    assert ok and refused, "other keys of the hot partition are refused, keys of other partitions served"
    with urllib.request.urlopen(f"{live.url}/_dynalocal/tables/{table}/partitions") as resp:
        stats = json.loads(resp.read())["partitions"]
    assert len(stats) == 3 and sum(p["items"] for p in stats) == 30
    hot = [p for p in stats if p["read_throttle_events"]]
    assert len(hot) == 1 and hot[0]["hot_keys"][0]["key"] == "key-0"
    assert hot[0]["read_units_consumed"] == 20.0 and hot[0]["read_capacity_per_second"] == 10.0


def test_update_table_changes_rates_at_once(live, client):
    table = _table(client, provisioned=(1, 1), partitions=1)
    client.put_item(TableName=table, Item={"id": {"S": "k"}})
    served, err = _reads_until_throttled(client, table)
    assert served == 2 and err is not None
    client.update_table(TableName=table, ProvisionedThroughput={"ReadCapacityUnits": 100, "WriteCapacityUnits": 1})
    live.clock.advance(0.1)  # 10 units at the new rate
    served, _ = _reads_until_throttled(client, table)
    assert served == 10


def test_on_demand_partitions_are_capped_at_3000_rcu_and_1000_wcu(live, client):
    table = _table(client, partitions=1)
    client.put_item(TableName=table, Item=_item("k", 409_600))  # 400 WCU; 100 RCU per consistent read
    served, err = _reads_until_throttled(client, table)
    assert served == 30 and _is_throttle(err, "ThrottlingException")
    assert err.response["throttlingReasons"][0]["reason"] == "TableReadKeyRangeThroughputExceeded"
    live.clock.advance(1)
    writes = 0
    with pytest.raises(ClientError) as info:
        for _ in range(10):
            client.put_item(TableName=table, Item=_item("k", 409_600))
            writes += 1
    # 400 WCU against a full 1000 WCU bucket: 1000 -> 600 -> 200 -> -200, then refused.
    assert writes == 3 and _is_throttle(info.value, "ThrottlingException")


def test_report_mode_never_refuses_but_records(caplog):
    with _server(throttling="report") as live:
        client = live.client(retries={"total_max_attempts": 1, "mode": "standard"})
        table = _table(client, provisioned=(1, 1), partitions=1)
        client.put_item(TableName=table, Item={"id": {"S": "k"}})
        with caplog.at_level(logging.WARNING, logger="dynalocal.capacity"):
            served, err = _reads_until_throttled(client, table, limit=50)
        assert served == 50 and err is None
        with urllib.request.urlopen(f"{live.url}/_dynalocal/tables/{table}/partitions") as resp:
            stats = json.loads(resp.read())["partitions"]
        assert stats[0]["read_throttle_events"] == 48
        lines = [r.getMessage() for r in caplog.records if "would have throttled" in r.getMessage()]
        assert len(lines) == 1 and table in lines[0] and "UpdateTable" in lines[0]


def test_off_mode_never_throttles():
    with _server(throttling="off") as live:
        client = live.client(retries={"total_max_attempts": 1, "mode": "standard"})
        table = _table(client, provisioned=(1, 1), partitions=1)
        client.put_item(TableName=table, Item={"id": {"S": "k"}})
        served, err = _reads_until_throttled(client, table, limit=50)
        assert served == 50 and err is None


def test_metrics_endpoint_speaks_prometheus(live, client):
    table = _table(client, partitions=2)
    client.put_item(TableName=table, Item={"id": {"S": "k"}})
    with urllib.request.urlopen(f"{live.url}/_dynalocal/metrics") as resp:
        text = resp.read().decode()
    assert "# TYPE dynalocal_partition_items gauge" in text
    assert f'dynalocal_partition_write_units_total{{table="{table}",partition="' in text
    assert sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(f'dynalocal_partition_items{{table="{table}"')) == 1


def _metric(text: str, prefix: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(line.rsplit(" ", 1)[1])


def test_metrics_show_limits_and_throttles_by_cause():
    with _server(burst=0.0) as live:
        client = live.client(retries={"total_max_attempts": 1, "mode": "standard"})
        table = _table(client, provisioned=(4, 6), partitions=2, classic=True)
        client.put_item(TableName=table, Item={"id": {"S": "k"}})
        _, err = _reads_until_throttled(client, table, limit=50)
        assert err is not None
        with urllib.request.urlopen(f"{live.url}/_dynalocal/metrics") as resp:
            text = resp.read().decode()
    labels = f'table="{table}"'
    assert _metric(text, f'dynalocal_table_limit_units_per_second{{{labels},direction="read"}}') == 4
    assert _metric(text, f'dynalocal_table_limit_units_per_second{{{labels},direction="write"}}') == 6
    # classic model: each of the 2 partitions sustains half the provisioned rate
    assert _metric(text, f'dynalocal_partition_limit_units_per_second{{{labels},partition="0",direction="read"}}') == 2
    assert _metric(text, f'dynalocal_partition_limit_units_per_second{{{labels},partition="1",direction="write"}}') == 3
    throttled = [line for line in text.splitlines()
                 if line.startswith(f"dynalocal_partition_throttles_by_cause_total{{{labels},")]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in throttled if 'direction="read"' in line) >= 1
    assert all('cause="' in line for line in throttled)
    assert '"k"' not in text  # no key values: the endpoint is open to anyone who can reach the server


def test_metrics_on_demand_limits_are_the_table_ceiling(live, client):
    table = _table(client)
    with urllib.request.urlopen(f"{live.url}/_dynalocal/metrics") as resp:
        text = resp.read().decode()
    labels = f'table="{table}"'
    assert _metric(text, f'dynalocal_table_limit_units_per_second{{{labels},direction="read"}}') == 12000
    assert _metric(text, f'dynalocal_table_limit_units_per_second{{{labels},direction="write"}}') == 4000
    assert _metric(text, f'dynalocal_partition_limit_units_per_second{{{labels},partition="0",direction="write"}}') == 1000
