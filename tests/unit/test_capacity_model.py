"""The adaptive capacity model on a fake clock: bursts, ceilings, table rates, classic shares,
on-demand growth and splits, warm throughput, on-demand maximums, the log and the records.

Requests go through the server's own dispatch (the same path as HTTP, without the socket), or,
for the long load simulations, straight through the per-request Charge the handlers use.
The figures asserted are the documented ones (storage/capacity/meter.py, README).
"""
from __future__ import annotations

import logging

import orjson
import pytest
from conftest import FakeClock as Clock
from conftest import capacity_args

from dynalocal.capacity import meter as model
from dynalocal.capacity import partition_meter
from dynalocal.capacity.report import snapshot
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

PREFIX = "DynamoDB_20120810."


def _server(**settings) -> tuple[Context, Clock]:
    clock = Clock()
    settings.setdefault("throttling", "enforce")  # these tests are about refusals of every kind
    return Context(settings=Settings(**settings), clock=clock), clock


def _call(ctx: Context, op: str, body: dict) -> tuple[int, dict]:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    return status, orjson.loads(out) if out else {}


def _ok(ctx: Context, op: str, body: dict) -> dict:
    status, out = _call(ctx, op, body)
    assert status == 200, out
    return out


def _create(ctx: Context, name: str, provisioned=None, partitions=None, classic=False, range_key=False,
            hash_type="S", **extra) -> str:
    keys = [{"AttributeName": "p", "KeyType": "HASH"}]
    defs = [{"AttributeName": "p", "AttributeType": hash_type}]
    if range_key:
        keys.append({"AttributeName": "c", "KeyType": "RANGE"})
        defs.append({"AttributeName": "c", "AttributeType": "N"})
    body: dict = {"TableName": name, "KeySchema": keys, "AttributeDefinitions": defs, **extra,
                  **capacity_args(provisioned, partitions, classic)}
    _ok(ctx, "CreateTable", body)
    return name


def _item(pk: str, kb: int, sk: int | None = None) -> dict:
    """An item of `kb` KB (write units), less a few bytes for the names."""
    item = {"p": {"S": pk}, "v": {"S": "x" * (kb * 1024 - 64)}}
    if sk is not None:
        item["c"] = {"N": str(sk)}
    return item


def _keys_by_partition(ctx: Context, table: str, count: int) -> list[str]:
    """One partition key value per partition of the table, in partition order."""
    t = ctx.db.tables[table].table
    found: dict[int, str] = {}
    i = 0
    while len(found) < count:
        key = f"k{i}"
        found.setdefault(t.partition_index(t.schema.partition_prefix(key)), key)
        i += 1
    return [found[p] for p in range(count)]


def _write(ctx: Context, table: str, key: str, units: float):
    """A write of `units` on partition key `key` through the handlers' Charge: None or the throttle."""
    entry = ctx.db.tables[table]
    ctx.capacity.settle()  # what the application does between requests: growth or a split asked for
    charge = ctx.capacity.charge(entry)
    prefix = entry.table.schema.partition_prefix(key)
    part = entry.table.partition_index(prefix)
    err = charge.refuse(model.WRITE, part)
    if err is None:
        charge.write(part, units, prefix)
    return err


def _reason(out: dict) -> str:
    reasons = out.get("ThrottlingReasons") or out.get("throttlingReasons")
    return reasons[0]["reason"]


# -- docs/behaviour/capacity.md §2: bursts DynamoDB accepts ----------------------------------------

def test_the_bursts_dynamodb_accepts_pass_even_from_an_infinitely_fast_client():
    ctx, _ = _server()  # the clock never moves: every request arrives at the same instant
    one_key = _create(ctx, "big-items", range_key=True)
    batch = [{"PutRequest": {"Item": _item("k", 49, i)}} for i in range(25)]  # 25 x 49 KB: 1 225 WCU
    assert _ok(ctx, "BatchWriteItem", {"RequestItems": {one_key: batch}})["UnprocessedItems"] == {}
    for i in range(25, 30):
        _ok(ctx, "PutItem", {"TableName": one_key, "Item": _item("k", 49, i)})

    same_key = _create(ctx, "one-key", range_key=True)  # 200 x 10 KB under one key: 2 000 WCU
    spread = _create(ctx, "spread", hash_type="N")  # 800 x 10 KB over 800 keys: 8 000 WCU
    for table, items in ((same_key, [_item("one", 10, i) for i in range(200)]),
                         (spread, [{"p": {"N": str(i)}, "v": {"S": "y" * (10 * 1024 - 64)}} for i in range(800)])):
        for i in range(0, len(items), 25):
            out = _ok(ctx, "BatchWriteItem", {"RequestItems": {table: [{"PutRequest": {"Item": it}}
                                                                        for it in items[i:i + 25]]}})
            assert out["UnprocessedItems"] == {}, f"{table}: throttled after {i} items"


