"""One hash partition: a contiguous token range holding items sorted by encoded key.

Invariant: every key in `items` starts with an 8-byte token t with lo <= t < hi.
Values are records `(blob, size)`: the item's JSON bytes as returned on the wire and
its DynamoDB size, so reads serialise nothing and capacity needs no decoding.
"""
from __future__ import annotations

from typing import Iterator

from sortedcontainers import SortedDict

Record = tuple[bytes, int]


class Partition:
    """Items of one token range, in encoded-key order."""

    __slots__ = ("lo", "hi", "items", "size_bytes")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi
        self.items: SortedDict = SortedDict()
        self.size_bytes = 0

    @property
    def lo_key(self) -> bytes:
        return self.lo.to_bytes(8, "big")

    def put(self, key: bytes, record: Record) -> Record | None:
        old = self.items.get(key)
        self.items[key] = record
        self.size_bytes += record[1] - (old[1] if old is not None else 0)
        return old

    def delete(self, key: bytes) -> Record | None:
        old = self.items.pop(key, None)
        if old is not None:
            self.size_bytes -= old[1]
        return old

    def range(self, lo: bytes | None, hi: bytes | None, *, inclusive: tuple[bool, bool] = (True, False),
              reverse: bool = False) -> Iterator[bytes]:
        """Encoded keys between lo and hi (None = open), O(log n) to start, O(1) per key."""
        return self.items.irange(lo, hi, inclusive=inclusive, reverse=reverse)

    def __len__(self) -> int:
        return len(self.items)
