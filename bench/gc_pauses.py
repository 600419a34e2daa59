"""Cycle-collection pauses while a table grows, with and without dynalocal.http.collector.

    .venv/bin/python bench/gc_pauses.py [--items 300000]

Puts `--items` ~200-byte items in-process (no HTTP), twice in fresh subprocesses: with Python's default
collector and with the collector dynalocal's command installs (freeze what survives a generation 1
collection). Prints per-put latency p50/p99/p99.9/max and, per generation, the number of collections and
their longest and total pause (measured with gc.callbacks).
"""
from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import time

import orjson

PREFIX = "DynamoDB_20120810."


def run(items: int, tuned: bool) -> None:
    from dynalocal.config import Settings
    from dynalocal.engine.context import Context
    from dynalocal.engine.dispatch import dispatch
    from dynalocal.http import collector

    ctx = Context(settings=Settings(throttling="off"))

    def call(op: str, body: dict) -> None:
        status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
        assert status == 200, out

    call("CreateTable", {"TableName": "gc-pauses", "BillingMode": "PAY_PER_REQUEST",
                         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                         "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]})
    pauses: list[tuple[int, float]] = []
    started = [0.0]

    def timer(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append((info["generation"], time.perf_counter() - started[0]))

    gc.callbacks.append(timer)
    if tuned:
        collector.install()
    latencies = []
    for i in range(items):
        t = time.perf_counter()
        call("PutItem", {"TableName": "gc-pauses", "Item": {"pk": {"S": f"k{i}"}, "v": {"S": "x" * 150},
                                                            "n": {"N": str(i)}}})
        latencies.append(time.perf_counter() - t)
    latencies.sort()

    def q(f: float) -> str:
        return f"{latencies[min(len(latencies) - 1, int(len(latencies) * f))] * 1e6:.0f}"

    print(f"{'collector' if tuned else 'default  '}: put p50 {q(0.5)} us, p99 {q(0.99)} us, p99.9 {q(0.999)} us, "
          f"max {latencies[-1] * 1e3:.1f} ms")
    for generation in (0, 1, 2):
        times = [p for g, p in pauses if g == generation]
        print(f"  generation {generation}: {len(times)} collections, longest {max(times, default=0) * 1e3:.1f} ms, "
              f"total {sum(times) * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300_000)
    parser.add_argument("--one", choices=["default", "collector"])
    args = parser.parse_args()
    if args.one:
        run(args.items, args.one == "collector")
        return
    for which in ("default", "collector"):
        subprocess.run([sys.executable, __file__, "--items", str(args.items), "--one", which], check=True)


if __name__ == "__main__":
    main()
