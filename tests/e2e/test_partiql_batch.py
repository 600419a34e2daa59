"""BatchExecuteStatement and ExecuteTransaction through boto3, and PartiQL under throttling."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError
from conftest import FakeClock, LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context


@pytest.fixture
def table(ddb, make_table):
    name = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])
    for i in range(3):
        ddb.put_item(TableName=name, Item={"pk": {"S": "a"}, "sk": {"N": str(i)}, "v": {"N": str(i * 10)}})
    return name


def S(statement: str, *params, **extra) -> dict:
    out = {"Statement": statement, **extra}
    if params:
        out["Parameters"] = list(params)
    return out


def batch(ddb, *statements, **kwargs) -> dict:
    out = ddb.batch_execute_statement(Statements=list(statements), **kwargs)
    out.pop("ResponseMetadata")
    return out


def transact(ddb, *statements, **kwargs) -> dict:
    out = ddb.execute_transaction(TransactStatements=list(statements), **kwargs)
    out.pop("ResponseMetadata")
    return out


def error(info) -> tuple[str, str]:
    return info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]


# -- BatchExecuteStatement ------------------------------------------------------------------------

def test_batch_reads_with_per_statement_errors(ddb, table):
    t = table
    out = batch(ddb, S(f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 1"),
                S(f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 99"),
                S(f"SELECT v FROM \"{t}\" WHERE pk = ? AND sk = ?", {"S": "a"}, {"N": "2"}, ConsistentRead=True),
                S(f"SELECT * FROM \"{t}\" WHERE pk = 'a'"),
                S("SELECT * FROM \"missing-table\" WHERE pk = 'a' AND sk = 1"),
                S("SELEC"),
                ReturnConsumedCapacity="TOTAL")
    responses = out["Responses"]
    assert responses[0] == {"TableName": t, "Item": {"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"N": "10"}}}
    assert responses[1] == {"TableName": t}
    assert responses[2] == {"TableName": t, "Item": {"v": {"N": "20"}}}
    assert responses[3] == {"Error": {"Code": "ValidationError", "Message": "Only single item select is supported"}}
    assert responses[4] == {"Error": {"Code": "ResourceNotFound", "Message": "Requested resource not found"}}
    assert responses[5]["Error"]["Code"] == "ValidationError"
    # each read costs what its GetItem costs: 0.5 + 0.5 + 1 (consistent)
    assert out["ConsumedCapacity"] == [{"TableName": t, "CapacityUnits": 2.0}]


def test_batch_writes(ddb, table):
    t = table
    out = batch(ddb, S(f"INSERT INTO \"{t}\" VALUE {{'pk': 'b', 'sk': 1}}"),
                S(f"INSERT INTO \"{t}\" VALUE {{'pk': 'a', 'sk': 0}}"),
                S(f"UPDATE \"{t}\" SET v = 5 WHERE pk = 'a' AND sk = 1 AND v = 0",
                  ReturnValuesOnConditionCheckFailure="ALL_OLD"),
                S(f"UPDATE \"{t}\" SET v = v + 1 WHERE pk = 'a' AND sk = 2"),
                S(f"DELETE FROM \"{t}\" WHERE pk = 'x' AND sk = 1"),
                S(f"UPDATE \"{t}\" SET v = 1 WHERE pk = 'a'"),
                ReturnConsumedCapacity="TOTAL")
    r = out["Responses"]
    assert r[0] == {"TableName": t}
    assert r[1] == {"Error": {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"}}
    assert r[2] == {"Error": {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed",
                              "Item": {"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"N": "10"}}}}
    assert r[3] == {"TableName": t} and r[4] == {"TableName": t}
    assert r[5]["Error"] == {"Code": "ValidationError",
                             "Message": "Where clause does not contain a mandatory equality on all key attributes"}
    get = ddb.get_item(TableName=t, Key={"pk": {"S": "a"}, "sk": {"N": "2"}})["Item"]
    assert get["v"] == {"N": "21"}
    assert "Item" in ddb.get_item(TableName=t, Key={"pk": {"S": "b"}, "sk": {"N": "1"}})
    # 1 (insert) + 1 (update) + 1 (delete of a missing item); failed statements are charged to the table
    # (as their single-item operations are) but, raising, report no units to add here
    assert out["ConsumedCapacity"] == [{"TableName": t, "CapacityUnits": 3.0}]


def test_batch_mixed_and_duplicate_statements_are_refused_whole(ddb, table):
    with pytest.raises(ClientError) as info:
        batch(ddb, S(f"SELECT * FROM \"{table}\" WHERE pk = 'a' AND sk = 1"),
              S(f"INSERT INTO \"{table}\" VALUE {{'pk': 'z', 'sk': 1}}"))
    assert error(info) == ("ValidationException", "Read and write requests together in the same batch is not supported.")
    with pytest.raises(ClientError) as info:
        batch(ddb, S(f"INSERT INTO \"{table}\" VALUE {{'pk': 'z', 'sk': 1}}"),
              S(f"DELETE FROM \"{table}\" WHERE pk = 'z' AND sk = 1.0"))
    assert error(info) == ("ValidationException", "Provided list of item keys contains duplicates")
    assert "Item" not in ddb.get_item(TableName=table, Key={"pk": {"S": "z"}, "sk": {"N": "1"}})
    with pytest.raises(ClientError) as info:
        batch(ddb, S(f"SELECT * FROM \"{table}\" WHERE pk = 'a' AND sk = 1"),
              S(f"SELECT v FROM \"{table}\" WHERE sk = 1 AND pk = 'a'"))
    assert error(info) == ("ValidationException", "Provided list of item keys contains duplicates")


def test_batch_limits(ddb, table):
    with pytest.raises(ClientError) as info:
        batch(ddb, *[S(f"SELECT * FROM \"{table}\" WHERE pk = 'a' AND sk = {i}") for i in range(26)])
    assert "25" in error(info)[1]


# -- ExecuteTransaction ---------------------------------------------------------------------------

def test_transaction_reads(ddb, table):
    out = transact(ddb, S(f"SELECT * FROM \"{table}\" WHERE pk = 'a' AND sk = 1"),
                   S(f"SELECT v FROM \"{table}\" WHERE pk = 'a' AND sk = 2"),
                   S(f"SELECT v FROM \"{table}\" WHERE pk = 'a' AND sk = 99"),
                   ReturnConsumedCapacity="TOTAL")
    assert out["Responses"] == [{"Item": {"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"N": "10"}}},
                                {"Item": {"v": {"N": "20"}}}, {}]
    assert out["ConsumedCapacity"][0]["CapacityUnits"] == 6.0  # 2 x 1 RCU per item, missing ones too


def test_transaction_writes_apply_together_at_twice_the_capacity(ddb, table):
    t = table
    out = transact(ddb, S(f"INSERT INTO \"{t}\" VALUE {{'pk': 'n', 'sk': 1}}"),
                   S(f"UPDATE \"{t}\" SET v = v + 1 WHERE pk = 'a' AND sk = 1"),
                   S(f"DELETE FROM \"{t}\" WHERE pk = 'a' AND sk = 0"),
                   S(f"EXISTS(SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 2 AND v = 20)"),
                   ReturnConsumedCapacity="TOTAL")
    assert out["Responses"] == []
    assert out["ConsumedCapacity"][0]["CapacityUnits"] == 8.0
    rows = {int(i["sk"]["N"]): i for i in ddb.query(TableName=t, KeyConditionExpression="pk = :a",
                                                    ExpressionAttributeValues={":a": {"S": "a"}})["Items"]}
    assert set(rows) == {1, 2} and rows[1]["v"] == {"N": "11"}


def test_transaction_cancellation_reasons_in_statement_order(ddb, table):
    t = table
    with pytest.raises(ClientError) as info:
        transact(ddb, S(f"INSERT INTO \"{t}\" VALUE {{'pk': 'y', 'sk': 1}}"),
                 S(f"INSERT INTO \"{t}\" VALUE {{'pk': 'a', 'sk': 1}}"),
                 S(f"UPDATE \"{t}\" SET v = 1 WHERE pk = 'a' AND sk = 2 AND v = 5"),
                 S(f"EXISTS(SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 0 AND v = 0)"),
                 S(f"UPDATE \"{t}\" SET v = 1 WHERE pk = 'missing' AND sk = 2"))
    assert info.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert info.value.response["CancellationReasons"] == [
        {"Code": "None"}, {"Code": "ValidationError", "Message": "Duplicate primary key exists in table"},
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}, {"Code": "None"},
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}]
    assert "[None, ValidationError, ConditionalCheckFailed, None, ConditionalCheckFailed]" in error(info)[1]
    assert "Item" not in ddb.get_item(TableName=t, Key={"pk": {"S": "y"}, "sk": {"N": "1"}}), "nothing applied"


def test_transaction_client_request_token_is_idempotent(ddb, table):
    token = uuid.uuid4().hex
    statement = S(f"UPDATE \"{table}\" SET v = v + 1 WHERE pk = 'a' AND sk = 1")
    transact(ddb, statement, ClientRequestToken=token)
    transact(ddb, statement, ClientRequestToken=token)
    assert ddb.get_item(TableName=table, Key={"pk": {"S": "a"}, "sk": {"N": "1"}})["Item"]["v"] == {"N": "11"}
    with pytest.raises(ClientError) as info:
        transact(ddb, S(f"UPDATE \"{table}\" SET v = v + 2 WHERE pk = 'a' AND sk = 1"), ClientRequestToken=token)
    assert error(info)[0] == "IdempotentParameterMismatchException"


@pytest.mark.parametrize("statements,message", [
    (["SELECT * FROM \"{t}\" WHERE pk = 'a'"],
     "Validation failed in TransactStatements[0]: Select statements within ExecuteTransaction must specify the primary "
     "key in the where clause."),
    (["SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 1", "INSERT INTO \"{t}\" VALUE {{'pk': 'z', 'sk': 1}}"],
     "ExecuteTransaction API does not support both read and write operations in the same request."),
    (["EXISTS(SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 1)"],
     "Validation failed in TransactStatements[0]: EXISTS() must contain a single item read with additional condition"),
    (["UPDATE \"{t}\" SET v = 1 WHERE pk = 'a' AND sk = 1 RETURNING ALL NEW *"],
     "Validation failed in TransactStatements[0]: RETURNING clause is not supported in ExecuteTransaction."),
    (["NOT EXISTS(SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 1 AND v = 1)"], "Unsupported operation in transaction."),
    (["UPDATE \"{t}\" SET v = 1 WHERE pk = 'a' AND sk = 1", "DELETE FROM \"{t}\" WHERE pk = 'a' AND sk = 1"],
     "Transaction request cannot include multiple operations on one item"),
    (["SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 1", "SELECT v FROM \"{t}\" WHERE pk = 'a' AND sk = 1"],
     "Transaction request cannot include multiple operations on one item"),
])
def test_transaction_validation(ddb, table, statements, message):
    with pytest.raises(ClientError) as info:
        transact(ddb, *[S(s.format(t=table)) for s in statements])
    assert error(info) == ("ValidationException", message)


# -- throttling: PartiQL is metered like the equivalent operation --------------------------------

@pytest.fixture(scope="module")
def throttled():
    with LiveServer(Context(settings=Settings(burst_seconds=2.0, throttling="enforce"), clock=FakeClock())) as live:
        yield live.client(retries={"total_max_attempts": 1, "mode": "standard"})


def _provisioned(client, rcu: int, wcu: int) -> str:
    name = f"pq-{uuid.uuid4().hex[:10]}"
    client.create_table(TableName=name, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                        ProvisionedThroughput={"ReadCapacityUnits": rcu, "WriteCapacityUnits": wcu},
                        Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
    return name


def test_select_throttles_like_get_item(throttled):
    t = _provisioned(throttled, 10, 10)  # 20 units of burst
    throttled.put_item(TableName=t, Item={"id": {"S": "k"}})
    served = 0
    with pytest.raises(ClientError) as info:
        for _ in range(100):
            throttled.execute_statement(Statement=f"SELECT * FROM \"{t}\" WHERE id = 'k'", ConsistentRead=True)
            served += 1
    assert served == 20 and error(info)[0] == "ProvisionedThroughputExceededException"


def test_throttled_batch_statements_report_per_statement_errors(throttled):
    t = _provisioned(throttled, 10, 1)  # 2 write units of burst
    out = throttled.batch_execute_statement(Statements=[
        {"Statement": f"INSERT INTO \"{t}\" VALUE {{'id': '{i}'}}"} for i in range(4)])["Responses"]
    assert out[:2] == [{"TableName": t}, {"TableName": t}]
    assert [r["Error"]["Code"] for r in out[2:]] == ["ProvisionedThroughputExceeded"] * 2
    assert throttled.scan(TableName=t)["Count"] == 2
