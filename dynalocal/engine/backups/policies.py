"""PutResourcePolicy, GetResourcePolicy, DeleteResourcePolicy and CreateTable's ResourcePolicy:
one JSON policy document per table or stream, versioned by RevisionId. Stored (in the table's
metadata, so journaled with it), never enforced (docs/behaviour/backups.md §4)."""
from __future__ import annotations

import orjson

from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table, table_name
from dynalocal.engine.context import Context
from dynalocal.errors import PolicyNotFoundException, ValidationException
from dynalocal.storage.database import TableEntry

MAX_BYTES = 20 * 1024  # whitespace counts
NO_POLICY = "NO_POLICY"


def check(policy: str) -> None:
    """A policy must be a JSON object of at most 20 KB."""
    if len(policy.encode()) > MAX_BYTES:
        raise ValidationException(f"Resource-based policy document exceeds the maximum size of {MAX_BYTES} bytes")
    try:
        document = orjson.loads(policy)
    except orjson.JSONDecodeError:
        document = None
    if not isinstance(document, dict):
        raise ValidationException("Resource-based policy document is not valid JSON")


def _revision(ctx: Context) -> str:
    return str(int(ctx.wall_clock() * 1_000_000))  # a new, increasing string per put


def attach(ctx: Context, entry: TableEntry, policy: str) -> str:
    """Attach `policy`, already `check`ed before the table was made, to the table (CreateTable's
    ResourcePolicy); return its RevisionId."""
    revision = _revision(ctx)
    entry.resource_policies[""] = [policy, revision]
    return revision


def _resource(ctx: Context, caller: Caller, arn: str) -> tuple[TableEntry, str]:
    """The table an ARN (of the table or of its stream) names, and the policy's key on it."""
    entry = control_table(ctx, caller, table_name(arn))
    return entry, ("" if "/stream/" not in arn else arn)


def _expect(entry: TableEntry, key: str, arn: str, expected: str | None) -> list | None:
    current = entry.resource_policies.get(key)
    if expected is None:
        return current
    if expected == NO_POLICY if current is None else current[1] == expected:
        return current
    raise PolicyNotFoundException(f"Resource-based policy not found for the provided ResourceArn and "
                                  f"revision id: Requested revision id: {expected}, Resource: {arn}")


def put_resource_policy(ctx: Context, caller: Caller, body: dict) -> dict:
    arn = body["ResourceArn"]
    entry, key = _resource(ctx, caller, arn)
    check(body["Policy"])
    _expect(entry, key, arn, body.get("ExpectedRevisionId"))
    revision = _revision(ctx)
    entry.resource_policies[key] = [body["Policy"], revision]
    return {"RevisionId": revision}


def get_resource_policy(ctx: Context, caller: Caller, body: dict) -> dict:
    arn = body["ResourceArn"]
    entry, key = _resource(ctx, caller, arn)
    current = entry.resource_policies.get(key)
    if current is None:
        raise PolicyNotFoundException(f"Resource-based policy not found for the provided ResourceArn: {arn}")
    return {"Policy": current[0], "RevisionId": current[1]}


def delete_resource_policy(ctx: Context, caller: Caller, body: dict) -> dict:
    arn = body["ResourceArn"]
    entry, key = _resource(ctx, caller, arn)
    current = _expect(entry, key, arn, body.get("ExpectedRevisionId"))
    if current is None:
        raise PolicyNotFoundException(f"Resource-based policy not found for the provided ResourceArn: {arn}")
    del entry.resource_policies[key]
    return {"RevisionId": current[1]}
