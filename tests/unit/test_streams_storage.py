"""Stream storage: shards per partition piece with lineage, the memory cap, replay of the journal form."""
from __future__ import annotations

import itertools

import orjson

from dynalocal.storage import streams as streams_module
from dynalocal.storage.mutation import Mutation
from dynalocal.storage.streamrecord import pack_record, unpack_record
from dynalocal.storage.streams import StreamRegistry
from dynalocal.storage.table import Table
from dynalocal.values.attributes import validate_item
from dynalocal.values.keys import KeySchema

KEYS = [{"AttributeName": "pk", "KeyType": "HASH"}]


def _setup(partitions: int = 1, view: str = "NEW_AND_OLD_IMAGES"):
    registry = StreamRegistry()
    registry.clock = itertools.count(1_700_000_000.0, 1.0).__next__
    table = Table("t", KeySchema("pk", "S"), partitions)
    stream = registry.enable("arn:aws:dynamodb:us-east-1:000000000000:table/t", table, view, KEYS)
    return registry, table, stream


def _put(table: Table, pk: str, value: str = "v") -> None:
    item = {"pk": {"S": pk}, "v": {"S": value}}
    table.apply(Mutation(table.schema.check_item(item), (orjson.dumps(item), validate_item(item)), item))


def test_a_layout_that_is_not_nested_gives_each_child_exactly_one_parent():
    _, table, stream = _setup(3)
    parents = list(stream.current)
    table.set_partition_count(4)
    assert all(s.end is not None for s in parents[1:])  # the 2nd and 3rd ranges changed
    for shard in stream.current:
        if shard.parent is not None:
            parent = stream.shards[shard.parent]
            assert parent.lo <= shard.lo and shard.hi <= parent.hi  # inside its one parent
    assert sum(len(r) for r in stream.route) == len(stream.current) > 4
    for i in range(200):  # every write lands in the open shard whose range holds its token
        _put(table, f"k{i}")
    for shard in stream.current:
        for record in shard.records:
            key = table.schema.encode(orjson.loads(record[3])["pk"]["S"], None)
            assert shard.lo <= int.from_bytes(key[:8], "big") < shard.hi


def test_the_cap_trims_the_oldest_records(monkeypatch):
    monkeypatch.setattr(streams_module, "MAX_STREAM_BYTES", 20_000)
    _, table, stream = _setup()
    for i in range(300):
        _put(table, f"k{i % 10}", str(i))
    (shard,) = stream.current
    assert stream.bytes <= 20_000 and shard.trimmed > 0
    assert shard.records[0][0] == shard.trimmed + 1 and shard.records[-1][0] == 300


def test_records_older_than_24_hours_are_trimmed():
    registry, table, stream = _setup()
    _put(table, "old")
    registry.clock = itertools.count(1_700_000_000.0 + 24 * 3600 + 10, 1.0).__next__
    _put(table, "new")
    (shard,) = stream.current
    assert [orjson.loads(r[3])["pk"]["S"] for r in shard.records] == ["new"] and shard.trimmed == 1


def test_record_codec_round_trips():
    record = (12345678901234567890, 1_700_000_000.25, 2, b'{"pk":{"S":"a"}}', b'{"x":1}', None, 42, True)
    assert unpack_record(pack_record("shardId-00000000000000000001-deadbeef", record)) == (
        "shardId-00000000000000000001-deadbeef", record)


def test_replaying_a_capture_twice_rebuilds_the_same_state():
    registry, table, stream = _setup(2)
    for i in range(20):
        _put(table, f"k{i}", "a")
    table.set_partition_count(4)
    for i in range(20):
        _put(table, f"k{i}", "b")
    copy = StreamRegistry()
    copy.clock = registry.clock
    for _ in range(2):  # a snapshot and the log after it may hold the same events
        for arn, parts in registry.capture():
            for part in parts:
                if isinstance(part, bytes):
                    copy.replay(arn, part)
                else:
                    for record in part[1]:
                        copy.replay(arn, pack_record(part[0], record))
    copy.resume({"t": table})
    restored = copy.streams[stream.arn]
    assert {i: (s.parent, s.lo, s.hi, s.start, s.end, s.records) for i, s in restored.shards.items()} == \
        {i: (s.parent, s.lo, s.hi, s.start, s.end, s.records) for i, s in stream.shards.items()}
    assert copy.seq == registry.seq and [s.id for s in restored.current] == [s.id for s in stream.current]
