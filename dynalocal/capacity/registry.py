"""All meters of a server, keyed by table (and GSI), and the partition count of each store.

A table's partition count is the largest of: the classic formula (provisioned:
ceil(RCU/3000 + WCU/1000), and ceil(size / 10 GB)), what its warm throughput needs
(ceil(reads/3000), ceil(writes/1000); a new on-demand table's 12 000/4 000 need 4), what heat
splits and on-demand growth asked for, and the `dynalocal:partitions` tag. GSIs alike, from
their own settings. Re-partitioning happens here only (`_layout` with `reshape`), through the
stores' `set_partition_count`, and only between requests: in `settle`, which the application
calls before each request when a meter asked for a split or growth, and in `configure`
(CreateTable, UpdateTable, tags). A request looks a key's partition up once and uses that index
to the end (reads, writes, charges), so nothing it calls may move items: the lookups here
(`meter`, `meters`, `index_meter`) only fit meters to the stores' current partitions.
Throttling modes and the kinds of throttle: capacity/modes.py (`throttled` applies them).
Under `--throttling off` (or a table's tag `dynalocal:throttling=off`) nothing reshapes for
traffic (no heat split, no on-demand growth): the traffic it serves is not what DynamoDB would
have admitted, so a layout grown from it would be one DynamoDB never has; the declared settings
still set the count.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Protocol

from dynalocal.capacity.charge import Charge
from dynalocal.capacity.meter import NEW_ON_DEMAND, Meter
from dynalocal.capacity.modes import key_design_refusal, refused, table_mode
from dynalocal.capacity.split import MAX_PARTITIONS
from dynalocal.capacity.throttle import CLI_WHERE, ThrottleLog, note, throttle_error
from dynalocal.capacity.units import CEILING
from dynalocal.capacity.vector_meter import VectorMeter
from dynalocal.errors import DynamoError
from dynalocal.storage.database import Database, TableEntry
from dynalocal.storage.index import Index
from dynalocal.storage.table import ItemStore

PARTITIONS_TAG = "dynalocal:partitions"
MODEL_TAG = "dynalocal:capacity-model"


def declared_warm(spec: dict | None) -> tuple[float, float] | None:
    """A WarmThroughput member as (reads, writes) per second, missing parts at the new-table level."""
    if not spec:
        return None
    return (float(spec.get("ReadUnitsPerSecond") or NEW_ON_DEMAND[0]),
            float(spec.get("WriteUnitsPerSecond") or NEW_ON_DEMAND[1]))


def declared_maximum(spec: dict | None) -> tuple[float | None, float | None]:
    """An OnDemandThroughput member as (reads, writes) caps; -1 or missing means no cap."""
    spec = spec or {}
    out = []
    for member in ("MaxReadRequestUnits", "MaxWriteRequestUnits"):
        value = spec.get(member)
        out.append(float(value) if value is not None and value > 0 else None)
    return out[0], out[1]


def warm_description(declared: dict | None, partitions: int) -> dict:
    """DescribeTable's WarmThroughput of a table or GSI: the declared figures as given (tools such
    as Terraform compare them with their configuration), else what its partitions serve at once
    (a new on-demand table: 12 000 / 4 000; more after growth). Changes apply at once: ACTIVE."""
    declared = declared or {}
    return {"ReadUnitsPerSecond": int(declared.get("ReadUnitsPerSecond") or partitions * CEILING[0]),
            "WriteUnitsPerSecond": int(declared.get("WriteUnitsPerSecond") or partitions * CEILING[1]),
            "Status": "ACTIVE"}


def on_demand_description(declared: dict | None) -> dict:
    """DescribeTable's OnDemandThroughput of an on-demand table or GSI (-1: no maximum)."""
    spec = declared or {}
    return {"MaxReadRequestUnits": spec.get("MaxReadRequestUnits", -1),
            "MaxWriteRequestUnits": spec.get("MaxWriteRequestUnits", -1)}


def warm_need(warm: tuple[float, float] | None) -> int:
    if warm is None:
        return 1
    return max(math.ceil(warm[0] / CEILING[0]), math.ceil(warm[1] / CEILING[1]))


def classic_count(provisioned: tuple[float, float] | None, size_bytes: int) -> int:
    """The classic formula; on-demand stores start with what a new table's warm throughput needs."""
    by_size = math.ceil(size_bytes / (10 * 1024**3))
    if provisioned is None:
        return max(warm_need(NEW_ON_DEMAND), by_size)
    return max(1, math.ceil(provisioned[0] / CEILING[0] + provisioned[1] / CEILING[1]), by_size)


def tagged_count(entry: TableEntry) -> int:
    tagged = entry.tags.get(PARTITIONS_TAG)
    if tagged is not None and tagged.isdigit() and int(tagged) > 0:
        return min(int(tagged), 1024)
    return 0


