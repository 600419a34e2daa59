"""Stream persistence: the binary form of a stream record, and stream snapshot files.

Stream events travel in the write-ahead log as STREAM entries (name = the stream ARN,
payload = b"R" + a packed record, or b"J" + a JSON control event: enable, open, close,
disable). At a snapshot the registry's whole state is written, as the same events, to
`streams-<generation>.dat` (frames as in the log); recovery replays that file, then the
log's STREAM entries after it. Replaying is idempotent, so the two may overlap.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from dynalocal.journal.wal import frame, read_frames, write_file
from dynalocal.storage.streamrecord import pack_record
from dynalocal.storage.streams import StreamRegistry

MAGIC = b"DLSTRM\x00\x01"


def snapshot_path(directory: Path, generation: int) -> Path:
    return directory / f"streams-{generation:08d}.dat"


def _frames(captured: list[tuple[str, list]]) -> Iterator[bytes]:
    """The stream file's bytes, a frame at a time."""
    yield MAGIC
    for arn, parts in captured:
        raw_arn = arn.encode()
        head = struct.pack("<H", len(raw_arn)) + raw_arn
        for part in parts:
            if isinstance(part, bytes):
                yield frame(head + part)
            else:
                shard_id, records = part
                for record in records:
                    yield frame(head + pack_record(shard_id, record))


def write_snapshot(captured: list[tuple[str, list]], directory: Path, generation: int) -> None:
    """Write the captured stream state as `streams-<generation>.dat`, atomically."""
    write_file(snapshot_path(directory, generation), _frames(captured))


def load_snapshot(directory: Path, generation: int | None, registry: StreamRegistry) -> None:
    """Replay `streams-<generation>.dat` into the registry (absent file: no streams then)."""
    from dynalocal.journal.snapshot import SnapshotError  # here: snapshot imports the catalog, which imports streams

    if generation is None:
        return
    path = snapshot_path(directory, generation)
    if not path.exists():
        return
    data = path.read_bytes()
    if data[:len(MAGIC)] != MAGIC:
        raise SnapshotError(f"{path.name}: not a dynalocal stream snapshot")
    for offset, payload in read_frames(data, len(MAGIC)):
        if isinstance(payload, str):
            raise SnapshotError(f"{path.name}: {payload} at offset {offset}")
        (length,) = struct.unpack_from("<H", payload)
        registry.replay(payload[2:2 + length].decode(), payload[2 + length:])


def remove_older(directory: Path, generation: int) -> None:
    """Delete stream snapshots superseded by `generation`'s."""
    for path in directory.glob("streams-*.dat"):
        try:
            if int(path.stem.split("-")[1]) < generation:
                path.unlink()
        except ValueError:
            continue
