"""`dynalocal repair` for the newest stream snapshot (`streams-<n>.dat`): keep every intact event.

Start-up refuses a damaged stream snapshot (recovery.py). Repair rewrites it with every frame it can
read and replay (stream enables, shard openings and closings, records), in order, and keeps the
original as `streams-<n>.dat.damaged`, like the table snapshot's repair (snaprepair.py). Replaying
is tolerant (storage.streams.StreamRegistry.replay): records of a shard whose opening was lost are
skipped, so they are counted as dropped too. Nothing readable: an empty stream snapshot is written.
Tables and items are never touched; the log after the snapshot is replayed over it as usual. A
stream whose enabling was lost is gone while its table still names it (StreamSpecification): disabling
and re-enabling the table's stream (UpdateTable) gives it a new one, and repair says so.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

from dynalocal.journal.repair import keep_original, replace_atomically
from dynalocal.journal.snapshot import SnapshotError, snapshots
from dynalocal.journal.streamlog import MAGIC, load_snapshot, snapshot_path
from dynalocal.journal.wal import FRAME, frame, next_intact_frame, read_frames
from dynalocal.storage.streams import StreamRegistry

# Where a stream frame may start: a frame header, then the ARN's 2-byte length (< 1024) and the ARN.
_CANDIDATE = re.compile(rb"(?=.{8}[\x00-\xff][\x00-\x03]arn:)", re.DOTALL)
_READ_ERRORS = (SnapshotError, ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError)


def _next_frame(data: bytes, start: int) -> int | None:
    """Offset of the first intact stream frame starting after `start` (searching through damage), or None."""
    return next_intact_frame(data, start, _CANDIDATE)


def _salvage(data: bytes, registry: StreamRegistry) -> tuple[list[bytes], list[str]]:
    """The intact, replayable frame payloads of a stream snapshot (replayed into `registry`), and what was dropped."""
    kept: list[bytes] = []
    dropped: list[str] = []
    pos = len(MAGIC) if data[:len(MAGIC)] == MAGIC else _next_frame(data, -1)
    if data[:len(MAGIC)] != MAGIC:
        dropped.append(f"{pos if pos is not None else len(data)} bytes at offset 0 (a damaged file header)")
    while pos is not None and pos < len(data):
        for offset, payload in read_frames(data, pos):
            if isinstance(payload, str):
                pos = _next_frame(data, offset)
                stop = pos if pos is not None else len(data)
                dropped.append(f"{stop - offset} bytes at offset {offset} ({payload})")
                break
            try:
                (length,) = struct.unpack_from("<H", payload)
                registry.replay(payload[2:2 + length].decode(), payload[2 + length:])
            except _READ_ERRORS as err:
                dropped.append(f"{FRAME.size + len(payload)} bytes at offset {offset} (an unreadable event: {err})")
                continue
            kept.append(payload)
        else:
            break
    return kept, dropped


def _counts(registry: StreamRegistry) -> tuple[int, int, int]:
    """Streams, shards and records a registry holds."""
    shards = [shard for stream in registry.streams.values() for shard in stream.shards.values()]
    return len(registry.streams), len(shards), sum(len(shard.records) for shard in shards)


def repair_streams(directory: Path) -> str | None:
    """Salvage the newest stream snapshot if start-up would refuse it; return what was done (None: intact or absent)."""
    snaps = snapshots(directory)
    if not snaps or not snapshot_path(directory, snaps[-1][0]).exists():
        return None
    try:
        load_snapshot(directory, snaps[-1][0], StreamRegistry())
        return None
    except _READ_ERRORS as err:
        problem = str(err)
    path = snapshot_path(directory, snaps[-1][0])
    problem = problem if problem.startswith(path.name) else f"{path.name}: {problem}"
    data = path.read_bytes()
    registry = StreamRegistry()
    kept, dropped = _salvage(data, registry)
    streams, shards, records = _counts(registry)
    skipped = sum(1 for p in kept if p[2 + struct.unpack_from("<H", p)[0]:][:1] == b"R") - records
    saved = keep_original(path)
    replace_atomically(path, MAGIC + b"".join(frame(p) for p in kept))
    lost = "; ".join(dropped) or "nothing"
    gone = ("; a table whose stream was lost still says StreamEnabled but has no stream: disable and re-enable "
            "it (UpdateTable StreamSpecification) for a new one")
    if skipped > 0:
        lost += f"; {skipped} intact records of shards whose opening was in the dropped bytes"
    if not kept:
        return (f"{problem}: the stream snapshot is damaged and nothing in it could be read: wrote an empty "
                f"{path.name} (dropped {lost}); the stream records it held are lost, tables and items are kept; "
                f"the original is kept as {saved.name}{gone}")
    return (f"{problem}: the stream snapshot is damaged; rewrote {path.name} with {streams} streams, {shards} shards "
            f"and {records} records from it, dropped {lost}; tables and items are kept; the original is kept as "
            f"{saved.name}{gone if dropped else ''}")
