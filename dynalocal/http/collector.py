"""Cycle collection for a server that holds millions of long-lived objects: keep them out of the collector.

A table's items are bytes (untracked), but its partitions' ordered leaves are lists of thousands of
keys and records, and a cycle collection visits every element of every tracked list: with 300k items
a full (generation 2) collection stalled the loop for ~100 ms, a generation 1 for ~30 ms
(`bench/gc_pauses.py`). What survives a generation 1 collection is long-lived by then, so it is frozen
(`gc.freeze`, O(1)): later collections walk only young objects. Freezing hides cyclic garbage that was
long-lived from the collector, so a sweep (unfreeze, collect, freeze) runs every `sweep_seconds` on a
daemon thread; garbage without cycles (deleted items, closed connections' buffers) is freed by
reference counting either way. Installed by the `dynalocal` command only, not in-process servers.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Callable

SWEEP_SECONDS = 600.0  # one full collection per 10 minutes: bounded cyclic garbage, a rare stall


def _freeze_survivors(phase: str, info: dict[str, int]) -> None:
    """gc callback: after a collection of generation 1 or 2, freeze everything that survived it."""
    if phase == "stop" and info["generation"] >= 1:
        gc.freeze()


def sweep() -> int:
    """A full collection over every object, frozen ones included; what survives is frozen again."""
    gc.unfreeze()
    found = gc.collect()
    gc.freeze()
    return found


def install(sweep_seconds: float = SWEEP_SECONDS) -> Callable[[], None]:
    """Freeze collection survivors from now on and sweep periodically; returns the function undoing it."""
    gc.callbacks.append(_freeze_survivors)
    stop = threading.Event()

    def sweeper() -> None:
        while not stop.wait(sweep_seconds):
            sweep()

    threading.Thread(target=sweeper, name="dynalocal-gc-sweep", daemon=True).start()

    def uninstall() -> None:
        stop.set()
        if _freeze_survivors in gc.callbacks:
            gc.callbacks.remove(_freeze_survivors)
        gc.unfreeze()

    return uninstall
