"""Heat splits that isolate hot keys: how many partitions a hot partition's split asks for.

DynamoDB's adaptive capacity isolates frequently accessed items onto partitions of their own,
down to one item per partition (capacity spec §6, §8; docs/behaviour/capacity.md §3). A
partition hot for the sustained window is judged on the load each partition-key value put on
it during that window (read units / 3 000 + write units / 1 000, so reads and writes weigh by
the ceiling they use up):
* one key carries ONE_KEY_FRACTION (90 %) or more of the partition's load: no split, since no
  split can spread one key's items (that key stays capped at 3 000 RCU / 1 000 WCU per second);
* two or more keys carry HOT_KEY_SHARE (10 %) or more each (the partition's hot keys): the
  partition count becomes the smallest doubling at which their tokens (the first 8 bytes of an
  encoded key, values/keys.py) fall into different partitions of equal token ranges, at most
  MAX_PARTITIONS, so they are isolated at one settle;
* otherwise (traffic spread over many keys): the count doubles, as before.
"""
from __future__ import annotations

from collections.abc import Iterable

from dynalocal.capacity.carry import Counts
from dynalocal.capacity.units import CEILING
from dynalocal.values.keys import TOKEN_SPACE

ONE_KEY_FRACTION = 0.9  # a partition whose hottest key carries this share of its load never splits for heat
HOT_KEY_SHARE = 0.1  # a key carrying this share of a hot partition's load is one of its hot keys
MAX_PARTITIONS = 4096  # partitions of one table or GSI at most (registry caps every count with it)


def key_loads(keys: dict[bytes, Counts], base: dict[bytes, float]) -> dict[bytes, float]:
    """Each key's load since `base` (its load when the window began; 0 for keys seen since)."""
    out = {}
    for pk, c in keys.items():
        load = c[0] / CEILING[0] + c[1] / CEILING[1] - base.get(pk, 0.0)
        if load > 0:
            out[pk] = load
    return out


def snapshot(keys: dict[bytes, Counts]) -> dict[bytes, float]:
    """Each key's load so far: the base `key_loads` measures a window from."""
    return {pk: c[0] / CEILING[0] + c[1] / CEILING[1] for pk, c in keys.items()}


def window_load(rings: tuple[list, list], seconds: Iterable[int]) -> float:
    """A partition's load over these seconds (indexes into its per-second rings)."""
    return sum(rings[0][s] / CEILING[0] + rings[1][s] / CEILING[1] for s in seconds)


def part_of(token: int, count: int) -> int:
    """The partition of a token among `count` equal token ranges (ItemStore.set_partition_count)."""
    return min(token // (TOKEN_SPACE // count), count - 1)


def split_count(loads: dict[bytes, float], total: float, count: int) -> int | None:
    """The partition count a hot partition asks for (see the module doc), or None for no split.
    `loads`: its keys' loads over the window; `total`: its whole load then (keyed or not);
    `count`: the current partition count."""
    if count >= MAX_PARTITIONS:
        return None
    total = max(total, sum(loads.values()))
    if total > 0 and loads and max(loads.values()) >= ONE_KEY_FRACTION * total:
        return None
    hot = [int.from_bytes(pk[:8], "big") for pk, load in loads.items() if load >= HOT_KEY_SHARE * total]
    new = 2 * count
    if len(hot) >= 2:
        while new < MAX_PARTITIONS and len({part_of(t, new) for t in hot}) < len(hot):
            new *= 2
    return min(new, MAX_PARTITIONS)
