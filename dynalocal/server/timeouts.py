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
    """HttpToolsProtocol with a receive deadline per request."""

    request_timeout = 30.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:
            self._arm()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._awaiting_body():
            self._answer_timeout()
        self.transport.close()

    def _awaiting_body(self) -> bool:
        """Whether a request's headers arrived but its body did not, with no answer begun."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and cycle.more_body and not cycle.response_started

    def _answer_timeout(self) -> None:
        self.transport.write(timeout_response())
        self.cycle.disconnected = True  # the app's receive() now reports a disconnect; its sends are dropped


def deadline_protocol(request_timeout: float) -> type[DeadlineProtocol]:
    """The protocol class to give uvicorn (`http=`) for this timeout."""
    return type("DeadlineProtocol", (DeadlineProtocol,), {"request_timeout": request_timeout})
