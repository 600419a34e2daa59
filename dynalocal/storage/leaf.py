"""A packed leaf: a run of items in key order held in a few flat buffers, never changed once built.

Layout of n items (every buffer is one object, so an item costs its bytes and 16 bytes of offsets,
not a Python object per key and per item; docs/performance.md, *The packed store*):

    keys   bytes     the encoded keys, concatenated
    ko     array(I)  n + 1 offsets into `keys`: key i is keys[ko[i]:ko[i + 1]]
    heads  array(I)  each key's first four bytes as a big-endian number (zero-padded): searched in C
    body   bytes     the items' wire JSON, each followed by a comma
    bo     array(I)  n + 1 offsets into `body`: item i is body[bo[i]:bo[i + 1] - 1]
    sizes  array(I)  each item's DynamoDB size

A run of neighbouring items is one slice of `body` (the Query path copies no item on its own), and
a run of a leaf copied into another is a slice of each buffer (`Builder`; of the keys and the body, a
view, so their bytes are copied once, by the new leaf's join): merging k changes into a leaf run by
run (`merged_runs`) is Python work per change and C work (memcpy, offset shifts) per item; many
changes are merged by columns instead (storage.merge). Leaves are immutable,
so a reader may keep a reference to one (a page, a snapshot) while the partition replaces it.

A point read finds the keys sharing the key's first four bytes by bisection of `heads` in C (stored
keys start with an 8-byte hash token, so that is nearly always one key, or one partition key's
items), then compares whole keys among them.
"""
from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate, islice
from operator import itemgetter
from typing import Any

Record = tuple[bytes, int]
Offsets = Any  # array('I') (array is not generic before Python 3.12)
COLUMN = "I"  # offsets, heads and sizes: unsigned 32-bit (a leaf's buffers stay far below 4 GB)
_LITTLE = sys.byteorder == "little"
_first4 = itemgetter(slice(0, 4))
_plus_one = (1).__add__


def head(key: bytes) -> int:
    """A key's first four bytes as a number, zero-padded: non-decreasing in key order."""
    value = int.from_bytes(key[:4], "big")
    return value if len(key) >= 4 else value << 8 * (4 - len(key))


def heads_of(keys: list[bytes]) -> Offsets:
    """`head` of every key, in C when each key has four bytes or more (every stored key has eight)."""
    joined = b"".join(map(_first4, keys))
    if len(joined) != 4 * len(keys):
        return array(COLUMN, map(head, keys))
    out = array(COLUMN)
    out.frombytes(joined)
    if _LITTLE:
        out.byteswap()
    return out


_LANE = b"\x01\x00\x00\x00"  # a 1 in a 32-bit lane (the same in either byte order)
_ORDER = sys.byteorder
SHORT_RUN = 64  # runs up to this long take their lanes' number from a table (most runs of a fold are short)
_LANE_NUMBERS = [int.from_bytes(_LANE * n, _ORDER) for n in range(SHORT_RUN + 1)]


def _shifted(offsets: Offsets, a: int, b: int, delta: int) -> Offsets:
    """offsets[a:b], each moved by delta, in C.

    The run is shifted as one integer: its bytes read as a number whose 32-bit lanes are the offsets,
    plus delta times the number with a 1 in each lane. Every moved offset lies in [0, 2**32), so no
    carry or borrow crosses a lane and the sum's bytes are the moved offsets. Measured cheaper than
    `map(delta.__add__, ...)` from two offsets on (0.46 against 0.49 µs; 0.59 against 1.73 µs for 24,
    3.9 against 29 µs for 512), with the lanes' number of a short run from a table."""
    part = offsets[a:b]
    if not delta:
        return part
    n = b - a
    lanes = _LANE_NUMBERS[n] if n <= SHORT_RUN else int.from_bytes(_LANE * n, _ORDER)
    out = array(COLUMN)
    out.frombytes((int.from_bytes(part, _ORDER) + delta * lanes).to_bytes(4 * n, _ORDER))
    return out


