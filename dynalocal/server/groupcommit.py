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
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque

from ..storage.wal import LogWriter

log = logging.getLogger("dynalocal.durability")

SYNC_MODES = ("always", "batch", "none")
GATHER_TICKS = 4  # batch mode polls for newly arrived writes this many times per interval


class GroupCommit:
    """The log writer plus the fsync thread and the requests waiting on it."""

    def __init__(self, writer: LogWriter, mode: str = "batch", interval: float = 0.002) -> None:
        if mode not in SYNC_MODES:
            raise ValueError(f"sync mode must be one of {SYNC_MODES}")
        self.writer = writer
        self.mode = mode
        self.interval = interval if mode == "batch" else 0.0
        self.durable = 0  # writer position known to be on disk
        self.error: OSError | None = None
        self._synced = 0
        self._last_sync = 0.0
        self._appends = 0  # groups appended (counted on the loop, read by the flusher)
        self._appends_synced = 0
        self._lock = threading.Lock()  # the writer's file descriptor, against rotation while syncing
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
        """Append one group; return the position a waiter must see synced."""
        position = self.writer.append(payload)
        self._appends += 1
        if self.mode == "none":
            self.durable = position
        elif not self._wake.is_set():
            self._wake.set()
        return position

    def waiter(self, position: int) -> asyncio.Future | None:
        """A future resolved once `position` is durable, or None if it already is."""
        if position <= self.durable:
            return None
        if self.error is not None:
            raise self.error
        future = self._loop.create_future()  # type: ignore[union-attr]
        self._waiters.append((position, future))
        return future

    def rotate(self, generation: int) -> None:
        """Continue in a new segment (the old one is synced first)."""
        with self._lock:
            self.writer.rotate(generation)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._closing:
                return
            self._wake.clear()
            if self.interval and self._appends - self._appends_synced > 1:
                self._gather()
            self._last_sync = time.monotonic()
            error = None
            with self._lock:
                self._appends_synced = self._appends
                target = self.writer.position
                if target > self._synced:
                    try:
                        self.writer.sync()
                    except OSError as err:
                        error = err
            self._synced = target
            self._loop.call_soon_threadsafe(self._settle, target, error)  # type: ignore[union-attr]

    def _gather(self) -> None:
        """Concurrent writers: wait for more writes to share this fsync, while they keep coming.

        Waiting stops when a tick passes without a new write (every writer that could join
        is already waiting: more delay would only add latency) or when the interval since the
        previous fsync has passed (under continuous load, one fsync per interval).
        """
        deadline = self._last_sync + self.interval
        seen = self._appends
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, self.interval / GATHER_TICKS))
            if self._appends == seen:
                return
            seen = self._appends

    def _settle(self, target: int, error: OSError | None) -> None:
        waiters = self._waiters
        if error is not None:
            log.error("fsync of the write-ahead log failed: %s; writes are no longer acknowledged", error)
            self.error = error
            while waiters:
                future = waiters.popleft()[1]
                if not future.done():
                    future.set_exception(error)
            return
        self.durable = max(self.durable, target)
        while waiters and waiters[0][0] <= target:
            future = waiters.popleft()[1]
            if not future.done():
                future.set_result(None)

    def close(self) -> None:
        """Stop the flusher and sync and close the log."""
        if self._thread is not None:
            self._closing = True
            self._wake.set()
            self._thread.join()
            self._thread = None
        with self._lock:
            self.writer.close()
        self.durable = self.writer.position
        self._settle(self.durable, None)
