"""Group commit: when fsyncs happen, who waits for them, and what a failed fsync does."""
from __future__ import annotations

import asyncio
import errno
import os

import pytest

from dynalocal.journal import groupcommit
from dynalocal.journal.groupcommit import GroupCommit
from dynalocal.journal.wal import LogWriter, scan_segment, segment_path


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


def write(commits: GroupCommit, payload: bytes):
    """What a request does: add its entries to the open batch, take the ticket its answer waits for."""
    commits.batch.append(payload)
    return commits.ticket()


async def durable(ticket) -> None:
    """Wait until the ticket is done; raise its error if it failed."""
    if ticket is None:
        return
    if not ticket.done:
        future = asyncio.get_running_loop().create_future()
        ticket.add_done_callback(lambda _: future.set_result(None))
        await asyncio.wait_for(future, 60)
    if ticket.error is not None:
        raise ticket.error


def test_a_lone_write_is_synced_at_once_in_batch_mode(tmp_path):
    """Sequential writes are each synced after one loop round, never held back by the (hour-long) interval."""
    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=3600)
        commits.start(asyncio.get_running_loop())
        for i in range(3):  # sequential writes, each waiting for its fsync
            await durable(write(commits, b"payload-%d" % i))
        commits.close()
        return commits.writer.syncs
    assert run(scenario()) == 3
    assert scan_segment(segment_path(tmp_path, 0)).groups == [b"payload-0", b"payload-1", b"payload-2"]


def test_writes_arriving_every_loop_round_share_one_frame_and_fsync_until_a_round_adds_none(tmp_path):
    """400 writes, 10 per event-loop round: the batch gathers while rounds keep adding to it, and is
    written (as one frame) and synced once a round adds nothing; no waiting for the interval."""
    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=3600)
        commits.start(asyncio.get_running_loop())
        tickets = []
        for _ in range(40):
            tickets += [write(commits, b"x" * 10) for _ in range(10)]
            await asyncio.sleep(0)
        assert len(set(map(id, tickets))) == 1  # one ticket for the whole batch
        await durable(tickets[0])
        commits.close()
        return commits.writer.syncs
    assert run(scenario()) == 1
    assert scan_segment(segment_path(tmp_path, 0)).groups == [b"x" * 4000]


def test_under_continuous_arrivals_the_interval_bounds_the_gathering(tmp_path, monkeypatch):
    """Writes keep arriving, 1 ms apart on an injected clock, 10 per loop round: the batch is written
    once it has been open for the 10 ms interval, even in the middle of a round."""
    now = [0.0]
    monkeypatch.setattr(groupcommit, "monotonic", lambda: now[0])

    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=0.010)
        commits.start(asyncio.get_running_loop())
        tickets = []
        for _ in range(40):
            for _ in range(10):
                now[0] += 0.001
                tickets.append(write(commits, b"x"))
            await asyncio.sleep(0)
        for ticket in tickets:
            await durable(ticket)
        commits.close()
    run(scenario())
    groups = scan_segment(segment_path(tmp_path, 0)).groups
    # the first batch takes its first write and the ten after it; each later one the ten writes of an interval
    assert groups == [b"x" * 11] + [b"x" * 10] * 38 + [b"x" * 9]


def test_a_read_waits_for_the_writes_it_may_have_seen(tmp_path):
    """No entries (a read): the ticket of the newest batch not yet durable, or None once all is durable."""
    async def scenario():
        writer = CountingWriter(tmp_path)
        commits = GroupCommit(writer, "batch", interval=3600)
        commits.start(asyncio.get_running_loop())
        assert commits.ticket() is None
        written = write(commits, b"w")
        assert commits.ticket() is written  # open batch: the read waits with it
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the batch is written: in flight, maybe synced already
        read = commits.ticket()
        assert read is None or read is written
        await durable(written)
        assert commits.ticket() is None
        commits.close()
    run(scenario())


def test_always_mode_syncs_without_waiting_and_none_mode_never_waits(tmp_path):
    async def scenario(mode, directory):
        directory.mkdir()
        commits = GroupCommit(CountingWriter(directory), mode, interval=3600)
        commits.start(asyncio.get_running_loop())
        ticket = write(commits, b"payload")
        written = scan_segment(segment_path(directory, 0)).groups  # at once, before any loop round
        await durable(ticket)
        commits.close()
        return ticket is None, written, commits.writer.syncs
    assert run(scenario("always", tmp_path / "always")) == (False, [b"payload"], 1)
    assert run(scenario("none", tmp_path / "none"))[:2] == (True, [b"payload"])


def test_a_failed_fsync_cuts_the_log_back_undoes_and_fails_its_waiters_and_later_writes_work(tmp_path):
    async def scenario():
        writer = CountingWriter(tmp_path)
        commits = GroupCommit(writer, "always")
        undone: list[list] = []
        commits.on_failure = undone.append
        commits.start(asyncio.get_running_loop())
        await durable(write(commits, b"durable"))
        good = scan_segment(segment_path(tmp_path, 0)).good_end  # (the file goes on in zeros: wal.LogWriter)
        writer.fail = True
        lost = write(commits, b"lost")
        commits.batch.append(b"open")  # a write not yet handed to the log: it may build on the lost one
        with pytest.raises(OSError):
            await durable(lost)
        assert undone == [[[b"open"], [b"lost"]]]  # everything after "durable", newest first
        assert os.path.getsize(segment_path(tmp_path, 0)) == good  # the unsynced frame is cut off
        assert commits.batch == []
        writer.fail = False  # the disk recovers: writes are durable again
        await durable(write(commits, b"after"))
        commits.close()
        return scan_segment(segment_path(tmp_path, 0)).groups
    assert run(scenario()) == [b"durable", b"after"]


class FullDisk(LogWriter):
    """A log writer whose writes stop after `room` more bytes with ENOSPC, like a full disk."""

    room: int | None = None

    def _write_all(self, fd, data, offset) -> None:
        if self.room is not None and len(data) > self.room:
            os.pwrite(fd, data[:self.room], offset)  # the part that fit stays in the file
            self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        if self.room is not None:
            self.room -= len(data)
        super()._write_all(fd, data, offset)


def test_a_write_that_fails_midway_leaves_no_partial_frame_and_undoes_its_batch(tmp_path):
    async def scenario():
        writer = FullDisk(tmp_path, 0)
        commits = GroupCommit(writer, "always")
        undone: list[list] = []
        commits.on_failure = undone.append
        commits.start(asyncio.get_running_loop())
        await durable(write(commits, b"a" * 100))
        writer.room = 50
        failed = write(commits, b"b" * 100)
        assert failed.done and isinstance(failed.error, OSError)  # told at once
        assert undone == [[[b"b" * 100]]]
        writer.room = None  # space again
        await durable(write(commits, b"c" * 100))
        commits.close()
    run(scenario())
    scan = scan_segment(segment_path(tmp_path, 0))
    assert scan.groups == [b"a" * 100, b"c" * 100] and scan.problem is None


def test_unknown_mode_is_refused(tmp_path):
    with pytest.raises(ValueError):
        GroupCommit(LogWriter(tmp_path, 0), "sometimes")
