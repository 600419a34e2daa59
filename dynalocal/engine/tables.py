"""Control plane: CreateTable, DescribeTable, ListTables, DeleteTable, UpdateTable."""
from __future__ import annotations

from typing import Any

from dynalocal.capacity.registry import on_demand_description, warm_description
from dynalocal.engine import index_updates, stream_spec, transient, vector_specs
from dynalocal.engine.backups import catalog, continuous, policies
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table, new_table_name, scoped_names
from dynalocal.engine.context import Context
from dynalocal.engine.index_specs import (
    check_gsi_key_schema,
    check_gsi_throughput,
    check_key_schema,
    check_non_key_total,
    check_projection,
)
from dynalocal.engine.tags import check_tags
from dynalocal.errors import ResourceInUseException, ValidationException, invalid
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import build_indexes
from dynalocal.values.keys import KeySchema

MAX_THROUGHPUT = 10**12


def _too_many_keys(elements: list[dict], path: str) -> ValidationException:
    """Tables and LSIs have one or two key elements (the current model has no maximum: multi-attribute GSI keys)."""
    # DynamoDB shows the elements as its Java SDK prints them (docs/behaviour/operations.md, UpdateTable/CreateTable)
    shown = ", ".join(f"KeySchemaElement(attributeName={e['AttributeName']}, keyType={e['KeyType']})" for e in elements)
    return ValidationException(f"1 validation error detected: Value '[{shown}]' at '{path}' failed to satisfy "
                               "constraint: Member must have length less than or equal to 2")


def _key_schema(elements: list[dict], types: dict[str, str]) -> KeySchema:
    check_key_schema(elements, types)
    if len(elements) == 2:
        return KeySchema(elements[0]["AttributeName"], types[elements[0]["AttributeName"]],
                         elements[1]["AttributeName"], types[elements[1]["AttributeName"]])
    return KeySchema(elements[0]["AttributeName"], types[elements[0]["AttributeName"]])


