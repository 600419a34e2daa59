"""Faults: a full disk, and a log damaged inside. Nothing acknowledged is lost, nothing failed is seen.

The full-disk test uses a real 2 MiB tmpfs when this process may mount one (root in a
container that allows it), with the server as a subprocess killed with SIGKILL; otherwise it
injects ENOSPC into the log writer of an in-process server and recovers a copy of its data
directory, as a restart after kill -9 would. Which one ran is printed.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer
from server_process import ServerProcess, log_frames, scan_all

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.http.durability import Durability
from dynalocal.journal.recovery import recover
from dynalocal.storage.database import Database

ITEM_BYTES = 7 * 1024


def create_table(client) -> None:
    client.create_table(TableName="items", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])


def put(client, pk: str) -> bool:
    """PutItem of a 7 KB item; True if acknowledged, False if answered 500."""
    try:
        client.put_item(TableName="items", Item={"pk": {"S": pk}, "v": {"S": pk[-1] * ITEM_BYTES}})
        return True
    except ClientError as err:
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 500, err.response
        assert err.response["Error"]["Message"] == "The write could not be made durable"
        return False


class Tmpfs:
    """A 2 MiB tmpfs with the data directory; `fill` leaves a given number of bytes free."""

    mode = "tmpfs (2 MiB)"

    def __init__(self, root: Path) -> None:
        self.mount = root / "mnt"
        self.mount.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(self.mount)], check=True,
                       capture_output=True)
        self.data = self.mount / "data"
        self.filler = self.mount / "filler"
        self.server = ServerProcess(self.data, "--sync", "always", "--throttling", "off",
                                    log_path=root / "server.log")

    def start(self):
        return self.server.start().client()

    def fill(self, leave: int) -> None:
        free = shutil.disk_usage(self.mount).free
        with open(self.filler, "wb") as f:
            f.write(b"\0" * max(0, free - leave))

    def free(self) -> None:
        self.filler.unlink()

    def crash_and_restart(self):
        self.server.kill()
        return self.start()

    def close(self) -> None:
        self.server.kill()
        subprocess.run(["umount", str(self.mount)], check=False, capture_output=True)


class InjectedEnospc:
    """An in-process server whose log writes fail with ENOSPC past a budget, as a full disk's do."""

    mode = "ENOSPC injected into the log writer, in-process"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.room: int | None = None
        self.ctx = Context(settings=Settings(data_dir=str(self.data), sync="always", throttling="off"))
        self.journal = Durability.open(self.ctx)
        writer = self.journal.commits.writer
        original = writer._write_all

        def write_all(fd, data, offset):
            if self.room is not None and len(data) > self.room:
                os.pwrite(fd, data[:self.room], offset)  # what fits reaches the file, as on a full disk
                self.room = 0
                raise OSError(errno.ENOSPC, "No space left on device")
            if self.room is not None:
                self.room -= len(data)
            original(fd, data, offset)

        writer._write_all = write_all
        self.live = LiveServer(self.ctx)

    def start(self):
        self.live.__enter__()
        return self.live.client(retries={"max_attempts": 0})

    def fill(self, leave: int) -> None:
        self.room = leave

    def free(self) -> None:
        self.room = None

    def crash_and_restart(self):
        """Recover a copy of the data directory as the disk holds it now (what kill -9 leaves)."""
        copy = self.root / f"copy-{len(list(self.root.glob('copy-*')))}"
        shutil.copytree(self.data, copy, ignore=shutil.ignore_patterns("LOCK"))
        db = Database()
        recover(copy, db)
        self.recovered = db
        return None

    def close(self) -> None:
        self.live.__exit__(None, None, None)


def can_mount_tmpfs(root: Path) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = root / "probe"
    probe.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)], capture_output=True)
    if done.returncode != 0:
        return False
    subprocess.run(["umount", str(probe)], check=False, capture_output=True)
    return True


