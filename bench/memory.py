"""Startup time (empty, and on a snapshot of 1M items), idle RSS, memory per stored item for 1M items of
~200 bytes, and Query latency by table size.

The 1M items are 10,000 partition keys x 100 sort keys, so the same server then answers
Queries of 100 items from a 1M-item table and from a 1k-item table, measured end to end
with wrk, interleaved.
"""
from __future__ import annotations

import http.client
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import orjson

import loadgen
import peers
from workloads import PAYLOAD, Workload

STARTS = 7
LOADERS = 4
ITEM_PAYLOAD = PAYLOAD + "." * 28  # items of ~200 bytes (DynamoDB size), as the memory target says
SNAPSHOT_STARTS = 3


def _post(conn: http.client.HTTPConnection, target: str, body: bytes) -> dict:
    conn.request("POST", "/", body, {"Content-Type": "application/x-amz-json-1.0", "Authorization": peers.AUTH,
                                     "X-Amz-Target": "DynamoDB_20120810." + target})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{target} answered {resp.status}: {data[:200]!r}")
    return orjson.loads(data) if data else {}


PER_KEY = 100
QUERY_ROUNDS = 3


def _load(port: int, table: str, start: int, stop: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for base in range(start, stop, 25):
        requests = [{"PutRequest": {"Item": {"pk": {"S": f"p-{i // PER_KEY:07d}"}, "sk": {"N": str(i % PER_KEY)},
                                             "payload": {"S": ITEM_PAYLOAD}}}} for i in range(base, min(base + 25, stop))]
        pending = {table: requests}
        while pending:
            pending = _post(conn, "BatchWriteItem", orjson.dumps({"RequestItems": pending})).get("UnprocessedItems")


def startup(starts: int = STARTS) -> tuple[list[float], list[float]]:
    """Start dynalocal fresh `starts` times: seconds to the first answer and idle RSS (MB) of each.

    One untimed start comes first, so that bytecode caches are written as an installation's are.
    """
    warmup = peers.dynalocal()
    warmup.start()
    warmup.stop()
    startups, idle = [], []
    for _ in range(starts):
        target = peers.dynalocal()
        startups.append(target.start())
        idle.append(target.rss_mb())
        target.stop()
    return startups, idle


def measure(items: int) -> dict:
    """Start dynalocal fresh several times, then fill one with `items` items and read its RSS."""
    startups, idle = startup()
    target = peers.dynalocal("--throttling", "off")
    target.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", target.port)
        for name in ("mem", "small"):
            _post(conn, "CreateTable", orjson.dumps({
                "TableName": name, "BillingMode": "PAY_PER_REQUEST",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                         {"AttributeName": "sk", "AttributeType": "N"}]}))
        _load(target.port, "small", 0, 1000)
        before = target.rss_mb()
        step = -(-items // LOADERS)
        threads = [threading.Thread(target=_load, args=(target.port, "mem", i * step, min(items, (i + 1) * step)))
                   for i in range(LOADERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = target.rss_mb()
        rest = _at_rest(target)
        conn = http.client.HTTPConnection("127.0.0.1", target.port)  # the first one idled past keep-alive
        size = _post(conn, "DescribeTable", b'{"TableName":"mem"}')["Table"]
        latency = _query_latency(target.url, size["ItemCount"] // PER_KEY)
    finally:
        target.stop()
    return {"startup_s_median": statistics.median(startups), "startup_s_all": startups,
            "idle_rss_mb": statistics.median(idle), "items": size["ItemCount"],
            "item_bytes_avg": size["TableSizeBytes"] / max(1, size["ItemCount"]),
            "rss_before_mb": before, "rss_after_mb": after, "rss_rest_mb": rest,
            "bytes_per_item_at_once": (after - before) * 1024 * 1024 / max(1, size["ItemCount"]),
            "bytes_per_item": (rest - before) * 1024 * 1024 / max(1, size["ItemCount"]), **latency}


def _at_rest(target: peers.Target, quiet: float = 6.0, deadline: float = 30.0) -> float:
    """The server's RSS (MB) once it has stayed within 1 MB for `quiet` seconds after a fill: what it holds
    once its heap thread has returned the fill's free pages (http/hugepages.py), within `deadline` s."""
    readings = [(time.monotonic(), target.rss_mb())]
    while readings[-1][0] - readings[0][0] < deadline:
        time.sleep(0.5)
        readings.append((time.monotonic(), target.rss_mb()))
        recent = [rss for at, rss in readings if at >= readings[-1][0] - quiet]
        if readings[-1][0] - readings[0][0] >= quiet and max(recent) - min(recent) < 1.0:
            break
    return readings[-1][1]


def snapshot_startup(items: int) -> dict:
    """Start-up on a data directory whose snapshot holds `items` items of ~200 bytes (what a clean stop
    leaves): the median over SNAPSHOT_STARTS starts of the seconds from spawn to the first answer that
    shows every item (bench/recovery.py builds the directory in process and times the starts)."""
    import recovery  # bench/recovery.py

    directory = Path(tempfile.mkdtemp(prefix="dynalocal-bench-startup-"))
    try:
        recovery.build(directory, items, 0, 200, snapshot=True)
        seconds = []
        for _ in range(SNAPSHOT_STARTS):
            elapsed, count, _ = recovery.time_startup(directory)
            if count != items:
                raise RuntimeError(f"start-up recovered {count} items, expected {items}")
            seconds.append(elapsed)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {"snapshot_items": items, "snapshot_startup_s": statistics.median(seconds),
            "snapshot_startup_s_all": seconds}


def _query(table: str, keys: int) -> Workload:
    return Workload(f"Query {table}", "Query",
                    f"string.format('{{\"TableName\":\"{table}\",\"KeyConditionExpression\":\"pk = :p\","
                    f"\"ExpressionAttributeValues\":{{\":p\":{{\"S\":\"p-%07d\"}}}}}}', math.random(0, {keys - 1}))")


def _query_latency(url: str, big_keys: int) -> dict:
    """p50 latency of 100-item Queries on the 1k-item and the 1M-item table, interleaved rounds."""
    small, big = [], []
    for _ in range(QUERY_ROUNDS):
        small.append(loadgen.run(url, _query("small", 10).script(), 3, connections=1).p50_ms)
        big.append(loadgen.run(url, _query("mem", big_keys).script(), 3, connections=1).p50_ms)
    return {"query_p50_ms_1k": statistics.median(small), "query_p50_ms_1m": statistics.median(big),
            "query_latency_ratio_1m_1k": statistics.median(big) / statistics.median(small)}


def print_report(m: dict) -> None:
    print(f"\nstartup (process start to first answer): median {m['startup_s_median'] * 1000:.0f} ms over "
          f"{len(m['startup_s_all'])} starts; idle RSS {m['idle_rss_mb']:.1f} MB")
    print(f"{m['items']} items of {m['item_bytes_avg']:.0f} bytes (DynamoDB size): RSS {m['rss_before_mb']:.0f} -> "
          f"{m['rss_after_mb']:.0f} MB right after the fill ({m['bytes_per_item_at_once']:.0f} bytes per item), "
          f"{m['rss_rest_mb']:.0f} MB at rest: {m['bytes_per_item']:.0f} bytes per item")
    if "snapshot_startup_s" in m:
        print(f"start-up on a snapshot of {m['snapshot_items']} items (spawn to first answer): median "
              f"{m['snapshot_startup_s']:.2f} s ({', '.join(f'{t:.2f}' for t in m['snapshot_startup_s_all'])})")
    print(f"Query of 100 items, p50 over HTTP (1 connection): 1k-item table {m['query_p50_ms_1k']:.3f} ms, "
          f"1M-item table {m['query_p50_ms_1m']:.3f} ms, ratio {m['query_latency_ratio_1m_1k']:.2f}")


if __name__ == "__main__":  # startup only: python bench/memory.py [starts]
    import sys

    times, rss = startup(int(sys.argv[1]) if len(sys.argv) > 1 else STARTS)
    print(f"startup (process start to first answer): median {statistics.median(times) * 1000:.0f} ms over "
          f"{len(times)} starts ({', '.join(f'{t * 1000:.0f}' for t in sorted(times))}); "
          f"idle RSS {statistics.median(rss):.1f} MB")
