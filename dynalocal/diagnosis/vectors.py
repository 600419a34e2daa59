"""The vector meters in the report: SearchVectors and vector-index writes, in requests and
approximate bytes, apart from read and write units (docs/behaviour/vectors.md §5)."""
from __future__ import annotations

from typing import Any

from dynalocal.diagnosis.words import num


def vector_report(data: dict[str, Any], window: int) -> dict[str, Any]:
    """A table's VECTORS (capacity/report.py's contract) for the report: totals, the last `window`
    seconds' per-second lists (oldest first) and their sums."""
    def meter(m: dict[str, Any]) -> dict[str, Any]:
        requests, sizes = m["per_second"]["requests"][-window:], m["per_second"]["bytes"][-window:]
        return {"unit": m["unit"], "requests": m["requests"], "bytes": m["bytes"],
                "window_requests": sum(requests), "window_bytes": sum(sizes),
                "per_second": {"requests": requests, "bytes": sizes}}
    return {"searches": meter(data["searches"]),
            "writes": {name: meter(m) for name, m in data["writes"].items()}}


def vector_lines(table: str, data: dict[str, Any], window: int) -> list[str]:
    """The report's text for one table's vector meters (from `vector_report`)."""
    lines = [f"== {table}: vector indexes (approximate bytes; last {window} s in brackets)"]
    rows = [("SearchVectors", data["searches"])]
    rows += [(f"writes to {name}", m) for name, m in data["writes"].items()]
    for what, m in rows:
        lines.append(f"    {what}: {m['requests']:,} requests, {num(m['bytes'])} {m['unit']} since start "
                     f"({m['window_requests']:,} requests, {num(m['window_bytes'])} bytes)")
    return lines
