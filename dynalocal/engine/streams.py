"""The DynamoDB Streams API (target prefix DynamoDBStreams_20120810): ListStreams,
DescribeStream, GetShardIterator, GetRecords, over storage.streams.

Shard iterators are opaque strings `<StreamArn>|1|<token>`; the token carries the shard, the
next sequence number to read and the time the iterator was issued (it expires 15 minutes
later), with a checksum so a mangled iterator is a ValidationException, never a 500.
"""
from __future__ import annotations

import base64
import hashlib
import re
import struct
import time
import zlib
from typing import Any

import orjson

from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.errors import (
    ExpiredIteratorException,
    ResourceNotFoundException,
    TrimmedDataAccessException,
    ValidationException,
)
from dynalocal.storage.database import SCOPE_SEPARATOR
from dynalocal.storage.streams import EVENT_NAMES, NEW_VIEWS, OLD_VIEWS, Shard, Stream

ITERATOR_LIFETIME = 15 * 60.0
MAX_RECORDS = 1000
MAX_BYTES = 1024 * 1024
STREAM_ARN = re.compile(r"arn:aws[\w-]*:dynamodb:([\w-]+):(\d{12}):table/([a-zA-Z0-9_.-]{3,255})/stream/"
                        r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})")
SERVICE_IDENTITY = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
MAX_SEQUENCE = 2**64 - 2  # the iterator packs a position (up to seq + 1) as an unsigned 64-bit number
_TOKEN = struct.Struct("<QdI")  # next sequence number, issue time, crc32 of shard id + the two


def _stream(ctx: Context, caller: Caller, arn: str) -> Stream:
    if STREAM_ARN.fullmatch(arn) is None:
        raise ValidationException(f"Invalid StreamArn: {arn}")
    registry = ctx.db.streams
    stream = registry.streams.get(arn)
    if stream is None or not stream.readable(registry.clock()) or not _in_scope(caller, stream):
        raise ResourceNotFoundException(f"Requested resource not found: Stream: {arn} not found")
    return stream


def _in_scope(caller: Caller, stream: Stream) -> bool:
    """Whether the caller sees this stream (under --isolation, only its own tables' streams)."""
    scope, key = caller.scope, stream.table_name
    return not scope or (key.startswith(scope) and SCOPE_SEPARATOR not in key[len(scope):])


def _shard(stream: Stream, shard_id: str) -> Shard:
    shard = stream.shards.get(shard_id)
    if shard is None:
        # DynamoDB's text (docs/behaviour/operations.md §4)
        raise ResourceNotFoundException("Requested resource not found: Shard does not exist")
    return shard


def _table_name(stream: Stream) -> str:
    """The stream's table as clients name it (under --isolation its catalog key has a scope prefix)."""
    return stream.table_name.rpartition(SCOPE_SEPARATOR)[2]


def list_streams(ctx: Context, caller: Caller, body: dict) -> dict:
    streams = [s for s in ctx.db.streams.visible() if _in_scope(caller, s)]
    name = body.get("TableName")
    if name is not None:
        streams = [s for s in streams if s.table_name == caller.scope + name]
    start = body.get("ExclusiveStartStreamArn")
    if start is not None:
        arns = [s.arn for s in streams]
        # a start that is no stream (any more): the streams whose ARN sorts after it, as DynamoDB Local
        # answers (docs/behaviour/operations.md §4)
        streams = streams[arns.index(start) + 1:] if start in arns else [s for s in streams if s.arn > start]
    limit = body.get("Limit", 100)
    out: dict[str, Any] = {"Streams": [{"StreamArn": s.arn, "TableName": _table_name(s), "StreamLabel": s.label}
                                       for s in streams[:limit]]}
    if len(streams) > limit:
        out["LastEvaluatedStreamArn"] = streams[limit - 1].arn
    return out


def describe_stream(ctx: Context, caller: Caller, body: dict) -> dict:
    stream = _stream(ctx, caller, body["StreamArn"])
    stream.trim(ctx.db.streams.clock())
    shards = list(stream.shards.values())
    shard_filter = body.get("ShardFilter")
    if shard_filter is not None:
        if shard_filter.get("Type") != "CHILD_SHARDS" or not shard_filter.get("ShardId"):
            raise ValidationException("ShardFilter of type CHILD_SHARDS requires a ShardId")
        shards = [s for s in shards if s.parent == shard_filter["ShardId"]]
    start = body.get("ExclusiveStartShardId")
    if start is not None:
        ids = [s.id for s in shards]
        shards = shards[ids.index(start) + 1:] if start in ids else []
    limit = body.get("Limit", 100)
    description: dict[str, Any] = {
        "StreamArn": stream.arn, "StreamLabel": stream.label, "StreamStatus": stream.status,
        "StreamViewType": stream.view_type, "CreationRequestDateTime": stream.created,
        "TableName": _table_name(stream), "KeySchema": stream.key_schema,
        "Shards": [_describe_shard(s) for s in shards[:limit]],
    }
    if len(shards) > limit:
        description["LastEvaluatedShardId"] = shards[limit - 1].id
    return {"StreamDescription": description}


def _describe_shard(shard: Shard) -> dict:
    numbers = {"StartingSequenceNumber": seq_text(shard.start)}
    if shard.end is not None:
        numbers["EndingSequenceNumber"] = seq_text(shard.end)
    out: dict[str, Any] = {"ShardId": shard.id, "SequenceNumberRange": numbers}
    if shard.parent is not None:
        out["ParentShardId"] = shard.parent
    return out


def seq_text(seq: int) -> str:
    """A sequence number as DynamoDB writes it: 21 or more decimal digits."""
    return f"{seq:021d}"