@pytest.mark.parametrize("kind", ["tmpfs", "injected"])
def test_a_full_disk_loses_no_acknowledged_write_and_shows_no_failed_one(tmp_path, figure, kind):
    """The audit's reproduction: fill the disk, write until 500, free it, write 100 more, kill -9, restart."""
    if kind == "tmpfs" and not can_mount_tmpfs(tmp_path):
        pytest.skip("this process cannot mount a tmpfs: the injected-ENOSPC variant covers the full disk")
    disk = Tmpfs(tmp_path) if kind == "tmpfs" else InjectedEnospc(tmp_path)
    figure(f"full disk: {disk.mode}")
    try:
        client = disk.start()
        create_table(client)
        disk.fill(300 * 1024)
        acked, failed = [], []
        for i in range(400):
            (acked if put(client, f"before-{i:03d}") else failed).append(f"before-{i:03d}")
            if len(failed) >= 5:
                break
        assert failed, "the disk never filled"
        for pk in failed:  # answered 500: visible to no one, now or later
            assert "Item" not in client.get_item(TableName="items", Key={"pk": {"S": pk}})
        disk.free()
        for i in range(100):
            assert put(client, f"after-{i:03d}"), "a write failed after space returned"
            acked.append(f"after-{i:03d}")
        assert sorted(i["pk"]["S"] for i in scan_all(client, "items")) == sorted(acked)
        client = disk.crash_and_restart()
        if client is not None:
            stored = {i["pk"]["S"]: i["v"]["S"] for i in scan_all(client, "items")}
        else:
            table = disk.recovered.tables["items"].table
            items = [orjson.loads(p.get(key)[0]) for p, key in table.scan_keys()]
            stored = {i["pk"]["S"]: i["v"]["S"] for i in items}
        assert sorted(stored) == sorted(acked), "acknowledged writes lost, or failed ones back, after the restart"
        assert all(v == k[-1] * ITEM_BYTES for k, v in stored.items())
    finally:
        disk.close()


def repair(data: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dynalocal", "repair", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=120)


def test_a_flipped_bit_inside_the_log_stops_start_up_and_repair_keeps_every_intact_record(tmp_path):
    """The audit's reproduction: write items, kill -9, flip one bit a quarter into the first segment."""
    data = tmp_path / "data"
    server = ServerProcess(data, "--throttling", "off", log_path=tmp_path / "server.log")
    count = 400
    with server:
        client = server.client()
        create_table(client)
        for i in range(count):
            client.put_item(TableName="items", Item={"pk": {"S": f"k{i:04d}"}, "v": {"S": "x" * 200}})
        server.kill()
        (segment,) = [p for p in data.glob("wal-*.log") if p.stat().st_size > 8]
        raw = bytearray(log_frames(segment))
        offset = len(raw) // 4
        raw[offset] ^= 0x04
        segment.write_bytes(bytes(raw))
        before = {p.name: p.read_bytes() for p in data.iterdir()}
        with pytest.raises(RuntimeError) as refused:
            server.start()
        message = str(refused.value)
        assert "damaged inside" in message and segment.name in message and "dynalocal repair" in message
        assert {p.name: p.read_bytes() for p in data.iterdir()} == before, "start-up changed the damaged directory"
        done = repair(data)
        assert done.returncode == 0, done.stderr
        assert f"{segment.name}: kept {count} intact groups, dropped" in done.stdout  # 1 + 400 groups, one lost
        assert (data / (segment.name + ".damaged")).read_bytes() == bytes(raw)  # the original is kept
        server.start()
        keys = sorted(i["pk"]["S"] for i in scan_all(server.client(), "items"))
        assert len(keys) == count - 1 and set(keys) <= {f"k{i:04d}" for i in range(count)}
        assert "damaged" not in server.log().split("=== start")[-1]
        server.kill()
        again = repair(data)
        assert again.returncode == 0 and again.stdout.strip().endswith("has no damage; nothing changed")


def test_repair_refuses_a_directory_a_server_is_using(tmp_path):
    data = tmp_path / "data"
    with ServerProcess(data, log_path=tmp_path / "server.log"):
        done = repair(data)
        assert done.returncode == 2 and "in use by another dynalocal server" in done.stdout
