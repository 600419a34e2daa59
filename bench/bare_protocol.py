"""The floor: a protocol of dynalocal's kind (asyncio.Protocol on httptools, uvloop) answering a fixed body.

It parses each request as dynalocal's protocol does (head, headers, body) and answers every
one with the same DynamoDB-shaped `{}`: what serving costs with no DynamoDB work at all.
"""
from __future__ import annotations

import asyncio
import sys

import httptools
import uvloop

BODY = b"{}"
RESPONSE = (b"HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 2\r\n"
            b"x-amzn-requestid: " + b"BARE" * 13 + b"\r\nx-amz-crc32: 2745614147\r\n\r\n" + BODY)


class Bare(asyncio.Protocol):
    def __init__(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_begin(self) -> None:
        self.headers = []
        self.chunks = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.transport.write(RESPONSE)


async def main(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Bare, "127.0.0.1", port, backlog=2048)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    uvloop.new_event_loop().run_until_complete(main(int(sys.argv[1])))
