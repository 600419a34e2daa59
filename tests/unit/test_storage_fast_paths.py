"""The storage hot paths equal their straightforward definitions: key prefixes (cached), partition
lookup, paging, capacity units, item validation and sizes."""
from __future__ import annotations

import bisect
import hashlib
import random
from bisect import bisect_left
from decimal import Decimal
from itertools import accumulate, islice
from operator import itemgetter
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from dynalocal.capacity import read_units, write_units
from dynalocal.errors import ValidationException
from dynalocal.storage.mutation import Mutation
from dynalocal.storage.ranges import Bounds, read_range, read_scan
from dynalocal.storage.table import Table
from dynalocal.values import keys, numbers
from dynalocal.values.attributes import item_size, utf8_len, validate_item, validate_value, value_size
from dynalocal.values.keys import KeySchema


def _prefix(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=8).digest() + len(raw).to_bytes(2, "big") + raw


def test_cached_prefixes_equal_the_definition_and_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(keys, "PREFIX_CACHE_SIZE", 8)
    schema = KeySchema("pk", "S", "sk", "N")
    for round_ in range(3):
        for i in range(20):
            value = f"key-{i}-é"
            assert schema.partition_prefix(value) == _prefix(value.encode())
            encoded, prefix = schema.check_key_parts({"pk": {"S": value}, "sk": {"N": str(round_)}})
            assert prefix == _prefix(value.encode()) and encoded.startswith(prefix)
            assert encoded == schema.encode(value, str(round_)) == schema.check_key(
                {"pk": {"S": value}, "sk": {"N": str(round_)}})
            assert len(schema._prefixes) <= 8
    hash_only = KeySchema("pk", "B")
    encoded, prefix = hash_only.check_item_parts({"pk": {"B": "AAE="}, "x": {"S": "y"}})
    assert encoded is prefix and prefix == _prefix(b"\x00\x01")


def test_key_schemas_compare_by_their_declaration_only():
    a, b = KeySchema("pk", "S"), KeySchema("pk", "S")
    a.partition_prefix("x")
    assert a == b and hash(a) == hash(b) and repr(a) == "KeySchema(hash_name='pk', hash_type='S', range_name=None, range_type=None)"
    assert KeySchema("pk", "S", "sk", "N").names == ("pk", "sk")


@pytest.mark.parametrize("count", [1, 3, 64])
def test_partition_index_is_the_token_range_owner(count):
    table = Table("t", KeySchema("pk", "S"), count)
    rng = random.Random(count)
    lows = [p.lo for p in table.partitions]
    samples = [bytes(rng.randrange(256) for _ in range(8)) + b"\x00\x01a" for _ in range(500)]
    samples += [p.lo_key for p in table.partitions] + [p.lo_key + b"\x00" for p in table.partitions]
    samples += [(p.hi - 1).to_bytes(8, "big") + b"\xff" for p in table.partitions]
    for key in samples:
        expected = bisect.bisect_right(lows, int.from_bytes(key[:8], "big")) - 1
        assert table.partition_index(key) == expected
        assert table.partition_of(key) is table.partitions[expected]


def _reference_range(items, bounds: Bounds, reverse: bool, limit: int | None, max_bytes: int) -> SimpleNamespace:
    """read_range as first written: irange plus accumulate, chunk by chunk, into a list of records."""
    page = SimpleNamespace(keys=[], records=[], last_key=None, read_bytes=0)
    it = items.irange(bounds.lo, bounds.hi, (bounds.lo_inclusive, bounds.hi_inclusive), reverse)
    while True:
        want = 256 if limit is None else min(256, limit - len(page.keys))
        chunk = list(islice(it, want))
        if not chunk:
            return page
        got = [items[k] for k in chunk]
        totals = list(accumulate(map(itemgetter(1), got), initial=page.read_bytes))
        cut = bisect_left(totals, max_bytes, 1)
        if cut < len(totals):
            page.keys += chunk[:cut]
            page.records += got[:cut]
            page.read_bytes, page.last_key = totals[cut], page.keys[-1]
            return page
        page.keys += chunk
        page.records += got
        page.read_bytes = totals[-1]
        if limit is not None and len(page.keys) >= limit:
            page.last_key = page.keys[-1]
            return page
        if len(chunk) < want:
            return page


