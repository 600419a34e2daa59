"""Vector indexes: each index's vectors as contiguous float32 rows per HASH value, kept exact by a
Table listener, and an exact top-K search over one group (docs/behaviour/vectors.md).

A group is one HASH value of the index's SearchSchema (or the whole index without a HASH
element): a (capacity x dimensions) float32 array, the squared norm of each row, and per row
the table key and the INLINE_FILTER values. Rows stay dense: a removed row is filled with the
last one, and the array shrinks when a quarter full, so deletes and updates never make it grow.
"""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable

# Requests are served one at a time on one thread: a matrix-vector product split over BLAS threads
# only waits for them (10x slower on a busy 2-core machine). Set before numpy loads, unless the user chose.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402, I001  (after the thread settings above)
import orjson  # noqa: E402

from dynalocal.storage.mutation import Mutation  # noqa: E402
from dynalocal.storage.table import Table  # noqa: E402
from dynalocal.values.attributes import item_size  # noqa: E402

MIN_WRITE_BYTES = 1024  # the approximate VectorWriteRequestBytes floor (docs/behaviour/vectors.md §5)
_GROWTH = 1.25  # small growth keeps the array within ~1.25x the vectors' raw size


class Group:
    """The rows of one HASH value: vectors, squared norms, table keys and inline-filter values."""

    __slots__ = ("vectors", "norms", "keys", "filters", "count")

    def __init__(self, dimensions: int) -> None:
        self.vectors = np.empty((8, dimensions), dtype=np.float32)
        self.norms = np.empty(8, dtype=np.float64)
        self.keys: list[bytes] = []
        self.filters: list[tuple] = []
        self.count = 0

    def add(self, key: bytes, vector: np.ndarray, filters: tuple) -> int:
        """Append a row; return its number."""
        row = self.count
        if row == len(self.vectors):
            self._resize(max(row + 8, int(row * _GROWTH)))
        self.vectors[row] = vector
        self.norms[row] = float(np.dot(vector.astype(np.float64), vector.astype(np.float64)))
        self.keys.append(key)
        self.filters.append(filters)
        self.count = row + 1
        return row

    def remove(self, row: int) -> bytes | None:
        """Drop a row, moving the last one into it; return the moved row's key (None if none moved)."""
        last = self.count - 1
        moved = None
        if row != last:
            self.vectors[row] = self.vectors[last]
            self.norms[row] = self.norms[last]
            self.keys[row] = moved = self.keys[last]
            self.filters[row] = self.filters[last]
        self.keys.pop()
        self.filters.pop()
        self.count = last
        if len(self.vectors) > 32 and last < len(self.vectors) // 4:
            self._resize(max(8, last * 2))
        return moved

    def _resize(self, capacity: int) -> None:
        vectors = np.empty((capacity, self.vectors.shape[1]), dtype=np.float32)
        norms = np.empty(capacity, dtype=np.float64)
        vectors[:self.count] = self.vectors[:self.count]
        norms[:self.count] = self.norms[:self.count]
        self.vectors, self.norms = vectors, norms

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes + self.norms.nbytes


