"""Back up a table, break it, and get it back: RestoreTableFromBackup and RestoreTableToPointInTime.

Run: .venv/bin/python examples/backup_restore.py   (or start `dynalocal --pitr-lag-seconds 0` and set
DDB_ENDPOINT to it). With --data-dir the backups and the PITR history survive restarts.
"""
from __future__ import annotations

import os
import time
from datetime import datetime, timezone

import boto3

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.testing import LocalServer


def main() -> None:
    url = os.environ.get("DDB_ENDPOINT") or LocalServer(
        ctx=Context(settings=Settings(pitr_lag_seconds=0))).start().url
    ddb = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1",
                       aws_access_key_id="x", aws_secret_access_key="x")
    ddb.create_table(TableName="orders", BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
    ddb.update_continuous_backups(TableName="orders",
                                  PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    for n in range(3):
        ddb.put_item(TableName="orders", Item={"id": {"S": f"order-{n}"}, "state": {"S": "paid"}})

    backup = ddb.create_backup(TableName="orders", BackupName="before-deploy")["BackupDetails"]
    print("backup", backup["BackupName"], backup["BackupStatus"])
    good = datetime.now(timezone.utc)
    time.sleep(0.01)  # the bad deploy's writes come after `good`
    ddb.delete_item(TableName="orders", Key={"id": {"S": "order-1"}})  # the bad deploy
    ddb.put_item(TableName="orders", Item={"id": {"S": "order-2"}, "state": {"S": "lost"}})

    ddb.restore_table_from_backup(TargetTableName="orders-from-backup", BackupArn=backup["BackupArn"])
    ddb.restore_table_to_point_in_time(SourceTableName="orders", TargetTableName="orders-at-good",
                                       RestoreDateTime=good)
    for table in ("orders", "orders-from-backup", "orders-at-good"):
        ddb.get_waiter("table_exists").wait(TableName=table)
        items = sorted((i["id"]["S"], i["state"]["S"]) for i in ddb.scan(TableName=table)["Items"])
        print(f"{table:20} {items}")


if __name__ == "__main__":
    main()
