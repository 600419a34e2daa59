"""Every HTTP answer's bytes, built in one place: status line, `date`/`server`, content-type,
content-length, x-amzn-RequestId, x-amz-crc32 (of the exact body sent), extra lines, body.

The HTTP/1.1 layer frames with `frame`; the ASGI face (http.app, when embedded) sends
`asgi_headers`, the same headers as pairs. Constant parts (status lines, the request id's
random prefix) are built once; the date line once a second (`DefaultHeaders.refresh`).
"""
from __future__ import annotations

import itertools
import os
import zlib
from collections.abc import Callable
from email.utils import formatdate
from http import HTTPStatus

from dynalocal.engine.dispatch import JSON_TYPE, JSON_TYPES, NOT_FOUND_BODY
from dynalocal.errors import error_body

__all__ = ["JSON_TYPE", "JSON_TYPES", "NOT_FOUND_BODY", "CONTINUE", "DefaultHeaders", "asgi_headers", "error_body",
           "frame", "request_id", "status_line"]

STATUS = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in HTTPStatus}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
END_KEEP = b"\r\n"
END_CLOSE = b"connection: close\r\n\r\n"
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# 40 random characters per process + a 12-digit counter = DynamoDB's 52-char [0-9A-Z] ids.
_PREFIX = "".join(_ALPHABET[b % 36] for b in os.urandom(40)).encode()
_COUNTER = itertools.count()
_HEADERS = b"content-type: %s\r\ncontent-length: %d\r\nx-amzn-requestid: %s%012d\r\nx-amz-crc32: %d\r\n"


def status_line(status: int) -> bytes:
    """`HTTP/1.1 <status> <phrase>` and its line end."""
    return STATUS.get(status) or b"HTTP/1.1 %d Unknown\r\n" % status


class DefaultHeaders:
    """The `date` and `server` lines every answer carries; `refresh` runs once a second, not per answer."""

    def __init__(self) -> None:
        self.block = b""
        self.refresh()

    def refresh(self) -> None:
        self.block = b"date: %s\r\nserver: dynalocal\r\n" % formatdate(usegmt=True).encode()


def frame(status: int, body: bytes, content_type: bytes, defaults: bytes, extra: bytes = b"",
          keep_alive: bool = True, head: bool = False, _status: Callable[[int], bytes | None] = STATUS.get,
          _next: Callable[[], int] = _COUNTER.__next__, _crc: Callable[[bytes], int] = zlib.crc32) -> bytes:
    """One answer as bytes: status line, `defaults` (DefaultHeaders.block), the headers above, `extra`
    (framed lines), `connection: close` unless `keep_alive`, and the body (not for a HEAD request)."""
    return b"".join((_status(status) or status_line(status), defaults, _HEADERS % (
        content_type, len(body), _PREFIX, _next() % 1000000000000, _crc(body)), extra,
        END_KEEP if keep_alive else END_CLOSE, b"" if head else body))


def request_id() -> bytes:
    """A fresh 52-character request id."""
    return b"%s%012d" % (_PREFIX, next(_COUNTER) % 1000000000000)


def asgi_headers(body: bytes, content_type: bytes = JSON_TYPE) -> list[tuple[bytes, bytes]]:
    """The headers `frame` writes, as ASGI (name, value) pairs (the ASGI server adds date and server)."""
    return [
        (b"content-type", content_type),
        (b"content-length", b"%d" % len(body)),
        (b"x-amzn-requestid", request_id()),
        (b"x-amz-crc32", b"%d" % zlib.crc32(body)),
    ]
