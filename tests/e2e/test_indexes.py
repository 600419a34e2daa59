"""Global and local secondary indexes: maintenance, sparseness, projections, paging, UpdateTable, errors."""
from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError


def _error(excinfo) -> tuple[str, str]:
    err = excinfo.value.response["Error"]
    return err["Code"], err["Message"]


def _gsi(name, hash_attr, range_attr=None, projection=None):
    keys = [{"AttributeName": hash_attr, "KeyType": "HASH"}]
    if range_attr:
        keys.append({"AttributeName": range_attr, "KeyType": "RANGE"})
    return {"IndexName": name, "KeySchema": keys, "Projection": projection or {"ProjectionType": "ALL"}}


@pytest.fixture
def orders(ddb, make_table):
    """Table pk/sk with GSIs: byStatus (status, amt) KEYS_ONLY, byCustomer (customer) INCLUDE note; LSI byTotal."""
    table = make_table(
        [("pk", "HASH"), ("sk", "RANGE")],
        [("pk", "S"), ("sk", "S"), ("status", "S"), ("amt", "N"), ("customer", "S")],
        GlobalSecondaryIndexes=[
            _gsi("byStatus", "status", "amt", {"ProjectionType": "KEYS_ONLY"}),
            _gsi("byCustomer", "customer", None, {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["note"]}),
        ],
        LocalSecondaryIndexes=[_gsi("byTotal", "pk", "amt", {"ProjectionType": "KEYS_ONLY"})],
    )
    for i in range(12):
        item = {"pk": {"S": f"c{i % 3}"}, "sk": {"S": f"o{i:02d}"}, "amt": {"N": str(100 - i * 5)},
                "customer": {"S": f"c{i % 3}"}, "note": {"S": f"n{i}"}, "secret": {"S": "s"}}
        if i % 4 != 3:  # every fourth order has no status: not in byStatus
            item["status"] = {"S": "open" if i % 2 == 0 else "closed"}
        ddb.put_item(TableName=table, Item=item)
    return table


def _q(ddb, table, index, cond, values, **kw):
    return ddb.query(TableName=table, IndexName=index, KeyConditionExpression=cond,
                     ExpressionAttributeValues=values, **kw)


def test_gsi_query_sparse_and_keys_only(ddb, orders):
    r = _q(ddb, orders, "byStatus", "#s = :s", {":s": {"S": "open"}}, ExpressionAttributeNames={"#s": "status"})
    assert [int(i["amt"]["N"]) for i in r["Items"]] == [50, 60, 70, 80, 90, 100]
    assert all(set(i) == {"pk", "sk", "status", "amt"} for i in r["Items"])
    closed = _q(ddb, orders, "byStatus", "#s = :s AND amt < :t", {":s": {"S": "closed"}, ":t": {"N": "80"}},
                ExpressionAttributeNames={"#s": "status"}, ScanIndexForward=False)
    assert [int(i["amt"]["N"]) for i in closed["Items"]] == [75, 55]  # i = 5, 9 (i = 7, 11 have no status)
    scan = ddb.scan(TableName=orders, IndexName="byStatus")
    assert scan["Count"] == 9  # 12 items minus the 3 without status


def test_include_projection_and_select_rules(ddb, orders):
    r = _q(ddb, orders, "byCustomer", "customer = :c", {":c": {"S": "c1"}})
    assert r["Count"] == 4
    assert all(set(i) == {"pk", "sk", "customer", "note"} for i in r["Items"])
    with pytest.raises(ClientError) as info:
        _q(ddb, orders, "byCustomer", "customer = :c", {":c": {"S": "c1"}}, Select="ALL_ATTRIBUTES")
    assert _error(info)[1] == ("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported "
                               "for global secondary index byCustomer because its projection type is not ALL")
    with pytest.raises(ClientError) as info:
        _q(ddb, orders, "byCustomer", "customer = :c", {":c": {"S": "c1"}}, ConsistentRead=True)
    assert _error(info)[1] == "Consistent reads are not supported on global secondary indexes"
    r = _q(ddb, orders, "byCustomer", "customer = :c", {":c": {"S": "c1"}}, ProjectionExpression="note, secret")
    assert all(set(i) == {"note"} for i in r["Items"])  # a GSI returns only what it projects


