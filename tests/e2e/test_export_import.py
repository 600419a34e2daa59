"""ExportTableToPointInTime and ImportTable end to end through boto3, with the --s3-dir stand-in."""
from __future__ import annotations

import base64
import gzip
import json
import time
from decimal import Decimal
from pathlib import Path

import pytest
import zstandard
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock
from test_bulk import put_object

from dynalocal.config import Settings
from dynalocal.engine.context import Context

KEYS = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
DEFS = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"},
        {"AttributeName": "g", "AttributeType": "S"}]
GSIS = [{"IndexName": "byg", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
         "Projection": {"ProjectionType": "ALL"}}]
CREATION = {"AttributeDefinitions": DEFS, "KeySchema": KEYS, "BillingMode": "PAY_PER_REQUEST",
            "GlobalSecondaryIndexes": GSIS}


def wait(describe, key: str, timeout: float = 30.0) -> dict:
    """Poll a Describe call until its status leaves IN_PROGRESS."""
    deadline = time.monotonic() + timeout
    while True:
        desc = describe()
        if desc[key] != "IN_PROGRESS":
            return desc
        assert time.monotonic() < deadline, f"still IN_PROGRESS after {timeout}s"
        time.sleep(0.02)


def export(ddb, table: str, prefix: str = "exports", **kwargs) -> dict:
    arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
    desc = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket="bucket", S3Prefix=prefix,
                                             **kwargs)["ExportDescription"]
    return wait(lambda: ddb.describe_export(ExportArn=desc["ExportArn"])["ExportDescription"], "ExportStatus")


def import_(ddb, name: str, prefix: str, **kwargs) -> dict:
    kwargs.setdefault("InputFormat", "DYNAMODB_JSON")
    desc = ddb.import_table(S3BucketSource={"S3Bucket": "bucket", "S3KeyPrefix": prefix},
                            TableCreationParameters={"TableName": name, **CREATION}, **kwargs)["ImportTableDescription"]
    return wait(lambda: ddb.describe_import(ImportArn=desc["ImportArn"])["ImportTableDescription"], "ImportStatus")


def scan_all(ddb, table: str) -> list[dict]:
    items = ddb.get_paginator("scan").paginate(TableName=table).build_full_result()["Items"]
    return sorted(items, key=lambda i: (i["pk"]["S"], Decimal(i["sk"]["N"])))


def fill(ddb, table: str, count: int) -> None:
    for i in range(count):
        item = {"pk": {"S": f"p{i % 37}"}, "sk": {"N": str(i)}, "g": {"S": f"g{i % 5}"},
                "n": {"N": f"{i}.25"}, "b": {"B": bytes([i % 256])}, "ss": {"SS": ["a", f"x{i}"]},
                "m": {"M": {"l": {"L": [{"BOOL": True}, {"NULL": True}, {"NS": ["1", "2"]}]}}}}
        ddb.put_item(TableName=table, Item=item)


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("s3")
    (root / "bucket").mkdir()
    return root


@pytest.fixture(scope="module")
def ddb(s3):
    with LiveServer(s3_dir=str(s3)) as live:
        yield live.client()


def source(ddb, name: str, count: int = 0) -> str:
    ddb.create_table(TableName=name, **CREATION)
    ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    fill(ddb, name, count)
    return name


