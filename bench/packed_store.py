"""What a packed store would give: memory.py's items of ~200 bytes in packed leaves against Partition.

The README names a packed store as the next step for three missed targets (RSS per item, start-up
on a 1M snapshot, Query 1M/1k). This measures a minimal one before anyone builds it: a packed leaf
keeps its keys in one bytes object (offsets in an array, and the keys' first four bytes in another,
searched in C), its items' wire JSON in a second one (joined by commas, so a run of items is one
slice) and their sizes in an array; a partition keeps its leaves and each leaf's last key, no dict,
so a point read finds its key's CRC-32 among the keys that share its first four bytes. New keys
wait in a per-leaf buffer and are folded in FOLD at a time; overwrites, deletes, reads that merge
a buffer and leaf splits are not modelled. The cost of rebuilding a whole leaf is shown too.

Each layout is built in its own process (RSS per item is the process's growth), in key order, from
the same items; GetItem and Query(100) are timed on a 1k-item and a 1M-item store, interleaved,
loading from marshal'd data as a snapshot would hold it (without compression), and writing WRITES
new items in random order (whole partition keys; the time includes placing them in the leaves).

    .venv/bin/python bench/packed_store.py [--items 1000000]
"""
from __future__ import annotations

import argparse
import gc
import json
import marshal
import random
import subprocess
import sys
import time
import zlib
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from itertools import accumulate
from operator import itemgetter

from memory import ITEM_PAYLOAD, PER_KEY  # bench/memory.py: the items of the RSS target
from query_latency import rss_bytes

from dynalocal.storage.partition import Partition
from dynalocal.storage.ranges import Bounds, read_range
from dynalocal.storage.table import ItemStore
from dynalocal.values.attributes import item_size
from dynalocal.values.blob import dumps
from dynalocal.values.keys import KeySchema, prefix_successor

LEAF = 512
SCHEMA = KeySchema("pk", "S", "sk", "N")
SMALL = 1000
PROBES = 5000
FOLD = 32  # new keys a packed leaf's buffer holds before they are folded into it
WRITES = 50_000
_blob = itemgetter(0)
ROUNDS = 5


