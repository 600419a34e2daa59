"""Snapshots: the whole database in one file, taken without stopping the server.

`snapshot-<G>.snap` holds the state as of the start of log segment G, *fuzzily*: tables
are copied a chunk at a time between requests, so writes made while copying may or may
not be in it. That is safe because every log record is a full redo (the whole new item,
the whole metadata, a drop), so replaying segments >= G over the snapshot always ends in
the exact state. File layout: a magic header, then frames (storage.wal framing) of

    b"M" name-length(u16) name meta-JSON            a table (its partitions follow)
    a chunk (journal.chunks)                        a run of one partition's items, sorted: snapshots
                                                    write one "P" chunk per leaf, as the partition keeps it
    b"E" tables(u32) items(u64)                     the end; a file without it is invalid

A capture copies no item: it keeps the partition's (immutable) leaves, a few at a time between
requests, merging the changes each leaf holds first; the writer's thread compresses their buffers.

The file is written to a temporary name, synced and renamed (wal.write_file), so a snapshot file
that exists is complete.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
import sys
import zlib
from array import array
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dynalocal.journal.chunks import (
    CHUNK_ITEMS,
    CHUNKS,
    SnapshotError,
    decode_chunk,
    leaf_frame,
    leaf_of,
    plain_chunk,
    unpack_leaf,
)
from dynalocal.journal.tablemeta import encode_meta, restore_meta
from dynalocal.journal.wal import FRAME, frame, frame_header, write_file
from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.leaf import Leaf
from dynalocal.storage.mutation import RECOVERY, Mutation
from dynalocal.storage.partition import SIZES, Span

__all__ = ["CHUNKS", "MAGIC", "Image", "SnapshotError", "load", "plain_chunk", "snapshot_path", "snapshots",
           "verify", "write"]
MAGIC = b"DLSNAP\x00\x01"
_SNAPSHOT = re.compile(r"snapshot-(\d{8})\.snap")
_U16, _U32, _END = struct.Struct("<H"), struct.Struct("<II"), struct.Struct("<IQ")
_P = ord("P")  # a leaf chunk's first byte
Unpacked = tuple[int, int, list[bytes]]  # a "P" chunk's partition, count and buffers (chunks.unpack_leaf)


def snapshot_path(directory: Path, generation: int) -> Path:
    return directory / f"snapshot-{generation:08d}.snap"


def snapshots(directory: Path) -> list[tuple[int, Path]]:
    """(generation, path) of every complete snapshot in the directory, oldest first."""
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _SNAPSHOT.fullmatch(p.name))]
    return sorted(found)


@dataclass
class _TableImage:
    name: str
    meta: bytes
    chunks: list[tuple[int, list[Span]]] = field(default_factory=list)  # (partition, spans of its leaves)


@dataclass
class Image:
    """A (fuzzy) copy of the database, captured in steps and written by `write`."""

    tables: list[_TableImage] = field(default_factory=list)
    items: int = 0

    def capture(self, db: Database, chunk: int = CHUNK_ITEMS) -> Iterator[None]:
        """Copy the database, yielding after every chunk so the caller can serve requests in between."""
        for name in list(db.tables):
            entry = db.tables.get(name)
            while entry is not None:
                image = yield from self._capture_table(db, name, entry, chunk)
                if image is not None:
                    self.tables.append(image)
                    self.items += sum(b - a for _, spans in image.chunks for _, a, b in spans)
                    break
                entry = db.tables.get(name)  # re-partitioned or replaced while copying: start again

    @staticmethod
    def _capture_table(db: Database, name: str, entry: TableEntry,
                       chunk: int) -> Generator[None, None, _TableImage | None]:
        table = entry.table
        partitions = table.partitions
        image = _TableImage(name, encode_meta(entry))
        for index, part in enumerate(partitions):
            last = None
            while True:
                # One chunk per step, from just after the last key copied (writes may come in between).
                spans = part.spans(last, None, (False, True), limit=chunk)
                if not spans:
                    break
                image.chunks.append((index, spans))
                leaf, _, b = spans[-1]
                last = leaf.key(b - 1)
                yield
                if db.tables.get(name) is not entry:
                    return None
                if table.partitions is not partitions:
                    return None
        return image


def _span_frames(index: int, leaf: Leaf, a: int, b: int) -> Iterator[bytes]:
    """The chunk frames of items a..b-1 of a leaf of partition `index`: one "P" chunk."""
    yield leaf_frame(index, leaf if b - a == len(leaf) else leaf.slice(a, b))


def _frames(image: Image) -> Iterator[bytes]:
    """The snapshot file's bytes, a frame at a time."""
    yield MAGIC
    for table in image.tables:
        raw_name = table.name.encode()
        yield frame(b"M" + _U16.pack(len(raw_name)) + raw_name + table.meta)
        for index, spans in table.chunks:
            for leaf, a, b in spans:
                yield from _span_frames(index, leaf, a, b)
    yield frame(b"E" + _END.pack(len(image.tables), image.items))


