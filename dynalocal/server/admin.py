"""dynalocal's own HTTP endpoints: health, per-partition statistics, Prometheus metrics."""
from __future__ import annotations

import base64

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..storage.database import TableEntry
from ..storage.table import ItemStore
from ..storage.throttle import TableMeter
from .context import Context
from .diagnosis_routes import diagnosis_routes
from .durability import reset_database
from .throttling import index_meter, table_meter

HOT_KEYS_SHOWN = 5


def _show_key(kind: str, pk_prefix: bytes) -> str:
    raw = pk_prefix[10:]
    if kind == "B":
        return base64.b64encode(raw).decode()
    return raw.decode("utf-8", "replace")


def partition_stats(ctx: Context, entry: TableEntry) -> list[dict]:
    """Per-partition figures of a table: items, bytes, units consumed, throttle events, hottest keys."""
    return _store_stats(ctx, entry.table, table_meter(ctx, entry), entry.table.schema.hash_type)


def index_stats(ctx: Context, entry: TableEntry) -> dict[str, list[dict]]:
    """Per-partition figures of each GSI (LSIs live in, and are counted by, the table's partitions)."""
    return {name: _store_stats(ctx, index, index_meter(ctx, entry, index), index.schema.hash_type)
            for name, index in entry.table.indexes.items() if index.is_global}


def _store_stats(ctx: Context, store: ItemStore, meter: TableMeter, kind: str) -> list[dict]:
    out = []
    for i, (part, m) in enumerate(zip(store.partitions, meter.partitions)):
        m.note_key(b"", 0, ctx.clock())  # apply decay before reporting
        del m.hot[b""]
        out.append({
            "index": i,
            "token_range": [f"{part.lo:016x}", f"{part.hi - 1:016x}"],
            "items": len(part),
            "size_bytes": part.size_bytes,
            "read_units_consumed": m.read_units,
            "write_units_consumed": m.write_units,
            "read_throttle_events": m.read_throttles,
            "write_throttle_events": m.write_throttles,
            "read_capacity_per_second": m.read.rate if m.read is not None else None,
            "write_capacity_per_second": m.write.rate if m.write is not None else None,
            "hot_keys": [{"key": _show_key(kind, k), "units": round(v, 3)}
                         for k, v in m.hot.most_common(HOT_KEYS_SHOWN)],
        })
    return out


def admin_routes(ctx: Context) -> list[Route]:
    """Routes under /_dynalocal/."""

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok", "tables": len(ctx.db.tables)})

    async def partitions(request: Request) -> Response:
        name = request.path_params["table"]
        entry = ctx.db.tables.get(name)
        if entry is None:
            return JSONResponse({"error": f"no table named {name}"}, status_code=404)
        return JSONResponse({"table": name, "billing_mode": entry.billing_mode,
                             "partitions": partition_stats(ctx, entry), "indexes": index_stats(ctx, entry)})

    async def metrics(_: Request) -> Response:
        return PlainTextResponse(prometheus(ctx), media_type="text/plain; version=0.0.4")

    async def reset(_: Request) -> Response:
        if not ctx.settings.allow_reset:
            return JSONResponse({"__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
                                 "message": "reset is disabled (--no-reset)"}, status_code=403)
        return JSONResponse({"reset": True, "tables_dropped": await reset_database(ctx)})

    return [Route("/_dynalocal/reset", reset, methods=["POST"]),
            Route("/_dynalocal/health", health),
            Route("/_dynalocal/tables/{table}/partitions", partitions),
            Route("/_dynalocal/metrics", metrics)] + diagnosis_routes(ctx)


_METRICS = (
    ("items", "dynalocal_partition_items", "Items stored in the partition"),
    ("size_bytes", "dynalocal_partition_size_bytes", "Item bytes stored in the partition"),
    ("read_units_consumed", "dynalocal_partition_read_units_total", "Read units consumed"),
    ("write_units_consumed", "dynalocal_partition_write_units_total", "Write units consumed"),
    ("read_throttle_events", "dynalocal_partition_read_throttles_total", "Reads throttled"),
    ("write_throttle_events", "dynalocal_partition_write_throttles_total", "Writes throttled"),
)


def prometheus(ctx: Context) -> str:
    """The partition figures of every table and GSI in Prometheus text format (GSIs labelled `index`)."""
    series = []  # (labels, per-partition stats); table and index names need no escaping
    for name, entry in sorted(ctx.db.tables.items()):
        series.append((f'table="{name}"', partition_stats(ctx, entry)))
        for index, parts in sorted(index_stats(ctx, entry).items()):
            series.append((f'table="{name}",index="{index}"', parts))
    lines = []
    for field, metric, help_text in _METRICS:
        kind = "counter" if metric.endswith("_total") else "gauge"
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
        for labels, parts in series:
            for p in parts:
                lines.append(f'{metric}{{{labels},partition="{p["index"]}"}} {p[field]}')
    return "\n".join(lines) + "\n"

