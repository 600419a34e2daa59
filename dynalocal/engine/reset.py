"""Dropping every table: POST /_dynalocal/reset, and the journal's reset (http.durability)."""
from __future__ import annotations

from dynalocal.engine.backups import catalog, continuous
from dynalocal.engine.context import Context


def drop_all(ctx: Context) -> int:
    """Drop every table and its TTL state, PITR history and backups; return how many tables there were."""
    names = list(ctx.db.tables)
    for name in names:
        entry = ctx.db.drop(name)
        if entry is not None and entry.point_in_time_recovery:
            continuous.forget(ctx, entry)
    catalog.forget_all(ctx)  # a reset server has no backups either
    ctx.expiry.clear()
    ctx.db.streams.clear()
    tokens = getattr(ctx, "tokens", None)  # transaction idempotency tokens refer to the dropped data
    if tokens is not None:
        tokens.clear()
    return len(names)


async def reset_database(ctx: Context) -> int:
    """Drop all tables, and their persisted state when there is a data directory (ctx.journal)."""
    if ctx.journal is not None:
        return await ctx.journal.reset()
    return drop_all(ctx)
