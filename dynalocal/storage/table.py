"""A table's data: hash partitions over the token space and the single mutation path.

`Table.apply` (and `Table.write`, its form for request handlers, which skips building a Mutation
when nothing listens) is the one path through which every item write and delete passes, so
indexes, the TTL expiry index and streams attach there (as listeners of `Mutation` values), and
the write-ahead log as the table's `recorder`, which is told the key and records alone (no
Mutation is built for it: the log is the one follower of every durable write).
`ItemStore.repartition` is the one function that changes partitions.
"""
from __future__ import annotations

from bisect import bisect_left
from bisect import bisect_right as _bisect_right
from collections.abc import Callable, Iterator
from operator import attrgetter
from time import monotonic as _monotonic

from dynalocal.storage.mutation import ROLLBACK, Mutation
from dynalocal.storage.partition import Partition, Record
from dynalocal.values.keys import TOKEN_SPACE, KeySchema

# listener(mutation) runs after every mutation, in order; it returns the index write units
# it caused (index name -> units), or None.
Listener = Callable[[Mutation], "dict[str, float] | None"]
# recorder(table, key, new record or None, old record or None) runs after every write, before the listeners.
Recorder = Callable[["Table", bytes, "Record | None", "Record | None"], None]
_size_bytes = attrgetter("size_bytes")
# on_repartition(old partitions, new partitions): a partition object kept in both is unchanged.
RepartitionHook = Callable[[list[Partition], list[Partition]], None]


class VectorLag:
    """How long a write takes to reach the vector indexes (`--vector-index-lag-ms`; 0: at once) and
    the clock it is measured on; one per Database, shared by its tables (docs/behaviour/vectors.md §3)."""

    __slots__ = ("seconds", "clock")

    def __init__(self, seconds: float = 0.0, clock: Callable[[], float] | None = None) -> None:
        self.seconds = seconds
        self.clock: Callable[[], float] = clock if clock is not None else _monotonic


class ItemStore:
    """Records in hash partitions; used by tables and, keyed differently, by indexes."""

    def __init__(self, partition_count: int = 1) -> None:
        self.partitions: list[Partition] = []
        self._bounds: list[bytes] = []  # each partition's first token, as 8 bytes
        self.on_repartition: list[RepartitionHook] = []
        self.set_partition_count(partition_count)

    def set_partition_count(self, count: int) -> None:
        """Re-divide the token space into `count` equal ranges."""
        count = max(1, count)
        step = TOKEN_SPACE // count
        self.repartition([i * step for i in range(count)])

    def repartition(self, starts: list[int]) -> None:
        """Make the partitions start at these tokens (sorted, the first 0), moving items as needed.

        A partition whose range is unchanged is kept as it is (same object, no copy); the
        `on_repartition` hooks (stream shards) then see which partitions were replaced.
        """
        old = self.partitions
        ends = starts[1:] + [TOKEN_SPACE]
        kept = {(p.lo, p.hi): p for p in old}
        new = [_kept(kept, lo, hi) for lo, hi in zip(starts, ends)]
        if [id(p) for p in new] == [id(p) for p in old]:
            return
        self.partitions = new
        self._bounds = [p.lo_key for p in new]
        survivors = {id(p) for p in new}
        for part in old:
            if id(part) not in survivors:
                self._move(part)
        for hook in self.on_repartition:
            hook(old, new)

    def _move(self, part: Partition) -> None:
        """Move a replaced partition's items to the new partitions: each takes a run of its keys, in order,
        in one bulk load (a heat split of a 1M-item table moves every item: one by one, it held the loop
        for seconds)."""
        keys: list[bytes] = []
        records: list[Record] = []
        for ks, rs in part.chunks(None, None):
            keys += ks
            records += rs
        start = 0
        while start < len(keys):
            target = self.partitions[self.partition_index(keys[start])]
            end = len(keys) if target.hi >= TOKEN_SPACE else bisect_left(keys, target.hi.to_bytes(8, "big"), start)
            target.load(keys[start:end], records[start:end])
            start = end

    def partition_index(self, key: bytes) -> int:
        """Index of the partition owning a key (or an 8-byte token) of at least 8 bytes."""
        # A key sorts at or after an 8-byte bound exactly when its token does.
        return _bisect_right(self._bounds, key) - 1

    def partition_of(self, key: bytes) -> Partition:
        return self.partitions[_bisect_right(self._bounds, key) - 1]

    def get(self, key: bytes) -> Record | None:
        return self.partitions[_bisect_right(self._bounds, key) - 1].get(key)

    @property
    def item_count(self) -> int:
        return sum(map(len, self.partitions))

    @property
    def size_bytes(self) -> int:
        return sum(map(_size_bytes, self.partitions))

    def scan_keys(self, start: bytes | None = None, lo_token: int = 0,
                  hi_token: int = TOKEN_SPACE) -> Iterator[tuple[Partition, bytes]]:
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


def _kept(kept: dict[tuple[int, int], Partition], lo: int, hi: int) -> Partition:
    """The partition of exactly [lo, hi) if there is one (an empty one too: it is falsy), else a new one."""
    part = kept.get((lo, hi))
    return Partition(lo, hi) if part is None else part


class Table(ItemStore):
    """Items of one table plus the listeners that follow every write."""

    def __init__(self, name: str, schema: KeySchema, partition_count: int = 1) -> None:
        super().__init__(partition_count)
        self.name = name
        self.schema = schema
        self.listeners: list[Listener] = []
        self.recorder: Recorder | None = None  # the write-ahead log's (http.durability), when it keeps this table
        self.indexes: dict = {}  # index name -> storage.index.Index, maintained by a listener
        self.vectors: dict = {}  # vector index name -> storage.vectors.VectorIndex, maintained by a listener
        self.vector_lag: VectorLag | None = None  # the Database's (set by Database.create)
        self.sequence = 0  # number of the latest mutation applied

    def apply(self, m: Mutation) -> Mutation:
        """Put or delete one item and tell every listener; return `m` with old record, sequence
        number and owed index units filled in. Deleting a missing item tells no one."""
        key = m.key
        m.part = i = _bisect_right(self._bounds, key) - 1
        new = m.new
        part = self.partitions[i]
        m.old = old = part.put(key, new) if new is not None else part.delete(key)
        if old is None and new is None:
            return m
        m.table = self
        m.seq = self.sequence = self.sequence + 1
        if self.recorder is not None and m.origin != ROLLBACK:  # a rollback puts back what the log says
            self.recorder(self, key, new, old)
        return self._tell(m) if self.listeners else m

    def write(self, i: int, key: bytes, new: Record | None, new_item: dict | None = None,
              old_item: dict | None = None) -> Mutation | None:
        """`apply` for request handlers, which know the key's partition index `i` and build no
        Mutation unless someone listens: the Mutation the listeners saw (with `owed`), else None."""
        part = self.partitions[i]
        old = part.put(key, new) if new is not None else part.delete(key)
        if old is None and new is None:
            return None
        self.sequence += 1
        if self.recorder is not None:
            self.recorder(self, key, new, old)
        if not self.listeners:
            return None
        m = Mutation(key, new, new_item, old_item)
        m.old, m.part, m.seq, m.table = old, i, self.sequence, self
        return self._tell(m)

    def _tell(self, m: Mutation) -> Mutation:
        """Run every listener on an applied mutation, collecting the index units they owe."""
        for listener in self.listeners:
            owed = listener(m)
            if owed:
                if m.owed is None:
                    m.owed = dict(owed)
                else:
                    m.owed.update(owed)
        return m
