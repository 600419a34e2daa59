"""Start-up recovery: load the newest snapshot, replay the log after it, rebuild derived data.

A torn tail (damage at the end of the last segment with nothing intact after it: a write
cut short by a crash) is cut off at the last intact group and reported with one log line;
everything before it is kept. Damage anywhere else (intact records after it, or in a
segment that is not the last) is not a crash's doing: recovery refuses to start, naming the
file and offset, and changes nothing; `dynalocal repair` salvages what is intact. Secondary
indexes are not persisted: they are rebuilt from the recovered items.

Two generations are kept: the newest snapshot and the one before it, with every log segment since
that one (`previous_generation`; before a second snapshot, the log from segment 0 stands for it). A
newest snapshot that is damaged (or unreadable) is set aside as `.damaged` with a warning, and the
previous snapshot plus all the log since it is loaded instead: nothing acknowledged is lost.
"""
from __future__ import annotations

import gc
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from dynalocal.journal.snapshot import SnapshotError, load, snapshot_path, snapshots
from dynalocal.journal.streamlog import load_snapshot as load_streams
from dynalocal.journal.streamlog import remove_older as remove_older_streams
from dynalocal.journal.tablemeta import rebuild_indexes, restore_meta
from dynalocal.journal.wal import (
    DELETE,
    DROP,
    MAGIC,
    META,
    PUT,
    STREAM,
    TOKEN,
    Entry,
    decode_group,
    scan_segment,
    segments,
)
from dynalocal.storage.database import Database
from dynalocal.storage.mutation import RECOVERY, Mutation
from dynalocal.storage.partition import Record
from dynalocal.storage.table import Table

log = logging.getLogger("dynalocal.durability")


class RecoveryError(Exception):
    """The data directory cannot be recovered without losing acknowledged data."""


class LogDamaged(RecoveryError):
    """The log is damaged inside (not just torn at its end): start-up stops, nothing is changed."""

    def __init__(self, directory: Path, name: str, offset: int, problem: str, resume: int | None) -> None:
        where = (f"intact records follow at offset {resume}" if resume is not None
                 else "later log segments follow it")
        super().__init__(
            f"the write-ahead log is damaged inside, not torn at its end: {name}: {problem} at offset {offset}, "
            f"and {where}. Nothing was changed. `dynalocal repair --data-dir {directory}` keeps every intact "
            "record, drops the damaged bytes and reports what it dropped.")
        self.name, self.offset = name, offset


class BaseMissing(RecoveryError):
    """The log starts at a generation whose snapshot is gone: replaying it alone would lose every table."""

    def __init__(self, directory: Path, missing: str, first: str) -> None:
        super().__init__(
            f"the snapshot the write-ahead log starts from is missing: {missing} (the log begins with {first}, "
            f"which holds only the writes made after it). Starting would serve the data without it. Nothing was "
            f"changed. Put {missing} back, or run `dynalocal repair --data-dir {directory}` to start from the log "
            "alone (the data in the missing snapshot is lost).")
        self.missing = missing


def previous_generation(directory: Path, generation: int) -> int:
    """The generation kept as a fallback beside snapshot `generation`: the newest older snapshot's, else 0
    (the log from its start)."""
    older = [g for g, _ in snapshots(directory) if g < generation]
    return older[-1] if older else 0


def kept_bytes(directory: Path, generation: int) -> int:
    """Bytes of snapshots and log segments older than `generation` (the fallback generation kept)."""
    return sum(path.stat().st_size for g, path in snapshots(directory) + segments(directory) if g < generation)


def prune(directory: Path, generation: int, keep: int) -> int:
    """After snapshot `generation`: delete the snapshots, log segments and stream files older than `keep`;
    return the bytes of the fallback generation kept. Blocking (freeing a large file takes milliseconds):
    the server runs it off its event loop."""
    remove_older_streams(directory, keep)
    for old, path in snapshots(directory) + segments(directory):
        if old < keep:
            path.unlink(missing_ok=True)
    return kept_bytes(directory, generation)


def _fallback(directory: Path, db: Database, snaps: list[tuple[int, Path]], err: Exception,
              problems: list[str]) -> int | None:
    """The newest snapshot could not be loaded: set it aside and load the previous generation's (None: the
    log from 0); raise if there is nothing to fall back to."""
    _, path = snaps.pop()
    base = snaps[-1][0] if snaps else None
    first = segments(directory)[:1]
    if not first or first[0][0] > (base if base is not None else 0):
        raise err  # the log since the previous generation is gone: `dynalocal repair` salvages the snapshot
    for name in list(db.tables):  # whatever the damaged snapshot had loaded
        db.drop(name)
    damaged = path.with_name(path.name + ".damaged")
    path.rename(damaged)
    message = (f"{path.name} is damaged ({err}): set aside as {damaged.name}; loaded "
               f"{snaps[-1][1].name if snaps else 'the log from its start'} and the log since it instead")
    log.warning(message)
    problems.append(message)
    if base is not None:
        load(snaps[-1][1], db)
    return base


