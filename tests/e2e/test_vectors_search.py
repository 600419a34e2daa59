"""SearchVectors through boto3: each distance function against a brute-force reference computed here,
scoping and inline filters, projection, write-time checks, every write path, validation messages, capacity."""
from __future__ import annotations

import math
import uuid

import numpy as np
import pytest
from botocore.exceptions import ClientError
from vector_support import needs_vectors

pytestmark = needs_vectors

KEYS = [{"AttributeName": "id", "KeyType": "HASH"}]
DEFS = [{"AttributeName": "id", "AttributeType": "S"}, {"AttributeName": "cat", "AttributeType": "S"},
        {"AttributeName": "color", "AttributeType": "S"}]


def error(info) -> tuple[str, str]:
    return info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]


def vec(values) -> dict:
    return {"L": [{"N": repr(float(v))} for v in values]}


def make(ddb, fn="COSINE", dims=3, schema=(("cat", "HASH"), ("color", "INLINE_FILTER")), projection=None) -> str:
    name = f"s-{uuid.uuid4().hex[:10]}"
    index = {"IndexName": "vec", "VectorAttribute": {"AttributeName": "emb"}, "Dimensions": dims,
             "DistanceFunction": fn, "Projection": projection or {"ProjectionType": "ALL"}}
    if schema:
        index["SearchSchema"] = [{"AttributeName": n, "SearchSchemaElementType": t} for n, t in schema]
    used = {"id"} | {n for n, _ in schema}
    ddb.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=[d for d in DEFS if d["AttributeName"] in used],
                     BillingMode="PAY_PER_REQUEST", VectorIndexes=[index])
    return name


def reference(fn: str, rows: dict[str, list[float]], query: list[float]) -> dict[str, float]:
    """Brute force: the score of every row (f32 elements, f64 arithmetic)."""
    q = np.array(query, dtype=np.float32).astype(np.float64)
    out = {}
    for key, row in rows.items():
        v = np.array(row, dtype=np.float32).astype(np.float64)
        if fn == "EUCLIDEAN":
            out[key] = float(np.sqrt(((v - q) ** 2).sum()))
        elif fn == "DOT_PRODUCT":
            out[key] = float(v @ q)
        else:
            denominator = math.sqrt(float(v @ v) * float(q @ q))
            out[key] = 1.0 - float(v @ q) / denominator if denominator else 1.0
    return out


def top(fn: str, scores: dict[str, float], k: int) -> list[float]:
    ordered = sorted(scores.values(), reverse=fn == "DOT_PRODUCT")
    return ordered[:k]


def search(ddb, name, query, k=10, **kwargs):
    return ddb.search_vectors(TableName=name, IndexName="vec", SearchVector=vec(query)["L"], TopK=k, **kwargs)


@pytest.mark.parametrize("fn", ["COSINE", "EUCLIDEAN", "DOT_PRODUCT"])
def test_each_distance_function_matches_brute_force(ddb, fn):
    name = make(ddb, fn, dims=4, schema=())
    rng = np.random.default_rng(7)
    rows = {f"r{i}": list(rng.normal(size=4)) for i in range(60)}
    rows["zero"] = [0.0, 0.0, 0.0, 0.0]
    rows["tie1"] = rows["tie2"] = [1.0, 2.0, 3.0, 4.0]  # ties
    rows["neg"] = [-5.0, -5.0, -5.0, -5.0]  # a negative dot product
    for key, row in rows.items():
        ddb.put_item(TableName=name, Item={"id": {"S": key}, "emb": vec(row)})
    for query in ([1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 0.25, 2.0], [0.0, 0.0, 0.0, 0.0]):
        expected = reference(fn, rows, query)
        for k in (1, 5, 64, 100):
            got = search(ddb, name, query, k)["SearchResults"]
            assert len(got) == min(k, len(rows))
            scores = [r["Score"] for r in got]
            assert scores == pytest.approx(top(fn, expected, k), abs=1e-5)
            for r in got:  # each item's score is its own
                assert r["Score"] == pytest.approx(expected[r["Item"]["id"]["S"]], abs=1e-5)
                assert "emb" not in r["Item"]
    if fn == "COSINE":
        got = {r["Item"]["id"]["S"]: r["Score"] for r in search(ddb, name, [1, 1, 1, 1], 100)["SearchResults"]}
        assert got["zero"] == 1.0 and got["neg"] == pytest.approx(2.0)
    if fn == "EUCLIDEAN":
        assert search(ddb, name, [1, 2, 3, 4], 2)["SearchResults"][0]["Score"] == 0.0
    ddb.delete_table(TableName=name)


