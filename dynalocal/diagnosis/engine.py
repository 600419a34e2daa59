"""The diagnosis: rates, shares, top keys, throttles by cause, a burst projection and a verdict.

One engine for every view (terminal report, JSON endpoint, console, pytest plugin). Input is
`figures.MeterFigures` per table/GSI and direction; output is plain data that `render` turns
into words and `as_json` into the report endpoint's body.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from dynalocal.diagnosis.advice import HOT_GSI_KEY, HOT_KEY, UNDER_PROVISIONED, advice_for
from dynalocal.diagnosis.figures import (
    CAPACITY_CAUSES,
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
from dynalocal.diagnosis.words import num, percent

FINE = "fine"
TOP_KEYS = 5
ONE_KEY = 0.5  # a key carrying this share of a partition's units is the partition's cause
NEAR = 0.8  # a partition whose peak reached this share of what it sustains came near its ceiling
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
    partition_share: float = 0.0  # of its partition's units since start


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
    burst_seconds: float = 5.0  # seconds of its ceiling a partition holds as burst


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
    share: float | None = None  # the named key's share of its partition's units since start
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
    if not f.refused:
        per_request = 0.0  # would-be throttles were admitted: already in the units
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
    keys = [KeyShare(k.key, p.number, k.units, k.requests, k.units / total if total else 0.0,
                     k.units / p.units if p.units else 0.0)
            for k in sorted(p.keys, key=lambda k: -k.units)[:TOP_KEYS]]
    refused = sum(n for _, n in p.series)
    rate = p.window_units / window
    return PartitionReport(p.number, rate, rate + refused * per_request / window, p.peak, p.ceiling, p.share,
                           p.units / total if total else 0.0, p.units, dict(p.throttles), p.burst_units, keys,
                           list(p.series), p.items, p.size_bytes, p.burst_seconds)


def _sustained(f: MeterFigures, p: PartitionReport) -> float:
    """What one partition sustains per second: its ceiling, or its fixed share in the classic model."""
    return min(p.ceiling, p.share_limit) if f.model == "classic" and p.share_limit is not None else p.ceiling


def _dominant(p: PartitionReport) -> KeyShare | None:
    """The key that carried at least half of partition `p`'s units, if one did."""
    key = p.top_keys[0] if p.top_keys else None
    return key if key is not None and key.partition_share >= ONE_KEY else None


def _projection(f: MeterFigures, m: MeterReport) -> Projection | None:
    """The worst overload over the window (the table, or a partition one key dominates: a partition
    whose traffic is spread over keys splits), projected to steady state."""
    worst: Projection | None = None
    if f.limit is not None and m.demand > f.limit:
        left = f.burst_balance / (m.demand - f.limit) if f.burst_balance else None
        worst = Projection("table", m.demand, f.limit, left, (m.demand - f.limit) / m.demand)
    for p in m.partitions:
        sustained = _sustained(f, p)
        if p.demand > sustained and m.demand > 0 and (f.model == "classic" or _dominant(p) is not None):
            share = (p.demand - sustained) / m.demand
            if worst is None or share > worst.throttled_share:
                worst = Projection(f"partition {p.number}", p.demand, sustained, None, share)
    return worst


def _skewed(m: MeterReport, p: PartitionReport) -> bool:
    count = len(m.partitions)
    return count > 1 and p.share > SKEWED / count


def _reached(f: MeterFigures, m: MeterReport, p: PartitionReport) -> bool:
    """Whether partition `p` reached what it sustains: throttled there (refused or would-be), or its
    units beyond it within the window spent its burst. Classic shares count on a skewed partition."""
    if p.throttles.get(PARTITION_CEILING) or (p.throttles.get(PARTITION_SHARE) and _skewed(m, p)):
        return True
    sustained = _sustained(f, p)
    if sustained < p.ceiling and not _skewed(m, p):
        sustained = p.ceiling  # an even classic share spent is under-provisioning, not key design
    beyond = sum(max(0.0, units - sustained) for units, _ in p.series)
    return beyond > 0 and beyond >= sustained * p.burst_seconds


