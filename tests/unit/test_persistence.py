"""Write-ahead log framing, torn-tail detection, snapshots (fuzzy capture) and recovery, in process."""
from __future__ import annotations

import logging
import random
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalocal.journal import snapshot as snap
from dynalocal.journal import wal
from dynalocal.journal.recovery import LogDamaged, apply_group, recover
from dynalocal.journal.tablemeta import encode_meta, restore_meta
from dynalocal.storage.database import Database
from dynalocal.storage.index import schema_of
from dynalocal.storage.mutation import Mutation
from dynalocal.values.attributes import validate_item

KEY_SCHEMA = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
DEFINITIONS = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}]


def make_table(db: Database, name: str, partitions: int = 1, **meta):
    return db.create(name, schema_of(KEY_SCHEMA, DEFINITIONS), partitions, key_schema=KEY_SCHEMA,
                     attribute_definitions=DEFINITIONS, billing_mode="PAY_PER_REQUEST", **meta)


def record_for(entry, pk: str, sk: int, payload: str = "x"):
    item = {"pk": {"S": pk}, "sk": {"N": str(sk)}, "v": {"S": payload}}
    return entry.table.schema.check_item(item), (orjson.dumps(item), validate_item(item))


def state(db: Database) -> dict:
    """Everything recovery must reproduce: metadata and every item of every table."""
    return {name: (orjson.loads(encode_meta(e)),
                   [(k, r) for p in e.table.partitions for k, r in p.items()],
                   [p.size_bytes for p in e.table.partitions])
            for name, e in sorted(db.tables.items())}


class Journal:
    """What server.durability does, minus the server: collect every mutation as log entries."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.entries: list[wal.Entry] = []
        for entry in db.tables.values():
            self.watch(entry)

    def watch(self, entry) -> None:
        entry.table.listeners.append(self.on_apply)

    def on_apply(self, m) -> None:
        name = m.table.name
        self.entries.append((wal.PUT, name, m.key, m.new) if m.new else (wal.DELETE, name, m.key, None))

    def meta(self, entry) -> None:
        self.entries.append((wal.META, entry.name, encode_meta(entry), None))

    def drop(self, name: str) -> None:
        self.db.drop(name)
        self.entries.append((wal.DROP, name, None, None))


# -- framing --------------------------------------------------------------------------------

entries_strategy = st.lists(st.one_of(
    st.tuples(st.just(wal.PUT), st.text(min_size=1, max_size=20), st.binary(min_size=1, max_size=40),
              st.tuples(st.binary(max_size=100), st.integers(0, 400_000))),
    st.tuples(st.just(wal.DELETE), st.text(min_size=1, max_size=20), st.binary(min_size=1, max_size=40), st.none()),
    st.tuples(st.just(wal.META), st.text(min_size=1, max_size=20), st.binary(min_size=1, max_size=200), st.none()),
    st.tuples(st.just(wal.DROP), st.text(min_size=1, max_size=20), st.just(b""), st.none()),
), min_size=1, max_size=10)


@given(entries_strategy)
def test_group_encoding_round_trips(entries):
    assert wal.decode_group(wal.encode_group(entries)) == entries


def test_journal_item_writes_are_logged_as_records_and_its_notes_are_not():
    """The journal's batch: item writes (table, key, new, old) become PUT/DELETE records in the
    table's name; undo notes (a str kind) are left out."""
    db = Database()
    table = make_table(db, "alpha", 1).table
    put, gone = (b"k1", (b'{"v":1}', 9)), b"k2"
    batch = [("table", "alpha", None, None), (table, put[0], put[1], None), (wal.META, "alpha", b"{}", None),
             (table, gone, None, (b'{"v":2}', 9)), ("token", "t", None, None)]
    assert wal.decode_group(wal.encode_group(batch)) == [
        (wal.PUT, "alpha", b"k1", (b'{"v":1}', 9)), (wal.META, "alpha", b"{}", None), (wal.DELETE, "alpha", b"k2", None)]
    assert wal.encode_group([("token", "t", None, None)]) == b""


