"""Start-up recovery: load the newest snapshot, replay the log after it, rebuild derived data.

A damaged log tail (torn or failing its checksum) is cut off at the last intact group and
reported with one log line; everything before it is kept. Segments after a damaged one
cannot be replayed in order, so they are renamed aside (`.orphaned`) and reported too.
Secondary indexes are not persisted: they are rebuilt from the recovered items.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .database import Database
from .snapshot import load, snapshots
from .tablemeta import rebuild_indexes, restore_meta
from .wal import DROP, MAGIC, META, PUT, Entry, decode_group, scan_segment, segments

log = logging.getLogger("dynalocal.durability")


class RecoveryError(Exception):
    """The data directory cannot be recovered without losing acknowledged data."""


@dataclass
class Recovery:
    """What recovery found and did."""

    next_generation: int
    snapshot: int | None = None
    snapshot_bytes: int = 0
    snapshot_items: int = 0
    groups: int = 0
    replayed_bytes: int = 0
    skipped: int = 0  # records for tables that no longer exist (normal after a fuzzy snapshot)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def apply_group(db: Database, entries: list[Entry]) -> int:
    """Redo one group's records; return how many referred to a table that does not exist."""
    skipped = 0
    for kind, name, a, b in entries:
        if kind == META:
            restore_meta(db, name, a)  # type: ignore[arg-type]
        elif kind == DROP:
            db.drop(name)
        else:
            entry = db.tables.get(name)
            if entry is None:
                skipped += 1
            else:
                entry.table.apply(a, b if kind == PUT else None)  # type: ignore[arg-type]
    return skipped


def _cut(path: Path, offset: int, size: int, problem: str, groups: int) -> str:
    os.truncate(path, offset)
    message = (f"{path.name}: {problem} at offset {offset}; cut {size - offset} bytes of damaged tail, "
               f"kept {groups} intact groups before it")
    log.warning(message)
    return message


def recover(directory: Path, db: Database) -> Recovery:
    """Rebuild `db` (empty) from the data directory, creating the directory if needed."""
    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    for temp in directory.glob("*.tmp"):  # an interrupted snapshot write
        temp.unlink()
    snaps = snapshots(directory)
    base = snaps[-1][0] if snaps else None
    result = Recovery(next_generation=0)
    if base is not None:
        result.snapshot, path = base, snaps[-1][1]
        result.snapshot_bytes = path.stat().st_size
        _, result.snapshot_items = load(path, db)
    segs = [(g, p) for g, p in segments(directory) if base is None or g >= base]
    for i, (generation, path) in enumerate(segs):
        scan = scan_segment(path)
        for payload in scan.groups:
            try:
                entries = decode_group(payload)
            except ValueError as err:  # checksummed but unreadable: a format bug, not a torn write
                raise RecoveryError(f"{path.name}: undecodable group: {err}") from None
            result.skipped += apply_group(db, entries)
        result.groups += len(scan.groups)
        result.replayed_bytes += max(0, scan.good_end - len(MAGIC))
        if scan.problem is not None:
            result.problems.append(_cut(path, scan.good_end, scan.file_size, scan.problem, len(scan.groups)))
            for _, later in segs[i + 1:]:
                later.rename(later.with_name(later.name + ".orphaned"))
                result.problems.append(f"{later.name}: follows a damaged segment, renamed to {later.name}.orphaned")
                log.error(result.problems[-1])
            segs = segs[:i + 1]
            break
    for generation, path in snaps[:-1] + [s for s in segments(directory) if base is not None and s[0] < base]:
        path.unlink()  # superseded by the newest snapshot
    for entry in db.tables.values():
        rebuild_indexes(entry)
    generations = [g for g, _ in segs] + ([base] if base is not None else [])
    result.next_generation = max(generations) + 1 if generations else 0
    result.seconds = time.perf_counter() - started
    return result