def _sequence_number(body: dict) -> int:
    text = body.get("SequenceNumber")
    if text is None:
        raise ValidationException(f"SequenceNumber is required for ShardIteratorType {body['ShardIteratorType']}")
    if not (text.isascii() and text.isdigit()):  # ASCII only: int() would take other scripts' digits too
        raise ValidationException(f"Invalid SequenceNumber: {text}")
    return int(text)


def get_shard_iterator(ctx: Context, caller: Caller, body: dict) -> dict:
    stream = _stream(ctx, caller, body["StreamArn"])
    now = ctx.db.streams.clock()
    stream.trim(now)
    shard = _shard(stream, body["ShardId"])
    kind = body["ShardIteratorType"]
    if kind == "TRIM_HORIZON":
        position = max(shard.start, shard.trimmed + 1)
    elif kind == "LATEST":
        position = shard.end + 1 if shard.end is not None else ctx.db.streams.seq + 1
    elif kind == "AT_TIMESTAMP":
        at = body.get("Timestamp")
        if at is None:
            raise ValidationException("Timestamp is required for ShardIteratorType AT_TIMESTAMP")
        later = [r[0] for r in shard.records if r[1] >= at]
        position = later[0] if later else (shard.end + 1 if shard.end is not None else ctx.db.streams.seq + 1)
    else:
        seq = _sequence_number(body)
        # Past the 64-bit positions a shard can reach: out of its range like any other (issue 28).
        if seq < shard.start or seq > MAX_SEQUENCE or (shard.end is not None and seq > shard.end):
            raise ValidationException(f"Invalid SequenceNumber {body['SequenceNumber']} for shard {shard.id}")
        if seq <= shard.trimmed:
            raise TrimmedDataAccessException("The requested sequence number is beyond the trim horizon of the shard")
        position = seq if kind == "AT_SEQUENCE_NUMBER" else seq + 1
    return {"ShardIterator": make_iterator(stream.arn, shard.id, position, now)}


def make_iterator(arn: str, shard_id: str, position: int, now: float) -> str:
    crc = zlib.crc32(shard_id.encode() + struct.pack("<Qd", position, now))
    token = base64.urlsafe_b64encode(_TOKEN.pack(position, now, crc) + shard_id.encode()).decode()
    return f"{arn}|1|{token}"


def read_iterator(iterator: str) -> tuple[str, str, int, float]:
    """(stream ARN, shard id, next sequence number, issue time) of an iterator; ValidationException if mangled."""
    try:
        arn, version, token = iterator.rsplit("|", 2)
        raw = base64.urlsafe_b64decode(token.encode())
        position, issued, crc = _TOKEN.unpack_from(raw)
        shard_id = raw[_TOKEN.size:].decode()
    except (ValueError, struct.error, UnicodeDecodeError):
        raise ValidationException("Invalid ShardIterator") from None
    if version != "1" or crc != zlib.crc32(shard_id.encode() + struct.pack("<Qd", position, issued)):
        raise ValidationException("Invalid ShardIterator")
    return arn, shard_id, position, issued


def get_records(ctx: Context, caller: Caller, body: dict) -> dict:
    arn, shard_id, position, issued = read_iterator(body["ShardIterator"])
    limit = body.get("Limit", MAX_RECORDS)
    if limit > MAX_RECORDS:
        raise ValidationException(f"1 validation error detected: Value '{limit}' at 'limit' failed to satisfy "
                                  f"constraint: Member must have value less than or equal to {MAX_RECORDS}")
    stream = _stream(ctx, caller, arn)
    now = ctx.db.streams.clock()
    if now - issued > ITERATOR_LIFETIME:
        raise ExpiredIteratorException("Iterator expired. The iterator was created at time "
                                       f"{_iso(issued)} while right now it is {_iso(now)}. "
                                       "The iterator is valid for 15 minutes.")
    stream.trim(now)
    shard = _shard(stream, shard_id)
    if position <= shard.trimmed:
        raise TrimmedDataAccessException("The operation attempted to read past the oldest stream record in a shard.")
    records = shard.records
    i = shard.position(position)
    out_records: list[dict] = []
    used = 0
    region = STREAM_ARN.fullmatch(arn).group(1)  # type: ignore[union-attr]
    while i < len(records) and len(out_records) < limit:
        record = records[i]
        if out_records and used + record[6] > MAX_BYTES:
            break
        used += record[6]
        out_records.append(_record(stream, record, region))
        i += 1
    out: dict[str, Any] = {"Records": out_records}
    next_position = records[i - 1][0] + 1 if out_records else position
    exhausted = i >= len(records)
    if not (shard.end is not None and exhausted):  # a closed shard read to its end has no next iterator
        out["NextShardIterator"] = make_iterator(arn, shard_id, next_position, now)
    return out


def _record(stream: Stream, record: tuple, region: str) -> dict:
    seq, at, event, keys, old, new, size, service = record
    data: dict[str, Any] = {"ApproximateCreationDateTime": float(int(at)), "Keys": orjson.Fragment(keys)}
    if new is not None and stream.view_type in NEW_VIEWS:
        data["NewImage"] = orjson.Fragment(new)
    if old is not None and stream.view_type in OLD_VIEWS:
        data["OldImage"] = orjson.Fragment(old)
    data["SequenceNumber"] = seq_text(seq)
    data["SizeBytes"] = size
    data["StreamViewType"] = stream.view_type
    out: dict[str, Any] = {
        "eventID": hashlib.md5(f"{stream.arn}/{seq}".encode()).hexdigest(),
        "eventName": EVENT_NAMES[event], "eventVersion": "1.1", "eventSource": "aws:dynamodb",
        "awsRegion": region, "dynamodb": data,
    }
    if service:
        out["userIdentity"] = SERVICE_IDENTITY
    return out


def _iso(at: float) -> str:
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(at))
