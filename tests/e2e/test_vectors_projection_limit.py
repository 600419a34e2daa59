"""The projected non-key attributes limit (100 per table) shared by GSIs, LSIs and vector indexes: a
vector index counts its vector attribute and each INLINE_FILTER element (not HASH), through boto3."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError
from vector_support import needs_vectors

pytestmark = needs_vectors

LIMIT = ("One or more parameter values were invalid: The sum of the NonKeyAttributes across all secondary indexes "
         "exceeds the limit of 100")


def vector_index(name: str = "vec", filters: int = 0, hash_: bool = False, include: int = 0) -> dict:
    schema = [{"AttributeName": "cat", "SearchSchemaElementType": "HASH"}] if hash_ else []
    schema += [{"AttributeName": f"f{i}", "SearchSchemaElementType": "INLINE_FILTER"} for i in range(filters)]
    projection = ({"ProjectionType": "INCLUDE", "NonKeyAttributes": [f"p{i}" for i in range(include)]} if include
                  else {"ProjectionType": "ALL"})
    out = {"IndexName": name, "VectorAttribute": {"AttributeName": "emb"}, "Dimensions": 2,
           "DistanceFunction": "COSINE", "Projection": projection}
    if schema:
        out["SearchSchema"] = schema
    return out


def gsi(non_key: int, name: str = "by-g", start: int = 0) -> dict:
    return {"IndexName": name, "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "INCLUDE",
                           "NonKeyAttributes": [f"n{i}" for i in range(start, start + non_key)]}}


def gsis(total: int) -> list[dict]:
    """GSIs projecting `total` non-key attributes (at most 20 per index, the model's limit)."""
    return [gsi(min(20, total - at), f"by-g{at}", at) for at in range(0, total, 20)]


def definitions(*names: str) -> list[dict]:
    return [{"AttributeName": n, "AttributeType": "S"} for n in ("id", *names)]


def create(ddb, gsis: list[dict] | None = None, vectors: list[dict] | None = None, filters: int = 0,
           hash_: bool = False) -> str:
    name = f"pl-{uuid.uuid4().hex[:10]}"
    extra = [f"f{i}" for i in range(filters)] + (["cat"] if hash_ else []) + (["g"] if gsis else [])
    args: dict = {"TableName": name, "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                  "AttributeDefinitions": definitions(*extra), "BillingMode": "PAY_PER_REQUEST"}
    if gsis:
        args["GlobalSecondaryIndexes"] = gsis
    if vectors:
        args["VectorIndexes"] = vectors
    ddb.create_table(**args)
    return name


def refused(call) -> str:
    with pytest.raises(ClientError) as info:
        call()
    assert info.value.response["Error"]["Code"] == "ValidationException"
    return info.value.response["Error"]["Message"]


def test_create_table_counts_the_vector_attribute_and_inline_filters(ddb):
    # 95 + vector 1 + 4 inline filters = 100 (the HASH element does not count)
    create(ddb, gsis(95), [vector_index(filters=4, hash_=True)], filters=4, hash_=True)
    assert refused(lambda: create(ddb, gsis(95), [vector_index(filters=5)], filters=5)) == LIMIT
    assert refused(lambda: create(ddb, gsis(96), [vector_index(filters=4)], filters=4)) == LIMIT


def test_a_vector_index_include_list_counts_too(ddb):
    four = [vector_index(f"vec-{i}", filters=4, include=20) for i in range(4)]  # 4 x (20 + 1 + 4) = 100
    create(ddb, vectors=four, filters=4)
    five = [*four[:3], vector_index("vec-3", filters=5, include=20)]
    assert refused(lambda: create(ddb, vectors=five, filters=5)) == LIMIT


def test_update_table_shares_the_limit_both_ways(ddb):
    table = create(ddb, gsis(98))
    add = {"Create": vector_index(filters=2)}
    assert refused(lambda: ddb.update_table(TableName=table, AttributeDefinitions=definitions("f0", "f1"),
                                            VectorIndexUpdates=[add])) == LIMIT  # 98 + 1 + 2
    ddb.update_table(TableName=table, AttributeDefinitions=definitions("f0"),
                     VectorIndexUpdates=[{"Create": vector_index(filters=1)}])  # 98 + 1 + 1 = 100

    table = create(ddb, gsis(80), [vector_index(filters=2)], filters=2)  # 80 + 3
    assert refused(lambda: ddb.update_table(TableName=table, AttributeDefinitions=definitions("g"),
                                            GlobalSecondaryIndexUpdates=[{"Create": gsi(18, "more", 80)}])) == LIMIT
    ddb.update_table(TableName=table, AttributeDefinitions=definitions("g"),
                     GlobalSecondaryIndexUpdates=[{"Create": gsi(17, "more", 80)}])
