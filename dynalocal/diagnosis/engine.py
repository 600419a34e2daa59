"""The diagnosis: rates, shares, top keys, throttles by cause, a burst projection and a verdict.

One engine for every view (terminal report, JSON endpoint, console, pytest plugin). Input is
`figures.MeterFigures` per table/GSI and direction; output is plain data that `render` turns
into words and `as_json` into the report endpoint's body.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from dynalocal.diagnosis.advice import HOT_GSI_KEY, HOT_KEY, UNDER_PROVISIONED, advice_for
from dynalocal.diagnosis.figures import (
    GSI_BACK_PRESSURE,
    ON_DEMAND_MAXIMUM,
    ON_DEMAND_SCALING,
    PARTITION_CEILING,
    PARTITION_SHARE,
    TABLE_QUOTA,
    TABLE_RATE,
    MeterFigures,
    PartitionFigures,
)

FINE = "fine"
TOP_KEYS = 5
SKEWED = 1.5  # a partition with more than 1.5x its even share of the traffic is skewed (classic model)


@dataclass
class Projection:
    """Traffic above what a limit sustains: how long burst lasts and what would be throttled after."""

    scope: str  # "table" or "partition N"
    rate: float  # units/s asked for over the window (admitted plus refused)
    sustained: float  # units/s the limit sustains
    burst_left_seconds: float | None  # at this rate; None when unknown (no burst balance recorded)
    throttled_share: float  # of this meter's traffic, once burst is spent (steady state)


@dataclass
class KeyShare:
    key: str
    partition: int
    units: float
    requests: int
    share: float  # of the meter's units since start


@dataclass
class PartitionReport:
    number: int
    rate: float  # average units/s consumed over the window
    demand: float  # average units/s asked for over the window: consumed plus refused (at the mean size)
    peak: float  # highest units in one second in the window
    ceiling: float
    share_limit: float | None  # classic: the partition's fixed share per second
    share: float  # of the meter's units since start
    units: float
    throttles: dict[str, int]
    burst_units: float
    top_keys: list[KeyShare]
    series: list[tuple[float, int]]
    items: int
    size_bytes: int


@dataclass
class Verdict:
    kind: str  # HOT_KEY | HOT_GSI_KEY | UNDER_PROVISIONED | FINE
    table: str
    index: str | None
    direction: str
    summary: str  # one plain sentence
    advice: list[str]
    key: str | None = None
    partition: int | None = None
    share: float | None = None  # the key's share of the meter's units
    needed: float | None = None  # under-provisioned: units/s the traffic asked for
    projection: Projection | None = None


@dataclass
class MeterReport:
    table: str
    index: str | None
    direction: str
    unit: str
    billing_mode: str
    model: str
    limit: float | None
    window: float
    units: float  # since start
    rate: float  # average units/s consumed over the window
    demand: float  # average units/s asked for over the window (consumed plus refused)
    peak: float  # highest table-wide units in one second in the window
    throttles: dict[str, int]
    top_keys: list[KeyShare]
    partitions: list[PartitionReport]
    projection: Projection | None
    verdict: Verdict


@dataclass
class TableReport:
    table: str
    meters: list[MeterReport]
    verdicts: list[Verdict] = field(default_factory=list)  # the problems, worst first; [fine] if none

    @property
    def verdict(self) -> Verdict:
        return self.verdicts[0]

    @property
    def throttles(self) -> dict[str, int]:
        """Throttle events by cause; a GSI's own causes are labelled with the index, since a write it
        refused is also counted on the table as GSI back-pressure."""
        out: dict[str, int] = {}
        for m in self.meters:
            for cause, n in m.throttles.items():
                label = cause if m.index is None else f"{cause} (index {m.index})"
                out[label] = out.get(label, 0) + n
        return out


def diagnose(meters: list[MeterFigures]) -> list[TableReport]:
    """One report per table (in the order first met), each with its meters' reports and verdicts."""
    tables: dict[str, TableReport] = {}
    for figures in meters:
        report = diagnose_meter(figures)
        tables.setdefault(figures.table, TableReport(figures.table, [])).meters.append(report)
    for table in tables.values():
        problems = [m.verdict for m in table.meters if m.verdict.kind != FINE]
        problems.sort(key=_severity)
        table.verdicts = problems or [_busiest_fine(table)]
    return list(tables.values())


def _severity(v: Verdict) -> tuple:
    share = v.projection.throttled_share if v.projection else 0.0
    return (v.kind == UNDER_PROVISIONED, -share)


def _busiest_fine(table: TableReport) -> Verdict:
    busiest = max(table.meters, key=lambda m: (m.units, m.direction == "write"))
    return busiest.verdict


