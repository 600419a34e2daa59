"""Key size limits (2,048 bytes partition key, 1,024 bytes sort key) in every operation that takes a key value.

An oversized value is refused with DynamoDB's message before any cache or storage sees it:
no 500 (a 3 MB value once overflowed the key encoding) and no memory kept per refused value.
"""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from dynalocal.values import keys

HASH_MESSAGE = "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
RANGE_MESSAGE = ("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size "
                 "limit of 1024 bytes")
HUGE = "h" * (3 * 1024 * 1024)  # the audit's 3 MB value: past the 16-bit length of the key encoding
BIG_HASH = "é" * 1025  # 2,050 UTF-8 bytes in 1,025 characters
BIG_RANGE = "r" * 1025


@pytest.fixture(scope="module")
def tables(ddb):
    """A table with a string sort key and a GSI on `g`, holding one item."""
    name = "key-limits"
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "g")],
                     GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                              "Projection": {"ProjectionType": "ALL"}}])
    ddb.put_item(TableName=name, Item={"pk": {"S": "a"}, "sk": {"S": "1"}, "g": {"S": "x"}})
    yield name
    ddb.delete_table(TableName=name)


def refused(call, message: str) -> None:
    with pytest.raises(ClientError) as err:
        call()
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert err.value.response["Error"]["Message"] == message
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def cancelled(call, message: str) -> None:
    """Transactions report item validation as a cancellation reason, as DynamoDB does."""
    with pytest.raises(ClientError) as err:
        call()
    assert err.value.response["Error"]["Code"] == "TransactionCanceledException"
    (reason,) = err.value.response["CancellationReasons"]
    assert reason["Code"] == "ValidationError" and reason["Message"] == message


def key(pk: str, sk: str = "1") -> dict:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def query(name: str, pk: str, sk: str | None = None, **kwargs) -> dict:
    condition, values = "pk = :p", {":p": {"S": pk}}
    if sk is not None:
        condition, values[":s"] = condition + " AND sk >= :s", {"S": sk}
    return dict(TableName=name, KeyConditionExpression=condition, ExpressionAttributeValues=values, **kwargs)


@pytest.mark.parametrize("pk", [HUGE, BIG_HASH], ids=["3MB", "2050B"])
def test_query_with_an_oversized_partition_key_is_refused(ddb, server, tables, pk):
    refused(lambda: ddb.query(**query(tables, pk)), HASH_MESSAGE)
    refused(lambda: ddb.query(**query(tables, pk, IndexName="by-g") | {"KeyConditionExpression": "g = :p"}),
            HASH_MESSAGE)
    refused(lambda: ddb.query(TableName=tables, KeyConditions={
        "pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": pk}]}}), HASH_MESSAGE)
    schema = server.ctx.db.tables[tables].table.schema
    assert pk not in schema._prefixes, "a refused key value was cached"


def test_query_with_an_oversized_sort_key_or_start_key_is_refused(ddb, tables):
    refused(lambda: ddb.query(**query(tables, "a", BIG_RANGE)), RANGE_MESSAGE)
    refused(lambda: ddb.query(**query(tables, "a", "0", ExclusiveStartKey=key("a", BIG_RANGE))), RANGE_MESSAGE)
    refused(lambda: ddb.query(**query(tables, "x", IndexName="by-g") | {
        "KeyConditionExpression": "g = :p",
        "ExclusiveStartKey": {**key(BIG_HASH), "g": {"S": "x"}}}), HASH_MESSAGE)


def test_scan_with_an_oversized_start_key_is_refused(ddb, tables):
    refused(lambda: ddb.scan(TableName=tables, ExclusiveStartKey=key(HUGE)), HASH_MESSAGE)
    refused(lambda: ddb.scan(TableName=tables, ExclusiveStartKey=key("a", BIG_RANGE)), RANGE_MESSAGE)


@pytest.mark.parametrize("pk, sk, message", [(HUGE, "1", HASH_MESSAGE), (BIG_HASH, "1", HASH_MESSAGE),
                                             ("a", BIG_RANGE, RANGE_MESSAGE)], ids=["3MB", "2050B", "range"])
