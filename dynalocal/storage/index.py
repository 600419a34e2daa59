"""Secondary indexes: an ItemStore of projected records, maintained by a Table listener.

Index store key layout (bytes, compared bytewise):

    token(8) | len(ipk)(2) | ipk | escaped(index sort bytes) + TERM | table encoded key

Index sort bytes are escaped (0x00 -> 0x00 0xFF) and terminated by 0x00 0x01, which keeps
their order and makes them prefix-free, so the table key appended after them only breaks
ties: index keys need not be unique. GSIs hash their own partition key, so each has its own
partitions; LSIs share the table's partition key and hence its tokens.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import orjson

from dynalocal.capacity import write_units
from dynalocal.errors import ValidationException, invalid
from dynalocal.storage.mutation import Mutation
from dynalocal.storage.partition import Record
from dynalocal.storage.table import ItemStore, Table
from dynalocal.storage.vectorcheck import check_item as check_vectors
from dynalocal.values import numbers
from dynalocal.values.attributes import item_size
from dynalocal.values.blob import dumps
from dynalocal.values.keys import (
    HASH_TOO_BIG,
    MAX_HASH_BYTES,
    MAX_RANGE_BYTES,
    RANGE_TOO_BIG,
    SHORT_HASH,
    SHORT_RANGE,
    TERM,
    TERM_NEXT,
    KeySchema,
    escape,
    raw_bytes,
    sort_bytes,
)
from dynalocal.values.multikey import MultiKey


def schema_of(elements: list[dict], definitions: Iterable[dict]) -> KeySchema:
    """KeySchema of a wire KeySchema list, with types from AttributeDefinitions (for a multi-attribute
    GSI key: its first HASH and first RANGE attribute)."""
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    h = elements[0]["AttributeName"]
    r = next((e["AttributeName"] for e in elements if e["KeyType"] == "RANGE"), None)
    if r is None:
        return KeySchema(h, types[h])
    return KeySchema(h, types[h], r, types[r])


def new_gsi(spec: dict, definitions: list[dict], table_schema: KeySchema, billing_mode: str) -> Index:
    """The (empty) GSI a CreateTable or UpdateTable spec declares."""
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    return Index(spec["IndexName"], "GSI", schema_of(spec["KeySchema"], definitions), table_schema,
                 spec["Projection"], gsi_partitions(spec, billing_mode), MultiKey.of(spec["KeySchema"], types))


class Index(ItemStore):
    """One GSI or LSI: projected records keyed by index key then table key."""

    def __init__(self, name: str, kind: str, schema: KeySchema, table_schema: KeySchema,
                 projection: dict, partition_count: int = 1, multi: MultiKey | None = None) -> None:
        super().__init__(partition_count)
        self.name = name
        self.kind = kind  # "GSI" | "LSI"
        self.schema = schema  # with `multi`: its first HASH and RANGE attributes only (what displays show)
        self.multi = multi  # a multi-attribute GSI key (docs/behaviour/multikey-gsi.md), or None
        self.table_schema = table_schema
        self.projection_type = projection.get("ProjectionType", "ALL")
        own = multi.names if multi is not None else schema.names
        names = list(dict.fromkeys(table_schema.names + own))
        # (name, type, size limit) of each index key attribute, for check_index_keys
        hashes = multi.hash_attrs if multi is not None else ((schema.hash_name, schema.hash_type),)
        ranges = multi.range_attrs if multi is not None else (
            ((schema.range_name, schema.range_kind),) if schema.range_name is not None else ())
        self.key_attrs: tuple[tuple[str, str, int], ...] = tuple(
            [(n, k, MAX_HASH_BYTES) for n, k in hashes] + [(n, k, MAX_RANGE_BYTES) for n, k in ranges])
        self.key_names: tuple[str, ...] = tuple(names)  # LastEvaluatedKey attributes
        if self.projection_type == "ALL":
            self.attrs: frozenset[str] | None = None
        else:
            extra = (projection.get("NonKeyAttributes") or ()) if self.projection_type == "INCLUDE" else ()
            self.attrs = frozenset(names) | frozenset(extra)

    @property
    def hash_kind(self) -> str:
        """The partition key's type as the capacity report shows keys: "(S,N)" for a HASH tuple."""
        return self.multi.hash_kind if self.multi is not None else self.schema.hash_type

    @property
    def is_global(self) -> bool:
        return self.kind == "GSI"

    def projects(self, names: Iterable[str]) -> bool:
        """Whether every one of these top-level attributes is stored in the index."""
        return self.attrs is None or self.attrs.issuperset(names)

    # -- keys ---------------------------------------------------------------------------------

    def prefix(self, hash_value: str) -> bytes:
        """Store-key prefix of all entries with this index partition key value."""
        return self.schema.partition_prefix(hash_value)

    def store_key(self, item: dict, table_key: bytes) -> bytes | None:
        """The entry key of an item, or None when it lacks an index key (sparse index)."""
        if self.multi is not None:
            return self.multi.store_key(item, table_key)
        schema = self.schema
        hav = item.get(schema.hash_name)
        if hav is None:
            return None
        h = hav.get(schema.hash_type)
        if h is None or h == "":
            return None
        r = None
        if schema.range_name is not None:
            rav = item.get(schema.range_name)
            if rav is None:
                return None
            r = rav.get(schema.range_type)
            if r is None or r == "":
                return None
        if (len(h) > SHORT_HASH or (r is not None and len(r) > SHORT_RANGE)) and not schema.fits(h, r):
            return None  # an oversized index key (stored before the index existed): not in the index
        key = schema.partition_prefix(h)
        if r is not None:
            key += escape(sort_bytes(schema.range_kind, r)) + TERM
        return key + table_key

    def start_key(self, esk: dict) -> bytes:
        """Store key of a validated ExclusiveStartKey (index keys plus table keys)."""
        if self.multi is not None:  # numbers as items store them, so `1.0` finds the entries of `1`
            esk = {**esk, **{n: {"N": numbers.canonical(esk[n]["N"])} for n, k, _ in self.key_attrs if k == "N"}}
        key = self.store_key(esk, self.table_schema.encode_item(esk))
        if key is not None:
            return key
        for name, kind, _ in self.key_attrs:  # an empty S or B key value is not in any index
            if esk[name][kind] == "":
                what = "string" if kind == "S" else "binary"
                raise invalid(f"The AttributeValue for a key attribute cannot contain an empty {what} value. "
                              f"Key: {name}")
        if self.multi is not None:  # values beyond the size limits: raise their error
            hashes, ranges = self.multi.values_of(esk) or ([], [])
            self.multi.partition_prefix(hashes)
            self.multi.sort_prefix(ranges)
        else:
            schema = self.schema
            schema.encode(esk[schema.hash_name][schema.hash_type],
                          esk[schema.range_name][schema.range_type] if schema.range_name is not None else None)
        raise AssertionError("an index start key that fits the limits has a store key")

    # -- maintenance --------------------------------------------------------------------------

    def entry(self, item: dict, record: Record) -> Record:
        """The index record of a table item: the table's record itself when projecting ALL."""
        if self.attrs is None:
            return record
        projected = {k: v for k, v in item.items() if k in self.attrs}
        return dumps(projected), item_size(projected)

    def replace(self, table_key: bytes, old_item: dict | None, new_item: dict | None,
                new_record: Record | None) -> float:
        """Follow one table write; return the index write units it costs (0 if untouched)."""
        old_key = self.store_key(old_item, table_key) if old_item is not None else None
        new_key = self.store_key(new_item, table_key) if new_item is not None else None
        units = 0.0
        old_entry = None
        if old_key is not None:
            if old_key != new_key:
                old_entry = self.partition_of(old_key).delete(old_key)
                if old_entry is not None:
                    units += write_units(old_entry[1])
            else:
                old_entry = self.get(old_key)
        if new_key is not None:
            assert new_item is not None and new_record is not None  # a new key comes from a written item
            entry = self.entry(new_item, new_record)
            self.partition_of(new_key).put(new_key, entry)
            if old_key != new_key or old_entry is None or old_entry[0] != entry[0]:
                units += write_units(entry[1])  # an unchanged entry costs no index write
        return units

    def add(self, table_key: bytes, item: dict, record: Record) -> None:
        """Put the entry of a table item the index does not hold yet (back-fills and restores)."""
        store_key = self.store_key(item, table_key)
        if store_key is not None:  # store_key skips oversized index keys, as DynamoDB does
            self.partition_of(store_key).put(store_key, self.entry(item, record))

    def backfill(self, table: Table) -> None:
        """Load every existing table item (used when a GSI is added by UpdateTable)."""
        for part in table.partitions:
            for key, record in part.items():
                self.add(key, orjson.loads(record[0]), record)


