"""CORS for the DynamoDB endpoint: browsers calling it from a page (the JS SDK) need it.

By default only pages served from this machine (`http://localhost:*`, `http://127.0.0.1:*`,
`http://[::1]:*`) may call, so an arbitrary website cannot drive a developer's local server;
`--cors-origins LIST` (DynamoDB Local's `-cors`) widens it, `*` allows any origin.
A pattern is an exact origin, or one ending in `:*` (any port, or none), or `*`.

`preflight` answers an OPTIONS request; `response_headers` are added to every answer to a
request whose Origin is allowed. A request from an origin not allowed is still served (CORS is
enforced by the browser), it just carries no Access-Control-* headers, so the page cannot read it.
"""
from __future__ import annotations

from dynalocal.engine.context import LOCAL_ORIGINS

ALLOW_METHODS = b"GET, POST, OPTIONS"
# What the JS SDK sends (it also signs x-amz-user-agent and amz-sdk-* headers).
ALLOW_HEADERS = (b"authorization, content-type, content-encoding, x-amz-date, x-amz-target, x-amz-user-agent, "
                 b"x-amz-security-token, x-amz-content-sha256, amz-sdk-invocation-id, amz-sdk-request")
EXPOSE_HEADERS = b"x-amzn-RequestId, x-amz-crc32"
MAX_AGE = b"172800"  # two days, as DynamoDB's preflights say (spec wire.md §4)


class CorsPolicy:
    """Which origins may call, and the headers that tell their browsers so."""

    def __init__(self, origins: tuple[str, ...] | list[str] = LOCAL_ORIGINS) -> None:
        self.any = "*" in origins
        self.exact = frozenset(o.rstrip("/") for o in origins if not o.endswith(":*") and o != "*")
        self.any_port = tuple(o[:-2] for o in origins if o.endswith(":*"))

    def allows(self, origin: bytes | str) -> bool:
        """Whether a page from `origin` may read our answers."""
        if self.any:
            return True
        text = origin.decode("latin-1") if isinstance(origin, bytes) else origin
        if text in self.exact:
            return True
        for base in self.any_port:
            if text == base or (text.startswith(base + ":") and text[len(base) + 1:].isdigit()):
                return True
        return False

    def response_headers(self, origin: bytes | None) -> list[tuple[bytes, bytes]]:
        """Access-Control-* headers for an answer to a request carrying `origin` (none if not allowed)."""
        if origin is None or not self.allows(origin):
            return []
        return [(b"access-control-allow-origin", b"*" if self.any else origin),
                (b"access-control-expose-headers", EXPOSE_HEADERS)] + ([] if self.any else [(b"vary", b"Origin")])

    def preflight(self, origin: bytes | None, headers: bytes | None) -> tuple[int, list[tuple[bytes, bytes]]]:
        """(status, headers) of the answer to an OPTIONS preflight (`headers`: its
        Access-Control-Request-Headers); the body is empty.

        An allowed origin gets 200 with the methods and the headers it asked for (or ours); any
        other gets 403 without Access-Control-* headers, so its browser refuses the real request.
        """
        if origin is None or not self.allows(origin):
            return 403, []
        out = self.response_headers(origin)
        out += [(b"access-control-allow-methods", ALLOW_METHODS),
                (b"access-control-allow-headers", headers if headers else ALLOW_HEADERS),
                (b"access-control-max-age", MAX_AGE)]
        return 200, out
