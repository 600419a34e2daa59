"""HTTP/1.1 behaviour of dynalocal's own HTTP layer (server/protocol.py, serve.py), on raw sockets.

Keep-alive, pipelining in order (also across ASGI routes and with --data-dir, where answers wait
for fsync), 100-continue, 408 on a stalled body, 413 while the body streams, connection close,
HTTP/1.0, half-closed connections, the Host check, malformed requests, and that the plain ASGI
app (for in-process use) answers the same bytes. Back-pressure and SIGTERM: test_connections.py.
"""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import uvicorn
from conftest import LiveServer, free_port

from dynalocal.app import create_app
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.http.durability import Durability
from dynalocal.http.serve import HttpServer

LIST = b'{"Limit": 1}'


# Every SDK signs; dynalocal's default --auth relaxed wants a well-formed signature header (not checked).
AUTH = ("Authorization: AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host, Signature=00\r\n")


def request(body: bytes = LIST, target: str = "ListTables", extra: str = "", version: str = "1.1",
            host: str = "x") -> bytes:
    return (f"POST / HTTP/{version}\r\nHost: {host}\r\nContent-Type: application/x-amz-json-1.0\r\n"
            f"X-Amz-Target: DynamoDB_20120810.{target}\r\nContent-Length: {len(body)}\r\n{AUTH}{extra}\r\n").encode() + body


def read_responses(sock: socket.socket, count: int | None) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """Read `count` Content-Length-framed responses (None: until the server closes): (status line, headers, body)."""
    buffer, out = b"", []
    while count is None or len(out) < count:
        if count is None and not buffer:
            chunk = sock.recv(65536)
            if not chunk:
                return out
            buffer = chunk
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


def test_answers_held_in_a_loop_round_go_out_before_a_closing_answer(server):
    """Answers are held until the end of the event loop's round; a request in the same round that closes the
    connection writes them first: every answer arrives, in order, then the close."""
    with connect(server) as sock:
        sock.sendall(request() + request(b"{not json") + request() + request(extra="Connection: close\r\n"))
        answers = read_responses(sock, None)
    assert [a[0].split(b" ")[1] for a in answers] == [b"200", b"400", b"200", b"200"]
    assert answers[3][1][b"connection"] == b"close" and b"TableNames" in answers[3][2]


def test_http_1_0_gets_one_answer_then_close(server):
    with connect(server) as sock:
        sock.sendall(request(version="1.0"))
        (status, headers, body), = read_responses(sock, 1)
        assert status.startswith(b"HTTP/1.1 200") and b"TableNames" in body
        assert sock.recv(4096) == b""


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


# -- keep-alive, pipelining with and without a journal ------------------------------------------

def put(table: str, value: int) -> bytes:
    return request(json.dumps({"TableName": table, "Item": {"pk": {"S": "k"}, "v": {"N": str(value)}}}).encode(),
                   "PutItem")


def get(table: str) -> bytes:
    return request(json.dumps({"TableName": table, "Key": {"pk": {"S": "k"}}, "ConsistentRead": True}).encode(),
                   "GetItem")


