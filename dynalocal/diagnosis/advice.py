"""What to change for each verdict, in the vocabulary of DynamoDB's partition-key design articles
("Designing partition keys to distribute your workload", "Using write sharding", burst and
adaptive capacity)."""
from __future__ import annotations

import math

from dynalocal.diagnosis.figures import ON_DEMAND_MAXIMUM, ON_DEMAND_SCALING, READ, TABLE_QUOTA, MeterFigures
from dynalocal.diagnosis.words import num

# Verdict kinds (engine re-exports them).
HOT_KEY, HOT_GSI_KEY, UNDER_PROVISIONED = "hot key", "hot GSI key", "table under-provisioned"


def advice_for(kind: str, f: MeterFigures, key: str | None, needed: float | None = None,
               even: bool = True) -> list[str]:
    """Plain-language changes that would fix a verdict of `kind` on the meter `f` (`even`: no
    partition came near its ceiling with one key, so the key design is not in question)."""
    shown = repr(key) if key is not None else "the hot key"
    if kind == HOT_KEY:
        out = [f"Spread the key: write sharding adds a suffix to {shown} (e.g. {_suffixed(key)} for 10 shards, "
               "random or calculated from another attribute) and reads query every shard and merge.",
               "Or choose a partition key with many distinct values that requests use evenly (e.g. a customer or "
               "order id instead of a date or status), keeping the old value as a sort key or GSI key."]
        if f.direction == READ:
            out.append("For reads, a cache in front of the table (e.g. DAX) absorbs a hot item.")
        if f.model == "classic" and f.limit:
            count = len(f.partitions)
            each = num(f.limit / count)
            out.append(f"More provisioned capacity raises every partition's share ({each} {f.unit}/s each "
                       f"now) but pays for {count} partitions to serve one key, and one partition never exceeds "
                       "3,000 RCU / 1,000 WCU per second.")
        else:
            ceiling = "3,000" if f.direction == READ else "1,000"
            out.append("More provisioned capacity does not help: one partition key value lives on one partition, "
                       f"which sustains at most {ceiling} {f.unit} per second.")
        return out
    if kind == HOT_GSI_KEY:
        return [f"Choose a GSI partition key with more distinct values for index {f.index}, or shard {shown} "
                "with a suffix (write sharding) and query the shards in parallel.",
                "A sparse index (only items that have the key attribute) also cuts its traffic.",
                f"Until then, every table write that updates {f.index} waits on that one GSI partition: a throttled "
                "GSI throttles the table's writes (back-pressure)."]
    if kind == UNDER_PROVISIONED:
        member = "ReadCapacityUnits" if f.direction == READ else "WriteCapacityUnits"
        target = f" to at least {math.ceil(needed)}" if needed else ""
        if f.limit_kind == ON_DEMAND_MAXIMUM:
            cap = "MaxReadRequestUnits" if f.direction == READ else "MaxWriteRequestUnits"
            return [f"Raise OnDemandThroughput {cap}{target} (or -1 for no maximum) with UpdateTable."]
        if f.limit_kind == TABLE_QUOTA:
            return ["The table is at its per-table throughput quota (DescribeLimits): ask AWS Support for a "
                    "quota increase, or split the traffic over more tables."]
        if f.limit_kind == ON_DEMAND_SCALING:
            return ["On-demand tables scale up to double their previous peak at once; for a known launch, set "
                    "WarmThroughput ahead of it, or ramp traffic up over minutes, and retry throttled requests "
                    "with backoff."]
        where = f" (GlobalSecondaryIndexUpdates for {f.index})" if f.index else ""
        return [f"Raise {member}{target} with UpdateTable{where}, or let auto scaling manage it.",
                "Or switch the table to on-demand (BillingMode PAY_PER_REQUEST) if the traffic is spiky."] + (
                ["The key design is not the cause: no partition came near its ceiling with one key."] if even else [])
    return []


def _suffixed(key: str | None) -> str:
    base = key if key is not None else "KEY"
    return f"{base}#0 .. {base}#9"
