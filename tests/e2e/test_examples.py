"""The examples in examples/ run and show what they promise."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

from vector_support import needs_vectors

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _run(name: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120,
                          cwd=EXAMPLES)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_hot_partition_example_throttles_one_partition_only():
    out = _run("hot_partition.py")
    assert re.search(r"hot key user-0: \d+ reads served, then ProvisionedThroughputExceededException", out)
    assert "served" in out and "throttled (shares user-0's partition)" in out
    throttled = [int(n) for n in re.findall(r"RCU consumed, (\d+) throttled", out)]
    assert len(throttled) == 3 and sum(1 for n in throttled if n) == 1


def test_order_table_example_compares_key_designs():
    out = _run("order_table_designs.py")
    by_date = re.search(r"orders-by-date:\s+(\d+) of 600 writes throttled", out)
    by_customer = re.search(r"orders-by-customer:\s+(\d+) of 600 writes throttled", out)
    assert by_date and by_customer, out
    assert int(by_date.group(1)) == 300 and int(by_customer.group(1)) == 0
    # the report that follows names the bad design, its hot key and partition, and calls the other fine
    assert re.search(r"!!  hot key on table orders-by-date: key '2024-02-10' carried 100% of partition 0's writes", out), out
    assert "OK  fine: table orders-by-customer" in out


@needs_vectors
def test_vector_search_example_finds_the_knives_in_the_kitchen():
    out = _run("vector_search.py")
    skus = [line.split()[0] for line in out.splitlines()]
    assert skus == ["k3", "k1"], out  # the two knives, nearest first, and nothing from the garden
