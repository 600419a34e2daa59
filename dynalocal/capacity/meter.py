"""One table's or GSI's capacity: its buckets, the throttle decision, its records and growth.

The adaptive model (the default: DynamoDB as it runs today, docs/behaviour/capacity.md §2-§3):
* every partition, in both billing modes, has a ceiling bucket per direction refilled at
  3 000 RCU / 1 000 WCU per second and holding `partition_burst` seconds of it (default 5 s:
  15 000 RCU / 5 000 WCU). Short bursts above the ceiling pass; a key range held above it is
  throttled (`KeyRangeThroughputExceeded`): at twice the ceiling, after 5 s.
* provisioned tables: one table-level bucket per direction refilled at the provisioned rate,
  holding `burst_seconds` (default 300) of it. No per-partition share: any partition may use
  the table's capacity, up to its ceiling.
* on-demand tables: a table-level bucket per direction refilled at the current ceiling C and
  holding `partition_burst` seconds of it. C = max(warm throughput, 2 x previous peak), at
  most the 40 000-unit table quota unless warm throughput says more; the warm throughput of a
  new table is 12 000 RRU / 4 000 WRU. The peak is the highest consumption averaged over
  PEAK_WINDOW (30) seconds, so C doubles about every 30 s of sustained traffic at C (AWS: up
  to 2x the previous peak at once, more as traffic is sustained). Optional on-demand maximums
  are a further bucket refilled at the maximum, holding one second of it.
* heat splits (adaptive model, both modes): a partition that ran at >= 80 % of a ceiling (or
  was throttled by it) for SPLIT_SECONDS (30) consecutive seconds asks for a split, unless one
  partition-key value carries 90 % of its load in that window (a split cannot separate a key's
  items). The split isolates its hot keys: the partition count becomes the smallest doubling
  that puts them on different partitions (equal token ranges), or doubles when the traffic is
  spread over many keys (capacity/split.py).
The classic model (opt-in): no table-level bucket; each partition has a provisioned share
(rate / partitions, `burst_seconds` of it) besides its ceiling, and no heat splits.

A request is admitted while every bucket it needs has a positive balance, then charged its
exact units (a large item may leave a bucket in debt). `burst_seconds` or `partition_burst`
of 0 keep one second of the rate: no burst at all.

Records (read by `report`): totals, per-second units over the last RING (300) seconds, throttle
events by cause, units admitted beyond the provisioned rate (provisioned tables) or beyond the
ceiling (partitions) within a second, i.e. thanks to burst, and exact per-partition-key counts
(each partition's in its `PartMeter`, capacity/partition_meter.py; causes in capacity/causes.py).

The hot path: each partition's `gates` (per direction) are the buckets a request on it needs, in
the order they are checked (table, maximum, classic share, ceiling), each knowing the throttle
cause it stands for; `refusal` refills and checks them, `charge` takes units from them.

Deferred records: a charge only takes its units from the buckets (admission needs them at once)
and appends (partition, direction, units, key) to the meter's `log`. When the log reaches LOG_LIMIT
entries, `_drain` adds it, in order, to the meter's per-second slots, the keys' counts and this
second's pending units and requests per partition (two flat lists); `flush` also adds those to the
partitions' records (`_apply`), before anything reads them (a new second, a throttle, a resize,
`totals`, the report). Every log entry belongs to second `sec` (a new second flushes first), so the
records are those of accounting per charge (a partition's totals are summed a second at a time: equal
up to float rounding); a request touches the buckets only, and a partition's records scattered over
memory are touched once a second, not once per charge.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from dynalocal.capacity import partition_meter
from dynalocal.capacity.bucket import Bucket
from dynalocal.capacity.carry import carry_over
from dynalocal.capacity.causes import (
    ACCOUNT_LIMIT,
    KEY_RANGE,
    ON_DEMAND_MAX,
    ON_DEMAND_SCALING,
    READ,
    TABLE_RATE,
    WRITE,
)
from dynalocal.capacity.partition_meter import RING, PartMeter, clear_seconds
from dynalocal.capacity.split import snapshot
from dynalocal.capacity.units import CEILING

NEW_ON_DEMAND = (12000.0, 4000.0)  # warm throughput of a new on-demand table or GSI
TABLE_QUOTA = 40000.0  # default per-table on-demand quota (DescribeLimits), per direction
PEAK_WINDOW = 30  # seconds averaged to measure a sustained peak
SPLIT_SECONDS = 30  # consecutive hot seconds before a partition asks for a split
HOT_FRACTION = 0.8  # of a partition's ceiling: a second at or above it is hot
LOG_LIMIT = 256  # charges logged before they are added to the records (a flush stalls the loop: keep it short)


class Meter:
    """Buckets and records of one table or GSI (LSIs are the table's)."""

    def __init__(self, table: str, index: str | None, partitions: int, provisioned: tuple[float, float] | None,
                 classic: bool, burst: float, partition_burst: float, warm: tuple[float, float] | None,
                 maximum: tuple[float | None, float | None], now: float) -> None:
        self.table_name, self.index = table, index
        self.burst_seconds, self.partition_burst = burst, partition_burst
        self.provisioned = provisioned
        self.classic = classic and provisioned is not None
        self.warm = warm or NEW_ON_DEMAND  # declared (or default) warm throughput
        self.peak = [0.0, 0.0]
        self.ceiling = list(self.warm)
        self.table: list[Bucket | None] = [None, None]
        self.table_cause = [TABLE_RATE, TABLE_RATE]
        self.maximum: list[Bucket | None] = [None, None]
        self.rate: tuple[float, float] | None = provisioned  # for units admitted thanks to burst
        self.burst = [0.0, 0.0]  # provisioned: units beyond the rate within a second, before `sec`
        self.ring = ([0.0] * RING, [0.0] * RING)
        self.sec = int(now)
        self.sec_start, self.sec_end = float(self.sec), self.sec + 1.0  # now in [start, end): int(now) == sec
        self.throttles: tuple[dict, dict] = ({}, {})
        self.throttle_ring = ([0] * RING, [0] * RING)
        self.splits = 0
        self.split_floor = 0  # partition count heat splits asked for
        self.pending = False  # a split or growth waits for the next request boundary to re-partition
        self.on_pending: Callable[[], None] | None = None  # tells the registry (see _ask_layout)
        self.parts: list[PartMeter] = []
        self.gates: tuple[list, list] = ([], [])  # per direction, per partition: the buckets a request needs
        self.log: list[tuple[int, int, float, bytes | None]] = []  # charges not yet in the records (see flush)
        # This second's units and requests per (partition, direction), index 2 * p + d, not yet in the
        # partitions' records, and the indexes that have some (see `_drain` and `_apply`).
        self.pending_units: list[float] = []
        self.pending_requests: list[int] = []
        self.touched: list[int] = []
        self.layout: object = None  # the store's partitions list the parts were built for
        self.since = now
        self.configure(partitions, provisioned, classic, warm, maximum, now)

    # -- configuration ------------------------------------------------------------------------

    def configure(self, partitions: int, provisioned: tuple[float, float] | None, classic: bool,
                  warm: tuple[float, float] | None, maximum: tuple[float | None, float | None], now: float) -> None:
        """Apply settings from `now` (UpdateTable, tags); balances are kept where buckets remain."""
        self.provisioned, self.rate = provisioned, provisioned
        self.classic = classic and provisioned is not None
        self.warm = warm or NEW_ON_DEMAND
        if provisioned is not None:
            rates: tuple[float | None, ...] = provisioned if not self.classic else (None, None)
            seconds = max(self.burst_seconds, 1.0)
            self.table_cause = [TABLE_RATE, TABLE_RATE]
        else:
            self.ceiling = [self._ceiling(d) for d in (READ, WRITE)]
            rates = tuple(self.ceiling)
            seconds = max(self.partition_burst, 1.0)
            self.table_cause = [ACCOUNT_LIMIT if c >= TABLE_QUOTA > self.warm[d] else ON_DEMAND_SCALING
                                for d, c in enumerate(self.ceiling)]
        for d in (READ, WRITE):
            rate = rates[d]
            self.table[d] = _bucket(self.table[d], rate, rate * seconds if rate else 0, now,
                                    self.table_cause[d])
            top = maximum[d] if provisioned is None else None
            self.maximum[d] = _bucket(self.maximum[d], top, top or 0.0, now, ON_DEMAND_MAX)
        if len(self.parts) != partitions or any((p.share is None) == self.classic for p in self.parts):
            self.resize(partitions, now)
        elif self.classic and provisioned is not None:  # classic implies provisioned
            for part in self.parts:
                assert part.share is not None  # classic partitions have shares (else resized above)
                for d in (READ, WRITE):
                    rate = provisioned[d] / partitions
                    part.share[d].reconfigure(rate, rate * max(self.burst_seconds, 1.0), now)
        self._gate()

    def _gate(self) -> None:
        """Each partition's gates: the table-level buckets, then its share (classic) and ceiling."""
        for d in (READ, WRITE):
            front = tuple(b for b in (self.table[d], self.maximum[d]) if b is not None)
            self.gates[d][:] = [front + ((part.share[d],) if part.share is not None else ()) + (part.cap[d],)
                                for part in self.parts]

    def _ceiling(self, d: int) -> float:
        grown = min(2 * self.peak[d], TABLE_QUOTA)
        return max(self.warm[d], grown)

    def partitions_needed(self) -> int:
        """What the current on-demand ceiling (or heat splits) needs, in partitions."""
        need = self.split_floor
        if self.provisioned is None:
            need = max(need, math.ceil(self.ceiling[0] / CEILING[0]), math.ceil(self.ceiling[1] / CEILING[1]))
        return need

    def resize(self, partitions: int, now: float, keys_to: Callable[[bytes], int] | None = None) -> None:
        """New partition meters (a changed layout): ceiling balances and classic shares carry over
        proportionally; records carry over to the partitions that now own the keys (`keys_to` maps a
        key prefix to its partition index; see capacity.carry), so totals and shares survive splits."""
        self.flush()  # the log's partition numbers are the old layout's
        old = self.parts
        share = None
        if self.classic and self.provisioned is not None:  # classic implies provisioned
            share = (self.provisioned[0] / partitions, self.provisioned[1] / partitions)
        self.parts = [PartMeter(self.partition_burst, share, self.burst_seconds, now, i) for i in range(partitions)]
        self.pending_units = [0.0] * (2 * partitions)
        self.pending_requests = [0] * (2 * partitions)
        if not old:
            self._gate()
            return
        sec = max(int(now), max(p.sec for p in old))
        for part in [*old, *self.parts]:
            if part.sec != sec:
                part.roll(sec)  # old and new rings stand at the same second
        carry_over(old, self.parts, keys_to, partition_meter.KEY_LIMIT)
        for d in (READ, WRITE):
            fraction = _fill(b.cap[d] for b in old)
            for part in self.parts:
                part.cap[d].tokens = part.cap[d].capacity * fraction
            old_shares = [p.share for p in old if p.share is not None]
            if share is not None and len(old_shares) == len(old):
                fraction = _fill(s[d] for s in old_shares)
                for part in self.parts:
                    if part.share is not None:  # all of them: share is not None
                        part.share[d].tokens = part.share[d].capacity * fraction
        self._gate()

    # -- the hot path -------------------------------------------------------------------------

    def refusal(self, d: int, p: int, now: float) -> str | None:
        """Refill the buckets a request on partition `p` needs; None to admit it, else the cause."""
        for b in self.gates[d][p]:
            if now > b.stamp:  # Bucket.available, inlined: per request
                tokens = b.tokens + (now - b.stamp) * b.rate
                b.tokens = tokens if tokens < b.capacity else b.capacity
                b.stamp = now
            if b.tokens <= 0:
                return b.cause
        return None

    def charge(self, d: int, p: int, units: float, pk: bytes | None, now: float) -> None:
        """Take `units` from the buckets of partition `p`; log them (against key `pk`) for the records."""
        for b in self.gates[d][p]:
            b.tokens -= units
        if now >= self.sec_end or now < self.sec_start:  # int(now) != sec, without the call
            self.roll(int(now))
        log = self.log
        log.append((p, d, units, pk))
        if len(log) >= LOG_LIMIT:
            self._drain()

    def flush(self) -> None:
        """Bring the records up to date: every charge logged, of second `sec`, in the order made."""
        if self.log:
            self._drain()
        if self.touched:
            self._apply()

    def _drain(self) -> None:
        """Add the logged charges to the meter's slots, the keys' counts and this second's pending
        units and requests per partition. A partition's own records are scattered over memory (a
        cache miss each on a large table), so they are updated once a second or when read (`_apply`)."""
        log = self.log
        self.log = []
        sec = self.sec
        i = sec % RING
        reads, writes = self.ring
        r, w = reads[i], writes[i]  # the meter's slots, summed in charge order as before
        parts = self.parts
        pending_units, pending_requests, touched = self.pending_units, self.pending_requests, self.touched
        for p, d, units, pk in log:
            if d:
                w += units
            else:
                r += units
            j = p + p + d
            n = pending_requests[j]
            if not n:
                touched.append(j)
            pending_requests[j] = n + 1
            pending_units[j] += units
            if pk is not None:
                part = parts[p]
                keys = part.keys
                counts = keys.get(pk)
                if counts is None:  # most keys of a write-heavy load are charged once: no list for them
                    if len(keys) >= part.limit:
                        part.fold()
                        keys = part.keys
                    keys[pk] = (0.0, units, 0, 1, sec) if d else (units, 0.0, 1, 0, sec)
                    continue
                if isinstance(counts, tuple):
                    counts = keys[pk] = list(counts)
                counts[d] += units
                counts[d + 2] += 1
                counts[4] = sec
        reads[i], writes[i] = r, w

    def _apply(self) -> None:
        """Add this second's pending units and requests to the partitions' records. A partition's slot
        of the second starts at 0 and takes one sum, so a second read once has its exact per-charge sum."""
        sec = self.sec
        i = sec % RING
        parts = self.parts
        pending_units, pending_requests = self.pending_units, self.pending_requests
        for j in self.touched:
            d = j & 1
            part = parts[j >> 1]
            if part.sec != sec:
                part.roll(sec)
            units = pending_units[j]
            part.ring[d][i] += units
            part.units[d] += units
            part.requests[d] += pending_requests[j]
            pending_units[j] = 0.0
            pending_requests[j] = 0
        self.touched = []

    def record_throttle(self, d: int, p: int, cause: str, now: float) -> None:
        """Count a throttle event of `cause` on partition `p` (p < 0: not tied to a partition)."""
        self.flush()  # the records in the order events happened (a throttle is rare: no need to defer it)
        sec = int(now)
        if sec != self.sec:
            self.roll(sec)
        counts = self.throttles[d]
        counts[cause] = counts.get(cause, 0) + 1
        self.throttle_ring[d][sec % RING] += 1
        if p < 0:
            return
        part = self.parts[p]
        if part.sec != sec:
            part.roll(sec)
        if part.throttle_ring is None:
            part.throttle_ring = ([0] * RING, [0] * RING)
        counts = part.throttles[d]
        counts[cause] = counts.get(cause, 0) + 1
        part.throttle_ring[d][sec % RING] += 1
        if cause == KEY_RANGE:
            part.throttled_sec = sec

    # -- once a second ------------------------------------------------------------------------

    def totals(self) -> tuple[list, list, list]:
        """(units, requests, burst units) per direction since the meter was created; burst units
        are those beyond the provisioned rate within a second (0 on demand)."""
        self.flush()
        units, requests = [0.0, 0.0], [0, 0]
        for part in self.parts:
            for d in (READ, WRITE):
                units[d] += part.units[d]
                requests[d] += part.requests[d]
        burst = list(self.burst)
        if self.rate is not None:
            i = self.sec % RING
            for d in (READ, WRITE):
                burst[d] += max(0.0, self.ring[d][i] - self.rate[d])
        return units, requests, burst

    def roll(self, sec: int) -> None:
        """A new second: judge the one that ended (burst, peak, heat), clear the records' new slots."""
        self.flush()  # the log is the ending second's
        last = self.sec
        self.sec = sec
        self.sec_start, self.sec_end = float(sec), sec + 1.0
        if self.rate is not None:
            i = last % RING
            for d in (READ, WRITE):
                over = self.ring[d][i] - self.rate[d]
                if over > 0:
                    self.burst[d] += over
        self._judge(last, sec - last)
        for ring in (*self.ring, *self.throttle_ring):
            clear_seconds(ring, last, sec)

    def _judge(self, last: int, gap: int) -> None:
        if self.provisioned is None:
            grew = False
            for d in (READ, WRITE):
                ring = self.ring[d]
                window = min(PEAK_WINDOW, RING)
                average = sum(ring[(last - k) % RING] for k in range(window)) / window
                if average > self.peak[d]:
                    self.peak[d] = average
                    ceiling = self._ceiling(d)
                    if ceiling > self.ceiling[d]:
                        self.ceiling[d] = ceiling
                        grew = True
            if grew:
                self._ask_layout()  # the registry re-applies the ceiling and partition count
        if self.classic:
            return
        for part in self.parts:
            hot = gap == 1 and (part.throttled_sec == last or (part.sec == last and any(
                part.ring[d][last % RING] >= HOT_FRACTION * CEILING[d] for d in (READ, WRITE))))
            if not hot:
                part.hot_secs, part.base = 0, None
                continue
            if part.hot_secs == 0:
                part.base = snapshot(part.keys)  # the keys' loads before the window judged below
            part.hot_secs += 1
            if part.hot_secs >= SPLIT_SECONDS:
                count = part.split_to(len(self.parts), last)
                part.hot_secs, part.base = 0, None
                if count is not None:
                    self.splits += 1
                    self.split_floor = max(self.split_floor, count)
                    self._ask_layout()

    def _ask_layout(self) -> None:
        """Ask for a new layout. It is applied between requests (`Capacity.settle`), never while
        a request runs: a handler looks a key's partition up once and uses it to the end."""
        self.pending = True
        if self.on_pending is not None:
            self.on_pending()


def _bucket(current: Bucket | None, rate: float | None, capacity: float, now: float,
            cause: str) -> Bucket | None:
    """A bucket with this rate (None: no bucket) standing for `cause`, reusing `current`'s balance
    when there is one."""
    if rate is None or rate <= 0:
        return None
    if current is None:
        return Bucket(rate, capacity, now, cause)
    current.reconfigure(rate, capacity, now)
    current.cause = cause
    return current


def _fill(buckets: Iterable[Bucket]) -> float:
    buckets = list(buckets)
    total = sum(b.capacity for b in buckets)
    return sum(max(0.0, b.tokens) for b in buckets) / total if total > 0 else 1.0
