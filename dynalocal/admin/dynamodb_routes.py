"""The console's DynamoDB routes: `read` (Scan, Query, DescribeTable) and `write` (tables, items,
PartiQL), each dispatched to the engine and answered exactly as DynamoDB answers, errors included.

Under `--auth verify` with `--isolation region|account` a signature opens both for the signer's own
tables only (guard.is_scoped, admin.scoping): the engine puts a bare table name (in PartiQL too) in
the signer's scope as for any SDK request, and a catalog key of another scope is refused with 403.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dynalocal.admin.guard import SIGNER
from dynalocal.admin.scoping import not_yours, visible
from dynalocal.engine.caller import ANONYMOUS, Caller
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

READ_OPERATIONS = ("Scan", "Query", "DescribeTable")
WRITE_OPERATIONS = ("CreateTable", "DeleteTable", "PutItem", "UpdateItem", "DeleteItem", "GetItem",
                    "ExecuteStatement")


def _caller(request: Request, body: dict) -> Caller | Response:
    """Who the request acts as, with `TableName` made plain; or the refusal. A signer (`--auth verify`)
    sees only its own tables; otherwise a catalog key `<scope>/<name>` (under --isolation) names the scope."""
    name = body.get("TableName")
    signer: Caller | None = request.scope.get(SIGNER)
    if signer is not None:
        if isinstance(name, str) and "/" in name:
            if not visible(signer, name):
                return not_yours()
            body["TableName"] = name[len(signer.scope):]
        return signer
    if isinstance(name, str) and "/" in name:
        scope, _, body["TableName"] = name.rpartition("/")
        parts = scope.split("/")
        account, region = (parts[0], parts[1]) if len(parts) == 2 else (ANONYMOUS.account, parts[0])
        return Caller("", region, account, "account" if len(parts) == 2 else "region")
    return ANONYMOUS


def _route(ctx: Context, operations: tuple[str, ...], verb: str) -> Callable[[Request], Awaitable[Response]]:
    """A route handler dispatching `{"operation": one of operations, ...the request}` to the engine."""
    usage = f'expected {{"operation": {"|".join(repr(o) for o in operations)}, ...request}}'.replace("'", '"')

    async def handle(request: Request) -> Response:
        try:
            body = orjson.loads(await request.body())
            operation = body.pop("operation")
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
            return JSONResponse({"error": usage}, status_code=400)
        if operation not in operations:
            return JSONResponse({"error": f"the console {verb} only: {', '.join(operations)}"}, status_code=400)
        caller = _caller(request, body)
        if isinstance(caller, Response):
            return caller
        status, answer = dispatch(ctx, f"DynamoDB_20120810.{operation}", orjson.dumps(body), caller)
        return Response(answer, status_code=status, media_type="application/json")
    return handle


def dynamodb_routes(ctx: Context) -> list[Route]:
    """POST /_dynalocal/read and POST /_dynalocal/write."""
    return [Route("/_dynalocal/read", _route(ctx, READ_OPERATIONS, "reads"), methods=["POST"]),
            Route("/_dynalocal/write", _route(ctx, WRITE_OPERATIONS, "writes"), methods=["POST"])]
