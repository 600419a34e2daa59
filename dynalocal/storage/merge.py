"""Merging a leaf's pending changes into a new leaf: run by run for a few changes, by columns for many.

`merged` is what a partition calls when a leaf folds its changes (storage.partition: FOLD at a time,
or the few an ordered read finds). Both ways build the same leaf, byte for byte
(tests/unit/test_leaf_merge_paths.py):

- `leaf.merged_runs`, a Python loop over the changes that copies the runs between them, each run's
  offsets shifted in C. Its cost is per change (two shifts, four slices, six appends: ~3 µs), so it
  is kept for folds of fewer than COLUMNS_FROM changes, where its fixed cost is the lower one.
- `merged_columns`: the changes' positions are found by one `searchsorted` over the leaf's heads, the
  new offsets are one cumulative sum over the item lengths, and the key and body buffers are joined
  from slices made by `map` in C. Python work per change is a few list items; the rest is numpy calls
  (~20 µs whatever the count). `bench/leaf_merge.py`, 128 new keys into 512-1,023 items, cold: 135
  against 370-390 µs (docs/performance.md, *The packed store*).

Invariants of the result are a leaf's (storage.leaf): keys sorted and distinct, ko and bo the running
lengths from 0, heads each key's first four bytes.
"""
from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from dynalocal.storage.leaf import COLUMN, Leaf, Offsets, Record, heads_of, merged_runs

COLUMNS_FROM = 8  # changes from which merging by columns is the cheaper way (measured: equal at 8)
_U32 = "uint32"  # the dtype of array(COLUMN)
# numpy, imported by the first merge by columns: a server that never folds many changes (a test's
# fixture) starts ~30 ms sooner and ~12 MB smaller without it
np: Any = None
_COMMA = b","
_first, _second = itemgetter(0), itemgetter(1)
Changes = Sequence[tuple[bytes, Record | None]]


def merged(leaf: Leaf, changes: Changes) -> Leaf:
    """`leaf` with sorted, distinct changes applied: a record puts (or replaces) its key, None deletes it."""
    if len(changes) < COLUMNS_FROM:
        return merged_runs(leaf, changes)
    return merged_columns(leaf, changes)


def _column(values: Any) -> Offsets:
    """A numpy column as the array(COLUMN) a leaf keeps."""
    out = array(COLUMN)
    out.frombytes(values.astype(_U32, copy=False).tobytes())
    return out


def _positions(leaf: Leaf, keys: list[bytes], heads: Any) -> tuple[Any, Any, int]:
    """(where each change goes in the leaf: the index of the first key >= it; 1 where the leaf holds the
    key itself, else 0; how many it holds). Whole keys are compared only where the four bytes match."""
    n = len(leaf.sizes)
    leaf_heads = np.frombuffer(leaf.heads, _U32)
    pos = np.searchsorted(leaf_heads, heads)
    found = np.zeros(len(keys), np.intp)
    if not n:
        return pos, found, 0
    shared = np.flatnonzero(leaf_heads.take(pos, mode="clip") == heads).tolist()
    count = 0
    for i in shared:  # an overwrite or a delete, or a key sharing its four bytes with one of the leaf's
        pos[i] = at = leaf.find(keys[i])
        if at < n and leaf.key(at) == keys[i]:
            found[i] = 1
            count += 1
    return pos, found, count


def _import_numpy() -> None:
    global np
    import numpy
    np = numpy


def _offsets(lengths: Any) -> Offsets:
    """The offsets column of these lengths: 0, then their running sums."""
    out = np.zeros(len(lengths) + 1, _U32)
    np.cumsum(lengths, dtype=_U32, out=out[1:])
    return _column(out)


