"""The write-ahead log: checksummed frames in numbered segment files, and their scanning.

A segment `wal-<generation>.log` is a magic header followed by frames

    length (u32 LE) | crc32 of payload (u32 LE) | payload (length bytes, length > 0)

One frame holds one *group*: every mutation of one request, so a group is applied on
recovery entirely or, when its frame is torn or corrupt, not at all. A group payload is a
sequence of records, each a fixed header then its byte fields:

    kind (u8) | len(name) (u16) | len(a) (u32) | len(b) (u32) | size (u32) | name | a | b

PUT: a = encoded key, b = item JSON, size = item size; DELETE: a = key; META: a = the
table's metadata JSON; DROP: no fields; STREAM: name = a stream ARN, a = a stream event
(storage.streamlog). Scanning stops at the first frame that is short,
empty or fails its checksum: that frame and everything after it are the torn tail.
"""
from __future__ import annotations

import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .partition import Record

MAGIC = b"DLWAL\x00\x01\n"
FRAME = struct.Struct("<II")
RECORD = struct.Struct("<BHIII")
PUT, DELETE, META, DROP, STREAM = 1, 2, 3, 4, 5
_SEGMENT = re.compile(r"wal-(\d{8})\.log")
# fdatasync also persists the file size (needed to read appended data back) but skips mtime: much cheaper.
_datasync = getattr(os, "fdatasync", os.fsync)

_NAMES: dict[bytes, str] = {}  # table names as decoded once (a log repeats a few names many times)
_RAW_NAMES: dict[str, bytes] = {}  # and as encoded once

# One group record before encoding: (kind, table name, a, b) with b a Record for PUT.
Entry = tuple[int, str, "bytes | None", "Record | None"]


def segment_path(directory: Path, generation: int) -> Path:
    return directory / f"wal-{generation:08d}.log"


def segments(directory: Path) -> list[tuple[int, Path]]:
    """(generation, path) of every log segment in the directory, oldest first."""
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _SEGMENT.fullmatch(p.name))]
    return sorted(found)


def frame(payload: bytes) -> bytes:
    """Length- and checksum-framed payload."""
    return FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def encode_group(entries: list[Entry]) -> bytes:
    """The payload of one group frame."""
    parts: list[bytes] = []
    for kind, name, a, b in entries:
        raw_name = _RAW_NAMES.get(name)
        if raw_name is None:
            raw_name = _RAW_NAMES[name] = name.encode()
        if kind == PUT:
            blob, size = b  # type: ignore[misc]
            head = RECORD.pack(PUT, len(raw_name), len(a), len(blob), size)  # type: ignore[arg-type]
            parts += (head, raw_name, a, blob)  # type: ignore[arg-type]
        else:
            a = a or b""
            parts += (RECORD.pack(kind, len(raw_name), len(a), 0, 0), raw_name, a)
    return b"".join(parts)


def decode_group(payload: bytes) -> list[Entry]:
    """The records of one group payload (raises ValueError if it is malformed)."""
    out: list[Entry] = []
    pos, end = 0, len(payload)
    unpack, head, names = RECORD.unpack_from, RECORD.size, _NAMES
    try:
        while pos < end:
            kind, n, la, lb, size = unpack(payload, pos)
            pos += head
            raw_name = payload[pos:pos + n]
            name = names.get(raw_name)
            if name is None:
                name = names[raw_name] = raw_name.decode()
            pos += n
            if kind == PUT:
                out.append((PUT, name, payload[pos:pos + la], (payload[pos + la:pos + la + lb], size)))
            elif kind == DELETE or kind == META or kind == DROP or kind == STREAM:
                out.append((kind, name, payload[pos:pos + la], None))
            else:
                raise ValueError(f"unknown record kind {kind}")
            pos += la + lb
    except (struct.error, UnicodeDecodeError) as err:
        raise ValueError(str(err)) from None
    if pos != end:
        raise ValueError("record overruns its group")
    return out


@dataclass
class Scan:
    """What reading one segment found: its intact group payloads and where they end."""

    groups: list[bytes]
    good_end: int  # file offset just past the last intact frame
    file_size: int
    problem: str | None  # why scanning stopped before the end of the file, if it did


def read_frames(data: bytes, start: int) -> Iterator[tuple[int, bytes | str]]:
    """(offset, payload) of each intact frame from `start`; a final (offset, reason) if the tail is bad."""
    pos, end = start, len(data)
    while pos < end:
        if end - pos < FRAME.size:
            yield pos, "torn frame header"
            return
        length, crc = FRAME.unpack_from(data, pos)
        if length == 0:
            yield pos, "empty frame"
            return
        if end - pos - FRAME.size < length:
            yield pos, "torn frame (length exceeds the file)"
            return
        payload = data[pos + FRAME.size:pos + FRAME.size + length]
        if zlib.crc32(payload) != crc:
            yield pos, "checksum mismatch"
            return
        yield pos, payload
        pos += FRAME.size + length


def scan_segment(path: Path) -> Scan:
    """Read a segment and find its intact frames; a segment without a valid header is empty."""
    data = path.read_bytes()
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        return Scan([], 0, len(data), "missing or damaged segment header" if data else None)
    groups: list[bytes] = []
    good_end, problem = len(MAGIC), None
    for offset, item in read_frames(data, len(MAGIC)):
        if isinstance(item, str):
            problem = item
            break
        groups.append(item)
        good_end = offset + FRAME.size + len(item)
    return Scan(groups, good_end, len(data), problem)


def fsync_directory(directory: Path) -> None:
    """Make renames and file creations in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LogWriter:
    """Appends frames to the current segment; `position` counts bytes appended since opening."""

    def __init__(self, directory: Path, generation: int) -> None:
        self.directory = directory
        self.generation = generation
        self.position = 0  # a log sequence number: monotonic across segments
        self.segment_bytes = 0
        self.fd = self._open(generation)

    def _open(self, generation: int) -> int:
        path = segment_path(self.directory, generation)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(fd).st_size == 0:
            self._write_all(fd, MAGIC)
        fsync_directory(self.directory)
        return fd

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        written = os.write(fd, data)
        if written < len(data):  # rare for regular files (a signal, a full disk): finish or raise
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view):]

    def append(self, payload: bytes) -> int:
        """Write one framed group to the OS (not yet synced); return the new position."""
        data = frame(payload)
        self._write_all(self.fd, data)
        self.segment_bytes += len(data)
        self.position += len(data)
        return self.position

    def sync(self) -> None:
        _datasync(self.fd)

    def rotate(self, generation: int) -> None:
        """Sync and close the current segment, continue in a new one."""
        os.fsync(self.fd)
        os.close(self.fd)
        self.generation = generation
        self.segment_bytes = 0
        self.fd = self._open(generation)

    def close(self) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = -1