def test_lsi_query_fetches_unprojected_attributes(ddb, orders):
    r = _q(ddb, orders, "byTotal", "pk = :p AND amt >= :t", {":p": {"S": "c0"}, ":t": {"N": "60"}})
    assert [int(i["amt"]["N"]) for i in r["Items"]] == [70, 85, 100]
    assert all(set(i) == {"pk", "sk", "amt"} for i in r["Items"])
    full = _q(ddb, orders, "byTotal", "pk = :p AND amt >= :t", {":p": {"S": "c0"}, ":t": {"N": "60"}},
              Select="ALL_ATTRIBUTES", ReturnConsumedCapacity="INDEXES")
    assert [i["secret"]["S"] for i in full["Items"]] == ["s", "s", "s"]
    cc = full["ConsumedCapacity"]
    assert cc["LocalSecondaryIndexes"]["byTotal"]["CapacityUnits"] == 0.5 and cc["CapacityUnits"] == 2.0
    some = _q(ddb, orders, "byTotal", "pk = :p", {":p": {"S": "c0"}}, ProjectionExpression="note", Limit=2)
    assert some["Items"] == [{"note": {"S": "n9"}}, {"note": {"S": "n6"}}]
    assert set(some["LastEvaluatedKey"]) == {"pk", "sk", "amt"}
    filtered = _q(ddb, orders, "byTotal", "pk = :p", {":p": {"S": "c0"}, ":n": {"S": "n3"}}, FilterExpression="note = :n")
    assert filtered["Count"] == 1 and filtered["ScannedCount"] == 4


def test_index_maintenance_on_update_and_delete(ddb, orders):
    key = {"pk": {"S": "c0"}, "sk": {"S": "o03"}}  # has no status
    ddb.update_item(TableName=orders, Key=key, UpdateExpression="SET #s = :s",
                    ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":s": {"S": "open"}})
    count = lambda: _q(ddb, orders, "byStatus", "#s = :s", {":s": {"S": "open"}},  # noqa: E731
                       ExpressionAttributeNames={"#s": "status"})["Count"]
    assert count() == 7
    ddb.update_item(TableName=orders, Key=key, UpdateExpression="SET #s = :s",
                    ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":s": {"S": "closed"}})
    assert count() == 6
    ddb.update_item(TableName=orders, Key={"pk": {"S": "c0"}, "sk": {"S": "o00"}}, UpdateExpression="REMOVE #s",
                    ExpressionAttributeNames={"#s": "status"})
    assert count() == 5
    ddb.delete_item(TableName=orders, Key={"pk": {"S": "c2"}, "sk": {"S": "o02"}})
    assert count() == 4
    desc = ddb.describe_table(TableName=orders)["Table"]
    stats = {i["IndexName"]: i["ItemCount"] for i in desc["GlobalSecondaryIndexes"] + desc["LocalSecondaryIndexes"]}
    assert stats == {"byStatus": 8, "byCustomer": 11, "byTotal": 11}
    assert all(i["IndexSizeBytes"] > 0 for i in desc["GlobalSecondaryIndexes"])
    assert desc["GlobalSecondaryIndexes"][0]["IndexArn"].endswith(f"table/{orders}/index/byStatus")


def test_index_key_type_is_checked_on_writes(ddb, orders):
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName=orders, Item={"pk": {"S": "x"}, "sk": {"S": "y"}, "amt": {"S": "nope"}})
    assert _error(info)[1] == ("One or more parameter values were invalid: Type mismatch for Index Key amt "
                               "Expected: N Actual: S IndexName: byStatus")
    with pytest.raises(ClientError) as info:
        ddb.update_item(TableName=orders, Key={"pk": {"S": "c0"}, "sk": {"S": "o00"}},
                        UpdateExpression="SET amt = :t", ExpressionAttributeValues={":t": {"S": "x"}})
    assert _error(info)[1] == ("One or more parameter values were invalid: Type mismatch for Index Key amt "
                               "Expected: N Actual: S IndexName: byStatus")
    with pytest.raises(ClientError) as info:
        ddb.batch_write_item(RequestItems={orders: [{"PutRequest": {"Item": {
            "pk": {"S": "x"}, "sk": {"S": "y"}, "customer": {"N": "1"}}}}]})
    assert "Type mismatch for Index Key customer" in _error(info)[1]
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName=orders, Item={"pk": {"S": "x"}, "sk": {"S": "y"}, "customer": {"S": ""}})
    assert _error(info)[1].endswith("IndexName: byCustomer, IndexKey: customer")


