"""dynalocal's benchmark: throughput and latency against DynamoDB Local, moto and the bare-ASGI ceiling.

    make bench                     # or: .venv/bin/python bench/run.py [--seconds 4] [--rounds 3]

Every workload runs against every target in each round, targets interleaved, so the ratios
are measured under the same machine conditions. Figures are medians over rounds. Results
also go to bench/results/latest.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import loadgen  # noqa: E402
import memory  # noqa: E402
import peers  # noqa: E402
from workloads import WORKLOADS, setup  # noqa: E402

RESULTS = os.path.join(peers.HERE, "results")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="duration of each wrk run (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all targets (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    parser.add_argument("--no-peers", action="store_true", help="skip DynamoDB Local and moto")
    parser.add_argument("--no-memory", action="store_true", help="skip the 1M-item memory measurement")
    parser.add_argument("--items", type=int, default=1_000_000, help="items for the memory measurement")
    return parser.parse_args()


def targets(with_peers: bool) -> tuple[list[peers.Target], list[str]]:
    chosen = [peers.dynalocal(), peers.dynalocal("--throttling", "off", name="dynalocal-off"), peers.bare()]
    skipped = []
    if with_peers:
        for make in (peers.dynamodb_local, peers.moto):
            target = make()
            if isinstance(target, str):
                skipped.append(target)
            else:
                chosen.append(target)
    return chosen, skipped


def main() -> None:
    args = parse_args()
    problem = loadgen.available()
    if problem:
        sys.exit(problem)
    chosen, skipped = targets(not args.no_peers)
    for line in skipped:
        print(line)
    started = []
    try:
        for target in chosen:
            startup = target.start()
            started.append(target)
            print(f"{target.name:>15}: started in {startup:.2f} s, RSS {target.rss_mb():.0f} MB", flush=True)
            if target.dynamodb:
                t0 = time.perf_counter()
                setup(target.url, dynalocal=target.name.startswith("dynalocal"))
                print(f"{'':>15}  tables loaded in {time.perf_counter() - t0:.1f} s", flush=True)
        results = measure(started, args)
        loaded_rss = {t.name: t.rss_mb() for t in started}
    finally:
        for target in started:
            target.stop()
    report = {"workloads": results, "loaded_rss_mb": loaded_rss, "skipped": skipped,
              "settings": {"seconds": args.seconds, "rounds": args.rounds, "connections": args.connections}}
    print_table(results, [t.name for t in started])
    print("\nloaded RSS: " + ", ".join(f"{k} {v:.0f} MB" for k, v in loaded_rss.items()))
    if not args.no_memory:
        report["memory"] = memory.measure(args.items)
        memory.print_report(report["memory"])
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "latest.json"), "w") as f:
        json.dump(report, f, indent=2)


def measure(started: list[peers.Target], args: argparse.Namespace) -> dict:
    """{workload: {target: {rps, p50_ms, p99_ms, errors}}}, medians over the rounds."""
    raw: dict[str, dict[str, list[loadgen.Result]]] = {w.name: {t.name: [] for t in started} for w in WORKLOADS}
    for round_no in range(args.rounds):
        for workload in WORKLOADS:
            script = workload.script()
            for target in started:
                result = loadgen.run(target.url, script, args.seconds, args.connections)
                raw[workload.name][target.name].append(result)
                print(f"round {round_no + 1} {workload.name:>16} {target.name:>15}: "
                      f"{result.requests_per_second:8.0f} req/s  p50 {result.p50_ms:6.2f} ms  "
                      f"p99 {result.p99_ms:6.2f} ms  errors {result.errors}", flush=True)
    out: dict = {}
    for workload, by_target in raw.items():
        out[workload] = {}
        for name, results in by_target.items():
            out[workload][name] = {
                "rps": statistics.median(r.requests_per_second for r in results),
                "p50_ms": statistics.median(r.p50_ms for r in results),
                "p99_ms": statistics.median(r.p99_ms for r in results),
                "errors": sum(r.errors for r in results),
            }
    return out


def print_table(results: dict, names: list[str]) -> None:
    refs = [n for n in ("dynamodb-local", "moto", "bare-asgi", "dynalocal-off") if n in names]
    header = "| workload | " + " | ".join(f"{n} req/s (p50/p99 ms)" for n in names) + " | " + \
             " | ".join(f"dynalocal / {r}" for r in refs) + " |"
    print("\n" + header)
    print("|" + "---|" * (1 + len(names) + len(refs)))
    for workload, by_target in results.items():
        cells = [f"{by_target[n]['rps']:.0f} ({by_target[n]['p50_ms']:.2f}/{by_target[n]['p99_ms']:.2f})"
                 + (f" {by_target[n]['errors']} errors" if by_target[n]["errors"] else "") for n in names]
        ours = by_target["dynalocal"]["rps"]
        ratios = [f"{ours / by_target[r]['rps']:.2f}" if by_target[r]["rps"] else "n/a" for r in refs]
        print(f"| {workload} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