class VectorIndex:
    """One vector index of a table: its definition's facts and its groups of rows."""

    def __init__(self, spec: dict, types: dict[str, str], table_names: tuple[str, ...]) -> None:
        self.name: str = spec["IndexName"]
        self.attribute: str = spec["VectorAttribute"]["AttributeName"]
        self.dimensions: int = spec["Dimensions"]
        self.metric: str = spec["DistanceFunction"]
        schema = spec.get("SearchSchema") or ()
        hashes = [e["AttributeName"] for e in schema if e["SearchSchemaElementType"] == "HASH"]
        self.hash: str | None = hashes[0] if hashes else None
        self.hash_type: str | None = types.get(self.hash) if self.hash is not None else None
        self.filters: tuple[tuple[str, str], ...] = tuple(
            (e["AttributeName"], types[e["AttributeName"]]) for e in schema
            if e["SearchSchemaElementType"] == "INLINE_FILTER")
        self.typed = tuple((n, t) for n, t in ((self.hash, self.hash_type), *self.filters) if n is not None)
        projection = spec["Projection"]
        kind = projection.get("ProjectionType", "ALL")
        keys = tuple(dict.fromkeys((*table_names, *(n for n, _ in self.typed))))
        # the attributes an entry holds (None: all); the vector attribute only when asked for
        extra = tuple(projection.get("NonKeyAttributes") or ()) if kind == "INCLUDE" else ()
        self.projected: frozenset[str] | None = None if kind == "ALL" else frozenset(
            (*keys, self.attribute, *extra))
        self.groups: dict[object, Group] = {}
        self.rows: dict[bytes, tuple[object, int]] = {}  # table key -> (group, row)
        # under --vector-index-lag-ms: writes not yet visible, (due time, table key, new item), oldest first
        self.pending: deque[tuple[float, bytes, dict | None]] = deque()
        # and for each key with queued writes, the item as the index still sees it and how many are queued
        self.held: dict[bytes, tuple[dict | None, int]] = {}
        # search results as shown without the vector, with their size: decoding a result's item (its
        # vector's hundreds of numbers) was a third of a search; an entry goes when its key is written
        self.shown: dict[bytes, tuple[dict, int]] = {}

    @property
    def item_count(self) -> int:
        return len(self.rows)

    @property
    def size_bytes(self) -> int:
        return len(self.rows) * self.dimensions * 4

    @property
    def nbytes(self) -> int:
        """Memory of the arrays (for the benchmark's bytes per vector)."""
        return sum(g.nbytes for g in self.groups.values())

    def entry(self, item: dict | None, cache: dict | None = None) -> tuple[object, np.ndarray, tuple] | None:
        """(group, float32 vector, filter values) of an item, or None when it is not indexed
        (no vector, or no HASH value); the item has passed `check_item`. `cache` (attribute ->
        vector) shares one item's parsed vector between indexes on the same attribute."""
        if item is None:
            return None
        av = item.get(self.attribute)
        if av is None or "L" not in av:
            return None
        group = None
        if self.hash is not None:
            h = item.get(self.hash)
            if h is None:
                return None
            group = next(iter(h.values()))
        vector = cache.get(self.attribute) if cache is not None else None
        if vector is None:
            elements = av["L"]
            vector = np.fromiter((float(e["N"]) for e in elements), np.float64, len(elements)).astype(np.float32)
            if cache is not None:
                cache[self.attribute] = vector
        filters = tuple(_plain(item.get(n)) for n, _ in self.filters)
        return group, vector, filters

    def remove(self, key: bytes) -> bool:
        self.shown.pop(key, None)
        at = self.rows.pop(key, None)
        if at is None:
            return False
        group = self.groups[at[0]]
        moved = group.remove(at[1])
        if moved is not None:
            self.rows[moved] = (at[0], at[1])
        if group.count == 0:
            del self.groups[at[0]]
        return True

    def put(self, key: bytes, item: dict | None, cache: dict | None = None) -> bool:
        """Make the key's row match the item (added, replaced or removed); whether anything was indexed."""
        found = self.entry(item, cache)
        self.remove(key)
        if found is None:
            return False
        group_key, vector, filters = found
        group = self.groups.get(group_key)
        if group is None:
            group = self.groups[group_key] = Group(self.dimensions)
        self.rows[key] = (group_key, group.add(key, vector, filters))
        return True

    def defer(self, due: float, key: bytes, old_item: dict | None, new_item: dict | None,
              cache: dict | None = None) -> float | None:
        """Queue a write to become visible at `due` (the lag); its approximate VectorWriteRequestBytes,
        or None when neither item is indexed (nothing to replicate)."""
        indexed = self.entry(new_item, cache) is not None
        if not indexed and self.entry(old_item) is None:
            return None
        self.pending.append((due, key, new_item))
        self.shown.pop(key, None)
        seen, queued = self.held.get(key, (old_item, 0))
        self.held[key] = (seen, queued + 1)
        return self.write_bytes(new_item if indexed else None)

    def catch_up(self, now: float) -> None:
        """Apply the queued writes that are due at `now`, in write order."""
        pending = self.pending
        while pending and pending[0][0] <= now:
            _, key, item = pending.popleft()
            self.put(key, item)
            queued = self.held[key][1] - 1
            if queued:
                self.held[key] = (item, queued)
            else:
                del self.held[key]

    def item(self, table: Table, key: bytes) -> dict | None:
        """The item of an indexed key as the index sees it (the table's, unless writes are queued)."""
        held = self.held.get(key)
        if held is not None:
            return held[0]
        record = table.get(key)
        return orjson.loads(record[0]) if record is not None else None

    def result(self, table: Table, key: bytes) -> tuple[dict, int] | None:
        """The item of an indexed key as a search result shows it without the vector (projected), and
        its size; decoded once and kept until the key is written (`shown`, at most SHOWN_MAX entries)."""
        found = self.shown.get(key)
        if found is None:
            item = self.item(table, key)
            if item is None:
                return None
            projected, vector = self.projected, self.attribute
            visible = {k: v for k, v in item.items() if k != vector and (projected is None or k in projected)}
            found = (visible, item_size(visible))
            if len(self.shown) >= SHOWN_MAX:
                self.shown.clear()
            self.shown[key] = found
        return found

    def write_bytes(self, item: dict | None) -> float:
        """Approximate VectorWriteRequestBytes of indexing the item (docs/behaviour/vectors.md §5)."""
        if item is None:
            return float(max(MIN_WRITE_BYTES, self.dimensions * 4))
        projected = item if self.projected is None else {k: v for k, v in item.items() if k in self.projected}
        others = {k: v for k, v in projected.items() if k != self.attribute}
        return float(max(MIN_WRITE_BYTES, self.dimensions * 4 + item_size(others)))

    def search(self, group_key: object, query: np.ndarray, k: int,
               filters: dict[int, object]) -> tuple[list[tuple[bytes, float]], int]:
        """The exact top-k (table key, score) of one group, best first, among the rows whose inline
        filters equal `filters` (position -> value); and the number of rows examined."""
        group = self.groups.get(group_key)
        if group is None or group.count == 0:
            return [], 0
        n = group.count
        vectors = group.vectors[:n]
        rows: np.ndarray | None = None
        if filters:
            rows = np.fromiter((i for i, f in enumerate(group.filters)
                                if all(f[p] == v for p, v in filters.items())), dtype=np.int64)
            if len(rows) == 0:
                return [], n
            vectors = vectors[rows]
        approx = _scores(self.metric, vectors, group.norms[:n] if rows is None else group.norms[rows], query)
        m = len(approx)
        want = min(m, 4 * k + 16)  # candidates by the fast float32 formula, then ranked exactly
        candidates = np.argpartition(approx, want - 1)[:want] if want < m else np.arange(m)
        exact = _exact(self.metric, vectors[candidates], query).tolist()
        keys = group.keys
        scored = [(exact[i], keys[int(c) if rows is None else int(rows[c])]) for i, c in enumerate(candidates)]
        scored.sort()  # ties in table-key order: the same answer before and after a restart
        found = [(key, score) for score, key in scored[:k]]
        if self.metric == "DOT_PRODUCT":
            found = [(key, -score) for key, score in found]
        return found, n