def diagnose_meter(f: MeterFigures) -> MeterReport:
    """Rates, shares, throttles, projection and verdict of one table or GSI in one direction."""
    total = sum(p.units for p in f.partitions)
    window = max(f.window, 1e-9)
    requests = sum(k.requests for p in f.partitions for k in p.keys)
    per_request = total / requests if requests else 1.0  # mean units of a request, to price refused ones
    parts = [_partition(p, total, window, per_request) for p in f.partitions]
    keys = sorted((k for p in parts for k in p.top_keys), key=lambda k: -k.units)[:TOP_KEYS]
    throttles: dict[str, int] = dict(f.throttles) if f.throttles is not None else {}
    if f.throttles is None:
        for p in f.partitions:
            for cause, n in p.throttles.items():
                throttles[cause] = throttles.get(cause, 0) + n
    rate = sum(p.rate for p in parts)
    demand = sum(p.demand for p in parts)
    seconds = max((len(p.series) for p in f.partitions), default=0)
    peak = max((sum(p.series[i][0] for p in f.partitions if i < len(p.series)) for i in range(seconds)), default=0.0)
    report = MeterReport(f.table, f.index, f.direction, f.unit, f.billing_mode, f.model, f.limit, f.window, total,
                         rate, demand, peak, throttles, keys, parts, None, None)  # type: ignore[arg-type]
    report.projection = _projection(f, report)
    report.verdict = _verdict(f, report)
    return report


def _partition(p: PartitionFigures, total: float, window: float, per_request: float) -> PartitionReport:
    keys = [KeyShare(k.key, p.number, k.units, k.requests, k.units / total if total else 0.0)
            for k in sorted(p.keys, key=lambda k: -k.units)[:TOP_KEYS]]
    refused = sum(n for _, n in p.series)
    rate = p.window_units / window
    return PartitionReport(p.number, rate, rate + refused * per_request / window, p.peak, p.ceiling, p.share,
                           p.units / total if total else 0.0, p.units, dict(p.throttles), p.burst_units, keys,
                           list(p.series), p.items, p.size_bytes)


def _sustained(f: MeterFigures, p: PartitionReport) -> float:
    """What one partition sustains per second: its ceiling, or its fixed share in the classic model."""
    return min(p.ceiling, p.share_limit) if f.model == "classic" and p.share_limit is not None else p.ceiling


def _projection(f: MeterFigures, m: MeterReport) -> Projection | None:
    """The worst overload over the window (table or one partition), projected to steady state."""
    worst: Projection | None = None
    if f.limit is not None and m.demand > f.limit:
        left = f.burst_balance / (m.demand - f.limit) if f.burst_balance else None
        worst = Projection("table", m.demand, f.limit, left, (m.demand - f.limit) / m.demand)
    for p in m.partitions:
        sustained = _sustained(f, p)
        if p.demand > sustained and m.demand > 0:
            share = (p.demand - sustained) / m.demand
            if worst is None or share > worst.throttled_share:
                worst = Projection(f"partition {p.number}", p.demand, sustained, None, share)
    return worst


def _verdict(f: MeterFigures, m: MeterReport) -> Verdict:
    hot = _hot_partition(f, m)
    if hot is not None:
        return _hot_verdict(f, m, hot)
    table_causes = (TABLE_RATE, ON_DEMAND_MAXIMUM, ON_DEMAND_SCALING, TABLE_QUOTA, PARTITION_SHARE)
    over = any(m.throttles.get(c) for c in table_causes) or (m.projection is not None
                                                              and m.projection.scope == "table")
    if over and f.limit is not None:
        return _under_provisioned(f, m)
    return _fine(f, m)


def _hot_partition(f: MeterFigures, m: MeterReport) -> PartitionReport | None:
    """The partition whose key design is the problem: over its ceiling, or (classic) a skewed share."""
    count = len(m.partitions)
    candidates = []
    for p in m.partitions:
        ceiling_hit = p.throttles.get(PARTITION_CEILING, 0) or p.demand > p.ceiling
        skewed = count > 1 and p.share > SKEWED / count
        share_hit = (p.throttles.get(PARTITION_SHARE, 0) or p.demand > _sustained(f, p)) and skewed
        if ceiling_hit or share_hit:
            candidates.append(p)
    return max(candidates, key=lambda p: (sum(p.throttles.values()), p.share), default=None)


