"""UpdateTimeToLive and DescribeTimeToLive; the sweep itself lives in storage.ttl."""
from __future__ import annotations

from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table
from dynalocal.engine.context import Context
from dynalocal.errors import ValidationException
from dynalocal.storage.ttl import ExpiryIndex


def update_time_to_live(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    spec = body["TimeToLiveSpecification"]
    enabled, attribute = spec["Enabled"], spec["AttributeName"]
    current = entry.ttl_attribute
    if enabled:
        if current == attribute:
            raise ValidationException("TimeToLive is already enabled")
        if current is not None:
            raise ValidationException(
                f"TimeToLive is active on a different AttributeName: current AttributeName is {current}")
        entry.ttl_attribute = attribute
        ctx.expiry[entry.key] = ExpiryIndex(entry.table, attribute)
    else:
        if current is None:
            raise ValidationException("TimeToLive is already disabled")
        if current != attribute:
            raise ValidationException(
                f"TimeToLive is active on a different AttributeName: current AttributeName is {current}")
        entry.ttl_attribute = None
        index = ctx.expiry.pop(entry.key, None)
        if index is not None:
            index.detach()
    return {"TimeToLiveSpecification": {"Enabled": enabled, "AttributeName": attribute}}


def describe_time_to_live(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    if entry.ttl_attribute is None:
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}}
    return {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED", "AttributeName": entry.ttl_attribute}}


def sweep_expired(ctx: Context) -> int:
    """Delete every expired item of every TTL-enabled table; return how many were deleted."""
    now = ctx.wall_clock()
    deleted = 0
    for name, index in list(ctx.expiry.items()):
        if name in ctx.db.tables and ctx.db.tables[name].table is index.table:
            deleted += index.sweep(now)
        else:
            ctx.expiry.pop(name, None)  # the table was dropped or recreated
    return deleted
