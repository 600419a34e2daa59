"""A small ASGI adapter: runs any ASGI app on one complete request and collects its answer.

The HTTP layer answers DynamoDB's `POST /` itself; every other route (health, admin and
console pages under /_dynalocal/, 404s) is rare and not on the hot path, so it is served by
the ASGI app (Starlette for the admin routes) through this adapter. The body has already
been received (under the same 16 MiB limit), and the answer is buffered before it is framed,
so the app sees a plain HTTP/1.1 exchange with no streaming in either direction.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

from dynalocal.http.exchange import Answer, Request

ASGI = {"version": "3.0", "spec_version": "2.3"}

# The ASGI interface's types (as Starlette spells them, so its apps fit).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def scope(req: Request, client: Any, server: Any) -> dict:
    """The ASGI HTTP scope of a request."""
    path, _, query = req.url.partition(b"?")
    return {
        "type": "http", "asgi": ASGI, "http_version": req.version, "method": req.method.decode("ascii"),
        "scheme": "http", "path": unquote(path.decode("latin-1")), "raw_path": path, "query_string": query,
        "root_path": "", "headers": req.headers,
        "client": tuple(client[:2]) if client else None, "server": tuple(server[:2]) if server else None,
    }


async def call(app: ASGIApp, scope: Scope, body: bytes, disconnected: asyncio.Future[None]) -> tuple[int, list, bytes]:
    """Run `app` on one request; return (status, headers, body) of its answer."""
    received = False
    start: Message | None = None
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.shield(disconnected)  # the app waits for the client to go away (e.g. streaming)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    if start is None:
        raise RuntimeError("the ASGI app returned without starting a response")
    return start["status"], list(start.get("headers", ())), b"".join(chunks)


def answer(status: int, headers: list, body: bytes) -> Answer:
    """An ASGI answer as an `Answer`: content-type apart, content-length recomputed, other headers kept."""
    content_type = b"text/plain"
    lines = []
    for name, value in headers:
        name = bytes(name).lower()
        if name == b"content-type":
            content_type = bytes(value)
        elif name not in (b"content-length", b"connection", b"transfer-encoding", b"date", b"server"):
            lines.append(b"%s: %s\r\n" % (name, bytes(value)))
    return Answer(status, body, content_type, b"".join(lines))
