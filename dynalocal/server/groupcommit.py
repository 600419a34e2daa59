"""Group commit: requests append to the log at once and await one shared fsync.

Appends happen on the event loop (a plain write to the OS, so a killed process loses
nothing appended). A flusher thread fsyncs: in `batch` mode it starts at most one fsync per
interval, so under load one fsync covers every write of that window while a lone write is
synced at once; in `always` mode it syncs whenever there is anything to sync (writes that
arrive during an fsync share the next one); in `none` mode nothing is synced and nobody
waits (a killed process still loses nothing, a crashed machine may). Waiters are futures
resolved on the loop once the synced position passes theirs.
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
        if self.mode == "none":
            self.durable = position
        else:
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
            pause = self._last_sync + self.interval - time.monotonic()
            if pause > 0:  # batch: at most one fsync per interval; everything written meanwhile shares it
                time.sleep(pause)
            self._last_sync = time.monotonic()
            error = None
            with self._lock:
                target = self.writer.position
                if target > self._synced:
                    try:
                        self.writer.sync()
                    except OSError as err:
                        error = err
            self._synced = target
            self._loop.call_soon_threadsafe(self._settle, target, error)  # type: ignore[union-attr]

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
