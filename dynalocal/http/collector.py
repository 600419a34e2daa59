"""Cycle collection for a server that holds millions of long-lived objects: keep them out of the collector.

A table's items are bytes (untracked), but its partitions' ordered leaves are lists of thousands of
keys and records, and a cycle collection visits every element of every tracked list: with 300k items
a full (generation 2) collection stalled the loop for ~100 ms, a generation 1 for ~30 ms
(`bench/gc_pauses.py`). What survives a generation 1 collection is long-lived by then, so it is frozen
(`gc.freeze`, O(1)): later collections walk only young objects. Freezing hides cyclic garbage that was
long-lived from the collector, so a sweep (unfreeze, collect, freeze) runs every `sweep_seconds` on a
daemon thread; garbage without cycles (deleted items, closed connections' buffers) is freed by
reference counting either way. Installed by the `dynalocal` command only, not in-process servers.

A sweep still walks every item reference in the partitions' dicts and leaves, frozen or not: 90-230 ms
after 600k PutItems in process, and p99s of 65-186 ms in the one benchmark round that met each server's
10-minute sweep. So a due sweep waits for a moment when the process is idle (at most IDLE_SHARE of a
core for IDLE_WINDOW): a local server is idle most of the time, and under constant load the sweep runs
anyway once MAX_DEFER has passed, bounding the cyclic garbage kept meanwhile.
"""
from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

SWEEP_SECONDS = 600.0  # one full collection per 10 minutes (once idle): bounded cyclic garbage
IDLE_WINDOW = 0.5  # seconds over which the process's CPU time tells whether it is idle
IDLE_SHARE = 0.05  # a window in which the process used at most this share of one core is idle
MAX_DEFER = 3600.0  # a sweep put off this long by constant load runs anyway


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


def idle(stop: threading.Event, window: float = IDLE_WINDOW) -> bool:
    """Whether the whole process (every thread) used at most IDLE_SHARE of a core over the next `window`
    seconds; False at once when `stop` is set."""
    used = time.process_time()
    if stop.wait(window):
        return False
    return time.process_time() - used <= IDLE_SHARE * window


def install(sweep_seconds: float = SWEEP_SECONDS, max_defer: float = MAX_DEFER,
            window: float = IDLE_WINDOW) -> Callable[[], None]:
    """Freeze collection survivors from now on and sweep every `sweep_seconds` at the first idle moment
    (or once `max_defer` later); returns the function undoing it."""
    gc.callbacks.append(_freeze_survivors)
    stop = threading.Event()

    def sweeper() -> None:
        while not stop.wait(sweep_seconds):
            overdue = time.monotonic() + max_defer
            while not idle(stop, window) and time.monotonic() < overdue and not stop.is_set():
                pass  # busy: look again over the next window
            if stop.is_set():
                return
            sweep()

    threading.Thread(target=sweeper, name="dynalocal-gc-sweep", daemon=True).start()

    def uninstall() -> None:
        stop.set()
        if _freeze_survivors in gc.callbacks:
            gc.callbacks.remove(_freeze_survivors)
        gc.unfreeze()

    return uninstall