def test_a_key_held_at_twice_the_ceiling_is_throttled_after_the_partition_burst():
    ctx, clock = _server()
    table = _create(ctx, "hot")
    start = clock.now
    while True:  # 20 WCU every 10 ms: 2 000 WCU/s on one key
        clock.now += 0.01
        status, out = _call(ctx, "PutItem", {"TableName": table, "Item": _item("hot", 20)})
        if status != 200:
            break
    # 5 000 WCU of burst drained at 1 000 WCU/s net: throttled after 5 s.
    assert 4.8 <= clock.now - start <= 5.3
    assert out["__type"].endswith("ThrottlingException")
    assert _reason(out) == "TableWriteKeyRangeThroughputExceeded"


def test_a_single_hot_key_stays_capped_at_the_ceiling_and_its_partition_does_not_split():
    ctx, clock = _server()
    table = _create(ctx, "capped")
    admitted_late = 0.0
    for step in range(12000):  # 120 s at 2 000 WCU/s on one key
        clock.now += 0.01
        if _write(ctx, table, "hot", 20.0) is None and step >= 6000:
            admitted_late += 20.0
    assert len(ctx.db.tables[table].table.partitions) == 4, "a split cannot separate one key's items"
    assert 0.95 * 60_000 <= admitted_late <= 1.05 * 60_000, "the last 60 s ran at the 1 000 WCU/s ceiling"


# -- provisioned tables: the table's rate, not a per-partition share -------------------------------

def _drive(ctx, clock, table, rates: dict[str, float], seconds: float, step: float = 0.1):
    """Write `rates[key]` WCU/s on each key for `seconds`; return the time of the first throttle."""
    for i in range(int(seconds / step)):
        clock.now += step
        for key, rate in rates.items():
            status, out = _call(ctx, "PutItem", {"TableName": table, "Item": _item(key, int(rate * step))})
            if status != 200:
                return i * step, out
    return None, None


def test_a_provisioned_table_over_its_rate_is_throttled_after_its_burst_with_a_table_reason():
    ctx, clock = _server(burst_seconds=20)  # 1 000 WCU/s, 20 000 units of burst
    table = _create(ctx, "over-rate", provisioned=(10, 1000), partitions=4)
    keys = _keys_by_partition(ctx, table, 4)
    # 1 600 WCU/s over four partitions: each at 400 WCU/s, far under its 1 000 WCU/s ceiling.
    when, out = _drive(ctx, clock, table, {k: 400.0 for k in keys}, 60)
    assert when is not None and 33.0 <= when <= 34.0, when  # 20 000 units drained at 600/s
    assert out["__type"].endswith("ProvisionedThroughputExceededException")
    assert _reason(out) == "TableWriteProvisionedThroughputExceeded"
    assert out["ThrottlingReasons"][0]["resource"].endswith(":table/over-rate")


@pytest.mark.parametrize("classic", [False, True])
def test_imbalance_under_the_table_rate_is_throttled_only_in_the_classic_model(classic):
    ctx, clock = _server(burst_seconds=20)
    table = _create(ctx, f"imbalance-{classic}", provisioned=(10, 400), partitions=4, classic=classic)
    hot, *cold = _keys_by_partition(ctx, table, 4)
    # 300 WCU/s in all, under the table's 400; the hot partition takes 150 (classic share: 100).
    when, out = _drive(ctx, clock, table, {hot: 150.0, **{k: 50.0 for k in cold}}, 120)
    if not classic:
        assert when is None, out
        return
    assert when is not None and 39.0 <= when <= 41.0, when  # 2 000 units of share burst drained at 50/s
    assert _reason(out) == "TableWriteProvisionedThroughputExceeded"


# -- on-demand growth and heat splits ----------------------------------------------------------------

def test_a_well_spread_on_demand_load_is_throttled_at_first_then_absorbed():
    ctx, clock = _server()
    table = _create(ctx, "bulk")
    throttles: list[float] = []
    start = clock.now
    for step in range(15000):  # 150 s of 10 000 WCU/s over 1 000 keys
        clock.now += 0.01
        for j in range(4):
            if _write(ctx, table, f"key-{(step * 4 + j) % 1000}", 25.0) is not None:
                throttles.append(clock.now - start)
    assert throttles and throttles[0] < 10, "past the warm throughput (4 000 WCU/s) plus burst: throttled"
    assert max(throttles) < 90, "doubling of the 30 s peak and splits absorb the load"
    m = ctx.capacity.meter(ctx.db.tables[table])
    assert m.ceiling[1] >= 10_000 and len(m.parts) >= 10
    status, out = _call(ctx, "DescribeTable", {"TableName": table})
    assert out["Table"]["WarmThroughput"]["WriteUnitsPerSecond"] >= 10_000


