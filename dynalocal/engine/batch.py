"""BatchGetItem and BatchWriteItem.

Everything is validated (values, tables, keys, duplicates) before anything is read or
written, so a rejected batch changes nothing; then the writes are made one by one.
A key or write whose partition (or, for writes, a GSI partition) is throttled is returned in
UnprocessedKeys / UnprocessedItems; only when nothing at all was processed does the call fail.
Each write goes through the one write sequence (engine.writes: admission, GSI back-pressure,
Table.write, charge), with no condition.
"""
from __future__ import annotations

from typing import Any

import orjson

from dynalocal.capacity.charge import Charge, consumed_list, partition_key
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import compile_expressions, data_table
from dynalocal.engine.context import Context

# Aliased: CPython 3.11 compiles `x.get(...)` as a slow LOAD_ATTR (a bound method per call) when
# `x` is also a name imported into the module, and `write` is _parse_writes's loop variable.
from dynalocal.engine.writes import write as write_item
from dynalocal.errors import DynamoError, ValidationException
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import check_index_keys
from dynalocal.values.attributes import MAX_ITEM_SIZE, validate_item
from dynalocal.values.blob import dumps

MAX_GET_KEYS = 100
MAX_WRITES = 25
MAX_GET_BYTES = 16 * 1024 * 1024
DUPLICATES = "Provided list of item keys contains duplicates"
NOT_ONE_REQUEST = ("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the "
                   "supported datatypes")
KEY_EMPTY_PREFIX = "One or more parameter values are not valid. "


def batch_get_item(ctx: Context, caller: Caller, body: dict) -> dict:
    request: dict[str, dict] = body["RequestItems"]
    if sum(len(spec["Keys"]) for spec in request.values()) > MAX_GET_KEYS:
        raise ValidationException("Too many items requested for the BatchGetItem call")
    compiled = {}
    for name, spec in request.items():
        for key in spec["Keys"]:
            validate_item(key)
        compiled[name] = compile_expressions(spec, "BatchGetItem")
    entries = {name: data_table(ctx, caller, name) for name in request}
    plans = []
    for name, spec in request.items():
        schema = entries[name].table.schema
        encoded = [schema.check_key(key) for key in spec["Keys"]]
        if len(set(encoded)) != len(encoded):
            raise ValidationException(DUPLICATES)
        plans.append((name, spec, encoded))
    responses: dict[str, list] = {name: [] for name in request}
    unprocessed: dict[str, dict] = {}
    charges: dict[str, Charge] = {}
    used, full, processed = 0, False, 0
    refused: DynamoError | None = None
    for name, spec, encoded in plans:
        entry = entries[name]
        table = entry.table
        charge = charges[name] = ctx.capacity.charge(entry)
        charge.table_used = True  # a table whose keys were all left over still reports 0 units
        consistent = spec.get("ConsistentRead") is True
        table_compiled = compiled[name]
        projection = table_compiled.projection if table_compiled is not None else None
        for key_map, key in zip(spec["Keys"], encoded):
            part = table.partition_index(key)
            record = None if full else table.partitions[part].get(key)
            if full or (record is not None and used and used + record[1] > MAX_GET_BYTES):
                full = True  # the response is full: this key and all after it are left over
                _leave(unprocessed, name, spec, key_map)
                continue
            err = charge.refuse(0, part)
            if err is not None:  # a throttled partition: the key is left for the caller to retry
                refused = refused or err
                _leave(unprocessed, name, spec, key_map)
                continue
            processed += 1
            charge.get(part, record[1] if record is not None else 0, consistent, partition_key(key))
            if record is None:
                continue
            used += record[1]
            if projection is None:
                responses[name].append(orjson.Fragment(record[0]))
            else:
                responses[name].append(projection.apply(orjson.loads(record[0])))
    if refused is not None and not processed:
        raise refused  # nothing could be read: the whole call is throttled
    out: dict[str, Any] = {"Responses": responses, "UnprocessedKeys": unprocessed}
    capacity = consumed_list(body, charges)
    if capacity:
        out["ConsumedCapacity"] = capacity
    return out


