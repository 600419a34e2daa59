"""A bulk load of 100,000 items from GZIP files with a few malformed lines, and bulk loads across restarts."""
from __future__ import annotations

import gzip
import json
import time

from conftest import LiveServer
from server_process import ServerProcess
from test_bulk import put_object, record, start, table, wait_done

ITEMS = 100_000
BAD = {(1, 7), (2, 12_345), (3, 24_999)}  # (file, line) of malformed lines


def test_100k_items_from_gzip_files_with_malformed_lines(tmp_path, figure):
    for part in range(4):
        lines = [record(i) for i in range(part * 25_000, (part + 1) * 25_000)]
        for file, line in BAD:
            if file == part:
                lines.insert(line - 1, b'{"Item": {"pk": {"S": "broken"\n')
        put_object(tmp_path, "in", f"load/part-{part}.json.gz", gzip.compress(b"".join(lines), 1))
    (tmp_path / "out").mkdir()
    # Throttling off: this test is about counts, outputs and indexes; with `keys` the load is held to the
    # partition ceilings of a new on-demand table and its GSI (about 5,000 items/s here), as any writes are.
    with LiveServer(s3_dir=str(tmp_path), throttling="off") as live:
        ddb = live.client()
        name = table(ddb, "big", gsi=True)
        began = time.monotonic()
        arn = start(ddb, name, "load/", compression="GZIP",
                    OutputS3Configuration={"S3Bucket": "out", "OutputType": ["ERROR"]})
        assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"  # served while it runs
        desc = wait_done(ddb, arn, timeout=60)
        seconds = time.monotonic() - began
        assert desc["BulkOperationStatus"] == "COMPLETED_WITH_ERRORS"
        assert (desc["ProcessedItemCount"], desc["FailedItemCount"]) == (ITEMS + len(BAD), len(BAD))
        usage = desc["BulkOperationUsage"][0]
        assert usage["GlobalSecondaryIndexes"]["byg"]["BulkPutBytes"] == usage["Table"]["BulkPutBytes"] > 0
        assert ddb.describe_table(TableName=name)["Table"]["ItemCount"] == ITEMS
        page = ddb.query(TableName=name, IndexName="byg", KeyConditionExpression="g = :g",
                         ExpressionAttributeValues={":g": {"S": "g3"}}, Select="COUNT")
        assert page["Count"] == ITEMS // 1000
        job_id = arn.rsplit("/", 1)[1]
        errors = (tmp_path / "out" / "AWSDynamoDB" / "bulk" / job_id / "ERROR" / "part-00000.json").read_text()
        found = {(e["ObjectKey"], e["Line"]) for e in map(json.loads, errors.splitlines())}
        assert found == {(f"load/part-{file}.json.gz", line) for file, line in BAD}
        figure(f"bulk put: {ITEMS / seconds:,.0f} items/s")


def test_operations_survive_a_restart_and_an_interrupted_one_is_failed(tmp_path):
    s3, data = tmp_path / "s3", tmp_path / "data"
    put_object(s3, "in", "a/x.json", b"".join(record(i) for i in range(100)))
    put_object(s3, "in", "slow/x.json", b"".join(record(i) for i in range(10_000)))
    (s3 / "out").mkdir()
    with LiveServer(s3_dir=str(s3), data_dir=str(data)) as live:
        ddb = live.client()
        table(ddb, "kept")
        table(ddb, "slow")
        done = wait_done(ddb, start(ddb, "kept", "a/"))
        slow = start(ddb, "slow", "slow/", MaxWriteRequestUnits=1024)  # ~10 s: stopped long before
        deadline = time.monotonic() + 10
        while ddb.describe_bulk_operation(BulkOperationArn=slow)["BulkOperationDescription"]["ProcessedItemCount"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    with LiveServer(s3_dir=str(s3), data_dir=str(data)) as live:
        ddb = live.client()
        again = ddb.describe_bulk_operation(BulkOperationArn=done["BulkOperationArn"])["BulkOperationDescription"]
        assert again["BulkOperationStatus"] == "COMPLETED" and again["ProcessedItemCount"] == 100
        assert ddb.describe_table(TableName="kept")["Table"]["ItemCount"] == 100
        stopped = ddb.describe_bulk_operation(BulkOperationArn=slow)["BulkOperationDescription"]
        assert (stopped["BulkOperationStatus"], stopped["FailureCode"]) == ("FAILED", "INTERRUPTED")
        assert 0 < ddb.describe_table(TableName="slow")["Table"]["ItemCount"] < 10_000
        listed = {s["BulkOperationArn"] for s in ddb.list_bulk_operations()["BulkOperationsSummaryList"]}
        assert listed == {done["BulkOperationArn"], slow}


def test_after_kill_9_a_running_load_is_failed_and_its_acknowledged_items_stay(tmp_path):
    s3 = tmp_path / "s3"
    put_object(s3, "in", "slow/x.json", b"".join(record(i) for i in range(10_000)))
    server = ServerProcess(tmp_path / "data", "--s3-dir", str(s3), log_path=tmp_path / "server.log").start()
    try:
        ddb = server.client()
        table(ddb, "killed")
        ddb.put_item(TableName="killed", Item={"pk": {"S": "before"}})  # acknowledged: durable
        arn = start(ddb, "killed", "slow/", OutputS3Configuration={"OutputType": []}, MaxWriteRequestUnits=1024)
        deadline = time.monotonic() + 10
        describe = ddb.describe_bulk_operation
        while describe(BulkOperationArn=arn)["BulkOperationDescription"]["ProcessedItemCount"] < 1000:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        server.kill()
        ddb = server.start().client()
        desc = ddb.describe_bulk_operation(BulkOperationArn=arn)["BulkOperationDescription"]
        assert (desc["BulkOperationStatus"], desc["FailureCode"]) == ("FAILED", "INTERRUPTED")
        assert "EndTime" in desc
        assert ddb.get_item(TableName="killed", Key={"pk": {"S": "before"}})["Item"]
        assert 0 < ddb.describe_table(TableName="killed")["Table"]["ItemCount"] < 10_001
    finally:
        server.kill()
