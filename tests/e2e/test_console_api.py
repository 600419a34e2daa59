"""The console's data routes end to end: the heat-map series, the read-only item browser, static files."""
from __future__ import annotations

import json

import pytest
from conftest import FakeClock, LiveServer
from diagnosis_load import create, put

from dynalocal.config import Settings
from dynalocal.engine.context import Context


@pytest.fixture
def live():
    clock = FakeClock()
    ctx = Context(settings=Settings(partition_burst_seconds=0), clock=clock)
    with LiveServer(ctx) as server:
        server.clock = clock
        server.ddb = server.client(retries={"total_max_attempts": 1, "mode": "standard"})
        yield server


def call(server, path: str, body=None, method: str = "GET"):
    data = None if body is None else json.dumps(body).encode()
    status, headers, raw = server.raw(None, data, content_type="application/json", method=method, path=path)
    return status, headers, raw


def test_heat_series_per_partition_per_second_with_throttles(live):
    create(live.ddb, "hot")
    for second in range(3):
        for _ in range(15):  # 1,500 WCU in the second: 1,000 sustained, the rest throttled
            put(live.ddb, "hot", "k", 100)
        live.clock.now += 1.0
    status, _, raw = call(live, "/_dynalocal/tables/hot/heat?seconds=10")
    assert status == 200
    heat = json.loads(raw)
    assert heat["seconds"] == 10
    writes = next(m for m in heat["meters"] if m["index"] is None and m["direction"] == "write")
    assert writes["partition_limit"] == 1000 and writes["table_limit"] == 4000
    assert [len(p["units"]) for p in writes["partitions"]] == [10] * 4
    busy = [p for p in writes["partitions"] if any(p["units"])]
    assert len(busy) == 1
    units, throttles = busy[0]["units"], busy[0]["throttles"]
    assert units[-4:] == [1000.0, 1000.0, 1000.0, 0.0]  # each loaded second admitted what the partition sustains
    assert throttles[-4:] == [5, 5, 5, 0]  # and refused the other 5 writes of 100 WCU
    assert call(live, "/_dynalocal/tables/nope/heat")[0] == 404


def test_item_browser_reads_as_dynamodb_and_only_reads(live):
    create(live.ddb, "browse")
    for n in range(3):
        put(live.ddb, "browse", f"k{n}", 1)
    status, _, raw = call(live, "/_dynalocal/read", {"operation": "Scan", "TableName": "browse", "Limit": 2},
                          method="POST")
    page = json.loads(raw)
    assert status == 200 and page["Count"] == 2 and "LastEvaluatedKey" in page
    status, _, raw = call(live, "/_dynalocal/read", {
        "operation": "Query", "TableName": "browse", "KeyConditionExpression": "pk = :k",
        "ExpressionAttributeValues": {":k": {"S": "k1"}}}, method="POST")
    assert status == 200 and [i["pk"]["S"] for i in json.loads(raw)["Items"]] == ["k1"]
    status, _, raw = call(live, "/_dynalocal/read", {"operation": "Scan", "TableName": "nope"}, method="POST")
    assert status == 400 and json.loads(raw)["__type"].endswith("ResourceNotFoundException")
    status, _, raw = call(live, "/_dynalocal/read", {"operation": "DeleteItem", "TableName": "browse",
                                                     "Key": {"pk": {"S": "k1"}}}, method="POST")
    assert status == 400 and "reads only" in json.loads(raw)["error"]
    assert live.ddb.scan(TableName="browse")["Count"] == 3


def test_console_files_are_served_from_the_package(live):
    status, headers, raw = call(live, "/_dynalocal/console")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'<script src="/_dynalocal/console/console.js">' in raw
    for name, kind in (("console.js", "text/javascript"), ("console.css", "text/css")):
        status, headers, raw = call(live, f"/_dynalocal/console/{name}")
        assert status == 200 and headers["Content-Type"].startswith(kind) and len(raw) > 500
    assert call(live, "/_dynalocal/console/secrets.py")[0] == 404
    assert b"http://" not in call(live, "/_dynalocal/console")[2].replace(b"http://127.0.0.1", b"")  # no CDN
