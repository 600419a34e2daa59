"""Capacity in one place: units, buckets, meters, the throttle decision, records and reports.

Modules: `units` (RCU/WCU arithmetic), `bucket` (token buckets), `causes` (directions and throttle
causes), `meter` (one table's or GSI's buckets, records and on-demand growth), `partition_meter` (one
partition's buckets, records and counted keys), `registry` (all meters of a server,
partition counts, the throttle log), `charge` (one request's admission; the pricing of each
operation from the sizes it read and wrote, docs/behaviour/capacity.md §1, so handlers never
compute units; its charges and its ConsumedCapacity), `throttle` (the throttle errors and their reasons) and
`report` (the read API for diagnosis). The model is described in `meter`; the read API's
contract in `report`. Outside this package only storage/index.py prices units: what each index
entry write owes, handed to the Charge as `owed`.

Only the unit functions are re-exported here, so that storage modules importing them do not
pull in the rest (which imports storage modules itself).
"""
from dynalocal.capacity.units import READ_UNIT, WRITE_UNIT, read_units, write_units

__all__ = ["READ_UNIT", "WRITE_UNIT", "read_units", "write_units"]
