"""Property: after random puts, updates, deletes and transactions, SearchVectors (scoped to each HASH
value, with and without an inline filter) equals a brute-force search over the table's items
(docs/behaviour/vectors.md §3, §4)."""
from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vector_support import needs_vectors

pytestmark = needs_vectors

DIMS = 3
CATS = ["a", "b"]
COLORS = ["red", "blue"]
FUNCTIONS = ["COSINE", "EUCLIDEAN", "DOT_PRODUCT"]

element = st.integers(-4, 4).map(lambda i: i / 2)
vector = st.lists(element, min_size=DIMS, max_size=DIMS)
key = st.sampled_from([f"k{i}" for i in range(12)])
fields = st.fixed_dictionaries({"cat": st.sampled_from([*CATS, None]), "color": st.sampled_from([*COLORS, None]),
                                "emb": st.one_of(st.none(), vector)})
action = st.one_of(
    st.tuples(st.just("put"), key, fields),
    st.tuples(st.just("update"), key, fields),
    st.tuples(st.just("delete"), key, st.none()),
    st.tuples(st.just("transact"), st.lists(key, min_size=1, max_size=3, unique=True), fields),
)


@pytest.fixture(scope="module")
def tables(ddb):
    names = {}
    for fn in FUNCTIONS:
        name = f"vp-{fn.lower()}-{uuid.uuid4().hex[:6]}"
        ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("id", "cat", "color")],
                         VectorIndexes=[{"IndexName": "vec", "VectorAttribute": {"AttributeName": "emb"},
                                         "Dimensions": DIMS, "DistanceFunction": fn,
                                         "Projection": {"ProjectionType": "KEYS_ONLY"},
                                         "SearchSchema": [{"AttributeName": "cat", "SearchSchemaElementType": "HASH"},
                                                          {"AttributeName": "color",
                                                           "SearchSchemaElementType": "INLINE_FILTER"}]}])
        names[fn] = name
    yield names
    for name in names.values():
        ddb.delete_table(TableName=name)


def _item(k: str, f: dict) -> dict:
    item = {"id": {"S": k}}
    for name in ("cat", "color"):
        if f[name] is not None:
            item[name] = {"S": f[name]}
    if f["emb"] is not None:
        item["emb"] = {"L": [{"N": repr(v)} for v in f["emb"]]}
    return item


def _apply(ddb, name: str, op: tuple) -> None:
    kind, target, f = op
    if kind == "put":
        ddb.put_item(TableName=name, Item=_item(target, f))
    elif kind == "delete":
        ddb.delete_item(TableName=name, Key={"id": {"S": target}})
    elif kind == "update":
        item = _item(target, f)
        del item["id"]
        sets = [f"#{n} = :{n}" for n in item]
        removes = [n for n in ("cat", "color", "emb") if n not in item]
        expression = " ".join(part for part in (("SET " + ", ".join(sets)) if sets else "",
                                                ("REMOVE " + ", ".join(f"#{n}" for n in removes)) if removes else "")
                              if part)
        ddb.update_item(TableName=name, Key={"id": {"S": target}}, UpdateExpression=expression,
                        ExpressionAttributeNames={f"#{n}": n for n in ("cat", "color", "emb")
                                                  if n in item or n in removes},
                        **({"ExpressionAttributeValues": {f":{n}": v for n, v in item.items()}} if item else {}))
    else:
        ddb.transact_write_items(TransactItems=[{"Put": {"TableName": name, "Item": _item(k, f)}} for k in target])


def _score(fn: str, v: np.ndarray, q: np.ndarray) -> float:
    if fn == "EUCLIDEAN":
        return float(np.sqrt(((v - q) ** 2).sum()))
    if fn == "DOT_PRODUCT":
        return float(v @ q)
    denominator = float(np.sqrt((v @ v) * (q @ q)))
    return 1.0 - float(v @ q) / denominator if denominator else 1.0


def _brute(ddb, name: str, fn: str, query: list[float], cat: str, color: str | None, k: int) -> list[float]:
    q = np.array(query, dtype=np.float64)
    scores = []
    for item in ddb.scan(TableName=name)["Items"]:
        if "emb" not in item or item.get("cat", {}).get("S") != cat:
            continue
        if color is not None and item.get("color", {}).get("S") != color:
            continue
        v = np.array([float(e["N"]) for e in item["emb"]["L"]], dtype=np.float32).astype(np.float64)
        scores.append(_score(fn, v, q))
    return sorted(scores, reverse=fn == "DOT_PRODUCT")[:k]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(action, min_size=5, max_size=30), query=vector, k=st.integers(1, 8), fn=st.sampled_from(FUNCTIONS))
def test_search_equals_brute_force_after_random_writes(ddb, tables, ops, query, k, fn):
    name = tables[fn]
    for op in ops:
        _apply(ddb, name, op)
    for cat in CATS:
        for color in (None, *COLORS):
            condition = "cat = :c" + (" AND color = :r" if color else "")
            values = {":c": {"S": cat}, **({":r": {"S": color}} if color else {})}
            got = ddb.search_vectors(TableName=name, IndexName="vec", SearchVector=[{"N": repr(v)} for v in query],
                                     TopK=k, SearchConditionExpression=condition,
                                     ExpressionAttributeValues=values)["SearchResults"]
            assert [r["Score"] for r in got] == pytest.approx(_brute(ddb, name, fn, query, cat, color, k), abs=1e-6)
    count = ddb.describe_table(TableName=name)["Table"]["VectorIndexes"][0]["ItemCount"]
    indexed = [i for i in ddb.scan(TableName=name)["Items"] if "emb" in i and "cat" in i]
    assert count == len(indexed)
