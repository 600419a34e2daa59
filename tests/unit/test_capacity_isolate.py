"""Heat splits that isolate hot keys (capacity/split.py; docs/behaviour/capacity.md §3), on a fake
clock: keys that share a hot partition end on partitions of their own after the sustained window
and are no longer throttled; a single hot key never splits its partition.

Table loads go through the per-request Charge the handlers use; GSI loads through dispatch.
"""
from __future__ import annotations

import orjson

from conftest import FakeClock as Clock, capacity_args
from dynalocal.capacity import meter as model
from dynalocal.capacity import split
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from dynalocal.values.keys import TOKEN_SPACE

PREFIX = "DynamoDB_20120810."
STEP = 0.05  # seconds between a key's writes
KB = 40  # write units per write: 800 WCU/s per key


def _server() -> tuple[Context, Clock]:
    clock = Clock()
    return Context(settings=Settings(throttling="enforce"), clock=clock), clock


def _call(ctx: Context, op: str, body: dict) -> int:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    assert status == 200 or b"Throttl" in out, out
    return status


def _sharing(store, schema, count: int) -> list[str]:
    """`count` partition-key values that share one partition of `store`."""
    by_part: dict[int, list[str]] = {}
    for i in range(10_000):
        key = f"k{i}"
        keys = by_part.setdefault(store.partition_index(schema.partition_prefix(key)), [])
        keys.append(key)
        if len(keys) == count:
            return keys
    raise AssertionError("no partition shared")


def _partitions_of(store, schema, keys: list[str]) -> set[int]:
    return {store.partition_index(schema.partition_prefix(k)) for k in keys}


def _table_write(ctx: Context, table: str, key: str, units: float) -> bool:
    """A write through the handlers' Charge; whether it was admitted."""
    entry = ctx.db.tables[table]
    ctx.capacity.settle()  # between requests: a split asked for is applied here
    charge = ctx.capacity.charge(entry)
    prefix = entry.table.schema.partition_prefix(key)
    part = entry.table.partition_index(prefix)
    if charge.refuse(model.WRITE, part) is not None:
        return False
    charge.write(part, units, prefix)
    return True


def _load(clock: Clock, keys: list[str], seconds: int, write, fair: bool = True) -> list[dict[str, float]]:
    """Write 800 WCU/s on each key for `seconds`; admitted units per key, per second. `fair`: the
    keys take turns to come first (concurrent clients), else the last key always comes last."""
    out = []
    turn = 0
    for _ in range(seconds):
        admitted = dict.fromkeys(keys, 0.0)
        for _ in range(int(1 / STEP)):
            clock.now += STEP
            turn += 1 if fair else 0
            for key in keys[turn % len(keys):] + keys[:turn % len(keys)]:  # concurrent clients: no fixed order
                if write(key):
                    admitted[key] += KB
        out.append(admitted)
    return out


def _isolated_at(seconds: list[dict[str, float]]) -> int:
    """The first second from which every key got its 800 WCU/s to the end."""
    ok = [all(v >= 0.99 * KB / STEP for v in s.values()) for s in seconds]
    first = len(ok)
    while first > 0 and ok[first - 1]:
        first -= 1
    return first


# -- the decision --------------------------------------------------------------------------------

def _pk(token: int, name: bytes = b"k") -> bytes:
    return token.to_bytes(8, "big") + len(name).to_bytes(2, "big") + name


