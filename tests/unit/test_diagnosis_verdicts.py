"""The verdict matrix on the injectable clock: requests through the server's dispatch, then the
report's verdict. Textbook designs loaded fast are fine; a date key is a hot key naming it; a status
GSI is a hot GSI key; a 5/5 table under a fixture load is under-provisioned; a burst absorbed is
fine. Every number a verdict states is one the report's tables show."""
from __future__ import annotations

import re

import orjson

from conftest import FakeClock
from dynalocal.config import Settings
from dynalocal.diagnosis.collect import collect
from dynalocal.diagnosis.engine import FINE, HOT_GSI_KEY, HOT_KEY, UNDER_PROVISIONED, TableReport, diagnose
from dynalocal.diagnosis.render import render_table
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

PREFIX = "DynamoDB_20120810."
PAD = "x" * 900  # about 1 KB items: one write unit each


def _server(**settings) -> tuple[Context, FakeClock]:
    clock = FakeClock()
    return Context(settings=Settings(**settings), clock=clock), clock


def _call(ctx: Context, op: str, body: dict) -> dict:
    ctx.capacity.settle()  # between requests, as the application does
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    data = orjson.loads(out) if out else {}
    assert status == 200 or "Throughput" in data.get("__type", ""), data
    return data


def _create(ctx: Context, name: str, hash_name: str = "p", range_name: str | None = None, **extra) -> None:
    keys = [{"AttributeName": hash_name, "KeyType": "HASH"}]
    defs = [{"AttributeName": hash_name, "AttributeType": "S"}]
    if range_name:
        keys.append({"AttributeName": range_name, "KeyType": "RANGE"})
        defs.append({"AttributeName": range_name, "AttributeType": "S"})
    for gsi in extra.get("GlobalSecondaryIndexes", []):
        for k in gsi["KeySchema"]:
            if all(d["AttributeName"] != k["AttributeName"] for d in defs):
                defs.append({"AttributeName": k["AttributeName"], "AttributeType": "S"})
    extra.setdefault("BillingMode", "PAY_PER_REQUEST")
    _call(ctx, "CreateTable", {"TableName": name, "KeySchema": keys, "AttributeDefinitions": defs, **extra})


def _load(ctx: Context, clock: FakeClock, table: str, items: list[dict], per_second: float) -> int:
    """batch_writer's way: 25 items a call, unprocessed items resent; the clock runs at `per_second`
    items a second. Returns the throttled (unprocessed or refused) item count."""
    throttled = 0
    pending = list(items)
    while pending:
        batch, pending = pending[:25], pending[25:]
        out = _call(ctx, "BatchWriteItem", {"RequestItems": {table: [{"PutRequest": {"Item": i}} for i in batch]}})
        left = [r["PutRequest"]["Item"] for r in out.get("UnprocessedItems", {}).get(table, [])]
        if "__type" in out:
            left = batch
        throttled += len(left)
        pending = left + pending
        clock.advance(len(batch) / per_second)
    return throttled


def _item(**attrs: str) -> dict:
    return {k: {"S": v} for k, v in {**attrs, "pad": PAD}.items()}


def _report(ctx: Context, table: str) -> TableReport:
    [report] = diagnose(collect(ctx, table))
    return report


def _numbers_shown(report: TableReport) -> None:
    """Every number in the verdict's sentence appears in the report's tables below it."""
    text = render_table(report)
    tables = text[re.search(r"\n  (table|index \S+) (reads|writes):", text).start():]  # type: ignore[union-attr]
    for number in re.findall(r"(?<![\w'#.-])\d[\d,.]*%?", report.verdict.summary.replace(report.table, "")):
        number = number.rstrip(".,")
        assert re.search(rf"(?<![\d,.]){re.escape(number)}(?![\d,])", tables), (number, text)


def test_textbook_designs_loaded_fast_are_fine() -> None:
    ctx, clock = _server()
    _create(ctx, "by-customer", "pk", "sk")
    _create(ctx, "by-country", "country", "store")
    _create(ctx, "by-document", "doc", "version")
    loads = {
        "by-customer": [_item(pk=f"customer#{i % 1000:04d}", sk=f"order#{i}") for i in range(16000)],
        "by-country": [_item(country=f"country{i % 50}", store=f"state{i % 7}#city{i % 13}#store{i}")
                       for i in range(16000)],
        "by-document": [_item(doc=f"doc#{i // 4:05d}", version=f"v{i % 4}") for i in range(16000)],
    }
    for table, items in loads.items():
        _load(ctx, clock, table, items, per_second=8000)
        report = _report(ctx, table)
        assert report.verdict.kind == FINE, render_table(report)
        assert report.verdict.key is None and "%" in report.verdict.summary
        units = sum(m.units for m in report.meters if m.direction == "write")
        assert units == 16000  # every item admitted once, one unit each


def test_a_date_key_is_a_hot_key_naming_it() -> None:
    ctx, clock = _server()
    _create(ctx, "by-date", "day", "order")
    thrown = _load(ctx, clock, "by-date", [_item(day="2024-11-23", order=f"o{i}") for i in range(30000)],
                   per_second=2000)
    report = _report(ctx, "by-date")
    v = report.verdict
    assert thrown > 0 and (v.kind, v.key) == (HOT_KEY, "2024-11-23"), render_table(report)
    assert v.share == 1.0 and f"carried 100% of partition {v.partition}'s writes" in v.summary
    assert "WRU" in v.summary and "WCU" not in v.summary
    _numbers_shown(report)


def test_a_status_gsi_is_a_hot_gsi_key() -> None:
    ctx, clock = _server()
    gsi = {"IndexName": "by-status", "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
           "Projection": {"ProjectionType": "ALL"}}
    _create(ctx, "orders", "id", GlobalSecondaryIndexes=[gsi])
    items = [_item(id=f"order#{i}", status="PENDING" if i % 10 else "SHIPPED") for i in range(20000)]
    _load(ctx, clock, "orders", items, per_second=2000)
    report = _report(ctx, "orders")
    v = report.verdict
    assert (v.kind, v.index, v.key) == (HOT_GSI_KEY, "by-status", "PENDING"), render_table(report)
    assert "index by-status of table orders" in v.summary
    _numbers_shown(report)


def test_a_five_by_five_table_under_a_fixture_load_is_under_provisioned() -> None:
    ctx, clock = _server(throttling="report")
    _create(ctx, "fixture", "pk", BillingMode="PROVISIONED",
            ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
    thrown = _load(ctx, clock, "fixture", [_item(pk=f"customer#{i}") for i in range(3000)], per_second=3000)
    report = _report(ctx, "fixture")
    v = report.verdict
    assert thrown == 0 and v.kind == UNDER_PROVISIONED and v.key is None, render_table(report)
    assert report.throttles.get("table rate", 0) > 1000
    assert "WCU" in v.summary and "key design is not the cause" in v.summary
    _numbers_shown(report)


def test_a_burst_the_partition_absorbed_is_fine() -> None:
    ctx, clock = _server()
    _create(ctx, "bursty", "day", "order")
    # one key at 1,500 WRU/s for 2 s: 1,000 units beyond its partition's ceiling, within its 5 s of burst
    thrown = _load(ctx, clock, "bursty", [_item(day="2024-11-23", order=f"o{i}") for i in range(3000)],
                   per_second=1500)
    report = _report(ctx, "bursty")
    assert thrown == 0 and report.verdict.kind == FINE, render_table(report)
