"""Sustained-load workloads that check every answer: the counter and the transfer workloads.

Used by test_sustained_load.py (bounded runs in the suite) and as a command for long soaks:

    python tests/e2e/soak.py counter --port 8000 --connections 16 --requests 2000000
    python tests/e2e/soak.py transfer --port 8000 --connections 16 --seconds 600 [--ballast]

Each connection is a raw keep-alive socket sending prebuilt requests (no SDK: the client must
not be the bottleneck). `counter`: every connection sends `SET #c = #c + :one` on one item;
any non-200 answer is a failure and the final counter must equal the successes. `transfer`:
half the connections move 1 between two of 20 accounts in a TransactWriteItems (conditioned on
funds), half read an account with a ConsistentRead GetItem and put it back conditioned on the
balance they read; an account missing from a GetItem, or any answer but 200 and the expected
condition failures, is a failure, and the sum of the balances must be conserved. `--ballast`
adds one connection reading a 390 KB item consistently (96 RRU a read) so that an on-demand
table grows (re-partitions) every second or so under `--throttling report` or `enforce`.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import socket
import threading
import time
from dataclasses import dataclass, field

AUTH = (b"AWS4-HMAC-SHA256 Credential=soak/20250101/us-east-1/dynamodb/aws4_request, "
        b"SignedHeaders=host, Signature=00")
_LENGTH = re.compile(rb"(?i)\r\ncontent-length: *(\d+)")
ACCOUNTS = 20
START_BALANCE = 1000


class Connection:
    """One keep-alive HTTP/1.1 connection sending DynamoDB requests, one at a time."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    @staticmethod
    def request(operation: str, body: dict) -> bytes:
        data = json.dumps(body).encode()
        return (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.0\r\n"
                b"X-Amz-Target: DynamoDB_20120810." + operation.encode() + b"\r\nAuthorization: " + AUTH +
                b"\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)

    def send(self, request: bytes) -> tuple[int, bytes]:
        self.sock.sendall(request)
        buf = self.buf
        while (end := buf.find(b"\r\n\r\n")) < 0:
            buf += self._recv()
        head = buf[:end]
        match = _LENGTH.search(head)
        length = int(match.group(1)) if match else 0
        body_start = end + 4
        while len(buf) < body_start + length:
            buf += self._recv()
        self.buf = buf[body_start + length:]
        return int(head[9:12]), buf[body_start:body_start + length]

    def call(self, operation: str, body: dict) -> tuple[int, dict]:
        status, raw = self.send(self.request(operation, body))
        return status, json.loads(raw) if raw else {}

    def _recv(self) -> bytes:
        chunk = self.sock.recv(262144)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


@dataclass
class Tally:
    """What the workers saw; `failures` keeps the first few unexpected answers."""

    ok: int = 0
    expected_refusals: int = 0
    missing: int = 0
    failures: list = field(default_factory=list)
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, what: str) -> None:
        with self.lock:
            self.failed += 1
            if len(self.failures) < 20:
                self.failures.append(what)


