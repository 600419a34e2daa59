"""A table's data: hash partitions over the token space and the single mutation path.

`Table.apply` is the one function through which every item write and delete passes, so
indexes, capacity accounting, streams and the write-ahead log attach there (as listeners).
"""
from __future__ import annotations

from bisect import bisect_right as _bisect_right
from typing import Callable, Iterator

from .keys import TOKEN_SPACE, KeySchema
from .partition import Partition, Record

# listener(table, key, old_record, new_record) runs after every mutation, in order.
Listener = Callable[["Table", bytes, "Record | None", "Record | None"], None]


class ItemStore:
    """Records in hash partitions; used by tables and, keyed differently, by indexes."""

    def __init__(self, partition_count: int = 1) -> None:
        self.partitions: list[Partition] = []
        self._bounds: list[bytes] = []  # each partition's first token, as 8 bytes
        self.set_partition_count(partition_count)

    def set_partition_count(self, count: int) -> None:
        """Re-divide the token space into `count` equal ranges, moving items as needed."""
        count = max(1, count)
        old = self.partitions
        step = TOKEN_SPACE // count
        self.partitions = [Partition(i * step, TOKEN_SPACE if i == count - 1 else (i + 1) * step)
                           for i in range(count)]
        self._bounds = [p.lo_key for p in self.partitions]
        for part in old:
            for key, record in part.items.items():
                self.partition_of(key).put(key, record)

    def partition_index(self, key: bytes) -> int:
        """Index of the partition owning a key (or an 8-byte token) of at least 8 bytes."""
        # A key sorts at or after an 8-byte bound exactly when its token does.
        return _bisect_right(self._bounds, key) - 1

    def partition_of(self, key: bytes) -> Partition:
        return self.partitions[_bisect_right(self._bounds, key) - 1]

    def get(self, key: bytes) -> Record | None:
        return self.partitions[_bisect_right(self._bounds, key) - 1].items.get(key)

    @property
    def item_count(self) -> int:
        return sum(len(p) for p in self.partitions)

    @property
    def size_bytes(self) -> int:
        return sum(p.size_bytes for p in self.partitions)

    def scan_keys(self, start: bytes | None = None, lo_token: int = 0, hi_token: int = TOKEN_SPACE) -> Iterator[tuple[Partition, bytes]]:
        """(partition, key) in scan order (token, then key), after `start`, within [lo_token, hi_token)."""
        lo_key = lo_token.to_bytes(8, "big")
        hi_key = hi_token.to_bytes(8, "big") if hi_token < TOKEN_SPACE else None
        for part in self.partitions:
            if part.hi <= lo_token or part.lo >= hi_token:
                continue
            if start is not None and part.hi <= int.from_bytes(start[:8], "big"):
                continue
            if start is not None and start >= lo_key:
                keys = part.range(start, hi_key, inclusive=(False, False))
            else:
                keys = part.range(lo_key, hi_key, inclusive=(True, False))
            for key in keys:
                yield part, key


class Table(ItemStore):
    """Items of one table plus the listeners that follow every write."""

    def __init__(self, name: str, schema: KeySchema, partition_count: int = 1) -> None:
        super().__init__(partition_count)
        self.name = name
        self.schema = schema
        self.listeners: list[Listener] = []
        self.indexes: dict = {}  # index name -> storage.index.Index, maintained by a listener
        self.index_write_units: dict[str, float] = {}  # per index, of the latest apply

    def apply(self, key: bytes, new: Record | None) -> Record | None:
        """Put (new is a record) or delete (new is None) one item; return the old record."""
        part = self.partition_of(key)
        old = part.put(key, new) if new is not None else part.delete(key)
        if old is None and new is None:
            return None
        for listener in self.listeners:
            listener(self, key, old, new)
        return old