def test_one_key_carrying_nine_tenths_of_the_load_never_splits():
    assert split.split_count({_pk(1): 1.0}, 1.0, 4) is None
    assert split.split_count({_pk(1): 0.9, _pk(2): 0.1}, 1.0, 4) is None
    assert split.split_count({_pk(1): 0.85, _pk(TOKEN_SPACE // 8): 0.15}, 1.0, 4) == 8, "a 15 % neighbour is split off"


def test_hot_keys_get_the_smallest_doubling_that_separates_them():
    close = [_pk(0, b"a"), _pk(TOKEN_SPACE // 64 + 1, b"b")]  # apart only at 64 ranges
    assert split.split_count({close[0]: 0.5, close[1]: 0.5}, 1.0, 4) == 64
    three = [_pk(0, b"a"), _pk(TOKEN_SPACE // 16, b"b"), _pk(TOKEN_SPACE // 8, b"c")]
    assert split.split_count({three[0]: 0.4, three[1]: 0.3, three[2]: 0.3}, 1.0, 4) == 16
    same = [_pk(5, b"a"), _pk(5, b"b")]  # one token: no count separates them
    assert split.split_count({same[0]: 0.5, same[1]: 0.5}, 1.0, 4) == split.MAX_PARTITIONS
    assert split.split_count({same[0]: 0.5, same[1]: 0.5}, 1.0, split.MAX_PARTITIONS) is None


def test_traffic_spread_over_many_keys_doubles_the_partitions():
    loads = {_pk(i * 1000, str(i).encode()): 1.0 for i in range(50)}
    assert split.split_count(loads, 50.0, 2) == 4
    assert split.split_count({}, 1.0, 3) == 6, "unkeyed traffic (scans) splits as before"


# -- tables and GSIs under load -------------------------------------------------------------------

def _table_case(count: int, fair: bool = True, seconds: int = 75) -> tuple[list, list[str], object, object]:
    ctx, clock = _server()
    name = "shared"
    body = {"TableName": name, "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}], **capacity_args()}
    assert _call(ctx, "CreateTable", body) == 200
    t = ctx.db.tables[name].table
    keys = _sharing(t, t.schema, count)
    admitted = _load(clock, keys, seconds, lambda key: _table_write(ctx, name, key, KB), fair)
    return admitted, keys, t, ctx.capacity.meter(ctx.db.tables[name])


def test_two_and_three_table_keys_sharing_a_partition_end_apart_and_unthrottled():
    for count in (2, 3):
        seconds, keys, t, m = _table_case(count)
        assert sum(sum(s.values()) for s in seconds[10:25]) / 15 <= 1000 * 1.01, "capped together at first"
        assert len(_partitions_of(t, t.schema, keys)) == count, "each hot key on a partition of its own"
        at = _isolated_at(seconds)
        assert model.SPLIT_SECONDS <= at <= model.SPLIT_SECONDS + 2, f"{count} keys isolated at {at} s"
        assert m.splits == 1, "one split isolates them; alone, each key never splits again"


def test_a_key_starved_while_its_partition_was_capped_is_split_off_by_the_next_window():
    seconds, keys, t, m = _table_case(3, fair=False, seconds=3 * model.SPLIT_SECONDS)
    assert len(_partitions_of(t, t.schema, keys)) == 3
    assert _isolated_at(seconds) <= 2 * model.SPLIT_SECONDS + 2 and m.splits == 2


def test_a_single_hot_key_never_splits_for_heat():
    ctx, clock = _server()
    assert _call(ctx, "CreateTable", {
        "TableName": "one", "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}], **capacity_args()}) == 200
    seconds = _load(clock, ["hot"], 3 * model.SPLIT_SECONDS, lambda key: _table_write(ctx, "one", key, 2 * KB))
    assert len(ctx.db.tables["one"].table.partitions) == 4 and ctx.capacity.meter(ctx.db.tables["one"]).splits == 0
    assert all(s["hot"] <= 1000 * 1.01 for s in seconds[10:]), "capped at the 1 000 WCU/s ceiling"


def test_three_gsi_keys_sharing_a_partition_end_apart_and_unthrottled():
    ctx, clock = _server()
    assert _call(ctx, "CreateTable", {
        "TableName": "orders", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"},
                                 {"AttributeName": "g", "AttributeType": "S"}],
        "GlobalSecondaryIndexes": [{"IndexName": "byg", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                    "Projection": {"ProjectionType": "ALL"}}]}) == 200
    index = ctx.db.tables["orders"].table.indexes["byg"]
    keys = _sharing(index, index.schema, 3)
    filler = "x" * (KB * 1024 - 120)  # a changed entry (n) is an index write of KB units
    n = [0]

    def put(key: str) -> bool:
        n[0] += 1
        item = {"p": {"S": f"{key}#{n[0] % 40}"}, "g": {"S": key}, "v": {"S": filler}, "n": {"N": str(n[0])}}
        return _call(ctx, "PutItem", {"TableName": "orders", "Item": item}) == 200

    seconds = _load(clock, keys, 75, put)
    assert sum(sum(s.values()) for s in seconds[10:25]) / 15 <= 1000 * 1.01, "capped together at first"
    assert len(_partitions_of(index, index.schema, keys)) == 3
    at = _isolated_at(seconds)
    assert model.SPLIT_SECONDS <= at <= model.SPLIT_SECONDS + 2, f"isolated at {at} s"
    g = ctx.capacity.index_meter(ctx.db.tables["orders"], index)
    assert g.splits == 1
