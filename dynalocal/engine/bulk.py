"""Bulk put operations: StartBulkPutItems, DescribeBulkOperation, ListBulkOperations, CancelBulkOperation.

A bulk load reads DYNAMODB_JSON lines (`{"Item": {...}}`, optionally with a ConditionExpression and
its ExpressionAttributeNames/Values: docs/behaviour/bulk.md) from the S3 stand-in (journal.s3dir)
and writes each item as a PutItem (engine.items.put_item, so the one write sequence: indexes,
streams, TTL and capacity as for any write). It runs in the background in slices (engine.jobs);
MaxWriteRequestUnits paces it; malformed or invalid records and failed conditions are written to
the output prefix.
"""
from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from typing import Any

import orjson

from dynalocal.engine.caller import Caller
from dynalocal.engine.common import data_table
from dynalocal.engine.context import Context
from dynalocal.engine.items import put_item
from dynalocal.engine.jobs import BULK, Job, find, listed, page, same_token, start
from dynalocal.engine.validation import validate
from dynalocal.errors import (
    ConditionalCheckFailedException,
    DynamoError,
    IdempotentParameterMismatchException,
    ProvisionedThroughputExceededException,
    RequestLimitExceeded,
    ResourceNotFoundException,
    ThrottlingException,
    ValidationException,
)
from dynalocal.journal.s3dir import S3Error, S3Object, bucket_dir, join, lines, list_objects, write_object
from dynalocal.storage.database import TableEntry
from dynalocal.values.attributes import item_size

SLICE = 500  # records per slice: a few milliseconds, then other requests are served
RECORD_MEMBERS = frozenset(("Item", "ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"))
THROTTLES = (ProvisionedThroughputExceededException, ThrottlingException, RequestLimitExceeded)
OUTPUT_PART = 10_000  # output lines per file
NOT_FOUND = "Bulk operation not found"


def start_bulk_put_items(ctx: Context, caller: Caller, body: dict) -> dict:
    """Start a bulk load in the background (or return the one this ClientToken started)."""
    earlier = same_token(ctx, BULK, body, caller.scope, IdempotentParameterMismatchException(
        "ClientToken was used with different parameters within the last 8 hours"))
    if earlier is not None:
        return {"BulkOperationDescription": earlier.desc}
    entry = data_table(ctx, caller, body["TableName"])
    output = body["OutputS3Configuration"]
    if output.get("OutputType") and not output.get("S3Bucket"):
        raise ValidationException("OutputS3Configuration.S3Bucket is required when OutputType is given")
    job_id = uuid.uuid4().hex
    desc: dict[str, Any] = {
        "BulkOperationArn": f"{entry.arn}/bulk-operation/{job_id}", "BulkOperationStatus": "IN_PROGRESS",
        "TableDetails": [{"TableName": entry.name, "TableId": entry.table_id}],
        "InputS3Configuration": body["InputS3Configuration"], "OutputS3Configuration": output,
        "StartTime": time.time(), "ProcessedItemCount": 0, "FailedItemCount": 0, "ProcessedInputBytes": 0,
        "PerformanceTier": body.get("PerformanceTier", "STANDARD")}
    if "MaxWriteRequestUnits" in body:
        desc["MaxWriteRequestUnits"] = body["MaxWriteRequestUnits"]
    job = Job.started(BULK, job_id, body, caller.scope, desc)
    start(ctx, job, _load(ctx, caller, job, entry))
    return {"BulkOperationDescription": desc}


def describe_bulk_operation(ctx: Context, caller: Caller, body: dict) -> dict:
    """The operation's description: status, counts, usage, failure."""
    return {"BulkOperationDescription": _job(ctx, caller, body).desc}


