"""The one write sequence (engine.writes) on an in-process Context, called as the handlers call it:
prepare (partition, admission, current item), check (condition), write (GSI back-pressure,
Table.write, charge), and the transaction's admit_indexes / apply."""
from __future__ import annotations

import orjson
import pytest
from conftest import FakeClock

from dynalocal.capacity.charge import Charge
from dynalocal.config import Settings
from dynalocal.engine import writes
from dynalocal.engine.common import compile_expressions
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from dynalocal.errors import ConditionalCheckFailedException, ProvisionedThroughputExceededException
from dynalocal.values.attributes import item_size
from dynalocal.values.blob import dumps

INDEXES = {"ReturnConsumedCapacity": "INDEXES"}
T = "tab"


def _call(ctx: Context, op: str, body: dict) -> tuple[int, dict]:
    status, out = dispatch(ctx, "DynamoDB_20120810." + op, orjson.dumps(body))
    return status, orjson.loads(out) if out else {}


def _context(gsi_wcu: int | None = None) -> Context:
    """Table `tab` (hash key p) with GSI `byg` (hash key g, ALL): on demand, or provisioned with a
    GSI of `gsi_wcu` write units and 2 seconds of burst (so its 2nd unit of a second is its last)."""
    ctx = Context(settings=Settings(burst_seconds=2, throttling="enforce"), clock=FakeClock())
    gsi: dict = {"IndexName": "byg", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                 "Projection": {"ProjectionType": "ALL"}}
    body: dict = {"TableName": T, "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
                  "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"},
                                           {"AttributeName": "g", "AttributeType": "S"}],
                  "GlobalSecondaryIndexes": [gsi], "BillingMode": "PAY_PER_REQUEST"}
    if gsi_wcu is not None:
        del body["BillingMode"]
        body["ProvisionedThroughput"] = {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100}
        gsi["ProvisionedThroughput"] = {"ReadCapacityUnits": 1, "WriteCapacityUnits": gsi_wcu}
    status, out = _call(ctx, "CreateTable", body)
    assert status == 200, out
    return ctx


def _item(pk: str, g: str | None = None, kb: int = 0) -> dict:
    item = {"p": {"S": pk}}
    if g is not None:
        item["g"] = {"S": g}
    if kb:
        item["v"] = {"S": "x" * (kb * 1024 - 64)}  # kb write units
    return item


def _put(ctx: Context, item: dict, spec: dict | None = None) -> Charge:
    """PutItem's sequence: prepare, check (when the request has a condition), write."""
    entry = ctx.db.tables[T]
    table = entry.table
    key, prefix = table.schema.check_item_parts(item)
    charge = ctx.capacity.charge(entry)
    spec = spec or {}
    writes.write(charge, table, key, prefix, (dumps(item), item_size(item)), item, compile_expressions(spec, "PutItem"),
                 spec)
    return charge


def _delete(ctx: Context, pk: str) -> Charge:
    entry = ctx.db.tables[T]
    table = entry.table
    key, prefix = table.schema.check_key_parts({"p": {"S": pk}})
    charge = ctx.capacity.charge(entry)
    before = _stored(ctx, pk)
    assert writes.write(charge, table, key, prefix, None, want_old=True) == before  # DeleteItem's ALL_OLD
    assert _stored(ctx, pk) is None
    return charge


def _stored(ctx: Context, pk: str) -> dict | None:
    table = ctx.db.tables[T].table
    record = table.get(table.schema.check_key({"p": {"S": pk}}))
    return orjson.loads(record[0]) if record is not None else None


def _units(charge: Charge) -> dict:
    return charge.consumed(INDEXES, T)