def test_the_on_demand_ceiling_doubles_once_the_peak_is_sustained_for_the_peak_window():
    ctx, clock = _server()
    table = _create(ctx, "ramp")
    m = ctx.capacity.meter(ctx.db.tables[table])
    assert m.ceiling == [12000.0, 4000.0]
    for step in range(model.PEAK_WINDOW * 100 + 100):  # 3 000 WCU/s, under the ceiling, for 31 s
        clock.now += 0.01
        assert _write(ctx, table, f"key-{step % 500}", 30.0) is None
    assert m.ceiling[1] == pytest.approx(6000.0, rel=0.02), "twice the sustained peak"
    assert len(ctx.db.tables[table].table.partitions) == 6


def test_a_hot_partition_of_many_keys_splits_after_the_documented_heat_time():
    ctx, clock = _server()
    table = _create(ctx, "split", provisioned=(10, 1500), partitions=2)
    t = ctx.db.tables[table].table
    keys = [k for k in (f"k{i}" for i in range(400)) if t.partition_index(t.schema.partition_prefix(k)) == 0][:50]
    seconds = 0
    while len(t.partitions) == 2:  # 900 WCU/s (90 % of the ceiling) on partition 0, spread over 50 keys
        for step in range(100):
            clock.now += 0.01
            _write(ctx, table, keys[step % 50], 9.0)
        seconds += 1
        assert seconds <= model.SPLIT_SECONDS + 2
    assert seconds >= model.SPLIT_SECONDS
    assert len(t.partitions) == 4
    m = ctx.capacity.meter(ctx.db.tables[table])
    assert m.splits == 1 and sum(len(p.keys) for p in m.parts) == 50, "key counts move with the split"


# -- warm throughput and on-demand maximums ------------------------------------------------------

