"""The heap's upkeep (dynalocal.http.hugepages): the trim, which huge pages, when, and the kernel's answer."""
from __future__ import annotations

import ctypes
import errno
import mmap
import sys
import threading
import time
from pathlib import Path

import pytest

from dynalocal.http import hugepages
from dynalocal.http.hugepages import GROWTH, HUGE, MADV_COLLAPSE, PAGE, SETTLED

MIB = 1024 * 1024


def mapping(start: int, end: int, perms: str, name: str, rss_kb: int) -> list[bytes]:
    """A mapping's lines as /proc/self/smaps shows them (the ones the parser reads, and others around)."""
    header = f"{start:x}-{end:x} {perms} 00000000 00:00 0"
    return [(f"{header}                          {name}" if name else header).encode() + b"\n",
            f"Size:           {(end - start) // 1024:8d} kB\n".encode(),
            b"KernelPageSize:        4 kB\n",
            f"Rss:            {rss_kb:8d} kB\n".encode(),
            b"Private_Dirty:         0 kB\n",
            b"THPeligible:    1\n",
            b"VmFlags: rd wr mr mw me ac sd\n"]


def test_only_dense_anonymous_writable_mappings_are_collapsed_on_huge_page_bounds():
    base = 0x7F0000000000
    smaps = [
        *mapping(base + HUGE // 2, base + 9 * HUGE + 4096, "rw-p", "", 18 * 1024),  # dense heap arenas
        *mapping(base + 10 * HUGE, base + 14 * HUGE, "rw-p", "", 64),  # a thread's stack: mostly untouched
        *mapping(base + 20 * HUGE, base + 24 * HUGE, "rw-p", "/usr/lib/libpython3.11.so", 8 * 1024),  # a file
        *mapping(base + 30 * HUGE, base + 34 * HUGE, "r--p", "", 8 * 1024),  # read-only
        *mapping(base + 40 * HUGE + HUGE // 2, base + 41 * HUGE + HUGE // 2, "rw-p", "", 2 * 1024),  # no aligned page
        *mapping(base + 50 * HUGE, base + 54 * HUGE, "rw-p", "[heap]", 8 * 1024),  # the C heap
        *mapping(base + 60 * HUGE, base + 64 * HUGE, "rw-p", "[stack]", 8 * 1024),
    ]
    assert hugepages.dense_ranges(smaps) == [(base + HUGE, base + 9 * HUGE), (base + 50 * HUGE, base + 54 * HUGE)]


@pytest.mark.parametrize("anon, base, previous, expected", [
    (100 * MIB, 100 * MIB - GROWTH + 1, 100 * MIB, False),  # not grown enough since the last pass
    (500 * MIB, 100 * MIB, 500 * MIB - SETTLED + 1, True),  # grown, and stopped growing
    (500 * MIB, 300 * MIB, 400 * MIB, False),  # still growing
    (900 * MIB, 100 * MIB, 900 * MIB - SETTLED, False),  # still growing, however much since the last pass
])
def test_a_pass_comes_once_the_heap_has_grown_and_stopped_growing(anon, base, previous, expected):
    assert hugepages.due(anon, base, previous) is expected


def smaps_file(tmp_path: Path, lines: list[bytes]) -> str:
    path = tmp_path / "smaps"
    path.write_bytes(b"".join(lines))
    return str(path)


def test_a_kernel_that_refuses_the_advice_everywhere_stops_the_passes(tmp_path):
    path = smaps_file(tmp_path, mapping(0, 8 * HUGE, "rw-p", "", 16 * 1024) + mapping(10 * HUGE, 12 * HUGE, "rw-p", "", 4096))
    asked = []

    def answering(refused: set[int], error: int = errno.EINVAL):
        def madvise(address: int, length: int, advice: int) -> int:
            asked.append((address, length, advice))
            if address in refused:
                ctypes.set_errno(error)
                return -1
            return 0
        return madvise

    assert hugepages.collapse(answering({0, 10 * HUGE}), whole, path) is None  # no MADV_COLLAPSE, or THP "never"
    assert asked == [(0, 8 * HUGE, MADV_COLLAPSE), (10 * HUGE, 2 * HUGE, MADV_COLLAPSE)]
    assert hugepages.collapse(answering({0}), whole, path) == 2 * HUGE  # one mapping not for huge pages: the others are
    assert hugepages.collapse(answering({0}, errno.EAGAIN), whole, path) == 10 * HUGE  # none free now: asked later


def whole(start: int, end: int) -> list[tuple[int, int]]:
    """Residency as if every page of a range were resident."""
    return [(start, end)]


def test_only_huge_pages_whose_every_page_is_resident_are_collapsed():
    per_huge = HUGE // PAGE
    residency = bytearray(b"\x01" * (5 * per_huge))
    residency[per_huge + 7] = 0  # the second huge page has a hole (trimmed): collapsing it would fill it
    residency[3 * per_huge] = 0  # the fourth too
    residency[2 * per_huge + 3] = 0x81  # bits other than bit 0 are not residency
    start = 0x7F0000000000
    assert hugepages.resident_runs(bytes(residency), start) == [
        (start, start + HUGE), (start + 2 * HUGE, start + 3 * HUGE), (start + 4 * HUGE, start + 5 * HUGE)]
    assert hugepages.resident_runs(b"\x01" * (3 * per_huge + 5), start) == [(start, start + 3 * HUGE)]


def test_mincore_tells_a_returned_page_from_a_resident_one():
    if sys.platform != "linux":
        pytest.skip(f"mincore's residency is read on Linux only ({sys.platform})")
    resident = hugepages.libc_resident()
    with mmap.mmap(-1, 4 * HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as region:
        address = ctypes.addressof(ctypes.c_char.from_buffer(region))
        first = -(-address // HUGE) * HUGE  # the region's first whole huge page
        region.write(b"x" * len(region))
        offset = first - address
        assert resident(first, first + 2 * HUGE) == [(first, first + 2 * HUGE)]
        region.madvise(mmap.MADV_DONTNEED, offset + HUGE, PAGE)  # one page of the second returned, as a trim does
        assert resident(first, first + 2 * HUGE) == [(first, first + HUGE)]


def test_a_trim_returns_freed_heap_pages():
    trim = hugepages.libc_trim()
    if trim is None:
        pytest.skip(f"no glibc malloc_trim here ({sys.platform})")
    blocks = [bytearray(100_000) for _ in range(400)]  # 40 MB from the C heap (above obmalloc's 512 bytes)
    for block in blocks:
        block[::PAGE] = b"x" * len(block[::PAGE])  # every page touched: resident
    keep = blocks[::50]  # a few survivors pin the heap's top, so only a trim gives the rest back
    del blocks
    before = hugepages.anonymous_bytes()
    trim()
    assert hugepages.anonymous_bytes() <= before - 16 * MIB
    assert len(keep) == 8


def mapping_of(address: int) -> list[bytes]:
    """The lines of /proc/self/smaps about the mapping holding `address`."""
    ours: list[bytes] = []
    inside = False
    for line in Path("/proc/self/smaps").read_bytes().splitlines(keepends=True):
        bounds = hugepages.mapping_bounds(line.split())
        if bounds is not None:
            inside = bounds[0] <= address < bounds[1]
        if inside:
            ours.append(line)
    return ours


def huge_bytes(lines: list[bytes]) -> int:
    """AnonHugePages of a mapping, from its smaps lines."""
    return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(b"AnonHugePages:"))


def test_the_kernel_backs_a_dense_mapping_with_huge_pages(tmp_path):
    madvise = hugepages.libc_madvise()
    enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if madvise is None or not enabled.exists():
        pytest.skip(f"no transparent huge pages here ({sys.platform}): nothing to collapse")
    if "[never]" in enabled.read_text():
        pytest.skip("transparent huge pages are switched off on this machine ([never])")
    with mmap.mmap(-1, 8 * HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as region:  # as the heap's arenas
        region.write(b"x" * len(region))  # every page resident: a dense mapping
        address = ctypes.addressof(ctypes.c_char.from_buffer(region))  # (the buffer's export ends here)
        before = huge_bytes(mapping_of(address))  # (the kernel may have merged it with a neighbour)
        answers = []

        def recorded(start: int, length: int, advice: int) -> int:
            result = madvise(start, length, advice)
            answers.append(ctypes.get_errno() if result else 0)
            return result

        ours = mapping(address, address + 8 * HUGE, "rw-p", "", 8 * HUGE // 1024)  # this region alone
        asked = hugepages.collapse(recorded, hugepages.libc_resident(), smaps_file(tmp_path, ours))
        if asked is None:
            pytest.skip("this kernel does not collapse memory on request (MADV_COLLAPSE, Linux 6.1+)")
        if answers != [0]:
            pytest.skip(f"the kernel had no huge page free now ({errno.errorcode.get(answers[0], answers[0])})")
        assert asked >= 7 * HUGE  # 8 huge pages' worth, at least 7 of them aligned
        assert huge_bytes(mapping_of(address)) - before >= 7 * HUGE
        assert region[:1] == b"x" and region[-1:] == b"x"  # the same memory, now on huge pages


def test_the_thread_stops_when_asked():
    before = set(threading.enumerate())
    stop = hugepages.install(period=0.01)
    started = [t for t in set(threading.enumerate()) - before if t.name == "dynalocal-heap"]
    if hugepages.libc_madvise() is None and hugepages.libc_trim() is None:
        assert not started
        return
    assert len(started) == 1
    stop()
    deadline = time.monotonic() + 10
    while started[0].is_alive() and time.monotonic() < deadline:
        started[0].join(0.05)
    assert not started[0].is_alive()