def test_gsi_paging_with_many_items_sharing_one_index_key(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S"), ("g", "S")], GlobalSecondaryIndexes=[_gsi("byG", "g")])
    for i in range(0, 120, 24):
        request = {table: [
            {"PutRequest": {"Item": {"id": {"S": f"i{j}"}, "g": {"S": "same"}, "pad": {"S": "x" * 20_000}}}}
            for j in range(i, i + 24)]}
        while request:  # 2.4 MB under one index key exceeds the GSI partition's 1000 WCU/s: resubmit
            request = ddb.batch_write_item(RequestItems=request)["UnprocessedItems"]
            if request:
                time.sleep(0.05)
    seen, start, pages = [], None, 0
    while True:
        kw = {"ExclusiveStartKey": start} if start else {}
        r = _q(ddb, table, "byG", "g = :g", {":g": {"S": "same"}}, Limit=35, **kw)
        pages += 1
        seen += [i["id"]["S"] for i in r["Items"]]
        start = r.get("LastEvaluatedKey")
        if not start:
            break
        assert set(start) == {"id", "g"}
    assert len(seen) == 120 and len(set(seen)) == 120 and pages == 4
    mb_pages = ddb.get_paginator("query").paginate(TableName=table, IndexName="byG", KeyConditionExpression="g = :g",
                                                   ExpressionAttributeValues={":g": {"S": "same"}})
    sizes = [p["Count"] for p in mb_pages]
    assert sum(sizes) == 120 and len(sizes) == 3  # 20 KB items: 52 per MB
    with pytest.raises(ClientError) as info:
        _q(ddb, table, "byG", "g = :g", {":g": {"S": "same"}}, ExclusiveStartKey={"id": {"S": "i1"}})
    assert _error(info)[1] == "The provided starting key is invalid"
    with pytest.raises(ClientError) as info:
        _q(ddb, table, "byG", "g = :g", {":g": {"S": "same"}}, ExclusiveStartKey={"id": {"S": "i1"}, "g": {"S": "x"}})
    assert _error(info)[1] == "The provided starting key is outside query boundaries based on provided conditions"


@pytest.mark.parametrize("total", [1, 3, 16])
def test_parallel_scan_of_a_gsi(ddb, make_table, total):
    table = make_table([("id", "HASH")], [("id", "S"), ("g", "S")], GlobalSecondaryIndexes=[_gsi("byG", "g")])
    for i in range(0, 100, 25):
        ddb.batch_write_item(RequestItems={table: [
            {"PutRequest": {"Item": {"id": {"S": f"i{j}"}, "g": {"S": f"g{j % 7}"}}}} for j in range(i, i + 25)]})
    seen = []
    for segment in range(total):
        for page in ddb.get_paginator("scan").paginate(TableName=table, IndexName="byG", Segment=segment,
                                                       TotalSegments=total, PaginationConfig={"PageSize": 9}):
            seen += [i["id"]["S"] for i in page["Items"]]
    assert sorted(seen) == sorted(f"i{j}" for j in range(100))


def test_update_table_adds_and_removes_a_gsi(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    for i in range(30):
        item = {"id": {"S": f"i{i}"}, "n": {"N": str(i)}}
        if i % 3:
            item["kind"] = {"S": "a" if i % 2 else "b"}
        ddb.put_item(TableName=table, Item=item)
    r = ddb.update_table(TableName=table, AttributeDefinitions=[{"AttributeName": "kind", "AttributeType": "S"},
                                                                 {"AttributeName": "n", "AttributeType": "N"}],
                         GlobalSecondaryIndexUpdates=[{"Create": _gsi("byKind", "kind", "n")}])
    created = r["TableDescription"]["GlobalSecondaryIndexes"][0]
    assert created["IndexStatus"] == "CREATING" and created["Backfilling"] is True
    desc = ddb.describe_table(TableName=table)["Table"]
    gsi = desc["GlobalSecondaryIndexes"][0]
    assert gsi["IndexStatus"] == "ACTIVE" and gsi["ItemCount"] == 20 and "Backfilling" not in gsi
    r = _q(ddb, table, "byKind", "kind = :k AND n > :n", {":k": {"S": "a"}, ":n": {"N": "20"}})
    assert [i["n"]["N"] for i in r["Items"]] == ["23", "25", "29"]
    ddb.put_item(TableName=table, Item={"id": {"S": "new"}, "kind": {"S": "a"}, "n": {"N": "100"}})
    assert _q(ddb, table, "byKind", "kind = :k AND n > :n", {":k": {"S": "a"}, ":n": {"N": "20"}})["Count"] == 4
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName=table, Item={"id": {"S": "bad"}, "kind": {"N": "1"}})
    assert "Type mismatch for Index Key kind" in _error(info)[1]
    r = ddb.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "byKind"}}])
    assert r["TableDescription"]["GlobalSecondaryIndexes"][0]["IndexStatus"] == "DELETING"
    desc = ddb.describe_table(TableName=table)["Table"]
    assert "GlobalSecondaryIndexes" not in desc
    assert [d["AttributeName"] for d in desc["AttributeDefinitions"]] == ["id"]
    with pytest.raises(ClientError) as info:
        _q(ddb, table, "byKind", "kind = :k", {":k": {"S": "a"}})
    assert _error(info)[1] == "The table does not have the specified index: byKind"


