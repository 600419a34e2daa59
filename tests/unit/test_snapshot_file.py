"""Snapshot files: round trips, compressed and earlier chunk formats, verification, damage, in process."""
from __future__ import annotations

import struct
import zlib
from array import array
from itertools import accumulate
from pathlib import Path

import pytest
from test_persistence import make_table, record_for, state

from dynalocal.journal import chunks
from dynalocal.journal import snapshot as snap
from dynalocal.storage import partition
from dynalocal.journal import wal
from dynalocal.storage.database import Database
from dynalocal.storage.mutation import Mutation


def test_snapshot_round_trip_with_partitions_metadata_and_big_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(partition, "LOAD", 8)  # many leaves, so chunks start and end inside leaves too
    db = Database()
    a = make_table(db, "alpha", 4, tags={"k": "v"}, ttl_attribute="exp", extra={"TableClass": "STANDARD"})
    a.contributor_insights[None] = "ENABLED"
    b = make_table(db, "beta", 1)
    for i in range(300):
        a.table.apply(Mutation(*record_for(a, f"p{i % 17}", i, "y" * (i % 50))))
    b.table.apply(Mutation(*record_for(b, "only", 1)))
    image = snap.Image()
    for _ in image.capture(db, chunk=64):
        pass
    size = snap.write(image, tmp_path, 3)
    assert size == (tmp_path / "snapshot-00000003.snap").stat().st_size
    restored = Database()
    assert snap.load(tmp_path / "snapshot-00000003.snap", restored) == (2, 301)
    assert state(restored) == state(db)
    assert restored.tables["alpha"].contributor_insights == {None: "ENABLED"}


def test_snapshot_chunks_are_compressed_and_earlier_formats_still_load(tmp_path, monkeypatch):
    """`write` writes a "P" chunk per leaf, each buffer compressed with zstd; snapshots of zstd "S" frames of
    "L" chunks, plain "L" chunks, plain "K" and "C" chunks, zstd "S" frames of "K" chunks and zlib "Z" chunks
    (earlier versions), load the same."""
    db = Database()
    entry = make_table(db, "alpha", 2)
    for i in range(500):
        entry.table.apply(Mutation(*record_for(entry, f"p{i % 7}", i, "payload" * 8)))
    image = snap.Image()
    list(image.capture(db, chunk=100))
    compressed = snap.write(image, tmp_path, 1)
    kinds = {payload[:1] for _, payload in wal.read_frames(snap.snapshot_path(tmp_path, 1).read_bytes(), 8)}
    assert kinds == {b"M", b"P", b"E"}
    chunk_frames = _columns_frames  # "S" frames of "L" chunks, as the version before "P" chunks wrote them
    monkeypatch.setattr(snap, "_span_frames", chunk_frames)
    snap.write(image, tmp_path, 7)
    monkeypatch.setattr(snap, "_span_frames", _earlier_chunk_frames(chunk_frames, lambda raw: raw))  # "C"
    plain = snap.write(image, tmp_path, 2)
    zlibbed = _earlier_chunk_frames(chunk_frames, lambda raw: b"Z" + zlib.compress(raw))
    monkeypatch.setattr(snap, "_span_frames", zlibbed)
    snap.write(image, tmp_path, 3)
    monkeypatch.setattr(snap, "_span_frames", lambda *args: (  # "L" chunks, not compressed
        wal.frame(snap.plain_chunk(framed[wal.FRAME.size:])) for framed in chunk_frames(*args)))
    snap.write(image, tmp_path, 4)
    monkeypatch.setattr(snap, "_span_frames", _earlier_chunk_frames(chunk_frames, lambda raw: raw, _k_payload))
    snap.write(image, tmp_path, 5)
    monkeypatch.setattr(snap, "_span_frames", _earlier_chunk_frames(
        chunk_frames, lambda raw: b"S" + chunks._zstd().compress(raw), _k_payload))
    snap.write(image, tmp_path, 6)
    monkeypatch.undo()
    for generation, kind in ((7, b"S"), (4, b"L"), (5, b"K")):
        kinds = {payload[:1] for _, payload in wal.read_frames(snap.snapshot_path(tmp_path, generation).read_bytes(), 8)}
        assert kinds == {b"M", kind, b"E"}
    assert compressed * 3 < plain
    for generation in (1, 2, 3, 4, 5, 6, 7):
        restored = Database()
        assert snap.load(snap.snapshot_path(tmp_path, generation), restored) == (1, 500)
        assert state(restored) == state(db)


