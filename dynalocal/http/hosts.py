"""The Host check: on a loopback bind, serve only requests addressed to a loopback name or an IP.

A web page can make the browser send requests to 127.0.0.1 under a name it controls (DNS
rebinding: `attacker.example` first resolves to the attacker, then to 127.0.0.1), and the
browser then lets the page read the answers. Every such request carries the attacker's name
in `Host`, so a server bound to loopback refuses names that are not loopback names
(`localhost`, `*.localhost`), IP literals, or names the user allowed with `--allowed-hosts`,
as development servers do. On an explicit non-loopback bind (`--host 0.0.0.0`, e.g. the
Docker image, where compose service names like `http://dynalocal:8000` must work) the user
has opted in to being reached by any name, and any Host is served. Checked values must be
`host[:port]` exactly (RFC 9110 §7.2): `localhost:80@evil.example` and the like are refused.
"""
from __future__ import annotations

import ipaddress
import re

from dynalocal.errors import AccessDeniedException

LOOPBACK_NAMES = ("localhost", "localhost.")
# host[:port]: a bracketed IPv6 literal, a bare IPv6 literal (no port), or a name/IPv4 of host characters.
_HOST_PORT = re.compile(r"(?:\[[0-9a-f:.]+\]|[0-9a-f:.]*:[0-9a-f:.]*|[a-z0-9._~-]+)(?::[0-9]{1,5})?")
_REMEMBERED = 256  # allowed Host values kept so the check is one set lookup per request


def is_loopback_bind(host: str) -> bool:
    """Whether the address the server binds is loopback only (127.0.0.0/8, ::1, localhost)."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """The name part of a Host header value (no port, no IPv6 brackets), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostPolicy:
    """Which Host header values a server answers (None when it answers every one)."""

    def __init__(self, bind: str, allowed: list[str] | tuple[str, ...] = ()) -> None:
        self.checking = is_loopback_bind(bind) and "*" not in allowed
        self.allowed = frozenset(name.strip().lower().rstrip(".") for name in allowed if name.strip())
        self.seen: set[bytes | None] = set()  # values already allowed (the protocol looks here first)

    def allows(self, value: bytes | None) -> bool:
        """Whether a request with this Host header value (None: no Host header) may be served."""
        if not self.checking or value is None:  # no Host at all (HTTP/1.0): no browser sends that, so no rebinding
            ok = True
        else:
            text = value.decode("latin-1").strip().lower()
            ok = _HOST_PORT.fullmatch(text) is not None and self._name_allowed(host_name(text))
        if ok and len(self.seen) < _REMEMBERED:
            self.seen.add(value)
        return ok

    def _name_allowed(self, name: str) -> bool:
        bare = name.rstrip(".")
        if bare == "localhost" or bare.endswith(".localhost") or bare in self.allowed:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def refusal(self, value: bytes) -> AccessDeniedException:
        """DynamoDB's answer to a caller it does not authorize: HTTP 400 AccessDeniedException, its
        text under `message` as in dynalocal's other refusals of its own (errors.access_denied_body)."""
        name = value.decode("latin-1")
        err = AccessDeniedException(
            f"Host '{name}' is not allowed: on a loopback address dynalocal answers only localhost, IP addresses "
            f"and names given with --allowed-hosts (protection against DNS rebinding)")
        err.message_key = "message"
        return err
