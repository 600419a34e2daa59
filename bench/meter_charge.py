"""In-process cost of one capacity charge (`Meter.charge`), this tree against a git revision.

    .venv/bin/python bench/meter_charge.py [--against main] [--calls 200000] [--repeats 7]

A GetItem-like load: one on-demand meter warmed for the load, PARTITIONS partitions, KEYS
random partition keys, 0.5 RCU per charge on the key's partition, the clock moving 10 µs per
charge (so seconds roll as under load). Times `Meter.charge` alone, and `refusal` + `charge`
(what an enforcing request does), as CPU µs per charge (process time, min over --repeats runs,
the two trees interleaved in every repeat). The records are read at the end of each run
(`totals`), so logged charges are counted. An in-process loop keeps the meter's records in
cache; a live server, which touches much else between two charges, pays cache misses on every
record a charge touches, so live savings are larger than these figures.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTITIONS = 256
KEYS = 10_000
ROOT = Path(__file__).resolve().parent.parent


def _revision_package(rev: str, into: Path) -> str:
    """Extract `dynalocal` at `rev` under another package name; return that name."""
    name = "dynalocal_" + "".join(c if c.isalnum() else "_" for c in rev)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "dynalocal"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "dynalocal").rename(into / name)
    return name


def _load(package: str):
    """(Meter class, the meter module) of `package` (its imports are relative)."""
    module = importlib.import_module(f"{package}.storage.capacity.meter")
    return module.Meter, module


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="main", help="git revision to compare with (default main)")
    parser.add_argument("--calls", type=int, default=200_000, help="charges per timed run")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure; the min is kept")
    args = parser.parse_args()
    rng = random.Random(7)
    keys = _keys(rng)
    load = [rng.choice(keys) for _ in range(args.calls)]
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        trees = {args.against: _load(_revision_package(args.against, Path(tmp)))[0],
                 "this tree": _load("dynalocal")[0]}
        best = {(name, refuse): float("inf") for name in trees for refuse in (False, True)}
        for _ in range(args.repeats):
            for name, cls in trees.items():
                for refuse in (False, True):
                    best[name, refuse] = min(best[name, refuse], run(cls, load, refuse))
    print(f"{'tree':<12} {'charge':>8} {'refusal+charge':>15}   (CPU µs per charge, min of {args.repeats}; "
          f"{PARTITIONS} partitions, {KEYS} keys)")
    for name in trees:
        print(f"{name:<12} {best[name, False]:8.3f} {best[name, True]:15.3f}")


if __name__ == "__main__":
    main()
