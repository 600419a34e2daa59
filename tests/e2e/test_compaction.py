"""Log compaction: when deletes dominate, a snapshot is taken early and the disk is given back (issue 28)."""
from __future__ import annotations

import time
from pathlib import Path

from conftest import LiveServer

from dynalocal.journal.wal import scan_segment

ITEMS = 6000


def _disk(directory: Path) -> int:
    """Bytes of snapshots and log (the live segment's zero-filled tail, at most wal.ZERO_FILL, not counted)."""
    return sum(scan_segment(p).good_end if p.suffix == ".log" else p.stat().st_size
               for p in directory.iterdir() if p.suffix in (".snap", ".log"))


def _batches(client, requests: list[dict]) -> None:
    for start in range(0, len(requests), 25):
        pending = {"compact": requests[start:start + 25]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems")


def test_a_log_of_mostly_deleted_items_is_compacted_by_an_early_snapshot(tmp_path):
    data = tmp_path / "data"
    keys = [{"pk": {"S": f"k{i:05d}"}} for i in range(ITEMS)]
    # (compaction needs 1/16 of the snapshot size in the log: 1 MiB here)
    with LiveServer(data_dir=str(data), snapshot_bytes=16 * 2**20, throttling="off") as live:
        client = live.client()
        client.create_table(TableName="compact", BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        _batches(client, [{"PutRequest": {"Item": {**key, "v": {"S": f"{i:08x}" * 32}}}} for i, key in enumerate(keys)])
        loaded = _disk(data)
        assert not list(data.glob("snapshot-*.snap")), "16 MiB of log not reached: no regular snapshot yet"
        _batches(client, [{"DeleteRequest": {"Key": key}} for key in keys])
        deadline = time.monotonic() + 30
        while not list(data.glob("snapshot-*.snap")):
            assert time.monotonic() < deadline, ("no compaction", sorted((p.name, p.stat().st_size) for p in data.iterdir()))
            time.sleep(0.02)
        # The generation before the compaction (here the whole log from the start) is kept as a fallback
        # until the next snapshot, which a large fallback brings forward: a little more writing is enough.
        churn = {"PutRequest": {"Item": {"pk": {"S": "churn"}}}}
        while list(data.glob("wal-00000000.log")):
            assert time.monotonic() < deadline, ("fallback kept", sorted((p.name, p.stat().st_size)
                                                                       for p in data.iterdir()))
            _batches(client, [churn])
        compacted = _disk(data)
        assert compacted < loaded / 3, (loaded, compacted)
    with LiveServer(data_dir=str(data)) as live:
        assert live.client().describe_table(TableName="compact")["Table"]["ItemCount"] == 1  # the churn item
