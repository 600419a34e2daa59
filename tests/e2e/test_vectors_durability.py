"""Vector indexes with --data-dir: definitions survive SIGKILL and SIGTERM restarts and the index is
rebuilt from the items; TTL expiry removes entries; `aws dynamodb search-vectors` through the CLI."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from server_process import ServerProcess
from test_partiql_cli import aws_command
from vector_support import needs_vectors

pytestmark = needs_vectors

MODEL = Path(__file__).resolve().parents[2] / "dynalocal" / "engine" / "models" / "dynamodb.json.gz"

INDEX = {"IndexName": "vec", "VectorAttribute": {"AttributeName": "emb"}, "Dimensions": 2,
         "DistanceFunction": "EUCLIDEAN", "Projection": {"ProjectionType": "ALL"},
         "SearchSchema": [{"AttributeName": "cat", "SearchSchemaElementType": "HASH"}]}


def setup(client) -> None:
    client.create_table(TableName="docs", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                              {"AttributeName": "cat", "AttributeType": "S"}],
                        VectorIndexes=[INDEX])
    for i in range(20):
        client.put_item(TableName="docs", Item={"id": {"S": f"d{i}"}, "cat": {"S": "ab"[i % 2]},
                                                "emb": {"L": [{"N": str(i)}, {"N": "0.1"}]}})
    client.delete_item(TableName="docs", Key={"id": {"S": "d4"}})
    client.update_table(TableName="docs", VectorIndexUpdates=[{"Create": {
        key: value for key, value in {**INDEX, "IndexName": "second", "DistanceFunction": "DOT_PRODUCT"}.items()
        if key != "SearchSchema"}}])


def state(client) -> dict:
    searches = {}
    for cat in "ab":
        out = client.search_vectors(TableName="docs", IndexName="vec", SearchVector=[{"N": "3"}, {"N": "0"}], TopK=4,
                                    SearchConditionExpression="cat = :c",
                                    ExpressionAttributeValues={":c": {"S": cat}})["SearchResults"]
        searches[cat] = [(r["Item"]["id"]["S"], r["Score"]) for r in out]
    second = client.search_vectors(TableName="docs", IndexName="second", SearchVector=[{"N": "1"}, {"N": "0"}],
                                   TopK=3)["SearchResults"]
    indexes = client.describe_table(TableName="docs")["Table"]["VectorIndexes"]
    return {"searches": searches, "second": [r["Item"]["id"]["S"] for r in second],
            "indexes": [(i["IndexName"], i["IndexStatus"], i["ItemCount"]) for i in indexes]}


@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_definitions_and_index_survive_a_restart(tmp_path, stop):
    server = ServerProcess(tmp_path / "data", log_path=tmp_path / "server.log")
    with server:
        setup(server.client())
        before = state(server.client())
        assert before["indexes"] == [("vec", "ACTIVE", 19), ("second", "ACTIVE", 19)]
        assert before["searches"]["b"][0][0] == "d3" and before["second"] == ["d19", "d18", "d17"]
        if stop == "sigkill":
            server.kill()
        else:
            assert server.stop() in (0, -15)
        server.start()
        assert state(server.client()) == before


def test_ttl_expiry_removes_the_entry(tmp_path):
    server = ServerProcess(None, "--ttl-interval", "0.05", log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        setup(client)
        client.update_time_to_live(TableName="docs", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
        client.update_item(TableName="docs", Key={"id": {"S": "d3"}}, UpdateExpression="SET exp = :e",
                           ExpressionAttributeValues={":e": {"N": str(int(time.time()) - 10)}})
        deadline = time.monotonic() + 30
        while state(client)["searches"]["b"][0][0] == "d3":
            assert time.monotonic() < deadline, "the expired item stayed in the index"
            time.sleep(0.05)
        assert "d3" not in [k for k, _ in state(client)["searches"]["b"]]


def aws(server, data_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The AWS CLI, given the service model dynalocal ships (its own bundled one predates SearchVectors)."""
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_PAGER": "", "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
           "AWS_DATA_PATH": str(data_path)}
    return subprocess.run([aws_command(), "dynamodb", *args, "--endpoint-url", server.url, "--output", "json"],
                          capture_output=True, text=True, env=env, timeout=60)


def test_search_vectors_from_the_cli(server, tmp_path):
    model = tmp_path / "dynamodb" / "2012-08-10"
    model.mkdir(parents=True)
    (model / "service-2.json").write_bytes(gzip.decompress(MODEL.read_bytes()))
    client = server.client()
    client.create_table(TableName="cli-vectors", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                              {"AttributeName": "cat", "AttributeType": "S"}],
                        VectorIndexes=[INDEX])
    for i in range(3):
        client.put_item(TableName="cli-vectors", Item={"id": {"S": f"c{i}"}, "cat": {"S": "a"},
                                                       "emb": {"L": [{"N": str(i)}, {"N": "0"}]}})
    done = aws(server, tmp_path, "search-vectors", "--table-name", "cli-vectors", "--index-name", "vec",
               "--search-vector", '[{"N": "2"}, {"N": "0"}]', "--top-k", "2",
               "--search-condition-expression", "cat = :c", "--expression-attribute-values", '{":c": {"S": "a"}}',
               "--return-consumed-capacity", "TOTAL")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [(r["Item"]["id"]["S"], r["Score"]) for r in out["SearchResults"]] == [("c2", 0.0), ("c1", 1.0)]
    assert out["ConsumedCapacity"]["VectorSearchRequestBytes"] == 1024.0
    done = aws(server, tmp_path, "search-vectors", "--table-name", "cli-vectors", "--index-name", "vec",
               "--search-vector", '[{"N": "2"}]', "--top-k", "2",
               "--search-condition-expression", "cat = :c", "--expression-attribute-values", '{":c": {"S": "a"}}')
    assert done.returncode != 0
    assert "Input search vector dimension 1 does not match vector index dimension 2" in done.stderr
    client.delete_table(TableName="cli-vectors")
