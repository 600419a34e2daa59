"""Snapshots: the whole database in one file, taken without stopping the server.

`snapshot-<G>.snap` holds the state as of the start of log segment G, *fuzzily*: tables
are copied a chunk at a time between requests, so writes made while copying may or may
not be in it. That is safe because every log record is a full redo (the whole new item,
the whole metadata, a drop), so replaying segments >= G over the snapshot always ends in
the exact state. File layout: a magic header, then frames (storage.wal framing) of

    b"M" name-length(u16) name meta-JSON            a table (its partitions follow)
    b"L" partition(u32) count(u32) sizes(u32 x count) marshal((keys, blobs))
                                                    a chunk of one partition's items, sorted
    b"S" zstd(a b"L", b"K" or b"C" payload)         the same, compressed (what `write` writes)
    b"K" partition(u32) count(u32) marshal((keys, records))   a chunk as earlier versions wrote it
    b"C" partition(u32) count(u32) key-offsets(u32 x count+1) value-offsets(u32 x count+1)
         sizes(u32 x count) keys values             a chunk as earlier versions wrote it
    b"Z" zlib(a b"C" payload)                       the same, compressed by earlier versions
    b"E" tables(u32) items(u64)                     the end; a file without it is invalid

Chunks are compressed with zstd at level -3, one of its fast levels (`zstandard`, in the writer's
thread): uncompressed, a chunk spends beside the items' DynamoDB size the wire JSON's syntax (braces,
quotes, type tags), the encoded key (token, length, the key values again) and ~20 bytes of type codes
and lengths per item, 1.5x the logical size for items of ~140 bytes and more for smaller ones. A
snapshot's CPU is paid by the writes that run beside it, so speed comes first: 1M items of ~200 bytes
of random letters ("C" chunks, 276 MB) were captured, written and read back in 0.93 s of CPU at level -3
against 1.27 s at level 1 (decompressing 4x faster), to 183 MB instead of 130 MB; zlib took 3.88 s to
compress them to 141 MB. Files with "C" and "Z" chunks still load.

An "L" chunk holds the partition's columns as its leaves keep them (storage.partition): the keys
and item blobs as `marshal` writes them (format version 2: no references between objects, read by
every Python 3), so loading builds the objects a partition keeps in marshal's C loop instead of
slicing them out of offsets in Python, and the sizes as an array of little-endian u32. Earlier "K"
chunks held (item, size) records instead, which a load must split again into columns. marshal trusts
its input: a chunk is decoded only once its frame's checksum has matched, and its shape is checked
(two lists of `count` entries, `count` sizes); the files are the server's own.

The file is written to a temporary name, synced and renamed (wal.write_file), so a snapshot file
that exists is complete.
"""
from __future__ import annotations

import marshal
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
from operator import itemgetter
from pathlib import Path
from threading import local

import zstandard
from zstandard import ZstdError

from dynalocal.journal.tablemeta import encode_meta, restore_meta
from dynalocal.journal.wal import FRAME, frame, frame_header, write_file
from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.mutation import RECOVERY, Mutation
from dynalocal.storage.partition import SIZES

MAGIC = b"DLSNAP\x00\x01"
CHUNK_ITEMS = 8192
CHUNK_BYTES = 8 * 1024 * 1024  # a chunk frame is split until its item bytes fit
LEVEL = -3  # a fast zstd level: 0.7 of the plain size for 40 % of level 1's compression time
CHUNKS = (b"L", b"K", b"S", b"C", b"Z")
MARSHAL_VERSION = 2  # no references between objects: the fastest to write and read, read by every Python 3
_SNAPSHOT = re.compile(r"snapshot-(\d{8})\.snap")
_U16, _U32, _END = struct.Struct("<H"), struct.Struct("<II"), struct.Struct("<IQ")
_BIG_ENDIAN = sys.byteorder == "big"
_S, _Z = ord("S"), ord("Z")  # a compressed chunk's first byte
_PLAIN = (b"L", b"K", b"C")  # a plain chunk's
_blob, _size = itemgetter(0), itemgetter(1)
_codecs = local()  # per thread: snapshots and backups are written in executor threads