def _causes(m: MeterReport) -> tuple[int, int]:
    """(key-design throttles, capacity-setting throttles) of a meter, refused or would-be."""
    design = sum(p.throttles.get(PARTITION_CEILING, 0) for p in m.partitions)
    capacity = sum(m.throttles.get(c, 0) for c in CAPACITY_CAUSES)
    for p in m.partitions:
        shared = p.throttles.get(PARTITION_SHARE, 0)
        if _skewed(m, p):
            design += shared
        else:
            capacity += shared
    return design, capacity


def _verdict(f: MeterFigures, m: MeterReport) -> Verdict:
    """Hot key when a partition reached its ceiling and one key carried half its units (and key-design
    throttles are not outnumbered); under-provisioned when capacity-setting throttles dominate (or the
    table runs above its provisioned rate or on-demand maximum on burst); fine otherwise."""
    hot = _hot_partition(f, m)
    design, capacity = _causes(m)
    if hot is not None and design >= capacity:
        return _hot_verdict(f, m, hot)
    # above the table's limit on burst: a provisioned rate or on-demand maximum will throttle once
    # burst is spent; an on-demand table's scaled capacity grows with the traffic instead
    over_table = (m.projection is not None and m.projection.scope == "table"
                  and f.limit_kind != ON_DEMAND_SCALING)
    if (capacity > design or over_table) and f.limit is not None:
        return _under_provisioned(f, m, hot)
    if hot is not None:
        return _hot_verdict(f, m, hot)
    return _fine(f, m, design)


def _hot_partition(f: MeterFigures, m: MeterReport) -> PartitionReport | None:
    """The partition whose key design is the problem: it reached its ceiling (or, classic, a skewed
    share) and one key carried at least half of its units."""
    candidates = [p for p in m.partitions if _dominant(p) is not None and _reached(f, m, p)]
    return max(candidates, key=lambda p: (sum(p.throttles.values()), p.units), default=None)


def _where(f: MeterFigures) -> str:
    return f"index {f.index} of table {f.table}" if f.index else f"table {f.table}"


def _hot_verdict(f: MeterFigures, m: MeterReport, p: PartitionReport) -> Verdict:
    key = _dominant(p)
    assert key is not None  # a hot partition has a dominant key
    kind = HOT_GSI_KEY if f.index else HOT_KEY
    u = m.unit
    limit = _sustained(f, p)
    summary = (f"{kind} on {_where(f)}: key {key.key!r} carried {percent(key.partition_share)} of partition "
               f"{p.number}'s {f.direction}s ({num(key.units)} of {num(p.units)} {u} since start); the partition "
               f"ran at {num(p.rate)} {u}/s (peak {num(p.peak)} in one second) and sustains {num(limit)} {u}/s")
    thrown = sum(p.throttles.values())
    if thrown:
        summary += f"; {thrown:,} {f.direction}s throttled there"
    projection = m.projection if m.projection is not None and m.projection.scope == f"partition {p.number}" else None
    if projection is not None:
        summary += f"; {_steady(f)} {percent(projection.throttled_share)} of {f.direction}s would be throttled"
    return Verdict(kind, f.table, f.index, f.direction, summary + ".", advice_for(kind, f, key.key),
                   key.key, p.number, key.partition_share, None, projection)


def _steady(f: MeterFigures) -> str:
    """How to say 'once burst is spent' under the meter's model."""
    return "in production" if f.model == "adaptive" else "under the classic model, once burst is spent,"


def _near(f: MeterFigures, m: MeterReport) -> tuple[PartitionReport, KeyShare] | None:
    """A partition that came near what it sustains (its peak at NEAR of it) with one key carrying half its units."""
    near = [(p, k) for p in m.partitions if (k := _dominant(p)) is not None and p.peak >= NEAR * _sustained(f, p)]
    return max(near, key=lambda pk: pk[0].peak, default=None)