def write_segment(path: Path, groups: list[bytes]) -> list[int]:
    """A segment with these group payloads; returns the end offset of each frame."""
    data, ends = bytearray(wal.MAGIC), []
    for payload in groups:
        data += wal.frame(payload)
        ends.append(len(data))
    path.write_bytes(bytes(data))
    return ends


@pytest.mark.parametrize("damage, problem, kept", [
    (lambda d: d + b"\x00" * 64, None, 5),  # a zero-filled tail: the live segment's normal end (wal.LogWriter)
    (lambda d: d + b"\x00" * 3, None, 5),
    (lambda d: d + b"\x00" * 64 + b"\x01", "empty frame", 5),  # zeros, then bytes: damage
    (lambda d: d + b"\x07\x00", "torn frame header", 5),
    (lambda d: d[:-5], "torn frame (length exceeds the file)", 4),  # the last frame cut mid-record
    (lambda d: d[:-1] + bytes([d[-1] ^ 0x40]), "checksum mismatch", 4),  # the last frame corrupted
    (lambda d: d + b"garbage that is not a frame" * 3, "torn frame (length exceeds the file)", 5),
])
def test_damaged_tail_is_found_and_everything_before_it_kept(tmp_path, damage, problem, kept):
    path = tmp_path / "wal-00000000.log"
    groups = [wal.encode_group([(wal.PUT, "t", b"k%d" % i, (b"{}", 2))]) for i in range(5)]
    ends = write_segment(path, groups)
    path.write_bytes(damage(path.read_bytes()))
    scan = wal.scan_segment(path)
    assert (scan.problem, scan.groups, scan.good_end) == (problem, groups[:kept], ends[kept - 1])


def test_the_live_segment_is_zero_filled_ahead_and_cut_back_when_closed(tmp_path):
    """Frames land in zero-filled blocks (cheaper fdatasync); scanning stops cleanly at the zeros."""
    writer = wal.LogWriter(tmp_path, 0)
    payloads = [b"p%d" % i * 100 for i in range(50)]
    for payload in payloads:
        writer.append(payload)
    path = wal.segment_path(tmp_path, 0)
    assert path.stat().st_size == len(wal.MAGIC) + wal.ZERO_FILL and writer.zeroed == path.stat().st_size
    scan = wal.scan_segment(path)
    assert (scan.groups, scan.problem, scan.good_end) == (payloads, None, writer.offset)
    big = b"x" * (wal.ZERO_FILL + 10)  # past the zeros: extended by whole steps
    writer.append(big)
    assert path.stat().st_size == len(wal.MAGIC) + 2 * wal.ZERO_FILL
    writer.rotate(1)  # the closed segment keeps only its frames
    assert path.stat().st_size == writer_end(payloads + [big]) and wal.scan_segment(path).groups == payloads + [big]
    writer.append(b"next")
    writer.close()
    assert wal.segment_path(tmp_path, 1).stat().st_size == len(wal.MAGIC) + len(wal.frame(b"next"))


def writer_end(payloads: list[bytes]) -> int:
    return len(wal.MAGIC) + sum(len(wal.frame(p)) for p in payloads)


def test_recovery_cuts_the_zero_tail_a_killed_server_left(tmp_path):
    entry = make_table(Database(), "alpha")
    writer = wal.LogWriter(tmp_path, 0)
    writer.append(wal.encode_group([(wal.META, "alpha", encode_meta(entry), None)]))
    writer.append(wal.encode_group([(wal.PUT, "alpha", *record_for(entry, "p", 1))]))
    end = writer.offset  # no close: as after kill -9
    path = wal.segment_path(tmp_path, 0)
    assert path.stat().st_size > end
    recovered = Database()
    result = recover(tmp_path, recovered)
    assert result.problems == [] and result.groups == 2 and path.stat().st_size == end
    assert recovered.tables["alpha"].table.item_count == 1 and result.next_generation == 1


def test_intact_segment_has_no_problem(tmp_path):
    path = tmp_path / "wal-00000000.log"
    groups = [b"a", b"bb", b"ccc"]
    ends = write_segment(path, groups)
    scan = wal.scan_segment(path)
    assert (scan.groups, scan.good_end, scan.problem) == (groups, ends[-1], None)


