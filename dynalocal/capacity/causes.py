"""Directions and throttle causes: what a charge is (read or write) and why a request was throttled.

Shared by the meters (capacity/meter.py, capacity/partition_meter.py), the throttling modes
(capacity/modes.py, which classifies every cause) and the throttle answers (capacity/throttle.py).
"""
from __future__ import annotations

READ, WRITE = 0, 1
DIRECTIONS = ("read", "write")

# Why a request was throttled (recorded per meter and partition; see WIRE_REASON).
KEY_RANGE = "key_range"  # a partition's ceiling (hot key range)
TABLE_RATE = "table_rate"  # a provisioned table's (or GSI's) rate and burst spent
PARTITION_SHARE = "partition_share"  # classic model: the partition's 1/N share spent
ON_DEMAND_SCALING = "on_demand_scaling"  # above 2x the previous peak of an on-demand table
ON_DEMAND_MAX = "on_demand_max"  # the table's OnDemandThroughput maximum
ACCOUNT_LIMIT = "account_limit"  # the per-table on-demand quota
GSI_BACKPRESSURE = "gsi_backpressure"  # on a base table: a GSI could not take the write

# The LimitType of the wire's ThrottlingReasons. AWS throttles on-demand tables growing past
# twice their peak at the partitions that have not split yet: a key-range reason.
WIRE_REASON = {KEY_RANGE: "KeyRangeThroughputExceeded", TABLE_RATE: "ProvisionedThroughputExceeded",
               PARTITION_SHARE: "ProvisionedThroughputExceeded", ON_DEMAND_SCALING: "KeyRangeThroughputExceeded",
               ON_DEMAND_MAX: "MaxOnDemandThroughputExceeded", ACCOUNT_LIMIT: "AccountLimitExceeded"}
