"""The data directory cannot lose its base silently: a missing snapshot, a removed LOCK, failed snapshots."""
from __future__ import annotations

import errno
import itertools
import subprocess
import sys

import boto3
import pytest
from conftest import LiveServer
from server_process import ServerProcess, scan_all

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.http.durability import Durability
from dynalocal.journal import snapshot, streamlog
from dynalocal.journal.recovery import recover
from dynalocal.journal.wal import MAGIC
from dynalocal.storage.database import Database


def create_table(client, name: str = "items") -> None:
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])


def put(client, keys: range, table: str = "items") -> None:
    for i in keys:
        client.put_item(TableName=table, Item={"pk": {"S": f"k{i:04d}"}})


def test_a_deleted_snapshot_stops_start_up_naming_it(tmp_path):
    """The audit's reproduction: delete snapshot-N, keep wal-N, start: refused, not 0 tables served."""
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        put(server.client(), range(20))
        assert server.stop() in (0, -15)
        server.start()
        put(server.client(), range(20, 30))
        server.kill()
        (snapshot,) = data.glob("snapshot-*.snap")
        snapshot.unlink()
        (data / "wal-00000000.log").unlink()  # the fallback generation (the log before it) gone too
        before = {p.name: p.read_bytes() for p in data.iterdir()}
        with pytest.raises(RuntimeError) as refused:
            server.start()
        message = str(refused.value)
        assert f"cannot use --data-dir {data}" in message and f"missing: {snapshot.name}" in message
        assert {p.name: p.read_bytes() for p in data.iterdir()} == before, "start-up changed the directory"


def test_start_ups_without_writes_leave_no_gap_in_the_log(tmp_path):
    """Restarts that write nothing (killed or stopped) never make a later log look as if its base were lost."""
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        server.kill()
        server.start()
        server.kill()
        server.start()
        create_table(server.client())
        put(server.client(), range(5))
        server.kill()
        server.start()
        assert server.stop() in (0, -15)
        server.start()
        server.kill()
        server.start()
        put(server.client(), range(5, 8))
        server.kill()
        server.start()
        assert len(scan_all(server.client(), "items")) == 8