def test_every_item_operation_refuses_oversized_keys(ddb, tables, pk, sk, message):
    k = key(pk, sk)
    refused(lambda: ddb.get_item(TableName=tables, Key=k), message)
    refused(lambda: ddb.delete_item(TableName=tables, Key=k), message)
    refused(lambda: ddb.update_item(TableName=tables, Key=k, UpdateExpression="SET v = :v",
                                    ExpressionAttributeValues={":v": {"S": "v"}}), message)
    if pk is not HUGE:  # a 3 MB item is refused for its size first
        refused(lambda: ddb.put_item(TableName=tables, Item=k), message)
    refused(lambda: ddb.batch_get_item(RequestItems={tables: {"Keys": [k]}}), message)
    cancelled(lambda: ddb.transact_get_items(TransactItems=[{"Get": {"TableName": tables, "Key": k}}]), message)
    cancelled(lambda: ddb.transact_write_items(TransactItems=[{"ConditionCheck": {
        "TableName": tables, "Key": k, "ConditionExpression": "attribute_exists(pk)"}}]), message)
    cancelled(lambda: ddb.transact_write_items(TransactItems=[{"Delete": {"TableName": tables, "Key": k}}]), message)
    refused(lambda: ddb.batch_write_item(RequestItems={tables: [{"DeleteRequest": {"Key": k}}]}), message)
    assert ddb.scan(TableName=tables)["Count"] == 1


def test_a_gsi_backfill_skips_items_whose_index_key_is_oversized(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    ddb.put_item(TableName=name, Item={"pk": {"S": "big"}, "g": {"S": BIG_HASH}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "ok"}, "g": {"S": "small"}})
    ddb.update_table(TableName=name, AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
                     GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": "by-g", "KeySchema": [
                         {"AttributeName": "g", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}}])
    assert [i["pk"]["S"] for i in ddb.scan(TableName=name, IndexName="by-g")["Items"]] == ["ok"]
    ddb.delete_item(TableName=name, Key={"pk": {"S": "big"}})  # the index follows a delete of the skipped item
    assert ddb.scan(TableName=name)["Count"] == 1


def test_the_prefix_cache_is_bounded_in_bytes(monkeypatch):
    monkeypatch.setattr(keys, "PREFIX_CACHE_BYTES", 64 * 1024)
    schema = keys.KeySchema("pk", "S")
    for i in range(2000):  # 2000 distinct ~2 KB partition keys: ~8 MB if the cache kept them all
        value = f"{i:06d}" + "v" * 2000
        assert schema.partition_prefix(value).endswith(value.encode())
        assert schema._prefixes.bytes <= 64 * 1024
    assert sum(len(k) + len(v) for k, v in schema._prefixes.items()) <= 64 * 1024


@pytest.mark.parametrize("pk", [HUGE, BIG_HASH], ids=["3MB", "2050B"])
def test_partiql_key_values_are_checked_by_the_same_limits(ddb, server, tables, pk):
    for statement, parameters in [(f'SELECT * FROM "{tables}" WHERE pk = ?', [{"S": pk}]),
                                  (f'SELECT * FROM "{tables}" WHERE pk = ? AND sk = ?', [{"S": pk}, {"S": "1"}]),
                                  (f'DELETE FROM "{tables}" WHERE pk = ? AND sk = ?', [{"S": pk}, {"S": "1"}]),
                                  (f'UPDATE "{tables}" SET v = 1 WHERE pk = ? AND sk = ?', [{"S": pk}, {"S": "1"}])]:
        with pytest.raises(ClientError) as err:
            ddb.execute_statement(Statement=statement, Parameters=parameters)
        assert err.value.response["Error"]["Code"] == "ValidationException", statement
        assert err.value.response["Error"]["Message"] == HASH_MESSAGE, statement
    assert pk not in server.ctx.db.tables[tables].table.schema._prefixes
    assert ddb.scan(TableName=tables)["Count"] == 1


def test_an_index_scan_with_an_oversized_index_key_in_its_start_key_is_refused(ddb, tables):
    refused(lambda: ddb.scan(TableName=tables, IndexName="by-g",
                             ExclusiveStartKey={**key("a"), "g": {"S": BIG_HASH}}), HASH_MESSAGE)
