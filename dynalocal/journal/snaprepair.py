"""`dynalocal repair` for the base of the log: salvage a damaged snapshot, or stand in for a missing one.

Start-up refuses both (see recovery.py). A damaged snapshot is rewritten with every intact
table and chunk of items, in order, and a new end frame; the original is kept beside it as
`snapshot-<n>.snap.damaged`. When the previous generation (its snapshot, or the log from its start,
and every segment since) is still there, the damaged snapshot is only set aside: start-up then loads
that generation and nothing is lost. A chunk is only kept while the table it belongs to is known
(its table frame intact, and no damage since that could have hidden another table's frame),
so no item is ever restored into the wrong table. Items in dropped chunks are lost unless the
log after the snapshot rewrote them. A missing snapshot is replaced by an empty one, so the
log after it can be replayed: the tables it held are lost, and start-up says how many
records of them it skipped. A damaged stream snapshot is salvaged apart (streamrepair.py).
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

from dynalocal.journal.repair import keep_original, replace_atomically
from dynalocal.journal.snapshot import CHUNKS, MAGIC, SnapshotError, load, plain_chunk, snapshot_path, snapshots
from dynalocal.journal.wal import FRAME, frame, next_intact_frame, read_frames, segments
from dynalocal.storage.database import Database

_END = struct.Struct("<IQ")
_COUNT = struct.Struct("<I")
# Where a snapshot frame may start: a frame header, then the frame's kind (table, chunk or end).
_CANDIDATE = re.compile(rb"(?=.{8}[MCEZS])", re.DOTALL)


def _next_frame(data: bytes, start: int) -> int | None:
    """Offset of the first intact snapshot frame (table, chunk or end) after `start`, or None."""
    return next_intact_frame(data, start, _CANDIDATE)


def _salvage(data: bytes) -> tuple[list[bytes], int, int, list[str]]:
    """The intact table and chunk payloads to keep, their table and item counts, and what was dropped."""
    kept: list[bytes] = []
    tables = items = 0
    dropped: list[str] = []
    pos = len(MAGIC) if data[:len(MAGIC)] == MAGIC else _next_frame(data, -1)
    known = True  # the table the next chunk belongs to is the last kept table frame
    while pos is not None and pos < len(data):
        resume = None
        for offset, payload in read_frames(data, pos):
            if isinstance(payload, str):
                resume = _next_frame(data, offset)
                stop = resume if resume is not None else len(data)
                length = FRAME.unpack_from(data, offset)[0] if len(data) - offset >= FRAME.size else -1
                kind = data[offset + FRAME.size:offset + FRAME.size + 1]
                # One damaged chunk whose header still spans exactly to the next intact frame: same table after it.
                known = known and kind in CHUNKS and offset + FRAME.size + length == stop
                dropped.append(f"{stop - offset} bytes at offset {offset} ({payload})")
                pos = resume
                break
            kind = payload[:1]
            if kind == b"M":
                kept.append(payload)
                tables, known = tables + 1, True
            elif kind in CHUNKS and known and kept:
                try:
                    items += _COUNT.unpack_from(plain_chunk(payload), 5)[0]
                except (SnapshotError, struct.error):
                    dropped.append(f"{FRAME.size + len(payload)} bytes at offset {offset} (an undecodable chunk)")
                    continue
                kept.append(payload)
            elif kind in CHUNKS:
                dropped.append(f"{FRAME.size + len(payload)} bytes at offset {offset} (items of a table whose "
                               "frame was damaged)")
        else:
            break
    return kept, tables, items, dropped


def repair_snapshot(directory: Path) -> str | None:
    """Salvage the newest snapshot if it is damaged; return what was done (None: it is intact or absent)."""
    snaps = snapshots(directory)
    if not snaps:
        return None
    path = snaps[-1][1]
    try:
        load(path, Database())
        return None
    except (SnapshotError, ValueError, struct.error, UnicodeDecodeError) as err:
        problem = str(err)
    older = snaps[-2] if len(snaps) > 1 else None
    segs = segments(directory)
    if segs and segs[0][0] <= (older[0] if older is not None else 0):  # the previous generation is whole
        saved = keep_original(path)
        path.unlink()
        return (f"{path.name}: damaged ({problem}); set aside as {saved.name}: start-up loads "
                f"{older[1].name if older is not None else 'the log from its start'} and the log since it instead "
                "(nothing is lost)")
    data = path.read_bytes()
    kept, tables, items, dropped = _salvage(data)
    saved = keep_original(path)
    replace_atomically(path, MAGIC + b"".join(frame(p) for p in kept) + frame(b"E" + _END.pack(tables, items)))
    lost = "; ".join(dropped) or "nothing (only its end was damaged)"
    return (f"{path.name}: damaged ({problem}); restored {tables} tables and {items} items from it, dropped {lost}; "
            f"the log after it is replayed over it at start-up; the original is kept as {saved.name}")


def restore_base(directory: Path) -> str | None:
    """If the log starts after generation 0 with no snapshot, write an empty one; return what was done."""
    segs = segments(directory)
    if snapshots(directory) or not segs or segs[0][0] == 0:
        return None
    generation = segs[0][0]
    path = snapshot_path(directory, generation)
    replace_atomically(path, MAGIC + frame(b"E" + _END.pack(0, 0)))
    return (f"{path.name} was missing: wrote an empty one, so start-up replays the log from {segs[0][1].name}; "
            "the tables and items it held are lost (start-up reports the records of them it skips as lost to damage)")
