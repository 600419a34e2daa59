"""Idempotency that survives a restart: ClientRequestTokens are journaled with their transaction.

A real server process with --data-dir; the same TransactWriteItems (or ExecuteTransaction) after
kill -9, SIGTERM or a snapshot must be answered as before without running again.
"""
from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError
from server_process import ServerProcess

TABLE = "accounts"


def setup(client) -> None:
    client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
    client.put_item(TableName=TABLE, Item={"id": {"S": "a"}, "balance": {"N": "1000"}})


def debit(client, token: str, amount: int = 100) -> dict:
    return client.transact_write_items(ClientRequestToken=token, TransactItems=[{"Update": {
        "TableName": TABLE, "Key": {"id": {"S": "a"}}, "UpdateExpression": "ADD balance :d",
        "ExpressionAttributeValues": {":d": {"N": str(-amount)}}}}])


def balance(client) -> int:
    return int(client.get_item(TableName=TABLE, Key={"id": {"S": "a"}}, ConsistentRead=True)["Item"]["balance"]["N"])


def restart(server: ServerProcess, how: str) -> None:
    if how == "kill":
        server.kill()
    else:
        assert server.stop() == 0
    server.start()


@pytest.mark.parametrize("how", ["kill", "term"])
def test_token_survives_restart(tmp_path, how):
    """kill -9 replays it from the log; SIGTERM takes a snapshot, after which the log holds it again."""
    server = ServerProcess(tmp_path / "data", "--throttling", "off", log_path=tmp_path / "server.log")
    with server:
        setup(server.client())
        debit(server.client(), "token-1")
        assert balance(server.client()) == 900
        for _ in range(2):  # twice: a token restored at start-up is journaled again by the next snapshot
            restart(server, how)
            client = server.client()
            debit(client, "token-1")
            assert balance(client) == 900, server.log()
        with pytest.raises(ClientError) as err:  # same token, another request
            debit(client, "token-1", amount=5)
        assert err.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
        assert balance(client) == 900
        debit(client, "token-2")  # a new token still runs
        assert balance(client) == 800


def test_token_survives_background_snapshot_then_kill(tmp_path):
    """A snapshot taken while the token lives (tiny --snapshot-mb), then kill -9: the token is still known."""
    server = ServerProcess(tmp_path / "data", "--throttling", "off", "--snapshot-mb", "0.05",
                           log_path=tmp_path / "server.log")
    with server:
        client = server.client()
        setup(client)
        debit(client, "token-snap")
        before = sorted(p.name for p in (tmp_path / "data").glob("snapshot-*"))
        deadline = time.monotonic() + 60
        i = 0
        while sorted(p.name for p in (tmp_path / "data").glob("snapshot-*")) == before:  # write until a snapshot
            assert time.monotonic() < deadline, "no snapshot was taken"
            client.put_item(TableName=TABLE, Item={"id": {"S": f"filler-{i}"}, "pad": {"S": "x" * 4000}})
            i += 1
        server.kill()
        server.start()
        client = server.client()
        debit(client, "token-snap")
        assert balance(client) == 900, server.log()


def test_execute_transaction_token_survives_kill(tmp_path):
    server = ServerProcess(tmp_path / "data", "--throttling", "off", log_path=tmp_path / "server.log")
    with server:
        setup(server.client())
        statement = [{"Statement": f"UPDATE {TABLE} SET balance = balance - 100 WHERE id = 'a'"}]
        server.client().execute_transaction(TransactStatements=statement, ClientRequestToken="px-1")
        server.kill()
        server.start()
        client = server.client()
        client.execute_transaction(TransactStatements=statement, ClientRequestToken="px-1")
        assert balance(client) == 900
        with pytest.raises(ClientError) as err:
            client.execute_transaction(TransactStatements=[{"Statement": f"UPDATE {TABLE} SET balance = balance - 1 "
                                                                         "WHERE id = 'a'"}],
                                       ClientRequestToken="px-1")
        assert err.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"

