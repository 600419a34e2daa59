"""Point-in-time recovery state of a table: its change history while PITR is enabled, the
restorable window, and what happens to both when PITR is switched or the table deleted.

Histories live in ctx.db.histories (table key -> storage.history.History); with a data directory
each also appends to `<data dir>/pitr/<table id>.hist` (journal.history) and is read back at
start-up (`resume`). docs/behaviour/backups.md §3.
"""
from __future__ import annotations

import math

from dynalocal.engine.context import Context
from dynalocal.journal import history as files
from dynalocal.storage.database import TableEntry
from dynalocal.storage.history import Entry, History
from dynalocal.storage.partition import Record

DAY = 86400.0


def window(ctx: Context, entry: TableEntry) -> tuple[float, float]:
    """(EarliestRestorableDateTime, LatestRestorableDateTime) of a table with PITR enabled."""
    now = ctx.wall_clock()
    since = entry.pitr_since if entry.pitr_since is not None else entry.created
    earliest = max(since, now - entry.pitr_days * DAY)
    return earliest, max(earliest, now - ctx.settings.pitr_lag_seconds)


def restorable(ctx: Context, entry: TableEntry, when: float) -> bool:
    """Whether `when` is in the window (to the second: a client may send whole seconds only)."""
    earliest, latest = window(ctx, entry)
    return math.floor(earliest) <= when <= latest


def as_of(ctx: Context, entry: TableEntry, when: float) -> tuple[list[bytes], list[Record]]:
    """The table's items at `when` (in its window), as sorted keys and their records: what a
    point-in-time restore loads and a point-in-time export writes."""
    state = ctx.db.histories[entry.key].items_at(when)
    keys = sorted(state)
    return keys, [state[k] for k in keys]


def _start(ctx: Context, entry: TableEntry, entries: list[Entry] | None = None) -> History:
    history = History(entry.table, ctx.wall_clock, entry.pitr_days * DAY, entries=entries)
    if ctx.settings.data_dir is not None:
        sink = files.HistoryFile(files.directory_of(ctx.settings.data_dir) / f"{entry.table_id}.hist")
        history.sink = sink.append
        history.compact = lambda: sink.rewrite(list(history.entries))
    history.attach()
    ctx.db.histories[entry.key] = history
    return history


def enable(ctx: Context, entry: TableEntry, days: int) -> None:
    """Turn PITR on (from now) or change its recovery period."""
    entry.pitr_days = days
    history = ctx.db.histories.get(entry.key)
    if entry.point_in_time_recovery and history is not None:
        history.period = days * DAY
        history.prune(ctx.wall_clock())
        return
    entry.point_in_time_recovery = True
    entry.pitr_since = ctx.wall_clock()
    _start(ctx, entry)


def forget(ctx: Context, entry: TableEntry) -> None:
    """Stop keeping the table's history (PITR disabled, or the table deleted) and remove its file."""
    history = ctx.db.histories.pop(entry.key, None)
    if history is not None:
        history.detach()
    if ctx.settings.data_dir is not None:
        files.HistoryFile(files.directory_of(ctx.settings.data_dir) / f"{entry.table_id}.hist").remove()


def disable(ctx: Context, entry: TableEntry) -> None:
    entry.point_in_time_recovery = False
    entry.pitr_since = None
    forget(ctx, entry)


def resume(ctx: Context) -> None:
    """At start-up: the history of every table with PITR enabled, from its file, within the period."""
    now = ctx.wall_clock()
    for entry in ctx.db.tables.values():
        if not entry.point_in_time_recovery:
            continue
        path = files.directory_of(ctx.settings.data_dir) / f"{entry.table_id}.hist" \
            if ctx.settings.data_dir is not None else None
        entries, rewrite = files.read(path, now - entry.pitr_days * DAY) if path is not None else ([], False)
        history = _start(ctx, entry, entries)
        if rewrite and history.compact is not None:
            history.compact()
