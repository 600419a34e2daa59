"""One request's capacity on one table: admission, pricing, exact charges, and its ConsumedCapacity.

Handlers create a Charge (`Capacity.charge(entry)`) once they know the table, ask it to admit
a read or write on a partition before touching data (a throttled request changes nothing),
then tell it what the operation did in sizes (`get`, `put`, `delete`, `condition_failed`,
`page`, `transact_get`, `transact_write`): the Charge prices it (docs/behaviour/capacity.md §1), charges the
partitions and renders ConsumedCapacity. Handlers never compute units. A GSI write is planned
before the base write (`plan_gsi`) so a GSI that cannot take it refuses the write
(back-pressure); its units are then charged to the GSI partitions written.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from dynalocal.capacity.causes import GSI_BACKPRESSURE, READ, WRITE
from dynalocal.capacity.meter import Meter
from dynalocal.capacity.units import read_units, write_units
from dynalocal.errors import DynamoError
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import Index
from dynalocal.storage.partition import Record

if TYPE_CHECKING:  # registry imports this module (Capacity.charge makes Charges)
    from dynalocal.capacity.registry import Capacity

TRANSACTIONAL = 2.0  # a transactional read or write costs twice (prepare + commit)


@dataclass(slots=True)
class GsiWrite:
    """What one base-table write will do to one GSI, worked out (partitions included) before it."""

    index: Index
    meter: Meter
    old_key: bytes | None  # entry removed from here (index key changed or gone), else None
    old_part: int  # its partition (-1 if none)
    old_units: float  # W(removed entry): charged to old_part
    new_key: bytes | None  # entry stored here, else None
    new_part: int  # its partition (-1 if none)
    changes: bool  # whether the entry at new_key is written (a new or changed projection)


def partition_key(key: bytes | None) -> bytes | None:
    """token|len|pk prefix of an encoded key: the partition key the per-key counts use."""
    if key is None:
        return None
    return key[:10 + int.from_bytes(key[8:10], "big")]


class Charge:
    """Admission and charges of one request on one table, and what it reports."""

    __slots__ = ("cap", "entry", "meter", "now", "table_units", "table_used", "indexes", "vectors")

    def __init__(self, cap: Capacity, entry: TableEntry) -> None:
        self.cap = cap
        self.entry = entry
        tm = cap.tables.get(entry.table.name)  # Capacity.meter's fast path, inlined: per request
        if tm is not None and tm.entry is entry and tm.table.layout is entry.table.partitions:
            self.meter: Meter = tm.table
        else:
            self.meter = cap.meter(entry)
        self.now: float = cap.clock()
        self.table_units = 0.0  # > 0 once the table was read or written (every charge is >= 0.5 unit)
        self.table_used = False  # reported under Table with 0 units too (batch handlers set it)
        self.indexes: dict[str, float] | None = None  # index name -> units reported under it
        self.vectors: dict[str, float] | None = None  # vector index -> VectorWriteRequestBytes (approximate)

    # -- admission ----------------------------------------------------------------------------

    def admit(self, d: int, part: int, index: Index | None = None) -> None:
        """Admit a read (d=0) or write (d=1) on `part` of the table, or of a GSI, or raise the
        throttle error to answer (recorded; a would-be throttle, capacity/modes.py, is recorded only)."""
        cap = self.cap
        if cap.settings.throttling == "off":
            return
        m = self.meter if index is None or not index.is_global else cap.index_meter(self.entry, index)
        cause = m.refusal(d, part, self.now)
        if cause is not None:
            err = cap.throttled(self.entry, m, d, part, cause, self.now)
            if err is not None:
                raise err

    def refuse(self, d: int, part: int, index: Index | None = None) -> DynamoError | None:
        """`admit`, returning the throttle error (None to admit) instead of raising it."""
        try:
            self.admit(d, part, index)
        except DynamoError as err:  # only throttles are raised there (rare: the cost does not matter)
            return err
        return None

    # -- pricing: what each operation consumes (docs/behaviour/capacity.md §1) ----------------
    # Sizes are item sizes in bytes, 0 for an absent item (which still costs the minimum unit).
    # `owed` is what Table.apply's index listener says each index write cost (name -> units).

    def get(self, part: int, size: int, consistent: bool, pk: bytes | None) -> None:
        """GetItem or one BatchGetItem key: R(size) x f (f = 0.5 unless consistent); a missing
        item reads one unit; a projection does not reduce it."""
        units = ((size + 4095) // 4096 or 1) * (1.0 if consistent else 0.5)  # read_units, inlined: per request
        self.meter.charge(READ, part, units, pk, self.now)  # `read`, inlined: the hot path
        self.table_units += units

    def put(self, part: int, pk: bytes | None, old_size: int, new_size: int,
            owed: dict[str, float] | None = None, gsis: list[GsiWrite] | None = None) -> None:
        """An applied PutItem, UpdateItem or BatchWriteItem put: W(max(old, new)), plus `owed`."""
        units = (((old_size if old_size > new_size else new_size) + 1023) // 1024 or 1) * 1.0  # write_units, inlined
        if owed:
            self._writes(part, pk, units, owed, gsis, 1.0)
            return
        self.meter.charge(WRITE, part, units, pk, self.now)  # `write`, inlined: the hot path
        self.table_units += units

    def delete(self, part: int, pk: bytes | None, old_size: int,
               owed: dict[str, float] | None = None, gsis: list[GsiWrite] | None = None) -> None:
        """A DeleteItem or BatchWriteItem delete: W(deleted item); one unit when there was none."""
        self.put(part, pk, old_size, 0, owed, gsis)

    def condition_failed(self, part: int, pk: bytes | None, exists: bool, new_size: int) -> None:
        """A write whose condition failed still consumes: W(new item) if the item exists, else 1."""
        self.write(part, write_units(new_size if exists else 0), pk)

    def page(self, read_bytes: int, consistent: bool, shares: list[tuple[int, float]], pk: bytes | None = None,
             index: Index | None = None, fetched: list[int] | None = None) -> None:
        """A Query or Scan page: R(bytes read, before any filter) x f, one rounding for the page,
        charged to the partitions `shares` says (against `pk` when the page is one partition key's)
        under `index` when it read one; plus R(item) x f per base item an LSI query fetched
        (sizes in `fetched`), reported under Table."""
        units = read_units(read_bytes, consistent)
        if len(shares) == 1 and pk is not None:
            self.read(shares[0][0], units, pk, index)
        else:
            self.read_spread(shares, units, index)
        if fetched:
            self.read(shares[0][0], sum(read_units(size, consistent) for size in fetched), pk)

    def transact_get(self, part: int, size: int, pk: bytes | None) -> None:
        """One TransactGetItems Get: 2 x R(size), strongly consistent."""
        self.read(part, TRANSACTIONAL * read_units(size, True), pk)

    def transact_write(self, part: int, pk: bytes | None, old_size: int, new_size: int,
                       owed: dict[str, float] | None, gsis: list[GsiWrite] | None) -> None:
        """One TransactWriteItems action, whatever its kind (ConditionCheck and Delete included:
        new_size 0): 2 x W(max(old, new)), and twice each index write."""
        units = TRANSACTIONAL * write_units(old_size if old_size > new_size else new_size)
        if owed:
            self._writes(part, pk, units, owed, gsis, TRANSACTIONAL)
        else:
            self.write(part, units, pk)

    # -- charges: priced units to partitions --------------------------------------------------

    def read(self, part: int, units: float, pk: bytes | None, index: Index | None = None) -> None:
        """Charge read units on partition `part` of the table (LSIs included) or of a GSI."""
        if index is None:
            self.meter.charge(READ, part, units, pk, self.now)
            self.table_units += units
            return
        m = self.cap.index_meter(self.entry, index) if index.is_global else self.meter
        m.charge(READ, part, units, pk, self.now)
        self._report(index.name, units)

    def read_spread(self, shares: list[tuple[int, float]], units: float, index: Index | None = None) -> None:
        """Charge a Scan page's `units` to the partitions it read, `shares` as (partition, fraction)."""
        m = self.cap.index_meter(self.entry, index) if index is not None and index.is_global else self.meter
        for part, fraction in shares:
            m.charge(READ, part, units * fraction, None, self.now)
        if index is None:
            self.table_units += units
        else:
            self._report(index.name, units)

    def write(self, part: int, units: float, pk: bytes | None) -> None:
        """Charge write units of the table's item (a failed condition's, or a write without indexes)."""
        self.meter.charge(WRITE, part, units, pk, self.now)
        self.table_units += units

    def _writes(self, part: int, pk: bytes | None, table_units: float, index_units: dict[str, float],
                gsis: list[GsiWrite] | None, factor: float) -> None:
        """Charge a finished write with index writes: table units plus LSI units to the table's
        partition, GSI units to the GSI partitions written (index units times `factor`)."""
        indexes = self.entry.table.indexes
        lsi = 0.0
        for name, units in index_units.items():
            units *= factor
            self._report(name, units)
            index = indexes.get(name)
            if index is None or not index.is_global:
                lsi += units
        self.meter.charge(WRITE, part, table_units + lsi, pk, self.now)
        self.table_units += table_units
        for w in gsis or ():
            units = index_units.get(w.index.name, 0.0) * factor
            if not units:
                continue
            if w.old_part >= 0:
                removed = min(units, w.old_units * factor)
                w.meter.charge(WRITE, w.old_part, removed, partition_key(w.old_key), self.now)
                units -= removed
            if units:
                at, key_at = (w.new_part, w.new_key) if w.new_part >= 0 else (w.old_part, w.old_key)
                w.meter.charge(WRITE, at, units, partition_key(key_at), self.now)

    def vector_write(self, spent: dict[str, float]) -> None:
        """Record the approximate VectorWriteRequestBytes a write cost each vector index (reported
        under INDEXES; docs/behaviour/vectors.md §5), and count them on the index's vector meter."""
        vectors = self.vectors
        if vectors is None:
            vectors = self.vectors = {}
        record = self.cap.vector_record
        for name, size in spent.items():
            vectors[name] = vectors.get(name, 0.0) + size
            record(self.entry, name, size)

    def _report(self, name: str, units: float) -> None:
        indexes = self.indexes
        if indexes is None:
            indexes = self.indexes = {}
        indexes[name] = indexes.get(name, 0.0) + units

    # -- GSI back-pressure --------------------------------------------------------------------

    def plan_gsi(self, key: bytes, old: Record | None, new_item: dict | None,
                 old_item: dict | None = None) -> list[GsiWrite]:
        """The GSI entries a write of `key` (old record -> new item) will touch; [] without GSIs."""
        out: list[GsiWrite] = []
        for index in self.entry.table.indexes.values():
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
            out.append(GsiWrite(index, self.cap.index_meter(self.entry, index), old_key, old_part, old_units,
                                new_key, new_part, changes))
        return out

    def refuse_gsi(self, part: int, gsis: list[GsiWrite]) -> DynamoError | None:
        """The error refusing a base-table write (on `part`) that a GSI partition cannot absorb;
        None to admit it (a GSI's would-be throttles are recorded, and the next GSI checked)."""
        cap = self.cap
        if cap.settings.throttling == "off":
            return None
        backed = False  # GSI_BACKPRESSURE recorded on the base table (once per write)
        for w in gsis:
            for p in (w.old_part, w.new_part if w.changes else -1):
                if p < 0:
                    continue
                cause = w.meter.refusal(WRITE, p, self.now)
                if cause is None:
                    continue
                if not backed:
                    if cap.mode(self.entry) == "off":  # the table's tag turned it off
                        return None
                    self.meter.record_throttle(WRITE, part, GSI_BACKPRESSURE, self.now)
                    backed = True
                err = cap.throttled(self.entry, w.meter, WRITE, p, cause, self.now)
                if err is not None:
                    return err
        if backed:  # every GSI throttle was a would-be one: so is the back-pressure
            tm = cap.tables.get(self.entry.table.name)
            if tm is not None:
                cap.would(tm, None, WRITE, GSI_BACKPRESSURE)
        return None

    def admit_gsi(self, part: int, gsis: list[GsiWrite]) -> None:
        err = self.refuse_gsi(part, gsis)
        if err is not None:
            raise err

    # -- ConsumedCapacity ---------------------------------------------------------------------

    def consumed(self, body: dict, name: str) -> dict[str, Any] | None:
        """The ConsumedCapacity member for ReturnConsumedCapacity TOTAL/INDEXES, else None: the
        total includes index units; INDEXES adds `Table` (when the table was read or written)
        and the GSIs and LSIs charged."""
        mode = body.get("ReturnConsumedCapacity")
        if mode is None or mode == "NONE":
            return None
        indexes = self.indexes
        total = self.table_units + (sum(indexes.values()) if indexes else 0.0)
        out: dict[str, Any] = {"TableName": name, "CapacityUnits": total}
        if mode == "INDEXES":
            if self.table_used or self.table_units:
                out["Table"] = {"CapacityUnits": self.table_units}
            if indexes:
                known = self.entry.table.indexes
                for index_name, units in indexes.items():
                    index = known.get(index_name)
                    group = "GlobalSecondaryIndexes" if index is None or index.is_global else "LocalSecondaryIndexes"
                    out.setdefault(group, {})[index_name] = {"CapacityUnits": units}
            if self.vectors:
                out["VectorIndexes"] = {n: {"VectorWriteRequestBytes": b} for n, b in self.vectors.items()}
        return out


def consumed_list(body: dict, charges: dict[str, Charge], member: str | None = None) -> list[dict] | None:
    """ConsumedCapacity of a batch or transaction: one entry per table (as named in the request);
    `member` (ReadCapacityUnits / WriteCapacityUnits) repeats the total, as transactions report."""
    out = []
    for name, charge in charges.items():
        cc = charge.consumed(body, name)
        if cc is None:
            return None
        if member is not None:
            cc[member] = cc["CapacityUnits"]
        out.append(cc)
    return out


def _projection_changes(index: Index, old_item: dict, new_item: dict) -> bool:
    """Whether an entry staying at the same index key gets different projected attributes."""
    if index.attrs is None:
        return old_item != new_item
    return any(old_item.get(name) != new_item.get(name) for name in index.attrs)
