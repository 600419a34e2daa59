"""Hash partitions, the single mutation path, scan order and repartitioning."""
from __future__ import annotations

import orjson
import pytest

from dynalocal.storage.database import Database
from dynalocal.storage.mutation import Mutation
from dynalocal.storage.partition import Partition
from dynalocal.storage.table import ItemStore, Table
from dynalocal.values.attributes import validate_item
from dynalocal.values.keys import TOKEN_SPACE, KeySchema

SCHEMA = KeySchema("pk", "S", "sk", "N")


def put(table: Table, pk: str, sk: int, **attrs: str):
    item = {"pk": {"S": pk}, "sk": {"N": str(sk)}, **{k: {"S": v} for k, v in attrs.items()}}
    size = validate_item(item)
    key = table.schema.check_item(item)
    return key, table.apply(Mutation(key, (orjson.dumps(item), size))).old


def filled(partitions: int = 1, pks: int = 50, sks: int = 4) -> Table:
    table = Table("t", SCHEMA, partitions)
    for p in range(pks):
        for s in range(sks):
            put(table, f"user-{p}", s, v="x" * p)
    return table


def token(key: bytes) -> int:
    return int.from_bytes(key[:8], "big")


def assert_placed(store: ItemStore) -> None:
    """Every key lives in the partition whose token range holds it; ranges tile the token space."""
    assert store.partitions[0].lo == 0 and store.partitions[-1].hi == TOKEN_SPACE
    for left, right in zip(store.partitions, store.partitions[1:]):
        assert left.hi == right.lo
    for part in store.partitions:
        assert all(part.lo <= token(k) < part.hi for k, _ in part.items())
        assert part.size_bytes == sum(size for _, (_, size) in part.items())


def test_put_get_delete_and_counts():
    table = Table("t", SCHEMA)
    key, old = put(table, "a", 1, v="one")
    assert old is None
    assert table.item_count == 1
    blob, size = table.get(key)
    assert orjson.loads(blob)["v"] == {"S": "one"}
    assert size == table.size_bytes == 2 + 1 + 2 + 2 + 1 + 3
    _, old = put(table, "a", 1, v="uno!")
    assert orjson.loads(old[0])["v"] == {"S": "one"}
    assert table.item_count == 1 and table.size_bytes == size + 1
    assert table.apply(Mutation(key, None)).old[1] == size + 1
    assert table.get(key) is None and table.item_count == 0 and table.size_bytes == 0
    assert table.apply(Mutation(key, None)).old is None  # deleting nothing is a no-op


def test_every_mutation_reaches_the_listeners():
    table = Table("t", SCHEMA)
    seen = []
    table.listeners.append(lambda m: seen.append((m.key, m.old is not None, m.new is not None, m.seq)))
    key, _ = put(table, "a", 1)
    put(table, "a", 1, v="2")
    table.apply(Mutation(key, None))
    table.apply(Mutation(key, None))  # nothing was there: no event
    assert seen == [(key, False, True, 1), (key, True, True, 2), (key, True, False, 3)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 16])
def test_partitions_tile_the_token_space(count):
    table = filled(count)
    assert len(table.partitions) == count
    assert_placed(table)
    assert table.item_count == 200
    if count > 1:
        assert sum(1 for p in table.partitions if len(p)) > 1  # hashing spreads the keys


def test_set_partition_count_moves_items():
    table = filled(1)
    before = {k: v for p in table.partitions for k, v in p.items()}
    size = table.size_bytes
    for count in (4, 7, 2, 32, 1, 5):
        table.set_partition_count(count)
        assert len(table.partitions) == count
        assert_placed(table)
        assert {k: v for p in table.partitions for k, v in p.items()} == before
        assert table.item_count == 200 and table.size_bytes == size
        for key in before:
            assert table.get(key) == before[key]


def test_set_partition_count_floor_is_one():
    table = filled(3)
    table.set_partition_count(0)
    assert len(table.partitions) == 1 and table.item_count == 200


def test_writes_after_repartitioning_land_in_the_right_partition():
    table = filled(2)
    table.set_partition_count(8)
    for s in range(4, 8):
        put(table, "user-3", s)
    assert_placed(table)
    assert table.item_count == 204


@pytest.mark.parametrize("count", [1, 4, 9])
def test_scan_order_is_token_then_key(count):
    table = filled(count)
    keys = [k for _, k in table.scan_keys()]
    assert len(keys) == 200
    assert keys == sorted(keys)
    # so the order does not depend on the number of partitions
    other = filled(1 if count > 1 else 5)
    assert [k for _, k in other.scan_keys()] == keys
    # within one partition key, items follow the sort key numerically
    decoded = [orjson.loads(table.get(k)[0]) for k in keys]
    by_pk: dict[str, list[int]] = {}
    for item in decoded:
        by_pk.setdefault(item["pk"]["S"], []).append(int(item["sk"]["N"]))
    assert all(sks == sorted(sks) for sks in by_pk.values())


