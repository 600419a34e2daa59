"""Undoing, in memory, changes whose log group could not be made durable.

A write answered "could not be made durable" must be visible to no one, before or after a
restart. Item changes are undone through the one write path (`Table.apply`), so indexes and
TTL follow as they do for any write; table metadata changes (create, update, drop) are undone
by putting back the table entry and the metadata last logged for it.
"""
from __future__ import annotations

from typing import Any, Protocol

from dynalocal.journal.tablemeta import rebuild_indexes, restore_meta
from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.mutation import ROLLBACK, Mutation
from dynalocal.storage.ttl import ExpiryIndex

# A note of how to undo a change that is not an item write: ("table", name, entry before, metadata
# before) or ("token", ClientRequestToken, None, None). Item writes, as the journal collects them
# (`(table, key, new record, old record)`), carry what undoes them: the old record.
Undo = tuple[str, Any, Any, Any]


class Server(Protocol):
    """What an undo changes of a server (an engine Context)."""

    db: Database
    tokens: dict  # ClientRequestToken -> the transaction's idempotency record
    expiry: dict[str, ExpiryIndex]  # table name -> its TTL index


def table_undo(name: str, entry: TableEntry | None, meta: bytes | None) -> Undo:
    return ("table", name, entry, meta)


def token_undo(token: str) -> Undo:
    return ("token", token, None, None)


def undo(ctx: Server, changes: list) -> None:
    """Undo a journal batch's changes (item writes and Undo notes; log records are skipped),
    newest first (a later change may build on an earlier one)."""
    for first, a, b, c in reversed(changes):
        kind = first.__class__
        if kind is str:
            if first == "token":
                ctx.tokens.pop(a, None)  # the transaction's idempotency record: a retry runs it again
            else:
                _undo_table(ctx, a, b, c)
        elif kind is not int:  # an item write: the old record back (or the created item gone)
            first.apply(Mutation(a, c, origin=ROLLBACK))


def _undo_table(ctx: Server, name: str, entry: TableEntry | None, meta: bytes | None) -> None:
    tables = ctx.db.tables
    if entry is None:  # created by the undone request
        ctx.db.drop(name)
    else:
        tables[name] = entry  # dropped or replaced by the undone request: the old one is back
        indexes = (entry.gsis, entry.lsis, entry.vector_indexes)
        assert meta is not None  # saved together with the entry
        restore_meta(ctx.db, name, meta)
        if (entry.gsis, entry.lsis, entry.vector_indexes) != indexes:
            rebuild_indexes(entry)
    _follow_ttl(ctx, name, tables.get(name))


def _follow_ttl(ctx: Server, name: str, entry: TableEntry | None) -> None:
    """Make the table's expiry index match its (restored) TTL setting."""
    current = ctx.expiry.get(name)
    wanted = entry.ttl_attribute if entry is not None else None
    if current is not None and (entry is None or wanted is None or current.table is not entry.table
                                or current.attribute != wanted):
        current.detach()
        del ctx.expiry[name]
        current = None
    if current is None and entry is not None and wanted is not None:
        ctx.expiry[name] = ExpiryIndex(entry.table, wanted)