@pytest.fixture(params=["memory", "data-dir"])
def any_server(request, tmp_path):
    """A server in memory, or one journaling to a data directory (answers wait for fsync)."""
    if request.param == "memory":
        ctx = Context()
    else:
        ctx = Context(settings=Settings(data_dir=str(tmp_path / "data"), sync="batch"))
        Durability.open(ctx)
    with LiveServer(ctx) as live:
        live.client().create_table(TableName="pipe", BillingMode="PAY_PER_REQUEST",
                                   KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                                   AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        yield live


def test_keep_alive_serves_many_requests_on_one_connection(any_server):
    with connect(any_server) as sock:
        for value in range(20):
            sock.sendall(put("pipe", value))
            (status, headers, _), = read_responses(sock, 1)
            assert status.startswith(b"HTTP/1.1 200") and b"connection" not in headers
            sock.sendall(get("pipe"))
            (_, _, body), = read_responses(sock, 1)
            assert json.loads(body)["Item"]["v"] == {"N": str(value)}


def test_pipelined_writes_and_reads_are_answered_in_order(any_server):
    """Each read sees the write before it, and the answers come back in request order (with fsync waits)."""
    health = b"GET /_dynalocal/health HTTP/1.1\r\nHost: x\r\n\r\n"
    stream = b"".join(put("pipe", v) + get("pipe") + (health if v % 10 == 0 else b"") for v in range(60))
    with connect(any_server) as sock:
        sock.sendall(stream)
        answers = read_responses(sock, 126)
    values = [json.loads(body)["Item"]["v"]["N"] for _, headers, body in answers if b'"Item"' in body]
    assert values == [str(v) for v in range(60)]
    assert [b'"status"' in body for _, _, body in answers] == [
        kind == "health" for v in range(60) for kind in ("put", "get") + (("health",) if v % 10 == 0 else ())]


@pytest.mark.parametrize("trailing", ["complete", "cut-off request"])
def test_half_closed_client_gets_every_answer(any_server, trailing):
    """A client that sends its pipelined requests and then shuts down its side still gets all 100 answers."""
    stream = b"".join(put("pipe", v) + get("pipe") for v in range(50))
    if trailing == "cut-off request":
        stream += put("pipe", 999)[:-5]  # never completed: never run
    with connect(any_server) as sock:
        sock.sendall(stream)
        sock.shutdown(socket.SHUT_WR)
        answers = read_responses(sock, None)  # until the server closes
    assert len(answers) == 100 and all(a[0].startswith(b"HTTP/1.1 200") for a in answers)
    assert [json.loads(a[2])["Item"]["v"]["N"] for a in answers[1::2]] == [str(v) for v in range(50)]
    assert any_server.client().get_item(TableName="pipe", Key={"pk": {"S": "k"}})["Item"]["v"] == {"N": "49"}


def test_a_request_after_connection_close_is_not_run(server, make_table):
    table = make_table([("pk", "HASH")], [("pk", "S")])
    with connect(server) as sock:
        sock.sendall(request(extra="Connection: close\r\n") + put(table, 1))
        answers = read_responses(sock, None)
    assert len(answers) == 1 and answers[0][1][b"connection"] == b"close"
    assert "Item" not in server.client().get_item(TableName=table, Key={"pk": {"S": "k"}})


# -- deadlines and limits ---------------------------------------------------------------------

def closed_within(sock: socket.socket, seconds: float) -> bytes:
    sock.settimeout(seconds)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_stalled_body_gets_408_after_earlier_pipelined_answers():
    with LiveServer(request_timeout=1.0) as live, connect(live) as sock:
        sock.sendall(request() + request()[:-3])
        data = closed_within(sock, 10)
    assert data.count(b"HTTP/1.1 200") == 1 and data.index(b"HTTP/1.1 200") < data.index(b"HTTP/1.1 408")
    assert b"RequestTimeoutException" in data


def test_408_carries_a_request_id_and_the_crc_of_its_body_like_every_answer():
    import zlib

    with LiveServer(request_timeout=1.0) as live, connect(live) as sock:
        sock.sendall(request()[:-3])
        data = closed_within(sock, 10)
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = dict(line.split(b": ", 1) for line in lines)
    assert status == b"HTTP/1.1 408 Request Timeout" and headers[b"connection"] == b"close"
    assert len(headers[b"x-amzn-requestid"]) == 52 and int(headers[b"content-length"]) == len(body)
    assert int(headers[b"x-amz-crc32"]) == zlib.crc32(body) and b"RequestTimeoutException" in body


def test_body_over_16_mib_is_refused_while_it_streams_and_the_connection_stays_usable(server):
    chunk = b" " * (1024 * 1024)
    with connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
                     b"Content-Type: application/x-amz-json-1.0\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(16):
            sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        sock.sendall(b"1\r\n \r\n")  # one byte over the limit: refused before the body ends
        (refused, _, _), = read_responses(sock, 1)
        assert refused.startswith(b"HTTP/1.1 413")
        for _ in range(3):  # the rest of the body is read and dropped
            sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        sock.sendall(b"0\r\n\r\n" + request())
        (status, _, body), = read_responses(sock, 1)
    assert status.startswith(b"HTTP/1.1 200") and b"TableNames" in body


def test_oversized_head_and_malformed_requests_get_an_error_and_a_close(server):
    for raw, status in [(b"POST / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n", b"431"),
                        (b"BREW /pot HTCPCP/1.0\r\n\r\n", b"400"),
                        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n", b"400")]:
        with connect(server) as sock:
            try:
                sock.sendall(raw)
            except OSError:
                pass  # the server may answer and stop reading before the whole head is sent
            answers = read_responses(sock, None)
        assert [a[0].split(b" ")[1] for a in answers] == [status]


# -- the Host check -------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000", "localhost.attacker.example",
                                  "127.0.0.1.nip.io"])
def test_a_foreign_host_is_refused_on_a_loopback_bind_and_nothing_runs(server, make_table, host):
    table = make_table([("pk", "HASH")], [("pk", "S")])
    health = f"GET /_dynalocal/health HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    reset = f"POST /_dynalocal/reset HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n".encode()
    write = put(table, 1).replace(b"Host: x\r\n", f"Host: {host}\r\n".encode())
    with connect(server) as sock:
        sock.sendall(write + health + reset + request())
        answers = read_responses(sock, 4)
    for status, headers, body in answers[:3]:
        assert status.startswith(b"HTTP/1.1 400")
        assert json.loads(body)["__type"] == "com.amazon.coral.service#AccessDeniedException"
        assert f"Host '{host}' is not allowed" in json.loads(body)["message"]  # issue 28: spelled as the other refusals
    assert answers[3][0].startswith(b"HTTP/1.1 200")  # the connection keeps serving allowed names
    assert "Item" not in server.client().get_item(TableName=table, Key={"pk": {"S": "k"}})
    assert table in server.client().list_tables()["TableNames"]


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:8000", "app.localhost", "127.0.0.1", "127.0.0.1:9",
                                  "[::1]:8000", "10.1.2.3", "x"])
