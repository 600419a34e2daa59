"""Deferred capacity records: a meter that logs its charges and adds them to its records later
(`Meter.flush`) keeps exactly the records of one that adds every charge at once.

The reference (`DirectMeter`) is the per-charge accounting the meter did before the log: the
same random charges, throttles, time steps and re-partitionings go through both, and every
record (rings, totals, burst, per-key counts, folded keys, hot seconds, peaks, splits) must be
equal: counts exactly, units up to float rounding (a partition's units of a second are summed
before they join its totals, `Meter._apply`). Readers (the report, the throttle log line) see
up-to-date records without anyone calling flush.
"""
from __future__ import annotations

import logging
import math
import random
import zlib

import orjson
import pytest
from conftest import FakeClock

from dynalocal.capacity import meter as model
from dynalocal.capacity import partition_meter
from dynalocal.capacity.causes import KEY_RANGE, TABLE_RATE
from dynalocal.capacity.meter import Meter
from dynalocal.capacity.report import snapshot
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

PREFIX = "DynamoDB_20120810."


class DirectMeter(Meter):
    """The reference: every charge goes to the records at once (the log stays empty)."""

    def charge(self, d: int, p: int, units: float, pk: bytes | None, now: float) -> None:
        bucket = self.table[d]
        if bucket is not None:
            bucket.tokens -= units
        bucket = self.maximum[d]
        if bucket is not None:
            bucket.tokens -= units
        part = self.parts[p]
        if part.share is not None:
            part.share[d].tokens -= units
        part.cap[d].tokens -= units
        sec = int(now)
        if sec != self.sec:
            self.roll(sec)
        i = sec % partition_meter.RING
        self.ring[d][i] += units
        if part.sec != sec:
            part.roll(sec)
        part.ring[d][i] += units
        part.units[d] += units
        part.requests[d] += 1
        if pk is not None:
            counts = part.keys.get(pk)
            if counts is None:
                if len(part.keys) >= part.limit:
                    part.fold()
                counts = part.keys[pk] = [0.0, 0.0, 0, 0, 0]
            counts[d] += units
            counts[d + 2] += 1
            counts[4] = sec


def _pk(rng: random.Random, i: int) -> bytes:
    """A partition-key prefix token(8)|len(2)|bytes, its token derived from the key number."""
    raw = f"key-{i}".encode()
    token = random.Random(i).getrandbits(64)
    return token.to_bytes(8, "big") + len(raw).to_bytes(2, "big") + raw


def _owner(count: int):
    """keys_to for `count` equal token ranges, as the stores split them."""
    return lambda pk: (int.from_bytes(pk[:8], "big") * count) >> 64


def _state(m: Meter) -> dict:
    """Every record of a meter and its partitions (flushed by `totals`), exact values."""
    totals = m.totals()
    parts = []
    for part in m.parts:
        parts.append({
            "totals": part.totals(), "ring": part.ring, "sec": part.sec, "burst": part.burst,
            "throttles": part.throttles, "throttle_ring": part.throttle_ring,
            # order included (folding ranks ties by insertion order); a key charged once is a tuple
            "keys": [(pk, list(counts)) for pk, counts in part.keys.items()],
            "other": part.other, "folded": part.folded, "hot_secs": part.hot_secs,
            "throttled_sec": part.throttled_sec,
            "tokens": [b.tokens for b in part.cap] + [b.tokens for b in part.share or ()]})
    return {"totals": totals, "ring": m.ring, "throttle_ring": m.throttle_ring, "sec": m.sec,
            "burst": m.burst, "peak": m.peak, "ceiling": m.ceiling, "splits": m.splits,
            "split_floor": m.split_floor, "pending": m.pending,
            "throttles": m.throttles, "parts": parts, "count": len(m.parts),
            "tokens": [b.tokens for b in (*m.table, *m.maximum) if b is not None]}