def create_table(conn: Connection, name: str) -> None:
    status, out = conn.call("CreateTable", {
        "TableName": name, "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "S"}]})
    assert status == 200, out


def partitions(port: int, table: str) -> int:
    """The table's partition count, from the admin endpoint (a new connection each time: a kept
    one would idle past the server's keep-alive timeout between asks)."""
    conn = Connection(port)
    conn.sock.sendall(b"GET /_dynalocal/tables HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status, raw = conn.send(b"")
    conn.close()
    assert status == 200, raw
    return next(t["partitions"] for t in json.loads(raw)["tables"] if t["name"] == table)


class Ballast(threading.Thread):
    """Consistent reads of one 390 KB item (96 RRU each), to make an on-demand table grow."""

    def __init__(self, port: int, table: str) -> None:
        super().__init__(daemon=True)
        self.conn = Connection(port)
        status, out = self.conn.call("PutItem", {"TableName": table, "Item": {
            "pk": {"S": "ballast"}, "sk": {"S": "0"}, "pad": {"S": "x" * 390_000}}})
        assert status == 200, out
        self.req = Connection.request("Query", {
            "TableName": table, "KeyConditionExpression": "pk = :p", "ConsistentRead": True, "Select": "COUNT",
            "ExpressionAttributeValues": {":p": {"S": "ballast"}}})
        self.stop = threading.Event()
        self.errors = 0

    def run(self) -> None:
        while not self.stop.is_set():
            status, _ = self.conn.send(self.req)
            self.errors += status != 200 and status != 400  # 400: a throttle under enforce

    def finish(self) -> None:
        self.stop.set()
        self.join(30)
        self.conn.close()


def _run(port: int, table: str, workers: list[threading.Thread], ballast: bool) -> list[int]:
    """Run the workers (and the ballast, when asked for) to the end; the table's partition
    counts seen before and after."""
    load = Ballast(port, table) if ballast else None
    counts = [partitions(port, table)]
    if load is not None:
        load.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if load is not None:
        load.finish()
    counts.append(partitions(port, table))
    return counts


def counter(port: int, connections: int, requests: int, table: str = "soak-counter",
            until=None, ballast: bool = False) -> tuple[Tally, int, list[int]]:
    """`requests` counter updates over `connections` connections (or, with `until`, as many as
    each sends before until() is true); return the tally, the final counter and the partition
    counts before and after."""
    setup = Connection(port)
    create_table(setup, table)
    key = {"pk": {"S": "counter"}, "sk": {"S": "0"}}
    status, out = setup.call("PutItem", {"TableName": table, "Item": {**key, "c": {"N": "0"}}})
    assert status == 200, out
    req = Connection.request("UpdateItem", {
        "TableName": table, "Key": key, "UpdateExpression": "SET #c = #c + :one",
        "ExpressionAttributeNames": {"#c": "c"}, "ExpressionAttributeValues": {":one": {"N": "1"}}})
    tally = Tally()

    def work(share: int) -> None:
        conn = Connection(port)
        ok = 0
        n = 0
        while (n < share) if until is None else not until():
            status, body = conn.send(req)
            n += 1
            if status == 200:
                ok += 1
            else:
                tally.fail(f"{status} {body[:200]!r}")
        with tally.lock:
            tally.ok += ok
        conn.close()

    shares = [requests // connections + (i < requests % connections) for i in range(connections)]
    setup.close()  # it would idle past the keep-alive timeout meanwhile
    counts = _run(port, table, [threading.Thread(target=work, args=(s,)) for s in shares], ballast)
    setup = Connection(port)
    status, out = setup.call("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True})
    setup.close()
    return tally, int(out["Item"]["c"]["N"]), counts


def transfer(port: int, connections: int, until, table: str = "soak-transfer", seed: int = 1,
             ballast: bool = False) -> tuple[Tally, int, int, list[int]]:
    """The transfer workload until until() is true; return the tally, the balances' sum, the
    number of accounts found at the end and the partition counts before and after."""
    setup = Connection(port)
    create_table(setup, table)

    def key(a: int) -> dict:
        return {"pk": {"S": f"account#{a:02d}"}, "sk": {"S": "0"}}

    for a in range(ACCOUNTS):
        status, out = setup.call("PutItem", {"TableName": table, "Item": {**key(a), "bal": {"N": str(START_BALANCE)},
                                                                          "v": {"N": "0"}}})
        assert status == 200, out
    tally = Tally()

    def mover(n: int) -> None:
        conn, rng = Connection(port), random.Random(seed * 1000 + n)
        ok = refused = 0
        while not until():
            a, b = rng.sample(range(ACCOUNTS), 2)
            status, out = conn.call("TransactWriteItems", {"TransactItems": [
                {"Update": {"TableName": table, "Key": key(a), "UpdateExpression": "SET bal = bal - :x",
                            "ConditionExpression": "bal >= :x", "ExpressionAttributeValues": {":x": {"N": "1"}}}},
                {"Update": {"TableName": table, "Key": key(b), "UpdateExpression": "SET bal = bal + :x",
                            "ConditionExpression": "attribute_exists(pk)",
                            "ExpressionAttributeValues": {":x": {"N": "1"}}}}]})
            if status == 200:
                ok += 1
            elif out.get("__type", "").endswith("TransactionCanceledException") and \
                    out["CancellationReasons"][0]["Code"] == "ConditionalCheckFailed" and \
                    out["CancellationReasons"][1]["Code"] == "None":
                refused += 1  # out of funds: the one expected refusal
            else:
                tally.fail(f"transfer {status} {out}")
        with tally.lock:
            tally.ok += ok
            tally.expected_refusals += refused
        conn.close()

    def toucher(n: int) -> None:
        conn, rng = Connection(port), random.Random(seed * 1000 + 500 + n)
        ok = refused = 0
        while not until():
            k = key(rng.randrange(ACCOUNTS))
            status, out = conn.call("GetItem", {"TableName": table, "Key": k, "ConsistentRead": True})
            if status != 200 or "Item" not in out:
                with tally.lock:
                    tally.missing += status == 200
                tally.fail(f"get {status} {out}")
                continue
            item = out["Item"]
            item["v"] = {"N": str(int(item["v"]["N"]) + 1)}
            status, out = conn.call("PutItem", {"TableName": table, "Item": item,
                                                "ConditionExpression": "bal = :b",
                                                "ExpressionAttributeValues": {":b": item["bal"]}})
            if status == 200:
                ok += 1
            elif out.get("__type", "").endswith("ConditionalCheckFailedException"):
                refused += 1  # cannot happen one request at a time, but is not a defect
            else:
                tally.fail(f"put {status} {out}")
        with tally.lock:
            tally.ok += ok
            tally.expected_refusals += refused
        conn.close()

    workers = [threading.Thread(target=mover if i % 2 == 0 else toucher, args=(i,)) for i in range(connections)]
    setup.close()  # it would idle past the keep-alive timeout meanwhile
    counts = _run(port, table, workers, ballast)
    setup = Connection(port)
    total = found = 0
    for a in range(ACCOUNTS):
        status, out = setup.call("GetItem", {"TableName": table, "Key": key(a), "ConsistentRead": True})
        if "Item" in out:
            found += 1
            total += int(out["Item"]["bal"]["N"])
    setup.close()
    return tally, total, found, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=("counter", "transfer"))
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--requests", type=int, default=100_000, help="counter: updates in all")
    parser.add_argument("--seconds", type=float, default=60.0, help="transfer: how long")
    parser.add_argument("--ballast", action="store_true", help="make the table grow meanwhile (see above)")
    parser.add_argument("--table", default=None)
    args = parser.parse_args()
    table = args.table or f"soak-{args.workload}-{int(time.time())}"
    start = time.time()
    if args.workload == "counter":
        tally, value, counts = counter(args.port, args.connections, args.requests, table, ballast=args.ballast)
        result = {"updates_ok": tally.ok, "failures": tally.failed, "counter": value,
                  "exact": value == tally.ok}
    else:
        deadline = start + args.seconds
        tally, total, found, counts = transfer(args.port, args.connections, lambda: time.time() >= deadline,
                                               table, ballast=args.ballast)
        result = {"requests_ok": tally.ok, "condition_refusals": tally.expected_refusals,
                  "missing_items": tally.missing, "failures": tally.failed, "accounts_found": found,
                  "sum": total, "conserved": total == ACCOUNTS * START_BALANCE}
    result["partitions"] = counts
    result["seconds"] = round(time.time() - start, 1)
    result["first_failures"] = tally.failures[:5]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