def maintain(m: Mutation) -> dict[str, float] | None:
    """Table listener: keep every index of the table in step with one write; return the
    write units each index was charged (handlers report them as INDEXES capacity)."""
    assert m.table is not None  # set before listeners run
    indexes = m.table.indexes
    if not indexes:
        return None
    units: dict[str, float] = {}
    old_item, new_item = m.old_item, m.new_item
    for name, index in indexes.items():
        spent = index.replace(m.key, old_item, new_item, m.new)
        if spent:
            units[name] = spent
    return units


def attach(table: Table, index: Index) -> None:
    """Add an index to a table (starting its maintenance if it is the first)."""
    if maintain not in table.listeners:
        table.listeners.insert(0, maintain)
    table.indexes[index.name] = index


def detach(table: Table, name: str) -> None:
    table.indexes.pop(name, None)


def gsi_partitions(gsi: dict, billing_mode: str) -> int:
    """Partition count of a GSI: the classic throughput rule, 4 when on demand."""
    pt = gsi.get("ProvisionedThroughput")
    if billing_mode == "PAY_PER_REQUEST" or not pt:
        return 4
    return max(1, math.ceil(pt["ReadCapacityUnits"] / 3000 + pt["WriteCapacityUnits"] / 1000))


def build_indexes(table: Table, gsis: list[dict], lsis: list[dict], definitions: list[dict],
                  billing_mode: str) -> None:
    """Create the indexes declared at CreateTable."""
    for gsi in gsis:
        attach(table, new_gsi(gsi, definitions, table.schema, billing_mode))
    for lsi in lsis:
        attach(table, Index(lsi["IndexName"], "LSI", schema_of(lsi["KeySchema"], definitions), table.schema,
                            lsi["Projection"], len(table.partitions)))


