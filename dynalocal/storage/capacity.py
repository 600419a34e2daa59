"""Capacity units as DynamoDB computes them: 4 KB read units, 1 KB write units."""
from __future__ import annotations

READ_UNIT = 4096
WRITE_UNIT = 1024


def read_units(size: int, consistent: bool) -> float:
    """Units to read `size` bytes (summed over items first for Query/Scan); at least one unit."""
    units = max(1, -(-size // READ_UNIT))
    return float(units) if consistent else units / 2


def write_units(size: int) -> float:
    """Units to write an item of `size` bytes; at least one unit."""
    return float(max(1, -(-size // WRITE_UNIT)))
