"""Admission and charging of capacity per partition, in enforce, report or off mode.

Handlers call `admit_*` / `refusal` before touching data (a throttled request changes
nothing) and `charge_*` with the exact units afterwards. The meter of a table or GSI follows
its settings: it is rebuilt lazily whenever partition count, billing mode or throughput
changed. LSIs share the table's partitions and capacity; each GSI has its own meter, and a
base-table write is admitted only if every GSI partition it would write can take it
(back-pressure), which `gsi_writes` works out before the write from the old and new item.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import orjson

from ..errors import DynamoError, ProvisionedThroughputExceededException, ThrottlingException
from ..storage.capacity import write_units
from ..storage.database import TableEntry
from ..storage.index import Index
from ..storage.partition import Record
from ..storage.table import ItemStore
from ..storage.throttle import PROVISIONED, PartitionMeter, TableMeter
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
    """The meter of a table's partitions (shared by its LSIs).

    Its configuration is checked again only once the table's partitions were re-divided (a new
    `partitions` list) or its billing mode or throughput assigned (which clears `meter_layout`).
    """
    m = entry.meter
    if m is not None and entry.meter_layout is entry.table.partitions:
        return m
    m = meter(ctx, entry, entry.table, entry.read_capacity, entry.write_capacity,
              entry.billing_mode == "PROVISIONED")
    entry.meter_layout = entry.table.partitions
    return m


def index_meter(ctx: Context, entry: TableEntry, index: Index) -> TableMeter:
    """The meter of a GSI's own partitions: its ProvisionedThroughput, or on-demand caps only."""
    pt = None
    if entry.billing_mode == "PROVISIONED":
        pt = next((g.get("ProvisionedThroughput") for g in entry.gsis if g["IndexName"] == index.name), None)
    if pt is None:
        return meter(ctx, index, index, 0, 0, False)
    return meter(ctx, index, index, pt["ReadCapacityUnits"], pt["WriteCapacityUnits"], True)


def refresh_meters(ctx: Context, entry: TableEntry) -> None:
    """Apply new throughput to the table's and its GSIs' meters now (UpdateTable), not at next use."""
    table_meter(ctx, entry)
    for index in entry.table.indexes.values():
        if index.is_global:
            index_meter(ctx, entry, index)


def read_meter(ctx: Context, entry: TableEntry, index: Index | None) -> tuple[ItemStore, TableMeter, str | None]:
    """(store whose partitions are metered, its meter, GSI name or None) for a table or index read."""
    if index is not None and index.is_global:
        return index, index_meter(ctx, entry, index), index.name
    return entry.table, table_meter(ctx, entry), None


def throttled(ctx: Context, entry: TableEntry, m: TableMeter, part: int, kind: str, reason: str,
              index: str | None = None) -> DynamoError | None:
    """Record a throttle event on meter `m`; return the error to raise (None in report mode)."""
    stats = m.partitions[part]
    if kind == "Read":
        stats.read_throttles += 1
    else:
        stats.write_throttles += 1
    if not entry.throttle_logged:
        entry.throttle_logged = True
        _log_first(entry, m, part, kind, reason, index, ctx.settings.throttling)
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


def _log_first(entry: TableEntry, m: TableMeter, part: int, kind: str, reason: str, index: str | None,
               mode: str) -> None:
    unit = "RCU" if kind == "Read" else "WCU"
    count = len(m.partitions)
    what = f"global secondary index {index} of table {entry.name}" if index else f"table {entry.name}"
    if reason == PROVISIONED:
        rate = m.read_rate if kind == "Read" else m.write_rate
        why = (f"{rate:g} provisioned {unit} split over {count} partitions gives {(rate or 0) / count:g} {unit}/s "
               "each and its burst capacity is spent")
        member = "ReadCapacityUnits" if kind == "Read" else "WriteCapacityUnits"
        where = f" (GlobalSecondaryIndexUpdates for {index})" if index else ""
        fix = f"raise {member} with UpdateTable{where}, spread the load over more partition keys"
    else:
        why = f"one partition serves at most {'3000' if kind == 'Read' else '1000'} {unit}/s"
        fix = "spread the load over more partition keys"
    verb = "throttled" if mode == "enforce" else "would have throttled"
    log.warning("%s %s %ss on partition %d of %d: %s. To change it: %s, or start dynalocal with "
                "--throttling report|off. Per-partition figures: GET /_dynalocal/tables/%s/partitions",
                verb, what, kind.lower(), part, count, why, fix, entry.name)


def refusal(ctx: Context, entry: TableEntry, m: TableMeter, part: int, kind: str,
            index: str | None = None, now: float | None = None) -> DynamoError | None:
    """The error refusing a Read/Write on partition `part` of meter `m` now, or None to admit it."""
    if ctx.settings.throttling == "off":
        return None
    pm = m.partitions[part]
    if now is None:
        now = ctx.clock()
    reason = pm.check_read(now) if kind == "Read" else pm.check_write(now)
    if reason is None:
        return None
    return throttled(ctx, entry, m, part, kind, reason, index)


def admit(ctx: Context, entry: TableEntry, m: TableMeter, part: int, kind: str,
          index: str | None = None) -> tuple[PartitionMeter, float]:
    """Admit a Read/Write on partition `part` of meter `m` (raise its refusal in enforce mode);
    return that partition's meter and the time to charge it at."""
    now = ctx.clock()
    err = refusal(ctx, entry, m, part, kind, index, now)
    if err is not None:
        raise err
    return m.partitions[part], now


