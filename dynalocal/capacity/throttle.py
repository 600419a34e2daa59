"""A throttle event: the DynamoDB error it becomes, and the server's rate-limited summary line.

Errors follow docs/behaviour/capacity.md §4: provisioned tables answer ProvisionedThroughputExceededException
(member `ThrottlingReasons`), on-demand ones ThrottlingException (member `throttlingReasons`,
so spelled in botocore's model); the reason is Table|Index + Read|Write + the cause's limit type.

The log: at most one line per table every LOG_INTERVAL seconds (of the capacity clock). The
first throttle of a quiet table logs at once; later ones are counted and summarised by the
next line: events by cause since the last line (would-be ones, recorded but not refused,
marked as such), the hottest partition key of the partition last throttled, and what to do
about it in the table's mode, naming where that mode is set (Capacity.where).
"""
from __future__ import annotations

import base64
import logging
from typing import TYPE_CHECKING

from dynalocal.capacity.causes import (
    ACCOUNT_LIMIT,
    GSI_BACKPRESSURE,
    KEY_RANGE,
    ON_DEMAND_MAX,
    ON_DEMAND_SCALING,
    PARTITION_SHARE,
    TABLE_RATE,
    WIRE_REASON,
)
from dynalocal.capacity.meter import Meter
from dynalocal.errors import DynamoError, ProvisionedThroughputExceededException, ThrottlingException
from dynalocal.storage.database import TableEntry
from dynalocal.values.multikey import show_tuple

if TYPE_CHECKING:  # registry imports this module
    from dynalocal.capacity.registry import TableMeters

log = logging.getLogger("dynalocal.capacity")
LOG_INTERVAL = 10.0
CLI_WHERE = "--throttling {mode} (or DYNALOCAL_THROTTLING={mode})"  # Capacity.where by default

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
KIND = ("Read", "Write")


def throttle_error(entry: TableEntry, m: Meter, d: int, cause: str) -> DynamoError:
    """The exception DynamoDB answers for a throttle of `cause` on meter `m` (table or GSI)."""
    index = m.index
    scope = "Index" if index else "Table"
    resource = entry.arn + (f"/index/{index}" if index else "")
    reasons = [{"reason": f"{scope}{KIND[d]}{WIRE_REASON[cause]}", "resource": resource}]
    if m.provisioned is not None:
        return ProvisionedThroughputExceededException(INDEX_MESSAGE if index else TABLE_MESSAGE,
                                                      ThrottlingReasons=reasons)
    return ThrottlingException(ON_DEMAND_INDEX_MESSAGE if index else ON_DEMAND_MESSAGE, throttlingReasons=reasons)


class ThrottleLog:
    """One table's running summary of throttle events since its last log line."""

    __slots__ = ("last", "counts")

    def __init__(self) -> None:
        self.last = float("-inf")
        # (GSI or None, direction, cause, would-be) -> events
        self.counts: dict[tuple[str | None, int, str, bool], int] = {}


def note(tm: TableMeters, m: Meter, d: int, p: int, cause: str, mode: str, would_be: bool, where: str,
         now: float) -> None:
    """Count a throttle event (refused, or a would-be one) for the table's log; write the summary
    line when one is due. `where` names the setting ({mode} filled in): see Capacity.where."""
    state = tm.log
    if state is None:
        state = tm.log = ThrottleLog()
    key = (m.index, d, cause, would_be)
    state.counts[key] = state.counts.get(key, 0) + 1
    if now - state.last < LOG_INTERVAL:
        return
    state.last = now
    counts, state.counts = state.counts, {}
    _write(tm.entry, m, d, p, cause, counts, mode, where)


def _events(counts: dict, would_be: bool) -> str:
    return ", ".join(f"{n} {('read', 'write')[dd]}{'s' if n > 1 else ''} ({'GSI ' + g + ': ' if g else ''}{c})"
                     for (g, dd, c, w), n in sorted(counts.items(), key=lambda kv: -kv[1]) if w is would_be)


def _write(entry: TableEntry, m: Meter, d: int, p: int, cause: str, counts: dict, mode: str, where: str) -> None:
    unit = ("RCU", "WCU")[d]
    what = f"global secondary index {m.index} of table {entry.name}" if m.index else f"table {entry.name}"
    refused, would = _events(counts, False), _events(counts, True)
    verb = "throttled" if refused else "would have throttled"
    summary = "; ".join(([refused] if refused else []) + ([f"{would}, would-be: not refused"] if would else []))
    hot = _hottest(entry, m, p) if p >= 0 else None
    at = f" on partition {p} of {len(m.parts)}" if p >= 0 else ""
    why, fix = _explain(entry, m, d, cause, unit)
    log.warning("%s %s%s: %s%s. %s. To change it: %s. %s Per-partition figures: GET /_dynalocal/tables/%s/partitions",
                verb, what, at, summary, f"; hottest key there: {hot}" if hot else "", why, fix,
                _tail(mode, bool(refused), bool(would), where), entry.name)