# -- snapshots ------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), chunk=st.integers(1, 40))
def test_fuzzy_snapshot_plus_log_after_it_equals_the_live_state(seed, chunk):
    """Writes, re-partitioning and drop/recreate while the snapshot is being copied are all recovered."""
    rng = random.Random(seed)
    db = Database()
    for name in ("alpha", "beta"):
        entry = make_table(db, name, rng.randint(1, 4))
        for i in range(rng.randint(0, 120)):
            entry.table.apply(Mutation(*record_for(entry, f"p{rng.randint(0, 30)}", i)))
    journal = Journal(db)  # the log segment that starts where the snapshot starts
    image = snap.Image()
    for _ in image.capture(db, chunk=chunk):
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(("alpha", "beta"))
            entry = db.tables.get(name)
            roll = rng.random()
            if entry is None:
                entry = make_table(db, name, rng.randint(1, 3))
                journal.watch(entry)
                journal.meta(entry)
            elif roll < 0.6:
                entry.table.apply(Mutation(*record_for(entry, f"p{rng.randint(0, 30)}", rng.randint(0, 150), str(roll))))
            elif roll < 0.85:
                keys = [k for p in entry.table.partitions for k, _ in p.items()]
                if keys:
                    entry.table.apply(Mutation(rng.choice(keys), None))
            elif roll < 0.95:
                entry.table.set_partition_count(rng.randint(1, 5))
                journal.meta(entry)
            else:
                journal.drop(name)
    with tempfile.TemporaryDirectory() as directory:
        snap.write(image, Path(directory), 1)
        restored = Database()
        snap.load(Path(directory) / "snapshot-00000001.snap", restored)
    apply_group(restored, journal.entries)
    assert state(restored) == state(db)


# -- recovery -------------------------------------------------------------------------------

def three_segments(tmp_path, entry) -> list[int]:
    """alpha's metadata and four puts over segments 0 and 1, a drop of alpha in segment 2; ends of segment 1's groups."""
    meta = (wal.META, "alpha", encode_meta(entry), None)
    puts = [(wal.PUT, "alpha", *record_for(entry, "p", i)) for i in range(4)]
    write_segment(tmp_path / "wal-00000000.log", [wal.encode_group([meta]), wal.encode_group(puts[:2])])
    ends = write_segment(tmp_path / "wal-00000001.log", [wal.encode_group(puts[2:3]), wal.encode_group(puts[3:])])
    write_segment(tmp_path / "wal-00000002.log", [wal.encode_group([(wal.DROP, "alpha", None, None)])])
    return ends


def directory_bytes(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_recovery_cuts_a_torn_tail_of_the_last_segment_with_one_line(tmp_path, caplog):
    entry = make_table(Database(), "alpha")
    three_segments(tmp_path, entry)
    (tmp_path / "wal-00000002.log").unlink()
    last = tmp_path / "wal-00000001.log"
    size = last.stat().st_size
    last.write_bytes(last.read_bytes()[:-2])  # the last group is torn
    recovered = Database()
    with caplog.at_level(logging.WARNING, logger="dynalocal.durability"):
        result = recover(tmp_path, recovered)
    cut_at = size - len(wal.frame(wal.encode_group([(wal.PUT, "alpha", *record_for(entry, "p", 3))])))
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"wal-00000001.log: torn frame (length exceeds the file) at offset {cut_at}; cut {size - 2 - cut_at} "
        "bytes of damaged tail, kept 1 intact groups before it"]
    assert last.stat().st_size == cut_at
    assert recovered.tables["alpha"].table.item_count == 3
    assert result.groups == 3 and result.next_generation == 2


def test_damage_in_a_segment_that_is_not_the_last_stops_recovery_and_changes_nothing(tmp_path):
    entry = make_table(Database(), "alpha")
    ends = three_segments(tmp_path, entry)
    damaged = tmp_path / "wal-00000001.log"
    damaged.write_bytes(damaged.read_bytes()[:-2])  # torn, but segment 2 follows: not a crash's doing
    before = directory_bytes(tmp_path)
    with pytest.raises(LogDamaged, match=f"wal-00000001.log: torn frame .* at offset {ends[0]}, and later log "
                                         "segments follow it.*dynalocal repair --data-dir"):
        recover(tmp_path, Database())
    assert directory_bytes(tmp_path) == before