def list_bulk_operations(ctx: Context, caller: Caller, body: dict) -> dict:
    """The caller's operations, newest first, MaxResults a page (NextToken: hex)."""
    found, token = page(listed(ctx, BULK, caller.scope), body.get("MaxResults", 10), body.get("NextToken"))
    summaries = []
    for job in found:
        summary = {k: job.desc[k] for k in ("BulkOperationArn", "BulkOperationStatus", "StartTime", "EndTime")
                   if k in job.desc}
        summaries.append(summary)
    out: dict[str, Any] = {"BulkOperationsSummaryList": summaries}
    if token:
        out["NextToken"] = token
    return out


def cancel_bulk_operation(ctx: Context, caller: Caller, body: dict) -> dict:
    """Asks the operation to stop: CANCELLING now, CANCELLED after its current slice (what was written stays)."""
    job = _job(ctx, caller, body)
    if job.status == "IN_PROGRESS":
        job.cancel = True
        job.desc["BulkOperationStatus"] = "CANCELLING"
    return {"BulkOperationArn": job.arn, "BulkOperationStatus": job.status}


def _job(ctx: Context, caller: Caller, body: dict) -> Job:
    arn = body["BulkOperationArn"]
    return find(ctx, BULK, arn, caller.scope, ResourceNotFoundException(f"{NOT_FOUND}: {arn}"))


class _Outputs:
    """The ERROR and CONDITION_CHECK_FAILURE lines of one operation, written to the output prefix in parts."""

    def __init__(self, ctx: Context, job: Job) -> None:
        config = job.desc["OutputS3Configuration"]
        self.root = ctx.settings.s3_dir
        self.bucket = config.get("S3Bucket", "")
        self.prefix = join(config.get("S3KeyPrefix"), "AWSDynamoDB", "bulk", job.id)
        self.kinds = frozenset(config.get("OutputType") or ())
        self.pending: dict[str, list[bytes]] = {kind: [] for kind in self.kinds}
        self.parts = dict.fromkeys(self.kinds, 0)
        if self.kinds:
            bucket_dir(self.root, self.bucket)  # a missing output bucket fails the operation before it writes

    def add(self, kind: str, record: dict) -> None:
        if kind in self.kinds:
            self.pending[kind].append(orjson.dumps(record))
            if len(self.pending[kind]) >= OUTPUT_PART:
                self.flush(kind)

    def flush(self, kind: str) -> None:
        if self.pending.get(kind):
            key = join(self.prefix, kind, f"part-{self.parts[kind]:05d}.json")
            write_object(self.root, self.bucket, key, b"\n".join(self.pending[kind]) + b"\n")
            self.parts[kind] += 1
            self.pending[kind] = []

    def close(self) -> None:
        for kind in self.kinds:
            self.flush(kind)


def _indexes(entry: TableEntry) -> list[tuple[str, str, frozenset[str]]]:
    """(usage map, index name, key attributes) of each secondary index, for BulkOperationUsage."""
    out = []
    for group, specs in (("GlobalSecondaryIndexes", entry.gsis), ("LocalSecondaryIndexes", entry.lsis)):
        for spec in specs:
            out.append((group, spec["IndexName"], frozenset(k["AttributeName"] for k in spec["KeySchema"])))
    return out


def _objects(ctx: Context, job: Job) -> list[S3Object]:
    config = job.desc["InputS3Configuration"]
    if config["InputFormat"] != "DYNAMODB_JSON":
        raise S3Error("UNSUPPORTED_FORMAT", f"{config['InputFormat']} input is not supported by dynalocal "
                                            "(no Ion library is bundled); use DYNAMODB_JSON")
    objects = list_objects(ctx.settings.s3_dir, config["S3Bucket"], config.get("S3KeyPrefix", ""))
    if not objects:
        raise S3Error("S3_OBJECTS_NOT_FOUND", f"No objects under s3://{config['S3Bucket']}/"
                                              f"{config.get('S3KeyPrefix', '')}")
    return objects


