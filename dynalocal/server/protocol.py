"""uvicorn's httptools protocol with DynamoDB's endpoint served inline.

Every `POST /` request is answered straight from the parser callbacks: the body is collected
in `on_body`, and `on_message_complete` runs the (synchronous) handler and writes status
line, headers and body in one `transport.write`. That skips what ASGI costs per request (a
task, a scope, receive/send messages, header re-validation, two writes), about half of a
GetItem's server time. The semantics are the ASGI path's (`DynamoApp.respond`): the same
body limit, content-type rule, headers, and a body that never completes is never run.

Everything else goes through ASGI as before: other paths and methods, an upgrade request,
a request that arrives while an ASGI response on the same connection is still pending
(pipelining keeps its order), and every request when a write-ahead log is on (its answer
waits for fsync, so it needs a task).
"""
from __future__ import annotations

from http import HTTPStatus

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from . import codec
from .app import MAX_BODY, DynamoApp, request_headers
from .timeouts import DeadlineProtocol, timeout_response

_STATUS = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_CLOSE = b"connection: close\r\n"


class _DefaultHeaders:
    """uvicorn's per-server default headers (date, server) as header lines, rebuilt when they change."""

    source: object = None
    block = b""

    def get(self, headers: list[tuple[bytes, bytes]]) -> bytes:
        if headers is not self.source:  # uvicorn swaps in a new list each second (the date)
            self.block = b"".join(b"%s: %s\r\n" % pair for pair in headers)
            self.source = headers
        return self.block


class DynamoProtocol(DeadlineProtocol):
    """DeadlineProtocol that answers DynamoDB requests without going through ASGI."""

    dynamo: DynamoApp  # set by `dynamo_protocol`
    defaults = _DefaultHeaders()

    _inline = False  # the current request is served inline
    _refused = False  # ... and was already answered 413; its body is skipped
    _read_paused = False  # reading paused because the client does not read its answers

    def on_message_begin(self) -> None:
        # uvicorn's own on_message_begin also builds the ASGI scope; that waits for on_headers_complete
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._begin()

    def on_headers_complete(self) -> None:
        cycle = self.cycle
        parser = self.parser
        if (self.url != b"/" or parser.get_method() != b"POST" or parser.should_upgrade()
                or self.dynamo.ctx.journal is not None or not (cycle is None or cycle.response_complete)):
            self._inline = False
            url, headers, expect = self.url, self.headers, self.expect_100_continue
            HttpToolsProtocol.on_message_begin(self)  # the ASGI scope, for the requests that need one
            self.url, self.expect_100_continue = url, expect
            self.headers = self.scope["headers"] = headers
            super().on_headers_complete()
            return
        self._inline = True
        self._refused = False
        self._chunks: list[bytes] = []
        self._size = 0
        self._keep_alive = parser.get_http_version() != "1.0" and parser.should_keep_alive()
        self._target, self._content_type, length = request_headers(self.headers)
        if length > MAX_BODY:
            self._refuse()
        elif self.expect_100_continue:
            self.transport.write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        if not self._inline:
            super().on_body(body)
        elif not self._refused:
            self._chunks.append(body)
            self._size += len(body)
            if self._size > MAX_BODY:
                self._refuse()

    def on_message_complete(self) -> None:
        if not self._inline:
            super().on_message_complete()
            return
        self._since = None  # received in full: the request deadline is met
        self._inline = False
        if self._refused:
            return
        chunks = self._chunks
        raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._chunks = []
        self._answer(*self.dynamo.respond(self._target, self._content_type, raw))

    def _refuse(self) -> None:
        """Answer 413 at once; the rest of the body is read and dropped."""
        self._refused = True
        self._chunks = []
        self._answer(413, b"", b"text/plain")

    def _answer(self, status: int, body: bytes, content_type: bytes) -> None:
        keep_alive = self._keep_alive
        self.transport.write(b"".join((
            _STATUS[status], self.defaults.get(self.server_state.default_headers),
            codec.header_block(body, content_type), b"\r\n" if keep_alive else _CLOSE + b"\r\n", body)))
        self.server_state.total_requests += 1  # uvicorn's bookkeeping (on_response_complete)
        if not keep_alive:
            self.transport.close()
            return
        self._idle()
        if self.flow.write_paused and not self._read_paused:  # back-pressure: stop reading requests
            self._read_paused = True
            self.flow.pause_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._read_paused:
            self._read_paused = False
            self.flow.resume_reading()

    def _awaiting_body(self) -> bool:
        return (self._inline and not self._refused) or super()._awaiting_body()

    def _answer_timeout(self) -> None:
        if self._inline:
            self._inline = False
            self.transport.write(timeout_response())
        else:
            super()._answer_timeout()


def dynamo_protocol(app: DynamoApp, request_timeout: float) -> type[DynamoProtocol]:
    """The protocol class to give uvicorn (`http=`) for this app and request timeout."""
    return type("DynamoProtocol", (DynamoProtocol,), {"dynamo": app, "request_timeout": request_timeout})
