"""Capacity units as DynamoDB computes them: 4 KB read units, 1 KB write units."""
from __future__ import annotations

READ_UNIT = 4096
WRITE_UNIT = 1024
CEILING = (3000.0, 1000.0)  # units one partition sustains per second: (read, write)


def read_units(size: int, consistent: bool) -> float:
    """Units to read `size` bytes (summed over items first for Query/Scan); at least one unit."""
    units = (size + READ_UNIT - 1) // READ_UNIT or 1
    return units * 1.0 if consistent else units * 0.5


def write_units(size: int) -> float:
    """Units to write an item of `size` bytes; at least one unit."""
    return ((size + WRITE_UNIT - 1) // WRITE_UNIT or 1) * 1.0
