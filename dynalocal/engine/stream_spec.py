"""StreamSpecification on CreateTable / UpdateTable / DeleteTable, and its DescribeTable members.

The table's description keeps `StreamSpecification` while a stream is enabled, and
`LatestStreamArn` / `LatestStreamLabel` of the newest stream even after it is disabled.
Enabling makes a new stream (new ARN and label); disabling or deleting the table closes
its shards and leaves it readable for 24 hours.
"""
from __future__ import annotations

from typing import Any

from dynalocal.engine.context import Context
from dynalocal.errors import ValidationException, invalid
from dynalocal.storage.database import TableEntry


def check(spec: dict | None) -> tuple[bool, str | None] | None:
    """(enabled, view type) asked for by a StreamSpecification, or None when absent."""
    if spec is None:
        return None
    enabled = spec.get("StreamEnabled")
    view = spec.get("StreamViewType")
    if enabled is None:
        raise ValidationException("1 validation error detected: Value null at 'streamSpecification.streamEnabled' "
                                  "failed to satisfy constraint: Member must not be null")
    if enabled and view is None:
        raise invalid("Stream view type is required when StreamEnabled is true")
    if not enabled and view is not None:
        raise invalid("Stream view type cannot be specified when StreamEnabled is false")
    return enabled, view


def check_update(entry: TableEntry, spec: dict | None) -> tuple[bool, str | None] | None:
    """Validate an UpdateTable StreamSpecification against the table's current stream."""
    asked = check(spec)
    if asked is None:
        return None
    enabled = "StreamSpecification" in entry.extra
    if asked[0] and enabled:
        raise ValidationException(f"Table already has an enabled stream: TableName: {entry.name}")
    if not asked[0] and not enabled:
        raise ValidationException(f"Table has no stream to disable: TableName: {entry.name}")  # DynamoDB's text
    return asked


def apply(ctx: Context, entry: TableEntry, asked: tuple[bool, str | None] | None) -> None:
    """Enable or disable the table's stream as validated by `check` / `check_update`."""
    if asked is None:
        return
    enabled, view = asked
    registry = ctx.db.streams
    if enabled:
        assert view is not None  # check() requires a view type with StreamEnabled
        stream = registry.enable(entry.arn, entry.table, view, entry.key_schema)
        entry.extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
        entry.extra["LatestStreamArn"], entry.extra["LatestStreamLabel"] = stream.arn, stream.label
    else:
        disable(ctx, entry)


def disable(ctx: Context, entry: TableEntry) -> None:
    """Close the table's stream (UpdateTable disabling it, or DeleteTable)."""
    entry.extra.pop("StreamSpecification", None)
    stream = ctx.db.streams.active(entry.table)
    if stream is not None:
        stream.detach(ctx.db.streams.clock())


def describe(entry: TableEntry, out: dict[str, Any]) -> None:
    """Add the stream members of a TableDescription."""
    extra = entry.extra
    spec = extra.get("StreamSpecification")
    if spec is not None:
        out["StreamSpecification"] = spec
    if "LatestStreamArn" in extra:
        out["LatestStreamArn"] = extra["LatestStreamArn"]
        out["LatestStreamLabel"] = extra["LatestStreamLabel"]
