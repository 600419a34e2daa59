"""Bulk put operations end to end through boto3, reading from the --s3-dir stand-in."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard
from botocore.exceptions import ClientError
from conftest import LiveServer
from stream_reader import streams_client

TERMINAL = {"COMPLETED", "COMPLETED_WITH_ERRORS", "FAILED", "CANCELLED"}


def wait_done(ddb, arn: str, timeout: float = 30.0) -> dict:
    """Poll DescribeBulkOperation until the operation ends (or fail after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        desc = ddb.describe_bulk_operation(BulkOperationArn=arn)["BulkOperationDescription"]
        if desc["BulkOperationStatus"] in TERMINAL:
            return desc
        assert time.monotonic() < deadline, f"still {desc['BulkOperationStatus']} after {timeout}s"
        time.sleep(0.02)


def record(i: int, **extra) -> bytes:
    item = {"pk": {"S": f"k{i}"}, "n": {"N": str(i)}, "g": {"S": f"g{i % 1000}"}}
    return json.dumps({"Item": item, **extra}).encode() + b"\n"


def put_object(root: Path, bucket: str, key: str, data: bytes) -> None:
    path = root / bucket / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def start(ddb, table: str, prefix: str, bucket: str = "in", compression: str = "NONE", **kwargs) -> str:
    kwargs.setdefault("OutputS3Configuration", {"S3Bucket": "out", "S3KeyPrefix": "results",
                                                "OutputType": ["ERROR", "CONDITION_CHECK_FAILURE"]})
    desc = ddb.start_bulk_put_items(TableName=table, InputS3Configuration={
        "S3Bucket": bucket, "S3KeyPrefix": prefix, "InputFormat": "DYNAMODB_JSON",
        "InputCompressionType": compression}, **kwargs)["BulkOperationDescription"]
    return desc["BulkOperationArn"]


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("s3")
    (root / "in").mkdir()
    (root / "out").mkdir()
    return root


@pytest.fixture(scope="module")
def live(s3):
    with LiveServer(s3_dir=str(s3)) as server:
        yield server


@pytest.fixture(scope="module")
def ddb(live):
    return live.client()


def table(ddb, name: str, gsi: bool = False) -> str:
    args: dict = {}
    defs = [{"AttributeName": "pk", "AttributeType": "S"}]
    if gsi:
        defs.append({"AttributeName": "g", "AttributeType": "S"})
        args["GlobalSecondaryIndexes"] = [{"IndexName": "byg", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                           "Projection": {"ProjectionType": "ALL"}}]
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=defs, BillingMode="PAY_PER_REQUEST", **args)
    return name


def test_a_small_load_writes_every_item_and_reports_counts(ddb, s3):
    put_object(s3, "in", "small/a.json", b"".join(record(i) for i in range(20)))
    put_object(s3, "in", "small/b.json", b"".join(record(i) for i in range(20, 30)))
    arn = start(ddb, table(ddb, "bulk-small"), "small/")
    desc = wait_done(ddb, arn)
    assert desc["BulkOperationStatus"] == "COMPLETED"
    assert desc["ProcessedItemCount"] == 30 and desc["FailedItemCount"] == 0
    assert desc["TotalInputBytes"] == desc["ProcessedInputBytes"] > 0
    assert desc["BulkOperationUsage"][0]["BulkPutBytes"] > 0
    assert ddb.describe_table(TableName="bulk-small")["Table"]["ItemCount"] == 30
    assert ddb.get_item(TableName="bulk-small", Key={"pk": {"S": "k25"}})["Item"]["n"] == {"N": "25"}


