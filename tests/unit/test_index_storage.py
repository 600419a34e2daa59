"""Index store keys keep index order with non-unique keys; range bounds select exactly the condition."""
from __future__ import annotations

import base64

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.storage.index import Index, attach, escape
from dynalocal.storage.mutation import Mutation
from dynalocal.storage.ranges import read_range, read_scan, sort_bounds, sort_matches
from dynalocal.storage.table import Table
from dynalocal.values.attributes import item_size
from dynalocal.values.keys import KeySchema, sort_bytes

TABLE = KeySchema("pk", "S", "sk", "N")


def _put(table: Table, item: dict) -> dict[str, float]:
    return table.apply(Mutation(table.schema.check_item(item), (orjson.dumps(item), item_size(item)))).owed


@given(st.lists(st.binary(max_size=6), min_size=2, max_size=12))
def test_escaped_sort_bytes_keep_order_with_any_suffix(values):
    suffixed = sorted(values, key=lambda v: escape(v) + b"\x00\x01" + b"\xff" * (len(v) % 3))
    assert [v for v in suffixed] == sorted(values)


def _gsi(kind: str = "S") -> tuple[Table, Index]:
    table = Table("t", TABLE, 3)
    index = Index("g", "GSI", KeySchema("gh", "S", "gr", kind), TABLE, {"ProjectionType": "KEYS_ONLY"}, 2)
    attach(table, index)
    return table, index


def test_sparse_non_unique_index_follows_writes():
    table, index = _gsi()
    for i in range(5):
        _put(table, {"pk": {"S": f"p{i}"}, "sk": {"N": "1"}, "gh": {"S": "x"}, "gr": {"S": "same"}, "v": {"S": "v"}})
    _put(table, {"pk": {"S": "lonely"}, "sk": {"N": "1"}, "v": {"S": "no index key"}})
    assert index.item_count == 5
    entry = orjson.loads(next(index.partitions[index.partition_index(index.prefix("x"))].items())[1][0])
    assert set(entry) == {"pk", "sk", "gh", "gr"}  # KEYS_ONLY
    # moving one item out of the index, then back in under another key
    assert _put(table, {"pk": {"S": "p0"}, "sk": {"N": "1"}, "v": {"S": "v"}}) == {"g": 1.0}
    assert index.item_count == 4
    _put(table, {"pk": {"S": "p0"}, "sk": {"N": "1"}, "gh": {"S": "y"}, "gr": {"S": "a"}})
    assert index.item_count == 5
    table.apply(Mutation(table.schema.encode("p1", "1"), None))
    assert index.item_count == 4


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=30),
       st.sampled_from(["EQ", "LT", "LE", "GT", "GE", "BETWEEN", None]),
       st.integers(-60, 60), st.integers(-60, 60), st.booleans())
def test_index_range_bounds_equal_brute_force(numbers, op, a, b, reverse):
    table, index = _gsi("N")
    for i, n in enumerate(numbers):
        _put(table, {"pk": {"S": f"p{i}"}, "sk": {"N": str(i)}, "gh": {"S": "h"}, "gr": {"N": str(n)}})
    lo, hi = min(a, b), max(a, b)
    values = [sort_bytes("N", str(lo)), sort_bytes("N", str(hi))] if op == "BETWEEN" else [sort_bytes("N", str(a))]
    page = read_range(index, sort_bounds(index.prefix("h"), op, values, escaped=True), reverse, None)
    got = [int(orjson.loads(r)["gr"]["N"]) for r in page.blobs]
    expected = sorted(n for n in numbers if sort_matches(op, values, sort_bytes("N", str(n))))
    assert got == (expected[::-1] if reverse else expected)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=20), st.binary(max_size=3))
def test_binary_begins_with_on_index(values, prefix):
    table = Table("t", TABLE, 1)
    index = Index("g", "GSI", KeySchema("gh", "S", "gr", "B"), TABLE, {"ProjectionType": "ALL"}, 1)
    attach(table, index)
    for i, v in enumerate(values):
        _put(table, {"pk": {"S": "p"}, "sk": {"N": str(i)}, "gh": {"S": "h"}, "gr": {"B": base64.b64encode(v).decode()}})
    page = read_range(index, sort_bounds(index.prefix("h"), "BEGINS_WITH", [prefix], escaped=True), False, None)
    got = [base64.b64decode(orjson.loads(r)["gr"]["B"]) for r in page.blobs]
    assert got == sorted(v for v in values if v.startswith(prefix))


def test_paging_stops_at_limit_or_one_megabyte():
    table = Table("t", TABLE, 4)
    for i in range(30):
        _put(table, {"pk": {"S": "p"}, "sk": {"N": str(i)}, "pad": {"S": "x" * 100_000}})
    bounds = sort_bounds(TABLE.partition_prefix("p"), None, [], escaped=False)
    page = read_range(table, bounds, False, None)
    assert len(page.blobs) == 11 and page.read_bytes >= 1024 * 1024
    assert page.last_key == TABLE.encode("p", "10")  # the key of the 11th item, the last one read
    page = read_range(table, bounds, False, 3)
    assert len(page.blobs) == 3 and page.last_key is not None
    rest = read_range(table, bounds.after(page.last_key, False), False, 100)
    assert len(rest.blobs) == 11  # the 1 MB cap again


def test_parallel_scan_segments_cover_everything_once():
    table = Table("t", TABLE, 5)
    for i in range(300):
        _put(table, {"pk": {"S": f"p{i}"}, "sk": {"N": "0"}})
    for total in (1, 3, 16):
        seen = []
        for segment in range(total):
            start = None
            while True:
                page = read_scan(table, start, 7, segment, total)
                seen += page.keys
                start = page.last_key
                if start is None:
                    break
        assert sorted(seen) == sorted(k for p in table.partitions for k, _ in p.items())
