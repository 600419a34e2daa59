"""Point-in-time recovery history on disk: `<data dir>/pitr/<table id>.hist`, one frame per change.

Each entry of a table's storage.history.History is appended (os.write, before the write it
describes is acknowledged; the page cache keeps it through kill -9, as it keeps the log) as a
checksummed frame of

    time (f64 LE) | len(key) (u32) | size (i32, -1: no old item) | key | old item JSON

At start-up the file is read up to its first damaged frame (a torn last append), entries older
than the recovery period are dropped, and the file is rewritten without them when they were many.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

from dynalocal.journal.wal import frame, fsync_directory, read_frames
from dynalocal.storage.history import Entry
from dynalocal.storage.partition import Record

MAGIC = b"DLPITR\x00\x01"
_HEAD = struct.Struct("<dIi")


def directory_of(data_dir: str) -> Path:
    return Path(data_dir) / "pitr"


def encode(at: float, key: bytes, old: Record | None) -> bytes:
    if old is None:
        return frame(_HEAD.pack(at, len(key), -1) + key)
    return frame(b"".join((_HEAD.pack(at, len(key), old[1]), key, old[0])))


def read(path: Path, since: float) -> tuple[list[Entry], bool]:
    """The entries of a history file at or after `since`, and whether the file should be rewritten
    (it holds earlier ones, or a torn last append that later appends must not follow)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], False
    if data[:len(MAGIC)] != MAGIC:
        return [], True
    out: list[Entry] = []
    rewrite, size = False, _HEAD.size
    for _, payload in read_frames(data, len(MAGIC)):
        if isinstance(payload, str):
            return out, True  # a torn last append: its write was never acknowledged
        at, n, item_size = _HEAD.unpack_from(payload, 0)
        if at < since:
            rewrite = True
            continue
        key = payload[size:size + n]
        out.append((at, key, None if item_size < 0 else (payload[size + n:], item_size)))
    return out, rewrite


class HistoryFile:
    """The append-only file of one table's history."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(self.fd).st_size == 0:
            os.write(self.fd, MAGIC)
            fsync_directory(path.parent)

    def append(self, at: float, key: bytes, old: Record | None) -> None:
        os.write(self.fd, encode(at, key, old))

    def rewrite(self, entries: list[Entry]) -> None:
        """Replace the file by these entries (atomically), and append to the new one from now."""
        temp = self.path.with_name(self.path.name + ".tmp")
        with open(temp, "wb") as out:
            out.write(MAGIC)
            out.write(b"".join(encode(*entry) for entry in entries))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, self.path)
        fsync_directory(self.path.parent)
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
