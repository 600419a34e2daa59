"""On-demand backups on disk: one file per backup in `<data dir>/backups/`, written atomically.

A file is the snapshot format for one table (journal.snapshot's framing and chunks): a magic
header, a `B` frame with the backup's description (JSON), chunk frames (`S` or `Z`, compressed,
or `C`) of its items in key order (a compressed "L" chunk holds columns; files of earlier versions
hold "K" chunks of records), and an `E` frame with the item count. It is written to a temporary
name, synced and renamed before CreateBackup answers, so a backup that was acknowledged survives
kill -9, and one that exists is complete. DeleteBackup removes the file.
"""
from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

from dynalocal.journal.chunks import CHUNK_ITEMS, CHUNKS, SnapshotError, chunk_frames, decode_chunk
from dynalocal.journal.wal import FRAME, frame, fsync_directory, read_frames, write_file
from dynalocal.storage.partition import SIZES, Record

MAGIC = b"DLBACKUP\x00\x01"
SUFFIX = ".backup"
_END = struct.Struct("<Q")
Part = tuple[list[bytes], list[Record]]  # one source partition's keys and records, in key order


class BackupFileError(Exception):
    """A backup file is damaged."""


def directory_of(data_dir: str) -> Path:
    return Path(data_dir) / "backups"


def _frames(header: bytes, parts: list[Part]) -> Iterator[bytes]:
    """The backup file's bytes, a frame at a time: its chunks are a snapshot's."""
    yield MAGIC
    yield frame(b"B" + header)
    for index, (keys, records) in enumerate(parts):
        blobs, sizes = list(map(itemgetter(0), records)), array(SIZES, map(itemgetter(1), records))
        for at in range(0, len(keys), CHUNK_ITEMS):
            end = at + CHUNK_ITEMS
            yield from chunk_frames(index, keys[at:end], blobs[at:end], sizes[at:end])
    yield frame(b"E" + _END.pack(sum(len(keys) for keys, _ in parts)))


def write(directory: Path, backup_id: str, header: bytes, parts: list[Part]) -> Path:
    """Write one backup file atomically and durably; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / (backup_id + SUFFIX)
    write_file(final, _frames(header, parts))
    return final


def remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_directory(path.parent)


def headers(directory: Path) -> Iterator[tuple[Path, bytes]]:
    """(path, description JSON) of every complete backup file (leftover temporary files are removed)."""
    if not directory.is_dir():
        return
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".tmp"):
            path.unlink()
        elif path.name.endswith(SUFFIX):
            yield path, read_header(path)


def read_header(path: Path) -> bytes:
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + FRAME.size)
        if head[:len(MAGIC)] != MAGIC:
            raise BackupFileError(f"{path.name}: not a dynalocal backup")
        length, _ = FRAME.unpack_from(head, len(MAGIC))
        payload = f.read(length)
    if payload[:1] != b"B":
        raise BackupFileError(f"{path.name}: no description frame")
    return payload[1:]


def read_parts(path: Path) -> list[Part]:
    """The items of a backup file, per source partition in key order. Raises BackupFileError."""
    data = path.read_bytes()
    parts: dict[int, Part] = {}
    count = 0
    for offset, payload in read_frames(data, len(MAGIC)):
        if isinstance(payload, str):
            raise BackupFileError(f"{path.name}: {payload} at offset {offset}")
        kind = payload[:1]
        if kind in CHUNKS:  # plain or compressed, as a snapshot's
            try:
                index, keys, blobs, sizes = decode_chunk(payload)
            except SnapshotError as err:
                raise BackupFileError(f"{path.name}: {err} at offset {offset}") from None
            keys_of, records_of = parts.setdefault(index, ([], []))
            keys_of += keys
            records_of += zip(blobs, sizes)
            count += len(keys)
        elif kind == b"E":
            if _END.unpack_from(payload, 1)[0] != count:
                raise BackupFileError(f"{path.name}: item count mismatch")
            return [parts[i] for i in sorted(parts)]
    raise BackupFileError(f"{path.name}: incomplete (no end frame)")
