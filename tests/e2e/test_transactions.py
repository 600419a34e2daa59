"""TransactWriteItems / TransactGetItems: atomicity, isolation, cancellation reasons, idempotency."""
from __future__ import annotations

import concurrent.futures
import random

import pytest
from botocore.exceptions import ClientError


@pytest.fixture
def table(make_table):
    return make_table([("id", "HASH")], [("id", "S")])


def _key(k: str) -> dict:
    return {"id": {"S": k}}


def _cancel_codes(info) -> list[str]:
    assert info.value.response["Error"]["Code"] == "TransactionCanceledException"
    return [r["Code"] for r in info.value.response["CancellationReasons"]]


def test_all_actions_apply_together(ddb, table):
    ddb.put_item(TableName=table, Item={**_key("gone"), "v": {"N": "1"}})
    ddb.put_item(TableName=table, Item={**_key("check"), "v": {"N": "1"}})
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": table, "Item": {**_key("new"), "v": {"N": "1"}}, "ConditionExpression": "attribute_not_exists(id)"}},
        {"Update": {"TableName": table, "Key": _key("upd"), "UpdateExpression": "SET v = :v", "ExpressionAttributeValues": {":v": {"N": "2"}}}},
        {"Delete": {"TableName": table, "Key": _key("gone")}},
        {"ConditionCheck": {"TableName": table, "Key": _key("check"), "ConditionExpression": "v = :one",
                            "ExpressionAttributeValues": {":one": {"N": "1"}}}},
    ])
    got = ddb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": _key(k)}}
                                                for k in ("new", "upd", "gone", "check")])["Responses"]
    assert [r.get("Item", {}).get("v") for r in got] == [{"N": "1"}, {"N": "2"}, None, {"N": "1"}]
    assert got[2] == {}


def test_a_failed_condition_cancels_everything_with_reasons_in_order(ddb, table):
    ddb.put_item(TableName=table, Item={**_key("a"), "v": {"N": "5"}})
    ddb.put_item(TableName=table, Item={**_key("c"), "v": {"N": "6"}})
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": table, "Item": {**_key("b"), "v": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": table, "Key": _key("a"), "ConditionExpression": "v = :x",
                                "ExpressionAttributeValues": {":x": {"N": "0"}}, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
            {"Delete": {"TableName": table, "Key": _key("c"), "ConditionExpression": "attribute_not_exists(id)"}},
        ])
    assert _cancel_codes(info) == ["None", "ConditionalCheckFailed", "ConditionalCheckFailed"]
    reasons = info.value.response["CancellationReasons"]
    assert reasons[1]["Item"] == {**_key("a"), "v": {"N": "5"}} and "Item" not in reasons[2]
    assert reasons[1]["Message"] == "The conditional request failed"
    assert "[None, ConditionalCheckFailed, ConditionalCheckFailed]" in info.value.response["Error"]["Message"]
    assert "Item" not in ddb.get_item(TableName=table, Key=_key("b")), "nothing is applied on cancellation"


def test_validation_error_reason_for_a_bad_key(ddb, make_table):
    t = make_table([("id", "HASH")], [("id", "N")])
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": t, "Item": {"id": {"N": "1"}}}},
            {"Put": {"TableName": t, "Item": {"id": {"S": "not-a-number"}}}},
        ])
    assert _cancel_codes(info) == ["None", "ValidationError"]
    assert "Type mismatch" in info.value.response["CancellationReasons"][1]["Message"]
    assert "Item" not in ddb.get_item(TableName=t, Key={"id": {"N": "1"}})


def test_request_level_validation_errors(ddb, table):
    cases = [
        ([{"Put": {"TableName": table, "Item": _key("x")}}, {"Delete": {"TableName": table, "Key": _key("x")}}],
         "Transaction request cannot include multiple operations on one item"),
        ([{"Put": {"TableName": table, "Item": _key("x"), "ConditionExpression": "v = :x"}}],
         "An expression attribute value used in expression is not defined"),
        ([{"Put": {"TableName": table, "Item": _key("x")}, "Delete": {"TableName": table, "Key": _key("y")}}],
         "TransactItems can only contain one of Check, Put, Update or Delete"),
    ]
    for items, words in cases:
        with pytest.raises(ClientError) as info:
            ddb.transact_write_items(TransactItems=items)
        assert info.value.response["Error"]["Code"] == "ValidationException"
        assert words in info.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": _key(str(i))}} for i in range(101)])
    assert info.value.response["Error"]["Code"] == "ValidationException" and "100" in info.value.response["Error"]["Message"]
    with pytest.raises(ddb.exceptions.ResourceNotFoundException):
        ddb.transact_write_items(TransactItems=[{"Put": {"TableName": "no-such-table", "Item": _key("x")}}])


