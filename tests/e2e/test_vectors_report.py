"""SearchVectors and vector-index writes as their own meters: through boto3, then GET
/_dynalocal/report (JSON and text) and `dynalocal report`, on a fake capacity clock."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FakeClock, LiveServer
from test_console import browse  # the console tests' headless Chromium (skips or fails as they do)
from vector_support import needs_vectors

from dynalocal.config import Settings
from dynalocal.engine.context import Context

pytestmark = needs_vectors


@pytest.fixture
def live():
    clock = FakeClock()
    with LiveServer(Context(settings=Settings(), clock=clock)) as server:
        server.clock = clock
        server.ddb = server.client()
        yield server


def get(server, path: str):
    status, _, body = server.raw(None, None, method="GET", path=path)
    assert status == 200, body
    return body.decode()


def vec(values) -> dict:
    return {"L": [{"N": repr(float(v))} for v in values]}


def index(name: str, dims: int) -> dict:
    return {"IndexName": name, "VectorAttribute": {"AttributeName": "emb"}, "Dimensions": dims,
            "DistanceFunction": "EUCLIDEAN", "Projection": {"ProjectionType": "ALL"},
            "SearchSchema": [{"AttributeName": "cat", "SearchSchemaElementType": "HASH"}]}


def test_searches_and_vector_writes_are_their_own_meters(live):
    ddb, clock = live.ddb, live.clock
    ddb.create_table(TableName="docs", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                           {"AttributeName": "cat", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST", VectorIndexes=[index("vec-a", 4), index("vec-b", 4)])
    ddb.create_table(TableName="plain", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    write_bytes = {"vec-a": 0.0, "vec-b": 0.0}
    for i in range(5):
        answer = ddb.put_item(TableName="docs", Item={"id": {"S": f"d{i}"}, "cat": {"S": "x"}, "emb": vec([i, 1, 2, 3])},
                              ReturnConsumedCapacity="INDEXES")
        for name, used in answer["ConsumedCapacity"]["VectorIndexes"].items():
            write_bytes[name] += used["VectorWriteRequestBytes"]
    ddb.put_item(TableName="docs", Item={"id": {"S": "nohash"}, "emb": vec([0, 0, 0, 1])})  # indexed nowhere
    clock.advance(1)
    search_bytes = 0.0
    for _ in range(3):
        answer = ddb.search_vectors(TableName="docs", IndexName="vec-a", SearchVector=vec([0, 1, 2, 3])["L"], TopK=2,
                                    SearchConditionExpression="cat = :c", ExpressionAttributeValues={":c": {"S": "x"}},
                                    ReturnConsumedCapacity="TOTAL")
        search_bytes += answer["ConsumedCapacity"]["VectorSearchRequestBytes"]
    ddb.search_vectors(TableName="docs", IndexName="vec-b", SearchVector=vec([0, 1, 2, 3])["L"], TopK=1,
                       SearchConditionExpression="cat = :c", ExpressionAttributeValues={":c": {"S": "x"}})
    clock.advance(1)

    report = json.loads(get(live, "/_dynalocal/report"))
    tables = {t["table"]: t for t in report["tables"]}
    assert "vectors" not in tables["plain"]
    vectors = tables["docs"]["vectors"]
    searches = vectors["searches"]
    assert searches["unit"] == "VectorSearchRequestBytes"
    assert searches["requests"] == 4 and searches["window_requests"] == 4
    assert searches["bytes"] >= search_bytes + 1024 and searches["bytes"] == searches["window_bytes"]
    assert len(searches["per_second"]["requests"]) == report["window_seconds"]
    assert searches["per_second"]["requests"][-3:] == [0, 4, 0]  # all four in the second before last
    assert set(vectors["writes"]) == {"vec-a", "vec-b"}
    for name, m in vectors["writes"].items():
        assert m["unit"] == "VectorWriteRequestBytes"
        assert (m["requests"], m["bytes"]) == (5, write_bytes[name])
        assert m["per_second"]["requests"][-3:] == [5, 0, 0]

    text = get(live, "/_dynalocal/report?format=text&table=docs")
    assert "== docs: vector indexes" in text
    assert "SearchVectors: 4 requests" in text and "writes to vec-a: 5 requests" in text

    command = [sys.executable, "-m", "dynalocal", "report", "--endpoint", live.url, "--table", "docs"]
    assert "writes to vec-b: 5 requests" in subprocess.run(command, capture_output=True, text=True, timeout=60,
                                                        check=True).stdout


def test_a_write_that_changes_nothing_indexed_is_not_counted(live):
    ddb = live.ddb
    ddb.create_table(TableName="docs", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                           {"AttributeName": "cat", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST", VectorIndexes=[index("vec-a", 2)])
    item = {"id": {"S": "d"}, "cat": {"S": "x"}, "emb": vec([1, 2])}
    ddb.put_item(TableName="docs", Item=item)
    ddb.put_item(TableName="docs", Item=item)  # the same entry: nothing replicated
    ddb.delete_item(TableName="docs", Key={"id": {"S": "d"}})  # the entry removed: one write
    report = json.loads(get(live, "/_dynalocal/report?table=docs"))
    [table] = report["tables"]
    assert table["vectors"]["writes"]["vec-a"]["requests"] == 2
    assert table["vectors"]["searches"]["requests"] == 0


def test_console_shows_the_vector_meters(live, tmp_path):
    ddb = live.ddb
    ddb.create_table(TableName="docs", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST",
                     VectorIndexes=[{k: v for k, v in index("vec-a", 2).items() if k != "SearchSchema"}])
    for i in range(3):
        ddb.put_item(TableName="docs", Item={"id": {"S": f"d{i}"}, "emb": vec([i, 1])})
    for _ in range(2):
        ddb.search_vectors(TableName="docs", IndexName="vec-a", SearchVector=vec([1, 1])["L"], TopK=2)
    done = browse(f"{live.url}/_dynalocal/console?table=docs", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert '<section id="vectors">' in dom  # shown (hidden without vector indexes)
    assert '<tr data-meter="SearchVectors" data-index="" data-requests="2">' in dom
    assert '<tr data-meter="writes to vec-a" data-index="vec-a" data-requests="3">' in dom


@pytest.fixture
def lagging():
    """A server whose writes reach vector indexes 500 ms later, on a capacity clock the test moves."""
    clock = FakeClock()
    ctx = Context(settings=Settings(vector_index_lag=0.5), clock=clock)
    with LiveServer(ctx) as server:
        server.clock, server.ctx = clock, ctx
        server.ddb = server.client()
        yield server


def found(server) -> list[str]:
    answer = server.ddb.search_vectors(TableName="lag", IndexName="vec-a", SearchVector=vec([1, 0])["L"], TopK=10,
                                       ProjectionExpression="id, emb")
    return [f"{r['Item']['id']['S']}:{r['Item']['emb']['L'][0]['N']}" for r in answer["SearchResults"]]


def test_the_index_lag_shows_writes_only_once_due(lagging):
    ddb, clock = lagging.ddb, lagging.clock
    ddb.create_table(TableName="lag", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST",
                     VectorIndexes=[{k: v for k, v in index("vec-a", 2).items() if k != "SearchSchema"}])
    answer = ddb.put_item(TableName="lag", Item={"id": {"S": "a"}, "emb": vec([1, 0])}, ReturnConsumedCapacity="INDEXES")
    assert answer["ConsumedCapacity"]["VectorIndexes"]["vec-a"]["VectorWriteRequestBytes"] == 1024.0  # at write time
    assert found(lagging) == []  # written, not yet indexed
    clock.advance(0.499)
    assert found(lagging) == []
    clock.advance(0.001)
    assert found(lagging) == ["a:1"]
    ddb.put_item(TableName="lag", Item={"id": {"S": "a"}, "emb": vec([2, 0])})
    clock.advance(0.25)
    ddb.put_item(TableName="lag", Item={"id": {"S": "b"}, "emb": vec([3, 0])})
    assert "Item" in ddb.get_item(TableName="lag", Key={"id": {"S": "b"}})  # the table has it at once
    ddb.delete_item(TableName="lag", Key={"id": {"S": "a"}})
    assert found(lagging) == ["a:1"]  # the old entry until the update is due
    clock.advance(0.25)
    assert found(lagging) == ["a:2"]  # the update is due; the later writes are not
    clock.advance(0.25)
    assert found(lagging) == ["b:3"]  # the delete and the put, in write order


def test_the_lag_queue_holds_only_writes_not_yet_due(lagging):
    ddb, clock = lagging.ddb, lagging.clock
    ddb.create_table(TableName="lag", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST",
                     VectorIndexes=[{k: v for k, v in index("vec-a", 2).items() if k != "SearchSchema"}])
    for i in range(40):  # never searched: later writes apply what is due
        ddb.put_item(TableName="lag", Item={"id": {"S": "a"}, "emb": vec([i, 1])})
        clock.advance(0.1)
    pending = lagging.ctx.db.tables["lag"].table.vectors["vec-a"].pending
    assert len(pending) <= 6
    clock.advance(0.5)
    assert found(lagging) == ["a:39"] and not pending
