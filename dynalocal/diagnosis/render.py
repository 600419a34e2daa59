"""The diagnosis as text: the terminal report of `dynalocal report` and the pytest summary lines."""
from __future__ import annotations

import textwrap

from dynalocal.diagnosis.engine import FINE, MeterReport, TableReport
from dynalocal.diagnosis.words import num, percent

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
    u = m.unit
    limit = f"limit {num(m.limit)} {u}/s" if m.limit is not None else "no table limit"
    lines = [f"  {what} {m.direction}s: {num(m.units)} {u} since start; {num(m.rate)} {u}/s average, "
             f"peak {num(m.peak)} in one second (last {num(m.window)} s); {limit}; {len(m.partitions)} partitions"]
    if m.demand > m.rate * 1.001:
        lines[0] += f"; asked for {num(m.demand)} {u}/s with the refused requests"
    if m.throttles:
        causes = ", ".join(f"{cause}: {n:,}" for cause, n in sorted(m.throttles.items(), key=lambda c: -c[1]))
        lines.append(f"    throttled {sum(m.throttles.values()):,} ({causes})")
    if m.projection is not None:
        pr = m.projection
        burst = (f"burst lasts ~{num(pr.burst_left_seconds)} s more, then " if pr.burst_left_seconds is not None
                 else "once burst is spent, ")
        lines.append(f"    projection: {pr.scope} runs at {num(pr.rate)} {u}/s, sustains {num(pr.sustained)}; "
                     f"{burst}{percent(pr.throttled_share)} of {m.direction}s throttled")
    lines.append(f"    {'partition':>9} {u + ' total':>10} {'share':>6} {'avg/s':>7} {'peak/s':>7} {'sustains':>8} "
                 f"{'throttled':>9}  top keys (share of the partition)")
    for p in m.partitions:
        sustains = min(p.ceiling, p.share_limit) if m.model == "classic" and p.share_limit else p.ceiling
        keys = ", ".join(f"{k.key!r} {num(k.units)} ({percent(k.partition_share)})" for k in p.top_keys[:3]) or "-"
        lines.append(f"    {p.number:>9} {num(p.units):>10} {percent(p.share):>6} {num(p.rate):>7} {num(p.peak):>7} "
                     f"{num(sustains):>8} {sum(p.throttles.values()):>9,}  {keys}")
    return lines


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "    ")


def summary_line(t: TableReport) -> str:
    """One line per table for CI logs: the verdict and the throttles by cause."""
    throttles = t.throttles
    counts = ", ".join(f"{cause} {n}" for cause, n in throttles.items()) if throttles else "no throttles"
    return f"{t.table}: {t.verdict.summary} [{counts}]"