def _diff(a: object, b: object, at: str = "") -> str | None:
    """Where two records differ (None: equal): numbers up to float rounding, the rest exactly."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) else f"{at}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{at}: keys {list(a)!r} != {list(b)!r}"
        return next((d for k in a if (d := _diff(a[k], b[k], f"{at}.{k!r}")) is not None), None)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{at}: length {len(a)} != {len(b)}"
        return next((d for n, (x, y) in enumerate(zip(a, b)) if (d := _diff(x, y, f"{at}[{n}]")) is not None), None)
    return None if a == b else f"{at}: {a!r} != {b!r}"


def _same(m: Meter, ref: Meter) -> None:
    difference = _diff(_state(m), _state(ref))
    assert difference is None, difference


def _meters(kind: str, now: float) -> tuple[Meter, Meter]:
    args = {"on-demand": (4, None, False, None, (None, 9000.0)),
            "provisioned": (2, (3000.0, 1500.0), False, None, (None, None)),
            "classic": (3, (900.0, 600.0), True, None, (None, None))}[kind]
    partitions, provisioned, classic, warm, maximum = args
    return tuple(cls("t", None, partitions, provisioned, classic, 300.0, 5.0, warm, maximum, now)  # type: ignore[return-value]
                 for cls in (Meter, DirectMeter))


def _drive(meters: tuple[Meter, Meter], seed: int, steps: int, check_every: int) -> dict:
    """The same random load through both meters; records compared every `check_every` steps.
    Returns what the load reached (seen on the reference, so as not to flush the other): the
    most consecutive hot seconds, units beyond a partition ceiling, folded keys."""
    rng = random.Random(seed)
    seen = {"hot": 0, "beyond": False, "folded": False}
    now = 1000.0
    hot_keys = [_pk(rng, i) for i in range(60)]
    for step in range(steps):
        roll = rng.random()
        if roll < 0.003:  # a burst on one key: beyond the partition's ceiling within the second
            d, p, pk = rng.randrange(2), rng.randrange(len(meters[0].parts)), rng.choice(hot_keys)
            for _ in range(40):
                for m in meters:
                    m.charge(d, p, 90.0, pk, now)
        elif roll < 0.0035:  # a new partition count (UpdateTable, a tag): per-key counts move
            count = min(2 * len(meters[0].parts), 64) if len(meters[0].parts) < 64 else 3
            for m in meters:
                m.resize(count, now, _owner(count))
        elif roll < 0.04:  # time moves: mostly within a few seconds, sometimes past the ring
            now += rng.choice([0.3, 0.7, 1.0, 1.0, 2.0, 3.5, 12.0, 450.0])
        elif roll < 0.07:
            d, p = rng.randrange(2), rng.randrange(-1, len(meters[0].parts))
            cause = rng.choice([KEY_RANGE, TABLE_RATE, KEY_RANGE])
            for m in meters:
                m.record_throttle(d, p, cause, now)
        else:
            d = rng.randrange(2)
            p = rng.randrange(len(meters[0].parts))
            what = rng.random()
            if what < 0.45:  # one of many keys: past KEY_LIMIT, so the coldest half is folded
                pk: bytes | None = _pk(rng, rng.randrange(3 * partition_meter.KEY_LIMIT))
                units = rng.choice([0.5, 1.0, 2.0, 4.0])
            elif what < 0.85:  # hot traffic on few keys: hot seconds, heat splits, peaks
                pk, units = rng.choice(hot_keys), rng.choice([20.0, 45.0, 90.0])
            else:  # a Scan page's share: no key, an arbitrary float
                pk, units = None, rng.random() * 7.3
            for m in meters:
                m.charge(d, p, units, pk, now)
        if meters[0].pending:  # what the registry does on the next request (`_apply`)
            for m in meters:
                m.pending = False
                count = min(max(len(m.parts), m.partitions_needed()), 64)
                if count != len(m.parts):
                    m.resize(count, now, _owner(count))
        if step % check_every == check_every - 1:
            difference = _diff(_state(meters[0]), _state(meters[1]))
            assert difference is None, f"step {step}: {difference}"
        parts = meters[1].parts
        seen["hot"] = max(seen["hot"], max(p.hot_secs for p in parts))
        seen["beyond"] = seen["beyond"] or any(b > 0 for p in parts for b in p.totals()[2])
        seen["folded"] = seen["folded"] or any(p.folded for p in parts)
    _same(meters[0], meters[1])
    return seen


@pytest.mark.parametrize("kind", ["on-demand", "provisioned", "classic"])
@pytest.mark.parametrize("check_every,steps", [(1, 3000), (97, 30_000), (10**9, 30_000)])
def test_logged_charges_give_the_records_of_direct_accounting(kind, check_every, steps, monkeypatch):
    monkeypatch.setattr(partition_meter, "KEY_LIMIT", 40)  # fold often (the real limit folds alike, more rarely)
    meters = _meters(kind, 1000.0)
    seen = _drive(meters, seed=zlib.crc32(f"{kind}{check_every}".encode()), steps=steps, check_every=check_every)
    m = meters[0]
    assert seen["folded"], "the load folds keys"
    assert seen["beyond"], "the load goes beyond partition ceilings"
    if kind != "classic":
        assert seen["hot"] > 0, "the load makes hot seconds"
    if kind == "on-demand":
        assert m.peak[0] > 0 and m.peak[1] > 0, "the load sets on-demand peaks"


def test_a_long_second_is_flushed_as_the_log_fills_and_stays_exact():
    m, ref = _meters("provisioned", 1000.0)
    keys = [_pk(random.Random(0), i) for i in range(50)]
    for i in range(3 * model.LOG_LIMIT + 5):  # one second, the clock standing still
        for meter in (m, ref):
            meter.charge(i % 2, i % 2, 0.5 + (i % 3) * 0.1, keys[i % 50], 1000.25)
        assert len(m.log) < model.LOG_LIMIT, "the log is bounded"
    _same(m, ref)


def test_heat_splits_see_the_logged_charges_of_the_second_that_ended():
    m, ref = _meters("provisioned", 1000.0)
    keys = [k for k in (_pk(random.Random(0), i) for i in range(400)) if _owner(2)(k) == 0][:50]
    now = 1000.0
    for second in range(model.SPLIT_SECONDS + 1):
        for step in range(100):  # 900 WCU/s on partition 0: 90 % of its ceiling
            for meter in (m, ref):
                meter.charge(1, 0, 9.0, keys[step % 50], now + second + step / 100)
    now += model.SPLIT_SECONDS + 1
    for meter in (m, ref):
        meter.charge(0, 1, 1.0, None, now)  # the next second judges the last one
    assert m.splits == ref.splits == 1 and m.pending
    for meter in (m, ref):  # the registry re-partitions before the next request
        meter.resize(4, now, _owner(4))
        meter.charge(1, _owner(4)(keys[0]), 2.0, keys[0], now)
    _same(m, ref)
    assert sum(len(p.keys) for p in m.parts) == 50, "key counts move with the split"


def _call(ctx: Context, op: str, body: dict) -> dict:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    assert status == 200, out
    return orjson.loads(out)


def test_readers_see_every_charge_without_a_flush():
    clock = FakeClock()
    ctx = Context(settings=Settings(), clock=clock)
    _call(ctx, "CreateTable", {"TableName": "tab", "BillingMode": "PAY_PER_REQUEST",
                               "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
                               "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}]})
    for i in range(5):  # all within one second: nothing rolls
        _call(ctx, "PutItem", {"TableName": "tab", "Item": {"p": {"S": "a"}, "n": {"N": str(i)}}})
    _call(ctx, "GetItem", {"TableName": "tab", "Key": {"p": {"S": "a"}}})
    meter = ctx.capacity.meter(ctx.db.tables["tab"])
    assert meter.log, "the charges wait in the log"
    data = snapshot(ctx.capacity, ctx.db, "tab")["tables"]["tab"]["table"]
    assert data["totals"]["writes"] == 5 and data["totals"]["reads"] == 1
    assert data["per_second"]["write_units"][-1] == 5.0 and data["per_second"]["read_units"][-1] == 0.5
    (key,) = [k for p in data["partitions"] for k in p["keys"]]
    assert (key["key"], key["writes"], key["write_units"], key["reads"], key["read_units"]) == ("a", 5, 5.0, 1, 0.5)
    assert meter.totals()[1] == [1, 5]


def test_the_throttle_log_line_names_the_hottest_key_of_logged_charges(caplog):
    clock = FakeClock()
    ctx = Context(settings=Settings(throttling="enforce"), clock=clock)
    _call(ctx, "CreateTable", {"TableName": "tab", "BillingMode": "PROVISIONED",
                               "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
                               "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
                               "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}]})
    entry = ctx.db.tables["tab"]
    with caplog.at_level(logging.WARNING, logger="dynalocal.capacity"):
        throttled = None
        for _ in range(400):  # 1 WCU/s and 300 s of burst: throttled within the second
            status, out = dispatch(ctx, PREFIX + "PutItem",
                                   orjson.dumps({"TableName": "tab", "Item": {"p": {"S": "hot"}}}))
            if status != 200:
                throttled = out
                break
    assert throttled is not None
    assert "hottest key there: hot (0 RCU, 300 WCU)" in caplog.text
    assert ctx.capacity.meter(entry).parts[0].keys  # flushed by the throttle
