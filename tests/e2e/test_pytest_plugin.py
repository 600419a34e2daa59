"""The pytest plugin, run by pytester: fixtures, isolation, seed data, options, assertions, summary."""
from __future__ import annotations

import json
import re

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
    make(dynamodb_client, "t")
    dynamodb_client.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert dynamodb_client.meta.endpoint_url == dynalocal.url
    assert dynamodb_client.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}

def test_resource(dynamodb_resource, dynamodb_client):
    make(dynamodb_client, "r")
    dynamodb_resource.Table("r").put_item(Item={"pk": "b", "n": 3})
    assert dynamodb_resource.Table("r").get_item(Key={"pk": "b"})["Item"]["n"] == 3
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
    pytester.makepyfile(test_cli="""
def test_settings(dynalocal):
    assert dynalocal.ctx.settings.throttling == "off"
""")
    pytester.runpytest("-p", "no:cacheprovider", "--dynalocal-throttling", "off", "test_cli.py").assert_outcomes(
        passed=1)


def test_no_server_and_no_summary_without_the_fixtures(pytester):
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "dynalocal capacity" not in result.stdout.str()


def test_bad_isolation_option_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\ndynalocal_isolation = sometimes\n")
    pytester.makepyfile("def test_x(dynalocal):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert re.search(r"dynalocal_isolation must be one of reset, none", result.stdout.str() + result.stderr.str())