def check_index_keys(table: Table, item: dict, update: bool = False) -> None:
    """Reject a written item whose index key attribute has the wrong type, is empty or too large.
    (`update`: the item comes from UpdateItem; DynamoDB's messages are the same.) Vector indexes
    check theirs too (storage.vectors.check_item)."""
    if table.vectors:
        check_vectors(table, item)
    for index in table.indexes.values():
        for name, kind, limit in index.key_attrs:
            if name in table.schema.name_set:
                continue
            av = item.get(name)
            if av is None:
                continue
            ((actual, value),) = av.items()
            if actual != kind:  # "Type mismatch", through UpdateItem too (docs/behaviour/validation.md §5)
                raise invalid(f"Type mismatch for Index Key {name} Expected: {kind} Actual: {actual} "
                              f"IndexName: {index.name}")
            if value == "":
                raise ValidationException(
                    "One or more parameter values are not valid. A value specified for a secondary index key is not "
                    "supported. The AttributeValue for a key attribute cannot contain an empty "
                    f"{'string' if kind == 'S' else 'binary'} value. IndexName: {index.name}, IndexKey: {name}")
            if kind != "N" and len(raw_bytes(kind, value)) > limit:
                raise invalid(HASH_TOO_BIG if limit == MAX_HASH_BYTES else RANGE_TOO_BIG)


__all__ = ["Index", "TERM", "TERM_NEXT", "escape", "maintain", "attach", "detach", "build_indexes",
           "check_index_keys", "schema_of", "gsi_partitions", "new_gsi"]
