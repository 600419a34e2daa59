"""Control-plane reads infrastructure tools make: contributor insights, Kinesis streaming."""
from __future__ import annotations

from typing import Any

from dynalocal.engine.caller import Caller
from dynalocal.engine.common import control_table, scoped_names
from dynalocal.engine.context import Context


def describe_contributor_insights(ctx: Context, caller: Caller, body: dict) -> dict:
    """Status only: the figures themselves are served at GET /_dynalocal/tables/<table>/partitions."""
    entry = control_table(ctx, caller, body["TableName"])
    index = body.get("IndexName")
    status = entry.contributor_insights.get(index, "DISABLED")
    out: dict[str, Any] = {"TableName": entry.name, "ContributorInsightsStatus": status}
    if index:
        out["IndexName"] = index
    if status == "ENABLED":
        rule = f"DynamoDBContributorInsights-PKC-{entry.name}"
        out["ContributorInsightsRuleList"] = [rule]
        out["LastUpdateDateTime"] = entry.created
    return out


def update_contributor_insights(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    index = body.get("IndexName")
    enable = body["ContributorInsightsAction"] == "ENABLE"
    entry.contributor_insights[index] = "ENABLED" if enable else "DISABLED"
    out = {"TableName": entry.name, "ContributorInsightsStatus": "ENABLING" if enable else "DISABLING"}
    if index:
        out["IndexName"] = index
    return out


def list_contributor_insights(ctx: Context, caller: Caller, body: dict) -> dict:
    names = [body["TableName"]] if body.get("TableName") else sorted(scoped_names(caller, ctx.db.tables))
    summaries = []
    for name in names:
        entry = control_table(ctx, caller, name)
        for index, status in entry.contributor_insights.items():
            summary = {"TableName": entry.name, "ContributorInsightsStatus": status}
            if index:
                summary["IndexName"] = index
            summaries.append(summary)
    return {"ContributorInsightsSummaries": summaries}


def describe_kinesis_streaming_destination(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = control_table(ctx, caller, body["TableName"])
    return {"TableName": entry.name, "KinesisDataStreamDestinations": []}
