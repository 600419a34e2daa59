"""A restore: a new table from a source table's metadata (with the request's overrides) and items.

The table is created by CreateTable's own handler (same checks, indexes, capacity, CREATING status
with `--transient-delay`); its items are then loaded into its partitions directly (it is new: no
listener has anything to follow), its indexes back-filled, and with a data directory every item is
logged with the request, so the restore is durable once answered. Tags, stream, TTL and PITR are
not restored (docs/behaviour/backups.md).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

import orjson

from dynalocal.engine import tables
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import new_table_name
from dynalocal.engine.context import Context
from dynalocal.errors import TableAlreadyExistsException, invalid
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import Index
from dynalocal.storage.partition import Record
from dynalocal.storage.table import Table

INDEX_MEMBERS = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput", "OnDemandThroughput")


def check_target(ctx: Context, caller: Caller, target: str) -> str:
    """The target table's name; one that exists already is TableAlreadyExistsException."""
    name = new_table_name(target)
    key = caller.scope + name
    if key in ctx.db.tables or key in ctx.db.deleting:
        raise TableAlreadyExistsException(f"Table already exists: {name}")
    return name


def _indexes(source: list[dict], override: list[dict] | None, billing: str, table_pt: dict | None,
             kind: str) -> list[dict]:
    """The restored table's GSIs or LSIs: the source's, or the override's (naming only source indexes)."""
    known = {i["IndexName"] for i in source}
    chosen = source if override is None else override
    out = []
    for index in chosen:
        if index["IndexName"] not in known:
            raise invalid(f"{kind} override names an index the source table does not have: {index['IndexName']}")
        spec = {k: index[k] for k in INDEX_MEMBERS if k in index}
        if kind == "LocalSecondaryIndex":
            spec.pop("ProvisionedThroughput", None)
            spec.pop("OnDemandThroughput", None)
        elif billing == "PAY_PER_REQUEST":
            spec.pop("ProvisionedThroughput", None)
        elif "ProvisionedThroughput" not in spec and table_pt is not None:
            spec["ProvisionedThroughput"] = table_pt
        out.append(spec)
    return out


def creation_request(target: str, meta: dict, body: dict) -> dict[str, Any]:
    """The CreateTable request that makes the restored table (source metadata + the request's overrides)."""
    billing = body.get("BillingModeOverride", meta["billing_mode"])
    out: dict[str, Any] = {"TableName": target, "KeySchema": meta["key_schema"], "BillingMode": billing}
    pt = None
    if billing == "PROVISIONED":
        pt = body.get("ProvisionedThroughputOverride") or {
            "ReadCapacityUnits": meta["read_capacity"] or 5, "WriteCapacityUnits": meta["write_capacity"] or 5}
        out["ProvisionedThroughput"] = pt
    gsis = _indexes(meta["gsis"], body.get("GlobalSecondaryIndexOverride"), billing, pt, "GlobalSecondaryIndex")
    lsis = _indexes(meta["lsis"], body.get("LocalSecondaryIndexOverride"), billing, pt, "LocalSecondaryIndex")
    if gsis:
        out["GlobalSecondaryIndexes"] = gsis
    if lsis:
        out["LocalSecondaryIndexes"] = lsis
    used = {e["AttributeName"] for e in meta["key_schema"]} | {
        e["AttributeName"] for i in gsis + lsis for e in i["KeySchema"]}
    out["AttributeDefinitions"] = [d for d in meta["attribute_definitions"] if d["AttributeName"] in used]
    extra = meta["extra"]
    for member, override in (("SSESpecification", "SSESpecificationOverride"),
                             ("OnDemandThroughput", "OnDemandThroughputOverride")):
        value = body.get(override, extra.get(member))
        if value is not None:
            out[member] = value
    if "TableClass" in extra:
        out["TableClass"] = extra["TableClass"]
    return out


def restore(ctx: Context, caller: Caller, target: str, meta: dict, body: dict, keys: list[bytes],
            records: list[Record], summary: dict[str, Any]) -> dict:
    """Create `target` from `meta` and the overrides in `body`, holding these items (all keys, in key
    order); answer the RestoreTableFromBackup / RestoreTableToPointInTime response."""
    tables.create_table(ctx, caller, creation_request(target, meta, body))
    entry = ctx.db.tables[caller.scope + target]
    fill(entry, keys, records)
    if ctx.journal is not None:
        ctx.journal.adopt(entry.table)
    entry.extra["RestoreSummary"] = summary
    description = tables.describe(entry, status="CREATING")
    description["RestoreSummary"] = {**summary, "RestoreInProgress": True}
    return {"TableDescription": description}


def fill(entry: TableEntry, keys: list[bytes], records: list[Record]) -> None:
    """Load items (sorted by key) into a new table's partitions and back-fill its indexes."""
    table = entry.table
    for part, (a, b) in zip(table.partitions, spans(table, keys)):
        if a < b:
            part.load(keys[a:b], records[a:b])
    for index in table.indexes.values():
        _backfill(index, table)


def spans(table: Table, keys: list[bytes]) -> list[tuple[int, int]]:
    """For sorted keys: the (start, end) slice of them each of the table's partitions holds."""
    starts = [bisect_left(keys, part.lo_key) for part in table.partitions] + [len(keys)]
    return list(zip(starts, starts[1:]))


def _backfill(index: Index, table: Table) -> None:
    """Index.backfill in bulk: each index partition's entries loaded at once (one sort-based build) rather
    than inserted one by one; the index is new and empty."""
    loads = orjson.loads
    found: dict[int, tuple[list[bytes], list[Record]]] = {}
    for part in table.partitions:
        for key, record in part.items():
            item = loads(record[0])
            store_key = index.store_key(item, key)
            if store_key is not None:  # oversized index keys are skipped, as DynamoDB does
                i = index.partition_index(store_key)
                keys_records = found.get(i)
                if keys_records is None:
                    keys_records = found[i] = ([], [])
                keys_records[0].append(store_key)
                keys_records[1].append(index.entry(item, record))
    for i, (keys, records) in found.items():
        index.partitions[i].load(keys, records)
