"""Query on tables: key conditions, direction, Limit, 1 MB pages, filters, projections, Select, errors."""
from __future__ import annotations

import pytest
from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from dynalocal.values.attributes import item_size


def _error(excinfo) -> tuple[str, str]:
    err = excinfo.value.response["Error"]
    return err["Code"], err["Message"]


@pytest.fixture
def numbers_table(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])
    for i in range(10):
        ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": str(i)}, "even": {"BOOL": i % 2 == 0},
                                            "v": {"S": f"v{i}"}})
    ddb.put_item(TableName=table, Item={"pk": {"S": "b"}, "sk": {"N": "0"}})
    return table


def _q(ddb, table, cond="pk = :p", values=None, **kw):
    values = {":p": {"S": "a"}, **(values or {})}
    return ddb.query(TableName=table, KeyConditionExpression=cond, ExpressionAttributeValues=values, **kw)


def _sks(resp) -> list[int]:
    return [int(i["sk"]["N"]) for i in resp["Items"]]


@pytest.mark.parametrize("cond,values,expected", [
    ("pk = :p AND sk = :v", {":v": {"N": "3"}}, [3]),
    ("pk = :p AND sk < :v", {":v": {"N": "3"}}, [0, 1, 2]),
    ("pk = :p AND sk <= :v", {":v": {"N": "3"}}, [0, 1, 2, 3]),
    ("pk = :p AND sk > :v", {":v": {"N": "7"}}, [8, 9]),
    ("pk = :p AND sk >= :v", {":v": {"N": "7"}}, [7, 8, 9]),
    ("pk = :p AND sk BETWEEN :v AND :w", {":v": {"N": "2.5"}, ":w": {"N": "5"}}, [3, 4, 5]),
    (":p = pk AND :v > sk", {":v": {"N": "2"}}, [0, 1]),
])
def test_sort_key_conditions(ddb, numbers_table, cond, values, expected):
    r = _q(ddb, numbers_table, cond, values)
    assert _sks(r) == expected and r["Count"] == r["ScannedCount"] == len(expected)
    back = _q(ddb, numbers_table, cond, values, ScanIndexForward=False)
    assert _sks(back) == expected[::-1]


def test_limit_and_paging_both_directions(ddb, numbers_table):
    for forward in (True, False):
        seen, start, pages = [], None, 0
        while True:
            kw = {"ExclusiveStartKey": start} if start else {}
            r = _q(ddb, numbers_table, Limit=3, ScanIndexForward=forward, **kw)
            pages += 1
            seen += _sks(r)
            start = r.get("LastEvaluatedKey")
            if not start:
                break
            assert set(start) == {"pk", "sk"}
        assert seen == (list(range(10)) if forward else list(range(9, -1, -1)))
        assert pages == 4  # 3+3+3+1; a page ending exactly at the end still reports a key
    r = _q(ddb, numbers_table, Limit=10)
    assert r["Count"] == 10 and r["LastEvaluatedKey"] == {"pk": {"S": "a"}, "sk": {"N": "9"}}
    r = _q(ddb, numbers_table, Limit=11)
    assert "LastEvaluatedKey" not in r


def test_filter_counts_evaluated_items_and_limit_applies_before_it(ddb, numbers_table):
    r = _q(ddb, numbers_table, FilterExpression="even = :t", values={":t": {"BOOL": True}})
    assert _sks(r) == [0, 2, 4, 6, 8] and r["Count"] == 5 and r["ScannedCount"] == 10
    r = _q(ddb, numbers_table, FilterExpression="even = :t", values={":t": {"BOOL": True}}, Limit=3,
           ExclusiveStartKey={"pk": {"S": "a"}, "sk": {"N": "0"}})
    assert _sks(r) == [2] and r["ScannedCount"] == 3
    assert r["LastEvaluatedKey"] == {"pk": {"S": "a"}, "sk": {"N": "3"}}  # the last item read, filtered out
    legacy = ddb.query(TableName=numbers_table, KeyConditions={"pk": {"ComparisonOperator": "EQ",
                                                                      "AttributeValueList": [{"S": "a"}]},
                                                               "sk": {"ComparisonOperator": "GE",
                                                                      "AttributeValueList": [{"N": "5"}]}},
                       QueryFilter={"v": {"ComparisonOperator": "NE", "AttributeValueList": [{"S": "v7"}]}})
    assert _sks(legacy) == [5, 6, 8, 9] and legacy["ScannedCount"] == 5


