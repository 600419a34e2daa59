"""Idempotency tokens in the log: a transaction's ClientRequestToken journaled with its writes.

A TOKEN record (wal.TOKEN) sits in the same group frame as the transaction's item writes, so
a crash keeps both or neither. Its name is the token; its payload is

    wall-clock time recorded (f64 LE, epoch seconds) | fingerprint (32 bytes) | response JSON

Wall-clock time, because the in-memory record's monotonic time means nothing after a restart;
`restore` converts it back and drops tokens past their lifetime. A snapshot does not hold
tokens: the journal writes the live ones again as the first group of the segment the snapshot
starts (see http.durability), so the log after a snapshot still holds every live token.
"""
from __future__ import annotations

import struct

import orjson

_HEAD = struct.Struct("<d")
FINGERPRINT = 32  # a sha256 digest


def encode_token(fingerprint: bytes, response: dict | bytes, wall: float) -> bytes:
    """The payload of one TOKEN record."""
    body = orjson.dumps(response) if isinstance(response, dict) else response
    return _HEAD.pack(wall) + fingerprint + body


def restore(records: dict[str, bytes], lifetime: float, wall_now: float,
            monotonic_now: float) -> dict[str, tuple[bytes, bytes, float]]:
    """In-memory records (token -> (fingerprint, response, monotonic time)) of the logged tokens
    still within `lifetime` seconds; older ones (and unreadable ones) are dropped."""
    out: dict[str, tuple[bytes, bytes, float]] = {}
    for token, payload in records.items():
        if len(payload) < _HEAD.size + FINGERPRINT:
            continue
        (wall,) = _HEAD.unpack_from(payload)
        age = max(0.0, wall_now - wall)  # a clock set back since: kept for a whole lifetime from now
        if age > lifetime:
            continue  # expired
        end = _HEAD.size + FINGERPRINT
        out[token] = (payload[_HEAD.size:end], payload[end:], monotonic_now - age)
    return out