def _columns_frames(index, leaf, a, b):
    """A span's "S" frames of "L" chunks (columns), as snapshots were written before "P" chunks."""
    yield from chunks.chunk_frames(index, leaf.key_list(a, b), leaf.blob_list(a, b), leaf.sizes[a:b])


def _earlier_chunk_frames(chunk_frames, encode, payload=None):
    """chunk_frames as an earlier version wrote them: the "C" payload (or `payload`'s), as `encode` makes it, framed."""
    def earlier(*args):
        for framed in chunk_frames(*args):
            index, keys, blobs, sizes = chunks.decode_chunk(framed[wal.FRAME.size:])
            yield wal.frame(encode((payload or _c_payload)(index, keys, list(zip(blobs, sizes)))))
    return earlier


def _k_payload(index, keys, records):
    """A "K" chunk: the keys and (item, size) records, marshalled (before "L" chunks)."""
    import marshal

    return b"K" + struct.pack("<II", index, len(keys)) + marshal.dumps((keys, records), 2)


def _c_payload(index, keys, records):
    """A "C" chunk: offsets of keys and items, sizes, then the keys and the items (before "K" chunks)."""
    def u32s(values):
        return array("I", values).tobytes()  # little-endian on the machines tests run on
    blobs = [blob for blob, _ in records]
    return b"".join((b"C", struct.pack("<II", index, len(keys)), u32s(accumulate(map(len, keys), initial=0)),
                     u32s(accumulate(map(len, blobs), initial=0)), u32s(size for _, size in records),
                     b"".join(keys), b"".join(blobs)))


def snapshot_of_300(tmp_path) -> Path:
    """Snapshot 1 of a two-partition table of 300 items, in chunks of 50."""
    db = Database()
    entry = make_table(db, "alpha", 2)
    for i in range(300):
        entry.table.apply(Mutation(*record_for(entry, f"p{i}", i)))
    image = snap.Image()
    list(image.capture(db, chunk=50))
    snap.write(image, tmp_path, 1)
    return snap.snapshot_path(tmp_path, 1)


