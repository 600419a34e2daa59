"""Per-partition capacity: token buckets, consumption statistics and hot keys.

Model (spec capacity.md §8): each partition has a read and a write bucket refilled at the
table's provisioned rate divided by its partition count, holding up to `burst_seconds` of
that rate and full at creation; every partition, in both billing modes, is also capped at
3 000 RCU / 1 000 WCU per second by a one-second bucket. A request is admitted while its
buckets hold a positive balance and is then charged its exact units, so a large item may
leave a bucket in debt, which later refill repays (DynamoDB admits, then accounts).
"""
from __future__ import annotations

from collections import Counter

PARTITION_MAX_READ = 3000.0
PARTITION_MAX_WRITE = 1000.0
HOT_KEY_HALF_LIFE = 60.0  # seconds: hot-key counters halve this often
HOT_KEY_LIMIT = 512  # counters kept per partition before the coldest are dropped


class Bucket:
    """A token bucket: `rate` units/s, at most `capacity` units, starts full."""

    __slots__ = ("rate", "capacity", "tokens", "stamp")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = now

    def available(self, now: float) -> float:
        elapsed = now - self.stamp
        if elapsed > 0:
            tokens = self.tokens + elapsed * self.rate
            self.tokens = tokens if tokens < self.capacity else self.capacity  # min(), without the call
            self.stamp = now
        return self.tokens

    def reconfigure(self, rate: float, capacity: float, now: float) -> None:
        self.available(now)
        self.rate, self.capacity = rate, capacity
        self.tokens = min(self.tokens, capacity)


class PartitionMeter:
    """Buckets and statistics of one partition."""

    __slots__ = ("read", "write", "read_cap", "write_cap", "read_units", "write_units",
                 "read_throttles", "write_throttles", "hot", "hot_stamp")

    def __init__(self, read_rate: float | None, write_rate: float | None, burst: float, now: float) -> None:
        self.read = Bucket(read_rate, read_rate * burst, now) if read_rate is not None else None
        self.write = Bucket(write_rate, write_rate * burst, now) if write_rate is not None else None
        self.read_cap = Bucket(PARTITION_MAX_READ, PARTITION_MAX_READ, now)
        self.write_cap = Bucket(PARTITION_MAX_WRITE, PARTITION_MAX_WRITE, now)
        self.read_units = self.write_units = 0.0
        self.read_throttles = self.write_throttles = 0
        self.hot: Counter = Counter()
        self.hot_stamp = now

    def note_key(self, pk: bytes, units: float, now: float) -> None:
        """Count units against a partition key, decaying old counts (Contributor Insights style)."""
        if now - self.hot_stamp >= HOT_KEY_HALF_LIFE:
            self._decay(now)
        hot = self.hot
        hot[pk] = hot.get(pk, 0) + units  # Counter's += without its __missing__ call
        if len(hot) > HOT_KEY_LIMIT:
            self._trim()

    def _decay(self, now: float) -> None:
        halvings = int((now - self.hot_stamp) // HOT_KEY_HALF_LIFE)
        factor = 0.5 ** halvings
        self.hot = Counter({k: v * factor for k, v in self.hot.items() if v * factor >= 0.5})
        self.hot_stamp += halvings * HOT_KEY_HALF_LIFE

    def _trim(self) -> None:
        self.hot = Counter(dict(self.hot.most_common(HOT_KEY_LIMIT // 2)))

    # These run on every request.

    def check_read(self, now: float) -> str | None:
        """Refill the read buckets; None if a read may be served now, else the throttle reason."""
        return _refusal(self.read, self.read_cap, now)

    def check_write(self, now: float) -> str | None:
        """Refill the write buckets; None if a write may be served now, else the throttle reason."""
        return _refusal(self.write, self.write_cap, now)

    def charge_read(self, units: float, pk: bytes | None, now: float) -> None:
        """Take read units from the buckets; count them against partition key prefix `pk`."""
        if self.read is not None:
            self.read.tokens -= units
        self.read_cap.tokens -= units
        self.read_units += units
        if pk is not None:
            self.note_key(pk, units, now)

    def charge_write(self, units: float, pk: bytes | None, now: float) -> None:
        """Take write units from the buckets; count them against partition key prefix `pk`."""
        if self.write is not None:
            self.write.tokens -= units
        self.write_cap.tokens -= units
        self.write_units += units
        if pk is not None:
            self.note_key(pk, units, now)


def _refusal(share: Bucket | None, cap: Bucket, now: float) -> str | None:
    """Refill a partition's provisioned share (if any) and its cap; say which, if either, is empty."""
    if share is not None and share.available(now) <= 0:
        return PROVISIONED
    return KEY_RANGE if cap.available(now) <= 0 else None


# Why a request was refused: (is the provisioned share exhausted, which kind).
PROVISIONED = "ProvisionedThroughputExceeded"
KEY_RANGE = "KeyRangeThroughputExceeded"


class TableMeter:
    """Meters for the partitions of one table or GSI."""

    def __init__(self, partitions: int, read_rate: float | None, write_rate: float | None,
                 burst_seconds: float, now: float) -> None:
        """read_rate/write_rate: the provisioned table rates, or None for on-demand."""
        self.burst = burst_seconds
        self.read_rate, self.write_rate = read_rate, write_rate
        self.partitions = [PartitionMeter(*self._shares(partitions), burst_seconds, now) for _ in range(partitions)]

    def _shares(self, count: int) -> tuple[float | None, float | None]:
        read = self.read_rate / count if self.read_rate is not None else None
        write = self.write_rate / count if self.write_rate is not None else None
        return read, write

    def reconfigure(self, partitions: int, read_rate: float | None, write_rate: float | None, now: float) -> None:
        """Apply new rates at once; a new partition count re-divides the statistics' buckets."""
        self.read_rate, self.write_rate = read_rate, write_rate
        read, write = self._shares(partitions)
        if partitions != len(self.partitions):
            old = self.partitions
            self.partitions = [PartitionMeter(read, write, self.burst, now) for _ in range(partitions)]
            _carry_balances(old, self.partitions, now)
            return
        for meter in self.partitions:
            for attr, rate in (("read", read), ("write", write)):
                bucket = getattr(meter, attr)
                if rate is None:
                    setattr(meter, attr, None)
                elif bucket is None:
                    setattr(meter, attr, Bucket(rate, rate * self.burst, now))
                else:
                    bucket.reconfigure(rate, rate * self.burst, now)

    def charge_read(self, index: int, units: float, pk: bytes | None, now: float) -> None:
        self.partitions[index].charge_read(units, pk, now)

    def charge_write(self, index: int, units: float, pk: bytes | None, now: float) -> None:
        self.partitions[index].charge_write(units, pk, now)


def _carry_balances(old: list[PartitionMeter], new: list[PartitionMeter], now: float) -> None:
    """Spread the old partitions' unused burst over the new ones (a split halves a parent's)."""
    for attr in ("read", "write"):
        buckets = [getattr(m, attr) for m in old if getattr(m, attr) is not None]
        if not buckets:
            continue
        fraction = sum(b.available(now) for b in buckets) / max(1e-9, sum(b.capacity for b in buckets))
        for meter in new:
            bucket = getattr(meter, attr)
            if bucket is not None:
                bucket.tokens = min(bucket.capacity, bucket.capacity * fraction)
