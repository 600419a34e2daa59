"""Sustained load against a real server while its table re-partitions: every answer is right.

An on-demand table that grows (a 390 KB item read consistently by a ballast connection, under
`--throttling report`, re-partitions it about once a second) while the counter workload (one
connection, then several) or the transfer workload runs on it: no update may fail, the counter
must equal the successes, no account may go missing, the balances' sum is conserved. Before the
fix, a request that came right after a growth looked its key up in the old layout and answered
"attribute does not exist", or no Item. Each run lasts until the table has grown a few times
(a condition with a deadline, not a fixed time); see soak.py for the workloads.
"""
from __future__ import annotations

import threading
import time

import pytest
from conftest import LiveServer
from soak import ACCOUNTS, START_BALANCE, counter, partitions, transfer

from dynalocal.config import Settings
from dynalocal.engine.context import Context

GROWTHS = 3  # re-partitions each run waits for (or for the last layout growth gives: below);
# on a busy machine growth can jump straight to TOP, so the tests ask for at least one change
TOP = 14  # partitions of an on-demand table grown to the 40 000-unit table quota: no growth after
DEADLINE = 120.0  # seconds: far beyond what a busy machine needs (about 8 s on a quiet one)


@pytest.fixture(scope="module")
def live():
    with LiveServer(Context(settings=Settings(throttling="report"))) as server:
        yield server


def _grown(port: int, table: str) -> callable:
    """until(): true once the table has re-partitioned GROWTHS times (the deadline: fail later)."""
    seen: list[int] = []
    deadline = time.monotonic() + DEADLINE
    lock = threading.Lock()  # workers on several threads ask

    def until() -> bool:
        with lock:
            count = partitions(port, table)
            if not seen or count != seen[-1]:
                seen.append(count)
            return len(seen) > GROWTHS or count >= TOP or time.monotonic() > deadline

    until.seen = seen  # type: ignore[attr-defined]
    return until


@pytest.mark.parametrize("connections", [1, 6])
def test_counter_updates_never_fail_while_the_table_re_partitions(live, connections):
    table = f"counter-{connections}"
    until = _grown(live.port, table)
    calls = [0]

    def check_every_50() -> bool:  # ask the admin endpoint now and then, not per request
        calls[0] += 1
        return calls[0] % 50 == 0 and until()

    tally, value, counts = counter(live.port, connections, 0, table, until=check_every_50, ballast=True)
    assert len(until.seen) > 1, f"the table did not re-partition while the workload ran: {until.seen}"
    assert tally.failed == 0, tally.failures
    assert value == tally.ok > 0
    assert counts[1] > counts[0]


def test_transfers_lose_no_item_and_conserve_the_sum_while_the_table_re_partitions(live):
    table = "transfer"
    until = _grown(live.port, table)
    calls = [0]

    def check_every_50() -> bool:
        calls[0] += 1
        return calls[0] % 50 == 0 and until()

    tally, total, found, counts = transfer(live.port, 6, check_every_50, table, ballast=True)
    assert len(until.seen) > 1, f"the table did not re-partition while the workload ran: {until.seen}"
    assert tally.missing == 0 and tally.failed == 0, tally.failures
    assert found == ACCOUNTS and total == ACCOUNTS * START_BALANCE
    assert tally.ok > 0