def write(image: Image, directory: Path, generation: int) -> int:
    """Write the image as snapshot `generation` (atomically); return the file size."""
    return write_file(snapshot_path(directory, generation), _frames(image))


def _fill(entry: TableEntry, leaves: dict[int, list[Leaf]], columns: dict[int, tuple[list, list, array]]) -> None:
    """Load collected chunks into the table's partitions: a partition's leaves as they are when they fit
    it (as they should), else item by item."""
    table = entry.table
    for index, found in sorted(leaves.items()):
        part = table.partitions[index] if index < len(table.partitions) else None
        first, last = found[0].key(0), found[-1].key(len(found[-1]) - 1)
        ordered = all(a.key(len(a) - 1) < b.key(0) for a, b in zip(found, found[1:]))
        if part is not None and not len(part) and ordered and \
                part.lo <= int.from_bytes(first[:8], "big") and int.from_bytes(last[:8], "big") < part.hi:
            part.load_leaves(found)
        else:
            collected = columns.setdefault(index, ([], [], array(SIZES)))
            for leaf in found:
                collected[0].extend(leaf.key_list())
                collected[1].extend(leaf.blob_list())
                collected[2].extend(leaf.sizes)
    for index, (keys, blobs, sizes) in sorted(columns.items()):
        part = table.partitions[index] if index < len(table.partitions) else None
        inside = part is not None and not len(part) and all(
            part.lo <= int.from_bytes(k[:8], "big") < part.hi for k in (keys[0], keys[-1]))
        if part is not None and inside:
            part.load_columns(keys, blobs, sizes)  # keys arrive sorted: one linear build
        else:
            for key, record in zip(keys, zip(blobs, sizes)):
                table.apply(Mutation(key, record, origin=RECOVERY))


def verify(path: Path) -> int:
    """Read a snapshot back frame by frame (checksums, chunks decompressed, end frame) without building
    tables; return its item count. Raises SnapshotError."""
    items = tables = 0
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise SnapshotError(f"{path.name}: not a dynalocal snapshot")
        while header := f.read(FRAME.size):
            length, crc = FRAME.unpack(header) if len(header) == FRAME.size else (0, 0)
            payload = f.read(length)
            if length == 0 or len(payload) != length or zlib.crc32(payload) != crc:
                raise SnapshotError(f"{path.name}: damaged frame at offset {f.tell() - len(payload) - len(header)}")
            kind = payload[:1]
            if kind in CHUNKS:
                items += _U32.unpack_from(plain_chunk(payload), 1)[1]
            elif kind == b"M":
                tables += 1
            elif kind == b"E" and _END.unpack_from(payload, 1) == (tables, items) and not f.read(1):
                return items
            else:
                raise SnapshotError(f"{path.name}: unexpected frame or counts at offset {f.tell() - length}")
    raise SnapshotError(f"{path.name}: incomplete (no end frame)")


AHEAD = 32  # chunks checked and decompressed ahead of the one being loaded (memory: a few MB of leaves)


def _checked_chunk(data: mmap.mmap, start: int, length: int, crc: int) -> bytes | Unpacked | str:
    """A chunk frame's plain payload (a "P" chunk's buffers), or why it is damaged (in the pool: crc32,
    zstd and zlib release the GIL)."""
    with memoryview(data) as view, view[start:start + length] as payload:
        if zlib.crc32(payload) != crc:
            return "checksum mismatch"
        try:
            return unpack_leaf(payload) if payload[0] == _P else plain_chunk(payload)
        except SnapshotError as err:
            return str(err)