def test_client_request_token_idempotency(ddb, table):
    ddb.put_item(TableName=table, Item={**_key("n"), "v": {"N": "0"}})
    bump = [{"Update": {"TableName": table, "Key": _key("n"), "UpdateExpression": "SET v = v + :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}}}}]
    ddb.transact_write_items(TransactItems=bump, ClientRequestToken="token-1")
    ddb.transact_write_items(TransactItems=bump, ClientRequestToken="token-1")
    assert ddb.get_item(TableName=table, Key=_key("n"))["Item"]["v"] == {"N": "1"}, "a replay applies nothing"
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(TransactItems=bump + [{"Put": {"TableName": table, "Item": _key("z")}}],
                                 ClientRequestToken="token-1")
    assert info.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    ddb.transact_write_items(TransactItems=bump, ClientRequestToken="token-2")
    assert ddb.get_item(TableName=table, Key=_key("n"))["Item"]["v"] == {"N": "2"}


def test_transactional_capacity_is_doubled(ddb, table):
    ddb.put_item(TableName=table, Item={**_key("big"), "pad": {"S": "x" * 5000}})
    r = ddb.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": _key("a")}}],
                                 ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 2.0, "WriteCapacityUnits": 2.0}]
    r = ddb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": _key("big")}},
                                              {"Get": {"TableName": table, "Key": _key("a")}}],
                               ReturnConsumedCapacity="TOTAL")
    assert r["ConsumedCapacity"][0]["CapacityUnits"] == 2 * 2.0 + 2 * 1.0


def test_transact_get_items_projection_and_missing(ddb, table):
    ddb.put_item(TableName=table, Item={**_key("a"), "x": {"S": "1"}, "y": {"S": "2"}})
    got = ddb.transact_get_items(TransactItems=[
        {"Get": {"TableName": table, "Key": _key("a"), "ProjectionExpression": "#y", "ExpressionAttributeNames": {"#y": "y"}}},
        {"Get": {"TableName": table, "Key": _key("missing")}},
    ])["Responses"]
    assert got == [{"Item": {"y": {"S": "2"}}}, {}]


def test_concurrent_transfers_conserve_the_total_and_reads_see_snapshots(server, table):
    accounts = [f"acct-{i}" for i in range(6)]
    setup = server.client()
    for a in accounts:
        setup.put_item(TableName=table, Item={**_key(a), "bal": {"N": "100"}})

    def transfer(seed: int) -> int:
        client = server.client()
        rnd = random.Random(seed)
        done = 0
        for _ in range(15):
            src, dst = rnd.sample(accounts, 2)
            amount = str(rnd.randint(1, 40))
            try:
                client.transact_write_items(TransactItems=[
                    {"Update": {"TableName": table, "Key": _key(src), "UpdateExpression": "SET bal = bal - :x",
                                "ConditionExpression": "bal >= :x", "ExpressionAttributeValues": {":x": {"N": amount}}}},
                    {"Update": {"TableName": table, "Key": _key(dst), "UpdateExpression": "SET bal = bal + :x",
                                "ExpressionAttributeValues": {":x": {"N": amount}}}},
                ])
                done += 1
            except ClientError as err:
                assert err.response["Error"]["Code"] == "TransactionCanceledException"
        return done

    def audit(_: int) -> list[int]:
        client = server.client()
        totals = []
        for _ in range(15):
            got = client.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": _key(a)}}
                                                           for a in accounts])["Responses"]
            totals.append(sum(int(r["Item"]["bal"]["N"]) for r in got))
        return totals

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        writers = [pool.submit(transfer, s) for s in range(5)]
        readers = [pool.submit(audit, s) for s in range(3)]
        assert sum(w.result() for w in writers) > 0
        assert all(t == 600 for r in readers for t in r.result()), "every snapshot read sees the same total"
    final = audit(0)[0]
    assert final == 600


def test_throttled_actions_cancel_with_a_throughput_reason():
    from conftest import LiveServer

    from dynalocal.config import Settings
    from dynalocal.engine.context import Context

    class Frozen:
        def __call__(self) -> float:
            return 100.0

    with LiveServer(Context(settings=Settings(burst_seconds=2, throttling="enforce"), clock=Frozen())) as live:
        client = live.client(retries={"total_max_attempts": 1, "mode": "standard"})
        client.create_table(TableName="tx-throttle", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                            ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
                            Tags=[{"Key": "dynalocal:partitions", "Value": "1"}])
        client.put_item(TableName="tx-throttle", Item=_key("a"))  # 1 of the 2 burst write units
        client.transact_write_items(TransactItems=[{"Put": {"TableName": "tx-throttle", "Item": _key("b")}}])
        with pytest.raises(ClientError) as info:  # the bucket is now in debt: refused, not applied
            client.transact_write_items(TransactItems=[{"Put": {"TableName": "tx-throttle", "Item": _key("c")}}])
        assert _cancel_codes(info) == ["ProvisionedThroughputExceeded"]
        assert "provisioned throughput" in info.value.response["CancellationReasons"][0]["Message"]
        assert "Item" not in client.get_item(TableName="tx-throttle", Key=_key("c"))
