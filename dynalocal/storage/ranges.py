"""Key-range reads with DynamoDB's paging: Limit items evaluated or 1 MB of item data read.

A Query is one contiguous range of one partition's sorted keys: O(log n) to find its start,
O(1) per item read. A Scan walks partitions in token order. Both stop after `limit` items
or once the sizes of the items read reach 1 MB, and then report the last key read. A page
holds the items' blobs and sizes, sliced out of the partition's leaves (storage.partition).
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from dynalocal.storage.index import TERM, TERM_NEXT, escape
from dynalocal.storage.leaf import Leaf
from dynalocal.storage.partition import SIZES, Sizes, Span
from dynalocal.storage.table import ItemStore
from dynalocal.values.keys import TOKEN_SPACE, prefix_successor

MAX_PAGE_BYTES = 1024 * 1024


@dataclass(slots=True)
class Bounds:
    """A key range: lo/hi store keys (None = open) and whether each end is included."""

    lo: bytes | None
    hi: bytes | None
    lo_inclusive: bool = True
    hi_inclusive: bool = False

    def after(self, key: bytes, reverse: bool) -> Bounds:
        """The part of this range strictly after `key` in reading order."""
        if reverse:
            return Bounds(self.lo, key, self.lo_inclusive, False)
        return Bounds(key, self.hi, False, self.hi_inclusive)


class Page:
    """Items read, in reading order, as spans of immutable leaves (a run of a leaf's items is one slice of
    its JSON, so the plain Query copies each item once); `last_key` is set when the read stopped before
    the range's end. `parts` (scans only) holds each span's store partition index."""

    __slots__ = ("spans", "reverse", "count", "last_key", "read_bytes", "parts")

    def __init__(self, reverse: bool = False) -> None:
        self.spans: list[Span] = []
        self.reverse = reverse  # each span is read from b - 1 down to a
        self.count = 0
        self.last_key: bytes | None = None
        self.read_bytes = 0
        self.parts: list[int] = []

    def joined(self) -> bytes:
        """The items' JSON, comma-separated."""
        if self.reverse:
            return b",".join(self.blobs)
        return b",".join([leaf.run(a, b) for leaf, a, b in self.spans])

    def _gather(self, out: Any, pick: Callable[[Leaf, int, int], Any]) -> Any:
        """`out` extended by `pick(leaf, a, b)` of each span, in the page's order."""
        for leaf, a, b in self.spans:
            got = pick(leaf, a, b)
            if self.reverse:
                got.reverse()
            out += got
        return out

    @property
    def blobs(self) -> list[bytes]:
        return self._gather([], lambda leaf, a, b: leaf.blob_list(a, b))

    @property
    def sizes(self) -> Sizes:
        return self._gather(array(SIZES), lambda leaf, a, b: leaf.sizes[a:b])

    @property
    def keys(self) -> list[bytes]:
        return self._gather([], lambda leaf, a, b: leaf.key_list(a, b))

    def last_blob(self) -> bytes:
        leaf, a, b = self.spans[-1]
        return leaf.blob(a if self.reverse else b - 1)


def sort_bounds(base: bytes, op: str | None, values: list[bytes], escaped: bool) -> Bounds:
    """Bounds of a sort-key condition under one partition prefix `base`.

    `values` are sort bytes of the condition's operands. Table keys end with raw sort bytes;
    index keys (`escaped`) hold escaped, terminated sort bytes followed by the table key.
    """
    end = prefix_successor(base)
    if op is None:
        return Bounds(base, end)
    if escaped:
        def at(v: bytes) -> bytes:  # first key with sort value v
            return base + escape(v) + TERM

        def past(v: bytes) -> bytes:  # first key with sort value > v
            return base + escape(v) + TERM_NEXT

        if op == "EQ":
            return Bounds(at(values[0]), past(values[0]))
        if op == "LT":
            return Bounds(base, at(values[0]))
        if op == "LE":
            return Bounds(base, past(values[0]))
        if op == "GT":
            return Bounds(past(values[0]), end)
        if op == "GE":
            return Bounds(at(values[0]), end)
        if op == "BETWEEN":
            return Bounds(at(values[0]), past(values[1]))
        lo = base + escape(values[0])  # BEGINS_WITH
        return Bounds(lo, prefix_successor(lo))
    if op == "EQ":
        return Bounds(base + values[0], base + values[0], True, True)
    if op == "LT":
        return Bounds(base, base + values[0], True, False)
    if op == "LE":
        return Bounds(base, base + values[0], True, True)
    if op == "GT":
        return Bounds(base + values[0], end, False, False)
    if op == "GE":
        return Bounds(base + values[0], end, True, False)
    if op == "BETWEEN":
        return Bounds(base + values[0], base + values[1], True, True)
    lo = base + values[0]  # BEGINS_WITH
    return Bounds(lo, prefix_successor(lo))