def test_verify_reads_a_snapshot_back_without_loading_it(tmp_path):
    path = snapshot_of_300(tmp_path)
    assert snap.verify(path) == 300
    raw = bytearray(path.read_bytes())
    for damaged in (raw[:-3], raw[:len(raw) // 2] + bytes([raw[len(raw) // 2] ^ 1]) + raw[len(raw) // 2 + 1:]):
        path.write_bytes(bytes(damaged))
        with pytest.raises(snap.SnapshotError):
            snap.verify(path)


def test_truncated_snapshot_is_refused(tmp_path):
    db = Database()
    entry = make_table(db, "alpha")
    entry.table.apply(Mutation(*record_for(entry, "p", 1)))
    image = snap.Image()
    list(image.capture(db))
    snap.write(image, tmp_path, 1)
    path = tmp_path / "snapshot-00000001.snap"
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(snap.SnapshotError):
        snap.load(path, Database())


def test_load_names_a_damaged_chunk_and_refuses_files_that_are_no_snapshot(tmp_path):
    """Chunks are checked in the loader's worker thread: a flipped bit is still reported at its frame's
    offset, and nothing of the file is served; an empty file or a foreign one is no snapshot."""
    path = snapshot_of_300(tmp_path)
    restored = Database()
    assert snap.load(path, restored) == (1, 300)
    raw = bytearray(path.read_bytes())
    frames = [offset for offset, _ in wal.read_frames(bytes(raw), len(snap.MAGIC))]
    third = frames[3]  # a chunk frame (the first is the table's metadata)
    raw[third + wal.FRAME.size + 5] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(snap.SnapshotError, match=f"checksum mismatch at offset {third}"):
        snap.load(path, Database())
    for content in (b"", b"not a snapshot at all"):
        path.write_bytes(content)
        with pytest.raises(snap.SnapshotError, match="not a dynalocal snapshot"):
            snap.load(path, Database())


@pytest.mark.parametrize("kind", [b"L", b"K"])
@pytest.mark.parametrize("body", [b"\xff\x00garbage", b"", None, "shape"])
def test_a_chunk_whose_checksum_matches_but_whose_items_do_not_decode_is_a_damaged_snapshot(tmp_path, body, kind):
    """An "L" or "K" chunk that is not marshal data, is cut short, counts other items than it holds, or holds
    something else than two lists: SnapshotError (recovery then falls back), never a crash or a wrong table."""
    import marshal

    keys, records = [b"k1", b"k2"], [(b"{}", 3), (b"{}", 3)]
    columns = (keys, [blob for blob, _ in records]) if kind == b"L" else (keys, records)
    if body is None:
        body = marshal.dumps(columns, 2)  # two items, but the header says three
    elif body == "shape":
        body = marshal.dumps({"keys": keys}, 2)
    sizes = struct.pack("<III", 3, 3, 3) if kind == b"L" and body else b""  # "L": three sizes, then the lists
    payload = kind + struct.pack("<II", 0, 3) + sizes + body
    with pytest.raises(snap.SnapshotError):
        chunks.decode_chunk(payload)
    _load_fails_with_chunks_of(tmp_path, payload)


def _load_fails_with_chunks_of(tmp_path: Path, payload: bytes) -> None:
    """A snapshot whose every chunk is `payload` (checksums intact) does not load."""
    path = snapshot_of_300(tmp_path)
    frames = list(wal.read_frames(path.read_bytes(), len(snap.MAGIC)))
    damaged = [wal.frame(payload if p[:1] in chunks.CHUNKS else p) for _, p in frames]
    path.write_bytes(snap.MAGIC + b"".join(damaged))
    with pytest.raises(snap.SnapshotError):
        snap.load(path, Database())


@pytest.mark.parametrize("damage", ["count", "lengths", "zstd", "offsets", "empty"])
def test_a_leaf_chunk_that_does_not_match_its_header_is_a_damaged_snapshot(tmp_path, damage):
    """A "P" chunk whose count, buffer lengths, compressed buffers or offsets disagree: SnapshotError,
    from the checks of chunks.leaf_of and unpack_leaf, never a crash or a wrong table."""
    from dynalocal.storage.leaf import Leaf

    leaf = Leaf.of([b"key-0001", b"key-0002"], [b'{"a":1}', b'{"a":2}'], [3, 3])
    payload = chunks.leaf_frame(0, leaf)[wal.FRAME.size:]
    if damage == "count":
        payload = payload[:5] + struct.pack("<I", 3) + payload[9:]
    elif damage == "lengths":
        payload = payload[:-1]
    elif damage == "zstd":
        payload = payload[:1 + 8 + 24] + b"\x00" * (len(payload) - 33)
    elif damage == "offsets":
        bad = Leaf(leaf.keys + b"x", leaf.ko, leaf.heads, leaf.body, leaf.bo, leaf.sizes)
        payload = chunks.leaf_frame(0, bad)[wal.FRAME.size:]
    else:
        payload = chunks.leaf_frame(0, Leaf.of([], [], []))[wal.FRAME.size:]
    with pytest.raises(snap.SnapshotError):
        chunks.decode_chunk(payload)
    _load_fails_with_chunks_of(tmp_path, payload)