class SnapshotError(Exception):
    """A snapshot file is damaged: recovery cannot proceed safely without it."""


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
    chunks: list[tuple[int, list[bytes], list[bytes], array]] = field(default_factory=list)  # (partition, columns)


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
                    self.items += sum(len(chunk[1]) for chunk in image.chunks)
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
                step = next(part.columns(last, None, (False, True), size=chunk), None)
                if step is None:
                    break
                keys, blobs, sizes = step
                image.chunks.append((index, keys, blobs, sizes))
                last = keys[-1]
                yield
                if db.tables.get(name) is not entry:
                    return None
                if table.partitions is not partitions:
                    return None
        return image


def _chunk_frames(index: int, keys: list[bytes], blobs: list[bytes], sizes: array) -> Iterator[bytes]:
    """Framed chunk payloads for these items, halved until each holds at most CHUNK_BYTES of items."""
    if len(keys) > 1 and sum(map(len, blobs)) > CHUNK_BYTES:
        half = len(keys) // 2
        yield from _chunk_frames(index, keys[:half], blobs[:half], sizes[:half])
        yield from _chunk_frames(index, keys[half:], blobs[half:], sizes[half:])
        return
    if _BIG_ENDIAN:
        sizes = array(SIZES, sizes)
        sizes.byteswap()
    raw = b"L" + _U32.pack(index, len(keys)) + sizes.tobytes() + marshal.dumps((keys, blobs), MARSHAL_VERSION)
    yield frame(b"S" + _zstd().compress(raw))


def _frames(image: Image) -> Iterator[bytes]:
    """The snapshot file's bytes, a frame at a time."""
    yield MAGIC
    for table in image.tables:
        raw_name = table.name.encode()
        yield frame(b"M" + _U16.pack(len(raw_name)) + raw_name + table.meta)
        for index, keys, blobs, sizes in table.chunks:
            yield from _chunk_frames(index, keys, blobs, sizes)
    yield frame(b"E" + _END.pack(len(image.tables), image.items))


def write(image: Image, directory: Path, generation: int) -> int:
    """Write the image as snapshot `generation` (atomically); return the file size."""
    return write_file(snapshot_path(directory, generation), _frames(image))


def _u32_list(data: bytes, start: int, count: int) -> tuple[array, int]:
    out = array("I")
    end = start + 4 * count
    out.frombytes(data[start:end])
    if _BIG_ENDIAN:
        out.byteswap()
    return out, end


def plain_chunk(payload: bytes | memoryview) -> bytes:
    """A chunk frame's payload as a b"C" payload (decompressing a b"S" or b"Z" one). Raises SnapshotError."""
    kind = payload[0] if len(payload) else 0
    if kind != _S and kind != _Z:
        return bytes(payload)  # the same object when given bytes
    try:
        plain = _unzstd().decompress(payload[1:]) if kind == _S else zlib.decompress(payload[1:])
    except (zlib.error, ZstdError) as err:
        raise SnapshotError(f"undecodable compressed chunk: {err}") from None
    if plain[:1] not in _PLAIN:
        raise SnapshotError("compressed chunk holds no chunk")
    return plain


def _zstd() -> zstandard.ZstdCompressor:
    """A compressor for this thread (zstandard's objects are not to be shared between threads)."""
    compressor = getattr(_codecs, "compressor", None)
    if compressor is None:
        compressor = _codecs.compressor = zstandard.ZstdCompressor(level=LEVEL)
    return compressor


def _unzstd() -> zstandard.ZstdDecompressor:
    decompressor = getattr(_codecs, "decompressor", None)
    if decompressor is None:
        decompressor = _codecs.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def _decode_chunk(payload: bytes) -> tuple[int, list[bytes], list[bytes], array]:
    """A chunk's (partition, keys, blobs, sizes), whatever version wrote it."""
    payload = plain_chunk(payload)
    kind = payload[:1]
    index, count = _U32.unpack_from(payload, 1)
    if kind == b"L":
        if len(payload) < 1 + _U32.size + 4 * count:
            raise SnapshotError("chunk size mismatch")
        sizes, pos = _u32_list(payload, 1 + _U32.size, count)
        keys, blobs = _unmarshal(payload, pos, count)
        return index, keys, blobs, sizes
    if kind == b"K":
        keys, records = _unmarshal(payload, 1 + _U32.size, count)
        return index, keys, list(map(_blob, records)), array(SIZES, map(_size, records))
    key_offsets, pos = _u32_list(payload, 1 + _U32.size, count + 1)
    blob_offsets, pos = _u32_list(payload, pos, count + 1)
    sizes, pos = _u32_list(payload, pos, count)
    keys_data = payload[pos:pos + key_offsets[-1]]
    blob_data = payload[pos + key_offsets[-1]:pos + key_offsets[-1] + blob_offsets[-1]]
    if pos + key_offsets[-1] + blob_offsets[-1] != len(payload):
        raise SnapshotError("chunk size mismatch")
    keys = [keys_data[a:b] for a, b in zip(key_offsets, key_offsets[1:])]
    return index, keys, [blob_data[a:b] for a, b in zip(blob_offsets, blob_offsets[1:])], sizes


