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
  requires it (`Authorization: Bearer <token>` or `X-Dynalocal-Admin-Token: <token>`). On a
  non-loopback bind without a token, guarded routes are off: they could show or wipe data to
  anyone on the network.
"""
from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from dynalocal.errors import access_denied_body

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

PUBLIC_READS = frozenset({"/_dynalocal/health", "/_dynalocal/metrics"})
READ_METHODS = frozenset({"GET", "HEAD"})
# Content types a browser may send cross-site without a preflight (the CORS "simple" ones).
SIMPLE_TYPES = frozenset({b"", b"application/x-www-form-urlencoded", b"multipart/form-data", b"text/plain"})
SAME_SITE = frozenset({b"same-origin", b"none"})


def refusal(method: str, path: str, headers: list[tuple[bytes, bytes]], loopback: bool,
            token: str | None) -> str | None:
    """Why this admin request is refused, or None if it may go ahead."""
    mutating = method not in READ_METHODS
    if not mutating and path in PUBLIC_READS:
        return None
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        found.setdefault(name, value)
    if _cross_origin(found):
        return "cross-origin requests to dynalocal's admin endpoints are refused"
    if token is not None:
        presented = _presented_token(found)
        if presented is None or not hmac.compare_digest(presented.encode(), token.encode()):
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


def _presented_token(headers: dict[bytes, bytes]) -> str | None:
    value = headers.get(b"x-dynalocal-admin-token")
    if value is not None:
        return value.decode("latin-1")
    auth = headers.get(b"authorization", b"")
    scheme, _, credentials = auth.partition(b" ")
    return credentials.strip().decode("latin-1") if scheme.lower() == b"bearer" else None


class AdminGuard:
    """ASGI wrapper applying `refusal` to every request before the admin app sees it."""

    def __init__(self, app: ASGIApp, loopback: bool, token: str | None) -> None:
        self.app = app
        self.loopback = loopback  # the server binds a loopback address only (http.hosts.is_loopback_bind)
        self.token = token or None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            reason = refusal(scope["method"], scope["path"], scope["headers"], self.loopback, self.token)
            if reason is not None:
                body = access_denied_body(reason)
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
