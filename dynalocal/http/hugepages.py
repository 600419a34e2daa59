"""Huge pages for a large heap: fewer TLB misses when requests read items scattered over it.

A table of a million items keeps its keys, records and blobs in ~500 MB of small objects, and a request
reads a few of them at random places. With 4 KiB pages nearly each such read also misses the TLB and walks
the page tables; 2 MiB pages cover the whole heap with a few hundred TLB entries. Linux backs memory with
huge pages by itself only where asked (transparent huge pages are "madvise" on most distributions) and
CPython 3.11's allocator never asks. So a daemon thread asks, `madvise(MADV_COLLAPSE)` (Linux 6.1+), for the
densely used anonymous mappings (the object heap; not thread stacks, which are mostly untouched) once the
heap has grown by GROWTH since its last pass and then stopped growing for a PERIOD (a bulk load, a
recovery, a fill that ended): a heap that never stops growing stays as it is. A pass copies only what is
not huge yet, on this thread, with the GIL released: a one-off ~1-2 ms of CPU per MiB of heap (5 ms to
look over 500 MiB already done). Measured (README, Performance: *Huge pages*): on a 1M-item table, a
Query(100) and a GetItem cost 18 % and 14 % less CPU in process; RSS is unchanged.

Installed by the `dynalocal` command only (it acts on the whole process), unless `--no-huge-pages`.
Elsewhere than Linux, or where the kernel refuses MADV_COLLAPSE (older than 6.1, or huge pages "never"),
it does nothing.
"""
from __future__ import annotations

import ctypes
import errno
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable

MADV_COLLAPSE = 25  # linux/mman.h (6.1+)
HUGE = 2 * 1024 * 1024  # a huge page (x86-64 and arm64 with 4 KiB base pages)
DENSE = 0.9  # a mapping at least this resident is collapsed (absent pages in it become memory)
GROWTH = 64 * 1024 * 1024  # heap growth (bytes) that makes a pass worth its work
SETTLED = 8 * 1024 * 1024  # growth over one PERIOD below which the heap has stopped growing
PERIOD = 2.0  # seconds between looks at the heap's size (one read of /proc/self/status)
log = logging.getLogger("dynalocal.hugepages")

Madvise = Callable[[int, int, int], int]  # (address, length, advice) -> 0, or -1 with errno set


def mapping_bounds(head: list[bytes]) -> tuple[int, int] | None:
    """(start, end) of a mapping if `head` (a /proc/self/smaps line, split) is its first line
    (range perms offset dev inode name); None for the lines about it that follow (`Rss:` ...)."""
    if b"-" not in head[0] or head[0].endswith(b":"):
        return None
    start, end = head[0].split(b"-")
    return int(start, 16), int(end, 16)


def dense_ranges(smaps: Iterable[bytes]) -> list[tuple[int, int]]:
    """The 2 MiB-aligned (start, end) ranges of the anonymous writable mappings in `smaps` (the lines of
    /proc/self/smaps) that are at least DENSE resident and hold one huge page or more."""
    ranges = []
    start = end = 0
    wanted = False
    for line in smaps:
        head = line.split(None, 6)
        bounds = mapping_bounds(head)
        if bounds is not None:
            start, end = bounds
            name = head[5].strip() if len(head) > 5 else b""
            wanted = head[1].startswith(b"rw") and name in (b"", b"[heap]")
        elif wanted and head[0] == b"Rss:":
            wanted = False
            first, last = -(-start // HUGE) * HUGE, end // HUGE * HUGE
            if last - first >= HUGE and int(head[1]) * 1024 >= DENSE * (end - start):
                ranges.append((first, last))
    return ranges


def collapse(madvise: Madvise, smaps_path: str = "/proc/self/smaps") -> int | None:
    """Ask for huge pages over the dense ranges; the bytes asked for, None if the kernel refuses the advice."""
    with open(smaps_path, "rb") as smaps:
        ranges = dense_ranges(smaps)
    asked = refused = 0
    for start, end in ranges:
        if madvise(start, end - start, MADV_COLLAPSE) != 0 and ctypes.get_errno() == errno.EINVAL:
            refused += 1  # not for this mapping (one marked MADV_NOHUGEPAGE), or not at all
            continue
        asked += end - start  # pages that failed (no huge page free now, unmapped since) wait for the next pass
    return None if ranges and refused == len(ranges) else asked  # all refused: an older kernel, or THP "never"


def due(anon: int, base: int, previous: int) -> bool:
    """Whether the heap (`anon` bytes now, `previous` one PERIOD ago, `base` at the last pass) is worth a pass:
    grown by GROWTH, and no longer growing (a pass never competes with the load or recovery that grows it)."""
    return anon - base >= GROWTH and anon - previous < SETTLED


def anonymous_bytes() -> int:
    """The process's resident anonymous memory (RssAnon), 0 if unknown."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def libc_madvise() -> Madvise | None:
    """madvise(2) from the C library, called with the GIL released; None off Linux."""
    if sys.platform != "linux":
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


def install(period: float = PERIOD) -> Callable[[], None]:
    """Start the thread that collapses the heap as it grows; returns the function stopping it."""
    stop = threading.Event()
    madvise = libc_madvise()
    if madvise is None:
        return stop.set

    def run() -> None:
        base = previous = anonymous_bytes()
        while not stop.wait(period):
            anon = anonymous_bytes()
            base = min(base, anon)  # the heap shrank (a table deleted): growth counts from here
            if due(anon, base, previous):
                started = time.perf_counter()
                try:
                    asked = collapse(madvise)
                except OSError as err:  # /proc unreadable (a sandbox): nothing to do here
                    log.info("huge pages: cannot read this process's mappings (%s)", err)
                    return
                if asked is None:
                    log.info("huge pages: the kernel does not collapse memory on request (MADV_COLLAPSE)")
                    return
                log.info("huge pages: asked for %d MiB of the heap in %.2f s", asked >> 20,
                         time.perf_counter() - started)
                base = anon
            previous = anon

    threading.Thread(target=run, name="dynalocal-huge-pages", daemon=True).start()
    return stop.set