def _filled_table() -> Table:
    table = Table("t", KeySchema("pk", "S", "sk", "N"), 1)
    rng = random.Random(1)
    for sk in range(700):
        key = table.schema.encode("p", str(sk))
        table.apply(Mutation(key, (b"{}", rng.randrange(1, 40))))
    table.apply(Mutation(table.schema.encode("q", "1"), (b"{}", 5)))
    return table


TABLE = _filled_table()
REFERENCE = SortedDict(TABLE.partitions[0].items())  # the layout read_range was first written for
SORTED = list(REFERENCE)


@settings(max_examples=300, deadline=None)
@given(st.integers(-1, 720), st.integers(-1, 720), st.booleans(), st.booleans(), st.booleans(),
       st.one_of(st.none(), st.integers(0, 800)), st.sampled_from([1, 50, 4000, 10**6]))
def test_read_range_equals_the_reference(a, b, lo_in, hi_in, reverse, limit, max_bytes):
    lo = SORTED[a] if 0 <= a < len(SORTED) else None
    hi = SORTED[b] if 0 <= b < len(SORTED) else None
    if lo is None and hi is None:
        lo = SORTED[0]
    bounds = Bounds(lo, hi, lo_in, hi_in)
    got = read_range(TABLE, bounds, reverse, limit, max_bytes)
    want = _reference_range(REFERENCE, bounds, reverse, limit, max_bytes)
    assert (list(zip(got.blobs, got.sizes)), got.last_key, got.read_bytes) == \
        (want.records, want.last_key, want.read_bytes)
    leaves = TABLE.partitions[0]._leaves  # a page copies nothing: it holds spans of the partition's leaves
    assert all(any(leaf is held for held in leaves) for leaf, _, _ in got.spans)


@pytest.mark.parametrize("limit,max_bytes", [(None, 10**6), (5, 10**6), (300, 10**6), (None, 3000), (600, 700)])
def test_scan_pages_stop_at_limit_or_cap(limit, max_bytes):
    page = read_scan(TABLE, None, limit, max_bytes=max_bytes)
    sizes = list(page.sizes)
    assert len(page.blobs) == len(sizes) == len(page.keys)
    assert page.keys == SORTED[:len(page.keys)] and page.read_bytes == sum(sizes)
    if limit is not None and len(page.keys) == limit and sum(sizes) < max_bytes:
        assert page.last_key == page.keys[-1]
    elif sum(sizes) >= max_bytes:
        assert sum(sizes[:-1]) < max_bytes and page.last_key == page.keys[-1]
    else:
        assert page.last_key is None and len(page.keys) == len(SORTED)


