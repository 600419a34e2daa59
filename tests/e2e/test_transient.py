"""--transient-delay: tables stay CREATING / UPDATING / DELETING for a while, as on AWS (simulated clock)."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock

from dynalocal.config import Settings
from dynalocal.engine.context import Context

KEYS = [{"AttributeName": "id", "KeyType": "HASH"}]
DEFS = [{"AttributeName": "id", "AttributeType": "S"}]


@pytest.fixture(scope="module")
def slow():
    clock = WallClock()
    with LiveServer(Context(settings=Settings(transient_delay=5.0), wall_clock=clock)) as live:
        live.clock = clock
        yield live


def _code(info) -> tuple[str, str]:
    return info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]


def test_a_new_table_is_creating_until_the_delay_has_passed(slow):
    ddb = slow.client(retries={"max_attempts": 0})
    ddb.create_table(TableName="creating", KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    assert ddb.describe_table(TableName="creating")["Table"]["TableStatus"] == "CREATING"
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName="creating", Item={"id": {"S": "a"}})
    assert _code(info) == ("ResourceNotFoundException", "Requested resource not found")
    with pytest.raises(ClientError) as info:
        ddb.delete_table(TableName="creating")
    assert _code(info) == ("ResourceInUseException",
                           "Attempt to change a resource which is still in use: Table is being created: creating")
    slow.clock.now += 4.9
    assert ddb.describe_table(TableName="creating")["Table"]["TableStatus"] == "CREATING"
    slow.clock.now += 0.2
    assert ddb.describe_table(TableName="creating")["Table"]["TableStatus"] == "ACTIVE"
    ddb.put_item(TableName="creating", Item={"id": {"S": "a"}})
    ddb.get_waiter("table_exists").wait(TableName="creating", WaiterConfig={"Delay": 0.1, "MaxAttempts": 5})


def test_an_update_is_updating_and_its_new_index_creating(slow):
    ddb = slow.client(retries={"max_attempts": 0})
    ddb.create_table(TableName="updating", KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    slow.clock.now += 5
    ddb.put_item(TableName="updating", Item={"id": {"S": "a"}, "g": {"S": "x"}})
    out = ddb.update_table(TableName="updating", AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
                           GlobalSecondaryIndexUpdates=[{"Create": {
                               "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                               "Projection": {"ProjectionType": "ALL"}}}])["TableDescription"]
    assert out["TableStatus"] == "UPDATING"
    table = ddb.describe_table(TableName="updating")["Table"]
    assert table["TableStatus"] == "UPDATING"
    assert table["GlobalSecondaryIndexes"][0]["IndexStatus"] == "CREATING"
    with pytest.raises(ClientError) as info:
        ddb.update_table(TableName="updating", BillingMode="PROVISIONED",
                         ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1})
    assert _code(info)[0] == "ResourceInUseException" and "Table is being updated: updating" in _code(info)[1]
    ddb.put_item(TableName="updating", Item={"id": {"S": "b"}})  # an UPDATING table serves data
    slow.clock.now += 5
    table = ddb.describe_table(TableName="updating")["Table"]
    assert table["TableStatus"] == "ACTIVE"
    assert table["GlobalSecondaryIndexes"][0]["IndexStatus"] == "ACTIVE"
    assert "Backfilling" not in table["GlobalSecondaryIndexes"][0]


def test_a_deleted_table_is_deleting_for_a_while(slow):
    ddb = slow.client(retries={"max_attempts": 0})
    ddb.create_table(TableName="deleting", KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    slow.clock.now += 5
    assert ddb.delete_table(TableName="deleting")["TableDescription"]["TableStatus"] == "DELETING"
    assert ddb.describe_table(TableName="deleting")["Table"]["TableStatus"] == "DELETING"
    assert "deleting" in ddb.list_tables()["TableNames"]
    assert ddb.delete_table(TableName="deleting")["TableDescription"]["TableStatus"] == "DELETING"  # no error
    with pytest.raises(ClientError) as info:
        ddb.create_table(TableName="deleting", KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    assert _code(info) == ("ResourceInUseException", "Table already exists: deleting")
    with pytest.raises(ClientError) as info:
        ddb.get_item(TableName="deleting", Key={"id": {"S": "a"}})
    assert _code(info)[0] == "ResourceNotFoundException"
    slow.clock.now += 5
    assert "deleting" not in ddb.list_tables()["TableNames"]
    with pytest.raises(ClientError) as info:
        ddb.describe_table(TableName="deleting")
    assert _code(info)[0] == "ResourceNotFoundException"
    ddb.get_waiter("table_not_exists").wait(TableName="deleting", WaiterConfig={"Delay": 0.1, "MaxAttempts": 5})


def test_without_a_delay_tables_are_active_at_once(ddb, make_table):
    name = make_table([("id", "HASH")], [("id", "S")])
    assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
    ddb.delete_table(TableName=name)
    assert name not in ddb.list_tables()["TableNames"]