def _holds_nothing(path: Path) -> bool:
    """A segment with no frame: its header alone, or followed by the zeros a live segment is filled with."""
    if path.stat().st_size <= len(MAGIC):
        return True
    data = path.read_bytes()
    return data.count(0, len(MAGIC)) == len(data) - len(MAGIC)


def check_base(directory: Path, base: int | None, segs: list[tuple[int, Path]]) -> list[tuple[int, Path]]:
    """Refuse a log whose first generation has no snapshot to start from (the generation-0 log starts empty);
    return the segments to replay. A log without a snapshot that holds nothing (left by start-ups without
    writes of an earlier version, which skipped generations) is removed: the log starts again at 0."""
    if base is None and segs and segs[0][0] > 0:
        if all(_holds_nothing(path) for _, path in segs):
            for _, path in segs:
                path.unlink()
            return []
        raise BaseMissing(directory, snapshot_path(directory, segs[0][0]).name, segs[0][1].name)
    return segs


@dataclass
class Recovery:
    """What recovery found and did."""

    next_generation: int
    snapshot: int | None = None
    snapshot_bytes: int = 0
    snapshot_items: int = 0
    groups: int = 0
    replayed_bytes: int = 0
    skipped: int = 0  # records for tables deleted later in the log (normal after a fuzzy snapshot)
    lost: int = 0  # records for tables neither in the snapshot nor created in the log: lost to damage
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tokens: dict[str, bytes] = field(default_factory=dict)  # ClientRequestToken -> its TOKEN record (journal.tokens)


class Replayer:
    """Redo log records, coalescing item writes per table between metadata records.

    Item records are full redo images, so only the last one per key matters; metadata
    records (which may re-partition, drop or re-create a table) are barriers. Coalesced
    writes are loaded in bulk: this runs before any listener or index is attached.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.pending: dict[str, dict[bytes, Record | None]] = {}
        self.skipped = 0  # records for tables that do not exist (see `lost`)
        self.orphans: dict[str, int] = {}  # table -> records skipped because it did not exist
        self.dropped: set[str] = set()  # tables the log deletes
        self.tokens: dict[str, bytes] = {}  # idempotency tokens logged, the latest record of each

    def add(self, entries: list[Entry]) -> None:
        pending = self.pending
        for kind, name, a, b in entries:
            if kind == PUT or kind == DELETE:
                changes = pending.get(name)
                if changes is None:
                    changes = pending[name] = {}
                changes[a] = b  # type: ignore[index]  # a: the item key (only DROP has no payload)
            elif kind == STREAM:  # independent of item coalescing: replayed in log order, idempotently
                self.db.streams.replay(name, a)  # type: ignore[arg-type]
            elif kind == TOKEN:  # not a barrier: restored after recovery, expired ones dropped (journal.tokens)
                self.tokens[name] = a  # type: ignore[assignment]
            else:
                self.flush()
                if kind == META:
                    restore_meta(self.db, name, a)  # type: ignore[arg-type]
                elif kind == DROP:
                    self.dropped.add(name)
                    self.db.drop(name)

    def flush(self) -> None:
        for name, changes in self.pending.items():
            entry = self.db.tables.get(name)
            if entry is None:
                self.skipped += len(changes)
                self.orphans[name] = self.orphans.get(name, 0) + len(changes)
            else:
                _load(entry.table, changes)
        self.pending.clear()


def _load(table: Table, changes: dict[bytes, Record | None]) -> None:
    by_partition: dict[int, dict[bytes, Record]] = {}
    for key, record in changes.items():
        if record is None:
            table.apply(Mutation(key, None, origin=RECOVERY))
        else:
            index = table.partition_index(key)
            puts = by_partition.get(index)
            if puts is None:
                puts = by_partition[index] = {}
            puts[key] = record
    for index, puts in by_partition.items():
        part = table.partitions[index]
        if len(puts) * 10 < len(part):
            for key, record in puts.items():
                table.apply(Mutation(key, record, origin=RECOVERY))
            continue
        part.load(list(puts), list(puts.values()))  # one sort-based rebuild instead of an insertion per key


def apply_group(db: Database, entries: list[Entry]) -> int:
    """Redo one group's records at once; return how many referred to a table that does not exist."""
    replayer = Replayer(db)
    replayer.add(entries)
    replayer.flush()
    return replayer.skipped


def _cut(path: Path, offset: int, size: int, problem: str, groups: int) -> str:
    os.truncate(path, offset)
    message = (f"{path.name}: {problem} at offset {offset}; cut {size - offset} bytes of damaged tail, "
               f"kept {groups} intact groups before it")
    log.warning(message)
    return message


