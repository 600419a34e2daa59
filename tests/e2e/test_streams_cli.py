"""`dynalocal streams tail`: one JSON record per line, from the oldest record or from new ones."""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
import uuid


def _tail(url: str, table: str, start: str) -> tuple[subprocess.Popen, queue.Queue]:
    proc = subprocess.Popen([sys.executable, "-m", "dynalocal", "streams", "tail", table, "--from", start,
                             "--endpoint", url, "--poll", "0.05"], stdout=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    return proc, lines


def _table(ddb) -> str:
    name = f"tail-{uuid.uuid4().hex[:8]}"
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST",
                     StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
    return name


def test_tail_from_trim_horizon_prints_old_and_new_records_in_order(server, ddb):
    table = _table(ddb)
    ddb.put_item(TableName=table, Item={"pk": {"S": "x"}, "v": {"N": "1"}})
    proc, lines = _tail(server.url, table, "trim-horizon")
    try:
        first = json.loads(lines.get(timeout=30))
        ddb.put_item(TableName=table, Item={"pk": {"S": "x"}, "v": {"N": "2"}})
        ddb.delete_item(TableName=table, Key={"pk": {"S": "x"}})
        later = [json.loads(lines.get(timeout=30)) for _ in range(2)]
    finally:
        proc.kill()
        proc.wait(10)
    assert [r["eventName"] for r in [first, *later]] == ["INSERT", "MODIFY", "REMOVE"]
    assert later[0]["dynamodb"]["OldImage"]["v"] == {"N": "1"} and later[0]["dynamodb"]["NewImage"]["v"] == {"N": "2"}
    assert isinstance(first["dynamodb"]["ApproximateCreationDateTime"], float)


def test_tail_from_latest_skips_what_was_written_before(server, ddb):
    table = _table(ddb)
    ddb.put_item(TableName=table, Item={"pk": {"S": "before"}})
    proc, lines = _tail(server.url, table, "latest")
    try:
        deadline = time.monotonic() + 30
        got = None
        n = 0
        while got is None:  # the tail starts at some moment: write until it shows something
            assert time.monotonic() < deadline, "tail printed nothing"
            ddb.put_item(TableName=table, Item={"pk": {"S": f"after-{n}"}})
            n += 1
            try:
                got = json.loads(lines.get(timeout=0.5))
            except queue.Empty:
                pass
    finally:
        proc.kill()
        proc.wait(10)
    assert got["dynamodb"]["Keys"]["pk"]["S"].startswith("after-")


def test_the_stream_replicator_example_keeps_its_replica_in_sync():
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "stream_replicator.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300,
                          cwd=example.parent)
    assert done.returncode == 0, done.stderr
    assert "(2 closed parents); replica in sync: True" in done.stdout
