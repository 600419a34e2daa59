"""BatchGetItem and BatchWriteItem: limits, duplicates, projections, UnprocessedKeys, batch_writer, capacity."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError


def _error(excinfo) -> tuple[str, str]:
    err = excinfo.value.response["Error"]
    return err["Code"], err["Message"]


@pytest.fixture
def two_tables(ddb, make_table):
    a = make_table([("id", "HASH")], [("id", "S")])
    b = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])
    return a, b


def test_batch_write_then_get_across_tables(ddb, two_tables):
    a, b = two_tables
    r = ddb.batch_write_item(RequestItems={
        a: [{"PutRequest": {"Item": {"id": {"S": f"a{i}"}, "v": {"N": str(i)}}}} for i in range(10)],
        b: [{"PutRequest": {"Item": {"pk": {"S": "p"}, "sk": {"N": str(i)}, "w": {"S": "x"}}}} for i in range(15)],
    }, ReturnConsumedCapacity="TOTAL")
    assert r["UnprocessedItems"] == {}
    assert sorted((c["TableName"], c["CapacityUnits"]) for c in r["ConsumedCapacity"]) == sorted([(a, 10.0), (b, 15.0)])
    r = ddb.batch_get_item(RequestItems={
        a: {"Keys": [{"id": {"S": "a1"}}, {"id": {"S": "a2"}}, {"id": {"S": "missing"}}], "ConsistentRead": True},
        b: {"Keys": [{"pk": {"S": "p"}, "sk": {"N": "3"}}], "ProjectionExpression": "sk"},
    }, ReturnConsumedCapacity="TOTAL")
    assert sorted(i["id"]["S"] for i in r["Responses"][a]) == ["a1", "a2"]
    assert r["Responses"][b] == [{"sk": {"N": "3"}}]
    assert r["UnprocessedKeys"] == {}
    assert sorted((c["TableName"], c["CapacityUnits"]) for c in r["ConsumedCapacity"]) == sorted([(a, 3.0), (b, 0.5)])
    ddb.batch_write_item(RequestItems={a: [{"DeleteRequest": {"Key": {"id": {"S": "a1"}}}},
                                           {"DeleteRequest": {"Key": {"id": {"S": "never-there"}}}}]})
    r = ddb.batch_get_item(RequestItems={a: {"Keys": [{"id": {"S": "a1"}}], "AttributesToGet": ["v"]}})
    assert r["Responses"] == {a: []}


def test_batch_get_errors(ddb, two_tables):
    a, _ = two_tables
    with pytest.raises(ClientError) as info:
        ddb.batch_get_item(RequestItems={a: {"Keys": [{"id": {"S": "x"}}, {"id": {"S": "x"}}]}})
    assert _error(info) == ("ValidationException", "Provided list of item keys contains duplicates")
    with pytest.raises(ClientError) as info:
        ddb.batch_get_item(RequestItems={a: {"Keys": [{"id": {"S": str(i)}} for i in range(100)]},
                                         "other-table": {"Keys": [{"id": {"S": "x"}}]}})
    assert _error(info) == ("ValidationException", "Too many items requested for the BatchGetItem call")
    with pytest.raises(ClientError) as info:
        ddb.batch_get_item(RequestItems={a: {"Keys": [{"id": {"S": "x"}}]}, "missing-table": {"Keys": [{"id": {"S": "x"}}]}})
    assert _error(info) == ("ResourceNotFoundException", "Requested resource not found")
    with pytest.raises(ClientError) as info:
        ddb.batch_get_item(RequestItems={a: {"Keys": [{"id": {"N": "1"}}]}})
    assert _error(info) == ("ValidationException", "The provided key element does not match the schema")


def test_batch_get_leaves_keys_unprocessed_past_16_mb(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    big = "x" * 399_000
    for i in range(50):
        ddb.put_item(TableName=table, Item={"id": {"S": f"k{i:02d}"}, "v": {"S": big}})
    keys = [{"id": {"S": f"k{i:02d}"}} for i in range(50)]
    r = ddb.batch_get_item(RequestItems={table: {"Keys": keys, "ProjectionExpression": "id"}})
    got = len(r["Responses"][table])
    left = r["UnprocessedKeys"][table]
    assert 0 < got < 50 and got + len(left["Keys"]) == 50
    assert left["ProjectionExpression"] == "id"
    r2 = ddb.batch_get_item(RequestItems=r["UnprocessedKeys"])
    assert len(r2["Responses"][table]) + got == 50 and r2["UnprocessedKeys"] == {}


def test_batch_write_errors_change_nothing(ddb, two_tables):
    a, b = two_tables
    put = lambda i: {"PutRequest": {"Item": {"id": {"S": f"e{i}"}}}}  # noqa: E731
    cases = [
        ({a: [put(1), put(1)]}, "Provided list of item keys contains duplicates"),
        ({a: [put(1), {"DeleteRequest": {"Key": {"id": {"S": "e1"}}}}]}, "Provided list of item keys contains duplicates"),
        ({a: [put(i) for i in range(20)], b: [{"DeleteRequest": {"Key": {"pk": {"S": "p"}, "sk": {"N": str(i)}}}}
                                             for i in range(6)]}, "Too many items requested for the BatchWriteItem call"),
        ({a: [put(1), {}]}, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the "
                            "supported datatypes"),
        ({a: [put(1), {"PutRequest": {"Item": {"nokey": {"S": "x"}}}}]},
         "One or more parameter values were invalid: Missing the key id in the item"),
        ({a: [put(1), {"DeleteRequest": {"Key": {"id": {"S": "x"}, "extra": {"S": "y"}}}}]},
         "The provided key element does not match the schema"),
        ({a: [put(1), {"PutRequest": {"Item": {"id": {"S": "big"}, "v": {"S": "x" * 410_000}}}}]},
         "Item size has exceeded the maximum allowed size"),
    ]
    for request, message in cases:
        with pytest.raises(ClientError) as info:
            ddb.batch_write_item(RequestItems=request)
        assert _error(info) == ("ValidationException", message), request
    with pytest.raises(ClientError) as info:
        ddb.batch_write_item(RequestItems={a: [put(1)], "missing-table": [put(2)]})
    assert _error(info)[0] == "ResourceNotFoundException"
    assert ddb.scan(TableName=a)["Count"] == 0


def test_resource_batch_writer_and_capacity(ddb, resource, make_table):
    name = make_table([("id", "HASH")], [("id", "S")])
    table = resource.Table(name)
    with table.batch_writer() as bw:
        for i in range(60):
            bw.put_item(Item={"id": str(i), "n": i})
        bw.delete_item(Key={"id": "0"})
    assert table.scan(Select="COUNT")["Count"] == 59
    with table.batch_writer(overwrite_by_pkeys=["id"]) as bw:
        bw.put_item(Item={"id": "1", "n": 1})
        bw.put_item(Item={"id": "1", "n": 2})
    assert table.get_item(Key={"id": "1"})["Item"]["n"] == 2
    r = ddb.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": {"id": {"S": "1"}, "v": {"S": "x" * 3000}}}},
                                                  {"DeleteRequest": {"Key": {"id": {"S": "absent"}}}}]},
                             ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"] == [{"TableName": name, "CapacityUnits": 4.0}]  # 3 KB put + 1 for the missing delete


def test_batch_write_maintains_indexes(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S"), ("g", "S")], GlobalSecondaryIndexes=[{
        "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"}}])
    ddb.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": {"id": {"S": str(i)}, "g": {"S": "x"}}}}
                                               for i in range(5)]})
    ddb.batch_write_item(RequestItems={table: [{"DeleteRequest": {"Key": {"id": {"S": "0"}}}},
                                               {"PutRequest": {"Item": {"id": {"S": "1"}}}}]})
    r = ddb.query(TableName=table, IndexName="byG", KeyConditionExpression="g = :g",
                  ExpressionAttributeValues={":g": {"S": "x"}})
    assert sorted(i["id"]["S"] for i in r["Items"]) == ["2", "3", "4"]
