"""`dynalocal repair`: keep every intact record of a damaged write-ahead log and say what was dropped.

Start-up refuses a log damaged inside (see recovery.py) rather than guess. Repair is the
explicit step after that: each damaged segment is rewritten with exactly its intact groups,
in their order, and the original is kept beside it as `wal-<n>.log.damaged` (never deleted,
so nothing is lost that a person might still want). Segments without damage are untouched.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from dynalocal.journal.snapshot import snapshots
from dynalocal.journal.wal import MAGIC, decode_group, frame, fsync_directory, salvage, scan_segment, segments


@dataclass
class SegmentRepair:
    """What repair did to one damaged segment."""

    name: str
    kept: int  # intact groups kept
    dropped: list[tuple[int, int, str]] = field(default_factory=list)  # (offset, end, why) of bytes dropped
    saved_as: str = ""

    def describe(self) -> str:
        ranges = "; ".join(f"{end - start} bytes at offset {start} ({why})" for start, end, why in self.dropped)
        return f"{self.name}: kept {self.kept} intact groups, dropped {ranges}; the original is kept as {self.saved_as}"


def repair_directory(directory: Path) -> list[SegmentRepair]:
    """Repair every damaged log segment recovery would read; return what was done (empty: nothing to do)."""
    snaps = snapshots(directory)
    base = snaps[-1][0] if snaps else None
    done = []
    for generation, path in segments(directory):
        if base is not None and generation < base:
            continue  # superseded by the newest snapshot: recovery never reads it
        scan = scan_segment(path)
        if scan.problem is None:
            continue
        done.append(_rewrite(path))
    return done


def _rewrite(path: Path) -> SegmentRepair:
    data = path.read_bytes()
    groups, dropped = salvage(data)
    kept = []
    for payload in groups:
        try:
            decode_group(payload)
        except ValueError as err:  # checksummed but unreadable: dropped too, and said so
            start = data.find(payload)
            dropped.append((start, start + len(payload), f"undecodable group: {err}"))
            continue
        kept.append(frame(payload))
    dropped.sort()
    saved = keep_original(path)
    replace_atomically(path, MAGIC + b"".join(kept))
    return SegmentRepair(path.name, len(kept), dropped, saved.name)


def keep_original(path: Path) -> Path:
    """Keep a damaged file's bytes as `<name>.damaged` (or `.damaged.N`) before repair rewrites it."""
    saved = _free_name(path.with_name(path.name + ".damaged"))
    try:
        os.link(path, saved)  # the original bytes stay, under another name
    except OSError:
        shutil.copy2(path, saved)
    return saved


def replace_atomically(path: Path, content: bytes) -> None:
    """Write `content` as `path`: a crash leaves either the old file or the new one, never a mix."""
    temp = path.with_name(path.name + ".repair.tmp")
    with open(temp, "wb") as out:
        out.write(content)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    fsync_directory(path.parent)


def _free_name(path: Path) -> Path:
    n, candidate = 0, path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate
