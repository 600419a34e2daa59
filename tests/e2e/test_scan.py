"""Scan: stable order, paging (also across deletes), filters, projections, Select, parallel segments, errors."""
from __future__ import annotations

import pytest
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError


def _error(excinfo) -> tuple[str, str]:
    err = excinfo.value.response["Error"]
    return err["Code"], err["Message"]


@pytest.fixture
def filled(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])
    requests = [{"PutRequest": {"Item": {"pk": {"S": f"p{i % 37}"}, "sk": {"N": str(i)}, "n": {"N": str(i % 5)}}}}
                for i in range(300)]
    for i in range(0, len(requests), 25):
        ddb.batch_write_item(RequestItems={table: requests[i:i + 25]})
    return table


def _all(ddb, **kwargs) -> tuple[list, int]:
    items, pages, start = [], 0, None
    while True:
        kw = dict(kwargs, ExclusiveStartKey=start) if start else kwargs
        r = ddb.scan(**kw)
        pages += 1
        items += r.get("Items", [])
        start = r.get("LastEvaluatedKey")
        if not start:
            return items, pages


def test_scan_pages_cover_every_item_once(ddb, filled):
    items, pages = _all(ddb, TableName=filled, Limit=17)
    keys = [(i["pk"]["S"], int(i["sk"]["N"])) for i in items]
    assert len(keys) == 300 and len(set(keys)) == 300 and pages == 18
    whole = ddb.scan(TableName=filled)
    assert [(i["pk"]["S"], int(i["sk"]["N"])) for i in whole["Items"]] == keys  # a stable order
    assert whole["Count"] == whole["ScannedCount"] == 300 and "LastEvaluatedKey" not in whole


def test_scan_resumes_after_the_last_returned_item_was_deleted(ddb, filled):
    first = ddb.scan(TableName=filled, Limit=50)
    last = first["LastEvaluatedKey"]
    ddb.delete_item(TableName=filled, Key=last)
    rest, _ = _all(ddb, TableName=filled, ExclusiveStartKey=last)
    seen = {(i["pk"]["S"], i["sk"]["N"]) for i in first["Items"] + rest}
    assert len(first["Items"]) + len(rest) == 300 and len(seen) == 300


@pytest.mark.parametrize("total", [1, 3, 16])
def test_parallel_scan_returns_every_item_exactly_once(ddb, filled, total):
    seen = []
    per_partition_key: dict[str, set] = {}
    for segment in range(total):
        items, _ = _all(ddb, TableName=filled, Segment=segment, TotalSegments=total, Limit=13)
        seen += [(i["pk"]["S"], i["sk"]["N"]) for i in items]
        for i in items:
            per_partition_key.setdefault(i["pk"]["S"], set()).add(segment)
    assert len(seen) == 300 and len(set(seen)) == 300
    assert all(len(segments) == 1 for segments in per_partition_key.values())


def test_filter_projection_and_select(ddb, filled, resource):
    r = ddb.scan(TableName=filled, FilterExpression="n = :z", ExpressionAttributeValues={":z": {"N": "0"}})
    assert r["Count"] == 60 and r["ScannedCount"] == 300
    r = ddb.scan(TableName=filled, Limit=10, FilterExpression="n = :z", ExpressionAttributeValues={":z": {"N": "0"}},
                 Select="COUNT")
    assert r["ScannedCount"] == 10 and "Items" not in r and "LastEvaluatedKey" in r
    r = ddb.scan(TableName=filled, ScanFilter={"n": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "3"}]}},
                 AttributesToGet=["sk"])
    assert r["Count"] == 60 and all(set(i) == {"sk"} for i in r["Items"])
    r = ddb.scan(TableName=filled, ProjectionExpression="#k", ExpressionAttributeNames={"#k": "pk"}, Limit=2)
    assert all(set(i) == {"pk"} for i in r["Items"]) and set(r["LastEvaluatedKey"]) == {"pk", "sk"}
    r = ddb.scan(TableName=filled, Select="COUNT", Limit=1)
    assert r["Count"] == 1 and r["ScannedCount"] == 1 and "LastEvaluatedKey" in r
    t = resource.Table(filled)
    assert t.scan(FilterExpression=Attr("sk").lt(10))["Count"] == 10  # key attributes may be filtered in a Scan


@pytest.mark.parametrize("kwargs,message", [
    ({"Segment": 1}, "The TotalSegments parameter is required but was not present in the request when Segment "
                     "parameter is present"),
    ({"TotalSegments": 2}, "The Segment parameter is required but was not present in the request when parameter "
                           "TotalSegments is present"),
    ({"Segment": 3, "TotalSegments": 3}, "The Segment parameter is zero-based and must be less than parameter "
                                         "TotalSegments: Segment: 3 is not less than TotalSegments: 3"),
    ({"ExclusiveStartKey": {"pk": {"S": "p1"}}},
     "The provided starting key is invalid: The provided key element does not match the schema"),
    ({"ExclusiveStartKey": {"pk": {"S": "p1"}, "sk": {"S": "1"}}}, "The provided key element does not match the schema"),
    ({"Select": "SPECIFIC_ATTRIBUTES"},
     "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"),
    ({"IndexName": "nope"}, "The table does not have the specified index: nope"),
])
def test_scan_errors(ddb, filled, kwargs, message):
    with pytest.raises(ClientError) as info:
        ddb.scan(TableName=filled, **kwargs)
    assert _error(info) == ("ValidationException", message)


def test_scan_capacity_sums_sizes(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    for i in range(10):
        ddb.put_item(TableName=table, Item={"id": {"S": str(i)}, "v": {"S": "y" * 1000}})
    r = ddb.scan(TableName=table, ConsistentRead=True, ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"]["CapacityUnits"] == 3.0
    r = ddb.scan(TableName=table, ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"]["CapacityUnits"] == 1.5


def test_empty_table_scan(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    assert ddb.scan(TableName=table)["Items"] == []
    assert ddb.scan(TableName=table, Segment=5, TotalSegments=7)["Count"] == 0