def test_scoped_to_one_hash_value_with_inline_filters_before_top_k(ddb):
    name = make(ddb, "EUCLIDEAN")
    items = [("a", "x", "red", [0, 0, 0]), ("b", "x", "blue", [0.1, 0, 0]), ("c", "x", "red", [5, 5, 5]),
             ("d", "y", "red", [0, 0, 0]), ("e", "x", None, [0, 0, 0.05])]
    for key, cat, color, row in items:
        item = {"id": {"S": key}, "cat": {"S": cat}, "emb": vec(row)}
        if color:
            item["color"] = {"S": color}
        ddb.put_item(TableName=name, Item=item)
    ids = lambda out: [r["Item"]["id"]["S"] for r in out["SearchResults"]]  # noqa: E731
    values = {":c": {"S": "x"}}
    assert ids(search(ddb, name, [0, 0, 0], 10, SearchConditionExpression="cat = :c",
                      ExpressionAttributeValues=values)) == ["a", "e", "b", "c"]
    red = {":c": {"S": "x"}, ":r": {"S": "red"}}
    assert ids(search(ddb, name, [0, 0, 0], 1, SearchConditionExpression="#c = :c AND color = :r",
                      ExpressionAttributeNames={"#c": "cat"}, ExpressionAttributeValues=red)) == ["a"]
    assert ids(search(ddb, name, [5, 5, 5], 1, SearchConditionExpression=":r = color AND cat = :c",
                      ExpressionAttributeValues=red)) == ["c"]
    assert ids(search(ddb, name, [0, 0, 0], 10, SearchConditionExpression="cat = :c",
                      ExpressionAttributeValues={":c": {"S": "nothing"}})) == []
    ddb.delete_table(TableName=name)


def test_projection(ddb):
    name = make(ddb, "COSINE", schema=(("cat", "HASH"),),
                projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["title"]})
    ddb.put_item(TableName=name, Item={"id": {"S": "a"}, "cat": {"S": "x"}, "title": {"S": "t"}, "secret": {"S": "s"},
                                       "emb": {"L": [{"N": "0.1"}, {"N": "1.00000000001"}, {"N": "2"}]}})
    cond = {"SearchConditionExpression": "cat = :c", "ExpressionAttributeValues": {":c": {"S": "x"}}}
    (hit,) = search(ddb, name, [1, 1, 1], **cond)["SearchResults"]
    assert hit["Item"] == {"id": {"S": "a"}, "cat": {"S": "x"}, "title": {"S": "t"}}
    (hit,) = search(ddb, name, [1, 1, 1], ProjectionExpression="emb, secret, title", **cond)["SearchResults"]
    assert hit["Item"] == {"title": {"S": "t"}, "emb": {"L": [{"N": "0.1"}, {"N": "1"}, {"N": "2"}]}}  # f32 values
    full = ddb.get_item(TableName=name, Key={"id": {"S": "a"}})["Item"]
    assert full["emb"]["L"][1] == {"N": "1.00000000001"}  # the table keeps full precision
    ddb.delete_table(TableName=name)


INVALID = "One or more parameter values were invalid: "