def test_a_bad_frame_followed_by_intact_ones_stops_recovery_and_changes_nothing(tmp_path):
    entry = make_table(Database(), "alpha")
    meta = (wal.META, "alpha", encode_meta(entry), None)
    groups = [wal.encode_group([meta])] + [wal.encode_group([(wal.PUT, "alpha", *record_for(entry, "p", i))])
                                           for i in range(6)]
    ends = write_segment(tmp_path / "wal-00000000.log", groups)
    path = tmp_path / "wal-00000000.log"
    data = bytearray(path.read_bytes())
    data[ends[2] + 20] ^= 0x08  # one bit inside the fourth group
    path.write_bytes(bytes(data))
    before = directory_bytes(tmp_path)
    with pytest.raises(LogDamaged, match=f"wal-00000000.log: checksum mismatch at offset {ends[2]}, and intact "
                                         f"records follow at offset {ends[3]}"):
        recover(tmp_path, Database())
    assert directory_bytes(tmp_path) == before


@pytest.mark.parametrize("where", ["payload", "length", "header"])
def test_salvage_keeps_every_intact_group_around_damage(tmp_path, where):
    groups = [wal.encode_group([(wal.PUT, "table", b"k%d" % i, (b'{"v":%d}' % i, 9))]) for i in range(8)]
    path = tmp_path / "wal-00000000.log"
    ends = write_segment(path, groups)
    data = bytearray(path.read_bytes())
    at = {"payload": ends[2] + 15, "length": ends[2] + 1, "header": 3}[where]
    data[at] ^= 0x10
    kept, dropped = wal.salvage(bytes(data))
    if where == "header":
        assert kept == groups and dropped == [(0, len(wal.MAGIC), "missing or damaged segment header")]
    else:
        assert kept == groups[:3] + groups[4:]
        assert [(start, end) for start, end, _ in dropped] == [(ends[2], ends[3])]


def test_recovery_uses_the_newest_snapshot_and_deletes_what_it_supersedes(tmp_path):
    db = Database()
    entry = make_table(db, "alpha", 2)
    journal = Journal(db)
    for i in range(10):
        entry.table.apply(Mutation(*record_for(entry, f"p{i}", i)))
    image = snap.Image()
    list(image.capture(db))
    write_segment(tmp_path / "wal-00000000.log", [b"\xff"])  # the fallback generation: kept, never read
    snap.write(image, tmp_path, 1)
    (tmp_path / "snapshot-00000002.snap.tmp").write_bytes(b"half a snapshot")
    journal.entries.clear()
    entry.table.apply(Mutation(*record_for(entry, "p0", 0, "changed")))
    restore_meta(db, "alpha", encode_meta(entry))
    write_segment(tmp_path / "wal-00000001.log", [wal.encode_group(journal.entries)])
    recovered = Database()
    result = recover(tmp_path, recovered)
    assert state(recovered) == state(db)
    assert (result.snapshot, result.groups, result.next_generation) == (1, 1, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot-00000001.snap", "wal-00000000.log",
                                                          "wal-00000001.log"]


def test_salvage_finds_groups_that_start_with_a_long_stream_arn(tmp_path):
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/" + "t" * 255 + "/stream/2026-01-01T00:00:00.000"
    groups = [wal.encode_group([(wal.STREAM, arn, b"event-%d" % i, None)]) for i in range(4)]
    path = tmp_path / "wal-00000000.log"
    ends = write_segment(path, groups)
    data = bytearray(path.read_bytes())
    data[ends[0] + 12] ^= 0x01  # damage the second group
    assert wal.salvage(bytes(data))[0] == [groups[0]] + groups[2:]
    assert wal.scan_segment(path).problem is None
    path.write_bytes(bytes(data))
    assert wal.scan_segment(path).resume == ends[1]  # damage inside the log, not a torn tail
