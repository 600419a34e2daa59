"""The guard in front of dynalocal's own endpoints (/_dynalocal/...): who may change or see what.

Any web page can make a browser send a "simple" cross-site POST (form content types, no custom
headers, no preflight), and on a network bind anyone can reach the server. So, safe by default:

* Health and metrics (no key values) are open to all.
* Every other route refuses a cross-origin request (an `Origin` that is not the server's own,
  or a `Sec-Fetch-Site` other than same-origin/none).
* Mutating routes (any method but GET/HEAD) also require a request no browser sends without a
  CORS preflight: `Content-Type: application/json` (any non-form type) or an
  `X-Dynalocal-Admin` / `Authorization` header.
* When an admin token is set (`--admin-token`, env DYNALOCAL_ADMIN_TOKEN), every guarded route
  requires it (`Authorization: Bearer <token>` or `X-Dynalocal-Admin-Token: <token>`, or the
  console's log-in cookie, admin.session). On a non-loopback bind without a token, guarded routes
  are off: they could show or wipe data to anyone on the network.
* The log-in and log-out routes need no token (the log-in route checks it) but refuse cross-origin
  requests; the console page, asked for without a token, redirects to the log-in form.
* Under `--auth verify`, every guarded route requires the admin token or a valid SigV4 signature
  of a known credential (the path, query and body signed; X-Amz-Target is not needed), on any
  bind. Under `--isolation region|account` a signature opens only the routes that serve the
  signer's own tables (`is_scoped`: the table list, report, partitions, heat, and the console's
  read and write APIs; admin.scoping); the others (reset: it drops every account's tables; the
  console's page) need the token.
"""
from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from dynalocal.admin.session import CONSOLE_PATH, LOGIN_PATH, LOGOUT_PATH, presented_session, session_value
from dynalocal.errors import DynamoError, access_denied_body

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from dynalocal.engine.caller import Caller
    from dynalocal.http.plugins.auth import Authenticator

PUBLIC_READS = frozenset({"/_dynalocal/health", "/_dynalocal/metrics"})
READ_METHODS = frozenset({"GET", "HEAD"})
# Content types a browser may send cross-site without a preflight (the CORS "simple" ones).
SIMPLE_TYPES = frozenset({b"", b"application/x-www-form-urlencoded", b"multipart/form-data", b"text/plain"})
SAME_SITE = frozenset({b"same-origin", b"none"})
SIGNER = "dynalocal.signer"  # ASGI scope key: the Caller of a verified SigV4-signed admin request
# routes that serve a signer only its own tables (admin.scoping), and those per table
SCOPED = frozenset({"/_dynalocal/read", "/_dynalocal/write", "/_dynalocal/tables", "/_dynalocal/report"})
SCOPED_TABLE_ROUTES = ("/partitions", "/heat")  # /_dynalocal/tables/{table}/...
LOG_IN_OUT = frozenset({LOGIN_PATH, LOGOUT_PATH})  # open to same-origin requests; log-in checks the token
CROSS_ORIGIN = "cross-origin requests to dynalocal's admin endpoints are refused"


def refusal(method: str, path: str, headers: list[tuple[bytes, bytes]], loopback: bool,
            token: str | None, session: str | None = None) -> str | None:
    """Why this admin request is refused, or None if it may go ahead (`session`: the log-in
    cookie's value for `token`, admin.session.session_value, derived once by the caller)."""
    mutating = method not in READ_METHODS
    if not mutating and path in PUBLIC_READS:
        return None
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        found.setdefault(name, value)
    if _cross_origin(found):
        return CROSS_ORIGIN
    if path in LOG_IN_OUT:
        return None
    if token is not None:
        if not _has_token(found, token, session):
            return "this admin endpoint requires the admin token (Authorization: Bearer <token>)"
    elif not loopback:
        return ("admin endpoints other than health and metrics are off on a non-loopback bind; "
                "start dynalocal with --admin-token TOKEN (or DYNALOCAL_ADMIN_TOKEN) and present it")
    if mutating and not _preflighted(found):
        return ("admin requests that change state need Content-Type: application/json or an "
                "X-Dynalocal-Admin header (a request a web page cannot send cross-site)")
    return None


def _cross_origin(headers: dict[bytes, bytes]) -> bool:
    site = headers.get(b"sec-fetch-site")
    if site is not None and site.lower() not in SAME_SITE:
        return True
    origin = headers.get(b"origin")
    if origin is None:
        return False  # not sent by a browser page on another site (browsers send it cross-origin)
    host = headers.get(b"host", b"")
    return origin.lower() not in (b"http://" + host.lower(), b"https://" + host.lower())


