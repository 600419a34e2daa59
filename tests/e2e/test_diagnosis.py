"""The diagnosis end to end on a fake clock: each verdict and the burst projection through
GET /_dynalocal/report, the table list, and `dynalocal report` in the terminal."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FakeClock, LiveServer
from diagnosis_load import KB, create, put, run

from dynalocal.config import Settings
from dynalocal.engine.context import Context


@pytest.fixture
def live():
    """A server whose capacity clock moves only when the test says; partitions keep one second of burst."""
    clock = FakeClock()
    ctx = Context(settings=Settings(partition_burst_seconds=0, burst_seconds=0, throttling="enforce"), clock=clock)
    with LiveServer(ctx) as server:
        server.clock = clock
        server.ddb = server.client(retries={"total_max_attempts": 1, "mode": "standard"})
        yield server


def get(server, path: str):
    status, _, body = server.raw(None, None, method="GET", path=path)
    assert status == 200, body
    return json.loads(body)


def verdict(server, table: str) -> dict:
    [report] = get(server, f"/_dynalocal/report?table={table}")["tables"]
    return report["verdict"]


def test_hot_key_verdict_names_the_key_and_its_partition(live):
    create(live.ddb, "orders-by-date")
    # one key at 2,000 WCU/s (20 writes of 100 KB per second): twice what its partition sustains
    refused = run(live, 3, 20, lambda n: put(live.ddb, "orders-by-date", "2024-11-23", 100))
    assert refused > 0
    v = verdict(live, "orders-by-date")
    assert v["kind"] == "hot key" and v["key"] == "2024-11-23" and v["share"] == 1.0
    assert f"carried 100% of partition {v['partition']}'s writes" in v["summary"]
    assert v["projection"]["throttled_share"] > 0.3
    assert any("write sharding" in a for a in v["advice"])
    [report] = get(live, "/_dynalocal/report?table=orders-by-date")["tables"]
    assert report["throttles"] == {"partition ceiling": refused}


def test_hot_gsi_key_verdict_names_the_index(live):
    create(live.ddb, "orders-gsi", gsi=True)
    # distinct table keys, one GSI key: the index partition is the one over its ceiling
    refused = run(live, 3, 20, lambda n: put(live.ddb, "orders-gsi", f"order-{n}", 100, status="PENDING"))
    assert refused > 0
    v = verdict(live, "orders-gsi")
    assert v["kind"] == "hot GSI key" and v["index"] == "by-status" and v["key"] == "PENDING"
    [report] = get(live, "/_dynalocal/report?table=orders-gsi")["tables"]
    assert report["throttles"] == {"GSI back-pressure": refused, "partition ceiling (index by-status)": refused}


def test_under_provisioned_verdict_with_even_partitions(live):
    create(live.ddb, "orders-small", ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 10})
    # 20 WCU/s over 40 keys against 10 provisioned and no burst
    refused = run(live, 3, 20, lambda n: put(live.ddb, "orders-small", f"CUSTOMER#{n % 40}", 1))
    assert refused > 0
    v = verdict(live, "orders-small")
    assert v["kind"] == "table under-provisioned" and v["key"] is None
    assert v["needed"] >= 15
    assert any("Raise WriteCapacityUnits" in a for a in v["advice"])


def test_fine_verdict(live):
    create(live.ddb, "orders-calm", ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 50})
    assert run(live, 2, 10, lambda n: put(live.ddb, "orders-calm", f"CUSTOMER#{n}", 1)) == 0
    v = verdict(live, "orders-calm")
    assert v["kind"] == "fine" and "with no throttling" in v["summary"]


def test_projection_of_traffic_admitted_only_thanks_to_burst():
    clock = FakeClock()
    with LiveServer(Context(settings=Settings(burst_seconds=300), clock=clock)) as live:
        live.clock = clock
        ddb = live.client(retries={"total_max_attempts": 1, "mode": "standard"})
        create(ddb, "orders-burst", ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 100})
        # 200 WCU/s against 100 provisioned: admitted from the 30,000 units of burst, nothing throttled yet
        assert run(live, 3, 20, lambda n: put(ddb, "orders-burst", f"CUSTOMER#{n % 40}", 10)) == 0
        v = verdict(live, "orders-burst")
        assert v["kind"] == "table under-provisioned"
        p = v["projection"]
        assert p["scope"] == "table" and p["rate"] == 200 and p["sustained"] == 100
        assert p["throttled_share"] == 0.5
        assert 290 <= p["burst_left_seconds"] <= 300  # ~29,700 units left, spent at 100 units/s over the rate
        assert "burst capacity lasts about" in v["summary"]


def test_table_list_with_item_counts_and_sizes(live):
    create(live.ddb, "listed", gsi=True)
    put(live.ddb, "listed", "a", 2, status="NEW")
    put(live.ddb, "listed", "b", 1)
    [table] = get(live, "/_dynalocal/tables")["tables"]
    assert table["name"] == "listed" and table["item_count"] == 2 and table["billing_mode"] == "PAY_PER_REQUEST"
    assert 3 * KB - 200 <= table["size_bytes"] <= 3 * KB
    assert table["partitions"] == 4 and table["key_schema"] == {"partition_key": "pk", "sort_key": None}
    [index] = table["indexes"]
    assert index["name"] == "by-status" and index["kind"] == "GSI" and index["item_count"] == 1


def test_report_endpoint_unknown_table_is_404(live):
    status, _, body = live.raw(None, None, method="GET", path="/_dynalocal/report?table=nope")
    assert status == 404 and json.loads(body) == {"error": "no table named nope"}


def test_dynalocal_report_command(live):
    create(live.ddb, "orders-by-date")
    create(live.ddb, "orders-calm", ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 50})
    run(live, 3, 20, lambda n: put(live.ddb, "orders-by-date", "2024-11-23", 100))
    run(live, 1, 5, lambda n: put(live.ddb, "orders-calm", f"CUSTOMER#{n}", 1))
    command = [sys.executable, "-m", "dynalocal", "report", "--endpoint", live.url]
    text = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "== orders-by-date" in text and "!!  hot key on table orders-by-date: key '2024-11-23'" in text
    assert "== orders-calm" in text and "OK  fine: table orders-calm" in text
    only = subprocess.run(command + ["--table", "orders-calm", "--json"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    data = json.loads(only)
    assert [t["table"] for t in data["tables"]] == ["orders-calm"] and data["window_seconds"] == 60
    down = subprocess.run([sys.executable, "-m", "dynalocal", "report", "--endpoint", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 2 and "cannot reach a dynalocal server at http://127.0.0.1:9" in down.stderr
