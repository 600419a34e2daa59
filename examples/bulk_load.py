"""Bulk load a table from files, export it and import the export into a new table, all through boto3.

The S3 stand-in (`--s3-dir`) is a directory: bucket `demo` is `<dir>/demo/`. The example writes
two gzipped DynamoDB JSON files (one line is malformed on purpose), loads them with
StartBulkPutItems, exports the table with ExportTableToPointInTime and imports the export with
ImportTable.
Run: .venv/bin/python examples/bulk_load.py
"""
from __future__ import annotations

import gzip
import json
import tempfile
import time
from pathlib import Path

import boto3

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.testing import LocalServer


def wait(describe, status_key: str) -> dict:
    """Poll a Describe call until the operation has ended."""
    while True:
        desc = describe()
        if desc[status_key] not in ("IN_PROGRESS", "CANCELLING"):
            return desc
        time.sleep(0.05)


def main() -> None:
    s3 = Path(tempfile.mkdtemp())
    for part in range(2):  # the input: DYNAMODB_JSON lines, {"Item": {...}} each, gzipped
        lines = [json.dumps({"Item": {"pk": {"S": f"user-{i}"}, "city": {"S": ["Oslo", "Lima"][i % 2]}}})
                 for i in range(part * 5000, (part + 1) * 5000)]
        if part == 1:
            lines.insert(10, '{"Item": {"pk": ')  # malformed: reported in the ERROR output
        (s3 / "demo" / "users").mkdir(parents=True, exist_ok=True)
        (s3 / "demo" / "users" / f"part-{part}.json.gz").write_bytes(gzip.compress("\n".join(lines).encode()))

    url = LocalServer(ctx=Context(settings=Settings(s3_dir=str(s3)))).start().url  # as `dynalocal --s3-dir DIR`
    ddb = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    ddb.create_table(TableName="users", BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])

    started = ddb.start_bulk_put_items(
        TableName="users",
        InputS3Configuration={"S3Bucket": "demo", "S3KeyPrefix": "users/", "InputFormat": "DYNAMODB_JSON",
                              "InputCompressionType": "GZIP"},
        OutputS3Configuration={"S3Bucket": "demo", "S3KeyPrefix": "results", "OutputType": ["ERROR"]})
    arn = started["BulkOperationDescription"]["BulkOperationArn"]
    bulk = wait(lambda: ddb.describe_bulk_operation(BulkOperationArn=arn)["BulkOperationDescription"],
                "BulkOperationStatus")
    print(f"bulk load: {bulk['BulkOperationStatus']}, {bulk['ProcessedItemCount']} records, "
          f"{bulk['FailedItemCount']} failed")
    for path in sorted((s3 / "demo" / "results").rglob("*.json")):
        print(f"  errors in {path.relative_to(s3)}: {path.read_text().count(chr(10))} line(s)")

    ddb.update_continuous_backups(TableName="users",  # exports need point-in-time recovery
                                  PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    table_arn = ddb.describe_table(TableName="users")["Table"]["TableArn"]
    export_arn = ddb.export_table_to_point_in_time(TableArn=table_arn, S3Bucket="demo",
                                                   S3Prefix="exports")["ExportDescription"]["ExportArn"]
    export = wait(lambda: ddb.describe_export(ExportArn=export_arn)["ExportDescription"], "ExportStatus")
    print(f"export: {export['ExportStatus']}, {export['ItemCount']} items, manifest {export['ExportManifest']}")

    export_id = export_arn.rsplit("/", 1)[1]
    import_arn = ddb.import_table(
        S3BucketSource={"S3Bucket": "demo", "S3KeyPrefix": f"exports/AWSDynamoDB/{export_id}/data/"},
        InputFormat="DYNAMODB_JSON", InputCompressionType="GZIP",
        TableCreationParameters={"TableName": "users-copy", "BillingMode": "PAY_PER_REQUEST",
                                 "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                                 "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]},
    )["ImportTableDescription"]["ImportArn"]
    imported = wait(lambda: ddb.describe_import(ImportArn=import_arn)["ImportTableDescription"], "ImportStatus")
    copy = ddb.describe_table(TableName="users-copy")["Table"]["ItemCount"]
    print(f"import: {imported['ImportStatus']}, {imported['ImportedItemCount']} items; users-copy holds {copy}")


if __name__ == "__main__":
    main()
