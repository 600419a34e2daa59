"""When to snapshot: the log size of the next snapshot, or of the next check whether compacting pays.

A snapshot is taken when the log since the last one exceeds max(--snapshot-mb, half the live
data's DynamoDB size as of that snapshot). A snapshot rewrites every item, so a threshold that
does not grow with the data makes each write cost more snapshot work the larger the database
(filling a database with items of 200 bytes, 64 MiB: 2.5 items copied per item written at 1M
items, 10.5 at 5M; a quarter of the compressed snapshot, the earlier rule: 2.5 and 7.3); in
proportion to the data it stays under four (tests/unit/test_snapshot_plan.py), and start-up
after a crash replays a log of at most about half the data. Between those, once the log holds
1/16 of --snapshot-mb, the log is *compacted* (a snapshot taken early) when the snapshots and log on disk
(the previous generation, kept as a fallback, included: journal.recovery) exceed four times the
live data's DynamoDB size: then deletes and overwrites dominate, and a new snapshot (at most about
twice the logical size) gives the disk back (README, Durability).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("dynalocal.durability")

COMPACT_RATIO = 4  # compact once snapshot + log exceed this many times the live data's logical size
COMPACT_FLOOR = 256 * 1024  # ... and the log since the snapshot has at least this many bytes (or 1/16 of --snapshot-mb)
COMPACT_CHECK = 64 * 1024  # bytes of log between two checks (a sum over the tables' partitions)


class SnapshotPlan:
    """Sizes in bytes; `at` is the log size at which to snapshot next or to check (`due`)."""

    def __init__(self, min_bytes: int, snapshot_bytes: int, kept_bytes: int, live_bytes: int = 0) -> None:
        self.min_bytes = min_bytes  # --snapshot-mb
        self.snapshot_bytes = snapshot_bytes  # the newest snapshot's size
        self.live_bytes = live_bytes  # the live data's DynamoDB size when it was taken (or at start-up)
        self.kept_bytes = kept_bytes  # the fallback generation's snapshot and log
        self.retry = 0  # after a failed snapshot: the log size at which to try again
        self.compact_floor = max(COMPACT_FLOOR, min_bytes // 16)
        self.at = 0
        self.next()

    def regular(self) -> int:
        """The log size at which a snapshot is taken whatever the live data."""
        return max(self.min_bytes, self.live_bytes // 2, self.retry)

    def next(self, checked: int = 0) -> None:
        """Set `at` from the log size just checked (0: a snapshot was just taken, or tried)."""
        # A large fallback generation (kept after a compaction) is itself reason to compact again soon.
        floor = self.compact_floor if self.kept_bytes <= self.compact_floor else 0
        self.at = min(self.regular(), max(checked + COMPACT_CHECK, self.retry, floor))

    def due(self, log_bytes: int, live: Callable[[], int]) -> bool:
        """At `at`: whether to snapshot now (the log is long, or compaction pays); else plan a check."""
        if log_bytes >= self.regular():
            return True
        disk, data = self.kept_bytes + self.snapshot_bytes + log_bytes, live()
        if disk > COMPACT_RATIO * data and log_bytes >= self.retry:
            log.info("compacting the log: %d bytes of snapshots and log hold %d bytes of live data", disk, data)
            return True
        self.next(log_bytes)
        return False

    def failed(self, log_bytes: int) -> None:
        """A snapshot failed: the log still holds everything; try again once as much log again is written."""
        self.retry = log_bytes + max(self.min_bytes, self.live_bytes // 2)
