"""Writes that cannot be made durable are undone: items, table metadata, and every write after a failed fsync.

An in-process server with a data directory; failures are injected into its log writer (ENOSPC
on write, EIO on fsync). After each failure, the live state must equal what a restart would
recover from the directory, and the server must carry on once the fault is gone.
"""
from __future__ import annotations

import errno
import shutil
import threading
import time

import orjson
import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.http.durability import Durability
from dynalocal.journal.recovery import recover
from dynalocal.journal.tablemeta import encode_meta
from dynalocal.storage.database import Database


class Faulty:
    """A live server whose log writes (`full`) or fsyncs (`failing_sync`) can be made to fail."""

    def __init__(self, root, sync: str = "always") -> None:
        self.root = root
        self.data = root / "data"
        self.ctx = Context(settings=Settings(data_dir=str(self.data), sync=sync, throttling="off"))
        self.journal = Durability.open(self.ctx)
        self.writer = self.journal.commits.writer
        self.full = False
        original = self.writer._write_all

        def write_all(fd, data, offset):
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            original(fd, data, offset)

        self.writer._write_all = write_all
        self.live = LiveServer(self.ctx)

    def __enter__(self) -> Faulty:
        self.live.__enter__()
        self.client = self.live.client(retries={"max_attempts": 0})
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def failing(self, call) -> None:
        with pytest.raises(ClientError) as err:
            call()
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
        assert err.value.response["Error"]["Message"] == "The write could not be made durable"

    def state(self, db: Database) -> dict:
        return {name: (encode_meta(e), [(k, p.get(k)) for p, k in e.table.scan_keys()],
                       {i: [(k, p.get(k)) for p, k in x.scan_keys()] for i, x in sorted(e.table.indexes.items())})
                for name, e in sorted(db.tables.items())}

    def assert_recovers_to_the_live_state(self) -> None:
        copy = self.root / f"copy-{len(list(self.root.glob('copy-*')))}"
        shutil.copytree(self.data, copy, ignore=shutil.ignore_patterns("LOCK"))
        db = Database()
        recover(copy, db)
        assert self.state(db) == self.state(self.ctx.db)


def make_table(client, name: str = "tbl") -> None:
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "g")],
                        GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [
                            {"AttributeName": "g", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}])
    for i in range(5):
        client.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "g": {"S": "x"}, "n": {"N": str(i)}})


def test_item_writes_that_cannot_be_logged_are_undone_with_their_indexes(tmp_path):
    with Faulty(tmp_path) as f:
        make_table(f.client)
        f.full = True
        f.failing(lambda: f.client.put_item(TableName="tbl", Item={"pk": {"S": "new"}, "g": {"S": "x"}}))
        f.failing(lambda: f.client.update_item(TableName="tbl", Key={"pk": {"S": "k1"}}, UpdateExpression="SET g = :g",
                                               ExpressionAttributeValues={":g": {"S": "y"}}))
        f.failing(lambda: f.client.delete_item(TableName="tbl", Key={"pk": {"S": "k2"}}))
        f.failing(lambda: f.client.batch_write_item(RequestItems={"tbl": [
            {"PutRequest": {"Item": {"pk": {"S": f"b{i}"}, "g": {"S": "x"}}}} for i in range(5)]}))
        f.failing(lambda: f.client.transact_write_items(TransactItems=[
            {"Delete": {"TableName": "tbl", "Key": {"pk": {"S": "k3"}}}},
            {"Put": {"TableName": "tbl", "Item": {"pk": {"S": "tx"}, "g": {"S": "x"}}}}]))
        f.full = False
        assert sorted(i["pk"]["S"] for i in f.client.scan(TableName="tbl")["Items"]) == [f"k{i}" for i in range(5)]
        by_g = f.client.query(TableName="tbl", IndexName="by-g", KeyConditionExpression="g = :g",
                              ExpressionAttributeValues={":g": {"S": "x"}})["Items"]
        assert sorted(i["pk"]["S"] for i in by_g) == [f"k{i}" for i in range(5)]
        f.assert_recovers_to_the_live_state()
        f.client.put_item(TableName="tbl", Item={"pk": {"S": "after"}})  # the log carries on
        f.assert_recovers_to_the_live_state()


