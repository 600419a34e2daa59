"""UpdateTable GlobalSecondaryIndexUpdates: Create (with back-fill), Update, Delete.

`check` validates everything before UpdateTable changes anything; `apply` makes the change
(a new index is back-filled at once and the response shows it CREATING with Backfilling);
`finish` runs after the response is built: new indexes become ACTIVE, deleted ones vanish.
"""
from __future__ import annotations

from dynalocal.engine.index_specs import (
    check_gsi_key_schema,
    check_gsi_throughput,
    check_non_key_total,
    check_projection,
)
from dynalocal.errors import ResourceNotFoundException, invalid
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import attach, detach, new_gsi

MAX_GSIS = 20


def _merged_definitions(entry: TableEntry, body: dict) -> list[dict]:
    """The table's AttributeDefinitions plus new ones from the request; redefinition is an error."""
    current = {d["AttributeName"]: d["AttributeType"] for d in entry.attribute_definitions}
    merged = list(entry.attribute_definitions)
    for d in body.get("AttributeDefinitions") or ():
        known = current.get(d["AttributeName"])
        if known is None:
            current[d["AttributeName"]] = d["AttributeType"]
            merged.append(d)
        elif known != d["AttributeType"]:
            old = ", ".join(f"{n}({t})" for n, t in current.items())
            raise invalid("Attributes cannot be redefined. Please check that your attribute has the same type as "
                          f"previously defined. Existing schema: [{old}]. New schema: "
                          f"[{d['AttributeName']}({d['AttributeType']})]")
    return merged


def check(entry: TableEntry, body: dict, billing: str) -> list[dict]:
    """Validate the request's GSI updates; return the AttributeDefinitions they need."""
    updates = body.get("GlobalSecondaryIndexUpdates") or []
    definitions = _merged_definitions(entry, body)
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    gsi_names = {g["IndexName"] for g in entry.gsis}
    all_names = gsi_names | {i["IndexName"] for i in entry.lsis}
    seen: set[str] = set()
    online = 0
    for update in updates:
        actions = [a for a in ("Update", "Create", "Delete") if update.get(a) is not None]
        if len(actions) > 1:  # DynamoDB's texts (docs/behaviour/operations.md, UpdateTable)
            raise invalid("Only one global secondary index action is allowed per GlobalSecondaryIndexUpdate object")
        if not actions:
            raise invalid("One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
                          "GlobalSecondaryIndexUpdate.Delete must not be null")
        action = update[actions[0]]
        name = action["IndexName"]
        if name in seen:
            raise invalid(f"Only one global secondary index update per index is allowed simultaneously. Index: {name}")
        seen.add(name)
        if actions[0] != "Update":
            online += 1
        if actions[0] == "Create":
            if name in all_names:
                raise invalid(f"Attempting to create an index which already exists: {name}")
            check_gsi_key_schema(action["KeySchema"], types)
            check_projection(action)
            check_gsi_throughput(action, billing)
            if len(gsi_names) + 1 > MAX_GSIS:
                raise invalid(f"GlobalSecondaryIndex count exceeds the per-table limit of {MAX_GSIS}")
            vectors = [s for s in entry.vector_indexes if s["IndexStatus"] != "DELETING"]
            check_non_key_total([*entry.gsis, *entry.lsis, *vectors, action])  # shared with vector indexes
        elif name not in gsi_names:
            raise ResourceNotFoundException(f"Requested resource not found: Index: {name} not found")
        elif actions[0] == "Update" and billing == "PAY_PER_REQUEST" and action.get("ProvisionedThroughput"):
            raise invalid(f"ProvisionedThroughput should not be specified for index: {name} when BillingMode is "
                          "PAY_PER_REQUEST")
    if online > 1:  # ValidationException, not LimitExceeded (docs/behaviour/validation.md §6)
        raise invalid("Only one global secondary index can be created or deleted per UpdateTable request")
    return definitions


def apply(entry: TableEntry, body: dict, definitions: list[dict]) -> None:
    """Carry out checked GSI updates: back-fill new indexes, drop deleted ones."""
    for update in body.get("GlobalSecondaryIndexUpdates") or []:
        if update.get("Create") is not None:
            spec = dict(update["Create"])
            index = new_gsi(spec, definitions, entry.table.schema, entry.billing_mode)
            index.backfill(entry.table)
            attach(entry.table, index)
            spec["IndexStatus"], spec["Backfilling"] = "CREATING", True
            entry.gsis.append(spec)
            entry.attribute_definitions = _key_ordered(entry, definitions)
        elif update.get("Delete") is not None:
            name = update["Delete"]["IndexName"]
            detach(entry.table, name)
            for gsi in entry.gsis:
                if gsi["IndexName"] == name:
                    gsi["IndexStatus"] = "DELETING"
        else:
            spec = update["Update"]
            for gsi in entry.gsis:  # the partition count follows (storage.capacity, after apply)
                if gsi["IndexName"] == spec["IndexName"]:
                    if spec.get("ProvisionedThroughput"):
                        gsi["ProvisionedThroughput"] = spec["ProvisionedThroughput"]
                    for member in ("OnDemandThroughput", "WarmThroughput"):  # members left out keep their value
                        if spec.get(member):
                            gsi[member] = {**(gsi.get(member) or {}), **spec[member]}


def _key_ordered(entry: TableEntry, definitions: list[dict]) -> list[dict]:
    """AttributeDefinitions as DynamoDB lists them once a GSI is added: the table's key attributes, each
    GSI's, then each LSI's (docs/behaviour/operations.md §1; DynamoDB Local 3.3.0 answered so)."""
    by_name = {d["AttributeName"]: d for d in definitions}
    order = [e["AttributeName"] for index in ({"KeySchema": entry.key_schema}, *entry.gsis, *entry.lsis)
             for e in index["KeySchema"]]
    ordered = {name: by_name[name] for name in order if name in by_name}
    return list(ordered.values()) + [d for d in definitions if d["AttributeName"] not in ordered]


def finish(entry: TableEntry) -> None:
    """After the UpdateTable response: created indexes are ACTIVE, deleted ones are gone."""
    entry.gsis = [g for g in entry.gsis if g.get("IndexStatus") != "DELETING"]
    for gsi in entry.gsis:
        if gsi.get("IndexStatus") == "CREATING":
            gsi["IndexStatus"] = "ACTIVE"
            gsi.pop("Backfilling", None)
    used = set(entry.table.schema.names)
    for index in entry.gsis + entry.lsis:
        used.update(e["AttributeName"] for e in index["KeySchema"])
    for spec in entry.vector_indexes:  # SearchSchema attributes are defined too (docs/behaviour/vectors.md §2)
        used.update(e["AttributeName"] for e in spec.get("SearchSchema") or ())
    entry.attribute_definitions = [d for d in entry.attribute_definitions if d["AttributeName"] in used]


__all__ = ["check", "apply", "finish"]
