"""The diagnosis as text: the terminal report of `dynalocal report` and the pytest summary lines."""
from __future__ import annotations

import textwrap

from dynalocal.diagnosis.engine import FINE, MeterReport, TableReport, percent

WIDTH = 100


def render_report(tables: list[TableReport], window: float | None = None) -> str:
    """The whole report, one block per table; readable without knowing DynamoDB's internals."""
    if not tables:
        return "No tables.\n"
    blocks = [render_table(t) for t in sorted(tables, key=lambda t: t.verdict.kind == FINE)]  # problems first
    head = (f"Rates: averages over the seconds with traffic in the last {window:g} s. Shares and key counts: "
            "exact totals since each table's statistics started.\n\n" if window else "")
    return head + "\n".join(blocks)


def render_table(t: TableReport) -> str:
    lines = [f"== {t.table}"]
    for v in t.verdicts:
        lines += _wrap(("OK  " if v.kind == FINE else "!!  ") + v.summary, "    ")
        for advice in v.advice:
            lines += _wrap("- " + advice, "      ")
    for m in t.meters:
        if m.units or sum(m.throttles.values()):
            lines += _meter(m)
    return "\n".join(lines) + "\n"


def _meter(m: MeterReport) -> list[str]:
    what = f"index {m.index}" if m.index else "table"
    limit = f"limit {m.limit:g} {m.unit}/s" if m.limit is not None else "no table limit"
    lines = [f"  {what} {m.direction}s: {m.units:g} {m.unit} since start; {m.rate:.1f} {m.unit}/s average, "
             f"peak {m.peak:g} in one second (last {m.window:g} s); {limit}; {len(m.partitions)} partitions"]
    if m.throttles:
        causes = ", ".join(f"{cause}: {n}" for cause, n in sorted(m.throttles.items(), key=lambda c: -c[1]))
        lines.append(f"    throttled {sum(m.throttles.values())} ({causes})")
    if m.projection is not None:
        pr = m.projection
        burst = (f"burst lasts ~{pr.burst_left_seconds:.0f} s more, then " if pr.burst_left_seconds is not None
                 else "once burst is spent, ")
        lines.append(f"    projection: {pr.scope} runs at {pr.rate:.1f} {m.unit}/s, sustains {pr.sustained:g}; "
                     f"{burst}{pr.throttled_share:.0%} of {m.direction}s throttled")
    lines.append(f"    {'partition':>9} {'avg/s':>8} {'peak/s':>7} {'share':>6} {'sustains':>8} "
                 f"{'throttled':>9}  top keys")
    for p in m.partitions:
        sustains = min(p.ceiling, p.share_limit) if m.model == "classic" and p.share_limit else p.ceiling
        keys = ", ".join(f"{k.key!r} {percent(k.share)}" for k in p.top_keys[:3]) or "-"
        lines.append(f"    {p.number:>9} {p.rate:>8.1f} {p.peak:>7g} {p.share:>6.0%} {sustains:>8g} "
                     f"{sum(p.throttles.values()):>9}  {keys}")
    return lines


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "    ")


def summary_line(t: TableReport) -> str:
    """One line per table for CI logs: the verdict and the throttles by cause."""
    throttles = t.throttles
    counts = ", ".join(f"{cause} {n}" for cause, n in throttles.items()) if throttles else "no throttles"
    return f"{t.table}: {t.verdict.summary} [{counts}]"
