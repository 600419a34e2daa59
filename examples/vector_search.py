"""Vector search: embed a few product descriptions with a toy deterministic embedding, then find the
products nearest to a query within one category (SearchVectors, exact top K).

Run: .venv/bin/python examples/vector_search.py
"""
from __future__ import annotations

import hashlib
import math

from _local import client, endpoint

DIMS = 16


def embed(text: str) -> list[float]:
    """A toy embedding: hashed word counts, normalised (same text, same vector; shared words, nearby vectors)."""
    v = [0.0] * DIMS
    for word in text.lower().split():
        v[hashlib.sha256(word.encode()).digest()[0] % DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


ddb = client(endpoint())
ddb.create_table(
    TableName="products", BillingMode="PAY_PER_REQUEST",
    KeySchema=[{"AttributeName": "sku", "KeyType": "HASH"}],
    AttributeDefinitions=[{"AttributeName": "sku", "AttributeType": "S"},
                          {"AttributeName": "category", "AttributeType": "S"}],
    VectorIndexes=[{"IndexName": "by-meaning", "VectorAttribute": {"AttributeName": "embedding"},
                    "Dimensions": DIMS, "DistanceFunction": "COSINE", "Projection": {"ProjectionType": "ALL"},
                    "SearchSchema": [{"AttributeName": "category", "SearchSchemaElementType": "HASH"}]}])
products = [
    ("k1", "kitchen", "stainless steel chef knife for slicing vegetables"),
    ("k2", "kitchen", "cast iron pan for searing steak"),
    ("k3", "kitchen", "bread knife with serrated steel blade"),
    ("g1", "garden", "steel garden shears for cutting branches"),
    ("g2", "garden", "watering can for vegetables and flowers"),
]
for sku, category, text in products:
    ddb.put_item(TableName="products", Item={
        "sku": {"S": sku}, "category": {"S": category}, "description": {"S": text},
        "embedding": {"L": [{"N": repr(x)} for x in embed(text)]}})

out = ddb.search_vectors(
    TableName="products", IndexName="by-meaning", TopK=2,
    SearchVector=[{"N": repr(x)} for x in embed("sharp steel knife")],
    SearchConditionExpression="category = :c", ExpressionAttributeValues={":c": {"S": "kitchen"}})
for hit in out["SearchResults"]:
    print(f"{hit['Item']['sku']['S']}  {hit['Score']:.3f}  {hit['Item']['description']['S']}")
