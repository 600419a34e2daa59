"""Figures from the capacity module's snapshot (its documented read API), without a server."""
from __future__ import annotations

from dynalocal.diagnosis.collect import WINDOW, figures_from_snapshot
from dynalocal.diagnosis.engine import HOT_KEY, diagnose
from dynalocal.diagnosis.figures import GSI_BACK_PRESSURE, PARTITION_CEILING, TABLE_RATE

RING = 300


def series(values: dict[int, float]) -> list:
    """A 300-slot per-second list, oldest first, with `values` at offsets from the end (-1 = now)."""
    out = [0.0] * RING
    for offset, value in values.items():
        out[offset] = value
    return out


def pair(read, write):
    return {"read": read, "write": write}


def totals(read=0.0, write=0.0, reads=0, writes=0, write_burst=0.0):
    return {"read_units": read, "write_units": write, "reads": reads, "writes": writes,
            "read_burst_units": 0.0, "write_burst_units": write_burst}


def partition(i, write_units: dict, write_throttles: dict, keys, throttles=None):
    return {"index": i, "token_range": ["0", "1"], "items": 3, "size_bytes": 300, "since": 0.0,
            "totals": totals(write=sum(write_units.values()), writes=int(sum(write_units.values()))),
            "throttles": pair({}, throttles or {}),
            "per_second": {"read_units": series({}), "write_units": series(write_units),
                           "read_throttles": series({}), "write_throttles": series(write_throttles)},
            "keys": keys, "other_keys": {}, "keys_folded": 0, "hot_seconds": 0}


def key(name, write_units, writes):
    return {"key": name, "key_type": "S", "read_units": 0.0, "write_units": write_units, "reads": 0,
            "writes": writes, "last_second": 0}


def snapshot():
    hot = {-10: 1500.0, -9: 1500.0, -8: 1000.0, -7: 1000.0}  # 4 busy seconds, then 6 idle ones
    parts = [partition(0, hot, {-8: 40, -7: 60}, [key("2024-11-23", 5000.0, 5000)], {"key_range": 100}),
             partition(1, {-9: 10.0}, {}, [key("2024-11-22", 10.0, 10)])]
    table = {"table": "orders", "index": None, "billing_mode": "PROVISIONED", "model": "adaptive",
             "provisioned": pair(100.0, 5000.0), "ceiling": None, "peak": None,
             "max_on_demand": pair(None, None), "partition_ceiling": pair(3000.0, 1000.0), "partition_count": 2,
             "heat_splits": 0, "since": 1000.0, "totals": totals(write=5010.0),
             "throttles": pair({}, {"key_range": 100, "gsi_backpressure": 7}),
             "per_second": {"read_units": series({}), "write_units": series({**hot, -9: 1510.0}),
                            "read_throttles": series({}), "write_throttles": series({-8: 40, -7: 60})},
             "partitions": parts}
    return {"now": 1300.5, "second": 1300, "window_seconds": RING,
            "settings": {"throttling": "enforce", "model": "adaptive", "burst_seconds": 300.0,
                         "partition_burst_seconds": 5.0},
            "tables": {"orders": {"table": table, "indexes": {}}}}


def test_figures_follow_the_snapshot_contract():
    figures = figures_from_snapshot(snapshot(), {("orders", None, "write"): 1234.0})
    reads, writes = figures
    assert (reads.direction, writes.direction) == ("read", "write")
    assert writes.limit == 5000.0 and writes.limit_kind == TABLE_RATE and writes.burst_balance == 1234.0
    assert writes.window == 4.0  # first to last second with traffic, within the last WINDOW seconds
    assert writes.elapsed == 300.5
    assert writes.throttles == {PARTITION_CEILING: 100, GSI_BACK_PRESSURE: 7}
    hot = writes.partitions[0]
    assert (hot.units, hot.window_units, hot.peak, hot.ceiling) == (5000.0, 5000.0, 1500.0, 1000.0)
    assert hot.series == [(1500.0, 0), (1500.0, 0), (1000.0, 40), (1000.0, 60)]
    assert hot.keys[0].key == "2024-11-23" and hot.keys[0].requests == 5000
    assert reads.window == 0.0 and reads.partitions[0].keys == []
    assert WINDOW == 60


def test_engine_on_collected_figures():
    [report] = diagnose(figures_from_snapshot(snapshot()))
    v = report.verdict
    assert (v.kind, v.key, v.partition) == (HOT_KEY, "2024-11-23", 0)
    # Asked for: 5010 WCU consumed + 100 refused writes of 1 WCU (the mean) over 4 s = 1277.5 WCU/s;
    # partition 0 asked for 1275 and sustains 1000 -> 275 / 1277.5 of the traffic throttled.
    assert v.projection.rate == 1275.0
    assert round(v.projection.throttled_share, 4) == round(275 / 1277.5, 4)
