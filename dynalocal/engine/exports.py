"""ExportTableToPointInTime, DescribeExport, ListExports: full DYNAMODB_JSON exports to the S3 stand-in.

The export is a consistent copy of the table at ExportTime (a second in the PITR window, taken from
the table's history as a point-in-time restore does) or, without one, at the moment of the request
(the item records are taken then; they are immutable bytes, so this costs a reference per item),
written in the background as DynamoDB lays it out: `<prefix>/AWSDynamoDB/<ExportId>/` holds `_started`,
`manifest-summary.json`, `manifest-files.json` (with their `.checksum` files) and
`data/<name>.json.gz`, one file per partition of `{"Item": ...}` lines (docs/behaviour/bulk.md §4).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from dynalocal.engine.backups import continuous, restore
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table, table_name
from dynalocal.engine.context import Context
from dynalocal.engine.jobs import EXPORT, Job, find, listed, new_id, page, same_token, start
from dynalocal.errors import (
    ExportConflictException,
    ExportNotFoundException,
    InvalidExportTimeException,
    PointInTimeRecoveryUnavailableException,
    ResourceNotFoundException,
    TableNotFoundException,
)
from dynalocal.journal.s3dir import S3Error, bucket_dir, join, write_object
from dynalocal.storage.database import TableEntry

MANIFEST_VERSION = "2020-06-30"


def export_table_to_point_in_time(ctx: Context, caller: Caller, body: dict) -> dict:
    """Take the table's items now and write them to the S3 stand-in in the background."""
    earlier = same_token(ctx, EXPORT, body, caller.scope, ExportConflictException(
        "There was a conflict when attempting to export: the ClientToken was used with different parameters"))
    if earlier is not None:
        return {"ExportDescription": earlier.desc}
    entry = _table(ctx, caller, body["TableArn"])
    if not entry.point_in_time_recovery:
        raise PointInTimeRecoveryUnavailableException(f"Point in time recovery is not enabled for table '{entry.name}'")
    now = time.time()
    export_time = body.get("ExportTime", now)
    if "ExportTime" in body and not continuous.restorable(ctx, entry, export_time):
        raise InvalidExportTimeException("The specified ExportTime is outside of the point in time recovery window.")
    export_id = new_id(now)
    desc: dict[str, Any] = {
        "ExportArn": f"{entry.arn}/export/{export_id}", "ExportStatus": "IN_PROGRESS", "StartTime": now,
        "TableArn": entry.arn, "TableId": entry.table_id, "ExportTime": export_time,
        "S3Bucket": body["S3Bucket"], "S3SseAlgorithm": body.get("S3SseAlgorithm", "AES256"),
        "ExportFormat": body.get("ExportFormat", "DYNAMODB_JSON"), "ExportType": body.get("ExportType", "FULL_EXPORT"),
        "ExportManifest": join(body.get("S3Prefix"), "AWSDynamoDB", export_id, "manifest-summary.json")}
    for member in ("S3Prefix", "S3BucketOwner", "S3SseKmsKeyId"):
        if member in body:
            desc[member] = body[member]
    snapshot = _snapshot(ctx, entry, body.get("ExportTime"))
    job = Job.started(EXPORT, export_id, body, caller.scope, desc)
    start(ctx, job, _write(ctx, job, export_id, snapshot))
    return {"ExportDescription": desc}


def describe_export(ctx: Context, caller: Caller, body: dict) -> dict:
    """An export's description; an unknown ARN is ExportNotFoundException."""
    arn = body["ExportArn"]
    return {"ExportDescription": find(ctx, EXPORT, arn, caller.scope,
                                      ExportNotFoundException(f"Export not found: {arn}")).desc}


def list_exports(ctx: Context, caller: Caller, body: dict) -> dict:
    """The caller's exports (of one table when TableArn), newest first."""
    table_arn = body.get("TableArn")
    if table_arn is not None and not table_arn.startswith("arn:"):
        table_arn = _table(ctx, caller, table_arn).arn
    found, token = page(listed(ctx, EXPORT, caller.scope, table_arn), body.get("MaxResults", 25),
                        body.get("NextToken"))
    out: dict[str, Any] = {"ExportSummaries": [
        {"ExportArn": j.arn, "ExportStatus": j.status, "ExportType": j.desc["ExportType"]} for j in found]}
    if token:
        out["NextToken"] = token
    return out


