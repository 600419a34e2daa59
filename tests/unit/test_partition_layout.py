"""The key-ordered leaf layout of Partition against a plain model (a dict + sorted keys)."""
from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.storage import partition as partition_module
from dynalocal.storage.leaf import COLUMN, _shifted, head
from dynalocal.storage.partition import Partition

# 85 distinct keys, some prefixes of others: puts overwrite and deletes hit often enough to empty leaves
KEYS = st.lists(st.integers(0, 3), max_size=3).map(bytes)
BOUND = st.one_of(st.none(), KEYS)


def model_range(model: dict, lo, hi, inclusive, reverse, limit=None) -> list[bytes]:
    keys = sorted(model)
    i = 0 if lo is None else bisect_left(keys, lo) if inclusive[0] else bisect_right(keys, lo)
    j = len(keys) if hi is None else bisect_right(keys, hi) if inclusive[1] else bisect_left(keys, hi)
    out = keys[i:j]
    if reverse:
        out.reverse()
    return out if limit is None else out[:limit]


def check_leaves(part: Partition) -> None:
    """The layout's own invariants: leaves in key order, each within its range (bound[i-1], bound[i]),
    its buffers aligned; each leaf's pending changes within its range; no leaf empty or (beside
    another leaf) over 2 * LOAD."""
    leaves, changes, bounds = part._leaves, part._changes, part._bounds
    assert len(leaves) == len(changes) == len(bounds)
    assert bounds == sorted(bounds) and len(set(bounds)) == len(bounds)
    flat = []
    for i, leaf in enumerate(leaves):
        keys = leaf.key_list()
        assert len(keys) == len(leaf) == len(leaf.blob_list()) == len(leaf.heads) == len(leaf.ko) - 1
        assert len(leaf) <= 2 * partition_module.LOAD
        assert list(leaf.heads) == [head(k) for k in keys]
        low = bounds[i - 1] if i else None
        for key in keys + list(changes[i]):
            assert (low is None or key > low) and key <= bounds[i]
        assert len(changes[i]) < partition_module.FOLD
        flat += keys
    assert flat == sorted(flat) and len(set(flat)) == len(flat)


PUT = st.tuples(st.just("put"), KEYS, st.integers(0, 50))
DELETE = st.tuples(st.just("delete"), KEYS)
OPS = st.lists(st.one_of(
    PUT, PUT, PUT, PUT, DELETE, DELETE, DELETE,  # weighted so that leaves both fill up (splits) and drain (merges)
    st.tuples(st.just("load"), st.lists(st.tuples(KEYS, st.integers(0, 50)), max_size=12)),
    st.tuples(st.just("chunks"), BOUND, BOUND, st.tuples(st.booleans(), st.booleans()), st.booleans(),
              st.one_of(st.none(), st.integers(0, 40)), st.integers(1, 9)),
), min_size=40, max_size=300)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_partition_matches_a_sorted_dict_model(ops):
    saved = partition_module.LOAD, partition_module.FOLD
    # tiny leaves, so splits, joins and leaf-crossing reads all happen; a leaf merges its changes
    # once three have gathered, or when a read of its range needs them
    partition_module.LOAD, partition_module.FOLD = 4, 3
    try:
        part, model = Partition(0, 1), {}
        for op in ops:
            if op[0] == "put":
                record = (b"v%d" % op[2], op[2])
                assert part.put(op[1], record) == model.get(op[1])
                model[op[1]] = record
            elif op[0] == "delete":
                assert part.delete(op[1]) == model.pop(op[1], None)
            elif op[0] == "load":
                batch = dict((k, (b"l%d" % s, s)) for k, s in op[1])
                part.load(list(batch), list(batch.values()))
                model.update(batch)
            else:
                _, lo, hi, inclusive, reverse, limit, size = op
                want = model_range(model, lo, hi, inclusive, reverse, limit)
                chunks = list(part.chunks(lo, hi, inclusive, reverse, limit, size))
                assert all(len(k) == len(r) for k, r in chunks)
                # every chunk but the last holds exactly `size` keys; none is empty or larger
                assert all(len(k) == size for k, _ in chunks[:-1])
                assert all(0 < len(k) <= size for k, _ in chunks)
                assert [k for keys, _ in chunks for k in keys] == want
                assert [r for _, recs in chunks for r in recs] == [model[k] for k in want]
                read = []  # spans: whole leaves' columns and the slice [a:b] of each, in reading order
                for leaf, a, b in part.spans(lo, hi, inclusive, reverse, limit):
                    span = list(zip(leaf.key_list(a, b), zip(leaf.blob_list(a, b), leaf.sizes[a:b])))
                    read += span[::-1] if reverse else span
                assert read == [(k, model[k]) for k in want]
                assert list(part.range(lo, hi, inclusive=inclusive, reverse=reverse)) == \
                    model_range(model, lo, hi, inclusive, reverse)
            for key in list(model)[:5]:
                assert part.get(key) == model[key]
            assert len(part) == len(model)
            check_leaves(part)
            assert part.size_bytes == sum(s for _, s in model.values())
        assert list(part.items()) == sorted(model.items())
        assert part.get(b"absent-key") is None
    finally:
        partition_module.LOAD, partition_module.FOLD = saved


