"""Vector meters: SearchVectors and vector-index writes counted apart from read and write units,
in requests and approximate bytes (docs/behaviour/vectors.md §5), with per-second series.

A table has one search meter and one write meter per vector index (`TableMeters.vector_meter`);
the report reads them as `data` (see capacity/report.py's contract).
"""
from __future__ import annotations

from typing import Any

from dynalocal.capacity.partition_meter import RING

SEARCHES = None  # the key of a table's SearchVectors meter (vector-index writes are keyed by index name)


class VectorMeter:
    """Requests and bytes since the meter started, and per second over the last RING seconds."""

    __slots__ = ("requests", "bytes", "sec", "ring")

    def __init__(self, now: float) -> None:
        self.requests = 0
        self.bytes = 0.0
        self.sec = int(now)
        self.ring: tuple[list[int], list[float]] = ([0] * RING, [0.0] * RING)

    def record(self, size: float, now: float) -> None:
        """One request of `size` bytes at `now` (the capacity clock)."""
        sec = int(now)
        if sec > self.sec:
            self._roll(sec)
        i = self.sec % RING
        self.ring[0][i] += 1
        self.ring[1][i] += size
        self.requests += 1
        self.bytes += size

    def _roll(self, sec: int) -> None:
        """Clear the slots of the seconds after the last one recorded, up to `sec`."""
        counts, sizes = self.ring
        for s in range(self.sec + 1, min(sec, self.sec + RING) + 1):
            counts[s % RING] = 0
            sizes[s % RING] = 0.0
        self.sec = sec

    def data(self, now: float, unit: str) -> dict[str, Any]:
        """Plain data: totals and the per-second lists ending at `now`, oldest first."""
        sec = int(now)
        if sec > self.sec:
            self._roll(sec)
        seconds = range(sec - RING + 1, sec + 1)
        counts, sizes = self.ring
        return {"unit": unit, "requests": self.requests, "bytes": self.bytes,
                "per_second": {"requests": [counts[s % RING] if s <= self.sec else 0 for s in seconds],
                               "bytes": [sizes[s % RING] if s <= self.sec else 0.0 for s in seconds]}}
