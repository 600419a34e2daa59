"""Tables filled in the background (a restore, an import): CREATING while their items arrive, ACTIVE
once loaded; a failed load removes its table, and one cut off by a stop is removed at the next start.

A loading table is CREATING with `transient_until` at HELD, so no delay ever settles it: data-plane
calls find no table (ResourceNotFoundException) and UpdateTable/DeleteTable are refused
(ResourceInUseException), as for any CREATING table (engine.transient). The status is part of the
table's journaled metadata, so every change of it outside a request is bracketed as a request is
(`journaled`): after a restart a table is either still loading (half-loaded: removed) or done
(docs/behaviour/bulk.md §5, docs/behaviour/backups.md §2).
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import orjson

from dynalocal.engine import transient
from dynalocal.engine.context import Context
from dynalocal.storage.database import TableEntry

log = logging.getLogger("dynalocal")

HELD = 1e18  # transient_until of a table held CREATING until its load ends: never reached, and JSON-safe
TARGET = "DynamoDB_20120810."


def hold(entry: TableEntry) -> None:
    """Keep a new table CREATING until `release` (or `abandon`)."""
    entry.status = "CREATING"
    entry.transient_until = HELD


def loading(entry: TableEntry) -> bool:
    """Whether the table is held CREATING by a background load."""
    return entry.status == "CREATING" and entry.transient_until >= HELD


@contextmanager
def journaled(ctx: Context, operation: str | None, entry: TableEntry) -> Iterator[None]:
    """Run a change made outside any request (between a job's slices) as a request of `operation`
    naming the table (None: item writes only): with a data directory, its writes and metadata are
    logged as that request's would be."""
    journal = ctx.journal
    if journal is None:
        yield
        return
    journal.begin()
    try:
        yield
    finally:
        target = None if operation is None else TARGET + operation
        journal.seal(target, orjson.dumps({"TableName": entry.name}), 200, b"{}")


def release(ctx: Context, entry: TableEntry) -> None:
    """The load is complete: the table becomes ACTIVE (durably; after `--transient-delay`, if set)."""
    with journaled(ctx, "UpdateTable", entry):
        entry.status = "ACTIVE"
        entry.transient_until = 0.0
        transient.begin(ctx, entry, "CREATING")


def abandon(ctx: Context, entry: TableEntry) -> None:
    """The load failed: remove its half-loaded table (durably), if it is still there."""
    if ctx.db.tables.get(entry.key) is not entry:
        return
    with journaled(ctx, "DeleteTable", entry):
        ctx.db.drop(entry.key)
        ctx.capacity.forget(entry.key)


async def abandon_interrupted(ctx: Context) -> None:
    """Start-up hook: remove the tables whose load the last stop (or crash) cut off."""
    for entry in [e for e in ctx.db.tables.values() if loading(e)]:
        log.warning("table %s was still being loaded (restore or import) when the server stopped: removed",
                    entry.name)
        abandon(ctx, entry)
