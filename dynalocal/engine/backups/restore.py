"""A restore: a new table from a source table's metadata (with the request's overrides) and items.

The table is created by CreateTable's own handler (same checks, indexes, capacity, CREATING status
with `--transient-delay`); its items are then put into its partitions directly (it is new: no
listener has anything to follow) with their GSI, LSI and vector index entries, SLICE at a time.
A small restore is loaded within the request; a large one in the background on the event loop
(engine.jobs), the table CREATING with RestoreInProgress meanwhile (engine.loads), so other requests
are served. With a data directory every item is journaled (with the request, or slice by slice);
a restore cut off by a stop is removed at the next start. Tags, stream, TTL and PITR are not
restored (docs/behaviour/backups.md §2).
"""
from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import orjson

from dynalocal.engine import jobs, loads, tables, vector_specs
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import new_table_name
from dynalocal.engine.context import Context
from dynalocal.errors import TableAlreadyExistsException, invalid
from dynalocal.storage.database import TableEntry
from dynalocal.storage.partition import Partition, Record
from dynalocal.storage.table import Table

log = logging.getLogger("dynalocal")

SLICE = 5_000  # items loaded per slice (tens of milliseconds with one GSI): the longest a request waits
INLINE = 10_000  # restores of at most this many items are loaded within the request
INDEX_MEMBERS = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput", "OnDemandThroughput")
VECTOR_MEMBERS = ("IndexName", "VectorAttribute", "SearchSchema", "Projection", "Dimensions", "DistanceFunction")


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


def vector_indexes(source: list[dict], override: list[dict] | None) -> list[dict]:
    """The restored table's vector indexes (built from the data): the source's (those not being
    deleted), or those of them VectorIndexOverride names (it may only drop indexes)."""
    live = {s["IndexName"]: {k: s[k] for k in VECTOR_MEMBERS if k in s}
            for s in source if s.get("IndexStatus") != "DELETING"}
    if override is None:
        return list(live.values())
    for index in override:
        if index["IndexName"] not in live:
            raise invalid(f"VectorIndex override names an index the source table does not have: {index['IndexName']}")
    return [live[index["IndexName"]] for index in override]


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
    vectors = vector_indexes(meta.get("vector_indexes") or [], body.get("VectorIndexOverride"))
    if gsis:
        out["GlobalSecondaryIndexes"] = gsis
    if lsis:
        out["LocalSecondaryIndexes"] = lsis
    if vectors:
        out["VectorIndexes"] = vectors
    used = {e["AttributeName"] for e in meta["key_schema"]} | {
        e["AttributeName"] for i in gsis + lsis for e in i["KeySchema"]} | vector_specs.schema_names(vectors)
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
    order); answer the RestoreTableFromBackup / RestoreTableToPointInTime response. Up to INLINE items
    are loaded within the request; more in the background, the table CREATING meanwhile (engine.loads)."""
    tables.create_table(ctx, caller, creation_request(target, meta, body))
    entry = ctx.db.tables[caller.scope + target]
    entry.extra["RestoreSummary"] = summary
    if len(keys) <= INLINE:
        for _ in _load(ctx, entry, keys, records, in_request=True):
            pass
    else:
        loads.hold(entry)
        jobs.background(ctx, _background(ctx, entry, keys, records))
    description = tables.describe(entry, status="CREATING")
    description["RestoreSummary"] = {**summary, "RestoreInProgress": True}
    return {"TableDescription": description}


def _background(ctx: Context, entry: TableEntry, keys: list[bytes], records: list[Record]) -> Iterator[float]:
    """A large restore's load, slice by slice; then the table is ACTIVE. A failure removes the table; a
    stop leaves it to the next start (engine.loads)."""
    try:
        yield from _load(ctx, entry, keys, records, in_request=False)
    except Exception:
        log.exception("restore of table %s failed: the table is removed", entry.name)
        loads.abandon(ctx, entry)
        return
    loads.release(ctx, entry)


def _load(ctx: Context, entry: TableEntry, keys: list[bytes], records: list[Record],
          in_request: bool) -> Iterator[float]:
    """Put the items (sorted by key) in the new table's partitions with their index entries, SLICE at a
    time; with a data directory each slice is journaled (with the request, or as a batch of its own)."""
    table, journal = entry.table, ctx.journal
    for part, (a, b) in zip(table.partitions, spans(table, keys)):
        for start in range(a, b, SLICE):
            end = min(start + SLICE, b)
            with nullcontext() if in_request else loads.journaled(ctx, None, entry):
                fill(table, part, keys[start:end], records[start:end])
                if journal is not None:
                    journal.adopt(table, zip(keys[start:end], records[start:end]))
            yield 0.0


def fill(table: Table, part: Partition, keys: list[bytes], records: list[Record]) -> None:
    """Put items of a new table (no listener has anything to follow) in its partition `part`, with
    their secondary and vector index entries."""
    put = part.put
    for key, record in zip(keys, records):
        put(key, record)
    indexes, vectors = list(table.indexes.values()), list(table.vectors.values())
    if not indexes and not vectors:
        return
    loads_json = orjson.loads
    for key, record in zip(keys, records):
        item = loads_json(record[0])
        for index in indexes:
            index.add(key, item, record)
        if vectors:
            cache: dict = {}
            for vector in vectors:
                vector.put(key, item, cache)


def spans(table: Table, keys: list[bytes]) -> list[tuple[int, int]]:
    """For sorted keys: the (start, end) slice of them each of the table's partitions holds."""
    starts = [bisect_left(keys, part.lo_key) for part in table.partitions] + [len(keys)]
    return list(zip(starts, starts[1:]))
