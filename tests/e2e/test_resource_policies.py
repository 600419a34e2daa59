"""Resource policies through boto3: put/get/delete with revisions, CreateTable's ResourcePolicy, limits and
errors, and their persistence with --data-dir (stored, not enforced)."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError
from server_process import ServerProcess


def policy(arn: str, padding: int = 0) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "dynamodb:GetItem",
        "Resource": arn, "Sid": "x" * padding}]})


def _code(call) -> str:
    with pytest.raises(ClientError) as err:
        call()
    return err.value.response["Error"]["Code"]


def test_put_get_delete_with_revisions(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    assert _code(lambda: ddb.get_resource_policy(ResourceArn=arn)) == "PolicyNotFoundException"
    first = ddb.put_resource_policy(ResourceArn=arn, Policy=policy(arn), ExpectedRevisionId="NO_POLICY")["RevisionId"]
    got = ddb.get_resource_policy(ResourceArn=arn)
    assert got == {"Policy": policy(arn), "RevisionId": first, "ResponseMetadata": got["ResponseMetadata"]}
    assert _code(lambda: ddb.put_resource_policy(ResourceArn=arn, Policy=policy(arn),
                                                 ExpectedRevisionId="NO_POLICY")) == "PolicyNotFoundException"
    assert _code(lambda: ddb.put_resource_policy(ResourceArn=arn, Policy=policy(arn),
                                                 ExpectedRevisionId="stale")) == "PolicyNotFoundException"
    second = ddb.put_resource_policy(ResourceArn=arn, Policy=policy(arn, 10), ExpectedRevisionId=first,
                                     ConfirmRemoveSelfResourceAccess=True)["RevisionId"]
    assert second != first
    assert _code(lambda: ddb.delete_resource_policy(ResourceArn=arn,
                                                    ExpectedRevisionId=first)) == "PolicyNotFoundException"
    assert ddb.delete_resource_policy(ResourceArn=arn, ExpectedRevisionId=second)["RevisionId"] == second
    assert _code(lambda: ddb.get_resource_policy(ResourceArn=arn)) == "PolicyNotFoundException"
    assert _code(lambda: ddb.delete_resource_policy(ResourceArn=arn)) == "PolicyNotFoundException"


def test_limits_and_errors(ddb, make_table):
    name = make_table([("pk", "HASH")], [("pk", "S")])
    arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    ddb.put_resource_policy(ResourceArn=arn, Policy=policy(arn, 20 * 1024 - len(policy(arn))))  # exactly 20 KB
    assert _code(lambda: ddb.put_resource_policy(ResourceArn=arn, Policy=policy(arn, 20 * 1024))) \
        == "ValidationException"
    assert _code(lambda: ddb.put_resource_policy(ResourceArn=arn, Policy="{not json")) == "ValidationException"
    missing = arn.rsplit("/", 1)[0] + "/no-such-table"
    assert _code(lambda: ddb.get_resource_policy(ResourceArn=missing)) == "ResourceNotFoundException"


def test_create_table_with_policy(ddb):
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/with-policy"
    ddb.create_table(TableName="with-policy", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST", ResourcePolicy=policy(arn))
    try:
        assert ddb.get_resource_policy(ResourceArn=arn)["Policy"] == policy(arn)
    finally:
        ddb.delete_table(TableName="with-policy")
    assert _code(lambda: ddb.create_table(
        TableName="bad-policy", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST",
        ResourcePolicy="[]")) == "ValidationException"


def test_policies_survive_kill(tmp_path):
    server = ServerProcess(tmp_path / "data", log_path=tmp_path / "server.log").start()
    try:
        client = server.client()
        arn = "arn:aws:dynamodb:us-east-1:000000000000:table/kept"
        client.create_table(TableName="kept", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST", ResourcePolicy=policy(arn))
        revision = client.put_resource_policy(ResourceArn=arn, Policy=policy(arn, 5))["RevisionId"]
        server.kill()
        server.start()
        client = server.client()
        assert client.get_resource_policy(ResourceArn=arn)["RevisionId"] == revision
        client.delete_resource_policy(ResourceArn=arn)
        server.kill()
        server.start()
        assert _code(lambda: server.client().get_resource_policy(ResourceArn=arn)) == "PolicyNotFoundException"
    finally:
        server.kill()
