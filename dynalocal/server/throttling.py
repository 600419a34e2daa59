"""Admission and charging of capacity per partition, in enforce, report or off mode.

Handlers call `admit_*` before touching data (a throttled request changes nothing) and
`charge_*` with the exact units afterwards. The meter of a table follows its settings:
it is rebuilt lazily whenever partition count, billing mode or throughput changed.
"""
from __future__ import annotations

import logging

from ..errors import DynamoError, ProvisionedThroughputExceededException, ThrottlingException
from ..storage.database import TableEntry
from ..storage.table import ItemStore
from ..storage.throttle import PROVISIONED, TableMeter
from .context import Context

log = logging.getLogger("dynalocal.capacity")

TABLE_MESSAGE = ("The level of configured provisioned throughput for the table was exceeded. "
                 "Consider increasing your provisioning level with the UpdateTable API.")
INDEX_MESSAGE = ("The level of configured provisioned throughput for one or more global secondary indexes of the "
                 "table was exceeded. Consider increasing your provisioning level for the under-provisioned global "
                 "secondary indexes with the UpdateTable API")
ON_DEMAND_MESSAGE = ("Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
                     "scaling your table or index so please try again shortly. If exceptions persist, check if you "
                     "have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html")
ON_DEMAND_INDEX_MESSAGE = ("Throughput exceeds the current capacity for one or more global secondary indexes. "
                           "DynamoDB is automatically scaling your index so please try again shortly.")


def meter(ctx: Context, owner, store: ItemStore, read: int, write: int, provisioned: bool) -> TableMeter:
    """The meter of a table or index (`owner` holds it), rebuilt when its settings changed."""
    config = (len(store.partitions), provisioned, read, write)
    current = getattr(owner, "meter", None)
    if current is not None and owner.meter_config == config:
        return current
    rates = (float(read), float(write)) if provisioned else (None, None)
    now = ctx.clock()
    if current is None:
        owner.meter = TableMeter(len(store.partitions), *rates, ctx.settings.burst_seconds, now)
    else:
        current.reconfigure(len(store.partitions), *rates, now)
    owner.meter_config = config
    return owner.meter


def table_meter(ctx: Context, entry: TableEntry) -> TableMeter:
    return meter(ctx, entry, entry.table, entry.read_capacity, entry.write_capacity,
                 entry.billing_mode == "PROVISIONED")


def throttled(ctx: Context, entry: TableEntry, part: int, kind: str, reason: str,
              index: str | None = None) -> DynamoError | None:
    """Record a throttle event; return the error to raise (None in report mode)."""
    m = table_meter(ctx, entry) if index is None else entry.table.indexes[index].meter
    stats = m.partitions[part]
    if kind == "Read":
        stats.read_throttles += 1
    else:
        stats.write_throttles += 1
    if not getattr(entry, "throttle_logged", False):
        entry.throttle_logged = True
        _log_first(entry, part, len(m.partitions), kind, reason, index, ctx.settings.throttling)
    if ctx.settings.throttling != "enforce":
        return None
    provisioned = entry.billing_mode == "PROVISIONED"
    scope = "Index" if index else "Table"
    resource = entry.arn + (f"/index/{index}" if index else "")
    reasons = [{"reason": f"{scope}{kind}{reason}", "resource": resource}]
    if provisioned:
        return ProvisionedThroughputExceededException(INDEX_MESSAGE if index else TABLE_MESSAGE,
                                                      ThrottlingReasons=reasons)
    # The model spells this member in lower camel case on ThrottlingException only.
    return ThrottlingException(ON_DEMAND_INDEX_MESSAGE if index else ON_DEMAND_MESSAGE, throttlingReasons=reasons)


def _log_first(entry: TableEntry, part: int, count: int, kind: str, reason: str, index: str | None,
               mode: str) -> None:
    unit = "RCU" if kind == "Read" else "WCU"
    what = f"index {index} of table {entry.name}" if index else f"table {entry.name}"
    if reason == PROVISIONED:
        rate = entry.read_capacity if kind == "Read" else entry.write_capacity
        why = (f"{rate} provisioned {unit} split over {count} partitions gives {rate / count:g} {unit}/s each "
               f"and its burst capacity is spent")
        fix = (f"raise {'ReadCapacityUnits' if kind == 'Read' else 'WriteCapacityUnits'} with UpdateTable, "
               "spread the load over more partition keys")
    else:
        why = f"one partition serves at most {'3000' if kind == 'Read' else '1000'} {unit}/s"
        fix = "spread the load over more partition keys"
    verb = "throttled" if mode == "enforce" else "would have throttled"
    log.warning("%s %s %ss on partition %d of %d: %s. To change it: %s, or start dynalocal with "
                "--throttling report|off. Per-partition figures: GET /_dynalocal/tables/%s/partitions",
                verb, what, kind.lower(), part, count, why, fix, entry.name)


def admit_read(ctx: Context, entry: TableEntry, part: int) -> None:
    """Refuse a read on a partition whose buckets are exhausted (enforce mode)."""
    if ctx.settings.throttling == "off":
        return
    reason = table_meter(ctx, entry).check_read(part, ctx.clock())
    if reason is not None:
        err = throttled(ctx, entry, part, "Read", reason)
        if err is not None:
            raise err


def admit_write(ctx: Context, entry: TableEntry, part: int) -> None:
    if ctx.settings.throttling == "off":
        return
    reason = table_meter(ctx, entry).check_write(part, ctx.clock())
    if reason is not None:
        err = throttled(ctx, entry, part, "Write", reason)
        if err is not None:
            raise err


def charge_read(ctx: Context, entry: TableEntry, part: int, units: float, key: bytes | None) -> None:
    table_meter(ctx, entry).charge_read(part, units, partition_key(key), ctx.clock())


def charge_write(ctx: Context, entry: TableEntry, part: int, units: float, key: bytes | None) -> None:
    table_meter(ctx, entry).charge_write(part, units, partition_key(key), ctx.clock())


def partition_key(key: bytes | None) -> bytes | None:
    """token|len|pk prefix of an encoded key: identifies the partition key for hot-key stats."""
    if key is None:
        return None
    return key[:10 + int.from_bytes(key[8:10], "big")]
