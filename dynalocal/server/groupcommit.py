"""Group commit: requests append to the log at once and await one shared fsync.

Appends happen on the event loop (a plain write to the OS, so a killed process loses
nothing appended). A flusher thread fsyncs whatever has been appended; writes that arrive
during an fsync share the next one. In `always` mode it syncs as soon as anything is
pending. In `batch` mode a lone pending write is synced at once too (a sequential client
pays no delay), but when several writers are waiting the flusher first gathers more, for
as long as new ones keep arriving and at most until the interval since the previous fsync
has passed, so that under load one fsync per interval covers them all. In `none` mode
nothing is synced and nobody waits (a killed process still loses nothing, a crashed
machine may). Waiters are futures resolved on the loop once the synced position passes
theirs.

A failed fsync means the bytes since the last good one may or may not be on disk: they are
cut off the log (back to the last durable frame), `on_failure` undoes their changes in
memory, and their waiters fail. The log then carries on: once the disk has room again, new
writes are durable as usual.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from typing import Callable

from ..storage.wal import LogWriter

log = logging.getLogger("dynalocal.durability")

SYNC_MODES = ("always", "batch", "none")
GATHER_TICKS = 4  # batch mode polls for newly arrived writes this many times per interval


class GroupCommit:
    """The log writer plus the fsync thread and the requests waiting on it."""

    def __init__(self, writer: LogWriter, mode: str = "batch", interval: float = 0.002,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        if mode not in SYNC_MODES:
            raise ValueError(f"sync mode must be one of {SYNC_MODES}")
        self.writer = writer
        self.mode = mode
        self.interval = interval if mode == "batch" else 0.0
        self.durable, self.durable_offset = writer.mark  # the last position known to be on disk, and its offset
        # on_failure(durable): undo in memory every change logged after `durable` (set by the journal)
        self.on_failure: Callable[[int], None] | None = None
        self.failures = 0
        self._clock, self._sleep = clock, sleep  # the gathering's time, injectable for deterministic tests
        self._epoch = 0  # bumped by each failure: sync reports from before it are stale
        self._synced = self.durable
        self._last_sync = 0.0
        self._appends = 0  # groups appended (counted on the loop, read by the flusher)
        self._appends_synced = 0
        self._lock = threading.Lock()  # the writer's file descriptor and the epoch, against the fsync thread
        self._wake = threading.Event()
        self._waiters: deque[tuple[int, asyncio.Future]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closing = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind to the serving loop and start the flusher (idempotent)."""
        if self._thread is None and self.mode != "none":
            self._loop = loop
            self._thread = threading.Thread(target=self._run, name="dynalocal-fsync", daemon=True)
            self._thread.start()

    def append(self, payload: bytes) -> int:
        """Append one group; return the position a waiter must see synced. Raises OSError if the
        group could not be written (nothing of it is left in the log)."""
        position = self.writer.append(payload)
        self._appends += 1
        if self.mode == "none":
            self.durable, self.durable_offset = self.writer.mark
        elif not self._wake.is_set():
            self._wake.set()
        return position

    def waiter(self, position: int) -> asyncio.Future | None:
        """A future resolved once `position` is durable (failed if it cannot be), or None if it already is."""
        if position <= self.durable:
            return None
        future = self._loop.create_future()  # type: ignore[union-attr]
        self._waiters.append((position, future))
        return future

    def rotate(self, generation: int) -> None:
        """Continue in a new segment once everything in the current one is synced.

        A failed sync is handled like the flusher's; a new segment that cannot be created
        leaves the log in the current one (raising either way)."""
        with self._lock:
            try:
                os.fsync(self.writer.fd)
            except OSError as err:
                failure: OSError | None = err
            else:
                failure = None
                self._settle(self.writer.mark, None, self._epoch)
                self.writer.rotate(generation)  # the sync above makes the one in rotate cheap
                self.durable, self.durable_offset = self.writer.mark
                self._synced = self.durable
        if failure is not None:
            self._fail(failure)
            raise failure

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._closing:
                return
            self._wake.clear()
            if self.interval and self._appends - self._appends_synced > 1:
                self._gather()
            self._last_sync = self._clock()
            error = None
            with self._lock:
                self._appends_synced = self._appends
                epoch, mark = self._epoch, self.writer.mark
                if mark[0] > self._synced:
                    try:
                        self.writer.sync()
                    except OSError as err:
                        error = err
                self._synced = mark[0]
            self._loop.call_soon_threadsafe(self._settle, mark, error, epoch)  # type: ignore[union-attr]

    def _gather(self) -> None:
        """Concurrent writers: wait for more writes to share this fsync, while they keep coming.

        Waiting stops when a tick passes without a new write (every writer that could join
        is already waiting: more delay would only add latency) or when the interval since the
        previous fsync has passed (under continuous load, one fsync per interval).
        """
        deadline = self._last_sync + self.interval
        seen = self._appends
        while True:
            left = deadline - self._clock()
            if left <= 0:
                return
            self._sleep(min(left, self.interval / GATHER_TICKS))
            if self._appends == seen:
                return
            seen = self._appends

    def _settle(self, mark: tuple[int, int], error: OSError | None, epoch: int) -> None:
        """On the loop: a sync of everything up to `mark` succeeded (or failed)."""
        if error is not None:
            self._fail(error)
            return
        if epoch != self._epoch or mark[0] <= self.durable:
            return  # a report from before a failure (its waiters have failed) or nothing new
        self.durable, self.durable_offset = mark
        waiters = self._waiters
        while waiters and waiters[0][0] <= mark[0]:
            future = waiters.popleft()[1]
            if not future.done():
                future.set_result(None)

    def _fail(self, error: OSError) -> None:
        """Cut the log back to the last durable frame, undo what followed, fail its waiters."""
        log.error("fsync of the write-ahead log failed: %s; the writes since the last good fsync are undone "
                  "and answered as failed", error)
        self.failures += 1
        undo_after = self.durable
        with self._lock:
            self._epoch += 1
            self.writer._try_cut(self.durable_offset)  # if even this fails, the next append retries it first
            # what is left (in the log, and in memory once undone) is durable; positions are never reused
            self.durable = self._synced = self.writer.position
        if self.on_failure is not None:
            self.on_failure(undo_after)
        waiters = self._waiters
        while waiters:
            future = waiters.popleft()[1]
            if not future.done():
                future.set_exception(error)

    def close(self) -> None:
        """Stop the flusher and sync and close the log."""
        if self._thread is not None:
            self._closing = True
            self._wake.set()
            self._thread.join()
            self._thread = None
        with self._lock:
            mark = self.writer.mark
            self.writer.close()
        self._settle(mark, None, self._epoch)
