"""The read API of the capacity records: plain data for diagnosis, admin pages and metrics.

    from dynalocal.capacity.report import snapshot
    data = snapshot(ctx.capacity, ctx.db, table="orders")   # or table=None for every table

Contract (stable; only additions later). `snapshot` returns a dict:

    {"now": float,                     # the capacity clock (ctx.clock) when taken
     "second": int,                    # int(now): the last slot of every per-second list
     "window_seconds": 300,            # length of every per-second list, oldest first
     "settings": {"throttling": "keys"|"enforce"|"report"|"off", "model": "adaptive"|"classic",
                  "burst_seconds": float, "partition_burst_seconds": float},
     "tables": {name: {"table": METER, "indexes": {gsi_name: METER},
                       "throttling": MODE,         # the table's mode (its dynalocal:throttling tag)
                       "vectors": VECTORS}}}       # only for a table with vector indexes (or records)

    VECTORS = {"searches": VMETER,                 # SearchVectors on any of its vector indexes
               "writes": {vector_index_name: VMETER}}  # writes that added, changed or removed an entry
    VMETER = {"unit": "VectorSearchRequestBytes" | "VectorWriteRequestBytes",
              "requests": int, "bytes": float,     # since the table's meters started; bytes approximate
              "per_second": {"requests": [int]*300, "bytes": [float]*300}}  # (docs/behaviour/vectors.md §5)

    METER = {
      "table": str, "index": str | None, "billing_mode": "PROVISIONED" | "PAY_PER_REQUEST",
      "model": "adaptive" | "classic",
      "provisioned": {"read": float, "write": float} | None,     # units/s, provisioned only
      "ceiling": {"read": float, "write": float} | None,         # on-demand table ceiling now
      "peak": {"read": float, "write": float} | None,            # on-demand: highest 30 s average
      "max_on_demand": {"read": float|None, "write": float|None},
      "partition_ceiling": {"read": 3000.0, "write": 1000.0},
      "partition_count": int, "heat_splits": int, "since": float,  # since: meter created (clock)
      "totals": TOTALS,
      "throttles": {"read": {CAUSE: int}, "write": {CAUSE: int}},  # since start, by cause
      "would_be": {"read": {CAUSE: int}, "write": {CAUSE: int}},   # of those, recorded but not
                                                                   # refused (capacity/modes.py)
      "per_second": {"read_units": [float]*300, "write_units": [float]*300,
                     "read_throttles": [int]*300, "write_throttles": [int]*300},
      "partitions": [PARTITION, ...]}                              # in token order
    TOTALS = {"read_units": float, "write_units": float, "reads": int, "writes": int,
              "read_burst_units": float, "write_burst_units": float}
      # meter burst units: provisioned tables only, units consumed within a second beyond the
      # provisioned rate (admitted only thanks to burst capacity); 0.0 otherwise.
      # partition burst units: units within a second beyond the partition ceiling.
    PARTITION = {"index": int, "token_range": [lo_hex16, hi_hex16], "items": int, "size_bytes": int,
                 "since": float,              # this partition's records started (layout change)
                 "totals": TOTALS, "throttles": {...as above...}, "per_second": {...as above...},
                 "keys": [KEY, ...],          # counted partition-key values, hottest first
                 "other_keys": {"read_units", "write_units", "reads", "writes"}, "keys_folded": int,
                 "hot_seconds": int}          # consecutive seconds at >= 80 % of a ceiling
    KEY = {"key": str, "key_type": "S"|"N"|"B"|"(S,N,...)" (a HASH tuple), "read_units": float, "write_units": float,
           "reads": int, "writes": int, "last_second": int}
    CAUSE in "key_range", "table_rate", "partition_share", "on_demand_scaling", "on_demand_max",
             "account_limit", "gsi_backpressure" (the last on the base table's meter: the write
             was refused because a GSI could not take it; the GSI's meter has the real cause).

Per-key counts are exact: every charge with a known partition key (all item reads and
writes, Query; not Scan pages, which are spread over partitions) adds its units and one
request. Memory is bounded: a partition counts at most 1 000 keys; when a new key arrives
beyond that, the coldest half (by units) is folded into `other_keys` (`keys_folded` counts
them), so a folded key that comes back restarts from zero. On re-partitioning (splits, growth)
each partition's records carry over to the partitions that now own its keys (capacity.carry):
the partitions' totals add up to the meter's, and a key's units never exceed its partition's.
Records are kept in every throttling mode, `off` included (only refusals differ).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dynalocal.capacity.meter import Meter
from dynalocal.capacity.modes import MODE_TAG, WHAT
from dynalocal.capacity.partition_meter import RING, PartMeter
from dynalocal.capacity.registry import Capacity, TableMeters
from dynalocal.capacity.throttle import show_key
from dynalocal.capacity.units import CEILING
from dynalocal.capacity.vector_meter import VectorMeter
from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.partition import Partition
from dynalocal.storage.table import ItemStore


def snapshot(cap: Capacity, db: Database, table: str | None = None) -> dict[str, Any]:
    """The records of every table (or of one: `table`; missing tables are left out)."""
    now = cap.clock()
    sec = int(now)
    s = cap.settings
    out: dict[str, Any] = {"now": now, "second": sec, "window_seconds": RING,
                           "settings": {"throttling": s.throttling, "model": s.capacity_model,
                                        "burst_seconds": s.burst_seconds,
                                        "partition_burst_seconds": s.partition_burst_seconds},
                           "tables": {}}
    names = [table] if table is not None else sorted(db.tables)
    for name in names:
        entry = db.tables.get(name)
        if entry is None:
            continue
        tm = cap.meters(entry)
        indexes = {}
        for index in entry.table.indexes.values():
            if index.is_global:
                m = cap.index_meter(entry, index)
                indexes[index.name] = meter_data(entry, m, index, index.hash_kind, now)
        table_data = meter_data(entry, tm.table, entry.table, entry.table.schema.hash_type, now)
        for data in (table_data, *indexes.values()):
            data["would_be"] = would_be(tm, data["index"])
        out["tables"][name] = {"table": table_data, "indexes": indexes, "throttling": cap.mode(entry)}
        vectors = vector_data(cap, entry, now)
        if vectors is not None:
            out["tables"][name]["vectors"] = vectors
    return out


def vector_data(cap: Capacity, entry: TableEntry, now: float) -> dict[str, Any] | None:
    """A table's vector meters as plain data (VECTORS in the contract); None without vector
    indexes or records. Indexes without writes yet show zeros."""
    meters = cap.meters(entry).vectors
    names = list(entry.table.vectors) + [n for n in meters if n is not None and n not in entry.table.vectors]
    if not names and not meters:
        return None
    def data(key: str | None, unit: str) -> dict[str, Any]:
        return (meters.get(key) or VectorMeter(now)).data(now, unit)
    return {"searches": data(None, "VectorSearchRequestBytes"),
            "writes": {n: data(n, "VectorWriteRequestBytes") for n in names}}


def meter_data(entry: TableEntry, m: Meter, store: ItemStore, key_type: str, now: float) -> dict[str, Any]:
    """One meter's records as plain data (see the module's contract)."""
    sec = int(now)
    m.flush()  # charges are logged, and added to the records here (see meter)
    if sec > m.sec:
        m.roll(sec)
    on_demand = m.provisioned is None
    return {
        "table": entry.name, "index": m.index, "billing_mode": entry.billing_mode,
        "model": "classic" if m.classic else "adaptive",
        "provisioned": _pair(m.provisioned) if m.provisioned is not None else None,
        "ceiling": _pair(m.ceiling) if on_demand else None,
        "peak": _pair(m.peak) if on_demand else None,
        "max_on_demand": _pair([b.rate if b is not None else None for b in m.maximum]),
        "partition_ceiling": _pair(CEILING),
        "partition_count": len(m.parts), "heat_splits": m.splits, "since": m.since,
        "totals": _totals(*m.totals()),
        "throttles": _pair([dict(t) for t in m.throttles]),
        "per_second": _series(m.ring, m.throttle_ring, m.sec, sec),
        "partitions": [_partition(i, part, pm, key_type, sec)
                       for i, (part, pm) in enumerate(zip(store.partitions, m.parts))],
    }


def table_throttling(cap: Capacity, entry: TableEntry) -> dict[str, Any]:
    """A table's mode and its would-be throttles by cause (table and GSIs, both directions)."""
    tm = cap.meters(entry)
    counts: dict[str, int] = {}
    for (_, _, cause), n in tm.would_be.items():
        counts[cause] = counts.get(cause, 0) + n
    return {"throttling": cap.mode(entry), "would_be": counts}