def admit_read(ctx: Context, entry: TableEntry, part: int) -> tuple[PartitionMeter, float]:
    """`admit` a read on a table partition."""
    return admit(ctx, entry, table_meter(ctx, entry), part, "Read")


def admit_write(ctx: Context, entry: TableEntry, part: int) -> tuple[PartitionMeter, float]:
    """`admit` a write on a table partition."""
    return admit(ctx, entry, table_meter(ctx, entry), part, "Write")


def charge_read(ctx: Context, entry: TableEntry, part: int, units: float, key: bytes | None) -> None:
    """Charge read units to a table partition (and to the key's hot-key count)."""
    table_meter(ctx, entry).partitions[part].charge_read(units, partition_key(key), ctx.clock())


def charge_write(ctx: Context, entry: TableEntry, part: int, units: float, key: bytes | None) -> None:
    """Charge write units to a table partition (and to the key's hot-key count)."""
    table_meter(ctx, entry).partitions[part].charge_write(units, partition_key(key), ctx.clock())


def partition_key(key: bytes | None) -> bytes | None:
    """token|len|pk prefix of an encoded key: identifies the partition key for hot-key stats."""
    if key is None:
        return None
    return key[:10 + int.from_bytes(key[8:10], "big")]


# -- GSI write back-pressure ------------------------------------------------------------------

@dataclass(slots=True)
class GsiWrite:
    """What one base-table write will do to one GSI, worked out (partitions included) before it."""

    index: Index
    meter: TableMeter
    old_key: bytes | None  # entry removed from here (index key changed or gone), else None
    old_part: int  # its partition (-1 if none)
    old_units: float  # W(removed entry): charged to old_part
    new_key: bytes | None  # entry stored here, else None
    new_part: int  # its partition (-1 if none)
    changes: bool  # whether the entry at new_key is written (a new or changed projection)


def gsi_writes(ctx: Context, entry: TableEntry, key: bytes, old: Record | None, new_item: dict | None,
               old_item: dict | None = None) -> list[GsiWrite]:
    """The GSI entries a write of `key` (old record -> new item) will touch; [] without GSIs."""
    out: list[GsiWrite] = []
    for index in entry.table.indexes.values():
        if not index.is_global:
            continue
        if old_item is None and old is not None:
            old_item = orjson.loads(old[0])
        old_key = index.store_key(old_item, key) if old_item is not None else None
        new_key = index.store_key(new_item, key) if new_item is not None else None
        if old_key is None and new_key is None:
            continue
        old_part, old_units = -1, 0.0
        if old_key is not None and old_key != new_key:
            old_part = index.partition_index(old_key)
            record = index.partitions[old_part].get(old_key)
            old_units = write_units(record[1]) if record is not None else 0.0
        else:
            old_key = None
        new_part = index.partition_index(new_key) if new_key is not None else -1
        changes = new_key is not None and (old_part >= 0 or old_item is None or new_item is None
                                           or _projection_changes(index, old_item, new_item))
        out.append(GsiWrite(index, index_meter(ctx, entry, index), old_key, old_part, old_units,
                            new_key, new_part, changes))
    return out


def _projection_changes(index: Index, old_item: dict, new_item: dict) -> bool:
    """Whether an entry staying at the same index key gets different projected attributes."""
    if index.attrs is None:
        return old_item != new_item
    return any(old_item.get(name) != new_item.get(name) for name in index.attrs)


def gsi_refusal(ctx: Context, entry: TableEntry, writes: list[GsiWrite]) -> DynamoError | None:
    """The error refusing a base-table write because a GSI partition it writes is exhausted."""
    if ctx.settings.throttling == "off":
        return None
    for w in writes:
        for part in (w.old_part, w.new_part if w.changes else -1):
            if part >= 0:
                err = refusal(ctx, entry, w.meter, part, "Write", w.index.name)
                if err is not None:
                    return err
    return None


def admit_gsi_writes(ctx: Context, entry: TableEntry, writes: list[GsiWrite]) -> None:
    """Refuse a base-table write that a GSI partition cannot absorb (back-pressure)."""
    err = gsi_refusal(ctx, entry, writes)
    if err is not None:
        raise err


def charge_writes(ctx: Context, entry: TableEntry, part: int, key: bytes, table_units: float,
                  index_units: dict[str, float], writes: list[GsiWrite], factor: float = 1.0) -> dict[str, float]:
    """Charge a finished write: table units plus LSI units to the table's partition, GSI units
    to the GSI partitions written; return the index units (times `factor`) for reporting."""
    if not index_units:
        charge_write(ctx, entry, part, table_units, key)
        return index_units
    if factor != 1.0:
        index_units = {name: units * factor for name, units in index_units.items()}
    lsi_units = 0.0
    if entry.lsis:
        indexes = entry.table.indexes
        lsi_units = sum(u for name, u in index_units.items() if not indexes[name].is_global)
    charge_write(ctx, entry, part, table_units + lsi_units, key)
    now = ctx.clock()
    for w in writes:
        units = index_units.get(w.index.name, 0.0)
        if not units:
            continue
        if w.old_part >= 0:
            removed = min(units, w.old_units * factor)
            w.meter.charge_write(w.old_part, removed, partition_key(w.old_key), now)
            units -= removed
        if units:
            if w.new_part >= 0:
                w.meter.charge_write(w.new_part, units, partition_key(w.new_key), now)
            else:
                w.meter.charge_write(w.old_part, units, partition_key(w.old_key), now)
    return index_units
