"""Point-in-time recovery history of one table: the old image of every change, with its time.

A table listener appends (time, key, old record or None) for each write; the table as of time T
is its current items with every change made after T undone, newest first (docs/behaviour/backups.md).
Entries older than the recovery period are dropped as new ones arrive. A `sink` (journal.history,
with a data directory) receives each entry too, before the write is acknowledged. Changes rolled
back after a failed fsync are not entries: the entry of the failed write already holds the image
they put back.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

from dynalocal.storage.mutation import ROLLBACK, Mutation
from dynalocal.storage.partition import Record
from dynalocal.storage.table import Table

Entry = tuple[float, bytes, "Record | None"]
Sink = Callable[[float, bytes, "Record | None"], None]
PRUNE_EVERY = 1024  # entries appended between two checks for expired ones
COMPACT_MIN = 65536  # expired entries a history file may hold before it is rewritten


class History:
    """The changes of one table since PITR was enabled (or since the recovery period began)."""

    __slots__ = ("table", "clock", "period", "entries", "sink", "compact", "_until_prune", "pruned")

    def __init__(self, table: Table, clock: Callable[[], float], period: float, sink: Sink | None = None,
                 entries: list[Entry] | None = None) -> None:
        self.table = table
        self.clock = clock  # wall clock, epoch seconds
        self.period = period  # seconds kept
        self.entries: deque[Entry] = deque(entries or ())
        self.sink = sink
        self.compact: Callable[[], None] | None = None  # rewrites the sink's file with the live entries only
        self._until_prune = PRUNE_EVERY
        self.pruned = 0  # entries dropped since the sink last compacted (journal.history)

    def attach(self) -> None:
        if self.listener not in self.table.listeners:
            self.table.listeners.append(self.listener)

    def detach(self) -> None:
        if self.listener in self.table.listeners:
            self.table.listeners.remove(self.listener)

    def listener(self, m: Mutation) -> None:
        """Table listener: remember the image this change replaced."""
        if m.origin == ROLLBACK:
            return None
        now = self.clock()
        entry = (now, m.key, m.old)
        self.entries.append(entry)
        if self.sink is not None:
            self.sink(*entry)
        self._until_prune -= 1
        if self._until_prune <= 0:
            self._until_prune = PRUNE_EVERY
            self.prune(now)
        return None

    def prune(self, now: float) -> int:
        """Drop entries older than the recovery period; return how many."""
        entries, cutoff, dropped = self.entries, now - self.period, 0
        while entries and entries[0][0] < cutoff:
            entries.popleft()
            dropped += 1
        self.pruned += dropped
        if self.compact is not None and self.pruned > max(COMPACT_MIN, len(entries)):
            self.pruned = 0
            self.compact()  # the file keeps at most about twice the period's entries
        return dropped

    def items_at(self, when: float) -> dict[bytes, Record]:
        """Every item of the table as it was at `when` (epoch seconds): key -> record."""
        state: dict[bytes, Record] = {}
        for part in self.table.partitions:
            state.update(part.items())
        for at, key, old in reversed(self.entries):
            if at <= when:
                break
            if old is None:
                state.pop(key, None)
            else:
                state[key] = old
        return state