@pytest.mark.parametrize("emb, message", [
    ({"L": [{"N": "1"}, {"N": "2"}]}, INVALID + "Invalid size for parameter emb, Expected: 3, Actual: 2. IndexName: vec"),
    ({"S": "x"}, INVALID + "Invalid type for parameter emb, Expected: L, Actual: S. IndexName: vec"),
    ({"L": [{"N": "1"}, {"S": "2"}, {"N": "3"}]},
     INVALID + "Invalid type for parameter emb[1], Expected: N, Actual: S. IndexName: vec"),
    ({"L": [{"N": "1"}, {"N": "1e39"}, {"N": "3"}]},
     INVALID + "Invalid value for parameter emb[1]: the value must fit in a 32-bit floating-point number. IndexName: vec"),
])
def test_write_time_checks(ddb, emb, message):
    name = make(ddb)
    for write in (lambda item: ddb.put_item(TableName=name, Item=item),
                  lambda item: ddb.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": item}}]})):
        with pytest.raises(ClientError) as info:
            write({"id": {"S": "a"}, "cat": {"S": "x"}, "emb": emb})
        assert error(info) == ("ValidationException", message)
    with pytest.raises(ClientError) as info:
        ddb.update_item(TableName=name, Key={"id": {"S": "a"}}, UpdateExpression="SET emb = :e",
                        ExpressionAttributeValues={":e": emb})
    assert error(info) == ("ValidationException", message)
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(TransactItems=[{"Put": {"TableName": name, "Item": {"id": {"S": "a"}, "emb": emb}}}])
    assert error(info)[0] == "TransactionCanceledException"
    assert ddb.scan(TableName=name)["Items"] == []
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName=name, Item={"id": {"S": "a"}, "cat": {"N": "1"}, "emb": vec([1, 2, 3])})
    assert error(info) == ("ValidationException", INVALID + "Type mismatch for Index Key cat Expected: S Actual: N "
                                                            "IndexName: vec")
    ddb.delete_table(TableName=name)


def test_every_write_path_keeps_the_index_exact(ddb):
    name = make(ddb, "EUCLIDEAN", schema=())
    hits = lambda: sorted(r["Item"]["id"]["S"] for r in search(ddb, name, [0, 0, 0], 100)["SearchResults"])  # noqa
    ddb.put_item(TableName=name, Item={"id": {"S": "p"}, "emb": vec([1, 1, 1])})
    ddb.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": {"id": {"S": f"b{i}"}, "emb": vec([i, 0, 0])}}}
                                              for i in range(3)]})
    ddb.transact_write_items(TransactItems=[{"Put": {"TableName": name, "Item": {"id": {"S": "t"}, "emb": vec([2, 2, 2])}}},
                                            {"Delete": {"TableName": name, "Key": {"id": {"S": "b0"}}}}])
    ddb.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'id': 'q', 'emb': [3, 3, 3]}}")
    assert hits() == ["b1", "b2", "p", "q", "t"]
    ddb.update_item(TableName=name, Key={"id": {"S": "p"}}, UpdateExpression="REMOVE emb")
    ddb.execute_statement(Statement=f"DELETE FROM \"{name}\" WHERE id = 'q'")
    ddb.delete_item(TableName=name, Key={"id": {"S": "b1"}})
    assert hits() == ["b2", "t"]
    with pytest.raises(ClientError):  # a cancelled transaction changes nothing
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": name, "Item": {"id": {"S": "new"}, "emb": vec([9, 9, 9])}}},
            {"ConditionCheck": {"TableName": name, "Key": {"id": {"S": "t"}}, "ConditionExpression": "attribute_not_exists(id)"}}])
    assert hits() == ["b2", "t"]
    ddb.update_item(TableName=name, Key={"id": {"S": "t"}}, UpdateExpression="SET emb = :e",
                    ExpressionAttributeValues={":e": vec([0, 0, 0.5])})
    (first, _) = search(ddb, name, [0, 0, 0], 2)["SearchResults"]
    assert first["Item"]["id"]["S"] == "t" and first["Score"] == pytest.approx(0.5)
    ddb.delete_table(TableName=name)