class Leaf:
    """Items in key order, packed (see the module's docstring); immutable."""

    __slots__ = ("keys", "ko", "heads", "body", "bo", "sizes")

    def __init__(self, keys: bytes, ko: Offsets, heads: Offsets, body: bytes, bo: Offsets, sizes: Offsets) -> None:
        self.keys, self.ko, self.heads, self.body, self.bo, self.sizes = keys, ko, heads, body, bo, sizes

    @classmethod
    def of(cls, keys: list[bytes], blobs: list[bytes], sizes: Offsets) -> Leaf:
        """A leaf of these columns (keys sorted and distinct; sizes an array('I') or a list)."""
        body = b",".join(blobs) + b"," if blobs else b""
        return cls(b"".join(keys), array(COLUMN, accumulate(map(len, keys), initial=0)), heads_of(keys), body,
                   array(COLUMN, accumulate(map(_plus_one, map(len, blobs)), initial=0)),
                   sizes if isinstance(sizes, array) else array(COLUMN, sizes))

    def __len__(self) -> int:
        return len(self.sizes)

    def find(self, key: bytes) -> int:
        """Index of the first key >= `key` (bisect_left)."""
        h = int.from_bytes(key[:4], "big")
        if len(key) < 4:
            h <<= 8 * (4 - len(key))
        heads = self.heads
        lo = bisect_left(heads, h)
        n = len(heads)
        if lo == n or heads[lo] != h:
            return lo
        keys, ko = self.keys, self.ko
        if lo + 1 == n or heads[lo + 1] != h:  # the one key with these four bytes: nearly always
            return lo if keys[ko[lo]:ko[lo + 1]] >= key else lo + 1
        hi = bisect_right(heads, h, lo)
        while lo < hi:  # among the keys sharing the four bytes: one partition key's items
            mid = (lo + hi) >> 1
            if keys[ko[mid]:ko[mid + 1]] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def find_after(self, key: bytes) -> int:
        """Index of the first key > `key` (bisect_right)."""
        i = self.find(key)
        return i + 1 if i < len(self.sizes) and self.key(i) == key else i

    def index(self, key: bytes) -> int:
        """Index of `key`, or -1."""
        i = self.find(key)
        ko = self.ko
        return i if i < len(self.sizes) and self.keys[ko[i]:ko[i + 1]] == key else -1

    def get(self, key: bytes) -> Record | None:
        """The key's record (a new copy of its blob), or None."""
        i = self.find(key)
        ko = self.ko
        if i == len(self.sizes) or self.keys[ko[i]:ko[i + 1]] != key:
            return None
        bo = self.bo
        return self.body[bo[i]:bo[i + 1] - 1], self.sizes[i]

    def key(self, i: int) -> bytes:
        ko = self.ko
        return self.keys[ko[i]:ko[i + 1]]

    def blob(self, i: int) -> bytes:
        bo = self.bo
        return self.body[bo[i]:bo[i + 1] - 1]

    def run(self, a: int, b: int) -> bytes:
        """Items a..b-1 as one comma-separated run of JSON (a < b)."""
        bo = self.bo
        return self.body[bo[a]:bo[b] - 1]

    def key_list(self, a: int = 0, b: int | None = None) -> list[bytes]:
        """Keys a..b-1 as bytes objects (in C: one slice object and one copy per key)."""
        ko = self.ko
        b = len(self.sizes) if b is None else b
        return list(map(self.keys.__getitem__, map(slice, ko[a:b], islice(ko, a + 1, b + 1))))

    def blob_list(self, a: int = 0, b: int | None = None) -> list[bytes]:
        """Items a..b-1's blobs as bytes objects (in C)."""
        bo = self.bo
        b = len(self.sizes) if b is None else b
        ends = map((-1).__add__, islice(bo, a + 1, b + 1))
        return list(map(self.body.__getitem__, map(slice, bo[a:b], ends)))

    def slice(self, a: int, b: int) -> Leaf:
        """Items a..b-1 as a leaf of their own."""
        builder = Builder()
        builder.run(self, a, b)
        return builder.leaf()


EMPTY = Leaf.of([], [], array(COLUMN))