def test_update_table_gsi_errors(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    defs = [{"AttributeName": "a", "AttributeType": "S"}, {"AttributeName": "b", "AttributeType": "S"}]
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=table, AttributeDefinitions=defs, GlobalSecondaryIndexUpdates=[
            {"Create": _gsi("one", "a")}, {"Create": _gsi("two", "b")}])
    assert _error(info) == ("ValidationException", "One or more parameter values were invalid: Only one global "
                                                   "secondary index can be created or deleted per UpdateTable request")
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=table, AttributeDefinitions=defs, GlobalSecondaryIndexUpdates=[
            {"Create": _gsi("one", "a")}, {"Delete": {"IndexName": "one"}}])
    assert "Only one global secondary index update per index is allowed simultaneously. Index: one" in _error(info)[1]
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{"Create": _gsi("one", "zz")}])
    assert "Some index key attributes are not defined in AttributeDefinitions" in _error(info)[1]
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=table, AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
                         GlobalSecondaryIndexUpdates=[{"Create": _gsi("one", "id")}])
    assert "Attributes cannot be redefined" in _error(info)[1]
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{}])
    assert _error(info)[1] == ("One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Update, "
                               "GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Delete must not be null")


def test_provisioned_gsi_throughput_is_described(ddb, make_table):
    pt = {"ReadCapacityUnits": 7, "WriteCapacityUnits": 3}
    table = make_table([("id", "HASH")], [("id", "S"), ("g", "S")], ProvisionedThroughput=pt,
                       GlobalSecondaryIndexes=[dict(_gsi("byG", "g"), ProvisionedThroughput=pt)])
    gsi = ddb.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"][0]
    assert gsi["ProvisionedThroughput"]["ReadCapacityUnits"] == 7 and gsi["IndexStatus"] == "ACTIVE"
    assert gsi["IndexArn"] == f"arn:aws:dynamodb:us-east-1:000000000000:table/{table}/index/byG"
    ddb.put_item(TableName=table, Item={"id": {"S": "1"}, "g": {"S": "x"}})
    r = _q(ddb, table, "byG", "g = :g", {":g": {"S": "x"}}, ReturnConsumedCapacity="INDEXES")
    assert r["ConsumedCapacity"] == {"TableName": table, "CapacityUnits": 0.5,
                                     "GlobalSecondaryIndexes": {"byG": {"CapacityUnits": 0.5}}}


def test_create_table_reports_new_indexes_as_creating(ddb):
    name = "t-index-status-check"
    r = ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}, {"AttributeName": "s", "KeyType": "RANGE"}],
                         AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                               {"AttributeName": "s", "AttributeType": "S"},
                                               {"AttributeName": "g", "AttributeType": "N"}],
                         GlobalSecondaryIndexes=[_gsi("byG", "g")],
                         LocalSecondaryIndexes=[_gsi("byS", "id", "g", {"ProjectionType": "KEYS_ONLY"})])
    try:
        desc = r["TableDescription"]
        assert desc["GlobalSecondaryIndexes"][0]["IndexStatus"] == "CREATING"
        assert desc["LocalSecondaryIndexes"][0]["IndexName"] == "byS" and "IndexStatus" not in desc["LocalSecondaryIndexes"][0]
        later = ddb.describe_table(TableName=name)["Table"]
        assert later["GlobalSecondaryIndexes"][0]["IndexStatus"] == "ACTIVE"
        assert later["GlobalSecondaryIndexes"][0]["ItemCount"] == 0
    finally:
        ddb.delete_table(TableName=name)