def _leave(unprocessed: dict[str, dict], name: str, spec: dict, key_map: dict) -> None:
    """Add a key to UnprocessedKeys, whose table entry repeats the request's other members."""
    left = unprocessed.get(name)
    if left is None:
        left = unprocessed[name] = {k: v for k, v in spec.items() if k != "Keys"} | {"Keys": []}
    left["Keys"].append(key_map)


def _parse_writes(request: dict[str, list]) -> list[tuple[str, list[tuple[bool, dict, int, dict]]]]:
    """Per table: (is a put, item or key, item size, request element) per write, values validated."""
    tables = []
    for name, items in request.items():
        writes = []
        for write in items:
            put, delete = write.get("PutRequest"), write.get("DeleteRequest")
            if (put is None) == (delete is None):
                raise ValidationException(NOT_ONE_REQUEST)
            if put is not None:
                item = put["Item"]
                size = validate_item(item)
                if size > MAX_ITEM_SIZE:
                    raise ValidationException("Item size has exceeded the maximum allowed size")
                writes.append((True, item, size, write))
            else:
                validate_item(delete["Key"])
                writes.append((False, delete["Key"], 0, write))
        tables.append((name, writes))
    return tables


def _plan_writes(entry: TableEntry, writes: list[tuple[bool, dict, int, dict]]) -> list[tuple]:
    """(is a put, item or key, size, encoded key, partition key prefix, element) per write of one
    table: keys checked, duplicates refused."""
    table = entry.table
    schema, indexes = table.schema, table.indexes or table.vectors
    seen: set[bytes] = set()
    planned = []
    for is_put, value, size, element in writes:
        if is_put:
            key, prefix = schema.check_item_parts(value)
            if indexes:
                check_index_keys(table, value)
        else:
            key, prefix = schema.check_key_parts(value, KEY_EMPTY_PREFIX)
        if key in seen:
            raise ValidationException(DUPLICATES)
        seen.add(key)
        planned.append((is_put, value, size, key, prefix, element))
    return planned


def batch_write_item(ctx: Context, caller: Caller, body: dict) -> dict:
    request: dict[str, list] = body["RequestItems"]
    if sum(len(items) for items in request.values()) > MAX_WRITES:
        raise ValidationException("Too many items requested for the BatchWriteItem call")
    parsed = _parse_writes(request)
    entries = [data_table(ctx, caller, name) for name, _ in parsed]
    plans = [(name, entry, _plan_writes(entry, writes)) for (name, writes), entry in zip(parsed, entries)]
    charges = {name: ctx.capacity.charge(entry) for name, entry, _ in plans}
    for charge in charges.values():
        charge.table_used = True
    metrics: dict[str, list] = {}
    unprocessed: dict[str, list] = {}
    refused: DynamoError | None = None
    want_metrics = body.get("ReturnItemCollectionMetrics") == "SIZE"
    total = 0
    for name, entry, planned in plans:
        total += len(planned)
        charge = charges[name]
        table = entry.table
        for is_put, value, size, key, prefix, element in planned:
            try:  # only a throttle is raised here: by the table's partition or a GSI's (back-pressure)
                if is_put:
                    write_item(charge, table, key, prefix, (dumps(value), size), value)
                else:
                    write_item(charge, table, key, prefix, None)
            except DynamoError as err:  # nothing written: left for the caller to resubmit
                refused = refused or err
                unprocessed.setdefault(name, []).append(element)
                continue
            if want_metrics and entry.lsis:
                hash_name = table.schema.hash_name
                metrics.setdefault(name, []).append(
                    {"ItemCollectionKey": {hash_name: value[hash_name]}, "SizeEstimateRangeGB": [0.0, 1.0]})
    if refused is not None and sum(map(len, unprocessed.values())) == total:
        raise refused  # nothing could be written: the whole call is throttled
    out: dict[str, Any] = {"UnprocessedItems": unprocessed}
    capacity = consumed_list(body, charges)
    if capacity:
        out["ConsumedCapacity"] = capacity
    if metrics:
        out["ItemCollectionMetrics"] = metrics
    return out