class TableMeters:
    """The meters of one table: the table's (shared by its LSIs) and each GSI's."""

    __slots__ = ("entry", "table", "gsis", "log", "would_be", "vectors")

    def __init__(self, entry: TableEntry, table: Meter) -> None:
        self.entry = entry
        self.table = table
        self.gsis: dict[str, Meter] = {}
        self.log: ThrottleLog | None = None  # throttle-log state (see .throttle)
        # would-be throttles (recorded, not refused) since the table was created:
        # (GSI name or None, direction, cause) -> events; a subset of the meters' throttle records
        self.would_be: dict[tuple[str | None, int, str], int] = {}
        # SearchVectors (key None) and each vector index's writes (key: its name), capacity/vector_meter.py
        self.vectors: dict[str | None, VectorMeter] = {}


class CapacitySettings(Protocol):
    """The server settings capacity reads (engine.context.Settings has them)."""

    throttling: str  # keys | enforce | report | off (capacity/modes.py)
    burst_seconds: float
    partition_burst_seconds: float
    capacity_model: str  # adaptive | classic


class Capacity:
    """Every meter of a server, by table name; rebuilt when a name is reused by a new table.

    `settings` is the server's Settings (throttling, burst_seconds, partition_burst_seconds,
    capacity_model), read at each use; `db` the Database, to drop the meters of dropped tables."""

    def __init__(self, settings: CapacitySettings, clock: Callable[[], float], db: Database | None = None) -> None:
        self.settings = settings
        self.clock = clock
        self.db = db
        self.tables: dict[str, TableMeters] = {}
        self.due: set[str] = set()  # tables whose meters asked for a new layout (see settle)
        # charge(entry): a request's capacity on a table (see .charge); a partial, so that
        # creating one per request runs no Python frame of ours besides Charge.__init__.
        self.charge: Callable[[TableEntry], Charge] = partial(Charge, self)
        # How the throttle log names the setting, {mode} filled in: the command line's flag and
        # variable by default; the pytest plugin names its ini option instead.
        self.where = CLI_WHERE

    # -- lookup (the hot path) ----------------------------------------------------------------

    def meters(self, entry: TableEntry) -> TableMeters:
        """The meters of a table, fitted to its stores' current partitions (never re-partitions)."""
        tm = self.tables.get(entry.table.name)
        if tm is None or tm.entry is not entry:
            tm = self._build(entry, reshape=False)
        elif tm.table.layout is not entry.table.partitions:
            self._layout(tm, reshape=False)
        return tm

    def meter(self, entry: TableEntry) -> Meter:
        """The meter of a table's partitions (shared by its LSIs)."""
        return self.meters(entry).table

    def index_meter(self, entry: TableEntry, index: Index) -> Meter:
        """The meter of a GSI's own partitions."""
        tm = self.meters(entry)
        m = tm.gsis.get(index.name)
        if m is None or m.layout is not index.partitions:
            self._layout(tm, reshape=False)
            m = tm.gsis[index.name]
        return m

    def vector_record(self, entry: TableEntry, index: str | None, size: float) -> None:
        """Count one SearchVectors (`index` None) or one write to vector index `index`, of `size`
        approximate bytes (docs/behaviour/vectors.md §5), on the table's vector meters."""
        meters = self.meters(entry).vectors
        m = meters.get(index)
        now = self.clock()
        if m is None:
            m = meters[index] = VectorMeter(now)
        m.record(size, now)

    def settle(self) -> None:
        """Apply the layouts meters asked for (splits, on-demand growth): between requests only."""
        names = list(self.due)
        self.due.clear()
        tables = self.db.tables if self.db is not None else None
        for name in names:
            tm = self.tables.get(name)
            if tm is not None and (tables is None or tables.get(name) is tm.entry):
                self._layout(tm, reshape=True)

    def mode(self, entry: TableEntry) -> str:
        """The table's throttling mode: its `dynalocal:throttling` tag, else the server's."""
        return table_mode(entry.tags, self.settings.throttling)

    def throttled(self, entry: TableEntry, m: Meter, d: int, p: int, cause: str, now: float) -> DynamoError | None:
        """A request on partition `p` of meter `m` met a spent bucket of `cause`: record the throttle
        and return the error to answer, or None when the table's mode only records it (a would-be
        throttle). In `keys` mode a capacity-setting cause is a would-be throttle unless a
        key-design limit (checked here) refuses the request as well."""
        mode = self.mode(entry)
        if mode == "off":
            return None
        refuse = refused(mode, cause)
        if not refuse and mode == "keys":
            key_cause = key_design_refusal(m, d, p, now)
            if key_cause is not None:
                cause, refuse = key_cause, True
        m.record_throttle(d, p, cause, now)
        tm = self.tables.get(entry.table.name)
        if tm is not None:
            if not refuse:
                self.would(tm, m.index, d, cause)
            note(tm, m, d, p, cause, mode, not refuse, self.where, now)
        return throttle_error(entry, m, d, cause) if refuse else None

    def would(self, tm: TableMeters, index: str | None, d: int, cause: str) -> None:
        """Count a would-be throttle (recorded, not refused) of the table or one of its GSIs."""
        key = (index, d, cause)
        tm.would_be[key] = tm.would_be.get(key, 0) + 1

    # -- configuration ------------------------------------------------------------------------

    def configure(self, entry: TableEntry) -> None:
        """Apply a table's (and its GSIs') current settings now: CreateTable, UpdateTable, tags."""
        tm = self.tables.get(entry.table.name)
        if tm is None or tm.entry is not entry:
            self._build(entry, reshape=True)
        else:
            self._layout(tm, reshape=True)

    def forget(self, name: str) -> None:
        self.tables.pop(name, None)

    def classic(self, entry: TableEntry) -> bool:
        model = entry.tags.get(MODEL_TAG) or self.settings.capacity_model
        return model == "classic"

    def _settings_of(self, entry: TableEntry, gsi: dict | None) -> tuple[
            tuple[float, float] | None, tuple[float, float] | None, tuple[float | None, float | None]]:
        """(provisioned rates or None, declared warm, on-demand maximum) of the table or a GSI."""
        spec = gsi if gsi is not None else entry.extra
        provisioned = None
        if entry.billing_mode == "PROVISIONED":
            if gsi is None:
                provisioned = (float(entry.read_capacity), float(entry.write_capacity))
            elif gsi.get("ProvisionedThroughput"):
                pt = gsi["ProvisionedThroughput"]
                provisioned = (float(pt["ReadCapacityUnits"]), float(pt["WriteCapacityUnits"]))
        return provisioned, declared_warm(spec.get("WarmThroughput")), declared_maximum(spec.get("OnDemandThroughput"))

    def _new_meter(self, entry: TableEntry, gsi: dict | None, partitions: int) -> Meter:
        provisioned, warm, maximum = self._settings_of(entry, gsi)
        s = self.settings
        m = Meter(entry.table.name, gsi["IndexName"] if gsi else None, partitions, provisioned, self.classic(entry),
                  s.burst_seconds, s.partition_burst_seconds, warm, maximum, self.clock())
        m.split_floor = partitions  # partitions never merge: what the store has is a floor
        m.on_pending = partial(self.due.add, entry.table.name)
        return m

    def _build(self, entry: TableEntry, reshape: bool) -> TableMeters:
        if self.db is not None:  # tables dropped without DeleteTable (a reset) leave their meters behind
            tables = self.db.tables
            for name in [n for n, tm in self.tables.items() if tables.get(n) is not tm.entry]:
                del self.tables[name]
        tm = TableMeters(entry, self._new_meter(entry, None, len(entry.table.partitions)))
        self.tables[entry.table.name] = tm
        self._layout(tm, reshape)
        return tm

    def _layout(self, tm: TableMeters, reshape: bool) -> None:
        """Re-apply settings to the table's and its GSIs' meters; give the stores the partition
        counts they need when `reshape` (between requests), else fit the meters to the stores as
        they are and leave a needed change to the next `settle`."""
        entry, now = tm.entry, self.clock()
        table = entry.table
        m = tm.table
        grows = self.mode(entry) != "off"
        provisioned, warm, maximum = self._settings_of(entry, None)
        m.configure(len(m.parts), provisioned, self.classic(entry), warm, maximum, now)
        count = max(classic_count(provisioned, table.size_bytes), warm_need(warm), tagged_count(entry),
                    m.partitions_needed() if grows else len(table.partitions))
        self._apply(entry, m, table, min(count, MAX_PARTITIONS), now, reshape)
        for index in table.indexes.values():
            if not index.is_global and len(index.partitions) != len(table.partitions):
                index.set_partition_count(len(table.partitions))  # LSIs live in the table's partitions
        specs = {g["IndexName"]: g for g in entry.gsis}
        for name in [n for n in tm.gsis if n not in table.indexes]:
            del tm.gsis[name]
        for index in table.indexes.values():
            if not index.is_global:
                continue
            spec = specs.get(index.name, {"IndexName": index.name})
            g = tm.gsis.get(index.name)
            if g is None:
                g = tm.gsis[index.name] = self._new_meter(entry, spec, len(index.partitions))
            provisioned, warm, maximum = self._settings_of(entry, spec)
            g.configure(len(g.parts), provisioned, self.classic(entry), warm, maximum, now)
            count = max(classic_count(provisioned, index.size_bytes), warm_need(warm),
                        g.partitions_needed() if grows else len(index.partitions))
            self._apply(entry, g, index, min(count, MAX_PARTITIONS), now, reshape)

    def _apply(self, entry: TableEntry, m: Meter, store: ItemStore, count: int, now: float, reshape: bool) -> None:
        """Give a store and its meter `count` partitions (the one place that re-partitions), or,
        unless `reshape`, fit the meter to the store's partitions and leave the change to `settle`."""
        if not reshape:
            if count != len(store.partitions):
                self.due.add(entry.table.name)
            count = len(store.partitions)
        else:
            m.pending = False
            if len(store.partitions) != count:
                store.set_partition_count(count)
        if len(m.parts) != count or m.layout is not store.partitions:
            if len(m.parts) != count:
                m.resize(count, now, store.partition_index)
            m.layout = store.partitions
        m.split_floor = max(m.split_floor, count)