def test_an_export_imported_back_gives_the_same_table(ddb, s3):
    source(ddb, "orig", 300)
    desc = export(ddb, "orig")
    assert desc["ExportStatus"] == "COMPLETED" and desc["ItemCount"] == 300 and desc["ExportType"] == "FULL_EXPORT"
    export_id = desc["ExportArn"].rsplit("/", 1)[1]
    base = s3 / "bucket" / "exports" / "AWSDynamoDB" / export_id
    assert desc["ExportManifest"] == f"exports/AWSDynamoDB/{export_id}/manifest-summary.json"
    summary = json.loads((base / "manifest-summary.json").read_text())
    assert (summary["itemCount"], summary["outputFormat"], summary["exportArn"]) == (300, "DYNAMODB_JSON",
                                                                                    desc["ExportArn"])
    files = [json.loads(line) for line in (base / "manifest-files.json").read_text().splitlines()]
    assert sum(f["itemCount"] for f in files) == 300
    lines = [json.loads(x) for f in files
             for x in gzip.decompress((s3 / "bucket" / f["dataFileS3Key"]).read_bytes()).splitlines()]
    assert len(lines) == 300 and all(set(line) == {"Item"} for line in lines)
    assert (base / "_started").exists() and (base / "manifest-summary.checksum").exists()

    done = import_(ddb, "copy", f"exports/AWSDynamoDB/{export_id}/data/", InputCompressionType="GZIP")
    assert (done["ImportStatus"], done["ImportedItemCount"], done["ErrorCount"]) == ("COMPLETED", 300, 0)
    assert scan_all(ddb, "copy") == scan_all(ddb, "orig")
    query = {"IndexName": "byg", "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "g2"}}}
    assert ddb.query(TableName="copy", **query)["Count"] == ddb.query(TableName="orig", **query)["Count"] == 60
    listed = ddb.list_exports(TableArn=desc["TableArn"])["ExportSummaries"]
    assert listed == [{"ExportArn": desc["ExportArn"], "ExportStatus": "COMPLETED", "ExportType": "FULL_EXPORT"}]
    assert done["ImportArn"] in [s["ImportArn"] for s in ddb.list_imports()["ImportSummaryList"]]


def test_an_export_holds_the_table_as_it_was_at_the_request(ddb):
    source(ddb, "moving", 50)
    arn = ddb.describe_table(TableName="moving")["Table"]["TableArn"]
    started = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket="bucket", S3Prefix="moving")
    for i in range(50, 60):  # written after the request: not in the export
        ddb.put_item(TableName="moving", Item={"pk": {"S": "late"}, "sk": {"N": str(i)}, "g": {"S": "g"}})
    export_arn = started["ExportDescription"]["ExportArn"]
    desc = wait(lambda: ddb.describe_export(ExportArn=export_arn)["ExportDescription"], "ExportStatus")
    assert (desc["ExportStatus"], desc["ItemCount"]) == ("COMPLETED", 50)


def test_export_errors(ddb):
    ddb.create_table(TableName="nopitr", **CREATION)
    arn = ddb.describe_table(TableName="nopitr")["Table"]["TableArn"]
    with pytest.raises(ClientError) as err:
        ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket="bucket")
    assert err.value.response["Error"]["Code"] == "PointInTimeRecoveryUnavailableException"
    with pytest.raises(ClientError) as err:
        ddb.export_table_to_point_in_time(TableArn=arn.replace("nopitr", "missing"), S3Bucket="bucket")
    assert err.value.response["Error"]["Code"] == "TableNotFoundException"
    source(ddb, "old-time")
    arn = ddb.describe_table(TableName="old-time")["Table"]["TableArn"]
    with pytest.raises(ClientError) as err:
        ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket="bucket", ExportTime=time.time() - 3600)
    assert err.value.response["Error"]["Code"] == "InvalidExportTimeException"
    with pytest.raises(ClientError) as err:
        ddb.describe_export(ExportArn=arn + "/export/01234567890123-abcdef12")
    assert err.value.response["Error"]["Code"] == "ExportNotFoundException"
    failed = export(ddb, "old-time", ExportFormat="ION")
    assert failed["ExportStatus"] == "FAILED" and "ION" in failed["FailureMessage"]
    desc = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket="nobucket")["ExportDescription"]
    failed = wait(lambda: ddb.describe_export(ExportArn=desc["ExportArn"])["ExportDescription"], "ExportStatus")
    assert (failed["ExportStatus"], failed["FailureCode"]) == ("FAILED", "S3_BUCKET_NOT_FOUND")


def test_csv_import_types_keys_from_the_attribute_definitions(ddb, s3):
    put_object(s3, "bucket", "csv/a.csv", b"pk;sk;g;note\np1;1;ga;hello\np1;2;gb;\n")
    put_object(s3, "bucket", "csv/b.csv", b"pk;sk;g;note\np2;3;ga;x;extra\np2;4;ga;y\n")
    done = import_(ddb, "from-csv", "csv/", InputFormat="CSV", InputFormatOptions={"Csv": {"Delimiter": ";"}})
    assert (done["ImportStatus"], done["ProcessedItemCount"], done["ImportedItemCount"], done["ErrorCount"]) == (
        "COMPLETED", 4, 3, 1)
    assert scan_all(ddb, "from-csv") == [
        {"pk": {"S": "p1"}, "sk": {"N": "1"}, "g": {"S": "ga"}, "note": {"S": "hello"}},
        {"pk": {"S": "p1"}, "sk": {"N": "2"}, "g": {"S": "gb"}},
        {"pk": {"S": "p2"}, "sk": {"N": "4"}, "g": {"S": "ga"}, "note": {"S": "y"}}]


