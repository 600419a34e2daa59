"""dynalocal's benchmark: throughput, latency and server CPU per request against DynamoDB Local
and the bare-protocol floor, and the issue's target ratios.

    make bench                     # or: .venv/bin/python bench/run.py [--seconds 4] [--rounds 3]

Targets: dynalocal with default options and with --throttling off, each in memory and with
--data-dir --sync batch; the bare-protocol floor (bare_protocol.py); DynamoDB Local (and moto
with --moto). Servers run pinned to one core and wrk to another (taskset, when there are two).
Every workload runs against every target in each round, targets interleaved (each round begins
at a different target, each run once all servers are idle: see `quiet`), so the ratios are
measured under the same machine conditions. Figures are medians over rounds. Run it on a
quiet machine: the load average before and after is printed and saved with the figures in
bench/results/latest.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fsync_cost  # noqa: E402
import loadgen  # noqa: E402
import memory  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402
import speed  # noqa: E402
from workloads import WORKLOADS, setup  # noqa: E402

RESULTS = os.path.join(peers.HERE, "results")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="duration of each wrk run (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all targets (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    parser.add_argument("--no-peers", action="store_true", help="skip DynamoDB Local (and moto)")
    parser.add_argument("--moto", action="store_true", help="also run moto's server (slow: Query/Scan time out)")
    parser.add_argument("--workloads", default="", help="comma-separated workload names (default: all)")
    parser.add_argument("--no-memory", action="store_true", help="skip the 1M-item memory measurement")
    parser.add_argument("--items", type=int, default=1_000_000, help="items for the memory measurement")
    return parser.parse_args()


def targets(with_peers: bool, with_moto: bool) -> tuple[list[peers.Target], list[str]]:
    chosen = [peers.dynalocal(), peers.dynalocal("--throttling", "off", name=report.OFF),
              peers.dynalocal(name=report.DATA, data_dir=True),
              peers.dynalocal("--throttling", "off", name=report.DATA_OFF, data_dir=True), peers.bare()]
    skipped = []
    if with_peers:
        for make in (peers.dynamodb_local, peers.moto) if with_moto else (peers.dynamodb_local,):
            target = make()
            if isinstance(target, str):
                skipped.append(target)
            else:
                chosen.append(target)
    return chosen, skipped


def cpu_times() -> list[int]:
    """The machine's CPU time counters (/proc/stat: user nice system idle iowait irq softirq steal ...)."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return []


def stolen(before: list[int], after: list[int]) -> float:
    """The share (%) of CPU time a virtual machine's host took between two readings (0 where not told)."""
    spent = [b - a for a, b in zip(before, after)]
    return 100 * spent[7] / sum(spent) if len(spent) > 7 and sum(spent) else 0.0


def machine() -> dict:
    """The machine's state: cores, load averages and CPU time stolen by a VM's host since boot (the
    figures mean little on a busy machine, or on a VM whose host is busy)."""
    with open("/proc/loadavg") as f:
        load = [float(x) for x in f.read().split()[:3]]
    since_boot = cpu_times()
    return {"cores": os.cpu_count(), "loadavg_1_5_15": load, "pinned": bool(peers.pinned(0)),
            "steal_since_boot_pct": round(stolen([0] * len(since_boot), since_boot), 1)}


