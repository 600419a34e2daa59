"""Loads for the diagnosis tests: tables, items of a chosen size, and writes paced by a fake clock."""
from __future__ import annotations

from botocore.exceptions import ClientError

KB = 1024


def create(ddb, name: str, gsi: bool = False, **kwargs) -> None:
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    if gsi:
        attrs.append({"AttributeName": "status", "AttributeType": "S"})
        kwargs["GlobalSecondaryIndexes"] = [{"IndexName": "by-status", "Projection": {"ProjectionType": "ALL"},
                                             "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}]}]
    if "ProvisionedThroughput" not in kwargs:
        kwargs["BillingMode"] = "PAY_PER_REQUEST"
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], AttributeDefinitions=attrs,
                     Tags=[{"Key": "dynalocal:partitions", "Value": "4"}], **kwargs)


def put(ddb, table: str, pk: str, kb: int, **attrs) -> bool:
    """Write an item of about `kb` KB (W = kb units); False if it was throttled."""
    item = {"pk": {"S": pk}, "data": {"S": "x" * (kb * KB - 64)}, **{k: {"S": v} for k, v in attrs.items()}}
    try:
        live_put = ddb.put_item(TableName=table, Item=item, ReturnConsumedCapacity="TOTAL")
    except ClientError as err:
        assert err.response["Error"]["Code"] in ("ProvisionedThroughputExceededException", "ThrottlingException")
        return False
    assert live_put["ConsumedCapacity"]["CapacityUnits"] >= kb
    return True


def run(server, seconds: int, per_second: int, write) -> int:
    """Call write(n) `per_second` times in each of `seconds` simulated seconds; return how many were throttled."""
    refused = 0
    for s in range(seconds):
        for i in range(per_second):
            refused += not write(s * per_second + i)
        server.clock.now += 1.0
    return refused


