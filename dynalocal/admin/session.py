"""The console's log-in cookie: its name and value, derived once from the admin token.

The cookie carries an HMAC of the token rather than the token itself, so a leaked cookie does not
give away a token that scripts may also use elsewhere; it opens exactly what the token opens.
"""
from __future__ import annotations

import hashlib
import hmac

COOKIE = b"dynalocal_console"
LOGIN_PATH = "/_dynalocal/login"
LOGOUT_PATH = "/_dynalocal/logout"
CONSOLE_PATH = "/_dynalocal/console"
# Set-Cookie attributes: never sent cross-site, never readable by scripts, only for admin routes.
ATTRIBUTES = "Path=/_dynalocal; HttpOnly; SameSite=Strict"


def session_value(token: str) -> str:
    """The cookie value that stands for `token` (computed once per server, by the guard and the log-in route)."""
    return hmac.new(token.encode(), b"dynalocal console session", hashlib.sha256).hexdigest()


def presented_session(cookie_header: bytes | None) -> str | None:
    """The console cookie's value in a `Cookie` header, or None."""
    if not cookie_header:
        return None
    for part in cookie_header.split(b";"):
        name, _, value = part.strip().partition(b"=")
        if name == COOKIE:
            return value.strip().decode("latin-1")
    return None


def set_cookie(token: str) -> str:
    """The Set-Cookie header value logging a browser in with `token`."""
    return f"{COOKIE.decode()}={session_value(token)}; {ATTRIBUTES}"


def clear_cookie() -> str:
    """The Set-Cookie header value logging a browser out."""
    return f"{COOKIE.decode()}=; Max-Age=0; {ATTRIBUTES}"
