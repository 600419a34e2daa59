"""The throttling modes and the two kinds of throttle they tell apart (the one classification table).

A *key-design* throttle is a partition's limit: no setting changes it, and showing it is what
dynalocal is for. A *capacity-setting* throttle comes from a number the user chose (provisioned
rate, OnDemandThroughput maximum, warm throughput, account quota); in tests those numbers are
usually arbitrary (a 5/5 fixture table), so the default mode `keys` records such a throttle as a
*would-be* throttle instead of refusing it (capacity.md §8 of the spec digest).

    mode      key-design          capacity-setting
    keys      refused             recorded as would-be (the default)
    enforce   refused             refused
    report    recorded (would-be) recorded (would-be)
    off       nothing (no checks) nothing

A table's tag `dynalocal:throttling=<mode>` sets its mode; the server's `off` disables every
table's (so the seed loader, which loads with the server's mode off, is never throttled).
"""
from __future__ import annotations

from dynalocal.capacity.causes import (
    ACCOUNT_LIMIT,
    GSI_BACKPRESSURE,
    KEY_RANGE,
    ON_DEMAND_MAX,
    ON_DEMAND_SCALING,
    PARTITION_SHARE,
    TABLE_RATE,
)
from dynalocal.capacity.meter import Meter

MODES = ("keys", "enforce", "report", "off")
MODE_TAG = "dynalocal:throttling"
KEY_DESIGN, CAPACITY_SETTING = "key-design", "capacity-setting"

# Every throttle cause (capacity/causes.py) and its kind: the one classification table.
KIND = {
    KEY_RANGE: KEY_DESIGN,  # a partition's 3000 RCU / 1000 WCU ceiling (table or GSI): a hot key range
    # the classic model's 1/N share of the provisioned rate is its partitions' limit: what that
    # model exists to show, so it is enforced as key design (an uneven key spread hits it first)
    PARTITION_SHARE: KEY_DESIGN,
    TABLE_RATE: CAPACITY_SETTING,  # a provisioned table's or GSI's rate, burst spent
    ON_DEMAND_SCALING: CAPACITY_SETTING,  # on-demand warm throughput / 2x previous peak
    ON_DEMAND_MAX: CAPACITY_SETTING,  # OnDemandThroughput maximum of the table or GSI
    ACCOUNT_LIMIT: CAPACITY_SETTING,  # the per-table on-demand quota
    # GSI_BACKPRESSURE is recorded on the base table for a write a GSI refused; its kind is the
    # kind of the GSI's own cause (charge.refuse_gsi decides with that one)
    GSI_BACKPRESSURE: CAPACITY_SETTING,
}

WHAT = {  # the modes, in words (the report, the console, the log)
    "keys": "key-design throttles (partition and key-range ceilings) are refused; capacity-setting throttles "
            "(provisioned rates, on-demand maximums and scaling, the account quota) are recorded as would-be "
            "throttles, not refused",
    "enforce": "every throttle is refused, as DynamoDB would",
    "report": "nothing is refused; every throttle is recorded as a would-be throttle",
    "off": "throttling is off: nothing is checked or refused",
}


def table_mode(tags: dict[str, str], server_mode: str) -> str:
    """A table's mode: its `dynalocal:throttling` tag when valid, else the server's; the server's
    `off` wins over tags."""
    if server_mode == "off":
        return "off"
    tagged = tags.get(MODE_TAG)
    return tagged if tagged in MODES else server_mode


def refused(mode: str, cause: str) -> bool:
    """Whether a throttle of `cause` is refused (else recorded as a would-be throttle) in `mode`."""
    return mode == "enforce" or (mode == "keys" and KIND.get(cause) == KEY_DESIGN)


def key_design_refusal(m: Meter, d: int, p: int, now: float) -> str | None:
    """The key-design cause refusing a request on partition `p` of `m`, if any: the check behind
    a capacity-setting would-be throttle in `keys` mode (Meter.refusal stops at the first spent
    bucket, which is a table-level one there)."""
    for b in m.gates[d][p]:
        if KIND.get(b.cause or "") == KEY_DESIGN and b.available(now) <= 0:
            return b.cause
    return None


__all__ = ["MODES", "MODE_TAG", "KIND", "KEY_DESIGN", "CAPACITY_SETTING", "WHAT", "table_mode", "refused",
           "key_design_refusal"]
