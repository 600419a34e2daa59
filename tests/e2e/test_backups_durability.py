"""Backups and restored tables with --data-dir: they survive a clean restart and kill -9."""
from __future__ import annotations

from server_process import ServerProcess, scan_all


def _create(client, name: str) -> None:
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "g", "AttributeType": "S"}],
                        GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g",
                                                                                       "KeyType": "HASH"}],
                                                 "Projection": {"ProjectionType": "ALL"}}])


def _items(client, name: str) -> dict[str, str]:
    return {i["pk"]["S"]: i["v"]["S"] for i in scan_all(client, name)}


def test_backup_and_restore_survive_kill_and_restart(tmp_path):
    server = ServerProcess(tmp_path / "data", "--snapshot-mb", "0.05", log_path=tmp_path / "server.log").start()
    try:
        client = server.client()
        _create(client, "src")
        for i in range(300):
            client.put_item(TableName="src", Item={"pk": {"S": f"k{i}"}, "g": {"S": f"g{i % 4}"},
                                                   "v": {"S": "x" * 200 + "old"}})
        expected = _items(client, "src")
        arn = client.create_backup(TableName="src", BackupName="nightly")["BackupDetails"]["BackupArn"]
        gone = client.create_backup(TableName="src", BackupName="deleted")["BackupDetails"]["BackupArn"]
        client.delete_backup(BackupArn=gone)
        client.put_item(TableName="src", Item={"pk": {"S": "k1"}, "g": {"S": "g1"}, "v": {"S": "new"}})
        server.kill()  # crash: the backup was acknowledged, so it is on disk
        server.start()
        client = server.client()
        listed = [s["BackupArn"] for s in client.list_backups(TableName="src")["BackupSummaries"]]
        assert listed == [arn]
        client.restore_table_from_backup(TargetTableName="dst", BackupArn=arn)
        assert _items(client, "dst") == expected
        server.kill()  # the restore was acknowledged: its table and items are in the log
        server.start()
        client = server.client()
        assert _items(client, "dst") == expected
        by_g = client.query(TableName="dst", IndexName="by-g", KeyConditionExpression="g = :g",
                            ExpressionAttributeValues={":g": {"S": "g2"}})["Items"]
        assert len(by_g) == 75
        assert client.describe_table(TableName="dst")["Table"]["ItemCount"] == 300
        assert server.stop() == 0  # clean shutdown: a snapshot holds the restored table
        server.start()
        client = server.client()
        assert _items(client, "dst") == expected
        description = client.describe_backup(BackupArn=arn)["BackupDescription"]
        assert description["SourceTableDetails"]["ItemCount"] == 300
        assert description["BackupDetails"]["BackupStatus"] == "AVAILABLE"
    finally:
        server.kill()
