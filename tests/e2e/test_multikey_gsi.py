"""Multi-attribute GSI keys (docs/behaviour/multikey-gsi.md): creation rules, sparse indexing, Query
rules and errors, sort order, filters, paging, Scan, back-fill, batch and transaction writes."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError
from server_process import ServerProcess

ALL = {"ProjectionType": "ALL"}


def _error(excinfo) -> tuple[str, str]:
    err = excinfo.value.response["Error"]
    return err["Code"], err["Message"]


def _keys(*pairs):
    return [{"AttributeName": n, "KeyType": t} for n, t in pairs]


def _gsi(name, *pairs, projection=None):
    return {"IndexName": name, "KeySchema": _keys(*pairs), "Projection": projection or ALL}


@pytest.fixture
def stores(ddb, make_table):
    """Table pk with GSI byPlace: HASH country; RANGE state, city (the store-location design)."""
    return make_table([("pk", "HASH")], [("pk", "S"), ("country", "S"), ("state", "S"), ("city", "S")],
                      GlobalSecondaryIndexes=[_gsi("byPlace", ("country", "HASH"), ("state", "RANGE"),
                                                   ("city", "RANGE"))])


@pytest.fixture
def tt(ddb, make_table):
    """Table pk/sk with GSI gsi: HASH a (S), b (N); RANGE c (S), d (N)."""
    return make_table([("pk", "HASH"), ("sk", "RANGE")],
                      [("pk", "S"), ("sk", "N"), ("a", "S"), ("b", "N"), ("c", "S"), ("d", "N")],
                      GlobalSecondaryIndexes=[_gsi("gsi", ("a", "HASH"), ("b", "HASH"), ("c", "RANGE"),
                                                   ("d", "RANGE"))])


def _put_stores(ddb, table):
    rows = [("1", "US", "WA", "Seattle"), ("2", "US", "WA", "Redmond"), ("3", "US", "CA", "Fresno"),
            ("4", "US", "CA", "Oakland"), ("5", "US", "OR", "Bend"), ("6", "CA", "BC", "Victoria")]
    for pk, country, state, city in rows:
        ddb.put_item(TableName=table, Item={"pk": {"S": pk}, "country": {"S": country}, "state": {"S": state},
                                            "city": {"S": city}})


def _q(ddb, table, expr, values, index="byPlace", **kwargs):
    vals = {f":{k}": ({"N": str(v)} if isinstance(v, int) else {"S": v}) for k, v in values.items()}
    return ddb.query(TableName=table, IndexName=index, KeyConditionExpression=expr,
                     ExpressionAttributeValues=vals, **kwargs)


def _cities(out):
    return [i["city"]["S"] for i in out["Items"]]


# -- creation -------------------------------------------------------------------------------------

def test_create_and_describe_keeps_key_schema_in_order(ddb, make_table):
    keys = [("a", "HASH"), ("b", "HASH"), ("c", "HASH"), ("d", "HASH"),
            ("e", "RANGE"), ("f", "RANGE"), ("g", "RANGE"), ("pk", "RANGE")]
    defs = [("pk", "S")] + [(n, t) for n, t in zip("abcdefg", "SNBSNBS", strict=True)]
    table = make_table([("pk", "HASH")], defs, GlobalSecondaryIndexes=[_gsi("eight", *keys)])
    gsi = ddb.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"][0]
    assert gsi["KeySchema"] == _keys(*keys)


@pytest.mark.parametrize("pairs, message", [
    ([("a", "HASH"), ("b", "RANGE"), ("c", "HASH")],
     "One or more parameter values were invalid: Invalid KeySchema: Every HASH key element must come before "
     "every RANGE key element"),
    ([("a", "HASH"), ("b", "HASH"), ("c", "HASH"), ("d", "HASH"), ("e", "HASH")],
     "One or more parameter values were invalid: Invalid KeySchema: A global secondary index may have at most 4 "
     "HASH key elements"),
    ([("a", "HASH"), ("b", "RANGE"), ("c", "RANGE"), ("d", "RANGE"), ("e", "RANGE"), ("f", "RANGE")],
     "One or more parameter values were invalid: Invalid KeySchema: A global secondary index may have at most 4 "
     "RANGE key elements"),
    ([("a", "HASH"), ("b", "RANGE"), ("a", "RANGE")],
     "One or more parameter values were invalid: Invalid KeySchema: The attribute a appears more than once in the "
     "KeySchema"),
    ([("b", "RANGE"), ("a", "HASH"), ("c", "HASH")],
     "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"),
    ([("a", "HASH"), ("b", "HASH"), ("zz", "RANGE")],
     "One or more parameter values were invalid: Some index key attributes are not defined in "
     "AttributeDefinitions. Keys: [a, b, zz], AttributeDefinitions: [pk, a, b, c, d, e, f]"),
])
def test_create_refuses_bad_key_schemas(ddb, pairs, message):
    defs = [{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "a", "b", "c", "d", "e", "f")]
    used = {n for n, _ in pairs} | {"pk"}
    defs = [d for d in defs if d["AttributeName"] in used or "zz" in {n for n, _ in pairs}]
    with pytest.raises(ClientError) as e:
        ddb.create_table(TableName="mk-bad", KeySchema=_keys(("pk", "HASH")), AttributeDefinitions=defs,
                         BillingMode="PAY_PER_REQUEST", GlobalSecondaryIndexes=[_gsi("gsi", *pairs)])
    assert _error(e) == ("ValidationException", message)


def test_tables_and_lsis_keep_two_key_elements(ddb):
    defs = [{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "a")]
    with pytest.raises(ClientError) as e:
        ddb.create_table(TableName="mk-bad", KeySchema=_keys(("pk", "HASH"), ("sk", "RANGE"), ("a", "RANGE")),
                         AttributeDefinitions=defs, BillingMode="PAY_PER_REQUEST")
    assert _error(e)[0] == "ValidationException"
    with pytest.raises(ClientError) as e:
        ddb.create_table(TableName="mk-bad", KeySchema=_keys(("pk", "HASH"), ("sk", "RANGE")),
                         AttributeDefinitions=defs, BillingMode="PAY_PER_REQUEST",
                         LocalSecondaryIndexes=[_gsi("lsi", ("pk", "HASH"), ("sk", "RANGE"), ("a", "RANGE"))])
    assert _error(e)[0] == "ValidationException"


def test_table_key_attributes_may_be_gsi_keys(ddb, make_table):
    table = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N"), ("a", "S")],
                       GlobalSecondaryIndexes=[_gsi("gsi", ("a", "HASH"), ("pk", "HASH"), ("sk", "RANGE"))])
    for i in (3, 1, 2):
        ddb.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"N": str(i)}, "a": {"S": "x"}})
    out = ddb.query(TableName=table, IndexName="gsi", KeyConditionExpression="a = :a AND pk = :p AND sk > :s",
                    ExpressionAttributeValues={":a": {"S": "x"}, ":p": {"S": "p"}, ":s": {"N": "1"}})
    assert [i["sk"]["N"] for i in out["Items"]] == ["2", "3"]


# -- indexing -------------------------------------------------------------------------------------

def test_sparse_indexing_and_key_tuple_changes(ddb, stores):
    _put_stores(ddb, stores)
    ddb.put_item(TableName=stores, Item={"pk": {"S": "7"}, "country": {"S": "US"}, "state": {"S": "WA"}})
    out = _q(ddb, stores, "country = :c AND #s = :s", {"c": "US", "s": "WA"},
             ExpressionAttributeNames={"#s": "state"})
    assert _cities(out) == ["Redmond", "Seattle"]  # item 7 has no city: not indexed
    ddb.update_item(TableName=stores, Key={"pk": {"S": "7"}}, UpdateExpression="SET city = :c",
                    ExpressionAttributeValues={":c": {"S": "Olympia"}})
    ddb.update_item(TableName=stores, Key={"pk": {"S": "1"}}, UpdateExpression="SET #s = :s",
                    ExpressionAttributeNames={"#s": "state"}, ExpressionAttributeValues={":s": {"S": "OR"}})
    ddb.update_item(TableName=stores, Key={"pk": {"S": "2"}}, UpdateExpression="REMOVE city")
    out = _q(ddb, stores, "country = :c AND #s = :s", {"c": "US", "s": "WA"},
             ExpressionAttributeNames={"#s": "state"})
    assert _cities(out) == ["Olympia"]
    out = _q(ddb, stores, "country = :c AND #s = :s", {"c": "US", "s": "OR"},
             ExpressionAttributeNames={"#s": "state"})
    assert _cities(out) == ["Bend", "Seattle"]
    ddb.delete_item(TableName=stores, Key={"pk": {"S": "7"}})
    assert ddb.describe_table(TableName=stores)["Table"]["GlobalSecondaryIndexes"][0]["ItemCount"] == 5


def test_wrong_type_or_empty_key_attribute_is_refused(ddb, tt):
    item = {"pk": {"S": "p"}, "sk": {"N": "1"}, "a": {"S": "x"}, "b": {"S": "not a number"}}
    with pytest.raises(ClientError) as e:
        ddb.put_item(TableName=tt, Item=item)
    assert _error(e) == ("ValidationException", "One or more parameter values were invalid: Type mismatch for "
                         "Index Key b Expected: N Actual: S IndexName: gsi")
    with pytest.raises(ClientError) as e:
        ddb.put_item(TableName=tt, Item={**item, "b": {"N": "1"}, "c": {"S": ""}})
    assert "IndexName: gsi, IndexKey: c" in _error(e)[1]
    with pytest.raises(ClientError) as e:
        ddb.batch_write_item(RequestItems={tt: [{"PutRequest": {"Item": {**item, "d": {"S": "1"}, "b": {"N": "1"}}}}]})
    assert "Type mismatch for Index Key d" in _error(e)[1]
    with pytest.raises(ClientError) as e:
        ddb.transact_write_items(TransactItems=[{"Update": {
            "TableName": tt, "Key": {"pk": {"S": "p"}, "sk": {"N": "1"}}, "UpdateExpression": "SET a = :v",
            "ExpressionAttributeValues": {":v": {"N": "1"}}}}])
    assert _error(e)[0] == "TransactionCanceledException"
    assert e.value.response["CancellationReasons"][0]["Code"] == "ValidationError"


def _full(i, a="x", b=1, c="c", d=0):
    return {"pk": {"S": f"p{i}"}, "sk": {"N": str(i)}, "a": {"S": a}, "b": {"N": str(b)}, "c": {"S": c},
            "d": {"N": str(d)}}


def test_batch_and_transaction_writes_maintain_the_index(ddb, tt):
    ddb.batch_write_item(RequestItems={tt: [{"PutRequest": {"Item": _full(i, d=-i)}} for i in range(5)]})
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": tt, "Item": _full(9, b=2)}},
        {"Update": {"TableName": tt, "Key": {"pk": {"S": "p0"}, "sk": {"N": "0"}}, "UpdateExpression": "SET b = :b",
                    "ExpressionAttributeValues": {":b": {"N": "2"}}}},
        {"Delete": {"TableName": tt, "Key": {"pk": {"S": "p1"}, "sk": {"N": "1"}}}},
    ])
    ddb.batch_write_item(RequestItems={tt: [{"DeleteRequest": {"Key": {"pk": {"S": "p2"}, "sk": {"N": "2"}}}}]})
    out = ddb.query(TableName=tt, IndexName="gsi", KeyConditionExpression="a = :a AND b = :b",
                    ExpressionAttributeValues={":a": {"S": "x"}, ":b": {"N": "1"}})
    assert [i["pk"]["S"] for i in out["Items"]] == ["p4", "p3"]  # by d: -4, -3
    out = ddb.query(TableName=tt, IndexName="gsi", KeyConditionExpression="a = :a AND b = :b",
                    ExpressionAttributeValues={":a": {"S": "x"}, ":b": {"N": "2"}})
    assert [i["pk"]["S"] for i in out["Items"]] == ["p9", "p0"]  # d 0 both: then by table key


# -- query ----------------------------------------------------------------------------------------

def test_query_prefixes_and_last_operator(ddb, stores):
    _put_stores(ddb, stores)
    names = {"ExpressionAttributeNames": {"#s": "state"}}
    assert _cities(_q(ddb, stores, "country = :c", {"c": "US"})) == ["Fresno", "Oakland", "Bend", "Redmond",
                                                                     "Seattle"]
    assert _cities(_q(ddb, stores, "country = :c", {"c": "US"}, ScanIndexForward=False)) == [
        "Seattle", "Redmond", "Bend", "Oakland", "Fresno"]
    assert _cities(_q(ddb, stores, "country = :c AND #s > :s", {"c": "US", "s": "CA"}, **names)) == [
        "Bend", "Redmond", "Seattle"]
    assert _cities(_q(ddb, stores, "city BETWEEN :a AND :b AND #s = :s AND country = :c",
                      {"c": "US", "s": "WA", "a": "R", "b": "Sz"}, **names)) == ["Redmond", "Seattle"]
    assert _cities(_q(ddb, stores, "country = :c AND #s = :s AND begins_with(city, :p)",
                      {"c": "US", "s": "CA", "p": "Oak"}, **names)) == ["Oakland"]
    assert _cities(_q(ddb, stores, "country = :c AND #s = :s AND city = :x",
                      {"c": "US", "s": "CA", "x": "Fresno"}, **names)) == ["Fresno"]
    assert _cities(_q(ddb, stores, "country = :c AND #s <= :s", {"c": "US", "s": "OR"}, **names)) == [
        "Fresno", "Oakland", "Bend"]


@pytest.mark.parametrize("expr, values, message", [
    ("a = :a AND c = :c", {"a": "x", "c": "c"}, "Query condition missed key schema element: b"),
    ("a = :a AND b > :b", {"a": "x", "b": 1}, "Query key condition not supported"),
    ("a = :a AND b = :b AND d = :d", {"a": "x", "b": 1, "d": 1}, "Query condition missed key schema element: c"),
    ("a = :a AND b = :b AND c > :c AND d = :d", {"a": "x", "b": 1, "c": "c", "d": 1},
     "Query key condition not supported"),
    ("a = :a AND b = :b AND c > :c AND d > :d", {"a": "x", "b": 1, "c": "c", "d": 1},
     "Query key condition not supported"),
    ("a = :a AND b = :b AND c = :c AND begins_with(d, :d)", {"a": "x", "b": 1, "c": "c", "d": "1"},
     "One or more parameter values were invalid: Condition parameter type does not match schema type"),
    ("a = :a AND b = :b AND pk = :c", {"a": "x", "b": 1, "c": "c"}, "Query condition missed key schema element: c"),
    ("a = :a AND b = :b AND c = :c AND d = :d AND pk = :p", {"a": "x", "b": 1, "c": "c", "d": 1, "p": "p"},
     "Query key condition not supported"),
    ("a = :a AND b = :b AND c = :c AND c = :d", {"a": "x", "b": 1, "c": "c", "d": "d"},
     "KeyConditionExpressions must only contain one condition per key"),
])
def test_query_refusals(ddb, tt, expr, values, message):
    with pytest.raises(ClientError) as e:
        _q(ddb, tt, expr, values, index="gsi")
    assert _error(e) == ("ValidationException", message)


def test_begins_with_on_a_number_is_refused(ddb, tt):
    with pytest.raises(ClientError) as e:
        ddb.query(TableName=tt, IndexName="gsi", KeyConditionExpression="a = :a AND b = :b AND c = :c AND "
                  "begins_with(d, :d)", ExpressionAttributeValues={":a": {"S": "x"}, ":b": {"N": "1"},
                                                                   ":c": {"S": "c"}, ":d": {"N": "1"}})
    assert _error(e) == ("ValidationException", "Invalid KeyConditionExpression: Incorrect operand type for "
                         "operator or function; operator or function: begins_with, operand type: N")
    with pytest.raises(ClientError) as e:
        ddb.query(TableName=tt, IndexName="gsi", KeyConditions={
            "a": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "x"}]},
            "b": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]},
            "c": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "x"}]},
            "d": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"N": "1"}]}})
    assert _error(e) == ("ValidationException", "One or more parameter values were invalid: ComparisonOperator "
                         "BEGINS_WITH is not valid for N AttributeValue type")


def test_filters_may_not_read_index_keys(ddb, tt):
    ddb.put_item(TableName=tt, Item={**_full(1), "n": {"S": "v"}})
    for flt, names in (("c = :v", {}), ("#x = :v", {"#x": "b"})):
        with pytest.raises(ClientError) as e:
            ddb.query(TableName=tt, IndexName="gsi", KeyConditionExpression="a = :a AND b = :b", FilterExpression=flt,
                      ExpressionAttributeValues={":a": {"S": "x"}, ":b": {"N": "1"}, ":v": {"S": "v"}},
                      **({"ExpressionAttributeNames": names} if names else {}))
        key = "c" if flt.startswith("c") else "b"
        assert _error(e) == ("ValidationException", "Filter Expression can only contain non-primary key "
                             f"attributes: Primary key attribute: {key}")
    out = ddb.query(TableName=tt, IndexName="gsi", KeyConditionExpression="a = :a AND b = :b",
                    FilterExpression="n = :v AND pk = :p",
                    ExpressionAttributeValues={":a": {"S": "x"}, ":b": {"N": "1"}, ":v": {"S": "v"}, ":p": {"S": "p1"}})
    assert out["Count"] == 1


def test_consistent_read_is_refused(ddb, tt):
    with pytest.raises(ClientError) as e:
        _q(ddb, tt, "a = :a AND b = :b", {"a": "x", "b": 1}, index="gsi", ConsistentRead=True)
    assert _error(e) == ("ValidationException", "Consistent reads are not supported on global secondary indexes")


def test_legacy_key_conditions(ddb, tt):
    for i in range(4):
        ddb.put_item(TableName=tt, Item=_full(i, d=i))
    out = ddb.query(TableName=tt, IndexName="gsi", KeyConditions={
        "a": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "x"}]},
        "b": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]},
        "c": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "c"}]},
        "d": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "1"}]}})
    assert [i["d"]["N"] for i in out["Items"]] == ["2", "3"]
    with pytest.raises(ClientError) as e:
        ddb.query(TableName=tt, IndexName="gsi", KeyConditions={
            "a": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "x"}]},
            "b": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]},
            "d": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "1"}]}})
    assert _error(e) == ("ValidationException", "Query condition missed key schema element: c")


def test_sort_order_is_element_by_element_by_type(ddb, tt):
    rows = [("b", 10), ("a", 9), ("a", -1), ("a", 100), ("ab", 0), ("b", 2)]
    for i, (c, d) in enumerate(rows):
        ddb.put_item(TableName=tt, Item=_full(i, c=c, d=d))
    out = _q(ddb, tt, "a = :a AND b = :b", {"a": "x", "b": 1}, index="gsi")
    assert [(i["c"]["S"], int(i["d"]["N"])) for i in out["Items"]] == sorted(rows)


def test_paging_round_trip_and_start_key_checks(ddb, tt):
    for i in range(7):
        ddb.put_item(TableName=tt, Item=_full(i, c="c" if i % 2 else "e", d=i))
    seen, esk = [], None
    while True:
        kwargs = {"ExclusiveStartKey": esk} if esk else {}
        out = _q(ddb, tt, "a = :a AND b = :b AND c >= :c", {"a": "x", "b": 1, "c": "a"}, index="gsi", Limit=2,
                 **kwargs)
        seen += [i["pk"]["S"] for i in out["Items"]]
        esk = out.get("LastEvaluatedKey")
        if esk is None:
            break
        assert set(esk) == {"pk", "sk", "a", "b", "c", "d"}
    assert seen == ["p1", "p3", "p5", "p0", "p2", "p4", "p6"]
    start = {k: v for k, v in _full(1, d=1).items()}
    for bad in ({k: v for k, v in start.items() if k != "d"}, {**start, "n": {"S": "v"}}):
        with pytest.raises(ClientError) as e:
            _q(ddb, tt, "a = :a AND b = :b", {"a": "x", "b": 1}, index="gsi", ExclusiveStartKey=bad)
        assert _error(e) == ("ValidationException", "The provided starting key is invalid")
    with pytest.raises(ClientError) as e:
        _q(ddb, tt, "a = :a AND b = :b", {"a": "x", "b": 2}, index="gsi", ExclusiveStartKey=start)
    assert _error(e) == ("ValidationException",
                         "The provided starting key is outside query boundaries based on provided conditions")
    with pytest.raises(ClientError) as e:
        _q(ddb, tt, "a = :a AND b = :b AND c = :c", {"a": "x", "b": 1, "c": "e"}, index="gsi", ExclusiveStartKey=start)
    assert _error(e) == ("ValidationException", "The provided starting key does not match the range key predicate")


def test_scan_of_the_index_pages_through_every_indexed_item(ddb, tt):
    for i in range(9):
        item = _full(i, a=f"x{i % 3}", d=i)
        if i == 8:
            del item["c"]
        ddb.put_item(TableName=tt, Item=item)
    seen, esk = [], None
    while True:
        out = ddb.scan(TableName=tt, IndexName="gsi", Limit=3, **({"ExclusiveStartKey": esk} if esk else {}))
        seen += [i["pk"]["S"] for i in out["Items"]]
        esk = out.get("LastEvaluatedKey")
        if esk is None:
            break
    assert sorted(seen) == [f"p{i}" for i in range(8)]


def test_update_table_backfills_and_validates(ddb, make_table):
    table = make_table([("pk", "HASH")], [("pk", "S")])
    for i in range(5):
        item = {"pk": {"S": f"p{i}"}, "x": {"S": "X"}, "y": {"N": str(i % 2)}, "z": {"N": str(-i)}}
        if i == 4:
            del item["z"]
        ddb.put_item(TableName=table, Item=item)
    defs = [{"AttributeName": "x", "AttributeType": "S"}, {"AttributeName": "y", "AttributeType": "N"},
            {"AttributeName": "z", "AttributeType": "N"}]
    with pytest.raises(ClientError) as e:
        ddb.update_table(TableName=table, AttributeDefinitions=defs, GlobalSecondaryIndexUpdates=[{"Create": _gsi(
            "gsi", ("x", "HASH"), ("z", "RANGE"), ("y", "HASH"))}])
    assert _error(e) == ("ValidationException", "One or more parameter values were invalid: Invalid KeySchema: "
                         "Every HASH key element must come before every RANGE key element")
    ddb.update_table(TableName=table, AttributeDefinitions=defs, GlobalSecondaryIndexUpdates=[{"Create": _gsi(
        "gsi", ("x", "HASH"), ("y", "HASH"), ("z", "RANGE"))}])
    gsi = ddb.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"][0]
    assert gsi["KeySchema"] == _keys(("x", "HASH"), ("y", "HASH"), ("z", "RANGE"))
    out = ddb.query(TableName=table, IndexName="gsi", KeyConditionExpression="x = :x AND y = :y",
                    ExpressionAttributeValues={":x": {"S": "X"}, ":y": {"N": "0"}})
    assert [i["pk"]["S"] for i in out["Items"]] == ["p2", "p0"]  # p4 has no z


def test_keys_only_projection_holds_every_key_attribute(ddb, make_table):
    table = make_table([("pk", "HASH")], [("pk", "S"), ("a", "S"), ("b", "S")],
                       GlobalSecondaryIndexes=[_gsi("gsi", ("a", "HASH"), ("b", "HASH"),
                                                    projection={"ProjectionType": "KEYS_ONLY"})])
    ddb.put_item(TableName=table, Item={"pk": {"S": "p"}, "a": {"S": "1"}, "b": {"S": "2"}, "n": {"S": "x"}})
    out = ddb.query(TableName=table, IndexName="gsi", KeyConditionExpression="a = :a AND b = :b",
                    ExpressionAttributeValues={":a": {"S": "1"}, ":b": {"S": "2"}})
    assert out["Items"] == [{"pk": {"S": "p"}, "a": {"S": "1"}, "b": {"S": "2"}}]


@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_restart_keeps_the_key_schema_and_the_index(tmp_path, stop):
    server = ServerProcess(tmp_path / "data", log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        client.create_table(TableName="stores", KeySchema=_keys(("pk", "HASH")), BillingMode="PAY_PER_REQUEST",
                            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"}
                                                  for n in ("pk", "country", "state", "city")],
                            GlobalSecondaryIndexes=[_gsi("byPlace", ("country", "HASH"), ("state", "RANGE"),
                                                         ("city", "RANGE"))])
        _put_stores(client, "stores")
        client.update_item(TableName="stores", Key={"pk": {"S": "1"}}, UpdateExpression="SET city = :c",
                           ExpressionAttributeValues={":c": {"S": "Everett"}})
        query = {"KeyConditionExpression": "country = :c AND #s = :s", "ExpressionAttributeNames": {"#s": "state"}}
        before = _cities(_q(client, "stores", query["KeyConditionExpression"], {"c": "US", "s": "WA"},
                            ExpressionAttributeNames=query["ExpressionAttributeNames"]))
        assert before == ["Everett", "Redmond"]
        if stop == "sigkill":
            server.kill()
        else:
            server.stop()
        server.start()
        client = server.client()
        gsi = client.describe_table(TableName="stores")["Table"]["GlobalSecondaryIndexes"][0]
        assert gsi["KeySchema"] == _keys(("country", "HASH"), ("state", "RANGE"), ("city", "RANGE"))
        assert _cities(_q(client, "stores", query["KeyConditionExpression"], {"c": "US", "s": "WA"},
                          ExpressionAttributeNames=query["ExpressionAttributeNames"])) == before


def test_partiql_select_on_the_index(ddb, stores):
    _put_stores(ddb, stores)
    out = ddb.execute_statement(Statement=f'SELECT city FROM "{stores}"."byPlace" WHERE country = ? AND "state" = ?',
                                Parameters=[{"S": "US"}, {"S": "CA"}])
    assert [i["city"]["S"] for i in out["Items"]] == ["Fresno", "Oakland"]
    out = ddb.execute_statement(Statement=f'SELECT city FROM "{stores}"."byPlace" WHERE country = ? AND city > ? '
                                          'ORDER BY "state" DESC', Parameters=[{"S": "US"}, {"S": "C"}])
    assert [i["city"]["S"] for i in out["Items"]] == ["Seattle", "Redmond", "Oakland", "Fresno"]
    out = ddb.execute_statement(Statement=f'SELECT city FROM "{stores}"."byPlace" WHERE city = ?',
                                Parameters=[{"S": "Victoria"}])  # no HASH equality: a Scan of the index
    assert out["Items"] == [{"city": {"S": "Victoria"}}]
    with pytest.raises(ClientError) as e:
        ddb.execute_statement(Statement=f'SELECT city FROM "{stores}"."byPlace" WHERE country = ?',
                              Parameters=[{"N": "1"}])
    assert _error(e) == ("ValidationException", "Key attribute's data type should match its data type in table's "
                         "schema: Key country")


def test_admin_views_show_the_key_tuples(ddb, server, make_table):
    table = make_table([("pk", "HASH")], [("pk", "S"), ("country", "S"), ("zip", "N"), ("city", "S")],
                       GlobalSecondaryIndexes=[_gsi("byZip", ("country", "HASH"), ("zip", "HASH"), ("city", "RANGE"))])
    for i in range(3):
        ddb.put_item(TableName=table, Item={"pk": {"S": str(i)}, "country": {"S": "US"}, "zip": {"N": "98101"},
                                            "city": {"S": "Seattle"}})
    status, _, raw = server.raw(None, None, method="GET", path="/_dynalocal/tables")
    listed = next(t for t in json.loads(raw)["tables"] if t["name"] == table)
    assert listed["indexes"][0]["key_schema"]["partition_keys"] == ["country", "zip"]
    assert listed["indexes"][0]["key_schema"]["sort_keys"] == ["city"]
    status, _, raw = server.raw(None, None, method="GET", path=f"/_dynalocal/tables/{table}/partitions")
    hot = [k for p in json.loads(raw)["indexes"]["byZip"] for k in p["hot_keys"]]
    assert hot == [{"key": "(US, 98101)", "units": 3.0}]


def test_index_writes_are_charged_to_the_index(ddb, stores):
    item = {"pk": {"S": "1"}, "country": {"S": "US"}, "state": {"S": "WA"}, "city": {"S": "Seattle"}}
    out = ddb.put_item(TableName=stores, Item=item, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"]["GlobalSecondaryIndexes"] == {"byPlace": {"CapacityUnits": 1.0}}
    out = ddb.put_item(TableName=stores, Item={**item, "city": {"S": "Tacoma"}}, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"]["GlobalSecondaryIndexes"] == {"byPlace": {"CapacityUnits": 2.0}}  # moved
    out = ddb.put_item(TableName=stores, Item={**item, "n": {"S": "x"}, "city": {"S": "Tacoma"}},
                       ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"]["GlobalSecondaryIndexes"] == {"byPlace": {"CapacityUnits": 1.0}}  # updated
    out = ddb.put_item(TableName=stores, Item={"pk": {"S": "2"}, "country": {"S": "US"}},
                       ReturnConsumedCapacity="INDEXES")
    assert "GlobalSecondaryIndexes" not in out["ConsumedCapacity"]  # not indexed: no index write


def test_empty_start_key_value_is_refused(ddb, tt):
    esk = {**_full(1), "c": {"S": ""}}
    message = ("One or more parameter values were invalid: The AttributeValue for a key attribute cannot contain an "
               "empty string value. Key: c")
    with pytest.raises(ClientError) as e:
        _q(ddb, tt, "a = :a AND b = :b", {"a": "x", "b": 1}, index="gsi", ExclusiveStartKey=esk)
    assert _error(e) == ("ValidationException", message)
    with pytest.raises(ClientError) as e:
        ddb.scan(TableName=tt, IndexName="gsi", ExclusiveStartKey=esk)
    assert _error(e) == ("ValidationException", message)