def test_leaves_split_and_merge_and_reads_cross_them():
    saved = partition_module.LOAD
    partition_module.LOAD = 4
    try:
        part, model = Partition(0, 1), {}
        order = [bytes([i * 37 % 200]) for i in range(200)]  # every byte < 200, scattered order
        for key in order:
            part.put(key, (key, 1))
            model[key] = (key, 1)
        check_leaves(part)
        assert list(part.range(None, None)) == sorted(model)  # merges the changes put since the last merge
        for key in order[:60]:  # every one now in a leaf: each replaced there, one at a time
            part.put(key, (key, 1))
            part.put(bytes([key[0], 0]), (key, 1))
            model[bytes([key[0], 0])] = (key, 1)
            assert next(part.range(key, None)) == key
            check_leaves(part)
        assert len(part._leaves) > 10  # the single first leaf has split many times
        for key in order[::3] + order[1::3]:  # drain most leaves below LOAD // 4: joins
            assert part.delete(key) == model.pop(key)
            check_leaves(part)
        assert list(part.range(None, None)) == sorted(model)
        assert all(len(leaf) >= 1 for leaf in part._leaves)
        want = sorted(model)
        for size in (1, 3, 7, 50):
            assert [k for keys, _ in part.chunks(None, None, size=size) for k in keys] == want
            assert [k for keys, _ in part.chunks(None, None, reverse=True, size=size) for k in keys] == want[::-1]
        assert [r for _, recs in part.chunks(want[3], want[-3], (False, True), limit=9) for r in recs] == \
            [model[k] for k in want[4:13]]
    finally:
        partition_module.LOAD = saved


def test_mass_deletes_leave_no_memory_behind() -> None:
    """After most keys are deleted the leaves hold only what is left (a merge drops deleted items and
    joins small leaves); reads, writes and order are unchanged."""
    part = Partition(0, 2**64)
    keys = [i.to_bytes(8, "big") for i in range(20_000)]
    for key in keys:
        part.put(key, (key, 1))
    for key in keys[:19_000]:
        part.delete(key)
    assert len(part) == 1000 and part.get(keys[-1]) == (keys[-1], 1) and part.get(keys[0]) is None
    assert list(part.range(None, None)) == keys[19_000:]
    check_leaves(part)
    held = sum(len(leaf) for leaf in part._leaves) + sum(map(len, part._changes))
    assert held <= 1000 + len(part._leaves) * partition_module.FOLD
    assert len(part._leaves) <= 1000 // (partition_module.LOAD // 4) + 1
    part.put(keys[0], (b"x", 1))
    assert part.get(keys[0]) == (b"x", 1) and len(part) == 1001


def test_a_write_merges_at_most_one_leaf(monkeypatch) -> None:
    """New keys spread evenly over partitions: each leaf merges its own changes when it has FOLD of them,
    so no write merges more than one leaf (and its neighbour, when they are joined), however many
    partitions and leaves reach their limits in the same round of writes."""
    count, step = 100, (1 << 64) // 100
    parts = [Partition(i * step, (i + 1) * step) for i in range(count)]
    for i, part in enumerate(parts):
        keys = [(i * step + 2 * n).to_bytes(8, "big") for n in range(8 * 256)]
        part.load(keys, [(b"v", 1)] * len(keys))
    folds: list[int] = []
    fold = Partition._fold

    def counted(self: Partition, li: int) -> None:
        folds[-1] += 1
        fold(self, li)

    monkeypatch.setattr(Partition, "_fold", counted)
    for n in range(400):
        for i, part in enumerate(parts):
            folds.append(0)
            part.put((i * step + 2 * n + 1).to_bytes(8, "big"), (b"w", 1))
    assert sum(folds) >= count, "every partition merged its changes"
    assert max(folds) == 1
    for part in parts:
        assert [k for k, _ in part.items()] == sorted(k for k, _ in part.items())
        check_leaves(part)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**31), max_size=1200), st.data())
def test_shifted_moves_each_offset_of_a_run_by_delta(offsets, data) -> None:
    """Short runs (the lanes' number from the table), long ones (from the lanes' bytes) and empty ones, by
    any delta that keeps every moved offset a u32: the same as adding delta to each."""
    values = array(COLUMN, offsets)
    a = data.draw(st.integers(0, len(values)))
    b = data.draw(st.integers(a, len(values)))
    run = values[a:b]
    delta = data.draw(st.integers(-min(run, default=0), 2**32 - 1 - max(run, default=0)))
    assert _shifted(values, a, b, delta) == array(COLUMN, [v + delta for v in run])
