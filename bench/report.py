"""The benchmark's tables: throughput and CPU per request, and the issue's target ratios (goal, measured, met)."""
from __future__ import annotations

from workloads import WRITES

MEMORY, OFF, DATA, DATA_OFF = "dynalocal", "dynalocal-off", "dynalocal-data", "dynalocal-data-off"
FLOOR, DDB_LOCAL = "bare-protocol", "dynamodb-local"


def print_throughput(results: dict, names: list[str]) -> None:
    """requests/s (p50/p99 ms) and server CPU µs per request, per workload and target."""
    print("\n| workload | " + " | ".join(f"{n} req/s (p50/p99 ms) [CPU µs/req]" for n in names) + " |")
    print("|" + "---|" * (1 + len(names)))
    for workload, by_target in results.items():
        cells = []
        for n in names:
            r = by_target[n]
            cell = f"{r['rps']:.0f} ({r['p50_ms']:.2f}/{r['p99_ms']:.2f}) [{r['cpu_us']:.0f}]"
            cells.append(cell + (f" {r['errors']} errors" if r["errors"] else ""))
        print(f"| {workload} | " + " | ".join(cells) + " |")


Row = tuple[str, float | None, str, bool | None, str]  # what, measured, goal, met, the ratio in each round


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _rounds(a: dict, b: dict) -> str:
    """The req/s ratio of two targets round by round (each round's two runs ran minutes apart at most):
    how much of a median's distance from its goal is one round's."""
    pairs = zip(a.get("rps_rounds", []), b.get("rps_rounds", []))
    return ", ".join(f"{x / y:.2f}" for x, y in pairs if y)


def targets(results: dict, memory: dict | None) -> list[Row]:
    """(what, measured ratio, goal, met, per round) for every target the issue sets, from this run's medians
    (met or not by the ratio of the medians; the per-round ratios only show the spread)."""
    rows: list[Row] = []

    def add(what: str, value: float | None, goal: str, ok, rounds: str = "") -> None:
        rows.append((what, value, goal, None if value is None else ok(value), rounds))

    for workload, by in results.items():
        if DDB_LOCAL in by:
            add(f"{workload}: dynalocal / DynamoDB Local (req/s, default options)",
                _ratio(by[MEMORY]["rps"], by[DDB_LOCAL]["rps"]), ">= 5", lambda v: v >= 5,
                _rounds(by[MEMORY], by[DDB_LOCAL]))
    for workload, by in results.items():
        if DDB_LOCAL in by:
            add(f"{workload}: p99 latency, dynalocal / DynamoDB Local (default options)",
                _ratio(by[MEMORY]["p99_ms"], by[DDB_LOCAL]["p99_ms"]), "<= 1", lambda v: v <= 1)
    for workload, by in results.items():
        for target, figures in by.items():
            if target != DDB_LOCAL and figures.get("errors"):
                add(f"{workload}: {target} answered only 2xx", float(figures["errors"]), "0 errors",
                    lambda v: v == 0)
    if "GetItem" in results and FLOOR in results["GetItem"]:
        by = results["GetItem"]
        add("GetItem in memory: server CPU per request / bare-protocol floor",
            _ratio(by[MEMORY]["cpu_us"], by[FLOOR]["cpu_us"]), "<= 1.5", lambda v: v <= 1.5)
    for workload in WRITES:
        by = results.get(workload, {})
        if DATA in by:
            add(f"{workload}: --data-dir --sync batch / in memory (req/s, 16 connections)",
                _ratio(by[DATA]["rps"], by[MEMORY]["rps"]), ">= 0.8", lambda v: v >= 0.8,
                _rounds(by[DATA], by[MEMORY]))
    if memory and "query_latency_ratio_1m_1k" in memory:
        add("Query(100): cost on 1M items / on 1k items (p50 latency, 1 connection)",
            memory["query_latency_ratio_1m_1k"], "<= 1.2", lambda v: v <= 1.2)
    if memory and "snapshot_startup_s" in memory:
        add(f"start-up on a snapshot of {memory['snapshot_items']} items: seconds to the first answer",
            memory["snapshot_startup_s"], "< 1", lambda v: v < 1)
    if memory and "bytes_per_item" in memory:
        add(f"RSS per item at rest at {memory['items']} items of {memory['item_bytes_avg']:.0f} bytes (bytes)",
            memory["bytes_per_item"], "< 300", lambda v: v < 300)
    for workload, by in results.items():
        if OFF in by:
            add(f"{workload}: --throttling enforce / off (req/s)", _ratio(by[MEMORY]["rps"], by[OFF]["rps"]),
                ">= 0.9", lambda v: v >= 0.9, _rounds(by[MEMORY], by[OFF]))
    return rows


def durable_costs(results: dict, sync_us: float, connections: int) -> list[dict]:
    """Per write workload: server CPU per request in memory and with --data-dir (their difference is what
    journaling costs each request), and the most a durable server could reach if journaling cost
    nothing but the sync: each of the C clients waits for its answer, so one group of at most C
    requests is synced at a time and the core idles while the disk writes it (C·c / (C·c + W), with c
    the in-memory CPU per request and W the log's sync wall time measured in the same run)."""
    rows = []
    for workload in WRITES:
        by = results.get(workload, {})
        if DATA in by and MEMORY in by:
            c, durable = by[MEMORY]["cpu_us"], by[DATA]["cpu_us"]
            rows.append({"workload": workload, "cpu_us": c, "durable_cpu_us": durable, "sync_us": sync_us,
                         "bound": connections * c / (connections * c + sync_us),
                         "measured": _ratio(by[DATA]["rps"], by[MEMORY]["rps"])})
    return rows


def print_durable(rows: list[dict], connections: int) -> None:
    """The durable targets' costs (see `durable_costs`)."""
    if not rows:
        return
    print(f"\n| durable write | CPU µs/req in memory | with --data-dir | difference | bound: one sync per "
          f"{connections} writers, log sync {rows[0]['sync_us']:.0f} µs | measured |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        measured = "n/a" if r["measured"] is None else f"{r['measured']:.2f}"
        print(f"| {r['workload']} | {r['cpu_us']:.0f} | {r['durable_cpu_us']:.0f} | "
              f"{r['durable_cpu_us'] - r['cpu_us']:+.0f} | {r['bound']:.2f} | {measured} |")


def print_targets(rows: list[Row]) -> None:
    print("\n| target | measured | goal | met | each round |")
    print("|---|---|---|---|---|")
    for what, value, goal, ok, rounds in rows:
        shown = "n/a" if value is None else f"{value:.2f}"
        print(f"| {what} | {shown} | {goal} | {'n/a' if ok is None else ('yes' if ok else '**no**')} | {rounds} |")
    missed = [r for r in rows if r[3] is False]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} targets met" + (
        "; missed: " + "; ".join(r[0] for r in missed) if missed else ""))
