"""Hardening: size and depth limits answered early, slow and half-open clients cut off, no half-applied writes seen."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from server_process import ServerProcess

T = "DynamoDB_20120810."


def table_body(name: str) -> dict:
    return {"TableName": name, "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}


def error_type(body: bytes) -> str:
    return json.loads(body)["__type"].rsplit("#", 1)[-1]


def nested(kind: str, depth: int) -> str:
    inner = '{"S":"x"}'
    for _ in range(depth):
        inner = '{"M":{"m":%s}}' % inner if kind == "M" else '{"L":[%s]}' % inner
    return inner


@pytest.fixture(scope="module")
def limits_table(server):
    server.raw(T + "CreateTable", table_body("limits"))
    yield "limits"
    server.raw(T + "DeleteTable", {"TableName": "limits"})


@pytest.mark.parametrize("operation, body, status, error", [
    # JSON nested deeper than the parser allows
    ("PutItem", b'{"TableName":"limits","Item":' + b"[" * 5000 + b"]" * 5000 + b"}", 400, "SerializationException"),
    # attribute values nested deeper than DynamoDB's 32 levels, in an item and in expression values
    ("PutItem", ('{"TableName":"limits","Item":{"pk":{"S":"a"},"d":%s}}' % nested("M", 32)).encode(), 400,
     "ValidationException"),
    ("UpdateItem", ('{"TableName":"limits","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET d = :v",'
                    '"ExpressionAttributeValues":{":v":%s}}' % nested("L", 300)).encode(), 400, "ValidationException"),
    # expressions longer than 4 KB, with too many operators, or with paths nested too deep
    ("GetItem", json.dumps({"TableName": "limits", "Key": {"pk": {"S": "a"}},
                            "ProjectionExpression": ", ".join(["a"] * 2100)}).encode(), 400, "ValidationException"),
    ("DeleteItem", json.dumps({"TableName": "limits", "Key": {"pk": {"S": "a"}}, "ConditionExpression":
                               "NOT " * 900 + "a = :v", "ExpressionAttributeValues": {":v": {"S": "x"}}}).encode(),
     400, "ValidationException"),
    ("DeleteItem", json.dumps({"TableName": "limits", "Key": {"pk": {"S": "a"}}, "ConditionExpression":
                               "(" * 1500 + "a = :v" + ")" * 1500, "ExpressionAttributeValues": {":v": {"S": "x"}}}
                              ).encode(), 400, "ValidationException"),
    ("GetItem", json.dumps({"TableName": "limits", "Key": {"pk": {"S": "a"}},
                            "ProjectionExpression": "a" + "[1]" * 40}).encode(), 400, "ValidationException"),
    # more attributes or set members than fit in 400 KB
    ("PutItem", json.dumps({"TableName": "limits", "Item": {"pk": {"S": "a"},
                                                            **{f"a{i}": {"N": "1"} for i in range(60_000)}}}).encode(),
     400, "ValidationException"),
    ("PutItem", json.dumps({"TableName": "limits", "Item": {"pk": {"S": "a"},
                                                            "s": {"NS": [str(i) for i in range(200_000)]}}}).encode(),
     400, "ValidationException"),
    # numbers beyond DynamoDB's 38 digits / exponent range
    ("PutItem", json.dumps({"TableName": "limits", "Item": {"pk": {"S": "a"}, "n": {"N": "9" * 50_000}}}).encode(),
     400, "ValidationException"),
    ("PutItem", json.dumps({"TableName": "limits", "Item": {"pk": {"S": "a"}, "n": {"N": "1e999999999"}}}).encode(),
     400, "ValidationException"),
    # batch sizes
    ("BatchGetItem", json.dumps({"RequestItems": {"limits": {"Keys": [{"pk": {"S": str(i)}} for i in range(101)]}}}
                                ).encode(), 400, "ValidationException"),
    ("BatchWriteItem", json.dumps({"RequestItems": {"limits": [{"PutRequest": {"Item": {"pk": {"S": str(i)}}}}
                                                               for i in range(26)]}}).encode(), 400,
     "ValidationException"),
])
def test_oversized_and_overdeep_requests_get_dynamodb_errors_quickly(server, limits_table, operation, body, status,
                                                                    error):
    started = time.perf_counter()
    got, _, answer = server.raw(T + operation, body)
    assert (got, error_type(answer)) == (status, error), answer[:300]
    assert time.perf_counter() - started < 10
    assert server.raw(T + "GetItem", {"TableName": "limits", "Key": {"pk": {"S": "a"}}})[2] == b"{}"


def test_body_over_16_mib_is_refused_from_its_content_length_without_reading_it(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
                     b"Content-Type: application/x-amz-json-1.0\r\nContent-Length: 16777217\r\n\r\n{")
        assert sock.recv(100).startswith(b"HTTP/1.1 413")


def test_chunked_body_over_16_mib_is_refused(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
                     b"Content-Type: application/x-amz-json-1.0\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b" " * (1024 * 1024)
        try:
            for _ in range(17):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except OSError:
            pass  # the server may stop reading (and close) once it has answered
        assert sock.recv(100).startswith(b"HTTP/1.1 413")


# -- slow and half-open clients ---------------------------------------------------------------

@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    """A server with a 1 s request timeout and a 1 s keep-alive timeout."""
    base = tmp_path_factory.mktemp("strict")
    with ServerProcess(None, "--request-timeout", "1", "--keep-alive-timeout", "1",
                       log_path=base / "server.log") as proc:
        proc.client().create_table(**table_body("slow"))
        yield proc


def closed_within(sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    sock.settimeout(seconds)
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data, time.monotonic() - started
        data += chunk


def put_request(body: bytes, length: int | None = None) -> bytes:
    return (b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.PutItem\r\n"
            b"Authorization: AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, "
            b"SignedHeaders=host, Signature=00\r\n"
            b"Content-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\n\r\n" % (length or len(body))) + body


def item_exists(proc: ServerProcess, pk: str) -> bool:
    return "Item" in proc.client().get_item(TableName="slow", Key={"pk": {"S": pk}})


def test_stalled_body_is_answered_408_and_never_executed(strict):
    body = json.dumps({"TableName": "slow", "Item": {"pk": {"S": "stalled"}}}).encode()
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        sock.sendall(put_request(body[:-1], len(body)))  # the last byte never comes
        data, took = closed_within(sock, 5)
    assert data.startswith(b"HTTP/1.1 408") and b"RequestTimeoutException" in data
    assert 0.8 < took < 10
    time.sleep(0.2)
    assert not item_exists(strict, "stalled")


@pytest.mark.parametrize("sent", [b"", b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Tar"], ids=["nothing", "half-headers"])
def test_silent_or_half_open_connections_are_closed(strict, sent):
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        sock.sendall(sent)
        data, took = closed_within(sock, 5)
    assert data == b"" and 0.8 < took < 10


def test_idle_keep_alive_connection_is_closed(strict):
    body = json.dumps({"TableName": "slow", "Item": {"pk": {"S": "kept"}}}).encode()
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        sock.sendall(put_request(body))
        data, took = closed_within(sock, 5)
    assert data.startswith(b"HTTP/1.1 200") and took < 3  # closed after the 1 s keep-alive timeout
    assert item_exists(strict, "kept")


def test_client_that_disconnects_mid_body_has_nothing_executed(strict):
    body = json.dumps({"TableName": "slow", "Item": {"pk": {"S": "abandoned"}}}).encode() + b"   "
    with socket.create_connection(("127.0.0.1", strict.port)) as sock:
        sock.sendall(put_request(body[:-2], len(body)))  # a complete JSON document, but not the whole body
    time.sleep(0.3)
    assert not item_exists(strict, "abandoned")
    assert "Traceback" not in strict.log()


def test_server_keeps_serving_while_slow_clients_hang(server):
    """Clients stuck mid-request (here never timed out) do not hold up anyone else."""
    client = server.client()
    client.list_tables()
    hanging = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
    try:
        for n, sock in enumerate(hanging):
            sock.sendall(b"POST / HTTP/1.1\r\n" if n % 2 else put_request(b'{"TableName":', 100))
        started = time.monotonic()
        assert "TableNames" in client.list_tables()
        assert time.monotonic() - started < 5
    finally:
        for sock in hanging:
            sock.close()


# -- no half-applied write is ever visible ---------------------------------------------------------

def test_concurrent_readers_never_see_a_half_applied_write(server, make_table):
    """Single-item updates are atomic (DynamoDB's guarantee) and so is every dynalocal request as a whole.

    A BatchWriteItem that comes back with UnprocessedItems (throttled parts, DynamoDB's contract)
    was applied in part, and is resubmitted until done: until then its version may show beside
    another, so a mix is a failure only when it holds two versions whose batches were whole."""
    table = make_table([("pk", "HASH")], [("pk", "S")])
    client = server.client()
    versions = 40
    errors: list[str] = []
    split: set[str] = set()  # versions whose batch was applied in parts
    mixes: list[set[str]] = []  # versions seen together in one BatchGetItem
    stop = threading.Event()

    def writer(n: int) -> None:
        c = server.client()
        for v in range(versions):
            c.update_item(TableName=table, Key={"pk": {"S": "one"}}, UpdateExpression="SET a = :v, b = :v, c = :v "
                          "ADD n :one", ExpressionAttributeValues={":v": {"S": f"{n}-{v}"}, ":one": {"N": "1"}})
            pending = {table: [{"PutRequest": {"Item": {"pk": {"S": f"batch-{i}"}, "v": {"S": f"{n}-{v}"}}}}
                               for i in range(25)]}
            for attempt in range(50):
                pending = c.batch_write_item(RequestItems=pending).get("UnprocessedItems")
                if not pending:
                    break
                split.add(f"{n}-{v}")
                time.sleep(0.01 * attempt)  # back off as the SDKs do
            else:
                errors.append(f"batch {n}-{v} still unprocessed after 50 attempts")

    def reader() -> None:
        c = server.client()
        last = 0
        while not stop.is_set():
            got = c.get_item(TableName=table, Key={"pk": {"S": "one"}}).get("Item")
            if got:
                if not got["a"] == got["b"] == got["c"]:
                    errors.append(f"half-applied update seen: {got}")
                if int(got["n"]["N"]) < last:
                    errors.append("counter went backwards")
                last = int(got["n"]["N"])
            batch = c.batch_get_item(RequestItems={table: {"Keys": [{"pk": {"S": f"batch-{i}"}} for i in range(25)]}})
            seen = {i["v"]["S"] for i in batch["Responses"][table]}
            if len(seen) > 1:
                mixes.append(seen)  # judged at the end, once `split` is complete

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in writers + readers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    errors += [f"half-applied batch seen: {seen}" for seen in mixes if len(seen - split) > 1]
    assert errors == []
    final = client.get_item(TableName=table, Key={"pk": {"S": "one"}})["Item"]
    assert final["n"] == {"N": str(4 * versions)}  # no lost increments
