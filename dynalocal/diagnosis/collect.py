"""Fill the engine's figures from the capacity module's records (`storage.capacity.report.snapshot`).

The window: rates are averaged over the seconds with traffic within the last WINDOW seconds,
from the first to the last such second, so a short load test read a minute later still shows
the rate it ran at (and an idle table shows none). Key counts and shares are totals since the
table's meter started, exact per partition-key value (see the snapshot's contract).
"""
from __future__ import annotations

from typing import Protocol

from dynalocal.capacity.registry import Capacity
from dynalocal.capacity.report import snapshot
from dynalocal.diagnosis.figures import (
    CAUSE_NAMES,
    DIRECTIONS,
    ON_DEMAND_MAXIMUM,
    ON_DEMAND_SCALING,
    TABLE_RATE,
    KeyFigures,
    MeterFigures,
    PartitionFigures,
)
from dynalocal.storage.database import Database

WINDOW = 60  # seconds of per-second records the rates look at


class Server(Protocol):
    """What diagnosis reads of a server (an engine Context): its meters and its tables."""

    capacity: Capacity
    db: Database


def collect(ctx: Server, table: str | None = None) -> list[MeterFigures]:
    """Figures of every table (or of `table`) and its GSIs, reads and writes, from the server's records."""
    snap = snapshot(ctx.capacity, ctx.db, table)
    balances = burst_balances(ctx, snap)
    return figures_from_snapshot(snap, balances)


def burst_balances(ctx: Server, snap: dict) -> dict[tuple[str, str | None, str], float]:
    """Units left in each table-level bucket (provisioned burst, or on-demand headroom) now."""
    out: dict[tuple[str, str | None, str], float] = {}
    cap, now = ctx.capacity, snap["now"]
    for name in snap["tables"]:
        entry = ctx.db.tables.get(name)
        if entry is None:
            continue
        tm = cap.meters(entry)
        for index, m in [(None, tm.table), *tm.gsis.items()]:
            for d, direction in enumerate(DIRECTIONS):
                bucket = m.table[d]
                if bucket is not None:
                    out[(name, index, direction)] = max(0.0, bucket.available(now))
    return out


def figures_from_snapshot(snap: dict, balances: dict | None = None) -> list[MeterFigures]:
    """The engine's figures for each table and GSI of a snapshot, reads then writes."""
    balances = balances or {}
    out = []
    for name, data in snap["tables"].items():
        for meter in [data["table"], *data["indexes"].values()]:
            for direction in DIRECTIONS:
                mode = data.get("throttling", snap.get("settings", {}).get("throttling", "enforce"))
                figures = _meter(meter, direction, snap, balances.get((name, meter["index"], direction)), mode)
                figures.table = name  # the catalog key: under --isolation, <scope>/<name> tells tables apart
                out.append(figures)
    return out


def _window(meter: dict, direction: str) -> tuple[int, int]:
    """(first, last) slot of the per-second lists with traffic in the last WINDOW seconds; (n, n-1) if none."""
    series = meter["per_second"]
    units, throttles = series[f"{direction}_units"], series[f"{direction}_throttles"]
    n = len(units)
    active = [i for i in range(max(0, n - WINDOW), n) if units[i] or throttles[i]]
    return (active[0], active[-1]) if active else (n, n - 1)


def _meter(m: dict, direction: str, snap: dict, balance: float | None, mode: str) -> MeterFigures:
    first, last = _window(m, direction)
    window = float(last - first + 1) if last >= first else 0.0
    limit, kind = _limit(m, direction)
    count = m["partition_count"]
    share = (m["provisioned"][direction] / count) if m["model"] == "classic" and m["provisioned"] else None
    parts = [_partition(p, direction, first, last, m["partition_ceiling"][direction], share) for p in m["partitions"]]
    for p in parts:
        p.burst_seconds = max(float(snap.get("settings", {}).get("partition_burst_seconds", 5.0)), 1.0)
    throttles = {CAUSE_NAMES.get(c, c): n for c, n in m["throttles"][direction].items() if n}
    # Whether the recorded throttles were refused (they add to the demand) or admitted as would-be ones
    # (already in the units). Under `keys` capacity-setting throttles are admitted and key-design ones
    # refused; the per-second record does not tell them apart, so a meter with any would-be throttle
    # counts as admitted (a refused key-range throttle there is then left out of the demand).
    would_be = sum(m.get("would_be", {}).get(direction, {}).values())
    refused = mode == "enforce" or (mode == "keys" and not would_be)
    return MeterFigures(m["table"], m["index"], direction, m["billing_mode"], m["model"], limit, kind, balance,
                        window, max(0.0, snap["now"] - m["since"]), parts, throttles, refused)


def _limit(m: dict, direction: str) -> tuple[float | None, str]:
    """What the table (or GSI) sustains per second, and what kind of limit that is."""
    if m["provisioned"] is not None:
        return m["provisioned"][direction], TABLE_RATE
    ceiling = m["ceiling"][direction] if m["ceiling"] else None
    maximum = m["max_on_demand"][direction]
    if maximum is not None and (ceiling is None or maximum <= ceiling):
        return maximum, ON_DEMAND_MAXIMUM
    return ceiling, ON_DEMAND_SCALING


def _partition(p: dict, direction: str, first: int, last: int, ceiling: float, share: float | None) -> PartitionFigures:
    units = p["per_second"][f"{direction}_units"][first:last + 1]
    refused = p["per_second"][f"{direction}_throttles"][first:last + 1]
    requests = "reads" if direction == "read" else "writes"
    keys = [KeyFigures(k["key"], k[f"{direction}_units"], k[requests]) for k in p["keys"] if k[f"{direction}_units"]]
    return PartitionFigures(
        number=p["index"], units=p["totals"][f"{direction}_units"], window_units=sum(units),
        peak=max(units, default=0.0), ceiling=ceiling, share=share,
        throttles={CAUSE_NAMES.get(c, c): n for c, n in p["throttles"][direction].items() if n},
        burst_units=p["totals"][f"{direction}_burst_units"], keys=keys, series=list(zip(units, refused)),
        items=p["items"], size_bytes=p["size_bytes"])