def _hot_verdict(f: MeterFigures, m: MeterReport, p: PartitionReport) -> Verdict:
    key = p.top_keys[0] if p.top_keys else None
    kind = HOT_GSI_KEY if f.index else HOT_KEY
    where = f"index {f.index} of table {f.table}" if f.index else f"table {f.table}"
    projection = m.projection if m.projection is not None and m.projection.scope != "table" else None
    if key is not None:
        summary = (f"{kind} on {where}: key {key.key!r} took {percent(key.share)} of {f.direction}s "
                   f"({key.units:g} {m.unit} in {key.requests} requests), all on partition {p.number}")
    else:
        summary = f"{kind} on {where}: partition {p.number} took {p.share:.0%} of {f.direction}s"
    limit = _sustained(f, p)
    summary += f", which sustains {limit:g} {m.unit}/s"
    thrown = sum(p.throttles.values())
    if thrown:
        summary += f"; {thrown} {f.direction}s throttled there"
    if projection is not None:
        summary += f"; {_steady(f)} {projection.throttled_share:.0%} of {f.direction}s would be throttled"
    hot_key = key.key if key else None
    return Verdict(kind, f.table, f.index, f.direction, summary + ".", advice_for(kind, f, hot_key),
                   hot_key, p.number, key.share if key else p.share, None, projection)


def _steady(f: MeterFigures) -> str:
    """How to say 'once burst is spent' under the meter's model."""
    return "in production" if f.model == "adaptive" else "under the classic model, once burst is spent,"


def _under_provisioned(f: MeterFigures, m: MeterReport) -> Verdict:
    limit = f.limit or 0.0
    needed = m.demand
    what = f"index {f.index} of table {f.table}" if f.index else f"table {f.table}"
    summary = f"{UNDER_PROVISIONED}: {what} took {m.rate:g} {m.unit}/s of {f.direction}s"
    if needed > m.rate * 1.001:
        summary += f" and was asked for about {needed:.0f}"
    summary += f" against {limit:g} {m.unit}/s {_limit_name(f)}"
    if limit and needed > limit:
        summary += f" ({needed / limit - 1:.0%} short)"
    thrown = sum(m.throttles.values())
    if thrown:
        summary += f"; {thrown} {f.direction}s throttled"
    projection = m.projection if m.projection is not None and m.projection.scope == "table" else None
    if projection is not None:
        if projection.burst_left_seconds is not None:
            summary += f"; burst capacity lasts about {projection.burst_left_seconds:.0f} s more at this rate"
        summary += f", then {projection.throttled_share:.0%} of {f.direction}s would be throttled"
    summary += "; partitions are evenly used, so this is not a hot key"
    return Verdict(UNDER_PROVISIONED, f.table, f.index, f.direction, summary + ".",
                   advice_for(UNDER_PROVISIONED, f, None, needed), None, None, None, needed, projection)


def _limit_name(f: MeterFigures) -> str:
    return {TABLE_RATE: "provisioned", ON_DEMAND_MAXIMUM: "on-demand maximum", TABLE_QUOTA: "table quota",
            ON_DEMAND_SCALING: "on-demand capacity scaled so far"}.get(f.limit_kind, "limit")


def _fine(f: MeterFigures, m: MeterReport) -> Verdict:
    what = f"index {f.index} of table {f.table}" if f.index else f"table {f.table}"
    if not m.units:
        return Verdict(FINE, f.table, f.index, f.direction, f"fine: no {f.direction}s on {what}.", [])
    summary = f"fine: {what} peaked at {m.peak:g} {m.unit}/s of {f.direction}s with no throttling"
    if f.limit is not None:
        summary += f" ({m.peak / f.limit:.0%} of {f.limit:g} {_limit_name(f)})" if f.limit else ""
    key = m.top_keys[0] if m.top_keys else None
    if key is not None and len(m.partitions) > 1 and key.share >= 0.5:
        ceiling = m.partitions[key.partition].ceiling
        summary += (f"; but key {key.key!r} takes {key.share:.0%} of them, so this design tops out near "
                    f"{ceiling / key.share:.0f} {m.unit}/s (one partition sustains {ceiling:g}) "
                    "whatever is provisioned")
    if m.projection is not None:
        p = m.projection
        summary += (f"; at this rate {p.scope} (asked for {p.rate:.0f} {m.unit}/s, sustains {p.sustained:g}) "
                    f"would throttle {p.throttled_share:.0%} of {f.direction}s once its burst is spent")
    back = m.throttles.get(GSI_BACK_PRESSURE, 0)
    if back:
        summary += f"; {back} writes were refused because a GSI could not absorb them (see the index's verdict)"
    return Verdict(FINE, f.table, f.index, f.direction, summary + ".", [], key.key if key else None,
                   key.partition if key else None, key.share if key else None, None, m.projection)


def percent(x: float) -> str:
    """A share as a percentage, with a decimal below 10% so small shares do not read as 0%."""
    return f"{x:.0%}" if x >= 0.1 or x == 0 else f"{x:.1%}"


def as_json(tables: list[TableReport]) -> list[dict]:
    """The report as JSON-ready data (the /_dynalocal/report body's `tables`)."""
    out = []
    for t in tables:
        data = asdict(t)
        data["verdict"] = data["verdicts"][0]
        data["throttles"] = t.throttles
        out.append(data)
    return out
