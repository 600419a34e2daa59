"""Point-in-time recovery through boto3: the window, RestoreTableToPointInTime (exact, property-tested
over random write sequences and restore times on an injected wall clock), statuses and errors."""
from __future__ import annotations

import itertools

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer, WallClock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalocal.config import Settings
from dynalocal.engine.context import Context

names = (f"pitr-{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def clocked():
    clock = WallClock()
    with LiveServer(Context(settings=Settings(pitr_lag_seconds=0), wall_clock=clock)) as live:
        yield live.client(), clock


def _table(ddb, pitr: bool = True, **kwargs) -> str:
    name = next(names)
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST", **kwargs)
    if pitr:
        ddb.update_continuous_backups(TableName=name,
                                      PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    return name


def _state(ddb, name: str) -> dict[str, str]:
    items, start = {}, None
    while True:
        page = ddb.scan(TableName=name, **({"ExclusiveStartKey": start} if start else {}))
        items.update({i["pk"]["S"]: i["v"]["S"] for i in page["Items"]})
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


writes = st.lists(st.tuples(st.sampled_from("abcdef"), st.one_of(st.none(), st.text("xyz", max_size=3)),
                            st.integers(0, 3)), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=writes, pick=st.floats(0, 1))
def test_restore_gives_exactly_the_items_of_that_time(clocked, sequence, pick):
    ddb, clock = clocked
    name = _table(ddb)
    start = clock.now
    model: dict[str, str] = {}
    states = [(clock.now, dict(model))]  # (time, state from then on)
    for key, value, pause in sequence:
        clock.advance(pause)
        if value is None:
            ddb.delete_item(TableName=name, Key={"pk": {"S": key}})
            model.pop(key, None)
        else:
            ddb.put_item(TableName=name, Item={"pk": {"S": key}, "v": {"S": value}})
            model[key] = value
        states.append((clock.now, dict(model)))
    clock.advance(1)
    when = start + pick * (clock.now - start)
    expected = [state for at, state in states if at <= when][-1]
    target = name + "-at"
    out = ddb.restore_table_to_point_in_time(SourceTableName=name, TargetTableName=target,
                                             RestoreDateTime=when)["TableDescription"]
    assert out["RestoreSummary"]["SourceTableArn"].endswith(f":table/{name}")
    assert _state(ddb, target) == expected
    latest = name + "-latest"
    ddb.restore_table_to_point_in_time(SourceTableName=name, TargetTableName=latest, UseLatestRestorableTime=True)
    assert _state(ddb, latest) == model
    for table in (name, target, latest):
        ddb.delete_table(TableName=table)


def test_window_and_recovery_period(clocked):
    ddb, clock = clocked
    name = _table(ddb, pitr=False)
    off = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
    assert off == {"ContinuousBackupsStatus": "ENABLED",
                   "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"}}
    enabled_at = clock.now
    out = ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification={
        "PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 2})["ContinuousBackupsDescription"]
    pitr = out["PointInTimeRecoveryDescription"]
    assert pitr["PointInTimeRecoveryStatus"] == "ENABLED" and pitr["RecoveryPeriodInDays"] == 2
    assert pitr["EarliestRestorableDateTime"].timestamp() == enabled_at
    clock.advance(3 * 86400)
    pitr = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"][
        "PointInTimeRecoveryDescription"]
    assert pitr["EarliestRestorableDateTime"].timestamp() == clock.now - 2 * 86400
    assert pitr["LatestRestorableDateTime"].timestamp() == clock.now
    with pytest.raises(ClientError) as err:
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification={
            "PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 36})
    assert err.value.response["Error"]["Code"] == "ValidationException"
    ddb.delete_table(TableName=name)


def test_lag_behind_now():
    clock = WallClock()
    with LiveServer(Context(wall_clock=clock)) as live:  # the default lag: five minutes
        ddb = live.client()
        name = _table(ddb)
        clock.advance(3600)
        pitr = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"][
            "PointInTimeRecoveryDescription"]
        assert pitr["LatestRestorableDateTime"].timestamp() == clock.now - 300
        with pytest.raises(ClientError) as err:
            ddb.restore_table_to_point_in_time(SourceTableName=name, TargetTableName="x-too-late",
                                               RestoreDateTime=clock.now - 100)
        assert err.value.response["Error"]["Code"] == "InvalidRestoreTimeException"


def test_errors(clocked):
    ddb, clock = clocked
    plain = _table(ddb, pitr=False)
    covered = _table(ddb)
    clock.advance(10)
    cases = [
        (dict(SourceTableName=plain, TargetTableName="e-1", UseLatestRestorableTime=True),
         "PointInTimeRecoveryUnavailableException"),
        (dict(SourceTableName="no-such-table", TargetTableName="e-2", UseLatestRestorableTime=True),
         "TableNotFoundException"),
        (dict(SourceTableName=covered, TargetTableName=plain, UseLatestRestorableTime=True),
         "TableAlreadyExistsException"),
        (dict(SourceTableName=covered, TargetTableName="e-3", RestoreDateTime=clock.now - 3600),
         "InvalidRestoreTimeException"),
        (dict(SourceTableName=covered, TargetTableName="e-4", RestoreDateTime=clock.now + 3600),
         "InvalidRestoreTimeException"),
    ]
    for kwargs, code in cases:
        with pytest.raises(ClientError) as err:
            ddb.restore_table_to_point_in_time(**kwargs)
        assert err.value.response["Error"]["Code"] == code, kwargs
    message = err.value.response["Error"]["Message"]
    assert message == "RestoreDateTime must be between EarliestRestorableDateTime and LatestRestorableDateTime"
    with pytest.raises(ClientError) as err:
        ddb.describe_continuous_backups(TableName="no-such-table")
    assert err.value.response["Error"]["Code"] == "TableNotFoundException"


def test_restore_by_arn_keeps_current_indexes_not_tags_or_pitr(clocked):
    ddb, clock = clocked
    name = _table(ddb, Tags=[{"Key": "k", "Value": "v"}])
    ddb.put_item(TableName=name, Item={"pk": {"S": "a"}, "v": {"S": "1"}})
    clock.advance(5)
    arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    out = ddb.restore_table_to_point_in_time(SourceTableArn=arn, TargetTableName=name + "-r",
                                             UseLatestRestorableTime=True)["TableDescription"]
    assert out["RestoreSummary"]["RestoreInProgress"] is True
    assert ddb.list_tags_of_resource(ResourceArn=out["TableArn"])["Tags"] == []
    pitr = ddb.describe_continuous_backups(TableName=name + "-r")["ContinuousBackupsDescription"]
    assert pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    assert _state(ddb, name + "-r") == {"a": "1"}


def test_deleting_a_pitr_table_leaves_a_system_backup(clocked):
    ddb, clock = clocked
    name = _table(ddb)
    ddb.put_item(TableName=name, Item={"pk": {"S": "kept"}, "v": {"S": "yes"}})
    ddb.delete_table(TableName=name)
    assert ddb.list_backups(TableName=name)["BackupSummaries"] == []
    (system,) = ddb.list_backups(TableName=name, BackupType="SYSTEM")["BackupSummaries"]
    assert system["BackupType"] == "SYSTEM" and system["BackupStatus"] == "AVAILABLE"
    assert system["BackupExpiryDateTime"].timestamp() == clock.now + 35 * 86400
    ddb.restore_table_from_backup(TargetTableName=name, BackupArn=system["BackupArn"])
    assert _state(ddb, name) == {"kept": "yes"}
    ddb.delete_table(TableName=name)
    ddb.delete_backup(BackupArn=system["BackupArn"])
