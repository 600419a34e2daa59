"""CPU cost of one fold of a leaf (`storage.merge.merged`: FOLD new keys into 512-1,023 items), warm and cold.

    .venv/bin/python bench/leaf_merge.py [--keys 128] [--leaves 1500] [--repeats 7]

`warm` merges into one leaf over and over (its buffers stay in the CPU's caches); `cold` merges into
each of `--leaves` leaves in a shuffled order, ~200 KB each (1,500 leaves: ~300 MB, far beyond the
caches), as BatchWriteItem of new keys does on a table of a million items. Each figure is the median
over `--repeats` of the mean process-CPU µs per merge, of `merged` (by columns from
storage.merge.COLUMNS_FROM changes on) and of `merged_runs` (run by run, as below that count).
Items are 228-byte blobs (DynamoDB size 230) under 21-byte encoded keys (token, length, an
11-byte partition key).
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from array import array

from dynalocal.storage.leaf import COLUMN, Leaf, merged_runs
from dynalocal.storage.merge import merged
from dynalocal.storage.partition import FOLD

BLOB = b'{"pk":{"S":"b-123456789-12"},"payload":{"S":"' + b"x" * 180 + b'"}}'
SIZE = 230


def _key(rng: random.Random) -> bytes:
    return rng.randrange(1 << 62).to_bytes(8, "big") + b"\x00\x0bb-123456789"


def _leaf(rng: random.Random) -> Leaf:
    keys = sorted({_key(rng) for _ in range(rng.randrange(512, 1024))})
    return Leaf.of(keys, [BLOB] * len(keys), array(COLUMN, [SIZE] * len(keys)))


def _changes(rng: random.Random, count: int = FOLD) -> list[tuple[bytes, tuple[bytes, int]]]:
    return sorted((_key(rng), (BLOB, SIZE)) for _ in range(count))


def _mean_us(pairs: list[tuple[Leaf, list]], merge=merged) -> float:
    start = time.process_time()
    for leaf, changes in pairs:
        merge(leaf, changes)
    return (time.process_time() - start) / len(pairs) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=FOLD, help="new keys per merge (default: FOLD)")
    parser.add_argument("--leaves", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(1)
    pairs = [(_leaf(rng), _changes(rng, args.keys)) for _ in range(args.leaves)]
    warm = [pairs[0]] * args.leaves
    out: dict[str, list[float]] = {"warm": [], "cold": [], "warm, run by run": [], "cold, run by run": []}
    for _ in range(args.repeats):
        rng.shuffle(pairs)
        out["cold"].append(_mean_us(pairs))
        out["warm"].append(_mean_us(warm))
        out["cold, run by run"].append(_mean_us(pairs, merged_runs))
        out["warm, run by run"].append(_mean_us(warm, merged_runs))
    for name, figures in out.items():
        print(f"{name}: {statistics.median(figures):6.1f} µs per merge of {args.keys} new keys "
              f"(min {min(figures):.1f}, max {max(figures):.1f})")


if __name__ == "__main__":
    main()
