"""In-process cost of one capacity charge (`Meter.charge`), this tree against a git revision.

    .venv/bin/python bench/meter_charge.py [--against main] [--calls 200000] [--repeats 7]

A GetItem-like load: one on-demand meter warmed for the load, PARTITIONS partitions, KEYS
random partition keys, 0.5 RCU per charge on the key's partition, the clock moving 10 µs per
charge (so seconds roll as under load). Times `Meter.charge` alone, and `refusal` + `charge`
(what an enforcing request does), as CPU µs per charge (process time, min over --repeats runs,
the two trees interleaved in every repeat, each run in a process of its own that imports
`dynalocal` from that tree). The records are read at the end of each run
(`totals`), so logged charges are counted. An in-process loop keeps the meter's records in
cache; a live server, which touches much else between two charges, pays cache misses on every
record a charge touches, so live savings are larger than these figures.
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTITIONS = 256
KEYS = 10_000
ROOT = Path(__file__).resolve().parent.parent


def _extract(rev: str, into: str) -> None:
    """Extract `dynalocal` at `rev` into the directory `into` (then put on sys.path)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "dynalocal"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def _keys(rng: random.Random) -> list[tuple[int, bytes]]:
    out = []
    for i in range(KEYS):
        raw = f"item-{i:06d}".encode()
        token = rng.getrandbits(64)
        out.append(((token * PARTITIONS) >> 64, token.to_bytes(8, "big") + len(raw).to_bytes(2, "big") + raw))
    return out


def run(meter_cls, load: list[tuple[int, bytes]], refuse: bool) -> float:
    """CPU µs per charge of `load` through a new meter."""
    now = 1000.0
    m = meter_cls("bench", None, PARTITIONS, None, False, 300.0, 5.0, (1e9, 1e9), (None, None), now)
    charge, refusal = m.charge, m.refusal
    gc.collect()
    clock = time.process_time
    start = clock()
    if refuse:
        for p, pk in load:
            now += 1e-5
            if refusal(0, p, now) is None:
                charge(0, p, 0.5, pk, now)
    else:
        for p, pk in load:
            now += 1e-5
            charge(0, p, 0.5, pk, now)
    m.totals()
    return (clock() - start) / len(load) * 1e6


def _one(tree: str, calls: int) -> None:
    """In a process of its own: time `tree`'s Meter once per mode, print {"charge": µs, "refusal": µs}."""
    sys.path.insert(0, tree)
    from dynalocal.capacity.meter import Meter  # that tree's, and everything it imports

    rng = random.Random(7)
    keys = _keys(rng)
    load = [rng.choice(keys) for _ in range(calls)]
    print(json.dumps({"charge": run(Meter, load, False), "refusal": run(Meter, load, True)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="main", help="git revision to compare with (default main)")
    parser.add_argument("--calls", type=int, default=200_000, help="charges per timed run")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure; the min is kept")
    parser.add_argument("--tree", help=argparse.SUPPRESS)  # internal: time one tree in this process
    args = parser.parse_args()
    if args.tree:
        _one(args.tree, args.calls)
        return
    with tempfile.TemporaryDirectory() as tmp:
        _extract(args.against, tmp)
        trees = {args.against: tmp, "this tree": str(ROOT)}
        best = {name: {"charge": float("inf"), "refusal": float("inf")} for name in trees}
        for _ in range(args.repeats):
            for name, path in trees.items():
                out = subprocess.run([sys.executable, __file__, "--tree", path, "--calls", str(args.calls)],
                                     check=True, capture_output=True, text=True).stdout
                for mode, value in json.loads(out).items():
                    best[name][mode] = min(best[name][mode], value)
    print(f"{'tree':<12} {'charge':>8} {'refusal+charge':>15}   (CPU µs per charge, min of {args.repeats}; "
          f"{PARTITIONS} partitions, {KEYS} keys)")
    for name in trees:
        print(f"{name:<12} {best[name]['charge']:8.3f} {best[name]['refusal']:15.3f}")


if __name__ == "__main__":
    main()
