"""storage.merge: merging by columns builds the same leaf, byte for byte, as merging run by run."""
from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.storage.leaf import COLUMN, EMPTY, Leaf, merged_runs
from dynalocal.storage.merge import COLUMNS_FROM, merged, merged_columns

# short keys (heads zero-padded, many shared) and stored-like ones (an 8-byte token first)
KEY = st.one_of(st.binary(max_size=5), st.binary(min_size=8, max_size=12))
RECORD = st.tuples(st.binary(max_size=12), st.integers(0, 400_000))


def buffers(leaf: Leaf) -> tuple:
    return (leaf.keys, leaf.ko.tobytes(), leaf.heads.tobytes(), leaf.body, leaf.bo.tobytes(), leaf.sizes.tobytes())


@st.composite
def leaf_and_changes(draw: st.DrawFn) -> tuple[Leaf, list]:
    items = draw(st.dictionaries(KEY, RECORD, max_size=60))
    keys = sorted(items)
    leaf = Leaf.of(keys, [items[k][0] for k in keys], array(COLUMN, [items[k][1] for k in keys])) if keys else EMPTY
    # changes: new keys, and puts over or deletes of the leaf's own keys
    changes = draw(st.dictionaries(KEY, st.one_of(st.none(), RECORD), max_size=40))
    for key in draw(st.lists(st.sampled_from(keys), max_size=20)) if keys else []:
        changes[key] = draw(st.one_of(st.none(), RECORD))
    return leaf, sorted(changes.items())


@settings(max_examples=400, deadline=None)
@given(leaf_and_changes())
def test_columns_build_the_leaf_runs_build(case: tuple[Leaf, list]) -> None:
    leaf, changes = case
    expected = merged_runs(leaf, changes)
    assert buffers(merged_columns(leaf, changes)) == buffers(expected)
    assert buffers(merged(leaf, changes)) == buffers(expected)


def test_many_changes_take_the_columns_and_a_few_the_runs(monkeypatch) -> None:
    from dynalocal.storage import merge
    taken = []
    monkeypatch.setattr(merge, "merged_columns", lambda leaf, changes: taken.append("columns") or leaf)
    monkeypatch.setattr(merge, "merged_runs", lambda leaf, changes: taken.append("runs") or leaf)
    few = [(bytes([i]) * 8, (b"{}", 3)) for i in range(COLUMNS_FROM - 1)]
    many = [(bytes([i]) * 8, (b"{}", 3)) for i in range(COLUMNS_FROM)]
    merge.merged(EMPTY, few)
    merge.merged(EMPTY, many)
    assert taken == ["runs", "columns"]


def test_deleting_every_item_leaves_an_empty_leaf() -> None:
    keys = [bytes([i]) * 8 for i in range(20)]
    leaf = Leaf.of(keys, [b'{"a":1}'] * 20, array(COLUMN, [5] * 20))
    out = merged_columns(leaf, [(key, None) for key in keys])
    assert len(out) == 0 and buffers(out) == buffers(merged_runs(leaf, [(key, None) for key in keys]))