def test_projection_and_select(ddb, numbers_table):
    r = _q(ddb, numbers_table, ProjectionExpression="v", Limit=2)
    assert r["Items"] == [{"v": {"S": "v0"}}, {"v": {"S": "v1"}}]
    assert r["LastEvaluatedKey"] == {"pk": {"S": "a"}, "sk": {"N": "1"}}
    r = ddb.query(TableName=numbers_table, KeyConditions={"pk": {"ComparisonOperator": "EQ",
                                                                 "AttributeValueList": [{"S": "b"}]}},
                  AttributesToGet=["sk"])
    assert r["Items"] == [{"sk": {"N": "0"}}]
    r = _q(ddb, numbers_table, Select="COUNT")
    assert "Items" not in r and r["Count"] == 10 and r["ScannedCount"] == 10
    r = _q(ddb, numbers_table, Select="COUNT", Limit=4, FilterExpression="even = :t", values={":t": {"BOOL": True}})
    assert r["Count"] == 2 and r["ScannedCount"] == 4 and "LastEvaluatedKey" in r
    r = _q(ddb, numbers_table, Select="SPECIFIC_ATTRIBUTES", ProjectionExpression="sk, even", Limit=1)
    assert r["Items"] == [{"sk": {"N": "0"}, "even": {"BOOL": True}}]
    r = _q(ddb, numbers_table, Select="ALL_ATTRIBUTES", Limit=1)
    assert r["Items"][0]["v"] == {"S": "v0"}


@pytest.mark.parametrize("kwargs,message", [
    ({"Select": "ALL_PROJECTED_ATTRIBUTES"}, "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"),
    ({"Select": "SPECIFIC_ATTRIBUTES"},
     "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"),
    ({"Select": "ALL_ATTRIBUTES", "ProjectionExpression": "v"},
     "Cannot specify the ProjectionExpression when choosing to get ALL_ATTRIBUTES"),
    ({"Select": "COUNT", "ProjectionExpression": "v"}, "Cannot specify the ProjectionExpression when choosing to get only the Count"),
])
def test_select_restrictions(ddb, numbers_table, kwargs, message):
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, **kwargs)
    code, text = _error(info)
    assert code == "ValidationException" and text.endswith(message)


def test_select_restrictions_with_attributes_to_get(ddb, numbers_table):
    with pytest.raises(ClientError) as info:
        ddb.query(TableName=numbers_table, Select="ALL_ATTRIBUTES", AttributesToGet=["v"],
                  KeyConditions={"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]}})
    assert _error(info)[1].endswith("Cannot specify the AttributesToGet when choosing to get ALL_ATTRIBUTES")


@pytest.mark.parametrize("kwargs,message", [
    ({"ExclusiveStartKey": {"pk": {"S": "a"}}}, "The provided starting key is invalid"),
    ({"ExclusiveStartKey": {"pk": {"S": "a"}, "sk": {"S": "x"}}}, "The provided key element does not match the schema"),
    ({"ExclusiveStartKey": {"pk": {"S": "b"}, "sk": {"N": "1"}}},
     "The provided starting key is outside query boundaries based on provided conditions"),
])
def test_exclusive_start_key_errors(ddb, numbers_table, kwargs, message):
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, **kwargs)
    assert _error(info) == ("ValidationException", message)


def test_start_key_must_match_the_range_predicate(ddb, numbers_table):
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, "pk = :p AND sk > :v", {":v": {"N": "5"}},
           ExclusiveStartKey={"pk": {"S": "a"}, "sk": {"N": "2"}})
    assert _error(info) == ("ValidationException", "The provided starting key does not match the range key predicate")


def test_key_condition_errors(ddb, numbers_table):
    with pytest.raises(ClientError) as info:
        ddb.query(TableName=numbers_table)
    assert _error(info)[1] == ("Either the KeyConditions or KeyConditionExpression parameter must be specified in "
                               "the request.")
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, "pk = :p AND sk > :v", {":v": {"S": "x"}})
    assert _error(info)[1] == "One or more parameter values were invalid: Condition parameter type does not match schema type"
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, "pk = :p AND sk BETWEEN :v AND :w", {":v": {"N": "5"}, ":w": {"N": "1"}})
    assert "lower bound" in _error(info)[1]
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, FilterExpression="sk > :v", values={":v": {"N": "1"}})
    assert _error(info)[1] == "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk"
    with pytest.raises(ClientError) as info:
        ddb.query(TableName="no-such-table", KeyConditionExpression="pk = :p",
                  ExpressionAttributeValues={":p": {"S": "a"}})
    assert _error(info) == ("ResourceNotFoundException", "Requested resource not found")
    with pytest.raises(ClientError) as info:
        _q(ddb, numbers_table, IndexName="nope")
    assert _error(info)[1] == "The table does not have the specified index: nope"


