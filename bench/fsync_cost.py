"""What one fsync of the write-ahead log costs on this machine's disk: wall time and CPU time.

    .venv/bin/python bench/fsync_cost.py [--dir /tmp] [--count 2000] [--bytes 4000]

Appends `--bytes` to a file in a temporary directory under `--dir` (the data directory of
the benchmark is a temporary directory on the filesystem of /tmp) and syncs it, `--count`
times, with fdatasync and fsync; then writes as the log does, into a file zero-filled ahead, with
fdatasync (journal.wal.LogWriter). Reports the median and p99 wall time of
the sync call, and the CPU time (process time: the syncing thread's, kernel included) per
append + sync. The wall time bounds how often one writer can be acknowledged; the CPU time
is what each group commit costs the server's core (server.groupcommit shares one among all
the writers at hand).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time


def measure(fd: int, sync, count: int, payload: bytes, at: int | None = None) -> tuple[float, float, float]:
    """(median µs, p99 µs) of the sync call, and CPU µs per append + sync (`at`: pwrite from this offset
    into a zero-filled file instead of appending)."""
    walls = []
    cpu = time.process_time()
    for _ in range(count):
        if at is None:
            os.write(fd, payload)
        else:
            os.pwrite(fd, payload, at)
            at += len(payload)
        started = time.perf_counter()
        sync(fd)
        walls.append(time.perf_counter() - started)
    cpu = (time.process_time() - cpu) / count
    walls.sort()
    return walls[len(walls) // 2] * 1e6, walls[int(len(walls) * 0.99)] * 1e6, cpu * 1e6


def log_sync(directory: str, count: int, nbytes: int) -> tuple[float, float, float]:
    """What one group commit's sync costs as the log does it (journal.wal.LogWriter: `nbytes` written
    into blocks zero-filled ahead, so that fdatasync writes data only, not the metadata of a growing
    file): (median µs, p99 µs) of the sync call, and CPU µs per write + sync, `count` times."""
    path = os.path.join(directory, "zeroed")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        payload = b"x" * nbytes
        size = nbytes * (count + 50)
        os.write(fd, bytes(size))
        os.fsync(fd)
        measure(fd, os.fsync, 50, payload, at=size - 50 * nbytes)  # warm-up
        return measure(fd, getattr(os, "fdatasync", os.fsync), count, payload, at=0)
    finally:
        os.close(fd)
        os.unlink(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--bytes", type=int, default=4000,
                        help="bytes written before each sync (default ~16 PutItems: one group at 16 connections)")
    options = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="dynalocal-fsync-", dir=options.dir)
    try:
        fd = os.open(os.path.join(directory, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            payload = b"x" * options.bytes
            measure(fd, os.fsync, 50, payload)  # warm-up
            for name, sync in (("fdatasync", getattr(os, "fdatasync", os.fsync)), ("fsync", os.fsync)):
                median, p99, cpu = measure(fd, sync, options.count, payload)
                print(f"{name:<22} wall median {median:7.1f} us  p99 {p99:7.1f} us   CPU per write+sync {cpu:6.1f} us")
        finally:
            os.close(fd)
        median, p99, cpu = log_sync(directory, options.count, options.bytes)
        print(f"{'fdatasync, zero-filled':<22} wall median {median:7.1f} us  p99 {p99:7.1f} us   "
              f"CPU per write+sync {cpu:6.1f} us")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
