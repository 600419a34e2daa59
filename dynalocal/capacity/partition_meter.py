"""One partition's capacity: its ceiling and classic-share buckets, its records and its counted keys.

A partition meter belongs to a table's or GSI's `Meter` (capacity/meter.py), which charges it and
keeps its records up to date (see that module: charges are logged and added in batches). Records:
units and requests per direction since creation, per-second units over the last RING seconds, units
admitted beyond the ceiling within a second (burst), throttle events by cause, and exact counts per
partition-key value for up to 1,000-1,500 keys (the hottest half kept at each fold, the rest summed
in `other`).
"""
from __future__ import annotations

from dynalocal.capacity.bucket import Bucket
from dynalocal.capacity.carry import Counts
from dynalocal.capacity.causes import KEY_RANGE, PARTITION_SHARE, READ, WRITE
from dynalocal.capacity.split import key_loads, split_count, window_load
from dynalocal.capacity.units import CEILING

RING = 300  # seconds of per-second records
KEY_LIMIT = 1000  # partition keys counted per partition before the coldest are folded (see PartMeter.limit)


def clear_seconds(ring: list, last: int, sec: int) -> None:
    """Clear the slots of the seconds after `last` up to `sec` (they saw nothing)."""
    for s in range(last + 1, min(sec, last + RING) + 1):
        ring[s % RING] = 0


class PartMeter:
    """Ceiling buckets, classic share buckets and records of one partition."""

    __slots__ = ("cap", "share", "units", "requests", "burst", "ring", "sec", "throttles", "throttle_ring",
                 "keys", "limit", "other", "folded", "hot_secs", "base", "throttled_sec", "since")

    def __init__(self, partition_burst: float, share: tuple[float, float] | None, burst: float, now: float,
                 index: int = 0) -> None:
        self.cap = [Bucket(c, c * max(partition_burst, 1.0), now, KEY_RANGE) for c in CEILING]
        self.share = ([Bucket(r, r * max(burst, 1.0), now, PARTITION_SHARE) for r in share]
                      if share is not None else None)
        self.units = [0.0, 0.0]
        self.requests = [0, 0]
        self.burst = [0.0, 0.0]  # units beyond the ceiling within a second, seconds before `sec`
        self.ring = ([0.0] * RING, [0.0] * RING)
        self.sec = int(now)
        self.throttles: tuple[dict, dict] = ({}, {})  # cause -> events, per direction
        self.throttle_ring: tuple[list, list] | None = None  # allocated at the first throttle
        # pk prefix -> (read units, write units, reads, writes, last second): a tuple while the key was
        # charged once (one allocation the cycle collector soon stops tracking), a list once charged again
        self.keys: dict[bytes, Counts] = {}
        # Keys counted before a fold keeps the hottest KEY_LIMIT / 2: KEY_LIMIT to 1.5 x KEY_LIMIT, staggered
        # by partition index (golden-ratio steps). Under traffic spread evenly over many new keys, equal
        # limits would make every partition fold at once, one drain of the log folding hundreds of them
        # (each ~1 ms: the counts are scattered over memory), a stall of tens of ms every few seconds.
        self.limit = KEY_LIMIT + int(index * 0.6180339887 % 1.0 * (KEY_LIMIT // 2))
        self.other = [0.0, 0.0, 0, 0]  # folded keys' counts
        self.folded = 0  # keys folded into `other`
        self.hot_secs = 0
        self.base: dict[bytes, float] | None = None  # keys' loads when the hot streak began (split_to)
        self.throttled_sec = -1  # last second with a key-range throttle
        self.since = now

    def roll(self, sec: int) -> None:
        """A new second: count the last one's units beyond the ceiling (admitted thanks to burst)."""
        last = self.sec
        i = last % RING
        for d in (READ, WRITE):
            over = self.ring[d][i] - CEILING[d]
            if over > 0:
                self.burst[d] += over
        clear_seconds(self.ring[0], last, sec)
        clear_seconds(self.ring[1], last, sec)
        if self.throttle_ring is not None:
            clear_seconds(self.throttle_ring[0], last, sec)
            clear_seconds(self.throttle_ring[1], last, sec)
        self.sec = sec

    def fold(self) -> None:
        """Keep the hottest KEY_LIMIT / 2 counted keys (ties: the first counted); add the others' counts
        to `other`. Ranks slot numbers by a list of loads (no tuple or Python key call per key)."""
        keys = self.keys
        counts = list(keys.values())
        loads = [c[0] + c[1] for c in counts]
        order = sorted(range(len(loads)), key=loads.__getitem__, reverse=True)
        keep = KEY_LIMIT // 2
        other = self.other
        for j in order[keep:]:
            c = counts[j]
            other[0] += c[0]
            other[1] += c[1]
            other[2] += c[2]
            other[3] += c[3]
        self.folded += len(order) - keep
        names = list(keys)
        self.keys = {names[j]: counts[j] for j in order[:keep]}

    def totals(self) -> tuple[list, list, list]:
        """(units, requests, burst units) per direction, the current second's burst included."""
        i = self.sec % RING
        burst = [b + max(0.0, self.ring[d][i] - CEILING[d]) for d, b in enumerate(self.burst)]
        return list(self.units), list(self.requests), burst

    def split_to(self, count: int, last: int) -> int | None:
        """The partition count this hot partition asks for, out of `count`, judged on the keys'
        load since its hot streak began (capacity.split); None: no split (one key carries it)."""
        seconds = range(last - self.hot_secs + 2, last + 1)  # the streak's seconds after `base` was taken
        total = window_load(self.ring, (s % RING for s in seconds))
        return split_count(key_loads(self.keys, self.base or {}), total, count)