def _preflighted(headers: dict[bytes, bytes]) -> bool:
    if b"x-dynalocal-admin" in headers or b"authorization" in headers or b"x-dynalocal-admin-token" in headers:
        return True
    media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    return media not in SIMPLE_TYPES


def _has_token(headers: dict[bytes, bytes], token: str, session: str | None) -> bool:
    """The request presents the admin token, or the console's log-in cookie for it."""
    presented = _presented_token(headers)
    if presented is not None:
        return hmac.compare_digest(presented.encode(), token.encode())
    cookie = presented_session(headers.get(b"cookie"))
    return cookie is not None and session is not None and hmac.compare_digest(cookie.encode(), session.encode())


def _presented_token(headers: dict[bytes, bytes]) -> str | None:
    value = headers.get(b"x-dynalocal-admin-token")
    if value is not None:
        return value.decode("latin-1")
    auth = headers.get(b"authorization", b"")
    scheme, _, credentials = auth.partition(b" ")
    return credentials.strip().decode("latin-1") if scheme.lower() == b"bearer" else None


def verified_refusal(auth: Authenticator, scope: Scope, body: bytes, token: str | None,
                     session: str | None = None) -> tuple[str | None, Caller | None]:
    """`--auth verify`: (why this guarded admin request is refused or None, the signer's Caller if
    it was let in by its signature rather than the token or the log-in cookie)."""
    found: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        found.setdefault(name, value)
    if _cross_origin(found):
        return CROSS_ORIGIN, None
    if token is not None and _has_token(found, token, session):
        return None, None
    if not found.get(b"authorization", b"").startswith(b"AWS4-"):
        return ("under --auth verify this admin endpoint requires a SigV4 signature of a known credential "
                "or the admin token (Authorization: Bearer <token>)"), None
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in found.items()}
    try:
        caller = auth.authenticate(scope["method"], scope["path"], scope["query_string"].decode("latin-1"),
                                   headers, body, target=False)
    except DynamoError as err:
        return f"the request's signature was refused: {err.code}: {err.message}", None
    if caller.scope and not is_scoped(scope["path"]):
        return (f"under --isolation {auth.isolation} a signature opens only {', '.join(sorted(SCOPED))} "
                f"and /_dynalocal/tables/{{table}}/{{partitions,heat}} (the signer's own tables); "
                "this admin endpoint needs the admin token"), None
    return None, caller


def is_scoped(path: str) -> bool:
    """The route at `path` serves a signer its own tables only, so a scoped signature may use it."""
    return path in SCOPED or (path.startswith("/_dynalocal/tables/") and path.endswith(SCOPED_TABLE_ROUTES))


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


class AdminGuard:
    """ASGI wrapper applying `refusal` (or, under `--auth verify`, `verified_refusal`) to every
    request before the admin app sees it."""

    def __init__(self, app: ASGIApp, loopback: bool, token: str | None, auth: Authenticator | None = None) -> None:
        self.app = app
        self.loopback = loopback  # the server binds a loopback address only (http.hosts.is_loopback_bind)
        self.token = token or None
        self.auth = auth  # set under --auth verify only
        self.session = session_value(self.token) if self.token else None  # the log-in cookie's value

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method, path = scope["method"], scope["path"]
            if self.auth is None or (method in READ_METHODS and path in PUBLIC_READS) or path in LOG_IN_OUT:
                reason = refusal(method, path, scope["headers"], self.loopback, self.token, self.session)
            else:
                body = await _read_body(receive)
                reason, signer = verified_refusal(self.auth, scope, body, self.token, self.session)
                if reason is None and method not in READ_METHODS and not _preflighted(dict(scope["headers"])):
                    reason = "admin requests that change state need Content-Type: application/json"
                scope[SIGNER] = signer
                receive = _replay(body)
            if reason is not None and reason != CROSS_ORIGIN and self.token and path == CONSOLE_PATH \
                    and method in READ_METHODS:  # the console page without the token: the log-in form
                await send({"type": "http.response.start", "status": 303,
                            "headers": [(b"location", LOGIN_PATH.encode()), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            if reason is not None:
                body = access_denied_body(reason)
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _replay(body: bytes) -> Receive:
    """A `receive` giving the app the body the guard has already read."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return receive
