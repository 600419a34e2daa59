"""ImportTable, DescribeImport, ListImports: a new table loaded from the S3 stand-in.

ImportTable creates the table from TableCreationParameters in the request itself (as CreateTable,
so it is journaled like one), CREATING until the import ends (engine.loads; a failed import removes
it), and loads the objects under the key prefix in the background (engine.jobs): DYNAMODB_JSON
lines (`{"Item": ...}`, the export layout) or CSV, NONE/GZIP/ZSTD.
Items are written as PutItems (the one write sequence) with throttling off, since an import
consumes none of the table's capacity; records that cannot be read or written are counted in
ErrorCount (docs/behaviour/bulk.md §5).
"""
from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from dynalocal.engine import loads
from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.engine.items import put_item
from dynalocal.engine.jobs import IMPORT, Job, find, listed, new_id, page, same_token, start
from dynalocal.engine.tables import create_table
from dynalocal.errors import DynamoError, ImportConflictException, ImportNotFoundException, ResourceNotFoundException
from dynalocal.journal.s3dir import S3Error, S3Object, list_objects, open_object, unreadable
from dynalocal.storage.database import TableEntry

SLICE = 500  # items per slice
TOKEN_WIDTH = 112  # ListImports' NextToken is at least 112 characters long (service model)


def import_table(ctx: Context, caller: Caller, body: dict) -> dict:
    """Create the table now and load it from the S3 stand-in in the background."""
    earlier = same_token(ctx, IMPORT, body, caller.scope, ImportConflictException(
        "There was a conflict when importing: the ClientToken was used with different parameters"))
    if earlier is not None:
        return {"ImportTableDescription": earlier.desc}
    creation = body["TableCreationParameters"]
    create_table(ctx, caller, dict(creation))
    entry = ctx.db.tables[caller.scope + creation["TableName"]]
    loads.hold(entry)
    now = time.time()
    import_id = new_id(now)
    desc: dict[str, Any] = {
        "ImportArn": f"{entry.arn}/import/{import_id}", "ImportStatus": "IN_PROGRESS", "TableArn": entry.arn,
        "TableId": entry.table_id, "S3BucketSource": body["S3BucketSource"], "ErrorCount": 0,
        "InputFormat": body["InputFormat"], "InputCompressionType": body.get("InputCompressionType", "NONE"),
        "TableCreationParameters": creation, "StartTime": now, "ProcessedSizeBytes": 0,
        "ProcessedItemCount": 0, "ImportedItemCount": 0}
    if "InputFormatOptions" in body:
        desc["InputFormatOptions"] = body["InputFormatOptions"]
    job = Job.started(IMPORT, import_id, body, caller.scope, desc)
    start(ctx, job, _load(ctx, caller, job, entry))
    return {"ImportTableDescription": desc}


def describe_import(ctx: Context, caller: Caller, body: dict) -> dict:
    """An import's description; an unknown ARN is ImportNotFoundException."""
    arn = body["ImportArn"]
    return {"ImportTableDescription": find(ctx, IMPORT, arn, caller.scope,
                                           ImportNotFoundException(f"Import not found: {arn}")).desc}


def list_imports(ctx: Context, caller: Caller, body: dict) -> dict:
    """The caller's imports (of one table when TableArn), newest first, PageSize a page."""
    found, token = page(listed(ctx, IMPORT, caller.scope, body.get("TableArn")), body.get("PageSize", 25),
                        body.get("NextToken"), TOKEN_WIDTH)
    summaries = [{k: j.desc[k] for k in ("ImportArn", "ImportStatus", "TableArn", "S3BucketSource", "InputFormat",
                                         "StartTime", "EndTime") if k in j.desc} for j in found]
    out: dict[str, Any] = {"ImportSummaryList": summaries}
    if token:
        out["NextToken"] = token
    return out


def _objects(ctx: Context, desc: dict) -> list[S3Object]:
    if desc["InputFormat"] == "ION":
        raise S3Error("UNSUPPORTED_FORMAT", "ION input is not supported by dynalocal (no Ion library is bundled); "
                                            "use DYNAMODB_JSON or CSV")
    source = desc["S3BucketSource"]
    objects = list_objects(ctx.settings.s3_dir, source["S3Bucket"], source.get("S3KeyPrefix", ""))
    if not objects:
        raise S3Error("S3_OBJECTS_NOT_FOUND", f"No objects under s3://{source['S3Bucket']}/"
                                              f"{source.get('S3KeyPrefix', '')}")
    return objects


