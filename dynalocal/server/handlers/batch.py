"""BatchGetItem and BatchWriteItem.

Everything is validated (values, tables, keys, duplicates) before anything is read or
written, so a rejected batch changes nothing; writes go through Table.apply one by one.
"""
from __future__ import annotations

from typing import Any

import orjson

from ...errors import ValidationException
from ...storage.blob import dumps
from ...storage.capacity import read_units, write_units
from ...storage.index import check_index_keys
from ...storage.values import MAX_ITEM_SIZE, validate_item
from ..context import Context
from .common import compile_expressions, consumed, data_table

MAX_GET_KEYS = 100
MAX_WRITES = 25
MAX_GET_BYTES = 16 * 1024 * 1024
DUPLICATES = "Provided list of item keys contains duplicates"
NOT_ONE_REQUEST = ("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the "
                   "supported datatypes")
KEY_EMPTY_PREFIX = "One or more parameter values are not valid. "


def batch_get_item(ctx: Context, body: dict) -> dict:
    request: dict[str, dict] = body["RequestItems"]
    if sum(len(spec["Keys"]) for spec in request.values()) > MAX_GET_KEYS:
        raise ValidationException("Too many items requested for the BatchGetItem call")
    compiled = {}
    for name, spec in request.items():
        for key in spec["Keys"]:
            validate_item(key)
        compiled[name] = compile_expressions(spec, "BatchGetItem")
    entries = {name: data_table(ctx, name) for name in request}
    plans = []
    for name, spec in request.items():
        schema = entries[name].table.schema
        encoded = [schema.check_key(key) for key in spec["Keys"]]
        if len(set(encoded)) != len(encoded):
            raise ValidationException(DUPLICATES)
        plans.append((name, spec, encoded))
    responses: dict[str, list] = {name: [] for name in request}
    unprocessed: dict[str, dict] = {}
    capacity: list[dict] = []
    used, full = 0, False
    for name, spec, encoded in plans:
        table = entries[name].table
        consistent = spec.get("ConsistentRead") is True
        projection = compiled[name].projection if compiled[name] is not None else None
        units = 0.0
        for key_map, key in zip(spec["Keys"], encoded):
            record = table.get(key)
            if full or (record is not None and used and used + record[1] > MAX_GET_BYTES):
                full = True  # the response is full: this key and all after it are left over
                left = unprocessed.setdefault(name, {k: v for k, v in spec.items() if k != "Keys"} | {"Keys": []})
                left["Keys"].append(key_map)
                continue
            units += read_units(record[1] if record is not None else 0, consistent)
            if record is None:
                continue
            used += record[1]
            if projection is None:
                responses[name].append(orjson.Fragment(record[0]))
            else:
                responses[name].append(projection.apply(orjson.loads(record[0])))
        cc = consumed(body, name, units)
        if cc is not None:
            capacity.append(cc)
    out: dict[str, Any] = {"Responses": responses, "UnprocessedKeys": unprocessed}
    if capacity:
        out["ConsumedCapacity"] = capacity
    return out


def _parse_writes(request: dict[str, list]) -> list[tuple[str, str, dict, int]]:
    """(table, 'put' | 'delete', item or key, item size) per request, values validated."""
    writes = []
    for name, items in request.items():
        for write in items:
            put, delete = write.get("PutRequest"), write.get("DeleteRequest")
            if (put is None) == (delete is None):
                raise ValidationException(NOT_ONE_REQUEST)
            if put is not None:
                size = validate_item(put["Item"])
                if size > MAX_ITEM_SIZE:
                    raise ValidationException("Item size has exceeded the maximum allowed size")
                writes.append((name, "put", put["Item"], size))
            else:
                validate_item(delete["Key"])
                writes.append((name, "delete", delete["Key"], 0))
    return writes


def batch_write_item(ctx: Context, body: dict) -> dict:
    request: dict[str, list] = body["RequestItems"]
    if sum(len(items) for items in request.values()) > MAX_WRITES:
        raise ValidationException("Too many items requested for the BatchWriteItem call")
    writes = _parse_writes(request)
    entries = {name: data_table(ctx, name) for name in request}
    planned = []
    seen: set[tuple[str, bytes]] = set()
    for name, kind, value, size in writes:
        table = entries[name].table
        if kind == "put":
            key = table.schema.check_item(value)
            check_index_keys(table, value)
        else:
            key = table.schema.check_key(value, KEY_EMPTY_PREFIX)
        if (name, key) in seen:
            raise ValidationException(DUPLICATES)
        seen.add((name, key))
        planned.append((name, kind, value, size, key))
    units: dict[str, float] = {name: 0.0 for name in request}
    metrics: dict[str, list] = {}
    want_metrics = body.get("ReturnItemCollectionMetrics") == "SIZE"
    for name, kind, value, size, key in planned:
        table = entries[name].table
        if kind == "put":
            old = table.apply(key, (dumps(value), size))
            units[name] += write_units(max(size, old[1] if old is not None else 0))
        else:
            old = table.apply(key, None)
            units[name] += write_units(old[1] if old is not None else 0)
        if want_metrics and entries[name].lsis:
            hash_name = table.schema.hash_name
            metrics.setdefault(name, []).append(
                {"ItemCollectionKey": {hash_name: value[hash_name]}, "SizeEstimateRangeGB": [0.0, 1.0]})
    out: dict[str, Any] = {"UnprocessedItems": {}}
    capacity = [cc for name in request if (cc := consumed(body, name, units[name])) is not None]
    if capacity:
        out["ConsumedCapacity"] = capacity
    if metrics:
        out["ItemCollectionMetrics"] = metrics
    return out
