"""`--init`: create the seed files' tables and load their items when the server starts.

Each request goes through the server's own dispatch (validated and answered as the API would,
journaled when there is a data directory). Seeding is never throttled and leaves no trace in
the capacity statistics: it runs with throttling off, before the server accepts requests, and
the meters it warmed are dropped afterwards. Tables that already exist (recovered from
`--data-dir`) are left as they are, so restarting with the same `--init` is harmless.
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson

from dynalocal.engine.caller import ANONYMOUS, Caller
from dynalocal.engine.common import scoped_names
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from dynalocal.seed.template import Request, SeedError, load_file

log = logging.getLogger("dynalocal")
TARGET = "DynamoDB_20120810."


def load_seed(paths: list[str]) -> list[Request]:
    """Parse every seed file now (so a bad file fails before the server starts)."""
    requests: list[Request] = []
    for path in paths:
        requests += load_file(path)
    return requests


async def apply_seed(ctx: Context, requests: list[Request], account: str | None = None,
                     region: str | None = None) -> int:
    """Send the seed requests; skip tables that exist already. Return how many requests ran.

    Under --isolation the tables belong to `account`/`region` (default: us-east-1, 000000000000)."""
    caller = Caller("", region or ANONYMOUS.region, account or ANONYMOUS.account, ctx.settings.isolation)
    existing = set(scoped_names(caller, ctx.db.tables))
    skipped = {body["TableName"] for op, body in requests if op == "CreateTable" and body["TableName"] in existing}
    mode, ctx.settings.throttling = ctx.settings.throttling, "off"
    ran = 0
    try:
        for operation, body in requests:
            if body.get("TableName") in skipped:
                continue
            target, raw = TARGET + operation, orjson.dumps(body)
            journal = ctx.journal
            if journal is not None:
                journal.begin()
            status, answer = dispatch(ctx, target, raw, caller)
            if journal is not None:
                status, answer = await journal.commit(target, raw, status, answer)
            if status != 200:
                error = orjson.loads(answer)
                kind = str(error.get("__type", "")).rsplit("#", 1)[-1]
                message = error.get("message") or error.get("Message") or ""
                raise SeedError(f"{operation} on table {body.get('TableName')} failed: {kind}: {message}")
            ran += 1
    finally:
        ctx.settings.throttling = mode
    forget_capacity(ctx, {caller.scope + body["TableName"] for _, body in requests if "TableName" in body})
    if skipped:
        log.info("--init: tables %s exist already; left as they are", ", ".join(sorted(skipped)))
    log.info("--init: %d tables created, %d requests run", sum(1 for op, b in requests if op == "CreateTable"
                                                                and b["TableName"] not in skipped), ran)
    return ran


def forget_capacity(ctx: Context, keys: set[str]) -> None:
    """Drop the capacity meters seeding warmed, so reports count only the application's traffic."""
    for key in keys:
        ctx.capacity.forget(key)


def seed_hook(ctx: Context, paths: list[str]) -> Callable[[], Awaitable[None]]:
    """A start-up hook (Context.startup) that loads the seed files `paths`; parses them at once."""
    requests = load_seed(paths)

    async def hook() -> None:
        await apply_seed(ctx, requests)

    return hook