def test_table_changes_that_cannot_be_logged_are_undone(tmp_path):
    with Faulty(tmp_path) as f:
        make_table(f.client)
        arn = f.client.describe_table(TableName="tbl")["Table"]["TableArn"]
        f.client.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "a"}])
        before = f.client.describe_table(TableName="tbl")["Table"]
        f.full = True
        f.failing(lambda: make_table(f.client, "created"))
        f.failing(lambda: f.client.update_time_to_live(
            TableName="tbl", TimeToLiveSpecification={"Enabled": True, "AttributeName": "n"}))
        f.failing(lambda: f.client.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "b"}]))
        f.failing(lambda: f.client.update_table(
            TableName="tbl", AttributeDefinitions=[{"AttributeName": "n", "AttributeType": "N"}],
            GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": "by-n", "KeySchema": [
                {"AttributeName": "n", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}}]))
        f.failing(lambda: f.client.delete_table(TableName="tbl"))
        f.full = False
        assert f.client.list_tables()["TableNames"] == ["tbl"]
        after = f.client.describe_table(TableName="tbl")["Table"]
        assert {k: v for k, v in after.items() if k != "TableStatus"} == \
            {k: v for k, v in before.items() if k != "TableStatus"}
        assert f.client.describe_time_to_live(TableName="tbl")["TimeToLiveDescription"]["TimeToLiveStatus"] == "DISABLED"
        assert "tbl" not in f.ctx.expiry
        assert f.client.list_tags_of_resource(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "a"}]
        assert f.client.scan(TableName="tbl")["Count"] == 5
        assert f.client.query(TableName="tbl", IndexName="by-g", KeyConditionExpression="g = :g",
                              ExpressionAttributeValues={":g": {"S": "x"}})["Count"] == 5
        f.assert_recovers_to_the_live_state()
        f.client.put_item(TableName="tbl", Item={"pk": {"S": "k9"}, "g": {"S": "x"}})  # the restored table is journaled
        f.client.update_time_to_live(TableName="tbl", TimeToLiveSpecification={"Enabled": True, "AttributeName": "n"})
        f.assert_recovers_to_the_live_state()


def test_a_failed_fsync_undoes_every_write_since_the_last_good_one(tmp_path):
    with Faulty(tmp_path, sync="batch") as f:
        make_table(f.client)
        table = f.ctx.db.tables["tbl"].table
        gate, original = threading.Event(), f.writer.sync

        def failing_sync():
            gate.wait(60)
            raise OSError(errno.EIO, "Input/output error")

        f.writer.sync = failing_sync
        answers: dict[str, object] = {}

        def call(name, fn):
            try:
                answers[name] = fn()
            except ClientError as err:
                answers[name] = err.response["ResponseMetadata"]["HTTPStatusCode"]

        def n_of(pk: str) -> str | None:
            record = table.get(table.schema.encode(pk, None))
            return orjson.loads(record[0])["n"]["N"] if record is not None else None

        def wait_until(condition) -> None:
            deadline = time.monotonic() + 30
            while not condition():
                assert time.monotonic() < deadline, "the write never reached the server"
                time.sleep(0.01)

        clients = [f.live.client(retries={"max_attempts": 0}) for _ in range(3)]
        first = threading.Thread(target=call, args=("set", lambda: clients[0].update_item(
            TableName="tbl", Key={"pk": {"S": "k1"}}, UpdateExpression="SET n = :v",
            ExpressionAttributeValues={":v": {"N": "100"}})))
        first.start()
        wait_until(lambda: n_of("k1") == "100")
        second = threading.Thread(target=call, args=("add", lambda: clients[1].update_item(
            TableName="tbl", Key={"pk": {"S": "k1"}}, UpdateExpression="SET n = n + :v",
            ExpressionAttributeValues={":v": {"N": "1"}})))
        third = threading.Thread(target=call, args=("put", lambda: clients[2].put_item(
            TableName="tbl", Item={"pk": {"S": "new"}, "g": {"S": "x"}, "n": {"N": "7"}})))
        second.start()
        third.start()
        wait_until(lambda: n_of("k1") == "101" and n_of("new") == "7")
        gate.set()
        for thread in (first, second, third):
            thread.join(30)
        assert answers == {"set": 500, "add": 500, "put": 500}
        assert n_of("k1") == "1" and n_of("new") is None  # back to the last durable state
        f.writer.sync = original
        f.client.put_item(TableName="tbl", Item={"pk": {"S": "later"}, "g": {"S": "x"}, "n": {"N": "8"}})
        assert n_of("later") == "8"
        f.assert_recovers_to_the_live_state()


@pytest.mark.parametrize("how", ["TransactWriteItems", "ExecuteTransaction"])
def test_a_retried_transaction_whose_first_try_was_undone_runs_again(tmp_path, how):
    """Its idempotency token is undone with its writes: the retry must not be answered from the token's cache."""
    with Faulty(tmp_path) as f:
        make_table(f.client)

        def transaction():
            if how == "TransactWriteItems":
                return f.client.transact_write_items(ClientRequestToken="retry-me", TransactItems=[
                    {"Put": {"TableName": "tbl", "Item": {"pk": {"S": "tx"}, "g": {"S": "x"}}}}])
            return f.client.execute_transaction(ClientRequestToken="retry-me", TransactStatements=[
                {"Statement": "INSERT INTO tbl VALUE {'pk': 'tx', 'g': 'x'}"}])

        f.full = True
        f.failing(transaction)
        f.full = False
        transaction()  # the retry, with the same token
        assert "Item" in f.client.get_item(TableName="tbl", Key={"pk": {"S": "tx"}})
        transaction()  # and now the token does answer a repeat without running it again
        f.assert_recovers_to_the_live_state()