def merged_columns(leaf: Leaf, changes: Changes) -> Leaf:
    """`merged` by columns (see the module's docstring)."""
    if np is None:
        _import_numpy()
    keys = list(map(_first, changes))
    records = list(map(_second, changes))
    heads = np.frombuffer(heads_of(keys), _U32)
    pos, found, count = _positions(leaf, keys, heads)
    if None in records:  # deletes: no key, blob or comma of their own
        live = [i for i, r in enumerate(records) if r is not None]
        slot_keys = [key if r is not None else b"" for key, r in changes]
        blobs = [r[0] if r is not None else b"" for r in records]
        commas = [_COMMA if r is not None else b"" for r in records]
        puts = [records[i] for i in live]
        put_keys = [keys[i] for i in live]
        if not puts and not count:
            return leaf
    else:
        live = None
        slot_keys = put_keys = keys
        puts = records
        blobs = list(map(_first, records))
        commas = [_COMMA] * len(changes)
    ko, bo = np.frombuffer(leaf.ko, _U32), np.frombuffer(leaf.bo, _U32)
    key_buffer, body_buffer = _buffers(leaf, ko, bo, pos, pos + found if count else pos, slot_keys, blobs, commas)
    columns = [np.frombuffer(leaf.heads, _U32), np.frombuffer(leaf.sizes, _U32), np.diff(ko), np.diff(bo)]
    if count:  # the leaf's items the changes replace or delete are dropped; the others keep their order
        keep = np.ones(len(leaf.sizes), bool)
        keep[pos[found.astype(bool)]] = False
        columns = [column[keep] for column in columns]
        pos = pos - np.cumsum(found) + found  # the leaf's kept items before each change
    if puts:
        if live is not None:
            pos, heads = pos[live], heads[live]
        new = [heads, list(map(_second, puts)), list(map(len, put_keys)), [len(r[0]) + 1 for r in puts]]
        columns = _inserted(columns, pos, new)
    out_heads, out_sizes, key_lengths, body_lengths = columns
    return Leaf(key_buffer, _offsets(key_lengths), _column(out_heads), body_buffer, _offsets(body_lengths),
                _column(out_sizes))


def _buffers(leaf: Leaf, ko: Any, bo: Any, starts: Any, ends: Any, slot_keys: list[bytes], blobs: list[bytes],
             commas: list[bytes]) -> tuple[bytes, bytes]:
    """The new keys and body buffers: the leaf's runs between changes (views, made in C), each change's
    key, blob and comma (b"" for a delete) between them. `ko`/`bo`: the leaf's offsets as numpy views;
    `starts`/`ends`: the leaf index where each change begins and the one after it (after its replaced
    item, if any)."""
    kstart, bstart = ko[starts].tolist(), bo[starts].tolist()
    kend, bend = ko[ends].tolist(), bo[ends].tolist()
    kend.insert(0, 0)
    bend.insert(0, 0)
    kstart.append(len(leaf.keys))
    bstart.append(len(leaf.body))
    kview, bview = memoryview(leaf.keys), memoryview(leaf.body)
    m = len(slot_keys)
    key_parts: list[Any] = [None] * (2 * m + 1)
    key_parts[0::2] = map(kview.__getitem__, map(slice, kend, kstart))
    key_parts[1::2] = slot_keys
    body_parts: list[Any] = [None] * (3 * m + 1)
    body_parts[0::3] = map(bview.__getitem__, map(slice, bend, bstart))
    body_parts[1::3] = blobs
    body_parts[2::3] = commas
    return b"".join(key_parts), b"".join(body_parts)


def _inserted(columns: list[Any], pos: Any, new: list[Any]) -> list[Any]:
    """Each column with the new entries inserted before the kept item each `pos` counts (pos sorted)."""
    total = len(columns[0]) + len(pos)
    at = pos + np.arange(len(pos))
    old = np.ones(total, bool)
    old[at] = False
    out = []
    for column, values in zip(columns, new):
        merged_column = np.empty(total, _U32)
        merged_column[at] = values
        merged_column[old] = column
        out.append(merged_column)
    return out