def test_zstd_import(ddb, s3):
    lines = b"".join(json.dumps({"Item": {"pk": {"S": f"z{i}"}, "sk": {"N": str(i)}, "g": {"S": "g"}}}).encode()
                     + b"\n" for i in range(40))
    put_object(s3, "bucket", "zst/a.json.zst", zstandard.ZstdCompressor().compress(lines))
    done = import_(ddb, "from-zstd", "zst/", InputCompressionType="ZSTD")
    assert (done["ImportStatus"], done["ImportedItemCount"], done["ErrorCount"]) == ("COMPLETED", 40, 0)
    assert len(scan_all(ddb, "from-zstd")) == 40


def test_import_errors(ddb):
    source(ddb, "taken")
    with pytest.raises(ClientError) as err:
        import_(ddb, "taken", "csv/")
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    with pytest.raises(ClientError) as err:
        ddb.describe_import(ImportArn="arn:aws:dynamodb:us-east-1:000000000000:table/x/import/01234567890123-abcdef12")
    assert err.value.response["Error"]["Code"] == "ImportNotFoundException"
    failed = import_(ddb, "from-nothing", "no-such-prefix/")
    assert (failed["ImportStatus"], failed["FailureCode"]) == ("FAILED", "S3_OBJECTS_NOT_FOUND")


def test_exports_and_imports_survive_a_restart(tmp_path):
    s3, data = tmp_path / "s3", tmp_path / "data"
    (s3 / "bucket").mkdir(parents=True)
    with LiveServer(s3_dir=str(s3), data_dir=str(data)) as live:
        ddb = live.client()
        source(ddb, "orig", 20)
        exported = export(ddb, "orig")
        export_id = exported["ExportArn"].rsplit("/", 1)[1]
        imported = import_(ddb, "copy", f"exports/AWSDynamoDB/{export_id}/data/", InputCompressionType="GZIP")
    with LiveServer(s3_dir=str(s3), data_dir=str(data)) as live:
        ddb = live.client()
        assert ddb.describe_export(ExportArn=exported["ExportArn"])["ExportDescription"] == exported
        assert ddb.describe_import(ImportArn=imported["ImportArn"])["ImportTableDescription"] == imported
        assert scan_all(ddb, "copy") == scan_all(ddb, "orig") and len(scan_all(ddb, "copy")) == 20


def _exported_items(s3: Path, desc: dict) -> list[dict]:
    """The items of a completed export, read back from its data files."""
    base = s3 / "bucket" / desc["ExportManifest"].rsplit("/", 1)[0]
    files = [json.loads(line) for line in (base / "manifest-files.json").read_text().splitlines()]
    items = [json.loads(line)["Item"] for f in files
             for line in gzip.decompress((s3 / "bucket" / f["dataFileS3Key"]).read_bytes()).splitlines()]
    return sorted(items, key=lambda i: (i["pk"]["S"], Decimal(i["sk"]["N"])))


def test_an_export_at_a_past_time_holds_the_items_of_that_time(tmp_path):
    s3 = tmp_path / "s3"
    (s3 / "bucket").mkdir(parents=True)
    clock = WallClock()
    with LiveServer(Context(settings=Settings(pitr_lag_seconds=0, s3_dir=str(s3)), wall_clock=clock)) as live:
        ddb = live.client()
        source(ddb, "past", 30)
        clock.advance(10)
        noted = clock.now
        expected = [{**i, "b": {"B": base64.b64encode(i["b"]["B"]).decode()}} for i in scan_all(ddb, "past")]
        clock.advance(10)
        fill(ddb, "past", 45)  # rewrites the 30 (same items) and adds 15
        ddb.put_item(TableName="past", Item={"pk": {"S": "p0"}, "sk": {"N": "0"}, "g": {"S": "changed"}})
        ddb.delete_item(TableName="past", Key={"pk": {"S": "p1"}, "sk": {"N": "1"}})
        clock.advance(10)
        desc = export(ddb, "past", prefix="past", ExportTime=noted)
        assert (desc["ExportStatus"], desc["ItemCount"], desc["ExportTime"].timestamp()) == ("COMPLETED", 30, noted)
        assert _exported_items(s3, desc) == expected
        assert len(_exported_items(s3, export(ddb, "past", prefix="now"))) == 44
        arn = desc["TableArn"]
        for outside in (clock.now - 3600, clock.now + 60):
            with pytest.raises(ClientError) as err:
                ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket="bucket", ExportTime=outside)
            assert err.value.response["Error"] == {
                "Code": "InvalidExportTimeException",
                "Message": "The specified ExportTime is outside of the point in time recovery window."}


