"""A stream record and its binary form: how one stream event travels in the log and in snapshots.

Stream events travel in the write-ahead log as STREAM entries (name = the stream ARN, payload =
b"R" + a record packed here, or b"J" + a JSON control event); `journal.streamlog` writes and
reads the files, `storage.streams` keeps the records in memory.
"""
from __future__ import annotations

import struct

# A record: (seq, time, event, keys JSON, old image JSON | None, new image JSON | None,
#            SizeBytes, by the service (a TTL deletion)). Images are kept only as the view needs.
StreamRecord = tuple[int, float, int, bytes, "bytes | None", "bytes | None", int, bool]

_HEAD = struct.Struct("<QdBBIHIII")  # seq, time, event, by service, size, len(shard), len(keys, old, new)
_NONE = 0xFFFFFFFF


def pack_record(shard_id: str, record: StreamRecord) -> bytes:
    seq, at, event, keys, old, new, size, service = record
    raw_shard = shard_id.encode()
    return b"".join((b"R", _HEAD.pack(seq, at, event, service, size, len(raw_shard), len(keys),
                                      _NONE if old is None else len(old), _NONE if new is None else len(new)),
                     raw_shard, keys, old or b"", new or b""))


def unpack_record(payload: bytes) -> tuple[str, StreamRecord]:
    seq, at, event, service, size, ls, lk, lo, ln = _HEAD.unpack_from(payload, 1)
    pos = 1 + _HEAD.size
    shard_id = payload[pos:pos + ls].decode()
    pos += ls
    keys = payload[pos:pos + lk]
    pos += lk
    old = None
    if lo != _NONE:
        old, pos = payload[pos:pos + lo], pos + lo
    new = payload[pos:pos + ln] if ln != _NONE else None
    return shard_id, (seq, at, event, keys, old, new, size, bool(service))