def modes_text(cap: Capacity, db: Database, table: str | list[str] | None = None) -> str:
    """The report's header: the server's mode in words, and per table (of every table, one, or a
    list) its mode (when a tag sets it) and its would-be throttles, with where to refuse them."""
    server = cap.settings.throttling
    lines = [f"Throttling {server}: {WHAT.get(server, server)}."]
    names = [table] if isinstance(table, str) else sorted(db.tables) if table is None else table
    for name in names:
        entry = db.tables.get(name)
        if entry is None:
            continue
        data = table_throttling(cap, entry)
        mode, counts = data["throttling"], data["would_be"]
        if mode != server:
            lines.append(f"{name}: throttling {mode} (its tag {MODE_TAG}): {WHAT[mode]}.")
        if counts:
            causes = ", ".join(f"{cause} {n}" for cause, n in sorted(counts.items(), key=lambda c: -c[1]))
            lines.append(f"{name}: {sum(counts.values())} would-be throttles ({causes}), recorded but not refused; "
                         f"to refuse them as DynamoDB would: {cap.where.format(mode='enforce')}, or the table's "
                         f"tag {MODE_TAG}=enforce.")
    return "\n".join(lines) + "\n\n"


def would_be(tm: TableMeters, index: str | None) -> dict[str, dict[str, int]]:
    """The would-be throttles (recorded, not refused) of a table (`index` None) or GSI, by cause."""
    out: dict[str, dict[str, int]] = {"read": {}, "write": {}}
    for (gsi, d, cause), n in tm.would_be.items():
        if gsi == index:
            out[("read", "write")[d]][cause] = n
    return out