def test_warm_throughput_sets_the_partition_count_and_is_described():
    ctx, _ = _server()
    table = _create(ctx, "warm", WarmThroughput={"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 9000},
                    GlobalSecondaryIndexes=[{"IndexName": "gsi", "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
                                             "Projection": {"ProjectionType": "KEYS_ONLY"},
                                             "WarmThroughput": {"WriteUnitsPerSecond": 6000}}])
    entry = ctx.db.tables[table]
    assert len(entry.table.partitions) == 9 and len(entry.table.indexes["gsi"].partitions) == 6
    described = _ok(ctx, "DescribeTable", {"TableName": table})["Table"]
    assert described["WarmThroughput"] == {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 9000,
                                           "Status": "ACTIVE"}
    assert described["GlobalSecondaryIndexes"][0]["WarmThroughput"] == {
        "ReadUnitsPerSecond": 18000, "WriteUnitsPerSecond": 6000, "Status": "ACTIVE"}
    assert described["OnDemandThroughput"] == {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": -1}
    _ok(ctx, "UpdateTable", {"TableName": table, "WarmThroughput": {"WriteUnitsPerSecond": 20000}})
    described = _ok(ctx, "DescribeTable", {"TableName": table})["Table"]
    assert described["WarmThroughput"]["WriteUnitsPerSecond"] == 20000
    assert described["WarmThroughput"]["ReadUnitsPerSecond"] == 15000
    assert len(entry.table.partitions) == 20
    plain = _create(ctx, "plain")
    assert _ok(ctx, "DescribeTable", {"TableName": plain})["Table"]["WarmThroughput"] == {
        "ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000, "Status": "ACTIVE"}


def test_on_demand_maximums_throttle_tables_and_indexes():
    ctx, clock = _server()
    table = _create(ctx, "capped-max", OnDemandThroughput={"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 10})
    served = 0
    while True:
        status, out = _call(ctx, "PutItem", {"TableName": table, "Item": {"p": {"S": f"k{served}"}}})
        if status != 200:
            break
        served += 1
    assert served == 10 and out["__type"].endswith("ThrottlingException")
    assert _reason(out) == "TableWriteMaxOnDemandThroughputExceeded"
    clock.now += 0.5
    assert _call(ctx, "PutItem", {"TableName": table, "Item": {"p": {"S": "later"}}})[0] == 200
    assert _ok(ctx, "DescribeTable", {"TableName": table})["Table"]["OnDemandThroughput"] == {
        "MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 10}
    _ok(ctx, "UpdateTable", {"TableName": table, "OnDemandThroughput": {"MaxWriteRequestUnits": -1}})
    for i in range(50):
        _ok(ctx, "PutItem", {"TableName": table, "Item": {"p": {"S": f"free{i}"}}})

    indexed = _create(ctx, "gsi-max", GlobalSecondaryIndexes=[{
        "IndexName": "gsi", "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"}, "OnDemandThroughput": {"MaxWriteRequestUnits": 2}}])
    for i in range(2):
        _ok(ctx, "PutItem", {"TableName": indexed, "Item": {"p": {"S": f"k{i}"}}})
    status, out = _call(ctx, "PutItem", {"TableName": indexed, "Item": {"p": {"S": "k2"}}})
    assert status == 400 and _reason(out) == "IndexWriteMaxOnDemandThroughputExceeded"


# -- the log and the records -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_the_log_is_a_rate_limited_summary_with_advice_for_the_mode(mode, caplog):
    ctx, clock = _server(throttling=mode, burst_seconds=1)
    table = _create(ctx, "logged", provisioned=(2, 2), partitions=1)
    with caplog.at_level(logging.WARNING, logger="dynalocal.capacity"):
        for _ in range(30):
            _call(ctx, "PutItem", {"TableName": table, "Item": {"p": {"S": "k"}}})
        assert len(caplog.records) == 1, "one line per table per interval"
        clock.now += 11
        for _ in range(30):
            _call(ctx, "PutItem", {"TableName": table, "Item": {"p": {"S": "k"}}})
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "table_rate" in lines[1] and "hottest key there: k" in lines[1] and "UpdateTable" in lines[1]
    if mode == "enforce":
        assert lines[0].startswith("throttled table logged") and "--throttling report" in lines[0]
    else:
        assert lines[0].startswith("would have throttled") and "start dynalocal with" not in lines[0]
    # 2 units of burst: 2 writes admitted, 28 throttled, then 2 and 28 again after 11 s. The first
    # line reports the first throttle; the second the 27 after it and the first one after 11 s.
    assert lines[0].split(": ", 1)[1].startswith("1 write (table_rate)"), lines[0]
    assert lines[1].split(": ", 1)[1].startswith("28 writes (table_rate)"), lines[1]


def test_the_records_count_every_key_exactly_and_follow_the_contract():
    ctx, clock = _server(burst_seconds=2)
    table = _create(ctx, "records", provisioned=(5, 5), partitions=2)
    for i in range(12):
        _call(ctx, "PutItem", {"TableName": table, "Item": {"p": {"S": "a" if i % 3 else "b"}}})
    clock.now += 1
    _call(ctx, "GetItem", {"TableName": table, "Key": {"p": {"S": "a"}}, "ConsistentRead": True})
    data = snapshot(ctx.capacity, ctx.db, table)
    assert data["window_seconds"] == 300 and data["second"] == int(clock.now)
    meter = data["tables"][table]["table"]
    assert meter["provisioned"] == {"read": 5.0, "write": 5.0} and meter["partition_count"] == 2
    totals = meter["totals"]
    assert totals["writes"] == 10 and totals["write_units"] == 10.0 and totals["reads"] == 1
    assert totals["write_burst_units"] == 5.0, "10 units in one second at 5 WCU/s: 5 only thanks to burst"
    assert meter["throttles"]["write"] == {"table_rate": 2}
    assert meter["per_second"]["write_units"][-2:] == [10.0, 0.0]
    assert meter["per_second"]["write_throttles"][-2:] == [2, 0]
    keys = {k["key"]: k for p in meter["partitions"] for k in p["keys"]}
    assert (keys["a"]["writes"], keys["a"]["write_units"], keys["a"]["reads"], keys["a"]["read_units"]) == (6, 6.0, 1, 1.0)
    assert (keys["b"]["writes"], keys["b"]["write_units"]) == (4, 4.0)
    assert sum(p["totals"]["writes"] for p in meter["partitions"]) == 10
    assert len(meter["partitions"][0]["per_second"]["read_units"]) == 300


def test_key_counts_keep_memory_bounded_by_folding_the_coldest_half():
    ctx, _ = _server(throttling="off")
    table = _create(ctx, "many-keys", provisioned=(1, 1))  # one partition
    for i in range(partition_meter.KEY_LIMIT + 1):
        _write(ctx, table, f"k{i}", 1.0 if i else 5.0)
    m = ctx.capacity.meter(ctx.db.tables[table])
    m.flush()  # charges wait in the meter's log until something reads the records
    (part,) = m.parts
    assert len(part.keys) == partition_meter.KEY_LIMIT // 2 + 1 and part.folded == partition_meter.KEY_LIMIT // 2
    assert part.other[1] == partition_meter.KEY_LIMIT // 2, "folded keys' units are kept in `other`"
    assert any(pk[10:] == b"k0" for pk in part.keys), "the hottest key is kept"


def test_partitions_fold_their_key_counts_at_staggered_limits_not_all_in_one_flush(monkeypatch):
    """New keys spread evenly over many partitions: equal limits would fold every partition in the
    same flush (a stall of hundreds of folds); staggered ones fold a few at a time."""
    m = model.Meter("t", None, 334, None, False, 300.0, 5.0, (1e6, 250_000.0), (None, None), 0.0)
    limits = [p.limit for p in m.parts]
    assert limits[0] == partition_meter.KEY_LIMIT and min(limits) == partition_meter.KEY_LIMIT
    assert max(limits) < partition_meter.KEY_LIMIT * 3 // 2 and len(set(limits)) > 300
    folds: list[int] = []  # folds per drain of the log (each LOG_LIMIT charges)
    fold, drain = partition_meter.PartMeter.fold, model.Meter._drain

    def counted_fold(self):
        folds[-1] += 1
        fold(self)

    def counted_drain(self):
        folds.append(0)
        drain(self)

    monkeypatch.setattr(partition_meter.PartMeter, "fold", counted_fold)
    monkeypatch.setattr(model.Meter, "_drain", counted_drain)
    for i in range(334 * 1600):  # every partition passes its limit, round-robin: the most even load
        m.charge(model.WRITE, i % 334, 1.0, i.to_bytes(8, "big"), 0.5)
    m.flush()
    assert sum(folds) >= 334, "every partition folded"
    assert max(folds) <= 4, f"at most a few folds per drain, got {max(folds)}"
    assert all(len(p.keys) <= p.limit for p in m.parts)


def test_meters_of_tables_dropped_without_delete_table_are_released():
    ctx, _ = _server()
    for name in ("gone-1", "gone-2"):
        _create(ctx, name)
    ctx.db.tables.clear()  # what POST /_dynalocal/reset does
    _create(ctx, "gone-1")  # the same name again: a new table with new meters
    assert set(ctx.capacity.tables) == {"gone-1"}
    assert ctx.capacity.tables["gone-1"].entry is ctx.db.tables["gone-1"]


def test_a_provisioned_gsi_short_of_write_capacity_throttles_base_writes_in_the_adaptive_model():
    ctx, clock = _server(burst_seconds=2)
    _ok(ctx, "CreateTable", {
        "TableName": "backpressure", "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}],
        "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
        "GlobalSecondaryIndexes": [{"IndexName": "byg", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                                    "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}]})
    for i in range(2):  # the GSI's 2 units of burst
        _ok(ctx, "PutItem", {"TableName": "backpressure", "Item": {"p": {"S": f"k{i}"}, "g": {"S": "x"}}})
    status, out = _call(ctx, "PutItem", {"TableName": "backpressure", "Item": {"p": {"S": "k2"}, "g": {"S": "x"}}})
    assert status == 400 and _reason(out) == "IndexWriteProvisionedThroughputExceeded"
    assert out["ThrottlingReasons"][0]["resource"].endswith(":table/backpressure/index/byg")
    _ok(ctx, "PutItem", {"TableName": "backpressure", "Item": {"p": {"S": "k3"}}})  # not in the index: served
    data = snapshot(ctx.capacity, ctx.db, "backpressure")["tables"]["backpressure"]
    assert data["table"]["throttles"]["write"] == {"gsi_backpressure": 1}
    assert data["indexes"]["byg"]["throttles"]["write"] == {"table_rate": 1}
    clock.now += 1  # one GSI unit refilled
    _ok(ctx, "PutItem", {"TableName": "backpressure", "Item": {"p": {"S": "k2"}, "g": {"S": "x"}}})


def test_split_partitions_split_again_while_their_many_keys_stay_hot():
    ctx, clock = _server()
    table = _create(ctx, "resplit", provisioned=(10, 1500), partitions=2)
    t = ctx.db.tables[table].table
    keys = [f"k{i}" for i in range(400)]
    for second in range(2 * model.SPLIT_SECONDS + 5):  # 900 WCU/s on each partition, many keys each
        for step in range(100):
            clock.now += 0.01
            for key in (keys[(second * 100 + step) % 400], keys[(second * 100 + step + 200) % 400]):
                _write(ctx, table, key, 9.0 * len(t.partitions) / 2)
    assert len(t.partitions) == 8, "each split doubles the partitions while they stay hot"
