"""Helpers every operation handler shares: table lookup, expression compilation, ReturnValues."""
from __future__ import annotations

import re
from collections.abc import Iterable

from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.engine.transient import deleting, settle
from dynalocal.errors import ResourceNotFoundException, ValidationException
from dynalocal.expressions import Compiled, compile_request
from dynalocal.storage.database import TableEntry

# Request members that mean the request carries expressions or their legacy equivalents.
EXPRESSION_MEMBERS = frozenset((
    "ConditionExpression", "FilterExpression", "KeyConditionExpression", "ProjectionExpression",
    "UpdateExpression", "ExpressionAttributeNames", "ExpressionAttributeValues", "Expected",
    "ConditionalOperator", "AttributeUpdates", "AttributesToGet", "KeyConditions", "QueryFilter",
    "ScanFilter",
))


def table_name(name: str) -> str:
    """Accept a table ARN where a name is expected, as DynamoDB does."""
    if name.startswith("arn:"):
        return name.rsplit("/", 1)[-1] if "/table/" not in name else name.split("/table/", 1)[1].split("/", 1)[0]
    return name


_TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")


def new_table_name(name: str) -> str:
    """The name of a table being created: an ARN is resolved to (and checked as) the table name it
    ends in, so a table is never stored under an ARN-shaped name (with `/` or `..` in it)."""
    if not name.startswith("arn:"):
        return name  # plain names were checked against the model's pattern by validation
    parts = name.split(":", 5)
    resource = parts[5] if len(parts) == 6 else ""
    resolved = resource[6:] if resource.startswith("table/") else ""
    if parts[2:3] != ["dynamodb"] or not _TABLE_NAME.fullmatch(resolved):
        raise ValidationException(f"Invalid TableArn: Invalid ResourceArn provided as input {name}")
    return resolved


def _lookup(ctx: Context, caller: Caller, name: str) -> TableEntry | None:
    """The table a name (or table ARN) means for this request's caller."""
    tables, scope = ctx.db.tables, caller.scope
    if scope:
        return tables.get(scope + table_name(name))
    return tables.get(name) or tables.get(table_name(name))


def data_table(ctx: Context, caller: Caller, name: str) -> TableEntry:
    """The table a data-plane request names; missing (or still creating) is ResourceNotFound."""
    if not caller.scope:  # the common case, without _lookup's call
        entry = ctx.db.tables.get(name)
        if entry is not None and entry.status == "ACTIVE":
            return entry
    entry = _lookup(ctx, caller, name)
    if entry is None or (entry.status != "ACTIVE" and _creating(ctx, entry)):
        raise ResourceNotFoundException("Requested resource not found")
    return entry


def _creating(ctx: Context, entry: TableEntry) -> bool:
    settle(ctx, entry)
    return entry.status == "CREATING"


def control_table(ctx: Context, caller: Caller, name: str) -> TableEntry:
    """The table a control-plane request names (a DELETING one too); missing is ResourceNotFound."""
    entry = _lookup(ctx, caller, name)
    if entry is None and ctx.db.deleting:
        entry = deleting(ctx).get(caller.scope + table_name(name))
    if entry is None:
        raise ResourceNotFoundException(f"Requested resource not found: Table: {table_name(name)} not found")
    return entry


def scoped_names(caller: Caller, keys: Iterable[str]) -> list[str]:
    """The names, among catalog keys, of the tables this caller sees."""
    scope = caller.scope
    if not scope:
        return [k for k in keys if "/" not in k]
    return [k[len(scope):] for k in keys if k.startswith(scope) and "/" not in k[len(scope):]]


def compile_expressions(body: dict, operation: str) -> Compiled | None:
    """Compiled expressions of a request, or None when it carries none (the common fast case)."""
    if EXPRESSION_MEMBERS.isdisjoint(body):
        return None
    return compile_request(body, operation)


def check_return_values(body: dict, allowed: tuple[str, ...]) -> str:
    value = body.get("ReturnValues", "NONE")
    if value not in allowed:
        raise ValidationException("ReturnValues can only be ALL_OLD or NONE")
    return value