def test_malformed_lines_and_failed_conditions_go_to_the_output_prefix(ddb, s3):
    name = table(ddb, "bulk-errors")
    ddb.put_item(TableName=name, Item={"pk": {"S": "k1"}, "n": {"N": "-1"}})
    lines = [record(0), b"{not json\n", record(1, ConditionExpression="attribute_not_exists(pk)"),
             json.dumps({"Item": {"n": {"N": "1"}}}).encode() + b"\n", record(2)]
    put_object(s3, "in", "errors/data.json", b"".join(lines))
    desc = wait_done(ddb, start(ddb, name, "errors/"))
    assert desc["BulkOperationStatus"] == "COMPLETED_WITH_ERRORS"
    assert desc["ProcessedItemCount"] == 5 and desc["FailedItemCount"] == 2
    job_id = desc["BulkOperationArn"].rsplit("/", 1)[1]
    out = s3 / "out" / "results" / "AWSDynamoDB" / "bulk" / job_id
    errors = [json.loads(x) for x in (out / "ERROR" / "part-00000.json").read_text().splitlines()]
    assert [(e["Line"], e["ErrorCode"]) for e in errors] == [(2, "MalformedRecord"), (4, "ValidationException")]
    failed = [json.loads(x) for x in (out / "CONDITION_CHECK_FAILURE" / "part-00000.json").read_text().splitlines()]
    assert failed == [{"ObjectKey": "errors/data.json", "Line": 3, "Item": json.loads(record(1))["Item"],
                       "ExistingItem": {"pk": {"S": "k1"}, "n": {"N": "-1"}}}]
    assert ddb.get_item(TableName=name, Key={"pk": {"S": "k1"}})["Item"]["n"] == {"N": "-1"}


def test_gzip_input_is_read(ddb, s3):
    put_object(s3, "in", "gz/part.json.gz", gzip.compress(b"".join(record(i) for i in range(50))))
    desc = wait_done(ddb, start(ddb, table(ddb, "bulk-gzip"), "gz/", compression="GZIP"))
    assert (desc["BulkOperationStatus"], desc["ProcessedItemCount"]) == ("COMPLETED", 50)


def test_zstd_input_is_read(ddb, s3):
    data = b"".join(record(i) for i in range(50))
    put_object(s3, "in", "zst/part.json.zst", zstandard.ZstdCompressor().compress(data))
    desc = wait_done(ddb, start(ddb, table(ddb, "bulk-zstd"), "zst/", compression="ZSTD"))
    assert (desc["BulkOperationStatus"], desc["ProcessedItemCount"], desc["FailedItemCount"]) == ("COMPLETED", 50, 0)


def test_missing_bucket_and_ion_fail_with_a_message(ddb, s3):
    name = table(ddb, "bulk-fail")
    desc = wait_done(ddb, start(ddb, name, "x/", bucket="nobucket"))
    assert (desc["BulkOperationStatus"], desc["FailureCode"]) == ("FAILED", "S3_BUCKET_NOT_FOUND")
    assert "nobucket" in desc["FailureMessage"]
    put_object(s3, "in", "ion/a.ion", b"{}")
    desc = ddb.start_bulk_put_items(TableName=name, InputS3Configuration={
        "S3Bucket": "in", "S3KeyPrefix": "ion/", "InputFormat": "ION"},
        OutputS3Configuration={"S3Bucket": "out", "OutputType": []})["BulkOperationDescription"]
    desc = wait_done(ddb, desc["BulkOperationArn"])
    assert desc["BulkOperationStatus"] == "FAILED" and "ION" in desc["FailureMessage"]
    desc = wait_done(ddb, start(ddb, name, "nothing-here/"))
    assert desc["FailureCode"] == "S3_OBJECTS_NOT_FOUND"


def test_without_s3_dir_operations_fail_with_a_message():
    with LiveServer() as live:
        ddb = live.client()
        name = table(ddb, "no-s3")
        desc = wait_done(ddb, start(ddb, name, "x/"))
        assert (desc["BulkOperationStatus"], desc["FailureCode"]) == ("FAILED", "S3_NOT_CONFIGURED")
        assert "--s3-dir" in desc["FailureMessage"]


