"""Stream records survive restarts and kill -9 with --data-dir, like the item writes they describe."""
from __future__ import annotations

import pytest

from server_process import ServerProcess
from stream_reader import all_shards, read_stream, replay, streams_client


def _write(client, table: str, rounds: range) -> None:
    for r in rounds:
        for i in range(30):
            client.put_item(TableName=table, Item={"pk": {"S": f"k{i}"}, "n": {"N": str(r)}, "pad": {"S": "x" * 300}})
        client.delete_item(TableName=table, Key={"pk": {"S": f"k{r}"}})


def _table_state(client, table: str) -> dict:
    items = client.scan(TableName=table)["Items"]
    return {(("pk", (("S", item["pk"]["S"]),)),): item for item in items}


@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_stream_survives_restart_with_lineage_and_sequence(tmp_path, stop):
    data = tmp_path / "data"
    # A tiny snapshot threshold: the restart loads a snapshot (streams file included) plus the log after it.
    server = ServerProcess(data, "--throttling", "off", "--snapshot-mb", "0.02", log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        table = "durable"
        arn = client.create_table(
            TableName=table, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            ProvisionedThroughput={"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            Tags=[{"Key": "dynalocal:partitions", "Value": "2"}])["TableDescription"]["LatestStreamArn"]
        _write(client, table, range(0, 3))
        client.tag_resource(ResourceArn=client.describe_table(TableName=table)["Table"]["TableArn"],
                            Tags=[{"Key": "dynalocal:partitions", "Value": "4"}])
        _write(client, table, range(3, 6))
        streams = streams_client(server.url)
        before = read_stream(streams, arn)
        shards_before = all_shards(streams, arn)
        if stop == "sigkill":
            server.kill()
        else:
            assert server.stop() in (0, -15)  # uvicorn re-raises SIGTERM after a clean shutdown
        server.start()
        client = server.client()
        streams = streams_client(server.url)
        assert all_shards(streams, arn) == shards_before
        assert read_stream(streams, arn) == before
        _write(client, table, range(6, 7))
        after = read_stream(streams, arn)
        known = {r["eventID"] for r in before}
        assert [r for r in after if r["eventID"] in known] == before
        new_seqs = [int(r["dynamodb"]["SequenceNumber"]) for r in after if r["eventID"] not in known]
        assert new_seqs and min(new_seqs) > max(int(r["dynamodb"]["SequenceNumber"]) for r in before)
        assert replay(after) == _table_state(client, table)
        assert "snapshot" in server.log()


def test_writes_that_cannot_be_logged_leave_no_stream_record(tmp_path):
    from test_rollback import Faulty

    with Faulty(tmp_path) as f:
        arn = f.client.create_table(
            TableName="rolled", BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})["TableDescription"][
            "LatestStreamArn"]
        for i in range(3):
            f.client.put_item(TableName="rolled", Item={"pk": {"S": f"k{i}"}, "n": {"N": "0"}})
        streams = streams_client(f.live.url)
        before = read_stream(streams, arn)
        f.full = True
        f.failing(lambda: f.client.put_item(TableName="rolled", Item={"pk": {"S": "k0"}, "n": {"N": "1"}}))
        f.failing(lambda: f.client.delete_item(TableName="rolled", Key={"pk": {"S": "k1"}}))
        f.failing(lambda: f.client.batch_write_item(RequestItems={"rolled": [
            {"PutRequest": {"Item": {"pk": {"S": f"b{i}"}}}} for i in range(3)]}))
        f.full = False
        assert read_stream(streams, arn) == before
        f.client.put_item(TableName="rolled", Item={"pk": {"S": "after"}})
        after = read_stream(streams, arn)
        assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in after if r not in before] == ["after"]