def test_pages_of_one_megabyte(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])
    pad = "x" * 100_000  # eleven of these pass 1 MB
    for i in range(25):
        ddb.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"N": str(i)}, "pad": {"S": pad}})
    r = ddb.query(TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}},
                  ReturnConsumedCapacity="TOTAL", ConsistentRead=True)
    assert r["Count"] == 11 and r["LastEvaluatedKey"]["sk"] == {"N": "10"}
    size = sum(item_size({"pk": {"S": "p"}, "sk": {"N": str(i)}, "pad": {"S": pad}}) for i in range(11))
    assert r["ConsumedCapacity"]["CapacityUnits"] == -(-size // 4096)
    r2 = ddb.query(TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}},
                   ExclusiveStartKey=r["LastEvaluatedKey"], Select="COUNT")
    assert r2["Count"] == 11 and "LastEvaluatedKey" in r2
    # A filter that drops everything still stops at 1 MB read.
    r3 = ddb.query(TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"},
                   ":no": {"S": "no"}}, FilterExpression="#pad = :no", ExpressionAttributeNames={"#pad": "pad"})
    assert r3["Count"] == 0 and r3["ScannedCount"] == 11 and r3["Items"] == []


def test_string_and_binary_sort_keys_order_by_bytes(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "B")])
    values = [b"\x00", b"\x00\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"\xff\xff", b"a"]
    for v in values:
        ddb.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"B": v}})
    r = ddb.query(TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}})
    assert [i["sk"]["B"] for i in r["Items"]] == sorted(values)
    r = ddb.query(TableName=table, KeyConditionExpression="pk = :p AND begins_with(sk, :b)",
                  ExpressionAttributeValues={":p": {"S": "p"}, ":b": {"B": b"\xff"}})
    assert [i["sk"]["B"] for i in r["Items"]] == [b"\xff", b"\xff\xff"]
    strings = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "S")])
    words = ["a", "B", "b", "ä", "aa", "a b", "€", "😀", "z"]
    for w in words:
        ddb.put_item(TableName=strings, Item={"pk": {"S": "p"}, "sk": {"S": w}})
    r = ddb.query(TableName=strings, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}})
    assert [i["sk"]["S"] for i in r["Items"]] == sorted(words, key=lambda w: w.encode())


def test_hash_only_table_query(ddb, make_table, resource):
    table = make_table([("id", "HASH")], [("id", "S")])
    ddb.put_item(TableName=table, Item={"id": {"S": "x"}, "n": {"N": "1"}})
    r = ddb.query(TableName=table, KeyConditionExpression="id = :i", ExpressionAttributeValues={":i": {"S": "x"}},
                  Limit=1)
    assert r["Items"] == [{"id": {"S": "x"}, "n": {"N": "1"}}] and "LastEvaluatedKey" not in r
    assert resource.Table(table).query(KeyConditionExpression=Key("id").eq("nope"))["Items"] == []


def test_resource_query_with_paginator_and_conditions(ddb, numbers_table, resource):
    paginator = ddb.get_paginator("query")
    pages = list(paginator.paginate(TableName=numbers_table, KeyConditionExpression="pk = :p",
                                    ExpressionAttributeValues={":p": {"S": "a"}}, PaginationConfig={"PageSize": 4}))
    assert [len(p["Items"]) for p in pages] == [4, 4, 2]
    t = resource.Table(numbers_table)
    r = t.query(KeyConditionExpression=Key("pk").eq("a") & Key("sk").between(1, 3),
                FilterExpression=Attr("even").eq(False))
    assert [int(i["sk"]) for i in r["Items"]] == [1, 3]


def test_consumed_capacity_for_queries(ddb, numbers_table):
    r = _q(ddb, numbers_table, ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"] == {"TableName": numbers_table, "CapacityUnits": 0.5}
    r = _q(ddb, numbers_table, ReturnConsumedCapacity="INDEXES", ConsistentRead=True, values={":p": {"S": "zz"}})
    assert r["ConsumedCapacity"] == {"TableName": numbers_table, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
