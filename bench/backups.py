"""Backups and point-in-time recovery: backup and restore time of a large table, PITR history cost.

    python bench/backups.py [ITEMS] [--data-dir DIR]

Fills a table of ITEMS items (~120 bytes each, one GSI) directly through storage, then times
CreateBackup and RestoreTableFromBackup through boto3 (in memory, or with --data-dir, where the backup
file and the restored items are written durably). Then enables PITR on a fresh table and applies ITEMS
writes (puts of new and existing keys) through the table's write path, reporting the history's memory
(tracemalloc) and, with --data-dir, its file size, per million writes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path


from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.storage.mutation import Mutation
from dynalocal.testing import LocalServer
from dynalocal.values.keys import KeySchema


SCHEMA = KeySchema("pk", "S")


def _item(i: int, version: int = 0) -> tuple[bytes, tuple[bytes, int]]:
    item = {"pk": {"S": f"user#{i:09d}"}, "g": {"S": f"group#{i % 1000}"},
            "payload": {"S": f"v{version}-" + "x" * 64}}
    blob = json.dumps(item, separators=(",", ":")).encode()  # (orjson's bytes keep a 4 KB buffer: not a record's)
    return SCHEMA.encode_item(item), (blob, len(blob))


def _fill(ctx: Context, name: str, count: int) -> None:
    table = ctx.db.tables[name].table
    for i in range(count):
        key, record = _item(i)
        table.apply(Mutation(key, record))


def _pitr_writes(ctx: Context, creates: int, overwrites: int) -> tuple[float, int]:
    """`creates` puts of new keys, then `overwrites` puts over them (each leaves an old image in the
    history): (seconds for the overwrites, bytes they left allocated)."""
    table = ctx.db.tables["pitr"].table
    for i in range(creates):
        key, record = _item(i)
        table.apply(Mutation(key, record))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    for i in range(overwrites):
        key, record = _item(i % creates, 1)
        table.apply(Mutation(key, record))
    elapsed = time.perf_counter() - started
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return elapsed, kept


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("items", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    data_dir = args.data_dir
    if data_dir is not None:
        data_dir = tempfile.mkdtemp(dir=data_dir)
    ctx = Context(settings=Settings(data_dir=data_dir, throttling="off", pitr_lag_seconds=0))
    with LocalServer(ctx=ctx) as live:
        ddb = live.client(read_timeout=900, retries={"max_attempts": 0})
        ddb.create_table(TableName="big", BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                               {"AttributeName": "g", "AttributeType": "S"}],
                         GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [
                             {"AttributeName": "g", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}])
        started = time.perf_counter()
        live.call(lambda: _fill(ctx, "big", args.items), timeout=3600)
        ddb.create_table(TableName="barrier", BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        ddb.put_item(TableName="barrier", Item={"pk": {"S": "x"}})  # answered once the fill is durable too
        print(f"filled {args.items} items in {time.perf_counter() - started:.1f}s")
        started = time.perf_counter()
        arn = ddb.create_backup(TableName="big", BackupName="bench")["BackupDetails"]["BackupArn"]
        print(f"CreateBackup: {time.perf_counter() - started:.2f}s")
        started = time.perf_counter()
        ddb.restore_table_from_backup(TargetTableName="restored", BackupArn=arn)
        answered, slowest = time.perf_counter() - started, 0.0
        while True:  # a large restore loads in the background: poll (other requests are served meanwhile)
            asked = time.perf_counter()
            table = ddb.describe_table(TableName="restored")["Table"]
            slowest = max(slowest, time.perf_counter() - asked)
            if table["TableStatus"] == "ACTIVE":
                break
            time.sleep(0.05)
        print(f"RestoreTableFromBackup (items + GSI back-fill{', logged' if data_dir else ''}): answered in "
              f"{answered:.2f}s, ACTIVE after {time.perf_counter() - started:.2f}s; slowest DescribeTable meanwhile "
              f"{slowest * 1000:.0f} ms")
        count = table["ItemCount"]
        assert count == args.items, count
        ddb.create_table(TableName="pitr", BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        ddb.update_continuous_backups(TableName="pitr",
                                      PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
        history = ctx.db.histories["pitr"]
        half = args.items // 2
        elapsed, kept = live.call(lambda: _pitr_writes(ctx, half, args.items - half), timeout=3600)
        scale = 1_000_000 / (args.items - half)
        print(f"PITR history: {len(history.entries)} entries; {kept * scale / 2**20:.0f} MiB per million overwrites "
              f"(new records and history; the old images, ~{len(_item(0)[1][0])} B of JSON each, are now held only by "
              f"the history); "
              f"{elapsed / (args.items - half) * 1e6:.1f} us per write with the history (tracemalloc on)")
        if data_dir is not None:
            size = sum(p.stat().st_size for p in (Path(data_dir) / "pitr").iterdir())
            print(f"PITR history file: {size / 2**20:.0f} MiB for {len(history.entries)} entries, "
                  f"{size / len(history.entries) * 1e6 / 2**20:.0f} MiB per million writes")
            backup = sum(p.stat().st_size for p in (Path(data_dir) / "backups").iterdir())
            print(f"backup file: {backup / 2**20:.0f} MiB")
    if data_dir is not None:
        print(f"(data directory left at {data_dir})")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