def test_removing_the_lock_file_does_not_let_a_second_server_in(tmp_path):
    """The audit's reproduction: server A running, `rm data/LOCK`, server B on the same directory: refused."""
    data = tmp_path / "data"
    with ServerProcess(data, log_path=tmp_path / "first.log") as first:
        create_table(first.client())
        put(first.client(), range(20))
        for path in data.glob("LOCK*"):
            path.unlink()
        second = ServerProcess(data, log_path=tmp_path / "second.log")
        with pytest.raises(RuntimeError, match="in use by another dynalocal server"):
            second.start()
        done = subprocess.run([sys.executable, "-m", "dynalocal", "repair", "--data-dir", str(data)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "in use by another dynalocal server" in done.stdout
        assert len(scan_all(first.client(), "items")) == 20


@pytest.mark.parametrize("part", ["streams", "tables"])
def test_a_snapshot_failing_on_a_full_disk_leaves_no_temporary_file(tmp_path, monkeypatch, part):
    """ENOSPC injected (in-process) while a snapshot file is written: its .tmp file is removed, the log keeps all."""
    data = tmp_path / "data"
    ctx = Context(settings=Settings(data_dir=str(data)))
    Durability.open(ctx)
    with LiveServer(ctx) as live:
        client = live.client()
        client.create_table(TableName="items", BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
        put(client, range(50))
        module, name = (streamlog, "_frames") if part == "streams" else (snapshot, "_span_frames")
        original = getattr(module, name)

        def full_disk(*args):
            yield from itertools.islice(original(*args), 1)  # one frame reaches the file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(module, name, full_disk)
    assert not list(data.glob("*.tmp")), "a failed snapshot left its temporary file"
    monkeypatch.undo()
    db = Database()
    recover(data, db)
    assert db.tables["items"].table.item_count == 50


def test_left_over_temporary_files_are_removed_at_start_up(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        server.kill()
        (data / "streams-00000001.dat.tmp").write_bytes(b"x" * 100)
        (data / "snapshot-00000001.snap.tmp").write_bytes(b"x" * 100)
        server.start()
        assert not list(data.glob("*.tmp"))
        assert server.client().list_tables()["TableNames"] == ["items"]


def repair(data) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dynalocal", "repair", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=120)


def test_records_of_a_table_whose_creation_repair_dropped_are_reported_as_lost_to_damage(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        put(server.client(), range(10))
        server.kill()
        (segment,) = [p for p in data.glob("wal-*.log") if p.stat().st_size > 8]
        raw = bytearray(segment.read_bytes())
        raw[8 + 8 + 4] ^= 0x10  # inside the first group: the table's creation
        segment.write_bytes(bytes(raw))
        assert repair(data).returncode == 0
        server.start()
        assert server.client().list_tables()["TableNames"] == []
        started = server.log().split("=== start")[-1]
        assert "10 log records of tables lost to damage skipped" in started
        assert "no longer exist" not in started and "0 records of deleted tables skipped" in started


def test_repair_salvages_a_snapshot_with_a_flipped_bit_and_keeps_the_original(tmp_path):
    """The audit's reproduction: one bit flipped in the snapshot; start-up refuses, repair restores what is intact."""
    data = tmp_path / "data"
    server = ServerProcess(data, "--throttling", "off", log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        create_table(server.client(), "other")
        put(server.client(), range(300))
        put(server.client(), range(5), "other")
        assert server.stop() in (0, -15)
        (snap,) = data.glob("snapshot-*.snap")
        (data / "wal-00000000.log").unlink()  # no fallback generation (the log before it) to start from
        raw = bytearray(snap.read_bytes())
        raw[len(raw) // 2] ^= 0x04
        snap.write_bytes(bytes(raw))
        with pytest.raises(RuntimeError, match=f"cannot use --data-dir .*{snap.name}"):
            server.start()
        done = repair(data)
        assert done.returncode == 0, done.stderr
        assert f"{snap.name}: damaged (" in done.stdout and "nothing changed" not in done.stdout
        assert "restored 2 tables and" in done.stdout and f"kept as {snap.name}.damaged" in done.stdout
        assert (data / (snap.name + ".damaged")).read_bytes() == bytes(raw)
        server.start()
        client = server.client()
        assert sorted(client.list_tables()["TableNames"]) == ["items", "other"]
        restored = {i["pk"]["S"] for i in scan_all(client, "items")}
        assert restored < {f"k{i:04d}" for i in range(300)}  # the damaged chunk's items are lost, no other
        assert len(scan_all(client, "other")) == 5
        server.kill()
        assert repair(data).stdout.strip().endswith("has no damage; nothing changed")


def test_repair_stands_in_for_a_missing_snapshot_and_says_what_is_lost(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        assert server.stop() in (0, -15)
        server.start()
        create_table(server.client(), "later")
        put(server.client(), range(3), "later")
        put(server.client(), range(4))
        server.kill()
        (snap,) = data.glob("snapshot-*.snap")
        snap.unlink()
        (data / "wal-00000000.log").unlink()  # the fallback generation (the log before it) gone too
        done = repair(data)
        assert done.returncode == 0 and f"{snap.name} was missing: wrote an empty one" in done.stdout
        server.start()
        assert server.client().list_tables()["TableNames"] == ["later"]
        assert "4 log records of tables lost to damage skipped" in server.log().split("=== start")[-1]


def stream_records(server: ServerProcess) -> list[str]:
    """The keys of every record in the table `items`'s stream, in order (all shards from their trim horizon)."""
    session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    streams = session.client("dynamodbstreams", endpoint_url=server.url)
    arn = server.client().describe_table(TableName="items")["Table"]["LatestStreamArn"]
    keys = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator)
            keys += [r["dynamodb"]["Keys"]["pk"]["S"] for r in page["Records"]]
            iterator = page.get("NextShardIterator") if page["Records"] else None
    return keys


def stream_snapshot(server: ServerProcess) -> None:
    """Stop `server` once its newest stream snapshot holds 40 records of table `items`."""
    server.client().create_table(
        TableName="items", BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    put(server.client(), range(40))
    assert server.stop() in (0, -15)


def test_repair_salvages_a_stream_snapshot_with_a_flipped_bit(tmp_path):
    """One bit flipped in the newest stream snapshot: start-up refuses; repair keeps every intact record, sets the
    original aside, says what it dropped and exits 0; start-up then serves the items and the records kept."""
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        stream_snapshot(server)
        (streams,) = data.glob("streams-*.dat")
        raw = bytearray(streams.read_bytes())
        raw[len(raw) // 2] ^= 0x04
        streams.write_bytes(bytes(raw))
        with pytest.raises(RuntimeError, match=streams.name):
            server.start()
        done = repair(data)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "nothing changed" not in done.stdout and f"{streams.name}: checksum mismatch" in done.stdout
        assert "records from it, dropped " in done.stdout and "bytes at offset" in done.stdout
        assert f"kept as {streams.name}.damaged" in done.stdout
        assert (data / (streams.name + ".damaged")).read_bytes() == bytes(raw)
        server.start()
        assert len(scan_all(server.client(), "items")) == 40  # tables and items are kept
        kept = stream_records(server)
        assert 30 <= len(kept) < 40 and len(set(kept)) == len(kept)  # one record (or a few) lost, no other
        assert set(kept) < {f"k{i:04d}" for i in range(40)}
        put(server.client(), range(40, 42))
        assert {"k0040", "k0041"} <= set(stream_records(server))  # the stream goes on
        server.kill()
        assert repair(data).stdout.strip().endswith("has no damage; nothing changed")


def test_repair_writes_an_empty_stream_snapshot_when_nothing_in_it_can_be_read(tmp_path):
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        stream_snapshot(server)
        (streams,) = data.glob("streams-*.dat")
        streams.write_bytes(b"\xff" * streams.stat().st_size)
        done = repair(data)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"nothing in it could be read: wrote an empty {streams.name}" in done.stdout
        assert "tables and items are kept" in done.stdout
        assert streams.read_bytes() == streamlog.MAGIC
        server.start()
        assert len(scan_all(server.client(), "items")) == 40
        put(server.client(), range(40, 42))  # writes go on
        assert "disable and re-enable it (UpdateTable StreamSpecification)" in done.stdout
        client = server.client()
        client.update_table(TableName="items", StreamSpecification={"StreamEnabled": False})
        client.update_table(TableName="items", StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
        put(client, range(50, 52))
        assert stream_records(server) == ["k0050", "k0051"]  # a new stream, as the message says


def test_an_empty_log_without_a_snapshot_is_not_taken_for_a_lost_base(tmp_path):
    """Earlier versions skipped a generation at each start-up without writes: an empty wal-1 alone is no loss."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "wal-00000003.log").write_bytes(MAGIC)
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        server.kill()
        server.start()
        assert server.client().list_tables()["TableNames"] == ["items"]


def test_a_flipped_bit_in_the_newest_snapshot_falls_back_to_the_previous_one_and_the_log_since(tmp_path):
    """Two generations are kept: the newest snapshot damaged, start-up loads the one before it and replays
    every log segment since, with a warning, and sets the damaged file aside. Nothing is lost."""
    data = tmp_path / "data"
    server = ServerProcess(data, log_path=tmp_path / "server.log")
    with server:
        create_table(server.client())
        put(server.client(), range(20))
        assert server.stop() in (0, -15)
        server.start()
        put(server.client(), range(20, 30))
        assert server.stop() in (0, -15)
        older, newest = sorted(data.glob("snapshot-*.snap"))
        raw = bytearray(newest.read_bytes())
        raw[len(raw) // 2] ^= 0x04
        newest.write_bytes(bytes(raw))
        server.start()
        assert {i["pk"]["S"] for i in scan_all(server.client(), "items")} == {f"k{i:04d}" for i in range(30)}
        started = server.log().split("=== start")[-1]
        assert f"{newest.name} is damaged" in started and f"loaded {older.name} and the log since it" in started
        assert (data / (newest.name + ".damaged")).read_bytes() == bytes(raw)