class Builder:
    """Builds one leaf from runs of other leaves and single items, appended in key order."""

    __slots__ = ("_keys", "_body", "_ko", "_heads", "_bo", "_sizes", "_klen", "_blen")

    def __init__(self) -> None:
        self._keys: list[bytes | memoryview] = []
        self._body: list[bytes | memoryview] = []
        self._ko, self._bo = array(COLUMN, (0,)), array(COLUMN, (0,))
        self._heads, self._sizes = array(COLUMN), array(COLUMN)
        self._klen = self._blen = 0

    def __len__(self) -> int:
        return len(self._sizes)

    def run(self, leaf: Leaf, a: int, b: int) -> None:
        """Append items a..b-1 of `leaf`: a slice of each of its buffers, the offsets shifted in C."""
        if a >= b:
            return
        ko, bo = leaf.ko, leaf.bo
        k0, k1, b0, b1 = ko[a], ko[b], bo[a], bo[b]
        self._keys.append(memoryview(leaf.keys)[k0:k1])  # a view: copied once, by `leaf`'s join
        self._body.append(memoryview(leaf.body)[b0:b1])
        self._ko += _shifted(ko, a + 1, b + 1, self._klen - k0)
        self._bo += _shifted(bo, a + 1, b + 1, self._blen - b0)
        self._heads += leaf.heads[a:b]
        self._sizes += leaf.sizes[a:b]
        self._klen += k1 - k0
        self._blen += b1 - b0

    def item(self, key: bytes, blob: bytes, size: int) -> None:
        self._keys.append(key)
        self._body += (blob, b",")
        self._klen += len(key)
        self._blen += len(blob) + 1
        self._ko.append(self._klen)
        self._bo.append(self._blen)
        self._heads.append(head(key))
        self._sizes.append(size)

    def leaf(self) -> Leaf:
        return Leaf(b"".join(self._keys), self._ko, self._heads, b"".join(self._body), self._bo, self._sizes)


def merged_runs(leaf: Leaf, changes: Sequence[tuple[bytes, Record | None]]) -> Leaf:
    """`leaf` with sorted, distinct changes applied: a record puts (or replaces) its key, None deletes it.

    The items between two changes are copied as one run (a view of the keys and the body, copied once
    by the join; a slice of each column, the offsets shifted in C); the Python work is per change, so
    storage.merge takes it only for a few changes (it merges many by columns). One function, its loop
    inlined (docs/performance.md, *The packed store*)."""
    keys, ko, heads, body, bo, sizes = leaf.keys, leaf.ko, leaf.heads, leaf.body, leaf.bo, leaf.sizes
    n = len(sizes)
    kview, bview = memoryview(keys), memoryview(body)  # runs are views: copied once, by the join
    key_parts: list[bytes | memoryview] = []
    body_parts: list[bytes | memoryview] = []
    out_ko, out_bo, out_heads, out_sizes = array(COLUMN, (0,)), array(COLUMN, (0,)), array(COLUMN), array(COLUMN)
    klen = blen = done = 0
    for key, record in changes:
        h = int.from_bytes(key[:4], "big")
        if len(key) < 4:
            h <<= 8 * (4 - len(key))
        at = bisect_left(heads, h, done)
        found = False  # a new key's four bytes are nearly always its own: then it is not in the leaf
        if at < n and heads[at] == h:  # among the keys sharing the four bytes, by whole keys
            hi = bisect_right(heads, h, at)
            while at < hi:
                mid = (at + hi) >> 1
                if keys[ko[mid]:ko[mid + 1]] < key:
                    at = mid + 1
                else:
                    hi = mid
            found = at < n and keys[ko[at]:ko[at + 1]] == key
        if at > done:  # the run of unchanged items [done, at)
            k0, k1, b0, b1 = ko[done], ko[at], bo[done], bo[at]
            key_parts.append(kview[k0:k1])
            body_parts.append(bview[b0:b1])
            out_ko += _shifted(ko, done + 1, at + 1, klen - k0)
            out_bo += _shifted(bo, done + 1, at + 1, blen - b0)
            out_heads += heads[done:at]
            out_sizes += sizes[done:at]
            klen += k1 - k0
            blen += b1 - b0
            done = at
        if found:
            done = at + 1  # replaced or deleted
        if record is not None:
            blob = record[0]
            key_parts.append(key)
            body_parts += (blob, b",")
            klen += len(key)
            blen += len(blob) + 1
            out_ko.append(klen)
            out_bo.append(blen)
            out_heads.append(h)
            out_sizes.append(record[1])
    if done == 0 and not key_parts:
        return leaf  # nothing changed
    if done < n:
        k0, b0 = ko[done], bo[done]
        key_parts.append(kview[k0:])
        body_parts.append(bview[b0:])
        out_ko += _shifted(ko, done + 1, n + 1, klen - k0)
        out_bo += _shifted(bo, done + 1, n + 1, blen - b0)
        out_heads += heads[done:]
        out_sizes += sizes[done:]
    return Leaf(b"".join(key_parts), out_ko, out_heads, b"".join(body_parts), out_bo, out_sizes)


def joined(leaves: list[Leaf]) -> Leaf:
    """Neighbouring leaves as one."""
    builder = Builder()
    for leaf in leaves:
        builder.run(leaf, 0, len(leaf))
    return builder.leaf()
