"""When snapshots are taken (journal.plan): in proportion to the live data, so a write's share of snapshot work stays
bounded however large the database grows."""
from __future__ import annotations

from dynalocal.journal.plan import SnapshotPlan

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
