"""One hash partition: a contiguous token range holding items sorted by encoded key.

Invariant: every key starts with an 8-byte token t with lo <= t < hi. Values are records
`(blob, size)`: the item's JSON bytes as returned on the wire and its DynamoDB size, so
reads serialise nothing and capacity needs no decoding.

Layout: the items in key order, split into packed leaves (storage.leaf: a few flat buffers per
leaf, no Python object per item), each with a small dict of the changes made to its range since it
was built (key -> record, or None for a delete). Leaf i holds the keys k with bound[i-1] < k <=
bound[i]; `_bounds[i]` is at least its greatest key (the last leaf's grows with the keys put past
it). So a point read is two bisections in C and a dict probe; a write is a dict insert; and once a
leaf has gathered FOLD changes, or an ordered read needs its range, the changes are merged into a
new leaf (storage.merge: by columns in numpy, or run by run for a few changes), which is split
above 2 * LOAD items and joined with a neighbour below LOAD // 4. An item costs its bytes and ~16
bytes of offsets and size (docs/performance.md, *The packed store*), and an ordered read slices neighbouring items out
of one buffer (docs/performance.md, *Query locality*). Callers use only `get`, `spans`, `columns`, `chunks`,
`range`, `items`, `load`, `load_columns`, `put`, `delete` and `len`.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import islice
from operator import itemgetter, lt
from typing import Any

from dynalocal.storage.leaf import COLUMN, EMPTY, Leaf, Record, joined
from dynalocal.storage.merge import merged

CHUNK = 256  # keys per C-level step of an ordered read
LOAD = 512  # leaf length: split above 2 * LOAD, joined with a neighbour below LOAD // 4
FOLD = 128  # changes a leaf gathers before they are merged into it (docs/performance.md, *The packed store*)
BULK_SHARE = 8  # a load of more than 1/8 of the partition's keys merges leaf by leaf instead of key by key
SIZES = COLUMN  # array type of sizes: unsigned 32-bit (an item is at most 400 KB)
Sizes = Any  # array('I') of item sizes (array is not generic before Python 3.12)
Span = tuple[Leaf, int, int]  # items [a, b) of a leaf
_MISS = object()
_key = itemgetter(0)


class Partition:
    """Items of one token range, in encoded-key order."""

    __slots__ = ("lo", "hi", "_leaves", "_changes", "_bounds", "_count", "size_bytes", "_probe")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi
        self._leaves: list[Leaf] = []
        self._changes: list[dict[bytes, Record | None]] = []  # per leaf: writes not merged into it yet
        self._bounds: list[bytes] = []  # per leaf: the greatest key its range takes
        self._count = 0
        self.size_bytes = 0
        # (key, leaf, record or None): the last point read that reached a leaf. A write path reads the old
        # item and then puts the new one; `put` takes the old one from here instead of searching the leaf
        # again (valid while that leaf is the key's: leaves never change).
        self._probe: tuple[bytes, Leaf, Record | None] | None = None

    @property
    def lo_key(self) -> bytes:
        return self.lo.to_bytes(8, "big")

    def __len__(self) -> int:
        return self._count

    def get(self, key: bytes) -> Record | None:
        bounds = self._bounds
        li = bisect_left(bounds, key)
        if li == len(bounds):
            return None
        changes = self._changes[li]
        if changes:
            found = changes.get(key, _MISS)
            if found is not _MISS:
                return found  # type: ignore[return-value]
        leaf = self._leaves[li]
        record = leaf.get(key)
        self._probe = (key, leaf, record)
        return record

    def _leaf_for(self, key: bytes) -> int:
        """The leaf whose range takes `key`; past the last bound, the last leaf's range grows to it."""
        bounds = self._bounds
        li = bisect_left(bounds, key)
        if li == len(bounds):
            if not bounds:
                self._leaves.append(EMPTY)
                self._changes.append({})
                bounds.append(key)
                return 0
            li -= 1
            bounds[li] = key
        return li

    def put(self, key: bytes, record: Record) -> Record | None:
        li = self._leaf_for(key)
        changes = self._changes[li]
        old = changes.get(key, _MISS)
        if old is _MISS:
            leaf, probe = self._leaves[li], self._probe
            old = probe[2] if probe is not None and probe[1] is leaf and probe[0] == key else leaf.get(key)
        changes[key] = record
        if old is None:
            self._count += 1
            self.size_bytes += record[1]
        else:
            self.size_bytes += record[1] - old[1]  # type: ignore[index]
        if len(changes) >= FOLD:
            self._fold(li)
        return old  # type: ignore[return-value]

    def delete(self, key: bytes) -> Record | None:
        bounds = self._bounds
        li = bisect_left(bounds, key)
        if li == len(bounds):
            return None
        changes, leaf = self._changes[li], self._leaves[li]
        old = changes.get(key, _MISS)
        if old is _MISS:
            old = leaf.get(key)
            if old is None:
                return None
            changes[key] = None
        elif old is None:
            return None
        elif leaf.index(key) >= 0:
            changes[key] = None  # hides the leaf's item until the merge drops it
        else:
            del changes[key]
        self._count -= 1
        self.size_bytes -= old[1]  # type: ignore[index]
        if len(changes) >= FOLD:
            self._fold(li)
        return old  # type: ignore[return-value]

    def _fold(self, li: int) -> None:
        """Merge leaf li's changes into it; split, drop or join the result as its length asks."""
        leaf = merged(self._leaves[li], sorted(self._changes[li].items(), key=_key))
        self._changes[li] = {}
        n = len(leaf)
        if n < LOAD // 4 and len(self._leaves) > 1:
            other = li + 1 if li + 1 < len(self._leaves) else li - 1
            first = min(li, other)
            self._leaves[li] = leaf
            if self._changes[other]:
                self._leaves[other] = merged(self._leaves[other], sorted(self._changes[other].items(), key=_key))
            leaf = joined(self._leaves[first:first + 2])
            self._place(first, first + 2, leaf, self._bounds[first + 1])
            return
        self._place(li, li + 1, leaf, self._bounds[li])

    def _place(self, a: int, b: int, leaf: Leaf, bound: bytes) -> None:
        """Put `leaf` (no pending changes, greatest range key `bound`) in place of leaves a..b-1, split
        into pieces of about LOAD items if it is longer than 2 * LOAD; an empty one is dropped."""
        n = len(leaf)
        if not n:
            pieces: list[Leaf] = []
        elif n <= 2 * LOAD:
            pieces = [leaf]
        else:
            count = n // LOAD
            cuts = [n * j // count for j in range(count + 1)]
            pieces = [leaf.slice(cuts[j], cuts[j + 1]) for j in range(count)]
        self._leaves[a:b] = pieces
        self._changes[a:b] = [{} for _ in pieces]
        self._bounds[a:b] = [piece.key(len(piece) - 1) for piece in pieces[:-1]] + ([bound] if pieces else [])

    def _settle(self, lo: bytes | None, hi: bytes | None) -> None:
        """Merge the changes of the leaves over [lo, hi] (None: open) that hold a change within it, so
        that the range can be read from the leaves alone."""
        bounds = self._bounds
        li = 0 if lo is None else bisect_left(bounds, lo)
        while li < len(bounds):
            changes = self._changes[li]
            if changes and _touches(changes, lo, hi):
                floor = bounds[li - 1] if li else None
                self._fold(li)
                li = 0 if floor is None else bisect_right(bounds, floor)  # the folded leaves start here
                continue
            if hi is not None and bounds[li] >= hi:
                return
            li += 1

    def _at(self, key: bytes | None, after: bool, default_end: bool) -> tuple[int, int]:
        """Position (leaf, index) of the first key >= key (> key when `after`); None = an end."""
        if key is None:
            return (len(self._bounds), 0) if default_end else (0, 0)
        li = bisect_left(self._bounds, key)
        if li == len(self._bounds):
            return li, 0
        leaf = self._leaves[li]
        return li, leaf.find_after(key) if after else leaf.find(key)

    def _segments(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool],
                  reverse: bool) -> list[Span]:
        """(leaf, a, b): the slices [a:b] of the leaves in the range, in reading order, after merging the
        changes within it. A list, taken at once: the leaves are immutable, so a reader that keeps it
        reads this moment's items even if later writes replace them."""
        self._settle(lo, hi)
        sl, si = self._at(lo, not inclusive[0], False)
        el, ei = self._at(hi, inclusive[1], True)
        leaves = self._leaves
        out = []
        for li in range(sl, min(el, len(leaves) - 1) + 1):
            a = si if li == sl else 0
            b = ei if li == el else len(leaves[li])
            if a < b:
                out.append((leaves[li], a, b))
        if reverse:
            out.reverse()
        return out

    def spans(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
              reverse: bool = False, limit: int | None = None) -> list[Span]:
        """(leaf, a, b): the range as slices [a:b] of whole leaves, in reading order (for `reverse`,
        each span is read from b - 1 down to a), at most `limit` items in all. Nothing is copied."""
        out = self._segments(lo, hi, inclusive, reverse)
        if limit is None:
            return out
        left = limit
        for i, (leaf, a, b) in enumerate(out):
            if b - a >= left:
                out[i] = (leaf, b - left, b) if reverse else (leaf, a, a + left)
                del out[i + 1 if left else i:]
                break
            left -= b - a
        return out

    def columns(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
                reverse: bool = False, limit: int | None = None,
                size: int = CHUNK) -> Iterator[tuple[list[bytes], list[bytes], Sizes]]:
        """(keys, blobs, sizes) of the range in reading order, `size` at a time, at most `limit` in all
        (every chunk but the last holds exactly `size`)."""
        keys: list[bytes] = []
        blobs: list[bytes] = []
        sizes = array(SIZES)
        for leaf, a, b in self.spans(lo, hi, inclusive, reverse, limit):
            while a < b:
                take = min(size - len(keys), b - a)
                c, d = (b - take, b) if reverse else (a, a + take)
                got_keys, got_blobs, got_sizes = leaf.key_list(c, d), leaf.blob_list(c, d), leaf.sizes[c:d]
                if reverse:
                    got_keys.reverse()
                    got_blobs.reverse()
                    got_sizes.reverse()
                    b -= take
                else:
                    a += take
                keys += got_keys
                blobs += got_blobs
                sizes += got_sizes
                if len(keys) == size:
                    yield keys, blobs, sizes
                    keys, blobs, sizes = [], [], array(SIZES)
        if keys:
            yield keys, blobs, sizes

    def chunks(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
               reverse: bool = False, limit: int | None = None,
               size: int = CHUNK) -> Iterator[tuple[list[bytes], list[Record]]]:
        """(keys, records) of the range, as `columns` reads it (backups, re-partitioning)."""
        for keys, blobs, sizes in self.columns(lo, hi, inclusive, reverse, limit, size):
            yield keys, list(zip(blobs, sizes))

    def range(self, lo: bytes | None, hi: bytes | None, *, inclusive: tuple[bool, bool] = (True, False),
              reverse: bool = False) -> Iterator[bytes]:
        """Encoded keys between lo and hi (None = open), O(log n) to start, O(1) per key."""
        for leaf, a, b in self.spans(lo, hi, inclusive, reverse):
            keys = leaf.key_list(a, b)
            yield from reversed(keys) if reverse else keys

    def items(self) -> Iterator[tuple[bytes, Record]]:
        """Every (key, record) in key order (re-partitioning, index back-fill)."""
        for leaf, a, b in self.spans(None, None):
            yield from zip(leaf.key_list(a, b), zip(leaf.blob_list(a, b), leaf.sizes[a:b]))

    def load(self, keys: list[bytes], records: list[Record]) -> None:
        """Put many distinct keys at once (recovery, re-partitioning), telling no listener."""
        self.load_columns(keys, list(map(itemgetter(0), records)), array(SIZES, map(itemgetter(1), records)))

    def load_columns(self, keys: list[bytes], blobs: list[bytes], sizes: Sizes,
                     records: list[Record] | None = None) -> None:
        """`load` from the columns a snapshot keeps: into an empty partition in key order (a snapshot's
        chunks), leaves cut from them; a large share of the partition's keys, merged leaf by leaf; a
        few, put one by one."""
        if not keys:
            return
        if not self._count and all(map(lt, keys, islice(keys, 1, None))):
            self._append_sorted(keys, blobs, array(SIZES, sizes))
            return
        if BULK_SHARE * len(keys) <= self._count:
            for key, blob, size in zip(keys, blobs, sizes):
                self.put(key, (blob, size))
            return
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self._merge_sorted([(keys[i], (blobs[i], sizes[i])) for i in order])

    def load_leaves(self, leaves: list[Leaf]) -> None:
        """Take these leaves (in key order, none empty) as the partition's items: into an empty partition,
        from a snapshot's leaf chunks; nothing per item."""
        self._leaves = list(leaves)
        self._changes = [{} for _ in leaves]
        self._bounds = [leaf.key(len(leaf) - 1) for leaf in leaves]
        self._count = sum(map(len, leaves))
        self.size_bytes = sum(sum(leaf.sizes) for leaf in leaves)

    def _append_sorted(self, keys: list[bytes], blobs: list[bytes], sizes: Sizes) -> None:
        """Leaves of LOAD items cut from sorted, distinct columns, into an empty partition."""
        self._leaves, self._changes, self._bounds = [], [], []
        for i in range(0, len(keys), LOAD):
            self._leaves.append(Leaf.of(keys[i:i + LOAD], blobs[i:i + LOAD], sizes[i:i + LOAD]))
            self._changes.append({})
            self._bounds.append(keys[min(i + LOAD, len(keys)) - 1])
        self._count = len(keys)
        self.size_bytes = sum(sizes)

    def _merge_sorted(self, changes: list[tuple[bytes, Record | None]]) -> None:
        """Put sorted, distinct (key, record) pairs, each leaf merging its run of them at once (with the
        changes it holds already)."""
        pending: dict[bytes, Record | None] = {}
        for held in self._changes:
            pending.update(held)
        if pending:
            pending.update(changes)
            changes = sorted(pending.items(), key=_key)
            self._changes = [{} for _ in self._leaves]
        if not self._leaves:
            self._leaves, self._changes, self._bounds = [EMPTY], [{}], [changes[-1][0]]
        elif changes[-1][0] > self._bounds[-1]:
            self._bounds[-1] = changes[-1][0]
        keys = list(map(_key, changes))
        start, li = 0, 0
        while li < len(self._leaves) and start < len(changes):
            end = bisect_right(keys, self._bounds[li], start)
            if end == start:
                li += 1
                continue
            before = len(self._leaves)
            self._place(li, li + 1, merged(self._leaves[li], changes[start:end]), self._bounds[li])
            li += len(self._leaves) - before + 1
            start = end
        self._count = sum(map(len, self._leaves))
        self.size_bytes = sum(sum(leaf.sizes) for leaf in self._leaves)


def _touches(changes: dict[bytes, Record | None], lo: bytes | None, hi: bytes | None) -> bool:
    """Whether a change's key lies within [lo, hi] (None: open)."""
    if lo is None:
        return hi is None or any(key <= hi for key in changes)
    if hi is None:
        return any(key >= lo for key in changes)
    return any(lo <= key <= hi for key in changes)
