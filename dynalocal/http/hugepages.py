"""The heap's upkeep: free memory back to the system, and huge pages for fewer TLB misses on a large heap.

A table of a million items keeps its items in ~300 MB of packed leaves (storage/leaf.py), and a request
reads a few of them at random places. With 4 KiB pages nearly each such read also misses the TLB and walks
the page tables; 2 MiB pages cover the whole heap with a few hundred TLB entries. Linux backs memory with
huge pages by itself only where asked (transparent huge pages are "madvise" on most distributions) and
CPython 3.11's allocator never asks. So a daemon thread asks, `madvise(MADV_COLLAPSE)` (Linux 6.1+), for the
densely used anonymous mappings (the object heap; not thread stacks, which are mostly untouched) once the
heap has grown by GROWTH since its last pass and then stopped growing for a PERIOD (a bulk load, a
recovery, a fill that ended): a heap that never stops growing stays as it is. A pass copies only what is
not huge yet, on this thread, with the GIL released: a one-off ~1-2 ms of CPU per MiB of heap (5 ms to
look over 500 MiB already done). Measured (docs/performance.md, *Huge pages*): with one object per item, a
Query(100) and a GetItem on a 1M-item table cost 18 % and 14 % less CPU in process; with packed leaves,
whose few buffers sit on few pages anyway, no gain shows (kept: it costs nothing measurable either).

Before each pass (and whenever the heap has settled TRIM_GROWTH larger than at the last trim), the same
thread calls glibc's `malloc_trim(0)`: a packed leaf is rebuilt as new buffers of 30-240 KB, and the
freed ones leave holes in the C heap (about 7 % of a 1M-item table's RSS) that glibc keeps resident; the
trim gives their pages back in 2-5 ms. A collapse then covers only 2 MiB ranges whose every page is
resident (mincore(2)), so that it never turns a trimmed hole back into memory.

Installed by the `dynalocal` command only (it acts on the whole process); `--no-huge-pages` leaves the
trim. Elsewhere than Linux, or where the kernel refuses MADV_COLLAPSE (older than 6.1, or huge pages
"never"), there is no collapse; without glibc, no trim.
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
DENSE = 0.9  # a mapping at least this resident is worth reading page by page (mincore) for whole huge pages
GROWTH = 64 * 1024 * 1024  # heap growth (bytes) that makes a pass worth its work
TRIM_GROWTH = 16 * 1024 * 1024  # heap growth (bytes) that makes a trim worth its 2-5 ms
PAGE = 4096  # a base page
LOW_BIT = bytes(byte & 1 for byte in range(256))  # mincore's byte -> 1 if the page is resident (bit 0), else 0
SETTLED = 8 * 1024 * 1024  # growth over one PERIOD below which the heap has stopped growing
PERIOD = 2.0  # seconds between looks at the heap's size (one read of /proc/self/status)
log = logging.getLogger("dynalocal.hugepages")

Madvise = Callable[[int, int, int], int]  # (address, length, advice) -> 0, or -1 with errno set
Resident = Callable[[int, int], list[tuple[int, int]]]  # (start, end) -> the fully resident huge-page runs in it


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


def collapse(madvise: Madvise, resident: Resident, smaps_path: str = "/proc/self/smaps") -> int | None:
    """Ask for huge pages over the fully resident runs of the dense ranges; the bytes asked for, None if the
    kernel refuses the advice."""
    with open(smaps_path, "rb") as smaps:
        ranges = dense_ranges(smaps)
    asked = refused = tried = 0
    for dense in ranges:
        for start, end in resident(*dense):
            tried += 1
            if madvise(start, end - start, MADV_COLLAPSE) != 0 and ctypes.get_errno() == errno.EINVAL:
                refused += 1  # not for this mapping (one marked MADV_NOHUGEPAGE), or not at all
                continue
            asked += end - start  # pages that failed (no huge page free now, unmapped since) wait for the next pass
    return None if tried and refused == tried else asked  # all refused: an older kernel, or THP "never"


def resident_runs(residency: bytes, start: int) -> list[tuple[int, int]]:
    """The runs of whole huge pages in which every page is resident, from `residency` (mincore's vector of a
    range starting at `start`, 2 MiB-aligned: one byte per page, bit 0 set if it is resident)."""
    per_huge = HUGE // PAGE
    runs: list[tuple[int, int]] = []
    for first in range(0, len(residency) - per_huge + 1, per_huge):
        if 0 in residency[first:first + per_huge].translate(LOW_BIT):
            continue  # a page of it absent: collapsing would make it memory
        address = start + first * PAGE
        if runs and runs[-1][1] == address:
            runs[-1] = (runs[-1][0], address + HUGE)
        else:
            runs.append((address, address + HUGE))
    return runs


def libc_resident() -> Resident:
    """The fully resident runs of a range, by mincore(2); none where it fails (the range unmapped since)."""
    mincore = ctypes.CDLL(None, use_errno=True).mincore
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    mincore.restype = ctypes.c_int

    def resident(start: int, end: int) -> list[tuple[int, int]]:
        vector = ctypes.create_string_buffer((end - start) // PAGE)
        if mincore(start, end - start, vector) != 0:
            return []
        return resident_runs(vector.raw, start)
    return resident


def libc_trim() -> Callable[[], object] | None:
    """glibc's malloc_trim(0), called with the GIL released (it returns free heap pages); None elsewhere."""
    if sys.platform != "linux":
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


def due(anon: int, base: int, previous: int, growth: int = GROWTH) -> bool:
    """Whether the heap (`anon` bytes now, `previous` one PERIOD ago, `base` at the last pass) is worth a pass:
    grown by `growth`, and no longer growing (a pass never competes with the load or recovery that grows it)."""
    return anon - base >= growth and anon - previous < SETTLED


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


def install(period: float = PERIOD, huge_pages: bool = True) -> Callable[[], None]:
    """Start the thread that trims the heap and collapses it as it grows; returns the function stopping it."""
    stop = threading.Event()
    madvise = libc_madvise() if huge_pages else None
    trim = libc_trim()
    if madvise is None and trim is None:
        return stop.set
    resident = libc_resident()

    def run() -> None:
        nonlocal madvise  # None once the kernel has refused the advice
        base = trimmed = previous = anonymous_bytes()
        while not stop.wait(period):
            anon = anonymous_bytes()
            base, trimmed = min(base, anon), min(trimmed, anon)  # the heap shrank (a table deleted)
            collapsing = madvise is not None and due(anon, base, previous)
            if trim is not None and (collapsing or due(anon, trimmed, previous, TRIM_GROWTH)):
                trim()  # before a collapse: the holes it returns are then left out of the huge pages
                trimmed = anon = anonymous_bytes()
            if collapsing and madvise is not None:
                madvise = pass_over(madvise, resident)
                base = anon
            previous = anon

    threading.Thread(target=run, name="dynalocal-heap", daemon=True).start()
    return stop.set


def pass_over(madvise: Madvise, resident: Resident) -> Madvise | None:
    """One collapse pass, logged; the madvise to go on with, None once the kernel has refused it."""
    started = time.perf_counter()
    try:
        asked = collapse(madvise, resident)
    except OSError as err:  # /proc unreadable (a sandbox): nothing to do here
        log.info("huge pages: cannot read this process's mappings (%s)", err)
        return None
    if asked is None:
        log.info("huge pages: the kernel does not collapse memory on request (MADV_COLLAPSE)")
        return None
    log.info("huge pages: asked for %d MiB of the heap in %.2f s", asked >> 20, time.perf_counter() - started)
    return madvise
