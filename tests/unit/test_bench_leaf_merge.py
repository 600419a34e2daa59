"""bench/leaf_merge.py measures what it names: each merge puts FOLD new keys into a leaf of 512-1,023
items, and the result is that leaf's items and the new ones, in key order."""
from __future__ import annotations

import importlib.util
import random
from pathlib import Path

from dynalocal.storage.merge import merged
from dynalocal.storage.partition import FOLD

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "leaf_merge.py"


def _load():
    spec = importlib.util.spec_from_file_location("leaf_merge", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_merge_adds_fold_new_keys_in_order() -> None:
    bench = _load()
    rng = random.Random(3)
    for _ in range(5):
        leaf, changes = bench._leaf(rng), bench._changes(rng)
        assert 512 <= len(leaf) < 1024
        out = merged(leaf, changes)
        keys = out.key_list()
        assert len(out) == len(leaf) + FOLD and keys == sorted(keys)
        assert set(keys) == set(leaf.key_list()) | {key for key, _ in changes}
        assert all(out.blob(i) == bench.BLOB for i in range(len(out)))
        assert list(out.sizes) == [bench.SIZE] * len(out)
