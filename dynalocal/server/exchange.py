"""One HTTP request as the protocol hands it to the plug-ins (`Hooks`) and the router.

Plug-ins are plain callables kept in `Hooks` (one instance per server, `HttpServer.hooks`):

* `before(request) -> Answer | None` runs for every complete request, in order, before
  routing: request decoding (replace `request.body`), CORS preflights and authentication
  (return an `Answer` to answer at once), choosing the `Context` a request runs against
  (set `request.ctx`). Returning None passes the request on.
* `after(request, answer) -> Answer` runs on every answer of the DynamoDB endpoint and of
  the plug-ins, in order, before framing. The x-amz-crc32 and content-length are computed
  afterwards, over the final body.
* `after_marked(request, answer) -> Answer` is the same, but runs (before `after`) only on
  answers to requests a before-hook marked by setting `request.state`: response compression
  (change `body`, add a `content-encoding` line) and CORS headers (add lines to `headers`)
  concern few requests, and an answer with no after-hook to run takes the protocol's inlined
  write path.

The protocol collects the headers plug-ins commonly need while it parses the head (`target`,
`content_type`, `host`, `authorization`, `origin`, `content_encoding`, `accept_encoding`), so
plug-ins need not scan `headers` again.

Plug-ins run on the event loop, one request at a time: they must not block.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple


class Answer(NamedTuple):
    """A response before framing: `headers` are extra, already framed lines (b"name: value\\r\\n" each)."""

    status: int
    body: bytes
    content_type: bytes = b"application/x-amz-json-1.0"
    headers: bytes = b""


class Request:
    """A complete request. Header names are lower-cased bytes, in arrival order."""

    __slots__ = ("method", "url", "headers", "body", "target", "content_type", "host", "keep_alive", "version",
                 "authorization", "origin", "content_encoding", "accept_encoding", "ctx", "state")

    def __init__(self, method: bytes, url: bytes, headers: list[tuple[bytes, bytes]], version: str,
                 keep_alive: bool) -> None:
        self.method = method
        self.url = url  # path and query string as sent
        self.headers = headers
        self.version = version  # "1.1" or "1.0"
        self.keep_alive = keep_alive
        self.body = b""
        self.target: str | None = None  # X-Amz-Target
        self.content_type: bytes | None = None  # media type, lower-cased, without parameters
        self.host: bytes | None = None  # Host header value
        # Where a header is sent twice, these hold its last value (accept_encoding: the last one not identity).
        self.authorization: bytes | None = None
        self.origin: bytes | None = None
        self.content_encoding: bytes | None = None
        self.accept_encoding: bytes | None = None  # None also when it is `identity` (botocore's: no coding)
        self.ctx: Any = None  # the Context to run against; None = the server's own
        self.state: Any = None  # free for plug-ins; not None runs the `Hooks.after_marked` hooks on the answer

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (name lower-cased), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None

    @property
    def path(self) -> bytes:
        return self.url.split(b"?", 1)[0]


Before = Callable[[Request], "Answer | None"]
After = Callable[[Request, Answer], Answer]


class Hooks:
    """The plug-in lists of one server (see the module docstring)."""

    def __init__(self) -> None:
        self.before: list[Before] = []
        self.after: list[After] = []
        self.after_marked: list[After] = []
