"""Admin routes that tell the user about their tables: the table list, the diagnosis report, the
heat-map series and the console's files (its DynamoDB routes are in dynamodb_routes). Under
`--auth verify` + `--isolation region|account` a signer sees only its own tables (admin.scoping).

Units everywhere: capacity in DynamoDB's units (RCU/WCU, or RRU/WRU on demand), rates per
second; sizes in bytes as DynamoDB counts item size (attribute names plus values).
"""
from __future__ import annotations

from importlib import resources

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from dynalocal.admin.scoping import not_yours, resolve, scoped_signer, visible
from dynalocal.capacity.report import modes_text, snapshot, table_throttling, vector_data
from dynalocal.diagnosis.collect import WINDOW, collect
from dynalocal.diagnosis.engine import as_json, diagnose
from dynalocal.diagnosis.render import render_report
from dynalocal.diagnosis.vectors import vector_lines, vector_report
from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.values.keys import KeySchema
from dynalocal.values.multikey import MultiKey

JS = "text/javascript; charset=utf-8"
CONSOLE_FILES = {"console.html": "text/html; charset=utf-8", "console.js": JS, "console-items.js": JS,
                 "console-tables.js": JS, "console.css": "text/css; charset=utf-8"}
HEAT_SECONDS = 60


def table_list(ctx: Context, signer: Caller | None = None) -> list[dict]:
    """Every table (or a scoped signer's own) with its item count, size and partitions, and the same
    for its indexes."""
    out = []
    for name, entry in sorted(ctx.db.tables.items()):
        if not visible(signer, name):
            continue
        table = entry.table
        indexes = [{"name": index.name, "kind": "GSI" if index.is_global else "LSI",
                    "item_count": index.item_count, "size_bytes": index.size_bytes,
                    "partitions": len(index.partitions) if index.is_global else len(table.partitions),
                    "key_schema": _keys(index.schema, index.multi)}
                   for index in table.indexes.values()]
        out.append({"name": name, "status": entry.status, "billing_mode": entry.billing_mode,
                    "read_capacity_units": entry.read_capacity if entry.billing_mode == "PROVISIONED" else None,
                    "write_capacity_units": entry.write_capacity if entry.billing_mode == "PROVISIONED" else None,
                    "item_count": table.item_count, "size_bytes": table.size_bytes,
                    "partitions": len(table.partitions), "key_schema": _keys(table.schema), "indexes": indexes})
    return out


def _keys(schema: KeySchema, multi: MultiKey | None = None) -> dict:
    """The key's attribute names; a multi-attribute GSI key also lists its whole HASH and RANGE tuples."""
    out: dict = {"partition_key": schema.hash_name, "sort_key": schema.range_name}
    if multi is not None:
        out["partition_keys"] = [name for name, _ in multi.hash_attrs]
        out["sort_keys"] = [name for name, _ in multi.range_attrs]
    return out


def report(ctx: Context, table: str | None = None, signer: Caller | None = None) -> list:
    """The diagnosis of every table (or one; or a scoped signer's own)."""
    return diagnose([f for f in collect(ctx, table) if visible(signer, f.table)])


def report_json(ctx: Context, table: str | None = None, signer: Caller | None = None) -> dict:
    """The report as JSON; each table also says its throttling mode and its would-be throttles, and
    a table with vector indexes its vector meters (`vectors`: diagnosis/vectors.py)."""
    tables = as_json(report(ctx, table, signer))
    for t in tables:
        entry = ctx.db.tables.get(t["table"])
        if entry is not None:
            t.update(table_throttling(ctx.capacity, entry))
            vectors = vector_data(ctx.capacity, entry, ctx.capacity.clock())
            if vectors is not None:
                t["vectors"] = vector_report(vectors, WINDOW)
    return {"window_seconds": WINDOW, "throttling": ctx.settings.throttling, "tables": tables}