def main() -> None:
    args = parse_args()
    problem = loadgen.available()
    if problem:
        sys.exit(problem)
    chosen, skipped = targets(not args.no_peers, args.moto)
    for line in skipped:
        print(line)
    before = machine()
    print(f"machine before: {before}")
    workloads = [w for w in WORKLOADS if not args.workloads or w.name in args.workloads.split(",")]
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
        syncs = [log_fsync()]
        results, steal, speeds = measure(started, workloads, args)
        syncs.append(log_fsync())
        loaded_rss = {t.name: t.rss_mb() for t in started}
    finally:
        for target in started:
            target.stop()
    out = {"workloads": results, "loaded_rss_mb": loaded_rss, "skipped": skipped, "machine_before": before,
           "settings": {"seconds": args.seconds, "rounds": args.rounds, "connections": args.connections},
           "steal_pct": {"median": statistics.median(steal), "max": max(steal)},
           "core_speed_mloops": {"median": statistics.median(speeds), "min": min(speeds), "max": max(speeds)},
           "log_fsync": syncs}
    report.print_throughput(results, [t.name for t in started])
    print(f"\nCPU time stolen by the host during the runs: median {out['steal_pct']['median']:.1f} %, "
          f"max {out['steal_pct']['max']:.1f} %")
    core = out["core_speed_mloops"]
    print(f"server core speed before and after the runs (speed.py, million loops/s): median {core['median']:.1f}, "
          f"min {core['min']:.1f}, max {core['max']:.1f}")
    print("log fsync before and after the runs (fsync_cost.log_sync, on the server core): " + "; ".join(
        f"wall median {x['wall_median_us']:.0f} µs, p99 {x['wall_p99_us']:.0f} µs, CPU {x['cpu_us']:.0f} µs"
        for x in syncs))
    print("\nloaded RSS: " + ", ".join(f"{k} {v:.0f} MB" for k, v in loaded_rss.items()))
    if not args.no_memory:
        out["memory"] = memory.measure(args.items)
        out["memory"].update(memory.snapshot_startup(args.items))
        memory.print_report(out["memory"])
    out["targets"] = report.targets(results, out.get("memory"))
    report.print_targets(out["targets"])
    out["durable"] = report.durable_costs(results, statistics.median(x["wall_median_us"] for x in syncs),
                                          args.connections)
    report.print_durable(out["durable"], args.connections)
    out["machine_after"] = machine()
    print(f"\nmachine before: {before}; after: {out['machine_after']}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "latest.json"), "w") as f:
        json.dump(out, f, indent=2)


def log_fsync(count: int = 300, nbytes: int = 4000) -> dict:
    """One sync of the write-ahead log as the durable servers do it, on the server core, in the
    filesystem of their data directories (a group of ~16 PutItems is ~4 KB of log)."""
    pin = hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > peers.SERVER_CORE
    before = os.sched_getaffinity(0) if pin else set()
    if pin:
        os.sched_setaffinity(0, {peers.SERVER_CORE})
    directory = tempfile.mkdtemp(prefix="dynalocal-bench-fsync-")
    try:
        median, p99, cpu = fsync_cost.log_sync(directory, count, nbytes)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if pin:
            os.sched_setaffinity(0, before)
    return {"wall_median_us": median, "wall_p99_us": p99, "cpu_us": cpu}


QUIET_WINDOW = 0.2  # seconds
QUIET_CPU = 0.015  # servers that used at most this CPU time in a window are quiet (ticks are 10 ms)
QUIET_DEADLINE = 5.0


def quiet(started: list[peers.Target]) -> float:
    """Wait until the servers (all pinned to one core) have stopped working: a JVM compiles and collects
    for up to half a second after a load, which the next target's run would otherwise pay for. Returns
    the seconds waited (at most QUIET_DEADLINE)."""
    t0 = time.perf_counter()
    before = sum(t.cpu_seconds() for t in started)
    while time.perf_counter() - t0 < QUIET_DEADLINE:
        time.sleep(QUIET_WINDOW)
        now = sum(t.cpu_seconds() for t in started)
        if now - before <= QUIET_CPU:
            break
        before = now
    return time.perf_counter() - t0


def measure(started: list[peers.Target], workloads: list,
            args: argparse.Namespace) -> tuple[dict, list[float], list[float]]:
    """({workload: {target: {rps, p50_ms, p99_ms, cpu_us, errors}}}, medians over the rounds; the share
    of CPU time stolen by the host during each run, %; the server core's speed before and after each run)."""
    raw: dict[str, dict[str, list[tuple[loadgen.Result, float]]]] = {
        w.name: {t.name: [] for t in started} for w in workloads}
    steal: list[float] = []
    speeds: list[float] = []
    gauge = speed.Gauge(peers.SERVER_CORE)
    for round_no in range(args.rounds):
        for workload in workloads:
            script = workload.script()
            # Each round starts the targets at a different one, so none always runs right after the same
            # neighbour on the shared server core.
            shift = round_no % len(started)
            for target in started[shift:] + started[:shift]:
                quiet(started)
                fast = gauge.settle()
                cpu, times = target.cpu_seconds(), cpu_times()
                result = loadgen.run(target.url, script, args.seconds, args.connections)
                speeds += [fast, gauge.read()]
                cpu_us = (target.cpu_seconds() - cpu) * 1e6 / result.requests if result.requests else float("nan")
                steal.append(stolen(times, cpu_times()))
                raw[workload.name][target.name].append((result, cpu_us))
                print(f"round {round_no + 1} {workload.name:>16} {target.name:>18}: "
                      f"{result.requests_per_second:8.0f} req/s  p50 {result.p50_ms:6.2f} ms  "
                      f"p99 {result.p99_ms:6.2f} ms  CPU {cpu_us:6.1f} µs/req  errors {result.errors}  "
                      f"stolen {steal[-1]:4.1f} %  core {speeds[-2]:.1f}->{speeds[-1]:.1f} M/s", flush=True)
    out: dict = {}
    for workload, by_target in raw.items():
        out[workload] = {}
        for name, runs in by_target.items():
            out[workload][name] = {
                "rps": statistics.median(r.requests_per_second for r, _ in runs),
                "rps_rounds": [r.requests_per_second for r, _ in runs],
                "p50_ms": statistics.median(r.p50_ms for r, _ in runs),
                "p99_ms": statistics.median(r.p99_ms for r, _ in runs),
                "cpu_us": statistics.median(c for _, c in runs),
                "errors": sum(r.errors for r, _ in runs),
            }
    return out, steal, speeds


if __name__ == "__main__":
    main()