def _table(ctx: Context, caller: Caller, name: str) -> TableEntry:
    try:
        return control_table(ctx, caller, name)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {table_name(name)}") from None


def _snapshot(ctx: Context, entry: TableEntry, when: float | None) -> list[list[bytes]]:
    """The item records to export, per partition: the table now, or as of `when` from its PITR history
    (the restore's own "table as of T"). Records are immutable bytes: a reference each, no copy."""
    table = entry.table
    if when is None:
        return [[record[0] for _, record in part.items()] for part in table.partitions]
    keys, records = continuous.as_of(ctx, entry, when)
    return [[r[0] for r in records[a:b]] for a, b in restore.spans(table, keys)]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _write(ctx: Context, job: Job, export_id: str, snapshot: list[list[bytes]]) -> Iterator[float]:
    """The export's work: one data file per partition (a slice each), then the manifests."""
    desc = job.desc
    if desc["ExportFormat"] != "DYNAMODB_JSON":
        raise S3Error("UNSUPPORTED_FORMAT", f"{desc['ExportFormat']} exports are not supported by dynalocal (no Ion "
                                            "library is bundled); use DYNAMODB_JSON")
    if desc["ExportType"] != "FULL_EXPORT":
        raise S3Error("UNSUPPORTED_EXPORT_TYPE", f"{desc['ExportType']} is not supported by dynalocal (it needs "
                                                 "point-in-time history); use FULL_EXPORT")
    root, bucket = ctx.settings.s3_dir, desc["S3Bucket"]
    base = join(desc.get("S3Prefix"), "AWSDynamoDB", export_id)
    bucket_dir(root, bucket)
    write_object(root, bucket, join(base, "_started"), b"")
    files, items, size = [], 0, 0
    for records in snapshot:
        data = b"".join(b'{"Item":' + r + b"}\n" for r in records)
        compressed = gzip.compress(data, 6)
        key = join(base, "data", f"{uuid.uuid4().hex[:26]}.json.gz")
        write_object(root, bucket, key, compressed)
        digest = hashlib.md5(compressed).digest()
        files.append({"itemCount": len(records), "md5Checksum": base64.b64encode(digest).decode(),
                      "etag": digest.hex(), "dataFileS3Key": key})
        items += len(records)
        size += len(data)
        yield 0.0
    manifest_files = b"".join(orjson.dumps(f) + b"\n" for f in files)
    _manifest(root, bucket, join(base, "manifest-files"), manifest_files)
    end = time.time()
    summary = {"version": MANIFEST_VERSION, "exportArn": desc["ExportArn"], "startTime": _iso(desc["StartTime"]),
               "endTime": _iso(end), "tableArn": desc["TableArn"], "tableId": desc["TableId"],
               "exportTime": _iso(desc["ExportTime"]), "s3Bucket": bucket, "s3Prefix": desc.get("S3Prefix"),
               "s3SseAlgorithm": desc["S3SseAlgorithm"], "s3SseKmsKeyId": desc.get("S3SseKmsKeyId"),
               "manifestFilesS3Key": join(base, "manifest-files.json"), "billedSizeBytes": size,
               "itemCount": items, "outputFormat": "DYNAMODB_JSON"}
    _manifest(root, bucket, join(base, "manifest-summary"), orjson.dumps(summary))
    desc.update(ItemCount=items, BilledSizeBytes=size)
    job.finish("COMPLETED")
    desc["EndTime"] = end


def _manifest(root: str | None, bucket: str, stem: str, data: bytes) -> None:
    """A manifest and its `.checksum` (the MD5 of the manifest, hex)."""
    write_object(root, bucket, stem + ".json", data)
    write_object(root, bucket, stem + ".checksum", hashlib.md5(data).hexdigest().encode())
