"""SearchVectors shows each result item as the table holds it now: results are decoded once and kept per
index (storage.vectors.VectorIndex.result), so every write to a result's key must be seen by the next search."""
from __future__ import annotations

from test_vectors_search import make, vec
from vector_support import needs_vectors

pytestmark = needs_vectors


def search(ddb, name: str) -> dict[str, dict]:
    out = ddb.search_vectors(TableName=name, IndexName="vec", TopK=10, SearchVector=[{"N": "1"}, {"N": "0"}, {"N": "0"}],
                             SearchConditionExpression="cat = :c", ExpressionAttributeValues={":c": {"S": "a"}})
    return {r["Item"]["id"]["S"]: r["Item"] for r in out["SearchResults"]}


def test_a_result_changes_with_every_write_to_its_item(ddb):
    name = make(ddb)
    ddb.put_item(TableName=name, Item={"id": {"S": "x"}, "cat": {"S": "a"}, "color": {"S": "red"}, "n": {"N": "1"},
                                       "emb": vec([1, 0, 0])})
    assert search(ddb, name)["x"] == {"id": {"S": "x"}, "cat": {"S": "a"}, "color": {"S": "red"}, "n": {"N": "1"}}
    ddb.update_item(TableName=name, Key={"id": {"S": "x"}}, UpdateExpression="SET n = :n, extra = :e",
                    ExpressionAttributeValues={":n": {"N": "2"}, ":e": {"S": "new"}})
    assert search(ddb, name)["x"]["n"] == {"N": "2"} and search(ddb, name)["x"]["extra"] == {"S": "new"}
    ddb.update_item(TableName=name, Key={"id": {"S": "x"}}, UpdateExpression="REMOVE extra")
    assert "extra" not in search(ddb, name)["x"]
    ddb.put_item(TableName=name, Item={"id": {"S": "x"}, "cat": {"S": "a"}, "color": {"S": "blue"},
                                       "emb": vec([1, 0.1, 0])})
    assert search(ddb, name)["x"] == {"id": {"S": "x"}, "cat": {"S": "a"}, "color": {"S": "blue"}}
    ddb.delete_item(TableName=name, Key={"id": {"S": "x"}})
    assert search(ddb, name) == {}


def test_an_include_projection_result_follows_its_projected_attributes(ddb):
    name = make(ddb, projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n"]})
    ddb.put_item(TableName=name, Item={"id": {"S": "y"}, "cat": {"S": "a"}, "color": {"S": "red"}, "n": {"N": "1"},
                                       "secret": {"S": "h"}, "emb": vec([1, 0, 0])})
    assert search(ddb, name)["y"] == {"id": {"S": "y"}, "cat": {"S": "a"}, "color": {"S": "red"}, "n": {"N": "1"}}
    ddb.update_item(TableName=name, Key={"id": {"S": "y"}}, UpdateExpression="SET secret = :h",
                    ExpressionAttributeValues={":h": {"S": "changed"}})
    ddb.update_item(TableName=name, Key={"id": {"S": "y"}}, UpdateExpression="SET n = :n",
                    ExpressionAttributeValues={":n": {"N": "5"}})
    assert search(ddb, name)["y"]["n"] == {"N": "5"}
