"""Admin routes that tell the user about their tables: the table list, the diagnosis report, the
heat-map series, the console page and its read-only item browser.

Units everywhere: capacity in DynamoDB's units (RCU/WCU, or RRU/WRU on demand), rates per
second; sizes in bytes as DynamoDB counts item size (attribute names plus values).
"""
from __future__ import annotations

from importlib import resources

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from dynalocal.admin.guard import SIGNER
from dynalocal.capacity.report import modes_text, snapshot, table_throttling
from dynalocal.diagnosis.collect import WINDOW, collect
from dynalocal.diagnosis.engine import as_json, diagnose
from dynalocal.diagnosis.render import render_report
from dynalocal.engine.caller import ANONYMOUS, Caller
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from dynalocal.errors import access_denied_body
from dynalocal.values.keys import KeySchema
from dynalocal.values.multikey import MultiKey

CONSOLE_FILES = {"console.html": "text/html; charset=utf-8", "console.js": "text/javascript; charset=utf-8",
                 "console.css": "text/css; charset=utf-8"}
READ_OPERATIONS = ("Scan", "Query", "DescribeTable")
HEAT_SECONDS = 60


def table_list(ctx: Context) -> list[dict]:
    """Every table with its item count, size and partitions, and the same for its indexes."""
    out = []
    for name, entry in sorted(ctx.db.tables.items()):
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


def report(ctx: Context, table: str | None = None) -> list:
    """The diagnosis of every table (or one)."""
    return diagnose(collect(ctx, table))


def report_json(ctx: Context, table: str | None = None) -> dict:
    """The report as JSON; each table also says its throttling mode and its would-be throttles."""
    tables = as_json(report(ctx, table))
    for t in tables:
        entry = ctx.db.tables.get(t["table"])
        if entry is not None:
            t.update(table_throttling(ctx.capacity, entry))
    return {"window_seconds": WINDOW, "throttling": ctx.settings.throttling, "tables": tables}


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
    async def tables(_: Request) -> Response:
        return JSONResponse({"tables": table_list(ctx)})

    async def report_route(request: Request) -> Response:
        table = request.query_params.get("table")
        if table is not None and table not in ctx.db.tables:
            return JSONResponse({"error": f"no table named {table}"}, status_code=404)
        if request.query_params.get("format") == "text":
            text = modes_text(ctx.capacity, ctx.db, table) + render_report(report(ctx, table), WINDOW)
            return PlainTextResponse(text)
        return Response(orjson.dumps(report_json(ctx, table)), media_type="application/json")

    async def heat_route(request: Request) -> Response:
        try:
            seconds = max(1, min(300, int(request.query_params.get("seconds", HEAT_SECONDS))))
        except ValueError:
            seconds = HEAT_SECONDS
        data = heat(ctx, request.path_params["table"], seconds)
        if data is None:
            return JSONResponse({"error": f"no table named {request.path_params['table']}"}, status_code=404)
        return Response(orjson.dumps(data), media_type="application/json")

    async def read(request: Request) -> Response:
        """The console's item browser: Scan, Query or DescribeTable, answered as DynamoDB would."""
        try:
            body = orjson.loads(await request.body())
            operation = body.pop("operation")
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
            return JSONResponse({"error": 'expected {"operation": "Scan"|"Query"|"DescribeTable", ...request}'},
                                status_code=400)
        if operation not in READ_OPERATIONS:
            return JSONResponse({"error": f"the console reads only: {', '.join(READ_OPERATIONS)}"}, status_code=400)
        caller = ANONYMOUS
        name = body.get("TableName")
        signer: Caller | None = request.scope.get(SIGNER)
        if signer is not None:  # --auth verify, let in by a signature: the signer's own tables only
            if isinstance(name, str) and "/" in name:
                if not name.startswith(signer.scope) or "/" in name[len(signer.scope):]:
                    return Response(access_denied_body("a signed admin read sees only the signer's own tables"),
                                    status_code=403, media_type="application/json")
                body["TableName"] = name[len(signer.scope):]
            caller = signer
        elif isinstance(name, str) and "/" in name:  # a catalog key under --isolation: <scope>/<name>
            scope, _, body["TableName"] = name.rpartition("/")
            parts = scope.split("/")
            account, region = (parts[0], parts[1]) if len(parts) == 2 else (ANONYMOUS.account, parts[0])
            caller = Caller("", region, account, "account" if len(parts) == 2 else "region")
        status, answer = dispatch(ctx, f"DynamoDB_20120810.{operation}", orjson.dumps(body), caller)
        return Response(answer, status_code=status, media_type="application/json")

    async def console(request: Request) -> Response:
        name = request.path_params.get("file", "console.html")
        if name not in CONSOLE_FILES:
            return PlainTextResponse("not found", status_code=404)
        data = resources.files("dynalocal.admin.console").joinpath(name).read_bytes()
        return Response(data, media_type=CONSOLE_FILES[name], headers={"Cache-Control": "no-cache"})

    return [Route("/_dynalocal/tables", tables),
            Route("/_dynalocal/report", report_route),
            Route("/_dynalocal/tables/{table:path}/heat", heat_route),
            Route("/_dynalocal/read", read, methods=["POST"]),
            Route("/_dynalocal/console", console),
            Route("/_dynalocal/console/{file}", console)]
