"""Vector indexes brought back by RestoreTableFromBackup / RestoreTableToPointInTime (VectorIndexOverride)
and created by ImportTable (TableCreationParameters.VectorIndexes), searched through boto3."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock
from test_bulk import put_object
from vector_support import needs_vectors

from dynalocal.config import Settings
from dynalocal.engine.context import Context

pytestmark = needs_vectors

KEYS = [{"AttributeName": "id", "KeyType": "HASH"}]
DEFS = [{"AttributeName": "id", "AttributeType": "S"}, {"AttributeName": "cat", "AttributeType": "S"}]
VECTORS = [{"IndexName": name, "VectorAttribute": {"AttributeName": "emb"}, "Dimensions": 2,
            "DistanceFunction": "EUCLIDEAN", "Projection": {"ProjectionType": "ALL"},
            "SearchSchema": [{"AttributeName": "cat", "SearchSchemaElementType": "HASH"}]}
           for name in ("near", "other")]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    s3 = tmp_path_factory.mktemp("s3")
    clock = WallClock()
    with LiveServer(Context(settings=Settings(pitr_lag_seconds=0, s3_dir=str(s3)), wall_clock=clock)) as server:
        yield server.client(), clock, s3


def _item(i: int) -> dict:
    return {"id": {"S": f"i{i}"}, "cat": {"S": "c"}, "emb": {"L": [{"N": str(i)}, {"N": "0"}]}}


def _source(ddb, name: str, count: int) -> None:
    ddb.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST",
                     VectorIndexes=VECTORS)
    for i in range(count):
        ddb.put_item(TableName=name, Item=_item(i))


def _nearest(ddb, table: str, x: float, index: str = "near") -> list[str]:
    found = ddb.search_vectors(TableName=table, IndexName=index, SearchVector=[{"N": str(x)}, {"N": "0"}], TopK=2,
                               SearchConditionExpression="cat = :c",
                               ExpressionAttributeValues={":c": {"S": "c"}})["SearchResults"]
    return [r["Item"]["id"]["S"] for r in found]


def _active(ddb, table: str) -> dict:
    deadline = time.monotonic() + 30
    while (desc := ddb.describe_table(TableName=table)["Table"])["TableStatus"] != "ACTIVE":
        assert time.monotonic() < deadline, "restored table not ACTIVE after 30 s"
        time.sleep(0.02)
    return desc


def test_a_restore_from_backup_brings_back_vector_indexes_unless_overridden(live):
    ddb, _, _ = live
    _source(ddb, "vsrc", 20)
    arn = ddb.create_backup(TableName="vsrc", BackupName="before")["BackupDetails"]["BackupArn"]
    ddb.delete_item(TableName="vsrc", Key={"id": {"S": "i7"}})
    ddb.restore_table_from_backup(TargetTableName="vall", BackupArn=arn)
    desc = _active(ddb, "vall")
    assert [(v["IndexName"], v["IndexStatus"], v["ItemCount"]) for v in desc["VectorIndexes"]] == [
        ("near", "ACTIVE", 20), ("other", "ACTIVE", 20)]
    assert _nearest(ddb, "vall", 7.2) == ["i7", "i8"]
    assert _nearest(ddb, "vall", 7.2, "other") == ["i7", "i8"]
    ddb.restore_table_from_backup(TargetTableName="vone", BackupArn=arn, VectorIndexOverride=[VECTORS[1]])
    assert [v["IndexName"] for v in _active(ddb, "vone")["VectorIndexes"]] == ["other"]
    assert _nearest(ddb, "vone", 7.2, "other") == ["i7", "i8"]
    ddb.restore_table_from_backup(TargetTableName="vnone", BackupArn=arn, VectorIndexOverride=[])
    assert "VectorIndexes" not in _active(ddb, "vnone")
    with pytest.raises(ClientError) as err:
        ddb.restore_table_from_backup(TargetTableName="vbad", BackupArn=arn,
                                      VectorIndexOverride=[{**VECTORS[0], "IndexName": "missing"}])
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "missing" in err.value.response["Error"]["Message"]


def test_a_point_in_time_restore_brings_back_vector_indexes(live):
    ddb, clock, _ = live
    _source(ddb, "vpitr", 0)
    ddb.update_continuous_backups(TableName="vpitr",
                                  PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    for i in range(10):
        ddb.put_item(TableName="vpitr", Item=_item(i))
    clock.advance(5)
    noted = clock.now
    clock.advance(5)
    ddb.delete_item(TableName="vpitr", Key={"id": {"S": "i3"}})
    ddb.restore_table_to_point_in_time(SourceTableName="vpitr", TargetTableName="vpitr-r", RestoreDateTime=noted,
                                       VectorIndexOverride=[VECTORS[0]])
    assert [v["IndexName"] for v in _active(ddb, "vpitr-r")["VectorIndexes"]] == ["near"]
    assert _nearest(ddb, "vpitr-r", 3.1) == ["i3", "i4"]
    assert _nearest(ddb, "vpitr", 3.1) == ["i4", "i2"]


def test_an_import_creates_its_vector_indexes_from_the_data(live):
    ddb, _, s3 = live
    lines = b"".join(json.dumps({"Item": _item(i)}).encode() + b"\n" for i in range(30))
    put_object(Path(s3), "bucket", "vec/a.json", lines)
    desc = ddb.import_table(S3BucketSource={"S3Bucket": "bucket", "S3KeyPrefix": "vec/"}, InputFormat="DYNAMODB_JSON",
                            TableCreationParameters={"TableName": "vimport", "KeySchema": KEYS,
                                                     "AttributeDefinitions": DEFS, "BillingMode": "PAY_PER_REQUEST",
                                                     "VectorIndexes": [VECTORS[0]]})["ImportTableDescription"]
    assert desc["TableCreationParameters"]["VectorIndexes"] == [VECTORS[0]]
    table = _active(ddb, "vimport")
    assert [(v["IndexName"], v["ItemCount"]) for v in table["VectorIndexes"]] == [("near", 30)]
    assert _nearest(ddb, "vimport", 21.9) == ["i22", "i21"]