@pytest.mark.parametrize("kwargs, code, message", [
    ({"TopK": 101}, "ValidationException",
     "Provided TopK value '101' is out of valid range. The value must be between 1 and 100 inclusive"),
    ({"SearchVector": [{"N": "1"}, {"S": "x"}, {"N": "1"}]}, "ValidationException",
     "Search vector contains invalid values. All values in the search vector must be a 32-bit floating-point number "
     "attribute"),
    ({"SearchVector": [{"N": "1"}, {"N": "1e39"}, {"N": "1"}]}, "ValidationException",
     "Search vector contains invalid values. All values in the search vector must be a 32-bit floating-point number "
     "attribute"),
    ({"SearchVector": [{"N": "1"}] * 4}, "ValidationException",
     "Input search vector dimension 4 does not match vector index dimension 3"),
    ({"IndexName": "nope"}, "ValidationException", "The table does not have the specified index: nope"),
    ({"TableName": "missing-table"}, "ResourceNotFoundException", "Requested resource not found"),
    ({"SearchConditionExpression": None}, "ValidationException",
     "SearchConditionExpression must be provided when SearchSchema has a HASH key"),
    ({"SearchConditionExpression": "color = :c"}, "ValidationException",
     "SearchConditionExpression must be provided when SearchSchema has a HASH key"),
    ({"SearchConditionExpression": "cat > :c"}, "ValidationException",
     "Invalid SearchConditionExpression: Invalid comparator used in SearchConditionExpression"),
    ({"SearchConditionExpression": "cat = :c OR cat = :c"}, "ValidationException",
     "Invalid SearchConditionExpression: Invalid operator used in SearchConditionExpression"),
    ({"SearchConditionExpression": "cat IN (:c)"}, "ValidationException",
     "Invalid SearchConditionExpression: Invalid operator used in SearchConditionExpression"),
    ({"SearchConditionExpression": "cat = :c AND size2 = :c"}, "ValidationException",
     "SearchConditionExpression must not contain any attributes that is not in SearchSchema. Invalid attribute: size2"),
    ({"ExpressionAttributeValues": {":c": {"N": "1"}}}, "ValidationException",
     "Type of 'cat' attribute in SearchConditionExpression (N) does not match type in search schema (S)"),
    ({"ExpressionAttributeValues": {":c": {"S": ""}}}, "ValidationException",
     "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty "
     "string value. Key: cat"),
    ({"SearchConditionExpression": " "}, "ValidationException",
     "Invalid SearchConditionExpression: The expression can not be empty;"),
    ({"ExpressionAttributeValues": {":c": {"S": "x"}, ":u": {"S": "y"}}}, "ValidationException",
     "Value provided in ExpressionAttributeValues unused in expressions: keys: {:u}"),
])
def test_search_validation(ddb, kwargs, code, message):
    name = make(ddb)
    request = {"TableName": name, "IndexName": "vec", "SearchVector": [{"N": "1"}] * 3, "TopK": 1,
               "SearchConditionExpression": "cat = :c", "ExpressionAttributeValues": {":c": {"S": "x"}}}
    request.update(kwargs)
    if request["SearchConditionExpression"] is None:
        del request["SearchConditionExpression"], request["ExpressionAttributeValues"]
    with pytest.raises(ClientError) as info:
        ddb.search_vectors(**request)
    assert error(info) == (code, message)
    ddb.delete_table(TableName=name)


def test_capacity_fields(ddb):
    name = make(ddb, schema=())
    out = ddb.put_item(TableName=name, Item={"id": {"S": "a"}, "emb": vec([1, 2, 3])}, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"]["VectorIndexes"] == {"vec": {"VectorWriteRequestBytes": 1024.0}}
    out = ddb.put_item(TableName=name, Item={"id": {"S": "a"}, "emb": vec([1, 2, 3])}, ReturnConsumedCapacity="INDEXES")
    assert "VectorIndexes" not in out["ConsumedCapacity"]  # nothing indexed changed
    out = ddb.put_item(TableName=name, Item={"id": {"S": "b"}}, ReturnConsumedCapacity="INDEXES")
    assert "VectorIndexes" not in out["ConsumedCapacity"]  # not indexed
    out = ddb.delete_item(TableName=name, Key={"id": {"S": "a"}}, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"]["VectorIndexes"]["vec"]["VectorWriteRequestBytes"] >= 1024
    for i in range(400):
        ddb.put_item(TableName=name, Item={"id": {"S": f"i{i}"}, "emb": vec([i, 1, 1])})
    out = search(ddb, name, [1, 1, 1], 5, ReturnConsumedCapacity="TOTAL")
    assert out["ConsumedCapacity"] == {"VectorSearchRequestBytes": 400 * 12.0}
    more = search(ddb, name, [1, 1, 1], 5, ReturnConsumedCapacity="TOTAL", ProjectionExpression="id, emb")
    assert more["ConsumedCapacity"]["VectorSearchRequestBytes"] == 400 * 12.0 + 5 * 12
    assert "ConsumedCapacity" not in search(ddb, name, [1, 1, 1], 5)
    ddb.delete_table(TableName=name)