def _unmarshal(payload: bytes, start: int, count: int) -> tuple[list, list]:
    """The two lists of `count` entries an "L" or "K" chunk marshals from `start`."""
    try:
        with memoryview(payload) as view:
            items = marshal.loads(view[start:])
    except (EOFError, ValueError, TypeError) as err:
        raise SnapshotError(f"undecodable chunk: {err}") from None
    if type(items) is not tuple or len(items) != 2 or not all(type(part) is list and len(part) == count
                                                              for part in items):
        raise SnapshotError("chunk size mismatch")
    return items


def _fill(entry: TableEntry, parts: dict[int, tuple[list, list, array]]) -> None:
    """Load collected chunks into the table's partitions (in bulk when they fit, as they should)."""
    table = entry.table
    for index, (keys, blobs, sizes) in sorted(parts.items()):
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


AHEAD = 4  # chunks checked and decompressed ahead of the one being loaded (memory: a few 8 MB chunks)


def _checked_chunk(data: mmap.mmap, start: int, length: int, crc: int) -> bytes | str:
    """A chunk frame's plain payload, or why it is damaged (in the pool: crc32, zstd and zlib release the GIL)."""
    with memoryview(data) as view, view[start:start + length] as payload:
        if zlib.crc32(payload) != crc:
            return "checksum mismatch"
        try:
            return plain_chunk(payload)
        except SnapshotError as err:
            return str(err)


def _ahead(data: mmap.mmap, pool: ThreadPoolExecutor) -> Iterator[tuple[int, bytes | str, Future[bytes | str] | None]]:
    """(offset, payload or why the file is damaged there, a chunk's plain payload to come) of each frame.

    A chunk's payload is only its kind byte: its checksum and decompression happen in `pool`, on a
    second core while the chunks before it are loaded."""
    pending: deque[tuple[int, bytes | str, Future[bytes | str] | None]] = deque()
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
    parts: dict[int, tuple[list, list, array]] = {}
    items = 0
    for offset, payload, plain in _ahead(data, pool):
        if isinstance(payload, str):
            raise SnapshotError(f"{path.name}: {payload} at offset {offset}")
        kind = payload[:1]
        if kind == b"M" or kind == b"E":
            if entry is not None:
                _fill(entry, parts)
            entry, parts = None, {}
        if kind == b"M":
            (length,) = _U16.unpack_from(payload, 1)
            name = payload[3:3 + length].decode()
            entry = restore_meta(db, name, payload[3 + length:])
        elif plain is not None and entry is not None:
            chunk = plain.result()
            if isinstance(chunk, str):
                raise SnapshotError(f"{path.name}: {chunk} at offset {offset}")
            index, keys, blobs, sizes = _decode_chunk(chunk)
            if keys:
                collected = parts.setdefault(index, ([], [], array(SIZES)))
                collected[0].extend(keys)
                collected[1].extend(blobs)
                collected[2].extend(sizes)
                items += len(keys)
        elif kind == b"E":
            tables, expected = _END.unpack_from(payload, 1)
            if expected != items or offset + FRAME.size + len(payload) != len(data):
                raise SnapshotError(f"{path.name}: holds {items} items, its end frame says {expected}")
            return tables, items
        else:
            raise SnapshotError(f"{path.name}: unexpected frame at offset {offset}")
    raise SnapshotError(f"{path.name}: incomplete (no end frame)")