Ahead = tuple[int, bytes | str, "Future[bytes | Unpacked | str] | None"]


def _ahead(data: mmap.mmap, pool: ThreadPoolExecutor) -> Iterator[Ahead]:
    """(offset, payload or why the file is damaged there, a chunk's plain payload to come) of each frame.

    A chunk's payload is only its kind byte: its checksum and decompression happen in `pool`, on a
    second core while the chunks before it are loaded."""
    pending: deque[Ahead] = deque()
    pos, end = len(MAGIC), len(data)
    while pos < end:
        head = frame_header(data, pos, end)
        if isinstance(head, str):
            pending.append((pos, head, None))
            break
        length, crc = head
        start = pos + FRAME.size
        kind = data[start:start + 1]
        if kind in CHUNKS:
            pending.append((pos, kind, pool.submit(_checked_chunk, data, start, length, crc)))
        else:
            payload = data[start:start + length]
            pending.append((pos, payload if zlib.crc32(payload) == crc else "checksum mismatch", None))
        if len(pending) > AHEAD:
            yield pending.popleft()
        pos = start + length
    yield from pending


def load(path: Path, db: Database) -> tuple[int, int]:
    """Load a snapshot into an empty database; return (tables, items). Raises SnapshotError."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)  # the pool's thread takes the GIL back soon after each checksum and chunk
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < len(MAGIC) or f.read(len(MAGIC)) != MAGIC:
                raise SnapshotError(f"{path.name}: not a dynalocal snapshot")
            # mapped, not read: a chunk's pages are read where its checksum is computed, in the pool
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data, \
                    ThreadPoolExecutor(1, "dynalocal-snapshot-load") as pool:
                return _load_frames(path, data, db, pool)
    finally:
        sys.setswitchinterval(interval)


def _load_frames(path: Path, data: mmap.mmap, db: Database, pool: ThreadPoolExecutor) -> tuple[int, int]:
    entry: TableEntry | None = None
    leaves: dict[int, list[Leaf]] = {}
    columns: dict[int, tuple[list, list, array]] = {}
    items = 0
    for offset, payload, plain in _ahead(data, pool):
        if isinstance(payload, str):
            raise SnapshotError(f"{path.name}: {payload} at offset {offset}")
        kind = payload[:1]
        if kind == b"M" or kind == b"E":
            if entry is not None:
                _fill(entry, leaves, columns)
            entry, leaves, columns = None, {}, {}
        if kind == b"M":
            (length,) = _U16.unpack_from(payload, 1)
            name = payload[3:3 + length].decode()
            entry = restore_meta(db, name, payload[3 + length:])
        elif plain is not None and entry is not None:
            items += _collect(plain.result(), leaves, columns, f"{path.name}: %s at offset {offset}")
        elif kind == b"E":
            tables, expected = _END.unpack_from(payload, 1)
            if expected != items or offset + FRAME.size + len(payload) != len(data):
                raise SnapshotError(f"{path.name}: holds {items} items, its end frame says {expected}")
            return tables, items
        else:
            raise SnapshotError(f"{path.name}: unexpected frame at offset {offset}")
    raise SnapshotError(f"{path.name}: incomplete (no end frame)")


def _collect(chunk: bytes | Unpacked | str, leaves: dict[int, list[Leaf]],
             columns: dict[int, tuple[list, list, array]], where: str) -> int:
    """Add a decoded chunk to its partition's leaves or columns; return its item count."""
    if isinstance(chunk, str):
        raise SnapshotError(where % chunk)
    if isinstance(chunk, tuple):
        index, count, buffers = chunk
        leaves.setdefault(index, []).append(leaf_of(count, buffers))
        return count
    index, keys, blobs, sizes = decode_chunk(chunk)
    if keys:
        collected = columns.setdefault(index, ([], [], array(SIZES)))
        collected[0].extend(keys)
        collected[1].extend(blobs)
        collected[2].extend(sizes)
    return len(keys)