def _lines(start: int, count: int) -> bytes:
    return b"".join(json.dumps({"Item": {"pk": {"S": f"p{i}"}, "sk": {"N": str(i)}, "g": {"S": "g"}}}).encode()
                    + b"\n" for i in range(start, start + count))


def test_an_imported_table_is_creating_until_the_import_completes(ddb, s3):
    put_object(s3, "bucket", "big/a.json", _lines(0, 20000))
    desc = ddb.import_table(S3BucketSource={"S3Bucket": "bucket", "S3KeyPrefix": "big/"}, InputFormat="DYNAMODB_JSON",
                            TableCreationParameters={"TableName": "importing", **CREATION})["ImportTableDescription"]
    assert ddb.describe_table(TableName="importing")["Table"]["TableStatus"] == "CREATING"
    with pytest.raises(ClientError) as err:
        ddb.put_item(TableName="importing", Item={"pk": {"S": "x"}, "sk": {"N": "1"}})
    assert err.value.response["Error"] == {"Code": "ResourceNotFoundException",
                                           "Message": "Requested resource not found"}
    with pytest.raises(ClientError) as err:
        ddb.delete_table(TableName="importing")
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    assert "being created" in err.value.response["Error"]["Message"]
    done = wait(lambda: ddb.describe_import(ImportArn=desc["ImportArn"])["ImportTableDescription"], "ImportStatus")
    assert (done["ImportStatus"], done["ImportedItemCount"]) == ("COMPLETED", 20000)
    table = ddb.describe_table(TableName="importing")["Table"]
    assert (table["TableStatus"], table["ItemCount"]) == ("ACTIVE", 20000)
    ddb.put_item(TableName="importing", Item={"pk": {"S": "x"}, "sk": {"N": "1"}})


def test_a_failed_import_removes_its_table(ddb, s3):
    put_object(s3, "bucket", "broken/a.json.gz", gzip.compress(_lines(0, 1200)))
    put_object(s3, "bucket", "broken/b.json.gz", gzip.compress(_lines(1200, 10))[:-12])  # truncated
    failed = import_(ddb, "half", "broken/", InputCompressionType="GZIP")
    assert (failed["ImportStatus"], failed["FailureCode"]) == ("FAILED", "INVALID_OBJECT")
    assert "broken/b.json.gz" in failed["FailureMessage"]
    with pytest.raises(ClientError) as err:
        ddb.describe_table(TableName="half")
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert "half" not in ddb.list_tables()["TableNames"]
    failed = import_(ddb, "from-nothing-2", "no-such-prefix/")
    assert failed["FailureCode"] == "S3_OBJECTS_NOT_FOUND"
    assert "from-nothing-2" not in ddb.list_tables()["TableNames"]


def test_an_import_cut_off_by_a_stop_leaves_no_table(tmp_path):
    s3, data = tmp_path / "s3", tmp_path / "data"
    put_object(s3, "bucket", "big/a.json", _lines(0, 30000))
    with LiveServer(s3_dir=str(s3), data_dir=str(data)) as live:
        ddb = live.client()
        desc = ddb.import_table(S3BucketSource={"S3Bucket": "bucket", "S3KeyPrefix": "big/"},
                                InputFormat="DYNAMODB_JSON",
                                TableCreationParameters={"TableName": "cut", **CREATION})["ImportTableDescription"]
        assert ddb.describe_import(ImportArn=desc["ImportArn"])["ImportTableDescription"]["ImportStatus"] == \
            "IN_PROGRESS"
    with LiveServer(s3_dir=str(s3), data_dir=str(data)) as live:
        ddb = live.client()
        assert "cut" not in ddb.list_tables()["TableNames"]
        after = ddb.describe_import(ImportArn=desc["ImportArn"])["ImportTableDescription"]
        assert (after["ImportStatus"], after["FailureCode"]) == ("FAILED", "INTERRUPTED")
