"""Single-item operations: GetItem, PutItem, UpdateItem, DeleteItem."""
from __future__ import annotations

import orjson

from dynalocal.capacity.charge import Charge
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import EXPRESSION_MEMBERS, check_return_values, compile_expressions, data_table
from dynalocal.engine.context import Context
from dynalocal.engine.writes import check, prepare, write
from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request
from dynalocal.storage.index import check_index_keys
from dynalocal.values.attributes import MAX_ITEM_SIZE, item_size, validate_item
from dynalocal.values.blob import dumps

ITEM_TOO_BIG = "Item size has exceeded the maximum allowed size"
UPDATE_TOO_BIG = "Item size to update has exceeded the maximum allowed size"
KEY_EMPTY_PREFIX = "One or more parameter values are not valid. "
RETURN_OLD = ("NONE", "ALL_OLD")  # the ReturnValues PutItem and DeleteItem accept


def _validate_key(body: dict) -> dict:
    """Validate a request Key's values. Plain string values need nothing more than check_key's
    schema, emptiness and size checks, so the common case skips the generic pass."""
    key = body["Key"]
    for av in key.values():
        if type(av) is not dict or len(av) != 1 or type(av.get("S")) is not str:
            validate_item(key)
            break
    return key


def get_item(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    key = _validate_key(body)
    compiled = compile_expressions(body, "GetItem")
    entry = data_table(ctx, caller, body["TableName"])
    table = entry.table
    encoded, prefix = table.schema.check_key_parts(key)
    part = table.partition_index(encoded)
    charge = ctx.capacity.charge(entry)
    charge.admit(0, part)
    record = table.partitions[part].get(encoded)
    charge.get(part, record[1] if record else 0, body.get("ConsistentRead") is True, prefix)
    cc = charge.consumed(body, body["TableName"])
    if record is None:
        return {"ConsumedCapacity": cc} if cc else b"{}"
    if compiled is not None and compiled.projection is not None:
        out: dict = {"Item": compiled.projection.apply(orjson.loads(record[0]))}
        if cc:
            out["ConsumedCapacity"] = cc
        return out
    if cc:
        return b'{"Item":' + record[0] + b',"ConsumedCapacity":' + orjson.dumps(cc) + b"}"
    return b'{"Item":' + record[0] + b"}"


def put_item(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    item = body["Item"]
    size = validate_item(item)
    if size > MAX_ITEM_SIZE:
        raise ValidationException(ITEM_TOO_BIG)
    # check_return_values and compile_expressions, inlined for their common case (no such member)
    return_values = check_return_values(body, RETURN_OLD) if "ReturnValues" in body else "NONE"
    compiled = None if EXPRESSION_MEMBERS.isdisjoint(body) else compile_request(body, "PutItem")
    entry = data_table(ctx, caller, body["TableName"])
    table = entry.table
    key, prefix = table.schema.check_item_parts(item)
    if table.indexes or table.vectors:
        check_index_keys(table, item)
    charge = ctx.capacity.charge(entry)
    want_old = return_values == "ALL_OLD"
    old_item = write(charge, table, key, prefix, (dumps(item), size), item, compiled, body, want_old)
    return _answer(body, charge, old_item if want_old else None, item)


def delete_item(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    key_map = _validate_key(body)
    return_values = check_return_values(body, RETURN_OLD)
    compiled = compile_expressions(body, "DeleteItem")
    entry = data_table(ctx, caller, body["TableName"])
    table = entry.table
    key, prefix = table.schema.check_key_parts(key_map, KEY_EMPTY_PREFIX)
    charge = ctx.capacity.charge(entry)
    want_old = return_values == "ALL_OLD"
    old_item = write(charge, table, key, prefix, None, None, compiled, body, want_old)
    return _answer(body, charge, old_item if want_old else None, key_map)


def _answer(body: dict, charge: Charge, attributes: dict | None, key: dict) -> dict | bytes:
    """A write's response: Attributes when asked for and non-empty, ConsumedCapacity when asked for,
    ItemCollectionMetrics when asked for on a table with an LSI (`key` holds the partition key)."""
    if not attributes and "ReturnConsumedCapacity" not in body and "ReturnItemCollectionMetrics" not in body:
        return b"{}"  # the common answer, without the general path's calls
    out: dict = {}
    if attributes:
        out["Attributes"] = attributes
    cc = charge.consumed(body, body["TableName"])
    if cc:
        out["ConsumedCapacity"] = cc
    table = charge.entry.table
    if body.get("ReturnItemCollectionMetrics") == "SIZE" and table.indexes \
            and any(not index.is_global for index in table.indexes.values()):
        hash_name = table.schema.hash_name
        out["ItemCollectionMetrics"] = {"ItemCollectionKey": {hash_name: key[hash_name]},
                                        "SizeEstimateRangeGB": [0.0, 1.0]}
    return out if out else b"{}"


UPDATE_RETURN_VALUES = ("NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW")


def update_item(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    key_map = _validate_key(body)
    return_values = body.get("ReturnValues", "NONE")
    if return_values not in UPDATE_RETURN_VALUES:
        raise ValidationException("ReturnValues can only be NONE, ALL_OLD, UPDATED_OLD, ALL_NEW or UPDATED_NEW")
    compiled = compile_expressions(body, "UpdateItem")
    entry = data_table(ctx, caller, body["TableName"])
    table = entry.table
    schema = table.schema
    key, prefix = schema.check_key_parts(key_map, KEY_EMPTY_PREFIX)
    charge = ctx.capacity.charge(entry)
    part, old = prepare(charge, table, key)
    old_item = orjson.loads(old[0]) if old is not None else None
    check(charge, part, prefix, compiled, body, old, old_item, old[1] if old else 0)
    update = compiled.update if compiled is not None else None
    if update is not None:
        result = update.apply(old_item, schema.name_set)
        new_item = result.item
        if new_item is not None:
            for name, av in key_map.items():  # the key always comes from the request
                new_item[name] = av
    else:
        result = None
        new_item = dict(old_item) if old_item is not None else dict(key_map)
    size = 0
    if new_item is not None:
        size = item_size(new_item)
        if size > MAX_ITEM_SIZE:
            raise ValidationException(UPDATE_TOO_BIG)
    if new_item is not None and (table.indexes or table.vectors):
        check_index_keys(table, new_item, update=update is not None)
    # The sequence's end, after this handler's own prepare and check (positional: a keyword call
    # costs more). new_item is None only when there was no item and none is created: nothing is written.
    write(charge, table, key, prefix, (dumps(new_item), size) if new_item is not None else None, new_item,
          None, None, False, part, old, old_item)
    attributes = None
    if return_values == "ALL_OLD":
        attributes = old_item
    elif return_values == "ALL_NEW":
        attributes = new_item
    elif return_values == "UPDATED_OLD" and result is not None and old_item is not None:
        attributes = result.updated_old(old_item)
    elif return_values == "UPDATED_NEW" and result is not None and new_item is not None:
        attributes = result.updated_new(new_item)
    return _answer(body, charge, attributes, key_map)
