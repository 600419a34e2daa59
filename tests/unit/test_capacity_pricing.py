"""The Charge's pricing of each operation (docs/behaviour/capacity.md §1), called as the handlers call it: the
units it reports in ConsumedCapacity and the partitions it charges them to."""
from __future__ import annotations

import orjson
import pytest

from dynalocal.capacity.charge import Charge
from dynalocal.capacity.causes import READ, WRITE
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

INDEXES = {"ReturnConsumedCapacity": "INDEXES"}
S = {"AttributeType": "S"}


@pytest.fixture(scope="module")
def ctx() -> Context:
    ctx = Context(clock=lambda: 1000.0)
    attrs = [{"AttributeName": n, **S} for n in ("p", "c", "g", "l")]
    body = {"TableName": "tab", "BillingMode": "PAY_PER_REQUEST", "AttributeDefinitions": attrs,
            "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "c", "KeyType": "RANGE"}],
            "GlobalSecondaryIndexes": [{"IndexName": "gsi", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                        "Projection": {"ProjectionType": "ALL"}}],
            "LocalSecondaryIndexes": [{"IndexName": "lsi", "KeySchema": [
                {"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}]}
    status, out = dispatch(ctx, "DynamoDB_20120810.CreateTable", orjson.dumps(body))
    assert status == 200, out
    return ctx


def _charge(ctx: Context) -> Charge:
    return ctx.capacity.charge(ctx.db.tables["tab"])


def _total(charge: Charge) -> float:
    return charge.consumed(INDEXES, "tab")["CapacityUnits"]


@pytest.mark.parametrize("size, consistent, units", [
    (0, True, 1.0), (0, False, 0.5),  # a missing item reads the minimum
    (4096, True, 1.0), (4097, True, 2.0), (8192, False, 1.0), (400 * 1024, False, 50.0)])
def test_get_is_the_item_size_in_4kb_units_halved_when_eventually_consistent(ctx, size, consistent, units):
    charge = _charge(ctx)
    charge.get(3, size, consistent, b"pk")
    assert charge.consumed(INDEXES, "tab") == {"TableName": "tab", "CapacityUnits": units, "Table": {"CapacityUnits": units}}


@pytest.mark.parametrize("old, new, units", [
    (0, 0, 1.0), (0, 1024, 1.0), (0, 1025, 2.0),
    (2100, 10, 3.0),  # a 2.1 KB item overwritten with a tiny one costs the old size
    (10, 2100, 3.0)])
def test_put_is_the_larger_of_old_and_new_in_1kb_units(ctx, old, new, units):
    charge = _charge(ctx)
    charge.put(1, b"pk", old, new)
    assert _total(charge) == units


@pytest.mark.parametrize("old, units", [(0, 1.0), (1, 1.0), (3000, 3.0)])
def test_delete_is_the_deleted_item_in_1kb_units_and_one_unit_when_there_was_none(ctx, old, units):
    charge = _charge(ctx)
    charge.delete(1, b"pk", old)
    assert _total(charge) == units


def test_a_failed_condition_costs_the_new_item_when_it_exists_else_one_unit(ctx):
    present, absent = _charge(ctx), _charge(ctx)
    present.condition_failed(0, b"pk", True, 5000)
    absent.condition_failed(0, b"pk", False, 5000)
    assert (_total(present), _total(absent)) == (5.0, 1.0)


def test_a_page_is_rounded_once_over_all_items_read(ctx):
    # 10 items totalling 40.8 KB: 44 KB, 11 units consistent (not 10 x 2 rounded one by one).
    for consistent, units in ((True, 11.0), (False, 5.5)):
        charge = _charge(ctx)
        charge.page(41779, consistent, [(2, 1.0)], b"pk")
        assert _total(charge) == units
    empty = _charge(ctx)
    empty.page(0, False, [(0, 1.0)], b"pk")
    assert _total(empty) == 0.5


def test_an_lsi_page_reports_under_the_index_and_its_fetches_under_table(ctx):
    charge = _charge(ctx)
    lsi = ctx.db.tables["tab"].table.indexes["lsi"]
    charge.page(100, False, [(0, 1.0)], b"pk", lsi, fetched=[100, 5000])  # 0.5 + R(5000) x 0.5 = 1.5
    assert charge.consumed(INDEXES, "tab") == {"TableName": "tab", "CapacityUnits": 2.0, "Table": {"CapacityUnits": 1.5},
                                             "LocalSecondaryIndexes": {"lsi": {"CapacityUnits": 0.5}}}


def test_a_scan_page_is_spread_over_the_partitions_it_read(ctx):
    charge = _charge(ctx)
    charge.meter.flush()
    before = [p.units[READ] for p in charge.meter.parts[:2]]
    charge.page(4 * 4096, True, [(0, 0.25), (1, 0.75)])
    charge.meter.flush()  # charges wait in the meter's log until the records are read
    assert [p.units[READ] - b for p, b in zip(charge.meter.parts[:2], before)] == [1.0, 3.0]
    assert _total(charge) == 4.0


def test_transactional_reads_and_writes_cost_twice_index_writes_included(ctx):
    get = _charge(ctx)
    get.transact_get(0, 0, b"pk")
    get.transact_get(0, 5000, b"pk")
    assert _total(get) == 2.0 + 4.0
    write = _charge(ctx)
    write.transact_write(0, b"pk", 2000, 0, {}, [])  # a Delete or ConditionCheck: the old item
    assert _total(write) == 4.0
    indexed = _charge(ctx)
    indexed.transact_write(0, b"pk", 0, 1500, {"gsi": 1.0, "lsi": 1.0}, [])
    assert indexed.consumed(INDEXES, "tab") == {
        "TableName": "tab", "CapacityUnits": 8.0, "Table": {"CapacityUnits": 4.0},
        "GlobalSecondaryIndexes": {"gsi": {"CapacityUnits": 2.0}},
        "LocalSecondaryIndexes": {"lsi": {"CapacityUnits": 2.0}}}


def test_writes_land_on_the_partition_named_lsi_units_with_the_table(ctx):
    charge = _charge(ctx)
    parts = charge.meter.parts
    charge.meter.flush()
    before = parts[2].units[WRITE]
    charge.put(2, b"pk", 0, 1500, {"lsi": 1.0}, [])
    charge.meter.flush()  # charges wait in the meter's log until the records are read
    assert parts[2].units[WRITE] - before == 3.0  # W(1500) = 2 for the item, 1 for the LSI entry
    assert charge.consumed(INDEXES, "tab")["LocalSecondaryIndexes"] == {"lsi": {"CapacityUnits": 1.0}}
