"""Group commit: when fsyncs happen, who waits for them, and what a failed fsync does."""
from __future__ import annotations

import asyncio
import errno
import os

import pytest

from dynalocal.server.groupcommit import GroupCommit
from dynalocal.storage.wal import LogWriter, frame, scan_segment, segment_path


class CountingWriter(LogWriter):
    """A real log writer that counts (and can fail) its fsyncs."""

    def __init__(self, directory, fail: bool = False) -> None:
        super().__init__(directory, 0)
        self.syncs = 0
        self.fail = fail

    def sync(self) -> None:
        if self.fail:
            raise OSError(5, "Input/output error")
        self.syncs += 1
        super().sync()


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_lone_write_is_synced_at_once_in_batch_mode(tmp_path):
    """Sequential writes are each synced without the flusher waiting for company (on an injected clock)."""
    time_ = FakeTime()

    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=2.0, clock=time_.clock, sleep=time_.sleep)
        commits.start(asyncio.get_running_loop())
        for _ in range(3):  # sequential writes, each waiting for its fsync
            await asyncio.wait_for(commits.waiter(commits.append(b"payload")), 60)
        commits.close()
        return commits.writer.syncs
    assert run(scenario()) == 3
    assert time_.slept == []  # never held back by the 2 s interval


def test_concurrent_writes_share_fsyncs(tmp_path):
    """400 writes arriving 10 per event-loop turn: far fewer fsyncs than writes (no timing assumed)."""
    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=0.05)
        commits.start(asyncio.get_running_loop())
        waiters = []
        for _ in range(40):
            waiters += [commits.waiter(commits.append(b"x" * 100)) for _ in range(10)]
            await asyncio.sleep(0)
        await asyncio.wait_for(asyncio.gather(*[w for w in waiters if w is not None]), 60)
        commits.close()
        return commits.writer.syncs
    assert 1 <= run(scenario()) <= 200


class FakeTime:
    """An injected clock whose sleep advances it, and lets writers 'arrive' while the flusher waits."""

    def __init__(self, commits: GroupCommit | None = None, arrivals: int = 0) -> None:
        self.now = 100.0
        self.slept: list[float] = []
        self.commits, self.arrivals = commits, arrivals

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if self.arrivals:  # a new write arrives during this tick
            self.arrivals -= 1
            self.commits._appends += 1  # type: ignore[union-attr]


def gathering(tmp_path, arrivals: int, since_last_sync: float) -> FakeTime:
    time_ = FakeTime()
    commits = GroupCommit(LogWriter(tmp_path, 0), "batch", interval=0.05, clock=time_.clock, sleep=time_.sleep)
    time_.commits, time_.arrivals = commits, arrivals
    commits._appends = 5  # five writers waiting
    commits._last_sync = time_.now - since_last_sync
    commits._gather()
    return time_


def test_while_writers_keep_arriving_the_flusher_gathers_until_the_interval_has_passed(tmp_path):
    time_ = gathering(tmp_path, arrivals=1000, since_last_sync=0.0)
    assert sum(time_.slept) == pytest.approx(0.05)  # one fsync per interval under continuous load
    assert len(time_.slept) == 4  # in ticks of a quarter interval


def test_when_no_new_writer_arrives_the_flusher_stops_gathering_after_one_tick(tmp_path):
    assert gathering(tmp_path, arrivals=0, since_last_sync=0.0).slept == [pytest.approx(0.0125)]
    assert gathering(tmp_path, arrivals=1, since_last_sync=0.0).slept == [pytest.approx(0.0125)] * 2


def test_when_the_interval_has_already_passed_the_flusher_does_not_wait(tmp_path):
    assert gathering(tmp_path, arrivals=1000, since_last_sync=0.06).slept == []


def test_always_mode_syncs_without_waiting_and_none_mode_never_waits(tmp_path):
    async def scenario(mode, directory):
        directory.mkdir()
        commits = GroupCommit(CountingWriter(directory), mode, interval=5.0)
        commits.start(asyncio.get_running_loop())
        waiter = commits.waiter(commits.append(b"payload"))
        if waiter is not None:
            await asyncio.wait_for(waiter, 60)
        commits.close()
        return waiter is None, commits.writer.syncs
    assert run(scenario("always", tmp_path / "always")) == (False, 1)
    assert run(scenario("none", tmp_path / "none"))[0] is True


def test_a_failed_fsync_cuts_the_log_back_undoes_and_fails_its_waiters_and_later_writes_work(tmp_path):
    async def scenario():
        writer = CountingWriter(tmp_path)
        commits = GroupCommit(writer, "batch", interval=0.0)
        undone: list[int] = []
        commits.on_failure = undone.append
        commits.start(asyncio.get_running_loop())
        await commits.waiter(commits.append(b"durable"))
        good = os.path.getsize(segment_path(tmp_path, 0))
        writer.fail = True
        with pytest.raises(OSError):
            await commits.waiter(commits.append(b"lost"))
        assert undone == [commits.writer.position - len(frame(b"lost"))]  # undo everything after "durable"
        assert os.path.getsize(segment_path(tmp_path, 0)) == good  # the unsynced frame is cut off
        writer.fail = False  # the disk recovers: writes are durable again
        await asyncio.wait_for(commits.waiter(commits.append(b"after")), 10)
        commits.close()
        return scan_segment(segment_path(tmp_path, 0)).groups
    assert run(scenario()) == [b"durable", b"after"]


class FullDisk(LogWriter):
    """A log writer whose writes stop after `room` more bytes with ENOSPC, like a full disk."""

    room: int | None = None

    def _write_all(self, fd, data) -> None:
        if self.room is not None and len(data) > self.room:
            os.write(fd, data[:self.room])  # the part that fit stays in the file
            self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        if self.room is not None:
            self.room -= len(data)
        super()._write_all(fd, data)


def test_a_write_that_fails_midway_leaves_no_partial_frame(tmp_path):
    async def scenario():
        writer = FullDisk(tmp_path, 0)
        commits = GroupCommit(writer, "always")
        commits.start(asyncio.get_running_loop())
        await commits.waiter(commits.append(b"a" * 100))
        writer.room = 50
        with pytest.raises(OSError):
            commits.append(b"b" * 100)
        writer.room = None  # space again
        await commits.waiter(commits.append(b"c" * 100))
        commits.close()
    run(scenario())
    scan = scan_segment(segment_path(tmp_path, 0))
    assert scan.groups == [b"a" * 100, b"c" * 100] and scan.problem is None


def test_unknown_mode_is_refused(tmp_path):
    with pytest.raises(ValueError):
        GroupCommit(LogWriter(tmp_path, 0), "sometimes")