def vectors_text(ctx: Context, tables: str | list[str] | None = None) -> str:
    """The text report's vector section: one block per table (all, one, or these) with vector indexes."""
    lines: list[str] = []
    names = sorted(ctx.db.tables) if tables is None else [tables] if isinstance(tables, str) else tables
    for name in names:
        entry = ctx.db.tables.get(name)
        vectors = vector_data(ctx.capacity, entry, ctx.capacity.clock()) if entry is not None else None
        if vectors is not None:
            lines += vector_lines(name, vector_report(vectors, WINDOW), WINDOW)
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def heat(ctx: Context, name: str, seconds: int = HEAT_SECONDS) -> dict | None:
    """Per partition, per second, units consumed and throttle events over the last `seconds`, with limits."""
    snap = snapshot(ctx.capacity, ctx.db, name)
    data = snap["tables"].get(name)
    if data is None:
        return None
    meters = []
    for m in [data["table"], *data["indexes"].values()]:
        for d in ("read", "write"):
            count = m["partition_count"]
            limit = m["provisioned"][d] if m["provisioned"] else (m["ceiling"] or {}).get(d)
            share = limit / count if limit and m["model"] == "classic" else None
            meters.append({"index": m["index"], "direction": d, "table_limit": limit,
                           "partition_limit": min(share, m["partition_ceiling"][d]) if share
                           else m["partition_ceiling"][d],
                           "partitions": [{"number": p["index"],
                                           "units": p["per_second"][f"{d}_units"][-seconds:],
                                           "throttles": p["per_second"][f"{d}_throttles"][-seconds:]}
                                          for p in m["partitions"]]})
    return {"table": name, "second": snap["second"], "seconds": seconds, "meters": meters}


def diagnosis_routes(ctx: Context) -> list[Route]:
    """The routes above, for admin.py to mount under /_dynalocal/."""
    async def tables(request: Request) -> Response:
        return JSONResponse({"tables": table_list(ctx, scoped_signer(request))})

    async def report_route(request: Request) -> Response:
        signer, named = scoped_signer(request), request.query_params.get("table")
        table = None if named is None else resolve(signer, named)
        if named is not None and table is None:
            return not_yours()
        if table is not None and table not in ctx.db.tables:
            return JSONResponse({"error": f"no table named {named}"}, status_code=404)
        if request.query_params.get("format") == "text":
            names = table if signer is None or table is not None else [n for n in sorted(ctx.db.tables)
                                                                     if visible(signer, n)]
            text = (modes_text(ctx.capacity, ctx.db, names) + render_report(report(ctx, table, signer), WINDOW)
                    + vectors_text(ctx, names))
            return PlainTextResponse(text)
        return Response(orjson.dumps(report_json(ctx, table, signer)), media_type="application/json")

    async def heat_route(request: Request) -> Response:
        try:
            seconds = max(1, min(300, int(request.query_params.get("seconds", HEAT_SECONDS))))
        except ValueError:
            seconds = HEAT_SECONDS
        name = resolve(scoped_signer(request), request.path_params["table"])
        if name is None:
            return not_yours()
        data = heat(ctx, name, seconds)
        if data is None:
            return JSONResponse({"error": f"no table named {request.path_params['table']}"}, status_code=404)
        return Response(orjson.dumps(data), media_type="application/json")

    async def console(request: Request) -> Response:
        name = request.path_params.get("file", "console.html")
        if name not in CONSOLE_FILES:
            return PlainTextResponse("not found", status_code=404)
        data = resources.files("dynalocal.admin.console").joinpath(name).read_bytes()
        return Response(data, media_type=CONSOLE_FILES[name], headers={"Cache-Control": "no-cache"})

    return [Route("/_dynalocal/tables", tables),
            Route("/_dynalocal/report", report_route),
            Route("/_dynalocal/tables/{table:path}/heat", heat_route),
            Route("/_dynalocal/console", console),
            Route("/_dynalocal/console/{file}", console)]
