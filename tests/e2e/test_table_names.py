"""CreateTable with an ARN: resolved to the table name it ends in, never stored as an ARN-shaped name."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

KEYS = dict(BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
PREFIX = "arn:aws:dynamodb:us-east-1:000000000000:"


def test_an_arn_creates_the_table_it_names(ddb, server):
    out = ddb.create_table(TableName=PREFIX + "table/by-arn", **KEYS)["TableDescription"]
    try:
        assert out["TableName"] == "by-arn" and out["TableArn"] == PREFIX + "table/by-arn"
        assert "by-arn" in ddb.list_tables()["TableNames"]
        ddb.put_item(TableName="by-arn", Item={"id": {"S": "1"}})
        assert ddb.get_item(TableName=PREFIX + "table/by-arn", Key={"id": {"S": "1"}})["Item"]
    finally:
        ddb.delete_table(TableName="by-arn")


@pytest.mark.parametrize("arn", [PREFIX + "table/../../etc", PREFIX + "table/a/b/c", PREFIX + "table/..",
                                 PREFIX + "table/x/index/y", "arn:aws:s3:::bucket/table/abc", PREFIX + "table/",
                                 "arn:whatever"])
def test_an_arn_that_names_no_valid_table_is_refused(ddb, server, arn):
    before = sorted(server.ctx.db.tables)
    with pytest.raises(ClientError) as err:
        ddb.create_table(TableName=arn, **KEYS)
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert err.value.response["Error"]["Message"] == f"Invalid TableArn: Invalid ResourceArn provided as input {arn}"
    assert sorted(server.ctx.db.tables) == before
    assert not any("/" in name or name.startswith("arn:") for name in server.ctx.db.tables)
