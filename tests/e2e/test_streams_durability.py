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


def test_sigkill_under_load_every_acknowledged_write_has_its_record_and_every_record_its_write(tmp_path):
    import threading
    import time

    server = ServerProcess(tmp_path / "data", "--throttling", "off", "--snapshot-mb", "0.05",
                           log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        arn = client.create_table(
            TableName="load", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})["TableDescription"][
            "LatestStreamArn"]
        acked: dict[str, list[int]] = {}  # key -> acknowledged counters
        lock, stop = threading.Lock(), threading.Event()

        def write(n: int) -> None:
            writer = server.client()
            i = 0
            while not stop.is_set():
                i += 1
                key = f"w{n}-{i % 7}"
                try:
                    writer.put_item(TableName="load", Item={"pk": {"S": key}, "i": {"N": str(i)}, "pad": {"S": "p" * 200}})
                except Exception:  # killed mid-request: unacknowledged
                    return
                with lock:
                    acked.setdefault(key, []).append(i)

        threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(3)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while len(acked) < 21 or sum(map(len, acked.values())) < 300:
            assert time.monotonic() < deadline, "too few writes acknowledged"
            time.sleep(0.01)
        server.kill()
        stop.set()
        for thread in threads:
            thread.join(30)
        server.start()
        client = server.client()
        records = read_stream(streams_client(server.url), arn)
        streamed: dict[str, list[int]] = {}
        for record in records:
            streamed.setdefault(record["dynamodb"]["Keys"]["pk"]["S"], []).append(
                int(record["dynamodb"]["NewImage"]["i"]["N"]))
        table = {item["pk"]["S"]: int(item["i"]["N"]) for item in client.scan(TableName="load")["Items"]}
        assert set(streamed) == set(table)
        for key, values in streamed.items():
            assert values == sorted(values)  # in order
            assert values[-1] == table[key]  # the last record is the item as recovered: no record without its write
            assert set(acked.get(key, ())) <= set(values)  # every acknowledged write has its record
