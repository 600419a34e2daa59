"""A request deadline for uvicorn's httptools protocol: slow or half-open clients are cut off.

uvicorn closes idle keep-alive connections (`timeout_keep_alive`) but has no limit on how
long a client may take to send a request: a connection that never sends anything, stalls
in its headers, or stalls in its body would be held forever. This subclass gives every
request `request_timeout` seconds from its first byte (or from connecting) until its body
is complete. A request whose headers arrived is answered 408 with a DynamoDB-shaped body;
otherwise the connection is just closed. Processing time after the body is not limited.
"""
from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..errors import DynamoError
from . import codec


class RequestTimeoutException(DynamoError):
    """A request that was not received in time (HTTP 408)."""

    status = 408


def timeout_response() -> bytes:
    body = codec.error_body(RequestTimeoutException("The request was not received within the request timeout"))
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/x-amz-json-1.0\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class DeadlineProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a receive deadline per request.

    One lazy timer per connection: a request only records when it started (`_since`), and
    the timer, when it fires early, re-arms itself for what is left. Arming and cancelling a
    timer per request would cost several microseconds each. The same timer closes a
    connection that stays idle after an answer given outside ASGI (`_idle`); answers given
    through ASGI keep uvicorn's own keep-alive timer.
    """

    request_timeout = 30.0
    _deadline: asyncio.TimerHandle | None = None
    _since: float | None = None  # when the request being received began (or the connection opened)
    _idle_since: float | None = None  # when the last inline answer was written

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._since = self.loop.time()
        self._watch_until(self._since + self.request_timeout)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begin()

    def _begin(self) -> None:
        """A request's first byte: its receive deadline starts, the idle period ends."""
        self._idle_since = None
        if self._since is None:
            self._since = now = self.loop.time()
            if self._deadline is None:
                self._watch_until(now + self.request_timeout)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._since = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def _idle(self) -> None:
        """Start the keep-alive period after an answer written without uvicorn's bookkeeping."""
        self._idle_since = now = self.loop.time()
        due = now + self.timeout_keep_alive
        if self._deadline is None:
            self._watch_until(due)
        elif self._deadline.when() > due:  # rare: only while a request deadline is armed further out
            self._deadline.cancel()
            self._watch_until(due)

    def _watch_until(self, when: float) -> None:
        self._deadline = self.loop.call_at(when, self._watch)

    def _watch(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._since is not None:
            due = self._since + self.request_timeout
        elif self._idle_since is not None:
            due = self._idle_since + self.timeout_keep_alive
        else:  # a request is being answered (through ASGI): no deadline
            return
        if self.loop.time() < due:
            self._watch_until(due)
            return
        if self._since is not None and self._awaiting_body():
            self._answer_timeout()
        self.transport.close()

    def _awaiting_body(self) -> bool:
        """Whether a request's headers arrived but its body did not, with no answer begun."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and cycle.more_body and not cycle.response_started

    def _answer_timeout(self) -> None:
        self.transport.write(timeout_response())
        self.cycle.disconnected = True  # the app's receive() now reports a disconnect; its sends are dropped
