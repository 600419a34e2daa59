"""Vector index definitions: CreateTable `VectorIndexes`, UpdateTable `VectorIndexUpdates`, their
lifecycle (IndexStatus, Backfilling) and DescribeTable's `VectorIndexes` (docs/behaviour/vectors.md §1-2).

A definition is kept in `TableEntry.vector_indexes` as its wire form plus IndexStatus, Backfilling
and Since (when its phase began), so it is journaled with the table's metadata. An index added by
UpdateTable is CREATING without back-fill for `--transient-delay` seconds, then CREATING with
Backfilling for as long again, then ACTIVE; its data is built at once (searches wait for ACTIVE).
"""
from __future__ import annotations

from typing import Any

from dynalocal.engine.context import Context
from dynalocal.engine.index_specs import check_non_key_total, check_projection
from dynalocal.errors import (
    LimitExceededException,
    ResourceInUseException,
    ResourceNotFoundException,
    ValidationException,
    invalid,
)
from dynalocal.storage.database import TableEntry

MAX_VECTOR_INDEXES = 5
MAX_DIMENSIONS = 4096
MAX_INLINE_FILTERS = 18
ON_DEMAND_ONLY = "Vector indexes are only supported for PAY_PER_REQUEST tables"
ONE_ONLINE = "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"
_INTERNAL = ("IndexStatus", "Backfilling", "Since")


def check_billing(entry_or_specs: bool, billing: str) -> None:
    """Vector indexes need an on-demand table (also refusing a later switch to PROVISIONED)."""
    if entry_or_specs and billing != "PAY_PER_REQUEST":
        raise invalid(ON_DEMAND_ONLY)


def _check_one(spec: dict, types: dict[str, str], dims: dict[str, int]) -> None:
    """One VectorIndex definition against the attribute types and the dimensions already used per attribute."""
    if not 1 <= spec["Dimensions"] <= MAX_DIMENSIONS:
        raise invalid(f"Number of dimensions must be between 1 and {MAX_DIMENSIONS} inclusive.")
    attribute = spec["VectorAttribute"]["AttributeName"]
    if attribute in types:
        raise invalid(f"Conflicting attribute definition for '{attribute}'. An attribute cannot be defined in "
                      "AttributeDefinitions when used as a VectorAttribute.")
    if dims.setdefault(attribute, spec["Dimensions"]) != spec["Dimensions"]:
        raise invalid(f"Conflicting attribute definition for '{attribute}'. All VectorIndexes on the same vector "
                      "attribute must use the same dimensions.")
    schema = spec.get("SearchSchema") or []
    kinds = [e["SearchSchemaElementType"] for e in schema]
    if kinds.count("HASH") > 1:  # our wording: DynamoDB's text is not known (docs/behaviour/vectors.md §2)
        raise invalid("SearchSchema can contain at most one element of type HASH")
    if kinds.count("INLINE_FILTER") > MAX_INLINE_FILTERS:
        raise invalid(f"SearchSchema can contain at most {MAX_INLINE_FILTERS} elements of type INLINE_FILTER")
    if any(e["AttributeName"] not in types for e in schema):
        raise invalid("One element in SearchSchema is not defined in attribute definitions")
    check_projection(spec)


def check_create_table(body: dict, types: dict[str, str], billing: str, names: set[str]) -> list[dict]:
    """CreateTable's VectorIndexes, checked; `names` are the table's other index names."""
    specs = body.get("VectorIndexes")
    if not specs:
        return []
    check_billing(True, billing)
    if len(specs) > MAX_VECTOR_INDEXES:
        raise invalid(f"VectorIndex count exceeds the per-table limit of {MAX_VECTOR_INDEXES}")
    dims: dict[str, int] = {}
    seen = set(names)
    for spec in specs:
        _check_one(spec, types, dims)
        if spec["IndexName"] in seen:
            raise invalid(f"Duplicate index name: {spec['IndexName']}")
        seen.add(spec["IndexName"])
    return [{**spec, "IndexStatus": "ACTIVE"} for spec in specs]


def schema_names(specs: list[dict]) -> set[str]:
    """The attributes the SearchSchemas use (they count as used AttributeDefinitions)."""
    return {e["AttributeName"] for spec in specs for e in spec.get("SearchSchema") or ()}


def check_update(ctx: Context, entry: TableEntry, body: dict, billing: str, definitions: list[dict]) -> None:
    """UpdateTable's VectorIndexUpdates (and a billing switch of a table that has vector indexes), checked."""
    settle(ctx, entry)
    updates = body.get("VectorIndexUpdates") or []
    live = [s for s in entry.vector_indexes if s["IndexStatus"] != "DELETING"]
    check_billing(bool(live or updates), billing)
    if not updates:
        return
    gsi_online = sum(1 for u in body.get("GlobalSecondaryIndexUpdates") or ()
                     if u.get("Create") is not None or u.get("Delete") is not None)
    if len(updates) + gsi_online > 1:
        raise LimitExceededException(ONE_ONLINE)
    update = updates[0]
    target = (update.get("Delete") or {}).get("IndexName")  # deleting a back-filling index is allowed
    busy = any(s["IndexStatus"] != "ACTIVE" and s["IndexName"] != target for s in entry.vector_indexes) or any(
        g.get("IndexStatus", "ACTIVE") != "ACTIVE" for g in entry.gsis)
    if update.get("Create") is not None:
        _check_create(entry, update["Create"], body, definitions, live)
    elif update.get("Delete") is not None:
        _check_delete(entry, update["Delete"]["IndexName"])
    else:
        raise invalid("One of VectorIndexUpdate.Create, VectorIndexUpdate.Delete must not be null")
    if busy:  # another index change still under way
        raise LimitExceededException(ONE_ONLINE)