def _partition(i: int, part: Partition, pm: PartMeter, key_type: str, sec: int) -> dict[str, Any]:
    if sec > pm.sec:
        pm.roll(sec)
    keys = sorted(pm.keys.items(), key=lambda kv: kv[1][0] + kv[1][1], reverse=True)
    return {
        "index": i, "token_range": [f"{part.lo:016x}", f"{part.hi - 1:016x}"], "items": len(part),
        "size_bytes": part.size_bytes, "since": pm.since,
        "totals": _totals(*pm.totals()),
        "throttles": _pair([dict(t) for t in pm.throttles]),
        "per_second": _series(pm.ring, pm.throttle_ring, pm.sec, sec),
        "keys": [{"key": show_key(key_type, pk), "key_type": key_type, "read_units": c[0], "write_units": c[1],
                  "reads": c[2], "writes": c[3], "last_second": c[4]} for pk, c in keys],
        "other_keys": {"read_units": pm.other[0], "write_units": pm.other[1], "reads": pm.other[2],
                       "writes": pm.other[3]},
        "keys_folded": pm.folded, "hot_seconds": pm.hot_secs,
    }


def _pair(values: Sequence[Any]) -> dict[str, Any]:
    return {"read": values[0], "write": values[1]}


def _totals(units: list, requests: list, burst: list) -> dict[str, Any]:
    return {"read_units": units[0], "write_units": units[1], "reads": requests[0], "writes": requests[1],
            "read_burst_units": burst[0], "write_burst_units": burst[1]}


def _series(ring: tuple[list, list], throttle_ring: tuple[list, list] | None, last: int, sec: int) -> dict[str, list]:
    """Per-second lists ending at second `sec`, oldest first (slots after `last` are empty)."""
    def ordered(values: list | None, zero: float) -> list:
        if values is None:
            return [zero] * RING
        return [values[s % RING] if s <= last else zero for s in range(sec - RING + 1, sec + 1)]
    return {"read_units": ordered(ring[0], 0.0), "write_units": ordered(ring[1], 0.0),
            "read_throttles": ordered(throttle_ring[0] if throttle_ring else None, 0),
            "write_throttles": ordered(throttle_ring[1] if throttle_ring else None, 0)}
