"""The server's cycle-collection policy (dynalocal.http.collector): survivors frozen, cyclic garbage swept."""
from __future__ import annotations

import gc
import threading
import time
import weakref

from dynalocal.http import collector


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cycle collector frees it


def test_survivors_of_an_older_collection_are_frozen_and_a_sweep_frees_frozen_cycles():
    uninstall = collector.install(sweep_seconds=3600)
    try:
        long_lived = [list(range(1000)) for _ in range(10)]
        garbage = Node()
        dead = weakref.ref(garbage)
        gc.collect(1)  # garbage is still referenced: it survives and is frozen with the rest
        assert gc.get_freeze_count() > 0
        assert gc.is_tracked(long_lived)
        del garbage
        gc.collect()  # a frozen cycle is invisible to collections...
        assert dead() is not None
        collector.sweep()  # ...until a sweep unfreezes, collects and freezes again
        assert dead() is None
        assert gc.get_freeze_count() > 0
    finally:
        uninstall()
    assert gc.get_freeze_count() == 0 and collector._freeze_survivors not in gc.callbacks


class Spinner:
    """A thread keeping the process busy (using a core) until stopped."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def _spin(self) -> None:
        while not self.done.is_set():
            sum(range(1000))

    def __enter__(self) -> Spinner:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def _frozen_cycle() -> weakref.ref:
    """A cyclic garbage object that only a sweep can free (frozen while still referenced)."""
    garbage = Node()
    dead = weakref.ref(garbage)
    gc.collect(1)
    del garbage
    gc.collect()
    assert dead() is not None
    return dead


def _wait(condition, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_idle_tells_a_busy_process_from_an_idle_one():
    stop = threading.Event()
    assert collector.idle(stop, 0.2)
    with Spinner():
        assert not collector.idle(stop, 0.2)
    stop.set()
    assert not collector.idle(stop, 0.2)  # stopping: never idle, at once


def test_a_due_sweep_waits_for_an_idle_moment():
    uninstall = collector.install(sweep_seconds=0.05, max_defer=3600, window=0.1)
    try:
        dead = _frozen_cycle()
        with Spinner():
            for _ in range(10):  # due all along, but the process is busy: no sweep (no 100 ms stall under load)
                assert not collector.idle(threading.Event(), 0.1)
                assert dead() is not None
        assert _wait(lambda: dead() is None)  # idle again: swept
    finally:
        uninstall()


def test_a_sweep_put_off_by_constant_load_runs_after_max_defer():
    uninstall = collector.install(sweep_seconds=0.05, max_defer=0.3, window=0.1)
    try:
        dead = _frozen_cycle()
        with Spinner():
            assert _wait(lambda: dead() is None)
    finally:
        uninstall()
