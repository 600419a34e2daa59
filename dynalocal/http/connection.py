"""A client connection's life apart from parsing and running requests: answers written in request
order, held until the end of the loop round, back-pressure, the request and keep-alive timers,
and closing.

`protocol.HttpProtocol` adds the parser and runs requests (`_run`); this base class decides when a
request may run and when bytes go out. Answers that must wait (an fsync, an ASGI task) hold a
*slot*; answers after them queue behind it, so a pipelining client gets them in order. Answers
framed in one loop round are *held* and written together at its end (`serve.HttpServer.release_held`;
protocol.py's module docstring says why); whatever else the connection writes, or closing it, writes
the held answers first. Likewise, requests received in one loop round are *deferred* and run together
after every read of the round (`serve.HttpServer.run_ready`): whatever the connection owes after them
(an HTTP error's answer, a request that must wait) waits behind them.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING

from dynalocal.http.exchange import Request
from dynalocal.http.timeouts import timeout_response

if TYPE_CHECKING:
    from dynalocal.http.serve import HttpServer

MAX_PENDING = 256  # answers waiting for fsync on one connection before it stops reading
HIGH_WATER = 256 * 1024  # bytes of unsent answers before the connection stops taking requests
LINGER = 2.0  # seconds a closing connection keeps reading (and dropping) what the client still sends


class Connection(asyncio.Protocol):
    """The ordered, held, timed output of one connection (see the module docstring)."""

    transport: asyncio.Transport
    _req: Request | None  # the request being received (the parser's, in HttpProtocol)
    _discard: bool  # its body is read and dropped

    def __init__(self, server: HttpServer, loop: asyncio.AbstractEventLoop) -> None:  # loop: the server's
        self.server = server
        self.loop = loop
        self.defaults = server.defaults
        self.request_timeout = server.request_timeout
        self.keep_alive_timeout = server.keep_alive_timeout
        # timers: one lazy timer per connection (arming one per request would cost microseconds)
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_at = 0.0  # when `_deadline` fires
        self._since: float | None = None  # when the request being received began (or the connection opened)
        self._idle_since: float | None = None  # when the connection last became idle
        # what is owed to the client, in order
        # complete requests (and ready bytes: an answer, and whether to close after it) not yet run, behind a
        # blocked one
        self._queue: deque[Request | tuple[bytes, bool]] = deque()
        self._slots: deque[list] = deque()  # answers written in order; [None, _] until ready
        self._held: list[bytes] = []  # answers framed this loop round, written at its end (see `write_held`)
        self._held_bytes = 0  # their size: past HIGH_WATER they are written at once
        self._all_held = server.held  # the server's list of connections with held answers
        self._deferred: list[Request] = []  # requests received this loop round, run at its end (`run_deferred`)
        self._busy = False  # an ASGI request is running
        self._write_paused = False
        self._read_paused = False
        self._eof = False  # the client half-closed: answer what it sent, then close
        self._done = False  # no further requests are read (Connection: close, HTTP/1.0, an error)
        self._closing = False
        self._closed = False

    def _run(self, req: Request) -> None:
        """Run a request whose turn has come (HttpProtocol)."""
        raise NotImplementedError

    # -- back-pressure -----------------------------------------------------------------------------

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._drain()

    # -- writing answers in order ----------------------------------------------------------------

    def _blocked(self) -> bool:
        """Whether the next request must wait: an ASGI request is running, the client does not read its
        answers, or too many answers wait for fsync."""
        return self._busy or self._write_paused or len(self._slots) >= MAX_PENDING

    def _push(self, item: Request | tuple[bytes, bool]) -> None:
        """Run a request or write ready bytes now, or queue it behind what is already waiting."""
        if self._queue or self._deferred or self._blocked():
            self._queue.append(item)
        elif type(item) is Request:
            self._run(item)
        else:
            self._emit(*item)
        self._check_idle()

    def _emit(self, data: bytes, close: bool) -> None:
        if self._slots:
            self._slots.append([data, close])
        else:
            self._write(data, close)

    def _reserve(self) -> list:
        slot = [None, False]
        self._slots.append(slot)
        return slot

    def _fill(self, slot: list, data: bytes, close: bool) -> None:
        slot[0], slot[1] = data, close
        slots = self._slots
        while slots and slots[0][0] is not None:
            data, close = slots.popleft()
            self._write(data, close)
        self._drain()

    def _write(self, data: bytes, close: bool) -> None:
        """Hold `data` to be written at the end of the loop round (see the module docstring), or write it
        and close now."""
        if self._closed:
            return
        if close:
            self.write_held()
            if data:
                self.transport.write(data)
            self._close(linger=True)
        elif data:
            held = self._held
            if not held:
                all_held = self._all_held
                if not all_held:
                    self.loop.call_soon(self.server.release_held)
                all_held.append(self)
            held.append(data)
            size = self._held_bytes + len(data)
            if size > HIGH_WATER:  # written now, so that back-pressure (pause_writing) stops further requests
                self.write_held()
            else:
                self._held_bytes = size

    def write_held(self) -> None:
        """Write the held answers (at the end of the loop round, or before anything else this connection
        writes or closes)."""
        held = self._held
        if held:
            data = held[0] if len(held) == 1 else b"".join(held)
            held.clear()
            self._held_bytes = 0
            if not self._closed:
                self.transport.write(data)

    def _drain(self) -> None:
        """Run queued requests while nothing blocks them; read again once the queue is empty."""
        queue = self._queue
        while queue and not (self._deferred or self._closed or self._blocked()):
            item = queue.popleft()
            if type(item) is Request:
                self._run(item)
            else:
                self._emit(*item)
        if self._read_paused and not queue and not self._write_paused and not self._closed:
            self._read_paused = False
            self.transport.resume_reading()
        self._check_idle()

    def run_deferred(self) -> None:
        """Run this round's requests in order (`serve.HttpServer.run_ready`); one that may not run yet
        (an ASGI request before it still running, back-pressure) goes first in the queue, the rest behind it.

        A request received in full runs even if the client has gone meanwhile, as it did when requests
        ran as they were read (its answer is dropped); other routes are not run for a closed connection."""
        deferred = self._deferred  # kept until all have run: meanwhile nothing queued after them may run
        try:
            if len(deferred) == 1 and not self._closed and not self._blocked():
                self._run(deferred[0])  # the common case (one request per connection and round), without the loop
            else:
                for i, req in enumerate(deferred):
                    if self._blocked():
                        self._queue.extendleft(reversed(deferred[i:]))
                        break
                    if not self._closed or req.is_api:
                        self._run(req)
        finally:
            deferred.clear()
        if self._queue or self._read_paused:
            self._drain()
        else:  # _drain has nothing to run or resume
            self._check_idle()

    def _check_idle(self) -> None:
        """Once everything received is answered: close if the client or the server is done, else keep alive."""
        if self._queue or self._deferred or self._slots or self._busy or self._since is not None or self._closed:
            return
        if self._done or self._eof or self.server.stopping:
            self._close(linger=not self._eof)
            return
        # The keep-alive period starts: the lazy timer (see `_watch`) is re-armed only when it would fire late.
        self._idle_since = now = self.server.clock
        due = now + self.keep_alive_timeout
        if self._deadline is None or self._deadline_at > due:
            if self._deadline is not None:  # rare: only while a request deadline is armed further out
                self._deadline.cancel()
            self._watch_until(due)

    # -- timers and closing ----------------------------------------------------------------------

    def _watch_until(self, when: float) -> None:
        self._deadline = self.loop.call_at(when, self._watch)
        self._deadline_at = when

    def _watch(self) -> None:
        self._deadline = None
        if self._closed or self._closing:
            return
        if self._since is not None:
            due = self._since + self.request_timeout
        elif self._idle_since is not None:
            due = self._idle_since + self.keep_alive_timeout
        else:  # requests are being answered: no deadline; the next idle period re-arms the timer
            return
        if self.loop.time() < due:
            self._watch_until(due)
            return
        if self._since is not None and self._req is not None and not self._discard:
            self._since = self._req = None  # headers arrived, the body did not: 408, in order, then close
            self._done = True
            self._push((timeout_response(self.defaults.block), True))
        else:
            self._close()

    def shutdown(self) -> None:
        """The server is stopping: finish what was received, then close (answers say `connection: close`)."""
        if not (self._queue or self._deferred or self._slots or self._busy or self._since is not None):
            self._close()  # idle: nothing in flight
        # else _check_idle closes once the last answer is out

    def _close(self, linger: bool = False) -> None:
        """Close after the buffered answers are sent.

        With `linger`, the client may still be sending (pipelined requests we will not answer,
        the rest of a refused body): closing a socket with unread input makes the kernel reset
        the connection, which can destroy answers not yet delivered. So send FIN after the
        answers and keep reading (dropping everything) until the client closes, for LINGER s.
        """
        if self._closing or self._closed:
            return
        self.write_held()
        self._closing = self._done = True
        transport = self.transport
        if linger and transport.can_write_eof():
            transport.write_eof()
            if self._read_paused:
                self._read_paused = False
                transport.resume_reading()
            self.loop.call_later(LINGER, self._close_now)
        else:
            self._close_now()

    def _close_now(self) -> None:
        if self._closed or self.transport.is_closing():
            return
        self.transport.close()
        self.loop.call_later(self.request_timeout, self.abort)  # a client that never takes its answers

    def abort(self) -> None:
        if not self._closed:
            self.transport.abort()