def test_a_failed_condition_is_charged_the_new_item_and_writes_nothing():
    ctx = _context()
    _put(ctx, _item("a", kb=2))
    table = ctx.db.tables[T].table
    sequence = table.sequence
    entry = ctx.db.tables[T]
    key, prefix = table.schema.check_item_parts(_item("a", kb=3))
    charge = ctx.capacity.charge(entry)
    part, old = writes.prepare(charge, table, key)
    spec = {"ConditionExpression": "attribute_not_exists(p)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    with pytest.raises(ConditionalCheckFailedException) as failed:
        writes.check(charge, part, prefix, compile_expressions(spec, "PutItem"), spec, old, None, 3 * 1024)
    assert failed.value.extra["Item"] == _item("a", kb=2)  # ALL_OLD: the item as it is
    assert _units(charge) == {"TableName": T, "CapacityUnits": 3.0, "Table": {"CapacityUnits": 3.0}}
    assert table.sequence == sequence and _stored(ctx, "a") == _item("a", kb=2)
    charge = ctx.capacity.charge(entry)  # the whole sequence: write checks the condition first
    with pytest.raises(ConditionalCheckFailedException):
        writes.write(charge, table, key, prefix, (b"{}", 3 * 1024), _item("a", kb=3),
                     compile_expressions(spec, "PutItem"), spec)
    assert _units(charge)["CapacityUnits"] == 3.0 and table.sequence == sequence


def test_a_failed_condition_on_a_missing_item_is_charged_one_unit():
    ctx = _context()
    spec = {"ConditionExpression": "attribute_exists(p)"}
    entry = ctx.db.tables[T]
    table = entry.table
    key, prefix = table.schema.check_item_parts(_item("b", kb=5))
    charge = ctx.capacity.charge(entry)
    part, old = writes.prepare(charge, table, key)
    with pytest.raises(ConditionalCheckFailedException) as failed:
        writes.check(charge, part, prefix, compile_expressions(spec, "PutItem"), spec, old, None, 5 * 1024)
    assert "Item" not in failed.value.extra
    assert _units(charge)["CapacityUnits"] == 1.0
    assert table.item_count == 0 and table.sequence == 0


def test_a_transaction_check_charges_nothing():
    ctx = _context()
    _put(ctx, _item("a"))
    table = ctx.db.tables[T].table
    key, prefix = table.schema.check_item_parts(_item("a"))
    part, old = writes.prepare(ctx.capacity.charge(ctx.db.tables[T]), table, key)
    spec = {"ConditionExpression": "attribute_not_exists(p)"}
    with pytest.raises(ConditionalCheckFailedException):
        writes.check(None, part, prefix, compile_expressions(spec, "TransactWriteItems"), spec, old, None, 0)


def test_the_owed_gsi_units_are_charged_to_the_index():
    ctx = _context()
    charge = _put(ctx, _item("a", "x"))
    assert _units(charge) == {"TableName": T, "CapacityUnits": 2.0, "Table": {"CapacityUnits": 1.0},
                              "GlobalSecondaryIndexes": {"byg": {"CapacityUnits": 1.0}}}
    moved = _put(ctx, _item("a", "y"))  # the index key changes: the old entry is removed, a new one put
    assert _units(moved)["GlobalSecondaryIndexes"] == {"byg": {"CapacityUnits": 2.0}}
    outside = _put(ctx, _item("b"))  # not in the index: the table's unit only
    assert _units(outside) == {"TableName": T, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    gone = _delete(ctx, "a")
    assert _units(gone)["GlobalSecondaryIndexes"] == {"byg": {"CapacityUnits": 1.0}}
    index = ctx.db.tables[T].table.indexes["byg"]
    assert index.item_count == 0


def test_deleting_a_missing_item_charges_one_unit_and_writes_nothing():
    ctx = _context()
    table = ctx.db.tables[T].table
    charge = _delete(ctx, "nobody")
    assert _units(charge) == {"TableName": T, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    assert table.sequence == 0
    _put(ctx, _item("big", "x", kb=3))
    assert _units(_delete(ctx, "big")) == {"TableName": T, "CapacityUnits": 6.0, "Table": {"CapacityUnits": 3.0},
                                           "GlobalSecondaryIndexes": {"byg": {"CapacityUnits": 3.0}}}


def test_gsi_back_pressure_refuses_the_write_before_anything_is_written():
    ctx = _context(gsi_wcu=1)
    for pk in ("k0", "k1"):  # the GSI's 2 units of burst
        _put(ctx, _item(pk, "x"))
    table = ctx.db.tables[T].table
    sequence, index = table.sequence, table.indexes["byg"]
    with pytest.raises(ProvisionedThroughputExceededException):
        _put(ctx, _item("k2", "x"))
    assert table.sequence == sequence and _stored(ctx, "k2") is None and index.item_count == 2
    _put(ctx, _item("k3"))  # not in the index: written
    assert _stored(ctx, "k3") == _item("k3")


def test_gsi_back_pressure_cancels_a_whole_transaction_and_leaves_a_batch_write_unprocessed():
    ctx = _context(gsi_wcu=1)
    _put(ctx, _item("k0", "x"))
    _put(ctx, _item("k1", "x"))
    table = ctx.db.tables[T].table
    sequence = table.sequence
    status, out = _call(ctx, "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": T, "Item": _item("plain")}}, {"Put": {"TableName": T, "Item": _item("k2", "x")}}]})
    assert status == 400 and [r["Code"] for r in out["CancellationReasons"]] == ["None", "ProvisionedThroughputExceeded"]
    assert table.sequence == sequence and _stored(ctx, "plain") is None  # all or nothing
    put = [{"PutRequest": {"Item": _item("plain")}}, {"PutRequest": {"Item": _item("k2", "x")}}]
    status, out = _call(ctx, "BatchWriteItem", {"RequestItems": {T: put}})
    assert status == 200 and out["UnprocessedItems"] == {T: put[1:]}
    assert _stored(ctx, "plain") == _item("plain") and _stored(ctx, "k2") is None


def test_a_transaction_action_is_charged_twice_and_a_condition_check_writes_nothing():
    ctx = _context()
    _put(ctx, _item("a", kb=2))
    entry = ctx.db.tables[T]
    table = entry.table
    sequence = table.sequence
    key, prefix = table.schema.check_item_parts(_item("a"))
    charge = ctx.capacity.charge(entry)
    part, old = writes.prepare(charge, table, key)
    writes.apply(charge, table, part, key, prefix, old, None, None, None, (), False, transactional=True)
    assert _units(charge)["CapacityUnits"] == 4.0 and table.sequence == sequence
    new_item = _item("a", "x")
    gsis = writes.admit_indexes(charge, table, part, key, old, new_item, orjson.loads(old[0]))
    writes.apply(charge, table, part, key, prefix, old, (dumps(new_item), item_size(new_item)), new_item,
                 orjson.loads(old[0]), gsis, False, transactional=True)
    assert _units(charge)["GlobalSecondaryIndexes"] == {"byg": {"CapacityUnits": 2.0}}
    assert _stored(ctx, "a") == new_item
