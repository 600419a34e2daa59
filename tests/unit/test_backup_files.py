"""Pure logic of backups and PITR: the history's undo, and the backup and history files' round trips."""
from __future__ import annotations

from dynalocal.journal import backups as backup_files
from dynalocal.journal import history as history_files
from dynalocal.storage.history import History
from dynalocal.storage.mutation import ROLLBACK, Mutation
from dynalocal.storage.table import Table
from dynalocal.values.keys import KeySchema

SCHEMA = KeySchema("pk", "S")


def key(name: str) -> bytes:
    return SCHEMA.encode(name, None)


def record(value: str) -> tuple[bytes, int]:
    blob = b'{"v":{"S":"%s"}}' % value.encode()
    return blob, len(blob)


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_items_at_undoes_later_changes_only():
    table, clock = Table("t", SCHEMA, 2), Clock()
    history = History(table, clock, period=3600)
    history.attach()
    table.apply(Mutation(key("a"), record("1")))
    clock.now = 101
    table.apply(Mutation(key("a"), record("2")))
    table.apply(Mutation(key("b"), record("1")))
    clock.now = 102
    table.apply(Mutation(key("a"), None))
    table.apply(Mutation(key("b"), record("0")))  # a write whose fsync fails ...
    table.apply(Mutation(key("b"), record("1"), origin=ROLLBACK))  # ... undone: no entry of its own
    assert history.items_at(99) == {}
    assert history.items_at(100) == {key("a"): record("1")}
    assert history.items_at(101.5) == {key("a"): record("2"), key("b"): record("1")}
    assert history.items_at(102) == {key("b"): record("1")}
    assert len(history.entries) == 5


def test_prune_keeps_the_period():
    table, clock = Table("t", SCHEMA), Clock()
    history = History(table, clock, period=10)
    history.attach()
    for i in range(5):
        clock.now = 100 + 5 * i
        table.apply(Mutation(key(f"k{i}"), record("x")))
    assert history.prune(clock.now) == 2  # 100 and 105 are older than 120 - 10
    assert [at for at, _, _ in history.entries] == [110, 115, 120]


def test_history_file_round_trip_and_torn_tail(tmp_path):
    path = tmp_path / "pitr" / "t.hist"
    sink = history_files.HistoryFile(path)
    sink.append(1.0, key("a"), None)
    sink.append(2.0, key("b"), record("old"))
    sink.append(3.0, key("c"), record("older"))
    sink.close()
    entries, rewrite = history_files.read(path, since=2.0)
    assert entries == [(2.0, key("b"), record("old")), (3.0, key("c"), record("older"))] and rewrite
    with open(path, "ab") as f:
        f.write(b"\x10\x00\x00")  # a torn last append
    entries, rewrite = history_files.read(path, since=0)
    assert len(entries) == 3 and rewrite


def test_backup_file_round_trip(tmp_path):
    parts = [([key("a"), key("b")], [record("1"), record("2")]), ([], []), ([key("z")], [record("3")])]
    path = backup_files.write(tmp_path, "b1", b'{"x":1}', parts)
    assert backup_files.read_header(path) == b'{"x":1}'
    assert [p for p in backup_files.read_parts(path)] == [parts[0], parts[2]]
    assert list(backup_files.headers(tmp_path)) == [(path, b'{"x":1}')]
