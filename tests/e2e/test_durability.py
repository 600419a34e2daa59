"""Persistence with --data-dir: crashes (SIGKILL) under load, damaged log tails, metadata across restarts, reset."""
from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer
from server_process import ServerProcess, log_frames, scan_all

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.http.durability import Durability

BATCH = 25
TRANSACTION = 10


def digest(payload: str) -> str:
    return hashlib.sha256(payload.encode()).hexdigest()


def create_items_table(client, name: str = "items") -> str:
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "sk", "AttributeType": "N"}])
    return name


def item(pk: str, sk: int, payload: str, group: str | None = None) -> dict:
    out = {"pk": {"S": pk}, "sk": {"N": str(sk)}, "payload": {"S": payload}, "digest": {"S": digest(payload)}}
    if group is not None:
        out["group"] = {"S": group}
    return out


class Writers:
    """Threads writing checkable items (single puts and 25-item batches) until the server dies."""

    def __init__(self, server: ServerProcess, table: str, threads: int, tag: str) -> None:
        self.server, self.table, self.tag = server, table, tag
        self.acked_items: dict[tuple[str, int], str] = {}
        self.acked_groups: set[str] = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(threads)]

    def run(self, n: int) -> None:
        client = self.server.client()
        rng = random.Random(n)
        i = 0
        while not self.stop.is_set():
            i += 1
            payload = f"{self.tag}-{n}-{i}-" + "x" * rng.randint(0, 300)
            try:
                if i % 3:
                    pk = f"{self.tag}-single-{n}-{i}"
                    client.put_item(TableName=self.table, Item=item(pk, i, payload))
                    with self.lock:
                        self.acked_items[(pk, i)] = payload
                elif i % 2:
                    group = f"{self.tag}-batch-{n}-{i}"
                    requests = [{"PutRequest": {"Item": item(group, s, f"{payload}-{s}", group)}} for s in range(BATCH)]
                    out = client.batch_write_item(RequestItems={self.table: requests})
                    assert not out.get("UnprocessedItems")
                    with self.lock:
                        self.acked_groups.add(group)
                else:
                    group = f"{self.tag}-transaction-{n}-{i}"
                    client.transact_write_items(TransactItems=[
                        {"Put": {"TableName": self.table, "Item": item(group, s, f"{payload}-{s}", group)}}
                        for s in range(TRANSACTION)])
                    with self.lock:
                        self.acked_groups.add(group)
            except Exception:  # the server was killed mid-request: this write is unacknowledged
                if not self.stop.is_set():
                    time.sleep(0.01)
                if self.server.proc is None:
                    return

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)

    def acknowledged(self) -> int:
        with self.lock:
            return len(self.acked_items) + len(self.acked_groups)

    def wait_for(self, count: int, timeout: float = 120.0) -> None:
        """Until `count` writes are acknowledged (however slow the machine), then a random moment more."""
        deadline = time.monotonic() + timeout
        target = count + random.randrange(count // 2)
        while self.acknowledged() < target:
            assert time.monotonic() < deadline, f"only {self.acknowledged()} writes acknowledged in {timeout} s"
            time.sleep(0.01)


def check_recovered(items: list[dict], writers: list[Writers]) -> None:
    """Acknowledged writes are all there; nothing is half there; every item is intact."""
    by_key = {(i["pk"]["S"], int(i["sk"]["N"])): i for i in items}
    size = {"batch": BATCH, "transaction": TRANSACTION}
    groups: dict[str, int] = {}
    for it in items:
        assert it["digest"]["S"] == digest(it["payload"]["S"]), f"corrupt item {it['pk']}"
        if "group" in it:
            groups[it["group"]["S"]] = groups.get(it["group"]["S"], 0) + 1
    for w in writers:
        for key, payload in w.acked_items.items():
            assert key in by_key, f"acknowledged write {key} lost"
            assert by_key[key]["payload"]["S"] == payload
        for group in w.acked_groups:
            assert groups.get(group) == size[group.split("-")[1]], f"acknowledged {group} has {groups.get(group)} items"
    for group, count in groups.items():
        assert count == size[group.split("-")[1]], f"{group} is half present: {count} items"


def test_sigkill_under_load_loses_no_acknowledged_write_and_leaves_nothing_half_written(tmp_path):
    """Three crash/restart rounds with writers running, snapshots taken meanwhile (tiny --snapshot-mb).

    Each round kills the server once enough writes were acknowledged to pass the snapshot threshold
    (about 100 writes of ~3.5 KB on average), not after a fixed time: a busy machine only makes it slower."""
    server = ServerProcess(tmp_path / "data", "--throttling", "off", "--snapshot-mb", "0.25",
                           log_path=tmp_path / "server.log")
    rounds: list[Writers] = []
    with server:
        create_items_table(server.client())
        for round_no in range(3):
            with Writers(server, "items", threads=6, tag=f"r{round_no}") as writers:
                rounds.append(writers)
                writers.wait_for(100)
                server.kill()
            server.start()
            items = scan_all(server.client(), "items")
            check_recovered(items, rounds)
        log = server.log()
    assert "snapshot" in log and "Traceback" not in log
    assert len(rounds) == 3


def test_writes_and_the_reads_that_see_them_are_answered_only_once_durable(tmp_path):
    """With the log's fsync held back, a write is not acknowledged and a read that sees it is not answered."""
    ctx = Context(settings=Settings(data_dir=str(tmp_path / "data"), sync="batch"))
    journal = Durability.open(ctx)
    with LiveServer(ctx) as live:
        writer, reader, other = live.client(), live.client(), live.client()
        create_items_table(writer)
        other.put_item(TableName="items", Item=item("unrelated", 1, "v"))
        gate = threading.Event()
        sync = journal.commits.writer.sync
        journal.commits.writer.sync = lambda: (gate.wait(30), sync())
        done: dict[str, object] = {}
        write = threading.Thread(target=lambda: done.setdefault("write", writer.put_item(
            TableName="items", Item=item("held", 1, "v"))))
        write.start()
        table = ctx.db.tables["items"].table
        deadline = time.monotonic() + 60
        while not any(b"held" in k for p in table.partitions for k, _ in p.items()):
            assert time.monotonic() < deadline, "the write never reached the server"
            time.sleep(0.01)
        read = threading.Thread(target=lambda: done.setdefault("read", reader.get_item(
            TableName="items", Key={"pk": {"S": "held"}, "sk": {"N": "1"}})))
        read.start()
        while not any(len(t._callbacks) >= 2 for _, t, _ in list(journal.commits._inflight)):  # the read waits too
            assert time.monotonic() < deadline, "the read never reached the server"
            time.sleep(0.01)
        assert done == {}, "answered before the write was durable"
        gate.set()
        write.join(60)
        read.join(60)
        assert "Item" in done["read"] and done["write"]["ResponseMetadata"]["HTTPStatusCode"] == 200


def last_segment(data_dir: Path) -> Path:
    return max((p for p in data_dir.glob("wal-*.log") if p.stat().st_size > 8), key=lambda p: p.name)


def write_then_kill(server: ServerProcess, count: int) -> list[dict]:
    client = server.client()
    create_items_table(client)
    written = [item(f"k{i}", i, f"value-{i}") for i in range(count)]
    for it in written:
        client.put_item(TableName="items", Item=it)
    server.kill()
    return written


@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip"])
def test_damaged_log_tail_is_cut_with_one_log_line_and_earlier_data_kept(tmp_path, damage):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        written = write_then_kill(server, 20)
        segment = last_segment(data)
        raw = log_frames(segment)
        if damage == "garbage":
            segment.write_bytes(raw + os.urandom(5000))
            expected = written
        elif damage == "truncate":  # cut the last group (the last put) mid-record
            segment.write_bytes(raw[:-7])
            expected = written[:-1]
        else:  # one flipped bit inside the last group
            segment.write_bytes(raw[:-30] + bytes([raw[-30] ^ 0x04]) + raw[-29:])
            expected = written[:-1]
        server.start()
        items = scan_all(server.client(), "items")
        assert sorted((i["pk"]["S"], i["payload"]["S"]) for i in items) == \
            sorted((i["pk"]["S"], i["payload"]["S"]) for i in expected)
        lines = [line for line in server.log().splitlines() if "damaged tail" in line]
        assert len(lines) == 1 and segment.name in lines[0] and "WARNING" in lines[0]
        # the server keeps working, and the cut log accepts new writes that survive another crash
        server.client().put_item(TableName="items", Item=item("after", 1, "after the cut"))
        server.kill()
        server.start()
        assert len(scan_all(server.client(), "items")) == len(expected) + 1
        assert sum("damaged tail" in line for line in server.log().splitlines()) == 1


def configure_rich_table(client) -> str:
    name = "rich"
    client.create_table(
        TableName=name, BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 7, "WriteCapacityUnits": 3},
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                              for n, t in (("pk", "S"), ("sk", "N"), ("g", "S"), ("l", "N"))],
        GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                 "Projection": {"ProjectionType": "KEYS_ONLY"},
                                 "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 2}}],
        LocalSecondaryIndexes=[{"IndexName": "by-l", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                                                    {"AttributeName": "l", "KeyType": "RANGE"}],
                                "Projection": {"ProjectionType": "ALL"}}],
        Tags=[{"Key": "team", "Value": "storage"}])
    arn = client.describe_table(TableName=name)["Table"]["TableArn"]
    for i in range(30):
        client.put_item(TableName=name, Item={"pk": {"S": f"p{i % 3}"}, "sk": {"N": str(i)}, "g": {"S": f"g{i % 5}"},
                                              "l": {"N": str(100 - i)}, "h": {"S": f"h{i % 2}"}, "exp": {"N": "1"}})
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "test"}])
    client.untag_resource(ResourceArn=arn, TagKeys=["team"])
    client.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
    client.update_table(TableName=name, AttributeDefinitions=[{"AttributeName": "h", "AttributeType": "S"}],
                        GlobalSecondaryIndexUpdates=[{"Create": {
                            "IndexName": "by-h", "KeySchema": [{"AttributeName": "h", "KeyType": "HASH"}],
                            "Projection": {"ProjectionType": "ALL"},
                            "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}}])
    client.update_table(TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 9, "WriteCapacityUnits": 4})
    client.update_continuous_backups(TableName=name,
                                     PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    for i in range(0, 30, 4):
        client.delete_item(TableName=name, Key={"pk": {"S": f"p{i % 3}"}, "sk": {"N": str(i)}})
    client.update_item(TableName=name, Key={"pk": {"S": "p1"}, "sk": {"N": "1"}}, UpdateExpression="SET g = :g",
                       ExpressionAttributeValues={":g": {"S": "moved"}})
    # a table dropped, and one dropped and re-created with other contents
    for gone in ("gone", "again"):
        client.create_table(TableName=gone, BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
        client.put_item(TableName=gone, Item={"id": {"S": "old"}})
        client.delete_table(TableName=gone)
    client.create_table(TableName="again", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
    client.put_item(TableName="again", Item={"id": {"S": "new"}})
    return name


def observable_state(client, name: str) -> dict:
    """What clients can see of a table: description, tags, TTL, backups, items, and index queries."""
    table = client.describe_table(TableName=name)["Table"]
    arn = table["TableArn"]
    index_queries = {}
    for g in ("g0", "g1", "moved"):
        index_queries[g] = sorted(i["sk"]["N"] for i in client.query(
            TableName=name, IndexName="by-g", KeyConditionExpression="g = :g",
            ExpressionAttributeValues={":g": {"S": g}})["Items"])
    index_queries["h1"] = sorted(i["sk"]["N"] for i in client.query(
        TableName=name, IndexName="by-h", KeyConditionExpression="h = :h",
        ExpressionAttributeValues={":h": {"S": "h1"}})["Items"])
    index_queries["lsi"] = [i["l"]["N"] for i in client.query(
        TableName=name, IndexName="by-l", KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p2"}})["Items"]]
    return {
        "table": table,
        "tags": client.list_tags_of_resource(ResourceArn=arn)["Tags"],
        "ttl": client.describe_time_to_live(TableName=name)["TimeToLiveDescription"],
        "backups": client.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"][
            "PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"],
        "items": sorted(scan_all(client, name), key=lambda i: (i["pk"]["S"], int(i["sk"]["N"]))),
        "indexes": index_queries,
        "tables": client.list_tables()["TableNames"],
        "again": scan_all(client, "again"),
    }


@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_restart_keeps_tables_indexes_ttl_tags_and_items(tmp_path, stop):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        name = configure_rich_table(server.client())
        before = observable_state(server.client(), name)
        assert before["tags"] == [{"Key": "env", "Value": "test"}] and before["ttl"]["TimeToLiveStatus"] == "ENABLED"
        assert before["indexes"]["moved"] == ["1"] and before["tables"] == ["again", "rich"]
        if stop == "sigkill":
            server.kill()
        else:
            assert server.stop() in (0, -15)
            assert [p.name for p in data.iterdir() if p.name.startswith("snapshot")], "no snapshot at shutdown"
        server.start()
        assert observable_state(server.client(), name) == before
        assert "recovered 2 tables" in server.log()


def test_ttl_deletions_by_the_background_sweeper_are_journaled(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, "--ttl-interval", "0.05", log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        create_items_table(client)
        client.update_time_to_live(TableName="items", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
        past, future = str(int(time.time()) - 60), str(int(time.time()) + 3600)
        for i in range(10):
            client.put_item(TableName="items", Item={**item(f"k{i}", i, "v"), "exp": {"N": past if i % 2 else future}})
        deadline = time.monotonic() + 60
        while len(scan_all(client, "items")) != 5:
            assert time.monotonic() < deadline, "the sweeper did not delete the expired items"
            time.sleep(0.05)
        # The sweep's deletions were appended to the log (no one waits for them) at the latest when the
        # Scan that saw them began, and that Scan was answered once they were durable: safe to kill now.
        server.kill()
        server.args = ("--ttl-interval", "3600")  # after restart, only the log can have deleted them
        server.start()
        assert sorted(i["pk"]["S"] for i in scan_all(server.client(), "items")) == ["k0", "k2", "k4", "k6", "k8"]


def test_reset_drops_everything_including_persisted_state(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        create_items_table(client, "one")
        create_items_table(client, "two")
        for i in range(50):
            client.put_item(TableName="one", Item=item("k", i, "x" * 500))
        status, body = server.post("/_dynalocal/reset")
        assert status == 200 and b'"tables_dropped":2' in body
        assert client.list_tables()["TableNames"] == []
        assert sum(p.stat().st_size for p in data.iterdir()) < 200  # an empty snapshot and an empty log
        create_items_table(client, "three")
        server.kill()
        server.start()
        assert server.client().list_tables()["TableNames"] == ["three"]


def test_a_second_server_on_the_same_data_directory_is_refused(tmp_path):
    data = tmp_path / "data"
    with ServerProcess(data, log_path=tmp_path / "first.log") as first:
        create_items_table(first.client())
        second = ServerProcess(data, log_path=tmp_path / "second.log")
        with pytest.raises(RuntimeError, match="in use by another dynalocal server"):
            second.start()
        assert first.client().list_tables()["TableNames"] == ["items"]


def test_a_damaged_snapshot_stops_start_up_with_a_clear_message(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_items_table(server.client())
        assert server.stop() in (0, -15)
        (snapshot,) = data.glob("snapshot-*.snap")
        (data / "wal-00000000.log").unlink()  # no fallback generation (the log before it) to start from
        snapshot.write_bytes(snapshot.read_bytes()[:-4])
        with pytest.raises(RuntimeError, match="cannot use --data-dir .*incomplete|cannot use --data-dir .*torn"):
            server.start()


def test_no_reset_refuses_with_403(tmp_path):
    with ServerProcess(None, "--no-reset", log_path=tmp_path / "server.log") as server:
        create_items_table(server.client(), "kept")
        status, body = server.post("/_dynalocal/reset")
        assert status == 403 and b"AccessDeniedException" in body
        assert server.client().list_tables()["TableNames"] == ["kept"]


def test_in_memory_reset_works_without_a_data_directory(tmp_path):
    with ServerProcess(None, log_path=tmp_path / "server.log") as server:
        create_items_table(server.client(), "gone")
        assert server.post("/_dynalocal/reset")[0] == 200
        assert server.client().list_tables()["TableNames"] == []
        with pytest.raises(ClientError):
            server.client().describe_table(TableName="gone")
