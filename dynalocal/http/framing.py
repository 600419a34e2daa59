"""HTTP/1.1 response framing: status lines, the per-second default headers, one buffer per answer."""
from __future__ import annotations

from email.utils import formatdate
from http import HTTPStatus

from dynalocal.http import codec

STATUS = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in HTTPStatus}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
END_KEEP = b"\r\n"
END_CLOSE = b"connection: close\r\n\r\n"


def status_line(status: int) -> bytes:
    return STATUS.get(status) or b"HTTP/1.1 %d Unknown\r\n" % status


class DefaultHeaders:
    """The `date` and `server` lines every answer carries; `refresh` runs once a second, not per answer."""

    def __init__(self) -> None:
        self.block = b""
        self.refresh()

    def refresh(self) -> None:
        self.block = b"date: %s\r\nserver: dynalocal\r\n" % formatdate(usegmt=True).encode()


def frame(status: int, body: bytes, content_type: bytes, extra: bytes, defaults: bytes, keep_alive: bool,
          head: bool = False) -> bytes:
    """One answer as bytes: status line, headers (with content-length, request id, crc), body."""
    return b"".join((STATUS.get(status) or status_line(status), defaults, codec.header_block(body, content_type),
                     extra, END_KEEP if keep_alive else END_CLOSE, b"" if head else body))
