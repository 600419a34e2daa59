"""A table's metadata as persisted bytes, and its restoration into a Database.

Every TableEntry field is persisted except the data itself (capacity meters live in
storage.capacity), so fields added to TableEntry later are persisted without changes here.
The partition count is stored too, so snapshot chunks land in the partitions they came from.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

import orjson

from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.index import build_indexes, schema_of

log = logging.getLogger("dynalocal.durability")

RUNTIME_FIELDS = frozenset({"table"})
PERSISTED_FIELDS = tuple(f.name for f in dataclasses.fields(TableEntry) if f.name not in RUNTIME_FIELDS)


def _unserializable(value: Any) -> None:
    log.warning("table metadata value of type %s is not persisted", type(value).__name__)
    return None


def encode_meta(entry: TableEntry) -> bytes:
    """The persisted form of a table's metadata (JSON)."""
    meta = {name: getattr(entry, name) for name in PERSISTED_FIELDS}
    if "contributor_insights" in meta:  # keyed by index name, None meaning the table itself
        meta["contributor_insights"] = [[k, v] for k, v in meta["contributor_insights"].items()]
    meta["partitions"] = len(entry.table.partitions)
    return orjson.dumps(meta, default=_unserializable)


def restore_meta(db: Database, name: str, raw: bytes) -> TableEntry:
    """Create the table from persisted metadata, or update it in place if it exists."""
    meta = orjson.loads(raw)
    partitions = meta.pop("partitions", 1)
    meta = {k: v for k, v in meta.items() if k in PERSISTED_FIELDS}  # fields since removed are ignored
    if "contributor_insights" in meta:
        meta["contributor_insights"] = {k: v for k, v in meta["contributor_insights"]}
    entry = db.tables.get(name)
    if entry is None:
        schema = schema_of(meta["key_schema"], meta["attribute_definitions"])
        entry = db.create(name, schema, partitions, **meta)
    else:
        for field, value in meta.items():
            setattr(entry, field, value)
    if len(entry.table.partitions) != partitions:
        entry.table.set_partition_count(partitions)
    return entry


def rebuild_indexes(entry: TableEntry) -> None:
    """Recreate and back-fill the secondary and vector indexes the metadata declares (indexes are not persisted)."""
    table = entry.table
    table.indexes.clear()
    build_indexes(table, entry.gsis, entry.lsis, entry.attribute_definitions, entry.billing_mode)
    for index in table.indexes.values():
        index.backfill(table)
    if entry.vector_indexes or table.vectors:
        from dynalocal.storage import vectors  # only for tables with vector indexes: numpy stays off start-up

        for name in list(table.vectors):
            vectors.detach(table, name)
        vectors.attach(table, [s for s in entry.vector_indexes if s["IndexStatus"] != "DELETING"],
                       entry.attribute_definitions)