def items_in_key_order(count: int, tag: str) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, wire JSON, size) of `count` items (PER_KEY per partition key), in key order, one at a time."""
    pks = sorted((SCHEMA.partition_prefix(f"{tag}-{p:07d}"), p) for p in range(count // PER_KEY))
    sks = sorted((SCHEMA.sort_key(str(s)), s) for s in range(PER_KEY))
    for prefix, p in pks:
        for sort, s in sks:
            item = {"pk": {"S": f"{tag}-{p:07d}"}, "sk": {"N": str(s)}, "payload": {"S": ITEM_PAYLOAD}}
            yield prefix + sort, dumps(item), item_size(item)


def _offsets(parts: list[bytes], extra: int = 0) -> array:
    return array("I", accumulate((len(p) + extra for p in parts), initial=0))


class Leaf:
    """Up to LEAF items packed: keys, their first four bytes and CRC-32s, wire JSON joined by commas, sizes."""

    __slots__ = ("kb", "ko", "toks", "sums", "body", "bo", "sizes")

    def __init__(self, keys: list[bytes], blobs: list[bytes], sizes: list[int] | array) -> None:
        self.kb = b"".join(keys)
        self.ko = _offsets(keys)
        self.toks = array("I")
        self.toks.frombytes(b"".join([k[:4] for k in keys]))  # stored keys have 8 bytes or more
        if sys.byteorder == "little":
            self.toks.byteswap()
        self.sums = array("I", map(zlib.crc32, keys))  # a point read looks for its key's among its run's
        self.body = b",".join(blobs)
        self.bo = _offsets(blobs, 1)  # item i is body[bo[i]:bo[i + 1] - 1]
        self.sizes = array("I", sizes)

    def find(self, key: bytes) -> int:
        """bisect_left of `key` among the keys: by their first four bytes in C, then in Python among
        the keys sharing them (one partition key's items, nearly always)."""
        kb, ko = self.kb, self.ko
        t = int.from_bytes(key[:4], "big")
        lo = bisect_left(self.toks, t)
        hi = bisect_right(self.toks, t, lo)
        if lo == hi or kb[ko[lo]:ko[lo + 1]] >= key:
            return lo
        if kb[ko[hi - 1]:ko[hi]] < key:
            return hi
        lo += 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if kb[ko[mid]:ko[mid + 1]] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo


def _shifted(offsets: array, a: int, b: int, delta: int) -> array:
    """offsets[a:b] moved by delta (in C)."""
    part = offsets[a:b]
    return part if not delta else array("I", map(delta.__add__, part))


def fold(leaf: Leaf, new: list[tuple[bytes, bytes, int]]) -> Leaf:
    """A leaf with `new` (sorted, absent keys) merged in: the packed runs between insertion points are
    copied whole (bytes slices, array slices), so the Python work is per inserted item, not per item."""
    out = Leaf.__new__(Leaf)
    kb_parts, body_parts = [], []
    ko, bo, toks, sums, sizes = array("I", [0]), array("I", [0]), array("I"), array("I"), array("I")
    prev = 0
    n = len(leaf.ko) - 1
    for key, blob, size in new + [(b"", b"", 0)]:  # a sentinel closes the last run
        at = leaf.find(key) if key else n
        if at > prev:  # the run of old items [prev, at)
            kb_parts.append(leaf.kb[leaf.ko[prev]:leaf.ko[at]])
            body_parts.append(leaf.body[leaf.bo[prev]:leaf.bo[at]])
            ko += _shifted(leaf.ko, prev + 1, at + 1, ko[-1] - leaf.ko[prev])
            bo += _shifted(leaf.bo, prev + 1, at + 1, bo[-1] - leaf.bo[prev])
            toks += leaf.toks[prev:at]
            sums += leaf.sums[prev:at]
            sizes += leaf.sizes[prev:at]
            prev = at
        if key:
            kb_parts.append(key)
            body_parts.append(blob + b",")
            ko.append(ko[-1] + len(key))
            bo.append(bo[-1] + len(blob) + 1)
            toks.append(int.from_bytes(key[:4], "big"))
            sums.append(zlib.crc32(key))
            sizes.append(size)
    out.kb, out.body = b"".join(kb_parts), b"".join(body_parts)[:-1]  # the last item has no comma after it
    out.ko, out.bo, out.toks, out.sums, out.sizes = ko, bo, toks, sums, sizes
    return out


class Packed:
    """Leaves in key order and each one's last key; new keys wait in a per-leaf buffer (FOLD at most)."""

    def __init__(self, items: Iterator[tuple[bytes, bytes, int]]) -> None:
        self.leaves: list[Leaf] = []
        self.maxes: list[bytes] = []
        keys: list[bytes] = []
        blobs: list[bytes] = []
        sizes: list[int] = []
        for k, b, s in items:
            keys.append(k)
            blobs.append(b)
            sizes.append(s)
            if len(keys) == LEAF:
                self._add(keys, blobs, sizes)
                keys, blobs, sizes = [], [], []
        if keys:
            self._add(keys, blobs, sizes)

        self.buffers: dict[int, list[tuple[bytes, bytes, int]]] = {}

    def _add(self, keys: list[bytes], blobs: list[bytes], sizes: list[int]) -> None:
        self.leaves.append(Leaf(keys, blobs, sizes))
        self.maxes.append(keys[-1])

    def put_new(self, key: bytes, blob: bytes, size: int) -> None:
        """Write an absent key below the last one: into its leaf's buffer, folded in at FOLD keys (a
        read would look in the buffer first; leaves that grow past 2 x LEAF would split: not shown)."""
        li = min(bisect_left(self.maxes, key), len(self.maxes) - 1)
        buffer = self.buffers.setdefault(li, [])
        insort(buffer, (key, blob, size))
        if len(buffer) >= FOLD:
            self._fold(li, self.buffers.pop(li))

    def _fold(self, li: int, buffer: list[tuple[bytes, bytes, int]]) -> None:
        self.leaves[li] = fold(self.leaves[li], buffer)
        self.maxes[li] = max(self.maxes[li], buffer[-1][0])

    def flush(self) -> None:
        for li, buffer in self.buffers.items():
            self._fold(li, buffer)
        self.buffers.clear()

    def get(self, key: bytes) -> tuple[bytes, int] | None:
        """The key's (wire JSON, size): its leaf by the last keys, then its CRC-32 among the keys that
        share its first four bytes (a C-level scan), checked against the key itself."""
        li = bisect_left(self.maxes, key)
        if li == len(self.maxes):
            return None
        leaf = self.leaves[li]
        t = int.from_bytes(key[:4], "big")
        lo = bisect_left(leaf.toks, t)
        hi = bisect_right(leaf.toks, t, lo)
        crc, sums, kb, ko = zlib.crc32(key), leaf.sums, leaf.kb, leaf.ko
        while lo < hi:
            try:
                i = sums.index(crc, lo, hi)
            except ValueError:
                return None
            if kb[ko[i]:ko[i + 1]] == key:
                return leaf.body[leaf.bo[i]:leaf.bo[i + 1] - 1], leaf.sizes[i]
            lo = i + 1  # another key with the same CRC-32
        return None

    def query(self, lo: bytes, hi: bytes) -> tuple[bytes, int]:
        """Items with lo <= key < hi as one comma-joined body, and their sizes' sum."""
        li = bisect_left(self.maxes, lo)
        parts, total = [], 0
        a = self.leaves[li].find(lo) if li < len(self.leaves) else 0
        while li < len(self.leaves):
            leaf = self.leaves[li]
            end = len(leaf.ko) - 1
            b = leaf.find(hi) if hi <= self.maxes[li] else end
            if b > a:
                parts.append(leaf.body[leaf.bo[a]:leaf.bo[b] - 1])
                total += sum(leaf.sizes[a:b])
            if b < end:
                break
            li, a = li + 1, 0
        return b",".join(parts), total

    def dump(self) -> bytes:
        return marshal.dumps([(lf.kb, lf.ko.tobytes(), lf.toks.tobytes(), lf.sums.tobytes(), lf.body,
                               lf.bo.tobytes(), lf.sizes.tobytes()) for lf in self.leaves], 2)

    @staticmethod
    def restore(raw: bytes) -> list[Leaf]:
        leaves = []
        for kb, ko, toks, sums, body, bo, sizes in marshal.loads(raw):
            leaf = Leaf.__new__(Leaf)
            leaf.kb, leaf.body = kb, body
            leaf.ko, leaf.toks, leaf.sums, leaf.bo, leaf.sizes = (array("I") for _ in range(5))
            for arr, data in ((leaf.ko, ko), (leaf.toks, toks), (leaf.sums, sums), (leaf.bo, bo),
                              (leaf.sizes, sizes)):
                arr.frombytes(data)
            leaves.append(leaf)
        return leaves


class Tree:
    """The same items in today's storage, read through its own calls (a Query is storage.ranges.read_range)."""

    def __init__(self, items: Iterator[tuple[bytes, bytes, int]]) -> None:
        self.store = ItemStore(1)
        self.part = self.store.partitions[0]
        keys, recs = [], []
        for k, b, s in items:
            keys.append(k)
            recs.append((b, s))
        self.part.load(keys, recs)
        self.get = self.part.get

    def query(self, lo: bytes, hi: bytes) -> tuple[bytes, int]:
        page = read_range(self.store, Bounds(lo, hi), False, None)
        return b",".join(map(_blob, page.records)), page.read_bytes

    def dump(self) -> list[bytes]:
        return [marshal.dumps((keys, recs), 2) for keys, recs in self.part.chunks(None, None, size=8192)]


def _time(call: Callable, args: list) -> float:
    """Mean µs of call(*a) over args (results dropped as they come: none is kept)."""
    start = time.perf_counter_ns()
    for a in args:
        call(*a)
    return (time.perf_counter_ns() - start) / len(args) / 1000


def measure(layout: str, items: int) -> dict:
    """Build one layout in this process and time it (see the module's docstring)."""
    make = Packed if layout == "packed" else Tree
    small = make(items_in_key_order(SMALL, "s"))
    gc.collect()
    gc.disable()
    before = rss_bytes()
    started = time.perf_counter()
    big = make(items_in_key_order(items, "p"))
    built = time.perf_counter() - started
    out: dict = {"layout": layout, "items": items, "rss_per_item": (rss_bytes() - before) / items, "build_s": built}
    rng = random.Random(1)
    stores = {"1k": (small, SMALL, "s"), "1M": (big, items, "p")}
    probes: dict[str, tuple[list[tuple[bytes]], list[tuple[bytes, bytes]]]] = {}
    for name, (_, count, tag) in stores.items():
        chosen = [(rng.randrange(count // PER_KEY), rng.randrange(PER_KEY)) for _ in range(PROBES)]
        keys = [SCHEMA.partition_prefix(f"{tag}-{p:07d}") + SCHEMA.sort_key(str(s)) for p, s in chosen]
        prefixes = [SCHEMA.partition_prefix(f"{tag}-{p:07d}") for p, _ in chosen]
        probes[name] = ([(k,) for k in keys], [(p, prefix_successor(p) or b"\xff" * 9) for p in prefixes])
    best: dict[str, float] = {}
    for _ in range(ROUNDS):  # stores interleaved, best of the rounds
        for name, (store, _, _) in stores.items():
            gets, bounds = probes[name]
            best[f"get_us_{name}"] = min(best.get(f"get_us_{name}", 1e9), _time(store.get, gets))
            best[f"query_us_{name}"] = min(best.get(f"query_us_{name}", 1e9), _time(store.query, bounds))
    lo, hi = probes["1M"][1][0]
    body, total = big.query(lo, hi)
    assert body.count(b'"pk"') == PER_KEY and total > 0, body[:80]
    out.update(best)
    out.update(_load_and_rebuild(big))
    out["write_us"] = _writes(big)
    return out


def _writes(store: Packed | Tree) -> float:
    """µs per write of WRITES new items (whole partition keys, in random order), placing included."""
    new = list(items_in_key_order(WRITES, "w"))
    random.Random(2).shuffle(new)
    started = time.perf_counter_ns()
    if isinstance(store, Packed):
        for key, blob, size in new:
            store.put_new(key, blob, size)
        store.flush()
    else:
        put = store.part.put
        for key, blob, size in new:
            put(key, (blob, size))
        next(store.part.spans(None, None))  # places the keys not placed yet
    elapsed = (time.perf_counter_ns() - started) / len(new) / 1000
    key, blob, size = new[0]
    assert store.get(key) == (blob, size)
    lo = SCHEMA.partition_prefix(json.loads(blob)["pk"]["S"])
    body, _ = store.query(lo, prefix_successor(lo) or b"\xff" * 9)
    assert body.count(b'"pk"') == PER_KEY, body.count(b'"pk"')
    return elapsed


def _load_and_rebuild(store: Packed | Tree) -> dict:
    """Seconds to rebuild the store's objects from marshal'd data; µs to rebuild one packed leaf."""
    if isinstance(store, Packed):
        raw = store.dump()
        started = time.perf_counter()
        Packed.restore(raw)
        out = {"load_s": time.perf_counter() - started}
        leaf = store.leaves[len(store.leaves) // 2]
        leaf_keys = [leaf.kb[leaf.ko[i]:leaf.ko[i + 1]] for i in range(len(leaf.ko) - 1)]
        blobs = [leaf.body[leaf.bo[i]:leaf.bo[i + 1] - 1] for i in range(len(leaf.bo) - 1)]
        out["leaf_rebuild_us"] = _time(Leaf, [(leaf_keys, blobs, leaf.sizes)] * 100)
        return out
    chunks = store.dump()
    started = time.perf_counter()
    part = Partition(0, 1 << 64)
    keys: list[bytes] = []
    recs: list = []
    for chunk in chunks:
        k, r = marshal.loads(chunk)
        keys += k
        recs += r
    part.load(keys, recs)
    return {"load_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--layout", choices=["packed", "partition"], help=argparse.SUPPRESS)  # one child's part
    args = parser.parse_args()
    if args.layout:
        print(json.dumps(measure(args.layout, args.items)))
        return
    rows = []
    for layout in ("partition", "packed"):
        done = subprocess.run([sys.executable, __file__, "--layout", layout, "--items", str(args.items)],
                              capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"{args.items} items of ~200 bytes, in process, one layout per process (µs: best of {ROUNDS} rounds)")
    print(f"{'layout':<10} {'RSS B/item':>10} {'GetItem 1k':>10} {'GetItem 1M':>10} {'Query 1k':>9} {'Query 1M':>9} "
          f"{'1M/1k':>6} {'load s':>7} {'leaf rebuild':>12} {'write':>9}")
    for r in rows:
        rebuild = f"{r['leaf_rebuild_us']:.0f} µs" if "leaf_rebuild_us" in r else "-"
        print(f"{r['layout']:<10} {r['rss_per_item']:>10.0f} {r['get_us_1k']:>10.2f} {r['get_us_1M']:>10.2f} "
              f"{r['query_us_1k']:>9.2f} {r['query_us_1M']:>9.2f} {r['query_us_1M'] / r['query_us_1k']:>6.2f} "
              f"{r['load_s']:>7.2f} {rebuild:>12} {r['write_us']:>6.1f} µs")


if __name__ == "__main__":
    main()