@pytest.mark.parametrize("count", [1, 3, 8])
def test_scan_resumes_after_a_key(count):
    table = filled(count)
    keys = [k for _, k in table.scan_keys()]
    for cut in (0, 1, 57, 150, 199):
        assert [k for _, k in table.scan_keys(start=keys[cut])] == keys[cut + 1:]


@pytest.mark.parametrize("count", [1, 3, 8])
def test_scan_segments_split_the_token_space(count):
    table = filled(count)
    everything = [k for _, k in table.scan_keys()]
    segments = 5
    bounds = [TOKEN_SPACE * i // segments for i in range(segments + 1)]
    parts = [[k for _, k in table.scan_keys(lo_token=lo, hi_token=hi)] for lo, hi in zip(bounds, bounds[1:])]
    assert [k for part in parts for k in part] == everything
    for (lo, hi), part in zip(zip(bounds, bounds[1:]), parts):
        assert all(lo <= token(k) < hi for k in part)
        if len(part) > 2:  # resuming inside a segment stays inside it
            assert [k for _, k in table.scan_keys(start=part[1], lo_token=lo, hi_token=hi)] == part[2:]


def test_scan_yields_the_owning_partition():
    table = filled(6)
    for part, key in table.scan_keys():
        assert part.get(key) is not None
        assert table.partition_of(key) is part


def test_partition_range_is_sorted_and_bounded():
    part = Partition(0, TOKEN_SPACE)
    for i in (5, 1, 9, 3, 7):
        part.put(bytes([i]), (b"{}", i))
    assert list(part.range(None, None)) == [bytes([i]) for i in (1, 3, 5, 7, 9)]
    assert list(part.range(bytes([3]), bytes([7]))) == [bytes([3]), bytes([5])]
    assert list(part.range(bytes([3]), bytes([7]), inclusive=(False, True), reverse=True)) == [bytes([7]), bytes([5])]
    assert part.size_bytes == 25 and len(part) == 5
    assert part.delete(bytes([5])) == (b"{}", 5) and part.size_bytes == 20
    assert part.delete(bytes([5])) is None and part.size_bytes == 20


def test_query_range_of_one_partition_key():
    table = filled(4)
    prefix = SCHEMA.partition_prefix("user-7")
    part = table.partition_of(prefix)
    keys = list(part.range(prefix + SCHEMA.encode("user-7", "1")[len(prefix):],
                           prefix + SCHEMA.encode("user-7", "3")[len(prefix):], inclusive=(True, True)))
    assert [int(orjson.loads(part.get(k)[0])["sk"]["N"]) for k in keys] == [1, 2, 3]


def test_database_catalog():
    db = Database()
    entry = db.create("music", SCHEMA, 2, key_schema=[], attribute_definitions=[], billing_mode="PAY_PER_REQUEST")
    assert db.tables["music"] is entry
    assert entry.name == "music" and len(entry.table.partitions) == 2
    assert entry.arn == "arn:aws:dynamodb:us-east-1:000000000000:table/music"
    assert len(entry.table_id) == 36 and entry.status == "ACTIVE"
    assert db.drop("music") is entry and db.drop("music") is None and not db.tables


def test_repartition_keeps_unchanged_partitions_and_tells_the_hooks():
    table = filled(2)
    seen = []
    table.on_repartition.append(lambda old, new: seen.append((old, new)))
    first, second = table.partitions
    half = second.lo
    table.repartition([0, half, half + (TOKEN_SPACE - half) // 2])  # split the second partition only
    assert table.partitions[0] is first and second not in table.partitions
    assert_placed(table)
    assert len(seen) == 1 and seen[0][0] == [first, second] and seen[0][1] == table.partitions
    table.repartition([p.lo for p in table.partitions])  # the same layout: nothing happens
    assert len(seen) == 1


def test_mutation_decodes_each_item_at_most_once(monkeypatch):
    import dynalocal.storage.mutation as mutation
    table = Table("t", SCHEMA)
    key, _ = put(table, "a", 1, v="one")
    decoded = []
    real = mutation.orjson.loads
    monkeypatch.setattr(mutation, "orjson", type("J", (), {"loads": staticmethod(
        lambda raw: decoded.append(raw) or real(raw))}))
    items = []
    table.listeners += [lambda m: items.append((m.old_item, m.new_item)), lambda m: items.append((m.old_item, m.new_item))]
    new = {"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"S": "two"}}
    done = table.apply(Mutation(key, (orjson.dumps(new), validate_item(new)), new))
    assert len(decoded) == 1  # the old item, once; the new one was passed in
    assert items[0] == items[1] == ({"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"S": "one"}}, new)
    assert done.changed and done.seq == 2 and done.table is table


def test_mutation_changed_ignores_identical_writes():
    table = Table("t", SCHEMA)
    key, _ = put(table, "a", 1, v="one")
    same = {"v": {"S": "one"}, "sk": {"N": "1"}, "pk": {"S": "a"}}  # same item, other member order
    assert not table.apply(Mutation(key, (orjson.dumps(same), validate_item(same)))).changed
    assert table.apply(Mutation(key, None)).changed
