"""On-demand backups through boto3: create, describe, list (filters, paging), delete, restore with overrides."""
from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock

from dynalocal.config import Settings
from dynalocal.engine.context import Context


def make_source(ddb, make_table) -> str:
    name = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N"), ("g", "S"), ("l", "N")],
                      GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g",
                                                                                     "KeyType": "HASH"}],
                                               "Projection": {"ProjectionType": "ALL"}}],
                      LocalSecondaryIndexes=[{"IndexName": "by-l", "KeySchema": [
                          {"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}],
                          "Projection": {"ProjectionType": "KEYS_ONLY"}}],
                      StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
                      Tags=[{"Key": "team", "Value": "a"}])
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
    for i in range(50):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"p{i % 5}"}, "sk": {"N": str(i)}, "g": {"S": f"g{i % 3}"},
                                           "l": {"N": str(100 - i)}, "v": {"S": "old"}})
    return name


def scan_all(ddb, name: str, **kwargs) -> list[dict]:
    items, start = [], None
    while True:
        page = ddb.scan(TableName=name, **kwargs, **({"ExclusiveStartKey": start} if start else {}))
        items += page["Items"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return sorted(items, key=lambda i: (i["pk"]["S"], int(i["sk"]["N"])))


def test_backup_modify_restore_gives_old_data(ddb, make_table):
    name = make_source(ddb, make_table)
    before = scan_all(ddb, name)
    details = ddb.create_backup(TableName=name, BackupName="before-change")["BackupDetails"]
    assert details["BackupStatus"] == "AVAILABLE" and details["BackupType"] == "USER"
    assert details["BackupArn"].startswith(f"arn:aws:dynamodb:us-east-1:000000000000:table/{name}/backup/")
    for i in range(0, 50, 2):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"p{i % 5}"}, "sk": {"N": str(i)}, "g": {"S": "new"},
                                           "l": {"N": "1"}, "v": {"S": "new"}})
    ddb.delete_item(TableName=name, Key={"pk": {"S": "p1"}, "sk": {"N": "1"}})
    target = name + "-restored"
    out = ddb.restore_table_from_backup(TargetTableName=target, BackupArn=details["BackupArn"])["TableDescription"]
    assert out["RestoreSummary"]["SourceBackupArn"] == details["BackupArn"]
    assert out["RestoreSummary"]["RestoreInProgress"] is True
    try:
        ddb.get_waiter("table_exists").wait(TableName=target, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
        assert scan_all(ddb, target) == before
        table = ddb.describe_table(TableName=target)["Table"]
        assert table["ItemCount"] == 50
        assert table["RestoreSummary"]["RestoreInProgress"] is False
        assert [g["IndexName"] for g in table["GlobalSecondaryIndexes"]] == ["by-g"]
        assert [g["IndexName"] for g in table["LocalSecondaryIndexes"]] == ["by-l"]
        assert "StreamSpecification" not in table
        by_g = ddb.query(TableName=target, IndexName="by-g", KeyConditionExpression="g = :g",
                         ExpressionAttributeValues={":g": {"S": "g0"}})["Items"]
        assert len(by_g) == len([i for i in before if i["g"]["S"] == "g0"])
        by_l = ddb.query(TableName=target, IndexName="by-l", KeyConditionExpression="pk = :p",
                         ExpressionAttributeValues={":p": {"S": "p1"}})["Items"]
        assert len(by_l) == 10
        assert ddb.list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"] == []
        ttl = ddb.describe_time_to_live(TableName=target)["TimeToLiveDescription"]
        assert ttl["TimeToLiveStatus"] == "DISABLED"
        pitr = ddb.describe_continuous_backups(TableName=target)["ContinuousBackupsDescription"]
        assert pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    finally:
        ddb.delete_table(TableName=target)
        ddb.delete_backup(BackupArn=details["BackupArn"])


def test_describe_backup_records_source_and_features(ddb, make_table):
    name = make_source(ddb, make_table)
    arn = ddb.create_backup(TableName=name, BackupName="bk1")["BackupDetails"]["BackupArn"]
    described = ddb.describe_backup(BackupArn=arn)["BackupDescription"]
    source, features = described["SourceTableDetails"], described["SourceTableFeatureDetails"]
    assert source["TableName"] == name and source["ItemCount"] == 50 and source["BillingMode"] == "PAY_PER_REQUEST"
    assert features["GlobalSecondaryIndexes"][0]["IndexName"] == "by-g"
    assert features["LocalSecondaryIndexes"][0]["IndexName"] == "by-l"
    assert features["StreamDescription"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    assert features["TimeToLiveDescription"] == {"TimeToLiveStatus": "ENABLED", "AttributeName": "exp"}
    deleted = ddb.delete_backup(BackupArn=arn)["BackupDescription"]
    assert deleted["BackupDetails"]["BackupStatus"] == "DELETED"
    with pytest.raises(ClientError) as err:
        ddb.describe_backup(BackupArn=arn)
    assert err.value.response["Error"]["Code"] == "BackupNotFoundException"


def test_restore_overrides(ddb, make_table):
    name = make_source(ddb, make_table)
    arn = ddb.create_backup(TableName=name, BackupName="bk2")["BackupDetails"]["BackupArn"]
    target = name + "-prov"
    out = ddb.restore_table_from_backup(
        TargetTableName=target, BackupArn=arn, BillingModeOverride="PROVISIONED",
        ProvisionedThroughputOverride={"ReadCapacityUnits": 7, "WriteCapacityUnits": 3},
        GlobalSecondaryIndexOverride=[], LocalSecondaryIndexOverride=[],
        SSESpecificationOverride={"Enabled": True, "SSEType": "KMS"})["TableDescription"]
    try:
        assert out["ProvisionedThroughput"]["ReadCapacityUnits"] == 7
        assert out["BillingModeSummary"]["BillingMode"] == "PROVISIONED" if "BillingModeSummary" in out else True
        assert "GlobalSecondaryIndexes" not in out and "LocalSecondaryIndexes" not in out
        assert [a["AttributeName"] for a in out["AttributeDefinitions"]] == ["pk", "sk"]
        assert ddb.describe_table(TableName=target)["Table"]["ItemCount"] == 50
    finally:
        ddb.delete_table(TableName=target)
        ddb.delete_backup(BackupArn=arn)


def test_list_backups_filters_and_paging(ddb, make_table):
    a = make_table([("pk", "HASH")], [("pk", "S")])
    b = make_table([("pk", "HASH")], [("pk", "S")])
    arns = [ddb.create_backup(TableName=t, BackupName=f"name{i}")["BackupDetails"]["BackupArn"]
            for i, t in enumerate([a, a, b, a])]
    try:
        mine = ddb.list_backups(TableName=a)["BackupSummaries"]
        assert [s["BackupArn"] for s in mine] == [arns[0], arns[1], arns[3]]
        assert all(s["TableName"] == a and s["BackupType"] == "USER" for s in mine)
        assert ddb.list_backups(TableName=a, BackupType="SYSTEM")["BackupSummaries"] == []
        seen, start = [], None
        while True:
            page = ddb.list_backups(TableName=a, Limit=2, **({"ExclusiveStartBackupArn": start} if start else {}))
            seen += [s["BackupArn"] for s in page["BackupSummaries"]]
            start = page.get("LastEvaluatedBackupArn")
            if not start:
                break
        assert seen == [arns[0], arns[1], arns[3]]
        everything = [s["BackupArn"] for s in ddb.list_backups(BackupType="ALL")["BackupSummaries"]]
        assert set(arns) <= set(everything)
    finally:
        for arn in arns:
            ddb.delete_backup(BackupArn=arn)


def test_errors(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    arn = ddb.create_backup(TableName=name, BackupName="bk3")["BackupDetails"]["BackupArn"]
    cases = [
        (lambda: ddb.create_backup(TableName="missing-table", BackupName="x12"), "TableNotFoundException",
         "Table not found: missing-table"),
        (lambda: ddb.describe_backup(BackupArn=arn + "0"), "BackupNotFoundException",
         "Backup not found for the given BackupARN."),
        (lambda: ddb.delete_backup(BackupArn=arn + "0"), "BackupNotFoundException", None),
        (lambda: ddb.restore_table_from_backup(TargetTableName=name, BackupArn=arn), "TableAlreadyExistsException",
         f"Table already exists: {name}"),
        (lambda: ddb.restore_table_from_backup(TargetTableName=name + "-x", BackupArn=arn + "0"),
         "BackupNotFoundException", None),
    ]
    try:
        for call, code, message in cases:
            with pytest.raises(ClientError) as err:
                call()
            assert err.value.response["Error"]["Code"] == code
            if message is not None:
                assert err.value.response["Error"]["Message"] == message
    finally:
        ddb.delete_backup(BackupArn=arn)


def test_statuses_follow_transient_delay():
    clock = WallClock()
    with LiveServer(Context(settings=Settings(transient_delay=5.0), wall_clock=clock)) as live:
        ddb = live.client()
        ddb.create_table(TableName="src", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST")
        clock.advance(5)
        ddb.put_item(TableName="src", Item={"pk": {"S": "a"}})
        arn = ddb.create_backup(TableName="src", BackupName="slow")["BackupDetails"]["BackupArn"]
        assert ddb.describe_backup(BackupArn=arn)["BackupDescription"]["BackupDetails"]["BackupStatus"] == "CREATING"
        with pytest.raises(ClientError) as err:
            ddb.restore_table_from_backup(TargetTableName="dst", BackupArn=arn)
        assert err.value.response["Error"]["Code"] == "BackupInUseException"
        clock.advance(5)
        assert ddb.describe_backup(BackupArn=arn)["BackupDescription"]["BackupDetails"]["BackupStatus"] == "AVAILABLE"
        out = ddb.restore_table_from_backup(TargetTableName="dst", BackupArn=arn)["TableDescription"]
        assert out["TableStatus"] == "CREATING"
        assert ddb.describe_table(TableName="dst")["Table"]["RestoreSummary"]["RestoreInProgress"] is True
        with pytest.raises(ClientError) as err:
            ddb.create_backup(TableName="dst", BackupName="too-early")
        assert err.value.response["Error"]["Code"] == "TableInUseException"
        clock.advance(5)
        table = ddb.describe_table(TableName="dst")["Table"]
        assert table["TableStatus"] == "ACTIVE" and table["RestoreSummary"]["RestoreInProgress"] is False
        assert ddb.get_item(TableName="dst", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}
        time.sleep(0)


def test_list_backups_time_bounds():
    """TimeRangeLowerBound is inclusive, TimeRangeUpperBound exclusive (whole seconds: boto3 may send no fraction)."""
    clock = WallClock()
    with LiveServer(Context(wall_clock=clock)) as live:
        ddb = live.client()
        ddb.create_table(TableName="src", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST")
        arns = []
        for i in range(4):
            arns.append(ddb.create_backup(TableName="src", BackupName=f"at{i}")["BackupDetails"]["BackupArn"])
            clock.advance(10)
        start = clock.start
        bounded = ddb.list_backups(TimeRangeLowerBound=start + 10, TimeRangeUpperBound=start + 30)["BackupSummaries"]
        assert [s["BackupArn"] for s in bounded] == arns[1:3]


def test_backup_restore_example_gets_the_table_back():
    import pathlib
    import subprocess
    import sys

    examples = pathlib.Path(__file__).resolve().parents[2] / "examples"
    done = subprocess.run([sys.executable, str(examples / "backup_restore.py")], capture_output=True, text=True,
                          timeout=120, cwd=examples)
    assert done.returncode == 0, done.stderr
    whole = "[('order-0', 'paid'), ('order-1', 'paid'), ('order-2', 'paid')]"
    assert f"orders-from-backup   {whole}" in done.stdout
    assert f"orders-at-good       {whole}" in done.stdout
    assert "orders               [('order-0', 'paid'), ('order-2', 'lost')]" in done.stdout


def test_reset_drops_backups_and_histories():
    with LiveServer() as live:
        ddb = live.client()
        ddb.create_table(TableName="src", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST")
        ddb.update_continuous_backups(TableName="src",
                                      PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
        ddb.create_backup(TableName="src", BackupName="gone-after-reset")
        assert live.reset() == 1
        assert ddb.list_backups(BackupType="ALL")["BackupSummaries"] == []
        assert live.ctx.db.histories == {}
