"""HTTP/1.1 details of the inline DynamoDB endpoint (server/protocol.py), on raw sockets.

`POST /` is answered from the parser callbacks rather than through ASGI; these tests pin the
HTTP behaviour that path must keep: pipelining order (also mixed with ASGI routes), 100-continue,
connection close, HTTP/1.0, back-pressure from a client that does not read, and that the plain
ASGI app (for in-process use) answers the same bytes.
"""
from __future__ import annotations

import json
import socket
import threading
import time

import uvicorn

from dynalocal.server.app import create_app
from dynalocal.server.context import Context, Settings

from conftest import free_port

LIST = b'{"Limit": 1}'


def request(body: bytes = LIST, target: str = "ListTables", extra: str = "", version: str = "1.1") -> bytes:
    return (f"POST / HTTP/{version}\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n"
            f"X-Amz-Target: DynamoDB_20120810.{target}\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def read_responses(sock: socket.socket, count: int) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """Read `count` Content-Length-framed responses: (status line, headers, body) each."""
    buffer, out = b"", []
    while len(out) < count:
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {len(out)} responses"
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        status, *lines = head.split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines)
        length = int(headers.get(b"content-length", b"0"))
        while len(buffer) < length:
            chunk = sock.recv(65536)
            assert chunk, "connection closed mid-body"
            buffer += chunk
        body, buffer = buffer[:length], buffer[length:]
        if not status.startswith(b"HTTP/1.1 100"):
            out.append((status, headers, body))
    return out


def connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def test_pipelined_requests_are_answered_in_order(server):
    with connect(server) as sock:
        sock.sendall(request() + request(b"{not json") + request(target="Nope") + request())
        answers = read_responses(sock, 4)
    assert [a[0].split(b" ")[1] for a in answers] == [b"200", b"400", b"400", b"200"]
    assert b"SerializationException" in answers[1][2] and b"UnknownOperationException" in answers[2][2]
    assert len({a[1][b"x-amzn-requestid"] for a in answers}) == 4


def test_pipelining_keeps_its_order_across_asgi_routes(server):
    health = b"GET /_dynalocal/health HTTP/1.1\r\nHost: x\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(request() + health + request() + health + request(b"{not json"))
        answers = read_responses(sock, 5)
    assert [a[1][b"content-type"].split(b";")[0] for a in answers] == [
        b"application/x-amz-json-1.0", b"application/json", b"application/x-amz-json-1.0", b"application/json",
        b"application/x-amz-json-1.0"]
    assert b"TableNames" in answers[2][2] and b"SerializationException" in answers[4][2]


def test_expect_100_continue_gets_an_interim_response(server):
    with connect(server) as sock:
        head, body = request(extra="Expect: 100-continue\r\n").split(b"\r\n\r\n", 1)
        sock.sendall(head + b"\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        (status, _, answer), = read_responses(sock, 1)
    assert status.startswith(b"HTTP/1.1 200") and b"TableNames" in answer


def test_connection_close_is_honoured(server):
    with connect(server) as sock:
        sock.sendall(request(extra="Connection: close\r\n"))
        (status, headers, _), = read_responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and headers[b"connection"] == b"close"
        assert sock.recv(4096) == b""


def test_http_1_0_gets_one_answer_then_close(server):
    with connect(server) as sock:
        sock.sendall(request(version="1.0"))
        (status, headers, body), = read_responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and b"TableNames" in body
        assert sock.recv(4096) == b""


def test_client_that_stops_reading_is_not_buffered_without_bound(server, make_table):
    """Thousands of pipelined reads with nobody reading: the server stops reading, then catches up."""
    table = make_table([("pk", "HASH")], [("pk", "S")])
    item = {"pk": {"S": "k"}, "pad": {"S": "x" * 30_000}}
    server.client().put_item(TableName=table, Item=item)
    get = request(json.dumps({"TableName": table, "Key": {"pk": {"S": "k"}}}).encode(), "GetItem")
    count = 400  # ~12 MB of answers, far more than the socket buffers hold
    with connect(server) as sock:
        sender = threading.Thread(target=sock.sendall, args=(get * count,))
        sender.start()
        time.sleep(0.5)  # the server fills the socket, pauses, and must not die or drop anything
        answers = read_responses(sock, count)
        sender.join(10)
    assert all(a[0].startswith(b"HTTP/1.1 200") and len(a[2]) > 30_000 for a in answers)


def test_plain_asgi_app_answers_the_same(server):
    """create_app() under stock uvicorn (the in-process use) serves the same protocol."""
    port = free_port()
    ctx = Context(settings=Settings(port=port))
    plain = uvicorn.Server(uvicorn.Config(create_app(ctx), host="127.0.0.1", port=port, log_level="warning",
                                          lifespan="on"))
    thread = threading.Thread(target=plain.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not plain.started and time.monotonic() < deadline:
            time.sleep(0.01)
        answers = []
        for target_port in (server.port, port):
            with socket.create_connection(("127.0.0.1", target_port), timeout=10) as sock:
                sock.sendall(request(b'{"TableName": "missing-table"}', "DescribeTable") + request(b"[1]"))
                answers.append([(s.split(b" ")[1], h[b"content-type"], b) for s, h, b in read_responses(sock, 2)])
        assert answers[0] == answers[1]
        assert answers[0][0][0] == b"400" and b"ResourceNotFoundException" in answers[0][0][2]
    finally:
        plain.should_exit = True
        thread.join(10)
