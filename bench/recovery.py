"""Start-up time on a data directory of many items (1M of ~200 bytes by default).

Builds the directory in process (through the same storage code the server uses), then
times `python -m dynalocal --data-dir ...` from spawning the process to the first answered
DynamoDB request (a DescribeTable that reports the recovered item count). Scenarios:

    snapshot      a snapshot holding every item (what a clean shutdown leaves)
    snapshot+log  a snapshot plus a log tail of --tail-items single-item groups (a crash)
    log           every item in the log, no snapshot (a crash before any snapshot)

    .venv/bin/python bench/recovery.py [--items 1000000] [--scenarios snapshot snapshot+log log]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import socket
import string
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from peers import AUTH, server_env  # AUTH: a well-formed signature header, as SDKs send (--auth relaxed wants one)

from dynalocal.engine.caller import ANONYMOUS
from dynalocal.engine.context import Context
from dynalocal.engine.tables import create_table
from dynalocal.journal.snapshot import Image, write
from dynalocal.journal.tablemeta import encode_meta
from dynalocal.journal.wal import META, PUT, LogWriter, encode_group
from dynalocal.storage.mutation import Mutation
from dynalocal.values.attributes import validate_item
from dynalocal.values.blob import dumps

TABLE = {"TableName": "bench", "BillingMode": "PAY_PER_REQUEST",
         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
         "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "N"}]}


def records(count: int, item_bytes: int, start: int = 0):
    """(item, size) of `count` items of about `item_bytes` bytes each."""
    rng = random.Random(start)
    for i in range(start, start + count):
        item = {"pk": {"S": f"user-{i // 10:08d}"}, "sk": {"N": str(i % 10)},
                "data": {"S": "".join(rng.choices(string.ascii_letters, k=max(1, item_bytes - 40)))},
                "n": {"N": str(i)}}
        size = validate_item(item)
        yield item, size


def build(directory: Path, items: int, tail: int, item_bytes: int, snapshot: bool) -> None:
    """Write the data directory for one scenario."""
    ctx = Context()
    create_table(ctx, ANONYMOUS, json.loads(json.dumps(TABLE)))
    entry = ctx.db.tables["bench"]
    table = entry.table
    in_snapshot = items - tail if snapshot else 0
    for item, size in records(in_snapshot, item_bytes):
        table.apply(Mutation(table.schema.check_item(item), (dumps(item), size), item))
    generation = 0
    if snapshot:
        image = Image()
        for _ in image.capture(ctx.db):
            pass
        generation = 1
        write(image, directory, generation)
    writer = LogWriter(directory, generation)
    if not snapshot:
        writer.append(encode_group([(META, "bench", encode_meta(entry), None)]))
    for item, size in records(items - in_snapshot, item_bytes, start=in_snapshot):
        key = table.schema.check_item(item)
        writer.append(encode_group([(PUT, "bench", key, (dumps(item), size))]))
    writer.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_startup(directory: Path | None) -> tuple[float, int, str]:
    """(seconds from spawn to the first answered request, items it reported, the server's recovery line)."""
    port = free_port()
    command = [sys.executable, "-m", "dynalocal", "--port", str(port), "--log-level", "info"]
    if directory is not None:
        command += ["--data-dir", str(directory), "--snapshot-mb", "100000"]  # no snapshot during the measurement
    request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=json.dumps({"TableName": "bench"}).encode(),
                                     headers={"X-Amz-Target": "DynamoDB_20120810.DescribeTable",
                                              "Content-Type": "application/x-amz-json-1.0", "Authorization": AUTH})
    log = tempfile.TemporaryFile()
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=log, stderr=log, env=server_env())
    try:
        while True:
            try:
                with urllib.request.urlopen(request, timeout=5) as resp:
                    answer = json.loads(resp.read())
                elapsed = time.perf_counter() - started
                break
            except urllib.error.HTTPError as err:
                err.read()
                if err.code == 503:  # the port answers while the data directory loads: not ready yet
                    time.sleep(0.01)
                    continue
                elapsed, answer = time.perf_counter() - started, {"Table": {"ItemCount": 0}}  # no such table
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("server exited during start-up")
                time.sleep(0.01)
    finally:
        proc.kill()  # SIGKILL: no shutdown snapshot, the directory stays as built
        proc.wait()
    log.seek(0)
    line = next((m.group(0) for m in re.finditer(r"recovered .*", log.read().decode())), "")
    return elapsed, answer["Table"]["ItemCount"], line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--item-bytes", type=int, default=200)
    parser.add_argument("--tail-items", type=int, default=250_000,
                        help="log tail of the snapshot+log scenario (default: about the 64 MiB --snapshot-mb allows)")
    parser.add_argument("--scenarios", nargs="+", default=["snapshot", "snapshot+log", "log"],
                        choices=["snapshot", "snapshot+log", "log"])
    parser.add_argument("--dir", default=None, help="where to build the data directories (default: temporary)")
    options = parser.parse_args()
    base = Path(options.dir or tempfile.mkdtemp(prefix="dynalocal-recovery-"))
    try:
        baseline, _, _ = time_startup(None)
        print(f"empty in-memory server: first answer after {baseline:.2f} s", flush=True)
        for scenario in options.scenarios:
            directory = base / scenario.replace("+", "-")
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            started = time.perf_counter()
            tail = {"snapshot": 0, "snapshot+log": options.tail_items, "log": options.items}[scenario]
            build(directory, options.items, tail, options.item_bytes, snapshot=scenario != "log")
            size = sum(p.stat().st_size for p in directory.iterdir())
            print(f"{scenario}: built {options.items} items, {size / 2**20:.0f} MiB on disk, "
                  f"in {time.perf_counter() - started:.0f} s", flush=True)
            elapsed, count, line = time_startup(directory)
            assert count == options.items, f"recovered {count} items, expected {options.items}"
            print(f"{scenario}: first answer after {elapsed:.2f} s ({count} items); server: {line}", flush=True)
    finally:
        if options.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
