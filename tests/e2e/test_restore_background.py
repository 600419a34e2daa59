"""A large restore loads in the background: the server answers other requests meanwhile, the restored
table is CREATING (data-plane calls refused) until it is loaded, then ACTIVE with every item and index
entry; with --data-dir a restore cut off by a stop leaves no table."""
from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.storage.mutation import Mutation

ITEMS = 200_000
DEFS = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}]
GSI = [{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"}}]


def _source(live: LiveServer, ctx: Context, name: str) -> str:
    """A table of ITEMS items (filled through storage: the restore is under test, not the puts); its backup ARN."""
    ddb = live.client()
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], AttributeDefinitions=DEFS,
                     BillingMode="PAY_PER_REQUEST", GlobalSecondaryIndexes=GSI)
    table = ctx.db.tables[name].table
    if ctx.journal is not None:  # set-up from the test's thread, kept out of the log: the backup file holds it
        table.recorder = None
    for i in range(ITEMS):
        item = {"pk": {"S": f"k{i:07d}"}, "g": {"S": f"g{i % 100}"}}
        blob = f'{{"pk":{{"S":"k{i:07d}"}},"g":{{"S":"g{i % 100}"}}}}'.encode()
        table.apply(Mutation(table.schema.encode_item(item), (blob, len(blob))))
    return ddb.create_backup(TableName=name, BackupName="big-backup")["BackupDetails"]["BackupArn"]


def test_requests_are_answered_during_a_large_restore():
    ctx = Context(settings=Settings(throttling="off"))
    with LiveServer(ctx) as live:
        ddb = live.client()
        arn = _source(live, ctx, "big")
        started = time.monotonic()
        out = ddb.restore_table_from_backup(TargetTableName="big-copy", BackupArn=arn)["TableDescription"]
        answered = time.monotonic() - started
        assert out["TableStatus"] == "CREATING" and out["RestoreSummary"]["RestoreInProgress"] is True
        asked = time.monotonic()
        desc = ddb.describe_table(TableName="big-copy")["Table"]
        waited = time.monotonic() - asked
        assert (desc["TableStatus"], desc["RestoreSummary"]["RestoreInProgress"]) == ("CREATING", True)
        assert ddb.get_item(TableName="big", Key={"pk": {"S": "k0000001"}})["Item"]["g"] == {"S": "g1"}
        with pytest.raises(ClientError) as err:
            ddb.get_item(TableName="big-copy", Key={"pk": {"S": "k0000001"}})
        assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
        with pytest.raises(ClientError) as err:
            ddb.delete_table(TableName="big-copy")
        assert err.value.response["Error"]["Code"] == "ResourceInUseException"
        deadline = time.monotonic() + 120
        while (desc := ddb.describe_table(TableName="big-copy")["Table"])["TableStatus"] == "CREATING":
            assert time.monotonic() < deadline, "the restore did not finish within 120 s"
            time.sleep(0.05)
        loaded = time.monotonic() - started
        print(f"restore answered in {answered:.3f}s, a request during it in {waited:.3f}s, loaded in {loaded:.2f}s")
        assert waited < loaded / 2  # answered between slices, not after the whole load
        assert (desc["TableStatus"], desc["ItemCount"], desc["RestoreSummary"]["RestoreInProgress"]) == (
            "ACTIVE", ITEMS, False)
        query = ddb.query(TableName="big-copy", IndexName="by-g", KeyConditionExpression="g = :g",
                          ExpressionAttributeValues={":g": {"S": "g7"}}, Select="COUNT")
        assert query["Count"] == ITEMS // 100


def test_a_restore_cut_off_by_a_stop_leaves_no_table_and_a_finished_one_stays(tmp_path):
    data = str(tmp_path / "data")
    ctx = Context(settings=Settings(throttling="off", data_dir=data))
    with LiveServer(ctx) as live:
        ddb = live.client()
        arn = _source(live, ctx, "big")
        ddb.restore_table_from_backup(TargetTableName="big-copy", BackupArn=arn)
        assert ddb.describe_table(TableName="big-copy")["Table"]["TableStatus"] == "CREATING"
    with LiveServer(Context(settings=Settings(throttling="off", data_dir=data))) as live:
        ddb = live.client()
        assert "big-copy" not in ddb.list_tables()["TableNames"]
        ddb.restore_table_from_backup(TargetTableName="big-copy", BackupArn=arn)
        deadline = time.monotonic() + 120
        while ddb.describe_table(TableName="big-copy")["Table"]["TableStatus"] == "CREATING":
            assert time.monotonic() < deadline, "the restore did not finish within 120 s"
            time.sleep(0.05)
    with LiveServer(Context(settings=Settings(throttling="off", data_dir=data))) as live:
        desc = live.client().describe_table(TableName="big-copy")["Table"]
        assert (desc["TableStatus"], desc["ItemCount"]) == ("ACTIVE", ITEMS)
