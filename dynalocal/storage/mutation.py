"""The value every item write or delete travels in: what changed, why, and in which order.

A handler builds one `Mutation` and hands it to `Table.apply`; each listener (indexes, the
TTL expiry index, the journal, streams) reads it and returns what it owes. Items are
decoded at most once, lazily: a handler that already holds the decoded dicts passes them in.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from dynalocal.storage.partition import Record
    from dynalocal.storage.table import Table

# Origins: who made the change. Streams mark TTL deletions as the service's; recovery
# replays are not new changes.
REQUEST = "request"
TTL = "ttl"
RECOVERY = "recovery"
PARTIQL = "partiql"
ROLLBACK = "rollback"

# Origin of the mutations made while serving the current request when none is given: PartiQL
# sets PARTIQL around the operation handlers it runs statements through.
current_origin: ContextVar[str] = ContextVar("mutation_origin", default=REQUEST)


class Mutation:
    """One put (`new` is a record) or delete (`new` is None) of the item at `key`.

    `new_item` / `old_item`, when given, are the decoded `new` / replaced record (None: not
    at hand, decoded on first use).
    `Table.apply` fills in `old` (the record it replaced), `table`, `part` (the partition's
    index), `seq` (the table-wide sequence number) and `owed` (index write units per index;
    None when no index was written).
    """

    __slots__ = ("key", "new", "origin", "old", "table", "part", "seq", "owed", "vector_bytes", "_old_item",
                 "_new_item")

    def __init__(self, key: bytes, new: Record | None, new_item: dict | None = None,
                 old_item: dict | None = None, origin: str | None = None) -> None:
        self.key = key
        self.new = new
        self.origin = origin if origin is not None else current_origin.get()
        self.old: Record | None = None
        self._new_item = new_item
        self._old_item = old_item
        self.owed: dict[str, float] | None = None  # a dict only once a listener owes something
        self.vector_bytes: dict[str, float] | None = None  # vector index -> VectorWriteRequestBytes (storage.vectors)
        self.seq = 0
        self.part = -1
        self.table: Table | None = None

    @property
    def old_item(self) -> dict | None:
        """The replaced item, decoded (once) from `old` unless the caller passed it in."""
        item = self._old_item
        if item is None and self.old is not None:
            item = self._old_item = orjson.loads(self.old[0])
        return item

    @property
    def new_item(self) -> dict | None:
        """The written item (None for a delete); listeners must not modify it."""
        item = self._new_item
        if item is None and self.new is not None:
            item = self._new_item = orjson.loads(self.new[0])
        return item

    @property
    def changed(self) -> bool:
        """Whether the item is different afterwards (an identical put or a missing delete is not)."""
        old, new = self.old, self.new
        if old is None or new is None:
            return old is not new
        if old[0] == new[0]:
            return False
        a, b = self.old_item, self.new_item
        if a == b:
            return False
        if a is None or b is None or a.keys() != b.keys():  # both are items here (old and new are set)
            return True
        # Only attributes that differ as JSON are compared as DynamoDB values (sets are unordered).
        return not all(v == b[k] or same_value(v, b[k]) for k, v in a.items())


_SETS = ("SS", "NS", "BS")


def same_value(a: dict, b: dict) -> bool:
    """Whether two AttributeValues are equal as DynamoDB sees them (sets are unordered)."""
    if a.keys() != b.keys():
        return False
    ((tag, x),) = a.items()
    y = b[tag]
    if tag in _SETS:
        return len(x) == len(y) and set(x) == set(y)
    if tag == "M":
        return x.keys() == y.keys() and all(same_value(v, y[k]) for k, v in x.items())
    if tag == "L":
        return len(x) == len(y) and all(map(same_value, x, y))
    return x == y