def test_capacity_units_equal_the_definition():
    for size in list(range(0, 20000, 7)) + [4095, 4096, 4097, 1023, 1024, 1025, 409_600, 10**7]:
        reads = max(1, -(-size // 4096))
        assert read_units(size, True) == float(reads) and read_units(size, False) == reads / 2
        assert write_units(size) == float(max(1, -(-size // 1024)))
        assert type(read_units(size, False)) is float and type(write_units(size)) is float


def _reference_number_size(text: str) -> int:
    if text == "0":
        return 1
    negative = text[0] == "-"
    body = text[1:] if negative else text
    whole, frac = body.split(".") if "." in body else (body, "")
    k = len((whole + frac).lstrip("0").rstrip("0"))
    e = len(whole) - 1 if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")) + 1)
    return 1 + (k + 1) // 2 + (1 if k % 2 == 0 and e % 2 == 0 else 0) + (1 if negative else 0)


@settings(max_examples=500, deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False, min_value=-10**30, max_value=10**30, places=5)
       | st.integers(-10**37, 10**37).map(Decimal))
def test_number_sizes_equal_the_general_rule(value):
    text = numbers.canonical(str(value))
    assert numbers.size(text) == _reference_number_size(text)


ATTRIBUTE = st.one_of(
    st.text(max_size=6).map(lambda s: {"S": s}),
    st.integers(-10**6, 10**6).map(lambda n: {"N": str(n)}),
    st.just({"BOOL": True}), st.just({"NULL": True}), st.just({"SS": ["a", "é"]}),
    st.just({"M": {"x": {"N": "1.5"}, "é": {"S": "ü"}}}), st.just({"B": "AAE="}),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=5), ATTRIBUTE, max_size=6))
def test_item_validation_and_sizes_equal_the_per_value_rules(item):
    generic = sum(utf8_len(name) + validate_value(dict(av)) for name, av in item.items())
    assert validate_item(item) == generic == item_size(item)
    assert item_size(item) == sum(utf8_len(name) + value_size(av) for name, av in item.items())


def test_item_validation_keeps_its_errors():
    with pytest.raises(ValidationException, match="Empty attribute name"):
        validate_item({"": {"S": "x"}})
    with pytest.raises(ValidationException, match="maximum length"):
        validate_item({"é" * 40000: {"S": "x"}})
    validate_item({"x" * 16383: {"S": "é"}})


def test_expression_caches_are_bounded_in_bytes(monkeypatch):
    """4 KB expressions parse to ~250 KB each: a cache bounded only by count could hold a gigabyte."""
    from dynalocal.expressions import compile as compile_module
    from dynalocal.expressions.partiql import parser as partiql_parser

    for module, parse in ((compile_module, lambda t: compile_module.template("ConditionExpression", t)),
                          (partiql_parser, lambda t: partiql_parser.parse_statement('SELECT * FROM "t" WHERE ' + t))):
        monkeypatch.setattr(module, "CACHE_BYTES", 1 << 20)
        module._cache.clear()
        for i in range(200):
            parse(" AND ".join(f"a{j} = b{j}" for j in range(i, i + 150)))  # ~2 KB each
            assert module._cache.bytes <= 1 << 20
        assert 0 < len(module._cache) < 20
        module._cache.clear()


def test_the_recorder_follows_every_write_but_rollbacks_before_the_listeners(monkeypatch):
    """The write-ahead log's recorder sees each put and delete (key, new, old) in order, before the
    listeners, without a Mutation built for it; a rollback (putting back what the log says) is not
    recorded; a delete of a missing item is neither recorded nor told."""
    from dynalocal.storage import table as table_module
    from dynalocal.storage.mutation import ROLLBACK

    table = Table("t", KeySchema("pk", "S"))
    seen: list = []
    table.recorder = lambda t, key, new, old: seen.append(("log", t, key, new, old))
    a, b = (b"x" * 8) + b"a", (b"x" * 8) + b"b"
    ra, rb = (b'{"pk":{"S":"a"}}', 6), (b'{"pk":{"S":"a"},"n":{"N":"1"}}', 8)
    built: list = []
    monkeypatch.setattr(table_module, "Mutation", lambda *args: built.append(args))  # none may be built
    assert table.write(0, a, ra) is None and table.write(0, a, rb) is None
    assert table.write(0, a, None) is None and table.write(0, b, None) is None  # b: missing
    assert seen == [("log", table, a, ra, None), ("log", table, a, rb, ra), ("log", table, a, None, rb)]
    assert built == [] and table.item_count == 0 and table.size_bytes == 0
    monkeypatch.undo()
    seen.clear()
    table.listeners.append(lambda m: seen.append(("listener", m.key)))
    table.write(0, b, ra)
    table.apply(Mutation(b, rb))
    table.apply(Mutation(b, ra, origin=ROLLBACK))
    assert seen == [("log", table, b, ra, None), ("listener", b), ("log", table, b, rb, ra), ("listener", b),
                    ("listener", b)]
    assert table.get(b) == ra and table.item_count == 1 and table.size_bytes == 6
