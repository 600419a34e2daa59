"""The server's cycle-collection policy (dynalocal.http.collector): survivors frozen, cyclic garbage swept."""
from __future__ import annotations

import gc
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
