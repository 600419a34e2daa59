"""A token bucket: refilled at `rate` units per second, holding at most `capacity` units."""
from __future__ import annotations


class Bucket:
    """Starts full. Admission looks at `available(now)`; charges subtract from `tokens` directly
    and may leave it negative (a large request admitted on a positive balance), which later
    refill repays: DynamoDB admits, then accounts."""

    __slots__ = ("rate", "capacity", "tokens", "stamp", "cause")

    def __init__(self, rate: float, capacity: float, now: float, cause: str | None = None) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = now
        self.cause = cause  # why a request is refused when this bucket is spent (see meter)

    def available(self, now: float) -> float:
        """Refill up to `now`; return the balance (Meter.refusal inlines this: keep them alike)."""
        elapsed = now - self.stamp
        if elapsed > 0:
            tokens = self.tokens + elapsed * self.rate
            self.tokens = tokens if tokens < self.capacity else self.capacity  # min(), without the call
            self.stamp = now
        return self.tokens

    def reconfigure(self, rate: float, capacity: float, now: float) -> None:
        """New rate and capacity from `now`, keeping the balance (capped at the new capacity)."""
        self.available(now)
        self.rate, self.capacity = rate, capacity
        if self.tokens > capacity:
            self.tokens = capacity
