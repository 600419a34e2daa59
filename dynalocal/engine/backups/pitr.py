"""DescribeContinuousBackups, UpdateContinuousBackups and RestoreTableToPointInTime (docs/behaviour/backups.md §3)."""
from __future__ import annotations

from typing import Any

import orjson

from dynalocal.engine.backups import continuous, restore
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table, table_name
from dynalocal.engine.context import Context
from dynalocal.errors import (
    InvalidRestoreTimeException,
    PointInTimeRecoveryUnavailableException,
    ResourceNotFoundException,
    TableNotFoundException,
    invalid,
)
from dynalocal.journal.tablemeta import encode_meta
from dynalocal.storage.database import TableEntry


def _table(ctx: Context, caller: Caller, name: str) -> TableEntry:
    """The table of a continuous-backups call; missing is TableNotFoundException, as DynamoDB answers."""
    try:
        return control_table(ctx, caller, name)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {table_name(name)}") from None


def describe_continuous_backups(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = _table(ctx, caller, body["TableName"])
    pitr: dict[str, Any] = {"PointInTimeRecoveryStatus": "ENABLED" if entry.point_in_time_recovery else "DISABLED"}
    if entry.point_in_time_recovery:
        earliest, latest = continuous.window(ctx, entry)
        pitr.update(RecoveryPeriodInDays=entry.pitr_days, EarliestRestorableDateTime=earliest,
                    LatestRestorableDateTime=latest)
    # On-demand backups are always available in DynamoDB, so ContinuousBackupsStatus is ENABLED.
    return {"ContinuousBackupsDescription": {"ContinuousBackupsStatus": "ENABLED",
                                             "PointInTimeRecoveryDescription": pitr}}


def update_continuous_backups(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = _table(ctx, caller, body["TableName"])
    spec = body["PointInTimeRecoverySpecification"]
    days = spec.get("RecoveryPeriodInDays")
    if spec["PointInTimeRecoveryEnabled"]:
        continuous.enable(ctx, entry, 35 if days is None else days)
    else:
        if days is not None:
            raise invalid("RecoveryPeriodInDays can only be specified when PointInTimeRecoveryEnabled is true")
        continuous.disable(ctx, entry)
    return describe_continuous_backups(ctx, caller, body)


def restore_table_to_point_in_time(ctx: Context, caller: Caller, body: dict) -> dict:
    source_name = body.get("SourceTableArn") or body.get("SourceTableName")
    if source_name is None:
        raise invalid("Either SourceTableArn or SourceTableName must be specified")
    if body.get("UseLatestRestorableTime") and "RestoreDateTime" in body:
        raise invalid("Only one of UseLatestRestorableTime or RestoreDateTime can be specified")
    target = restore.check_target(ctx, caller, body["TargetTableName"])
    entry = _table(ctx, caller, source_name)
    history = ctx.db.histories.get(entry.key)
    if not entry.point_in_time_recovery or history is None:
        raise PointInTimeRecoveryUnavailableException(
            f"Point in time recovery is not enabled for table '{entry.name}'")
    if body.get("UseLatestRestorableTime"):
        when = continuous.window(ctx, entry)[1]
    elif "RestoreDateTime" in body:
        when = body["RestoreDateTime"]
        if not continuous.restorable(ctx, entry, when):
            raise InvalidRestoreTimeException(
                "RestoreDateTime must be between EarliestRestorableDateTime and LatestRestorableDateTime")
    else:
        raise invalid("Either RestoreDateTime or UseLatestRestorableTime must be specified")
    keys, records = continuous.as_of(ctx, entry, when)
    meta = orjson.loads(encode_meta(entry))  # the source's current settings (GSIs, LSIs, billing, SSE)
    summary = {"SourceTableArn": entry.arn, "RestoreDateTime": when}
    return restore.restore(ctx, caller, target, meta, body, keys, records, summary)
