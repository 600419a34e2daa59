"""On-demand backups: what one is (a table's metadata and its items at the moment of the call), how
DynamoDB describes it, and where it is kept (ctx.db.backups; with a data directory also on disk).

Taking a backup copies no item: stored records are immutable tuples that writes replace rather than
change, so a backup holds each partition's key and record lists (one slice per partition) and
shares the records with the table (docs/behaviour/backups.md).
"""
from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import orjson

from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.errors import BackupInUseException, BackupNotFoundException
from dynalocal.journal import backups as files
from dynalocal.journal.tablemeta import encode_meta
from dynalocal.storage.database import TableEntry

SYSTEM_RETENTION = 35 * 86400  # a SYSTEM backup expires 35 days after it is taken


class Backup:
    """One backup: its description, the source table's metadata and its items (or the file holding them)."""

    __slots__ = ("arn", "name", "kind", "created", "available_at", "expires", "scope", "meta", "parts", "items",
                 "size", "path")

    def __init__(self, arn: str, name: str, kind: str, created: float, scope: str, meta: dict,
                 items: int, size: int, expires: float | None = None,
                 parts: list[files.Part] | None = None) -> None:
        self.arn, self.name, self.kind, self.created, self.scope = arn, name, kind, created, scope
        self.available_at = created
        self.expires = expires
        self.meta = meta  # journal.tablemeta's fields of the source table, plus TableName and TableArn
        self.parts = parts  # None: on disk only (after a restart)
        self.items, self.size = items, size
        self.path: Path | None = None

    def header(self) -> bytes:
        return orjson.dumps({"arn": self.arn, "name": self.name, "kind": self.kind, "created": self.created,
                             "expires": self.expires, "scope": self.scope, "meta": self.meta,
                             "items": self.items, "size": self.size})

    @classmethod
    def from_header(cls, raw: bytes) -> Backup:
        h = orjson.loads(raw)
        return cls(h["arn"], h["name"], h["kind"], h["created"], h["scope"], h["meta"], h["items"], h["size"],
                   h["expires"])

    def status(self, now: float) -> str:
        return "AVAILABLE" if now >= self.available_at else "CREATING"

    def contents(self) -> list[files.Part]:
        """The backup's items per source partition, in key order (read from its file after a restart)."""
        if self.parts is None:
            assert self.path is not None
            return files.read_parts(self.path)
        return self.parts


def take(ctx: Context, caller: Caller, entry: TableEntry, name: str, kind: str = "USER") -> Backup:
    """Back the table up as it is now (and, with a data directory, durably before returning)."""
    now = ctx.wall_clock()
    parts: list[files.Part] = []
    for part in entry.table.partitions:
        chunk = next(part.chunks(None, None, (True, True), size=len(part)), None) if len(part) else None
        parts.append(chunk if chunk is not None else ([], []))
    meta = orjson.loads(encode_meta(entry))
    meta.update(TableName=entry.name, TableArn=entry.arn)
    arn = f"{entry.arn}/backup/{int(now * 1000):013d}-{secrets.token_hex(4)}"
    expires = now + SYSTEM_RETENTION if kind == "SYSTEM" else None
    backup = Backup(arn, name, kind, now, caller.scope, meta, entry.table.item_count, entry.table.size_bytes,
                    expires, parts)
    if kind == "USER":
        backup.available_at = now + ctx.settings.transient_delay
    if ctx.settings.data_dir is not None:
        backup.path = files.write(files.directory_of(ctx.settings.data_dir), arn.rsplit("/", 1)[1],
                                  backup.header(), parts)
    ctx.db.backups[arn] = backup
    return backup


def load(ctx: Context) -> int:
    """Put the backups of the data directory in the catalogue (at start-up); return how many."""
    if ctx.settings.data_dir is None:
        return 0
    for path, raw in files.headers(files.directory_of(ctx.settings.data_dir)):
        backup = Backup.from_header(raw)
        backup.path = path
        ctx.db.backups[backup.arn] = backup
    return len(ctx.db.backups)


def find(ctx: Context, caller: Caller, arn: str, usable: bool = False) -> Backup:
    """The backup an ARN names for this caller; `usable`: refuse one still CREATING."""
    backup = ctx.db.backups.get(arn)
    if backup is None or backup.scope != caller.scope:
        raise BackupNotFoundException("Backup not found for the given BackupARN.")
    if usable and backup.status(ctx.wall_clock()) != "AVAILABLE":
        raise BackupInUseException(f"Backup is being created: {arn}")
    return backup


def forget(ctx: Context, backup: Backup) -> None:
    del ctx.db.backups[backup.arn]
    if backup.path is not None:
        files.remove(backup.path)


def forget_all(ctx: Context) -> None:
    for backup in list(ctx.db.backups.values()):
        forget(ctx, backup)


def details(backup: Backup, now: float) -> dict[str, Any]:
    """BackupDetails."""
    out: dict[str, Any] = {"BackupArn": backup.arn, "BackupName": backup.name, "BackupSizeBytes": backup.size,
                           "BackupStatus": backup.status(now), "BackupType": backup.kind,
                           "BackupCreationDateTime": backup.created}
    if backup.expires is not None:
        out["BackupExpiryDateTime"] = backup.expires
    return out


def summary(backup: Backup, now: float) -> dict[str, Any]:
    """A ListBackups BackupSummary."""
    meta = backup.meta
    out = {"TableName": meta["TableName"], "TableId": meta["table_id"], "TableArn": meta["TableArn"],
           **details(backup, now)}
    return out


def _throughput(read: int, write: int) -> dict[str, int]:
    return {"ReadCapacityUnits": read, "WriteCapacityUnits": write}


def description(backup: Backup, now: float, status: str | None = None) -> dict[str, Any]:
    """BackupDescription: the backup, its source table and the table's features at the time."""
    meta = backup.meta
    backup_details = details(backup, now)
    if status is not None:
        backup_details["BackupStatus"] = status
    source = {"TableName": meta["TableName"], "TableId": meta["table_id"], "TableArn": meta["TableArn"],
              "TableSizeBytes": backup.size, "KeySchema": meta["key_schema"],
              "TableCreationDateTime": meta["created"], "ItemCount": backup.items,
              "ProvisionedThroughput": _throughput(meta["read_capacity"], meta["write_capacity"]),
              "BillingMode": meta["billing_mode"]}
    features: dict[str, Any] = {}
    if meta["lsis"]:
        features["LocalSecondaryIndexes"] = [{k: i[k] for k in ("IndexName", "KeySchema", "Projection")}
                                             for i in meta["lsis"]]
    if meta["gsis"]:
        features["GlobalSecondaryIndexes"] = [
            {**{k: i[k] for k in ("IndexName", "KeySchema", "Projection")},
             "ProvisionedThroughput": i.get("ProvisionedThroughput") or _throughput(0, 0)} for i in meta["gsis"]]
    stream = meta["extra"].get("StreamSpecification")
    if stream:
        features["StreamDescription"] = stream
    if meta["ttl_attribute"]:
        features["TimeToLiveDescription"] = {"TimeToLiveStatus": "ENABLED", "AttributeName": meta["ttl_attribute"]}
    if meta["extra"].get("SSESpecification", {}).get("Enabled"):
        features["SSEDescription"] = {"Status": "ENABLED", "SSEType": "KMS"}
    return {"BackupDetails": backup_details, "SourceTableDetails": source, "SourceTableFeatureDetails": features}