def _load(ctx: Context, caller: Caller, job: Job, entry: TableEntry) -> Iterator[float]:
    """The operation's work: every record of every object, SLICE at a time, paced by MaxWriteRequestUnits."""
    desc = job.desc
    objects = _objects(ctx, job)
    writer = _Writer(ctx, caller, entry, _Outputs(ctx, job), desc)
    desc["TotalInputBytes"] = sum(o.size for o in objects)
    rate = desc.get("MaxWriteRequestUnits")
    began, done = time.monotonic(), 0
    compression = desc["InputS3Configuration"].get("InputCompressionType", "NONE")
    for obj in objects:
        for number, line in enumerate(lines(obj.path, compression), 1):
            if not line.strip():
                continue
            while not writer.put(line, obj.key, number):
                yield 0.05  # throttled: wait, then write the same record again
            done += 1
            if done % SLICE == 0:
                yield max(0.0, writer.units / rate - (time.monotonic() - began)) if rate else 0.0
                if job.cancel:
                    writer.outputs.close()
                    job.finish("CANCELLED")
                    return
        desc["ProcessedInputBytes"] += obj.size
    writer.outputs.close()
    job.finish("COMPLETED_WITH_ERRORS" if desc["FailedItemCount"] else "COMPLETED")


class _Writer:
    """Writes one record at a time through PutItem and keeps the operation's counts and usage."""

    def __init__(self, ctx: Context, caller: Caller, entry: TableEntry, outputs: _Outputs, desc: dict) -> None:
        self.ctx, self.caller, self.entry, self.outputs, self.desc = ctx, caller, entry, outputs, desc
        self.usage: dict[str, Any] = {"TableName": entry.name, "BulkPutBytes": 0, "Table": {"BulkPutBytes": 0}}
        desc["BulkOperationUsage"] = [self.usage]
        self.indexes = _indexes(entry)
        for group, name, _ in self.indexes:
            self.usage.setdefault(group, {})[name] = {"BulkPutBytes": 0}
        self.units = 0  # write units used so far (1 KB each), for MaxWriteRequestUnits

    def put(self, line: bytes, key: str, number: int) -> bool:
        """Write (or report) one record; False when throttled (nothing written: try again later)."""
        desc = self.desc
        try:
            record = orjson.loads(line)
            if type(record) is not dict or type(record.get("Item")) is not dict \
                    or not RECORD_MEMBERS.issuperset(record):
                raise ValidationException('A record must be a JSON object {"Item": {...}} with optional '
                                          "ConditionExpression, ExpressionAttributeNames and "
                                          "ExpressionAttributeValues")
            body = {**record, "TableName": self.entry.name}
            if len(record) > 1:
                body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
                validate("PutItem", body)
            put_item(self.ctx, self.caller, body)
        except ConditionalCheckFailedException as err:
            desc["ProcessedItemCount"] += 1
            failure = {"ObjectKey": key, "Line": number, "Item": record["Item"]}
            if "Item" in err.extra:
                failure["ExistingItem"] = err.extra["Item"]
            self.outputs.add("CONDITION_CHECK_FAILURE", failure)
            return True
        except THROTTLES:
            return False
        except ResourceNotFoundException:
            raise S3Error("TABLE_NOT_FOUND", f"The table {self.entry.name} was deleted while the operation ran") \
                from None
        except (DynamoError, orjson.JSONDecodeError) as err:
            desc["ProcessedItemCount"] += 1
            desc["FailedItemCount"] += 1
            code = err.code if isinstance(err, DynamoError) else "MalformedRecord"
            message = (err.message or err.code) if isinstance(err, DynamoError) else f"Malformed JSON: {err}"
            self.outputs.add("ERROR", {"ObjectKey": key, "Line": number, "ErrorCode": code, "ErrorMessage": message,
                                       "Record": line[:4096].decode("utf-8", "replace").rstrip("\n")})
            return True
        desc["ProcessedItemCount"] += 1
        self._count(record["Item"])
        return True

    def _count(self, item: dict) -> None:
        size = item_size(item)
        self.units += math.ceil(size / 1024)
        usage = self.usage
        usage["BulkPutBytes"] += size
        usage["Table"]["BulkPutBytes"] += size
        for group, name, keys in self.indexes:
            if keys.issubset(item):
                usage[group][name]["BulkPutBytes"] += size
