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


def write(server, body):
    status, _, raw = call(server, "/_dynalocal/write", body, method="POST")
    return status, json.loads(raw)


def test_the_write_route_creates_changes_and_deletes_as_dynamodb(live):
    status, created = write(live, {
        "operation": "CreateTable", "TableName": "orders", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "N"},
                                 {"AttributeName": "status", "AttributeType": "S"}],
        "GlobalSecondaryIndexes": [{"IndexName": "by-status", "Projection": {"ProjectionType": "ALL"},
                                    "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}]}]})
    assert status == 200 and created["TableDescription"]["GlobalSecondaryIndexes"][0]["IndexName"] == "by-status"
    item = {"pk": {"S": "a"}, "sk": {"N": "1"}, "status": {"S": "new"}}
    assert write(live, {"operation": "PutItem", "TableName": "orders", "Item": item}) == (200, {})
    status, _ = write(live, {"operation": "UpdateItem", "TableName": "orders",
                             "Key": {"pk": {"S": "a"}, "sk": {"N": "1"}},
                             "UpdateExpression": "SET #s = :s", "ExpressionAttributeNames": {"#s": "status"},
                             "ExpressionAttributeValues": {":s": {"S": "paid"}}})
    assert status == 200
    assert live.ddb.query(TableName="orders", IndexName="by-status", KeyConditionExpression="#s = :s",
                          ExpressionAttributeNames={"#s": "status"},
                          ExpressionAttributeValues={":s": {"S": "paid"}})["Count"] == 1
    status, answer = write(live, {"operation": "ExecuteStatement",
                                  "Statement": "SELECT * FROM \"orders\" WHERE pk = 'a'"})
    assert status == 200 and answer["Items"] == [{**item, "status": {"S": "paid"}}]
    assert write(live, {"operation": "DeleteItem", "TableName": "orders",
                        "Key": {"pk": {"S": "a"}, "sk": {"N": "1"}}}) == (200, {})
    assert write(live, {"operation": "DeleteTable", "TableName": "orders"})[0] == 200
    assert live.ddb.list_tables()["TableNames"] == []


def test_the_write_route_answers_errors_byte_for_byte_as_the_wire(live):
    create(live.ddb, "errs")
    request = {"TableName": "errs", "Item": {"pk": {"S": "k"}}, "ConditionExpression": "attribute_exists(pk)"}
    wire = live.raw("DynamoDB_20120810.PutItem", request)
    console = call(live, "/_dynalocal/write", {"operation": "PutItem", **request}, method="POST")
    assert wire[0] == console[0] == 400 and wire[2] == console[2]
    assert b"ConditionalCheckFailedException" in console[2]
    status, answer = write(live, {"operation": "ExecuteStatement", "Statement": "SELEC oops"})
    assert status == 400 and answer["__type"].endswith("ValidationException")
    status, answer = write(live, {"operation": "BatchWriteItem", "RequestItems": {}})
    assert status == 400 and "writes only" in answer["error"]
    status, answer = write(live, {"TableName": "errs"})
    assert status == 400 and answer["error"].startswith('expected {"operation": "CreateTable"|')
