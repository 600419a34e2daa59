"""Transient table statuses (`--transient-delay`, DynamoDB Local's `-delayTransientStatuses`).

On AWS a new table is CREATING for a while, an updated one UPDATING, a deleted one DELETING;
code that forgets its waiters fails there. With a delay configured, tables here keep those
statuses for that long too: a CREATING table is not found by data-plane calls, CREATING and
UPDATING tables refuse UpdateTable/DeleteTable (ResourceInUseException), and a deleted table
is still listed and described as DELETING. Statuses are settled lazily, when a request looks
at the table, against the injectable wall clock; with no delay nothing here runs.
"""
from __future__ import annotations

from dynalocal.engine import index_updates
from dynalocal.engine.context import Context
from dynalocal.errors import ResourceInUseException
from dynalocal.storage.database import TableEntry

TRANSIENT = frozenset(("CREATING", "UPDATING"))
_IN_USE = {"CREATING": "Table is being created", "UPDATING": "Table is being updated"}


def begin(ctx: Context, entry: TableEntry, status: str) -> bool:
    """Put the table in `status` for the configured delay; False (nothing done) without one."""
    delay = ctx.settings.transient_delay
    if delay <= 0:
        return False
    entry.status = status
    entry.transient_until = ctx.wall_clock() + delay
    return True


def settle(ctx: Context, entry: TableEntry) -> None:
    """End a CREATING/UPDATING status whose time has come (an update's indexes become ACTIVE)."""
    if entry.status in TRANSIENT and ctx.wall_clock() >= entry.transient_until:
        if entry.status == "UPDATING":
            index_updates.finish(entry)
        entry.status = "ACTIVE"


def check_not_in_use(ctx: Context, entry: TableEntry) -> None:
    """UpdateTable/DeleteTable of a table still CREATING or UPDATING: ResourceInUseException."""
    settle(ctx, entry)
    if entry.status in TRANSIENT:
        raise ResourceInUseException(f"Attempt to change a resource which is still in use: "
                                     f"{_IN_USE[entry.status]}: {entry.name}")


def deleted(ctx: Context, entry: TableEntry) -> None:
    """Keep a just-dropped table visible as DELETING for the delay."""
    if ctx.settings.transient_delay > 0:
        entry.status = "DELETING"
        ctx.db.deleting[entry.key] = (entry, ctx.wall_clock() + ctx.settings.transient_delay)


def deleting(ctx: Context) -> dict[str, TableEntry]:
    """Tables still DELETING, by key (the expired ones are forgotten)."""
    ghosts = ctx.db.deleting
    if not ghosts:
        return {}
    now = ctx.wall_clock()
    for key in [k for k, (_, until) in ghosts.items() if now >= until]:
        del ghosts[key]
    return {key: entry for key, (entry, _) in ghosts.items()}