def test_loopback_names_ip_addresses_and_allowed_names_are_served(server, host):
    with connect(server) as sock:
        sock.sendall(request(host=host))
        (status, _, body), = read_responses(sock, 1)
    assert status.startswith(b"HTTP/1.1 200") and b"TableNames" in body


def test_a_non_loopback_bind_serves_any_host():
    port = free_port()
    http = HttpServer(create_app(Context()), "0.0.0.0", port)
    thread = threading.Thread(target=http.run, kwargs={"signals": False}, daemon=True)
    thread.start()
    try:
        assert http.started.wait(10) and http.error is None
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(request(host="dynalocal:8000") + request(host="attacker.example"))
            answers = read_responses(sock, 2)
        assert all(a[0].startswith(b"HTTP/1.1 200") for a in answers)
    finally:
        http.stop()
        thread.join(10)


# -- plug-in points (exchange.Hooks) --------------------------------------------------------

def test_plug_ins_can_answer_rewrite_requests_and_decorate_answers():
    from dynalocal.http.exchange import Answer

    def before(req):
        if req.header(b"x-refuse"):
            return Answer(400, b'{"__type":"com.amazon.coral.service#MissingAuthenticationTokenException"}')
        if req.header(b"content-encoding") == b"reversed":
            req.body = req.body[::-1]
        if req.header(b"x-boom"):
            raise RuntimeError("a plug-in bug")
        return None

    def after(req, answer):
        return answer._replace(headers=answer.headers + b"access-control-allow-origin: *\r\n")

    with LiveServer() as live:
        for hooks in (live.server.hooks.before, live.server.hooks.after):
            hooks.clear()  # only this test's plug-ins (the wire ones would refuse the "reversed" encoding)
        live.server.hooks.before.append(before)
        live.server.hooks.after.append(after)
        with connect(live) as sock:
            sock.sendall(request(extra="X-Refuse: 1\r\n") + request(LIST[::-1], extra="Content-Encoding: reversed\r\n")
                         + request(extra="X-Boom: 1\r\n") + request())
            answers = read_responses(sock, 4)
    assert [a[0].split(b" ")[1] for a in answers] == [b"400", b"200", b"500", b"200"]
    assert b"MissingAuthenticationToken" in answers[0][2] and b"TableNames" in answers[1][2]
    assert b"InternalServerError" in answers[2][2]
    assert all(a[1][b"access-control-allow-origin"] == b"*" for a in answers)


def test_after_marked_plug_ins_run_only_on_answers_to_marked_requests():
    def before(req):
        if req.header(b"x-mark"):
            req.state = "marked"
        return None

    def after_marked(req, answer):
        return answer._replace(headers=answer.headers + b"x-decorated: " + req.state.encode() + b"\r\n")

    with LiveServer() as live:
        for hooks in (live.server.hooks.before, live.server.hooks.after, live.server.hooks.after_marked):
            hooks.clear()
        live.server.hooks.before.append(before)
        live.server.hooks.after_marked.append(after_marked)
        with connect(live) as sock:
            sock.sendall(request() + request(extra="X-Mark: 1\r\n") + request())
            answers = read_responses(sock, 3)
    assert [a[0].split(b" ")[1] for a in answers] == [b"200", b"200", b"200"]
    assert [a[1].get(b"x-decorated") for a in answers] == [None, b"marked", None]


# -- header names ------------------------------------------------------------------------------

def test_header_names_are_read_in_any_case_and_a_repeated_header_keeps_its_last_value(server):
    """SDKs spell header names differently (boto3 `X-Amz-Target`, the JS SDK `x-amz-target`); a
    header sent twice counts once, with its last value."""
    body = LIST
    mixed = (b"POST / HTTP/1.1\r\nhOsT: x\r\ncontent-TYPE: application/x-amz-json-1.0\r\n"
             b"x-AMZ-target: DynamoDB_20120810.ListTables\r\nCONTENT-LENGTH: %d\r\n" % len(body)
             + AUTH.encode() + b"\r\n" + body)
    twice = request(extra="X-Amz-Target: DynamoDB_20120810.DescribeLimits\r\n")
    twice_mixed_case = request(extra="x-amz-target: DynamoDB_20120810.Nope\r\n")
    with connect(server) as sock:
        sock.sendall(mixed + twice + twice_mixed_case)
        answers = read_responses(sock, 3)
    assert answers[0][0].split(b" ")[1] == b"200" and b"TableNames" in answers[0][2]
    assert answers[1][0].split(b" ")[1] == b"200" and b"AccountMaxReadCapacityUnits" in answers[1][2]
    assert answers[2][0].split(b" ")[1] == b"400" and b"UnknownOperationException" in answers[2][2]
