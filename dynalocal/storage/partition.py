"""One hash partition: a contiguous token range holding items sorted by encoded key.

Invariant: every key starts with an 8-byte token t with lo <= t < hi. Values are records
`(blob, size)`: the item's JSON bytes as returned on the wire and its DynamoDB size, so
reads serialise nothing and capacity needs no decoding.

Layout: a dict (key -> record) for point reads, plus the keys in order split into leaves
(as sortedcontainers does) with each leaf's blobs in a parallel list and their sizes in a
parallel array, so an ordered read slices neighbouring blobs and sizes out of one leaf
instead of looking every key up in the hash table, and touches neither the key nor the
record objects: a Query of 100 items on a 1M-item table reads each item's blob and nothing
else scattered in memory (README, Query locality). Callers use only `get`, `spans`,
`columns`, `chunks`, `range`, `items`, `load`, `put` and `delete`.

Insertion is deferred: a new key goes into the dict and onto a list of fresh keys, and is
placed in the leaves only when an ordered read needs it or when the fresh keys outnumber the
placed ones or reach a limit (about FRESH_MAX, staggered across partitions): up to an eighth of
the keys one by one by binary search, in key order, more by one merge-based rebuild (so a large
partition never pauses long). Finding a key's place compares it with ~log2(n) keys scattered in
memory, the main cost of a write on a large partition; a rebuild instead merges keys that are
mostly read in sequence.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import chain
from operator import itemgetter
from typing import Any

Record = tuple[bytes, int]
CHUNK = 256  # keys per C-level step of an ordered read
LOAD = 512  # leaf length: split above 2 * LOAD, merged with a neighbour below LOAD // 2
FRESH_SCAN = 32  # fresh keys a delete may scan for its key; more are placed first
REBUILD_SHARE = 8  # fresh keys above 1/8 of all are placed by one rebuild, fewer one by one (see `_settle`)
FRESH_MAX = 4096  # fresh keys placed at once, on average (5/4 of it at most): bounds the pause of one write
_GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / golden ratio: spreads partitions' staggered limits (see `__init__`)
SHRINK_MIN = 4096  # a dict that held fewer keys is never copied smaller (see `delete`)

_blob = itemgetter(0)
_size = itemgetter(1)
SIZES = "I"  # array type of a leaf's sizes: unsigned 32-bit (an item is at most 400 KB)
Sizes = Any  # array('I') of item sizes (array is not generic before Python 3.12)


class Partition:
    """Items of one token range, in encoded-key order."""

    # `get` is the dict's own C-level lookup, bound once: the hottest call of all.
    __slots__ = ("lo", "hi", "_map", "_keys", "_blobs", "_sizes", "_maxes", "_fresh", "_fresh_max", "_high",
                 "size_bytes", "get")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi
        self._map: dict[bytes, Record] = {}
        self._keys: list[list[bytes]] = []  # leaves of keys in order
        self._blobs: list[list[bytes]] = []  # each leaf's blobs, parallel to its keys
        self._sizes: list[Sizes] = []  # each leaf's sizes, parallel to its keys
        self._maxes: list[bytes] = []  # each leaf's last key
        self._fresh: list[bytes] = []  # keys in the dict but not yet in the leaves, in arrival order
        # Fresh keys placed at once: 3/4 to 5/4 of FRESH_MAX (the same mean), staggered by token range.
        # Writes spread evenly over a table's partitions would otherwise bring every partition to one
        # limit together, and their placements (a few ms each on large partitions) would come all at once.
        share = ((lo >> 32) * _GOLDEN & 0xFFFFFFFFFFFFFFFF) / 2.0 ** 64
        self._fresh_max = FRESH_MAX * 3 // 4 + int(share * (FRESH_MAX // 2))
        self._high = 0  # the most keys a delete has seen in the dict since it was last compacted
        self.size_bytes = 0
        self.get = self._map.get  # (key) -> Record | None

    @property
    def lo_key(self) -> bytes:
        return self.lo.to_bytes(8, "big")

    def put(self, key: bytes, record: Record) -> Record | None:
        items = self._map
        old = items.get(key)
        items[key] = record
        if old is None:  # a new key: placed in the leaves later (see the module's docstring)
            self.size_bytes += record[1]
            fresh = self._fresh
            fresh.append(key)
            if len(fresh) > LOAD and (2 * len(fresh) > len(items) or len(fresh) >= self._fresh_max):
                self._settle()
            return None
        self.size_bytes += record[1] - old[1]
        li = bisect_left(self._maxes, key)  # overwrite in place, unless the key is still fresh
        if li < len(self._maxes):
            leaf = self._keys[li]
            i = bisect_left(leaf, key)
            if i < len(leaf) and leaf[i] == key:
                self._blobs[li][i] = record[0]
                self._sizes[li][i] = record[1]
        return old

    def delete(self, key: bytes) -> Record | None:
        if len(self._fresh) > FRESH_SCAN:
            self._settle()  # so that a key not in the leaves is found by a short scan below
        items = self._map
        old = items.pop(key, None)
        if old is None:
            return None
        self.size_bytes -= old[1]
        count = len(items)
        if count > self._high:
            self._high = count
        elif count < self._high >> 2 and self._high > SHRINK_MIN:
            self._compact()
        maxes, keys, blobs, sizes = self._maxes, self._keys, self._blobs, self._sizes
        li = bisect_left(maxes, key)
        leaf = keys[li] if li < len(maxes) else None
        i = bisect_left(leaf, key) if leaf is not None else 0
        if leaf is None or i == len(leaf) or leaf[i] != key:
            self._fresh.remove(key)  # not placed yet
            return old
        del leaf[i]
        del blobs[li][i]
        del sizes[li][i]
        if not leaf:
            del keys[li], blobs[li], sizes[li], maxes[li]
        else:
            maxes[li] = leaf[-1]
            if len(leaf) < LOAD // 2 and len(keys) > 1:
                self._merge(li if li + 1 < len(keys) else li - 1)
        return old

    def _compact(self) -> None:
        """Copy the dict into one sized for what it holds now: a dict never shrinks by itself, so after
        mass deletes its table (and its deleted slots) would stay at the size of the largest it was.
        Copies happen at each quartering of the count: O(1) amortised per delete."""
        self._map = dict(self._map)
        self.get = self._map.get
        self._high = len(self._map)

    def _settle(self) -> None:
        """Place the fresh keys in the leaves: one by one when few, else by rebuilding them all. Placing a key by
        binary search costs ~1 µs, a rebuild (a merge of two sorted runs) ~0.1 µs per key of the partition:
        above an eighth of the keys the rebuild is the cheaper (a snapshot settles everything written since
        the last one, about a third of a growing table)."""
        fresh = self._fresh
        self._fresh = []
        items = self._map
        if REBUILD_SHARE * len(fresh) <= len(items):
            fresh.sort()  # neighbours land in the same leaf, touching fewer cache lines
            for key in fresh:
                self._place(key, items[key])
            return
        placed = chain.from_iterable(self._keys)
        fresh.sort()  # the keys to merge, compared while in cache
        self._rebuild(sorted(chain(placed, fresh)))  # two sorted runs: one merge

    def _place(self, key: bytes, record: Record) -> None:
        """Insert a key known to be absent from the leaves."""
        maxes = self._maxes
        blob, size = record
        if not maxes:
            self._keys.append([key])
            self._blobs.append([blob])
            self._sizes.append(array(SIZES, (size,)))
            maxes.append(key)
            return
        li = bisect_right(maxes, key)
        if li == len(maxes):  # past the last key: append to the last leaf
            li -= 1
            self._keys[li].append(key)
            self._blobs[li].append(blob)
            self._sizes[li].append(size)
            maxes[li] = key
        else:
            leaf = self._keys[li]
            i = bisect_right(leaf, key)
            leaf.insert(i, key)
            self._blobs[li].insert(i, blob)
            self._sizes[li].insert(i, size)
        if len(self._keys[li]) > 2 * LOAD:
            self._split(li)

    def _rebuild(self, ordered: list[bytes]) -> None:
        """Leaves of LOAD keys from all keys in order (their records from the dict)."""
        records = list(map(self._map.__getitem__, ordered))
        self._leaves(ordered, list(map(_blob, records)), array(SIZES, map(_size, records)))

    def _leaves(self, ordered: list[bytes], blobs: list[bytes], sizes: Sizes) -> None:
        """Leaves of LOAD keys from keys in order and their blobs and sizes."""
        starts = range(0, len(ordered), LOAD)
        self._keys = [ordered[i:i + LOAD] for i in starts]
        self._blobs = [blobs[i:i + LOAD] for i in starts]
        self._sizes = [sizes[i:i + LOAD] for i in starts]
        self._maxes = [leaf[-1] for leaf in self._keys]
        self._fresh = []

    def _split(self, li: int) -> None:
        keys, blobs, sizes = self._keys[li], self._blobs[li], self._sizes[li]
        half = len(keys) // 2
        self._keys[li:li + 1] = [keys[:half], keys[half:]]
        self._blobs[li:li + 1] = [blobs[:half], blobs[half:]]
        self._sizes[li:li + 1] = [sizes[:half], sizes[half:]]
        self._maxes[li:li + 1] = [keys[half - 1], keys[-1]]

    def _merge(self, li: int) -> None:
        """Join leaf li with leaf li + 1 (then split again if too long)."""
        self._keys[li] += self._keys.pop(li + 1)
        self._blobs[li] += self._blobs.pop(li + 1)
        self._sizes[li] += self._sizes.pop(li + 1)
        self._maxes[li] = self._maxes.pop(li + 1)
        if len(self._keys[li]) > 2 * LOAD:
            self._split(li)

    def load(self, keys: list[bytes], records: list[Record]) -> None:
        """Put many distinct keys at once (recovery, re-partitioning): one sort-based rebuild, no listener."""
        self.load_columns(keys, list(map(_blob, records)), array(SIZES, map(_size, records)), records)

    def load_columns(self, keys: list[bytes], blobs: list[bytes], sizes: Sizes,
                     records: list[Record] | None = None) -> None:
        """`load` from the columns a snapshot keeps (its records are made here unless given)."""
        items = self._map
        if items:
            current = items.get
            self.size_bytes -= sum(old[1] for old in map(current, keys) if old is not None)
        empty = not items
        items.update(zip(keys, zip(blobs, sizes) if records is None else records))
        self.size_bytes += sum(sizes)
        if empty and len(items) == len(keys) and keys == sorted(keys):  # distinct and in order: a snapshot's chunks
            self._leaves(keys, blobs, sizes)  # in order already, the leaves are slices of them
            return
        self._rebuild(sorted(items))

    def _at(self, key: bytes | None, after: bool, default_end: bool) -> tuple[int, int]:
        """Position (leaf, index) of the first key >= key (> key when `after`); None = an end."""
        if key is None:
            return (len(self._maxes), 0) if default_end else (0, 0)
        maxes = self._maxes
        if after:
            li = bisect_right(maxes, key)
            return (li, bisect_right(self._keys[li], key)) if li < len(maxes) else (li, 0)
        li = bisect_left(maxes, key)
        return (li, bisect_left(self._keys[li], key)) if li < len(maxes) else (li, 0)

    def _segments(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool],
                  reverse: bool) -> Iterator[tuple[int, int, int]]:
        """(leaf, a, b): the slices [a:b] of each leaf in the range, in reading order (fresh keys placed:
        callers call `_settle` first, before they read the leaf lists, which a rebuild replaces)."""
        sl, si = self._at(lo, not inclusive[0], False)
        el, ei = self._at(hi, inclusive[1], True)
        keys = self._keys
        leaves = range(sl, min(el, len(keys) - 1) + 1)
        for li in reversed(leaves) if reverse else leaves:
            a = si if li == sl else 0
            b = ei if li == el else len(keys[li])
            if a < b:
                yield li, a, b

    def range(self, lo: bytes | None, hi: bytes | None, *, inclusive: tuple[bool, bool] = (True, False),
              reverse: bool = False) -> Iterator[bytes]:
        """Encoded keys between lo and hi (None = open), O(log n) to start, O(1) per key."""
        if self._fresh:
            self._settle()
        keys = self._keys
        for li, a, b in self._segments(lo, hi, inclusive, reverse):
            if reverse:
                yield from reversed(keys[li][a:b])
            else:
                yield from keys[li][a:b]

    def spans(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
              reverse: bool = False,
              limit: int | None = None) -> Iterator[tuple[list[bytes], list[bytes], Sizes, int, int]]:
        """(leaf keys, leaf blobs, leaf sizes, a, b): the range as slices [a:b] of whole leaves, in
        reading order, at most `limit` entries in all. Nothing is copied: a reader that needs only
        blobs and sizes (a Query) touches no key or record object, only each item's blob."""
        left = len(self._map) if limit is None else limit
        if self._fresh:
            self._settle()
        keys, blobs, sizes = self._keys, self._blobs, self._sizes
        for li, a, b in self._segments(lo, hi, inclusive, reverse):
            if left <= 0:
                return
            if b - a > left:
                a, b = (b - left, b) if reverse else (a, a + left)
            left -= b - a
            yield keys[li], blobs[li], sizes[li], a, b

    def columns(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
                reverse: bool = False, limit: int | None = None,
                size: int = CHUNK) -> Iterator[tuple[list[bytes], list[bytes], Sizes]]:
        """(keys, blobs, sizes) of the range in reading order, `size` at a time, at most `limit` in all.

        All three are slices of neighbouring leaf entries, so no Python code runs per item; a
        reader that stops early (a full 1 MB page) reads no further chunk.
        """
        out: tuple[list[bytes], list[bytes], Sizes] | None = None
        for keys, blobs, sizes, a, b in self.spans(lo, hi, inclusive, reverse, limit):
            while a < b:
                taken = 0 if out is None else len(out[0])
                take = min(size - taken, b - a)
                if reverse:
                    cut = keys[b - take:b], blobs[b - take:b], sizes[b - take:b]
                    for column in cut:
                        column.reverse()
                    b -= take
                else:
                    cut = keys[a:a + take], blobs[a:a + take], sizes[a:a + take]
                    a += take
                if out is None:
                    out = cut
                else:
                    out[0].extend(cut[0])
                    out[1].extend(cut[1])
                    out[2].extend(cut[2])
                if taken + take == size:
                    yield out
                    out = None
        if out is not None:
            yield out

    def chunks(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
               reverse: bool = False, limit: int | None = None,
               size: int = CHUNK) -> Iterator[tuple[list[bytes], list[Record]]]:
        """(keys, records) of the range, as `columns` reads it (backups, re-partitioning): the records are the
        dict's own, so a copy of the items costs a reference per item, not a new record."""
        record = self._map.__getitem__
        for keys, _, _ in self.columns(lo, hi, inclusive, reverse, limit, size):
            yield keys, list(map(record, keys))

    def items(self) -> Iterator[tuple[bytes, Record]]:
        """Every (key, record) in key order (re-partitioning, index back-fill)."""
        if self._fresh:
            self._settle()
        keys = list(chain.from_iterable(self._keys))
        return zip(keys, map(self._map.__getitem__, keys))

    def __len__(self) -> int:
        return len(self._map)
