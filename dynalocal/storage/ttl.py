"""Time to live: an expiry index per table and the sweep that deletes expired items.

The index is kept by a table listener, so it follows every write path; the sweep deletes
through `Table.apply`, so secondary indexes are maintained like any other delete.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

import orjson
from sortedcontainers import SortedList

from dynalocal.storage.mutation import TTL, Mutation
from dynalocal.storage.table import Table

FIVE_YEARS = 5 * 365 * 24 * 3600  # DynamoDB ignores TTL values more than five years in the past


class ExpiryIndex:
    """(expires_at, key) of a table's items whose TTL attribute is a number."""

    def __init__(self, table: Table, attribute: str) -> None:
        self.table = table
        self.attribute = attribute
        self.expiries: SortedList = SortedList()
        self.by_key: dict[bytes, float] = {}
        for part in table.partitions:
            for key, record in part.items():
                self._track(key, orjson.loads(record[0]))
        table.listeners.append(self.on_write)

    def detach(self) -> None:
        self.table.listeners.remove(self.on_write)

    def _expiry(self, item: dict) -> float | None:
        av = item.get(self.attribute)
        if not isinstance(av, dict) or "N" not in av:
            return None
        try:
            return float(Decimal(av["N"]))
        except (InvalidOperation, ValueError):
            return None

    def _track(self, key: bytes, item: dict | None) -> None:
        previous = self.by_key.pop(key, None)
        if previous is not None:
            self.expiries.discard((previous, key))
        expires = self._expiry(item) if item is not None else None
        if expires is not None:
            self.by_key[key] = expires
            self.expiries.add((expires, key))

    def on_write(self, m: Mutation) -> None:
        """Table listener: follow the item's expiry time."""
        self._track(m.key, m.new_item)

    def sweep(self, now: float, limit: int = 10_000) -> int:
        """Delete up to `limit` items whose expiry time has passed; return how many."""
        due: list[tuple[float, bytes]] = []
        stale: list[tuple[float, bytes]] = []
        for expires, key in self.expiries:
            if expires > now or len(due) >= limit:
                break
            (stale if expires <= now - FIVE_YEARS else due).append((expires, key))
        for expires, key in stale:  # too old to count: such items never expire, stop tracking them
            self.expiries.discard((expires, key))
            self.by_key.pop(key, None)
        for _, key in due:
            self.table.apply(Mutation(key, None, origin=TTL))
        return len(due)
