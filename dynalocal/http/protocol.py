"""dynalocal's HTTP/1.1 connection: an asyncio.Protocol on httptools' public parser.

One `HttpProtocol` per connection, created by `serve.HttpServer`. It owns everything HTTP:
keep-alive and its timeout, the per-request receive deadline (408), `Expect: 100-continue`,
the 16 MiB body limit while the body streams in (413), pipelining with answers in request
order, back-pressure both ways, half-closed connections and graceful shutdown. This module
parses and runs requests; its base class `connection.Connection` writes the answers in order,
holds them to the end of the loop round, and keeps the timers and the closing.

How a request flows (the plug-in points are marked *):
1. Parser callbacks collect the head; `on_headers_complete` builds an `exchange.Request`,
   applies the Host check (`hosts.HostPolicy`) and the Content-Length limit, and sends
   `100 Continue` when asked. `on_body` collects the body, refusing it past 16 MiB.
2. `on_message_complete` defers the request to the end of the loop round, or queues it behind what
   waits already; a deferred request that may not run yet (the client does not read its answers, an
   admin request is running, or too many answers wait for fsync) is queued when its turn comes;
   reading pauses until the queue drains. The round's requests then run one after another
   (`serve.HttpServer.run_ready`), once every connection's input of the round is read, so the
   engine's code and data stay in the CPU's caches from one request to the next instead of
   alternating with the kernel's network stack; their answers are held (5.) and go out in the next
   pass of the loop, after the poll that gathers the next round, so a loaded server rarely sleeps
   between rounds. docs/performance.md, *Requests run after the round's reads*: GetItem 71 -> 62 µs
   of server CPU per request.
3. `_run`: * every `Hooks.before` plug-in (request decoding, CORS preflight, authentication,
   choice of `request.ctx`) may answer or change the request; then `POST /` is answered
   inline by `app.respond`, synchronously, on the event loop: the same path with or
   without `--data-dir`. With a journal, the request's log group is sealed and its answer is
   written when the group's fsync future resolves (no task per request). Every other route
   (`GET /` health, `/_dynalocal/...` admin and console, 404s) goes to the ASGI app through
   `asgi.call` in a task; later requests wait for it so they take effect in order.
4. `_reply`: * the `Hooks.after_marked` plug-ins (response compression, CORS headers), on the
   answer to a request a before-hook marked, then every `Hooks.after` plug-in may change the
   answer; it is framed in one buffer (content-length and x-amz-crc32 over the final
   body) and written, in order: answers that must wait (fsync, ASGI) hold a slot that later
   answers queue behind.
5. Answers are *held* until the end of the loop round (`serve.HttpServer.release_held`), then written:
   a client with several connections is woken once per round rather than once per answer, and
   the wake-up of a sleeping reader is the dearest part of a write (a cross-core interrupt; on
   this project's benchmark VM ~15 µs of the server's time per answer; GetItem 12.9k -> 17.2k req/s).
   Whatever else a connection writes or closes releases its held answers first.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import httptools

from dynalocal.engine.dispatch import respond
from dynalocal.errors import InternalServerError, SerializationException
from dynalocal.http import asgi
from dynalocal.http.app import MAX_BODY
from dynalocal.http.connection import HIGH_WATER, Connection
from dynalocal.http.exchange import PLANS, Answer, Request, lookup_plan
from dynalocal.http.messages import CONTINUE, JSON_TYPE, error_body, frame

if TYPE_CHECKING:
    from dynalocal.http.serve import HttpServer

log = logging.getLogger("dynalocal.http")

MAX_HEAD = 64 * 1024  # request line and headers (checked per read, so up to one read more); DynamoDB allows ~16 KB
_413 = (413, b"", b"text/plain")
_BAD = error_body(SerializationException())
_INTERNAL = error_body(InternalServerError("Internal server error"))


class HttpProtocol(Connection):
    """One client connection (see the module docstring)."""

    transport: asyncio.Transport

    def __init__(self, server: HttpServer, loop: asyncio.AbstractEventLoop) -> None:  # loop: the server's
        super().__init__(server, loop)
        self.app = server.app
        self.before = server.hooks.before  # the live lists: plug-ins may be added while serving
        self.after = server.hooks.after
        self.after_marked = server.hooks.after_marked
        self.hosts = server.hosts
        self.seen_hosts = server.hosts.seen  # Host values already allowed: one set lookup per request
        # The request being received. The parser hands URL pieces and body chunks straight to these
        # containers' C methods; the callbacks below empty them. Headers go through `_on_header`.
        self._req = None
        self._url: list[bytes] = []
        self._raw: dict[bytes, bytes] = {}  # header names as sent -> value
        self._chunks: list[bytes] = []
        self.on_url = self._url.append
        self.on_header = self._on_header
        self.on_body = self._chunks.append
        self.parser = httptools.HttpRequestParser(self)
        self._in_head = False  # between a request's first byte and the end of its headers
        self._head_bytes = 0  # bytes received for the current head after the chunk it began in
        self._chunked = False  # the body being received has no Content-Length: its size is checked per read
        self._discard = False  # the body is read and dropped (413 sent, or the request is refused)
        self._refusal: Answer | None = None
        self._task: asyncio.Task[None] | None = None  # the running ASGI request
        self._disconnected: asyncio.Future[None] | None = None

    # -- connection events ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # a stream's transport
        self.transport = transport
        transport.set_write_buffer_limits(high=HIGH_WATER)
        self.server.connection_made(self)
        self._since = now = self.loop.time()
        self._watch_until(now + self.request_timeout)
        if self.server.stopping:
            self._close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._disconnected is not None and not self._disconnected.done():
            self._disconnected.set_result(None)
        self._queue.clear()
        self._held.clear()
        self._held_bytes = 0
        self.server.connection_lost(self)

    def data_received(self, data: bytes) -> None:
        if self._done:
            return
        in_head = self._in_head
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # answered as a plain request (no protocol switch); then closed
            self._done = True
        except httptools.HttpParserError:
            self._done = True
            self._req = self._since = None  # the malformed request is not waited for (no 408 after the 400)
            self._push((frame(400, _BAD, JSON_TYPE, self.defaults.block, keep_alive=False), True))
            return
        if self._req is not None:  # a body still arriving: dropped, or its size checked (no Content-Length)
            if self._discard:
                self._chunks.clear()
            elif self._chunked and sum(map(len, self._chunks)) > MAX_BODY:
                self._refuse_body()
        if in_head and self._in_head:  # a head spread over reads: counted here, not per header (hot path)
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD:
                self._done = True
                self._req = None
                self._since = None
                self._push((frame(431, b"", b"text/plain", self.defaults.block, keep_alive=False), True))
                return
        if (self._queue or self._write_paused) and not self._read_paused and not self._closed:
            self._read_paused = True  # back-pressure: no new requests until the answers move
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        """Half-close: keep the connection open for writing until every request sent is answered."""
        if self._closing:
            return False  # we were closing and waiting for this: done
        self._eof = True
        if self._req is not None or self._since is not None:  # a request cut off mid-way is never run
            self._req = None
            self._since = None
        self._check_idle()
        return True

    # -- parser callbacks ------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._idle_since = None
        if self._since is None:
            self._since = now = self.server.clock  # a ceiling of the time: deadlines are never early
            if self._deadline is None:
                self._watch_until(now + self.request_timeout)

    def _on_header(self, name: bytes, value: bytes) -> None:
        """Keep a header; a repeated Accept-Encoding line joins the list (HTTP: repeated lines of a list
        field are one comma-separated list; docs/behaviour/wire.md §2). Other repeats: the last counts."""
        raw = self._raw
        if name in raw and name.lower() == b"accept-encoding":
            value = raw[name] + b", " + value
        raw[name] = value

    def on_headers_complete(self) -> None:
        self._in_head = False
        parser = self.parser
        raw = self._raw
        names = tuple(raw)
        plan = PLANS.get(names) or lookup_plan(names)
        url = self._url
        path = url[0] if len(url) == 1 else b"".join(url)
        url.clear()
        version = parser.get_http_version()
        # The common headers' values, looked up under the names this client uses (see exchange.Request).
        self._req = req = Request(parser.get_method(), path, raw, version,
                                  version != "1.0" and parser.should_keep_alive(), *map(raw.get, plan))
        self._raw = {}  # the request keeps `raw`; `_on_header` fills this one
        self._refusal = None
        self._discard = False
        length = req.content_length
        self._chunked = length is None
        host = req.host
        if host not in self.seen_hosts and not self.hosts.allows(host):
            assert host is not None  # no Host header is always allowed
            self._refusal = Answer(400, error_body(self.hosts.refusal(host)))
            self._discard = True
        elif length is not None and len(length) > 7 and length.isdigit() and int(length) > MAX_BODY:
            self._refuse_body()
        elif req.expect is not None and req.expect.lower() == b"100-continue":
            self._push((CONTINUE, False))

    def on_message_complete(self) -> None:
        self._since = None  # received in full: the receive deadline is met
        req, self._req = self._req, None
        if self._done or req is None:  # after a request that ends the connection, nothing more is answered
            return
        if not req.keep_alive:
            self._done = True
        chunks = self._chunks
        if self._discard:
            chunks.clear()
            if self._refusal is not None:
                self._push(self._reply(req, *self._refusal))
            elif not req.keep_alive:
                self._push((b"", True))
            return
        if chunks:
            req.body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            chunks.clear()
        if self._queue:  # behind what waits already (a request that may not run yet waits in run_deferred)
            self._queue.append(req)
            return
        deferred = self._deferred  # run at the end of the loop round (see the module docstring, 2.)
        if not deferred:
            ready = self.server.ready
            if not ready:
                self.loop.call_soon(self.server.run_ready)
            ready.append(self)
        deferred.append(req)

    def _refuse_body(self) -> None:
        """413 at once, while the body still streams in; the rest of it is read and dropped."""
        self._discard = True
        self._chunks.clear()
        status, body, content_type = _413
        self._push((frame(status, body, content_type, self.defaults.block), False))

    # -- running requests ----------------------------------------------------------------------

    def _run(self, req: Request) -> None:
        if self.before:
            try:
                for hook in self.before:
                    answer = hook(req)
                    if answer is not None:
                        break
            except Exception:  # a plug-in's bug: answer like DynamoDB's 500, keep serving
                log.exception("request plug-in failed")
                answer = Answer(500, _INTERNAL)
            if answer is not None:
                self._emit(*self._reply(req, *answer))
                return
        if req.is_api:
            app = self.app
            ctx = req.ctx or app.ctx
            journal = ctx.journal
            if journal is None:
                status, body, content_type = respond(ctx, req.caller, req.target, req.content_type, req.body)
                if self._slots or self.after or (req.state is not None and self.after_marked) \
                        or not req.keep_alive or self.server.stopping:
                    self._emit(*self._reply(req, status, body, content_type))
                else:  # the common case: keep-alive, nothing waiting before it, no after-hook to run
                    self._write(frame(status, body, content_type, self.defaults.block), False)
                return
            journal.begin()
            status, body, content_type = respond(ctx, req.caller, req.target, req.content_type, req.body)
            status, body, durable = journal.seal(req.target, req.body, status, body)
            if durable is None:
                self._emit(*self._reply(req, status, body, content_type))
                return
            slot = self._reserve()
            durable.add_done_callback(
                lambda future: self._fill(slot, *self._reply(req, *journal.settled(future, status, body),
                                                             content_type)))
            return
        self._busy = True
        slot = self._reserve()
        disconnected = self._disconnected
        if disconnected is None:
            disconnected = self._disconnected = self.loop.create_future()
        self._task = self.loop.create_task(self._asgi(req, slot, disconnected))

    async def _asgi(self, req: Request, slot: list, disconnected: asyncio.Future[None]) -> None:
        try:
            status, headers, body = await asgi.call(self.server.asgi_app, self._scope(req), req.body,
                                                    disconnected)
            answer = asgi.answer(status, headers, body)
        except Exception:
            log.exception("internal error in %s %s", req.method.decode(), req.url.decode("latin-1"))
            answer = Answer(500, _INTERNAL)
        self._busy = False
        self._task = None
        self._fill(slot, *self._reply(req, *answer))

    def _scope(self, req: Request) -> dict:
        transport = self.transport
        return asgi.scope(req, transport.get_extra_info("peername"), transport.get_extra_info("sockname"))

    def _reply(self, req: Request, status: int, body: bytes, content_type: bytes = JSON_TYPE,
               extra: bytes = b"") -> tuple[bytes, bool]:
        """The framed answer to `req`, and whether the connection closes after it."""
        hooks = self.after_marked + self.after if req.state is not None and self.after_marked else self.after
        if hooks:
            answer = Answer(status, body, content_type, extra)
            try:
                for hook in hooks:
                    answer = hook(req, answer)
            except Exception:  # a plug-in's bug: answer like DynamoDB's 500, keep serving
                log.exception("response plug-in failed")
                answer = Answer(500, _INTERNAL)
            status, body, content_type, extra = answer
        keep = req.keep_alive and not self.server.stopping
        return frame(status, body, content_type, self.defaults.block, extra, keep, req.method == b"HEAD"), \
            not req.keep_alive
