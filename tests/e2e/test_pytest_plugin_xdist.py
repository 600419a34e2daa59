"""The pytest plugin under pytest-xdist: each worker runs its own server, the controller prints the summary
of what the workers recorded, and the would-be throttle warning reaches the controller's report."""
from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]
pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in dynalocal's `test` extra)")

TESTS = """
def make(client, name, **kw):
    if "ProvisionedThroughput" not in kw:
        kw["BillingMode"] = "PAY_PER_REQUEST"
    client.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], **kw)

def test_fixture_load(dynamodb_client):
    make(dynamodb_client, "loaded", ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1})
    for i in range(40):
        dynamodb_client.put_item(TableName="loaded", Item={"pk": {"S": f"customer#{i}"}})
""" + "".join(f"""
def test_tiny_{n}(dynamodb_client):
    make(dynamodb_client, "orders")
    dynamodb_client.put_item(TableName="orders", Item={{"pk": {{"S": "CUSTOMER#c1"}}}})
""" for n in range(5))


def test_the_controller_prints_what_the_workers_recorded(pytester):
    pytester.makeini("[pytest]\ndynalocal_throttling = report\ndynalocal_burst_seconds = 0\n")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=6, warnings=1)
    out = result.stdout.str()
    summary = out[out.index("dynalocal capacity"):]
    servers = re.findall(r"^(gw\d): server http://127\.0\.0\.1:\d+ started in \d+\.\d+ s; throttling report$",
                         summary, re.M)
    assert sorted(servers) == ["gw0", "gw1"], summary  # one server per worker, both reported
    assert len(re.findall(r"test_fixture_load: loaded: .*\[table rate \d+\]", summary)) == 1
    assert "5 more tables had traffic with no throttle and no partition near its ceiling" in summary
    assert re.search(r"DynalocalThrottleWarning: dynalocal: table loaded: \d+ requests would have been throttled",
                     out)
