"""Content-Encoding both ways, as DynamoDB does it (docs/behaviour/wire.md §2).

Requests: SDKs with request compression on send `Content-Encoding: gzip` bodies. gzip and
deflate (zlib-wrapped, the HTTP meaning; a raw deflate stream is accepted too) are decoded
incrementally, refusing the body as soon as the decoded size passes 16 MiB, so a small
"zip bomb" never inflates beyond the limit. An unknown encoding, a body that does not decode,
and an empty "compressed" body are DynamoDB's HTTP 500 InternalServerError.

Responses: with `Accept-Encoding: gzip` (or deflate), bodies of 4096 bytes or more are
compressed; smaller ones are not.
"""
from __future__ import annotations

import zlib

MAX_DECODED = 16 * 1024 * 1024
MIN_COMPRESSED = 4096
_GZIP, _ZLIB, _RAW = 31, 15, -15  # zlib wbits for each container
_CODINGS = (b"gzip", b"deflate")  # the response codings, our choice first for `*`
_DECODERS = {b"gzip": (_GZIP,), b"x-gzip": (_GZIP,), b"deflate": (_ZLIB, _RAW)}


class UndecodableBody(Exception):
    """An unknown Content-Encoding, or a body that does not decode (DynamoDB: HTTP 500)."""


class DecodedTooLarge(Exception):
    """The decoded body would exceed 16 MiB (HTTP 413, as for a plain body that size)."""


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """Decode one stream (gzip members may follow each other), never producing more than `limit`."""
    out: list[bytes] = []
    total = 0
    while True:
        decoder = zlib.decompressobj(wbits)
        chunk = decoder.decompress(data, limit - total + 1)
        while True:
            total += len(chunk)
            if total > limit:
                raise DecodedTooLarge()
            out.append(chunk)
            if not decoder.unconsumed_tail:
                break
            chunk = decoder.decompress(decoder.unconsumed_tail, limit - total + 1)
        if not decoder.eof:
            raise UndecodableBody("truncated")
        data = decoder.unused_data
        if not data or wbits != _GZIP:  # only gzip allows members back to back
            if data:
                raise UndecodableBody("data after the end of the stream")
            return b"".join(out)


def decode(body: bytes, encoding: bytes, limit: int = MAX_DECODED) -> bytes:
    """The body a request's Content-Encoding (one or several, comma-separated) wraps."""
    codings = [c.strip().lower() for c in encoding.split(b",") if c.strip()]
    for coding in reversed(codings):  # applied in the order listed: undone from the last
        if coding == b"identity":
            continue
        container = _DECODERS.get(coding)
        if container is None:
            raise UndecodableBody(f"unknown encoding {coding.decode('latin-1')!r}")
        if not body:
            raise UndecodableBody("empty body")
        for i, wbits in enumerate(container):
            try:
                body = _inflate(body, wbits, limit)
                break
            except zlib.error as err:
                if i == len(container) - 1:
                    raise UndecodableBody(str(err)) from None
    return body


def accepted(accept_encoding: bytes) -> bytes | None:
    """The response coding for an Accept-Encoding list: b"gzip", b"deflate" or None. The highest q
    wins; among equal q the client's order decides (`br, identity, deflate, gzip` -> deflate, as
    DynamoDB answers; docs/behaviour/wire.md §2). `*` stands for a coding the list does not name."""
    wanted: dict[bytes, float] = {}
    for part in accept_encoding.lower().split(b","):
        name, _, params = part.partition(b";")
        q = 1.0
        for param in params.split(b";"):
            key, _, value = param.strip().partition(b"=")
            if key == b"q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        wanted.setdefault(name.strip(), q)
    star = wanted.get(b"*", 0.0)
    best, best_q = None, 0.0
    for name, q in wanted.items():  # in the client's order
        if name in _CODINGS and q > best_q:
            best, best_q = name, q
    for coding in _CODINGS:  # `*`: a supported coding not named, gzip first
        if coding not in wanted and star > best_q:
            best, best_q = coding, star
    return best


def encode(body: bytes, coding: bytes) -> bytes:
    """`body` compressed as gzip or deflate (zlib). Level 1: most of the gain for little CPU."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, _GZIP if coding == b"gzip" else _ZLIB)
    return compressor.compress(body) + compressor.flush()
