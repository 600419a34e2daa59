"""DynamoDB Streams storage: per table stream, one shard per partition, records in order.

A `Stream` is a table listener: every mutation that changes an item becomes one record in
the shard of the item's partition, so all records of one item are in one shard, in order.
When the table re-partitions (`ItemStore.repartition`), the shards of replaced partitions
close and each new partition opens a child shard whose parent is the shard of the old
partition its range starts in. Records are kept 24 hours and within a byte cap per stream
(MAX_STREAM_BYTES, the oldest go first), so memory is bounded by retention and the cap.

Every change of stream state (a record, a shard opened or closed, a stream enabled or
disabled) is also handed, encoded, to `StreamRegistry.sink` when one is set: the journal
writes it in the same log group as the item write, so a durable write's record is durable.
"""
from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from operator import itemgetter

import orjson

from dynalocal.storage.mutation import RECOVERY, ROLLBACK, TTL, Mutation
from dynalocal.storage.partition import Partition
from dynalocal.storage.streamrecord import StreamRecord, pack_record, unpack_record
from dynalocal.storage.table import Table
from dynalocal.values.attributes import item_size
from dynalocal.values.blob import dumps

RETENTION = 24 * 3600.0  # seconds a record (and a disabled stream) stays readable
MAX_STREAM_BYTES = 256 * 1024 * 1024  # retained record bytes per stream, the documented memory cap
RECORD_OVERHEAD = 200  # bytes of bookkeeping per record (tuple, ints, float; measured by bench/stream_memory.py)
INSERT, MODIFY, REMOVE = 0, 1, 2
EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")
NEW_VIEWS = frozenset({"NEW_IMAGE", "NEW_AND_OLD_IMAGES"})
OLD_VIEWS = frozenset({"OLD_IMAGE", "NEW_AND_OLD_IMAGES"})

_seq_of = itemgetter(0)


class Shard:
    """The records of one partition's token range [lo, hi) during the shard's life."""

    __slots__ = ("id", "parent", "lo", "hi", "start", "end", "records", "trimmed", "closed_at", "bytes")

    def __init__(self, shard_id: str, parent: str | None, lo: int, hi: int, start: int) -> None:
        self.id = shard_id
        self.parent = parent
        self.lo, self.hi = lo, hi
        self.start = start  # StartingSequenceNumber
        self.end: int | None = None  # EndingSequenceNumber once closed
        self.records: list[StreamRecord] = []
        self.trimmed = 0  # highest sequence number trimmed away (0: none)
        self.closed_at: float | None = None
        self.bytes = 0

    def position(self, seq: int) -> int:
        """Index of the first record with a sequence number >= seq."""
        return bisect_left(self.records, seq, key=_seq_of)