def _load(ctx: Context, caller: Caller, job: Job, entry: TableEntry) -> Iterator[float]:
    """The import's work: every item of every object, SLICE at a time, with throttling off in each slice;
    then the table is ACTIVE. A failure removes the half-loaded table."""
    desc = job.desc
    try:
        objects = _objects(ctx, desc)
        read = _csv_items if desc["InputFormat"] == "CSV" else _json_items
        batch: list[dict | None] = []
        for obj in objects:
            for item in _read(read, obj, desc, entry):
                batch.append(item)
                if len(batch) >= SLICE:
                    _write(ctx, caller, entry, batch, desc)
                    batch = []
                    yield 0.0
            desc["ProcessedSizeBytes"] += obj.size
        _write(ctx, caller, entry, batch, desc)
    except Exception:  # not a stop (GeneratorExit): that leaves the table to the next start (loads)
        loads.abandon(ctx, entry)
        raise
    loads.release(ctx, entry)
    job.finish("COMPLETED")


def _read(read: Callable[[S3Object, dict, TableEntry], Iterator[dict | None]], obj: S3Object, desc: dict,
          entry: TableEntry) -> Iterator[dict | None]:
    """An object's items; an object that cannot be read or decompressed fails the import."""
    try:
        yield from read(obj, desc, entry)
    except Exception as err:
        if not unreadable(err):
            raise
        raise S3Error("INVALID_OBJECT", f"Cannot read s3://{desc['S3BucketSource']['S3Bucket']}/{obj.key}: "
                                        f"{err}") from None


def _write(ctx: Context, caller: Caller, entry: TableEntry, batch: list[dict | None], desc: dict) -> None:
    """Write a slice of items (None: a record that could not be read) as PutItems, never throttled."""
    mode, ctx.settings.throttling = ctx.settings.throttling, "off"  # restored before any request runs
    entry.status = "ACTIVE"  # for the import's own writes only: CREATING again before any request runs
    try:
        for item in batch:
            desc["ProcessedItemCount"] += 1
            if item is None:
                desc["ErrorCount"] += 1
                continue
            try:
                put_item(ctx, caller, {"TableName": entry.name, "Item": item})
            except ResourceNotFoundException:
                raise S3Error("TABLE_NOT_FOUND", f"The table {entry.name} was deleted during the import") from None
            except DynamoError:
                desc["ErrorCount"] += 1
                continue
            desc["ImportedItemCount"] += 1
    finally:
        ctx.settings.throttling = mode
        entry.status = "CREATING"


def _json_items(obj: S3Object, desc: dict, entry: TableEntry) -> Iterator[dict | None]:
    """The items of a DYNAMODB_JSON object (one `{"Item": ...}` per line; None for an unreadable line)."""
    with open_object(obj.path, desc["InputCompressionType"]) as stream:
        for line in stream:
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                yield None
                continue
            item = record.get("Item") if type(record) is dict else None
            yield item if type(item) is dict else None


def _csv_items(obj: S3Object, desc: dict, entry: TableEntry) -> Iterator[dict | None]:
    """The items of a CSV object: key attributes typed as AttributeDefinitions say, the rest strings;
    empty cells are left out. The header is HeaderList, else the object's first line."""
    options = desc.get("InputFormatOptions", {}).get("Csv", {})
    types = {d["AttributeName"]: d["AttributeType"] for d in entry.attribute_definitions}
    with open_object(obj.path, desc["InputCompressionType"]) as stream:
        rows = csv.reader(io.TextIOWrapper(stream, encoding="utf-8", newline=""),
                          delimiter=options.get("Delimiter", ","))
        header = options.get("HeaderList") or next(rows, None)
        if header is None:
            return
        for row in rows:
            if not row:
                continue
            if len(row) > len(header):
                yield None
                continue
            yield {name: {types.get(name, "S"): value} for name, value in zip(header, row) if value != ""}
