"""Numbers for people: three significant figures with thousands separators (exact values stay in JSON)."""
from __future__ import annotations

import math


def num(x: float) -> str:
    """`x` to three significant figures: 698.085 -> '698', 4.86667 -> '4.87', 12345 -> '12,300'."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = 2 - math.floor(math.log10(abs(x)))
    rounded = round(x, digits)
    if digits <= 0:
        return f"{int(rounded):,}"
    text = f"{rounded:,.{digits}f}".rstrip("0").rstrip(".")
    return text


def percent(x: float) -> str:
    """A share (0..1) as a percentage to three significant figures: 0.978 -> '97.8%', 0.001 -> '0.1%'."""
    return num(100 * x) + "%"