def _check_create(entry: TableEntry, spec: dict, body: dict, definitions: list[dict], live: list[dict]) -> None:
    name = spec["IndexName"]
    for current in entry.vector_indexes:
        if current["IndexName"] == name:
            if current["IndexStatus"] == "CREATING":
                raise ResourceInUseException("Attempt to change a resource which is still in use: Index is being "
                                             f"created.  Table: {entry.name} Index: {name}")
            raise ValidationException("Attempting to create an index which already exists")
    if name in {i["IndexName"] for i in entry.gsis + entry.lsis}:
        raise ValidationException("Attempting to create an index which already exists")
    if len(live) + 1 > MAX_VECTOR_INDEXES:
        raise LimitExceededException("Subscriber limit exceeded: Number of vector secondary indexes exceeds "
                                     f"per-table limit of {MAX_VECTOR_INDEXES}")
    given = {d["AttributeName"]: d["AttributeType"] for d in body.get("AttributeDefinitions") or ()}
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    attribute = spec["VectorAttribute"]["AttributeName"]
    dims = {s["VectorAttribute"]["AttributeName"]: s["Dimensions"] for s in live}
    if attribute in types:  # defined for the table (or in this request): the same conflict
        _check_one(spec, {**given, attribute: types[attribute]}, dims)
    _check_one(spec, given, dims)  # SearchSchema attributes: defined in this request (docs/behaviour/vectors.md §2)
    check_non_key_total([*entry.gsis, *entry.lsis, *live, spec])


def _check_delete(entry: TableEntry, name: str) -> None:
    for current in entry.vector_indexes:
        if current["IndexName"] == name and current["IndexStatus"] != "DELETING":
            if current["IndexStatus"] == "CREATING" and not current.get("Backfilling"):
                raise ResourceInUseException(
                    "Attempt to change a resource which is still in use: Index creation is in resource allocation "
                    "phase. Retry deletion during backfilling phase or when the index is active. "
                    f"Table: {entry.name} Index: {name}")
            return
    raise ResourceNotFoundException(f"Requested resource not found: Index: {name} not found")


def build(entry: TableEntry, definitions: list[dict]) -> None:
    """Create the storage of a new table's vector indexes."""
    if entry.vector_indexes:
        from dynalocal.storage import vectors  # only for tables with vector indexes: numpy stays off start-up

        vectors.attach(entry.table, entry.vector_indexes, definitions)


def apply_update(ctx: Context, entry: TableEntry, body: dict, definitions: list[dict]) -> None:
    """Carry out a checked VectorIndexUpdate: build (and back-fill) a new index, or drop one."""
    if not body.get("VectorIndexUpdates"):
        return
    from dynalocal.storage import vectors  # only for tables with vector indexes: numpy stays off start-up

    for update in body.get("VectorIndexUpdates") or ():
        now = ctx.wall_clock()
        if update.get("Create") is not None:
            spec = {**update["Create"], "IndexStatus": "CREATING", "Backfilling": False, "Since": now}
            vectors.attach(entry.table, [spec], definitions)
            entry.vector_indexes = [*entry.vector_indexes, spec]
            known = {d["AttributeName"] for d in entry.attribute_definitions}
            entry.attribute_definitions = entry.attribute_definitions + [
                d for d in definitions if d["AttributeName"] not in known
                and d["AttributeName"] in schema_names([spec])]
        else:
            name = update["Delete"]["IndexName"]
            vectors.detach(entry.table, name)
            entry.vector_indexes = [{**s, "IndexStatus": "DELETING", "Since": now} if s["IndexName"] == name else s
                                    for s in entry.vector_indexes]


def settle(ctx: Context, entry: TableEntry) -> None:
    """Move indexes along their phases as time has passed (docs/behaviour/vectors.md §2)."""
    if not entry.vector_indexes or all(s["IndexStatus"] == "ACTIVE" for s in entry.vector_indexes):
        return
    delay = ctx.settings.transient_delay
    now = ctx.wall_clock()
    out = []
    for spec in entry.vector_indexes:
        elapsed = now - spec.get("Since", 0.0)
        if spec["IndexStatus"] == "DELETING":
            if elapsed >= delay:
                continue
        elif spec["IndexStatus"] == "CREATING":
            if elapsed >= 2 * delay:
                spec = {k: v for k, v in spec.items() if k not in _INTERNAL}
                spec["IndexStatus"] = "ACTIVE"
            elif elapsed >= delay and not spec.get("Backfilling"):
                spec = {**spec, "Backfilling": True}
        out.append(spec)
    entry.vector_indexes = out


def describe(entry: TableEntry, creating: bool = False) -> list[dict[str, Any]]:
    """DescribeTable's VectorIndexes (`creating`: in CreateTable's answer, every index CREATING)."""
    out = []
    for spec in entry.vector_indexes:
        index = entry.table.vectors.get(spec["IndexName"])
        d = {k: v for k, v in spec.items() if k not in _INTERNAL}
        d["IndexStatus"] = "CREATING" if creating else spec["IndexStatus"]
        if spec["IndexStatus"] == "CREATING" and "Backfilling" in spec:
            d["Backfilling"] = spec["Backfilling"]
        d["IndexSizeBytes"] = index.size_bytes if index is not None else 0
        d["ItemCount"] = index.item_count if index is not None else 0
        d["IndexArn"] = f"{entry.arn}/index/{spec['IndexName']}"
        out.append(d)
    return out

