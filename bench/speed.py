"""How fast the server core runs Python right now: this VM's speed moves by up to 3x within minutes.

On the project's 2-core VM a fixed Python loop ran 3.0-9.4 million iterations per second on one core
within an hour, with the host's steal time near 0 throughout (the host's other tenants share caches
and clocks without taking the vCPU away), so steal time alone does not tell a slow moment. The
benchmark probes the server core before and after every run, prints the speed with the run, waits
briefly for a fast moment before each (`settle`), and reports the spread: ratios between runs at
different speeds are not comparisons of the servers.
"""
from __future__ import annotations

import os
import time

PROBE_SECONDS = 0.1
SETTLE_SHARE = 0.8  # a run starts once the core runs at this share of the fastest probe seen
SETTLE_SECONDS = 5.0  # ... or after this long, whatever the speed


def probe(core: int, seconds: float = PROBE_SECONDS) -> float:
    """Million loop iterations per second of this process on `core` (on all cores where it cannot pin)."""
    pin = hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > core
    before = os.sched_getaffinity(0) if pin else set()
    if pin:
        os.sched_setaffinity(0, {core})
    try:
        clock = time.perf_counter
        start = clock()
        end = start + seconds
        n = 0
        while clock() < end:
            n += 1
        return n / (clock() - start) / 1e6
    finally:
        if pin:
            os.sched_setaffinity(0, before)


class Gauge:
    """The probes of one benchmark: the fastest seen so far."""

    def __init__(self, core: int) -> None:
        self.core = core
        self.best = 0.0

    def read(self) -> float:
        speed = probe(self.core)
        self.best = max(self.best, speed)
        return speed

    def settle(self) -> float:
        """Probe until the core runs at SETTLE_SHARE of the best speed seen (at most SETTLE_SECONDS);
        return the last reading."""
        deadline = time.perf_counter() + SETTLE_SECONDS
        speed = self.read()
        while speed < SETTLE_SHARE * self.best and time.perf_counter() < deadline:
            time.sleep(0.25)
            speed = self.read()
        return speed
