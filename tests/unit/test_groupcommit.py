"""Group commit: when fsyncs happen, who waits for them, and what a failed fsync does."""
from __future__ import annotations

import asyncio
import time

import pytest

from dynalocal.server.groupcommit import GroupCommit
from dynalocal.storage.wal import LogWriter


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
    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=2.0)
        commits.start(asyncio.get_running_loop())
        for _ in range(3):  # sequential writes, each waiting for its fsync
            started = time.monotonic()
            await commits.waiter(commits.append(b"payload"))
            assert time.monotonic() - started < 1.0  # not held back by the 2 s interval
        commits.close()
        return commits.writer.syncs
    assert run(scenario()) == 3


def test_concurrent_writes_share_fsyncs_within_the_interval(tmp_path):
    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path), "batch", interval=0.05)
        commits.start(asyncio.get_running_loop())
        waiters = []
        started = time.monotonic()
        for _ in range(40):  # 40 turns of 10 concurrent writes each, 40 ms in all
            waiters += [commits.waiter(commits.append(b"x" * 100)) for _ in range(10)]
            await asyncio.sleep(0.001)
        await asyncio.gather(*[w for w in waiters if w is not None])
        elapsed = time.monotonic() - started
        commits.close()
        return commits.writer.syncs, elapsed
    syncs, elapsed = run(scenario())
    assert syncs <= 2 + elapsed / 0.05  # one at once, then at most one per interval
    assert elapsed < 5


def test_always_mode_syncs_without_waiting_and_none_mode_never_waits(tmp_path):
    async def scenario(mode, directory):
        directory.mkdir()
        commits = GroupCommit(CountingWriter(directory), mode, interval=5.0)
        commits.start(asyncio.get_running_loop())
        waiter = commits.waiter(commits.append(b"payload"))
        if waiter is not None:
            await asyncio.wait_for(waiter, 2.0)
        commits.close()
        return waiter is None, commits.writer.syncs
    assert run(scenario("always", tmp_path / "always")) == (False, 1)
    assert run(scenario("none", tmp_path / "none"))[0] is True


def test_a_failed_fsync_fails_its_waiters_and_every_later_write(tmp_path):
    async def scenario():
        commits = GroupCommit(CountingWriter(tmp_path, fail=True), "batch", interval=0.0)
        commits.start(asyncio.get_running_loop())
        with pytest.raises(OSError):
            await commits.waiter(commits.append(b"payload"))
        with pytest.raises(OSError):
            commits.waiter(commits.append(b"more"))
        commits.writer.fail = False
        commits.close()
    run(scenario())


def test_unknown_mode_is_refused(tmp_path):
    with pytest.raises(ValueError):
        GroupCommit(LogWriter(tmp_path, 0), "sometimes")
