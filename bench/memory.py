"""Startup time, idle RSS, and memory per stored item for 1M items of about 200 bytes."""
from __future__ import annotations

import http.client
import statistics
import threading

import orjson

import peers
from workloads import PAYLOAD

STARTS = 5
LOADERS = 4


def _post(conn: http.client.HTTPConnection, target: str, body: bytes) -> dict:
    conn.request("POST", "/", body, {"Content-Type": "application/x-amz-json-1.0", "Authorization": peers.AUTH,
                                     "X-Amz-Target": "DynamoDB_20120810." + target})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{target} answered {resp.status}: {data[:200]!r}")
    return orjson.loads(data) if data else {}


def _load(port: int, table: str, start: int, stop: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for base in range(start, stop, 25):
        requests = [{"PutRequest": {"Item": {"pk": {"S": f"item-{i:08d}"}, "payload": {"S": PAYLOAD},
                                             "n": {"N": str(i)}}}} for i in range(base, min(base + 25, stop))]
        pending = {table: requests}
        while pending:
            pending = _post(conn, "BatchWriteItem", orjson.dumps({"RequestItems": pending})).get("UnprocessedItems")


def measure(items: int) -> dict:
    """Start dynalocal fresh several times, then fill one with `items` items and read its RSS."""
    startups, idle = [], []
    for _ in range(STARTS):
        target = peers.dynalocal()
        startups.append(target.start())
        idle.append(target.rss_mb())
        target.stop()
    target = peers.dynalocal("--throttling", "off")
    target.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", target.port)
        _post(conn, "CreateTable", orjson.dumps({
            "TableName": "mem", "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}))
        before = target.rss_mb()
        step = -(-items // LOADERS)
        threads = [threading.Thread(target=_load, args=(target.port, "mem", i * step, min(items, (i + 1) * step)))
                   for i in range(LOADERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = target.rss_mb()
        size = _post(conn, "DescribeTable", b'{"TableName":"mem"}')["Table"]
    finally:
        target.stop()
    return {"startup_s_median": statistics.median(startups), "startup_s_all": startups,
            "idle_rss_mb": statistics.median(idle), "items": size["ItemCount"],
            "item_bytes_avg": size["TableSizeBytes"] / max(1, size["ItemCount"]),
            "rss_before_mb": before, "rss_after_mb": after,
            "bytes_per_item": (after - before) * 1024 * 1024 / max(1, size["ItemCount"])}


def print_report(m: dict) -> None:
    print(f"\nstartup (process start to first answer): median {m['startup_s_median'] * 1000:.0f} ms over "
          f"{len(m['startup_s_all'])} starts; idle RSS {m['idle_rss_mb']:.1f} MB")
    print(f"{m['items']} items of {m['item_bytes_avg']:.0f} bytes (DynamoDB size): RSS {m['rss_before_mb']:.0f} -> "
          f"{m['rss_after_mb']:.0f} MB, {m['bytes_per_item']:.0f} bytes per item")
