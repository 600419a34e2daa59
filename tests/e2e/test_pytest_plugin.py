"""The pytest plugin, run by pytester: fixtures, isolation, seed data, options, assertions, summary."""
from __future__ import annotations

import json
import re

import pytest

pytest_plugins = ["pytester"]

TABLE = """
def make(client, name, **kw):
    if "ProvisionedThroughput" not in kw:
        kw["BillingMode"] = "PAY_PER_REQUEST"
    client.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], **kw)
"""


def test_fixtures_bind_boto3_to_the_session_server(pytester):
    pytester.makepyfile(TABLE + """
def test_client(dynamodb_client, dynalocal):
    make(dynamodb_client, "things")
    dynamodb_client.put_item(TableName="things", Item={"pk": {"S": "a"}})
    assert dynamodb_client.meta.endpoint_url == dynalocal.url
    assert dynamodb_client.get_item(TableName="things", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}

def test_resource(dynamodb_resource, dynamodb_client):
    make(dynamodb_client, "rows")
    dynamodb_resource.Table("rows").put_item(Item={"pk": "b", "n": 3})
    assert dynamodb_resource.Table("rows").get_item(Key={"pk": "b"})["Item"]["n"] == 3
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.re_match_lines([r".*dynalocal capacity.*", r"server http://127\.0\.0\.1:\d+ started in \d+\.\d+ s.*"])


def test_reset_isolation_drops_tables_between_tests(pytester):
    pytester.makepyfile(TABLE + """
def test_first(dynamodb_client):
    make(dynamodb_client, "shared-name")

def test_second(dynamodb_client):
    assert dynamodb_client.list_tables()["TableNames"] == []
    make(dynamodb_client, "shared-name")  # no ResourceInUseException: the first test's table is gone
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_isolation_none_keeps_tables_for_the_session(pytester):
    pytester.makeini("[pytest]\ndynalocal_isolation = none\n")
    pytester.makepyfile(TABLE + """
def test_first(dynamodb_client):
    make(dynamodb_client, "kept")

def test_second(dynamodb_client):
    assert dynamodb_client.list_tables()["TableNames"] == ["kept"]
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_namespace_isolation_gives_each_test_its_own_tables_and_seed_data(pytester):
    seed = [{"TableName": "users", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
             "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
             "BillingMode": "PAY_PER_REQUEST", "Items": [{"pk": {"S": "alice"}}]}]
    pytester.makefile(".json", seed=json.dumps(seed))
    pytester.makeini("[pytest]\ndynalocal_isolation = namespace\ndynalocal_init = seed.json\n")
    pytester.makepyfile(TABLE + """
def test_first(dynamodb_client, dynalocal):
    make(dynamodb_client, "mine")
    dynamodb_client.put_item(TableName="users", Item={"pk": {"S": "bob"}})
    assert sorted(dynamodb_client.list_tables()["TableNames"]) == ["mine", "users"]
    assert [t.table for t in dynalocal.report()] == ["mine", "users"]

def test_second(dynamodb_client, dynamodb_resource, dynalocal):
    # the first test's table and item live in its own account: this test sees only its seed data
    assert dynamodb_client.list_tables()["TableNames"] == ["users"]
    assert [i["pk"] for i in dynamodb_resource.Table("users").scan()["Items"]] == ["alice"]
    make(dynamodb_client, "mine")  # the same name again: no ResourceInUseException
    dynalocal.assert_no_throttles()
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_seed_data_from_the_ini_is_loaded_again_after_each_reset(pytester):
    seed = [{"TableName": "users", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
             "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
             "BillingMode": "PAY_PER_REQUEST", "Items": [{"pk": {"S": "alice"}}]}]
    pytester.makefile(".json", seed=json.dumps(seed))
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\ndynalocal_init = "seed.json"\n')
    pytester.makepyfile("""
def test_first(dynamodb_client):
    dynamodb_client.delete_item(TableName="users", Key={"pk": {"S": "alice"}})
    dynamodb_client.put_item(TableName="users", Item={"pk": {"S": "bob"}})

def test_second(dynamodb_client):
    assert [i["pk"]["S"] for i in dynamodb_client.scan(TableName="users")["Items"]] == ["alice"]
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_options_reach_the_server(pytester, tmp_path):
    pytester.makeini(f"[pytest]\ndynalocal_throttling = report\ndynalocal_burst_seconds = 7\n"
                     f"dynalocal_data_dir = {tmp_path / 'data'}\n")
    pytester.makepyfile("""
def test_settings(dynalocal):
    s = dynalocal.ctx.settings
    assert (s.throttling, s.burst_seconds) == ("report", 7.0)
    assert s.data_dir.endswith("data") and dynalocal.ctx.journal is not None
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # the command line overrides the ini file
    pytester.makepyfile(test_flag_overrides_ini="""
def test_settings(dynalocal):
    assert dynalocal.ctx.settings.throttling == "off"
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "--dynalocal-throttling", "off", "test_flag_overrides_ini.py")
    result.assert_outcomes(passed=1)


def test_no_server_and_no_summary_without_the_fixtures(pytester):
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "dynalocal capacity" not in result.stdout.str()


def test_bad_isolation_option_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\ndynalocal_isolation = sometimes\n")
    pytester.makepyfile("def test_x(dynalocal):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert re.search(r"dynalocal_isolation must be one of reset, namespace, none", result.stdout.str() + result.stderr.str())


CLASSIC = """[pytest]
dynalocal_capacity_model = classic
dynalocal_burst_seconds = 0
"""
LOAD = TABLE + """
from botocore.exceptions import ClientError

def orders(dynalocal):
    client = dynalocal.client(retries={"total_max_attempts": 1, "mode": "standard"})
    # 8 WCU over 4 partitions: each partition's classic share is 2 WCU/s, with no burst
    make(client, "orders", ProvisionedThroughput={"ReadCapacityUnits": 4, "WriteCapacityUnits": 8},
         Tags=[{"Key": "dynalocal:partitions", "Value": "4"}])
    return client

def write(client, keys):
    refused = 0
    for key in keys:
        try:
            client.put_item(TableName="orders", Item={"pk": {"S": key}})
        except ClientError:
            refused += 1
    return refused
"""


def test_capacity_assertions_and_verdicts_in_tests(pytester):
    # Every table gets a summary line: whether the calm test's partitions peak near their ceiling (and
    # so earn a line by default) depends on whether its writes fall in one second or straddle two.
    pytester.makeini(CLASSIC + "dynalocal_summary = all\n")
    pytester.makepyfile(LOAD + """
import pytest
from dynalocal.testing import CapacityAssertionError

def test_hot_key_fails_both_assertions(dynalocal):
    client = orders(dynalocal)
    assert write(client, ["2024-11-23"] * 30) > 0
    with pytest.raises(CapacityAssertionError, match=r"orders: \\d+ throttled \\(partition share \\d+ \\(refused\\)\\)"):
        dynalocal.assert_no_throttles()
    with pytest.raises(CapacityAssertionError, match=r"partition \\d of 4 took 100% of write units"):
        dynalocal.assert_no_hot_partition("orders", max_share=0.5)
    [report] = dynalocal.report("orders")
    assert report.verdict.kind == "hot key" and report.verdict.key == "2024-11-23"

def test_calm_traffic_passes_both(dynalocal):
    client = orders(dynalocal)
    assert write(client, [f"CUSTOMER#{n}" for n in range(4)]) == 0
    dynalocal.assert_no_throttles()
    dynalocal.assert_no_hot_partition("orders", max_share=0.9)
    assert dynalocal.report("orders")[0].verdict.kind == "fine"

def test_assertion_failure_reads_as_a_verdict(dynalocal):
    write(orders(dynalocal), ["2024-11-23"] * 30)
    dynalocal.assert_no_throttles()
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "CapacityAssertionError: requests were throttled:" in out
    assert "hot key on table orders: key '2024-11-23'" in out
    # the end-of-session summary: one line per test and table, with the verdict and throttles by cause
    summary = out[out.index("dynalocal capacity"):]
    assert re.search(r"test_hot_key_fails_both_assertions: orders: hot key on table orders: key '2024-11-23' "
                     r"carried 100% of partition \d's writes.*\[partition share \d+\]", summary)
    assert re.search(r"test_calm_traffic_passes_both: orders: fine: table orders .*\[no throttles\]", summary)


# -- would-be throttles, quiet summaries, dynalocal_env, the missing-boto3 message ------------------------

FIXTURE_LOAD = TABLE + """
def load(client, table, n):
    # the usual fixture: a 1/1 provisioned table loaded with batch_writer-sized writes
    make(client, table, ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1})
    for i in range(n):
        client.put_item(TableName=table, Item={"pk": {"S": f"customer#{i}"}})
"""


@pytest.mark.parametrize("mode", ["keys", "report"])
def test_would_be_throttles_warn_in_the_test_that_caused_them(pytester, mode):
    # keys (the default: no ini line) and report: capacity-setting throttles are recorded, not refused
    setting = "" if mode == "keys" else f"dynalocal_throttling = {mode}\n"
    pytester.makeini(f"[pytest]\n{setting}dynalocal_burst_seconds = 0\n")
    pytester.makepyfile(FIXTURE_LOAD + """
def test_loads_a_small_table(dynamodb_client):
    load(dynamodb_client, "fixture_load", 40)  # nothing refused: every put succeeds

def test_quiet(dynamodb_client):
    make(dynamodb_client, "calm")
    dynamodb_client.put_item(TableName="calm", Item={"pk": {"S": "a"}})
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    out = result.stdout.str()
    warning = re.search(r"test_loads_a_small_table\n.*DynalocalThrottleWarning: dynalocal: table fixture_load: "
                        r"(\d+) requests would have been throttled \(table rate (\d+)\) but were not refused "
                        rf"\(dynalocal_throttling = {mode}\); fix: raise the table's ReadCapacityUnits/"
                        r"WriteCapacityUnits \(or use PAY_PER_REQUEST\), or set dynalocal_throttling = enforce "
                        r"in pytest.ini to see them refused", out)
    assert warning and int(warning[1]) == int(warning[2]) > 0, out
    assert "--throttling" not in out  # the plugin's messages name the ini option
    # the summary: one line for the throttled table, none for the calm one
    summary = out[out.index("dynalocal capacity"):]
    assert len(re.findall(r"test_loads_a_small_table: fixture_load: .*\[table rate \d+\]", summary)) == 1
    assert "test_quiet" not in summary
    assert "1 more table had traffic with no throttle and no partition near its ceiling" in summary


def test_refused_throttles_do_not_warn(pytester):
    pytester.makeini("[pytest]\ndynalocal_throttling = enforce\ndynalocal_burst_seconds = 0\n")
    pytester.makepyfile(FIXTURE_LOAD + """
import pytest
from botocore.exceptions import ClientError

def test_refused(dynalocal):
    client = dynalocal.client(retries={"total_max_attempts": 1, "mode": "standard"})
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        load(client, "strict", 40)
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "DynalocalThrottleWarning" not in result.stdout.str()


def test_summary_is_quiet_for_tiny_tests_and_lists_them_on_request(pytester):
    pytester.makepyfile(TABLE + "".join(f"""
def test_tiny_{n}(dynamodb_client):
    make(dynamodb_client, "orders")
    dynamodb_client.put_item(TableName="orders", Item={{"pk": {{"S": "CUSTOMER#c1"}}}})
    dynamodb_client.put_item(TableName="orders", Item={{"pk": {{"S": "CUSTOMER#c2"}}}})
""" for n in range(5)))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    summary = result.stdout.str()[result.stdout.str().index("dynalocal capacity"):]
    assert "test_tiny" not in summary and "CUSTOMER" not in summary and "hot key" not in summary
    assert "5 more tables had traffic with no throttle and no partition near its ceiling" in summary
    result = pytester.runpytest("-p", "no:cacheprovider", "--dynalocal-summary", "all")
    summary = result.stdout.str()[result.stdout.str().index("dynalocal capacity"):]
    assert len(re.findall(r"test_tiny_\d: orders: ", summary)) == 5  # one line per table per test


APP = """
import os
import boto3

ORIGINAL = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")

def app_tables():  # the application builds its own client, as applications do
    return boto3.client("dynamodb").list_tables()["TableNames"]

def app_create(name):
    boto3.resource("dynamodb").create_table(
        TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
"""


def test_dynalocal_env_points_application_clients_at_the_server(pytester, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")  # would make boto3 fail if the fixture kept it
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    pytester.makepyfile(APP + """
def test_app_client(dynalocal_env, dynamodb_client, dynalocal):
    assert dynalocal_env["AWS_ENDPOINT_URL_DYNAMODB"] == dynalocal.url == os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    app_create("made-by-the-app")
    assert dynamodb_client.list_tables()["TableNames"] == ["made-by-the-app"]  # the same server
    assert app_tables() == ["made-by-the-app"]

def test_environment_restored_after_the_test():
    assert os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") == ORIGINAL
    assert os.environ["AWS_PROFILE"] == "no-such-profile"
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_dynalocal_env_follows_namespace_isolation(pytester):
    pytester.makeini("[pytest]\ndynalocal_isolation = namespace\n")
    pytester.makepyfile(APP + """
def test_first(dynalocal_env, dynalocal):
    assert dynalocal_env["AWS_ACCESS_KEY_ID"] == dynalocal.access_key
    app_create("mine")
    assert app_tables() == ["mine"]

def test_second(dynalocal_env, dynamodb_client):
    assert app_tables() == []  # the first test's table lives in its own namespace
    app_create("mine")  # the same name again
    assert dynamodb_client.list_tables()["TableNames"] == ["mine"]  # fixture and app clients agree
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_missing_boto3_names_the_extra_to_install(pytester):
    pytester.makeconftest("""
import sys
import pytest

@pytest.fixture(autouse=True)
def no_boto3(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # `import boto3` now fails as if not installed
""")
    pytester.makepyfile("def test_client(dynamodb_client):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    assert ("ModuleNotFoundError: dynalocal's boto3 clients and pytest fixtures need boto3, which is not installed: "
            "pip install 'dynalocal[pytest]'") in result.stdout.str()


def test_a_marker_enforces_and_assert_no_throttles_says_which_kind(pytester):
    # the default (keys) records a 1/1 table's capacity-setting throttles; the marker refuses them
    pytester.makeini("[pytest]\ndynalocal_burst_seconds = 0\n")
    pytester.makepyfile(FIXTURE_LOAD + """
import pytest
from botocore.exceptions import ClientError
from dynalocal.testing import CapacityAssertionError

def test_default_records(dynalocal):
    load(dynalocal.client(retries={"max_attempts": 1}), "recorded", 20)  # nothing refused
    with pytest.raises(CapacityAssertionError, match=r"table rate \\d+ \\(would-be: recorded, not refused under keys\\)"):
        dynalocal.assert_no_throttles()

@pytest.mark.dynalocal_throttling("enforce")
def test_marker_refuses(dynalocal):
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        load(dynalocal.client(retries={"max_attempts": 1}), "refused", 20)
    with pytest.raises(CapacityAssertionError, match=r"table rate \\d+ \\(refused\\)"):
        dynalocal.assert_no_throttles()

def test_mode_restored_after_the_marked_test(dynalocal):
    assert dynalocal.ctx.settings.throttling == "keys"
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::dynalocal.pytest_plugin.DynalocalThrottleWarning")
    result.assert_outcomes(passed=3)
