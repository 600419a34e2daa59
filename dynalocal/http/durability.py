"""Durability glue: journal every mutation, acknowledge only durable writes, snapshot, reset.

The dispatcher brackets each request with `begin` and `seal` (or `commit`). Between them,
the table listener adds the request's item writes to the open batch of the group commit;
`seal` adds the metadata of tables a successful control-plane operation changed (or drop
markers) before them, and hands back the batch's ticket: the answer is sent once the batch,
logged as ONE frame (so a request, transactions included, is recovered entirely or not at
all), is fsynced. Reads also wait while earlier writes they might have seen are not yet
durable. A batch that cannot be written or synced (a full disk) is cut from the log and
undone in memory (server.rollback), and its requests answered 500. Mutations outside
requests (the TTL sweeper) join the open batch, which is then written soon; nobody waits
for them. Snapshots are taken at clean shutdown and as journal.plan says (log size, compaction).
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

import orjson

from dynalocal.engine import operations
from dynalocal.engine.common import table_name
from dynalocal.engine.context import Context
from dynalocal.engine.operations import OPERATIONS
from dynalocal.engine.reset import drop_all
from dynalocal.engine.transactions import TOKEN_LIFETIME
from dynalocal.errors import InternalServerError, error_body
from dynalocal.journal.groupcommit import GroupCommit, Ticket
from dynalocal.journal.lock import DataDirectoryInUse, lock_directory
from dynalocal.journal.plan import SnapshotPlan
from dynalocal.journal.recovery import Recovery, RecoveryError, kept_bytes, previous_generation, prune, recover
from dynalocal.journal.rollback import Undo, table_undo, token_undo, undo
from dynalocal.journal.snapshot import Image, SnapshotError, snapshot_path, verify, write
from dynalocal.journal.streamlog import write_snapshot as write_streams
from dynalocal.journal.tablemeta import encode_meta
from dynalocal.journal.tokens import encode_token, restore
from dynalocal.journal.wal import DROP, META, STREAM, Entry, LogWriter, encode_group
from dynalocal.journal.wal import TOKEN as TOKEN_RECORD
from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.partition import Record
from dynalocal.storage.table import Table
from dynalocal.storage.ttl import ExpiryIndex

log = logging.getLogger("dynalocal.durability")

CONTROL, TOKEN, DATA = "control", "token", "data"


def _kind_of(target: str) -> str:
    """CONTROL: may change table metadata; TOKEN: a write that records a ClientRequestToken; DATA: neither
    (from the operation catalogue's tags)."""
    op = OPERATIONS.get(target.rpartition(".")[2])
    if op is None or operations.CONTROL in op.tags:
        return CONTROL
    return TOKEN if operations.TOKEN in op.tags else DATA


class Durability:
    """The journal of one server: recovery at open, log groups per request, snapshots."""

    def __init__(self, ctx: Context, directory: Path, recovery: Recovery) -> None:
        settings = ctx.settings
        self.ctx = ctx
        self.db: Database = ctx.db
        self.directory = directory
        self.recovery = recovery
        self.commits = GroupCommit(LogWriter(directory, recovery.next_generation), settings.sync,
                                   settings.sync_interval, encode_group)
        self.commits.on_failure = self._undo_batches
        # the previous generation's snapshot and log are kept as a fallback (journal.recovery)
        kept = kept_bytes(directory, recovery.snapshot) if recovery.snapshot is not None else 0
        self.plan = SnapshotPlan(settings.snapshot_bytes, recovery.snapshot_bytes, kept, self._live_bytes())
        self._log_base = -recovery.replayed_bytes  # log position at the newest snapshot (see `log_bytes`)
        self._open = False  # a request is running (between `begin` and `seal`)
        self._start = 0  # where its entries begin in the open batch
        self._began = 0.0  # when the open request began (monotonic), to tell the idempotency token it recorded
        self._logged: dict[str, tuple[Table, bytes]] = {}  # table -> (its data, metadata as last logged)
        self._entries: dict[str, TableEntry] = {}  # table -> its entry when last logged
        self._kinds: dict[str, str] = {}  # target -> CONTROL, TOKEN or DATA (see `_kind_of`)
        self._snapshot_lock = asyncio.Lock()
        self._snapshot_task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock_fd: int | None = None
        for name, entry in self.db.tables.items():
            self._track(name, entry, encode_meta(entry))
            if entry.ttl_attribute is not None:
                ctx.expiry[name] = ExpiryIndex(entry.table, entry.ttl_attribute)
        self.db.streams.sink = self.on_stream
        ctx.tokens.update(restore(recovery.tokens, TOKEN_LIFETIME, ctx.wall_clock(), time.monotonic()))

    @classmethod
    def open(cls, ctx: Context) -> Durability:
        """Recover the data directory into ctx.db and journal from then on (sets ctx.journal)."""
        directory = Path(ctx.settings.data_dir)  # type: ignore[arg-type]
        lock = lock_directory(directory)
        result = recover(directory, ctx.db)
        gc.freeze()  # the recovered items are long-lived: keep them out of every later cycle collection
        items = sum(e.table.item_count for e in ctx.db.tables.values())
        log.info("recovered %d tables, %d items from %s in %.2fs (snapshot %s, %d log groups replayed, %d records "
                 "of deleted tables skipped)", len(ctx.db.tables), items, directory, result.seconds,
                 result.snapshot, result.groups, result.skipped)
        if result.lost:
            log.warning("%d log records of tables lost to damage skipped (the tables' creation was in damaged bytes "
                        "that `dynalocal repair` dropped, or in a snapshot it could not restore)", result.lost)
        ctx.journal = journal = cls(ctx, directory, result)
        journal._lock_fd = lock
        return journal

    def _live_bytes(self) -> int:
        """The DynamoDB size of every item (what compaction weighs the disk against)."""
        return sum(entry.table.size_bytes for entry in self.db.tables.values())

    @property
    def log_bytes(self) -> int:
        """Bytes of log written since the newest snapshot."""
        return self.commits.writer.position - self._log_base

    # -- collecting a request's mutations --------------------------------------------------
    # Everything goes into the open batch (GroupCommit.batch), in order: item writes (table, key,
    # new record, old record), logged as PUT/DELETE records and undone from the old record; other
    # log records; and notes of how to undo changes that are not item writes (server.rollback).

    def _track(self, name: str, entry: TableEntry, meta: bytes) -> None:
        self._logged[name] = (entry.table, meta)
        self._entries[name] = entry
        entry.table.recorder = self.record

    def record(self, table: Table, key: bytes, new: Record | None, old: Record | None) -> None:
        """Table recorder: journal one item write (its log record, and its undo: the old record)."""
        # A light tuple: a batch holds it until written (and no Mutation is built for the log).
        self.commits.batch.append((table, key, new, old))
        if not self._open:
            self._orphaned()

    def adopt(self, table: Table, items: Iterable[tuple[bytes, Record]] | None = None) -> None:
        """Log items the open request put in a new table outside the write path (a restore's; all of the
        table's by default) with the request, after its creation (`seal` puts the metadata first);
        undone with it."""
        batch = self.commits.batch
        if items is not None:
            batch += [(table, key, record, None) for key, record in items]
            return
        for part in table.partitions:
            batch += [(table, key, record, None) for key, record in part.items()]

    def on_stream(self, arn: str, event: bytes) -> None:
        """Stream registry sink: record one stream event in the open batch, after its item write."""
        self.commits.batch.append((STREAM, arn, event, None))
        if not self._open:
            self._orphaned()

    def _orphaned(self) -> None:
        """A mutation outside any request (the TTL sweeper): logged with the batch, waited for by no one."""
        if self._loop is None:
            try:
                self._bind()
            except RuntimeError:  # no loop (offline use): the next flush writes it
                return
        self.commits.schedule()

    def _bind(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self.commits.start(self._loop)

    def begin(self) -> None:
        """Open the request about to run: its mutations go into the open batch from here."""
        if self._loop is None:
            self._bind()
        self._open = True
        self._start = len(self.commits.batch)
        self._began = time.monotonic()

    def seal(self, target: str | None, raw: bytes, status: int,
             body: bytes) -> tuple[int, bytes, Ticket | None]:
        """Close the request's part of the batch: the answer, and the ticket to wait for before
        sending it (None when everything it may have seen is already durable).

        The HTTP layer calls this inline and writes the answer from the ticket's callback
        (see `settled`), so a journaled request costs no task of its own.
        """
        self._open = False
        commits = self.commits
        try:
            if status == 200 and target:
                kind = self._kinds.get(target)
                if kind is None:
                    kind = self._kinds[target] = _kind_of(target)
                if kind is CONTROL:
                    records, notes = self._control_records(raw)
                    commits.batch[self._start:self._start] = records + notes  # metadata before the items
                elif kind is TOKEN and len(commits.batch) > self._start:
                    commits.batch += self._token_undo(raw)
            # A failed sync undoes this batch (and every one after the last good sync); `settled` then answers 500.
            ticket = commits.ticket()
            log_bytes = commits.writer.position - self._log_base
            if log_bytes >= self.plan.at and self._snapshot_task is None and self._loop is not None \
                    and self.plan.due(log_bytes, self._live_bytes):
                self._snapshot_task = self._loop.create_task(self._background_snapshot())
            return status, body, ticket
        except Exception:  # not durable: no one sees the change, and the client is told so
            log.exception("write-ahead log failure")
            return (*self._not_durable(), None)

    def settled(self, durable: Ticket, status: int, body: bytes) -> tuple[int, bytes]:
        """The answer to send once a request's ticket is done: its own, or a 500 if the fsync failed."""
        error = durable.error
        if error is None:
            return status, body
        log.error("write-ahead log failure: %s", error)
        return self._not_durable()

    @staticmethod
    def _not_durable() -> tuple[int, bytes]:
        failure = InternalServerError("The write could not be made durable")
        return failure.status, error_body(failure)

    async def commit(self, target: str | None, raw: bytes, status: int, body: bytes) -> tuple[int, bytes]:
        """`seal`, then wait until the request's writes (and all before them) are durable."""
        status, body, durable = self.seal(target, raw, status, body)
        if durable is None:
            return status, body
        await self._durable(durable)
        return self.settled(durable, status, body)

    @staticmethod
    async def _durable(ticket: Ticket) -> None:
        """Wait until the ticket's batch is synced or has failed (`ticket.error`)."""
        if not ticket.done:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def wake(_: Ticket) -> None:
                if not future.done():
                    future.set_result(None)

            ticket.add_done_callback(wake)
            await future

    def _token_undo(self, raw: bytes) -> list[Entry | Undo]:
        """A transaction's idempotency token, if this request recorded it: logged in the group of its
        writes (so a restart keeps both or neither) and undone with them, or a retry with the same token
        would be answered with the success of a write that was undone."""
        if b"ClientRequestToken" not in raw and b"\\u" not in raw:  # no token (the common case; a name spelt
            return []  # with escapes would show a backslash-u): no second decode of the request
        token = orjson.loads(raw).get("ClientRequestToken")
        seen = self.ctx.tokens.get(token) if isinstance(token, str) else None
        if seen is None or seen[2] < self._began:
            return []
        return [(TOKEN_RECORD, token, encode_token(seen[0], seen[1], self.ctx.wall_clock()), None), token_undo(token)]

    def _relog_tokens(self) -> Ticket | None:
        """Log the live idempotency tokens again, first thing in a new segment: a snapshot holds no
        tokens, and the segments before it are deleted (journal.tokens)."""
        now, wall = time.monotonic(), self.ctx.wall_clock()
        records: list[Entry] = [(TOKEN_RECORD, token, encode_token(fingerprint, response, wall - (now - at)), None)
                                for token, (fingerprint, response, at) in self.ctx.tokens.items()
                                if now - at <= TOKEN_LIFETIME]
        if not records:
            return None
        self.commits.batch += records
        ticket = self.commits.ticket()
        self.commits.flush()
        return ticket

    def _undo_batches(self, batches: list[list]) -> None:
        """GroupCommit.on_failure: undo these batches (newest first) in memory (as ROLLBACK mutations,
        which are not logged)."""
        for batch in batches:
            undo(self.ctx, batch)
            self._forget(batch)

    def _control_records(self, raw: bytes) -> tuple[list[Entry], list[Undo]]:
        """Metadata records of every table the control-plane request created, changed or dropped."""
        try:
            request = orjson.loads(raw)
        except orjson.JSONDecodeError:
            request = {}
        named = (request.get("TableName") or request.get("ResourceArn")) if isinstance(request, dict) else None
        names = self._logged.keys() ^ self.db.tables.keys()  # created or dropped
        if isinstance(named, str) and self.ctx.settings.isolation == "shared":  # else keys are scoped: compare all
            names.add(table_name(named))
        else:
            names |= self.db.tables.keys()  # an operation naming no table: compare them all
        return self._records_for(names)

    def _records_for(self, names: Iterable[str]) -> tuple[list[Entry], list[Undo]]:
        """The metadata records of tables whose metadata changed, and how to undo each change."""
        records: list[Entry] = []
        changes: list[Undo] = []
        for name in sorted(names):
            entry, known = self.db.tables.get(name), self._logged.get(name)
            before = table_undo(name, self._entries.get(name), known[1] if known is not None else None)
            if entry is None:
                if known is not None:
                    records.append((DROP, name, None, None))
                    del self._logged[name]
                    self._entries.pop(name, None)
                    changes.append(before)
                continue
            meta = encode_meta(entry)
            if known is not None and known[0] is entry.table and known[1] == meta:
                continue
            if known is not None and known[0] is not entry.table:
                records.append((DROP, name, None, None))  # replaced within one request
            records.append((META, name, meta, None))
            self._track(name, entry, meta)
            changes.append(before)
        return records, changes

    def _forget(self, changes: list) -> None:
        """After undoing table changes: the log's view of those tables is what it was."""
        for kind, name, entry, meta in changes:
            if kind.__class__ is str and kind == "table":
                if entry is None:
                    self._logged.pop(name, None)
                    self._entries.pop(name, None)
                else:
                    self._track(name, entry, meta)

    # -- snapshots and reset ---------------------------------------------------------------

    async def _background_snapshot(self) -> None:
        try:
            await self.snapshot()
            self.plan.retry = 0
        except Exception:  # the log still holds everything; try again once as much log again is written
            log.exception("snapshot failed")
            self.plan.failed(self.log_bytes)
        finally:
            self._snapshot_task = None
            self.plan.next()

    async def snapshot(self, fallback: bool = True) -> None:
        """Write a snapshot (between requests, a chunk at a time), read it back, and delete what is older than
        the previous generation (`fallback` False: everything older: a reset)."""
        async with self._snapshot_lock:
            generation = self.commits.writer.generation + 1
            self.commits.rotate(generation)
            self._log_base = self.commits.writer.position
            tokens = self._relog_tokens()
            streams = self.db.streams.capture()  # exact as of the rotation; replay tolerates the overlap
            image = Image()
            for _ in image.capture(self.db):
                await asyncio.sleep(0)
            live = self._live_bytes()
            loop = asyncio.get_running_loop()
            # Streams first: a snapshot file without its stream file must not supersede the log.
            await loop.run_in_executor(None, write_streams, streams, self.directory, generation)
            size = await loop.run_in_executor(None, write, image, self.directory, generation)
            try:  # read back before anything older goes
                await loop.run_in_executor(None, verify, snapshot_path(self.directory, generation))
            except SnapshotError:
                snapshot_path(self.directory, generation).unlink(missing_ok=True)  # the older generation stands
                raise
            self.plan.snapshot_bytes, self.plan.live_bytes = size, live
            if tokens is not None:  # durable before the segments that held them go
                await self._durable(tokens)
                if tokens.error is not None:
                    raise tokens.error
            keep = previous_generation(self.directory, generation) if fallback else generation
            self.plan.kept_bytes = await loop.run_in_executor(None, prune, self.directory, generation, keep)
            log.info("snapshot %d: %d tables, %d items, %d bytes", generation, len(image.tables), image.items,
                     self.plan.snapshot_bytes)

    async def reset(self) -> int:
        """Drop every table, log it, and compact the data directory to an empty snapshot."""
        self.begin()
        dropped = drop_all(self.ctx)
        records, notes = self._records_for(set(self._logged))
        self.commits.batch += records + notes
        status, _ = await self.commit(None, b"", 200, b"")
        if status != 200:
            raise OSError("the reset could not be made durable; nothing was dropped")
        await self.snapshot(fallback=False)
        return dropped

    async def close(self) -> None:
        """Clean shutdown: finish any snapshot, take a final one if the log grew, close the log."""
        try:
            if self._snapshot_task is not None:
                await self._snapshot_task
            self.commits.flush()
            if self.log_bytes > 0:
                try:
                    await self.snapshot()
                except OSError:  # e.g. a full disk: the log still holds everything, start-up replays it
                    log.exception("final snapshot failed; the write-ahead log keeps every write")
        finally:
            try:
                self.commits.close()
            except OSError:
                log.exception("closing the write-ahead log failed")
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the directory lock
                self._lock_fd = None


# What can stop a server from starting on a data directory (each with a message for the user).
STARTUP_ERRORS = (DataDirectoryInUse, RecoveryError, SnapshotError, OSError)