def _throughput(body: dict, billing: str) -> tuple[int, int]:
    pt = body.get("ProvisionedThroughput")
    if billing == "PAY_PER_REQUEST":
        if pt is not None:
            raise invalid("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is "
                          "PAY_PER_REQUEST")
        return 0, 0
    if pt is None:
        raise invalid("ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
    for member in ("ReadCapacityUnits", "WriteCapacityUnits"):
        if pt[member] > MAX_THROUGHPUT:
            raise ValidationException(f"Given value {pt[member]} for {member} is out of bounds")
    return pt["ReadCapacityUnits"], pt["WriteCapacityUnits"]


def _indexes(body: dict, types: dict[str, str], schema: KeySchema, billing: str) -> tuple[list[dict], list[dict]]:
    names: set[str] = set()
    lsis = body.get("LocalSecondaryIndexes")
    gsis = body.get("GlobalSecondaryIndexes")
    if lsis is not None:
        if not lsis:
            raise invalid("List of LocalSecondaryIndexes is empty")
        if schema.range_name is None:
            raise invalid("Table KeySchema does not have a range key, which is required when specifying a "
                          "LocalSecondaryIndex")
        if len(lsis) > 5:
            raise invalid("Number of LocalSecondaryIndexes exceeds per-table limit of 5")
        for i, lsi in enumerate(lsis, 1):
            name = lsi["IndexName"]
            if len(lsi["KeySchema"]) > 2:
                raise _too_many_keys(lsi["KeySchema"], f"localSecondaryIndexes.{i}.member.keySchema")
            index_schema = _key_schema(lsi["KeySchema"], types)
            if index_schema.range_name is None:
                raise invalid(f"Index KeySchema does not have a range key for index: {name}")
            if index_schema.hash_name != schema.hash_name:
                raise invalid(f"Index KeySchema does not have the same leading hash key as table KeySchema for index: "
                              f"{name}. index hash key: {index_schema.hash_name}, table hash key: {schema.hash_name}")
            check_projection(lsi)
            if name in names:
                raise invalid(f"Duplicate index name: {name}")
            names.add(name)
    if gsis is not None:
        if not gsis:
            raise invalid("List of GlobalSecondaryIndexes is empty")
        if len(gsis) > 20:
            raise invalid("GlobalSecondaryIndex count exceeds the per-table limit of 20")
        for gsi in gsis:
            name = gsi["IndexName"]
            check_gsi_key_schema(gsi["KeySchema"], types)
            check_projection(gsi)
            check_gsi_throughput(gsi, billing)
            if name in names:
                raise invalid(f"Duplicate index name: {name}")
            names.add(name)
    check_non_key_total((lsis or []) + (gsis or []))
    return list(gsis or []), list(lsis or [])


def create_table(ctx: Context, caller: Caller, body: dict) -> dict:
    name = new_table_name(body["TableName"])
    definitions = body.get("AttributeDefinitions")
    key_schema = body.get("KeySchema")
    if definitions is None or key_schema is None:
        missing = "AttributeDefinitions" if definitions is None else "KeySchema"
        raise ValidationException(f"1 validation error detected: Value null at '{missing[0].lower() + missing[1:]}' "
                                  "failed to satisfy constraint: Member must not be null")
    billing = body.get("BillingMode", "PROVISIONED")
    read, write = _throughput(body, billing)
    types: dict[str, str] = {}
    for definition in definitions:
        if definition["AttributeName"] in types:
            raise invalid(f"Duplicate AttributeName in AttributeDefinitions: {definition['AttributeName']}")
        types[definition["AttributeName"]] = definition["AttributeType"]
    if len(key_schema) > 2:
        raise _too_many_keys(key_schema, "keySchema")
    if len(key_schema) > len(types):
        raise ValidationException("Invalid KeySchema: Some index key attribute have no definition")
    schema = _key_schema(key_schema, types)
    gsis, lsis = _indexes(body, types, schema, billing)
    vector_defs = vector_specs.check_create_table(body, types, billing, {i["IndexName"] for i in gsis + lsis})
    if vector_defs:  # their vector and inline-filter attributes count too (docs/behaviour/vectors.md §2)
        check_non_key_total(gsis + lsis + vector_defs)
    used = set(schema.names) | {e["AttributeName"] for i in gsis + lsis for e in i["KeySchema"]}
    used |= vector_specs.schema_names(vector_defs)
    if used != set(types):
        raise invalid(f"Some AttributeDefinitions are not used. AttributeDefinitions: [{', '.join(sorted(types))}], "
                      f"keys used: [{', '.join(sorted(used))}]")
    tags = check_tags(body.get("Tags") or [], {})  # the limits TagResource applies (docs/behaviour/operations.md §1)
    stream = stream_spec.check(body.get("StreamSpecification"))
    key = caller.scope + name
    if key in ctx.db.tables or key in ctx.db.deleting:
        raise ResourceInUseException(f"Table already exists: {name}")
    if "ResourcePolicy" in body:
        policies.check(body["ResourcePolicy"])
    extra = {k: body[k] for k in ("SSESpecification", "TableClass",
                                  "DeletionProtectionEnabled", "OnDemandThroughput", "WarmThroughput") if k in body}
    entry = ctx.db.create(
        key, schema, region=caller.region, account=caller.account, key_schema=key_schema,
        attribute_definitions=definitions, billing_mode=billing,
        read_capacity=read, write_capacity=write, gsis=gsis, lsis=lsis, vector_indexes=vector_defs,
        tags=tags, extra=extra)
    if "ResourcePolicy" in body:
        policies.attach(ctx, entry, body["ResourcePolicy"])
    build_indexes(entry.table, gsis, lsis, definitions, billing)
    vector_specs.build(entry, definitions)
    ctx.capacity.configure(entry)  # partition counts (table, LSIs, GSIs) and meters
    stream_spec.apply(ctx, entry, stream if stream is not None and stream[0] else None)  # shards follow them
    # Tables are usable at once, unless --transient-delay; the response shows CREATING as DynamoDB's does.
    transient.begin(ctx, entry, "CREATING")
    return {"TableDescription": describe(entry, status="CREATING")}


def _throughput_description(read: int, write: int) -> dict:
    return {"NumberOfDecreasesToday": 0, "ReadCapacityUnits": read, "WriteCapacityUnits": write}


def describe(entry: TableEntry, status: str | None = None) -> dict[str, Any]:
    """The TableDescription DynamoDB returns for a table."""
    out: dict[str, Any] = {
        "AttributeDefinitions": entry.attribute_definitions,
        "TableName": entry.name,
        "KeySchema": entry.key_schema,
        "TableStatus": status or entry.status,
        "CreationDateTime": entry.created,
        "ProvisionedThroughput": _throughput_description(entry.read_capacity, entry.write_capacity),
        "TableSizeBytes": entry.table.size_bytes,
        "ItemCount": entry.table.item_count,
        "TableArn": entry.arn,
        "TableId": entry.table_id,
        "DeletionProtectionEnabled": entry.extra.get("DeletionProtectionEnabled", False),
    }
    summary = billing_summary(entry)
    if summary is not None:
        out["BillingModeSummary"] = summary
    out["WarmThroughput"] = warm_description(entry.extra.get("WarmThroughput"), len(entry.table.partitions))
    if entry.billing_mode == "PAY_PER_REQUEST":
        out["OnDemandThroughput"] = on_demand_description(entry.extra.get("OnDemandThroughput"))
    if "TableClass" in entry.extra:
        out["TableClassSummary"] = {"TableClass": entry.extra["TableClass"]}
    stream_spec.describe(entry, out)
    if "RestoreSummary" in entry.extra:  # a restored table (engine.backups.restore)
        out["RestoreSummary"] = {**entry.extra["RestoreSummary"], "RestoreInProgress": out["TableStatus"] == "CREATING"}
    if entry.gsis:
        out["GlobalSecondaryIndexes"] = [_describe_gsi(entry, gsi, creating=status == "CREATING") for gsi in entry.gsis]
    if entry.lsis:
        out["LocalSecondaryIndexes"] = [_describe_lsi(entry, lsi) for lsi in entry.lsis]
    if entry.vector_indexes:
        out["VectorIndexes"] = vector_specs.describe(entry, creating=status == "CREATING")
    return out


def billing_summary(entry: TableEntry) -> dict | None:
    """BillingModeSummary: on-demand tables, and provisioned ones that were on-demand before."""
    since = entry.pay_per_request_since
    if entry.billing_mode == "PAY_PER_REQUEST":
        return {"BillingMode": "PAY_PER_REQUEST", "LastUpdateToPayPerRequestDateTime": since or entry.created}
    if since is not None:
        return {"BillingMode": "PROVISIONED", "LastUpdateToPayPerRequestDateTime": since}
    return None


def describe_deleted(entry: TableEntry) -> dict[str, Any]:
    """DeleteTable's minimal TableDescription (no dates, key schema or attribute definitions)."""
    return {"TableName": entry.name, "TableStatus": "DELETING", "TableId": entry.table_id, "TableArn": entry.arn,
            "ItemCount": entry.table.item_count, "TableSizeBytes": entry.table.size_bytes,
            "BillingModeSummary": billing_summary(entry) or {"BillingMode": "PROVISIONED"},
            "ProvisionedThroughput": _throughput_description(entry.read_capacity, entry.write_capacity)}


def _index_stats(entry: TableEntry, name: str) -> tuple[int, int]:
    """(ItemCount, IndexSizeBytes); index data arrives with the index issue, so empty until then."""
    index = getattr(entry.table, "indexes", {}).get(name)
    if index is None:
        return 0, 0
    return index.item_count, index.size_bytes


def _describe_gsi(entry: TableEntry, gsi: dict, creating: bool = False) -> dict:
    count, size = _index_stats(entry, gsi["IndexName"])
    pt = gsi.get("ProvisionedThroughput") or {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0}
    out = {"IndexName": gsi["IndexName"], "KeySchema": gsi["KeySchema"], "Projection": gsi["Projection"],
           "IndexStatus": "CREATING" if creating else gsi.get("IndexStatus", "ACTIVE"),
           "ProvisionedThroughput": _throughput_description(pt["ReadCapacityUnits"], pt["WriteCapacityUnits"]),
           "IndexSizeBytes": size, "ItemCount": count, "IndexArn": f"{entry.arn}/index/{gsi['IndexName']}"}
    index = entry.table.indexes.get(gsi["IndexName"])
    if index is not None:
        out["WarmThroughput"] = warm_description(gsi.get("WarmThroughput"), len(index.partitions))
    if entry.billing_mode == "PAY_PER_REQUEST":
        out["OnDemandThroughput"] = on_demand_description(gsi.get("OnDemandThroughput"))
    if "Backfilling" in gsi:
        out["Backfilling"] = gsi["Backfilling"]
    return out


def _describe_lsi(entry: TableEntry, lsi: dict) -> dict:
    count, size = _index_stats(entry, lsi["IndexName"])
    return {"IndexName": lsi["IndexName"], "KeySchema": lsi["KeySchema"], "Projection": lsi["Projection"],
            "IndexSizeBytes": size, "ItemCount": count, "IndexArn": f"{entry.arn}/index/{lsi['IndexName']}"}


def describe_table(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    transient.settle(ctx, entry)
    vector_specs.settle(ctx, entry)
    return {"Table": describe(entry)}


def delete_table(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    if entry.status == "DELETING":  # deleting it again is no error
        return {"TableDescription": describe_deleted(entry)}
    transient.check_not_in_use(ctx, entry)
    if entry.extra.get("DeletionProtectionEnabled"):
        raise ValidationException(
            f"Table '{entry.name}' can't be deleted while DeletionProtectionEnabled is set to True")
    if entry.point_in_time_recovery:  # a SYSTEM backup keeps the table for 35 days (docs/behaviour/backups.md §1)
        catalog.take(ctx, caller, entry, f"{entry.name}$DeletedTableBackup", kind="SYSTEM")
        continuous.forget(ctx, entry)
    stream_spec.disable(ctx, entry)  # its stream stays readable for 24 hours
    ctx.db.drop(entry.key)
    ctx.capacity.forget(entry.key)
    transient.deleted(ctx, entry)
    return {"TableDescription": describe_deleted(entry)}


def list_tables(ctx: Context, caller: Caller, body: dict) -> dict:
    limit = body.get("Limit", 100)
    start = body.get("ExclusiveStartTableName")
    keys = list(ctx.db.tables)
    if ctx.db.deleting:
        keys += transient.deleting(ctx)
    names = sorted(scoped_names(caller, keys), key=lambda n: n.encode())
    if start is not None:
        names = [n for n in names if n.encode() > start.encode()]
    out: dict[str, Any] = {"TableNames": names[:limit]}
    if len(names) > limit:
        out["LastEvaluatedTableName"] = names[limit - 1]
    return out


# What an UpdateTable must carry, as DynamoDB lists them; members the request has are left out
# (docs/behaviour/operations.md, UpdateTable).
_UPDATE_MEMBERS = ("ProvisionedThroughput", "BillingMode", "UpdateStreamEnabled", "GlobalSecondaryIndexUpdates",
                   "SSESpecification", "ReplicaUpdates", "MultiAccountReplicaReady", "ReplicaTransitRoleArn",
                   "MultiRegionConsistency", "DeletionProtectionEnabled", "OnDemandThroughput", "WarmThroughput",
                   "TableClass")


def _nothing_to_update(body: dict) -> str:
    names = [n for n in _UPDATE_MEMBERS if body.get(n) in (None, [])]
    return f"At least one of {', '.join(names[:-1])} or {names[-1]} is required"


def update_table(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    if entry.status == "DELETING":
        raise ResourceInUseException(f"Attempt to change a resource which is still in use: Table is being deleted: "
                                     f"{entry.name}")
    transient.check_not_in_use(ctx, entry)
    changes = [k for k in ("ProvisionedThroughput", "BillingMode", "StreamSpecification", "GlobalSecondaryIndexUpdates",
                           "SSESpecification", "ReplicaUpdates", "TableClass", "DeletionProtectionEnabled",
                           "OnDemandThroughput", "WarmThroughput", "VectorIndexUpdates")
               if body.get(k) not in (None, [])]
    if not changes:
        raise ValidationException(_nothing_to_update(body))
    billing = body.get("BillingMode", entry.billing_mode)
    definitions = index_updates.check(entry, body, billing)
    vector_specs.check_update(ctx, entry, body, billing, definitions)
    stream = stream_spec.check_update(entry, body.get("StreamSpecification"))
    read, write = _new_throughput(entry, body, billing, changes)
    _set_billing(ctx, entry, body, billing, read, write)
    index_updates.apply(entry, body, definitions)
    vector_specs.apply_update(ctx, entry, body, definitions)
    ctx.capacity.configure(entry)  # new rates and partition counts apply from this moment
    stream_spec.apply(ctx, entry, stream)
    # A vector index alone keeps the table usable: its own phases follow the delay (engine.vector_specs)
    delayed = changes != ["VectorIndexUpdates"] and transient.begin(ctx, entry, "UPDATING")
    out = {"TableDescription": describe(entry, status="UPDATING")}
    if not delayed:  # else the indexes settle with the table (transient.settle)
        index_updates.finish(entry)
    return out


def _new_throughput(entry: TableEntry, body: dict, billing: str, changes: list[str]) -> tuple[int, int]:
    """The table's (read, write) capacity after an UpdateTable, or the ValidationException refusing it."""
    pt = body.get("ProvisionedThroughput")
    if billing == "PAY_PER_REQUEST":
        if pt is not None:
            raise invalid("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is "
                          "PAY_PER_REQUEST")
        read = write = 0
    elif pt is None:
        if entry.billing_mode != "PROVISIONED":
            raise invalid("ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
        read, write = entry.read_capacity, entry.write_capacity
    else:
        read, write = _throughput(body, "PROVISIONED")
        if entry.billing_mode == "PAY_PER_REQUEST":  # every index needs throughput (here or in a GSI update)
            given = {u[a]["IndexName"] for u in body.get("GlobalSecondaryIndexUpdates") or []
                     for a in ("Update", "Delete")
                     if u.get(a) and (a == "Delete" or u[a].get("ProvisionedThroughput"))}
            for gsi in entry.gsis:
                if gsi.get("ProvisionedThroughput") is None and gsi["IndexName"] not in given:
                    raise invalid(f"ProvisionedThroughput must be specified for index: {gsi['IndexName']}")
        if (read, write) == (entry.read_capacity, entry.write_capacity) and billing == entry.billing_mode \
                and set(changes) <= {"ProvisionedThroughput", "BillingMode"}:  # also with BillingMode=PROVISIONED
            raise ValidationException(
                "The provisioned throughput for the table will not change. "
                "The requested value equals the current value. "
                f"Current ReadCapacityUnits provisioned for the table: {read}. "
                f"Requested ReadCapacityUnits: {read}. "
                f"Current WriteCapacityUnits provisioned for the table: {write}. "
                f"Requested WriteCapacityUnits: {write}. "
                "Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits.")
    return read, write


def _set_billing(ctx: Context, entry: TableEntry, body: dict, billing: str, read: int, write: int) -> None:
    """Store an UpdateTable's billing mode, throughput and table settings."""
    if billing != entry.billing_mode:  # remembered for BillingModeSummary, also after switching back
        entry.pay_per_request_since = (ctx.wall_clock() if billing == "PAY_PER_REQUEST"
                                       else entry.pay_per_request_since or entry.created)
    entry.billing_mode, entry.read_capacity, entry.write_capacity = billing, read, write
    if billing == "PAY_PER_REQUEST":  # on-demand indexes show 0/0, and need throughput again to switch back
        for gsi in entry.gsis:
            gsi.pop("ProvisionedThroughput", None)
    for member in ("SSESpecification", "TableClass", "DeletionProtectionEnabled"):  # streams: stream_spec
        if member in body:
            entry.extra[member] = body[member]
    for member in ("OnDemandThroughput", "WarmThroughput"):  # members left out keep their value
        if member in body:
            entry.extra[member] = {**entry.extra.get(member, {}), **body[member]}


def describe_limits(ctx: Context, caller: Caller, body: dict) -> dict:
    return {"AccountMaxReadCapacityUnits": 80000, "AccountMaxWriteCapacityUnits": 80000,
            "TableMaxReadCapacityUnits": 40000, "TableMaxWriteCapacityUnits": 40000}


def describe_endpoints(ctx: Context, caller: Caller, body: dict) -> dict:
    return {"Endpoints": [{"Address": f"{ctx.settings.host}:{ctx.settings.port}", "CachePeriodInMinutes": 1440}]}
