"""Group commit: the writes of many requests share one log frame and one fsync.

Requests add their entries (storage.wal records, and how to undo them) to the open *batch*
and get its `Ticket`; they are answered from the ticket's callbacks once it is synced. The
batch is written to the log as one frame and handed to the flusher thread, which fsyncs
whatever has been written (frames written during an fsync share the next one):

- `batch` mode: as soon as the event loop has gone through a whole round of ready input
  without adding a write to the batch (every writer that could join has joined: waiting
  longer only adds latency), or, under continuous load, once the batch has been open for
  the interval, so then there is at most one fsync per interval. The interval is checked
  as each request joins, too: when one loop round runs many slow requests (16 BatchWriteItems
  of 25 items take ~5 ms), the batch is written mid-round and its fsync overlaps the rest.
- `always` mode: at once, each request's write.
- `none` mode: at once, and nobody waits (a killed process loses nothing, a crashed machine
  may).

An fsync of a 4 KB group costs about 80-140 µs of wall time on this project's test VM (ext4 on a
virtio disk), 40-70 µs of it CPU time of the syncing thread (fdatasync into the zero-filled log,
journal.wal.LogWriter; bench/fsync_cost.py): sharing one among all the writers at hand is what
makes journaled writes cheap.

A failed fsync means the bytes since the last good one may or may not be on disk: they are
cut off the log (back to the last durable frame), `on_failure` undoes their changes in
memory (and those of the open batch, which may build on them), and their tickets fail. The
log then carries on: once the disk has room again, new writes are durable as usual.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from time import monotonic

from dynalocal.journal.wal import LogWriter

log = logging.getLogger("dynalocal.durability")

SYNC_MODES = ("always", "batch", "none")


class Ticket:
    """The durability of one batch: done once it is synced (`error` None) or cannot be (`error` set).

    Quacks like the part of an asyncio future the HTTP layer uses (`add_done_callback`), but its
    callbacks run at once when it settles: one object per batch, no loop callback per request.
    """

    __slots__ = ("done", "error", "_callbacks")

    def __init__(self) -> None:
        self.done = False
        self.error: BaseException | None = None
        self._callbacks: list[Callable[[Ticket], None]] = []

    def add_done_callback(self, callback: Callable[[Ticket], None]) -> None:
        if self.done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def exception(self) -> BaseException | None:
        return self.error

    def cancelled(self) -> bool:
        return False

    def settle(self, error: BaseException | None = None) -> None:
        self.done, self.error = True, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # one waiter's bug must not keep the others from their answers
                log.exception("durability callback failed")


class GroupCommit:
    """The log writer, the open batch, the fsync thread and the tickets waiting on it."""

    def __init__(self, writer: LogWriter, mode: str = "batch", interval: float = 0.002,
                 encode: Callable[[list], bytes] = b"".join) -> None:
        if mode not in SYNC_MODES:
            raise ValueError(f"sync mode must be one of {SYNC_MODES}")
        self.writer = writer
        self.mode = mode
        self.interval = interval
        self.encode = encode  # a batch's entries -> the payload of its frame (b"" when there is nothing to log)
        self.batch: list = []  # entries of the open batch; requests append to it, then call `ticket`
        self.durable, self.durable_offset = writer.mark  # the last position known to be on disk, and its offset
        # on_failure(batches): undo in memory the entries of these batches, newest first (set by the journal)
        self.on_failure: Callable[[list[list]], None] | None = None
        self.failures = 0
        self.syncs = 0  # fsyncs done by the flusher
        self._ticket = Ticket()  # the open batch's
        self._joined = 0  # tickets handed out for the open batch
        self._watching = False  # a `_watch` call is scheduled
        self._seen = -1
        self._deadline = 0.0
        self._inflight: deque[tuple[int, Ticket, list]] = deque()  # (end position, ticket, entries) written, not synced
        self._epoch = 0  # bumped by each failure: sync reports from before it are stale
        self._synced = self.durable
        self._lock = threading.Lock()  # the writer's file descriptor and the epoch, against the fsync thread
        self._bell = threading.Lock()  # held while the flusher has nothing to do; released to wake it
        self._bell.acquire()
        self._rung = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closing = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind to the serving loop and start the flusher (idempotent)."""
        if self._loop is None:
            self._loop = loop
        if self._thread is None and self.mode != "none":
            self._thread = threading.Thread(target=self._run, name="dynalocal-fsync", daemon=True)
            self._thread.start()

    # -- on the event loop ---------------------------------------------------------------------

    def ticket(self) -> Ticket | None:
        """After a request added its entries to `batch` (or none: a read): what its answer waits
        for. None when everything it may have seen is durable already."""
        if self.batch:
            if self.mode == "batch":
                self._joined += 1
                if not self._watching:
                    self.schedule()
                elif monotonic() >= self._deadline:  # open for the interval within one long loop round:
                    ticket = self._ticket  # written now, so that its fsync overlaps the rest of the round
                    self.flush()
                    return ticket
                return self._ticket
            ticket = self._ticket
            self.flush()
            return None if ticket.done and ticket.error is None else ticket  # a failed write: answered at once
        inflight = self._inflight
        return inflight[-1][1] if inflight else None

    def schedule(self) -> None:
        """Have the open batch written soon (by the rules of the mode): entries no request waits for."""
        if not self._watching and self._loop is not None:
            self._watching = True
            self._seen = -1
            self._deadline = monotonic() + self.interval
            self._loop.call_soon(self._watch)

    def _watch(self) -> None:
        """Once per loop round while a batch is open: write it once a round added nothing to it."""
        joined = self._joined
        if self.mode == "batch" and joined != self._seen and monotonic() < self._deadline and self.batch:
            self._seen = joined
            assert self._loop is not None  # _watch is scheduled on it
            self._loop.call_soon(self._watch)
            return
        self._watching = False
        self.flush()

    def flush(self) -> None:
        """Write the open batch as one frame now and have it synced (in `none` mode it is durable at once)."""
        batch = self.batch
        if not batch:
            return
        ticket = self._ticket
        self.batch, self._ticket, self._joined = [], Ticket(), 0
        self._seen, self._deadline = -1, monotonic() + self.interval  # a watch still scheduled watches the next batch
        try:
            payload = self.encode(batch)
            position = self.writer.append(payload) if payload else self.writer.position
        except Exception as err:  # not written (nothing of it is left in the log): undo it
            log.error("write-ahead log write failed: %s; the writes of its group are undone", err)
            if self.on_failure is not None:
                self.on_failure([batch])
            ticket.settle(err)
            return
        if self.mode == "none" or position <= self.durable:
            self.durable, self.durable_offset = self.writer.mark
            ticket.settle()
            return
        self._inflight.append((position, ticket, batch))
        if not self._rung:
            self._rung = True
            self._bell.release()

    def _settle(self, mark: tuple[int, int], error: OSError | None, epoch: int) -> None:
        """A sync of everything up to `mark` succeeded (or failed)."""
        if error is not None:
            self._fail(error)
            return
        if epoch != self._epoch or mark[0] <= self.durable:
            return  # a report from before a failure (its tickets have failed) or nothing new
        self.durable, self.durable_offset = mark
        inflight = self._inflight
        while inflight and inflight[0][0] <= mark[0]:
            inflight.popleft()[1].settle()

    def _fail(self, error: OSError) -> None:
        """Cut the log back to the last durable frame, undo what followed, fail its tickets."""
        log.error("fsync of the write-ahead log failed: %s; the writes since the last good fsync are undone "
                  "and answered as failed", error)
        self.failures += 1
        with self._lock:
            self._epoch += 1
            self.writer._try_cut(self.durable_offset)  # if even this fails, the next append retries it first
            # what is left (in the log, and in memory once undone) is durable; positions are never reused
            self.durable = self._synced = self.writer.position
        batches = [self.batch] + [entries for _, _, entries in reversed(self._inflight)]
        tickets = [ticket for _, ticket, _ in self._inflight] + [self._ticket]
        self.batch, self._ticket, self._joined = [], Ticket(), 0
        self._inflight.clear()
        if self.on_failure is not None:
            self.on_failure(batches)
        for ticket in tickets:
            ticket.settle(error)

    def rotate(self, generation: int) -> None:
        """Continue in a new segment once everything in the current one is synced.

        A failed sync is handled like the flusher's; a new segment that cannot be created
        leaves the log in the current one (raising either way)."""
        self.flush()
        with self._lock:
            try:
                os.fsync(self.writer.fd)
            except OSError as err:
                failure: OSError | None = err
            else:
                failure = None
                mark = self.writer.mark
                self._synced = mark[0]
        if failure is not None:
            self._fail(failure)
            raise failure
        self._settle(mark, None, self._epoch)  # its answers may run requests that append (synced by the rotation)
        with self._lock:
            self.writer.rotate(generation)  # syncs the current segment first (cheap after the sync above)
            self.durable, self.durable_offset = self.writer.mark
            self._synced = self.durable
        inflight = self._inflight
        while inflight and inflight[0][0] <= self.durable:
            inflight.popleft()[1].settle()

    def close(self) -> None:
        """Write what is open, stop the flusher, sync and close the log."""
        self.flush()
        if self._thread is not None:
            self._closing = True
            if not self._rung:
                self._rung = True
                self._bell.release()
            self._thread.join()
            self._thread = None
        with self._lock:
            mark = self.writer.mark
            self.writer.close()
        self._settle(mark, None, self._epoch)

    # -- on the flusher thread -----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._bell.acquire()
            self._rung = False  # rung again from here on: the mark read below may miss that write
            if self._closing:
                return
            with self._lock:
                epoch, mark = self._epoch, self.writer.mark
                if mark[0] <= self._synced:
                    continue  # synced already (by a rotation)
                error = None
                try:
                    self.writer.sync()
                except OSError as err:
                    error = err
                self._synced = mark[0]
                self.syncs += 1
            assert self._loop is not None  # set by the first write that waits
            self._loop.call_soon_threadsafe(self._settle, mark, error, epoch)