SHOWN_MAX = 4096  # cached search results per index (VectorIndex.result)


def _plain(av: dict | None) -> object:
    """A filter or HASH value as compared for equality (the value string; None when absent)."""
    return None if av is None else next(iter(av.values()))


def _scores(metric: str, vectors: np.ndarray, norms: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Fast scores, smaller is better (float32 products: for picking candidates)."""
    dots = (vectors @ query.astype(np.float32)).astype(np.float64)
    q = float(np.dot(query, query))
    if metric == "DOT_PRODUCT":
        return -dots
    if metric == "EUCLIDEAN":
        return norms + q - 2 * dots
    denominator = np.sqrt(norms * q)
    return 1.0 - np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)


def _exact(metric: str, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Scores of a few rows with float64 accumulation (smaller is better: DOT_PRODUCT negated)."""
    v = vectors.astype(np.float64)
    if metric == "EUCLIDEAN":
        return np.sqrt(((v - query) ** 2).sum(axis=1))
    dots = v @ query
    if metric == "DOT_PRODUCT":
        return -dots
    denominator = np.sqrt((v * v).sum(axis=1) * float(np.dot(query, query)))
    cosine = np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)
    return 1.0 - np.clip(cosine, -1.0, 1.0)  # in [0, 2], despite rounding


def maintain(m: Mutation) -> None:
    """Table listener: keep every vector index of the table exact after one write; the
    approximate VectorWriteRequestBytes of each index written go on the mutation."""
    assert m.table is not None  # set before listeners run
    old_item, new_item = m.old_item, m.new_item
    spent: dict[str, float] | None = None
    cache: dict = {}  # the new item's vectors, parsed once
    lag = m.table.vector_lag
    now = lag.clock() if lag is not None and lag.seconds else None
    for name, index in m.table.vectors.items():
        if new_item is not None and old_item is not None and index.entry(old_item) is not None \
                and _same(index, old_item, new_item):
            continue  # no indexed attribute changed: nothing replicated
        if now is not None:  # a lag: visible once due (docs/behaviour/vectors.md §3)
            assert lag is not None
            index.catch_up(now)  # the queue holds the last `lag` of writes only, searched or not
            size = index.defer(now + lag.seconds, m.key, old_item, new_item, cache)
            if size is not None:
                spent = spent if spent is not None else {}
                spent[name] = size
            continue
        had = m.key in index.rows
        if index.put(m.key, new_item, cache) or had:
            if spent is None:
                spent = {}
            spent[name] = index.write_bytes(new_item if m.key in index.rows else None)
    m.vector_bytes = spent
    return None


def _same(index: VectorIndex, old: dict, new: dict) -> bool:
    """Whether the index entry of both items is the same (vector, schema and projected attributes)."""
    if index.projected is None:
        return old == new
    return all(old.get(n) == new.get(n) for n in index.projected)


def attach(table: Table, specs: Iterable[dict], definitions: list[dict], backfill: bool = True) -> None:
    """Create the vector indexes the specs declare (back-filled from the table's items)."""
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    created = [VectorIndex(spec, types, table.schema.names) for spec in specs]
    if backfill and created:
        for part in table.partitions:
            for key, record in part.items():
                item = orjson.loads(record[0])  # decoded (and its vectors parsed) once for every new index
                cache: dict = {}
                for index in created:
                    index.put(key, item, cache)
    for index in created:
        table.vectors[index.name] = index
    if table.vectors and maintain not in table.listeners:
        table.listeners.insert(0, maintain)


def detach(table: Table, name: str) -> None:
    table.vectors.pop(name, None)
    if not table.vectors and maintain in table.listeners:
        table.listeners.remove(maintain)


__all__ = ["VectorIndex", "Group", "maintain", "attach", "detach"]
