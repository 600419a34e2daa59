"""Chunk frames: a run of one partition's items in a snapshot or a backup file, in key order.

Every chunk payload starts with its kind byte, the partition's index (u32) and the item count (u32):

    b"P" partition count lengths(u32 x 6) zstd(keys) zstd(ko) zstd(heads) zstd(body) zstd(bo) zstd(sizes)
                                one packed leaf (storage.leaf) as the partition holds it, each buffer
                                compressed on its own (what snapshots write)
    b"L" partition count sizes(u32 x count) marshal((keys, blobs))     columns (what backups write)
    b"S" zstd(a b"L", b"K" or b"C" payload)                            the same, compressed
    b"K" partition count marshal((keys, records))                      as earlier versions wrote it
    b"C" partition count key-offsets(u32 x count+1) value-offsets(u32 x count+1) sizes(u32 x count)
         keys values                                                   as earlier versions wrote it
    b"Z" zlib(a b"C" payload)                                          the same, by earlier versions

A "P" chunk is a leaf's own buffers: writing one copies nothing per item, and loading one makes a
leaf from six buffers, each a single zstd frame that decompresses into the bytes object the leaf
keeps (in the loader's worker thread, which releases the GIL: the page faults of touching the
loaded data are taken there, beside the main thread). Arrays are stored little-endian. Compression
is zstd at level -3, one of its fast levels (`zstandard`): a snapshot's CPU is paid by the writes
that run beside it, so speed comes first (1M items of ~200 bytes: 0.93 s of CPU to capture, write
and read back at level -3 against 1.27 s at level 1, 183 MB instead of 130 MB).

marshal trusts its input: an "L" or "K" chunk is decoded only once its frame's checksum has matched,
and its shape is checked; a "P" chunk's buffers are checked against its count and offsets. The files
are the server's own.
"""
from __future__ import annotations

import marshal
import struct
import sys
import zlib
from array import array
from collections.abc import Iterator
from operator import itemgetter
from threading import local

import zstandard
from zstandard import ZstdError

from dynalocal.journal.wal import frame
from dynalocal.storage.leaf import COLUMN, Leaf

CHUNK_ITEMS = 8192
CHUNK_BYTES = 8 * 1024 * 1024  # a columns chunk frame is split until its item bytes fit
LEVEL = -3  # a fast zstd level: 0.7 of the plain size for 40 % of level 1's compression time
CHUNKS = (b"P", b"L", b"K", b"S", b"C", b"Z")
MARSHAL_VERSION = 2  # no references between objects: the fastest to write and read, read by every Python 3
_U32 = struct.Struct("<II")
_LENGTHS = struct.Struct("<6I")
_BIG_ENDIAN = sys.byteorder == "big"
_S, _Z = ord("S"), ord("Z")  # a compressed chunk's first byte
_PLAIN = (b"L", b"K", b"C")  # a compressed chunk's inner kinds
_blob, _size = itemgetter(0), itemgetter(1)
_codecs = local()  # per thread: snapshots and backups are written in executor threads
Columns = tuple[int, list[bytes], list[bytes], array]  # (partition, keys, blobs, sizes)


class SnapshotError(Exception):
    """A snapshot file is damaged: recovery cannot proceed safely without it."""


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


def _little(column: array) -> bytes:
    if _BIG_ENDIAN:
        column = array(COLUMN, column)
        column.byteswap()
    return column.tobytes()


def leaf_frame(index: int, leaf: Leaf) -> bytes:
    """A framed "P" chunk of one leaf."""
    compress = _zstd().compress
    parts = [compress(leaf.keys), compress(_little(leaf.ko)), compress(_little(leaf.heads)), compress(leaf.body),
             compress(_little(leaf.bo)), compress(_little(leaf.sizes))]
    return frame(b"".join([b"P", _U32.pack(index, len(leaf)), _LENGTHS.pack(*map(len, parts)), *parts]))


def unpack_leaf(payload: bytes | memoryview) -> tuple[int, int, list[bytes]]:
    """A "P" payload's (partition, count, its six buffers decompressed). Raises SnapshotError. Runs in the
    loader's worker thread: zstd releases the GIL."""
    try:
        index, count = _U32.unpack_from(payload, 1)
        lengths = _LENGTHS.unpack_from(payload, 1 + _U32.size)
    except struct.error:
        raise SnapshotError("chunk size mismatch") from None
    pos = 1 + _U32.size + _LENGTHS.size
    if pos + sum(lengths) != len(payload):
        raise SnapshotError("chunk size mismatch")
    buffers = []
    decompress = _unzstd().decompress
    with memoryview(payload) as view:
        for length in lengths:
            try:
                buffers.append(decompress(view[pos:pos + length]))
            except ZstdError as err:
                raise SnapshotError(f"undecodable compressed chunk: {err}") from None
            pos += length
    return index, count, buffers


def leaf_of(count: int, buffers: list[bytes]) -> Leaf:
    """The leaf of an unpacked "P" chunk, its shape checked. Raises SnapshotError."""
    keys, ko_raw, heads_raw, body, bo_raw, sizes_raw = buffers
    columns = []
    for raw in (ko_raw, heads_raw, bo_raw, sizes_raw):
        column = array(COLUMN)
        if len(raw) % column.itemsize:
            raise SnapshotError("chunk size mismatch")
        column.frombytes(raw)
        if _BIG_ENDIAN:
            column.byteswap()
        columns.append(column)
    ko, heads, bo, sizes = columns
    if not count or len(ko) != count + 1 or len(bo) != count + 1 or len(heads) != count or len(sizes) != count \
            or ko[0] != 0 or bo[0] != 0 or ko[-1] != len(keys) or bo[-1] != len(body):
        raise SnapshotError("chunk size mismatch")
    return Leaf(keys, ko, heads, body, bo, sizes)


def chunk_frames(index: int, keys: list[bytes], blobs: list[bytes], sizes: array) -> Iterator[bytes]:
    """Framed, compressed "L" chunks of these items, halved until each holds at most CHUNK_BYTES of items."""
    if len(keys) > 1 and sum(map(len, blobs)) > CHUNK_BYTES:
        half = len(keys) // 2
        yield from chunk_frames(index, keys[:half], blobs[:half], sizes[:half])
        yield from chunk_frames(index, keys[half:], blobs[half:], sizes[half:])
        return
    raw = b"L" + _U32.pack(index, len(keys)) + _little(sizes) + marshal.dumps((keys, blobs), MARSHAL_VERSION)
    yield frame(b"S" + _zstd().compress(raw))


def plain_chunk(payload: bytes | memoryview) -> bytes:
    """A chunk frame's payload uncompressed (decompressing a b"S" or b"Z" one). Raises SnapshotError."""
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


def _u32_list(data: bytes, start: int, count: int) -> tuple[array, int]:
    out = array(COLUMN)
    end = start + 4 * count
    out.frombytes(data[start:end])
    if _BIG_ENDIAN:
        out.byteswap()
    return out, end


def decode_chunk(payload: bytes) -> Columns:
    """A chunk's (partition, keys, blobs, sizes), whatever version wrote it. Raises SnapshotError."""
    if payload[:1] == b"P":
        index, count, buffers = unpack_leaf(payload)
        leaf = leaf_of(count, buffers)
        return index, leaf.key_list(), leaf.blob_list(), leaf.sizes
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
        return index, keys, list(map(_blob, records)), array(COLUMN, map(_size, records))
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
