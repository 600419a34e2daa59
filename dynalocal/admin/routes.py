"""dynalocal's own HTTP endpoints: health, per-partition statistics, Prometheus metrics."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from dynalocal.admin.diagnosis_routes import diagnosis_routes
from dynalocal.admin.dynamodb_routes import dynamodb_routes
from dynalocal.admin.scoping import not_yours, resolve, scoped_signer
from dynalocal.capacity.report import meter_data
from dynalocal.engine.context import Context
from dynalocal.engine.reset import reset_database
from dynalocal.errors import access_denied_body
from dynalocal.storage.database import TableEntry

HOT_KEYS_SHOWN = 5


def partition_stats(ctx: Context, entry: TableEntry) -> list[dict]:
    """Per-partition figures of a table: items, bytes, units consumed, throttle events, hottest keys."""
    m = ctx.capacity.meter(entry)
    return _store_stats(meter_data(entry, m, entry.table, entry.table.schema.hash_type, ctx.clock()))


def index_stats(ctx: Context, entry: TableEntry) -> dict[str, list[dict]]:
    """Per-partition figures of each GSI (LSIs live in, and are counted by, the table's partitions)."""
    return {name: _store_stats(meter_data(entry, ctx.capacity.index_meter(entry, index), index,
                                          index.hash_kind, ctx.clock()))
            for name, index in entry.table.indexes.items() if index.is_global}


def _store_stats(data: dict) -> list[dict]:
    """The partitions of a capacity report (storage.capacity.report) in this page's flat form."""
    out = []
    provisioned = data["provisioned"] if data["model"] == "classic" else None
    count = data["partition_count"]
    for p in data["partitions"]:
        totals = p["totals"]
        out.append({
            "index": p["index"],
            "token_range": p["token_range"],
            "items": p["items"],
            "size_bytes": p["size_bytes"],
            "read_units_consumed": totals["read_units"],
            "write_units_consumed": totals["write_units"],
            "read_throttle_events": sum(p["throttles"]["read"].values()),
            "write_throttle_events": sum(p["throttles"]["write"].values()),
            "throttles_by_cause": p["throttles"],
            # a classic partition's share of the provisioned rate; adaptive partitions have none
            "read_capacity_per_second": provisioned["read"] / count if provisioned else None,
            "write_capacity_per_second": provisioned["write"] / count if provisioned else None,
            "hot_keys": [{"key": k["key"], "units": round(k["read_units"] + k["write_units"], 3)}
                         for k in p["keys"][:HOT_KEYS_SHOWN]],
        })
    return out


def admin_routes(ctx: Context) -> list[Route]:
    """Routes under /_dynalocal/."""

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok", "tables": len(ctx.db.tables)})

    async def partitions(request: Request) -> Response:
        name = resolve(scoped_signer(request), request.path_params["table"])
        if name is None:
            return not_yours()
        entry = ctx.db.tables.get(name)
        if entry is None:
            return JSONResponse({"error": f"no table named {request.path_params['table']}"}, status_code=404)
        return JSONResponse({"table": name, "billing_mode": entry.billing_mode,
                             "partitions": partition_stats(ctx, entry), "indexes": index_stats(ctx, entry)})

    async def metrics(_: Request) -> Response:
        return PlainTextResponse(prometheus(ctx), media_type="text/plain; version=0.0.4")

    async def reset(_: Request) -> Response:
        if not ctx.settings.allow_reset:
            return Response(access_denied_body("reset is disabled (--no-reset)"), status_code=403,
                            media_type="application/json")
        return JSONResponse({"reset": True, "tables_dropped": await reset_database(ctx)})

    return [Route("/_dynalocal/reset", reset, methods=["POST"]),
            Route("/_dynalocal/health", health),
            # {table:path}: under --isolation region|account a table's key is <region>/<name> or
            # <account>/<region>/<name> (storage.database), e.g. /_dynalocal/tables/eu-west-1/Music/partitions
            Route("/_dynalocal/tables/{table:path}/partitions", partitions),
            Route("/_dynalocal/metrics", metrics)] + diagnosis_routes(ctx) + dynamodb_routes(ctx)


_METRICS = (
    ("items", "dynalocal_partition_items", "Items stored in the partition"),
    ("size_bytes", "dynalocal_partition_size_bytes", "Item bytes stored in the partition"),
    ("read_units_consumed", "dynalocal_partition_read_units_total", "Read units consumed"),
    ("write_units_consumed", "dynalocal_partition_write_units_total", "Write units consumed"),
    ("read_throttle_events", "dynalocal_partition_read_throttles_total", "Reads throttled"),
    ("write_throttle_events", "dynalocal_partition_write_throttles_total", "Writes throttled"),
)


_LIMITS = (
    ("dynalocal_table_limit_units_per_second",
     "Units per second the table or GSI sustains now: the provisioned rate, or the on-demand ceiling"),
    ("dynalocal_partition_limit_units_per_second",
     "Units per second one partition sustains: the partition ceiling, or the classic model's share if lower"),
)
_CAUSES = ("dynalocal_partition_throttles_by_cause_total", "Requests throttled, by direction and cause")


def prometheus(ctx: Context) -> str:
    """The partition figures of every table and GSI in Prometheus text format (GSIs labelled `index`),
    with their limits and throttles by cause. Hot key values are left out: this endpoint is open."""
    series = []  # (labels, meter data, per-partition stats); table and index names need no escaping
    for name, entry in sorted(ctx.db.tables.items()):
        now = ctx.clock()
        data = meter_data(entry, ctx.capacity.meter(entry), entry.table, entry.table.schema.hash_type, now)
        series.append((f'table="{name}"', data, _store_stats(data)))
        for index in sorted((i for i in entry.table.indexes.values() if i.is_global), key=lambda i: i.name):
            data = meter_data(entry, ctx.capacity.index_meter(entry, index), index, index.hash_kind, now)
            series.append((f'table="{name}",index="{index.name}"', data, _store_stats(data)))
    lines = []
    for field, metric, help_text in _METRICS:
        kind = "counter" if metric.endswith("_total") else "gauge"
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
        for labels, _, parts in series:
            for p in parts:
                lines.append(f'{metric}{{{labels},partition="{p["index"]}"}} {p[field]}')
    (table_metric, table_help), (part_metric, part_help) = _LIMITS
    lines += [f"# HELP {table_metric} {table_help}", f"# TYPE {table_metric} gauge"]
    for labels, data, _ in series:
        for direction, rate in _table_limits(data).items():
            lines.append(f'{table_metric}{{{labels},direction="{direction}"}} {rate}')
    lines += [f"# HELP {part_metric} {part_help}", f"# TYPE {part_metric} gauge"]
    for labels, data, parts in series:
        for direction in ("read", "write"):
            limit = data["partition_ceiling"][direction]
            for p in parts:
                share = p[f"{direction}_capacity_per_second"]
                rate = min(limit, share) if share is not None else limit
                lines.append(f'{part_metric}{{{labels},partition="{p["index"]}",direction="{direction}"}} {rate}')
    metric, help_text = _CAUSES
    lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter"]
    for labels, _, parts in series:
        for p in parts:
            for direction, causes in p["throttles_by_cause"].items():
                for cause, count in sorted(causes.items()):
                    lines.append(f'{metric}{{{labels},partition="{p["index"]}",direction="{direction}",'
                                 f'cause="{cause}"}} {count}')
    return "\n".join(lines) + "\n"


def _table_limits(data: dict) -> dict[str, float]:
    """The table-level rate per direction: provisioned, else the on-demand ceiling (both capped by
    an on-demand maximum when one is set); a direction with none is left out."""
    out = {}
    for direction in ("read", "write"):
        base = data["provisioned"] or data["ceiling"]
        rate = base[direction] if base is not None else None
        cap = data["max_on_demand"][direction]
        if cap is not None:
            rate = cap if rate is None else min(rate, cap)
        if rate is not None:
            out[direction] = rate
    return out

