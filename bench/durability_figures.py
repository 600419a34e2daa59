"""Memory and disk figures of a data directory: RSS after load / delete all / reload, snapshot and log
size against the logical data size, start-up time (issue 28's "Memory and disk").

Loads N items (100-200 bytes logical each, 137 on average) over HTTP with BatchWriteItem (a few client threads, to a
`dynalocal --data-dir` subprocess), reads the server's RSS from /proc/<pid>/status after each phase,
and the sizes of `snapshot-*.snap` and `wal-*.log` in the directory. Logical size is the sum of
DynamoDB item sizes (values.attributes.item_size). Start-up: seconds from spawning the process to
the first answered DynamoDB request (the port open) and to the table answering with all its items.

    .venv/bin/python bench/durability_figures.py [--items 1000000] [--data-dir DIR] [--keep]
"""
from __future__ import annotations

import argparse
import http.client
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from dynalocal.values.attributes import item_size

HERE = Path(__file__).resolve().parent
AUTH = ("AWS4-HMAC-SHA256 Credential=bench/20250101/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host;x-amz-date;x-amz-target, Signature=00")
TABLE = "figures"
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
LOADERS = 3


def _payload(i: int) -> str:
    """60-160 characters of pseudo-random text (deterministic: a reload writes the same items), so that
    compression figures are not flattered by a repeated character."""
    rng = random.Random(i)
    return "".join(rng.choices(_ALPHABET, k=60 + i % 101))


def _item(i: int) -> dict:
    return {"pk": {"S": f"item-{i:07d}"}, "payload": {"S": _payload(i)}, "n": {"N": str(i)}}


def _key(i: int) -> dict:
    return {"pk": {"S": f"item-{i:07d}"}}


def _post(conn: http.client.HTTPConnection, target: str, body: dict) -> tuple[int, dict]:
    conn.request("POST", "/", orjson.dumps(body), {
        "Content-Type": "application/x-amz-json-1.0", "Authorization": AUTH, "X-Amz-Date": "20250101T000000Z",
        "X-Amz-Target": "DynamoDB_20120810." + target})
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, (orjson.loads(data) if data else {})


class Server:
    """One `dynalocal --data-dir` subprocess."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory, self.port = directory, port
        self.proc: subprocess.Popen | None = None

    def start(self) -> tuple[float, float]:
        """Spawn; return (seconds to the port's first answer, seconds until the table answers DescribeTable)."""
        exe = Path(sys.executable).with_name("dynalocal")
        started = time.perf_counter()
        self.proc = subprocess.Popen([str(exe), "--port", str(self.port), "--log-level", "warning",
                                      "--data-dir", str(self.directory), "--sync", "batch",
                                      "--throttling", "off"])
        first = None
        while time.perf_counter() - started < 300:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                status, _ = _post(conn, "ListTables", {})
                conn.close()
            except OSError:
                time.sleep(0.005)
                continue
            first = first or time.perf_counter() - started
            if status == 200:
                return first, time.perf_counter() - started
            time.sleep(0.005)
        raise RuntimeError("server did not become ready")

    def rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(300)


def _write(port: int, requests: list[dict]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for start in range(0, len(requests), 25):
        pending: dict | None = {TABLE: requests[start:start + 25]}
        while pending:
            status, answer = _post(conn, "BatchWriteItem", {"RequestItems": pending})
            if status != 200:
                raise RuntimeError(f"BatchWriteItem: {status} {answer}")
            pending = answer.get("UnprocessedItems")
    conn.close()


def _parallel(port: int, requests: list[dict]) -> float:
    started = time.perf_counter()
    share = -(-len(requests) // LOADERS)
    threads = [threading.Thread(target=_write, args=(port, requests[i * share:(i + 1) * share]))
               for i in range(LOADERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def disk(directory: Path) -> tuple[int, int]:
    """(snapshot bytes, log bytes) in the directory now (every generation kept)."""
    snap = sum(p.stat().st_size for p in directory.glob("snapshot-*.snap"))
    wal = sum(p.stat().st_size for p in directory.glob("wal-*.log"))
    return snap, wal


def _count(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    _, answer = _post(conn, "DescribeTable", {"TableName": TABLE})
    conn.close()
    return int(answer["Table"]["ItemCount"])


def run(items: int, directory: Path, port: int) -> dict:
    puts = [{"PutRequest": {"Item": _item(i)}} for i in range(items)]
    deletes = [{"DeleteRequest": {"Key": _key(i)}} for i in range(items)]
    logical = sum(item_size(_item(i)) for i in range(items))
    out: dict = {"items": items, "logical_mb": logical / 2**20}
    server = Server(directory, port)
    server.start()
    out["rss_empty_mb"] = server.rss_mb()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    _post(conn, "CreateTable", {"TableName": TABLE, "BillingMode": "PAY_PER_REQUEST",
                                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]})
    conn.close()
    out["load_seconds"] = _parallel(port, puts)
    out["rss_loaded_mb"] = server.rss_mb()
    out["disk_loaded_mb"] = [b / 2**20 for b in disk(directory)]
    out["delete_seconds"] = _parallel(port, deletes)
    out["rss_deleted_mb"] = server.rss_mb()
    out["disk_deleted_mb"] = [b / 2**20 for b in disk(directory)]
    out["reload_seconds"] = _parallel(port, puts)
    out["rss_reloaded_mb"] = server.rss_mb()
    out["disk_reloaded_mb"] = [b / 2**20 for b in disk(directory)]
    server.stop()
    snap, wal = disk(directory)
    newest = max(directory.glob("snapshot-*.snap")).stat().st_size
    out["after_clean_stop"] = {"snapshots_mb": snap / 2**20, "log_mb": wal / 2**20, "newest_snapshot_mb":
                               newest / 2**20, "snapshot_x_logical": newest / logical}
    port_open, ready = server.start()
    out["startup_from_snapshot"] = {"port_open_s": port_open, "ready_s": ready, "items": _count(port),
                                    "rss_mb": server.rss_mb()}
    server.stop(signal.SIGKILL)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--data-dir", type=Path, help="an empty directory to use (default: a temporary one)")
    parser.add_argument("--port", type=int, default=18765)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    directory = args.data_dir or Path(tempfile.mkdtemp(prefix="dynalocal-figures-"))
    if directory.exists() and any(directory.iterdir()):
        sys.exit(f"{directory} is not empty")
    try:
        print(orjson.dumps(run(args.items, directory, args.port), option=orjson.OPT_INDENT_2).decode())
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