class Stream:
    """One stream of one table (a re-enabled stream is a new Stream with a new label)."""

    def __init__(self, registry: StreamRegistry, arn: str, label: str, table_name: str, view_type: str,
                 key_schema: list[dict], created: float) -> None:
        self.registry = registry
        self.arn, self.label, self.table_name = arn, label, table_name
        self.view_type = view_type
        self.key_schema = key_schema
        self.key_names = tuple(e["AttributeName"] for e in key_schema)
        self.created = created
        self.status = "ENABLED"
        self.disabled_at: float | None = None
        self.shards: dict[str, Shard] = {}  # every retained shard, in creation order
        self.current: list[Shard] = []  # the open shards, in token order (they tile the token space)
        self.route: list[list[Shard]] = []  # per table partition, its open shards (usually exactly one)
        self.table: Table | None = None
        self.bytes = 0
        self._new = view_type in NEW_VIEWS
        self._old = view_type in OLD_VIEWS

    # -- following the table ---------------------------------------------------------------------

    def attach(self, table: Table) -> None:
        """Follow `table`: open shards for partitions without one (lineage by range start)."""
        self.table = table
        self.on_repartition([], table.partitions)
        if self.on_mutation not in table.listeners:
            table.listeners.append(self.on_mutation)
            table.on_repartition.append(self.on_repartition)

    def detach(self, now: float) -> None:
        """Stop following the table and close every open shard (disable or table deletion)."""
        table = self.table
        if table is not None:
            if self.on_mutation in table.listeners:
                table.listeners.remove(self.on_mutation)
            if self.on_repartition in table.on_repartition:
                table.on_repartition.remove(self.on_repartition)
        self.table = None
        for shard in self.current:
            self._close(shard, now)
        self.current, self.route = [], []
        self.status, self.disabled_at = "DISABLED", now
        self.registry.log(self.arn, {"op": "disable", "at": now})

    def on_repartition(self, old: list[Partition], new: list[Partition]) -> None:
        """Table hook: close the shards of replaced ranges, open children for the new ones.

        A new partition gets one shard per piece of it that lies within one open shard: a
        split (what DynamoDB does) gives one child per new partition, each inside its parent;
        a layout that is not nested (3 -> 4 equal ranges) gives a partition several shards,
        so every child still has exactly the one parent its keys' earlier records are in.
        """
        now = self.registry.clock()
        current = self.current
        by_range = {(s.lo, s.hi): s for s in current}
        starts = [s.lo for s in current]
        pieces: list[list[Shard]] = []
        kept: set[int] = set()
        for part in new:
            cuts = sorted({part.lo, *(lo for lo in starts if part.lo < lo < part.hi)}) + [part.hi]
            shards = []
            for lo, hi in zip(cuts, cuts[1:]):
                shard = by_range.get((lo, hi))
                if shard is None:
                    parent = next((s for s in current if s.lo <= lo < s.hi), None)
                    shard = self._open(lo, hi, parent.id if parent is not None else None, now)
                kept.add(id(shard))
                shards.append(shard)
            pieces.append(shards)
        for shard in current:
            if id(shard) not in kept:
                self._close(shard, now)
        self.route = pieces
        self.current = [s for shards in pieces for s in shards]

    def shard_for(self, part: int, key: bytes) -> Shard:
        """The open shard a write of `key` in table partition `part` goes to."""
        shards = self.route[part]
        if len(shards) == 1:
            return shards[0]
        token = int.from_bytes(key[:8], "big")
        return next(s for s in shards if s.lo <= token < s.hi)

    def _open(self, lo: int, hi: int, parent: str | None, now: float) -> Shard:
        registry = self.registry
        start = registry.seq + 1
        shard_id = registry.shard_id(now)
        shard = self.shards[shard_id] = Shard(shard_id, parent, lo, hi, start)
        registry.log(self.arn, {"op": "open", "shard": shard_id, "parent": parent, "lo": str(lo),
                                "hi": str(hi), "start": start})  # tokens reach 2**64: beyond JSON integers
        return shard

    def _close(self, shard: Shard, now: float) -> None:
        shard.end = shard.records[-1][0] if shard.records else shard.start
        shard.closed_at = now
        self.registry.log(self.arn, {"op": "close", "shard": shard.id, "end": shard.end, "at": now})

    def on_mutation(self, m: Mutation) -> None:
        """Table listener: one record per change of an item; identical writes add none."""
        if m.origin == RECOVERY or not m.changed:
            return
        if m.origin == ROLLBACK:  # a write undone (its log group failed): its record goes too
            self._unrecord(m)
            return
        old, new = m.old, m.new
        if old is None:
            event, item = INSERT, m.new_item
        elif new is None:
            event, item = REMOVE, m.old_item
        else:
            event, item = MODIFY, m.new_item
        assert item is not None  # the image of the side that exists
        keys = {name: item[name] for name in self.key_names}
        size = item_size(keys)
        old_blob = new_blob = None
        if self._new and new is not None:
            new_blob = new[0]
            size += new[1]
        if self._old and old is not None:
            old_blob = old[0]
            size += old[1]
        registry = self.registry
        registry.seq = seq = registry.seq + 1
        record = (seq, registry.clock(), event, dumps(keys), old_blob, new_blob, size, m.origin == TTL)
        shard = self.shard_for(m.part, m.key)
        self.add(shard, record)
        sink = registry.sink
        if sink is not None:
            sink(self.arn, pack_record(shard.id, record))

    def _unrecord(self, m: Mutation) -> None:
        """Drop the newest record of the item a rollback restores (undos come newest first)."""
        item = m.old_item if m.old is not None else m.new_item
        assert item is not None  # a mutation has an old or a new image
        keys = dumps({name: item[name] for name in self.key_names})
        shard = self.shard_for(m.part, m.key)
        records = shard.records
        for i in range(len(records) - 1, -1, -1):
            if records[i][3] == keys:
                cost = record_bytes(records.pop(i))
                shard.bytes -= cost
                self.bytes -= cost
                return

    # -- records ---------------------------------------------------------------------------------

    def add(self, shard: Shard, record: StreamRecord) -> None:
        """Append a record (in sequence order) and trim what retention and the cap no longer keep."""
        shard.records.append(record)
        cost = record_bytes(record)
        shard.bytes += cost
        self.bytes += cost
        first = shard.records[0]
        if first[1] < record[1] - RETENTION or self.bytes > MAX_STREAM_BYTES:
            self.trim(record[1])

    def trim(self, now: float) -> None:
        """Drop records older than the retention period, then the oldest while over the cap."""
        horizon = now - RETENTION
        for shard in self.shards.values():
            records = shard.records
            n = 0
            while n < len(records) and records[n][1] < horizon:
                n += 1
            if n:
                self._drop(shard, n)
        while self.bytes > MAX_STREAM_BYTES:
            oldest = min((s for s in self.shards.values() if s.records), key=lambda s: s.records[0][1])
            self._drop(oldest, max(1, len(oldest.records) // 16))
        for shard_id in [i for i, s in self.shards.items()
                         if s.closed_at is not None and not s.records and s.closed_at < horizon]:
            del self.shards[shard_id]  # closed, empty and past retention: gone from DescribeStream

    def _drop(self, shard: Shard, n: int) -> None:
        gone = shard.records[:n]
        del shard.records[:n]
        shard.trimmed = gone[-1][0]
        cost = sum(map(record_bytes, gone))
        shard.bytes -= cost
        self.bytes -= cost

    def readable(self, now: float) -> bool:
        """Whether the stream can still be listed and read (disabled streams: for 24 hours)."""
        return self.disabled_at is None or now - self.disabled_at < RETENTION


def record_bytes(record: StreamRecord) -> int:
    """What a retained record costs against the cap: its byte strings plus bookkeeping."""
    return RECORD_OVERHEAD + len(record[3]) + (len(record[4]) if record[4] is not None else 0) + \
        (len(record[5]) if record[5] is not None else 0)


class StreamRegistry:
    """Every stream of the database, enabled or still readable, by ARN."""

    def __init__(self) -> None:
        self.streams: dict[str, Stream] = {}
        self.seq = 0  # the latest sequence number handed out, shared by all streams
        self.clock: Callable[[], float] = time.time  # epoch seconds (the server's injectable wall clock)
        self.sink: Callable[[str, bytes], None] | None = None  # the journal, with a data directory
        self._last_shard = 0

    def shard_id(self, now: float) -> str:
        """A new shard id in DynamoDB's form: shardId-<20 digits>-<8 hex>."""
        stamp = max(int(now * 1000), self._last_shard + 1)
        self._last_shard = stamp
        return f"shardId-{stamp:020d}-{(stamp * 2654435761) & 0xFFFFFFFF:08x}"

    def log(self, arn: str, event: dict) -> None:
        if self.sink is not None:
            self.sink(arn, b"J" + orjson.dumps(event))

    def enable(self, arn_base: str, table: Table, view_type: str, key_schema: list[dict]) -> Stream:
        """Start a new stream on `table` (its ARN is `<table ARN>/stream/<label>`)."""
        now = self.clock()
        label = _label(now)
        while f"{arn_base}/stream/{label}" in self.streams:  # re-enabled within one millisecond
            now += 0.001
            label = _label(now)
        stream = Stream(self, f"{arn_base}/stream/{label}", label, table.name, view_type, key_schema, now)
        self.streams[stream.arn] = stream
        self.log(stream.arn, {"op": "enable", "label": label, "table": table.name, "view": view_type,
                              "keys": key_schema, "created": now})
        stream.attach(table)
        return stream

    def active(self, table: Table) -> Stream | None:
        """The enabled stream following `table`, if any."""
        for stream in self.streams.values():
            if stream.table is table:
                return stream
        return None

    def visible(self) -> list[Stream]:
        """Streams still readable now (forgetting those disabled more than 24 hours ago)."""
        now = self.clock()
        for arn in [a for a, s in self.streams.items() if not s.readable(now)]:
            del self.streams[arn]
        return list(self.streams.values())

    # -- recovery ----------------------------------------------------------------------------------

    def replay(self, arn: str, payload: bytes) -> None:
        """Redo one journaled stream event (idempotent: a snapshot and the log may overlap)."""
        stream = self.streams.get(arn)
        if payload[:1] == b"R":
            shard_id, record = unpack_record(payload)
            shard = stream.shards.get(shard_id) if stream is not None else None
            if stream is not None and shard is not None and \
                    (not shard.records or shard.records[-1][0] < record[0]) and record[0] > shard.trimmed:
                stream.add(shard, record)
            self.seq = max(self.seq, record[0])
            return
        event = orjson.loads(payload[1:])
        op = event["op"]
        if op == "enable":
            if stream is None:
                self.streams[arn] = Stream(self, arn, event["label"], event["table"], event["view"], event["keys"],
                                           event["created"])
        elif stream is None:
            return
        elif op == "open" and event["shard"] not in stream.shards:
            shard = stream.shards[event["shard"]] = Shard(event["shard"], event["parent"], int(event["lo"]),
                                                          int(event["hi"]), event["start"])
            shard.trimmed = event.get("trimmed", 0)
            stream.current.append(shard)
            self.seq = max(self.seq, shard.start - 1)
            self._last_shard = max(self._last_shard, int(shard.id.split("-")[1]))
        elif op == "close" and event["shard"] in stream.shards:
            shard = stream.shards[event["shard"]]
            shard.end, shard.closed_at = event["end"], event["at"]
            stream.current = [s for s in stream.current if s is not shard]
        elif op == "disable":
            stream.status, stream.disabled_at, stream.current = "DISABLED", event["at"], []

    def resume(self, tables: dict[str, Table]) -> None:
        """After recovery: enabled streams follow their tables again."""
        for stream in self.streams.values():
            if stream.status == "ENABLED":
                stream.current.sort(key=lambda s: s.lo)
                table = tables.get(stream.table_name)
                if table is not None:
                    stream.attach(table)
                else:
                    stream.detach(self.clock())
            stream.trim(self.clock())

    def capture(self) -> list[tuple[str, list]]:
        """The whole state, for a snapshot: per stream, its events with each shard's records as a
        copied list (cheap; `streamlog.write_snapshot` encodes them later, off the event loop)."""
        out: list[tuple[str, list]] = []
        for stream in self.streams.values():
            parts: list = [b"J" + orjson.dumps({"op": "enable", "label": stream.label, "table": stream.table_name,
                                                "view": stream.view_type, "keys": stream.key_schema,
                                                "created": stream.created})]
            for shard in stream.shards.values():
                parts.append(b"J" + orjson.dumps({"op": "open", "shard": shard.id, "parent": shard.parent,
                                                  "lo": str(shard.lo), "hi": str(shard.hi), "start": shard.start,
                                                  "trimmed": shard.trimmed}))
                parts.append((shard.id, shard.records[:]))
                if shard.end is not None:
                    parts.append(b"J" + orjson.dumps({"op": "close", "shard": shard.id, "end": shard.end,
                                                      "at": shard.closed_at}))
            if stream.disabled_at is not None:
                parts.append(b"J" + orjson.dumps({"op": "disable", "at": stream.disabled_at}))
            out.append((stream.arn, parts))
        return out

    def clear(self) -> None:
        for stream in list(self.streams.values()):
            if stream.table is not None:
                stream.detach(self.clock())
        self.streams.clear()


def _label(now: float) -> str:
    """ISO-8601 UTC with milliseconds, e.g. 2015-05-20T20:51:10.252."""
    whole = int(now)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((now - whole) * 1000):03d}"


