"""One HTTP request as the protocol hands it to the plug-ins (`Hooks`) and the router.

Plug-ins are plain callables kept in `Hooks` (one instance per server, `HttpServer.hooks`):

* `before(request) -> Answer | None` runs for every complete request, in order, before
  routing: request decoding (replace `request.body`), CORS preflights and authentication
  (return an `Answer` to answer at once; set `request.caller`, the engine.caller.Caller the
  request runs as), choosing the `Context` a request runs against (set `request.ctx`).
  Returning None passes the request on.
* `after(request, answer) -> Answer` runs on every answer of the DynamoDB endpoint and of
  the plug-ins, in order, before framing. The x-amz-crc32 and content-length are computed
  afterwards, over the final body.
* `after_marked(request, answer) -> Answer` is the same, but runs (before `after`) only on
  answers to requests a before-hook marked by setting `request.state`: response compression
  (change `body`, add a `content-encoding` line) and CORS headers (add lines to `headers`)
  concern few requests, and an answer with no after-hook to run takes the protocol's inlined
  write path.

The protocol reads the headers every request needs while it parses the head (`target`,
`content_type`, `content_length`, `host`, `expect`, `authorization`, `origin`,
`content_encoding`, `accept_encoding`), so plug-ins need not look them up again; any other
header is in `fields` (names lower-cased). A header sent twice counts once, with its last
value (no SDK sends one twice), except Accept-Encoding, whose lines join into one list as HTTP says.

Plug-ins run on the event loop, one request at a time: they must not block.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, final

from dynalocal.engine.caller import ANONYMOUS, Caller
from dynalocal.http.messages import JSON_TYPE, JSON_TYPES

if TYPE_CHECKING:
    from dynalocal.engine.context import Context


class Answer(NamedTuple):
    """A response before framing: `headers` are extra, already framed lines (b"name: value\\r\\n" each)."""

    status: int
    body: bytes
    content_type: bytes = JSON_TYPE
    headers: bytes = b""


# The headers read for every request, in the order `Request` takes them after `keep_alive`.
COMMON_HEADERS = (b"x-amz-target", b"content-type", b"content-length", b"host", b"expect", b"authorization",
                  b"origin", b"content-encoding", b"accept-encoding")


@final  # (so that `type(item) is Request` tells a request from the protocol's other queued items)
class Request:
    """A complete request: method, url (path and query as sent), the headers (`raw`: names as
    sent; `fields`: lower-cased), body, and the common headers' values (None when absent)."""

    __slots__ = ("method", "url", "raw", "version", "keep_alive", "body", "target", "content_type",
                 "content_length", "host", "expect", "authorization", "origin", "content_encoding",
                 "accept_encoding", "ctx", "caller", "state", "_fields")

    def __init__(self, method: bytes, url: bytes, raw: dict[bytes, bytes], version: str, keep_alive: bool,
                 target: bytes | None = None, content_type: bytes | None = None, content_length: bytes | None = None,
                 host: bytes | None = None, expect: bytes | None = None, authorization: bytes | None = None,
                 origin: bytes | None = None, content_encoding: bytes | None = None,
                 accept_encoding: bytes | None = None) -> None:
        self.method = method
        self.url = url
        self.raw = raw
        self.version = version  # "1.1" or "1.0"
        self.keep_alive = keep_alive
        self.body = b""
        self.target: str | None = None if target is None else target.decode("latin-1")  # X-Amz-Target
        if content_type is not None and content_type not in JSON_TYPES:
            content_type = content_type.split(b";", 1)[0].strip().lower()
        self.content_type = content_type  # media type, lower-cased, without parameters
        self.content_length = content_length
        self.host = host
        self.expect = expect
        self.authorization = authorization
        self.origin = origin
        self.content_encoding = content_encoding
        self.accept_encoding = accept_encoding
        self.ctx: Context | None = None  # the Context to run against; None = the server's own
        self.caller: Caller = ANONYMOUS  # who sends it (set by the authentication plug-in)
        self.state: Any = None  # free for plug-ins; not None runs the `Hooks.after_marked` hooks on the answer
        self._fields: dict[bytes, bytes] | None = None

    @property
    def is_api(self) -> bool:
        """A DynamoDB API call (`POST /`, answered by the engine), not a route of the ASGI app."""
        return self.method == b"POST" and (self.url == b"/" or self.url[:2] == b"/?")

    @property
    def fields(self) -> dict[bytes, bytes]:
        """Every header: lower-cased name -> value."""
        if self._fields is None:
            self._fields = {name.lower(): value for name, value in self.raw.items()}
        return self._fields

    def header(self, name: bytes) -> bytes | None:
        """A header's value (name lower-cased), or None."""
        return self.fields.get(name)

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The headers as (lower-cased name, value) pairs, in arrival order."""
        return list(self.fields.items())

    @property
    def path(self) -> bytes:
        return self.url.split(b"?", 1)[0]


# Header names as a client sends them (a tuple, in order) -> their `lookup_plan`. A client sends the
# same names request after request, so the protocol's lookup is `PLANS.get(names)`.
PLANS: dict[tuple[bytes, ...], tuple[bytes, ...]] = {}
_PLANS_LIMIT = 1024


def lookup_plan(names: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """For header names as a client sent them: the name to look up for each of COMMON_HEADERS
    (the last one sent, in any case; b"" when absent: no header has an empty name). Kept in PLANS."""
    lower = [name.lower() for name in names]
    plan = []
    for wanted in COMMON_HEADERS:
        found = b""
        for name, low in zip(names, lower):
            if low == wanted:
                found = name
        plan.append(found)
    if len(PLANS) >= _PLANS_LIMIT:
        PLANS.clear()
    PLANS[names] = result = tuple(plan)
    return result


Before = Callable[[Request], "Answer | None"]
After = Callable[[Request, Answer], Answer]


class Hooks:
    """The plug-in lists of one server (see the module docstring)."""

    def __init__(self) -> None:
        self.before: list[Before] = []
        self.after: list[After] = []
        self.after_marked: list[After] = []
