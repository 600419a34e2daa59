"""Partition records that survive a re-partitioning (a heat split, growth, a throughput change).

When a meter's partitions are replaced, each old partition's records (totals, per-second units,
burst units, throttle counts, folded keys) go to the new partitions in proportion to where its
keys went: the per-key counts move exactly (each key to the partition that now owns it), and
the rest follows them, so a partition's totals always include its keys' counts (no share above
100 %) and the partitions' totals add up to what the meter admitted (docs/behaviour/capacity.md §5).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

# (read units, write units, reads, writes, last second) of one partition key: a tuple while the
# key was charged once, a list after (capacity.partition_meter.PartMeter.keys)
Counts = tuple | list


class Records(Protocol):
    """What carry-over reads and writes of a partition meter (capacity.partition_meter.PartMeter)."""

    units: list[float]
    requests: list[int]
    burst: list[float]
    ring: tuple[list[float], list[float]]
    sec: int
    throttles: tuple[dict[str, int], dict[str, int]]
    throttle_ring: tuple[list[int], list[int]] | None
    keys: dict[bytes, Counts]
    other: list[float]
    folded: int
    throttled_sec: int
    since: float


def carry_over(old: Sequence[Records], new: Sequence[Records], keys_to: Callable[[bytes], int] | None,
               key_limit: int) -> None:
    """Move every record of the `old` partition meters to the `new` ones (see the module doc).
    `keys_to` maps a key prefix to its new partition (None: partition i keeps index i mod len(new)).
    Old and new meters must stand at the same second (their rings are indexed by second mod RING)."""
    for i, part in enumerate(old):
        fallback = i * len(new) // len(old) if keys_to is not None else i % len(new)
        moved: dict[int, list[float]] = {}  # new index -> key units moved there, per direction
        for pk, counts in part.keys.items():
            j = keys_to(pk) if keys_to is not None else fallback
            w = moved.setdefault(j, [0.0, 0.0])
            w[0] += counts[0]
            w[1] += counts[1]
            _add_key(new[j], pk, counts, key_limit)
        for d in (0, 1):
            _spread(part, new, d, _weights(moved, d, fallback))
        main = max(moved, key=lambda j: moved[j][0] + moved[j][1]) if moved else fallback
        _fold_other(part, new, _weights(moved, None, fallback))
        _move_events(part, new[main])


def _weights(moved: dict[int, list[float]], d: int | None, fallback: int) -> list[tuple[int, float]]:
    """(new index, fraction) pairs summing to 1: by the key units moved in direction `d`, else in
    both directions, else all to `fallback`."""
    choices: list[tuple[int, ...]] = ([(d,)] if d is not None else []) + [(0, 1)]
    for dirs in choices:
        total = sum(w[x] for w in moved.values() for x in dirs)
        if total > 0:
            return [(j, sum(w[x] for x in dirs) / total) for j, w in moved.items()]
    return [(fallback, 1.0)]


def _spread(part: Records, new: Sequence[Records], d: int, weights: list[tuple[int, float]]) -> None:
    """Direction `d`'s units, requests, burst and per-second units, split by `weights`."""
    requests = part.requests[d]
    given = 0
    for n, (j, f) in enumerate(weights):
        child = new[j]
        child.units[d] += part.units[d] * f
        share = requests - given if n == len(weights) - 1 else round(requests * f)
        given += share
        child.requests[d] += share
        child.burst[d] += part.burst[d] * f
        ring = child.ring[d]
        for s, units in enumerate(part.ring[d]):
            if units:
                ring[s] += units * f
        child.since = min(child.since, part.since)


def _fold_other(part: Records, new: Sequence[Records], weights: list[tuple[int, float]]) -> None:
    """Folded keys' counts (where they live is unknown): split like the partition's units."""
    for j, f in weights:
        child = new[j]
        for x in range(4):
            child.other[x] += part.other[x] * f
        child.folded += round(part.folded * f)


def _move_events(part: Records, child: Records) -> None:
    """Throttle counts and their per-second record go to the child that took most of the traffic."""
    for d in (0, 1):
        for cause, n in part.throttles[d].items():
            child.throttles[d][cause] = child.throttles[d].get(cause, 0) + n
    if part.throttle_ring is not None:
        if child.throttle_ring is None:
            child.throttle_ring = ([0] * len(part.throttle_ring[0]), [0] * len(part.throttle_ring[1]))
        for d in (0, 1):
            ring = child.throttle_ring[d]
            for s, n in enumerate(part.throttle_ring[d]):
                ring[s] += n
    child.throttled_sec = max(child.throttled_sec, part.throttled_sec)


def _add_key(child: Records, pk: bytes, counts: Counts, key_limit: int) -> None:
    """A key's counts on its new partition; beyond the key limit they join the folded counts."""
    current = child.keys.get(pk)
    if current is not None:
        if isinstance(current, tuple):
            current = child.keys[pk] = list(current)
        for x in range(4):
            current[x] += counts[x]
        current[4] = max(current[4], counts[4])
    elif len(child.keys) < key_limit:
        child.keys[pk] = counts
    else:
        for x in range(4):
            child.other[x] += counts[x]
        child.folded += 1
