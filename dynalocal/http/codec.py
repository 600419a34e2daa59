"""Response framing: JSON bodies, x-amz-crc32, request ids, error bodies."""
from __future__ import annotations

import itertools
import os
import zlib

import orjson

from dynalocal.errors import DynamoError

JSON_TYPE = b"application/x-amz-json-1.0"
JSON_TYPES = frozenset((JSON_TYPE, b"application/x-amz-json-1.1", b"application/json"))  # accepted request media types
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# 40 random characters per process + a 12-digit counter = DynamoDB's 52-char [0-9A-Z] ids.
_PREFIX = "".join(_ALPHABET[b % 36] for b in os.urandom(40))
_COUNTER = itertools.count()


def request_id() -> bytes:
    return f"{_PREFIX}{next(_COUNTER) % 10**12:012d}".encode()


def headers(body: bytes, content_type: bytes = JSON_TYPE) -> list[tuple[bytes, bytes]]:
    """Response headers every answer carries; the CRC is of the exact body bytes sent."""
    return [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"x-amzn-requestid", request_id()),
        (b"x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF).encode()),
    ]


_PREFIX_BYTES = _PREFIX.encode()


def header_block(body: bytes, content_type: bytes = JSON_TYPE, _prefix: bytes = _PREFIX_BYTES,
                 _next=_COUNTER.__next__, _crc=zlib.crc32) -> bytes:
    """The same headers as `headers`, already framed as HTTP/1.1 header lines (request id formatted inline)."""
    return b"content-type: %s\r\ncontent-length: %d\r\nx-amzn-requestid: %s%012d\r\nx-amz-crc32: %d\r\n" % (
        content_type, len(body), _prefix, _next() % 1000000000000, _crc(body))


def error_body(err: DynamoError) -> bytes:
    return orjson.dumps(err.body())

