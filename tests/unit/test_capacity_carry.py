"""Records survive re-partitioning: random charges with random splits keep the partitions'
totals equal to what was admitted, per second too, and no key's share of its partition above 100 %."""
from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FakeClock, capacity_args
from dynalocal.capacity.meter import Meter
from dynalocal.capacity.partition_meter import RING
from dynalocal.config import Settings
from dynalocal.diagnosis.collect import collect
from dynalocal.diagnosis.engine import diagnose
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch


def _pk(i: int) -> bytes:
    raw = f"key-{i}".encode()
    token = (i * 0x9E3779B97F4A7C15) % (1 << 64)
    return token.to_bytes(8, "big") + len(raw).to_bytes(2, "big") + raw


def _owner(count: int):
    return lambda pk: (int.from_bytes(pk[:8], "big") * count) >> 64


STEP = st.one_of(
    st.tuples(st.just("charge"), st.integers(0, 1), st.integers(0, 40), st.floats(0.5, 50.0)),
    st.tuples(st.just("tick"), st.floats(0.01, 3.0)),
    st.tuples(st.just("split"), st.integers(1, 3)),
    st.tuples(st.just("scan"), st.integers(0, 1), st.floats(0.5, 20.0)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=300))
def test_random_traffic_with_random_splits_keeps_totals_and_shares(steps) -> None:
    now = 1000.0
    m = Meter("t", None, 1, None, False, 300.0, 5.0, None, (None, None), now)
    admitted = [0.0, 0.0]
    per_key: dict[bytes, list[float]] = {}
    for step in steps:
        if step[0] == "charge":
            _, d, k, units = step
            pk = _pk(k)
            p = _owner(len(m.parts))(pk)
            m.charge(d, p, units, pk, now)
            admitted[d] += units
            per_key.setdefault(pk, [0.0, 0.0])[d] += units
        elif step[0] == "scan":  # units with no partition key (a Scan page)
            _, d, units = step
            m.charge(d, 0, units, None, now)
            admitted[d] += units
        elif step[0] == "tick":
            now += step[1]
        else:
            count = min(len(m.parts) * 2 ** step[1], 64)
            m.resize(count, now, _owner(count))
    units, _, _ = m.totals()
    sec = int(now)
    for d in (0, 1):
        parts = sum(p.units[d] for p in m.parts)
        assert abs(units[d] - admitted[d]) <= 1e-6 * max(1.0, admitted[d])
        assert abs(parts - admitted[d]) <= 1e-6 * max(1.0, admitted[d])
        for p in m.parts:  # a key's units never exceed its partition's: shares within 100 %
            keyed = sum(c[d] for c in p.keys.values()) + p.other[d]
            assert keyed <= p.units[d] * (1 + 1e-9) + 1e-9
        for s in range(sec - RING + 1, sec + 1):  # per second: the partitions add up to the meter
            for p in m.parts:
                if p.sec != sec:
                    p.roll(sec)
            if m.sec != sec:
                m.roll(sec)
            total = sum(p.ring[d][s % RING] for p in m.parts)
            assert abs(total - m.ring[d][s % RING]) <= 1e-6 * max(1.0, total)
    for pk, counts in per_key.items():  # every key's counts moved, exactly, to the partition owning it
        owner = m.parts[_owner(len(m.parts))(pk)]
        assert owner.keys[pk][0] == pytest.approx(counts[0])
        assert owner.keys[pk][1] == pytest.approx(counts[1])


def test_a_heat_split_keeps_the_report_equal_to_what_clients_were_charged() -> None:
    """900 WCU/s over 50 keys of one partition (90 % of its ceiling) until it splits, then 10 s more:
    the report's totals equal the sum of the ConsumedCapacity the client received, the partitions
    add up to the table, and the key shares of a partition stay within 100 %."""
    clock = FakeClock()
    ctx = Context(settings=Settings(), clock=clock)

    def call(op: str, body: dict) -> dict:
        ctx.capacity.settle()
        status, out = dispatch(ctx, "DynamoDB_20120810." + op, orjson.dumps(body))
        assert status == 200, out
        return orjson.loads(out)

    call("CreateTable", {"TableName": "split", "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
                         "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}],
                         **capacity_args((10, 1500), 2)})
    t = ctx.db.tables["split"].table
    keys = [k for k in (f"k{i}" for i in range(400)) if t.partition_index(t.schema.partition_prefix(k)) == 0][:50]
    charged, seconds, after = 0.0, 0, 0
    while after < 10:
        for step in range(100):
            clock.now += 0.01
            item = {"p": {"S": keys[step % 50]}, "v": {"S": "x" * (9 * 1024 - 64)}}
            out = call("PutItem", {"TableName": "split", "Item": item, "ReturnConsumedCapacity": "TOTAL"})
            charged += out["ConsumedCapacity"]["CapacityUnits"]
        seconds += 1
        after += len(t.partitions) > 2
        assert seconds < 60
    assert len(t.partitions) == 4
    [report] = diagnose(collect(ctx, "split"))
    writes = next(m for m in report.meters if m.direction == "write" and m.index is None)
    assert abs(writes.units - charged) <= 0.01 * charged
    assert abs(sum(p.units for p in writes.partitions) - charged) <= 0.01 * charged
    assert sum(p.share for p in writes.partitions) == pytest.approx(1.0)
    for p in writes.partitions:
        assert sum(k.partition_share for k in p.top_keys) <= 1.0 + 1e-9
    assert writes.rate == pytest.approx(900.0, rel=0.05)  # the per-second records survived the split
