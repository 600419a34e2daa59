"""CreateBackup, DescribeBackup, ListBackups, DeleteBackup and RestoreTableFromBackup."""
from __future__ import annotations

from itertools import chain
from typing import Any

from dynalocal.engine import transient
from dynalocal.engine.backups import catalog, restore
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table, table_name
from dynalocal.engine.context import Context
from dynalocal.errors import ResourceNotFoundException, TableInUseException, TableNotFoundException
from dynalocal.storage.database import TableEntry


def source_table(ctx: Context, caller: Caller, name: str) -> TableEntry:
    """The table a backup call names; missing is TableNotFoundException, being created or deleted
    TableInUseException."""
    try:
        entry = control_table(ctx, caller, name)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {table_name(name)}") from None
    transient.settle(ctx, entry)
    if entry.status != "ACTIVE" and entry.status != "UPDATING":
        raise TableInUseException(f"Table is being {'deleted' if entry.status == 'DELETING' else 'created'}: "
                                  f"{entry.name}")
    return entry


def create_backup(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = source_table(ctx, caller, body["TableName"])
    backup = catalog.take(ctx, caller, entry, body["BackupName"])
    return {"BackupDetails": catalog.details(backup, ctx.wall_clock())}


def describe_backup(ctx: Context, caller: Caller, body: dict) -> dict:
    backup = catalog.find(ctx, caller, body["BackupArn"])
    return {"BackupDescription": catalog.description(backup, ctx.wall_clock())}


def delete_backup(ctx: Context, caller: Caller, body: dict) -> dict:
    backup = catalog.find(ctx, caller, body["BackupArn"], usable=True)
    now = ctx.wall_clock()
    catalog.forget(ctx, backup)
    return {"BackupDescription": catalog.description(backup, now, status="DELETED")}


def list_backups(ctx: Context, caller: Caller, body: dict) -> dict:
    """Backups in creation order, filtered by table, type and [lower, upper) creation time, paged."""
    kind = body.get("BackupType", "USER")
    table = table_name(body["TableName"]) if body.get("TableName") else None
    lower, upper = body.get("TimeRangeLowerBound"), body.get("TimeRangeUpperBound")
    found = [b for b in ctx.db.backups.values()
             if b.scope == caller.scope and (kind == "ALL" or b.kind == kind)
             and (table is None or b.meta["TableName"] == table)
             and (lower is None or b.created >= lower) and (upper is None or b.created < upper)]
    found.sort(key=lambda b: (b.created, b.arn))
    start = body.get("ExclusiveStartBackupArn")
    if start is not None:
        position = next((i for i, b in enumerate(found) if b.arn == start), None)
        found = found[position + 1:] if position is not None else found
    limit = body.get("Limit", 100)
    now = ctx.wall_clock()
    out: dict[str, Any] = {"BackupSummaries": [catalog.summary(b, now) for b in found[:limit]]}
    if len(found) > limit:
        out["LastEvaluatedBackupArn"] = found[limit - 1].arn
    return out


def restore_table_from_backup(ctx: Context, caller: Caller, body: dict) -> dict:
    target = restore.check_target(ctx, caller, body["TargetTableName"])
    backup = catalog.find(ctx, caller, body["BackupArn"], usable=True)
    parts = backup.contents()
    keys = list(chain.from_iterable(keys for keys, _ in parts))
    records = list(chain.from_iterable(records for _, records in parts))
    summary = {"SourceBackupArn": backup.arn, "SourceTableArn": backup.meta["TableArn"],
               "RestoreDateTime": backup.created}
    return restore.restore(ctx, caller, target, backup.meta, body, keys, records, summary)