def test_a_client_token_names_one_operation(ddb, s3):
    name = table(ddb, "bulk-token")
    put_object(s3, "in", "tok/a.json", record(1))
    first = start(ddb, name, "tok/", ClientToken="same-token")
    assert start(ddb, name, "tok/", ClientToken="same-token") == first
    with pytest.raises(ClientError) as err:
        start(ddb, name, "other/", ClientToken="same-token")
    assert err.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"


def test_unknown_operations_and_tables_are_not_found(ddb):
    with pytest.raises(ClientError) as err:
        ddb.describe_bulk_operation(BulkOperationArn="arn:aws:dynamodb:us-east-1:000000000000:table/x/bulk-operation/y")
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as err:
        start(ddb, "no-such-table", "x/")
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_list_pages_newest_first(ddb, s3):
    name = table(ddb, "bulk-list")
    put_object(s3, "in", "list/a.json", record(1))
    arns = [start(ddb, name, "list/") for _ in range(3)]
    for arn in arns:
        wait_done(ddb, arn)
    page = ddb.list_bulk_operations(MaxResults=2)
    assert [s["BulkOperationArn"] for s in page["BulkOperationsSummaryList"]][:2] == arns[::-1][:2]
    rest = ddb.list_bulk_operations(MaxResults=25, NextToken=page["NextToken"])
    assert arns[0] in [s["BulkOperationArn"] for s in rest["BulkOperationsSummaryList"]]


def test_cancel_keeps_what_was_written_and_pacing_slows_the_load(ddb, s3):
    name = table(ddb, "bulk-cancel")
    put_object(s3, "in", "cancel/a.json", b"".join(record(i) for i in range(20_000)))
    arn = start(ddb, name, "cancel/", MaxWriteRequestUnits=1024)  # 1024 items/s: ~20 s unless cancelled
    answer = ddb.cancel_bulk_operation(BulkOperationArn=arn)
    assert answer["BulkOperationStatus"] in ("CANCELLING", "CANCELLED")
    desc = wait_done(ddb, arn)
    assert desc["BulkOperationStatus"] == "CANCELLED"
    written = ddb.describe_table(TableName=name)["Table"]["ItemCount"]
    assert written == desc["ProcessedItemCount"] < 20_000


def test_the_bulk_load_example_runs():
    examples = Path(__file__).resolve().parents[2] / "examples"
    done = subprocess.run([sys.executable, str(examples / "bulk_load.py")], capture_output=True, text=True,
                          timeout=120, cwd=examples)
    assert done.returncode == 0, done.stderr
    assert "bulk load: COMPLETED_WITH_ERRORS, 10001 records, 1 failed" in done.stdout
    assert "import: COMPLETED, 10000 items; users-copy holds 10000" in done.stdout


def test_bulk_writes_are_ordinary_writes_for_streams_and_ttl(ddb, live, s3):
    name = "bulk-stream"
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST",
                     StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
    expired = {"Item": {"pk": {"S": "old"}, "ttl": {"N": str(int(time.time()) - 60)}}}
    put_object(s3, "in", "stream/a.json", b"".join(record(i) for i in range(5)) + json.dumps(expired).encode())
    assert wait_done(ddb, start(ddb, name, "stream/"))["BulkOperationStatus"] == "COMPLETED"
    streams = streams_client(live.url)
    arn = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    keys = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        records = streams.get_records(ShardIterator=iterator)["Records"]
        keys += [(r["eventName"], r["dynamodb"]["Keys"]["pk"]["S"]) for r in records]
    assert sorted(k for e, k in keys if e == "INSERT") == ["k0", "k1", "k2", "k3", "k4", "old"]
    deadline = time.monotonic() + 10  # the TTL sweep (every second) deletes the expired item
    while "Item" in ddb.get_item(TableName=name, Key={"pk": {"S": "old"}}):
        assert time.monotonic() < deadline
        time.sleep(0.05)
