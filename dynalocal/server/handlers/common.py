"""Helpers every operation handler shares: table lookup, expression compilation, capacity shape."""
from __future__ import annotations

import re
from typing import Any

from ...errors import ResourceNotFoundException, ValidationException
from ...expressions import compile_request
from ...storage.database import TableEntry
from ...storage.table import Table
from ..context import Context

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


def data_table(ctx: Context, name: str) -> TableEntry:
    """The table a data-plane request names; missing (or still creating) is ResourceNotFound."""
    entry = ctx.db.tables.get(name) or ctx.db.tables.get(table_name(name))
    if entry is None or entry.status == "CREATING":
        raise ResourceNotFoundException("Requested resource not found")
    return entry


def control_table(ctx: Context, name: str) -> TableEntry:
    entry = ctx.db.tables.get(name) or ctx.db.tables.get(table_name(name))
    if entry is None:
        raise ResourceNotFoundException(f"Requested resource not found: Table: {table_name(name)} not found")
    return entry


def compile_expressions(body: dict, operation: str):
    """Compiled expressions of a request, or None when it carries none (the common fast case)."""
    if EXPRESSION_MEMBERS.isdisjoint(body):
        return None
    return compile_request(body, operation)


def consumed(body: dict, name: str, units: float) -> dict[str, Any] | None:
    """The ConsumedCapacity member for ReturnConsumedCapacity TOTAL/INDEXES, else None."""
    mode = body.get("ReturnConsumedCapacity")
    if mode is None or mode == "NONE":
        return None
    out: dict[str, Any] = {"TableName": name, "CapacityUnits": units}
    if mode == "INDEXES":
        out["Table"] = {"CapacityUnits": units}
    return out


def write_consumed(body: dict, name: str, table_units: float, index_units: dict[str, float],
                   table: Table) -> dict[str, Any] | None:
    """ConsumedCapacity of writes: the total includes index writes; INDEXES adds the breakdown
    (`Table`, then the GSIs and LSIs actually written)."""
    mode = body.get("ReturnConsumedCapacity")
    if mode is None or mode == "NONE":
        return None
    out: dict[str, Any] = {"TableName": name, "CapacityUnits": table_units + sum(index_units.values())}
    if mode == "INDEXES":
        out["Table"] = {"CapacityUnits": table_units}
        for index_name, units in index_units.items():
            index = table.indexes.get(index_name)
            group = "GlobalSecondaryIndexes" if index is None or index.is_global else "LocalSecondaryIndexes"
            out.setdefault(group, {})[index_name] = {"CapacityUnits": units}
    return out


def add_units(into: dict[str, float], units: dict[str, float]) -> None:
    """Accumulate per-index units (batch and transaction totals per table)."""
    for name, value in units.items():
        into[name] = into.get(name, 0.0) + value


def check_return_values(body: dict, allowed: tuple[str, ...]) -> str:
    value = body.get("ReturnValues", "NONE")
    if value not in allowed:
        raise ValidationException("ReturnValues can only be ALL_OLD or NONE")
    return value
