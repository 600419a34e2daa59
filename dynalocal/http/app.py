"""The application: DynamoDB's JSON protocol on POST /, health and admin routes beside it.

`engine.dispatch.respond` answers one DynamoDB request; dynalocal's own HTTP layer
(protocol.py) calls it inline for every `POST /`. The app is also an ASGI callable: the
HTTP layer sends every other route through it (health, 404s, and the admin routes, an app
the `admin` factory builds: http does not import admin, dynalocal.app puts the two together),
and it serves the whole protocol, POST / included, when dynalocal is embedded under another
ASGI server. Handlers are synchronous and run on the event loop
thread, one at a time, which makes every request atomic with respect to the others.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from dynalocal.engine.caller import ANONYMOUS, Caller
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import NOT_FOUND_BODY, respond
from dynalocal.engine.ttl import sweep_expired
from dynalocal.http.hosts import is_loopback_bind
from dynalocal.http.messages import JSON_TYPE, asgi_headers

if TYPE_CHECKING:
    from dynalocal.http.asgi import ASGIApp, Receive, Scope, Send

log = logging.getLogger("dynalocal")

MAX_BODY = 16 * 1024 * 1024
# (context, loopback bind?, admin token) -> the ASGI app serving /_dynalocal/ (dynalocal.admin.admin_app)
AdminFactory = Callable[[Context, bool, "str | None"], "ASGIApp"]


class DynamoApp:
    """ASGI entry point."""

    def __init__(self, ctx: Context | None = None, admin: AdminFactory | None = None) -> None:
        self.ctx = ctx or Context()
        self._admin_factory = admin  # builds the app serving /_dynalocal/ (None: those routes are 404s)
        self._admin: ASGIApp | None = None  # that app, built on first use (keeps startup short)
        self._sweeper: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/":
            await self._dynamo(scope, receive, send)
        elif scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/":
            await _send(send, 200, self.health_body(dict(scope["headers"]).get(b"host")), b"text/plain")
        elif scope["type"] == "http" and (self._admin_factory is None or not scope["path"].startswith("/_dynalocal/")):
            await _send(send, 404, NOT_FOUND_BODY, b"text/plain")
        else:
            await self.admin()(scope, receive, send)

    def health_body(self, host: bytes | None) -> bytes:
        """`GET /`: `healthy: <the host:port the client addressed>`, as DynamoDB answers (its Host header)."""
        if not host:
            host = f"{self.ctx.settings.host}:{self.ctx.settings.port}".encode()
        return b"healthy: " + host

    def admin(self) -> ASGIApp:
        """The ASGI app serving dynalocal's own endpoints (built by the `admin` factory on first use)."""
        if self._admin is None:
            factory = self._admin_factory
            assert factory is not None, "no admin factory: __call__ answers /_dynalocal/ with 404s"
            settings = self.ctx.settings
            self._admin = factory(self.ctx, is_loopback_bind(settings.host), settings.admin_token)
        return self._admin

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """ASGI lifespan (when embedded): `startup` and `shutdown` around the server's life."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as err:
                    await send({"type": "lifespan.startup.failed", "message": str(err)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def startup(self) -> None:
        """Before the first request: run the start-up hooks (e.g. --init seed data), start the TTL sweeper.

        A failing hook is logged and raised: the server must not start half-seeded.
        """
        try:
            for hook in self.ctx.startup:
                await hook()
        except Exception as err:
            log.error("dynalocal could not start: %s", err)
            raise
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())

    async def shutdown(self) -> None:
        """Stop the sweeper and background jobs; with a data directory, take the final snapshot and close
        the log."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self.ctx.jobs:  # background bulk loads, exports or imports ran: stop those still running
            from dynalocal.engine import jobs  # loaded only when jobs ran: keeps it off server start-up

            await jobs.stop(self.ctx)
        if self.ctx.journal is not None:
            await self.ctx.journal.close()

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.ctx.settings.ttl_interval)
            try:
                sweep_expired(self.ctx)
            except Exception:  # keep sweeping; a bug here must not stop the server
                log.exception("TTL sweep failed")

    def respond(self, target: str | None, content_type: bytes | None, raw: bytes, ctx: Context | None = None,
                caller: Caller = ANONYMOUS) -> tuple[int, bytes, bytes]:
        """Answer one complete DynamoDB request body: (status, body, content type). Never raises."""
        return respond(ctx or self.ctx, caller, target, content_type, raw)

    async def _dynamo(self, scope: Scope, receive: Receive, send: Send) -> None:
        target, content_type, length = request_headers(scope["headers"])
        if length > MAX_BODY:
            await _send(send, 413, b"", b"text/plain")
            return
        chunks, total = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":  # client gone (or timed out) mid-body: run nothing
                return
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > MAX_BODY:
                await _send(send, 413, b"", b"text/plain")
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        journal = self.ctx.journal  # durability: one log group per request, answered once durable
        if journal is None:
            await _send(send, *self.respond(target, content_type, raw))
            return
        journal.begin()
        status, body, content_type = self.respond(target, content_type, raw)
        status, body = await journal.commit(target, raw, status, body)
        await _send(send, status, body, content_type)


def request_headers(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str | None, bytes | None, int]:
    """(X-Amz-Target, media type, Content-Length or -1) from a request's lower-cased headers."""
    target = content_type = None
    length = -1
    for name, value in headers:
        if name == b"x-amz-target":
            target = value.decode("latin-1")
        elif name == b"content-type":
            content_type = value.split(b";", 1)[0].strip().lower()
        elif name == b"content-length":
            length = int(value) if value.isdigit() else -1
    return target, content_type, length


async def _send(send: Send, status: int, body: bytes, content_type: bytes = JSON_TYPE) -> None:
    await send({"type": "http.response.start", "status": status, "headers": asgi_headers(body, content_type)})
    await send({"type": "http.response.body", "body": body})


def create_app(ctx: Context | None = None, admin: AdminFactory | None = None) -> DynamoApp:
    """The ASGI app; `admin` (e.g. dynalocal.admin.admin_app) serves /_dynalocal/ (see dynalocal.app)."""
    return DynamoApp(ctx, admin)