def sort_matches(op: str | None, values: list[bytes], sort: bytes) -> bool:
    """Whether sort bytes satisfy a sort-key condition (used to check ExclusiveStartKey)."""
    if op is None:
        return True
    v = values[0]
    if op == "EQ":
        return sort == v
    if op == "LT":
        return sort < v
    if op == "LE":
        return sort <= v
    if op == "GT":
        return sort > v
    if op == "GE":
        return sort >= v
    if op == "BETWEEN":
        return v <= sort <= values[1]
    return sort.startswith(v)


def read_range(store: ItemStore, bounds: Bounds, reverse: bool, limit: int | None,
               max_bytes: int = MAX_PAGE_BYTES) -> Page:
    """Read one partition's keys within `bounds` (all must share one token) in order."""
    anchor = bounds.lo if bounds.lo is not None else bounds.hi
    part = store.partition_of(anchor) if anchor is not None else store.partitions[0]
    page = Page(reverse)
    for span in part.spans(bounds.lo, bounds.hi, (bounds.lo_inclusive, bounds.hi_inclusive), reverse, limit):
        if _take(page, span, max_bytes):
            return page
    if limit is not None and page.count >= limit and page.spans:
        leaf, a, b = page.spans[-1]
        page.last_key = leaf.key(a if reverse else b - 1)
    return page


def read_scan(store: ItemStore, start: bytes | None, limit: int | None, segment: int = 0,
              total_segments: int = 1, max_bytes: int = MAX_PAGE_BYTES) -> Page:
    """Read in scan order (token, then key) after `start`, within one parallel-scan segment."""
    lo, hi = segment_tokens(segment, total_segments)
    lo_key = lo.to_bytes(8, "big")
    hi_key = hi.to_bytes(8, "big") if hi < TOKEN_SPACE else None
    page = Page()
    for index, part in enumerate(store.partitions):
        if part.hi <= lo or part.lo >= hi:
            continue
        if start is not None and part.hi <= int.from_bytes(start[:8], "big"):
            continue
        if start is not None and start >= lo_key:
            first, inclusive = start, (False, False)
        else:
            first, inclusive = lo_key, (True, False)
        want = None if limit is None else limit - page.count
        for span in part.spans(first, hi_key, inclusive, False, want):
            page.parts.append(index)
            if _take(page, span, max_bytes):
                return page
        if limit is not None and page.count >= limit:
            leaf, _, b = page.spans[-1]
            page.last_key = leaf.key(b - 1)
            return page
    return page


def segment_tokens(segment: int, total_segments: int) -> tuple[int, int]:
    """The token range [lo, hi) of one parallel-scan segment: disjoint and covering."""
    return segment * TOKEN_SPACE // total_segments, (segment + 1) * TOKEN_SPACE // total_segments


def _take(page: Page, span: Span, max_bytes: int) -> bool:
    """Add a span to `page` up to the 1 MB cap (the item that reaches it included); True if the cap
    stopped it, with `last_key` set to the last item taken. C-level iteration only (sum over an array,
    accumulate): no Python code runs per item."""
    leaf, a, b = span
    sizes = leaf.sizes[a:b]
    read = page.read_bytes + sum(sizes)
    if read < max_bytes:
        page.spans.append(span)
        page.count += b - a
        page.read_bytes = read
        return False
    if page.reverse:
        sizes.reverse()
    totals = list(accumulate(sizes, initial=page.read_bytes))
    cut = bisect_left(totals, max_bytes, 1)  # totals[i] = bytes read after i items: the cap is reached at `cut`
    a, b = (b - cut, b) if page.reverse else (a, a + cut)
    page.spans.append((leaf, a, b))
    page.count += cut
    page.read_bytes = totals[cut]
    page.last_key = leaf.key(a if page.reverse else b - 1)
    return True