def recover(directory: Path, db: Database) -> Recovery:
    """Rebuild `db` (empty) from the data directory, creating the directory if needed."""
    collecting = gc.isenabled()
    gc.disable()  # millions of new tuples and no garbage: cycle collection would only slow this down
    try:
        return _recover(directory, db)
    finally:
        if collecting:
            gc.enable()


def _recover(directory: Path, db: Database) -> Recovery:
    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    for temp in directory.glob("*.tmp"):  # an interrupted snapshot write
        temp.unlink()
    snaps = snapshots(directory)
    result = Recovery(next_generation=0)
    base = _load_snapshot(directory, db, snaps, result)
    segs = [(g, p) for g, p in segments(directory) if base is None or g >= base]
    segs = check_base(directory, base, segs)
    replayer = Replayer(db)
    empty, torn, zero_tails = _replay(directory, segs, replayer, result)
    # Only now, with the whole log read and found recoverable, is anything in the directory changed.
    for path in empty:
        path.unlink()
    for path, end in zero_tails:  # the zero-filled end of the segment a stopped server wrote (wal.LogWriter)
        if path not in empty:
            os.truncate(path, end)
    if torn is not None:
        result.problems.append(_cut(*torn))
    replayer.flush()
    # A table deleted later in the log was written to during a fuzzy snapshot: normal. One never
    # created (not in the snapshot, no creation in the log) was lost with damaged bytes.
    result.lost = sum(n for name, n in replayer.orphans.items() if name not in replayer.dropped)
    result.skipped = replayer.skipped - result.lost
    result.tokens = replayer.tokens
    keep = previous_generation(directory, base) if base is not None else 0
    for _generation, path in [s for s in snaps + segments(directory) if s[0] < keep]:
        path.unlink()  # superseded by the newest snapshot and the fallback generation before it
    for entry in db.tables.values():
        rebuild_indexes(entry)
    db.streams.resume({name: entry.table for name, entry in db.tables.items()})
    if base is not None:
        remove_older_streams(directory, keep)
    result.next_generation = _next_generation(segs, base)
    result.seconds = time.perf_counter() - started
    return result


def _load_snapshot(directory: Path, db: Database, snaps: list[tuple[int, Path]], result: Recovery) -> int | None:
    """Load the newest snapshot (or fall back to the one before it); its generation, None without one."""
    base = snaps[-1][0] if snaps else None
    if base is not None:
        try:
            _, result.snapshot_items = load(snaps[-1][1], db)
        except (SnapshotError, ValueError, UnicodeDecodeError) as err:
            base = _fallback(directory, db, snaps, err, result.problems)
    if base is not None:
        result.snapshot = base
        result.snapshot_bytes = snaps[-1][1].stat().st_size
        load_streams(directory, base, db.streams)
    return base


def _replay(directory: Path, segs: list[tuple[int, Path]], replayer: Replayer,
            result: Recovery) -> tuple[list[Path], tuple[Path, int, int, str, int] | None, list[tuple[Path, int]]]:
    """Read every segment's groups into `replayer`, changing nothing on disk; return the empty inner
    segments, the damaged tail to cut (`_cut`'s arguments) and the zero-filled tails to trim.
    Damage anywhere but at the end of the last segment raises LogDamaged."""
    empty: list[Path] = []
    torn: tuple[Path, int, int, str, int] | None = None
    zero_tails: list[tuple[Path, int]] = []
    for i, (_generation, path) in enumerate(segs):
        scan = scan_segment(path)
        if scan.problem is not None and (scan.resume is not None or i < len(segs) - 1):
            raise LogDamaged(directory, path.name, scan.good_end, scan.problem, scan.resume)
        for payload in scan.groups:
            try:
                entries = decode_group(payload)
            except ValueError as err:  # checksummed but unreadable: a format bug, not a torn write
                raise RecoveryError(f"{path.name}: undecodable group: {err}") from None
            replayer.add(entries)
        result.groups += len(scan.groups)
        result.replayed_bytes += max(0, scan.good_end - len(MAGIC))
        if not scan.groups and scan.problem is None and 0 < i < len(segs) - 1:
            empty.append(path)  # an empty segment inside the log holds nothing; the first and last are kept
            # (the last is written next; removing the first would leave the log without its start)
        if scan.problem is not None:
            torn = (path, scan.good_end, scan.file_size, scan.problem, len(scan.groups))
        elif scan.good_end < scan.file_size:
            zero_tails.append((path, scan.good_end))
    return empty, torn, zero_tails


def _next_generation(segs: list[tuple[int, Path]], base: int | None) -> int:
    """The segment to write on. An empty last segment is written on (not one after it): generations
    stay gapless, so a log that does not start at its snapshot's generation (or at 0) is known to have
    lost its base."""
    if not segs:
        return base if base is not None else 0  # the log after snapshot G is segment G
    last, last_path = segs[-1]
    return last if last_path.stat().st_size <= len(MAGIC) else last + 1

