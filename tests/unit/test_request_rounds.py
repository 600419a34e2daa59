"""Requests received in one event-loop round run after all of the round's reads, in the order they
arrived, and their answers go out in order (http.connection.run_deferred, http.serve.HttpServer.run_ready).

Driven on a real asyncio loop with stand-in transports, so the test sees exactly when a request runs.
"""
from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import orjson
import pytest

from dynalocal.cli.build import build_server
from dynalocal.config import Settings
from dynalocal.engine.dispatch import dispatch
from dynalocal.http.protocol import HttpProtocol
from dynalocal.http.serve import HttpServer

AUTH = (b"Authorization: AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, "
        b"SignedHeaders=host, Signature=00\r\n")


class Transport:
    """What the protocol needs of an asyncio transport; keeps what it was given."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def statuses(self) -> list[bytes]:
        return re.findall(rb"HTTP/1\.1 (\d{3}) ", b"".join(self.written))  # bodies are JSON: no status lines


def api(target: str, body: dict) -> bytes:
    raw = orjson.dumps(body)
    return (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.0\r\n"
            b"X-Amz-Target: DynamoDB_20120810." + target.encode() + b"\r\n" + AUTH
            + b"Content-Length: %d\r\n\r\n" % len(raw)) + raw


def put(key: str) -> bytes:
    return api("PutItem", {"TableName": "rounds", "Item": {"pk": {"S": key}}})


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def server(loop: asyncio.AbstractEventLoop) -> HttpServer:
    server = build_server(Settings(port=0), plugins=True)
    server.loop = loop
    server.clock = loop.time() + 3600.0
    server._all_closed = asyncio.Event()  # as HttpServer.serve sets it up
    status, out = dispatch(server.app.ctx, "DynamoDB_20120810.CreateTable", orjson.dumps({
        "TableName": "rounds", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}))
    assert status == 200, out
    return server


def connect(server: HttpServer, loop: asyncio.AbstractEventLoop) -> tuple[HttpProtocol, Transport]:
    conn, transport = HttpProtocol(server, loop), Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


def turn(loop: asyncio.AbstractEventLoop, rounds: int = 3) -> None:
    """Let the loop go round a few times (the round's requests, then their held answers)."""
    for _ in range(rounds):
        loop.run_until_complete(asyncio.sleep(0))


def stored(server: HttpServer, key: str) -> bool:
    status, out = dispatch(server.app.ctx, "DynamoDB_20120810.GetItem",
                           orjson.dumps({"TableName": "rounds", "Key": {"pk": {"S": key}}}))
    assert status == 200, out
    return b"Item" in out


def test_requests_of_a_round_run_after_its_reads_and_are_answered_in_order(server, loop):
    a, ta = connect(server, loop)
    b, tb = connect(server, loop)
    a.data_received(put("a1") + put("a2"))
    b.data_received(put("b1"))
    assert not any(stored(server, k) for k in ("a1", "a2", "b1")) and not ta.written and not tb.written
    turn(loop)
    assert all(stored(server, k) for k in ("a1", "a2", "b1"))
    assert ta.statuses() == [b"200", b"200"] and tb.statuses() == [b"200"]


def test_an_http_error_after_a_request_of_the_round_is_answered_after_it(server, loop):
    conn, transport = connect(server, loop)
    conn.data_received(put("k") + b"BREW /pot HTCPCP/1.0\r\n\r\n")
    assert not transport.written  # the 400 waits for the request before it
    turn(loop)
    assert transport.statuses() == [b"200", b"400"] and transport.closed and stored(server, "k")


def test_a_request_received_in_full_runs_though_its_client_left_in_the_same_round(server, loop):
    conn, transport = connect(server, loop)
    conn.data_received(put("gone") + b"GET /_dynalocal/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    conn.connection_lost(None)
    turn(loop)
    assert stored(server, "gone")  # as when requests ran while being read
    assert not transport.written and conn._task is None  # nobody to answer; the ASGI route is not run
