"""The write sequence every item write goes through: PutItem, UpdateItem, DeleteItem (and the
PartiQL statements run as them), BatchWriteItem and TransactWriteItems.

    prepare   partition index (from the request's layout), write admitted, current record
    check     the request's condition; a failed one is still charged
    write     GSI plan + back-pressure (before anything is written), Table.write, charge

`write` runs the whole sequence (PutItem, DeleteItem, a BatchWriteItem write), or its end after
the caller's own `prepare` and `check` (UpdateItem, which builds the new item from the old one
in between). A transaction prepares, checks and admits (`admit_indexes`) every action before
it applies any (`apply`, transactional pricing). Pricing lives in `Charge`, listeners behind
`Table.write`; this module is the one place that calls them for a write. The partition index is
looked up once, from the layout current for the whole request (layouts change only between
requests, `Capacity.settle`), and used to the end. TTL deletes are not requests (free, never
throttled): they go through `Table.apply` directly (storage.ttl), where the same listeners run.
"""
from __future__ import annotations

import orjson

from dynalocal.capacity.charge import Charge, GsiWrite
from dynalocal.errors import ConditionalCheckFailedException
from dynalocal.expressions import Compiled
from dynalocal.storage.partition import Record
from dynalocal.storage.table import Table

_NO_GSIS: tuple = ()  # a write on a table without indexes touches no GSI


def prepare(charge: Charge, table: Table, key: bytes) -> tuple[int, Record | None]:
    """The key's partition index and its current record, after admitting a write on that
    partition (or raising the throttle error: a refused write reads and changes nothing)."""
    part = table.partition_index(key)
    charge.admit(1, part)
    return part, table.partitions[part].get(key)


def check(charge: Charge | None, part: int, prefix: bytes, compiled: Compiled | None, spec: dict, old: Record | None,
          old_item: dict | None, new_size: int) -> dict | None:
    """Evaluate the request's condition (if any) against the current item; return the decoded
    old item. A failed condition raises ConditionalCheckFailedException (with the old item when
    ReturnValuesOnConditionCheckFailure is ALL_OLD) and is still charged (`Charge.condition_failed`,
    W(new_size) when the item exists), unless `charge` is None (a transaction's: not charged)."""
    if old_item is None and old is not None:
        old_item = orjson.loads(old[0])
    if compiled is not None and compiled.condition is not None and not compiled.condition.matches(old_item):
        if charge is not None:
            charge.condition_failed(part, prefix, old is not None, new_size)
        show = spec.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old_item is not None
        raise ConditionalCheckFailedException(old_item if show else None)
    return old_item


def admit_indexes(charge: Charge, table: Table, part: int, key: bytes, old: Record | None,
                  new_item: dict | None, old_item: dict | None) -> list[GsiWrite] | tuple:
    """GSI back-pressure: plan the GSI entries a write of `key` touches and admit them, or raise
    the throttle error of a GSI partition that cannot absorb the write (nothing is written)."""
    if not table.indexes:
        return _NO_GSIS
    gsis = charge.plan_gsi(key, old, new_item, old_item)
    charge.admit_gsi(part, gsis)
    return gsis


def write(charge: Charge, table: Table, key: bytes, prefix: bytes, new: Record | None,
          new_item: dict | None = None, compiled: Compiled | None = None, spec: dict | None = None,
          want_old: bool = False,
          part: int = -1, old: Record | None = None, old_item: dict | None = None) -> dict | None:
    """Store `new` (or delete the item when None; a missing one is left alone) and charge it:
    W(max(old, new)), one unit for nothing, plus the index units owed. From the start (`part`
    -1: `prepare`, then `check` when the request has expressions, failing with W(new, else old))
    or after the caller's own (`part`, `old`, `old_item`). On a table with indexes the GSI
    writes are admitted first (`admit_indexes`: may raise, before anything is written).
    Returns the old item if it was decoded, or asked for (`want_old`); else None."""
    if part < 0:
        part = table.partition_index(key)  # `prepare`, inlined: one call less on the hot path
        charge.admit(1, part)
        old = table.partitions[part].get(key)
        if compiled is not None:
            size = new[1] if new is not None else old[1] if old is not None else 0
            old_item = check(charge, part, prefix, compiled, spec, old, None, size)  # type: ignore[arg-type]
    if (table.indexes or table.vectors) and (new is not None or old is not None):
        if old_item is None and old is not None:
            old_item = orjson.loads(old[0])  # decoded once, for the GSI plan and the index listener
        gsis = admit_indexes(charge, table, part, key, old, new_item, old_item)
        apply(charge, table, part, key, prefix, old, new, new_item, old_item, gsis, new is None)
        return old_item
    # Without indexes (or with nothing to write): `apply`, specialised; the hot path.
    if new is not None:
        table.write(part, key, new, new_item, old_item)
        charge.put(part, prefix, old[1] if old is not None else 0, new[1])
    else:
        if old is not None:
            table.write(part, key, None, None, old_item)
        charge.delete(part, prefix, old[1] if old is not None else 0)
    if want_old and old_item is None and old is not None:
        return orjson.loads(old[0])
    return old_item


def apply(charge: Charge, table: Table, part: int, key: bytes, prefix: bytes, old: Record | None,
          new: Record | None, new_item: dict | None, old_item: dict | None, gsis: list[GsiWrite] | tuple,
          delete: bool, transactional: bool = False) -> None:
    """Write an admitted write (`new`; a delete when `delete` and the item exists; else nothing)
    through `Table.write` and charge it with the index units the listeners owe: as a single
    write, or as a transaction's action (`transactional`: `Charge.transact_write`)."""
    owed = None
    if new is not None or (delete and old is not None):
        done = table.write(part, key, new, new_item, old_item)
        if done is not None:
            owed = done.owed
            if done.vector_bytes:
                charge.vector_write(done.vector_bytes)
    old_size = old[1] if old is not None else 0
    if transactional:
        charge.transact_write(part, prefix, old_size, new[1] if new is not None else 0, owed, gsis)  # type: ignore[arg-type]
    elif new is not None:
        charge.put(part, prefix, old_size, new[1], owed, gsis)  # type: ignore[arg-type]
    else:
        charge.delete(part, prefix, old_size, owed, gsis)  # type: ignore[arg-type]
