"""The figures the diagnosis engine reads: plain data per meter (a table or a GSI) and per partition.

They are filled from the capacity module's records (`diagnosis.collect`), or built by hand in
tests, so the engine is pure arithmetic over these classes and can be tested without a server.
Directions are "read" and "write"; units are DynamoDB's read/write capacity units.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dynalocal.capacity.modes import CAPACITY_SETTING, KIND

READ, WRITE = "read", "write"
DIRECTIONS = (READ, WRITE)

# Why a request was throttled (the capacity module records one of these per throttle event).
PARTITION_CEILING = "partition ceiling"  # a partition over 3,000 RCU / 1,000 WCU per second (KeyRange...)
PARTITION_SHARE = "partition share"  # classic model: a partition over its 1/N share of the provisioned rate
TABLE_RATE = "table rate"  # a provisioned table (or GSI) over its provisioned rate, burst spent
ON_DEMAND_MAXIMUM = "on-demand maximum"  # an on-demand table over its OnDemandThroughput maximum
ON_DEMAND_SCALING = "on-demand scaling"  # an on-demand table over what it has scaled to so far
TABLE_QUOTA = "table quota"  # an on-demand table over the per-table quota (40,000 units/s by default)
GSI_BACK_PRESSURE = "GSI back-pressure"  # a table write refused because a GSI could not take its part
# The capacity module's cause codes, by these names.
CAUSE_NAMES = {"key_range": PARTITION_CEILING, "table_rate": TABLE_RATE, "partition_share": PARTITION_SHARE,
               "on_demand_scaling": ON_DEMAND_SCALING, "on_demand_max": ON_DEMAND_MAXIMUM,
               "account_limit": TABLE_QUOTA, "gsi_backpressure": GSI_BACK_PRESSURE}
# Causes from a number the user chose (capacity.modes.KIND); GSI back-pressure is left out: it takes the
# kind of the index's own cause, which is counted beside it.
CAPACITY_CAUSES = tuple(name for code, name in CAUSE_NAMES.items()
                        if KIND[code] == CAPACITY_SETTING and name != GSI_BACK_PRESSURE)


@dataclass
class KeyFigures:
    """One partition-key value: exact units and requests since start (not decayed, not sampled)."""

    key: str
    units: float
    requests: int = 0


@dataclass
class PartitionFigures:
    """One partition of a table or GSI, for one direction."""

    number: int
    units: float  # consumed since start
    window_units: float  # consumed over the meter's window
    peak: float  # highest units in one second within the window
    ceiling: float  # what the partition sustains per second (3,000 RCU / 1,000 WCU)
    share: float | None = None  # classic model: its fixed share of the provisioned rate per second
    throttles: dict[str, int] = field(default_factory=dict)  # cause -> events since start
    burst_units: float = 0.0  # units over the window admitted only thanks to burst capacity
    keys: list[KeyFigures] = field(default_factory=list)  # busiest first (at least the top few)
    # per second of the window, oldest first: (units consumed, throttle events)
    series: list[tuple[float, int]] = field(default_factory=list)
    items: int = 0
    size_bytes: int = 0
    burst_seconds: float = 5.0  # seconds of its ceiling the partition holds as burst (--partition-burst-seconds)


@dataclass
class MeterFigures:
    """A table or one of its GSIs, for one direction: limits, burst and its partitions."""

    table: str
    index: str | None  # GSI name, None for the table itself (LSIs are counted in the table)
    direction: str  # READ or WRITE
    billing_mode: str  # PROVISIONED | PAY_PER_REQUEST
    model: str  # adaptive | classic
    limit: float | None  # units/s the table (or GSI) sustains: provisioned rate, on-demand max or scale
    limit_kind: str  # TABLE_RATE, ON_DEMAND_MAXIMUM or ON_DEMAND_SCALING: what `limit` is
    burst_balance: float | None  # units of burst left at table level (None: no table-level burst)
    window: float  # seconds the window figures cover
    elapsed: float  # seconds since the statistics started
    partitions: list[PartitionFigures] = field(default_factory=list)
    # cause -> events since start for the whole meter (some, like GSI back-pressure, belong to no
    # partition); None: the sum of the partitions'
    throttles: dict[str, int] | None = None
    # whether throttle events were refused (enforced): refused requests add to the demand; would-be
    # throttles (--throttling report) were admitted and are already in the units
    refused: bool = True

    @property
    def unit(self) -> str:
        if self.billing_mode == "PAY_PER_REQUEST":
            return "RRU" if self.direction == READ else "WRU"
        return "RCU" if self.direction == READ else "WCU"
