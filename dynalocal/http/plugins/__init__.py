"""The DynamoDB endpoint's wire plug-ins for the HTTP layer (exchange.Hooks): CORS, signatures and
the caller's region/account/isolation scope, request decompression; response compression and
CORS headers. `install(server)` adds them per the server's settings.

Order of `before` (one request; each step may answer at once):
1. OPTIONS preflight from a browser (server.cors).
2. Authentication (server.auth) over the body as sent (signatures cover the compressed bytes);
   the caller (engine.caller.Caller: region, account, table scope) is set on the request (`req.caller`).
   As in DynamoDB, a body that is not JSON or an unknown X-Amz-Target is reported before a
   missing or bad signature (docs/behaviour/wire.md §1): such a request is passed on to be refused there.
3. Decompression of a Content-Encoding body (server.compression): undecodable -> HTTP 500
   InternalServerError, decoded over 16 MiB -> 413.
Only `POST /` and `OPTIONS /` are the DynamoDB endpoint: health, admin and console routes are
neither authenticated nor given CORS headers (the admin guard keeps other origins out).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import orjson

from dynalocal.errors import DynamoError, InternalServerError, error_body
from dynalocal.http.exchange import Answer, Request
from dynalocal.http.plugins import compression
from dynalocal.http.plugins.auth import Authenticator
from dynalocal.http.plugins.cors import CorsPolicy

if TYPE_CHECKING:
    from dynalocal.engine.context import Context
    from dynalocal.http.serve import HttpServer

_UNDECODABLE = Answer(500, error_body(InternalServerError("Internal server error")))
_TOO_LARGE = Answer(413, b"", b"text/plain")


def _framed(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(b"%s: %s\r\n" % pair for pair in pairs)


class WirePlugin:
    """The before/after hooks of one server."""

    def __init__(self, ctx: Context) -> None:
        settings = ctx.settings
        self.ctx = ctx
        self.cors = CorsPolicy(settings.cors_origins)
        self.auth = Authenticator(settings.auth, settings.credentials, settings.isolation,
                                  clock=lambda: ctx.wall_clock())

    def before(self, req: Request) -> Answer | None:
        url = req.url
        if url != b"/" and url[:2] != b"/?":
            return None
        method = req.method
        origin = req.origin
        accept = req.accept_encoding
        if origin is not None or (accept is not None and accept != b"identity"):
            req.state = self  # mark: `after` has work on the answer (else it is not run at all)
        if method == b"OPTIONS":
            if origin is None:
                return None
            status, headers = self.cors.preflight(origin, req.header(b"access-control-request-headers"))
            return Answer(status, b"", b"text/plain", _framed(headers))
        if method != b"POST":
            return None
        authorization = req.authorization
        principal = self.auth.quick(authorization) if authorization is not None else None
        encoding = req.content_encoding
        if principal is not None:  # relaxed or none mode, a well-formed header: the common case
            req.caller = principal
        else:
            refusal = self._authenticate(req, url, encoding)
            if refusal is not None:
                return refusal
        if encoding is not None:
            try:
                req.body = compression.decode(req.body, encoding)
            except compression.UndecodableBody:
                return _UNDECODABLE
            except compression.DecodedTooLarge:
                return _TOO_LARGE
        return None

    def _authenticate(self, req: Request, url: bytes, encoding: bytes | None) -> Answer | None:
        text: dict[str, str] | _LazyHeaders = \
            {name.decode("latin-1"): value.decode("latin-1") for name, value in req.headers} \
            if self.auth.mode == "verify" else _LazyHeaders(req)
        path, _, query = url.decode("latin-1").partition("?")
        try:
            principal = self.auth.authenticate("POST", path, query, text, req.body)
        except DynamoError as err:
            if encoding is None and _refused_before_auth(req):
                return None  # dispatch answers SerializationException / UnknownOperationException
            return Answer(err.status, error_body(err))
        req.caller = principal
        return None

    def after(self, req: Request, answer: Answer) -> Answer:
        """Response compression and CORS headers (an `after_marked` hook: `before` marks the requests
        with an Origin or an accepted coding)."""
        status, body, content_type, extra = answer
        accept = req.accept_encoding
        if accept is not None and len(body) >= compression.MIN_COMPRESSED:
            coding = compression.accepted(accept)
            if coding is not None:
                body = compression.encode(body, coding)
                extra += b"content-encoding: " + coding + b"\r\n"
        origin = req.origin
        if origin is not None and req.method != b"OPTIONS":
            extra += _framed(self.cors.response_headers(origin))
        return Answer(status, body, content_type, extra)


class _LazyHeaders:
    """The few headers relaxed/none authentication reads, looked up on demand (str -> str)."""

    __slots__ = ("req",)

    def __init__(self, req: Request) -> None:
        self.req = req

    @overload
    def get(self, name: str, /) -> str | None: ...

    @overload
    def get(self, name: str, default: str, /) -> str: ...

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self.req.header(name.encode("latin-1"))
        return default if value is None else value.decode("latin-1")


def _refused_before_auth(req: Request) -> bool:
    """Whether DynamoDB would refuse this request before looking at its signature (a body that
    is not JSON, or no operation of either API named); dispatch then answers it, running nothing."""
    from dynalocal.engine.operations import KNOWN_OPERATIONS, STREAM_HANDLERS  # loads every handler: once, at install

    if req.body:
        try:
            orjson.loads(req.body)
        except orjson.JSONDecodeError:
            return True
    operation = (req.target or "").rpartition(".")[2]
    return operation not in KNOWN_OPERATIONS and operation not in STREAM_HANDLERS


def install(server: HttpServer) -> WirePlugin:
    """Add the wire plug-ins to an HttpServer (per its app's settings); return them."""
    plugin = WirePlugin(server.app.ctx)
    server.hooks.before.append(plugin.before)
    server.hooks.after_marked.append(plugin.after)
    return plugin
