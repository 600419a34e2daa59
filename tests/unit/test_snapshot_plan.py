"""When snapshots are taken (journal.plan): in proportion to the live data, so a write's share of snapshot work stays
bounded however large the database grows; and how they are written: synced as they grow, not in one go at the end."""
from __future__ import annotations

import os
import random

from test_persistence import make_table, record_for

from dynalocal.journal import snapshot as snap
from dynalocal.journal import wal
from dynalocal.journal.plan import SnapshotPlan
from dynalocal.storage.database import Database
from dynalocal.storage.mutation import Mutation

MIB = 1024 * 1024
ITEM = 200  # DynamoDB size of each item
LOGGED = 270  # log bytes of each (key, wire JSON, record header: about what journal.wal writes for it)
SNAPSHOT = 130  # snapshot bytes of each (compressed)


def copies_per_write(items: int, step: int = 1000) -> float:
    """Write `items` new items, snapshotting whenever the plan says: items copied by snapshots per item written."""
    plan = SnapshotPlan(64 * MIB, 0, 0)
    live = log = copied = 0
    while live < items:
        live += step
        log += step * LOGGED
        if log >= plan.at and plan.due(log, lambda live=live: live * ITEM):
            copied += live
            plan.snapshot_bytes, plan.live_bytes, plan.kept_bytes = live * SNAPSHOT, live * ITEM, log
            log = 0
            plan.next()
    return copied / items


def test_a_large_database_is_snapshotted_after_half_its_size_in_log_not_after_each_snapshot_mb():
    plan = SnapshotPlan(64 * MIB, 130 * MIB, 0, live_bytes=1000 * MIB)
    live = lambda: 1000 * MIB  # noqa: E731
    assert plan.regular() == 500 * MIB
    assert not plan.due(100 * MIB, live)  # past --snapshot-mb, but a tenth of the data
    assert plan.due(500 * MIB, live)
    small = SnapshotPlan(64 * MIB, 1 * MIB, 0, live_bytes=2 * MIB)
    assert small.regular() == 64 * MIB  # --snapshot-mb stays the floor
    plan.failed(600 * MIB)  # a failed snapshot is retried once as much log again is written
    assert plan.regular() == 1100 * MIB


def test_snapshot_work_per_written_item_stays_bounded_as_the_database_grows():
    medium, large = copies_per_write(1_000_000), copies_per_write(5_000_000)
    # (a quarter of the compressed snapshot, the earlier rule: 2.5 and 7.3; a fixed 64 MiB: 2.5 and 10.5)
    assert large < 4, large
    assert large < medium + 2, (medium, large)


def test_a_snapshot_file_is_synced_as_it_grows_so_that_log_syncs_never_queue_behind_all_of_it(tmp_path, monkeypatch):
    db = Database()
    entry = make_table(db, "alpha", 2)
    rng = random.Random(7)
    for i in range(2000):
        payload = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=600))  # ~1.2 MB in all, little compressible
        entry.table.apply(Mutation(*record_for(entry, f"p{i}", i, payload)))
    synced: list[int] = []
    datasync = wal._datasync
    monkeypatch.setattr(wal, "_datasync", lambda fd: (synced.append(os.fstat(fd).st_size), datasync(fd)))
    monkeypatch.setattr(wal, "PACE", 64 * 1024)
    image = snap.Image()
    list(image.capture(db, chunk=20))  # frames of ~25 KB
    size = snap.write(image, tmp_path, 1)
    steps = [b - a for a, b in zip([0, *synced], [*synced, size])]
    assert len(synced) > 10 and max(steps) < 2 * 64 * 1024, (size, synced)  # every 64 KiB or so as the file grew
    assert snap.load(snap.snapshot_path(tmp_path, 1), Database()) == (1, 2000)