def _tail(mode: str, refused: bool, would: bool, where: str) -> str:
    """What the mode did with these events, and where to change it."""
    tag = "the table's tag dynalocal:throttling="
    if mode == "enforce":
        return (f"Requests were refused as DynamoDB would refuse them (throttling enforce); to refuse only "
                f"key-design throttles: {where.format(mode='keys')}; to only record them: "
                f"{where.format(mode='report')}, or {tag}report.")
    if mode == "report":
        return (f"Nothing was refused (throttling report); to refuse as DynamoDB would: "
                f"{where.format(mode='enforce')}, or {tag}enforce.")
    text = "Key-design throttles (a partition's ceiling) are refused as DynamoDB would (throttling keys)." \
        if refused else ""
    if would:
        text += (" Capacity-setting throttles are only recorded (throttling keys: the capacity numbers of test "
                 f"tables are usually arbitrary); to refuse them as DynamoDB would: {where.format(mode='enforce')},"
                 f" or {tag}enforce.")
    return text.strip()


def _explain(entry: TableEntry, m: Meter, d: int, cause: str, unit: str) -> tuple[str, str]:
    member = ("ReadCapacityUnits", "WriteCapacityUnits")[d]
    gsi = f" (GlobalSecondaryIndexUpdates for {m.index})" if m.index else ""
    if cause == TABLE_RATE:
        rate = m.provisioned[d] if m.provisioned else 0
        return (f"{rate:g} provisioned {unit}/s and its burst capacity are spent",
                f"raise {member} with UpdateTable{gsi}")
    if cause == PARTITION_SHARE:
        rate = (m.provisioned[d] if m.provisioned else 0) / len(m.parts)
        return (f"classic model: each of {len(m.parts)} partitions gets {rate:g} {unit}/s and its burst is spent",
                f"raise {member} with UpdateTable{gsi}, spread the load over more partition keys, "
                "or use the adaptive model")
    if cause == KEY_RANGE:
        return (f"one partition sustains {('3000', '1000')[d]} {unit}/s (plus a {m.partition_burst:g} s burst)",
                "spread the load over more partition keys (a hot key stays capped; more capacity does not help)")
    if cause == ON_DEMAND_SCALING:
        return (f"the on-demand table serves up to {m.ceiling[d]:g} {unit}/s now (warm throughput, or twice its "
                "previous peak) and grows with sustained traffic",
                "raise WarmThroughput with UpdateTable, or ramp traffic up gradually")
    if cause == ON_DEMAND_MAX:
        return ("its OnDemandThroughput maximum is reached", "raise or remove OnDemandThroughput with UpdateTable")
    if cause == ACCOUNT_LIMIT:
        return ("the per-table on-demand quota is reached", "spread the load over more tables")
    if cause == GSI_BACKPRESSURE:
        return ("a global secondary index could not absorb the write", "give the index more write capacity")
    return cause, "see the per-partition figures"


def _hottest(entry: TableEntry, m: Meter, p: int) -> str | None:
    m.flush()
    keys = m.parts[p].keys if p < len(m.parts) else {}
    if not keys:
        return None
    pk, counts = max(keys.items(), key=lambda kv: kv[1][0] + kv[1][1])
    index = entry.table.indexes.get(m.index) if m.index else None
    kind = index.hash_kind if index is not None else entry.table.schema.hash_type
    return f"{show_key(kind, pk)} ({counts[0]:g} RCU, {counts[1]:g} WCU)"


def show_key(kind: str, pk_prefix: bytes) -> str:
    """A partition key value, from a key prefix token(8)|len(2)|bytes, as text (B: base64); a HASH tuple
    (kind "(S,N)", docs/behaviour/multikey-gsi.md §2) as its values in parentheses."""
    if kind.startswith("("):
        return show_tuple(kind, pk_prefix)
    raw = pk_prefix[10:]
    if kind == "B":
        return base64.b64encode(raw).decode()
    return raw.decode("utf-8", "replace")


__all__ = ["throttle_error", "note", "CLI_WHERE", "show_key", "LOG_INTERVAL", "ON_DEMAND_MAX", "GSI_BACKPRESSURE"]
