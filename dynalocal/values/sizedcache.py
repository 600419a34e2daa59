"""A cache bounded in bytes as well as entries: request-derived keys can be large (2 KB key
values, 4 KB expressions), so a count alone does not bound its memory."""
from __future__ import annotations

from typing import Any


class SizedCache(dict):
    """A dict with the estimated bytes it holds; `remember` empties it before a limit would be passed.

    Lookups are plain `dict.get` (no Python-level overhead on the hot path); emptying all at
    once is cheaper than an LRU's bookkeeping and fine for caches of repeated request values.
    """

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def remember(self, key: Any, value: Any, cost: int, max_entries: int, max_bytes: int) -> None:
        """Add an entry estimated at `cost` bytes, within `max_entries` and `max_bytes`."""
        if len(self) >= max_entries or self.bytes + cost > max_bytes:
            self.clear()
        self[key] = value
        self.bytes += cost

    def clear(self) -> None:
        super().clear()
        self.bytes = 0
