"""Vector index definitions through boto3: CreateTable/UpdateTable validation, DescribeTable, the
lifecycle phases under --transient-delay, and Query/Scan/PartiQL refused on a vector index."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from vector_support import needs_vectors

pytestmark = needs_vectors

KEYS = [{"AttributeName": "id", "KeyType": "HASH"}]


def defs(*extra: tuple[str, str]) -> list[dict]:
    return [{"AttributeName": "id", "AttributeType": "S"}] + [{"AttributeName": n, "AttributeType": t} for n, t in extra]


def vindex(name: str = "vec-index", attr: str = "emb", dims: int = 3, fn: str = "COSINE", schema=None,
           projection=None) -> dict:
    out = {"IndexName": name, "VectorAttribute": {"AttributeName": attr}, "Dimensions": dims, "DistanceFunction": fn,
           "Projection": projection or {"ProjectionType": "ALL"}}
    if schema:
        out["SearchSchema"] = [{"AttributeName": n, "SearchSchemaElementType": t} for n, t in schema]
    return out


def error(info) -> tuple[str, str]:
    return info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]


def create(ddb, indexes, definitions=None, **kwargs):
    name = f"v-{uuid.uuid4().hex[:10]}"
    kwargs.setdefault("BillingMode", "PAY_PER_REQUEST")
    ddb.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=definitions or defs(),
                     VectorIndexes=indexes, **kwargs)
    return name


INVALID = "One or more parameter values were invalid: "


@pytest.mark.parametrize("indexes, definitions, kwargs, message", [
    ([vindex()], None, {"BillingMode": "PROVISIONED",
                        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}},
     INVALID + "Vector indexes are only supported for PAY_PER_REQUEST tables"),
    ([vindex(f"idx{i}", attr=f"e{i}") for i in range(6)], None, {},
     INVALID + "VectorIndex count exceeds the per-table limit of 5"),
    ([vindex(dims=4097)], None, {}, INVALID + "Number of dimensions must be between 1 and 4096 inclusive."),
    ([vindex(attr="emb")], defs(("emb", "S")), {},
     INVALID + "Conflicting attribute definition for 'emb'. An attribute cannot be defined in AttributeDefinitions "
               "when used as a VectorAttribute."),
    ([vindex("one", dims=3), vindex("two", dims=4)], None, {},
     INVALID + "Conflicting attribute definition for 'emb'. All VectorIndexes on the same vector attribute must use "
               "the same dimensions."),
    ([vindex(schema=[("cat", "HASH")])], None, {},
     INVALID + "One element in SearchSchema is not defined in attribute definitions"),
    ([vindex(schema=[("a", "HASH"), ("b", "HASH")])], defs(("a", "S"), ("b", "S")), {},
     INVALID + "SearchSchema can contain at most one element of type HASH"),
    ([vindex(schema=[(f"f{i}", "INLINE_FILTER") for i in range(19)])], defs(*[(f"f{i}", "S") for i in range(19)]), {},
     INVALID + "SearchSchema can contain at most 18 elements of type INLINE_FILTER"),
])
def test_create_table_refuses_invalid_vector_indexes(ddb, indexes, definitions, kwargs, message):
    with pytest.raises(ClientError) as info:
        create(ddb, indexes, definitions, **kwargs)
    assert error(info) == ("ValidationException", message)


def test_a_search_schema_attribute_counts_as_a_used_definition_and_describe_shows_the_index(ddb):
    name = create(ddb, [vindex(schema=[("cat", "HASH"), ("color", "INLINE_FILTER")], fn="EUCLIDEAN")],
                  defs(("cat", "S"), ("color", "S")))
    ddb.put_item(TableName=name, Item={"id": {"S": "a"}, "cat": {"S": "x"}, "emb": {"L": [{"N": "1"}] * 3}})
    ddb.put_item(TableName=name, Item={"id": {"S": "b"}, "emb": {"L": [{"N": "1"}] * 3}})  # no HASH: not indexed
    table = ddb.describe_table(TableName=name)["Table"]
    (index,) = table["VectorIndexes"]
    assert index["IndexStatus"] == "ACTIVE" and "Backfilling" not in index
    assert index["ItemCount"] == 1 and index["IndexSizeBytes"] == 12
    assert index["IndexArn"] == table["TableArn"] + "/index/vec-index"
    assert index["DistanceFunction"] == "EUCLIDEAN" and index["Dimensions"] == 3
    assert index["VectorAttribute"] == {"AttributeName": "emb"}
    assert {d["AttributeName"] for d in table["AttributeDefinitions"]} == {"id", "cat", "color"}
    ddb.delete_table(TableName=name)


def test_update_table_rules(ddb):
    name = create(ddb, [vindex("first")])
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, BillingMode="PROVISIONED",
                         ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1})
    assert error(info) == ("ValidationException", INVALID + "Vector indexes are only supported for PAY_PER_REQUEST tables")
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, VectorIndexUpdates=[{"Create": vindex("second", attr="x")},
                                                             {"Create": vindex("third", attr="y")}])
    assert error(info) == ("LimitExceededException", "Subscriber limit exceeded: Only 1 online index can be created or "
                                                     "deleted simultaneously per table")
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, VectorIndexUpdates=[{"Create": vindex("first", attr="x")}])
    assert error(info) == ("ValidationException", "Attempting to create an index which already exists")
    with pytest.raises(ClientError) as info:  # the SearchSchema definition must come with the request
        ddb.update_table(TableName=name, VectorIndexUpdates=[{"Create": vindex("second", schema=[("cat", "HASH")])}])
    assert error(info) == ("ValidationException", INVALID + "One element in SearchSchema is not defined in attribute "
                                                            "definitions")
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, VectorIndexUpdates=[{"Create": vindex("second", dims=5)}])
    assert "must use the same dimensions" in error(info)[1]
    ddb.update_table(TableName=name, AttributeDefinitions=defs(("cat", "S")),
                     VectorIndexUpdates=[{"Create": vindex("second", schema=[("cat", "HASH")])}])
    table = ddb.describe_table(TableName=name)["Table"]
    assert [i["IndexStatus"] for i in table["VectorIndexes"]] == ["ACTIVE", "ACTIVE"]
    assert {d["AttributeName"] for d in table["AttributeDefinitions"]} == {"id", "cat"}
    for i in range(3):
        ddb.update_table(TableName=name, VectorIndexUpdates=[{"Create": vindex(f"more{i}", attr=f"m{i}")}])
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName=name, VectorIndexUpdates=[{"Create": vindex("sixth", attr="z")}])
    assert error(info) == ("LimitExceededException", "Subscriber limit exceeded: Number of vector secondary indexes "
                                                     "exceeds per-table limit of 5")
    ddb.update_table(TableName=name, VectorIndexUpdates=[{"Delete": {"IndexName": "first"}}])
    names = [i["IndexName"] for i in ddb.describe_table(TableName=name)["Table"]["VectorIndexes"]]
    assert names == ["second", "more0", "more1", "more2"]
    ddb.delete_table(TableName=name)


def test_query_scan_and_partiql_on_a_vector_index_are_refused(ddb):
    name = create(ddb, [vindex(schema=[("cat", "HASH")])], defs(("cat", "S")))
    with pytest.raises(ClientError) as info:
        ddb.query(TableName=name, IndexName="vec-index", KeyConditionExpression="cat = :c",
                  ExpressionAttributeValues={":c": {"S": "x"}})
    assert error(info) == ("ValidationException", "Query operation not supported on this index type.")
    with pytest.raises(ClientError) as info:
        ddb.scan(TableName=name, IndexName="vec-index")
    assert error(info) == ("ValidationException", "Scan operation not supported on this index type.")
    with pytest.raises(ClientError) as info:
        ddb.execute_statement(Statement=f'SELECT * FROM "{name}"."vec-index"')
    assert error(info) == ("ValidationException", "ExecuteStatement operation not supported on this index type.")
    ddb.delete_table(TableName=name)


@pytest.fixture(scope="module")
def slow():
    clock = WallClock()
    with LiveServer(Context(settings=Settings(transient_delay=5.0), wall_clock=clock)) as live:
        live.clock = clock
        yield live


def search(ddb, name, index="vec-index"):
    return ddb.search_vectors(TableName=name, IndexName=index, SearchVector=[{"N": "1"}] * 3, TopK=1)


def test_an_added_index_goes_through_its_phases(slow):
    ddb = slow.client(retries={"max_attempts": 0})
    ddb.create_table(TableName="phases", KeySchema=KEYS, AttributeDefinitions=defs(), BillingMode="PAY_PER_REQUEST")
    slow.clock.now += 5
    ddb.put_item(TableName="phases", Item={"id": {"S": "a"}, "emb": {"L": [{"N": "1"}] * 3}})
    out = ddb.update_table(TableName="phases", VectorIndexUpdates=[{"Create": vindex()}])["TableDescription"]
    assert out["VectorIndexes"][0]["IndexStatus"] == "CREATING" and out["VectorIndexes"][0]["Backfilling"] is False

    def phase():
        (index,) = ddb.describe_table(TableName="phases")["Table"]["VectorIndexes"]
        return index["IndexStatus"], index.get("Backfilling")

    assert phase() == ("CREATING", False)
    with pytest.raises(ClientError) as info:
        search(ddb, "phases")
    assert error(info) == ("ValidationException", "The table does not have the specified index: vec-index")
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName="phases", VectorIndexUpdates=[{"Create": vindex("other", attr="o")}])
    assert error(info)[0] == "LimitExceededException"  # one online index change at a time
    slow.clock.now += 5
    assert phase() == ("CREATING", True)
    with pytest.raises(ClientError) as info:
        search(ddb, "phases")
    assert error(info) == ("ValidationException", "Cannot search backfilling vector index: vec-index")
    slow.clock.now += 5
    assert phase() == ("ACTIVE", None)
    assert len(search(ddb, "phases")["SearchResults"]) == 1
    ddb.update_table(TableName="phases", VectorIndexUpdates=[{"Delete": {"IndexName": "vec-index"}}])
    assert phase() == ("DELETING", None)
    slow.clock.now += 5
    assert "VectorIndexes" not in ddb.describe_table(TableName="phases")["Table"]


def test_deleting_in_the_allocation_phase_is_refused(slow):
    ddb = slow.client(retries={"max_attempts": 0})
    ddb.create_table(TableName="alloc", KeySchema=KEYS, AttributeDefinitions=defs(), BillingMode="PAY_PER_REQUEST",
                     VectorIndexes=[vindex("old", attr="o")])
    slow.clock.now += 5
    ddb.update_table(TableName="alloc", VectorIndexUpdates=[{"Create": vindex()}])
    slow.clock.now += 10  # ACTIVE
    ddb.update_table(TableName="alloc", VectorIndexUpdates=[{"Delete": {"IndexName": "old"}}])
    slow.clock.now += 5
    ddb.update_table(TableName="alloc", VectorIndexUpdates=[{"Create": vindex("new", attr="n")}])
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName="alloc", VectorIndexUpdates=[{"Create": vindex("new", attr="n")}])
    assert error(info) == ("ResourceInUseException", "Attempt to change a resource which is still in use: Index is "
                                                     "being created.  Table: alloc Index: new")
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName="alloc", VectorIndexUpdates=[{"Delete": {"IndexName": "new"}}])
    assert error(info) == ("ResourceInUseException", "Attempt to change a resource which is still in use: Index "
                           "creation is in resource allocation phase. Retry deletion during backfilling phase or when "
                           "the index is active. Table: alloc Index: new")
    slow.clock.now += 5  # back-filling: deletion accepted
    ddb.update_table(TableName="alloc", VectorIndexUpdates=[{"Delete": {"IndexName": "new"}}])
    (index,) = [i for i in ddb.describe_table(TableName="alloc")["Table"]["VectorIndexes"] if i["IndexName"] == "new"]
    assert index["IndexStatus"] == "DELETING"
