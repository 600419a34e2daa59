"""One hash partition: a contiguous token range holding items sorted by encoded key.

Invariant: every key starts with an 8-byte token t with lo <= t < hi. Values are records
`(blob, size)`: the item's JSON bytes as returned on the wire and its DynamoDB size, so
reads serialise nothing and capacity needs no decoding.

The container is private: callers use `get`, `chunks` (ordered reads), `items` (a full
walk), `load` (bulk fill) and `put`/`delete` (through `Table.apply` for table data), so the
layout (today one SortedDict) can change, e.g. to key-ordered record runs, without them.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Iterator

from sortedcontainers import SortedDict

Record = tuple[bytes, int]
CHUNK = 256  # keys per C-level step of an ordered read

_size = itemgetter(1)


class Partition:
    """Items of one token range, in encoded-key order."""

    # `get` is the container's own C-level lookup, bound once: the hottest call of all.
    __slots__ = ("lo", "hi", "_items", "size_bytes", "get")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi
        self._items: SortedDict = SortedDict()
        self.size_bytes = 0
        self.get = self._items.get  # (key) -> Record | None

    @property
    def lo_key(self) -> bytes:
        return self.lo.to_bytes(8, "big")

    def put(self, key: bytes, record: Record) -> Record | None:
        items = self._items
        old = items.get(key)
        items[key] = record
        self.size_bytes += record[1] - (old[1] if old is not None else 0)
        return old

    def delete(self, key: bytes) -> Record | None:
        old = self._items.pop(key, None)
        if old is not None:
            self.size_bytes -= old[1]
        return old

    def load(self, keys: list[bytes], records: list[Record]) -> None:
        """Put many distinct keys at once (recovery, snapshots): one sort-based rebuild, no listener."""
        items = self._items
        if items:
            current = items.get
            self.size_bytes -= sum(old[1] for old in map(current, keys) if old is not None)
        items.update(zip(keys, records))
        self.size_bytes += sum(map(_size, records))

    def range(self, lo: bytes | None, hi: bytes | None, *, inclusive: tuple[bool, bool] = (True, False),
              reverse: bool = False) -> Iterator[bytes]:
        """Encoded keys between lo and hi (None = open), O(log n) to start, O(1) per key."""
        return self._items.irange(lo, hi, inclusive=inclusive, reverse=reverse)

    def chunks(self, lo: bytes | None, hi: bytes | None, inclusive: tuple[bool, bool] = (True, False),
               reverse: bool = False, limit: int | None = None,
               size: int = CHUNK) -> Iterator[tuple[list[bytes], list[Record]]]:
        """(keys, records) of the range in reading order, `size` at a time, at most `limit` in all.

        Positions come from bisection and keys from list slices, so no Python code runs per
        item; a reader that stops early (a full 1 MB page) reads no further chunk.
        """
        items = self._items
        i = 0 if lo is None else items.bisect_left(lo) if inclusive[0] else items.bisect_right(lo)
        j = len(items) if hi is None else items.bisect_right(hi) if inclusive[1] else items.bisect_left(hi)
        if limit is not None and j - i > limit:
            if reverse:
                i = j - limit
            else:
                j = i + limit
        view, get = items.keys(), items.__getitem__
        while i < j:
            if reverse:
                keys = view[max(i, j - size):j]
                keys.reverse()
                j -= len(keys)
            else:
                keys = view[i:min(j, i + size)]
                i += len(keys)
            yield keys, list(map(get, keys))

    def items(self) -> Iterator[tuple[bytes, Record]]:
        """Every (key, record) in key order (re-partitioning, index back-fill)."""
        return iter(self._items.items())

    def __len__(self) -> int:
        return len(self._items)

