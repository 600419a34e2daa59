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
            self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
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
            halvings = int((now - self.hot_stamp) // HOT_KEY_HALF_LIFE)
            factor = 0.5 ** halvings
            self.hot = Counter({k: v * factor for k, v in self.hot.items() if v * factor >= 0.5})
            self.hot_stamp += halvings * HOT_KEY_HALF_LIFE
        self.hot[pk] += units
        if len(self.hot) > HOT_KEY_LIMIT:
            self.hot = Counter(dict(self.hot.most_common(HOT_KEY_LIMIT // 2)))


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

    def check_read(self, index: int, now: float) -> str | None:
        """None if partition `index` may serve a read now, else the throttle reason."""
        meter = self.partitions[index]
        if meter.read is not None and meter.read.available(now) <= 0:
            return PROVISIONED
        if meter.read_cap.available(now) <= 0:
            return KEY_RANGE
        return None

    def check_write(self, index: int, now: float) -> str | None:
        meter = self.partitions[index]
        if meter.write is not None and meter.write.available(now) <= 0:
            return PROVISIONED
        if meter.write_cap.available(now) <= 0:
            return KEY_RANGE
        return None

    def charge_read(self, index: int, units: float, pk: bytes | None, now: float) -> None:
        meter = self.partitions[index]
        if meter.read is not None:
            meter.read.tokens -= units
        meter.read_cap.tokens -= units
        meter.read_units += units
        if pk is not None:
            meter.note_key(pk, units, now)

    def charge_write(self, index: int, units: float, pk: bytes | None, now: float) -> None:
        meter = self.partitions[index]
        if meter.write is not None:
            meter.write.tokens -= units
        meter.write_cap.tokens -= units
        meter.write_units += units
        if pk is not None:
            meter.note_key(pk, units, now)


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