def _key_note(f: MeterFigures, m: MeterReport) -> str:
    """A clause naming a key that carried half of a partition which came near its ceiling, or ''."""
    near = _near(f, m)
    if near is None:
        return ""
    p, key = near
    return (f"; key {key.key!r} carried {percent(key.partition_share)} of partition {p.number}, which peaked at "
            f"{num(p.peak)} of the {num(_sustained(f, p))} {m.unit}/s it sustains, so this key tops out there "
            "whatever is provisioned")


def _under_provisioned(f: MeterFigures, m: MeterReport, hot: PartitionReport | None) -> Verdict:
    limit = f.limit or 0.0
    needed = m.demand
    u = m.unit
    summary = f"{UNDER_PROVISIONED}: {_where(f)} ran at {num(m.rate)} {u}/s of {f.direction}s"
    if needed > m.rate * 1.001:
        summary += f" and was asked for about {num(needed)}"
    summary += f" against {num(limit)} {u}/s {_limit_name(f)}"
    _, capacity = _causes(m)
    if capacity:
        summary += f"; {capacity:,} {f.direction}s throttled by that setting"
    projection = m.projection if m.projection is not None and m.projection.scope == "table" else None
    if projection is not None:
        if projection.burst_left_seconds is not None:
            summary += f"; burst capacity lasts about {num(projection.burst_left_seconds)} s more at this rate, then"
        else:
            summary += "; once burst is spent,"
        summary += f" {percent(projection.throttled_share)} of {f.direction}s would be throttled"
    note = _key_note(f, m)
    summary += note or "; no partition came near its ceiling with one key, so the key design is not the cause"
    return Verdict(UNDER_PROVISIONED, f.table, f.index, f.direction, summary + ".",
                   advice_for(UNDER_PROVISIONED, f, None, needed, even=not note), None, None, None, needed,
                   projection)


def _limit_name(f: MeterFigures) -> str:
    return {TABLE_RATE: "provisioned", ON_DEMAND_MAXIMUM: "on-demand maximum", TABLE_QUOTA: "table quota",
            ON_DEMAND_SCALING: "on-demand capacity scaled so far"}.get(f.limit_kind, "limit")


def _fine(f: MeterFigures, m: MeterReport, design: int) -> Verdict:
    what = _where(f)
    if not m.units:
        return Verdict(FINE, f.table, f.index, f.direction, f"fine: no {f.direction}s on {what}.", [])
    u = m.unit
    summary = f"fine: {what} peaked at {num(m.peak)} {u}/s of {f.direction}s"
    if f.limit:
        summary += f" ({percent(m.peak / f.limit)} of {num(f.limit)} {_limit_name(f)})"
    if design:
        summary += (f"; {design:,} {f.direction}s met a partition ceiling, but no key carried half of a "
                    "partition's units: partitions split for sustained traffic, as DynamoDB's do")
    elif not sum(m.throttles.values()):
        summary += " with no throttling"
    summary += _key_note(f, m)
    back = m.throttles.get(GSI_BACK_PRESSURE, 0)
    if back:
        summary += f"; {back:,} writes were refused because a GSI could not absorb them (see the index's verdict)"
    near = _near(f, m)
    key = near[1] if near is not None else None
    return Verdict(FINE, f.table, f.index, f.direction, summary + ".", [], key.key if key else None,
                   key.partition if key else None, key.partition_share if key else None, None, None)


def as_json(tables: list[TableReport]) -> list[dict]:
    """The report as JSON-ready data (the /_dynalocal/report body's `tables`)."""
    out = []
    for t in tables:
        data = asdict(t)
        data["verdict"] = data["verdicts"][0]
        data["throttles"] = t.throttles
        out.append(data)
    return out
